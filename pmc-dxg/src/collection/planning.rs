//! A run's counter group resolved and checked on every GPU before anything runs: a name no GPU
//! defines, a counter this build cannot program, or a group that needs several passes is
//! refused, with what would work instead (for a split: the groups that fit).

use std::collections::HashMap;

use super::check::{Fit, fit};
use super::counter_plan::CounterPlan;
use super::gpus::Gpu;
use crate::{BaseEvent, Error, Topology};

/// A counter group with its repeated names merged ([`merge_duplicates`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    /// Each name once, in the order it was first given.
    pub names: Vec<String>,
    /// The names given more than once, with how often each was given, in the order of their
    /// first occurrence.
    pub repeated: Vec<(String, usize)>,
}

/// Merges the repeated names of a counter group: a counter is collected once however often it
/// is named (one value per dispatch, not one row per mention), where it was first given.
pub fn merge_duplicates(group: &[String]) -> Merged {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(group.len());
    let mut names: Vec<String> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for name in group {
        match seen.get(name.as_str()) {
            Some(&k) => counts[k] += 1,
            None => {
                seen.insert(name, names.len());
                names.push(name.clone());
                counts.push(1);
            }
        }
    }
    let repeated = names
        .iter()
        .zip(&counts)
        .filter(|(_, n)| **n > 1)
        .map(|(name, n)| (name.clone(), *n))
        .collect();
    Merged { names, repeated }
}

/// Resolves one counter group on the given GPUs (a GPU without a topology is skipped) and
/// checks it fits one pass. A name given more than once is
/// planned once, where it was first given ([`merge_duplicates`]).
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
    let merged = merge_duplicates(group);
    let group = merged.names.as_slice();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defs::Definitions;
    use trace_records::agents::{Agent, AgentKind, GpuProperties};

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    /// The simulated Radeon 890M as far as its counters need: gfx1150, one shader engine of two
    /// arrays, 16 compute units.
    fn radeon() -> Vec<Gpu> {
        let agent = Agent {
            kind: AgentKind::Gpu,
            logical_node_id: 1,
            node_id: 1,
            logical_node_type_id: 0,
            name: "gfx1150".into(),
            product_name: String::new(),
            vendor_name: "AMD".into(),
            model_name: String::new(),
            cpu_cores_count: 0,
            gpu: Some(GpuProperties {
                simd_count: 32,
                simd_per_cu: 2,
                cu_count: 16,
                num_shader_banks: 1,
                simd_arrays_per_engine: 2,
                array_count: 2,
                num_xcc: 1,
                ..GpuProperties::default()
            }),
        };
        Gpu::all(&[agent], &Definitions::built_in().unwrap())
    }

    #[test]
    fn repeated_names_are_merged_where_they_were_first_given() {
        let m = merge_duplicates(&names(&[
            "SQ_WAVES",
            "GRBM_COUNT",
            "SQ_WAVES",
            "GPU_UTIL",
            "GRBM_COUNT",
            "SQ_WAVES",
        ]));
        assert_eq!(m.names, ["SQ_WAVES", "GRBM_COUNT", "GPU_UTIL"]);
        assert_eq!(
            m.repeated,
            [("SQ_WAVES".to_owned(), 3), ("GRBM_COUNT".to_owned(), 2)]
        );
        let once = merge_duplicates(&names(&["GPU_UTIL", "SQ_WAVES"]));
        assert_eq!(once.names, ["GPU_UTIL", "SQ_WAVES"]);
        assert!(once.repeated.is_empty());
        assert_eq!(merge_duplicates(&[]), Merged::default());
    }

    #[test]
    fn a_plan_requests_each_counter_once_however_often_it_was_named() {
        let gpus = radeon();
        let plan = plan_on(&gpus, &names(&["SQ_WAVES"; 3]), None).unwrap();
        assert_eq!(plan.requested, ["SQ_WAVES"]);
        assert_eq!(plan.events.len(), 1);
        // 5,000 mentions: one counter, planned in one pass, quickly.
        let many = names(&["SQ_WAVES"; 5_000]);
        let started = std::time::Instant::now();
        let plan = plan_on(&gpus, &many, None).unwrap();
        assert_eq!(plan.requested, ["SQ_WAVES"]);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let plan = plan_on(
            &gpus,
            &names(&["GPU_UTIL", "SQ_WAVES", "GPU_UTIL", "GRBM_COUNT", "SQ_WAVES"]),
            None,
        )
        .unwrap();
        assert_eq!(plan.requested, ["GPU_UTIL", "SQ_WAVES", "GRBM_COUNT"]);
    }
}
