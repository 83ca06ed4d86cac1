//! Running the application: once per pass, and `--pmc-repeat` times per counter pass, each run
//! in a private record directory with its `run.json`, then converting its record logs into
//! rocprofv3's files ([`crate::convert`], shared with `rocprof convert`).
//!
//! A [`Session`] is prepared once for every pass: the signal handlers, the tool library, the
//! environment discovery reads (a malformed `ROCPROF_HSAKMT_LAYOUT` refuses to start; other
//! malformed settings are warnings), then the probe of the DXG thunk, whose layout choice each
//! pass hands the tool.

use crate::convert::{self, Job};
use crate::error::Error;
use crate::launch::{hostname, launch_app, tool_library};
use crate::notice::{EndNotice, LaunchNotice, Report};
use crate::outputs;
use crate::plan::launcher::Launcher;
use crate::plan::{AttPlan, ForeignDomain, Launch, OutputSettings, Selection};
use crate::process::{self, Signals};
use crate::record_dir::{RecordDir, RunManifest, SCHEMA};
use pmc_dxg::collection::CounterPlan;
use std::path::PathBuf;
use std::process::ExitCode;
use trace_records::{ProcessTrace, env};
use wsl_topology::Settings;
use wsl_topology::layout_choice::LayoutDecision;

/// One run configuration: what to trace, its counter pass, where its outputs go, what the tool
/// is told besides, and how the application is started.
#[derive(Debug, Clone)]
pub struct Pass {
    /// What is traced.
    pub selection: Selection,
    /// `--kernel-include-regex`.
    pub kernel_include_regex: Option<String>,
    /// `--kernel-exclude-regex`.
    pub kernel_exclude_regex: Option<String>,
    /// The counter pass, if it counts.
    pub counters: Option<CounterPlan>,
    /// The thread trace, if it traces.
    pub thread_trace: Option<AttPlan>,
    /// Where and how the outputs are written (`-d`/`-o` as given, relative to `base`).
    pub outputs: OutputSettings,
    /// Domains of libraries this stack does not ship, asked for by name.
    pub foreign_domains: Vec<ForeignDomain>,
    /// Further `ROCPROF_*` settings for the tool (filters, scope, domains, signal handlers).
    pub tool_env: Vec<(&'static str, String)>,
    /// How the application is started.
    pub launcher: Launcher,
    /// `--pmc-repeat` (runs of a counter pass; the last one's outputs are written).
    pub repeat: u32,
    /// `pass_<N>` or `pmc_<N>` under the output directory, when there are several passes.
    pub subdir: Option<String>,
}

/// What every pass of a run shares.
#[derive(Debug)]
pub struct Session {
    signals: &'static Signals,
    tool: PathBuf,
    settings: Settings,
    /// The platform the settings select (chosen once: on WSL the check loads libdxcore).
    platform: wsl_topology::Platform,
    layout: LayoutDecision,
}

/// The DXG thunk's switch for vendor (PM4) packets.
const VENDOR_PACKET: &str = "WSLKMT_VENDOR_PACKET";

impl Session {
    /// Installs the signal handlers, finds the tool and reads the discovery settings (their
    /// problems said in `report`). The thunk is probed by [`Session::probe_thunk`].
    pub fn prepare(report: &mut dyn Report) -> Result<Session, Error> {
        Self::prepare_with_tool(tool_library()?, report)
    }

    /// [`Session::prepare`] with the tool library at `tool` (a tool that is not beside the
    /// running executable: another program embedding the runner, a test).
    pub fn prepare_with_tool(tool: PathBuf, report: &mut dyn Report) -> Result<Session, Error> {
        if !tool.exists() {
            return Err(Error::ToolMissing(tool));
        }
        let signals = Signals::install().map_err(Error::Signals)?;
        let settings = Settings::from_env();
        let layout_var = wsl_topology::settings::ENV_LAYOUT;
        if let Some(value) = std::env::var(layout_var).ok().filter(|v| !v.is_empty())
            && settings.layout.is_none()
        {
            return Err(Error::LayoutMalformed { value });
        }
        for p in &settings.problems {
            report.notice(
                LaunchNotice::Setting {
                    problem: p.to_string(),
                }
                .into(),
            );
        }
        let platform = wsl_topology::platform::select(&settings).platform;
        Ok(Session {
            signals,
            tool,
            settings,
            platform,
            layout: LayoutDecision::default(),
        })
    }

