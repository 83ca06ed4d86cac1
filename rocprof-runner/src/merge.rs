//! `rocprof convert -i INPUT… [-f FORMATS] [-d DIR] [-o NAME]` and its alias `rocprof merge
//! INPUT…`: record directories (kept runs) and rocpd databases (ours, and upstream's schema-3
//! files) into any format, several inputs — ranks, processes, runs — into one output in which
//! each process stays distinct (its own pid, process track, guid). The inputs are only read.
//!
//! CSV stays per process (rocprofv3's layout has no process column in most files), each
//! process under the prefix, with `_<pid>` added when several share it; JSON, Perfetto and
//! rocpd get one file holding every process.

use crate::convert::{counter_values, order_processes, unique_prefix, write_failure};
use crate::error::Error;
use crate::notice::{EndNotice, OutputNotice, Report};
use crate::outputs::{self, Placement};
use crate::placeholders::Context;
use crate::plan::{Launch, OutputFormat, OutputSettings};
use crate::record_dir::RecordDir;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::rename::rename_kernels;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::ProcessTrace;
use trace_records::agents::AgentLabels;

/// The file name `-o` defaults to for a merge.
pub const DEFAULT_MERGED: &str = "merged";

/// One input, read.
struct Input {
    traces: Vec<ProcessTrace>,
    launch: Option<Launch>,
}

/// Reads a record directory (without removing it): its logs, with the counters of its run
/// evaluated.
fn read_record_dir(path: &Path, report: &mut dyn Report) -> Result<Input, Error> {
    let (dir, manifest) = RecordDir::open(path)?;
    let mut traces = crate::convert::read_traces(&dir, report);
    if let Some(plan) = &manifest.counters {
        for t in traces.iter_mut() {
            rename_kernels(
                t,
                !manifest.outputs.mangled_kernels,
                manifest.outputs.truncate_kernels,
            );
        }
        let _ = counter_values(&mut traces, &[], plan, report);
    }
    Ok(Input {
        traces,
        launch: Some(manifest.launch),
    })
}

fn read_input(path: &Path, report: &mut dyn Report) -> Result<Input, Error> {
    if path.is_dir() {
        return read_record_dir(path, report);
    }
    if path.extension().is_some_and(|e| e == "db") {
        let traces = trace_export::rocpd_read::read(path).map_err(|source| Error::Rocpd {
            path: path.to_owned(),
            source,
        })?;
        return Ok(Input {
            traces,
            launch: None,
        });
    }
    Err(Error::MergeInputUnknown(path.to_owned()))
}

/// Merges `inputs` (relative to `cwd`) into the outputs `settings` ask for.
pub fn merge(
    inputs: &[PathBuf],
    cwd: &Path,
    settings: &OutputSettings,
    report: &mut dyn Report,
) -> Result<ExitCode, Error> {
    let mut traces: Vec<ProcessTrace> = Vec::new();
    let mut launch: Option<Launch> = None;
    for input in inputs {
        let read = read_input(&cwd.join(input), report)?;
        report.notice(
            EndNotice::MergeInput {
                input: input.clone(),
                processes: read.traces.len(),
            }
            .into(),
        );
        traces.extend(read.traces);
        if launch.is_none() {
            launch = read.launch;
        }
    }
    if traces.is_empty() {
        return Err(Error::MergeNothing);
    }
    order_processes(&mut traces);
    // Kernel names as the merge's -M/-T ask (a database's are demangled already, which the
    // demangler leaves as they are).
    for t in traces.iter_mut() {
        rename_kernels(t, !settings.mangled_kernels, settings.truncate_kernels);
        trace_export::rename::apply(t, settings.kernel_rename);
    }
    let mut seen = HashSet::new();
    for t in &traces {
        if !seen.insert(t.pid) {
            report.notice(EndNotice::MergeSamePid { pid: t.pid }.into());
        }
    }
    let launch = launch.unwrap_or_else(|| Launch {
        rocprof_pid: std::process::id(),
        hostname: crate::launch::hostname(),
        cwd: cwd.display().to_string(),
        ..Launch::default()
    });
    outputs::validate(settings, &launch)?;
    let run = RunInfo {
        hostname: launch.hostname.clone(),
        command: launch.argv.clone(),
    };
    let labels: Vec<AgentLabels> = traces
        .iter()
        .map(|t| AgentLabels::new(t.docs.agents().to_vec(), settings.agent_index.index()))
        .collect();
    let mut placement = Placement::new(std::time::SystemTime::now());
    let mut written = Vec::new();
    let mut failed = false;

    // CSV: per process.
    if settings.formats.contains(&OutputFormat::Csv) {
        let csv = CsvSelection {
            hip: true,
            hsa: true,
            kernels: true,
            copies: true,
            markers: true,
            allocations: true,
            scratch: true,
            counters: true,
            stats: settings.stats,
        };
        let mut used = HashSet::new();
        for (t, l) in traces.iter().zip(&labels) {
            let ctx = Context::new(&launch, t.pid, t.ppid);
            let prefix = unique_prefix(
                outputs::prefix_for(settings, &ctx)?,
                t.pid,
                &mut used,
                report,
            );
            let staged = placement.stage(&prefix).and_then(|staged| {
                write_csv(&staged, t, l, csv).map_err(|e| write_failure(e, &prefix))
            });
            match staged.and_then(|files| placement.commit(&files)) {
                Ok(done) => written.extend(done),
                Err(e) => {
                    report.notice(OutputNotice::failed(&e));
                    failed = true;
                }
            }
        }
    }
    // The one-file formats: every process in one file.
    let first = &traces[0];
    let ctx = Context::new(&launch, first.pid, first.ppid);
    let prefix = outputs::prefix_for(settings, &ctx)?;
    let json = crate::convert::json_options(
        settings,
        &crate::output_config::output_config(settings, &ctx),
    );
    let views: Vec<ProcessView<'_>> = traces
        .iter()
        .zip(&labels)
        .map(|(t, l)| ProcessView::new(t, l))
        .collect();
    for format in &settings.formats {
        let Some((name, ext)) = format.results_file() else {
            continue;
        };
        let staged = placement.stage(&prefix).and_then(|staged| {
            let path = staged.file(name, ext);
            if *format == OutputFormat::Otf2 {
                return crate::convert::write_otf2(&path, &run, &views, &prefix);
            }
            match format {
                OutputFormat::Json => trace_export::json::write_json(&path, &run, &views, &json),
                OutputFormat::Pftrace => {
                    let o = crate::convert::perfetto_options(settings);
                    trace_export::perfetto::write_perfetto(&path, &run, &views, &o)
                        .map(|w| crate::convert::perfetto_notes(&w, &path, &o, report))
                }
                OutputFormat::Rocpd => trace_export::rocpd::write_rocpd(&path, &run, &views),
                OutputFormat::Csv | OutputFormat::Otf2 => Ok(()),
            }
            .map_err(|e| write_failure(e, &prefix))?;
            Ok(vec![path])
        });
        match staged.and_then(|files| placement.commit(&files)) {
            Ok(done) => written.extend(done),
            Err(e) => {
                report.notice(OutputNotice::failed(&e));
                failed = true;
            }
        }
    }
    let _ = placement.finish();
    report.notice(
        EndNotice::Merged {
            inputs: inputs.len(),
            processes: traces.len(),
            files: written.len(),
            dir: written.first().and_then(|f| f.parent()).map(Path::to_owned),
        }
        .into(),
    );
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
