//! Background work that yields the CPU to searches: the threads of a
//! refresher and of an ingest run at a lower priority (a higher nice
//! value), so on a machine with few cores a search does not wait behind
//! them for its turn.

/// Lowers the calling thread's CPU priority to `nice` (on Linux the nice
/// value is per thread, and the threads it starts inherit it); a no-op
/// elsewhere, for 0, or when the system refuses. A thread cannot raise
/// its priority again without privileges: call it on threads made for
/// background work, or in a process that is that work.
pub fn lower_thread_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: both calls take plain integers and touch no memory of ours;
    // a failure is only a return value, ignored (the thread keeps its
    // priority).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice.min(19));
    }
}
