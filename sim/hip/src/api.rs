//! The implementations behind the HIP runtime table entries (what the exported functions reach
//! through `HipDispatchTable`). Each one catches panics, records its result as the thread's
//! last error (`HIP_RETURN` semantics, see [`crate::error::record`]) and, except the pure
//! string lookups, initialises the runtime lazily.

// Every `unsafe extern "C"` entry point here has the same safety contract: that of the HIP
// API function it implements (valid handles; pointers valid for what the API reads or writes).
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::BTreeSet;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use crate::error::{self, HipError};
use crate::ops::{self, Dim3};
use crate::props::{HipDevicePropR0600, put_string};
use crate::runtime::{self, Runtime};
use crate::{memory, modules};

/// `HIP_VERSION_MAJOR` / `MINOR` / `PATCH` of the simulated runtime (HIP 7.0).
pub const HIP_VERSION_MAJOR: u32 = 7;
pub const HIP_VERSION_MINOR: u32 = 0;
pub const HIP_VERSION_PATCH: u32 = 51831;
/// `HIP_VERSION` = major·10⁷ + minor·10⁵ + patch (`hipRuntimeGetVersion`, `hipDriverGetVersion`).
pub const HIP_VERSION: i32 =
    (HIP_VERSION_MAJOR * 10_000_000 + HIP_VERSION_MINOR * 100_000 + HIP_VERSION_PATCH) as i32;

/// Runs an API body: panics become `hipErrorUnknown`; the result is recorded as last error.
pub fn api(body: impl FnOnce() -> Result<(), HipError>) -> HipError {
    let result = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => error::SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => error::UNKNOWN,
    };
    error::record(result)
}

/// [`api`] with the runtime initialised first.
pub fn api_rt(body: impl FnOnce(&'static Runtime) -> Result<(), HipError>) -> HipError {
    api(|| body(runtime::runtime()?))
}

/// Writes `value` through an out-pointer (`hipErrorInvalidValue` if null).
///
/// # Safety
///
/// `out` is null or writable.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), HipError> {
    if out.is_null() {
        return Err(error::INVALID_VALUE);
    }
    // SAFETY: non-null and writable (contract); no alignment assumed.
    unsafe { out.write_unaligned(value) };
    Ok(())
}

pub unsafe extern "C" fn hipInit(flags: u32) -> HipError {
    api_rt(|_| {
        if flags == 0 {
            Ok(())
        } else {
            Err(error::INVALID_VALUE)
        }
    })
}

pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> HipError {
    api(|| {
        let devices = runtime::runtime().map_or(0, |rt| rt.devices.len());
        // SAFETY: caller's out-pointer.
        unsafe { put(count, devices as c_int)? };
        if devices == 0 {
            Err(error::NO_DEVICE)
        } else {
            Ok(())
        }
    })
}

pub unsafe extern "C" fn hipSetDevice(device: c_int) -> HipError {
    api_rt(|rt| {
        rt.device(device)?;
        ops::set_current_device(device);
        Ok(())
    })
}

pub unsafe extern "C" fn hipGetDevice(device: *mut c_int) -> HipError {
    // SAFETY: caller's out-pointer.
    api_rt(|_| unsafe { put(device, ops::current_device()) })
}

