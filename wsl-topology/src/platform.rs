//! Which enumerator runs: native Linux (KFD sysfs) or WSL (DXCore + DXG thunk).

use crate::settings::{ForcedPlatform, SYSFS_KFD_ROOTS, Settings};
use dxcore_sys::DxcoreLibrary;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// An agent enumerator: `GnuLinux` (native Linux, KFD sysfs topology) or `Wsl` (DXCore adapters
/// paired with DXG thunk KMT nodes). The type is the one the record log's discovery facts carry.
pub use trace_records::docs::PlatformKind as Platform;

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
    probe_wsl(settings).map(drop)
}

/// [`wsl_available`], handing over the library it loaded.
fn probe_wsl(settings: &Settings) -> Result<DxcoreLibrary, String> {
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
    select_loading(settings).0
}

/// [`select`], also handing over libdxcore when the WSL availability check loaded it, so the
/// WSL enumerator does not load it a second time.
pub(crate) fn select_loading(settings: &Settings) -> (Selection, Option<DxcoreLibrary>) {
    match &settings.force_platform {
        Some(ForcedPlatform::GnuLinux) => {
            tracing::info!("agent topology: forced gnulinux via ROCPROFILER_FORCE_PLATFORM");
            let selection = Selection {
                platform: Platform::GnuLinux,
                reason: SelectionReason::Forced,
                kfd_root: kfd_root(settings),
                detail: "forced by ROCPROFILER_FORCE_PLATFORM=gnulinux".into(),
            };
            return (selection, None);
        }
        Some(ForcedPlatform::Wsl) => {
            tracing::info!("agent topology: forced wsl via ROCPROFILER_FORCE_PLATFORM");
            let selection = Selection {
                platform: Platform::Wsl,
                reason: SelectionReason::Forced,
                kfd_root: None,
                detail: "forced by ROCPROFILER_FORCE_PLATFORM=wsl (no availability check)".into(),
            };
            return (selection, None);
        }
        Some(ForcedPlatform::Unknown(_)) | None => {}
    }
    if let Some(root) = kfd_root(settings) {
        tracing::info!("agent topology: selected gnulinux (sysfs present)");
        let selection = Selection {
            platform: Platform::GnuLinux,
            reason: SelectionReason::KfdSysfs,
            detail: format!("KFD topology found at {}", root.display()),
            kfd_root: Some(root),
        };
        return (selection, None);
    }
    match probe_wsl(settings) {
        Ok(dxcore) => {
            tracing::info!("agent topology: selected wsl (libdxcore.so present)");
            let selection = Selection {
                platform: Platform::Wsl,
                reason: SelectionReason::Dxg,
                kfd_root: None,
                detail: format!(
                    "{} present and libdxcore.so exports D3DKMTEnumAdapters3",
                    settings.dxg_device.display()
                ),
            };
            (selection, Some(dxcore))
        }
        Err(why) => {
            tracing::warn!(
                "agent topology: no platform matched ({why}; no KFD topology); falling back to gnulinux, which finds no agents"
            );
            let selection = Selection {
                platform: Platform::GnuLinux,
                reason: SelectionReason::Fallback,
                kfd_root: None,
                detail: format!("no KFD topology, and not a WSL GPU environment: {why}"),
            };
            (selection, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    fn off_wsl(force: Option<ForcedPlatform>, kfd: Option<PathBuf>) -> Settings {
        Settings {
            force_platform: force,
            kfd_roots: kfd.into_iter().collect(),
            dxg_device: PathBuf::from("/nonexistent/dev/dxg"),
            ..Settings::default()
        }
    }

    fn fixture() -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("wsl-topology-platform-{}", std::process::id()));
        std::fs::create_dir_all(root.join("1")).unwrap();
        root
    }

    #[test]
    fn wsl_is_unavailable_without_the_dxg_device() {
        let err = wsl_available(&off_wsl(None, None)).unwrap_err();
        assert!(err.contains("/nonexistent/dev/dxg is not present"), "{err}");
    }

    #[test]
    fn a_kfd_topology_directory_selects_gnulinux() {
        let s = select(&off_wsl(None, Some(fixture())));
        assert_eq!(
            (s.platform, s.reason),
            (Platform::GnuLinux, SelectionReason::KfdSysfs)
        );
        assert_eq!(s.kfd_root, Some(fixture()));
    }

    #[test]
    fn forcing_gnulinux_uses_the_fixture_and_forcing_wsl_skips_the_check() {
        let s = select(&off_wsl(Some(ForcedPlatform::GnuLinux), Some(fixture())));
        assert_eq!(
            (s.platform, s.reason),
            (Platform::GnuLinux, SelectionReason::Forced)
        );
        assert_eq!(s.kfd_root, Some(fixture()));
        let s = select(&off_wsl(Some(ForcedPlatform::Wsl), Some(fixture())));
        assert_eq!(
            (s.platform, s.reason),
            (Platform::Wsl, SelectionReason::Forced)
        );
    }

    #[test]
    fn an_unknown_forced_platform_autodetects() {
        let s = select(&off_wsl(
            Some(ForcedPlatform::Unknown("windows".into())),
            Some(fixture()),
        ));
        assert_eq!(s.reason, SelectionReason::KfdSysfs);
    }

    #[test]
    fn nothing_found_falls_back_to_an_empty_gnulinux() {
        // Skipped where a real KFD topology exists: autodetection would rightly find it.
        if SYSFS_KFD_ROOTS.iter().any(|p| Path::new(p).is_dir()) {
            return;
        }
        let s = select(&off_wsl(None, None));
        assert_eq!(
            (s.platform, s.reason),
            (Platform::GnuLinux, SelectionReason::Fallback)
        );
        assert!(s.detail.contains("not present"), "{}", s.detail);
    }
}
