//! Pairing a DXCore adapter with the KMT node that describes it.

use crate::kmt::KmtNode;
use crate::layout::Luid;
use std::collections::BTreeSet;

/// The outcome of matching one adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeMatch {
    /// The node at this index of the node list.
    Found(usize),
    /// No available node matches.
    NotFound,
    /// Several available nodes match by device id and nothing tells them apart.
    Ambiguous,
}

/// Finds the node for an adapter with `luid` and PCI `device_id` among `nodes`, skipping
/// nodes whose ids are in `consumed`.
///
/// 1. If the adapter has a LUID, the first available node with the same LUID wins.
/// 2. Otherwise (or if none has it) the PCI device id is a fallback, and only when it names
///    exactly one available node: nodes that carry a LUID of their own are not candidates when
///    the adapter has one too (their LUID already said they are another adapter's).
/// 3. A device id of 0 matches nothing.
pub fn match_node(
    nodes: &[KmtNode],
    consumed: &BTreeSet<u32>,
    luid: Luid,
    device_id: u32,
) -> NodeMatch {
    let available = |n: &&KmtNode| !consumed.contains(&n.node_id);
    let node_luid = |n: &KmtNode| n.props.luid.filter(|l| l.is_present());
    if luid.is_present()
        && let Some(i) = nodes
            .iter()
            .position(|n| available(&n) && node_luid(n) == Some(luid))
    {
        return NodeMatch::Found(i);
    }
    if device_id == 0 {
        return NodeMatch::NotFound;
    }
    let mut candidates = nodes.iter().enumerate().filter(|(_, n)| {
        available(n)
            && u32::from(n.props.device_id) == device_id
            && !(luid.is_present() && node_luid(n).is_some())
    });
    match (candidates.next(), candidates.next()) {
        (Some((i, _)), None) => NodeMatch::Found(i),
        (Some(_), Some(_)) => NodeMatch::Ambiguous,
        (None, _) => NodeMatch::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::NodeProps;

    fn node(node_id: u32, device: u16, luid: (u32, u32)) -> KmtNode {
        KmtNode {
            node_id,
            props: NodeProps {
                device_id: device,
                luid: Some(Luid {
                    low: luid.0,
                    high: luid.1,
                }),
                simd_count: 32,
                ..Default::default()
            },
        }
    }

    fn m(nodes: &[KmtNode], consumed: &[u32], luid: (u32, u32), dev: u32) -> NodeMatch {
        match_node(
            nodes,
            &consumed.iter().copied().collect(),
            Luid {
                low: luid.0,
                high: luid.1,
            },
            dev,
        )
    }

    #[test]
    fn luid_is_preferred() {
        let nodes = [node(1, 0x7480, (1, 0)), node(2, 0x7480, (2, 0))];
        assert_eq!(m(&nodes, &[], (1, 0), 0x7480), NodeMatch::Found(0));
        assert_eq!(m(&nodes, &[], (2, 0), 0x7480), NodeMatch::Found(1));
        assert_eq!(
            m(&nodes, &[], (3, 0), 0x7480),
            NodeMatch::NotFound,
            "unknown LUID is not ambiguous"
        );
    }

    #[test]
    fn high_part_is_compared_too() {
        let nodes = [node(1, 0x7480, (1, 0xFFFF_FFFF)), node(2, 0x7480, (1, 0))];
        assert_eq!(m(&nodes, &[], (1, 0), 0x7480), NodeMatch::Found(1));
    }

    #[test]
    fn device_id_fallback_for_luid_less_nodes() {
        let nodes = [node(1, 0x150e, (0, 0))];
        assert_eq!(m(&nodes, &[], (7, 0), 0x150e), NodeMatch::Found(0));
        assert_eq!(m(&nodes, &[], (7, 0), 0x1234), NodeMatch::NotFound);
        assert_eq!(m(&nodes, &[], (7, 0), 0), NodeMatch::NotFound);
    }

    #[test]
    fn identical_devices_with_distinct_luids_do_not_alias() {
        let nodes = [node(1, 0x7480, (1, 0)), node(2, 0x7480, (2, 0))];
        assert_eq!(m(&nodes, &[1], (2, 0), 0x7480), NodeMatch::Found(1));
        assert_eq!(m(&nodes, &[2], (1, 0), 0x7480), NodeMatch::Found(0));
    }

    #[test]
    fn identical_devices_without_luids_are_ambiguous_until_one_is_consumed() {
        let nodes = [node(1, 0x7480, (0, 0)), node(2, 0x7480, (0, 0))];
        assert_eq!(m(&nodes, &[], (0, 0), 0x7480), NodeMatch::Ambiguous);
        assert_eq!(m(&nodes, &[1], (0, 0), 0x7480), NodeMatch::Found(1));
    }

    #[test]
    fn a_consumed_node_is_not_matched_again() {
        let nodes = [node(1, 0x150e, (5, 0))];
        assert_eq!(m(&nodes, &[1], (5, 0), 0x150e), NodeMatch::NotFound);
    }

    #[test]
    fn node_ids_survive_matching() {
        let nodes = [node(7, 0x150e, (9, 0))];
        let NodeMatch::Found(i) = m(&nodes, &[], (9, 0), 0x150e) else {
            panic!()
        };
        assert_eq!(nodes[i].node_id, 7);
    }
}
