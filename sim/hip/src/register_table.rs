//! Hands a library's API tables to rocprofiler-register: `dlopen("librocprofiler-register.so.0",
//! RTLD_NOW | RTLD_GLOBAL)`, then `rocprofiler_register_library_api_table`. Shared by the
//! simulated HIP runtime and ROCTx (`sim/roctx` includes this file with `#[path]`): neither may
//! link `sim-register`, whose cdylib exports would then come from the runtime itself.

use std::ffi::{CStr, c_char, c_int, c_void};

type RegisterFn = unsafe extern "C" fn(
    *const c_char,
    extern "C" fn() -> u32,
    u32,
    *mut *mut c_void,
    u64,
    *mut u64,
) -> c_int;

/// Registers `tables` as library `name` with its import function and version. Returns the
/// register status, or `None` (nothing registered) when the library or its export is missing.
/// The library stays open for the process: it keeps the table pointers.
pub fn register_table(
    name: &CStr,
    import: extern "C" fn() -> u32,
    version: u32,
    tables: &mut [*mut c_void],
) -> Option<c_int> {
    // SAFETY: dlopen/dlsym with NUL-terminated literals; the handle is never closed.
    let register = unsafe {
        let handle = libc::dlopen(
            c"librocprofiler-register.so.0".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_GLOBAL,
        );
        if handle.is_null() {
            return None;
        }
        libc::dlsym(handle, c"rocprofiler_register_library_api_table".as_ptr())
    };
    if register.is_null() {
        return None;
    }
    // SAFETY: the export has rocprofiler-register's documented C signature.
    let register: RegisterFn = unsafe { std::mem::transmute::<*mut c_void, RegisterFn>(register) };
    let mut id = 0u64;
    // SAFETY: a valid name, `tables.len()` table pointers and an identifier out-pointer.
    Some(unsafe {
        register(
            name.as_ptr(),
            import,
            version,
            tables.as_mut_ptr(),
            tables.len() as u64,
            &mut id,
        )
    })
}
