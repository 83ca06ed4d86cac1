//! `late-code-object`: a second program is registered after the first one's kernel ran, so
//! its code object is loaded while a tool that traces dispatches already built its buffers.
//!
//! 1. `vector_add` (the first program, [`TinyVectorAdd`]) launched and synchronized, then
//!    50 ms of sleep;
//! 2. a second fat binary with `scale` registered, then `scale` launched on 4096 floats and
//!    synchronized; its result checked (y = 3x);
//! 3. `vector_add` once more.
//!
//! The last line is `late-code-object: verified`.

use std::ffi::c_void;

use sim_workloads::kernels::{self, Dim3, SCALE, TinyVectorAdd};
use sim_workloads::loader::{check, hip, load_runtimes};

const ITEMS: usize = 4096;
const BYTES: usize = ITEMS * size_of::<f32>();

fn synchronize() {
    // SAFETY: plain call.
    check("hipDeviceSynchronize", unsafe {
        (hip().device_synchronize)()
    });
}

fn main() {
    load_runtimes();
    let first = TinyVectorAdd::new();
    first.launch();
    synchronize();
    // Time for a tool's harvest to free what the first dispatch used (a thread-trace slot is
    // then reused, not built anew, for the next one).
    std::thread::sleep(std::time::Duration::from_millis(50));
    sim_workloads::program::register(&[&SCALE]);
    let hip = hip();
    let (mut x, mut y): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        check("hipMalloc", (hip.malloc)(&mut x, BYTES));
        check("hipMalloc", (hip.malloc)(&mut y, BYTES));
    }
    let host: Vec<f32> = (0..ITEMS).map(|i| i as f32).collect();
    // SAFETY: BYTES on both sides.
    check("hipMemcpy H2D", unsafe {
        (hip.memcpy)(x, host.as_ptr().cast(), BYTES, 1)
    });
    let (xd, yd) = (x.cast_const().cast::<f32>(), y.cast::<f32>());
    kernels::launch(Dim3::x((ITEMS / 256) as u32), Dim3::x(256), || {
        kernels::scale(xd, yd, ITEMS as u64)
    });
    synchronize();
    let mut back = vec![f32::NAN; ITEMS];
    // SAFETY: BYTES on both sides.
    check("hipMemcpy D2H", unsafe {
        (hip.memcpy)(back.as_mut_ptr().cast(), y, BYTES, 2)
    });
    if let Some(i) = (0..ITEMS).find(|&i| back[i] != 3.0 * host[i]) {
        sim_workloads::fail(&format!("y[{i}] = {}, expected {}", back[i], 3.0 * host[i]));
    }
    first.launch();
    synchronize();
    for p in [x, y] {
        // SAFETY: our allocations.
        check("hipFree", unsafe { (hip.free)(p) });
    }
    first.free();
    println!("late-code-object: verified");
}
