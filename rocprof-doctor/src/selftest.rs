//! The end-to-end self-test: `rocprof-selftest` (next to `rocprof`) run with the profiler
//! preloaded and a private record directory, exactly as `rocprof` runs an application, then
//! its record log read back. Four facts come out, each with its evidence: whether the runtime
//! offered its API table, whether the profiler's agent records paired with the runtime's GPUs,
//! whether a packet on a GPU queue came back, and whether a counter read came back non-zero.
//!
//! Further runs of the program (without the profiler, `hsa_init` only) tell the runtime's
//! generation by how it treats `HSA_ENABLE_DXG_DETECTION`: stock ROCm 7.2.x initialises on the
//! DXG path only with exactly `1`, current builds unless it is `0`. A run without
//! `HSA_TOOLS_DISABLE_REGISTER` tells whether that variable is the only reason a table is not
//! offered.

use crate::check::{Check, Env, and_list};
use crate::context::Context;
use crate::generation::{Generation, GenerationFinding};
use crate::libs::{self, REGISTER};
use crate::protocol::{Outcome, Request, StatusReport};
use rocprof_runner::Notice;
use rocprof_runner::record_dir::RecordDir;
use serde::Serialize;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use trace_records::ProcessTrace;
use trace_records::docs::{AgentMapping, Runtime};
use trace_records::env;

/// The self-test program's file name (next to `rocprof`).
pub const PROGRAM: &str = "rocprof-selftest";
/// The profiler library's file name (next to `rocprof`).
const TOOL: &str = "librocprof_tool.so";
/// The longest a self-test run may take before it is killed.
const LIMIT: Duration = Duration::from_secs(15);
/// `HSA_ENABLE_DXG_DETECTION`.
const DXG_DETECTION: &str = "HSA_ENABLE_DXG_DETECTION";
/// `HSA_TOOLS_DISABLE_REGISTER`.
const DISABLE_REGISTER: &str = "HSA_TOOLS_DISABLE_REGISTER";
/// The counter the self-test reads.
const COUNTER: &str = "GRBM_COUNT";

/// One run of the program.
#[derive(Debug, Default)]
pub struct Run {
    /// What it printed.
    pub outcome: Option<Outcome>,
    /// Why there is no outcome (could not start, killed, unreadable output).
    pub failure: Option<String>,
    /// Its standard error.
    pub stderr: String,
    /// The record logs the profiler wrote (a full run).
    pub traces: Vec<ProcessTrace>,
    /// Whether the profiler noted the process as one without a runtime (it never started).
    pub untraced: bool,
    /// How long it took.
    pub elapsed: Duration,
}

impl Run {
    /// A run that produced nothing, and why.
    fn failed(why: String) -> Run {
        Run {
            failure: Some(why),
            ..Run::default()
        }
    }

    fn init(&self) -> Option<&StatusReport> {
        self.outcome.as_ref()?.init.as_ref()
    }

    fn init_ok(&self) -> Option<bool> {
        self.init().map(StatusReport::success)
    }

    /// Whether the profiler received the HSA table.
    fn hsa_table(&self) -> bool {
        self.traces.iter().any(|t| t.docs.received(&Runtime::Hsa))
    }

    fn mapping(&self) -> Option<&AgentMapping> {
        self.traces.iter().find_map(|t| t.docs.mapping.as_ref())
    }

    /// The profiler's own discovery, as its record log has it.
    fn tool_discovery(&self) -> Option<&trace_records::docs::DiscoveryFacts> {
        self.traces.iter().find_map(|t| t.docs.discovery.as_ref())
    }

    /// The API calls the profiler recorded.
    fn api_calls(&self) -> usize {
        self.traces.iter().map(|t| t.api.len()).sum()
    }
}

/// An extra run with one variable changed.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// The change (`HSA_ENABLE_DXG_DETECTION=1`, `HSA_ENABLE_DXG_DETECTION unset`, …).
    pub change: String,
    /// `hsa_init`'s status then.
    pub init: Option<StatusReport>,
    /// Whether the HSA table was offered then (runs with the profiler only).
    pub table_offered: Option<bool>,
    /// Why it produced nothing.
    pub failure: Option<String>,
}

