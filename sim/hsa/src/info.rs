//! System and agent information, agent iteration, ISAs, status strings.

use std::ffi::{CStr, c_char, c_void};

use crate::guard::{guard, monotonic_ns};
use crate::loader;
use crate::runtime::{self, AgentInfo, AgentKind, Runtime};
use crate::types::*;

// hsa_system_info_t
const SYSTEM_INFO_VERSION_MAJOR: u32 = 0;
const SYSTEM_INFO_VERSION_MINOR: u32 = 1;
const SYSTEM_INFO_TIMESTAMP: u32 = 2;
const SYSTEM_INFO_TIMESTAMP_FREQUENCY: u32 = 3;
const SYSTEM_INFO_SIGNAL_MAX_WAIT: u32 = 4;
const SYSTEM_INFO_ENDIANNESS: u32 = 5;
const SYSTEM_INFO_MACHINE_MODEL: u32 = 6;
const SYSTEM_INFO_EXTENSIONS: u32 = 7;
const AMD_SYSTEM_INFO_BUILD_VERSION: u32 = 0x200;
const AMD_SYSTEM_INFO_SVM_SUPPORTED: u32 = 0x201;
const AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT: u32 = 0x202;
const AMD_SYSTEM_INFO_MWAITX_ENABLED: u32 = 0x203;
const AMD_SYSTEM_INFO_DMABUF_SUPPORTED: u32 = 0x204;
const AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED: u32 = 0x205;
const AMD_SYSTEM_INFO_XNACK_ENABLED: u32 = 0x206;
const AMD_SYSTEM_INFO_EXT_VERSION_MAJOR: u32 = 0x207;
const AMD_SYSTEM_INFO_EXT_VERSION_MINOR: u32 = 0x208;

// hsa_agent_info_t
pub const AGENT_INFO_NAME: u32 = 0;
pub const AGENT_INFO_VENDOR_NAME: u32 = 1;
pub const AGENT_INFO_FEATURE: u32 = 2;
pub const AGENT_INFO_MACHINE_MODEL: u32 = 3;
pub const AGENT_INFO_PROFILE: u32 = 4;
pub const AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE: u32 = 5;
pub const AGENT_INFO_WAVEFRONT_SIZE: u32 = 6;
pub const AGENT_INFO_WORKGROUP_MAX_DIM: u32 = 7;
pub const AGENT_INFO_WORKGROUP_MAX_SIZE: u32 = 8;
pub const AGENT_INFO_GRID_MAX_DIM: u32 = 9;
pub const AGENT_INFO_GRID_MAX_SIZE: u32 = 10;
pub const AGENT_INFO_FBARRIER_MAX_SIZE: u32 = 11;
pub const AGENT_INFO_QUEUES_MAX: u32 = 12;
pub const AGENT_INFO_QUEUE_MIN_SIZE: u32 = 13;
pub const AGENT_INFO_QUEUE_MAX_SIZE: u32 = 14;
pub const AGENT_INFO_QUEUE_TYPE: u32 = 15;
pub const AGENT_INFO_NODE: u32 = 16;
pub const AGENT_INFO_DEVICE: u32 = 17;
pub const AGENT_INFO_CACHE_SIZE: u32 = 18;
pub const AGENT_INFO_ISA: u32 = 19;
pub const AGENT_INFO_EXTENSIONS: u32 = 20;
pub const AGENT_INFO_VERSION_MAJOR: u32 = 21;
pub const AGENT_INFO_VERSION_MINOR: u32 = 22;
pub const AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES: u32 = 23;
pub const AGENT_INFO_FAST_F16_OPERATION: u32 = 24;

