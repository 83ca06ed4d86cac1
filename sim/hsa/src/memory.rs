//! Memory pools and regions (the same records), allocation (host memory, page aligned) and
//! synchronous copies. The simulated GPU shares the process's address space, as an APU does.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use crate::guard::{guard, write_out};
use crate::runtime::{self, PoolInfo, PoolKind};
use crate::types::*;

const ALIGNMENT: usize = 4096;

/// Live allocations: address → (layout, pool handle).
static ALLOCATIONS: Mutex<BTreeMap<usize, (Layout, u64)>> = Mutex::new(BTreeMap::new());

/// Allocations of at least this many bytes are mapped from the kernel (zero pages) rather than
/// zeroed by the allocator; system memory is committed where touched, device memory at once
/// ([`make_resident`]).
const MAPPED: usize = 1 << 20;

/// Allocates `size` zeroed bytes, page aligned, owned by `pool`; `resident`: every page is
/// committed now (see [`make_resident`]).
pub fn allocate(size: usize, pool: u64, resident: bool) -> Result<*mut c_void, Status> {
    if size == 0 {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let layout = Layout::from_size_align(size, ALIGNMENT).map_err(|_| ERROR_INVALID_ALLOCATION)?;
    let ptr = if size >= MAPPED {
        // SAFETY: a fresh private anonymous mapping; no existing memory is involved.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            std::ptr::null_mut()
        } else {
            p.cast::<u8>()
        }
    } else {
        // SAFETY: the layout has a non-zero size.
        unsafe { std::alloc::alloc_zeroed(layout) }
    };
    if ptr.is_null() {
        return Err(ERROR_OUT_OF_RESOURCES);
    }
    if resident {
        // SAFETY: `size` bytes just allocated, zeroed and used by nothing else yet.
        unsafe { make_resident(ptr, size) };
    }
    ALLOCATIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(ptr as usize, (layout, pool));
    Ok(ptr.cast())
}

/// Commits every page of `size` bytes at `ptr` now, in the allocating call: device-local
/// memory is backed when the driver creates the allocation (a WDDM allocation is made
/// resident, ROCr's `hsa_amd_memory_pool_allocate` maps it to the GPU), so a kernel or copy
/// that touches it first does not pay for committing it inside the GPU's execution window —
/// as the kernel's CPU implementation and the SDMA copy's `memcpy` would, through the page
/// faults of a lazily committed mapping (the first kernel's and first host-to-device copy's
/// 0.4–1.4 ms of issue 27).
///
/// # Safety
///
/// `ptr` must be valid for writing `size` bytes that hold zeros and that nothing else uses.
unsafe fn make_resident(ptr: *mut u8, size: usize) {
    // SAFETY: the caller's range; MADV_POPULATE_WRITE (Linux 5.14) only faults the pages in.
    let populated = unsafe { libc::madvise(ptr.cast(), size, libc::MADV_POPULATE_WRITE) } == 0;
    if !populated {
        for offset in (0..size).step_by(ALIGNMENT) {
            // SAFETY: inside the caller's range; writing the 0 it holds commits the page.
            unsafe { std::ptr::write_volatile(ptr.add(offset), 0) };
        }
    }
}

/// Frees an allocation made by [`allocate`].
pub fn free(ptr: *mut c_void) -> Result<(), Status> {
    if ptr.is_null() {
        return Ok(());
    }
    let entry = ALLOCATIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(ptr as usize));
    let (layout, _) = entry.ok_or(ERROR_INVALID_ALLOCATION)?;
    if layout.size() >= MAPPED {
        // The mapping's start, as the table recorded it (the caller's pointer matched it).
        let base = ptr as usize as *mut c_void;
        // SAFETY: mapped by `allocate` with exactly this size, and removed from the table.
        unsafe { libc::munmap(base, layout.size()) };
    } else {
        // SAFETY: allocated by `allocate` with exactly this layout, and removed from the table.
        unsafe { std::alloc::dealloc(ptr.cast(), layout) };
    }
    Ok(())
}

/// The pool that owns the allocation containing `ptr`, if any.
pub fn owning_pool(ptr: *const c_void) -> Option<u64> {
    let address = ptr as usize;
    let table = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
    let (&base, &(layout, pool)) = table.range(..=address).next_back()?;
    (address < base + layout.size()).then_some(pool)
}

