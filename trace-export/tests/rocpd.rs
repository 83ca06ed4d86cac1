//! The rocpd writer over small synthetic traces: the string table, guids and table suffixes,
//! ids, regions and samples, events and their stacks, foreign keys, JSON columns, several
//! processes in one file, upstream's data and summary views stored in the file; and (ignored
//! by default) its speed.

use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use trace_export::rocpd;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::agents::{AgentIndex, AgentKind, AgentLabels};
use trace_records::docs::AgentsList;
use trace_records::*;

// The plain views upstream's readers need and the views upstream's writer stores (shared with
// rocprof-cli).
mod rocpd_views;
use rocpd_views::{PLAIN, UPSTREAM};

mod common;
use common::agent;

fn scratch(test: &str) -> PathBuf {
    common::scratch("rocpd", test)
}

/// A trace builder: strings interned on the way.
struct Trace(ProcessTrace);

impl Trace {
    fn new(pid: u32, created_ns: u64) -> Self {
        let mut t = ProcessTrace {
            pid,
            ppid: 1,
            created_ns,
            ..Default::default()
        };
        t.docs.agents = Some(AgentsList {
            agents: vec![
                agent(AgentKind::Cpu, 0, "AMD Ryzen"),
                agent(AgentKind::Gpu, 1, "gfx1150"),
            ],
        });
        Trace(t)
    }

    fn string(&mut self, s: &str) -> StringId {
        if let Some((&id, _)) = self.0.strings.iter().find(|(_, v)| v.as_str() == s) {
            return id;
        }
        let id = self.0.strings.len() as StringId + 1;
        self.0.strings.insert(id, s.into());
        id
    }

    fn op(&mut self, domain: ApiDomain, op: u16, name: &str) {
        let id = self.string(name);
        self.0.operations.insert((domain as u8, op), id);
    }

    fn call(&mut self, domain: ApiDomain, op: u16, corr: u64, (start, end): (u64, u64), tid: u32) {
        self.0.api.push(ApiRecord {
            correlation_id: corr,
            start,
            end,
            thread_id: tid,
            operation: op,
            domain: domain as u8,
            reserved: 0,
        });
    }
}

const HIP: ApiDomain = ApiDomain::HipRuntime;
const HSA: ApiDomain = ApiDomain::HsaCore;

/// One process: a `hipMemcpy` (with a nested HSA call) that issues a copy, a
/// `hipLaunchKernel` that enqueues a counted dispatch, zero-length calls on two threads, a
/// push/pop range and a mark.
fn sample_trace(pid: u32, created_ns: u64) -> ProcessTrace {
    let mut t = Trace::new(pid, created_ns);
    t.op(HIP, 1, "hipLaunchKernel");
    t.op(HIP, 2, "hipMemcpy");
    t.op(HIP, 3, "hipGetLastError");
    t.op(HSA, 4, "hsa_signal_store_screlease");
    t.op(ApiDomain::HsaAmdExt, 5, "hsa_amd_memory_async_copy");
    let b = created_ns;
    t.call(HIP, 2, 1, (b + 100, b + 200), 7);
    t.call(ApiDomain::HsaAmdExt, 5, 1, (b + 110, b + 120), 7);
    t.call(HIP, 1, 2, (b + 300, b + 400), 7);
    t.call(HIP, 3, 3, (b + 450, b + 450), 7);
    t.call(HSA, 4, 4, (b + 460, b + 460), 8);
    t.0.copies.push(MemoryCopyRecord {
        correlation_id: 1,
        start: b + 130,
        end: b + 180,
        bytes: 4096,
        stream_id: 0,
        src_node_id: 0,
        dst_node_id: 1,
        thread_id: 7,
        direction: CopyDirection::HostToDevice as u8,
        reserved: [0; 3],
    });
    let kernel = t.string("zzz_kernel(int)");
    t.0.symbols.push(KernelSymbolRecord {
        kernel_id: 1,
        kernel_object: 0xdead_0000,
        name: kernel,
        arch_vgpr_count: 8,
        accum_vgpr_count: 0,
        sgpr_count: 16,
        group_segment_size: 100,
        private_segment_size: 0,
        kernarg_segment_size: 24,
        code_object_id: 0,
    });
    t.0.dispatches.push(KernelDispatchRecord {
        dispatch_id: 1,
        kernel_id: 1,
        correlation_id: 2,
        start: b + 350,
        end: b + 500,
        queue_id: 0x7000,
        stream_id: 0x99,
        agent_node_id: 1,
        thread_id: 7,
        grid: [1024, 1, 1],
        workgroup: [256, 1, 1],
        private_segment_size: 0,
        group_segment_size: 100,
        region: 0,
        reserved: 0,
    });
    let waves = t.string("SQ_WAVES");
    t.0.counters.push(CounterRecord {
        dispatch_id: 1,
        correlation_id: 2,
        value: 8.0,
        name: waves,
        counter_id: 3,
        agent_node_id: 1,
        reserved: 0,
    });
    let iter0 = t.string("iter0");
    let point = t.string("point");
    for (kind, message, corr, (start, end)) in [
        (MarkerKind::ThreadRange, iter0, 10, (b + 90, b + 410)),
        (MarkerKind::Mark, point, 11, (b + 420, b + 420)),
    ] {
        t.0.markers.push(MarkerRecord {
            correlation_id: corr,
            start,
            end,
            message,
            thread_id: 7,
            kind: kind as u8,
            reserved: [0; 7],
        });
    }
    t.0
}

