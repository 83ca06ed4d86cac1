//! `init-then-exit`: `hsa_init`, the agents listed, `hsa_shut_down`, and a normal return from
//! `main`, each step announced on stdout as it completes.
//!
//! The seed's mismatched pair (a stock ROCm 7.2.x runtime with a newer thunk that offers no
//! `DxgAbiCheck`) lets `hsa_init` succeed and every step here complete; the heap the thunk
//! overran is only noticed later, when the process exits. The lines printed say how far the
//! program got before it died.

use std::ffi::c_void;

use sim_workloads::loader::{Library, or_exit};

type NoArgs = unsafe extern "C" fn() -> u32;
type IterateAgents =
    unsafe extern "C" fn(unsafe extern "C" fn(u64, *mut c_void) -> u32, *mut c_void) -> u32;

unsafe extern "C" fn count_agent(_agent: u64, data: *mut c_void) -> u32 {
    // SAFETY: `data` is the `u32` counter passed to hsa_iterate_agents below.
    unsafe { *data.cast::<u32>() += 1 };
    0
}

fn main() {
    let hsa = or_exit(Library::open("libhsa-runtime64.so.1"));
    let symbol = |name: &str| or_exit(hsa.symbol(name));
    // SAFETY: the HSA API's signatures.
    let (init, shut_down, iterate): (NoArgs, NoArgs, IterateAgents) = unsafe {
        (
            std::mem::transmute::<*mut c_void, NoArgs>(symbol("hsa_init")),
            std::mem::transmute::<*mut c_void, NoArgs>(symbol("hsa_shut_down")),
            std::mem::transmute::<*mut c_void, IterateAgents>(symbol("hsa_iterate_agents")),
        )
    };
    // SAFETY: no arguments.
    let status = unsafe { init() };
    println!("hsa_init -> {status}");
    if status != 0 {
        std::process::exit(1);
    }
    let mut agents = 0_u32;
    // SAFETY: a valid callback and the counter it increments.
    let status = unsafe { iterate(count_agent, (&raw mut agents).cast()) };
    println!("hsa_iterate_agents -> {status} agents={agents}");
    // Some ordinary work of the application's own, on its own heap.
    let words: Vec<String> = (0..1000).map(|i| format!("word {i}")).collect();
    println!(
        "work done: {} bytes",
        words.iter().map(String::len).sum::<usize>()
    );
    drop(words);
    // SAFETY: balances the hsa_init above.
    let status = unsafe { shut_down() };
    println!("hsa_shut_down -> {status}");
    println!("main returns");
}