/// Everything the self-test found.
#[derive(Debug, Default)]
pub struct SelfTest {
    /// Why it could not run at all.
    pub skipped: Option<String>,
    /// The program's path.
    pub program: Option<PathBuf>,
    /// The run with the profiler, in the environment checked.
    pub main: Option<Run>,
    /// The extra runs.
    pub probes: Vec<Probe>,
    /// The runtime's generation, if known.
    pub generation: Option<GenerationFinding>,
    /// Why the counter pass was not requested.
    pub counter_plan_error: Option<String>,
    /// What reading the profiled runs' record logs had to say (a log that cannot be read), in
    /// order: `rocprof` writes them to stderr as warnings.
    pub notices: Vec<Notice>,
}

impl SelfTest {
    fn outcome(&self) -> Option<&Outcome> {
        self.main.as_ref()?.outcome.as_ref()
    }

    /// `hsa_init`'s status in the main run.
    pub fn init(&self) -> Option<&StatusReport> {
        self.main.as_ref()?.init()
    }

    /// The runtime's build version.
    pub fn build_version(&self) -> Option<&str> {
        self.outcome()?.build_version.as_deref()
    }

    /// The ROCm libraries the main run mapped.
    pub fn mapped(&self) -> &[String] {
        self.outcome().map_or(&[], |o| &o.mapped)
    }

    /// For the JSON report.
    pub fn details(&self) -> Details {
        let main = self.main.as_ref();
        Details {
            program: self.program.as_ref().map(|p| p.display().to_string()),
            skipped: self.skipped.clone(),
            outcome: main.and_then(|m| m.outcome.clone()),
            failure: main.and_then(|m| m.failure.clone()),
            stderr: main.map(|m| m.stderr.clone()).unwrap_or_default(),
            tables: main
                .map(|m| {
                    m.traces
                        .iter()
                        .flat_map(|t| t.docs.tables.iter().map(|t| runtime_name(&t.runtime)))
                        .collect()
                })
                .unwrap_or_default(),
            agent_mapping: main.and_then(|m| m.mapping().cloned()),
            api_calls: main.map_or(0, Run::api_calls),
            probes: self.probes.clone(),
            generation: self.generation.clone(),
            elapsed_ms: main.map_or(0, |m| m.elapsed.as_millis() as u64),
        }
    }
}

/// The self-test in the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct Details {
    /// The program's path (`None`: it was not found).
    pub program: Option<String>,
    /// Why it could not run at all.
    pub skipped: Option<String>,
    /// What the program reported in the run with the profiler.
    pub outcome: Option<Outcome>,
    /// Why that run produced no outcome.
    pub failure: Option<String>,
    /// That run's standard error.
    pub stderr: String,
    /// The runtimes whose API tables the profiler received (`hsa`, `hip`, …).
    pub tables: Vec<String>,
    /// How the profiler paired its agent records with the runtime's agents.
    pub agent_mapping: Option<AgentMapping>,
    /// The API calls the profiler recorded.
    pub api_calls: usize,
    /// The extra runs with one variable changed.
    pub probes: Vec<Probe>,
    /// The runtime's generation, if known.
    pub generation: Option<GenerationFinding>,
    /// Wall-clock milliseconds of the run with the profiler.
    pub elapsed_ms: u64,
}

fn runtime_name(r: &Runtime) -> String {
    match r {
        Runtime::Hsa => "hsa".into(),
        Runtime::Hip => "hip".into(),
        Runtime::HipCompiler => "hip_compiler".into(),
        Runtime::Roctx => "roctx".into(),
        Runtime::Other(n) => n.clone(),
    }
}

