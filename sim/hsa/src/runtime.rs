//! `hsa_init` / `hsa_shut_down`: DXG detection, the thunk, the topology read, agents, memory
//! pools, the clock and tool registration.

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use wslsim_scenario::Generation;

use crate::clock::Calibration;
use crate::guard::{guard_status, monotonic_ns, say_once};
use crate::signal::SignalObj;
use crate::topology::{self, NodeRecord};
use crate::types::*;

/// The ROCr version this runtime claims (1.18.0, as in ROCm 7.2).
pub const RUNTIME_VERSION: (u32, u32, u32) = (1, 18, 0);
/// `10000 * major + 100 * minor + patch`.
pub const RUNTIME_VERSION_CODE: u32 =
    RUNTIME_VERSION.0 * 10000 + RUNTIME_VERSION.1 * 100 + RUNTIME_VERSION.2;

const LOG: &str = "hsa";

/// Extra bytes after the runtime's own `HsaNodeProperties` layout when reading a node, so a
/// thunk that writes a longer record overruns slack rather than other memory.
pub const NODE_SLACK: usize = 128;

type OpenKfdFn = unsafe extern "C" fn() -> i32;
type AcquireFn = unsafe extern "C" fn(*mut HsaSystemProperties) -> i32;
type GetNodeFn = unsafe extern "C" fn(u32, *mut c_void) -> i32;
type WallclockFn = unsafe extern "C" fn(u32, *mut u64) -> i32;
type ClockCountersFn = unsafe extern "C" fn(u32, *mut HsaClockCounters) -> i32;
type AbiCheckFn = unsafe extern "C" fn(*mut HsaStructureSizes) -> i32;
type GpuDispatchFn = unsafe extern "C" fn(u32, *const WslsimDispatch, *mut WslsimTiming) -> i32;
type GpuDispatchScaledFn =
    unsafe extern "C" fn(u32, *const WslsimDispatch, f64, *mut WslsimTiming) -> i32;
type GpuCopyFn =
    unsafe extern "C" fn(u32, *mut c_void, *const c_void, u64, *mut WslsimTiming) -> i32;
type GpuPm4Fn = unsafe extern "C" fn(u32, *const u32, u32, *mut c_char, u32) -> i32;
type GpuTicksFn = unsafe extern "C" fn(u32) -> u64;

/// The entry points of the loaded thunk (`librocdxg.so`).
pub struct Thunk {
    /// Path of the loaded object.
    pub path: String,
    pub open_kfd: OpenKfdFn,
    pub close_kfd: OpenKfdFn,
    pub acquire: AcquireFn,
    pub get_node: GetNodeFn,
    pub release: OpenKfdFn,
    pub wallclock: Option<WallclockFn>,
    pub clock_counters: Option<ClockCountersFn>,
    pub abi_check: Option<AbiCheckFn>,
    pub gpu_dispatch: Option<GpuDispatchFn>,
    /// `wslsim_gpu_dispatch_scaled`: a dispatch whose kernel `[kernel_duration]` scales.
    pub gpu_dispatch_scaled: Option<GpuDispatchScaledFn>,
    pub gpu_copy: Option<GpuCopyFn>,
    pub gpu_pm4: Option<GpuPm4Fn>,
    pub gpu_ticks: Option<GpuTicksFn>,
}

fn missing_gpu_export(name: &str) {
    say_once(format!(
        "libhsa-runtime64 (sim): librocdxg.so does not export {name}; \
         running without the GPU model"
    ));
}

impl Thunk {
    /// The node's GPU clock in ticks (100 MHz). Without `wslsim_gpu_ticks`, the documented
    /// clock rule is applied here: `(m + [gpu] clock_offset_ns − 2.2 ppm × m) / 10`, m being
    /// `CLOCK_MONOTONIC`.
    pub fn ticks(&self, node: u32) -> u64 {
        match self.gpu_ticks {
            // SAFETY: the export of the loaded thunk with its documented signature.
            Some(ticks) => unsafe { ticks(node) },
            None => fallback_ticks(),
        }
    }