/// Fills a `hipDeviceProp_tR0600`: zeroed, then the fields derivable from the HSA agent.
pub fn fill_properties(rt: &Runtime, ordinal: i32) -> Result<HipDevicePropR0600, HipError> {
    let d = &rt.device(ordinal)?.info;
    // SAFETY: the structure is plain integers, arrays and raw pointers: all-zero is valid.
    let mut p: HipDevicePropR0600 = unsafe { std::mem::zeroed() };
    put_string(&mut p.name, &d.product_name);
    put_string(&mut p.gcnArchName, &d.arch_name);
    p.totalGlobalMem = d.memory_bytes as usize;
    p.sharedMemPerBlock = 64 * 1024;
    p.regsPerBlock = 65536;
    p.warpSize = d.wavefront_size as i32;
    p.maxThreadsPerBlock = d.workgroup_max_size as i32;
    p.maxThreadsDim = d.workgroup_max_dim.map(i32::from);
    p.maxGridSize = d.grid_max_dim.map(|g| g.min(i32::MAX as u32) as i32);
    p.clockRate = (d.max_clock_mhz * 1000) as i32;
    p.memoryClockRate = (d.memory_max_mhz * 1000) as i32;
    p.memoryBusWidth = d.memory_width as i32;
    p.multiProcessorCount = d.compute_units as i32;
    p.l2CacheSize = d.l2_cache_bytes as i32;
    p.maxThreadsPerMultiProcessor = (d.max_waves_per_cu * d.wavefront_size) as i32;
    p.pciBusID = ((d.bdfid >> 8) & 0xFF) as i32;
    p.pciDeviceID = ((d.bdfid >> 3) & 0x1F) as i32;
    p.pciDomainID = d.domain as i32;
    p.integrated = i32::from(d.svm_direct_host_access);
    p.canMapHostMemory = 1;
    p.concurrentKernels = 1;
    p.unifiedAddressing = 1;
    p.asicRevision = d.asic_revision as i32;
    (p.major, p.minor) = arch_version(&d.arch_name);
    Ok(p)
}

/// `major`/`minor` of a `gfxMMmS` name: major = the digits before the last two, minor = the
/// second-to-last character (gfx1150 → 11.5, gfx90a → 9.0); (0, 0) if it does not parse.
pub fn arch_version(arch: &str) -> (i32, i32) {
    let Some(digits) = arch
        .strip_prefix("gfx")
        .filter(|d| d.len() >= 3 && d.is_ascii())
    else {
        return (0, 0);
    };
    let (major, rest) = digits.split_at(digits.len() - 2);
    match (major.parse(), i32::from_str_radix(&rest[..1], 16)) {
        (Ok(major), Ok(minor)) => (major, minor),
        _ => (0, 0),
    }
}

pub unsafe extern "C" fn hipGetDevicePropertiesR0600(
    props: *mut HipDevicePropR0600,
    device: c_int,
) -> HipError {
    // SAFETY: caller's out-pointer to a hipDeviceProp_tR0600.
    api_rt(|rt| unsafe { put(props, fill_properties(rt, device)?) })
}

pub unsafe extern "C" fn hipDeviceSynchronize() -> HipError {
    api_rt(ops::device_synchronize)
}

/// `hipDeviceReset`: waits for the current device and frees its device memory.
pub unsafe extern "C" fn hipDeviceReset() -> HipError {
    api_rt(|rt| {
        let device = rt.device(ops::current_device())?;
        device.lock()?.sync_all(rt)?;
        memory::free_matching(rt, Some(device.ordinal));
        Ok(())
    })
}

pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> HipError {
    api_rt(|rt| {
        if ptr.is_null() {
            return Err(error::INVALID_VALUE);
        }
        let p = memory::device_malloc(rt, ops::current_device(), size)?;
        // SAFETY: non-null out-pointer.
        unsafe { put(ptr, p) }
    })
}

pub unsafe extern "C" fn hipFree(ptr: *mut c_void) -> HipError {
    api_rt(|rt| memory::free(rt, ptr as usize, false))
}

pub unsafe extern "C" fn hipHostMalloc(
    ptr: *mut *mut c_void,
    size: usize,
    _flags: u32,
) -> HipError {
    api_rt(|rt| {
        if ptr.is_null() {
            return Err(error::INVALID_VALUE);
        }
        let p = memory::host_malloc(rt, size)?;
        // SAFETY: non-null out-pointer.
        unsafe { put(ptr, p) }
    })
}

pub unsafe extern "C" fn hipHostFree(ptr: *mut c_void) -> HipError {
    api_rt(|rt| memory::free(rt, ptr as usize, true))
}

pub unsafe extern "C" fn hipMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: u32,
) -> HipError {
    // SAFETY: the caller's ranges (host side trusted, device side checked).
    api_rt(|rt| unsafe {
        ops::memcpy(
            rt,
            dst as usize,
            src as usize,
            size,
            kind,
            std::ptr::null_mut(),
            true,
        )
    })
}

pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: u32,
    stream: *mut c_void,
) -> HipError {
    // SAFETY: as hipMemcpy.
    api_rt(|rt| unsafe { ops::memcpy(rt, dst as usize, src as usize, size, kind, stream, false) })
}

