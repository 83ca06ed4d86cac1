//! Where records go: per-thread chunk buffers feeding one [`LogWriter`].
//!
//! The traced path appends a fixed-size record to the calling thread's buffer (no lock is
//! contended, nothing is formatted, nothing is allocated once the thread's buffer exists). A
//! full buffer is handed to the log thread and replaced by a recycled one. Buffers are also
//! registered globally so they can be flushed at exit — and written directly, with one
//! `write(2)` each, from a crash handler.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering, compiler_fence, fence};
use std::sync::{Arc, Mutex, OnceLock};
use trace_records::OperationName;
use trace_records::log::{ChunkBuffer, LogWriter};
use trace_records::record::FixedRecord;

struct ThreadBuffer {
    busy: AtomicBool,
    buffer: UnsafeCell<ChunkBuffer>,
}

// SAFETY: `buffer` is only accessed while `busy` is held (acquired with a compare-exchange).
unsafe impl Sync for ThreadBuffer {}
// SAFETY: as above; ChunkBuffer itself is Send.
unsafe impl Send for ThreadBuffer {}

impl ThreadBuffer {
    /// Runs `f` on the buffer from its owning thread. The owner never competes for a lock: it
    /// announces itself with a plain store, and a flusher, which runs only at exit or crash,
    /// freezes appends and waits for announced ones (an asymmetric Dekker protocol: the
    /// flusher's `membarrier` pairs with the owner's compiler fence).
    #[inline]
    fn owner_with<R>(&self, f: impl FnOnce(&mut ChunkBuffer) -> R) -> Option<R> {
        if FROZEN.load(Ordering::Relaxed) {
            return None;
        }
        self.busy.store(true, Ordering::Relaxed);
        if ASYMMETRIC.load(Ordering::Relaxed) {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if FROZEN.load(Ordering::Relaxed) {
            self.busy.store(false, Ordering::Release);
            return None;
        }
        // SAFETY: only the owning thread runs this, and a flusher touches the buffer only
        // after freezing appends and seeing `busy` clear.
        let r = f(unsafe { &mut *self.buffer.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }

    /// Flusher side, after [`freeze`]: the buffer once its owner finished any append in
    /// progress (`None` if it does not finish within `spins`).
    fn frozen_with<R>(&self, spins: u32, f: impl FnOnce(&mut ChunkBuffer) -> R) -> Option<R> {
        for _ in 0..spins {
            if !self.busy.load(Ordering::Acquire) {
                // SAFETY: appends are frozen and the owner is not inside one.
                return Some(f(unsafe { &mut *self.buffer.get() }));
            }
            std::hint::spin_loop();
        }
        None
    }
}

static FROZEN: AtomicBool = AtomicBool::new(false);
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// Stops all appends and makes every announced one visible (see [`ThreadBuffer::owner_with`]).
fn freeze() {
    FROZEN.store(true, Ordering::Relaxed);
    if ASYMMETRIC.load(Ordering::Relaxed) {
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
        ASYMMETRIC.store(true, Ordering::Relaxed);
    }
}

struct Sink {
    writer: LogWriter,
    raw_fd: i32,
    registry: Mutex<Vec<Arc<ThreadBuffer>>>,
    generation: u64,
}

/// The current sink. Sinks are leaked, never freed: a pointer read once stays valid, and the
/// sink of a parent process can be replaced in a forked child whose other threads are gone.
static CURRENT: AtomicPtr<Sink> = AtomicPtr::new(std::ptr::null_mut());
static GENERATION: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

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
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: sinks are leaked once published and never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Sends records to `writer` from now on. `raw_fd` is a descriptor of the same log opened with
/// `O_APPEND`, for [`crash_flush`]. Returns `false` if a sink was already installed.
pub fn install(writer: LogWriter, raw_fd: i32) -> bool {
    if current().is_some() {
        return false;
    }
    register_membarrier();
    publish(writer, raw_fd);
    true
}

fn publish(writer: LogWriter, raw_fd: i32) {
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    let sink = Box::leak(Box::new(Sink {
        writer,
        raw_fd,
        registry: Mutex::new(Vec::new()),
        generation,
    }));
    CURRENT.store(sink, Ordering::Release);
}

/// In a forked child: records go to `writer` (the child's own log) from now on, the parent's
/// buffered records are left to the parent, and every definition is written again so the
/// child's log is self-contained.
pub fn reinstall_after_fork(writer: LogWriter, raw_fd: i32) {
    publish(writer, raw_fd);
    let defs: Vec<Definition> = match DEFINITIONS.try_lock() {
        Ok(d) => d.to_vec(),
        Err(_) => Vec::new(),
    };
    for d in defs {
        match d {
            Definition::String(id, text) => push_string(id, &text),
            Definition::Json(j) => push_json(&j),
            Definition::Operation(o) => emit(&o),
        }
    }
}

fn remember(d: Definition) {
    if let Ok(mut defs) = DEFINITIONS.lock() {
        defs.push(d);
    }
}

/// This thread's buffer as cached by a caller that keeps its own thread-local state (saves a
/// thread-local lookup per record on the traced path).
#[derive(Debug, Clone, Copy)]
pub struct Local {
    buffer: *const ThreadBuffer,
    generation: u64,
}

impl Local {
    /// No buffer yet.
    pub const EMPTY: Local = Local {
        buffer: std::ptr::null(),
        generation: 0,
    };
}

/// [`emit`] through a cached [`Local`] (filled on first use).
#[inline]
pub fn emit_cached<R: FixedRecord>(local: &mut Local, record: &R) {
    let Some(sink) = current() else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if local.buffer.is_null() || local.generation != sink.generation {
        // Slow path (first record of the thread, or a new sink): `emit` finds or creates the
        // thread's buffer, which is then cached.
        emit(record);
        if let Ok((tb, generation)) = LOCAL.try_with(Cell::get) {
            *local = Local {
                buffer: tb,
                generation,
            };
        }
        return;
    }
    // SAFETY: the registry owns the buffer and never drops it.
    let tb = unsafe { &*local.buffer };
    let done = tb.owner_with(|b| push_or_submit(b, |b| b.push(record)));
    if done.is_none() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Records that could not be recorded (no sink, or a buffer busy at exit).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Runs `f` on the calling thread's buffer (creating and registering it on first use).
fn with_local(f: impl FnOnce(&mut ChunkBuffer)) {
    let Some(sink) = current() else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let done = LOCAL.try_with(|local| {
        let (mut tb, generation) = local.get();
        if tb.is_null() || generation != sink.generation {
            let created = Arc::new(ThreadBuffer {
                busy: AtomicBool::new(false),
                buffer: UnsafeCell::new(sink.writer.buffer()),
            });
            tb = Arc::as_ptr(&created);
            match sink.registry.lock() {
                Ok(mut r) => r.push(created),
                Err(_) => return false,
            }
            local.set((tb, sink.generation));
        }
        // SAFETY: the registry owns the buffer and never drops it.
        unsafe { &*tb }.owner_with(f).is_some()
    });
    if done != Ok(true) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Appends one record from the calling thread.
#[inline]
pub fn emit<R: FixedRecord>(record: &R) {
    with_local(|b| push_or_submit(b, |b| b.push(record)));
}

/// Appends a string definition from the calling thread (and remembers it for forked children).
pub fn emit_string(id: u32, text: &str) {
    remember(Definition::String(id, text.to_owned()));
    push_string(id, text);
}

/// Appends an operation name (and remembers it for forked children).
pub fn emit_operation(op: &OperationName) {
    remember(Definition::Operation(*op));
    emit(op);
}

fn push_string(id: u32, text: &str) {
    with_local(|b| push_or_submit(b, |b| b.push_string(id, text)));
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

/// Appends a JSON document from the calling thread (and remembers it for forked children).
pub fn emit_json(json: &str) {
    remember(Definition::Json(json.to_owned()));
    push_json(json);
}

fn push_json(json: &str) {
    with_local(|b| push_or_submit(b, |b| b.push_json(json)));
}

/// Appends with `push`; when the buffer is full, hands it to the log thread and appends to the
/// fresh one. An entry that fits not even an empty chunk counts as dropped.
#[inline]
fn push_or_submit(b: &mut ChunkBuffer, push: impl Fn(&mut ChunkBuffer) -> bool) {
    if !push(b) {
        submit_full(b);
        if !push(b) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn submit_full(b: &mut ChunkBuffer) {
    if let Some(sink) = current() {
        let full = std::mem::replace(b, sink.writer.buffer());
        sink.writer.submit(full);
    }
}

/// Hands every thread's buffered records to the log thread and waits until they are written.
/// For normal exit (an `atexit` handler or the tool's finalizer).
pub fn flush_all() {
    let Some(sink) = current() else { return };
    freeze();
    let buffers: Vec<Arc<ThreadBuffer>> = match sink.registry.lock() {
        Ok(r) => r.clone(),
        Err(_) => return,
    };
    for tb in buffers {
        if tb.frozen_with(10_000_000, submit_full).is_none() {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = sink.writer.flush();
}

/// Best effort from a fatal-signal handler: writes every idle thread buffer straight to the
/// log with one `write(2)` each (async-signal-safe apart from the registry's `try_lock`).
pub fn crash_flush() {
    let Some(sink) = current() else { return };
    freeze();
    let Ok(registry) = sink.registry.try_lock() else {
        return;
    };
    for tb in registry.iter() {
        let _ = tb.frozen_with(100_000, |b| {
            if !b.is_empty() {
                let chunk = b.finish();
                // SAFETY: writes `chunk.len()` bytes from a live slice to the log's descriptor.
                let _ = unsafe { libc::write(sink.raw_fd, chunk.as_ptr().cast(), chunk.len()) };
                b.clear();
            }
        });
    }
}

/// Counts `n` records lost for `cause` (shown by `rocprof` after the run, one line per cause).
pub fn lost(cause: trace_records::loss::LossCause, n: u64) {
    LOSSES[cause as usize].fetch_add(n, Ordering::Relaxed);
}

static LOSSES: [AtomicU64; trace_records::loss::LossCause::COUNT] =
    [const { AtomicU64::new(0) }; trace_records::loss::LossCause::COUNT];

/// Records a warning of the tool in the log; `rocprof` prints it after the run (identical
/// warnings of several processes once). Nothing is printed inside the application.
pub fn warn(about: trace_records::docs::WarningKind, message: impl Into<String>) {
    let doc = trace_records::docs::Document::Warning(trace_records::docs::ToolWarning {
        about,
        message: message.into(),
    });
    push_json(&doc.to_json());
}
