//! The steering variables of the seed: `HSA_TOOLS_DISABLE_REGISTER`, `HSA_ENABLE_DXG_DETECTION`
//! (against the runtime's generation), `WSLKMT_VENDOR_PACKET`, the late-attach marker,
//! `ROCPROFILER_FORCE_GFX` and this project's `ROCPROF_HSAKMT_LAYOUT`.

use crate::check::Check;
use crate::context::{Context, is_override};
use crate::generation::Generation;
use crate::selftest::SelfTest;
use wsl_topology::settings::{ENV_ATTACH_MARKER, ENV_FORCE_GFX, ENV_LAYOUT, ENV_VENDOR_PACKET};

/// The variable checks, in report order.
pub fn checks(ctx: &Context, test: &SelfTest) -> Vec<Check> {
    vec![
        disable_register(ctx),
        dxg_detection(ctx, test),
        vendor_packet(ctx, test),
        late_attach(ctx),
        force_gfx(ctx),
        layout(ctx),
    ]
}

fn disable_register(ctx: &Context) -> Check {
    const CHECK: &str = "env.disable-register";
    const VAR: &str = "HSA_TOOLS_DISABLE_REGISTER";
    match ctx.env.get(VAR) {
        None => Check::ok(CHECK, format!("{VAR} is unset")),
        Some("1") => Check::error(
            CHECK,
            format!(
                "{VAR}=1: the HSA runtime's general opt-out of tool registration (not a WSL variable) — rocprofiler-register gets no HSA API table, so a run writes no output files at all, not even empty ones"
            ),
            format!(
                "unset {VAR} (a 1 exported elsewhere for unrelated reasons suppresses profiling here too)"
            ),
        ),
        Some(v) => Check::ok(
            CHECK,
            format!("{VAR}='{v}': only exactly 1 disables registration, so this does not"),
        ),
    }
}

fn dxg_detection(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "env.dxg-detection";
    const VAR: &str = "HSA_ENABLE_DXG_DETECTION";
    let generation = test.generation.as_ref();
    let known = generation
        .map(|g| format!(" ({}: {})", g.generation.describe(), g.evidence))
        .unwrap_or_default();
    let export = format!("export {VAR}=1 from ~/.profile or the job script");
    match ctx.env.get(VAR) {
        Some("0") => Check::error(
            CHECK,
            format!(
                "{VAR}=0 disables the DXG path on any runtime: hsa_init fails and every tool reports no supported GPU devices{known}"
            ),
            format!("never set it to 0 on WSL2: unset it, or {export}"),
        ),
        Some("1") => Check::ok(
            CHECK,
            format!("{VAR}=1 (required by stock ROCm 7.2.x, harmless on current builds){known}"),
        ),
        value if !ctx.wsl() => Check::ok(
            CHECK,
            format!(
                "{VAR} is {}; it matters only on WSL2",
                value.map_or("unset".to_owned(), |v| format!("'{v}'"))
            ),
        ),
        value => {
            let shown = value.map_or("unset".to_owned(), |v| format!("'{v}' (not exactly 1)"));
            match generation.map(|g| g.generation) {
                Some(Generation::Stock72) => Check::error(
                    CHECK,
                    format!(
                        "{VAR} is {shown}, and the runtime needs 1{known}: without it hsa_init fails and every tool reports no supported GPU devices, which reads like absent hardware"
                    ),
                    export,
                ),
                Some(Generation::Current) => Check::ok(
                    CHECK,
                    format!("{VAR} is {shown}: fine for this runtime{known}"),
                ),
                None => Check::ok(
                    CHECK,
                    format!(
                        "{VAR} is {shown}: fine for current runtimes; stock ROCm 7.2.x packages need 1, and which one this is could not be told"
                    ),
                ),
            }
        }
    }
}

