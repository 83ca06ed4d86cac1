//! A fake thunk for logic tests: plain `extern "C"` functions over thread-local state, so each
//! test thread has its own thunk and a log of the calls made.

use crate::layout::{NodeLayout, NodeProps};
use rocdxg_sys::{
    HSA_ENGINE_ID, HSA_ENGINE_VERSION, HSAKMT_STATUS, HsaNodeProperties396, HsaStructureSizes,
    HsaSystemProperties, ThunkFns,
};
use std::cell::RefCell;
use zerocopy::{FromZeros, IntoBytes};

/// State of the fake thunk on this thread.
pub struct FakeThunk {
    /// Records by node id (node 0 is usually the CPU).
    pub nodes: Vec<HsaNodeProperties396>,
    /// Bytes each `hsaKmtGetNodeProperties` writes (the thunk's own `sizeof`).
    pub record_size: usize,
    /// Whether `DxgAbiCheck` is exported.
    pub has_abi_check: bool,
    /// `Some(n)`: DxgAbiCheck accepts exactly `n`; `None`: it accepts `record_size`.
    pub abi_accepts: Option<usize>,
    /// Status of `hsaKmtOpenKFD` (0, 22, or a failure).
    pub open_status: i32,
    /// Status of `hsaKmtAcquireSystemProperties`.
    pub acquire_status: i32,
    /// `NumNodes` reported instead of the node count (a damaged snapshot).
    pub reported_nodes: Option<u32>,
    /// Nodes whose `hsaKmtGetNodeProperties` fails with `ERROR`.
    pub failing_nodes: Vec<u32>,
    /// Every call, in order.
    pub calls: Vec<String>,
}

thread_local! {
    static FAKE: RefCell<Option<FakeThunk>> = const { RefCell::new(None) };
}

impl FakeThunk {
    /// A thunk with a CPU node 0 and the given GPU nodes, writing 396-byte records, with the
    /// handshake.
    pub fn new(gpus: Vec<HsaNodeProperties396>) -> Self {
        let mut nodes = vec![cpu_node()];
        nodes.extend(gpus);
        Self {
            nodes,
            record_size: 396,
            has_abi_check: true,
            abi_accepts: None,
            open_status: 0,
            acquire_status: 0,
            reported_nodes: None,
            failing_nodes: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Installs this thunk on the current thread and returns its entry points.
    pub fn install(self) -> ThunkFns {
        let has_abi = self.has_abi_check;
        FAKE.with(|f| *f.borrow_mut() = Some(self));
        ThunkFns {
            hsaKmtOpenKFD: open,
            hsaKmtAcquireSystemProperties: acquire,
            hsaKmtGetNodeProperties: get_node,
            hsaKmtReleaseSystemProperties: release,
            hsaKmtCloseKFD: close,
            DxgAbiCheck: has_abi.then_some(abi_check as rocdxg_sys::PFN_DxgAbiCheck),
            hsaKmtGetNodeWallclockFrequency: None,
        }
    }
}

/// The calls made on this thread's fake so far.
pub fn calls() -> Vec<String> {
    with(|f| f.calls.clone())
}

fn with<R>(op: impl FnOnce(&mut FakeThunk) -> R) -> R {
    FAKE.with(|f| op(f.borrow_mut().as_mut().expect("fake thunk not installed")))
}

/// A CPU node: no FCompute cores.
pub fn cpu_node() -> HsaNodeProperties396 {
    let mut n = HsaNodeProperties396::new_zeroed();
    n.NumCPUCores = 16;
    n
}

/// The gfx1150 fixture of the upstream tests (node values as the Radeon 890M reports them).
pub fn gfx1150() -> HsaNodeProperties396 {
    let mut n = HsaNodeProperties396::new_zeroed();
    n.NumFComputeCores = 32;
    n.NumSIMDPerCU = 2;
    n.NumShaderBanks = 1;
    n.NumArrays = 2;
    n.NumCUPerArray = 8;
    n.WaveFrontSize = 32;
    n.MaxWavesPerSIMD = 16;
    n.NumXcc = 1;
    n.EngineId = HSA_ENGINE_ID::new(11, 5, 0, 42);
    n.uCodeEngineVersions = HSA_ENGINE_VERSION { Value: 17 };
    n.VendorId = 0x1002;
    n.DeviceId = 0x150e;
    n.LocationId = 0x0300;
    n.FamilyID = 145;
    n.LuidLowPart = 0xAABB_CCDD;
    n.LuidHighPart = 0x11;
    n.UniqueID = 0x0123_4567_89AB_CDEF;
    n.MaxEngineClockMhzFCompute = 2900;
    n.LDSSizeInKB = 64;
    n.WallClockKHz = 100_000;
    n
}

/// [`gfx1150`] as the topology read decodes it: the fixture for logic past the read.
pub fn gfx1150_props() -> NodeProps {
    NodeLayout::L396
        .decode(gfx1150().as_bytes())
        .expect("a whole 396-byte record")
}

fn log(call: impl Into<String>) {
    with(|f| f.calls.push(call.into()));
}

unsafe extern "C" fn open() -> HSAKMT_STATUS {
    log("open");
    HSAKMT_STATUS(with(|f| f.open_status))
}

unsafe extern "C" fn close() -> HSAKMT_STATUS {
    log("close");
    HSAKMT_STATUS::SUCCESS
}

unsafe extern "C" fn release() -> HSAKMT_STATUS {
    log("release");
    HSAKMT_STATUS::SUCCESS
}

unsafe extern "C" fn acquire(props: *mut HsaSystemProperties) -> HSAKMT_STATUS {
    log("acquire");
    let (status, n) = with(|f| {
        (
            f.acquire_status,
            f.reported_nodes.unwrap_or(f.nodes.len() as u32),
        )
    });
    if status == 0 {
        // SAFETY: the caller passes a valid, writable HsaSystemProperties.
        unsafe { (*props).NumNodes = n };
    }
    HSAKMT_STATUS(status)
}

unsafe extern "C" fn get_node(node: u32, out: *mut core::ffi::c_void) -> HSAKMT_STATUS {
    log("get");
    with(|f| {
        if f.failing_nodes.contains(&node) {
            return HSAKMT_STATUS::ERROR;
        }
        let Some(record) = f.nodes.get(node as usize) else {
            return HSAKMT_STATUS::INVALID_NODE_UNIT;
        };
        let mut bytes = record.as_bytes().to_vec();
        bytes.resize(f.record_size, 0);
        // SAFETY: the caller's storage is at least `record_size` bytes (the point under test:
        // the product provides slack far beyond any record size used here).
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
        HSAKMT_STATUS::SUCCESS
    })
}

unsafe extern "C" fn abi_check(sizes: *mut HsaStructureSizes) -> HSAKMT_STATUS {
    // SAFETY: the caller passes a valid HsaStructureSizes.
    let sizes = unsafe { *sizes };
    let asked = sizes.SizeOfHsaNodeProperties;
    log(format!("abi_check({},{asked})", { sizes.StructureSizes }));
    with(|f| {
        let accepts = f.abi_accepts.unwrap_or(f.record_size);
        if sizes.StructureSizes == 16 && usize::from(asked) == accepts {
            HSAKMT_STATUS::SUCCESS
        } else {
            HSAKMT_STATUS::DRIVER_MISMATCH
        }
    })
}
