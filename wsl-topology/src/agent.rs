//! Building agent records, and the reasons something was not published.
//!
//! The record type itself ([`Agent`], with [`AgentKind`] and [`GpuProperties`]) lives in
//! `trace_records::agents`, so discovery, the record log, `rocprof avail` and every exporter
//! share one type; the omission kinds are `trace_records::docs::OmissionKind`.

use crate::layout::{Luid, NodeProps};
use serde::Serialize;
use std::fmt;

pub use trace_records::agents::{Agent, AgentKind, GpuProperties};
pub use trace_records::docs::OmissionKind;

/// A GPU agent published after `published`, whose ordinals it continues: vendor `AMD`, no
/// model, no cores; an empty `product_name` becomes `unknown`.
pub fn gpu_agent(
    published: &[Agent],
    node_id: u32,
    name: String,
    product_name: &str,
    gpu: GpuProperties,
) -> Agent {
    let (logical_node_id, logical_node_type_id) = next_ordinals(published, AgentKind::Gpu);
    Agent {
        kind: AgentKind::Gpu,
        logical_node_id,
        node_id,
        logical_node_type_id,
        name,
        product_name: gpu_product_name(product_name).to_owned(),
        vendor_name: "AMD".into(),
        model_name: String::new(),
        cpu_cores_count: 0,
        gpu: Some(gpu),
    }
}

/// A CPU agent published after `published`, whose ordinals it continues: vendor `CPU`, no
/// model; an empty `name` becomes `CPU`, and the product name is the name.
pub fn cpu_agent(published: &[Agent], node_id: u32, name: &str, cpu_cores_count: u32) -> Agent {
    let (logical_node_id, logical_node_type_id) = next_ordinals(published, AgentKind::Cpu);
    let name = if name.is_empty() { "CPU" } else { name };
    Agent {
        kind: AgentKind::Cpu,
        logical_node_id,
        node_id,
        logical_node_type_id,
        name: name.to_owned(),
        product_name: name.to_owned(),
        vendor_name: "CPU".into(),
        model_name: String::new(),
        cpu_cores_count,
        gpu: None,
    }
}

/// The `logical_node_id` and `logical_node_type_id` of the next agent of `kind` after
/// `published`.
fn next_ordinals(published: &[Agent], kind: AgentKind) -> (u32, u32) {
    let of_kind = published.iter().filter(|a| a.kind == kind).count();
    (published.len() as u32, of_kind as u32)
}

/// The product name a GPU agent is published with: `product`, or `unknown` when it is empty.
pub(crate) fn gpu_product_name(product: &str) -> &str {
    if product.is_empty() {
        "unknown"
    } else {
        product
    }
}

/// The five node fields without which a topology is incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incomplete {
    /// `NumFComputeCores`.
    pub simd_count: u32,
    /// `NumSIMDPerCU`.
    pub simd_per_cu: u32,
    /// `NumShaderBanks`.
    pub shader_banks: u32,
    /// `NumArrays`.
    pub arrays_per_engine: u32,
    /// `WaveFrontSize`.
    pub wave_front_size: u32,
}

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simd_count={} simd_per_cu={} shader_banks={} arrays_per_engine={} wave_front_size={}",
            self.simd_count,
            self.simd_per_cu,
            self.shader_banks,
            self.arrays_per_engine,
            self.wave_front_size
        )
    }
}

