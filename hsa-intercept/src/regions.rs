//! rocprofv3's `--selected-regions`: per-dispatch collection (thread trace, counters) only
//! between `roctxProfilerResume(0)` and `roctxProfilerPause(0)`, starting paused. The tool's
//! wrappers of ROCTx's control table call [`resume`] and [`pause`]; instruments ask
//! [`allows`] when a dispatch is submitted. Without `--selected-regions` everything is allowed.
//!
//! With `--selected-regions-ref-count` ([`count_references`]) resumes and pauses nest: each
//! resume adds one, each pause takes one away (never below zero), and collection runs while
//! the count is above zero, so it stops at the outermost pause. Without it a pause stops
//! collection whatever the number of resumes before it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
static COUNTED: AtomicBool = AtomicBool::new(false);
/// Resumes not yet paused (only 0 or 1 without reference counting).
static DEPTH: AtomicU64 = AtomicU64::new(0);

/// Turns region selection on (collection starts paused).
pub fn enable() {
    ENABLED.store(true, Ordering::Release);
}

/// Makes nested resume/pause pairs count (`--selected-regions-ref-count`).
pub fn count_references() {
    COUNTED.store(true, Ordering::Release);
}

/// `roctxProfilerResume(0)`.
pub fn resume() {
    match COUNTED.load(Ordering::Acquire) {
        true => DEPTH.fetch_add(1, Ordering::AcqRel),
        false => DEPTH.swap(1, Ordering::AcqRel),
    };
}

/// `roctxProfilerPause(0)`.
pub fn pause() {
    match COUNTED.load(Ordering::Acquire) {
        true => {
            let _ = DEPTH.fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1));
        }
        false => DEPTH.store(0, Ordering::Release),
    }
}

/// Whether a dispatch submitted now may be instrumented.
pub fn allows() -> bool {
    !ENABLED.load(Ordering::Acquire) || DEPTH.load(Ordering::Acquire) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the switches are process-wide.
    #[test]
    fn collection_starts_paused_and_follows_resume_and_pause() {
        assert!(allows(), "everything is allowed without region selection");
        enable();
        assert!(!allows());
        resume();
        resume();
        assert!(allows());
        pause();
        assert!(
            !allows(),
            "without reference counting one pause stops collection"
        );
        count_references();
        resume();
        resume();
        pause();
        assert!(allows(), "an inner pause keeps collecting");
        pause();
        assert!(!allows(), "the outermost pause stops it");
        pause();
        resume();
        assert!(allows(), "extra pauses never drive the count below zero");
    }
}
