//! `rocprof [options] -- app args…`: check everything that can be checked, turn the options
//! into the runner's passes ([`rocprof_runner::run::Pass`]), then run them
//! ([`rocprof_runner::run::Session`]), saying what happens through the CLI's report.
//!
//! Before the launch (exit code 2 on any problem): the options, the environment discovery
//! reads (a malformed `ROCPROF_HSAKMT_LAYOUT` refuses to start; other malformed settings warn),
//! the output paths, the record directory and its `run.json`.

use crate::messages;
use crate::outputs::OutputOptions;
use crate::report::Terminal;
use anyhow::{Result, anyhow, bail};
use pmc_dxg::collection as pmc;
use rocprof_runner::counters::Planner;
use rocprof_runner::notice::{CounterNotice, RepeatedCounter, Report};
use rocprof_runner::plan::launcher::Launcher;
use rocprof_runner::plan::{AttPlan, Selection};
use rocprof_runner::run::{Pass, Session};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use trace_records::env;
use trace_records::env::parse_bool;

macro_rules! flags {
    ($( $(#[$m:meta])* $field:ident : $long:literal $(, short = $short:literal)? ; )*) => {
        /// Tracing and output options (rocprofv3's names).
        #[derive(Debug, Default, Clone, clap::Args)]
        pub struct RunOptions {
            $(
                $(#[$m])*
                #[arg(long = $long, $(short = $short,)? num_args = 0..=1, default_missing_value = "true",
                      value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
                pub $field: Option<bool>,
            )*
            /// Where and how the outputs are written.
            #[command(flatten, next_help_heading = "Output")]
            pub output: OutputOptions,
            /// Only kernels whose name matches are counted or traced in detail.
            #[arg(long = "kernel-include-regex", help_heading = "Filtering")]
            pub kernel_include_regex: Option<String>,
            /// Kernels whose name matches are excluded (applied after the include filter).
            #[arg(long = "kernel-exclude-regex", help_heading = "Filtering")]
            pub kernel_exclude_regex: Option<String>,
            /// Counters and thread trace only between roctxProfilerResume(0) and
            /// roctxProfilerPause(0) (starting paused).
            #[arg(long = "selected-regions", num_args = 0..=1, default_missing_value = "true",
                  value_parser = parse_bool, value_name = "BOOL", help_heading = "Filtering")]
            pub selected_regions: Option<bool>,
            /// Hardware counters around every dispatch (base or derived, space or comma
            /// separated). Each `--pmc` is one group, collected in its own run of the
            /// application (outputs in `pass_<N>/` when there are several).
            #[arg(long = "pmc", num_args = 1.., value_name = "COUNTER", action = clap::ArgAction::Append,
                  help_heading = "Counters")]
            pub pmc: Vec<String>,
            /// The `--pmc` values grouped by occurrence (filled from the parsed matches:
            /// [`RunOptions::group_pmc`]).
            #[arg(skip)]
            pub pmc_occurrences: Vec<Vec<String>>,
            /// A run configuration: `pmc:` lines (.txt) or rocprofv3's `jobs` (.json, .yaml);
            /// each pass or job is one run of the application.
            #[arg(short = 'i', long = "input", value_name = "FILE", help_heading = "Input")]
            pub input: Option<PathBuf>,
            /// Run the application N times per counter group and report, per dispatch and
            /// counter, the smallest non-zero value (other GPU clients only ever add counts);
            /// the spread goes to `<prefix>_counter_hygiene.csv`.
            #[arg(long = "pmc-repeat", value_name = "N", default_value_t = 1,
                  value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = "Counters")]
            pub pmc_repeat: u32,
            /// Discard the counters of dispatches that start within MS milliseconds of the
            /// first counted one (GRBM counters can read 0 at the start of a GPU session on
            /// WSL2; 300 is a safe window).
            #[arg(long = "pmc-discard-warmup", value_name = "MS", help_heading = "Counters")]
            pub pmc_discard_warmup: Option<u64>,
            /// `--log-level` (set by main; a job's `log_level` over it).
            #[arg(skip)]
            pub log_level: Option<crate::input::LogLevel>,
            /// Thread trace (`--att…`).
            #[command(flatten, next_help_heading = "Thread trace")]
            pub att: crate::att::AttOptions,
            /// PC sampling and SPM (refused on WSL2).
            #[command(flatten, next_help_heading = "PC sampling and SPM (refused on WSL2)")]
            pub sampling: crate::att::SamplingOptions,
            /// Iteration ranges, collection periods.
            #[command(flatten, next_help_heading = "Filtering")]
            pub scope: crate::scope::ScopeOptions,
            /// Domains of libraries this stack does not ship.
            #[command(flatten, next_help_heading = "Other domains")]
            pub domains: crate::domains::DomainOptions,
            /// Preloads, signal handlers, MPI ranks, attach.
            #[command(flatten, next_help_heading = "Launch")]
            pub launch: crate::launch_options::LaunchOptions,
            /// Counter definitions to add to (or override) the installed ones: a YAML file in
            /// counter_defs.yaml's form.
            #[arg(short = 'E', long = "extra-counters", value_name = "YAML",
                  help_heading = "Counters")]
            pub extra_counters: Option<PathBuf>,
            /// How several counter groups are collected: `application` runs the application
            /// once per group (the default); `kernel` replays each kernel (refused here).
            #[arg(long = "replay-mode", value_enum, help_heading = "Counters")]
            pub replay_mode: Option<ReplayMode>,
            /// rocprofv3's switch for kernel replay (refused here, as `--replay-mode kernel`).
            #[arg(long = "kernel-replay-beta-enabled", num_args = 0..=1,
                  default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL",
                  help_heading = "Counters")]
            pub kernel_replay_beta_enabled: Option<bool>,
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
    /// HSA memory-pool and virtual-memory allocations and frees.
    memory_allocation_trace: "memory-allocation-trace";
    /// The runtime's scratch-memory allocations, frees and reclaims.
    scratch_memory_trace: "scratch-memory-trace";
    /// HIP, HSA, markers, kernels, copies, allocations, scratch (and the domains of
    /// libraries this stack does not ship).
    sys_trace: "sys-trace", short = 's';
    /// As --sys-trace with the HIP runtime only and no HSA.
    runtime_trace: "runtime-trace", short = 'r';
}

