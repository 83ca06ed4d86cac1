//! Interoperability with real rocprofv3 output: each upstream sample is parsed into records,
//! written back with this crate, and must come back line for line (order aside: upstream
//! writes in completion order, this crate by start time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::output::OutputPrefix;
use trace_export::stats::{fmt_ns, fmt_percent};
use trace_records::agents::{Agent, AgentIndex, AgentKind, AgentLabels, GpuProperties, Luid};
use trace_records::*;

/// Where the upstream samples are kept: the project's shared data, next to the workspace
/// (`<workspace>/../shared/data/upstream-docs-samples`), unchanged from AMD's ROCprofiler-SDK
/// documentation (`source/docs/data/`).
fn samples_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // <workspace>/trace-records -> <workspace>/.. (both exist: this crate is being built).
    let above_workspace = crate_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(crate_dir);
    above_workspace.join("shared/data/upstream-docs-samples")
}

/// The upstream samples, or `None` after saying on stderr that the test is skipped and which
/// directory it expected. Every test comparing with upstream starts with this; a present
/// directory with a file missing fails.
fn samples() -> Option<Samples> {
    let dir = samples_dir();
    if dir.is_dir() {
        Some(Samples(dir))
    } else {
        eprintln!(
            "SKIPPED: the upstream rocprofv3 samples are absent; expected them in {}",
            dir.display()
        );
        None
    }
}

/// The directory of upstream samples (known to exist).
struct Samples(PathBuf);

impl Samples {
    fn path(&self, name: &str) -> PathBuf {
        let path = self.0.join(name);
        assert!(
            path.is_file(),
            "upstream sample {} is missing",
            path.display()
        );
        path
    }

    fn rows(&self, name: &str) -> (Vec<String>, Vec<HashMap<String, String>>) {
        rows(&self.path(name))
    }
}

fn rows(path: &Path) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut r = ::csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r.deserialize().map(Result::unwrap).collect();
    (header, rows)
}

fn sorted_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let header = lines.remove(0);
    lines.sort();
    lines.insert(0, header);
    lines
}

fn out_dir(test: &str) -> OutputPrefix {
    let dir = std::env::temp_dir().join(format!("trace-records-csv-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    OutputPrefix(dir.join("out"))
}

/// A CPU agent (no GPU properties) with these ids and names.
fn cpu_agent(node_id: u32, logical_node_id: u32, name: &str, cores: u32) -> Agent {
    Agent {
        kind: AgentKind::Cpu,
        logical_node_id,
        node_id,
        logical_node_type_id: 0,
        name: name.into(),
        product_name: name.into(),
        vendor_name: "CPU".into(),
        model_name: String::new(),
        cpu_cores_count: cores,
        gpu: None,
    }
}

fn agents(ids: &[u32]) -> AgentLabels {
    let agents = ids.iter().map(|&id| cpu_agent(id, id, "", 0)).collect();
    AgentLabels::new(agents, AgentIndex::Relative)
}

fn num(row: &HashMap<String, String>, key: &str) -> u64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}={}", row[key]))
}

struct Strings(HashMap<String, StringId>, ProcessTrace);

impl Strings {
    /// Defines the kernel symbol of `row` (its name, registers and LDS) once per kernel id.
    fn symbol_from(&mut self, row: &HashMap<String, String>, kernel_id: u64) {
        if self.1.symbol(kernel_id).is_some() {
            return;
        }
        let name = self.id(&row["Kernel_Name"]);
        self.1.symbols.push(KernelSymbolRecord {
            kernel_id,
            kernel_object: 0,
            name,
            arch_vgpr_count: num(row, "VGPR_Count") as u32,
            accum_vgpr_count: num(row, "Accum_VGPR_Count") as u32,
            sgpr_count: num(row, "SGPR_Count") as u32,
            group_segment_size: num(row, "LDS_Block_Size") as u32,
            private_segment_size: 0,
            kernarg_segment_size: 0,
            code_object_id: 0,
        });
    }

    fn id(&mut self, s: &str) -> StringId {
        let next = self.0.len() as StringId + 1;
        let id = *self.0.entry(s.to_owned()).or_insert(next);
        self.1.strings.insert(id, s.to_owned());
        id
    }
}

