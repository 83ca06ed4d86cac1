//! Which `HsaNodeProperties` layout a run uses: the user's `ROCPROF_HSAKMT_LAYOUT` wins, then
//! what the thunk accepts in its `DxgAbiCheck` handshake or writes, then the default; with what
//! the probe showed that a user should know, as typed warnings.

use crate::settings::ENV_LAYOUT;
use crate::wsl::ThunkProbe;
use crate::{NodeLayout, Platform, Settings};
use serde::Serialize;
use std::fmt;

/// How the layout was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutChoice {
    /// The size used.
    pub size: usize,
    /// `environment`, `probe` or `default`.
    pub source: &'static str,
}

/// What the probe of the thunk showed that the user should know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LayoutWarning {
    /// The handshake accepts one size, the thunk writes another.
    Inconsistent {
        /// The size `DxgAbiCheck` accepts (0: none).
        accepted: usize,
        /// The size the thunk writes (0: unknown).
        written: usize,
    },
    /// `DxgAbiCheck` accepts none of the known layouts.
    RejectsAll,
    /// The thunk writes records of a size this build does not know.
    UnknownSize {
        /// The size.
        size: usize,
    },
    /// The record size could not be determined.
    SizeUnknown,
    /// `ROCPROF_HSAKMT_LAYOUT` names another layout than the thunk's own.
    Overridden {
        /// The user's size.
        user: usize,
        /// The thunk's.
        thunk: usize,
    },
}

impl fmt::Display for LayoutWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inconsistent { accepted, written } => write!(
                f,
                "the thunk accepts {accepted}-byte records in DxgAbiCheck but writes {written} bytes; it is inconsistent with itself, and nodes it writes will be refused"
            ),
            Self::RejectsAll => f.write_str(
                "DxgAbiCheck accepts none of the HsaNodeProperties layouts this build knows (368, 376, 392, 396): the thunk is from a ROCm release this build cannot read, and it will refuse the profiler; install a matched runtime and thunk",
            ),
            Self::UnknownSize { size } => write!(
                f,
                "the thunk writes {size}-byte HsaNodeProperties records, a layout this build does not know (368, 376, 392, 396): its nodes will be refused"
            ),
            Self::SizeUnknown => f.write_str("the thunk's record size could not be determined"),
            Self::Overridden { user, thunk } => write!(
                f,
                "{ENV_LAYOUT}={user} overrides the thunk's own {thunk}-byte layout: its nodes will be refused"
            ),
        }
    }
}

/// What probing the thunk decided.
#[derive(Debug, Default)]
pub struct LayoutDecision {
    /// The probe's findings, when the thunk loaded.
    pub probe: Option<ThunkProbe>,
    /// Why the thunk could not be probed.
    pub probe_error: Option<String>,
    /// The layout chosen (None off WSL).
    pub choice: Option<LayoutChoice>,
    /// Findings the user should see.
    pub warnings: Vec<LayoutWarning>,
}

/// Probes the thunk (on WSL) and picks the layout. Used by `rocprof avail` and by run mode,
/// which hands the choice to the profiled application.
pub fn choose(settings: &Settings, platform: Platform) -> LayoutDecision {
    if platform != Platform::Wsl || settings.attach_marker {
        return LayoutDecision::default();
    }
    let mut warnings = Vec::new();
    let (probe, probe_error) = match crate::wsl::probe_thunk() {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let probed = probe.as_ref().and_then(|p| p.probe.recommended());
    if let Some(p) = &probe {
        if p.probe.inconsistent() {
            warnings.push(LayoutWarning::Inconsistent {
                accepted: p.probe.accepted.map_or(0, NodeLayout::size),
                written: p.probe.measured.unwrap_or(0),
            });
        }
        let rejects_all = p.probe.handshake_offered && p.probe.accepted.is_none();
        if rejects_all {
            warnings.push(LayoutWarning::RejectsAll);
        } else if probed.is_none() {
            warnings.push(match p.probe.measured {
                Some(size) => LayoutWarning::UnknownSize { size },
                None => LayoutWarning::SizeUnknown,
            });
        }
    }
    let choice = match (settings.layout, probed) {
        (Some(user), probed) => {
            if let Some(p) = probed.filter(|&p| p != user) {
                warnings.push(LayoutWarning::Overridden {
                    user: user.size(),
                    thunk: p.size(),
                });
            }
            LayoutChoice {
                size: user.size(),
                source: "environment",
            }
        }
        (None, Some(p)) => LayoutChoice {
            size: p.size(),
            source: "probe",
        },
        (None, None) => LayoutChoice {
            size: NodeLayout::DEFAULT.size(),
            source: "default",
        },
    };
    LayoutDecision {
        probe,
        probe_error,
        choice: Some(choice),
        warnings,
    }
}
