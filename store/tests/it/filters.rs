//! Filters and the filter language, each checked against the behaviour
//! HBase's reference guide and javadoc describe for it.

use rowsearch_store::{
    ALL_VERSIONS, Batch, Column, ErrorKind, FamilySchema, Filter, PutCell, ReadOptions, Scan, Store,
    TableSchema,
};

/// A table of five rows:
///
/// | row  | a:c1             | a:c2 | a:c3 | b:d          |
/// |------|------------------|------|------|--------------|
/// | row1 | v1@10, v1old@5   | x@10 |      | hello@10     |
/// | row2 | v2@10            |      |      | World@12     |
/// | row3 |                  | y@10 |      |              |
/// | rox  | v1@10            |      |      |              |
/// | zed  | v9@10            |      | q@10 |              |
fn fixture() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let schema = TableSchema::new([FamilySchema::new("a").max_versions(3), FamilySchema::new("b")]);
    store.create_table("t", &schema).unwrap();
    let mut batch = Batch::new();
    let cell = |f: &str, q: &str, v: &str, ts: u64| PutCell::new(f, q, v).at(ts);
    batch.put(
        "t",
        "row1",
        vec![cell("a", "c1", "v1old", 5), cell("a", "c1", "v1", 10), cell("a", "c2", "x", 10)],
    );
    batch.put("t", "row1", vec![cell("b", "d", "hello", 10)]);
    batch.put("t", "row2", vec![cell("a", "c1", "v2", 10), cell("b", "d", "World", 12)]);
    batch.put("t", "row3", vec![cell("a", "c2", "y", 10)]);
    batch.put("t", "rox", vec![cell("a", "c1", "v1", 10)]);
    batch.put("t", "zed", vec![cell("a", "c1", "v9", 10), cell("a", "c3", "q", 10)]);
    store.apply(&batch).unwrap();
    (dir, store)
}

