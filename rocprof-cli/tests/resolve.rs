//! Every id resolves (issue 24, points 1, 3 and 6), end to end on the simulated stack:
//! unique correlation ids in every format with the enclosing call as the ancestor; scratch
//! records on the queue their dispatches ran on; code objects, kernel symbols and HIP host
//! functions naming each other in JSON and rocpd.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or
//! `cargo xtask build` first).

mod support;

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use support::*;

fn json(r: &Run) -> Value {
    let path = r.file("results.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), r.stderr()));
    serde_json::from_str(&text).expect("results.json parses")
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn num(row: &Row, column: &str) -> u64 {
    row[column]
        .parse()
        .unwrap_or_else(|e| panic!("{column} = {:?}: {e}", row[column]))
}

/// The operation name of a buffer record.
fn op_name<'a>(tool: &'a Value, record: &Value) -> &'a str {
    tool["strings"]["buffer_records"][u(&record["kind"]) as usize]["operations"]
        [u(&record["operation"]) as usize]
        .as_str()
        .unwrap()
}

/// Point 1: `hsa_agent_get_info` inside an `hsa_iterate_agents` callback (the simulated HIP
/// runtime's device enumeration) has an id of its own in the CSV file, the JSON names the same
/// ids, and the enclosing call is its ancestor.
#[test]
fn hsa_calls_nested_in_callbacks_have_their_own_ids_in_every_format() {
    let r = sim_run(
        "resolve",
        "hsa-ids",
        &["--hsa-trace", "-f", "csv", "json"],
        &reference_workload(),
        &[],
        &[],
    )
    .succeeded();
    let rows = r.rows("hsa_api_trace");
    let csv_ids: BTreeSet<u64> = rows.iter().map(|h| num(h, "Correlation_Id")).collect();
    assert_eq!(
        csv_ids.len(),
        rows.len(),
        "every CSV row its own correlation id"
    );

    let doc = json(&r);
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let calls = tool["buffer_records"]["hsa_api"].as_array().unwrap();
    let by_id: HashMap<u64, &Value> = calls
        .iter()
        .map(|c| (u(&c["correlation_id"]["internal"]), c))
        .collect();
    assert_eq!(by_id.len(), calls.len(), "every JSON record its own id");
    assert_eq!(
        by_id.keys().copied().collect::<BTreeSet<u64>>(),
        csv_ids,
        "the CSV and the JSON name the same ids"
    );
    let mut nested_in_iterate = 0;
    for c in calls {
        let ancestor = u(&c["correlation_id"]["ancestor"]);
        if ancestor == 0 {
            continue;
        }
        let parent = by_id
            .get(&ancestor)
            .unwrap_or_else(|| panic!("ancestor {ancestor} of {c} is no call"));
        assert!(u(&parent["start_timestamp"]) <= u(&c["start_timestamp"]));
        assert!(u(&parent["end_timestamp"]) >= u(&c["end_timestamp"]));
        if op_name(tool, c) == "hsa_agent_get_info" && op_name(tool, parent) == "hsa_iterate_agents"
        {
            nested_in_iterate += 1;
        }
    }
    assert!(
        nested_in_iterate > 0,
        "hsa_agent_get_info nested in hsa_iterate_agents names it as its ancestor"
    );
}

/// Point 6: with `--scratch-memory-trace` alone (upstream's scratch-memory test), the scratch
/// records name the application's queue: not 0 (ROCr's utility queue takes the first id), in
/// the CSV and as the JSON `queue_id.handle`; with the kernel trace the dispatches name the
/// same queue.
#[test]
fn scratch_records_name_the_queue_they_were_allocated_for() {
    let app = workload("scratch-memory");
    let alone = sim_run(
        "resolve",
        "scratch-alone",
        &["--scratch-memory-trace", "-f", "csv", "json"],
        &app,
        &[],
        &[],
    )
    .succeeded();
    let rows = alone.rows("scratch_memory_trace");
    assert!(!rows.is_empty());
    for row in &rows {
        assert!(num(row, "Queue_Id") > 0, "{row:?}");
    }
    let doc = json(&alone);
    let scratch = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["scratch_memory"]
        .as_array()
        .unwrap();
    assert_eq!(scratch.len(), rows.len());
    for (s, row) in scratch.iter().zip(&rows) {
        assert!(u(&s["queue_id"]["handle"]) > 0, "{s}");
        assert_eq!(u(&s["queue_id"]["handle"]), num(row, "Queue_Id"));
    }

    let with_kernels = sim_run(
        "resolve",
        "scratch-kernels",
        &["--scratch-memory-trace", "--kernel-trace"],
        &app,
        &[],
        &[],
    )
    .succeeded();
    let queues = |file: &str| -> BTreeSet<u64> {
        with_kernels
            .rows(file)
            .iter()
            .map(|r| num(r, "Queue_Id"))
            .collect()
    };
    let scratch_queues = queues("scratch_memory_trace");
    assert!(!scratch_queues.contains(&0), "{scratch_queues:?}");
    assert!(
        scratch_queues.is_subset(&queues("kernel_trace")),
        "scratch on a queue no dispatch ran on: {scratch_queues:?}"
    );
}

