//! The seed's reference HIP application (see `sim_workloads::reference`).
//!
//! `LD_LIBRARY_PATH=target/debug/sim/lib target/debug/reference-workload`

fn main() {
    std::process::exit(sim_workloads::reference::run("reference-workload", None));
}
