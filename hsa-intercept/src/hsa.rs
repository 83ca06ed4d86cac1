//! The HSA types and entry points the interception itself uses, taken from the runtime's own
//! table before anything is wrapped (so the tool's internal calls are never traced).

use crate::tables::{AMD_EXT, ApiTable, CORE};
use c_layout::c_struct;
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Mutex, OnceLock};
use trace_records::ApiDomain;

/// `hsa_status_t`.
pub type Status = u32;
/// `HSA_STATUS_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `HSA_STATUS_ERROR`.
pub const ERROR: Status = 0x1000;

/// `HSA_AGENT_INFO_DEVICE` (`hsa_device_type_t`: CPU 0, GPU 1).
pub const AGENT_INFO_DEVICE: u32 = 17;
/// `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`.
pub const AMD_AGENT_INFO_DRIVER_NODE_ID: u32 = 0xA004;
/// `HSA_EXECUTABLE_SYMBOL_INFO_TYPE` (`HSA_SYMBOL_KIND_KERNEL` = 1).
pub const SYMBOL_INFO_TYPE: u32 = 0;
/// `HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH`.
pub const SYMBOL_INFO_NAME_LENGTH: u32 = 1;
/// `HSA_EXECUTABLE_SYMBOL_INFO_NAME`.
pub const SYMBOL_INFO_NAME: u32 = 2;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE`.
pub const SYMBOL_INFO_KERNARG_SEGMENT_SIZE: u32 = 11;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE`.
pub const SYMBOL_INFO_GROUP_SEGMENT_SIZE: u32 = 13;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE`.
pub const SYMBOL_INFO_PRIVATE_SEGMENT_SIZE: u32 = 14;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`.
pub const SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;
/// `HSA_SIGNAL_CONDITION_LT`.
pub const CONDITION_LT: u32 = 2;

/// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
pub const PACKET_KERNEL_DISPATCH: u16 = 2;
/// `HSA_PACKET_TYPE_BARRIER_AND`.
pub const PACKET_BARRIER_AND: u16 = 3;
/// `HSA_PACKET_HEADER_BARRIER`: the packet waits for every earlier packet of its queue.
pub const HEADER_BARRIER: u16 = 1 << 8;
/// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE` (two bits at 11).
pub const HEADER_RELEASE_SCOPE_MASK: u16 = 3 << 11;

c_struct! {
    /// `ApiTableVersion`: the header of every HSA API table (`minor_id` = the table's size).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct ApiTableVersion as "ApiTableVersion", size 16 {
        pub major_id: u32 => 0,
        pub minor_id: u32 => 4,
        pub step_id: u32 => 8,
        pub reserved: u32 => 12,
    }
}

c_struct! {
    /// `HsaApiTable`: the root table ROCr registers as "hsa".
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct HsaApiTable as "HsaApiTable", size 64 {
        pub version: ApiTableVersion => 0,
        pub core_: *mut c_void => 16,
        pub amd_ext_: *mut c_void => 24,
        pub finalizer_ext_: *mut c_void => 32,
        pub image_ext_: *mut c_void => 40,
        pub tools_: *mut c_void => 48,
        pub pc_sampling_ext_: *mut c_void => 56,
    }
}

c_struct! {
    /// `hsa_queue_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct HsaQueue as "hsa_queue_t", size 40 {
        pub r#type: u32 => 0,
        pub features: u32 => 4,
        pub base_address: *mut c_void => 8,
        pub doorbell_signal: u64 => 16,
        pub size: u32 => 24,
        pub reserved1: u32 => 28,
        pub id: u64 => 32,
    }
}

