//! From record logs to rocprofv3's files: the one conversion run mode ends with, and
//! `rocprof convert <record-dir>…`, which finishes the job for a record directory a run kept.
//!
//! [`convert`] reads every log of a record directory, writes each process's files (staged,
//! then renamed into place: [`crate::outputs::Placement`]), prints the `-S` tables, the
//! explanations of anything missing and the after-run report, then removes the record
//! directory — or keeps it, and says how to finish, after a failure: a log that is unreadable
//! or damaged, records lost, an output that could not be written, or a signal.

use crate::notice::{
    CounterNotice, EndNotice, Finding, OutputNotice, Progress, RecordNotice, Report, SeenKernel,
    Stream, SummaryText, Task,
};
use crate::outputs::{self, Placement, Replacement, WriteFailure};
use crate::placeholders::Context;
use crate::plan::{OutputFormat, OutputSettings};
use crate::process::{Signals, Status, signal_exit_code};
use crate::record_dir::{RecordDir, RunManifest};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::view::{ProcessView, RunInfo};
use trace_records::ProcessTrace;
use trace_records::agents::AgentLabels;

/// One conversion.
#[derive(Debug)]
pub struct Job {
    /// The record directory (removed after success, kept after a failure).
    pub dir: RecordDir,
    /// The run, with the output settings to use.
    pub manifest: RunManifest,
    /// When this run (or conversion) started, on the file system's clock.
    pub since: SystemTime,
    /// The traces of the other `--pmc-repeat` runs (whose files are not written), for the
    /// counter estimates.
    pub other_runs: Vec<Vec<ProcessTrace>>,
}

/// The traces of a record directory's logs, in the order the directory lists them (damaged
/// or unreadable logs said on stderr), for a run whose files are not written.
pub fn read_traces(dir: &RecordDir, report: &mut dyn Report) -> Vec<ProcessTrace> {
    let (logs, _) = dir.logs();
    let mut traces = Vec::new();
    for log in &logs {
        match ProcessTrace::read(log) {
            Ok(t) => traces.push(t),
            Err(e) => report.notice(
                RecordNotice::LogUnreadable {
                    reason: e.to_string(),
                }
                .into(),
            ),
        }
    }
    order_processes(&mut traces);
    traces
}

/// What the JSON writer is told of the run: its output configuration (`metadata.config`) and
/// whether the `summary` section holds the statistics (`--stats` or a summary, as upstream).
pub(crate) fn json_options(
    settings: &OutputSettings,
    config: &trace_export::json::OutputConfig,
) -> trace_export::json::JsonOptions {
    trace_export::json::JsonOptions {
        config: Some(config.clone()),
        summary: settings.stats || settings.summary_wanted(),
    }
}

/// Processes in the order they started (so the runs of a repeated application match up).
pub fn order_processes(traces: &mut [ProcessTrace]) {
    traces.sort_by_key(|t| (t.created_ns, t.image));
}

/// What a conversion did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Processes whose logs were read.
    pub processes: usize,
    /// Files renamed into place.
    pub written: Vec<PathBuf>,
    /// An output could not be written.
    pub write_failed: bool,
    /// The signal that stopped the conversion.
    pub interrupted: Option<i32>,
}

impl Outcome {
    /// The directory the first file went to, for the summary line.
    pub fn dirs(&self) -> Vec<&Path> {
        let mut dirs: Vec<&Path> = Vec::new();
        for d in self.written.iter().filter_map(|p| p.parent()) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        dirs
    }
}

