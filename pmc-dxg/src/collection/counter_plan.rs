//! What a run collects: the requested counters, the base counters the tool programs, and the
//! hygiene options, kept with the run so that a later evaluation works the same way.

use serde::{Deserialize, Serialize};
use trace_records::docs::{AgentCounterGroups, CounterEvent, CounterRequest};

use super::extra::ExtraCounters;

/// One counter pass: what was asked for, the base counters the tool programs, and the
/// hygiene options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPlan {
    /// The counters as the user named them (base and derived), in order.
    pub requested: Vec<String>,
    /// The base counters they need, in first-use order.
    pub events: Vec<CounterEvent>,
    /// Values of dispatches that start within this many milliseconds of the process's first
    /// counted dispatch are discarded (the warm-up window).
    #[serde(default)]
    pub discard_warmup_ms: Option<u64>,
    /// The extra definitions the counters were resolved with (kept whole, so a later
    /// evaluation resolves them as the run did).
    #[serde(default)]
    pub extra_counters: Option<ExtraCounters>,
    /// Per GPU, its counter groups (multiplexed `pmc_groups`, `:device=N` qualifiers, counters
    /// a GPU lacks left out); when not empty it replaces `events`, and `requested` lists
    /// every counter of every group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<GpuGroups>,
    /// Selected dispatches each group counts before the next (rocprofv3's
    /// `pmc_group_interval`; 0 is 1).
    #[serde(default)]
    pub interval: u64,
}

/// One GPU's counter groups in a [`CounterPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuGroups {
    /// The agent's driver node id.
    pub node_id: u32,
    /// Its groups, in the order its dispatches go through them.
    pub groups: Vec<PlannedGroup>,
}

/// One counter group planned on one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedGroup {
    /// The counters as named (qualifiers removed), in order.
    pub requested: Vec<String>,
    /// The base counters they need.
    pub events: Vec<CounterEvent>,
}

impl CounterPlan {
    /// What the tool is handed.
    pub fn request(&self) -> CounterRequest {
        CounterRequest {
            events: self.events.clone(),
            agents: self
                .agents
                .iter()
                .map(|a| AgentCounterGroups {
                    node_id: a.node_id,
                    groups: a.groups.iter().map(|g| g.events.clone()).collect(),
                })
                .collect(),
            interval: self.interval,
        }
    }

    /// The counters group `group` of node `node` collects (the whole request without
    /// per-GPU groups).
    pub fn requested_by(&self, node: u32, group: u32) -> Option<&[String]> {
        if self.agents.is_empty() {
            return (group == 0).then_some(self.requested.as_slice());
        }
        let gpu = self.agents.iter().find(|a| a.node_id == node)?;
        Some(gpu.groups.get(group as usize)?.requested.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_plan_reads_back_as_the_cli_wrote_it() {
        // The form run.json has kept since before `-E` and the warm-up window existed.
        let old = concat!(
            r#"{"requested":["GPU_UTIL"],"#,
            r#""events":[{"name":"GRBM_COUNT","block":"GRBM","event":0}]}"#
        );
        let plan: CounterPlan = serde_json::from_str(old).unwrap();
        assert_eq!(plan.requested, ["GPU_UTIL"]);
        assert_eq!(plan.events[0].name, "GRBM_COUNT");
        assert_eq!(
            (plan.discard_warmup_ms, plan.extra_counters.as_ref()),
            (None, None)
        );
        let full = CounterPlan {
            discard_warmup_ms: Some(300),
            extra_counters: Some(ExtraCounters {
                path: "/x.yaml".into(),
                text: "t".into(),
            }),
            ..plan
        };
        let json = serde_json::to_value(&full).unwrap();
        assert_eq!(json["discard_warmup_ms"], 300);
        assert_eq!(json["extra_counters"]["path"], "/x.yaml");
        assert_eq!(json["extra_counters"]["text"], "t");
        let back: CounterPlan = serde_json::from_value(json).unwrap();
        assert_eq!(back, full);
        assert_eq!(back.request().events, back.events);
    }
}
