//! The HSA runtime, loaded with `dlopen` as an application loads it, behind a small safe
//! interface: the only `unsafe` code of the self-test.
//!
//! Every entry point the test calls is resolved before any is called (a runtime lacking one is
//! named, with every other missing one). Handles (`hsa_agent_t`, `hsa_signal_t`,
//! `hsa_amd_memory_pool_t`) are one-`u64` structs passed by value, which the x86-64 System V
//! ABI passes exactly like a `u64`.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// `hsa_status_t`.
pub type Status = u32;
/// `HSA_STATUS_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `HSA_STATUS_INFO_BREAK`: stops an iteration.
const INFO_BREAK: Status = 1;

const AGENT_INFO_NAME: u32 = 0;
const AGENT_INFO_DEVICE: u32 = 17;
const AMD_AGENT_INFO_DRIVER_NODE_ID: u32 = 0xA004;
const AMD_SYSTEM_INFO_BUILD_VERSION: u32 = 0x200;
const POOL_INFO_GLOBAL_FLAGS: u32 = 1;
const POOL_FLAG_KERNARG_INIT: u32 = 1;
const DEVICE_CPU: u32 = 0;
const DEVICE_GPU: u32 = 1;
const CONDITION_LT: u32 = 2;
const WAIT_STATE_BLOCKED: u32 = 0;
const QUEUE_TYPE_MULTI: u32 = 0;
/// `UINT32_MAX`: the runtime's default segment sizes for a queue.
const SEGMENT_DEFAULT: u32 = u32::MAX;

type Callback = unsafe extern "C" fn(u64, *mut c_void) -> Status;
type QueueErrorCallback = unsafe extern "C" fn(Status, *mut c_void, *mut c_void);

type NoArgs = unsafe extern "C" fn() -> Status;
type StatusString = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
type GetInfo = unsafe extern "C" fn(u32, *mut c_void) -> Status;
type Iterate = unsafe extern "C" fn(Callback, *mut c_void) -> Status;
type HandleInfo = unsafe extern "C" fn(u64, u32, *mut c_void) -> Status;
type QueueCreate = unsafe extern "C" fn(
    u64,
    u32,
    u32,
    Option<QueueErrorCallback>,
    *mut c_void,
    u32,
    u32,
    *mut *mut c_void,
) -> Status;
type PointerFn = unsafe extern "C" fn(*mut c_void) -> Status;
type AddIndex = unsafe extern "C" fn(*const c_void, u64) -> u64;
type LoadIndex = unsafe extern "C" fn(*const c_void) -> u64;
type SignalCreate = unsafe extern "C" fn(i64, u32, *const u64, *mut u64) -> Status;
type HandleFn = unsafe extern "C" fn(u64) -> Status;
type SignalStore = unsafe extern "C" fn(u64, i64);
type SignalWait = unsafe extern "C" fn(u64, u32, i64, u64, u32) -> i64;
type IteratePools = unsafe extern "C" fn(u64, Callback, *mut c_void) -> Status;
type PoolAllocate = unsafe extern "C" fn(u64, usize, u32, *mut *mut c_void) -> Status;
type AllowAccess = unsafe extern "C" fn(u32, *const u64, *const u32, *const c_void) -> Status;

/// The entry points the self-test calls.
struct Fns {
    init: NoArgs,
    shut_down: NoArgs,
    status_string: StatusString,
    system_get_info: GetInfo,
    iterate_agents: Iterate,
    agent_get_info: HandleInfo,
    queue_create: QueueCreate,
    queue_destroy: PointerFn,
    add_write_index: AddIndex,
    load_read_index: LoadIndex,
    signal_create: SignalCreate,
    signal_destroy: HandleFn,
    signal_store: SignalStore,
    signal_wait: SignalWait,
    iterate_pools: IteratePools,
    pool_get_info: HandleInfo,
    pool_allocate: PoolAllocate,
    pool_free: PointerFn,
    allow_access: AllowAccess,
}

