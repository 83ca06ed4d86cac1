//! (being written) the perfetto output.

use crate::Error;
use crate::view::{ProcessView, RunInfo};
use std::path::Path;

/// Writes the perfetto file at `path` for `processes` (one file may hold several processes, each
/// kept distinct).
pub fn write(path: &Path, run: &RunInfo, processes: &[ProcessView<'_>]) -> Result<(), Error> {
    let _ = (path, run, processes);
    Err(Error::Unsupported("perfetto"))
}
