//! ROCTx markers: typed wrappers around the core ROCTx entries that turn marks, push/pop ranges
//! (per thread) and start/stop ranges (per process) into [`MarkerRecord`]s named by the user's
//! message.
//!
//! With `--kernel-rename` the push/pop wrappers also keep the innermost open range's message
//! in the thread's call state ([`hsa_intercept::tracer::set_region`]), where the doorbell
//! wrapper finds it for each dispatch the thread enqueues; then the core table is wrapped
//! even when markers are not recorded ([`configure`]). Decision: the name is taken when the
//! dispatch is enqueued, in the application, as upstream does (through external correlation
//! ids), because after the run the records cannot say it: a dispatch carries no enqueue time
//! when API calls are not traced, and a range pushed and popped before a launch looks the same
//! as one around it.

use hsa_intercept::clock::now_ns;
use hsa_intercept::hsa::replace_entry;
use hsa_intercept::sink;
use hsa_intercept::tables::{self, ApiTable};
use hsa_intercept::tracer::{new_correlation_id, set_region, thread_id};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use trace_records::{MarkerKind, MarkerRecord, StringId};

static ORIGINAL: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];
const MARK: usize = 0;
const PUSH: usize = 1;
const POP: usize = 2;
const START: usize = 3;
const STOP: usize = 4;

/// Whether markers are recorded (`--marker-trace`).
static RECORD: AtomicBool = AtomicBool::new(true);
/// Whether dispatches note the innermost open range (`--kernel-rename`).
static RENAME: AtomicBool = AtomicBool::new(false);

/// Whether the wrappers record markers and whether they keep the open range for
/// `--kernel-rename` (set before the table is wrapped).
pub fn configure(record: bool, rename: bool) {
    RECORD.store(record, Ordering::Release);
    RENAME.store(rename, Ordering::Release);
}

/// Keeps the thread's innermost open range for the doorbell (with `--kernel-rename`).
fn note_region(ranges: &[OpenRange]) {
    if RENAME.load(Ordering::Acquire) {
        set_region(ranges.last().map_or(0, |r| r.0));
    }
}

/// An open range: its message, start time and correlation id.
type OpenRange = (StringId, u64, u64);

static PROCESS_RANGES: OnceLock<Mutex<HashMap<u64, OpenRange>>> = OnceLock::new();

thread_local! {
    static THREAD_RANGES: RefCell<Vec<OpenRange>> = const { RefCell::new(Vec::new()) };
}

/// # Safety
/// `message` is null or NUL-terminated.
unsafe fn message(message: *const c_char) -> StringId {
    if message.is_null() {
        return sink::intern("");
    }
    // SAFETY: per the contract.
    sink::intern(&unsafe { CStr::from_ptr(message) }.to_string_lossy())
}

fn emit(kind: MarkerKind, message: StringId, correlation_id: u64, start: u64, end: u64) {
    // Not recorded without --marker-trace, nor when it opened outside the collection periods.
    if !RECORD.load(Ordering::Acquire) || !hsa_intercept::scope::collecting(start) {
        return;
    }
    sink::emit(&MarkerRecord {
        correlation_id,
        start,
        end,
        message,
        thread_id: thread_id(),
        kind: kind as u8,
        reserved: [0; 7],
    });
}

/// The runtime's entry kept in `slot`, if one was replaced.
///
/// # Safety
/// `F` must be the signature of the entry `slot` keeps.
unsafe fn kept<F: Copy>(slot: &AtomicUsize) -> Option<F> {
    let p = slot.load(Ordering::Acquire);
    // SAFETY: a non-zero slot holds the runtime's entry, of signature `F` (the caller's word).
    (p != 0).then(|| unsafe { std::mem::transmute_copy::<usize, F>(&p) })
}

fn original<F: Copy>(k: usize) -> Option<F> {
    // SAFETY: slot k only ever holds the runtime's entry of the matching signature `F`.
    unsafe { kept(&ORIGINAL[k]) }
}

/// Replaces entry k of `table` (at `base`) with `wrappers[k]`, keeping the runtime's entry in
/// `slots[k]`. Returns how many were replaced.
///
/// # Safety
/// `base` must be the runtime's table of `table`'s layout, handed over before first use;
/// wrapper k has entry k's signature.
unsafe fn replace_all(
    table: &ApiTable,
    base: *mut u8,
    wrappers: &[*const c_void],
    slots: &[AtomicUsize],
) -> usize {
    let mut wrapped = 0;
    for ((w, slot), name) in wrappers.iter().zip(slots).zip(table.names) {
        // SAFETY: forwarded from the caller.
        if let Some(previous) = unsafe { replace_entry(table, base, name, *w) } {
            slot.store(previous as usize, Ordering::Release);
            wrapped += 1;
        }
    }
    wrapped
}

fn guard<R>(default: R, f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(default)
}

unsafe extern "C" fn mark_a(msg: *const c_char) {
    guard((), || {
        let t = now_ns();
        // SAFETY: the caller passes a C string (or null).
        emit(
            MarkerKind::Mark,
            unsafe { message(msg) },
            new_correlation_id(),
            t,
            t,
        );
        if let Some(f) = original::<unsafe extern "C" fn(*const c_char)>(MARK) {
            // SAFETY: the runtime's own entry with the caller's argument.
            unsafe { f(msg) }
        }
    })
}

