//! The process's allocator (mimalloc) and the one setting the CLI changes.
//!
//! mimalloc keeps memory it has freed for a while (10 ms for a segment,
//! 100 ms for an arena's) and commits a whole arena as it reserves it (then
//! a purge only marks pages free, which the kernel counts as resident until
//! it needs them): both buy speed, and both put a batch job's peak resident
//! memory above the budget it was given. A reindex given `--memory-mb 128`
//! peaked at 219 MiB with the defaults, 160 MiB with eager commit off and
//! purging immediate, in the same time (search-api/BENCHMARKS.md, "Issue 40,
//! third part").
//!
//! The first arena is reserved by the first allocation, before `main`, so
//! setting the options from `main` comes too late for it: the options are
//! read from the environment at that first allocation, and a batch job with
//! a budget runs itself again with them set.
//!
//! mimalloc also asks the kernel for transparent huge pages on the memory
//! it reserves (`madvise(MADV_HUGEPAGE)`); each first touch of a 2 MiB
//! page then zeroes all of it, and again after every purge. rowsearch's
//! heap is short-lived batch buffers and per-request scraps (the large
//! data, LMDB's map and tantivy's files, are file pages, which huge pages
//! do not cover), so the process turns them off: an ingest of the full
//! corpus spent ~1.8 s of CPU zeroing huge pages (its system CPU 4.38 s
//! with them, 3.26 s without), a full reindex took 1.1x the time
//! (search-api/BENCHMARKS.md, "Issue 65, tenth part").

use std::ffi::OsString;

/// Turns transparent huge pages off for this process (`prctl`'s
/// `PR_SET_THP_DISABLE`, checked by the kernel at each fault, so it covers
/// the memory mimalloc reserved before `main` too). A no-op elsewhere than
/// Linux; a kernel that refuses leaves them on, which costs time, not
/// correctness.
pub fn without_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and
    // touches no memory of ours; a failure is only a return value.
    unsafe {
        libc::prctl(
            libc::PR_SET_THP_DISABLE,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// mimalloc's environment variables for a job that keeps a memory budget:
/// arenas committed as they are used, freed memory returned at once.
const LAZY: [(&str, &str); 2] = [("MIMALLOC_ARENA_EAGER_COMMIT", "0"), ("MIMALLOC_PURGE_DELAY", "0")];

/// Replaces this process with the same program and arguments under
/// [`LAZY`]'s options, unless it already runs under them (or the caller set
/// either variable itself: theirs are kept). Returns only when it did not
/// replace the process (already set, or exec failed: the job then runs with
/// the defaults, which costs memory, not correctness).
pub fn run_with_lazy_allocator(args: &[OsString]) {
    use std::os::unix::process::CommandExt;
    if LAZY.iter().any(|(name, _)| std::env::var_os(name).is_some()) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let err = std::process::Command::new(exe).args(args.iter().skip(1)).envs(LAZY).exec();
    eprintln!("note: could not restart with mimalloc's lazy options ({err}); running with its defaults");
}
