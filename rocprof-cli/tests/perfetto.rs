//! `-f csv,pftrace` end to end on the simulated Radeon 890M: the reference workload's
//! `run_results.pftrace` is decoded by `tests/perfetto/summarize.py` with Perfetto's own
//! protobuf classes (the PyPI `perfetto` package, which `.ci/run` installs), and the summary
//! it prints (tracks, slices nested per track as a trace processor nests them, flows, counter
//! values, format violations) is checked against the seed's table and the CSV files of the
//! same run. Without the package every test here says so on stderr and checks nothing else.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use support::{python, rocprof, scratch, stderr, workload};

type Row = HashMap<String, String>;

struct Traced {
    dir: PathBuf,
    /// The decoder's summary; `None` when the `perfetto` package is not importable.
    summary: Option<Value>,
}

impl Traced {
    fn rows(&self, name: &str) -> Vec<Row> {
        let path = self.dir.join(format!("run_{name}.csv"));
        let mut r =
            csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        r.deserialize().map(Result::unwrap).collect()
    }
}

fn traced() -> &'static Traced {
    static RUN: std::sync::OnceLock<Traced> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let tmp = scratch("perfetto", "sys-trace");
        let dir = tmp.join("out");
        let out = rocprof(&tmp)
            .args(["--sim", "--sys-trace", "-f", "csv,pftrace", "-d"])
            .arg(&dir)
            .args(["-o", "run", "--"])
            .arg(workload("reference-workload"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let trace = dir.join("run_results.pftrace");
        assert!(trace.is_file(), "no {}: {}", trace.display(), stderr(&out));
        let summary = summarize(&trace);
        Traced { dir, summary }
    })
}

/// Runs the decoder; `None` (said on stderr) when the `perfetto` package is missing.
fn summarize(trace: &Path) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto/summarize.py");
    let out = std::process::Command::new(python())
        .arg(&script)
        .arg(trace)
        .output()
        .expect("python3 runs");
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the decoder prints JSON"))
}

/// The summary, or `None` after saying on stderr why the test checks nothing.
fn summary(test: &str) -> Option<(&'static Traced, &'static Value)> {
    let t = traced();
    match &t.summary {
        Some(s) => Some((t, s)),
        None => {
            eprintln!(
                "SKIPPED {test}: the Python `perfetto` package is not importable by {} \
                 (install it with `python3 -m pip install perfetto protobuf`, as .ci/run does)",
                python().display()
            );
            None
        }
    }
}

fn slices(s: &Value) -> &[Value] {
    s["slices"].as_array().unwrap()
}

fn tracks(s: &Value) -> BTreeMap<u64, &Value> {
    s["tracks"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v))
        .collect()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn cell(r: &Row, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

fn of_category<'a>(s: &'a Value, category: &str) -> Vec<&'a Value> {
    slices(s)
        .iter()
        .filter(|x| x["category"] == category)
        .collect()
}

