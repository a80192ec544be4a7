//! Backups of a whole store (its file and its tables' serving index
//! generations) taken while it serves and takes writes, and their restore.
//!
//! A backup directory holds `data.mdb` (LMDB's compacting copy, taken from
//! one snapshot: [`Store::copy_compacted`]), `index/<table>/CURRENT` and the
//! files of the generation it names, and `manifest.json`, written last. The
//! generations are copied before the store, so each holds at most the
//! writes the copied store holds; the rest it catches up from the copied
//! change feed on the first refresh or incremental reindex after the
//! restore, as after any restart. A generation that could not be copied
//! whole (replaced three times while being copied) is left out and marked
//! to be rebuilt: the restore runs a full reindex of that table.
//!
//! A backup is complete only with its manifest: a backup killed before it
//! finished has none (and its marker file `backup.partial`), is refused by
//! [`restore`], and is cleared by the next backup into the same place. The
//! access keys and their secret live in `data.mdb`, so they come along.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tantivy::Index;

use crate::generation::{IndexDir, indexed_next_seq, indexed_table_id};
use crate::store::{CopyFacts, Store};
use crate::{Error, Result};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// Present while a backup is being written (removed after the manifest).
const PARTIAL: &str = "backup.partial";
/// The manifest layout's version.
const MANIFEST_VERSION: u32 = 1;
/// Attempts at copying a generation that keeps being replaced.
const GENERATION_ATTEMPTS: usize = 3;

/// What a backup holds, written last (`manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The manifest layout (1).
    pub rowsearch_backup: u32,
    /// The store format of `data.mdb` (`rowsearch-store/N`).
    pub format: String,
    /// The last change-feed sequence the backup holds: every write
    /// acknowledged with a sequence up to it, none after.
    pub sequence: u64,
    /// When the backup finished, ms since the epoch.
    pub created_ms: u64,
    /// The tables, by name.
    pub tables: Vec<BackupTable>,
    /// Every file, with its length and BLAKE3 checksum.
    pub files: Vec<BackupFile>,
}

/// A table of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupTable {
    /// The table.
    pub name: String,
    /// The index generation copied (`None`: none served, or it could not be
    /// copied whole: the restore rebuilds it).
    pub generation: Option<u64>,
    /// The first feed sequence that generation had not absorbed.
    pub index_next_seq: Option<u64>,
}

/// A file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupFile {
    /// Relative to the backup directory, `/`-separated.
    pub path: String,
    /// Length in bytes.
    pub bytes: u64,
    /// BLAKE3 of the contents, hex.
    pub blake3: String,
}

/// How a backup writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct BackupOptions {
    /// Most bytes written per second (`None`: as fast as it goes). Beside a
    /// server, a pace keeps the writeback from taking the cores searches
    /// need (search-api/BENCHMARKS.md, "Backups").
    pub max_bytes_per_sec: Option<u64>,
}

/// Bytes written between two `fdatasync`s: the kernel writes a backup back
/// in steps this size instead of in bursts of hundreds of MB (a burst made
/// searches beside it 8x slower at the p99; steps of 16 MiB 3x).
const SYNC_EVERY: u64 = 16 << 20;

/// The bytes a backup or restore has written, its syncs and its pace.
struct Pace {
    started: Instant,
    bytes: u64,
    unsynced: u64,
    max_bytes_per_sec: Option<u64>,
}

impl Pace {
    fn new(options: &BackupOptions) -> Pace {
        Pace { started: Instant::now(), bytes: 0, unsynced: 0, max_bytes_per_sec: options.max_bytes_per_sec }
    }

