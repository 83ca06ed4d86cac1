//! Simulated ROCTx: `librocprofiler-sdk-roctx.so.1`.
//!
//! Every export calls through one of three function tables — core `{MarkA, RangePushA,
//! RangePop, RangeStartA, RangeStop, GetThreadId}`, control `{ProfilerPause, ProfilerResume}`
//! and name `{NameOsThread, NameHsaAgent, NameHipDevice, NameHipStream}`, each starting with a
//! `u64 size` — which are registered as `"roctx"` through `librocprofiler-register.so.0` on the
//! first call, before any entry is used, so a tool that wraps an entry in place intercepts the
//! export. The default implementations have ROCTx's semantics: push returns the thread's nesting
//! level and increments it, pop returns -1 at level 0 and the decremented level otherwise, range
//! ids from `RangeStartA` count from 1, and `GetThreadId` is `gettid`.

use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// `roctx_range_id_t`.
pub type RangeId = u64;
/// `roctx_thread_id_t`.
pub type ThreadId = u64;

type MarkFn = unsafe extern "C" fn(*const c_char);
type PushFn = unsafe extern "C" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "C" fn() -> c_int;
type StartFn = unsafe extern "C" fn(*const c_char) -> RangeId;
type StopFn = unsafe extern "C" fn(RangeId);
type GetTidFn = unsafe extern "C" fn(*mut ThreadId) -> c_int;
type PauseFn = unsafe extern "C" fn(ThreadId) -> c_int;
type NameThreadFn = unsafe extern "C" fn(*const c_char) -> c_int;
type NameAgentFn = unsafe extern "C" fn(*const c_char, *const c_void) -> c_int;
type NameDeviceFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type NameStreamFn = unsafe extern "C" fn(*const c_char, *const c_void) -> c_int;

/// `roctxCoreApiTable_t`.
#[repr(C)]
pub struct CoreTable {
    /// `sizeof` the table.
    pub size: u64,
    mark_a: MarkFn,
    range_push_a: PushFn,
    range_pop: PopFn,
    range_start_a: StartFn,
    range_stop: StopFn,
    get_thread_id: GetTidFn,
}

/// `roctxControlApiTable_t`.
#[repr(C)]
pub struct ControlTable {
    /// `sizeof` the table.
    pub size: u64,
    profiler_pause: PauseFn,
    profiler_resume: PauseFn,
}

/// `roctxNameApiTable_t`.
#[repr(C)]
pub struct NameTable {
    /// `sizeof` the table.
    pub size: u64,
    name_os_thread: NameThreadFn,
    name_hsa_agent: NameAgentFn,
    name_hip_device: NameDeviceFn,
    name_hip_stream: NameStreamFn,
}

const _: () = {
    assert!(size_of::<CoreTable>() == 56);
    assert!(std::mem::offset_of!(CoreTable, get_thread_id) == 48);
    assert!(size_of::<ControlTable>() == 24);
    assert!(size_of::<NameTable>() == 40);
    assert!(std::mem::offset_of!(NameTable, name_hip_stream) == 32);
};

/// A table the runtime owns and a tool may rewrite in place.
struct Shared<T>(UnsafeCell<T>);

// SAFETY: entries are written only by a tool during registration (before first use, under
// `REGISTER`), and read afterwards; function-pointer-sized writes are not torn on x86-64.
unsafe impl<T> Sync for Shared<T> {}

static CORE: Shared<CoreTable> = Shared(UnsafeCell::new(CoreTable {
    size: size_of::<CoreTable>() as u64,
    mark_a: mark_a_impl,
    range_push_a: range_push_a_impl,
    range_pop: range_pop_impl,
    range_start_a: range_start_a_impl,
    range_stop: range_stop_impl,
    get_thread_id: get_thread_id_impl,
}));
static CONTROL: Shared<ControlTable> = Shared(UnsafeCell::new(ControlTable {
    size: size_of::<ControlTable>() as u64,
    profiler_pause: profiler_pause_impl,
    profiler_resume: profiler_resume_impl,
}));
static NAME: Shared<NameTable> = Shared(UnsafeCell::new(NameTable {
    size: size_of::<NameTable>() as u64,
    name_os_thread: name_os_thread_impl,
    name_hsa_agent: name_hsa_agent_impl,
    name_hip_device: name_hip_device_impl,
    name_hip_stream: name_hip_stream_impl,
}));