/// The program and the profiler library, next to `rocprof`.
fn locate() -> Result<(PathBuf, PathBuf), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate rocprof: {e}"))?;
    let dir = exe.parent().map(Path::to_owned).unwrap_or_default();
    let (program, tool) = (dir.join(PROGRAM), dir.join(TOOL));
    for p in [&program, &tool] {
        if !p.is_file() {
            return Err(format!(
                "{} is missing (it ships next to rocprof; build with `cargo xtask build`)",
                p.display()
            ));
        }
    }
    Ok((program, tool))
}

/// The counter request: `GRBM_COUNT` resolved as `rocprof --pmc GRBM_COUNT` resolves it.
fn counter_plan(ctx: &Context) -> Result<Vec<trace_records::docs::CounterEvent>, String> {
    let defs = pmc_dxg::collection::definitions().map_err(|e| format!("{e:#}"))?;
    let gpus = pmc_dxg::collection::Gpu::all(ctx.discovery.gpus(), &defs);
    pmc_dxg::collection::plan_on(&gpus, &[COUNTER.to_owned()], None)
        .map(|p| p.events)
        .map_err(|e| format!("{e:#}"))
}

/// Runs the self-test and its probes.
pub fn run(ctx: &Context, runtime: &str) -> SelfTest {
    let mut test = SelfTest::default();
    let by_file =
        libs::generation_from_file(&ctx.libs.hsa).map(|(generation, evidence)| GenerationFinding {
            generation,
            evidence,
        });
    let (program, tool) = match locate() {
        Ok(found) => found,
        Err(e) => {
            test.skipped = Some(e);
            test.generation = by_file;
            return test;
        }
    };
    test.program = Some(program.clone());
    let counters = counter_plan(ctx).unwrap_or_else(|e| {
        test.counter_plan_error = Some(e);
        Vec::new()
    });
    let request = Request {
        runtime: runtime.to_owned(),
        init_only: false,
        agents: ctx.discovery.gpus().cloned().collect(),
        counters,
    };
    let layout = ctx
        .layout
        .choice
        .as_ref()
        .filter(|_| ctx.env.get(wsl_topology::settings::ENV_LAYOUT).is_none())
        .map(|c| c.size.to_string());
    let main = profiled(
        &program,
        &tool,
        &request,
        &ctx.env,
        layout.as_deref(),
        &mut test.notices,
    );

    // The registration counterfactual: is HSA_TOOLS_DISABLE_REGISTER=1 the only reason?
    if !main.hsa_table()
        && main.init_ok() == Some(true)
        && ctx.env.get(DISABLE_REGISTER) == Some("1")
    {
        let env = ctx.env.with(DISABLE_REGISTER, None);
        let run = profiled(
            &program,
            &tool,
            &request,
            &env,
            layout.as_deref(),
            &mut test.notices,
        );
        test.probes.push(Probe {
            change: format!("{DISABLE_REGISTER} unset"),
            init: run.init().cloned(),
            table_offered: Some(run.hsa_table()),
            failure: run.failure.clone(),
        });
    }
    let behaviour = if ctx.wsl() {
        generation_by_behaviour(ctx, &program, runtime, &main, &mut test.probes)
    } else {
        None
    };
    test.generation = match (behaviour, by_file) {
        (Some(b), Some(f)) if b.generation != f.generation => Some(GenerationFinding {
            evidence: format!("{} (although it is {})", b.evidence, f.evidence),
            ..b
        }),
        (b, f) => b.or(f),
    };
    test.main = Some(main);
    test
}