/// Converts `job`'s record directory (see the module documentation).
pub fn convert(job: Job, signals: &Signals, report: &mut dyn Report) -> Outcome {
    let Job {
        dir,
        manifest,
        since,
        other_runs,
    } = job;
    let settings = &manifest.outputs;
    let sel = manifest.selection;
    let status = manifest.status.unwrap_or_default();
    let mut out = Outcome::default();
    let mut lost = false;

    let (logs, skipped) = dir.logs();
    for s in &skipped {
        report.notice(
            RecordNotice::SkippedEntry {
                path: s.path.clone(),
                what: s.kind.to_owned(),
            }
            .into(),
        );
    }
    let mut traces: Vec<ProcessTrace> = Vec::new();
    // Progress: each log read, then each process written.
    for (k, log) in logs.iter().enumerate() {
        if signals.interrupted().is_some() {
            break;
        }
        let item = format!(
            "reading {}",
            log.file_name().unwrap_or_default().to_string_lossy()
        );
        report.progress(Progress::new(Task::Convert, k, 2 * logs.len(), item));
        match ProcessTrace::read(log) {
            Ok(t) => {
                for d in &t.damage {
                    report.notice(
                        RecordNotice::LogDamaged {
                            log: log.clone(),
                            offset: d.offset,
                            reason: d.reason.to_string(),
                        }
                        .into(),
                    );
                }
                lost |= !t.damage.is_empty();
                traces.push(t);
            }
            Err(e) => {
                report.notice(
                    RecordNotice::LogUnreadable {
                        reason: e.to_string(),
                    }
                    .into(),
                );
                lost = true;
            }
        }
    }
    out.processes = traces.len();
    lost |= crate::findings::total_lost(&traces) > 0;
    order_processes(&mut traces);
    // Before the kernels are renamed: the filters are searched in the demangled names.
    let nothing_selected = match manifest.counters {
        Some(_) => nothing_selected(
            &traces,
            manifest.kernel_include_regex.as_deref(),
            manifest.kernel_exclude_regex.as_deref(),
        ),
        None => None,
    };
    let mut other_runs = other_runs;
    for t in traces.iter_mut().chain(other_runs.iter_mut().flatten()) {
        trace_export::rename::rename_kernels(
            t,
            !settings.mangled_kernels,
            settings.truncate_kernels,
        );
        trace_export::rename::apply(t, settings.kernel_rename);
    }
    let hygiene = match &manifest.counters {
        Some(plan) => counter_values(&mut traces, &other_runs, plan, report),
        None => Vec::new(),
    };
    if let Some(n) = nothing_selected {
        report.notice(n.into());
    }
    if manifest.thread_trace.is_some()
        && let Some(n) = trace_packets_not_run(&traces)
    {
        report.notice(n.into());
    }

    let csv = CsvSelection {
        hip: sel.hip_runtime || sel.hip_compiler,
        hsa: sel.hsa_core || sel.hsa_amd || sel.hsa_image || sel.hsa_finalizer,
        kernels: sel.kernels,
        copies: sel.copies,
        markers: sel.markers,
        allocations: sel.memory_allocations,
        scratch: sel.scratch_memory,
        counters: manifest.counters.is_some(),
        stats: settings.stats,
    };
    let run = RunInfo {
        hostname: manifest.launch.hostname.clone(),
        command: manifest.launch.argv.clone(),
    };
    let mut placement = Placement::new(since);
    let mut prefixes_used = HashSet::new();
    let summary_dest = crate::summary::Destination::of(&settings.summary_options);
    let mut said_summary: HashSet<String> = HashSet::new();
    let perfetto = perfetto_options(settings);
    // Files left out by --minimum-output-data, with their sizes.
    let mut too_small: Vec<(PathBuf, u64)> = Vec::new();
    for (index, t) in traces.iter().enumerate() {
        if out.interrupted.is_none() {
            out.interrupted = signals.interrupted();
        }
        if out.interrupted.is_some() || out.write_failed {
            break;
        }
        let ctx = Context::new(&manifest.launch, t.pid, t.ppid);
        let prefix = match outputs::prefix_for(settings, &ctx) {
            Ok(p) => unique_prefix(p, t.pid, &mut prefixes_used, report),
            Err(e) => {
                report.notice(OutputNotice::failed(&e));
                out.write_failed = true;
                break;
            }
        };
        let labels = AgentLabels::new(t.docs.agents().to_vec(), settings.agent_index.index());
        let (summary_text, summary_warnings) = if settings.summary_wanted() {
            crate::summary::render(t, settings, summary_dest.indent())
        } else {
            Default::default()
        };
        for w in summary_warnings {
            if said_summary.insert(w.clone()) {
                report.notice(OutputNotice::Summary { warning: w }.into());
            }
        }
        let rows = hygiene.get(index).map_or(&[][..], Vec::as_slice);
        let output_config = crate::output_config::output_config(settings, &ctx);
        let json = json_options(settings, &output_config);
        let mut decoded: Vec<PathBuf> = Vec::new();
        let steps = (logs.len() + index, logs.len() + traces.len());
        let step = |report: &mut dyn Report, what: &str| {
            let item = format!("process {}: {what}", t.pid);
            report.progress(Progress::new(Task::Convert, steps.0, steps.1, item));
        };
        let staged = placement.stage(&prefix).and_then(|staged| {
            let mut files = Vec::new();
            if settings.formats.contains(&OutputFormat::Csv) {
                step(report, "csv");
                files =
                    write_csv(&staged, t, &labels, csv).map_err(|e| write_failure(e, &prefix))?;
            }
            // The view is built only for the one-file formats (it costs memory per record).
            let one_file = settings.formats.iter().any(|f| f.results_file().is_some());
            let view = one_file.then(|| ProcessView::new(t, &labels));
            for format in &settings.formats {
                let (Some((name, ext)), Some(view)) = (format.results_file(), view.as_ref()) else {
                    continue;
                };
                let path = staged.file(name, ext);
                step(report, ext);
                let views = std::slice::from_ref(view);
                if *format == OutputFormat::Otf2 {
                    files.extend(write_otf2(&path, &run, views, &prefix)?);
                    continue;
                }
                match format {
                    OutputFormat::Json => trace_export::json::write_json(&path, &run, views, &json),
                    OutputFormat::Pftrace => {
                        trace_export::perfetto::write_perfetto(&path, &run, views, &perfetto)
                            .map(|w| perfetto_notes(&w, &path, &perfetto, report))
                    }
                    OutputFormat::Rocpd => trace_export::rocpd::write_rocpd(&path, &run, views),
                    OutputFormat::Csv | OutputFormat::Otf2 => Ok(()),
                }
                .map_err(|e| write_failure(e, &prefix))?;
                files.push(path);
            }
            if let Some(plan) = &manifest.thread_trace {
                // Where the staged prefix's files land (the dispatch directories go there
                // directly: directories are not staged).
                let final_dir = Placement::final_path(&staged.0)
                    .parent()
                    .map(Path::to_owned)
                    .unwrap_or_default();
                let w = crate::thread_trace::write_outputs(
                    t,
                    plan,
                    dir.path(),
                    &staged,
                    &final_dir,
                    report,
                );
                for line in &w.warnings {
                    report.notice(
                        OutputNotice::ThreadTrace {
                            warning: line.clone(),
                        }
                        .into(),
                    );
                }
                files.extend(w.staged);
                decoded.extend(w.decoded);
            }
            if let crate::summary::Destination::File(name) = &summary_dest
                && !summary_text.is_empty()
            {
                let path = staged.file(name, "txt");
                trace_export::output::write_whole(&path, |out| {
                    std::io::Write::write_all(out, summary_text.as_bytes())
                })
                .map_err(|e| write_failure(e, &prefix))?;
                files.push(path);
            }
            let mut config = None;
            if settings.output_config {
                let path = staged.file("config", "json");
                let doc = crate::output_config::document(&manifest, t, output_config.clone());
                trace_export::output::write_whole(&path, |out| {
                    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
                    std::io::Write::write_all(out, b"\n")
                })
                .map_err(|e| write_failure(e, &prefix))?;
                config = Some(path.clone());
                files.push(path);
            }
            if manifest.counters.is_some() {
                let path = staged.file("counter_hygiene", "csv");
                trace_export::output::write_whole(&path, |out| {
                    pmc_dxg::hygiene::write_csv(out, rows)
                })
                .map_err(|e| write_failure(e, &prefix))?;
                files.push(path);
            }
            Ok((files, config))
        });
        match staged {
            Ok((mut files, config)) => {
                // --minimum-output-data: smaller files are left out (the asked-for config
                // file never is, nor the parts of an OTF2 archive, which is whole or absent:
                // its anchor and definition files are small whatever the trace holds).
                files.retain(|f| {
                    let size = match std::fs::metadata(f) {
                        Ok(m) if m.is_file() && Some(f) != config.as_ref() && !is_otf2_part(f) => {
                            m.len()
                        }
                        _ => return true,
                    };
                    let small = size < settings.minimum_output_bytes;
                    if small {
                        too_small.push((Placement::final_path(f), size));
                        let _ = std::fs::remove_file(f);
                    }
                    !small
                });
                if let Some(s) = signals.interrupted() {
                    placement.discard(&files);
                    out.interrupted = Some(s);
                    break;
                }
                match placement.commit(&files) {
                    Ok(done) => {
                        out.written.extend(done);
                        out.written.append(&mut decoded);
                    }
                    Err(e) => {
                        report.notice(OutputNotice::failed(&e));
                        out.write_failed = true;
                    }
                }
            }
            Err(e) => {
                report.notice(OutputNotice::failed(&e));
                out.write_failed = true;
            }
        }
        if !out.write_failed && !summary_text.is_empty() {
            let stream = match summary_dest {
                crate::summary::Destination::Stdout => Some(Stream::Stdout),
                crate::summary::Destination::Stderr => Some(Stream::Stderr),
                crate::summary::Destination::File(_) => None,
            };
            if let Some(stream) = stream {
                report.notice(
                    SummaryText {
                        pid: (traces.len() > 1).then_some(t.pid),
                        tables: summary_text,
                        stream,
                    }
                    .into(),
                );
            }
        }
    }
    let steps = logs.len() + traces.len();
    report.progress(Progress::new(Task::Convert, steps, steps, ""));
    if !too_small.is_empty() {
        report.notice(
            OutputNotice::BelowMinimum {
                minimum: settings.minimum_output_bytes,
                files: too_small,
            }
            .into(),
        );
    }
    for r in placement.finish() {
        report.notice(
            match r {
                Replacement::ByOther(path) => OutputNotice::ReplacedByOther { path },
                Replacement::OfOther(path) => OutputNotice::ReplacedOther { path },
            }
            .into(),
        );
    }
    if out.interrupted.is_none() {
        let untraced = crate::explain::untraced_pids(dir.path());
        for p in crate::explain::explain(&sel, &status, &traces, &logs, &untraced) {
            report.notice(Finding::Explanation { text: p }.into());
        }
    }
    for (load, pids) in crate::findings::double_loads(&traces) {
        report.notice(Finding::DoubleLoad { load, pids }.into());
    }
    for text in crate::findings::after_run(&traces) {
        report.notice(Finding::AfterRun { text }.into());
    }
    for text in crate::domains::after_run(&manifest.foreign_domains, &traces) {
        report.notice(Finding::Domain { text }.into());
    }
    let all_rows: Vec<pmc_dxg::hygiene::HygieneRow> = hygiene.into_iter().flatten().collect();
    for note in pmc_dxg::hygiene::notes(&all_rows) {
        report.notice(CounterNotice::Hygiene { note }.into());
    }
    let burst = all_rows.iter().any(|r| {
        r.estimate
            .discarded
            .iter()
            .any(|(_, d)| *d == pmc_dxg::hygiene::Discard::GrbmZero)
    });
    if burst {
        report.notice(CounterNotice::GrbmBurst.into());
    }
    if let Some(signal) = out.interrupted {
        report.notice(EndNotice::Interrupted { signal }.into());
    }
    if out.interrupted.is_some() || out.write_failed {
        report.notice(
            EndNotice::KeptToFinish {
                dir: dir.path().to_owned(),
            }
            .into(),
        );
    } else if lost {
        report.notice(
            EndNotice::KeptAfterLosses {
                dir: dir.path().to_owned(),
            }
            .into(),
        );
    } else {
        let path = dir.path().to_owned();
        if let Err(e) = dir.remove() {
            report.notice(
                EndNotice::RemoveFailed {
                    dir: path,
                    reason: e.to_string(),
                }
                .into(),
            );
        }
    }
    out
}

