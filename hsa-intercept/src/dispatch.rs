//! Kernel dispatch tracing through intercept queues, and kernel symbols from executables.
//!
//! `hsa_queue_create` is replaced: the application gets an intercept queue with profiling
//! enabled and a packet handler. The application's thread rings the doorbell (a signal store
//! the tool also watches), which is when the correlation id of the call enqueuing the packets
//! (e.g. `hipLaunchKernel`) is known; the runtime's interceptor thread then hands the packets
//! to the handler, which gives each kernel dispatch its own completion signal and registers an
//! async handler that reads the dispatch time, emits the record, and then completes the
//! application's own signal (decrementing it, as the packet processor would have). Upstream
//! chains the application's signal behind a barrier-AND packet instead; completing it from the
//! handler halves the packets the queue processes per dispatch, at the cost of the handler's
//! latency before the application sees completion (docs/PERFORMANCE.md).

use crate::api::{current_correlation_id, new_correlation_id, thread_id};
use crate::hsa::*;
use crate::sink;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock};
use trace_records::{KernelDispatchRecord, KernelSymbolRecord};

/// Packets whose correlation is remembered per queue (by packet index modulo this).
const CORRELATION_RING: usize = 4096;
/// Intercepted queues tracked at once.
const MAX_QUEUES: usize = 64;

static NEXT_DISPATCH: AtomicU64 = AtomicU64::new(1);
static NEXT_KERNEL: AtomicU64 = AtomicU64::new(1);
static KERNELS: OnceLock<RwLock<HashMap<u64, u64>>> = OnceLock::new();
static FIRST_QUEUE_HOOK: OnceLock<fn()> = OnceLock::new();
static FIRST_QUEUE: std::sync::Once = std::sync::Once::new();

/// Runs `hook` once, when the application creates its first queue (the runtime's agents exist
/// by then): the tool pairs its agent records with the HSA agents there.
pub fn on_first_queue(hook: fn()) {
    let _ = FIRST_QUEUE_HOOK.set(hook);
}

/// One intercepted queue: where its doorbell is, and who enqueued each packet.
struct QueueState {
    agent: u64,
    agent_node: u32,
    queue_id: AtomicU64,
    doorbell: AtomicU64,
    rung: AtomicU64,
    /// (correlation id, thread id) by packet index.
    correlations: Box<[(AtomicU64, AtomicU64)]>,
}

/// Doorbell signal handles of intercepted queues (0 = free), for a lock-free check in the
/// signal-store wrappers, with their queue states.
static DOORBELLS: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];
static QUEUES: [AtomicUsize; MAX_QUEUES] = [const { AtomicUsize::new(0) }; MAX_QUEUES];

/// Installs kernel-dispatch tracing into the runtime's core table (`hsa_queue_create`,
/// `hsa_queue_destroy`, the two doorbell stores, `hsa_executable_freeze`). `fns` are the
/// runtime's own entries, read before anything was wrapped.
///
/// # Safety
/// `core` must be the runtime's `CoreApiTable`, handed over before first use.
pub unsafe fn install(core: *mut u8, fns: Fns) {
    set_fns(fns);
    let table = &crate::tables::CORE;
    for (name, wrapper) in [
        ("hsa_queue_create", queue_create as *const c_void),
        ("hsa_queue_destroy", queue_destroy as *const c_void),
        ("hsa_signal_store_relaxed", store_relaxed as *const c_void),
        (
            "hsa_signal_store_screlease",
            store_screlease as *const c_void,
        ),
        ("hsa_executable_freeze", executable_freeze as *const c_void),
    ] {
        let k = table.operation(name).expect("known entry") as usize;
        // SAFETY: within the table (the caller's contract); entries are pointer-aligned.
        unsafe {
            core.add(table.offset(k))
                .cast::<*const c_void>()
                .write(wrapper)
        };
    }
}