c_struct! {
    /// `hsa_kernel_dispatch_packet_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct KernelDispatchPacket as "hsa_kernel_dispatch_packet_t", size 64 {
        pub header: u16 => 0,
        pub setup: u16 => 2,
        pub workgroup_size_x: u16 => 4,
        pub workgroup_size_y: u16 => 6,
        pub workgroup_size_z: u16 => 8,
        pub reserved0: u16 => 10,
        pub grid_size_x: u32 => 12,
        pub grid_size_y: u32 => 16,
        pub grid_size_z: u32 => 20,
        pub private_segment_size: u32 => 24,
        pub group_segment_size: u32 => 28,
        pub kernel_object: u64 => 32,
        pub kernarg_address: u64 => 40,
        pub reserved2: u64 => 48,
        pub completion_signal: u64 => 56,
    }
}

c_struct! {
    /// `hsa_barrier_and_packet_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct BarrierAndPacket as "hsa_barrier_and_packet_t", size 64 {
        pub header: u16 => 0,
        pub reserved0: u16 => 2,
        pub reserved1: u32 => 4,
        pub dep_signal: [u64; 5] => 8,
        pub reserved2: u64 => 48,
        pub completion_signal: u64 => 56,
    }
}

c_struct! {
    /// `amd_signal_t` (the block behind a signal handle; 64-byte aligned).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct AmdSignal as "amd_signal_t", size 64 {
        pub kind: i64 => 0,
        pub value: i64 => 8,
        pub event_mailbox_ptr: u64 => 16,
        pub event_id: u32 => 24,
        pub reserved1: u32 => 28,
        pub start_ts: u64 => 32,
        pub end_ts: u64 => 40,
        pub queue_ptr: u64 => 48,
        pub reserved3: [u32; 2] => 56,
    }
}

c_struct! {
    /// `hsa_amd_profiling_dispatch_time_t` (system-clock domain, ns).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct DispatchTime as "hsa_amd_profiling_dispatch_time_t", size 16 {
        pub start: u64 => 0,
        pub end: u64 => 8,
    }
}

c_struct! {
    /// `hsa_amd_profiling_async_copy_time_t` (system-clock domain, ns).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct AsyncCopyTime as "hsa_amd_profiling_async_copy_time_t", size 16 {
        pub start: u64 => 0,
        pub end: u64 => 8,
    }
}

/// `void (*)(hsa_status_t, hsa_queue_t*, void*)`.
pub type QueueCallback = Option<unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void)>;
/// The writer an intercept handler forwards packets with.
pub type PacketWriter = unsafe extern "C" fn(*const c_void, u64);
/// An intercept-queue packet handler.
pub type InterceptHandler =
    unsafe extern "C" fn(*const c_void, u64, u64, *mut c_void, PacketWriter);
/// `bool (*)(hsa_signal_value_t, void*)`.
pub type AsyncHandler = unsafe extern "C" fn(i64, *mut c_void) -> bool;

macro_rules! entries {
    ($( $field:ident : $table:ident . $name:literal => $ty:ty ; )*) => {
        /// The runtime's own entry points the interception calls.
        #[derive(Debug, Clone, Copy)]
        #[allow(missing_docs)]
        pub struct Fns {
            $( pub $field: $ty, )*
        }

        impl Fns {
            /// Reads the entries from the runtime's core and AMD-extension tables.
            ///
            /// # Safety
            /// The pointers must be the runtime's `CoreApiTable` and `AmdExtTable`, not yet
            /// wrapped; each entry must have the signature of its C declaration.
            pub unsafe fn from_tables(core: *const u8, amd_ext: *const u8) -> Option<Self> {
                Some(Self {
                    $( $field: {
                        let base = match $table.domain {
                            ApiDomain::HsaCore => core,
                            _ => amd_ext,
                        };
                        // SAFETY: forwarded from the caller.
                        let p = unsafe { entry(&$table, base, $name) }?;
                        // SAFETY: the entry has the declared C signature.
                        unsafe { std::mem::transmute::<*const c_void, $ty>(p) }
                    }, )*
                })
            }
        }
    };
}

