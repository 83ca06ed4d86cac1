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
/// `HSA_EXTENSION_AMD_LOADER`.
pub const EXTENSION_AMD_LOADER: u16 = 0x201;
/// The major version of the AMD loader extension whose table the tool reads.
pub const LOADER_MAJOR: u16 = 1;

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

/// `hsa_status_t (*)(const void* device_address, const void** host_address)`.
pub type QueryHostAddress = unsafe extern "C" fn(*const c_void, *mut *const c_void) -> Status;

c_struct! {
    /// `hsa_ven_amd_loader_1_00_pfn_t`: the first three members of every later version of the
    /// AMD loader extension's table (the runtime copies as many bytes as the caller asks for).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct LoaderTable as "hsa_ven_amd_loader_1_00_pfn_t", size 24 {
        pub hsa_ven_amd_loader_query_host_address: Option<QueryHostAddress> => 0,
        pub hsa_ven_amd_loader_query_segment_descriptors: *const c_void => 8,
        pub hsa_ven_amd_loader_query_executable: *const c_void => 16,
    }
}

/// `hsa_status_t (*)(hsa_executable_t, hsa_status_t (*)(hsa_executable_t,
/// hsa_loaded_code_object_t, void*), void*)`.
pub type IterateLoadedCodeObjects = unsafe extern "C" fn(
    u64,
    unsafe extern "C" fn(u64, u64, *mut c_void) -> Status,
    *mut c_void,
) -> Status;

/// `hsa_status_t (*)(hsa_loaded_code_object_t, hsa_ven_amd_loader_loaded_code_object_info_t,
/// void*)`.
pub type LoadedCodeObjectGetInfo = unsafe extern "C" fn(u64, u32, *mut c_void) -> Status;

c_struct! {
    /// `hsa_ven_amd_loader_1_01_pfn_t`: 1.00's members, then the loaded-code-object queries.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct LoaderTable101 as "hsa_ven_amd_loader_1_01_pfn_t", size 40 {
        pub hsa_ven_amd_loader_query_host_address: Option<QueryHostAddress> => 0,
        pub hsa_ven_amd_loader_query_segment_descriptors: *const c_void => 8,
        pub hsa_ven_amd_loader_query_executable: *const c_void => 16,
        pub hsa_ven_amd_loader_executable_iterate_loaded_code_objects: Option<IterateLoadedCodeObjects> => 24,
        pub hsa_ven_amd_loader_loaded_code_object_get_info: Option<LoadedCodeObjectGetInfo> => 32,
    }
}

/// `hsa_ven_amd_loader_loaded_code_object_info_t` values the tool asks for.
pub mod loaded_code_object {
    /// `…_INFO_AGENT` (an `hsa_agent_t`).
    pub const AGENT: u32 = 2;
    /// `…_INFO_CODE_OBJECT_STORAGE_TYPE` (u32: 0 none, 1 file, 2 memory).
    pub const STORAGE_TYPE: u32 = 3;
    /// `…_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE` (a u64 address).
    pub const STORAGE_MEMORY_BASE: u32 = 4;
    /// `…_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE` (u64).
    pub const STORAGE_MEMORY_SIZE: u32 = 5;
    /// `…_INFO_LOAD_DELTA` (i64).
    pub const LOAD_DELTA: u32 = 7;
    /// `…_INFO_LOAD_BASE` (u64).
    pub const LOAD_BASE: u32 = 8;
    /// `…_INFO_LOAD_SIZE` (u64).
    pub const LOAD_SIZE: u32 = 9;
    /// `…_INFO_URI_LENGTH` (u32).
    pub const URI_LENGTH: u32 = 10;
    /// `…_INFO_URI` (chars, not NUL-terminated).
    pub const URI: u32 = 11;
    /// `HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY`.
    pub const STORAGE_MEMORY: u32 = 2;
}

