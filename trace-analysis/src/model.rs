//! The one in-memory form every input is turned into: processes with their API calls,
//! dispatches, copies, ROCTx ranges and counter values by name, plus what the input could say
//! about itself (which kinds it holds, losses, agents, notes). Each analysis reads only this.

use pmc_dxg::hygiene::{Discard, DispatchKey, HygieneRow};
use std::collections::HashMap;
use trace_records::agents::{AgentIndex, AgentLabels};
use trace_records::{ApiDomain, CopyDirection, MarkerKind, ProcessTrace};

/// Which runtime an API call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Api {
    /// HIP (runtime and compiler).
    Hip,
    /// HSA (every HSA domain).
    Hsa,
    /// ROCTx API calls.
    Marker,
    /// Anything else a file names (RCCL, OMPT, …).
    Other,
}

impl Api {
    /// From a `Domain` column or a rocpd category (`HIP_RUNTIME_API_EXT`, `HSA_CORE_API`, …).
    pub fn from_domain_name(domain: &str) -> Api {
        let d = domain.to_ascii_uppercase();
        if d.starts_with("HIP") {
            Api::Hip
        } else if d.starts_with("HSA") {
            Api::Hsa
        } else if d.starts_with("MARKER") || d.starts_with("ROCTX") {
            Api::Marker
        } else {
            Api::Other
        }
    }
}

/// One API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// Index into [`Process::names`].
    pub name: u32,
    /// Its runtime.
    pub api: Api,
    /// Correlation id (as the input has it).
    pub cid: u64,
    /// OS thread id.
    pub tid: u64,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
}

/// One kernel dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    /// Dispatch id.
    pub id: u64,
    /// Kernel name ("" when unknown).
    pub kernel: String,
    /// Correlation id of the call that enqueued it.
    pub cid: u64,
    /// Enqueuing thread, when the input says.
    pub tid: Option<u64>,
    /// Device timestamps (converted to the host timeline by the runtime), ns.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Grid size (x, y, z); `[volume, 1, 1]` when the input has only the volume.
    pub grid: [u32; 3],
    /// Workgroup size, as `grid`.
    pub workgroup: [u32; 3],
    /// The agent's label (`Agent 1`).
    pub agent: String,
}

/// One memory copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    /// Its position in the input's copy records (0-based, time order).
    pub index: usize,
    /// Correlation id of the call that issued it.
    pub cid: u64,
    /// Direction, when known.
    pub direction: Option<CopyDirection>,
    /// Device timestamps, ns.
    pub start: u64,
    /// See `start`.
    pub end: u64,
}

impl Copy {
    /// The direction as rocprofv3 names it.
    pub fn direction_name(&self) -> &'static str {
        self.direction
            .map_or("MEMORY_COPY_NONE", CopyDirection::csv_name)
    }
}

/// One ROCTx mark or range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The message.
    pub message: String,
    /// A mark (an instant), not a range.
    pub instant: bool,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
}

/// One dispatch × counter value: as read (`Ok`) or as set aside, with why (`Err`).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    /// The dispatch.
    pub dispatch_id: u64,
    /// The counter.
    pub name: String,
    /// The value or why there is none.
    pub value: Result<f64, Discard>,
}

/// Where a process's counter values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterOrigin {
    /// No counter values.
    None,
    /// Evaluated here from the raw read-backs of a record directory (rocprof's own hygiene).
    ReadBacks,
    /// `counter_collection.csv`, with the values rocprof set aside taken from its
    /// `counter_hygiene.csv`.
    CsvWithHygiene,
    /// `counter_collection.csv` alone (rocprofv3 writes every value, zeros included).
    Csv,
    /// A rocpd database.
    Rocpd,
}

/// Everything about a process's counters.
#[derive(Debug, Clone)]
pub struct Counters {
    /// Where they come from.
    pub origin: CounterOrigin,
    /// The values, by dispatch and counter.
    pub values: Vec<CounterValue>,
    /// Identities of counted dispatches as rocprof computed them (record directories and
    /// `counter_hygiene.csv`); others are computed from the dispatches.
    pub keys: HashMap<u64, DispatchKey>,
    /// `counter_hygiene.csv` rows estimated over several runs (`--pmc-repeat`): the values of
    /// this input are already rocprof's estimates.
    pub repeat_rows: Vec<HygieneRow>,
    /// The dispatches as the counter file has them, when they are not the kernel trace's
    /// (files of different runs); empty otherwise (the process's dispatches are used).
    pub dispatches: Vec<Dispatch>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            origin: CounterOrigin::None,
            values: Vec::new(),
            keys: HashMap::new(),
            repeat_rows: Vec::new(),
            dispatches: Vec::new(),
        }
    }
}

/// One process of an input.
#[derive(Debug, Clone)]
pub struct Process {
    /// How reports name it (`out/run_` for a CSV prefix, `trace.db pid 12` …).
    pub label: String,
    /// Its process id, when known.
    pub pid: Option<u32>,
    /// Interned call names.
    pub names: Vec<String>,
    /// API calls, in time order (start, longest first).
    pub calls: Vec<Call>,
    /// Dispatches, in time order.
    pub dispatches: Vec<Dispatch>,
    /// Copies, in time order.
    pub copies: Vec<Copy>,
    /// ROCTx marks and ranges.
    pub markers: Vec<Marker>,
    /// Counter values.
    pub counters: Counters,
    /// The gfx target of its first GPU agent, when known (for the counter definitions).
    pub gfx: Option<String>,
    /// What is missing and why, and other facts of the input (one line each).
    pub missing: Vec<String>,
    /// Lines about how the input was read (files skipped, rows unreadable, …).
    pub notes: Vec<String>,
}

