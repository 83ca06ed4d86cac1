//! One process's rows, each inserted after the rows it refers to: strings, node, process,
//! threads, agents, queues, streams, counters, code object and kernel symbols; then every
//! event (HIP calls, HSA calls, markers, dispatches, copies); then the regions and samples,
//! kernel dispatches, counter values and memory copies that name them. Each table is filled
//! in id order, so every insert appends.

use super::batch::{Batch, Cell};
use super::guid;
use crate::view::{ProcessView, RunInfo};
use rusqlite::{Connection, Statement, params};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use trace_records::agents::{Agent, AgentKind, GpuProperties};
use trace_records::record::*;

/// Facts about the machine, read once per file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Host {
    /// `/etc/machine-id` (the host name when there is none).
    pub machine_id: String,
    /// `uname -s`.
    pub system_name: String,
    /// The host name the kernel reports.
    pub hostname: String,
    /// `uname -r`.
    pub release: String,
    /// `uname -v`.
    pub version: String,
    /// `uname -m`.
    pub hardware_name: String,
    /// The NIS domain name.
    pub domain_name: String,
}

impl Host {
    /// Reads the machine's identity from `/etc` and `/proc` (no system calls needed).
    pub(crate) fn read(run: &RunInfo) -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        let hostname = match read("/proc/sys/kernel/hostname") {
            h if h.is_empty() => run.hostname.clone(),
            h => h,
        };
        let mut machine_id = read("/etc/machine-id");
        if machine_id.is_empty() {
            machine_id = read("/var/lib/dbus/machine-id");
        }
        if machine_id.is_empty() {
            machine_id = if run.hostname.is_empty() {
                hostname.clone()
            } else {
                run.hostname.clone()
            };
        }
        Self {
            machine_id,
            system_name: match read("/proc/sys/kernel/ostype") {
                s if s.is_empty() => "Linux".to_owned(),
                s => s,
            },
            hostname,
            release: read("/proc/sys/kernel/osrelease"),
            version: read("/proc/sys/kernel/version"),
            hardware_name: std::env::consts::ARCH.to_owned(),
            domain_name: read("/proc/sys/kernel/domainname"),
        }
    }
}

/// An id or timestamp as SQLite stores it: the same 64 bits, so a handle above `i64::MAX`
/// stays distinct and joins with every column holding it.
fn int(v: u64) -> i64 {
    v as i64
}

/// The category of markers (push/pop and start/stop ranges and marks alike).
const MARKER_CATEGORY: &str = "MARKER_CORE_RANGE_API";
/// The category of kernel dispatches.
const DISPATCH_CATEGORY: &str = "KERNEL_DISPATCH";
/// The category of memory copies.
const COPY_CATEGORY: &str = "MEMORY_COPY";
/// The category of memory allocations.
const ALLOCATION_CATEGORY: &str = "MEMORY_ALLOCATION";
/// The category of scratch-memory events.
const SCRATCH_CATEGORY: &str = "SCRATCH_MEMORY";

/// `rocpd_memory_allocate`'s `type` and `level` of an allocation record: `ALLOCATE` is
/// `ALLOC`, the VMEM operations are `VIRTUAL`, the others `REAL`.
fn allocation_kind(operation: u8) -> (&'static str, &'static str) {
    let op = AllocationOperation::from_u8(operation);
    let freed = op.is_some_and(|o| !o.is_allocation());
    let virtual_ = op.is_some_and(AllocationOperation::is_vmem);
    (
        if freed { "FREE" } else { "ALLOC" },
        if virtual_ { "VIRTUAL" } else { "REAL" },
    )
}

/// `rocpd_memory_allocate`'s `type` of a scratch record (its level is `SCRATCH`).
fn scratch_kind(operation: u8) -> &'static str {
    match ScratchOperation::from_u8(operation) {
        Some(ScratchOperation::Free) => "FREE",
        Some(ScratchOperation::AsyncReclaim) => "RECLAIM",
        Some(ScratchOperation::Alloc) | None => "ALLOC",
    }
}

/// The region name of a marker.
fn marker_name(kind: u8) -> &'static str {
    match MarkerKind::from_u8(kind) {
        Some(MarkerKind::Mark) => "roctxMarkA",
        Some(MarkerKind::ProcessRange) => "roctxProcessRangeA",
        Some(MarkerKind::ThreadRange) | None => "roctxThreadRangeA",
    }
}

