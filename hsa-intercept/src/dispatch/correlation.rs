//! Doorbell correlation: the application's thread rings an intercepted queue's doorbell
//! through one of the two wrapped signal stores, which is when the correlation id of the call
//! enqueuing the packets is known; it is remembered per packet index for the packet handler.

use super::queues::{CORRELATION_RING, DOORBELLS, QUEUES, QueueState};
use crate::hsa::*;
use crate::tracer::{current_correlation_id, current_region, new_correlation_id, thread_id};
use std::sync::atomic::Ordering;

/// Remembers who enqueued the packets up to `value` when `signal` is an intercepted doorbell.
#[inline]
pub(super) fn note_doorbell(signal: u64, value: i64) {
    let Some(i) = DOORBELLS
        .iter()
        .position(|d| d.load(Ordering::Relaxed) == signal)
    else {
        return;
    };
    let p = QUEUES[i].load(Ordering::Acquire);
    if p == 0 || value < 0 {
        return;
    }
    // SAFETY: queue states are leaked (never freed) once published.
    let q = unsafe { &*(p as *const QueueState) };
    let correlation = current_correlation_id().unwrap_or_else(new_correlation_id);
    // The thread in the low half, the innermost ROCTx range open on it (for
    // `--kernel-rename`; 0 = none) in the high half.
    let tid = u64::from(thread_id()) | (u64::from(current_region()) << 32);
    let last = q.rung.swap(value as u64 + 1, Ordering::AcqRel);
    let first = last.max((value as u64 + 1).saturating_sub(CORRELATION_RING as u64));
    for index in first..=value as u64 {
        let slot = &q.correlations[index as usize % CORRELATION_RING];
        slot.0.store(correlation, Ordering::Relaxed);
        slot.1.store(tid, Ordering::Release);
    }
}

/// `hsa_signal_store_relaxed` (`IS_SC = false`) or `hsa_signal_store_screlease` (`true`).
pub(super) unsafe extern "C" fn store<const IS_SC: bool>(signal: u64, value: i64) {
    note_doorbell(signal, value);
    if let Some(f) = fns() {
        let forward = if IS_SC {
            f.signal_store_screlease
        } else {
            f.signal_store_relaxed
        };
        // SAFETY: forwarded.
        unsafe { forward(signal, value) }
    }
}