unsafe extern "C" fn queue_create(
    agent: u64,
    size: u32,
    kind: u32,
    callback: QueueCallback,
    data: *mut c_void,
    private_segment: u32,
    group_segment: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    let Some(f) = fns() else { return ERROR };
    if let Some(hook) = FIRST_QUEUE_HOOK.get() {
        FIRST_QUEUE.call_once(|| {
            let _ = std::panic::catch_unwind(hook);
        });
    }
    // SAFETY: the caller's arguments, forwarded to the runtime's own intercept-queue creation.
    let status = unsafe {
        (f.queue_intercept_create)(
            agent,
            size,
            kind,
            callback,
            data,
            private_segment,
            group_segment,
            queue,
        )
    };
    if status != SUCCESS || queue.is_null() {
        return status;
    }
    // SAFETY: on success the runtime wrote a valid queue pointer.
    let q = unsafe { *queue };
    let guarded = std::panic::catch_unwind(|| {
        let state: &'static QueueState = Box::leak(Box::new(QueueState {
            agent,
            agent_node: agent_node(agent).0,
            // SAFETY: `q` is the runtime's live queue.
            queue_id: AtomicU64::new(unsafe { (*q).id }),
            // SAFETY: as above.
            doorbell: AtomicU64::new(unsafe { (*q).doorbell_signal }),
            rung: AtomicU64::new(0),
            correlations: (0..CORRELATION_RING)
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
        }));
        if let Some(i) = DOORBELLS.iter().position(|d| {
            d.compare_exchange(
                0,
                state.doorbell.load(Ordering::Relaxed),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        }) {
            QUEUES[i].store(state as *const QueueState as usize, Ordering::Release);
        }
        // SAFETY: the runtime's own functions on its own queue.
        unsafe {
            (f.set_profiler_enabled)(q, 1);
            (f.queue_intercept_register)(
                q,
                handler,
                (state as *const QueueState).cast_mut().cast(),
            );
        }
    });
    if guarded.is_err() {
        eprintln!("rocprof-tool: warning: kernel tracing could not be set up on a queue");
    }
    status
}

unsafe extern "C" fn queue_destroy(queue: *mut HsaQueue) -> Status {
    let Some(f) = fns() else { return ERROR };
    if !queue.is_null() {
        // SAFETY: the application's live queue.
        let doorbell = unsafe { (*queue).doorbell_signal };
        for (i, d) in DOORBELLS.iter().enumerate() {
            if d.compare_exchange(doorbell, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                QUEUES[i].store(0, Ordering::Release);
            }
        }
    }
    // SAFETY: forwarded.
    unsafe { (f.queue_destroy)(queue) }
}

/// Remembers who enqueued the packets up to `value` when `signal` is an intercepted doorbell.
#[inline]
fn note_doorbell(signal: u64, value: i64) {
    let Some(i) = DOORBELLS
        .iter()
        .position(|d| d.load(Ordering::Relaxed) == signal)
    else {
        return;
    };
    let p = QUEUES[i].load(Ordering::Acquire);
    if p == 0 || value < 0 {
        return;
    }
    // SAFETY: queue states are leaked (never freed) once published.
    let q = unsafe { &*(p as *const QueueState) };
    let correlation = current_correlation_id().unwrap_or_else(new_correlation_id);
    let tid = u64::from(thread_id());
    let last = q.rung.swap(value as u64 + 1, Ordering::AcqRel);
    let first = last.max((value as u64 + 1).saturating_sub(CORRELATION_RING as u64));
    for index in first..=value as u64 {
        let slot = &q.correlations[index as usize % CORRELATION_RING];
        slot.0.store(correlation, Ordering::Relaxed);
        slot.1.store(tid, Ordering::Release);
    }
}

unsafe extern "C" fn store_relaxed(signal: u64, value: i64) {
    note_doorbell(signal, value);
    if let Some(f) = fns() {
        // SAFETY: forwarded.
        unsafe { (f.signal_store_relaxed)(signal, value) }
    }
}

unsafe extern "C" fn store_screlease(signal: u64, value: i64) {
    note_doorbell(signal, value);
    if let Some(f) = fns() {
        // SAFETY: forwarded.
        unsafe { (f.signal_store_screlease)(signal, value) }
    }
}

