//! One pointer per thread in the initial-exec TLS model: the traced path's way to its thread's
//! call state without a call to `__tls_get_addr`.
//!
//! The tool is a shared object, so Rust's `thread_local!` compiles to the general-dynamic TLS
//! model: every access calls `__tls_get_addr` (11 instructions and a call per traced call under
//! callgrind). A variable of the initial-exec model is instead reached by one load of its
//! offset from the GOT and one `fs`-relative access. Rust offers no initial-exec model on
//! stable, so the variable is defined here in assembly (8 bytes of `.tbss`, hidden) and read
//! and written with inline assembly. The object is then marked `DF_STATIC_TLS`; a library
//! loaded by `dlopen` gets its 8 bytes from glibc's static TLS surplus (hundreds of bytes are
//! reserved for exactly this). A new thread's slot is zero (null).

use std::ffi::c_void;

std::arch::global_asm!(
    ".pushsection .tbss.rocprof_intercept_thread_slot,\"awT\",@nobits",
    ".balign 8",
    ".globl rocprof_intercept_thread_slot",
    ".hidden rocprof_intercept_thread_slot",
    ".type rocprof_intercept_thread_slot,@object",
    ".size rocprof_intercept_thread_slot, 8",
    "rocprof_intercept_thread_slot:",
    ".zero 8",
    ".popsection",
);

/// The calling thread's pointer (null until [`set`] on this thread).
#[inline(always)]
pub fn get() -> *mut c_void {
    let value: *mut c_void;
    // SAFETY: reads the calling thread's 8-byte slot defined above: its offset from the thread
    // pointer comes from the GOT (R_X86_64_GOTTPOFF), the value from `fs:offset`. Nothing else
    // is read or written.
    unsafe {
        std::arch::asm!(
            "mov {v}, qword ptr [rip + rocprof_intercept_thread_slot@GOTTPOFF]",
            "mov {v}, qword ptr fs:[{v}]",
            v = out(reg) value,
            options(nostack, readonly, preserves_flags),
        );
    }
    value
}

/// Sets the calling thread's pointer.
#[inline]
pub fn set(value: *mut c_void) {
    // SAFETY: writes the calling thread's 8-byte slot defined above (address as in `get`);
    // nothing else is written.
    unsafe {
        std::arch::asm!(
            "mov {o}, qword ptr [rip + rocprof_intercept_thread_slot@GOTTPOFF]",
            "mov qword ptr fs:[{o}], {v}",
            o = out(reg) _,
            v = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_its_own_slot_starting_null() {
        let before = get();
        let mine = 0x1234usize as *mut c_void;
        set(mine);
        assert_eq!(get(), mine);
        let other = std::thread::spawn(|| {
            let fresh = get().is_null();
            set(0x5678usize as *mut c_void);
            (fresh, get() as usize)
        })
        .join()
        .unwrap();
        assert_eq!(other, (true, 0x5678));
        assert_eq!(
            get(),
            mine,
            "another thread's set left this thread's slot alone"
        );
        set(before);
    }
}
