//! The one error type of the doctor: what keeps it from producing or rendering its report.
//! Everything the doctor finds about the environment is a check, never an error.

/// Why the doctor could not do what it was asked (`rocprof doctor` exits 2 on it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The report cannot be written as JSON.
    #[error("cannot write the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}
