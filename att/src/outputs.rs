//! rocprofv3's per-dispatch ATT outputs, written from the decoded waves of every SE stream of
//! one dispatch, plus the raw-data file names.
//!
//! For dispatch `<id>` on agent `<agent>` under the output directory `<out>`:
//!
//! ```text
//! <out>/ui_output_agent_<agent>_dispatch_<id>/
//!     se<S>_sm<simd>_sl<slot>_wv<n>.json   one per written wave
//!     filenames.json  occupancy.json  code.json  wstates<N>.json
//! <out>/stats_ui_output_agent_<agent>_dispatch_<id>.csv
//! ```
//!
//! # Rules taken from upstream (att-tool)
//! - A wave with 0 instructions and fewer than 3 timeline entries gets no file and does not
//!   consume a wave number; `n` counts per (simd, slot) within one SE. Every wave still counts
//!   in the statistics, and a wave with `contexts != 0` is warned about.
//! - Statistics per instruction: Hitcount += 1, Latency += duration, Stall += stall,
//!   Idle += max(time − prev, 0) with `prev` starting at the wave's begin time and becoming
//!   max(prev, time + duration). `{0,0}` pcs are skipped entirely and do not move `prev`.
//!   Pcs that do not resolve to a code object are left out of the statistics ("could not
//!   fetch some instructions", warned once per dispatch) but do move `prev`.
//! - `wstates<N>.json` is a sweep per wave state `N` in `0..5`: each timeline segment of a
//!   written wave adds +1 at its start and −1 at its end (segments laid end to end from the
//!   wave's begin time); events are sorted by time and merged on equal times, the value being
//!   the running sum after all events at that time. A file is written only for a state that
//!   occurs. Timeline kinds outside `0..5` appear in the wave files but not in any sweep.
//! - `occupancy.json` keys each SE that had occupancy events; kernel ids are process-global
//!   (kept by [`AttWriter`]) with `{0,0}` → 0, and `dispatches` lists every id seen so far.
//! - Code lines: the first time a pc of a kernel is hit, that kernel gets a `"; <name>"` row
//!   and then one line per instruction; lines are numbered in that first-touch order. With a
//!   [`Listing`] a kernel's lines are all its disassembled instructions (hit or not, plus any
//!   hit pc the listing lacks); without one, only the hit instructions, in address order, with
//!   [`crate::codeobj::fallback_text`] as their text. A hit pc outside every kernel symbol is
//!   a line of its own. A wave file's instruction refers to its line (0 = none).
//! - The stats CSV: header `"CodeObj","Vaddr","Instruction","Hitcount","Latency","Stall",
//!   "Idle","Source"`, strings double-quoted without escaping, numbers in decimal, `\n` line
//!   ends, rows sorted by (CodeObj, Vaddr), each kernel's zero row (Source = demangled name)
//!   right before the kernel's instructions.
//!
//! # Choices where upstream's behaviour is not pinned down by the facts
//! - JSON is compact (no whitespace, no trailing newline) with object keys in byte order,
//!   which is what upstream's nlohmann::json (`std::map` objects) prints. Keys are inserted
//!   sorted, so the output is the same whether or not serde_json's `preserve_order` is on.
//! - Lists that upstream builds into a default-constructed `nlohmann::json` and never fills
//!   print as `null`, not `[]`: a wave's empty `instructions` / `timeline`, `waitcnt` (always,
//!   since this crate does no waitcnt analysis), `wave_filenames` with no waves, and `code`
//!   with no lines. `counter_names` is a real list and prints `[]`.
//! - Occupancy `start` is the number 0 or 1 (it is a bit-field upstream).
//! - Raw-address pcs (`marker_id == 0`) are resolved to (code object, vaddr) before they are
//!   counted, so CodeObj/Vaddr are always an id and an ELF vaddr; occupancy kernel names are
//!   looked up through the same resolution, falling back to `"<marker_id> / 0x<addr>"`.
//! - Latency and Idle are signed 64-bit sums, Stall and Hitcount unsigned; all arithmetic
//!   saturates instead of wrapping.
//! - SE streams are processed in ascending SE order.
//! - A hit pc outside every kernel symbol gets line numbers from 1, never 0.
//! - `snapshots.json` (source files) and `se<S>_perfcounter.json` (gfx9 PERFEVENT) are not
//!   written. The `Source` column of instructions is the listing's source comment, or empty.
//! - A dispatch directory is built under a hidden temporary name beside it (`.<dir>.tmp-<pid>-<n>`)
//!   and renamed into place once every file is in it, so it appears whole or not at all; the files
//!   inside are written plainly, one write each (as upstream's `std::ofstream`s write them). Into
//!   an existing directory (an earlier run's) each file is renamed over its namesake instead, and
//!   files the new run does not write stay. The stats CSV is written to a temporary name beside
//!   it and renamed into place.
//! - The wave files, `filenames.json` and `wstates<N>.json` are formatted straight into a reused
//!   buffer, byte for byte what serde_json prints for [`wave_json`] and [`wstates_json`] (tests
//!   compare the two); there are thousands of wave files per dispatch.

