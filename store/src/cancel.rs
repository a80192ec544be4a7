//! A request's cancellation: its time limit, and whether whoever asked
//! for it has gone.
//!
//! Long work (a scan walking rows its filter rejects, a search expanding
//! words or walking segments) looks at a [`Cancel`] between steps and
//! gives up with [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled)
//! once it has fired, so the CPU a request uses ends with the request, as
//! Elasticsearch's task cancellation and Lucene's `ExitableDirectoryReader`
//! do. A check costs an atomic load, and a clock read when there is a
//! deadline; callers check every few hundred rows, not every byte.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use crate::error::CancelReason;

/// A cancellation signal shared by a request and its work. Clones share
/// it. The default never fires.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    inner: Option<Arc<Shared>>,
}

#[derive(Debug)]
struct Shared {
    /// 0 while running, else a [`CancelReason`] + 1.
    fired: AtomicU8,
    deadline: Option<Instant>,
}

impl Cancel {
    /// A signal that never fires (work that must finish, such as the CLI's).
    pub fn never() -> Cancel {
        Cancel::default()
    }

    /// A signal fired by [`Cancel::cancel`], and by itself at `deadline`.
    pub fn new(deadline: Option<Instant>) -> Cancel {
        Cancel { inner: Some(Arc::new(Shared { fired: AtomicU8::new(0), deadline })) }
    }

    /// Fires the signal (the first reason given stays). No effect on
    /// [`Cancel::never`].
    pub fn cancel(&self, reason: CancelReason) {
        if let Some(shared) = &self.inner {
            let code = match reason {
                CancelReason::TimeLimit => 1,
                CancelReason::Abandoned => 2,
            };
            let _ = shared.fired.compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// Why the work should stop, if it should.
    pub fn reason(&self) -> Option<CancelReason> {
        let shared = self.inner.as_ref()?;
        match shared.fired.load(Ordering::Acquire) {
            1 => return Some(CancelReason::TimeLimit),
            2 => return Some(CancelReason::Abandoned),
            _ => {}
        }
        if shared.deadline.is_some_and(|d| Instant::now() >= d) {
            self.cancel(CancelReason::TimeLimit);
            return Some(CancelReason::TimeLimit);
        }
        None
    }

    /// Whether the work should stop.
    pub fn is_cancelled(&self) -> bool {
        self.reason().is_some()
    }

    /// `Err(Cancelled)` once the signal has fired.
    ///
    /// # Errors
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled).
    pub fn check(&self) -> crate::Result<()> {
        match self.reason() {
            Some(reason) => Err(crate::ErrorKind::Cancelled { reason }.into()),
            None => Ok(()),
        }
    }

    /// Whether this signal can ever fire.
    pub fn can_fire(&self) -> bool {
        self.inner.is_some()
    }
}

/// Two signals are equal when they are the same signal (or both never fire).
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        match (&self.inner, &other.inner) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Cancel {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_signal_fires_once_by_hand_or_at_its_deadline_and_clones_share_it() {
        assert!(!Cancel::never().is_cancelled());
        Cancel::never().cancel(CancelReason::Abandoned);
        let cancel = Cancel::new(None);
        let clone = cancel.clone();
        assert_eq!(clone.reason(), None);
        cancel.cancel(CancelReason::Abandoned);
        cancel.cancel(CancelReason::TimeLimit);
        assert_eq!(clone.reason(), Some(CancelReason::Abandoned));
        assert!(clone.check().unwrap_err().to_string().contains("the client has gone"));
        let past = Cancel::new(Some(Instant::now()));
        assert_eq!(past.reason(), Some(CancelReason::TimeLimit));
        let later = Cancel::new(Instant::now().checked_add(Duration::from_secs(3600)));
        assert!(later.check().is_ok());
        assert_ne!(cancel, Cancel::new(None));
        assert_eq!(cancel, clone);
    }
}
