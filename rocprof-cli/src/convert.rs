//! From record logs to rocprofv3's files: the one conversion run mode ends with, and
//! `rocprof convert <record-dir>…`, which finishes the job for a record directory a run kept.
//!
//! [`convert`] reads every log of a record directory, writes each process's files (staged,
//! then renamed into place: [`crate::outputs::Placement`]), prints the `-S` tables, the
//! explanations of anything missing and the after-run report, then removes the record
//! directory — or keeps it, and says how to finish, after a failure: a log that is unreadable
//! or damaged, records lost, an output that could not be written, or a signal.

use crate::messages;
use crate::outputs::{self, OutputFormat, OutputOptions, Placement, Replacement, WriteFailure};
use crate::placeholders::Context;
use crate::process::{Signals, Status, signal_exit_code};
use crate::record_dir::{RecordDir, RunManifest};
use anyhow::{Context as _, Result, anyhow};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::view::{ProcessView, RunInfo};
use trace_records::ProcessTrace;
use trace_records::agents::AgentLabels;

/// `rocprof convert`'s options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Record directories kept by earlier runs (rocprof prints the command when it keeps
    /// one). Give them before the options. Without any, the kept directories in TMPDIR are
    /// listed.
    #[arg(value_name = "RECORD_DIR")]
    pub dirs: Vec<PathBuf>,

    /// Merge instead: record directories and rocpd databases (`.db`) into one output per
    /// format (CSV per process), each process kept distinct; the inputs are only read.
    #[arg(short = 'i', long = "input", num_args = 1.., value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Options given here replace the run's own (kept in the directory's run.json).
    #[command(flatten)]
    pub output: OutputOptions,
}

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
pub fn read_traces(dir: &RecordDir) -> Vec<ProcessTrace> {
    let (logs, _) = dir.logs();
    let mut traces = Vec::new();
    for log in &logs {
        match ProcessTrace::read(log) {
            Ok(t) => traces.push(t),
            Err(e) => eprintln!("rocprof: warning: {}", messages::log_unreadable(&e)),
        }
    }
    order_processes(&mut traces);
    traces
}