use crate::Error;
use crate::abi::{Pc, wave_state};
use crate::codeobj::{CodeObjectTable, Listing, fallback_text};
use crate::decode::{Decoded, Wave};
use crate::staged_dir::StagedDir;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The `version` every JSON output carries.
pub const TOOL_VERSION: &str = "3.0.0";

/// The `header` string of `code.json`.
pub const CODE_JSON_HEADER: &str =
    "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle";

/// The stats CSV's header line (without its line end).
pub const STATS_CSV_HEADER: &str =
    r#""CodeObj","Vaddr","Instruction","Hitcount","Latency","Stall","Idle","Source""#;

// ---------------------------------------------------------------------------------------------
// File names

/// The raw stream of one SE: `<prefix>_<agent_handle>_shader_engine_<se>_<dispatch>.att`.
pub fn se_stream_file_name(prefix: &str, agent_handle: u64, se: u32, dispatch_id: u64) -> String {
    format!("{prefix}_{agent_handle}_shader_engine_{se}_{dispatch_id}.att")
}

/// The parts of a [`se_stream_file_name`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeStreamFile {
    /// The output prefix (may itself contain `_`).
    pub prefix: String,
    /// The agent handle.
    pub agent_handle: u64,
    /// The shader engine.
    pub se: u32,
    /// The dispatch id.
    pub dispatch_id: u64,
}

/// Splits a file name made by [`se_stream_file_name`]; `None` for anything else.
pub fn parse_se_stream_file_name(file_name: &str) -> Option<SeStreamFile> {
    let stem = file_name.strip_suffix(".att")?;
    let (rest, dispatch) = stem.rsplit_once('_')?;
    let (head, se) = rest.rsplit_once("_shader_engine_")?;
    let (prefix, agent) = head.rsplit_once('_').unwrap_or(("", head));
    Some(SeStreamFile {
        prefix: prefix.to_owned(),
        agent_handle: agent.parse().ok()?,
        se: se.parse().ok()?,
        dispatch_id: dispatch.parse().ok()?,
    })
}

/// A saved code object: `<prefix>_<gpu_name>_code_object_id_<id>.out`.
pub fn code_object_file_name(prefix: &str, gpu_name: &str, id: u64) -> String {
    format!("{prefix}_{gpu_name}_code_object_id_{id}.out")
}

/// The per-dispatch directory: `ui_output_agent_<agent_handle>_dispatch_<dispatch_id>`.
pub fn dispatch_dir_name(agent_handle: u64, dispatch_id: u64) -> String {
    format!("ui_output_agent_{agent_handle}_dispatch_{dispatch_id}")
}

/// The stats CSV next to the dispatch directory: `stats_<dispatch dir>.csv`.
pub fn stats_csv_file_name(agent_handle: u64, dispatch_id: u64) -> String {
    format!("stats_{}.csv", dispatch_dir_name(agent_handle, dispatch_id))
}

/// One wave's file: `se<S>_sm<simd>_sl<slot>_wv<n>.json`.
pub fn wave_file_name(se: u32, simd: u8, slot: u8, n: u32) -> String {
    format!("se{se}_sm{simd}_sl{slot}_wv{n}.json")
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// The accumulated statistics of one instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstStats {
    /// Times executed.
    pub hitcount: u64,
    /// Sum of durations.
    pub latency: i64,
    /// Sum of stall cycles.
    pub stall: u64,
    /// Sum of idle cycles before issue.
    pub idle: i64,
}

/// Per-instruction statistics of one dispatch, keyed by `(code object id, vaddr)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// The statistics.
    pub per_instruction: BTreeMap<(u64, u64), InstStats>,
    /// Every key of `per_instruction`, in the order it was first hit.
    pub first_touch: Vec<(u64, u64)>,
    /// Instructions whose pc did not resolve (left out of `per_instruction`).
    pub unresolved: u64,
    /// Instructions with the `{0,0}` pc (skipped).
    pub unstitched: u64,
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one wave's instructions, resolving pcs with `resolve`.
    pub fn add_wave(&mut self, wave: &Wave, resolve: impl Fn(Pc) -> Option<(u64, u64)>) {
        let mut prev = wave.begin_time;
        for inst in &wave.instructions {
            if inst.pc.is_null() {
                self.unstitched += 1;
                continue;
            }
            match resolve(inst.pc) {
                Some(key) => {
                    let entry = self.per_instruction.entry(key).or_insert_with(|| {
                        self.first_touch.push(key);
                        InstStats::default()
                    });
                    entry.hitcount = entry.hitcount.saturating_add(1);
                    entry.latency = entry.latency.saturating_add(i64::from(inst.duration));
                    entry.stall = entry.stall.saturating_add(u64::from(inst.stall));
                    entry.idle = entry
                        .idle
                        .saturating_add(inst.time.saturating_sub(prev).max(0));
                }
                None => self.unresolved += 1,
            }
            prev = prev.max(inst.time.saturating_add(i64::from(inst.duration)));
        }
    }

    /// The sum of all hitcounts.
    pub fn total_hits(&self) -> u64 {
        self.per_instruction.values().map(|s| s.hitcount).sum()
    }
}

