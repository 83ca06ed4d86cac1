//! `rocprof doctor [--json] [-- app args…]`: every WSL2 pitfall of the seed document checked
//! before a run, one line per check — `ok|warning|error  <check>: <evidence>; <fix>` — then a
//! summary line. Exit status 0 when no check is an error, 1 otherwise (2: doctor itself could
//! not run).
//!
//! The checks themselves, the loader model and the self-test protocol are [`rocprof_doctor`];
//! this module holds the options and prints.

use anyhow::Result;
use rocprof_runner::notice::Report as _;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof doctor [--json] [--att-library-path DIR] [-- APP…]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One JSON document instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// The thread-trace decoder's directory, as `rocprof --att-library-path` would get it.
    #[arg(long = "att-library-path", value_name = "DIR")]
    pub att_library_path: Vec<PathBuf>,
    /// The application whose environment to check too (after `--`).
    #[arg(last = true, value_name = "APP")]
    pub app: Vec<OsString>,
}

/// Runs the checks and prints the report (exit 0: no error found, 1: some).
pub fn run(args: &Args) -> Result<ExitCode> {
    let report = rocprof_doctor::diagnose(&rocprof_doctor::Options {
        att_library_path: args.att_library_path.clone(),
        app: args.app.clone(),
    })?;
    for n in report.notices.iter().cloned() {
        crate::report::Terminal.notice(n);
    }
    print!("{}", report.render(args.json)?);
    Ok(ExitCode::from(report.exit_code()))
}
