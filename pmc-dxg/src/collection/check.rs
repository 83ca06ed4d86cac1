//! Whether a set of counters can be collected together (in one pass) on one GPU, and if not,
//! why and the passes a split takes (`pmc-check`).

use std::fmt;

use serde::{Serialize, Serializer};

use crate::defs::AgentCounters;
use crate::plan::{DXG_FRAME_DWORDS, Packing, Pass, plan};
use crate::{BaseEvent, Error, Topology};

/// The answer for one GPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Check {
    /// The GPU index.
    pub gpu: u32,
    /// The counters asked for on it.
    pub counters: Vec<String>,
    /// The base counters they need.
    pub base: Vec<String>,
    /// Whether they fit one pass.
    pub one_pass: bool,
    /// The passes a split takes (base counter names), when they can be collected at all.
    pub passes: Vec<Vec<String>>,
    /// Why they cannot be collected together (or at all); serialised as its text.
    #[serde(serialize_with = "as_text")]
    pub conflict: Option<Error>,
}

fn as_text<S: Serializer>(conflict: &Option<Error>, s: S) -> Result<S::Ok, S::Error> {
    match conflict {
        Some(e) => s.serialize_some(&e.to_string()),
        None => s.serialize_none(),
    }
}

/// Whether a set of counters fits one pass on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fit {
    /// It does.
    OnePass {
        /// The base counters, each once, in first-use order.
        base: Vec<(String, BaseEvent)>,
        /// The one pass (none for no counters).
        passes: Vec<Pass>,
    },
    /// It does not.
    Refused {
        /// The base counters (empty when a name does not expand).
        base: Vec<(String, BaseEvent)>,
        /// Why.
        conflict: Error,
        /// The fewest passes the base counters split into, when they can be collected at all.
        split: Vec<Pass>,
    },
}

/// Plans `names` on an agent: one pass within the DXG command frame if possible.
pub(super) fn fit(counters: &AgentCounters, topology: &Topology, names: &[String]) -> Fit {
    let mut base: Vec<(String, BaseEvent)> = Vec::new();
    for n in names {
        match counters.expand(n) {
            Ok(list) => {
                for b in list {
                    if !base.iter().any(|(k, _)| *k == b.0) {
                        base.push(b);
                    }
                }
            }
            Err(conflict) => {
                return Fit::Refused {
                    base: Vec::new(),
                    conflict,
                    split: Vec::new(),
                };
            }
        }
    }
    let frame = Some(DXG_FRAME_DWORDS);
    match plan(topology, &base, Packing::OnePass, frame) {
        Ok(passes) => Fit::OnePass { base, passes },
        Err(conflict) => Fit::Refused {
            split: plan(topology, &base, Packing::Split, frame).unwrap_or_default(),
            base,
            conflict,
        },
    }
}

/// Plans `names` on one GPU: one pass if possible, else the fewest passes and the conflict.
pub fn check(counters: &AgentCounters, topology: &Topology, gpu: u32, names: &[String]) -> Check {
    let names_of = |base: &[(String, BaseEvent)]| base.iter().map(|(n, _)| n.clone()).collect();
    let passes_of = |passes: Vec<Pass>| {
        passes
            .into_iter()
            .map(|p| p.counters.into_iter().map(|(n, _)| n).collect())
            .collect()
    };
    let (one_pass, base, passes, conflict) = match fit(counters, topology, names) {
        Fit::OnePass { base, passes } => (true, names_of(&base), passes_of(passes), None),
        Fit::Refused {
            base,
            conflict,
            split,
        } => (false, names_of(&base), passes_of(split), Some(conflict)),
    };
    Check {
        gpu,
        counters: names.to_vec(),
        base,
        one_pass,
        passes,
        conflict,
    }
}

/// rocprofv3-avail's line when the set fits, else the conflict and the passes it would take;
/// each line ends with `\n`.
impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.one_pass { "can" } else { "cannot" };
        writeln!(
            f,
            "Following input counters {verdict} be collected together on GPU:{}\t{}",
            self.gpu,
            self.counters.join("\t")
        )?;
        if self.one_pass {
            return Ok(());
        }
        if let Some(why) = &self.conflict {
            writeln!(f, "  why: {why}")?;
        }
        if self.passes.len() > 1 {
            writeln!(
                f,
                "  they fit in {} passes (the application runs once per pass):",
                self.passes.len()
            )?;
            for (i, p) in self.passes.iter().enumerate() {
                writeln!(f, "    pass {}: {}", i + 1, p.join(" "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_says_why_and_how_to_split() {
        let c = Check {
            gpu: 0,
            counters: vec!["A".into(), "B".into()],
            base: vec!["A".into(), "B".into()],
            one_pass: false,
            passes: vec![vec!["A".into()], vec!["B".into()]],
            conflict: Some(Error::TooManyCounters {
                block: "GRBM".into(),
                slots: 2,
                counters: vec!["A".into(), "B".into(), "C".into()],
            }),
        };
        let text = c.to_string();
        assert!(
            text.starts_with(
                "Following input counters cannot be collected together on GPU:0\tA\tB\n"
            ),
            "{text}"
        );
        assert!(text.contains("why: GRBM has 2 counter slots"), "{text}");
        assert!(text.contains("pass 2: B"), "{text}");
        let ok = Check {
            one_pass: true,
            conflict: None,
            passes: vec![vec!["A".into(), "B".into()]],
            ..c
        };
        assert_eq!(
            ok.to_string(),
            "Following input counters can be collected together on GPU:0\tA\tB\n"
        );
    }

    #[test]
    fn the_conflict_serialises_as_its_text() {
        let c = Check {
            gpu: 1,
            counters: vec!["X".into()],
            base: Vec::new(),
            one_pass: false,
            passes: Vec::new(),
            conflict: Some(Error::UnknownCounter {
                name: "X".into(),
                gfx: "gfx1150".into(),
            }),
        };
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["conflict"], "counter X is not defined for gfx1150");
        assert_eq!(json["gpu"], 1);
        assert_eq!(json["one_pass"], false);
        let clean = Check {
            conflict: None,
            ..c
        };
        assert!(serde_json::to_value(&clean).unwrap()["conflict"].is_null());
    }
}
