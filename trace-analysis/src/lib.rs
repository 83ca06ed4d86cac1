//! `trace-analysis`: what `rocprof analyze INPUT… [--json]` finds — how far the results of a
//! run, ours or rocprofv3's, can be trusted, where the time went, and what is missing and why.
//!
//! **Inputs** (see [`inputs`]): output directories of CSV files (each file prefix is a process;
//! `pass_<N>` subdirectories are runs), rocpd databases (ours and upstream's schema 3, through
//! `trace_export::rocpd_read`), and record directories (their logs, with the counter
//! read-backs evaluated by rocprof's own hygiene). Each is turned into the same form
//! ([`model::Process`]: API calls, dispatches, copies, ROCTx ranges, counter values by name),
//! so every analysis is written once. A path that is none of the three stops the command
//! before anything is analysed (exit 2).
//!
//! **Reports**, per process:
//!
//! * *timeline* ([`timeline`]): the seed's containment test — every dispatch inside its
//!   launch → consuming-call interval, every copy inside the call that issued it — with the
//!   violations (which record, which end, by how much), the records that could not be
//!   checked and why, the tightest margins, zero and negative durations, the clock domains,
//!   and the violations' pattern (a constant GPU clock skew shows as a range of offsets that
//!   would fix every check);
//! * *where time goes* ([`summary`]): rocprofv3's summary columns per domain;
//! * *missing*: what the input cannot show and why (a kind of record absent and what that
//!   leaves unchecked; for record directories rocprof's own explanations, the tool's warnings,
//!   unpaired agents and lost records);
//!
//! and over all inputs, *counter trust* ([`counters`]): the inputs (and passes) are taken as
//! runs of the same program, their processes matched by start order and their dispatches by
//! kernel, ordinal and sizes; per dispatch × counter the min, max, spread and min-non-zero
//! estimate (`pmc_dxg::hygiene`), GRBM zero bursts, isolated SQ zeros and derived counters
//! that divided by a zero.
//!
//! **Decisions where the seed is silent.**
//!
//! * Consuming calls: the seed names the device-to-host `hipMemcpy` and `hipDeviceSynchronize`;
//!   `hipStreamSynchronize` and `hipCtxSynchronize` count too (the stream is not recorded, so
//!   a synchronize of another stream would show as a violation naming it). A `hipMemcpy` is
//!   known to be device to host from its copy record or a `DtoH` in its name; without the copy
//!   trace the dispatch is checked at its start only rather than bounded by a guess. In an
//!   HSA-only trace the next `hsa_signal_wait_*` on the thread is the bound (the signal is not
//!   recorded).
//! * A record whose correlation id names a call that launches or copies nothing, or a call on
//!   another thread, is *unmatched*, not violated: upstream's documentation samples put files
//!   of different runs under one prefix, and their ids collide.
//! * Skew: instead of eyeballing "similar amounts", the report computes the range of constant
//!   offsets that would satisfy every check at once; violations with such a range are a
//!   constant skew, without one they are not. The median violation and the tightest margins
//!   (the largest skew the test cannot see) are given too.
//! * Counters: processes of different inputs are matched by start order and dispatches by
//!   kernel, ordinal and size volumes (`counter_collection.csv` has only volumes); the inputs
//!   are assumed to be runs of one program, and dispatches only some runs have are counted.
//!   rocprofv3's files hold the zeros, ours leave set-aside values out and give the reason in
//!   `counter_hygiene.csv`: both are read back to the same outcomes, so `pmc_dxg::hygiene`'s
//!   estimates over separate runs are exactly those of a `--pmc-repeat` run of the same
//!   sessions (the simulator pins a session with `WSLSIM_SEED`, which the tests use).
//! * Memory: an input is read whole (a record directory's calls included), as a rocpd database
//!   already is by `rocpd_read`; about 40 bytes per API call.
//!
//! Violations are findings, not errors: the command exits 0 whenever the analysis ran.
//! `--json` prints [`report::Report`] with serde (the lists capped at
//! [`timeline::KEEP`] entries, with totals); the text report shows [`report::TEXT_CAP`] of
//! each list and counts the rest.
//!
//! **Entry point** ([`analysis`]): [`analyze`] reads the [`Options`]' inputs and returns an
//! [`Analysis`] — the [`report::Report`] as data ([`Analysis::to_json`], or serde), its text
//! ([`Analysis::render_text`], or `Display`), exactly what the command writes to stdout
//! ([`Analysis::output`]) and its exit status ([`Analysis::exit_code`]). An input that is none of
//! the three kinds is an [`Error`] (exit 2, [`Error::exit_code`]). This crate prints nothing.

pub mod analysis;
pub mod counters;
pub mod error;
pub mod inputs;
pub mod model;
pub mod report;
pub mod summary;
pub mod timeline;

pub use analysis::{Analysis, Options, analyze};
pub use error::Error;
