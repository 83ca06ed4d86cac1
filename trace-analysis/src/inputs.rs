//! Recognising and reading `rocprof analyze`'s inputs into the common form
//! ([`crate::model::Process`]).
//!
//! * A directory with a `run.json` is a **record directory** (a kept run): its logs are read
//!   as `rocprof convert` reads them (kernel names demangled as the run asked), and when its
//!   run counted, the raw read-backs are evaluated with rocprof's own hygiene (so the values
//!   set aside are known with their reason); `rocprof`'s explanations of what is missing,
//!   the tool's warnings and the losses come with it.
//! * Another directory is an **output directory of CSV files**: every `.csv` file named
//!   `[<prefix>_]<name>.csv` with `<name>` one of rocprofv3's outputs groups under its prefix,
//!   and each prefix holding trace or counter data is one process (ours are `<-o>_…`,
//!   `<pid>_…`; upstream's samples have none). Without such files, `pass_<N>`/`pmc_<N>`
//!   subdirectories (several counter passes) are read as runs, and failing those the rocpd
//!   databases (`*.db`) in it.
//! * A file starting with SQLite's header is a **rocpd database** (ours or upstream's
//!   schema 3), read by `trace_export::rocpd_read`.
//!
//! Anything else is refused. Problems inside a recognised input (a file without a needed
//! column, rows that do not parse) never stop the analysis: they are kept as notes.

use crate::error::Error;
use crate::model::{
    Api, Call, CounterOrigin, CounterValue, Dispatch, Interner, Marker, Process, from_trace,
};
use pmc_dxg::collection as pmc;
use pmc_dxg::hygiene::{Discard, DispatchKey, Estimate, HygieneRow};
use rocprof_runner::notice::{CounterNotice, counted_overlaps};
use rocprof_runner::record_dir::{self, RecordDir};
use rocprof_runner::{convert, explain, findings};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use trace_records::{CopyDirection, ProcessTrace};

/// What kind of input a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// An output directory of CSV files.
    CsvDirectory,
    /// A rocpd database (or a directory of them).
    Rocpd,
    /// A record directory `rocprof` kept.
    RecordDirectory,
}

impl InputKind {
    /// For the text report.
    pub fn describe(self) -> &'static str {
        match self {
            InputKind::CsvDirectory => "CSV output directory",
            InputKind::Rocpd => "rocpd database",
            InputKind::RecordDirectory => "record directory",
        }
    }
}

/// One run of the application inside an input (several for an output directory of counter
/// passes).
#[derive(Debug, Clone)]
pub struct Run {
    /// `""`, or the pass directory's name.
    pub label: String,
    /// Its processes, in the order they started.
    pub processes: Vec<Process>,
}

/// One input, read.
#[derive(Debug, Clone)]
pub struct Input {
    /// As given.
    pub path: PathBuf,
    /// What it is.
    pub kind: InputKind,
    /// Its runs.
    pub runs: Vec<Run>,
    /// What is missing from it as a whole, and why.
    pub missing: Vec<String>,
    /// How it was read.
    pub notes: Vec<String>,
}

/// The message for a path that is none of the three kinds.
pub const NEITHER: &str = "neither a CSV output directory, a rocpd database nor a record directory";