#[test]
fn the_file_follows_the_format_rules_and_has_the_process_and_thread_tracks() {
    let Some((t, s)) = summary("the_file_follows_the_format_rules") else {
        return;
    };
    assert_eq!(s["errors"], Value::Array(vec![]), "format violations");
    let pid = cell(&t.rows("hip_api_trace")[0], "Process_Id");

    // One sequence: defaults on clock 64, a snapshot of BOOTTIME (6) and clock 64 (incremental),
    // and every event on BOOTTIME explicitly.
    let seqs = s["sequences"].as_object().unwrap();
    assert_eq!(seqs.len(), 1, "{seqs:?}");
    let (id, seq) = seqs.iter().next().unwrap();
    assert_ne!(id, "0");
    assert_eq!(seq["default_clock"], 64);
    let snapshot: Vec<(u64, bool)> = seq["snapshot"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (num(&c["clock_id"]), c["is_incremental"].as_bool().unwrap()))
        .collect();
    assert_eq!(snapshot, [(6, false), (64, true)]);
    assert_eq!(s["clocks_used"], serde_json::json!([6]));

    let tracks = tracks(s);
    let process: Vec<_> = tracks
        .values()
        .filter(|t| t.get("process").is_some())
        .collect();
    assert_eq!(process.len(), 1, "one process track");
    assert_eq!(num(&process[0]["process"]["pid"]), pid);
    assert_eq!(process[0]["process"]["name"], "reference-workload");
    let threads: Vec<_> = tracks
        .values()
        .filter(|t| t.get("thread").is_some())
        .collect();
    assert_eq!(threads.len(), 1, "the workload is single-threaded");
    assert_eq!(
        (
            num(&threads[0]["thread"]["pid"]),
            num(&threads[0]["thread"]["tid"])
        ),
        (pid, pid)
    );
    assert_eq!(threads[0]["parent"], process[0]["uuid"]);

    // Host slices on the thread's track, device slices on the stream's, both under the process.
    let thread_uuid = &threads[0]["uuid"];
    for x in slices(s) {
        let track = tracks[&num(&x["track"])];
        match x["category"].as_str().unwrap() {
            "hip_api" | "hsa_api" | "marker_api" => assert_eq!(&x["track"], thread_uuid),
            "kernel_dispatch" | "memory_copy" => {
                assert_eq!(track["name"], "STREAM [\" 0 \"] ");
                assert_eq!(track["parent"], process[0]["uuid"]);
            }
            other => panic!("unexpected category {other}"),
        }
    }
}

#[test]
fn the_slices_are_the_seeds_table() {
    let Some((t, s)) = summary("the_slices_are_the_seeds_table") else {
        return;
    };
    let hip = of_category(s, "hip_api");
    assert_eq!(hip.len(), 52, "HIP slices");
    let named = |v: &[&Value], n: &str| v.iter().filter(|x| x["name"] == n).count();
    assert_eq!(named(&hip, "hipMemcpy"), 16);
    assert_eq!(named(&hip, "hipLaunchKernel"), 8);
    let hsa = of_category(s, "hsa_api");
    assert_eq!(
        hsa.len(),
        t.rows("hsa_api_trace").len(),
        "HSA slices = hsa_api_trace.csv rows"
    );
    assert!(hsa.len() >= 300);

    let kernels = of_category(s, "kernel_dispatch");
    assert_eq!(kernels.len(), 8);
    for k in &kernels {
        assert_eq!(
            k["name"],
            "axpb(float const*, float*, unsigned long) [clone .kd]"
        );
        assert_eq!(k["args"]["agent"], "Agent-1");
        assert_eq!(k["args"]["agent_type"], "GPU");
        assert_eq!(k["args"]["kind"], 11);
        assert_eq!(
            (
                num(&k["args"]["workgroup_size"]),
                num(&k["args"]["grid_size"])
            ),
            (256, 262_144)
        );
    }

    let copies = of_category(s, "memory_copy");
    assert_eq!(copies.len(), 16);
    assert_eq!(named(&copies, "MEMORY_COPY_HOST_TO_DEVICE"), 8);
    assert_eq!(named(&copies, "MEMORY_COPY_DEVICE_TO_HOST"), 8);
    for c in &copies {
        assert_eq!(c["args"]["copy_bytes"], 1 << 20);
    }

    let mut markers: Vec<&str> = of_category(s, "marker_api")
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    markers.sort();
    assert_eq!(
        markers,
        (0..8).map(|i| format!("iter{i}")).collect::<Vec<_>>()
    );

    // The copy-bytes counters: 1 MiB in flight (1024 KiB) during each copy, 0 between.
    let counters = s["counters"].as_object().unwrap();
    for (name, copies) in [
        ("COPY BYTES to Agent [1] (GPU)", 8),
        ("COPY BYTES to Agent [0] (CPU)", 8),
    ] {
        let values: Vec<u64> = counters[name]
            .as_array()
            .unwrap_or_else(|| panic!("no {name} in {counters:?}"))
            .iter()
            .map(|p| num(&p[1]))
            .collect();
        assert_eq!(
            values.iter().filter(|&&v| v == 1024).count(),
            copies,
            "{name}: {values:?}"
        );
        assert!(
            values.iter().all(|&v| v == 1024 || v == 0),
            "{name}: {values:?}"
        );
        assert_eq!(values.last(), Some(&0));
    }
    let unit = tracks(s)
        .values()
        .find(|t| t["name"] == "COPY BYTES to Agent [1] (GPU)")
        .map(|t| t["counter"].clone())
        .unwrap();
    assert_eq!(
        (num(&unit["unit"]), num(&unit["unit_multiplier"])),
        (3, 1024)
    );
}

