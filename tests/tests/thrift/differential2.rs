//! The differential test of the Thrift2 gateway (`THBaseService`): one
//! sequence of calls sent to a real Apache HBase's Thrift2 gateway and to
//! `rowsearch serve --thrift2`, answer by answer equal after the
//! normalizations of `differential.rs` (server-chosen timestamps, which
//! exception, map order) and, for the answers that describe HBase's own
//! machinery (table descriptors, region locations), what both share.

use super::client::{A, Client, V};
use super::differential::{assert_same, normalize, outcome_kind};

/// A struct's fields, to send.
type Fields<'a> = Vec<(i16, A<'a>)>;

fn tname(t: &[u8]) -> A<'_> {
    A::Struct(vec![(2, A::Bytes(t))])
}

fn cv<'a>(family: &'a [u8], qualifier: &'a [u8], value: &'a [u8], ts: i64) -> Vec<(i16, A<'a>)> {
    vec![(1, A::Bytes(family)), (2, A::Bytes(qualifier)), (3, A::Bytes(value)), (4, A::I64(ts))]
}

fn column<'a>(family: &'a [u8], qualifier: Option<&'a [u8]>) -> Vec<(i16, A<'a>)> {
    let mut c = vec![(1, A::Bytes(family))];
    if let Some(q) = qualifier {
        c.push((2, A::Bytes(q)));
    }
    c
}

/// What two gateways share of an answer.
fn shared(method: &str, value: V) -> String {
    match method {
        // TTableDescriptor: 1 name; 2 families (1 name, 10 maxVersions).
        "getTableDescriptor" => {
            let families: Vec<(Option<V>, Option<V>)> = value
                .field(2)
                .map(|f| f.items().iter().map(|c| (c.field(1).cloned(), c.field(10).cloned())).collect())
                .unwrap_or_default();
            format!("{:?} {families:?}", value.field(1).and_then(|n| n.field(2)))
        }
        // THRegionLocation: 2 regionInfo (3 startKey, 4 endKey).
        "getAllRegionLocations" => {
            let bounds: Vec<_> = value
                .items()
                .iter()
                .map(|l| l.field(2).map(|i| (i.field(3).cloned(), i.field(4).cloned())))
                .collect();
            format!("{bounds:?}")
        }
        "getRegionLocation" => {
            format!("{:?}", value.field(2).map(|i| (i.field(3).cloned(), i.field(4).cloned())))
        }
        _ => format!("{value:?}"),
    }
}

