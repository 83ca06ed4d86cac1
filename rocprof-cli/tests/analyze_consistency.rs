//! `rocprof analyze` gives one run the same verdicts whichever of its forms it reads: the kept
//! record directory, the CSV directory and the rocpd database `rocprof convert` writes from it.
//! Every process report (containment, margins, durations, clock, summary, counts, what is
//! missing) is the same but for its label, and so are the counter rows. ROCTx marks are
//! instants in all three (a rocpd database stores them as samples, which were read back as
//! zero-length ranges).
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or `cargo xtask
//! build` first).

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{python, record_dirs, rocprof, scratch, stderr, workload};

/// A Python application on the simulated HIP runtime: four iterations, each a push/pop range
/// around two marks and a host-to-device and a device-to-host `hipMemcpy`.
const MARKS: &str = r#"
import ctypes
hip = ctypes.CDLL("libamdhip64.so.7")
roctx = ctypes.CDLL("librocprofiler-sdk-roctx.so.1")
assert hip.hipSetDevice(0) == 0
size = 1 << 16
host = ctypes.create_string_buffer(size)
dev = ctypes.c_void_p()
assert hip.hipMalloc(ctypes.byref(dev), ctypes.c_size_t(size)) == 0
for i in range(4):
    roctx.roctxRangePushA(b"iteration")
    roctx.roctxMarkA(b"before copy")
    assert hip.hipMemcpy(dev, host, ctypes.c_size_t(size), 1) == 0
    assert hip.hipMemcpy(host, dev, ctypes.c_size_t(size), 2) == 0
    roctx.roctxMarkA(b"after copy")
    roctx.roctxRangePop()
assert hip.hipDeviceSynchronize() == 0
hip.hipFree(dev)
"#;

/// The three forms of one run.
struct Forms {
    record_dir: PathBuf,
    csv: PathBuf,
    rocpd: PathBuf,
}

/// Runs `app` under `rocprof --sim <options> -f csv,rocpd -d <tmp>/out -o run` with its
/// outputs blocked (a directory where `run_agent_info.csv` goes), so the record directory is
/// kept; copies it aside (analysed later), unblocks, and converts the kept one.
fn run_in_three_forms(
    tmp: &Path,
    options: &[&str],
    env: &[(&str, &str)],
    app: &mut Command,
) -> Forms {
    let out = tmp.join("out");
    std::fs::create_dir_all(out.join("run_agent_info.csv/blocked")).unwrap();
    let mut c = rocprof(tmp);
    for v in [
        "WSLSIM_SEED",
        "WSLKMT_VENDOR_PACKET",
        "ROCPROFILER_METRICS_PATH",
    ] {
        c.env_remove(v);
    }
    let o = c
        .arg("--sim")
        .args(options)
        .args(["-f", "csv,rocpd", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(app.get_program())
        .args(app.get_args())
        .env("WSLSIM_SEED", "5")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(stderr(&o).contains("finish the job with"), "{}", stderr(&o));
    let kept = record_dirs(tmp);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let record_dir = tmp.join("kept-copy");
    std::fs::create_dir_all(&record_dir).unwrap();
    for e in std::fs::read_dir(&kept[0]).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), record_dir.join(e.file_name())).unwrap();
        }
    }
    std::fs::remove_dir_all(out.join("run_agent_info.csv")).unwrap();
    let o = rocprof(tmp)
        .env_remove("ROCPROFILER_METRICS_PATH")
        .arg("convert")
        .arg(&kept[0])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rocpd = out.join("run_results.db");
    assert!(rocpd.is_file(), "{}", stderr(&o));
    Forms {
        record_dir,
        csv: out,
        rocpd,
    }
}