// ---------------------------------------------------------------------------------------------
// Wave files

/// True when a wave gets a file: it has an instruction or at least 3 timeline entries.
pub fn wave_is_written(wave: &Wave) -> bool {
    !wave.instructions.is_empty() || wave.timeline.len() >= 3
}

/// Numbers the waves of one SE: `n` counts per (simd, slot), skipped waves excluded.
#[derive(Clone, Debug)]
pub struct WaveNamer {
    se: u32,
    next: HashMap<(u8, u8), u32>,
}

impl WaveNamer {
    /// A namer for shader engine `se`.
    pub fn new(se: u32) -> Self {
        Self {
            se,
            next: HashMap::new(),
        }
    }

    /// The wave's number and file name, or `None` when the wave is skipped.
    pub fn assign(&mut self, wave: &Wave) -> Option<(u32, String)> {
        if !wave_is_written(wave) {
            return None;
        }
        let counter = self.next.entry((wave.simd, wave.slot)).or_insert(0);
        let n = *counter;
        *counter += 1;
        Some((n, wave_file_name(self.se, wave.simd, wave.slot, n)))
    }
}

// ---------------------------------------------------------------------------------------------
// Wave-state sweeps

/// One `wstates<N>.json`: parallel `time` and `state` arrays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Distinct event times, ascending.
    pub time: Vec<i64>,
    /// The number of waves in the state from that time on.
    pub state: Vec<i64>,
}

/// Collects wave-state events over one dispatch.
#[derive(Clone, Debug, Default)]
pub struct WstatesSweep {
    events: [Vec<(i64, i64)>; wave_state::COUNT],
}

impl WstatesSweep {
    /// No events yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a wave's timeline, segments laid end to end from its begin time.
    pub fn add_wave(&mut self, wave: &Wave) {
        let mut at = wave.begin_time;
        for seg in &wave.timeline {
            let duration = i64::from(seg.duration);
            if let Some(events) = usize::try_from(seg.kind)
                .ok()
                .and_then(|k| self.events.get_mut(k))
            {
                events.push((at, 1));
                events.push((at.saturating_add(duration), -1));
            } else {
                tracing::debug!(kind = seg.kind, "wave state outside the known range");
            }
            at = at.saturating_add(duration);
        }
    }

    /// The sweep of each state, `None` for states that never occurred.
    pub fn finish(self) -> [Option<Sweep>; wave_state::COUNT] {
        self.events.map(|mut events| {
            if events.is_empty() {
                return None;
            }
            events.sort_by_key(|&(t, _)| t);
            let mut sweep = Sweep::default();
            let mut acc = 0i64;
            for (t, delta) in events {
                acc += delta;
                if sweep.time.last() == Some(&t) {
                    *sweep.state.last_mut().expect("parallel arrays") = acc;
                } else {
                    sweep.time.push(t);
                    sweep.state.push(acc);
                }
            }
            Some(sweep)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Code lines (code.json and the stats CSV)

/// What a [`CodeRow`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeRowKind {
    /// A kernel's `"; <name>"` header (all statistics zero).
    Kernel,
    /// An instruction.
    Instruction,
}

/// One line of `code.json` / row of the stats CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeRow {
    /// Header or instruction.
    pub kind: CodeRowKind,
    /// The code object id.
    pub codeobj: u64,
    /// The ELF vaddr (for a header, the kernel's start).
    pub vaddr: u64,
    /// The line number.
    pub line: u32,
    /// The instruction text, or `"; <symbol>"` for a header.
    pub text: String,
    /// The source comment, or the demangled name for a header.
    pub source: String,
    /// The statistics (zero for headers and for instructions never hit).
    pub stats: InstStats,
}

/// All code lines of one dispatch, in line order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeView {
    /// The rows, by ascending line.
    pub rows: Vec<CodeRow>,
    lines: HashMap<(u64, u64), u32>,
    fallback_rows: usize,
}

impl CodeView {
    /// Lays out the lines for `stats` (see the module docs for the rules).
    pub fn build(stats: &Stats, table: &CodeObjectTable, listing: Option<&Listing>) -> Self {
        enum Group<'t> {
            Kernel(u64, &'t crate::codeobj::KernelSymbol),
            Lone(u64, u64),
        }
        let mut groups = Vec::new();
        let mut seen = HashSet::new();
        for &(id, vaddr) in &stats.first_touch {
            match table.kernel_containing(id, vaddr) {
                Some(k) => {
                    if seen.insert((id, k.vaddr.start)) {
                        groups.push(Group::Kernel(id, k));
                    }
                }
                None => groups.push(Group::Lone(id, vaddr)),
            }
        }

        let mut view = Self::default();
        let mut line = 0u32;
        let push_inst = |view: &mut Self, line: u32, id: u64, vaddr: u64| {
            let listed = listing.and_then(|l| l.get(id, vaddr));
            view.fallback_rows += usize::from(listed.is_none());
            view.rows.push(CodeRow {
                kind: CodeRowKind::Instruction,
                codeobj: id,
                vaddr,
                line,
                text: listed.map_or_else(|| fallback_text(vaddr), |i| i.text.clone()),
                source: listed.map(|i| i.source.clone()).unwrap_or_default(),
                stats: stats
                    .per_instruction
                    .get(&(id, vaddr))
                    .copied()
                    .unwrap_or_default(),
            });
            view.lines.insert((id, vaddr), line);
        };
        for group in groups {
            match group {
                Group::Kernel(id, k) => {
                    view.rows.push(CodeRow {
                        kind: CodeRowKind::Kernel,
                        codeobj: id,
                        vaddr: k.vaddr.start,
                        line,
                        text: format!("; {}", k.name),
                        source: k.demangled.clone(),
                        stats: InstStats::default(),
                    });
                    line += 1;
                    let mut addrs: BTreeSet<u64> = stats
                        .per_instruction
                        .range((id, k.vaddr.start)..(id, k.vaddr.end))
                        .map(|(&(_, v), _)| v)
                        .collect();
                    if let Some(l) = listing {
                        addrs.extend(l.range(id, k.vaddr.clone()).map(|i| i.vaddr));
                    }
                    for vaddr in addrs {
                        push_inst(&mut view, line, id, vaddr);
                        line += 1;
                    }
                }
                Group::Lone(id, vaddr) => {
                    line = line.max(1);
                    push_inst(&mut view, line, id, vaddr);
                    line += 1;
                }
            }
        }
        view
    }

