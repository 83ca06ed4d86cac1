//! Device operations as ROCclr issues them to HSA: kernel dispatches on the AQL queue, copies
//! (staged, pinned, blit), fills, stream and event synchronisation.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::blit;
use crate::error::{self, HipError};
use crate::hsa::{self, Agent, Signal};
use crate::memory::{self, Kind};
use crate::modules::LoadedKernel;
use crate::runtime::{self, Device, DeviceState, KERNARG_SLOT, OpRef, Runtime, STAGING_SIZE};

thread_local! {
    static CURRENT_DEVICE: Cell<i32> = const { Cell::new(0) };
}

/// The calling thread's current device ordinal.
pub fn current_device() -> i32 {
    CURRENT_DEVICE.with(Cell::get)
}

/// Sets the calling thread's current device ordinal.
pub fn set_current_device(ordinal: i32) {
    CURRENT_DEVICE.with(|d| d.set(ordinal));
}

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

const _: () = assert!(size_of::<Dim3>() == 12 && align_of::<Dim3>() == 4);

/// `hipMemcpyKind`.
pub mod kind {
    /// `hipMemcpyHostToHost`.
    pub const HOST_TO_HOST: u32 = 0;
    /// `hipMemcpyHostToDevice`.
    pub const HOST_TO_DEVICE: u32 = 1;
    /// `hipMemcpyDeviceToHost`.
    pub const DEVICE_TO_HOST: u32 = 2;
    /// `hipMemcpyDeviceToDevice`.
    pub const DEVICE_TO_DEVICE: u32 = 3;
    /// `hipMemcpyDefault`.
    pub const DEFAULT: u32 = 4;
    /// `hipMemcpyDeviceToDeviceNoCU`.
    pub const DEVICE_TO_DEVICE_NO_CU: u32 = 1024;
}

/// A resolved stream: its device, that device's locked state, and the stream key (0 = the
/// null stream).
pub type StreamLock<'a> = (&'a Device, MutexGuard<'a, DeviceState>, usize);

/// Resolves a `hipStream_t` (null and `hipStreamPerThread` are the current device's null
/// stream) and returns it with its device's state locked.
pub fn resolve_stream(rt: &Runtime, stream: *mut c_void) -> Result<StreamLock<'_>, HipError> {
    let handle = stream as usize;
    if handle == 0 || handle == 2 {
        let device = rt.device(current_device())?;
        return Ok((device, device.lock()?, 0));
    }
    for device in &rt.devices {
        let state = device.lock()?;
        if state.streams.contains_key(&handle) {
            return Ok((device, state, handle));
        }
    }
    Err(error::INVALID_HANDLE)
}

/// A kernel launch: grid in work-items, workgroup size, dynamic LDS.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub workgroup: [u16; 3],
    /// Dynamic group-segment bytes.
    pub dynamic_lds: u32,
}

/// Checks a `<<<numBlocks, blockDim, shmem>>>` configuration against the device and returns
/// the launch in work-items.
pub fn launch_config(
    device: &Device,
    blocks: Dim3,
    threads: Dim3,
    shmem: usize,
) -> Result<Launch, HipError> {
    let max_dim = device
        .info
        .workgroup_max_dim
        .map(|d| if d == 0 { 1024 } else { u32::from(d) });
    let max_size = if device.info.workgroup_max_size == 0 {
        1024
    } else {
        device.info.workgroup_max_size
    };
    launch_geometry(blocks, threads, shmem, max_dim, max_size)
}