/// Which pass writes an API call: HIP first, then HSA; marker-domain calls are written from
/// the marker records instead.
fn api_pass(domain: ApiDomain) -> Option<usize> {
    if domain.is_hip() {
        Some(0)
    } else if domain.is_hsa() {
        Some(1)
    } else {
        None
    }
}

/// A value per API operation, by domain and operation id (a lookup per call without hashing).
#[derive(Default)]
struct OpTable(Vec<Vec<Option<i64>>>);

impl OpTable {
    fn get(&self, r: &ApiRecord) -> Option<i64> {
        self.0
            .get(usize::from(r.domain))?
            .get(usize::from(r.operation))
            .copied()
            .flatten()
    }

    fn set(&mut self, r: &ApiRecord, value: i64) {
        let (d, op) = (usize::from(r.domain), usize::from(r.operation));
        if self.0.len() <= d {
            self.0.resize(d + 1, Vec::new());
        }
        if self.0[d].len() <= op {
            self.0[d].resize(op + 1, None);
        }
        self.0[d][op] = Some(value);
    }
}

/// The string table: every string the rows name, ids 1.. in byte order.
struct Strings {
    ids: HashMap<String, i64>,
    empty: i64,
}

impl Strings {
    fn id(&self, s: &str) -> i64 {
        self.ids.get(s).copied().unwrap_or(self.empty)
    }
}

/// Every string the process's rows refer to (and, as upstream, the names of every operation
/// the log defines and of the agents), sorted byte-wise.
fn collect_strings<'a>(v: &ProcessView<'a>) -> BTreeSet<Cow<'a, str>> {
    let mut set: BTreeSet<Cow<'a, str>> = BTreeSet::new();
    set.insert("".into());
    for a in v.agents() {
        for s in [&a.name, &a.vendor_name, &a.product_name, &a.model_name] {
            set.insert(s.as_str().into());
        }
    }
    for &name in v.trace.operations.values() {
        set.insert(v.string(name).into());
    }
    let mut seen = OpTable::default();
    for a in v.api() {
        if api_pass(a.domain).is_some() && seen.get(&a.record).is_none() {
            seen.set(&a.record, 0);
            set.insert(a.domain.csv_name().into());
            set.insert(v.api_name(&a));
        }
    }
    if !v.markers.is_empty() {
        set.insert(MARKER_CATEGORY.into());
    }
    for m in &v.markers {
        set.insert(marker_name(m.kind).into());
        set.insert(v.string(m.message).into());
    }
    if !v.dispatches.is_empty() {
        set.insert(DISPATCH_CATEGORY.into());
    }
    for d in &v.dispatches {
        if let Some(region) = crate::rename::region(v.trace, d) {
            set.insert(region.into());
        }
    }
    if !v.copies.is_empty() {
        set.insert(COPY_CATEGORY.into());
    }
    for c in &v.copies {
        set.insert(CopyDirection::label(c.direction).into());
    }
    if !v.trace.allocations.is_empty() {
        set.insert(ALLOCATION_CATEGORY.into());
    }
    if !v.trace.scratch.is_empty() {
        set.insert(SCRATCH_CATEGORY.into());
    }
    for s in &v.trace.symbols {
        set.insert(v.string(s.name).into());
    }
    for c in &v.counters {
        set.insert(v.string(c.name).into());
    }
    set
}