fn refuse(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Refused {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// Reads `path` (see the module documentation).
pub fn read(path: &Path) -> Result<Input, Error> {
    let meta = std::fs::metadata(path).map_err(|e| refuse(path, format!("{NEITHER} ({e})")))?;
    if meta.is_dir() {
        if path.join(record_dir::MANIFEST).exists() {
            return read_record_dir(path);
        }
        return read_directory(path);
    }
    if meta.is_file() && is_sqlite(path) {
        let processes = read_rocpd(path).map_err(|why| refuse(path, why))?;
        return Ok(Input {
            path: path.to_owned(),
            kind: InputKind::Rocpd,
            runs: vec![Run {
                label: String::new(),
                processes,
            }],
            missing: vec![ROCPD_SILENT.into()],
            notes: Vec::new(),
        });
    }
    Err(refuse(path, NEITHER))
}

const ROCPD_SILENT: &str = "a rocpd database records neither what was asked for nor the records \
                            lost: `rocprof` said both when the run ended";
const CSV_SILENT: &str = "CSV files record neither what was asked for nor the records lost: \
                          `rocprof` said both when the run ended";

fn is_sqlite(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"SQLite format 3\0"
}

fn read_rocpd(path: &Path) -> Result<Vec<Process>, String> {
    let traces = trace_export::rocpd_read::read(path)
        .map_err(|e| format!("an SQLite file, but not a readable rocpd database: {e}"))?;
    let mut out: Vec<Process> = traces
        .iter()
        .map(|t| {
            let mut p = from_trace(t, format!("{} pid {}", path.display(), t.pid));
            if !p.counters.values.is_empty() {
                p.counters.origin = CounterOrigin::Rocpd;
                p.missing.extend(absent_values(&p));
            }
            p
        })
        .collect();
    out.sort_by_key(Process::first_timestamp);
    Ok(out)
}

/// What a database's counter values lack: the values of counted dispatches (those with any
/// value) missing for a counter other dispatches have. rocprof leaves the values it sets aside
/// out of its outputs, and a database, unlike `counter_hygiene.csv`, does not say which or why,
/// so its counter trust cannot flag them.
fn absent_values(p: &Process) -> Option<String> {
    let names: BTreeSet<&str> = p.counters.values.iter().map(|v| v.name.as_str()).collect();
    let mut have: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for v in &p.counters.values {
        have.entry(v.dispatch_id)
            .or_default()
            .insert(v.name.as_str());
    }
    let absent: Vec<String> = have
        .iter()
        .flat_map(|(id, got)| {
            names
                .iter()
                .filter(|n| !got.contains(*n))
                .map(move |n| format!("dispatch {id} {n}"))
        })
        .collect();
    if absent.is_empty() {
        return None;
    }
    let shown: Vec<&str> = absent.iter().take(8).map(String::as_str).collect();
    let more = if absent.len() > 8 { ", …" } else { "" };
    Some(format!(
        "{} absent ({}{more}): rocprof leaves the values it \
         sets aside (GRBM zero bursts, isolated SQ zeros, the warm-up window) out of its \
         outputs, and a rocpd database does not record which or why, so they are not flagged \
         here; the run's counter_hygiene.csv says (analyse its CSV directory or record \
         directory)",
        match absent.len() {
            1 => "1 dispatch × counter value is".to_owned(),
            n => format!("{n} dispatch × counter values are"),
        },
        shown.join(", ")
    ))
}

// ---------------------------------------------------------------------------------------------
// Record directories.

fn read_record_dir(path: &Path) -> Result<Input, Error> {
    // The record directory's own messages name the path.
    let (dir, manifest) = RecordDir::open(path).map_err(Error::RecordDir)?;
    let mut notes = Vec::new();
    let (logs, skipped) = dir.logs();
    for s in &skipped {
        notes.push(format!("{} is {}: skipped", s.path.display(), s.kind));
    }
    let mut traces: Vec<ProcessTrace> = Vec::new();
    for log in &logs {
        match ProcessTrace::read(log) {
            Ok(t) => traces.push(t),
            Err(e) => notes.push(format!("unreadable record log: {e}")),
        }
    }
    convert::order_processes(&mut traces);
    for t in traces.iter_mut() {
        trace_export::rename::rename_kernels(
            t,
            !manifest.outputs.mangled_kernels,
            manifest.outputs.truncate_kernels,
        );
        trace_export::rename::apply(t, manifest.outputs.kernel_rename);
    }
    let status = manifest.status.unwrap_or_default();
    let untraced = explain::untraced_pids(dir.path());
    let mut missing = explain::explain(&manifest.selection, &status, &traces, &logs, &untraced);
    if manifest.status.is_none() {
        missing.push("run.json has no exit status: rocprof did not see the application end".into());
    }
    let mut processes = Vec::with_capacity(traces.len());
    let defs = match &manifest.counters {
        Some(_) => match pmc::definitions() {
            Ok(d) => Some(d),
            Err(e) => {
                notes.push(format!("the counter read-backs cannot be evaluated: {e:#}"));
                None
            }
        },
        None => None,
    };
    let mut evaluations = Vec::new();
    for t in &traces {
        let mut p = from_trace(t, format!("{} pid {}", path.display(), t.pid));
        p.missing
            .extend(findings::after_run(std::slice::from_ref(t)));
        if let Some(m) = &t.docs.mapping
            && !m.unmatched_gpu_node_ids.is_empty()
            && !t
                .docs
                .warnings
                .iter()
                .any(|w| w.about == trace_records::docs::WarningKind::UnpairedAgents)
        {
            p.missing.push(format!(
                "HSA GPUs without an agent record (KMT nodes {:?}) were not profiled",
                m.unmatched_gpu_node_ids
            ));
        }
        if !t.damage.is_empty() {
            p.missing.push(format!(
                "{} damaged chunk(s) of the record log were skipped (what they held is counted \
                 as lost)",
                t.damage.len()
            ));
        }
        if t.open_chunks > 0 {
            p.missing.push(format!(
                "{} chunk(s) of the record log were still open: the process did not exit \
                 normally",
                t.open_chunks
            ));
        }
        if let (Some(plan), Some(defs)) = (&manifest.counters, &defs) {
            let eval = pmc::evaluate(t, plan, defs);
            notes.extend(eval.problems.iter().map(ToString::to_string));
            if !eval.overlapped.is_empty() {
                p.notes.push(format!(
                    "pid {}: {}",
                    t.pid,
                    counted_overlaps(&eval.overlapped)
                ));
            }
            p.counters.values.clear();
            // A dispatch's counters in counter-id order (ties in request order), the order
            // counter_collection.csv and the rocpd database have them in, so every form of a
            // run lists its counters alike.
            let mut order: Vec<usize> = (0..eval.counters.len()).collect();
            order.sort_by_key(|&k| eval.counters[k].1);
            for c in &eval.dispatches {
                p.counters
                    .keys
                    .insert(c.dispatch.dispatch_id, c.key.clone());
                for &k in &order {
                    // Multiplexed groups: a counter of another group was not read here.
                    let other = Err(Discard::OtherGroup);
                    let Some(value) = c.outcomes.get(k).filter(|v| **v != other) else {
                        continue;
                    };
                    p.counters.values.push(CounterValue {
                        dispatch_id: c.dispatch.dispatch_id,
                        name: eval.counters[k].0.clone(),
                        value: *value,
                    });
                }
            }
            p.counters.origin = CounterOrigin::ReadBacks;
            evaluations.push(eval);
        }
        processes.push(p);
    }
    let every: Vec<&pmc::Evaluation> = evaluations.iter().collect();
    if pmc::all_zero(&every) {
        let vendor_packet = traces
            .iter()
            .filter_map(|t| t.docs.discovery.as_ref())
            .map(|d| d.vendor_packet.clone())
            .find(|v| *v != trace_records::docs::EnvValue::NotRecorded)
            .unwrap_or_default();
        missing.push(CounterNotice::PacketsNotRun { vendor_packet }.to_string());
    }
    if manifest.counters.is_some() && traces.iter().all(|t| t.counter_samples.is_empty()) {
        missing.push("counters were asked for, but no counter read-back was recorded".into());
    }
    Ok(Input {
        path: path.to_owned(),
        kind: InputKind::RecordDirectory,
        runs: vec![Run {
            label: String::new(),
            processes,
        }],
        missing,
        notes,
    })
}

// ---------------------------------------------------------------------------------------------
// Directories of CSV files.

/// What a file name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// Read as trace or counter data: its prefix is a process.
    Data,
    /// Read alongside the data of its prefix.
    Aux,
    /// Known, but not analysed.
    Skipped,
}

/// rocprofv3's (and our) output names, `[<prefix>_]<name>.csv`.
const NAMES: [(&str, Role); 21] = [
    ("kernel_trace", Role::Data),
    ("hip_api_trace", Role::Data),
    // The upstream documentation's sample of the HIP trace is named so.
    ("hip_trace", Role::Data),
    ("hsa_api_trace", Role::Data),
    ("memory_copy_trace", Role::Data),
    ("marker_api_trace", Role::Data),
    ("counter_collection", Role::Data),
    ("counter_hygiene", Role::Aux),
    ("agent_info", Role::Aux),
    ("memory_allocation_trace", Role::Skipped),
    ("scratch_memory_trace", Role::Skipped),
    ("rccl_api_trace", Role::Skipped),
    ("rocdecode_api_trace", Role::Skipped),
    ("rocjpeg_api_trace", Role::Skipped),
    ("kernel_stats", Role::Skipped),
    ("hip_api_stats", Role::Skipped),
    ("hsa_api_stats", Role::Skipped),
    ("memory_copy_stats", Role::Skipped),
    ("marker_api_stats", Role::Skipped),
    ("domain_stats", Role::Skipped),
    ("counter_collection_stats", Role::Skipped),
];

/// The prefix and output name of a CSV file name (the longest output name that fits).
fn split_name(file: &str) -> Option<(String, &'static str, Role)> {
    let stem = file.strip_suffix(".csv")?;
    NAMES
        .iter()
        .filter_map(|&(name, role)| {
            if stem == name {
                Some((String::new(), name, role))
            } else {
                let prefix = stem.strip_suffix(name)?.strip_suffix('_')?;
                (!prefix.is_empty()).then(|| (prefix.to_owned(), name, role))
            }
        })
        .max_by_key(|(_, name, _)| name.len())
}

/// The CSV files of one directory, by prefix and output name, and the `.csv` files that are
/// no output of ours or rocprofv3's.
#[derive(Debug, Default)]
struct Listing {
    sets: BTreeMap<String, BTreeMap<&'static str, PathBuf>>,
    unknown: Vec<String>,
    skipped: Vec<String>,
}

fn list_csv(dir: &Path) -> Listing {
    let mut l = Listing::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return l;
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(n, _)| n.ends_with(".csv") && !n.starts_with('.'))
        .collect();
    files.sort();
    let mut roles: BTreeMap<String, BTreeSet<Role>> = BTreeMap::new();
    for (file, path) in files {
        match split_name(&file) {
            Some((prefix, name, role)) => {
                roles.entry(prefix.clone()).or_default().insert(role);
                l.sets.entry(prefix).or_default().insert(name, path);
            }
            None => l.unknown.push(file),
        }
    }
    // A prefix without data (a stats file such as `hip_domain_stats.csv`) is no process.
    let empty: Vec<String> = roles
        .iter()
        .filter(|(_, r)| !r.contains(&Role::Data))
        .map(|(p, _)| p.clone())
        .collect();
    for prefix in empty {
        if let Some(files) = l.sets.remove(&prefix) {
            l.skipped.extend(
                files
                    .values()
                    .filter_map(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned()),
            );
        }
    }
    for files in l.sets.values() {
        for (name, path) in files {
            if NAMES.iter().any(|(n, r)| n == name && *r == Role::Skipped) {
                l.skipped.push(
                    path.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into(),
                );
            }
        }
    }
    l.skipped.sort();
    l
}