/// [`launch_config`] against explicit limits: every dimension >= 1, the workgroup within
/// `max_dim` and `max_size` work-items, the grid (blocks × threads) within `u32`.
pub fn launch_geometry(
    blocks: Dim3,
    threads: Dim3,
    shmem: usize,
    max_dim: [u32; 3],
    max_size: u32,
) -> Result<Launch, HipError> {
    let blocks = [blocks.x, blocks.y, blocks.z];
    let threads = [threads.x, threads.y, threads.z];
    if blocks.contains(&0) || threads.contains(&0) {
        return Err(error::INVALID_CONFIGURATION);
    }
    if threads.iter().zip(max_dim).any(|(&t, m)| t > m)
        || threads.iter().map(|&t| u64::from(t)).product::<u64>() > u64::from(max_size)
    {
        return Err(error::INVALID_CONFIGURATION);
    }
    let mut grid = [0u32; 3];
    for i in 0..3 {
        grid[i] = blocks[i]
            .checked_mul(threads[i])
            .ok_or(error::INVALID_CONFIGURATION)?;
    }
    let dynamic_lds = u32::try_from(shmem).map_err(|_| error::INVALID_VALUE)?;
    Ok(Launch {
        grid,
        workgroup: threads.map(|t| t as u16),
        dynamic_lds,
    })
}

/// The 64 bytes of a kernel dispatch packet (header word included).
pub fn dispatch_packet(
    kernel: &LoadedKernel,
    launch: &Launch,
    kernarg: u64,
    signal: Signal,
) -> [u8; 64] {
    let dims: u16 = if launch.grid[2] > 1 || launch.workgroup[2] > 1 {
        3
    } else if launch.grid[1] > 1 || launch.workgroup[1] > 1 {
        2
    } else {
        1
    };
    let mut p = [0u8; 64];
    p[..4].copy_from_slice(
        &runtime::header_word(hsa::PACKET_TYPE_KERNEL_DISPATCH, dims).to_le_bytes(),
    );
    for i in 0..3 {
        p[4 + 2 * i..6 + 2 * i].copy_from_slice(&launch.workgroup[i].to_le_bytes());
        p[12 + 4 * i..16 + 4 * i].copy_from_slice(&launch.grid[i].to_le_bytes());
    }
    p[24..28].copy_from_slice(&kernel.private_segment_size.to_le_bytes());
    let group = kernel.group_segment_size.saturating_add(launch.dynamic_lds);
    p[28..32].copy_from_slice(&group.to_le_bytes());
    p[32..40].copy_from_slice(&kernel.kernel_object.to_le_bytes());
    p[40..48].copy_from_slice(&kernarg.to_le_bytes());
    p[56..64].copy_from_slice(&signal.handle.to_le_bytes());
    p
}

/// Dispatches `kernel` on the device's queue in `stream`'s order with the given kernarg
/// bytes; returns the operation.
pub fn dispatch(
    rt: &Runtime,
    device: &Device,
    state: &mut DeviceState,
    stream: usize,
    kernel: &LoadedKernel,
    launch: &Launch,
    kernarg: &[u8],
) -> Result<OpRef, HipError> {
    if kernarg.len() > KERNARG_SLOT {
        return Err(error::LAUNCH_OUT_OF_RESOURCES);
    }
    let last = state
        .streams
        .get(&stream)
        .ok_or(error::INVALID_HANDLE)?
        .last;
    if let Some(op) = last
        && op.is_copy
        && let Some(signal) = state.pending_signal(rt, op)
    {
        runtime::submit_packet(rt, device, &runtime::barrier_packet(signal))?;
    }
    let (op, signal, slot) = state.acquire(rt)?;
    // SAFETY: the kernarg slot holds KERNARG_SLOT bytes and belongs to this signal.
    unsafe { std::ptr::copy_nonoverlapping(kernarg.as_ptr(), slot, kernarg.len()) };
    let packet = dispatch_packet(kernel, launch, slot as u64, signal);
    if let Err(e) = runtime::submit_packet(rt, device, &packet) {
        // SAFETY: disarm the pool signal nobody will complete.
        unsafe { (rt.hsa.hsa_signal_silent_store_relaxed)(signal, 0) };
        return Err(e);
    }
    if let Some(s) = state.streams.get_mut(&stream) {
        s.last = Some(op);
    }
    Ok(op)
}

