//! (being written) reading rocpd databases back into process records, for `rocprof convert -i`.

use crate::Error;
use std::path::Path;
use trace_records::ProcessTrace;

/// The processes a rocpd database holds.
pub fn read(path: &Path) -> Result<Vec<ProcessTrace>, Error> {
    let _ = path;
    Err(Error::Unsupported("rocpd import"))
}
