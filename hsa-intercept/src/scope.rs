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
use trace_records::ranges::Periods;

static WINDOWS: OnceLock<Windows> = OnceLock::new();

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

/// Collects only within `periods`, counted from `start_ns` (the host timeline). Only the first
/// call has an effect.
pub fn install(start_ns: u64, periods: Periods) {
    let _ = WINDOWS.set(Windows { start_ns, periods });
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
