//! Where records go: per-thread chunks of the process's record log ([`record_log::LogFile`]).
//!
//! The traced path appends a fixed-size record to the calling thread's chunk, which lies in a
//! shared mapping of the log file: no lock is contended, nothing is formatted or allocated, no
//! system call is made, and the record is in the page cache as soon as the append returns, so
//! nothing is lost however the process ends. A full chunk is sealed and replaced by a fresh
//! one from the log. Chunks are also registered globally so they can be sealed at exit.

use crate::hot::HOT;
use record_log::{Chunk, LogFile};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, compiler_fence, fence};
use std::sync::{Arc, Mutex, OnceLock};
use trace_records::OperationName;
use trace_records::TickCall;
use trace_records::docs::Document;
use trace_records::loss::LossCause;
use trace_records::record::FixedRecord;

struct ThreadBuffer {
    busy: AtomicBool,
    chunk: UnsafeCell<Option<Chunk>>,
}

// SAFETY: `buffer` is only accessed while `busy` is held (acquired with a compare-exchange).
unsafe impl Sync for ThreadBuffer {}
// SAFETY: as above; Chunk itself is Send.
unsafe impl Send for ThreadBuffer {}

impl ThreadBuffer {
    /// Runs `f` on the buffer from its owning thread. The owner never competes for a lock: it
    /// announces itself with a plain store, and a sealer, which runs only at exit, freezes
    /// appends for a moment and waits for announced ones (an asymmetric Dekker protocol: the
    /// sealer's `membarrier` pairs with the owner's compiler fence). An owner that finds
    /// appends frozen waits for the sealer to finish (it takes microseconds) and appends then;
    /// the Acquire load that sees appends unfrozen also sees the slot the sealer emptied.
    ///
    /// The common case — `membarrier` registered, nothing frozen — reads [`MODE`] once, after
    /// the announcement; anything else is [`ThreadBuffer::owner_with_slow`].
    #[inline(always)]
    fn owner_with<R>(&self, f: impl FnOnce(&mut Option<Chunk>) -> R) -> Option<R> {
        // No check before the announcement: an owner that announces while appends are
        // frozen sees it just below and withdraws (the sealer waits for that).
        self.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        if MODE.load(Ordering::Acquire) != ASYMMETRIC {
            return self.announced_slow(f);
        }
        // SAFETY: only the owning thread runs this, and a sealer touches the buffer only
        // after freezing appends and seeing `busy` clear.
        let r = f(unsafe { &mut *self.chunk.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }

    /// [`ThreadBuffer::owner_with`] when appends need a full fence (no `membarrier`) or are
    /// frozen; entered announced.
    #[cold]
    #[inline(never)]
    fn announced_slow<R>(&self, f: impl FnOnce(&mut Option<Chunk>) -> R) -> Option<R> {
        for attempt in 0..2 {
            if attempt > 0 {
                self.busy.store(true, Ordering::Relaxed);
            }
            if MODE.load(Ordering::Relaxed) & ASYMMETRIC != 0 {
                compiler_fence(Ordering::SeqCst);
            } else {
                fence(Ordering::SeqCst);
            }
            if MODE.load(Ordering::Acquire) & FROZEN != 0 {
                self.busy.store(false, Ordering::Release);
                if !wait_unfrozen() {
                    return None;
                }
                continue;
            }
            // SAFETY: as in `owner_with`.
            let r = f(unsafe { &mut *self.chunk.get() });
            self.busy.store(false, Ordering::Release);
            return Some(r);
        }
        None
    }

    /// Sealer side, after [`freeze`]: the buffer once its owner finished any append in
    /// progress (`None` if it does not finish within `spins`).
    fn frozen_with<R>(&self, spins: u32, f: impl FnOnce(&mut Option<Chunk>) -> R) -> Option<R> {
        for _ in 0..spins {
            if !self.busy.load(Ordering::Acquire) {
                // SAFETY: appends are frozen and the owner is not inside one.
                return Some(f(unsafe { &mut *self.chunk.get() }));
            }
            std::hint::spin_loop();
        }
        None
    }
}

/// How appends run, in one byte (the traced path reads it twice): [`FROZEN`] while a sealer
/// works, [`ASYMMETRIC`] once the process registered for expedited `membarrier`. A field of
/// `crate::hot::HOT` with the current sink and the clock, so the traced exit loads one
/// address for all three.
const MODE: &AtomicU8 = &HOT.sink.mode;
/// [`MODE`] bit: appends are frozen.
const FROZEN: u8 = 1;
/// [`MODE`] bit: appends use a compiler fence only (the sealer issues `membarrier`).
const ASYMMETRIC: u8 = 2;

/// Waits (spinning, bounded) until appends are unfrozen; `false` if they stay frozen.
#[cold]
fn wait_unfrozen() -> bool {
    for _ in 0..1_000_000 {
        if MODE.load(Ordering::Acquire) & FROZEN == 0 {
            return true;
        }
        std::hint::spin_loop();
    }
    false
}

/// Stops all appends and makes every announced one visible (see [`ThreadBuffer::owner_with`]).
fn freeze() {
    if MODE.fetch_or(FROZEN, Ordering::Relaxed) & ASYMMETRIC != 0 {
        // SAFETY: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) takes no pointers; the process
        // registered for it before ASYMMETRIC was set.
        unsafe { libc::syscall(libc::SYS_membarrier, 8, 0, 0) };
    } else {
        fence(Ordering::SeqCst);
    }
}

/// Registers for expedited private membarrier, which lets appends use a compiler fence only.
fn register_membarrier() {
    // SAFETY: membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) takes no pointers.
    if unsafe { libc::syscall(libc::SYS_membarrier, 16, 0, 0) } == 0 {
        MODE.fetch_or(ASYMMETRIC, Ordering::Relaxed);
    }
}

struct Sink {
    log: Arc<LogFile>,
    registry: Mutex<Vec<Arc<ThreadBuffer>>>,
    generation: u64,
}

/// The current sink (null: none). Sinks are leaked, never freed: a pointer read once stays
/// valid, and the sink of a parent process can be replaced in a forked child whose other
/// threads are gone. It is `crate::hot::HOT`'s `sink.current`, type-erased there.
#[inline(always)]
fn current_ptr() -> *mut Sink {
    HOT.sink.current.load(Ordering::Acquire).cast()
}

/// Publishes `sink` as the current sink (or none).
fn set_current(sink: *mut Sink) {
    HOT.sink.current.store(sink.cast(), Ordering::Release);
}

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Losses counted while no log was open; moved into the log's header when one is installed.
static EARLY_LOSSES: [AtomicU64; LossCause::COUNT] =
    [const { AtomicU64::new(0) }; LossCause::COUNT];

/// Definitions (strings, operation names, JSON documents) re-emitted into a forked child's log.
#[derive(Clone)]
enum Definition {
    String(u32, String),
    Json(String),
    Operation(OperationName),
}

static DEFINITIONS: Mutex<Vec<Definition>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's buffer (owned by the registry of the sink of the given generation, which
    /// keeps it for the process's lifetime). A plain pointer on purpose: a thread-local with a
    /// destructor would be torn down by `exit()` before the `atexit` handlers run, losing
    /// everything recorded during teardown.
    static LOCAL: Cell<(*const ThreadBuffer, u64)> = const { Cell::new((std::ptr::null(), 0)) };
}

fn current() -> Option<&'static Sink> {
    let p = current_ptr();
    // SAFETY: sinks are leaked once published and never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Sends records to `log` from now on. Returns `false` if a sink was already installed.
pub fn install(log: Arc<LogFile>) -> bool {
    if current().is_some() {
        return false;
    }
    register_membarrier();
    publish(log);
    true
}

fn publish(log: Arc<LogFile>) {
    for cause in LossCause::ALL {
        let early = EARLY_LOSSES[cause as usize].swap(0, Ordering::Relaxed);
        if early > 0 {
            log.lost(cause, early);
        }
    }
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    let sink = Box::leak(Box::new(Sink {
        log,
        registry: Mutex::new(Vec::new()),
        generation,
    }));
    set_current(sink);
}

/// In a forked child, first of all: stops recording into the parent's log. The parent's chunks
/// are shared with the child through the mapping, so a child writing them would corrupt the
/// parent's records; until [`reinstall_after_fork`], records are counted as lost instead.
pub fn detach_after_fork() {
    set_current(std::ptr::null_mut());
}

/// In a forked child: records go to `log` (the child's own) from now on, the parent's chunks
/// are left to the parent (the child never writes them), and every definition is written
/// again so the child's log is self-contained.
pub fn reinstall_after_fork(log: Arc<LogFile>) {
    publish(log);
    let defs: Vec<Definition> = match DEFINITIONS.try_lock() {
        Ok(d) => d.to_vec(),
        Err(_) => Vec::new(),
    };
    for d in defs {
        match d {
            Definition::String(id, text) => push_string(id, &text),
            Definition::Json(j) => push_json(&j),
            Definition::Operation(o) => push_operation(&o),
        }
    }
}

fn remember(d: Definition) {
    if let Ok(mut defs) = DEFINITIONS.lock() {
        defs.push(d);
    }
}

/// Counts `n` records lost for `cause` (shown by `rocprof` after the run, one line per cause).
/// The count lives in the log's header, so it survives however the process ends.
pub fn lost(cause: LossCause, n: u64) {
    match current() {
        Some(sink) => sink.log.lost(cause, n),
        None => {
            EARLY_LOSSES[cause as usize].fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// This thread's buffer as cached by a caller that keeps its own thread-local state (saves a
/// thread-local lookup per record on the traced path).
///
/// It names the sink the buffer belongs to by the sink's address: sinks are leaked, never
/// freed, so an address is never reused and comparing it with the current one is the generation
/// check, one load less than reading the sink's generation.
#[derive(Debug, Clone, Copy)]
pub struct Local {
    buffer: *const ThreadBuffer,
    sink: *const Sink,
    /// The thread's OS id, cached by its owner ([`Local::set_thread_id`]; 0 until then).
    tid: u32,
}

impl Local {
    /// No buffer yet. Its sink is a dangling, non-null address that no sink has (sinks are
    /// heap allocations), so a `Local` never names the null "no sink": one comparison with
    /// the current sink covers "no buffer yet", "a new sink" and "no sink".
    pub const EMPTY: Local = Local {
        buffer: std::ptr::null(),
        sink: std::ptr::dangling(),
        tid: 0,
    };

    /// The thread id cached here (0: none yet).
    #[inline(always)]
    pub fn thread_id(&self) -> u32 {
        self.tid
    }

    /// Caches the owning thread's OS id (the tick-timed appends name their calls with it).
    pub fn set_thread_id(&mut self, tid: u32) {
        self.tid = tid;
    }
}

/// [`emit`] through a cached [`Local`] (filled on first use): the traced exit's append.
///
/// Always inlined, and written so that its hot path makes no call that returns to it: every
/// uncommon case (no cached buffer, a full or missing chunk, appends needing a full fence or
/// frozen) is a tail call to an out-of-line function that takes the record by value. The caller
/// then keeps its values in scratch registers (no callee-saved registers to push and pop) and
/// the record's fields are stored straight into the chunk.
#[inline(always)]
pub fn emit_cached<R: FixedRecord + Copy>(local: &mut Local, record: R) {
    let p = current_ptr();
    // `local.sink` is never null (`Local::EMPTY`): one comparison for every other case.
    if !std::ptr::eq(local.sink, p) {
        return emit_uncached(local, record);
    }
    // SAFETY: the registry owns the buffer and never drops it (`local.sink` is set only with
    // the buffer).
    let tb = unsafe { &*local.buffer };
    // Announced (see `ThreadBuffer::owner_with`); the common mode needs a compiler fence only.
    tb.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    if MODE.load(Ordering::Acquire) != ASYMMETRIC {
        return emit_announced_slow(p, tb, record);
    }
    // SAFETY: only the owning thread runs this, and a sealer touches the buffer only after
    // freezing appends and seeing `busy` clear.
    let slot = unsafe { &mut *tb.chunk.get() };
    if let Some(c) = slot
        && c.push(&record)
    {
        tb.busy.store(false, Ordering::Release);
        return;
    }
    emit_replacing(p, tb, record);
}

/// [`emit_cached`] without a cached buffer of the current sink: appends through the
/// thread-local and caches the thread's buffer (or counts the record lost without a sink).
#[cold]
#[inline(never)]
fn emit_uncached<R: FixedRecord + Copy>(local: &mut Local, record: R) {
    append_uncached(local, &|c: &mut Chunk| c.push(&record));
}

/// [`emit_cached`] announced on `tb` when appends need a full fence or are frozen.
#[cold]
#[inline(never)]
fn emit_announced_slow<R: FixedRecord + Copy>(sink: *const Sink, tb: &ThreadBuffer, record: R) {
    // SAFETY: sinks are leaked once published and never freed.
    push_announced_slow(unsafe { &*sink }, tb, |c| c.push(&record));
}

/// `push` on `tb`, announced, when appends need a full fence or are frozen (the slow protocol
/// of [`ThreadBuffer::announced_slow`]); counted lost if appends stay frozen.
fn push_announced_slow(sink: &Sink, tb: &ThreadBuffer, push: impl Fn(&mut Chunk) -> bool) {
    if tb
        .announced_slow(|c| push_or_replace(sink, c, true, &push))
        .is_none()
    {
        sink.log.lost(LossCause::NoBuffer, 1);
    }
}

/// [`emit_cached`] announced on `tb` when its chunk is full or missing: seals it, starts a
/// fresh one, appends there, and withdraws the announcement.
#[cold]
#[inline(never)]
fn emit_replacing<R: FixedRecord + Copy>(sink: *const Sink, tb: &ThreadBuffer, record: R) {
    // SAFETY: sinks are leaked once published and never freed.
    let sink = unsafe { &*sink };
    // SAFETY: as in `emit_cached`: the owner, announced and not frozen.
    let slot = unsafe { &mut *tb.chunk.get() };
    start_chunk(sink, slot, true, |c| c.push(&record));
    tb.busy.store(false, Ordering::Release);
}

/// The traced exit's append of a call timed in ticks, through a cached [`Local`] (whose
/// thread id the call is given): as [`emit_cached`], with the chunk's own check that its clock
/// epoch is the current one ([`Chunk::push_api_ticks`]); every other case (a new epoch, a call
/// that does not fit a tick-timed entry, a full chunk) is the cold [`push_tick_call`]. The
/// cold calls take the call as scalars and read the thread id from `local` themselves, so the
/// exit keeps only the call's own values in registers and needs no callee-saved ones.
#[inline(always)]
pub fn emit_tick_call(local: &mut Local, correlation_id: u64, start: u64, end: u64, kind: u32) {
    let p = current_ptr();
    if !std::ptr::eq(local.sink, p) {
        return emit_tick_uncached(local, correlation_id, start, end, kind);
    }
    // SAFETY: as in `emit_cached`.
    let tb = unsafe { &*local.buffer };
    tb.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    if MODE.load(Ordering::Acquire) != ASYMMETRIC {
        return emit_tick_announced_slow(local, correlation_id, start, end, kind);
    }
    // SAFETY: as in `emit_cached`.
    let slot = unsafe { &mut *tb.chunk.get() };
    let call = tick_call(local, correlation_id, start, end, kind);
    if let Some(c) = slot
        && c.push_api_ticks(&call, crate::clock::sequence())
    {
        tb.busy.store(false, Ordering::Release);
        return;
    }
    emit_tick_fixup(local, correlation_id, start, end, kind);
}

/// The call [`emit_tick_call`] appends, on the thread `local` belongs to.
#[inline(always)]
fn tick_call(local: &Local, correlation_id: u64, start: u64, end: u64, kind: u32) -> TickCall {
    TickCall {
        correlation_id,
        start,
        end,
        thread_id: local.tid,
        kind,
    }
}

/// Appends `call` to `c` whichever way it fits under the clock's current epoch (an epoch entry
/// first when the chunk's is another); `false` when the chunk has no room.
fn push_tick_call(c: &mut Chunk, call: &TickCall) -> bool {
    match crate::clock::epoch() {
        Some(epoch) => c.push_call(call, &epoch),
        // Not reached: calls are timed in ticks only once the TSC clock is on, and it stays
        // on. Should it be, the call is kept with the time of now.
        None => {
            let now = crate::clock::now_ns();
            let record = trace_records::ApiRecord::of_kind(
                call.kind,
                call.correlation_id,
                now,
                now,
                call.thread_id,
            );
            c.push(&record)
        }
    }
}

/// [`emit_tick_call`] without a cached buffer of the current sink.
#[cold]
#[inline(never)]
fn emit_tick_uncached(local: &mut Local, id: u64, start: u64, end: u64, kind: u32) {
    let call = tick_call(local, id, start, end, kind);
    append_uncached(local, &|c: &mut Chunk| push_tick_call(c, &call));
}

/// [`emit_tick_call`] announced on the cached buffer of `local` (which names the current sink)
/// when appends need a full fence or are frozen. The sink and buffer are read back from `local`
/// rather than passed, so the exit need not keep them in registers for this call.
#[cold]
#[inline(never)]
fn emit_tick_announced_slow(local: &Local, id: u64, start: u64, end: u64, kind: u32) {
    let call = tick_call(local, id, start, end, kind);
    // SAFETY: `local` names the current sink, as `emit_tick_call` checked; sinks are leaked
    // once published and never freed, and the registry never drops a buffer.
    let (sink, tb) = unsafe { (&*local.sink, &*local.buffer) };
    push_announced_slow(sink, tb, |c| push_tick_call(c, &call));
}

/// [`emit_tick_call`] announced on the cached buffer of `local` when the fast append did not
/// apply: a new epoch, a call that does not fit a tick-timed entry, or a full or missing chunk.
#[cold]
#[inline(never)]
fn emit_tick_fixup(local: &Local, id: u64, start: u64, end: u64, kind: u32) {
    let call = tick_call(local, id, start, end, kind);
    // SAFETY: as in `emit_tick_announced_slow`.
    let (sink, tb) = unsafe { (&*local.sink, &*local.buffer) };
    // SAFETY: as in `emit_cached`: the owner, announced and not frozen.
    let slot = unsafe { &mut *tb.chunk.get() };
    push_or_replace(sink, slot, true, |c| push_tick_call(c, &call));
    tb.busy.store(false, Ordering::Release);
}

/// Appends one variable-length trace entry (`tag`, the concatenation of `parts`) through a
/// cached [`Local`], as [`emit_cached`] does for fixed records.
pub fn emit_parts_cached(local: &mut Local, tag: trace_records::Tag, parts: &[&[u8]]) {
    append_cached(local, |c| c.push_parts(tag, parts));
}

/// Appends one trace entry with `push` through a cached [`Local`]: the thread's buffer as
/// cached when it belongs to the current sink, else (the thread's first entry, or a new sink)
/// found or created and then cached. Always inlined into the traced exit, whose record is then
/// stored straight into the chunk; the uncommon cases are out of line.
#[inline(always)]
fn append_cached(local: &mut Local, push: impl Fn(&mut Chunk) -> bool) {
    let p = current_ptr();
    // `local.sink` is never null (`Local::EMPTY`): one comparison for every other case.
    if !std::ptr::eq(local.sink, p) {
        append_uncached(local, &push);
        return;
    }
    // SAFETY: sinks are leaked once published and never freed.
    let sink = unsafe { &*p };
    // SAFETY: the registry owns the buffer and never drops it (`local.sink` is set only with
    // the buffer).
    let tb = unsafe { &*local.buffer };
    let done = tb.owner_with(|c| push_or_replace(sink, c, true, &push));
    if done.is_none() {
        sink.log.lost(LossCause::NoBuffer, 1);
    }
}

/// [`append_cached`] when the cache does not name the current sink: appends through the
/// thread-local and caches the thread's buffer (or counts the entry lost without a sink).
#[cold]
#[inline(never)]
fn append_uncached(local: &mut Local, push: &dyn Fn(&mut Chunk) -> bool) {
    let p = current_ptr();
    if p.is_null() {
        lost(LossCause::NoBuffer, 1);
        return;
    }
    // SAFETY: sinks are leaked once published and never freed.
    let sink = unsafe { &*p };
    with_local(true, |sink, c| push_or_replace(sink, c, true, push));
    if let Ok((tb, generation)) = LOCAL.try_with(Cell::get)
        && !tb.is_null()
        && generation == sink.generation
    {
        *local = Local {
            buffer: tb,
            sink: p,
            tid: local.tid,
        };
    }
}

/// Runs `f` on the calling thread's chunk slot (creating and registering the thread's buffer on
/// first use).
fn with_local(record: bool, f: impl FnOnce(&'static Sink, &mut Option<Chunk>)) {
    let miss = if record {
        LossCause::NoBuffer
    } else {
        LossCause::Definitions
    };
    let Some(sink) = current() else {
        lost(miss, 1);
        return;
    };
    let done = LOCAL.try_with(|local| {
        let (mut tb, generation) = local.get();
        if tb.is_null() || generation != sink.generation {
            let created = Arc::new(ThreadBuffer {
                busy: AtomicBool::new(false),
                chunk: UnsafeCell::new(None),
            });
            tb = Arc::as_ptr(&created);
            match sink.registry.lock() {
                Ok(mut r) => r.push(created),
                Err(_) => return false,
            }
            local.set((tb, sink.generation));
        }
        // SAFETY: the registry owns the buffer and never drops it.
        unsafe { &*tb }.owner_with(|c| f(sink, c)).is_some()
    });
    if done != Ok(true) {
        sink.log.lost(miss, 1);
    }
}

/// Appends one record from the calling thread.
#[inline]
pub fn emit<R: FixedRecord>(record: &R) {
    with_local(true, |sink, c| {
        push_or_replace(sink, c, true, |c| c.push(record))
    });
}

/// Appends a dispatch's raw counter output from the calling thread (a trace record: when it
/// cannot be written it is counted lost).
pub fn emit_counter_sample(header: &trace_records::CounterSampleHeader, output: &[u8]) {
    use zerocopy::IntoBytes;
    with_local(true, |sink, c| {
        push_or_replace(sink, c, true, |c| {
            c.push_parts(
                trace_records::Tag::CounterSample,
                &[header.as_bytes(), output],
            )
        })
    });
}

/// Appends a string definition from the calling thread (and remembers it for forked children).
pub fn emit_string(id: u32, text: &str) {
    remember(Definition::String(id, text.to_owned()));
    push_string(id, text);
}

/// Appends an operation name (and remembers it for forked children).
pub fn emit_operation(op: &OperationName) {
    remember(Definition::Operation(*op));
    push_operation(op);
}

/// Appends a definition (not a trace record) with `push` from the calling thread.
fn push_definition(push: impl Fn(&mut Chunk) -> bool) {
    with_local(false, |sink, c| push_or_replace(sink, c, false, push));
}

fn push_string(id: u32, text: &str) {
    push_definition(|c| c.push_string(id, text));
}

fn push_operation(op: &OperationName) {
    push_definition(|c| c.push(op));
}

static STRINGS: OnceLock<Mutex<std::collections::HashMap<String, u32>>> = OnceLock::new();

/// Interns `text` for this process's log, emitting its definition the first time.
pub fn intern(text: &str) -> u32 {
    let table = STRINGS.get_or_init(|| Mutex::new(std::collections::HashMap::new()));
    let Ok(mut table) = table.lock() else {
        return 0;
    };
    if let Some(id) = table.get(text) {
        return *id;
    }
    let id = table.len() as u32 + 1;
    table.insert(text.to_owned(), id);
    drop(table);
    emit_string(id, text);
    id
}

/// Appends a typed document from the calling thread (and remembers it for forked children).
pub fn emit_doc(doc: &Document) {
    let json = doc.to_json();
    remember(Definition::Json(json.clone()));
    push_json(&json);
}

/// Appends a typed document about one event (a traced dispatch, a saved code object): not
/// remembered for forked children, whose logs describe their own events.
pub fn emit_event_doc(doc: &Document) {
    push_json(&doc.to_json());
}

fn push_json(json: &str) {
    push_definition(|c| c.push_json(json));
}

/// Records a warning of the tool in the log; `rocprof` prints it after the run (identical
/// warnings of several processes once). Nothing is printed inside the application.
pub fn warn(about: trace_records::docs::WarningKind, message: impl Into<String>) {
    let doc = Document::Warning(trace_records::docs::ToolWarning {
        about,
        message: message.into(),
    });
    push_json(&doc.to_json());
}

fn tid() -> u32 {
    // SAFETY: gettid takes no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Appends with `push`; when the thread has no chunk or it is full, seals it and takes a fresh
/// one from the log ([`start_chunk`]). What cannot be recorded is counted under its cause (a
/// definition, i.e. not a trace `record`, under [`LossCause::Definitions`]).
#[inline(always)]
fn push_or_replace(
    sink: &Sink,
    slot: &mut Option<Chunk>,
    record: bool,
    push: impl Fn(&mut Chunk) -> bool,
) {
    if let Some(c) = slot
        && push(c)
    {
        return;
    }
    start_chunk(sink, slot, record, push);
}

/// The thread's chunk is full (or it has none): seals it, starts a fresh one and appends there.
/// Out of line and cold (once per chunk), so that the traced path's code holds only the append.
#[cold]
#[inline(never)]
fn start_chunk(
    sink: &Sink,
    slot: &mut Option<Chunk>,
    record: bool,
    push: impl Fn(&mut Chunk) -> bool,
) {
    let fresh = match slot.take() {
        Some(full) => sink.log.replace(full, tid()),
        None => sink.log.take(tid()),
    };
    match fresh {
        Ok(mut c) => {
            if !push(&mut c) {
                // Only a definition can be too long for an empty chunk.
                sink.log.lost(LossCause::Definitions, 1);
            }
            *slot = Some(c);
        }
        Err(e) if record => sink.log.lost(e.cause(), 1),
        Err(_) => sink.log.lost(LossCause::Definitions, 1),
    }
}

/// Seals every thread's chunk that is idle (its checksum then protects it), at normal exit.
/// Threads go on recording afterwards, into fresh chunks: nothing recorded during the rest of
/// the teardown is lost. A chunk whose owner is inside an append stays open; the reader trusts
/// its commit word.
pub fn seal_all() {
    let Some(sink) = current() else { return };
    let buffers: Vec<Arc<ThreadBuffer>> = match sink.registry.lock() {
        Ok(r) => r.clone(),
        Err(_) => return,
    };
    freeze();
    for tb in &buffers {
        let _ = tb.frozen_with(1_000_000, |slot| {
            if let Some(c) = slot.take() {
                sink.log.seal(c);
            }
        });
    }
    MODE.fetch_and(!FROZEN, Ordering::Release);
}
