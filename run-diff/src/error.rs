//! Why `rocprof diff` cannot run.

use std::process::ExitCode;

/// Everything that stops a comparison (differences never do: they are in the report).
///
/// Each message is complete on its own: `rocprof diff` prints it as `rocprof: error: <message>`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input that cannot be read (the analysis crate's message names it).
    #[error(transparent)]
    Input(#[from] trace_analysis::Error),
    /// A side without any input.
    #[error("the {0} side names no input")]
    EmptySide(&'static str),
    /// A setting out of its range.
    #[error("{0}")]
    Setting(String),
    /// The report could not be serialised (`--json`).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// The exit status of a `rocprof diff` this error stopped (2).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(2)
    }
}
