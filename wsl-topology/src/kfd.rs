//! The native-Linux enumerator: KFD sysfs topology (`.../topology/nodes/<id>/properties`).

use crate::agent::{
    Agent, Omission, OmissionKind, Subject, apply_node_topology, cpu_agent, gpu_agent,
};
use crate::gfx::GfxTarget;
use crate::layout::NodeProps;
use std::collections::HashMap;
use std::path::Path;

/// Parses a KFD `properties` file: one `name value` pair per line.
pub fn parse_properties(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (k, v) = (it.next()?, it.next()?);
            Some((k, v.parse().ok()?))
        })
        .collect()
}

/// Enumerates the nodes under `root` (a `.../topology/nodes` directory), in node-id order.
pub fn enumerate(root: &Path) -> (Vec<Agent>, Vec<Omission>) {
    let mut ids: Vec<u32> = match std::fs::read_dir(root) {
        Ok(rd) => rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(e) => {
            let o = Omission::new(
                Subject::Platform,
                OmissionKind::KfdNodeUnreadable,
                format!("cannot list {}: {e}", root.display()),
            );
            return (Vec::new(), vec![o]);
        }
    };
    ids.sort_unstable();
    let mut agents: Vec<Agent> = Vec::new();
    let mut omissions = Vec::new();
    for node_id in ids {
        let dir = root.join(node_id.to_string());
        let text = match std::fs::read_to_string(dir.join("properties")) {
            Ok(t) => t,
            Err(e) => {
                omissions.push(Omission::new(
                    Subject::Node { node_id },
                    OmissionKind::KfdNodeUnreadable,
                    format!("cannot read {}: {e}", dir.join("properties").display()),
                ));
                continue;
            }
        };
        let props = parse_properties(&text);
        let get = |k: &str| props.get(k).copied().unwrap_or(0);
        let get32 = |k: &str| u32::try_from(get(k)).unwrap_or(u32::MAX);
        let name_file = std::fs::read_to_string(dir.join("name")).unwrap_or_default();
        if get("simd_count") == 0 {
            let cpu = cpu_agent(&agents, node_id, name_file.trim(), get32("cpu_cores_count"));
            agents.push(cpu);
            continue;
        }
        let arrays_per_engine = get32("simd_arrays_per_engine");
        let node = NodeProps {
            simd_count: get32("simd_count"),
            simd_per_cu: get32("simd_per_cu"),
            shader_engines: get32("array_count")
                .checked_div(arrays_per_engine)
                .unwrap_or(0),
            arrays_per_engine,
            cu_per_array: get32("cu_per_simd_array"),
            wave_front_size: get32("wave_front_size"),
            max_waves_per_simd: get32("max_waves_per_simd"),
            max_slots_scratch_cu: get32("max_slots_scratch_cu"),
            lds_size_kb: get32("lds_size_in_kb"),
            gds_size_kb: get32("gds_size_in_kb"),
            num_gws: get32("num_gws"),
            num_xcc: get32("num_xcc"),
            num_sdma_engines: get32("num_sdma_engines"),
            num_sdma_xgmi_engines: get32("num_sdma_xgmi_engines"),
            num_sdma_queues_per_engine: get32("num_sdma_queues_per_engine"),
            num_cp_queues: get32("num_cp_queues"),
            max_engine_clock_mhz_fcompute: get32("max_engine_clk_fcompute"),
            max_engine_clock_mhz_ccompute: get32("max_engine_clk_ccompute"),
            vendor_id: get("vendor_id") as u16,
            device_id: get("device_id") as u16,
            location_id: get32("location_id"),
            domain: get32("domain"),
            family_id: get32("family_id"),
            capability: get32("capability"),
            hive_id: get("hive_id"),
            kfd_gpu_id: std::fs::read_to_string(dir.join("gpu_id"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
            engine_id: rocdxg_sys::HSA_ENGINE_ID::new(0, 0, 0, get32("fw_version")),
            sdma_ucode: get32("sdma_fw_version"),
            unique_id: get("unique_id"),
            local_mem_size: get("local_mem_size"),
            ..Default::default()
        };
        let Some(target) = GfxTarget::from_version(get32("gfx_target_version")) else {
            omissions.push(Omission::new(
                Subject::Node { node_id },
                OmissionKind::UnparsableGfx,
                format!(
                    "gfx_target_version {} is not a valid gfx target",
                    get("gfx_target_version")
                ),
            ));
            continue;
        };
        let mut gpu = match apply_node_topology(node_id, &node) {
            Ok(g) => g,
            Err(missing) => {
                omissions.push(Omission::new(
                    Subject::Node { node_id },
                    OmissionKind::IncompleteTopology,
                    format!("the KFD node describes an incomplete topology ({missing})"),
                ));
                continue;
            }
        };
        gpu.gfx_target_version = target.version();
        let agent = gpu_agent(&agents, node_id, target.to_string(), name_file.trim(), gpu);
        agents.push(agent);
    }
    (agents, omissions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentKind;
    use std::fs;

    const GPU: &str = "cpu_cores_count 0\nsimd_count 192\nmem_banks_count 1\nmax_waves_per_simd 16\nlds_size_in_kb 64\nwave_front_size 32\narray_count 12\nsimd_arrays_per_engine 2\ncu_per_simd_array 8\nsimd_per_cu 2\nmax_slots_scratch_cu 32\ngfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\nlocation_id 768\ndomain 0\nfw_version 2270\nsdma_fw_version 21\nunique_id 1234567\nnum_xcc 1\nmax_engine_clk_fcompute 2500\nfamily_id 145\n";

    fn fixture(nodes: &[(&str, &str, &str)]) -> std::path::PathBuf {
        let root = std::env::temp_dir()
            .join(format!(
                "wsl-topology-kfd-{}-{}",
                std::process::id(),
                nodes.len()
            ))
            .join("nodes");
        let _ = fs::remove_dir_all(&root);
        for (id, props, name) in nodes {
            let d = root.join(id);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("properties"), props).unwrap();
            fs::write(d.join("name"), name).unwrap();
            fs::write(d.join("gpu_id"), "4660\n").unwrap();
        }
        root
    }

    #[test]
    fn reads_cpu_and_gpu_nodes_from_a_sysfs_tree() {
        let root = fixture(&[
            ("0", "cpu_cores_count 16\nsimd_count 0\n", "\n"),
            ("1", GPU, "navi31\n"),
            ("junk", "", ""),
        ]);
        let (agents, omissions) = enumerate(&root);
        assert!(omissions.is_empty(), "{omissions:?}");
        assert_eq!(agents.len(), 2);
        assert_eq!(
            (agents[0].kind, agents[0].cpu_cores_count),
            (AgentKind::Cpu, 16)
        );
        let gpu = &agents[1];
        assert_eq!(
            (gpu.name.as_str(), gpu.node_id, gpu.logical_node_type_id),
            ("gfx1100", 1, 0)
        );
        let g = gpu.gpu.as_ref().unwrap();
        assert_eq!(
            (
                g.cu_count,
                g.num_shader_banks,
                g.array_count,
                g.cu_per_simd_array
            ),
            (96, 6, 12, 8)
        );
        assert_eq!(
            (g.device_id, g.gpu_id, g.fw_version),
            (29772, 4660, 2270 & 0x3ff)
        );
    }

    #[test]
    fn incomplete_and_unnamed_nodes_are_omitted_with_reasons() {
        let root = fixture(&[
            ("0", "cpu_cores_count 8\nsimd_count 0\n", ""),
            (
                "1",
                &GPU.replace("wave_front_size 32", "wave_front_size 0"),
                "",
            ),
            (
                "2",
                &GPU.replace("gfx_target_version 110000", "gfx_target_version 0"),
                "",
            ),
            ("3", GPU, ""),
        ]);
        let (agents, omissions) = enumerate(&root);
        assert_eq!(agents.len(), 2);
        assert_eq!(agents[1].node_id, 3);
        assert_eq!(agents[1].product_name, "unknown");
        let kinds: Vec<_> = omissions
            .iter()
            .map(|o| (o.subject.clone(), o.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    Subject::Node { node_id: 1 },
                    OmissionKind::IncompleteTopology
                ),
                (Subject::Node { node_id: 2 }, OmissionKind::UnparsableGfx)
            ]
        );
    }

    #[test]
    fn a_missing_root_is_an_omission_not_a_panic() {
        let (agents, omissions) = enumerate(Path::new("/nonexistent/kfd/topology/nodes"));
        assert!(agents.is_empty());
        assert_eq!(omissions[0].kind, OmissionKind::KfdNodeUnreadable);
    }
}
