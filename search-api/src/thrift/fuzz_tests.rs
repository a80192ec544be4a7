//! Every method of both services called with arbitrary arguments (structs
//! of plausible and implausible fields, nested, with names of the table
//! and its family among random bytes): no call panics, every method named
//! is served, and the store stays readable and consistent after each.

use std::sync::Arc;

use proptest::prelude::*;
use rowsearch_store::{FamilySchema, PutCell, ReadOptions, Store, TableSchema};

use super::codec::{TType, Value};
use super::hbase::Gateway;
use super::scanners::Session;
use super::thbase::Thrift2;

const HBASE: &[&str] = &[
    "getTableNames",
    "createTable",
    "deleteTable",
    "enableTable",
    "disableTable",
    "isTableEnabled",
    "getColumnDescriptors",
    "getTableRegions",
    "getRegionInfo",
    "compact",
    "majorCompact",
    "get",
    "getVer",
    "getVerTs",
    "getRow",
    "getRowWithColumns",
    "getRowTs",
    "getRowWithColumnsTs",
    "getRows",
    "getRowsWithColumns",
    "getRowsTs",
    "getRowsWithColumnsTs",
    "mutateRow",
    "mutateRowTs",
    "mutateRows",
    "mutateRowsTs",
    "deleteAll",
    "deleteAllTs",
    "deleteAllRow",
    "deleteAllRowTs",
    "scannerOpen",
    "scannerOpenWithStop",
    "scannerOpenWithPrefix",
    "scannerOpenTs",
    "scannerOpenWithStopTs",
    "scannerOpenWithScan",
    "scannerGet",
    "scannerGetList",
    "scannerClose",
    "atomicIncrement",
    "checkAndPut",
    "getRowOrBefore",
    "append",
    "increment",
    "incrementRows",
];

const THRIFT2: &[&str] = &[
    "exists",
    "existsAll",
    "get",
    "getMultiple",
    "put",
    "putMultiple",
    "deleteSingle",
    "deleteMultiple",
    "checkAndPut",
    "checkAndDelete",
    "checkAndMutate",
    "mutateRow",
    "increment",
    "append",
    "openScanner",
    "getScannerRows",
    "closeScanner",
    "getScannerResults",
    "getRegionLocation",
    "getAllRegionLocations",
    "getTableDescriptor",
    "getTableDescriptors",
    "tableExists",
    "getTableDescriptorsByPattern",
    "getTableNamesByPattern",
    "getTableDescriptorsByNamespace",
    "getTableNamesByNamespace",
    "createTable",
    "deleteTable",
    "truncateTable",
    "enableTable",
    "disableTable",
    "isTableEnabled",
    "isTableDisabled",
    "isTableAvailable",
    "isTableAvailableWithSplit",
    "addColumnFamily",
    "deleteColumnFamily",
    "modifyColumnFamily",
    "modifyTable",
    "createNamespace",
    "modifyNamespace",
    "deleteNamespace",
    "listNamespaces",
    "listNamespaceDescriptors",
    "getNamespaceDescriptor",
    "getThriftServerType",
    "getClusterId",
    "getSlowLogResponses",
    "clearSlowLogResponses",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            &b"t"[..],
            b"f",
            b"f:q",
            b"f:",
            b"r",
            b"",
            b"default",
            b"x:y:z",
            b"(",
            b"\xff"
        ])
        .prop_map(|b| Value::Binary(b.to_vec())),
        proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Binary),
        prop_oneof![Just(0i32), Just(1), Just(-1), Just(2), Just(5), Just(i32::MAX), any::<i32>()]
            .prop_map(Value::I32),
        prop_oneof![Just(0i64), Just(100), Just(-1), Just(i64::MAX), any::<i64>()].prop_map(Value::I64),
        any::<bool>().prop_map(Value::Bool),
        any::<i8>().prop_map(Value::Byte),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::btree_map(1i16..9, inner.clone(), 0..6)
                .prop_map(|fields| Value::Struct(fields.into_iter().collect())),
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| Value::List { elem: TType::Struct, items }),
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..3), 0..3).prop_map(|items| {
                Value::List { elem: TType::Binary, items: items.into_iter().map(Value::Binary).collect() }
            }),
        ]
    })
}

fn args() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(1i16..9, value(), 0..7)
        .prop_map(|f| Value::Struct(f.into_iter().collect()))
}

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("d")).unwrap();
    store.create_table("t", &TableSchema::new([FamilySchema::new("f").max_versions(3)])).unwrap();
    store.put("t", b"r", vec![PutCell::new("f", "q", "v")]).unwrap();
    (dir, Arc::new(store))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Each case calls every method of both services, in turn, on one
    /// store, with its own arbitrary arguments.
    #[test]
    fn every_method_takes_any_arguments(calls in proptest::collection::vec(args(), HBASE.len() + THRIFT2.len())) {
        let (_dir, store) = store();
        let (hbase, thrift2) = (Gateway::new(Arc::clone(&store)), Thrift2::new(Arc::clone(&store)));
        let mut session = Session::default();
        let methods = HBASE.iter().map(|m| (true, *m)).chain(THRIFT2.iter().map(|m| (false, *m)));
        for ((is_hbase, method), args) in methods.zip(&calls) {
            let served = if is_hbase {
                hbase.call(&mut session, method, args).is_some()
            } else {
                thrift2.call(&mut session, method, args).is_some()
            };
            prop_assert!(served, "{method} is not served");
            // The store answers after every call (any table still there reads).
            for table in store.tables().unwrap() {
                if store.is_table_enabled(&table).unwrap() {
                    store.get(&table, b"r", &ReadOptions::default()).unwrap();
                }
            }
        }
    }
}
