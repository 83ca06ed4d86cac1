//! The counters of a run on the GPUs discovery publishes: [`pmc_dxg::collection`] (planning,
//! evaluation, the pass check) over the agents [`wsl_topology`] discovers in this process.

use pmc_dxg::collection::{self, CounterPlan, ExtraCounters, Gpu, GroupsPlan};
use pmc_dxg::defs::{Definitions, DefsSource};
use std::collections::HashSet;

/// The definitions (with `extra` added to the installed ones) and every GPU agent discovery
/// publishes (only GPU `device`, when given), with its counters.
pub fn gpus_with(
    device: Option<u32>,
    extra: Option<&Definitions>,
) -> Result<(DefsSource, Vec<Gpu>), pmc_dxg::Error> {
    let discovery = wsl_topology::discover(&wsl_topology::Settings::from_env());
    collection::gpus_with(discovery.agents(), device, extra)
}

/// The GPUs a counter run plans on, discovered and given their counters once for every group
/// of the run.
#[derive(Debug, Clone)]
pub struct Planner {
    gpus: Vec<Gpu>,
    extra: Option<ExtraCounters>,
    /// Every counter name the definitions know, for any GPU.
    known: HashSet<String>,
}

impl Planner {
    /// Discovers the GPUs and reads the definitions (with `extra`'s added).
    pub fn discover(extra: Option<&ExtraCounters>) -> Result<Planner, pmc_dxg::Error> {
        let extra_defs = extra.map(ExtraCounters::definitions).transpose()?;
        let (source, gpus) = gpus_with(None, extra_defs.as_ref())?;
        let mut defs = collection::load(&source)?;
        if let Some(extra) = &extra_defs {
            defs = defs.extended(extra);
        }
        Ok(Planner {
            gpus,
            extra: extra.cloned(),
            known: defs.counters().iter().map(|c| c.name.clone()).collect(),
        })
    }

    /// Plans counter groups as rocprofv3 collects them in one run
    /// ([`collection::plan_groups`]: multiplexed every `interval` selected dispatches,
    /// `:device=N` qualifiers, counters a GPU lacks left out on it).
    pub fn plan_groups(
        &self,
        groups: &[Vec<String>],
        interval: u64,
        discard_warmup_ms: Option<u64>,
    ) -> Result<GroupsPlan, pmc_dxg::Error> {
        let known = |name: &str| self.known.contains(name);
        let mut planned =
            collection::plan_groups(&self.gpus, &known, groups, interval, discard_warmup_ms)?;
        planned.plan.extra_counters = self.extra.clone();
        Ok(planned)
    }

    /// Resolves one counter group on every GPU and checks it fits one pass
    /// ([`collection::plan_on`]).
    pub fn plan(
        &self,
        group: &[String],
        discard_warmup_ms: Option<u64>,
    ) -> Result<CounterPlan, pmc_dxg::Error> {
        let mut plan = collection::plan_on(&self.gpus, group, discard_warmup_ms)?;
        plan.extra_counters = self.extra.clone();
        Ok(plan)
    }
}
