//! API call tracing: correlation ids, host timestamps, one [`ApiRecord`] per call.

use crate::sink;
use crate::tables::{ApiTable, Header};
use crate::wrap::{Hooks, WrapError, wrap_entry};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use trace_records::{ApiDomain, ApiRecord};

/// Deepest nesting of traced calls recorded per thread; deeper calls are not recorded.
pub const MAX_DEPTH: usize = 64;

static NEXT_CORRELATION: AtomicU64 = AtomicU64::new(1);

/// Correlation ids are handed to threads in blocks, so the traced path needs no shared atomic.
const ID_BLOCK: u64 = 1024;

/// Everything a traced call needs from its thread, in one thread-local (one TLS lookup).
struct CallStack {
    frames: [(u64, u64); MAX_DEPTH],
    depth: usize,
    tid: u32,
    next_id: u64,
    ids_left: u64,
    /// The message of the innermost ROCTx range open on this thread (0 = none), kept by the
    /// tool's ROCTx wrappers for `--kernel-rename`.
    region: u32,
    local: sink::Local,
}

impl CallStack {
    fn new_id(&mut self) -> u64 {
        if self.ids_left == 0 {
            self.next_id = NEXT_CORRELATION.fetch_add(ID_BLOCK, Ordering::Relaxed);
            self.ids_left = ID_BLOCK;
        }
        self.ids_left -= 1;
        self.next_id += 1;
        self.next_id - 1
    }

    fn tid(&mut self) -> u32 {
        if self.tid == 0 {
            // SAFETY: gettid has no preconditions.
            self.tid = unsafe { libc::gettid() } as u32;
        }
        self.tid
    }
}

thread_local! {
    static STACK: UnsafeCell<CallStack> = const {
        UnsafeCell::new(CallStack {
            frames: [(0, 0); MAX_DEPTH],
            depth: 0,
            tid: 0,
            next_id: 0,
            ids_left: 0,
            region: 0,
            local: sink::Local::EMPTY,
        })
    };
}

/// Runs `f` on this thread's call state (`None` once the thread's locals are gone). `f` must not
/// call back into anything that uses the call state; every caller below is a leaf.
#[inline]
fn with_stack<R>(f: impl FnOnce(&mut CallStack) -> R) -> Option<R> {
    // SAFETY: the state is thread-local and the callers never nest (see above), so this is the
    // only reference to it while `f` runs.
    STACK.try_with(|s| f(unsafe { &mut *s.get() })).ok()
}

/// The host timeline of every record: `CLOCK_MONOTONIC` nanoseconds (see [`crate::clock`]).
pub use crate::clock::now_ns;

/// The calling thread's OS id (cached).
#[inline]
pub fn thread_id() -> u32 {
    with_stack(CallStack::tid).unwrap_or_else(|| {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    })
}

/// A new correlation id (unique in the process, from 1).
pub fn new_correlation_id() -> u64 {
    with_stack(CallStack::new_id)
        .unwrap_or_else(|| NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed))
}

/// The correlation id of the outermost traced call active on this thread, if any: work enqueued
/// inside `hipLaunchKernel` (even through nested HSA calls) carries the HIP call's id.
pub fn current_correlation_id() -> Option<u64> {
    with_stack(|s| (s.depth > 0).then(|| s.frames[0].0)).flatten()
}

/// Sets the message (an interned string id; 0 = none) of the innermost ROCTx range open on
/// this thread: work this thread enqueues from now on is noted under it (`--kernel-rename`).
pub fn set_region(region: u32) {
    let _ = with_stack(|s| s.region = region);
}

/// The message of the innermost ROCTx range open on this thread (0 = none).
#[inline]
pub fn current_region() -> u32 {
    with_stack(|s| s.region).unwrap_or(0)
}

/// Packs a domain and operation into a trampoline tag.
pub const fn tag(domain: ApiDomain, operation: u16) -> u32 {
    ((domain as u32) << 16) | operation as u32
}

/// The hooks that turn every wrapped call into an [`ApiRecord`].
#[derive(Debug, Default)]
pub struct ApiTracer;

impl Hooks for ApiTracer {
    #[inline]
    fn enter(&self, _tag: u32) {
        let _ = on_enter();
    }

