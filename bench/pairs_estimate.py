#!/usr/bin/env python3
"""How big a word-pair field would be (Elasticsearch's `index_phrases`,
Lucene's CommonGrams): pairs of adjacent tokens within subject and body,
per message, read from the SQLite FTS5 copy the peer benches make
(common.fts5_db); postings (doc, pair) counted at thresholds, and the
peer bench's phrases' document frequencies. Tokens: lowercase runs of
[a-z0-9] (close to the analyzer, not equal). A measurement for planning,
not a benchmark of rowsearch.

Then the selections a phrase index could make by what a pair saves: a
pair of two words in >= 300 messages each, with `inter` the messages
holding both words (the candidates a phrase checks positions in, as the
engine does) and `pair` the messages holding the pair; a selection is
worth it where inter is several times pair. For each rule: the pairs and
postings it keeps, the costliest pairs it leaves out, and which of the
peer bench's phrases it covers (takes ~2 minutes more).

    python3 bench/pairs_estimate.py [--db FTS5_DB] [--emit N [--stop K]]
        (default /tmp/rowsearch-bench/search-fts5.db)

Then pairs by their words' rank (`--stop` selections): pairs in >= 50,
100 or 200 messages neither of whose words is among the K most frequent
(the stop words' pairs, `of the`, hold most of the postings; a phrase of
them stays on positions).

With --emit N, it writes instead /tmp/rowsearch-bench/pairs-N.txt: a line
per message holding its pairs in >= N messages as tokens (`credit_risk`),
one per occurrence, for tantivy to measure the field's bytes; with
--stop K too, only pairs neither of whose words is among the K most
frequent (pairs-N-topK.txt):

    cargo run --release -p rowsearch-indexer --example pair_field_size -- /tmp/rowsearch-bench/pairs-N.txt [docs]"""
import argparse
import collections
import re
import sqlite3
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--db", default="/tmp/rowsearch-bench/search-fts5.db")
ap.add_argument("--emit", type=int)
ap.add_argument("--stop", type=int, default=0)
args = ap.parse_args()
c = sqlite3.connect(args.db)
tok = re.compile(r"[a-z0-9]+")
term_df = collections.Counter()
term_docs = collections.defaultdict(list)
pair_df = collections.Counter()
tokens = 0
docs = 0
fields_of = []
for subject, body in c.execute("select c0, c1 from mail_content"):
    docs += 1
    terms, pairs, fields = set(), set(), []
    for text in (subject or "", body or ""):
        t = tok.findall(text.lower())
        fields.append(t)
        tokens += len(t)
        terms.update(t)
        pairs.update(zip(t, t[1:]))
    term_df.update(terms)
    pair_df.update(pairs)
    if args.emit:
        fields_of.append(fields)
    else:  # the selections' candidate sets, not needed to emit
        for t in terms:
            term_docs[t].append(docs)
print(f"docs {docs}, tokens {tokens}, distinct terms {len(term_df)}, term postings {sum(term_df.values())}")
# A word's rank by its messages (0: the most frequent).
rank = {t: i for i, (t, _) in enumerate(term_df.most_common())}


def selected(pair, n, least, stop):
    """Whether a pair in n messages is kept: n >= least, neither word among
    the `stop` most frequent."""
    return n >= least and rank[pair[0]] >= stop and rank[pair[1]] >= stop


if args.emit:
    keep = {p for p, n in pair_df.items() if selected(p, n, args.emit, args.stop)}
    top = f"-top{args.stop}" if args.stop else ""
    out_path = f"/tmp/rowsearch-bench/pairs-{args.emit}{top}.txt"
    with open(out_path, "w") as out:
        for fields in fields_of:
            out.write(" ".join(f"{a}_{b}" for t in fields for a, b in zip(t, t[1:]) if (a, b) in keep) + "\n")
    print(f"pairs in >= {args.emit} messages: {len(keep)}, {sum(pair_df[p] for p in keep)} postings; wrote {out_path}")
    sys.exit(0)
print(f"distinct pairs {len(pair_df)}, pair postings {sum(pair_df.values())}")
for k in (100, 300, 1000, 3000):
    common = {t for t, _ in term_df.most_common(k)}
    sel = [(p, n) for p, n in pair_df.items() if p[0] in common and p[1] in common]
    print(f"pairs of two top-{k} words: {len(sel)} distinct, {sum(n for _, n in sel)} postings")
for d in (100, 300, 1000, 3000):
    sel = [n for n in pair_df.values() if n >= d]
    print(f"pairs in >= {d} docs: {len(sel)} distinct, {sum(sel)} postings")
PEER = ["natural gas", "power plant", "conference call", "credit risk", "press release", "price cap", "gas storage", "board meeting"]
for q in PEER:
    a, b = q.split()
    print(f"{q!r}: df {term_df[a]} / {term_df[b]} (ranks {rank[a]} / {rank[b]}), pair df {pair_df[(a, b)]}")
for d in (50, 100, 200):
    for k in (0, 25, 50, 100, 200):
        sel = [n for p, n in pair_df.items() if selected(p, n, d, k)]
        covered = sum(1 for q in PEER if selected(tuple(q.split()), pair_df[tuple(q.split())], d, k))
        print(f"pairs in >= {d} messages, neither word among the {k} most frequent: {len(sel)} pairs, "
              f"{sum(sel)} postings, peer phrases covered {covered}/8")

big = {t: set(d) for t, d in term_docs.items() if len(d) >= 300}
rows = {}
for (a, b), n in pair_df.items():
    if a in big and b in big:
        rows[(a, b)] = (n, len(big[a] & big[b]))
print(f"pairs of two words in >= 300 messages: {len(rows)}")
for q in PEER:
    n, inter = rows[tuple(q.split())]
    print(f"{q!r}: pair {n}, inter {inter}")


def rule(name, keep):
    kept = [(p, n) for p, (n, i) in rows.items() if keep(n, i)]
    left = sorted(((i, n, p) for p, (n, i) in rows.items() if not keep(n, i)), reverse=True)[:3]
    covered = [q for q in PEER if keep(*rows[tuple(q.split())])]
    print(f"{name}: {len(kept)} pairs, {sum(n for _, n in kept)} postings; costliest left out "
          f"{[(' '.join(p), i, n) for i, n, p in left]}; peer phrases covered {len(covered)}/8")


for k in (2, 3, 5, 10):
    for m in (300, 500, 1000):
        rule(f"inter >= {k} x pair and inter >= {m}", lambda n, i, k=k, m=m: i >= k * n and i >= m)
for p in (20, 50, 100):
    for k in (2, 3):
        rule(f"pair >= {p}, inter >= {k} x pair and inter >= 500", lambda n, i, k=k, p=p: n >= p and i >= k * n and i >= 500)
rule("every pair of the two words (the engine's worst case: inter >= 300)", lambda n, i: i >= 300)
