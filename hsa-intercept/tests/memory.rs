//! Memory-allocation and scratch tracing in one process: fake runtime tables are wrapped in
//! place, calls and scratch events through them become records with the pool's agent, the
//! queue's id and agent, and the scratch size; failed calls record nothing; the replaced
//! tool-event slots are still called. (One test: the sink and the entry points are global.)

mod common;
use common::{empty_table, get, install_log, runtime_tables, set};
use hsa_intercept::hsa::{Fns, HsaQueue};
use hsa_intercept::memory::{
    ScratchAllocEnd, ScratchAllocStart, ScratchEvent, event_kind, install_allocations,
    install_scratch,
};
use hsa_intercept::sink;
use hsa_intercept::tables::{AMD_EXT, CORE, TOOLS};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use trace_records::{AllocationOperation, ProcessTrace, ScratchOperation};

const CPU: u64 = 0x10;
const GPU: u64 = 0x11;
const CPU_REGION: u64 = 0x200;
const GPU_POOL: u64 = 0x100;
const ALLOCATED: u64 = 0xA000;
const HANDLE: u64 = 0x77;

type AgentCallback = unsafe extern "C" fn(u64, *mut c_void) -> u32;

unsafe extern "C" fn iterate_agents(cb: AgentCallback, data: *mut c_void) -> u32 {
    for a in [CPU, GPU] {
        // SAFETY: the tool's callback with its data.
        unsafe { cb(a, data) };
    }
    0
}

unsafe extern "C" fn agent_get_info(agent: u64, attribute: u32, value: *mut c_void) -> u32 {
    let v = match attribute {
        0xA004 => (agent - CPU) as u32, // driver node id: CPU 0, GPU 1
        17 => u32::from(agent == GPU),  // device type
        _ => return 0x1001,
    };
    // SAFETY: both attributes are u32s.
    unsafe { value.cast::<u32>().write(v) };
    0
}

unsafe extern "C" fn iterate_pools(agent: u64, cb: AgentCallback, data: *mut c_void) -> u32 {
    let pool = if agent == GPU { GPU_POOL } else { CPU_REGION };
    // SAFETY: the tool's callback with its data.
    unsafe { cb(pool, data) };
    0
}

unsafe extern "C" fn queue_get_info(_q: *mut HsaQueue, attribute: u32, value: *mut c_void) -> u32 {
    assert_eq!(attribute, 0, "HSA_AMD_QUEUE_INFO_AGENT");
    // SAFETY: an hsa_agent_t out value.
    unsafe { value.cast::<u64>().write(GPU) };
    0
}

