//! Child modes of `tests/workloads.rs`: the test binary re-executes itself with
//! `--child <mode>` and `LD_LIBRARY_PATH` set, and drives `libamdhip64.so.7` directly through
//! entry points the workloads do not use (pinned memory, streams, events, fills, modules,
//! error paths), and the behaviour after the teardown at exit.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use sim_workloads::kernels::{Dim3, VECTOR_ADD};
use sim_workloads::loader::Library;

struct Api {
    lib: Library,
}

static API: OnceLock<Api> = OnceLock::new();

fn api() -> &'static Api {
    API.get_or_init(|| Api {
        lib: Library::open("libamdhip64.so.7").unwrap_or_else(|e| die(&e.to_string())),
    })
}

fn die(message: &str) -> ! {
    println!("child failed: {message}");
    std::process::exit(1)
}

/// Resolves `name` as a function pointer of type `F`.
fn f<F: Copy>(name: &str) -> F {
    let address = api()
        .lib
        .symbol(name)
        .unwrap_or_else(|e| die(&e.to_string()));
    // SAFETY: F is the C signature of the named HIP export (checked by the caller's types).
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) }
}

type Status0 = unsafe extern "C" fn() -> u32;
type StatusP = unsafe extern "C" fn(*mut c_void) -> u32;
type StatusPP = unsafe extern "C" fn(*mut *mut c_void) -> u32;
type MallocFn = unsafe extern "C" fn(*mut *mut c_void, usize) -> u32;
type HostMallocFn = unsafe extern "C" fn(*mut *mut c_void, usize, u32) -> u32;
type MemcpyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, u32) -> u32;
type MemcpyAsyncFn =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, u32, *mut c_void) -> u32;
type MemsetFn = unsafe extern "C" fn(*mut c_void, c_int, usize) -> u32;
type IntOutFn = unsafe extern "C" fn(*mut c_int) -> u32;
type IntFn = unsafe extern "C" fn(c_int) -> u32;
type U32Fn = unsafe extern "C" fn(u32) -> u32;
type RecordFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> u32;
type ElapsedFn = unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> u32;
type LoadDataFn = unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> u32;
type GetFunctionFn = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> u32;
type ModuleLaunchFn = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> u32;
type LaunchFn =
    unsafe extern "C" fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, *mut c_void) -> u32;
type MemInfoFn = unsafe extern "C" fn(*mut usize, *mut usize) -> u32;
type NameFn = unsafe extern "C" fn(u32) -> *const c_char;

/// A `HIP_LAUNCH_PARAM_*` key as the `void*` the `extra` array holds.
fn param(key: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(key)
}

fn expect(what: &str, got: u32, want: u32) {
    if got != want {
        die(&format!("{what}: returned {got}, expected {want}"));
    }
}

fn malloc(n: usize) -> *mut c_void {
    let mut p = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    expect(
        "hipMalloc",
        unsafe { f::<MallocFn>("hipMalloc")(&mut p, n) },
        0,
    );
    p
}

fn memcpy(dst: *mut c_void, src: *const c_void, n: usize, kind: u32) {
    // SAFETY: ranges of `n` bytes owned by the caller.
    expect(
        &format!("hipMemcpy kind {kind}"),
        unsafe { f::<MemcpyFn>("hipMemcpy")(dst, src, n, kind) },
        0,
    );
}

