//! AQL queues: a ring of 64-byte packets the runtime owns, an `amd_queue_t`-like block holding
//! the `hsa_queue_t` and the read/write indices, a doorbell signal, and one packet-processor
//! thread per queue that plays the command processor.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use wslsim_codeobj::KernelDescriptor;

use crate::guard::{guard, guard_value, say_once, write_out};
use crate::runtime::{self, Runtime};
use crate::signal;
use crate::types::*;

/// The queue block: `hsa_queue_t` first (the `hsa_queue_t*` handed out points here), then
/// the write index at 56 and the read index at 128, as in `amd_queue_t`.
#[repr(C, align(64))]
pub struct QueueBlock {
    pub hsa: HsaQueue,
    reserved1: [u32; 4],
    pub write_index: AtomicU64,
    reserved2: [u64; 8],
    pub read_index: AtomicU64,
    reserved3: [u64; 7],
}

const _: () = {
    assert!(std::mem::offset_of!(QueueBlock, write_index) == 56);
    assert!(std::mem::offset_of!(QueueBlock, read_index) == 128);
    assert!(size_of::<QueueBlock>() == 192);
};

/// The queue error callback.
pub type ErrorCallback = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);

/// What consumes a queue's packets.
pub enum Role {
    /// A hardware queue: the packet processor executes packets.
    Hardware,
    /// An intercept queue's software ring: packets go through the handlers to `hw`.
    Intercept(crate::intercept::InterceptState),
}

/// A queue and everything the runtime keeps for it.
pub struct QueueInner {
    block: Box<QueueBlock>,
    ring: *mut RawPacket,
    ring_layout: Layout,
    pub size: u32,
    pub doorbell: Signal,
    pub runtime: Arc<Runtime>,
    pub node: u32,
    pub agent: Agent,
    /// The agent's gfx major version (the kernel descriptor's SGPR encoding depends on it).
    pub gfx_major: u32,
    callback: Option<ErrorCallback>,
    callback_data: usize,
    /// The `hsa_queue_t*` reported to the error callback (an intercept queue's internal
    /// hardware queue reports the intercept queue).
    pub report_queue: AtomicU64,
    pub profiling: AtomicBool,
    /// The queue's scratch area (a hardware queue's; see [`crate::scratch`]).
    pub scratch: crate::scratch::QueueScratch,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    pub role: Role,
}

// SAFETY: the ring and block are owned by this value and accessed through atomics (headers,
// indices) or after an acquire load of a valid header; the callback data is the
// application's, used as HSA specifies (from the runtime's threads).
unsafe impl Send for QueueInner {}
// SAFETY: see above.
unsafe impl Sync for QueueInner {}

impl Drop for QueueInner {
    fn drop(&mut self) {
        // SAFETY: allocated in `create` with exactly this layout, used by no thread any more
        // (the processor thread held an Arc until it exited).
        unsafe { std::alloc::dealloc(self.ring.cast(), self.ring_layout) };
        let _ = signal::destroy(self.doorbell);
    }
}

impl QueueInner {
    /// The `hsa_queue_t*`.
    pub fn queue_ptr(&self) -> *mut HsaQueue {
        (&*self.block as *const QueueBlock).cast_mut().cast()
    }

    /// The block (indices).
    pub fn block(&self) -> &QueueBlock {
        &self.block
    }

    /// The ring slot of packet index `index`.
    pub fn slot(&self, index: u64) -> *mut RawPacket {
        // SAFETY: the ring holds `size` packets and the index is reduced modulo size.
        unsafe { self.ring.add((index % u64::from(self.size)) as usize) }
    }

    /// The header of ring slot `index`, as an atomic.
    pub fn header_of(&self, index: u64) -> &AtomicU16 {
        // SAFETY: the slot is 64-byte aligned memory owned by the queue; its first two bytes
        // are the header, accessed atomically by producers and consumers.
        unsafe { &*(self.slot(index) as *const AtomicU16) }
    }