/// A dispatch in flight, until its completion signal fires.
struct Pending {
    record: KernelDispatchRecord,
    agent: u64,
    signal: u64,
    /// The application's completion signal, completed here once the time is read.
    original: u64,
}

unsafe extern "C" fn handler(
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
    for k in 0..count as usize {
        // SAFETY: the runtime passes `count` consecutive 64-byte packets.
        let raw: [u8; 64] = unsafe { packets.cast::<[u8; 64]>().add(k).read() };
        let traced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trace_packet(q, raw, user_index + k as u64)
        }));
        out[len] = traced.unwrap_or_else(|_| {
            eprintln!("rocprof-tool: warning: a panic while tracing a kernel dispatch");
            raw
        });
        len += 1;
        if len == OUT_BATCH {
            flush(&out);
            len = 0;
        }
    }
    if len > 0 {
        flush(&out[..len]);
    }
}

/// Packets the handler hands to its writer at a time.
const OUT_BATCH: usize = 16;

/// The packet to forward for `raw` (at ring index `index`): a kernel dispatch gets a completion
/// signal of the tool's, watched by an async handler that emits its record; anything else, or a
/// dispatch the tool cannot trace, passes through unchanged.
fn trace_packet(q: &QueueState, raw: [u8; 64], index: u64) -> [u8; 64] {
    let header = u16::from_le_bytes([raw[0], raw[1]]);
    if header & 0xFF != PACKET_KERNEL_DISPATCH {
        return raw;
    }
    let Some(f) = fns() else { return raw };
    let Some(signal) = take_signal(f) else {
        return raw;
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
        queue_id: q.queue_id.load(Ordering::Relaxed),
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
    let pending = Box::into_raw(Box::new(Pending {
        record,
        agent: q.agent,
        signal,
        original,
    }));
    // SAFETY: the runtime's async handler; `pending` is reclaimed exactly once in it.
    unsafe { (f.signal_async_handler)(signal, CONDITION_EQ, 0, on_complete, pending.cast()) };
    // SAFETY: the packet struct is 64 plain bytes.
    unsafe { std::mem::transmute::<KernelDispatchPacket, [u8; 64]>(p) }
}

unsafe extern "C" fn on_complete(_value: i64, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the Box leaked in `handler`, reclaimed only here.
    let pending = unsafe { Box::from_raw(arg.cast::<Pending>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(f) = fns() else { return };
        let mut time = DispatchTime::default();
        // SAFETY: the runtime's own function on the signal it completed.
        if unsafe { (f.get_dispatch_time)(pending.agent, pending.signal, &mut time) } == SUCCESS {
            let mut record = pending.record;
            record.start = time.start;
            record.end = time.end;
            sink::emit(&record);
        }
        if pending.original != 0 {
            // SAFETY: completes the application's signal as the packet processor would have.
            unsafe { (f.signal_subtract_screlease)(pending.original, 1) };
        }
        give_back_signal(f, pending.signal);
    }));
    false
}

/// Completion signals of finished dispatches, reused instead of created and destroyed each time.
static SIGNAL_POOL: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());
/// Signals kept for reuse at most.
const SIGNAL_POOL_MAX: usize = 256;

/// A completion signal with value 1: from the pool, else a new one.
fn take_signal(f: &Fns) -> Option<u64> {
    if let Some(s) = SIGNAL_POOL.lock().ok().and_then(|mut p| p.pop()) {
        // SAFETY: a signal of ours that nothing else references any more.
        unsafe { (f.signal_store_relaxed)(s, 1) };
        return Some(s);
    }
    let mut signal = 0u64;
    // SAFETY: the runtime's signal_create with a valid out-pointer.
    (unsafe { (f.signal_create)(1, 0, std::ptr::null(), &mut signal) } == SUCCESS).then_some(signal)
}

/// Returns a finished dispatch's signal to the pool (or destroys it when the pool is full).
fn give_back_signal(f: &Fns, signal: u64) {
    if let Ok(mut pool) = SIGNAL_POOL.lock()
        && pool.len() < SIGNAL_POOL_MAX
    {
        pool.push(signal);
        return;
    }
    // SAFETY: our own signal, no longer used by anything.
    unsafe { (f.signal_destroy)(signal) };
}

