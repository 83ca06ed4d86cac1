//! Before launch: are the HSA runtime the loader will resolve and the DXG thunk a matched pair?
//!
//! The seed ("Matching the runtime and the DXG thunk"): `hsaKmtGetNodeProperties` carries no
//! size, so the thunk writes its own `sizeof(HsaNodeProperties)` into storage the runtime sized
//! for its own. What the CLI can see without starting anything is the thunk's record size (the
//! probe of `rocprof avail`: the `DxgAbiCheck` answer and the canary measurement) and the
//! runtime file the loader resolves, whose ROCm release names the layout it was built for —
//! determined exactly as `rocprof doctor`'s `lib.pair` check determines it (its loader model
//! and `generation_from_file`). `rocprof doctor` additionally tells the generation by running
//! the runtime; before a launch only the file is looked at, so a runtime whose file name and
//! directory carry no release is not judged here.

use crate::check::Env;
use crate::generation::Generation;
use crate::libs::{HSA, generation_from_file, layout_name};
use crate::loader::{Loader, Resolution};
use serde::Serialize;
use std::fmt;
use wsl_topology::layout_choice::LayoutDecision;
use wsl_topology::wsl::ThunkProbe;

/// What the mismatched thunk will do with the runtime's `HsaNodeProperties` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Consequence {
    /// The thunk offers `DxgAbiCheck` and accepts another size: it refuses the runtime's
    /// handshake, so `hsa_init` fails.
    Refused,
    /// The thunk writes larger records and offers no handshake: `excess` bytes past the end of
    /// each of the runtime's records, on its heap.
    Overrun {
        /// The bytes written past the end of each record.
        excess: usize,
    },
    /// The thunk writes smaller records and offers no handshake: the runtime reads the last
    /// `missing` bytes of every node from memory the thunk never wrote.
    Unwritten {
        /// The bytes of each record the thunk leaves unwritten.
        missing: usize,
    },
}

/// The HSA runtime the loader resolves and the DXG thunk probed are not a matched pair
/// (`Display`: the warning `rocprof` prints before a launch and `rocprof avail` lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairingWarning {
    /// The runtime's file (the name `libhsa-runtime64.so.1` when no file was found).
    pub runtime: String,
    /// Its generation.
    pub generation: Generation,
    /// Why: the release its file name or directory gives.
    pub evidence: String,
    /// The `sizeof(HsaNodeProperties)` the runtime is built for.
    pub runtime_layout: usize,
    /// The thunk's file (`librocdxg.so` when the probe did not say).
    pub thunk: String,
    /// The record size the thunk accepts in `DxgAbiCheck`, else the size it writes.
    pub thunk_layout: usize,
    /// What will happen.
    pub consequence: Consequence,
}

impl fmt::Display for PairingWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            runtime,
            generation,
            evidence,
            runtime_layout: expected,
            thunk: thunk_path,
            thunk_layout: thunk,
            ..
        } = self;
        let generation = generation.describe();
        write!(
            f,
            "this HSA runtime and DXG thunk are not a matched pair: the HSA runtime {runtime} is {generation} ({evidence}), built for {expected}-byte HsaNodeProperties, but "
        )?;
        match self.consequence {
            Consequence::Refused => write!(
                f,
                "the DXG thunk {thunk_path} accepts {thunk}-byte records in DxgAbiCheck, so it will refuse the runtime's {expected}-byte handshake: hsa_init will fail and the application will report no GPU"
            )?,
            Consequence::Overrun { excess } => write!(
                f,
                "the DXG thunk {thunk_path} writes {thunk}-byte records ({}) and offers no DxgAbiCheck. hsaKmtGetNodeProperties has no size argument, so during hsa_init the thunk will write {excess} bytes past the end of each {expected}-byte record on the runtime's heap: the application will start and may run to completion, then crash later somewhere unrelated (typically at exit, in free())",
                layout_name(*thunk)
            )?,
            Consequence::Unwritten { missing } => write!(
                f,
                "the DXG thunk {thunk_path} writes {thunk}-byte records ({}) and offers no DxgAbiCheck, so the runtime will read the last {missing} bytes of every node from memory the thunk never wrote (LUIDs and clock rates among them)",
                layout_name(*thunk)
            )?,
        }
        f.write_str("; install the matched pair — a libhsa-runtime64 and a librocdxg built from the same sources — and put its directory first on LD_LIBRARY_PATH (a librocdxg.so symlink to the matched thunk is enough); a runtime and thunk that both offer the DxgAbiCheck handshake at least refuse each other instead")
    }
}

