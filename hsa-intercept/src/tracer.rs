//! The API tracer: one call stack per thread (correlation ids, start times, the ROCTx region,
//! the thread's sink cache), and the enter and exit work around every traced call that turns it
//! into one [`ApiRecord`].
//!
//! The trampolines ([`crate::wrap`]) call `on_enter` and `on_exit` directly; the dispatch,
//! copy and memory tracing and the tool's ROCTx wrappers take correlation ids, thread ids and
//! the region from here. This module knows nothing of wrapping: it depends only on the clock,
//! the collection periods and the sink.

use crate::clock::now_ns;
use crate::sink;
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
/// The thread's state is found through an initial-exec TLS pointer ([`crate::thread_slot`]),
/// set on the thread's first use, so the traced path makes no `__tls_get_addr` call.
#[inline]
fn with_stack<R>(f: impl FnOnce(&mut CallStack) -> R) -> Option<R> {
    let mut s = crate::thread_slot::get().cast::<CallStack>();
    if s.is_null() {
        s = STACK.try_with(UnsafeCell::get).ok()?;
        crate::thread_slot::set(s.cast());
    }
    // SAFETY: `s` is this thread's `STACK` (the slot is per thread and set only here; the
    // thread-local has no destructor, so it lives as long as the thread, and a forked child's
    // thread keeps it at the same address); the callers never nest (see above), so this is
    // the only reference to it while `f` runs.
    Some(f(unsafe { &mut *s }))
}

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

/// Packs a domain and operation into a trampoline tag (what the exit records).
pub const fn tag(domain: ApiDomain, operation: u16) -> u32 {
    ((domain as u32) << 16) | operation as u32
}

/// This thread's call state, as [`on_enter`] returns it (null if the thread has none), for an
/// exit that did not keep what its enter returned.
#[inline]
pub(crate) fn call_state() -> *mut c_void {
    with_stack(|s| std::ptr::from_mut(s).cast()).unwrap_or(std::ptr::null_mut())
}

/// The tracer's work before a traced call. Returns this thread's call state for [`on_exit`]
/// (null if the thread has none).
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

/// The tracer's work after a traced call: one [`ApiRecord`] tagged `tag` (see [`tag`]).
/// `state` is what [`on_enter`] returned on this thread for the same call.
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
