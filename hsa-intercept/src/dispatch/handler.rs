//! The intercept-queue packet handler, on the runtime's interceptor thread: it harvests what
//! is finished (without waiting), and rewrites each kernel dispatch packet — the tool's
//! completion signal, a pending entry for harvesting, and a barrier-AND packet completing the
//! application's own signal — in [`trace_packet`]. Anything else passes through unchanged.

use super::correlation::CORRELATION_RING;
use super::harvest::{harvest, wake_harvester};
use super::queues::{PENDING, Pending, QueueState};
use super::signals::take_signal;
use super::symbols::kernel_id;
use crate::api::new_correlation_id;
use crate::hsa::*;
use crate::sink;
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
    // Each packet in gives one packet out; they go to the writer in stack-sized batches, in
    // order (a handler may call its writer any number of times).
    let mut out = [[0u8; 64]; OUT_BATCH];
    let mut len = 0;
    let flush = |out: &[[u8; 64]]| {
        // SAFETY: forwards the (possibly rewritten) packets to the next handler.
        unsafe { writer(out.as_ptr().cast(), out.len() as u64) };
    };
    // SAFETY: `data` is the leaked QueueState registered with this handler.
    let q = unsafe { &*(data as *const QueueState) };
    // On the runtime's interceptor thread: harvest what is finished, never wait for others.
    let _ = std::panic::catch_unwind(|| harvest(q, false));
    for k in 0..count as usize {
        // SAFETY: the runtime passes `count` consecutive 64-byte packets.
        let raw: [u8; 64] = unsafe { packets.cast::<[u8; 64]>().add(k).read() };
        if len + 2 > OUT_BATCH {
            flush(&out[..len]);
            len = 0;
        }
        let traced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trace_packet(q, raw, user_index + k as u64)
        }));
        match traced {
            Ok((kernel, barrier)) => {
                out[len] = kernel;
                len += 1;
                if let Some(b) = barrier {
                    out[len] = b;
                    len += 1;
                }
            }
            Err(_) => {
                static SAID: AtomicBool = AtomicBool::new(false);
                if !SAID.swap(true, Ordering::Relaxed) {
                    sink::warn(
                        WarningKind::Internal,
                        "a panic while tracing a kernel dispatch; it ran untraced",
                    );
                }
                out[len] = raw;
                len += 1;
            }
        }
    }
    if len > 0 {
        flush(&out[..len]);
    }
}

/// Packets the handler hands to its writer at a time.
const OUT_BATCH: usize = 16;

/// The packets to forward for `raw` (at ring index `index`): a kernel dispatch gets a
/// completion signal of the tool's and is queued for harvesting, followed — if the application
/// gave it a signal — by a barrier-AND packet that completes that signal once the kernel is
/// done; anything else, or a dispatch the tool cannot trace, passes through unchanged.
fn trace_packet(q: &QueueState, raw: [u8; 64], index: u64) -> ([u8; 64], Option<[u8; 64]>) {
    let header = u16::from_le_bytes([raw[0], raw[1]]);
    if header & 0xFF != PACKET_KERNEL_DISPATCH {
        return (raw, None);
    }
    let Some(f) = fns() else { return (raw, None) };
    let Some(signal) = take_signal(f) else {
        return (raw, None);
    };
    // SAFETY: a kernel dispatch packet has this layout (any bytes are valid).
    let mut p: KernelDispatchPacket = unsafe { std::mem::transmute(raw) };
    let slot = &q.correlations[index as usize % CORRELATION_RING];
    let thread = slot.1.load(Ordering::Acquire);
    let correlation = match thread {
        0 => new_correlation_id(),
        _ => slot.0.load(Ordering::Relaxed),
    };
    let original = p.completion_signal;
    p.completion_signal = signal;
    let record = KernelDispatchRecord {
        dispatch_id: NEXT_DISPATCH.fetch_add(1, Ordering::Relaxed),
        kernel_id: kernel_id(p.kernel_object),
        correlation_id: correlation,
        start: 0,
        end: 0,
        queue_id: q.queue_id,
        stream_id: 0,
        agent_node_id: q.agent_node,
        thread_id: thread as u32,
        grid: [p.grid_size_x, p.grid_size_y, p.grid_size_z],
        workgroup: [
            p.workgroup_size_x.into(),
            p.workgroup_size_y.into(),
            p.workgroup_size_z.into(),
        ],
        private_segment_size: p.private_segment_size,
        group_segment_size: p.group_segment_size,
    };
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
        });
    }
    if idle {
        wake_harvester();
    }
    // The application's signal, completed on the GPU after the kernel (the barrier bit makes the
    // packet wait for it), with the kernel's release scope.
    let barrier = (original != 0).then(|| {
        let b = BarrierAndPacket {
            header: PACKET_BARRIER_AND | HEADER_BARRIER | (p.header & HEADER_RELEASE_SCOPE_MASK),
            completion_signal: original,
            ..BarrierAndPacket::default()
        };
        // SAFETY: the packet struct is 64 plain bytes.
        unsafe { std::mem::transmute::<BarrierAndPacket, [u8; 64]>(b) }
    });
    // SAFETY: the packet struct is 64 plain bytes.
    (
        unsafe { std::mem::transmute::<KernelDispatchPacket, [u8; 64]>(p) },
        barrier,
    )
}
