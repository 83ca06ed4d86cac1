//! `rocprof doctor -- app args…`: the application is inspected, never run. What is checked:
//!
//! * that it is found (on `PATH` for a bare name) and executable;
//! * what the loader starts: the program itself, or a script's interpreter (`#!`, through
//!   `/usr/bin/env` too) — and whether the script drops `LD_PRELOAD` or the environment
//!   (`env -i`, `unset LD_PRELOAD`), which would keep the profiler out of what it starts;
//! * that the program is dynamically linked, x86-64, and not set-user-ID or set-group-ID: a
//!   static program ignores `LD_PRELOAD`, and secure-execution mode ignores `LD_LIBRARY_PATH`;
//! * which ROCm libraries its `DT_NEEDED` names and where its `DT_RPATH`/`DT_RUNPATH` and the
//!   environment resolve them (and, through HIP, the HSA runtime): the self-test then loads
//!   that HSA runtime, not the one `LD_LIBRARY_PATH` alone gives.
//!
//! The arguments are not used.

use crate::check::{Check, and_list};
use crate::context::Context;
use crate::libs::describe;
use crate::loader::{Object, Resolution, Via, same_file};
use serde::Serialize;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The ROCm libraries looked for among `DT_NEEDED` (file-name stems).
const ROCM: [&str; 4] = [
    "libamdhip64.so",
    "libhsa-runtime64.so",
    "librocprofiler-sdk-roctx.so",
    "librocdxg.so",
];

/// `libamdhip64.so.7` → `libamdhip64.so`.
fn stem(name: &str) -> &str {
    name.find(".so").map_or(name, |i| &name[..i + 3])
}

/// What was found.
pub struct Inspected {
    /// The `app` and `app.libraries` checks.
    pub checks: Vec<Check>,
    /// The HSA runtime the application would load (a path), when it links one.
    pub runtime: Option<String>,
    /// For the JSON report.
    pub details: Details,
}

/// The application in the JSON report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Details {
    /// As given.
    pub argv0: String,
    /// The file found.
    pub path: Option<String>,
    /// A script's interpreter (what the loader starts).
    pub interpreter: Option<String>,
    /// `DT_NEEDED` of the program the loader starts.
    pub needed: Vec<String>,
    /// Its `DT_RPATH`.
    pub rpath: Option<String>,
    /// Its `DT_RUNPATH`.
    pub runpath: Option<String>,
    /// Where its ROCm libraries resolve.
    pub libraries: Vec<Resolution>,
}

/// A bare name along `PATH`, as `execvp` finds it.
fn find_on_path(name: &str, path: Option<&str>) -> Option<PathBuf> {
    path.unwrap_or("/usr/local/bin:/usr/bin:/bin")
        .split(':')
        .map(|d| Path::new(if d.is_empty() { "." } else { d }).join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn error(argv0: &str, evidence: String, fix: &str) -> Inspected {
    Inspected {
        checks: vec![Check::error("app", evidence, fix)],
        runtime: None,
        details: Details {
            argv0: argv0.to_owned(),
            ..Details::default()
        },
    }
}

/// A script's `#!` line: the interpreter and its optional argument.
fn shebang(path: &Path) -> Option<(String, Option<String>)> {
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(path).ok()?, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.strip_prefix("#!")?.lines().next()?.trim().to_owned();
    let mut parts = line.splitn(2, char::is_whitespace);
    let interp = parts.next()?.to_owned();
    let arg = parts
        .next()
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty());
    Some((interp, arg))
}

/// Lines of a script that keep the environment (or the preload) from what it starts.
fn drops_environment(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read(path) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&text[..text.len().min(1 << 20)]).into_owned();
    text.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let line = raw.trim();
            if line.starts_with('#') {
                return None;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let env_i = words
                .windows(2)
                .any(|w| w[0] == "env" && (w[1] == "-i" || w[1] == "--ignore-environment"));
            let unset = words
                .windows(2)
                .any(|w| w[0] == "unset" && (w[1] == "LD_PRELOAD" || w[1] == "LD_LIBRARY_PATH"));
            let assigns = words.iter().any(|w| w.starts_with("LD_PRELOAD="));
            (env_i || unset || assigns).then(|| format!("line {}: {line}", i + 1))
        })
        .collect()
}

