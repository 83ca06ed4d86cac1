//! What several integration tests share: the reference topology and counter helpers.

#![allow(dead_code)] // each test binary uses some of it

use pmc_dxg::{BaseEvent, Block, Topology};

/// The Radeon 890M (gfx1150) as KFD describes it under WSL2: one shader engine of two shader
/// arrays, 16 compute units (so 4 WGPs per shader array), one XCC.
pub fn radeon_890m() -> Topology {
    Topology {
        gfx: "gfx1150".into(),
        se: 1,
        cu: 16,
        sa: 2,
        xcc: 1,
    }
}

/// A gfx11 topology of `se` engines of `sa` arrays with `cu` compute units.
pub fn gfx11(gfx: &str, se: u32, sa: u32, cu: u32) -> Topology {
    Topology {
        gfx: gfx.into(),
        se,
        cu,
        sa,
        xcc: 1,
    }
}

/// A named base counter.
pub fn counter(block: Block, name: &str, event: u32) -> (String, BaseEvent) {
    (name.to_owned(), BaseEvent { block, event })
}

/// A named SQ counter.
pub fn sq(name: &str, event: u32) -> (String, BaseEvent) {
    counter(Block::Sq, name, event)
}

/// A named GRBM counter.
pub fn grbm(name: &str, event: u32) -> (String, BaseEvent) {
    counter(Block::Grbm, name, event)
}

/// A GPU agent built from a scenario node the way discovery derives the KFD properties.
pub fn agent_from(node: &wslsim_scenario::GpuNode, name: &str) -> trace_records::agents::Agent {
    use trace_records::agents::{Agent, AgentKind, GpuProperties};
    let cu = node.simd_count / node.simd_per_cu.max(1);
    let arrays = node.shader_engines.saturating_mul(node.arrays_per_engine);
    let e = node.engine_id;
    Agent {
        kind: AgentKind::Gpu,
        logical_node_id: 1,
        node_id: 1,
        logical_node_type_id: 0,
        name: name.to_owned(),
        product_name: "AMD Radeon(TM) 890M Graphics".to_owned(),
        vendor_name: "AMD".to_owned(),
        model_name: String::new(),
        cpu_cores_count: 0,
        gpu: Some(GpuProperties {
            gfx_target_version: u32::from(e.major) * 10000
                + u32::from(e.minor) * 100
                + u32::from(e.stepping),
            simd_count: node.simd_count,
            simd_per_cu: node.simd_per_cu,
            cu_count: cu,
            num_shader_banks: node.shader_engines,
            simd_arrays_per_engine: node.arrays_per_engine,
            array_count: arrays,
            cu_per_engine: cu / node.shader_engines.max(1),
            cu_per_simd_array: cu / arrays.max(1),
            wave_front_size: node.wave_front_size,
            max_waves_per_simd: node.max_waves_per_simd,
            max_waves_per_cu: node.max_waves_per_simd.saturating_mul(node.simd_per_cu),
            max_slots_scratch_cu: node.max_slots_scratch_cu,
            lds_size_in_kb: node.lds_kb,
            gds_size_in_kb: node.gds_kb,
            num_xcc: node.num_xcc,
            vendor_id: node.vendor_id.into(),
            device_id: node.device_id.into(),
            location_id: node.location_id,
            domain: node.domain,
            family_id: node.family_id,
            ..GpuProperties::default()
        }),
    }
}
