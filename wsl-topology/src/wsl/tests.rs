use super::*;
use crate::agent::AgentKind;
use crate::agent::OmissionKind as K;
use crate::layout::NodeProps;
use proptest::prelude::*;
use rocdxg_sys::HSA_ENGINE_ID;

fn props(device: u16, luid: (u32, u32)) -> NodeProps {
    NodeProps {
        device_id: device,
        luid: Some(Luid {
            low: luid.0,
            high: luid.1,
        }),
        location_id: 0,
        ..crate::kmt::fake::gfx1150_props()
    }
}

fn node(node_id: u32, device: u16, luid: (u32, u32)) -> KmtNode {
    KmtNode {
        node_id,
        props: props(device, luid),
    }
}

fn adapter(index: u32, vendor: u32, device: u32, luid: (u32, u32)) -> AdapterFacts {
    AdapterFacts {
        index,
        luid: Luid {
            low: luid.0,
            high: luid.1,
        },
        ids: Ok((vendor, device)),
        details: (vendor == AMD_VENDOR_ID).then(|| {
            Ok(AdapterDetails {
                bdf: (0xc5, 0, 0),
                description: "AMD Radeon(TM) 890M Graphics".into(),
                dedicated_video_memory: 512 << 20,
            })
        }),
    }
}

fn run(adapters: &[AdapterFacts], nodes: &[KmtNode]) -> (Vec<Agent>, Vec<Omission>) {
    publish(
        &Settings::default(),
        synthesized_cpu(Some("Test CPU"), 8),
        adapters,
        nodes,
    )
}

fn kinds(o: &[Omission]) -> Vec<K> {
    o.iter().map(|o| o.kind).collect()
}

#[test]
fn the_890m_is_published_after_the_cpu() {
    let (agents, omissions) = run(
        &[adapter(0, 0x1002, 0x150e, (0xd3a5, 0))],
        &[node(1, 0x150e, (0xd3a5, 0))],
    );
    assert!(omissions.is_empty(), "{omissions:?}");
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].kind, AgentKind::Cpu);
    let g = &agents[1];
    assert_eq!(
        (g.logical_node_id, g.node_id, g.logical_node_type_id),
        (1, 1, 0)
    );
    assert_eq!(
        (g.name.as_str(), g.product_name.as_str()),
        ("gfx1150", "AMD Radeon(TM) 890M Graphics")
    );
    let p = g.gpu.as_ref().unwrap();
    assert_eq!(p.gfx_target_version, 110500);
    assert_eq!(
        p.location_id, 0xc500,
        "derived from the BDF when the node reports none"
    );
    assert_eq!(p.local_mem_size, 512 << 20);
    assert_eq!(
        p.luid,
        Some(Luid {
            low: 0xd3a5,
            high: 0
        })
    );
}

#[test]
fn a_non_amd_adapter_is_skipped_with_an_info_reason() {
    let (agents, omissions) = run(&[adapter(0, 0x8086, 0x7d55, (1, 0))], &[]);
    assert_eq!(agents.len(), 1);
    assert_eq!(kinds(&omissions), [K::NonAmdAdapter]);
    assert!(!K::NonAmdAdapter.is_warning());
    assert!(
        omissions[0]
            .to_string()
            .starts_with("adapter 0 (vendor 0x8086 device 0x7d55")
    );
}

#[test]
fn identical_gpus_without_luids_are_both_omitted() {
    let nodes = [node(1, 0x7480, (0, 0)), node(2, 0x7480, (0, 0))];
    let (agents, omissions) = run(
        &[
            adapter(0, 0x1002, 0x7480, (0, 0)),
            adapter(1, 0x1002, 0x7480, (0, 0)),
        ],
        &nodes,
    );
    assert_eq!(agents.len(), 1);
    assert_eq!(
        kinds(&omissions),
        [
            K::AmbiguousAdapter,
            K::AmbiguousAdapter,
            K::UnclaimedNode,
            K::UnclaimedNode
        ]
    );
}

