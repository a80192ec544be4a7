# BUILDS="a b" eab2.sh QUERIESFILE ROUNDS ITER: interleaved engine A/B (/tmp/scratch/engine-X on store $STORE_X), per query min/median of rounds' query_us p50
Q=$1; R=$2; I=$3; OUT=/tmp/eab.$$.out
export BUILDS=${BUILDS:-before new}
for r in $(seq $R); do for b in $BUILDS; do
store=$(eval echo \${STORE_$b:-/tmp/rowsearch-bench/confined-now})
ROWSEARCH_BENCH_STORE=$store ROWSEARCH_BENCH_QUERIES=$Q ROWSEARCH_BENCH_ITERATIONS=$I /tmp/scratch/engine-$b --bench | sed "s/^/$b /"
done; done > $OUT
python3 - $OUT <<'PY'
import json, statistics, collections, os, sys
B = os.environ['BUILDS'].split()
d = collections.defaultdict(list); t = {}
for l in open(sys.argv[1]):
    b, j = l.split(' ', 1)
    if not j.startswith('{'): continue
    j = json.loads(j); d[(j['name'], b)].append(j['query_us']); t[(j['name'], b)] = j.get('total')
names = list(dict.fromkeys(n for n, _ in d))
print(f"{B[0]} vs {B[1]}")
for n in names:
    a, c = d[(n, B[0])], d[(n, B[1])]
    print(f"{n:22} {B[0]} min {min(a):6.0f} med {statistics.median(a):6.0f} | {B[1]} min {min(c):6.0f} med {statistics.median(c):6.0f} | ratio med {statistics.median(c)/statistics.median(a):.2f} min {min(c)/min(a):.2f} | totals {t[(n,B[0])]} {t[(n,B[1])]}")
PY
