//! Intercept queues (`hsa_amd_queue_intercept_create` / `_register`), with ROCr's semantics
//! (`intercept_queue.cpp`):
//!
//! - The application writes packets into a software ring and rings its doorbell. A **host**
//!   store to that doorbell (`hsa_signal_store_*`) processes the ring right there, on the
//!   storing thread, under the queue's lock: the packets from the queue's cursor up to the
//!   write index (at most one ring's worth) pass one at a time to the LAST registered handler,
//!   whose `writer` forwards to the next-lower handler; the lowest writer is the runtime's own
//!   submit into the internal hardware queue. Handlers may call `writer` 0..n times, only from
//!   inside the handler call (the writer finds its place through a thread-local cursor, as
//!   ROCr's `Cursor`).
//! - A doorbell store made while this thread is already inside a handler (the cursor is set)
//!   is not processed recursively: it goes to the queue's *asynchronous doorbell*, a signal
//!   with an asynchronous handler on the runtime's handler thread, which processes the ring
//!   there. Device-side doorbell writes would take the same path (nothing in the simulator
//!   writes one).
//! - Submission to the hardware queue is all or nothing per handler output: if the hardware
//!   ring has no room, the packets wait in an overflow buffer, a *retry* barrier-AND packet
//!   whose completion signal is the asynchronous doorbell is put on the hardware queue (one
//!   at a time), and processing stops after the packet whose output overflowed. When the
//!   packet processor reaches the retry barrier, the asynchronous doorbell changes and its
//!   handler submits the overflow and goes on with the ring.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::guard::{guard, write_out};
use crate::queue::{self, ErrorCallback, QueueInner, Role};
use crate::runtime;
use crate::signal;
use crate::types::*;

/// `writer(const void* packets, uint64_t count)`.
pub type WriterFn = unsafe extern "C" fn(*const c_void, u64);
/// `handler(packets, count, user_pkt_index, data, writer)`.
pub type HandlerFn = unsafe extern "C" fn(*const c_void, u64, u64, *mut c_void, WriterFn);
/// The callback of an intercept-marker packet: `(marker, hw queue, hw packet index)`.
type MarkerCallback = unsafe extern "C" fn(*const c_void, *mut HsaQueue, u64);

/// The asynchronous doorbell's resting value (ROCr's `DOORBELL_MAX`, all ones).
pub const DOORBELL_MAX: i64 = -1;

/// The header of the retry barrier: BARRIER_AND with the barrier bit, no fences.
const RETRY_BARRIER_HEADER: u16 = PACKET_TYPE_BARRIER_AND as u16 | (1 << 8);

/// What the queue's lock protects (ROCr's `lock_` over `next_packet_`, `overflow_`,
/// `retry_index_`).
#[derive(Default)]
struct Processing {
    /// The next software-ring index to process.
    next_packet: u64,
    /// Final packets the hardware ring had no room for (the output of one software packet).
    overflow: Vec<RawPacket>,
    /// Hardware-ring index of the last retry barrier.
    retry_index: u64,
}

/// The intercept-specific part of a software queue.
pub struct InterceptState {
    /// The internal hardware queue the lowest writer submits to.
    pub hw: Arc<QueueInner>,
    /// Registered handlers, the first registered first. Replaced (not mutated) on
    /// registration, so processing takes a snapshot without copying the list and a handler
    /// may register another without deadlock.
    handlers: Mutex<Arc<Vec<(HandlerFn, usize)>>>,
    processing: Mutex<Processing>,
    /// Cleared by `hsa_queue_inactivate` and destroy: doorbell stores are then ignored.
    active: AtomicBool,
}

impl InterceptState {
    /// A state forwarding to `hw`, with no handler yet.
    pub fn new(hw: Arc<QueueInner>) -> InterceptState {
        InterceptState {
            hw,
            handlers: Mutex::new(Arc::new(Vec::new())),
            processing: Mutex::new(Processing::default()),
            active: AtomicBool::new(true),
        }
    }

    /// Registers a handler on top of the existing ones.
    pub fn register(&self, handler: HandlerFn, data: *mut c_void) {
        let mut handlers = self.handlers.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = Vec::clone(&handlers);
        next.push((handler, data as usize));
        *handlers = Arc::new(next);
    }