// hsa_amd_agent_info_t
pub const AMD_AGENT_INFO_CHIP_ID: u32 = 0xA000;
pub const AMD_AGENT_INFO_CACHELINE_SIZE: u32 = 0xA001;
pub const AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: u32 = 0xA002;
pub const AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: u32 = 0xA003;
pub const AMD_AGENT_INFO_DRIVER_NODE_ID: u32 = 0xA004;
pub const AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS: u32 = 0xA005;
pub const AMD_AGENT_INFO_BDFID: u32 = 0xA006;
pub const AMD_AGENT_INFO_MEMORY_WIDTH: u32 = 0xA007;
pub const AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: u32 = 0xA008;
pub const AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;
pub const AMD_AGENT_INFO_MAX_WAVES_PER_CU: u32 = 0xA00A;
pub const AMD_AGENT_INFO_NUM_SIMDS_PER_CU: u32 = 0xA00B;
pub const AMD_AGENT_INFO_NUM_SHADER_ENGINES: u32 = 0xA00C;
pub const AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE: u32 = 0xA00D;
pub const AMD_AGENT_INFO_HDP_FLUSH: u32 = 0xA00E;
pub const AMD_AGENT_INFO_DOMAIN: u32 = 0xA00F;
pub const AMD_AGENT_INFO_COOPERATIVE_QUEUES: u32 = 0xA010;
pub const AMD_AGENT_INFO_UUID: u32 = 0xA011;
pub const AMD_AGENT_INFO_ASIC_REVISION: u32 = 0xA012;
pub const AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS: u32 = 0xA013;
pub const AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT: u32 = 0xA014;
pub const AMD_AGENT_INFO_MEMORY_AVAIL: u32 = 0xA015;
pub const AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: u32 = 0xA016;
pub const AMD_AGENT_INFO_ASIC_FAMILY_ID: u32 = 0xA107;
pub const AMD_AGENT_INFO_UCODE_VERSION: u32 = 0xA108;
pub const AMD_AGENT_INFO_SDMA_UCODE_VERSION: u32 = 0xA109;
pub const AMD_AGENT_INFO_NUM_SDMA_ENG: u32 = 0xA10A;
pub const AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG: u32 = 0xA10B;
pub const AMD_AGENT_INFO_IOMMU_SUPPORT: u32 = 0xA110;
pub const AMD_AGENT_INFO_NUM_XCC: u32 = 0xA111;
pub const AMD_AGENT_INFO_DRIVER_UID: u32 = 0xA112;
pub const AMD_AGENT_INFO_NEAREST_CPU: u32 = 0xA113;
pub const AMD_AGENT_INFO_MEMORY_PROPERTIES: u32 = 0xA114;
pub const AMD_AGENT_INFO_AQL_EXTENSIONS: u32 = 0xA115;

/// Largest queue (packets).
pub const QUEUE_MAX_SIZE: u32 = 131_072;
/// Smallest queue (packets).
pub const QUEUE_MIN_SIZE: u32 = 64;

/// Typed writer for an attribute value.
struct Out(*mut c_void);

impl Out {
    fn put<T: Copy>(&self, value: T) -> Result<(), Status> {
        // SAFETY: the caller of the info query provides storage of the attribute's type.
        unsafe { crate::guard::write_out(self.0.cast::<T>(), value) }
    }
    /// A NUL-terminated string in a char[`N`] attribute.
    fn string<const N: usize>(&self, text: &str) -> Result<(), Status> {
        let mut buffer = [0u8; N];
        let bytes = text.as_bytes();
        let len = bytes.len().min(N - 1);
        buffer[..len].copy_from_slice(&bytes[..len]);
        self.put(buffer)
    }
}