/// `--replay-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayMode {
    /// One run of the application per counter group.
    Application,
    /// Each kernel replayed once per counter group.
    Kernel,
}

/// One run configuration as the options give it: the options (a job's over the command
/// line's), its counter pass, and where its outputs go.
struct OptionPass {
    opts: RunOptions,
    counters: Option<pmc::CounterPlan>,
    /// `pass_<N>` or `pmc_<N>` under the output directory, when there are several passes.
    subdir: Option<String>,
}

impl RunOptions {
    /// Aggregates fill only the sub-options the user left unset: `-s` all of them, `-r` all
    /// but HSA (and the HIP runtime only).
    pub fn selection(&self) -> Selection {
        let sys = self.sys_trace.unwrap_or(false);
        let runtime = self.runtime_trace.unwrap_or(false);
        let all = sys || runtime;
        let hip = self.hip_trace.unwrap_or(sys);
        let hsa = self.hsa_trace.unwrap_or(sys);
        Selection {
            hip_runtime: self.hip_runtime_trace.unwrap_or(hip || runtime),
            hip_compiler: self.hip_compiler_trace.unwrap_or(hip),
            hsa_core: self.hsa_core_trace.unwrap_or(hsa),
            hsa_amd: self.hsa_amd_trace.unwrap_or(hsa),
            hsa_image: self.hsa_image_trace.unwrap_or(hsa),
            hsa_finalizer: self.hsa_finalizer_trace.unwrap_or(hsa),
            kernels: self.kernel_trace.unwrap_or(all),
            copies: self.memory_copy_trace.unwrap_or(all),
            markers: self.marker_trace.unwrap_or(all || self.domains.kokkos()),
            memory_allocations: self.memory_allocation_trace.unwrap_or(all),
            scratch_memory: self.scratch_memory_trace.unwrap_or(all),
        }
    }

    /// Groups the `--pmc` values by occurrence (one group per `--pmc`), from the matches the
    /// options were parsed from.
    pub fn group_pmc(&mut self, matches: &clap::ArgMatches) {
        self.pmc_occurrences = matches
            .get_occurrences::<String>("pmc")
            .map(|o| o.map(|g| g.cloned().collect()).collect())
            .unwrap_or_default();
    }

