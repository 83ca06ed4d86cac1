//! `rocprof [options] -- app args…`: check everything that can be checked, run the application
//! with the tool preloaded and a private record directory, then convert its record logs into
//! rocprofv3's files ([`crate::convert`], shared with `rocprof convert`).
//!
//! Before the launch (exit code 2 on any problem): the options, the environment discovery
//! reads (a malformed `ROCPROF_HSAKMT_LAYOUT` refuses to start; other malformed settings warn),
//! the output paths ([`crate::outputs::validate`]), the record directory and its `run.json`.

use crate::avail::choose_layout;
use crate::convert::{self, Job};
use crate::messages;
use crate::outputs::{self, OutputOptions};
use crate::placeholders::Launch;
use crate::process::{self, LaunchError, Signals};
use crate::record_dir::{RecordDir, RunManifest, SCHEMA};
use anyhow::{Context as _, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use trace_records::{ApiDomain, ProcessTrace, env};
use wsl_topology::Settings;

pub use trace_records::env::parse_bool;

macro_rules! flags {
    ($( $(#[$m:meta])* $field:ident : $long:literal $(, short = $short:literal)? ; )*) => {
        /// Tracing and output options (rocprofv3's names).
        #[derive(Debug, Default, clap::Args)]
        pub struct RunOptions {
            $(
                $(#[$m])*
                #[arg(long = $long, $(short = $short,)? num_args = 0..=1, default_missing_value = "true",
                      value_parser = parse_bool, value_name = "BOOL")]
                pub $field: Option<bool>,
            )*
            /// Where and how the outputs are written.
            #[command(flatten)]
            pub output: OutputOptions,
            /// Only kernels whose name matches are counted or traced in detail.
            #[arg(long = "kernel-include-regex")]
            pub kernel_include_regex: Option<String>,
            /// Kernels whose name matches are excluded (applied after the include filter).
            #[arg(long = "kernel-exclude-regex")]
            pub kernel_exclude_regex: Option<String>,
        }
    };
}

flags! {
    /// HIP runtime and compiler API calls.
    hip_trace: "hip-trace";
    /// HIP runtime API calls.
    hip_runtime_trace: "hip-runtime-trace";
    /// HIP compiler-generated calls (__hipRegisterFatBinary, …).
    hip_compiler_trace: "hip-compiler-trace";
    /// All HSA API calls (core, AMD extension, image, finalizer).
    hsa_trace: "hsa-trace";
    /// HSA core API calls.
    hsa_core_trace: "hsa-core-trace";
    /// HSA AMD extension API calls.
    hsa_amd_trace: "hsa-amd-trace";
    /// HSA image extension API calls.
    hsa_image_trace: "hsa-image-trace";
    /// HSA finalizer extension API calls.
    hsa_finalizer_trace: "hsa-finalizer-trace";
    /// Kernel dispatches.
    kernel_trace: "kernel-trace";
    /// Asynchronous memory copies.
    memory_copy_trace: "memory-copy-trace";
    /// ROCTx marks and ranges.
    marker_trace: "marker-trace";
    /// Everything above.
    sys_trace: "sys-trace", short = 's';
}

/// The resolved selection of what to trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub hip_runtime: bool,
    pub hip_compiler: bool,
    pub hsa_core: bool,
    pub hsa_amd: bool,
    pub hsa_image: bool,
    pub hsa_finalizer: bool,
    pub kernels: bool,
    pub copies: bool,
    pub markers: bool,
}

impl RunOptions {
    /// Aggregates fill only the sub-options the user left unset.
    pub fn selection(&self) -> Selection {
        let sys = self.sys_trace.unwrap_or(false);
        let hip = self.hip_trace.unwrap_or(sys);
        let hsa = self.hsa_trace.unwrap_or(sys);
        Selection {
            hip_runtime: self.hip_runtime_trace.unwrap_or(hip),
            hip_compiler: self.hip_compiler_trace.unwrap_or(hip),
            hsa_core: self.hsa_core_trace.unwrap_or(hsa),
            hsa_amd: self.hsa_amd_trace.unwrap_or(hsa),
            hsa_image: self.hsa_image_trace.unwrap_or(hsa),
            hsa_finalizer: self.hsa_finalizer_trace.unwrap_or(hsa),
            kernels: self.kernel_trace.unwrap_or(sys),
            copies: self.memory_copy_trace.unwrap_or(sys),
            markers: self.marker_trace.unwrap_or(sys),
        }
    }

    /// Rejects unknown or contradictory options before anything runs.
    pub fn validate(&self) -> Result<(), String> {
        let any = self.selection() != Selection::default();
        if !any && (self.output.stats == Some(true) || self.output.summary == Some(true)) {
            return Err(messages::stats_without_tracing());
        }
        self.output.formats()?;
        for (name, re) in [
            ("include", &self.kernel_include_regex),
            ("exclude", &self.kernel_exclude_regex),
        ] {
            if let Some(re) = re {
                if re.is_empty() {
                    return Err(messages::regex_empty(name));
                }
                if let Err(e) = regex::Regex::new(re) {
                    return Err(messages::regex_invalid(name, re, &e));
                }
            }
        }
        Ok(())
    }

    /// The kernel filters as the tool reads them (rocprofv3 applies them to counter collection
    /// and thread trace only).
    fn filter_env(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(re) = &self.kernel_include_regex {
            v.push(("ROCPROF_KERNEL_FILTER_INCLUDE_REGEX", re.clone()));
        }
        if let Some(re) = &self.kernel_exclude_regex {
            v.push(("ROCPROF_KERNEL_FILTER_EXCLUDE_REGEX", re.clone()));
        }
        v
    }
}

impl Selection {
    /// The tool's switches for this selection.
    fn env(&self) -> Vec<(&'static str, &'static str)> {
        [
            (env::HIP_RUNTIME_API_TRACE, self.hip_runtime),
            (env::HIP_COMPILER_API_TRACE, self.hip_compiler),
            (env::HSA_CORE_API_TRACE, self.hsa_core),
            (env::HSA_AMD_EXT_API_TRACE, self.hsa_amd),
            (env::HSA_IMAGE_EXT_API_TRACE, self.hsa_image),
            (env::HSA_FINALIZER_EXT_API_TRACE, self.hsa_finalizer),
            (env::KERNEL_TRACE, self.kernels),
            (env::MEMORY_COPY_TRACE, self.copies),
            (env::MARKER_API_TRACE, self.markers),
        ]
        .into_iter()
        .map(|(k, v)| (k, if v { "1" } else { "0" }))
        .collect()
    }
}

/// The tool library next to the executable.
fn tool_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the rocprof executable")?;
    let lib = exe
        .parent()
        .map(|d| d.join("librocprof_tool.so"))
        .unwrap_or_default();
    if !lib.exists() {
        bail!(
            "the profiler library is missing: expected {} next to rocprof (build it with `cargo xtask build`)",
            lib.display()
        );
    }
    Ok(lib)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// `first`, then the current value of the colon-separated list in `var` (if any).
pub(crate) fn prepended(var: &str, first: OsString) -> OsString {
    let mut list = first;
    if let Some(old) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        list.push(":");
        list.push(old);
    }
    list
}

