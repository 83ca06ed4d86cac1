//! Shared by the integration tests: finding the staged simulator libraries and running the
//! built workloads against them in child processes with a timeout.

#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Staged runtime files the workloads need, with cargo's file name for the staleness check.
const STAGED: [(&str, &str); 5] = [
    ("libamdhip64.so.7", "libamdhip64.so"),
    ("libhsa-runtime64.so.1", "libhsa_runtime64.so"),
    ("librocprofiler-register.so.0", "librocprofiler_register.so"),
    (
        "librocprofiler-sdk-roctx.so.1",
        "librocprofiler_sdk_roctx.so",
    ),
    ("librocdxg.so.1", "librocdxg.so"),
];

/// Variables that change what the runtimes or a tool do; cleared in every child.
const CONTROLLED: [&str; 10] = [
    "LD_PRELOAD",
    "HIP_SIM_MARKER_POLLS",
    "HSA_SIM_SPURIOUS_WAITS",
    "ROCP_TOOL_LIBRARIES",
    "ROCPROFILER_REGISTER_LIBRARY",
    "ROCPROFILER_REGISTER_FORCE_LOAD",
    "ROCPROFILER_REGISTER_ENABLED",
    "WSLSIM_SCENARIO",
    "WSLSIM_CALL_LOG",
    "MINI_TOOL_OUT",
];

const TIMEOUT: Duration = Duration::from_secs(120);

/// The profile directory (`target/debug`) holding the workload binaries.
pub fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_reference-workload"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// `target/debug/sim/lib`, checked: every runtime staged and none older than cargo's build.
pub fn staged_lib_dir() -> Result<PathBuf, String> {
    let profile = profile_dir();
    let lib = profile.join("sim").join("lib");
    for (staged, built) in STAGED {
        let path = lib.join(staged);
        let Some(staged_time) = modified(&path) else {
            return Err(format!(
                "{} is missing: the simulated stack is not staged; run `cargo xtask build`",
                path.display()
            ));
        };
        if let Some(built_time) = modified(&profile.join(built))
            && built_time > staged_time
        {
            return Err(format!(
                "{} is older than {}: run `cargo xtask build` to stage the current build",
                path.display(),
                profile.join(built).display()
            ));
        }
    }
    Ok(lib)
}

/// A finished child.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }
    pub fn describe(&self) -> String {
        format!(
            "code={:?} signal={:?} timed_out={}\n--- stdout\n{}--- stderr\n{}---",
            self.code, self.signal, self.timed_out, self.stdout, self.stderr
        )
    }
}

/// Runs `binary args` with `LD_LIBRARY_PATH=lib` (if given) and extra variables, no core dumps.
pub fn run(
    binary: &Path,
    args: &[&str],
    lib: Option<&Path>,
    env: &[(&str, OsString)],
    dir: &Path,
) -> Run {
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tag = format!("{name}-{}-{}", args.join("_"), std::process::id());
    let (out_path, err_path) = (
        dir.join(format!("{tag}.stdout")),
        dir.join(format!("{tag}.stderr")),
    );
    let failed = |why: String| Run {
        code: None,
        signal: None,
        stdout: String::new(),
        stderr: why,
        timed_out: false,
    };
    let (Ok(out), Ok(err)) = (
        std::fs::File::create(&out_path),
        std::fs::File::create(&err_path),
    ) else {
        return failed(format!("cannot create output files in {}", dir.display()));
    };
    let mut cmd = Command::new(binary);
    cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
    for var in CONTROLLED {
        cmd.env_remove(var);
    }
    match lib {
        Some(lib) => cmd.env("LD_LIBRARY_PATH", lib),
        None => cmd.env("LD_LIBRARY_PATH", "/nonexistent-sim-lib"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: setrlimit is async-signal-safe; no allocation happens in the closure.
    unsafe {
        cmd.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot run {}: {e}", binary.display())),
    };
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                timed_out = true;
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    Run {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
    }
}

/// Collects named checks and prints `N passed, N failed`.
#[derive(Default)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
}

impl Tally {
    pub fn check(&mut self, case: &str, problems: Vec<String>, run: Option<&Run>) {
        if problems.is_empty() {
            self.passed += 1;
            println!("ok   {case}");
        } else {
            self.failed += 1;
            println!("FAIL {case}");
            for p in &problems {
                println!("     - {p}");
            }
            if let Some(run) = run {
                println!("{}", run.describe());
            }
        }
    }

    /// Prints `N passed, N failed`; removes `dir` if every check passed, else names it.
    pub fn finish(&self, dir: &Path) -> ExitCode {
        println!("{} passed, {} failed", self.passed, self.failed);
        if self.failed == 0 {
            let _ = std::fs::remove_dir_all(dir);
            ExitCode::SUCCESS
        } else {
            println!("artifacts kept in {}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// Reports a setup failure as one failed check.
pub fn setup_failed(why: &str) -> ExitCode {
    println!("setup failed: {why}");
    println!("0 passed, 1 failed");
    ExitCode::FAILURE
}

/// A scratch directory under cargo's per-target temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}