fn system_info(attribute: u32, out: &Out) -> Result<(), Status> {
    match attribute {
        SYSTEM_INFO_VERSION_MAJOR => out.put(1u16),
        SYSTEM_INFO_VERSION_MINOR => out.put(1u16),
        SYSTEM_INFO_TIMESTAMP => out.put(monotonic_ns()),
        SYSTEM_INFO_TIMESTAMP_FREQUENCY => out.put(1_000_000_000u64),
        SYSTEM_INFO_SIGNAL_MAX_WAIT => out.put(u64::MAX),
        SYSTEM_INFO_ENDIANNESS => out.put(0u32),
        SYSTEM_INFO_MACHINE_MODEL => out.put(1u32),
        SYSTEM_INFO_EXTENSIONS => {
            // A bit per extension id (the AMD loader is id 0x201: byte 64, bit 1).
            let mut mask = [0u8; 128];
            if loader::offered() {
                let id = usize::from(loader::EXTENSION_AMD_LOADER);
                mask[id / 8] |= 1 << (id % 8);
            }
            out.put(mask)
        }
        AMD_SYSTEM_INFO_BUILD_VERSION => out.put(c"1.18.0-wslsim".as_ptr()),
        AMD_SYSTEM_INFO_SVM_SUPPORTED
        | AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT
        | AMD_SYSTEM_INFO_MWAITX_ENABLED
        | AMD_SYSTEM_INFO_DMABUF_SUPPORTED
        | AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED
        | AMD_SYSTEM_INFO_XNACK_ENABLED => out.put(false),
        AMD_SYSTEM_INFO_EXT_VERSION_MAJOR => out.put(1u16),
        AMD_SYSTEM_INFO_EXT_VERSION_MINOR => out.put(7u16),
        _ => Err(ERROR_INVALID_ARGUMENT),
    }
}

