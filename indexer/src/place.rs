//! Where an entry point works: the tables (their rows read and written,
//! wherever they live: [`TableStore`]) and the local directory their
//! search index generations go to. Every entry point of the indexer
//! (ingest, reindex, verify, the live indexes) takes one, so there is one
//! of each whatever the tables' place: the embedded store is its own place
//! (`&store` converts), a place elsewhere (HBase) comes with a data
//! directory ([`Place::new`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rowsearch_store::{RowSource, Store, TableStore};

/// Borrowed: for a call (see the module docs).
#[derive(Clone, Copy)]
pub struct Place<'a> {
    /// Where the tables live.
    pub tables: &'a dyn TableStore,
    /// The data directory the indexes go to.
    pub data: &'a Path,
}

impl<'a> Place<'a> {
    /// Tables in `tables`, their indexes under `data`.
    pub fn new(tables: &'a dyn TableStore, data: &'a Path) -> Place<'a> {
        Place { tables, data }
    }

    /// The tables as a row source.
    pub fn source(&self) -> &'a dyn RowSource {
        self.tables
    }
}

impl std::fmt::Debug for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Place").field("tables", &self.tables.place()).field("data", &self.data).finish()
    }
}

impl<'a> From<&'a Store> for Place<'a> {
    fn from(store: &'a Store) -> Place<'a> {
        Place { tables: store, data: store.path() }
    }
}

impl<'a> From<&'a Arc<Store>> for Place<'a> {
    fn from(store: &'a Arc<Store>) -> Place<'a> {
        Place::from(&**store)
    }
}

impl<'a> From<&'a Home> for Place<'a> {
    fn from(home: &'a Home) -> Place<'a> {
        Place { tables: &*home.tables, data: &home.data }
    }
}

/// Owned: for what outlives a call (the live indexes, the searcher, jobs).
#[derive(Clone, Debug)]
pub struct Home {
    /// Where the tables live.
    pub tables: Arc<dyn TableStore>,
    /// The data directory the indexes go to.
    pub data: PathBuf,
}

impl Home {
    /// Tables in `tables`, their indexes under `data`.
    pub fn new(tables: Arc<dyn TableStore>, data: PathBuf) -> Home {
        Home { tables, data }
    }

    /// Borrowed.
    pub fn place(&self) -> Place<'_> {
        Place::from(self)
    }
}

impl From<Arc<Store>> for Home {
    fn from(store: Arc<Store>) -> Home {
        let data = store.path().to_owned();
        Home { tables: store, data }
    }
}

impl From<&Arc<Store>> for Home {
    fn from(store: &Arc<Store>) -> Home {
        Home::from(Arc::clone(store))
    }
}