/// The generation from how `hsa_init` treats `HSA_ENABLE_DXG_DETECTION`.
fn generation_by_behaviour(
    ctx: &Context,
    program: &Path,
    runtime: &str,
    main: &Run,
    probes: &mut Vec<Probe>,
) -> Option<GenerationFinding> {
    let value = ctx.env.get(DXG_DETECTION);
    let mut probe = |v: Option<&str>| -> Option<bool> {
        let env = ctx.env.with(DXG_DETECTION, v);
        let request = Request {
            runtime: runtime.to_owned(),
            init_only: true,
            ..Request::default()
        };
        let run = spawn(program, &request, &env);
        probes.push(Probe {
            change: match v {
                Some(v) => format!("{DXG_DETECTION}={v}"),
                None => format!("{DXG_DETECTION} unset"),
            },
            init: run.init().cloned(),
            table_offered: None,
            failure: run.failure.clone(),
        });
        run.init_ok()
    };
    let status = |r: &Run| r.init().map(StatusReport::describe).unwrap_or_default();
    let found = |generation, evidence: String| {
        Some(GenerationFinding {
            generation,
            evidence,
        })
    };
    let current = "DXG detection is on by default, as in current builds";
    let stock = "DXG detection is opt-in, as in the stock ROCm 7.2.x packages";
    match (main.init_ok()?, value) {
        (true, None) => found(
            Generation::Current,
            format!("hsa_init succeeds with {DXG_DETECTION} unset: {current}"),
        ),
        (true, Some("1")) => match probe(None)? {
            true => found(
                Generation::Current,
                format!("hsa_init succeeds with {DXG_DETECTION} unset too: {current}"),
            ),
            false => found(
                Generation::Stock72,
                format!("hsa_init fails with {DXG_DETECTION} unset and succeeds with 1: {stock}"),
            ),
        },
        (true, Some(v)) => found(
            Generation::Current,
            format!(
                "hsa_init succeeds with {DXG_DETECTION}='{v}', which only a runtime with DXG detection on by default accepts: {current}"
            ),
        ),
        (false, Some("1")) => None,
        (false, v) => {
            if !probe(Some("1"))? {
                return None;
            }
            match v {
                Some("0") => match probe(None)? {
                    true => found(
                        Generation::Current,
                        format!(
                            "hsa_init fails with {DXG_DETECTION}=0 ({}) and succeeds with it unset: {current}",
                            status(main)
                        ),
                    ),
                    false => found(
                        Generation::Stock72,
                        format!(
                            "hsa_init fails with {DXG_DETECTION}=0 and unset, and succeeds with 1: {stock}"
                        ),
                    ),
                },
                _ => found(
                    Generation::Stock72,
                    format!(
                        "hsa_init fails with {DXG_DETECTION} {} ({}) and succeeds with 1: {stock}",
                        v.map_or("unset".to_owned(), |v| format!("='{v}'")),
                        status(main)
                    ),
                ),
            }
        }
    }
}

/// A run with the profiler preloaded, as `rocprof` runs an application; what reading its
/// record logs had to say goes to `notices`.
fn profiled(
    program: &Path,
    tool: &Path,
    request: &Request,
    base: &Env,
    layout: Option<&str>,
    notices: &mut Vec<Notice>,
) -> Run {
    let dir = match RecordDir::create() {
        Ok(d) => d,
        Err(e) => {
            return Run::failed(e.to_string());
        }
    };
    let preload = match base.non_empty("LD_PRELOAD") {
        Some(old) => format!("{}:{old}", tool.display()),
        None => tool.display().to_string(),
    };
    let mut env = base
        .with("LD_PRELOAD", Some(&preload))
        .with(env::RECORD_DIR, Some(&dir.path().display().to_string()))
        .with(env::KERNEL_TRACE, Some("1"))
        .with(env::HSA_CORE_API_TRACE, Some("1"));
    if let Some(size) = layout {
        env = env.with(wsl_topology::settings::ENV_LAYOUT, Some(size));
    }
    let mut run = spawn(program, request, &env);
    run.traces = rocprof_runner::convert::read_traces(&dir, notices);
    run.untraced = !rocprof_runner::explain::untraced_pids(dir.path()).is_empty();
    let _ = dir.remove();
    run
}

