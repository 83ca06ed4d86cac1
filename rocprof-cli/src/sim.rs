//! `--sim`: run against the simulated WSL2 stack built next to the executable.
//!
//! The loader reads `LD_LIBRARY_PATH` once, at process start, so the simulated libraries
//! cannot be put on the search path of a running process. `--sim` therefore re-executes
//! `rocprof` with the simulated stack's `lib/` first on `LD_LIBRARY_PATH` and its stand-in for
//! `/dev/dxg` named in `ROCPROF_DXG_DEVICE`; everything after that runs exactly as it would
//! against the real libraries.
//!
//! A scenario file the simulator cannot use is reported once, here, before anything runs:
//! the re-executed `rocprof` asks the simulated libdxcore (`wslsim_scenario_diagnostic`, looked
//! up with `dlopen`/`dlsym`, so this crate depends on nothing of the simulator), prints the
//! line, and `WSLSIM_SCENARIO_REPORTED` keeps the libraries quiet in every process.

#![allow(unsafe_code)]

use anyhow::{Context, Result, bail};
use std::ffi::{CStr, CString, c_char};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Set in the re-executed process so it does not re-execute again.
const ACTIVE: &str = "ROCPROF_SIM_ACTIVE";
/// Overrides where the simulated stack lives (default: `sim/` next to the executable).
pub const SIM_DIR: &str = "ROCPROF_SIM_DIR";
/// Tells the simulated libraries that the scenario's diagnostic was printed already.
const SCENARIO_REPORTED: &str = "WSLSIM_SCENARIO_REPORTED";
/// libdxcore's export that returns the scenario's diagnostic (or null).
const DIAGNOSTIC_SYMBOL: &CStr = c"wslsim_scenario_diagnostic";

/// The simulated stack's directory.
pub fn sim_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(SIM_DIR) {
        return Ok(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().context("cannot locate the rocprof executable")?;
    Ok(exe
        .parent()
        .map(|d| d.join("sim"))
        .unwrap_or_else(|| PathBuf::from("sim")))
}

/// Whether this process runs against the simulated stack (`--sim`).
pub fn active() -> bool {
    std::env::var_os(ACTIVE).is_some()
}

/// Makes this process run against the simulated stack (re-executing it if needed), and
/// reports a scenario the simulator cannot use.
pub fn enter() -> Result<()> {
    if std::env::var_os(ACTIVE).is_some() {
        report_scenario(&sim_dir()?.join("lib").join("libdxcore.so"));
        return Ok(());
    }
    let dir = sim_dir()?;
    let lib = dir.join("lib");
    if !lib.join("librocdxg.so").exists() || !lib.join("libdxcore.so").exists() {
        bail!(
            "the simulated WSL2 stack is not built at {} (expected lib/libdxcore.so and lib/librocdxg.so there); run `cargo xtask build` first, or set {SIM_DIR}",
            dir.display()
        );
    }
    let path = rocprof_runner::launch::prepended("LD_LIBRARY_PATH", lib.into_os_string());
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(std::env::args_os().skip(1))
        .env(ACTIVE, "1")
        .env(SCENARIO_REPORTED, "1")
        .env("LD_LIBRARY_PATH", path);
    if std::env::var_os(wsl_topology::settings::ENV_DXG_DEVICE).is_none() {
        cmd.env(
            wsl_topology::settings::ENV_DXG_DEVICE,
            dir.join("dev").join("dxg"),
        );
    }
    let err = cmd.exec();
    Err(err).context("cannot re-execute rocprof with the simulated stack")
}

/// Prints the scenario diagnostic of the simulated libdxcore at `lib`, if it has one.
fn report_scenario(lib: &Path) {
    match scenario_diagnostic(lib) {
        Ok(Some(line)) => eprintln!("{line}"),
        Ok(None) => {}
        Err(why) => eprintln!(
            "rocprof: warning: {}",
            crate::messages::sim_diagnostic_unavailable(lib, &why)
        ),
    }
}

/// Asks the simulated libdxcore at `lib` for its scenario's diagnostic. The library stays
/// loaded (discovery uses it next, and the text lives in it).
fn scenario_diagnostic(lib: &Path) -> Result<Option<String>, String> {
    let path = CString::new(lib.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; the library is the simulator's own libdxcore, whose
    // constructor only reads the scenario (quietly: WSLSIM_SCENARIO_REPORTED is set).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(dl_error());
    }
    // SAFETY: a valid handle (never closed) and a NUL-terminated symbol name.
    let symbol = unsafe { libc::dlsym(handle, DIAGNOSTIC_SYMBOL.as_ptr()) };
    if symbol.is_null() {
        return Err(dl_error());
    }
    // SAFETY: the simulator exports `const char *wslsim_scenario_diagnostic(void)`; the
    // handle is never closed, so the function stays mapped.
    let diagnostic: extern "C" fn() -> *const c_char = unsafe { std::mem::transmute(symbol) };
    let text = diagnostic();
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, NUL-terminated, and valid while the library stays loaded (forever).
    Ok(Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    ))
}

/// The loader's last error, in words.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call
    // on this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown loader error".into()
    } else {
        // SAFETY: see above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}
