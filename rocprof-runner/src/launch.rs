//! Starting the application with the tool preloaded and the record directory named, and
//! replacing `rocprof` by an application that is not profiled (an MPI rank left out).

use crate::error::Error;
use crate::notice::{LaunchNotice, Report};
use crate::plan::launcher::Launcher;
use crate::process::{self, LaunchError, Signals, Status};
use crate::record_dir::RecordDir;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_records::env;

/// The tool library next to the running executable.
pub fn tool_library() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe().map_err(Error::Executable)?;
    let lib = exe
        .parent()
        .map(|d| d.join("librocprof_tool.so"))
        .unwrap_or_default();
    if !lib.exists() {
        return Err(Error::ToolMissing(lib));
    }
    Ok(lib)
}

/// This machine's host name (`localhost` when it cannot be read).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// `first`, then the current value of the colon-separated list in `var` (if any).
pub fn prepended(var: &str, first: OsString) -> OsString {
    let mut list = first;
    if let Some(old) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        list.push(":");
        list.push(old);
    }
    list
}

/// What to say of an application (`app`, as it was to be run) that could not be started.
fn not_started(app: &str, e: &LaunchError) -> LaunchNotice {
    let app = app.to_owned();
    match e {
        LaunchError::NotFound => LaunchNotice::AppNotFound { app },
        LaunchError::NotExecutable(err) => LaunchNotice::AppNotExecutable {
            app,
            reason: err.to_string(),
        },
        LaunchError::Interrupted(s) => LaunchNotice::InterruptedBeforeLaunch { signal: *s },
    }
}

/// `--echo`: says what the application would be started with — the variables set for it and
/// the command (rocprofv3 prints the command and does not run the application).
pub fn echo(
    launcher: &Launcher,
    tool: &Path,
    env_extra: &[(&'static str, String)],
    report: &mut dyn Report,
) {
    let mut preload = tool.as_os_str().to_owned();
    for lib in &launcher.preloads {
        preload.push(":");
        preload.push(lib);
    }
    let preload = prepended("LD_PRELOAD", preload);
    let mut line = |line: String| report.notice(LaunchNotice::Echo { line }.into());
    line(format!("LD_PRELOAD={}", preload.to_string_lossy()));
    for (k, v) in env_extra {
        line(format!("{k}={v}"));
    }
    let argv = std::iter::once(&launcher.program)
        .chain(launcher.command.get(1..).unwrap_or_default())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    report.notice(LaunchNotice::EchoCommand { argv }.into());
}

/// Launches the application with `tool` preloaded, recording into `dir`; an `Err` is the exit
/// code of a launch that failed (said in `report`).
pub fn launch_app(
    launcher: &Launcher,
    tool: &Path,
    dir: &RecordDir,
    env_extra: &[(&'static str, String)],
    signals: &'static Signals,
    report: &mut dyn Report,
) -> Result<Status, ExitCode> {
    let program = &launcher.program;
    let args = launcher.command.get(1..).unwrap_or_default();
    let app_name = program.to_string_lossy().into_owned();
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    let mut preload = tool.as_os_str().to_owned();
    for lib in &launcher.preloads {
        preload.push(":");
        preload.push(lib);
    }
    let preload = prepended("LD_PRELOAD", preload);
    cmd.env("LD_PRELOAD", preload)
        .env(env::RECORD_DIR, dir.path());
    for (k, v) in env_extra {
        cmd.env(k, v);
    }
    process::launch(signals, cmd).map_err(|e| {
        report.notice(not_started(&app_name, &e).into());
        e.exit_code()
    })
}

/// Replaces this process by the application, unprofiled (same pid, arguments and environment);
/// returns only if that failed, with the exit code to end with (127: not found, 126: not
/// executable), said in `report`.
pub fn exec_unprofiled(launcher: &Launcher, report: &mut dyn Report) -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    let program = &launcher.program;
    let args = launcher.command.get(1..).unwrap_or_default();
    let err = LaunchError::from(std::process::Command::new(program).args(args).exec());
    report.notice(not_started(&program.to_string_lossy(), &err).into());
    err.exit_code()
}
