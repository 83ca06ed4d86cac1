//! `rocprof`: a profiler for AMD GPUs under WSL2 (and native Linux), rocprofv3-compatible.

#![deny(unsafe_code)]

mod analyze;
mod att;
mod avail;
mod convert;
mod counters;
mod diff;
mod doctor;
mod domains;
mod input;
mod launch_options;
mod messages;
mod outputs;
mod progress;
mod report;
mod run;
mod scope;
mod sim;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

/// Profile HIP/HSA applications on AMD GPUs under WSL2.
///
/// Run mode: `rocprof [options] -- app args…` (rocprofv3's options).
/// Agent listing: `rocprof [--sim] avail [--json]`; counters: `rocprof avail list|info|pmc-check`
/// (or `rocprof -L`).
/// Finishing a kept run: `rocprof convert <record-dir>… [output options]`.
#[derive(Debug, Parser)]
#[command(name = "rocprof", version, about)]
struct RunCli {
    /// Run against the simulated WSL2 ROCm stack bundled next to this executable (a Radeon 890M
    /// unless WSLSIM_SCENARIO names another scenario).
    #[arg(long)]
    sim: bool,

    /// Diagnostic log level on stderr (`env` reads the ROCPROF_LOG filter).
    #[arg(long, value_enum)]
    log_level: Option<LogLevel>,

    /// List every GPU's hardware counters (as `rocprof avail info --pmc`) and exit.
    #[arg(short = 'L', long = "list-avail")]
    list_avail: bool,

    #[command(flatten)]
    run: run::RunOptions,

    /// The application and its arguments, after `--`.
    #[arg(last = true, value_name = "APP")]
    app: Vec<OsString>,
}

/// `rocprof <subcommand>`.
#[derive(Debug, Parser)]
#[command(name = "rocprof", version, about, propagate_version = true)]
struct Cli {
    /// Run against the simulated WSL2 ROCm stack bundled next to this executable.
    #[arg(long, global = true)]
    sim: bool,

    /// Diagnostic log level on stderr (`env` reads the ROCPROF_LOG filter).
    #[arg(long, value_enum, global = true)]
    log_level: Option<LogLevel>,

    #[command(subcommand)]
    command: Command,
}

/// Subcommand names; any other invocation is run mode.
const SUBCOMMANDS: [&str; 6] = ["avail", "convert", "merge", "doctor", "analyze", "diff"];

/// Whether the command line names a subcommand (its first word that is neither an option nor
/// an option's value, before `--`).
fn names_subcommand(args: &[OsString]) -> bool {
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            return false;
        }
        if a == "--log-level" {
            it.next();
            continue;
        }
        if !a.starts_with('-') {
            return SUBCOMMANDS.contains(&a.as_ref());
        }
    }
    false
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the agents the profiler can see, and everything it had to leave out.
    Avail(avail::Args),
    /// Turn the record logs a run kept (after a failure) into the files the run would have
    /// written; the output options replace the run's own. With `-i`, merge record
    /// directories and rocpd databases into one output.
    Convert(convert::Args),
    /// Merge record directories and rocpd databases into one output (`convert -i`).
    Merge(MergeArgs),
    /// Check this machine's (and an application's) setup for every known WSL2 profiling
    /// pitfall, with the evidence and the fix.
    Doctor(doctor::Args),
    /// Check results (ours or rocprofv3's: CSV directories, rocpd databases, record
    /// directories): timeline containment, counter trust, where time goes, what is missing.
    Analyze(analyze::Args),
    /// What changed between two sets of runs (`BASE… -- NEW…`, or `A B`): per kernel, API
    /// function, copy direction and ROCTx range, with significance; counters with their trust.
    Diff(diff::Args),
}

/// `rocprof merge INPUT… [output options]`.
#[derive(Debug, clap::Args)]
struct MergeArgs {
    /// Record directories and rocpd databases (`.db`).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<std::path::PathBuf>,
    #[command(flatten)]
    output: outputs::OutputOptions,
}

/// The multi-value output options of `convert` and `merge` take one word per occurrence
/// (`-f csv,rocpd` or `-f csv -f rocpd`), so that they never swallow the positional inputs
/// that follow them; run mode keeps rocprofv3's space-separated lists (its application comes
/// only after `--`).
fn one_value_per_option(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommands(|c| match c.get_name() {
        "convert" | "merge" => c.mut_args(|a| match a.get_id().as_str() {
            "output_format" | "summary_groups" => a.num_args(1),
            _ => a,
        }),
        _ => c,
    })
}

