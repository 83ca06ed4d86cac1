//! rocprofv3's JSON output, `<prefix>_results.json`: `{"rocprofiler-sdk-tool": [...]}` with one
//! object per process, its keys in upstream's order (`metadata`, `agents`, `counters`,
//! `strings`, `code_objects`, `kernel_symbols`, `host_functions`, `summary`,
//! `callback_records`, `buffer_records`) and its records in the layout of upstream's writer.
//!
//! The file is streamed: every value is serialized straight from the records into a buffered
//! file as it is reached, so memory stays that of the [`ProcessView`]s (which stream the API
//! calls rather than hold them). Like upstream's (cereal, space indent of width 0), the text puts
//! every member on a line of its own without indentation.
//!
//! Upstream's writer departs from its own schema (`rocprofv3-schema.json`) in a few places and
//! this file departs where it does: `agents[].capability` has no `Reserved`; `counters[]`
//! carries `dimensions` and `instances` instead of `dimension_ids`;
//! `callback_records.counter_collection[]` holds `thread_id`, `dispatch_data`, `records` and
//! `stream_id` only. (`code_objects`, `host_functions` and
//! `strings.code_object_snapshot_filenames` are written as upstream's writer writes them, where
//! it departs from the schema too: `json/code_objects.rs`.)
//!
//! What the records do not say, and how it is written:
//! - Correlation ids. The tool gives every call its own id (upstream's `correlation_id.internal`
//!   is unique per call); a call keeps its recorded id when it is the first (in time order) to
//!   carry it, which is the `Correlation_Id` of the CSV files, and an outermost call's is the
//!   one its dispatches and copies name; a repeated id (a log of an older tool, whose nested
//!   calls shared their outermost call's) gets a fresh one above every id of the process, and
//!   `ancestor` names the enclosing call's id. Markers keep
//!   theirs (a fresh one only on a clash). These are the view's ids ([`crate::view::Api::id`]),
//!   the ones the rocpd and Perfetto files use too. `external` is 0, except for a dispatch
//!   renamed by `--kernel-rename`: as upstream, its `external` names its region, whose name is
//!   the `strings.correlation_id.external` entry of that key (`{key, value}`, like
//!   `marker_api`'s; the key is the log's id of the range's message).
//! - `metadata.init_time` is the log's creation (when the tool was loaded, on the records'
//!   clock) and `fini_time` the latest timestamp of any record written, both widened so that
//!   every record of the process lies within them. `metadata.node` describes this machine
//!   (`/etc/machine-id`, the kernel's `/proc/sys/kernel` names); `id` is 0 and `hash` a 63-bit
//!   FNV-1a hash of the machine id (of the host name when there is none). `config` is the
//!   run's output configuration as the caller gives it ([`JsonOptions`]; upstream's keys:
//!   `config`), left out when it gives none.
//! - Agents: `id.handle` is the driver node id plus one (0 is rocprofiler's null handle), the
//!   same handle every record naming an agent uses. Memory banks, caches and I/O links are not
//!   known (counts 0, lists empty), nor are `cpu_core_id_base`, `simd_id_base` and
//!   `drm_render_minor` (0, as in `agent_info.csv`). `fw_version`'s major, minor and stepping
//!   are the gfx target's. `runtime_visibility` says HSA for every agent and HIP for GPUs.
//! - Kernel symbols: the names are the kernel name as the reader left it (demangled unless
//!   `-M`) in `kernel_name`, `formatted_kernel_name` and `demangled_kernel_name`, and that
//!   name cut to its function's bare name in `truncated_kernel_name`. `code_object_id` names
//!   the `code_objects` entry holding the kernel (0 when the runtime's loader extension did not
//!   say); `kernarg_segment_alignment`, `kernel_code_entry_byte_offset` and `kernel_address`
//!   are 0 (not recorded).
//! - Host functions: a device function name is the kernel's name as the reader left it (the
//!   log interns both once), so with demangling it is demangled in `device_function` too.
//! - HIP calls: `args` and `retval` as upstream's serialization writes them when the tool
//!   captured them (it does whenever JSON is asked for; [`crate::args`]); a call without
//!   captured arguments (a log of a CSV-only run, a rocpd input) has an empty `args` and no
//!   `retval`. `stream_id` is the stream of the dispatch or copy the call caused (0 when none).
//! - Kernel dispatches are written under `buffer_records` only when kernel tracing was asked
//!   for (the tool records them for `--pmc` too); `counter_collection` has one entry per
//!   counted dispatch with one value per counter (already summed over dimension instances, so
//!   no counter has dimensions). A counter's `block` comes from the agent's counter setup, and
//!   a counter that is not one of its base events is marked derived; `description` and
//!   `expression` are empty.
//! - `summary` holds the per-domain statistics when [`JsonOptions::summary`] says so (as
//!   upstream: `--stats` or a summary was asked for; `summary`), else it is empty; so are
//!   the tables of kinds this build never records.

mod args;
mod code_objects;
mod config;
mod layout;
mod names;
mod summary;

pub use config::{JsonOptions, OutputConfig};

use crate::Error;
use crate::view::{Api, ProcessView, RunInfo, tracing_kind};
use layout::{Open, number, value};
use names::size;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;
use trace_records::CounterRecord;
use trace_records::agents::{Agent, AgentKind, GpuProperties};
use trace_records::record::*;