/// Writes `v`'s rows into the tables ending in `suffix`.
pub(crate) fn write_process(
    conn: &Connection,
    suffix: &str,
    v: &ProcessView<'_>,
    run: &RunInfo,
    host: &Host,
) -> rusqlite::Result<()> {
    let table = |base: &str| format!("\"{base}{suffix}\"");
    let (node_hash, nid) = guid::node_hash_and_id(&host.machine_id);
    let pid = i64::from(v.trace.pid);
    let ppid = i64::from(v.trace.ppid);

    // Strings.
    let strings = {
        let set = collect_strings(v);
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"string\") VALUES (?1, ?2)",
            table("rocpd_string")
        ))?;
        let mut ids = HashMap::with_capacity(set.len());
        for (k, s) in set.into_iter().enumerate() {
            let id = k as i64 + 1;
            insert.execute(params![id, s.as_ref()])?;
            ids.insert(s.into_owned(), id);
        }
        let empty = ids[""];
        Strings { ids, empty }
    };

    // Node and process.
    conn.execute(
        &format!(
            "INSERT INTO {} (\"id\", \"hash\", \"machine_id\", \"system_name\", \"hostname\", \
             \"release\", \"version\", \"hardware_name\", \"domain_name\") \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            table("rocpd_info_node")
        ),
        params![
            nid,
            node_hash,
            host.machine_id,
            host.system_name,
            if run.hostname.is_empty() {
                &host.hostname
            } else {
                &run.hostname
            },
            host.release,
            host.version,
            host.hardware_name,
            host.domain_name,
        ],
    )?;
    let (init, fini) = process_span(v);
    conn.execute(
        &format!(
            "INSERT INTO {} (\"id\", \"nid\", \"ppid\", \"pid\", \"init\", \"fini\", \"start\", \
             \"end\", \"command\") VALUES (?1, ?2, ?3, ?1, ?4, ?5, ?4, ?5, ?6)",
            table("rocpd_info_process")
        ),
        params![pid, nid, ppid, int(init), int(fini), run.command.join(" ")],
    )?;

    // Threads.
    {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"ppid\", \"pid\", \"tid\") \
             VALUES (?1, ?2, ?3, ?4, ?1)",
            table("rocpd_info_thread")
        ))?;
        for &tid in &v.threads {
            insert.execute(params![tid, nid, ppid, pid])?;
        }
    }

    // Agents: every published one, then a bare row for any node a record names that the
    // published agents lack (so that every reference resolves).
    {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"type\", \"absolute_index\", \
             \"logical_index\", \"type_index\", \"uuid\", \"name\", \"model_name\", \
             \"vendor_name\", \"product_name\", \"user_name\", \"extdata\") \
             VALUES (?1, ?2, ?3, ?4, ?1, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12)",
            table("rocpd_info_agent")
        ))?;
        let mut known = HashSet::new();
        for a in v.agents() {
            if !known.insert(a.node_id) {
                continue;
            }
            insert.execute(params![
                a.node_id,
                nid,
                pid,
                a.kind.csv_name(),
                a.logical_node_id,
                a.logical_node_type_id,
                a.gpu.as_ref().map_or(0, |g| g.device_id),
                a.name,
                a.model_name,
                a.vendor_name,
                a.product_name,
                agent_extdata(a),
            ])?;
        }
        let named = v
            .dispatches
            .iter()
            .map(|d| d.agent_node_id)
            .chain(v.copies.iter().flat_map(|c| [c.src_node_id, c.dst_node_id]))
            .chain(v.counters.iter().map(|c| c.agent_node_id))
            .chain(
                v.trace
                    .allocations
                    .iter()
                    .filter(|a| a.has_agent != 0)
                    .map(|a| a.agent_node_id),
            )
            .chain(v.trace.scratch.iter().map(|s| s.agent_node_id));
        let mut bare = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"absolute_index\") \
             VALUES (?1, ?2, ?3, ?1)",
            table("rocpd_info_agent")
        ))?;
        for node in named {
            if known.insert(node) {
                bare.execute(params![node, nid, pid])?;
            }
        }
    }

    // Queues and streams: id 0 is always there ("Default …"), the others are numbered in the
    // order they are first used.
    for (base, default, prefix, ids) in [
        (
            "rocpd_info_queue",
            "Default Queue",
            "Queue",
            v.dispatches
                .iter()
                .map(|d| d.queue_id)
                .chain(v.trace.scratch.iter().map(|s| s.queue_id))
                .collect::<Vec<_>>(),
        ),
        (
            "rocpd_info_stream",
            "Default Stream",
            "Stream",
            v.dispatches
                .iter()
                .map(|d| d.stream_id)
                .chain(v.copies.iter().map(|c| c.stream_id))
                .collect(),
        ),
    ] {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"name\") VALUES (?1, ?2, ?3, ?4)",
            table(base)
        ))?;
        insert.execute(params![0i64, nid, pid, default])?;
        let mut seen = HashSet::from([0u64]);
        for id in ids {
            if seen.insert(id) {
                let name = format!("{prefix} {}", seen.len() - 2);
                insert.execute(params![int(id), nid, pid, name])?;
            }
        }
    }

    // Counters: one row per counter id (the first record of it names its agent).
    {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"agent_id\", \"target_arch\", \"name\", \
             \"symbol\", \"component\", \"value_type\", \"block\", \"is_constant\", \
             \"is_derived\", \"extdata\") \
             VALUES (?1, ?2, ?3, ?4, 'GPU', ?5, ?5, 'rocm', 'ABS', ?6, 0, ?7, ?8)",
            table("rocpd_info_pmc")
        ))?;
        let mut seen = HashSet::new();
        for c in &v.counters {
            if !seen.insert(c.counter_id) {
                continue;
            }
            let name = v.string(c.name);
            let block = v
                .trace
                .docs
                .counter_setups
                .iter()
                .flat_map(|s| &s.events)
                .find(|e| e.name == name)
                .map(|e| e.block.as_str());
            let extdata = v
                .agent(c.agent_node_id)
                .map_or_else(|| "{}".to_owned(), agent_extdata);
            insert.execute(params![
                c.counter_id,
                nid,
                pid,
                c.agent_node_id,
                name,
                block,
                block.is_none(),
                extdata,
            ])?;
        }
    }

    // Kernel symbols, under one code object standing for the process's code (the records do
    // not keep code objects), plus a bare symbol for any kernel id a dispatch names that the
    // log never defined.
    if !v.trace.symbols.is_empty() || !v.dispatches.is_empty() {
        let agent = v
            .dispatches
            .first()
            .map(|d| d.agent_node_id)
            .or_else(|| v.agents().iter().find(|a| a.is_gpu()).map(|a| a.node_id));
        conn.execute(
            &format!(
                "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"agent_id\") VALUES (1, ?1, ?2, ?3)",
                table("rocpd_info_code_object")
            ),
            params![nid, pid, agent],
        )?;
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"code_object_id\", \"kernel_name\", \
             \"display_name\", \"kernel_object\", \"kernarg_segment_size\", \
             \"group_segment_size\", \"private_segment_size\", \"sgpr_count\", \
             \"arch_vgpr_count\", \"accum_vgpr_count\", \"extdata\") \
             VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            table("rocpd_info_kernel_symbol")
        ))?;
        let mut seen = HashSet::new();
        for s in &v.trace.symbols {
            if !seen.insert(s.kernel_id) {
                continue;
            }
            let name = v.string(s.name);
            let extdata = serde_json::json!({
                "kernel_id": s.kernel_id,
                "code_object_id": 1,
                "kernel_name": name,
                "formatted_kernel_name": name,
                "kernel_object": s.kernel_object,
                "kernarg_segment_size": s.kernarg_segment_size,
                "group_segment_size": s.group_segment_size,
                "private_segment_size": s.private_segment_size,
                "sgpr_count": s.sgpr_count,
                "arch_vgpr_count": s.arch_vgpr_count,
                "accum_vgpr_count": s.accum_vgpr_count,
                "kernel_address": { "handle": s.kernel_object },
            });
            insert.execute(params![
                int(s.kernel_id),
                nid,
                pid,
                name,
                int(s.kernel_object),
                s.kernarg_segment_size,
                s.group_segment_size,
                s.private_segment_size,
                s.sgpr_count,
                s.arch_vgpr_count,
                s.accum_vgpr_count,
                extdata.to_string(),
            ])?;
        }
        let mut bare = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"code_object_id\", \"kernel_name\", \
             \"display_name\", \"extdata\") VALUES (?1, ?2, ?3, 1, '', '', ?4)",
            table("rocpd_info_kernel_symbol")
        ))?;
        for d in &v.dispatches {
            if seen.insert(d.kernel_id) {
                let extdata = serde_json::json!({ "kernel_id": d.kernel_id }).to_string();
                bare.execute(params![int(d.kernel_id), nid, pid, extdata])?;
            }
        }
    }

    // Events, numbered in write order: HIP calls, HSA calls, markers, dispatches, copies.
    // Then the rows that name them, each table in id order.
    let batch = |base: &str, columns: &str, row: &str| Batch::new(conn, &table(base), columns, row);
    let mut events = EventRows {
        rows: batch(
            "rocpd_event",
            "\"category_id\", \"stack_id\", \"parent_stack_id\", \"correlation_id\"",
            "(?, ?, ?, 0)",
        )?,
        next: 1,
    };

    // Host API calls: HIP, then HSA, each in time order.
    let categories: Vec<i64> = (0..=u8::MAX)
        .map(|d| ApiDomain::from_u8(d).map_or(strings.empty, |d| strings.id(d.csv_name())))
        .collect();
    let mut hip_calls = 0;
    for pass in 0..2 {
        for a in v.api().filter(|a| api_pass(a.domain) == Some(pass)) {
            events.push(categories[usize::from(a.domain as u8)], a.id, a.ancestor)?;
            hip_calls += i64::from(pass == 0);
        }
    }

    // Markers: their ids (as regions or samples) are the view's, in the calls' id space; the
    // message goes in the event.
    let marker_category = strings.id(MARKER_CATEGORY);
    events.rows.flush()?;
    let first_marker_event = events.next;
    {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"category_id\", \"stack_id\", \"parent_stack_id\", \
             \"correlation_id\", \"extdata\") VALUES (?1, ?2, ?3, 0, 0, ?4)",
            table("rocpd_event")
        ))?;
        for (k, m) in v.markers.iter().enumerate() {
            let extdata = serde_json::json!({ "message": v.string(m.message) }).to_string();
            insert.execute(params![
                first_marker_event + k as i64,
                marker_category,
                int(v.marker_ids[k]),
                extdata
            ])?;
        }
    }
    events.next += v.markers.len() as i64;

    // Dispatches and copies: the stack id is the id of the call that issued them.
    let stack_of = |correlation_id: u64| {
        v.issuing_call(correlation_id)
            .map_or(correlation_id, |a| a.id)
    };
    let mut dispatch_events: HashMap<u64, i64> = HashMap::with_capacity(v.dispatches.len());
    let mut dispatches: Vec<(&KernelDispatchRecord, i64)> = Vec::with_capacity(v.dispatches.len());
    let category = strings.id(DISPATCH_CATEGORY);
    for &d in &v.dispatches {
        if dispatch_events.contains_key(&d.dispatch_id) {
            continue; // the first record of a dispatch id stands
        }
        let stack = stack_of(d.correlation_id);
        let id = events.push(category, stack, stack)?;
        dispatch_events.insert(d.dispatch_id, id);
        dispatches.push((d, id));
    }
    let category = strings.id(COPY_CATEGORY);
    let first_copy_event = events.next;
    for c in &v.copies {
        let stack = stack_of(c.correlation_id);
        events.push(category, stack, stack)?;
    }
    let category = strings.id(ALLOCATION_CATEGORY);
    let first_allocation_event = events.next;
    for a in &v.trace.allocations {
        let stack = stack_of(a.correlation_id);
        events.push(category, stack, stack)?;
    }
    let category = strings.id(SCRATCH_CATEGORY);
    let first_scratch_event = events.next;
    for s in &v.trace.scratch {
        let stack = stack_of(s.correlation_id);
        events.push(category, stack, stack)?;
    }
    events.finish(conn, &table("rocpd_event"))?;

    // Regions and samples of the API calls, in id (time) order, then of the markers.
    let mut spans = Spans {
        regions: batch(
            "rocpd_region",
            "\"id\", \"nid\", \"pid\", \"tid\", \"start\", \"end\", \"name_id\", \"event_id\"",
            &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?)"),
        )?,
        samples: batch(
            "rocpd_sample",
            "\"id\", \"track_id\", \"timestamp\", \"event_id\"",
            "(?, ?, ?, ?)",
        )?,
        track: conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"tid\", \"name_id\") \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            table("rocpd_track")
        ))?,
        tracks: HashMap::new(),
        nid,
        pid,
    };
    let mut names = OpTable::default();
    let (mut hip_seen, mut hsa_seen) = (0i64, 0i64);
    for a in v.api() {
        let event = match api_pass(a.domain) {
            Some(0) => {
                hip_seen += 1;
                hip_seen
            }
            Some(_) => {
                hsa_seen += 1;
                hip_calls + hsa_seen
            }
            None => continue,
        };
        let r = &a.record;
        let name = match names.get(r) {
            Some(id) => id,
            None => {
                let id = strings.id(&v.api_name(&a));
                names.set(r, id);
                id
            }
        };
        let category = categories[usize::from(a.domain as u8)];
        spans.add(
            int(a.id),
            r.thread_id,
            (r.start, r.end),
            name,
            category,
            event,
        )?;
    }
    for (k, m) in v.markers.iter().enumerate() {
        let id = int(v.marker_ids[k]);
        let name = strings.id(marker_name(m.kind));
        let event = first_marker_event + k as i64;
        spans.add(
            id,
            m.thread_id,
            (m.start, m.end),
            name,
            marker_category,
            event,
        )?;
    }
    spans.regions.flush()?;
    spans.samples.flush()?;

    // Kernel dispatches.
    let mut rows = batch(
        "rocpd_kernel_dispatch",
        "\"id\", \"nid\", \"pid\", \"tid\", \"agent_id\", \"kernel_id\", \"dispatch_id\", \
         \"queue_id\", \"stream_id\", \"start\", \"end\", \"private_segment_size\", \
         \"group_segment_size\", \"workgroup_size_x\", \"workgroup_size_y\", \
         \"workgroup_size_z\", \"grid_size_x\", \"grid_size_y\", \"grid_size_z\", \
         \"region_name_id\", \"event_id\"",
        &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    )?;
    for (d, event) in dispatches {
        rows.push(&[
            int(d.dispatch_id).into(),
            d.thread_id.into(),
            d.agent_node_id.into(),
            int(d.kernel_id).into(),
            int(d.dispatch_id).into(),
            int(d.queue_id).into(),
            int(d.stream_id).into(),
            int(d.start).into(),
            int(d.end).into(),
            d.private_segment_size.into(),
            d.group_segment_size.into(),
            d.workgroup[0].into(),
            d.workgroup[1].into(),
            d.workgroup[2].into(),
            d.grid[0].into(),
            d.grid[1].into(),
            d.grid[2].into(),
            // --kernel-rename's name (upstream's region name), else "".
            crate::rename::region(v.trace, d)
                .map_or(strings.empty, |r| strings.id(r))
                .into(),
            event.into(),
        ])?;
    }
    rows.flush()?;

    // Counter values: one row per dispatch and counter, on the dispatch's event.
    let mut rows = batch(
        "rocpd_pmc_event",
        "\"id\", \"event_id\", \"pmc_id\", \"value\"",
        "(?, ?, ?, ?)",
    )?;
    for (k, c) in v.counters.iter().enumerate() {
        let event = dispatch_events.get(&c.dispatch_id).copied();
        rows.push(&[
            (k as i64 + 1).into(),
            event.into(),
            c.counter_id.into(),
            Cell::Real(c.value),
        ])?;
    }
    rows.flush()?;

    // Memory copies, numbered 1.. in time order.
    let mut rows = batch(
        "rocpd_memory_copy",
        "\"id\", \"nid\", \"pid\", \"tid\", \"start\", \"end\", \"name_id\", \
         \"dst_agent_id\", \"src_agent_id\", \"size\", \"stream_id\", \"event_id\"",
        &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    )?;
    for (k, c) in v.copies.iter().enumerate() {
        rows.push(&[
            (k as i64 + 1).into(),
            c.thread_id.into(),
            int(c.start).into(),
            int(c.end).into(),
            strings.id(CopyDirection::label(c.direction)).into(),
            c.dst_node_id.into(),
            c.src_node_id.into(),
            int(c.bytes).into(),
            int(c.stream_id).into(),
            (first_copy_event + k as i64).into(),
        ])?;
    }
    rows.flush()?;

    // Memory allocations, then scratch events, numbered 1.. in that order (each in time
    // order).
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"tid\", \"agent_id\", \"type\", \"level\", \
         \"start\", \"end\", \"address\", \"size\", \"queue_id\", \"event_id\", \"extdata\") \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        table("rocpd_memory_allocate")
    ))?;
    let mut id = 0i64;
    for (k, a) in v.trace.allocations.iter().enumerate() {
        id += 1;
        let (kind, level) = allocation_kind(a.operation);
        let agent = (a.has_agent != 0).then_some(a.agent_node_id);
        insert.execute(params![
            id,
            nid,
            pid,
            a.thread_id,
            agent,
            kind,
            level,
            int(a.start),
            int(a.end),
            int(a.address),
            int(a.size),
            Option::<i64>::None,
            first_allocation_event + k as i64,
            "{}",
        ])?;
    }
    for (k, s) in v.trace.scratch.iter().enumerate() {
        id += 1;
        let extdata = serde_json::json!({ "flags": s.flags }).to_string();
        insert.execute(params![
            id,
            nid,
            pid,
            s.thread_id,
            s.agent_node_id,
            scratch_kind(s.operation),
            "SCRATCH",
            int(s.start),
            int(s.end),
            0i64,
            int(s.size),
            int(s.queue_id),
            first_scratch_event + k as i64,
            extdata,
        ])?;
    }
    Ok(())
}

