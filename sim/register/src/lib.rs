//! Simulated `librocprofiler-register.so.0`.
//!
//! Runtimes (ROCr as "hsa", HIP, ROCTx, ...) hand their API tables to
//! [`rocprofiler_register_library_api_table`]; this library finds a profiling
//! tool in the process and passes the tables to its
//! `rocprofiler_set_api_table` before returning, so the tool can wrap the
//! table entries in place. See `README.md` for the rules and what is not
//! modelled.

pub mod codes;
pub mod discovery;
pub mod env;
pub mod libs;
pub mod registry;

use std::ffi::{CStr, c_char, c_int, c_void};
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard, PoisonError};

pub use codes::{ErrorCode, rocprofiler_register_error_code_t};
pub use libs::Library;
pub use registry::MAX_INSTANCES;

use discovery::SetApiTableFn;
use env::ToolConfig;
use registry::{ReentryGuard, Registry, outcome_of_tool};

/// `rocprofiler_register_library_indentifier_t` (upstream spelling).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rocprofiler_register_library_indentifier_t {
    /// `8 * library index + instance`.
    pub handle: u64,
}

/// `uint32_t (*)(void)`: the runtime's `rocprofiler_register_import_<name>`.
#[allow(non_camel_case_types)]
pub type rocprofiler_register_import_func_t = Option<unsafe extern "C" fn() -> u32>;

/// `rocprofiler_register_registration_info_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rocprofiler_register_registration_info_t {
    /// `sizeof` this struct.
    pub size: usize,
    /// Library name; static, valid for the life of the process.
    pub common_name: *const c_char,
    /// Version the library registered with.
    pub lib_version: u32,
    /// Number of API tables it passed.
    pub api_table_length: u64,
}

/// `int (*)(rocprofiler_register_registration_info_t*, void*)`; non-zero stops.
#[allow(non_camel_case_types)]
pub type rocprofiler_register_registration_info_cb_t = Option<
    unsafe extern "C" fn(*mut rocprofiler_register_registration_info_t, *mut c_void) -> c_int,
>;

static REGISTRY: Mutex<Registry> = Mutex::new(Registry::new());

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs an export body, turning a panic into `ROCPROFILER_ERROR`.
fn guarded(body: impl FnOnce() -> ErrorCode) -> c_int {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or(ErrorCode::RocprofilerError)
        .raw()
}

/// One diagnostic line on stderr; write errors are ignored.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "rocprofiler-register: {line}");
}

/// The verbose line for one registration (or re-push).
pub fn registration_line(
    name: &str,
    version: u32,
    instance: Option<u64>,
    code: ErrorCode,
) -> String {
    let instance = instance.map_or_else(|| "-".to_owned(), |i| i.to_string());
    format!("{name} v{version} instance {instance}: {}", code.name())
}

fn report_notes(verbose: bool, notes: &[String]) {
    if verbose {
        for note in notes {
            say(note);
        }
    }
}

/// Calls the tool; `None` when there is none.
///
/// # Safety
/// `tables` must point to `len` table pointers, as the tool will read them.
unsafe fn call_tool(
    tool: Option<SetApiTableFn>,
    lib: Library,
    version: u32,
    instance: u64,
    tables: *mut *mut c_void,
    len: u64,
) -> Option<c_int> {
    let tool = tool?;
    // SAFETY: `tool` is a `rocprofiler_set_api_table` found by discovery; the
    // name is a static NUL-terminated string and the caller guarantees the
    // table array.
    Some(unsafe {
        tool(
            lib.common_name().as_ptr(),
            u64::from(version),
            instance,
            tables,
            len,
        )
    })
}

