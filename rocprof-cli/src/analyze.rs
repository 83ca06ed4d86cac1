//! `rocprof analyze INPUT… [--json]`: every result checked after a run (being written).

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof analyze` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output directories of CSV files, rocpd databases (`.db`) or record directories — ours or
    /// upstream rocprofv3's.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// One JSON document instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// Analyses the inputs.
pub fn run(args: &Args) -> Result<ExitCode> {
    let _ = args;
    anyhow::bail!("rocprof analyze is not built yet")
}