/// The AMD loader extension's entries the tool uses: the host-address query (all or nothing),
/// and the loaded-code-object queries of version 1.01 when the runtime has them.
#[derive(Debug, Clone, Copy)]
pub struct Loader {
    /// `hsa_ven_amd_loader_query_host_address`.
    pub query_host_address: QueryHostAddress,
    /// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects` and
    /// `hsa_ven_amd_loader_loaded_code_object_get_info`.
    pub loaded_code_objects: Option<(IterateLoadedCodeObjects, LoadedCodeObjectGetInfo)>,
}

impl Loader {
    /// Fetches the loader table through the runtime's `hsa_system_get_major_extension_table`
    /// (the runtime must be initialised). The error says why there is none.
    pub fn fetch(fns: &Fns) -> Result<Loader, String> {
        let get = fns
            .system_get_major_extension_table
            .ok_or("the runtime's core table has no hsa_system_get_major_extension_table")?;
        let mut table = LoaderTable101 {
            hsa_ven_amd_loader_query_host_address: None,
            hsa_ven_amd_loader_query_segment_descriptors: std::ptr::null(),
            hsa_ven_amd_loader_query_executable: std::ptr::null(),
            hsa_ven_amd_loader_executable_iterate_loaded_code_objects: None,
            hsa_ven_amd_loader_loaded_code_object_get_info: None,
        };
        // SAFETY: the runtime writes at most `size_of::<LoaderTable101>()` bytes into `table`
        // (a runtime with only 1.00 leaves the last two members as they are: None).
        let status = unsafe {
            get(
                EXTENSION_AMD_LOADER,
                LOADER_MAJOR,
                size_of::<LoaderTable101>(),
                (&raw mut table).cast(),
            )
        };
        if status != SUCCESS {
            return Err(format!(
                "the runtime does not offer the AMD loader extension 1.x \
                 (hsa_system_get_major_extension_table returned {status:#x})"
            ));
        }
        let query_host_address = table
            .hsa_ven_amd_loader_query_host_address
            .ok_or("the AMD loader table has no hsa_ven_amd_loader_query_host_address")?;
        let loaded_code_objects = table
            .hsa_ven_amd_loader_executable_iterate_loaded_code_objects
            .zip(table.hsa_ven_amd_loader_loaded_code_object_get_info);
        Ok(Loader {
            query_host_address,
            loaded_code_objects,
        })
    }

    /// The host copy of `len` bytes at `device_address`, if the loader knows the address.
    ///
    /// # Safety
    /// `query_host_address` must be the runtime's; the result is valid while the code object
    /// holding the address stays loaded.
    pub unsafe fn host_address(&self, device_address: u64) -> Option<*const u8> {
        let mut host: *const c_void = std::ptr::null();
        // SAFETY: the runtime's query with a valid out-pointer; it only looks the address up.
        let status =
            unsafe { (self.query_host_address)(device_address as *const c_void, &mut host) };
        (status == SUCCESS && !host.is_null()).then_some(host.cast())
    }
}

