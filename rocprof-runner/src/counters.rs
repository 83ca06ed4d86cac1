//! The GPUs a counter run can use, with their counters, and whether counters fit one pass.

use anyhow::{Context as _, Result, bail};
use pmc_dxg::defs::{AgentCounters, Definitions, DefsSource};
use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, plan};
use pmc_dxg::{BaseEvent, Topology};
use serde::Serialize;
use std::path::{Path, PathBuf};
use trace_records::agents::Agent;

/// One GPU agent and its counters.
pub struct Gpu {
    /// rocprofv3's GPU index (`logical_node_type_id`).
    pub index: u32,
    /// The agent.
    pub agent: Agent,
    /// Its counters.
    pub counters: AgentCounters,
}

/// The directory the HSA runtime would be loaded from: the first `LD_LIBRARY_PATH` entry that
/// holds `libhsa-runtime64.so*`, else `/opt/rocm/lib` when it does.
pub fn runtime_lib_dir() -> Option<PathBuf> {
    let holds = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|rd| {
            rd.filter_map(Result::ok).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("libhsa-runtime64.so")
            })
        })
    };
    let from_path = std::env::var_os("LD_LIBRARY_PATH").and_then(|v| {
        std::env::split_paths(&v)
            .filter(|d| !d.as_os_str().is_empty())
            .find(|d| holds(d))
    });
    from_path.or_else(|| {
        let rocm = PathBuf::from("/opt/rocm/lib");
        holds(&rocm).then_some(rocm)
    })
}

/// The definitions (with extra ones, `-E/--extra-counters`, added to the installed ones) and
/// every GPU agent discovery publishes, with its counters.
pub fn gpus_with(
    device: Option<u32>,
    extra: Option<&Definitions>,
) -> Result<(DefsSource, Vec<Gpu>)> {
    let source = DefsSource::from_process(runtime_lib_dir().as_deref());
    let mut defs = Definitions::load(&source)
        .with_context(|| format!("cannot read the counter definitions ({})", source.origin()))?;
    if let Some(extra) = extra {
        defs = defs.extended(extra);
    }
    let discovery = wsl_topology::discover(&wsl_topology::Settings::from_env());
    let mut out = Vec::new();
    for agent in discovery.agents().iter().filter(|a| a.is_gpu()) {
        if device.is_some_and(|d| d != agent.logical_node_type_id) {
            continue;
        }
        out.push(Gpu {
            index: agent.logical_node_type_id,
            counters: defs.for_agent(agent),
            agent: agent.clone(),
        });
    }
    if out.is_empty() {
        match device {
            Some(d) => {
                bail!("there is no GPU {d} (`rocprof avail list --agent` lists the GPUs by index)")
            }
            None => bail!(
                "no GPU agent was discovered, so there are no counters to list (`rocprof avail` says why)"
            ),
        }
    }
    Ok((source, out))
}

/// The answer of `pmc-check` for one GPU.
#[derive(Debug, Serialize, PartialEq)]
pub struct Check {
    /// The GPU index.
    pub gpu: u32,
    /// The counters asked for on it.
    pub counters: Vec<String>,
    /// The base counters they need.
    pub base: Vec<String>,
    /// Whether they fit one pass.
    pub one_pass: bool,
    /// The passes a split takes (base counter names), when they can be collected at all.
    pub passes: Vec<Vec<String>>,
    /// Why they cannot be collected together (or at all).
    pub conflict: Option<String>,
}

/// Plans `names` on one GPU: one pass if possible, else the fewest passes and the conflict.
pub fn check(counters: &AgentCounters, topology: &Topology, gpu: u32, names: &[String]) -> Check {
    let mut check = Check {
        gpu,
        counters: names.to_vec(),
        base: Vec::new(),
        one_pass: false,
        passes: Vec::new(),
        conflict: None,
    };
    let mut base: Vec<(String, BaseEvent)> = Vec::new();
    for n in names {
        match counters.expand(n) {
            Ok(list) => {
                for b in list {
                    if !base.iter().any(|(k, _)| *k == b.0) {
                        base.push(b);
                    }
                }
            }
            Err(e) => {
                check.conflict = Some(e.to_string());
                return check;
            }
        }
    }
    check.base = base.iter().map(|(n, _)| n.clone()).collect();
    let names_of = |passes: Vec<pmc_dxg::plan::Pass>| -> Vec<Vec<String>> {
        passes
            .into_iter()
            .map(|p| p.counters.into_iter().map(|(n, _)| n).collect())
            .collect()
    };
    let frame = Some(DXG_FRAME_DWORDS);
    match plan(topology, &base, Packing::OnePass, frame) {
        Ok(passes) => {
            check.one_pass = true;
            check.passes = names_of(passes);
        }
        Err(conflict) => {
            check.conflict = Some(conflict.to_string());
            if let Ok(passes) = plan(topology, &base, Packing::Split, frame) {
                check.passes = names_of(passes);
            }
        }
    }
    check
}
