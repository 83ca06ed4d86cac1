//! Which enumerator runs: native Linux (KFD sysfs) or WSL (DXCore + DXG thunk).

use crate::settings::{ForcedPlatform, SYSFS_KFD_ROOTS, Settings};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// An agent enumerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Native Linux: KFD sysfs topology.
    GnuLinux,
    /// WSL2: DXCore adapters paired with DXG thunk KMT nodes.
    Wsl,
}

impl Platform {
    /// The name used by `ROCPROFILER_FORCE_PLATFORM`.
    pub fn name(self) -> &'static str {
        match self {
            Self::GnuLinux => "gnulinux",
            Self::Wsl => "wsl",
        }
    }
}

/// Why a platform was selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelectionReason {
    /// `ROCPROFILER_FORCE_PLATFORM` named it (no availability probe).
    Forced,
    /// A KFD sysfs topology directory exists.
    KfdSysfs,
    /// The DXG device exists and libdxcore loads with `D3DKMTEnumAdapters3`.
    Dxg,
    /// Nothing matched; the native enumerator runs and finds nothing.
    Fallback,
}

/// The platform decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// The enumerator that runs.
    pub platform: Platform,
    /// Why.
    pub reason: SelectionReason,
    /// The KFD topology directory the native enumerator reads.
    pub kfd_root: Option<PathBuf>,
    /// A sentence saying what was found.
    pub detail: String,
}

/// The first existing KFD topology directory: the variables first, then sysfs.
pub fn kfd_root(settings: &Settings) -> Option<PathBuf> {
    settings
        .kfd_roots
        .iter()
        .cloned()
        .chain(SYSFS_KFD_ROOTS.iter().map(PathBuf::from))
        .find(|p| p.is_dir())
}

/// Whether this is a WSL GPU environment: the DXG device exists, and libdxcore loads and
/// exports `D3DKMTEnumAdapters3`. `Err` says which part is missing.
pub fn wsl_available(settings: &Settings) -> Result<(), String> {
    if !Path::new(&settings.dxg_device).exists() {
        return Err(format!("{} is not present", settings.dxg_device.display()));
    }
    // SAFETY: loads the system's (or the simulated) libdxcore; only checks an export exists.
    unsafe { dxcore_sys::Dxcore::probe() }
        .map_err(|e| format!("{} is present but {e}", settings.dxg_device.display()))
}

/// Selects the platform exactly as the profiler does: forced value, then KFD sysfs, then WSL,
/// else the native enumerator (which finds nothing).
pub fn select(settings: &Settings) -> Selection {
    match &settings.force_platform {
        Some(ForcedPlatform::GnuLinux) => {
            tracing::info!("agent topology: forced gnulinux via ROCPROFILER_FORCE_PLATFORM");
            return Selection {
                platform: Platform::GnuLinux,
                reason: SelectionReason::Forced,
                kfd_root: kfd_root(settings),
                detail: "forced by ROCPROFILER_FORCE_PLATFORM=gnulinux".into(),
            };
        }
        Some(ForcedPlatform::Wsl) => {
            tracing::info!("agent topology: forced wsl via ROCPROFILER_FORCE_PLATFORM");
            return Selection {
                platform: Platform::Wsl,
                reason: SelectionReason::Forced,
                kfd_root: None,
                detail: "forced by ROCPROFILER_FORCE_PLATFORM=wsl (no availability check)".into(),
            };
        }
        Some(ForcedPlatform::Unknown(_)) | None => {}
    }
    if let Some(root) = kfd_root(settings) {
        tracing::info!("agent topology: selected gnulinux (sysfs present)");
        return Selection {
            platform: Platform::GnuLinux,
            reason: SelectionReason::KfdSysfs,
            detail: format!("KFD topology found at {}", root.display()),
            kfd_root: Some(root),
        };
    }
    match wsl_available(settings) {
        Ok(()) => {
            tracing::info!("agent topology: selected wsl (libdxcore.so present)");
            Selection {
                platform: Platform::Wsl,
                reason: SelectionReason::Dxg,
                kfd_root: None,
                detail: format!(
                    "{} present and libdxcore.so exports D3DKMTEnumAdapters3",
                    settings.dxg_device.display()
                ),
            }
        }
        Err(why) => {
            tracing::warn!(
                "agent topology: no platform matched ({why}; no KFD topology); falling back to gnulinux, which finds no agents"
            );
            Selection {
                platform: Platform::GnuLinux,
                reason: SelectionReason::Fallback,
                kfd_root: None,
                detail: format!("no KFD topology, and not a WSL GPU environment: {why}"),
            }
        }
    }
}