    /// Doorbell stores are ignored from now on.
    pub fn deactivate(&self) {
        self.active.store(false, Ordering::Release);
    }

    fn snapshot(&self) -> Arc<Vec<(HandlerFn, usize)>> {
        Arc::clone(&self.handlers.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Where a writer call goes: the handler at `level` is running; its writer forwards to the
/// handler at `level - 1`, or from level 0 to `sink` (the runtime's submit).
struct Frame<'a> {
    sink: &'a dyn Fn(*const RawPacket, u64),
    handlers: &'a [(HandlerFn, usize)],
    level: Cell<usize>,
    user_index: u64,
}

thread_local! {
    /// The frame of the handler call in progress on this thread (ROCr's `Cursor`); non-null
    /// means a doorbell store on this thread is recursive.
    static CURSOR: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// Whether this thread is inside an intercept handler call.
fn inside_handler() -> bool {
    CURSOR.with(|c| !c.get().is_null())
}

fn call_handler(frame: &Frame<'_>, packets: *const c_void, count: u64) {
    let (handler, data) = frame.handlers[frame.level.get()];
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: a handler registered with hsa_amd_queue_intercept_register, its data, and
        // packets valid for the duration of the call.
        unsafe {
            handler(
                packets,
                count,
                frame.user_index,
                data as *mut c_void,
                writer,
            )
        }
    }));
}

/// The writer handed to every handler.
unsafe extern "C" fn writer(packets: *const c_void, count: u64) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let frame = CURSOR.with(Cell::get);
        if frame.is_null() {
            eprintln!("libhsa-runtime64 (sim): intercept writer called outside its handler");
            return;
        }
        // SAFETY: set by `pass` on this thread for the duration of the handler call.
        let frame = unsafe { &*frame.cast::<Frame<'_>>() };
        if count == 0 || packets.is_null() {
            return;
        }
        let level = frame.level.get();
        if level == 0 {
            (frame.sink)(packets.cast(), count);
        } else {
            // Restored after: the same handler may call its writer more than once.
            frame.level.set(level - 1);
            call_handler(frame, packets, count);
            frame.level.set(level);
        }
    }));
}

/// Passes one packet through `handlers` (the last one first) to `sink`, with this thread's
/// cursor set for the call.
pub fn pass(
    handlers: &[(HandlerFn, usize)],
    packet: *const RawPacket,
    user_index: u64,
    sink: &dyn Fn(*const RawPacket, u64),
) {
    if handlers.is_empty() {
        return sink(packet, 1);
    }
    let frame = Frame {
        sink,
        handlers,
        level: Cell::new(handlers.len() - 1),
        user_index,
    };
    let previous = CURSOR.with(|c| c.replace((&raw const frame).cast()));
    call_handler(&frame, packet.cast(), 1);
    CURSOR.with(|c| c.set(previous));
}

fn is_marker(packet: &RawPacket) -> bool {
    packet.packet_type() == PACKET_TYPE_VENDOR_SPECIFIC
        && packet.0[2] == AMD_AQL_FORMAT_INTERCEPT_MARKER
}