/// The body of `rocprofiler_register_library_api_table`, returning the code
/// and the instance (if one was assigned).
///
/// # Safety
/// As for the export.
unsafe fn register(
    lib_name: *const c_char,
    lib_version: u32,
    api_tables: *mut *mut c_void,
    api_table_length: u64,
    register_id: *mut rocprofiler_register_library_indentifier_t,
    verbose: bool,
) -> (ErrorCode, Option<u64>) {
    if lib_name.is_null() || api_tables.is_null() || register_id.is_null() {
        return (ErrorCode::InvalidArgument, None);
    }
    if api_table_length < 1 {
        return (ErrorCode::BadApiTableLength, None);
    }
    let Some(len) = usize::try_from(api_table_length)
        .ok()
        .filter(|&n| n <= isize::MAX as usize / size_of::<*mut c_void>())
    else {
        return (ErrorCode::BadApiTableLength, None);
    };
    if !env::enabled() {
        return (ErrorCode::NoTools, None);
    }
    let Some(_guard) = ReentryGuard::enter() else {
        return (ErrorCode::Deadlock, None);
    };

    // SAFETY: non-null and, per the contract, a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(lib_name) };
    let copy: Vec<usize> = {
        // SAFETY: non-null and, per the contract, `len` readable pointers;
        // the slice is dropped before the tool may write to the array.
        let tables = unsafe { std::slice::from_raw_parts(api_tables, len) };
        tables.iter().map(|p| p.expose_provenance()).collect()
    };
    let claim = match registry().claim(name.to_bytes(), lib_version, copy) {
        Ok(claim) => claim,
        Err(code) => return (code, None),
    };
    // SAFETY: non-null and, per the contract, valid for writes.
    unsafe {
        register_id.write(rocprofiler_register_library_indentifier_t {
            handle: claim.handle,
        });
    }

    let scan = discovery::scan(&ToolConfig::from_env());
    report_notes(verbose, &scan.notes);
    // SAFETY: `api_tables` holds `api_table_length` pointers (contract).
    let ret = unsafe {
        call_tool(
            scan.set_api_table,
            claim.lib,
            lib_version,
            claim.instance,
            api_tables,
            api_table_length,
        )
    };
    let code = outcome_of_tool(ret);
    if code == ErrorCode::Success {
        registry().mark_propagated(claim.slot);
    }
    (code, Some(claim.instance))
}

/// Registers a library's API tables and, if a tool is present, hands them to
/// its `rocprofiler_set_api_table` before returning.
///
/// Returns `ROCP_REG_SUCCESS` when the tool accepted them, `ROCP_REG_NO_TOOLS`
/// when there is no tool (or `ROCPROFILER_REGISTER_ENABLED` is false), and the
/// other codes as described in `README.md`. `register_id->handle` is set once
/// the name and instance limit checks pass.
///
/// # Safety
/// `lib_name` must be null or a NUL-terminated string; `api_tables` null or
/// `api_table_length` readable pointers (the tool may also write the tables
/// they point to); `register_id` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_register_library_api_table(
    lib_name: *const c_char,
    import_func: rocprofiler_register_import_func_t,
    lib_version: u32,
    api_tables: *mut *mut c_void,
    api_table_length: u64,
    register_id: *mut rocprofiler_register_library_indentifier_t,
) -> rocprofiler_register_error_code_t {
    // Secure mode (checking where import_func lives) is not modelled.
    let _ = import_func;
    guarded(|| {
        let verbose = env::verbose();
        // SAFETY: the caller's contract is forwarded unchanged.
        let (code, instance) = unsafe {
            register(
                lib_name,
                lib_version,
                api_tables,
                api_table_length,
                register_id,
                verbose,
            )
        };
        if verbose {
            let name = if lib_name.is_null() {
                "(null)".into()
            } else {
                // SAFETY: non-null and NUL-terminated per the contract.
                unsafe { CStr::from_ptr(lib_name) }.to_string_lossy()
            };
            say(&registration_line(&name, lib_version, instance, code));
        }
        code
    })
}

/// A static message for an error code; unknown values get
/// `"rocprofiler_register_unknown_error"`.
///
/// # Safety
/// Always safe to call; `unsafe` only for ABI uniformity.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_register_error_string(
    error_code: rocprofiler_register_error_code_t,
) -> *const c_char {
    catch_unwind(|| codes::message_for_raw(error_code))
        .unwrap_or(codes::UNKNOWN_ERROR)
        .as_ptr()
}

