//! The runner as another tool would use it: a simulated workload run under the tool through
//! the `run_workload` example, converted to CSV and rocpd in a temporary directory, with the
//! notices kept in a `Vec` and nothing printed by the library.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>`, where cargo puts the tool, the workloads and the staged simulator.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/reuse-<hash>
    exe.parent().unwrap().parent().unwrap().to_owned()
}

#[test]
fn a_workload_runs_and_converts_with_the_notices_kept_and_nothing_printed() {
    let dir = target_dir();
    let sim = dir.join("sim");
    let tool = dir.join("librocprof_tool.so");
    let app = dir.join("reference-workload");
    let example = dir.join("examples").join("run_workload");
    for p in [&tool, &app, &example, &sim.join("lib").join("libdxcore.so")] {
        assert!(
            p.exists(),
            "{} is not built: run `cargo xtask test` (it stages the simulator first)",
            p.display()
        );
    }
    let out = std::env::temp_dir().join(format!("rocprof-runner-reuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let run = Command::new(&example)
        .arg(&tool)
        .arg(&out)
        .arg(&app)
        .env("LD_LIBRARY_PATH", sim.join("lib"))
        .env("ROCPROF_DXG_DEVICE", sim.join("dev").join("dxg"))
        .env("TMPDIR", &out)
        .env_remove("LD_PRELOAD")
        .env_remove("WSLSIM_SCENARIO")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    // Nothing the runner says reaches the terminal: its lines would start with `rocprof`.
    for line in stderr
        .lines()
        .chain(stdout.lines().filter(|l| !l.starts_with('{')))
    {
        assert!(!line.starts_with("rocprof"), "printed: {line}");
    }
    // The notices came back as data: the run's summary among them, typed.
    let notices: Vec<serde_json::Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = notices
        .iter()
        .find(|n| n["concern"] == "end" && n["notice"]["kind"] == "run")
        .unwrap_or_else(|| panic!("no run summary among {notices:#?}"));
    assert_eq!(end["notice"]["processes"], 1, "{end}");
    assert!(
        end["notice"]["ended"]
            .as_str()
            .unwrap()
            .contains("exited with status 0"),
        "{end}"
    );
    // The files, where the settings put them.
    let kernels = std::fs::read_to_string(out.join("run_kernel_trace.csv")).unwrap();
    assert!(kernels.lines().count() > 1, "{kernels}");
    assert!(std::fs::read_to_string(out.join("run_hip_api_trace.csv")).is_ok());
    let db = std::fs::read(out.join("run_results.db")).unwrap();
    assert!(db.starts_with(b"SQLite format 3\0"));
    std::fs::remove_dir_all(&out).unwrap();
}