fn read_directory(path: &Path) -> Result<Input, Error> {
    let listing = list_csv(path);
    let mut notes = Vec::new();
    let mut runs = Vec::new();
    if !listing.sets.is_empty() {
        runs.push(read_csv_run(path, String::new(), &listing, &mut notes));
    } else {
        // Counter passes: pass_<N> (or pmc_<N> for text input files), in pass order.
        let mut passes: Vec<(u64, String, PathBuf)> = std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let n = name
                            .strip_prefix("pass_")
                            .or_else(|| name.strip_prefix("pmc_"))?
                            .parse()
                            .ok()?;
                        Some((n, name, e.path()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        passes.sort();
        for (_, name, dir) in passes {
            let l = list_csv(&dir);
            if !l.sets.is_empty() {
                runs.push(read_csv_run(&dir, name, &l, &mut notes));
            }
        }
    }
    if !runs.is_empty() {
        return Ok(Input {
            path: path.to_owned(),
            kind: InputKind::CsvDirectory,
            runs,
            missing: vec![CSV_SILENT.into()],
            notes,
        });
    }
    // An output directory of `-f rocpd`.
    let mut dbs: Vec<PathBuf> = std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "db") && p.is_file())
                .filter(|p| is_sqlite(p))
                .collect()
        })
        .unwrap_or_default();
    dbs.sort();
    if dbs.is_empty() {
        return Err(refuse(path, NEITHER));
    }
    let mut processes = Vec::new();
    for db in &dbs {
        match read_rocpd(db) {
            Ok(p) => processes.extend(p),
            Err(e) => notes.push(format!("{}: {e}", db.display())),
        }
    }
    if processes.is_empty() {
        return Err(refuse(
            path,
            format!("{NEITHER} (its databases: {})", notes.join("; ")),
        ));
    }
    processes.sort_by_key(Process::first_timestamp);
    Ok(Input {
        path: path.to_owned(),
        kind: InputKind::Rocpd,
        runs: vec![Run {
            label: String::new(),
            processes,
        }],
        missing: vec![ROCPD_SILENT.into()],
        notes,
    })
}

