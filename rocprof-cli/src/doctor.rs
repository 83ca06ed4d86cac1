//! `rocprof doctor [--json] [-- app args…]`: every WSL2 pitfall of the seed document checked
//! before a run, one line per check — `ok|warning|error  <check>: <evidence>; <fix>` — then a
//! summary line. Exit status 0 when no check is an error, 1 otherwise (2: doctor itself could
//! not run).
//!
//! What is checked (docs/troubleshooting.md, "rocprof doctor", has the table):
//!
//! * the platform: `/dev/dxg`, libdxcore and its exports, `/dev/kfd` (absent on WSL2: no PC
//!   sampling, no SPM), `ROCPROFILER_FORCE_PLATFORM`, and what discovery publishes;
//! * the libraries the loader resolves first (and from where; what they shadow): the DXG
//!   thunk, the HSA runtime, HIP, ROCTx, rocprofiler-register; the thunk's record layout
//!   (the `DxgAbiCheck` handshake and the canary measurement of `rocprof avail`) against the
//!   layout the runtime was built for (its generation, from its version and from how it
//!   behaves); `LD_PRELOAD` of librocdxg by path (the double load) or by name;
//! * the variables: `HSA_TOOLS_DISABLE_REGISTER`, `HSA_ENABLE_DXG_DETECTION` (with the
//!   runtime's generation), `WSLKMT_VENDOR_PACKET`, the late-attach marker,
//!   `ROCPROFILER_FORCE_GFX`, `ROCPROF_HSAKMT_LAYOUT`; exports that `~/.bashrc` makes only
//!   after its early return for non-interactive shells;
//! * the thread-trace decoder and comgr;
//! * an end-to-end self-test: `rocprof-selftest` (shipped next to `rocprof`) run with the
//!   profiler preloaded exactly as `rocprof` runs an application; its record log says whether
//!   the runtime offered its API table and how the agents paired, the program itself whether a
//!   packet on a GPU queue came back and whether a counter read came back non-zero.
//!
//! With `-- app args`, the application is inspected, never run: found on `PATH`, a script
//! (its interpreter is what the loader starts; a script that drops `LD_PRELOAD` is said), a
//! static or set-user-ID program (which ignores `LD_PRELOAD`), and the ROCm libraries its
//! `DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` resolve to in this environment; the self-test then
//! loads the HSA runtime the application would load. Its arguments are not used.

mod app;
pub(crate) mod check;
mod decoder;
mod elf;
pub(crate) mod libraries;
pub(crate) mod loader;
mod platform;
pub mod protocol;
pub(crate) mod selftest;
mod shell;
mod variables;

use crate::avail::{LayoutDecision, choose_layout};
use anyhow::Result;
use check::{Check, Env, Summary};
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use wsl_topology::{Discovery, NodeLayout, Selection, Settings};

/// `rocprof doctor` options.
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

/// `schema` of the JSON report.
pub const SCHEMA: &str = "rocprof-doctor/1";

/// Everything the checks look at, gathered once.
pub struct Context {
    /// The environment as the user set it (captured first).
    pub env: Env,
    /// The steering variables, read from it.
    pub settings: Settings,
    /// The loader's search in that environment.
    pub loader: loader::Loader,
    /// The platform as autodetection selects it (`ROCPROFILER_FORCE_PLATFORM` ignored).
    pub auto: Selection,
    /// The platform as the profiler selects it (the forced one, if any).
    pub selection: Selection,
    /// The thunk probe and the layout chosen (on WSL).
    pub layout: LayoutDecision,
    /// Discovery on the autodetected platform, without the late-attach marker (whose effect
    /// its own check reports), with the chosen layout.
    pub discovery: Discovery,
    /// Where the libraries resolve.
    pub libs: libraries::Libraries,
    /// `--att-library-path`.
    pub att_dirs: Vec<PathBuf>,
}

impl Context {
    /// Gathers everything from the process environment.
    fn gather(att_dirs: Vec<PathBuf>) -> Context {
        let env = Env::capture();
        let settings = Settings::from_lookup(|k| env.get(k).map(str::to_owned));
        let loader = loader::Loader::new(&env);
        let selection = wsl_topology::platform::select(&settings);
        let mut analysis = settings.clone();
        analysis.force_platform = None;
        analysis.attach_marker = false;
        let auto = if settings.force_platform.is_some() {
            wsl_topology::platform::select(&analysis)
        } else {
            selection.clone()
        };
        let layout = choose_layout(&analysis, auto.platform);
        if let Some(choice) = &layout.choice {
            analysis.layout = NodeLayout::from_size(choice.size);
        }
        let discovery = wsl_topology::discover_on(&analysis, auto.clone());
        let libs = libraries::Libraries::resolve(&loader);
        Context {
            env,
            settings,
            loader,
            auto,
            selection,
            layout,
            discovery,
            libs,
            att_dirs,
        }
    }

    /// Whether this is a WSL2 GPU environment (as autodetected).
    pub fn wsl(&self) -> bool {
        self.auto.platform == wsl_topology::Platform::Wsl
    }

    /// Whether autodetection found native Linux (the KFD topology).
    pub fn native(&self) -> bool {
        self.auto.reason == wsl_topology::platform::SelectionReason::KfdSysfs
    }
}

/// The JSON report.
#[derive(Debug, Serialize)]
pub struct Report {
    schema: &'static str,
    /// One entry per check, in report order.
    checks: Vec<Check>,
    /// The counts.
    summary: Summary,
    /// What the self-test saw.
    self_test: selftest::Details,
    /// The application inspected (`-- app`).
    app: Option<app::Details>,
    /// Wall-clock milliseconds the doctor took (self-test included).
    elapsed_ms: u64,
}

/// Runs the checks; exit 0 when none is an error.
pub fn run(args: &Args) -> Result<ExitCode> {
    let started = Instant::now();
    let ctx = Context::gather(args.att_library_path.clone());
    let mut checks = Vec::new();
    checks.extend(platform::checks(&ctx));
    let inspected = args.app.first().map(|a| app::inspect(a, &ctx));
    let runtime = inspected
        .as_ref()
        .and_then(|a| a.runtime.clone())
        .unwrap_or_else(|| protocol::DEFAULT_RUNTIME.to_owned());
    let test = selftest::run(&ctx, &runtime);
    checks.extend(libraries::checks(&ctx, &test));
    checks.extend(variables::checks(&ctx, &test));
    checks.push(shell::check(&ctx.env));
    checks.extend(decoder::checks(&ctx));
    checks.push(platform::agents(&ctx));
    if let Some(a) = &inspected {
        checks.extend(a.checks.iter().cloned());
    }
    checks.extend(selftest::checks(&ctx, &test));
    let summary = Summary::of(&checks);
    let elapsed = started.elapsed();
    if args.json {
        let report = Report {
            schema: SCHEMA,
            checks,
            summary,
            self_test: test.details(),
            app: inspected.map(|a| a.details),
            elapsed_ms: elapsed.as_millis() as u64,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for c in &checks {
            println!("{}", c.line());
        }
        println!(
            "summary: {} checks: {} ok, {} warning(s), {} error(s) ({:.2} s, self-test included){}",
            checks.len(),
            summary.ok,
            summary.warnings,
            summary.errors,
            elapsed.as_secs_f64(),
            if summary.errors == 0 {
                ""
            } else {
                "; a profiling run in this environment would record nothing or wrong data until the errors are fixed"
            }
        );
    }
    Ok(if summary.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