/// Inspects `argv0` in the checked environment.
pub fn inspect(argv0: &OsStr, ctx: &Context) -> Inspected {
    let name = argv0.to_string_lossy().into_owned();
    let found = if name.contains('/') {
        Some(PathBuf::from(&name)).filter(|p| p.exists())
    } else {
        find_on_path(&name, ctx.env.get("PATH"))
    };
    let Some(path) = found else {
        return error(
            &name,
            format!(
                "{name} is not found{}: rocprof cannot start it",
                if name.contains('/') { "" } else { " on PATH" }
            ),
            "give its path, or fix PATH",
        );
    };
    let meta = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m,
        _ => {
            return error(
                &name,
                format!("{} is not a file", path.display()),
                "give the application's executable",
            );
        }
    };
    if meta.permissions().mode() & 0o111 == 0 {
        return error(
            &name,
            format!("{} is not executable", path.display()),
            "chmod +x it, or run it through its interpreter",
        );
    }
    let mut details = Details {
        argv0: name.clone(),
        path: Some(path.display().to_string()),
        ..Details::default()
    };
    let mut checks = Vec::new();
    // What the loader starts.
    let (program, script_note) = match shebang(&path) {
        Some((interp, arg)) => {
            let started = if Path::new(&interp).file_name() == Some(OsStr::new("env")) {
                let prog = arg
                    .as_deref()
                    .and_then(|a| a.split_whitespace().find(|w| !w.starts_with('-')))
                    .unwrap_or_default()
                    .to_owned();
                find_on_path(&prog, ctx.env.get("PATH"))
            } else {
                Some(PathBuf::from(&interp))
            };
            let Some(started) = started.filter(|p| p.exists()) else {
                return error(
                    &name,
                    format!(
                        "{} is a script whose interpreter ({interp}{}) is not found",
                        path.display(),
                        arg.map(|a| format!(" {a}")).unwrap_or_default()
                    ),
                    "install the interpreter or fix the #! line",
                );
            };
            details.interpreter = Some(started.display().to_string());
            let drops = drops_environment(&path);
            if !drops.is_empty() {
                checks.push(Check::warning(
                    "app.script",
                    format!(
                        "{} is a script that changes the environment of what it starts ({}): the profiler, preloaded through LD_PRELOAD, does not reach those processes",
                        path.display(),
                        drops.join("; ")
                    ),
                    "keep LD_PRELOAD and the environment for the GPU processes the script starts, or profile the GPU program directly",
                ));
            }
            (
                started.clone(),
                format!(
                    "a script run by {} (LD_PRELOAD reaches the interpreter, and what it starts as long as the environment is passed on)",
                    started.display()
                ),
            )
        }
        None => (path.clone(), String::new()),
    };
    let object = match Object::read(&program) {
        Ok(o) => o,
        Err(e) => {
            return error(
                &name,
                format!(
                    "{}: {e}: neither an ELF program nor a script",
                    program.display()
                ),
                "give the application's executable",
            );
        }
    };
    details.needed = object.elf.needed.clone();
    details.rpath = object.elf.rpath.clone();
    details.runpath = object.elf.runpath.clone();
    let program_meta = std::fs::metadata(&program).ok();
    // A program the profiler cannot get into: that one error, nothing further inspected.
    let refusal = if !object.elf.loadable_here() {
        Some(Check::error(
            "app",
            format!(
                "{} is built for ELF machine {}, not x86-64",
                program.display(),
                object.elf.machine
            ),
            "build the application for x86-64",
        ))
    } else if object.elf.interp.is_none() {
        Some(Check::error(
            "app",
            format!(
                "{} is statically linked: it ignores LD_PRELOAD, so the profiler never runs inside it and nothing is recorded",
                program.display()
            ),
            "profile a dynamically linked build of the application",
        ))
    } else if program_meta.is_some_and(|m| m.permissions().mode() & 0o6000 != 0) {
        Some(Check::error(
            "app",
            format!(
                "{} is set-user-ID or set-group-ID: the loader runs it in secure-execution mode, which ignores LD_LIBRARY_PATH and any LD_PRELOAD path outside the system directories, so the profiler never runs inside it",
                program.display()
            ),
            "profile a copy without the set-ID bits",
        ))
    } else {
        None
    };
    if let Some(c) = refusal {
        checks.push(c);
        return Inspected {
            checks,
            runtime: None,
            details,
        };
    }
    let kind = if script_note.is_empty() {
        format!(
            "a dynamically linked x86-64 program (interpreter {})",
            object.elf.interp.as_deref().unwrap_or("?")
        )
    } else {
        script_note
    };
    checks.insert(
        0,
        Check::ok(
            "app",
            format!(
                "{}: {kind}; doctor inspects it but does not run it (its arguments are not used)",
                path.display()
            ),
        ),
    );
    let (check, runtime, libraries) = libraries(ctx, &object);
    details.libraries = libraries;
    checks.push(check);
    Inspected {
        checks,
        runtime,
        details,
    }
}