#[test]
fn identical_gpus_with_luids_are_both_published_and_correctly_paired() {
    let nodes = [node(1, 0x7480, (11, 0)), node(2, 0x7480, (22, 0))];
    let (agents, omissions) = run(
        &[
            adapter(0, 0x1002, 0x7480, (22, 0)),
            adapter(1, 0x1002, 0x7480, (11, 0)),
        ],
        &nodes,
    );
    assert!(omissions.is_empty(), "{omissions:?}");
    assert_eq!(
        agents.iter().map(|a| a.node_id).collect::<Vec<_>>(),
        [0, 2, 1]
    );
    assert_eq!(
        agents[1].gpu.as_ref().unwrap().luid,
        Some(Luid { low: 22, high: 0 })
    );
}

#[test]
fn an_incomplete_topology_is_omitted_and_its_node_stays_available() {
    let mut bad = node(1, 0x150e, (5, 0));
    bad.props.simd_per_cu = 0;
    let (agents, omissions) = run(&[adapter(0, 0x1002, 0x150e, (5, 0))], &[bad]);
    assert_eq!(agents.len(), 1);
    assert_eq!(kinds(&omissions), [K::IncompleteTopology, K::UnclaimedNode]);
    assert!(
        omissions[0].reason.contains("simd_per_cu=0"),
        "{}",
        omissions[0].reason
    );
}

#[test]
fn a_partially_described_system_publishes_what_it_can() {
    let mut bad = node(2, 0x7480, (2, 0));
    bad.props.wave_front_size = 0;
    let nodes = [node(1, 0x150e, (1, 0)), bad];
    let (agents, omissions) = run(
        &[
            adapter(0, 0x1002, 0x150e, (1, 0)),
            adapter(1, 0x1002, 0x7480, (2, 0)),
        ],
        &nodes,
    );
    assert_eq!(agents.iter().map(|a| a.node_id).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(kinds(&omissions), [K::IncompleteTopology, K::UnclaimedNode]);
}

#[test]
fn gfx_override_and_force() {
    let mut n = node(1, 0x150e, (1, 0));
    n.props.engine_id = HSA_ENGINE_ID::default();
    n.props.override_engine_id = HSA_ENGINE_ID::new(11, 0, 0, 0);
    let (agents, _) = run(
        &[adapter(0, 0x1002, 0x150e, (1, 0))],
        std::slice::from_ref(&n),
    );
    assert_eq!(agents[1].name, "gfx1100");

    let forced = Settings {
        force_gfx: crate::gfx::GfxTarget::parse("gfx942"),
        ..Default::default()
    };
    let (agents, _) = publish(
        &forced,
        synthesized_cpu(None, 1),
        &[adapter(0, 0x1002, 0x150e, (1, 0))],
        &[n],
    );
    assert_eq!(agents[1].name, "gfx942");
    assert_eq!(agents[1].gpu.as_ref().unwrap().gfx_target_version, 90402);
}

#[test]
fn a_node_without_an_engine_id_cannot_be_named() {
    let mut n = node(1, 0x150e, (1, 0));
    n.props.engine_id = HSA_ENGINE_ID::default();
    let (agents, omissions) = run(&[adapter(0, 0x1002, 0x150e, (1, 0))], &[n]);
    assert_eq!(agents.len(), 1);
    assert_eq!(kinds(&omissions), [K::UnparsableGfx, K::UnclaimedNode]);
}

#[test]
fn an_engine_id_whose_name_would_parse_as_another_target_is_refused() {
    // 11.10.5 would be named "gfx11105", which reads back as 111.0.5.
    let mut n = node(1, 0x150e, (1, 0));
    n.props.engine_id = HSA_ENGINE_ID::new(11, 10, 5, 0);
    let (agents, omissions) = run(&[adapter(0, 0x1002, 0x150e, (1, 0))], &[n]);
    assert_eq!(agents.len(), 1);
    assert_eq!(kinds(&omissions), [K::UnparsableGfx, K::UnclaimedNode]);
}

#[test]
fn failed_queries_discard_the_adapter_and_name_the_query() {
    let mut a = adapter(0, 0x1002, 0x150e, (1, 0));
    a.details = Some(Err(("ADAPTERREGISTRYINFO", NTSTATUS::INVALID_PARAMETER)));
    let mut b = adapter(1, 0x1002, 0x150e, (1, 0));
    b.ids = Err(NTSTATUS::NOT_SUPPORTED);
    let (agents, omissions) = run(&[a, b], &[node(1, 0x150e, (1, 0))]);
    assert_eq!(agents.len(), 1);
    assert_eq!(
        kinds(&omissions),
        [
            K::AdapterQueryFailed,
            K::AdapterQueryFailed,
            K::UnclaimedNode
        ]
    );
    assert!(omissions[0].reason.contains("ADAPTERREGISTRYINFO"));
}

#[test]
fn no_nodes_means_no_gpus_but_still_the_cpu() {
    let (agents, omissions) = run(&[adapter(0, 0x1002, 0x150e, (1, 0))], &[]);
    assert_eq!(agents.len(), 1);
    assert_eq!(kinds(&omissions), [K::NoMatchingNode]);
}

fn arb_luid() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![Just((0, 0)), (1u32..4).prop_map(|l| (l, 0))]
}

