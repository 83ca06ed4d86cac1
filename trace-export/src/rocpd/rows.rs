//! One process's rows, each inserted after the rows it refers to, one writer per table or
//! table group: the catalog ([`catalog`]: strings, node, process, threads, agents, queues,
//! streams, counters, code object and kernel symbols); then every event ([`events`]: HIP calls,
//! HSA calls, markers, dispatches, copies, allocations, scratch events); then the rows that
//! name them: the HIP calls' arguments ([`args`]), regions and samples ([`spans`]), kernel dispatches, counter values, memory copies
//! and allocations ([`activity`]). Each table is filled in id order, so every insert appends.
//! What they share (the process's ids, string ids, numbering rules) is [`context`]'s.

mod activity;
mod args;
mod catalog;
mod code_objects;
mod context;
mod events;
mod spans;

pub(crate) use context::{Host, process_span};

use crate::view::{ProcessView, RunInfo};
use context::Process;
use rusqlite::Connection;

/// Writes `v`'s rows into the tables ending in `suffix`.
pub(crate) fn write_process(
    conn: &Connection,
    suffix: &str,
    v: &ProcessView<'_>,
    run: &RunInfo,
    host: &Host,
) -> rusqlite::Result<()> {
    let p = Process::new(conn, suffix, v, host);
    let strings = catalog::write_strings(&p)?;
    catalog::write_node_and_process(&p, run, host)?;
    catalog::write_threads(&p)?;
    catalog::write_agents(&p)?;
    catalog::write_queues_and_streams(&p)?;
    catalog::write_counters(&p)?;
    catalog::write_kernel_symbols(&p)?;
    let events = events::write_events(&p, &strings)?;
    args::write_args(&p, &events)?;
    spans::write_regions_and_samples(&p, &strings, &events)?;
    activity::write_kernel_dispatches(&p, &strings, &events)?;
    activity::write_counter_values(&p, &events)?;
    activity::write_memory_copies(&p, &strings, &events)?;
    activity::write_memory_allocations(&p, &events)
}
