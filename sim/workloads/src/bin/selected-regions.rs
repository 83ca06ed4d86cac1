//! `selected-regions`: four launches of `vector_add`, each followed by its copy back (so each
//! has finished before the next starts); `roctxProfilerResume(0)` before the second and
//! `roctxProfilerPause(0)` after the third, the bracket rocprofv3's `--selected-regions`
//! collects in. Prints `selected=2,3` (the launches inside it, counting from 1).
//!
//! `selected-regions nested`: six launches, with `roctxProfilerResume(0)` before the second and
//! again before the third, `roctxProfilerPause(0)` after the third and again after the fifth.
//! Collection stops at the first pause (launches 2 and 3) unless nested pairs count
//! (`--selected-regions-ref-count`: launches 2 to 5). Prints both.

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
    let nested = std::env::args().nth(1).as_deref() == Some("nested");
    let (launches, resumes, pauses): (u32, &[u32], &[u32]) = match nested {
        false => (4, &[2], &[3]),
        true => (6, &[2, 3], &[3, 5]),
    };
    for launch in 1..=launches {
        if resumes.contains(&launch) {
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
        if pauses.contains(&launch) {
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
    match nested {
        false => println!("selected=2,3"),
        true => println!("selected=2,3 ref-counted=2,3,4,5"),
    }
}
