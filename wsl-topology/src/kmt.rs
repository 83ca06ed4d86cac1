//! The KMT topology read through the DXG thunk, and the layout probe.
//!
//! Call sequence (fixed, never branching on how open succeeded or on the handshake's
//! presence): `[DxgAbiCheck?] hsaKmtOpenKFD, hsaKmtAcquireSystemProperties,
//! hsaKmtGetNodeProperties × N, hsaKmtReleaseSystemProperties, hsaKmtCloseKFD`.
//!
//! `hsaKmtGetNodeProperties` takes no size: the thunk writes its own `sizeof`. Each record is
//! therefore read into storage much longer than any known layout, pre-filled with a canary
//! pattern, and the extent the thunk actually wrote is measured. A record that runs past the
//! layout in use, or stops short of it, was written to a different layout and is refused
//! instead of being misread.

use crate::layout::{NodeLayout, NodeProps};
use rocdxg_sys::{HSAKMT_STATUS, HsaStructureSizes, HsaSystemProperties, ThunkFns};
use std::fmt;

/// Bytes of storage each record is read into (record + slack).
pub const NODE_STORAGE: usize = 1024;

#[repr(align(8))]
struct NodeStorage([u8; NODE_STORAGE]);

/// A canary pattern: position-dependent bytes no plausible field value repeats.
#[derive(Clone, Copy)]
struct Canary([u8; 4]);

const CANARY: Canary = Canary([0xA5, 0x5A, 0xC3, 0x3C]);
/// The bitwise complement of [`CANARY`]: no byte can equal both.
const CANARY_COMPLEMENT: Canary = Canary([0x5A, 0xA5, 0x3C, 0xC3]);

impl Canary {
    fn byte(self, i: usize) -> u8 {
        self.0[i % 4]
    }

    fn fill(self) -> NodeStorage {
        NodeStorage(core::array::from_fn(|i| self.byte(i)))
    }

    /// Whether byte `i` of `buf` still holds the pattern.
    fn intact(self, buf: &NodeStorage, i: usize) -> bool {
        buf.0[i] == self.byte(i)
    }
}

/// How far a thunk wrote into the storage, rounded up to the 4-byte packing of the struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Written {
    /// Exactly this many bytes (rounded up to a multiple of 4).
    Bytes(usize),
    /// The whole storage was overwritten: at least this many bytes, and memory beyond it may
    /// have been corrupted.
    AtLeast(usize),
}

impl Written {
    /// The extent of the bytes for which `changed(i)` holds.
    fn measure(changed: impl Fn(usize) -> bool) -> Self {
        match (0..NODE_STORAGE).rev().find(|&i| changed(i)) {
            Some(i) if i == NODE_STORAGE - 1 => Self::AtLeast(NODE_STORAGE),
            Some(i) => Self::Bytes((i + 1).div_ceil(4) * 4),
            None => Self::Bytes(0),
        }
    }

    /// The byte count (a lower bound for [`Written::AtLeast`]).
    pub fn bytes(self) -> usize {
        match self {
            Self::Bytes(n) | Self::AtLeast(n) => n,
        }
    }
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bytes(n) => write!(f, "{n} bytes"),
            Self::AtLeast(n) => write!(f, "at least {n} bytes"),
        }
    }
}

/// A GPU node as the thunk described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmtNode {
    /// The KMT node id (the thunk does not echo it; it is the index asked for).
    pub node_id: u32,
    /// The decoded record.
    pub props: NodeProps,
}

/// Outcome of the `DxgAbiCheck` handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// The thunk does not export `DxgAbiCheck`; its records are read on the assumption that
    /// the layouts match (and measured).
    NotOffered,
    /// The thunk accepted this record size.
    Accepted(NodeLayout),
    /// The thunk refused this record size.
    Rejected(NodeLayout, HSAKMT_STATUS),
}