#[test]
fn slices_nest_and_each_hsa_call_sits_in_the_call_it_was_made_in() {
    let Some((_, s)) = summary("slices_nest") else {
        return;
    };
    let all = slices(s);
    // Every BEGIN found its END (the decoder reports strays in `errors`) and a child lies
    // within its parent.
    assert_eq!(s["errors"], Value::Array(vec![]));
    for x in all {
        assert!(num(&x["end"]) >= num(&x["ts"]), "{x}");
        if let Some(p) = x["parent"].as_u64() {
            let p = &all[p as usize];
            assert!(
                num(&p["ts"]) <= num(&x["ts"]) && num(&x["end"]) <= num(&p["end"]),
                "{x} outside {p}"
            );
            assert_eq!(p["track"], x["track"]);
        }
    }
    // The drawn nesting is the recorded one: a call's parent slice is its enclosing call.
    let mut inside_hip = 0;
    for x in of_category(s, "hsa_api")
        .into_iter()
        .chain(of_category(s, "hip_api"))
    {
        let ancestor = num(&x["args"]["ancestor_id"]);
        let parent = x["parent"].as_u64().map(|p| &all[p as usize]);
        match parent.filter(|p| p["category"] != "marker_api") {
            Some(p) => assert_eq!(num(&p["args"]["corr_id"]), ancestor, "{x} in {p}"),
            None => assert_eq!(ancestor, 0, "{x}"),
        }
        if x["category"] == "hsa_api" && parent.is_some_and(|p| p["category"] == "hip_api") {
            inside_hip += 1;
        }
    }
    assert!(inside_hip > 0, "no HSA call drawn inside a HIP call");
    // Every hipLaunchKernel makes HSA calls drawn inside it.
    for launch in of_category(s, "hip_api")
        .into_iter()
        .filter(|x| x["name"] == "hipLaunchKernel")
    {
        let index = &launch["index"];
        assert!(
            all.iter()
                .any(|x| &x["parent"] == index && x["category"] == "hsa_api"),
            "no HSA call inside {launch}"
        );
    }
}

#[test]
fn flows_join_each_launch_to_its_kernel_and_each_memcpy_to_its_copy() {
    let Some((_, s)) = summary("flows_join") else {
        return;
    };
    let all = slices(s);
    let flows: Vec<(&Value, &Value)> = s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (&all[num(&f[0]) as usize], &all[num(&f[1]) as usize]))
        .collect();
    let kernels = of_category(s, "kernel_dispatch");
    for k in &kernels {
        let into: Vec<_> = flows
            .iter()
            .filter(|(_, to)| to["index"] == k["index"])
            .collect();
        assert_eq!(into.len(), 1, "one flow into {k}");
        let from = into[0].0;
        assert_eq!(from["name"], "hipLaunchKernel", "{k}");
        assert_eq!(from["args"]["corr_id"], k["args"]["corr_id"]);
        assert!(num(&from["ts"]) <= num(&k["ts"]));
    }
    let launches = of_category(s, "hip_api")
        .into_iter()
        .filter(|x| x["name"] == "hipLaunchKernel")
        .count();
    assert_eq!(launches, kernels.len());
    for c in of_category(s, "memory_copy") {
        let from: Vec<_> = flows
            .iter()
            .filter(|(_, to)| to["index"] == c["index"])
            .collect();
        assert_eq!(from.len(), 1, "one flow into {c}");
        assert_eq!(from[0].0["name"], "hipMemcpy", "{c}");
    }
    assert_eq!(flows.len(), 8 + 16, "no other flows");
}

