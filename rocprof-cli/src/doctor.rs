//! `rocprof doctor [--json] [-- app args…]`: every WSL2 pitfall of the seed checked before a run
//! (being written).

use anyhow::Result;
use std::ffi::OsString;
use std::process::ExitCode;

/// `rocprof doctor` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// One JSON document instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// The application whose environment to check too (after `--`).
    #[arg(last = true, value_name = "APP")]
    pub app: Vec<OsString>,
}

/// Runs the checks; exit 0 when none is an error.
pub fn run(args: &Args) -> Result<ExitCode> {
    let _ = args;
    anyhow::bail!("rocprof doctor is not built yet")
}
