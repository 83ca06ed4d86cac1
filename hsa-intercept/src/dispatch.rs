//! Kernel dispatch tracing through intercept queues, and kernel symbols from executables.
//!
//! `hsa_queue_create` is replaced: the application gets an intercept queue with profiling
//! enabled and a packet handler. The application's thread rings the doorbell (a signal store
//! the tool also watches), which is when the correlation id of the call enqueuing the packets
//! (e.g. `hipLaunchKernel`) is known; the runtime's interceptor thread then hands the packets
//! to the handler, which gives each kernel dispatch a completion signal of the tool's and, as
//! upstream does, forwards a barrier-AND packet after it that completes the application's own
//! signal on the GPU. So the application sees completion exactly when it would untraced.
//!
//! Unlike upstream, no asynchronous handler is registered per dispatch (each one costs the
//! runtime's handler thread a wake-up): finished dispatches are *harvested* — dispatch time
//! read, record emitted, signal recycled — in queue order, whenever the handler runs, after the
//! application's signal waits return, by a low-rate harvester thread while dispatches are
//! outstanding, and at exit. A record is therefore never later than about a millisecond, and
//! the records of everything an application waited for are written before it can crash.
//!
//! Lock order: no lock of the tool's is held across a call into the runtime. A harvest looks at
//! the oldest pending dispatch under the queue's `pending` lock, asks the runtime whether it
//! finished with the lock released, claims it under the lock again (unless another harvest
//! did), and reads its time, emits its record and recycles its signal with the lock released.
//! Claims follow queue order; a per-queue completion counter advances over the contiguous
//! prefix of emitted records, so a harvest that must guarantee completeness (after a signal
//! wait, at queue destroy and shutdown) waits — briefly, and never from the runtime's own
//! threads — until every dispatch claimed before it looked has been emitted by whichever thread
//! claimed it. The packet handler, which runs on the runtime's interceptor thread, harvests
//! without waiting.
//!
//! Kernel descriptors (for register counts) are read through the AMD loader extension's
//! `hsa_ven_amd_loader_query_host_address`, never through the kernel object itself, which on a
//! discrete GPU is a device address the host may not be able to read.

use crate::api::{current_correlation_id, new_correlation_id, thread_id};
use crate::hsa::*;
use crate::sink;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};
use trace_records::docs::WarningKind;
use trace_records::loss::LossCause;
use trace_records::{KernelDispatchRecord, KernelSymbolRecord};

/// Packets whose correlation is remembered per queue (by packet index modulo this).
const CORRELATION_RING: usize = 4096;
/// Claimed dispatches whose completion is tracked per queue (by sequence number modulo this):
/// a harvest never claims a dispatch this far ahead of the completed prefix.
const DONE_RING: usize = 1024;
/// Pending dispatches a queue has room for before its list grows (growing allocates).
const PENDING_CAPACITY: usize = 256;
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
    queue_id: u64,
    rung: AtomicU64,
    /// (correlation id, thread id) by packet index.
    correlations: Box<[(AtomicU64, AtomicU64)]>,
    /// Dispatches forwarded and not yet claimed by a harvest, in queue order. Held only for
    /// pushes, peeks and pops, never across a call into the runtime.
    pending: Mutex<Ledger>,
    /// By sequence number modulo [`DONE_RING`]: the sequence number + 1 once that dispatch's
    /// record was emitted (or counted lost).
    done: Box<[AtomicU64]>,
    /// Every dispatch with a lower sequence number has been emitted or counted lost.
    completed: AtomicU64,
}

/// The pending dispatches of a queue.
struct Ledger {
    queue: VecDeque<Pending>,
    /// The sequence number of the next dispatch forwarded on the queue.
    next: u64,
}

