use super::fake::{FakeThunk, calls, cpu_node, gfx1150};
use super::*;

fn read(thunk: FakeThunk, layout: NodeLayout) -> KmtRead {
    let fns = thunk.install();
    // SAFETY: the fake's entry points are valid for the whole test thread.
    unsafe { read_topology(&fns, "fake", layout) }
}

fn seq(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn two_nodes_read_in_the_fixed_order() {
    let r = read(FakeThunk::new(vec![gfx1150()]), NodeLayout::L396);
    assert_eq!(
        calls(),
        seq("abi_check(16,396) open acquire get get release close")
    );
    assert_eq!(r.total_nodes, 2);
    assert_eq!(r.gpu_nodes.len(), 1);
    assert_eq!(r.gpu_nodes[0].node_id, 1);
    assert_eq!(r.handshake, Handshake::Accepted(NodeLayout::L396));
    assert!(r.issues.is_empty() && r.failure.is_none());
}

#[test]
fn already_open_is_success_and_still_closed_once() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.open_status = 22;
    let r = read(t, NodeLayout::L396);
    let log22 = calls();
    assert_eq!(r.gpu_nodes.len(), 1);
    read(FakeThunk::new(vec![gfx1150()]), NodeLayout::L396);
    assert_eq!(
        log22,
        calls(),
        "open=0 and open=22 must produce identical call logs"
    );
    assert_eq!(log22.iter().filter(|c| *c == "close").count(), 1);
    assert_eq!(log22.last().unwrap(), "close");
}

#[test]
fn without_the_handshake_only_the_leading_check_is_missing() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("open acquire get get release close"));
    assert_eq!(r.handshake, Handshake::NotOffered);
    assert_eq!(r.gpu_nodes.len(), 1);
}

#[test]
fn cpu_nodes_are_skipped_silently() {
    let t = FakeThunk::new(vec![gfx1150(), cpu_node(), cpu_node(), gfx1150()]);
    let r = read(t, NodeLayout::L396);
    assert_eq!(r.total_nodes, 5);
    assert_eq!(
        r.gpu_nodes.iter().map(|n| n.node_id).collect::<Vec<_>>(),
        [1, 4]
    );
    assert!(r.issues.is_empty());
}

#[test]
fn failed_open_calls_nothing_else() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.open_status = 1;
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("open"));
    assert_eq!(r.failure, Some(ReadFailure::Open(HSAKMT_STATUS::ERROR)));
}

#[test]
fn failed_acquire_closes_without_release() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.acquire_status = 1;
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("open acquire close"));
    assert_eq!(r.failure, Some(ReadFailure::Acquire(HSAKMT_STATUS::ERROR)));
}

#[test]
fn a_garbage_node_count_reads_no_node() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.reported_nodes = Some(0xDEDE_DEDE);
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("open acquire release close"));
    assert_eq!(
        r.failure,
        Some(ReadFailure::ImplausibleNodeCount(0xDEDE_DEDE))
    );
    assert!(r.gpu_nodes.is_empty());
}

#[test]
fn a_failing_node_is_skipped_and_the_rest_read() {
    let mut t = FakeThunk::new(vec![gfx1150(), gfx1150()]);
    t.nodes[0] = gfx1150();
    t.failing_nodes = vec![1];
    let r = read(t, NodeLayout::L396);
    assert_eq!(
        r.gpu_nodes.iter().map(|n| n.node_id).collect::<Vec<_>>(),
        [0, 2]
    );
    assert_eq!(
        r.issues,
        [NodeIssue::GetFailed {
            node_id: 1,
            status: HSAKMT_STATUS::ERROR
        }]
    );
    let c = calls();
    assert_eq!(c.iter().filter(|c| *c == "release").count(), 1);
    assert_eq!(c.iter().filter(|c| *c == "close").count(), 1);
}

#[test]
fn empty_snapshot_releases_and_closes() {
    let mut t = FakeThunk::new(vec![]);
    t.nodes.clear();
    t.has_abi_check = false;
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("open acquire release close"));
    assert!(r.gpu_nodes.is_empty());
}

#[test]
fn rejected_handshake_calls_nothing_else() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.abi_accepts = Some(376);
    let r = read(t, NodeLayout::L396);
    assert_eq!(calls(), seq("abi_check(16,396)"));
    assert_eq!(
        r.failure,
        Some(ReadFailure::Rejected(
            NodeLayout::L396,
            HSAKMT_STATUS::DRIVER_MISMATCH
        ))
    );
    assert!(r.gpu_nodes.is_empty());
}