/// The environment discovery reads: a malformed `ROCPROF_HSAKMT_LAYOUT` is refused (the tool
/// would read every node with a wrong size), the other problems are warnings.
fn check_settings(settings: &Settings) -> Result<()> {
    let layout = wsl_topology::settings::ENV_LAYOUT;
    if let Some(v) = std::env::var(layout).ok().filter(|v| !v.is_empty())
        && settings.layout.is_none()
    {
        bail!(messages::layout_malformed(&v));
    }
    for p in &settings.problems {
        eprintln!("rocprof: warning: {p}");
    }
    Ok(())
}

/// Runs the application and writes the outputs.
pub fn run(opts: &RunOptions, app: &[OsString]) -> Result<ExitCode> {
    opts.validate().map_err(|e| anyhow!(e))?;
    if app.is_empty() {
        bail!(messages::nothing_to_run());
    }
    let sel = opts.selection();
    if sel == Selection::default() {
        eprintln!("rocprof: warning: {}", messages::no_tracing_option());
    }
    let signals = Signals::install().map_err(|e| anyhow!(messages::signals_unavailable(&e)))?;
    let tool = tool_library()?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let settings = Settings::from_env();
    check_settings(&settings)?;

    let app_name = app[0].to_string_lossy().into_owned();
    let (launch_date, launch_time) = process::now_local();
    let mut launch = Launch {
        rocprof_pid: std::process::id(),
        hostname: hostname(),
        cwd: cwd.display().to_string(),
        argv: app
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        launch_date,
        launch_time,
        env: Default::default(),
    };
    let output = opts.output.settings(&cwd).map_err(|e| anyhow!(e))?;
    launch.capture_env(&[&output.directory, &output.file]);
    outputs::validate(&output, &launch)?;

    let dir = RecordDir::create()?;
    let mut manifest = RunManifest {
        schema: SCHEMA.into(),
        selection: sel,
        kernel_include_regex: opts.kernel_include_regex.clone(),
        kernel_exclude_regex: opts.kernel_exclude_regex.clone(),
        outputs: output,
        launch,
        status: None,
    };
    if let Err(e) = dir.write_manifest(&manifest) {
        let path = dir.path().to_owned();
        let _ = dir.remove();
        bail!(messages::manifest_write_failed(&path, &e));
    }
    let since = dir.fs_now();

    let selection = wsl_topology::platform::select(&settings);
    let layout = choose_layout(&settings, selection.platform);
    for w in &layout.warnings {
        eprintln!("rocprof: warning: {w}");
    }

    let mut cmd = std::process::Command::new(&app[0]);
    cmd.args(&app[1..]);
    cmd.env("LD_PRELOAD", prepended("LD_PRELOAD", tool.into_os_string()))
        .env(env::RECORD_DIR, dir.path());
    for (k, v) in sel.env() {
        cmd.env(k, v);
    }
    for (k, v) in opts.filter_env() {
        cmd.env(k, v);
    }
    if let Some(choice) = layout.choice.as_ref().filter(|_| settings.layout.is_none()) {
        cmd.env(wsl_topology::settings::ENV_LAYOUT, choice.size.to_string());
    }
    let status = match process::launch(signals, cmd) {
        Ok(status) => status,
        Err(e) => {
            let _ = dir.remove();
            let message = match &e {
                LaunchError::NotFound => messages::app_not_found(&app_name),
                LaunchError::NotExecutable(err) => messages::app_not_executable(&app_name, err),
                LaunchError::Interrupted(s) => messages::interrupted_before_launch(*s),
            };
            eprintln!("rocprof: error: {message}");
            return Ok(e.exit_code());
        }
    };
    manifest.status = Some(status);
    // Only `rocprof convert` reads it back, for the explanations; they are worded for an
    // unknown end if this write fails.
    let _ = dir.write_manifest(&manifest);

    let outcome = convert::convert(
        Job {
            dir,
            manifest,
            since,
        },
        signals,
    );
    eprintln!(
        "rocprof: {}",
        messages::run_summary(
            &status,
            outcome.processes,
            outcome.written.len(),
            outcome.first_dir()
        )
    );
    Ok(convert::run_exit_code(&status, &outcome))
}