/// The loaded runtime. It is never unloaded (the process ends after the test).
pub struct Runtime {
    fns: Fns,
    path: Option<String>,
}

/// One agent of the runtime.
#[derive(Debug, Clone)]
pub struct AgentInfo {
    /// `hsa_agent_t`.
    pub handle: u64,
    /// `HSA_AGENT_INFO_NAME`.
    pub name: String,
    /// Whether it is a GPU (`HSA_DEVICE_TYPE_GPU`).
    pub gpu: bool,
    /// Whether it is a CPU.
    pub cpu: bool,
    /// `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`, when the runtime answers.
    pub node_id: Option<u32>,
}

/// `dlerror()`'s text.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call on
    // this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown loader error".into()
    } else {
        // SAFETY: see above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Runtime {
    /// `dlopen(name, RTLD_NOW | RTLD_GLOBAL)` (as an application's link-time dependency is
    /// loaded) and every entry point resolved.
    pub fn open(name: &str) -> Result<Runtime, String> {
        let c_name = CString::new(name).map_err(|_| format!("{name:?} contains a NUL byte"))?;
        // SAFETY: a NUL-terminated name; loading runs the runtime's initialisers, which is
        // what the test is for (the file found is trusted to be an HSA runtime, as an
        // application trusts it).
        let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            return Err(format!("dlopen({name}) failed: {}", dl_error()));
        }
        let mut missing = Vec::new();
        let mut lookup = |symbol: &CStr| -> *mut c_void {
            // SAFETY: a valid handle (never closed) and a NUL-terminated name.
            let p = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
            if p.is_null() {
                missing.push(symbol.to_string_lossy().into_owned());
            }
            p
        };
        let raw = [
            lookup(c"hsa_init"),
            lookup(c"hsa_shut_down"),
            lookup(c"hsa_status_string"),
            lookup(c"hsa_system_get_info"),
            lookup(c"hsa_iterate_agents"),
            lookup(c"hsa_agent_get_info"),
            lookup(c"hsa_queue_create"),
            lookup(c"hsa_queue_destroy"),
            lookup(c"hsa_queue_add_write_index_scacq_screl"),
            lookup(c"hsa_queue_load_read_index_scacquire"),
            lookup(c"hsa_signal_create"),
            lookup(c"hsa_signal_destroy"),
            lookup(c"hsa_signal_store_screlease"),
            lookup(c"hsa_signal_wait_scacquire"),
            lookup(c"hsa_amd_agent_iterate_memory_pools"),
            lookup(c"hsa_amd_memory_pool_get_info"),
            lookup(c"hsa_amd_memory_pool_allocate"),
            lookup(c"hsa_amd_memory_pool_free"),
            lookup(c"hsa_amd_agents_allow_access"),
        ];
        if !missing.is_empty() {
            return Err(format!("{name} does not export {}", missing.join(", ")));
        }
        // SAFETY: every pointer is non-null and was returned for the HSA entry point whose C
        // signature the target type spells (hsa.h / hsa_ext_amd.h); the library stays loaded.
        let fns = unsafe {
            use std::mem::transmute as t;
            Fns {
                init: t::<*mut c_void, NoArgs>(raw[0]),
                shut_down: t::<*mut c_void, NoArgs>(raw[1]),
                status_string: t::<*mut c_void, StatusString>(raw[2]),
                system_get_info: t::<*mut c_void, GetInfo>(raw[3]),
                iterate_agents: t::<*mut c_void, Iterate>(raw[4]),
                agent_get_info: t::<*mut c_void, HandleInfo>(raw[5]),
                queue_create: t::<*mut c_void, QueueCreate>(raw[6]),
                queue_destroy: t::<*mut c_void, PointerFn>(raw[7]),
                add_write_index: t::<*mut c_void, AddIndex>(raw[8]),
                load_read_index: t::<*mut c_void, LoadIndex>(raw[9]),
                signal_create: t::<*mut c_void, SignalCreate>(raw[10]),
                signal_destroy: t::<*mut c_void, HandleFn>(raw[11]),
                signal_store: t::<*mut c_void, SignalStore>(raw[12]),
                signal_wait: t::<*mut c_void, SignalWait>(raw[13]),
                iterate_pools: t::<*mut c_void, IteratePools>(raw[14]),
                pool_get_info: t::<*mut c_void, HandleInfo>(raw[15]),
                pool_allocate: t::<*mut c_void, PoolAllocate>(raw[16]),
                pool_free: t::<*mut c_void, PointerFn>(raw[17]),
                allow_access: t::<*mut c_void, AllowAccess>(raw[18]),
            }
        };
        let path = object_path(raw[0]);
        Ok(Runtime { fns, path })
    }

    /// The file the loader mapped for the runtime.
    pub fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// `hsa_init`.
    pub fn init(&self) -> Status {
        // SAFETY: no arguments; any thread may initialise the runtime.
        unsafe { (self.fns.init)() }
    }

    /// `hsa_shut_down`.
    pub fn shut_down(&self) -> Status {
        // SAFETY: no arguments; called once, after everything the test created is released.
        unsafe { (self.fns.shut_down)() }
    }

    /// `hsa_status_string`'s text for `status` (empty when it has none).
    pub fn status_text(&self, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; the runtime answers for any status (also before
        // hsa_init, in ROCr).
        let s = unsafe { (self.fns.status_string)(status, &mut text) };
        if s != SUCCESS || text.is_null() {
            return String::new();
        }
        // SAFETY: the runtime's static, NUL-terminated text.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`.
    pub fn build_version(&self) -> Option<String> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the attribute's value is a `const char*`, written to a pointer-sized slot.
        let s = unsafe {
            (self.fns.system_get_info)(AMD_SYSTEM_INFO_BUILD_VERSION, (&raw mut text).cast())
        };
        if s != SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: the runtime's static, NUL-terminated text.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// Every agent, with its name, kind and KMT node id.
    pub fn agents(&self) -> Result<Vec<AgentInfo>, Status> {
        let handles = collect(|cb, data| {
            // SAFETY: the runtime's iteration with a callback that only appends to `data`.
            unsafe { (self.fns.iterate_agents)(cb, data) }
        })?;
        let mut agents = Vec::with_capacity(handles.len());
        for handle in handles {
            let mut name = [0u8; 64];
            // SAFETY: HSA_AGENT_INFO_NAME writes at most 64 bytes.
            unsafe { (self.fns.agent_get_info)(handle, AGENT_INFO_NAME, name.as_mut_ptr().cast()) };
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            let mut device = u32::MAX;
            // SAFETY: a u32-sized attribute.
            unsafe {
                (self.fns.agent_get_info)(handle, AGENT_INFO_DEVICE, (&raw mut device).cast())
            };
            let mut node = 0u32;
            // SAFETY: a u32-sized attribute.
            let node_status = unsafe {
                (self.fns.agent_get_info)(
                    handle,
                    AMD_AGENT_INFO_DRIVER_NODE_ID,
                    (&raw mut node).cast(),
                )
            };
            agents.push(AgentInfo {
                handle,
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
                gpu: device == DEVICE_GPU,
                cpu: device == DEVICE_CPU,
                node_id: (node_status == SUCCESS).then_some(node),
            });
        }
        Ok(agents)
    }

    /// The kernarg pool of `cpu` (system memory the GPU can reach once allowed).
    pub fn kernarg_pool(&self, cpu: u64) -> Result<u64, String> {
        let pools = collect(|cb, data| {
            // SAFETY: the runtime's iteration with a callback that only appends to `data`.
            unsafe { (self.fns.iterate_pools)(cpu, cb, data) }
        })
        .map_err(|s| format!("hsa_amd_agent_iterate_memory_pools failed ({s:#x})"))?;
        for pool in pools {
            let mut flags = 0u32;
            // SAFETY: a u32-sized attribute of a live pool.
            let s = unsafe {
                (self.fns.pool_get_info)(pool, POOL_INFO_GLOBAL_FLAGS, (&raw mut flags).cast())
            };
            if s == SUCCESS && flags & POOL_FLAG_KERNARG_INIT != 0 {
                return Ok(pool);
            }
        }
        Err("the CPU agent has no kernarg memory pool".into())
    }

    /// `bytes` of zeroed memory from `pool` that `gpu` may read and write.
    pub fn allocate(&self, pool: u64, gpu: u64, bytes: usize) -> Result<Memory<'_>, String> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let s = unsafe { (self.fns.pool_allocate)(pool, bytes, 0, &mut ptr) };
        if s != SUCCESS || ptr.is_null() {
            return Err(format!(
                "hsa_amd_memory_pool_allocate of {bytes} bytes failed ({s:#x})"
            ));
        }
        let memory = Memory {
            runtime: self,
            ptr: ptr.cast(),
            len: bytes,
        };
        // SAFETY: `bytes` writable bytes just allocated, not yet shared with the GPU.
        unsafe { std::ptr::write_bytes(memory.ptr, 0, bytes) };
        // SAFETY: one agent handle, no flags, the allocation just made.
        let s = unsafe { (self.fns.allow_access)(1, &gpu, std::ptr::null(), ptr) };
        if s != SUCCESS {
            return Err(format!(
                "hsa_amd_agents_allow_access for the GPU failed ({s:#x})"
            ));
        }
        Ok(memory)
    }

    /// A signal with `initial` as its value.
    pub fn signal(&self, initial: i64) -> Result<Signal<'_>, Status> {
        let mut handle = 0u64;
        // SAFETY: no consumer list, a valid out-pointer.
        let s = unsafe { (self.fns.signal_create)(initial, 0, std::ptr::null(), &mut handle) };
        if s != SUCCESS {
            return Err(s);
        }
        Ok(Signal {
            runtime: self,
            handle,
        })
    }

    /// A queue of `size` packets on `agent`.
    pub fn queue(&self, agent: u64, size: u32) -> Result<Queue<'_>, Status> {
        let mut queue: *mut c_void = std::ptr::null_mut();
        // SAFETY: no error callback, the default segment sizes, a valid out-pointer.
        let s = unsafe {
            (self.fns.queue_create)(
                agent,
                size,
                QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                SEGMENT_DEFAULT,
                SEGMENT_DEFAULT,
                &mut queue,
            )
        };
        if s != SUCCESS || queue.is_null() {
            return Err(s);
        }
        // SAFETY: `hsa_queue_t`: base_address at 8, doorbell_signal at 16, size at 24.
        let (base, doorbell, size) = unsafe {
            let q = queue.cast::<u8>();
            (
                q.add(8).cast::<*mut u8>().read(),
                q.add(16).cast::<u64>().read(),
                q.add(24).cast::<u32>().read(),
            )
        };
        Ok(Queue {
            runtime: self,
            queue,
            base,
            doorbell,
            size,
        })
    }
}

