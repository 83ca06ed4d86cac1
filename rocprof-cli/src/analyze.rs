//! `rocprof analyze`: check results (ours or rocprofv3's: CSV directories, rocpd databases,
//! record directories) for timeline containment, counter trust, where time goes and what is
//! missing; the analysis itself is [`trace_analysis`].

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof analyze INPUT… [--json]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output directories of CSV files, rocpd databases (`.db`) or record directories — ours or
    /// upstream rocprofv3's.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// One JSON document instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Analyses the inputs and prints the report.
pub fn run(args: &Args) -> Result<ExitCode> {
    let analysis = trace_analysis::analyze(&trace_analysis::Options {
        inputs: args.inputs.clone(),
        json: args.json,
    })?;
    if let Some(path) = &args.html {
        html_report::write(path, &html_report::analyze_page(&analysis.report))?;
    }
    print!("{}", analysis.output()?);
    Ok(analysis.exit_code())
}
