//! Intercept queues (`hsa_amd_queue_intercept_create` / `_register`), with ROCr's semantics:
//! the application writes into a software ring whose doorbell wakes a runtime thread; that
//! thread consumes the packets one at a time and passes each to the LAST registered handler;
//! a handler's `writer` forwards to the next-lower handler, and the lowest writer copies the
//! packets into the internal hardware queue. Handlers may call `writer` 0..n times, only from
//! inside the handler call (the writer finds its place through a thread-local frame).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::guard::{guard, write_out};
use crate::queue::{self, ErrorCallback, QueueInner, Role};
use crate::runtime;
use crate::types::*;

/// `writer(const void* packets, uint64_t count)`.
pub type WriterFn = unsafe extern "C" fn(*const c_void, u64);
/// `handler(packets, count, user_pkt_index, data, writer)`.
pub type HandlerFn = unsafe extern "C" fn(*const c_void, u64, u64, *mut c_void, WriterFn);
/// The callback of an intercept-marker packet: `(marker, hw queue, hw packet index)`.
type MarkerCallback = unsafe extern "C" fn(*const c_void, *mut HsaQueue, u64);

/// The intercept-specific part of a software queue.
pub struct InterceptState {
    /// The internal hardware queue the lowest writer submits to.
    pub hw: Arc<QueueInner>,
    /// Replaced (not mutated) on registration, so the consumer keeps a snapshot without
    /// copying the list.
    handlers: Mutex<Arc<Vec<(HandlerFn, usize)>>>,
    /// Bumped on every registration, so the consumer re-takes its snapshot only when it changed.
    generation: AtomicU64,
}

impl InterceptState {
    /// A state forwarding to `hw`, with no handler yet.
    pub fn new(hw: Arc<QueueInner>) -> InterceptState {
        InterceptState {
            hw,
            handlers: Mutex::new(Arc::new(Vec::new())),
            generation: AtomicU64::new(0),
        }
    }

    /// Registers a handler on top of the existing ones.
    pub fn register(&self, handler: HandlerFn, data: *mut c_void) {
        let mut handlers = self.handlers.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = Vec::clone(&handlers);
        next.push((handler, data as usize));
        *handlers = Arc::new(next);
        // Bumped under the lock: a consumer that reads this generation then takes the lock and
        // gets this list or a newer one.
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The current handlers if they changed since `seen` (updated), else `None`.
    fn handlers_since(&self, seen: &mut Option<u64>) -> Option<Arc<Vec<(HandlerFn, usize)>>> {
        let generation = self.generation.load(Ordering::Acquire);
        if *seen == Some(generation) {
            return None;
        }
        *seen = Some(generation);
        Some(Arc::clone(
            &self.handlers.lock().unwrap_or_else(|e| e.into_inner()),
        ))
    }
}

/// Where a writer call goes: the handler at `level` is running; its writer forwards to
/// `level - 1`, or to the hardware queue from level 0.
struct Frame<'a> {
    sink: &'a dyn Fn(&[RawPacket]),
    handlers: &'a [(HandlerFn, usize)],
    level: usize,
    user_index: u64,
}

thread_local! {
    static FRAME: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

fn call_handler(
    sink: &dyn Fn(&[RawPacket]),
    handlers: &[(HandlerFn, usize)],
    level: usize,
    user_index: u64,
    packets: *const c_void,
    count: u64,
) {
    let frame = Frame {
        sink,
        handlers,
        level,
        user_index,
    };
    let previous = FRAME.with(|f| f.replace((&raw const frame).cast()));
    let (handler, data) = handlers[level];
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: a handler registered with hsa_amd_queue_intercept_register, its data, and
        // packets valid for the duration of the call.
        unsafe { handler(packets, count, user_index, data as *mut c_void, writer) }
    });
    FRAME.with(|f| f.set(previous));
}

/// Hands `count` packets (any alignment) to `sink` as aligned copies, a stack batch at a time.
fn forward_packets(packets: *const c_void, count: u64, sink: &dyn Fn(&[RawPacket])) {
    const BATCH: usize = 16;
    let mut batch = [RawPacket([0; 64]); BATCH];
    let mut done = 0usize;
    while done < count as usize {
        let n = (count as usize - done).min(BATCH);
        for (k, slot) in batch[..n].iter_mut().enumerate() {
            // SAFETY: the caller passes `count` packets of 64 bytes (alignment not assumed).
            *slot = unsafe { packets.cast::<RawPacket>().add(done + k).read_unaligned() };
        }
        sink(&batch[..n]);
        done += n;
    }
}

/// The writer handed to every handler.
unsafe extern "C" fn writer(packets: *const c_void, count: u64) {
    let _ = std::panic::catch_unwind(|| {
        let frame = FRAME.with(Cell::get);
        if frame.is_null() {
            eprintln!("libhsa-runtime64 (sim): intercept writer called outside its handler");
            return;
        }
        // SAFETY: set by `call_handler` on this thread for the duration of the handler call.
        let frame = unsafe { &*frame.cast::<Frame<'_>>() };
        if count == 0 || packets.is_null() {
            return;
        }
        if frame.level == 0 {
            forward_packets(packets, count, frame.sink);
        } else {
            call_handler(
                frame.sink,
                frame.handlers,
                frame.level - 1,
                frame.user_index,
                packets,
                count,
            );
        }
    });
}

/// Passes one packet through `handlers` (the last one first) to `sink`.
pub fn pass(
    handlers: &[(HandlerFn, usize)],
    packet: &RawPacket,
    user_index: u64,
    sink: &dyn Fn(&[RawPacket]),
) {
    if handlers.is_empty() {
        sink(std::slice::from_ref(packet));
    } else {
        call_handler(
            sink,
            handlers,
            handlers.len() - 1,
            user_index,
            (packet as *const RawPacket).cast(),
            1,
        );
    }
}

/// The lowest writer: intercept markers call their callback with the hardware write index
/// (never written to the ring); everything else is copied into the hardware queue.
fn submit_to_hw(hw: &QueueInner, packets: &[RawPacket]) {
    // Runs of ordinary packets go to the ring as they are; a marker ends a run.
    let mut run_start = 0;
    for (k, packet) in packets.iter().enumerate() {
        if packet.packet_type() == PACKET_TYPE_VENDOR_SPECIFIC
            && packet.0[2] == AMD_AQL_FORMAT_INTERCEPT_MARKER
        {
            hw.submit(&packets[run_start..k]);
            run_start = k + 1;
            let callback = packet.u64_at(8);
            if callback != 0 {
                let index = hw.block().write_index.load(Ordering::Acquire);
                // SAFETY: the marker's callback with the documented signature.
                let callback = unsafe { std::mem::transmute::<u64, MarkerCallback>(callback) };
                let _ = std::panic::catch_unwind(|| {
                    // SAFETY: the marker (a valid packet copy), the hardware queue, its index.
                    unsafe { callback((packet as *const RawPacket).cast(), hw.queue_ptr(), index) }
                });
            }
        }
    }
    hw.submit(&packets[run_start..]);
}

/// The consumer thread of an intercept queue's software ring.
pub fn run_consumer(queue: &QueueInner) {
    let Role::Intercept(state) = &queue.role else {
        return;
    };
    let hw = state.hw.clone();
    let sink = move |packets: &[RawPacket]| submit_to_hw(&hw, packets);
    let mut seen = None;
    let mut handlers = Arc::new(Vec::new());
    queue.consume_packets(|packet, index| {
        if let Some(current) = state.handlers_since(&mut seen) {
            handlers = current;
        }
        pass(&handlers, packet, index, &sink);
    });
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
