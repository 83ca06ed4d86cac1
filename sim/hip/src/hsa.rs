//! The HSA runtime as HIP uses it: `libhsa-runtime64.so.1` opened with `dlopen` once, inside
//! HIP's lazy initialisation, and the public C entry points (real names and signatures from
//! `hsa.h` / `hsa_ext_amd.h`) resolved with `dlsym`, all or nothing.

use std::ffi::{CStr, c_char, c_void};

/// `hsa_status_t`.
pub type Status = u32;
/// `HSA_STATUS_SUCCESS`.
pub const STATUS_SUCCESS: Status = 0;
/// `HSA_STATUS_INFO_BREAK`: stops an iteration early.
pub const STATUS_INFO_BREAK: Status = 1;

/// Every opaque HSA handle (`hsa_agent_t`, `hsa_signal_t`, ...): `struct { uint64_t handle; }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The opaque value.
    pub handle: u64,
}

/// `hsa_agent_t`.
pub type Agent = Handle;
/// `hsa_signal_t`.
pub type Signal = Handle;
/// `hsa_amd_memory_pool_t`.
pub type MemoryPool = Handle;
/// `hsa_isa_t`.
pub type Isa = Handle;
/// `hsa_executable_t`.
pub type Executable = Handle;
/// `hsa_executable_symbol_t`.
pub type ExecutableSymbol = Handle;
/// `hsa_code_object_reader_t`.
pub type CodeObjectReader = Handle;
/// `hsa_loaded_code_object_t`.
pub type LoadedCodeObject = Handle;

/// `hsa_queue_t` (40 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct HsaQueue {
    /// `hsa_queue_type32_t`.
    pub type_: u32,
    /// `HSA_QUEUE_FEATURE_*`.
    pub features: u32,
    /// The ring of 64-byte AQL packets.
    pub base_address: *mut c_void,
    /// Rung with the write index of the last packet written.
    pub doorbell_signal: Signal,
    /// Packets in the ring (a power of two).
    pub size: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Queue id.
    pub id: u64,
}

const _: () = {
    assert!(size_of::<HsaQueue>() == 40);
    assert!(std::mem::offset_of!(HsaQueue, base_address) == 8);
    assert!(std::mem::offset_of!(HsaQueue, doorbell_signal) == 16);
    assert!(std::mem::offset_of!(HsaQueue, size) == 24);
    assert!(std::mem::offset_of!(HsaQueue, id) == 32);
};

// hsa_system_info_t
pub const SYSTEM_INFO_VERSION_MAJOR: u32 = 0;
pub const SYSTEM_INFO_VERSION_MINOR: u32 = 1;
pub const SYSTEM_INFO_TIMESTAMP_FREQUENCY: u32 = 3;
pub const AMD_SYSTEM_INFO_SVM_SUPPORTED: u32 = 0x201;
pub const AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED: u32 = 0x205;
pub const AMD_SYSTEM_INFO_XNACK_ENABLED: u32 = 0x206;