fn check(prefix: &OutputPrefix, written: &[PathBuf], file: &str, upstream: &Path) {
    let ours = prefix.file(file, "csv");
    assert!(written.contains(&ours), "{file} not written: {written:?}");
    assert_eq!(sorted_lines(&ours), sorted_lines(upstream), "{file}");
}

fn api_trace(upstream: &str, file: &str, select: CsvSelection) {
    let Some(samples) = samples() else { return };
    let (_, rows) = samples.rows(upstream);
    let mut s = Strings(HashMap::new(), ProcessTrace::default());
    for row in &rows {
        let domain = ApiDomain::ALL
            .into_iter()
            .find(|d| d.csv_name() == row["Domain"])
            .unwrap();
        let name = s.id(&row["Function"]);
        // One operation id per distinct function name within its domain.
        let op = name as u16;
        s.1.operations.insert((domain as u8, op), name);
        s.1.pid = num(row, "Process_Id") as u32;
        s.1.api.push(ApiRecord {
            correlation_id: num(row, "Correlation_Id"),
            start: num(row, "Start_Timestamp"),
            end: num(row, "End_Timestamp"),
            thread_id: num(row, "Thread_Id") as u32,
            operation: op,
            domain: domain as u8,
            reserved: 0,
        });
    }
    let prefix = out_dir(file);
    let written = write_csv(&prefix, &s.1, &AgentLabels::default(), select).unwrap();
    check(&prefix, &written, file, &samples.path(upstream));
}

#[test]
fn hip_api_trace_round_trips() {
    api_trace(
        "hip_trace.csv",
        "hip_api_trace",
        CsvSelection {
            hip: true,
            ..Default::default()
        },
    );
}

#[test]
fn hsa_api_trace_round_trips() {
    api_trace(
        "hsa_api_trace.csv",
        "hsa_api_trace",
        CsvSelection {
            hsa: true,
            ..Default::default()
        },
    );
}

#[test]
fn marker_api_trace_round_trips() {
    let Some(samples) = samples() else { return };
    let (_, rows) = samples.rows("marker_api_trace.csv");
    let mut s = Strings(HashMap::new(), ProcessTrace::default());
    for row in &rows {
        let message = s.id(&row["Function"]);
        s.1.pid = num(row, "Process_Id") as u32;
        s.1.markers.push(MarkerRecord {
            correlation_id: num(row, "Correlation_Id"),
            start: num(row, "Start_Timestamp"),
            end: num(row, "End_Timestamp"),
            message,
            thread_id: num(row, "Thread_Id") as u32,
            kind: MarkerKind::Mark as u8,
            reserved: [0; 7],
        });
    }
    let prefix = out_dir("marker");
    let select = CsvSelection {
        markers: true,
        ..Default::default()
    };
    let written = write_csv(&prefix, &s.1, &AgentLabels::default(), select).unwrap();
    check(
        &prefix,
        &written,
        "marker_api_trace",
        &samples.path("marker_api_trace.csv"),
    );
}

#[test]
fn kernel_trace_round_trips() {
    let Some(samples) = samples() else { return };
    let (_, rows) = samples.rows("kernel_trace.csv");
    let mut s = Strings(HashMap::new(), ProcessTrace::default());
    for row in &rows {
        let kernel_id = num(row, "Kernel_Id");
        s.symbol_from(row, kernel_id);
        let agent: u32 = row["Agent_Id"]
            .trim_start_matches("Agent ")
            .parse()
            .unwrap();
        s.1.dispatches.push(KernelDispatchRecord {
            dispatch_id: num(row, "Dispatch_Id"),
            kernel_id,
            correlation_id: num(row, "Correlation_Id"),
            start: num(row, "Start_Timestamp"),
            end: num(row, "End_Timestamp"),
            queue_id: num(row, "Queue_Id"),
            stream_id: num(row, "Stream_Id"),
            agent_node_id: agent,
            thread_id: num(row, "Thread_Id") as u32,
            grid: ["X", "Y", "Z"].map(|a| num(row, &format!("Grid_Size_{a}")) as u32),
            workgroup: ["X", "Y", "Z"].map(|a| num(row, &format!("Workgroup_Size_{a}")) as u32),
            private_segment_size: num(row, "Scratch_Size") as u32,
            group_segment_size: 0,
            region: 0,
            reserved: 0,
        });
    }
    let prefix = out_dir("kernel");
    let select = CsvSelection {
        kernels: true,
        ..Default::default()
    };
    let labels = AgentLabels::new(Vec::new(), AgentIndex::Relative);
    let written = write_csv(&prefix, &s.1, &labels, select).unwrap();
    check(
        &prefix,
        &written,
        "kernel_trace",
        &samples.path("kernel_trace.csv"),
    );
}

