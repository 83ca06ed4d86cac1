//! Memory-copy tracing: `hsa_amd_memory_async_copy` (and `_on_engine`) get a completion signal of
//! the tool's; when it fires, the copy time is read, the record emitted, the times copied into
//! the application's signal, and the application's signal decremented as the runtime would have.

use crate::api::{current_correlation_id, new_correlation_id, thread_id};
use crate::hsa::*;
use crate::sink;
use std::ffi::c_void;
use std::sync::OnceLock;
use trace_records::{CopyDirection, MemoryCopyRecord};

static ON_ENGINE: OnceLock<OnEngineFn> = OnceLock::new();

type OnEngineFn = unsafe extern "C" fn(
    *mut c_void,
    u64,
    *const c_void,
    u64,
    usize,
    u32,
    *const u64,
    u64,
    u32,
    bool,
) -> Status;

struct Pending {
    record: MemoryCopyRecord,
    signal: u64,
    original: u64,
}

/// The direction of a copy from its agents' kinds.
pub fn direction(src_gpu: bool, dst_gpu: bool) -> CopyDirection {
    match (src_gpu, dst_gpu) {
        (false, false) => CopyDirection::HostToHost,
        (false, true) => CopyDirection::HostToDevice,
        (true, false) => CopyDirection::DeviceToHost,
        (true, true) => CopyDirection::DeviceToDevice,
    }
}

/// Installs copy tracing into the runtime's AMD-extension table and turns on copy profiling.
///
/// # Safety
/// `amd_ext` must be the runtime's `AmdExtTable`, handed over before first use; `fns` its own
/// entries read before anything was wrapped.
pub unsafe fn install(amd_ext: *mut u8, fns: Fns) {
    let table = &crate::tables::AMD_EXT;
    // SAFETY: the runtime's own function.
    unsafe { (fns.async_copy_enable)(true) };
    set_fns(fns);
    // SAFETY: the caller's table, not yet in use; the wrapper has the entry's signature.
    let _ = unsafe {
        replace_entry(
            table,
            amd_ext,
            "hsa_amd_memory_async_copy",
            async_copy as *const c_void,
        )
    };
    // SAFETY: as above.
    let on_engine = unsafe {
        replace_entry(
            table,
            amd_ext,
            "hsa_amd_memory_async_copy_on_engine",
            async_copy_on_engine as *const c_void,
        )
    };
    if let Some(p) = on_engine {
        // SAFETY: the entry has this C signature.
        let _ = ON_ENGINE.set(unsafe { std::mem::transmute::<*const c_void, OnEngineFn>(p) });
    }
}

/// Prepares the tool's completion signal for a copy (held by the returned [`Pending`]); `None`
/// if tracing cannot be set up (the copy then runs untraced with the application's own signal).
fn begin(dst_agent: u64, src_agent: u64, size: usize, original: u64) -> Option<*mut Pending> {
    let f = fns()?;
    let mut signal = 0u64;
    // SAFETY: the runtime's signal_create with a valid out-pointer.
    if unsafe { (f.signal_create)(1, 0, std::ptr::null(), &mut signal) } != SUCCESS {
        return None;
    }
    let (src_node, src_gpu) = agent_node(src_agent);
    let (dst_node, dst_gpu) = agent_node(dst_agent);
    let record = MemoryCopyRecord {
        correlation_id: current_correlation_id().unwrap_or_else(new_correlation_id),
        start: 0,
        end: 0,
        bytes: size as u64,
        stream_id: 0,
        src_node_id: src_node,
        dst_node_id: dst_node,
        thread_id: thread_id(),
        direction: direction(src_gpu, dst_gpu) as u8,
        reserved: [0; 3],
    };
    Some(Box::into_raw(Box::new(Pending {
        record,
        signal,
        original,
    })))
}

