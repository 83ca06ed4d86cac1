//! What evaluating one process's counter samples gives: per counted dispatch its outcomes, and
//! what could not be evaluated, as values.

use std::fmt;

use trace_records::KernelDispatchRecord;

use crate::Error;
use crate::hygiene::{Discard, DispatchKey};

/// One counted dispatch of one run, evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// Its dispatch record (timestamps 0 if lost).
    pub dispatch: KernelDispatchRecord,
    /// Its identity across runs.
    pub key: DispatchKey,
    /// One outcome per requested counter, in request order.
    pub outcomes: Vec<Result<f64, Discard>>,
    /// Whether nothing shows that its pass's packets ran ([`crate::pm4::packets_ran`]): the
    /// proof word is missing (or, in a log without the proof, every value read back is 0).
    pub raw_zero: bool,
}

/// Why some counter samples of a process gave no values.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The samples of a GPU node cannot be decoded: its agent record, its counter setup or
    /// the definitions of the requested counters are missing (or do not fit its topology).
    Undecodable {
        /// The agent's driver node id.
        node: u32,
        /// The requested counters.
        requested: Vec<String>,
    },
    /// A dispatch's read-back does not decode with its pass's layout.
    Unreadable {
        /// The dispatch id.
        dispatch: u64,
        /// What decoding said.
        error: Error,
    },
    /// A dispatch's read-back decoded, but its counters cannot be evaluated from it.
    Unevaluable {
        /// The dispatch id.
        dispatch: u64,
        /// What evaluation said.
        error: Error,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Undecodable { node, requested } => write!(
                f,
                "the counter samples of GPU node {node} cannot be decoded (its agent, its \
                 counter setup or the definitions of {} are missing)",
                requested.join(" ")
            ),
            Problem::Unreadable { dispatch, error } => {
                write!(
                    f,
                    "dispatch {dispatch}: its counter read-back is unreadable: {error}"
                )
            }
            Problem::Unevaluable { dispatch, error } => {
                write!(
                    f,
                    "dispatch {dispatch}: its counters cannot be evaluated: {error}"
                )
            }
        }
    }
}

/// One process's counted dispatches, evaluated, with the counters' ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluation {
    /// The requested counters and their ids on the agent.
    pub counters: Vec<(String, u32)>,
    /// Counted dispatches in dispatch-id order.
    pub dispatches: Vec<Counted>,
    /// Samples that could not be decoded or evaluated, and why.
    pub problems: Vec<Problem>,
    /// Counted dispatches that ran while a kernel of another queue of the same agent ran: the
    /// counters are global, so their values include that kernel's work.
    pub overlapped: Vec<u64>,
}

/// Whether no dispatch that ran (and some did) shows that its counter packets ran: what a
/// closed vendor-packet gate (`WSLKMT_VENDOR_PACKET=0`) looks like, since the thunk then drops
/// the PM4 packets without an error. A read-back with the proof word is never counted here,
/// whatever its values: a zero there is a zero the hygiene rules judge.
pub fn all_zero(evals: &[&Evaluation]) -> bool {
    let ran = || {
        evals
            .iter()
            .flat_map(|e| &e.dispatches)
            .filter(|c| c.dispatch.end > c.dispatch.start)
    };
    ran().next().is_some() && ran().all(|c| c.raw_zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(id: u64, start: u64, end: u64, raw_zero: bool) -> Counted {
        Counted {
            dispatch: KernelDispatchRecord {
                dispatch_id: id,
                start,
                end,
                ..Default::default()
            },
            key: DispatchKey {
                kernel: "k".into(),
                ordinal: id,
                grid: [1; 3],
                workgroup: [1; 3],
            },
            outcomes: Vec::new(),
            raw_zero,
        }
    }

    fn eval(dispatches: Vec<Counted>) -> Evaluation {
        Evaluation {
            dispatches,
            ..Evaluation::default()
        }
    }

    #[test]
    fn all_zero_needs_a_dispatch_that_ran_and_only_zeros_on_those() {
        let zero = eval(vec![counted(1, 10, 20, true), counted(2, 0, 0, false)]);
        let live = eval(vec![counted(3, 10, 20, false)]);
        let idle = eval(vec![counted(4, 5, 5, true)]);
        assert!(
            all_zero(&[&zero]),
            "the dispatch that did not run is not asked"
        );
        assert!(!all_zero(&[&zero, &live]));
        assert!(!all_zero(&[&idle]), "nothing ran");
        assert!(!all_zero(&[]));
    }

    #[test]
    fn problems_say_what_and_where() {
        let p = Problem::Undecodable {
            node: 2,
            requested: vec!["SQ_WAVES".into(), "GPU_UTIL".into()],
        };
        assert_eq!(
            p.to_string(),
            "the counter samples of GPU node 2 cannot be decoded (its agent, its counter setup \
             or the definitions of SQ_WAVES GPU_UTIL are missing)"
        );
        let e = Error::ShortOutput { got: 8, need: 64 };
        let p = Problem::Unreadable {
            dispatch: 7,
            error: e.clone(),
        };
        assert_eq!(
            p.to_string(),
            format!("dispatch 7: its counter read-back is unreadable: {e}")
        );
        let p = Problem::Unevaluable {
            dispatch: 7,
            error: e.clone(),
        };
        assert_eq!(
            p.to_string(),
            format!("dispatch 7: its counters cannot be evaluated: {e}")
        );
    }
}