/// The process's start and end: from its log's creation (or its first record, if earlier)
/// to its last record.
pub(crate) fn process_span(v: &ProcessView<'_>) -> (u64, u64) {
    let created = v.trace.created_ns;
    let init = if created > 0 {
        created.min(v.span.0)
    } else {
        v.span.0
    };
    (init, v.span.1.max(init))
}

/// Events, numbered 1.. in the order they are pushed.
///
/// The rows are appended without their id: SQLite numbers a fresh table's rows 1.. in
/// insertion order, which is the numbering wanted (and cheaper than checking each given id
/// for uniqueness); [`EventRows::finish`] checks the two agree.
struct EventRows<'c> {
    rows: Batch<'c>,
    next: i64,
}

impl EventRows<'_> {
    /// Buffers the next event; returns its id.
    fn push(&mut self, category: i64, stack: u64, parent: u64) -> rusqlite::Result<i64> {
        let id = self.next;
        self.next += 1;
        self.rows
            .push(&[category.into(), int(stack).into(), int(parent).into()])?;
        Ok(id)
    }

    /// Inserts what is buffered and checks that the last event got the id this numbering
    /// gave it.
    fn finish(&mut self, conn: &Connection, table: &str) -> rusqlite::Result<()> {
        self.rows.flush()?;
        let last: Option<i64> =
            conn.query_row(&format!("SELECT MAX(\"id\") FROM {table}"), [], |r| {
                r.get(0)
            })?;
        if last.unwrap_or(0) != self.next - 1 {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERNAL),
                Some(format!(
                    "internal error: {table} numbered its rows up to {last:?}, not {}",
                    self.next - 1
                )),
            ));
        }
        Ok(())
    }
}

