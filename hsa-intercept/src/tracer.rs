//! The API tracer: one call state per thread (correlation ids, depth, the outermost call's id,
//! the ROCTx region, the thread's sink cache), and the enter and exit work around every traced
//! call that turns it into one [`ApiRecord`].
//!
//! Every traced call takes a correlation id of its own, a call made inside another (an HSA
//! call under `hipMemcpy`, `hsa_agent_get_info` in an `hsa_iterate_agents` callback) included,
//! so the ids are unique in every format; the work a call enqueues (dispatches, copies,
//! allocations) carries the id of the outermost call active on the thread
//! ([`current_correlation_id`]), and the enclosing call of a nested one is its ancestor.
//!
//! The trampolines ([`crate::wrap`]) do the enter work themselves on their fast path: they read
//! the call state's fields at the offsets exported here ([`NEXT_ID_AT`], [`FAST_END_AT`],
//! [`DEPTH_AT`], [`OUTER_AT`]), take the next id of the thread's block, count the depth and keep
//! the call's id and raw TSC start in their own frame; the exit ([`exit_tsc`]) converts both
//! times and records. Whenever that path does not apply (no call state yet, the block used up,
//! no TSC clock, hooks other than the tracer), they call [`enter`] and [`exit_ns`] instead. The
//! dispatch, copy and memory tracing and the tool's ROCTx wrappers take correlation ids, thread
//! ids and the region from here. This module knows nothing of wrapping: it depends only on the
//! clock, the collection periods and the sink.

use crate::clock;
use crate::sink;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use trace_records::{ApiDomain, ApiRecord};

static NEXT_CORRELATION: AtomicU64 = AtomicU64::new(1);

/// Correlation ids are handed to threads in blocks, so the traced path needs no shared atomic:
/// one `fetch_add` per 1024 ids. A thread's ids are unique in the process and increase.
const ID_BLOCK: u64 = 1024;

/// Whether the trampolines may take ids themselves (set once the API tracer is their hooks).
static FAST_ENTER: AtomicBool = AtomicBool::new(false);

/// Everything a traced call needs from its thread, in one thread-local (one TLS lookup). The
/// four fields after the sink cache are read and written by the trampolines' assembly at the
/// offsets below.
#[repr(C)]
pub(crate) struct CallStack {
    /// The thread's sink cache, first: the exit's pointer to the call state is then also the
    /// pointer to it, one register for both.
    local: sink::Local,
    /// The thread's next correlation id (ids below `id_end` are the thread's).
    next_id: u64,
    /// `id_end` while the trampolines may take ids themselves ([`fast_enter_allowed`]), else
    /// 0: a trampoline takes an id only while `next_id < fast_end`, and otherwise calls
    /// [`enter`].
    fast_end: u64,
    /// Traced calls active on this thread.
    depth: u64,
    /// The correlation id of the outermost active call (meaningful while `depth > 0`).
    outer: u64,
    /// End of the thread's block of correlation ids.
    id_end: u64,
    /// The message of the innermost ROCTx range open on this thread (0 = none), kept by the
    /// tool's ROCTx wrappers for `--kernel-rename`.
    region: u32,
}

/// Offset of the next correlation id in the call state (for the trampolines).
pub(crate) const NEXT_ID_AT: usize = std::mem::offset_of!(CallStack, next_id);
/// Offset of the fast path's end of the id block in the call state.
pub(crate) const FAST_END_AT: usize = std::mem::offset_of!(CallStack, fast_end);
/// Offset of the depth in the call state.
pub(crate) const DEPTH_AT: usize = std::mem::offset_of!(CallStack, depth);
/// Offset of the outermost call's id in the call state.
pub(crate) const OUTER_AT: usize = std::mem::offset_of!(CallStack, outer);

/// Whether the trampolines may do the enter work themselves: the API tracer is installed, the
/// clock is the TSC (the trampolines keep the raw TSC as the start) and no collection periods
/// are in force (the fast exit, [`exit_tsc`], does not check them; [`crate::scope::install`]
/// refuses periods once the tracer is in use, so no thread holds a fast block under them).
fn fast_enter_allowed() -> bool {
    FAST_ENTER.load(Ordering::Relaxed) && clock::tsc_in_use() && !crate::scope::enabled()
}

/// Lets the trampolines take correlation ids and start times themselves (the API tracer is
/// their hooks). Threads pick it up at their next call through [`enter`].
pub(crate) fn allow_fast_enter() {
    crate::scope::close_installation();
    FAST_ENTER.store(true, Ordering::Relaxed);
}