pub unsafe extern "C" fn hipMemcpyHtoD(
    dst: *mut c_void,
    src: *mut c_void,
    size: usize,
) -> HipError {
    // SAFETY: the same contract as hipMemcpy, with the direction fixed.
    unsafe { hipMemcpy(dst, src, size, ops::kind::HOST_TO_DEVICE) }
}

pub unsafe extern "C" fn hipMemcpyDtoH(
    dst: *mut c_void,
    src: *mut c_void,
    size: usize,
) -> HipError {
    // SAFETY: the same contract as hipMemcpy, with the direction fixed.
    unsafe { hipMemcpy(dst, src, size, ops::kind::DEVICE_TO_HOST) }
}

pub unsafe extern "C" fn hipMemcpyDtoD(
    dst: *mut c_void,
    src: *mut c_void,
    size: usize,
) -> HipError {
    // SAFETY: the same contract as hipMemcpy, with the direction fixed.
    unsafe { hipMemcpy(dst, src, size, ops::kind::DEVICE_TO_DEVICE) }
}

pub unsafe extern "C" fn hipMemset(dst: *mut c_void, value: c_int, size: usize) -> HipError {
    api_rt(|rt| ops::memset(rt, dst as usize, value, size, std::ptr::null_mut(), true))
}

pub unsafe extern "C" fn hipMemsetAsync(
    dst: *mut c_void,
    value: c_int,
    size: usize,
    stream: *mut c_void,
) -> HipError {
    api_rt(|rt| ops::memset(rt, dst as usize, value, size, stream, false))
}

pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> HipError {
    api_rt(|rt| {
        let device = rt.device(ops::current_device())?;
        let total_bytes = device.info.memory_bytes as usize;
        let used = memory::used_on(device.ordinal);
        // SAFETY: caller's out-pointers.
        unsafe {
            put(free, total_bytes.saturating_sub(used))?;
            put(total, total_bytes)
        }
    })
}

pub unsafe extern "C" fn hipStreamCreate(stream: *mut *mut c_void) -> HipError {
    api_rt(|rt| {
        if stream.is_null() {
            return Err(error::INVALID_VALUE);
        }
        let s = ops::stream_create(rt)?;
        // SAFETY: non-null out-pointer.
        unsafe { put(stream, s) }
    })
}

pub unsafe extern "C" fn hipStreamCreateWithFlags(
    stream: *mut *mut c_void,
    _flags: u32,
) -> HipError {
    // SAFETY: same contract.
    unsafe { hipStreamCreate(stream) }
}

pub unsafe extern "C" fn hipStreamDestroy(stream: *mut c_void) -> HipError {
    api_rt(|rt| ops::stream_destroy(rt, stream as usize))
}

pub unsafe extern "C" fn hipStreamSynchronize(stream: *mut c_void) -> HipError {
    api_rt(|rt| ops::stream_synchronize(rt, stream))
}

pub unsafe extern "C" fn hipGetStreamDeviceId(stream: *mut c_void) -> c_int {
    catch_unwind(|| {
        runtime::runtime()
            .and_then(|rt| ops::resolve_stream(rt, stream))
            .map_or(-1, |(d, _, _)| d.ordinal as c_int)
    })
    .unwrap_or(-1)
}

pub unsafe extern "C" fn hipEventCreate(event: *mut *mut c_void) -> HipError {
    api_rt(|_| {
        if event.is_null() {
            return Err(error::INVALID_VALUE);
        }
        // SAFETY: non-null out-pointer.
        unsafe { put(event, ops::event_create()) }
    })
}

pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut *mut c_void, _flags: u32) -> HipError {
    // SAFETY: same contract.
    unsafe { hipEventCreate(event) }
}

pub unsafe extern "C" fn hipEventDestroy(event: *mut c_void) -> HipError {
    api_rt(|_| ops::event_destroy(event as usize))
}

pub unsafe extern "C" fn hipEventRecord(event: *mut c_void, stream: *mut c_void) -> HipError {
    api_rt(|rt| ops::event_record(rt, event, stream))
}

pub unsafe extern "C" fn hipEventSynchronize(event: *mut c_void) -> HipError {
    api_rt(|_| ops::event_synchronize(event))
}

