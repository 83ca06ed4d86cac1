//! `rocprof -f csv,json` end to end on the simulated Radeon 890M: `<prefix>_results.json`
//! parses, is valid against upstream's JSON schema wherever upstream's own writer is (the
//! schema patched with exactly the writer's documented departures), holds the seed's
//! collection table, agrees with the CSV files record for record, keeps every record inside
//! the process's `[init_time, fini_time]` and its timeline consistent; with `--pmc`, the
//! counters and one `counter_collection` entry per dispatch with counter_collection.csv's
//! values.
//!
//! Validation uses the `jsonschema` library (draft 7), as trace-export's own JSON tests do.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or
//! `cargo xtask build` first).

mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use support::*;

type Row = HashMap<String, String>;

// ---------------------------------------------------------------------------------------------
// Upstream's schema and its documented deviations.

#[path = "../../trace-export/tests/schema/mod.rs"]
mod schema;
use schema::*;

// ---------------------------------------------------------------------------------------------
// Runs.

struct Run {
    tmp: PathBuf,
    dir: PathBuf,
}

impl Run {
    fn rows(&self, name: &str) -> Vec<Row> {
        let path = self.dir.join(format!("run_{name}.csv"));
        let mut r =
            csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        r.deserialize().map(Result::unwrap).collect()
    }

    fn json(&self) -> Value {
        let path = self.dir.join("run_results.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).expect("results.json parses")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

fn profile(tag: &str, options: &[&str], env: &[(&str, &str)]) -> Run {
    let tmp = scratch("json", tag);
    let dir = tmp.join("out");
    let mut c = rocprof(&tmp);
    c.env_remove("WSLSIM_SEED")
        .arg("--sim")
        .args(options)
        .args(["-f", "csv,json", "-d"])
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .envs(env.iter().copied());
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    Run { tmp, dir }
}

fn num(r: &Row, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// The name of a record's `(kind, operation)` through `strings.buffer_records`.
fn op_name<'a>(p: &'a Value, r: &Value) -> &'a str {
    p["strings"]["buffer_records"][u(&r["kind"]) as usize]["operations"]
        [u(&r["operation"]) as usize]
        .as_str()
        .unwrap()
}

/// The name of a record's kind (the CSV files' `Domain`).
fn kind_name<'a>(p: &'a Value, r: &Value) -> &'a str {
    p["strings"]["buffer_records"][u(&r["kind"]) as usize]["kind"]
        .as_str()
        .unwrap()
}

fn records<'a>(p: &'a Value, kind: &str) -> &'a [Value] {
    p["buffer_records"][kind].as_array().unwrap()
}

fn times(r: &Value) -> (u64, u64) {
    (u(&r["start_timestamp"]), u(&r["end_timestamp"]))
}

fn internal(r: &Value) -> u64 {
    u(&r["correlation_id"]["internal"])
}

/// `--sys-trace`, written as CSV and JSON.
fn sys_trace() -> &'static Run {
    static RUN: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
    RUN.get_or_init(|| profile("sys", &["--sys-trace"], &[]))
}

