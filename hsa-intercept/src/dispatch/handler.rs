//! The intercept-queue packet handler, on the runtime's interceptor thread: it harvests what
//! is finished (without waiting), and rewrites each kernel dispatch packet — the tool's
//! completion signal, a pending entry for harvesting, the installed instrument's packets
//! around it, and a barrier-AND packet completing the application's own signal — in
//! [`trace_packet`]. Anything else passes through unchanged.

use super::harvest::{harvest, wake_harvester};
use super::instrument::{DispatchInfo, Injection, MAX_AFTER, MAX_BEFORE, installed};
use super::queues::{CORRELATION_RING, Instrumented, PENDING, Pending, QueueState};
use super::signals::take_signal;
use super::symbols::kernel;
use crate::hsa::*;
use crate::sink;
use crate::tracer::new_correlation_id;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use trace_records::KernelDispatchRecord;
use trace_records::docs::WarningKind;

static NEXT_DISPATCH: AtomicU64 = AtomicU64::new(1);

pub(super) unsafe extern "C" fn handler(
    packets: *const c_void,
    count: u64,
    user_index: u64,
    data: *mut c_void,
    writer: PacketWriter,
) {
    // The packets out go to the writer in stack-sized batches, in order (a handler may call
    // its writer any number of times).
    let mut out = Batch::default();
    let flush = |out: &mut Batch| {
        if out.len > 0 {
            // SAFETY: forwards the (possibly rewritten) packets to the next handler.
            unsafe { writer(out.packets.as_ptr().cast(), out.len as u64) };
            out.len = 0;
        }
    };
    // SAFETY: `data` is the leaked QueueState registered with this handler.
    let q = unsafe { &*(data as *const QueueState) };
    // On the runtime's interceptor thread: harvest what is finished, never wait for others.
    let _ = std::panic::catch_unwind(|| harvest(q, false));
    for k in 0..count as usize {
        // SAFETY: the runtime passes `count` consecutive 64-byte packets.
        let raw: [u8; 64] = unsafe { packets.cast::<[u8; 64]>().add(k).read() };
        if out.len + MAX_PER_DISPATCH > OUT_BATCH {
            flush(&mut out);
        }
        let start = out.len;
        let traced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trace_packet(q, raw, user_index + k as u64, &mut out)
        }));
        if traced.is_err() {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                sink::warn(
                    WarningKind::Internal,
                    "a panic while tracing a kernel dispatch; it ran untraced",
                );
            }
            out.len = start;
            out.push(raw);
        }
    }
    flush(&mut out);
}

/// Packets on their way to the writer.
struct Batch {
    packets: [[u8; 64]; OUT_BATCH],
    len: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            packets: [[0; 64]; OUT_BATCH],
            len: 0,
        }
    }
}

impl Batch {
    fn push(&mut self, packet: [u8; 64]) {
        self.packets[self.len] = packet;
        self.len += 1;
    }
}

/// The most packets one packet in becomes: an instrument's before packets, the kernel, its
/// after packets and the barrier-AND completing the application's signal.
const MAX_PER_DISPATCH: usize = MAX_BEFORE + 1 + MAX_AFTER + 1;

/// Packets the handler hands to its writer at a time.
const OUT_BATCH: usize = 16;

