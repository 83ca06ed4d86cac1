//! Over repeated runs: each dispatch × requested counter of the main run estimated from the
//! matching dispatches of the other runs ([`crate::hygiene::estimate`]).

use std::collections::HashMap;

use super::evaluation::{Counted, Evaluation};
use crate::hygiene::{self, Discard, DispatchKey, HygieneRow};

/// Per dispatch of `main` and requested counter, the estimate over `main` and the `others`
/// runs of the same process (matched by kernel, per-kernel ordinal, grid and workgroup), in
/// `main`'s dispatch order, counters in request order.
pub fn estimate(main: &Evaluation, others: &[&Evaluation]) -> Vec<HygieneRow> {
    let index: Vec<HashMap<&DispatchKey, &Counted>> = others
        .iter()
        .map(|e| e.dispatches.iter().map(|c| (&c.key, c)).collect())
        .collect();
    let mut rows = Vec::with_capacity(main.dispatches.len() * main.counters.len());
    for counted in &main.dispatches {
        for (k, (name, _)) in main.counters.iter().enumerate() {
            // Multiplexed groups: the counter was not read on this dispatch.
            if counted.outcomes[k] == Err(Discard::OtherGroup) {
                continue;
            }
            let mut samples = vec![counted.outcomes[k]];
            for other in &index {
                if let Some(c) = other.get(&counted.key) {
                    samples.push(c.outcomes[k]);
                }
            }
            rows.push(HygieneRow {
                dispatch_id: counted.dispatch.dispatch_id,
                key: counted.key.clone(),
                counter: name.clone(),
                estimate: hygiene::estimate(&samples),
            });
        }
    }
    rows
}