impl Process {
    /// An empty process named `label`.
    pub fn new(label: String) -> Process {
        Process {
            label,
            pid: None,
            names: Vec::new(),
            calls: Vec::new(),
            dispatches: Vec::new(),
            copies: Vec::new(),
            markers: Vec::new(),
            counters: Counters::default(),
            gfx: None,
            missing: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The name of a call.
    pub fn name(&self, c: &Call) -> &str {
        self.names.get(c.name as usize).map_or("", String::as_str)
    }

    /// Puts every record kind in time order.
    pub fn sort(&mut self) {
        self.calls
            .sort_by_key(|c| (c.start, std::cmp::Reverse(c.end), c.cid, c.tid));
        self.dispatches.sort_by_key(|d| (d.start, d.id, d.end));
        self.copies.sort_by_key(|c| (c.start, c.cid, c.end));
        for (k, c) in self.copies.iter_mut().enumerate() {
            c.index = k;
        }
        self.markers.sort_by_key(|m| (m.start, m.end));
    }

    /// The earliest timestamp of any record (to order processes by start).
    pub fn first_timestamp(&self) -> u64 {
        let calls = self.calls.iter().map(|c| c.start);
        let dispatches = self.dispatches.iter().map(|d| d.start);
        let copies = self.copies.iter().map(|c| c.start);
        let markers = self.markers.iter().map(|m| m.start);
        calls
            .chain(dispatches)
            .chain(copies)
            .chain(markers)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// Interns call names.
#[derive(Debug, Default)]
pub struct Interner {
    index: HashMap<String, u32>,
}

impl Interner {
    /// The id of `name` in `names`, added if new.
    pub fn intern(&mut self, names: &mut Vec<String>, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = u32::try_from(names.len()).unwrap_or(u32::MAX);
        names.push(name.to_owned());
        self.index.insert(name.to_owned(), id);
        id
    }
}

/// Whether a ROCTx record is an instant: a mark, or a record without duration. Decision: CSV
/// files do not say which ROCTx call a row comes from (their marks are the rows whose start
/// equals their end) and a rocpd database stores every zero-length record as a sample, so a
/// range that took no time reads as a mark there; it is one here too, so that every input of
/// one run gives the same verdicts.
pub fn is_instant(kind: u8, start: u64, end: u64) -> bool {
    MarkerKind::from_u8(kind) == Some(MarkerKind::Mark) || start == end
}

/// A trace read from a record log or a rocpd database, in the common form (counters as their
/// records have them; a record directory's read-backs are evaluated by the caller).
pub fn from_trace(t: &ProcessTrace, label: String) -> Process {
    let mut p = Process::new(label);
    p.pid = Some(t.pid);
    let labels = AgentLabels::new(t.docs.agents().to_vec(), AgentIndex::default());
    p.gfx = t
        .docs
        .agents()
        .iter()
        .find(|a| a.is_gpu())
        .map(|a| a.name.clone())
        .filter(|n| !n.is_empty());
    let mut names = Interner::default();
    let mut ops: HashMap<(u8, u16), u32> = HashMap::new();
    for r in &t.api {
        let name = *ops.entry((r.domain, r.operation)).or_insert_with(|| {
            names.intern(&mut p.names, &t.operation_name(r.domain, r.operation))
        });
        let api = match ApiDomain::from_u8(r.domain) {
            Some(d) if d.is_hip() => Api::Hip,
            Some(d) if d.is_hsa() => Api::Hsa,
            Some(_) => Api::Marker,
            None => Api::Other,
        };
        p.calls.push(Call {
            name,
            api,
            cid: r.correlation_id,
            tid: r.thread_id.into(),
            start: r.start,
            end: r.end,
        });
    }
    if let Err(e) = t.api.check() {
        p.notes
            .push(format!("some API calls could not be read back: {e}"));
    }
    let symbols = t.symbols_by_id();
    for d in &t.dispatches {
        p.dispatches.push(Dispatch {
            id: d.dispatch_id,
            kernel: symbols
                .get(&d.kernel_id)
                .map_or("", |s| t.string(s.name))
                .to_owned(),
            cid: d.correlation_id,
            tid: Some(d.thread_id.into()).filter(|&t| t != 0),
            start: d.start,
            end: d.end,
            grid: d.grid,
            workgroup: d.workgroup,
            agent: labels.label(d.agent_node_id).into_owned(),
        });
    }
    for c in &t.copies {
        p.copies.push(Copy {
            index: 0,
            cid: c.correlation_id,
            direction: CopyDirection::from_u8(c.direction),
            start: c.start,
            end: c.end,
        });
    }
    for m in &t.markers {
        p.markers.push(Marker {
            message: t.string(m.message).to_owned(),
            instant: is_instant(m.kind, m.start, m.end),
            start: m.start,
            end: m.end,
        });
    }
    for c in &t.counters {
        p.counters.values.push(CounterValue {
            dispatch_id: c.dispatch_id,
            name: t.string(c.name).to_owned(),
            value: Ok(c.value),
        });
    }
    p.sort();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_records_without_duration_are_instants() {
        let mark = MarkerKind::Mark as u8;
        let range = MarkerKind::ThreadRange as u8;
        let process = MarkerKind::ProcessRange as u8;
        assert!(is_instant(mark, 5, 5));
        assert!(is_instant(mark, 5, 9), "a mark whatever its times");
        assert!(is_instant(range, 5, 5), "as CSV and rocpd read it");
        assert!(!is_instant(range, 5, 9));
        assert!(!is_instant(process, 5, 9));
        assert!(!is_instant(range, 9, 5), "a negative range stays a range");
    }
}