    /// Calls the queue's error callback.
    pub fn report_error(&self, status: Status) {
        if let Some(callback) = self.callback {
            let queue = self.report_queue.load(Ordering::Acquire) as *mut HsaQueue;
            let data = self.callback_data as *mut c_void;
            let _ = std::panic::catch_unwind(|| {
                // SAFETY: the application's callback with its own data.
                unsafe { callback(status, queue, data) }
            });
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Whether the queue is being destroyed.
    pub fn is_stopping(&self) -> bool {
        self.stopping()
    }

    /// Writes bytes 2..64 of `packet` into ring slot `index`, leaving the header as it is (a
    /// producer publishes the header last).
    pub fn write_body(&self, index: u64, packet: &RawPacket) {
        let slot = self.slot(index).cast::<u8>();
        // SAFETY: the slot is free (the producer checked the read index) and owned by the
        // queue; its header still says INVALID, so the packet processor does not read it.
        unsafe { std::ptr::copy_nonoverlapping(packet.0.as_ptr().add(2), slot.add(2), 62) };
    }

    /// Publishes `header` on ring slot `index` with release (the body written before it is
    /// then visible to the packet processor).
    pub fn publish_header(&self, index: u64, header: u16) {
        self.header_of(index).store(header, Ordering::Release);
    }

    /// Writes `packet` into ring slot `index` with `header`, the header last.
    pub fn write_packet(&self, index: u64, packet: &RawPacket, header: u16) {
        self.write_body(index, packet);
        self.publish_header(index, header);
    }

    /// The packet processor's loop: waits for a valid header at the read index and hands the
    /// packet (a copy) to `process` with a `take` callback that sets the slot's header to
    /// INVALID and advances the read index — the packet has been *taken*: a kernel dispatch
    /// when it launches, other packets once processed, before their completion signal (as a
    /// command processor advances the read index as it consumes packets, not when their work
    /// completes). `take` runs after `process` if `process` did not call it.
    pub fn consume_packets(&self, mut process: impl FnMut(&RawPacket, u64, &dyn Fn())) {
        let Some(doorbell) = signal::object(self.doorbell) else {
            return;
        };
        loop {
            if self.stopping() {
                return;
            }
            let epoch = doorbell.epoch.load(Ordering::SeqCst);
            let read = self.block.read_index.load(Ordering::Acquire);
            let header = self.header_of(read).load(Ordering::Acquire);
            if header as u8 == PACKET_TYPE_INVALID {
                signal::sleep_on(doorbell, epoch, Duration::from_millis(20));
                continue;
            }
            // SAFETY: the header was published with release, so the body is complete.
            let packet = unsafe { self.slot(read).read() };
            let taken = std::cell::Cell::new(false);
            let take = || {
                if !taken.replace(true) {
                    self.header_of(read)
                        .store(HEADER_INVALID, Ordering::Release);
                    self.block.read_index.store(read + 1, Ordering::Release);
                }
            };
            process(&packet, read, &take);
            take();
        }
    }
}

static QUEUES: Mutex<Option<HashMap<u64, Arc<QueueInner>>>> = Mutex::new(None);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn with_queues<T>(f: impl FnOnce(&mut HashMap<u64, Arc<QueueInner>>) -> T) -> T {
    let mut guard = QUEUES.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// The queue whose `hsa_queue_t*` is `queue`.
pub fn lookup(queue: *const HsaQueue) -> Option<Arc<QueueInner>> {
    with_queues(|q| q.get(&(queue as u64)).cloned())
}

/// Creates a queue with `role`, registers it and starts its thread.
pub fn create(
    rt: Arc<Runtime>,
    agent: Agent,
    size: u32,
    type_: u32,
    callback: Option<ErrorCallback>,
    data: *mut c_void,
    role: Role,
) -> Result<Arc<QueueInner>, Status> {
    let gpu = rt.gpu(agent).ok_or(ERROR_INVALID_AGENT)?;
    let (node, gfx_major) = (gpu.node, gpu.record.gfx_major());
    if !size.is_power_of_two()
        || !(crate::info::QUEUE_MIN_SIZE..=crate::info::QUEUE_MAX_SIZE).contains(&size)
        || type_ > 2
    {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let ring_layout = Layout::from_size_align(size as usize * 64, 64)
        .map_err(|_| ERROR_INVALID_QUEUE_CREATION)?;
    // SAFETY: non-zero size.
    let ring = unsafe { std::alloc::alloc_zeroed(ring_layout) }.cast::<RawPacket>();
    if ring.is_null() {
        return Err(ERROR_OUT_OF_RESOURCES);
    }
    for index in 0..size as usize {
        // SAFETY: within the ring just allocated; every slot starts INVALID.
        unsafe { (*ring.add(index)).0[0] = PACKET_TYPE_INVALID };
    }
    let doorbell = signal::create(0);
    let intercept = matches!(role, Role::Intercept(_));
    // Queue ids as ROCr gives them: one process-wide counter from 0 for the hardware queues.
    // Before an agent's first one, ROCr creates the agent's utility queue (`GpuAgent::
    // QueueCreate` touches `queues_[QueueUtility]`), which takes the next id, so the
    // application's first queue is 1. An intercept queue copies its hardware queue's
    // `amd_queue_` (`InterceptQueue`'s constructor), id included.
    let id = match &role {
        Role::Intercept(state) => state.hw.block.hsa.id,
        Role::Hardware => {
            gpu.utility_queue
                .get_or_init(|| NEXT_ID.fetch_add(1, Ordering::Relaxed));
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        }
    };
    let block = Box::new(QueueBlock {
        hsa: HsaQueue {
            type_,
            features: 1, // HSA_QUEUE_FEATURE_KERNEL_DISPATCH
            base_address: ring.cast(),
            doorbell_signal: doorbell,
            size,
            reserved1: 0,
            id,
        },
        reserved1: [0; 4],
        write_index: AtomicU64::new(0),
        reserved2: [0; 8],
        read_index: AtomicU64::new(0),
        reserved3: [0; 7],
    });
    let inner = Arc::new(QueueInner {
        block,
        ring,
        ring_layout,
        size,
        doorbell,
        runtime: rt,
        node,
        agent,
        gfx_major,
        callback,
        callback_data: data as usize,
        report_queue: AtomicU64::new(0),
        profiling: AtomicBool::new(false),
        scratch: crate::scratch::QueueScratch::default(),
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
        role,
    });
    inner
        .report_queue
        .store(inner.queue_ptr() as u64, Ordering::Release);
    // A hardware queue gets its packet processor; an intercept queue has no thread of its
    // own (host doorbell stores process its ring on the storing thread, see `intercept`).
    if !intercept {
        let worker = inner.clone();
        let thread = std::thread::Builder::new()
            .name(format!("hsa-cp-{}", inner.block.hsa.id))
            .spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_processor(&worker);
                }));
            })
            .map_err(|_| ERROR_OUT_OF_RESOURCES)?;
        *inner.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
    }
    with_queues(|q| q.insert(inner.queue_ptr() as u64, inner.clone()));
    Ok(inner)
}

