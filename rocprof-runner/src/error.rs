//! The one error type of the runner: why a run, a conversion or a merge could not be done.

use crate::outputs::PathError;
use crate::record_dir::RecordDirError;
use crate::words::io_reason;
use std::io;
use std::path::PathBuf;

/// Why the runner could not do what it was asked (the text says what to do).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The record directory cannot be created, opened or used.
    #[error(transparent)]
    RecordDir(#[from] RecordDirError),
    /// An output path is unusable.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The working directory cannot be read.
    #[error("cannot read the working directory: {0}")]
    WorkingDirectory(io::Error),
    /// The signal handlers cannot be installed (before anything runs).
    #[error("cannot install the signal handlers: {0}; nothing was started")]
    Signals(io::Error),
    /// The tool library is not beside the executable.
    #[error(
        "the profiler library is missing: expected {} next to rocprof (build it with `cargo xtask build`)",
        .0.display()
    )]
    ToolMissing(PathBuf),
    /// The executable cannot be located.
    #[error("cannot locate the rocprof executable: {0}")]
    Executable(io::Error),
    /// A malformed `ROCPROF_HSAKMT_LAYOUT` (the tool would read every node with a wrong size).
    #[error(
        "{}='{value}' is not a layout this build knows: set it to one of 368, 376, 392, 396, or unset it to let rocprof probe the thunk (`rocprof avail` shows the probe)",
        wsl_topology::settings::ENV_LAYOUT
    )]
    LayoutMalformed {
        /// The value.
        value: String,
    },
    /// `run.json` cannot be written at the start of a run.
    #[error(
        "cannot write {}/run.json: {}; point TMPDIR at a writable directory with free space",
        .dir.display(),
        io_reason(.source)
    )]
    ManifestWrite {
        /// The record directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A directory the run needs cannot be created.
    #[error("cannot create {}: {source}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A `--pmc-repeat` run that did not end well.
    #[error(
        "counter run {run} of --pmc-repeat {ended} (its records in {} are discarded); repeated \
         runs must behave alike, so nothing is estimated",
        .dir.display()
    )]
    RepeatRunFailed {
        /// 1-based.
        run: u32,
        /// How it ended, in words.
        ended: String,
        /// Its record directory.
        dir: PathBuf,
    },
    /// A merge input that is neither a record directory nor a database.
    #[error(
        "{}: neither a record directory (one a run kept) nor a rocpd database (.db)",
        .0.display()
    )]
    MergeInputUnknown(PathBuf),
    /// A rocpd database that cannot be read.
    #[error("cannot read the rocpd database {}: {source}", .path.display())]
    Rocpd {
        /// The database.
        path: PathBuf,
        /// Why.
        source: trace_export::Error,
    },
    /// Merge inputs without any process.
    #[error("the inputs hold no process records")]
    MergeNothing,
    /// What the tool is handed cannot be encoded.
    #[error("cannot encode the tool's request: {0}")]
    Encode(#[from] serde_json::Error),
}