// hsa_amd_memory_pool_info_t
const POOL_INFO_SEGMENT: u32 = 0;
const POOL_INFO_GLOBAL_FLAGS: u32 = 1;
const POOL_INFO_SIZE: u32 = 2;
const POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
const POOL_INFO_RUNTIME_ALLOC_GRANULE: u32 = 6;
const POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
const POOL_INFO_ACCESSIBLE_BY_ALL: u32 = 15;
const POOL_INFO_ALLOC_MAX_SIZE: u32 = 16;
const POOL_INFO_LOCATION: u32 = 17;
const POOL_INFO_RUNTIME_ALLOC_REC_GRANULE: u32 = 18;
// hsa_amd_memory_pool_global_flag_t
const POOL_FLAG_KERNARG_INIT: u32 = 1;
const POOL_FLAG_FINE_GRAINED: u32 = 2;
const POOL_FLAG_COARSE_GRAINED: u32 = 4;
// hsa_region_info_t
const REGION_INFO_SEGMENT: u32 = 0;
const REGION_INFO_GLOBAL_FLAGS: u32 = 1;
const REGION_INFO_SIZE: u32 = 2;
const REGION_INFO_ALLOC_MAX_SIZE: u32 = 4;
const REGION_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
const REGION_INFO_RUNTIME_ALLOC_GRANULE: u32 = 6;
const REGION_INFO_RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
const REGION_INFO_ALLOC_MAX_PRIVATE_WORKGROUP_SIZE: u32 = 8;
const AMD_REGION_INFO_HOST_ACCESSIBLE: u32 = 0xA000;
const AMD_REGION_INFO_BASE: u32 = 0xA001;
// hsa_amd_agent_memory_pool_info_t
const AGENT_POOL_INFO_ACCESS: u32 = 0;
const AGENT_POOL_INFO_NUM_HOPS: u32 = 1;

fn pool_flags(pool: &PoolInfo) -> u32 {
    match pool.kind {
        PoolKind::SystemFine => POOL_FLAG_KERNARG_INIT | POOL_FLAG_FINE_GRAINED,
        PoolKind::SystemCoarse | PoolKind::DeviceLocal => POOL_FLAG_COARSE_GRAINED,
    }
}

unsafe fn put<T>(value: *mut c_void, v: T) -> Result<(), Status> {
    // SAFETY: the caller provides storage of the attribute's type.
    unsafe { write_out(value.cast::<T>(), v) }
}

/// `hsa_amd_memory_pool_get_info`.
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: MemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.pool(pool).ok_or(ERROR_INVALID_ARGUMENT)?;
        // SAFETY: (all `put`s) the caller provides storage of the attribute's type.
        unsafe {
            match attribute {
                POOL_INFO_SEGMENT => put(value, 0u32),
                POOL_INFO_GLOBAL_FLAGS => put(value, pool_flags(info)),
                POOL_INFO_SIZE => put(value, info.size as usize),
                POOL_INFO_RUNTIME_ALLOC_ALLOWED => put(value, true),
                POOL_INFO_RUNTIME_ALLOC_GRANULE
                | POOL_INFO_RUNTIME_ALLOC_ALIGNMENT
                | POOL_INFO_RUNTIME_ALLOC_REC_GRANULE => put(value, ALIGNMENT),
                POOL_INFO_ACCESSIBLE_BY_ALL => put(value, info.kind != PoolKind::DeviceLocal),
                POOL_INFO_ALLOC_MAX_SIZE => put(value, info.size as usize),
                POOL_INFO_LOCATION => put(value, u32::from(info.kind == PoolKind::DeviceLocal)),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_amd_agent_iterate_memory_pools`.
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Agent,
    callback: Option<unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        for &pool in &info.pools {
            // SAFETY: the application's callback with its own data.
            let status = unsafe { callback(MemoryPool { handle: pool }, data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

/// `hsa_amd_agent_memory_pool_get_info`: every agent may access every pool (an APU).
pub unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: Agent,
    pool: MemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        rt.pool(pool).ok_or(ERROR_INVALID_ARGUMENT)?;
        // SAFETY: the caller provides storage of the attribute's type.
        unsafe {
            match attribute {
                AGENT_POOL_INFO_ACCESS => put(value, 1u32),
                AGENT_POOL_INFO_NUM_HOPS => put(value, 0u32),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_amd_memory_pool_allocate`.
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: MemoryPool,
    size: usize,
    _flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: forwarded.
    guard(|| unsafe { allocate_out(pool, size, ptr, ERROR_INVALID_ARGUMENT) })
}

/// Allocates `size` bytes from `pool` into `*ptr`; an unknown pool is `unknown_pool`.
///
/// # Safety
/// `ptr` is null or writable.
unsafe fn allocate_out(
    pool: MemoryPool,
    size: usize,
    ptr: *mut *mut c_void,
    unknown_pool: Status,
) -> Result<(), Status> {
    let kind = runtime::require()?.pool(pool).ok_or(unknown_pool)?.kind;
    if ptr.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let allocated = allocate(size, pool.handle, kind == PoolKind::DeviceLocal)?;
    // SAFETY: non-null and writable per the API.
    unsafe { write_out(ptr, allocated) }
}

/// `hsa_amd_memory_pool_free`.
pub unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status {
    guard(|| free(ptr))
}

/// `hsa_amd_agents_allow_access`: the pointer must be an allocation of this runtime.
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const Agent,
    _flags: *const u32,
    ptr: *const c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        if num_agents == 0 || agents.is_null() || ptr.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: an array of `num_agents` handles per the API.
        let agents = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
        if agents.iter().any(|a| rt.agent(*a).is_none()) {
            return Err(ERROR_INVALID_AGENT);
        }
        owning_pool(ptr).ok_or(ERROR_INVALID_ARGUMENT)?;
        Ok(())
    })
}