    /// The `--pmc` groups, each split like rocprofv3 splits a counter list.
    pub fn pmc_groups(&self) -> Vec<Vec<String>> {
        let groups = match self.pmc_occurrences.is_empty() {
            true if !self.pmc.is_empty() => vec![self.pmc.clone()],
            true => Vec::new(),
            false => self.pmc_occurrences.clone(),
        };
        groups
            .iter()
            .map(|g| {
                g.iter()
                    .flat_map(|c| crate::input::split_counters(c))
                    .collect()
            })
            .filter(|g: &Vec<String>| !g.is_empty())
            .collect()
    }

    /// A `--pmc` whose values name no counter (`--pmc ''`, `--pmc ,`) is refused: dropping it
    /// would run the application without the counters asked for.
    fn refuse_empty_pmc(&self) -> Result<(), String> {
        let occurrences = match self.pmc_occurrences.is_empty() {
            true => std::slice::from_ref(&self.pmc),
            false => self.pmc_occurrences.as_slice(),
        };
        for values in occurrences.iter().filter(|v| !v.is_empty()) {
            if values
                .iter()
                .all(|v| crate::input::split_counters(v).is_empty())
            {
                let given: Vec<String> = values
                    .iter()
                    .map(|v| format!("'{}'", v.replace('\'', r"'\''")))
                    .collect();
                return Err(messages::pmc_empty(&format!("--pmc {}", given.join(" "))));
            }
        }
        Ok(())
    }

    /// Rejects unknown or contradictory options before anything runs.
    pub fn validate(&self) -> Result<(), String> {
        self.refuse_empty_pmc()?;
        let any = self.selection() != Selection::default()
            || !self.pmc.is_empty()
            || self.input.is_some();
        if !any && (self.output.stats == Some(true) || self.output.summary == Some(true)) {
            return Err(messages::stats_without_tracing());
        }
        self.output.formats()?;
        for w in self.output.check_extras(any)? {
            crate::report::warn(&w);
        }
        self.sampling.refuse_on_wsl()?;
        self.scope.validate(self.selected_regions == Some(true))?;
        self.domains.validate()?;
        self.launch.validate(&|k| std::env::var(k).ok())?;
        if self.replay_mode == Some(ReplayMode::Kernel)
            || self.kernel_replay_beta_enabled == Some(true)
        {
            return Err(messages::kernel_replay_refused());
        }
        let counting = !self.pmc.is_empty() || self.input.is_some();
        if self.att.config(counting)?.is_none() && self.att.any() {
            crate::report::warn(
                "the --att-* options are ignored without --att (add --att to trace)",
            );
        }
        for (name, re) in [
            ("include", &self.kernel_include_regex),
            ("exclude", &self.kernel_exclude_regex),
        ] {
            // An empty pattern is no filter (as rocprofv3: its options are tested for truth).
            if let Some(re) = re.as_ref().filter(|r| !r.is_empty()) {
                if let Err(e) = regex::Regex::new(re) {
                    return Err(messages::regex_invalid(name, re, &e));
                }
                // The tool matches with regex-lite inside the application.
                if let Err(e) = regex_lite::Regex::new(re) {
                    return Err(messages::regex_invalid(name, re, &e));
                }
            }
        }
        Ok(())
    }

    /// The kernel filters as the tool reads them (rocprofv3 applies them to counter collection
    /// and thread trace only).
    fn tool_env(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.selected_regions == Some(true) {
            v.push((env::SELECTED_REGIONS, "1".to_owned()));
        }
        v.extend(self.scope.env());
        let aggregate = self.sys_trace == Some(true) || self.runtime_trace == Some(true);
        v.extend(self.domains.env(aggregate));
        // As rocprofv3: the level for the libraries in the application, but `env`/`config`.
        if let Some(l) = self.log_level.and_then(crate::input::LogLevel::tool_name) {
            v.extend(
                [
                    "ROCPROF_LOG_LEVEL",
                    "ROCPROFILER_LOG_LEVEL",
                    "ROCTX_LOG_LEVEL",
                ]
                .map(|k| (k, l.to_owned())),
            );
        }
        if self.launch.disable_signal_handlers == Some(true) {
            v.push((env::SIGNAL_HANDLERS, "0".to_owned()));
        }
        v
    }
}

