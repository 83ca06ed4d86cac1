//! The environment that steers discovery, read once into a value.

use crate::gfx::GfxTarget;
use crate::layout::NodeLayout;
use std::ffi::CStr;
use std::path::PathBuf;

/// `ROCPROFILER_FORCE_PLATFORM`.
pub const ENV_FORCE_PLATFORM: &str = "ROCPROFILER_FORCE_PLATFORM";
/// `ROCPROFILER_FORCE_GFX`.
pub const ENV_FORCE_GFX: &str = "ROCPROFILER_FORCE_GFX";
/// rocprofiler-register's late-attach marker; any value, even `0`, means late attach.
pub const ENV_ATTACH_MARKER: &str = "ROCPROFILER_REGISTER_TOOL_ATTACHED";
/// Which `HsaNodeProperties` layout to read: `368|376|392|396`.
pub const ENV_LAYOUT: &str = "ROCPROF_HSAKMT_LAYOUT";
/// Path standing in for `/dev/dxg` (the simulated stack points it at its own file).
pub const ENV_DXG_DEVICE: &str = "ROCPROF_DXG_DEVICE";
/// [`ENV_VENDOR_PACKET`], NUL-terminated for `setenv`.
const ENV_VENDOR_PACKET_C: &CStr = c"WSLKMT_VENDOR_PACKET";
/// Gates the thunk's PM4 vendor packets; set to `1` without overwriting when WSL is selected.
pub const ENV_VENDOR_PACKET: &str = match ENV_VENDOR_PACKET_C.to_str() {
    Ok(name) => name,
    Err(_) => panic!("ENV_VENDOR_PACKET_C is ASCII"),
};
/// KFD topology roots checked first, in order (each names a `.../topology/nodes` directory).
pub const ENV_KFD_ROOTS: [&str; 3] = [
    "ROCPROFILER_KFD_TOPOLOGY",
    "AMD_KFD_TOPOLOGY",
    "HSA_MODEL_TOPOLOGY",
];
/// Built-in KFD topology roots, checked after the variables.
pub const SYSFS_KFD_ROOTS: [&str; 2] = [
    "/sys/devices/virtual/kfd/kfd/topology/nodes",
    "/sys/class/kfd/kfd/topology/nodes",
];
/// The DXG paravirtual device.
pub const DXG_DEVICE: &str = "/dev/dxg";

/// A platform name given in `ROCPROFILER_FORCE_PLATFORM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForcedPlatform {
    /// `gnulinux`.
    GnuLinux,
    /// `wsl`.
    Wsl,
    /// Any other non-empty value (logged and ignored).
    Unknown(String),
}

/// Everything discovery reads from the environment.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `ROCPROFILER_FORCE_PLATFORM`, if non-empty.
    pub force_platform: Option<ForcedPlatform>,
    /// A valid `ROCPROFILER_FORCE_GFX`.
    pub force_gfx: Option<GfxTarget>,
    /// Whether the late-attach marker is present.
    pub attach_marker: bool,
    /// The layout asked for through `ROCPROF_HSAKMT_LAYOUT`; `None` means the default.
    pub layout: Option<NodeLayout>,
    /// Non-empty KFD root variables, in check order.
    pub kfd_roots: Vec<PathBuf>,
    /// The device to test for WSL (default `/dev/dxg`).
    pub dxg_device: PathBuf,
    /// Problems found in the environment: each names the variable, the value, and what is done
    /// instead. Discovery logs them; the CLI refuses to start on them.
    pub problems: Vec<String>,
}