/// Derives a GPU's properties from its node record. `gfx_target_version`, `location_id`,
/// `local_mem_size` and `luid` are the caller's to fill when the platform knows better.
pub fn apply_node_topology(node_id: u32, p: &NodeProps) -> Result<GpuProperties, Incomplete> {
    if p.simd_count == 0
        || p.simd_per_cu == 0
        || p.shader_engines == 0
        || p.arrays_per_engine == 0
        || p.wave_front_size == 0
    {
        return Err(Incomplete {
            simd_count: p.simd_count,
            simd_per_cu: p.simd_per_cu,
            shader_banks: p.shader_engines,
            arrays_per_engine: p.arrays_per_engine,
            wave_front_size: p.wave_front_size,
        });
    }
    let cu_count = p.simd_count / p.simd_per_cu;
    let array_count = p.shader_engines * p.arrays_per_engine;
    let cu_per_simd_array = cu_count / array_count;
    if p.cu_per_array != cu_per_simd_array {
        tracing::warn!(
            "node {node_id} reports NumCUPerArray={} but {cu_count} compute units across {array_count} shader arrays ({} engines x {}) is {cu_per_simd_array} per array; using the derived value",
            p.cu_per_array,
            p.shader_engines,
            p.arrays_per_engine
        );
    }
    Ok(GpuProperties {
        gfx_target_version: 0,
        simd_count: p.simd_count,
        simd_per_cu: p.simd_per_cu,
        cu_count,
        num_shader_banks: p.shader_engines,
        simd_arrays_per_engine: p.arrays_per_engine,
        array_count,
        cu_per_engine: cu_count / p.shader_engines,
        cu_per_simd_array,
        wave_front_size: p.wave_front_size,
        max_waves_per_simd: p.max_waves_per_simd,
        max_waves_per_cu: p.simd_per_cu * p.max_waves_per_simd,
        max_slots_scratch_cu: p.max_slots_scratch_cu,
        lds_size_in_kb: p.lds_size_kb,
        gds_size_in_kb: p.gds_size_kb,
        num_gws: p.num_gws,
        num_xcc: p.num_xcc.max(1),
        num_sdma_engines: p.num_sdma_engines,
        num_sdma_xgmi_engines: p.num_sdma_xgmi_engines,
        num_sdma_queues_per_engine: p.num_sdma_queues_per_engine,
        num_cp_queues: p.num_cp_queues,
        max_engine_clk_fcompute: p.max_engine_clock_mhz_fcompute,
        max_engine_clk_ccompute: p.max_engine_clock_mhz_ccompute,
        vendor_id: p.vendor_id.into(),
        device_id: p.device_id.into(),
        location_id: p.location_id,
        domain: p.domain,
        family_id: p.family_id,
        capability: p.capability,
        hive_id: p.hive_id,
        gpu_id: p.kfd_gpu_id,
        fw_version: p.engine_id.ucode(),
        sdma_fw_version: p.sdma_ucode,
        unique_id: p.unique_id,
        local_mem_size: p.local_mem_size,
        workgroup_max_size: 1024,
        workgroup_max_dim: [1024, 1024, 1024],
        grid_max_size: i32::MAX as u32,
        grid_max_dim: [i32::MAX as u32, 65535, 65535],
        luid: p.luid.filter(|l| l.is_present()),
        wallclock_khz: p.wallclock_khz.filter(|&k| k != 0),
    })
}

/// The CPU agent published first on WSL, mirroring the HSA runtime's CPU node 0.
pub fn synthesized_cpu(model: Option<&str>, cores: i64) -> Agent {
    let name = model.map_or("", |m| {
        m.trim_matches([' ', '\t', '\r', '\n', '\x0b', '\x0c'])
    });
    cpu_agent(&[], 0, name, u32::try_from(cores).unwrap_or(0))
}

/// The "model name" of the first processor in `/proc/cpuinfo` text.
pub fn cpuinfo_model_name(cpuinfo: &str) -> Option<&str> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "model name").then_some(value)
    })
}

/// What an omission is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Subject {
    /// A DXCore adapter (index in enumeration order).
    Adapter {
        /// Enumeration index.
        index: u32,
        /// PCI vendor id, if it could be queried.
        vendor_id: Option<u32>,
        /// PCI device id, if it could be queried.
        device_id: Option<u32>,
        /// The adapter's LUID.
        luid: Luid,
    },
    /// A KMT (or KFD) node.
    Node {
        /// Its node id.
        node_id: u32,
    },
    /// A library (`libdxcore.so`, `librocdxg.so`).
    Library {
        /// Its name.
        name: String,
    },
    /// The platform as a whole.
    Platform,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Adapter {
                index,
                vendor_id,
                device_id,
                luid,
            } => {
                write!(f, "adapter {index}")?;
                if let (Some(v), Some(d)) = (vendor_id, device_id) {
                    write!(f, " (vendor 0x{v:04x} device 0x{d:04x}")?;
                    if luid.is_present() {
                        write!(f, ", LUID {luid}")?;
                    }
                    write!(f, ")")?;
                }
                Ok(())
            }
            Self::Node { node_id } => write!(f, "KMT node {node_id}"),
            Self::Library { name } => f.write_str(name),
            Self::Platform => f.write_str("platform"),
        }
    }
}

/// Something discovery did not publish, and why (in words a user can act on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Omission {
    /// What was left out.
    pub subject: Subject,
    /// The kind of reason (stable, for scripts and tests).
    pub kind: OmissionKind,
    /// The explanation.
    pub reason: String,
}

impl Omission {
    /// Records an omission and logs it (warning or info by kind).
    pub fn new(subject: Subject, kind: OmissionKind, reason: impl Into<String>) -> Self {
        let o = Self {
            subject,
            kind,
            reason: reason.into(),
        };
        if kind.is_warning() {
            tracing::warn!("{}: {}", o.subject, o.reason);
        } else {
            tracing::info!("{}: {}", o.subject, o.reason);
        }
        o
    }
}

