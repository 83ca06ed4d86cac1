//! rocprofv3's `--selected-regions`: per-dispatch collection (thread trace, counters) only
//! between `roctxProfilerResume(0)` and `roctxProfilerPause(0)`, starting paused. The tool's
//! wrappers of ROCTx's control table call [`resume`] and [`pause`]; instruments ask
//! [`allows`] when a dispatch is submitted. Without `--selected-regions` everything is allowed.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Turns region selection on (collection starts paused).
pub fn enable() {
    ENABLED.store(true, Ordering::Release);
}

/// `roctxProfilerResume(0)`.
pub fn resume() {
    ACTIVE.store(true, Ordering::Release);
}

/// `roctxProfilerPause(0)`.
pub fn pause() {
    ACTIVE.store(false, Ordering::Release);
}

/// Whether a dispatch submitted now may be instrumented.
pub fn allows() -> bool {
    !ENABLED.load(Ordering::Acquire) || ACTIVE.load(Ordering::Acquire)
}

/// Whether region selection is on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_starts_paused_and_follows_resume_and_pause() {
        assert!(allows(), "everything is allowed without region selection");
        enable();
        assert!(!allows());
        resume();
        assert!(allows());
        pause();
        assert!(!allows());
    }
}