/// Calls `callback` once per accepted registration, in registration order,
/// until it returns non-zero. Returns `ROCP_REG_INVALID_ARGUMENT` for a null
/// callback, else `ROCP_REG_SUCCESS`. The callback may call back into this
/// library (no lock is held while it runs).
///
/// # Safety
/// `callback` must be null or a valid function; `data` is passed through.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_register_iterate_registration_info(
    callback: rocprofiler_register_registration_info_cb_t,
    data: *mut c_void,
) -> rocprofiler_register_error_code_t {
    guarded(|| {
        let Some(callback) = callback else {
            return ErrorCode::InvalidArgument;
        };
        let snapshot: Vec<(Library, u32, u64)> = registry()
            .records()
            .iter()
            .map(|r| (r.lib, r.version, r.tables.len() as u64))
            .collect();
        for (lib, lib_version, api_table_length) in snapshot {
            let mut info = rocprofiler_register_registration_info_t {
                size: size_of::<rocprofiler_register_registration_info_t>(),
                common_name: lib.common_name().as_ptr(),
                lib_version,
                api_table_length,
            };
            // SAFETY: the caller supplied a valid callback; `info` lives for
            // the duration of the call.
            if unsafe { callback(&mut info, data) } != 0 {
                break;
            }
        }
        ErrorCode::Success
    })
}

fn invoke_registrations(all: bool) -> ErrorCode {
    let Some(_guard) = ReentryGuard::enter() else {
        return ErrorCode::Deadlock;
    };
    let pending: Vec<(usize, registry::Record)> = registry()
        .records()
        .iter()
        .enumerate()
        .filter(|(_, r)| all || !r.propagated)
        .map(|(slot, r)| (slot, r.clone()))
        .collect();
    if pending.is_empty() {
        return ErrorCode::Success;
    }
    let verbose = env::verbose();
    let scan = discovery::scan(&ToolConfig::from_env());
    report_notes(verbose, &scan.notes);
    if scan.set_api_table.is_none() {
        // Upstream silently skips when no tool is found.
        return ErrorCode::Success;
    }
    for (slot, record) in pending {
        let mut tables: Vec<*mut c_void> = record
            .tables
            .iter()
            .map(|&addr| std::ptr::with_exposed_provenance_mut(addr))
            .collect();
        // SAFETY: `tables` is a live array of `tables.len()` pointers; the
        // table addresses are the ones the runtime registered.
        let ret = unsafe {
            call_tool(
                scan.set_api_table,
                record.lib,
                record.version,
                record.instance,
                tables.as_mut_ptr(),
                tables.len() as u64,
            )
        };
        let code = outcome_of_tool(ret);
        if verbose {
            let name = record.lib.common_name().to_string_lossy();
            say(&format!(
                "{} (re-push)",
                registration_line(&name, record.version, Some(record.instance), code)
            ));
        }
        if code != ErrorCode::Success {
            return ErrorCode::RocprofilerError;
        }
        registry().mark_propagated(slot);
    }
    ErrorCode::Success
}

/// Hands every stored registration to the tool again (upstream uses this for
/// attach via ptrace). `SUCCESS` also when nothing is stored or no tool is
/// found; `ROCPROFILER_ERROR` at the first table set the tool rejects;
/// `DEADLOCK` from inside `rocprofiler_set_api_table`.
///
/// # Safety
/// The stored table pointers must still be valid (the registering runtimes
/// must still be loaded).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_register_invoke_all_registrations()
-> rocprofiler_register_error_code_t {
    guarded(|| invoke_registrations(true))
}