fn vendor_packet(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "env.vendor-packet";
    let dropped = test
        .main
        .as_ref()
        .and_then(|m| m.outcome.as_ref())
        .and_then(|o| o.marker.as_ref())
        .filter(|m| !m.ok)
        .map(|m| format!(" (in the self-test, {})", m.detail))
        .unwrap_or_default();
    match ctx.env.get(ENV_VENDOR_PACKET) {
        None => Check::ok(
            CHECK,
            format!(
                "{ENV_VENDOR_PACKET} is unset: the profiler sets it to 1 (without overwriting) before the thunk loads, so counter packets reach the GPU"
            ),
        ),
        Some("1") => Check::ok(CHECK, format!("{ENV_VENDOR_PACKET}=1")),
        Some(v) if ctx.wsl() => Check::warning(
            CHECK,
            format!(
                "{ENV_VENDOR_PACKET}={v}: the DXG thunk honours the vendor PM4 packets hardware counters are collected with only when it is exactly 1; otherwise it drops them silently and every counter reads 0{dropped}"
            ),
            format!(
                "unset {ENV_VENDOR_PACKET} (the profiler then sets 1) or set it to 1 — unless opting out of counters is what you want"
            ),
        ),
        Some(v) => Check::ok(
            CHECK,
            format!("{ENV_VENDOR_PACKET}={v}; it matters only on WSL2"),
        ),
    }
}

fn late_attach(ctx: &Context) -> Check {
    const CHECK: &str = "env.late-attach";
    match ctx.env.get(ENV_ATTACH_MARKER) {
        None => Check::ok(CHECK, format!("{ENV_ATTACH_MARKER} is unset")),
        Some(v) => Check::error(
            CHECK,
            format!(
                "{ENV_ATTACH_MARKER}='{v}' is rocprofiler-register's late-attach marker (any value counts): the profiler then disables WSL agent enumeration before loading librocdxg, because released librocdxg packages do not reference-count their topology snapshot, so no GPU agent is published and nothing is profiled; attaching (rocprof-attach) is unsupported on WSL"
            ),
            format!(
                "unset {ENV_ATTACH_MARKER} in the environment applications are started from, and launch the application under rocprof instead of attaching"
            ),
        ),
    }
}

fn force_gfx(ctx: &Context) -> Check {
    const CHECK: &str = "env.force-gfx";
    let value = ctx.env.non_empty(ENV_FORCE_GFX);
    match (value, &ctx.settings.force_gfx) {
        (None, _) => Check::ok(
            CHECK,
            format!(
                "{ENV_FORCE_GFX} is unset: counter definitions are looked up by the node's own gfx target"
            ),
        ),
        (Some(v), None) => Check::warning(
            CHECK,
            format!(
                "{ENV_FORCE_GFX}='{v}' is malformed (it must be gfx<NNN> with at least three digits, the last of which may be a lowercase hex digit, as in gfx90a): it is ignored with a warning and the node-reported target is used"
            ),
            format!("fix the value or unset {ENV_FORCE_GFX}"),
        ),
        (Some(_), Some(gfx)) => {
            let nodes: Vec<String> = ctx.discovery.gpus().map(|a| a.name.clone()).collect();
            Check::ok(
                CHECK,
                format!(
                    "{ENV_FORCE_GFX}={gfx} overrides the node-reported gfx target{} (and HSA_OVERRIDE_GFX_VERSION) for counter definitions",
                    if nodes.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", nodes.join(", "))
                    }
                ),
            )
        }
    }
}

fn layout(ctx: &Context) -> Check {
    const CHECK: &str = "env.hsakmt-layout";
    let Some(v) = ctx.env.non_empty(ENV_LAYOUT) else {
        return Check::ok(
            CHECK,
            format!(
                "{ENV_LAYOUT} is unset: rocprof probes the thunk and hands the profiler its layout"
            ),
        );
    };
    if ctx.settings.layout.is_none() {
        return Check::error(
            CHECK,
            rocprof_runner::Error::LayoutMalformed {
                value: v.to_owned(),
            }
            .to_string(),
            format!("unset {ENV_LAYOUT}: rocprof refuses to start while it is malformed"),
        );
    }
    match ctx.layout.warnings.iter().find(|w| is_override(w)) {
        Some(w) => Check::warning(
            CHECK,
            w.to_string(),
            format!("unset {ENV_LAYOUT} (rocprof probes the size the thunk accepts)"),
        ),
        None => Check::ok(
            CHECK,
            format!(
                "{ENV_LAYOUT}={v}, which agrees with the probe (unnecessary: rocprof probes it)"
            ),
        ),
    }
}