    /// One (GPU ticks, system ns) sample.
    pub fn clock_sample(&self, node: u32) -> (u64, u64) {
        if let Some(counters) = self.clock_counters {
            let mut out = HsaClockCounters::default();
            // SAFETY: documented export; `out` is a valid HsaClockCounters.
            if unsafe { counters(node, &mut out) } == 0 {
                return (out.gpu_clock_counter, out.system_clock_counter);
            }
        }
        let gpu = self.ticks(node);
        (gpu, monotonic_ns())
    }

    /// Runs one kernel dispatch on the node ("the command processor"), its modelled duration
    /// scaled by `factor` (the scenario's `[kernel_duration]`; 1 for most kernels).
    pub fn dispatch(
        &self,
        node: u32,
        dispatch: &WslsimDispatch,
        factor: f64,
    ) -> Result<WslsimTiming, i32> {
        if let (Some(scaled), true) = (self.gpu_dispatch_scaled, factor != 1.0) {
            let mut timing = WslsimTiming::default();
            // SAFETY: documented export; both pointers are valid for the call.
            let status = unsafe { scaled(node, dispatch, factor, &mut timing) };
            return if status == 0 { Ok(timing) } else { Err(status) };
        }
        if let Some(gpu_dispatch) = self.gpu_dispatch {
            let mut timing = WslsimTiming::default();
            // SAFETY: documented export; both pointers are valid for the call.
            let status = unsafe { gpu_dispatch(node, dispatch, &mut timing) };
            return if status == 0 { Ok(timing) } else { Err(status) };
        }
        missing_gpu_export("wslsim_gpu_dispatch");
        let start = self.ticks(node);
        if let Some(run) = dispatch.run {
            // SAFETY: `run`/`ctx` form the runtime's own trampoline and context.
            unsafe { run(dispatch.ctx) };
        }
        let end = self.ticks(node).max(start + 1);
        Ok(WslsimTiming {
            start_tick: start,
            end_tick: end,
        })
    }

    /// One SDMA copy.
    ///
    /// # Safety
    ///
    /// `dst` and `src` must be valid for `bytes` bytes.
    pub unsafe fn copy(
        &self,
        node: u32,
        dst: *mut c_void,
        src: *const c_void,
        bytes: u64,
    ) -> Result<WslsimTiming, i32> {
        if let Some(gpu_copy) = self.gpu_copy {
            let mut timing = WslsimTiming::default();
            // SAFETY: documented export; the caller guarantees the buffers.
            let status = unsafe { gpu_copy(node, dst, src, bytes, &mut timing) };
            return if status == 0 { Ok(timing) } else { Err(status) };
        }
        missing_gpu_export("wslsim_gpu_copy");
        let start = self.ticks(node);
        // SAFETY: the caller guarantees both buffers; memmove semantics tolerate overlap.
        unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), bytes as usize) };
        let end = self.ticks(node).max(start + 1);
        Ok(WslsimTiming {
            start_tick: start,
            end_tick: end,
        })
    }

    /// Executes a PM4 indirect buffer; `Err((status, reason))` if the GPU refused it.
    ///
    /// # Safety
    ///
    /// `ib` must be valid for reading `dwords` dwords.
    pub unsafe fn pm4(&self, node: u32, ib: *const u32, dwords: u32) -> Result<(), (i32, String)> {
        let Some(gpu_pm4) = self.gpu_pm4 else {
            missing_gpu_export("wslsim_gpu_pm4");
            return Ok(());
        };
        let mut reason = [0u8; 256];
        // SAFETY: documented export; `reason` is writable for its length.
        let status = unsafe {
            gpu_pm4(
                node,
                ib,
                dwords,
                reason.as_mut_ptr().cast(),
                reason.len() as u32,
            )
        };
        if status == 0 {
            return Ok(());
        }
        let end = reason.iter().position(|&b| b == 0).unwrap_or(reason.len());
        Err((status, String::from_utf8_lossy(&reason[..end]).into_owned()))
    }
}