    /// The line of the instruction at `(codeobj, vaddr)`.
    pub fn line_of(&self, codeobj: u64, vaddr: u64) -> Option<u32> {
        self.lines.get(&(codeobj, vaddr)).copied()
    }

    /// The number of instruction rows whose text is the no-disassembler placeholder.
    pub fn fallback_rows(&self) -> usize {
        self.fallback_rows
    }

    /// The stats CSV's full text.
    pub fn stats_csv(&self) -> String {
        let mut rows: Vec<&CodeRow> = self.rows.iter().collect();
        rows.sort_by_key(|r| (r.codeobj, r.vaddr, r.kind == CodeRowKind::Instruction));
        let mut out = String::with_capacity(64 * (rows.len() + 1));
        out.push_str(STATS_CSV_HEADER);
        out.push('\n');
        for r in rows {
            out.push_str(&format!(
                "{},{},\"{}\",{},{},{},{},\"{}\"\n",
                r.codeobj,
                r.vaddr,
                r.text,
                r.stats.hitcount,
                r.stats.latency,
                r.stats.stall,
                r.stats.idle,
                r.source
            ));
        }
        out
    }

    /// The `code.json` document.
    pub fn code_json(&self) -> Value {
        let code: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                Value::Array(vec![
                    r.text.clone().into(),
                    0.into(),
                    r.line.into(),
                    r.source.clone().into(),
                    r.codeobj.into(),
                    r.vaddr.into(),
                    r.stats.hitcount.into(),
                    r.stats.latency.into(),
                    r.stats.stall.into(),
                    r.stats.idle.into(),
                ])
            })
            .collect();
        object([
            ("code", list_or_null(code)),
            ("header", CODE_JSON_HEADER.into()),
            ("version", TOOL_VERSION.into()),
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

/// A JSON object with its keys inserted in byte order (whatever serde_json's map type).
fn object<K: Into<String>, const N: usize>(pairs: [(K, Value); N]) -> Value {
    sorted_object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

fn sorted_object(map: BTreeMap<String, Value>) -> Value {
    let mut out = Map::new();
    for (k, v) in map {
        out.insert(k, v);
    }
    Value::Object(out)
}

/// nlohmann::json's behaviour for a list that was never pushed to: `null`.
fn list_or_null(items: Vec<Value>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    }
}

/// One wave's file content.
pub fn wave_json(se: u32, n: u32, wave: &Wave, line_of: impl Fn(Pc) -> u32) -> Value {
    let instructions = wave
        .instructions
        .iter()
        .map(|i| {
            Value::Array(vec![
                i.time.into(),
                i.category.into(),
                i.stall.into(),
                i.duration.into(),
                line_of(i.pc).into(),
            ])
        })
        .collect();
    let timeline = wave
        .timeline
        .iter()
        .map(|s| Value::Array(vec![s.kind.into(), s.duration.into()]))
        .collect();
    let entry = object([
        ("begin", wave.begin_time.into()),
        ("cu", wave.cu.into()),
        ("end", wave.end_time.into()),
        ("id", n.into()),
        ("instructions", list_or_null(instructions)),
        ("simd", wave.simd.into()),
        ("slot", wave.slot.into()),
        ("timeline", list_or_null(timeline)),
        ("waitcnt", Value::Null),
    ]);
    let count = wave.instructions.len();
    object([
        (
            "duration",
            wave.end_time.saturating_sub(wave.begin_time).into(),
        ),
        ("name", format!("SE{se}").into()),
        ("num_insts", count.into()),
        ("num_stitched", count.into()),
        ("wave", entry),
    ])
}

/// One `wstates<N>.json`.
pub fn wstates_json(state: usize, sweep: &Sweep) -> Value {
    object([
        ("name", format!("wstates{state}.json").into()),
        ("state", sweep.state.clone().into()),
        ("time", sweep.time.clone().into()),
    ])
}

/// Appends `v` in decimal, as serde_json prints an integer.
fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends one wave's file content: the bytes serde_json's compact form of [`wave_json`] has,
/// without building the document.
pub fn write_wave_json(
    out: &mut Vec<u8>,
    se: u32,
    n: u32,
    wave: &Wave,
    mut line_of: impl FnMut(Pc) -> u32,
) {
    let count = wave.instructions.len();
    out.extend_from_slice(b"{\"duration\":");
    push_int(out, wave.end_time.saturating_sub(wave.begin_time));
    out.extend_from_slice(b",\"name\":\"SE");
    push_int(out, se);
    out.extend_from_slice(b"\",\"num_insts\":");
    push_int(out, count);
    out.extend_from_slice(b",\"num_stitched\":");
    push_int(out, count);
    out.extend_from_slice(b",\"wave\":{\"begin\":");
    push_int(out, wave.begin_time);
    out.extend_from_slice(b",\"cu\":");
    push_int(out, wave.cu);
    out.extend_from_slice(b",\"end\":");
    push_int(out, wave.end_time);
    out.extend_from_slice(b",\"id\":");
    push_int(out, n);
    out.extend_from_slice(b",\"instructions\":");
    if wave.instructions.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        out.reserve(count * 24);
        for (k, i) in wave.instructions.iter().enumerate() {
            out.extend_from_slice(if k == 0 { b"[[" } else { b",[" });
            push_int(out, i.time);
            out.push(b',');
            push_int(out, i.category);
            out.push(b',');
            push_int(out, i.stall);
            out.push(b',');
            push_int(out, i.duration);
            out.push(b',');
            push_int(out, line_of(i.pc));
            out.push(b']');
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"simd\":");
    push_int(out, wave.simd);
    out.extend_from_slice(b",\"slot\":");
    push_int(out, wave.slot);
    out.extend_from_slice(b",\"timeline\":");
    if wave.timeline.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        for (k, t) in wave.timeline.iter().enumerate() {
            out.extend_from_slice(if k == 0 { b"[[" } else { b",[" });
            push_int(out, t.kind);
            out.push(b',');
            push_int(out, t.duration);
            out.push(b']');
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"waitcnt\":null}}");
}

/// Appends one `wstates<N>.json`: the bytes of serde_json's compact [`wstates_json`].
pub fn write_wstates_json(out: &mut Vec<u8>, state: usize, sweep: &Sweep) {
    let list = |out: &mut Vec<u8>, values: &[i64]| {
        out.push(b'[');
        for (k, &v) in values.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            push_int(out, v);
        }
        out.push(b']');
    };
    out.extend_from_slice(b"{\"name\":\"wstates");
    push_int(out, state);
    out.extend_from_slice(b".json\",\"state\":");
    list(out, &sweep.state);
    out.extend_from_slice(b",\"time\":");
    list(out, &sweep.time);
    out.push(b'}');
}

// ---------------------------------------------------------------------------------------------
// Kernel ids for occupancy.json

/// The process-global kernel ids of `occupancy.json`: `{0,0}` is 0, then 1, 2, ... in order of
/// first appearance.
#[derive(Clone, Debug)]
pub struct KernelIds {
    ids: BTreeMap<Pc, u64>,
    next: u64,
}

impl Default for KernelIds {
    fn default() -> Self {
        Self {
            ids: BTreeMap::from([(Pc::default(), 0)]),
            next: 1,
        }
    }
}

impl KernelIds {
    /// The id of `pc`, assigning the next one if it is new.
    pub fn id(&mut self, pc: Pc) -> u64 {
        if let Some(&id) = self.ids.get(&pc) {
            return id;
        }
        let id = self.next;
        self.next += 1;
        self.ids.insert(pc, id);
        id
    }

    /// Every `(pc, id)` assigned so far.
    pub fn iter(&self) -> impl Iterator<Item = (Pc, u64)> + '_ {
        self.ids.iter().map(|(&pc, &id)| (pc, id))
    }
}

fn kernel_display_name(table: &CodeObjectTable, pc: Pc) -> String {
    table
        .resolve(pc)
        .and_then(|(id, vaddr)| table.kernel_at(id, vaddr))
        .map(|k| k.name.clone())
        .unwrap_or_else(|| format!("{} / 0x{:x}", pc.marker_id, pc.addr))
}

// ---------------------------------------------------------------------------------------------
// The writer

/// `filenames.json`'s `wave_filenames`: se → simd → slot → n → `[file, begin, end]`, keyed by
/// decimal strings (so in byte order, like upstream's `std::map<std::string>`).
type WaveIndex =
    BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<String, (String, i64, i64)>>>>;

/// Appends `filenames.json`: the bytes serde_json prints for the document of sorted keys
/// `counter_names`, `gfxip`, `gfxv`, `global_begin_time`, `version`, `wave_filenames`.
fn write_filenames_json(
    out: &mut Vec<u8>,
    counter_names: &[String],
    gfxip: u64,
    index: &WaveIndex,
) -> Result<(), serde_json::Error> {
    /// `{"k":v,...}` over a map's entries, `value` writing each value.
    fn map<V>(
        out: &mut Vec<u8>,
        m: &BTreeMap<String, V>,
        mut value: impl FnMut(&mut Vec<u8>, &V) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        out.push(b'{');
        for (k, (key, v)) in m.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            value(out, v)?;
        }
        out.push(b'}');
        Ok(())
    }
    out.extend_from_slice(b"{\"counter_names\":");
    serde_json::to_writer(&mut *out, counter_names)?;
    out.extend_from_slice(b",\"gfxip\":");
    push_int(out, gfxip);
    out.extend_from_slice(if gfxip > 9 {
        b",\"gfxv\":\"navi\"".as_slice()
    } else {
        b",\"gfxv\":\"vega\"".as_slice()
    });
    out.extend_from_slice(b",\"global_begin_time\":0,\"version\":");
    serde_json::to_writer(&mut *out, TOOL_VERSION)?;
    out.extend_from_slice(b",\"wave_filenames\":");
    if index.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        map(out, index, |out, simds| {
            map(out, simds, |out, slots| {
                map(out, slots, |out, ns| {
                    map(out, ns, |out, (name, begin, end)| {
                        out.push(b'[');
                        serde_json::to_writer(&mut *out, name)?;
                        out.push(b',');
                        push_int(out, *begin);
                        out.push(b',');
                        push_int(out, *end);
                        out.push(b']');
                        Ok(())
                    })
                })
            })
        })?;
    }
    out.push(b'}');
    Ok(())
}