/// Processes in the order they started (so the runs of a repeated application match up).
pub(crate) fn order_processes(traces: &mut [ProcessTrace]) {
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
pub fn convert(job: Job, signals: &Signals) -> Outcome {
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
        eprintln!(
            "rocprof: warning: {}",
            messages::skipped_entry(&s.path, s.kind)
        );
    }
    let mut traces: Vec<ProcessTrace> = Vec::new();
    for log in &logs {
        if signals.interrupted().is_some() {
            break;
        }
        match ProcessTrace::read(log) {
            Ok(t) => {
                for d in &t.damage {
                    eprintln!(
                        "rocprof: warning: {}",
                        messages::log_damaged(log, d.offset, &d.reason)
                    );
                }
                lost |= !t.damage.is_empty();
                traces.push(t);
            }
            Err(e) => {
                eprintln!("rocprof: warning: {}", messages::log_unreadable(&e));
                lost = true;
            }
        }
    }
    out.processes = traces.len();
    lost |= crate::report::total_lost(&traces) > 0;
    order_processes(&mut traces);
    let mut other_runs = other_runs;
    for t in traces.iter_mut().chain(other_runs.iter_mut().flatten()) {
        rename_kernels(t, !settings.mangled_kernels, settings.truncate_kernels);
        trace_export::rename::apply(t, settings.kernel_rename);
    }
    let hygiene = match &manifest.counters {
        Some(plan) => counter_values(&mut traces, &other_runs, plan),
        None => Vec::new(),
    };

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
            Ok(p) => unique_prefix(p, t.pid, &mut prefixes_used),
            Err(e) => {
                eprintln!("rocprof: error: {e}");
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
                eprintln!("rocprof: warning: {w}");
            }
        }
        let rows = hygiene.get(index).map_or(&[][..], Vec::as_slice);
        let mut decoded: Vec<PathBuf> = Vec::new();
        let staged = placement.stage(&prefix).and_then(|staged| {
            let mut files = Vec::new();
            if settings.formats.contains(&OutputFormat::Csv) {
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
                let views = std::slice::from_ref(view);
                match format {
                    OutputFormat::Json => trace_export::json::write(&path, &run, views),
                    OutputFormat::Pftrace => {
                        trace_export::perfetto::write_with(&path, &run, views, &perfetto)
                            .map(|w| perfetto_notes(&w, &path, &perfetto))
                    }
                    OutputFormat::Rocpd => trace_export::rocpd::write(&path, &run, views),
                    OutputFormat::Csv => Ok(()),
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
                let w = crate::att::write_outputs(t, plan, dir.path(), &staged, &final_dir);
                for line in &w.warnings {
                    eprintln!("rocprof: warning: {line}");
                }
                files.extend(w.staged);
                decoded.extend(w.decoded);
            }
            if let crate::summary::Destination::File(name) = &summary_dest
                && !summary_text.is_empty()
            {
                let path = staged.file(name, "txt");
                trace_export::csv::write_whole(&path, |out| {
                    std::io::Write::write_all(out, summary_text.as_bytes())
                })
                .map_err(|e| write_failure(e, &prefix))?;
                files.push(path);
            }
            let mut config = None;
            if settings.output_config {
                let path = staged.file("config", "json");
                let doc = crate::output_config::document(
                    &manifest,
                    t,
                    settings
                        .base
                        .join(ctx.expand(&settings.directory))
                        .display()
                        .to_string(),
                    ctx.expand(&settings.file),
                );
                trace_export::csv::write_whole(&path, |out| {
                    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
                    std::io::Write::write_all(out, b"\n")
                })
                .map_err(|e| write_failure(e, &prefix))?;
                config = Some(path.clone());
                files.push(path);
            }
            if manifest.counters.is_some() {
                let path = staged.file("counter_hygiene", "csv");
                trace_export::csv::write_whole(&path, |out| pmc_dxg::hygiene::write_csv(out, rows))
                    .map_err(|e| write_failure(e, &prefix))?;
                files.push(path);
            }
            Ok((files, config))
        });
        match staged {
            Ok((mut files, config)) => {
                // --minimum-output-data: smaller files are left out (the asked-for config
                // file never is).
                files.retain(|f| {
                    let size = match std::fs::metadata(f) {
                        Ok(m) if m.is_file() && Some(f) != config.as_ref() => m.len(),
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
                        eprintln!("rocprof: error: {e}");
                        out.write_failed = true;
                    }
                }
            }
            Err(e) => {
                eprintln!("rocprof: error: {e}");
                out.write_failed = true;
            }
        }
        if !out.write_failed && !summary_text.is_empty() {
            if traces.len() > 1 && !matches!(summary_dest, crate::summary::Destination::File(_)) {
                eprintln!("rocprof: summary of process {}:", t.pid);
            }
            match summary_dest {
                crate::summary::Destination::Stdout => print!("{summary_text}"),
                crate::summary::Destination::Stderr => eprint!("{summary_text}"),
                crate::summary::Destination::File(_) => {}
            }
        }
    }
    if !too_small.is_empty() {
        eprintln!(
            "rocprof: note: {}",
            messages::below_minimum_output(settings.minimum_output_bytes, &too_small)
        );
    }
    for r in placement.finish() {
        eprintln!(
            "rocprof: note: {}",
            match &r {
                Replacement::ByOther(p) => messages::replaced_by_other(p),
                Replacement::OfOther(p) => messages::replaced_other(p),
            }
        );
    }
    if out.interrupted.is_none() {
        let untraced = crate::explain::untraced_pids(dir.path());
        for p in crate::explain::explain(&sel, &status, &traces, &logs, &untraced) {
            eprintln!("rocprof: {p}");
        }
    }
    for line in crate::report::after_run(&traces) {
        eprintln!("rocprof: {line}");
    }
    for line in crate::domains::after_run(&manifest.foreign_domains, &traces) {
        eprintln!("rocprof: note: {line}");
    }
    let all_rows: Vec<pmc_dxg::hygiene::HygieneRow> = hygiene.into_iter().flatten().collect();
    for line in pmc_dxg::hygiene::summary(&all_rows) {
        eprintln!("rocprof: counters: {line}");
    }
    let burst = all_rows.iter().any(|r| {
        r.estimate
            .discarded
            .iter()
            .any(|(_, d)| *d == pmc_dxg::hygiene::Discard::GrbmZero)
    });
    if burst {
        eprintln!("rocprof: counters: {}", messages::grbm_burst_advice());
    }
    if let Some(s) = out.interrupted {
        eprintln!("rocprof: {}", messages::interrupted_conversion(s));
    }
    if out.interrupted.is_some() || out.write_failed {
        eprintln!("rocprof: {}", messages::kept_to_finish(dir.path()));
    } else if lost {
        eprintln!("rocprof: {}", messages::kept_after_losses(dir.path()));
    } else {
        let path = dir.path().to_owned();
        if let Err(e) = dir.remove() {
            eprintln!("rocprof: warning: {}", messages::remove_failed(&path, &e));
        }
    }
    out
}

