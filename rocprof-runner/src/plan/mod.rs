//! A run's settings: what to trace, where the outputs go, the counter pass, the thread trace,
//! the foreign domains and the launch. The record directory's `run.json` serialises them, so a
//! later conversion writes what the run would have; nothing here depends on how they were
//! asked for (a command line, an input file or another tool's code).

pub mod domains;
pub mod launch;
pub mod launcher;
pub mod outputs;
pub mod selection;
pub mod thread_trace;

pub use domains::ForeignDomain;
pub use launch::Launch;
pub use outputs::{
    AgentIndexChoice, FillPolicy, OutputFormat, OutputSettings, PerfettoBackend, PerfettoSettings,
    SummarySettings, SummaryUnits,
};
pub use pmc_dxg::collection::{CounterPlan, ExtraCounters};
pub use selection::Selection;
pub use thread_trace::{AttConfig, AttPlan};