/// Stops a queue's thread, unregisters it (and an intercept queue's hardware queue).
pub fn destroy(inner: &Arc<QueueInner>) {
    inner.stop.store(true, Ordering::Release);
    if let Role::Intercept(state) = &inner.role {
        state.deactivate();
        signal::mark_intercept_doorbell(inner.doorbell, 0);
    }
    signal::store(inner.doorbell, -1);
    let thread = inner
        .thread
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(thread) = thread
        && thread.thread().id() != std::thread::current().id()
    {
        let _ = thread.join();
    }
    with_queues(|q| q.remove(&(inner.queue_ptr() as u64)));
    if let Role::Intercept(state) = &inner.role {
        destroy(&state.hw);
    }
    // ROCr frees a queue's scratch when the queue is destroyed (an intercept queue's lives in
    // its hardware queue, destroyed just above, which reports the intercept queue).
    inner
        .scratch
        .release(inner.report_queue.load(Ordering::Acquire) as *const HsaQueue);
}

/// Destroys every queue (at `hsa_shut_down`).
pub fn destroy_all() {
    let all: Vec<Arc<QueueInner>> = with_queues(|q| q.values().cloned().collect());
    for queue in all {
        destroy(&queue);
    }
}

// ---- the packet processor ----

struct RunContext {
    implementation: Option<KernelImpl>,
    kernarg: *const c_void,
    launch: WslsimLaunch,
}

/// The `run` callback handed to `wslsim_gpu_dispatch`: calls the CPU implementation.
unsafe extern "C" fn run_trampoline(ctx: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `ctx` is the RunContext of the dispatch in progress (on the caller's stack).
        let ctx = unsafe { &*(ctx as *const RunContext) };
        if let Some(implementation) = ctx.implementation {
            // SAFETY: the kernel's CPU implementation with its kernarg segment and launch.
            unsafe { implementation(ctx.kernarg, &ctx.launch) };
        }
    });
}

