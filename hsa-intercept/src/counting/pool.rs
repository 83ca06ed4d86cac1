//! Memory the GPU's command processor reads the counter command buffers from and writes the
//! counter output into: the CPU agent's kernarg pool (system memory, fine-grained, what the
//! runtime itself uses for kernel arguments), made accessible to the GPU agent.

use crate::hsa::*;
use std::ffi::c_void;

/// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`.
const POOL_INFO_GLOBAL_FLAGS: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`.
const POOL_FLAG_KERNARG_INIT: u32 = 1;
/// `HSA_DEVICE_TYPE_CPU`.
const DEVICE_CPU: u32 = 0;

/// The runtime entries pool memory needs (all or nothing).
#[derive(Clone, Copy)]
pub(crate) struct PoolFns {
    iterate_agents: unsafe extern "C" fn(
        unsafe extern "C" fn(u64, *mut c_void) -> Status,
        *mut c_void,
    ) -> Status,
    agent_get_info: unsafe extern "C" fn(u64, u32, *mut c_void) -> Status,
    iterate_pools: unsafe extern "C" fn(
        u64,
        unsafe extern "C" fn(u64, *mut c_void) -> Status,
        *mut c_void,
    ) -> Status,
    pool_get_info: unsafe extern "C" fn(u64, u32, *mut c_void) -> Status,
    allocate: unsafe extern "C" fn(u64, usize, u32, *mut *mut c_void) -> Status,
    allow_access: unsafe extern "C" fn(u32, *const u64, *const u32, *const c_void) -> Status,
}

impl PoolFns {
    /// The entries from the runtime's tables, or the names of those it lacks.
    pub(crate) fn from(f: &Fns) -> Result<PoolFns, String> {
        match (
            f.agent_iterate_memory_pools,
            f.memory_pool_get_info,
            f.memory_pool_allocate,
            f.agents_allow_access,
        ) {
            (Some(iterate_pools), Some(pool_get_info), Some(allocate), Some(allow_access)) => {
                Ok(PoolFns {
                    iterate_agents: f.iterate_agents,
                    agent_get_info: f.agent_get_info,
                    iterate_pools,
                    pool_get_info,
                    allocate,
                    allow_access,
                })
            }
            (a, b, c, d) => {
                let missing: Vec<&str> = [
                    (a.is_none(), "hsa_amd_agent_iterate_memory_pools"),
                    (b.is_none(), "hsa_amd_memory_pool_get_info"),
                    (c.is_none(), "hsa_amd_memory_pool_allocate"),
                    (d.is_none(), "hsa_amd_agents_allow_access"),
                ]
                .into_iter()
                .filter_map(|(gone, name)| gone.then_some(name))
                .collect();
                Err(format!(
                    "the HSA runtime's table lacks {}",
                    missing.join(", ")
                ))
            }
        }
    }
}

/// The kernarg pool of the first CPU agent that has one.
pub(crate) fn kernarg_pool(f: &PoolFns) -> Result<u64, String> {
    unsafe extern "C" fn collect(handle: u64, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Vec passed below, alive for the iteration.
        unsafe { (*data.cast::<Vec<u64>>()).push(handle) };
        SUCCESS
    }
    let mut agents: Vec<u64> = Vec::new();
    // SAFETY: the runtime's iteration with a callback that only appends to `agents`.
    unsafe { (f.iterate_agents)(collect, (&raw mut agents).cast()) };
    for agent in agents {
        let mut device = u32::MAX;
        // SAFETY: a u32-sized attribute of a live agent.
        unsafe { (f.agent_get_info)(agent, AGENT_INFO_DEVICE, (&raw mut device).cast()) };
        if device != DEVICE_CPU {
            continue;
        }
        let mut pools: Vec<u64> = Vec::new();
        // SAFETY: as above, for the agent's pools.
        unsafe { (f.iterate_pools)(agent, collect, (&raw mut pools).cast()) };
        for pool in pools {
            let mut flags = 0u32;
            // SAFETY: a u32-sized attribute of a live pool.
            let status =
                unsafe { (f.pool_get_info)(pool, POOL_INFO_GLOBAL_FLAGS, (&raw mut flags).cast()) };
            if status == SUCCESS && flags & POOL_FLAG_KERNARG_INIT != 0 {
                return Ok(pool);
            }
        }
    }
    Err("no CPU agent has a kernarg memory pool".into())
}

/// `bytes` of zeroed pool memory the GPU agent `gpu` can read and write.
pub(crate) fn allocate(f: &PoolFns, pool: u64, gpu: u64, bytes: usize) -> Result<*mut u8, String> {
    let ptr = allocate_unzeroed(f, pool, gpu, bytes)?;
    // SAFETY: `bytes` writable bytes just allocated, used by nothing else yet.
    unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
    Ok(ptr)
}

/// `bytes` of pool memory the GPU agent `gpu` can read and write, as the runtime hands it out
/// (not touched here: a thread-trace buffer of hundreds of MiB costs memory only where the GPU
/// writes).
pub(crate) fn allocate_unzeroed(
    f: &PoolFns,
    pool: u64,
    gpu: u64,
    bytes: usize,
) -> Result<*mut u8, String> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: the runtime's allocation with a valid out-pointer.
    let status = unsafe { (f.allocate)(pool, bytes, 0, &mut ptr) };
    if status != SUCCESS || ptr.is_null() {
        return Err(format!(
            "hsa_amd_memory_pool_allocate of {bytes} bytes failed (status {status:#x})"
        ));
    }
    // SAFETY: one agent handle, no flags, the allocation just made.
    let status = unsafe { (f.allow_access)(1, &gpu, std::ptr::null(), ptr) };
    if status != SUCCESS {
        return Err(format!(
            "hsa_amd_agents_allow_access for the GPU failed (status {status:#x})"
        ));
    }
    Ok(ptr.cast())
}
