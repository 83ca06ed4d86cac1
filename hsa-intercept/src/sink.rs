//! Where records go: per-thread chunk buffers feeding one [`LogWriter`].
//!
//! The traced path appends a fixed-size record to the calling thread's buffer (no lock is
//! contended, nothing is formatted, nothing is allocated once the thread's buffer exists). A
//! full buffer is handed to the log thread and replaced by a recycled one. Buffers are also
//! registered globally so they can be flushed at exit — and written directly, with one
//! `write(2)` each, from a crash handler.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
    fn try_with<R>(&self, f: impl FnOnce(&mut ChunkBuffer) -> R) -> Option<R> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: `busy` is held, so no other reference to the buffer exists.
        let r = f(unsafe { &mut *self.buffer.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }
}

struct Sink {
    writer: LogWriter,
    raw_fd: i32,
    registry: Mutex<Vec<Arc<ThreadBuffer>>>,
}

static SINK: OnceLock<Sink> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's buffer (owned by the registry, which keeps it for the process's lifetime).
    /// A plain pointer on purpose: a thread-local with a destructor would be torn down by
    /// `exit()` before the `atexit` handlers run, losing everything recorded during teardown.
    static LOCAL: Cell<*const ThreadBuffer> = const { Cell::new(std::ptr::null()) };
}

/// Sends records to `writer` from now on (once per process; `false` if already installed).
/// `raw_fd` is a descriptor of the same log opened with `O_APPEND`, for [`crash_flush`].
pub fn install(writer: LogWriter, raw_fd: i32) -> bool {
    SINK.set(Sink {
        writer,
        raw_fd,
        registry: Mutex::new(Vec::new()),
    })
    .is_ok()
}

/// Whether a sink is installed.
pub fn installed() -> bool {
    SINK.get().is_some()
}

/// Records that could not be recorded (no sink, or a buffer busy at exit).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Runs `f` on the calling thread's buffer (creating and registering it on first use).
fn with_local(f: impl FnOnce(&mut ChunkBuffer)) {
    let Some(sink) = SINK.get() else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let done = LOCAL.try_with(|local| {
        let mut tb = local.get();
        if tb.is_null() {
            let created = Arc::new(ThreadBuffer {
                busy: AtomicBool::new(false),
                buffer: UnsafeCell::new(sink.writer.buffer()),
            });
            tb = Arc::as_ptr(&created);
            match sink.registry.lock() {
                Ok(mut r) => r.push(created),
                Err(_) => return false,
            }
            local.set(tb);
        }
        // SAFETY: the registry owns the buffer and never drops it.
        unsafe { &*tb }.try_with(f).is_some()
    });
    if done != Ok(true) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Appends one record from the calling thread.
#[inline]
pub fn emit<R: FixedRecord>(record: &R) {
    with_local(|b| {
        if !b.push(record) {
            submit_full(b);
            let _ = b.push(record);
        }
    });
}

/// Appends a string definition from the calling thread.
pub fn emit_string(id: u32, text: &str) {
    with_local(|b| {
        if !b.push_string(id, text) {
            submit_full(b);
            let _ = b.push_string(id, text);
        }
    });
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

/// Appends a JSON document from the calling thread.
pub fn emit_json(json: &str) {
    with_local(|b| {
        if !b.push_json(json) {
            submit_full(b);
            let _ = b.push_json(json);
        }
    });
}

fn submit_full(b: &mut ChunkBuffer) {
    if let Some(sink) = SINK.get() {
        let full = std::mem::replace(b, sink.writer.buffer());
        sink.writer.submit(full);
    }
}

/// Hands every thread's buffered records to the log thread and waits until they are written.
/// For normal exit (an `atexit` handler or the tool's finalizer).
pub fn flush_all() {
    let Some(sink) = SINK.get() else { return };
    let buffers: Vec<Arc<ThreadBuffer>> = match sink.registry.lock() {
        Ok(r) => r.clone(),
        Err(_) => return,
    };
    for tb in buffers {
        // A buffer busy now belongs to a thread in the middle of an append; retry briefly.
        let mut flushed = false;
        for _ in 0..1000 {
            if tb.try_with(submit_full).is_some() {
                flushed = true;
                break;
            }
            std::hint::spin_loop();
        }
        if !flushed {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = sink.writer.flush();
}

/// Best effort from a fatal-signal handler: writes every idle thread buffer straight to the
/// log with one `write(2)` each (async-signal-safe apart from the registry's `try_lock`).
pub fn crash_flush() {
    let Some(sink) = SINK.get() else { return };
    let Ok(registry) = sink.registry.try_lock() else {
        return;
    };
    for tb in registry.iter() {
        let _ = tb.try_with(|b| {
            if !b.is_empty() {
                let chunk = b.finish();
                // SAFETY: writes `chunk.len()` bytes from a live slice to the log's descriptor.
                let _ = unsafe { libc::write(sink.raw_fd, chunk.as_ptr().cast(), chunk.len()) };
                b.clear();
            }
        });
    }
}