/// Writes the JSON file at `path` for `processes` (one file may hold several processes, each
/// kept distinct), with what `options` says of the run.
pub fn write_json(
    path: &Path,
    run: &RunInfo,
    processes: &[ProcessView<'_>],
    options: &JsonOptions,
) -> Result<(), Error> {
    let node = Node::of_this_machine(&run.hostname);
    // An error that is not the file's (none is expected: every key is a string) is reported
    // as the format's, not as I/O.
    let mut failure = None;
    let written = crate::output::write_whole(path, |out| {
        match write_document(out, &node, run, options, processes) {
            Ok(()) => match crate::view::check_all(processes) {
                Ok(()) => out.write_all(b"\n"),
                Err(e) => {
                    failure = Some(e.to_string());
                    Err(io::Error::other(e.to_string()))
                }
            },
            Err(e) if e.is_io() => Err(e.into()),
            Err(e) => {
                let message = e.to_string();
                failure = Some(message.clone());
                Err(io::Error::other(message))
            }
        }
    });
    match (written, failure) {
        (Err(_), Some(message)) => Err(Error::Format {
            path: path.to_owned(),
            message,
        }),
        (written, _) => written,
    }
}

/// The whole file: `{"rocprofiler-sdk-tool": [<process>, …]}`.
fn write_document(
    out: &mut crate::output::Out,
    node: &Node,
    run: &RunInfo,
    options: &JsonOptions,
    processes: &[ProcessView<'_>],
) -> serde_json::Result<()> {
    let mut document = Open::object(out)?;
    document.key(out, "rocprofiler-sdk-tool")?;
    let mut list = Open::array(out)?;
    for view in processes {
        list.item(out)?;
        Process::new(view, node, run, options).write(out)?;
    }
    list.close(out)?;
    document.close(out)
}

/// A JSON array of what the closure's iterator yields, serialized as it is iterated.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// `[]`.
const EMPTY: [u8; 0] = [];

/// `{"handle": ...}`.
#[derive(Serialize, Clone, Copy)]
struct Handle {
    handle: u64,
}

impl Handle {
    fn of(handle: u64) -> Self {
        Self { handle }
    }

    /// The handle of the agent with driver node id `node_id`.
    fn agent(node_id: u32) -> Self {
        Self::of(u64::from(node_id) + 1)
    }
}

/// `{"x": ..., "y": ..., "z": ...}`.
#[derive(Serialize)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

impl Dim3 {
    fn of([x, y, z]: [u32; 3]) -> Self {
        Self { x, y, z }
    }
}

/// A record's `correlation_id`; asynchronous records (dispatches, copies) have no ancestor.
#[derive(Serialize)]
struct CorrelationId {
    internal: u64,
    external: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ancestor: Option<u64>,
}

impl CorrelationId {
    fn of_call(internal: u64, ancestor: u64) -> Self {
        Self {
            internal,
            external: 0,
            ancestor: Some(ancestor),
        }
    }

    fn of_async(internal: u64) -> Self {
        Self {
            internal,
            external: 0,
            ancestor: None,
        }
    }
}

/// One process's object, with what its records need resolved once.
struct Process<'a, 'v> {
    view: &'a ProcessView<'v>,
    node: &'a Node,
    run: &'a RunInfo,
    options: &'a JsonOptions,
    /// Each dispatch by id (the first of an id), for the counter entries.
    dispatches: HashMap<u64, &'v KernelDispatchRecord>,
    /// Whether kernel dispatches go into `buffer_records`.
    kernel_trace: bool,
    /// `init_time` and `fini_time`.
    bounds: (u64, u64),
}

impl<'a, 'v> Process<'a, 'v> {
    fn new(
        view: &'a ProcessView<'v>,
        node: &'a Node,
        run: &'a RunInfo,
        options: &'a JsonOptions,
    ) -> Self {
        let mut dispatches = HashMap::new();
        if !view.counters.is_empty() {
            for d in &view.dispatches {
                dispatches.entry(d.dispatch_id).or_insert(*d);
            }
        }
        let kernel_trace = view
            .trace
            .docs
            .discovery
            .as_ref()
            .is_none_or(|d| d.config.kernels);
        let mut p = Self {
            view,
            node,
            run,
            options,
            dispatches,
            kernel_trace,
            bounds: (0, 0),
        };
        p.bounds = p.bounds();
        p
    }

    /// The earliest and latest instant of the process: its log's creation and every timestamp
    /// written.
    fn bounds(&self) -> (u64, u64) {
        let v = self.view;
        let created = v.trace.created_ns;
        let (mut lo, mut hi) = (if created > 0 { created } else { u64::MAX }, created);
        let mut see = |start: u64, end: u64| {
            lo = lo.min(start).min(end);
            hi = hi.max(start).max(end);
        };
        if let Some((lo, hi)) = v.api_bounds() {
            see(lo, hi);
        }
        v.copies.iter().for_each(|c| see(c.start, c.end));
        v.markers.iter().for_each(|m| see(m.start, m.end));
        v.trace.allocations.iter().for_each(|a| see(a.start, a.end));
        v.trace.scratch.iter().for_each(|e| see(e.start, e.end));
        if self.kernel_trace {
            v.dispatches.iter().for_each(|d| see(d.start, d.end));
        }
        for group in self.counter_groups() {
            let (start, end) = self
                .dispatch_of(group[0])
                .map_or((0, 0), |d| (d.start, d.end));
            see(start, end);
        }
        if lo == u64::MAX {
            lo = 0;
        }
        (lo, hi.max(lo))
    }

    /// The `summary` section.
    fn summary(&self) -> summary::Summary {
        if self.options.summary {
            summary::Summary::of(crate::stats::Stats::of(self.view.trace), self.kernel_trace)
        } else {
            summary::Summary::empty()
        }
    }

    /// The counter records, one slice per counted dispatch.
    fn counter_groups(&self) -> impl Iterator<Item = &[&'v CounterRecord]> + '_ {
        self.view
            .counters
            .chunk_by(|a, b| a.dispatch_id == b.dispatch_id)
    }

    fn dispatch_of(&self, c: &CounterRecord) -> Option<&'v KernelDispatchRecord> {
        self.dispatches.get(&c.dispatch_id).copied()
    }

    /// An API record as serde_json would write it (what [`Process::api_text`] writes by
    /// hand; compared in a test).
    #[cfg(test)]
    fn api_record(&self, a: &Api) -> ApiOut {
        let r = a.record;
        let hip = a.domain.is_hip();
        let (args, retval) = if hip {
            let (args, retval) = args::of(self.view, &r);
            (Some(args), retval)
        } else {
            (None, None)
        };
        ApiOut {
            size: size::API_RECORD,
            kind: tracing_kind(a.domain),
            operation: r.operation.into(),
            correlation_id: CorrelationId::of_call(a.id, a.ancestor),
            start_timestamp: r.start,
            end_timestamp: r.end,
            thread_id: r.thread_id.into(),
            args,
            retval,
            stream_id: hip.then(|| Handle::of(self.view.stream_of(r.correlation_id).unwrap_or(0))),
        }
    }

    fn marker_record(&self, k: usize, m: &MarkerRecord) -> ApiOut {
        ApiOut {
            size: size::API_RECORD,
            kind: names::BUFFER_MARKER_CORE_RANGE,
            operation: m.kind.into(),
            correlation_id: CorrelationId::of_call(self.view.marker_ids[k], 0),
            start_timestamp: m.start,
            end_timestamp: m.end,
            thread_id: m.thread_id.into(),
            args: None,
            retval: None,
            stream_id: None,
        }
    }

    fn dispatch_record(&self, d: &KernelDispatchRecord) -> DispatchOut {
        DispatchOut {
            size: size::KERNEL_DISPATCH_RECORD,
            kind: names::BUFFER_KERNEL_DISPATCH,
            operation: names::KERNEL_DISPATCH_COMPLETE,
            thread_id: d.thread_id.into(),
            correlation_id: CorrelationId {
                // --kernel-rename's region key (its message's id; 0: not renamed).
                external: d.region.into(),
                ..CorrelationId::of_async(d.correlation_id)
            },
            start_timestamp: d.start,
            end_timestamp: d.end,
            dispatch_info: DispatchInfo::of(d),
            stream_id: Handle::of(d.stream_id),
        }
    }

    fn copy_record(&self, c: &MemoryCopyRecord) -> CopyOut {
        CopyOut {
            size: size::MEMORY_COPY_RECORD,
            kind: names::BUFFER_MEMORY_COPY,
            operation: c.direction.into(),
            thread_id: c.thread_id.into(),
            correlation_id: CorrelationId::of_async(c.correlation_id),
            start_timestamp: c.start,
            end_timestamp: c.end,
            dst_agent_id: Handle::agent(c.dst_node_id),
            src_agent_id: Handle::agent(c.src_node_id),
            bytes: c.bytes,
            stream_id: Handle::of(c.stream_id),
        }
    }

    fn allocation_record(&self, a: &MemoryAllocationRecord) -> AllocationOut {
        AllocationOut {
            size: size::MEMORY_ALLOCATION_RECORD,
            kind: names::BUFFER_MEMORY_ALLOCATION,
            operation: a.operation.into(),
            thread_id: a.thread_id.into(),
            correlation_id: CorrelationId::of_async(a.correlation_id),
            start_timestamp: a.start,
            end_timestamp: a.end,
            // A free names no agent (rocprofiler's null handle, 0).
            agent_id: if a.has_agent != 0 {
                Handle::agent(a.agent_node_id)
            } else {
                Handle::of(0)
            },
            address: crate::csv::address_cell(a.address),
            allocation_size: a.size,
        }
    }

    fn scratch_record(&self, e: &ScratchMemoryRecord) -> ScratchOut {
        ScratchOut {
            size: size::SCRATCH_MEMORY_RECORD,
            kind: names::BUFFER_SCRATCH_MEMORY,
            operation: e.operation.into(),
            thread_id: e.thread_id.into(),
            correlation_id: CorrelationId::of_async(e.correlation_id),
            start_timestamp: e.start,
            end_timestamp: e.end,
            agent_id: Handle::agent(e.agent_node_id),
            queue_id: Handle::of(e.queue_id),
            flags: e.flags,
            allocation_size: e.size,
        }
    }

    /// One `counter_collection` entry: a dispatch and its counters' values. A dispatch whose
    /// record was lost is written with what the counter records know (correlation id, agent,
    /// dispatch id) and zeros.
    fn counter_entry<'g>(&self, group: &'g [&'v CounterRecord]) -> CounterEntry<'g, 'v> {
        let first = group[0];
        let d = self.dispatch_of(first);
        let info = match d {
            Some(d) => DispatchInfo::of(d),
            None => DispatchInfo {
                size: size::DISPATCH_INFO,
                agent_id: Handle::agent(first.agent_node_id),
                queue_id: Handle::of(0),
                kernel_id: 0,
                dispatch_id: first.dispatch_id,
                private_segment_size: 0,
                group_segment_size: 0,
                workgroup_size: Dim3::of([0; 3]),
                grid_size: Dim3::of([0; 3]),
            },
        };
        CounterEntry {
            thread_id: d.map_or(0, |d| d.thread_id.into()),
            dispatch_data: DispatchData {
                size: size::DISPATCH_DATA,
                correlation_id: CorrelationId::of_async(
                    d.map_or(first.correlation_id, |d| d.correlation_id),
                ),
                start_timestamp: d.map_or(0, |d| d.start),
                end_timestamp: d.map_or(0, |d| d.end),
                dispatch_info: info,
            },
            records: CounterValues(group),
            stream_id: Handle::of(d.map_or(0, |d| d.stream_id)),
        }
    }

    /// The `counters` entries: each counter collected, per agent, in (agent, counter id) order.
    fn counter_infos(&self) -> Vec<CounterInfo<'v>> {
        let mut seen: BTreeMap<(u32, u32), StringId> = BTreeMap::new();
        for c in &self.view.counters {
            seen.entry((c.agent_node_id, c.counter_id))
                .or_insert(c.name);
        }
        let trace: &'v trace_records::ProcessTrace = self.view.trace;
        let setups = &trace.docs.counter_setups;
        seen.into_iter()
            .map(|((node, id), name)| {
                let name = self.view.string(name);
                let setup = setups.iter().find(|s| s.agent_node_id == node);
                let event = setup.and_then(|s| s.events.iter().find(|e| e.name == name));
                CounterInfo {
                    agent_id: Handle::agent(node),
                    id: Handle::of(id.into()),
                    is_constant: 0,
                    is_derived: u8::from(setup.is_some() && event.is_none()),
                    name,
                    description: "",
                    block: event.map_or("", |e| e.block.as_str()),
                    expression: "",
                    dimensions: EMPTY,
                    instances: EMPTY,
                }
            })
            .collect()
    }

    /// The kernel symbols, by kernel id (the first of an id), after upstream's id-0
    /// placeholder.
    fn kernel_symbols(&self) -> impl Iterator<Item = SymbolOut<'v>> + '_ {
        let mut symbols: Vec<&'v KernelSymbolRecord> = self
            .view
            .trace
            .symbols
            .iter()
            .filter(|s| s.kernel_id != 0)
            .collect();
        symbols.sort_by_key(|s| s.kernel_id);
        symbols.dedup_by_key(|s| s.kernel_id);
        let placeholder = SymbolOut::placeholder();
        std::iter::once(placeholder).chain(symbols.into_iter().map(|s| {
            let name = self.view.string(s.name);
            SymbolOut {
                size: size::KERNEL_SYMBOL,
                kernel_id: s.kernel_id,
                code_object_id: s.code_object_id.into(),
                kernel_name: name,
                kernel_object: s.kernel_object,
                kernarg_segment_size: s.kernarg_segment_size,
                kernarg_segment_alignment: 0,
                group_segment_size: s.group_segment_size,
                private_segment_size: s.private_segment_size,
                sgpr_count: s.sgpr_count,
                arch_vgpr_count: s.arch_vgpr_count,
                accum_vgpr_count: s.accum_vgpr_count,
                kernel_code_entry_byte_offset: 0,
                kernel_address: Handle::of(0),
                formatted_kernel_name: name,
                demangled_kernel_name: name,
                truncated_kernel_name: truncated(name),
            }
        }))
    }

    /// The operation names of API domain byte `domain`, by operation id (`""` where the log
    /// named none).
    fn operation_names(&self, domain: u8) -> Vec<&'v str> {
        let trace = self.view.trace;
        let mut names: Vec<&'v str> = Vec::new();
        for (&(d, op), &id) in &trace.operations {
            if d == domain {
                let op = usize::from(op);
                if names.len() <= op {
                    names.resize(op + 1, "");
                }
                names[op] = trace.string(id);
            }
        }
        names
    }

    /// The operation names of buffer-tracing kind `kind`.
    fn buffer_operations(&self, kind: usize) -> Vec<&'v str> {
        match kind {
            1..=9 => self.operation_names(kind as u8),
            21 | 22 => self.operation_names(kind as u8 - 16),
            10 => names::MEMORY_COPY_OPERATIONS.to_vec(),
            11 => names::KERNEL_DISPATCH_OPERATIONS.to_vec(),
            12 => names::SCRATCH_MEMORY_OPERATIONS.to_vec(),
            16 => names::MEMORY_ALLOCATION_OPERATIONS.to_vec(),
            32 => names::MARKER_RANGE_OPERATIONS.to_vec(),
            _ => Vec::new(),
        }
    }

    /// The operation names of callback-tracing kind `kind`.
    fn callback_operations(&self, kind: usize) -> Vec<&'v str> {
        match kind {
            1..=9 => self.operation_names(kind as u8),
            11 => names::SCRATCH_MEMORY_OPERATIONS.to_vec(),
            12 => names::KERNEL_DISPATCH_OPERATIONS.to_vec(),
            13 => names::MEMORY_COPY_OPERATIONS.to_vec(),
            16 => names::MEMORY_ALLOCATION_OPERATIONS.to_vec(),
            21 => names::MARKER_RANGE_OPERATIONS.to_vec(),
            _ => Vec::new(),
        }
    }
}

