//! `--memory-allocation-trace` and `--scratch-memory-trace` end to end on the simulated stack,
//! with the `scratch-memory` workload: three device allocations (16 KiB, 16 KiB, 64 KiB) besides
//! the HIP runtime's own two host allocations (kernel arguments 512 KiB, staging 1 MiB), all
//! freed; kernels with 256 B and then 1 KiB of private memory per work-item, so the runtime
//! allocates the queue's scratch, replaces it with a larger one, and frees it at queue
//! destruction. Checked in every format (CSV, rocpd, JSON, Perfetto), with `-s`, and without
//! the flags.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or
//! `cargo xtask build` first).

mod support;

use prost::Message;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use support::*;
use trace_export::perfetto::proto::{self, Data};

type Row = HashMap<String, String>;

const ALLOCATION_HEADER: &str = "\"Kind\",\"Operation\",\"Agent_Id\",\"Allocation_Size\",\"Address\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";
const SCRATCH_HEADER: &str = "\"Kind\",\"Operation\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Alloc_Flags\",\"Start_Timestamp\",\"End_Timestamp\"";

/// The workload's device allocations, and the HIP runtime's host ones.
const DEVICE_SIZES: [u64; 3] = [16384, 16384, 65536];
const HOST_SIZES: [u64; 2] = [524_288, 1_048_576];
/// Private bytes per work-item of the workload's two kernels.
const PRIVATE: [u64; 2] = [256, 1024];

struct Run {
    dir: PathBuf,
    stderr: String,
}

fn run(tag: &str, options: &[&str], app: &str) -> Run {
    let tmp = scratch("memory", tag);
    let dir = tmp.join("out");
    let out = rocprof(&tmp)
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload(app))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    Run {
        dir,
        stderr: stderr(&out),
    }
}

impl Run {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("run_{name}"))
    }

    fn header(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.path(&format!("{name}.csv"))).unwrap();
        text.lines().next().unwrap().to_owned()
    }

    fn csv(&self, name: &str) -> Vec<Row> {
        let path = self.path(&format!("{name}.csv"));
        let mut r =
            csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        r.deserialize().map(Result::unwrap).collect()
    }

    /// The `Agent_Id` label and `Cu_Count` of the GPU agent.
    fn gpu(&self) -> (String, u64) {
        let agents = self.csv("agent_info");
        let gpu = agents.iter().find(|a| a["Agent_Type"] == "GPU").unwrap();
        (
            format!("Agent {}", gpu["Logical_Node_Id"]),
            gpu["Cu_Count"].parse().unwrap(),
        )
    }
}

fn num(r: &Row, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

/// The upstream sample's header line, or `None` (said) when the samples are absent.
fn upstream_header(name: &str) -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/upstream-docs-samples")
        .join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text.lines().next().unwrap_or("").to_owned()),
        Err(_) => {
            eprintln!(
                "SKIPPED (upstream header comparison): {} is absent",
                path.display()
            );
            None
        }
    }
}

/// The scratch bytes the simulated runtime allocates for `private` bytes per work-item
/// (ROCr's rule, wave32, 32 slots per compute unit).
fn scratch_bytes(private: u64, cus: u64) -> u64 {
    (private.next_multiple_of(16) * 32).next_multiple_of(1024) * cus * 32
}

