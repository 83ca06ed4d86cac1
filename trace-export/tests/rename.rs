//! `--kernel-rename` across every writer over one synthetic trace: two dispatches of one kernel,
//! the first noted inside the ROCTx range `phase_a`, the second outside any range. Each writer
//! names the first `phase_a` and the second by its kernel; with the regions cleared (no
//! `--kernel-rename`) both keep the kernel's name; rocpd's `region_name_id` reads back.

use std::path::PathBuf;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::output::OutputPrefix;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::agents::{AgentIndex, AgentKind, AgentLabels};
use trace_records::docs::AgentsList;
use trace_records::*;

const KERNEL: &str = "zzz_kernel(int)";
const REGION: &str = "phase_a";

mod common;
use common::agent;

fn scratch(test: &str) -> PathBuf {
    common::scratch("rename", test)
}

fn trace() -> ProcessTrace {
    let mut t = ProcessTrace {
        pid: 42,
        ppid: 1,
        created_ns: 1_000,
        ..Default::default()
    };
    t.docs.agents = Some(AgentsList {
        agents: vec![
            agent(AgentKind::Cpu, 0, "cpu"),
            agent(AgentKind::Gpu, 1, "gfx1150"),
        ],
    });
    t.strings.insert(1, KERNEL.into());
    t.strings.insert(2, REGION.into());
    t.symbols.push(KernelSymbolRecord {
        kernel_id: 1,
        kernel_object: 0x1000,
        name: 1,
        arch_vgpr_count: 8,
        accum_vgpr_count: 0,
        sgpr_count: 16,
        group_segment_size: 0,
        private_segment_size: 0,
        kernarg_segment_size: 8,
        code_object_id: 0,
    });
    for (id, region) in [(1u64, 2), (2, 0)] {
        t.dispatches.push(KernelDispatchRecord {
            dispatch_id: id,
            kernel_id: 1,
            correlation_id: id,
            start: 1_000 + 100 * id,
            end: 1_050 + 100 * id,
            agent_node_id: 1,
            thread_id: 7,
            grid: [64, 1, 1],
            workgroup: [64, 1, 1],
            region,
            ..Default::default()
        });
    }
    t
}

fn labels(t: &ProcessTrace) -> AgentLabels {
    AgentLabels::new(t.docs.agents().to_vec(), AgentIndex::Relative)
}

/// kernel_trace.csv's Kernel_Name column and kernel_stats.csv's names.
fn csv_names(t: &ProcessTrace, tag: &str) -> (Vec<String>, Vec<String>) {
    let dir = scratch(tag);
    let prefix = OutputPrefix(dir.join("run"));
    let select = CsvSelection {
        kernels: true,
        stats: true,
        ..Default::default()
    };
    write_csv(&prefix, t, &labels(t), select).unwrap();
    let column = |file: &str, name: &str| -> Vec<String> {
        let mut r = csv::Reader::from_path(prefix.file(file, "csv")).unwrap();
        let k = r.headers().unwrap().iter().position(|h| h == name).unwrap();
        r.records().map(|row| row.unwrap()[k].to_owned()).collect()
    };
    let mut stats = column("kernel_stats", "Name");
    stats.sort();
    (column("kernel_trace", "Kernel_Name"), stats)
}

#[test]
fn csv_and_stats_name_a_dispatch_after_its_range() {
    let t = trace();
    let (names, stats) = csv_names(&t, "csv");
    assert_eq!(names, [REGION, KERNEL]);
    assert_eq!(stats, [REGION, KERNEL]);

    let mut plain = trace();
    trace_export::rename::apply(&mut plain, false);
    let (names, stats) = csv_names(&plain, "csv-plain");
    assert_eq!(names, [KERNEL, KERNEL]);
    assert_eq!(stats, [KERNEL]);
}

#[test]
fn rocpd_keeps_the_region_name_and_reads_it_back() {
    let t = trace();
    let labels = labels(&t);
    let view = ProcessView::new(&t, &labels);
    let path = scratch("rocpd").join("run_results.db");
    trace_export::rocpd::write_rocpd(&path, &RunInfo::default(), std::slice::from_ref(&view))
        .unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT S.string FROM rocpd_kernel_dispatch D JOIN rocpd_string S \
             ON S.id = D.region_name_id ORDER BY D.dispatch_id",
        )
        .unwrap();
    let regions: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        regions,
        [REGION, ""],
        "upstream's empty string when not renamed"
    );

    let back = trace_export::rocpd_read::read(&path).unwrap();
    let names: Vec<Option<&str>> = back[0]
        .dispatches
        .iter()
        .map(|d| trace_export::rename::region(&back[0], d))
        .collect();
    assert_eq!(names, [Some(REGION), None]);
}

#[test]
fn json_and_perfetto_name_the_renamed_dispatch() {
    let t = trace();
    let labels = labels(&t);
    let view = ProcessView::new(&t, &labels);
    let views = std::slice::from_ref(&view);
    let dir = scratch("json");
    let json_path = dir.join("run_results.json");
    trace_export::json::write_json(&json_path, &RunInfo::default(), views, &Default::default())
        .unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let p = &doc["rocprofiler-sdk-tool"][0];
    let external = p["strings"]["correlation_id"]["external"]
        .as_array()
        .unwrap();
    assert_eq!(external.len(), 1, "{external:?}");
    assert_eq!(external[0]["value"], REGION);
    let keys: Vec<u64> = p["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["correlation_id"]["external"].as_u64().unwrap())
        .collect();
    assert_eq!(keys, [external[0]["key"].as_u64().unwrap(), 0]);

    let pftrace = dir.join("run_results.pftrace");
    trace_export::perfetto::write_perfetto(
        &pftrace,
        &RunInfo::default(),
        views,
        &Default::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&pftrace).unwrap();
    let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has(REGION), "the renamed slice's interned name");

    let mut plain = trace();
    trace_export::rename::apply(&mut plain, false);
    let view = ProcessView::new(&plain, &labels);
    trace_export::perfetto::write_perfetto(
        &pftrace,
        &RunInfo::default(),
        std::slice::from_ref(&view),
        &Default::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&pftrace).unwrap();
    assert!(!bytes.windows(REGION.len()).any(|w| w == REGION.as_bytes()));
}