/// The documented GPU clock, computed locally (used only without `wslsim_gpu_ticks`).
pub fn fallback_ticks() -> u64 {
    let m = monotonic_ns();
    let drift = (i128::from(m) * -2_200).div_euclid(1_000_000_000);
    let ns = i128::from(m) + i128::from(wslsim_scenario::current().gpu.clock_offset_ns) + drift;
    (ns.max(0) / 10) as u64
}

/// CPU or GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    Cpu,
    Gpu,
}

/// One HSA agent.
pub struct AgentInfo {
    pub node: u32,
    pub kind: AgentKind,
    pub record: NodeRecord,
    /// `HSA_AGENT_INFO_NAME`: "gfx1150" for a GPU, the marketing name for the CPU.
    pub name: String,
    /// The ISA name, e.g. "amdgcn-amd-amdhsa--gfx1150".
    pub isa_name: CString,
    /// The agent's timestamp frequency in Hz.
    pub timestamp_hz: u64,
    /// Memory pools owned by this agent.
    pub pools: Vec<u64>,
    /// Calibrations of the agent's clock against the system domain (GPU agents).
    pub clock: Mutex<Calibration>,
    /// The id of the agent's utility queue, once created (ROCr's `QueueUtility`; see
    /// [`crate::queue::create`]).
    pub utility_queue: std::sync::OnceLock<u64>,
}

impl AgentInfo {
    /// The `hsa_agent_t` handle (the record's address).
    pub fn handle(&self) -> Agent {
        Agent {
            handle: self as *const AgentInfo as u64,
        }
    }
    /// Compute units.
    pub fn compute_units(&self) -> u32 {
        match self.kind {
            AgentKind::Cpu => self.record.num_cpu_cores,
            AgentKind::Gpu => self.record.simd_count / self.record.simd_per_cu.max(1),
        }
    }
}

/// Where a pool lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// System memory, fine-grained, usable for kernel arguments.
    SystemFine,
    /// System memory, coarse-grained.
    SystemCoarse,
    /// The GPU's device-local memory ("VRAM").
    DeviceLocal,
}

/// One memory pool (also reported as an HSA region).
pub struct PoolInfo {
    pub kind: PoolKind,
    pub size: u64,
}

impl PoolInfo {
    /// The `hsa_amd_memory_pool_t` / `hsa_region_t` handle (the record's address).
    pub fn handle(&self) -> MemoryPool {
        MemoryPool {
            handle: self as *const PoolInfo as u64,
        }
    }
}

/// The initialised runtime.
pub struct Runtime {
    pub thunk: Thunk,
    pub agents: Vec<Box<AgentInfo>>,
    pub pools: Vec<Box<PoolInfo>>,
}

impl Runtime {
    /// The agent with this handle.
    pub fn agent(&self, agent: Agent) -> Option<&AgentInfo> {
        self.agents
            .iter()
            .map(|a| &**a)
            .find(|a| a.handle() == agent)
    }
    /// The GPU agent with this handle.
    pub fn gpu(&self, agent: Agent) -> Option<&AgentInfo> {
        self.agent(agent).filter(|a| a.kind == AgentKind::Gpu)
    }
    /// The first GPU agent.
    pub fn first_gpu(&self) -> Option<&AgentInfo> {
        self.agents
            .iter()
            .map(|a| &**a)
            .find(|a| a.kind == AgentKind::Gpu)
    }
    /// The pool with this handle.
    pub fn pool(&self, pool: MemoryPool) -> Option<&PoolInfo> {
        self.pools.iter().map(|p| &**p).find(|p| p.handle() == pool)
    }

    /// A signal's profiling timestamps (GPU ticks of `agent`) in system nanoseconds. End first,
    /// as ROCr: the refreshed sample then covers both.
    pub fn profiling_time(&self, agent: &AgentInfo, signal: &SignalObj) -> ProfilingTime {
        let end = self.ticks_to_ns(agent, signal.amd.end_ts.load(Ordering::Acquire));
        let start = self.ticks_to_ns(agent, signal.amd.start_ts.load(Ordering::Acquire));
        ProfilingTime { start, end }
    }

