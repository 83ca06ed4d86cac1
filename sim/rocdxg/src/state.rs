//! The thunk's process-global state and the rules of each KMT call, free of raw pointers.
//!
//! `kmt.rs` checks pointers, calls these methods under the state mutex, and copies results out.

use std::sync::{Mutex, MutexGuard, PoisonError};

use wslsim_scenario::{AbiCheck, Scenario, WriteSize};

use crate::ffi::{HsaStructureSizes, HsaSystemProperties, STRUCTURE_SIZES_SIZE};
use crate::layout::{LEGACY_WRITE_SIZE, Layout};
use crate::record::NodeRecord;
use crate::status::{self, HsaKmtStatus};

/// Hz reported by `hsaKmtGetNodeWallclockFrequency` for the CPU node 0.
pub const CPU_WALLCLOCK_HZ: u64 = 1_000_000_000;

/// What a released thunk leaves in the snapshot memory it frees: every byte of the system
/// properties and of every node record reads this afterwards (so `NumNodes` = 0xDEDEDEDE).
pub const FREED_BYTE: u8 = 0xDE;

/// Bytes of the `HsaSystemProperties` at the start of a snapshot.
const SYSTEM_BYTES: usize = 16;

/// A topology snapshot: the memory `hsaKmtAcquireSystemProperties` fills and
/// `hsaKmtGetNodeProperties` copies from — the `HsaSystemProperties` (16 bytes) followed by
/// every node's record at the thunk's full layout size.
#[derive(Debug)]
struct Snapshot {
    bytes: Vec<u8>,
    stride: usize,
}

impl Snapshot {
    fn num_nodes(&self) -> u32 {
        let mut word = [0_u8; 4];
        word.copy_from_slice(&self.bytes[..4]);
        u32::from_le_bytes(word)
    }

    /// Node `node_id`'s first `size` bytes; memory past the snapshot's end (a node id only a
    /// freed snapshot's garbage `NumNodes` admits) reads as freed memory.
    fn record(&self, node_id: u32, size: usize) -> Vec<u8> {
        let start = SYSTEM_BYTES + node_id as usize * self.stride;
        let mut out = vec![FREED_BYTE; size];
        if let Some(stored) = self.bytes.get(start..) {
            let take = size.min(self.stride).min(stored.len());
            out[..take].copy_from_slice(&stored[..take]);
        }
        out
    }
}

/// Everything the simulated thunk remembers between calls.
#[derive(Debug)]
pub struct ThunkState {
    scenario: Scenario,
    layout: Layout,
    open_count: u32,
    opened_before: bool,
    /// The snapshot memory the thunk points at (for a released thunk, possibly already freed).
    snapshot: Option<Snapshot>,
    /// How many acquires are not yet released (a released thunk counts at most 1).
    holders: u32,
    negotiated: u32,
}

impl ThunkState {
    /// Fresh state for `scenario`.
    ///
    /// # Panics
    /// If `scenario.thunk.layout` is not a valid layout (scenario files are validated when
    /// parsed, so only a programmatic scenario can get here).
    pub fn new(scenario: Scenario) -> Self {
        let layout = Layout::for_size(scenario.thunk.layout)
            .unwrap_or_else(|error| panic!("invalid thunk layout: {error}"));
        ThunkState {
            scenario,
            layout,
            open_count: 0,
            opened_before: false,
            snapshot: None,
            holders: 0,
            negotiated: 0,
        }
    }

    /// The scenario this state simulates.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// How many `hsaKmtOpenKFD` calls are not yet closed.
    pub fn open_count(&self) -> u32 {
        self.open_count
    }

    /// The node size accepted by the last successful `DxgAbiCheck` (0: none).
    pub fn negotiated(&self) -> u32 {
        self.negotiated
    }

    /// Bytes `hsaKmtGetNodeProperties` writes right now.
    pub fn write_size(&self) -> usize {
        match self.scenario.thunk.write_size {
            WriteSize::Layout => self.layout.size,
            WriteSize::Negotiated if self.negotiated != 0 => self.negotiated as usize,
            WriteSize::Negotiated => LEGACY_WRITE_SIZE as usize,
        }
    }

    /// `hsaKmtOpenKFD`.
    pub fn open(&mut self) -> HsaKmtStatus {
        let thunk = &self.scenario.thunk;
        if thunk.open_status != status::SUCCESS {
            return thunk.open_status;
        }
        let already = self.open_count > 0 || (thunk.kfd_already_open && !self.opened_before);
        self.open_count = self.open_count.saturating_add(1);
        self.opened_before = true;
        if already {
            status::KERNEL_ALREADY_OPENED
        } else {
            status::SUCCESS
        }
    }

    /// `hsaKmtCloseKFD`. The last close ends the KFD session: whatever snapshot the thunk
    /// still points at is forgotten (a live one with it).
    pub fn close(&mut self) -> HsaKmtStatus {
        if self.open_count == 0 {
            return status::KERNEL_IO_CHANNEL_NOT_OPENED;
        }
        self.open_count -= 1;
        if self.open_count == 0 {
            self.snapshot = None;
            self.holders = 0;
        }
        self.scenario.thunk.close_status
    }

    /// Whether the memory the thunk points at has been freed (a released thunk after a release
    /// in this KFD session).
    pub fn snapshot_freed(&self) -> bool {
        self.holders == 0 && self.snapshot.is_some()
    }