/// The regions and samples of calls and markers, and the tracks the samples lie on.
struct Spans<'c> {
    regions: Batch<'c>,
    samples: Batch<'c>,
    track: Statement<'c>,
    tracks: HashMap<(u32, i64), i64>,
    nid: i64,
    pid: i64,
}

impl Spans<'_> {
    /// Buffers the region of a call (`start != end`) or, for a zero-length one, a sample on
    /// the track named after its category on its thread.
    fn add(
        &mut self,
        id: i64,
        tid: u32,
        (start, end): (u64, u64),
        name: i64,
        category: i64,
        event: i64,
    ) -> rusqlite::Result<()> {
        if start != end {
            return self.regions.push(&[
                id.into(),
                tid.into(),
                int(start).into(),
                int(end).into(),
                name.into(),
                event.into(),
            ]);
        }
        let track = match self.tracks.get(&(tid, category)) {
            Some(&t) => t,
            None => {
                let t = self.tracks.len() as i64 + 1;
                self.track
                    .execute(params![t, self.nid, self.pid, tid, category])?;
                self.tracks.insert((tid, category), t);
                t
            }
        };
        self.samples
            .push(&[id.into(), track.into(), int(start).into(), event.into()])
    }
}

/// The fields of a node's capability word, low bit first, as readers name them.
const CAPABILITY_BITS: [(&str, u32); 25] = [
    ("HotPluggable", 1),
    ("HSAMMUPresent", 1),
    ("SharedWithGraphics", 1),
    ("QueueSizePowerOfTwo", 1),
    ("QueueSize32bit", 1),
    ("QueueIdleEvent", 1),
    ("VALimit", 1),
    ("WatchPointsSupported", 1),
    ("WatchPointsTotalBits", 4),
    ("DoorbellType", 2),
    ("AQLQueueDoubleMap", 1),
    ("DebugTrapSupported", 1),
    ("WaveLaunchTrapOverrideSupported", 1),
    ("WaveLaunchModeSupported", 1),
    ("PreciseMemoryOperationsSupported", 1),
    ("DEPRECATED_SRAM_EDCSupport", 1),
    ("Mem_EDCSupport", 1),
    ("RASEventNotify", 1),
    ("ASICRevision", 4),
    ("SRAM_EDCSupport", 1),
    ("SVMAPISupported", 1),
    ("CoherentHostAccess", 1),
    ("DebugSupportedFirmware", 1),
    ("PreciseALUOperationsSupported", 1),
    ("PerQueueResetSupported", 1),
];