/// `rocprof analyze --json <input>` (alone, so its counters are its own run).
fn report(tmp: &Path, input: &Path) -> Value {
    let o = rocprof(tmp)
        .env_remove("ROCPROFILER_METRICS_PATH")
        .args(["analyze", "--json"])
        .arg(input)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The single process's report without its label (which names the input).
fn process(r: &Value) -> Value {
    let processes = r["inputs"][0]["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1, "{processes:?}");
    let mut p = processes[0].clone();
    p.as_object_mut().unwrap().remove("label");
    p
}

/// `v` with every number that is not an integer rounded to six decimals: counter_collection.csv
/// writes values as `%f` does, so a derived counter read from it is the value to 1e-6.
fn six_decimals(v: &Value) -> Value {
    match v {
        Value::Number(n) if !n.is_u64() && !n.is_i64() => {
            let x = n.as_f64().unwrap();
            serde_json::json!((x * 1e6).round() / 1e6)
        }
        Value::Array(a) => Value::Array(a.iter().map(six_decimals).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), six_decimals(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The counter groups without what names the inputs and their kinds, their values to six
/// decimals.
fn counters(r: &Value) -> Value {
    let mut c = six_decimals(&r["counters"]);
    for g in c.as_array_mut().unwrap() {
        let g = g.as_object_mut().unwrap();
        g.remove("runs");
        g.remove("origins");
    }
    c
}

/// Analyses the three forms and checks they agree; returns the record directory's report.
fn same_verdicts(tmp: &Path, forms: &Forms) -> Value {
    let rec = report(tmp, &forms.record_dir);
    let csv = report(tmp, &forms.csv);
    let db = report(tmp, &forms.rocpd);
    assert_eq!(rec["inputs"][0]["kind"], "record-directory");
    assert_eq!(csv["inputs"][0]["kind"], "csv-directory");
    assert_eq!(db["inputs"][0]["kind"], "rocpd");
    let p = process(&rec);
    assert_eq!(process(&csv), p, "the CSV directory differs");
    assert_eq!(process(&db), p, "the rocpd database differs");
    assert_eq!(counters(&csv), counters(&rec), "CSV counters differ");
    assert_eq!(counters(&db), counters(&rec), "rocpd counters differ");
    rec
}

/// Marks are instants in every form: the rocpd database no longer reports each `roctxMarkA`
/// as a zero-duration range, and the text reports say the same about durations.
#[test]
fn marks_are_instants_whichever_form_of_the_run_is_read() {
    let tmp = scratch("analyze-consistency", "marks");
    let mut app = Command::new(python());
    app.args(["-c", MARKS]);
    let forms = run_in_three_forms(&tmp, &["--sys-trace"], &[], &mut app);
    let rec = same_verdicts(&tmp, &forms);
    let p = process(&rec);
    assert_eq!(p["counts"]["markers"], 12);
    let ranges = &p["timeline"]["durations"]["ranges"];
    assert_eq!(
        (&ranges["records"], &ranges["zero"], &ranges["negative"]),
        (&Value::from(4), &Value::from(0), &Value::from(0)),
        "{ranges}"
    );
    assert_eq!(p["timeline"]["durations"]["listed"], serde_json::json!([]));
    assert_eq!(p["timeline"]["copies"]["checked"], 8);
    assert_eq!(p["timeline"]["copies"]["held"], 8);
    for input in [&forms.record_dir, &forms.csv, &forms.rocpd] {
        let o = rocprof(&tmp).arg("analyze").arg(input).output().unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("durations: no zero or negative durations"),
            "{}: {text}",
            input.display()
        );
        assert!(!text.contains("range before copy"), "{text}");
    }
}

/// The reference workload with kernels, copies, ranges and counters: containment to the
/// nanosecond of every margin, the summary and the counter rows agree in all three forms.
#[test]
fn a_counted_run_gives_the_same_verdicts_in_every_form() {
    let tmp = scratch("analyze-consistency", "counted");
    let mut app = Command::new(workload("reference-workload"));
    let forms = run_in_three_forms(
        &tmp,
        &["--sys-trace", "--pmc", "SQ_WAVES", "GRBM_COUNT"],
        &[],
        &mut app,
    );
    let rec = same_verdicts(&tmp, &forms);
    let p = process(&rec);
    assert_eq!(p["timeline"]["dispatches"]["held"], 8);
    assert_eq!(p["timeline"]["copies"]["held"], 16);
    assert_eq!(p["counts"]["markers"], 8);
    let g = &rec["counters"][0];
    assert_eq!(g["rows"].as_array().unwrap().len(), 16);
    // In counter-id order, as counter_collection.csv and the database have them.
    assert_eq!(g["counters"], serde_json::json!(["GRBM_COUNT", "SQ_WAVES"]));
}

/// A GRBM zero burst at the start of the session: rocprof sets the GRBM-based values of those
/// dispatches aside. The record directory and the CSV directory (its counter_hygiene.csv) flag
/// the same dispatches; the database, which records only the values written, has the same
/// timeline, summary and remaining values, and says which values are absent and where to look.
#[test]
fn a_grbm_burst_is_flagged_alike_where_the_input_can_tell() {
    let tmp = scratch("analyze-consistency", "burst");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/grbm-burst-25ms.toml");
    let mut app = Command::new(workload("reference-workload"));
    let forms = run_in_three_forms(
        &tmp,
        &["--kernel-trace", "--pmc", "GPU_UTIL", "SQ_WAVES"],
        &[("WSLSIM_SCENARIO", scenario.to_str().unwrap())],
        &mut app,
    );
    let rec = report(&tmp, &forms.record_dir);
    let csv = report(&tmp, &forms.csv);
    let db = report(&tmp, &forms.rocpd);
    let p = process(&rec);
    assert_eq!(process(&csv), p, "the CSV directory differs");
    assert_eq!(counters(&csv), counters(&rec), "CSV counters differ");
    let g = &counters(&rec)[0];
    let flagged: Vec<u64> = g["grbm_zero"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["dispatch_id"].as_u64().unwrap())
        .collect();
    assert!(!flagged.is_empty() && flagged[0] == 1, "{g}");

    let d = process(&db);
    for key in ["pid", "timeline", "summary"] {
        assert_eq!(d[key], p[key], "{key}");
    }
    let absent: Vec<String> = flagged
        .iter()
        .map(|id| format!("dispatch {id} GPU_UTIL"))
        .collect();
    let said = format!(
        "{} ({}): rocprof leaves the values it sets aside",
        match flagged.len() {
            1 => "1 dispatch × counter value is absent".to_owned(),
            n => format!("{n} dispatch × counter values are absent"),
        },
        absent.join(", ")
    );
    let missing = d["missing"].as_array().unwrap();
    assert!(
        missing
            .iter()
            .any(|m| m.as_str().unwrap().starts_with(&said)),
        "{missing:?}"
    );
    // Its rows are the values the others estimated.
    let estimated: Vec<&Value> = g["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["estimate"]["estimate"].is_null())
        .collect();
    let db_counters = counters(&db);
    let db_rows: Vec<&Value> = db_counters[0]["rows"].as_array().unwrap().iter().collect();
    assert_eq!(db_rows, estimated);
}