/// Like [`rocprofiler_register_invoke_all_registrations`] but only for
/// registrations no tool has accepted yet.
///
/// # Safety
/// As for [`rocprofiler_register_invoke_all_registrations`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_register_invoke_nonpropagated_registrations()
-> rocprofiler_register_error_code_t {
    guarded(|| invoke_registrations(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::{null, null_mut};

    fn register_raw(
        name: *const c_char,
        tables: *mut *mut c_void,
        len: u64,
        id: *mut rocprofiler_register_library_indentifier_t,
    ) -> c_int {
        // SAFETY: every pointer passed by the tests is null or valid.
        unsafe { rocprofiler_register_library_api_table(name, None, 10400, tables, len, id) }
    }

    #[test]
    fn null_arguments_are_invalid_and_leave_the_id_alone() {
        let mut table = [0usize; 2];
        let mut tables = [table.as_mut_ptr().cast::<c_void>()];
        let mut id = rocprofiler_register_library_indentifier_t { handle: 77 };
        let name = c"hsa".as_ptr();
        assert_eq!(
            register_raw(null(), tables.as_mut_ptr(), 1, &mut id),
            codes::ROCP_REG_INVALID_ARGUMENT
        );
        assert_eq!(
            register_raw(name, null_mut(), 1, &mut id),
            codes::ROCP_REG_INVALID_ARGUMENT
        );
        assert_eq!(
            register_raw(name, tables.as_mut_ptr(), 1, null_mut()),
            codes::ROCP_REG_INVALID_ARGUMENT
        );
        assert_eq!(id.handle, 77);
    }

    #[test]
    fn zero_and_absurd_lengths_are_bad_table_lengths() {
        let mut table = [0usize; 2];
        let mut tables = [table.as_mut_ptr().cast::<c_void>()];
        let mut id = rocprofiler_register_library_indentifier_t { handle: 5 };
        let name = c"hsa".as_ptr();
        for len in [0, u64::MAX, 1 << 62] {
            assert_eq!(
                register_raw(name, tables.as_mut_ptr(), len, &mut id),
                codes::ROCP_REG_BAD_API_TABLE_LENGTH,
                "{len}"
            );
        }
        assert_eq!(id.handle, 5);
    }

    #[test]
    fn error_string_export_returns_static_messages() {
        // SAFETY: always safe.
        let msg = |code| unsafe { CStr::from_ptr(rocprofiler_register_error_string(code)) };
        assert_eq!(msg(0).to_str(), Ok("Success"));
        assert_eq!(
            msg(codes::ROCP_REG_DEADLOCK).to_str(),
            Ok("rocprofiler-register deadlocked")
        );
        assert_eq!(msg(-7), codes::UNKNOWN_ERROR);
        assert_eq!(msg(codes::ROCP_REG_ERROR_CODE_END), codes::UNKNOWN_ERROR);
    }

    #[test]
    fn iterate_with_null_callback_is_invalid() {
        // SAFETY: a null callback is explicitly allowed and rejected.
        let rc = unsafe { rocprofiler_register_iterate_registration_info(None, null_mut()) };
        assert_eq!(rc, codes::ROCP_REG_INVALID_ARGUMENT);
    }

    #[test]
    fn verbose_line_format() {
        assert_eq!(
            registration_line("hsa", 10400, Some(0), ErrorCode::Success),
            "hsa v10400 instance 0: ROCP_REG_SUCCESS"
        );
        assert_eq!(
            registration_line("cuda", 1, None, ErrorCode::UnsupportedApi),
            "cuda v1 instance -: ROCP_REG_UNSUPPORTED_API"
        );
    }

    #[test]
    fn struct_layouts_match_the_c_header() {
        assert_eq!(size_of::<rocprofiler_register_library_indentifier_t>(), 8);
        assert_eq!(size_of::<rocprofiler_register_registration_info_t>(), 32);
        assert_eq!(
            std::mem::offset_of!(rocprofiler_register_registration_info_t, common_name),
            8
        );
        assert_eq!(
            std::mem::offset_of!(rocprofiler_register_registration_info_t, lib_version),
            16
        );
        assert_eq!(
            std::mem::offset_of!(rocprofiler_register_registration_info_t, api_table_length),
            24
        );
    }
}
