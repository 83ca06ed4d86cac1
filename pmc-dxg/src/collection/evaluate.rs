//! After the run: each counted dispatch's raw read-back decoded with the layout rebuilt from the
//! log's counter setup and the agent record, evaluated per requested counter, and cleaned of
//! the WSL2 artefacts ([`crate::hygiene`]).

use std::collections::HashMap;

use trace_records::{CounterSample, KernelDispatchRecord, ProcessTrace};

use super::counter_plan::CounterPlan;
use super::evaluation::{Counted, Evaluation, Problem};
use super::overlap::overlapping;
use crate::defs::{AgentCounters, Definitions};
use crate::hygiene::{self, CounterPrograms, Discard, DispatchFacts, DispatchKey};
use crate::pm4::{self, PassBuffers};
use crate::{BaseEvent, Topology};

/// What one agent's samples of one counter group are decoded and evaluated with: its
/// counters, its pass layout, its programs, and where each requested counter of the plan is
/// among them.
type Kit = (
    AgentCounters,
    PassBuffers,
    CounterPrograms,
    Vec<Option<usize>>,
);

/// The agent of node `node` in `trace`, its counters, the pass layout of its group `group`
/// (from the log's counter setup) and the group's programs; `None` if any is missing.
fn kit(
    trace: &ProcessTrace,
    plan: &CounterPlan,
    defs: &Definitions,
    node: u32,
    group: u32,
) -> Option<Kit> {
    let agent = trace.docs.agents().iter().find(|a| a.node_id == node)?;
    let setup = trace
        .docs
        .counter_setups
        .iter()
        .find(|s| s.agent_node_id == node && s.group == group)?;
    let counters = defs.for_agent(agent);
    let events: Vec<(String, BaseEvent)> = setup.events.iter().map(BaseEvent::named).collect();
    let layout = pm4::build_pass(&Topology::of(agent)?, &events, 0, 0).ok()?;
    let layout = if setup.proof {
        layout
    } else {
        layout.without_proof()
    };
    let names = plan.requested_by(node, group)?;
    let programs = CounterPrograms::new(&counters, names).ok()?;
    let at = plan
        .requested
        .iter()
        .map(|r| names.iter().position(|n| n == r))
        .collect();
    Some((counters, layout, programs, at))
}

/// Decodes and evaluates every counter sample of `trace` for `plan`, resolving the counters
/// with `defs`.
///
/// Dispatches are identified across runs by [`hygiene::keys`] over every dispatch of the
/// process (counted or not) in id order; a dispatch is in the warm-up window when it starts
/// within `plan.discard_warmup_ms` of the process's first counted dispatch. What cannot be
/// decoded or evaluated is a [`Problem`], and the sample is left out.
pub fn evaluate(trace: &ProcessTrace, plan: &CounterPlan, defs: &Definitions) -> Evaluation {
    let mut out = Evaluation::default();
    if trace.counter_samples.is_empty() {
        return out;
    }
    let mut per_agent: HashMap<(u32, u32), Option<Kit>> = HashMap::new();
    let dispatches: HashMap<u64, &KernelDispatchRecord> = trace
        .dispatches
        .iter()
        .map(|d| (d.dispatch_id, d))
        .collect();
    let symbols = trace.symbols_by_id();
    let name_of = |d: &KernelDispatchRecord| {
        symbols
            .get(&d.kernel_id)
            .map_or("", |s| trace.string(s.name))
            .to_owned()
    };
    // Ordinals per kernel over every dispatch of the process, counted or not, in id order.
    let mut ordered: Vec<&KernelDispatchRecord> = trace.dispatches.iter().collect();
    ordered.sort_by_key(|d| d.dispatch_id);
    let names: Vec<String> = ordered.iter().map(|d| name_of(d)).collect();
    let keys = hygiene::keys(
        ordered
            .iter()
            .zip(&names)
            .map(|(d, n)| (n.as_str(), d.grid, d.workgroup)),
    );
    let key_of: HashMap<u64, DispatchKey> =
        ordered.iter().map(|d| d.dispatch_id).zip(keys).collect();
    let first_start = trace
        .counter_samples
        .iter()
        .filter_map(|s| dispatches.get(&s.header.dispatch_id))
        .map(|d| d.start)
        .filter(|&s| s > 0)
        .min()
        .unwrap_or(0);
    let warmup_ns = plan
        .discard_warmup_ms
        .map(|ms| ms.saturating_mul(1_000_000));

    let mut samples: Vec<&CounterSample> = trace.counter_samples.iter().collect();
    samples.sort_by_key(|s| s.header.dispatch_id);
    for sample in samples {
        let (node, group) = (sample.header.agent_node_id, sample.header.group);
        let kit = per_agent
            .entry((node, group))
            .or_insert_with(|| kit(trace, plan, defs, node, group));
        let Some((counters, layout, programs, at)) = kit.as_ref() else {
            out.problems.push(Problem::Undecodable {
                node,
                requested: plan.requested.clone(),
            });
            continue;
        };
        if out.counters.is_empty() {
            out.counters = plan
                .requested
                .iter()
                .map(|n| (n.clone(), counters.get(n).map_or(0, |c| c.id)))
                .collect();
        }
        let decoded = match pm4::decode(layout, &sample.output) {
            Ok(d) => d,
            Err(error) => {
                out.problems.push(Problem::Unreadable {
                    dispatch: sample.header.dispatch_id,
                    error,
                });
                continue;
            }
        };
        let dispatch = dispatches.get(&sample.header.dispatch_id).map_or_else(
            || KernelDispatchRecord {
                dispatch_id: sample.header.dispatch_id,
                correlation_id: sample.header.correlation_id,
                agent_node_id: node,
                ..Default::default()
            },
            |d| **d,
        );
        let facts = DispatchFacts {
            ran: dispatch.end > dispatch.start,
            in_warmup: warmup_ns.is_some_and(|w| {
                dispatch.start > 0 && dispatch.start.saturating_sub(first_start) < w
            }),
        };
        let outcomes = match programs.evaluate(&decoded, facts) {
            Ok(o) => o,
            Err(error) => {
                out.problems.push(Problem::Unevaluable {
                    dispatch: dispatch.dispatch_id,
                    error,
                });
                continue;
            }
        };
        let key = key_of
            .get(&dispatch.dispatch_id)
            .cloned()
            .unwrap_or(DispatchKey {
                kernel: String::new(),
                ordinal: dispatch.dispatch_id,
                grid: dispatch.grid,
                workgroup: dispatch.workgroup,
            });
        out.dispatches.push(Counted {
            dispatch,
            key,
            outcomes: at
                .iter()
                .map(|k| k.map_or(Err(Discard::OtherGroup), |k| outcomes[k].value))
                .collect(),
            raw_zero: !pm4::packets_ran(layout, &sample.output, &decoded),
        });
    }
    out.overlapped = overlapping(&trace.dispatches, &out.dispatches);
    out
}