    /// `n` more bytes written to `file`: synced every [`SYNC_EVERY`], and a
    /// wait while ahead of the pace.
    fn wrote(&mut self, file: &File, n: usize) -> std::io::Result<()> {
        self.bytes += n as u64;
        self.unsynced += n as u64;
        if self.unsynced >= SYNC_EVERY {
            file.sync_data()?;
            self.unsynced = 0;
        }
        if let Some(rate) = self.max_bytes_per_sec.filter(|r| *r > 0) {
            let due = std::time::Duration::from_secs_f64(self.bytes as f64 / rate as f64);
            if let Some(ahead) = due.checked_sub(self.started.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
        Ok(())
    }
}

/// Progress of a backup or a restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupProgress {
    /// What is being copied: `index` or `store` (a backup), `files` or
    /// `reindex` (a restore).
    pub phase: &'static str,
    /// Bytes copied so far in all.
    pub bytes: u64,
}

/// What a backup did.
#[derive(Debug, Clone, Serialize)]
pub struct BackupReport {
    /// The backup directory.
    pub dest: PathBuf,
    /// The manifest's sequence.
    pub sequence: u64,
    /// Tables in the backup.
    pub tables: usize,
    /// Tables whose index must be rebuilt on restore.
    pub tables_to_reindex: Vec<String>,
    /// Bytes written.
    pub bytes: u64,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreReport {
    /// The restored store's directory.
    pub data: PathBuf,
    /// The backup's sequence.
    pub sequence: u64,
    /// The backup's store format (the store is upgraded on open when older).
    pub format: String,
    /// Tables restored.
    pub tables: usize,
    /// Tables reindexed in full because their index was not in the backup.
    pub reindexed: Vec<String>,
    /// Bytes copied and checked.
    pub bytes: u64,
    /// Wall time, seconds.
    pub seconds: f64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + use<> {
    let path = path.to_owned();
    move |source| Error::Io { path, source }
}

fn refused(path: &Path, detail: impl Into<String>) -> Error {
    Error::Backup { path: path.to_owned(), detail: detail.into() }
}

/// Takes a backup of `store` into `dest` (created; it must be missing,
/// empty, or a backup that did not finish, which is cleared) while the store
/// serves and takes writes. `progress` is called as bytes are copied.
///
/// # Errors
/// `Backup` when `dest` holds anything else (a finished backup too) or lies
/// inside the store; `Io`, `Store`, `Tantivy`.
pub fn backup(
    store: &Store,
    dest: &Path,
    options: &BackupOptions,
    progress: &mut dyn FnMut(&BackupProgress),
) -> Result<BackupReport> {
    let started = Instant::now();
    prepare_dest(store.path(), dest)?;
    write_synced(
        &dest.join(PARTIAL),
        b"a backup is being written here; without manifest.json it is not complete\n",
    )?;
    let mut files = Vec::new();
    let mut copied = Vec::new();
    let mut pace = Pace::new(options);
    for table in store.tables()? {
        let dir = IndexDir::new(store.path(), &table);
        if let Some(generation) = copy_generation(&dir, dest, &mut files, &mut pace, progress)? {
            copied.push((table, generation));
        }
    }
    let data = dest.join("data.mdb");
    let mut out = File::create(&data).map_err(io(&data))?;
    let mut hasher = blake3::Hasher::new();
    let store_bytes = store.copy_compacted(&mut |chunk| {
        out.write_all(chunk)?;
        hasher.update(chunk);
        pace.wrote(&out, chunk.len())?;
        progress(&BackupProgress { phase: "store", bytes: pace.bytes });
        Ok(())
    })?;
    out.sync_all().map_err(io(&data))?;
    drop(out);
    files.push(BackupFile {
        path: "data.mdb".into(),
        bytes: store_bytes,
        blake3: hasher.finalize().to_hex().to_string(),
    });

    let facts = CopyFacts::read(dest)?;
    let mut tables = Vec::new();
    for (name, id) in &facts.tables {
        let generation = copied
            .iter()
            .find(|(table, g)| table == name && g.table_id == *id && g.next_seq <= facts.next_seq);
        tables.push(BackupTable {
            name: name.clone(),
            generation: generation.map(|(_, g)| g.generation),
            index_next_seq: generation.map(|(_, g)| g.next_seq),
        });
    }
    // Generations of tables the copy does not hold as they were (dropped,
    // or dropped and made again, while the backup ran) are left out.
    let kept = |path: &str| {
        let table = path.strip_prefix("index/").and_then(|rest| rest.split('/').next());
        table.is_none_or(|table| tables.iter().any(|t| t.name == table && t.generation.is_some()))
    };
    for file in files.iter().filter(|f| !kept(&f.path)) {
        let path = dest.join(&file.path);
        std::fs::remove_file(&path).map_err(io(&path))?;
    }
    files.retain(|f| kept(&f.path));
    let manifest = Manifest {
        rowsearch_backup: MANIFEST_VERSION,
        format: facts.format,
        sequence: facts.next_seq.saturating_sub(1),
        created_ms: store.now_ms(),
        tables,
        files,
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| refused(dest, e.to_string()))?;
    let tmp = dest.join("manifest.json.tmp");
    write_synced(&tmp, &text)?;
    let path = dest.join(MANIFEST);
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    sync_dir(dest)?;
    let partial = dest.join(PARTIAL);
    std::fs::remove_file(&partial).map_err(io(&partial))?;
    sync_dir(dest)?;
    Ok(BackupReport {
        dest: dest.to_owned(),
        sequence: manifest.sequence,
        tables: manifest.tables.len(),
        tables_to_reindex: manifest
            .tables
            .iter()
            .filter(|t| t.generation.is_none())
            .map(|t| t.name.clone())
            .collect(),
        bytes: pace.bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Makes `dest` ready: created when missing, cleared when it holds a backup
/// that did not finish, refused when it holds anything else.
fn prepare_dest(store_dir: &Path, dest: &Path) -> Result<()> {
    let mut created = false;
    match std::fs::metadata(dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(io(dest))?;
            created = true;
        }
        Err(e) => return Err(io(dest)(e)),
        Ok(meta) if !meta.is_dir() => return Err(refused(dest, "is a file, not a directory")),
        Ok(_) => {
            if dest.join(MANIFEST).try_exists().map_err(io(dest))? {
                return Err(refused(dest, "already holds a finished backup; give a new directory"));
            }
            if dest.join(PARTIAL).try_exists().map_err(io(dest))? {
                for entry in std::fs::read_dir(dest).map_err(io(dest))? {
                    let path = entry.map_err(io(dest))?.path();
                    let removed = if path.is_dir() {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                    removed.map_err(io(&path))?;
                }
            } else if std::fs::read_dir(dest).map_err(io(dest))?.next().is_some() {
                return Err(refused(dest, "holds other files; give a new or empty directory"));
            }
        }
    }
    let store = store_dir.canonicalize().map_err(io(store_dir))?;
    let target = dest.canonicalize().map_err(io(dest))?;
    if target.starts_with(&store) {
        if created {
            let _ = std::fs::remove_dir(dest);
        }
        return Err(refused(dest, format!("lies inside the store's directory {}", store.display())));
    }
    Ok(())
}

/// A generation copied into a backup.
struct CopiedGeneration {
    generation: u64,
    next_seq: u64,
    table_id: u64,
}

/// Copies the serving generation of `dir` (its files as its `meta.json`
/// lists them, and `CURRENT`) under `dest`; `None` when there is none, or
/// when it was replaced under the copy every time (the backup then marks the
/// table to be rebuilt).
fn copy_generation(
    dir: &IndexDir,
    dest: &Path,
    files: &mut Vec<BackupFile>,
    pace: &mut Pace,
    progress: &mut dyn FnMut(&BackupProgress),
) -> Result<Option<CopiedGeneration>> {
    let table = dir.table();
    for _ in 0..GENERATION_ATTEMPTS {
        let Some(generation) = dir.current()? else { return Ok(None) };
        let source = dir.generation_path(generation);
        let relative = format!("index/{table}/gen-{generation}");
        let target = dest.join(&relative);
        let attempt = (|| -> Result<Option<(CopiedGeneration, Vec<BackupFile>)>> {
            let meta_path = source.join("meta.json");
            let Some(meta) = read_if_there(&meta_path)? else { return Ok(None) };
            let index = match Index::open_in_dir(&source) {
                Ok(index) => index,
                Err(_) if !meta_path.try_exists().map_err(io(&meta_path))? => return Ok(None),
                Err(e) => return Err(crate::error::tantivy_err(table, "open for backup")(e)),
            };
            let copied = CopiedGeneration {
                generation,
                next_seq: indexed_next_seq(table, &index)?,
                table_id: indexed_table_id(table, &index)?,
            };
            let metas = index.load_metas().map_err(crate::error::tantivy_err(table, "list segments"))?;
            std::fs::create_dir_all(&target).map_err(io(&target))?;
            let mut copied_files = Vec::new();
            let mut names: Vec<PathBuf> = metas.list_segment_files().into_iter().collect();
            names.sort();
            for name in names {
                let from = source.join(&name);
                let to = target.join(&name);
                // tantivy lists candidates, some never written (a missing
                // one is skipped; the meta.json check below tells one
                // removed by a merge).
                if let Some(file) = copy_file(&from, &to, "index", pace, progress)? {
                    copied_files.push(BackupFile { path: format!("{relative}/{}", name.display()), ..file });
                }
            }
            // The same meta.json as before the files: no merge or commit
            // came between, so the files it lists were all there.
            if read_if_there(&meta_path)?.as_deref() != Some(&meta[..]) {
                return Ok(None);
            }
            let to = target.join("meta.json");
            write_synced(&to, &meta)?;
            copied_files.push(BackupFile { path: format!("{relative}/meta.json"), ..checksum(&meta) });
            Ok(Some((copied, copied_files)))
        })();
        match attempt? {
            Some((copied, copied_files)) => {
                let pointer = format!("gen-{generation}\n");
                let path = dest.join(format!("index/{table}/CURRENT"));
                write_synced(&path, pointer.as_bytes())?;
                files.extend(copied_files);
                files.push(BackupFile {
                    path: format!("index/{table}/CURRENT"),
                    ..checksum(pointer.as_bytes())
                });
                return Ok(Some(copied));
            }
            None => {
                if target.try_exists().map_err(io(&target))? {
                    std::fs::remove_dir_all(&target).map_err(io(&target))?;
                }
            }
        }
    }
    Ok(None)
}

fn read_if_there(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

fn checksum(bytes: &[u8]) -> BackupFile {
    BackupFile {
        path: String::new(),
        bytes: bytes.len() as u64,
        blake3: blake3::hash(bytes).to_hex().to_string(),
    }
}

/// Copies `from` to `to` (synced), hashing as it goes; `None` when `from`
/// is gone.
fn copy_file(
    from: &Path,
    to: &Path,
    phase: &'static str,
    pace: &mut Pace,
    progress: &mut dyn FnMut(&BackupProgress),
) -> Result<Option<BackupFile>> {
    let mut input = match File::open(from) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(from)(e)),
    };
    let mut output = File::create(to).map_err(io(to))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(io(from))?;
        if n == 0 {
            break;
        }
        output.write_all(&buf[..n]).map_err(io(to))?;
        hasher.update(&buf[..n]);
        len += n as u64;
        pace.wrote(&output, n).map_err(io(to))?;
        progress(&BackupProgress { phase, bytes: pace.bytes });
    }
    output.sync_all().map_err(io(to))?;
    Ok(Some(BackupFile { path: String::new(), bytes: len, blake3: hasher.finalize().to_hex().to_string() }))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut file = File::create(path).map_err(io(path))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Reads and checks a backup's manifest: present, parseable, a layout and
/// a store format this build reads.
///
/// # Errors
/// `Backup` saying what is wrong (partial, not a backup, newer format).
pub fn read_manifest(src: &Path) -> Result<Manifest> {
    let path = src.join(MANIFEST);
    let Some(text) = read_if_there(&path)? else {
        if src.join(PARTIAL).try_exists().map_err(io(src))? {
            return Err(refused(
                src,
                "is a backup that did not finish (no manifest.json): take a new backup",
            ));
        }
        return Err(refused(src, "is not a rowsearch backup (no manifest.json)"));
    };
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| refused(&path, format!("does not parse as a backup manifest: {e}")))?;
    if manifest.rowsearch_backup != MANIFEST_VERSION {
        return Err(refused(
            &path,
            format!(
                "manifest layout {} (this build reads {MANIFEST_VERSION}): written by another build",
                manifest.rowsearch_backup
            ),
        ));
    }
    let readable = manifest.format == crate::store::FORMAT
        || crate::store::UPGRADES_FROM.contains(&manifest.format.as_str());
    if !readable {
        let newer = format_number(&manifest.format) > format_number(crate::store::FORMAT);
        let why = if newer { "a newer build wrote it" } else { "no upgrade from it" };
        return Err(refused(
            &path,
            format!(
                "holds store format {:?} and this build reads {:?}: {why}",
                manifest.format,
                crate::store::FORMAT
            ),
        ));
    }
    for file in &manifest.files {
        let safe = !file.path.is_empty()
            && !file.path.starts_with('/')
            && file.path.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
        if !safe {
            return Err(refused(&path, format!("names the file {:?}, outside the backup", file.path)));
        }
    }
    if !manifest.files.iter().any(|f| f.path == "data.mdb") {
        return Err(refused(&path, "lists no data.mdb: it is not a backup of a store"));
    }
    Ok(manifest)
}

fn format_number(format: &str) -> u64 {
    format.rsplit('/').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Restores the backup in `src` into the store directory `data` (missing or
/// empty): checks the manifest and every file's length and checksum while
/// copying into a directory beside `data`, which becomes `data` only when
/// all are right; then opens the store (an older format is upgraded) and
/// reindexes the tables whose index the backup did not hold.
///
/// # Errors
/// `Backup` for a partial, corrupt, newer-format backup or a `data` that
/// holds something; `Io`, `Store`.
pub fn restore(src: &Path, data: &Path, progress: &mut dyn FnMut(&BackupProgress)) -> Result<RestoreReport> {
    let started = Instant::now();
    let manifest = read_manifest(src)?;
    if data.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
        return Err(refused(data, "is a file, not a directory: restore into a new directory"));
    }
    match std::fs::read_dir(data) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(refused(data, "is not empty: restore into a new directory"));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(data)(e)),
    }
    let name = data.file_name().ok_or_else(|| refused(data, "has no directory name"))?;
    let staging = data.with_file_name(format!(".{}.restoring", name.to_string_lossy()));
    if staging.try_exists().map_err(io(&staging))? {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    let mut pace = Pace::new(&BackupOptions::default());
    let copied = (|| -> Result<()> {
        for file in &manifest.files {
            let from = src.join(&file.path);
            let to = staging.join(&file.path);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            let got = copy_file(&from, &to, "files", &mut pace, progress)?
                .ok_or_else(|| refused(src, format!("is missing {} (the manifest lists it)", file.path)))?;
            if got.bytes != file.bytes || got.blake3 != file.blake3 {
                return Err(refused(
                    src,
                    format!(
                        "is corrupt: {} has {} bytes and checksum {}, the manifest says {} bytes and {}",
                        file.path, got.bytes, got.blake3, file.bytes, file.blake3
                    ),
                ));
            }
        }
        Ok(())
    })();
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    sync_dir(&staging)?;
    if data.try_exists().map_err(io(data))? {
        std::fs::remove_dir(data).map_err(io(data))?;
    }
    std::fs::rename(&staging, data).map_err(io(data))?;
    if let Some(parent) = data.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    let store = crate::open_store(data)?;
    let mut reindexed = Vec::new();
    for table in manifest.tables.iter().filter(|t| t.generation.is_none()) {
        let schema = store.schema(&table.name)?;
        if schema.search.is_none() {
            continue;
        }
        progress(&BackupProgress { phase: "reindex", bytes: pace.bytes });
        let options = crate::ReindexOptions { mode: crate::ReindexMode::Full, ..Default::default() };
        crate::reindex(&store, &table.name, &options, &mut |_| {})?;
        reindexed.push(table.name.clone());
    }
    Ok(RestoreReport {
        data: data.to_owned(),
        sequence: manifest.sequence,
        format: manifest.format,
        tables: manifest.tables.len(),
        reindexed,
        bytes: pace.bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// A backup in a directory of backups (`serve --backup-dir`).
#[derive(Debug, Clone, Serialize)]
pub struct BackupEntry {
    /// Its directory's name: `backup-<UTC time>`.
    pub name: String,
    /// Whether it has its manifest (one without is being written, or was
    /// killed before it finished).
    pub complete: bool,
    /// The manifest's sequence.
    pub sequence: Option<u64>,
    /// The manifest's time, ms since the epoch.
    pub created_ms: Option<u64>,
    /// Bytes of its files, as the manifest lists them.
    pub bytes: Option<u64>,
}

const NAME_PREFIX: &str = "backup-";

/// The backups in `dir`, oldest first (missing `dir`: none).
///
/// # Errors
/// `Io`.
pub fn list_backups(dir: &Path) -> Result<Vec<BackupEntry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut backups = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(NAME_PREFIX) || !entry.file_type().map_err(io(dir))?.is_dir() {
            continue;
        }
        let manifest = read_manifest(&entry.path()).ok();
        backups.push(BackupEntry {
            name,
            complete: manifest.is_some(),
            sequence: manifest.as_ref().map(|m| m.sequence),
            created_ms: manifest.as_ref().map(|m| m.created_ms),
            bytes: manifest.as_ref().map(|m| m.files.iter().map(|f| f.bytes).sum()),
        });
    }
    backups.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(backups)
}

/// Takes a backup of `store` into a new `dir/backup-<UTC time>`, then
/// keeps the newest `keep` complete backups of `dir` and removes the older
/// ones and every unfinished one (a backup runs at a time, so those are
/// leftovers of killed runs).
///
/// # Errors
/// As [`backup`]; `Io` when an old backup cannot be removed.
pub fn backup_into(
    store: &Store,
    dir: &Path,
    keep: usize,
    options: &BackupOptions,
    progress: &mut dyn FnMut(&BackupProgress),
) -> Result<BackupReport> {
    let now = jiff::Timestamp::from_millisecond(i64::try_from(store.now_ms()).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let mut name = format!("{NAME_PREFIX}{}", now.strftime("%Y%m%dT%H%M%S%.3fZ"));
    // Two backups in one millisecond (a clock set back): a suffix.
    let mut n = 1;
    while dir.join(&name).try_exists().map_err(io(dir))? {
        n += 1;
        name = format!("{NAME_PREFIX}{}-{n}", now.strftime("%Y%m%dT%H%M%S%.3fZ"));
    }
    let report = backup(store, &dir.join(&name), options, progress)?;
    let backups = list_backups(dir)?;
    let complete = backups.iter().filter(|b| b.complete).count();
    let mut extra = complete.saturating_sub(keep.max(1));
    for old in backups {
        let remove = if old.complete && extra > 0 && old.name != name {
            extra -= 1;
            true
        } else {
            !old.complete
        };
        if remove {
            let path = dir.join(&old.name);
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        }
    }
    Ok(report)
}
