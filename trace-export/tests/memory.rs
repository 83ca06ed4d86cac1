//! `memory_allocation_trace.csv` and `scratch_memory_trace.csv`: upstream's documentation
//! samples are parsed into records, written back, and must come back byte for byte (header
//! included); arbitrary records written and parsed back keep every field; the stats files and
//! `domain_stats.csv` get their MEMORY_ALLOCATION / SCRATCH_MEMORY rows.

use proptest::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_export::csv::{CsvSelection, address_cell, write_csv};
use trace_export::output::OutputPrefix;
use trace_records::agents::AgentLabels;
use trace_records::*;

fn samples_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(crate_dir)
        .join("shared/data/upstream-docs-samples")
}

/// The sample's path, or `None` after saying on stderr that the test is skipped.
fn sample(name: &str) -> Option<PathBuf> {
    let path = samples_dir().join(name);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "SKIPPED: the upstream rocprofv3 sample {} is absent",
            path.display()
        );
        None
    }
}

fn rows(path: &Path) -> (String, Vec<HashMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let header = text.lines().next().unwrap().to_owned();
    let mut r = ::csv::Reader::from_path(path).unwrap();
    (header, r.deserialize().map(Result::unwrap).collect())
}

mod common;

fn scratch_dir(test: &str) -> PathBuf {
    common::scratch("memory", test)
}

fn out_dir(test: &str) -> OutputPrefix {
    OutputPrefix(scratch_dir(test).join("out"))
}

fn selection() -> CsvSelection {
    CsvSelection {
        allocations: true,
        scratch: true,
        ..Default::default()
    }
}

fn agent_node(cell: &str) -> Option<u32> {
    cell.strip_prefix("Agent ").map(|n| n.parse().unwrap())
}

fn operation<T: Copy>(all: &[T], label: impl Fn(T) -> &'static str, cell: &str) -> T {
    *all.iter()
        .find(|o| label(**o) == cell)
        .unwrap_or_else(|| panic!("unknown operation {cell}"))
}

fn allocation_from(row: &HashMap<String, String>) -> MemoryAllocationRecord {
    let n = |k: &str| row[k].parse::<u64>().unwrap();
    let agent = agent_node(&row["Agent_Id"]);
    let op = operation(
        &AllocationOperation::ALL,
        AllocationOperation::csv_name,
        &row["Operation"],
    );
    MemoryAllocationRecord {
        correlation_id: n("Correlation_Id"),
        start: n("Start_Timestamp"),
        end: n("End_Timestamp"),
        address: u64::from_str_radix(row["Address"].strip_prefix("0x").unwrap(), 16).unwrap(),
        size: n("Allocation_Size"),
        thread_id: 1,
        agent_node_id: agent.unwrap_or(0),
        operation: op as u8,
        has_agent: u8::from(agent.is_some()),
        reserved: [0; 6],
    }
}

fn scratch_from(row: &HashMap<String, String>) -> ScratchMemoryRecord {
    let n = |k: &str| row[k].parse::<u64>().unwrap();
    let op = operation(
        &ScratchOperation::ALL,
        ScratchOperation::csv_name,
        &row["Operation"],
    );
    ScratchMemoryRecord {
        correlation_id: 0,
        start: n("Start_Timestamp"),
        end: n("End_Timestamp"),
        queue_id: n("Queue_Id"),
        size: 0,
        thread_id: n("Thread_Id") as u32,
        agent_node_id: agent_node(&row["Agent_Id"]).unwrap(),
        flags: n("Alloc_Flags") as u32,
        operation: op as u8,
        reserved: [0; 3],
    }
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    let header = lines.remove(0);
    lines.sort_unstable();
    lines.insert(0, header);
    lines
}