/// Runs the program once in `env`.
fn spawn(program: &Path, request: &Request, env: &Env) -> Run {
    let started = Instant::now();
    let json = match serde_json::to_string(request) {
        Ok(j) => j,
        Err(e) => {
            return Run::failed(e.to_string());
        }
    };
    let mut cmd = Command::new(program);
    cmd.arg(json)
        .env_clear()
        .envs(env.iter())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Run::failed(format!("cannot start {}: {e}", program.display()));
        }
    };
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if started.elapsed() > LIMIT => {
                let _ = child.kill();
                killed = true;
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let outcome: Option<Outcome> = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok());
    let foreign = outcome
        .as_ref()
        .is_some_and(|o| o.schema != crate::protocol::SCHEMA);
    let failure = if foreign {
        Some(format!(
            "{} is from another version of rocprof (its report is not {})",
            program.display(),
            crate::protocol::SCHEMA
        ))
    } else if killed {
        Some(format!(
            "it did not finish within {} s and was killed",
            LIMIT.as_secs()
        ))
    } else if outcome.is_none() {
        let how = status.map_or("ended".to_owned(), |s| {
            use std::os::unix::process::ExitStatusExt as _;
            rocprof_runner::process::Status {
                code: s.code(),
                signal: s.signal(),
            }
            .describe()
        });
        Some(format!(
            "it {how} without reporting{}",
            last_line(&stderr)
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        ))
    } else {
        None
    };
    Run {
        outcome: outcome.filter(|_| !foreign),
        failure,
        stderr,
        elapsed: started.elapsed(),
        ..Run::default()
    }
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty())
}

/// The self-test's checks, in report order.
pub fn checks(ctx: &Context, test: &SelfTest) -> Vec<Check> {
    let Some(main) = &test.main else {
        let why = test
            .skipped
            .clone()
            .unwrap_or_else(|| "it did not run".into());
        return vec![Check::error(
            "self-test.init",
            format!("the self-test cannot run: {why}"),
            "install rocprof's files together (rocprof, rocprof-selftest and librocprof_tool.so in one directory)",
        )];
    };
    vec![
        init(main, test),
        table(ctx, main, test),
        agents(main),
        dispatch(main),
        counters(ctx, main, test),
    ]
}

/// Why a later step was not reached, if an earlier one stopped the test.
fn stopped(main: &Run) -> Option<String> {
    if let Some(f) = &main.failure {
        return Some(format!("the self-test failed: {f}"));
    }
    let o = main.outcome.as_ref()?;
    if let Some(e) = &o.load_error {
        return Some(format!("the runtime could not be loaded: {e}"));
    }
    match &o.init {
        Some(s) if !s.success() => Some(format!("hsa_init failed with {}", s.describe())),
        _ => None,
    }
}