fn labels(t: &ProcessTrace) -> AgentLabels {
    AgentLabels::new(t.docs.agents().to_vec(), AgentIndex::Relative)
}

fn run() -> RunInfo {
    RunInfo {
        hostname: "testhost".into(),
        command: vec!["./app".into(), "--flag".into()],
    }
}

fn write(path: &Path, traces: &[&ProcessTrace]) {
    let labels: Vec<AgentLabels> = traces.iter().map(|t| labels(t)).collect();
    let views: Vec<ProcessView<'_>> = traces
        .iter()
        .zip(&labels)
        .map(|(t, l)| ProcessView::new(t, l))
        .collect();
    rocpd::write_rocpd(path, &run(), &views).unwrap();
}

fn open(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

fn count(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn strings(c: &Connection, sql: &str) -> Vec<String> {
    let mut s = c.prepare(sql).unwrap();
    s.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The (guid, suffix) pairs of the file's processes, from its metadata.
fn processes(c: &Connection) -> Vec<(String, String)> {
    let uuids = strings(
        c,
        "SELECT value FROM rocpd_metadata WHERE tag = 'uuid' ORDER BY id",
    );
    let guids = strings(
        c,
        "SELECT value FROM rocpd_metadata WHERE tag = 'guid' ORDER BY id",
    );
    guids.into_iter().zip(uuids).collect()
}

#[test]
fn strings_are_numbered_in_byte_order_from_one() {
    let dir = scratch("strings");
    let path = dir.join("out_results.db");
    write(&path, &[&sample_trace(4242, 1_000_000_000)]);
    let c = open(&path);
    let rows: Vec<(i64, String)> = {
        let mut s = c
            .prepare("SELECT id, string FROM rocpd_string ORDER BY id")
            .unwrap();
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(ids, (1..=rows.len() as i64).collect::<Vec<_>>());
    let texts: Vec<&[u8]> = rows.iter().map(|r| r.1.as_bytes()).collect();
    let mut sorted = texts.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(texts, sorted, "ids follow byte order, each string once");
    assert_eq!(
        rows[0],
        (1, String::new()),
        "\"\" is a string, and sorts first"
    );
    // Upper case sorts before lower case byte-wise: a locale-aware sort would interleave.
    let pos = |s: &str| texts.iter().position(|t| *t == s.as_bytes()).unwrap();
    assert!(pos("KERNEL_DISPATCH") < pos("hipMemcpy"));
    assert!(pos("MEMORY_COPY_HOST_TO_DEVICE") < pos("iter0"));
    for s in [
        "HIP_RUNTIME_API_EXT",
        "HSA_CORE_API",
        "HSA_AMD_EXT_API",
        "MARKER_CORE_RANGE_API",
        "roctxThreadRangeA",
        "roctxMarkA",
        "zzz_kernel(int)",
        "SQ_WAVES",
    ] {
        pos(s);
    }
}

#[test]
fn the_guid_names_the_tables_and_every_row() {
    let dir = scratch("guid");
    let path = dir.join("out_results.db");
    write(&path, &[&sample_trace(4242, 1_000_000_000)]);
    let c = open(&path);
    let procs = processes(&c);
    assert_eq!(procs.len(), 1);
    let (guid, uuid) = &procs[0];
    assert_eq!(
        strings(
            &c,
            "SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'"
        ),
        ["3"]
    );
    // A UUID v7 of the process start: 1000 ms.
    assert_eq!(guid.len(), 36);
    assert!(guid.starts_with("00000000-03e8-73e8-"), "{guid}");
    assert!(
        matches!(&guid[19..20], "8" | "9" | "a" | "b"),
        "variant: {guid}"
    );
    assert_eq!(*uuid, format!("_{}", guid.replace('-', "_")));

    let tables = strings(
        &c,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd%' ORDER BY name",
    );
    assert_eq!(tables.len(), PLAIN.len(), "{tables:?}");
    for t in &tables {
        assert!(t.ends_with(uuid.as_str()), "{t} lacks the suffix {uuid}");
        let base = t.strip_suffix(uuid.as_str()).unwrap();
        assert!(PLAIN.contains(&base), "{base}");
    }
    for view in PLAIN {
        let kind = count(
            &c,
            &format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = '{view}'"),
        );
        assert_eq!(kind, 1, "plain view {view}");
        if view != "rocpd_metadata" {
            let foreign = c
                .query_row(
                    &format!("SELECT COUNT(*) FROM {view} WHERE guid IS NOT ?1"),
                    [guid],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap();
            assert_eq!(foreign, 0, "{view} has rows of another guid");
        }
    }
}

#[test]
fn ids_are_the_processes_own() {
    let dir = scratch("ids");
    let path = dir.join("out_results.db");
    let t = sample_trace(4242, 1_000_000_000);
    write(&path, &[&t]);
    let c = open(&path);
    assert_eq!(count(&c, "SELECT id FROM rocpd_info_process"), 4242);
    assert_eq!(count(&c, "SELECT pid FROM rocpd_info_process"), 4242);
    assert_eq!(count(&c, "SELECT ppid FROM rocpd_info_process"), 1);
    assert_eq!(
        strings(&c, "SELECT command FROM rocpd_info_process"),
        ["./app --flag"]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT CAST(id AS TEXT) || ':' || tid FROM rocpd_info_thread ORDER BY id"
        ),
        ["7:7", "8:8"]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT id || ' ' || type || ' ' || logical_index FROM rocpd_info_agent ORDER BY id"
        ),
        ["0 CPU 0", "1 GPU 1"]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT id || ' ' || name FROM rocpd_info_queue ORDER BY id"
        ),
        ["0 Default Queue", &format!("{} Queue 0", 0x7000)]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT id || ' ' || name FROM rocpd_info_stream ORDER BY id"
        ),
        ["0 Default Stream", &format!("{} Stream 0", 0x99)]
    );
    let node = count(&c, "SELECT nid FROM rocpd_info_process");
    assert_eq!(count(&c, "SELECT id FROM rocpd_info_node"), node);
    assert_eq!(
        count(&c, "SELECT hash % 4294967295 FROM rocpd_info_node"),
        node,
        "node id = hash % 0xFFFFFFFF"
    );
    // The dispatch: its id, its kernel, its queue and stream handles, region name "".
    assert_eq!(
        strings(
            &c,
            "SELECT K.id || ' ' || K.dispatch_id || ' ' || K.queue_id || ' ' || K.stream_id \
             || ' ' || S.display_name || ' [' || R.string || ']' \
             FROM rocpd_kernel_dispatch K \
             JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id \
             JOIN rocpd_string R ON R.id = K.region_name_id"
        ),
        [format!("1 1 {} {} zzz_kernel(int) []", 0x7000, 0x99)]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT M.id || ' ' || M.size || ' ' || S.string || ' ' || M.src_agent_id || '>' \
             || M.dst_agent_id || ' ' || (M.queue_id IS NULL) FROM rocpd_memory_copy M \
             JOIN rocpd_string S ON S.id = M.name_id"
        ),
        ["1 4096 MEMORY_COPY_HOST_TO_DEVICE 0>1 1"]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT I.id || ' ' || I.name || ' ' || I.symbol || ' ' || I.agent_id || ' ' \
             || I.component || ' ' || I.value_type || ' ' || E.value \
             FROM rocpd_pmc_event E JOIN rocpd_info_pmc I ON I.id = E.pmc_id \
             JOIN rocpd_kernel_dispatch K ON K.event_id = E.event_id"
        ),
        ["3 SQ_WAVES SQ_WAVES 1 rocm ABS 8.0"]
    );
}

