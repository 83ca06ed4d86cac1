//! `hsa-rate N`: N back-to-back `hsa_signal_load_relaxed` calls on one signal; the last line is
//! `calls=<N> ns=<loop duration> maxrss_kb=<peak RSS>`, the duration measured around the loop
//! alone.

use std::time::Instant;

use sim_workloads::loader::{Hsa, HsaSignal, load_or_exit};

fn main() {
    let n: u64 = sim_workloads::arg_or(1, 1_000_000);
    let hsa = load_or_exit(Hsa::load);
    // SAFETY: the documented entry point.
    if unsafe { (hsa.init)() } != 0 {
        sim_workloads::fail("hsa_init failed");
    }
    let mut signal = HsaSignal::default();
    // SAFETY: no consumers, valid out-pointer.
    if unsafe { (hsa.signal_create)(7, 0, std::ptr::null(), &mut signal) } != 0 {
        sim_workloads::fail("hsa_signal_create failed");
    }
    let mut wrong = 0u64;
    let start = Instant::now();
    for _ in 0..n {
        // SAFETY: a live signal.
        wrong += u64::from(unsafe { (hsa.signal_load_relaxed)(signal) } != 7);
    }
    let ns = start.elapsed().as_nanos();
    // SAFETY: the signal created above; then the runtime is released.
    unsafe {
        (hsa.signal_destroy)(signal);
        (hsa.shut_down)();
    }
    if wrong > 0 {
        sim_workloads::fail(&format!("{wrong} loads returned a wrong value"));
    }
    // Peak resident memory of the whole process (the profiler's buffers included).
    // SAFETY: getrusage writes the zeroed struct it is given.
    let maxrss_kb = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage.ru_maxrss
    };
    println!("calls={n} ns={ns} maxrss_kb={maxrss_kb}");
}