/// Which outputs to write (rocprofv3's `--output-format` for ATT: `json`, `csv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputOptions {
    /// Write the JSON files for the viewer.
    pub json: bool,
    /// Write the stats CSV.
    pub csv: bool,
    /// `filenames.json`'s `counter_names` (gfx9 `--att-perfcounters`).
    pub counter_names: Vec<String>,
}

impl Default for OutputOptions {
    fn default() -> Self {
        Self {
            json: true,
            csv: true,
            counter_names: Vec::new(),
        }
    }
}

/// The decoded stream of one shader engine.
#[derive(Clone, Debug)]
pub struct ShaderEngineTrace {
    /// The SE the stream came from.
    pub se: u32,
    /// What the decoder produced (possibly partial, from [`Error::partial`]).
    pub decoded: Decoded,
}

/// Everything decoded for one dispatch.
#[derive(Clone, Debug)]
pub struct DispatchTrace {
    /// The agent handle, as in the file names.
    pub agent_handle: u64,
    /// The dispatch id.
    pub dispatch_id: u64,
    /// One entry per SE stream.
    pub shader_engines: Vec<ShaderEngineTrace>,
}

/// What [`AttWriter::write_dispatch`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchSummary {
    /// The dispatch directory.
    pub dir: PathBuf,
    /// The stats CSV, if written.
    pub stats_csv: Option<PathBuf>,
    /// Wave files written.
    pub wave_files: usize,
    /// Waves without a file (skip rule).
    pub skipped_waves: usize,
    /// Instructions whose pc did not resolve.
    pub unresolved_instructions: u64,
    /// Instruction rows that carry the no-disassembler placeholder text.
    pub fallback_rows: usize,
}