impl Process<'_, '_> {
    /// Writes the process's object.
    fn write(&self, out: &mut crate::output::Out) -> serde_json::Result<()> {
        let v = self.view;
        let mut m = Open::object(out)?;
        m.entry(
            out,
            "metadata",
            &Metadata {
                node: self.node,
                pid: v.trace.pid,
                init_time: self.bounds.0,
                fini_time: self.bounds.1,
                command: &self.run.command,
                config: self.options.config.as_ref(),
            },
        )?;
        m.entry(out, "agents", &Seq(|| v.agents().iter().map(AgentOut::of)))?;
        m.entry(out, "counters", &self.counter_infos())?;
        m.entry(out, "strings", &Strings(self))?;
        m.entry(out, "code_objects", &code_objects::CodeObjects(v.trace))?;
        m.entry(out, "kernel_symbols", &Seq(|| self.kernel_symbols()))?;
        m.entry(out, "host_functions", &code_objects::HostFunctions(v.trace))?;
        m.entry(out, "summary", &self.summary())?;
        m.entry(out, "callback_records", &CallbackRecords(self))?;
        m.key(out, "buffer_records")?;
        self.write_buffer_records(out)?;
        m.close(out)
    }

    /// `buffer_records`.
    fn write_buffer_records(&self, out: &mut crate::output::Out) -> serde_json::Result<()> {
        let v = self.view;
        let mut m = Open::object(out)?;
        let dispatches = Seq(|| {
            let records = if self.kernel_trace {
                &v.dispatches[..]
            } else {
                &[]
            };
            records.iter().map(|d| self.dispatch_record(d))
        });
        m.entry(out, "kernel_dispatch", &dispatches)?;
        let mut text = Vec::with_capacity(512);
        for (key, pick) in [
            ("hip_api", ApiDomain::is_hip as fn(ApiDomain) -> bool),
            ("hsa_api", ApiDomain::is_hsa),
        ] {
            m.key(out, key)?;
            let mut list = Open::array(out)?;
            self.write_api_records(out, &mut list, &mut text, pick)?;
            list.close(out)?;
        }
        m.key(out, "marker_api")?;
        let mut list = Open::array(out)?;
        for (k, r) in v.markers.iter().enumerate() {
            list.item(out)?;
            value(&mut *out, &self.marker_record(k, r))?;
        }
        self.write_api_records(out, &mut list, &mut text, is_marker)?;
        list.close(out)?;
        m.entry(out, "rccl_api", &EMPTY)?;
        m.entry(
            out,
            "memory_copy",
            &Seq(|| v.copies.iter().map(|c| self.copy_record(c))),
        )?;
        m.entry(
            out,
            "memory_allocation",
            &Seq(|| {
                v.trace
                    .allocations
                    .iter()
                    .map(|a| self.allocation_record(a))
            }),
        )?;
        m.entry(
            out,
            "scratch_memory",
            &Seq(|| v.trace.scratch.iter().map(|e| self.scratch_record(e))),
        )?;
        for empty in [
            "rocdecode_api",
            "rocjpeg_api",
            "pc_sample_host_trap",
            "pc_sample_stochastic",
        ] {
            m.entry(out, empty, &EMPTY)?;
        }
        m.close(out)
    }