fn run_processor(queue: &QueueInner) {
    queue.consume_packets(|packet, index, take| execute(queue, packet, index, take));
}

/// Executes one packet on the hardware queue: `take` when the packet is taken (see
/// [`QueueInner::consume_packets`]), its completion signal last.
fn execute(queue: &QueueInner, packet: &RawPacket, index: u64, take: &dyn Fn()) {
    let completion = packet.completion_signal();
    match packet.packet_type() {
        PACKET_TYPE_KERNEL_DISPATCH => {
            take();
            dispatch(queue, packet, index)
        }
        PACKET_TYPE_BARRIER_AND | PACKET_TYPE_BARRIER_OR => {
            let barrier = packet.as_barrier();
            let mut deps = [Signal { handle: 0 }; 5];
            let mut n = 0;
            for &dep in barrier.dep_signal.iter().filter(|s| s.handle != 0) {
                deps[n] = dep;
                n += 1;
            }
            let and = packet.packet_type() == PACKET_TYPE_BARRIER_AND;
            wait_deps(queue, &deps[..n], and);
        }
        PACKET_TYPE_VENDOR_SPECIFIC => vendor(queue, packet),
        _ => {
            say_once(format!(
                "libhsa-runtime64 (sim): unsupported AQL packet type {}",
                packet.packet_type()
            ));
            queue.report_error(ERROR_INVALID_PACKET_FORMAT);
        }
    }
    take();
    signal::complete(completion);
}

/// Waits until all (`and`) or any dependency signal reached 0 or below.
fn wait_deps(queue: &QueueInner, deps: &[Signal], and: bool) {
    if deps.is_empty() {
        return;
    }
    let done = |s: &Signal| signal::load(*s) < 1;
    let ready = || {
        if and {
            deps.iter().all(done)
        } else {
            deps.iter().any(done)
        }
    };
    signal::wait_watched(deps, ready, || queue.stopping());
}

fn dispatch(queue: &QueueInner, packet: &RawPacket, index: u64) {
    let p = packet.as_dispatch();
    let Some(entry) = crate::executable::lookup_kernel(p.kernel_object) else {
        say_once(format!(
            "libhsa-runtime64 (sim): kernel dispatch with unknown kernel object {:#x}",
            p.kernel_object
        ));
        queue.report_error(ERROR_INVALID_CODE_OBJECT);
        return;
    };
    let kd = KernelDescriptor(entry.descriptor.0);
    if p.private_segment_size > 0 {
        let compute_units = queue
            .runtime
            .gpu(queue.agent)
            .map_or(1, |g| g.compute_units());
        queue.scratch.ensure(
            queue.report_queue.load(Ordering::Acquire) as *const HsaQueue,
            index,
            p.private_segment_size,
            u32::from(kd.wave_size()),
            compute_units,
        );
    }
    let launch = WslsimLaunch {
        grid: [
            p.grid_size_x.max(1),
            p.grid_size_y.max(1),
            p.grid_size_z.max(1),
        ],
        workgroup: [
            p.workgroup_size_x.max(1),
            p.workgroup_size_y.max(1),
            p.workgroup_size_z.max(1),
        ],
        reserved: 0,
        group_segment_size: p.group_segment_size,
        private_segment_size: p.private_segment_size,
    };
    let mut context = RunContext {
        implementation: entry.implementation(),
        kernarg: p.kernarg_address as *const c_void,
        launch,
    };
    if context.implementation.is_none() {
        say_once(format!(
            "libhsa-runtime64 (sim): kernel {} has no CPU implementation (host symbol {:?})",
            entry.kernel.name, entry.kernel.host_symbol
        ));
    }
    let request = WslsimDispatch {
        grid: launch.grid,
        workgroup: launch.workgroup,
        wave_size: kd.wave_size(),
        vgprs: kd.arch_vgpr_count(),
        sgprs: kd.sgpr_count(queue.gfx_major),
        lds_bytes: p.group_segment_size,
        scratch_bytes: p.private_segment_size,
        valu_per_wave: entry.kernel.valu_per_wave,
        salu_per_wave: entry.kernel.salu_per_wave,
        cycles_per_wave: entry.kernel.cycles_per_wave,
        run: Some(run_trampoline),
        ctx: (&mut context as *mut RunContext).cast(),
        code_address: entry.code_address(),
    };
    let factor = wslsim_scenario::current().kernel_duration_factor(&entry.kernel.name);
    match queue.runtime.thunk.dispatch(queue.node, &request, factor) {
        Ok(timing) => {
            if queue.profiling.load(Ordering::Acquire) {
                signal::store_timestamps(p.completion_signal, &timing);
            }
        }
        Err(status) => {
            say_once(format!(
                "libhsa-runtime64 (sim): wslsim_gpu_dispatch failed: {status}"
            ));
            queue.report_error(ERROR);
        }
    }
}

