//! The D3DKMT structs of libdxcore's flat C exports, x86-64 Linux layouts (wsl-platform.md
//! §4.4), described by the sim itself with compile-time size and offset checks.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

/// `NTSTATUS`.
pub type NtStatus = i32;

/// STATUS_SUCCESS.
pub const STATUS_SUCCESS: NtStatus = 0;
/// STATUS_UNSUCCESSFUL (what a caught panic returns).
pub const STATUS_UNSUCCESSFUL: NtStatus = 0xC000_0001_u32.cast_signed();
/// STATUS_INVALID_PARAMETER.
pub const STATUS_INVALID_PARAMETER: NtStatus = 0xC000_000D_u32.cast_signed();
/// STATUS_BUFFER_TOO_SMALL.
pub const STATUS_BUFFER_TOO_SMALL: NtStatus = 0xC000_0023_u32.cast_signed();
/// STATUS_NOT_SUPPORTED.
pub const STATUS_NOT_SUPPORTED: NtStatus = 0xC000_00BB_u32.cast_signed();

/// `D3DKMT_HANDLE`.
pub type D3dkmtHandle = u32;

/// `D3DKMT_ENUMADAPTERS_FILTER` bit 0: IncludeComputeOnly.
pub const FILTER_INCLUDE_COMPUTE_ONLY: u64 = 1 << 0;
/// `D3DKMT_ENUMADAPTERS_FILTER` bit 1: IncludeDisplayOnly.
pub const FILTER_INCLUDE_DISPLAY_ONLY: u64 = 1 << 1;

/// KMTQAITYPE_GETSEGMENTSIZE.
pub const KMTQAITYPE_GETSEGMENTSIZE: u32 = 3;
/// KMTQAITYPE_ADAPTERADDRESS.
pub const KMTQAITYPE_ADAPTERADDRESS: u32 = 6;
/// KMTQAITYPE_ADAPTERREGISTRYINFO.
pub const KMTQAITYPE_ADAPTERREGISTRYINFO: u32 = 8;
/// KMTQAITYPE_PHYSICALADAPTERDEVICEIDS.
pub const KMTQAITYPE_PHYSICALADAPTERDEVICEIDS: u32 = 31;

/// `LUID`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Luid {
    /// LowPart.
    pub low_part: u32,
    /// HighPart.
    pub high_part: i32,
}

const _: () = assert!(size_of::<Luid>() == 8);
const _: () = assert!(offset_of!(Luid, low_part) == 0);
const _: () = assert!(offset_of!(Luid, high_part) == 4);

/// `D3DKMT_ADAPTERINFO` (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D3dkmtAdapterInfo {
    /// hAdapter.
    pub h_adapter: D3dkmtHandle,
    /// AdapterLuid.
    pub adapter_luid: Luid,
    /// NumOfSources.
    pub num_of_sources: u32,
    /// bPrecisePresentRegionsPreferred (a BOOL).
    pub b_precise_present_regions_preferred: i32,
}

const _: () = assert!(size_of::<D3dkmtAdapterInfo>() == 20);
const _: () = assert!(offset_of!(D3dkmtAdapterInfo, h_adapter) == 0);
const _: () = assert!(offset_of!(D3dkmtAdapterInfo, adapter_luid) == 4);
const _: () = assert!(offset_of!(D3dkmtAdapterInfo, num_of_sources) == 12);
const _: () = assert!(offset_of!(D3dkmtAdapterInfo, b_precise_present_regions_preferred) == 16);

/// `D3DKMT_ENUMADAPTERS3` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct D3dkmtEnumAdapters3 {
    /// Filter (`D3DKMT_ENUMADAPTERS_FILTER` as its u64 value).
    pub filter: u64,
    /// NumAdapters: in, the capacity of `p_adapters`; out, the count.
    pub num_adapters: u32,
    /// pAdapters.
    pub p_adapters: *mut D3dkmtAdapterInfo,
}

const _: () = assert!(size_of::<D3dkmtEnumAdapters3>() == 24);
const _: () = assert!(offset_of!(D3dkmtEnumAdapters3, filter) == 0);
const _: () = assert!(offset_of!(D3dkmtEnumAdapters3, num_adapters) == 8);
const _: () = assert!(offset_of!(D3dkmtEnumAdapters3, p_adapters) == 16);

/// `D3DKMT_QUERYADAPTERINFO` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct D3dkmtQueryAdapterInfo {
    /// hAdapter.
    pub h_adapter: D3dkmtHandle,
    /// Type (`KMTQUERYADAPTERINFOTYPE`).
    pub type_: u32,
    /// pPrivateDriverData.
    pub p_private_driver_data: *mut c_void,
    /// PrivateDriverDataSize.
    pub private_driver_data_size: u32,
}