    /// The API records of the domains `pick` accepts, in time order, as members of `list`
    /// (no pass over the calls when none is of those domains).
    fn write_api_records(
        &self,
        out: &mut crate::output::Out,
        list: &mut Open,
        text: &mut Vec<u8>,
        pick: fn(ApiDomain) -> bool,
    ) -> serde_json::Result<()> {
        if self.view.api_count(pick) == 0 {
            return Ok(());
        }
        for a in self.view.api().filter(|a| pick(a.domain)) {
            list.item(out)?;
            text.clear();
            self.api_text(text, &a)?;
            out.write_all(text).map_err(layout::io)?;
        }
        Ok(())
    }

    /// An API record's text, as serde_json writes its [`ApiOut`] (`api_record`), appended to
    /// `text`.
    fn api_text(&self, text: &mut Vec<u8>, a: &Api) -> serde_json::Result<()> {
        let r = &a.record;
        text.extend_from_slice(b"{\n\"size\": ");
        number(text, size::API_RECORD);
        text.extend_from_slice(b",\n\"kind\": ");
        number(text, tracing_kind(a.domain));
        text.extend_from_slice(b",\n\"operation\": ");
        number(text, r.operation);
        text.extend_from_slice(b",\n\"correlation_id\": {\n\"internal\": ");
        number(text, a.id);
        text.extend_from_slice(b",\n\"external\": 0,\n\"ancestor\": ");
        number(text, a.ancestor);
        text.extend_from_slice(b"\n},\n\"start_timestamp\": ");
        number(text, r.start);
        text.extend_from_slice(b",\n\"end_timestamp\": ");
        number(text, r.end);
        text.extend_from_slice(b",\n\"thread_id\": ");
        number(text, r.thread_id);
        if a.domain.is_hip() {
            let (args, retval) = args::of(self.view, r);
            text.extend_from_slice(b",\n\"args\": ");
            value(&mut *text, &args)?;
            if let Some(retval) = retval {
                text.extend_from_slice(b",\n\"retval\": ");
                value(&mut *text, &retval)?;
            }
            text.extend_from_slice(b",\n\"stream_id\": {\n\"handle\": ");
            number(text, self.view.stream_of(r.correlation_id).unwrap_or(0));
            text.extend_from_slice(b"\n}");
        }
        text.extend_from_slice(b"\n}");
        Ok(())
    }
}

