//! What a run collects: the requested counters, the base counters the tool programs, and the
//! hygiene options, kept with the run so that a later evaluation works the same way.

use serde::{Deserialize, Serialize};
use trace_records::docs::{CounterEvent, CounterRequest};

use super::extra::ExtraCounters;

/// One counter pass: what was asked for, the base counters the tool programs, and the
/// hygiene options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPlan {
    /// The counters as the user named them (base and derived), in order.
    pub requested: Vec<String>,
    /// The base counters they need, in first-use order.
    pub events: Vec<CounterEvent>,
    /// Values of dispatches that start within this many milliseconds of the process's first
    /// counted dispatch are discarded (the warm-up window).
    #[serde(default)]
    pub discard_warmup_ms: Option<u64>,
    /// The extra definitions the counters were resolved with (kept whole, so a later
    /// evaluation resolves them as the run did).
    #[serde(default)]
    pub extra_counters: Option<ExtraCounters>,
}

impl CounterPlan {
    /// What the tool is handed.
    pub fn request(&self) -> CounterRequest {
        CounterRequest {
            events: self.events.clone(),
        }
    }
}
