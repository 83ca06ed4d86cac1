//! Memory-copy tracing: `hsa_amd_memory_async_copy` (and `_on_engine`) get a completion signal of
//! the tool's; when it fires, the copy time is read, the record emitted, the times copied into
//! the application's signal, and the application's signal decremented as the runtime would have.
//!
//! The application's signal must complete however tracing fails, exactly once. So the tool's
//! completion handler is registered *before* the copy is submitted with the tool's signal:
//!
//! - the tool's signal cannot be created, or the runtime refuses the handler: the copy is
//!   submitted untraced with the application's own signal (counted as
//!   [`LossCause::CopyUntraced`] once the runtime accepts it);
//! - the runtime refuses the copy after the handler was registered: the handler is told the copy
//!   was cancelled and released by completing the tool's signal; it then only cleans up (the
//!   application's signal is left alone, as the refused copy would have left it);
//! - the copy time cannot be read: the application's signal still completes; the copy counts as
//!   [`LossCause::CopyUntraced`].

use crate::hsa::*;
use crate::sink;
use crate::tracer::{current_correlation_id, new_correlation_id, thread_id};
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use trace_records::loss::LossCause;
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
    /// Set before the tool's signal is completed by the tool itself: the runtime refused the
    /// copy, so the handler only cleans up.
    cancelled: AtomicBool,
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

/// Prepares the tool's completion signal for a copy and registers its completion handler (both
/// held by the returned [`Pending`], which the handler reclaims); `None` if tracing cannot be
/// set up (the copy then runs untraced with the application's own signal).
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
    let pending = Box::into_raw(Box::new(Pending {
        record,
        signal,
        original,
        cancelled: AtomicBool::new(false),
    }));
    // The signal stays at 1 until the copy (or a cancellation) completes it, so the handler
    // cannot run before the copy is submitted.
    // SAFETY: the runtime's async handler on our live signal; `pending` is reclaimed exactly
    // once, in the handler.
    let registered =
        unsafe { (f.signal_async_handler)(signal, CONDITION_LT, 1, on_complete, pending.cast()) };
    if registered != SUCCESS {
        // SAFETY: the handler is not registered: nothing else references `pending` or the
        // signal.
        unsafe {
            drop(Box::from_raw(pending));
            (f.signal_destroy)(signal);
        }
        return None;
    }
    Some(pending)
}

/// After the runtime refused a copy whose handler is registered: tells the handler and
/// completes the tool's signal so it runs, cleans up and unregisters (nothing else would ever
/// complete the signal).
fn cancel(pending: *mut Pending) {
    let Some(f) = fns() else { return };
    // SAFETY: `pending` is alive until the handler runs, which needs the store below; the
    // fields are read before it.
    let signal = unsafe {
        (*pending).cancelled.store(true, Ordering::Release);
        (*pending).signal
    };
    // SAFETY: our own signal; the store publishes `cancelled` to the handler (release), and
    // `pending` is not touched after it.
    unsafe { (f.signal_store_screlease)(signal, 0) };
}

/// Runs a copy through `forward` (the runtime's entry with the caller's arguments and the given
/// completion signal): with the tool's signal when the copy can be traced, else with the
/// application's `completion`, counting it as untraced.
fn traced_copy(
    dst_agent: u64,
    src_agent: u64,
    size: usize,
    completion: u64,
    forward: impl FnOnce(u64) -> Status,
) -> Status {
    // Outside `--collection-period`'s windows the copy runs as the application asked.
    if !crate::scope::collecting_now() {
        return forward(completion);
    }
    let traced = std::panic::catch_unwind(|| begin(dst_agent, src_agent, size, completion))
        .ok()
        .flatten();
    let Some(pending) = traced else {
        let status = forward(completion);
        if status == SUCCESS {
            sink::lost(LossCause::CopyUntraced, 1);
        }
        return status;
    };
    // SAFETY: `pending` is alive: its handler cannot run before the signal is completed.
    let status = forward(unsafe { (*pending).signal });
    if status != SUCCESS {
        let _ = std::panic::catch_unwind(|| cancel(pending));
    }
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
    // SAFETY: `arg` is the Box leaked in `begin`, reclaimed only here (the handler runs once:
    // it returns false).
    let pending = unsafe { Box::from_raw(arg.cast::<Pending>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(f) = fns() else { return };
        if !pending.cancelled.load(Ordering::Acquire) {
            complete(f, &pending);
        }
        // SAFETY: our own signal, no longer used.
        unsafe { (f.signal_destroy)(pending.signal) };
    }));
    false
}

