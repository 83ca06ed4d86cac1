//! Drives the REAL staged `libhsa-runtime64.so.1` (with the staged `librocdxg.so` and
//! `librocprofiler-register.so.0` beside it), one child process per case.
//!
//! The parent re-executes this binary with `HSA_RT_CASE=<case>`, `LD_LIBRARY_PATH` set to
//! `target/<profile>/sim/lib` and the case's environment and scenario; the child `dlopen`s
//! "libhsa-runtime64.so.1" by name and resolves every function with `dlsym`. Staging is done
//! by `cargo xtask build`; a missing or stale stage fails the run with that instruction.
//! Arguments filter cases by name.

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::SystemTime;

use wslsim_codeobj::{CodeObjectBuilder, KernelBuilder};
use wslsim_scenario::harness::Library;
use wslsim_scenario::monotonic_ns;

const CASE_ENV: &str = "HSA_RT_CASE";

// ---------------------------------------------------------------- C types of the HSA API

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Handle {
    handle: u64,
}

#[repr(C)]
struct HsaQueue {
    type_: u32,
    features: u32,
    base_address: *mut c_void,
    doorbell_signal: Handle,
    size: u32,
    reserved1: u32,
    id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProfilingTime {
    start: u64,
    end: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct DispatchPacket {
    header: u16,
    setup: u16,
    workgroup: [u16; 3],
    reserved0: u16,
    grid: [u32; 3],
    private_segment_size: u32,
    group_segment_size: u32,
    kernel_object: u64,
    kernarg_address: u64,
    reserved2: u64,
    completion_signal: Handle,
}

/// `wslsim_launch_t` as docs/SIMULATOR.md declares it.
#[repr(C)]
struct Launch {
    grid: [u32; 3],
    workgroup: [u16; 3],
    reserved: u16,
    group_segment_size: u32,
    private_segment_size: u32,
}

type Status = u32;
type AgentCb = unsafe extern "C" fn(Handle, *mut c_void) -> Status;
type QueueErrorCb = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);
type Writer = unsafe extern "C" fn(*const c_void, u64);
type InterceptHandler = unsafe extern "C" fn(*const c_void, u64, u64, *mut c_void, Writer);
type AsyncHandler = unsafe extern "C" fn(i64, *mut c_void) -> bool;
type QueryHostAddress = unsafe extern "C" fn(*const c_void, *mut *const c_void) -> Status;

/// `hsa_ven_amd_loader_1_00_pfn_t` (the first three members of every later version).
#[repr(C)]
struct LoaderTable {
    query_host_address: Option<QueryHostAddress>,
    query_segment_descriptors: *const c_void,
    query_executable: *const c_void,
}

type LoadedCodeObjectCb = unsafe extern "C" fn(Handle, Handle, *mut c_void) -> Status;
type IterateLoaded =
    unsafe extern "C" fn(Handle, Option<LoadedCodeObjectCb>, *mut c_void) -> Status;
type LoadedGetInfo = unsafe extern "C" fn(Handle, u32, *mut c_void) -> Status;

/// `hsa_ven_amd_loader_1_03_pfn_t`.
#[repr(C)]
struct LoaderTable103 {
    query_host_address: Option<QueryHostAddress>,
    query_segment_descriptors: *const c_void,
    query_executable: *const c_void,
    executable_iterate_loaded_code_objects: Option<IterateLoaded>,
    loaded_code_object_get_info: Option<LoadedGetInfo>,
    code_object_reader_create_from_file_with_offset_size: *const c_void,
    iterate_executables: *const c_void,
}

macro_rules! api {
    ($($name:ident: fn($($t:ty),*) -> $r:ty;)*) => {
        #[allow(non_snake_case)]
        struct Api { $($name: unsafe extern "C" fn($($t),*) -> $r,)* }
        impl Api {
            fn load(lib: &Library) -> Result<Api, String> {
                Ok(Api { $($name: {
                    // SAFETY: the export has this signature (the HSA API).
                    unsafe { lib.function::<unsafe extern "C" fn($($t),*) -> $r>(stringify!($name)) }?
                },)* })
            }
        }
    };
}

api! {
    hsa_init: fn() -> Status;
    hsa_shut_down: fn() -> Status;
    hsa_system_get_info: fn(u32, *mut c_void) -> Status;
    hsa_iterate_agents: fn(AgentCb, *mut c_void) -> Status;
    hsa_agent_get_info: fn(Handle, u32, *mut c_void) -> Status;
    hsa_amd_agent_iterate_memory_pools: fn(Handle, AgentCb, *mut c_void) -> Status;
    hsa_amd_memory_pool_get_info: fn(Handle, u32, *mut c_void) -> Status;
    hsa_amd_memory_pool_allocate: fn(Handle, usize, u32, *mut *mut c_void) -> Status;
    hsa_amd_memory_pool_free: fn(*mut c_void) -> Status;
    hsa_amd_agents_allow_access: fn(u32, *const Handle, *const u32, *const c_void) -> Status;
    hsa_queue_create: fn(Handle, u32, u32, Option<QueueErrorCb>, *mut c_void, u32, u32, *mut *mut HsaQueue) -> Status;
    hsa_queue_destroy: fn(*mut HsaQueue) -> Status;
    hsa_queue_add_write_index_screlease: fn(*const HsaQueue, u64) -> u64;
    hsa_queue_load_read_index_scacquire: fn(*const HsaQueue) -> u64;
    hsa_signal_create: fn(i64, u32, *const Handle, *mut Handle) -> Status;
    hsa_signal_destroy: fn(Handle) -> Status;
    hsa_signal_store_screlease: fn(Handle, i64) -> ();
    hsa_signal_load_scacquire: fn(Handle) -> i64;
    hsa_signal_wait_scacquire: fn(Handle, u32, i64, u64, u32) -> i64;
    hsa_code_object_reader_create_from_memory: fn(*const c_void, usize, *mut Handle) -> Status;
    hsa_code_object_reader_destroy: fn(Handle) -> Status;
    hsa_executable_create_alt: fn(u32, u32, *const c_char, *mut Handle) -> Status;
    hsa_executable_load_agent_code_object: fn(Handle, Handle, Handle, *const c_char, *mut Handle) -> Status;
    hsa_executable_freeze: fn(Handle, *const c_char) -> Status;
    hsa_executable_get_symbol_by_name: fn(Handle, *const c_char, *const Handle, *mut Handle) -> Status;
    hsa_executable_symbol_get_info: fn(Handle, u32, *mut c_void) -> Status;
    hsa_executable_destroy: fn(Handle) -> Status;
    hsa_amd_profiling_set_profiler_enabled: fn(*mut HsaQueue, i32) -> Status;
    hsa_amd_profiling_get_dispatch_time: fn(Handle, Handle, *mut ProfilingTime) -> Status;
    hsa_amd_profiling_async_copy_enable: fn(bool) -> Status;
    hsa_amd_profiling_get_async_copy_time: fn(Handle, *mut ProfilingTime) -> Status;
    hsa_amd_memory_async_copy: fn(*mut c_void, Handle, *const c_void, Handle, usize, u32, *const Handle, Handle) -> Status;
    hsa_amd_queue_intercept_create: fn(Handle, u32, u32, Option<QueueErrorCb>, *mut c_void, u32, u32, *mut *mut HsaQueue) -> Status;
    hsa_amd_queue_intercept_register: fn(*mut HsaQueue, InterceptHandler, *mut c_void) -> Status;
    hsa_system_get_major_extension_table: fn(u16, u16, usize, *mut c_void) -> Status;
    hsa_system_major_extension_supported: fn(u16, u16, *mut u16, *mut bool) -> Status;
    hsa_amd_signal_async_handler: fn(Handle, u32, i64, AsyncHandler, *mut c_void) -> Status;
    hsa_amd_profiling_convert_tick_to_system_domain: fn(Handle, u64, *mut u64) -> Status;
}

fn open_runtime() -> Result<(Library, Api), String> {
    // By soname, resolved through LD_LIBRARY_PATH.
    let lib = Library::open("libhsa-runtime64.so.1")?;
    let api = Api::load(&lib)?;
    Ok((lib, api))
}

macro_rules! check {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!("{} (line {})", format!($($fmt)*), line!()));
        }
    };
}

macro_rules! ok {
    ($call:expr) => {{
        // SAFETY: the HSA API called with valid arguments (the test's own objects).
        let status = unsafe { $call };
        if status != 0 {
            return Err(format!(
                "{} -> {status:#x} (line {})",
                stringify!($call),
                line!()
            ));
        }
    }};
}

// ---------------------------------------------------------------- the test kernel

#[repr(C)]
struct VectorAddArgs {
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    n: u32,
    scale: f32,
}

/// `c[i] = a[i] + scale * b[i]` for every work-item of the grid below `n`.
unsafe extern "C" fn vector_add(kernarg: *const c_void, launch: *const Launch) {
    // SAFETY: the runtime passes the dispatch's kernarg segment and launch description.
    let (args, launch) = unsafe { (&*(kernarg as *const VectorAddArgs), &*launch) };
    let items = launch.grid.iter().map(|&g| g as usize).product::<usize>();
    for i in 0..items.min(args.n as usize) {
        // SAFETY: the buffers hold `n` floats.
        unsafe { *args.c.add(i) = *args.a.add(i) + args.scale * *args.b.add(i) };
    }
}

const N: usize = 4096;
const KERNARG_SIZE: u32 = size_of::<VectorAddArgs>() as u32;

struct Setup {
    api: Api,
    cpu: Handle,
    gpu: Handle,
    host_pool: Handle,
    device_pool: Handle,
}

unsafe extern "C" fn collect_handle(handle: Handle, data: *mut c_void) -> Status {
    // SAFETY: `data` is the test's Vec<Handle>.
    unsafe { (*(data as *mut Vec<Handle>)).push(handle) };
    0
}

fn agent_u32(api: &Api, agent: Handle, attribute: u32) -> Result<u32, String> {
    let mut value = 0u32;
    ok!((api.hsa_agent_get_info)(
        agent,
        attribute,
        (&raw mut value).cast()
    ));
    Ok(value)
}

