//! Memory-allocation and scratch-memory tracing.
//!
//! **Allocations** (`--memory-allocation-trace`): the runtime's allocation entries are replaced
//! in place, as rocprofiler-sdk counts them: `hsa_amd_memory_pool_allocate` and
//! `hsa_memory_allocate` are `ALLOCATE`, `hsa_amd_memory_pool_free` and `hsa_memory_free` are
//! `FREE`, `hsa_amd_vmem_handle_create` is `VMEM_ALLOCATE` (the record's address is the
//! handle) and `hsa_amd_vmem_handle_release` is `VMEM_FREE`. One [`MemoryAllocationRecord`]
//! per successful call; an allocation names the agent owning its pool (or region), a free
//! names none and has size 0, as upstream writes them. The replacement is installed before API
//! tracing wraps the table, so a traced call's correlation id is the record's.
//!
//! **Scratch** (`--scratch-memory-trace`): the runtime calls the `ToolsApiTable`'s
//! `hsa_amd_tool_scratch_event_{alloc,free,async_reclaim}_{start,end}` around scratch work for
//! a queue; the tool's handlers remember each start on the calling thread and emit one
//! [`ScratchMemoryRecord`] at the matching end (the runtime reports both from one thread),
//! then forward the event to the entry they replaced.
//!
//! The traced path allocates nothing and takes no lock: the pool → agent and agent → node
//! tables are built once, at the first event, by iterating the runtime's agents with its own
//! (untraced) entries, and only read afterwards.

use crate::clock::now_ns;
use crate::hsa::*;
use crate::sink;
use crate::tables::{AMD_EXT, ApiTable, CORE, TOOLS};
use crate::tracer::{current_correlation_id, new_correlation_id, thread_id};
use c_layout::c_struct;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};
use trace_records::{
    AllocationOperation, MemoryAllocationRecord, ScratchMemoryRecord, ScratchOperation,
};

/// `hsa_amd_tool_event_kind_t` values.
pub mod event_kind {
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_ALLOC_START`.
    pub const SCRATCH_ALLOC_START: u32 = 1;
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_ALLOC_END`.
    pub const SCRATCH_ALLOC_END: u32 = 2;
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_FREE_START`.
    pub const SCRATCH_FREE_START: u32 = 3;
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_FREE_END`.
    pub const SCRATCH_FREE_END: u32 = 4;
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_ASYNC_RECLAIM_START`.
    pub const SCRATCH_ASYNC_RECLAIM_START: u32 = 5;
    /// `HSA_AMD_TOOL_EVENT_SCRATCH_ASYNC_RECLAIM_END`.
    pub const SCRATCH_ASYNC_RECLAIM_END: u32 = 6;
}

/// `HSA_AMD_QUEUE_INFO_AGENT`.
pub const QUEUE_INFO_AGENT: u32 = 0;

c_struct! {
    /// The members every scratch event starts with (`hsa_amd_event_scratch_free_start_t` and
    /// the other free / async-reclaim events are exactly this).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct ScratchEvent as "hsa_amd_event_scratch_free_start_t", size 24 {
        pub kind: u32 => 0,
        pub queue: *const HsaQueue => 8,
        pub flags: u32 => 16,
    }
}

c_struct! {
    /// `hsa_amd_event_scratch_alloc_start_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct ScratchAllocStart as "hsa_amd_event_scratch_alloc_start_t", size 32 {
        pub kind: u32 => 0,
        pub queue: *const HsaQueue => 8,
        pub flags: u32 => 16,
        pub dispatch_id: u64 => 24,
    }
}

c_struct! {
    /// `hsa_amd_event_scratch_alloc_end_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct ScratchAllocEnd as "hsa_amd_event_scratch_alloc_end_t", size 48 {
        pub kind: u32 => 0,
        pub queue: *const HsaQueue => 8,
        pub flags: u32 => 16,
        pub dispatch_id: u64 => 24,
        pub size: usize => 32,
        pub num_slots: usize => 40,
    }
}

