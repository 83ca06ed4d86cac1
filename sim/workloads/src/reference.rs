//! The seed's reference application ("What rocprofv3 collects on WSL2"): eight iterations,
//! each a ROCTx range `iterN` around a 1 MiB host-to-device `hipMemcpy`, a kernel launch
//! (`y = 2x + 1` over 262,144 floats) and a 1 MiB device-to-host `hipMemcpy`, every result
//! verified on the host.
//!
//! HIP calls, in order (52 records through the HIP runtime and compiler tables):
//!
//! | calls | API |
//! |---|---|
//! | 1 | `__hipRegisterFatBinary` (the program's constructor) |
//! | 1 | `__hipRegisterFunction` (`axpb`) |
//! | 1 | `hipGetDeviceCount` (the first runtime call: HIP and HSA initialise here) |
//! | 1 | `hipSetDevice(0)` |
//! | 1 | `hipGetDevicePropertiesR0600` |
//! | 1 | `hipRuntimeGetVersion` |
//! | 2 | `hipMalloc` (x and y, 1 MiB each) |
//! | 8 × 5 | `hipMemcpy` H2D, `__hipPushCallConfiguration`, `__hipPopCallConfiguration`, `hipLaunchKernel`, `hipMemcpy` D2H |
//! | 1 | `hipGetLastError` (after the loop) |
//! | 2 | `hipFree` |
//! | 1 | `__hipUnregisterFatBinary` (at exit) |
//!
//! With [`MESSAGE_ENV`] (`WSLSIM_ROCTX_MESSAGE`) set, every range is pushed with that message
//! instead of `iterN` (its bytes as given, up to a NUL): a test's hostile ROCTx text.
//!
//! There is no `hipDeviceSynchronize`: as in the seed, the blocking device-to-host copy is
//! what synchronises each iteration. The seed's variant ([`run_synchronized`], the
//! `reference-sync` binary) calls `hipDeviceSynchronize` after each launch (8 more records), so
//! each dispatch is contained by its launch-to-synchronize interval.

use std::ffi::{CStr, CString, c_int, c_void};

use crate::kernels::{self, AXPB, Dim3};
use crate::loader::{check, hip, roctx};
use crate::program;

/// Floats per buffer: 1 MiB.
pub const ELEMENTS: usize = 262_144;
/// Bytes per buffer.
pub const BYTES: usize = ELEMENTS * size_of::<f32>();
/// Iterations.
pub const ITERATIONS: u32 = 8;
/// Work-items per workgroup.
pub const WORKGROUP: u32 = 256;

/// The variable whose value, when set, is the message of every ROCTx range (instead of
/// `iterN`).
pub const MESSAGE_ENV: &str = "WSLSIM_ROCTX_MESSAGE";

/// The message of iteration `iter`'s range: `iterN`, or [`MESSAGE_ENV`]'s bytes up to a NUL.
fn range_message(iter: u32) -> CString {
    use std::os::unix::ffi::OsStrExt as _;
    match std::env::var_os(MESSAGE_ENV) {
        Some(m) => {
            let bytes = m.as_bytes();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            CString::new(&bytes[..end]).unwrap_or_default()
        }
        None => CString::new(format!("iter{iter}")).unwrap_or_default(),
    }
}

/// `hipMemcpyHostToDevice` / `hipMemcpyDeviceToHost`.
const H2D: u32 = 1;
const D2H: u32 = 2;

/// Input of iteration `iter`, element `i` (exactly representable, so results compare exactly).
pub fn input(iter: u32, i: usize) -> f32 {
    ((i % 4096) as f32) * 0.25 + iter as f32
}

/// Runs the reference workload. `crash_after`: raise SIGSEGV once that many iterations
/// completed. `label` prefixes the output lines. Returns the process exit code (0 verified, 1
/// wrong result).
pub fn run(label: &str, crash_after: Option<u32>) -> i32 {
    run_with(label, crash_after, false)
}

/// The seed's variant: the reference workload with a `hipDeviceSynchronize` after each
/// `hipLaunchKernel`. Returns the process exit code as [`run`].
pub fn run_synchronized(label: &str) -> i32 {
    run_with(label, None, true)
}

