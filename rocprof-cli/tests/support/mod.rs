//! Helpers shared by the end-to-end tests (each test file is its own crate and uses a part).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Where `rocprof`, the workloads and the staged simulator (`sim/`) live.
pub fn exe_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rocprof"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A workload binary next to `rocprof`, once the simulated stack is staged.
pub fn workload(name: &str) -> PathBuf {
    let p = exe_dir().join(name);
    assert!(
        p.exists(),
        "{} is not built: run `cargo xtask test`",
        p.display()
    );
    assert!(
        exe_dir().join("sim/lib/libamdhip64.so.7").exists(),
        "the simulated stack is not staged: run `cargo xtask test`"
    );
    p
}

/// A fresh, empty scratch directory `<TMPDIR>/rocprof-<group>-<tag>-<pid>`.
pub fn scratch(group: &str, tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocprof-{group}-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Variables of the caller's environment that would change what a run does.
pub const STEERING: [&str; 8] = [
    "WSLSIM_SCENARIO",
    "WSLSIM_SCENARIO_REPORTED",
    "HSA_TOOLS_DISABLE_REGISTER",
    "HSA_ENABLE_DXG_DETECTION",
    "ROCPROF_HSAKMT_LAYOUT",
    "ROCPROFILER_FORCE_GFX",
    "ROCPROFILER_FORCE_PLATFORM",
    "LD_PRELOAD",
];

/// `rocprof` with none of [`STEERING`] inherited, and its record directories under `tmp`.
pub fn rocprof(tmp: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in STEERING {
        c.env_remove(v);
    }
    c.env("TMPDIR", tmp);
    c
}

/// A command's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A Python interpreter that is a real executable (not a wrapper script that would start
/// several processes with the profiler preloaded).
pub fn python() -> PathBuf {
    if Path::new("/usr/bin/python3").exists() {
        return "/usr/bin/python3".into();
    }
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for this test");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Polls `done` every 5 ms until it holds; fails the test after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The record directories (`rocprof-*`) under `tmp`, sorted.
pub fn record_dirs(tmp: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rocprof-")
        })
        .collect();
    v.sort();
    v
}

/// Variables of the caller's environment that would change what a counter run measures.
pub const COUNTER_STEERING: [&str; 3] = [
    "WSLSIM_SEED",
    "WSLKMT_VENDOR_PACKET",
    "ROCPROFILER_METRICS_PATH",
];

/// `rocprof --sim <options> -d <scratch>/out -o run -- <app>` in the scratch directory
/// `<group>-<tag>`, with the variables `unset` removed from the environment and `env` added.
pub fn sim_run(
    group: &str,
    tag: &str,
    options: &[&str],
    app: &Path,
    unset: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let tmp = scratch(group, tag);
    let dir = tmp.join("out");
    let mut c = rocprof(&tmp);
    for v in unset {
        c.env_remove(v);
    }
    let out = c
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(app)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    if !options.iter().any(|o| o.starts_with("--log-level")) {
        assert_no_tracing(&stderr(&out));
    }
    Run { out, tmp, dir }
}

/// One voice: without `--log-level`, no line of `rocprof`'s is `tracing` output (` WARN `,
/// ` ERROR `, ` INFO `); every diagnostic is a notice (`rocprof: warning: …`).
pub fn assert_no_tracing(stderr: &str) {
    for line in stderr.lines() {
        assert!(
            ![" WARN ", " ERROR ", " INFO "]
                .iter()
                .any(|t| line.starts_with(t.trim_start()) || line.contains(t)),
            "a tracing line in the default output: {line:?}\n{stderr}"
        );
    }
}

/// The seed's reference workload (8 iterations of a kernel, with ROCTx ranges).
pub fn reference_workload() -> PathBuf {
    workload("reference-workload")
}

/// A CSV file's rows, each a map from column to cell.
pub type Row = std::collections::HashMap<String, String>;

/// One finished `rocprof` run: its output, its scratch directory (`TMPDIR`, input files) and
/// its `-d` directory, written with `-o run`.
pub struct Run {
    pub out: Output,
    pub tmp: PathBuf,
    pub dir: PathBuf,
}

impl Run {
    pub fn stderr(&self) -> String {
        stderr(&self.out)
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// Fails unless the run exited 0.
    pub fn succeeded(self) -> Run {
        assert!(self.out.status.success(), "{}", self.stderr());
        self
    }

    /// `<dir>/run_<name>` (`name` with its extension).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("run_{name}"))
    }

    /// `<dir>/<sub>/run_<name>.csv` (`sub` "" for the top level).
    pub fn csv_in(&self, sub: &str, name: &str) -> PathBuf {
        self.dir.join(sub).join(format!("run_{name}.csv"))
    }

    /// The rows of `run_<name>.csv`.
    pub fn rows(&self, name: &str) -> Vec<Row> {
        self.rows_in("", name)
    }

    /// The rows of `<sub>/run_<name>.csv`.
    pub fn rows_in(&self, sub: &str, name: &str) -> Vec<Row> {
        let path = self.csv_in(sub, name);
        csv::Reader::from_path(&path)
            .and_then(|mut r| r.deserialize().collect::<csv::Result<Vec<Row>>>())
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), self.stderr()))
    }

    /// The sorted names in `<dir>`.
    pub fn listing(&self) -> Vec<String> {
        self.listing_in("")
    }

    /// The sorted names in `<dir>/<sub>` (none if it does not exist).
    pub fn listing_in(&self, sub: &str) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.dir.join(sub)) else {
            return Vec::new();
        };
        let mut v: Vec<String> = rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// Finishes `c` (a `rocprof` command with its options) as `… -o run -- reference-workload`
/// with `env`, runs it and fails the test unless it exits 0.
pub fn reference_run(mut c: Command, env: &[(&str, &str)]) -> Output {
    let out = c
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}