/// The entry named `name` of `table` at `base`, if the runtime's table holds a non-null one.
///
/// # Safety
/// `base` must be a readable table of `table`'s layout.
pub unsafe fn entry(table: &ApiTable, base: *const u8, name: &str) -> Option<*const c_void> {
    let k = table.operation(name)? as usize;
    // SAFETY: forwarded from the caller.
    let size = unsafe { crate::api::runtime_size(table, base) };
    if table.offset(k) + 8 > size {
        return None;
    }
    // SAFETY: within the runtime's table.
    let p = unsafe { base.add(table.offset(k)).cast::<*const c_void>().read() };
    (!p.is_null()).then_some(p)
}

/// Replaces the entry named `name` of `table` at `base` with `wrapper`, if the runtime's table
/// holds a non-null one (see [`entry`]); returns the original. A missing or null entry is left
/// as it is.
///
/// # Safety
/// `base` must be a writable table of `table`'s layout, handed over before any thread calls
/// through it; `wrapper` must have the entry's C signature.
pub unsafe fn replace_entry(
    table: &ApiTable,
    base: *mut u8,
    name: &str,
    wrapper: *const c_void,
) -> Option<*const c_void> {
    // SAFETY: forwarded from the caller.
    let original = unsafe { entry(table, base, name) }?;
    let k = table.operation(name)? as usize;
    // SAFETY: `entry` found the slot within the runtime's table; entries are pointer-aligned,
    // and the caller owns the table while it is handed over.
    unsafe {
        base.add(table.offset(k))
            .cast::<*const c_void>()
            .write(wrapper)
    };
    Some(original)
}

entries! {
    iterate_agents: CORE."hsa_iterate_agents" => unsafe extern "C" fn(unsafe extern "C" fn(u64, *mut c_void) -> Status, *mut c_void) -> Status;
    agent_get_info: CORE."hsa_agent_get_info" => unsafe extern "C" fn(u64, u32, *mut c_void) -> Status;
    shut_down: CORE."hsa_shut_down" => unsafe extern "C" fn() -> Status;
    queue_destroy: CORE."hsa_queue_destroy" => unsafe extern "C" fn(*mut HsaQueue) -> Status;
    signal_create: CORE."hsa_signal_create" => unsafe extern "C" fn(i64, u32, *const u64, *mut u64) -> Status;
    signal_destroy: CORE."hsa_signal_destroy" => unsafe extern "C" fn(u64) -> Status;
    signal_subtract_screlease: CORE."hsa_signal_subtract_screlease" => unsafe extern "C" fn(u64, i64);
    signal_load_relaxed: CORE."hsa_signal_load_relaxed" => unsafe extern "C" fn(u64) -> i64;
    signal_wait_relaxed: CORE."hsa_signal_wait_relaxed" => unsafe extern "C" fn(u64, u32, i64, u64, u32) -> i64;
    signal_wait_scacquire: CORE."hsa_signal_wait_scacquire" => unsafe extern "C" fn(u64, u32, i64, u64, u32) -> i64;
    signal_store_relaxed: CORE."hsa_signal_store_relaxed" => unsafe extern "C" fn(u64, i64);
    signal_store_screlease: CORE."hsa_signal_store_screlease" => unsafe extern "C" fn(u64, i64);
    executable_freeze: CORE."hsa_executable_freeze" => unsafe extern "C" fn(u64, *const c_char) -> Status;
    executable_iterate_symbols: CORE."hsa_executable_iterate_symbols" => unsafe extern "C" fn(u64, unsafe extern "C" fn(u64, u64, *mut c_void) -> Status, *mut c_void) -> Status;
    symbol_get_info: CORE."hsa_executable_symbol_get_info" => unsafe extern "C" fn(u64, u32, *mut c_void) -> Status;
    set_profiler_enabled: AMD_EXT."hsa_amd_profiling_set_profiler_enabled" => unsafe extern "C" fn(*mut HsaQueue, i32) -> Status;
    async_copy_enable: AMD_EXT."hsa_amd_profiling_async_copy_enable" => unsafe extern "C" fn(bool) -> Status;
    get_dispatch_time: AMD_EXT."hsa_amd_profiling_get_dispatch_time" => unsafe extern "C" fn(u64, u64, *mut DispatchTime) -> Status;
    get_async_copy_time: AMD_EXT."hsa_amd_profiling_get_async_copy_time" => unsafe extern "C" fn(u64, *mut AsyncCopyTime) -> Status;
    signal_async_handler: AMD_EXT."hsa_amd_signal_async_handler" => unsafe extern "C" fn(u64, u32, i64, AsyncHandler, *mut c_void) -> Status;
    memory_async_copy: AMD_EXT."hsa_amd_memory_async_copy" => unsafe extern "C" fn(*mut c_void, u64, *const c_void, u64, usize, u32, *const u64, u64) -> Status;
    queue_intercept_create: AMD_EXT."hsa_amd_queue_intercept_create" => unsafe extern "C" fn(u64, u32, u32, QueueCallback, *mut c_void, u32, u32, *mut *mut HsaQueue) -> Status;
    queue_intercept_register: AMD_EXT."hsa_amd_queue_intercept_register" => unsafe extern "C" fn(*mut HsaQueue, InterceptHandler, *mut c_void) -> Status;
}

