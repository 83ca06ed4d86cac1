//! The API tracer: one call stack per thread (correlation ids, start times, the ROCTx region,
//! the thread's sink cache), and the enter and exit work around every traced call that turns it
//! into one [`ApiRecord`].
//!
//! Every traced call takes a correlation id of its own, a call made inside another (an HSA
//! call under `hipMemcpy`, `hsa_agent_get_info` in an `hsa_iterate_agents` callback) included,
//! so the ids are unique in every format; the work a call enqueues (dispatches, copies,
//! allocations) carries the id of the outermost call active on the thread
//! ([`current_correlation_id`]), and the enclosing call of a nested one is its ancestor.
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
        // Every call its own id, nested ones included (rocprofiler-sdk's `internal`); the
        // enclosing call is found from the thread's timeline after the run (the ancestor).
        let correlation = s.new_id();
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
    finished(tag, state, |s, record| {
        sink::emit_cached(&mut s.local, record)
    });
}

/// The common part of every exit: pops the call from this thread's stack (`state`, as
/// [`on_enter`] returned it) and hands `record` the thread's state and the call's
/// [`ApiRecord`] — unless it is not recorded (no call state, deeper than [`MAX_DEPTH`], outside
/// the collection periods). Always inlined, so the plain exit is the code it was before the
/// two exits shared this.
#[inline(always)]
fn finished(tag: u32, state: *mut c_void, record: impl FnOnce(&mut CallStack, &ApiRecord)) {
    let end = now_ns();
    if state.is_null() {
        return;
    }
    // SAFETY: `state` is the calling thread's `CallStack` (the call returns on the thread that
    // made it, and the thread-local has no destructor, so it outlives the call); nothing else
    // holds a reference to it while the exit runs (the caller uses it and lets it go before
    // returning to the trampoline).
    let s = unsafe { &mut *state.cast::<CallStack>() };
    s.depth = s.depth.saturating_sub(1);
    if s.depth >= MAX_DEPTH {
        return;
    }
    let (correlation_id, start) = s.frames[s.depth];
    if !crate::scope::collecting(start) {
        return;
    }
    let api = ApiRecord {
        correlation_id,
        start,
        end,
        thread_id: s.tid(),
        operation: tag as u16,
        domain: (tag >> 16) as u8,
        reserved: 0,
    };
    record(s, &api);
}

/// What a trampoline that captures arguments hands the exit: where the call's argument words
/// are in its frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallFrame {
    /// The six integer argument registers as saved (`rdi` first), then `rax` and the slot, then
    /// the eight vector registers (16 bytes each) from word 10.
    pub regs: *const u64,
    /// The caller's stack arguments (the word above the return address first).
    pub stack: *const u64,
    /// `rax` after the call.
    pub rax: u64,
}

/// Bytes kept of one C-string argument, as captured: word index, length (`u16`), text.
const STRING_ENTRY: usize = 3 + api_signatures::STRING_BYTES;

/// [`on_exit`] for a call whose arguments are captured (`shape`: an
/// [`api_signatures::Shape`]): one [`trace_records::Tag::ApiArgs`] entry with the record, the
/// words the signature has, `rax`, and the C strings read now (after the call: an output
/// buffer holds what the call wrote, an input string is unchanged), each at most
/// [`api_signatures::STRING_BYTES`] bytes, read without ever faulting.
#[inline]
pub(crate) fn on_exit_args(tag: u32, state: *mut c_void, frame: &CallFrame, shape: u64) {
    finished(tag, state, |s, record| {
        emit_with_args(s, record, frame, shape)
    });
}

/// The rest of [`on_exit_args`]: the entry of a recorded call with its captured arguments.
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
    // vector registers at `regs[10..26]`; `stack` is the caller's argument area, of which the
    // trampoline forwards 12 words (the counts are capped to those).
    unsafe {
        for (k, w) in words.iter_mut().enumerate().take(n_int) {
            *w = frame.regs.add(k).read();
        }
        for k in 0..n_sse {
            words[n_int + k] = frame.regs.add(10 + 2 * k).read();
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