/// Registers the completion handler after the runtime accepted the copy, or cleans up.
fn finish(status: Status, pending: *mut Pending) {
    let Some(f) = fns() else { return };
    // SAFETY: `pending` is the live Box `begin` leaked; its handler is not registered yet.
    let signal = unsafe { (*pending).signal };
    if status == SUCCESS {
        // SAFETY: the runtime's async handler; `pending` is reclaimed exactly once in it.
        unsafe { (f.signal_async_handler)(signal, CONDITION_LT, 1, on_complete, pending.cast()) };
    } else {
        // SAFETY: the copy was refused: nothing references the signal or `pending`.
        unsafe {
            drop(Box::from_raw(pending));
            (f.signal_destroy)(signal);
        }
    }
}

/// Runs a copy through `forward` (the runtime's entry with the caller's arguments and the given
/// completion signal): with the tool's signal when the copy can be traced, else with the
/// application's `completion`.
fn traced_copy(
    dst_agent: u64,
    src_agent: u64,
    size: usize,
    completion: u64,
    forward: impl FnOnce(u64) -> Status,
) -> Status {
    let traced = std::panic::catch_unwind(|| begin(dst_agent, src_agent, size, completion))
        .ok()
        .flatten();
    let Some(pending) = traced else {
        return forward(completion);
    };
    // SAFETY: `pending` is the live Box `begin` leaked; nothing else references it yet.
    let status = forward(unsafe { (*pending).signal });
    finish(status, pending);
    status
}

unsafe extern "C" fn async_copy(
    dst: *mut c_void,
    dst_agent: u64,
    src: *const c_void,
    src_agent: u64,
    size: usize,
    num_deps: u32,
    deps: *const u64,
    completion: u64,
) -> Status {
    let Some(f) = fns() else { return ERROR };
    traced_copy(dst_agent, src_agent, size, completion, |signal| {
        // SAFETY: the caller's arguments, forwarded with the given completion signal.
        unsafe {
            (f.memory_async_copy)(dst, dst_agent, src, src_agent, size, num_deps, deps, signal)
        }
    })
}

unsafe extern "C" fn async_copy_on_engine(
    dst: *mut c_void,
    dst_agent: u64,
    src: *const c_void,
    src_agent: u64,
    size: usize,
    num_deps: u32,
    deps: *const u64,
    completion: u64,
    engine: u32,
    force_sdma: bool,
) -> Status {
    let Some(on_engine) = ON_ENGINE.get() else {
        return ERROR;
    };
    traced_copy(dst_agent, src_agent, size, completion, |signal| {
        // SAFETY: the caller's arguments, forwarded with the given completion signal.
        unsafe {
            on_engine(
                dst, dst_agent, src, src_agent, size, num_deps, deps, signal, engine, force_sdma,
            )
        }
    })
}

unsafe extern "C" fn on_complete(_value: i64, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the Box leaked in `begin`, reclaimed only here.
    let pending = unsafe { Box::from_raw(arg.cast::<Pending>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(f) = fns() else { return };
        let mut time = AsyncCopyTime::default();
        // SAFETY: the runtime's own function on the signal it completed.
        let timed = unsafe { (f.get_async_copy_time)(pending.signal, &mut time) } == SUCCESS;
        if timed {
            let mut record = pending.record;
            record.start = time.start;
            record.end = time.end;
            sink::emit(&record);
        }
        if pending.original != 0 {
            if timed {
                // SAFETY: a signal handle is the address of its amd_signal_t; start_ts/end_ts
                // are at 32/40 (applications may read the copy time from their own signal).
                unsafe {
                    let s = pending.original as *mut AmdSignal;
                    (&raw mut (*s).start_ts).write_volatile(time.start);
                    (&raw mut (*s).end_ts).write_volatile(time.end);
                }
            }
            // SAFETY: completes the application's signal as the runtime would have.
            unsafe { (f.signal_subtract_screlease)(pending.original, 1) };
        }
        // SAFETY: our own signal, no longer used.
        unsafe { (f.signal_destroy)(pending.signal) };
    }));
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_follow_agent_kinds() {
        assert_eq!(direction(false, true), CopyDirection::HostToDevice);
        assert_eq!(direction(true, false), CopyDirection::DeviceToHost);
        assert_eq!(direction(true, true), CopyDirection::DeviceToDevice);
        assert_eq!(direction(false, false), CopyDirection::HostToHost);
    }
}
