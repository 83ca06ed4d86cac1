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
use crate::notice::{EndNotice, OutputNotice, Progress, Report, Task};
use crate::outputs::{self, Placement, WriteFailure};
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
    Ok(Input { traces })
}

/// Whether `path` can be merged at all (checked for every input before anything is read).
fn input_kind_known(path: &Path) -> bool {
    path.is_dir() || path.extension().is_some_and(|e| e == "db")
}

/// Whether `path` is read as a rocpd database (else as a record directory).
fn is_database(path: &Path) -> bool {
    !path.is_dir() && path.extension().is_some_and(|e| e == "db")
}

fn read_database(path: &Path) -> Result<Input, Error> {
    let traces = trace_export::rocpd_read::read(path).map_err(|source| Error::Rocpd {
        path: path.to_owned(),
        source,
    })?;
    Ok(Input { traces })
}

fn read_input(path: &Path, report: &mut dyn Report) -> Result<Input, Error> {
    if path.is_dir() {
        return read_record_dir(path, report);
    }
    if is_database(path) {
        return read_database(path);
    }
    Err(Error::MergeInputUnknown(path.to_owned()))
}

/// The databases among `paths` read one after another on a thread of their own, each handed
/// over before the next is read: while the merge writes one input's outputs, the next one is
/// being read (two inputs in memory at most: the one written and the one read).
struct ReadAhead {
    rx: std::sync::mpsc::Receiver<Result<Input, Error>>,
}

impl ReadAhead {
    /// Starts reading on `scope`; `None` when no input is a database.
    fn start<'s>(scope: &'s std::thread::Scope<'s, '_>, paths: &'s [PathBuf]) -> Option<Self> {
        let databases: Vec<&Path> = paths
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| is_database(p))
            .collect();
        if databases.is_empty() {
            return None;
        }
        // A rendezvous: the reader waits with its input read until the merge takes it.
        let (tx, rx) = std::sync::mpsc::sync_channel(0);
        scope.spawn(move || {
            for path in databases {
                if tx.send(read_database(path)).is_err() {
                    return; // the merge stopped
                }
            }
        });
        Some(ReadAhead { rx })
    }

    /// The next database's processes (the databases come in the order of the inputs).
    fn next(&self, path: &Path) -> Result<Input, Error> {
        self.rx.recv().unwrap_or_else(|_| {
            // The reader ends only after sending every database, or by panicking.
            Err(Error::Rocpd {
                path: path.to_owned(),
                source: trace_export::Error::Format {
                    path: path.to_owned(),
                    message: "the reading thread stopped".into(),
                },
            })
        })
    }
}

/// The run facts of a merge: the first record directory's launch (its manifest only), else
/// this process's.
fn merge_launch(paths: &[PathBuf], cwd: &Path) -> Launch {
    paths
        .iter()
        .filter(|p| p.is_dir())
        .find_map(|p| RecordDir::open(p).ok().map(|(_, m)| m.launch))
        .unwrap_or_else(|| Launch {
            rocprof_pid: std::process::id(),
            hostname: crate::launch::hostname(),
            cwd: cwd.display().to_string(),
            ..Launch::default()
        })
}

/// The outputs of a merge as they are written.
struct Writers<'a> {
    settings: &'a OutputSettings,
    launch: &'a Launch,
    run: RunInfo,
    placement: Placement,
    written: Vec<PathBuf>,
    failed: bool,
    /// CSV prefixes taken.
    used: HashSet<PathBuf>,
    /// The pids seen.
    pids: HashSet<u32>,
    /// The one database, once the first process gave its prefix: (staged path, writer).
    rocpd: Option<(PathBuf, trace_export::rocpd::RocpdWriter)>,
    /// Writing the database failed (it is then left out).
    rocpd_failed: bool,
    /// The processes JSON and Perfetto need all at once (only when those are asked for).
    whole: Vec<ProcessTrace>,
    processes: usize,
}

