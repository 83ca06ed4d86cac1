//! One KMT node's `HsaNodeProperties` values, independent of any layout.
//!
//! [`NodeRecord`] has one field per C member (the C name in snake case). It is built from the
//! scenario (the CPU node 0, or a GPU node) and turned into bytes by `layout::Layout::encode`.

use wslsim_scenario::{Cpu, GpuNode};

/// The values of every `HsaNodeProperties` member the sim knows (the 396-byte field set).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeRecord {
    pub num_cpu_cores: u32,
    pub num_fcompute_cores: u32,
    pub num_neural_cores: u32,
    pub num_memory_banks: u32,
    pub num_caches: u32,
    pub num_io_links: u32,
    pub ccompute_id_lo: u32,
    pub fcompute_id_lo: u32,
    pub capability: u32,
    pub capability2: u32,
    pub max_waves_per_simd: u32,
    pub lds_size_in_kb: u32,
    pub gds_size_in_kb: u32,
    pub wave_front_size: u32,
    pub num_shader_banks: u32,
    pub num_arrays: u32,
    pub num_cu_per_array: u32,
    pub num_simd_per_cu: u32,
    pub max_slots_scratch_cu: u32,
    /// `HSA_ENGINE_ID.Value`.
    pub engine_id: u32,
    /// `HSA_ENGINE_ID.Value`.
    pub override_engine_id: u32,
    pub vendor_id: u16,
    pub device_id: u16,
    pub location_id: u32,
    pub local_mem_size: u64,
    pub max_engine_clock_mhz_fcompute: u32,
    pub max_engine_clock_mhz_ccompute: u32,
    pub drm_render_minor: i32,
    /// UTF-16, without the NUL (the layout writes at most 63 units and a terminating NUL).
    pub marketing_name: Vec<u16>,
    /// Bytes, without the NUL (the layout writes at most 63 and a terminating NUL).
    pub amd_name: Vec<u8>,
    /// `HSA_ENGINE_VERSION.Value`.
    pub ucode_engine_versions: u32,
    pub debug_properties: u64,
    pub hive_id: u64,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u8,
    pub num_cp_queues: u8,
    pub num_gws: u8,
    pub integrated: u8,
    pub domain: u32,
    pub unique_id: u64,
    pub vgpr_size_per_cu: u32,
    pub sgpr_size_per_cu: u32,
    pub num_xcc: u32,
    pub kfd_gpu_id: u32,
    pub family_id: u32,
    pub cwsr_size: u32,
    pub ctl_stack_size: u32,
    pub luid_low_part: u32,
    pub luid_high_part: i32,
    pub wall_clock_khz: u64,
    pub fabric_handle_supported: u32,
}

/// FComputeIdLo of the first GPU node; each further GPU node adds 0x1000.
pub const FCOMPUTE_ID_BASE: u32 = 0x8000_1000;

/// UTF-16 units of `text` (the scenario parser rejects names that leave no room for the NUL;
/// the layout cuts any longer one anyway).
fn utf16_name(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

impl NodeRecord {
    /// KMT node 0: the CPU.
    pub fn cpu(cpu: &Cpu) -> Self {
        NodeRecord {
            num_cpu_cores: cpu.cores,
            num_fcompute_cores: 0,
            num_memory_banks: 1,
            marketing_name: utf16_name(&cpu.name),
            ..NodeRecord::default()
        }
    }

    /// KMT node `node_id` (1-based) for a scenario GPU node.
    pub fn gpu(node: &GpuNode, node_id: u32) -> Self {
        NodeRecord {
            num_cpu_cores: 0,
            num_fcompute_cores: node.simd_count,
            num_neural_cores: 0,
            num_memory_banks: node.num_memory_banks,
            num_caches: node.num_caches,
            num_io_links: node.num_io_links,
            ccompute_id_lo: 0,
            fcompute_id_lo: FCOMPUTE_ID_BASE
                .wrapping_add(0x1000_u32.wrapping_mul(node_id.saturating_sub(1))),
            capability: node.capability,
            capability2: node.capability2,
            max_waves_per_simd: node.max_waves_per_simd,
            lds_size_in_kb: node.lds_kb,
            gds_size_in_kb: node.gds_kb,
            wave_front_size: node.wave_front_size,
            num_shader_banks: node.shader_engines,
            num_arrays: node.arrays_per_engine,
            num_cu_per_array: node.cu_per_array,
            num_simd_per_cu: node.simd_per_cu,
            max_slots_scratch_cu: node.max_slots_scratch_cu,
            engine_id: node.engine_id.to_bits(),
            override_engine_id: node.override_engine_id.to_bits(),
            vendor_id: node.vendor_id,
            device_id: node.device_id,
            location_id: node.location_id,
            local_mem_size: node.local_mem_size,
            max_engine_clock_mhz_fcompute: node.max_clock_mhz,
            max_engine_clock_mhz_ccompute: node.ccompute_clock_mhz,
            drm_render_minor: node.drm_render_minor,
            marketing_name: utf16_name(&node.marketing_name),
            amd_name: node.amd_name.as_bytes().to_vec(),
            // HSA_ENGINE_VERSION: uCodeSDMA in bits 0-9, uCodeRes (0) in bits 10-19.
            ucode_engine_versions: u32::from(node.sdma_ucode) & 0x3FF,
            debug_properties: node.debug_properties,
            hive_id: node.hive_id,
            num_sdma_engines: node.num_sdma_engines,
            num_sdma_xgmi_engines: node.num_sdma_xgmi_engines,
            num_sdma_queues_per_engine: node.num_sdma_queues_per_engine,
            num_cp_queues: node.num_cp_queues,
            num_gws: node.num_gws,
            integrated: node.integrated,
            domain: node.domain,
            unique_id: node.unique_id,
            vgpr_size_per_cu: node.vgpr_size_per_cu,
            sgpr_size_per_cu: node.sgpr_size_per_cu,
            num_xcc: node.num_xcc,
            kfd_gpu_id: node.kfd_gpu_id,
            family_id: node.family_id,
            cwsr_size: node.cwsr_size,
            ctl_stack_size: node.ctl_stack_size,
            luid_low_part: node.luid.low,
            luid_high_part: node.luid.high,
            wall_clock_khz: node.wallclock_khz,
            fabric_handle_supported: node.fabric_handle_supported,
        }
    }
}