/// Writes ATT outputs under one output directory, keeping the process-global kernel ids.
#[derive(Clone, Debug)]
pub struct AttWriter {
    out: PathBuf,
    options: OutputOptions,
    kernel_ids: KernelIds,
}

impl AttWriter {
    /// A writer for `<out>`.
    pub fn new(out: impl Into<PathBuf>, options: OutputOptions) -> Self {
        Self {
            out: out.into(),
            options,
            kernel_ids: KernelIds::default(),
        }
    }

    /// The kernel ids assigned so far.
    pub fn kernel_ids(&self) -> &KernelIds {
        &self.kernel_ids
    }

    /// Writes every output of one dispatch.
    ///
    /// # Errors
    /// [`Error::Io`] when a directory or file cannot be written; [`Error::Json`] if
    /// serialisation fails.
    pub fn write_dispatch(
        &mut self,
        dispatch: &DispatchTrace,
        table: &CodeObjectTable,
        listing: Option<&Listing>,
    ) -> Result<DispatchSummary, Error> {
        let io = |(action, path, source): crate::staged_dir::StageError| Error::Io {
            action,
            path,
            source,
        };
        std::fs::create_dir_all(&self.out).map_err(|source| Error::Io {
            action: "create directory",
            path: self.out.clone(),
            source,
        })?;
        let dir = self.out.join(dispatch_dir_name(
            dispatch.agent_handle,
            dispatch.dispatch_id,
        ));
        let stage = StagedDir::create(&dir).map_err(io)?;

        let mut ses: Vec<&ShaderEngineTrace> = dispatch.shader_engines.iter().collect();
        ses.sort_by_key(|s| s.se);

        // Pass 1: statistics over every wave.
        let mut stats = Stats::new();
        for se in &ses {
            for wave in &se.decoded.waves {
                if wave.contexts != 0 {
                    tracing::warn!(
                        se = se.se,
                        cu = wave.cu,
                        simd = wave.simd,
                        slot = wave.slot,
                        contexts = wave.contexts,
                        "wave had context save-restores"
                    );
                }
                stats.add_wave(wave, |pc| table.resolve(pc));
            }
        }
        if stats.unresolved > 0 {
            tracing::warn!(
                dispatch = dispatch.dispatch_id,
                count = stats.unresolved,
                "could not fetch some instructions: their pcs are outside every saved code object"
            );
        }
        let view = CodeView::build(&stats, table, listing);
        let line_of = |pc: Pc| {
            table
                .resolve(pc)
                .and_then(|(id, vaddr)| view.line_of(id, vaddr))
                .unwrap_or(0)
        };

        // Pass 2: wave files, their index, and the wave-state sweeps.
        let mut wave_files = 0;
        let mut skipped_waves = 0;
        let mut index = WaveIndex::new();
        let mut sweep = WstatesSweep::new();
        let mut buf = Vec::with_capacity(4096);
        for se in &ses {
            let mut namer = WaveNamer::new(se.se);
            for wave in &se.decoded.waves {
                let Some((n, name)) = namer.assign(wave) else {
                    skipped_waves += 1;
                    continue;
                };
                wave_files += 1;
                sweep.add_wave(wave);
                if self.options.json {
                    buf.clear();
                    write_wave_json(&mut buf, se.se, n, wave, line_of);
                    write_plain(&stage.path().join(&name), &buf)?;
                }
                index
                    .entry(se.se.to_string())
                    .or_default()
                    .entry(wave.simd.to_string())
                    .or_default()
                    .entry(wave.slot.to_string())
                    .or_default()
                    .insert(n.to_string(), (name, wave.begin_time, wave.end_time));
            }
        }

        if self.options.json {
            let gfxip = ses
                .iter()
                .filter_map(|s| s.decoded.gfxip)
                .next_back()
                .unwrap_or(0);
            let path = stage.path().join("filenames.json");
            buf.clear();
            write_filenames_json(&mut buf, &self.options.counter_names, gfxip, &index).map_err(
                |source| Error::Json {
                    path: path.clone(),
                    source,
                },
            )?;
            write_plain(&path, &buf)?;

            for (state, s) in sweep.finish().iter().enumerate() {
                if let Some(s) = s {
                    buf.clear();
                    write_wstates_json(&mut buf, state, s);
                    write_plain(&stage.path().join(format!("wstates{state}.json")), &buf)?;
                }
            }

            let occupancy = self.occupancy_json(&ses, table);
            write_json(&stage.path().join("occupancy.json"), &occupancy, &mut buf)?;
            write_json(&stage.path().join("code.json"), &view.code_json(), &mut buf)?;
        }
        stage.commit(&dir).map_err(io)?;

        let stats_csv = if self.options.csv {
            let path = self.out.join(stats_csv_file_name(
                dispatch.agent_handle,
                dispatch.dispatch_id,
            ));
            write_atomic(&path, view.stats_csv().as_bytes())?;
            Some(path)
        } else {
            None
        };

        Ok(DispatchSummary {
            dir,
            stats_csv,
            wave_files,
            skipped_waves,
            unresolved_instructions: stats.unresolved,
            fallback_rows: view.fallback_rows(),
        })
    }