/// Checks the allocation rows against the workload; returns the rows.
fn check_allocations(r: &Run) -> Vec<Row> {
    assert_eq!(r.header("memory_allocation_trace"), ALLOCATION_HEADER);
    if let Some(h) = upstream_header("memory_allocation_trace.csv") {
        assert_eq!(r.header("memory_allocation_trace"), h);
    }
    let (gpu, _) = r.gpu();
    let rows = r.csv("memory_allocation_trace");
    let allocs: Vec<&Row> = rows
        .iter()
        .filter(|x| x["Operation"] == "MEMORY_ALLOCATION_ALLOCATE")
        .collect();
    let frees: Vec<&Row> = rows
        .iter()
        .filter(|x| x["Operation"] == "MEMORY_ALLOCATION_FREE")
        .collect();
    assert_eq!(
        allocs.len() + frees.len(),
        rows.len(),
        "only these operations"
    );
    let mut device: Vec<u64> = allocs
        .iter()
        .filter(|x| x["Agent_Id"] == gpu)
        .map(|x| num(x, "Allocation_Size"))
        .collect();
    device.sort_unstable();
    assert_eq!(
        device, DEVICE_SIZES,
        "the workload's hipMallocs, on the GPU"
    );
    let mut host: Vec<u64> = allocs
        .iter()
        .filter(|x| x["Agent_Id"] != gpu)
        .map(|x| num(x, "Allocation_Size"))
        .collect();
    host.sort_unstable();
    assert_eq!(host, HOST_SIZES, "HIP's kernarg and staging buffers");
    assert_eq!(frees.len(), allocs.len(), "everything is freed");
    for x in &rows {
        let address = &x["Address"];
        assert!(
            address.len() == 18
                && address.starts_with("0x")
                && address[2..]
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            "{address}"
        );
        assert!(num(x, "Start_Timestamp") <= num(x, "End_Timestamp"));
    }
    for f in &frees {
        assert_eq!((f["Agent_Id"].as_str(), num(f, "Allocation_Size")), ("", 0));
        let allocated = allocs
            .iter()
            .find(|a| a["Address"] == f["Address"])
            .unwrap_or_else(|| panic!("free of {} never allocated", f["Address"]));
        assert!(num(allocated, "End_Timestamp") <= num(f, "Start_Timestamp"));
    }
    rows
}

/// Checks the scratch rows: alloc, free (replaced by a larger one), alloc, free (queue
/// destroyed), on one GPU queue.
fn check_scratch(r: &Run) -> Vec<Row> {
    assert_eq!(r.header("scratch_memory_trace"), SCRATCH_HEADER);
    if let Some(h) = upstream_header("scratch_memory_trace.csv") {
        assert_eq!(r.header("scratch_memory_trace"), h);
    }
    let (gpu, _) = r.gpu();
    let rows = r.csv("scratch_memory_trace");
    let ops: Vec<&str> = rows.iter().map(|x| x["Operation"].as_str()).collect();
    assert_eq!(
        ops,
        [
            "SCRATCH_MEMORY_ALLOC",
            "SCRATCH_MEMORY_FREE",
            "SCRATCH_MEMORY_ALLOC",
            "SCRATCH_MEMORY_FREE"
        ]
    );
    for x in &rows {
        assert_eq!(x["Kind"], "SCRATCH_MEMORY");
        assert_eq!(x["Agent_Id"], gpu);
        assert_eq!(x["Queue_Id"], rows[0]["Queue_Id"], "one queue");
        assert_eq!(x["Alloc_Flags"], "0");
        assert!(num(x, "Start_Timestamp") <= num(x, "End_Timestamp"));
    }
    rows
}

