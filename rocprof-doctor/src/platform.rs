//! The platform: `/dev/dxg`, libdxcore and its exports, `/dev/kfd`, the forced platform, and
//! what discovery publishes.

use crate::check::{Check, and_list};
use crate::context::Context;
use std::path::Path;
use wsl_topology::Platform;
use wsl_topology::agent::OmissionKind;
use wsl_topology::settings::{ENV_DXG_DEVICE, ENV_FORCE_PLATFORM, ForcedPlatform};

/// Why PC sampling is unavailable on WSL2 (the text `rocprof`'s run mode and
/// `rocprof avail info --pc-sampling` give too).
pub const PC_SAMPLING_UNAVAILABLE: &str = "PC sampling is not available on WSL2: it is configured through KFD interfaces (/dev/kfd ioctls) that WSL2 does not expose (the GPU is reached through /dev/dxg); it works on native Linux with the amdgpu driver and a GPU that supports it";

/// Why SPM is unavailable on WSL2 (the text `rocprof`'s run mode gives too).
pub const SPM_UNAVAILABLE: &str = "SPM (streaming performance monitors) is not available on WSL2: it is configured through KFD interfaces (/dev/kfd ioctls) that WSL2 does not expose; it works on native Linux with the amdgpu driver";

/// libdxcore's name, and where WSL installs it.
const DXCORE: &str = "libdxcore.so";
const DXCORE_WSL: &str = "/usr/lib/wsl/lib/libdxcore.so";
/// The KFD device.
const KFD: &str = "/dev/kfd";

/// The platform checks, in report order.
pub fn checks(ctx: &Context) -> Vec<Check> {
    vec![dxg(ctx), dxcore(ctx), kfd(ctx), force_platform(ctx)]
}

/// Whether native Linux's KFD topology is what autodetection found.
fn dxg(ctx: &Context) -> Check {
    const CHECK: &str = "platform.dxg";
    let device = &ctx.settings.dxg_device;
    let named = ctx
        .env
        .non_empty(ENV_DXG_DEVICE)
        .map(|_| format!(" (named by {ENV_DXG_DEVICE})"))
        .unwrap_or_default();
    if device.exists() {
        return Check::ok(
            CHECK,
            format!(
                "{}{named} is present: the GPU is reached through WSL2's DirectX paravirtual device",
                device.display()
            ),
        );
    }
    if ctx.native() {
        return Check::ok(
            CHECK,
            format!(
                "{} is not present, and this is native Linux ({}): the KFD enumerator is used",
                device.display(),
                ctx.auto.detail
            ),
        );
    }
    let fix = if named.is_empty() {
        "run inside a WSL2 distribution with GPU support (an AMD Windows driver with WSL support; `wsl --update`), where /dev/dxg exists".to_owned()
    } else {
        format!(
            "unset {ENV_DXG_DEVICE} (it points at {}, which does not exist) so that /dev/dxg is used",
            device.display()
        )
    };
    Check::error(
        CHECK,
        format!(
            "{}{named} is not present and there is no KFD topology: no GPU is visible, so discovery publishes no GPU agent and nothing can be profiled",
            device.display()
        ),
        fix,
    )
}

fn dxcore(ctx: &Context) -> Check {
    const CHECK: &str = "platform.libdxcore";
    let resolution = ctx.loader.resolve(DXCORE, None, None);
    let file = resolution
        .chosen
        .as_ref()
        .map(|f| f.describe())
        .or_else(|| {
            Path::new(DXCORE_WSL)
                .exists()
                .then(|| format!("{DXCORE_WSL} (the WSL fallback path)"))
        });
    let fix = "libdxcore.so comes with WSL in /usr/lib/wsl/lib: make sure that directory exists (`wsl --update`) and that no other libdxcore.so comes first on LD_LIBRARY_PATH";
    if let Some(o) = ctx
        .discovery
        .omissions
        .iter()
        .find(|o| o.kind == OmissionKind::DxcoreUnavailable)
    {
        return Check::error(
            CHECK,
            format!(
                "{}: {} (found: {})",
                o.subject,
                o.reason,
                file.as_deref().unwrap_or("nothing")
            ),
            fix,
        );
    }
    if ctx.wsl() {
        return Check::ok(
            CHECK,
            format!(
                "{} loads and exports D3DKMTEnumAdapters3, D3DKMTQueryAdapterInfo and D3DKMTCloseAdapter",
                file.as_deref().unwrap_or(DXCORE)
            ),
        );
    }
    if ctx.native() {
        return Check::ok(CHECK, "not used on native Linux");
    }
    if ctx.settings.dxg_device.exists() {
        // /dev/dxg is there, so the WSL check failed on libdxcore itself.
        return Check::error(
            CHECK,
            format!(
                "{} (found: {})",
                ctx.auto.detail,
                file.as_deref().unwrap_or("nothing")
            ),
            fix,
        );
    }
    Check::ok(
        CHECK,
        format!(
            "not loaded: without {} discovery does not use it (found: {})",
            ctx.settings.dxg_device.display(),
            file.as_deref().unwrap_or("nothing")
        ),
    )
}

