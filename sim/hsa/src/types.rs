//! C types and constants of the HSA API (`hsa.h`, `hsa_ext_amd.h`, `amd_hsa_signal.h`) and of
//! the simulator-internal GPU interface of `librocdxg.so` (`docs/SIMULATOR.md`).
#![allow(missing_docs)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicU64};

/// `hsa_status_t`.
pub type Status = u32;

pub const SUCCESS: Status = 0;
pub const INFO_BREAK: Status = 1;
pub const ERROR: Status = 0x1000;
pub const ERROR_INVALID_ARGUMENT: Status = 0x1001;
pub const ERROR_INVALID_QUEUE_CREATION: Status = 0x1002;
pub const ERROR_INVALID_ALLOCATION: Status = 0x1003;
pub const ERROR_INVALID_AGENT: Status = 0x1004;
pub const ERROR_INVALID_REGION: Status = 0x1005;
pub const ERROR_INVALID_SIGNAL: Status = 0x1006;
pub const ERROR_INVALID_QUEUE: Status = 0x1007;
pub const ERROR_OUT_OF_RESOURCES: Status = 0x1008;
pub const ERROR_INVALID_PACKET_FORMAT: Status = 0x1009;
pub const ERROR_RESOURCE_FREE: Status = 0x100A;
pub const ERROR_NOT_INITIALIZED: Status = 0x100B;
pub const ERROR_REFCOUNT_OVERFLOW: Status = 0x100C;
pub const ERROR_INCOMPATIBLE_ARGUMENTS: Status = 0x100D;
pub const ERROR_INVALID_INDEX: Status = 0x100E;
pub const ERROR_INVALID_ISA: Status = 0x100F;
pub const ERROR_INVALID_CODE_OBJECT: Status = 0x1010;
pub const ERROR_INVALID_EXECUTABLE: Status = 0x1011;
pub const ERROR_FROZEN_EXECUTABLE: Status = 0x1012;
pub const ERROR_INVALID_SYMBOL_NAME: Status = 0x1013;
pub const ERROR_VARIABLE_ALREADY_DEFINED: Status = 0x1014;
pub const ERROR_VARIABLE_UNDEFINED: Status = 0x1015;
pub const ERROR_EXCEPTION: Status = 0x1016;
pub const ERROR_INVALID_CODE_SYMBOL: Status = 0x1017;
pub const ERROR_INVALID_EXECUTABLE_SYMBOL: Status = 0x1018;
pub const ERROR_INVALID_FILE: Status = 0x1020;
pub const ERROR_INVALID_CODE_OBJECT_READER: Status = 0x1021;
pub const ERROR_INVALID_CACHE: Status = 0x1022;
pub const ERROR_INVALID_WAVEFRONT: Status = 0x1023;
pub const ERROR_INVALID_SIGNAL_GROUP: Status = 0x1024;
pub const ERROR_INVALID_RUNTIME_STATE: Status = 0x1025;
pub const ERROR_FATAL: Status = 0x1026;

/// Every opaque HSA handle (`hsa_agent_t`, `hsa_signal_t`, ...): `struct { uint64_t handle; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    pub handle: u64,
}

pub type Agent = Handle;
pub type Signal = Handle;
pub type Region = Handle;
pub type MemoryPool = Handle;
pub type Isa = Handle;
pub type Executable = Handle;
pub type ExecutableSymbol = Handle;
pub type CodeObjectReader = Handle;
pub type LoadedCodeObject = Handle;

/// `hsa_queue_t` (40 bytes).
#[repr(C)]
pub struct HsaQueue {
    pub type_: u32,
    pub features: u32,
    pub base_address: *mut c_void,
    pub doorbell_signal: Signal,
    pub size: u32,
    pub reserved1: u32,
    pub id: u64,
}

const _: () = {
    assert!(size_of::<HsaQueue>() == 40);
    assert!(std::mem::offset_of!(HsaQueue, base_address) == 8);
    assert!(std::mem::offset_of!(HsaQueue, doorbell_signal) == 16);
    assert!(std::mem::offset_of!(HsaQueue, size) == 24);
    assert!(std::mem::offset_of!(HsaQueue, id) == 32);
};

