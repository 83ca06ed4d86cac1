//! `rocprof [options] -- app` end to end on the simulated Radeon 890M: the seed's collection
//! table, timeline containment, the blit kernel, explanations of empty runs, crashes.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

type Row = HashMap<String, String>;

fn bin(name: &str) -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rocprof"));
    let p = exe.parent().unwrap().join(name);
    assert!(
        p.exists(),
        "{} is not built: run `cargo xtask test`",
        p.display()
    );
    assert!(
        exe.parent()
            .unwrap()
            .join("sim/lib/libamdhip64.so.7")
            .exists(),
        "the simulated stack is not staged: run `cargo xtask test`"
    );
    p
}

struct Run {
    out: Output,
    dir: PathBuf,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("run_{name}.csv"))
    }
    fn rows(&self, name: &str) -> Vec<Row> {
        let path = self.file(name);
        let mut r = csv::Reader::from_path(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), self.stderr()));
        r.deserialize().map(Result::unwrap).collect()
    }
}

fn num(r: &Row, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

fn rocprof(options: &[&str], app: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "rocprof-run-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in [
        "WSLSIM_SCENARIO",
        "HSA_TOOLS_DISABLE_REGISTER",
        "HSA_ENABLE_DXG_DETECTION",
        "ROCPROF_HSAKMT_LAYOUT",
        "LD_PRELOAD",
    ] {
        c.env_remove(v);
    }
    c.arg("--sim")
        .args(options)
        .arg("-d")
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(bin(app))
        .args(args);
    c.envs(env.iter().copied());
    Run {
        out: c.output().unwrap(),
        dir,
    }
}

fn sys_trace() -> &'static Run {
    static RUN: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let r = rocprof(&["--sys-trace"], "reference-workload", &[], &[]);
        assert!(r.out.status.success(), "{}", r.stderr());
        r
    })
}

#[test]
fn sys_trace_reproduces_the_seeds_collection_table() {
    let r = sys_trace();
    let hip = r.rows("hip_api_trace");
    assert_eq!(hip.len(), 52, "HIP API records");
    assert_eq!(
        hip.iter().filter(|h| h["Function"] == "hipMemcpy").count(),
        16
    );
    assert_eq!(
        hip.iter()
            .filter(|h| h["Function"] == "hipLaunchKernel")
            .count(),
        8
    );

    let hsa = r.rows("hsa_api_trace");
    let distinct: std::collections::HashSet<&str> =
        hsa.iter().map(|h| h["Function"].as_str()).collect();
    assert!(
        hsa.len() >= 300,
        "HSA API records in the hundreds: {}",
        hsa.len()
    );
    assert!(
        distinct.len() >= 24,
        "dozens of distinct HSA functions: {}",
        distinct.len()
    );
    for h in hsa.iter().chain(&hip) {
        assert!(
            num(h, "End_Timestamp") > num(h, "Start_Timestamp"),
            "zero or negative duration: {h:?}"
        );
    }

    let kernels = r.rows("kernel_trace");
    assert_eq!(kernels.len(), 8);
    for k in &kernels {
        assert_eq!(
            k["Kernel_Name"],
            "axpb(float const*, float*, unsigned long)"
        );
        assert!(num(k, "End_Timestamp") > num(k, "Start_Timestamp"));
        assert!(num(k, "VGPR_Count") > 0 && num(k, "SGPR_Count") > 0);
        assert_eq!(
            (num(k, "Workgroup_Size_X"), num(k, "Grid_Size_X")),
            (256, 262_144)
        );
        assert_eq!(k["Agent_Id"], "Agent 1");
    }

    let copies = r.rows("memory_copy_trace");
    assert_eq!(copies.len(), 16);
    assert_eq!(
        copies
            .iter()
            .filter(|c| c["Direction"] == "MEMORY_COPY_HOST_TO_DEVICE")
            .count(),
        8
    );
    assert_eq!(
        copies
            .iter()
            .filter(|c| c["Direction"] == "MEMORY_COPY_DEVICE_TO_HOST")
            .count(),
        8
    );

    let mut markers: Vec<String> = r
        .rows("marker_api_trace")
        .iter()
        .map(|m| m["Function"].clone())
        .collect();
    markers.sort();
    assert_eq!(
        markers,
        (0..8).map(|i| format!("iter{i}")).collect::<Vec<_>>()
    );

    let agents = r.rows("agent_info");
    assert_eq!(agents[1]["Name"], "gfx1150");
}