/// Collects the handles an HSA iteration hands its callback.
fn collect(iterate: impl FnOnce(Callback, *mut c_void) -> Status) -> Result<Vec<u64>, Status> {
    unsafe extern "C" fn push(handle: u64, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Vec below, alive for the iteration.
        unsafe { (*data.cast::<Vec<u64>>()).push(handle) };
        SUCCESS
    }
    let mut handles: Vec<u64> = Vec::new();
    let s = iterate(push, (&raw mut handles).cast());
    if s != SUCCESS && s != INFO_BREAK {
        return Err(s);
    }
    Ok(handles)
}

/// Pool memory, freed when dropped.
pub struct Memory<'r> {
    runtime: &'r Runtime,
    ptr: *mut u8,
    len: usize,
}

impl Memory<'_> {
    /// Its device (= host, on the runtimes this targets) address.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// Copies `bytes` to `offset`; false if they do not fit.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> bool {
        if offset
            .checked_add(bytes.len())
            .is_none_or(|end| end > self.len)
        {
            return false;
        }
        // SAFETY: in bounds of the allocation (checked above); the GPU reads it only after
        // the packet naming it is published with release semantics.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) };
        true
    }

    /// `len` bytes from `offset` (empty if out of bounds), read volatile: the GPU wrote them.
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Vec::new();
        }
        // SAFETY: in bounds (checked above); volatile byte reads of memory the GPU wrote
        // before the completion signal the caller waited for (acquire).
        (0..len)
            .map(|i| unsafe { std::ptr::read_volatile(self.ptr.add(offset + i)) })
            .collect()
    }
}

