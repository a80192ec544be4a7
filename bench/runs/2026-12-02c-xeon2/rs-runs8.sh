#!/bin/sh
ROWSEARCH_KEYWORD_PENDING_RUNS=8 exec /tmp/scratch/rowsearch-s26 "$@"