#[test]
fn a_longer_record_than_the_layout_is_refused_not_misread() {
    // A 396-byte thunk without the handshake, read by a 376-byte configuration.
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    let r = read(t, NodeLayout::L376);
    assert!(r.gpu_nodes.is_empty());
    assert_eq!(r.issues.len(), 2, "{:?}", r.issues);
    assert_eq!(
        r.issues[1],
        NodeIssue::LayoutMismatch {
            node_id: 1,
            expected: NodeLayout::L376,
            written: Written::Bytes(396)
        }
    );
}

#[test]
fn a_shorter_record_than_the_layout_is_refused() {
    // A 376-byte (ROCm 7.2) thunk without the handshake, read by a 396-byte configuration.
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.record_size = 376;
    let r = read(t, NodeLayout::L396);
    assert!(r.gpu_nodes.is_empty());
    assert!(r.issues.contains(&NodeIssue::LayoutMismatch {
        node_id: 1,
        expected: NodeLayout::L396,
        written: Written::Bytes(376)
    }));
}

#[test]
fn every_known_layout_reads_its_own_records() {
    for layout in NodeLayout::ALL {
        let mut t = FakeThunk::new(vec![gfx1150()]);
        t.record_size = layout.size();
        let r = read(t, layout);
        assert_eq!(r.gpu_nodes.len(), 1, "{layout:?}: {:?}", r.issues);
        let p = &r.gpu_nodes[0].props;
        assert_eq!(p.simd_count, 32);
        assert_eq!(p.family_id, 145);
        assert_eq!(p.luid.is_some(), layout.size() >= 392);
    }
}

#[test]
fn overrunning_the_whole_storage_is_reported_as_such() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.record_size = NODE_STORAGE;
    // The tail beyond 396 is zero-filled by the fake, so the last byte differs from the canary.
    let r = read(t, NodeLayout::L396);
    assert!(r.issues.iter().any(|i| matches!(
        i,
        NodeIssue::LayoutMismatch {
            written: Written::AtLeast(NODE_STORAGE),
            ..
        }
    )));
}

fn probe(thunk: FakeThunk) -> LayoutProbe {
    let fns = thunk.install();
    // SAFETY: the fake's entry points are valid for the whole test thread.
    unsafe { probe_layout(&fns) }
}

#[test]
fn probe_finds_the_accepted_layout_and_measures_it() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.record_size = 376;
    let p = probe(t);
    assert_eq!(p.accepted, Some(NodeLayout::L376));
    assert_eq!(
        p.refused.iter().map(|r| r.0).collect::<Vec<_>>(),
        [NodeLayout::L396, NodeLayout::L392]
    );
    assert_eq!(p.measured, Some(376));
    assert_eq!(p.recommended(), Some(NodeLayout::L376));
    assert!(!p.inconsistent());
}

#[test]
fn probe_measures_without_the_handshake_even_when_bytes_match_a_canary() {
    for size in [368, 376, 392, 396] {
        let mut t = FakeThunk::new(vec![gfx1150()]);
        t.has_abi_check = false;
        t.record_size = size;
        // The last word of every layout holds the canary's own bytes in the GPU node.
        let last = &mut t.nodes[1];
        match size {
            368 => last.FamilyID = u32::from_le_bytes([0xA5, 0x5A, 0xC3, 0x3C]),
            376 => last.CtlStackSize = u32::from_le_bytes([0xA5, 0x5A, 0xC3, 0x3C]),
            392 => {
                last.WallClockKHz =
                    u64::from_le_bytes([0xA5, 0x5A, 0xC3, 0x3C, 0xA5, 0x5A, 0xC3, 0x3C])
            }
            _ => last.FabricHandleSupported = u32::from_le_bytes([0xA5, 0x5A, 0xC3, 0x3C]),
        }
        t.nodes.remove(0);
        let p = probe(t);
        assert!(!p.handshake_offered);
        assert_eq!(p.measured, Some(size));
        assert_eq!(p.recommended().map(NodeLayout::size), Some(size));
    }
}

#[test]
fn probe_reports_an_unknown_size() {
    let mut t = FakeThunk::new(vec![gfx1150()]);
    t.has_abi_check = false;
    t.record_size = 420;
    let p = probe(t);
    assert_eq!(p.measured, Some(420));
    assert_eq!(
        p.recommended(),
        None,
        "420 bytes is no layout this build knows"
    );
}