/// Every `#[repr(C)]` layout this module defines, for `cargo xtask abi-dump`.
pub fn layouts() -> Vec<c_layout::LayoutInfo> {
    use c_layout::LayoutInfo;
    vec![
        LayoutInfo::of::<ScratchEvent>("ScratchEvent"),
        LayoutInfo::of::<ScratchAllocStart>("ScratchAllocStart"),
        LayoutInfo::of::<ScratchAllocEnd>("ScratchAllocEnd"),
    ]
}

// ---- the runtime's originals ----

/// The entries replaced, by name, each kept as the runtime's original (null until installed).
struct Original {
    table: &'static ApiTable,
    name: &'static str,
    wrapper: *const c_void,
    slot: AtomicPtr<c_void>,
}

// SAFETY: `wrapper` is a function pointer (immutable, valid in every thread); `slot` is atomic.
unsafe impl Sync for Original {}

impl Original {
    const fn new(table: &'static ApiTable, name: &'static str, wrapper: *const c_void) -> Self {
        Original {
            table,
            name,
            wrapper,
            slot: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The runtime's entry, if it was replaced.
    fn get(&self) -> Option<*const c_void> {
        let p = self.slot.load(Ordering::Acquire);
        (!p.is_null()).then_some(p.cast_const())
    }

    /// Replaces the entry in the table at `base` (if the runtime has it) and keeps the original.
    ///
    /// # Safety
    /// `base` must be the runtime's table of `self.table`'s layout, handed over before use.
    unsafe fn install(&self, base: *mut u8) -> bool {
        if base.is_null() || self.get().is_some() {
            return false;
        }
        // SAFETY: forwarded; the wrapper has the entry's C signature (see the statics below).
        match unsafe { replace_entry(self.table, base, self.name, self.wrapper) } {
            Some(original) => {
                self.slot.store(original.cast_mut(), Ordering::Release);
                true
            }
            None => false,
        }
    }
}

type PoolAllocateFn = unsafe extern "C" fn(u64, usize, u32, *mut *mut c_void) -> Status;
type MemoryAllocateFn = unsafe extern "C" fn(u64, usize, *mut *mut c_void) -> Status;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> Status;
type HandleCreateFn = unsafe extern "C" fn(u64, usize, u32, u64, *mut u64) -> Status;
type HandleReleaseFn = unsafe extern "C" fn(u64) -> Status;
/// `hsa_status_t (*hsa_amd_tool_event)(hsa_amd_tool_event_t)`: the union holds one pointer.
type ToolEventFn = unsafe extern "C" fn(*const c_void) -> Status;

static POOL_ALLOCATE: Original = Original::new(
    &AMD_EXT,
    "hsa_amd_memory_pool_allocate",
    pool_allocate as *const c_void,
);
static POOL_FREE: Original = Original::new(
    &AMD_EXT,
    "hsa_amd_memory_pool_free",
    pool_free as *const c_void,
);
static VMEM_CREATE: Original = Original::new(
    &AMD_EXT,
    "hsa_amd_vmem_handle_create",
    vmem_handle_create as *const c_void,
);
static VMEM_RELEASE: Original = Original::new(
    &AMD_EXT,
    "hsa_amd_vmem_handle_release",
    vmem_handle_release as *const c_void,
);
static MEMORY_ALLOCATE: Original = Original::new(
    &CORE,
    "hsa_memory_allocate",
    memory_allocate as *const c_void,
);
static MEMORY_FREE: Original =
    Original::new(&CORE, "hsa_memory_free", memory_free as *const c_void);

static SCRATCH: [Original; 6] = [
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_alloc_start",
        scratch_event as *const c_void,
    ),
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_alloc_end",
        scratch_event as *const c_void,
    ),
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_free_start",
        scratch_event as *const c_void,
    ),
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_free_end",
        scratch_event as *const c_void,
    ),
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_async_reclaim_start",
        scratch_event as *const c_void,
    ),
    Original::new(
        &TOOLS,
        "hsa_amd_tool_scratch_event_async_reclaim_end",
        scratch_event as *const c_void,
    ),
];