    fn occupancy_json(&mut self, ses: &[&ShaderEngineTrace], table: &CodeObjectTable) -> Value {
        let mut doc = BTreeMap::new();
        for se in ses {
            if se.decoded.occupancy.is_empty() {
                continue;
            }
            let rows = se
                .decoded
                .occupancy
                .iter()
                .map(|o| {
                    Value::Array(vec![
                        o.time.into(),
                        o.cu.into(),
                        o.simd.into(),
                        o.slot.into(),
                        u8::from(o.start).into(),
                        self.kernel_ids.id(o.pc).into(),
                    ])
                })
                .collect::<Vec<_>>();
            // Two stream entries for the same SE would be unusual; keep both in order.
            match doc.entry(se.se.to_string()) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Value::Array(rows));
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    if let Value::Array(existing) = o.get_mut() {
                        existing.extend(rows);
                    }
                }
            }
        }
        let dispatches = self
            .kernel_ids
            .iter()
            .map(|(pc, id)| (id.to_string(), kernel_display_name(table, pc).into()))
            .collect();
        doc.insert("dispatches".to_owned(), sorted_object(dispatches));
        doc.insert("version".to_owned(), TOOL_VERSION.into());
        sorted_object(doc)
    }
}

// ---------------------------------------------------------------------------------------------
// Writing on a thread of its own