pub unsafe extern "C" fn hipEventQuery(event: *mut c_void) -> HipError {
    api_rt(|_| ops::event_synchronize(event))
}

pub unsafe extern "C" fn hipEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    stop: *mut c_void,
) -> HipError {
    api_rt(|_| {
        let elapsed = ops::event_elapsed(start, stop)?;
        // SAFETY: caller's out-pointer.
        unsafe { put(ms, elapsed) }
    })
}

pub unsafe extern "C" fn hipLaunchKernel(
    function: *const c_void,
    blocks: Dim3,
    threads: Dim3,
    args: *mut *mut c_void,
    shmem: usize,
    stream: *mut c_void,
) -> HipError {
    api_rt(|rt| {
        let lookup = |device| {
            Ok((
                modules::kernel_for_stub(rt, function as usize, device)?,
                None,
            ))
        };
        // SAFETY: `args` holds one pointer per kernel parameter (the hipLaunchKernel contract).
        unsafe {
            ops::launch_kernel(
                rt,
                stream,
                blocks,
                threads,
                shmem,
                lookup,
                args.cast_const().cast(),
            )
        }
    })
}

pub unsafe extern "C" fn hipModuleLoadData(
    module: *mut *mut c_void,
    image: *const c_void,
) -> HipError {
    api_rt(|rt| {
        if module.is_null() {
            return Err(error::INVALID_VALUE);
        }
        // SAFETY: `image` is a fat-binary wrapper (this runtime's image format).
        let fatbin = unsafe { crate::fatbin::read(image.cast()) }.map_err(|e| {
            runtime::warn(&format!("hipModuleLoadData: {e}"));
            error::INVALID_IMAGE
        })?;
        let handle = modules::load_module(rt, fatbin)?;
        // SAFETY: non-null out-pointer.
        unsafe { put(module, handle) }
    })
}

pub unsafe extern "C" fn hipModuleUnload(module: *mut c_void) -> HipError {
    api_rt(|rt| modules::unload_module(rt, module as usize))
}