/// The `app.libraries` check, the HSA runtime the application loads, and every resolution.
fn libraries(ctx: &Context, exe: &Object) -> (Check, Option<String>, Vec<Resolution>) {
    const CHECK: &str = "app.libraries";
    let rocm_needed: Vec<&String> = exe
        .elf
        .needed
        .iter()
        .filter(|n| ROCM.iter().any(|s| n.starts_with(s)))
        .collect();
    let mut resolutions: Vec<Resolution> = rocm_needed
        .iter()
        .map(|n| ctx.loader.resolve(n, Some(exe), Some(exe)))
        .collect();
    // The HSA runtime: needed directly, or by HIP.
    let direct = resolutions
        .iter()
        .find(|r| r.name.starts_with("libhsa-runtime64.so"))
        .cloned();
    let through_hip = || -> Option<Resolution> {
        let hip = resolutions
            .iter()
            .find(|r| r.name.starts_with("libamdhip64.so"))?
            .chosen
            .clone()?;
        let hip = Object::read(&hip.real).ok()?;
        let name = hip
            .elf
            .needed
            .iter()
            .find(|n| n.starts_with("libhsa-runtime64.so"))?
            .clone();
        Some(ctx.loader.resolve(&name, Some(&hip), Some(exe)))
    };
    let hsa = direct.or_else(through_hip);
    if let Some(h) = &hsa
        && !resolutions.iter().any(|r| r.name == h.name)
    {
        resolutions.push(h.clone());
    }
    let runtime = hsa
        .as_ref()
        .and_then(|h| h.chosen.as_ref())
        .map(|f| f.real.display().to_string());
    if rocm_needed.is_empty() {
        return (
            Check::ok(
                CHECK,
                format!(
                    "{} links no ROCm library directly (it may load one with dlopen; then LD_LIBRARY_PATH decides, as checked above)",
                    exe.real.display()
                ),
            ),
            None,
            resolutions,
        );
    }
    let listed: Vec<String> = resolutions
        .iter()
        .map(|r| describe(r, stem(&r.name)).replace(" resolves to ", " → "))
        .collect();
    let missing: Vec<&Resolution> = resolutions.iter().filter(|r| r.chosen.is_none()).collect();
    if !missing.is_empty() {
        return (
            Check::error(
                CHECK,
                format!(
                    "the application needs {} (its DT_NEEDED), which {} not found: it cannot start",
                    and_list(&missing.iter().map(|r| r.name.clone()).collect::<Vec<_>>()),
                    if missing.len() == 1 { "is" } else { "are" }
                ),
                "put the ROCm install's lib directory on LD_LIBRARY_PATH",
            ),
            runtime,
            resolutions,
        );
    }
    let rpath_hit = resolutions
        .iter()
        .filter_map(|r| r.chosen.as_ref())
        .any(|f| f.via == Via::Rpath);
    let plain = ctx.libs.hsa.chosen.as_ref();
    let differs = match (hsa.as_ref().and_then(|h| h.chosen.as_ref()), plain) {
        (Some(app), Some(env)) => !same_file(&app.real, &env.real),
        _ => false,
    };
    if differs {
        let app = hsa
            .as_ref()
            .and_then(|h| h.chosen.as_ref())
            .map(|f| f.describe())
            .unwrap_or_default();
        return (
            Check::warning(
                CHECK,
                format!(
                    "{}; the application's own search path makes it load the HSA runtime {app}, not {} that LD_LIBRARY_PATH gives{} (the self-test loaded the application's)",
                    listed.join("; "),
                    plain.map(|f| f.describe()).unwrap_or_default(),
                    if rpath_hit {
                        ": DT_RPATH is searched before LD_LIBRARY_PATH, so an LD_LIBRARY_PATH override does not reach this application"
                    } else {
                        ""
                    }
                ),
                "rebuild the application without the ROCm directory in its DT_RPATH/DT_RUNPATH, or install the matched runtime there",
            ),
            runtime,
            resolutions,
        );
    }
    (Check::ok(CHECK, listed.join("; ")), runtime, resolutions)
}
