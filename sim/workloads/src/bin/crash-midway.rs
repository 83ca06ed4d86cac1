//! `crash-midway [N]`: the reference workload, killed by SIGSEGV (a faulting store) once N iterations
//! completed (default 4: the ranges iter0..iter3 are closed, iter4 never opens).

fn main() {
    let after: u32 = sim_workloads::arg_or(1, 4);
    std::process::exit(sim_workloads::reference::run("crash-midway", Some(after)));
}