fn agent_info(rt: &Runtime, agent: &AgentInfo, attribute: u32, out: &Out) -> Result<(), Status> {
    let gpu = agent.kind == AgentKind::Gpu;
    let r = &agent.record;
    match attribute {
        AGENT_INFO_NAME => out.string::<64>(&agent.name),
        AGENT_INFO_VENDOR_NAME => out.string::<64>(if gpu { "AMD" } else { "CPU" }),
        AGENT_INFO_FEATURE => out.put(if gpu { 1u32 } else { 2u32 }),
        AGENT_INFO_MACHINE_MODEL => out.put(1u32),
        AGENT_INFO_PROFILE => out.put(0u32),
        AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => out.put(2u32),
        AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => out.put(3u32),
        AGENT_INFO_FAST_F16_OPERATION => out.put(gpu),
        AGENT_INFO_WAVEFRONT_SIZE => out.put(if gpu { r.wave_size } else { 0 }),
        AGENT_INFO_WORKGROUP_MAX_DIM => out.put(if gpu { [1024u16; 3] } else { [0u16; 3] }),
        AGENT_INFO_WORKGROUP_MAX_SIZE => out.put(if gpu { 1024u32 } else { 0 }),
        AGENT_INFO_GRID_MAX_DIM => out.put(if gpu { [u32::MAX; 3] } else { [0u32; 3] }),
        AGENT_INFO_GRID_MAX_SIZE => out.put(if gpu { u32::MAX } else { 0 }),
        AGENT_INFO_FBARRIER_MAX_SIZE => out.put(if gpu { 32u32 } else { 0 }),
        AGENT_INFO_QUEUES_MAX => out.put(if gpu { 128u32 } else { 0 }),
        AGENT_INFO_QUEUE_MIN_SIZE => out.put(if gpu { QUEUE_MIN_SIZE } else { 0 }),
        AGENT_INFO_QUEUE_MAX_SIZE => out.put(if gpu { QUEUE_MAX_SIZE } else { 0 }),
        AGENT_INFO_QUEUE_TYPE => out.put(0u32),
        AGENT_INFO_NODE => out.put(agent.node),
        AGENT_INFO_DEVICE => out.put(if gpu { 1u32 } else { 0u32 }),
        AGENT_INFO_CACHE_SIZE => out.put(if gpu {
            [16u32 << 10, 2 << 20, 0, 0]
        } else {
            [0u32; 4]
        }),
        AGENT_INFO_ISA => {
            if gpu {
                out.put(isa_handle(agent))
            } else {
                Err(ERROR_INVALID_AGENT)
            }
        }
        AGENT_INFO_EXTENSIONS => out.put([0u8; 128]),
        AGENT_INFO_VERSION_MAJOR => out.put(1u16),
        AGENT_INFO_VERSION_MINOR => out.put(1u16),
        AMD_AGENT_INFO_CHIP_ID => out.put(u32::from(r.device_id)),
        AMD_AGENT_INFO_CACHELINE_SIZE => out.put(if gpu { 128u32 } else { 64 }),
        AMD_AGENT_INFO_COMPUTE_UNIT_COUNT => out.put(agent.compute_units()),
        AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => out.put(r.max_clock_mhz),
        AMD_AGENT_INFO_DRIVER_NODE_ID => out.put(agent.node),
        AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS => out.put(if gpu { 4u32 } else { 0 }),
        AMD_AGENT_INFO_BDFID => out.put(r.location_id),
        AMD_AGENT_INFO_MEMORY_WIDTH | AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY => out.put(0u32),
        AMD_AGENT_INFO_PRODUCT_NAME => out.string::<64>(&r.marketing_name),
        AMD_AGENT_INFO_MAX_WAVES_PER_CU => out.put(r.max_waves_per_simd * r.simd_per_cu),
        AMD_AGENT_INFO_NUM_SIMDS_PER_CU => out.put(r.simd_per_cu),
        AMD_AGENT_INFO_NUM_SHADER_ENGINES => out.put(r.shader_engines),
        AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE => out.put(r.arrays_per_engine),
        AMD_AGENT_INFO_HDP_FLUSH => out.put([0u64; 2]),
        AMD_AGENT_INFO_DOMAIN => out.put(r.domain),
        AMD_AGENT_INFO_COOPERATIVE_QUEUES => out.put(false),
        AMD_AGENT_INFO_UUID => {
            let text = if gpu {
                format!("GPU-{:016x}", r.unique_id)
            } else {
                "CPU-XX".to_owned()
            };
            out.string::<21>(&text)
        }
        AMD_AGENT_INFO_ASIC_REVISION => out.put(0u32),
        AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS => out.put(true),
        AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT => out.put(agent.compute_units()),
        AMD_AGENT_INFO_MEMORY_AVAIL => {
            let total: u64 = agent
                .pools
                .iter()
                .filter_map(|&p| rt.pool(MemoryPool { handle: p }))
                .map(|p| p.size)
                .max()
                .unwrap_or(0);
            out.put(total)
        }
        AMD_AGENT_INFO_TIMESTAMP_FREQUENCY => out.put(agent.timestamp_hz),
        AMD_AGENT_INFO_ASIC_FAMILY_ID => out.put(r.family_id),
        AMD_AGENT_INFO_UCODE_VERSION => out.put(r.engine_id & 0x3FF),
        AMD_AGENT_INFO_SDMA_UCODE_VERSION => out.put(r.sdma_ucode),
        AMD_AGENT_INFO_NUM_SDMA_ENG => out.put(r.num_sdma_engines),
        AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG => out.put(r.num_sdma_xgmi_engines),
        AMD_AGENT_INFO_IOMMU_SUPPORT => out.put(0u32),
        AMD_AGENT_INFO_NUM_XCC => out.put(if gpu { r.num_xcc.max(1) } else { 0 }),
        AMD_AGENT_INFO_DRIVER_UID => out.put(r.kfd_gpu_id),
        AMD_AGENT_INFO_NEAREST_CPU => {
            let cpu = rt
                .agents
                .iter()
                .find(|a| a.kind == AgentKind::Cpu)
                .map(|a| a.handle())
                .unwrap_or_default();
            out.put(cpu)
        }
        AMD_AGENT_INFO_MEMORY_PROPERTIES => {
            let mut bits = [0u8; 8];
            if gpu && r.integrated {
                bits[0] = 1; // HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU
            }
            out.put(bits)
        }
        AMD_AGENT_INFO_AQL_EXTENSIONS => out.put([0u8; 8]),
        _ => Err(ERROR_INVALID_ARGUMENT),
    }
}

/// The ISA handle of a GPU agent: the address of its NUL-terminated ISA name.
pub fn isa_handle(agent: &AgentInfo) -> Isa {
    Isa {
        handle: agent.isa_name.as_ptr() as u64,
    }
}