fn setup() -> Result<Setup, String> {
    let (_lib, api) = open_runtime()?;
    ok!((api.hsa_init)());
    let mut agents: Vec<Handle> = Vec::new();
    ok!((api.hsa_iterate_agents)(
        collect_handle,
        (&raw mut agents).cast()
    ));
    check!(
        agents.len() == 2,
        "expected a CPU and a GPU agent, got {}",
        agents.len()
    );
    let mut cpu = None;
    let mut gpu = None;
    for &agent in &agents {
        match agent_u32(&api, agent, 17)? {
            0 => cpu = Some(agent),
            1 => gpu = Some(agent),
            other => return Err(format!("unexpected device type {other}")),
        }
    }
    let (cpu, gpu) = (cpu.ok_or("no CPU agent")?, gpu.ok_or("no GPU agent")?);
    let mut pools: Vec<Handle> = Vec::new();
    ok!((api.hsa_amd_agent_iterate_memory_pools)(
        cpu,
        collect_handle,
        (&raw mut pools).cast()
    ));
    let mut host_pool = None;
    for &pool in &pools {
        let mut flags = 0u32;
        ok!((api.hsa_amd_memory_pool_get_info)(
            pool,
            1,
            (&raw mut flags).cast()
        ));
        if flags & 1 != 0 {
            host_pool = Some(pool); // KERNARG_INIT | FINE_GRAINED
        }
    }
    let mut pools: Vec<Handle> = Vec::new();
    ok!((api.hsa_amd_agent_iterate_memory_pools)(
        gpu,
        collect_handle,
        (&raw mut pools).cast()
    ));
    check!(pools.len() == 1, "GPU pools: {}", pools.len());
    let mut location = 9u32;
    ok!((api.hsa_amd_memory_pool_get_info)(
        pools[0],
        17,
        (&raw mut location).cast()
    ));
    check!(location == 1, "the GPU pool is not located on the GPU");
    Ok(Setup {
        api,
        cpu,
        gpu,
        host_pool: host_pool.ok_or("no kernarg pool on the CPU agent")?,
        device_pool: pools[0],
    })
}

fn alloc<T>(s: &Setup, pool: Handle, count: usize) -> Result<*mut T, String> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    ok!((s.api.hsa_amd_memory_pool_allocate)(
        pool,
        count * size_of::<T>(),
        0,
        &mut ptr
    ));
    check!(!ptr.is_null(), "null allocation");
    Ok(ptr.cast())
}

fn new_signal(s: &Setup, value: i64) -> Result<Handle, String> {
    let mut signal = Handle::default();
    ok!((s.api.hsa_signal_create)(
        value,
        0,
        std::ptr::null(),
        &mut signal
    ));
    Ok(signal)
}

fn wait_zero(s: &Setup, signal: Handle) -> Result<(), String> {
    // 10 s: a hang is a failure, not a stuck test.
    // A wait may resume spuriously (hsa.h; the simulator does, a few times per process), so
    // wait again until the value is there or the time is up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        // SAFETY: a live signal.
        let value = unsafe { (s.api.hsa_signal_wait_scacquire)(signal, 0, 0, 10_000_000_000, 0) };
        if value == 0 {
            return Ok(());
        }
        check!(
            std::time::Instant::now() < deadline,
            "signal still {value} after 10 s"
        );
    }
}

/// Writes one packet into `queue` as a producer: reserve an index, write the body, store
/// header+setup last with a release store, ring the doorbell.
fn submit(s: &Setup, queue: *mut HsaQueue, packet: &[u8; 64]) -> Result<(), String> {
    // SAFETY: a live queue handed out by the runtime.
    let q = unsafe { &*queue };
    // SAFETY: as above.
    let index = unsafe { (s.api.hsa_queue_add_write_index_screlease)(queue, 1) };
    // SAFETY: as above.
    while index - unsafe { (s.api.hsa_queue_load_read_index_scacquire)(queue) } >= u64::from(q.size)
    {
        std::thread::yield_now();
    }
    let slot = (q.base_address as *mut u8).wrapping_add((index % u64::from(q.size)) as usize * 64);
    // SAFETY: the slot is ours until the header is published; bytes 4..64 first.
    unsafe { std::ptr::copy_nonoverlapping(packet.as_ptr().add(4), slot.add(4), 60) };
    let first = u32::from_le_bytes([packet[0], packet[1], packet[2], packet[3]]);
    // SAFETY: the slot is 64-byte aligned ring memory; header and setup published together.
    unsafe { (*(slot as *const AtomicU32)).store(first, Ordering::Release) };
    // SAFETY: the queue's doorbell signal.
    unsafe { (s.api.hsa_signal_store_screlease)(q.doorbell_signal, index as i64) };
    Ok(())
}

fn dispatch_packet(
    kernel_object: u64,
    kernarg: *mut VectorAddArgs,
    completion: Handle,
) -> [u8; 64] {
    let packet = DispatchPacket {
        header: 0x1402 | 0x100, // KERNEL_DISPATCH, barrier, system acquire/release
        setup: 1,
        workgroup: [256, 1, 1],
        grid: [N as u32, 1, 1],
        kernel_object,
        kernarg_address: kernarg as u64,
        completion_signal: completion,
        ..DispatchPacket::default()
    };
    // SAFETY: a 64-byte plain-old-data struct.
    unsafe { std::mem::transmute::<DispatchPacket, [u8; 64]>(packet) }
}

struct Kernel {
    executable: Handle,
    reader: Handle,
    object: u64,
    /// The code-object bytes handed to the loader.
    bytes: Vec<u8>,
    /// What `hsa_executable_load_agent_code_object` returned.
    loaded: Handle,
}

fn load_kernel(s: &Setup) -> Result<Kernel, String> {
    let kernel = load_kernel_unread(s)?;
    // The descriptor the kernel object points at encodes 24 VGPRs in wave32 granules.
    // SAFETY: the runtime-owned 64-byte descriptor.
    let rsrc1 = unsafe { ((kernel.object + 48) as *const u32).read() };
    check!((rsrc1 & 0x3F) + 1 == 3, "rsrc1 {rsrc1:#x}");
    Ok(kernel)
}

/// Loads the vector-add kernel without touching its kernel object.
fn load_kernel_unread(s: &Setup) -> Result<Kernel, String> {
    let kernel = KernelBuilder::new("vector_add")
        .impl_address(vector_add as *const () as usize as u64)
        .kernarg(KERNARG_SIZE, 8)
        .vgprs(24)
        .sgprs(40)
        .costs(8, 4, 0)
        .build()
        .map_err(|e| e.to_string())?;
    let bytes = CodeObjectBuilder::new().kernel(kernel).to_bytes();
    let mut reader = Handle::default();
    ok!((s.api.hsa_code_object_reader_create_from_memory)(
        bytes.as_ptr().cast(),
        bytes.len(),
        &mut reader
    ));
    let mut executable = Handle::default();
    ok!((s.api.hsa_executable_create_alt)(
        0,
        0,
        std::ptr::null(),
        &mut executable
    ));
    let mut loaded = Handle::default();
    ok!((s.api.hsa_executable_load_agent_code_object)(
        executable,
        s.gpu,
        reader,
        std::ptr::null(),
        &mut loaded
    ));
    ok!((s.api.hsa_executable_freeze)(executable, std::ptr::null()));
    let mut symbol = Handle::default();
    ok!((s.api.hsa_executable_get_symbol_by_name)(
        executable,
        c"vector_add.kd".as_ptr(),
        &s.gpu,
        &mut symbol
    ));
    let mut object = 0u64;
    ok!((s.api.hsa_executable_symbol_get_info)(
        symbol,
        22,
        (&raw mut object).cast()
    ));
    check!(
        object != 0 && object.is_multiple_of(64),
        "kernel object {object:#x} is not 64-byte aligned"
    );
    let mut kernarg_size = 0u32;
    ok!((s.api.hsa_executable_symbol_get_info)(
        symbol,
        11,
        (&raw mut kernarg_size).cast()
    ));
    check!(kernarg_size == KERNARG_SIZE, "kernarg size {kernarg_size}");
    Ok(Kernel {
        executable,
        reader,
        object,
        bytes,
        loaded,
    })
}

struct Buffers {
    a: *mut f32,
    b: *mut f32,
}

fn input_buffers(s: &Setup) -> Result<Buffers, String> {
    let a: *mut f32 = alloc(s, s.host_pool, N)?;
    let b: *mut f32 = alloc(s, s.host_pool, N)?;
    for i in 0..N {
        // SAFETY: N floats each.
        unsafe {
            *a.add(i) = i as f32;
            *b.add(i) = (N - i) as f32;
        }
    }
    Ok(Buffers { a, b })
}

/// Submits `count` vector-add dispatches (scale = index) through `queue`, waits, verifies every
/// result and the dispatch times against the host clock.
fn run_dispatches(
    s: &Setup,
    queue: *mut HsaQueue,
    kernel: &Kernel,
    count: usize,
) -> Result<(), String> {
    let inputs = input_buffers(s)?;
    let mut outputs = Vec::new();
    let mut signals = Vec::new();
    let mut before = Vec::new();
    for index in 0..count {
        let c: *mut f32 = alloc(s, s.host_pool, N)?;
        let args: *mut VectorAddArgs = alloc(s, s.host_pool, 1)?;
        // SAFETY: a fresh kernarg allocation.
        unsafe {
            args.write(VectorAddArgs {
                a: inputs.a,
                b: inputs.b,
                c,
                n: N as u32,
                scale: index as f32,
            })
        };
        let signal = new_signal(s, 1)?;
        before.push(monotonic_ns());
        submit(s, queue, &dispatch_packet(kernel.object, args, signal))?;
        outputs.push(c);
        signals.push(signal);
    }
    for &signal in &signals {
        wait_zero(s, signal)?;
    }
    let after = monotonic_ns();
    for (index, &c) in outputs.iter().enumerate() {
        for i in 0..N {
            let expected = i as f32 + index as f32 * (N - i) as f32;
            // SAFETY: N floats.
            let got = unsafe { *c.add(i) };
            check!(
                got == expected,
                "dispatch {index}: c[{i}] = {got}, expected {expected}"
            );
        }
    }
    let mut previous_end = 0;
    for (index, &signal) in signals.iter().enumerate() {
        let mut time = ProfilingTime::default();
        ok!((s.api.hsa_amd_profiling_get_dispatch_time)(
            s.gpu, signal, &mut time
        ));
        check!(
            time.start < time.end,
            "dispatch {index}: start {} >= end {}",
            time.start,
            time.end
        );
        check!(
            time.start >= before[index] && time.end <= after,
            "dispatch {index}: [{}, {}] outside the host interval [{}, {after}]",
            time.start,
            time.end,
            before[index]
        );
        check!(
            time.start >= previous_end,
            "dispatch {index} starts before the previous ended"
        );
        check_conversion(&format!("dispatch {index}"), signal, &time)?;
        previous_end = time.end;
        ok!((s.api.hsa_signal_destroy)(signal));
    }
    Ok(())
}

static INTERCEPTED: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn counting_handler(
    packets: *const c_void,
    count: u64,
    _user_index: u64,
    _data: *mut c_void,
    writer: Writer,
) {
    INTERCEPTED.fetch_add(count, Ordering::SeqCst);
    // SAFETY: forwards the packets of this call.
    unsafe { writer(packets, count) };
}

/// What [`probe_handler`] does: forward each packet followed by `extra` no-op barriers, and
/// (with `recurse`) ring the queue again from inside the handler for packet 0.
struct Probe {
    setup: *const Setup,
    queue: std::cell::Cell<*mut HsaQueue>,
    extra: usize,
    recurse: Option<[u8; 64]>,
}

