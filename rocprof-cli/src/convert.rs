//! `rocprof convert <record-dir>…`: finish the job for record directories a run kept (the
//! output options given here replace the run's own); without arguments, the list of kept ones;
//! with `-i`, a merge ([`rocprof_runner::merge`]).

use crate::messages;
use crate::outputs::OutputOptions;
use crate::report::Terminal;
use anyhow::{Result, anyhow};
use rocprof_runner::notice::{EndNotice, Report as _};
use rocprof_runner::outputs;
use rocprof_runner::process::Signals;
use rocprof_runner::record_dir::RecordDir;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rocprof convert`'s options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Record directories kept by earlier runs (rocprof prints the command when it keeps
    /// one). Give them before the options. Without any, the kept directories in TMPDIR are
    /// listed.
    #[arg(value_name = "RECORD_DIR")]
    pub dirs: Vec<PathBuf>,

    /// Merge instead: record directories and rocpd databases (`.db`) into one output per
    /// format (CSV per process), each process kept distinct; the inputs are only read.
    #[arg(short = 'i', long = "input", num_args = 1.., value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Options given here replace the run's own (kept in the directory's run.json).
    #[command(flatten)]
    pub output: OutputOptions,
}

/// `rocprof convert` without directories: what earlier runs kept in TMPDIR (for instance after
/// `rocprof` itself was killed, when it could print nothing).
fn list_kept() -> ExitCode {
    let tmp = std::env::temp_dir();
    let kept = rocprof_runner::record_dir::kept_in(&tmp);
    if kept.is_empty() {
        Terminal.notice(EndNotice::NothingKept { tmp }.into());
        return ExitCode::SUCCESS;
    }
    println!("record directories kept in {}:", tmp.display());
    for k in &kept {
        let what = match &k.manifest {
            Some(m) => format!(
                "{} {}  {}",
                m.launch.launch_date,
                m.launch.launch_time,
                m.launch.argv.join(" ")
            ),
            None => "(no readable run.json: not convertible)".into(),
        };
        let busy = if k.in_use { "  [in use]" } else { "" };
        println!("  {}  {what}{busy}", k.path.display());
    }
    println!("convert one with `rocprof convert <dir>` (add -d/-o to choose where the files go)");
    ExitCode::SUCCESS
}

/// The output settings of a merge: the options over rocprofv3's defaults, `-o` defaulting to
/// `merged`.
pub fn merge(inputs: &[PathBuf], output: &OutputOptions) -> Result<ExitCode> {
    let cwd = std::env::current_dir().map_err(rocprof_runner::Error::WorkingDirectory)?;
    if let Some(word) = inputs.iter().find_map(|i| {
        let w = i.to_str()?;
        (!cwd.join(i).exists() && crate::outputs::is_format_word(w)).then_some(w)
    }) {
        anyhow::bail!(messages::format_as_input(word));
    }
    for w in output.check_for_conversion().map_err(|e| anyhow!(e))? {
        crate::report::warn(&w);
    }
    let mut settings = output.settings(&cwd).map_err(|e| anyhow!(e))?;
    if output.output_file.is_none() {
        settings.file = rocprof_runner::merge::DEFAULT_MERGED.into();
    }
    let code = rocprof_runner::merge::merge(inputs, &cwd, &settings, &mut Terminal);
    crate::progress::end();
    Ok(code?)
}

/// `rocprof convert <record-dir>…`.
pub fn run(args: &Args) -> Result<ExitCode> {
    if !args.inputs.is_empty() {
        if !args.dirs.is_empty() {
            anyhow::bail!(messages::merge_with_dirs());
        }
        return merge(&args.inputs, &args.output);
    }
    if args.dirs.is_empty() {
        return Ok(list_kept());
    }
    let signals = Signals::install().map_err(rocprof_runner::Error::Signals)?;
    let cwd = std::env::current_dir().map_err(rocprof_runner::Error::WorkingDirectory)?;
    // Every directory and its output paths are checked before anything is converted.
    for w in args.output.check_for_conversion().map_err(|e| anyhow!(e))? {
        crate::report::warn(&w);
    }
    let mut jobs = Vec::new();
    for d in &args.dirs {
        let (dir, mut manifest) = RecordDir::open(&cwd.join(d))?;
        manifest.outputs = args
            .output
            .apply_to(&manifest.outputs, &cwd)
            .map_err(|e| anyhow!(e))?;
        outputs::validate(&manifest.outputs, &manifest.launch)?;
        jobs.push((dir, manifest));
    }
    let code = rocprof_runner::convert::convert_all(jobs, signals, &mut Terminal);
    crate::progress::end();
    Ok(code)
}