/// A problem with one node that did not stop the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeIssue {
    /// `hsaKmtGetNodeProperties` failed.
    GetFailed {
        /// KMT node id.
        node_id: u32,
        /// Its status.
        status: HSAKMT_STATUS,
    },
    /// The thunk wrote a record of another size than the layout in use.
    LayoutMismatch {
        /// KMT node id.
        node_id: u32,
        /// The layout in use.
        expected: NodeLayout,
        /// What the thunk wrote.
        written: Written,
    },
}

/// Why the read produced nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFailure {
    /// `DxgAbiCheck` refused the layout in use (nothing else was called).
    Rejected(NodeLayout, HSAKMT_STATUS),
    /// `hsaKmtOpenKFD` failed (nothing to close).
    Open(HSAKMT_STATUS),
    /// `hsaKmtAcquireSystemProperties` failed (closed again).
    Acquire(HSAKMT_STATUS),
    /// `NumNodes` is beyond any real system's ([`MAX_NODES`]): the snapshot is garbage (a
    /// released thunk's freed memory, say), and no node was read.
    ImplausibleNodeCount(u32),
}

/// More KMT nodes than any system has (CPU sockets plus GPUs, partitions included); a larger
/// `NumNodes` is read as a damaged snapshot rather than walked node by node.
pub const MAX_NODES: u32 = 4096;

/// Everything the topology read learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmtRead {
    /// The layout records were read as.
    pub layout: NodeLayout,
    /// The handshake outcome.
    pub handshake: Handshake,
    /// The read stopped early for this reason.
    pub failure: Option<ReadFailure>,
    /// `NumNodes` of the system properties.
    pub total_nodes: u32,
    /// Nodes with FCompute cores, in node order.
    pub gpu_nodes: Vec<KmtNode>,
    /// Nodes that could not be used.
    pub issues: Vec<NodeIssue>,
}

/// Reads every KMT node through `fns` in `layout`.
///
/// # Safety
/// `fns` must be the entry points of a loaded thunk (valid for the duration of the call).
/// Like the HSA runtime, the read must not race with another user of the thunk's topology
/// snapshot: run it before `hsa_init`.
pub unsafe fn read_topology(fns: &ThunkFns, library: &str, layout: NodeLayout) -> KmtRead {
    let mut read = KmtRead {
        layout,
        handshake: Handshake::NotOffered,
        failure: None,
        total_nodes: 0,
        gpu_nodes: Vec::new(),
        issues: Vec::new(),
    };
    match fns.DxgAbiCheck {
        None => tracing::info!(
            "wsl topology: {library} does not export DxgAbiCheck, so the record layout cannot be negotiated; reading {}-byte HsaNodeProperties records on the assumption that the thunk writes the same, and measuring each one",
            layout.size()
        ),
        Some(check) => {
            // SAFETY: `check` is the thunk's DxgAbiCheck, given a valid struct.
            let status = unsafe { abi_check(check, layout) };
            if !status.is_success() {
                read.handshake = Handshake::Rejected(layout, status);
                read.failure = Some(ReadFailure::Rejected(layout, status));
                return read;
            }
            read.handshake = Handshake::Accepted(layout);
        }
    }

    let read_one = |node_id| {
        // SAFETY: `walk_snapshot` calls this with the snapshot held and node_id < NumNodes.
        unsafe { read_node(fns, layout, node_id, &mut read) }
    };
    // SAFETY: entry points of the loaded thunk; the caller runs this before hsa_init.
    let walked = unsafe { walk_snapshot(fns, read_one) };
    match walked {
        Ok(total_nodes) => {
            read.total_nodes = total_nodes;
            tracing::info!(
                "wsl topology: {} of {} KMT nodes report FCompute cores",
                read.gpu_nodes.len(),
                read.total_nodes
            );
        }
        Err(failure) => read.failure = Some(failure.into()),
    }
    read
}

/// Why [`walk_snapshot`] could not walk the nodes.
#[derive(Debug, Clone, Copy)]
enum SnapshotFailure {
    /// `hsaKmtOpenKFD` failed (nothing else was called).
    Open(HSAKMT_STATUS),
    /// `hsaKmtAcquireSystemProperties` failed (closed again).
    Acquire(HSAKMT_STATUS),
    /// `NumNodes` above [`MAX_NODES`] (released and closed again, no node read).
    Implausible(u32),
}