/// Rows as `key[f:q@ts=value ...]`, joined by spaces.
fn render(store: &Store, scan: &Scan) -> String {
    let page = store.scan("t", scan).unwrap();
    page.rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .cells
                .iter()
                .map(|c| {
                    format!(
                        "{}:{}@{}={}",
                        c.family,
                        String::from_utf8_lossy(&c.qualifier),
                        c.timestamp,
                        String::from_utf8_lossy(&c.value)
                    )
                })
                .collect();
            format!("{}[{}]", String::from_utf8_lossy(&row.key), cells.join(" "))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn filtered(store: &Store, filter: &str) -> String {
    render(store, &Scan::new().filter(Filter::parse(filter).unwrap()))
}

fn keys(store: &Store, filter: &str) -> Vec<String> {
    let page = store.scan("t", &Scan::new().filter(Filter::parse(filter).unwrap())).unwrap();
    page.rows.iter().map(|r| String::from_utf8_lossy(&r.key).into_owned()).collect()
}

#[test]
fn no_filter_baseline() {
    let (_dir, store) = fixture();
    assert_eq!(
        render(&store, &Scan::new()),
        "row1[a:c1@10=v1 a:c2@10=x b:d@10=hello] row2[a:c1@10=v2 b:d@12=World] row3[a:c2@10=y] \
         rox[a:c1@10=v1] zed[a:c1@10=v9 a:c3@10=q]"
    );
}

#[test]
fn row_filter_compares_the_row_key_with_each_comparator() {
    let (_dir, store) = fixture();
    assert_eq!(keys(&store, "RowFilter(<=, 'binary:row2')"), ["row1", "row2"]);
    assert_eq!(keys(&store, "RowFilter(>, 'binary:row3')"), ["rox", "zed"]);
    assert_eq!(keys(&store, "RowFilter(!=, 'binary:row3')"), ["row1", "row2", "rox", "zed"]);
    // binaryprefix compares only the operand's length of the key.
    assert_eq!(keys(&store, "RowFilter(=, 'binaryprefix:row')"), ["row1", "row2", "row3"]);
    assert_eq!(keys(&store, "RowFilter(<, 'binaryprefix:rox')"), ["row1", "row2", "row3"]);
    // regexstring matches anywhere; substring ignores case.
    assert_eq!(keys(&store, "RowFilter(=, 'regexstring:^ro.$')"), ["rox"]);
    assert_eq!(keys(&store, "RowFilter(=, 'regexstring:[23]')"), ["row2", "row3"]);
    assert_eq!(keys(&store, "RowFilter(!=, 'substring:OW')"), ["rox", "zed"]);
}

#[test]
fn family_qualifier_and_value_filters_work_per_cell() {
    let (_dir, store) = fixture();
    assert_eq!(filtered(&store, "FamilyFilter(=, 'binary:b')"), "row1[b:d@10=hello] row2[b:d@12=World]");
    assert_eq!(
        filtered(&store, "QualifierFilter(>=, 'binary:c2')"),
        "row1[a:c2@10=x b:d@10=hello] row2[b:d@12=World] row3[a:c2@10=y] zed[a:c3@10=q]"
    );
    // The newest version passing the filter is returned (versions apply after filters).
    assert_eq!(filtered(&store, "ValueFilter(=, 'binaryprefix:v1')"), "row1[a:c1@10=v1] rox[a:c1@10=v1]");
    assert_eq!(filtered(&store, "ValueFilter(=, 'binary:v1old')"), "row1[a:c1@5=v1old]");
    assert_eq!(filtered(&store, "ValueFilter(=, 'substring:WORLD')"), "row2[b:d@12=World]");
}

#[test]
fn prefix_key_only_and_first_key_only() {
    let (_dir, store) = fixture();
    assert_eq!(keys(&store, "PrefixFilter('ro')"), ["row1", "row2", "row3", "rox"]);
    assert_eq!(keys(&store, "PrefixFilter('row')"), ["row1", "row2", "row3"]);
    assert_eq!(filtered(&store, "PrefixFilter('row2') AND KeyOnlyFilter()"), "row2[a:c1@10= b:d@12=]");
    // lenAsVal: the value becomes its length as a 4-byte big-endian integer.
    let page =
        store.scan("t", &Scan::new().prefix("row2").filter(Filter::parse("KeyOnlyFilter(true)").unwrap()));
    let lens: Vec<Vec<u8>> = page.unwrap().rows[0].cells.iter().map(|c| c.value.clone()).collect();
    assert_eq!(lens, vec![vec![0, 0, 0, 2], vec![0, 0, 0, 5]]);
    assert_eq!(
        filtered(&store, "FirstKeyOnlyFilter()"),
        "row1[a:c1@10=v1] row2[a:c1@10=v2] row3[a:c2@10=y] rox[a:c1@10=v1] zed[a:c1@10=v9]"
    );
}

#[test]
fn single_column_value_filter_follows_hbase_on_missing_columns_and_versions() {
    let (_dir, store) = fixture();
    // Rows without the column pass unless filterIfMissing.
    assert_eq!(keys(&store, "SingleColumnValueFilter('a', 'c1', =, 'binary:v1')"), ["row1", "row3", "rox"]);
    assert_eq!(
        keys(&store, "SingleColumnValueFilter('a', 'c1', =, 'binary:v1', true, true)"),
        ["row1", "rox"]
    );
    // latestVersionOnly=false: any version may match.
    assert_eq!(
        keys(&store, "SingleColumnValueFilter('a', 'c1', =, 'binary:v1old', true, true)"),
        Vec::<String>::new()
    );
    assert_eq!(keys(&store, "SingleColumnValueFilter('a', 'c1', =, 'binary:v1old', true, false)"), ["row1"]);
    // The whole row is returned, not just the tested column.
    assert_eq!(
        filtered(&store, "SingleColumnValueFilter('b', 'd', =, 'binary:hello', true, true)"),
        "row1[a:c1@10=v1 a:c2@10=x b:d@10=hello]"
    );
    // The exclude variant drops the tested column.
    assert_eq!(
        filtered(&store, "SingleColumnValueExcludeFilter('b', 'd', =, 'binary:hello', true, true)"),
        "row1[a:c1@10=v1 a:c2@10=x]"
    );
    // A column outside the scan's selection counts as missing.
    let scan = Scan::new()
        .read(ReadOptions::default().column(Column::parse(b"a")))
        .filter(Filter::parse("SingleColumnValueFilter('b', 'd', =, 'binary:hello', true, true)").unwrap());
    assert_eq!(render(&store, &scan), "");
}

#[test]
fn column_count_get_ends_the_scan_at_the_first_wide_row() {
    let (_dir, store) = fixture();
    // row1 has three columns: the first two are returned and the scan ends.
    assert_eq!(filtered(&store, "ColumnCountGetFilter(2)"), "row1[a:c1@10=v1 a:c2@10=x]");
    assert_eq!(keys(&store, "ColumnCountGetFilter(3)"), ["row1", "row2", "row3", "rox", "zed"]);
}

#[test]
fn column_pagination_prefix_range_and_timestamps() {
    let (_dir, store) = fixture();
    assert_eq!(
        filtered(&store, "ColumnPaginationFilter(1, 1)"),
        "row1[a:c2@10=x] row2[b:d@12=World] zed[a:c3@10=q]"
    );
    assert_eq!(filtered(&store, "ColumnPrefixFilter('c3')"), "zed[a:c3@10=q]");
    assert_eq!(
        filtered(&store, "MultipleColumnPrefixFilter('c3', 'd')"),
        "row1[b:d@10=hello] row2[b:d@12=World] zed[a:c3@10=q]"
    );
    assert_eq!(
        filtered(&store, "ColumnRangeFilter('c1', false, 'c3', true)"),
        "row1[a:c2@10=x] row3[a:c2@10=y] zed[a:c3@10=q]"
    );
    assert_eq!(filtered(&store, "ColumnRangeFilter('', true, 'c1', true)"), keys_c1(&store));
    assert_eq!(filtered(&store, "TimestampsFilter(12)"), "row2[b:d@12=World]");
    // Versions apply after the filter: the older version is what is left.
    assert_eq!(filtered(&store, "TimestampsFilter(5, 99)"), "row1[a:c1@5=v1old]");
}

fn keys_c1(store: &Store) -> String {
    filtered(store, "QualifierFilter(=, 'binary:c1')")
}

#[test]
fn page_and_inclusive_stop_end_the_scan() {
    let (_dir, store) = fixture();
    assert_eq!(keys(&store, "PageFilter(2)"), ["row1", "row2"]);
    assert_eq!(keys(&store, "PageFilter(0)"), Vec::<String>::new());
    assert_eq!(keys(&store, "InclusiveStopFilter('row2')"), ["row1", "row2"]);
    let reverse = Scan::new().reverse(true).filter(Filter::parse("InclusiveStopFilter('row2')").unwrap());
    let page = store.scan("t", &reverse).unwrap();
    let got: Vec<&[u8]> = page.rows.iter().map(|r| r.key.as_slice()).collect();
    assert_eq!(got, [&b"zed"[..], b"rox", b"row3", b"row2"]);
    // In an AND, PageFilter counts only the rows the filters before it pass
    // (the range is not bounded here: substring comparators cannot seek).
    assert_eq!(keys(&store, "RowFilter(!=, 'substring:ROW') AND PageFilter(2)"), ["rox", "zed"]);
    assert_eq!(keys(&store, "ValueFilter(=, 'binaryprefix:v') AND PageFilter(2)"), ["row1", "row2"]);
    assert_eq!(keys(&store, "QualifierFilter(=, 'binary:c3') AND PageFilter(1)"), ["zed"]);
    // Before them, it counts every row it sees.
    assert_eq!(keys(&store, "PageFilter(2) AND RowFilter(!=, 'substring:ROW')"), Vec::<String>::new());
}

#[test]
fn dependent_column_keeps_cells_stamped_like_the_reference_column() {
    let (_dir, store) = fixture();
    let all = |f: &str| {
        render(
            &store,
            &Scan::new()
                .read(ReadOptions::default().versions(ALL_VERSIONS))
                .filter(Filter::parse(f).unwrap()),
        )
    };
    assert_eq!(
        all("DependentColumnFilter('b', 'd')"),
        "row1[a:c1@10=v1 a:c2@10=x b:d@10=hello] row2[b:d@12=World]"
    );
    assert_eq!(all("DependentColumnFilter('b', 'd', true)"), "row1[a:c1@10=v1 a:c2@10=x]");
    assert_eq!(all("DependentColumnFilter('b', 'd', false, =, 'binary:World')"), "row2[b:d@12=World]");
}

#[test]
fn random_row_filter_samples_by_chance() {
    let (_dir, store) = fixture();
    assert!(keys(&store, "RandomRowFilter(0)").is_empty());
    assert_eq!(keys(&store, "RandomRowFilter(1.0)").len(), 5);
    let half = keys(&store, "RandomRowFilter(0.5)");
    assert_eq!(half, keys(&store, "RandomRowFilter(0.5)"), "same rows on every run");
}

#[test]
fn lists_skip_and_while_with_hbase_precedence() {
    let (_dir, store) = fixture();
    // AND binds tighter than OR.
    assert_eq!(
        filtered(&store, "PrefixFilter('row') AND FamilyFilter(=, 'binary:b') OR RowFilter(=, 'binary:zed')"),
        "row1[b:d@10=hello] row2[b:d@12=World] zed[a:c1@10=v9 a:c3@10=q]"
    );
    assert_eq!(
        filtered(
            &store,
            "PrefixFilter('row') AND (FamilyFilter(=, 'binary:b') OR RowFilter(=, 'binary:zed'))"
        ),
        "row1[b:d@10=hello] row2[b:d@12=World]"
    );
    // API.md's example: the OR keeps every cell (KeyOnlyFilter passes all), values stripped.
    assert_eq!(
        filtered(&store, "PrefixFilter('row') AND (QualifierFilter(>=, 'binary:c2') OR KeyOnlyFilter())"),
        "row1[a:c1@10= a:c2@10= b:d@10=] row2[a:c1@10= b:d@12=] row3[a:c2@10=]"
    );
    // SKIP drops a row when the inner filter drops any of its cells.
    assert_eq!(keys(&store, "SKIP ValueFilter(!=, 'binary:x')"), ["row2", "row3", "rox", "zed"]);
    // WHILE ends the scan at the first row the inner filter rejects.
    assert_eq!(keys(&store, "WHILE RowFilter(<, 'binary:row3')"), ["row1", "row2"]);
    assert_eq!(keys(&store, "WHILE ValueFilter(!=, 'binary:x')"), Vec::<String>::new());
    // A WHILE prefix does not skip rows before the prefix: the first one ends the scan.
    assert_eq!(keys(&store, "WHILE PrefixFilter('rox')"), Vec::<String>::new());
    assert_eq!(keys(&store, "SKIP PrefixFilter('rox')"), ["rox"]);
    // SKIP and WHILE bind tighter than AND.
    assert_eq!(
        keys(&store, "SKIP ValueFilter(!=, 'binary:x') AND RowFilter(<, 'binary:rox')"),
        ["row2", "row3"]
    );
}

#[test]
fn filters_combine_with_scan_ranges_limits_and_cursors() {
    let (_dir, store) = fixture();
    let filter = Filter::parse("QualifierFilter(=, 'binary:c1')").unwrap();
    let page = store.scan("t", &Scan::new().filter(filter.clone()).limit(2)).unwrap();
    assert_eq!(page.rows.len(), 2);
    let rest =
        store.scan("t", &Scan::new().filter(filter.clone()).cursor(page.next_cursor.unwrap())).unwrap();
    let keys: Vec<&[u8]> = rest.rows.iter().map(|r| r.key.as_slice()).collect();
    assert_eq!(keys, [&b"rox"[..], b"zed"]);
    assert_eq!(store.count("t", &Scan::new().filter(filter.clone())).unwrap(), 4);
    assert_eq!(store.count("t", &Scan::new().filter(filter).offset(3)).unwrap(), 1);
    // keys_only hides values only after the filter has seen them.
    let vf = Filter::parse("ValueFilter(=, 'binary:v9')").unwrap();
    let page = store.scan("t", &Scan::new().filter(vf).keys_only(true)).unwrap();
    assert_eq!(page.rows.len(), 1);
    assert!(page.rows[0].cells[0].value.is_empty());
}

fn parse_error(input: &str) -> (usize, String) {
    let err = Filter::parse(input).unwrap_err();
    match err.kind() {
        ErrorKind::InvalidFilter { position, .. } => (*position, err.to_string()),
        other => panic!("expected InvalidFilter, got {other:?}"),
    }
}

#[test]
fn parser_errors_name_the_position_and_what_was_expected() {
    let cases: [(&str, usize, &str); 12] = [
        ("PrefixFilter('a'", 16, "expected ',' or ')', found end of input"),
        ("(PrefixFilter('a')", 18, "expected ')' or AND/OR, found end of input"),
        ("PrefixFilter('a'))", 17, "unbalanced ')'"),
        ("NoSuchFilter('a')", 0, "expected a filter name"),
        ("PrefixFilter('a', 'b')", 18, "PrefixFilter takes no more arguments"),
        ("PageFilter('x')", 11, "expected the page size, an integer"),
        ("RowFilter(=, 'nope:x')", 13, "comparator type"),
        ("RowFilter('binary:x')", 10, "expected a compare operator"),
        ("RowFilter(<, 'regexstring:a')", 10, "expected = or !="),
        ("PrefixFilter('abc)", 13, "unterminated quote"),
        ("PrefixFilter('a') AND", 21, "expected a filter name, SKIP, WHILE or '('"),
        ("PrefixFilter('a') XOR PrefixFilter('b')", 18, "expected AND, OR or end of input"),
    ];
    for (input, position, message) in cases {
        let (at, text) = parse_error(input);
        assert_eq!(at, position, "{input}: {text}");
        assert!(text.contains(message), "{input}: {text}");
    }
    assert!(parse_error("RowFilter(=, 'regexstring:(')").1.contains("a valid regex"));
    assert!(parse_error(&"(".repeat(100)).1.contains("levels of nesting"));
    // Quoted arguments: '' is one quote and bytes pass as they are.
    assert_eq!(Filter::parse("PrefixFilter('it''s')").unwrap(), Filter::Prefix(b"it's".to_vec()));
    assert_eq!(Filter::parse(b"PrefixFilter('\x00\xff')").unwrap(), Filter::Prefix(vec![0, 0xff]));
}

/// HBASE-20565: in an AND list a filter sees only the cells every earlier
/// filter included, so ColumnPaginationFilter after ColumnRangeFilter pages
/// through the range's columns (HBase's `TestFilterList`, "ColumnRangeFilter
/// combined with ColumnPaginationFilter"). Before it the page counted the
/// column the range then dropped, and came out one column short.
#[test]
fn column_pagination_after_column_range_pages_through_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f")])).unwrap();
    let cells = ["a", "b", "c", "d", "e", "f"].map(|q| PutCell::new("f", q, q).at(1));
    store.put("t", b"r", cells.to_vec()).unwrap();
    let qualifiers = |filter: &str| -> String {
        let page = store.scan("t", &Scan::new().filter(Filter::parse(filter).unwrap())).unwrap();
        page.rows
            .iter()
            .flat_map(|r| &r.cells)
            .map(|c| String::from_utf8_lossy(&c.qualifier).into_owned())
            .collect()
    };
    assert_eq!(qualifiers("ColumnRangeFilter('b', true, 'e', true) AND ColumnPaginationFilter(2, 0)"), "bc");
    assert_eq!(qualifiers("ColumnRangeFilter('b', true, 'e', true) AND ColumnPaginationFilter(2, 1)"), "cd");
    assert_eq!(qualifiers("ColumnPrefixFilter('c') AND ColumnCountGetFilter(1)"), "c");
    // In the other order the page is taken first, over every column, and
    // the range then keeps what of it falls inside.
    assert_eq!(qualifiers("ColumnPaginationFilter(2, 0) AND ColumnRangeFilter('b', true, 'e', true)"), "b");
    // OR lists give every filter every cell, as before.
    assert_eq!(qualifiers("ColumnRangeFilter('e', true, 'f', true) OR ColumnPaginationFilter(1, 0)"), "aef");
}