/// `metadata`.
#[derive(Serialize)]
struct Metadata<'a> {
    node: &'a Node,
    pid: u32,
    init_time: u64,
    fini_time: u64,
    command: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<&'a OutputConfig>,
}

/// `metadata.node`: the machine the run was on.
#[derive(Serialize, Debug, Clone, Default)]
struct Node {
    id: u64,
    hash: u64,
    machine_id: String,
    system_name: String,
    hostname: String,
    release: String,
    version: String,
    hardware_name: String,
    domain_name: String,
}

impl Node {
    /// This machine, named `hostname` (the host name the run recorded).
    fn of_this_machine(hostname: &str) -> Self {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        let machine_id = read("/etc/machine-id");
        let hostname = if hostname.is_empty() {
            read("/proc/sys/kernel/hostname")
        } else {
            hostname.to_owned()
        };
        let key = if machine_id.is_empty() {
            &hostname
        } else {
            &machine_id
        };
        Self {
            id: 0,
            hash: fnv1a(key.as_bytes()) & (u64::MAX >> 1),
            machine_id,
            system_name: read("/proc/sys/kernel/ostype"),
            hostname,
            release: read("/proc/sys/kernel/osrelease"),
            version: read("/proc/sys/kernel/version"),
            hardware_name: std::env::consts::ARCH.to_owned(),
            domain_name: read("/proc/sys/kernel/domainname"),
        }
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A kernel name cut to its function's bare name: no parameters, template arguments, return
/// type or enclosing scopes (`void ns::k<int>(int*)` → `k`).
fn truncated(name: &str) -> &str {
    let head = name.find('(').map_or(name, |k| &name[..k]);
    // The last scope-separated or space-separated word outside template brackets.
    let mut depth = 0i32;
    let mut word_start = 0;
    let mut word_end = head.len();
    for (k, c) in head.char_indices() {
        match c {
            '<' => {
                if depth == 0 {
                    word_end = k;
                }
                depth += 1;
            }
            '>' => depth -= 1,
            ' ' | ':' if depth == 0 && k + 1 < head.len() => {
                word_start = k + 1;
                word_end = head.len();
            }
            _ => {}
        }
    }
    let word = head[word_start..word_end.max(word_start)].trim();
    if word.is_empty() { name } else { word }
}

/// An `agents` entry (`rocprofiler_agent_v0_t`).
#[derive(Serialize)]
struct AgentOut<'a> {
    size: u64,
    id: Handle,
    #[serde(rename = "type")]
    kind: u32,
    cpu_cores_count: u32,
    simd_count: u32,
    mem_banks_count: u32,
    caches_count: u32,
    io_links_count: u32,
    cpu_core_id_base: u32,
    simd_id_base: u32,
    max_waves_per_simd: u32,
    lds_size_in_kb: u32,
    gds_size_in_kb: u32,
    num_gws: u32,
    wave_front_size: u32,
    num_xcc: u32,
    cu_count: u32,
    array_count: u32,
    num_shader_banks: u32,
    simd_arrays_per_engine: u32,
    cu_per_simd_array: u32,
    simd_per_cu: u32,
    max_slots_scratch_cu: u32,
    gfx_target_version: u32,
    vendor_id: u32,
    device_id: u32,
    location_id: u32,
    domain: u32,
    drm_render_minor: u32,
    num_sdma_engines: u32,
    num_sdma_xgmi_engines: u32,
    num_sdma_queues_per_engine: u32,
    num_cp_queues: u32,
    max_engine_clk_ccompute: u32,
    max_engine_clk_fcompute: u32,
    sdma_fw_version: SdmaFirmware,
    fw_version: Firmware,
    capability: Capability,
    cu_per_engine: u32,
    max_waves_per_cu: u32,
    family_id: u32,
    workgroup_max_size: u32,
    grid_max_size: u32,
    local_mem_size: u64,
    hive_id: u64,
    gpu_id: u64,
    workgroup_max_dim: Dim3,
    grid_max_dim: Dim3,
    name: &'a str,
    vendor_name: &'a str,
    product_name: &'a str,
    model_name: &'a str,
    node_id: u32,
    logical_node_id: u32,
    logical_node_type_id: u32,
    runtime_visibility: Visibility,
    mem_banks: [u8; 0],
    caches: [u8; 0],
    io_links: [u8; 0],
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct SdmaFirmware {
    uCodeSDMA: u32,
    uCodeRes: u32,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct Firmware {
    uCode: u32,
    Major: u32,
    Minor: u32,
    Stepping: u32,
}

#[derive(Serialize)]
struct Visibility {
    hsa: u32,
    hip: u32,
    rccl: u32,
    rocdecode: u32,
}

/// `capability`: the fields of the driver's capability word ([`names::CAPABILITY_FIELDS`]).
struct Capability(u32);

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(names::CAPABILITY_FIELDS.len()))?;
        for (name, shift, width) in names::CAPABILITY_FIELDS {
            m.serialize_entry(name, &((self.0 >> shift) & ((1 << width) - 1)))?;
        }
        m.end()
    }
}