impl CallStack {
    fn new_id(&mut self) -> u64 {
        if self.next_id >= self.id_end {
            self.next_id = NEXT_CORRELATION.fetch_add(ID_BLOCK, Ordering::Relaxed);
            self.id_end = self.next_id + ID_BLOCK;
            self.fast_end = if fast_enter_allowed() { self.id_end } else { 0 };
        }
        self.next_id += 1;
        self.next_id - 1
    }

    /// The thread's OS id, cached in its sink cache (which names tick-timed calls with it).
    fn tid(&mut self) -> u32 {
        if self.local.thread_id() == 0 {
            // SAFETY: gettid has no preconditions.
            self.local.set_thread_id(unsafe { libc::gettid() } as u32);
        }
        self.local.thread_id()
    }
}

thread_local! {
    static STACK: UnsafeCell<CallStack> = const {
        UnsafeCell::new(CallStack {
            local: sink::Local::EMPTY,
            next_id: 0,
            fast_end: 0,
            depth: 0,
            outer: 0,
            id_end: 0,
            region: 0,
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
        // SAFETY: `s` is this thread's `STACK`, not referenced anywhere yet (the slot is
        // still null); the thread id is cached before any exit reads it.
        unsafe { (*s).tid() };
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

/// In a forked child, on its one thread: the thread's cached OS id is the parent thread's;
/// it is read again (records of the child name the child's thread, as its log's chunks do).
pub fn refresh_thread_id_after_fork() {
    let _ = with_stack(|s| {
        // SAFETY: gettid has no preconditions.
        s.local.set_thread_id(unsafe { libc::gettid() } as u32);
    });
}

/// A new correlation id (unique in the process, from 1; increasing on each thread).
pub fn new_correlation_id() -> u64 {
    with_stack(CallStack::new_id)
        .unwrap_or_else(|| NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed))
}

/// The correlation id of the outermost traced call active on this thread, if any: work enqueued
/// inside `hipLaunchKernel` (even through nested HSA calls) carries the HIP call's id.
pub fn current_correlation_id() -> Option<u64> {
    with_stack(|s| (s.depth > 0).then_some(s.outer)).flatten()
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

/// The tracer's work before a traced call, when the trampoline does not do it itself: takes
/// the call's correlation id and counts it active. Returns this thread's call state for
/// [`exit_ns`] and the id (`None` if the thread has no call state). The caller reads the start
/// time ([`clock::now_ns`]).
#[inline]
pub(crate) fn enter() -> Option<(*mut c_void, u64)> {
    with_stack(|s| {
        // Every call its own id, nested ones included (rocprofiler-sdk's `internal`); the
        // enclosing call is found from the thread's timeline after the run (the ancestor).
        let id = s.new_id();
        if s.depth == 0 {
            s.outer = id;
        }
        s.depth += 1;
        // From now on (or not) the trampolines take ids themselves, with this block.
        s.fast_end = if fast_enter_allowed() { s.id_end } else { 0 };
        (std::ptr::from_mut(s).cast::<c_void>(), id)
    })
}

/// When a traced call started, as its trampoline kept it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    /// A raw TSC value (the trampoline's own enter).
    Tsc(u64),
    /// Host-timeline ns (an enter through [`enter`]).
    Ns(u64),
}

/// The tracer's work after a traced call whose trampoline did the enter work (`start`: its raw
/// TSC): one [`ApiRecord`] tagged `tag` (see [`tag`]) with correlation id `id`. `state` is this
/// thread's call state (non-null).
///
/// The times stay raw: the call is appended timed in ticks ([`trace_records::ApiTicksRecord`]),
/// converted by the log's reader with the clock epoch its chunk carries, so the exit does no
/// arithmetic on them. It is never reached under collection periods ([`fast_enter_allowed`]),
/// so it does not check them.
#[inline(always)]
pub(crate) fn exit_tsc(state: *mut c_void, tag: u32, id: u64, start: u64) {
    let end = clock::tsc();
    let s = call_done(state);
    // The thread id is the one its sink cache holds (cached when the thread's state was first
    // used, `with_stack`).
    sink::emit_tick_call(&mut s.local, id, start, end, tag);
}

/// Counts the call done on this thread's state (`state`, as [`enter`] or the trampoline
/// found it) and returns the state.
#[inline(always)]
fn call_done<'a>(state: *mut c_void) -> &'a mut CallStack {
    // SAFETY: `state` is the calling thread's `CallStack` (the call returns on the thread that
    // made it, and the thread-local has no destructor, so it outlives the call); nothing else
    // holds a reference to it while the exit runs (the caller uses it and lets it go before
    // returning to the trampoline).
    let s = unsafe { &mut *state.cast::<CallStack>() };
    s.depth = s.depth.wrapping_sub(1);
    s
}

/// [`exit_tsc`] for a call entered through [`enter`] (`start` in ns).
#[inline]
pub(crate) fn exit_ns(state: *mut c_void, tag: u32, id: u64, start: u64) {
    finished(state, tag, id, Start::Ns(start), |s, record| {
        sink::emit_cached(&mut s.local, *record)
    });
}

/// The common part of every exit: counts the call done on this thread's state (`state`, as
/// [`enter`] or the trampoline found it) and hands `record` the thread's state and the call's
/// [`ApiRecord`] — unless it is outside the collection periods. Always inlined, so each exit
/// is specialised for its kind of start.
#[inline(always)]
fn finished(
    state: *mut c_void,
    tag: u32,
    correlation_id: u64,
    start: Start,
    record: impl FnOnce(&mut CallStack, &ApiRecord),
) {
    let (start, end) = match start {
        Start::Tsc(t) => clock::tsc_span_ns(t, clock::tsc()),
        Start::Ns(n) => (n, clock::now_ns()),
    };
    let s = call_done(state);
    // The thread id was cached when the thread's state was first used (`with_stack`).
    let api = ApiRecord::of_kind(tag, correlation_id, start, end, s.local.thread_id());
    // With collection periods the check is out of line (a tail call), so the common path makes
    // no call that returns to it.
    if crate::scope::enabled() {
        return record_if_collecting(s, api, record);
    }
    record(s, &api);
}

/// The end of [`finished`] under collection periods: `record` only if the call started inside
/// one.
#[cold]
#[inline(never)]
fn record_if_collecting(
    s: &mut CallStack,
    api: ApiRecord,
    record: impl FnOnce(&mut CallStack, &ApiRecord),
) {
    if crate::scope::collecting(api.start) {
        record(s, &api);
    }
}

/// What a trampoline that captures arguments hands the exit: where the call's argument words
/// are in its frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallFrame {
    /// The six integer argument registers as saved (`rdi` first), then the eight vector
    /// registers (16 bytes each) from word [`CallFrame::SSE_WORD`].
    pub regs: *const u64,
    /// The caller's stack arguments (the word above the return address first).
    pub stack: *const u64,
    /// `rax` after the call.
    pub rax: u64,
}

impl CallFrame {
    /// The word of `regs` where the saved vector registers start.
    pub const SSE_WORD: usize = 7;
}

/// Bytes kept of one C-string argument, as captured: word index, length (`u16`), text.
const STRING_ENTRY: usize = 3 + api_signatures::STRING_BYTES;

/// The exit of a call whose arguments are captured (`shape`: an [`api_signatures::Shape`]): one
/// [`trace_records::Tag::ApiArgs`] entry with the record, the words the signature has, `rax`,
/// and the C strings read now (after the call: an output buffer holds what the call wrote, an
/// input string is unchanged), each at most [`api_signatures::STRING_BYTES`] bytes, read
/// without ever faulting. `state`, `tag`, `id` and `start` as for [`exit_tsc`] and [`exit_ns`].
#[inline]
pub(crate) fn exit_args(
    state: *mut c_void,
    tag: u32,
    id: u64,
    start: Start,
    frame: &CallFrame,
    shape: u64,
) {
    finished(state, tag, id, start, |s, record| {
        emit_with_args(s, record, frame, shape)
    });
}

/// The rest of [`exit_args`]: the entry of a recorded call with its captured arguments.
#[inline(always)]
fn emit_with_args(s: &mut CallStack, record: &ApiRecord, frame: &CallFrame, shape: u64) {
    use trace_records::ApiArgsHeader;
    use zerocopy::IntoBytes;
    let shape = api_signatures::Shape(shape);
    let (n_int, n_sse, n_stack) = (
        shape.int_words().min(api_signatures::INT_REGS),
        shape.sse_words().min(api_signatures::SSE_REGS),
        shape.stack_words().min(api_signatures::STACK_WORDS),
    );
    let mut words =
        [0u64; api_signatures::INT_REGS + api_signatures::SSE_REGS + api_signatures::STACK_WORDS];
    // SAFETY: the trampoline's frame holds the 6 integer registers at `regs[0..6]` and the 8
    // vector registers at `regs[SSE_WORD..SSE_WORD + 16]`; `stack` is the caller's argument area, of which the
    // trampoline forwards 12 words (the counts are capped to those).
    unsafe {
        for (k, w) in words.iter_mut().enumerate().take(n_int) {
            *w = frame.regs.add(k).read();
        }
        for k in 0..n_sse {
            words[n_int + k] = frame.regs.add(CallFrame::SSE_WORD + 2 * k).read();
        }
        for k in 0..n_stack {
            words[n_int + n_sse + k] = frame.stack.add(k).read();
        }
    }
    let n = n_int + n_sse + n_stack;
    let mut strings = [[0u8; STRING_ENTRY]; api_signatures::MAX_STRINGS];
    let mut lengths = [0usize; api_signatures::MAX_STRINGS];
    let mut n_strings = 0;
    for (k, &w) in words.iter().enumerate().take(n) {
        if n_strings == api_signatures::MAX_STRINGS || !shape.is_string(k) || w == 0 {
            continue;
        }
        let entry = &mut strings[n_strings];
        let Some(len) = read_c_string(w, &mut entry[3..]) else {
            continue;
        };
        entry[0] = k as u8;
        entry[1..3].copy_from_slice(&(len as u16).to_le_bytes());
        lengths[n_strings] = 3 + len;
        n_strings += 1;
    }
    let mut rax = frame.rax;
    if shape.returns_in_memory() {
        let mut first = [0u8; 8];
        rax = match read_memory(rax, &mut first) {
            8 => u64::from_le_bytes(first),
            _ => 0,
        };
    }
    let header = ApiArgsHeader {
        rax,
        int_words: n_int as u8,
        sse_words: n_sse as u8,
        stack_words: n_stack as u8,
        strings: n_strings as u8,
        reserved: 0,
    };
    let mut parts: [&[u8]; 3 + api_signatures::MAX_STRINGS] =
        [&[]; 3 + api_signatures::MAX_STRINGS];
    parts[0] = record.as_bytes();
    parts[1] = header.as_bytes();
    parts[2] = words[..n].as_bytes();
    for k in 0..n_strings {
        parts[3 + k] = &strings[k][..lengths[k]];
    }
    sink::emit_parts_cached(
        &mut s.local,
        trace_records::Tag::ApiArgs,
        &parts[..3 + n_strings],
    );
}

/// Copies up to `buf.len()` bytes at `addr` of this process into `buf` without faulting (the
/// kernel copies, `process_vm_readv`): the bytes copied before the first unreadable page.
fn read_memory(addr: u64, buf: &mut [u8]) -> usize {
    const PAGE: u64 = 4096;
    // Two remote pieces split at the page boundary, so a readable first page is copied even
    // when the next one is not.
    let first = (PAGE - addr % PAGE).min(buf.len() as u64) as usize;
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = [
        libc::iovec {
            iov_base: addr as *mut c_void,
            iov_len: first,
        },
        libc::iovec {
            iov_base: addr.wrapping_add(first as u64) as *mut c_void,
            iov_len: buf.len() - first,
        },
    ];
    let pieces = if first == buf.len() { 1 } else { 2 };
    // SAFETY: `local` describes `buf`, writable for its length; the remote ranges are only read
    // by the kernel, which reports an unreadable one as an error instead of faulting.
    let n =
        unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), pieces, 0) };
    usize::try_from(n).unwrap_or(0)
}

