//! `unsynced-crash [N]`: N kernel launches (default 3) that the application never waits for —
//! no synchronize, no copy back, no HSA wait — then 100 ms without any runtime call (the GPU
//! finishes meanwhile), then a SIGSEGV. A profiler that only records completions when the
//! application synchronizes loses all N; one that collects them on its own keeps them.

use sim_workloads::kernels::TinyVectorAdd;
use sim_workloads::loader::load_runtimes;

fn main() {
    let n: u32 = sim_workloads::arg_or(1, 3);
    load_runtimes();
    let kernel = TinyVectorAdd::new();
    for _ in 0..n {
        kernel.launch();
    }
    println!("unsynced-crash: {n} launches, never waited for");
    std::thread::sleep(std::time::Duration::from_millis(100));
    sim_workloads::reference::crash()
}