impl fmt::Display for Omission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmt::fake::gfx1150_props;

    #[test]
    fn derives_counts_from_the_gfx1150_fixture() {
        let g = apply_node_topology(1, &gfx1150_props()).unwrap();
        assert_eq!(
            (
                g.simd_count,
                g.simd_per_cu,
                g.cu_count,
                g.num_shader_banks,
                g.simd_arrays_per_engine
            ),
            (32, 2, 16, 1, 2)
        );
        assert_eq!(
            (g.array_count, g.cu_per_simd_array, g.cu_per_engine),
            (2, 8, 16)
        );
        assert_eq!(
            (
                g.wave_front_size,
                g.max_waves_per_simd,
                g.max_waves_per_cu,
                g.num_xcc
            ),
            (32, 16, 32, 1)
        );
        assert_eq!(
            (g.fw_version, g.sdma_fw_version, g.max_engine_clk_fcompute),
            (42, 17, 2900)
        );
        assert_eq!(g.unique_id, 0x0123_4567_89AB_CDEF);
        assert_eq!(
            (g.workgroup_max_size, g.grid_max_size),
            (1024, i32::MAX as u32)
        );
    }

    #[test]
    fn four_engines_by_two_arrays() {
        let p = NodeProps {
            simd_count: 256,
            simd_per_cu: 2,
            shader_engines: 4,
            ..gfx1150_props()
        };
        let g = apply_node_topology(1, &p).unwrap();
        assert_eq!((g.array_count, g.cu_count, g.cu_per_engine), (8, 128, 32));
    }

    #[test]
    fn each_key_field_at_zero_makes_the_topology_incomplete() {
        let zeroed: [fn(&mut NodeProps); 5] = [
            |p| p.simd_count = 0,
            |p| p.simd_per_cu = 0,
            |p| p.shader_engines = 0,
            |p| p.arrays_per_engine = 0,
            |p| p.wave_front_size = 0,
        ];
        for zero in zeroed {
            let mut p = gfx1150_props();
            zero(&mut p);
            assert!(apply_node_topology(1, &p).is_err());
        }
    }

    #[test]
    fn xcc_zero_counts_as_one_and_cu_per_array_is_derived() {
        let p = NodeProps {
            num_xcc: 0,
            cu_per_array: 64,
            ..gfx1150_props()
        };
        let g = apply_node_topology(1, &p).unwrap();
        assert_eq!((g.num_xcc, g.cu_per_simd_array), (1, 8));
    }

    #[test]
    fn shared_types_keep_their_documented_json_names() {
        use crate::Platform;
        fn json(v: impl Serialize) -> String {
            serde_json::to_string(&v).unwrap()
        }
        assert_eq!(json(Platform::GnuLinux), r#""gnulinux""#);
        assert_eq!(json(Platform::Wsl), r#""wsl""#);
        for p in [Platform::GnuLinux, Platform::Wsl] {
            assert_eq!(json(p), format!("{:?}", p.name()));
        }
        assert_eq!(json(OmissionKind::LayoutMismatch), r#""layout-mismatch""#);
        assert_eq!(
            json(OmissionKind::KfdNodeUnreadable),
            r#""kfd-node-unreadable""#
        );
        assert_eq!(json(AgentKind::Cpu), r#""cpu""#);
        assert_eq!(json(Luid { low: 1, high: 2 }), r#"{"low":1,"high":2}"#);
    }

    #[test]
    fn agents_survive_the_log_unchanged() {
        let mut gpu = apply_node_topology(1, &gfx1150_props()).unwrap();
        gpu.gfx_target_version = 110500;
        let cpu = synthesized_cpu(Some("AMD Ryzen"), 24);
        let gpu = gpu_agent(std::slice::from_ref(&cpu), 1, "gfx1150".into(), "", gpu);
        assert_eq!(
            (
                gpu.logical_node_id,
                gpu.logical_node_type_id,
                gpu.product_name.as_str()
            ),
            (1, 0, "unknown")
        );
        for a in [cpu, gpu] {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(serde_json::from_str::<Agent>(&json).unwrap(), a, "{json}");
        }
    }

    #[test]
    fn cpu_agent_name_is_trimmed_or_defaulted() {
        let info = "processor\t: 0\nmodel name\t: \t AMD Ryzen AI 9 HX 370 \n";
        let cpu = synthesized_cpu(cpuinfo_model_name(info), 24);
        assert_eq!(cpu.name, "AMD Ryzen AI 9 HX 370");
        assert_eq!(cpu.cpu_cores_count, 24);
        assert_eq!(synthesized_cpu(Some("  \t"), -1).name, "CPU");
        assert_eq!(synthesized_cpu(None, 4).product_name, "CPU");
        assert_eq!(synthesized_cpu(None, -1).cpu_cores_count, 0);
    }
}