/// (thread id, packet index) of every call of [`probe_handler`].
static PROBED: std::sync::Mutex<Vec<(i32, u64)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn probe_handler(
    packets: *const c_void,
    count: u64,
    user_index: u64,
    data: *mut c_void,
    writer: Writer,
) {
    // SAFETY: the Probe registered with this handler outlives its queue.
    let probe = unsafe { &*(data as *const Probe) };
    // SAFETY: plain syscall.
    let tid = unsafe { libc::gettid() };
    PROBED.lock().unwrap().push((tid, user_index));
    if let (Some(second), 0) = (probe.recurse, user_index) {
        // SAFETY: the Setup outlives the queue.
        let s = unsafe { &*probe.setup };
        // A doorbell store from inside a handler: ROCr defers it to the async doorbell.
        let _ = submit(s, probe.queue.get(), &second);
    }
    let mut out = Vec::new();
    for k in 0..count as usize {
        // SAFETY: the runtime passes `count` packets.
        let mut packet = unsafe { packets.cast::<[u8; 64]>().add(k).read_unaligned() };
        let completion: [u8; 8] = packet[56..64].try_into().unwrap_or_default();
        if probe.extra > 0 {
            // The last barrier completes the dispatch's signal instead.
            packet[56..64].fill(0);
        }
        out.push(packet);
        for e in 0..probe.extra {
            // A barrier-AND with no dependency (header: type 3, barrier bit).
            let mut barrier = [0u8; 64];
            barrier[..2].copy_from_slice(&0x0103u16.to_le_bytes());
            if e + 1 == probe.extra {
                barrier[56..64].copy_from_slice(&completion);
            }
            out.push(barrier);
        }
    }
    // SAFETY: `out.len()` packets.
    unsafe { writer(out.as_ptr().cast(), out.len() as u64) };
}

fn probed_since(mark: usize) -> Vec<(i32, u64)> {
    PROBED.lock().unwrap()[mark..].to_vec()
}

/// Intercept queues as ROCr runs them: a host doorbell store runs the handlers on the storing
/// thread before it returns; a store from inside a handler is deferred to the runtime's
/// asynchronous doorbell (another thread); output that does not fit into the hardware ring
/// waits in the overflow behind a retry barrier and still runs, in order.
fn case_intercept() -> Result<(), String> {
    let s = setup()?;
    let kernel = load_kernel(&s)?;
    let inputs = input_buffers(&s)?;
    let dispatch = |signal: Handle| -> Result<[u8; 64], String> {
        let c: *mut f32 = alloc(&s, s.host_pool, N)?;
        let args: *mut VectorAddArgs = alloc(&s, s.host_pool, 1)?;
        // SAFETY: a fresh kernarg allocation.
        unsafe {
            args.write(VectorAddArgs {
                a: inputs.a,
                b: inputs.b,
                c,
                n: N as u32,
                scale: 1.0,
            })
        };
        Ok(dispatch_packet(kernel.object, args, signal))
    };
    let create = |size: u32, probe: &Probe| -> Result<*mut HsaQueue, String> {
        let mut queue: *mut HsaQueue = std::ptr::null_mut();
        ok!((s.api.hsa_amd_queue_intercept_create)(
            s.gpu,
            size,
            0,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut queue
        ));
        ok!((s.api.hsa_amd_queue_intercept_register)(
            queue,
            probe_handler,
            (probe as *const Probe).cast_mut().cast()
        ));
        Ok(queue)
    };
    // SAFETY: plain syscall.
    let me = unsafe { libc::gettid() };

    // Inline processing, and a recursive doorbell store deferred to another thread.
    let (first, second) = (new_signal(&s, 1)?, new_signal(&s, 1)?);
    let probe = Probe {
        setup: &s,
        queue: std::cell::Cell::new(std::ptr::null_mut()),
        extra: 0,
        recurse: Some(dispatch(second)?),
    };
    let queue = create(64, &probe)?;
    probe.queue.set(queue);
    let mark = PROBED.lock().unwrap().len();
    submit(&s, queue, &dispatch(first)?)?;
    let seen = probed_since(mark);
    check!(
        seen.first() == Some(&(me, 0)),
        "the handler did not run on the storing thread before the store returned: {seen:?} (this thread {me})"
    );
    wait_zero(&s, first)?;
    wait_zero(&s, second)?;
    let seen = probed_since(mark);
    check!(
        seen.len() == 2 && seen[1].1 == 1 && seen[1].0 != me,
        "the doorbell store from inside the handler was not deferred to another thread: {seen:?} (this thread {me})"
    );
    // SAFETY: a live queue.
    let read = unsafe { (s.api.hsa_queue_load_read_index_scacquire)(queue) };
    check!(read == 2, "intercept read index {read}, expected 2");
    ok!((s.api.hsa_queue_destroy)(queue));

    // Overflow: 71 packets out per packet in, more than the 64-packet hardware ring holds at
    // once; each dispatch's signal is completed by its last packet, so it completes only if the
    // overflow behind the retry barrier was submitted.
    let overflow = Probe {
        setup: &s,
        queue: std::cell::Cell::new(std::ptr::null_mut()),
        extra: 70,
        recurse: None,
    };
    let queue = create(64, &overflow)?;
    let mark = PROBED.lock().unwrap().len();
    let mut signals = Vec::new();
    for _ in 0..6 {
        let signal = new_signal(&s, 1)?;
        submit(&s, queue, &dispatch(signal)?)?;
        signals.push(signal);
    }
    for &signal in &signals {
        wait_zero(&s, signal)?;
    }
    let indices: Vec<u64> = probed_since(mark).iter().map(|p| p.1).collect();
    check!(
        indices == (0..6).collect::<Vec<_>>(),
        "handler calls {indices:?}, expected each of the 6 packets once, in order"
    );
    ok!((s.api.hsa_queue_destroy)(queue));
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

fn copy_and_check(
    s: &Setup,
    dst: *mut u8,
    dst_agent: Handle,
    src: *const u8,
    src_agent: Handle,
    bytes: usize,
) -> Result<ProfilingTime, String> {
    let signal = new_signal(s, 1)?;
    let before = monotonic_ns();
    ok!((s.api.hsa_amd_memory_async_copy)(
        dst.cast(),
        dst_agent,
        src.cast(),
        src_agent,
        bytes,
        0,
        std::ptr::null(),
        signal
    ));
    wait_zero(s, signal)?;
    let after = monotonic_ns();
    // SAFETY: both buffers hold `bytes` bytes.
    let equal =
        unsafe { std::slice::from_raw_parts(dst, bytes) == std::slice::from_raw_parts(src, bytes) };
    check!(equal, "copied bytes differ");
    let mut time = ProfilingTime::default();
    ok!((s.api.hsa_amd_profiling_get_async_copy_time)(
        signal, &mut time
    ));
    check!(
        time.start < time.end,
        "copy start {} >= end {}",
        time.start,
        time.end
    );
    check!(
        time.start >= before && time.end <= after,
        "copy [{}, {}] outside the host interval [{before}, {after}]",
        time.start,
        time.end
    );
    check_conversion("copy", signal, &time)?;
    ok!((s.api.hsa_signal_destroy)(signal));
    Ok(time)
}

/// The documented GPU clock: ticks = (m + [gpu] clock_offset_ns − ceil(m × 2.2 ppm)) / 10 for
/// m = CLOCK_MONOTONIC, with the default offset. The runtime's conversion must agree with it
/// within the seed's 175 ns (one 62.5 ms recalibration period of drift, 137.5 ns, plus a tick).
const CLOCK_OFFSET_NS: u64 = 1_000_000_000_000;

/// The GPU clock's drift, parts per billion (docs/SIMULATOR.md, "Clocks").
const DRIFT_PPB: i128 = -2_200;

/// The CLOCK_MONOTONIC ns at which `tick` begins (the documented rule inverted, ±1 ns).
fn monotonic_of_tick(tick: u64) -> u64 {
    let clock_ns = i128::from(tick) * 10 - i128::from(CLOCK_OFFSET_NS);
    (clock_ns * 1_000_000_000 / (1_000_000_000 + DRIFT_PPB)).max(0) as u64
}

fn check_conversion(what: &str, signal: Handle, time: &ProfilingTime) -> Result<(), String> {
    // SAFETY: the signal handle is the address of its 64-byte amd_signal_t.
    let (start_tick, end_tick) = unsafe {
        (
            ((signal.handle + 32) as *const u64).read_volatile(),
            ((signal.handle + 40) as *const u64).read_volatile(),
        )
    };
    for (name, tick, ns) in [
        ("start", start_tick, time.start),
        ("end", end_tick, time.end),
    ] {
        check!(
            tick != ns,
            "{what}: {name} was not converted (raw tick {tick})"
        );
        let expected = monotonic_of_tick(tick);
        let error = ns.abs_diff(expected);
        check!(
            error <= 175,
            "{what}: {name} {ns} ns is {error} ns away from CLOCK_MONOTONIC of tick {tick}"
        );
    }
    Ok(())
}

fn case_main_flow() -> Result<(), String> {
    let s = setup()?;
    // Agents.
    let mut name = [0u8; 64];
    ok!((s.api.hsa_agent_get_info)(
        s.gpu,
        0,
        name.as_mut_ptr().cast()
    ));
    let name = CStr::from_bytes_until_nul(&name).map_err(|e| e.to_string())?;
    check!(name == c"gfx1150", "GPU name {name:?}");
    check!(agent_u32(&s.api, s.gpu, 0xA004)? == 1, "driver node id");
    check!(agent_u32(&s.api, s.cpu, 0xA004)? == 0, "CPU driver node id");
    check!(agent_u32(&s.api, s.gpu, 0xA002)? == 16, "compute units");
    let mut frequency = 0u64;
    ok!((s.api.hsa_system_get_info)(3, (&raw mut frequency).cast()));
    check!(
        frequency == 1_000_000_000,
        "system timestamp frequency {frequency}"
    );
    ok!((s.api.hsa_agent_get_info)(
        s.gpu,
        0xA016,
        (&raw mut frequency).cast()
    ));
    check!(
        frequency == 100_000_000,
        "GPU timestamp frequency {frequency}"
    );
    let mut timestamp = 0u64;
    let host = monotonic_ns();
    ok!((s.api.hsa_system_get_info)(2, (&raw mut timestamp).cast()));
    check!(
        timestamp >= host && timestamp - host < 10_000_000,
        "system timestamp {timestamp} vs {host}"
    );

    // Dispatches through a hardware queue.
    let kernel = load_kernel(&s)?;
    let mut queue: *mut HsaQueue = std::ptr::null_mut();
    ok!((s.api.hsa_queue_create)(
        s.gpu,
        256,
        0,
        None,
        std::ptr::null_mut(),
        0,
        0,
        &mut queue
    ));
    ok!((s.api.hsa_amd_profiling_set_profiler_enabled)(queue, 1));
    run_dispatches(&s, queue, &kernel, 8)?;

    // Copies both ways through the device pool.
    const BYTES: usize = 1 << 20;
    ok!((s.api.hsa_amd_profiling_async_copy_enable)(true));
    let host: *mut u8 = alloc(&s, s.host_pool, BYTES)?;
    let device: *mut u8 = alloc(&s, s.device_pool, BYTES)?;
    let back: *mut u8 = alloc(&s, s.host_pool, BYTES)?;
    ok!((s.api.hsa_amd_agents_allow_access)(
        1,
        &s.gpu,
        std::ptr::null(),
        host.cast()
    ));
    for i in 0..BYTES {
        // SAFETY: BYTES bytes.
        unsafe { *host.add(i) = (i * 7 % 251) as u8 };
    }
    let to_device = copy_and_check(&s, device, s.gpu, host, s.cpu, BYTES)?;
    let to_host = copy_and_check(&s, back, s.cpu, device, s.gpu, BYTES)?;
    check!(to_device.end <= to_host.start, "copy times out of order");

    // A copy waits for its dependency on a runtime worker, not in the caller.
    let dep = new_signal(&s, 1)?;
    let done = new_signal(&s, 1)?;
    ok!((s.api.hsa_amd_memory_async_copy)(
        back.cast(),
        s.cpu,
        device.cast(),
        s.gpu,
        64,
        1,
        &dep,
        done
    ));
    std::thread::sleep(std::time::Duration::from_millis(30));
    // SAFETY: a live signal.
    let pending = unsafe { (s.api.hsa_signal_load_scacquire)(done) };
    check!(pending == 1, "copy ran before its dependency");
    // SAFETY: a live signal.
    unsafe { (s.api.hsa_signal_store_screlease)(dep, 0) };
    wait_zero(&s, done)?;

    // An intercept queue with a counting, forwarding handler.
    let mut intercept: *mut HsaQueue = std::ptr::null_mut();
    ok!((s.api.hsa_amd_queue_intercept_create)(
        s.gpu,
        64,
        0,
        None,
        std::ptr::null_mut(),
        0,
        0,
        &mut intercept
    ));
    ok!((s.api.hsa_amd_queue_intercept_register)(
        intercept,
        counting_handler,
        std::ptr::null_mut()
    ));
    ok!((s.api.hsa_amd_profiling_set_profiler_enabled)(intercept, 1));
    run_dispatches(&s, intercept, &kernel, 4)?;
    let seen = INTERCEPTED.load(Ordering::SeqCst);
    check!(
        seen == 4,
        "the intercept handler saw {seen} packets, expected 4"
    );

    ok!((s.api.hsa_queue_destroy)(intercept));
    ok!((s.api.hsa_queue_destroy)(queue));
    ok!((s.api.hsa_executable_destroy)(kernel.executable));
    ok!((s.api.hsa_code_object_reader_destroy)(kernel.reader));
    ok!((s.api.hsa_amd_memory_pool_free)(host.cast()));
    ok!((s.api.hsa_amd_memory_pool_free)(device.cast()));
    ok!((s.api.hsa_amd_memory_pool_free)(back.cast()));
    ok!((s.api.hsa_shut_down)());
    // SAFETY: no arguments.
    let again = unsafe { (s.api.hsa_shut_down)() };
    check!(
        again == 0x100B,
        "second hsa_shut_down returned {again:#x}, expected NOT_INITIALIZED"
    );
    Ok(())
}

/// Whether the host can read `bytes` bytes at `address`, asked without touching them: a pipe
/// write from unreadable memory fails with EFAULT instead of faulting.
fn host_readable(address: u64, bytes: usize) -> Result<bool, String> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array.
    check!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe failed");
    // SAFETY: write only reads `bytes` bytes at `address` in the kernel, which reports EFAULT
    // for memory the process cannot read.
    let written = unsafe { libc::write(fds[1], address as *const c_void, bytes) };
    let error = std::io::Error::last_os_error().raw_os_error();
    // SAFETY: our own descriptors.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    match written {
        n if n == bytes as isize => Ok(true),
        -1 if error == Some(libc::EFAULT) => Ok(false),
        n => Err(format!("write returned {n} ({error:?})")),
    }
}