/// `hsa_agent_iterate_regions`.
pub unsafe extern "C" fn hsa_agent_iterate_regions(
    agent: Agent,
    callback: Option<unsafe extern "C" fn(Region, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    // SAFETY: same contract; pools and regions are the same records.
    unsafe { hsa_amd_agent_iterate_memory_pools(agent, callback, data) }
}

/// `hsa_region_get_info`.
pub unsafe extern "C" fn hsa_region_get_info(
    region: Region,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.pool(region).ok_or(ERROR_INVALID_REGION)?;
        // SAFETY: the caller provides storage of the attribute's type.
        unsafe {
            match attribute {
                REGION_INFO_SEGMENT => put(value, 0u32),
                REGION_INFO_GLOBAL_FLAGS => put(value, pool_flags(info)),
                REGION_INFO_SIZE | REGION_INFO_ALLOC_MAX_SIZE => put(value, info.size as usize),
                REGION_INFO_RUNTIME_ALLOC_ALLOWED => put(value, true),
                REGION_INFO_RUNTIME_ALLOC_GRANULE | REGION_INFO_RUNTIME_ALLOC_ALIGNMENT => {
                    put(value, ALIGNMENT)
                }
                REGION_INFO_ALLOC_MAX_PRIVATE_WORKGROUP_SIZE => put(value, 0u32),
                AMD_REGION_INFO_HOST_ACCESSIBLE => put(value, true),
                AMD_REGION_INFO_BASE => put(value, std::ptr::null_mut::<c_void>()),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_memory_allocate`.
pub unsafe extern "C" fn hsa_memory_allocate(
    region: Region,
    size: usize,
    ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: forwarded.
    guard(|| unsafe { allocate_out(region, size, ptr, ERROR_INVALID_REGION) })
}

/// `hsa_memory_free`.
pub unsafe extern "C" fn hsa_memory_free(ptr: *mut c_void) -> Status {
    guard(|| free(ptr))
}

/// `hsa_memory_copy`: a synchronous copy.
pub unsafe extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> Status {
    guard(|| {
        if dst.is_null() || src.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: both buffers are valid for `size` bytes per the API; overlap is tolerated.
        unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
        Ok(())
    })
}

/// `hsa_memory_register`: nothing to do on a shared address space.
pub unsafe extern "C" fn hsa_memory_register(_ptr: *mut c_void, _size: usize) -> Status {
    guard(|| runtime::require().map(drop))
}

/// `hsa_memory_deregister`.
pub unsafe extern "C" fn hsa_memory_deregister(_ptr: *mut c_void, _size: usize) -> Status {
    guard(|| runtime::require().map(drop))
}

/// `hsa_memory_assign_agent`.
pub unsafe extern "C" fn hsa_memory_assign_agent(
    _ptr: *mut c_void,
    agent: Agent,
    _access: u32,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        Ok(())
    })
}

/// `hsa_amd_memory_lock`: host memory is already GPU-visible; the agent pointer is the host
/// pointer.
pub unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    _agents: *mut Agent,
    _num_agent: i32,
    agent_ptr: *mut *mut c_void,
) -> Status {
    guard(|| {
        runtime::require()?;
        if host_ptr.is_null() || size == 0 {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(agent_ptr, host_ptr) }
    })
}

/// `hsa_amd_memory_unlock`.
pub unsafe extern "C" fn hsa_amd_memory_unlock(_host_ptr: *mut c_void) -> Status {
    guard(|| runtime::require().map(drop))
}

/// `hsa_amd_memory_fill`: `count` dwords of `value`.
pub unsafe extern "C" fn hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> Status {
    guard(|| {
        runtime::require()?;
        if ptr.is_null() || !(ptr as usize).is_multiple_of(4) {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: the caller provides `count` writable, aligned dwords per the API.
        unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u32>(), count) }.fill(value);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of the pages of `size` bytes at `ptr` are in memory (`mincore`).
    fn resident_pages(ptr: *mut c_void, size: usize) -> usize {
        let pages = size.div_ceil(ALIGNMENT);
        let mut vec = vec![0u8; pages];
        // SAFETY: `ptr` is a page-aligned live mapping of `size` bytes; `vec` has a byte per page.
        let status = unsafe { libc::mincore(ptr, size, vec.as_mut_ptr()) };
        assert_eq!(status, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|&&b| b & 1 != 0).count()
    }

    #[test]
    fn device_local_memory_is_committed_by_the_allocating_call() {
        let size = 4 << 20;
        let resident = allocate(size, 7, true).unwrap();
        assert_eq!(resident_pages(resident, size), size / ALIGNMENT);
        // SAFETY: the allocation just made, `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(resident.cast::<u8>(), size) };
        assert!(bytes.iter().all(|&b| b == 0), "still zeroed");
        // System memory is committed where it is touched, as before.
        let lazy = allocate(size, 8, false).unwrap();
        assert_eq!(resident_pages(lazy, size), 0);
        free(resident).unwrap();
        free(lazy).unwrap();
    }
}