fn read_csv_run(dir: &Path, label: String, listing: &Listing, notes: &mut Vec<String>) -> Run {
    if !listing.unknown.is_empty() {
        notes.push(format!(
            "{}: not rocprofv3 output names, not read: {}",
            dir.display(),
            listing.unknown.join(", ")
        ));
    }
    if !listing.skipped.is_empty() {
        notes.push(format!(
            "{}: not analysed (analyze computes its own statistics; allocation and scratch \
             traces are not checked): {}",
            dir.display(),
            listing.skipped.join(", ")
        ));
    }
    let mut processes: Vec<Process> = listing
        .sets
        .iter()
        .map(|(prefix, files)| read_prefix(dir, prefix, files))
        .collect();
    processes.sort_by_key(Process::first_timestamp);
    Run { label, processes }
}

/// One CSV file being read: its columns by name, rows that could not be read.
struct Table {
    path: PathBuf,
    columns: HashMap<String, usize>,
    reader: csv::Reader<std::fs::File>,
}

/// One row of a [`Table`].
struct Row<'a> {
    record: &'a csv::StringRecord,
    columns: &'a HashMap<String, usize>,
}

impl Row<'_> {
    fn text(&self, column: &str) -> Option<&str> {
        self.record.get(*self.columns.get(column)?)
    }

    fn int(&self, column: &str) -> Result<u64, String> {
        let cell = self
            .text(column)
            .ok_or_else(|| format!("no {column} cell"))?;
        cell.trim()
            .parse()
            .map_err(|_| format!("{column} {cell:?} is not a whole number"))
    }

    fn int_or(&self, column: &str, default: u64) -> Result<u64, String> {
        match self.text(column) {
            None => Ok(default),
            Some(s) if s.trim().is_empty() => Ok(default),
            Some(_) => self.int(column),
        }
    }

    fn size(&self, column: &str) -> Result<u32, String> {
        let v = self.int_or(column, 1)?;
        u32::try_from(v).map_err(|_| format!("{column} {v} is too large"))
    }
}

