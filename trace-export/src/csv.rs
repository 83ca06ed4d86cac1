//! rocprofv3's CSV trace files and `agent_info.csv`: names, columns and number formats (the
//! cells and rows themselves are [`crate::cells`]'s). A file is written only when its domain
//! has records.

use crate::Error;
use crate::cells::{Cell, write_header, write_row};
use crate::output::{Out, OutputPrefix, write_whole};
use crate::stats::{Stats, write_stats};
use std::io::{self, Write};
use std::path::PathBuf;
use trace_records::ProcessTrace;
use trace_records::agents::{Agent, AgentLabels, GpuProperties};
use trace_records::format::fmt_counter_value;
use trace_records::record::*;

/// Columns of the API trace files (`hip_api_trace`, `hsa_api_trace`, `marker_api_trace`).
pub const API_COLUMNS: [&str; 7] = [
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Columns of `kernel_trace.csv`.
pub const KERNEL_COLUMNS: [&str; 22] = [
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

/// Columns of `counter_collection.csv`.
pub const COUNTER_COLUMNS: [&str; 19] = [
    "Correlation_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Queue_Id",
    "Process_Id",
    "Thread_Id",
    "Grid_Size",
    "Kernel_Id",
    "Kernel_Name",
    "Workgroup_Size",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Counter_Name",
    "Counter_Value",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Columns of `memory_allocation_trace.csv`.
pub const ALLOCATION_COLUMNS: [&str; 8] = [
    "Kind",
    "Operation",
    "Agent_Id",
    "Allocation_Size",
    "Address",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Columns of `scratch_memory_trace.csv`: the 8 of upstream's documentation sample (current
/// rocprofv3 appends `Allocation_Size`; the acceptance criterion is the sample's header, and the
/// size is in the rocpd, JSON and Perfetto outputs).
pub const SCRATCH_COLUMNS: [&str; 8] = [
    "Kind",
    "Operation",
    "Agent_Id",
    "Queue_Id",
    "Thread_Id",
    "Alloc_Flags",
    "Start_Timestamp",
    "End_Timestamp",
];

/// The `Address` cell of `memory_allocation_trace.csv`: `0x` and 16 lower-case hex digits.
pub fn address_cell(address: u64) -> String {
    format!("0x{address:016x}")
}

/// Columns of `memory_copy_trace.csv` (no byte count, as upstream).
pub const COPY_COLUMNS: [&str; 8] = [
    "Kind",
    "Direction",
    "Stream_Id",
    "Source_Agent_Id",
    "Destination_Agent_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Columns of `agent_info.csv`.
pub const AGENT_COLUMNS: [&str; 53] = [
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
];

/// Which files to write.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvSelection {
    /// `hip_api_trace.csv`.
    pub hip: bool,
    /// `hsa_api_trace.csv`.
    pub hsa: bool,
    /// `kernel_trace.csv`.
    pub kernels: bool,
    /// `memory_copy_trace.csv`.
    pub copies: bool,
    /// `marker_api_trace.csv`.
    pub markers: bool,
    /// `memory_allocation_trace.csv`.
    pub allocations: bool,
    /// `scratch_memory_trace.csv`.
    pub scratch: bool,
    /// `counter_collection.csv` (never a stats file: upstream's `counter_collection_stats` is
    /// always empty and so never written).
    pub counters: bool,
    /// `*_stats.csv` and `domain_stats.csv`.
    pub stats: bool,
}

/// A spill failure as this crate's error.
pub(crate) fn spilled(e: trace_records::records::SpillError) -> Error {
    Error::Format {
        path: e.dir.clone(),
        message: e.to_string(),
    }
}

/// Writes `<prefix>_<name>.csv`: the header, then `row` for each item.
fn write_file<T>(
    prefix: &OutputPrefix,
    name: &str,
    columns: &[&str],
    items: impl IntoIterator<Item = T>,
    mut row: impl FnMut(&mut Out, T) -> io::Result<()>,
) -> Result<PathBuf, Error> {
    let path = prefix.file(name, "csv");
    write_whole(&path, |out| {
        write_header(out, columns)?;
        items.into_iter().try_for_each(|item| row(out, item))
    })?;
    Ok(path)
}

/// One row of the API trace files (`Domain`, `Function`, ids, timestamps).
fn api_row(
    out: &mut Out,
    domain: &str,
    function: &str,
    pid: u64,
    (thread, correlation, start, end): (u32, u64, u64, u64),
) -> io::Result<()> {
    write_row(
        out,
        &[
            Cell::Str(domain),
            Cell::Str(function),
            Cell::Int(pid),
            Cell::Int(thread.into()),
            Cell::Int(correlation),
            Cell::Int(start),
            Cell::Int(end),
        ],
    )
}

/// Writes `<prefix>_agent_info.csv`: one row per agent of `labels`, by node id; no file when
/// there is no agent. Returns the path written.
pub fn write_agent_info(
    prefix: &OutputPrefix,
    labels: &AgentLabels,
) -> Result<Option<PathBuf>, Error> {
    if labels.agents().is_empty() {
        return Ok(None);
    }
    let mut agents: Vec<&Agent> = labels.agents().iter().collect();
    agents.sort_by_key(|a| a.node_id);
    write_file(prefix, "agent_info", &AGENT_COLUMNS, &agents, |out, a| {
        write_agent(out, a)
    })
    .map(Some)
}

/// Writes the selected CSV files (and `agent_info.csv`, [`write_agent_info`]) for `trace`, its
/// agents named by `labels`; returns the paths written.
pub fn write_csv(
    prefix: &OutputPrefix,
    trace: &ProcessTrace,
    labels: &AgentLabels,
    select: CsvSelection,
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    let mut stats = Stats::default();
    let pid = u64::from(trace.pid);

    written.extend(write_agent_info(prefix, labels)?);

    for (enabled, name, label, domains) in [
        (
            select.hip,
            "hip_api_trace",
            "HIP_API",
            &[ApiDomain::HipRuntime, ApiDomain::HipCompiler][..],
        ),
        (
            select.hsa,
            "hsa_api_trace",
            "HSA_API",
            &[
                ApiDomain::HsaCore,
                ApiDomain::HsaAmdExt,
                ApiDomain::HsaImage,
                ApiDomain::HsaFinalize,
            ][..],
        ),
    ] {
        if !enabled {
            continue;
        }
        // Rows in time order, streamed from the trace (its calls are kept in order, in memory
        // or spilled).
        let wanted =
            |r: &ApiRecord| ApiDomain::from_u8(r.domain).is_some_and(|d| domains.contains(&d));
        let mut rows = trace.api.iter().filter(wanted).peekable();
        if rows.peek().is_none() {
            trace.api.check().map_err(spilled)?;
            continue;
        }
        let mut stat = select.stats.then(|| stats.table(label));
        let path = write_file(prefix, name, &API_COLUMNS, rows, |out, r| {
            let function = trace.operation_name(r.domain, r.operation);
            if let Some(s) = stat.as_mut() {
                s.add(&function, r.start, r.end);
            }
            let domain = ApiDomain::from_u8(r.domain).map_or("", ApiDomain::csv_name);
            api_row(
                out,
                domain,
                &function,
                pid,
                (r.thread_id, r.correlation_id, r.start, r.end),
            )
        });
        // A spilled run that failed to read back ended the rows early: not a result.
        if let Err(e) = trace.api.check() {
            if let Ok(p) = &path {
                let _ = std::fs::remove_file(p);
            }
            return Err(spilled(e));
        }
        written.push(path?);
    }

    if select.markers && !trace.markers.is_empty() {
        let mut rows: Vec<&MarkerRecord> = trace.markers.iter().collect();
        rows.sort_by_key(|r| (r.start, r.correlation_id));
        let mut stat = select.stats.then(|| stats.table("MARKER_API"));
        written.push(write_file(
            prefix,
            "marker_api_trace",
            &API_COLUMNS,
            &rows,
            |out, r| {
                let message = trace.string(r.message);
                if let Some(s) = stat.as_mut() {
                    s.add(message, r.start, r.end);
                }
                let domain = ApiDomain::MarkerCore.csv_name();
                api_row(
                    out,
                    domain,
                    message,
                    pid,
                    (r.thread_id, r.correlation_id, r.start, r.end),
                )
            },
        )?);
    }

    if select.kernels && !trace.dispatches.is_empty() {
        let mut rows: Vec<&KernelDispatchRecord> = trace.dispatches.iter().collect();
        rows.sort_by_key(|r| (r.start, r.dispatch_id));
        let mut stat = select.stats.then(|| stats.table("KERNEL_DISPATCH"));
        let symbols = trace.symbols_by_id();
        written.push(write_file(
            prefix,
            "kernel_trace",
            &KERNEL_COLUMNS,
            &rows,
            |out, r| {
                let mut k = KernelCells::of(trace, symbols.get(&r.kernel_id).copied());
                k.name = crate::rename::dispatch_name(trace, r, k.name);
                let agent = labels.label(r.agent_node_id);
                if let Some(s) = stat.as_mut() {
                    s.add(k.name, r.start, r.end);
                }
                write_row(
                    out,
                    &[
                        Cell::Str("KERNEL_DISPATCH"),
                        Cell::Str(&agent),
                        Cell::Int(r.queue_id),
                        Cell::Int(r.stream_id),
                        Cell::Int(r.thread_id.into()),
                        Cell::Int(r.dispatch_id),
                        Cell::Int(r.kernel_id),
                        Cell::Str(k.name),
                        Cell::Int(r.correlation_id),
                        Cell::Int(r.start),
                        Cell::Int(r.end),
                        Cell::Int(k.lds),
                        Cell::Int(r.private_segment_size.into()),
                        Cell::Int(k.vgpr),
                        Cell::Int(k.accum_vgpr),
                        Cell::Int(k.sgpr),
                        Cell::Int(r.workgroup[0].into()),
                        Cell::Int(r.workgroup[1].into()),
                        Cell::Int(r.workgroup[2].into()),
                        Cell::Int(r.grid[0].into()),
                        Cell::Int(r.grid[1].into()),
                        Cell::Int(r.grid[2].into()),
                    ],
                )
            },
        )?);
    }

    if select.copies && !trace.copies.is_empty() {
        let mut rows: Vec<&MemoryCopyRecord> = trace.copies.iter().collect();
        rows.sort_by_key(|r| (r.start, r.correlation_id));
        let mut stat = select.stats.then(|| stats.table("MEMORY_COPY"));
        written.push(write_file(
            prefix,
            "memory_copy_trace",
            &COPY_COLUMNS,
            &rows,
            |out, r| {
                let direction = CopyDirection::label(r.direction);
                let (src, dst) = (labels.label(r.src_node_id), labels.label(r.dst_node_id));
                if let Some(s) = stat.as_mut() {
                    s.add(direction, r.start, r.end);
                }
                write_row(
                    out,
                    &[
                        Cell::Str("MEMORY_COPY"),
                        Cell::Str(direction),
                        Cell::Int(r.stream_id),
                        Cell::Str(&src),
                        Cell::Str(&dst),
                        Cell::Int(r.correlation_id),
                        Cell::Int(r.start),
                        Cell::Int(r.end),
                    ],
                )
            },
        )?);
    }

    if select.allocations && !trace.allocations.is_empty() {
        let mut stat = select.stats.then(|| stats.table("MEMORY_ALLOCATION"));
        written.push(write_file(
            prefix,
            "memory_allocation_trace",
            &ALLOCATION_COLUMNS,
            &trace.allocations,
            |out, r| {
                let operation = AllocationOperation::label(r.operation);
                if let Some(s) = stat.as_mut() {
                    s.add(operation, r.start, r.end);
                }
                let agent = if r.has_agent != 0 {
                    labels.label(r.agent_node_id)
                } else {
                    "".into()
                };
                write_row(
                    out,
                    &[
                        Cell::Str("MEMORY_ALLOCATION"),
                        Cell::Str(operation),
                        Cell::Str(&agent),
                        Cell::Int(r.size),
                        Cell::Str(&address_cell(r.address)),
                        Cell::Int(r.correlation_id),
                        Cell::Int(r.start),
                        Cell::Int(r.end),
                    ],
                )
            },
        )?);
    }

    if select.scratch && !trace.scratch.is_empty() {
        let mut stat = select.stats.then(|| stats.table("SCRATCH_MEMORY"));
        written.push(write_file(
            prefix,
            "scratch_memory_trace",
            &SCRATCH_COLUMNS,
            &trace.scratch,
            |out, r| {
                let operation = ScratchOperation::label(r.operation);
                if let Some(s) = stat.as_mut() {
                    s.add(operation, r.start, r.end);
                }
                write_row(
                    out,
                    &[
                        Cell::Str("SCRATCH_MEMORY"),
                        Cell::Str(operation),
                        Cell::Str(&labels.label(r.agent_node_id)),
                        Cell::Int(r.queue_id),
                        Cell::Int(r.thread_id.into()),
                        Cell::Int(r.flags.into()),
                        Cell::Int(r.start),
                        Cell::Int(r.end),
                    ],
                )
            },
        )?);
    }

    if select.counters && !trace.counters.is_empty() {
        written.push(write_counters(prefix, trace, labels)?);
    }

    if select.stats {
        written.extend(write_stats(prefix, &stats)?);
    }
    Ok(written)
}

/// The columns a dispatch row takes from its kernel symbol (`kernel_trace.csv`,
/// `counter_collection.csv`); all empty or 0 when the symbol is unknown.
struct KernelCells<'a> {
    /// `Kernel_Name`.
    name: &'a str,
    /// `LDS_Block_Size`: the symbol's group segment rounded up to 512 bytes.
    lds: u64,
    /// `VGPR_Count`.
    vgpr: u64,
    /// `Accum_VGPR_Count`.
    accum_vgpr: u64,
    /// `SGPR_Count`.
    sgpr: u64,
}

impl<'a> KernelCells<'a> {
    fn of(trace: &'a ProcessTrace, symbol: Option<&KernelSymbolRecord>) -> Self {
        let of = |f: fn(&KernelSymbolRecord) -> u32| -> u64 { symbol.map_or(0, |s| f(s).into()) };
        Self {
            name: symbol.map_or("", |s| trace.string(s.name)),
            lds: of(|s| s.group_segment_size).div_ceil(512) * 512,
            vgpr: of(|s| s.arch_vgpr_count),
            accum_vgpr: of(|s| s.accum_vgpr_count),
            sgpr: of(|s| s.sgpr_count),
        }
    }
}

/// Writes `<prefix>_counter_collection.csv`: one row per counter record, i.e. per dispatch and
/// counter (the value already summed over dimension instances), ordered by dispatch id and then
/// counter id (upstream orders a dispatch's rows by counter id). The dispatch columns are joined
/// from the dispatch's [`KernelDispatchRecord`] (the first with that id) and its kernel symbol,
/// as in `kernel_trace.csv`.
///
/// A counter record whose dispatch record is absent (lost with a damaged chunk, say) is still
/// written, not dropped: its row has what the counter record itself knows (`Correlation_Id`,
/// `Dispatch_Id`, `Agent_Id`, `Process_Id`, `Counter_Name`, `Counter_Value`) and `0` or `""`
/// for the dispatch's columns, so the value stays visible and the row is recognisable by its
/// empty `Kernel_Name` and zero timestamps. No stats file is written for counters.
fn write_counters(
    prefix: &OutputPrefix,
    trace: &ProcessTrace,
    labels: &AgentLabels,
) -> Result<PathBuf, Error> {
    let mut dispatches = std::collections::HashMap::with_capacity(trace.dispatches.len());
    for d in &trace.dispatches {
        dispatches.entry(d.dispatch_id).or_insert(d);
    }
    let symbols = trace.symbols_by_id();
    let key = |r: &CounterRecord| (r.dispatch_id, r.counter_id);
    let mut rows: Vec<&CounterRecord> = trace.counters.iter().collect();
    if !trace.counters.is_sorted_by_key(key) {
        rows.sort_by_key(|r| key(r));
    }
    let pid = u64::from(trace.pid);
    write_file(
        prefix,
        "counter_collection",
        &COUNTER_COLUMNS,
        rows,
        |out, c| {
            let d = dispatches.get(&c.dispatch_id).copied();
            let mut k = KernelCells::of(trace, d.and_then(|d| symbols.get(&d.kernel_id).copied()));
            if let Some(d) = d {
                k.name = crate::rename::dispatch_name(trace, d, k.name);
            }
            let agent = labels.label(d.map_or(c.agent_node_id, |d| d.agent_node_id));
            let of = |f: fn(&KernelDispatchRecord) -> u64| Cell::Int(d.map_or(0, f));
            let value = fmt_counter_value(c.value);
            write_row(
                out,
                &[
                    Cell::Int(d.map_or(c.correlation_id, |d| d.correlation_id)),
                    Cell::Int(c.dispatch_id),
                    Cell::Str(&agent),
                    of(|d| d.queue_id),
                    Cell::Int(pid),
                    of(|d| d.thread_id.into()),
                    of(|d| d.grid.iter().map(|&v| u64::from(v)).product()),
                    of(|d| d.kernel_id),
                    Cell::Str(k.name),
                    of(|d| d.workgroup.iter().map(|&v| u64::from(v)).product()),
                    Cell::Int(k.lds),
                    of(|d| d.private_segment_size.into()),
                    Cell::Int(k.vgpr),
                    Cell::Int(k.accum_vgpr),
                    Cell::Int(k.sgpr),
                    Cell::Str(trace.string(c.name)),
                    Cell::Num(&value),
                    of(|d| d.start),
                    of(|d| d.end),
                ],
            )
        },
    )
}

/// One `agent_info.csv` row. A CPU agent's GPU columns are 0. Discovery does not learn
/// `Cpu_Core_Id_Base`, `Simd_Id_Base` or `Drm_Render_Minor` (WSL has no DRM render node), so they
/// are 0.
fn write_agent(out: &mut impl Write, a: &Agent) -> io::Result<()> {
    let n = |v: u32| Cell::Int(v.into());
    let no_gpu = GpuProperties::default();
    let g = a.gpu.as_ref().unwrap_or(&no_gpu);
    write_row(
        out,
        &[
            n(a.node_id),
            n(a.logical_node_id),
            Cell::Str(a.kind.csv_name()),
            n(a.cpu_cores_count),
            n(g.simd_count),
            n(0),
            n(0),
            n(g.max_waves_per_simd),
            n(g.lds_size_in_kb),
            n(g.gds_size_in_kb),
            n(g.num_gws),
            n(g.wave_front_size),
            n(g.num_xcc),
            n(g.cu_count),
            n(g.array_count),
            n(g.num_shader_banks),
            n(g.simd_arrays_per_engine),
            n(g.cu_per_simd_array),
            n(g.simd_per_cu),
            n(g.max_slots_scratch_cu),
            n(g.gfx_target_version),
            n(g.vendor_id),
            n(g.device_id),
            n(g.location_id),
            n(g.domain),
            n(0),
            n(g.num_sdma_engines),
            n(g.num_sdma_xgmi_engines),
            n(g.num_sdma_queues_per_engine),
            n(g.num_cp_queues),
            n(g.max_engine_clk_ccompute),
            n(g.max_engine_clk_fcompute),
            n(g.sdma_fw_version),
            n(g.fw_version),
            n(g.capability),
            n(g.cu_per_engine),
            n(g.max_waves_per_cu),
            n(g.family_id),
            n(g.workgroup_max_size),
            n(g.grid_max_size),
            Cell::Int(g.local_mem_size),
            Cell::Int(g.hive_id),
            n(g.gpu_id),
            n(g.workgroup_max_dim[0]),
            n(g.workgroup_max_dim[1]),
            n(g.workgroup_max_dim[2]),
            n(g.grid_max_dim[0]),
            n(g.grid_max_dim[1]),
            n(g.grid_max_dim[2]),
            Cell::Str(&a.name),
            Cell::Str(&a.vendor_name),
            Cell::Str(&a.product_name),
            Cell::Str(&a.model_name),
        ],
    )
}

#[cfg(test)]
mod counter_tests {
    use super::*;
    use trace_records::log::{FileHeader, LogBuilder};

    fn counter(dispatch_id: u64, counter_id: u32, name: StringId, value: f64) -> CounterRecord {
        CounterRecord {
            dispatch_id,
            correlation_id: dispatch_id + 100,
            value,
            name,
            counter_id,
            agent_node_id: 2,
            reserved: 0,
        }
    }

    fn dispatch(dispatch_id: u64) -> KernelDispatchRecord {
        KernelDispatchRecord {
            dispatch_id,
            kernel_id: 7,
            correlation_id: dispatch_id + 100,
            start: 1000 * dispatch_id,
            end: 1000 * dispatch_id + 5,
            queue_id: 3,
            stream_id: 9,
            agent_node_id: 2,
            thread_id: 11,
            grid: [64, 2, 3],
            workgroup: [8, 2, 1],
            private_segment_size: 16,
            group_segment_size: 0,
            region: 0,
            reserved: 0,
        }
    }

    fn written(trace: &ProcessTrace, name: &str) -> String {
        let dir = std::env::temp_dir().join(format!(
            "trace-records-counters-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let select = CsvSelection {
            counters: true,
            stats: true,
            ..Default::default()
        };
        let prefix = OutputPrefix(dir.join("out"));
        let paths = write_csv(&prefix, trace, &AgentLabels::default(), select).unwrap();
        assert_eq!(paths, [prefix.file("counter_collection", "csv")]);
        let text = std::fs::read_to_string(&paths[0]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        text
    }

    const HEADER: &str = "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";

    #[test]
    fn a_counter_without_its_dispatch_is_written_with_what_it_knows() {
        let mut t = ProcessTrace {
            pid: 5,
            ..Default::default()
        };
        t.strings.insert(1, "SQ_WAVES".into());
        t.strings.insert(2, "k".into());
        t.symbols.push(KernelSymbolRecord {
            kernel_id: 7,
            kernel_object: 0,
            name: 2,
            arch_vgpr_count: 8,
            accum_vgpr_count: 4,
            sgpr_count: 16,
            group_segment_size: 513,
            private_segment_size: 0,
            kernarg_segment_size: 0,
            code_object_id: 0,
        });
        t.dispatches.push(dispatch(1));
        t.counters.push(counter(2, 1, 1, 3.0));
        t.counters.push(counter(1, 1, 1, 0.5));
        assert_eq!(
            written(&t, "lost"),
            format!(
                "{HEADER}\
                 101,1,\"Agent 2\",3,5,11,384,7,\"k\",16,1024,16,8,4,16,\"SQ_WAVES\",5.00000000e-01,1000,1005\n\
                 102,2,\"Agent 2\",0,5,0,0,0,\"\",0,0,0,0,0,0,\"SQ_WAVES\",3.000000,0,0\n"
            )
        );
    }

    #[test]
    fn counters_decoded_from_a_log_are_ordered_by_dispatch_then_counter_id() {
        // Two threads' chunks, interleaved: the rows still come out by dispatch, then counter
        // id (not by name, nor by the order they were recorded).
        let mut b = LogBuilder::new(FileHeader {
            pid: 9,
            ..Default::default()
        });
        b.chunk(true, |f, p| {
            assert!(f.push_string(p, 1, "B_FIRST"));
            assert!(f.push_string(p, 2, "A_SECOND"));
            assert!(f.push(p, &counter(2, 20, 2, 2.0)));
            assert!(f.push(p, &counter(1, 20, 2, 1.0)));
        });
        b.chunk(true, |f, p| {
            assert!(f.push(p, &counter(2, 10, 1, 4.0)));
            assert!(f.push(p, &counter(1, 10, 1, 1e9)));
        });
        let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
        assert_eq!(t.losses.total(), 0);
        let order: Vec<(u64, u32)> = t
            .counters
            .iter()
            .map(|c| (c.dispatch_id, c.counter_id))
            .collect();
        assert_eq!(order, [(1, 10), (1, 20), (2, 10), (2, 20)]);
        let text = written(&t, "order");
        let cells: Vec<(&str, &str)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                (c[15], c[16])
            })
            .collect();
        assert_eq!(
            cells,
            [
                ("\"B_FIRST\"", "1000000000.000000"),
                ("\"A_SECOND\"", "1.000000"),
                ("\"B_FIRST\"", "4.000000"),
                ("\"A_SECOND\"", "2.000000"),
            ]
        );
    }

    #[test]
    fn a_truncated_counter_record_is_counted_as_malformed() {
        let mut b = LogBuilder::new(FileHeader::default());
        b.chunk(true, |f, p| {
            let bytes = zerocopy::IntoBytes::as_bytes(&counter(1, 1, 1, 1.0)).to_vec();
            assert!(f.push_parts(p, Tag::Counter, &[&bytes[..39]]));
        });
        let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
        assert!(t.counters.is_empty());
        assert_eq!(t.losses.total(), 1);
    }

    #[test]
    fn a_counter_sample_keeps_its_bytes_and_a_short_one_is_malformed() {
        let header = trace_records::CounterSampleHeader {
            dispatch_id: 7,
            correlation_id: 9,
            agent_node_id: 1,
            group: 0,
        };
        let head = zerocopy::IntoBytes::as_bytes(&header).to_vec();
        let output: Vec<u8> = (0..152u8).collect();
        let mut b = LogBuilder::new(FileHeader::default());
        b.chunk(true, |f, p| {
            assert!(f.push_parts(p, Tag::CounterSample, &[&head, &output]));
            assert!(
                f.push_parts(p, Tag::CounterSample, &[&head]),
                "no output: still a sample"
            );
            assert!(f.push_parts(p, Tag::CounterSample, &[&head[..23]]));
        });
        let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
        assert_eq!(t.counter_samples.len(), 2);
        assert_eq!(t.counter_samples[0].header, header);
        assert_eq!(t.counter_samples[0].output, output);
        assert!(t.counter_samples[1].output.is_empty());
        assert_eq!(t.losses.total(), 1, "the 23-byte entry is malformed");
        assert_eq!(t.record_count(), 2);
    }
}
