//! The counter records of a process from the estimates: what `counter_collection.csv` is
//! written from.

use std::collections::HashMap;

use trace_records::{CounterRecord, ProcessTrace};

use super::evaluation::{Counted, Evaluation};
use crate::hygiene::HygieneRow;

/// Replaces the counter records of `trace` by the estimates (`rows`, as
/// [`estimate`](super::estimate) made them for `eval`): one per dispatch and counter that has
/// an estimate, the counters' names added to `trace`'s strings.
pub fn fill_records(trace: &mut ProcessTrace, eval: &Evaluation, rows: &[HygieneRow]) {
    let first_free = trace.strings.keys().copied().max().unwrap_or(0) + 1;
    let mut ids: HashMap<&str, u32> = HashMap::new();
    for (id, (name, _)) in (first_free..).zip(&eval.counters) {
        ids.insert(name, id);
        trace.strings.insert(id, name.clone());
    }
    let counter_id: HashMap<&str, u32> = eval
        .counters
        .iter()
        .map(|(n, i)| (n.as_str(), *i))
        .collect();
    let by_id: HashMap<u64, &Counted> = eval
        .dispatches
        .iter()
        .map(|c| (c.dispatch.dispatch_id, c))
        .collect();
    trace.counters.clear();
    for row in rows {
        let (Some(value), Some(c)) = (row.estimate.estimate, by_id.get(&row.dispatch_id)) else {
            continue;
        };
        trace.counters.push(CounterRecord {
            dispatch_id: row.dispatch_id,
            correlation_id: c.dispatch.correlation_id,
            value,
            name: ids.get(row.counter.as_str()).copied().unwrap_or(0),
            counter_id: counter_id.get(row.counter.as_str()).copied().unwrap_or(0),
            agent_node_id: c.dispatch.agent_node_id,
            reserved: 0,
        });
    }
}
