//! `rocprof`: a profiler for AMD GPUs under WSL2 (and native Linux), rocprofv3-compatible.

#![forbid(unsafe_code)]

mod avail;
mod sim;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

/// Profile HIP/HSA applications on AMD GPUs under WSL2.
#[derive(Debug, Parser)]
#[command(name = "rocprof", version, about, propagate_version = true)]
struct Cli {
    /// Run against the simulated WSL2 ROCm stack bundled next to this executable (a Radeon 890M
    /// unless WSLSIM_SCENARIO names another scenario).
    #[arg(long, global = true)]
    sim: bool,

    /// Diagnostic log level on stderr (`env` reads the ROCPROF_LOG filter).
    #[arg(long, value_enum, global = true)]
    log_level: Option<LogLevel>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the agents the profiler can see, and everything it had to leave out.
    Avail(avail::Args),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogLevel {
    Fatal,
    Error,
    Warning,
    Info,
    Trace,
    Env,
}

fn init_logging(level: Option<LogLevel>, default: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        None => EnvFilter::new(default),
        Some(LogLevel::Fatal | LogLevel::Error) => EnvFilter::new("error"),
        Some(LogLevel::Warning) => EnvFilter::new("warn"),
        Some(LogLevel::Info) => EnvFilter::new("info"),
        Some(LogLevel::Trace) => EnvFilter::new("trace"),
        Some(LogLevel::Env) => {
            EnvFilter::try_from_env("ROCPROF_LOG").unwrap_or_else(|_| EnvFilter::new("warn"))
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .init();
}

fn run(cli: Cli) -> Result<ExitCode> {
    if cli.sim {
        sim::enter()?;
    }
    match cli.command {
        Command::Avail(args) => {
            // The report lists every omission itself; log lines would repeat them.
            init_logging(cli.log_level, "off");
            avail::run(&args)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rocprof: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
