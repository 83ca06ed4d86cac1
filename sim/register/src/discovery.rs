//! Tool discovery with the real dynamic loader.
//!
//! 1. With force load in effect, every `ROCP_TOOL_LIBRARIES` entry is
//!    dlopened `RTLD_NOW | RTLD_GLOBAL`, so its symbols join the global scope
//!    (this stands in for the SDK, which loads those libraries upstream).
//! 2. A tool exists if force load is in effect or
//!    `dlsym(RTLD_DEFAULT, "rocprofiler_configure")` is non-null.
//! 3. `rocprofiler_set_api_table` comes from `dlsym(RTLD_DEFAULT)`, else from
//!    `$ROCPROFILER_REGISTER_LIBRARY`: dlopen `RTLD_NOLOAD`, then as given,
//!    then next to this library, then by basename; dlsym on that handle.
//!
//! Handles are never closed: the tool must stay mapped while it holds tables.

use std::ffi::{CStr, CString, OsStr, c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::env::{ToolConfig, split_tool_libraries};

/// `int rocprofiler_set_api_table(const char* name, uint64_t lib_version,
/// uint64_t lib_instance, void** tables, uint64_t num_tables)`.
pub type SetApiTableFn =
    unsafe extern "C" fn(*const c_char, u64, u64, *mut *mut c_void, u64) -> c_int;

/// Symbol whose presence marks a preloaded or linked tool.
pub const CONFIGURE_SYMBOL: &CStr = c"rocprofiler_configure";
/// Entry point that receives the API tables.
pub const SET_API_TABLE_SYMBOL: &CStr = c"rocprofiler_set_api_table";

/// What a scan found, plus loader messages for verbose output.
#[derive(Debug, Default)]
pub struct Scan {
    /// The tool's table entry point, if a tool was found and exports one.
    pub set_api_table: Option<SetApiTableFn>,
    /// Human-readable notes about failed loads and lookups.
    pub notes: Vec<String>,
}

/// Runs discovery as described in the module docs.
pub fn scan(cfg: &ToolConfig) -> Scan {
    let mut out = Scan::default();

    if cfg.force_load
        && let Some(libs) = &cfg.tool_libraries
    {
        for lib in split_tool_libraries(libs) {
            if let Err(err) = dlopen(lib, libc::RTLD_NOW | libc::RTLD_GLOBAL) {
                out.notes
                    .push(format!("cannot load tool {}: {err}", lib.to_string_lossy()));
            }
        }
    }

    let tool_present = cfg.force_load || !global_symbol(CONFIGURE_SYMBOL).is_null();
    if !tool_present {
        return out;
    }

    let mut entry = global_symbol(SET_API_TABLE_SYMBOL);
    if entry.is_null()
        && let Some(lib) = &cfg.register_library
    {
        match load_register_library(lib) {
            Ok(handle) => {
                // SAFETY: `handle` came from a successful dlopen and is never
                // closed; the symbol name is NUL-terminated.
                entry = unsafe { libc::dlsym(handle, SET_API_TABLE_SYMBOL.as_ptr()) };
                if entry.is_null() {
                    out.notes.push(format!(
                        "{} has no {}",
                        lib.to_string_lossy(),
                        SET_API_TABLE_SYMBOL.to_string_lossy()
                    ));
                }
            }
            Err(err) => out
                .notes
                .push(format!("cannot load {}: {err}", lib.to_string_lossy())),
        }
    }
    if entry.is_null() {
        out.notes.push(format!(
            "a tool was requested but no {} was found",
            SET_API_TABLE_SYMBOL.to_string_lossy()
        ));
        return out;
    }

    // SAFETY: the symbol is named `rocprofiler_set_api_table`, whose C
    // signature is exactly `SetApiTableFn`; a data pointer returned by dlsym
    // for a function symbol is its address, and it is non-null here.
    out.set_api_table = Some(unsafe { std::mem::transmute::<*mut c_void, SetApiTableFn>(entry) });
    out
}

/// `dlsym(RTLD_DEFAULT, name)`.
fn global_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: RTLD_DEFAULT is a valid pseudo-handle and `name` is a
    // NUL-terminated string.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The pending `dlerror()` text of this thread.
fn last_dl_error() -> String {
    // SAFETY: dlerror takes no arguments and returns null or a NUL-terminated
    // string owned by the loader, valid until the next dl* call on this
    // thread; it is copied before any such call.
    unsafe {
        let msg = libc::dlerror();
        if msg.is_null() {
            "unknown dlopen error".to_owned()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        }
    }
}

/// `dlopen(path, flags)`; the handle is deliberately leaked.
fn dlopen(path: &OsStr, flags: c_int) -> Result<*mut c_void, String> {
    let c_path =
        CString::new(path.as_bytes()).map_err(|_| "path contains a NUL byte".to_owned())?;
    // SAFETY: `c_path` is NUL-terminated and outlives the call; the flags are
    // valid dlopen mode bits. Loading runs the library's constructors, which
    // is what loading a tool means.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), flags) };
    if handle.is_null() {
        Err(last_dl_error())
    } else {
        Ok(handle)
    }
}

/// The candidate paths for `$ROCPROFILER_REGISTER_LIBRARY`, in upstream order
/// after the `RTLD_NOLOAD` probe: as given, next to `this_dir` (relative
/// values only), then the basename. Duplicates are dropped.
pub fn register_library_candidates(value: &OsStr, this_dir: Option<&Path>) -> Vec<PathBuf> {
    let given = PathBuf::from(value);
    let mut out = vec![given.clone()];
    let file_name = given.file_name().map(PathBuf::from);
    if !given.is_absolute()
        && let (Some(dir), Some(name)) = (this_dir, &file_name)
    {
        out.push(dir.join(name));
    }
    if let Some(name) = file_name {
        out.push(name);
    }
    let mut unique = Vec::with_capacity(out.len());
    for path in out {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

fn load_register_library(value: &OsStr) -> Result<*mut c_void, String> {
    if let Ok(handle) = dlopen(value, libc::RTLD_NOLOAD | libc::RTLD_LAZY) {
        return Ok(handle);
    }
    let this_dir = this_library_path().and_then(|p| p.parent().map(Path::to_path_buf));
    let mut last_err = String::new();
    for candidate in register_library_candidates(value, this_dir.as_deref()) {
        match dlopen(candidate.as_os_str(), libc::RTLD_GLOBAL | libc::RTLD_LAZY) {
            Ok(handle) => return Ok(handle),
            Err(err) => last_err = err,
        }
    }
    Err(last_err)
}

/// Path of the object this code is linked into (the cdylib when loaded as
/// `librocprofiler-register.so.0`).
fn this_library_path() -> Option<PathBuf> {
    let anchor = scan as fn(&ToolConfig) -> Scan as *const c_void;
    // SAFETY: Dl_info is plain old data, so all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `anchor` is an address inside this object and `info` is a valid
    // out-parameter for the duration of the call.
    let found = unsafe { libc::dladdr(anchor, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success dli_fname is a NUL-terminated string owned by the
    // loader for as long as the object stays loaded; it is copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(name.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn candidates_for_a_relative_value_try_given_then_own_dir_then_basename() {
        let got = register_library_candidates(
            OsStr::new("sub/libtool.so"),
            Some(Path::new("/opt/rocm/lib")),
        );
        assert_eq!(
            got,
            [
                PathBuf::from("sub/libtool.so"),
                PathBuf::from("/opt/rocm/lib/libtool.so"),
                PathBuf::from("libtool.so"),
            ]
        );
    }

    #[test]
    fn candidates_for_an_absolute_value_skip_the_own_dir() {
        let got = register_library_candidates(
            OsStr::new("/x/y/libtool.so"),
            Some(Path::new("/opt/rocm/lib")),
        );
        assert_eq!(
            got,
            [
                PathBuf::from("/x/y/libtool.so"),
                PathBuf::from("libtool.so")
            ]
        );
        let bare = register_library_candidates(OsStr::new("libtool.so"), None);
        assert_eq!(bare, [PathBuf::from("libtool.so")]);
    }

    #[test]
    fn no_tool_configured_finds_nothing_in_the_test_process() {
        // The unit-test binary exports neither tool symbol.
        let found = scan(&ToolConfig::default());
        assert!(found.set_api_table.is_none());
        assert!(found.notes.is_empty(), "{:?}", found.notes);
    }

    #[test]
    fn forced_load_of_missing_libraries_finds_nothing_and_says_why() {
        let cfg = ToolConfig::from_values(
            Some(OsString::from("/nonexistent/libnotool.so")),
            Some(OsString::from("/nonexistent/libnosdk.so")),
            None,
        );
        let found = scan(&cfg);
        assert!(found.set_api_table.is_none());
        let notes = found.notes.join("\n");
        assert!(
            notes.contains("cannot load tool /nonexistent/libnotool.so"),
            "{notes}"
        );
        assert!(
            notes.contains("cannot load /nonexistent/libnosdk.so"),
            "{notes}"
        );
    }

    #[test]
    fn dlopen_rejects_interior_nul() {
        let err = dlopen(OsStr::from_bytes(b"lib\0x.so"), libc::RTLD_LAZY);
        assert_eq!(err, Err("path contains a NUL byte".to_owned()));
    }
}
