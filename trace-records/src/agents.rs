//! The agent record: built once by discovery (`wsl-topology`), carried in the log as a JSON
//! document, printed by `rocprof avail` and written to `agent_info.csv`. One type all the way.

use serde::{Deserialize, Serialize};
use std::fmt;

/// CPU or GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// A CPU agent.
    Cpu,
    /// A GPU agent.
    Gpu,
}

impl AgentKind {
    /// rocprofv3's spelling (`Agent_Type` cells, type-relative agent labels).
    pub fn csv_name(self) -> &'static str {
        match self {
            Self::Cpu => "CPU",
            Self::Gpu => "GPU",
        }
    }
}

/// One published agent. Built once at discovery; never modified afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// CPU or GPU.
    pub kind: AgentKind,
    /// Dense ordinal over all published agents (CPU first).
    pub logical_node_id: u32,
    /// The driver's node id: the KMT node id on WSL, the sysfs node on native Linux. HSA agents
    /// are paired by it.
    pub node_id: u32,
    /// Ordinal among agents of the same kind (GPU 0, GPU 1, …).
    pub logical_node_type_id: u32,
    /// The gfx target for a GPU (`gfx1150`), the CPU model for a CPU.
    pub name: String,
    /// Marketing name.
    pub product_name: String,
    /// `AMD` for GPUs, `CPU` for the synthesized CPU agent.
    pub vendor_name: String,
    /// Model name (empty where the platform reports none).
    pub model_name: String,
    /// Cores of a CPU agent (0 for a GPU).
    pub cpu_cores_count: u32,
    /// GPU properties; `None` for a CPU.
    pub gpu: Option<GpuProperties>,
}

impl Agent {
    /// Whether this is a GPU agent.
    pub fn is_gpu(&self) -> bool {
        self.kind == AgentKind::Gpu
    }
}

/// The properties of a GPU agent, as derived from its node topology.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct GpuProperties {
    /// `major·10000 + minor·100 + stepping` of the gfx target.
    pub gfx_target_version: u32,
    pub simd_count: u32,
    pub simd_per_cu: u32,
    pub cu_count: u32,
    /// Shader engines.
    pub num_shader_banks: u32,
    pub simd_arrays_per_engine: u32,
    /// Shader arrays in total (`num_shader_banks × simd_arrays_per_engine`).
    pub array_count: u32,
    pub cu_per_engine: u32,
    /// Derived (`cu_count / array_count`), not copied.
    pub cu_per_simd_array: u32,
    pub wave_front_size: u32,
    pub max_waves_per_simd: u32,
    pub max_waves_per_cu: u32,
    pub max_slots_scratch_cu: u32,
    pub lds_size_in_kb: u32,
    pub gds_size_in_kb: u32,
    pub num_gws: u32,
    pub num_xcc: u32,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u32,
    pub num_cp_queues: u32,
    pub max_engine_clk_fcompute: u32,
    pub max_engine_clk_ccompute: u32,
    pub vendor_id: u32,
    pub device_id: u32,
    pub location_id: u32,
    pub domain: u32,
    pub family_id: u32,
    pub capability: u32,
    pub hive_id: u64,
    /// KFD gpu id.
    pub gpu_id: u32,
    pub fw_version: u32,
    pub sdma_fw_version: u32,
    /// Low 64 bits of the UUID (the node's `UniqueID`); the rest is zero.
    pub unique_id: u64,
    /// Local (dedicated) memory in bytes.
    pub local_mem_size: u64,
    pub workgroup_max_size: u32,
    pub workgroup_max_dim: [u32; 3],
    pub grid_max_size: u32,
    pub grid_max_dim: [u32; 3],
    /// Windows adapter LUID (WSL only, when known).
    pub luid: Option<Luid>,
    /// GPU wall-clock frequency in kHz, when the node reports it.
    pub wallclock_khz: Option<u64>,
}

/// A Windows adapter LUID (`LowPart`, `HighPart`; the high part compared as unsigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Luid {
    /// `LowPart`.
    pub low: u32,
    /// `HighPart`, as its unsigned bit pattern.
    pub high: u32,
}

impl Luid {
    /// Both halves zero means "no LUID".
    pub fn is_present(self) -> bool {
        self.low != 0 || self.high != 0
    }
}

impl fmt::Display for Luid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}:0x{:08x}", self.high, self.low)
    }
}

/// How `Agent_Id` cells name agents (rocprofv3's `--agent-index`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AgentIndex {
    /// `Agent <logical_node_id>` (the default).
    #[default]
    Relative,
    /// `Agent <node_id>`.
    Absolute,
    /// `CPU <n>` / `GPU <n>`.
    TypeRelative,
}

/// Labels agents by driver node id.
#[derive(Debug, Clone, Default)]
pub struct AgentLabels {
    agents: Vec<Agent>,
    /// Each known agent's label, by driver node id (formatted once, not per row).
    labels: std::collections::HashMap<u32, String>,
}

impl AgentLabels {
    /// Labels for `agents` in the `index` style.
    pub fn new(agents: Vec<Agent>, index: AgentIndex) -> Self {
        let labels = agents
            .iter()
            .map(|a| {
                let label = match index {
                    AgentIndex::Relative => format!("Agent {}", a.logical_node_id),
                    AgentIndex::Absolute => format!("Agent {}", a.node_id),
                    AgentIndex::TypeRelative => {
                        format!("{} {}", a.kind.csv_name(), a.logical_node_type_id)
                    }
                };
                (a.node_id, label)
            })
            .rev() // the first agent of a node id wins, as a search from the front would
            .collect();
        Self { agents, labels }
    }

    /// The label of the agent with driver node id `node_id` (`Agent <node_id>` if unknown).
    pub fn label(&self, node_id: u32) -> std::borrow::Cow<'_, str> {
        match self.labels.get(&node_id) {
            Some(label) => label.as_str().into(),
            None => format!("Agent {node_id}").into(),
        }
    }

    /// The agents.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }
}