/// A traced copy finished: its record (or its loss), then the application's signal, completed
/// as the runtime would have (even if recording panicked).
fn complete(f: &Fns, pending: &Pending) {
    let time = std::panic::catch_unwind(|| record(f, pending)).unwrap_or(None);
    if pending.original != 0 {
        if let Some(time) = time {
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
}

/// Emits the record of a finished copy and returns its time, or counts it untraced when the
/// runtime cannot report the time.
fn record(f: &Fns, pending: &Pending) -> Option<AsyncCopyTime> {
    let mut time = AsyncCopyTime::default();
    // SAFETY: the runtime's own function on the signal it completed.
    if unsafe { (f.get_async_copy_time)(pending.signal, &mut time) } != SUCCESS {
        sink::lost(LossCause::CopyUntraced, 1);
        return None;
    }
    let mut record = pending.record;
    record.start = time.start;
    record.end = time.end;
    sink::emit(&record);
    Some(time)
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

    /// A runtime of signals in a map, with switches for the failures under test.
    mod fake {
        use super::*;
        use crate::tables::{AMD_EXT, CORE};
        use std::collections::HashMap;
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, AtomicU64};

        pub static CREATE_FAILS: AtomicBool = AtomicBool::new(false);
        pub static HANDLER_FAILS: AtomicBool = AtomicBool::new(false);
        pub static TIME_FAILS: AtomicBool = AtomicBool::new(false);
        static NEXT: AtomicU64 = AtomicU64::new(1);

        #[derive(Default)]
        pub struct World {
            pub values: HashMap<u64, i64>,
            pub handlers: HashMap<u64, (AsyncHandler, usize)>,
            pub destroyed: Vec<u64>,
            pub subtracted: Vec<u64>,
        }

        pub static WORLD: Mutex<Option<World>> = Mutex::new(None);

        pub fn with<T>(f: impl FnOnce(&mut World) -> T) -> T {
            f(WORLD
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(World::default))
        }

        pub unsafe extern "C" fn create(v: i64, _: u32, _: *const u64, out: *mut u64) -> Status {
            if CREATE_FAILS.load(Ordering::SeqCst) {
                return ERROR;
            }
            let s = NEXT.fetch_add(1, Ordering::SeqCst);
            with(|w| w.values.insert(s, v));
            // SAFETY: the caller's out-pointer.
            unsafe { *out = s };
            SUCCESS
        }

        pub unsafe extern "C" fn destroy(s: u64) -> Status {
            with(|w| w.destroyed.push(s));
            SUCCESS
        }

        pub unsafe extern "C" fn handler(
            s: u64,
            _: u32,
            _: i64,
            h: AsyncHandler,
            arg: *mut c_void,
        ) -> Status {
            if HANDLER_FAILS.load(Ordering::SeqCst) {
                return ERROR;
            }
            with(|w| w.handlers.insert(s, (h, arg as usize)));
            SUCCESS
        }

        /// Stores `v`; a value below 1 runs the signal's handler (condition LT 1), once.
        pub unsafe extern "C" fn store(s: u64, v: i64) {
            let fire = with(|w| {
                w.values.insert(s, v);
                if v < 1 { w.handlers.remove(&s) } else { None }
            });
            if let Some((h, arg)) = fire {
                // SAFETY: the handler registered with its argument.
                unsafe { h(v, arg as *mut c_void) };
            }
        }

        pub unsafe extern "C" fn subtract(s: u64, _: i64) {
            with(|w| w.subtracted.push(s));
        }

        pub unsafe extern "C" fn copy_time(_: u64, t: *mut AsyncCopyTime) -> Status {
            if TIME_FAILS.load(Ordering::SeqCst) {
                return ERROR;
            }
            // SAFETY: the caller's out-pointer.
            unsafe { *t = AsyncCopyTime { start: 10, end: 20 } };
            SUCCESS
        }

        pub unsafe extern "C" fn agent_info(_: u64, _: u32, value: *mut c_void) -> Status {
            // SAFETY: the u32 attributes the tool asks for.
            unsafe { value.cast::<u32>().write(0) };
            SUCCESS
        }

        unsafe extern "C" fn never_called() {
            std::process::abort();
        }

        /// Entry points: the fakes above, every other entry a function that must not run.
        pub fn fns() -> Fns {
            let mut tables = [
                (vec![0u64; CORE.size() / 8], &CORE),
                (vec![0u64; AMD_EXT.size() / 8], &AMD_EXT),
            ];
            for (t, table) in &mut tables {
                t[0] = u64::from(table.size() as u32) << 32;
                for k in 0..table.names.len() {
                    t[table.offset(k) / 8] = never_called as unsafe extern "C" fn() as usize as u64;
                }
            }
            // SAFETY: complete tables; the placeholders are replaced below where called.
            let mut f =
                unsafe { Fns::resolve(tables[0].0.as_ptr().cast(), tables[1].0.as_ptr().cast()) }
                    .unwrap();
            f.signal_create = create;
            f.signal_destroy = destroy;
            f.signal_async_handler = handler;
            f.signal_store_screlease = store;
            f.signal_subtract_screlease = subtract;
            f.get_async_copy_time = copy_time;
            f.agent_get_info = agent_info;
            f
        }
    }

    /// A 64-byte `amd_signal_t` of the application's (its address is the handle).
    fn app_signal() -> Box<AmdSignal> {
        Box::new(AmdSignal {
            kind: 0,
            value: 1,
            event_mailbox_ptr: 0,
            event_id: 0,
            reserved1: 0,
            start_ts: 0,
            end_ts: 0,
            queue_ptr: 0,
            reserved3: [0; 2],
        })
    }

    /// Runs one copy through [`traced_copy`] whose submission answers `status`; returns the
    /// signal it was submitted with.
    fn copy(app: u64, status: Status) -> (Status, u64) {
        let mut used = 0;
        let got = traced_copy(1, 2, 64, app, |signal| {
            used = signal;
            status
        });
        (got, used)
    }

    #[test]
    fn the_applications_signal_completes_once_whatever_fails() {
        set_fns(fake::fns());
        let app = app_signal();
        let handle = &*app as *const AmdSignal as u64;
        let reset = || fake::with(|w| *w = fake::World::default());

        // Traced: the tool's signal is submitted; its completion times and completes the
        // application's signal once, then the tool's signal is destroyed.
        reset();
        let (status, used) = copy(handle, SUCCESS);
        assert_eq!(status, SUCCESS);
        assert_ne!(used, handle);
        assert!(
            fake::with(|w| w.handlers.contains_key(&used)),
            "registered first"
        );
        assert!(
            fake::with(|w| w.subtracted.is_empty()),
            "not before the copy ends"
        );
        // SAFETY: the fake runtime's store.
        unsafe { fake::store(used, 0) };
        assert_eq!(fake::with(|w| w.subtracted.clone()), [handle]);
        assert_eq!(fake::with(|w| w.destroyed.clone()), [used]);
        assert_eq!((app.start_ts, app.end_ts), (10, 20));

        // The runtime refuses the handler: untraced, with the application's own signal.
        reset();
        fake::HANDLER_FAILS.store(true, Ordering::SeqCst);
        let (status, used) = copy(handle, SUCCESS);
        fake::HANDLER_FAILS.store(false, Ordering::SeqCst);
        assert_eq!((status, used), (SUCCESS, handle));
        let created: Vec<u64> = fake::with(|w| w.values.keys().copied().collect());
        assert_eq!(
            fake::with(|w| w.destroyed.clone()),
            created,
            "no signal leaks"
        );
        assert!(
            fake::with(|w| w.subtracted.is_empty()),
            "the runtime completes it"
        );

        // No signal for the tool: untraced too.
        reset();
        fake::CREATE_FAILS.store(true, Ordering::SeqCst);
        let (status, used) = copy(handle, SUCCESS);
        fake::CREATE_FAILS.store(false, Ordering::SeqCst);
        assert_eq!((status, used), (SUCCESS, handle));

        // The copy is refused after the handler was registered: the handler is released and
        // cleans up; the application's signal is left as the refused copy leaves it.
        reset();
        let (status, used) = copy(handle, 0x1001);
        assert_eq!(status, 0x1001);
        assert_ne!(used, handle);
        assert!(fake::with(|w| w.handlers.is_empty()), "handler released");
        assert_eq!(fake::with(|w| w.destroyed.clone()), [used]);
        assert!(
            fake::with(|w| w.subtracted.is_empty()),
            "no completion of a refused copy"
        );

        // The copy time cannot be read: still exactly one completion.
        reset();
        fake::TIME_FAILS.store(true, Ordering::SeqCst);
        let (_, used) = copy(handle, SUCCESS);
        // SAFETY: the fake runtime's store.
        unsafe { fake::store(used, 0) };
        fake::TIME_FAILS.store(false, Ordering::SeqCst);
        assert_eq!(fake::with(|w| w.subtracted.clone()), [handle]);
        assert_eq!(fake::with(|w| w.destroyed.clone()), [used]);
    }
}