impl<'a> AgentOut<'a> {
    fn of(a: &'a Agent) -> Self {
        let no_gpu = GpuProperties::default();
        let g = a.gpu.as_ref().unwrap_or(&no_gpu);
        let gfx = g.gfx_target_version;
        Self {
            size: size::AGENT,
            id: Handle::agent(a.node_id),
            kind: match a.kind {
                AgentKind::Cpu => 1,
                AgentKind::Gpu => 2,
            },
            cpu_cores_count: a.cpu_cores_count,
            simd_count: g.simd_count,
            mem_banks_count: 0,
            caches_count: 0,
            io_links_count: 0,
            cpu_core_id_base: 0,
            simd_id_base: 0,
            max_waves_per_simd: g.max_waves_per_simd,
            lds_size_in_kb: g.lds_size_in_kb,
            gds_size_in_kb: g.gds_size_in_kb,
            num_gws: g.num_gws,
            wave_front_size: g.wave_front_size,
            num_xcc: g.num_xcc,
            cu_count: g.cu_count,
            array_count: g.array_count,
            num_shader_banks: g.num_shader_banks,
            simd_arrays_per_engine: g.simd_arrays_per_engine,
            cu_per_simd_array: g.cu_per_simd_array,
            simd_per_cu: g.simd_per_cu,
            max_slots_scratch_cu: g.max_slots_scratch_cu,
            gfx_target_version: gfx,
            vendor_id: g.vendor_id,
            device_id: g.device_id,
            location_id: g.location_id,
            domain: g.domain,
            drm_render_minor: 0,
            num_sdma_engines: g.num_sdma_engines,
            num_sdma_xgmi_engines: g.num_sdma_xgmi_engines,
            num_sdma_queues_per_engine: g.num_sdma_queues_per_engine,
            num_cp_queues: g.num_cp_queues,
            max_engine_clk_ccompute: g.max_engine_clk_ccompute,
            max_engine_clk_fcompute: g.max_engine_clk_fcompute,
            sdma_fw_version: SdmaFirmware {
                uCodeSDMA: g.sdma_fw_version & 0x3ff,
                uCodeRes: (g.sdma_fw_version >> 10) & 0x3ff,
            },
            fw_version: Firmware {
                uCode: g.fw_version & 0x3ff,
                Major: gfx / 10000,
                Minor: gfx / 100 % 100,
                Stepping: gfx % 100,
            },
            capability: Capability(g.capability),
            cu_per_engine: g.cu_per_engine,
            max_waves_per_cu: g.max_waves_per_cu,
            family_id: g.family_id,
            workgroup_max_size: g.workgroup_max_size,
            grid_max_size: g.grid_max_size,
            local_mem_size: g.local_mem_size,
            hive_id: g.hive_id,
            gpu_id: g.gpu_id.into(),
            workgroup_max_dim: Dim3::of(g.workgroup_max_dim),
            grid_max_dim: Dim3::of(g.grid_max_dim),
            name: &a.name,
            vendor_name: &a.vendor_name,
            product_name: &a.product_name,
            model_name: &a.model_name,
            node_id: a.node_id,
            logical_node_id: a.logical_node_id,
            logical_node_type_id: a.logical_node_type_id,
            runtime_visibility: Visibility {
                hsa: 1,
                hip: u32::from(a.is_gpu()),
                rccl: 0,
                rocdecode: 0,
            },
            mem_banks: EMPTY,
            caches: EMPTY,
            io_links: EMPTY,
        }
    }
}

/// A `counters` entry: one counter collected on one agent.
#[derive(Serialize)]
struct CounterInfo<'v> {
    agent_id: Handle,
    id: Handle,
    is_constant: u8,
    is_derived: u8,
    name: &'v str,
    description: &'v str,
    block: &'v str,
    expression: &'v str,
    dimensions: [u8; 0],
    instances: [u8; 0],
}

