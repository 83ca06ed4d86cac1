//! Hardware counters in run mode: `--pmc` groups (and `-i` passes) resolved and checked
//! against the GPUs before anything runs ([`plan`]), and after the run each counted dispatch's
//! raw read-back decoded, evaluated and cleaned of the WSL2 artefacts ([`evaluate`]): GRBM zero
//! bursts, isolated SQ zeros, an opening window the user discards, and — over `--pmc-repeat`
//! runs — other GPU clients' work, by taking the smallest non-zero value ([`estimate`]).
//!
//! What comes out: [`trace_records::CounterRecord`]s for `counter_collection.csv` (one per
//! dispatch and requested counter, summed over dimensions, nothing for a discarded value), the
//! rows of `<prefix>_counter_hygiene.csv`, and the summary lines printed after the run.

use crate::counters::{self, Gpu};
use anyhow::{Result, bail};
use pmc_dxg::defs::{AgentCounters, Definitions, DefsSource};
use pmc_dxg::hygiene::{self, CounterPrograms, Discard, DispatchFacts, DispatchKey, HygieneRow};
use pmc_dxg::pm4::{self, PassBuffers};
use pmc_dxg::{BaseEvent, Topology};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use trace_records::docs::{CounterEvent, CounterRequest};
use trace_records::{CounterRecord, KernelDispatchRecord, ProcessTrace};

/// One counter pass: what was asked for, the base counters the tool programs, and the
/// hygiene options. Kept in `run.json`, so `rocprof convert` evaluates the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPlan {
    /// The counters as the user named them (base and derived), in order.
    pub requested: Vec<String>,
    /// The base counters they need, in first-use order.
    pub events: Vec<CounterEvent>,
    /// `--pmc-discard-warmup MS`: values of dispatches that start within this many
    /// milliseconds of the process's first counted dispatch are discarded.
    #[serde(default)]
    pub discard_warmup_ms: Option<u64>,
    /// `-E/--extra-counters`: the extra definitions the counters were resolved with (kept
    /// whole, so `rocprof convert` evaluates them as the run did).
    #[serde(default)]
    pub extra_counters: Option<ExtraCounters>,
}

/// `-E/--extra-counters YAML`: counter definitions (either counter_defs.yaml schema) added to
/// the installed or built-in ones for one run; a counter of the same name is replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtraCounters {
    /// The file as given.
    pub path: std::path::PathBuf,
    /// Its contents when the run started.
    pub text: String,
}

impl ExtraCounters {
    /// Reads and checks the file (before anything runs): a missing, unreadable or malformed
    /// file, or one that defines no counter, is refused naming it.
    pub fn read(path: &std::path::Path) -> Result<ExtraCounters> {
        let refuse = |e: pmc_dxg::Error| {
            anyhow::anyhow!(
                "-E/--extra-counters: {e} (expected counter definitions in counter_defs.yaml's form)"
            )
        };
        Definitions::load_extra(path).map_err(refuse)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("-E/--extra-counters: {}: {e}", path.display()))?;
        Ok(ExtraCounters {
            path: path.to_owned(),
            text,
        })
    }

    /// The definitions it holds.
    pub fn definitions(&self) -> Result<Definitions> {
        Definitions::parse(&self.path.display().to_string(), &self.text)
            .map_err(|e| anyhow::anyhow!("-E/--extra-counters: {e}"))
    }
}

impl CounterPlan {
    /// What the tool is handed.
    pub fn request(&self) -> CounterRequest {
        CounterRequest {
            events: self.events.clone(),
        }
    }
}

/// Resolves one `--pmc` group on every GPU and checks it fits one pass. A name no GPU defines,
/// a counter this build cannot program, or a group that needs several passes is refused, with
/// what to do (for a split: the `--pmc` groups that fit).
pub fn plan(
    group: &[String],
    discard_warmup_ms: Option<u64>,
    extra: Option<&ExtraCounters>,
) -> Result<CounterPlan> {
    let extra_defs = extra.map(ExtraCounters::definitions).transpose()?;
    let (_, gpus) = counters::gpus_with(None, extra_defs.as_ref())?;
    let mut plan = plan_on(&gpus, group, discard_warmup_ms)?;
    plan.extra_counters = extra.cloned();
    Ok(plan)
}

