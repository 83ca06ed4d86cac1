//! Kernel dispatch tracing through intercept queues, and kernel symbols from executables.
//!
//! `hsa_queue_create` is replaced: the application gets an intercept queue with profiling
//! enabled and a packet handler. The application's thread rings the doorbell (a signal store
//! the tool also watches), which is when the correlation id of the call enqueuing the packets
//! (e.g. `hipLaunchKernel`) is known; the runtime's interceptor thread then hands the packets
//! to the handler, which gives each kernel dispatch a completion signal of the tool's and, as
//! upstream does, forwards a barrier-AND packet after it that completes the application's own
//! signal on the GPU. So the application sees completion exactly when it would untraced.
//!
//! Unlike upstream, no asynchronous handler is registered per dispatch (each one costs the
//! runtime's handler thread a wake-up): finished dispatches are *harvested* — dispatch time
//! read, record emitted, signal recycled — in queue order, whenever the handler runs, after the
//! application's signal waits return, by a low-rate harvester thread while dispatches are
//! outstanding, and at exit. A record is therefore never later than about a millisecond, and
//! the records of everything an application waited for are written before it can crash.
//!
//! One module per concern:
//! - `queues`: the intercepted queues' states, the 64 lock-free slots that find them and the
//!   per-queue completion ring;
//! - `intercept`: the replaced `hsa_queue_create` / `hsa_queue_destroy` that fill and empty
//!   those slots;
//! - `correlation`: the doorbell-store wrappers that remember who enqueued each packet;
//! - `handler`: the intercept-queue packet handler and its packet rewriting;
//! - [`instrument`]: the seam for per-dispatch instruments (packets before and after a
//!   dispatch, a call when they have run);
//! - `signals`: the pool of the tool's completion signals;
//! - `harvest`: harvesting finished dispatches (and the lock order it follows), the
//!   harvester thread, the signal-wait wrappers and the shutdown drain;
//! - `symbols`: kernel symbols at `hsa_executable_freeze` and kernel-descriptor decoding.
//!
//! This module holds the installation into the runtime's core table, `hsa_shut_down`, and the
//! fork reset.

mod correlation;
pub mod filter;
mod handler;
mod harvest;
pub mod instrument;
mod intercept;
mod queues;
mod signals;
mod symbols;

pub(crate) use harvest::harvest_finished;
pub use harvest::{finish_outstanding, harvest_all};
pub use intercept::on_first_queue;
pub use symbols::registers_from;

use crate::hsa::*;
use correlation::store;
use harvest::{HARVESTER, start_harvester, wait};
use intercept::{queue_create, queue_destroy};
use queues::{DOORBELLS, PENDING, QUEUES};
use signals::SIGNAL_POOL;
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use symbols::executable_freeze;

/// Installs kernel-dispatch tracing into the runtime's core table (`hsa_queue_create`,
/// `hsa_queue_destroy`, the two doorbell stores, `hsa_executable_freeze`, the two signal waits
/// and `hsa_shut_down`, which harvest). `fns` are the
/// runtime's own entries, read before anything was wrapped.
///
/// # Safety
/// `core` must be the runtime's `CoreApiTable`, handed over before first use.
pub unsafe fn install(core: *mut u8, fns: Fns) {
    set_fns(fns);
    for (name, wrapper) in [
        ("hsa_queue_create", queue_create as *const c_void),
        ("hsa_queue_destroy", queue_destroy as *const c_void),
        (
            "hsa_signal_store_relaxed",
            store::<RELAXED> as *const c_void,
        ),
        ("hsa_signal_store_screlease", store::<SC> as *const c_void),
        ("hsa_executable_freeze", executable_freeze as *const c_void),
        ("hsa_shut_down", shut_down as *const c_void),
        ("hsa_signal_wait_relaxed", wait::<RELAXED> as *const c_void),
        ("hsa_signal_wait_scacquire", wait::<SC> as *const c_void),
    ] {
        // SAFETY: the caller's table, not yet in use; each wrapper has its entry's signature.
        let _ = unsafe { replace_entry(&crate::tables::CORE, core, name, wrapper) };
    }
    if fns.executable_destroy.is_some() {
        // SAFETY: as above; code-object unloads are recorded before the runtime's destroy.
        let _ = unsafe {
            replace_entry(
                &crate::tables::CORE,
                core,
                "hsa_executable_destroy",
                crate::code_objects::executable_destroy as *const c_void,
            )
        };
    }
}

unsafe extern "C" fn shut_down() -> Status {
    let Some(f) = fns() else { return ERROR };
    finish_outstanding();
    // SAFETY: forwarded.
    unsafe { (f.shut_down)() }
}

/// Which of a pair of wrapped signal stores or waits: the `_relaxed` one, or the `_sc` one
/// (`_screlease` / `_scacquire`).
const RELAXED: bool = false;
const SC: bool = true;

/// In a forked child: the intercepted queues, their pending dispatches and the pooled signals
/// are the parent's (the child records only its own), and the harvester thread did not survive
/// the fork. Touches no lock another thread could have held at the fork.
pub fn after_fork_in_child() {
    for (d, q) in DOORBELLS.iter().zip(&QUEUES) {
        d.store(0, Ordering::Release);
        q.store(0, Ordering::Release);
    }
    PENDING.store(0, Ordering::Release);
    if let Some(instrument) = instrument::installed() {
        instrument.after_fork_in_child();
    }
    if let Ok(mut pool) = SIGNAL_POOL.try_lock() {
        pool.clear();
    }
    let started = HARVESTER
        .try_lock()
        .map(|mut h| h.take().is_some())
        .unwrap_or(false);
    if started {
        start_harvester();
    }
}
