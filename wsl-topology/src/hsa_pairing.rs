//! Pairing published agent records with the HSA runtime's agents.
//!
//! On WSL records are keyed by the KMT node id the thunk reported (HSA's
//! `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`), never by a dense ordinal, so the GPUs that were
//! published stay correctly paired whichever others were omitted. HSA GPUs left without a
//! record cannot be profiled; that is reported, never fatal.

use crate::agent::{Agent, AgentKind};

/// An HSA agent as the runtime reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HsaAgentView {
    /// `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`, if it could be queried.
    pub driver_node_id: Option<u32>,
    /// GPU (else CPU).
    pub is_gpu: bool,
}

/// Which record field an HSA agent's driver node id is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Native Linux: the logical (dense) node id.
    Strict,
    /// WSL: the KMT node id.
    Wsl,
}

/// The outcome of pairing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapping {
    /// `(driver_node_id, index into the agent records)` for each paired HSA agent.
    pub pairs: Vec<(u32, usize)>,
    /// Driver node ids of HSA GPUs without a record: not profilable.
    pub unmatched_gpu_node_ids: Vec<u32>,
    /// Driver node ids of other HSA agents without a record.
    pub unmatched_other_node_ids: Vec<u32>,
    /// HSA agents whose node id could not be read.
    pub unqueryable_count: u32,
}

impl Mapping {
    /// Every HSA agent is paired.
    pub fn complete(&self) -> bool {
        self.unmatched_gpu_node_ids.is_empty()
            && self.unmatched_other_node_ids.is_empty()
            && self.unqueryable_count == 0
    }

    /// The record paired with the HSA agent of `driver_node_id`.
    pub fn record_for(&self, driver_node_id: u32) -> Option<usize> {
        self.pairs
            .iter()
            .find(|p| p.0 == driver_node_id)
            .map(|p| p.1)
    }

    /// The user-facing explanation of unpaired HSA GPUs, if any.
    pub fn unsupported_message(&self) -> Option<String> {
        if self.unmatched_gpu_node_ids.is_empty() {
            return None;
        }
        let ids: Vec<String> = self
            .unmatched_gpu_node_ids
            .iter()
            .map(u32::to_string)
            .collect();
        Some(format!(
            "counters and thread trace are unavailable on the HSA GPU agent(s) with KMT node id {}: agent discovery did not publish them (see the omissions reported at start-up), so their properties are unknown and agent_info.csv leaves them out; their kernels and copies are still traced, named by node id. {} other agent(s) (CPUs included) were paired and are fully profilable; the application keeps running.",
            ids.join(", "),
            self.pairs.len()
        ))
    }
}

/// Pairs `hsa` agents with `records`; each record is claimed at most once.
pub fn compute(records: &[Agent], hsa: &[HsaAgentView], policy: Policy) -> Mapping {
    let mut m = Mapping::default();
    let mut claimed = vec![false; records.len()];
    for h in hsa {
        let Some(id) = h.driver_node_id else {
            m.unqueryable_count += 1;
            continue;
        };
        let found = records.iter().enumerate().position(|(i, r)| {
            let key = match policy {
                Policy::Strict => r.logical_node_id,
                Policy::Wsl => r.node_id,
            };
            !claimed[i] && key == id && (r.kind == AgentKind::Gpu) == h.is_gpu
        });
        match found {
            Some(i) => {
                claimed[i] = true;
                m.pairs.push((id, i));
            }
            None if h.is_gpu => m.unmatched_gpu_node_ids.push(id),
            None => m.unmatched_other_node_ids.push(id),
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::synthesized_cpu;

    fn gpu(logical: u32, node: u32) -> Agent {
        Agent {
            kind: AgentKind::Gpu,
            logical_node_id: logical,
            node_id: node,
            ..synthesized_cpu(None, 1)
        }
    }

    fn cpu() -> Agent {
        synthesized_cpu(None, 1)
    }

    fn h(id: u32, is_gpu: bool) -> HsaAgentView {
        HsaAgentView {
            driver_node_id: Some(id),
            is_gpu,
        }
    }

    #[test]
    fn bare_metal_maps_every_agent_by_logical_id() {
        let recs = [cpu(), gpu(1, 90), gpu(2, 91)];
        let m = compute(
            &recs,
            &[h(0, false), h(1, true), h(2, true)],
            Policy::Strict,
        );
        assert!(m.complete());
        assert_eq!(m.pairs, [(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn bare_metal_reports_an_unmatched_gpu() {
        let m = compute(
            &[cpu(), gpu(1, 1)],
            &[h(0, false), h(1, true), h(2, true)],
            Policy::Strict,
        );
        assert_eq!(m.unmatched_gpu_node_ids, [2]);
        assert!(!m.complete());
    }

    #[test]
    fn wsl_pairs_by_kmt_node_id_and_reports_the_rest() {
        let m = compute(
            &[cpu(), gpu(1, 2)],
            &[h(0, false), h(1, true), h(2, true)],
            Policy::Wsl,
        );
        assert_eq!(m.pairs, [(0, 0), (2, 1)]);
        assert_eq!(m.unmatched_gpu_node_ids, [1]);
        let msg = m.unsupported_message().unwrap();
        assert!(msg.contains("KMT node id 1"), "{msg}");
    }

    #[test]
    fn wsl_keys_differ_from_strict_keys() {
        let recs = [cpu(), gpu(1, 3), gpu(2, 7)];
        let hsa = [h(0, false), h(3, true), h(7, true)];
        assert!(compute(&recs, &hsa, Policy::Wsl).complete());
        let strict = compute(&recs, &hsa, Policy::Strict);
        assert_eq!(strict.pairs.len(), 1);
        assert_eq!(strict.unmatched_gpu_node_ids, [3, 7]);
    }

    #[test]
    fn no_gpu_published_pairs_the_cpu_only() {
        let m = compute(&[cpu()], &[h(0, false), h(1, true)], Policy::Wsl);
        assert_eq!(m.pairs, [(0, 0)]);
        assert_eq!(m.unmatched_gpu_node_ids, [1]);
    }

    #[test]
    fn a_record_is_claimed_once_and_unqueryable_agents_are_counted() {
        let m = compute(
            &[cpu(), gpu(1, 1)],
            &[
                h(1, true),
                h(1, true),
                HsaAgentView {
                    driver_node_id: None,
                    is_gpu: true,
                },
            ],
            Policy::Wsl,
        );
        assert_eq!(m.pairs, [(1, 1)]);
        assert_eq!(m.unmatched_gpu_node_ids, [1]);
        assert_eq!(m.unqueryable_count, 1);
    }

    #[test]
    fn surplus_records_and_empty_inputs_are_complete() {
        assert!(compute(&[cpu(), gpu(1, 1)], &[h(0, false)], Policy::Wsl).complete());
        assert!(compute(&[], &[], Policy::Wsl).complete());
    }
}