#[test]
fn zero_length_calls_are_samples_on_their_categorys_track() {
    let dir = scratch("samples");
    let path = dir.join("out_results.db");
    write(&path, &[&sample_trace(4242, 1_000_000_000)]);
    let c = open(&path);
    let regions = strings(
        &c,
        "SELECT S.string FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id ORDER BY R.start",
    );
    assert_eq!(
        regions,
        [
            "roctxThreadRangeA",
            "hipMemcpy",
            "hsa_amd_memory_async_copy",
            "hipLaunchKernel"
        ]
    );
    let samples = strings(
        &c,
        "SELECT T.tid || ' ' || N.string || ' ' || C.string || ' ' || (S.timestamp - 1000000000) \
         FROM rocpd_sample S JOIN rocpd_track T ON T.id = S.track_id \
         JOIN rocpd_string N ON N.id = T.name_id \
         JOIN rocpd_event E ON E.id = S.event_id JOIN rocpd_string C ON C.id = E.category_id \
         ORDER BY S.timestamp",
    );
    assert_eq!(
        samples,
        [
            "7 MARKER_CORE_RANGE_API MARKER_CORE_RANGE_API 420",
            "7 HIP_RUNTIME_API_EXT HIP_RUNTIME_API_EXT 450",
            "8 HSA_CORE_API HSA_CORE_API 460",
        ]
    );
    // Region and sample ids are the calls' run-unique ids: an outermost call's correlation id,
    // the markers' own (10, 11), and for the call nested in hipMemcpy a fresh id above them.
    assert_eq!(
        strings(
            &c,
            "SELECT CAST(id AS TEXT) FROM rocpd_region ORDER BY start"
        ),
        ["10", "1", "12", "2"]
    );
    assert_eq!(
        strings(
            &c,
            "SELECT CAST(id AS TEXT) FROM rocpd_sample ORDER BY timestamp"
        ),
        ["11", "3", "4"]
    );
}