/// Whether a job of the `-i` file asks for `list_avail` (an unreadable file is refused later).
pub fn input_lists_avail(opts: &RunOptions) -> bool {
    let input = opts
        .input
        .as_deref()
        .and_then(|p| crate::input::read(p).ok());
    input.is_some_and(|i| i.jobs.iter().any(|j| j.list_avail == Some(true)))
}

/// The passes the options ask for: one per `--pmc` group (one run without counters if there
/// is none), or one per job of the `-i` file, each job's settings over the command line's.
fn passes(opts: &RunOptions, report: &mut dyn Report) -> Result<Vec<OptionPass>> {
    let warmup = opts.pmc_discard_warmup;
    let extra = opts
        .extra_counters
        .as_deref()
        .map(|p| {
            pmc::ExtraCounters::read(p).map_err(|e| anyhow!(messages::extra_counters_refused(&e)))
        })
        .transpose()?;
    let counting = &mut Counting {
        extra: extra.as_ref(),
        planner: None,
    };
    let Some(path) = &opts.input else {
        let groups = opts.pmc_groups();
        let several = groups.len() > 1;
        if groups.is_empty() {
            return Ok(vec![OptionPass {
                opts: opts.clone(),
                counters: None,
                subdir: None,
            }]);
        }
        return groups
            .iter()
            .enumerate()
            .map(|(k, g)| {
                Ok(OptionPass {
                    opts: opts.clone(),
                    counters: Some(counter_plan(
                        std::slice::from_ref(g),
                        1,
                        several.then_some(k + 1),
                        warmup,
                        counting,
                        report,
                    )?),
                    subdir: several.then(|| format!("pass_{}", k + 1)),
                })
            })
            .collect();
    };
    if !opts.pmc.is_empty() {
        bail!(messages::input_with_pmc());
    }
    let input = crate::input::read(path).map_err(|e| anyhow!(messages::input_refused(&e)))?;
    let text = input.format == crate::input::InputFormat::Text;
    let mut out = Vec::new();
    for (k, job) in input.jobs.iter().enumerate() {
        let merged = job_options(opts, job)
            .map_err(|e| anyhow!("{}: job {}: {e}", path.display(), k + 1))?;
        merged
            .validate()
            .map_err(|e| anyhow!("{}: job {}: {e}", path.display(), k + 1))?;
        let groups: Vec<Vec<String>> = match (&job.pmc, &job.pmc_groups) {
            (Some(p), None) => vec![p.0.clone()],
            (None, Some(g)) => g.iter().map(|c| c.0.clone()).collect(),
            (None, None) => Vec::new(),
            (Some(_), Some(_)) => bail!(
                "{}: job {}: give either pmc or pmc_groups, not both",
                path.display(),
                k + 1
            ),
        };
        if let Some(n) = groups.iter().position(Vec::is_empty) {
            let given = match job.pmc_groups {
                Some(_) => format!("pmc_groups[{n}]"),
                None => "pmc".to_owned(),
            };
            bail!(
                "{}: job {}: {}",
                path.display(),
                k + 1,
                messages::pmc_empty(&given)
            );
        }
        let prefix = if text { "pmc" } else { "pass" };
        // rocprofv3: a folder per job when there are several; for one, only with `pmc`.
        let folder =
            (input.jobs.len() > 1 || job.pmc.is_some()).then(|| format!("{prefix}_{}", k + 1));
        if groups.is_empty() {
            out.push(OptionPass {
                opts: merged.clone(),
                counters: None,
                subdir: folder.clone(),
            });
        }
        if !groups.is_empty() {
            // `pmc_groups`: one run, the groups multiplexed (as rocprofv3).
            let interval = job.pmc_group_interval.unwrap_or(1);
            let number = out.len() + 1;
            out.push(OptionPass {
                opts: merged.clone(),
                counters: Some(counter_plan(
                    &groups,
                    interval,
                    Some(number),
                    warmup,
                    counting,
                    report,
                )?),
                subdir: folder,
            });
        }
    }
    if out.is_empty() {
        bail!("{}: the file has no jobs", path.display());
    }
    Ok(out)
}