    /// Converts a GPU tick of `agent` to system nanoseconds (see [`crate::clock`]: the latest
    /// calibration at or before it, recalibrated at 16 Hz).
    pub fn ticks_to_ns(&self, agent: &AgentInfo, tick: u64) -> u64 {
        let mut calibration = agent.clock.lock().unwrap_or_else(|e| e.into_inner());
        calibration.convert(tick, &mut || self.thunk.clock_sample(agent.node))
    }
}

static STATE: RwLock<Option<Arc<Runtime>>> = RwLock::new(None);
static INIT_LOCK: Mutex<()> = Mutex::new(());
static REFCOUNT: AtomicU32 = AtomicU32::new(0);
/// Thread id (gettid) of the thread inside `hsa_init`, 0 if none: a tool that calls
/// `hsa_init` from its registration callback on that thread must not deadlock.
static INIT_OWNER: AtomicI32 = AtomicI32::new(0);

/// The runtime, if initialised.
pub fn current() -> Option<Arc<Runtime>> {
    STATE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The runtime or `HSA_STATUS_ERROR_NOT_INITIALIZED`.
pub fn require() -> Result<Arc<Runtime>, Status> {
    current().ok_or(ERROR_NOT_INITIALIZED)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether DXG detection is on for this runtime generation and `HSA_ENABLE_DXG_DETECTION`.
pub fn dxg_detection_enabled(generation: Generation, value: Option<&str>) -> bool {
    match generation {
        Generation::Stock72 => value == Some("1"),
        Generation::Current => value != Some("0"),
    }
}

/// Whether `HSA_TOOLS_DISABLE_REGISTER` disables registration (exactly "1").
pub fn register_disabled(value: Option<&str>) -> bool {
    value == Some("1")
}

/// The DXG device node: `<dir of this library>/../dev/dxg` if it exists, else `/dev/dxg`.
pub fn dxg_device_path() -> String {
    let anchor = dxg_device_path as *const c_void;
    if let Some(path) = wslsim_scenario::object_path(anchor) {
        let lib = std::path::Path::new(&path);
        if let Some(dir) = lib.parent() {
            let candidate = dir.join("..").join("dev").join("dxg");
            if candidate.exists() {
                return candidate.display().to_string();
            }
        }
    }
    "/dev/dxg".to_owned()
}

fn dlerror_string() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call.
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

fn symbol(handle: *mut c_void, name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a live dlopen handle and a NUL-terminated name.
    let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

macro_rules! as_fn {
    ($address:expr, $ty:ty) => {
        // SAFETY: the thunk's export has this C signature (its documented ABI).
        unsafe { std::mem::transmute::<*mut c_void, $ty>($address) }
    };
}

macro_rules! resolve {
    ($handle:expr, $name:literal, $ty:ty) => {
        // SAFETY: the thunk's export of this name has this C signature (its documented ABI).
        symbol($handle, $name).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
    };
}

fn load_thunk() -> Result<Thunk, String> {
    // SAFETY: dlopen of the unversioned thunk name; its constructors are simulator code.
    let handle = unsafe { libc::dlopen(c"librocdxg.so".as_ptr(), libc::RTLD_NOW) };
    if handle.is_null() {
        let error = dlerror_string();
        eprintln!("Cannot load librocdxg.so, failed:{error}");
        return Err(format!("cannot load librocdxg.so: {error}"));
    }
    let required = |name: &'static CStr| {
        symbol(handle, name).ok_or_else(|| {
            let text = name.to_string_lossy();
            eprintln!("libhsa-runtime64 (sim): librocdxg.so does not export {text}");
            format!("missing {text}")
        })
    };
    let open = required(c"hsaKmtOpenKFD")?;
    let close = required(c"hsaKmtCloseKFD")?;
    let acquire = required(c"hsaKmtAcquireSystemProperties")?;
    let get_node = required(c"hsaKmtGetNodeProperties")?;
    let release = required(c"hsaKmtReleaseSystemProperties")?;
    let path = wslsim_scenario::object_path(open).unwrap_or_else(|| "librocdxg.so".to_owned());
    Ok(Thunk {
        path,
        open_kfd: as_fn!(open, OpenKfdFn),
        close_kfd: as_fn!(close, OpenKfdFn),
        acquire: as_fn!(acquire, AcquireFn),
        get_node: as_fn!(get_node, GetNodeFn),
        release: as_fn!(release, OpenKfdFn),
        wallclock: resolve!(handle, c"hsaKmtGetNodeWallclockFrequency", WallclockFn),
        clock_counters: resolve!(handle, c"hsaKmtGetClockCounters", ClockCountersFn),
        abi_check: resolve!(handle, c"DxgAbiCheck", AbiCheckFn),
        gpu_dispatch: resolve!(handle, c"wslsim_gpu_dispatch", GpuDispatchFn),
        gpu_dispatch_scaled: resolve!(handle, c"wslsim_gpu_dispatch_scaled", GpuDispatchScaledFn),
        gpu_copy: resolve!(handle, c"wslsim_gpu_copy", GpuCopyFn),
        gpu_pm4: resolve!(handle, c"wslsim_gpu_pm4", GpuPm4Fn),
        gpu_ticks: resolve!(handle, c"wslsim_gpu_ticks", GpuTicksFn),
    })
}

/// What an `hsa_init` attempt did, for the call-log line.
struct Outcome {
    dxg: bool,
    thunk: String,
    agents: usize,
    register: String,
}

fn read_topology(thunk: Thunk, layout: u32, generation: Generation) -> Result<Runtime, Status> {
    if let Some(check) = thunk.abi_check {
        let mut sizes = HsaStructureSizes {
            structure_sizes: 16,
            size_of_hsa_node_properties: u16::try_from(layout).unwrap_or(u16::MAX),
            ..HsaStructureSizes::default()
        };
        // SAFETY: documented export; `sizes` is a valid HsaStructureSizes.
        let status = unsafe { check(&mut sizes) };
        if status != 0 {
            wslsim_scenario::log_call(LOG, format_args!("DxgAbiCheck failed! status={status}"));
            return Err(ERROR_OUT_OF_RESOURCES);
        }
    }
    // SAFETY: documented export, no arguments.
    let open = unsafe { (thunk.open_kfd)() };
    if open != 0 && open != 22 {
        return Err(ERROR_OUT_OF_RESOURCES);
    }
    let mut system = HsaSystemProperties::default();
    // SAFETY: documented export; `system` is a valid HsaSystemProperties.
    if unsafe { (thunk.acquire)(&mut system) } != 0 {
        // SAFETY: documented export; balances the open above.
        unsafe { (thunk.close_kfd)() };
        return Err(ERROR_OUT_OF_RESOURCES);
    }
    let mut records = Vec::new();
    // The stock 7.2.x generation reads into heap storage of exactly its own record size
    // (`stock_read`); current builds into their layout plus slack.
    let stock = match generation {
        Generation::Stock72 => {
            crate::stock_read::read_nodes(thunk.get_node, layout as usize, system.num_nodes)
        }
        Generation::Current => None,
    };
    if let Some(read) = stock {
        for (node, (status, bytes)) in (0..system.num_nodes).zip(read) {
            if status == 0 {
                records.push((node, topology::parse(&bytes, layout)));
            }
        }
    } else {
        let words = (layout as usize + NODE_SLACK).div_ceil(4);
        for node in 0..system.num_nodes {
            let mut storage = vec![0u32; words];
            // SAFETY: documented export; `storage` holds the runtime's layout plus slack.
            let status = unsafe { (thunk.get_node)(node, storage.as_mut_ptr().cast()) };
            if status != 0 {
                continue;
            }
            let bytes: Vec<u8> = storage.iter().flat_map(|w| w.to_le_bytes()).collect();
            records.push((node, topology::parse(&bytes[..layout as usize], layout)));
        }
    }
    // SAFETY: documented export, no arguments. The KFD stays open until hsa_shut_down.
    unsafe { (thunk.release)() };

    let mut agents: Vec<Box<AgentInfo>> = Vec::new();
    let mut pools: Vec<Box<PoolInfo>> = Vec::new();
    for (node, record) in records {
        let is_gpu = record.simd_count != 0;
        if !is_gpu && node != 0 {
            continue;
        }
        let timestamp_hz = if !is_gpu {
            1_000_000_000
        } else if record.wallclock_khz != 0 {
            record.wallclock_khz * 1000
        } else {
            let mut hz = 0u64;
            let status = match thunk.wallclock {
                // SAFETY: documented export; `hz` is writable.
                Some(wallclock) => unsafe { wallclock(node, &mut hz) },
                None => 1,
            };
            if status != 0 || hz == 0 {
                eprintln!("Agent creation failed.\nGetWallclockFrequency error.");
                continue;
            }
            hz
        };
        let name = if is_gpu {
            record.gfx_name()
        } else {
            record.marketing_name.clone()
        };
        let isa_name = CString::new(if is_gpu {
            format!("amdgcn-amd-amdhsa--{name}")
        } else {
            String::new()
        })
        .unwrap_or_default();
        let mut sample = || {
            if is_gpu {
                thunk.clock_sample(node)
            } else {
                (0, 0)
            }
        };
        let calibration = Calibration::new(timestamp_hz, &mut sample);
        agents.push(Box::new(AgentInfo {
            node,
            kind: if is_gpu {
                AgentKind::Gpu
            } else {
                AgentKind::Cpu
            },
            record,
            name,
            isa_name,
            timestamp_hz,
            pools: Vec::new(),
            clock: Mutex::new(calibration),
            utility_queue: std::sync::OnceLock::new(),
        }));
    }
    let system_memory = {
        // SAFETY: sysconf has no preconditions.
        let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) }.max(0) as u64;
        // SAFETY: as above.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
        pages * page
    };
    for agent in &mut agents {
        let kinds: &[(PoolKind, u64)] = match agent.kind {
            AgentKind::Cpu => &[
                (PoolKind::SystemFine, system_memory),
                (PoolKind::SystemCoarse, system_memory),
            ],
            AgentKind::Gpu => &[(PoolKind::DeviceLocal, vram_size(&agent.record))],
        };
        for &(kind, size) in kinds {
            let pool = Box::new(PoolInfo { kind, size });
            agent.pools.push(pool.handle().handle);
            pools.push(pool);
        }
    }
    Ok(Runtime {
        thunk,
        agents,
        pools,
    })
}