/// Evaluates the counter samples of every process (estimated over the other runs' matching
/// processes, by start order), fills each trace's counter records and returns each process's
/// hygiene rows. Problems are said on stderr; nothing here fails the run.
pub(crate) fn counter_values(
    traces: &mut [ProcessTrace],
    other_runs: &[Vec<ProcessTrace>],
    plan: &crate::pmc::CounterPlan,
) -> Vec<Vec<pmc_dxg::hygiene::HygieneRow>> {
    let defs = match crate::pmc::definitions_for(plan) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rocprof: warning: no counter values: {e:#}");
            return Vec::new();
        }
    };
    let evals: Vec<crate::pmc::Evaluation> = traces
        .iter()
        .map(|t| crate::pmc::evaluate(t, plan, &defs))
        .collect();
    let others: Vec<Vec<crate::pmc::Evaluation>> = other_runs
        .iter()
        .map(|run| {
            run.iter()
                .map(|t| crate::pmc::evaluate(t, plan, &defs))
                .collect()
        })
        .collect();
    let mut said = HashSet::new();
    for e in evals.iter().chain(others.iter().flatten()) {
        for p in &e.problems {
            if said.insert(p.clone()) {
                eprintln!("rocprof: warning: {p}");
            }
        }
    }
    for (t, e) in traces.iter().zip(&evals) {
        if !e.overlapped.is_empty() {
            eprintln!(
                "rocprof: counters: warning (process {}): {}",
                t.pid,
                messages::counted_overlaps(&e.overlapped)
            );
        }
    }
    let every: Vec<&crate::pmc::Evaluation> = evals.iter().chain(others.iter().flatten()).collect();
    if crate::pmc::all_zero(&every) {
        let gate = std::env::var("WSLKMT_VENDOR_PACKET")
            .ok()
            .filter(|v| v != "1");
        eprintln!(
            "rocprof: warning: {}",
            messages::counters_all_zero(gate.as_deref())
        );
        traces.iter_mut().for_each(|t| t.counters.clear());
        return Vec::new();
    }
    let mut rows = Vec::with_capacity(traces.len());
    for (k, (t, e)) in traces.iter_mut().zip(&evals).enumerate() {
        let matching: Vec<&crate::pmc::Evaluation> =
            others.iter().filter_map(|run| run.get(k)).collect();
        let r = crate::pmc::estimate(e, &matching);
        crate::pmc::fill_records(t, e, &r);
        rows.push(r);
    }
    rows
}

/// The Perfetto writer's options from the run's settings.
pub(crate) fn perfetto_options(s: &outputs::OutputSettings) -> trace_export::perfetto::Options {
    use trace_export::perfetto::{FillPolicy, Options};
    Options {
        group_by_queue: s.perfetto.group_by_queue,
        buffer_bytes: s.perfetto.buffer_size_kb.map(|kb| kb.saturating_mul(1024)),
        fill_policy: match s.perfetto.fill_policy {
            outputs::FillPolicy::Discard => FillPolicy::Discard,
            outputs::FillPolicy::RingBuffer => FillPolicy::RingBuffer,
        },
    }
}

/// Says on stderr what `--perfetto-buffer-size` left out of a trace.
pub(crate) fn perfetto_notes(
    w: &trace_export::perfetto::Written,
    path: &Path,
    o: &trace_export::perfetto::Options,
) {
    if w.dropped_events > 0 {
        eprintln!(
            "rocprof: warning: {}",
            messages::perfetto_buffer_full(&Placement::final_path(path), w, o)
        );
    }
}

/// A write error of the CSV writer, named by the file's final path (`prefix`, the outputs'
/// final prefix, when the error names no file).
pub(crate) fn write_failure(e: trace_export::Error, prefix: &Path) -> WriteFailure {
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
pub(crate) fn unique_prefix(prefix: PathBuf, pid: u32, used: &mut HashSet<PathBuf>) -> PathBuf {
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
            eprintln!(
                "rocprof: warning: {}",
                messages::shared_output_name(&prefix, pid, &p)
            );
            return p;
        }
        n += 1;
    }
}

/// Demangles (and optionally truncates) the kernel names of `t`'s symbols in place.
pub(crate) fn rename_kernels(t: &mut ProcessTrace, demangle: bool, truncate: bool) {
    let ids: Vec<u32> = t.symbols.iter().map(|s| s.name).collect();
    for id in ids {
        let Some(name) = t.strings.get(&id) else {
            continue;
        };
        let mut new = name.clone();
        if (demangle || truncate)
            && let Ok(sym) = cpp_demangle::Symbol::new(name.as_bytes())
            && let Ok(d) = sym.demangle()
        {
            new = d;
        }
        if truncate {
            new = truncate_name(&new);
        }
        t.strings.insert(id, new);
    }
}