unsafe extern "C" fn pool_allocate(_pool: u64, size: usize, _f: u32, ptr: *mut *mut c_void) -> u32 {
    if size == 0 {
        return 0x1001;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { ptr.write(ALLOCATED as *mut c_void) };
    0
}

unsafe extern "C" fn memory_allocate(_region: u64, size: usize, ptr: *mut *mut c_void) -> u32 {
    // SAFETY: forwarded.
    unsafe { pool_allocate(0, size, 0, ptr) }
}

unsafe extern "C" fn free(_ptr: *mut c_void) -> u32 {
    0
}

unsafe extern "C" fn handle_create(_p: u64, _s: usize, _t: u32, _f: u64, h: *mut u64) -> u32 {
    // SAFETY: the caller's out-pointer.
    unsafe { h.write(HANDLE) };
    0
}

unsafe extern "C" fn handle_release(_h: u64) -> u32 {
    0
}

static TOOL_CALLS: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn runtime_tool_event(_event: *const c_void) -> u32 {
    TOOL_CALLS.fetch_add(1, Ordering::SeqCst);
    0
}

#[test]
fn allocations_and_scratch_events_become_records() {
    let path = install_log("memory", 78);
    let (mut core, mut amd) = runtime_tables();
    set(
        &mut core,
        &CORE,
        "hsa_iterate_agents",
        iterate_agents as *const c_void,
    );
    set(
        &mut core,
        &CORE,
        "hsa_agent_get_info",
        agent_get_info as *const c_void,
    );
    set(
        &mut core,
        &CORE,
        "hsa_agent_iterate_regions",
        iterate_pools as *const c_void,
    );
    set(
        &mut core,
        &CORE,
        "hsa_memory_allocate",
        memory_allocate as *const c_void,
    );
    set(&mut core, &CORE, "hsa_memory_free", free as *const c_void);
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_agent_iterate_memory_pools",
        iterate_pools as *const c_void,
    );
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_queue_get_info",
        queue_get_info as *const c_void,
    );
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_memory_pool_allocate",
        pool_allocate as *const c_void,
    );
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_memory_pool_free",
        free as *const c_void,
    );
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_vmem_handle_create",
        handle_create as *const c_void,
    );
    set(
        &mut amd,
        &AMD_EXT,
        "hsa_amd_vmem_handle_release",
        handle_release as *const c_void,
    );
    let mut tools = empty_table(&TOOLS);
    for name in TOOLS.names {
        set(
            &mut tools,
            &TOOLS,
            name,
            runtime_tool_event as *const c_void,
        );
    }
    // SAFETY: complete fake tables; only the entries set above are called.
    let fns = unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap();
    // SAFETY: writable tables of the right layouts, not yet called through.
    unsafe {
        assert_eq!(
            install_allocations(core.as_mut_ptr().cast(), amd.as_mut_ptr().cast(), fns),
            6
        );
        assert_eq!(install_scratch(tools.as_mut_ptr().cast(), fns), 6);
        assert_eq!(install_scratch(std::ptr::null_mut(), fns), 0, "no table");
    }
    assert_ne!(
        get(&amd, &AMD_EXT, "hsa_amd_memory_pool_allocate"),
        pool_allocate as *const () as u64,
        "replaced in place"
    );

    // SAFETY: the replaced entries keep the runtime's signatures.
    unsafe {
        type Alloc = unsafe extern "C" fn(u64, usize, u32, *mut *mut c_void) -> u32;
        type Region = unsafe extern "C" fn(u64, usize, *mut *mut c_void) -> u32;
        type Free = unsafe extern "C" fn(*mut c_void) -> u32;
        type Create = unsafe extern "C" fn(u64, usize, u32, u64, *mut u64) -> u32;
        type Release = unsafe extern "C" fn(u64) -> u32;
        let alloc: Alloc = std::mem::transmute(get(&amd, &AMD_EXT, "hsa_amd_memory_pool_allocate"));
        let pool_free: Free = std::mem::transmute(get(&amd, &AMD_EXT, "hsa_amd_memory_pool_free"));
        let region: Region = std::mem::transmute(get(&core, &CORE, "hsa_memory_allocate"));
        let region_free: Free = std::mem::transmute(get(&core, &CORE, "hsa_memory_free"));
        let create: Create = std::mem::transmute(get(&amd, &AMD_EXT, "hsa_amd_vmem_handle_create"));
        let release: Release =
            std::mem::transmute(get(&amd, &AMD_EXT, "hsa_amd_vmem_handle_release"));
        let mut p: *mut c_void = std::ptr::null_mut();
        assert_eq!(alloc(GPU_POOL, 4096, 0, &mut p), 0);
        assert_eq!(p as u64, ALLOCATED);
        assert_eq!(
            alloc(GPU_POOL, 0, 0, &mut p),
            0x1001,
            "a failure is forwarded"
        );
        assert_eq!(pool_free(p), 0);
        assert_eq!(region(CPU_REGION, 64, &mut p), 0);
        assert_eq!(region_free(p), 0);
        let mut h = 0u64;
        assert_eq!(create(GPU_POOL, 1 << 21, 0, 0, &mut h), 0);
        assert_eq!(h, HANDLE);
        assert_eq!(release(h), 0);

        // Scratch: an alloc pair with size and flags, a free pair, on queue 9.
        let queue = HsaQueue {
            r#type: 0,
            features: 1,
            base_address: std::ptr::null_mut(),
            doorbell_signal: 0,
            size: 64,
            reserved1: 0,
            id: 9,
        };
        let event = |k: &str| -> unsafe extern "C" fn(*const c_void) -> u32 {
            std::mem::transmute(get(&tools, &TOOLS, k))
        };
        let start = ScratchAllocStart {
            kind: event_kind::SCRATCH_ALLOC_START,
            queue: &queue,
            flags: 1,
            dispatch_id: 3,
        };
        let end = ScratchAllocEnd {
            kind: event_kind::SCRATCH_ALLOC_END,
            queue: &queue,
            flags: 1,
            dispatch_id: 3,
            size: 1 << 20,
            num_slots: 512,
        };
        assert_eq!(
            event("hsa_amd_tool_scratch_event_alloc_start")((&raw const start).cast()),
            0
        );
        assert_eq!(
            event("hsa_amd_tool_scratch_event_alloc_end")((&raw const end).cast()),
            0
        );
        let free_start = ScratchEvent {
            kind: event_kind::SCRATCH_FREE_START,
            queue: &queue,
            flags: 0,
        };
        let free_end = ScratchEvent {
            kind: event_kind::SCRATCH_FREE_END,
            ..free_start
        };
        assert_eq!(
            event("hsa_amd_tool_scratch_event_free_start")((&raw const free_start).cast()),
            0
        );
        assert_eq!(
            event("hsa_amd_tool_scratch_event_free_end")((&raw const free_end).cast()),
            0
        );
    }
    assert_eq!(
        TOOL_CALLS.load(Ordering::SeqCst),
        4,
        "the runtime's slots still run"
    );

    sink::seal_all();
    let t = ProcessTrace::read(&path).unwrap();
    assert_eq!(t.losses.total(), 0);
    let ops: Vec<(Option<AllocationOperation>, u64, u64, Option<u32>)> = t
        .allocations
        .iter()
        .map(|a| {
            (
                AllocationOperation::from_u8(a.operation),
                a.address,
                a.size,
                (a.has_agent != 0).then_some(a.agent_node_id),
            )
        })
        .collect();
    use AllocationOperation::*;
    assert_eq!(
        ops,
        [
            (Some(Allocate), ALLOCATED, 4096, Some(1)),
            (Some(Free), ALLOCATED, 0, None),
            (Some(Allocate), ALLOCATED, 64, Some(0)),
            (Some(Free), ALLOCATED, 0, None),
            (Some(VmemAllocate), HANDLE, 1 << 21, Some(1)),
            (Some(VmemFree), HANDLE, 0, None),
        ]
    );
    let mut ids: Vec<u64> = t.allocations.iter().map(|a| a.correlation_id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 6, "each untraced call gets its own id");
    assert!(t.allocations.iter().all(|a| a.start <= a.end));
    let scratch: Vec<(Option<ScratchOperation>, u64, u64, u32, u32)> = t
        .scratch
        .iter()
        .map(|s| {
            (
                ScratchOperation::from_u8(s.operation),
                s.queue_id,
                s.size,
                s.flags,
                s.agent_node_id,
            )
        })
        .collect();
    assert_eq!(
        scratch,
        [
            (Some(ScratchOperation::Alloc), 9, 1 << 20, 1, 1),
            (Some(ScratchOperation::Free), 9, 0, 0, 1),
        ]
    );
    assert!(t.scratch.iter().all(|s| s.start <= s.end));
}
