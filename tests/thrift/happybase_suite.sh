#!/usr/bin/env bash
# happybase's own test suite against rowsearch's Thrift gateway: the real
# binary serving `--thrift` on a fresh store, and happybase's
# tests/test_api.py run whole with pytest over the buffered and the framed
# transport, each with the binary and the compact protocol
# (tests/thrift/happybase_protocol.py picks it). The suite is python-happybase's current one (commit 9977809,
# 2026-03-16): its 1.3.0 source distribution on PyPI ships the same file
# before three fixes made since in the repository (`import pytest`,
# `pytest.raises` for an `assert_raises` it never imported, the port read
# as an integer); this script applies those three and checks the result's
# SHA-256 against the repository's file, so what runs is exactly
# happybase's suite. Then docs/hbase.md's happybase example, and
# tests/thrift/happybase_e2e.py (happybase itself end to end: rows found by
# search and keyword lookups, filtered scans equal to HTTP's, counters from
# four processes, kill -9 during batches), tests/thrift/happybase_over_hbase.py
# and tests/thrift/happybase_replication.py (a real HBase; bursts of
# another client's writes followed through HBase's replication, rowsearch
# killed and HBase restarted in the middle of them). Python packages are pinned and
# installed into a virtualenv under target/ on first use.
#
#   tests/thrift/happybase_suite.sh        (ROWSEARCH_BIN: the binary; default target/debug/rowsearch)
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/happybase-venv
if [ ! -x "$VENV/bin/pytest" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q 'happybase==1.3.0' 'thriftpy2==0.7.1' 'ply==3.11' 'six==1.17.0' 'pytest==9.2.0'
fi
SUITE=target/happybase-suite
if [ ! -f "$SUITE/tests/test_api.py" ]; then
    mkdir -p "$SUITE"
    "$VENV/bin/pip" download -q --no-binary :all: --no-deps -d "$SUITE" 'happybase==1.3.0'
    tar xzf "$SUITE/happybase-1.3.0.tar.gz" -C "$SUITE" --strip-components=1 happybase-1.3.0/tests
    sed -i -e "s/^HAPPYBASE_PORT = os.environ.get('HAPPYBASE_PORT')\$/HAPPYBASE_PORT = int(os.environ['HAPPYBASE_PORT']) if 'HAPPYBASE_PORT' in os.environ else None/" \
        -e 's/assert_raises(/pytest.raises(/g' -e 's/^import six$/import pytest\nimport six/' "$SUITE/tests/test_api.py"
fi
WANT=70e8dd65c5b910c5606a0e056617864558eb9ea7d248414ab3ee45cad49bb780
if ! echo "$WANT  $SUITE/tests/test_api.py" | sha256sum -c --quiet; then
    echo "tests/test_api.py is not python-happybase's suite at 9977809 (SHA-256 $WANT)" >&2
    exit 1
fi
BIN="${ROWSEARCH_BIN:-target/debug/rowsearch}"
DATA=$(mktemp -d)
"$BIN" --data "$DATA/d" serve --create --listen 127.0.0.1:0 --thrift 127.0.0.1:0 > "$DATA/out" 2> "$DATA/err" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$DATA"' EXIT
until grep -q "^thrift listening on " "$DATA/out"; do
    if ! kill -0 "$SERVER" 2>/dev/null; then
        echo "the server did not start:" >&2
        cat "$DATA/err" >&2
        exit 1
    fi
    sleep 0.1
done
PORT=$(sed -n 's/^thrift listening on .*:\([0-9]*\)$/\1/p' "$DATA/out")
for transport in buffered framed; do
    for protocol in binary compact; do
        echo "== happybase's tests/test_api.py (9977809) with happybase 1.3.0: $transport transport, $protocol protocol (port $PORT)"
        PYTHONPATH=tests/thrift HAPPYBASE_PROTOCOL="$protocol" \
            HAPPYBASE_HOST=127.0.0.1 HAPPYBASE_PORT="$PORT" HAPPYBASE_TRANSPORT="$transport" \
            "$VENV/bin/python" -m pytest -q -p no:cacheprovider -p happybase_protocol "$SUITE/tests/test_api.py"
    done
done
echo "== docs/hbase.md's happybase example, as printed"
sed -n '/^# pip install happybase==1.3.0; rowsearch serve/,/^```$/p' docs/hbase.md | sed '$d' \
    | sed "s/9090)$/$PORT)/" > "$DATA/readme_example.py"
grep -q "happybase.Connection" "$DATA/readme_example.py"
"$VENV/bin/python" "$DATA/readme_example.py"
echo "== end to end with happybase (tests/thrift/happybase_e2e.py): search, keywords, filtered scans, counters from 4 processes, kill -9 during batches"
"$VENV/bin/python" tests/thrift/happybase_e2e.py "$BIN"
echo "== happybase straight to a real HBase's gateway beside serve --hbase (tests/thrift/happybase_over_hbase.py)"
if command -v java >/dev/null && command -v mvn >/dev/null; then
    HB="$DATA/hbase"
    HBASE_WATCH_PID=$$ bash hbase/hbase.sh start "$HB" > "$DATA/hbase.out"
    trap 'kill "$SERVER" 2>/dev/null || true; bash hbase/hbase.sh stop "$HB" >/dev/null 2>&1 || true; rm -rf "$DATA"' EXIT
    THRIFT=$(sed -n 's/^thrift=//p' "$DATA/hbase.out")
    THRIFT2=$(sed -n 's/^thrift2=//p' "$DATA/hbase.out")
    "$VENV/bin/python" tests/thrift/happybase_over_hbase.py "$BIN" "$THRIFT" "$THRIFT2"
    echo "== happybase's bursts of puts at old timestamps and deletes, followed through HBase's replication (tests/thrift/happybase_replication.py)"
    "$VENV/bin/python" tests/thrift/happybase_replication.py --bin "$BIN" --hbase-dir "$HB"
else
    echo "*** SKIPPED happybase_over_hbase.py: it needs a real Apache HBase (Java 17 and Maven; .ci/run installs them) ***"
fi
