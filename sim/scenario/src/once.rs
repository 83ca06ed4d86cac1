//! "Once per process" across every copy of this crate.
//!
//! Each simulated library links its own copy of `wslsim-scenario`, so a `OnceLock` is once per
//! library, not once per process. [`first_in_process`] instead binds a Unix datagram socket to
//! an abstract-namespace name made of a key and the process id: the first bind in the process
//! wins (its socket stays open, close-on-exec, until the process exits) and every later bind
//! fails with `EADDRINUSE`. Nothing is created on disk.

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// Whether this is the first call for `key` in this process, across all copies of the crate.
///
/// If sockets are unavailable the answer is `true` (better a repeated line than none).
pub fn first_in_process(key: &str) -> bool {
    let name = format!("wslsim-{key}-{}", std::process::id());
    // SAFETY: socket() has no memory preconditions.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return true;
    }
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // Abstract namespace: sun_path[0] stays NUL and the name follows (not NUL-terminated).
    let room = address.sun_path.len() - 1;
    let bytes = &name.as_bytes()[..name.len().min(room)];
    for (slot, &byte) in address.sun_path[1..].iter_mut().zip(bytes) {
        *slot = byte as c_char;
    }
    let length = offset_of!(libc::sockaddr_un, sun_path) + 1 + bytes.len();
    debug_assert!(length <= size_of::<libc::sockaddr_un>());
    // SAFETY: `address` is a valid sockaddr_un and `length` does not exceed its size.
    let bound = unsafe {
        libc::bind(
            fd,
            (&raw const address).cast::<libc::sockaddr>(),
            length as libc::socklen_t,
        )
    };
    if bound == 0 {
        // Keep the socket: it holds the name for the rest of the process.
        return true;
    }
    let in_use = std::io::Error::last_os_error().raw_os_error() == Some(libc::EADDRINUSE);
    // SAFETY: `fd` is our own socket, closed once.
    unsafe { libc::close(fd) };
    !in_use
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_call_per_key_wins() {
        assert!(first_in_process("test-key-a"));
        assert!(!first_in_process("test-key-a"));
        assert!(!first_in_process("test-key-a"));
        assert!(first_in_process("test-key-b"));
    }
}