/// `hipLaunchKernel` / `hipModuleLaunchKernel`: resolves `stream`, checks the configuration
/// against its device, gets the kernel loaded on that device from `lookup` (with the kernarg
/// bytes to use instead of `args`, if any), packs the kernargs and dispatches.
///
/// # Safety
///
/// `args` holds one readable pointer per explicit argument of the kernel (unless `lookup`
/// returns kernarg bytes).
pub unsafe fn launch_kernel<'k>(
    rt: &Runtime,
    stream: *mut c_void,
    blocks: Dim3,
    threads: Dim3,
    shmem: usize,
    lookup: impl FnOnce(usize) -> Result<(Arc<LoadedKernel>, Option<&'k [u8]>), HipError>,
    args: *const *const u8,
) -> Result<(), HipError> {
    let (device, mut state, key) = resolve_stream(rt, stream)?;
    let launch = launch_config(device, blocks, threads, shmem)?;
    let (kernel, kernarg) = lookup(device.ordinal)?;
    let size = (kernel.kernarg_size as usize).max(kernarg.map_or(0, <[u8]>::len));
    // Kernargs that fit a kernarg slot are packed on the stack; larger ones still reach
    // `dispatch`, which refuses them.
    let mut stack = [0u8; KERNARG_SLOT];
    let mut heap = Vec::new();
    let bytes = if size <= KERNARG_SLOT {
        &mut stack[..size]
    } else {
        heap.resize(size, 0);
        &mut heap[..]
    };
    match kernarg {
        Some(given) => bytes[..given.len()].copy_from_slice(given),
        // SAFETY: forwarded contract.
        None => unsafe { crate::fatbin::pack_kernargs(bytes, &kernel.args, args)? },
    }
    dispatch(rt, device, &mut state, key, &kernel, &launch, bytes).map(drop)
}

fn blit_kernel<'a>(device: &'a Device, name: &str) -> Result<&'a LoadedKernel, HipError> {
    device
        .blit
        .kernels
        .get(name)
        .map(|k| &**k)
        .ok_or(error::INVALID_DEVICE_FUNCTION)
}

fn blit_launch(bytes: u64) -> Launch {
    let (_, grid) = blit::blit_grid(bytes);
    Launch {
        grid: [grid, 1, 1],
        workgroup: [blit::BLIT_WORKGROUP as u16, 1, 1],
        dynamic_lds: 0,
    }
}

/// Dispatches the blit kernel `name` over `size` bytes of memory owned by device `owner`, in
/// the order of stream `key` of `device` (whose state the caller locked); memory of another
/// device goes to that device's null stream. Waits for it when `blocking`.
fn blit(
    rt: &Runtime,
    (device, state, key): StreamLock<'_>,
    owner: usize,
    name: &str,
    kernarg: &[u8],
    size: usize,
    blocking: bool,
) -> Result<(), HipError> {
    let (device, mut state, key) = if owner == device.ordinal {
        (device, state, key)
    } else {
        drop(state);
        let device = &rt.devices[owner];
        (device, device.lock()?, 0)
    };
    let kernel = blit_kernel(device, name)?;
    let launch = blit_launch(size as u64);
    let op = dispatch(rt, device, &mut state, key, kernel, &launch, kernarg)?;
    if blocking {
        state.complete_blocking(rt, device, op)?;
        clear_last(&mut state, key, op);
    }
    Ok(())
}

fn as_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: T is a plain #[repr(C)] struct of integers without padding.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

/// Where one side of a copy lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Device(usize),
    Pinned,
    Pageable,
}

fn side(ptr: usize, size: usize) -> Side {
    match memory::find(ptr, size).map(|a| a.kind) {
        Some(Kind::Device(d)) => Side::Device(d),
        Some(Kind::PinnedHost) => Side::Pinned,
        None => Side::Pageable,
    }
}

fn agent_of(rt: &Runtime, side: Side) -> Agent {
    match side {
        Side::Device(d) => rt.devices[d].agent,
        _ => rt.cpu_agent,
    }
}