#[test]
fn timestamps_agree_with_the_csv_files() {
    let Some((t, s)) = summary("timestamps_agree") else {
        return;
    };
    let spans = |category: &str| {
        let mut v: Vec<(String, u64, u64)> = of_category(s, category)
            .iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_owned(),
                    num(&x["ts"]),
                    num(&x["end"]),
                )
            })
            .collect();
        v.sort();
        v
    };
    let csv = |file: &str, name: &str, suffix: &str| {
        let mut v: Vec<(String, u64, u64)> = t
            .rows(file)
            .iter()
            .map(|r| {
                (
                    format!("{}{suffix}", r[name]),
                    cell(r, "Start_Timestamp"),
                    cell(r, "End_Timestamp"),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(spans("hip_api"), csv("hip_api_trace", "Function", ""));
    assert_eq!(spans("hsa_api"), csv("hsa_api_trace", "Function", ""));
    assert_eq!(spans("marker_api"), csv("marker_api_trace", "Function", ""));
    assert_eq!(
        spans("kernel_dispatch"),
        csv("kernel_trace", "Kernel_Name", " [clone .kd]")
    );
    assert_eq!(
        spans("memory_copy"),
        csv("memory_copy_trace", "Direction", "")
    );
    // The annotations carry the same times and the recording thread.
    for x in slices(s) {
        assert_eq!(num(&x["args"]["begin_ns"]), num(&x["ts"]), "{x}");
        assert_eq!(num(&x["args"]["end_ns"]), num(&x["end"]), "{x}");
        assert_eq!(
            num(&x["args"]["delta_ns"]),
            num(&x["end"]) - num(&x["ts"]),
            "{x}"
        );
    }
    let tid = cell(&t.rows("hip_api_trace")[0], "Thread_Id");
    assert!(slices(s).iter().all(|x| num(&x["args"]["tid"]) == tid));
}

#[test]
fn counters_are_tracks_with_each_dispatchs_value_over_its_run() {
    let tmp = scratch("perfetto", "pmc");
    let dir = tmp.join("out");
    let out = rocprof(&tmp)
        .args([
            "--sim",
            "--pmc",
            "SQ_WAVES",
            "--kernel-trace",
            "-f",
            "csv,pftrace",
            "-d",
        ])
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(s) = summarize(&dir.join("run_results.pftrace")) else {
        eprintln!(
            "SKIPPED counters_are_tracks: the Python `perfetto` package is not importable by {}",
            python().display()
        );
        return;
    };
    assert_eq!(s["errors"], Value::Array(vec![]), "format violations");
    let t = Traced { dir, summary: None };
    let rows = t.rows("counter_collection");
    assert_eq!(rows.len(), 8);
    let mut expected = Vec::new();
    for r in &rows {
        assert_eq!(r["Counter_Name"], "SQ_WAVES");
        let value: f64 = r["Counter_Value"].parse().unwrap();
        expected.push((cell(r, "Start_Timestamp"), value));
        expected.push((cell(r, "End_Timestamp"), 0.0));
    }
    expected.sort_by_key(|e| e.0);
    let name = "Agent [1] PMC SQ_WAVES";
    let got: Vec<(u64, f64)> = s["counters"][name]
        .as_array()
        .unwrap_or_else(|| panic!("no {name} track: {}", s["counters"]))
        .iter()
        .map(|p| (num(&p[0]), p[1].as_f64().unwrap()))
        .collect();
    assert_eq!(got, expected);
    assert!(got.iter().any(|&(_, v)| v > 0.0));
    assert_eq!(of_category(&s, "kernel_dispatch").len(), 8);
}
