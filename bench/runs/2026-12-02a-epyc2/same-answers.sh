# The same top 100 (keys, scores to 5 decimals) and totals from the build before (positions) and this one (pairs)
for q in '"natural gas"' '"power plant"' '"conference call"' '"credit risk"' '"press release"' '"price cap"' '"gas storage"' '"board meeting"' '"sally beck"' '"new york"' '"would like"' '"http www"'; do
  a=$(/tmp/scratch/rowsearch-before search --data /tmp/rowsearch-bench/confined-now --limit 100 --json "$q" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("total"), [(h.get("key"), round(h.get("score",0),5)) for h in d["hits"]])')
  b=$(/tmp/scratch/rowsearch-pairs2 search --data /tmp/rowsearch-bench/pairs-now --limit 100 --json "$q" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("total"), [(h.get("key"), round(h.get("score",0),5)) for h in d["hits"]])')
  [ "$a" = "$b" ] && echo "same $q (total ${a%% *})" || echo "DIFFERENT $q"
done
