//! Everything the checks look at, gathered once: the environment as the user set it, the
//! loader's search in it, the platform, the thunk probe and the layout chosen, discovery, and
//! where the libraries resolve.

use crate::check::Env;
use crate::libs::Libraries;
use crate::loader::Loader;
use std::path::PathBuf;
use wsl_topology::layout_choice::{LayoutDecision, LayoutWarning};
use wsl_topology::{Discovery, NodeLayout, Selection, Settings};

/// Everything the checks look at, gathered once.
pub struct Context {
    /// The environment as the user set it (captured first).
    pub env: Env,
    /// The steering variables, read from it.
    pub settings: Settings,
    /// The loader's search in that environment.
    pub loader: Loader,
    /// The platform as autodetection selects it (`ROCPROFILER_FORCE_PLATFORM` ignored).
    pub auto: Selection,
    /// The platform as the profiler selects it (the forced one, if any).
    pub selection: Selection,
    /// The thunk probe and the layout chosen (on WSL).
    pub layout: LayoutDecision,
    /// Discovery on the autodetected platform, without the late-attach marker (whose effect
    /// its own check reports), with the chosen layout.
    pub discovery: Discovery,
    /// Where the libraries resolve.
    pub libs: Libraries,
    /// `--att-library-path`.
    pub att_dirs: Vec<PathBuf>,
}

impl Context {
    /// Gathers everything from the process environment.
    pub fn gather(att_dirs: Vec<PathBuf>) -> Context {
        let env = Env::capture();
        let settings = Settings::from_lookup(|k| env.get(k).map(str::to_owned));
        let loader = Loader::new(&env);
        let selection = wsl_topology::platform::select(&settings);
        let mut analysis = settings.clone();
        analysis.force_platform = None;
        analysis.attach_marker = false;
        let auto = if settings.force_platform.is_some() {
            wsl_topology::platform::select(&analysis)
        } else {
            selection.clone()
        };
        let layout = wsl_topology::layout_choice::choose(&analysis, auto.platform);
        if let Some(choice) = &layout.choice {
            analysis.layout = NodeLayout::from_size(choice.size);
        }
        let discovery = wsl_topology::discover_on(&analysis, auto.clone());
        let libs = Libraries::resolve(&loader);
        Context {
            env,
            settings,
            loader,
            auto,
            selection,
            layout,
            discovery,
            libs,
            att_dirs,
        }
    }

    /// Whether this is a WSL2 GPU environment (as autodetected).
    pub fn wsl(&self) -> bool {
        self.auto.platform == wsl_topology::Platform::Wsl
    }

    /// Whether autodetection found native Linux (the KFD topology).
    pub fn native(&self) -> bool {
        self.auto.reason == wsl_topology::platform::SelectionReason::KfdSysfs
    }
}

/// Whether a layout warning names the size the thunk writes (its text says " writes ").
pub fn names_written_size(w: &LayoutWarning) -> bool {
    matches!(
        w,
        LayoutWarning::Inconsistent { .. } | LayoutWarning::UnknownSize { .. }
    )
}

/// Whether a layout warning is about `ROCPROF_HSAKMT_LAYOUT` (its text names the variable).
pub fn is_override(w: &LayoutWarning) -> bool {
    matches!(w, LayoutWarning::Overridden { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed tests stand for the text tests the checks made when the warnings were strings.
    #[test]
    fn the_warning_kinds_are_told_apart_as_their_texts_were() {
        let all = [
            LayoutWarning::Inconsistent {
                accepted: 396,
                written: 376,
            },
            LayoutWarning::RejectsAll,
            LayoutWarning::UnknownSize { size: 400 },
            LayoutWarning::SizeUnknown,
            LayoutWarning::Overridden {
                user: 376,
                thunk: 396,
            },
        ];
        for w in &all {
            let text = w.to_string();
            assert_eq!(names_written_size(w), text.contains(" writes "), "{text}");
            assert_eq!(
                is_override(w),
                text.contains(wsl_topology::settings::ENV_LAYOUT),
                "{text}"
            );
        }
    }
}