impl Writers<'_> {
    fn failure(&mut self, e: &WriteFailure, report: &mut dyn Report) {
        report.notice(OutputNotice::failed(e));
        self.failed = true;
    }

    /// Writes one input's processes (CSV per process, the process into the one database) and
    /// keeps them only if a whole-file format needs them.
    fn add(
        &mut self,
        mut traces: Vec<ProcessTrace>,
        in_rocpd: bool,
        report: &mut dyn Report,
    ) -> Result<(), Error> {
        let settings = self.settings;
        order_processes(&mut traces);
        for t in traces.iter_mut() {
            // Kernel names as the merge's -M/-T ask (a database's are demangled already,
            // which the demangler leaves as they are).
            rename_kernels(t, !settings.mangled_kernels, settings.truncate_kernels);
            trace_export::rename::apply(t, settings.kernel_rename);
            if !in_rocpd && !self.pids.insert(t.pid) {
                report.notice(EndNotice::MergeSamePid { pid: t.pid }.into());
            }
        }
        for t in &traces {
            let labels = AgentLabels::new(t.docs.agents().to_vec(), settings.agent_index.index());
            let ctx = Context::new(self.launch, t.pid, t.ppid);
            if settings.formats.contains(&OutputFormat::Csv) {
                let prefix = unique_prefix(
                    outputs::prefix_for(settings, &ctx)?,
                    t.pid,
                    &mut self.used,
                    report,
                );
                let staged = self.placement.stage(&prefix).and_then(|staged| {
                    write_csv(&staged, t, &labels, csv_selection(settings))
                        .map_err(|e| write_failure(e, &prefix))
                });
                match staged.and_then(|files| self.placement.commit(&files)) {
                    Ok(done) => self.written.extend(done),
                    Err(e) => self.failure(&e, report),
                }
            }
            if settings.formats.contains(&OutputFormat::Rocpd) && !self.rocpd_failed && !in_rocpd {
                let prefix = outputs::prefix_for(settings, &ctx)?;
                let result = self.rocpd_add(&prefix, &ProcessView::new(t, &labels));
                if let Err(e) = result {
                    self.rocpd = None;
                    self.rocpd_failed = true;
                    self.failure(&e, report);
                }
            }
            if !in_rocpd {
                self.processes += 1;
            }
        }
        if settings.formats.iter().any(|f| {
            matches!(
                f,
                OutputFormat::Json | OutputFormat::Pftrace | OutputFormat::Otf2
            )
        }) {
            self.whole.extend(traces);
        }
        Ok(())
    }

    /// The one database of `-f rocpd` copies a database input's tables as they are (every
    /// row, in bounded memory) when it has this writer's schema; the processes copied, or
    /// `None` when the input has to be read and rewritten.
    fn rocpd_copy(
        &mut self,
        path: &Path,
        report: &mut dyn Report,
    ) -> Result<Option<Vec<trace_export::rocpd::CopiedProcess>>, Error> {
        if !self.settings.formats.contains(&OutputFormat::Rocpd) || self.rocpd_failed {
            return Ok(None);
        }
        // A file that is no readable database with a process is left to the reader, which
        // says what is wrong with it.
        let Some((pid, ppid)) = trace_export::rocpd_read::first_process(path) else {
            return Ok(None);
        };
        if self.rocpd.is_none() {
            // The file is named after the first process (as when it is written from records).
            let ctx = Context::new(self.launch, pid, ppid);
            let prefix = outputs::prefix_for(self.settings, &ctx)?;
            if let Err(e) = self.rocpd_open(&prefix) {
                self.rocpd_failed = true;
                self.failure(&e, report);
                return Ok(None);
            }
        }
        let Some((_, w)) = self.rocpd.as_mut() else {
            return Ok(None);
        };
        match w.copy_from(path) {
            Ok(Some(copied)) => {
                for p in &copied {
                    if !self.pids.insert(p.pid) {
                        report.notice(EndNotice::MergeSamePid { pid: p.pid }.into());
                    }
                }
                self.processes += copied.len();
                Ok(Some(copied))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.rocpd = None;
                self.rocpd_failed = true;
                let e = write_failure(e, path);
                self.failure(&e, report);
                Ok(None)
            }
        }
    }

    fn rocpd_open(&mut self, prefix: &Path) -> Result<(), WriteFailure> {
        let staged = self.placement.stage(prefix)?.file("results", "db");
        let w = trace_export::rocpd::RocpdWriter::create(&staged, &self.run)
            .map_err(|e| write_failure(e, prefix))?;
        self.rocpd = Some((staged, w));
        Ok(())
    }

    fn rocpd_add(&mut self, prefix: &Path, view: &ProcessView<'_>) -> Result<(), WriteFailure> {
        if self.rocpd.is_none() {
            self.rocpd_open(prefix)?;
        }
        let Some((_, w)) = self.rocpd.as_mut() else {
            return Ok(());
        };
        w.add(view).map_err(|e| write_failure(e, prefix))
    }
}

/// Every CSV file a merge can write.
fn csv_selection(settings: &OutputSettings) -> CsvSelection {
    CsvSelection {
        hip: true,
        hsa: true,
        kernels: true,
        copies: true,
        markers: true,
        allocations: true,
        scratch: true,
        counters: true,
        stats: settings.stats,
    }
}

