//! `hipDeviceProp_tR0600`, the structure `hipGetDevicePropertiesR0600` fills (HIP >= 6.0;
//! `hipDeviceProp_t` is a macro for it).
//!
//! The layout mirrors the public header field by field (natural alignment, x86-64), and the
//! compile-time assertions pin its size (1472 bytes) and the offsets the simulator writes.
//! The simulator zeroes the whole structure and then fills the fields it can derive from the
//! HSA agent ([`crate::device::DeviceInfo`]); everything else stays 0. Callers in this
//! project only read `name`.

#![allow(non_snake_case, missing_docs)]

use std::ffi::c_char;

/// `hipUUID`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HipUuid {
    pub bytes: [c_char; 16],
}

/// `hipDeviceProp_tR0600`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HipDevicePropR0600 {
    pub name: [c_char; 256],
    pub uuid: HipUuid,
    pub luid: [c_char; 8],
    pub luidDeviceNodeMask: u32,
    pub totalGlobalMem: usize,
    pub sharedMemPerBlock: usize,
    pub regsPerBlock: i32,
    pub warpSize: i32,
    pub memPitch: usize,
    pub maxThreadsPerBlock: i32,
    pub maxThreadsDim: [i32; 3],
    pub maxGridSize: [i32; 3],
    pub clockRate: i32,
    pub totalConstMem: usize,
    pub major: i32,
    pub minor: i32,
    pub textureAlignment: usize,
    pub texturePitchAlignment: usize,
    pub deviceOverlap: i32,
    pub multiProcessorCount: i32,
    pub kernelExecTimeoutEnabled: i32,
    pub integrated: i32,
    pub canMapHostMemory: i32,
    pub computeMode: i32,
    pub maxTexture1D: i32,
    pub maxTexture1DMipmap: i32,
    pub maxTexture1DLinear: i32,
    pub maxTexture2D: [i32; 2],
    pub maxTexture2DMipmap: [i32; 2],
    pub maxTexture2DLinear: [i32; 3],
    pub maxTexture2DGather: [i32; 2],
    pub maxTexture3D: [i32; 3],
    pub maxTexture3DAlt: [i32; 3],
    pub maxTextureCubemap: i32,
    pub maxTexture1DLayered: [i32; 2],
    pub maxTexture2DLayered: [i32; 3],
    pub maxTextureCubemapLayered: [i32; 2],
    pub maxSurface1D: i32,
    pub maxSurface2D: [i32; 2],
    pub maxSurface3D: [i32; 3],
    pub maxSurface1DLayered: [i32; 2],
    pub maxSurface2DLayered: [i32; 3],
    pub maxSurfaceCubemap: i32,
    pub maxSurfaceCubemapLayered: [i32; 2],
    pub surfaceAlignment: usize,
    pub concurrentKernels: i32,
    pub ECCEnabled: i32,
    pub pciBusID: i32,
    pub pciDeviceID: i32,
    pub pciDomainID: i32,
    pub tccDriver: i32,
    pub asyncEngineCount: i32,
    pub unifiedAddressing: i32,
    pub memoryClockRate: i32,
    pub memoryBusWidth: i32,
    pub l2CacheSize: i32,
    pub persistingL2CacheMaxSize: i32,
    pub maxThreadsPerMultiProcessor: i32,
    pub streamPrioritiesSupported: i32,
    pub globalL1CacheSupported: i32,
    pub localL1CacheSupported: i32,
    pub sharedMemPerMultiprocessor: usize,
    pub regsPerMultiprocessor: i32,
    pub managedMemory: i32,
    pub isMultiGpuBoard: i32,
    pub multiGpuBoardGroupID: i32,
    pub hostNativeAtomicSupported: i32,
    pub singleToDoublePrecisionPerfRatio: i32,
    pub pageableMemoryAccess: i32,
    pub concurrentManagedAccess: i32,
    pub computePreemptionSupported: i32,
    pub canUseHostPointerForRegisteredMem: i32,
    pub cooperativeLaunch: i32,
    pub cooperativeMultiDeviceLaunch: i32,
    pub sharedMemPerBlockOptin: usize,
    pub pageableMemoryAccessUsesHostPageTables: i32,
    pub directManagedMemAccessFromHost: i32,
    pub maxBlocksPerMultiProcessor: i32,
    pub accessPolicyMaxWindowSize: i32,
    pub reservedSharedMemPerBlock: usize,
    pub hostRegisterSupported: i32,
    pub sparseHipArraySupported: i32,
    pub hostRegisterReadOnlySupported: i32,
    pub timelineSemaphoreInteropSupported: i32,
    pub memoryPoolsSupported: i32,
    pub gpuDirectRDMASupported: i32,
    pub gpuDirectRDMAFlushWritesOptions: u32,
    pub gpuDirectRDMAWritesOrdering: i32,
    pub memoryPoolSupportedHandleTypes: u32,
    pub deferredMappingHipArraySupported: i32,
    pub ipcEventSupported: i32,
    pub clusterLaunch: i32,
    pub unifiedFunctionPointers: i32,
    pub reserved: [i32; 63],
    pub hipReserved: [i32; 32],
    pub gcnArchName: [c_char; 256],
    pub maxSharedMemoryPerMultiProcessor: usize,
    pub clockInstructionRate: i32,
    /// `hipDeviceArch_t`: 17 one-bit flags in a 32-bit unit.
    pub arch: u32,
    pub hdpMemFlushCntl: *mut u32,
    pub hdpRegFlushCntl: *mut u32,
    pub cooperativeMultiDeviceUnmatchedFunc: i32,
    pub cooperativeMultiDeviceUnmatchedGridDim: i32,
    pub cooperativeMultiDeviceUnmatchedBlockDim: i32,
    pub cooperativeMultiDeviceUnmatchedSharedMem: i32,
    pub isLargeBar: i32,
    pub asicRevision: i32,
}

const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<HipDevicePropR0600>() == 1472);
    assert!(offset_of!(HipDevicePropR0600, name) == 0);
    assert!(offset_of!(HipDevicePropR0600, uuid) == 256);
    assert!(offset_of!(HipDevicePropR0600, totalGlobalMem) == 288);
    assert!(offset_of!(HipDevicePropR0600, warpSize) == 308);
    assert!(offset_of!(HipDevicePropR0600, maxThreadsPerBlock) == 320);
    assert!(offset_of!(HipDevicePropR0600, major) == 360);
    assert!(offset_of!(HipDevicePropR0600, multiProcessorCount) == 388);
    assert!(offset_of!(HipDevicePropR0600, reserved) == 780);
    assert!(offset_of!(HipDevicePropR0600, gcnArchName) == 1160);
    assert!(offset_of!(HipDevicePropR0600, asicRevision) == 1468);
};

/// Copies `text` into a C `char[N]` field, truncated and NUL-terminated.
pub fn put_string<const N: usize>(field: &mut [c_char; N], text: &str) {
    field.fill(0);
    for (dst, src) in field.iter_mut().zip(text.bytes().take(N - 1)) {
        *dst = src as c_char;
    }
}
