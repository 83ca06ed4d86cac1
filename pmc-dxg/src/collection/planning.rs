//! A run's counter group resolved and checked on every GPU before anything runs: a name no GPU
//! defines, a counter this build cannot program, or a group that needs several passes is
//! refused, with what would work instead (for a split: the groups that fit).

use trace_records::agents::Agent;

use super::check::{Fit, fit};
use super::counter_plan::CounterPlan;
use super::extra::ExtraCounters;
use super::gpus::{Gpu, gpus_with};
use crate::{BaseEvent, Error, Topology};

/// Resolves one counter group on every GPU of the discovered `agents` (with the definitions of
/// this process's search and `extra`'s) and checks it fits one pass ([`plan_on`]).
///
/// # Errors
///
/// As [`plan_on`], [`gpus_with`], and the extra definitions' [`Error::Definitions`].
pub fn plan(
    agents: &[Agent],
    group: &[String],
    discard_warmup_ms: Option<u64>,
    extra: Option<&ExtraCounters>,
) -> Result<CounterPlan, Error> {
    let extra_defs = extra.map(ExtraCounters::definitions).transpose()?;
    let (_, gpus) = gpus_with(agents, None, extra_defs.as_ref())?;
    let mut plan = plan_on(&gpus, group, discard_warmup_ms)?;
    plan.extra_counters = extra.cloned();
    Ok(plan)
}

/// [`plan`] on given GPUs (a GPU without a topology is skipped).
///
/// # Errors
///
/// [`Error::SeveralPasses`] when the group needs several passes on a GPU and its counters,
/// each whole, can be grouped into passes; else [`Error::CannotCollect`] with the conflict;
/// [`Error::GpusDiffer`] when two GPUs need different base counters; [`Error::NoGpu`] when no
/// GPU has a topology.
pub fn plan_on(
    gpus: &[Gpu],
    group: &[String],
    discard_warmup_ms: Option<u64>,
) -> Result<CounterPlan, Error> {
    let mut events: Option<Vec<(String, BaseEvent)>> = None;
    for gpu in gpus {
        let Some(topology) = Topology::of(&gpu.agent) else {
            continue;
        };
        let base = match fit(&gpu.counters, &topology, group) {
            Fit::OnePass { base, .. } => base,
            Fit::Refused {
                conflict, split, ..
            } => {
                let conflict = Box::new(conflict);
                if split.len() > 1
                    && let Some(passes) = split_requested(gpu, &topology, group)
                {
                    return Err(Error::SeveralPasses {
                        gpu: gpu.index,
                        agent: gpu.agent.name.clone(),
                        conflict,
                        passes,
                    });
                }
                return Err(Error::CannotCollect {
                    counters: group.to_vec(),
                    gpu: gpu.index,
                    agent: gpu.agent.name.clone(),
                    conflict,
                });
            }
        };
        match &events {
            None => events = Some(base),
            Some(first) if *first != base => {
                return Err(Error::GpusDiffer {
                    counters: group.to_vec(),
                    gpu: gpu.index,
                    base: base.into_iter().map(|b| b.0).collect(),
                });
            }
            Some(_) => {}
        }
    }
    let events = events.ok_or(Error::NoGpu)?;
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
        |names: &[String]| matches!(fit(&gpu.counters, topology, names), Fit::OnePass { .. });
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
