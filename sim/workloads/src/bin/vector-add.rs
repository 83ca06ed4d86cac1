//! `vector-add [grid] [workgroup]`: one launch of `c = a + b` over `grid` work-items with the
//! given workgroup size (defaults 262144 and 256), verified; prints the number of waves
//! (`ceil(grid / workgroup)` workgroups × `ceil(workgroup / 32)` waves each, wave32).

use std::ffi::c_void;

use sim_workloads::kernels::{self, Dim3, VECTOR_ADD};
use sim_workloads::loader::{check, hip, load_runtimes};

fn main() {
    let grid: u32 = sim_workloads::arg_or(1, 262_144);
    let workgroup: u32 = sim_workloads::arg_or(2, 256);
    if grid == 0 || workgroup == 0 || workgroup > 1024 {
        eprintln!("vector-add: grid must be >= 1 and workgroup in 1..=1024");
        std::process::exit(2);
    }
    load_runtimes();
    sim_workloads::program::register(&[&VECTOR_ADD]);
    let hip = hip();
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let n = grid as usize;
    let bytes = n * size_of::<f32>();
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    let mut c = vec![f32::NAN; n];
    let mut d: [*mut c_void; 3] = [std::ptr::null_mut(); 3];
    for p in &mut d {
        // SAFETY: valid out-pointer.
        check("hipMalloc", unsafe { (hip.malloc)(p, bytes) });
    }
    // SAFETY: `bytes` on both sides.
    unsafe {
        check(
            "hipMemcpy H2D",
            (hip.memcpy)(d[0], a.as_ptr().cast(), bytes, 1),
        );
        check(
            "hipMemcpy H2D",
            (hip.memcpy)(d[1], b.as_ptr().cast(), bytes, 1),
        );
    }
    let blocks = grid.div_ceil(workgroup);
    kernels::launch(Dim3::x(blocks), Dim3::x(workgroup), || {
        kernels::vector_add(
            d[0].cast_const().cast(),
            d[1].cast_const().cast(),
            d[2].cast(),
            n as u64,
        )
    });
    // SAFETY: plain call.
    check("vector_add launch (hipGetLastError)", unsafe {
        (hip.get_last_error)()
    });
    // SAFETY: `bytes` on both sides.
    check("hipMemcpy D2H", unsafe {
        (hip.memcpy)(c.as_mut_ptr().cast(), d[2], bytes, 2)
    });
    if let Some(i) = (0..n).find(|&i| c[i] != a[i] + b[i]) {
        sim_workloads::fail(&format!("c[{i}] = {}, expected {}", c[i], a[i] + b[i]));
    }
    for p in d {
        // SAFETY: our allocations.
        check("hipFree", unsafe { (hip.free)(p) });
    }
    let waves = u64::from(blocks) * u64::from(workgroup.div_ceil(32));
    println!("vector-add: grid={grid} workgroup={workgroup} workgroups={blocks} verified");
    println!("waves={waves}");
}
