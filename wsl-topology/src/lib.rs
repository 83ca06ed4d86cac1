//! GPU agent discovery for AMD GPUs under WSL2, and on native Linux.
//!
//! On WSL2 there is no `/dev/kfd`: GPUs are reached through `/dev/dxg`, the D3DKMT library
//! `libdxcore.so` and the DXG thunk `librocdxg.so`. Discovery pairs each DXCore adapter with
//! the KMT node the thunk reports (by LUID, else by a unique PCI device id), reads the node's
//! `HsaNodeProperties` into slack-padded storage after the `DxgAbiCheck` handshake, and refuses —
//! with a reason — whatever it cannot describe. On native Linux the KFD sysfs topology is read.
//!
//! Entry point: [`discover`]. Records are built once and never modified afterwards.

pub mod agent;
pub mod gfx;
pub mod hsa_pairing;
pub mod kfd;
pub mod kmt;
pub mod layout;
pub mod layout_choice;
pub mod pairing;
pub mod platform;
pub mod settings;
pub mod wsl;

pub use agent::{Agent, AgentKind, Omission, Subject};
pub use layout::{Luid, NodeLayout};
pub use platform::{Platform, Selection, SelectionReason};
pub use settings::Settings;

/// The result of agent discovery: the platform chosen, the agents published and everything
/// that was left out, with reasons.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Discovery {
    /// Which enumerator ran and why.
    pub selection: Selection,
    /// Published agents: CPU first, then GPUs; never modified after discovery.
    agents: Box<[Agent]>,
    /// Adapters, nodes and whole sources that were not published, each with its reason.
    pub omissions: Vec<Omission>,
    /// What the WSL enumerator learned about the thunk (absent on other platforms).
    pub thunk: Option<wsl::ThunkReport>,
}

impl Discovery {
    /// The published agents.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The GPU agents.
    pub fn gpus(&self) -> impl Iterator<Item = &Agent> {
        self.agents.iter().filter(|a| a.kind == AgentKind::Gpu)
    }
}

/// Discovers agents as the profiler does before `hsa_init`: selects the platform, sets
/// `WSLKMT_VENDOR_PACKET=1` (without overwriting) when WSL is selected, and enumerates.
///
/// Never fails: every problem becomes an [`Omission`] and a log line.
pub fn discover(settings: &Settings) -> Discovery {
    for problem in &settings.problems {
        tracing::warn!("{problem}");
    }
    let (selection, dxcore) = platform::select_loading(settings);
    discover_loaded(settings, selection, dxcore)
}

/// [`discover`] on a platform already selected (with [`platform::select`]).
pub fn discover_on(settings: &Settings, selection: Selection) -> Discovery {
    discover_loaded(settings, selection, None)
}

/// The omission of a native-Linux selection without any KFD topology directory: nothing could
/// be enumerated, and the report must say why rather than list no omission at all.
fn no_kfd_topology(settings: &Settings, selection: &Selection) -> Omission {
    Omission::new(
        Subject::Platform,
        trace_records::docs::OmissionKind::KfdNodeUnreadable,
        format!(
            "native Linux was selected ({}), but no KFD topology exists ({}): the amdgpu driver is not loaded here{}",
            selection.detail,
            settings::SYSFS_KFD_ROOTS.join(", "),
            if settings.dxg_device.exists() {
                format!(
                    "; this is WSL2 ({} exists), where the GPU is reached through the DXG thunk: unset ROCPROFILER_FORCE_PLATFORM",
                    settings.dxg_device.display()
                )
            } else {
                String::new()
            }
        ),
    )
}

/// [`discover_on`], reusing libdxcore when the selection already loaded it.
fn discover_loaded(
    settings: &Settings,
    selection: Selection,
    dxcore: Option<dxcore_sys::DxcoreLibrary>,
) -> Discovery {
    let (agents, omissions, thunk) = match selection.platform {
        Platform::GnuLinux => {
            let (agents, omissions) = match &selection.kfd_root {
                Some(root) => kfd::enumerate(root),
                None => (Vec::new(), vec![no_kfd_topology(settings, &selection)]),
            };
            (agents, omissions, None)
        }
        Platform::Wsl => {
            settings::enable_vendor_packets();
            let out = wsl::enumerate_loaded(settings, dxcore);
            (out.agents, out.omissions, Some(out.thunk))
        }
    };
    Discovery {
        selection,
        agents: agents.into_boxed_slice(),
        omissions,
        thunk,
    }
}