/// The GPU's dedicated memory: the scenario adapter with the node's LUID, else 512 MiB.
fn vram_size(record: &NodeRecord) -> u64 {
    let scenario = wslsim_scenario::current();
    scenario
        .adapters
        .iter()
        .find(|adapter| {
            record.luid != (0, 0)
                && adapter.luid.low == record.luid.0
                && adapter.luid.high == record.luid.1
        })
        .map(|adapter| adapter.dedicated_video_memory)
        .filter(|&size| size != 0)
        .unwrap_or(512 << 20)
}

type RegisterFn = unsafe extern "C" fn(
    *const c_char,
    unsafe extern "C" fn() -> u32,
    u32,
    *mut *mut c_void,
    u64,
    *mut u64,
) -> i32;

/// `rocprofiler_register_library_api_table("hsa", ...)`; `None` when skipped.
fn register_tools() -> Option<i32> {
    if register_disabled(env("HSA_TOOLS_DISABLE_REGISTER").as_deref()) {
        return None;
    }
    if !wslsim_scenario::current().runtime.register_on_dxg {
        return None;
    }
    // SAFETY: dlopen of rocprofiler-register by soname; its constructors are its own.
    let handle = unsafe {
        libc::dlopen(
            c"librocprofiler-register.so.0".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_GLOBAL,
        )
    };
    if handle.is_null() {
        return None;
    }
    let register = symbol(handle, c"rocprofiler_register_library_api_table")?;
    // SAFETY: the documented signature of rocprofiler_register_library_api_table.
    let register = unsafe { std::mem::transmute::<*mut c_void, RegisterFn>(register) };
    let mut tables: [*mut c_void; 1] =
        [(&raw const crate::tables::HSA_API_TABLE).cast_mut().cast()];
    let mut id = 0u64;
    // SAFETY: valid name, import function, table array of length 1 and identifier.
    let code = unsafe {
        register(
            c"hsa".as_ptr(),
            crate::rocprofiler_register_import_hsa,
            RUNTIME_VERSION_CODE,
            tables.as_mut_ptr(),
            1,
            &mut id,
        )
    };
    if code != 0 && env("HSA_TOOLS_REPORT_REGISTER_FAILURE").as_deref() == Some("1") {
        eprintln!("rocprofiler-register returned non-zero error code {code}");
    }
    Some(code)
}

