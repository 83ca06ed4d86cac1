//! The TOML file as written: every key optional, unknown keys rejected.
//!
//! [`resolve`] turns it into a [`Scenario`] by starting from the chosen preset and overriding
//! the keys the file names, then validating what the C side cannot represent.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::{
    AbiCheck, Adapter, AdapterQuery, EngineId, GpuNode, Luid, Machine, Scenario, ThunkCopy,
    WriteSize,
};

/// Largest `thunk.layout` accepted: `HsaStructureSizes.SizeOfHsaNodeProperties` is a u16.
pub const MAX_LAYOUT: u32 = 65532;

/// Characters per registry string, including the terminating NUL.
pub const REGISTRY_STRING_CHARS: usize = 260;

/// Elements of MarketingName / AMDName, including the terminating NUL.
pub const NODE_NAME_ELEMENTS: usize = 64;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    seed: Option<u64>,
    machine: Option<Machine>,
    cpu: Option<RawCpu>,
    thunk: Option<RawThunk>,
    dxcore: Option<RawDxcore>,
    adapters: Option<Vec<RawAdapter>>,
    nodes: Option<Vec<RawNode>>,
    gpu: Option<crate::gpu::Gpu>,
    counters: Option<crate::gpu::Counters>,
    runtime: Option<crate::runtime::Runtime>,
    faults: Option<crate::model::Faults>,
    kernel_duration: Option<BTreeMap<String, f64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCpu {
    name: Option<String>,
    cores: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThunk {
    layout: Option<u32>,
    abi_check: Option<AbiCheck>,
    write_size: Option<WriteSize>,
    hidden_exports: Option<Vec<String>>,
    kfd_already_open: Option<bool>,
    open_status: Option<i32>,
    acquire_status: Option<i32>,
    release_status: Option<i32>,
    close_status: Option<i32>,
    node_status: Option<BTreeMap<String, i32>>,
    handle_import_desc_size: Option<u16>,
    snapshot_refcount: Option<bool>,
    /// Only inside `[[thunk.copies]]`: the path suffix the entry matches.
    path: Option<String>,
    copies: Option<Vec<RawThunk>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDxcore {
    hidden_exports: Option<Vec<String>>,
    enum_status: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdapter {
    luid: Option<(u32, i32)>,
    vendor_id: Option<u32>,
    device_id: Option<u32>,
    subvendor_id: Option<u32>,
    subsystem_id: Option<u32>,
    revision_id: Option<u32>,
    bus_type: Option<u32>,
    bus: Option<u32>,
    device: Option<u32>,
    function: Option<u32>,
    description: Option<String>,
    bios: Option<String>,
    dac_type: Option<String>,
    chip_type: Option<String>,
    dedicated_video_memory: Option<u64>,
    dedicated_system_memory: Option<u64>,
    shared_system_memory: Option<u64>,
    compute_only: Option<bool>,
    fail_queries: Option<Vec<AdapterQuery>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    luid: Option<(u32, i32)>,
    vendor_id: Option<u16>,
    device_id: Option<u16>,
    location_id: Option<u32>,
    domain: Option<u32>,
    simd_count: Option<u32>,
    simd_per_cu: Option<u32>,
    shader_engines: Option<u32>,
    arrays_per_engine: Option<u32>,
    cu_per_array: Option<u32>,
    wave_front_size: Option<u32>,
    max_waves_per_simd: Option<u32>,
    lds_kb: Option<u32>,
    gds_kb: Option<u32>,
    max_slots_scratch_cu: Option<u32>,
    engine_id: Option<String>,
    engine_ucode: Option<u16>,
    override_engine_id: Option<String>,
    sdma_ucode: Option<u16>,
    family_id: Option<u32>,
    num_xcc: Option<u32>,
    kfd_gpu_id: Option<u32>,
    unique_id: Option<u64>,
    hive_id: Option<u64>,
    marketing_name: Option<String>,
    amd_name: Option<String>,
    local_mem_size: Option<u64>,
    max_clock_mhz: Option<u32>,
    ccompute_clock_mhz: Option<u32>,
    wallclock_khz: Option<u64>,
    num_sdma_engines: Option<u32>,
    num_sdma_xgmi_engines: Option<u32>,
    num_sdma_queues_per_engine: Option<u8>,
    num_cp_queues: Option<u8>,
    num_gws: Option<u8>,
    integrated: Option<u8>,
    capability: Option<u32>,
    capability2: Option<u32>,
    vgpr_size_per_cu: Option<u32>,
    sgpr_size_per_cu: Option<u32>,
    cwsr_size: Option<u32>,
    ctl_stack_size: Option<u32>,
    fabric_handle_supported: Option<u32>,
    num_memory_banks: Option<u32>,
    num_caches: Option<u32>,
    num_io_links: Option<u32>,
    drm_render_minor: Option<i32>,
    debug_properties: Option<u64>,
}

/// Copies every `Some` value of `raw.<field>` into `target.<field>`.
macro_rules! overlay {
    ($target:expr, $raw:expr; $($field:ident),+ $(,)?) => {
        $( if let Some(value) = $raw.$field { $target.$field = value; } )+
    };
}

/// Parses TOML text into a raw scenario, with a one-line error message.
pub(crate) fn parse(text: &str) -> Result<RawScenario, String> {
    toml::from_str(text).map_err(|error| {
        let message = one_line(error.message());
        match error.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                format!("line {line}, column {column}: {message}")
            }
            None => message,
        }
    })
}

/// Resolves a raw scenario into a full one.
pub(crate) fn resolve(raw: RawScenario) -> Result<Scenario, String> {
    let mut scenario = Scenario::preset(raw.machine.unwrap_or(Machine::Radeon890m));
    if let Some(seed) = raw.seed {
        scenario.seed = seed;
        scenario.seed_given = true;
    }
    if let Some(cpu) = raw.cpu {
        overlay!(scenario.cpu, cpu; name, cores);
        check_utf16_name("cpu.name", &scenario.cpu.name)?;
    }
    if let Some(thunk) = raw.thunk {
        resolve_thunk(&mut scenario, thunk)?;
    }
    if let Some(dxcore) = raw.dxcore {
        overlay!(scenario.dxcore, dxcore; hidden_exports, enum_status);
    }
    if let Some(adapters) = raw.adapters {
        scenario.adapters = adapters
            .into_iter()
            .enumerate()
            .map(|(index, raw)| resolve_adapter(index, raw))
            .collect::<Result<_, _>>()?;
    }
    if let Some(nodes) = raw.nodes {
        scenario.nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(index, raw)| resolve_node(index, raw))
            .collect::<Result<_, _>>()?;
    }
    if let Some(gpu) = raw.gpu {
        scenario.gpu = gpu;
    }
    if let Some(counters) = raw.counters {
        scenario.counters = counters;
    }
    if let Some(runtime) = raw.runtime {
        scenario.runtime = runtime;
    }
    if let Some(faults) = raw.faults {
        scenario.faults = faults;
    }
    if let Some(factors) = raw.kernel_duration {
        for (name, &factor) in &factors {
            if !(factor.is_finite() && factor > 0.0 && factor <= 1000.0) {
                return Err(format!(
                    "kernel_duration.{name}: {factor} is not a factor in (0, 1000]"
                ));
            }
        }
        scenario.kernel_duration = factors;
    }
    Ok(scenario)
}