#[test]
fn events_are_numbered_by_kind_and_carry_stacks_and_categories() {
    let dir = scratch("events");
    let path = dir.join("out_results.db");
    write(&path, &[&sample_trace(4242, 1_000_000_000)]);
    let c = open(&path);
    let events = strings(
        &c,
        "SELECT E.id || ' ' || S.string || ' ' || E.stack_id || ' ' || E.parent_stack_id \
         || ' ' || E.correlation_id FROM rocpd_event E \
         JOIN rocpd_string S ON S.id = E.category_id ORDER BY E.id",
    );
    assert_eq!(
        events,
        [
            // HIP calls: hipMemcpy (1), hipLaunchKernel (2), hipGetLastError (3).
            "1 HIP_RUNTIME_API_EXT 1 0 0",
            "2 HIP_RUNTIME_API_EXT 2 0 0",
            "3 HIP_RUNTIME_API_EXT 3 0 0",
            // HSA calls: the one inside hipMemcpy (a fresh id) names it as its parent.
            "4 HSA_AMD_EXT_API 12 1 0",
            "5 HSA_CORE_API 4 0 0",
            // Markers (their own ids).
            "6 MARKER_CORE_RANGE_API 10 0 0",
            "7 MARKER_CORE_RANGE_API 11 0 0",
            // The dispatch names hipLaunchKernel, the copy hipMemcpy (not the nested call).
            "8 KERNEL_DISPATCH 2 2 0",
            "9 MEMORY_COPY 1 1 0",
        ]
    );
    assert_eq!(
        count(
            &c,
            "SELECT COUNT(*) FROM rocpd_event WHERE category_id IS NULL"
        ),
        0
    );
    let messages = strings(
        &c,
        "SELECT json_extract(E.extdata, '$.message') FROM rocpd_event E \
         JOIN rocpd_string S ON S.id = E.category_id \
         WHERE S.string = 'MARKER_CORE_RANGE_API' ORDER BY E.id",
    );
    assert_eq!(messages, ["iter0", "point"]);
}