// hsa_agent_info_t / hsa_amd_agent_info_t
pub const AGENT_INFO_NAME: u32 = 0;
pub const AGENT_INFO_VENDOR_NAME: u32 = 1;
pub const AGENT_INFO_FEATURE: u32 = 2;
pub const AGENT_INFO_PROFILE: u32 = 4;
pub const AGENT_INFO_WAVEFRONT_SIZE: u32 = 6;
pub const AGENT_INFO_WORKGROUP_MAX_DIM: u32 = 7;
pub const AGENT_INFO_WORKGROUP_MAX_SIZE: u32 = 8;
pub const AGENT_INFO_GRID_MAX_DIM: u32 = 9;
pub const AGENT_INFO_GRID_MAX_SIZE: u32 = 10;
pub const AGENT_INFO_QUEUES_MAX: u32 = 12;
pub const AGENT_INFO_QUEUE_MIN_SIZE: u32 = 13;
pub const AGENT_INFO_QUEUE_MAX_SIZE: u32 = 14;
pub const AGENT_INFO_NODE: u32 = 16;
pub const AGENT_INFO_DEVICE: u32 = 17;
pub const AGENT_INFO_CACHE_SIZE: u32 = 18;
pub const AGENT_INFO_VERSION_MAJOR: u32 = 21;
pub const AGENT_INFO_VERSION_MINOR: u32 = 22;
pub const AMD_AGENT_INFO_CHIP_ID: u32 = 0xA000;
pub const AMD_AGENT_INFO_CACHELINE_SIZE: u32 = 0xA001;
pub const AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: u32 = 0xA002;
pub const AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: u32 = 0xA003;
pub const AMD_AGENT_INFO_DRIVER_NODE_ID: u32 = 0xA004;
pub const AMD_AGENT_INFO_BDFID: u32 = 0xA006;
pub const AMD_AGENT_INFO_MEMORY_WIDTH: u32 = 0xA007;
pub const AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: u32 = 0xA008;
pub const AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;
pub const AMD_AGENT_INFO_MAX_WAVES_PER_CU: u32 = 0xA00A;
pub const AMD_AGENT_INFO_NUM_SIMDS_PER_CU: u32 = 0xA00B;
pub const AMD_AGENT_INFO_NUM_SHADER_ENGINES: u32 = 0xA00C;
pub const AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE: u32 = 0xA00D;
pub const AMD_AGENT_INFO_DOMAIN: u32 = 0xA00F;
pub const AMD_AGENT_INFO_COOPERATIVE_QUEUES: u32 = 0xA010;
pub const AMD_AGENT_INFO_UUID: u32 = 0xA011;
pub const AMD_AGENT_INFO_ASIC_REVISION: u32 = 0xA012;
pub const AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS: u32 = 0xA013;
pub const AMD_AGENT_INFO_MEMORY_AVAIL: u32 = 0xA015;
pub const AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: u32 = 0xA016;
pub const AMD_AGENT_INFO_NUM_SDMA_ENG: u32 = 0xA10A;
pub const AMD_AGENT_INFO_NUM_XCC: u32 = 0xA111;

/// `HSA_DEVICE_TYPE_CPU`.
pub const DEVICE_TYPE_CPU: u32 = 0;
/// `HSA_DEVICE_TYPE_GPU`.
pub const DEVICE_TYPE_GPU: u32 = 1;

// hsa_isa_info_t
pub const ISA_INFO_NAME_LENGTH: u32 = 0;
pub const ISA_INFO_NAME: u32 = 1;

// hsa_amd_memory_pool_info_t
pub const POOL_INFO_SEGMENT: u32 = 0;
pub const POOL_INFO_GLOBAL_FLAGS: u32 = 1;
pub const POOL_INFO_SIZE: u32 = 2;
pub const POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
pub const POOL_INFO_RUNTIME_ALLOC_GRANULE: u32 = 6;
pub const POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
pub const POOL_INFO_ACCESSIBLE_BY_ALL: u32 = 15;
/// `HSA_AMD_SEGMENT_GLOBAL`.
pub const SEGMENT_GLOBAL: u32 = 0;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`.
pub const POOL_FLAG_KERNARG_INIT: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`.
pub const POOL_FLAG_FINE_GRAINED: u32 = 2;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED`.
pub const POOL_FLAG_COARSE_GRAINED: u32 = 4;
/// `HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS`.
pub const AGENT_POOL_INFO_ACCESS: u32 = 0;

/// `HSA_QUEUE_TYPE_MULTI`.
pub const QUEUE_TYPE_MULTI: u32 = 0;

// hsa_signal_condition_t / hsa_wait_state_t
pub const CONDITION_LT: u32 = 2;
pub const WAIT_STATE_BLOCKED: u32 = 0;
pub const WAIT_STATE_ACTIVE: u32 = 1;

// hsa_executable_symbol_info_t
pub const SYMBOL_INFO_KERNARG_SEGMENT_SIZE: u32 = 11;
pub const SYMBOL_INFO_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
pub const SYMBOL_INFO_GROUP_SEGMENT_SIZE: u32 = 13;
pub const SYMBOL_INFO_PRIVATE_SEGMENT_SIZE: u32 = 14;
pub const SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;

/// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT`.
pub const ROUNDING_MODE_DEFAULT: u32 = 0;