static REGISTER: Once = Once::new();
static NEXT_RANGE_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static NESTING: Cell<c_int> = const { Cell::new(0) };
}

/// This library's version as rocprofiler-register expects it (`10000·major + 100·minor + patch`).
pub const VERSION: u32 = 1_00_00;

/// `uint32_t rocprofiler_register_import_roctx(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_register_import_roctx() -> u32 {
    VERSION
}

#[path = "../../hip/src/register_table.rs"]
mod register_table;

/// Hands the three tables to rocprofiler-register, once, before their first use.
fn ensure_registered() {
    REGISTER.call_once(|| {
        let mut tables: [*mut c_void; 3] = [
            CORE.0.get().cast(),
            CONTROL.0.get().cast(),
            NAME.0.get().cast(),
        ];
        let status = register_table::register_table(
            c"roctx",
            rocprofiler_register_import_roctx,
            VERSION,
            &mut tables,
        );
        if let Some(status) = status
            && std::env::var_os("ROCTX_LOG_REGISTRATION").is_some()
        {
            eprintln!("roctx (sim): rocprofiler_register_library_api_table -> {status}");
        }
    });
}

fn core() -> &'static CoreTable {
    ensure_registered();
    // SAFETY: see `Shared`: after registration the table is only read.
    unsafe { &*CORE.0.get() }
}

fn control() -> &'static ControlTable {
    ensure_registered();
    // SAFETY: as above.
    unsafe { &*CONTROL.0.get() }
}

fn name() -> &'static NameTable {
    ensure_registered();
    // SAFETY: as above.
    unsafe { &*NAME.0.get() }
}

/// Runs `f`, turning a panic into `default` (nothing may unwind into the application).
fn guard<R>(default: R, f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(default)
}

/// `void roctxMarkA(const char*)`.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxMarkA(message: *const c_char) {
    // SAFETY: forwarded with the caller's argument to the table entry of the same signature.
    guard((), || unsafe { (core().mark_a)(message) })
}

/// `int roctxRangePushA(const char*)`.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxRangePushA(message: *const c_char) -> c_int {
    // SAFETY: as for roctxMarkA.
    guard(-1, || unsafe { (core().range_push_a)(message) })
}

/// `int roctxRangePop(void)`.
///
/// # Safety
/// None beyond the C contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxRangePop() -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (core().range_pop)() })
}

/// `roctx_range_id_t roctxRangeStartA(const char*)`.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxRangeStartA(message: *const c_char) -> RangeId {
    // SAFETY: as for roctxMarkA.
    guard(0, || unsafe { (core().range_start_a)(message) })
}

/// `void roctxRangeStop(roctx_range_id_t)`.
///
/// # Safety
/// None beyond the C contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxRangeStop(id: RangeId) {
    // SAFETY: table entry of this signature.
    guard((), || unsafe { (core().range_stop)(id) })
}

/// `int roctxGetThreadId(roctx_thread_id_t*)`.
///
/// # Safety
/// `tid` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxGetThreadId(tid: *mut ThreadId) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (core().get_thread_id)(tid) })
}

/// `int roctxProfilerPause(roctx_thread_id_t)`.
///
/// # Safety
/// None beyond the C contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxProfilerPause(tid: ThreadId) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (control().profiler_pause)(tid) })
}

/// `int roctxProfilerResume(roctx_thread_id_t)`.
///
/// # Safety
/// None beyond the C contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxProfilerResume(tid: ThreadId) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (control().profiler_resume)(tid) })
}

/// `int roctxNameOsThread(const char*)`.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxNameOsThread(label: *const c_char) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (name().name_os_thread)(label) })
}