/// [`CounterNotice::NothingSelected`] when a kernel filter is why nothing was counted: no
/// process recorded a counter read-back (one per counted dispatch), some dispatches ran (every
/// dispatch is recorded, counted or not), and the filters, searched in the kernels' demangled
/// names as the tool searches them, select none of those kernels. When they do select some,
/// something else (iteration ranges, regions, collection periods) left them uncounted, and
/// this says nothing.
pub fn nothing_selected(
    traces: &[ProcessTrace],
    include: Option<&str>,
    exclude: Option<&str>,
) -> Option<CounterNotice> {
    // Empty patterns select everything (as the tool reads them).
    let include = include.filter(|r| !r.is_empty());
    let exclude = exclude.filter(|r| !r.is_empty());
    if (include.is_none() && exclude.is_none())
        || traces.iter().any(|t| !t.counter_samples.is_empty())
    {
        return None;
    }
    let mut kernels: Vec<SeenKernel> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for t in traces {
        // Dispatches per kernel first (in first-dispatch order), so each name is demangled once.
        let mut per_kernel: Vec<(u64, usize)> = Vec::new();
        let mut at: HashMap<u64, usize> = HashMap::new();
        for d in &t.dispatches {
            match at.get(&d.kernel_id) {
                Some(&k) => per_kernel[k].1 += 1,
                None => {
                    at.insert(d.kernel_id, per_kernel.len());
                    per_kernel.push((d.kernel_id, 1));
                }
            }
        }
        let symbols = t.symbols_by_id();
        for (kernel_id, n) in per_kernel {
            let name = symbols.get(&kernel_id).map_or("", |s| t.string(s.name));
            let shown = trace_export::rename::demangled(name);
            match index.get(&shown) {
                Some(&k) => kernels[k].dispatches += n,
                None => {
                    index.insert(shown.clone(), kernels.len());
                    kernels.push(SeenKernel {
                        name: shown,
                        dispatches: n,
                    });
                }
            }
        }
    }
    let dispatches: usize = kernels.iter().map(|k| k.dispatches).sum();
    if dispatches == 0 {
        return None;
    }
    // The CLI checked both with the tool's regex-lite and with regex: they compile.
    let compile = |re: Option<&str>| re.and_then(|r| regex::Regex::new(r).ok());
    let (inc, exc) = (compile(include), compile(exclude));
    let included: Vec<&SeenKernel> = kernels
        .iter()
        .filter(|k| inc.as_ref().is_none_or(|re| re.is_match(&k.name)))
        .collect();
    if included
        .iter()
        .any(|k| !exc.as_ref().is_some_and(|re| re.is_match(&k.name)))
    {
        return None;
    }
    Some(CounterNotice::NothingSelected {
        include: include.map(str::to_owned),
        exclude: exclude.map(str::to_owned),
        dispatches,
        included: included.iter().map(|k| k.dispatches).sum(),
        kernels,
    })
}

