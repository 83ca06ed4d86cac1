//! `d2d-copy`: a same-device device-to-device `hipMemcpy` (1 MiB), which HIP performs with the
//! `__amd_rocclr_copyBuffer` blit kernel rather than an SDMA copy; verified on the host.

use std::ffi::c_void;

use sim_workloads::loader::{check, hip, load_runtimes};

const BYTES: usize = 1 << 20;

fn main() {
    load_runtimes();
    let hip = hip();
    // SAFETY: plain call.
    check("hipSetDevice", unsafe { (hip.set_device)(0) });
    let (mut a, mut b): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid out-pointers.
    check("hipMalloc", unsafe { (hip.malloc)(&mut a, BYTES) });
    // SAFETY: as above.
    check("hipMalloc", unsafe { (hip.malloc)(&mut b, BYTES) });
    let source: Vec<u8> = (0..BYTES).map(|i| (i * 7 % 251) as u8).collect();
    let mut back = vec![0u8; BYTES];
    // SAFETY: 1 MiB on both sides (H2D, D2D, D2H).
    unsafe {
        check(
            "hipMemcpy H2D",
            (hip.memcpy)(a, source.as_ptr().cast(), BYTES, 1),
        );
        check("hipMemcpy D2D", (hip.memcpy)(b, a, BYTES, 3));
        check(
            "hipMemcpy D2H",
            (hip.memcpy)(back.as_mut_ptr().cast(), b, BYTES, 2),
        );
    }
    if let Some(i) = (0..BYTES).find(|&i| back[i] != source[i]) {
        sim_workloads::fail(&format!("byte {i}: {} != {}", back[i], source[i]));
    }
    // SAFETY: the two allocations.
    unsafe {
        check("hipFree", (hip.free)(a));
        check("hipFree", (hip.free)(b));
    }
    println!("d2d-copy: {BYTES} bytes copied device-to-device and verified");
}
