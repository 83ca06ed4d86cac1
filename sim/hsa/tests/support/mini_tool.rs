//! A minimal profiler tool for `tests/runtime.rs`, compiled by the test itself with
//! `rustc --crate-type cdylib` and preloaded with `LD_PRELOAD`.
//!
//! It makes rocprofiler-register see a tool (`rocprofiler_configure` resolves) and records
//! every `rocprofiler_set_api_table` call as a line `set_api_table <name> <num_tables>` in the
//! file named by `MINI_TOOL_LOG`. It wraps nothing.

use std::ffi::{CStr, c_char, c_void};
use std::io::Write;

/// The SDK entry point rocprofiler-register looks for; declines (returns NULL).
#[no_mangle]
pub extern "C" fn rocprofiler_configure(
    _version: u32,
    _runtime_version: *const c_char,
    _priority: u32,
    _id: *mut c_void,
) -> *mut c_void {
    std::ptr::null_mut()
}

/// Records the call; 0 = accepted.
#[no_mangle]
pub extern "C" fn rocprofiler_set_api_table(
    name: *const c_char,
    _lib_version: u64,
    _lib_instance: u64,
    _tables: *mut *mut c_void,
    num_tables: u64,
) -> i32 {
    let result = std::panic::catch_unwind(|| {
        let name = if name.is_null() {
            "(null)".to_owned()
        } else {
            // SAFETY: rocprofiler-register passes the NUL-terminated library name.
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        if let Some(path) = std::env::var_os("MINI_TOOL_LOG") {
            if let Ok(mut file) = std::fs::OpenOptions::new().append(true).create(true).open(path) {
                let _ = file.write_all(format!("set_api_table {name} {num_tables}\n").as_bytes());
            }
        }
    });
    if result.is_ok() { 0 } else { 1 }
}
