//! Hardware counters in a run, before and after it: a counter group resolved and checked on
//! every GPU before anything runs, and afterwards each counted dispatch's raw read-back
//! decoded, evaluated and cleaned of the WSL2 artefacts (GRBM zero bursts, isolated SQ zeros,
//! an opening window to discard and, over repeated runs, other GPU clients' work, by taking
//! the smallest non-zero value).
//!
//! Before the run:
//! - [`Gpu`], [`gpus_with`]: the discovered GPU agents with their counters (discovery itself
//!   is the caller's: this crate takes the agents);
//! - [`definitions`], [`definitions_for`], [`runtime_lib_dir`]: the definitions the tool uses
//!   (the same search), with a plan's [`ExtraCounters`];
//! - [`check`] ([`Check`]): whether a set fits one pass on one GPU, why not, and the split;
//! - [`merge_duplicates`] ([`Merged`]): a group's repeated names merged (planning does it too);
//! - [`plan_on`]: a group resolved on every GPU into a [`CounterPlan`], or refused
//!   ([`crate::Error::SeveralPasses`] with the groups that fit, [`crate::Error::CannotCollect`],
//!   [`crate::Error::GpusDiffer`], [`crate::Error::NoGpu`]).
//!
//! After the run:
//! - [`evaluate`]: one process's samples into an [`Evaluation`] ([`Counted`] dispatches, each
//!   [`Problem`], the dispatches [`overlapping`] another queue's kernels);
//! - [`all_zero`]: every value read back was 0 (a closed vendor-packet gate);
//! - [`estimate`]: the [`crate::hygiene::HygieneRow`]s over repeated runs;
//! - [`fill_records`]: the process's counter records from the estimates.
//!
//! Nothing here prints or names a command-line option: refusals are [`crate::Error`]s and
//! problems [`Problem`]s, each with its text, for the caller to present.

mod check;
mod counter_plan;
mod definitions;
mod evaluate;
mod evaluation;
mod extra;
mod gpus;
mod overlap;
mod planning;
mod records;
mod runs;

pub use check::{Check, check};
pub use counter_plan::{CounterPlan, GpuGroups, PlannedGroup};
pub use definitions::{definitions, definitions_for, load, runtime_lib_dir, source};
pub use evaluate::evaluate;
pub use evaluation::{Counted, Evaluation, Problem, all_zero};
pub use extra::ExtraCounters;
pub use gpus::{Gpu, gpus_with};
pub use overlap::overlapping;
pub use planning::{
    GroupsPlan, Lacking, Merged, merge_duplicates, plan_groups, plan_on, qualified,
};
pub use records::fill_records;
pub use runs::estimate;