    /// A fresh snapshot of the scenario's topology.
    fn take_snapshot(&self) -> Snapshot {
        let num_nodes = self.scenario.num_kmt_nodes();
        let stride = self.layout.size;
        let mut bytes = vec![0_u8; SYSTEM_BYTES];
        bytes[..4].copy_from_slice(&num_nodes.to_le_bytes());
        for node_id in 0..num_nodes {
            match self.node_record(node_id) {
                Some(record) => bytes.extend(self.layout.encode(&record, stride)),
                None => bytes.resize(bytes.len() + stride, 0),
            }
        }
        Snapshot { bytes, stride }
    }

    /// `hsaKmtAcquireSystemProperties`; `have_out` is whether the caller's pointer is non-null.
    pub fn acquire(&mut self, have_out: bool) -> Result<HsaSystemProperties, HsaKmtStatus> {
        if self.open_count == 0 {
            return Err(status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        if !have_out {
            return Err(status::INVALID_PARAMETER);
        }
        if self.scenario.thunk.acquire_status != status::SUCCESS {
            return Err(self.scenario.thunk.acquire_status);
        }
        if self.scenario.thunk.snapshot_refcount {
            // Shared while held, counted; a fresh one once every holder released.
            if self.holders == 0 {
                self.snapshot = Some(self.take_snapshot());
            }
            self.holders = self.holders.saturating_add(1);
        } else {
            // The released packages: one snapshot pointer per KFD session, no count. A release
            // freed the memory but left the pointer, so this acquire reads what is there now.
            if self.snapshot.is_none() {
                self.snapshot = Some(self.take_snapshot());
            }
            self.holders = 1;
        }
        let num_nodes = self.snapshot.as_ref().map_or(0, Snapshot::num_nodes);
        Ok(HsaSystemProperties {
            num_nodes,
            ..HsaSystemProperties::default()
        })
    }

    /// `hsaKmtGetNodeProperties` (pointer already checked): the exact bytes to copy out.
    pub fn node_properties(&self, node_id: u32) -> Result<Vec<u8>, HsaKmtStatus> {
        let Some(snapshot) = self.snapshot.as_ref().filter(|_| self.holders > 0) else {
            return Err(status::ERROR);
        };
        // The bound is the snapshot's own NumNodes, as the thunk reads it from its memory.
        if node_id >= snapshot.num_nodes() {
            return Err(status::INVALID_NODE_UNIT);
        }
        let failure = self.scenario.thunk.node_status.get(&node_id).copied();
        if let Some(failure) = failure.filter(|&status| status != status::SUCCESS) {
            return Err(failure);
        }
        Ok(snapshot.record(node_id, self.write_size()))
    }

    /// The values of KMT node `node_id` (0 is the CPU).
    pub fn node_record(&self, node_id: u32) -> Option<NodeRecord> {
        if node_id == 0 {
            Some(NodeRecord::cpu(&self.scenario.cpu))
        } else {
            self.scenario
                .gpu_node(node_id)
                .map(|node| NodeRecord::gpu(node, node_id))
        }
    }

    /// `hsaKmtReleaseSystemProperties`.
    pub fn release(&mut self) -> HsaKmtStatus {
        if self.holders == 0 {
            return status::ERROR;
        }
        let failure = self.scenario.thunk.release_status;
        if failure != status::SUCCESS {
            return failure;
        }
        self.holders -= 1;
        if self.holders == 0 {
            if self.scenario.thunk.snapshot_refcount {
                self.snapshot = None;
            } else if let Some(snapshot) = &mut self.snapshot {
                // Freed, but still pointed at until the KFD session ends.
                snapshot.bytes.fill(FREED_BYTE);
            }
        }
        status::SUCCESS
    }

    /// `DxgAbiCheck`; `None` is a null pointer.
    pub fn abi_check(&mut self, sizes: Option<HsaStructureSizes>) -> HsaKmtStatus {
        let Some(sizes) = sizes else {
            return status::INVALID_PARAMETER;
        };
        if sizes.structure_sizes != STRUCTURE_SIZES_SIZE {
            return status::INVALID_PARAMETER;
        }
        let thunk = &self.scenario.thunk;
        let node = u32::from(sizes.size_of_hsa_node_properties);
        let handle = sizes.size_of_hsa_external_handle_desc;
        let layout = self.layout.size as u32;
        let accepted = match thunk.abi_check {
            AbiCheck::Absent => return status::NOT_IMPLEMENTED,
            AbiCheck::Reject => false,
            AbiCheck::Strict => node == layout,
            AbiCheck::Lenient => {
                let expected = thunk.handle_import_desc_size;
                (node == 0 || node == layout)
                    && (handle == 0 || expected == 0 || handle == expected)
            }
        };
        if !accepted {
            return status::DRIVER_MISMATCH;
        }
        if node != 0 {
            self.negotiated = node;
        }
        status::SUCCESS
    }

    /// `hsaKmtGetNodeWallclockFrequency` (pointer already checked).
    pub fn wallclock_hz(&self, node_id: u32) -> Result<u64, HsaKmtStatus> {
        if node_id == 0 {
            return Ok(CPU_WALLCLOCK_HZ);
        }
        self.scenario
            .gpu_node(node_id)
            .map(|node| node.wallclock_khz.saturating_mul(1000))
            .ok_or(status::INVALID_NODE_UNIT)
    }
}

static STATE: Mutex<Option<ThunkState>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<ThunkState>> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the process-global state, creating it from the process scenario on first use.
pub fn with_state<R>(f: impl FnOnce(&mut ThunkState) -> R) -> R {
    let mut guard = lock();
    let state = guard.get_or_insert_with(|| ThunkState::new(crate::this_copy().0.clone()));
    f(state)
}

/// Replaces the process-global state with fresh state for `scenario`.
pub fn reset(scenario: Scenario) {
    let state = ThunkState::new(scenario);
    *lock() = Some(state);
}