fn vendor(queue: &QueueInner, packet: &RawPacket) {
    match packet.0[2] {
        AMD_AQL_FORMAT_PM4_IB if packet.u16_at(2) == u16::from(AMD_AQL_FORMAT_PM4_IB) => {
            pm4_ib(queue, packet)
        }
        2 => {
            // HSA_AMD_PACKET_TYPE_BARRIER_VALUE: signal@8, value@16, mask@24, cond@32.
            let signal = Signal {
                handle: packet.u64_at(8),
            };
            let value = packet.u64_at(16) as i64;
            let mask = packet.u64_at(24) as i64;
            let condition = packet.u32_at(32);
            signal::wait_watched(
                std::slice::from_ref(&signal),
                || signal::satisfied(condition, signal::load(signal) & mask, value),
                || queue.stopping(),
            );
        }
        AMD_AQL_FORMAT_INTERCEPT_MARKER => {}
        other => {
            say_once(format!(
                "libhsa-runtime64 (sim): unsupported AMD vendor packet format {other}"
            ));
            queue.report_error(ERROR_INVALID_PACKET_FORMAT);
        }
    }
}

fn pm4_ib(queue: &QueueInner, packet: &RawPacket) {
    let dw = |i: usize| packet.u32_at(4 * i);
    let reject = |reason: String| {
        say_once(format!(
            "libhsa-runtime64 (sim): PM4-IB vendor packet rejected: {reason}"
        ));
        queue.report_error(ERROR_INVALID_PACKET_FORMAT);
    };
    if dw(1) != PM4_INDIRECT_BUFFER {
        return reject(format!("dword 1 is {:#010x}, not INDIRECT_BUFFER", dw(1)));
    }
    let address = (u64::from(dw(3) & 0xFFFF) << 32) | u64::from(dw(2) & !3);
    let dwords = dw(4) & 0xF_FFFF;
    if address == 0 || dwords == 0 {
        return reject("empty indirect buffer".to_owned());
    }
    // SAFETY: the producer's IB of `dwords` dwords at `address` (host memory it owns).
    let result = unsafe {
        queue
            .runtime
            .thunk
            .pm4(queue.node, address as *const u32, dwords)
    };
    if let Err((status, reason)) = result {
        reject(format!("{reason} (status {status})"));
    }
}

// ---- C entry points ----

/// `hsa_queue_create`.
pub unsafe extern "C" fn hsa_queue_create(
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
        let inner = create(rt, agent, size, type_, callback, data, Role::Hardware)?;
        // SAFETY: non-null and writable per the API.
        unsafe { write_out(queue, inner.queue_ptr()) }
    })
}

/// `hsa_amd_queue_get_info`: `HSA_AMD_QUEUE_INFO_AGENT` (0) and `…_DOORBELL_ID` (1).
pub unsafe extern "C" fn hsa_amd_queue_get_info(
    queue: *mut HsaQueue,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let inner = lookup(queue).ok_or(ERROR_INVALID_QUEUE)?;
        // SAFETY: the caller provides storage of the attribute's type.
        unsafe {
            match attribute {
                0 => write_out(value.cast::<Agent>(), inner.agent),
                1 => write_out(value.cast::<u64>(), inner.doorbell.handle),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_queue_destroy`.
pub unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> Status {
    guard(|| {
        let inner = lookup(queue).ok_or(ERROR_INVALID_QUEUE)?;
        destroy(&inner);
        Ok(())
    })
}

/// `hsa_queue_inactivate`.
pub unsafe extern "C" fn hsa_queue_inactivate(queue: *mut HsaQueue) -> Status {
    guard(|| {
        let inner = lookup(queue).ok_or(ERROR_INVALID_QUEUE)?;
        if let Role::Intercept(state) = &inner.role {
            state.deactivate();
        }
        Ok(())
    })
}

/// `hsa_amd_queue_set_priority`.
pub unsafe extern "C" fn hsa_amd_queue_set_priority(
    queue: *mut HsaQueue,
    _priority: u32,
) -> Status {
    guard(|| lookup(queue).map(drop).ok_or(ERROR_INVALID_QUEUE))
}

fn block<'a>(queue: *const HsaQueue) -> Option<&'a QueueBlock> {
    // SAFETY: a non-null hsa_queue_t* handed out by this runtime points at a QueueBlock that
    // lives until hsa_queue_destroy (the caller's contract, as with ROCr).
    (!queue.is_null()).then(|| unsafe { &*(queue as *const QueueBlock) })
}

// Index operations: one function per operation behind all its memory-order slots of the table
// (`hsa_queue_load_read_index_relaxed`, `_scacquire`, ...), using the strongest order of its
// variants.

macro_rules! index_load {
    ($($name:ident: $field:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "_*` (every memory order).")]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue) -> u64 {
            guard_value(0, || block(queue).map_or(0, |b| b.$field.load(Ordering::Acquire)))
        }
    )*};
}

