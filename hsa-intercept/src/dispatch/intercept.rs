//! The replaced `hsa_queue_create` / `hsa_queue_destroy`: the application gets an intercept
//! queue with profiling enabled and the packet handler registered, its state published in a
//! free slot of `queues`; a destroyed queue leaves its slot, is harvested and what is still
//! pending on it discarded.

use super::handler::handler;
use super::harvest::{discard, harvest, start_harvester};
use super::queues::{DOORBELLS, MAX_QUEUES, QUEUES, QueueState};
use crate::hsa::*;
use crate::sink;
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use trace_records::docs::WarningKind;

static FIRST_QUEUE_HOOK: OnceLock<fn()> = OnceLock::new();
static FIRST_QUEUE: std::sync::Once = std::sync::Once::new();

/// Runs `hook` once, when the application creates its first queue (the runtime's agents exist
/// by then): the tool pairs its agent records with the HSA agents there.
pub fn on_first_queue(hook: fn()) {
    let _ = FIRST_QUEUE_HOOK.set(hook);
}

pub(super) unsafe extern "C" fn queue_create(
    agent: u64,
    size: u32,
    kind: u32,
    callback: QueueCallback,
    data: *mut c_void,
    private_segment: u32,
    group_segment: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    let Some(f) = fns() else { return ERROR };
    if let Some(hook) = FIRST_QUEUE_HOOK.get() {
        FIRST_QUEUE.call_once(|| {
            let _ = std::panic::catch_unwind(hook);
        });
    }
    // SAFETY: the caller's arguments, forwarded to the runtime's own intercept-queue creation.
    let status = unsafe {
        (f.queue_intercept_create)(
            agent,
            size,
            kind,
            callback,
            data,
            private_segment,
            group_segment,
            queue,
        )
    };
    if status != SUCCESS || queue.is_null() {
        return status;
    }
    // SAFETY: on success the runtime wrote a valid queue pointer.
    let q = unsafe { *queue };
    let guarded = std::panic::catch_unwind(|| {
        // SAFETY: `q` is the runtime's live queue.
        let (queue_id, doorbell) = unsafe { ((*q).id, (*q).doorbell_signal) };
        let state: &'static QueueState = Box::leak(Box::new(QueueState::new(
            agent,
            agent_node(agent).0,
            queue_id,
        )));
        let Some(i) = DOORBELLS.iter().position(|d| {
            d.compare_exchange(0, doorbell, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            // Harvesting and doorbell correlation find queues through these slots only.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                sink::warn(
                    WarningKind::Internal,
                    format!(
                        "more than {MAX_QUEUES} queues at once; kernel dispatches on the others \
                         are not traced"
                    ),
                )
            });
            return;
        };
        QUEUES[i].store(state as *const QueueState as usize, Ordering::Release);
        start_harvester();
        // SAFETY: the runtime's own functions on its own queue.
        unsafe {
            (f.set_profiler_enabled)(q, 1);
            (f.queue_intercept_register)(
                q,
                handler,
                (state as *const QueueState).cast_mut().cast(),
            );
        }
    });
    if guarded.is_err() {
        sink::warn(
            WarningKind::Internal,
            "kernel tracing could not be set up on a queue; its dispatches are not traced",
        );
    }
    status
}

pub(super) unsafe extern "C" fn queue_destroy(queue: *mut HsaQueue) -> Status {
    let Some(f) = fns() else { return ERROR };
    let mut state = None;
    if !queue.is_null() {
        // SAFETY: the application's live queue.
        let doorbell = unsafe { (*queue).doorbell_signal };
        for (i, d) in DOORBELLS.iter().enumerate() {
            if d.compare_exchange(doorbell, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                state = Some(QUEUES[i].swap(0, Ordering::AcqRel));
            }
        }
    }
    // SAFETY: forwarded.
    let status = unsafe { (f.queue_destroy)(queue) };
    if let Some(p) = state.filter(|p| *p != 0) {
        // SAFETY: queue states are leaked (never freed) once published.
        let q = unsafe { &*(p as *const QueueState) };
        let _ = std::panic::catch_unwind(|| {
            harvest(q, true);
            discard(q, "their queue was destroyed");
        });
    }
    status
}