/// Installs allocation tracing into the runtime's core and AMD-extension tables; returns how
/// many entries were replaced (entries the runtime lacks are left alone).
///
/// # Safety
/// `core` and `amd_ext` must be the runtime's tables, handed over before first use and not yet
/// wrapped for API tracing; `fns` their own entries.
pub unsafe fn install_allocations(core: *mut u8, amd_ext: *mut u8, fns: Fns) -> usize {
    set_fns(fns);
    let mut n = 0;
    for (o, base) in [
        (&POOL_ALLOCATE, amd_ext),
        (&POOL_FREE, amd_ext),
        (&VMEM_CREATE, amd_ext),
        (&VMEM_RELEASE, amd_ext),
        (&MEMORY_ALLOCATE, core),
        (&MEMORY_FREE, core),
    ] {
        // SAFETY: forwarded from the caller.
        n += usize::from(unsafe { o.install(base) });
    }
    n
}

/// Installs the scratch handlers into the runtime's `ToolsApiTable`; returns how many of the
/// six events are handled (0 if the runtime's table is too short or empty).
///
/// # Safety
/// `tools` must be the runtime's `ToolsApiTable` (or null), handed over before first use;
/// `fns` the runtime's core and AMD-extension entries.
pub unsafe fn install_scratch(tools: *mut u8, fns: Fns) -> usize {
    set_fns(fns);
    SCRATCH
        .iter()
        // SAFETY: forwarded from the caller.
        .map(|o| usize::from(unsafe { o.install(tools) }))
        .sum()
}

// ---- agents of pools and queues ----

/// Most agents and pools the lookup tables hold (beyond, an allocation's agent is unknown).
const MAX_AGENTS: usize = 64;
const MAX_POOLS: usize = 256;

/// Handle → (driver node id, is GPU) for agents, handle → node id for pools and regions.
struct Topology {
    agents: Vec<(u64, u32, bool)>,
    pools: Vec<(u64, u32)>,
}

static TOPOLOGY: OnceLock<Topology> = OnceLock::new();

impl Topology {
    /// Asks the runtime (its untraced entries); `None` while it reports no agent (not
    /// initialised yet), so a later event asks again.
    fn build() -> Option<Topology> {
        unsafe extern "C" fn collect(handle: u64, data: *mut c_void) -> Status {
            // SAFETY: `data` is the Vec passed with this callback, alive for the iteration.
            let v = unsafe { &mut *data.cast::<Vec<u64>>() };
            if v.len() < MAX_POOLS {
                v.push(handle);
            }
            SUCCESS
        }
        let f = fns()?;
        let mut handles: Vec<u64> = Vec::new();
        // SAFETY: the runtime's iterate_agents; the callback only appends to `handles`.
        unsafe { (f.iterate_agents)(collect, (&raw mut handles).cast()) };
        if handles.is_empty() {
            return None;
        }
        handles.truncate(MAX_AGENTS);
        let mut t = Topology {
            agents: Vec::with_capacity(handles.len()),
            pools: Vec::new(),
        };
        for agent in handles {
            let (node, gpu) = agent_node(agent);
            t.agents.push((agent, node, gpu));
            let iterators = [f.agent_iterate_memory_pools, f.agent_iterate_regions];
            for iterate in iterators.into_iter().flatten() {
                let mut pools: Vec<u64> = Vec::new();
                // SAFETY: the runtime's iterator; the callback only appends to `pools`.
                unsafe { iterate(agent, collect, (&raw mut pools).cast()) };
                t.pools.extend(pools.into_iter().map(|p| (p, node)));
            }
        }
        t.pools.sort_unstable();
        t.pools.dedup_by_key(|p| p.0);
        Some(t)
    }