impl Settings {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds settings from any variable lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut problems = Vec::new();
        let force_platform = get(ENV_FORCE_PLATFORM).filter(|v| !v.is_empty()).map(|v| match v
            .as_str()
        {
            "gnulinux" => ForcedPlatform::GnuLinux,
            "wsl" => ForcedPlatform::Wsl,
            _ => {
                problems.push(format!(
                    "{ENV_FORCE_PLATFORM}='{v}' is not a platform this build knows (expected gnulinux or wsl); autodetecting instead"
                ));
                ForcedPlatform::Unknown(v)
            }
        });
        let force_gfx = get(ENV_FORCE_GFX).filter(|v| !v.is_empty()).and_then(|v| {
            let parsed = GfxTarget::parse(&v);
            if parsed.is_none() {
                problems.push(format!(
                    "ignoring malformed {ENV_FORCE_GFX}='{v}': expected gfx<NNN> with at least three digits, the last of which may be a lowercase hex digit; using the node's own gfx target"
                ));
            }
            parsed
        });
        let layout = get(ENV_LAYOUT).filter(|v| !v.is_empty()).and_then(|v| {
            let parsed = NodeLayout::parse(&v);
            if parsed.is_none() {
                problems.push(format!(
                    "ignoring {ENV_LAYOUT}='{v}': expected one of 368, 376, 392, 396; using the default {}",
                    NodeLayout::DEFAULT.size()
                ));
            }
            parsed
        });
        Self {
            force_platform,
            force_gfx,
            attach_marker: get(ENV_ATTACH_MARKER).is_some(),
            layout,
            kfd_roots: ENV_KFD_ROOTS
                .iter()
                .filter_map(|k| get(k).filter(|v| !v.is_empty()).map(PathBuf::from))
                .collect(),
            dxg_device: get(ENV_DXG_DEVICE)
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(DXG_DEVICE), PathBuf::from),
            problems,
        }
    }

    /// The layout in use: the requested one, else [`NodeLayout::DEFAULT`].
    pub fn layout_in_use(&self) -> NodeLayout {
        self.layout.unwrap_or(NodeLayout::DEFAULT)
    }
}

/// Sets `WSLKMT_VENDOR_PACKET=1` unless the variable already exists (a user's value, `0`
/// included, wins). Returns whether it was set by this call.
///
/// Must run before the thunk reads the variable, i.e. before `hsa_init`, and while no other
/// thread reads or writes the environment.
pub fn enable_vendor_packets() -> bool {
    if std::env::var_os(ENV_VENDOR_PACKET).is_some() {
        return false;
    }
    // SAFETY: `setenv` with overwrite = 0 through libc; both strings are NUL-terminated
    // literals. The caller runs this during start-up, before other threads use the environment.
    unsafe { libc::setenv(ENV_VENDOR_PACKET_C.as_ptr(), c"1".as_ptr(), 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let s = settings(&[]);
        assert_eq!(s.force_platform, None);
        assert!(!s.attach_marker);
        assert_eq!(s.layout_in_use(), NodeLayout::L396);
        assert_eq!(s.dxg_device, PathBuf::from("/dev/dxg"));
        assert!(s.problems.is_empty());
    }

    #[test]
    fn attach_marker_counts_with_any_value() {
        assert!(settings(&[(ENV_ATTACH_MARKER, "0")]).attach_marker);
        assert!(settings(&[(ENV_ATTACH_MARKER, "")]).attach_marker);
    }

    #[test]
    fn malformed_values_are_reported_and_ignored() {
        let s = settings(&[
            (ENV_FORCE_GFX, "not-a-target"),
            (ENV_FORCE_PLATFORM, "windows"),
            (ENV_LAYOUT, "400"),
        ]);
        assert_eq!(s.force_gfx, None);
        assert_eq!(
            s.force_platform,
            Some(ForcedPlatform::Unknown("windows".into()))
        );
        assert_eq!(s.layout, None);
        assert_eq!(s.problems.len(), 3, "{:?}", s.problems);
        assert!(s.problems[0].contains("'windows'"));
        assert!(s.problems[1].contains("ROCPROFILER_FORCE_GFX='not-a-target'"));
        assert!(s.problems[2].contains("ROCPROF_HSAKMT_LAYOUT='400'"));
    }

    #[test]
    fn valid_values_are_taken() {
        let s = settings(&[
            (ENV_FORCE_GFX, "gfx90a"),
            (ENV_FORCE_PLATFORM, "wsl"),
            (ENV_LAYOUT, "376"),
            ("ROCPROFILER_KFD_TOPOLOGY", "/tmp/x"),
            ("AMD_KFD_TOPOLOGY", ""),
        ]);
        assert_eq!(s.force_gfx.unwrap().to_string(), "gfx90a");
        assert_eq!(s.force_platform, Some(ForcedPlatform::Wsl));
        assert_eq!(s.layout_in_use(), NodeLayout::L376);
        assert_eq!(s.kfd_roots, vec![PathBuf::from("/tmp/x")]);
    }
}