/// Evaluates the counter samples of every process (estimated over the other runs' matching
/// processes, by start order), fills each trace's counter records and returns each process's
/// hygiene rows. Problems are said on stderr; nothing here fails the run.
/// The traced dispatches whose thread-trace packets did not run (their begin packet's proof
/// word is missing), with the gate explanation's value; `None` when every one ran (an empty
/// trace whose word is there ran, and gets no gate explanation) or the log has no proof.
pub fn trace_packets_not_run(traces: &[ProcessTrace]) -> Option<OutputNotice> {
    let mut traced = 0;
    let mut not_run = Vec::new();
    for t in traces {
        for d in &t.docs.thread_traces {
            traced += 1;
            if d.packets_ran == Some(false) {
                not_run.push((t.pid, d.dispatch_id));
            }
        }
    }
    if not_run.is_empty() {
        return None;
    }
    Some(OutputNotice::TracePacketsNotRun {
        not_run,
        traced,
        vendor_packet: vendor_packet(traces.iter()),
    })
}

/// `WSLKMT_VENDOR_PACKET` as the application saw it: the first process that recorded it
/// says (one that did not says nothing).
fn vendor_packet<'a>(
    traces: impl Iterator<Item = &'a ProcessTrace>,
) -> trace_records::docs::EnvValue {
    traces
        .filter_map(|t| t.docs.discovery.as_ref())
        .map(|d| d.vendor_packet.clone())
        .find(|v| *v != trace_records::docs::EnvValue::NotRecorded)
        .unwrap_or_default()
}