/// `void ns::kernel<float>(float*, int)` → `kernel`.
pub fn truncate_name(name: &str) -> String {
    let head = name.split('(').next().unwrap_or(name);
    let mut depth = 0;
    let plain: String = head
        .chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect();
    let last = plain.trim().rsplit([' ', ':']).next().unwrap_or(&plain);
    last.to_owned()
}

/// `rocprof convert` without directories: what earlier runs kept in TMPDIR (for instance after
/// `rocprof` itself was killed, when it could print nothing).
fn list_kept() -> ExitCode {
    let tmp = std::env::temp_dir();
    let kept = crate::record_dir::kept_in(&tmp);
    if kept.is_empty() {
        eprintln!("rocprof: {}", messages::nothing_kept(&tmp));
        return ExitCode::SUCCESS;
    }
    println!("record directories kept in {}:", tmp.display());
    for k in &kept {
        let what = match &k.manifest {
            Some(m) => format!(
                "{} {}  {}",
                m.launch.launch_date,
                m.launch.launch_time,
                m.launch.argv.join(" ")
            ),
            None => "(no readable run.json: not convertible)".into(),
        };
        let busy = if k.in_use { "  [in use]" } else { "" };
        println!("  {}  {what}{busy}", k.path.display());
    }
    println!("convert one with `rocprof convert <dir>` (add -d/-o to choose where the files go)");
    ExitCode::SUCCESS
}

/// `rocprof convert <record-dir>…`.
pub fn run(args: &Args) -> Result<ExitCode> {
    if !args.inputs.is_empty() {
        if !args.dirs.is_empty() {
            anyhow::bail!(messages::merge_with_dirs());
        }
        return crate::merge::run(&args.inputs, &args.output);
    }
    if args.dirs.is_empty() {
        return Ok(list_kept());
    }
    let signals = Signals::install().map_err(|e| anyhow!(messages::signals_unavailable(&e)))?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    // Every directory and its output paths are checked before anything is converted.
    for w in args.output.check_for_conversion().map_err(|e| anyhow!(e))? {
        eprintln!("rocprof: warning: {w}");
    }
    let mut jobs = Vec::new();
    for d in &args.dirs {
        let (dir, mut manifest) = RecordDir::open(&cwd.join(d))?;
        manifest.outputs = args
            .output
            .apply_to(&manifest.outputs, &cwd)
            .map_err(|e| anyhow!(e))?;
        outputs::validate(&manifest.outputs, &manifest.launch)?;
        jobs.push((dir, manifest));
    }
    let mut code = ExitCode::SUCCESS;
    for (dir, manifest) in jobs {
        if let Some(s) = signals.interrupted() {
            eprintln!("rocprof: {}", messages::interrupted_conversion(s));
            eprintln!("rocprof: {}", messages::kept_to_finish(dir.path()));
            return Ok(signal_exit_code(s));
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
        );
        eprintln!(
            "rocprof: {}",
            messages::convert_summary(
                &path,
                outcome.processes,
                outcome.written.len(),
                &outcome.dirs()
            )
        );
        if let Some(s) = outcome.interrupted {
            return Ok(signal_exit_code(s));
        }
        if outcome.write_failed {
            code = ExitCode::FAILURE;
        }
    }
    Ok(code)
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
    fn kernel_names_truncate_to_the_function() {
        assert_eq!(
            truncate_name("void addition_kernel<float>(float*, float const*, int)"),
            "addition_kernel"
        );
        assert_eq!(
            truncate_name("ns::axpb(float const*, float*, unsigned long)"),
            "axpb"
        );
        assert_eq!(
            truncate_name("__amd_rocclr_copyBuffer"),
            "__amd_rocclr_copyBuffer"
        );
    }

    #[test]
    fn processes_sharing_a_name_get_distinct_ones() {
        let mut used = HashSet::new();
        let p = PathBuf::from("/o/run");
        assert_eq!(unique_prefix(p.clone(), 7, &mut used), p);
        assert_eq!(
            unique_prefix(p.clone(), 7, &mut used),
            Path::new("/o/run_7")
        );
        // The same pid again (an exec'd image of the process).
        assert_eq!(
            unique_prefix(p.clone(), 7, &mut used),
            Path::new("/o/run_7_2")
        );
        assert_eq!(unique_prefix(p, 8, &mut used), Path::new("/o/run_8"));
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
