//! HIP calls' arguments and return values end to end on the simulated Radeon 890M (issue 24,
//! point 2): the reference workload traced once into JSON, rocpd and Perfetto; every
//! `hipMemcpy` carries `dst`, `src`, `sizeBytes` and `kind` as upstream's argument iteration
//! gives them (JSON: the type as `typeid` names it; rocpd: demangled) and its return value
//! (`retval.uint64_t_retval`, 0 for success), the same values in all three files; and the tool
//! captures arguments only when an output shows them.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use rusqlite::Connection;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::{Run, python, reference_workload, rocprof, scratch, sim_run, stderr};

/// The reference workload traced with every format that shows arguments (and CSV).
fn traced() -> &'static Run {
    static RUN: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        sim_run(
            "api-args",
            "all-formats",
            &["--sys-trace", "-f", "csv,json,pftrace,rocpd"],
            &reference_workload(),
            &[],
            &[],
        )
        .succeeded()
    })
}

/// `(start, [(type, name, value)], retval)` of every `hipMemcpy` record in the JSON file.
type Call = (u64, Vec<(String, String, String)>, Value);

fn json_memcpys(run: &Run) -> Vec<Call> {
    let text = std::fs::read_to_string(run.file("results.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let p = &doc["rocprofiler-sdk-tool"][0];
    let names = &p["strings"]["buffer_records"];
    let op_name = |r: &Value| -> String {
        names[r["kind"].as_u64().unwrap() as usize]["operations"]
            [r["operation"].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_owned()
    };
    p["buffer_records"]["hip_api"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| op_name(r) == "hipMemcpy")
        .map(|r| {
            let args = r["args"]
                .as_array()
                .unwrap_or_else(|| panic!("no args: {r}"))
                .iter()
                .map(|a| {
                    (
                        a["type"].as_str().unwrap().to_owned(),
                        a["name"].as_str().unwrap().to_owned(),
                        a["value"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            (
                r["start_timestamp"].as_u64().unwrap(),
                args,
                r["retval"].clone(),
            )
        })
        .collect()
}

fn is_hex_pointer(v: &str) -> bool {
    v.strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn every_json_hipmemcpy_has_its_four_arguments_and_a_zero_retval() {
    let run = traced();
    let calls = json_memcpys(run);
    // 8 iterations, a copy each way.
    assert_eq!(calls.len(), 16, "{}", run.stderr());
    let copies = run.rows("memory_copy_trace");
    assert_eq!(copies.len(), 16);
    let mut kinds = BTreeMap::new();
    for (_, args, retval) in &calls {
        let shape: Vec<(&str, &str)> = args
            .iter()
            .map(|(t, n, _)| (t.as_str(), n.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                ("Pv", "dst"),
                ("PKv", "src"),
                ("m", "sizeBytes"),
                ("13hipMemcpyKind", "kind")
            ],
            "{args:?}"
        );
        assert!(is_hex_pointer(&args[0].2), "dst {}", args[0].2);
        assert!(is_hex_pointer(&args[1].2), "src {}", args[1].2);
        assert_eq!(args[2].2, "1048576");
        *kinds.entry(args[3].2.clone()).or_insert(0) += 1;
        assert_eq!(retval, &serde_json::json!({ "uint64_t_retval": 0 }));
    }
    assert_eq!(
        kinds,
        BTreeMap::from([
            ("DeviceToHost".to_owned(), 8),
            ("HostToDevice".to_owned(), 8)
        ])
    );
    // The workload allocates its two device buffers once: every host-to-device copy writes
    // the first, every device-to-host copy reads the second, and the host side is the same
    // buffer each time too.
    let pairs = |kind: &str| -> std::collections::BTreeSet<(String, String)> {
        calls
            .iter()
            .filter(|c| c.1[3].2 == kind)
            .map(|c| (c.1[0].2.clone(), c.1[1].2.clone()))
            .collect()
    };
    let (h2d, d2h) = (pairs("HostToDevice"), pairs("DeviceToHost"));
    assert_eq!((h2d.len(), d2h.len()), (1, 1), "{h2d:?} {d2h:?}");
    let (x, y) = (&h2d.first().unwrap().0, &d2h.first().unwrap().1);
    assert_ne!(x, y, "two device buffers");
}

#[test]
fn rocpd_arg_holds_the_same_values_with_demangled_types() {
    let run = traced();
    let db = Connection::open_with_flags(
        run.file("results.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = db
        .prepare(
            "SELECT r.start, a.position, a.type, a.name, a.value \
             FROM rocpd_arg a JOIN rocpd_region r ON r.event_id = a.event_id \
             JOIN rocpd_string s ON s.id = r.name_id \
             WHERE s.string = 'hipMemcpy' ORDER BY r.start, a.position",
        )
        .unwrap();
    let rows: Vec<(i64, i64, String, String, String)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let json = json_memcpys(run);
    assert_eq!(rows.len(), 4 * json.len(), "four arguments per hipMemcpy");
    let demangled = ["void*", "void const*", "unsigned long", "hipMemcpyKind"];
    for (call, chunk) in json.iter().zip(rows.chunks(4)) {
        for (k, row) in chunk.iter().enumerate() {
            assert_eq!(row.0 as u64, call.0, "the same call");
            assert_eq!(row.1, k as i64);
            assert_eq!(row.2, demangled[k]);
            assert_eq!((&row.3, &row.4), (&call.1[k].1, &call.1[k].2));
        }
    }
    // Only HIP calls have arguments there, as upstream writes them.
    let non_hip: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM rocpd_arg a JOIN rocpd_event e ON e.id = a.event_id \
             JOIN rocpd_string s ON s.id = e.category_id WHERE s.string NOT LIKE 'HIP%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(non_hip, 0);
}

#[test]
fn perfetto_hipmemcpy_slices_carry_the_arguments_as_annotations() {
    let run = traced();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto/summarize.py");
    let out = std::process::Command::new(python())
        .arg(&script)
        .arg(run.file("results.pftrace"))
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        eprintln!(
            "SKIPPED: the Python `perfetto` package is not importable by {} \
             (install it with `python3 -m pip install perfetto protobuf`, as .ci/run does)",
            python().display()
        );
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["errors"], serde_json::json!([]));
    let slices: Vec<&Value> = summary["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "hipMemcpy")
        .collect();
    let json = json_memcpys(run);
    assert_eq!(slices.len(), json.len());
    for call in &json {
        let slice = slices
            .iter()
            .find(|s| s["args"]["begin_ns"].as_u64() == Some(call.0))
            .unwrap_or_else(|| panic!("no slice starts at {}", call.0));
        // Upstream's own annotations keep their values beside the arguments.
        assert!(slice["args"]["kind"].is_u64(), "{slice}");
        for (_, name, value) in &call.1 {
            // Named `args.<name>`: upstream's own annotations include a `kind`.
            assert_eq!(
                slice["args"][format!("args.{name}")].as_str(),
                Some(value.as_str()),
                "{name} on {slice}"
            );
        }
    }
}

/// The reference workload traced with `options`, its record directory kept (copied by a shell
/// around the application before `rocprof` removes it).
fn kept_log(tag: &str, options: &[&str]) -> PathBuf {
    let tmp = scratch("api-args", tag);
    let kept = tmp.join("kept");
    let script = format!(
        "\"$@\" && cp -r \"$ROCPROF_RECORD_DIR\" '{}'",
        kept.display()
    );
    let o = rocprof(&tmp)
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(tmp.join("out"))
        .args(["-o", "run", "--", "sh", "-c", &script, "sh"])
        .arg(reference_workload())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let logs: Vec<PathBuf> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rplog"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

#[test]
fn arguments_are_captured_only_for_outputs_that_show_them() {
    let csv = trace_records::ProcessTrace::read(&kept_log("csv", &["--hip-trace"])).unwrap();
    assert!(!csv.api.is_empty());
    assert!(
        csv.api_args.is_empty(),
        "a CSV-only run captures no arguments"
    );
    let json = trace_records::ProcessTrace::read(&kept_log("json", &["--hip-trace", "-f", "json"]))
        .unwrap();
    assert!(!json.api_args.is_empty());
    // Every HIP call the signature table knows carries its arguments.
    let captured = json
        .api
        .iter()
        .filter(|r| json.api_args.contains_key(&trace_records::ApiArgs::key(r)));
    assert_eq!(captured.count(), json.api.len());
}