impl From<SnapshotFailure> for ReadFailure {
    fn from(f: SnapshotFailure) -> Self {
        match f {
            SnapshotFailure::Open(s) => Self::Open(s),
            SnapshotFailure::Acquire(s) => Self::Acquire(s),
            SnapshotFailure::Implausible(n) => Self::ImplausibleNodeCount(n),
        }
    }
}

/// Opens the thunk (`KERNEL_ALREADY_OPENED` counts as success), acquires its topology snapshot,
/// calls `per_node` for every node id below `NumNodes`, releases the snapshot, and closes the
/// thunk again whenever the open succeeded: `hsaKmtOpenKFD, hsaKmtAcquireSystemProperties,
/// per_node × N, hsaKmtReleaseSystemProperties, hsaKmtCloseKFD`. Returns `NumNodes`.
///
/// # Safety
/// As for [`read_topology`].
unsafe fn walk_snapshot(
    fns: &ThunkFns,
    mut per_node: impl FnMut(u32),
) -> Result<u32, SnapshotFailure> {
    // SAFETY: entry points of the loaded thunk, called in the documented order.
    let status = unsafe { (fns.hsaKmtOpenKFD)() };
    if !(status.is_success() || status == HSAKMT_STATUS::KERNEL_ALREADY_OPENED) {
        return Err(SnapshotFailure::Open(status));
    }
    let mut system = HsaSystemProperties::default();
    // SAFETY: `system` is a valid, writable HsaSystemProperties.
    let status = unsafe { (fns.hsaKmtAcquireSystemProperties)(&mut system) };
    let walked = if status.is_success() {
        let plausible = system.NumNodes <= MAX_NODES;
        if plausible {
            for node_id in 0..system.NumNodes {
                per_node(node_id);
            }
        }
        // SAFETY: releases the snapshot acquired above.
        let _ = unsafe { (fns.hsaKmtReleaseSystemProperties)() };
        match plausible {
            true => Ok(system.NumNodes),
            false => Err(SnapshotFailure::Implausible(system.NumNodes)),
        }
    } else {
        Err(SnapshotFailure::Acquire(status))
    };
    // SAFETY: balances the successful open (22 included).
    let _ = unsafe { (fns.hsaKmtCloseKFD)() };
    walked
}

/// # Safety
/// `check` must be a `DxgAbiCheck` entry point.
unsafe fn abi_check(check: rocdxg_sys::PFN_DxgAbiCheck, layout: NodeLayout) -> HSAKMT_STATUS {
    let mut sizes = HsaStructureSizes {
        StructureSizes: size_of::<HsaStructureSizes>() as u16,
        SizeOfHsaNodeProperties: layout.size() as u16,
        SizeOfHsaExternalHandleDesc: 0,
        Reserved: [0; 5],
    };
    // SAFETY: `sizes` is a valid HsaStructureSizes for the duration of the call.
    unsafe { check(&mut sizes) }
}

/// # Safety
/// The thunk must be open with its snapshot held.
unsafe fn read_node(fns: &ThunkFns, layout: NodeLayout, node_id: u32, read: &mut KmtRead) {
    let mut buf = CANARY.fill();
    // SAFETY: `buf` is NODE_STORAGE writable bytes, longer than any known record.
    let status = unsafe { (fns.hsaKmtGetNodeProperties)(node_id, buf.0.as_mut_ptr().cast()) };
    if !status.is_success() {
        read.issues.push(NodeIssue::GetFailed { node_id, status });
        return;
    }
    let written = Written::measure(|i| !CANARY.intact(&buf, i));
    if written != Written::Bytes(layout.size()) {
        read.issues.push(NodeIssue::LayoutMismatch {
            node_id,
            expected: layout,
            written,
        });
        return;
    }
    let Some(props) = layout.decode(&buf.0) else {
        return;
    };
    if props.simd_count == 0 {
        return; // a CPU node
    }
    read.gpu_nodes.push(KmtNode { node_id, props });
}