    /// For a counter run on WSL: says when `WSLKMT_VENDOR_PACKET` is set to anything but 1
    /// (the thunk then drops every PM4 packet without an error, so every counter reads 0).
    pub fn check_vendor_packets(&self, report: &mut dyn Report) {
        if self.platform == wsl_topology::Platform::Wsl
            && let Ok(value) = std::env::var(VENDOR_PACKET)
            && value != "1"
        {
            report.notice(LaunchNotice::VendorPacketGate { value }.into());
        }
    }

    /// Probes the thunk once for every pass and picks the layout each pass hands the tool;
    /// what the probe shows is said in `report`.
    pub fn probe_thunk(&mut self, report: &mut dyn Report) {
        self.layout = wsl_topology::layout_choice::choose(&self.settings, self.platform);
        for w in &self.layout.warnings {
            report.notice(
                LaunchNotice::LayoutProbe {
                    warning: w.to_string(),
                }
                .into(),
            );
        }
    }

    /// The thunk's layout, as probed.
    pub fn layout(&self) -> &LayoutDecision {
        &self.layout
    }

    /// The discovery settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The platform the settings select.
    pub fn platform(&self) -> wsl_topology::Platform {
        self.platform
    }

    /// The signal handlers (whether a signal interrupted `rocprof`).
    pub fn signals(&self) -> &'static Signals {
        self.signals
    }

    /// Runs every pass (stopping at a signal or a pass that fails); the exit code is the first
    /// pass's, or the first that failed.
    pub fn run(&self, passes: &[Pass], report: &mut dyn Report) -> Result<ExitCode, Error> {
        let total = passes.len();
        let mut code = ExitCode::SUCCESS;
        for (k, pass) in passes.iter().enumerate() {
            if total > 1 {
                report.notice(
                    LaunchNotice::Pass {
                        number: k + 1,
                        total,
                        pmc: pass
                            .counters
                            .as_ref()
                            .map(|c| c.requested.clone())
                            .unwrap_or_default(),
                    }
                    .into(),
                );
            }
            let c = self.run_pass(pass, report)?;
            if k == 0 || c != ExitCode::SUCCESS {
                code = c;
            }
            if self.signals.interrupted().is_some() || c != ExitCode::SUCCESS {
                break;
            }
        }
        Ok(code)
    }