/// HBase's filters take Java `int` counts (ColumnCountGetFilter,
/// ColumnPaginationFilter) and `long` timestamps and page sizes: a number
/// past them, or negative, is an error at its position, not a wrapped or
/// widened value.
#[test]
fn integer_arguments_past_java_int_and_long_are_refused_at_their_position() {
    for (input, position) in [
        ("ColumnCountGetFilter(99999999999999999999)", 21),
        ("ColumnCountGetFilter(2147483648)", 21),
        ("ColumnPaginationFilter(1, 2147483648)", 26),
        ("TimestampsFilter(5, 9223372036854775808)", 20),
        ("PageFilter(9223372036854775808)", 11),
    ] {
        assert_eq!(parse_error(input).0, position, "{input}: {}", parse_error(input).1);
    }
    // The largest values HBase takes still parse.
    for input in ["ColumnCountGetFilter(2147483647)", "TimestampsFilter(9223372036854775807)"] {
        assert!(Filter::parse(input).is_ok(), "{input}");
    }
}

/// A scan whose filter rejects every row walks them all inside one call:
/// a fired [`rowsearch_store::Cancel`] stops it with `Cancelled`, an
/// unfired one changes nothing, and a count stops the same way.
#[test]
fn a_cancelled_scan_stops_even_where_its_filter_rejects_every_row() {
    use rowsearch_store::{Cancel, CancelReason};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("a")])).unwrap();
    let mut batch = Batch::new();
    for i in 0..2000 {
        batch.put("t", format!("r{i:05}"), vec![PutCell::new("a", "c", format!("v{i}"))]);
    }
    store.apply(&batch).unwrap();
    let rejecting = Scan::new().filter(Filter::parse("ValueFilter(=, 'binary:none')").unwrap());
    let txn = store.begin_read().unwrap();
    let live = Cancel::new(None);
    assert_eq!(txn.scan("t", &rejecting).unwrap().cancel_on(live.clone()).into_page().unwrap().rows.len(), 0);
    assert_eq!(txn.count_until("t", &Scan::new(), &live).unwrap(), 2000);
    live.cancel(CancelReason::Abandoned);
    let err = txn.scan("t", &rejecting).unwrap().cancel_on(live.clone()).into_page().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Cancelled { reason: CancelReason::Abandoned }), "{err}");
    let err = txn.count_until("t", &Scan::new(), &Cancel::new(Some(std::time::Instant::now()))).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Cancelled { reason: CancelReason::TimeLimit }), "{err}");
    // Without a cancel (the CLI's scans) nothing changes.
    assert_eq!(txn.count("t", &Scan::new()).unwrap(), 2000);
}

