//! rocprofv3's output files, written from the records of a run (`trace_records`): the CSV
//! traces and agent info ([`csv`]), the stats files and the summary's statistics ([`stats`]),
//! over one resolved view of each process ([`view`]).
//!
//! CLI-only: the library injected into the application never links this crate (nor the
//! SQLite, protobuf or JSON-schema machinery the other formats bring), which `cargo xtask tidy`
//! enforces.

#![forbid(unsafe_code)]

pub mod cells;
pub mod csv;
pub mod json;
pub mod output;
pub mod perfetto;
pub mod rename;
pub mod rocpd;
pub mod rocpd_read;
pub mod stats;
pub mod view;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A format's writer failed (SQLite, encoding, a record it cannot represent).
    #[error("{path}: {message}", path = path.display())]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// A file that could not be written whole ([`atomic_file`]'s error) is [`Error::Io`] on its
/// path.
impl From<atomic_file::Error> for Error {
    fn from(e: atomic_file::Error) -> Self {
        let (path, source) = e.into_parts();
        Error::Io { path, source }
    }
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
