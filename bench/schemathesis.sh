#!/usr/bin/env bash
# Runs schemathesis (PyPI) against the real binary's /openapi.json: the mail
# fixture ingested and indexed, then every phase (examples, coverage,
# fuzzing, and stateful testing along the document's links) for a time
# budget, with every check: no 5xx, nothing the document does not describe
# (status codes, content types, headers, response bodies), requests the
# document allows accepted and requests it rules out refused, and what is
# created there, what is deleted gone. bench/schemathesis.toml says which
# statuses count as accepting and refusing, and why encoding stays binary.
#
#   bench/schemathesis.sh [SECONDS]      (default 600)
#
# Installs schemathesis into a virtualenv under target/ on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET="${1:-600}"
VENV=target/schemathesis-venv
if [ ! -x "$VENV/bin/schemathesis" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q 'schemathesis==4.32.5'
fi
cargo build -q --release -p rowsearch --bin rowsearch
BIN=target/release/rowsearch
DATA=$(mktemp -d)
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$DATA"' EXIT
"$BIN" --data "$DATA/d" ingest tests/fixtures/mail/maildir > /dev/null
"$BIN" --data "$DATA/d" reindex > /dev/null
"$BIN" --data "$DATA/d" serve --listen 127.0.0.1:0 > "$DATA/out" 2> "$DATA/err" &
SERVER=$!
until grep -q "listening on" "$DATA/out"; do sleep 0.1; done
ADDR=$(sed -n 's/^listening on //p' "$DATA/out")
# Half the budget for the examples, coverage and fuzzing phases, half for
# the stateful phase (links followed from a table created), so that the
# stateful phase is not left what fuzzing did not use.
HALF=$((SECONDS_BUDGET / 2))
export SCHEMATHESIS_HOOKS=bench/schemathesis_hooks.py
status=0
for phases in examples,coverage,fuzzing stateful; do
    "$VENV/bin/schemathesis" --config-file bench/schemathesis.toml run "$ADDR/openapi.json" \
        --phases "$phases" --checks all \
        --max-time "$HALF" --workers 1 --seed 1 --suppress-health-check all || status=$?
done
exit "$status"
