//! The seed's mismatched-pair failures, reproduced for real by the simulated stack, and what
//! the product does about them:
//!
//! * a stock ROCm 7.2.x runtime with a newer 396-byte thunk that offers no `DxgAbiCheck`: the
//!   runtime's 376-byte heap records are overrun, `hsa_init` succeeds, and the process dies
//!   later, at exit; the profiler's own reader (canary-measured, with slack) reads the same
//!   thunk correctly, and `rocprof avail` warns before anything is launched;
//! * late attach with a released thunk that does not reference-count its topology snapshot:
//!   a late enumeration reads the freed snapshot, and the profiler refuses to enumerate when
//!   the late-attach marker is set.
//!
//! Needs `cargo xtask build` (the staged simulator, the workloads, the tool).

mod support;

use serde_json::Value;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

const SIGABRT: i32 = 6;
const SIGSEGV: i32 = 11;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

/// A workload run directly against the staged simulator (no profiler), with a call log.
fn bare(name: &str, args: &[&str], lib: &Path, env: &[(&str, &Path)], log: &Path) -> Output {
    let mut c = Command::new(workload(name));
    for v in STEERING {
        c.env_remove(v);
    }
    c.args(args)
        .env("LD_LIBRARY_PATH", lib)
        .env("WSLSIM_CALL_LOG", log)
        .env_remove("ROCPROFILER_REGISTER_TOOL_ATTACHED");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn describe(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
        o.status,
        stdout(o),
        stderr(o)
    )
}

