//! The seed's variant of the reference workload: a `hipDeviceSynchronize` after each launch
//! (see `sim_workloads::reference::run_synchronized`).
//!
//! `LD_LIBRARY_PATH=target/debug/sim/lib target/debug/reference-sync`

fn main() {
    std::process::exit(sim_workloads::reference::run_synchronized("reference-sync"));
}
