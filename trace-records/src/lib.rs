//! Record types and the crash-safe record log (the exporters are in the CLI-only `trace-export`).
//!
//! The profiled process fills fixed-size chunks of its record log in place (the format is in
//! [`log`]; the writer, which maps the file, is the `record-log` crate). After the run, the CLI
//! reads every log with [`ProcessTrace::read`] (which skips damaged chunks, counting what they
//! held, and keeps everything else) and `trace-export` writes the requested files.

#![forbid(unsafe_code)]

pub mod agents;
pub mod docs;
pub mod env;
pub mod format;
pub mod log;
pub mod loss;
pub mod ranges;
pub mod record;
pub mod records;
pub mod trace;

pub use record::*;
pub use records::Records;
pub use trace::{ApiArgs, ApiKey, CounterSample, ProcessTrace};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A path named like a record log is not a regular file (a FIFO, device or directory).
    #[error("{}: not a regular file; skipped", .0.display())]
    NotAFile(std::path::PathBuf),
    /// A record log is unreadable.
    #[error("{}: {source}", path.display())]
    Log {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: log::LogError,
    },
}

impl Error {
    /// Maps an I/O error on `path` to [`Error::Io`].
    pub(crate) fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_owned(),
            source,
        }
    }
}
