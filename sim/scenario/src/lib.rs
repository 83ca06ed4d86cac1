//! Scenario model of the simulated WSL2 ROCm stack.
//!
//! Both simulated libraries (`libdxcore.so` from `sim-dxcore`, `librocdxg.so` from
//! `sim-rocdxg`) read the same scenario: a TOML file named by `WSLSIM_SCENARIO`, or the
//! built-in Radeon 890M machine when the variable is unset. [`current`] reads it once per
//! library copy. A file that cannot be used prints one line per process,
//! `wslsim: cannot use scenario <path>: <reason>` (none when `WSLSIM_SCENARIO_REPORTED` says
//! `rocprof --sim` already printed it), and the libraries then simulate an empty machine, so
//! nothing crashes.
//!
//! The crate also holds what both libraries share: the call log ([`log_call`], env
//! `WSLSIM_CALL_LOG`) and load-time export hiding ([`hide_exports`]).
//!
//! This crate is simulator-only; no product crate may depend on it.

mod calllog;
mod elf;
mod gpu;
#[doc(hidden)]
pub mod harness;
mod model;
mod once;
mod runtime;
mod schema;

use std::ffi::c_void;
use std::path::Path;
use std::sync::OnceLock;

pub use calllog::{CALL_LOG_ENV, append_line, call_log_enabled, log_call, ntstatus};
pub use elf::{gnu_hash, hide_exports, in_shared_object, object_path, sysv_hash};
pub use gpu::{Counters, Gpu};
pub use model::{
    AbiCheck, Adapter, AdapterQuery, BUS_TYPE_PCI, Cpu, Dxcore, EngineId, Faults, GpuNode, Luid,
    Machine, Scenario, Thunk, ThunkCopy, WriteSize,
};
pub use runtime::{Generation, Runtime};
pub use schema::{MAX_LAYOUT, NODE_NAME_ELEMENTS, REGISTRY_STRING_CHARS, check_layout};

/// Environment variable naming the scenario TOML file.
pub const SCENARIO_ENV: &str = "WSLSIM_SCENARIO";

impl Scenario {
    /// Parses scenario TOML text. The error is a single line.
    pub fn from_toml_str(text: &str) -> Result<Scenario, String> {
        schema::resolve(schema::parse(text)?)
    }

    /// Reads and parses a scenario file. The error is a single line (without the path).
    pub fn from_file(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
        Scenario::from_toml_str(&text)
    }
}

/// The result of choosing a scenario: what to simulate, and what to tell the user.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The scenario to simulate (the empty machine if the file could not be used).
    pub scenario: Scenario,
    /// The one-line diagnostic to print on stderr, if the file could not be used.
    pub diagnostic: Option<String>,
}

/// Chooses the scenario for an optional file path: `None` (or an empty path) is the built-in
/// default; a file that cannot be used gives the empty machine plus a diagnostic line.
pub fn load(path: Option<&Path>) -> Loaded {
    let Some(path) = path.filter(|path| !path.as_os_str().is_empty()) else {
        return Loaded {
            scenario: Scenario::default(),
            diagnostic: None,
        };
    };
    match Scenario::from_file(path) {
        Ok(scenario) => Loaded {
            scenario,
            diagnostic: None,
        },
        Err(reason) => Loaded {
            scenario: Scenario::empty(),
            diagnostic: Some(format!(
                "wslsim: cannot use scenario {}: {reason}",
                path.display()
            )),
        },
    }
}

/// Chooses the scenario named by `WSLSIM_SCENARIO` (see [`load`]).
pub fn load_from_env() -> Loaded {
    let path = std::env::var_os(SCENARIO_ENV);
    load(path.as_deref().map(Path::new))
}

/// Set (to anything) by `rocprof --sim` once it has printed the scenario's diagnostic itself
/// ([`current_diagnostic`], exported by libdxcore as `wslsim_scenario_diagnostic`): the
/// libraries then stay quiet in every process of the run, so the line appears once.
pub const REPORTED_ENV: &str = "WSLSIM_SCENARIO_REPORTED";

/// The process's scenario choice (this library copy's), read on first use.
fn loaded() -> &'static Loaded {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    LOADED.get_or_init(load_from_env)
}

/// The process's scenario, read from `WSLSIM_SCENARIO` on first use.
///
/// The diagnostic of an unusable file is printed on stderr once per process, even when both
/// simulated libraries (each with its own copy of this crate) are loaded — and not at all when
/// [`REPORTED_ENV`] says the launcher already printed it.
pub fn current() -> &'static Scenario {
    static SAID: std::sync::Once = std::sync::Once::new();
    let loaded = loaded();
    if let Some(line) = &loaded.diagnostic {
        SAID.call_once(|| {
            if std::env::var_os(REPORTED_ENV).is_none()
                && once::first_in_process("scenario-diagnostic")
            {
                eprintln!("{line}");
            }
        });
    }
    &loaded.scenario
}

/// The one-line diagnostic of the process's scenario (`None` when it is usable), without
/// printing it.
pub fn current_diagnostic() -> Option<&'static str> {
    loaded().diagnostic.as_deref()
}

/// What a simulated library's ELF constructor does: log `<lib> loaded pid=<pid> path=<path>`
/// and hide the scenario's hidden exports, printing `wslsim: cannot hide export ...` lines for
/// the ones that cannot be hidden (each once per process, however often the library is
/// loaded).
///
/// Export hiding is skipped when `anchor` lies in the main program (the library's code linked
/// into a test executable rather than loaded as the shared object).
///
/// # Safety
///
/// As for [`hide_exports`]: call it only from the library's own ELF constructor, with
/// `anchor` one of the library's functions.
pub unsafe fn on_library_load(lib: &str, anchor: *const c_void, hidden: &[String]) {
    let path = object_path(anchor);
    log_call(
        lib,
        format_args!(
            "loaded pid={} path={}",
            std::process::id(),
            path.as_deref().unwrap_or("?")
        ),
    );
    if hidden.is_empty() {
        return;
    }
    // SAFETY: forwarded from this function's own contract.
    if let Err(error) = unsafe { elf::hide_exports_in_library(anchor, path.as_deref(), hidden) } {
        // A library unloaded and loaded again hides its exports again, but says so once.
        for line in error.lines() {
            if once::first_in_process(&format!("{lib}-{}", gnu_hash(line.as_bytes()))) {
                eprintln!("wslsim: {line}");
            }
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the host time every simulated library (and its tests)
/// stamps and compares GPU work with.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid, exclusively borrowed location.
    // CLOCK_MONOTONIC is always available on Linux, so the result is not checked.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

/// The body of a simulated library's C export: runs `body`, which returns the export's result
/// and its call-log arguments, without letting a panic cross the C boundary, and logs one line
/// `<lib> <name> <args> -> <result>` (no space before empty `args`), or
/// `<lib> <name> panicked -> <on_panic>` when `body` panicked (the export then returns
/// `on_panic`). `show` formats a result for the log.
pub fn run_export<T: Copy, D: std::fmt::Display>(
    lib: &str,
    name: &str,
    on_panic: T,
    show: impl Fn(T) -> D,
    body: impl FnOnce() -> (T, String),
) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok((result, args)) => {
            let space = if args.is_empty() { "" } else { " " };
            log_call(lib, format_args!("{name}{space}{args} -> {}", show(result)));
            result
        }
        Err(_) => {
            log_call(lib, format_args!("{name} panicked -> {}", show(on_panic)));
            on_panic
        }
    }
}

#[cfg(test)]
mod tests;