/// Point 3: the reference workload's code objects (ROCclr's blit kernels, the program's
/// `axpb`) in the JSON `code_objects`, indexed by id; every kernel symbol's `code_object_id`
/// and every dispatch's kernel resolve; `host_functions` holds `axpb`'s host stub under its
/// kernel and code object; the rocpd file has the same code objects and symbols.
#[test]
fn code_objects_kernel_symbols_and_host_functions_resolve_in_json_and_rocpd() {
    let r = sim_run(
        "resolve",
        "code-objects",
        &["--kernel-trace", "--hip-trace", "-f", "json", "rocpd"],
        &reference_workload(),
        &[],
        &[],
    )
    .succeeded();
    let doc = json(&r);
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let gpus: BTreeSet<u64> = tool["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| u(&a["type"]) == 2)
        .map(|a| u(&a["id"]["handle"]))
        .collect();

    let objects = tool["code_objects"].as_array().unwrap();
    let mut uris = Vec::new();
    for (i, c) in objects.iter().enumerate() {
        if u(&c["size"]) == 0 {
            continue;
        }
        assert_eq!(u(&c["code_object_id"]), i as u64, "indexed by id: {c}");
        assert!(gpus.contains(&u(&c["agent_id"]["handle"])), "{c}");
        let uri = c["uri"].as_str().unwrap();
        assert!(uri.starts_with("memory://"), "{uri}");
        assert!(u(&c["load_size"]) > 0 && u(&c["load_base"]) > 0, "{c}");
        assert_eq!(u(&c["storage_type"]), 2, "memory storage");
        assert_eq!(u(&c["memory_size"]), u(&c["load_size"]), "{c}");
        uris.push(uri.to_owned());
    }
    assert!(
        uris.len() >= 2,
        "ROCclr's blit code object and the program's: {objects:?}"
    );
    let resolves = |id: u64| {
        objects
            .get(id as usize)
            .is_some_and(|c| u(&c["code_object_id"]) == id && id != 0)
    };

    let symbols: HashMap<u64, &Value> = tool["kernel_symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| u(&s["kernel_id"]) != 0)
        .map(|s| (u(&s["kernel_id"]), s))
        .collect();
    for s in symbols.values() {
        assert!(resolves(u(&s["code_object_id"])), "dangling: {s}");
    }
    for d in tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap()
    {
        let kernel = u(&d["dispatch_info"]["kernel_id"]);
        let s = symbols
            .get(&kernel)
            .unwrap_or_else(|| panic!("dispatch of unknown kernel {kernel}"));
        assert!(resolves(u(&s["code_object_id"])));
    }

    // validate.py:158: host functions are there, and name their kernel and its code object.
    let hosts: Vec<&Value> = tool["host_functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| u(&h["size"]) != 0)
        .collect();
    assert!(!hosts.is_empty(), "no host functions");
    for (i, h) in hosts.iter().enumerate() {
        assert_eq!(u(&h["host_function_id"]), i as u64 + 1);
        let s = symbols[&u(&h["kernel_id"])];
        assert_eq!(h["device_function"], s["kernel_name"], "{h}");
        assert_eq!(h["code_object_id"], s["code_object_id"]);
        assert!(u(&h["host_function"]["handle"]) != 0 && u(&h["modules"]["handle"]) != 0);
    }
    let axpb = hosts
        .iter()
        .find(|h| h["truncated_host_function_name"] == "axpb")
        .expect("axpb's host function");
    assert_eq!(
        u(&axpb["thread_limit"]),
        u64::from(u32::MAX),
        "hipcc's threadLimit"
    );

    // rocpd: the same code objects; every kernel symbol names one of them.
    let db = rusqlite::Connection::open(r.file("results.db")).unwrap();
    let mut rows: Vec<String> = db
        .prepare("SELECT uri FROM rocpd_info_code_object WHERE id > 0 ORDER BY id")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    uris.sort();
    assert_eq!(rows, uris);
    let dangling: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM rocpd_info_kernel_symbol S \
             LEFT JOIN rocpd_info_code_object C ON C.id = S.code_object_id \
             WHERE C.id IS NULL OR C.id = 0",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(dangling, 0, "kernel symbols without their code object");
    let axpb_code_object: i64 = db
        .query_row(
            "SELECT code_object_id FROM rocpd_info_kernel_symbol WHERE kernel_name LIKE 'axpb%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(axpb_code_object as u64, u(&axpb["code_object_id"]));
}
