//! Why `rocprof analyze` cannot run: an input none of the three kinds, a record directory that
//! cannot be opened, the JSON report that cannot be written.

use rocprof_runner::record_dir::RecordDirError;
use std::path::PathBuf;
use std::process::ExitCode;

/// Everything that stops the analysis (findings never do: they are in the report).
///
/// Each message is complete on its own (no source chain is appended): `rocprof analyze` prints
/// it as `rocprof: error: <message>`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path is not an input analyze reads (or one it cannot read at all): the path and why.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The input as given.
        path: PathBuf,
        /// Why it is refused.
        why: String,
    },
    /// A directory with a `run.json` that is not a usable record directory (its message names
    /// the path).
    #[error("{0}")]
    RecordDir(RecordDirError),
    /// The report could not be serialised (`--json`).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// The exit status of a `rocprof analyze` this error stopped (2).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(2)
    }
}