/// `hsa_status_t (*)(uint16_t extension, uint16_t version_major, size_t table_length, void* table)`.
pub type GetMajorExtensionTable = unsafe extern "C" fn(u16, u16, usize, *mut c_void) -> Status;

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
    (
        required { $( $field:ident : $table:ident . $name:literal => $ty:ty ; )* }
        optional { $( $ofield:ident : $otable:ident . $oname:literal => $oty:ty ; )* }
    ) => {
        /// The runtime's entry points the interception calls: the required ones (all or
        /// nothing) and optional ones (`None` when the runtime's table lacks them).
        #[derive(Debug, Clone, Copy)]
        #[allow(missing_docs)]
        pub struct Fns {
            $( pub $field: $ty, )*
            $( pub $ofield: Option<$oty>, )*
        }

        impl Fns {
            /// Reads the entries from the runtime's core and AMD-extension tables; the error
            /// names every required entry that is missing.
            ///
            /// # Safety
            /// The pointers must be the runtime's `CoreApiTable` and `AmdExtTable`, not yet
            /// wrapped; each entry must have the signature of its C declaration.
            pub unsafe fn resolve(core: *const u8, amd_ext: *const u8) -> Result<Self, Vec<&'static str>> {
                let base = |domain: ApiDomain| match domain {
                    ApiDomain::HsaCore => core,
                    _ => amd_ext,
                };
                let mut missing = Vec::new();
                $(
                    // SAFETY: forwarded from the caller.
                    let $field = unsafe { entry(&$table, base($table.domain), $name) };
                    if $field.is_none() {
                        missing.push($name);
                    }
                )*
                if !missing.is_empty() {
                    return Err(missing);
                }
                Ok(Self {
                    $( $field: {
                        let p = $field.unwrap_or(std::ptr::null());
                        // SAFETY: a non-null entry with the declared C signature.
                        unsafe { std::mem::transmute::<*const c_void, $ty>(p) }
                    }, )*
                    $( $ofield: {
                        // SAFETY: forwarded from the caller.
                        let p = unsafe { entry(&$otable, base($otable.domain), $oname) };
                        // SAFETY: a non-null entry with the declared C signature.
                        p.map(|p| unsafe { std::mem::transmute::<*const c_void, $oty>(p) })
                    }, )*
                })
            }

            /// [`Fns::resolve`] without the names of what is missing.
            ///
            /// # Safety
            /// As for [`Fns::resolve`].
            pub unsafe fn from_tables(core: *const u8, amd_ext: *const u8) -> Option<Self> {
                // SAFETY: forwarded from the caller.
                unsafe { Self::resolve(core, amd_ext) }.ok()
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
    let size = unsafe { crate::tables::runtime_size(table, base) };
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
    required {
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
    optional {
    system_get_major_extension_table: CORE."hsa_system_get_major_extension_table" => GetMajorExtensionTable;
    agent_iterate_memory_pools: AMD_EXT."hsa_amd_agent_iterate_memory_pools" => unsafe extern "C" fn(u64, unsafe extern "C" fn(u64, *mut c_void) -> Status, *mut c_void) -> Status;
    memory_pool_get_info: AMD_EXT."hsa_amd_memory_pool_get_info" => unsafe extern "C" fn(u64, u32, *mut c_void) -> Status;
    memory_pool_allocate: AMD_EXT."hsa_amd_memory_pool_allocate" => unsafe extern "C" fn(u64, usize, u32, *mut *mut c_void) -> Status;
    agents_allow_access: AMD_EXT."hsa_amd_agents_allow_access" => unsafe extern "C" fn(u32, *const u64, *const u32, *const c_void) -> Status;
    agent_iterate_regions: CORE."hsa_agent_iterate_regions" => unsafe extern "C" fn(u64, unsafe extern "C" fn(u64, *mut c_void) -> Status, *mut c_void) -> Status;
    queue_get_info: AMD_EXT."hsa_amd_queue_get_info" => unsafe extern "C" fn(*mut HsaQueue, u32, *mut c_void) -> Status;
    executable_destroy: CORE."hsa_executable_destroy" => unsafe extern "C" fn(u64) -> Status;
    }
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
        LayoutInfo::of::<LoaderTable>("LoaderTable"),
        LayoutInfo::of::<LoaderTable101>("LoaderTable101"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `table`'s layout with every entry null (8-byte aligned storage).
    fn empty_table(table: &ApiTable) -> Vec<u64> {
        let mut t = vec![0u64; table.size() / 8];
        t[0] = u64::from(table.size() as u32) << 32; // major 0, minor_id = sizeof
        t
    }

    fn set(t: &mut [u64], table: &ApiTable, name: &str, f: *const c_void) {
        let k = table.operation(name).unwrap() as usize;
        t[table.offset(k) / 8] = f as u64;
    }

    unsafe extern "C" fn placeholder() {}

    #[test]
    fn resolve_names_every_missing_required_entry_and_tolerates_optional_ones() {
        let mut core = empty_table(&CORE);
        let mut amd = empty_table(&AMD_EXT);
        let f = placeholder as *const c_void;
        // SAFETY: tables of the right layout; nothing is called.
        let err = unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap_err();
        assert!(err.contains(&"hsa_signal_create"), "{err:?}");
        assert!(err.contains(&"hsa_amd_signal_async_handler"), "{err:?}");
        assert!(
            !err.contains(&"hsa_system_get_major_extension_table"),
            "optional: {err:?}"
        );
        let required = err.clone();
        for name in &required[1..] {
            let t = if CORE.operation(name).is_some() {
                (&mut core, &CORE)
            } else {
                (&mut amd, &AMD_EXT)
            };
            set(t.0, t.1, name, f);
        }
        // SAFETY: as above.
        let err = unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap_err();
        assert_eq!(err, [required[0]], "only the one left out is named");
        let table = if CORE.operation(required[0]).is_some() {
            (&mut core, &CORE)
        } else {
            (&mut amd, &AMD_EXT)
        };
        set(table.0, table.1, required[0], f);
        // SAFETY: as above.
        let fns = unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap();
        assert!(fns.system_get_major_extension_table.is_none());
        assert!(
            Loader::fetch(&fns)
                .unwrap_err()
                .contains("no hsa_system_get_major_extension_table")
        );
        set(&mut core, &CORE, "hsa_system_get_major_extension_table", f);
        // SAFETY: as above.
        let fns = unsafe { Fns::from_tables(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap();
        assert_eq!(
            fns.system_get_major_extension_table.map(|g| g as usize),
            Some(f as usize)
        );
    }

    static ASKED: std::sync::Mutex<Vec<(u16, u16, usize)>> = std::sync::Mutex::new(Vec::new());

    unsafe extern "C" fn query(device: *const c_void, host: *mut *const c_void) -> Status {
        if device as u64 == 0x1000 {
            // SAFETY: the caller's out-pointer.
            unsafe { *host = 0x2000 as *const c_void };
            SUCCESS
        } else {
            0x1001
        }
    }

    unsafe extern "C" fn offering(ext: u16, major: u16, len: usize, table: *mut c_void) -> Status {
        ASKED.lock().unwrap().push((ext, major, len));
        let t = LoaderTable {
            hsa_ven_amd_loader_query_host_address: Some(query),
            hsa_ven_amd_loader_query_segment_descriptors: std::ptr::null(),
            hsa_ven_amd_loader_query_executable: std::ptr::null(),
        };
        // A 1.00 runtime: it copies its 24 bytes at most, leaving the rest of a longer table.
        let n = len.min(size_of::<LoaderTable>());
        // SAFETY: the caller provides `len` >= `n` bytes; `t` has `n` bytes.
        unsafe { std::ptr::copy_nonoverlapping((&raw const t).cast::<u8>(), table.cast(), n) };
        SUCCESS
    }

    unsafe extern "C" fn refusing(_: u16, _: u16, _: usize, _: *mut c_void) -> Status {
        ERROR
    }

    fn fns_with(get: GetMajorExtensionTable) -> Fns {
        let mut core = empty_table(&CORE);
        let mut amd = empty_table(&AMD_EXT);
        let f = placeholder as *const c_void;
        for (t, table) in [(&mut core, &CORE), (&mut amd, &AMD_EXT)] {
            for name in table.names {
                set(t, table, name, f);
            }
        }
        set(
            &mut core,
            &CORE,
            "hsa_system_get_major_extension_table",
            get as *const c_void,
        );
        // SAFETY: complete tables; only the extension-table entry is called.
        unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap()
    }

    #[test]
    fn the_loader_comes_from_the_major_extension_table() {
        let loader = Loader::fetch(&fns_with(offering)).unwrap();
        assert_eq!(
            ASKED.lock().unwrap().as_slice(),
            [(0x201, 1, 40)],
            "the 1.01 table"
        );
        assert!(
            loader.loaded_code_objects.is_none(),
            "a 1.00 runtime leaves the loaded-code-object queries out"
        );
        // SAFETY: the fake query only compares the address.
        unsafe {
            assert_eq!(loader.host_address(0x1000), Some(0x2000 as *const u8));
            assert_eq!(loader.host_address(0x1040), None);
        }
        let refused = Loader::fetch(&fns_with(refusing)).unwrap_err();
        assert!(refused.contains("0x1000"), "{refused}");
    }
}