#[test]
fn memory_copy_trace_round_trips() {
    let Some(samples) = samples() else { return };
    let (_, rows) = samples.rows("memory_copy_trace.csv");
    let mut t = ProcessTrace::default();
    for row in &rows {
        let direction = [CopyDirection::HostToDevice, CopyDirection::DeviceToHost]
            .into_iter()
            .find(|d| d.csv_name() == row["Direction"])
            .unwrap();
        let node = |k: &str| row[k].trim_start_matches("Agent ").parse::<u32>().unwrap();
        t.copies.push(MemoryCopyRecord {
            correlation_id: num(row, "Correlation_Id"),
            start: num(row, "Start_Timestamp"),
            end: num(row, "End_Timestamp"),
            bytes: 0,
            stream_id: num(row, "Stream_Id"),
            src_node_id: node("Source_Agent_Id"),
            dst_node_id: node("Destination_Agent_Id"),
            thread_id: 0,
            direction: direction as u8,
            reserved: [0; 3],
        });
    }
    let prefix = out_dir("copy");
    let select = CsvSelection {
        copies: true,
        ..Default::default()
    };
    let written = write_csv(&prefix, &t, &agents(&[0, 4]), select).unwrap();
    check(
        &prefix,
        &written,
        "memory_copy_trace",
        &samples.path("memory_copy_trace.csv"),
    );
}

/// `counter_collection.csv` comes back byte for byte, in upstream's row order (by dispatch, then
/// counter), from counter records joined with dispatch and symbol records. The sample file ends
/// without a final newline (cut from the documentation); every row this crate writes ends with
/// one, the only difference allowed.
#[test]
fn counter_collection_round_trips_byte_for_byte() {
    let Some(samples) = samples() else { return };
    let upstream = samples.path("counter_collection.csv");
    let (header, rows) = rows(&upstream);
    assert_eq!(header, trace_export::csv::COUNTER_COLUMNS);
    let mut s = Strings(HashMap::new(), ProcessTrace::default());
    let mut counter_ids: HashMap<String, u32> = HashMap::new();
    // Records in reverse, so the writer's ordering is what puts the rows back.
    for row in rows.iter().rev() {
        let kernel_id = num(row, "Kernel_Id");
        let dispatch_id = num(row, "Dispatch_Id");
        let agent: u32 = row["Agent_Id"]
            .trim_start_matches("Agent ")
            .parse()
            .unwrap();
        s.symbol_from(row, kernel_id);
        if !s.1.dispatches.iter().any(|d| d.dispatch_id == dispatch_id) {
            s.1.pid = num(row, "Process_Id") as u32;
            s.1.dispatches.push(KernelDispatchRecord {
                dispatch_id,
                kernel_id,
                correlation_id: num(row, "Correlation_Id"),
                start: num(row, "Start_Timestamp"),
                end: num(row, "End_Timestamp"),
                queue_id: num(row, "Queue_Id"),
                stream_id: 0,
                agent_node_id: agent,
                thread_id: num(row, "Thread_Id") as u32,
                // Only the products are in the file.
                grid: [num(row, "Grid_Size") as u32, 1, 1],
                workgroup: [1, num(row, "Workgroup_Size") as u32, 1],
                private_segment_size: num(row, "Scratch_Size") as u32,
                group_segment_size: 0,
                region: 0,
                reserved: 0,
            });
        }
        let next = counter_ids.len() as u32 + 1;
        let counter_id = *counter_ids
            .entry(row["Counter_Name"].clone())
            .or_insert(next);
        let name = s.id(&row["Counter_Name"]);
        s.1.counters.push(CounterRecord {
            dispatch_id,
            correlation_id: num(row, "Correlation_Id"),
            value: row["Counter_Value"].parse().unwrap(),
            name,
            counter_id,
            agent_node_id: agent,
            reserved: 0,
        });
    }
    let prefix = out_dir("counters");
    let select = CsvSelection {
        counters: true,
        stats: true,
        ..Default::default()
    };
    let written = write_csv(&prefix, &s.1, &agents(&[]), select).unwrap();
    // Only the counter file: counter_collection_stats is never written (upstream's is always
    // empty), and counters add nothing to domain_stats.
    assert_eq!(written, [prefix.file("counter_collection", "csv")]);
    let ours = std::fs::read_to_string(&written[0]).unwrap();
    let mut theirs = std::fs::read_to_string(&upstream).unwrap();
    if !theirs.ends_with('\n') {
        theirs.push('\n');
    }
    assert_eq!(ours, theirs);
}