fn kfd(ctx: &Context) -> Check {
    const CHECK: &str = "platform.kfd";
    let present = Path::new(KFD).exists();
    if ctx.native() {
        return Check::ok(
            CHECK,
            format!(
                "native Linux ({}; {KFD} {}): PC sampling and SPM are configured through KFD here",
                ctx.auto.detail,
                if present { "present" } else { "absent" }
            ),
        );
    }
    Check::ok(
        CHECK,
        format!(
            "{KFD} is {}, as on every WSL2 system, so PC sampling and SPM are unavailable: {PC_SAMPLING_UNAVAILABLE}; {SPM_UNAVAILABLE} (thread trace and counters use the DXG path instead)",
            if present {
                "present but not used"
            } else {
                "absent"
            }
        ),
    )
}

fn force_platform(ctx: &Context) -> Check {
    const CHECK: &str = "env.force-platform";
    let auto = format!("{} ({})", ctx.auto.platform.name(), ctx.auto.detail);
    match &ctx.settings.force_platform {
        None => Check::ok(
            CHECK,
            format!("{ENV_FORCE_PLATFORM} is unset: autodetection selects {auto}"),
        ),
        Some(ForcedPlatform::Unknown(v)) => Check::warning(
            CHECK,
            format!(
                "{ENV_FORCE_PLATFORM}='{v}' is not a platform this build knows (gnulinux or wsl): it is logged and ignored, and autodetection selects {auto}"
            ),
            format!("unset {ENV_FORCE_PLATFORM}"),
        ),
        Some(forced) => {
            let forced_name = match forced {
                ForcedPlatform::GnuLinux => Platform::GnuLinux,
                _ => Platform::Wsl,
            };
            if forced_name == ctx.auto.platform {
                Check::warning(
                    CHECK,
                    format!(
                        "{ENV_FORCE_PLATFORM}={} forces what autodetection selects anyway ({auto}); it is a diagnostic escape hatch that skips the availability check, not needed in normal use",
                        forced_name.name()
                    ),
                    format!("unset {ENV_FORCE_PLATFORM}"),
                )
            } else {
                // What the profiler's discovery finds on the forced platform.
                let mut settings = ctx.settings.clone();
                settings.attach_marker = false;
                if let Some(c) = &ctx.layout.choice {
                    settings.layout = wsl_topology::NodeLayout::from_size(c.size);
                }
                let forced_gpus = wsl_topology::discover_on(&settings, ctx.selection.clone())
                    .gpus()
                    .count();
                let evidence = format!(
                    "{ENV_FORCE_PLATFORM}={} overrides autodetection, which selects {auto}: the profiler's discovery runs the {} enumerator instead ({})",
                    forced_name.name(),
                    forced_name.name(),
                    ctx.selection.detail
                );
                if forced_gpus == 0 {
                    Check::error(
                        CHECK,
                        format!(
                            "{evidence} and publishes no GPU agent, so nothing can be profiled"
                        ),
                        format!("unset {ENV_FORCE_PLATFORM}"),
                    )
                } else {
                    Check::warning(
                        CHECK,
                        format!(
                            "{evidence}, where it publishes {forced_gpus} GPU agent(s) without the availability check autodetection makes"
                        ),
                        format!("unset {ENV_FORCE_PLATFORM}"),
                    )
                }
            }
        }
    }
}

/// What discovery publishes (on the autodetected platform, with the layout rocprof chooses).
pub fn agents(ctx: &Context) -> Check {
    const CHECK: &str = "discovery.agents";
    let d = &ctx.discovery;
    let gpus: Vec<String> = d
        .gpus()
        .map(|a| format!("{} ({}, KMT node {})", a.name, a.product_name, a.node_id))
        .collect();
    let mut omissions: Vec<String> = d
        .omissions
        .iter()
        .filter(|o| o.kind.is_warning())
        .map(|o| format!("{}: {} [{}]", o.subject, o.reason, kind_name(o.kind)))
        .collect();
    if omissions.len() > 3 {
        let more = omissions.len() - 3;
        omissions.truncate(3);
        omissions.push(format!("{more} more (`rocprof avail` lists them)"));
    }
    if gpus.is_empty() {
        let why = if omissions.is_empty() {
            ctx.auto.detail.clone()
        } else {
            and_list(&omissions)
        };
        return Check::error(
            CHECK,
            format!("discovery publishes no GPU agent: {why}"),
            "fix the cause named (docs/troubleshooting.md, \"Omission kinds\", has one entry per kind); `rocprof avail` shows the same",
        );
    }
    if omissions.is_empty() {
        return Check::ok(
            CHECK,
            format!(
                "{} GPU agent(s): {}; nothing left out",
                gpus.len(),
                and_list(&gpus)
            ),
        );
    }
    Check::warning(
        CHECK,
        format!(
            "{} GPU agent(s): {}; left out: {}",
            gpus.len(),
            and_list(&gpus),
            and_list(&omissions)
        ),
        "the GPUs left out cannot be profiled: fix the cause named (docs/troubleshooting.md, \"Omission kinds\")",
    )
}

/// An omission kind's name as `rocprof avail --json` spells it.
fn kind_name(kind: OmissionKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