/// The AMD loader extension's table (`hsa_system_get_major_extension_table(0x201, 1, ...)`).
fn loader_table(s: &Setup) -> Result<LoaderTable, String> {
    let mut table = LoaderTable {
        query_host_address: None,
        query_segment_descriptors: std::ptr::null(),
        query_executable: std::ptr::null(),
    };
    ok!((s.api.hsa_system_get_major_extension_table)(
        0x201,
        1,
        size_of::<LoaderTable>(),
        (&raw mut table).cast()
    ));
    Ok(table)
}

/// `[faults] device_code_objects`: the kernel object is not host-readable, the loader extension
/// leads to the descriptor, and dispatches still run.
fn case_device_code_objects() -> Result<(), String> {
    let s = setup()?;
    let (mut minor, mut supported) = (0u16, false);
    ok!((s.api.hsa_system_major_extension_supported)(
        0x201,
        1,
        &mut minor,
        &mut supported
    ));
    check!(
        supported && minor == 3,
        "loader 1.{minor} supported={supported}"
    );
    let kernel = load_kernel_unread(&s)?;
    check!(
        !host_readable(kernel.object, 64)?,
        "kernel object {:#x} is readable by the host",
        kernel.object
    );
    let table = loader_table(&s)?;
    let query = table.query_host_address.ok_or("no query_host_address")?;
    check!(!table.query_executable.is_null(), "no query_executable");
    let mut host: *const c_void = std::ptr::null();
    ok!(query(kernel.object as *const c_void, &mut host));
    check!(
        !host.is_null() && host as u64 != kernel.object,
        "host address {host:?}"
    );
    check!(
        host_readable(host as u64, 64)?,
        "the host copy is not readable"
    );
    // SAFETY: the runtime's 64-byte host copy of the descriptor.
    let rsrc1 = unsafe { (host.cast::<u8>().add(48) as *const u32).read_unaligned() };
    check!((rsrc1 & 0x3F) + 1 == 3, "rsrc1 {rsrc1:#x}");
    // An address inside the descriptor maps into the host copy too.
    let mut inner: *const c_void = std::ptr::null();
    ok!(query((kernel.object + 48) as *const c_void, &mut inner));
    check!(
        inner as u64 == host as u64 + 48,
        "inner {inner:?} vs {host:?}"
    );
    // Anything else is not a loaded address.
    let mut other: *const c_void = std::ptr::null();
    // SAFETY: valid pointers; the address is the test's own stack.
    let status = unsafe { query((&raw const other).cast(), &mut other) };
    check!(status == 0x1001, "unknown address -> {status:#x}");

    let mut queue: *mut HsaQueue = std::ptr::null_mut();
    ok!((s.api.hsa_queue_create)(
        s.gpu,
        256,
        0,
        None,
        std::ptr::null_mut(),
        0,
        0,
        &mut queue
    ));
    ok!((s.api.hsa_amd_profiling_set_profiler_enabled)(queue, 1));
    run_dispatches(&s, queue, &kernel, 2)?;
    ok!((s.api.hsa_queue_destroy)(queue));
    ok!((s.api.hsa_executable_destroy)(kernel.executable));
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

/// `[faults] loader_extension = false`: no loader table, and the kernel object is host memory.
fn case_no_loader_extension() -> Result<(), String> {
    let s = setup()?;
    let mut table = [0u8; 24];
    // SAFETY: 24 writable bytes.
    let status = unsafe {
        (s.api.hsa_system_get_major_extension_table)(0x201, 1, 24, table.as_mut_ptr().cast())
    };
    check!(status == 0x1000, "loader table -> {status:#x}");
    let (mut minor, mut supported) = (0u16, true);
    ok!((s.api.hsa_system_major_extension_supported)(
        0x201,
        1,
        &mut minor,
        &mut supported
    ));
    check!(!supported, "the loader extension is still reported");
    let kernel = load_kernel(&s)?;
    check!(
        host_readable(kernel.object, 64)?,
        "kernel object unreadable"
    );
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

static FIRED: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn count_firing(_value: i64, _arg: *mut c_void) -> bool {
    FIRED.fetch_add(1, Ordering::SeqCst);
    false
}

/// `[faults] async_handler_fail_calls = [2]`, `dispatch_time_fail_calls = [1]`,
/// `copy_time_fail_calls = [1]`: exactly those calls fail, the others work.
fn case_injected_failures() -> Result<(), String> {
    let s = setup()?;
    let mut statuses = Vec::new();
    let mut signals = Vec::new();
    for _ in 0..3 {
        let signal = new_signal(&s, 1)?;
        // SAFETY: a live signal and a handler that only counts.
        statuses.push(unsafe {
            (s.api.hsa_amd_signal_async_handler)(signal, 2, 1, count_firing, std::ptr::null_mut())
        });
        signals.push(signal);
    }
    check!(
        statuses == [0, 0x1000, 0],
        "handler registrations {statuses:x?}"
    );
    for &signal in &signals {
        // SAFETY: a live signal.
        unsafe { (s.api.hsa_signal_store_screlease)(signal, 0) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while FIRED.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    let fired = FIRED.load(Ordering::SeqCst);
    check!(
        fired == 2,
        "{fired} handlers ran, expected the 2 registered"
    );

    let mut time = ProfilingTime::default();
    // SAFETY: a live signal and a writable time.
    let first =
        unsafe { (s.api.hsa_amd_profiling_get_dispatch_time)(s.gpu, signals[0], &mut time) };
    // SAFETY: as above.
    let second =
        unsafe { (s.api.hsa_amd_profiling_get_dispatch_time)(s.gpu, signals[0], &mut time) };
    check!(
        (first, second) == (0x1000, 0),
        "dispatch times {first:#x}, {second:#x}"
    );
    // SAFETY: as above.
    let first = unsafe { (s.api.hsa_amd_profiling_get_async_copy_time)(signals[1], &mut time) };
    // SAFETY: as above.
    let second = unsafe { (s.api.hsa_amd_profiling_get_async_copy_time)(signals[1], &mut time) };
    check!(
        (first, second) == (0x1000, 0),
        "copy times {first:#x}, {second:#x}"
    );
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

/// `hsa_init` must return `EXPECT_INIT` (decimal).
fn case_init_status() -> Result<(), String> {
    let expected: u32 = std::env::var("EXPECT_INIT")
        .map_err(|_| "EXPECT_INIT unset")?
        .parse()
        .map_err(|e| format!("EXPECT_INIT: {e}"))?;
    let (_lib, api) = open_runtime()?;
    // SAFETY: no arguments.
    let status = unsafe { (api.hsa_init)() };
    check!(
        status == expected,
        "hsa_init returned {status:#x}, expected {expected:#x}"
    );
    if status == 0 {
        let mut agents: Vec<Handle> = Vec::new();
        ok!((api.hsa_iterate_agents)(
            collect_handle,
            (&raw mut agents).cast()
        ));
        check!(agents.len() == 2, "{} agents", agents.len());
        ok!((api.hsa_shut_down)());
    }
    Ok(())
}

/// Distinct files named librocdxg* mapped into this process.
fn rocdxg_copies() -> Result<usize, String> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| e.to_string())?;
    let mut files = std::collections::BTreeSet::new();
    for line in maps.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 6 {
            let file = Path::new(cols[5])
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or("");
            if file.starts_with("librocdxg") {
                files.insert((cols[3].to_owned(), cols[4].to_owned()));
            }
        }
    }
    Ok(files.len())
}

fn case_copies() -> Result<(), String> {
    let expected: usize = std::env::var("EXPECT_COPIES")
        .map_err(|_| "EXPECT_COPIES unset")?
        .parse()
        .map_err(|e| format!("EXPECT_COPIES: {e}"))?;
    let (_lib, api) = open_runtime()?;
    ok!((api.hsa_init)());
    let copies = rocdxg_copies()?;
    check!(
        copies == expected,
        "{copies} copies of librocdxg mapped, expected {expected}"
    );
    ok!((api.hsa_shut_down)());
    Ok(())
}

/// `HsaClockCounters`: GPU ticks, CPU ns, system ns, system frequency.
type ClockCounters = unsafe extern "C" fn(u32, *mut [u64; 4]) -> i32;

/// One (GPU tick, CLOCK_MONOTONIC ns) pair from the thunk the runtime loaded.
fn clock_pair(counters: ClockCounters) -> Result<(u64, u64), String> {
    let mut out = [0u64; 4];
    // SAFETY: the documented export; `out` is a writable 32-byte HsaClockCounters.
    let status = unsafe { counters(1, &mut out) };
    check!(status == 0, "hsaKmtGetClockCounters(1) = {status}");
    Ok((out[0], out[2]))
}

fn to_system(s: &Setup, tick: u64) -> Result<u64, String> {
    let mut ns = 0u64;
    ok!((s.api.hsa_amd_profiling_convert_tick_to_system_domain)(
        s.gpu, tick, &mut ns
    ));
    Ok(ns)
}

/// The seed's timestamp figures: HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY reports 1 GHz, the
/// converted timeline measures 999.9978 MHz against CLOCK_MONOTONIC (the GPU clock's −2.2 ppm
/// between recalibrations) and agrees with it within 175 ns; an unconverted or wrongly scaled
/// GPU timestamp falls outside its host interval.
fn case_clock_calibration() -> Result<(), String> {
    let s = setup()?;
    let mut frequency = 0u64;
    ok!((s.api.hsa_system_get_info)(3, (&raw mut frequency).cast()));
    check!(
        frequency == 1_000_000_000,
        "system timestamp frequency {frequency}"
    );
    let mut agent_hz = 0u64;
    ok!((s.api.hsa_agent_get_info)(
        s.gpu,
        0xA016,
        (&raw mut agent_hz).cast()
    ));
    check!(
        agent_hz == 100_000_000,
        "agent timestamp frequency {agent_hz}"
    );
    let thunk = Library::open("librocdxg.so")?;
    // SAFETY: hsaKmtGetClockCounters has this signature (docs/SIMULATOR.md).
    let counters = unsafe { thunk.function::<ClockCounters>("hsaKmtGetClockCounters") }?;

    // Frequency: one window inside a recalibration period (62.5 ms). Sleeping past a period
    // first makes the window's first conversion recalibrate, so none happens inside it.
    std::thread::sleep(std::time::Duration::from_millis(70));
    let (g0, c0) = clock_pair(counters)?;
    let s0 = to_system(&s, g0)?;
    std::thread::sleep(std::time::Duration::from_millis(40));
    let (g1, c1) = clock_pair(counters)?;
    let s1 = to_system(&s, g1)?;
    let host = (c1 - c0) as f64;
    let measured_mhz = (s1 - s0) as f64 / host * 1000.0;
    let raw_mhz = (g1 - g0) as f64 * 10.0 / host * 1000.0;
    // Each end is exact to a 10 ns tick (plus the fitted offset's residue, below a tick): ±20
    // ns over ≥ 40 ms is ±0.5 ppm, so ±0.6 ppm (±0.0006 MHz) around −2.2 ppm, which excludes
    // an undrifted 1 GHz (2.2 ppm away).
    let within = (measured_mhz - 999.9978).abs() <= 0.0006;
    check!(
        within,
        "the system timeline measures {measured_mhz:.5} MHz over {host} ns, expected 999.9978"
    );

    // Agreement over 1.5 s of conversions 5 ms apart (24 recalibration periods): a pair's
    // CLOCK_MONOTONIC lies in its tick, so |converted − monotonic| bounds the error + 10 ns.
    let mut worst = 0u64;
    let start = monotonic_ns();
    while monotonic_ns() - start < 1_500_000_000 {
        let (g, c) = clock_pair(counters)?;
        worst = worst.max(to_system(&s, g)?.abs_diff(c));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    check!(
        worst <= 175,
        "converted timestamps are up to {worst} ns from CLOCK_MONOTONIC"
    );

    // Containment of one copy, and how it breaks without (or with a wrong) conversion.
    const BYTES: usize = 1 << 20;
    ok!((s.api.hsa_amd_profiling_async_copy_enable)(true));
    let host_buffer: *mut u8 = alloc(&s, s.host_pool, BYTES)?;
    let device: *mut u8 = alloc(&s, s.device_pool, BYTES)?;
    ok!((s.api.hsa_amd_agents_allow_access)(
        1,
        &s.gpu,
        std::ptr::null(),
        host_buffer.cast()
    ));
    let (anchor_tick, anchor_ns) = clock_pair(counters)?;
    std::thread::sleep(std::time::Duration::from_millis(20));
    let signal = new_signal(&s, 1)?;
    let before = monotonic_ns();
    ok!((s.api.hsa_amd_memory_async_copy)(
        device.cast(),
        s.gpu,
        host_buffer.cast(),
        s.cpu,
        BYTES,
        0,
        std::ptr::null(),
        signal
    ));
    wait_zero(&s, signal)?;
    let after = monotonic_ns();
    let mut time = ProfilingTime::default();
    ok!((s.api.hsa_amd_profiling_get_async_copy_time)(
        signal, &mut time
    ));
    // SAFETY: the signal handle is the address of its 64-byte amd_signal_t.
    let (start_tick, end_tick) = unsafe {
        (
            ((signal.handle + 32) as *const u64).read_volatile(),
            ((signal.handle + 40) as *const u64).read_volatile(),
        )
    };
    let inside = |start: u64, end: u64| before <= start && start <= end && end <= after;
    check!(
        inside(time.start, time.end),
        "converted copy [{}, {}] outside [{before}, {after}]",
        time.start,
        time.end
    );
    let anchored = |tick: u64, ns_per_tick: u64| anchor_ns + (tick - anchor_tick) * ns_per_tick;
    for (what, start, end) in [
        ("unconverted ticks", start_tick, end_tick),
        ("ticks × 10 ns, no offset", start_tick * 10, end_tick * 10),
        (
            "ticks as 1 GHz",
            anchored(start_tick, 1),
            anchored(end_tick, 1),
        ),
        (
            "ticks as 10 MHz",
            anchored(start_tick, 100),
            anchored(end_tick, 100),
        ),
    ] {
        check!(
            !inside(start, end),
            "{what}: [{start}, {end}] is inside [{before}, {after}]: containment would not catch it"
        );
    }
    ok!((s.api.hsa_signal_destroy)(signal));

    if let Ok(path) = std::env::var("HSA_RT_CLOCK_REPORT") {
        let report = format!(
            "measured {measured_mhz:.5} MHz (raw GPU clock ×10: {raw_mhz:.5} MHz) over {host} ns; \
             worst agreement {worst} ns\n"
        );
        std::fs::write(path, report).map_err(|e| e.to_string())?;
    }
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

static QUEUE_ERROR: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn on_queue_error(status: Status, _queue: *mut HsaQueue, _data: *mut c_void) {
    QUEUE_ERROR.store(status, Ordering::SeqCst);
}

/// A PM4-IB vendor packet whose IB holds `ib`.
fn pm4_packet(ib: &[u32], completion: Handle) -> [u8; 64] {
    let mut packet = [0u8; 64];
    packet[0..2].copy_from_slice(&0u16.to_le_bytes()); // VENDOR_SPECIFIC, no fences
    packet[2..4].copy_from_slice(&1u16.to_le_bytes()); // AMD_AQL_FORMAT_PM4_IB
    let address = ib.as_ptr() as u64;
    let dwords = [
        0xC002_3F00u32,
        (address as u32) & !3,
        ((address >> 32) as u32) & 0xFFFF,
        (ib.len() as u32 & 0xF_FFFF) | (1 << 23),
        0xA,
    ];
    for (i, dw) in dwords.iter().enumerate() {
        packet[4 + 4 * i..8 + 4 * i].copy_from_slice(&dw.to_le_bytes());
    }
    packet[56..64].copy_from_slice(&completion.handle.to_le_bytes());
    packet
}

/// (e)/(f): submits a WRITE_DATA IB (or an oversized one) and checks the outcome the env asks
/// for: EXPECT_WRITE=1 (value written) / 0 (unchanged), EXPECT_ERROR=<status> (error callback).
fn case_vendor_packet() -> Result<(), String> {
    let s = setup()?;
    let mut queue: *mut HsaQueue = std::ptr::null_mut();
    ok!((s.api.hsa_queue_create)(
        s.gpu,
        64,
        0,
        Some(on_queue_error),
        std::ptr::null_mut(),
        0,
        0,
        &mut queue
    ));
    let target: *mut u32 = alloc(&s, s.host_pool, 1)?;
    // SAFETY: one u32.
    unsafe { target.write_volatile(0xDEAD_BEEF) };
    let oversized = std::env::var("OVERSIZED").is_ok();
    let ib: Vec<u32> = if oversized {
        vec![0xC03F_FF00; 600] // 600 one-dword NOPs: more than a 512-dword frame
    } else {
        let address = target as u64;
        vec![
            0xC003_3700,          // PACKET3(WRITE_DATA, 3)
            (5 << 8) | (1 << 20), // DST_SEL memory, WR_CONFIRM
            address as u32,
            (address >> 32) as u32,
            0x1234_5678,
            0xC03F_FF00, // NOP pad (odd data count)
        ]
    };
    let signal = new_signal(&s, 1)?;
    submit(&s, queue, &pm4_packet(&ib, signal))?;
    wait_zero(&s, signal)?;
    // SAFETY: one u32.
    let value = unsafe { target.read_volatile() };
    match std::env::var("EXPECT_WRITE").as_deref() {
        Ok("1") => check!(
            value == 0x1234_5678,
            "target is {value:#x}, expected the written value"
        ),
        Ok("0") => check!(
            value == 0xDEAD_BEEF,
            "target is {value:#x}, expected it unchanged"
        ),
        _ => {}
    }
    let error = QUEUE_ERROR.load(Ordering::SeqCst);
    let expected_error: u32 = std::env::var("EXPECT_ERROR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    check!(
        error == expected_error,
        "queue error callback got {error:#x}, expected {expected_error:#x}"
    );
    ok!((s.api.hsa_queue_destroy)(queue));
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

// ---------------------------------------------------------------- loaded code objects

/// The AMD loader extension's 1.03 table.
fn loader_table_103(s: &Setup) -> Result<LoaderTable103, String> {
    let mut table = LoaderTable103 {
        query_host_address: None,
        query_segment_descriptors: std::ptr::null(),
        query_executable: std::ptr::null(),
        executable_iterate_loaded_code_objects: None,
        loaded_code_object_get_info: None,
        code_object_reader_create_from_file_with_offset_size: std::ptr::null(),
        iterate_executables: std::ptr::null(),
    };
    ok!((s.api.hsa_system_get_major_extension_table)(
        0x201,
        1,
        size_of::<LoaderTable103>(),
        (&raw mut table).cast()
    ));
    Ok(table)
}

/// Collects loaded code objects; stops (with INFO_BREAK) after `stop_after` when non-zero.
struct Walk {
    executable: Handle,
    found: Vec<Handle>,
    stop_after: usize,
}

unsafe extern "C" fn collect_loaded(
    executable: Handle,
    loaded: Handle,
    data: *mut c_void,
) -> Status {
    // SAFETY: `data` is the test's Walk.
    let walk = unsafe { &mut *data.cast::<Walk>() };
    if executable != walk.executable {
        return 0x1011;
    }
    walk.found.push(loaded);
    if walk.stop_after != 0 && walk.found.len() >= walk.stop_after {
        1 // HSA_STATUS_INFO_BREAK
    } else {
        0
    }
}

/// What the loader says of one loaded code object.
struct LoadedInfo {
    load_base: u64,
    load_size: u64,
}

fn loaded_u64(get: LoadedGetInfo, loaded: Handle, attribute: u32) -> Result<u64, String> {
    let mut value = 0u64;
    ok!(get(loaded, attribute, (&raw mut value).cast()));
    Ok(value)
}

fn loaded_u32(get: LoadedGetInfo, loaded: Handle, attribute: u32) -> Result<u32, String> {
    let mut value = 0u32;
    ok!(get(loaded, attribute, (&raw mut value).cast()));
    Ok(value)
}

/// Iterates `kernel`'s executable and checks every attribute of its one loaded code object;
/// `device`: the image is in the unreadable device range.
fn check_loaded(s: &Setup, kernel: &Kernel, device: bool) -> Result<LoadedInfo, String> {
    let table = loader_table_103(s)?;
    let iterate = table
        .executable_iterate_loaded_code_objects
        .ok_or("no executable_iterate_loaded_code_objects")?;
    let get = table
        .loaded_code_object_get_info
        .ok_or("no loaded_code_object_get_info")?;
    let mut walk = Walk {
        executable: kernel.executable,
        found: Vec::new(),
        stop_after: 0,
    };
    ok!(iterate(
        kernel.executable,
        Some(collect_loaded),
        (&raw mut walk).cast()
    ));
    check!(
        walk.found == [kernel.loaded],
        "iterated {:?}, loaded {:?}",
        walk.found,
        kernel.loaded
    );
    walk.found.clear();
    walk.stop_after = 1;
    // SAFETY: a valid executable and callback.
    let status = unsafe {
        iterate(
            kernel.executable,
            Some(collect_loaded),
            (&raw mut walk).cast(),
        )
    };
    check!(
        status == 1,
        "a callback's INFO_BREAK is returned, got {status:#x}"
    );
    // SAFETY: a null callback is a documented input.
    let status = unsafe { iterate(kernel.executable, None, std::ptr::null_mut()) };
    check!(status == 0x1001, "null callback -> {status:#x}");
    // SAFETY: an unknown executable handle.
    let status = unsafe {
        iterate(
            Handle { handle: 8 },
            Some(collect_loaded),
            (&raw mut walk).cast(),
        )
    };
    check!(status == 0x1011, "unknown executable -> {status:#x}");

    let loaded = kernel.loaded;
    let mut executable = Handle::default();
    ok!(get(loaded, 0, (&raw mut executable).cast()));
    check!(executable == kernel.executable, "EXECUTABLE {executable:?}");
    check!(loaded_u32(get, loaded, 1)? == 2, "KIND is not AGENT");
    let mut agent = Handle::default();
    ok!(get(loaded, 2, (&raw mut agent).cast()));
    check!(agent == s.gpu, "AGENT {agent:?}");
    check!(loaded_u32(get, loaded, 3)? == 2, "storage is not MEMORY");
    let storage_base = loaded_u64(get, loaded, 4)?;
    let storage_size = loaded_u64(get, loaded, 5)?;
    check!(
        storage_size == kernel.bytes.len() as u64 && storage_base != 0,
        "storage {storage_base:#x} + {storage_size}"
    );
    // SAFETY: the runtime keeps the storage alive while the executable is loaded.
    let storage =
        unsafe { std::slice::from_raw_parts(storage_base as *const u8, storage_size as usize) };
    check!(
        storage == kernel.bytes,
        "the storage is not the code object handed to the loader"
    );
    let mut fd = 0i32;
    // SAFETY: an int-sized attribute.
    let status = unsafe { get(loaded, 6, (&raw mut fd).cast()) };
    check!(
        status == 0x1001,
        "STORAGE_FILE of memory storage -> {status:#x}"
    );
    let load_base = loaded_u64(get, loaded, 8)?;
    let load_size = loaded_u64(get, loaded, 9)?;
    let delta = loaded_u64(get, loaded, 7)?;
    check!(
        delta == load_base,
        "LOAD_DELTA {delta:#x}, LOAD_BASE {load_base:#x}"
    );
    check!(load_size == storage_size, "LOAD_SIZE {load_size}");
    let range = load_base..load_base + load_size;
    check!(
        range.contains(&kernel.object) && range.contains(&(kernel.object + 63)),
        "kernel object {:#x} outside {range:x?}",
        kernel.object
    );
    // The descriptor through the loader's host view: its entry offset leads to the code, in the
    // image too.
    let query = table.query_host_address.ok_or("no query_host_address")?;
    let mut host: *const c_void = std::ptr::null();
    ok!(query(kernel.object as *const c_void, &mut host));
    // SAFETY: the host copy of the 64-byte descriptor.
    let entry = unsafe { (host.cast::<u8>().add(16) as *const i64).read_unaligned() };
    let code = kernel.object.wrapping_add_signed(entry);
    check!(range.contains(&code), "code {code:#x} outside {range:x?}");
    let mut image: *const c_void = std::ptr::null();
    ok!(query(load_base as *const c_void, &mut image));
    // SAFETY: the host copy of the whole image.
    let image_bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), load_size as usize) };
    check!(
        image_bytes == kernel.bytes,
        "the image is not the code object"
    );
    check!(
        host as u64 == image as u64 + (kernel.object - load_base),
        "descriptor host copy {host:?} is not inside the image's {image:?}"
    );
    check!(
        host_readable(load_base, 64)? != device,
        "image at {load_base:#x} readable: {}",
        !device
    );
    if !device {
        check!(
            image as u64 == load_base,
            "an APU's image is its own host copy"
        );
    }
    let uri_length = loaded_u32(get, loaded, 10)?;
    let mut uri = vec![0x55u8; uri_length as usize + 1];
    ok!(get(loaded, 11, uri.as_mut_ptr().cast()));
    check!(
        uri[uri_length as usize] == 0x55,
        "URI wrote past URI_LENGTH"
    );
    let expected = format!(
        "memory://{}#offset=0x{storage_base:x}&size={storage_size}",
        std::process::id()
    );
    check!(
        uri[..uri_length as usize] == *expected.as_bytes(),
        "URI {:?}, expected {expected:?}",
        String::from_utf8_lossy(&uri[..uri_length as usize])
    );
    // SAFETY: an unknown handle; a null value; an unknown attribute.
    let unknown = unsafe { get(Handle { handle: 8 }, 8, (&raw mut fd).cast()) };
    check!(
        unknown == 0x1010,
        "unknown loaded code object -> {unknown:#x}"
    );
    // SAFETY: as above.
    let null = unsafe { get(loaded, 8, std::ptr::null_mut()) };
    check!(null == 0x1001, "null value -> {null:#x}");
    // SAFETY: as above.
    let other = unsafe { get(loaded, 99, (&raw mut fd).cast()) };
    check!(other == 0x1001, "attribute 99 -> {other:#x}");
    Ok(LoadedInfo {
        load_base,
        load_size,
    })
}

/// The loader's loaded-code-object queries on the host (or, with `[faults]
/// device_code_objects`, the device) image.
fn case_loaded_code_objects() -> Result<(), String> {
    let s = setup()?;
    let device = std::env::var("DEVICE").is_ok();
    let kernel = load_kernel_unread(&s)?;
    check_loaded(&s, &kernel, device)?;
    // A second load into another executable is another loaded code object and image.
    let other = load_kernel_unread(&s)?;
    check!(other.loaded != kernel.loaded, "one handle for two loads");
    let second = check_loaded(&s, &other, device)?;
    ok!((s.api.hsa_executable_destroy)(kernel.executable));
    let table = loader_table_103(&s)?;
    let get = table.loaded_code_object_get_info.ok_or("no get_info")?;
    let mut base = 0u64;
    // SAFETY: a destroyed executable's loaded code object.
    let status = unsafe { get(kernel.loaded, 8, (&raw mut base).cast()) };
    check!(
        status == 0x1010,
        "destroyed loaded code object -> {status:#x}"
    );
    let query = table.query_host_address.ok_or("no query_host_address")?;
    let mut host: *const c_void = std::ptr::null();
    // SAFETY: valid pointers.
    let status = unsafe { query(kernel.object as *const c_void, &mut host) };
    check!(status == 0x1001, "a destroyed kernel object -> {status:#x}");
    ok!(query(second.load_base as *const c_void, &mut host));
    check!(second.load_size > 0, "second image");
    ok!((s.api.hsa_executable_destroy)(other.executable));
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

// ---------------------------------------------------------------- thread trace

const GRBM_GFX_INDEX: u32 = 0xC200;
const SQTT_BUF0_BASE: u32 = 0xD9E8;
const SQTT_BUF0_SIZE: u32 = 0xD9E9;
const SQTT_CTRL: u32 = 0xD9EC;
const SQTT_MASK: u32 = 0xD9ED;
const SQTT_TOKEN_MASK: u32 = 0xD9EE;
const SQTT_WPTR: u32 = 0xD9EF;
const SQTT_STATUS: u32 = 0xD9F4;
const SQTT_DROPPED_CNTR: u32 = 0xD9FA;
const SQTT_USERDATA_2: u32 = 0xC342;
const COMPUTE_THREAD_TRACE_ENABLE: u32 = 0x2E1E;

fn uconfig(ib: &mut Vec<u32>, register: u32, value: u32) {
    ib.extend_from_slice(&[0xC001_7900, register - 0xC000, value]);
}

fn sh(ib: &mut Vec<u32>, register: u32, value: u32) {
    ib.extend_from_slice(&[0xC001_7600, register - 0x2C00, value]);
}

/// The begin buffer pmc-dxg's `sqtt::build_trace` makes for one engine traced in detail on
/// WGP 1, SIMD 3, its buffer at `data` (`bytes`), with one marker for the code object.
fn trace_begin(data: u64, bytes: u64, marker: (u64, u64)) -> Vec<u32> {
    let mut ib = Vec::new();
    uconfig(&mut ib, GRBM_GFX_INDEX, 0xE000_0000);
    uconfig(&mut ib, SQTT_STATUS, 0);
    uconfig(&mut ib, GRBM_GFX_INDEX, 1 << 30);
    uconfig(
        &mut ib,
        SQTT_BUF0_SIZE,
        (((bytes >> 12) as u32) << 8) | ((data >> 44) as u32 & 0xF),
    );
    uconfig(&mut ib, SQTT_BUF0_BASE, (data >> 12) as u32);
    uconfig(&mut ib, SQTT_MASK, 3 | (1 << 4) | (1 << 16) | (1 << 17));
    let kept = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8);
    uconfig(
        &mut ib,
        SQTT_TOKEN_MASK,
        (0x7FF & !kept) | (1 << 16) | (3 << 26),
    );
    uconfig(
        &mut ib,
        SQTT_CTRL,
        1 | (5 << 6) | (1 << 11) | (1 << 12) | (1 << 13) | (2 << 16) | (1 << 29),
    );
    sh(&mut ib, COMPUTE_THREAD_TRACE_ENABLE, 1);
    uconfig(&mut ib, GRBM_GFX_INDEX, 0xE000_0000);
    ib.extend_from_slice(&[0xC000_4600, 0x407]);
    let (addr, size) = marker;
    let words = [
        0x434F_5200,
        524_801,
        4,
        addr as u32,
        0x104,
        (addr >> 32) as u32,
        0x204,
        size as u32,
        0x304,
        (size >> 32) as u32,
        0x604,
        2 | (1 << 2),
    ];
    for word in words {
        uconfig(&mut ib, SQTT_USERDATA_2, word);
    }
    ib
}

/// pmc-dxg's end buffer for one engine, its control record at `control`.
fn trace_end(control: u64) -> Vec<u32> {
    let mut ib = Vec::new();
    uconfig(&mut ib, GRBM_GFX_INDEX, 0xE000_0000);
    ib.extend_from_slice(&[0xC000_4600, 0x407]);
    sh(&mut ib, COMPUTE_THREAD_TRACE_ENABLE, 0);
    uconfig(&mut ib, GRBM_GFX_INDEX, 1 << 30);
    let wait = |ib: &mut Vec<u32>, mask: u32| {
        ib.extend_from_slice(&[0xC005_3C00, 3, SQTT_STATUS, 0, 0, mask, 4]);
    };
    wait(&mut ib, 0xFFF);
    uconfig(&mut ib, SQTT_CTRL, 0);
    wait(&mut ib, 1 << 25);
    for (i, register) in [SQTT_STATUS, SQTT_DROPPED_CNTR, SQTT_WPTR]
        .into_iter()
        .enumerate()
    {
        let to = control + 4 * i as u64;
        ib.extend_from_slice(&[
            0xC004_4000,
            0x200,
            register,
            0,
            to as u32,
            (to >> 32) as u32,
        ]);
    }
    uconfig(&mut ib, GRBM_GFX_INDEX, 0xE000_0000);
    ib
}

/// Thread trace through the runtime: begin (PM4-IB), the vector-add dispatch, end; the engine's
/// stream names the kernel's code through the loaded code object's addresses.
fn case_thread_trace() -> Result<(), String> {
    use wslsim_sqtt::Token;
    let s = setup()?;
    let kernel = load_kernel(&s)?;
    let loaded = check_loaded(&s, &kernel, false)?;
    let mut queue: *mut HsaQueue = std::ptr::null_mut();
    ok!((s.api.hsa_queue_create)(
        s.gpu,
        64,
        0,
        Some(on_queue_error),
        std::ptr::null_mut(),
        0,
        0,
        &mut queue
    ));
    ok!((s.api.hsa_amd_profiling_set_profiler_enabled)(queue, 1));
    const BYTES: u64 = 1 << 20;
    let data: *mut u8 = alloc(&s, s.host_pool, BYTES as usize)?;
    check!(
        (data as u64).is_multiple_of(4096),
        "trace buffer {data:?} not 4 KiB aligned"
    );
    let control: *mut u32 = alloc(&s, s.host_pool, 8)?;
    let begin = trace_begin(data as u64, BYTES, (loaded.load_base, loaded.load_size));
    let signal = new_signal(&s, 1)?;
    submit(&s, queue, &pm4_packet(&begin, signal))?;
    wait_zero(&s, signal)?;
    run_dispatches(&s, queue, &kernel, 1)?;
    let end = trace_end(control as u64);
    let signal = new_signal(&s, 1)?;
    submit(&s, queue, &pm4_packet(&end, signal))?;
    wait_zero(&s, signal)?;
    check!(QUEUE_ERROR.load(Ordering::SeqCst) == 0, "queue error");
    // SAFETY: the control record's three dwords.
    let (status, dropped, wptr) =
        unsafe { (control.read(), control.add(1).read(), control.add(2).read()) };
    check!(
        status == 0 && dropped == 0,
        "status {status:#x} dropped {dropped}"
    );
    let units = wptr.wrapping_sub((data as u64 / 32) as u32) & 0x1FFF_FFFF;
    // SAFETY: the runtime's trace buffer, `units` × 32 bytes written.
    let bytes = unsafe { std::slice::from_raw_parts(data, units as usize * 32) };
    let stream = wslsim_sqtt::parse(bytes).map_err(|e| e.to_string())?;
    // SAFETY: the host copy of the descriptor (APU: the kernel object itself).
    let entry = unsafe { ((kernel.object + 16) as *const i64).read() };
    let code = kernel.object.wrapping_add_signed(entry);
    let program = wslsim_codeobj::program(4, 8);
    let mut starts = 0;
    let mut pcs = Vec::new();
    for token in &stream.tokens {
        match *token {
            Token::WaveStart { entry_pc, .. } => {
                check!(
                    entry_pc == code,
                    "entry pc {entry_pc:#x}, code at {code:#x}"
                );
                starts += 1;
            }
            Token::Instruction { inst, .. } => pcs.push(inst.pc),
            _ => {}
        }
    }
    // 4096 work-items in 256-item workgroups: 16 workgroups of 8 waves on the 890M's 8 WGPs;
    // WGP 1 (SA 0) gets workgroups 2 and 10, SIMD 3 their waves 3 and 7.
    check!(starts == 128, "{starts} waves");
    check!(
        pcs.len() == 4 * program.len(),
        "{} instructions traced",
        pcs.len()
    );
    for (i, pc) in pcs.iter().enumerate() {
        let expected = code + program[i % program.len()].offset;
        check!(*pc == expected, "pc {pc:#x}, expected {expected:#x}");
        check!(
            (loaded.load_base..loaded.load_base + loaded.load_size).contains(pc),
            "pc {pc:#x} outside the loaded code object"
        );
    }
    ok!((s.api.hsa_queue_destroy)(queue));
    ok!((s.api.hsa_executable_destroy)(kernel.executable));
    ok!((s.api.hsa_shut_down)());
    Ok(())
}

// ---------------------------------------------------------------- the parent

struct Case {
    name: &'static str,
    child: &'static str,
    scenario: Option<&'static str>,
    env: &'static [(&'static str, &'static str)],
    /// Needs librocprofiler-register.so.0 staged and the mini tool preloaded; the tool log
    /// must hold exactly this many `set_api_table hsa 1` lines.
    tool_calls: Option<usize>,
    /// Preload: "staged" (absolute path of the staged librocdxg.so.1.2.0), "copy" (absolute
    /// path of a copy elsewhere), "bare" (librocdxg.so).
    preload: Option<&'static str>,
    /// A stderr line expected exactly once (otherwise stderr must not mention the simulator).
    stderr: Option<&'static str>,
    /// Substrings one `hsa hsa_init ...` line of the call log must contain.
    init_log: &'static [&'static str],
}

const STOCK_72: &str = "[runtime]\ngeneration = \"stock-7.2\"\n";
const CURRENT: &str = "[runtime]\ngeneration = \"current\"\n";
const NO_REGISTER: &str = "[runtime]\nregister_on_dxg = false\n";
const DEVICE_CODE: &str = "[faults]\ndevice_code_objects = true\n";
const NO_LOADER: &str = "[faults]\nloader_extension = false\n";
const INJECTED: &str = "[faults]\nasync_handler_fail_calls = [2]\ndispatch_time_fail_calls = [1]\ncopy_time_fail_calls = [1]\n";

const fn case(name: &'static str, child: &'static str) -> Case {
    Case {
        name,
        child,
        scenario: None,
        env: &[],
        tool_calls: None,
        preload: None,
        stderr: None,
        init_log: &[],
    }
}

fn cases() -> Vec<Case> {
    vec![
        case("main-flow", "main"),
        case("clock-calibration-reproduces-the-seed", "clock"),
        Case {
            scenario: Some(DEVICE_CODE),
            ..case("device-code-objects-through-the-loader", "device-code")
        },
        Case {
            scenario: Some(NO_LOADER),
            ..case("no-loader-extension", "no-loader")
        },
        case("loaded-code-objects", "loaded"),
        case(
            "intercept-queues-process-on-the-storing-thread",
            "intercept",
        ),
        Case {
            scenario: Some(DEVICE_CODE),
            env: &[("DEVICE", "1")],
            ..case("loaded-code-objects-on-the-device", "loaded")
        },
        Case {
            env: &[("WSLKMT_VENDOR_PACKET", "1")],
            ..case("thread-trace-names-the-loaded-code", "trace")
        },
        Case {
            scenario: Some(INJECTED),
            ..case("injected-failures-hit-only-their-calls", "injected")
        },
        Case {
            scenario: Some(STOCK_72),
            env: &[("EXPECT_INIT", "4104")],
            init_log: &["hsa hsa_init dxg=off thunk=none agents=0 register=skipped -> 4104"],
            ..case("dxg-stock72-unset-fails", "init")
        },
        Case {
            scenario: Some(STOCK_72),
            env: &[
                ("EXPECT_INIT", "4104"),
                ("HSA_ENABLE_DXG_DETECTION", "true"),
            ],
            ..case("dxg-stock72-true-fails", "init")
        },
        Case {
            scenario: Some(STOCK_72),
            env: &[("EXPECT_INIT", "0"), ("HSA_ENABLE_DXG_DETECTION", "1")],
            ..case("dxg-stock72-one-succeeds", "init")
        },
        Case {
            scenario: Some(CURRENT),
            env: &[("EXPECT_INIT", "4104"), ("HSA_ENABLE_DXG_DETECTION", "0")],
            ..case("dxg-current-zero-fails", "init")
        },
        Case {
            scenario: Some(CURRENT),
            env: &[("EXPECT_INIT", "0")],
            init_log: &[
                "hsa hsa_init dxg=on thunk=/",
                "/sim/lib/librocdxg.so agents=2 register=1 -> 0",
                "-> 0",
            ],
            ..case("dxg-current-unset-succeeds", "init")
        },
        Case {
            env: &[("EXPECT_INIT", "0"), ("HSA_TOOLS_DISABLE_REGISTER", "1")],
            tool_calls: Some(0),
            init_log: &["agents=2 register=skipped -> 0"],
            ..case("register-disabled-by-1", "init")
        },
        Case {
            env: &[("EXPECT_INIT", "0"), ("HSA_TOOLS_DISABLE_REGISTER", "true")],
            tool_calls: Some(1),
            ..case("register-true-registers", "init")
        },
        Case {
            env: &[("EXPECT_INIT", "0"), ("HSA_TOOLS_DISABLE_REGISTER", "01")],
            tool_calls: Some(1),
            ..case("register-01-registers", "init")
        },
        Case {
            env: &[("EXPECT_INIT", "0")],
            tool_calls: Some(1),
            init_log: &["agents=2 register=0 -> 0"],
            ..case("register-unset-registers", "init")
        },
        Case {
            scenario: Some(NO_REGISTER),
            tool_calls: Some(0),
            ..case("register-suppressed-on-dxg-app-runs", "main")
        },
        Case {
            env: &[("EXPECT_COPIES", "2")],
            preload: Some("copy"),
            ..case("preload-by-path-loads-second-copy", "copies")
        },
        Case {
            env: &[("EXPECT_COPIES", "1")],
            preload: Some("staged"),
            ..case("preload-staged-path-same-file", "copies")
        },
        Case {
            env: &[("EXPECT_COPIES", "1")],
            preload: Some("bare"),
            ..case("preload-bare-name-one-copy", "copies")
        },
        Case {
            env: &[("WSLKMT_VENDOR_PACKET", "1"), ("EXPECT_WRITE", "1")],
            ..case("vendor-packet-enabled-writes", "vendor")
        },
        Case {
            env: &[("EXPECT_WRITE", "0")],
            ..case("vendor-packet-unset-dropped", "vendor")
        },
        Case {
            env: &[
                ("WSLKMT_VENDOR_PACKET", "1"),
                ("OVERSIZED", "1"),
                ("EXPECT_ERROR", "4105"),
            ],
            stderr: Some("PM4-IB vendor packet rejected"),
            ..case("vendor-packet-oversized-error", "vendor")
        },
    ]
}

fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let metadata = std::fs::metadata(path).ok()?;
    if metadata.is_dir() {
        std::fs::read_dir(path)
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|entry| newest_mtime(&entry.path()))
            .max()
    } else {
        metadata.modified().ok()
    }
}