/// `strings`.
struct Strings<'p, 'a, 'v>(&'p Process<'a, 'v>);

/// A name table entry: a kind and its operations, by operation id.
#[derive(Serialize)]
struct KindNames<'v> {
    kind: &'static str,
    operations: Vec<&'v str>,
}

/// A `strings.marker_api` entry.
#[derive(Serialize)]
struct MarkerMessage<'v> {
    key: u64,
    value: &'v str,
}

/// `{"external": [{key, value}…]}`, `{"dimension_ids": []}`.
#[derive(Serialize)]
struct Only<E: Serialize> {
    #[serde(skip_serializing_if = "Option::is_none")]
    external: Option<E>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimension_ids: Option<[u8; 0]>,
}

impl Serialize for Strings<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(Some(9))?;
        let callback = Seq(|| {
            names::CALLBACK_KINDS
                .iter()
                .enumerate()
                .map(|(k, &kind)| KindNames {
                    kind,
                    operations: p.callback_operations(k),
                })
        });
        m.serialize_entry("callback_records", &callback)?;
        let buffer = Seq(|| {
            names::BUFFER_KINDS
                .iter()
                .enumerate()
                .map(|(k, &kind)| KindNames {
                    kind,
                    operations: p.buffer_operations(k),
                })
        });
        m.serialize_entry("buffer_records", &buffer)?;
        let messages = Seq(|| {
            p.view
                .markers
                .iter()
                .zip(&p.view.marker_ids)
                .map(|(m, &key)| MarkerMessage {
                    key,
                    value: p.view.string(m.message),
                })
        });
        m.serialize_entry("marker_api", &messages)?;
        // The regions of --kernel-rename, once each, by key.
        let regions: std::collections::BTreeMap<u64, &str> = p
            .view
            .dispatches
            .iter()
            .filter_map(|d| {
                crate::rename::region(p.view.trace, d).map(|r| (u64::from(d.region), r))
            })
            .collect();
        let external = Only {
            external: Some(Seq(|| {
                regions
                    .iter()
                    .map(|(&key, &value)| MarkerMessage { key, value })
            })),
            dimension_ids: None,
        };
        m.serialize_entry("correlation_id", &external)?;
        let dimensions = Only::<[u8; 0]> {
            external: None,
            dimension_ids: Some(EMPTY),
        };
        m.serialize_entry("counters", &dimensions)?;
        m.serialize_entry("pc_sample_instructions", &EMPTY)?;
        m.serialize_entry("pc_sample_comments", &EMPTY)?;
        m.serialize_entry("att_filenames", &EMPTY)?;
        m.serialize_entry(
            "code_object_snapshot_filenames",
            &code_objects::snapshot_filenames(p.view.trace),
        )?;
        m.end()
    }
}

/// A `kernel_symbols` entry.
#[derive(Serialize)]
struct SymbolOut<'v> {
    size: u64,
    kernel_id: u64,
    code_object_id: u64,
    kernel_name: &'v str,
    kernel_object: u64,
    kernarg_segment_size: u32,
    kernarg_segment_alignment: u32,
    group_segment_size: u32,
    private_segment_size: u32,
    sgpr_count: u32,
    arch_vgpr_count: u32,
    accum_vgpr_count: u32,
    kernel_code_entry_byte_offset: u64,
    kernel_address: Handle,
    formatted_kernel_name: &'v str,
    demangled_kernel_name: &'v str,
    truncated_kernel_name: &'v str,
}

impl SymbolOut<'_> {
    /// Upstream's first entry, kernel id 0, every name `"0"`.
    fn placeholder() -> Self {
        Self {
            size: size::KERNEL_SYMBOL,
            kernel_id: 0,
            code_object_id: 0,
            kernel_name: "0",
            kernel_object: 0,
            kernarg_segment_size: 0,
            kernarg_segment_alignment: 0,
            group_segment_size: 0,
            private_segment_size: 0,
            sgpr_count: 0,
            arch_vgpr_count: 0,
            accum_vgpr_count: 0,
            kernel_code_entry_byte_offset: 0,
            kernel_address: Handle::of(0),
            formatted_kernel_name: "0",
            demangled_kernel_name: "0",
            truncated_kernel_name: "0",
        }
    }
}

/// A host API record (HIP, HSA, marker); HIP adds `args` and `stream_id`.
#[derive(Serialize)]
struct ApiOut {
    size: u64,
    kind: u32,
    operation: u32,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    thread_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Vec<args::ArgOut>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retval: Option<args::Retval>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_id: Option<Handle>,
}

/// `dispatch_info`.
#[derive(Serialize)]
struct DispatchInfo {
    size: u64,
    agent_id: Handle,
    queue_id: Handle,
    kernel_id: u64,
    dispatch_id: u64,
    private_segment_size: u32,
    group_segment_size: u32,
    workgroup_size: Dim3,
    grid_size: Dim3,
}

impl DispatchInfo {
    fn of(d: &KernelDispatchRecord) -> Self {
        Self {
            size: size::DISPATCH_INFO,
            agent_id: Handle::agent(d.agent_node_id),
            queue_id: Handle::of(d.queue_id),
            kernel_id: d.kernel_id,
            dispatch_id: d.dispatch_id,
            private_segment_size: d.private_segment_size,
            group_segment_size: d.group_segment_size,
            workgroup_size: Dim3::of(d.workgroup),
            grid_size: Dim3::of(d.grid),
        }
    }
}

/// A `buffer_records.kernel_dispatch` record.
#[derive(Serialize)]
struct DispatchOut {
    size: u64,
    kind: u32,
    operation: u32,
    thread_id: u64,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    dispatch_info: DispatchInfo,
    stream_id: Handle,
}

/// A `buffer_records.memory_copy` record.
#[derive(Serialize)]
struct CopyOut {
    size: u64,
    kind: u32,
    operation: u32,
    thread_id: u64,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    dst_agent_id: Handle,
    src_agent_id: Handle,
    bytes: u64,
    stream_id: Handle,
}