    fn get() -> Option<&'static Topology> {
        if let Some(t) = TOPOLOGY.get() {
            return Some(t);
        }
        let t = Self::build()?;
        Some(TOPOLOGY.get_or_init(|| t))
    }

    fn pool_node(&self, pool: u64) -> Option<u32> {
        let k = self.pools.binary_search_by_key(&pool, |p| p.0).ok()?;
        Some(self.pools[k].1)
    }

    fn agent_node(&self, agent: u64) -> Option<u32> {
        self.agents
            .iter()
            .find(|a| a.0 == agent)
            .map(|&(_, node, _)| node)
    }

    fn first_gpu(&self) -> Option<u32> {
        self.agents.iter().find(|a| a.2).map(|&(_, node, _)| node)
    }
}

/// The driver node id of the agent owning `pool` (a memory pool or a region).
fn pool_agent(pool: u64) -> Option<u32> {
    Topology::get()?.pool_node(pool)
}

/// The driver node id of `queue`'s agent: `hsa_amd_queue_get_info(AGENT)` when the runtime has
/// it, else the first GPU (one GPU is the WSL case).
fn queue_agent(queue: *const HsaQueue) -> u32 {
    let Some(t) = Topology::get() else { return 0 };
    let asked = fns().and_then(|f| f.queue_get_info).and_then(|get| {
        let mut agent = 0u64;
        // SAFETY: the runtime's query on the queue it reported, with an 8-byte out value.
        let status = unsafe { get(queue.cast_mut(), QUEUE_INFO_AGENT, (&raw mut agent).cast()) };
        (status == SUCCESS).then(|| t.agent_node(agent)).flatten()
    });
    asked.or_else(|| t.first_gpu()).unwrap_or(0)
}

// ---- allocation wrappers ----

fn correlation() -> u64 {
    current_correlation_id().unwrap_or_else(new_correlation_id)
}

/// Emits one allocation record; never unwinds into the runtime's caller.
fn record_allocation(
    operation: AllocationOperation,
    start: u64,
    end: u64,
    address: u64,
    size: u64,
    pool: Option<u64>,
) {
    if !crate::scope::collecting(start) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let agent = pool.and_then(pool_agent);
        sink::emit(&MemoryAllocationRecord {
            correlation_id: correlation(),
            start,
            end,
            address,
            size,
            thread_id: thread_id(),
            agent_node_id: agent.unwrap_or(0),
            operation: operation as u8,
            has_agent: u8::from(agent.is_some()),
            reserved: [0; 6],
        });
    });
}

unsafe extern "C" fn pool_allocate(
    pool: u64,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    let Some(o) = POOL_ALLOCATE.get() else {
        return ERROR;
    };
    // SAFETY: the runtime's entry, which had this signature.
    let original = unsafe { std::mem::transmute::<*const c_void, PoolAllocateFn>(o) };
    let start = now_ns();
    // SAFETY: the caller's arguments, forwarded.
    let status = unsafe { original(pool, size, flags, ptr) };
    let end = now_ns();
    if status == SUCCESS && !ptr.is_null() {
        // SAFETY: the runtime wrote the allocation into the caller's out-pointer.
        let address = unsafe { ptr.read() } as u64;
        record_allocation(
            AllocationOperation::Allocate,
            start,
            end,
            address,
            size as u64,
            Some(pool),
        );
    }
    status
}

unsafe extern "C" fn memory_allocate(region: u64, size: usize, ptr: *mut *mut c_void) -> Status {
    let Some(o) = MEMORY_ALLOCATE.get() else {
        return ERROR;
    };
    // SAFETY: the runtime's entry, which had this signature.
    let original = unsafe { std::mem::transmute::<*const c_void, MemoryAllocateFn>(o) };
    let start = now_ns();
    // SAFETY: the caller's arguments, forwarded.
    let status = unsafe { original(region, size, ptr) };
    let end = now_ns();
    if status == SUCCESS && !ptr.is_null() {
        // SAFETY: the runtime wrote the allocation into the caller's out-pointer.
        let address = unsafe { ptr.read() } as u64;
        record_allocation(
            AllocationOperation::Allocate,
            start,
            end,
            address,
            size as u64,
            Some(region),
        );
    }
    status
}