impl Table {
    fn open(path: &Path, required: &[&str]) -> Result<Table, String> {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(path)
            .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
        let headers = reader
            .headers()
            .map_err(|e| format!("{}: no header row: {e}", path.display()))?;
        let columns: HashMap<String, usize> = headers
            .iter()
            .enumerate()
            .map(|(k, h)| (h.trim().to_owned(), k))
            .collect();
        let absent: Vec<&str> = required
            .iter()
            .copied()
            .filter(|c| !columns.contains_key(*c))
            .collect();
        if !absent.is_empty() {
            return Err(format!(
                "{}: not read: no {} column",
                path.display(),
                absent.join(", ")
            ));
        }
        Ok(Table {
            path: path.to_owned(),
            columns,
            reader,
        })
    }

    /// Calls `f` with each row; rows that fail (malformed CSV or `f`'s error) are counted and
    /// the first is described in a note.
    fn each(mut self, notes: &mut Vec<String>, mut f: impl FnMut(&Row<'_>) -> Result<(), String>) {
        let mut bad = 0usize;
        let mut first: Option<String> = None;
        let mut record = csv::StringRecord::new();
        loop {
            let result = self.reader.read_record(&mut record);
            let line = record
                .position()
                .map_or_else(|| self.reader.position().line(), csv::Position::line);
            match result {
                Ok(false) => break,
                Ok(true) => {
                    let row = Row {
                        record: &record,
                        columns: &self.columns,
                    };
                    if let Err(e) = f(&row) {
                        bad += 1;
                        first.get_or_insert_with(|| format!("line {line}: {e}"));
                    }
                }
                Err(e) => {
                    bad += 1;
                    first.get_or_insert_with(|| format!("line {line}: {e}"));
                    if e.is_io_error() {
                        break;
                    }
                }
            }
        }
        if bad > 0 {
            notes.push(format!(
                "{}: {} not read ({})",
                self.path.display(),
                rocprof_runner::words::counted(bad, "row", "rows"),
                first.unwrap_or_default()
            ));
        }
    }
}

/// `Counter_Value` as rocprofv3 prints it (C's `printf`: `nan`, `-nan`, `inf`).
fn parse_value(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.to_ascii_lowercase().as_str() {
        "nan" | "-nan" => Some(f64::NAN),
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

fn direction(name: &str) -> Option<CopyDirection> {
    [
        CopyDirection::HostToHost,
        CopyDirection::HostToDevice,
        CopyDirection::DeviceToHost,
        CopyDirection::DeviceToDevice,
    ]
    .into_iter()
    .find(|d| d.csv_name() == name)
}

fn read_prefix(dir: &Path, prefix: &str, files: &BTreeMap<&'static str, PathBuf>) -> Process {
    let label = if prefix.is_empty() {
        format!("{}/", dir.display().to_string().trim_end_matches('/'))
    } else {
        dir.join(prefix).display().to_string()
    };
    let mut p = Process::new(label);
    let mut notes = Vec::new();
    let mut names = Interner::default();
    let mut pids: BTreeSet<u64> = BTreeSet::new();

    for file in ["hip_api_trace", "hip_trace", "hsa_api_trace"] {
        let Some(path) = files.get(file) else {
            continue;
        };
        let table = match Table::open(path, &API_COLUMNS) {
            Ok(t) => t,
            Err(e) => {
                notes.push(e);
                continue;
            }
        };
        let fallback = if file.starts_with("hip") {
            Api::Hip
        } else {
            Api::Hsa
        };
        let calls = &mut p.calls;
        let names_list = &mut p.names;
        table.each(&mut notes, |r| {
            let api = match Api::from_domain_name(r.text("Domain").unwrap_or("")) {
                Api::Other => fallback,
                api => api,
            };
            if let Ok(pid) = r.int("Process_Id") {
                pids.insert(pid);
            }
            let name = names.intern(names_list, r.text("Function").unwrap_or(""));
            calls.push(Call {
                name,
                api,
                cid: r.int("Correlation_Id")?,
                tid: r.int_or("Thread_Id", 0)?,
                start: r.int("Start_Timestamp")?,
                end: r.int("End_Timestamp")?,
            });
            Ok(())
        });
    }
    if let Some(path) = files.get("marker_api_trace") {
        match Table::open(path, &["Function", "Start_Timestamp", "End_Timestamp"]) {
            Ok(table) => table.each(&mut notes, |r| {
                let (start, end) = (r.int("Start_Timestamp")?, r.int("End_Timestamp")?);
                if let Ok(pid) = r.int("Process_Id") {
                    pids.insert(pid);
                }
                p.markers.push(Marker {
                    message: r.text("Function").unwrap_or("").to_owned(),
                    instant: start == end,
                    start,
                    end,
                });
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    if let Some(path) = files.get("kernel_trace") {
        match Table::open(path, &KERNEL_COLUMNS) {
            Ok(table) => table.each(&mut notes, |r| {
                p.dispatches.push(Dispatch {
                    id: r.int("Dispatch_Id")?,
                    kernel: r.text("Kernel_Name").unwrap_or("").to_owned(),
                    cid: r.int("Correlation_Id")?,
                    tid: r.int("Thread_Id").ok().filter(|&t| t != 0),
                    start: r.int("Start_Timestamp")?,
                    end: r.int("End_Timestamp")?,
                    grid: [
                        r.size("Grid_Size_X")?,
                        r.size("Grid_Size_Y")?,
                        r.size("Grid_Size_Z")?,
                    ],
                    workgroup: [
                        r.size("Workgroup_Size_X")?,
                        r.size("Workgroup_Size_Y")?,
                        r.size("Workgroup_Size_Z")?,
                    ],
                    agent: r.text("Agent_Id").unwrap_or("").to_owned(),
                });
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    if let Some(path) = files.get("memory_copy_trace") {
        match Table::open(path, &COPY_COLUMNS) {
            Ok(table) => table.each(&mut notes, |r| {
                p.copies.push(crate::model::Copy {
                    index: 0,
                    cid: r.int("Correlation_Id")?,
                    direction: direction(r.text("Direction").unwrap_or("")),
                    start: r.int("Start_Timestamp")?,
                    end: r.int("End_Timestamp")?,
                });
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    if let Some(path) = files.get("agent_info") {
        match Table::open(path, &["Agent_Type", "Name"]) {
            Ok(table) => table.each(&mut notes, |r| {
                if p.gfx.is_none() && r.text("Agent_Type") == Some("GPU") {
                    p.gfx = r.text("Name").map(str::to_owned).filter(|n| !n.is_empty());
                }
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    read_counters(&mut p, files, &mut notes, &mut pids);
    match pids.len() {
        0 => {}
        1 => p.pid = pids.first().and_then(|&v| u32::try_from(v).ok()),
        _ => {
            let list: Vec<String> = pids.iter().map(u64::to_string).collect();
            p.notes.push(format!(
                "the files name {} process ids ({}): they may come from different runs, so \
                 records of one file need not match those of another",
                pids.len(),
                list.join(", ")
            ));
        }
    }
    p.notes.extend(notes);
    p.sort();
    p
}

const API_COLUMNS: [&str; 5] = [
    "Function",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "Domain",
];
const KERNEL_COLUMNS: [&str; 5] = [
    "Dispatch_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];
const COPY_COLUMNS: [&str; 4] = [
    "Direction",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];
const COUNTER_COLUMNS: [&str; 4] = [
    "Dispatch_Id",
    "Kernel_Name",
    "Counter_Name",
    "Counter_Value",
];
const HYGIENE_COLUMNS: [&str; 14] = pmc_dxg::hygiene::CSV_COLUMNS;

/// `[volume, 1, 1]`, saturating.
fn volume_size(v: u64) -> [u32; 3] {
    [u32::try_from(v).unwrap_or(u32::MAX), 1, 1]
}

fn read_counters(
    p: &mut Process,
    files: &BTreeMap<&'static str, PathBuf>,
    notes: &mut Vec<String>,
    pids: &mut BTreeSet<u64>,
) {
    let known: HashMap<u64, usize> = p
        .dispatches
        .iter()
        .enumerate()
        .map(|(k, d)| (d.id, k))
        .collect();
    // Dispatches only the counter rows name (a counters-only run has no kernel trace), and
    // the counter rows' view of every dispatch (to compare with the kernel trace).
    let mut extra: BTreeMap<u64, Dispatch> = BTreeMap::new();
    let mut own: BTreeMap<u64, Dispatch> = BTreeMap::new();
    let mut values: Vec<CounterValue> = Vec::new();
    if let Some(path) = files.get("counter_collection") {
        match Table::open(path, &COUNTER_COLUMNS) {
            Ok(table) => table.each(notes, |r| {
                let id = r.int("Dispatch_Id")?;
                let cell = r.text("Counter_Value").unwrap_or("");
                let value = parse_value(cell)
                    .ok_or_else(|| format!("Counter_Value {cell:?} is not a number"))?;
                if let Ok(pid) = r.int("Process_Id") {
                    pids.insert(pid);
                }
                if let std::collections::btree_map::Entry::Vacant(slot) = own.entry(id) {
                    let d = Dispatch {
                        id,
                        kernel: r.text("Kernel_Name").unwrap_or("").to_owned(),
                        cid: r.int_or("Correlation_Id", 0)?,
                        tid: r.int("Thread_Id").ok().filter(|&t| t != 0),
                        start: r.int_or("Start_Timestamp", 0)?,
                        end: r.int_or("End_Timestamp", 0)?,
                        grid: volume_size(r.int_or("Grid_Size", 1)?),
                        workgroup: volume_size(r.int_or("Workgroup_Size", 1)?),
                        agent: r.text("Agent_Id").unwrap_or("").to_owned(),
                    };
                    if !known.contains_key(&id) {
                        extra.insert(id, d.clone());
                    }
                    slot.insert(d);
                }
                values.push(CounterValue {
                    dispatch_id: id,
                    name: r.text("Counter_Name").unwrap_or("").to_owned(),
                    value: Ok(value),
                });
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    let mut rows: Vec<HygieneRow> = Vec::new();
    if let Some(path) = files.get("counter_hygiene") {
        match Table::open(path, &HYGIENE_COLUMNS) {
            Ok(table) => table.each(notes, |r| {
                rows.push(hygiene_row(r)?);
                Ok(())
            }),
            Err(e) => notes.push(e),
        }
    }
    if values.is_empty() && rows.is_empty() {
        return;
    }
    p.counters.origin = if rows.is_empty() {
        CounterOrigin::Csv
    } else {
        CounterOrigin::CsvWithHygiene
    };
    let repeated = rows.iter().any(|r| r.estimate.runs > 1);
    let have: BTreeSet<(u64, String)> = values
        .iter()
        .map(|v| (v.dispatch_id, v.name.clone()))
        .collect();
    for row in &mut rows {
        let id = row.dispatch_id;
        // Sizes as the kernel trace has them, when it does.
        if let Some(&k) = known.get(&id) {
            row.key.grid = p.dispatches[k].grid;
            row.key.workgroup = p.dispatches[k].workgroup;
        }
        p.counters.keys.insert(id, row.key.clone());
        if !known.contains_key(&id) && !extra.contains_key(&id) {
            extra.insert(
                id,
                Dispatch {
                    id,
                    kernel: row.key.kernel.clone(),
                    cid: 0,
                    tid: None,
                    start: 0,
                    end: 0,
                    grid: row.key.grid,
                    workgroup: row.key.workgroup,
                    agent: String::new(),
                },
            );
        }
        // A value rocprof set aside has no collection row: its reason is in the hygiene file.
        if !have.contains(&(id, row.counter.clone()))
            && let Some(&(_, why)) = row.estimate.discarded.first()
        {
            values.push(CounterValue {
                dispatch_id: id,
                name: row.counter.clone(),
                value: Err(why),
            });
        }
    }
    if repeated {
        p.counters.repeat_rows = rows;
    }
    // Counter rows of other dispatches than the kernel trace's: the files come from different
    // runs, and the counters keep their own view of the dispatches.
    let differ = own
        .values()
        .filter(|d| {
            known.get(&d.id).is_some_and(|&k| {
                let t = &p.dispatches[k];
                t.kernel != d.kernel || (d.start != 0 && (t.start, t.end) != (d.start, d.end))
            })
        })
        .count();
    if differ > 0 {
        p.notes.push(format!(
            "counter_collection.csv and kernel_trace.csv disagree on {differ} of {} \
             (kernel name or timestamps): they come from different runs, and the counters are \
             analysed with their own rows' dispatches",
            rocprof_runner::words::counted(own.len(), "dispatch", "dispatches")
        ));
        p.counters.dispatches = own.into_values().collect();
    }
    p.dispatches.extend(extra.into_values());
    p.counters.values = values;
}

/// One row of our `counter_hygiene.csv`.
fn hygiene_row(r: &Row<'_>) -> Result<HygieneRow, String> {
    let number = |c: &str| -> Result<Option<f64>, String> {
        match r.text(c).map(str::trim) {
            None | Some("") => Ok(None),
            Some(s) => parse_value(s)
                .map(Some)
                .ok_or_else(|| format!("{c} {s:?} is not a number")),
        }
    };
    let count = |c: &str| -> Result<usize, String> {
        usize::try_from(r.int(c)?).map_err(|_| format!("{c} is too large"))
    };
    let mut discarded = Vec::new();
    for part in r.text("Discarded").unwrap_or("").split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (run, kind) = part
            .strip_prefix("run ")
            .and_then(|rest| rest.split_once(':'))
            .ok_or_else(|| format!("Discarded {part:?} is not `run N: reason`"))?;
        let run: usize = run
            .trim()
            .parse()
            .map_err(|_| format!("Discarded {part:?}: no run number"))?;
        let kind = Discard::ALL
            .into_iter()
            .find(|d| d.name() == kind.trim())
            .ok_or_else(|| format!("Discarded {part:?}: an unknown reason"))?;
        discarded.push((run.saturating_sub(1), kind));
    }
    Ok(HygieneRow {
        dispatch_id: r.int("Dispatch_Id")?,
        key: DispatchKey {
            kernel: r.text("Kernel_Name").unwrap_or("").to_owned(),
            ordinal: r.int("Kernel_Ordinal")?,
            grid: volume_size(r.int_or("Grid_Size", 1)?),
            workgroup: volume_size(r.int_or("Workgroup_Size", 1)?),
        },
        counter: r.text("Counter_Name").unwrap_or("").to_owned(),
        estimate: Estimate {
            estimate: number("Estimate")?,
            min: number("Min")?,
            max: number("Max")?,
            spread_percent: number("Spread_Percent")?,
            runs: count("Runs")?,
            runs_used: count("Runs_Used")?,
            zeros_discarded: count("Zeros_Discarded")?,
            discarded,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_split_into_prefix_and_name() {
        let s = |f: &str| split_name(f).map(|(p, n, _)| (p, n));
        assert_eq!(s("kernel_trace.csv"), Some((String::new(), "kernel_trace")));
        assert_eq!(
            s("run_kernel_trace.csv"),
            Some(("run".into(), "kernel_trace"))
        );
        assert_eq!(
            s("1234_hip_api_trace.csv"),
            Some(("1234".into(), "hip_api_trace"))
        );
        assert_eq!(
            s("a_b_marker_api_trace.csv"),
            Some(("a_b".into(), "marker_api_trace"))
        );
        assert_eq!(s("hip_trace.csv"), Some((String::new(), "hip_trace")));
        // The longest name wins: `counter_collection_stats` is not `_stats` of anything else.
        assert_eq!(
            s("x_counter_collection_stats.csv"),
            Some(("x".into(), "counter_collection_stats"))
        );
        assert_eq!(
            s("hip_domain_stats.csv"),
            Some(("hip".into(), "domain_stats"))
        );
        assert_eq!(s("_kernel_trace.csv"), None);
        assert_eq!(s("kernel_names.csv"), None);
        assert_eq!(s("kernel_trace.txt"), None);
        assert_eq!(s("rocpd-to-csv.csv"), None);
    }

    #[test]
    fn a_database_says_which_counter_values_it_lacks() {
        let mut p = Process::new("db".into());
        let value = |id: u64, name: &str| CounterValue {
            dispatch_id: id,
            name: name.into(),
            value: Ok(1.0),
        };
        p.counters.values = vec![
            value(2, "SQ_WAVES"),
            value(2, "GPU_UTIL"),
            value(3, "SQ_WAVES"),
            value(3, "GPU_UTIL"),
        ];
        assert_eq!(absent_values(&p), None, "every counted dispatch has both");
        p.counters.values.insert(0, value(1, "SQ_WAVES"));
        let said = absent_values(&p).unwrap();
        assert!(
            said.starts_with(
                "1 dispatch × counter value is absent (dispatch 1 GPU_UTIL): rocprof leaves \
                 the values it sets aside"
            ),
            "{said}"
        );
        assert!(
            said.ends_with(
                "the run's counter_hygiene.csv says (analyse its CSV directory or record directory)"
            ),
            "{said}"
        );
        for id in 4..14 {
            p.counters.values.push(value(id, "GPU_UTIL"));
        }
        let said = absent_values(&p).unwrap();
        assert!(
            said.starts_with(
                "11 dispatch × counter values are absent (dispatch 1 GPU_UTIL, dispatch 4 SQ_WAVES,"
            ),
            "{said}"
        );
        assert!(said.contains("dispatch 10 SQ_WAVES, …)"), "{said}");
    }

    #[test]
    fn counter_values_parse_as_printf_writes_them() {
        assert_eq!(parse_value("16384.000000"), Some(16384.0));
        assert_eq!(parse_value("0.00000000e+00"), Some(0.0));
        assert!(parse_value("nan").unwrap().is_nan());
        assert!(parse_value("-nan").unwrap().is_nan());
        assert_eq!(parse_value("inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("twelve"), None);
        assert_eq!(parse_value(""), None);
    }
}
