//! How the stock ROCm 7.2.x runtime generation reads `HsaNodeProperties`: into heap storage of
//! exactly its own record size, with nothing to stop a thunk that writes more.
//!
//! `hsaKmtGetNodeProperties` takes no size, so a thunk built with a larger record (396 bytes in
//! current development sources) writes past the end of the 376-byte allocation, over the heap
//! chunk that follows it. The stock runtime keeps its records for as long as the library is
//! loaded and frees them when it is unloaded (at exit), so the damage surfaces there, in
//! glibc's `free`, long after `hsa_init` returned — the seed's "a crash somewhere unrelated".
//!
//! To make the neighbourhood the same in every process, the records are allocated on a thread
//! of the runtime's own (`hsa-topology`) that allocates nothing else before them: its first
//! allocation gives it a fresh malloc arena, so node `i + 1`'s record directly follows node
//! `i`'s, and the last one is followed by the end of the node table (a 64-byte block the
//! runtime also keeps), not by whatever the thunk allocates while it runs. The thread stays parked
//! for the life of the process (its exit would free its own allocations next to the damaged
//! chunks while `hsa_init` may still run). With the default machine, the 396-byte CPU record
//! zeroes the size field of the GPU record's chunk, and freeing that chunk at exit aborts
//! with `free(): invalid pointer` (SIGABRT).

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `hsaKmtGetNodeProperties`.
pub type GetNodeFn = unsafe extern "C" fn(u32, *mut c_void) -> i32;

/// Bytes of the block that ends the node table.
const TABLE_END: usize = 64;

/// The records of every stock read, as addresses, freed when the library is unloaded.
static RECORDS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// What the reader thread is asked to do. Lives on the caller's stack until the thread has
/// written its byte to `done`; the thread touches nothing of it afterwards.
#[repr(C)]
struct Job {
    get_node: GetNodeFn,
    layout: usize,
    num_nodes: usize,
    /// `num_nodes` slots: each node's record (null if it could not be allocated).
    records: *mut *mut c_void,
    /// `num_nodes` slots: each `hsaKmtGetNodeProperties` status.
    statuses: *mut i32,
    /// The block allocated right after the records (the node table's end).
    table_end: *mut *mut c_void,
    /// Write end of the pipe the caller waits on.
    done: c_int,
}

/// The reader thread: allocates every record first, then reads each node into its own.
extern "C" fn reader(arg: *mut c_void) -> *mut c_void {
    let job = arg.cast::<Job>().cast_const();
    // SAFETY: `arg` is the caller's `Job`, alive until the byte below is written.
    let job = unsafe { &*job };
    for node in 0..job.num_nodes {
        // SAFETY: calloc has no preconditions (zeroed, as fresh arena memory is anyway, so a
        // shorter record leaves defined bytes); `records` has `num_nodes` slots.
        unsafe { *job.records.add(node) = libc::calloc(1, job.layout) };
    }
    // SAFETY: as above; `table_end` is one slot.
    unsafe { *job.table_end = libc::calloc(1, TABLE_END) };
    for node in 0..job.num_nodes {
        // SAFETY: the slot was written above.
        let record = unsafe { *job.records.add(node) };
        let status = if record.is_null() {
            -1
        } else {
            // SAFETY: the thunk's documented export, given storage of the runtime's own record
            // size, as the stock runtime sizes it. A thunk built with a longer record breaks
            // the export's contract here — the fault being simulated: its extra bytes land on
            // the next heap chunk's header and the start of the next block, both this
            // runtime's own allocations (the next record, or the table's end), which Rust
            // code never reads; only glibc's heap checks do.
            unsafe { (job.get_node)(node as u32, record) }
        };
        // SAFETY: `statuses` has `num_nodes` slots.
        unsafe { *job.statuses.add(node) = status };
    }
    let done = job.done;
    let byte = 1_u8;
    // SAFETY: writes one byte from a local to the caller's pipe; `job` is not used after it.
    unsafe { libc::write(done, (&raw const byte).cast(), 1) };
    loop {
        // SAFETY: pause has no preconditions; the thread parks until the process ends.
        unsafe { libc::pause() };
    }
}

/// Reads nodes `0..num_nodes` as the stock runtime does. Returns each node's status and, on
/// success, the first `layout` bytes of its record (which stays allocated). `None` when the
/// reader thread cannot be started; the caller then reads on its own thread.
pub fn read_nodes(
    get_node: GetNodeFn,
    layout: usize,
    num_nodes: u32,
) -> Option<Vec<(i32, Vec<u8>)>> {
    let num_nodes = num_nodes as usize;
    let mut records: Vec<*mut c_void> = vec![std::ptr::null_mut(); num_nodes];
    let mut statuses = vec![0_i32; num_nodes];
    let mut table_end: *mut c_void = std::ptr::null_mut();
    let mut pipe = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let close_pipe = |pipe: [c_int; 2]| {
        // SAFETY: both descriptors are ours and closed once.
        unsafe {
            libc::close(pipe[0]);
            libc::close(pipe[1]);
        }
    };
    let job = Job {
        get_node,
        layout,
        num_nodes,
        records: records.as_mut_ptr(),
        statuses: statuses.as_mut_ptr(),
        table_end: &raw mut table_end,
        done: pipe[1],
    };
    let mut thread: libc::pthread_t = 0;
    // SAFETY: `reader` has the start-routine signature; `job` outlives the thread's use of it
    // (we wait for its byte below before returning).
    let started = unsafe {
        libc::pthread_create(
            &mut thread,
            std::ptr::null(),
            reader,
            (&raw const job).cast_mut().cast(),
        )
    };
    if started != 0 {
        close_pipe(pipe);
        return None;
    }
    // SAFETY: a running thread we started; it is never joined.
    unsafe {
        libc::pthread_setname_np(thread, c"hsa-topology".as_ptr());
        libc::pthread_detach(thread);
    }
    let mut byte = 0_u8;
    // The thread writes its byte once it is done with `job` (or the pipe reports an error).
    loop {
        // SAFETY: reads one byte into a local from our pipe.
        let n = unsafe { libc::read(pipe[0], (&raw mut byte).cast(), 1) };
        let interrupted = std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
        if !(n < 0 && interrupted) {
            break;
        }
    }
    close_pipe(pipe);
    let mut kept = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    let out = records
        .iter()
        .zip(&statuses)
        .map(|(&record, &status)| {
            if record.is_null() {
                return (status, Vec::new());
            }
            kept.push(record as usize);
            if status != 0 {
                return (status, Vec::new());
            }
            // SAFETY: a live allocation of `layout` bytes, zeroed and then written by the
            // thunk; the reader thread is done with it.
            let bytes = unsafe { std::slice::from_raw_parts(record.cast::<u8>(), layout) };
            (status, bytes.to_vec())
        })
        .collect();
    if !table_end.is_null() {
        kept.push(table_end as usize);
    }
    Some(out)
}

/// Frees every record the stock reads kept (the library's unload, normally at exit).
#[cfg_attr(test, allow(dead_code))]
extern "C" fn free_records() {
    let _ = std::panic::catch_unwind(|| {
        let records = std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()));
        for record in records {
            // SAFETY: each address came from calloc in `reader` and is freed once. A record a
            // longer thunk overran may abort here, in glibc's heap checks: the simulated fault.
            unsafe { libc::free(record as *mut c_void) };
        }
    });
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".fini_array")]
static DESTRUCTOR: extern "C" fn() = free_records;
