//! `hip-rate N`: N back-to-back `hipGetDevice` calls; the last line is
//! `calls=<N> ns=<loop duration>` measured around the loop alone (after a `hipSetDevice` that
//! initialises the runtime).

use std::time::Instant;

fn main() {
    let n: u64 = sim_workloads::arg_or(1, 1_000_000);
    sim_workloads::loader::load_runtimes();
    let hip = sim_workloads::loader::hip();
    // SAFETY: plain call.
    sim_workloads::loader::check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let mut device = 0;
    let mut failures = 0u64;
    let start = Instant::now();
    for _ in 0..n {
        // SAFETY: valid out-pointer.
        failures += u64::from(unsafe { (hip.get_device)(&mut device) } != 0);
    }
    let ns = start.elapsed().as_nanos();
    if failures > 0 || device != 0 {
        sim_workloads::fail(&format!(
            "{failures} hipGetDevice calls failed (device {device})"
        ));
    }
    println!("calls={n} ns={ns}");
}