pub(crate) fn counter_values(
    traces: &mut [ProcessTrace],
    other_runs: &[Vec<ProcessTrace>],
    plan: &pmc_dxg::collection::CounterPlan,
    report: &mut dyn Report,
) -> Vec<Vec<pmc_dxg::hygiene::HygieneRow>> {
    let defs = match pmc_dxg::collection::definitions_for(plan) {
        Ok(d) => d,
        Err(e) => {
            report.notice(
                CounterNotice::NoValues {
                    reason: format!("{e:#}"),
                }
                .into(),
            );
            return Vec::new();
        }
    };
    let evals: Vec<pmc_dxg::collection::Evaluation> = traces
        .iter()
        .map(|t| pmc_dxg::collection::evaluate(t, plan, &defs))
        .collect();
    let others: Vec<Vec<pmc_dxg::collection::Evaluation>> = other_runs
        .iter()
        .map(|run| {
            run.iter()
                .map(|t| pmc_dxg::collection::evaluate(t, plan, &defs))
                .collect()
        })
        .collect();
    let mut said = HashSet::new();
    for e in evals.iter().chain(others.iter().flatten()) {
        for p in &e.problems {
            let problem = p.to_string();
            if said.insert(problem.clone()) {
                report.notice(CounterNotice::Evaluation { problem }.into());
            }
        }
    }
    for (t, e) in traces.iter().zip(&evals) {
        if !e.overlapped.is_empty() {
            report.notice(
                CounterNotice::Overlapped {
                    pid: t.pid,
                    ids: e.overlapped.clone(),
                }
                .into(),
            );
        }
    }
    let every: Vec<&pmc_dxg::collection::Evaluation> =
        evals.iter().chain(others.iter().flatten()).collect();
    if pmc_dxg::collection::all_zero(&every) {
        // The value the application saw.
        let vendor_packet = vendor_packet(traces.iter().chain(other_runs.iter().flatten()));
        report.notice(CounterNotice::PacketsNotRun { vendor_packet }.into());
        traces.iter_mut().for_each(|t| t.counters.clear());
        return Vec::new();
    }
    let mut rows = Vec::with_capacity(traces.len());
    for (k, (t, e)) in traces.iter_mut().zip(&evals).enumerate() {
        let matching: Vec<&pmc_dxg::collection::Evaluation> =
            others.iter().filter_map(|run| run.get(k)).collect();
        let r = pmc_dxg::collection::estimate(e, &matching);
        pmc_dxg::collection::fill_records(t, e, &r);
        rows.push(r);
    }
    rows
}