fn init(main: &Run, test: &SelfTest) -> Check {
    const CHECK: &str = "self-test.init";
    if let Some(f) = &main.failure {
        return Check::error(
            CHECK,
            format!("the self-test program did not report: {f}"),
            "run it again; if it keeps failing, report it with `rocprof doctor --json`",
        );
    }
    let Some(o) = &main.outcome else {
        return Check::error(CHECK, "the self-test reported nothing", "run it again");
    };
    if let Some(e) = &o.load_error {
        return Check::error(
            CHECK,
            format!("the self-test could not load the HSA runtime: {e}"),
            "put the lib directory of the matched ROCm runtime first on LD_LIBRARY_PATH",
        );
    }
    let runtime = o.runtime_path.as_deref().unwrap_or("the HSA runtime");
    match &o.init {
        Some(s) if s.success() => {
            let agents: Vec<String> = o
                .agents
                .iter()
                .map(|a| {
                    format!(
                        "{} {}{}",
                        if a.gpu { "GPU" } else { "CPU" },
                        a.name,
                        a.node_id
                            .map(|n| format!(" (node {n})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            Check::ok(
                CHECK,
                format!(
                    "hsa_init of {runtime}{} succeeded with the profiler preloaded (the self-test took {} ms); the runtime reports {}",
                    o.build_version
                        .as_deref()
                        .map(|v| format!(" (build {v})"))
                        .unwrap_or_default(),
                    main.elapsed.as_millis(),
                    if agents.is_empty() {
                        "no agent".to_owned()
                    } else {
                        and_list(&agents)
                    }
                ),
            )
        }
        Some(s) => {
            let with_one = test
                .probes
                .iter()
                .find(|p| p.change == format!("{DXG_DETECTION}=1"))
                .and_then(|p| p.init.as_ref())
                .is_some_and(StatusReport::success);
            let (why, fix) = if with_one {
                (
                    format!("; with {DXG_DETECTION}=1 it succeeds"),
                    format!("export {DXG_DETECTION}=1 (from ~/.profile or the job script)"),
                )
            } else {
                (
                    String::new(),
                    "see lib.pair, lib.thunk-layout and the platform checks above: an hsa_init failure on WSL2 is a missing /dev/dxg or thunk, DXG detection off, or a runtime the thunk refuses".to_owned(),
                )
            };
            Check::error(
                CHECK,
                format!(
                    "hsa_init of {runtime} failed with {}{why}: every tool then reports no supported GPU devices, which reads like absent hardware",
                    s.describe()
                ),
                fix,
            )
        }
        None => Check::error(
            CHECK,
            format!(
                "the self-test did not reach hsa_init ({})",
                and_list(&o.problems)
            ),
            "run it again",
        ),
    }
}

fn table(ctx: &Context, main: &Run, test: &SelfTest) -> Check {
    const CHECK: &str = "self-test.table";
    if main.hsa_table() {
        let wrapped: usize = main
            .traces
            .iter()
            .flat_map(|t| t.docs.tables.iter())
            .filter(|t| t.runtime == Runtime::Hsa)
            .map(|t| t.wrapped)
            .sum();
        let calls = main.api_calls();
        return Check::ok(
            CHECK,
            format!(
                "the HSA runtime offered its API table to the profiler through rocprofiler-register ({wrapped} entries wrapped, {calls} HSA calls recorded)"
            ),
        );
    }
    if main.traces.is_empty() {
        let evidence = if main.untraced {
            "the profiler ran in the self-test but never started: it did not see the HSA runtime being loaded".to_owned()
        } else if let Some(why) = stopped(main) {
            format!("no record log was written ({why})")
        } else {
            "no record log was written: the profiler library never ran in the self-test process"
                .to_owned()
        };
        return Check::error(
            CHECK,
            evidence,
            "check that nothing in the environment overrides LD_PRELOAD, and install rocprof's files together",
        );
    }
    let fix_runtime = "install the HSA runtime matched with this librocdxg (see the seed's \"Matching the runtime and the DXG thunk\"): a runtime that suppresses registration on the DXG path cannot be profiled at all";
    if ctx.env.get(DISABLE_REGISTER) == Some("1") {
        let counterfactual = test
            .probes
            .iter()
            .find(|p| p.change.starts_with(DISABLE_REGISTER))
            .and_then(|p| p.table_offered);
        let (also, fix) = match counterfactual {
            Some(true) => (
                "; without it the runtime does offer the table (a self-test run with it unset)".to_owned(),
                format!("unset {DISABLE_REGISTER}"),
            ),
            Some(false) => (
                "; without it the table is still not offered: the runtime also suppresses registration on the DXG path".to_owned(),
                format!("unset {DISABLE_REGISTER}, and {fix_runtime}"),
            ),
            None => (String::new(), format!("unset {DISABLE_REGISTER}")),
        };
        return Check::error(
            CHECK,
            format!(
                "the HSA runtime never offered its API table: {DISABLE_REGISTER}=1 disables tool registration, so a real run writes no output files at all{also}"
            ),
            fix,
        );
    }
    if let Some(why) = stopped(main) {
        return Check::error(
            CHECK,
            format!(
                "the HSA runtime never offered its API table: {why}, and a runtime registers its tables as it initialises"
            ),
            "fix self-test.init first",
        );
    }
    if ctx.libs.register.chosen.is_none() {
        return Check::error(
            CHECK,
            format!(
                "the HSA runtime never offered its API table: {REGISTER} is not found, and the runtime skips registration silently without it"
            ),
            "put the ROCm install's lib directory on LD_LIBRARY_PATH",
        );
    }
    let agents = main.outcome.as_ref().map_or(0, |o| o.agents.len());
    Check::error(
        CHECK,
        format!(
            "the HSA runtime initialised ({agents} agents) but never offered its API table to rocprofiler-register, although {DISABLE_REGISTER} is not 1: a runtime that still suppresses registration on the DXG path behaves exactly like this, and a real run would run to completion and write no output files at all"
        ),
        fix_runtime,
    )
}

fn agents(main: &Run) -> Check {
    const CHECK: &str = "self-test.agents";
    let Some(m) = main.mapping() else {
        let why = if !main.hsa_table() {
            "the profiler never received the runtime's table, so it never saw a queue to pair agents on".to_owned()
        } else {
            let problems = main
                .outcome
                .as_ref()
                .map(|o| and_list(&o.problems))
                .unwrap_or_default();
            format!(
                "no queue was created{}",
                if problems.is_empty() {
                    String::new()
                } else {
                    format!(" ({problems})")
                }
            )
        };
        return Check::error(
            CHECK,
            format!("no agent pairing was recorded: {why}"),
            "fix the checks above (self-test.table first)",
        );
    };
    let names = |ids: &[u32]| -> String {
        and_list(
            &ids.iter()
                .map(|n| {
                    let name = main
                        .outcome
                        .as_ref()
                        .and_then(|o| o.agents.iter().find(|a| a.node_id == Some(*n)))
                        .map(|a| format!(" ({})", a.name))
                        .unwrap_or_default();
                    format!("node {n}{name}")
                })
                .collect::<Vec<_>>(),
        )
    };
    if !m.unmatched_gpu_node_ids.is_empty() {
        let why = main
            .tool_discovery()
            .map(|d| {
                let omissions: Vec<String> = d
                    .omissions
                    .iter()
                    .filter(|o| o.kind.is_warning())
                    .map(|o| format!("{}: {}", o.subject, o.reason))
                    .collect();
                if omissions.is_empty() {
                    format!(
                        "the profiler's discovery ran on {} ({})",
                        d.platform.name(),
                        d.detail
                    )
                } else {
                    format!("the profiler's discovery left out {}", and_list(&omissions))
                }
            })
            .unwrap_or_default();
        let paired = if m.pairs.is_empty() {
            "none paired".to_owned()
        } else {
            format!("paired: {}", names(&m.pairs))
        };
        return Check::error(
            CHECK,
            format!(
                "the runtime's GPU {} {} no agent record in the profiler, so {} cannot be profiled ({paired}); {why}",
                names(&m.unmatched_gpu_node_ids),
                if m.unmatched_gpu_node_ids.len() == 1 {
                    "has"
                } else {
                    "have"
                },
                if m.unmatched_gpu_node_ids.len() == 1 {
                    "it"
                } else {
                    "they"
                },
            ),
            "fix the cause named (discovery.agents and the platform checks above say the same)",
        );
    }
    if m.pairs.is_empty() {
        return Check::error(
            CHECK,
            "the runtime reports no GPU agent to pair with",
            "see self-test.init and discovery.agents",
        );
    }
    Check::ok(
        CHECK,
        format!(
            "the profiler's agent records paired with the runtime's agents by KMT node id: {}",
            names(&m.pairs)
        ),
    )
}

fn dispatch(main: &Run) -> Check {
    const CHECK: &str = "self-test.dispatch";
    let step = main.outcome.as_ref().and_then(|o| o.dispatch.as_ref());
    let Some(step) = step else {
        let why = stopped(main).unwrap_or_else(|| {
            main.outcome
                .as_ref()
                .map(|o| and_list(&o.problems))
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "nothing was submitted".into())
        });
        return Check::error(
            CHECK,
            format!("no packet was submitted to a GPU queue: {why}"),
            "fix the checks above",
        );
    };
    let path = if main.mapping().is_some() {
        "through the profiler's intercepted queue"
    } else {
        "not through the profiler (it never intercepted the queue)"
    };
    if step.ok {
        Check::ok(
            CHECK,
            format!("{} in {} µs, {path}", step.detail, step.micros),
        )
    } else {
        Check::error(
            CHECK,
            format!("{}, {path}", step.detail),
            "the runtime or the thunk does not execute work: check lib.pair and lib.thunk-layout",
        )
    }
}

fn counters(ctx: &Context, main: &Run, test: &SelfTest) -> Check {
    const CHECK: &str = "self-test.counters";
    let o = main.outcome.as_ref();
    let marker = o.and_then(|o| o.marker.as_ref());
    let marker_text = marker
        .map(|m| format!("; the marker packet: {}", m.detail))
        .unwrap_or_default();
    let Some(step) = o.and_then(|o| o.counters.as_ref()) else {
        if let Some(why) = stopped(main) {
            return Check::error(
                CHECK,
                format!("no counter was read: {why}"),
                "fix self-test.init first",
            );
        }
        let why = test
            .counter_plan_error
            .clone()
            .unwrap_or_else(|| "the self-test did not reach its queue".into());
        return Check::warning(
            CHECK,
            format!("no counter was read: {why}{marker_text}"),
            "see discovery.agents; `rocprof avail list` lists the counters of each GPU",
        );
    };
    if let Some(e) = &step.error {
        return Check::warning(
            CHECK,
            format!("the counter pass did not run: {e}{marker_text}"),
            "see discovery.agents",
        );
    }
    let values: Vec<String> = step
        .values
        .iter()
        .map(|v| format!("{}={}", v.name, v.value))
        .collect();
    if step.values.iter().any(|v| v.value > 0) {
        return Check::ok(
            CHECK,
            format!(
                "a counter read came back non-zero ({}): the counter pass's start, read and stop PM4-IB packets reached the GPU{marker_text}",
                and_list(&values)
            ),
        );
    }
    let dropped = marker.is_some_and(|m| !m.ok);
    let gate = ctx.env.get(wsl_topology::settings::ENV_VENDOR_PACKET);
    if dropped {
        if let Some(v) = gate.filter(|v| *v != "1") {
            return Check::warning(
                CHECK,
                format!(
                    "the counter read came back zero ({}){marker_text}: with {}={v} the DXG thunk drops vendor (PM4) packets, so every hardware counter reads 0",
                    and_list(&values),
                    wsl_topology::settings::ENV_VENDOR_PACKET
                ),
                format!(
                    "unset {} or set it to 1",
                    wsl_topology::settings::ENV_VENDOR_PACKET
                ),
            );
        }
        let tool_platform = main.tool_discovery().map(|d| d.platform);
        if gate.is_none() && tool_platform.is_some_and(|p| p != wsl_topology::Platform::Wsl) {
            return Check::error(
                CHECK,
                format!(
                    "the counter read came back zero ({}){marker_text}: the profiler's discovery did not select WSL (it ran on {}), so it did not set WSLKMT_VENDOR_PACKET=1, and the thunk drops vendor PM4 packets without it",
                    and_list(&values),
                    tool_platform.map_or("?", |p| p.name())
                ),
                "fix the platform checks above (platform.dxg, env.force-platform)",
            );
        }
        return Check::error(
            CHECK,
            format!(
                "the counter read came back zero ({}){marker_text}, although {} (the profiler sets it to 1 before the thunk loads): the thunk drops vendor PM4 packets, so every hardware counter reads 0",
                and_list(&values),
                gate.map_or("WSLKMT_VENDOR_PACKET is unset".to_owned(), |v| format!(
                    "WSLKMT_VENDOR_PACKET={v}"
                ))
            ),
            "install a librocdxg that honours WSLKMT_VENDOR_PACKET=1 (the one matched with your HSA runtime)",
        );
    }
    Check::warning(
        CHECK,
        format!(
            "the counter read came back zero ({}) although vendor packets execute{marker_text}: GRBM counters read zero at the start of some sessions on WSL2 (the seed's known issue), which a short self-test cannot tell from a fault",
            and_list(&values)
        ),
        "run `rocprof doctor` again; when GRBM-derived metrics matter, discard the first 300 ms of dispatches (--pmc-discard-warmup 300)",
    )
}
