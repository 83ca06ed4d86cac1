//! Interception faults never hang or break the application: `rocprof --sim` on the reference
//! workload under scenarios whose simulated HSA runtime misbehaves (`[faults]`, see
//! `sim/hsa/README.md`): kernel objects the host cannot read, no AMD loader extension, refused
//! completion handlers, unreadable dispatch and copy times.
//!
//! Each run has a deadline: a hang is a failure (the process group is killed), not a stuck test.
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or
//! `cargo xtask build` first).

mod support;

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use support::{rocprof as rocprof_command, scratch, workload};

type Row = HashMap<String, String>;

/// How long one profiled run of the reference workload may take (debug builds, 2 cores).
const DEADLINE: Duration = Duration::from_secs(120);

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

/// One finished run: how `rocprof` ended, what it said, where its files are.
struct Run {
    status: ExitStatus,
    stderr: String,
    dir: PathBuf,
}

impl Drop for Run {
    /// A passing run leaves nothing behind (a failing one keeps its files for a look).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Run {
    /// The rows of `run_<name>.csv`; none if the file was not written (nothing recorded).
    fn rows(&self, name: &str) -> Vec<Row> {
        let path = self.dir.join(format!("run_{name}.csv"));
        if !path.exists() {
            return Vec::new();
        }
        let mut r = csv::Reader::from_path(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), self.stderr));
        r.deserialize().map(Result::unwrap).collect()
    }

    /// `run_<name>.csv` has `n` rows.
    fn assert_rows(&self, name: &str, n: usize) {
        assert_eq!(self.rows(name).len(), n, "{}", self.stderr);
    }

    /// stderr reports `lost n record(s) (<cause>)`.
    fn assert_loss(&self, cause: &str, n: u64) {
        assert_eq!(
            reported_loss(&self.stderr, cause),
            Some(n),
            "{}",
            self.stderr
        );
    }

    fn assert_success(&self) {
        assert!(
            self.status.success(),
            "rocprof (and the application) exited with {}\n{}",
            self.status,
            self.stderr
        );
    }
}

fn num(r: &Row, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

/// `rocprof --sim <options> -d <tmp> -o run -- reference-workload` under the scenario file
/// `scenario_file`, killed (with everything it started) if it outlives [`DEADLINE`].
fn rocprof(options: &[&str], scenario_file: &str) -> Run {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = scratch("faults", &N.fetch_add(1, Ordering::Relaxed).to_string());
    // Output goes to files, not pipes: a full pipe would stall the run and look like a hang.
    let stdout = std::fs::File::create(dir.join("stdout.txt")).unwrap();
    let stderr_path = dir.join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    // Record logs rocprof keeps after losses land in the run's directory too (`TMPDIR`).
    let mut c = rocprof_command(&dir);
    c.env_remove("WSLSIM_CALL_LOG")
        .env("WSLSIM_SCENARIO", scenario(scenario_file))
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // Its own process group, so a hung run can be killed with the application under it.
        .process_group(0);
    let mut child = c.spawn().expect("spawn rocprof");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let group = child.id() as i32;
            // SAFETY: kill(2) on the process group this test created (its leader is our child).
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            let said = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!(
                "rocprof {options:?} under {scenario_file} did not finish within {DEADLINE:?} \
                 (hung); stderr so far:\n{said}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        dir,
    }
}

/// The count of the `lost N record(s) (<cause>)` line on stderr, if there is one.
fn reported_loss(stderr: &str, cause: &str) -> Option<u64> {
    let tag = format!("({cause})");
    stderr.lines().find_map(|line| {
        let rest = &line[line.find("lost ")? + 5..];
        let (n, after) = rest.split_once(' ')?;
        let after = after
            .trim_start_matches("records ")
            .trim_start_matches("record ");
        after.starts_with(&tag).then(|| n.parse().ok()).flatten()
    })
}

#[test]
fn descriptors_in_device_memory_are_read_through_the_loader() {
    // Kernel objects are device addresses inside a PROT_NONE range: a direct read would kill
    // the application with SIGSEGV.
    let r = rocprof(&["--kernel-trace"], "device-code-objects.toml");
    r.assert_success();
    let kernels = r.rows("kernel_trace");
    assert_eq!(kernels.len(), 8, "{}", r.stderr);
    for k in &kernels {
        assert_eq!(
            k["Kernel_Name"],
            "axpb(float const*, float*, unsigned long)"
        );
        assert!(
            num(k, "VGPR_Count") > 0 && num(k, "SGPR_Count") > 0,
            "register counts from the host copy of the descriptor: {k:?}"
        );
    }
    assert!(
        !r.stderr.contains("register counts are not recorded"),
        "{}",
        r.stderr
    );
}

#[test]
fn without_the_loader_extension_kernels_are_traced_with_zero_registers() {
    // Device code objects and no way to reach their host copies: the tool must not read the
    // descriptors at all.
    let r = rocprof(&["--kernel-trace"], "no-loader-extension.toml");
    r.assert_success();
    let kernels = r.rows("kernel_trace");
    assert_eq!(kernels.len(), 8, "{}", r.stderr);
    for k in &kernels {
        assert_eq!(
            (num(k, "VGPR_Count"), num(k, "SGPR_Count")),
            (0, 0),
            "{k:?}"
        );
    }
    assert_eq!(
        r.stderr
            .matches("kernel register counts are not recorded")
            .count(),
        1,
        "one warning per process: {}",
        r.stderr
    );
}

#[test]
fn copies_complete_when_every_completion_handler_is_refused() {
    let r = rocprof(&["--memory-copy-trace"], "async-handler-always-fails.toml");
    r.assert_success();
    let copies = r.rows("memory_copy_trace");
    assert!(
        copies.is_empty(),
        "every handler was refused, so every copy ran untraced: {copies:?}"
    );
    r.assert_loss("copy-untraced", 16);
}

#[test]
fn one_refused_handler_costs_exactly_one_copy_record() {
    let r = rocprof(&["--memory-copy-trace"], "async-handler-third-fails.toml");
    r.assert_success();
    r.assert_rows("memory_copy_trace", 15);
    r.assert_loss("copy-untraced", 1);
}

#[test]
fn unreadable_times_lose_only_their_records() {
    let r = rocprof(
        &["--kernel-trace", "--memory-copy-trace"],
        "times-fail.toml",
    );
    r.assert_success();
    r.assert_rows("kernel_trace", 7);
    r.assert_rows("memory_copy_trace", 15);
    r.assert_loss("dispatch-time", 1);
    r.assert_loss("copy-untraced", 1);
}

#[test]
fn the_loss_line_parser_reads_counts_and_causes() {
    let said = "rocprof: warning: lost 16 records (copy-untraced): they were ...\n\
                rocprof: warning: lost 1 record (dispatch-time): they were ...\n";
    assert_eq!(reported_loss(said, "copy-untraced"), Some(16));
    assert_eq!(reported_loss(said, "dispatch-time"), Some(1));
    assert_eq!(reported_loss(said, "unfinished"), None);
}
