//! `late-enumerate raw | tool <library>`: the application initialises HSA, and then something
//! enumerates the KMT topology late, as a tool attached to the running process would.
//!
//! * `raw`: the late enumeration itself, through the thunk's own entry points (the copy the
//!   runtime loaded): `hsaKmtOpenKFD`, `hsaKmtAcquireSystemProperties`, node 1 read into a
//!   1024-byte buffer, `hsaKmtReleaseSystemProperties`, `hsaKmtCloseKFD`. It prints
//!   `late: open=<s> acquire=<s> num_nodes=<n> node1=<s> simd=<NumFComputeCores>`.
//! * `tool <library>`: `dlopen`s the library (a profiler attaching late); it prints
//!   `tool loaded`.
//!
//! Then `hsa_shut_down`, and `done`.

use std::ffi::c_void;

use sim_workloads::loader::{Library, or_exit};

type NoArgs = unsafe extern "C" fn() -> i32;
type Acquire = unsafe extern "C" fn(*mut [u32; 4]) -> i32;
type GetNode = unsafe extern "C" fn(u32, *mut c_void) -> i32;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hsa = or_exit(Library::open("libhsa-runtime64.so.1"));
    // SAFETY: the HSA API's signatures.
    let (init, shut_down) = unsafe {
        (
            std::mem::transmute::<*mut c_void, NoArgs>(or_exit(hsa.symbol("hsa_init"))),
            std::mem::transmute::<*mut c_void, NoArgs>(or_exit(hsa.symbol("hsa_shut_down"))),
        )
    };
    // SAFETY: no arguments.
    let status = unsafe { init() };
    println!("hsa_init -> {status}");
    if status != 0 {
        std::process::exit(1);
    }
    match args.get(1).map(String::as_str) {
        Some("raw") => {
            // The copy the runtime loaded (the loader finds it by the name it was opened as).
            let thunk = or_exit(Library::open("librocdxg.so"));
            let get = |name: &str| or_exit(thunk.symbol(name));
            // SAFETY: the thunk's documented signatures.
            let (open, acquire, node, release, close) = unsafe {
                (
                    std::mem::transmute::<*mut c_void, NoArgs>(get("hsaKmtOpenKFD")),
                    std::mem::transmute::<*mut c_void, Acquire>(get(
                        "hsaKmtAcquireSystemProperties",
                    )),
                    std::mem::transmute::<*mut c_void, GetNode>(get("hsaKmtGetNodeProperties")),
                    std::mem::transmute::<*mut c_void, NoArgs>(get(
                        "hsaKmtReleaseSystemProperties",
                    )),
                    std::mem::transmute::<*mut c_void, NoArgs>(get("hsaKmtCloseKFD")),
                )
            };
            let mut system = [0_u32; 4];
            let mut record = vec![0_u8; 1024];
            // SAFETY: no arguments; a writable HsaSystemProperties; 1024 writable bytes, more
            // than any record; then release and close balance acquire and open.
            let (opened, acquired, read) = unsafe {
                let opened = open();
                let acquired = acquire(&mut system);
                let read = node(1, record.as_mut_ptr().cast());
                release();
                close();
                (opened, acquired, read)
            };
            let simd = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
            println!(
                "late: open={opened} acquire={acquired} num_nodes={} node1={read} simd={simd}",
                system[0]
            );
        }
        Some("tool") if args.len() > 2 => {
            let _tool = or_exit(Library::open(&args[2]));
            println!("tool loaded");
        }
        _ => {
            eprintln!("usage: late-enumerate raw | tool <library>");
            std::process::exit(2);
        }
    }
    // SAFETY: balances hsa_init.
    let status = unsafe { shut_down() };
    println!("hsa_shut_down -> {status}");
    println!("done");
}