#[test]
fn upstream_samples_come_back_byte_for_byte() {
    let (Some(alloc), Some(scratch)) = (
        sample("memory_allocation_trace.csv"),
        sample("scratch_memory_trace.csv"),
    ) else {
        return;
    };
    let (alloc_header, alloc_rows) = rows(&alloc);
    let (scratch_header, scratch_rows) = rows(&scratch);
    let mut t = ProcessTrace {
        pid: 9,
        ..Default::default()
    };
    t.allocations = alloc_rows.iter().map(allocation_from).collect();
    t.scratch = scratch_rows.iter().map(scratch_from).collect();
    let prefix = out_dir("upstream");
    let written = write_csv(&prefix, &t, &AgentLabels::default(), selection()).unwrap();
    assert_eq!(written.len(), 2, "{written:?}");
    for (name, header, upstream) in [
        ("memory_allocation_trace", alloc_header, alloc),
        ("scratch_memory_trace", scratch_header, scratch),
    ] {
        let ours = std::fs::read_to_string(prefix.file(name, "csv")).unwrap();
        assert_eq!(ours.lines().next().unwrap(), header, "{name}: header");
        let theirs = std::fs::read_to_string(upstream).unwrap();
        assert_eq!(sorted_lines(&ours), sorted_lines(&theirs), "{name}");
    }
}