pub unsafe extern "C" fn hipModuleGetFunction(
    function: *mut *mut c_void,
    module: *mut c_void,
    name: *const c_char,
) -> HipError {
    api_rt(|_| {
        if function.is_null() || name.is_null() {
            return Err(error::INVALID_VALUE);
        }
        // SAFETY: non-null, NUL-terminated (C contract).
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| error::INVALID_VALUE)?;
        let f = modules::get_function(module as usize, name)?;
        // SAFETY: non-null out-pointer.
        unsafe { put(function, f) }
    })
}

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER`, `_SIZE`, `_END`.
const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;
const LAUNCH_PARAM_END: usize = 3;

/// Reads a `HIP_LAUNCH_PARAM_*` list into the kernarg bytes it names.
///
/// # Safety
///
/// `extra` is a `HIP_LAUNCH_PARAM_END`-terminated list whose buffer pointer and size are valid.
unsafe fn extra_kernargs<'a>(extra: *mut *mut c_void) -> Result<&'a [u8], HipError> {
    let (mut buffer, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
    for i in (0..32).step_by(2) {
        // SAFETY: the list is END-terminated within its pairs (contract).
        let key = unsafe { *extra.add(i) } as usize;
        if key == LAUNCH_PARAM_END {
            break;
        }
        // SAFETY: every key but END has a value.
        let value = unsafe { *extra.add(i + 1) };
        match key {
            LAUNCH_PARAM_BUFFER_POINTER => buffer = value.cast(),
            LAUNCH_PARAM_BUFFER_SIZE if !value.is_null() => {
                // SAFETY: the size value points to a size_t.
                size = Some(unsafe { *value.cast::<usize>() })
            }
            _ => return Err(error::INVALID_VALUE),
        }
    }
    match (buffer.is_null(), size) {
        // SAFETY: the buffer holds `n` bytes (contract).
        (false, Some(n)) => Ok(unsafe { std::slice::from_raw_parts(buffer, n) }),
        _ => Err(error::INVALID_VALUE),
    }
}

pub unsafe extern "C" fn hipModuleLaunchKernel(
    function: *mut c_void,
    grid_x: u32,
    grid_y: u32,
    grid_z: u32,
    block_x: u32,
    block_y: u32,
    block_z: u32,
    shmem: u32,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> HipError {
    api_rt(|rt| {
        let blocks = Dim3 {
            x: grid_x,
            y: grid_y,
            z: grid_z,
        };
        let threads = Dim3 {
            x: block_x,
            y: block_y,
            z: block_z,
        };
        let lookup = |device| {
            let kernel = modules::kernel_for_function(rt, function as usize, device)?;
            let kernarg = if params.is_null() && !extra.is_null() {
                // SAFETY: the HIP_LAUNCH_PARAM list contract.
                Some(unsafe { extra_kernargs(extra)? })
            } else {
                None
            };
            Ok((kernel, kernarg))
        };
        // SAFETY: `params` holds one pointer per parameter when given (the C contract).
        unsafe {
            ops::launch_kernel(
                rt,
                stream,
                blocks,
                threads,
                shmem as usize,
                lookup,
                params.cast_const().cast(),
            )
        }
    })
}

pub unsafe extern "C" fn hipGetLastError() -> HipError {
    catch_unwind(|| {
        let _ = runtime::runtime();
        error::take_last()
    })
    .unwrap_or(error::UNKNOWN)
}

pub unsafe extern "C" fn hipPeekAtLastError() -> HipError {
    catch_unwind(|| {
        let _ = runtime::runtime();
        error::peek_last()
    })
    .unwrap_or(error::UNKNOWN)
}

pub unsafe extern "C" fn hipExtGetLastError() -> HipError {
    // SAFETY: no arguments.
    unsafe { hipGetLastError() }
}

pub unsafe extern "C" fn hipGetErrorName(code: HipError) -> *const c_char {
    error::as_ptr(error::name(code))
}

pub unsafe extern "C" fn hipGetErrorString(code: HipError) -> *const c_char {
    error::as_ptr(error::description(code))
}

pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut c_int) -> HipError {
    // SAFETY: caller's out-pointer.
    api_rt(|_| unsafe { put(version, HIP_VERSION) })
}

pub unsafe extern "C" fn hipDriverGetVersion(version: *mut c_int) -> HipError {
    // SAFETY: caller's out-pointer.
    api_rt(|_| unsafe { put(version, HIP_VERSION) })
}

/// Interned C strings for the `const char*` results that must outlive the call.
fn intern(name: &str) -> *const c_char {
    static NAMES: Mutex<BTreeSet<&'static CStr>> = Mutex::new(BTreeSet::new());
    let Ok(owned) = CString::new(name) else {
        return std::ptr::null();
    };
    let mut set = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = set.get(owned.as_c_str()) {
        return existing.as_ptr();
    }
    let leaked: &'static CStr = Box::leak(owned.into_boxed_c_str());
    set.insert(leaked);
    leaked.as_ptr()
}

pub unsafe extern "C" fn hipApiName(id: u32) -> *const c_char {
    catch_unwind(|| {
        crate::table::HIP_API_NAMES
            .get(id as usize)
            .map_or(c"unknown".as_ptr(), |n| intern(n))
    })
    .unwrap_or(std::ptr::null())
}

pub unsafe extern "C" fn hipKernelNameRef(function: *const c_void) -> *const c_char {
    catch_unwind(|| {
        modules::function_name(function as usize).map_or(std::ptr::null(), |n| intern(&n))
    })
    .unwrap_or(std::ptr::null())
}

pub unsafe extern "C" fn hipKernelNameRefByPtr(
    function: *const c_void,
    _stream: *mut c_void,
) -> *const c_char {
    catch_unwind(|| modules::stub_name(function as usize).map_or(std::ptr::null(), |n| intern(&n)))
        .unwrap_or(std::ptr::null())
}

/// `hipChannelFormatDesc` (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelFormatDesc {
    pub x: c_int,
    pub y: c_int,
    pub z: c_int,
    pub w: c_int,
    pub f: u32,
}

pub unsafe extern "C" fn hipCreateChannelDesc(
    x: c_int,
    y: c_int,
    z: c_int,
    w: c_int,
    f: u32,
) -> ChannelFormatDesc {
    ChannelFormatDesc { x, y, z, w, f }
}
