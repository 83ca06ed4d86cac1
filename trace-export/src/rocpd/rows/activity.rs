//! What happened on the devices and to memory, on the events that name them: kernel
//! dispatches (`rocpd_kernel_dispatch`), counter values (`rocpd_pmc_event`), memory copies
//! (`rocpd_memory_copy`), and memory allocations and scratch events (`rocpd_memory_allocate`).

use super::context::{Process, Strings, int};
use super::events::Events;
use crate::rocpd::batch::Cell;
use rusqlite::params;
use trace_records::record::*;

/// `rocpd_memory_allocate`'s `type` and `level` of an allocation record: `ALLOCATE` is
/// `ALLOC`, the VMEM operations are `VIRTUAL`, the others `REAL`.
fn allocation_kind(operation: u8) -> (&'static str, &'static str) {
    let op = AllocationOperation::from_u8(operation);
    let freed = op.is_some_and(|o| !o.is_allocation());
    let virtual_ = op.is_some_and(AllocationOperation::is_vmem);
    (
        if freed { "FREE" } else { "ALLOC" },
        if virtual_ { "VIRTUAL" } else { "REAL" },
    )
}

/// `rocpd_memory_allocate`'s `type` of a scratch record (its level is `SCRATCH`).
fn scratch_kind(operation: u8) -> &'static str {
    match ScratchOperation::from_u8(operation) {
        Some(ScratchOperation::Free) => "FREE",
        Some(ScratchOperation::AsyncReclaim) => "RECLAIM",
        Some(ScratchOperation::Alloc) | None => "ALLOC",
    }
}

/// Writes the kernel dispatches (the first record of each dispatch id), in time order.
pub(super) fn write_kernel_dispatches(
    p: &Process<'_, '_>,
    strings: &Strings,
    events: &Events<'_>,
) -> rusqlite::Result<()> {
    let &Process { v, nid, pid, .. } = p;
    let mut rows = p.batch(
        "rocpd_kernel_dispatch",
        "\"id\", \"nid\", \"pid\", \"tid\", \"agent_id\", \"kernel_id\", \"dispatch_id\", \
         \"queue_id\", \"stream_id\", \"start\", \"end\", \"private_segment_size\", \
         \"group_segment_size\", \"workgroup_size_x\", \"workgroup_size_y\", \
         \"workgroup_size_z\", \"grid_size_x\", \"grid_size_y\", \"grid_size_z\", \
         \"region_name_id\", \"event_id\"",
        &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    )?;
    for &(d, event) in &events.dispatches {
        rows.push(&[
            int(d.dispatch_id).into(),
            d.thread_id.into(),
            d.agent_node_id.into(),
            int(d.kernel_id).into(),
            int(d.dispatch_id).into(),
            int(d.queue_id).into(),
            int(d.stream_id).into(),
            int(d.start).into(),
            int(d.end).into(),
            d.private_segment_size.into(),
            d.group_segment_size.into(),
            d.workgroup[0].into(),
            d.workgroup[1].into(),
            d.workgroup[2].into(),
            d.grid[0].into(),
            d.grid[1].into(),
            d.grid[2].into(),
            // --kernel-rename's name (upstream's region name), else "".
            crate::rename::region(v.trace, d)
                .map_or(strings.empty, |r| strings.id(r))
                .into(),
            event.into(),
        ])?;
    }
    rows.flush()
}

/// Writes the counter values: one row per dispatch and counter, on the dispatch's event.
pub(super) fn write_counter_values(
    p: &Process<'_, '_>,
    events: &Events<'_>,
) -> rusqlite::Result<()> {
    let v = p.v;
    let mut rows = p.batch(
        "rocpd_pmc_event",
        "\"id\", \"event_id\", \"pmc_id\", \"value\"",
        "(?, ?, ?, ?)",
    )?;
    for (k, c) in v.counters.iter().enumerate() {
        let event = events.dispatch_events.get(&c.dispatch_id).copied();
        rows.push(&[
            (k as i64 + 1).into(),
            event.into(),
            c.counter_id.into(),
            Cell::Real(c.value),
        ])?;
    }
    rows.flush()
}

/// Writes the memory copies, numbered 1.. in time order.
pub(super) fn write_memory_copies(
    p: &Process<'_, '_>,
    strings: &Strings,
    events: &Events<'_>,
) -> rusqlite::Result<()> {
    let &Process { v, nid, pid, .. } = p;
    let mut rows = p.batch(
        "rocpd_memory_copy",
        "\"id\", \"nid\", \"pid\", \"tid\", \"start\", \"end\", \"name_id\", \
         \"dst_agent_id\", \"src_agent_id\", \"size\", \"stream_id\", \"event_id\"",
        &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    )?;
    for (k, c) in v.copies.iter().enumerate() {
        rows.push(&[
            (k as i64 + 1).into(),
            c.thread_id.into(),
            int(c.start).into(),
            int(c.end).into(),
            strings.id(CopyDirection::label(c.direction)).into(),
            c.dst_node_id.into(),
            c.src_node_id.into(),
            int(c.bytes).into(),
            int(c.stream_id).into(),
            (events.first_copy + k as i64).into(),
        ])?;
    }
    rows.flush()
}

/// Writes the memory allocations, then the scratch events, numbered 1.. in that order (each in
/// time order).
pub(super) fn write_memory_allocations(
    p: &Process<'_, '_>,
    events: &Events<'_>,
) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"tid\", \"agent_id\", \"type\", \"level\", \
         \"start\", \"end\", \"address\", \"size\", \"queue_id\", \"event_id\", \"extdata\") \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        p.table("rocpd_memory_allocate")
    ))?;
    let mut id = 0i64;
    for (k, a) in v.trace.allocations.iter().enumerate() {
        id += 1;
        let (kind, level) = allocation_kind(a.operation);
        let agent = (a.has_agent != 0).then_some(a.agent_node_id);
        insert.execute(params![
            id,
            nid,
            pid,
            a.thread_id,
            agent,
            kind,
            level,
            int(a.start),
            int(a.end),
            int(a.address),
            int(a.size),
            Option::<i64>::None,
            events.first_allocation + k as i64,
            "{}",
        ])?;
    }
    for (k, s) in v.trace.scratch.iter().enumerate() {
        id += 1;
        let extdata = serde_json::json!({ "flags": s.flags }).to_string();
        insert.execute(params![
            id,
            nid,
            pid,
            s.thread_id,
            s.agent_node_id,
            scratch_kind(s.operation),
            "SCRATCH",
            int(s.start),
            int(s.end),
            0i64,
            int(s.size),
            int(s.queue_id),
            events.first_scratch + k as i64,
            extdata,
        ])?;
    }
    Ok(())
}