#[test]
fn frees_name_no_agent_and_stats_cover_both_domains() {
    let mut t = ProcessTrace {
        pid: 4,
        ..Default::default()
    };
    let alloc = |start, op: AllocationOperation, size| MemoryAllocationRecord {
        correlation_id: start,
        start,
        end: start + 10,
        address: 0xabc000,
        size,
        thread_id: 4,
        agent_node_id: 1,
        operation: op as u8,
        has_agent: u8::from(op.is_allocation()),
        reserved: [0; 6],
    };
    t.allocations = vec![
        alloc(100, AllocationOperation::Allocate, 4096),
        alloc(200, AllocationOperation::Free, 0),
    ];
    t.scratch = vec![ScratchMemoryRecord {
        correlation_id: 0,
        start: 150,
        end: 190,
        queue_id: 2,
        size: 1 << 20,
        thread_id: 5,
        agent_node_id: 1,
        flags: 1,
        operation: ScratchOperation::Alloc as u8,
        reserved: [0; 3],
    }];
    let prefix = out_dir("stats");
    let select = CsvSelection {
        stats: true,
        ..selection()
    };
    write_csv(&prefix, &t, &AgentLabels::default(), select).unwrap();
    let text = std::fs::read_to_string(prefix.file("memory_allocation_trace", "csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "\"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_ALLOCATE\",\"Agent 1\",4096,\"0x0000000000abc000\",100,100,110"
    );
    assert_eq!(
        lines[2],
        "\"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_FREE\",\"\",0,\"0x0000000000abc000\",200,200,210"
    );
    let scratch = std::fs::read_to_string(prefix.file("scratch_memory_trace", "csv")).unwrap();
    assert_eq!(
        scratch.lines().nth(1).unwrap(),
        "\"SCRATCH_MEMORY\",\"SCRATCH_MEMORY_ALLOC\",\"Agent 1\",2,5,1,150,190"
    );
    let stats = std::fs::read_to_string(prefix.file("memory_allocation_stats", "csv")).unwrap();
    assert!(
        stats.contains("\"MEMORY_ALLOCATION_ALLOCATE\",1,10,"),
        "{stats}"
    );
    assert!(
        stats.contains("\"MEMORY_ALLOCATION_FREE\",1,10,"),
        "{stats}"
    );
    let stats = std::fs::read_to_string(prefix.file("scratch_memory_stats", "csv")).unwrap();
    assert!(stats.contains("\"SCRATCH_MEMORY_ALLOC\",1,40,"), "{stats}");
    let domains = std::fs::read_to_string(prefix.file("domain_stats", "csv")).unwrap();
    assert!(domains.contains("\"MEMORY_ALLOCATION\",2,20,"), "{domains}");
    assert!(domains.contains("\"SCRATCH_MEMORY\",1,40,"), "{domains}");
}

#[test]
fn nothing_recorded_writes_no_file() {
    let t = ProcessTrace::default();
    let prefix = out_dir("empty");
    let written = write_csv(&prefix, &t, &AgentLabels::default(), selection()).unwrap();
    assert!(written.is_empty(), "{written:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Written rows parse back into the fields they were written from.
    #[test]
    fn rows_parse_back(
        records in proptest::collection::vec(
            (any::<u64>(), any::<u64>(), 0u64..1 << 40, 1u8..5, any::<u32>(), any::<u64>()),
            1..40,
        ),
    ) {
        let allocations = records
            .iter()
            .map(|&(address, size, start, op, node, correlation)| {
                let op = AllocationOperation::from_u8(op).unwrap();
                MemoryAllocationRecord {
                    correlation_id: correlation,
                    start,
                    end: start + 1,
                    address,
                    size: if op.is_allocation() { size } else { 0 },
                    thread_id: 1,
                    agent_node_id: node,
                    operation: op as u8,
                    has_agent: u8::from(op.is_allocation()),
                    reserved: [0; 6],
                }
            })
            .collect();
        let t = ProcessTrace {
            allocations,
            ..Default::default()
        };
        let prefix = out_dir("prop");
        write_csv(&prefix, &t, &AgentLabels::default(), selection()).unwrap();
        let (_, parsed) = rows(&prefix.file("memory_allocation_trace", "csv"));
        prop_assert_eq!(parsed.len(), t.allocations.len());
        for (row, r) in parsed.iter().zip(&t.allocations) {
            prop_assert_eq!(&row["Address"], &address_cell(r.address));
            prop_assert_eq!(row["Address"].len(), 18);
            let back = allocation_from(row);
            prop_assert_eq!(back.address, r.address);
            prop_assert_eq!((back.size, back.correlation_id, back.start, back.operation, back.has_agent),
                (r.size, r.correlation_id, r.start, r.operation, r.has_agent));
            if r.has_agent != 0 {
                prop_assert_eq!(back.agent_node_id, r.agent_node_id);
            } else {
                prop_assert_eq!(&row["Agent_Id"], "");
            }
        }
    }
}

/// A process with two allocations, their frees and a scratch alloc/free pair on queue 7.
fn memory_trace() -> ProcessTrace {
    let mut t = ProcessTrace {
        pid: 321,
        ppid: 1,
        created_ns: 1_000_000_000,
        ..Default::default()
    };
    let alloc =
        |start: u64, op: AllocationOperation, address: u64, size: u64| MemoryAllocationRecord {
            correlation_id: start,
            start: 1_000_000_000 + start,
            end: 1_000_000_000 + start + 5,
            address,
            size,
            thread_id: 321,
            agent_node_id: 1,
            operation: op as u8,
            has_agent: u8::from(op.is_allocation()),
            reserved: [0; 6],
        };
    t.allocations = vec![
        alloc(10, AllocationOperation::Allocate, 0x7000_0000, 4096),
        alloc(20, AllocationOperation::VmemAllocate, 0x55, 1 << 21),
        alloc(30, AllocationOperation::Free, 0x7000_0000, 0),
        alloc(40, AllocationOperation::VmemFree, 0x55, 0),
    ];
    let scratch = |start: u64, op: ScratchOperation, size: u64| ScratchMemoryRecord {
        correlation_id: 100 + start,
        start: 1_000_000_000 + start,
        end: 1_000_000_000 + start + 7,
        queue_id: 7,
        size,
        thread_id: 322,
        agent_node_id: 1,
        flags: 0,
        operation: op as u8,
        reserved: [0; 3],
    };
    t.scratch = vec![
        scratch(15, ScratchOperation::Alloc, 1 << 22),
        scratch(45, ScratchOperation::Free, 0),
    ];
    t
}

/// type, level, agent_id, address, size, queue_id, extdata of a `rocpd_memory_allocate` row.
type AllocateRow = (String, String, Option<i64>, i64, i64, Option<i64>, String);

#[test]
fn rocpd_rows_and_views_map_operations_to_type_and_level() {
    let t = memory_trace();
    let labels = AgentLabels::default();
    let views = [trace_export::view::ProcessView::new(&t, &labels)];
    let dir = scratch_dir("rocpd");
    let path = dir.join("results.db");
    let run = trace_export::view::RunInfo::default();
    trace_export::rocpd::write_rocpd(&path, &run, &views).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<AllocateRow> = {
        let mut s = c
            .prepare(
                "SELECT type, level, agent_id, address, size, queue_id, extdata \
                 FROM rocpd_memory_allocate ORDER BY id",
            )
            .unwrap();
        s.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let kinds: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(
        kinds,
        [
            ("ALLOC", "REAL"),
            ("ALLOC", "VIRTUAL"),
            ("FREE", "REAL"),
            ("FREE", "VIRTUAL"),
            ("ALLOC", "SCRATCH"),
            ("FREE", "SCRATCH"),
        ]
    );
    assert_eq!(rows[0].2, Some(1), "an allocation names its agent");
    assert_eq!(rows[2].2, None, "a free names none");
    assert_eq!((rows[0].3, rows[0].4), (0x7000_0000, 4096));
    assert_eq!(rows[4].4, 1 << 22);
    assert_eq!(rows[4].5, Some(7), "scratch names its queue");
    assert_eq!(rows[4].6, r#"{"flags":0}"#);
    let broken: i64 = c
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(broken, 0, "dangling references");
    let n: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM memory_allocations WHERE category = 'MEMORY_ALLOCATION'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 4);
    let scratch: Vec<(String, i64, i64, String)> = {
        let mut s = c
            .prepare(
                "SELECT operation, queue_id, alloc_flags, category FROM scratch_memory ORDER BY start",
            )
            .unwrap();
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(
        scratch,
        [
            ("ALLOC".into(), 7, 0, "SCRATCH_MEMORY".into()),
            ("FREE".into(), 7, 0, "SCRATCH_MEMORY".into()),
        ]
    );
}

#[test]
fn a_database_gives_its_allocations_and_scratch_back() {
    let mut t = memory_trace();
    t.scratch[0].flags = 1;
    let labels = AgentLabels::default();
    let views = [trace_export::view::ProcessView::new(&t, &labels)];
    let dir = scratch_dir("roundtrip");
    let path = dir.join("results.db");
    trace_export::rocpd::write_rocpd(&path, &trace_export::view::RunInfo::default(), &views)
        .unwrap();
    let back = trace_export::rocpd_read::read(&path).unwrap();
    assert_eq!(back.len(), 1);
    // Correlation ids are rebuilt from the events, and a record without an agent has no
    // agent id; everything else comes back as written.
    let plain_a = |v: &[MemoryAllocationRecord]| -> Vec<MemoryAllocationRecord> {
        v.iter()
            .map(|a| MemoryAllocationRecord {
                correlation_id: 0,
                agent_node_id: if a.has_agent != 0 { a.agent_node_id } else { 0 },
                ..*a
            })
            .collect()
    };
    let plain_s = |v: &[ScratchMemoryRecord]| -> Vec<ScratchMemoryRecord> {
        v.iter()
            .map(|s| ScratchMemoryRecord {
                correlation_id: 0,
                ..*s
            })
            .collect()
    };
    assert_eq!(plain_a(&back[0].allocations), plain_a(&t.allocations));
    assert_eq!(plain_s(&back[0].scratch), plain_s(&t.scratch));
    assert_eq!(back[0].scratch[0].flags, 1, "the flags come from extdata");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_buffer_records_hold_allocations_and_scratch() {
    let t = memory_trace();
    let labels = AgentLabels::default();
    let views = [trace_export::view::ProcessView::new(&t, &labels)];
    let dir = scratch_dir("json");
    let path = dir.join("results.json");
    trace_export::json::write_json(
        &path,
        &trace_export::view::RunInfo::default(),
        &views,
        &Default::default(),
    )
    .unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let records = &doc["rocprofiler-sdk-tool"][0]["buffer_records"];
    let allocations = records["memory_allocation"].as_array().unwrap();
    assert_eq!(allocations.len(), 4);
    assert_eq!(allocations[0]["kind"], 16);
    assert_eq!(allocations[0]["operation"], 1);
    assert_eq!(allocations[0]["address"], "0x0000000070000000");
    assert_eq!(allocations[0]["allocation_size"], 4096);
    assert_eq!(allocations[2]["operation"], 3, "FREE");
    assert_eq!(
        allocations[2]["agent_id"]["handle"], 0,
        "a free names no agent"
    );
    assert_ne!(allocations[0]["agent_id"]["handle"], 0);
    let scratch = records["scratch_memory"].as_array().unwrap();
    assert_eq!(scratch.len(), 2);
    assert_eq!(scratch[0]["kind"], 12);
    assert_eq!(scratch[0]["queue_id"]["handle"], 7);
    assert_eq!(scratch[0]["allocation_size"], 1 << 22);
    assert_eq!(scratch[1]["operation"], 2, "FREE");
    // The name tables say what the operation numbers mean.
    let buffer_names = doc["rocprofiler-sdk-tool"][0]["strings"]["buffer_records"]
        .as_array()
        .unwrap();
    let ops = |kind: &str| {
        buffer_names
            .iter()
            .find(|k| k["kind"] == kind)
            .map(|k| k["operations"].clone())
            .unwrap()
    };
    assert_eq!(ops("MEMORY_ALLOCATION")[3], "MEMORY_ALLOCATION_FREE");
    assert_eq!(ops("SCRATCH_MEMORY")[1], "SCRATCH_MEMORY_ALLOC");
}

#[test]
fn perfetto_has_the_memory_counter_tracks() {
    use prost::Message;
    use trace_export::perfetto::proto::{self, CounterValue, Data};
    let t = memory_trace();
    let labels = AgentLabels::default();
    let views = [trace_export::view::ProcessView::new(&t, &labels)];
    let dir = scratch_dir("pftrace");
    let path = dir.join("results.pftrace");
    trace_export::perfetto::write_perfetto(
        &path,
        &trace_export::view::RunInfo::default(),
        &views,
        &Default::default(),
    )
    .unwrap();
    let packets = proto::Trace::decode(std::fs::read(&path).unwrap().as_slice())
        .unwrap()
        .packet;
    let mut tracks: HashMap<u64, String> = HashMap::new();
    let mut values: HashMap<String, Vec<i64>> = HashMap::new();
    for p in &packets {
        match &p.data {
            Some(Data::TrackDescriptor(d)) => {
                if let (Some(uuid), Some(name)) = (d.uuid, &d.name) {
                    tracks.insert(uuid, name.clone());
                }
            }
            Some(Data::TrackEvent(e)) => {
                if let (Some(track), Some(CounterValue::Int(v))) =
                    (e.track_uuid, &e.counter_value_field)
                {
                    values.entry(tracks[&track].clone()).or_default().push(*v);
                }
            }
            _ => {}
        }
    }
    // One 4 KiB allocation and one 2 MiB VMEM handle on agent 1, then both freed.
    assert_eq!(
        values["ALLOCATE BYTES on Agent [1] (UNK)"],
        [4096, 4096 + (1 << 21), 1 << 21, 0]
    );
    assert_eq!(values["FREE BYTES"], [4096, 4096 + (1 << 21)]);
    assert_eq!(values["SCRATCH MEMORY on Agent [1] (UNK)"], [1 << 22, 0]);
}