/// `amd_signal_t` (64 bytes, 64-aligned). `hsa_signal_t.handle` is its address.
#[repr(C, align(64))]
pub struct AmdSignal {
    pub kind: i64,
    pub value: AtomicI64,
    pub event_mailbox_ptr: u64,
    pub event_id: u32,
    pub reserved1: u32,
    pub start_ts: AtomicU64,
    pub end_ts: AtomicU64,
    pub queue_ptr: u64,
    pub reserved3: u64,
}

pub const AMD_SIGNAL_KIND_USER: i64 = 1;

const _: () = {
    assert!(size_of::<AmdSignal>() == 64);
    assert!(align_of::<AmdSignal>() == 64);
    assert!(std::mem::offset_of!(AmdSignal, value) == 8);
    assert!(std::mem::offset_of!(AmdSignal, event_mailbox_ptr) == 16);
    assert!(std::mem::offset_of!(AmdSignal, event_id) == 24);
    assert!(std::mem::offset_of!(AmdSignal, start_ts) == 32);
    assert!(std::mem::offset_of!(AmdSignal, end_ts) == 40);
    assert!(std::mem::offset_of!(AmdSignal, queue_ptr) == 48);
    assert!(std::mem::offset_of!(AmdSignal, reserved3) == 56);
};

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelDispatchPacket {
    pub header: u16,
    pub setup: u16,
    pub workgroup_size_x: u16,
    pub workgroup_size_y: u16,
    pub workgroup_size_z: u16,
    pub reserved0: u16,
    pub grid_size_x: u32,
    pub grid_size_y: u32,
    pub grid_size_z: u32,
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    pub reserved2: u64,
    pub completion_signal: Signal,
}

/// `hsa_barrier_and_packet_t` / `hsa_barrier_or_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BarrierPacket {
    pub header: u16,
    pub reserved0: u16,
    pub reserved1: u32,
    pub dep_signal: [Signal; 5],
    pub reserved2: u64,
    pub completion_signal: Signal,
}

const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<KernelDispatchPacket>() == 64);
    assert!(offset_of!(KernelDispatchPacket, grid_size_x) == 12);
    assert!(offset_of!(KernelDispatchPacket, private_segment_size) == 24);
    assert!(offset_of!(KernelDispatchPacket, kernel_object) == 32);
    assert!(offset_of!(KernelDispatchPacket, kernarg_address) == 40);
    assert!(offset_of!(KernelDispatchPacket, completion_signal) == 56);
    assert!(size_of::<BarrierPacket>() == 64);
    assert!(offset_of!(BarrierPacket, dep_signal) == 8);
    assert!(offset_of!(BarrierPacket, completion_signal) == 56);
};

/// One 64-byte AQL packet slot, as raw bytes.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct RawPacket(pub [u8; 64]);

impl RawPacket {
    pub fn header(&self) -> u16 {
        u16::from_le_bytes([self.0[0], self.0[1]])
    }
    pub fn packet_type(&self) -> u8 {
        self.0[0]
    }
    pub fn u16_at(&self, offset: usize) -> u16 {
        u16::from_le_bytes([self.0[offset], self.0[offset + 1]])
    }
    pub fn u32_at(&self, offset: usize) -> u32 {
        let mut raw = [0u8; 4];
        raw.copy_from_slice(&self.0[offset..offset + 4]);
        u32::from_le_bytes(raw)
    }
    pub fn u64_at(&self, offset: usize) -> u64 {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&self.0[offset..offset + 8]);
        u64::from_le_bytes(raw)
    }
    pub fn completion_signal(&self) -> Signal {
        Signal {
            handle: self.u64_at(56),
        }
    }
    pub fn as_dispatch(&self) -> KernelDispatchPacket {
        // SAFETY: both are 64-byte plain-old-data types with no invalid bit patterns.
        unsafe { std::mem::transmute_copy(self) }
    }
    pub fn as_barrier(&self) -> BarrierPacket {
        // SAFETY: both are 64-byte plain-old-data types with no invalid bit patterns.
        unsafe { std::mem::transmute_copy(self) }
    }
}

