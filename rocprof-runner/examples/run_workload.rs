//! Runs an application under the rocprof tool with the runner as a library, and writes its
//! kernel, HIP and HSA traces as CSV and a rocpd database, keeping every notice in a `Vec`.
//!
//! `run_workload TOOL OUT_DIR APP [ARGS…]`: `TOOL` is `librocprof_tool.so`; the files go under
//! `OUT_DIR` (`OUT_DIR/run_*.csv`, `OUT_DIR/run_results.db`). The runner prints nothing: the
//! notices it gave are printed here at the end, one JSON document per line on stdout, and
//! the exit code is the run's.

use rocprof_runner::plan::launcher::Launcher;
use rocprof_runner::plan::{OutputFormat, OutputSettings, Selection};
use rocprof_runner::run::{Pass, Session};
use rocprof_runner::{Error, Notice};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn run(
    tool: PathBuf,
    out_dir: &Path,
    command: Vec<OsString>,
) -> Result<(ExitCode, Vec<Notice>), Error> {
    let mut notices: Vec<Notice> = Vec::new();
    let mut session = Session::prepare_with_tool(tool, &mut notices)?;
    session.probe_thunk(&mut notices);
    let mut outputs = OutputSettings::new(out_dir);
    outputs.directory = out_dir.display().to_string();
    outputs.file = "run".into();
    outputs.formats = vec![OutputFormat::Csv, OutputFormat::Rocpd];
    let pass = Pass {
        selection: Selection {
            hip_runtime: true,
            hsa_core: true,
            kernels: true,
            copies: true,
            ..Selection::default()
        },
        kernel_include_regex: None,
        kernel_exclude_regex: None,
        counters: None,
        thread_trace: None,
        outputs,
        foreign_domains: Vec::new(),
        tool_env: Vec::new(),
        launcher: Launcher {
            program: command[0].clone(),
            command,
            preloads: Vec::new(),
            echo: false,
        },
        repeat: 1,
        subdir: None,
    };
    let code = session.run(&[pass], &mut notices)?;
    Ok((code, notices))
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(tool), Some(out_dir)) = (args.next(), args.next()) else {
        eprintln!("usage: run_workload TOOL OUT_DIR APP [ARGS…]");
        return ExitCode::from(2);
    };
    let command: Vec<OsString> = args.collect();
    if command.is_empty() {
        eprintln!("usage: run_workload TOOL OUT_DIR APP [ARGS…]");
        return ExitCode::from(2);
    }
    match run(tool.into(), Path::new(&out_dir), command) {
        Ok((code, notices)) => {
            for n in &notices {
                match serde_json::to_string(n) {
                    Ok(line) => println!("{line}"),
                    Err(e) => eprintln!("run_workload: {e}"),
                }
            }
            code
        }
        Err(e) => {
            eprintln!("run_workload: {e}");
            ExitCode::from(2)
        }
    }
}
