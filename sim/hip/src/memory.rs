//! Allocations (`hipMalloc`, `hipHostMalloc`) and the pointer lookup copies use to tell device
//! memory, pinned host memory and pageable host memory apart.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use crate::error::{self, HipError};
use crate::hsa;
use crate::runtime::{Runtime, warn};

/// What an allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Device-local memory of the device with this ordinal.
    Device(usize),
    /// Pinned (fine-grained) host memory from `hipHostMalloc`.
    PinnedHost,
}

/// One live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Base address.
    pub base: usize,
    /// Size in bytes.
    pub size: usize,
    /// Kind.
    pub kind: Kind,
}

static ALLOCATIONS: Mutex<BTreeMap<usize, Allocation>> = Mutex::new(BTreeMap::new());

fn table() -> MutexGuard<'static, BTreeMap<usize, Allocation>> {
    ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The allocation containing `[ptr, ptr + len)`, if any.
pub fn find(ptr: usize, len: usize) -> Option<Allocation> {
    let table = table();
    let (_, a) = table.range(..=ptr).next_back()?;
    let end = ptr.checked_add(len)?;
    (end <= a.base + a.size.max(1)).then_some(*a)
}

/// Records an allocation (tests and the runtime).
pub fn record(a: Allocation) {
    table().insert(a.base, a);
}

/// Forgets the allocation starting at `base`.
pub fn forget(base: usize) -> Option<Allocation> {
    table().remove(&base)
}

/// `hipMalloc` on device `ordinal`: `hsa_amd_memory_pool_allocate` on its device-local pool.
pub fn device_malloc(rt: &Runtime, ordinal: i32, size: usize) -> Result<*mut c_void, HipError> {
    let device = rt.device(ordinal)?;
    if size == 0 {
        return Ok(std::ptr::null_mut());
    }
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: documented signature, valid out-pointer.
    let status =
        unsafe { (rt.hsa.hsa_amd_memory_pool_allocate)(device.device_pool, size, 0, &mut ptr) };
    if status != hsa::STATUS_SUCCESS || ptr.is_null() {
        return Err(error::OUT_OF_MEMORY);
    }
    record(Allocation {
        base: ptr as usize,
        size,
        kind: Kind::Device(device.ordinal),
    });
    Ok(ptr)
}

/// `hipHostMalloc`: fine-grained system memory, made accessible to every GPU.
pub fn host_malloc(rt: &Runtime, size: usize) -> Result<*mut c_void, HipError> {
    if size == 0 {
        return Ok(std::ptr::null_mut());
    }
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: documented signature, valid out-pointer.
    let status = unsafe { (rt.hsa.hsa_amd_memory_pool_allocate)(rt.host_pool, size, 0, &mut ptr) };
    if status != hsa::STATUS_SUCCESS || ptr.is_null() {
        return Err(error::OUT_OF_MEMORY);
    }
    let agents: Vec<hsa::Agent> = rt.devices.iter().map(|d| d.agent).collect();
    if !agents.is_empty() {
        // SAFETY: `agents` holds agents.len() agents; an allocation of this runtime.
        let status = unsafe {
            (rt.hsa.hsa_amd_agents_allow_access)(
                agents.len() as u32,
                agents.as_ptr(),
                std::ptr::null(),
                ptr,
            )
        };
        if status != hsa::STATUS_SUCCESS {
            warn(&format!(
                "hsa_amd_agents_allow_access failed: {}",
                rt.hsa.status_text(status)
            ));
        }
    }
    record(Allocation {
        base: ptr as usize,
        size,
        kind: Kind::PinnedHost,
    });
    Ok(ptr)
}

/// `hipFree` / `hipHostFree`: waits for the device (as HIP does), then frees. `want_host`
/// selects which kind the pointer must be.
pub fn free(rt: &Runtime, address: usize, want_host: bool) -> Result<(), HipError> {
    if address == 0 {
        return Ok(());
    }
    let a = find(address, 0).filter(|a| a.base == address);
    let Some(a) = a else {
        return Err(if want_host {
            error::INVALID_VALUE
        } else {
            error::INVALID_DEVICE_POINTER
        });
    };
    if (a.kind == Kind::PinnedHost) != want_host {
        return Err(error::INVALID_VALUE);
    }
    for device in &rt.devices {
        device.lock()?.sync_all(rt)?;
    }
    forget(a.base);
    // SAFETY: an allocation of this runtime, freed once.
    let status = unsafe { (rt.hsa.hsa_amd_memory_pool_free)(a.base as *mut c_void) };
    if status != hsa::STATUS_SUCCESS {
        return Err(error::INVALID_VALUE);
    }
    Ok(())
}

/// Frees everything still allocated (teardown and `hipDeviceReset`); `device` limits it to
/// one device's memory.
pub fn free_matching(rt: &Runtime, device: Option<usize>) {
    let victims: Vec<Allocation> = table()
        .values()
        .filter(|a| match (device, a.kind) {
            (None, _) => true,
            (Some(d), Kind::Device(k)) => d == k,
            (Some(_), Kind::PinnedHost) => false,
        })
        .copied()
        .collect();
    for a in victims {
        forget(a.base);
        // SAFETY: an allocation of this runtime, freed once.
        unsafe { (rt.hsa.hsa_amd_memory_pool_free)(a.base as *mut c_void) };
    }
}

/// Frees everything (teardown).
pub fn free_all(rt: &Runtime) {
    free_matching(rt, None);
}

/// Bytes currently allocated on device `ordinal`.
pub fn used_on(ordinal: usize) -> usize {
    table()
        .values()
        .filter(|a| a.kind == Kind::Device(ordinal))
        .map(|a| a.size)
        .sum()
}