/// The reference workload; `synchronize`: call `hipDeviceSynchronize` after each launch.
fn run_with(label: &str, crash_after: Option<u32>, synchronize: bool) -> i32 {
    crate::loader::load_runtimes();
    program::register(&[&AXPB]);
    let hip = hip();
    let roctx = roctx();

    let mut count: c_int = 0;
    // SAFETY: valid out-pointer.
    check("hipGetDeviceCount", unsafe {
        (hip.get_device_count)(&mut count)
    });
    if count < 1 {
        crate::fail("no HIP device");
    }
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let mut props = vec![0u64; 1472 / 8];
    // SAFETY: a 1472-byte, 8-aligned buffer: sizeof(hipDeviceProp_tR0600).
    check("hipGetDevicePropertiesR0600", unsafe {
        (hip.get_device_properties)(props.as_mut_ptr().cast(), 0)
    });
    // SAFETY: `name` (char[256]) is at offset 0 and NUL-terminated by HIP.
    let name = unsafe { CStr::from_ptr(props.as_ptr().cast()) }
        .to_string_lossy()
        .into_owned();
    let mut version: c_int = 0;
    // SAFETY: valid out-pointer.
    check("hipRuntimeGetVersion", unsafe {
        (hip.runtime_get_version)(&mut version)
    });
    println!("{label}: device 0 of {count}: {name}, HIP runtime {version}");

    let (mut x, mut y): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid out-pointers.
    check("hipMalloc", unsafe { (hip.malloc)(&mut x, BYTES) });
    // SAFETY: as above.
    check("hipMalloc", unsafe { (hip.malloc)(&mut y, BYTES) });

    let mut host_x = vec![0f32; ELEMENTS];
    let mut host_y = vec![0f32; ELEMENTS];
    for iter in 0..ITERATIONS {
        if crash_after == Some(iter) {
            println!("{label}: raising SIGSEGV after {iter} iterations");
            crash();
        }
        let range = range_message(iter);
        // SAFETY: a NUL-terminated message.
        unsafe { (roctx.range_push_a)(range.as_ptr()) };
        for (i, v) in host_x.iter_mut().enumerate() {
            *v = input(iter, i);
        }
        host_y.fill(f32::NAN);
        // SAFETY: 1 MiB host source and device destination.
        check("hipMemcpy H2D", unsafe {
            (hip.memcpy)(x, host_x.as_ptr().cast(), BYTES, H2D)
        });
        let blocks = (ELEMENTS as u32).div_ceil(WORKGROUP);
        kernels::launch(Dim3::x(blocks), Dim3::x(WORKGROUP), || {
            kernels::axpb(x.cast_const().cast(), y.cast(), ELEMENTS as u64)
        });
        if synchronize {
            // SAFETY: plain call.
            check("hipDeviceSynchronize", unsafe {
                (hip.device_synchronize)()
            });
        }
        // SAFETY: 1 MiB device source and host destination.
        check("hipMemcpy D2H", unsafe {
            (hip.memcpy)(host_y.as_mut_ptr().cast(), y, BYTES, D2H)
        });
        // SAFETY: plain call.
        unsafe { (roctx.range_pop)() };
        if let Some((i, got)) = host_y
            .iter()
            .enumerate()
            .find(|&(i, &v)| v != 2.0 * input(iter, i) + 1.0)
        {
            eprintln!(
                "{label}: iteration {iter}: y[{i}] = {got}, expected {}",
                2.0 * input(iter, i) + 1.0
            );
            return 1;
        }
        println!("{label}: iter{iter} verified");
    }
    if crash_after == Some(ITERATIONS) {
        println!("{label}: raising SIGSEGV after {ITERATIONS} iterations");
        crash();
    }
    // SAFETY: plain call.
    check("kernel launches (hipGetLastError)", unsafe {
        (hip.get_last_error)()
    });
    // SAFETY: the two allocations.
    check("hipFree", unsafe { (hip.free)(x) });
    // SAFETY: as above.
    check("hipFree", unsafe { (hip.free)(y) });
    println!("{label}: {ITERATIONS} iterations verified");
    0
}

/// Dies of a genuine SIGSEGV: a store to a page mapped without access, as a buggy program
/// would. Whatever handlers are installed (a profiler's, Rust's stack-overflow guard) run first;
/// when they return, the store faults again under the default action.
pub fn crash() -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // SAFETY: maps one inaccessible anonymous page of our own and stores to it; the store
    // faults (that is the point), nothing else is touched.
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page != libc::MAP_FAILED {
            page.cast::<u8>().write_volatile(1);
        }
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
    // Only reached if SIGSEGV is ignored.
    std::process::exit(139)
}