const _: () = assert!(size_of::<D3dkmtQueryAdapterInfo>() == 24);
const _: () = assert!(offset_of!(D3dkmtQueryAdapterInfo, h_adapter) == 0);
const _: () = assert!(offset_of!(D3dkmtQueryAdapterInfo, type_) == 4);
const _: () = assert!(offset_of!(D3dkmtQueryAdapterInfo, p_private_driver_data) == 8);
const _: () = assert!(offset_of!(D3dkmtQueryAdapterInfo, private_driver_data_size) == 16);

/// `D3DKMT_CLOSEADAPTER`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct D3dkmtCloseAdapter {
    /// hAdapter.
    pub h_adapter: D3dkmtHandle,
}

const _: () = assert!(size_of::<D3dkmtCloseAdapter>() == 4);
const _: () = assert!(offset_of!(D3dkmtCloseAdapter, h_adapter) == 0);

/// `D3DKMT_SEGMENTSIZEINFO` (KMTQAITYPE_GETSEGMENTSIZE, 24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D3dkmtSegmentSizeInfo {
    /// DedicatedVideoMemorySize.
    pub dedicated_video_memory_size: u64,
    /// DedicatedSystemMemorySize.
    pub dedicated_system_memory_size: u64,
    /// SharedSystemMemorySize.
    pub shared_system_memory_size: u64,
}

const _: () = assert!(size_of::<D3dkmtSegmentSizeInfo>() == 24);
const _: () = assert!(offset_of!(D3dkmtSegmentSizeInfo, dedicated_video_memory_size) == 0);
const _: () = assert!(offset_of!(D3dkmtSegmentSizeInfo, dedicated_system_memory_size) == 8);
const _: () = assert!(offset_of!(D3dkmtSegmentSizeInfo, shared_system_memory_size) == 16);

/// `D3DKMT_ADAPTERADDRESS` (KMTQAITYPE_ADAPTERADDRESS, 12 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D3dkmtAdapterAddress {
    /// BusNumber.
    pub bus_number: u32,
    /// DeviceNumber.
    pub device_number: u32,
    /// FunctionNumber.
    pub function_number: u32,
}

const _: () = assert!(size_of::<D3dkmtAdapterAddress>() == 12);
const _: () = assert!(offset_of!(D3dkmtAdapterAddress, bus_number) == 0);
const _: () = assert!(offset_of!(D3dkmtAdapterAddress, device_number) == 4);
const _: () = assert!(offset_of!(D3dkmtAdapterAddress, function_number) == 8);

/// WCHARs per registry string (`MAX_PATH`); Linux libdxcore's WCHAR is 32 bits.
pub const REGISTRY_CHARS: usize = 260;

/// `D3DKMT_ADAPTERREGISTRYINFO` (KMTQAITYPE_ADAPTERREGISTRYINFO, 4160 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct D3dkmtAdapterRegistryInfo {
    /// AdapterString, NUL-terminated UTF-32.
    pub adapter_string: [u32; REGISTRY_CHARS],
    /// BiosString.
    pub bios_string: [u32; REGISTRY_CHARS],
    /// DacType.
    pub dac_type: [u32; REGISTRY_CHARS],
    /// ChipType.
    pub chip_type: [u32; REGISTRY_CHARS],
}

const _: () = assert!(size_of::<D3dkmtAdapterRegistryInfo>() == 4160);
const _: () = assert!(offset_of!(D3dkmtAdapterRegistryInfo, adapter_string) == 0);
const _: () = assert!(offset_of!(D3dkmtAdapterRegistryInfo, bios_string) == 1040);
const _: () = assert!(offset_of!(D3dkmtAdapterRegistryInfo, dac_type) == 2080);
const _: () = assert!(offset_of!(D3dkmtAdapterRegistryInfo, chip_type) == 3120);

/// `D3DKMT_DEVICE_IDS` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D3dkmtDeviceIds {
    /// VendorID.
    pub vendor_id: u32,
    /// DeviceID.
    pub device_id: u32,
    /// SubVendorID.
    pub sub_vendor_id: u32,
    /// SubSystemID.
    pub sub_system_id: u32,
    /// RevisionID.
    pub revision_id: u32,
    /// BusType.
    pub bus_type: u32,
}

const _: () = assert!(size_of::<D3dkmtDeviceIds>() == 24);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, vendor_id) == 0);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, device_id) == 4);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, sub_vendor_id) == 8);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, sub_system_id) == 12);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, revision_id) == 16);
const _: () = assert!(offset_of!(D3dkmtDeviceIds, bus_type) == 20);

/// `D3DKMT_QUERY_DEVICE_IDS` (KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, 28 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct D3dkmtQueryDeviceIds {
    /// PhysicalAdapterIndex (in).
    pub physical_adapter_index: u32,
    /// DeviceIds (out).
    pub device_ids: D3dkmtDeviceIds,
}

const _: () = assert!(size_of::<D3dkmtQueryDeviceIds>() == 28);
const _: () = assert!(offset_of!(D3dkmtQueryDeviceIds, physical_adapter_index) == 0);
const _: () = assert!(offset_of!(D3dkmtQueryDeviceIds, device_ids) == 4);
