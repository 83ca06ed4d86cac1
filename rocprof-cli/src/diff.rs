//! `rocprof diff BASE… -- NEW…` (or `rocprof diff A B`): what changed between two sets of runs,
//! with significance; the comparison is [`run_diff`], the HTML report [`html_report`].

use anyhow::{Result, bail};
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof diff BASE… -- NEW… [--top N] [--threshold PERCENT] [--json] [--html FILE]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The base side's runs (CSV output directories, rocpd databases, record directories); with
    /// no `--`, exactly two inputs: the base run and the new run.
    #[arg(required = true, value_name = "BASE")]
    pub base: Vec<PathBuf>,
    /// The new side's runs, after `--`.
    #[arg(last = true, value_name = "NEW")]
    pub new: Vec<PathBuf>,
    /// Rows shown per table (flagged and one-sided rows first).
    #[arg(long, value_name = "N", default_value_t = run_diff::report::DEFAULT_TOP)]
    pub top: usize,
    /// The smallest change of a median, in percent, that can be flagged.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub threshold: f64,
    /// The family-wise error rate of the corrected test.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// One JSON document instead of the text tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Compares the two sides and prints the report.
pub fn run(args: &Args) -> Result<ExitCode> {
    let (base, new) = if args.new.is_empty() {
        match args.base.as_slice() {
            [a, b] => (vec![a.clone()], vec![b.clone()]),
            _ => bail!(
                "give the two runs to compare (`rocprof diff A B`) or the sides apart \
                 (`rocprof diff BASE… -- NEW…`); {} input(s) without `--`",
                args.base.len()
            ),
        }
    } else {
        (args.base.clone(), args.new.clone())
    };
    let report = run_diff::diff(&run_diff::Options {
        base,
        new,
        settings: run_diff::compare::Settings {
            alpha: args.alpha,
            threshold_percent: args.threshold,
        },
        top: args.top,
    })?;
    if let Some(path) = &args.html {
        html_report::write(path, &html_report::diff_page(&report))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}
