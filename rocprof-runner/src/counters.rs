//! The counters of a run on the GPUs discovery publishes: [`pmc_dxg::collection`] (planning,
//! evaluation, the pass check) over the agents [`wsl_topology`] discovers in this process.

use pmc_dxg::collection::{self, CounterPlan, ExtraCounters, Gpu};
use pmc_dxg::defs::{Definitions, DefsSource};

/// The definitions (with `extra` added to the installed ones) and every GPU agent discovery
/// publishes (only GPU `device`, when given), with its counters.
pub fn gpus_with(
    device: Option<u32>,
    extra: Option<&Definitions>,
) -> Result<(DefsSource, Vec<Gpu>), pmc_dxg::Error> {
    let discovery = wsl_topology::discover(&wsl_topology::Settings::from_env());
    collection::gpus_with(discovery.agents(), device, extra)
}

/// Resolves one counter group on every discovered GPU and checks it fits one pass.
pub fn plan(
    group: &[String],
    discard_warmup_ms: Option<u64>,
    extra: Option<&ExtraCounters>,
) -> Result<CounterPlan, pmc_dxg::Error> {
    let discovery = wsl_topology::discover(&wsl_topology::Settings::from_env());
    collection::plan(discovery.agents(), group, discard_warmup_ms, extra)
}
