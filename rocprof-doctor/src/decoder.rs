//! Thread trace after the run: the rocprof-trace-decoder library (`--att-library-path`, else
//! `ROCPROF_ATT_LIBRARY_PATH`, else `LD_LIBRARY_PATH` and `<ROCm>/lib`, searched as rocprofv3
//! searches) and comgr (by soname), which names the instructions.

use crate::check::Check;
use crate::context::Context;
use att::library::{ENV_ATT_LIBRARY_PATH, SearchEnv};
use std::ffi::OsString;

/// The decoder and comgr checks.
pub fn checks(ctx: &Context) -> Vec<Check> {
    vec![decoder(ctx), comgr()]
}

fn decoder(ctx: &Context) -> Check {
    const CHECK: &str = "att.decoder";
    let search = SearchEnv {
        att_library_path: ctx.env.get(ENV_ATT_LIBRARY_PATH).map(OsString::from),
        ld_library_path: ctx.env.get("LD_LIBRARY_PATH").map(OsString::from),
        rocm_path: ctx.env.get("ROCM_PATH").map(OsString::from),
    };
    let source = if !ctx.att_dirs.is_empty() {
        "--att-library-path".to_owned()
    } else if ctx.env.non_empty(ENV_ATT_LIBRARY_PATH).is_some() {
        ENV_ATT_LIBRARY_PATH.to_owned()
    } else {
        "LD_LIBRARY_PATH and <ROCm>/lib".to_owned()
    };
    let dirs: Vec<String> = att::library::search_dirs(&ctx.att_dirs, &search)
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let result = att::library::probe_trusted(&ctx.att_dirs, &search);
    let empty_var = ctx.att_dirs.is_empty() && ctx.env.get(ENV_ATT_LIBRARY_PATH) == Some("");
    let fix = format!(
        "install ROCm's rocprof-trace-decoder and point --att-library-path or {ENV_ATT_LIBRARY_PATH} at the directory that holds librocprof-trace-decoder.so"
    );
    match result {
        Ok(path) if empty_var => Check::warning(
            CHECK,
            format!(
                "{ENV_ATT_LIBRARY_PATH} is set but empty (an unset shell variable in its export?), so it is ignored; the decoder was found along {source} instead: {}",
                path.display()
            ),
            format!("set {ENV_ATT_LIBRARY_PATH} to the decoder's directory, or unset it"),
        ),
        Ok(path) => Check::ok(
            CHECK,
            format!(
                "{} (found through {source}) loads and exports the decoder's three V1 entry points",
                path.display()
            ),
        ),
        Err(e) => {
            let note = if empty_var {
                format!(" ({ENV_ATT_LIBRARY_PATH} is set but empty, so it is ignored)")
            } else {
                String::new()
            };
            Check::warning(
                CHECK,
                format!(
                    "{e}{note} (searched through {source}: {}): --att still captures the thread trace and writes its raw .att and .out files, but cannot decode them",
                    dirs.join(", ")
                ),
                fix,
            )
        }
    }
}

fn comgr() -> Check {
    const CHECK: &str = "att.comgr";
    match att::comgr::Comgr::open_trusted() {
        Ok(c) => {
            let (major, minor) = c.version();
            Check::ok(
                CHECK,
                format!(
                    "{} (comgr {major}.{minor}) disassembles the traced kernels' instructions",
                    c.path().display()
                ),
            )
        }
        Err(e) => Check::warning(
            CHECK,
            format!(
                "{e}: a decoded thread trace names instructions by address and assumes 4-byte instructions"
            ),
            "put the ROCm install's lib directory (libamd_comgr.so.3) on LD_LIBRARY_PATH",
        ),
    }
}
