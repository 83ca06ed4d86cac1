//! The GPU agents of a run with their counters.

use trace_records::agents::Agent;

use super::definitions;
use crate::Error;
use crate::defs::{AgentCounters, Definitions, DefsSource};

/// One GPU agent and its counters.
#[derive(Debug, Clone)]
pub struct Gpu {
    /// rocprofv3's GPU index (`logical_node_type_id`).
    pub index: u32,
    /// The agent.
    pub agent: Agent,
    /// Its counters.
    pub counters: AgentCounters,
}

impl Gpu {
    /// `agent` with its counters in `defs`.
    pub fn new(agent: &Agent, defs: &Definitions) -> Gpu {
        Gpu {
            index: agent.logical_node_type_id,
            counters: defs.for_agent(agent),
            agent: agent.clone(),
        }
    }

    /// Every GPU among `agents` (CPU agents left out), in their order.
    pub fn all<'a>(agents: impl IntoIterator<Item = &'a Agent>, defs: &Definitions) -> Vec<Gpu> {
        agents
            .into_iter()
            .filter(|a| a.is_gpu())
            .map(|a| Gpu::new(a, defs))
            .collect()
    }
}

/// The definitions (this process's search, [`definitions::source`], with `extra` added) and
/// every GPU of the discovered `agents` with its counters, or only GPU `device`.
///
/// # Errors
///
/// [`Error::DefinitionsUnavailable`]; [`Error::NoSuchGpu`] when `device` is not among them,
/// [`Error::NoGpu`] when there is no GPU at all.
pub fn gpus_with(
    agents: &[Agent],
    device: Option<u32>,
    extra: Option<&Definitions>,
) -> Result<(DefsSource, Vec<Gpu>), Error> {
    let source = definitions::source();
    let mut defs = definitions::load(&source)?;
    if let Some(extra) = extra {
        defs = defs.extended(extra);
    }
    Ok((source, select(agents, device, &defs)?))
}

/// The GPUs of `agents` with their counters in `defs`, all or only `device`.
fn select(agents: &[Agent], device: Option<u32>, defs: &Definitions) -> Result<Vec<Gpu>, Error> {
    let gpus: Vec<Gpu> = Gpu::all(agents, defs)
        .into_iter()
        .filter(|g| device.is_none_or(|d| d == g.index))
        .collect();
    match device {
        _ if !gpus.is_empty() => Ok(gpus),
        Some(d) => Err(Error::NoSuchGpu(d)),
        None => Err(Error::NoGpu),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::agents::{AgentKind, GpuProperties};

    fn agent(kind: AgentKind, index: u32) -> Agent {
        let gpu = kind == AgentKind::Gpu;
        Agent {
            kind,
            logical_node_id: index + u32::from(gpu),
            node_id: index,
            logical_node_type_id: index,
            name: if gpu { "gfx1150" } else { "cpu" }.into(),
            product_name: String::new(),
            vendor_name: String::new(),
            model_name: String::new(),
            cpu_cores_count: 0,
            gpu: gpu.then(GpuProperties::default),
        }
    }

    #[test]
    fn gpus_are_selected_by_index_and_cpus_left_out() {
        let defs = Definitions::built_in().unwrap();
        let agents = [
            agent(AgentKind::Cpu, 0),
            agent(AgentKind::Gpu, 0),
            agent(AgentKind::Gpu, 1),
        ];
        let all = select(&agents, None, &defs).unwrap();
        assert_eq!(all.iter().map(|g| g.index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(all[0].counters.gfx(), "gfx1150");
        let one = select(&agents, Some(1), &defs).unwrap();
        assert_eq!((one.len(), one[0].index), (1, 1));
        assert_eq!(
            select(&agents, Some(2), &defs).unwrap_err(),
            Error::NoSuchGpu(2)
        );
        assert_eq!(select(&agents[..1], None, &defs).unwrap_err(), Error::NoGpu);
        assert_eq!(Error::NoSuchGpu(2).to_string(), "there is no GPU 2");
    }
}