/// Merges `inputs` (relative to `cwd`) into the outputs `settings` ask for, one input at a
/// time: each is read, its processes written (CSV, the one database) and dropped before the
/// next is read, so memory holds one input whatever their number — except for JSON and
/// Perfetto, whose writers need every process at once. How far it is goes to
/// [`Report::progress`] before each input (steps: inputs) and at the end.
pub fn merge(
    inputs: &[PathBuf],
    cwd: &Path,
    settings: &OutputSettings,
    report: &mut dyn Report,
) -> Result<ExitCode, Error> {
    let paths: Vec<PathBuf> = inputs.iter().map(|i| cwd.join(i)).collect();
    if let Some(p) = paths.iter().find(|p| !input_kind_known(p)) {
        return Err(Error::MergeInputUnknown(p.clone()));
    }
    let launch = merge_launch(&paths, cwd);
    outputs::validate(settings, &launch)?;
    let mut w = Writers {
        settings,
        launch: &launch,
        run: RunInfo {
            hostname: launch.hostname.clone(),
            command: launch.argv.clone(),
        },
        placement: Placement::new(std::time::SystemTime::now()),
        written: Vec::new(),
        failed: false,
        used: HashSet::new(),
        pids: HashSet::new(),
        rocpd: None,
        rocpd_failed: false,
        whole: Vec::new(),
        processes: 0,
    };
    let others = settings.formats.iter().any(|f| *f != OutputFormat::Rocpd);
    // Every database is read when any format but rocpd is asked for: then they are read ahead.
    let first = std::thread::scope(|scope| {
        let ahead = match others {
            true => ReadAhead::start(scope, &paths),
            false => None,
        };
        merge_inputs(inputs, &paths, &mut w, others, ahead.as_ref(), report)
    })?;
    let Some((pid, ppid)) = first else {
        return Err(Error::MergeNothing);
    };
    if let Some((staged, writer)) = w.rocpd.take() {
        let ctx = Context::new(&launch, pid, ppid);
        let prefix = outputs::prefix_for(settings, &ctx)?;
        let done = writer
            .finish()
            .map_err(|e| write_failure(e, &prefix))
            .and_then(|()| w.placement.commit(&[staged]));
        match done {
            Ok(done) => w.written.extend(done),
            Err(e) => w.failure(&e, report),
        }
    }
    if !w.whole.is_empty() {
        write_whole(&mut w, &launch, report)?;
    }
    let Writers {
        placement,
        written,
        failed,
        processes,
        ..
    } = w;
    let _ = placement.finish();
    report.progress(Progress::new(Task::Merge, inputs.len(), inputs.len(), ""));
    report.notice(
        EndNotice::Merged {
            inputs: inputs.len(),
            processes,
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

/// The loop of [`merge`]: each input copied (into the one database) and read (from `ahead`
/// when it is a database being read ahead), its processes written; the first started
/// process, which names the outputs.
fn merge_inputs(
    inputs: &[PathBuf],
    paths: &[PathBuf],
    w: &mut Writers<'_>,
    others: bool,
    ahead: Option<&ReadAhead>,
    report: &mut dyn Report,
) -> Result<Option<(u32, u32)>, Error> {
    let mut first: Option<(u32, u32)> = None;
    for (k, (input, path)) in inputs.iter().zip(paths).enumerate() {
        report.progress(Progress::new(
            Task::Merge,
            k,
            inputs.len(),
            input.display().to_string(),
        ));
        let copied = match path.is_dir() {
            true => None,
            false => w.rocpd_copy(path, report)?,
        };
        let traces = match (&copied, others, ahead) {
            (Some(_), false, _) => Vec::new(),
            (_, _, Some(ahead)) if is_database(path) => ahead.next(path)?.traces,
            _ => read_input(path, report)?.traces,
        };
        let processes = copied.as_ref().map_or(traces.len(), Vec::len);
        report.notice(
            EndNotice::MergeInput {
                input: input.clone(),
                processes,
            }
            .into(),
        );
        if first.is_none() {
            first = match &copied {
                Some(c) => c.iter().min_by_key(|p| p.init_ns).map(|p| (p.pid, p.ppid)),
                None => traces
                    .iter()
                    .min_by_key(|t| (t.created_ns, t.image))
                    .map(|t| (t.pid, t.ppid)),
            };
        }
        w.add(traces, copied.is_some(), report)?;
    }
    Ok(first)
}

/// JSON and Perfetto: every process in one file, written from the processes kept.
fn write_whole(w: &mut Writers<'_>, launch: &Launch, report: &mut dyn Report) -> Result<(), Error> {
    let settings = w.settings;
    let mut traces = std::mem::take(&mut w.whole);
    order_processes(&mut traces);
    let labels: Vec<AgentLabels> = traces
        .iter()
        .map(|t| AgentLabels::new(t.docs.agents().to_vec(), settings.agent_index.index()))
        .collect();
    let first = &traces[0];
    let ctx = Context::new(launch, first.pid, first.ppid);
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
        if !matches!(
            format,
            OutputFormat::Json | OutputFormat::Pftrace | OutputFormat::Otf2
        ) {
            continue;
        }
        let Some((name, ext)) = format.results_file() else {
            continue;
        };
        let staged = w.placement.stage(&prefix).and_then(|staged| {
            let path = staged.file(name, ext);
            if *format == OutputFormat::Otf2 {
                return crate::convert::write_otf2(&path, &w.run, &views, &prefix);
            }
            match format {
                OutputFormat::Json => trace_export::json::write_json(&path, &w.run, &views, &json),
                _ => {
                    let o = crate::convert::perfetto_options(settings);
                    trace_export::perfetto::write_perfetto(&path, &w.run, &views, &o)
                        .map(|x| crate::convert::perfetto_notes(&x, &path, &o, report))
                }
            }
            .map_err(|e| write_failure(e, &prefix))?;
            Ok(vec![path])
        });
        match staged.and_then(|files| w.placement.commit(&files)) {
            Ok(done) => w.written.extend(done),
            Err(e) => {
                report.notice(OutputNotice::failed(&e));
                w.failed = true;
            }
        }
    }
    Ok(())
}