// AQL packet header (hsa_packet_header_t bit positions, hsa_packet_type_t, hsa_fence_scope_t)
pub const PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
pub const PACKET_TYPE_BARRIER_AND: u16 = 3;
pub const HEADER_BARRIER_BIT: u16 = 8;
pub const HEADER_ACQUIRE_SCOPE_SHIFT: u16 = 9;
pub const HEADER_RELEASE_SCOPE_SHIFT: u16 = 11;
pub const FENCE_SCOPE_SYSTEM: u16 = 2;

type AgentCallback = unsafe extern "C" fn(Agent, *mut c_void) -> Status;
type IsaCallback = unsafe extern "C" fn(Isa, *mut c_void) -> Status;
type PoolCallback = unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status;
type QueueErrorCallback = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);
/// `hsa_amd_signal_handler`: returns whether to stay registered.
pub type SignalHandler = unsafe extern "C" fn(i64, *mut c_void) -> bool;

/// `HSA_EXTENSION_AMD_LOADER`.
pub const EXTENSION_AMD_LOADER: u16 = 0x201;
/// Bytes of the `hsa_ven_amd_loader_1_03_pfn_t` table (seven function pointers).
pub const LOADER_TABLE_BYTES: usize = 7 * size_of::<usize>();

macro_rules! hsa_functions {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)?; )*) => {
        /// The HSA entry points HIP calls, resolved from `libhsa-runtime64.so.1`.
        #[allow(missing_docs)]
        pub struct Hsa {
            $( pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
        }

        impl Hsa {
            /// Resolves every entry point from `handle`; fails naming the first one missing.
            ///
            /// # Safety
            ///
            /// `handle` is a live `dlopen` handle of an HSA runtime whose exports have the
            /// `hsa.h` signatures.
            unsafe fn resolve(handle: *mut c_void) -> Result<Hsa, String> {
                Ok(Hsa {
                    $( $name: {
                        let name = concat!(stringify!($name), "\0");
                        // SAFETY: a live handle and a NUL-terminated name.
                        let sym = unsafe { libc::dlsym(handle, name.as_ptr().cast()) };
                        if sym.is_null() {
                            return Err(format!("missing HSA export {}", stringify!($name)));
                        }
                        // SAFETY: the export has this hsa.h signature (caller's contract).
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(sym)
                        }
                    }, )*
                })
            }
        }
    };
}