/// AQL packet types (header bits [7:0]).
pub const PACKET_TYPE_VENDOR_SPECIFIC: u8 = 0;
pub const PACKET_TYPE_INVALID: u8 = 1;
pub const PACKET_TYPE_KERNEL_DISPATCH: u8 = 2;
pub const PACKET_TYPE_BARRIER_AND: u8 = 3;
pub const PACKET_TYPE_AGENT_DISPATCH: u8 = 4;
pub const PACKET_TYPE_BARRIER_OR: u8 = 5;
/// The header of a consumed or never-written slot.
pub const HEADER_INVALID: u16 = PACKET_TYPE_INVALID as u16;
/// AMD vendor packet formats (u8 at offset 2).
pub const AMD_AQL_FORMAT_PM4_IB: u8 = 1;
pub const AMD_AQL_FORMAT_INTERCEPT_MARKER: u8 = 0xFE;
/// The PM4 INDIRECT_BUFFER header of a PM4-IB vendor packet (dword 1).
pub const PM4_INDIRECT_BUFFER: u32 = 0xC002_3F00;

/// `hsa_amd_profiling_dispatch_time_t` / `hsa_amd_profiling_async_copy_time_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfilingTime {
    pub start: u64,
    pub end: u64,
}

/// Signal conditions.
pub const CONDITION_EQ: u32 = 0;
pub const CONDITION_NE: u32 = 1;
pub const CONDITION_LT: u32 = 2;
pub const CONDITION_GTE: u32 = 3;

/// `ApiTableVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ApiTableVersion {
    pub major_id: u32,
    pub minor_id: u32,
    pub step_id: u32,
    pub reserved: u32,
}

// ---- librocdxg.so: hsaKmt and the simulator-internal GPU interface ----

/// `HsaSystemProperties`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HsaSystemProperties {
    pub num_nodes: u32,
    pub platform_oem: u32,
    pub platform_id: u32,
    pub platform_rev: u32,
}

/// `HsaStructureSizes` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HsaStructureSizes {
    pub structure_sizes: u16,
    pub size_of_hsa_node_properties: u16,
    pub size_of_hsa_external_handle_desc: u16,
    pub reserved: [u16; 5],
}

/// `HsaClockCounters` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HsaClockCounters {
    pub gpu_clock_counter: u64,
    pub cpu_clock_counter: u64,
    pub system_clock_counter: u64,
    pub system_clock_frequency_hz: u64,
}

/// `wslsim_dispatch_t` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WslsimDispatch {
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
    pub wave_size: u16,
    pub vgprs: u32,
    pub sgprs: u32,
    pub lds_bytes: u32,
    pub scratch_bytes: u32,
    pub valu_per_wave: u32,
    pub salu_per_wave: u32,
    pub cycles_per_wave: u32,
    pub run: Option<unsafe extern "C" fn(*mut c_void)>,
    pub ctx: *mut c_void,
    /// Device address of the kernel's first instruction (0 if unknown).
    pub code_address: u64,
}

/// `wslsim_timing_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WslsimTiming {
    pub start_tick: u64,
    pub end_tick: u64,
}

/// `wslsim_launch_t` (28 bytes as declared): the second argument of a kernel's CPU implementation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WslsimLaunch {
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
    pub reserved: u16,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
}

/// The CPU implementation of a simulated kernel.
pub type KernelImpl = unsafe extern "C" fn(kernarg: *const c_void, launch: *const WslsimLaunch);

const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<HsaStructureSizes>() == 16);
    assert!(size_of::<HsaClockCounters>() == 32);
    assert!(size_of::<WslsimDispatch>() == 72);
    assert!(offset_of!(WslsimDispatch, workgroup) == 12);
    assert!(offset_of!(WslsimDispatch, wave_size) == 18);
    assert!(offset_of!(WslsimDispatch, vgprs) == 20);
    assert!(offset_of!(WslsimDispatch, lds_bytes) == 28);
    assert!(offset_of!(WslsimDispatch, valu_per_wave) == 36);
    assert!(offset_of!(WslsimDispatch, cycles_per_wave) == 44);
    assert!(offset_of!(WslsimDispatch, run) == 48);
    assert!(offset_of!(WslsimDispatch, ctx) == 56);
    assert!(offset_of!(WslsimDispatch, code_address) == 64);
    assert!(size_of::<WslsimTiming>() == 16);
    // docs/SIMULATOR.md labels it "32 bytes", but its members as declared occupy 28 (the C
    // layout of that declaration is what both sides compile).
    assert!(size_of::<WslsimLaunch>() == 28);
    assert!(offset_of!(WslsimLaunch, group_segment_size) == 20);
    assert!(offset_of!(WslsimLaunch, private_segment_size) == 24);
};