/// Domains with records, to compare with what was asked for.
pub fn recorded(traces: &[ProcessTrace]) -> Selection {
    let mut s = Selection::default();
    for t in traces {
        for r in &t.api {
            match ApiDomain::from_u8(r.domain) {
                Some(ApiDomain::HipRuntime) => s.hip_runtime = true,
                Some(ApiDomain::HipCompiler) => s.hip_compiler = true,
                Some(ApiDomain::HsaCore) => s.hsa_core = true,
                Some(ApiDomain::HsaAmdExt) => s.hsa_amd = true,
                Some(ApiDomain::HsaImage) => s.hsa_image = true,
                Some(ApiDomain::HsaFinalize) => s.hsa_finalizer = true,
                _ => {}
            }
        }
        s.kernels |= !t.dispatches.is_empty();
        s.copies |= !t.copies.is_empty();
        s.markers |= !t.markers.is_empty();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct P {
        #[command(flatten)]
        o: RunOptions,
    }

    fn parse(args: &[&str]) -> Result<RunOptions, clap::Error> {
        P::try_parse_from(std::iter::once("rocprof").chain(args.iter().copied())).map(|p| p.o)
    }

    #[test]
    fn sys_trace_fills_only_unset_sub_options() {
        let o = parse(&["--sys-trace", "--kernel-trace=false"]).unwrap();
        let s = o.selection();
        assert!(s.hip_runtime && s.hsa_core && s.copies && s.markers);
        assert!(!s.kernels);
        let o = parse(&["--hsa-trace", "--hsa-image-trace", "no"]).unwrap();
        assert!(o.selection().hsa_amd && !o.selection().hsa_image && !o.selection().kernels);
    }

    #[test]
    fn bad_options_are_refused_before_anything_runs() {
        assert!(parse(&["--kernel-trace=maybe"]).is_err());
        assert!(
            parse(&["--stats"])
                .unwrap()
                .validate()
                .unwrap_err()
                .to_string()
                .contains("need a tracing option")
        );
        let e = parse(&["--kernel-trace", "--kernel-include-regex", "(unclosed"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            e.to_string().contains("not a valid regular expression"),
            "{e}"
        );
        let e = parse(&["--kernel-trace", "-f", "pftrace"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("not supported yet"), "{e}");
        let e = parse(&["--kernel-trace", "-f", "xml"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("unknown --output-format"), "{e}");
        assert!(
            parse(&["--kernel-trace", "-f", "csv"])
                .unwrap()
                .validate()
                .is_ok()
        );
    }
}