/// Pinned memory, streams, async copies, fills, events, modules, error paths.
pub fn tour() -> i32 {
    // SAFETY: every call below passes valid pointers of the sizes it states, and every
    // function pointer has the C signature of the HIP export it was resolved from.
    unsafe {
        let last: Status0 = f("hipGetLastError");
        let peek: Status0 = f("hipPeekAtLastError");
        expect("hipInit(0)", f::<U32Fn>("hipInit")(0), 0);
        expect("hipInit(1)", f::<U32Fn>("hipInit")(1), 1);
        expect("hipPeekAtLastError", peek(), 1);
        expect("hipGetLastError", last(), 1);
        expect("hipGetLastError after reset", last(), 0);
        expect("hipSetDevice(5)", f::<IntFn>("hipSetDevice")(5), 101);
        let mut device = -1;
        expect(
            "hipGetDevice",
            f::<IntOutFn>("hipGetDevice")(&mut device),
            0,
        );
        if device != 0 {
            die("current device is not 0");
        }
        let (mut rv, mut dv) = (0, 0);
        expect(
            "hipRuntimeGetVersion",
            f::<IntOutFn>("hipRuntimeGetVersion")(&mut rv),
            0,
        );
        expect(
            "hipDriverGetVersion",
            f::<IntOutFn>("hipDriverGetVersion")(&mut dv),
            0,
        );
        if rv != dv || rv < 70_000_000 {
            die(&format!("versions {rv} / {dv}"));
        }
        let name = CStr::from_ptr(f::<NameFn>("hipGetErrorName")(801));
        if name != c"hipErrorNotSupported" {
            die(&format!("hipGetErrorName(801) = {name:?}"));
        }

        // Pageable copies larger than the 1 MiB staging buffer (three chunks and a tail).
        let n = (3 << 20) + 12;
        let d = malloc(n);
        let src: Vec<u8> = (0..n).map(|i| (i * 31 % 253) as u8).collect();
        let mut back = vec![0u8; n];
        memcpy(d, src.as_ptr().cast(), n, 1);
        memcpy(back.as_mut_ptr().cast(), d, n, 2);
        if back != src {
            die("chunked pageable round trip differs");
        }
        // hipMemset through the fill blit kernel.
        expect("hipMemset", f::<MemsetFn>("hipMemset")(d, 0x15A, n), 0);
        memcpy(back.as_mut_ptr().cast(), d, n, 2);
        if back.iter().any(|&b| b != 0x5A) {
            die("hipMemset result differs");
        }
        // Pinned memory and an async copy on a stream, with events around it.
        let (mut h, mut h2, mut stream) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        expect(
            "hipHostMalloc",
            f::<HostMallocFn>("hipHostMalloc")(&mut h, 1 << 20, 0),
            0,
        );
        expect(
            "hipHostMalloc",
            f::<HostMallocFn>("hipHostMalloc")(&mut h2, 1 << 20, 0),
            0,
        );
        expect(
            "hipStreamCreate",
            f::<StatusPP>("hipStreamCreate")(&mut stream),
            0,
        );
        let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
        expect(
            "hipEventCreate",
            f::<StatusPP>("hipEventCreate")(&mut e0),
            0,
        );
        expect(
            "hipEventCreate",
            f::<StatusPP>("hipEventCreate")(&mut e1),
            0,
        );
        std::ptr::copy_nonoverlapping(src.as_ptr(), h.cast::<u8>(), 1 << 20);
        expect(
            "hipEventRecord",
            f::<RecordFn>("hipEventRecord")(e0, stream),
            0,
        );
        let copy_async: MemcpyAsyncFn = f("hipMemcpyAsync");
        expect(
            "hipMemcpyAsync H2D pinned",
            copy_async(d, h, 1 << 20, 1, stream),
            0,
        );
        expect(
            "hipMemcpyAsync D2H pinned",
            copy_async(h2, d, 1 << 20, 2, stream),
            0,
        );
        expect(
            "hipEventRecord",
            f::<RecordFn>("hipEventRecord")(e1, stream),
            0,
        );
        expect(
            "hipStreamSynchronize",
            f::<StatusP>("hipStreamSynchronize")(stream),
            0,
        );
        expect(
            "hipEventSynchronize",
            f::<StatusP>("hipEventSynchronize")(e1),
            0,
        );
        let mut ms = -1f32;
        expect(
            "hipEventElapsedTime",
            f::<ElapsedFn>("hipEventElapsedTime")(&mut ms, e0, e1),
            0,
        );
        if ms.is_nan() || ms < 0.0 {
            die(&format!("elapsed {ms} ms"));
        }
        if std::slice::from_raw_parts(h2.cast::<u8>(), 1 << 20) != &src[..1 << 20] {
            die("pinned async round trip differs");
        }
        expect("hipEventDestroy", f::<StatusP>("hipEventDestroy")(e0), 0);
        expect("hipEventDestroy", f::<StatusP>("hipEventDestroy")(e1), 0);
        expect(
            "hipStreamDestroy",
            f::<StatusP>("hipStreamDestroy")(stream),
            0,
        );
        expect(
            "hipStreamDestroy again",
            f::<StatusP>("hipStreamDestroy")(stream),
            400,
        );

        // A module loaded from an image, launched with kernelParams and with `extra`.
        let mut module = std::ptr::null_mut();
        expect(
            "hipModuleLoadData",
            f::<LoadDataFn>("hipModuleLoadData")(
                &mut module,
                sim_workloads::program::fat_binary(&[&VECTOR_ADD]),
            ),
            0,
        );
        let get: GetFunctionFn = f("hipModuleGetFunction");
        let mut function = std::ptr::null_mut();
        expect(
            "hipModuleGetFunction",
            get(&mut function, module, c"_Z10vector_addPKfS0_Pfm".as_ptr()),
            0,
        );
        expect(
            "hipModuleGetFunction(nope)",
            get(&mut std::ptr::null_mut(), module, c"nope".as_ptr()),
            500,
        );
        let count = 1000usize;
        let bytes = count * 4;
        let a: Vec<f32> = (0..count).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..count).map(|i| (i * 2) as f32).collect();
        let (da, db, dc) = (malloc(bytes), malloc(bytes), malloc(bytes));
        memcpy(da, a.as_ptr().cast(), bytes, 1);
        memcpy(db, b.as_ptr().cast(), bytes, 1);
        let launch: ModuleLaunchFn = f("hipModuleLaunchKernel");
        let (mut pa, mut pb, mut pc, mut pn) = (da, db, dc, count as u64);
        let mut params: [*mut c_void; 4] = [
            (&raw mut pa).cast(),
            (&raw mut pb).cast(),
            (&raw mut pc).cast(),
            (&raw mut pn).cast(),
        ];
        expect(
            "hipModuleLaunchKernel",
            launch(
                function,
                4,
                1,
                1,
                256,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            ),
            0,
        );
        let mut c = vec![0f32; count];
        memcpy(c.as_mut_ptr().cast(), dc, bytes, 2);
        if (0..count).any(|i| c[i] != a[i] + b[i]) {
            die("hipModuleLaunchKernel (kernelParams) result differs");
        }
        // `extra`: the kernarg buffer given whole, with c = a + a this time.
        let mut buffer: [u64; 4] = [da as u64, da as u64, dc as u64, count as u64];
        let mut size = size_of_val(&buffer);
        let mut extra: [*mut c_void; 5] = [
            param(1),
            buffer.as_mut_ptr().cast(),
            param(2),
            (&raw mut size).cast(),
            param(3),
        ];
        expect(
            "hipModuleLaunchKernel extra",
            launch(
                function,
                4,
                1,
                1,
                256,
                1,
                1,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            ),
            0,
        );
        memcpy(c.as_mut_ptr().cast(), dc, bytes, 2);
        if (0..count).any(|i| c[i] != a[i] + a[i]) {
            die("hipModuleLaunchKernel (extra) result differs");
        }
        expect(
            "hipModuleUnload",
            f::<StatusP>("hipModuleUnload")(module),
            0,
        );
        expect(
            "hipModuleUnload again",
            f::<StatusP>("hipModuleUnload")(module),
            400,
        );

        // Error paths and the last error.
        expect(
            "hipFree(bogus)",
            f::<StatusP>("hipFree")(0x1234 as *mut c_void),
            17,
        );
        let stub = 0x4321usize as *const c_void;
        let one = Dim3::x(1);
        expect(
            "hipLaunchKernel(unregistered)",
            f::<LaunchFn>("hipLaunchKernel")(
                stub,
                one,
                one,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            ),
            98,
        );
        expect(
            "hipMemcpy(kind 7)",
            f::<MemcpyFn>("hipMemcpy")(d, src.as_ptr().cast(), 16, 7),
            21,
        );
        expect(
            "hipMemcpy(H2D into host memory)",
            f::<MemcpyFn>("hipMemcpy")(back.as_mut_ptr().cast(), src.as_ptr().cast(), 16, 1),
            1,
        );
        expect("hipGetLastError", last(), 1);
        expect("hipGetLastError after reset", last(), 0);

        let (mut free, mut total) = (0usize, 0usize);
        expect(
            "hipMemGetInfo",
            f::<MemInfoFn>("hipMemGetInfo")(&mut free, &mut total),
            0,
        );
        if total == 0 || free > total {
            die(&format!("hipMemGetInfo free={free} total={total}"));
        }
        expect(
            "hipDeviceSynchronize",
            f::<Status0>("hipDeviceSynchronize")(),
            0,
        );
        for p in [da, db, dc, d] {
            expect("hipFree", f::<StatusP>("hipFree")(p), 0);
        }
        expect("hipHostFree", f::<StatusP>("hipHostFree")(h), 0);
        expect("hipHostFree", f::<StatusP>("hipHostFree")(h2), 0);
        expect("hipDeviceReset", f::<Status0>("hipDeviceReset")(), 0);
    }
    println!("tour ok");
    0
}

extern "C" fn after_exit() {
    // Registered before HIP was loaded, so it runs after HIP's teardown.
    let mut device = -1;
    // SAFETY: valid out-pointer.
    let status = unsafe { f::<IntOutFn>("hipGetDevice")(&mut device) };
    println!("after teardown: hipGetDevice -> {status}");
    // SAFETY: ends the process with the verdict (stdout is flushed by println's line buffer).
    unsafe { libc::_exit(if status == 4 { 0 } else { 1 }) };
}

/// Initialises HIP, returns from main, and calls HIP from an exit handler that runs after the
/// teardown: the call must fail cleanly with `hipErrorDeinitialized`.
pub fn after_teardown() -> i32 {
    // SAFETY: registers a plain extern "C" fn().
    unsafe { libc::atexit(after_exit) };
    // SAFETY: plain call.
    expect("hipSetDevice", unsafe { f::<IntFn>("hipSetDevice")(0) }, 0);
    0
}