/// What a [`BackgroundWriter`]'s thread returns: the writer and one result per dispatch.
type Finished = (AttWriter, Vec<Result<DispatchSummary, Error>>);

/// One dispatch handed to a [`BackgroundWriter`]: what [`AttWriter::write_dispatch`] takes,
/// owned.
struct Job {
    trace: DispatchTrace,
    table: CodeObjectTable,
    listing: Option<Listing>,
}

/// An [`AttWriter`] on a thread of its own, so that the files of one dispatch are written while
/// the next dispatch is decoded.
///
/// Dispatches are written one after the other in the order they are [`submit`]ted, so the
/// files (and the process-global kernel ids of `occupancy.json`) are exactly what calling
/// [`AttWriter::write_dispatch`] in that order writes. At most `queue` dispatches wait besides
/// the one being written; [`submit`] blocks while the queue is full, which bounds the decoded
/// data held in memory.
///
/// [`submit`]: BackgroundWriter::submit
#[derive(Debug)]
pub struct BackgroundWriter {
    jobs: Option<std::sync::mpsc::SyncSender<Job>>,
    thread: Option<std::thread::JoinHandle<Finished>>,
}

impl BackgroundWriter {
    /// Starts `writer`'s thread.
    ///
    /// # Errors
    /// [`Error::Io`] when the thread cannot be created.
    pub fn spawn(mut writer: AttWriter, queue: usize) -> Result<Self, Error> {
        let (jobs, incoming) = std::sync::mpsc::sync_channel::<Job>(queue);
        let out = writer.out.clone();
        let thread = std::thread::Builder::new()
            .name("att-writer".into())
            .spawn(move || {
                let results = incoming
                    .iter()
                    .map(|job| writer.write_dispatch(&job.trace, &job.table, job.listing.as_ref()))
                    .collect();
                (writer, results)
            })
            .map_err(|source| Error::Io {
                action: "start the writer thread for",
                path: out,
                source,
            })?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues one dispatch (blocking while the queue is full). Its result comes from
    /// [`finish`](Self::finish), in submission order.
    pub fn submit(
        &mut self,
        trace: DispatchTrace,
        table: CodeObjectTable,
        listing: Option<Listing>,
    ) {
        let job = Job {
            trace,
            table,
            listing,
        };
        // The thread only stops receiving when it has panicked; `finish` reports that.
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    /// Waits until every submitted dispatch is written; the writer (with its kernel ids) and
    /// one result per [`submit`](Self::submit), in order.
    ///
    /// # Panics
    /// Re-raises a panic of the writer thread (a bug in this crate), as writing on the
    /// caller's thread would have raised it.
    pub fn finish(mut self) -> Finished {
        self.jobs = None;
        let thread = self.thread.take().expect("finish is called once");
        match thread.join() {
            Ok(done) => done,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for BackgroundWriter {
    /// Without [`finish`](Self::finish) (e.g. while unwinding): stop taking jobs and let the
    /// thread end on its own.
    fn drop(&mut self) {
        self.jobs = None;
    }
}

/// Serialises `value` compactly (into `buf`, reused) and writes it with [`write_plain`].
fn write_json(path: &Path, value: &Value, buf: &mut Vec<u8>) -> Result<(), Error> {
    buf.clear();
    serde_json::to_writer(&mut *buf, value).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })?;
    write_plain(path, buf)
}

/// Writes `bytes` as the content of the new file `path` (inside a [`StagedDir`], so nothing
/// else has that name yet): one create, one write.
fn write_plain(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|source| Error::Io {
            action: "write",
            path: path.to_owned(),
            source,
        })
}

/// Writes `bytes` as `path`'s whole content (`atomic_file`: a temporary file beside it, renamed
/// into place once complete, removed on any error).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    atomic_file::write(path, atomic_file::Options::new(), bytes).map_err(|e| {
        let action = match e {
            atomic_file::Error::Rename { .. } => "rename into place",
            _ => "write",
        };
        let (path, source) = e.into_parts();
        Error::Io {
            action,
            path,
            source,
        }
    })
}
#[cfg(test)]
#[path = "outputs_tests.rs"]
mod tests;