/// [`plan`] on given GPUs.
pub fn plan_on(
    gpus: &[Gpu],
    group: &[String],
    discard_warmup_ms: Option<u64>,
) -> Result<CounterPlan> {
    let mut events: Option<Vec<(String, BaseEvent)>> = None;
    for gpu in gpus {
        let Some(topology) = Topology::of(&gpu.agent) else {
            continue;
        };
        let check = counters::check(&gpu.counters, &topology, gpu.index, group);
        if !check.one_pass {
            let conflict = check.conflict.unwrap_or_default();
            if check.passes.len() > 1
                && let Some(split) = split_requested(gpu, &topology, group)
            {
                let split: Vec<String> = split
                    .iter()
                    .map(|p| format!("--pmc {}", p.join(" ")))
                    .collect();
                bail!(
                    "these counters do not fit one pass on GPU {} ({}): {conflict}. Collect them \
                     in {} passes, each one run of the application: {} (`rocprof avail \
                     pmc-check` plans a set)",
                    gpu.index,
                    gpu.agent.name,
                    split.len(),
                    split.join(" ")
                );
            }
            bail!(
                "cannot collect {} on GPU {} ({}): {conflict} (`rocprof avail list` lists the \
                 counters this GPU has)",
                group.join(" "),
                gpu.index,
                gpu.agent.name
            );
        }
        let mut base: Vec<(String, BaseEvent)> = Vec::new();
        for name in group {
            for b in gpu.counters.expand(name)? {
                if !base.iter().any(|(n, _)| *n == b.0) {
                    base.push(b);
                }
            }
        }
        match &events {
            None => events = Some(base),
            Some(first) if *first != base => bail!(
                "the GPUs program {} differently (GPU {} needs {}); profile one GPU at a time \
                 (HIP_VISIBLE_DEVICES)",
                group.join(" "),
                gpu.index,
                base.iter()
                    .map(|b| b.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Some(_) => {}
        }
    }
    let Some(events) = events else {
        bail!(
            "no GPU agent was discovered, so no counters can be collected (`rocprof avail` says why)"
        );
    };
    Ok(CounterPlan {
        requested: group.to_vec(),
        events: events
            .into_iter()
            .map(|(name, e)| e.to_counter_event(name))
            .collect(),
        discard_warmup_ms,
        extra_counters: None,
    })
}

/// The requested counters (not their base counters: a derived counter stays whole) in groups
/// that each fit one pass, filled in request order; `None` if one counter alone does not fit.
fn split_requested(gpu: &Gpu, topology: &Topology, group: &[String]) -> Option<Vec<Vec<String>>> {
    let fits =
        |names: &[String]| counters::check(&gpu.counters, topology, gpu.index, names).one_pass;
    let mut groups: Vec<Vec<String>> = Vec::new();
    for name in group {
        if let Some(last) = groups.last_mut() {
            last.push(name.clone());
            if fits(last) {
                continue;
            }
            last.pop();
        }
        let alone = vec![name.clone()];
        if !fits(&alone) {
            return None;
        }
        groups.push(alone);
    }
    Some(groups)
}

/// One counted dispatch of one run, evaluated.
#[derive(Debug, Clone)]
pub struct Counted {
    /// Its dispatch record (timestamps 0 if lost).
    pub dispatch: KernelDispatchRecord,
    /// Its identity across runs.
    pub key: DispatchKey,
    /// One outcome per requested counter, in request order.
    pub outcomes: Vec<Result<f64, Discard>>,
    /// Whether every value its read-back holds is 0.
    pub raw_zero: bool,
}

/// One process's counted dispatches, evaluated, with the counters' ids.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// The requested counters and their ids on the agent.
    pub counters: Vec<(String, u32)>,
    /// Counted dispatches in dispatch-id order.
    pub dispatches: Vec<Counted>,
    /// Samples that could not be decoded or evaluated, with why (said after the run).
    pub problems: Vec<String>,
    /// Counted dispatches that ran while a kernel of another queue of the same agent ran: the
    /// counters are global, so their values include that kernel's work.
    pub overlapped: Vec<u64>,
}

/// Loads the counter definitions the tool used (the same search as `rocprof avail`).
pub fn definitions() -> Result<Definitions> {
    let source = DefsSource::from_process(counters::runtime_lib_dir().as_deref());
    Definitions::load(&source).map_err(|e| {
        anyhow::anyhow!(
            "cannot read the counter definitions ({}): {e}",
            source.origin()
        )
    })
}

/// [`definitions`] with a plan's `-E` definitions added.
pub fn definitions_for(plan: &CounterPlan) -> Result<Definitions> {
    let defs = definitions()?;
    Ok(match &plan.extra_counters {
        Some(extra) => defs.extended(&extra.definitions()?),
        None => defs,
    })
}

/// Decodes and evaluates every counter sample of `trace` for `plan`.
pub fn evaluate(trace: &ProcessTrace, plan: &CounterPlan, defs: &Definitions) -> Evaluation {
    let mut out = Evaluation::default();
    if trace.counter_samples.is_empty() {
        return out;
    }
    let agents = trace.docs.agents();
    let mut per_agent: HashMap<u32, Option<(AgentCounters, PassBuffers, CounterPrograms)>> =
        HashMap::new();
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

    let mut samples: Vec<&trace_records::CounterSample> = trace.counter_samples.iter().collect();
    samples.sort_by_key(|s| s.header.dispatch_id);
    for sample in samples {
        let node = sample.header.agent_node_id;
        let kit = per_agent.entry(node).or_insert_with(|| {
            let agent = agents.iter().find(|a| a.node_id == node)?;
            let setup = trace
                .docs
                .counter_setups
                .iter()
                .find(|s| s.agent_node_id == node)?;
            let counters = defs.for_agent(agent);
            let events: Vec<(String, BaseEvent)> =
                setup.events.iter().map(BaseEvent::named).collect();
            let layout = pm4::build_pass(&Topology::of(agent)?, &events, 0, 0).ok()?;
            let programs = CounterPrograms::new(&counters, &plan.requested).ok()?;
            Some((counters, layout, programs))
        });
        let Some((counters, layout, programs)) = kit.as_ref() else {
            out.problems.push(format!(
                "the counter samples of GPU node {node} cannot be decoded (its agent, its \
                 counter setup or the definitions of {} are missing)",
                plan.requested.join(" ")
            ));
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
            Err(e) => {
                out.problems.push(format!(
                    "dispatch {}: its counter read-back is unreadable: {e}",
                    sample.header.dispatch_id
                ));
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
            Err(e) => {
                out.problems.push(format!(
                    "dispatch {}: its counters cannot be evaluated: {e}",
                    dispatch.dispatch_id
                ));
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
            outcomes: outcomes.into_iter().map(|o| o.value).collect(),
            raw_zero: decoded.iter().all(|c| c.values.iter().all(|&v| v == 0)),
        });
    }
    out.overlapped = overlapping(&trace.dispatches, &out.dispatches);
    out
}

/// One queue's dispatches: (agent, queue), sorted start times, the running maximum of the ends.
type Timeline = ((u32, u64), Vec<u64>, Vec<u64>);

/// The ids of the counted dispatches whose [start, end] overlaps a dispatch of another queue on
/// the same agent (`all`: every dispatch of the process). O(n log n) per queue.
pub fn overlapping(all: &[KernelDispatchRecord], counted: &[Counted]) -> Vec<u64> {
    // Per (agent, queue): start times sorted, with the running maximum of the ends.
    let mut queues: HashMap<(u32, u64), Vec<(u64, u64)>> = HashMap::new();
    for d in all.iter().filter(|d| d.end > d.start) {
        queues
            .entry((d.agent_node_id, d.queue_id))
            .or_default()
            .push((d.start, d.end));
    }
    if queues.len() < 2 {
        return Vec::new();
    }
    let timelines: Vec<Timeline> = queues
        .into_iter()
        .map(|(key, mut spans)| {
            spans.sort_unstable();
            let starts = spans.iter().map(|s| s.0).collect();
            let max_end = spans
                .iter()
                .scan(0, |m, s| {
                    *m = s.1.max(*m);
                    Some(*m)
                })
                .collect();
            (key, starts, max_end)
        })
        .collect();
    counted
        .iter()
        .map(|c| &c.dispatch)
        .filter(|d| d.end > d.start)
        .filter(|d| {
            timelines.iter().any(|((agent, queue), starts, max_end)| {
                if *agent != d.agent_node_id || *queue == d.queue_id {
                    return false;
                }
                // Of the spans starting before `d` ends, does any end after it starts?
                let n = starts.partition_point(|&s| s < d.end);
                n > 0 && max_end[n - 1] > d.start
            })
        })
        .map(|d| d.dispatch_id)
        .collect()
}

/// Per dispatch of `main` and requested counter, the estimate over `main` and the `others`
/// runs of the same process (matched by kernel, per-kernel ordinal, grid and workgroup).
pub fn estimate(main: &Evaluation, others: &[&Evaluation]) -> Vec<HygieneRow> {
    let index: Vec<HashMap<&DispatchKey, &Counted>> = others
        .iter()
        .map(|e| e.dispatches.iter().map(|c| (&c.key, c)).collect())
        .collect();
    let mut rows = Vec::with_capacity(main.dispatches.len() * main.counters.len());
    for counted in &main.dispatches {
        for (k, (name, _)) in main.counters.iter().enumerate() {
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

/// The counter records of `trace` from the estimates (`rows`, as [`estimate`] made them for
/// `eval`): one per dispatch and counter that has an estimate, named in `trace`'s strings.
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

/// Whether every value read back was zero on every dispatch that ran (and some did): what a
/// closed vendor-packet gate (`WSLKMT_VENDOR_PACKET=0`) looks like, since the thunk then drops
/// the PM4 packets without an error.
pub fn all_zero(evals: &[&Evaluation]) -> bool {
    let ran = || {
        evals
            .iter()
            .flat_map(|e| &e.dispatches)
            .filter(|c| c.dispatch.end > c.dispatch.start)
    };
    ran().next().is_some() && ran().all(|c| c.raw_zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(id: u64, queue: u64, start: u64, end: u64) -> KernelDispatchRecord {
        KernelDispatchRecord {
            dispatch_id: id,
            queue_id: queue,
            agent_node_id: 1,
            start,
            end,
            ..Default::default()
        }
    }

    fn counted(d: KernelDispatchRecord) -> Counted {
        Counted {
            dispatch: d,
            key: DispatchKey {
                kernel: String::new(),
                ordinal: 0,
                grid: [1; 3],
                workgroup: [1; 3],
            },
            outcomes: Vec::new(),
            raw_zero: false,
        }
    }

    #[test]
    fn only_kernels_of_other_queues_that_overlap_the_window_are_reported() {
        let all = [
            dispatch(1, 1, 100, 200),
            dispatch(2, 1, 200, 300), // same queue, touching: never an overlap
            dispatch(3, 2, 250, 260), // inside 2's window
            dispatch(4, 2, 50, 120),  // overlaps 1's start
            dispatch(5, 1, 400, 500), // alone
            dispatch(6, 2, 500, 600), // starts when 5 ends: no overlap
            dispatch(7, 3, 1000, 900), // never ran (end < start): ignored
        ];
        let c: Vec<Counted> = [0, 1, 4].iter().map(|&i| counted(all[i])).collect();
        assert_eq!(overlapping(&all, &c), [1, 2]);
        // Another agent's kernels do not count.
        let mut other_agent = all;
        other_agent[2].agent_node_id = 2;
        other_agent[3].agent_node_id = 2;
        assert_eq!(overlapping(&other_agent, &c), Vec::<u64>::new());
        // One queue: nothing to compare.
        assert!(overlapping(&all[..2], &c).is_empty());
    }

    #[test]
    fn a_long_kernel_of_another_queue_is_found_even_if_it_started_long_before() {
        let mut all = vec![dispatch(1, 2, 0, 10_000)];
        all.extend((0..100).map(|k| dispatch(10 + k, 2, 20 + k * 10, 25 + k * 10)));
        let late = dispatch(500, 1, 9_000, 9_100);
        all.push(late);
        assert_eq!(overlapping(&all, &[counted(late)]), [500]);
        let after = dispatch(501, 1, 10_000, 10_100);
        all.push(after);
        assert!(overlapping(&all, &[counted(after)]).is_empty());
    }
}