/// The command line's options with a job's settings over them; a setting both give
/// differently is refused (as rocprofv3 does).
fn job_options(opts: &RunOptions, job: &crate::input::Job) -> Result<RunOptions, String> {
    fn take<T: PartialEq + Clone + std::fmt::Debug>(
        name: &str,
        cli: &mut Option<T>,
        file: &Option<T>,
    ) -> Result<(), String> {
        match (cli.as_ref(), file) {
            (Some(a), Some(b)) if a != b => Err(format!(
                "{name} is {b:?} in the file and {a:?} on the command line"
            )),
            (_, Some(b)) => {
                *cli = Some(b.clone());
                Ok(())
            }
            _ => Ok(()),
        }
    }
    // `take!(key, field)`: the job's `key` into the options' `field`.
    macro_rules! take {
        ($key:ident, $($field:tt)+) => {
            take(stringify!($key), &mut $($field)+, &job.$key)?
        };
    }
    let mut o = opts.clone();
    take!(hip_trace, o.hip_trace);
    take!(hip_runtime_trace, o.hip_runtime_trace);
    take!(hip_compiler_trace, o.hip_compiler_trace);
    take!(hsa_trace, o.hsa_trace);
    take!(hsa_core_trace, o.hsa_core_trace);
    take!(hsa_amd_trace, o.hsa_amd_trace);
    take!(hsa_image_trace, o.hsa_image_trace);
    take!(hsa_finalizer_trace, o.hsa_finalizer_trace);
    take!(kernel_trace, o.kernel_trace);
    take!(memory_copy_trace, o.memory_copy_trace);
    take!(marker_trace, o.marker_trace);
    take!(memory_allocation_trace, o.memory_allocation_trace);
    take!(scratch_memory_trace, o.scratch_memory_trace);
    take!(runtime_trace, o.runtime_trace);
    take!(kernel_rename, o.output.kernel_rename);
    take!(summary_per_domain, o.output.summary_per_domain);
    take!(summary_output_file, o.output.summary_output_file);
    take!(summary_units, o.output.summary_units);
    take!(output_config, o.output.output_config);
    take!(minimum_output_data, o.output.minimum_output_data);
    take!(group_by_queue, o.output.group_by_queue);
    if let Some(groups) = &job.summary_groups {
        if !o.output.summary_groups.is_empty() && &o.output.summary_groups != groups {
            return Err(format!(
                "summary_groups is {groups:?} in the file and {:?} on the command line",
                o.output.summary_groups
            ));
        }
        o.output.summary_groups = groups.clone();
    }
    take!(sys_trace, o.sys_trace);
    take!(kernel_include_regex, o.kernel_include_regex);
    take!(kernel_exclude_regex, o.kernel_exclude_regex);
    take!(output_directory, o.output.output_directory);
    take!(output_file, o.output.output_file);
    take!(stats, o.output.stats);
    take!(summary, o.output.summary);
    take!(mangled_kernels, o.output.mangled_kernels);
    take!(truncate_kernels, o.output.truncate_kernels);
    if let Some(f) = &job.output_format {
        if !o.output.output_format.is_empty() && o.output.output_format != f.0 {
            return Err(format!(
                "output_format is {:?} in the file and {:?} on the command line",
                f.0, o.output.output_format
            ));
        }
        o.output.output_format = f.0.clone();
    }
    if let Some(ranges) = &job.kernel_iteration_range {
        let text = ranges
            .0
            .iter()
            .map(|r| match r.first == r.last {
                true => r.first.to_string(),
                false => format!("{}-{}", r.first, r.last),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let file = trace_records::ranges::IterationRanges::parse(&text)
            .map_err(|e| format!("kernel_iteration_range: {e}"))?;
        match o.scope.iterations()? {
            Some(cli) if cli != file => {
                return Err(format!(
                    "kernel_iteration_range is {file} in the file and {cli} on the command line"
                ));
            }
            _ => o.scope.kernel_iteration_range = vec![file.to_string()],
        }
    }
    take!(agent_index, o.output.agent_index);
    take!(log_level, o.log_level);
    let l = &mut o.launch;
    take!(disable_signal_handlers, l.disable_signal_handlers);
    if let Some(p) = job.preload.as_ref().filter(|_| l.preload.is_empty()) {
        l.preload = p.clone();
    }
    take!(rocdecode_trace, o.domains.rocdecode_trace);
    take!(rocjpeg_trace, o.domains.rocjpeg_trace);
    let s = &mut o.sampling;
    take!(pc_sampling_beta_enabled, s.pc_sampling_beta_enabled);
    take!(pc_sampling_unit, s.pc_sampling_unit);
    take!(pc_sampling_method, s.pc_sampling_method);
    take!(pc_sampling_interval, s.pc_sampling_interval);
    o.input = None;
    o.pmc.clear();
    o.pmc_occurrences.clear();
    Ok(o)
}

/// Counter groups planned on the discovered GPUs as one pass (several: multiplexed every
/// `interval` dispatches), each group's repeated names merged (and said, with its pass when
/// the run has several), what GPUs lack warned of; a refusal is said with what to do.
fn counter_plan(
    groups: &[Vec<String>],
    interval: u64,
    pass: Option<usize>,
    warmup: Option<u64>,
    counting: &mut Counting<'_>,
    report: &mut dyn Report,
) -> Result<pmc::CounterPlan> {
    for group in groups {
        let repeated: Vec<RepeatedCounter> = pmc::merge_duplicates(group)
            .repeated
            .iter()
            .map(|(name, given)| RepeatedCounter {
                name: name.clone(),
                given: *given,
            })
            .collect();
        if !repeated.is_empty() {
            report.notice(CounterNotice::Merged { pass, repeated }.into());
        }
    }
    let refused = |e| {
        anyhow!(messages::counter_refusal(
            &e,
            "no counters can be collected"
        ))
    };
    if counting.planner.is_none() {
        counting.planner = Some(Planner::discover(counting.extra).map_err(refused)?);
    }
    let planner = counting.planner.as_ref().expect("discovered above");
    let planned = planner
        .plan_groups(groups, interval, warmup)
        .map_err(refused)?;
    for l in planned.lacking {
        let (gpu, agent, names) = (l.gpu, l.agent, l.names);
        report.notice(
            CounterNotice::Lacking {
                pass,
                gpu,
                agent,
                names,
            }
            .into(),
        );
    }
    let plan = planned.plan;
    if plan.requested.is_empty() {
        report.notice(CounterNotice::NoneCollected { pass }.into());
    }
    Ok(plan)
}

/// The run's counter groups are planned on GPUs discovered once, at the first group.
struct Counting<'a> {
    /// `-E/--extra-counters`, read.
    extra: Option<&'a pmc::ExtraCounters>,
    /// The GPUs with their counters, once a group needed them.
    planner: Option<Planner>,
}

/// The runner's pass for one configuration.
fn runner_pass(p: &OptionPass, att: Option<&AttPlan>, launcher: &Launcher) -> Result<Pass> {
    let opts = &p.opts;
    let cwd = std::env::current_dir().map_err(rocprof_runner::Error::WorkingDirectory)?;
    let mut outputs = opts.output.settings(&cwd).map_err(|e| anyhow!(e))?;
    // rocprofv3's --kokkos-trace implies --kernel-rename unless it is given.
    if opts.domains.kokkos() && opts.output.kernel_rename.is_none() {
        outputs.kernel_rename = true;
    }
    Ok(Pass {
        selection: opts.selection(),
        kernel_include_regex: opts.kernel_include_regex.clone().filter(|r| !r.is_empty()),
        kernel_exclude_regex: opts.kernel_exclude_regex.clone().filter(|r| !r.is_empty()),
        counters: p.counters.clone(),
        thread_trace: att.cloned(),
        outputs,
        foreign_domains: opts.domains.requested(),
        tool_env: opts.tool_env(),
        launcher: Launcher {
            // A job's `preload` (the command line's when it gives none).
            preloads: opts.launch.preloads(&|k| std::env::var(k).ok()),
            ..launcher.clone()
        },
        repeat: opts.pmc_repeat,
        subdir: p.subdir.clone(),
    })
}

/// Runs the application (once per pass, and `--pmc-repeat` times per counter pass) and writes
/// the outputs.
pub fn run(opts: &RunOptions, app: &[OsString]) -> Result<ExitCode> {
    opts.validate().map_err(|e| anyhow!(e))?;
    if app.is_empty() {
        bail!(messages::nothing_to_run());
    }
    let report = &mut Terminal;
    let lookup = |k: &str| std::env::var(k).ok();
    // The launch options are the command line's (a job of `-i` cannot change them).
    let launcher = Launcher {
        command: app.to_vec(),
        program: opts.launch.resolve_app(&app[0]),
        preloads: opts.launch.preloads(&lookup),
        echo: opts.launch.echo == Some(true),
    };
    let (decision, warnings) = opts.launch.decide(&lookup);
    for w in warnings {
        crate::report::warn(&w);
    }
    if let crate::launch_options::RankDecision::Unprofiled(rank) = decision {
        // One write, so the lines of ranks sharing the terminal do not interleave.
        crate::report::line(&format!(
            "rank {} ({}) is not in --profile-mpi-ranks: running the application unprofiled",
            rank.rank, rank.variable
        ));
        return Ok(rocprof_runner::launch::exec_unprofiled(&launcher, report));
    }
    for n in opts.launch.notes() {
        crate::report::note(n);
    }
    let mut session = Session::prepare(report)?;
    let passes = passes(opts, report)?;
    let counting = passes.iter().any(|p| p.counters.is_some());
    let att = opts
        .att
        .config(counting)
        .map_err(|e| anyhow!(e))?
        .map(|c| rocprof_runner::thread_trace::plan(&c, report));
    if counting {
        session.check_vendor_packets(report);
    }
    if opts.selected_regions == Some(true) {
        if att.is_none() && !counting {
            crate::report::warn(
                "--selected-regions selects the dispatches of counters and thread trace only, and neither was asked for",
            );
        }
        let wsl = session.platform() == wsl_topology::Platform::Wsl;
        if wsl && !crate::sim::active() {
            crate::report::warn(
                "--selected-regions: rocprofv3 captured empty traces with it on WSL2 in testing; this rocprof follows roctxProfilerResume(0)/roctxProfilerPause(0) itself, but if the outputs are empty, select kernels with --kernel-include-regex instead",
            );
        }
    }
    if opts.pmc_repeat > 1 && !counting {
        crate::report::warn(
            "--pmc-repeat repeats counter runs only, and no counters were asked for",
        );
    }
    for d in opts.domains.requested() {
        if let Some(why) = d.before_run() {
            crate::report::warn(why);
        }
    }
    session.probe_thunk(report);
    if let Some(w) = rocprof_doctor::pairing_warning(session.layout()) {
        crate::report::warn(&w.to_string());
    }
    let passes = passes
        .iter()
        .map(|p| runner_pass(p, att.as_ref(), &launcher))
        .collect::<Result<Vec<_>>>()?;
    Ok(session.run(&passes, report)?)
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
    fn a_pmc_that_names_no_counter_is_refused() {
        for args in [
            &["--pmc", ""][..],
            &["--pmc", ",", ";"],
            &["--kernel-trace", "--pmc", " "],
            &["--pmc", "SQ_WAVES", "--pmc", ""],
        ] {
            let mut o = parse(args).unwrap();
            // As main groups them: one group per --pmc.
            o.pmc_occurrences = match args.iter().filter(|a| **a == "--pmc").count() {
                2 => vec![vec!["SQ_WAVES".into()], vec![String::new()]],
                _ => Vec::new(),
            };
            let e = o.validate().unwrap_err();
            assert!(
                e.contains("names no counter: give one or more"),
                "{args:?}: {e}"
            );
        }
        let e = parse(&["--pmc", ""]).unwrap().validate().unwrap_err();
        assert!(e.starts_with("--pmc '' names no counter"), "{e}");
        assert!(parse(&["--pmc", "SQ_WAVES,"]).unwrap().validate().is_ok());
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
        // otf2 is a format (whether its library is installed is the runner's check).
        assert!(
            parse(&["--kernel-trace", "-f", "otf2"])
                .unwrap()
                .validate()
                .is_ok()
        );
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