#[test]
fn each_option_alone_gives_the_same_records_as_within_sys_trace() {
    let sys = sys_trace();
    for (option, file) in [
        ("--hip-trace", "hip_api_trace"),
        ("--hsa-trace", "hsa_api_trace"),
        ("--kernel-trace", "kernel_trace"),
        ("--memory-copy-trace", "memory_copy_trace"),
        ("--marker-trace", "marker_api_trace"),
    ] {
        let r = rocprof(&[option], "reference-workload", &[], &[]);
        assert!(r.out.status.success(), "{option}: {}", r.stderr());
        let key = |rows: Vec<Row>| {
            let mut v: Vec<String> = rows
                .iter()
                .map(|x| {
                    x.get("Function")
                        .or_else(|| x.get("Kernel_Name"))
                        .or_else(|| x.get("Direction"))
                        .unwrap()
                        .clone()
                })
                .collect();
            v.sort();
            v
        };
        let (alone, within) = (key(r.rows(file)), key(sys.rows(file)));
        if file == "hsa_api_trace" {
            // Polling loops make exact HSA call counts timing dependent: compare the functions.
            let set =
                |v: &Vec<String>| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
            assert_eq!(set(&alone), set(&within), "{option}");
            let (a, w) = (alone.len() as f64, within.len() as f64);
            assert!((a - w).abs() / w < 0.25, "{option}: {a} vs {w} records");
        } else {
            assert!(
                alone == within,
                "{option}: {} vs {} records",
                alone.len(),
                within.len()
            );
        }
        for other in [
            "kernel_trace",
            "memory_copy_trace",
            "marker_api_trace",
            "hip_api_trace",
            "hsa_api_trace",
        ] {
            if other != file {
                assert!(!r.file(other).exists(), "{option} also wrote {other}");
            }
        }
    }
}

#[test]
fn dispatches_and_copies_lie_inside_the_calls_that_caused_them() {
    let r = sys_trace();
    let hip = r.rows("hip_api_trace");
    let by_corr: HashMap<u64, &Row> = hip.iter().map(|h| (num(h, "Correlation_Id"), h)).collect();
    let mut d2h: Vec<(u64, u64)> = Vec::new();
    for c in r.rows("memory_copy_trace") {
        let call = by_corr[&num(&c, "Correlation_Id")];
        assert_eq!(call["Function"], "hipMemcpy");
        assert!(
            num(call, "Start_Timestamp") <= num(&c, "Start_Timestamp"),
            "copy starts before its hipMemcpy"
        );
        assert!(
            num(&c, "End_Timestamp") <= num(call, "End_Timestamp"),
            "copy ends after its hipMemcpy"
        );
        if c["Direction"] == "MEMORY_COPY_DEVICE_TO_HOST" {
            d2h.push((num(call, "Start_Timestamp"), num(call, "End_Timestamp")));
        }
    }
    d2h.sort();
    for k in r.rows("kernel_trace") {
        let launch = by_corr[&num(&k, "Correlation_Id")];
        assert_eq!(launch["Function"], "hipLaunchKernel");
        let (start, end) = (num(&k, "Start_Timestamp"), num(&k, "End_Timestamp"));
        assert!(
            num(launch, "Start_Timestamp") <= start,
            "dispatch starts before hipLaunchKernel"
        );
        let consumer = d2h
            .iter()
            .find(|(s, _)| *s >= num(launch, "End_Timestamp"))
            .expect("a later D2H copy");
        assert!(
            end <= consumer.1,
            "dispatch ends after the hipMemcpy that consumes it"
        );
    }
}

#[test]
fn a_device_to_device_copy_is_the_blit_kernel() {
    let r = rocprof(
        &["--kernel-trace", "--memory-copy-trace"],
        "d2d-copy",
        &[],
        &[],
    );
    assert!(r.out.status.success(), "{}", r.stderr());
    let kernels = r.rows("kernel_trace");
    assert!(
        kernels
            .iter()
            .any(|k| k["Kernel_Name"] == "__amd_rocclr_copyBuffer"),
        "{kernels:?}"
    );
    assert!(
        r.rows("memory_copy_trace")
            .iter()
            .all(|c| c["Direction"] != "MEMORY_COPY_DEVICE_TO_DEVICE")
    );
}

#[test]
fn a_disabled_registration_is_explained() {
    let r = rocprof(
        &["--sys-trace"],
        "reference-workload",
        &[],
        &[("HSA_TOOLS_DISABLE_REGISTER", "1")],
    );
    assert!(
        r.out.status.success(),
        "the application still runs: {}",
        r.stderr()
    );
    assert!(
        r.stderr().contains("HSA_TOOLS_DISABLE_REGISTER=1 is set"),
        "{}",
        r.stderr()
    );
    assert!(!r.file("kernel_trace").exists());
}