impl Drop for Memory<'_> {
    fn drop(&mut self) {
        // SAFETY: the runtime's own allocation, freed once.
        unsafe { (self.runtime.fns.pool_free)(self.ptr.cast()) };
    }
}

/// A signal, destroyed when dropped.
pub struct Signal<'r> {
    runtime: &'r Runtime,
    handle: u64,
}

impl Signal<'_> {
    /// `hsa_signal_t`.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Waits until the value is below 1 or `limit` passes; returns the last value seen.
    pub fn wait_below_one(&self, limit: Duration) -> i64 {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // SAFETY: a live signal; the timeout hint is in ns (1 GHz timestamp frequency).
            let v = unsafe {
                (self.runtime.fns.signal_wait)(
                    self.handle,
                    CONDITION_LT,
                    1,
                    left.as_nanos().min(u128::from(u64::MAX)) as u64,
                    WAIT_STATE_BLOCKED,
                )
            };
            if v < 1 || left.is_zero() {
                return v;
            }
        }
    }
}

impl Drop for Signal<'_> {
    fn drop(&mut self) {
        // SAFETY: a live signal, destroyed once, after every packet naming it completed or
        // the queue that held them was destroyed.
        unsafe { (self.runtime.fns.signal_destroy)(self.handle) };
    }
}