#[test]
fn foreign_keys_hold_and_json_columns_are_json() {
    let dir = scratch("keys");
    let path = dir.join("out_results.db");
    write(
        &path,
        &[
            &sample_trace(4242, 1_000_000_000),
            &sample_trace(4343, 2_000_000_000),
        ],
    );
    let c = open(&path);
    let broken = {
        let mut s = c.prepare("PRAGMA foreign_key_check").unwrap();
        s.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    };
    assert!(broken.is_empty(), "dangling references in {broken:?}");
    let tables = strings(
        &c,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd%'",
    );
    let mut with_keys = 0;
    for t in &tables {
        let keys = count(
            &c,
            &format!("SELECT COUNT(*) FROM pragma_foreign_key_list('{t}')"),
        );
        with_keys += usize::from(keys > 0);
        let json_columns = strings(
            &c,
            &format!("SELECT name FROM pragma_table_info('{t}') WHERE type = 'JSONB'"),
        );
        for col in json_columns {
            let bad = count(
                &c,
                &format!("SELECT COUNT(*) FROM \"{t}\" WHERE NOT json_valid(\"{col}\")"),
            );
            assert_eq!(bad, 0, "{t}.{col} holds something that is not JSON");
        }
    }
    assert!(
        with_keys >= 30,
        "foreign keys declared on {with_keys} tables"
    );
    // Writing enforced them: the references are declared against the process's own tables.
    let target: Option<String> = c
        .query_row(
            &format!(
                "SELECT \"table\" FROM pragma_foreign_key_list('rocpd_region{}') WHERE \"from\" = 'event_id'",
                processes(&c)[0].1
            ),
            [],
            |r| r.get(0),
        )
        .optional()
        .unwrap();
    assert_eq!(target, Some(format!("rocpd_event{}", processes(&c)[0].1)));
    let agent = count(
        &c,
        "SELECT json_extract(extdata, '$.capability.WatchPointsTotalBits') FROM rocpd_info_agent \
         WHERE type = 'GPU' LIMIT 1",
    );
    assert_eq!(agent, 0b1010, "capability bits 8-11");
    assert_eq!(
        count(
            &c,
            "SELECT json_extract(extdata, '$.workgroup_max_dim.y') FROM rocpd_info_agent \
             WHERE type = 'GPU' LIMIT 1"
        ),
        1024
    );
}

#[test]
fn several_processes_keep_their_own_tables_guids_and_ids() {
    let dir = scratch("several");
    let path = dir.join("out_results.db");
    let (a, b) = (
        sample_trace(4242, 1_000_000_000),
        sample_trace(4343, 2_000_000_000),
    );
    write(&path, &[&a, &b]);
    let c = open(&path);
    let procs = processes(&c);
    assert_eq!(procs.len(), 2);
    assert_ne!(procs[0].0, procs[1].0);
    assert_eq!(
        count(
            &c,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE id = 1"
        ),
        2,
        "each process keeps its dispatch id 1"
    );
    for (guid, suffix) in &procs {
        let pid: i64 = c
            .query_row(
                &format!("SELECT pid FROM \"rocpd_info_process{suffix}\""),
                [],
                |r| r.get(0),
            )
            .unwrap();
        let in_view: i64 = c
            .query_row(
                "SELECT pid FROM rocpd_info_process WHERE guid = ?1",
                params![guid],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(pid, in_view);
        let rows: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM rocpd_event WHERE guid = ?1",
                params![guid],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 9, "{guid}");
    }
    assert_eq!(count(&c, "SELECT COUNT(*) FROM rocpd_region"), 8);
    // A join on guid pairs each dispatch with its own process's symbol only.
    assert_eq!(
        count(
            &c,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S \
             ON S.id = K.kernel_id AND S.guid = K.guid"
        ),
        2
    );
}

