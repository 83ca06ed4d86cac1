//! A run's counter group resolved and checked on every GPU before anything runs: a name no GPU
//! defines, a counter this build cannot program, or a group that needs several passes is
//! refused, with what would work instead (for a split: the groups that fit).

use std::collections::HashMap;

use super::check::{Fit, fit};
use super::counter_plan::{CounterPlan, GpuGroups, PlannedGroup};
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
        agents: Vec::new(),
        interval: 0,
    })
}

/// A counter name with rocprofv3's `:device=N` qualifier split off: the name, and the GPU
/// index it is restricted to.
///
/// # Errors
///
/// [`Error::BadQualifier`] when what follows `:device=` is not a decimal GPU index.
pub fn qualified(counter: &str) -> Result<(&str, Option<u32>), Error> {
    let Some((name, index)) = counter.split_once(":device=") else {
        return Ok((counter, None));
    };
    let bad = || Error::BadQualifier {
        counter: counter.to_owned(),
    };
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    Ok((name, Some(index.parse().map_err(|_| bad())?)))
}

/// Counters a GPU lacks that the definitions know (for other GPUs): left out on it, the
/// others collected (rocprofv3 warns and goes on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lacking {
    /// rocprofv3's GPU index.
    pub gpu: u32,
    /// The agent's name.
    pub agent: String,
    /// The counters it lacks, as named.
    pub names: Vec<String>,
}

/// Counter groups planned on every GPU, with what some GPUs leave out.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupsPlan {
    /// The plan.
    pub plan: CounterPlan,
    /// The counters GPUs lack, per GPU.
    pub lacking: Vec<Lacking>,
}