impl QueueState {
    fn new(agent: u64, agent_node: u32, queue_id: u64) -> Self {
        QueueState {
            agent,
            agent_node,
            queue_id,
            rung: AtomicU64::new(0),
            correlations: (0..CORRELATION_RING)
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
            pending: Mutex::new(Ledger {
                queue: VecDeque::with_capacity(PENDING_CAPACITY),
                next: 0,
            }),
            done: (0..DONE_RING).map(|_| AtomicU64::new(0)).collect(),
            completed: AtomicU64::new(0),
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // The ledger is consistent even if a holder panicked (it only pushes and pops).
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks dispatch `seq` as recorded and advances the completed prefix as far as it goes
    /// (whichever thread finishes the oldest outstanding one carries the others along).
    fn complete(&self, seq: u64) {
        // SeqCst throughout: of two threads completing neighbours at once, at least one sees
        // the other's mark, so the prefix never stops short.
        self.done[seq as usize % DONE_RING].store(seq + 1, Ordering::SeqCst);
        let mut c = self.completed.load(Ordering::SeqCst);
        while self.done[c as usize % DONE_RING].load(Ordering::SeqCst) == c + 1 {
            match self
                .completed
                .compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => c += 1,
                Err(now) => c = now,
            }
        }
    }

    /// Waits until every dispatch before `bound` is recorded, at most [`COMPLETION_WAIT`] (the
    /// threads recording them are only reading a time and appending a record).
    fn wait_completed(&self, bound: u64) {
        let start = Instant::now();
        let mut spins = 0u32;
        while self.completed.load(Ordering::SeqCst) < bound {
            if start.elapsed() > COMPLETION_WAIT {
                return;
            }
            spins += 1;
            if spins < 128 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
}

/// How long a harvest waits for records other threads are emitting.
const COMPLETION_WAIT: Duration = Duration::from_secs(1);

/// Dispatches pending over all queues.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Doorbell signal handles of intercepted queues (0 = free), for a lock-free check in the
/// signal-store wrappers, with their queue states.
static DOORBELLS: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];
static QUEUES: [AtomicUsize; MAX_QUEUES] = [const { AtomicUsize::new(0) }; MAX_QUEUES];

/// Installs kernel-dispatch tracing into the runtime's core table (`hsa_queue_create`,
/// `hsa_queue_destroy`, the two doorbell stores, `hsa_executable_freeze`, the two signal waits
/// and `hsa_shut_down`, which harvest). `fns` are the
/// runtime's own entries, read before anything was wrapped.
///
/// # Safety
/// `core` must be the runtime's `CoreApiTable`, handed over before first use.
pub unsafe fn install(core: *mut u8, fns: Fns) {
    set_fns(fns);
    for (name, wrapper) in [
        ("hsa_queue_create", queue_create as *const c_void),
        ("hsa_queue_destroy", queue_destroy as *const c_void),
        (
            "hsa_signal_store_relaxed",
            store::<RELAXED> as *const c_void,
        ),
        ("hsa_signal_store_screlease", store::<SC> as *const c_void),
        ("hsa_executable_freeze", executable_freeze as *const c_void),
        ("hsa_shut_down", shut_down as *const c_void),
        ("hsa_signal_wait_relaxed", wait::<RELAXED> as *const c_void),
        ("hsa_signal_wait_scacquire", wait::<SC> as *const c_void),
    ] {
        // SAFETY: the caller's table, not yet in use; each wrapper has its entry's signature.
        let _ = unsafe { replace_entry(&crate::tables::CORE, core, name, wrapper) };
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
        // SAFETY: `q` is the runtime's live queue.
        let (queue_id, doorbell) = unsafe { ((*q).id, (*q).doorbell_signal) };
        let state: &'static QueueState = Box::leak(Box::new(QueueState::new(
            agent,
            agent_node(agent).0,
            queue_id,
        )));
        let Some(i) = DOORBELLS.iter().position(|d| {
            d.compare_exchange(0, doorbell, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            // Harvesting and doorbell correlation find queues through these slots only.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                sink::warn(
                    WarningKind::Internal,
                    format!(
                        "more than {MAX_QUEUES} queues at once; kernel dispatches on the others \
                         are not traced"
                    ),
                )
            });
            return;
        };
        QUEUES[i].store(state as *const QueueState as usize, Ordering::Release);
        start_harvester();
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
        sink::warn(
            WarningKind::Internal,
            "kernel tracing could not be set up on a queue; its dispatches are not traced",
        );
    }
    status
}