#[test]
fn the_stock_runtime_is_overrun_by_the_newer_thunk_and_crashes_later_not_in_hsa_init() {
    let dir = scratch("mismatched", "crash");
    let lib = exe_dir().join("sim/lib");
    let mismatched = scenario("stock-7.2-runtime-newer-thunk.toml");
    let one = PathBuf::from("1");
    for run in 0..3 {
        let log = dir.join(format!("calls-{run}"));
        let o = bare(
            "init-then-exit",
            &[],
            &lib,
            &[
                ("WSLSIM_SCENARIO", &mismatched),
                ("HSA_ENABLE_DXG_DETECTION", &one),
            ],
            &log,
        );
        // hsa_init returned success and the program ran to the end of main...
        let out = stdout(&o);
        for line in [
            "hsa_init -> 0",
            "hsa_iterate_agents -> 0 agents=2",
            "hsa_shut_down -> 0",
            "main returns",
        ] {
            assert!(out.lines().any(|l| l == line), "{line:?}\n{}", describe(&o));
        }
        // ...and only then died, killed by glibc's heap check (the same way every run).
        assert!(
            matches!(o.status.signal(), Some(SIGABRT | SIGSEGV)),
            "not killed by SIGABRT/SIGSEGV\n{}",
            describe(&o)
        );
        assert_eq!(o.status.signal(), Some(SIGABRT), "{}", describe(&o));
        assert!(
            stderr(&o).contains("free(): invalid pointer"),
            "{}",
            describe(&o)
        );
        // The thunk wrote its 396 bytes into the runtime's 376-byte records.
        let calls = std::fs::read_to_string(&log).unwrap();
        assert!(
            calls.contains("rocdxg hsaKmtGetNodeProperties node=0 wrote=396 -> 0")
                && calls.contains("rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0"),
            "{calls}"
        );
        assert!(
            calls
                .lines()
                .any(|l| l.starts_with("hsa hsa_init dxg=on") && l.ends_with("-> 0")),
            "{calls}"
        );
    }
    // The matched stock pair (376 and 376) runs and exits cleanly.
    let matched = scenario("stock-7.2-runtime.toml");
    let o = bare(
        "init-then-exit",
        &[],
        &lib,
        &[
            ("WSLSIM_SCENARIO", &matched),
            ("HSA_ENABLE_DXG_DETECTION", &one),
        ],
        &dir.join("calls-matched"),
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert!(stdout(&o).contains("main returns"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rocprof [--sim] avail --json` with `WSLSIM_SCENARIO` and `ROCPROF_SIM_DIR` as given.
fn avail(tmp: &Path, scenario: &Path, sim_dir: Option<&Path>, json: bool) -> Output {
    let mut c = rocprof(tmp);
    c.env("WSLSIM_SCENARIO", scenario)
        .env_remove("ROCPROFILER_REGISTER_TOOL_ATTACHED");
    if let Some(d) = sim_dir {
        c.env("ROCPROF_SIM_DIR", d);
    }
    c.args(["--sim", "avail"]);
    if json {
        c.arg("--json");
    }
    c.output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{}", describe(o)))
}

/// A copy of the staged simulator laid out as a stock ROCm 7.2.0 install: `rocm-7.2.0/lib`
/// with the runtime as `libhsa-runtime64.so.1.18.70200` (the file the packages ship) and every
/// other library linked to the staged one.
fn stock_install(dir: &Path) -> PathBuf {
    let staged = exe_dir().join("sim");
    let root = dir.join("rocm-7.2.0");
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink(staged.join("dev"), root.join("dev")).unwrap();
    for entry in std::fs::read_dir(staged.join("lib")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libhsa-runtime64") {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), lib.join(&name)).unwrap();
    }
    let real = "libhsa-runtime64.so.1.18.70200";
    std::fs::copy(staged.join("lib/libhsa-runtime64.so.1"), lib.join(real)).unwrap();
    std::os::unix::fs::symlink(real, lib.join("libhsa-runtime64.so.1")).unwrap();
    std::os::unix::fs::symlink("libhsa-runtime64.so.1", lib.join("libhsa-runtime64.so")).unwrap();
    root
}

#[test]
fn the_profilers_own_reader_survives_the_same_thunk_and_avail_warns_before_launch() {
    let dir = scratch("mismatched", "avail");
    let mismatched = scenario("stock-7.2-runtime-newer-thunk.toml");
    // The product's reader: the canary measurement finds 396 bytes, and the GPU is published.
    let o = avail(&dir, &mismatched, None, true);
    assert!(o.status.success(), "{}", describe(&o));
    let j = json(&o);
    assert_eq!(j["probe"]["measured"], 396, "{j:#}");
    assert_eq!(j["probe"]["handshake_offered"], false, "{j:#}");
    assert_eq!(j["layout"]["size"], 396, "{j:#}");
    let gpus: Vec<&Value> = j["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| !a["gpu"].is_null())
        .collect();
    assert_eq!(gpus.len(), 1, "{j:#}");
    assert_eq!(gpus[0]["name"], "gfx1150", "{j:#}");
    // The staged runtime's file names no release: nothing to compare it with before launch.
    let said = |j: &Value| {
        j["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|w| w.contains("not a matched pair"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert!(said(&j).is_empty(), "{j:#}");

    // The same thunk under an install whose runtime is the ROCm 7.2.0 package's file.
    let install = stock_install(&dir);
    let o = avail(&dir, &mismatched, Some(&install), true);
    assert!(o.status.success(), "{}", describe(&o));
    let j = json(&o);
    assert_eq!(j["probe"]["measured"], 396, "{j:#}");
    let warning = said(&j);
    assert_eq!(warning.len(), 1, "{j:#}");
    for words in [
        "stock ROCm 7.2.x",
        "libhsa-runtime64.so.1",
        "376-byte",
        "writes 396-byte records",
        "offers no DxgAbiCheck",
        "20 bytes past the end",
        "crash later somewhere unrelated",
        "install the matched pair",
    ] {
        assert!(
            warning[0].contains(words),
            "{words:?} missing: {}",
            warning[0]
        );
    }
    let text = avail(&dir, &mismatched, Some(&install), false);
    assert!(text.status.success(), "{}", describe(&text));
    let out = stdout(&text);
    assert!(
        out.contains("record size   : 396 bytes written per node (measured)"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l
                .starts_with("Warning    : this HSA runtime and DXG thunk are not a matched pair")),
        "{out}"
    );
    // The matched stock pair in the same install: no pairing warning.
    let o = avail(
        &dir,
        &scenario("stock-7.2-runtime.toml"),
        Some(&install),
        true,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let j = json(&o);
    assert_eq!(j["probe"]["measured"], 376, "{j:#}");
    assert!(said(&j).is_empty(), "{j:#}");

    // Run mode says it before the launch; the application then dies as the seed describes
    // (after its work, at exit), and rocprof reports the signal with the records kept.
    let o = rocprof(&dir)
        .env("WSLSIM_SCENARIO", &mismatched)
        .env("ROCPROF_SIM_DIR", &install)
        .env("HSA_ENABLE_DXG_DETECTION", "1")
        .env_remove("ROCPROFILER_REGISTER_TOOL_ATTACHED")
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(dir.join("out"))
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let warned = err
        .find("not a matched pair")
        .unwrap_or_else(|| panic!("no pairing warning: {err}"));
    let ended = err
        .find("SIGABRT")
        .unwrap_or_else(|| panic!("the application should abort at exit: {err}"));
    assert!(warned < ended, "the warning comes before the launch: {err}");
    assert_eq!(o.status.code(), Some(128 + 6), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_enumeration_against_the_released_thunk_reads_the_freed_snapshot() {
    let dir = scratch("mismatched", "late-raw");
    let lib = exe_dir().join("sim/lib");
    let released = scenario("thunk-released-snapshot.toml");
    let o = bare(
        "late-enumerate",
        &["raw"],
        &lib,
        &[("WSLSIM_SCENARIO", &released)],
        &dir.join("calls"),
    );
    assert!(o.status.success(), "{}", describe(&o));
    // NumNodes and the node record come from the memory the runtime's release freed.
    assert!(
        stdout(&o).contains("late: open=22 acquire=0 num_nodes=3739147998 node1=0 simd=3739147998"),
        "{}",
        describe(&o)
    );
    // A thunk that owns its snapshot (the default) serves the late read correctly.
    let o = bare(
        "late-enumerate",
        &["raw"],
        &lib,
        &[],
        &dir.join("calls-default"),
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert!(
        stdout(&o).contains("late: open=22 acquire=0 num_nodes=2 node1=0 simd=32"),
        "{}",
        describe(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_profiler_refuses_to_enumerate_after_the_late_attach_marker() {
    let dir = scratch("mismatched", "late-tool");
    let lib = exe_dir().join("sim/lib");
    let released = scenario("thunk-released-snapshot.toml");
    let records = dir.join("records");
    std::fs::create_dir_all(&records).unwrap();
    let log = dir.join("calls");
    let tool = exe_dir().join("librocprof_tool.so");
    let one = PathBuf::from("1");
    // The profiler's library, loaded into the running application as an attach loads it.
    let o = bare(
        "late-enumerate",
        &["tool", tool.to_str().unwrap()],
        &lib,
        &[
            ("WSLSIM_SCENARIO", &released),
            ("ROCPROFILER_REGISTER_TOOL_ATTACHED", &one),
            ("ROCPROF_RECORD_DIR", &records),
            ("ROCPROF_KERNEL_TRACE", &one),
        ],
        &log,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let out = stdout(&o);
    assert!(
        out.contains("tool loaded") && out.contains("done"),
        "{}",
        describe(&o)
    );
    // Only the runtime's own acquire reached the thunk; the freed snapshot was never read.
    let calls = std::fs::read_to_string(&log).unwrap();
    let acquires = calls
        .lines()
        .filter(|l| l.starts_with("rocdxg hsaKmtAcquireSystemProperties"))
        .count();
    assert_eq!(acquires, 1, "{calls}");
    assert!(!calls.contains("num_nodes=3739147998"), "{calls}");
    // And `rocprof avail` with the marker says why no agent is listed, cleanly.
    let mut c = rocprof(&dir);
    c.env("WSLSIM_SCENARIO", &released)
        .env("ROCPROFILER_REGISTER_TOOL_ATTACHED", "1")
        .env("WSLSIM_CALL_LOG", dir.join("avail-calls"))
        .args(["--sim", "avail", "--json"]);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let j = json(&o);
    let text = j["omissions"].to_string();
    assert!(text.contains("late attach"), "{j:#}");
    let avail_calls = std::fs::read_to_string(dir.join("avail-calls")).unwrap_or_default();
    assert!(
        !avail_calls.contains("hsaKmtAcquireSystemProperties"),
        "{avail_calls}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seed's double load in run mode: `LD_PRELOAD` of the thunk by absolute path makes the
/// loader map a second copy for the runtime's and the profiler's `librocdxg.so`. The tool sees
/// both in the loader's list and says so in the application at start (once); after the run
/// `rocprof` names both paths, the `LD_PRELOAD` entry that caused it and the fix. Preloading
/// by bare name maps one copy and says nothing.
#[test]
fn a_thunk_preloaded_by_path_is_said_in_run_mode_with_both_copies_and_the_fix() {
    let tmp = scratch("mismatched-pair", "double-load");
    let copy = tmp.join("librocdxg.so.1.2.0");
    std::fs::copy(exe_dir().join("sim/lib/librocdxg.so.1.2.0"), &copy).unwrap();
    let run = |tag: &str, preload: &str| -> Output {
        let dir = tmp.join(tag);
        rocprof(&tmp)
            .env("LD_PRELOAD", preload)
            .env("WSLSIM_SEED", "5")
            .args(["--sim", "--kernel-trace", "-d"])
            .arg(&dir)
            .args(["-o", "run", "--"])
            .arg(reference_workload())
            .output()
            .unwrap()
    };
    let by_path = run("by-path", copy.to_str().unwrap());
    let err = stderr(&by_path);
    let in_app: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("rocprof-tool: warning: 2 copies of librocdxg.so"))
        .collect();
    assert_eq!(in_app.len(), 1, "one warning in the application:\n{err}");
    let after: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.starts_with("rocprof: warning: process") && l.contains("2 copies of librocdxg.so")
        })
        .collect();
    assert_eq!(after.len(), 1, "one line after the run:\n{err}");
    let line = after[0];
    for needed in [
        copy.to_str().unwrap(),
        "sim/lib/librocdxg.so",
        &format!("LD_PRELOAD={} caused it", copy.display()),
        "preload it by bare name (LD_PRELOAD=librocdxg.so) or not at all",
    ] {
        assert!(line.contains(needed), "{needed:?} missing from {line}");
    }
    assert_no_tracing(&err);

    let by_name = run("by-name", "librocdxg.so");
    let err = stderr(&by_name);
    assert!(by_name.status.success(), "{err}");
    assert!(!err.contains("copies of"), "{err}");
}