/// The pairing warning for a launch from this process's environment: the runtime
/// `libhsa-runtime64.so.1` resolves to along `LD_LIBRARY_PATH`, `/etc/ld.so.conf` and the system
/// directories, against the thunk probed in `layout`. `None` when they are a matched pair or
/// when either side's record size is unknown.
pub fn pairing_warning(layout: &LayoutDecision) -> Option<PairingWarning> {
    let env = Env::capture();
    let runtime = Loader::new(&env).resolve(HSA, None, None);
    mismatch(layout.probe.as_ref(), &runtime)
}

/// The decision behind [`pairing_warning`]: `probe` is the thunk as measured, `runtime` where
/// the HSA runtime resolves.
pub fn mismatch(probe: Option<&ThunkProbe>, runtime: &Resolution) -> Option<PairingWarning> {
    let probe = probe?;
    let p = &probe.probe;
    let thunk = p.accepted.map(|l| l.size()).or(p.measured)?;
    let (generation, why) = generation_from_file(runtime)?;
    let expected = generation.layout();
    if thunk == expected {
        return None;
    }
    let consequence = if p.handshake_offered {
        Consequence::Refused
    } else if thunk > expected {
        Consequence::Overrun {
            excess: thunk - expected,
        }
    } else {
        Consequence::Unwritten {
            missing: expected - thunk,
        }
    };
    Some(PairingWarning {
        runtime: runtime
            .chosen
            .as_ref()
            .map_or_else(|| HSA.to_owned(), |f| f.path.display().to_string()),
        generation,
        evidence: why,
        runtime_layout: expected,
        thunk: probe.path.as_deref().unwrap_or("librocdxg.so").to_owned(),
        thunk_layout: thunk,
        consequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::{Found, Via};
    use std::path::PathBuf;
    use wsl_topology::NodeLayout;
    use wsl_topology::kmt::LayoutProbe;

    fn probe(offered: bool, accepted: Option<usize>, measured: Option<usize>) -> ThunkProbe {
        ThunkProbe {
            path: Some("/usr/lib/wsl/lib/librocdxg.so".into()),
            probe: LayoutProbe {
                handshake_offered: offered,
                accepted: accepted.and_then(NodeLayout::from_size),
                refused: Vec::new(),
                measured,
                measure_error: None,
            },
        }
    }

    fn runtime(file: &str) -> Resolution {
        let path = PathBuf::from(file);
        Resolution {
            name: HSA.into(),
            chosen: Some(Found {
                path: path.clone(),
                real: path,
                via: Via::LdLibraryPath,
                soname: None,
            }),
            shadowed: Vec::new(),
        }
    }

    const STOCK: &str = "/opt/rocm-7.2.0/lib/libhsa-runtime64.so.1.18.70200";
    const CURRENT: &str = "/opt/rocm-7.3.0/lib/libhsa-runtime64.so.1.19.70300";

    #[test]
    fn a_newer_thunk_without_the_handshake_under_a_stock_runtime_overruns_its_heap() {
        let w = mismatch(Some(&probe(false, None, Some(396))), &runtime(STOCK))
            .unwrap()
            .to_string();
        for words in [
            "not a matched pair",
            "stock ROCm 7.2.x",
            "376-byte",
            "writes 396-byte records",
            "20 bytes past the end",
            "crash later somewhere unrelated",
            "install the matched pair",
            STOCK,
        ] {
            assert!(w.contains(words), "{words:?} missing from {w}");
        }
    }

    #[test]
    fn a_thunk_with_the_handshake_refuses_the_runtime() {
        let w = mismatch(Some(&probe(true, Some(396), Some(396))), &runtime(STOCK))
            .unwrap()
            .to_string();
        assert!(w.contains("hsa_init will fail"), "{w}");
        assert!(!w.contains("crash later"), "{w}");
    }

    #[test]
    fn an_older_thunk_under_a_current_runtime_leaves_bytes_unwritten() {
        let w = mismatch(Some(&probe(false, None, Some(376))), &runtime(CURRENT))
            .unwrap()
            .to_string();
        assert!(w.contains("last 20 bytes"), "{w}");
        assert!(w.contains("current runtime"), "{w}");
    }

    #[test]
    fn matched_or_unknown_pairs_say_nothing() {
        assert_eq!(
            mismatch(Some(&probe(false, None, Some(376))), &runtime(STOCK)),
            None
        );
        assert_eq!(
            mismatch(Some(&probe(true, Some(396), Some(396))), &runtime(CURRENT)),
            None
        );
        // A runtime whose file says no release, an unmeasured thunk, no probe at all.
        let plain = runtime("/work/sim/lib/libhsa-runtime64.so.1");
        assert_eq!(mismatch(Some(&probe(false, None, Some(396))), &plain), None);
        assert_eq!(
            mismatch(Some(&probe(false, None, None)), &runtime(STOCK)),
            None
        );
        assert_eq!(mismatch(None, &runtime(STOCK)), None);
    }

    /// The text as the CLI built it before the warning was typed.
    fn reference(probe: Option<&ThunkProbe>, runtime: &Resolution) -> Option<String> {
        let probe = probe?;
        let p = &probe.probe;
        let thunk = p.accepted.map(|l| l.size()).or(p.measured)?;
        let (generation, why) = generation_from_file(runtime)?;
        let expected = generation.layout();
        if thunk == expected {
            return None;
        }
        let runtime_path = runtime
            .chosen
            .as_ref()
            .map_or_else(|| HSA.to_owned(), |f| f.path.display().to_string());
        let thunk_path = probe.path.as_deref().unwrap_or("librocdxg.so");
        let runtime_words = format!(
            "the HSA runtime {runtime_path} is {} ({why}), built for {expected}-byte HsaNodeProperties",
            generation.describe()
        );
        let fix = "install the matched pair — a libhsa-runtime64 and a librocdxg built from the same sources — and put its directory first on LD_LIBRARY_PATH (a librocdxg.so symlink to the matched thunk is enough); a runtime and thunk that both offer the DxgAbiCheck handshake at least refuse each other instead";
        let what = if p.handshake_offered {
            format!(
                "the DXG thunk {thunk_path} accepts {thunk}-byte records in DxgAbiCheck, so it will refuse the runtime's {expected}-byte handshake: hsa_init will fail and the application will report no GPU"
            )
        } else if thunk > expected {
            format!(
                "the DXG thunk {thunk_path} writes {thunk}-byte records ({}) and offers no DxgAbiCheck. hsaKmtGetNodeProperties has no size argument, so during hsa_init the thunk will write {} bytes past the end of each {expected}-byte record on the runtime's heap: the application will start and may run to completion, then crash later somewhere unrelated (typically at exit, in free())",
                layout_name(thunk),
                thunk - expected
            )
        } else {
            format!(
                "the DXG thunk {thunk_path} writes {thunk}-byte records ({}) and offers no DxgAbiCheck, so the runtime will read the last {} bytes of every node from memory the thunk never wrote (LUIDs and clock rates among them)",
                layout_name(thunk),
                expected - thunk
            )
        };
        Some(format!(
            "this HSA runtime and DXG thunk are not a matched pair: {runtime_words}, but {what}; {fix}"
        ))
    }

    #[test]
    fn the_text_is_what_it_was() {
        let probes = [
            None,
            Some(probe(false, None, Some(396))),
            Some(probe(false, None, Some(376))),
            Some(probe(false, None, Some(368))),
            Some(probe(false, None, None)),
            Some(probe(true, Some(396), Some(396))),
            Some(probe(true, Some(376), Some(376))),
            Some(probe(true, None, Some(392))),
            Some(ThunkProbe {
                path: None,
                ..probe(false, None, Some(392))
            }),
        ];
        let runtimes = [
            runtime(STOCK),
            runtime(CURRENT),
            runtime("/work/sim/lib/libhsa-runtime64.so.1"),
        ];
        let mut warned = 0;
        for p in &probes {
            for r in &runtimes {
                let typed = mismatch(p.as_ref(), r).map(|w| w.to_string());
                warned += usize::from(typed.is_some());
                assert_eq!(typed, reference(p.as_ref(), r), "{p:?} {r:?}");
            }
        }
        assert!(warned >= 6, "{warned}");
    }
}