/// The rows of `sql`, each as text (NULL as `NULL`).
fn rows(c: &Connection, sql: &str) -> Vec<Vec<String>> {
    let mut s = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = s.column_count();
    s.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                })
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Each view of upstream's and the row count it must have: that of the rows it describes.
const VIEW_ROWS: [(&str, &str); 19] = [
    (
        "code_objects",
        // The "no code object" row 0 names no agent: the view's join (as upstream's) leaves
        // it out.
        "SELECT COUNT(*) FROM rocpd_info_code_object WHERE agent_id IS NOT NULL",
    ),
    (
        "kernel_symbols",
        "SELECT COUNT(*) FROM rocpd_info_kernel_symbol",
    ),
    ("processes", "SELECT COUNT(*) FROM rocpd_info_process"),
    ("threads", "SELECT COUNT(*) FROM rocpd_info_thread"),
    ("regions", "SELECT COUNT(*) FROM rocpd_region"),
    (
        "region_args",
        "SELECT COUNT(*) FROM rocpd_arg A JOIN rocpd_region R \
         ON R.event_id = A.event_id AND R.guid = A.guid",
    ),
    ("samples", "SELECT COUNT(*) FROM rocpd_sample"),
    ("sample_regions", "SELECT COUNT(*) FROM rocpd_sample"),
    (
        "regions_and_samples",
        "SELECT (SELECT COUNT(*) FROM rocpd_region) + (SELECT COUNT(*) FROM rocpd_sample)",
    ),
    ("kernels", "SELECT COUNT(*) FROM rocpd_kernel_dispatch"),
    ("pmc_info", "SELECT COUNT(*) FROM rocpd_info_pmc"),
    ("pmc_events", "SELECT COUNT(*) FROM rocpd_pmc_event"),
    ("events_args", "SELECT COUNT(*) FROM rocpd_arg"),
    ("memory_copies", "SELECT COUNT(*) FROM rocpd_memory_copy"),
    (
        "memory_allocations",
        "SELECT COUNT(*) FROM rocpd_memory_allocate",
    ),
    (
        "scratch_memory",
        "SELECT COUNT(*) FROM rocpd_memory_allocate WHERE level = 'SCRATCH'",
    ),
    (
        "counters_collection",
        "SELECT COUNT(DISTINCT V.guid || '/' || K.dispatch_id || '/' || I.name) \
         FROM rocpd_pmc_event V JOIN rocpd_info_pmc I ON I.id = V.pmc_id AND I.guid = V.guid \
         JOIN rocpd_kernel_dispatch K ON K.event_id = V.event_id AND K.guid = V.guid",
    ),
    (
        "top_kernels",
        "SELECT COUNT(DISTINCT S.display_name) FROM rocpd_kernel_dispatch K \
         JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid",
    ),
    (
        "busy",
        "SELECT COUNT(*) FROM (SELECT DISTINCT guid, agent_id FROM rocpd_kernel_dispatch \
         UNION SELECT DISTINCT guid, dst_agent_id FROM rocpd_memory_copy)",
    ),
];