/// `ColumnValueFilter` (HBase 2): only the matching cells of its column,
/// where `SingleColumnValueFilter` keeps the whole row; rows without one
/// are left out.
#[test]
fn column_value_filter_keeps_only_the_matching_cells_of_its_column() {
    let (_dir, store) = fixture();
    assert_eq!(
        filtered(&store, "ColumnValueFilter('a', 'c1', =, 'binaryprefix:v1')"),
        "row1[a:c1@10=v1] rox[a:c1@10=v1]"
    );
    assert_eq!(
        filtered(&store, "SingleColumnValueFilter('a', 'c1', =, 'binaryprefix:v1', true, true)"),
        "row1[a:c1@10=v1 a:c2@10=x b:d@10=hello] rox[a:c1@10=v1]"
    );
    assert_eq!(filtered(&store, "ColumnValueFilter('b', 'd', !=, 'binary:hello')"), "row2[b:d@12=World]");
    let text = "ColumnValueFilter('a', 'c1', =, 'binaryprefix:v1')";
    assert_eq!(Filter::parse(text).unwrap().to_language(), text.as_bytes());
}

/// `MultiRowRangeFilter(start, startInclusive, stop, stopInclusive, ...)`:
/// rows in any range; an empty row is an open side.
#[test]
fn multi_row_range_filter_passes_rows_in_any_range() {
    let (_dir, store) = fixture();
    assert_eq!(keys(&store, "MultiRowRangeFilter('row1', false, 'row3', true)"), ["row2", "row3"]);
    assert_eq!(
        keys(&store, "MultiRowRangeFilter('', false, 'row2', false, 'rox', true, '', false)"),
        ["row1", "rox", "zed"]
    );
    assert_eq!(keys(&store, "MultiRowRangeFilter('row2', true, 'row2', true)"), ["row2"]);
    let err = Filter::parse("MultiRowRangeFilter('a', true, 'b')").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidFilter { .. }), "{err}");
    let text = "MultiRowRangeFilter('', false, 'row2', false, 'rox', true, '', false)";
    assert_eq!(Filter::parse(text).unwrap().to_language(), text.as_bytes());
}