/// The Perfetto writer's options from the run's settings.
pub fn perfetto_options(s: &OutputSettings) -> trace_export::perfetto::Options {
    use trace_export::perfetto::{FillPolicy, Options};
    Options {
        group_by_queue: s.perfetto.group_by_queue,
        buffer_bytes: s.perfetto.buffer_size_kb.map(|kb| kb.saturating_mul(1024)),
        fill_policy: match s.perfetto.fill_policy {
            crate::plan::FillPolicy::Discard => FillPolicy::Discard,
            crate::plan::FillPolicy::RingBuffer => FillPolicy::RingBuffer,
        },
    }
}

/// Says on stderr what `--perfetto-buffer-size` left out of a trace.
pub fn perfetto_notes(
    w: &trace_export::perfetto::Written,
    path: &Path,
    o: &trace_export::perfetto::Options,
    report: &mut dyn Report,
) {
    if w.dropped_events > 0 {
        let which = match o.fill_policy {
            trace_export::perfetto::FillPolicy::Discard => "the latest",
            trace_export::perfetto::FillPolicy::RingBuffer => "the earliest",
        };
        report.notice(
            OutputNotice::PerfettoBufferFull {
                path: Placement::final_path(path),
                limit_kb: o.buffer_bytes.unwrap_or(0) / 1024,
                which,
                dropped_events: w.dropped_events,
                dropped_slices: w.dropped_slices,
                dropped_counters: w.dropped_counters,
                bytes: w.bytes,
                full_bytes: w.full_bytes,
            }
            .into(),
        );
    }
}

/// A write error of the CSV writer, named by the file's final path (`prefix`, the outputs'
/// final prefix, when the error names no file).
/// Whether `f` is the anchor or global-definition file of an OTF2 archive
/// (`<prefix>_results.otf2`, `<prefix>_results.def`).
fn is_otf2_part(f: &Path) -> bool {
    let name = f.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with("results.otf2") || name.ends_with("results.def")
}