#[test]
fn both_flags_record_the_workloads_allocations_and_scratch_in_every_format() {
    let r = run(
        "flags",
        &[
            "--memory-allocation-trace",
            "--scratch-memory-trace",
            "-f",
            "csv,rocpd,json,pftrace",
        ],
        "scratch-memory",
    );
    let allocations = check_allocations(&r);
    let scratch = check_scratch(&r);
    let (_, cus) = r.gpu();
    assert!(
        !r.path("kernel_trace.csv").exists() && !r.path("hip_api_trace.csv").exists(),
        "only what was asked"
    );

    // rocpd: one row per record, type and level as upstream maps them, the scratch sizes.
    let c = rusqlite::Connection::open(r.path("results.db")).unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |x| x.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM rocpd_memory_allocate WHERE level = 'REAL'") as usize,
        allocations.len()
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM rocpd_memory_allocate WHERE level = 'REAL' AND type = 'FREE' AND agent_id IS NULL"
        ),
        (allocations.len() / 2) as i64
    );
    let sizes: Vec<i64> = {
        let mut s = c
            .prepare("SELECT size FROM scratch_memory WHERE operation = 'ALLOC' ORDER BY start")
            .unwrap();
        s.query_map([], |x| x.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let expected: Vec<i64> = PRIVATE
        .iter()
        .map(|&p| scratch_bytes(p, cus) as i64)
        .collect();
    assert_eq!(sizes, expected, "ROCr's scratch size for 256 B, then 1 KiB");
    assert_eq!(
        count("SELECT COUNT(*) FROM memory_allocations") as usize,
        allocations.len() + scratch.len()
    );
    let broken = count("SELECT COUNT(*) FROM pragma_foreign_key_check");
    assert_eq!(broken, 0, "dangling references");

    // JSON: the same records in buffer_records.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.path("results.json")).unwrap()).unwrap();
    let records = &doc["rocprofiler-sdk-tool"][0]["buffer_records"];
    let json_allocations = records["memory_allocation"].as_array().unwrap();
    assert_eq!(json_allocations.len(), allocations.len());
    let mut csv_addresses: Vec<&str> = allocations.iter().map(|x| x["Address"].as_str()).collect();
    let mut json_addresses: Vec<&str> = json_allocations
        .iter()
        .map(|x| x["address"].as_str().unwrap())
        .collect();
    csv_addresses.sort_unstable();
    json_addresses.sort_unstable();
    assert_eq!(csv_addresses, json_addresses);
    let json_scratch = records["scratch_memory"].as_array().unwrap();
    let json_sizes: Vec<i64> = json_scratch
        .iter()
        .filter(|x| x["operation"] == 1)
        .map(|x| x["allocation_size"].as_i64().unwrap())
        .collect();
    assert_eq!(json_sizes, expected);

    // Perfetto: the memory counter tracks.
    let bytes = std::fs::read(r.path("results.pftrace")).unwrap();
    let packets = proto::Trace::decode(bytes.as_slice()).unwrap().packet;
    let names: Vec<String> = packets
        .iter()
        .filter_map(|p| match &p.data {
            Some(Data::TrackDescriptor(d)) => d.name.clone(),
            _ => None,
        })
        .collect();
    for prefix in ["ALLOCATE BYTES on ", "SCRATCH MEMORY on ", "FREE BYTES"] {
        assert!(
            names.iter().any(|n| n.starts_with(prefix)),
            "no {prefix} track in {names:?}"
        );
    }
}

#[test]
fn sys_trace_includes_them_with_the_hip_calls_correlation_ids() {
    let r = run("sys", &["-s"], "scratch-memory");
    let allocations = check_allocations(&r);
    check_scratch(&r);
    // Each device allocation carries the correlation id of the hipMalloc that made it.
    let (gpu, _) = r.gpu();
    let mallocs: Vec<u64> = r
        .csv("hip_api_trace")
        .iter()
        .filter(|x| x["Function"] == "hipMalloc")
        .map(|x| num(x, "Correlation_Id"))
        .collect();
    let mut device: Vec<u64> = allocations
        .iter()
        .filter(|x| x["Agent_Id"] == gpu)
        .map(|x| num(x, "Correlation_Id"))
        .collect();
    device.sort_unstable();
    assert_eq!(device, mallocs);
}

#[test]
fn without_the_flags_no_memory_file_is_written() {
    let r = run("none", &["--kernel-trace"], "scratch-memory");
    assert!(r.path("kernel_trace.csv").exists());
    for name in [
        "memory_allocation_trace.csv",
        "scratch_memory_trace.csv",
        "memory_allocation_stats.csv",
        "scratch_memory_stats.csv",
    ] {
        assert!(!r.path(name).exists(), "{name} written unasked");
    }
}

#[test]
fn no_scratch_event_is_explained() {
    let r = run("explained", &["--scratch-memory-trace"], "vector-add");
    assert!(!r.path("scratch_memory_trace.csv").exists());
    assert!(
        r.stderr
            .contains("--scratch-memory-trace: no scratch memory event was recorded"),
        "{}",
        r.stderr
    );
}
