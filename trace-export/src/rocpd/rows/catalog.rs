//! The catalog of one process, the rows its events refer to, each table in id order: the
//! string table, the node and the process, threads, agents, queues and streams, counters, and
//! the code objects with their kernel symbols.

use super::context::{
    ALLOCATION_CATEGORY, COPY_CATEGORY, DISPATCH_CATEGORY, Host, MARKER_CATEGORY, OpTable, Process,
    SCRATCH_CATEGORY, Strings, api_pass, int, marker_name, process_span,
};
use crate::view::{ProcessView, RunInfo};
use rusqlite::params;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use trace_records::agents::{Agent, AgentKind, GpuProperties};
use trace_records::record::*;

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
    // As upstream, the code objects' URIs.
    for c in &v.trace.code_objects {
        set.insert(v.string(c.uri).into());
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

/// The string table (`rocpd_string`): every string of [`collect_strings`], ids 1.. in byte
/// order.
pub(super) fn write_strings(p: &Process<'_, '_>) -> rusqlite::Result<Strings> {
    let &Process { conn, v, .. } = p;
    let table = |base: &str| p.table(base);
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
    Ok(Strings { ids, empty })
}

/// The node (`rocpd_info_node`: this machine) and the process (`rocpd_info_process`).
pub(super) fn write_node_and_process(
    p: &Process<'_, '_>,
    run: &RunInfo,
    host: &Host,
) -> rusqlite::Result<()> {
    let &Process {
        conn,
        v,
        nid,
        node_hash,
        pid,
        ppid,
        ..
    } = p;
    let table = |base: &str| p.table(base);
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
    Ok(())
}

/// The threads (`rocpd_info_thread`): every thread any record names.
pub(super) fn write_threads(p: &Process<'_, '_>) -> rusqlite::Result<()> {
    let &Process {
        conn,
        v,
        nid,
        pid,
        ppid,
        ..
    } = p;
    let table = |base: &str| p.table(base);
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"id\", \"nid\", \"ppid\", \"pid\", \"tid\") \
         VALUES (?1, ?2, ?3, ?4, ?1)",
        table("rocpd_info_thread")
    ))?;
    for &tid in &v.threads {
        insert.execute(params![tid, nid, ppid, pid])?;
    }

    Ok(())
}

/// The agents (`rocpd_info_agent`): every published one, then a bare row for any node a record names that the
/// published agents lack (so that every reference resolves).
pub(super) fn write_agents(p: &Process<'_, '_>) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let table = |base: &str| p.table(base);
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

    Ok(())
}

/// The queues and streams (`rocpd_info_queue`, `rocpd_info_stream`): id 0 is always there ("Default …"), the others are numbered in the
/// order they are first used.
pub(super) fn write_queues_and_streams(p: &Process<'_, '_>) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let table = |base: &str| p.table(base);
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
    Ok(())
}

/// The counters (`rocpd_info_pmc`): one row per counter id (the first record of it names its agent).
pub(super) fn write_counters(p: &Process<'_, '_>) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let table = |base: &str| p.table(base);
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

    Ok(())
}

/// The code objects ([`super::code_objects`]) and kernel symbols
/// (`rocpd_info_kernel_symbol`), each symbol under its code object (the "no code object" row
/// 0 when the log does not say), plus a bare symbol for any kernel id a dispatch names that
/// the log never defined.
pub(super) fn write_kernel_symbols(p: &Process<'_, '_>) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let table = |base: &str| p.table(base);
    let known = super::code_objects::known_ids(p);
    let code_object_of = |s: &KernelSymbolRecord| {
        let id = u64::from(s.code_object_id);
        if known.contains(&id) { id } else { 0 }
    };
    let defined: HashSet<u64> = v.trace.symbols.iter().map(|s| s.kernel_id).collect();
    let need_none = v.trace.symbols.iter().any(|s| code_object_of(s) == 0)
        || v.dispatches.iter().any(|d| !defined.contains(&d.kernel_id));
    super::code_objects::write_code_objects(p, need_none)?;
    if !v.trace.symbols.is_empty() || !v.dispatches.is_empty() {
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"code_object_id\", \"kernel_name\", \
             \"display_name\", \"kernel_object\", \"kernarg_segment_size\", \
             \"group_segment_size\", \"private_segment_size\", \"sgpr_count\", \
             \"arch_vgpr_count\", \"accum_vgpr_count\", \"extdata\") \
             VALUES (?1, ?2, ?3, ?13, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            table("rocpd_info_kernel_symbol")
        ))?;
        let mut seen = HashSet::new();
        for s in &v.trace.symbols {
            if !seen.insert(s.kernel_id) {
                continue;
            }
            let name = v.string(s.name);
            let code_object = code_object_of(s);
            let extdata = serde_json::json!({
                "kernel_id": s.kernel_id,
                "code_object_id": code_object,
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
                int(code_object),
            ])?;
        }
        let mut bare = conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"code_object_id\", \"kernel_name\", \
             \"display_name\", \"extdata\") VALUES (?1, ?2, ?3, 0, '', '', ?4)",
            table("rocpd_info_kernel_symbol")
        ))?;
        for d in &v.dispatches {
            if seen.insert(d.kernel_id) {
                let extdata = serde_json::json!({ "kernel_id": d.kernel_id }).to_string();
                bare.execute(params![int(d.kernel_id), nid, pid, extdata])?;
            }
        }
    }
    Ok(())
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
