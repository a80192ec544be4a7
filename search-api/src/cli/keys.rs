//! `rowsearch keys ...`: access keys, on the data directory.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use super::args::{Args, KeysCommand, UsageError};
use super::common::open;

/// Runs a keys command.
pub(super) fn run(args: &Args, command: &KeysCommand, out: &mut impl Write) -> Result<ExitCode> {
    let store = open(args)?;
    match command {
        KeysCommand::Create { actions, tables, partitions, expires_at, description } => {
            let new = rowsearch::keys::NewKey {
                actions: actions.clone(),
                tables: tables.clone(),
                partitions: partitions.clone(),
                expires_at: expires_at.clone(),
                description: description.clone(),
            };
            let (record, key) = rowsearch::keys::create(&store, &new)?;
            let mut json = rowsearch::keys::record_json(&record);
            json["key"] = serde_json::json!(key);
            writeln!(out, "{json}")?;
        }
        KeysCommand::List => {
            for record in store.keys()? {
                writeln!(out, "{}", rowsearch::keys::record_json(&record))?;
            }
        }
        KeysCommand::Delete { uid } => {
            if !store.delete_key(uid)? {
                return Err(UsageError(format!("no key {uid:?}")).into());
            }
            writeln!(out, "deleted key {uid}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
