//! `selected-regions`: four launches of `vector_add`, each followed by its copy back (so each
//! has finished before the next starts); `roctxProfilerResume(0)` before the second and
//! `roctxProfilerPause(0)` after the third, the bracket rocprofv3's `--selected-regions`
//! collects in. Prints `selected=2,3` (the launches inside it, counting from 1).

use std::ffi::c_void;

use sim_workloads::kernels::{self, Dim3, VECTOR_ADD};
use sim_workloads::loader::{check, hip, load_runtimes, roctx};

const N: usize = 4096;

fn main() {
    load_runtimes();
    sim_workloads::program::register(&[&VECTOR_ADD]);
    let (hip, roctx) = (hip(), roctx());
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let bytes = N * size_of::<f32>();
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut c = vec![0f32; N];
    let mut d: [*mut c_void; 3] = [std::ptr::null_mut(); 3];
    for p in &mut d {
        // SAFETY: valid out-pointer.
        check("hipMalloc", unsafe { (hip.malloc)(p, bytes) });
    }
    for p in &d[..2] {
        // SAFETY: `bytes` on both sides.
        check("hipMemcpy H2D", unsafe {
            (hip.memcpy)(*p, a.as_ptr().cast(), bytes, 1)
        });
    }
    for launch in 1..=4 {
        if launch == 2 {
            // SAFETY: plain call.
            unsafe { (roctx.profiler_resume)(0) };
        }
        kernels::launch(Dim3::x((N as u32).div_ceil(256)), Dim3::x(256), || {
            kernels::vector_add(
                d[0].cast_const().cast(),
                d[1].cast_const().cast(),
                d[2].cast(),
                N as u64,
            )
        });
        // SAFETY: `bytes` on both sides; returns once the kernel has finished.
        check("hipMemcpy D2H", unsafe {
            (hip.memcpy)(c.as_mut_ptr().cast(), d[2], bytes, 2)
        });
        if launch == 3 {
            // SAFETY: plain call.
            unsafe { (roctx.profiler_pause)(0) };
        }
        if let Some(i) = (0..N).find(|&i| c[i] != 2.0 * a[i]) {
            sim_workloads::fail(&format!("launch {launch}: c[{i}] = {}", c[i]));
        }
    }
    for p in d {
        // SAFETY: our allocations.
        check("hipFree", unsafe { (hip.free)(p) });
    }
    println!("selected=2,3");
}
