//! One `rocprof doctor`: the environment gathered once, every check run in report order, the
//! self-test included.

use crate::check::Summary;
use crate::context::Context;
use crate::error::Error;
use crate::report::{Report, SCHEMA};
use crate::{app, decoder, libraries, platform, protocol, selftest, shell, variables};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

/// What `rocprof doctor` is asked (its command line, without `--json`, which only chooses how
/// the report is rendered: [`Report::render`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--att-library-path`: the thread-trace decoder's directories, as `rocprof
    /// --att-library-path` would get them.
    pub att_library_path: Vec<PathBuf>,
    /// After `--`: the application whose environment to check too (only its first word is
    /// used; the application is inspected, never run).
    pub app: Vec<OsString>,
}

/// Runs every check on this process's environment (the self-test spawns `rocprof-selftest`,
/// found next to the running executable, with `librocprof_tool.so` beside it preloaded).
/// What is wrong with the environment is in the report's checks; an [`Error`] only when the
/// doctor itself cannot run.
pub fn diagnose(options: &Options) -> Result<Report, Error> {
    let started = Instant::now();
    let ctx = Context::gather(options.att_library_path.clone());
    let mut checks = Vec::new();
    checks.extend(platform::checks(&ctx));
    let inspected = options.app.first().map(|a| app::inspect(a, &ctx));
    let runtime = inspected
        .as_ref()
        .and_then(|a| a.runtime.clone())
        .unwrap_or_else(|| protocol::DEFAULT_RUNTIME.to_owned());
    let mut test = selftest::run(&ctx, &runtime);
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
    Ok(Report {
        schema: SCHEMA,
        checks,
        summary,
        self_test: test.details(),
        app: inspected.map(|a| a.details),
        elapsed_ms: elapsed.as_millis() as u64,
        elapsed,
        notices: std::mem::take(&mut test.notices),
    })
}