fn kernel_id(kernel_object: u64) -> u64 {
    KERNELS
        .get()
        .and_then(|k| k.read().ok()?.get(&kernel_object).copied())
        .unwrap_or(0)
}

unsafe extern "C" fn executable_freeze(executable: u64, options: *const c_char) -> Status {
    let Some(f) = fns() else { return ERROR };
    // SAFETY: forwarded.
    let status = unsafe { (f.executable_freeze)(executable, options) };
    if status == SUCCESS {
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: iterates the frozen executable's symbols with our callback.
            unsafe { (f.executable_iterate_symbols)(executable, on_symbol, std::ptr::null_mut()) };
        });
    }
    status
}

unsafe extern "C" fn on_symbol(_executable: u64, symbol: u64, _data: *mut c_void) -> Status {
    let Some(f) = fns() else { return SUCCESS };
    let get_u32 = |attr: u32| {
        let mut v = 0u32;
        // SAFETY: a u32-sized attribute of a live symbol.
        unsafe { (f.symbol_get_info)(symbol, attr, (&raw mut v).cast()) };
        v
    };
    if get_u32(SYMBOL_INFO_TYPE) != 1 {
        return SUCCESS;
    }
    let len = get_u32(SYMBOL_INFO_NAME_LENGTH) as usize;
    let mut name = vec![0u8; len + 1];
    let mut object = 0u64;
    // SAFETY: NAME writes `len` bytes; KERNEL_OBJECT a u64.
    unsafe {
        (f.symbol_get_info)(symbol, SYMBOL_INFO_NAME, name.as_mut_ptr().cast());
        (f.symbol_get_info)(symbol, SYMBOL_INFO_KERNEL_OBJECT, (&raw mut object).cast());
    }
    let name = CStr::from_bytes_until_nul(&name)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".kd").unwrap_or(&name);
    let (vgpr, sgpr) = registers(object);
    let kernel_id = NEXT_KERNEL.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut k) = KERNELS.get_or_init(|| RwLock::new(HashMap::new())).write() {
        k.insert(object, kernel_id);
    }
    sink::emit(&KernelSymbolRecord {
        kernel_id,
        kernel_object: object,
        name: sink::intern(name),
        arch_vgpr_count: vgpr,
        accum_vgpr_count: 0,
        sgpr_count: sgpr,
        group_segment_size: get_u32(SYMBOL_INFO_GROUP_SEGMENT_SIZE),
        private_segment_size: get_u32(SYMBOL_INFO_PRIVATE_SEGMENT_SIZE),
        kernarg_segment_size: get_u32(SYMBOL_INFO_KERNARG_SEGMENT_SIZE),
        reserved: 0,
    });
    SUCCESS
}

/// VGPRs and SGPRs from the 64-byte kernel descriptor at `object`: arch VGPRs =
/// (rsrc1[5:0] + 1) × (8 for wave32, else 4); gfx10+ reports 128 SGPRs.
fn registers(object: u64) -> (u32, u32) {
    if object == 0 || !object.is_multiple_of(64) {
        return (0, 0);
    }
    // SAFETY: the runtime's kernel objects point at 64-byte kernel descriptors it owns.
    let (rsrc1, properties) = unsafe {
        let d = object as *const u8;
        (
            d.add(48).cast::<u32>().read_unaligned(),
            d.add(56).cast::<u16>().read_unaligned(),
        )
    };
    registers_from(rsrc1, properties)
}

/// [`registers`] from the raw descriptor fields.
pub fn registers_from(rsrc1: u32, code_properties: u16) -> (u32, u32) {
    let wave32 = code_properties & (1 << 10) != 0;
    (((rsrc1 & 0x3f) + 1) * if wave32 { 8 } else { 4 }, 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vgprs_follow_the_granule_and_wave_size() {
        assert_eq!(registers_from(0, 1 << 10), (8, 128));
        assert_eq!(registers_from(3, 1 << 10), (32, 128));
        assert_eq!(registers_from(3, 0), (16, 128));
    }
}