/// A `buffer_records.memory_allocation` record.
#[derive(Serialize)]
struct AllocationOut {
    size: u64,
    kind: u32,
    operation: u32,
    thread_id: u64,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    agent_id: Handle,
    address: String,
    allocation_size: u64,
}

/// A `buffer_records.scratch_memory` record.
#[derive(Serialize)]
struct ScratchOut {
    size: u64,
    kind: u32,
    operation: u32,
    thread_id: u64,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    agent_id: Handle,
    queue_id: Handle,
    flags: u32,
    allocation_size: u64,
}

/// A `callback_records.counter_collection` entry.
#[derive(Serialize)]
struct CounterEntry<'g, 'v> {
    thread_id: u64,
    dispatch_data: DispatchData,
    records: CounterValues<'g, 'v>,
    stream_id: Handle,
}

/// `dispatch_data`.
#[derive(Serialize)]
struct DispatchData {
    size: u64,
    correlation_id: CorrelationId,
    start_timestamp: u64,
    end_timestamp: u64,
    dispatch_info: DispatchInfo,
}

/// `records`: `[{"counter_id": {"handle": ...}, "value": ...}]`.
struct CounterValues<'g, 'v>(&'g [&'v CounterRecord]);

#[derive(Serialize)]
struct CounterValue {
    counter_id: Handle,
    value: f64,
}

impl Serialize for CounterValues<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| CounterValue {
            counter_id: Handle::of(c.counter_id.into()),
            value: c.value,
        }))
    }
}

/// `callback_records`.
struct CallbackRecords<'p, 'a, 'v>(&'p Process<'a, 'v>);

impl Serialize for CallbackRecords<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(Some(1))?;
        let entries = Seq(|| p.counter_groups().map(|g| p.counter_entry(g)));
        m.serialize_entry("counter_collection", &entries)?;
        m.end()
    }
}

/// Whether `d` is a ROCTx API domain.
fn is_marker(d: ApiDomain) -> bool {
    !d.is_hip() && !d.is_hsa()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_the_functions_bare_name() {
        for (name, bare) in [
            ("axpb(float const*, float*, unsigned long)", "axpb"),
            ("void ns::kernel<float, 2>(float*, int)", "kernel"),
            ("ns::inner::k<ns::T<int>>()", "k"),
            ("__amd_rocclr_copyBuffer", "__amd_rocclr_copyBuffer"),
            ("_Z4axpbPKfPfm", "_Z4axpbPKfPfm"),
            ("", ""),
        ] {
            assert_eq!(truncated(name), bare, "{name}");
        }
    }

    #[test]
    fn a_capability_word_splits_into_its_fields() {
        // HotPluggable, WatchPointsTotalBits = 0b1010, DoorbellType = 2, ASICRevision = 3.
        let word = 1 | (0b1010 << 8) | (2 << 12) | (3 << 22);
        let json = serde_json::to_value(Capability(word)).unwrap();
        assert_eq!(json["HotPluggable"], 1);
        assert_eq!(json["HSAMMUPresent"], 0);
        assert_eq!(json["WatchPointsTotalBits"], 10);
        assert_eq!(json["DoorbellType"], 2);
        assert_eq!(json["ASICRevision"], 3);
        assert!(json.get("Reserved").is_none());
        assert_eq!(json.as_object().unwrap().len(), 23);
    }

    #[test]
    fn hand_written_api_records_are_what_serde_writes() {
        let call = |correlation_id, start, end, thread_id, domain: ApiDomain| ApiRecord {
            correlation_id,
            start,
            end,
            thread_id,
            operation: 3,
            domain: domain as u8,
            reserved: 0,
        };
        let calls = vec![
            call(1, 10, 100, 7, ApiDomain::HipRuntime),
            call(2, 20, 30, 7, ApiDomain::HsaCore),
            call(1, 40, 50, 7, ApiDomain::HsaAmdExt),
            call(u64::MAX - 1, 60, 60, u32::MAX, ApiDomain::HipCompiler),
            call(5, 70, 80, 9, ApiDomain::MarkerCore),
            call(6, 90, 95, 9, ApiDomain::HipRuntime),
        ];
        let mut trace = trace_records::ProcessTrace::default();
        trace.strings.insert(1, "hipMalloc".into());
        trace.operations.insert((ApiDomain::HipRuntime as u8, 3), 1);
        trace.api_args.insert(
            trace_records::ApiArgs::key(&calls[0]),
            trace_records::ApiArgs {
                header: ApiArgsHeader {
                    rax: 0,
                    int_words: 2,
                    sse_words: 0,
                    stack_words: 0,
                    strings: 0,
                    reserved: 0,
                },
                words: vec![0x7f00_1000, 4096],
                strings: Vec::new(),
            },
        );
        trace.dispatches.push(KernelDispatchRecord {
            correlation_id: 6,
            stream_id: 0x55,
            ..Default::default()
        });
        trace.api = calls.into();
        let labels = trace_records::agents::AgentLabels::default();
        let view = ProcessView::new(&trace, &labels);
        let (node, run, options) = (Node::default(), RunInfo::default(), JsonOptions::default());
        let p = Process::new(&view, &node, &run, &options);
        let mut texts = Vec::new();
        for a in view.api() {
            let mut text = Vec::new();
            p.api_text(&mut text, &a).unwrap();
            let mut want = Vec::new();
            value(&mut want, &p.api_record(&a)).unwrap();
            let text = String::from_utf8(text).unwrap();
            assert_eq!(text, String::from_utf8(want).unwrap());
            texts.push(text);
        }
        assert_eq!(texts.len(), 6);
        assert!(texts[0].contains("\"args\": [\n{"), "{}", texts[0]);
        assert!(texts[0].contains("\"retval\": {"), "{}", texts[0]);
        assert!(texts.iter().any(|t| t.contains("\"handle\": 85")));
        assert!(texts.iter().any(|t| t.contains("\"args\": [],")));
    }
}
