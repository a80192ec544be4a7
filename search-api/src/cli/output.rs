//! JSON shapes printed by the CLI: the row shape of API.md.

pub use rowsearch::json::row_json;