/// Writes the OTF2 archive whose anchor file is `anchor` (`<prefix>_results.otf2`, staged);
/// returns its files and directory.
pub fn write_otf2(
    anchor: &Path,
    run: &RunInfo,
    views: &[ProcessView<'_>],
    prefix: &Path,
) -> Result<Vec<PathBuf>, WriteFailure> {
    let written = otf2_export::write_otf2(&anchor.with_extension(""), run, views);
    // The directory first and the anchor last: a reader never opens a new anchor whose
    // event files are not in place.
    written
        .map(|files| files.into_iter().rev().collect())
        .map_err(|e| match e {
            otf2_export::Error::Io { path, source } => WriteFailure {
                file: Placement::final_path(&path),
                source,
            },
            other => WriteFailure {
                file: prefix.to_owned(),
                source: std::io::Error::other(other.to_string()),
            },
        })
}

pub fn write_failure(e: trace_export::Error, prefix: &Path) -> WriteFailure {
    match e {
        trace_export::Error::Io { path, source } => WriteFailure {
            file: Placement::final_path(&path),
            source,
        },
        other => WriteFailure {
            file: prefix.to_owned(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// `prefix`, or `prefix_<pid>` (then `_<pid>_2`, …) when another process of the run already
/// writes under `prefix`.
pub fn unique_prefix(
    prefix: PathBuf,
    pid: u32,
    used: &mut HashSet<PathBuf>,
    report: &mut dyn Report,
) -> PathBuf {
    if used.insert(prefix.clone()) {
        return prefix;
    }
    let mut n = 1;
    loop {
        let mut p = prefix.clone().into_os_string();
        p.push(format!("_{pid}"));
        if n > 1 {
            p.push(format!("_{n}"));
        }
        let p = PathBuf::from(p);
        if used.insert(p.clone()) {
            report.notice(
                OutputNotice::SharedName {
                    name: prefix.clone(),
                    pid,
                    instead: p.clone(),
                }
                .into(),
            );
            return p;
        }
        n += 1;
    }
}

/// Converts the record directories of `jobs` (each with its run, output settings already
/// chosen) one after another, each summarised as it ends; stops at a signal (the rest are kept).
pub fn convert_all(
    jobs: Vec<(RecordDir, RunManifest)>,
    signals: &Signals,
    report: &mut dyn Report,
) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for (dir, manifest) in jobs {
        if let Some(s) = signals.interrupted() {
            report.notice(EndNotice::Interrupted { signal: s }.into());
            report.notice(
                EndNotice::KeptToFinish {
                    dir: dir.path().to_owned(),
                }
                .into(),
            );
            return signal_exit_code(s);
        }
        let path = dir.path().to_owned();
        let since = dir.fs_now();
        let outcome = convert(
            Job {
                dir,
                manifest,
                other_runs: Vec::new(),
                since,
            },
            signals,
            report,
        );
        report.notice(
            EndNotice::Converted {
                record_dir: path,
                processes: outcome.processes,
                files: outcome.written.len(),
                dirs: outcome.dirs().into_iter().map(Path::to_owned).collect(),
            }
            .into(),
        );
        if let Some(s) = outcome.interrupted {
            return signal_exit_code(s);
        }
        if outcome.write_failed {
            code = ExitCode::FAILURE;
        }
    }
    code
}

/// The exit code of a run: the application's (128 + signal if a signal killed it), 128 +
/// signal if one stopped the conversion, 1 if an output could not be written after an
/// application that succeeded.
pub fn run_exit_code(status: &Status, outcome: &Outcome) -> ExitCode {
    match outcome.interrupted {
        Some(s) => signal_exit_code(s),
        None if outcome.write_failed && status.success() => ExitCode::FAILURE,
        None => status.exit_code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_sharing_a_name_get_distinct_ones() {
        let mut used = HashSet::new();
        let p = PathBuf::from("/o/run");
        assert_eq!(unique_prefix(p.clone(), 7, &mut used, &mut Vec::new()), p);
        assert_eq!(
            unique_prefix(p.clone(), 7, &mut used, &mut Vec::new()),
            Path::new("/o/run_7")
        );
        // The same pid again (an exec'd image of the process).
        assert_eq!(
            unique_prefix(p.clone(), 7, &mut used, &mut Vec::new()),
            Path::new("/o/run_7_2")
        );
        assert_eq!(
            unique_prefix(p, 8, &mut used, &mut Vec::new()),
            Path::new("/o/run_8")
        );
    }

    /// A process that ran `kernels` (mangled names) `n` times each; `counted` dispatches have
    /// a counter read-back.
    fn ran(kernels: &[(&str, usize)], counted: usize) -> ProcessTrace {
        use trace_records::{CounterSample, CounterSampleHeader, KernelDispatchRecord};
        use trace_records::{KernelSymbolRecord, StringId};
        let mut t = ProcessTrace::default();
        let mut id = 0u64;
        for (k, (name, n)) in kernels.iter().enumerate() {
            let s = k as StringId + 1;
            t.strings.insert(s, (*name).to_owned());
            t.symbols.push(KernelSymbolRecord {
                kernel_id: k as u64 + 1,
                name: s,
                ..Default::default()
            });
            for _ in 0..*n {
                id += 1;
                t.dispatches.push(KernelDispatchRecord {
                    dispatch_id: id,
                    kernel_id: k as u64 + 1,
                    start: 100 * id,
                    end: 100 * id + 50,
                    ..Default::default()
                });
            }
        }
        for d in 1..=counted as u64 {
            t.counter_samples.push(CounterSample {
                header: CounterSampleHeader {
                    dispatch_id: d,
                    correlation_id: 0,
                    agent_node_id: 1,
                    group: 0,
                },
                output: Vec::new(),
            });
        }
        t
    }

    const SCALE: &str = "_Z5scalePfi";

    #[test]
    fn a_filter_that_selected_nothing_is_said_with_the_kernels_that_ran() {
        let traces = [ran(&[(SCALE, 3), ("__amd_rocclr_copyBuffer", 1)], 0)];
        let n = nothing_selected(&traces, Some("(a+)+$"), None).unwrap();
        let CounterNotice::NothingSelected {
            dispatches,
            included,
            kernels,
            ..
        } = &n
        else {
            panic!("{n:?}")
        };
        assert_eq!((*dispatches, *included), (4, 0));
        assert_eq!(
            kernels,
            &[
                SeenKernel {
                    name: "scale(float*, int)".into(),
                    dispatches: 3
                },
                SeenKernel {
                    name: "__amd_rocclr_copyBuffer".into(),
                    dispatches: 1
                }
            ]
        );
        assert_eq!(
            n.to_string(),
            "the kernel include filter '(a+)+$' matched none of the 4 dispatches that ran, so \
             no counter was collected and no counter values are written; the kernels that ran \
             (the filters are searched in these names): scale(float*, int) (3 dispatches), \
             __amd_rocclr_copyBuffer (1 dispatch)"
        );
        // Searched in the demangled name: `float` is in it, not in the mangled one.
        let n = nothing_selected(&traces, Some("scale"), Some("float|copy")).unwrap();
        assert!(
            n.to_string().starts_with(
                "the kernel include filter 'scale' matched 3 of the 4 dispatches that ran \
                 and the exclude filter 'float|copy' excluded every one of them"
            ),
            "{n}"
        );
        let n = nothing_selected(&traces, None, Some(".")).unwrap();
        assert!(
            n.to_string().starts_with(
                "the kernel exclude filter '.' excluded every one of the 4 dispatches that ran"
            ),
            "{n}"
        );
    }

    #[test]
    fn nothing_is_said_when_the_filters_are_not_why_nothing_was_counted() {
        let traces = [ran(&[(SCALE, 3)], 0)];
        // No filter; a filter that selects the kernel (iteration ranges or regions may have
        // left it uncounted); an empty pattern, which selects everything.
        assert_eq!(nothing_selected(&traces, None, None), None);
        assert_eq!(nothing_selected(&traces, Some("scale"), None), None);
        assert_eq!(nothing_selected(&traces, None, Some("copy")), None);
        assert_eq!(nothing_selected(&traces, Some(""), Some("")), None);
        // Something was counted, in one of the processes.
        let counted = [ran(&[(SCALE, 3)], 0), ran(&[(SCALE, 2)], 1)];
        assert_eq!(nothing_selected(&counted, Some("nomatch"), None), None);
        // Nothing ran.
        assert_eq!(
            nothing_selected(&[ran(&[], 0)], Some("nomatch"), None),
            None
        );
    }

    #[test]
    fn exit_codes_follow_the_application_then_the_conversion() {
        let ok = Status {
            code: Some(0),
            signal: None,
        };
        let failed = Outcome {
            write_failed: true,
            ..Default::default()
        };
        assert_eq!(run_exit_code(&ok, &Outcome::default()), ExitCode::SUCCESS);
        assert_eq!(run_exit_code(&ok, &failed), ExitCode::FAILURE);
        let three = Status {
            code: Some(3),
            signal: None,
        };
        assert_eq!(run_exit_code(&three, &failed), ExitCode::from(3));
        let stopped = Outcome {
            interrupted: Some(libc::SIGINT),
            ..Default::default()
        };
        assert_eq!(run_exit_code(&ok, &stopped), ExitCode::from(130));
    }
}