fn log_init(outcome: &Outcome, status: Status) {
    wslsim_scenario::log_call(
        LOG,
        format_args!(
            "hsa_init dxg={} thunk={} agents={} register={} -> {status}",
            if outcome.dxg { "on" } else { "off" },
            outcome.thunk,
            outcome.agents,
            outcome.register
        ),
    );
}

fn init() -> Status {
    if INIT_OWNER.load(Ordering::Acquire) == gettid() {
        // A tool calling hsa_init from inside our registration: already published.
        REFCOUNT.fetch_add(1, Ordering::AcqRel);
        return SUCCESS;
    }
    let _lock = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if REFCOUNT.load(Ordering::Acquire) > 0 {
        REFCOUNT.fetch_add(1, Ordering::AcqRel);
        return SUCCESS;
    }
    let scenario = wslsim_scenario::current();
    let mut outcome = Outcome {
        dxg: false,
        thunk: "none".to_owned(),
        agents: 0,
        register: "skipped".to_owned(),
    };
    let detection = env("HSA_ENABLE_DXG_DETECTION");
    let dxg = dxg_detection_enabled(scenario.runtime.generation, detection.as_deref())
        && std::fs::File::open(dxg_device_path()).is_ok();
    if !dxg {
        // No DXG and no KFD: no agents.
        log_init(&outcome, ERROR_OUT_OF_RESOURCES);
        return ERROR_OUT_OF_RESOURCES;
    }
    outcome.dxg = true;
    let thunk = match load_thunk() {
        Ok(thunk) => thunk,
        Err(_) => {
            log_init(&outcome, ERROR_OUT_OF_RESOURCES);
            return ERROR_OUT_OF_RESOURCES;
        }
    };
    outcome.thunk = thunk.path.clone();
    let runtime = match read_topology(thunk, scenario.runtime.layout, scenario.runtime.generation) {
        Ok(runtime) => runtime,
        Err(status) => {
            log_init(&outcome, status);
            return status;
        }
    };
    outcome.agents = runtime.agents.len();
    *STATE.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(runtime));
    REFCOUNT.store(1, Ordering::Release);
    INIT_OWNER.store(gettid(), Ordering::Release);
    let registered = register_tools();
    INIT_OWNER.store(0, Ordering::Release);
    if let Some(code) = registered {
        outcome.register = code.to_string();
    }
    log_init(&outcome, SUCCESS);
    SUCCESS
}