/// `FuzzyRowFilter(key, mask, ...)`: rows matching any key at its fixed
/// positions (mask '0'), anything at the free ones ('1'); HBase's own mask
/// bytes \x00 and \x01 mean the same. A mask not as long as its key, or
/// with other bytes, is an error at the mask's position.
#[test]
fn fuzzy_row_filter_matches_fixed_positions_only() {
    let (_dir, store) = fixture();
    // Rows: row1 row2 row3 rox zed.
    assert_eq!(keys(&store, "FuzzyRowFilter('row?', '0001')"), ["row1", "row2", "row3"]);
    // "rox" is shorter than the key: its three bytes match ('r' fixed, the rest free).
    assert_eq!(keys(&store, "FuzzyRowFilter('r??2', '0110')"), ["row2", "rox"]);
    assert_eq!(keys(&store, "FuzzyRowFilter('??x', '110', 'z', '0')"), ["rox", "zed"]);
    assert_eq!(keys(&store, "FuzzyRowFilter('ro\u{0}', '00\u{1}')"), ["row1", "row2", "row3", "rox"]);
    // A key longer than a row: the row is compared on its own length, as HBase does.
    assert_eq!(keys(&store, "FuzzyRowFilter('zedzed', '000000')"), ["zed"]);
    for (text, position) in [("FuzzyRowFilter('ab', '0')", 21), ("FuzzyRowFilter('ab', '02')", 21)] {
        let err = Filter::parse(text).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidFilter { position: p, .. } if *p == position),
            "{text}: {err}"
        );
    }
    let text = "FuzzyRowFilter('row?', '0001', 'z', '0')";
    assert_eq!(Filter::parse(text).unwrap().to_language(), text.as_bytes());
}
