#!/usr/bin/env python3
"""How big a word-pair field would be (Elasticsearch's `index_phrases`,
Lucene's CommonGrams): pairs of adjacent tokens within subject and body,
per message, read from the SQLite FTS5 copy the peer benches make
(common.fts5_db); postings (doc, pair) counted at thresholds, and the
peer bench's phrases' document frequencies. Tokens: lowercase runs of
[a-z0-9] (close to the analyzer, not equal). A measurement for planning,
not a benchmark of rowsearch.

    python3 bench/pairs_estimate.py [FTS5_DB]   (default /tmp/rowsearch-bench/search-fts5.db)"""
import collections
import re
import sqlite3
import sys

c = sqlite3.connect(sys.argv[1] if len(sys.argv) > 1 else "/tmp/rowsearch-bench/search-fts5.db")
tok = re.compile(r"[a-z0-9]+")
term_df = collections.Counter()
pair_df = collections.Counter()
tokens = 0
docs = 0
for subject, body in c.execute("select c0, c1 from mail_content"):
    docs += 1
    terms, pairs = set(), set()
    for text in (subject or "", body or ""):
        t = tok.findall(text.lower())
        tokens += len(t)
        terms.update(t)
        pairs.update(zip(t, t[1:]))
    term_df.update(terms)
    pair_df.update(pairs)
print(f"docs {docs}, tokens {tokens}, distinct terms {len(term_df)}, term postings {sum(term_df.values())}")
print(f"distinct pairs {len(pair_df)}, pair postings {sum(pair_df.values())}")
for k in (100, 300, 1000, 3000):
    common = {t for t, _ in term_df.most_common(k)}
    sel = [(p, n) for p, n in pair_df.items() if p[0] in common and p[1] in common]
    print(f"pairs of two top-{k} words: {len(sel)} distinct, {sum(n for _, n in sel)} postings")
for d in (100, 300, 1000, 3000):
    sel = [n for n in pair_df.values() if n >= d]
    print(f"pairs in >= {d} docs: {len(sel)} distinct, {sum(sel)} postings")
for q in ["natural gas", "power plant", "conference call", "credit risk", "press release", "price cap", "gas storage", "board meeting"]:
    a, b = q.split()
    print(f"{q!r}: df {term_df[a]} / {term_df[b]}, pair df {pair_df[(a, b)]}")