/// Splits a packed word into named fields of the given widths, low bit first.
fn fields(word: u32, layout: &[(&str, u32)]) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let mut shift = 0;
    for &(name, width) in layout {
        let mask = if width >= 32 {
            u32::MAX
        } else {
            (1 << width) - 1
        };
        out.insert(name.to_owned(), ((word >> shift) & mask).into());
        shift += width;
    }
    out
}

/// An agent's `extdata`: its properties under rocprofiler's agent field names (readers take
/// `agent_info` columns from them).
fn agent_extdata(a: &Agent) -> String {
    let none = GpuProperties::default();
    let g = a.gpu.as_ref().unwrap_or(&none);
    use serde_json::Value;
    let dim = |d: [u32; 3]| serde_json::json!({ "x": d[0], "y": d[1], "z": d[2] });
    let fields_of: Vec<(&str, Value)> = vec![
        (
            "type",
            (if a.kind == AgentKind::Cpu { 1 } else { 2 }).into(),
        ),
        ("node_id", a.node_id.into()),
        ("logical_node_id", a.logical_node_id.into()),
        ("logical_node_type_id", a.logical_node_type_id.into()),
        ("cpu_cores_count", a.cpu_cores_count.into()),
        ("simd_count", g.simd_count.into()),
        ("cpu_core_id_base", 0u32.into()),
        ("simd_id_base", 0u32.into()),
        ("max_waves_per_simd", g.max_waves_per_simd.into()),
        ("lds_size_in_kb", g.lds_size_in_kb.into()),
        ("gds_size_in_kb", g.gds_size_in_kb.into()),
        ("num_gws", g.num_gws.into()),
        ("wave_front_size", g.wave_front_size.into()),
        ("num_xcc", g.num_xcc.into()),
        ("cu_count", g.cu_count.into()),
        ("array_count", g.array_count.into()),
        ("num_shader_banks", g.num_shader_banks.into()),
        ("simd_arrays_per_engine", g.simd_arrays_per_engine.into()),
        ("cu_per_simd_array", g.cu_per_simd_array.into()),
        ("simd_per_cu", g.simd_per_cu.into()),
        ("max_slots_scratch_cu", g.max_slots_scratch_cu.into()),
        ("gfx_target_version", g.gfx_target_version.into()),
        ("vendor_id", g.vendor_id.into()),
        ("device_id", g.device_id.into()),
        ("location_id", g.location_id.into()),
        ("domain", g.domain.into()),
        ("drm_render_minor", 0u32.into()),
        ("num_sdma_engines", g.num_sdma_engines.into()),
        ("num_sdma_xgmi_engines", g.num_sdma_xgmi_engines.into()),
        (
            "num_sdma_queues_per_engine",
            g.num_sdma_queues_per_engine.into(),
        ),
        ("num_cp_queues", g.num_cp_queues.into()),
        ("max_engine_clk_ccompute", g.max_engine_clk_ccompute.into()),
        ("max_engine_clk_fcompute", g.max_engine_clk_fcompute.into()),
        (
            "sdma_fw_version",
            fields(
                g.sdma_fw_version,
                &[("uCodeSDMA", 10), ("uCodeRes", 10), ("Reserved", 12)],
            )
            .into(),
        ),
        (
            "fw_version",
            fields(
                g.fw_version,
                &[("uCode", 10), ("Major", 6), ("Minor", 8), ("Stepping", 8)],
            )
            .into(),
        ),
        ("capability", fields(g.capability, &CAPABILITY_BITS).into()),
        ("cu_per_engine", g.cu_per_engine.into()),
        ("max_waves_per_cu", g.max_waves_per_cu.into()),
        ("family_id", g.family_id.into()),
        ("workgroup_max_size", g.workgroup_max_size.into()),
        ("grid_max_size", g.grid_max_size.into()),
        ("local_mem_size", g.local_mem_size.into()),
        ("hive_id", g.hive_id.into()),
        ("gpu_id", g.gpu_id.into()),
        ("workgroup_max_dim", dim(g.workgroup_max_dim)),
        ("grid_max_dim", dim(g.grid_max_dim)),
        ("name", a.name.as_str().into()),
        ("vendor_name", a.vendor_name.as_str().into()),
        ("product_name", a.product_name.as_str().into()),
        ("model_name", a.model_name.as_str().into()),
        // The whole record as this project writes it, so a merge reads the agent back exactly
        // (readers of rocprofv3's keys ignore a key they do not know).
        (
            crate::rocpd_read::AGENT_KEY,
            serde_json::to_value(a).unwrap_or(Value::Null),
        ),
    ];
    let map: serde_json::Map<String, Value> = fields_of
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    Value::Object(map).to_string()
}
