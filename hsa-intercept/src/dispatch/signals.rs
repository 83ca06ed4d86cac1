//! The pool of completion signals the tool gives kernel dispatches.

use crate::hsa::*;
use std::sync::Mutex;

/// Completion signals of finished dispatches, reused instead of created each time.
///
/// They are never destroyed while the process runs: a harvest may be asking the runtime about a
/// signal that another harvest has just claimed and recycled (it then finds its claim gone and
/// looks again), and a destroyed signal must never reach the runtime. The pool therefore holds
/// at most as many signals as were ever outstanding at once.
pub(super) static SIGNAL_POOL: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// Attempts at the pool's lock before giving up on it (it is held only for a push or a pop; a
/// forked child's pool may be locked forever by a thread that did not survive the fork).
const POOL_TRIES: u32 = 64;

/// Runs `f` on the pool, unless its lock stays busy for [`POOL_TRIES`] attempts.
fn with_pool<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> Option<R> {
    for _ in 0..POOL_TRIES {
        if let Ok(mut pool) = SIGNAL_POOL.try_lock() {
            return Some(f(&mut pool));
        }
        std::hint::spin_loop();
    }
    None
}

/// A completion signal with value 1: from the pool, else a new one.
pub(super) fn take_signal(f: &Fns) -> Option<u64> {
    if let Some(s) = with_pool(|p| p.pop()).flatten() {
        // SAFETY: a signal of ours that nothing else references any more.
        unsafe { (f.signal_store_relaxed)(s, 1) };
        return Some(s);
    }
    let mut signal = 0u64;
    // SAFETY: the runtime's signal_create with a valid out-pointer.
    (unsafe { (f.signal_create)(1, 0, std::ptr::null(), &mut signal) } == SUCCESS).then_some(signal)
}

/// Returns a finished dispatch's signal to the pool (if the pool stays busy, the signal is left
/// unused rather than destroyed; see [`SIGNAL_POOL`]).
pub(super) fn give_back_signal(signal: u64) {
    let _ = with_pool(|p| p.push(signal));
}