index_load! {
    hsa_queue_load_read_index: read_index;
    hsa_queue_load_write_index: write_index;
}

macro_rules! index_store {
    ($($name:ident: $field:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "_*` (every memory order).")]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, value: u64) {
            guard_value((), || {
                if let Some(b) = block(queue) {
                    b.$field.store(value, Ordering::Release);
                }
            })
        }
    )*};
}

index_store! {
    hsa_queue_store_write_index: write_index;
    hsa_queue_store_read_index: read_index;
}

/// `hsa_queue_cas_write_index_*` (every memory order).
pub unsafe extern "C" fn hsa_queue_cas_write_index(
    queue: *const HsaQueue,
    expected: u64,
    value: u64,
) -> u64 {
    guard_value(0, || {
        block(queue).map_or(0, |b| {
            b.write_index
                .compare_exchange(expected, value, Ordering::AcqRel, Ordering::Acquire)
                .unwrap_or_else(|v| v)
        })
    })
}

/// `hsa_queue_add_write_index_*` (every memory order).
pub unsafe extern "C" fn hsa_queue_add_write_index(queue: *const HsaQueue, value: u64) -> u64 {
    guard_value(0, || {
        block(queue).map_or(0, |b| b.write_index.fetch_add(value, Ordering::AcqRel))
    })
}

/// `hsa_amd_profiling_set_profiler_enabled`: an intercept queue passes it to its hardware
/// queue, where the timestamps are taken.
pub unsafe extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    queue: *mut HsaQueue,
    enable: i32,
) -> Status {
    guard(|| {
        let inner = lookup(queue).ok_or(ERROR_INVALID_QUEUE)?;
        inner.profiling.store(enable != 0, Ordering::Release);
        if let Role::Intercept(state) = &inner.role {
            state.hw.profiling.store(enable != 0, Ordering::Release);
        }
        Ok(())
    })
}

/// `hsa_amd_profiling_get_dispatch_time`: the completion signal's GPU ticks in system ns
/// (`[faults] dispatch_time_fail_calls` make chosen calls fail with `HSA_STATUS_ERROR`).
pub unsafe extern "C" fn hsa_amd_profiling_get_dispatch_time(
    agent: Agent,
    signal: Signal,
    time: *mut ProfilingTime,
) -> Status {
    guard(|| {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        if wslsim_scenario::current()
            .faults
            .dispatch_time_fail_calls
            .contains(&call)
        {
            return Err(ERROR);
        }
        let rt = runtime::require()?;
        let info = rt.gpu(agent).ok_or(ERROR_INVALID_AGENT)?;
        let obj = signal::live_object(signal).ok_or(ERROR_INVALID_SIGNAL)?;
        let profiled = rt.profiling_time(info, obj);
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(time, profiled) }
    })
}

/// `hsa_amd_profiling_convert_tick_to_system_domain`.
pub unsafe extern "C" fn hsa_amd_profiling_convert_tick_to_system_domain(
    agent: Agent,
    agent_tick: u64,
    system_tick: *mut u64,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.gpu(agent).ok_or(ERROR_INVALID_AGENT)?;
        let ns = rt.ticks_to_ns(info, agent_tick);
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(system_tick, ns) }
    })
}
