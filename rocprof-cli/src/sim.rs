//! `--sim`: run against the simulated WSL2 stack built next to the executable.
//!
//! The loader reads `LD_LIBRARY_PATH` once, at process start, so the simulated libraries
//! cannot be put on the search path of a running process. `--sim` therefore re-executes
//! `rocprof` with the simulated stack's `lib/` first on `LD_LIBRARY_PATH` and its stand-in for
//! `/dev/dxg` named in `ROCPROF_DXG_DEVICE`; everything after that runs exactly as it would
//! against the real libraries.

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// Set in the re-executed process so it does not re-execute again.
const ACTIVE: &str = "ROCPROF_SIM_ACTIVE";
/// Overrides where the simulated stack lives (default: `sim/` next to the executable).
pub const SIM_DIR: &str = "ROCPROF_SIM_DIR";

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

/// Makes this process run against the simulated stack (re-executing it if needed).
pub fn enter() -> Result<()> {
    if std::env::var_os(ACTIVE).is_some() {
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
    let path = crate::run::prepended("LD_LIBRARY_PATH", lib.into_os_string());
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(std::env::args_os().skip(1))
        .env(ACTIVE, "1")
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
