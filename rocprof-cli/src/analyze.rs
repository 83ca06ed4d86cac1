//! `rocprof analyze INPUT… [--json]`: how far the results of a run — ours or rocprofv3's — can
//! be trusted, where the time went, and what is missing and why.
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

mod counters;
mod inputs;
mod model;
mod report;
mod summary;
mod timeline;

use anyhow::Result;
use model::{Api, Process};
use report::{Counts, InputReport, ProcessReport, Report};
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof analyze` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output directories of CSV files, rocpd databases (`.db`) or record directories — ours or
    /// upstream rocprofv3's.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// One JSON document instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// Analyses the inputs.
pub fn run(args: &Args) -> Result<ExitCode> {
    let mut read = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let input = inputs::read(path)?;
        tracing::debug!(
            "analyze: {}: {} run(s), {} process(es)",
            path.display(),
            input.runs.len(),
            input.runs.iter().map(|r| r.processes.len()).sum::<usize>()
        );
        read.push(input);
    }
    let report = build(&read, &mut counters::Knowledge::load());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report::render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The report over `inputs`.
fn build(inputs: &[inputs::Input], know: &mut counters::Knowledge) -> Report {
    let mut out = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut processes = Vec::new();
        for run in &input.runs {
            for p in &run.processes {
                let mut missing = missing(p);
                missing.extend(p.missing.iter().cloned());
                processes.push(ProcessReport {
                    label: p.label.clone(),
                    run: run.label.clone(),
                    pid: p.pid,
                    counts: Counts {
                        calls: p.calls.len(),
                        dispatches: p.dispatches.len(),
                        copies: p.copies.len(),
                        markers: p.markers.len(),
                        counter_values: p.counters.values.len(),
                    },
                    timeline: timeline::analyse(p),
                    summary: summary::analyse(p),
                    missing,
                    notes: p.notes.clone(),
                });
            }
        }
        out.push(InputReport {
            path: input.path.display().to_string(),
            kind: input.kind,
            missing: input.missing.clone(),
            notes: input.notes.clone(),
            processes,
        });
    }
    let runs: Vec<Vec<&Process>> = inputs
        .iter()
        .flat_map(|i| &i.runs)
        .map(|r| r.processes.iter().collect())
        .collect();
    Report {
        schema: report::SCHEMA,
        inputs: out,
        counters: counters::analyse(&runs, know),
    }
}

/// What a process's records cannot show, from what they hold.
fn missing(p: &Process) -> Vec<String> {
    let mut out = Vec::new();
    let hip = p.calls.iter().any(|c| c.api == Api::Hip);
    let any_call = p.calls.iter().any(|c| c.api != Api::Marker);
    let device = !p.dispatches.is_empty() || !p.copies.is_empty();
    if p.calls.is_empty() && !device && p.markers.is_empty() && p.counters.values.is_empty() {
        out.push("no records at all".into());
        return out;
    }
    if device && !any_call {
        out.push(
            "no HIP or HSA API calls: the dispatches' launches and the copies' calls are \
             unknown, so containment cannot be checked (trace the API too: --hip-trace or \
             --hsa-trace, or --sys-trace)"
                .into(),
        );
    }
    if any_call && !device {
        out.push(
            "no kernel dispatches or memory copies: nothing on the GPU timeline to check \
             (--kernel-trace, --memory-copy-trace)"
                .into(),
        );
    }
    if hip && !p.dispatches.is_empty() && p.copies.is_empty() {
        out.push(
            "no memory copies: a hipMemcpy's direction is then unknown, so only synchronize \
             calls and *DtoH copies bound the dispatches (--memory-copy-trace)"
                .into(),
        );
    }
    let nameless = p.dispatches.iter().filter(|d| d.kernel.is_empty()).count();
    if nameless > 0 {
        out.push(format!(
            "{nameless} dispatch(es) have no kernel name (the kernel symbol was not recorded)"
        ));
    }
    out
}
