//! Interoperability with real rocprofv3 output: each upstream sample is parsed into records,
//! written back with this crate, and must come back line for line (order aside: upstream
//! writes in completion order, this crate by start time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_records::agents::{AgentIndex, AgentInfo, AgentLabels};
use trace_records::csv::{CsvSelection, OutputPrefix, write_csv};
use trace_records::stats::{fmt_ns, fmt_percent};
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

fn agents(ids: &[u32]) -> AgentLabels {
    let agents = ids
        .iter()
        .map(|&id| AgentInfo {
            node_id: id,
            logical_node_id: id,
            ..Default::default()
        })
        .collect();
    AgentLabels::new(agents, AgentIndex::Relative)
}

fn num(row: &HashMap<String, String>, key: &str) -> u64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}={}", row[key]))
}

struct Strings(HashMap<String, StringId>, ProcessTrace);

impl Strings {
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
        if s.1.symbol(kernel_id).is_none() {
            let name = s.id(&row["Kernel_Name"]);
            s.1.symbols.push(KernelSymbolRecord {
                kernel_id,
                kernel_object: 0,
                name,
                arch_vgpr_count: num(row, "VGPR_Count") as u32,
                accum_vgpr_count: num(row, "Accum_VGPR_Count") as u32,
                sgpr_count: num(row, "SGPR_Count") as u32,
                group_segment_size: num(row, "LDS_Block_Size") as u32,
                private_segment_size: 0,
                kernarg_segment_size: 0,
                reserved: 0,
            });
        }
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

#[test]
fn stats_number_formats_match_upstream() {
    let Some(samples) = samples() else { return };
    let (header, rows) = samples.rows("hip_api_stats.csv");
    assert_eq!(header, trace_records::stats::STATS_COLUMNS);
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