/// What the thunk says about record sizes, found without trusting any layout.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LayoutProbe {
    /// Whether the thunk exports `DxgAbiCheck`.
    pub handshake_offered: bool,
    /// The layout `DxgAbiCheck` accepted (largest first).
    pub accepted: Option<NodeLayout>,
    /// Layouts `DxgAbiCheck` refused, with the status.
    pub refused: Vec<(NodeLayout, i32)>,
    /// The record size the thunk actually writes, measured with two complementary canaries.
    pub measured: Option<usize>,
    /// Why no measurement could be made.
    pub measure_error: Option<String>,
}

impl LayoutProbe {
    /// The layout to use: the handshake's answer, else a measured size that is a known layout.
    pub fn recommended(&self) -> Option<NodeLayout> {
        self.accepted
            .or_else(|| self.measured.and_then(NodeLayout::from_size))
    }

    /// Whether the handshake and the measurement disagree (a thunk that accepts one size but
    /// writes another).
    pub fn inconsistent(&self) -> bool {
        matches!((self.accepted, self.measured), (Some(a), Some(m)) if a.size() != m)
    }
}

/// Finds the record size the thunk accepts (`DxgAbiCheck`, trying every known layout) and the
/// size it actually writes (every node read twice into storage pre-filled with complementary
/// canaries; a byte the thunk wrote differs from at least one of them).
///
/// Meant for a process of its own (the `rocprof` CLI): the handshake may change the thunk's
/// process-global state.
///
/// # Safety
/// As for [`read_topology`].
pub unsafe fn probe_layout(fns: &ThunkFns) -> LayoutProbe {
    let mut probe = LayoutProbe::default();
    if let Some(check) = fns.DxgAbiCheck {
        probe.handshake_offered = true;
        for layout in NodeLayout::ALL {
            // SAFETY: `check` is the thunk's DxgAbiCheck.
            let status = unsafe { abi_check(check, layout) };
            if status.is_success() {
                probe.accepted = Some(layout);
                break;
            }
            probe.refused.push((layout, status.0));
        }
    }
    let mut sizes = Vec::new();
    let measure_one = |node_id| {
        let mut a = CANARY.fill();
        let mut b = CANARY_COMPLEMENT.fill();
        // SAFETY: both buffers are NODE_STORAGE writable bytes; `walk_snapshot` calls this with
        // the snapshot held and node_id < NumNodes.
        let ok = unsafe {
            (fns.hsaKmtGetNodeProperties)(node_id, a.0.as_mut_ptr().cast()).is_success()
                && (fns.hsaKmtGetNodeProperties)(node_id, b.0.as_mut_ptr().cast()).is_success()
        };
        if ok {
            let w = Written::measure(|i| !CANARY.intact(&a, i) || !CANARY_COMPLEMENT.intact(&b, i));
            sizes.push(w.bytes());
        }
    };
    // SAFETY: entry points of the loaded thunk, as the caller guarantees.
    let walked = unsafe { walk_snapshot(fns, measure_one) };
    match walked {
        Ok(_) => {
            sizes.dedup();
            match sizes.as_slice() {
                [] => probe.measure_error = Some("no node could be read".into()),
                [size] => probe.measured = Some(*size),
                _ => {
                    probe.measure_error = Some(format!(
                        "nodes were written with different sizes: {sizes:?}"
                    ))
                }
            }
        }
        Err(SnapshotFailure::Open(status)) => {
            probe.measure_error = Some(format!("hsaKmtOpenKFD failed (status={status})"));
        }
        Err(SnapshotFailure::Acquire(status)) => {
            probe.measure_error = Some(format!(
                "hsaKmtAcquireSystemProperties failed (status={status})"
            ));
        }
        Err(SnapshotFailure::Implausible(n)) => {
            probe.measure_error = Some(format!(
                "the thunk reports {n} nodes, more than any system has: its topology snapshot is damaged"
            ));
        }
    }
    probe
}

#[cfg(test)]
pub(crate) mod fake;

#[cfg(test)]
mod tests;