    /// One pass: `repeat` − 1 counter-only runs whose traces are kept in memory, then the run
    /// whose outputs are written, with the counters estimated over all of them.
    pub fn run_pass(&self, pass: &Pass, report: &mut dyn Report) -> Result<ExitCode, Error> {
        let sel = pass.selection;
        if sel == Selection::default() && pass.counters.is_none() && pass.thread_trace.is_none() {
            report.notice(LaunchNotice::NoTracingOption.into());
        }
        let cwd = std::env::current_dir().map_err(Error::WorkingDirectory)?;
        let (launch_date, launch_time) = process::now_local();
        let mut launch = Launch {
            rocprof_pid: std::process::id(),
            hostname: hostname(),
            cwd: cwd.display().to_string(),
            argv: pass
                .launcher
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            launch_date,
            launch_time,
            env: Default::default(),
            // SAFETY: neither call takes a pointer; both only read this process's ids.
            pgid: unsafe { libc::getpgrp() } as u32,
            // SAFETY: as above.
            psid: unsafe { libc::getsid(0) } as u32,
        };
        let mut output = pass.outputs.clone();
        launch.capture_env(&[&output.directory, &output.file]);
        if let Some(sub) = &pass.subdir {
            output.directory = format!("{}/{sub}", output.directory.trim_end_matches('/'));
        }
        outputs::validate(&output, &launch)?;

        let mut env_extra: Vec<(&'static str, String)> = sel
            .env()
            .into_iter()
            .map(|(k, v)| (k, v.to_owned()))
            .collect();
        if let Some(re) = &pass.kernel_include_regex {
            env_extra.push((env::KERNEL_FILTER_INCLUDE_REGEX, re.clone()));
        }
        if let Some(re) = &pass.kernel_exclude_regex {
            env_extra.push((env::KERNEL_FILTER_EXCLUDE_REGEX, re.clone()));
        }
        env_extra.extend(pass.tool_env.iter().cloned());
        // --kernel-rename: the tool notes each dispatch's ROCTx range (markers recorded or not).
        if output.kernel_rename {
            env_extra.push((env::KERNEL_RENAME, "1".to_owned()));
        }
        // The outputs that show API arguments and return values need them captured.
        if output.formats.iter().any(|f| f.shows_api_arguments()) {
            env_extra.push((env::API_ARGUMENTS, "1".to_owned()));
        }
        if let Some(c) = &pass.counters {
            env_extra.push((env::COUNTERS, serde_json::to_string(&c.request())?));
        }
        if let Some(choice) = self
            .layout
            .choice
            .as_ref()
            .filter(|_| self.settings.layout.is_none())
        {
            env_extra.push((wsl_topology::settings::ENV_LAYOUT, choice.size.to_string()));
        }

        if pass.launcher.echo {
            crate::launch::echo(&pass.launcher, &self.tool, &env_extra, report);
            return Ok(ExitCode::SUCCESS);
        }
        let repeat = if pass.counters.is_some() {
            pass.repeat
        } else {
            1
        };
        let launcher = &pass.launcher;
        let mut others: Vec<Vec<ProcessTrace>> = Vec::new();
        for r in 1..repeat {
            report.notice(
                LaunchNotice::CounterRun {
                    number: r,
                    of: repeat,
                }
                .into(),
            );
            let dir = RecordDir::create()?;
            match launch_app(launcher, &self.tool, &dir, &env_extra, self.signals, report) {
                Ok(status) if status.success() => {}
                Ok(status) => {
                    let path = dir.path().to_owned();
                    let _ = dir.remove();
                    return Err(Error::RepeatRunFailed {
                        run: r,
                        ended: status.describe(),
                        dir: path,
                    });
                }
                Err(code) => {
                    let _ = dir.remove();
                    return Ok(code);
                }
            }
            others.push(convert::read_traces(&dir, report));
            let _ = dir.remove();
            if self.signals.interrupted().is_some() {
                return Ok(ExitCode::from(130));
            }
        }
        if repeat > 1 {
            report.notice(LaunchNotice::CounterRunWritten { of: repeat }.into());
        }

        let dir = RecordDir::create()?;
        if let Some(plan) = &pass.thread_trace {
            let raw = dir.path().join(crate::thread_trace::RAW_DIR);
            if let Err(source) = std::fs::create_dir(&raw) {
                let _ = dir.remove();
                return Err(Error::CreateDir { path: raw, source });
            }
            let request = crate::thread_trace::request(plan, dir.path());
            env_extra.push((env::THREAD_TRACE, serde_json::to_string(&request)?));
        }
        let mut manifest = RunManifest {
            schema: SCHEMA.into(),
            selection: sel,
            kernel_include_regex: pass.kernel_include_regex.clone(),
            kernel_exclude_regex: pass.kernel_exclude_regex.clone(),
            counters: pass.counters.clone(),
            thread_trace: pass.thread_trace.clone(),
            outputs: output,
            launch,
            status: None,
            foreign_domains: pass.foreign_domains.clone(),
        };
        if let Err(source) = dir.write_manifest(&manifest) {
            let path = dir.path().to_owned();
            let _ = dir.remove();
            return Err(Error::ManifestWrite { dir: path, source });
        }
        let since = dir.fs_now();
        let status = match launch_app(launcher, &self.tool, &dir, &env_extra, self.signals, report)
        {
            Ok(status) => status,
            Err(code) => {
                let _ = dir.remove();
                return Ok(code);
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
                other_runs: others,
            },
            self.signals,
            report,
        );
        report.notice(
            EndNotice::Run {
                ended: status.describe(),
                processes: outcome.processes,
                files: outcome.written.len(),
                dirs: outcome
                    .dirs()
                    .into_iter()
                    .map(std::path::Path::to_owned)
                    .collect(),
            }
            .into(),
        );
        Ok(convert::run_exit_code(&status, &outcome))
    }
}