#[test]
fn stats_number_formats_match_upstream() {
    let Some(samples) = samples() else { return };
    let (header, rows) = samples.rows("hip_api_stats.csv");
    assert_eq!(header, trace_export::stats::STATS_COLUMNS);
    let grand: u64 = rows.iter().map(|r| num(r, "TotalDurationNs")).sum();
    for row in &rows {
        let (calls, total) = (num(row, "Calls"), num(row, "TotalDurationNs"));
        assert_eq!(
            fmt_ns(total as f64 / calls as f64),
            row["AverageNs"],
            "{}",
            row["Name"]
        );
        assert_eq!(
            fmt_percent(100.0 * total as f64 / grand as f64),
            row["Percentage"],
            "{}",
            row["Name"]
        );
        if calls == 1 {
            assert_eq!(fmt_ns(0.0), row["StdDev"]);
        }
    }
}

#[test]
fn empty_domains_write_no_file_and_stats_cover_written_domains() {
    let mut t = ProcessTrace {
        pid: 3,
        ..Default::default()
    };
    t.strings.insert(1, "hipMalloc".into());
    t.operations.insert((ApiDomain::HipRuntime as u8, 215), 1);
    for i in 0..3u64 {
        t.api.push(ApiRecord {
            correlation_id: i + 1,
            start: 100 * i,
            end: 100 * i + 10 + i,
            thread_id: 3,
            operation: 215,
            domain: ApiDomain::HipRuntime as u8,
            reserved: 0,
        });
    }
    let prefix = out_dir("empty");
    let all = CsvSelection {
        hip: true,
        hsa: true,
        kernels: true,
        copies: true,
        markers: true,
        allocations: true,
        scratch: true,
        counters: true,
        stats: true,
    };
    let written = write_csv(&prefix, &t, &AgentLabels::default(), all).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "out_hip_api_trace.csv",
            "out_hip_api_stats.csv",
            "out_domain_stats.csv"
        ]
    );
    let stats = std::fs::read_to_string(&written[1]).unwrap();
    assert_eq!(
        stats.lines().nth(1).unwrap(),
        "\"hipMalloc\",3,33,11.000000,100.00,10,12,1.000000"
    );
}

/// A GPU agent whose every property differs, so a column written from the wrong field shows.
fn gpu_agent() -> Agent {
    Agent {
        kind: AgentKind::Gpu,
        logical_node_id: 1,
        node_id: 3,
        logical_node_type_id: 0,
        name: "gfx1150".into(),
        product_name: "AMD Radeon(TM) 890M \"Graphics\"".into(),
        vendor_name: "AMD".into(),
        model_name: "m".into(),
        cpu_cores_count: 0,
        gpu: Some(GpuProperties {
            gfx_target_version: 110500,
            simd_count: 32,
            simd_per_cu: 2,
            cu_count: 16,
            num_shader_banks: 1,
            simd_arrays_per_engine: 2,
            array_count: 2,
            cu_per_engine: 16,
            cu_per_simd_array: 8,
            wave_front_size: 32,
            max_waves_per_simd: 16,
            max_waves_per_cu: 32,
            max_slots_scratch_cu: 33,
            lds_size_in_kb: 64,
            gds_size_in_kb: 65,
            num_gws: 66,
            num_xcc: 1,
            num_sdma_engines: 2,
            num_sdma_xgmi_engines: 3,
            num_sdma_queues_per_engine: 4,
            num_cp_queues: 5,
            max_engine_clk_fcompute: 2900,
            max_engine_clk_ccompute: 3100,
            vendor_id: 4098,
            device_id: 5390,
            location_id: 50176,
            domain: 7,
            family_id: 150,
            capability: 0x1234,
            hive_id: 0xdead_beef_0001,
            gpu_id: 41234,
            fw_version: 42,
            sdma_fw_version: 17,
            unique_id: 0x0123_4567_89AB_CDEF,
            local_mem_size: 536_870_912,
            workgroup_max_size: 1024,
            workgroup_max_dim: [1024, 1023, 1022],
            grid_max_size: i32::MAX as u32,
            grid_max_dim: [i32::MAX as u32, 65535, 65534],
            luid: Some(Luid { low: 1, high: 2 }),
            wallclock_khz: Some(100_000),
        }),
    }
}