/// One `hsa_amd_memory_async_copy` (an SDMA copy) in `stream`'s order.
fn async_copy(
    rt: &Runtime,
    state: &mut DeviceState,
    stream: usize,
    dst: (usize, Agent),
    src: (usize, Agent),
    size: usize,
) -> Result<OpRef, HipError> {
    let dep = state
        .streams
        .get(&stream)
        .and_then(|s| s.last)
        .and_then(|op| state.pending_signal(rt, op));
    // The SDMA engines free for this pair of agents, as ROCclr's `hsaCopy` asks before picking
    // an engine (the simulated runtime offers no engine choice, so the copy itself goes
    // through `hsa_amd_memory_async_copy`, ROCclr's fallback).
    let mut engines = 0u32;
    // SAFETY: documented signature, valid out-pointer.
    let _ = unsafe { (rt.hsa.hsa_amd_memory_copy_engine_status)(dst.1, src.1, &mut engines) };
    let (mut op, signal, _) = state.acquire(rt)?;
    op.is_copy = true;
    let deps = dep.as_slice();
    // SAFETY: both ranges are valid for `size` bytes (checked by the caller); the agents own
    // them; `deps` holds deps.len() signals.
    let status = unsafe {
        (rt.hsa.hsa_amd_memory_async_copy)(
            dst.0 as *mut c_void,
            dst.1,
            src.0 as *const c_void,
            src.1,
            size,
            deps.len() as u32,
            if deps.is_empty() {
                std::ptr::null()
            } else {
                deps.as_ptr()
            },
            signal,
        )
    };
    if status != hsa::STATUS_SUCCESS {
        // SAFETY: disarm the pool signal nobody will complete.
        unsafe { (rt.hsa.hsa_signal_silent_store_relaxed)(signal, 0) };
        runtime::warn(&format!(
            "hsa_amd_memory_async_copy failed: {}",
            rt.hsa.status_text(status)
        ));
        return Err(error::INVALID_VALUE);
    }
    if let Some(s) = state.streams.get_mut(&stream) {
        s.last = Some(op);
    }
    Ok(op)
}

/// `hipMemcpy` / `hipMemcpyAsync` (and the `HtoD`/`DtoH`/`DtoD` forms, which pass their kind).
///
/// # Safety
///
/// Host-side ranges are valid for `size` bytes (device-side ranges are checked).
pub unsafe fn memcpy(
    rt: &Runtime,
    dst: usize,
    src: usize,
    size: usize,
    copy_kind: u32,
    stream: *mut c_void,
    blocking: bool,
) -> Result<(), HipError> {
    if !matches!(copy_kind, 0..=4 | kind::DEVICE_TO_DEVICE_NO_CU) {
        return Err(error::INVALID_MEMCPY_DIRECTION);
    }
    let (device, mut state, key) = resolve_stream(rt, stream)?;
    if size == 0 {
        return Ok(());
    }
    if dst == 0 || src == 0 {
        return Err(error::INVALID_VALUE);
    }
    let (d, s) = (side(dst, size), side(src, size));
    let is_dev = |x: Side| matches!(x, Side::Device(_));
    let valid = match copy_kind {
        kind::HOST_TO_DEVICE => is_dev(d) && !is_dev(s),
        kind::DEVICE_TO_HOST => is_dev(s) && !is_dev(d),
        kind::DEVICE_TO_DEVICE | kind::DEVICE_TO_DEVICE_NO_CU => is_dev(s) && is_dev(d),
        kind::HOST_TO_HOST => !is_dev(s) && !is_dev(d),
        _ => true,
    };
    if !valid {
        return Err(error::INVALID_VALUE);
    }
    match (d, s) {
        (Side::Device(a), Side::Device(b))
            if a == b && copy_kind != kind::DEVICE_TO_DEVICE_NO_CU =>
        {
            let args = blit::CopyArgs {
                src: src as u64,
                dst: dst as u64,
                size: size as u64,
            };
            blit(
                rt,
                (device, state, key),
                a,
                blit::COPY_BUFFER,
                as_bytes(&args),
                size,
                blocking,
            )
        }
        (Side::Device(_), Side::Device(_))
        | (Side::Device(_), Side::Pinned)
        | (Side::Pinned, Side::Device(_)) => {
            let op = async_copy(
                rt,
                &mut state,
                key,
                (dst, agent_of(rt, d)),
                (src, agent_of(rt, s)),
                size,
            )?;
            if blocking {
                state.complete_blocking(rt, device, op)?;
                clear_last(&mut state, key, op);
            }
            Ok(())
        }
        (Side::Device(_), Side::Pageable) => staged_copy(
            rt,
            device,
            &mut state,
            key,
            Staged::ToDevice,
            src,
            (dst, agent_of(rt, d)),
            size,
        ),
        (Side::Pageable, Side::Device(_)) => staged_copy(
            rt,
            device,
            &mut state,
            key,
            Staged::ToHost,
            dst,
            (src, agent_of(rt, s)),
            size,
        ),
        _ => {
            state.sync_stream(rt, key)?;
            // SAFETY: host ranges valid for `size` bytes (contract).
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
            Ok(())
        }
    }
}