#[test]
fn sys_trace_json_is_valid_and_holds_the_seeds_table() {
    let r = sys_trace();
    let doc = r.json();
    if let Some(met) = validate(&doc) {
        // Code objects and host functions depart from the schema exactly as upstream's.
        assert_eq!(
            met,
            BTreeSet::from([
                "/rocprofiler-sdk-tool/#/agents/#/capability",
                "/rocprofiler-sdk-tool/#/code_objects/#",
                "/rocprofiler-sdk-tool/#/host_functions/#",
            ])
        );
    }
    let tool = doc["rocprofiler-sdk-tool"].as_array().unwrap();
    assert_eq!(tool.len(), 1, "one process");
    let p = &tool[0];

    let hip = records(p, "hip_api");
    assert_eq!(hip.len(), 52, "HIP API records");
    let count = |name: &str| hip.iter().filter(|h| op_name(p, h) == name).count();
    assert_eq!((count("hipMemcpy"), count("hipLaunchKernel")), (16, 8));
    assert_eq!(records(p, "hsa_api").len(), r.rows("hsa_api_trace").len());

    let symbols = p["kernel_symbols"].as_array().unwrap();
    assert_eq!(
        (
            u(&symbols[0]["kernel_id"]),
            symbols[0]["kernel_name"].as_str()
        ),
        (0, Some("0"))
    );
    let agents = p["agents"].as_array().unwrap();
    let kernels = records(p, "kernel_dispatch");
    assert_eq!(kernels.len(), 8);
    for k in kernels {
        let info = &k["dispatch_info"];
        let symbol = symbols
            .iter()
            .find(|s| s["kernel_id"] == info["kernel_id"])
            .expect("the dispatch's kernel symbol");
        assert_eq!(
            symbol["kernel_name"],
            "axpb(float const*, float*, unsigned long)"
        );
        assert_eq!(symbol["truncated_kernel_name"], "axpb");
        assert!(u(&symbol["arch_vgpr_count"]) > 0 && u(&symbol["sgpr_count"]) > 0);
        assert_eq!(
            (u(&info["workgroup_size"]["x"]), u(&info["grid_size"]["x"])),
            (256, 262_144)
        );
        let agent = agents
            .iter()
            .find(|a| a["id"] == info["agent_id"])
            .expect("its agent");
        assert_eq!(
            (agent["name"].as_str(), u(&agent["type"])),
            (Some("gfx1150"), 2)
        );
        let (start, end) = times(k);
        assert!(end > start);
    }

    let copies = records(p, "memory_copy");
    assert_eq!(copies.len(), 16);
    assert!(copies.iter().all(|c| u(&c["bytes"]) == 1_048_576));
    let directions = |d: &str| copies.iter().filter(|c| op_name(p, c) == d).count();
    assert_eq!(
        (
            directions("MEMORY_COPY_HOST_TO_DEVICE"),
            directions("MEMORY_COPY_DEVICE_TO_HOST")
        ),
        (8, 8)
    );

    let messages: HashMap<u64, &str> = p["strings"]["marker_api"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (u(&e["key"]), e["value"].as_str().unwrap()))
        .collect();
    let mut ranges: Vec<&str> = records(p, "marker_api")
        .iter()
        .map(|m| {
            assert_eq!(op_name(p, m), "roctxThreadRangeA");
            messages[&internal(m)]
        })
        .collect();
    ranges.sort();
    assert_eq!(
        ranges,
        (0..8).map(|i| format!("iter{i}")).collect::<Vec<_>>()
    );

    assert_eq!(p["counters"], json!([]), "no --pmc");
    assert_eq!(p["summary"], json!([]), "no stats");
    assert_eq!(p["callback_records"]["counter_collection"], json!([]));
    assert_eq!(
        u(&p["metadata"]["pid"]),
        num(&r.rows("hip_api_trace")[0], "Process_Id")
    );
    let command: Vec<&str> = p["metadata"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(command[0].ends_with("reference-workload"), "{command:?}");
}

#[test]
fn sys_trace_json_agrees_with_the_csv_files_record_for_record() {
    let r = sys_trace();
    let doc = r.json();
    let p = &doc["rocprofiler-sdk-tool"][0];

    // Every call has its own id, the same in both formats (issue 24: nested calls too).
    type Call = (String, String, u64, u64, u64, u64);
    let csv_calls = |file: &str| -> Vec<Call> {
        let mut v: Vec<Call> = r
            .rows(file)
            .iter()
            .map(|h| {
                (
                    h["Domain"].clone(),
                    h["Function"].clone(),
                    num(h, "Thread_Id"),
                    num(h, "Correlation_Id"),
                    num(h, "Start_Timestamp"),
                    num(h, "End_Timestamp"),
                )
            })
            .collect();
        v.sort();
        v
    };
    let json_calls = |kind: &str| -> Vec<Call> {
        let mut v: Vec<Call> = records(p, kind)
            .iter()
            .map(|c| {
                let (start, end) = times(c);
                (
                    kind_name(p, c).to_owned(),
                    op_name(p, c).to_owned(),
                    u(&c["thread_id"]),
                    internal(c),
                    start,
                    end,
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(json_calls("hip_api"), csv_calls("hip_api_trace"));
    for h in records(p, "hip_api") {
        assert_eq!(
            u(&h["correlation_id"]["ancestor"]),
            0,
            "a HIP call nested in another: {h}"
        );
    }
    assert_eq!(json_calls("hsa_api"), csv_calls("hsa_api_trace"));
    let mut unique = BTreeSet::new();
    for kind in ["hip_api", "hsa_api", "marker_api"] {
        for c in records(p, kind) {
            assert!(
                unique.insert(internal(c)),
                "correlation id {} repeats",
                internal(c)
            );
        }
    }

    let mut csv_kernels: Vec<(u64, u64, u64, u64, u64)> = r
        .rows("kernel_trace")
        .iter()
        .map(|k| {
            (
                num(k, "Dispatch_Id"),
                num(k, "Correlation_Id"),
                num(k, "Start_Timestamp"),
                num(k, "End_Timestamp"),
                num(k, "Queue_Id"),
            )
        })
        .collect();
    csv_kernels.sort();
    let mut json_kernels: Vec<(u64, u64, u64, u64, u64)> = records(p, "kernel_dispatch")
        .iter()
        .map(|k| {
            let (start, end) = times(k);
            let info = &k["dispatch_info"];
            (
                u(&info["dispatch_id"]),
                internal(k),
                start,
                end,
                u(&info["queue_id"]["handle"]),
            )
        })
        .collect();
    json_kernels.sort();
    assert_eq!(json_kernels, csv_kernels);

    let mut csv_copies: Vec<(String, u64, u64, u64)> = r
        .rows("memory_copy_trace")
        .iter()
        .map(|c| {
            (
                c["Direction"].clone(),
                num(c, "Correlation_Id"),
                num(c, "Start_Timestamp"),
                num(c, "End_Timestamp"),
            )
        })
        .collect();
    csv_copies.sort();
    let mut json_copies: Vec<(String, u64, u64, u64)> = records(p, "memory_copy")
        .iter()
        .map(|c| {
            let (start, end) = times(c);
            (op_name(p, c).to_owned(), internal(c), start, end)
        })
        .collect();
    json_copies.sort();
    assert_eq!(json_copies, csv_copies);

    let messages: HashMap<u64, String> = p["strings"]["marker_api"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (u(&e["key"]), e["value"].as_str().unwrap().to_owned()))
        .collect();
    let mut csv_markers: Vec<(String, u64, u64, u64, u64)> = r
        .rows("marker_api_trace")
        .iter()
        .map(|m| {
            (
                m["Function"].clone(),
                num(m, "Thread_Id"),
                num(m, "Correlation_Id"),
                num(m, "Start_Timestamp"),
                num(m, "End_Timestamp"),
            )
        })
        .collect();
    csv_markers.sort();
    let mut json_markers: Vec<(String, u64, u64, u64, u64)> = records(p, "marker_api")
        .iter()
        .map(|m| {
            let (start, end) = times(m);
            (
                messages[&internal(m)].clone(),
                u(&m["thread_id"]),
                internal(m),
                start,
                end,
            )
        })
        .collect();
    json_markers.sort();
    assert_eq!(json_markers, csv_markers);
}

#[test]
fn sys_trace_json_records_lie_inside_the_process_and_the_calls_that_caused_them() {
    let doc = sys_trace().json();
    let p = &doc["rocprofiler-sdk-tool"][0];
    let (init, fini) = (
        u(&p["metadata"]["init_time"]),
        u(&p["metadata"]["fini_time"]),
    );
    assert!(init > 0 && init < fini);
    let mut all = 0;
    for (kind, list) in p["buffer_records"].as_object().unwrap() {
        for rec in list.as_array().unwrap() {
            let (start, end) = times(rec);
            assert!(
                init <= start && start <= end && end <= fini,
                "{kind}: {rec}"
            );
            all += 1;
        }
    }
    assert!(all > 600, "{all} records");

    let calls: HashMap<u64, &Value> = records(p, "hip_api")
        .iter()
        .map(|h| (internal(h), h))
        .collect();
    let mut d2h: Vec<(u64, u64)> = Vec::new();
    for c in records(p, "memory_copy") {
        let call = calls[&internal(c)];
        assert_eq!(op_name(p, call), "hipMemcpy");
        let ((cs, ce), (s, e)) = (times(call), times(c));
        assert!(
            cs <= s && e <= ce,
            "copy {s}..{e} outside its hipMemcpy {cs}..{ce}"
        );
        if op_name(p, c) == "MEMORY_COPY_DEVICE_TO_HOST" {
            d2h.push((cs, ce));
        }
    }
    d2h.sort();
    for k in records(p, "kernel_dispatch") {
        let launch = calls[&internal(k)];
        assert_eq!(op_name(p, launch), "hipLaunchKernel");
        let ((ls, le), (s, e)) = (times(launch), times(k));
        assert!(ls <= s, "dispatch starts before its hipLaunchKernel");
        let consumer = d2h
            .iter()
            .find(|(cs, _)| *cs >= le)
            .expect("a later D2H copy");
        assert!(
            e <= consumer.1,
            "dispatch ends after the hipMemcpy that consumes it"
        );
    }
}

#[test]
fn pmc_json_lists_the_counters_and_one_entry_per_dispatch_with_the_csv_values() {
    let r = profile(
        "pmc",
        &["--pmc", "SQ_WAVES", "GRBM_COUNT"],
        &[("WSLSIM_SEED", "5")],
    );
    let doc = r.json();
    if let Some(met) = validate(&doc) {
        assert_eq!(
            met,
            BTreeSet::from([
                "/rocprofiler-sdk-tool/#/agents/#/capability",
                "/rocprofiler-sdk-tool/#/code_objects/#",
                "/rocprofiler-sdk-tool/#/host_functions/#",
                "/rocprofiler-sdk-tool/#/counters/#",
                "/rocprofiler-sdk-tool/#/callback_records/counter_collection/#",
            ])
        );
    }
    let p = &doc["rocprofiler-sdk-tool"][0];
    let gpu = p["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| u(&a["type"]) == 2)
        .unwrap();
    let counters = p["counters"].as_array().unwrap();
    let names: BTreeMap<u64, &str> = counters
        .iter()
        .map(|c| {
            assert_eq!(c["agent_id"], gpu["id"]);
            assert_eq!(u(&c["is_derived"]), 0);
            (u(&c["id"]["handle"]), c["name"].as_str().unwrap())
        })
        .collect();
    let listed: BTreeSet<&str> = names.values().copied().collect();
    assert_eq!(listed, BTreeSet::from(["GRBM_COUNT", "SQ_WAVES"]));
    let blocks: BTreeSet<&str> = counters
        .iter()
        .map(|c| c["block"].as_str().unwrap())
        .collect();
    assert_eq!(blocks, BTreeSet::from(["GRBM", "SQ"]));
    assert_eq!(
        records(p, "kernel_dispatch"),
        &[] as &[Value],
        "kernels were not traced"
    );

    // counter_collection.csv, per dispatch: its correlation id, times and values by name.
    type Counted = (u64, u64, u64, BTreeMap<String, f64>);
    let mut csv: BTreeMap<u64, Counted> = BTreeMap::new();
    for row in r.rows("counter_collection") {
        let e = csv.entry(num(&row, "Dispatch_Id")).or_insert_with(|| {
            (
                num(&row, "Correlation_Id"),
                num(&row, "Start_Timestamp"),
                num(&row, "End_Timestamp"),
                BTreeMap::new(),
            )
        });
        e.3.insert(
            row["Counter_Name"].clone(),
            row["Counter_Value"].parse().unwrap(),
        );
    }
    assert_eq!(csv.len(), 8, "eight counted dispatches");
    let entries = p["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 8, "one entry per dispatch");
    let mut json: BTreeMap<u64, Counted> = BTreeMap::new();
    for e in entries {
        let data = &e["dispatch_data"];
        let values = e["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    names[&u(&v["counter_id"]["handle"])].to_owned(),
                    v["value"].as_f64().unwrap(),
                )
            })
            .collect();
        let (start, end) = times(data);
        let old = json.insert(
            u(&data["dispatch_info"]["dispatch_id"]),
            (internal(data), start, end, values),
        );
        assert!(old.is_none(), "a dispatch with two entries");
        assert_eq!(data["dispatch_info"]["agent_id"], gpu["id"]);
    }
    assert_eq!(json, csv);
    let (init, fini) = (
        u(&p["metadata"]["init_time"]),
        u(&p["metadata"]["fini_time"]),
    );
    for (_, start, end, _) in json.values() {
        assert!(init <= *start && end <= &fini);
    }
}

/// Upstream's summary test's command (tests/rocprofv3/summary/CMakeLists.txt) on the reference
/// workload, with `--stats` for the CSV statistics to compare with: `metadata.config` says
/// what summary/validate.py's `test_metadata_data` asks, and `summary` holds, per domain, the
/// figures the stats files hold, name for name.
#[test]
fn summary_json_has_the_config_and_the_statistics_of_every_domain() {
    let r = profile(
        "summary",
        &[
            "--runtime-trace",
            "--kernel-rename",
            "--stats",
            "--summary",
            "--summary-output-file",
            "summary",
            "--summary-per-domain",
            "--summary-groups",
            "KERNEL_DISPATCH|MEMORY_COPY",
            ".*_API",
        ],
        &[],
    );
    let doc = r.json();
    validate(&doc);
    let p = &doc["rocprofiler-sdk-tool"][0];

    // summary/validate.py: test_metadata_data.
    let c = &p["metadata"]["config"];
    assert_eq!(c["summary"], true);
    assert_eq!(c["summary_per_domain"], true);
    assert_eq!(c["summary_unit"], "nsec");
    assert_eq!(c["summary_file"], "summary");
    assert_eq!(
        c["summary_groups"],
        json!(["KERNEL_DISPATCH|MEMORY_COPY", ".*_API"])
    );
    assert_eq!(c["summary_output"], true);
    assert_eq!(
        (c["csv_output"].clone(), c["json_output"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(c["rocpd_output"], false);
    assert_eq!(c["kernel_rename"], true);
    assert_eq!(c["output_file"], "run");
    assert_eq!(c["raw_output_file"], "run");
    assert_eq!(
        c["output_path"].as_str().map(PathBuf::from),
        Some(r.dir.clone())
    );
    let command = p["metadata"]["command"].as_array().unwrap();
    assert!(command[0].as_str().unwrap().ends_with("reference-workload"));

    // summary/validate.py: test_summary_data, over what this workload does.
    let summary = p["summary"].as_array().unwrap();
    let domains: Vec<&str> = summary
        .iter()
        .map(|d| d["domain"].as_str().unwrap())
        .collect();
    assert_eq!(
        domains,
        [
            "KERNEL_DISPATCH",
            "HIP_API",
            "MEMORY_COPY",
            "MEMORY_ALLOCATION",
            "MARKER_API"
        ]
    );
    let domain = |name: &str| &summary[domains.iter().position(|d| *d == name).unwrap()]["stats"];
    let count = |name: &str| u(&domain(name)["count"]);
    assert_eq!(count("KERNEL_DISPATCH"), 8);
    assert_eq!(count("HIP_API"), records(p, "hip_api").len() as u64);
    assert_eq!(count("MEMORY_COPY"), 16);
    assert_eq!(count("MEMORY_COPY") % 4, 0);
    assert_eq!(count("MARKER_API"), records(p, "marker_api").len() as u64);
    // Kernels under their --kernel-rename names: each iteration's range.
    let kernels: Vec<(&str, u64)> = domain("KERNEL_DISPATCH")["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["key"].as_str().unwrap(), u(&o["value"]["count"])))
        .collect();
    let iterations: Vec<String> = (0..8).map(|i| format!("iter{i}")).collect();
    assert_eq!(
        kernels,
        iterations
            .iter()
            .map(|i| (i.as_str(), 1))
            .collect::<Vec<_>>()
    );

    // Each domain's totals and names as the stats files have them.
    for d in summary {
        let name = d["domain"].as_str().unwrap();
        let file = match name {
            "KERNEL_DISPATCH" => "kernel_stats".to_owned(),
            other => format!("{}_stats", other.to_ascii_lowercase()),
        };
        let rows: BTreeMap<String, (u64, u64, u64, u64)> = r
            .rows(&file)
            .iter()
            .map(|row| {
                (
                    row["Name"].clone(),
                    (
                        num(row, "Calls"),
                        num(row, "TotalDurationNs"),
                        num(row, "MinNs"),
                        num(row, "MaxNs"),
                    ),
                )
            })
            .collect();
        let ops: BTreeMap<String, (u64, u64, u64, u64)> = d["stats"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let v = &o["value"];
                (
                    o["key"].as_str().unwrap().to_owned(),
                    (u(&v["count"]), u(&v["sum"]), u(&v["min"]), u(&v["max"])),
                )
            })
            .collect();
        assert_eq!(ops, rows, "{name}");
        let s = &d["stats"];
        let calls: u64 = rows.values().map(|r| r.0).sum();
        let total: u64 = rows.values().map(|r| r.1).sum();
        assert_eq!((u(&s["count"]), u(&s["sum"])), (calls, total), "{name}");
        let mean = s["mean"].as_f64().unwrap();
        assert!((mean - total as f64 / calls as f64).abs() < 1e-6, "{name}");
        let (sd, var) = (
            s["stddev"].as_f64().unwrap(),
            s["variance"].as_f64().unwrap(),
        );
        assert!(
            (sd * sd - var.abs()).abs() <= 1e-6 * var.abs().max(1.0),
            "{name}"
        );
    }

    // Without --stats or a summary, the section is empty and the configuration says so.
    let plain = sys_trace().json();
    let p = &plain["rocprofiler-sdk-tool"][0];
    assert_eq!(p["summary"], json!([]));
    assert_eq!(p["metadata"]["config"]["summary"], false);
    assert_eq!(p["metadata"]["config"]["summary_output"], false);
    assert_eq!(p["metadata"]["config"]["summary_file"], "stderr");
}
