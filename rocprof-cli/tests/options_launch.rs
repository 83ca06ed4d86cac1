//! rocprofv3's launch, domain and refusal options on the simulated stack: each has its effect
//! or is refused before anything runs, with the reason.
//!
//! Needs the staged simulator: run through `cargo xtask test`.

mod support;
use std::path::Path;
use support::*;

fn csv_rows(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().count().saturating_sub(1)
}

/// Refused before launch: exit code 2, the reason on stderr, no record directory left.
fn refused(args: &[&str], expect: &str) {
    let tmp = scratch(
        "options-launch",
        &format!("refused-{}", args[0].trim_matches('-')),
    );
    let o = rocprof(&tmp)
        .args(["--sim"])
        .args(args)
        .arg("--")
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(expect),
        "{args:?}: expected {expect:?} in {err}"
    );
    assert!(
        record_dirs(&tmp).is_empty(),
        "{args:?}: nothing may run before the refusal"
    );
}

#[test]
fn options_this_stack_cannot_have_are_refused_with_the_reason() {
    refused(
        &["-p", "1234"],
        "do not reference-count that topology snapshot",
    );
    refused(&["--attach", "1234"], "refcount-capable runtime");
    refused(&["--kernel-trace", "--attach-children"], "--pid");
    refused(
        &["--pmc", "SQ_WAVES", "--replay-mode", "kernel"],
        "kernel replay",
    );
    refused(
        &["--kernel-trace", "--benchmark-mode", "execution-profile"],
        "cargo xtask bench",
    );
    refused(
        &["--att", "--att-consecutive-kernels", "2"],
        "its own capture",
    );
    refused(
        &["--kernel-trace", "--ompt-trace", "threads"],
        "unknown category",
    );
    refused(
        &["--kernel-trace", "--mpi-world-rank-variable", "R"],
        "--mpi-world-size-variable",
    );
    refused(
        &["--kernel-trace", "--preload", "/no/such/lib.so"],
        "/no/such/lib.so",
    );
    refused(&["--kernel-trace", "--no-such-option"], "--no-such-option");
}

#[test]
fn a_domain_whose_library_never_loads_is_said_after_the_run() {
    let tmp = scratch("options-launch", "domains");
    let o = rocprof(&tmp)
        .args([
            "--sim",
            "--kernel-trace",
            "--rccl-trace",
            "--rocdecode-trace",
        ])
        .args(["--kfd-trace", "-d"])
        .arg(tmp.join("out"))
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("--rccl-trace: the application never loaded librccl.so"),
        "{err}"
    );
    assert!(
        err.contains("--rocdecode-trace: the application never loaded librocdecode.so"),
        "{err}"
    );
    assert!(err.contains("/dev/kfd"), "{err}");
    assert_eq!(csv_rows(&tmp.join("out/run_kernel_trace.csv")), 8, "{err}");

    // Through -s the library domains are implied quietly.
    let o = rocprof(&tmp)
        .args(["--sim", "-s", "-d"])
        .arg(tmp.join("sys"))
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("never loaded"), "{err}");
}

#[test]
fn runtime_trace_is_sys_trace_without_hsa() {
    let tmp = scratch("options-launch", "runtime");
    let out = tmp.join("out");
    let o = rocprof(&tmp)
        .args(["--sim", "-r", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(csv_rows(&out.join("run_kernel_trace.csv")), 8, "{err}");
    assert!(csv_rows(&out.join("run_hip_api_trace.csv")) > 0, "{err}");
    assert!(
        csv_rows(&out.join("run_memory_copy_trace.csv")) > 0,
        "{err}"
    );
    assert!(!out.join("run_hsa_api_trace.csv").exists(), "no HSA: {err}");
    let hip = std::fs::read_to_string(out.join("run_hip_api_trace.csv")).unwrap();
    assert!(
        !hip.contains("HIP_COMPILER_API"),
        "-r takes the HIP runtime only"
    );
}

#[test]
fn preloads_and_signal_handlers_reach_the_application() {
    let tmp = scratch("options-launch", "preload");
    // A shell stands in for the application: it prints what it was given (and, having no
    // ROCm runtime, is not traced).
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "--preload", "libm.so.6"])
        .args(["--disable-signal-handlers", "--"])
        .args([
            "/bin/sh",
            "-c",
            "echo \"PRELOAD=$LD_PRELOAD\"; echo \"HANDLERS=$ROCPROF_SIGNAL_HANDLERS\"",
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{err}");
    let preload = out
        .lines()
        .find_map(|l| l.strip_prefix("PRELOAD="))
        .unwrap_or_default();
    let libs: Vec<&str> = preload.split(':').collect();
    assert!(
        libs.len() >= 2 && libs[0].ends_with("librocprof_tool.so") && libs[1] == "libm.so.6",
        "the tool first, then the preloads: {preload}"
    );
    assert!(out.contains("HANDLERS=0"), "{out}");
    assert!(err.contains("installs no signal handlers"), "{err}");

    // ROCPROF_PRELOAD is the default of --preload.
    let o = rocprof(&tmp)
        .env("ROCPROF_PRELOAD", "libz.so.1")
        .args(["--sim", "--kernel-trace", "--"])
        .args(["/bin/sh", "-c", "echo \"PRELOAD=$LD_PRELOAD\""])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(":libz.so.1"), "{out}");
}
