//! The events (`rocpd_event`) of one process, numbered 1.. in write order: HIP calls, HSA
//! calls, markers, dispatches, copies, memory allocations, scratch events. Every region,
//! sample, dispatch, copy and allocation row names its event; [`Events`] says which.

use super::context::{
    ALLOCATION_CATEGORY, COPY_CATEGORY, DISPATCH_CATEGORY, MARKER_CATEGORY, Process,
    SCRATCH_CATEGORY, Strings, api_pass, int,
};
use crate::rocpd::batch::Batch;
use rusqlite::{Connection, params};
use std::collections::HashMap;
use trace_records::record::*;

/// How the events were numbered, for the rows that name them.
pub(super) struct Events<'v> {
    /// The category (string id) of each API domain, by domain number.
    pub(super) categories: Vec<i64>,
    /// How many HIP calls there are: the first HSA call's event is the next.
    pub(super) hip_calls: i64,
    /// The category of markers.
    pub(super) marker_category: i64,
    /// The event of the first marker (the others follow in order).
    pub(super) first_marker: i64,
    /// Each dispatch written (the first record of each dispatch id) with its event.
    pub(super) dispatches: Vec<(&'v KernelDispatchRecord, i64)>,
    /// The event of each dispatch id.
    pub(super) dispatch_events: HashMap<u64, i64>,
    /// The event of the first copy (the others follow in order).
    pub(super) first_copy: i64,
    /// The event of the first memory allocation.
    pub(super) first_allocation: i64,
    /// The event of the first scratch event.
    pub(super) first_scratch: i64,
}

/// Writes the process's events. An API event's stack id is its call's id and its parent the
/// enclosing call's; a marker's is its id; a dispatch's, copy's or allocation's stack id (and
/// parent) is the id of the call that issued it.
pub(super) fn write_events<'v>(
    p: &Process<'_, 'v>,
    strings: &Strings,
) -> rusqlite::Result<Events<'v>> {
    let &Process { conn, v, .. } = p;
    let table = |base: &str| p.table(base);
    let mut events = EventRows {
        rows: p.batch(
            "rocpd_event",
            "\"category_id\", \"stack_id\", \"parent_stack_id\", \"correlation_id\"",
            "(?, ?, ?, 0)",
        )?,
        next: 1,
    };

    // Host API calls: HIP, then HSA, each in time order.
    let categories: Vec<i64> = (0..=u8::MAX)
        .map(|d| ApiDomain::from_u8(d).map_or(strings.empty, |d| strings.id(d.csv_name())))
        .collect();
    let mut hip_calls = 0;
    for pass in 0..2 {
        // A pass that would find no call is left out.
        if v.api_count(|d| api_pass(d) == Some(pass)) == 0 {
            continue;
        }
        for a in v.api().filter(|a| api_pass(a.domain) == Some(pass)) {
            events.push(categories[usize::from(a.domain as u8)], a.id, a.ancestor)?;
            hip_calls += i64::from(pass == 0);
        }
    }

    // Markers: their ids (as regions or samples) are the view's, in the calls' id space; the
    // message goes in the event.
    let marker_category = strings.id(MARKER_CATEGORY);
    events.rows.flush()?;
    let first_marker = events.next;
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"id\", \"category_id\", \"stack_id\", \"parent_stack_id\", \
         \"correlation_id\", \"extdata\") VALUES (?1, ?2, ?3, 0, 0, ?4)",
        table("rocpd_event")
    ))?;
    for (k, m) in v.markers.iter().enumerate() {
        let extdata = serde_json::json!({ "message": v.string(m.message) }).to_string();
        insert.execute(params![
            first_marker + k as i64,
            marker_category,
            int(v.marker_ids[k]),
            extdata
        ])?;
    }
    drop(insert);
    events.next += v.markers.len() as i64;

    // Dispatches, copies, allocations and scratch events: the stack id is the id of the call
    // that issued them.
    let stack_of = |correlation_id: u64| {
        v.issuing_call(correlation_id)
            .map_or(correlation_id, |a| a.id)
    };
    let mut dispatch_events: HashMap<u64, i64> = HashMap::with_capacity(v.dispatches.len());
    let mut dispatches: Vec<(&KernelDispatchRecord, i64)> = Vec::with_capacity(v.dispatches.len());
    let category = strings.id(DISPATCH_CATEGORY);
    for &d in &v.dispatches {
        if dispatch_events.contains_key(&d.dispatch_id) {
            continue; // the first record of a dispatch id stands
        }
        let stack = stack_of(d.correlation_id);
        let id = events.push(category, stack, stack)?;
        dispatch_events.insert(d.dispatch_id, id);
        dispatches.push((d, id));
    }
    let category = strings.id(COPY_CATEGORY);
    let first_copy = events.next;
    for c in &v.copies {
        let stack = stack_of(c.correlation_id);
        events.push(category, stack, stack)?;
    }
    let category = strings.id(ALLOCATION_CATEGORY);
    let first_allocation = events.next;
    for a in &v.trace.allocations {
        let stack = stack_of(a.correlation_id);
        events.push(category, stack, stack)?;
    }
    let category = strings.id(SCRATCH_CATEGORY);
    let first_scratch = events.next;
    for s in &v.trace.scratch {
        let stack = stack_of(s.correlation_id);
        events.push(category, stack, stack)?;
    }
    events.finish(conn, &table("rocpd_event"))?;
    Ok(Events {
        categories,
        hip_calls,
        marker_category,
        first_marker,
        dispatches,
        dispatch_events,
        first_copy,
        first_allocation,
        first_scratch,
    })
}

/// Events, numbered 1.. in the order they are pushed.
///
/// The rows are appended without their id: SQLite numbers a fresh table's rows 1.. in
/// insertion order, which is the numbering wanted (and cheaper than checking each given id
/// for uniqueness); [`EventRows::finish`] checks the two agree.
pub(super) struct EventRows<'c> {
    rows: Batch<'c>,
    next: i64,
}

impl EventRows<'_> {
    /// Buffers the next event; returns its id.
    pub(super) fn push(&mut self, category: i64, stack: u64, parent: u64) -> rusqlite::Result<i64> {
        let id = self.next;
        self.next += 1;
        self.rows
            .push(&[category.into(), int(stack).into(), int(parent).into()])?;
        Ok(id)
    }

    /// Inserts what is buffered and checks that the last event got the id this numbering
    /// gave it.
    pub(super) fn finish(&mut self, conn: &Connection, table: &str) -> rusqlite::Result<()> {
        self.rows.flush()?;
        let last: Option<i64> =
            conn.query_row(&format!("SELECT MAX(\"id\") FROM {table}"), [], |r| {
                r.get(0)
            })?;
        if last.unwrap_or(0) != self.next - 1 {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERNAL),
                Some(format!(
                    "internal error: {table} numbered its rows up to {last:?}, not {}",
                    self.next - 1
                )),
            ));
        }
        Ok(())
    }
}