fn clear_last(state: &mut DeviceState, stream: usize, op: OpRef) {
    if let Some(s) = state.streams.get_mut(&stream)
        && s.last == Some(op)
    {
        s.last = None;
    }
}

/// The direction of a copy through the staging buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Staged {
    /// Pageable host → device.
    ToDevice,
    /// Device → pageable host.
    ToHost,
}

/// A copy between pageable host memory at `host` and device memory through the staging
/// buffer, per chunk of at most [`STAGING_SIZE`]: to the device, a CPU `memcpy` into the
/// buffer, one `hsa_amd_memory_async_copy` and a wait before the buffer is reused; to the
/// host, the async copy into the buffer, a wait, then a CPU `memcpy` out.
#[allow(clippy::too_many_arguments)] // the queue's device is needed for the markers
fn staged_copy(
    rt: &Runtime,
    queue_device: &Device,
    state: &mut DeviceState,
    stream: usize,
    direction: Staged,
    host: usize,
    device: (usize, Agent),
    size: usize,
) -> Result<(), HipError> {
    let staging = state.staging.0 as usize;
    let mut done = 0;
    while done < size {
        let n = (size - done).min(STAGING_SIZE);
        let chunk = (device.0 + done, device.1);
        let buffer = (staging, rt.cpu_agent);
        let (dst, src) = match direction {
            Staged::ToDevice => {
                // SAFETY: the host range is valid for `size` bytes (caller) and the staging
                // buffer for STAGING_SIZE.
                unsafe {
                    std::ptr::copy_nonoverlapping((host + done) as *const u8, staging as *mut u8, n)
                };
                (chunk, buffer)
            }
            Staged::ToHost => (buffer, chunk),
        };
        let op = async_copy(rt, state, stream, dst, src, n)?;
        state.complete_blocking(rt, queue_device, op)?;
        clear_last(state, stream, op);
        if direction == Staged::ToHost {
            // SAFETY: the host range is valid for `size` bytes (caller) and the staging buffer
            // holds `n` copied bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(staging as *const u8, (host + done) as *mut u8, n)
            };
        }
        done += n;
    }
    Ok(())
}

/// `hipMemset` / `hipMemsetAsync`: the `__amd_rocclr_fillBufferAligned` blit kernel.
pub fn memset(
    rt: &Runtime,
    dst: usize,
    value: i32,
    size: usize,
    stream: *mut c_void,
    blocking: bool,
) -> Result<(), HipError> {
    let target = resolve_stream(rt, stream)?;
    if size == 0 {
        return Ok(());
    }
    let Some(Kind::Device(owner)) = memory::find(dst, size).map(|a| a.kind) else {
        return Err(error::INVALID_VALUE);
    };
    let args = blit::FillArgs {
        dst: dst as u64,
        size: size as u64,
        value: (value as u32) & 0xFF,
        reserved: 0,
    };
    blit(
        rt,
        target,
        owner,
        blit::FILL_BUFFER,
        as_bytes(&args),
        size,
        blocking,
    )
}