    #[inline]
    fn exit(&self, tag: u32) {
        // Through the trait (not the trampoline's direct path) there is no state to hand over.
        on_exit(
            tag,
            with_stack(|s| std::ptr::from_mut(s).cast()).unwrap_or(std::ptr::null_mut()),
        );
    }
}

/// The tracer's work before a wrapped call (called directly by the trampoline). Returns this
/// thread's call state for [`on_exit`] (null if the thread has none).
#[inline]
pub(crate) fn on_enter() -> *mut c_void {
    let start = now_ns();
    with_stack(|s| {
        let correlation = if s.depth == 0 {
            s.new_id()
        } else {
            s.frames[0].0
        };
        if s.depth < MAX_DEPTH {
            s.frames[s.depth] = (correlation, start);
        }
        s.depth += 1;
        std::ptr::from_mut(s).cast::<c_void>()
    })
    .unwrap_or(std::ptr::null_mut())
}

/// The tracer's work after a wrapped call: one [`ApiRecord`]. `state` is what [`on_enter`]
/// returned on this thread for the same call.
#[inline]
pub(crate) fn on_exit(tag: u32, state: *mut c_void) {
    let end = now_ns();
    if state.is_null() {
        return;
    }
    // SAFETY: `state` is the calling thread's `CallStack` (the call returns on the thread that
    // made it, and the thread-local has no destructor, so it outlives the call); nothing else
    // holds a reference to it while the exit runs.
    let s = unsafe { &mut *state.cast::<CallStack>() };
    s.depth = s.depth.saturating_sub(1);
    if s.depth >= MAX_DEPTH {
        return;
    }
    let (correlation_id, start) = s.frames[s.depth];
    if !crate::scope::collecting(start) {
        return;
    }
    let record = ApiRecord {
        correlation_id,
        start,
        end,
        thread_id: s.tid(),
        operation: tag as u16,
        domain: (tag >> 16) as u8,
        reserved: 0,
    };
    sink::emit_cached(&mut s.local, &record);
}

/// What [`wrap_table`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WrapReport {
    /// Entries replaced by trampolines.
    pub wrapped: usize,
    /// Entries the runtime left null.
    pub null: usize,
    /// Entries this build knows but the runtime's table is too short to hold.
    pub beyond_size: usize,
    /// Entries not wrapped because the slots ran out.
    pub no_slot: usize,
}

/// The table's own `sizeof` as the runtime wrote it in its header.
///
/// # Safety
/// `base` must point at a readable table with `table`'s header.
pub unsafe fn runtime_size(table: &ApiTable, base: *const u8) -> usize {
    match table.header {
        // SAFETY: ApiTableVersion.minor_id (u32 at offset 4) holds sizeof(table).
        Header::Version => unsafe { base.add(4).cast::<u32>().read_unaligned() as usize },
        // SAFETY: the table starts with a size_t.
        Header::Size => unsafe { base.cast::<u64>().read_unaligned() as usize },
    }
}

/// Wraps, in place, every entry of the table at `base` whose operation `enabled` accepts, with
/// the trampoline tagged `(table.domain, operation)`. Entries at or beyond the runtime's own
/// size are never touched. Returns the originals (null where not wrapped) and a report.
///
/// # Safety
/// `base` must point at a writable table laid out as `table` describes, handed over before
/// any thread calls through it.
pub unsafe fn wrap_table(
    table: &ApiTable,
    base: *mut u8,
    enabled: impl Fn(u16) -> bool,
) -> (Vec<*const c_void>, WrapReport) {
    // SAFETY: forwarded from the caller.
    let size = unsafe { runtime_size(table, base) };
    let mut report = WrapReport::default();
    let mut originals = vec![std::ptr::null(); table.names.len()];
    for (k, original) in originals.iter_mut().enumerate() {
        let offset = table.offset(k);
        if offset + 8 > size {
            report.beyond_size += 1;
            continue;
        }
        if !enabled(k as u16) {
            continue;
        }
        // SAFETY: offset + 8 <= the runtime's size; entries are pointer-aligned.
        let entry = unsafe { base.add(offset) }.cast::<*const c_void>();
        // SAFETY: forwarded from the caller.
        match unsafe { wrap_entry(entry, tag(table.domain, k as u16)) } {
            Ok(o) => {
                *original = o;
                report.wrapped += 1;
            }
            Err(WrapError::Null) => report.null += 1,
            Err(WrapError::NoSlot) => report.no_slot += 1,
        }
    }
    (originals, report)
}
