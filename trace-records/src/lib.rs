//! Record types, the crash-safe record log, and rocprofv3-compatible exporters.
//!
//! The profiled process fills fixed-size chunks of its record log in place (the format is in
//! [`log`]; the writer, which maps the file, is the `record-log` crate). After the run, the CLI
//! reads every log with [`ProcessTrace::read`] (which skips damaged chunks, counting what they
//! held, and keeps everything else) and writes the requested files.

#![forbid(unsafe_code)]

pub mod agents;
pub mod csv;
pub mod docs;
pub mod env;
pub mod log;
pub mod loss;
pub mod record;
pub mod stats;
pub mod trace;

pub use record::*;
pub use trace::{CounterSample, ProcessTrace};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
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