/// A free through `entry` (whose original has [`FreeFn`]'s signature).
fn traced_free(entry: &Original, ptr: *mut c_void) -> Status {
    let Some(o) = entry.get() else { return ERROR };
    // SAFETY: the runtime's entry, which had this signature.
    let original = unsafe { std::mem::transmute::<*const c_void, FreeFn>(o) };
    let start = now_ns();
    // SAFETY: the caller's argument, forwarded.
    let status = unsafe { original(ptr) };
    let end = now_ns();
    if status == SUCCESS && !ptr.is_null() {
        record_allocation(AllocationOperation::Free, start, end, ptr as u64, 0, None);
    }
    status
}

unsafe extern "C" fn pool_free(ptr: *mut c_void) -> Status {
    traced_free(&POOL_FREE, ptr)
}

unsafe extern "C" fn memory_free(ptr: *mut c_void) -> Status {
    traced_free(&MEMORY_FREE, ptr)
}

unsafe extern "C" fn vmem_handle_create(
    pool: u64,
    size: usize,
    kind: u32,
    flags: u64,
    handle: *mut u64,
) -> Status {
    let Some(o) = VMEM_CREATE.get() else {
        return ERROR;
    };
    // SAFETY: the runtime's entry, which had this signature.
    let original = unsafe { std::mem::transmute::<*const c_void, HandleCreateFn>(o) };
    let start = now_ns();
    // SAFETY: the caller's arguments, forwarded.
    let status = unsafe { original(pool, size, kind, flags, handle) };
    let end = now_ns();
    if status == SUCCESS && !handle.is_null() {
        // SAFETY: the runtime wrote the handle into the caller's out-pointer.
        let h = unsafe { handle.read() };
        record_allocation(
            AllocationOperation::VmemAllocate,
            start,
            end,
            h,
            size as u64,
            Some(pool),
        );
    }
    status
}

unsafe extern "C" fn vmem_handle_release(handle: u64) -> Status {
    let Some(o) = VMEM_RELEASE.get() else {
        return ERROR;
    };
    // SAFETY: the runtime's entry, which had this signature.
    let original = unsafe { std::mem::transmute::<*const c_void, HandleReleaseFn>(o) };
    let start = now_ns();
    // SAFETY: the caller's argument, forwarded.
    let status = unsafe { original(handle) };
    let end = now_ns();
    if status == SUCCESS {
        record_allocation(AllocationOperation::VmemFree, start, end, handle, 0, None);
    }
    status
}

// ---- scratch events ----

thread_local! {
    /// Per operation (alloc, free, async reclaim): the start time of the event in progress on
    /// this thread (0 = none).
    static SCRATCH_STARTS: Cell<[u64; 3]> = const { Cell::new([0; 3]) };
}

/// What one scratch event is: its operation and whether it is the end of the pair.
fn classify(kind: u32) -> Option<(ScratchOperation, bool)> {
    use event_kind::*;
    Some(match kind {
        SCRATCH_ALLOC_START => (ScratchOperation::Alloc, false),
        SCRATCH_ALLOC_END => (ScratchOperation::Alloc, true),
        SCRATCH_FREE_START => (ScratchOperation::Free, false),
        SCRATCH_FREE_END => (ScratchOperation::Free, true),
        SCRATCH_ASYNC_RECLAIM_START => (ScratchOperation::AsyncReclaim, false),
        SCRATCH_ASYNC_RECLAIM_END => (ScratchOperation::AsyncReclaim, true),
        _ => return None,
    })
}