/// Submits `count` final packets (any alignment) to the hardware queue, ROCr's way: all of
/// them or none (unless they could never fit at once: then what fits, leaving a slot for the
/// retry barrier), intercept markers calling their callback with the hardware index the next
/// packet gets (never written to the ring), the first packet's header published last and the
/// doorbell rung once. If not everything went, a retry barrier completing `retry` is put on
/// the ring (unless one is already pending). Returns how many of the packets were consumed.
/// Called under the queue's lock (the only producer of the hardware ring).
fn submit_to_hw(
    hw: &QueueInner,
    retry_index: &mut u64,
    retry: Signal,
    packets: *const RawPacket,
    count: u64,
) -> u64 {
    if count == 0 {
        return 0;
    }
    // SAFETY: the caller passes `count` packets of 64 bytes (alignment not assumed).
    let at = |k: u64| unsafe { packets.add(k as usize).read_unaligned() };
    let markers = (0..count).filter(|&k| is_marker(&at(k))).count() as u64;
    let size = u64::from(hw.size);
    let block = hw.block();
    let mut write = block.write_index.load(Ordering::Acquire);
    let read = block.read_index.load(Ordering::Acquire);
    let free = size - (write - read);
    // The packet processor advances the read index before it processes the packet there, so
    // a retry barrier at or behind the read index may already have run.
    let pending_retry = *retry_index > read;
    let wanted = count - markers;
    let reserve = u64::from(!pending_retry);
    let submitted = if wanted >= size {
        free.saturating_sub(reserve)
    } else if free < wanted + reserve {
        0
    } else {
        wanted
    };
    if submitted < wanted && !pending_retry && free >= 1 {
        let barrier = write;
        write += 1;
        let mut packet = RawPacket([0; 64]);
        packet.0[56..64].copy_from_slice(&retry.handle.to_le_bytes());
        hw.write_packet(barrier, &packet, RETRY_BARRIER_HEADER);
        block.write_index.store(write, Ordering::Release);
        signal::store(hw.doorbell, barrier as i64);
        *retry_index = barrier;
    }
    let mut left = submitted;
    let mut written = 0u64;
    let mut first_header = None;
    let mut consumed = 0u64;
    while consumed < count && (left > 0 || is_marker(&at(consumed))) {
        let packet = at(consumed);
        consumed += 1;
        if is_marker(&packet) {
            // Before the packets after it are visible to the packet processor.
            let callback = packet.u64_at(8);
            if callback != 0 {
                // SAFETY: the marker's callback with the documented signature.
                let callback = unsafe { std::mem::transmute::<u64, MarkerCallback>(callback) };
                let _ = std::panic::catch_unwind(|| {
                    // SAFETY: the marker (a valid packet copy), the hardware queue, its index.
                    unsafe { callback((&raw const packet).cast(), hw.queue_ptr(), write + written) }
                });
            }
            continue;
        }
        let index = write + written;
        if written == 0 {
            // The first header stays INVALID until every packet is in place.
            hw.write_body(index, &packet);
            first_header = Some(packet.header());
        } else {
            hw.write_packet(index, &packet, packet.header());
        }
        written += 1;
        left -= 1;
    }
    if let Some(header) = first_header {
        block.write_index.store(write + written, Ordering::Release);
        hw.publish_header(write, header);
        signal::store(hw.doorbell, (write + written - 1) as i64);
    }
    consumed
}

/// Processes an intercept queue's software ring (ROCr's `InterceptQueue::StoreRelaxed` on the
/// host path): the overflow first, then every valid packet from the cursor, each through the
/// handlers, until the ring's next packet is not valid, one ring's worth is done, or a
/// packet's output overflowed.
fn process(queue: &QueueInner, state: &InterceptState) {
    if !state.active.load(Ordering::Acquire) {
        return;
    }
    let mut guard = state.processing.lock().unwrap_or_else(|e| e.into_inner());
    let p = &mut *guard;
    let retry = queue.doorbell;
    if !p.overflow.is_empty() {
        let n = p.overflow.len() as u64;
        let done = submit_to_hw(&state.hw, &mut p.retry_index, retry, p.overflow.as_ptr(), n);
        if done < n {
            p.overflow.drain(..done as usize);
            // No room for the overflow, so none for anything else either.
            return;
        }
        p.overflow.clear();
    }
    let handlers = state.snapshot();
    let size = u64::from(queue.size);
    let end = queue
        .block()
        .write_index
        .load(Ordering::Acquire)
        .min(p.next_packet + size);
    let processing = std::cell::RefCell::new(&mut *p);
    let sink = |packets: *const RawPacket, count: u64| {
        let mut p = processing.borrow_mut();
        let p = &mut **p;
        let done = submit_to_hw(&state.hw, &mut p.retry_index, retry, packets, count);
        if done < count {
            if !p.overflow.is_empty() {
                eprintln!(
                    "libhsa-runtime64 (sim): intercept overflow buffer not empty (a handler \
                     wrote twice into a full queue)"
                );
            }
            // SAFETY: `count` packets as the writer was given them.
            p.overflow
                .extend((done..count).map(|k| unsafe { packets.add(k as usize).read_unaligned() }));
        }
    };
    let mut i = processing.borrow().next_packet;
    while i < end {
        if queue.header_of(i).load(Ordering::Acquire) as u8 == PACKET_TYPE_INVALID {
            break;
        }
        // The slot is the queue's until its header is invalidated; handlers read it in place.
        pass(&handlers, queue.slot(i), i, &sink);
        queue
            .header_of(i)
            .store(HEADER_INVALID | (1 << 8), Ordering::Release);
        i += 1;
        // Only one packet's output may wait in the overflow; the retry barrier resumes.
        if !processing.borrow().overflow.is_empty() {
            break;
        }
    }
    processing.borrow_mut().next_packet = i;
    queue.block().read_index.store(i, Ordering::Release);
}

