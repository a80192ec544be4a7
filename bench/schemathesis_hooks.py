"""Strategies for the two languages the OpenAPI document names by a string
format, for bench/schemathesis.sh (SCHEMATHESIS_HOOKS): `hbase-filter`
(HBase's filter language, `filter=` of scans and counts) and
`rowsearch-query` (the search query language, `q=` of search). A grammar is
not a pattern: without these, "schema-valid" filters and queries would be
random text the server rightly refuses. The servers' own parsers are fuzzed
with random text elsewhere (tests/tests/http/hostile.rs and the store's
filter_fuzz.rs)."""

import schemathesis
from hypothesis import strategies as st

text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
quoted = text.map(lambda t: f"'{t}'")
# An operator and a comparator that go together: binary and binaryprefix
# order, substring only tests for a match (= or !=).
ordered = st.builds(
    lambda o, kind, t: f"{o}, '{kind}:{t}'",
    st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
    st.sampled_from(["binary", "binaryprefix"]),
    text,
)
matching = st.builds(lambda o, t: f"{o}, 'substring:{t}'", st.sampled_from(["=", "!="]), text)
test = st.one_of(ordered, matching)

simple = st.one_of(
    st.just("KeyOnlyFilter()"),
    st.just("FirstKeyOnlyFilter()"),
    quoted.map(lambda t: f"PrefixFilter({t})"),
    quoted.map(lambda t: f"ColumnPrefixFilter({t})"),
    st.integers(1, 50).map(lambda n: f"PageFilter({n})"),
    test.map(lambda t: f"RowFilter({t})"),
    test.map(lambda t: f"ValueFilter({t})"),
    test.map(lambda t: f"QualifierFilter({t})"),
    st.builds(lambda f, q, t: f"SingleColumnValueFilter({f}, {q}, {t})", quoted, quoted, test),
)
hbase_filter = st.recursive(
    simple,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        inner.map(lambda a: f"SKIP {a}"),
        inner.map(lambda a: f"WHILE {a}"),
    ),
    max_leaves=4,
)

word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=8)
term = st.one_of(
    word,
    word.map(lambda w: w[:3] + "*"),
    word.map(lambda w: w + "~1"),
    st.builds(lambda a, b: f'"{a} {b}"', word, word),
)
query = st.one_of(
    st.lists(term, min_size=1, max_size=4).map(" ".join),
    st.builds(lambda a, b: f"{a} OR {b}", term, term),
    st.builds(lambda a, b: f"{a} NOT {b}", term, term),
)

schemathesis.openapi.format("hbase-filter", hbase_filter)
schemathesis.openapi.format("rowsearch-query", query)
