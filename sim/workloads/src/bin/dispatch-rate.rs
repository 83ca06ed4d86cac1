//! `dispatch-rate N`: N back-to-back launches of a one-workgroup `c = a + b` kernel (32
//! work-items), then one `hipDeviceSynchronize`, for the per-dispatch overhead benchmark. The
//! last line printed is `calls=<N> ns=<duration of launches + synchronize in ns>
//! cpu_ns=<CPU time of all threads of the process>`.

use sim_workloads::kernels::TinyVectorAdd;
use sim_workloads::loader::{check, hip, load_runtimes};

fn main() {
    let n: u64 = sim_workloads::arg_or(1, 10_000);
    load_runtimes();
    let kernel = TinyVectorAdd::new();
    let start = std::time::Instant::now();
    for _ in 0..n {
        kernel.launch();
    }
    // SAFETY: plain call.
    check("hipDeviceSynchronize", unsafe {
        (hip().device_synchronize)()
    });
    let ns = start.elapsed().as_nanos();
    kernel.free();
    // CPU time of the whole process (every thread: the runtime's and a profiler's included).
    // SAFETY: getrusage writes the zeroed struct it is given.
    let cpu_ns = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        let t = |tv: libc::timeval| tv.tv_sec as u128 * 1_000_000_000 + tv.tv_usec as u128 * 1000;
        t(u.ru_utime) + t(u.ru_stime)
    };
    thread_report();
    println!("calls={n} ns={ns} cpu_ns={cpu_ns}");
}

/// Per thread of the process, on stderr: CPU time (`schedstat`, ns) and context switches, so a
/// profiler's cost can be told apart from the simulated GPU's (which a real GPU does not spend
/// on the host).
fn thread_report() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let cpu_ns = read("schedstat")
            .split_whitespace()
            .next()
            .unwrap_or("0")
            .to_owned();
        let status = read("status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map_or("0".to_owned(), |v| v.trim().to_owned())
        };
        eprintln!(
            "thread {} cpu_ns={cpu_ns} voluntary={} involuntary={}",
            read("comm").trim(),
            field("voluntary_ctxt_switches:"),
            field("nonvoluntary_ctxt_switches:")
        );
    }
}
