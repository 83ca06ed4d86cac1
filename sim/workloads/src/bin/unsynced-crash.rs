//! `unsynced-crash [N]`: N kernel launches (default 3) that the application never waits for —
//! no synchronize, no copy back, no HSA wait — then 100 ms without any runtime call (the GPU
//! finishes meanwhile), then a SIGSEGV. A profiler that only records completions when the
//! application synchronizes loses all N; one that collects them on its own keeps them.

use std::ffi::c_void;

use sim_workloads::kernels::{self, Dim3, VECTOR_ADD};
use sim_workloads::loader::{check, hip, load_runtimes};

fn main() {
    let n: u32 = sim_workloads::arg_or(1, 3);
    load_runtimes();
    sim_workloads::program::register(&[&VECTOR_ADD]);
    let hip = hip();
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let items = 32usize;
    let mut d: [*mut c_void; 3] = [std::ptr::null_mut(); 3];
    for p in &mut d {
        // SAFETY: valid out-pointer.
        check("hipMalloc", unsafe {
            (hip.malloc)(p, items * size_of::<f32>())
        });
    }
    for _ in 0..n {
        kernels::launch(Dim3::x(1), Dim3::x(items as u32), || {
            kernels::vector_add(
                d[0].cast_const().cast(),
                d[1].cast_const().cast(),
                d[2].cast(),
                items as u64,
            )
        });
    }
    println!("unsynced-crash: {n} launches, never waited for");
    std::thread::sleep(std::time::Duration::from_millis(100));
    sim_workloads::reference::crash()
}