/// A host store of `value` to the doorbell of the intercept queue `queue` (its
/// `hsa_queue_t*`): processed here, or — from inside a handler — deferred to the asynchronous
/// doorbell.
pub fn host_doorbell_store(queue: u64, doorbell: Signal, value: i64) {
    if inside_handler() {
        // ROCr: "If called recursively defer to async doorbell thread."
        signal::store(doorbell, value);
        return;
    }
    let Some(inner) = queue::lookup(queue as *const HsaQueue) else {
        return;
    };
    if let Role::Intercept(state) = &inner.role {
        process(&inner, state);
    }
}

/// The asynchronous doorbell's handler (ROCr's `HandleAsyncDoorbell`), on the runtime's
/// handler thread: back to the resting value, then the ring is processed as a host store
/// would. Ends (returns false) once the queue is gone or stopping.
unsafe extern "C" fn async_doorbell(_value: i64, arg: *mut c_void) -> bool {
    let Some(inner) = queue::lookup(arg as *const HsaQueue) else {
        return false;
    };
    let Role::Intercept(state) = &inner.role else {
        return false;
    };
    if inner.is_stopping() {
        return false;
    }
    signal::store(inner.doorbell, DOORBELL_MAX);
    process(&inner, state);
    true
}

/// `hsa_amd_queue_intercept_create`.
pub unsafe extern "C" fn hsa_amd_queue_intercept_create(
    agent: Agent,
    size: u32,
    type_: u32,
    callback: Option<ErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        if queue.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // ROCr's minimum for the retry protocol: a packet, a retry barrier being processed
        // and room for a new one.
        if size < 3 {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let hw = queue::create(
            rt.clone(),
            agent,
            size,
            type_,
            callback,
            data,
            Role::Hardware,
        )?;
        let state = InterceptState::new(hw.clone());
        let sw = match queue::create(
            rt,
            agent,
            size,
            type_,
            callback,
            data,
            Role::Intercept(state),
        ) {
            Ok(sw) => sw,
            Err(status) => {
                queue::destroy(&hw);
                return Err(status);
            }
        };
        hw.report_queue
            .store(sw.queue_ptr() as u64, Ordering::Release);
        // The doorbell is the asynchronous doorbell too: host stores are routed to
        // `host_doorbell_store`, value changes (a deferred store, a retry barrier completing)
        // wake its handler.
        signal::store(sw.doorbell, DOORBELL_MAX);
        signal::mark_intercept_doorbell(sw.doorbell, sw.queue_ptr() as u64);
        signal::add_handler(
            sw.doorbell,
            CONDITION_NE,
            DOORBELL_MAX,
            async_doorbell,
            sw.queue_ptr().cast(),
        );
        // SAFETY: non-null and writable per the API.
        unsafe { write_out(queue, sw.queue_ptr()) }
    })
}

/// `hsa_amd_queue_intercept_register`.
pub unsafe extern "C" fn hsa_amd_queue_intercept_register(
    queue: *mut HsaQueue,
    handler: Option<HandlerFn>,
    user_data: *mut c_void,
) -> Status {
    guard(|| {
        let handler = handler.ok_or(ERROR_INVALID_ARGUMENT)?;
        let inner = queue::lookup(queue).ok_or(ERROR_INVALID_QUEUE)?;
        match &inner.role {
            Role::Intercept(state) => {
                state.register(handler, user_data);
                Ok(())
            }
            Role::Hardware => Err(ERROR_INVALID_QUEUE),
        }
    })
}
