//! What `rocprof` says after the records are read: the tool's own warnings from inside the
//! application, and one line per cause of lost records.

use trace_records::ProcessTrace;

/// Lines to print (without the `rocprof: ` prefix) after the output files are written.
pub fn after_run(_traces: &[ProcessTrace]) -> Vec<String> {
    Vec::new()
}
