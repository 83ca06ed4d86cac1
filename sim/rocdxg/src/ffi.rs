//! The small fixed C structs of the thunk ABI, described by the sim itself (x86-64 Linux).
//!
//! `HsaNodeProperties` is not here: its layout depends on the scenario and is described by the
//! field table in `layout.rs`.

use std::mem::{offset_of, size_of};

/// `HsaSystemProperties` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaSystemProperties {
    /// NumNodes: the CPU node plus the GPU nodes.
    pub num_nodes: u32,
    /// PlatformOem.
    pub platform_oem: u32,
    /// PlatformId.
    pub platform_id: u32,
    /// PlatformRev.
    pub platform_rev: u32,
}

const _: () = assert!(size_of::<HsaSystemProperties>() == 16);
const _: () = assert!(offset_of!(HsaSystemProperties, num_nodes) == 0);
const _: () = assert!(offset_of!(HsaSystemProperties, platform_oem) == 4);
const _: () = assert!(offset_of!(HsaSystemProperties, platform_id) == 8);
const _: () = assert!(offset_of!(HsaSystemProperties, platform_rev) == 12);

/// `HsaStructureSizes` (16 bytes), the argument of `DxgAbiCheck`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaStructureSizes {
    /// StructureSizes: `sizeof(HsaStructureSizes)` as the caller knows it (16).
    pub structure_sizes: u16,
    /// SizeOfHsaNodeProperties (0: not exchanged).
    pub size_of_hsa_node_properties: u16,
    /// SizeOfHsaExternalHandleDesc (0: not exchanged).
    pub size_of_hsa_external_handle_desc: u16,
    /// Reserved.
    pub reserved: [u16; 5],
}

const _: () = assert!(size_of::<HsaStructureSizes>() == 16);
const _: () = assert!(offset_of!(HsaStructureSizes, structure_sizes) == 0);
const _: () = assert!(offset_of!(HsaStructureSizes, size_of_hsa_node_properties) == 2);
const _: () = assert!(offset_of!(HsaStructureSizes, size_of_hsa_external_handle_desc) == 4);
const _: () = assert!(offset_of!(HsaStructureSizes, reserved) == 6);

/// `sizeof(HsaStructureSizes)` as `StructureSizes` must carry it.
pub const STRUCTURE_SIZES_SIZE: u16 = 16;

/// `HsaClockCounters` (32 bytes), filled by `hsaKmtGetClockCounters`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaClockCounters {
    /// GPUClockCounter: the node's GPU clock, in ticks of WallClockKHz.
    pub gpu_clock_counter: u64,
    /// CPUClockCounter: CLOCK_MONOTONIC ns.
    pub cpu_clock_counter: u64,
    /// SystemClockCounter: CLOCK_MONOTONIC ns.
    pub system_clock_counter: u64,
    /// SystemClockFrequencyHz: 1 000 000 000.
    pub system_clock_frequency_hz: u64,
}

const _: () = assert!(size_of::<HsaClockCounters>() == 32);
const _: () = assert!(offset_of!(HsaClockCounters, gpu_clock_counter) == 0);
const _: () = assert!(offset_of!(HsaClockCounters, cpu_clock_counter) == 8);
const _: () = assert!(offset_of!(HsaClockCounters, system_clock_counter) == 16);
const _: () = assert!(offset_of!(HsaClockCounters, system_clock_frequency_hz) == 24);
