//! `rocprof-runner`: run an application under the rocprof tool and turn record directories
//! into rocprofv3's files, as a library.
//!
//! - [`plan`]: the run's settings (selection, outputs, summary and Perfetto, the counter pass,
//!   the thread trace, foreign domains, the launch); `run.json` serialises them.
//! - [`notice`]: everything a user must hear, as typed values sent to a [`notice::Report`]
//!   (this crate prints nothing).
//! - [`record_dir`]: the private record directory and its `run.json`.
//! - [`process`], [`launch`]: spawning the application with the tool preloaded, tied to the
//!   caller's life (`PR_SET_PDEATHSIG`), signal forwarding, exit statuses.
//! - [`run`]: a [`run::Session`] runs [`run::Pass`]es and converts each.
//! - [`convert`], [`merge`]: record directories (and rocpd databases) to rocprofv3's files,
//!   through [`outputs`] (paths, staging and placement), [`summary`], [`output_config`] and
//!   [`thread_trace`] (the decoding driver).
//! - [`explain`], [`findings`], [`domains`]: what the run shows after it (why something is
//!   missing, losses, tool warnings, foreign domains).
//! - [`counters`]: the GPUs and counter passes of a counter run (over
//!   [`pmc_dxg::collection`]).

pub mod convert;
pub mod counters;
pub mod domains;
pub mod error;
pub mod explain;
pub mod findings;
pub mod launch;
pub mod merge;
pub mod notice;
pub mod output_config;
pub mod outputs;
pub mod placeholders;
pub mod plan;
pub mod process;
pub mod record_dir;
pub mod run;
pub mod summary;
pub mod thread_trace;
pub mod words;

pub use error::Error;
pub use notice::{Level, Notice, Report};
