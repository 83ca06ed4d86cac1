//! `scratch-memory`: device allocations of known sizes and kernels that need scratch.
//!
//! 1. `hipMalloc` x and y (16 KiB each) and z (64 KiB);
//! 2. x = 0, 1, 2, … copied to the device;
//! 3. `scale` (256 B of private memory per work-item) twice: the first launch makes the
//!    runtime allocate the queue's scratch, the second fits in it;
//! 4. `deep_scale` (1 KiB per work-item) once: the scratch is freed and a larger one
//!    allocated;
//! 5. y copied back and checked (y = 4x), then x, y and z freed. The queue's scratch is freed
//!    when HIP destroys the queue at exit.
//!
//! The last line is `allocated=16384,16384,65536 scratch_launches=3`.

use std::ffi::c_void;

use sim_workloads::kernels::{self, DEEP_SCALE, Dim3, SCALE};
use sim_workloads::loader::{check, hip, load_runtimes};

const ITEMS: usize = 4096;
const BYTES: usize = ITEMS * size_of::<f32>();
const EXTRA: usize = 65536;

fn main() {
    load_runtimes();
    sim_workloads::program::register(&[&SCALE, &DEEP_SCALE]);
    let hip = hip();
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let mut x: *mut c_void = std::ptr::null_mut();
    let mut y: *mut c_void = std::ptr::null_mut();
    let mut z: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out-pointers.
    unsafe {
        check("hipMalloc", (hip.malloc)(&mut x, BYTES));
        check("hipMalloc", (hip.malloc)(&mut y, BYTES));
        check("hipMalloc", (hip.malloc)(&mut z, EXTRA));
    }
    let host: Vec<f32> = (0..ITEMS).map(|i| i as f32).collect();
    // SAFETY: BYTES on both sides.
    check("hipMemcpy H2D", unsafe {
        (hip.memcpy)(x, host.as_ptr().cast(), BYTES, 1)
    });
    let (grid, block) = (Dim3::x((ITEMS / 256) as u32), Dim3::x(256));
    let (xd, yd) = (x.cast_const().cast::<f32>(), y.cast::<f32>());
    for _ in 0..2 {
        kernels::launch(grid, block, || kernels::scale(xd, yd, ITEMS as u64));
    }
    kernels::launch(grid, block, || kernels::deep_scale(xd, yd, ITEMS as u64));
    // SAFETY: plain call.
    check("launch (hipGetLastError)", unsafe {
        (hip.get_last_error)()
    });
    let mut back = vec![f32::NAN; ITEMS];
    // SAFETY: BYTES on both sides.
    check("hipMemcpy D2H", unsafe {
        (hip.memcpy)(back.as_mut_ptr().cast(), y, BYTES, 2)
    });
    if let Some(i) = (0..ITEMS).find(|&i| back[i] != 4.0 * host[i]) {
        sim_workloads::fail(&format!("y[{i}] = {}, expected {}", back[i], 4.0 * host[i]));
    }
    for p in [x, y, z] {
        // SAFETY: our allocations.
        check("hipFree", unsafe { (hip.free)(p) });
    }
    println!("scratch-memory: verified");
    println!("allocated={BYTES},{BYTES},{EXTRA} scratch_launches=3");
}