unsafe extern "C" fn queue_destroy(queue: *mut HsaQueue) -> Status {
    let Some(f) = fns() else { return ERROR };
    let mut state = None;
    if !queue.is_null() {
        // SAFETY: the application's live queue.
        let doorbell = unsafe { (*queue).doorbell_signal };
        for (i, d) in DOORBELLS.iter().enumerate() {
            if d.compare_exchange(doorbell, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                state = Some(QUEUES[i].swap(0, Ordering::AcqRel));
            }
        }
    }
    // SAFETY: forwarded.
    let status = unsafe { (f.queue_destroy)(queue) };
    if let Some(p) = state.filter(|p| *p != 0) {
        // SAFETY: queue states are leaked (never freed) once published.
        let q = unsafe { &*(p as *const QueueState) };
        let _ = std::panic::catch_unwind(|| {
            harvest(q, true);
            discard(q, "their queue was destroyed");
        });
    }
    status
}

unsafe extern "C" fn shut_down() -> Status {
    let Some(f) = fns() else { return ERROR };
    finish_outstanding();
    // SAFETY: forwarded.
    unsafe { (f.shut_down)() }
}

/// How long `hsa_shut_down` and the exit wait for dispatches still running.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// Harvests until no dispatch is pending or [`SHUTDOWN_WAIT`] passes; what is still running then
/// can no longer be recorded (the runtime is about to go away) and is counted as lost, with a
/// warning.
pub fn finish_outstanding() {
    let start = Instant::now();
    harvest_all();
    while PENDING.load(Ordering::Acquire) > 0 && start.elapsed() < SHUTDOWN_WAIT {
        std::thread::sleep(HARVEST_PERIOD);
        harvest_all();
    }
    if PENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        for q in live_queues() {
            discard(q, "the runtime shut down or the application exited");
        }
    });
}

/// The states of the queues currently intercepted (a destroyed queue is harvested and leaves
/// the slots in `hsa_queue_destroy`).
fn live_queues() -> impl Iterator<Item = &'static QueueState> {
    QUEUES.iter().filter_map(|slot| {
        let p = slot.load(Ordering::Acquire);
        // SAFETY: queue states are leaked (never freed) once published.
        (p != 0).then(|| unsafe { &*(p as *const QueueState) })
    })
}

