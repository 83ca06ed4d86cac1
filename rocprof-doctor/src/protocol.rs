//! What `rocprof doctor` and its self-test program (`rocprof-selftest`) exchange: the request
//! as the program's one argument (JSON), the outcome as one JSON document on its stdout. Both
//! sides use this module (the program, a binary of this crate, as `rocprof_doctor::protocol`),
//! so nothing is matched by string.

use serde::{Deserialize, Serialize};
use trace_records::agents::Agent;
use trace_records::docs::CounterEvent;

/// `schema` of [`Outcome`].
pub const SCHEMA: &str = "rocprof-selftest/1";

/// The file name the self-test loads the HSA runtime by when no application names another:
/// what applications link against (`DT_NEEDED`).
pub const DEFAULT_RUNTIME: &str = "libhsa-runtime64.so.1";

/// The value the marker packet (a PM4 `WRITE_DATA` in a vendor PM4-IB packet) writes (the
/// program's; `rocprof` reads only the verdict): the word every counter pass's start packet
/// writes as its proof of execution.
pub const MARKER_VALUE: u32 = pmc_dxg::pm4::PROOF_WORD;

/// What the self-test is asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The HSA runtime to `dlopen`: a file name (searched as the loader searches) or a path.
    pub runtime: String,
    /// Stop after `hsa_init` and the agent list (the probes of the runtime's generation).
    pub init_only: bool,
    /// The GPU agents discovery published: the counter pass is built for their topology.
    pub agents: Vec<Agent>,
    /// The base counters of the counter pass (`GRBM_COUNT`); empty: no counter pass.
    pub counters: Vec<CounterEvent>,
}

/// What the self-test saw, step by step (a step not reached is `None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Outcome {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The file the loader mapped for the runtime (from `dladdr` of `hsa_init`).
    pub runtime_path: Option<String>,
    /// Why the runtime could not be loaded (or lacks an entry point the test needs).
    pub load_error: Option<String>,
    /// `hsa_init`'s status.
    pub init: Option<StatusReport>,
    /// `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`.
    pub build_version: Option<String>,
    /// The runtime's agents.
    pub agents: Vec<HsaAgent>,
    /// The KMT node id of the GPU agent exercised.
    pub gpu_node: Option<u32>,
    /// A barrier-AND packet with a completion signal on a queue of that GPU.
    pub dispatch: Option<Step>,
    /// The marker packet: a vendor PM4-IB packet whose `WRITE_DATA` must land in memory.
    pub marker: Option<Step>,
    /// The counter pass (start, read and stop PM4-IB packets around the barrier).
    pub counters: Option<CounterStep>,
    /// The ROCm libraries mapped into the process after `hsa_init` (their files, in map order).
    pub mapped: Vec<String>,
    /// `hsa_shut_down`'s status.
    pub shut_down: Option<StatusReport>,
    /// Anything that kept a step from running, in words.
    pub problems: Vec<String>,
}

/// An HSA status with the runtime's own text for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// `hsa_status_t`.
    pub code: u32,
    /// `hsa_status_string`'s text (empty when it has none).
    pub text: String,
}

impl StatusReport {
    /// Whether this is `HSA_STATUS_SUCCESS`.
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// `0x1008 (HSA_STATUS_ERROR_OUT_OF_RESOURCES)`: the code and the status's name (the text
    /// before its explanation).
    pub fn describe(&self) -> String {
        let name = self.text.split(':').next().unwrap_or_default().trim();
        if name.is_empty() {
            format!("{:#x}", self.code)
        } else {
            format!("{:#x} ({name})", self.code)
        }
    }
}

/// One agent as the HSA runtime reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HsaAgent {
    /// `HSA_AGENT_INFO_NAME`.
    pub name: String,
    /// Whether it is a GPU.
    pub gpu: bool,
    /// `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`.
    pub node_id: Option<u32>,
}

/// One step that either completed or did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Whether it completed as it should.
    pub ok: bool,
    /// What was seen, in words.
    pub detail: String,
    /// Microseconds from submission to completion (or to giving up).
    pub micros: u64,
}

/// The counter pass's read-back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CounterStep {
    /// Each base counter's value, summed over its instances.
    pub values: Vec<CounterValue>,
    /// Why nothing (or not everything) came back.
    pub error: Option<String>,
}

/// One counter's value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterValue {
    /// The base counter.
    pub name: String,
    /// Its value (the sum of its instances).
    pub value: u64,
}