#[test]
fn upstreams_data_and_summary_views_are_in_the_file_with_upstreams_columns() {
    let dir = scratch("views");
    let one = dir.join("one_results.db");
    let two = dir.join("two_results.db");
    let (a, b) = (
        sample_trace(4242, 1_000_000_000),
        sample_trace(4343, 2_000_000_000),
    );
    write(&one, &[&a]);
    write(&two, &[&a, &b]);
    let c1 = open(&one);
    let c2 = open(&two);
    for c in [&c1, &c2] {
        for (view, columns) in UPSTREAM {
            let stored = count(
                c,
                &format!(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = '{view}'"
                ),
            );
            assert_eq!(stored, 1, "the file has no view {view}");
            assert_eq!(rocpd_views::columns(c, view), *columns, "columns of {view}");
        }
        // Every view reads: its rows are the rows it describes, once each.
        for (view, expected) in VIEW_ROWS {
            let n = count(c, &format!("SELECT COUNT(*) FROM {view}"));
            assert_eq!(n, count(c, expected), "rows of {view}");
        }
    }
    // The two-process file holds each view's rows twice: every join stays in its process.
    for (view, _) in VIEW_ROWS {
        if ["busy", "top_kernels"].contains(&view) {
            continue;
        }
        let sql = format!("SELECT COUNT(*) FROM {view}");
        assert_eq!(count(&c2, &sql), 2 * count(&c1, &sql), "{view}");
    }
    assert!(count(&c1, "SELECT COUNT(*) FROM regions") > 0);
    assert!(count(&c1, "SELECT COUNT(*) FROM samples") > 0);
    assert!(count(&c1, "SELECT COUNT(*) FROM counters_collection") > 0);

    // What the rows say.
    assert_eq!(
        rows(
            &c1,
            "SELECT category, name, tid, duration, corr_id FROM regions \
             WHERE name = 'hipMemcpy'"
        ),
        [["HIP_RUNTIME_API_EXT", "hipMemcpy", "7", "100", "0"]]
    );
    for r in rows(&c1, "SELECT start, \"end\", duration FROM sample_regions") {
        assert_eq!((r[0] == r[1], r[2].as_str()), (true, "0"), "{r:?}");
    }
    assert_eq!(
        rows(
            &c1,
            "SELECT name, region, agent_type, queue_id, stream_id, grid_x, workgroup_x, \
             lds_size, vgpr_count, sgpr_count, duration FROM kernels"
        ),
        [[
            "zzz_kernel(int)",
            "",
            "GPU",
            "28672",
            "153",
            "1024",
            "256",
            "100",
            "8",
            "16",
            "150"
        ]]
    );
    assert_eq!(
        rows(
            &c1,
            "SELECT name, size, src_agent_type, dst_agent_type, duration FROM memory_copies"
        ),
        [["MEMORY_COPY_HOST_TO_DEVICE", "4096", "CPU", "GPU", "50"]]
    );
    assert_eq!(
        rows(
            &c1,
            "SELECT counter_name, value, kernel_name, grid_size, workgroup_size \
             FROM counters_collection"
        ),
        [["SQ_WAVES", "8", "zzz_kernel(int)", "1024", "256"]]
    );
    assert_eq!(
        rows(&c1, "SELECT name, total_calls, percentage FROM top_kernels"),
        [["zzz_kernel(int)", "1", "100"]]
    );
    assert_eq!(
        rows(&c1, "SELECT pid, command FROM processes"),
        [["4242", "./app --flag"]]
    );
    let top: f64 = c2
        .query_row("SELECT SUM(percentage) FROM top", [], |r| r.get(0))
        .unwrap();
    assert!((top - 100.0).abs() < 1e-9, "{top}");
}

#[test]
fn a_rewrite_replaces_the_file_and_a_failure_leaves_no_temporary() {
    let dir = scratch("rewrite");
    let path = dir.join("out_results.db");
    write(&path, &[&sample_trace(4242, 1_000_000_000)]);
    write(&path, &[&sample_trace(4343, 2_000_000_000)]);
    let c = open(&path);
    assert_eq!(count(&c, "SELECT pid FROM rocpd_info_process"), 4343);
    drop(c);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["out_results.db"]);
    let err = rocpd::write_rocpd(&path, &run(), &[]).unwrap_err();
    assert!(err.to_string().contains("no process"), "{err}");
}

/// `cargo test --release -p trace-export --test rocpd -- --ignored --nocapture`: rows per
/// second for a million API calls (two rows each: the event and its region).
#[test]
#[ignore]
fn write_rate() {
    let mut t = Trace::new(1, 1_000_000_000);
    t.op(HIP, 1, "hipLaunchKernel");
    t.op(HSA, 2, "hsa_signal_load_relaxed");
    const N: u64 = 1_000_000;
    for k in 0..N {
        let (domain, op) = if k % 3 == 0 { (HIP, 1) } else { (HSA, 2) };
        let start = 1_000_000_000 + k * 100;
        t.call(domain, op, k + 1, (start, start + 50), 1 + (k % 4) as u32);
    }
    let trace = t.0;
    let labels = labels(&trace);
    let view = ProcessView::new(&trace, &labels);
    let dir = scratch("rate");
    let path = dir.join("rate_results.db");
    // This thread's CPU time (ns), from the scheduler: the rate without other processes'
    // share of a busy machine.
    let cpu_ns = || -> u64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let (started, cpu_started) = (std::time::Instant::now(), cpu_ns());
    rocpd::write_rocpd(&path, &run(), std::slice::from_ref(&view)).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = (cpu_ns() - cpu_started) as f64 / 1e9;
    let c = open(&path);
    let rows = count(&c, "SELECT COUNT(*) FROM rocpd_event")
        + count(&c, "SELECT COUNT(*) FROM rocpd_region");
    assert_eq!(rows as u64, 2 * N);
    let size = std::fs::metadata(&path).unwrap().len();
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "rocpd: {N} API calls, {rows} rows in {secs:.3} s = {:.2} M rows/s; \
         {cpu_secs:.3} s of CPU = {:.2} M rows/s per CPU second ({:.1} MiB)",
        rows as f64 / secs / 1e6,
        rows as f64 / cpu_secs / 1e6,
        size as f64 / (1 << 20) as f64
    );
}