fn shut_down() -> Status {
    if INIT_OWNER.load(Ordering::Acquire) == gettid() {
        return match REFCOUNT.load(Ordering::Acquire) {
            0 | 1 => ERROR_NOT_INITIALIZED,
            _ => {
                REFCOUNT.fetch_sub(1, Ordering::AcqRel);
                SUCCESS
            }
        };
    }
    let _lock = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    match REFCOUNT.load(Ordering::Acquire) {
        0 => ERROR_NOT_INITIALIZED,
        1 => {
            REFCOUNT.store(0, Ordering::Release);
            crate::queue::destroy_all();
            let runtime = STATE.write().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(runtime) = runtime {
                // SAFETY: documented export; balances the open of hsa_init.
                let status = unsafe { (runtime.thunk.close_kfd)() };
                wslsim_scenario::log_call(LOG, format_args!("hsa_shut_down close={status} -> 0"));
            }
            SUCCESS
        }
        _ => {
            REFCOUNT.fetch_sub(1, Ordering::AcqRel);
            SUCCESS
        }
    }
}

/// `hsa_init`.
pub unsafe extern "C" fn hsa_init() -> Status {
    guard_status(init)
}

/// `hsa_shut_down`.
pub unsafe extern "C" fn hsa_shut_down() -> Status {
    guard_status(shut_down)
}