/// `int roctxNameHsaAgent(const char*, const hsa_agent_s*)`.
///
/// # Safety
/// Pointers are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxNameHsaAgent(label: *const c_char, agent: *const c_void) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (name().name_hsa_agent)(label, agent) })
}

/// `int roctxNameHipDevice(const char*, int)`.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxNameHipDevice(label: *const c_char, device: c_int) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (name().name_hip_device)(label, device) })
}

/// `int roctxNameHipStream(const char*, const ihipStream_t*)`.
///
/// # Safety
/// Pointers are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn roctxNameHipStream(label: *const c_char, stream: *const c_void) -> c_int {
    // SAFETY: table entry of this signature.
    guard(-1, || unsafe { (name().name_hip_stream)(label, stream) })
}

unsafe extern "C" fn mark_a_impl(_: *const c_char) {}

unsafe extern "C" fn range_push_a_impl(_: *const c_char) -> c_int {
    NESTING.with(|n| {
        let level = n.get();
        n.set(level + 1);
        level
    })
}

unsafe extern "C" fn range_pop_impl() -> c_int {
    NESTING.with(|n| match n.get() {
        0 => -1,
        level => {
            n.set(level - 1);
            level - 1
        }
    })
}

unsafe extern "C" fn range_start_a_impl(_: *const c_char) -> RangeId {
    NEXT_RANGE_ID.fetch_add(1, Ordering::Relaxed) + 1
}

unsafe extern "C" fn range_stop_impl(_: RangeId) {}

unsafe extern "C" fn get_thread_id_impl(tid: *mut ThreadId) -> c_int {
    if tid.is_null() {
        return -1;
    }
    // SAFETY: gettid has no preconditions; `tid` is non-null and writable per the contract.
    unsafe { *tid = libc::gettid() as ThreadId };
    0
}

unsafe extern "C" fn profiler_pause_impl(_: ThreadId) -> c_int {
    0
}

unsafe extern "C" fn profiler_resume_impl(_: ThreadId) -> c_int {
    0
}

unsafe extern "C" fn name_os_thread_impl(_: *const c_char) -> c_int {
    0
}

unsafe extern "C" fn name_hsa_agent_impl(_: *const c_char, _: *const c_void) -> c_int {
    0
}

unsafe extern "C" fn name_hip_device_impl(_: *const c_char, _: c_int) -> c_int {
    0
}

unsafe extern "C" fn name_hip_stream_impl(_: *const c_char, _: *const c_void) -> c_int {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_nest_per_thread() {
        // SAFETY: the exports with valid (or null) arguments.
        unsafe {
            assert_eq!(roctxRangePop(), -1, "nothing pushed yet");
            assert_eq!(roctxRangePushA(c"a".as_ptr()), 0);
            assert_eq!(roctxRangePushA(c"b".as_ptr()), 1);
            let other = std::thread::spawn(|| roctxRangePushA(c"c".as_ptr()))
                .join()
                .unwrap();
            assert_eq!(other, 0, "levels are per thread");
            assert_eq!(roctxRangePop(), 1);
            assert_eq!(roctxRangePop(), 0);
            assert_eq!(roctxRangePop(), -1);
        }
    }

    #[test]
    fn range_ids_count_from_one_and_thread_ids_are_gettid() {
        // SAFETY: the exports with valid arguments.
        unsafe {
            let a = roctxRangeStartA(c"x".as_ptr());
            let b = roctxRangeStartA(c"y".as_ptr());
            assert!(a >= 1 && b > a);
            roctxRangeStop(a);
            let mut tid = 0;
            assert_eq!(roctxGetThreadId(&mut tid), 0);
            assert_eq!(tid, libc::gettid() as u64);
            assert_eq!(roctxGetThreadId(std::ptr::null_mut()), -1);
            assert_eq!(roctxNameOsThread(c"main".as_ptr()), 0);
            assert_eq!(roctxProfilerPause(0), 0);
        }
    }
}