/// A file written one process at a time ([`rocpd::RocpdWriter`], a merge's way) is the file
/// [`rocpd::write_rocpd`] writes of them all, view for view; a writer dropped unfinished leaves
/// nothing, and one given no process is refused.
#[test]
fn a_file_written_process_by_process_is_the_file_written_at_once() {
    let dir = scratch("incremental");
    let (a, b) = (
        sample_trace(4242, 1_000_000_000),
        sample_trace(4343, 2_000_000_000),
    );
    let whole = dir.join("whole_results.db");
    write(&whole, &[&a, &b]);
    let parts = dir.join("parts_results.db");
    let mut w = rocpd::RocpdWriter::create(&parts, &run()).unwrap();
    for t in [&a, &b] {
        let l = labels(t);
        w.add(&ProcessView::new(t, &l)).unwrap();
    }
    assert_eq!(w.processes(), 2);
    w.finish().unwrap();
    let (x, y) = (open(&whole), open(&parts));
    let views = strings(
        &x,
        "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name",
    );
    assert_eq!(
        views,
        strings(
            &y,
            "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"
        )
    );
    assert!(views.len() > 20, "{views:?}");
    for v in &views {
        let sql = format!("SELECT * FROM \"{v}\"");
        let (mut p, mut q) = (rows(&x, &sql), rows(&y, &sql));
        p.sort();
        q.sort();
        assert_eq!(p, q, "{v}");
    }
    drop((x, y));
    let gone = dir.join("gone_results.db");
    let mut w = rocpd::RocpdWriter::create(&gone, &run()).unwrap();
    let l = labels(&a);
    w.add(&ProcessView::new(&a, &l)).unwrap();
    drop(w);
    let empty = rocpd::RocpdWriter::create(&dir.join("empty_results.db"), &run()).unwrap();
    let err = empty.finish().unwrap_err();
    assert!(err.to_string().contains("no process"), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["parts_results.db", "whole_results.db"]);
}

/// Databases of this writer's schema are copied table by table into a merged file: the result
/// is the file written from the records, view for view; a file whose processes the merged file
/// has already (the same input twice) or that is not such a database is left to the caller.
#[test]
fn databases_are_copied_into_a_merged_file_row_for_row() {
    let dir = scratch("copy");
    let (a, b) = (
        sample_trace(4242, 1_000_000_000),
        sample_trace(4343, 2_000_000_000),
    );
    let (fa, fb) = (dir.join("a_results.db"), dir.join("b_results.db"));
    write(&fa, &[&a]);
    write(&fb, &[&b]);
    let whole = dir.join("whole_results.db");
    write(&whole, &[&a, &b]);
    let merged = dir.join("merged_results.db");
    let mut w = rocpd::RocpdWriter::create(&merged, &run()).unwrap();
    let got = w.copy_from(&fa).unwrap().expect("copied");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].pid, 4242);
    assert!(w.copy_from(&fb).unwrap().is_some());
    assert!(w.copy_from(&fa).unwrap().is_none(), "its guid is taken");
    let text = dir.join("notes.db");
    std::fs::write(&text, b"").unwrap();
    assert!(w.copy_from(&text).unwrap().is_none(), "no rocpd tables");
    assert_eq!(w.processes(), 2);
    w.finish().unwrap();
    let (x, y) = (open(&whole), open(&merged));
    let views = strings(
        &x,
        "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name",
    );
    for v in &views {
        let sql = format!("SELECT * FROM \"{v}\"");
        let (mut p, mut q) = (rows(&x, &sql), rows(&y, &sql));
        p.sort();
        q.sort();
        assert_eq!(p, q, "{v}");
    }
}