unsafe extern "C" fn range_push_a(msg: *const c_char) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes a C string (or null).
        let id = unsafe { message(msg) };
        let start = now_ns();
        let _ = THREAD_RANGES.try_with(|r| {
            let mut r = r.borrow_mut();
            r.push((id, start, new_correlation_id()));
            note_region(&r);
        });
        // SAFETY: the runtime's own entry with the caller's argument.
        original::<unsafe extern "C" fn(*const c_char) -> c_int>(PUSH)
            .map_or(0, |f| unsafe { f(msg) })
    })
}

unsafe extern "C" fn range_pop() -> c_int {
    guard(-1, || {
        // SAFETY: the runtime's own entry.
        let r = original::<unsafe extern "C" fn() -> c_int>(POP).map_or(-1, |f| unsafe { f() });
        let end = now_ns();
        let popped = THREAD_RANGES.try_with(|r| {
            let mut r = r.borrow_mut();
            let top = r.pop();
            note_region(&r);
            top
        });
        if let Ok(Some((id, start, corr))) = popped {
            emit(MarkerKind::ThreadRange, id, corr, start, end);
        }
        r
    })
}

unsafe extern "C" fn range_start_a(msg: *const c_char) -> u64 {
    guard(0, || {
        // SAFETY: the caller passes a C string (or null).
        let id = unsafe { message(msg) };
        let start = now_ns();
        // SAFETY: the runtime's own entry with the caller's argument.
        let range = original::<unsafe extern "C" fn(*const c_char) -> u64>(START)
            .map_or(0, |f| unsafe { f(msg) });
        let ranges = PROCESS_RANGES.get_or_init(|| Mutex::new(HashMap::new()));
        if let Ok(mut r) = ranges.lock() {
            r.insert(range, (id, start, new_correlation_id()));
        }
        range
    })
}

unsafe extern "C" fn range_stop(range: u64) {
    guard((), || {
        if let Some(f) = original::<unsafe extern "C" fn(u64)>(STOP) {
            // SAFETY: the runtime's own entry with the caller's argument.
            unsafe { f(range) }
        }
        let end = now_ns();
        let open = PROCESS_RANGES
            .get()
            .and_then(|r| r.lock().ok()?.remove(&range));
        if let Some((id, start, corr)) = open {
            emit(MarkerKind::ProcessRange, id, corr, start, end);
        }
    })
}

/// Replaces the mark and range entries of ROCTx's core table with the wrappers (entries the
/// runtime's table lacks or leaves null stay as they are). Returns how many were replaced.
///
/// # Safety
/// `core` must be ROCTx's core table (`u64 size`, then MarkA, RangePushA, RangePop,
/// RangeStartA, RangeStop, GetThreadId), handed over before first use.
pub unsafe fn wrap_core(core: *mut u8) -> usize {
    let wrappers: [*const c_void; 5] = [
        mark_a as *const c_void,
        range_push_a as *const c_void,
        range_pop as *const c_void,
        range_start_a as *const c_void,
        range_stop as *const c_void,
    ];
    // SAFETY: the caller's table, not yet in use; wrapper k has entry k's signature.
    unsafe { replace_all(&tables::ROCTX_CORE_TABLE, core, &wrappers, &ORIGINAL) }
}

/// The runtime's `roctxProfilerPause` and `roctxProfilerResume`.
static CONTROL: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

/// `int roctxProfilerPause(roctx_thread_id_t tid)`: with `tid` 0, pauses the collection of
/// `--selected-regions`; always forwarded.
unsafe extern "C" fn profiler_pause(tid: u64) -> c_int {
    guard(0, || {
        if tid == 0 {
            hsa_intercept::regions::pause();
        }
        control(0, tid)
    })
}

/// `int roctxProfilerResume(roctx_thread_id_t tid)`: with `tid` 0, resumes it.
unsafe extern "C" fn profiler_resume(tid: u64) -> c_int {
    guard(0, || {
        if tid == 0 {
            hsa_intercept::regions::resume();
        }
        control(1, tid)
    })
}

fn control(k: usize, tid: u64) -> c_int {
    // SAFETY: both control slots hold the runtime's entry of this signature (see wrap_control).
    let f = unsafe { kept::<unsafe extern "C" fn(u64) -> c_int>(&CONTROL[k]) };
    // SAFETY: the runtime's own entry with the caller's argument.
    f.map_or(0, |f| unsafe { f(tid) })
}

/// Replaces ROCTx's control entries (pause, resume) with the `--selected-regions` wrappers.
/// Returns how many were replaced.
///
/// # Safety
/// `control` must be ROCTx's control table (`u64 size`, then ProfilerPause, ProfilerResume),
/// handed over before first use.
pub unsafe fn wrap_control(control: *mut u8) -> usize {
    let wrappers: [*const c_void; 2] = [
        profiler_pause as *const c_void,
        profiler_resume as *const c_void,
    ];
    // SAFETY: the caller's table, not yet in use; wrapper k has entry k's signature.
    unsafe { replace_all(&tables::ROCTX_CONTROL_TABLE, control, &wrappers, &CONTROL) }
}
