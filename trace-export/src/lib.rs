//! rocprofv3's output files, written from the records of a run (`trace_records`), and the
//! rocpd database read back.
//!
//! What is where:
//! - [`csv`]: the CSV trace files (HIP, HSA and marker API calls, kernel dispatches, memory
//!   copies, memory allocations, scratch memory), `counter_collection.csv` and
//!   `agent_info.csv`, one set per process.
//! - [`stats`]: the `--stats` files (`*_stats.csv`, `domain_stats.csv`) and the per-domain
//!   statistics the `-S` summary and the CLI's analysis show.
//! - [`cells`]: the CSV cells and rows both of those write.
//! - [`rocpd`]: the rocpd SQLite database (schema 3.0.0), one table set per process;
//!   [`rocpd_read`] reads ours and upstream's back into traces.
//! - [`json`]: the `rocprofiler-sdk-tool` JSON document.
//! - [`perfetto`]: the Perfetto trace (`.pftrace`), with its size limit.
//! - [`view`]: one resolved view of a process (records in order, ids, names), which the
//!   one-file formats write from.
//! - [`rename`]: how kernels are named (demangling, truncation, `--kernel-rename`).
//! - [`code_objects`]: a process's code objects and HIP host functions resolved to their
//!   kernels (JSON and rocpd write them).
//! - [`output`]: where files go (`<prefix>_<name>.<ext>`) and how each is written whole (a
//!   temporary beside it, renamed when complete: the `atomic-file` crate).
//!
//! Every writer has one shape, `write_<format>(destination, content, options) ->
//! Result<outcome, Error>`:
//! - the destination first: an [`output::OutputPrefix`] for a family of files, a `&Path` for a
//!   one-file format;
//! - then what is written: one process's `&ProcessTrace` (with its agents' `&AgentLabels`) for
//!   the CSV files, which stream the calls straight from the trace; the run's
//!   [`view::RunInfo`] and `&[ProcessView]` for the one-file formats, which hold several
//!   processes; the [`stats::Stats`] for the stats files;
//! - then the format's options, if it has any;
//! - and the outcome: the paths written for a family (`Vec<PathBuf>`, or `Option<PathBuf>` for
//!   a file that may have nothing to hold), `()` for a one-file format, or what the format has
//!   to say about it (Perfetto's [`perfetto::Written`]).
//!
//! | writer | destination | content | options | outcome |
//! |---|---|---|---|---|
//! | [`csv::write_csv`] | prefix | trace, labels | [`csv::CsvSelection`] | `Vec<PathBuf>` |
//! | [`csv::write_agent_info`] | prefix | labels | — | `Option<PathBuf>` |
//! | [`stats::write_stats`] | prefix | stats | — | `Vec<PathBuf>` |
//! | [`rocpd::write_rocpd`] | path | run, views | — | `()` |
//! | [`json::write_json`] | path | run, views | [`json::JsonOptions`] | `()` |
//! | [`perfetto::write_perfetto`] | path | run, views | [`perfetto::Options`] | [`perfetto::Written`] |
//!
//! Every file is written whole or not at all; every failure is an [`Error`] naming the file.
//!
//! CLI-only: the library injected into the application never links this crate (nor the
//! SQLite, protobuf or JSON-schema machinery the other formats bring), which `cargo xtask tidy`
//! enforces.

#![forbid(unsafe_code)]

pub mod args;
pub mod cells;
pub mod code_objects;
pub mod csv;
pub mod json;
pub mod output;
pub mod perfetto;
pub mod rename;
pub mod rocpd;
mod rocpd_pages;
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