/// Appends to `out` the packets to forward for `raw` (at ring index `index`): a kernel
/// dispatch gets a completion signal of the tool's and is queued for harvesting, with the
/// installed instrument's packets around it if it wants this dispatch, followed — if the
/// application gave it a signal — by a barrier-AND packet that completes that signal once
/// everything before it is done; anything else, or a dispatch the tool cannot trace, passes
/// through unchanged.
fn trace_packet(q: &QueueState, raw: [u8; 64], index: u64, out: &mut Batch) {
    let header = u16::from_le_bytes([raw[0], raw[1]]);
    if header & 0xFF != PACKET_KERNEL_DISPATCH {
        return out.push(raw);
    }
    // Outside `--collection-period`'s windows a dispatch runs untraced and uncounted.
    if !crate::scope::collecting_now() {
        return out.push(raw);
    }
    let Some(f) = fns() else { return out.push(raw) };
    let Some(signal) = take_signal(f) else {
        return out.push(raw);
    };
    // SAFETY: a kernel dispatch packet has this layout (any bytes are valid).
    let mut p: KernelDispatchPacket = unsafe { std::mem::transmute(raw) };
    let slot = &q.correlations[index as usize % CORRELATION_RING];
    // The enqueuing thread in the low half, the ROCTx range open on it in the high half.
    let enqueued = slot.1.load(Ordering::Acquire);
    let (thread, region) = (enqueued as u32, (enqueued >> 32) as u32);
    let correlation = match thread {
        0 => new_correlation_id(),
        _ => slot.0.load(Ordering::Relaxed),
    };
    let original = p.completion_signal;
    p.completion_signal = signal;
    let instrument = installed();
    let (kernel_id, kernel_name) = kernel(p.kernel_object, instrument.is_some());
    let record = KernelDispatchRecord {
        dispatch_id: NEXT_DISPATCH.fetch_add(1, Ordering::Relaxed),
        kernel_id,
        correlation_id: correlation,
        start: 0,
        end: 0,
        queue_id: q.queue_id,
        stream_id: 0,
        agent_node_id: q.agent_node,
        thread_id: thread,
        grid: [p.grid_size_x, p.grid_size_y, p.grid_size_z],
        workgroup: [
            p.workgroup_size_x.into(),
            p.workgroup_size_y.into(),
            p.workgroup_size_z.into(),
        ],
        private_segment_size: p.private_segment_size,
        group_segment_size: p.group_segment_size,
        region,
        reserved: 0,
    };
    // Built (400 bytes zeroed) only when an instrument may add packets.
    let mut injection = instrument.map(|_| Injection::default());
    let instrumented = instrument
        .zip(injection.as_mut())
        .and_then(|(instrument, injection)| {
            let info = DispatchInfo {
                agent: q.agent,
                agent_node: q.agent_node,
                kernel_name: kernel_name.as_deref(),
                record: &record,
            };
            let token = instrument.inject(&info, injection)?;
            // Without an after packet, the kernel's own signal says when it is all done.
            let done = match injection.after_packets().is_empty() {
                true => signal,
                false => match take_signal(f) {
                    Some(done) => {
                        injection.complete_last_with(done);
                        done
                    }
                    None => {
                        instrument.discarded(token);
                        return None;
                    }
                },
            };
            Some(Instrumented { token, done })
        });
    // `instrumented` is only ever set with `injection` built.
    let injected = injection.as_ref().filter(|_| instrumented.is_some());
    if injected.is_some_and(|i| !i.before_packets().is_empty())
        || super::instrument::serializes_all()
    {
        // The kernel waits for the instrument's packets before it (or, with
        // --att-serialize-all, for everything before it).
        p.header |= HEADER_BARRIER;
    }
    // Counted before it can be claimed, so the count never drops below zero. The harvester
    // parks only once nothing has been pending for a while.
    let idle = PENDING.fetch_add(1, Ordering::AcqRel) == 0;
    {
        let mut ledger = q.ledger();
        let seq = ledger.next;
        ledger.next += 1;
        ledger.queue.push_back(Pending {
            record,
            signal,
            seq,
            instrumented,
        });
    }
    if idle {
        wake_harvester();
    }
    if let Some(i) = injected {
        i.before_packets().iter().for_each(|b| out.push(*b));
    }
    // SAFETY: the packet struct is 64 plain bytes.
    out.push(unsafe { std::mem::transmute::<KernelDispatchPacket, [u8; 64]>(p) });
    if let Some(i) = injected {
        i.after_packets().iter().for_each(|a| out.push(*a));
    }
    // The application's signal, completed on the GPU after everything before it (the barrier
    // bit makes the packet wait for it), with the kernel's release scope.
    if original != 0 {
        let b = BarrierAndPacket {
            header: PACKET_BARRIER_AND | HEADER_BARRIER | (p.header & HEADER_RELEASE_SCOPE_MASK),
            completion_signal: original,
            ..BarrierAndPacket::default()
        };
        // SAFETY: the packet struct is 64 plain bytes.
        out.push(unsafe { std::mem::transmute::<BarrierAndPacket, [u8; 64]>(b) });
    }
}