fn run(addr: &str) -> Vec<(String, String)> {
    let mut c = Client::connect(addr);
    let mut steps = Vec::new();
    let t: &[u8] = b"rowsearch_diff2";
    let call = |c: &mut Client,
                steps: &mut Vec<(String, String)>,
                label: &str,
                method: &str,
                args: Vec<(i16, A)>| {
        let reply = c.call(method, &args);
        let answer = match outcome_kind(&reply) {
            Some(kind) => kind,
            None => match reply.as_ref().ok().and_then(|r| r.field(0)) {
                Some(value) => shared(method, normalize(value)),
                None => "ok".to_owned(),
            },
        };
        steps.push((label.to_owned(), answer));
    };
    let _ = c.call("disableTable", &[(1, tname(t))]);
    let _ = c.call("deleteTable", &[(1, tname(t))]);

    let desc = A::Struct(vec![
        (1, tname(t)),
        (2, A::Structs(vec![vec![(1, A::Bytes(b"a")), (10, A::I32(3))], vec![(1, A::Bytes(b"b"))]])),
    ]);
    call(&mut c, &mut steps, "create", "createTable", vec![(1, desc)]);
    call(&mut c, &mut steps, "exists", "tableExists", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "descriptor", "getTableDescriptor", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "enabled", "isTableEnabled", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "server type", "getThriftServerType", vec![]);

    let puts = A::Structs(vec![
        vec![
            (1, A::Bytes(b"r1")),
            (
                2,
                A::Structs(vec![
                    cv(b"a", b"x", b"apple", 100),
                    cv(b"a", b"y", b"1", 100),
                    cv(b"b", b"z", b"zeta", 100),
                ]),
            ),
        ],
        vec![(1, A::Bytes(b"r1")), (2, A::Structs(vec![cv(b"a", b"x", b"apricot", 200)]))],
        vec![
            (1, A::Bytes(b"r2")),
            (2, A::Structs(vec![cv(b"a", b"x", b"banana", 100), cv(b"b", b"z", b"zulu", 100)])),
        ],
        vec![(1, A::Bytes(b"r3")), (2, A::Structs(vec![cv(b"a", b"y", b"3", 100)])), (3, A::I64(7))],
        vec![
            (1, A::Bytes(b"r4")),
            (2, A::Structs(vec![cv(b"a", b"x", b"cherry", 150), cv(b"a", b"x", b"cranberry", 250)])),
        ],
        vec![(1, A::Bytes(b"s1")), (2, A::Structs(vec![cv(b"a", b"x", b"elder", 100)]))],
    ]);
    call(&mut c, &mut steps, "putMultiple", "putMultiple", vec![(1, A::Bytes(t)), (2, puts)]);
    let put = vec![(1, A::Bytes(b"r5")), (2, A::Structs(vec![cv(b"b", b"z", b"zebra", 100)]))];
    call(&mut c, &mut steps, "put", "put", vec![(1, A::Bytes(t)), (2, A::Struct(put))]);

    // Gets.
    let gets: Vec<(&str, Vec<(i16, A)>)> = vec![
        ("plain", vec![(1, A::Bytes(b"r1"))]),
        ("missing", vec![(1, A::Bytes(b"nope"))]),
        ("versions", vec![(1, A::Bytes(b"r1")), (5, A::I32(3))]),
        (
            "columns",
            vec![(1, A::Bytes(b"r1")), (2, A::Structs(vec![column(b"a", Some(b"x")), column(b"b", None)]))],
        ),
        ("timestamp", vec![(1, A::Bytes(b"r4")), (3, A::I64(150))]),
        (
            "time range",
            vec![
                (1, A::Bytes(b"r4")),
                (4, A::Struct(vec![(1, A::I64(0)), (2, A::I64(250))])),
                (5, A::I32(5)),
            ],
        ),
        ("filter", vec![(1, A::Bytes(b"r1")), (6, A::Bytes(b"QualifierFilter(=, 'binary:y')"))]),
        ("filtered out", vec![(1, A::Bytes(b"r1")), (6, A::Bytes(b"ValueFilter(=, 'binary:nothing')"))]),
        ("row's own timestamp", vec![(1, A::Bytes(b"r3"))]),
    ];
    for (label, get) in gets {
        call(&mut c, &mut steps, &format!("get {label}"), "get", vec![(1, A::Bytes(t)), (2, A::Struct(get))]);
    }
    let many = || {
        A::Structs(vec![vec![(1, A::Bytes(b"r5"))], vec![(1, A::Bytes(b"nope"))], vec![(1, A::Bytes(b"r2"))]])
    };
    call(&mut c, &mut steps, "getMultiple", "getMultiple", vec![(1, A::Bytes(t)), (2, many())]);
    call(&mut c, &mut steps, "existsAll", "existsAll", vec![(1, A::Bytes(t)), (2, many())]);
    call(
        &mut c,
        &mut steps,
        "exists",
        "exists",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r2"))]))],
    );
    call(
        &mut c,
        &mut steps,
        "get of no table",
        "get",
        vec![(1, A::Bytes(b"no_such")), (2, A::Struct(vec![(1, A::Bytes(b"r"))]))],
    );

    // Scans, one-shot and through a scanner.
    let scans: Vec<(&str, Vec<(i16, A)>)> = vec![
        ("all", vec![]),
        ("r2..r5", vec![(1, A::Bytes(b"r2")), (2, A::Bytes(b"r5"))]),
        ("reversed", vec![(11, A::Bool(true))]),
        ("columns", vec![(3, A::Structs(vec![column(b"a", Some(b"y")), column(b"b", None)]))]),
        ("time range", vec![(6, A::Struct(vec![(1, A::I64(100)), (2, A::I64(200))])), (5, A::I32(3))]),
        ("versions", vec![(5, A::I32(2))]),
        ("filter", vec![(7, A::Bytes(b"PrefixFilter('r') AND ValueFilter(=, 'substring:an')"))]),
        ("limit", vec![(15, A::I32(2))]),
    ];
    for (label, scan) in scans {
        let one_shot = vec![(1, A::Bytes(t)), (2, A::Struct(scan)), (3, A::I32(100))];
        call(&mut c, &mut steps, &format!("scan {label}"), "getScannerResults", one_shot);
    }
    let opened =
        c.call("openScanner", &[(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r2"))]))]).unwrap();
    let Some(V::Int(id)) = opened.field(0).cloned() else { panic!("openScanner: {opened:?}") };
    for page in 0..3 {
        let label = format!("scanner page {page}");
        call(&mut c, &mut steps, &label, "getScannerRows", vec![(1, A::I32(id as i32)), (2, A::I32(2))]);
    }
    call(&mut c, &mut steps, "closeScanner", "closeScanner", vec![(1, A::I32(id as i32))]);
    call(
        &mut c,
        &mut steps,
        "closed scanner",
        "getScannerRows",
        vec![(1, A::I32(id as i32)), (2, A::I32(2))],
    );

    // Deletes: one version (given, and the newest), all versions, a family, a row.
    let del = |row: &'static [u8], cols: Vec<Vec<(i16, A<'static>)>>, kind: Option<i32>, ts: Option<i64>| {
        let mut d = vec![(1, A::Bytes(row)), (2, A::Structs(cols))];
        if let Some(ts) = ts {
            d.push((3, A::I64(ts)));
        }
        if let Some(kind) = kind {
            d.push((4, A::I32(kind)));
        }
        d
    };
    let with_ts = |f: &'static [u8], q: &'static [u8], ts: i64| {
        vec![(1, A::Bytes(f)), (2, A::Bytes(q)), (3, A::I64(ts))]
    };
    let steps_of_deletes: Vec<(&str, Fields, &[u8])> = vec![
        ("one version at 250", del(b"r4", vec![with_ts(b"a", b"x", 250)], Some(0), None), b"r4"),
        ("the newest version", del(b"r1", vec![column(b"a", Some(b"x"))], Some(0), None), b"r1"),
        ("all versions", del(b"r1", vec![column(b"a", Some(b"y"))], None, None), b"r1"),
        ("a family as a column", del(b"r2", vec![column(b"b", None)], None, None), b"r2"),
        ("a family", del(b"r2", vec![column(b"b", None)], Some(2), None), b"r2"),
        ("a row", del(b"s1", vec![], None, None), b"s1"),
    ];
    for (label, d, row) in steps_of_deletes {
        call(
            &mut c,
            &mut steps,
            &format!("delete {label}"),
            "deleteSingle",
            vec![(1, A::Bytes(t)), (2, A::Struct(d))],
        );
        let get = A::Struct(vec![(1, A::Bytes(row)), (5, A::I32(5))]);
        call(&mut c, &mut steps, &format!("after delete {label}"), "get", vec![(1, A::Bytes(t)), (2, get)]);
    }

    // Checks, counters, appends, row mutations.
    let put_y = |v: &'static [u8]| {
        A::Struct(vec![(1, A::Bytes(b"r3")), (2, A::Structs(vec![cv(b"a", b"y", v, 300)]))])
    };
    for (label, expected, value) in [
        ("checkAndPut wrong", Some(&b"nope"[..]), &b"w"[..]),
        ("checkAndPut right", Some(b"3"), b"checked"),
        ("checkAndPut absent", None, b"x"),
    ] {
        let mut args = vec![
            (1, A::Bytes(t)),
            (2, A::Bytes(b"r3")),
            (3, A::Bytes(b"a")),
            (4, A::Bytes(b"y")),
            (6, put_y(value)),
        ];
        if let Some(e) = expected {
            args.push((5, A::Bytes(e)));
        }
        call(&mut c, &mut steps, label, "checkAndPut", args);
    }
    call(
        &mut c,
        &mut steps,
        "after checkAndPut",
        "get",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r3"))]))],
    );
    for (label, op, value) in [("checkAndMutate less", 0, &b"zzz"[..]), ("checkAndMutate greater", 5, b"aaa")]
    {
        let mutations = A::Struct(vec![
            (1, A::Bytes(b"r3")),
            (
                2,
                A::Structs(vec![vec![(
                    1,
                    A::Struct(vec![
                        (1, A::Bytes(b"r3")),
                        (2, A::Structs(vec![cv(b"a", b"m", label.as_bytes(), 400)])),
                    ]),
                )]]),
            ),
        ]);
        let args = vec![
            (1, A::Bytes(t)),
            (2, A::Bytes(b"r3")),
            (3, A::Bytes(b"a")),
            (4, A::Bytes(b"y")),
            (5, A::I32(op)),
            (6, A::Bytes(value)),
            (7, mutations),
        ];
        call(&mut c, &mut steps, label, "checkAndMutate", args);
    }
    call(
        &mut c,
        &mut steps,
        "after checkAndMutate",
        "get",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r3"))]))],
    );
    let inc = A::Struct(vec![
        (1, A::Bytes(b"c1")),
        (
            2,
            A::Structs(vec![
                vec![(1, A::Bytes(b"a")), (2, A::Bytes(b"n")), (3, A::I64(5))],
                vec![(1, A::Bytes(b"a")), (2, A::Bytes(b"m"))],
            ]),
        ),
    ]);
    call(&mut c, &mut steps, "increment", "increment", vec![(1, A::Bytes(t)), (2, inc)]);
    let app = A::Struct(vec![
        (1, A::Bytes(b"r5")),
        (2, A::Structs(vec![vec![(1, A::Bytes(b"b")), (2, A::Bytes(b"z")), (3, A::Bytes(b"-more"))]])),
    ]);
    call(&mut c, &mut steps, "append", "append", vec![(1, A::Bytes(t)), (2, app)]);
    let mutations = A::Struct(vec![
        (1, A::Bytes(b"r6")),
        (
            2,
            A::Structs(vec![
                vec![(
                    1,
                    A::Struct(vec![
                        (1, A::Bytes(b"r6")),
                        (2, A::Structs(vec![cv(b"a", b"x", b"fig", 100), cv(b"a", b"y", b"6", 100)])),
                    ]),
                )],
                vec![(
                    2,
                    A::Struct(vec![(1, A::Bytes(b"r6")), (2, A::Structs(vec![column(b"a", Some(b"y"))]))]),
                )],
            ]),
        ),
    ]);
    call(&mut c, &mut steps, "mutateRow", "mutateRow", vec![(1, A::Bytes(t)), (2, mutations)]);
    call(
        &mut c,
        &mut steps,
        "after mutateRow",
        "get",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r6"))]))],
    );

    // Regions and admin.
    call(&mut c, &mut steps, "regions", "getAllRegionLocations", vec![(1, A::Bytes(t))]);
    call(
        &mut c,
        &mut steps,
        "region of r3",
        "getRegionLocation",
        vec![(1, A::Bytes(t)), (2, A::Bytes(b"r3"))],
    );
    call(&mut c, &mut steps, "delete enabled", "deleteTable", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "disable", "disableTable", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "disabled?", "isTableDisabled", vec![(1, tname(t))]);
    call(
        &mut c,
        &mut steps,
        "get disabled",
        "get",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r3"))]))],
    );
    call(&mut c, &mut steps, "enable", "enableTable", vec![(1, tname(t))]);
    call(
        &mut c,
        &mut steps,
        "get enabled",
        "get",
        vec![(1, A::Bytes(t)), (2, A::Struct(vec![(1, A::Bytes(b"r5"))]))],
    );
    call(&mut c, &mut steps, "disable again", "disableTable", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "delete", "deleteTable", vec![(1, tname(t))]);
    call(&mut c, &mut steps, "exists after", "tableExists", vec![(1, tname(t))]);
    steps
}

#[test]
fn thrift2_answers_equal_a_real_hbase() {
    let Some(hbase) = rowsearch_tests::hbase("thrift::differential2::thrift2_answers_equal_a_real_hbase")
    else {
        return;
    };
    let (_t, _s, thrift2) = super::thrift2_server();
    let want = run(&hbase.thrift2);
    let got = run(&thrift2);
    assert_same(&want, &got, &[]);
    let with_cells = want.iter().filter(|(_, w)| w.contains("Bytes([97])")).count();
    assert!(with_cells >= 20, "only {with_cells} steps answered cells");
}
