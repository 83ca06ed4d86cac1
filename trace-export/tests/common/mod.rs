//! Helpers shared by several of this crate's test files (each includes this module).

use std::path::PathBuf;
use trace_records::agents::{Agent, AgentKind, GpuProperties};

/// A fresh, empty directory for test `test` of the `file` tests:
/// `<tmp>/trace-export-<file>-<pid>-<test>`.
pub fn scratch(file: &str, test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("trace-export-{file}-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An agent record: a CPU with 8 cores, or a GPU with a few properties set.
#[allow(dead_code)] // not every test file that includes this module builds agents
pub fn agent(kind: AgentKind, node_id: u32, name: &str) -> Agent {
    Agent {
        kind,
        logical_node_id: node_id,
        node_id,
        logical_node_type_id: 0,
        name: name.into(),
        product_name: format!("{name} product"),
        vendor_name: if kind == AgentKind::Gpu { "AMD" } else { "CPU" }.into(),
        model_name: String::new(),
        cpu_cores_count: if kind == AgentKind::Cpu { 8 } else { 0 },
        gpu: (kind == AgentKind::Gpu).then(|| GpuProperties {
            device_id: 0x150e,
            cu_count: 16,
            capability: 0b1010_0000_0001,
            fw_version: 0x0300_0123,
            workgroup_max_dim: [1024, 1024, 1024],
            ..Default::default()
        }),
    }
}