#[test]
fn a_runtime_suppressing_registration_is_explained() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/suppressing-runtime.toml");
    let r = rocprof(
        &["--sys-trace"],
        "reference-workload",
        &[],
        &[("WSLSIM_SCENARIO", scenario.to_str().unwrap())],
    );
    assert!(
        r.out.status.success(),
        "the application still runs: {}",
        r.stderr()
    );
    assert!(
        r.stderr()
            .contains("suppresses tool registration on the DXG path"),
        "{}",
        r.stderr()
    );
    assert!(!r.file("hsa_api_trace").exists());
}

#[test]
fn dxg_detection_off_on_a_stock_runtime_is_explained() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/stock-7.2-runtime.toml");
    let env = [("WSLSIM_SCENARIO", scenario.to_str().unwrap())];
    let r = rocprof(&["--kernel-trace"], "reference-workload", &[], &env);
    assert!(
        r.stderr().contains("HSA_ENABLE_DXG_DETECTION is unset"),
        "{}",
        r.stderr()
    );
    // The same runtime works once detection is enabled, with the 376-byte layout probed.
    let env = [env[0], ("HSA_ENABLE_DXG_DETECTION", "1")];
    let r = rocprof(&["--kernel-trace"], "reference-workload", &[], &env);
    assert!(r.out.status.success(), "{}", r.stderr());
    assert_eq!(r.rows("kernel_trace").len(), 8);
}

#[test]
fn a_crash_midway_keeps_the_records_before_it_and_is_reported() {
    let r = rocprof(&["--sys-trace"], "crash-midway", &["4"], &[]);
    assert_eq!(r.out.status.code(), Some(128 + 11), "{}", r.stderr());
    assert!(r.stderr().contains("killed by SIGSEGV"), "{}", r.stderr());
    assert_eq!(r.rows("kernel_trace").len(), 4);
    let markers = r.rows("marker_api_trace");
    assert_eq!(markers.len(), 4, "{markers:?}");
    let hip = r.rows("hip_api_trace");
    assert_eq!(
        hip.iter()
            .filter(|h| h["Function"] == "hipLaunchKernel")
            .count(),
        4
    );
}

#[test]
fn dispatches_the_application_never_waited_for_are_recorded_before_a_crash() {
    // No synchronize, copy or HSA wait follows the launches: only the tool's own collection of
    // finished dispatches can write their records before the fault.
    let r = rocprof(&["--kernel-trace"], "unsynced-crash", &["3"], &[]);
    assert_eq!(r.out.status.code(), Some(128 + 11), "{}", r.stderr());
    let kernels = r.rows("kernel_trace");
    assert_eq!(kernels.len(), 3, "{kernels:?}");
    for k in &kernels {
        let (start, end): (u64, u64) = (
            k["Start_Timestamp"].parse().unwrap(),
            k["End_Timestamp"].parse().unwrap(),
        );
        assert!(start > 0 && end > start, "{k:?}");
    }
}

#[test]
fn several_processes_each_get_their_records() {
    let r = rocprof(
        &["--hip-trace", "--kernel-trace"],
        "multi-process",
        &[],
        &[],
    );
    assert!(r.out.status.success(), "{}", r.stderr());
    let files: Vec<PathBuf> = std::fs::read_dir(&r.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("kernel_trace.csv"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}\n{}", r.stderr());
    for f in files {
        assert_eq!(
            std::fs::read_to_string(&f).unwrap().lines().count(),
            9,
            "{}",
            f.display()
        );
    }
}

#[test]
fn unknown_options_fail_before_anything_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_rocprof"))
        .args(["--kernel-trace", "-f", "xml", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown --output-format"));
    let out = Command::new(env!("CARGO_BIN_EXE_rocprof"))
        .args(["--kernel-trace"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to run"));
}

#[test]
fn an_hsa_gpu_without_an_agent_record_is_reported_and_the_rest_traced() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/unpublished-gpu.toml");
    let r = rocprof(
        &["--kernel-trace"],
        "reference-workload",
        &[],
        &[("WSLSIM_SCENARIO", scenario.to_str().unwrap())],
    );
    assert!(r.out.status.success(), "never fatal: {}", r.stderr());
    assert!(
        r.stderr().contains(
            "counters and thread trace are unavailable on the HSA GPU agent(s) with KMT node id 2"
        ),
        "{}",
        r.stderr()
    );
    assert_eq!(
        r.rows("kernel_trace").len(),
        8,
        "the paired GPU stays profilable"
    );
}