fn isa_name(rt: &Runtime, isa: Isa) -> Option<&CStr> {
    rt.agents
        .iter()
        .filter(|a| a.kind == AgentKind::Gpu)
        .find(|a| isa_handle(a) == isa)
        .map(|a| a.isa_name.as_c_str())
}

/// `hsa_system_get_info`.
pub unsafe extern "C" fn hsa_system_get_info(attribute: u32, value: *mut c_void) -> Status {
    guard(|| {
        runtime::require()?;
        system_info(attribute, &Out(value))
    })
}

/// `hsa_iterate_agents`.
pub unsafe extern "C" fn hsa_iterate_agents(
    callback: Option<unsafe extern "C" fn(Agent, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        for agent in &rt.agents {
            // SAFETY: the application's callback with its own data.
            let status = unsafe { callback(agent.handle(), data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

/// `hsa_agent_get_info`.
pub unsafe extern "C" fn hsa_agent_get_info(
    agent: Agent,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        agent_info(&rt, info, attribute, &Out(value))
    })
}

/// `hsa_agent_get_exception_policies`.
pub unsafe extern "C" fn hsa_agent_get_exception_policies(
    agent: Agent,
    _profile: u32,
    mask: *mut u16,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(mask, 0u16) }
    })
}

/// Whether the system offers `extension` in version `major`: only the AMD loader extension
/// 1.x (unless the scenario withholds it).
fn system_offers(extension: u16, major: u16) -> bool {
    extension == loader::EXTENSION_AMD_LOADER && major == loader::LOADER_MAJOR && loader::offered()
}

/// `hsa_system_extension_supported`: the AMD loader extension up to 1.3.
pub unsafe extern "C" fn hsa_system_extension_supported(
    extension: u16,
    major: u16,
    minor: u16,
    result: *mut bool,
) -> Status {
    guard(|| {
        runtime::require()?;
        let offered = system_offers(extension, major) && minor <= loader::LOADER_MINOR;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(result, offered) }
    })
}

/// `hsa_system_major_extension_supported`: the AMD loader extension 1.3.
pub unsafe extern "C" fn hsa_system_major_extension_supported(
    extension: u16,
    major: u16,
    minor: *mut u16,
    result: *mut bool,
) -> Status {
    guard(|| {
        runtime::require()?;
        let offered = system_offers(extension, major);
        if offered {
            // SAFETY: checked for null by write_out; writable per the API.
            unsafe { crate::guard::write_out(minor, loader::LOADER_MINOR)? };
        }
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(result, offered) }
    })
}

/// `hsa_agent_extension_supported`: no extension is offered.
pub unsafe extern "C" fn hsa_agent_extension_supported(
    _extension: u16,
    agent: Agent,
    _major: u16,
    _minor: u16,
    result: *mut bool,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(result, false) }
    })
}

/// `hsa_agent_major_extension_supported`: no extension is offered.
pub unsafe extern "C" fn hsa_agent_major_extension_supported(
    _extension: u16,
    agent: Agent,
    _major: u16,
    _minor: *mut u16,
    result: *mut bool,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(result, false) }
    })
}

/// `hsa_agent_iterate_caches`: no caches are described.
pub unsafe extern "C" fn hsa_agent_iterate_caches(
    agent: Agent,
    _callback: Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>,
    _data: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        Ok(())
    })
}

