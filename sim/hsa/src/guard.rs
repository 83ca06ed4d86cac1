//! Panic containment for every C entry point, and small shared helpers.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use crate::types::{ERROR, Status};

/// Runs an export body; a panic (a simulator bug) becomes `HSA_STATUS_ERROR`.
pub fn guard_status(body: impl FnOnce() -> Status) -> Status {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(ERROR)
}

/// Runs an export body; a panic (a simulator bug) becomes `fallback`.
pub fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// Runs an export body that returns a `Result` of statuses.
pub fn guard(body: impl FnOnce() -> Result<(), Status>) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => crate::types::SUCCESS,
        Ok(Err(status)) => status,
        Err(_) => ERROR,
    }
}

/// Prints `message` on stderr the first time this runtime is given it.
pub fn say_once(message: String) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&message) {
        eprintln!("{message}");
        said.insert(message);
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (the HSA system timestamp domain).
pub use wslsim_scenario::monotonic_ns;

/// Writes `value` to the caller's `out` pointer (`HSA_STATUS_ERROR_INVALID_ARGUMENT` if null).
///
/// # Safety
///
/// `out` must be null or valid for writing a `T` (no alignment assumed).
pub unsafe fn write_out<T>(out: *mut T, value: T) -> Result<(), Status> {
    if out.is_null() {
        return Err(crate::types::ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: non-null; the caller guarantees it is writable.
    unsafe { out.write_unaligned(value) };
    Ok(())
}