/// Records one scratch event (a start is remembered, an end emits the record).
///
/// # Safety
/// `event` must be null or point at a scratch event of the kind its first member names.
unsafe fn on_scratch_event(event: *const c_void) {
    let now = now_ns();
    if event.is_null() {
        return;
    }
    // SAFETY: every scratch event starts with these members (per the caller).
    let common = unsafe { event.cast::<ScratchEvent>().read() };
    let Some((operation, end)) = classify(common.kind) else {
        return;
    };
    let k = operation as usize - 1;
    if !end {
        let _ = SCRATCH_STARTS.try_with(|s| {
            let mut v = s.get();
            v[k] = now;
            s.set(v);
        });
        return;
    }
    let start = SCRATCH_STARTS
        .try_with(|s| {
            let mut v = s.get();
            let start = std::mem::replace(&mut v[k], 0);
            s.set(v);
            start
        })
        .unwrap_or(0);
    let size = if operation == ScratchOperation::Alloc {
        // SAFETY: an alloc end event has this layout (per the caller).
        unsafe { event.cast::<ScratchAllocEnd>().read() }.size as u64
    } else {
        0
    };
    let queue_id = if common.queue.is_null() {
        0
    } else {
        // SAFETY: the runtime reports a live queue; `id` is a plain member of hsa_queue_t.
        unsafe { (&raw const (*common.queue).id).read() }
    };
    let start = if start == 0 { now } else { start };
    // -P/--collection-period: outside every window nothing is recorded.
    if !crate::scope::collecting(start) {
        return;
    }
    sink::emit(&ScratchMemoryRecord {
        correlation_id: correlation(),
        start,
        end: now,
        queue_id,
        size,
        thread_id: thread_id(),
        agent_node_id: queue_agent(common.queue),
        flags: common.flags,
        operation: operation as u8,
        reserved: [0; 3],
    });
}

/// The handler of all six scratch events (the event names its own kind).
unsafe extern "C" fn scratch_event(event: *const c_void) -> Status {
    let kind = if event.is_null() {
        0
    } else {
        // SAFETY: every tool event starts with its kind (a u32).
        unsafe { event.cast::<u32>().read() }
    };
    // SAFETY: the runtime hands a scratch event of the kind it names.
    let _ = std::panic::catch_unwind(|| unsafe { on_scratch_event(event) });
    let slot = kind
        .checked_sub(1)
        .and_then(|k| SCRATCH.get(k as usize))
        .and_then(Original::get);
    match slot {
        Some(o) => {
            // SAFETY: the entry the handler replaced, with the tool-event signature.
            let original = unsafe { std::mem::transmute::<*const c_void, ToolEventFn>(o) };
            // SAFETY: the runtime's event, forwarded unchanged.
            unsafe { original(event) }
        }
        None => SUCCESS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scratch_kind_pairs_up_in_table_order() {
        for (k, o) in SCRATCH.iter().enumerate() {
            assert_eq!(TOOLS.operation(o.name), Some(k as u16), "{}", o.name);
            let (op, end) = classify(k as u32 + 1).unwrap();
            assert_eq!(end, k % 2 == 1);
            assert_eq!(op as usize - 1, k / 2);
            assert!(o.name.contains(match op {
                ScratchOperation::Alloc => "_alloc_",
                ScratchOperation::Free => "_free_",
                ScratchOperation::AsyncReclaim => "_async_reclaim_",
            }));
        }
        assert!(classify(0).is_none() && classify(7).is_none());
    }

    #[test]
    fn the_allocation_entries_are_the_ones_upstream_counts() {
        for o in [
            &POOL_ALLOCATE,
            &POOL_FREE,
            &VMEM_CREATE,
            &VMEM_RELEASE,
            &MEMORY_ALLOCATE,
            &MEMORY_FREE,
        ] {
            assert!(o.table.operation(o.name).is_some(), "{}", o.name);
        }
        assert_eq!(
            AMD_EXT.operation(VMEM_RELEASE.name),
            Some(58),
            "vmem_* are 55-66"
        );
    }
}