/// `hipStreamCreate`: a new stream of the current device.
pub fn stream_create(rt: &Runtime) -> Result<*mut c_void, HipError> {
    let device = rt.device(current_device())?;
    let handle = Box::into_raw(Box::new(0u64)).cast::<c_void>();
    device
        .lock()?
        .streams
        .insert(handle as usize, runtime::StreamState::default());
    Ok(handle)
}

/// `hipStreamDestroy`: waits for the stream, then forgets it.
pub fn stream_destroy(rt: &Runtime, stream: usize) -> Result<(), HipError> {
    let (_, mut state, key) = resolve_stream(rt, stream as *mut c_void)?;
    if key == 0 {
        return Err(error::INVALID_HANDLE);
    }
    state.sync_stream(rt, key)?;
    state.streams.remove(&key);
    // SAFETY: made by Box::into_raw in stream_create and now forgotten.
    drop(unsafe { Box::from_raw(stream as *mut u64) });
    Ok(())
}

/// `hipStreamSynchronize`.
pub fn stream_synchronize(rt: &Runtime, stream: *mut c_void) -> Result<(), HipError> {
    let (_, mut state, key) = resolve_stream(rt, stream)?;
    state.sync_stream(rt, key)
}

/// `hipDeviceSynchronize`: waits for every stream of the current device.
pub fn device_synchronize(rt: &Runtime) -> Result<(), HipError> {
    rt.device(current_device())?.lock()?.sync_all(rt)
}

/// Event state: the `CLOCK_MONOTONIC` time at which it was recorded.
static EVENTS: Mutex<BTreeMap<usize, Option<u64>>> = Mutex::new(BTreeMap::new());

fn events() -> MutexGuard<'static, BTreeMap<usize, Option<u64>>> {
    EVENTS.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `hipEventCreate`.
pub fn event_create() -> *mut c_void {
    let handle = Box::into_raw(Box::new(0u64)).cast::<c_void>();
    events().insert(handle as usize, None);
    handle
}

/// `hipEventDestroy`.
pub fn event_destroy(event: usize) -> Result<(), HipError> {
    events().remove(&event).ok_or(error::INVALID_HANDLE)?;
    // SAFETY: made by Box::into_raw in event_create and now forgotten.
    drop(unsafe { Box::from_raw(event as *mut u64) });
    Ok(())
}

/// `hipEventRecord`: in the simulator the record waits for the stream's outstanding work and
/// then takes the host time, so elapsed times cover the work between two records.
pub fn event_record(rt: &Runtime, event: *mut c_void, stream: *mut c_void) -> Result<(), HipError> {
    if !events().contains_key(&(event as usize)) {
        return Err(error::INVALID_HANDLE);
    }
    stream_synchronize(rt, stream)?;
    let t = now_ns();
    events().insert(event as usize, Some(t));
    Ok(())
}

/// `hipEventSynchronize` / `hipEventQuery`: a recorded event is complete.
pub fn event_synchronize(event: *mut c_void) -> Result<(), HipError> {
    events()
        .get(&(event as usize))
        .map(drop)
        .ok_or(error::INVALID_HANDLE)
}

/// `hipEventElapsedTime` in milliseconds.
pub fn event_elapsed(start: *mut c_void, stop: *mut c_void) -> Result<f32, HipError> {
    let map = events();
    let a = map.get(&(start as usize)).ok_or(error::INVALID_HANDLE)?;
    let b = map.get(&(stop as usize)).ok_or(error::INVALID_HANDLE)?;
    match (a, b) {
        (Some(a), Some(b)) => Ok(((*b as f64 - *a as f64) / 1e6) as f32),
        _ => Err(error::INVALID_HANDLE),
    }
}