/// Plans counter groups as rocprofv3 collects them: each GPU's selected dispatches go
/// through the groups in turn, `interval` at a time (one group: every dispatch). On each GPU a
/// counter qualified `:device=N` is kept only if N is its index, a counter the GPU lacks but
/// the definitions know (`known`) is left out (and said in [`GroupsPlan::lacking`]), and a
/// group left empty is dropped; each group left must fit one pass. One unqualified group that
/// every GPU collects whole is the plain plan of [`plan_on`].
///
/// # Errors
///
/// [`Error::BadQualifier`]; what [`plan_on`] says of a group on one GPU (a name no
/// definition knows among them); [`Error::NoGpu`].
pub fn plan_groups(
    gpus: &[Gpu],
    known: &dyn Fn(&str) -> bool,
    groups: &[Vec<String>],
    interval: u64,
    discard_warmup_ms: Option<u64>,
) -> Result<GroupsPlan, Error> {
    let groups: Vec<Vec<(String, Option<u32>)>> = groups
        .iter()
        .map(|g| {
            merge_duplicates(g)
                .names
                .iter()
                .map(|c| qualified(c).map(|(n, d)| (n.to_owned(), d)))
                .collect::<Result<_, _>>()
        })
        .collect::<Result<_, _>>()?;
    let mut agents = Vec::new();
    let mut lacking = Vec::new();
    let mut requested: Vec<String> = Vec::new();
    for gpu in gpus.iter().filter(|g| Topology::of(&g.agent).is_some()) {
        let mut planned = Vec::new();
        let mut lacks: Vec<String> = Vec::new();
        for group in &groups {
            let mut names: Vec<String> = Vec::new();
            for (name, device) in group {
                if device.is_some_and(|d| d != gpu.index) || names.contains(name) {
                    continue;
                }
                if gpu.counters.get(name).is_none() && known(name) {
                    if !lacks.contains(name) {
                        lacks.push(name.clone());
                    }
                    continue;
                }
                names.push(name.clone());
            }
            if names.is_empty() {
                continue;
            }
            let one = plan_on(std::slice::from_ref(gpu), &names, discard_warmup_ms)?;
            for n in &one.requested {
                if !requested.contains(n) {
                    requested.push(n.clone());
                }
            }
            planned.push(PlannedGroup {
                requested: one.requested,
                events: one.events,
            });
        }
        if !lacks.is_empty() {
            lacking.push(Lacking {
                gpu: gpu.index,
                agent: gpu.agent.name.clone(),
                names: lacks,
            });
        }
        agents.push(GpuGroups {
            node_id: gpu.agent.node_id,
            groups: planned,
        });
    }
    if agents.is_empty() {
        return Err(Error::NoGpu);
    }
    let plain = groups.len() == 1
        && groups[0].iter().all(|(_, d)| d.is_none())
        && lacking.is_empty()
        && agents
            .iter()
            .all(|a| a.groups.len() == 1 && a.groups[0] == agents[0].groups[0]);
    let mut plan = CounterPlan {
        requested,
        events: Vec::new(),
        discard_warmup_ms,
        extra_counters: None,
        agents: Vec::new(),
        interval: interval.max(1),
    };
    match plain {
        true => {
            let one = agents.swap_remove(0).groups.swap_remove(0);
            plan.requested = one.requested;
            plan.events = one.events;
            plan.interval = 0;
        }
        false => plan.agents = agents,
    }
    Ok(GroupsPlan { plan, lacking })
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

    #[test]
    fn groups_are_planned_per_gpu_with_qualifiers_and_lacking_counters() {
        let gpus = radeon();
        let known = |n: &str| n == "ONLY_ON_MI200";
        let groups = vec![
            names(&["SQ_WAVES", "GRBM_COUNT", "SQ_WAVES"]),
            names(&[
                "GRBM_GUI_ACTIVE",
                "ONLY_ON_MI200",
                "SQ_BUSY_CYCLES:device=3",
            ]),
        ];
        let p = plan_groups(&gpus, &known, &groups, 4, None).unwrap();
        assert_eq!(p.plan.interval, 4);
        assert_eq!(
            p.plan.requested,
            ["SQ_WAVES", "GRBM_COUNT", "GRBM_GUI_ACTIVE"]
        );
        assert_eq!(p.plan.agents.len(), 1);
        let g = &p.plan.agents[0].groups;
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].requested, ["GRBM_GUI_ACTIVE"]);
        assert_eq!(p.plan.requested_by(1, 1), Some(&g[1].requested[..]));
        assert_eq!(
            p.lacking,
            [Lacking {
                gpu: 0,
                agent: "gfx1150".into(),
                names: names(&["ONLY_ON_MI200"])
            }]
        );
        assert_eq!(p.plan.request().agents[0].groups.len(), 2);
        // One plain group is the plan of plan_on.
        let one = plan_groups(&gpus, &known, &groups[..1], 1, None).unwrap();
        assert_eq!(one.plan, plan_on(&gpus, &groups[0], None).unwrap());
        // A qualifier for another GPU only: nothing collected, not an error.
        let none = plan_groups(&gpus, &known, &[names(&["SQ_WAVES:device=16384"])], 1, None);
        assert!(none.unwrap().plan.requested.is_empty());
        // A name no definition knows is still refused.
        assert!(plan_groups(&gpus, &known, &[names(&["SQ_WAVEZ"])], 1, None).is_err());
        assert!(matches!(
            plan_groups(&gpus, &known, &[names(&["SQ_WAVES:device="])], 1, None),
            Err(Error::BadQualifier { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn qualifiers_parse_as_rocprofv3_reads_them(
            name in "[A-Z_]{1,12}(\\[[0-9]\\])?",
            index in proptest::num::u32::ANY,
            junk in "[^0-9]{1,4}|[0-9]{0,3}[a-z:=-][0-9a-z]{0,3}",
        ) {
            proptest::prop_assert_eq!(qualified(&name).unwrap(), (name.as_str(), None));
            let q = format!("{name}:device={index}");
            proptest::prop_assert_eq!(qualified(&q).unwrap(), (name.as_str(), Some(index)));
            let bad = format!("{name}:device={junk}");
            let is_bad_qualifier = matches!(qualified(&bad), Err(Error::BadQualifier { .. }));
            proptest::prop_assert!(is_bad_qualifier, "{}", bad);
            let huge = format!("{name}:device={}0", u64::MAX);
            let huge_is_bad = matches!(qualified(&huge), Err(Error::BadQualifier { .. }));
            proptest::prop_assert!(huge_is_bad);
        }
    }
}