hsa_functions! {
    hsa_init: fn() -> Status;
    hsa_shut_down: fn() -> Status;
    hsa_system_get_info: fn(u32, *mut c_void) -> Status;
    hsa_iterate_agents: fn(AgentCallback, *mut c_void) -> Status;
    hsa_agent_get_info: fn(Agent, u32, *mut c_void) -> Status;
    hsa_agent_iterate_isas: fn(Agent, IsaCallback, *mut c_void) -> Status;
    hsa_isa_get_info_alt: fn(Isa, u32, *mut c_void) -> Status;
    hsa_amd_agent_iterate_memory_pools: fn(Agent, PoolCallback, *mut c_void) -> Status;
    hsa_amd_memory_pool_get_info: fn(MemoryPool, u32, *mut c_void) -> Status;
    hsa_amd_agent_memory_pool_get_info: fn(Agent, MemoryPool, u32, *mut c_void) -> Status;
    hsa_amd_memory_pool_allocate: fn(MemoryPool, usize, u32, *mut *mut c_void) -> Status;
    hsa_amd_memory_pool_free: fn(*mut c_void) -> Status;
    hsa_amd_agents_allow_access: fn(u32, *const Agent, *const u32, *const c_void) -> Status;
    hsa_amd_memory_async_copy: fn(*mut c_void, Agent, *const c_void, Agent, usize, u32, *const Signal, Signal) -> Status;
    hsa_queue_create: fn(Agent, u32, u32, Option<QueueErrorCallback>, *mut c_void, u32, u32, *mut *mut HsaQueue) -> Status;
    hsa_queue_destroy: fn(*mut HsaQueue) -> Status;
    hsa_queue_add_write_index_screlease: fn(*const HsaQueue, u64) -> u64;
    hsa_queue_load_read_index_relaxed: fn(*const HsaQueue) -> u64;
    hsa_queue_load_read_index_scacquire: fn(*const HsaQueue) -> u64;
    hsa_signal_create: fn(i64, u32, *const Agent, *mut Signal) -> Status;
    hsa_signal_destroy: fn(Signal) -> Status;
    hsa_signal_load_relaxed: fn(Signal) -> i64;
    hsa_signal_silent_store_relaxed: fn(Signal, i64);
    hsa_signal_store_screlease: fn(Signal, i64);
    hsa_signal_wait_scacquire: fn(Signal, u32, i64, u64, u32) -> i64;
    hsa_code_object_reader_create_from_memory: fn(*const c_void, usize, *mut CodeObjectReader) -> Status;
    hsa_code_object_reader_destroy: fn(CodeObjectReader) -> Status;
    hsa_executable_create_alt: fn(u32, u32, *const c_char, *mut Executable) -> Status;
    hsa_executable_load_agent_code_object: fn(Executable, Agent, CodeObjectReader, *const c_char, *mut LoadedCodeObject) -> Status;
    hsa_executable_freeze: fn(Executable, *const c_char) -> Status;
    hsa_executable_get_symbol_by_name: fn(Executable, *const c_char, *const Agent, *mut ExecutableSymbol) -> Status;
    hsa_executable_symbol_get_info: fn(ExecutableSymbol, u32, *mut c_void) -> Status;
    hsa_executable_destroy: fn(Executable) -> Status;
    hsa_status_string: fn(Status, *mut *const c_char) -> Status;
    hsa_system_get_major_extension_table: fn(u16, u16, usize, *mut c_void) -> Status;
    hsa_amd_profiling_set_profiler_enabled: fn(*mut HsaQueue, i32) -> Status;
    hsa_amd_profiling_async_copy_enable: fn(bool) -> Status;
    hsa_system_major_extension_supported: fn(u16, u16, *mut u16, *mut bool) -> Status;
    hsa_amd_memory_copy_engine_status: fn(Agent, Agent, *mut u32) -> Status;
    hsa_amd_signal_async_handler: fn(Signal, u32, i64, Option<SignalHandler>, *mut c_void) -> Status;
}

/// The SONAME HIP opens.
pub const HSA_LIBRARY: &CStr = c"libhsa-runtime64.so.1";

/// Opens the HSA runtime (`RTLD_NOW | RTLD_GLOBAL`, as a `DT_NEEDED` dependency would be) and
/// resolves every entry point. The handle is never closed.
pub fn open() -> Result<Hsa, String> {
    // SAFETY: dlopen with a NUL-terminated name.
    let handle = unsafe { libc::dlopen(HSA_LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(format!(
            "cannot load {}: {}",
            HSA_LIBRARY.to_string_lossy(),
            dl_error()
        ));
    }
    // SAFETY: a live handle of the library that carries the HSA API.
    unsafe { Hsa::resolve(handle) }
}

/// The last `dlerror()` message.
pub fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".to_owned()
    } else {
        // SAFETY: non-null and NUL-terminated (see above).
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Hsa {
    /// `hsa_status_string` as text (for diagnostics).
    pub fn status_text(&self, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the documented signature; `text` is a valid out-pointer.
        let rc = unsafe { (self.hsa_status_string)(status, &mut text) };
        if rc != STATUS_SUCCESS || text.is_null() {
            return format!("HSA status {status:#x}");
        }
        // SAFETY: the runtime returns a static NUL-terminated string.
        let s = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        format!("{s} ({status:#x})")
    }
}
