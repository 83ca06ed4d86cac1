//! `<prefix>_results.otf2`: the run as an OTF2 archive (Open Trace Format 2), with the
//! definitions and events upstream rocprofv3's writer (`generateOTF2.cpp`) gives it, written
//! through the OTF2 library itself (`otf2-sys`: Debian's `libopen-trace-format2-10`, loaded at
//! run time). Without the library, [`available`] and [`write_otf2`] fail with
//! [`Error::Library`], whose text says which package to install; nothing else in a program
//! using this crate needs it.
//!
//! **Files** (the OTF2 archive layout, as upstream's archive named `<prefix>_results`):
//! `<prefix>_results.otf2` (the anchor file readers open), `<prefix>_results.def` (the global
//! definitions) and the directory `<prefix>_results/` with one `<location>.evt` (events) and
//! `<location>.def` (local definitions, empty) per location.
//!
//! **Definitions**, per process (several processes, from `rocprof merge`, each get their own):
//! - a system-tree node named after the process's executable (its `argv[0]`, `??` when the
//!   records do not hold its command line, as upstream's fallback) of class the host name;
//! - a location group of type `PROCESS` named after the executable, and one of type
//!   `ACCELERATOR` per agent, named by the agent's `name` (`gfx1150`, the CPU's model);
//! - locations, numbered from 1 in this order: `Thread <tid>` (`CPU_THREAD`, in the process's
//!   group) for every thread any record names, ascending; then, as `ACCELERATOR_STREAM`s in
//!   their agent's group, `Thread <tid>, Copy to <type> <label>-<index>` per issuing thread
//!   and destination agent, `Thread <tid>, Memory Operation at <type> <label>-<index>` per
//!   thread and agent of memory allocations (`UNK 0` for frees, which name none), and
//!   `Thread <tid>, Compute on <type> <label>-<index>, Queue <n>` per enqueuing thread, agent
//!   and queue (n = the queue's rank among the process's queues); `<label>-<index>` is the
//!   `-A/--agent-index` label (`Agent-1`, `GPU-0`);
//! - a region per distinct name: API functions (role `FUNCTION`, paradigm `HIP`; ROCTx
//!   functions paradigm `USER`), ROCTx ranges by their message (`USER`), kernels by the name
//!   the CSV files give them (`--kernel-rename` included; `FUNCTION`, `HIP`), copies by
//!   direction (`MEMORY_COPY_HOST_TO_DEVICE`, …; `DATA_TRANSFER`) and memory operations
//!   (`MEMORY_ALLOCATION_ALLOCATE`, …; `ALLOCATE`);
//! - attribute 0, `category` ("tracing category", a string), and the clock: 1 ns resolution,
//!   offset the earliest timestamp, length the span of the records.
//!
//! **Events**: each record is an `Enter` at its start (carrying the `category` attribute:
//! `hip_api`, `hsa_api`, `marker_api`, `kernel_dispatch`, `memory_copy`, `memory_allocation`)
//! and a `Leave` at its end, on its location. ROCTx marks (`roctxMarkA`, instants) are left out,
//! as upstream leaves them out. Records ending before they start, or without a start time, are
//! left out too. Per location the events are in time order and nested where the records nest
//! (an outer call entered first and left last, also at equal timestamps; see [`lane`]).
//!
//! **Decisions.** Strings, regions and location groups are numbered densely (upstream uses
//! 32-bit truncations of string hashes and agent handles, which can collide); numbers are
//! internal to the archive. The clock's realtime anchor is undefined: the records hold a
//! monotonic timeline with no wall-clock reading (upstream writes the time the archive was
//! written). No `BufferFlush` events are recorded (the post-flush callback is null): the
//! archive is written after the run, so a flush pause says nothing about the application.
//!
//! Memory: the API calls are streamed from the view ([`trace_export::view::ProcessView::api`]);
//! what is held per location is only the `Leave` events still pending (the nesting depth).
//!
//! CLI-only, like `trace-export`: the library injected into the application never links it.

mod archive;
pub mod lane;
pub mod layout;
mod writer;

pub use writer::{archive_files, available, write_otf2};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The OTF2 library cannot be loaded or lacks entry points (the text says what to
    /// install).
    #[error(transparent)]
    Library(#[from] otf2_sys::Error),
    /// An OTF2 call failed.
    #[error("{}: {call} failed: {name} ({description})", path.display())]
    Otf2 {
        /// The archive.
        path: std::path::PathBuf,
        /// The function.
        call: &'static str,
        /// `OTF2_Error_GetName` of its code (or what it returned).
        name: String,
        /// `OTF2_Error_GetDescription` of its code.
        description: String,
    },
    /// A file or directory of the archive exists already (the archive is written only into
    /// a place where none of its files are).
    #[error("{}: exists already; an OTF2 archive is written only where none of its files are", .0.display())]
    Exists(std::path::PathBuf),
    /// The records could not all be read (a spilled run of API calls failed to read back).
    #[error("{}: {message}", path.display())]
    Records {
        /// The archive.
        path: std::path::PathBuf,
        /// What failed.
        message: String,
    },
    /// A directory of the archive cannot be created or removed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