/// A user-mode queue, destroyed when dropped.
pub struct Queue<'r> {
    runtime: &'r Runtime,
    queue: *mut c_void,
    base: *mut u8,
    doorbell: u64,
    size: u32,
}

impl Queue<'_> {
    /// Writes one 64-byte AQL packet (its first 4 bytes last, with release semantics) and
    /// rings the doorbell.
    pub fn submit(&self, packet: &[u8; 64]) -> Result<(), String> {
        if self.base.is_null() || self.size == 0 {
            return Err("the queue has no ring".into());
        }
        // SAFETY: a live queue.
        let index = unsafe { (self.runtime.fns.add_write_index)(self.queue, 1) };
        let deadline = Instant::now() + Duration::from_secs(2);
        // SAFETY: a live queue.
        while index - unsafe { (self.runtime.fns.load_read_index)(self.queue) }
            >= u64::from(self.size)
        {
            if Instant::now() > deadline {
                return Err("the queue stayed full for 2 s".into());
            }
            std::thread::yield_now();
        }
        let slot = (index % u64::from(self.size)) as usize * 64;
        // SAFETY: the slot is inside the ring (`size` packets of 64 bytes) and was reserved by
        // the write index above; the packet processor reads it only once its header is valid.
        unsafe {
            let at = self.base.add(slot);
            std::ptr::copy_nonoverlapping(packet.as_ptr().add(4), at.add(4), 60);
            let first = u32::from_le_bytes([packet[0], packet[1], packet[2], packet[3]]);
            AtomicU32::from_ptr(at.cast::<u32>()).store(first, Ordering::Release);
            (self.runtime.fns.signal_store)(self.doorbell, index as i64);
        }
        Ok(())
    }
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        // SAFETY: a live queue, destroyed once.
        unsafe { (self.runtime.fns.queue_destroy)(self.queue) };
    }
}

/// The file of the shared object containing `addr` (`dladdr`).
fn object_path(addr: *mut c_void) -> Option<String> {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: any address may be asked about; `info` is a valid out-parameter.
    let found = unsafe { libc::dladdr(addr, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: the loader's NUL-terminated file name, valid while the object stays loaded.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    std::fs::canonicalize(name.as_ref())
        .map(|p| p.display().to_string())
        .ok()
        .or_else(|| Some(name.into_owned()))
}
