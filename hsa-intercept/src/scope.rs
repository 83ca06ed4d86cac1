//! rocprofv3's `-P/--collection-period`: records are collected only inside the windows
//! counted from the tool's start; outside them nothing is recorded (API calls by their start,
//! dispatches and copies when they are submitted, markers when they open).
//!
//! Decision: a precomputed window list checked against the record's timestamp (pure
//! arithmetic over the periods, see [`trace_records::ranges::Periods::collecting`]) rather
//! than upstream's timer thread that starts and stops the context: the check allocates
//! nothing and takes no lock, needs no thread, and a record's fate depends only on its own
//! time, never on when a timer thread happened to be scheduled. Without periods the check is
//! one atomic load (whether windows were installed).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use trace_records::ranges::Periods;

static WINDOWS: OnceLock<Windows> = OnceLock::new();

/// Set once the API tracer is the trampolines' hooks ([`close_installation`]): periods are
/// refused from then on.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Refuses periods from now on (the API tracer's fast path is about to be allowed). Not meant
/// to race with [`install`]: both run while the tool starts, on one thread.
pub(crate) fn close_installation() {
    CLOSED.store(true, Ordering::Release);
}

/// The periods and the time they count from.
#[derive(Debug)]
struct Windows {
    start_ns: u64,
    periods: Periods,
}

impl Windows {
    fn collecting(&self, ts: u64) -> bool {
        ts.checked_sub(self.start_ns)
            .is_some_and(|elapsed| self.periods.collecting(elapsed))
    }

    fn before_first(&self, now: u64) -> Option<(u64, u64)> {
        let ran = now.saturating_sub(self.start_ns);
        let opens = self.periods.periods().first()?.delay_ns;
        (ran < opens).then_some((ran, opens))
    }
}

/// Why [`install`] did not install the periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallError {
    /// Periods were installed already (only the first call has an effect).
    AlreadyInstalled,
    /// The API tracer is already the trampolines' hooks ([`crate::wrap::use_api_tracer`]):
    /// its fast exit does not check the periods, so they must be in force before it is.
    TracerInUse,
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InstallError::AlreadyInstalled => "collection periods are installed already",
            InstallError::TracerInUse => {
                "collection periods must be installed before the API tracer is in use"
            }
        })
    }
}

impl std::error::Error for InstallError {}

/// Collects only within `periods`, counted from `start_ns` (the host timeline). Must come
/// before [`crate::wrap::use_api_tracer`]: while periods are in force the trampolines never take
/// their fast path (whose exit has no period check), and a thread that took it before could
/// go on for the rest of its block of correlation ids.
pub fn install(start_ns: u64, periods: Periods) -> Result<(), InstallError> {
    if CLOSED.load(Ordering::Acquire) {
        return Err(InstallError::TracerInUse);
    }
    WINDOWS
        .set(Windows { start_ns, periods })
        .map_err(|_| InstallError::AlreadyInstalled)
}

/// Whether a record at `ts` (host timeline, ns) is collected.
#[inline]
pub fn collecting(ts: u64) -> bool {
    WINDOWS.get().is_none_or(|w| w.collecting(ts))
}

/// Whether something happening now is collected (the clock is read only with periods).
#[inline]
pub fn collecting_now() -> bool {
    WINDOWS
        .get()
        .is_none_or(|w| w.collecting(crate::clock::now_ns()))
}

/// With collection periods, when `now` is still before the first window: how long the tool
/// has run and when (after its start) the first window opens, both in ns.
pub fn before_first_window(now: u64) -> Option<(u64, u64)> {
    WINDOWS.get()?.before_first(now)
}

/// Whether collection periods are in force.
#[inline]
pub fn enabled() -> bool {
    WINDOWS.get().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The process-wide switch stays off here: other tests of this crate record API calls.
    #[test]
    fn records_are_kept_only_inside_the_windows() {
        assert!(
            collecting(5) && !enabled(),
            "everything is collected without periods"
        );
        let w = Windows {
            start_ns: 1_000,
            periods: Periods::from_args(&["10:5:1"], 1).unwrap(),
        };
        assert!(!w.collecting(999), "before the tool started");
        assert!(!w.collecting(1_009));
        assert!(w.collecting(1_010) && w.collecting(1_014));
        assert!(!w.collecting(1_015));
        assert_eq!(w.before_first(1_004), Some((4, 10)));
        assert_eq!(w.before_first(1_010), None);
    }
}
