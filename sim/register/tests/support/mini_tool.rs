//! Minimal profiling tool used only by `tests/discovery.rs`.
//!
//! Compiled on its own (`rustc --crate-type cdylib --edition 2024`), with no
//! dependencies, into `libmini_tool.so`. It exports:
//! - `rocprofiler_configure`: returns NULL; it only has to exist so that
//!   `dlsym(RTLD_DEFAULT, "rocprofiler_configure")` finds a tool;
//! - `rocprofiler_set_api_table`: appends
//!   `set_api_table name=<n> version=<v> instance=<i> num_tables=<k>[ reenter=<rc>]`
//!   to the file named by `MINI_TOOL_LOG`, writes `MARKER` into slot 0 of the
//!   first table (in-place wrapping), and returns 1 if `MINI_TOOL_FAIL=1`.
//!   With `MINI_TOOL_REENTER=1` it first calls
//!   `rocprofiler_register_library_api_table("hip", ...)` from inside itself
//!   and logs that call's return code.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;

/// Value written into slot 0 of the first table.
pub const MARKER: usize = 0x7001_5EED_0000_0001;

const RTLD_DEFAULT: *mut c_void = null_mut();

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

type RegisterFn = unsafe extern "C" fn(
    *const c_char,
    Option<unsafe extern "C" fn() -> u32>,
    u32,
    *mut *mut c_void,
    u64,
    *mut u64,
) -> c_int;

/// The SDK's tool entry point; declines (NULL).
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_configure(
    _version: u32,
    _runtime_version: *const c_char,
    _priority: u32,
    _client_id: *mut c_void,
) -> *mut c_void {
    null_mut()
}

fn env_is_one(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v == "1")
}

fn reenter() -> String {
    // SAFETY: RTLD_DEFAULT is the null pseudo-handle on glibc and the symbol
    // name is NUL-terminated.
    let sym = unsafe {
        dlsym(
            RTLD_DEFAULT,
            c"rocprofiler_register_library_api_table".as_ptr(),
        )
    };
    if sym.is_null() {
        return " reenter=nosym".to_owned();
    }
    // SAFETY: the symbol is rocprofiler_register_library_api_table, whose C
    // signature RegisterFn mirrors (register_id is a struct of one u64).
    let register: RegisterFn = unsafe { std::mem::transmute::<*mut c_void, RegisterFn>(sym) };
    let mut table = [0usize; 2];
    let mut tables = [table.as_mut_ptr().cast::<c_void>()];
    let mut id = 0u64;
    // SAFETY: all pointers are valid locals for the duration of the call.
    let rc = unsafe { register(c"hip".as_ptr(), None, 1, tables.as_mut_ptr(), 1, &mut id) };
    format!(" reenter={rc}")
}

/// Receives the runtime's API tables.
///
/// # Safety
/// `name` must be a NUL-terminated string and `tables` must hold
/// `num_tables` pointers, the first of which points to at least one
/// pointer-sized writable slot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_set_api_table(
    name: *const c_char,
    lib_version: u64,
    lib_instance: u64,
    tables: *mut *mut c_void,
    num_tables: u64,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let name = if name.is_null() {
            "(null)".to_owned()
        } else {
            // SAFETY: non-null and NUL-terminated per the contract.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        };
        let reentered = if env_is_one("MINI_TOOL_REENTER") {
            reenter()
        } else {
            String::new()
        };
        if let Some(path) = std::env::var_os("MINI_TOOL_LOG") {
            let line = format!(
                "set_api_table name={name} version={lib_version} instance={lib_instance} num_tables={num_tables}{reentered}\n"
            );
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path);
            if let Ok(mut file) = file {
                let _ = file.write_all(line.as_bytes());
            }
        }
        if num_tables >= 1 && !tables.is_null() {
            // SAFETY: `tables` holds at least one pointer (contract).
            let first = unsafe { *tables };
            if !first.is_null() {
                // SAFETY: the first table has a writable pointer-sized slot 0.
                unsafe { first.cast::<usize>().write(MARKER) };
            }
        }
        if env_is_one("MINI_TOOL_FAIL") { 1 } else { 0 }
    }));
    result.unwrap_or(2)
}