use input::LogLevel;

/// `tracing` output (the libraries' diagnostics) only under `--log-level`: by default every
/// line rocprof prints is a notice, rendered as `rocprof: <level>: …`.
fn init_logging(level: Option<LogLevel>, default: &str) {
    use tracing_subscriber::EnvFilter;
    // The quiet levels show no progress either.
    progress::set_quiet(matches!(level, Some(LogLevel::Fatal | LogLevel::Error)));
    let filter = match level {
        None => EnvFilter::new(default),
        Some(LogLevel::Fatal | LogLevel::Error) => EnvFilter::new("error"),
        Some(LogLevel::Warning) => EnvFilter::new("warn"),
        Some(LogLevel::Info) => EnvFilter::new("info"),
        Some(LogLevel::Trace) => EnvFilter::new("trace"),
        Some(LogLevel::Config) => EnvFilter::new("warn"),
        Some(LogLevel::Env) => {
            EnvFilter::try_from_env("ROCPROF_LOG").unwrap_or_else(|_| EnvFilter::new("warn"))
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .init();
}

fn run(args: Vec<OsString>) -> Result<ExitCode> {
    if names_subcommand(&args) {
        let matches =
            one_value_per_option(<Cli as clap::CommandFactory>::command()).get_matches_from(args);
        let cli =
            <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        if cli.sim {
            sim::enter()?;
        }
        match cli.command {
            Command::Avail(a) => {
                // The report lists every omission itself; log lines would repeat them.
                init_logging(cli.log_level, "off");
                avail::run(&a)
            }
            Command::Convert(a) => {
                init_logging(cli.log_level, "off");
                convert::run(&a)
            }
            Command::Merge(a) => {
                init_logging(cli.log_level, "off");
                convert::merge(&a.inputs, &a.output)
            }
            Command::Doctor(a) => {
                init_logging(cli.log_level, "off");
                doctor::run(&a)
            }
            Command::Analyze(a) => {
                init_logging(cli.log_level, "off");
                analyze::run(&a)
            }
            Command::Diff(a) => {
                init_logging(cli.log_level, "off");
                diff::run(&a)
            }
        }
    } else {
        let matches = <RunCli as clap::CommandFactory>::command().get_matches_from(args);
        let mut cli = <RunCli as clap::FromArgMatches>::from_arg_matches(&matches)
            .unwrap_or_else(|e| e.exit());
        cli.run.group_pmc(&matches);
        if cli.sim {
            sim::enter()?;
        }
        cli.run.log_level = cli.log_level;
        // A job's `list_avail`: rocprofv3 lists the counters, then runs the application.
        let job_lists = run::input_lists_avail(&cli.run);
        if cli.list_avail || job_lists {
            init_logging(cli.log_level, "off");
            if cli.list_avail && !cli.app.is_empty() {
                eprintln!(
                    "rocprof: note: -L lists the counters and exits; the application is not run"
                );
            }
            // As rocprofv3's -L: the counters, then the PC-sampling configurations.
            let all = counters::Query::Info {
                pmc: Some(Vec::new()),
                pc_sampling: false,
            };
            let extra = cli.run.extra_counters.as_deref();
            let code = counters::run(&all, None, false, extra)?;
            let sampling = counters::Query::Info {
                pmc: None,
                pc_sampling: true,
            };
            counters::run(&sampling, None, false, extra)?;
            if cli.list_avail || cli.app.is_empty() {
                return Ok(code);
            }
        } else {
            init_logging(cli.log_level, "off");
        }
        if matches!(cli.log_level, Some(LogLevel::Config)) {
            eprintln!("rocprof: config: {:#?}", cli.run);
        }
        run::run(&cli.run, &cli.app)
    }
}

fn main() -> ExitCode {
    let result = run(std::env::args_os().collect());
    progress::end();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", report::error_line(&e));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every multi-value option (issue 28): the lists it takes, and that it never takes the
    //! positional words after it (the inputs of `convert -i`/`merge`, the application).
    use super::*;
    use std::path::PathBuf;

    fn run_mode(args: &[&str]) -> (RunCli, clap::ArgMatches) {
        let args = std::iter::once("rocprof").chain(args.iter().copied());
        let matches = <RunCli as clap::CommandFactory>::command()
            .try_get_matches_from(args)
            .unwrap();
        let mut cli = <RunCli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        cli.run.group_pmc(&matches);
        (cli, matches)
    }

    fn subcommand(args: &[&str]) -> Result<Cli, clap::Error> {
        let args = std::iter::once("rocprof").chain(args.iter().copied());
        let matches = one_value_per_option(<Cli as clap::CommandFactory>::command())
            .try_get_matches_from(args)?;
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn pmc_groups_are_one_per_occurrence_and_split_as_rocprofv3_splits_them() {
        let (cli, _) = run_mode(&[
            "--pmc",
            "SQ_WAVES",
            "GRBM_COUNT",
            "--pmc",
            "A,B",
            "--",
            "app",
        ]);
        assert_eq!(
            cli.run.pmc_groups(),
            [strings(&["SQ_WAVES", "GRBM_COUNT"]), strings(&["A", "B"])]
        );
        assert_eq!(cli.app, ["app"]);
    }

    #[test]
    fn run_mode_lists_take_every_word_up_to_the_next_option_and_the_app_after_dashes() {
        let (cli, _) = run_mode(&[
            "-f",
            "csv",
            "json,rocpd",
            "--summary-groups",
            "KERNEL_DISPATCH|MEMORY_COPY",
            "HIP_API",
            "--kernel-iteration-range",
            "[1-3]",
            "5",
            "-P",
            "1:2:0",
            "3:4:1",
            "--preload",
            "a.so",
            "b.so",
            "--",
            "app",
            "-f",
        ]);
        let o = &cli.run.output;
        assert_eq!(o.output_format, strings(&["csv", "json", "rocpd"]));
        assert_eq!(
            o.summary_groups,
            strings(&["KERNEL_DISPATCH|MEMORY_COPY", "HIP_API"])
        );
        assert_eq!(
            cli.run.scope.kernel_iteration_range,
            strings(&["[1-3]", "5"])
        );
        assert_eq!(
            cli.run.scope.collection_period,
            strings(&["1:2:0", "3:4:1"])
        );
        assert_eq!(cli.run.launch.preload, strings(&["a.so", "b.so"]));
        assert_eq!(
            cli.app,
            ["app", "-f"],
            "the application's own words are its own"
        );
    }

    #[test]
    fn convert_inputs_are_every_word_after_i_repeated_or_not_and_stop_at_an_option() {
        let inputs = |cli: Cli| match cli.command {
            Command::Convert(a) => (a.inputs, a.output.output_format),
            other => panic!("{other:?}"),
        };
        let want = vec![PathBuf::from("a.db"), PathBuf::from("b.db")];
        for args in [
            &["convert", "-i", "a.db", "b.db", "-f", "csv"][..],
            &["convert", "-i", "a.db", "-i", "b.db", "-f", "csv"],
            &["convert", "-f", "csv", "-i", "a.db", "b.db"],
        ] {
            let (got, formats) = inputs(subcommand(args).unwrap());
            assert_eq!(got, want, "{args:?}");
            assert_eq!(formats, ["csv"], "{args:?}");
        }
    }

    #[test]
    fn merge_lists_take_one_word_per_occurrence_so_the_inputs_stay_inputs() {
        let cli = subcommand(&[
            "merge",
            "-f",
            "csv,rocpd",
            "--summary-groups",
            "KERNEL_DISPATCH",
            "--summary-groups",
            "HIP_API|HSA_API",
            "a.db",
            "b.db",
        ])
        .unwrap();
        let Command::Merge(m) = cli.command else {
            panic!("not a merge")
        };
        assert_eq!(m.inputs, [PathBuf::from("a.db"), PathBuf::from("b.db")]);
        assert_eq!(m.output.output_format, strings(&["csv", "rocpd"]));
        assert_eq!(
            m.output.summary_groups,
            strings(&["KERNEL_DISPATCH", "HIP_API|HSA_API"])
        );
        // The word after a regex is an input, not a second regex.
        let cli = subcommand(&["merge", "--summary-groups", "KERNEL_DISPATCH", "a.db"]).unwrap();
        let Command::Merge(m) = cli.command else {
            panic!("not a merge")
        };
        assert_eq!(m.inputs, [PathBuf::from("a.db")]);
    }
}