/// `agent_info.csv` has rocprofv3's 53 columns, written from the one agent type: the expected
/// rows are what the writer produced before the agent record and the CSV row were the same type
/// (CPU columns of GPU properties 0, rows by node id, `"` doubled).
#[test]
fn agent_info_is_written_from_the_agent_record() {
    let cpu = cpu_agent(0, 0, "AMD Ryzen AI 9 HX 370", 24);
    let labels = AgentLabels::new(vec![gpu_agent(), cpu], AgentIndex::TypeRelative);
    assert_eq!(labels.label(3), "GPU 0");
    assert_eq!(labels.label(0), "CPU 0");
    let prefix = out_dir("agent-info");
    let written = write_csv(
        &prefix,
        &ProcessTrace::default(),
        &labels,
        CsvSelection::default(),
    )
    .unwrap();
    assert_eq!(written, [prefix.file("agent_info", "csv")]);
    let text = std::fs::read_to_string(&written[0]).unwrap();
    let expected = [
        GOLDEN_HEADER,
        r#"0,0,"CPU",24,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"AMD Ryzen AI 9 HX 370","CPU","AMD Ryzen AI 9 HX 370","""#,
        r#"3,1,"GPU",0,32,0,0,16,64,65,66,32,1,16,2,1,2,8,2,33,110500,4098,5390,50176,7,0,2,3,4,5,3100,2900,17,42,4660,16,32,150,1024,2147483647,536870912,244837814042625,41234,1024,1023,1022,2147483647,65535,65534,"gfx1150","AMD","AMD Radeon(TM) 890M ""Graphics""","m""#,
    ];
    assert_eq!(text, expected.map(|l| format!("{l}\n")).concat());
}

/// The header line, kept literally so that a renamed or moved column shows.
const GOLDEN_HEADER: &str = r#""Node_Id","Logical_Node_Id","Agent_Type","Cpu_Cores_Count","Simd_Count","Cpu_Core_Id_Base","Simd_Id_Base","Max_Waves_Per_Simd","Lds_Size_In_Kb","Gds_Size_In_Kb","Num_Gws","Wave_Front_Size","Num_Xcc","Cu_Count","Array_Count","Num_Shader_Banks","Simd_Arrays_Per_Engine","Cu_Per_Simd_Array","Simd_Per_Cu","Max_Slots_Scratch_Cu","Gfx_Target_Version","Vendor_Id","Device_Id","Location_Id","Domain","Drm_Render_Minor","Num_Sdma_Engines","Num_Sdma_Xgmi_Engines","Num_Sdma_Queues_Per_Engine","Num_Cp_Queues","Max_Engine_Clk_Ccompute","Max_Engine_Clk_Fcompute","Sdma_Fw_Version","Fw_Version","Capability","Cu_Per_Engine","Max_Waves_Per_Cu","Family_Id","Workgroup_Max_Size","Grid_Max_Size","Local_Mem_Size","Hive_Id","Gpu_Id","Workgroup_Max_Dim_X","Workgroup_Max_Dim_Y","Workgroup_Max_Dim_Z","Grid_Max_Dim_X","Grid_Max_Dim_Y","Grid_Max_Dim_Z","Name","Vendor_Name","Product_Name","Model_Name""#;
