//! `html-report`: one self-contained HTML file for `rocprof diff` and `rocprof analyze` — the
//! report's tables and charts drawn as inline SVG by `plotters` (its SVG backend; text is
//! measured by plotters' built-in estimate, so no font file is read). No script, no style
//! sheet, font or image is fetched: the file can be mailed or attached to an issue.
//!
//! Charts (each a `<figure>` with an `id`, so tests can find them in the rendered page):
//!
//! * `diff`: `kernel-time` — the top kernels' time per run on each side (one bar per kernel
//!   and side that has it); `kernel-durations` — each top kernel's duration distribution per
//!   side (one box per kernel and side: quartiles, median, whiskers at 1.5 × the interquartile
//!   range); `counter-changes` — the counter changes in percent (one bar per kernel × counter
//!   with a change).
//! * `analyze`: per process `timeline-<n>` — the time of the kernels, copies and each API
//!   (one bar per domain with time), `kernels-<n>` — the top kernels' total time, and
//!   `margins-<n>` — the tightest containment margins (one bar per margin known).
//!
//! Every name shown is escaped twice over: `terminal_text` for control and bidi characters,
//! then HTML (or plotters' XML escaping inside SVG).

mod analyze;
mod charts;
mod diff;
mod html;

pub use analyze::analyze_page;
pub use diff::diff_page;

use std::path::{Path, PathBuf};

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be written.
    #[error("cannot write the HTML report {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: atomic_file::Error,
    },
}

/// Writes `html` to `path` whole or not at all.
pub fn write(path: &Path, html: &str) -> Result<(), Error> {
    atomic_file::write(path, atomic_file::Options::new(), html.as_bytes()).map_err(|source| {
        Error::Write {
            path: path.to_owned(),
            source,
        }
    })
}

/// How many top items a chart shows.
pub const CHART_TOP: usize = 10;