/// Reads the C string at `addr` into `buf` (at most its length, without the NUL): its length,
/// or `None` if not even its first byte is readable.
fn read_c_string(addr: u64, buf: &mut [u8]) -> Option<usize> {
    let n = read_memory(addr, buf);
    if n == 0 {
        return None;
    }
    Some(buf[..n].iter().position(|&b| b == 0).unwrap_or(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_read_without_faulting() {
        let text = c"hello kernel";
        let mut buf = [0u8; 64];
        assert_eq!(read_c_string(text.as_ptr() as u64, &mut buf), Some(12));
        assert_eq!(&buf[..12], b"hello kernel");
        // An unmapped address: nothing, and no fault.
        assert_eq!(read_c_string(8, &mut buf), None);
        // A long string is cut to the buffer.
        let long = vec![b'x'; 300];
        let mut small = [0u8; 16];
        assert_eq!(read_c_string(long.as_ptr() as u64, &mut small), Some(16));
    }

    #[test]
    fn a_string_ending_at_an_unreadable_page_keeps_what_was_readable() {
        // SAFETY: a fresh anonymous mapping of two pages, the second made unreadable.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            libc::mprotect(p.cast::<u8>().add(4096).cast(), 4096, libc::PROT_NONE);
            let tail = p.cast::<u8>().add(4096 - 4);
            std::ptr::copy_nonoverlapping(b"abcd".as_ptr(), tail, 4);
            let mut buf = [0u8; 64];
            assert_eq!(read_c_string(tail as u64, &mut buf), Some(4));
            assert_eq!(&buf[..4], b"abcd");
            libc::munmap(p, 8192);
        }
    }
}