/// Drops the dispatches still pending on `q`, which will never be harvested, counting them as
/// lost and saying so. Their signals are left alone (the GPU may still complete them).
fn discard(q: &QueueState, why: &str) {
    let (first, dropped) = {
        let mut ledger = q.ledger();
        let n = ledger.queue.len() as u64;
        ledger.queue.clear();
        (ledger.next - n, n)
    };
    if dropped == 0 {
        return;
    }
    // Harvests waiting for completeness must not wait for these.
    for seq in first..first + dropped {
        q.complete(seq);
    }
    PENDING.fetch_sub(dropped as usize, Ordering::AcqRel);
    sink::lost(LossCause::Unfinished, dropped);
    sink::warn(
        WarningKind::Unfinished,
        format!(
            "{dropped} kernel dispatch(es) had not finished when {why}; they have no record \
             (make the application wait for its kernels before it exits)"
        ),
    );
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

/// Which of a pair of wrapped signal stores or waits: the `_relaxed` one, or the `_sc` one
/// (`_screlease` / `_scacquire`).
const RELAXED: bool = false;
const SC: bool = true;

/// `hsa_signal_store_relaxed` (`IS_SC = false`) or `hsa_signal_store_screlease` (`true`).
unsafe extern "C" fn store<const IS_SC: bool>(signal: u64, value: i64) {
    note_doorbell(signal, value);
    if let Some(f) = fns() {
        let forward = if IS_SC {
            f.signal_store_screlease
        } else {
            f.signal_store_relaxed
        };
        // SAFETY: forwarded.
        unsafe { forward(signal, value) }
    }
}

/// `hsa_signal_wait_relaxed` (`IS_SC = false`) or `hsa_signal_wait_scacquire` (`true`).
unsafe extern "C" fn wait<const IS_SC: bool>(
    signal: u64,
    condition: u32,
    compare: i64,
    timeout: u64,
    hint: u32,
) -> i64 {
    let Some(f) = fns() else { return 0 };
    let forward = if IS_SC {
        f.signal_wait_scacquire
    } else {
        f.signal_wait_relaxed
    };
    // SAFETY: forwarded.
    let value = unsafe { forward(signal, condition, compare, timeout, hint) };
    harvest_all();
    value
}

/// A dispatch forwarded with the tool's completion signal, until it is harvested.
struct Pending {
    record: KernelDispatchRecord,
    signal: u64,
    /// Its place in its queue's order.
    seq: u64,
}

/// Emits the records of every finished dispatch (in each queue's order; a dispatch still
/// running holds back those after it on its queue). When it returns, every dispatch that had
/// finished before the call is recorded, whichever thread recorded it. Cheap when nothing is
/// pending. Never panics; safe from any thread but the runtime's own (see [`harvest`]).
pub fn harvest_all() {
    harvest_queues(true);
}

fn harvest_queues(complete: bool) {
    if PENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let _ = std::panic::catch_unwind(|| live_queues().for_each(|q| harvest(q, complete)));
}

/// [`harvest_all`] for one queue. Holds no lock of the tool's while it calls the runtime. With
/// `complete`, waits (at most [`COMPLETION_WAIT`]) until the dispatches other threads claimed
/// before it looked are recorded too; a runtime thread (the packet handler) must not wait, as
/// the thread it would wait for may be inside the runtime.
fn harvest(q: &QueueState, complete: bool) {
    let Some(f) = fns() else { return };
    let bound = loop {
        let (seq, signal) = {
            let ledger = q.ledger();
            match ledger.queue.front() {
                Some(front) => (front.seq, front.signal),
                None => break ledger.next,
            }
        };
        // Never more outstanding claims than the completion ring can track.
        if seq >= q.completed.load(Ordering::SeqCst) + DONE_RING as u64 {
            break seq;
        }
        // SAFETY: the runtime's own load on a signal of ours, which is never destroyed (see
        // SIGNAL_POOL). Another harvest may have claimed and recycled it meanwhile: then the
        // value says nothing about `seq`, and the claim below finds `seq` gone.
        if unsafe { (f.signal_load_relaxed)(signal) } > 0 {
            break seq;
        }
        let claimed = {
            let mut ledger = q.ledger();
            match ledger.queue.front() {
                Some(front) if front.seq == seq => ledger.queue.pop_front(),
                // Another harvest claimed it meanwhile.
                _ => None,
            }
        };
        let Some(done) = claimed else { continue };
        PENDING.fetch_sub(1, Ordering::AcqRel);
        let _ = std::panic::catch_unwind(|| record(f, q, &done));
        q.complete(seq);
    };
    if complete {
        q.wait_completed(bound);
    }
}

/// Reads a finished dispatch's time, emits its record (or counts it lost) and recycles its
/// signal. Called with no lock of the tool's held.
fn record(f: &Fns, q: &QueueState, done: &Pending) {
    let mut time = DispatchTime::default();
    // SAFETY: the runtime's own function on the signal the dispatch completed.
    if unsafe { (f.get_dispatch_time)(q.agent, done.signal, &mut time) } == SUCCESS {
        let mut record = done.record;
        record.start = time.start;
        record.end = time.end;
        sink::emit(&record);
    } else {
        sink::lost(LossCause::DispatchTime, 1);
    }
    give_back_signal(done.signal);
}

/// The harvester thread while dispatches are outstanding (or were, recently): how often it
/// looks, and how long it keeps looking after the last one before it parks.
const HARVEST_PERIOD: Duration = Duration::from_millis(1);
const HARVEST_LINGER: Duration = Duration::from_millis(100);

static HARVESTER: Mutex<Option<std::thread::Thread>> = Mutex::new(None);

/// Starts the harvester thread (once per process; again in a forked child).
fn start_harvester() {
    // try_lock: in a forked child the lock may have been held by a thread that is gone.
    let Ok(mut slot) = HARVESTER.try_lock() else {
        return;
    };
    if slot.is_some() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("rocprof-harvest".into())
        .spawn(|| {
            let mut last_busy = Instant::now();
            loop {
                harvest_queues(false);
                if PENDING.load(Ordering::Acquire) > 0 {
                    last_busy = Instant::now();
                }
                if last_busy.elapsed() < HARVEST_LINGER {
                    std::thread::sleep(HARVEST_PERIOD);
                } else {
                    std::thread::park_timeout(Duration::from_secs(1));
                    last_busy = Instant::now();
                }
            }
        });
    if let Ok(handle) = spawned {
        *slot = Some(handle.thread().clone());
    }
}

/// Wakes a parked harvester (cheap when it is not parked).
fn wake_harvester() {
    if let Ok(slot) = HARVESTER.try_lock()
        && let Some(t) = slot.as_ref()
    {
        t.unpark();
    }
}

/// In a forked child: the intercepted queues, their pending dispatches and the pooled signals
/// are the parent's (the child records only its own), and the harvester thread did not survive
/// the fork. Touches no lock another thread could have held at the fork.
pub fn after_fork_in_child() {
    for (d, q) in DOORBELLS.iter().zip(&QUEUES) {
        d.store(0, Ordering::Release);
        q.store(0, Ordering::Release);
    }
    PENDING.store(0, Ordering::Release);
    if let Ok(mut pool) = SIGNAL_POOL.try_lock() {
        pool.clear();
    }
    let started = HARVESTER
        .try_lock()
        .map(|mut h| h.take().is_some())
        .unwrap_or(false);
    if started {
        start_harvester();
    }
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

/// Completion signals of finished dispatches, reused instead of created each time.
///
/// They are never destroyed while the process runs: a harvest may be asking the runtime about a
/// signal that another harvest has just claimed and recycled (it then finds its claim gone and
/// looks again), and a destroyed signal must never reach the runtime. The pool therefore holds
/// at most as many signals as were ever outstanding at once.
static SIGNAL_POOL: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// Attempts at the pool's lock before giving up on it (it is held only for a push or a pop; a
/// forked child's pool may be locked forever by a thread that did not survive the fork).
const POOL_TRIES: u32 = 64;

/// Runs `f` on the pool, unless its lock stays busy for [`POOL_TRIES`] attempts.
fn with_pool<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> Option<R> {
    for _ in 0..POOL_TRIES {
        if let Ok(mut pool) = SIGNAL_POOL.try_lock() {
            return Some(f(&mut pool));
        }
        std::hint::spin_loop();
    }
    None
}

/// A completion signal with value 1: from the pool, else a new one.
fn take_signal(f: &Fns) -> Option<u64> {
    if let Some(s) = with_pool(|p| p.pop()).flatten() {
        // SAFETY: a signal of ours that nothing else references any more.
        unsafe { (f.signal_store_relaxed)(s, 1) };
        return Some(s);
    }
    let mut signal = 0u64;
    // SAFETY: the runtime's signal_create with a valid out-pointer.
    (unsafe { (f.signal_create)(1, 0, std::ptr::null(), &mut signal) } == SUCCESS).then_some(signal)
}

/// Returns a finished dispatch's signal to the pool (if the pool stays busy, the signal is left
/// unused rather than destroyed; see [`SIGNAL_POOL`]).
fn give_back_signal(signal: u64) {
    let _ = with_pool(|p| p.push(signal));
}

fn kernel_id(kernel_object: u64) -> u64 {
    KERNELS
        .get()
        .and_then(|k| k.read().ok()?.get(&kernel_object).copied())
        .unwrap_or(0)
}

/// The AMD loader extension, fetched at the first `hsa_executable_freeze` (the runtime is
/// initialised by then), or why there is none.
static LOADER: OnceLock<Result<Loader, String>> = OnceLock::new();

unsafe extern "C" fn executable_freeze(executable: u64, options: *const c_char) -> Status {
    let Some(f) = fns() else { return ERROR };
    // SAFETY: forwarded.
    let status = unsafe { (f.executable_freeze)(executable, options) };
    if status == SUCCESS {
        let _ = std::panic::catch_unwind(|| {
            // Fetched before iterating, so no runtime lock of the iteration is held meanwhile.
            LOADER.get_or_init(|| Loader::fetch(f));
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

/// VGPRs and SGPRs from the 64-byte kernel descriptor of the kernel object `object`: arch VGPRs
/// = (rsrc1[5:0] + 1) × (8 for wave32, else 4); gfx10+ reports 128 SGPRs. The descriptor is read
/// from the host copy the AMD loader reports, never through `object` itself (a device address
/// the host may not be able to read); without one the counts are 0, with a warning (once).
fn registers(object: u64) -> (u32, u32) {
    if object == 0 || !object.is_multiple_of(64) {
        return (0, 0);
    }
    let host = match LOADER.get() {
        // SAFETY: the runtime's own query, asked about a kernel object of a frozen executable.
        Some(Ok(loader)) => unsafe { loader.host_address(object) }.ok_or_else(|| {
            format!("the AMD loader extension does not know the kernel object {object:#x}")
        }),
        Some(Err(why)) => Err(why.clone()),
        None => Err("the AMD loader extension was not fetched".to_owned()),
    };
    let descriptor = match host {
        Ok(d) => d,
        Err(why) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                sink::warn(
                    WarningKind::Internal,
                    format!(
                        "kernel register counts are not recorded ({why}); the kernel trace shows \
                         0 VGPRs and SGPRs for those kernels"
                    ),
                );
            }
            return (0, 0);
        }
    };
    // SAFETY: the loader's host copy of the kernel's 64-byte descriptor, alive while its
    // executable is loaded (it was just frozen).
    let (rsrc1, properties) = unsafe {
        (
            descriptor.add(48).cast::<u32>().read_unaligned(),
            descriptor.add(56).cast::<u16>().read_unaligned(),
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
    fn the_completed_prefix_waits_for_the_oldest_and_then_carries_the_rest() {
        let q = QueueState::new(0, 0, 0);
        q.complete(1);
        q.complete(2);
        assert_eq!(
            q.completed.load(Ordering::SeqCst),
            0,
            "0 is still outstanding"
        );
        q.complete(0);
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        q.complete(4);
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        let start = Instant::now();
        q.wait_completed(3);
        assert!(
            start.elapsed() < Duration::from_millis(100),
            "already complete"
        );
        q.complete(3);
        assert_eq!(q.completed.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn concurrent_claimers_complete_every_dispatch_and_waiters_see_it() {
        const TOTAL: u64 = 20_000;
        let q = QueueState::new(0, 0, 0);
        let next = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (q, next) = (&q, &next);
                s.spawn(move || {
                    loop {
                        // Claims in order, never a ring's length ahead of the prefix (as
                        // `harvest` does); finishing order varies between threads.
                        let seq = next.load(Ordering::SeqCst);
                        if seq >= TOTAL {
                            return;
                        }
                        if seq >= q.completed.load(Ordering::SeqCst) + DONE_RING as u64
                            || next
                                .compare_exchange(seq, seq + 1, Ordering::SeqCst, Ordering::SeqCst)
                                .is_err()
                        {
                            std::hint::spin_loop();
                            continue;
                        }
                        if seq % 7 == t {
                            std::thread::yield_now();
                        }
                        q.complete(seq);
                    }
                });
            }
            s.spawn(|| {
                let start = Instant::now();
                q.wait_completed(TOTAL);
                assert_eq!(q.completed.load(Ordering::SeqCst), TOTAL);
                assert!(start.elapsed() < COMPLETION_WAIT);
            });
        });
        assert_eq!(q.completed.load(Ordering::SeqCst), TOTAL);
    }

    #[test]
    fn discarded_dispatches_do_not_hold_back_waiters() {
        let q = QueueState::new(0, 0, 0);
        for seq in 0..3 {
            let mut ledger = q.ledger();
            ledger.next += 1;
            ledger.queue.push_back(Pending {
                record: KernelDispatchRecord {
                    dispatch_id: seq,
                    kernel_id: 0,
                    correlation_id: 0,
                    start: 0,
                    end: 0,
                    queue_id: 0,
                    stream_id: 0,
                    agent_node_id: 0,
                    thread_id: 0,
                    grid: [1; 3],
                    workgroup: [1; 3],
                    private_segment_size: 0,
                    group_segment_size: 0,
                },
                signal: 0,
                seq,
            });
        }
        PENDING.fetch_add(3, Ordering::AcqRel);
        // 0 was claimed and recorded; 1 and 2 never finish.
        q.ledger().queue.pop_front();
        PENDING.fetch_sub(1, Ordering::AcqRel);
        q.complete(0);
        discard(&q, "a test dropped them");
        assert!(q.ledger().queue.is_empty());
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        let start = Instant::now();
        q.wait_completed(q.ledger().next);
        assert!(start.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn vgprs_follow_the_granule_and_wave_size() {
        assert_eq!(registers_from(0, 1 << 10), (8, 128));
        assert_eq!(registers_from(3, 1 << 10), (32, 128));
        assert_eq!(registers_from(3, 0), (16, 128));
    }
}