static FNS: OnceLock<Fns> = OnceLock::new();
static AGENT_NODES: OnceLock<Mutex<HashMap<u64, (u32, bool)>>> = OnceLock::new();

/// Records the runtime's entry points (the first set wins; every installer passes the same).
pub fn set_fns(fns: Fns) {
    let _ = FNS.set(fns);
}

/// The runtime's entry points, once an installer recorded them.
pub fn fns() -> Option<&'static Fns> {
    FNS.get()
}

/// The driver node id of an agent and whether it is a GPU (cached per agent).
pub fn agent_node(agent: u64) -> (u32, bool) {
    let cache = AGENT_NODES.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(&agent).copied()) {
        return v;
    }
    let Some(f) = fns() else { return (0, false) };
    let (mut node, mut device) = (0u32, 0u32);
    // SAFETY: the runtime's agent_get_info with attributes of u32 size.
    unsafe {
        (f.agent_get_info)(agent, AMD_AGENT_INFO_DRIVER_NODE_ID, (&raw mut node).cast());
        (f.agent_get_info)(agent, AGENT_INFO_DEVICE, (&raw mut device).cast());
    }
    let v = (node, device == 1);
    if let Ok(mut c) = cache.lock() {
        c.insert(agent, v);
    }
    v
}

/// Every HSA agent as `(driver node id, is GPU)`, in the runtime's order.
pub fn agents() -> Vec<(u32, bool)> {
    unsafe extern "C" fn collect(agent: u64, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Vec passed below, alive for the iteration.
        unsafe { (*data.cast::<Vec<u64>>()).push(agent) };
        SUCCESS
    }
    let Some(f) = fns() else { return Vec::new() };
    let mut handles: Vec<u64> = Vec::new();
    // SAFETY: the runtime's iterate_agents with a callback that only appends to `handles`.
    unsafe { (f.iterate_agents)(collect, (&raw mut handles).cast()) };
    handles.into_iter().map(agent_node).collect()
}

/// Every `#[repr(C)]` layout this module defines, for `cargo xtask abi-dump`.
pub fn layouts() -> Vec<c_layout::LayoutInfo> {
    use c_layout::LayoutInfo;
    vec![
        LayoutInfo::of::<ApiTableVersion>("ApiTableVersion"),
        LayoutInfo::of::<HsaApiTable>("HsaApiTable"),
        LayoutInfo::of::<HsaQueue>("HsaQueue"),
        LayoutInfo::of::<KernelDispatchPacket>("KernelDispatchPacket"),
        LayoutInfo::of::<BarrierAndPacket>("BarrierAndPacket"),
        LayoutInfo::of::<AmdSignal>("AmdSignal"),
        LayoutInfo::of::<DispatchTime>("DispatchTime"),
        LayoutInfo::of::<AsyncCopyTime>("AsyncCopyTime"),
    ]
}