fn build_mini_tool(dir: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mini_tool.rs");
    let output = dir.join("libmini_tool.so");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let result = Command::new(rustc)
        .args(["--crate-type", "cdylib", "--edition", "2021", "-O", "-o"])
        .arg(&output)
        .arg(&source)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !result.status.success() {
        return Err(format!(
            "rustc {} failed:\n{}",
            source.display(),
            String::from_utf8_lossy(&result.stderr)
        ));
    }
    Ok(output)
}

fn run_case(
    exe: &Path,
    lib_dir: &Path,
    work: &Path,
    tool: &Result<PathBuf, String>,
    c: &Case,
) -> Result<(), String> {
    let mut command = Command::new(exe);
    command
        .env(CASE_ENV, c.child)
        .env("LD_LIBRARY_PATH", lib_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in [
        "HSA_TOOLS_DISABLE_REGISTER",
        "HSA_ENABLE_DXG_DETECTION",
        "HSA_TOOLS_REPORT_REGISTER_FAILURE",
        "WSLKMT_VENDOR_PACKET",
        "LD_PRELOAD",
        "WSLSIM_SCENARIO",
        "WSLSIM_CALL_LOG",
        "ROCP_TOOL_LIBRARIES",
    ] {
        command.env_remove(name);
    }
    for (name, value) in c.env {
        command.env(name, value);
    }
    if let Some(text) = c.scenario {
        let path = work.join(format!("{}.toml", c.name));
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        command.env("WSLSIM_SCENARIO", path);
    }
    let call_log = work.join(format!("{}.calls", c.name));
    command.env("WSLSIM_CALL_LOG", &call_log);
    let tool_log = work.join(format!("{}.tool", c.name));
    if c.tool_calls.is_some() {
        if !lib_dir.join("librocprofiler-register.so.0").exists() {
            return Err(format!(
                "{} is missing: sim/register must be built and staged (`cargo xtask build`) for the registration cases",
                lib_dir.join("librocprofiler-register.so.0").display()
            ));
        }
        let tool = tool.as_ref().map_err(Clone::clone)?;
        command
            .env("LD_PRELOAD", tool)
            .env("MINI_TOOL_LOG", &tool_log);
    }
    match c.preload {
        Some("staged") => {
            command.env("LD_PRELOAD", lib_dir.join("librocdxg.so.1.2.0"));
        }
        Some("copy") => {
            let other = work.join("matched-build");
            std::fs::create_dir_all(&other).map_err(|e| e.to_string())?;
            let copy = other.join("librocdxg.so.1.2.0");
            std::fs::copy(lib_dir.join("librocdxg.so.1.2.0"), &copy).map_err(|e| e.to_string())?;
            command.env("LD_PRELOAD", copy);
        }
        Some(name) => {
            command.env(
                "LD_PRELOAD",
                if name == "bare" { "librocdxg.so" } else { name },
            );
        }
        None => {}
    }
    let output = command.output().map_err(|e| format!("spawn: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let describe = || {
        format!(
            "--- child stderr ---\n{stderr}--- child stdout ---\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    };
    if !output.status.success() {
        return Err(format!(
            "child exited with {}\n{}",
            output.status,
            describe()
        ));
    }
    match c.stderr {
        Some(line) => {
            let found = stderr.matches(line).count();
            if found != 1 {
                return Err(format!(
                    "stderr has {found} occurrences of {line:?}, expected one\n{}",
                    describe()
                ));
            }
        }
        None => {
            if stderr.contains("libhsa-runtime64 (sim)") || stderr.contains("Cannot load") {
                return Err(format!("unexpected runtime diagnostics\n{}", describe()));
            }
        }
    }
    if !c.init_log.is_empty() {
        let log = std::fs::read_to_string(&call_log).unwrap_or_default();
        let matching = log
            .lines()
            .filter(|l| l.starts_with("hsa hsa_init ") && c.init_log.iter().all(|p| l.contains(p)))
            .count();
        if matching != 1 {
            return Err(format!(
                "the call log has {matching} hsa_init lines containing {:?}, expected one\n--- call log ---\n{log}",
                c.init_log
            ));
        }
    }
    if let Some(expected) = c.tool_calls {
        let log = std::fs::read_to_string(&tool_log).unwrap_or_default();
        let calls = log.lines().filter(|l| *l == "set_api_table hsa 1").count();
        let others = log
            .lines()
            .filter(|l| l.starts_with("set_api_table") && *l != "set_api_table hsa 1")
            .count();
        if calls != expected || others != 0 {
            return Err(format!(
                "the tool saw {calls} HSA registrations (expected {expected}) and {others} others\n--- tool log ---\n{log}{}",
                describe()
            ));
        }
    }
    Ok(())
}

fn parent() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("cannot locate the test executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    // target/<profile>/deps/<test> -> target/<profile>/sim/lib
    let Some(profile) = exe.parent().and_then(Path::parent) else {
        eprintln!("unexpected test executable location {}", exe.display());
        return ExitCode::FAILURE;
    };
    let lib_dir = profile.join("sim").join("lib");
    let runtime = lib_dir.join("libhsa-runtime64.so.1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sources = [
        root.join("sim/hsa/src"),
        root.join("sim/hsa/build.rs"),
        root.join("sim/codeobj/src"),
        root.join("sim/scenario/src"),
    ];
    let staged = std::fs::metadata(&runtime).and_then(|m| m.modified()).ok();
    let newest = sources.iter().filter_map(|s| newest_mtime(s)).max();
    match (staged, newest) {
        (None, _) => {
            eprintln!(
                "error: {} is missing.\nRun `cargo xtask build` first, then run the tests again.",
                runtime.display()
            );
            return ExitCode::FAILURE;
        }
        (Some(staged), Some(newest)) if newest > staged => {
            eprintln!(
                "error: {} is older than its sources, so it would not test them.\nRun `cargo xtask build` first, then run the tests again.",
                runtime.display()
            );
            return ExitCode::FAILURE;
        }
        _ => {}
    }
    let work = std::env::temp_dir().join(format!("sim-hsa-runtime-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("cannot create {}: {e}", work.display());
        return ExitCode::FAILURE;
    }
    let tool = build_mini_tool(&work);
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    println!(
        "\nrunning libhsa-runtime64.so.1 cases against {}",
        lib_dir.display()
    );
    let (mut passed, mut failed) = (0, Vec::new());
    for c in cases() {
        if !filters.is_empty() && !filters.iter().any(|f| c.name.contains(f.as_str())) {
            continue;
        }
        match run_case(&exe, &lib_dir, &work, &tool, &c) {
            Ok(()) => {
                println!("case {} ... ok", c.name);
                passed += 1;
            }
            Err(error) => {
                println!("case {} ... FAILED\n{error}", c.name);
                failed.push(c.name);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    println!("\n{passed} passed, {} failed", failed.len());
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let Ok(case) = std::env::var(CASE_ENV) else {
        return parent();
    };
    let result = match case.as_str() {
        "main" => case_main_flow(),
        "clock" => case_clock_calibration(),
        "init" => case_init_status(),
        "copies" => case_copies(),
        "vendor" => case_vendor_packet(),
        "device-code" => case_device_code_objects(),
        "no-loader" => case_no_loader_extension(),
        "injected" => case_injected_failures(),
        "loaded" => case_loaded_code_objects(),
        "trace" => case_thread_trace(),
        "intercept" => case_intercept(),
        other => Err(format!("unknown case {other}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("case {case} failed: {error}");
            ExitCode::FAILURE
        }
    }
}