/// `hsa_agent_iterate_isas`.
pub unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: Agent,
    callback: Option<unsafe extern "C" fn(Isa, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        let info = rt.agent(agent).ok_or(ERROR_INVALID_AGENT)?;
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        if info.kind == AgentKind::Gpu {
            // SAFETY: the application's callback with its own data.
            let status = unsafe { callback(isa_handle(info), data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

const ISA_INFO_NAME_LENGTH: u32 = 0;
const ISA_INFO_NAME: u32 = 1;

fn isa_info(isa: Isa, attribute: u32, value: *mut c_void) -> Result<(), Status> {
    let rt = runtime::require()?;
    let name = isa_name(&rt, isa).ok_or(ERROR_INVALID_ISA)?;
    let bytes = name.to_bytes_with_nul();
    match attribute {
        // ROCr counts the terminating NUL and writes it.
        ISA_INFO_NAME_LENGTH => Out(value).put(bytes.len() as u32),
        ISA_INFO_NAME => {
            if value.is_null() {
                return Err(ERROR_INVALID_ARGUMENT);
            }
            // SAFETY: the caller provides NAME_LENGTH bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast(), bytes.len()) };
            Ok(())
        }
        _ => Err(ERROR_INVALID_ARGUMENT),
    }
}

/// `hsa_isa_get_info_alt`.
pub unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: Isa,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| isa_info(isa, attribute, value))
}

/// `hsa_isa_get_info` (deprecated form with an index).
pub unsafe extern "C" fn hsa_isa_get_info(
    isa: Isa,
    attribute: u32,
    index: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        if index != 0 {
            return Err(ERROR_INVALID_INDEX);
        }
        isa_info(isa, attribute, value)
    })
}

/// `hsa_isa_from_name`.
pub unsafe extern "C" fn hsa_isa_from_name(name: *const c_char, isa: *mut Isa) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        if name.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: a NUL-terminated string per the API.
        let wanted = unsafe { CStr::from_ptr(name) };
        let agent = rt
            .agents
            .iter()
            .find(|a| a.kind == AgentKind::Gpu && a.isa_name.as_c_str() == wanted)
            .ok_or(ERROR_INVALID_ISA)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(isa, isa_handle(agent)) }
    })
}

/// The text `hsa_status_string` reports.
pub fn status_text(status: Status) -> Option<&'static CStr> {
    Some(match status {
        SUCCESS => c"HSA_STATUS_SUCCESS: The function has been executed successfully.",
        INFO_BREAK => c"HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application before completing.",
        ERROR => c"HSA_STATUS_ERROR: A generic error has occurred.",
        ERROR_INVALID_ARGUMENT => c"HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.",
        ERROR_INVALID_QUEUE_CREATION => c"HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue creation is not valid.",
        ERROR_INVALID_ALLOCATION => c"HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation is not valid.",
        ERROR_INVALID_AGENT => c"HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.",
        ERROR_INVALID_REGION => c"HSA_STATUS_ERROR_INVALID_REGION: The memory region is invalid.",
        ERROR_INVALID_SIGNAL => c"HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.",
        ERROR_INVALID_QUEUE => c"HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.",
        ERROR_OUT_OF_RESOURCES => c"HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.",
        ERROR_INVALID_PACKET_FORMAT => c"HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is malformed.",
        ERROR_RESOURCE_FREE => c"HSA_STATUS_ERROR_RESOURCE_FREE: An error has been detected while releasing a resource.",
        ERROR_NOT_INITIALIZED => c"HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.",
        ERROR_INVALID_CODE_OBJECT => c"HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.",
        ERROR_INVALID_EXECUTABLE => c"HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.",
        ERROR_FROZEN_EXECUTABLE => c"HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.",
        ERROR_INVALID_SYMBOL_NAME => c"HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with the given name.",
        ERROR_INVALID_EXECUTABLE_SYMBOL => c"HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.",
        ERROR_INVALID_FILE => c"HSA_STATUS_ERROR_INVALID_FILE: The file descriptor is invalid.",
        ERROR_INVALID_CODE_OBJECT_READER => c"HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid.",
        ERROR_INVALID_ISA => c"HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.",
        ERROR_INVALID_INDEX => c"HSA_STATUS_ERROR_INVALID_INDEX: The index is invalid.",
        _ => return None,
    })
}

/// `hsa_status_string`.
pub unsafe extern "C" fn hsa_status_string(status: Status, string: *mut *const c_char) -> Status {
    guard(|| {
        let text = status_text(status).ok_or(ERROR_INVALID_ARGUMENT)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { crate::guard::write_out(string, text.as_ptr()) }
    })
}