fn resolve_thunk(scenario: &mut Scenario, mut raw: RawThunk) -> Result<(), String> {
    if raw.path.is_some() {
        return Err("thunk.path: only a [[thunk.copies]] entry names a path".to_owned());
    }
    let copies = raw.copies.take().unwrap_or_default();
    overlay_thunk(&mut scenario.thunk, raw, "thunk")?;
    let base = scenario.thunk.clone();
    scenario.thunk.copies = copies
        .into_iter()
        .enumerate()
        .map(|(index, mut raw)| {
            let at = format!("thunk.copies[{index}]");
            if raw.copies.is_some() {
                return Err(format!("{at}: a copy cannot have copies of its own"));
            }
            let path = raw
                .path
                .take()
                .filter(|path| !path.is_empty())
                .ok_or_else(|| format!("{at}: `path` (the copy's path suffix) is required"))?;
            let mut thunk = base.clone();
            overlay_thunk(&mut thunk, raw, &at)?;
            Ok(ThunkCopy { path, thunk })
        })
        .collect::<Result<_, _>>()?;
    Ok(())
}

/// Lays the keys `raw` names over `thunk` (`at` names the table in messages).
fn overlay_thunk(thunk: &mut crate::model::Thunk, raw: RawThunk, at: &str) -> Result<(), String> {
    if let Some(layout) = raw.layout {
        check_layout(layout).map_err(|e| {
            if at == "thunk" {
                e
            } else {
                format!("{at}: {e}")
            }
        })?;
        thunk.layout = layout;
    }
    overlay!(thunk, raw;
        abi_check, write_size, hidden_exports, kfd_already_open, open_status, acquire_status, release_status,
        close_status, handle_import_desc_size, snapshot_refcount);
    if let Some(node_status) = raw.node_status {
        thunk.node_status = node_status
            .into_iter()
            .map(|(key, status)| {
                key.trim()
                    .parse::<u32>()
                    .map(|node| (node, status))
                    .map_err(|_| {
                        format!(
                            "{at}.node_status: key `{key}` is not a node id (a u32 as a string)"
                        )
                    })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

/// Checks a `thunk.layout` value.
pub fn check_layout(layout: u32) -> Result<(), String> {
    let known = matches!(layout, 368 | 376 | 392 | 396);
    let newer = layout > 396 && layout.is_multiple_of(4) && layout <= MAX_LAYOUT;
    if known || newer {
        Ok(())
    } else {
        Err(format!(
            "thunk.layout = {layout}: expected 368, 376, 392, 396 or a multiple of 4 above 396 \
             (at most {MAX_LAYOUT})"
        ))
    }
}

fn resolve_adapter(index: usize, raw: RawAdapter) -> Result<Adapter, String> {
    let mut adapter = Adapter::radeon_890m();
    if let Some((low, high)) = raw.luid {
        adapter.luid = Luid { low, high };
    }
    overlay!(adapter, raw;
        vendor_id, device_id, subvendor_id, subsystem_id, revision_id, bus_type, bus, device,
        function, description, bios, dac_type, chip_type, dedicated_video_memory,
        dedicated_system_memory, shared_system_memory, compute_only, fail_queries);
    for (key, value) in [
        ("description", &adapter.description),
        ("bios", &adapter.bios),
        ("dac_type", &adapter.dac_type),
        ("chip_type", &adapter.chip_type),
    ] {
        let chars = value.chars().count();
        if chars >= REGISTRY_STRING_CHARS {
            return Err(format!(
                "adapters[{index}].{key} has {chars} characters; at most {} fit the 260-WCHAR field",
                REGISTRY_STRING_CHARS - 1
            ));
        }
    }
    Ok(adapter)
}

fn resolve_node(index: usize, raw: RawNode) -> Result<GpuNode, String> {
    let mut node = GpuNode::radeon_890m();
    if let Some((low, high)) = raw.luid {
        node.luid = Luid { low, high };
    }
    overlay!(node, raw;
        vendor_id, device_id, location_id, domain, simd_count, simd_per_cu, shader_engines,
        arrays_per_engine, cu_per_array, wave_front_size, max_waves_per_simd, lds_kb, gds_kb,
        max_slots_scratch_cu, sdma_ucode, family_id, num_xcc, kfd_gpu_id, unique_id, hive_id,
        marketing_name, amd_name, local_mem_size, max_clock_mhz, ccompute_clock_mhz,
        wallclock_khz, num_sdma_engines, num_sdma_xgmi_engines, num_sdma_queues_per_engine,
        num_cp_queues, num_gws, integrated, capability, capability2, vgpr_size_per_cu,
        sgpr_size_per_cu, cwsr_size, ctl_stack_size, fabric_handle_supported, num_memory_banks,
        num_caches, num_io_links, drm_render_minor, debug_properties);
    let at = |key: &str| format!("nodes[{index}].{key}");
    if let Some(text) = raw.engine_id {
        let ucode = node.engine_id.ucode;
        node.engine_id =
            EngineId::parse_version(&text).map_err(|e| format!("{}: {e}", at("engine_id")))?;
        node.engine_id.ucode = ucode;
    }
    if let Some(ucode) = raw.engine_ucode {
        node.engine_id.ucode = ucode;
    }
    if let Some(text) = raw.override_engine_id {
        node.override_engine_id = EngineId::parse_version(&text)
            .map_err(|e| format!("{}: {e}", at("override_engine_id")))?;
    }
    if node.engine_id.ucode > 0x3FF {
        return Err(format!(
            "{} = {} does not fit the 10-bit uCode field",
            at("engine_ucode"),
            node.engine_id.ucode
        ));
    }
    if node.sdma_ucode > 0x3FF {
        return Err(format!(
            "{} = {} does not fit the 10-bit uCodeSDMA field",
            at("sdma_ucode"),
            node.sdma_ucode
        ));
    }
    check_utf16_name(&at("marketing_name"), &node.marketing_name)?;
    if node.amd_name.len() >= NODE_NAME_ELEMENTS {
        return Err(format!(
            "{} is {} bytes; at most {} fit the 64-byte field",
            at("amd_name"),
            node.amd_name.len(),
            NODE_NAME_ELEMENTS - 1
        ));
    }
    Ok(node)
}

fn check_utf16_name(key: &str, value: &str) -> Result<(), String> {
    let units = value.encode_utf16().count();
    if units >= NODE_NAME_ELEMENTS {
        return Err(format!(
            "{key} is {units} UTF-16 units; at most {} fit the 64-element field",
            NODE_NAME_ELEMENTS - 1
        ));
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// 1-based line and column of byte offset `at` in `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.chars().count(), |newline| {
            before[newline + 1..].chars().count()
        })
        + 1;
    (line, column)
}