fn arb_device() -> impl Strategy<Value = u16> {
    prop_oneof![Just(0x150eu16), Just(0x7480), Just(0)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random adapter and node sets never publish a node twice, never publish an adapter
    /// without a node that matches it, and never pair devices that only a guess could tell
    /// apart.
    #[test]
    fn pairing_rules_hold(
        adapters in prop::collection::vec((any::<bool>(), arb_device(), arb_luid()), 0..5),
        nodes in prop::collection::vec((arb_device(), arb_luid(), any::<bool>()), 0..5),
    ) {
        let adapters: Vec<AdapterFacts> = adapters
            .iter()
            .enumerate()
            .map(|(i, &(amd, dev, luid))| adapter(i as u32, if amd { 0x1002 } else { 0x10de }, dev.into(), luid))
            .collect();
        let nodes: Vec<KmtNode> = nodes
            .iter()
            .enumerate()
            .map(|(i, &(dev, luid, complete))| {
                let mut n = node(i as u32 + 1, dev, luid);
                if !complete { n.props.simd_count = 0; n.props.shader_engines = 0; }
                n
            })
            .collect();
        let (agents, _) = run(&adapters, &nodes);
        let gpus: Vec<&Agent> = agents.iter().filter(|a| a.kind == AgentKind::Gpu).collect();
        prop_assert!(gpus.len() <= adapters.len());

        let mut seen = BTreeSet::new();
        for g in &gpus {
            prop_assert!(seen.insert(g.node_id), "node {} published twice", g.node_id);
            let n = nodes.iter().find(|n| n.node_id == g.node_id);
            prop_assert!(n.is_some(), "published a GPU without a node");
            let n = n.unwrap();
            let paired = adapters.iter().any(|a| {
                let Ok((vendor, device)) = a.ids else { return false };
                vendor == AMD_VENDOR_ID
                    && ((a.luid.is_present() && n.props.luid == Some(a.luid))
                        || (device != 0 && device == u32::from(n.props.device_id)))
            });
            prop_assert!(paired, "node {} published without an adapter that matches it", n.node_id);
        }

        // Without any LUID, a device id shared by two complete nodes is never published.
        let any_luid = adapters.iter().any(|a| a.luid.is_present())
            || nodes.iter().any(|n| n.props.luid.is_some_and(|l| l.is_present()));
        if !any_luid {
            for dev in [0x150eu16, 0x7480] {
                let twins = nodes.iter().filter(|n| n.props.device_id == dev).count();
                if twins >= 2 {
                    prop_assert!(gpus.iter().all(|g| g.gpu.as_ref().unwrap().device_id != u32::from(dev)));
                }
            }
        }
    }
}
