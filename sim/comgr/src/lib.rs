//! Simulated `libamd_comgr.so` (SONAME `libamd_comgr.so.3`, interface version 3.0): the part of
//! AMD's Code Object Manager C API that rocprofv3 uses to disassemble traced instructions,
//! over the simulated ISA of `wslsim-codeobj` instead of LLVM's AMDGPU disassembler.
//!
//! # The C API implemented (names, signatures and values as in `amd_comgr.h`)
//!
//! ```c
//! typedef enum amd_comgr_status_s {
//!     AMD_COMGR_STATUS_SUCCESS = 0x0,
//!     AMD_COMGR_STATUS_ERROR = 0x1,
//!     AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT = 0x2,
//!     AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES = 0x3,
//! } amd_comgr_status_t;
//! typedef struct amd_comgr_disassembly_info_s { uint64_t handle; } amd_comgr_disassembly_info_t;
//!
//! void amd_comgr_get_version(size_t *major, size_t *minor);
//! amd_comgr_status_t amd_comgr_status_string(amd_comgr_status_t status,
//!                                            const char **status_string);
//! amd_comgr_status_t amd_comgr_create_disassembly_info(
//!     const char *isa_name,
//!     uint64_t (*read_memory_callback)(uint64_t from, char *to, uint64_t size, void *user_data),
//!     void (*print_instruction_callback)(const char *instruction, void *user_data),
//!     void (*print_address_annotation_callback)(uint64_t address, void *user_data),
//!     amd_comgr_disassembly_info_t *disassembly_info);
//! amd_comgr_status_t amd_comgr_destroy_disassembly_info(
//!     amd_comgr_disassembly_info_t disassembly_info);
//! amd_comgr_status_t amd_comgr_disassemble_instruction(
//!     amd_comgr_disassembly_info_t disassembly_info, uint64_t address, void *user_data,
//!     uint64_t *size);
//! ```
//!
//! # Behaviour (modelled on comgr's `comgr.cpp` and `comgr-disassembly.cpp`)
//!
//! * `get_version` writes 3 and 0 (a null pointer is skipped).
//! * `status_string`: `"SUCCESS"`, `"ERROR"`, `"INVALID_ARGUMENT"`, `"OUT_OF_RESOURCES"`
//!   (static strings); a status outside 0..=3 or a null `status_string` is
//!   `ERROR_INVALID_ARGUMENT`.
//! * `create_disassembly_info`: `ERROR_INVALID_ARGUMENT` if `isa_name`, any callback or
//!   `disassembly_info` is null, or `isa_name` is not a gfx11 target ID: exactly
//!   `amdgcn-amd-amdhsa--gfx11` followed by two characters from `[0-9a-z]` (`gfx1100` …
//!   `gfx1103`, `gfx1150` … `gfx1153`, …) or `-generic` (`gfx11-generic`), then any number of
//!   `:<feature>+` / `:<feature>-`
//!   suffixes (`<feature>` lowercase letters and digits) — more lenient about features than
//!   comgr, which only accepts the ones the processor supports. Otherwise a new handle (never
//!   0) and `SUCCESS`.
//! * `destroy_disassembly_info`: `SUCCESS`, or `ERROR_INVALID_ARGUMENT` for a handle that is
//!   not live (0, never created, already destroyed — comgr itself would crash on those).
//! * `disassemble_instruction`: `ERROR_INVALID_ARGUMENT` for a handle that is not live or a
//!   null `size`. Otherwise, like comgr, **one** `read_memory_callback(address, buf, 20,
//!   user_data)` (20 = LLVM's `MaxInstLength` for amdgcn); the callback returns how many bytes
//!   it wrote — 0 or more than 20 is `ERROR` with `*size` untouched. The bytes read decode with
//!   [`wslsim_codeobj::decode_instruction`]: on success `*size` is set to the instruction's
//!   size (4 or 8), `print_instruction_callback(text, user_data)` is called once with the
//!   NUL-terminated text (valid only during the call) and the result is `SUCCESS`; bytes that
//!   do not decode (including an 8-byte instruction of which fewer than 8 bytes were read) give
//!   `ERROR` — comgr's status for an invalid encoding — with `*size = min(4, bytes read)` as
//!   LLVM reports it, and no print. `print_address_annotation_callback` is never called: the
//!   simulated ISA has no branches (comgr calls it only for branch targets).
//! * No panic crosses the C boundary: a panic inside the library returns `ERROR`.
//! * The library is thread-safe; callbacks are called on the caller's thread without any lock
//!   held, so they may call back into the library.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// `amd_comgr_status_t` (a C enum: 32 bits).
#[allow(non_camel_case_types)]
pub type amd_comgr_status_t = u32;

/// The call succeeded.
pub const AMD_COMGR_STATUS_SUCCESS: amd_comgr_status_t = 0;
/// A generic failure (e.g. an invalid instruction encoding).
pub const AMD_COMGR_STATUS_ERROR: amd_comgr_status_t = 1;
/// An argument is invalid.
pub const AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT: amd_comgr_status_t = 2;
/// Out of resources.
pub const AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES: amd_comgr_status_t = 3;

/// `AMD_COMGR_INTERFACE_VERSION_MAJOR` of the library this stands in for.
pub const INTERFACE_VERSION_MAJOR: usize = 3;
/// `AMD_COMGR_INTERFACE_VERSION_MINOR`.
pub const INTERFACE_VERSION_MINOR: usize = 0;
/// Bytes requested per `read_memory_callback` call (LLVM's `MaxInstLength` for amdgcn).
pub const MAX_INST_LENGTH: usize = 20;
/// The ISA-name prefix every accepted name starts with.
pub const ISA_PREFIX: &str = "amdgcn-amd-amdhsa--gfx11";

/// `amd_comgr_disassembly_info_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct amd_comgr_disassembly_info_t {
    /// Opaque handle; 0 is never a live one.
    pub handle: u64,
}

/// `read_memory_callback`: copies up to `size` bytes from `from` to `to`, returns the count.
pub type ReadMemoryCallback =
    unsafe extern "C" fn(from: u64, to: *mut c_char, size: u64, user_data: *mut c_void) -> u64;
/// `print_instruction_callback`.
pub type PrintInstructionCallback =
    unsafe extern "C" fn(instruction: *const c_char, user_data: *mut c_void);
/// `print_address_annotation_callback`.
pub type PrintAddressAnnotationCallback =
    unsafe extern "C" fn(address: u64, user_data: *mut c_void);

/// A live disassembly info object.
#[derive(Clone, Copy)]
struct Info {
    read: ReadMemoryCallback,
    print: PrintInstructionCallback,
    // Kept for fidelity; the simulated ISA has no branch targets to annotate.
    _annotate: PrintAddressAnnotationCallback,
}

static INFOS: Mutex<BTreeMap<u64, Info>> = Mutex::new(BTreeMap::new());
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

fn infos() -> std::sync::MutexGuard<'static, BTreeMap<u64, Info>> {
    INFOS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `body`, turning `Err(status)` into that status and a panic into `ERROR`.
fn guard(body: impl FnOnce() -> Result<(), amd_comgr_status_t>) -> amd_comgr_status_t {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => AMD_COMGR_STATUS_SUCCESS,
        Ok(Err(status)) => status,
        Err(_) => AMD_COMGR_STATUS_ERROR,
    }
}

/// Whether `name` is an ISA name this library disassembles (see the crate documentation).
pub fn is_supported_isa(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(ISA_PREFIX) else {
        return false;
    };
    let mut parts = rest.split(':');
    let processor = parts.next().unwrap_or("");
    let processor_ok = processor == "-generic"
        || processor.len() == 2
            && processor
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
    processor_ok
        && parts.all(|feature| {
            feature.strip_suffix(['+', '-']).is_some_and(|name| {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
            })
        })
}

/// `amd_comgr_get_version`.
///
/// # Safety
///
/// `major` and `minor` are null or valid for writing a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amd_comgr_get_version(major: *mut usize, minor: *mut usize) {
    if !major.is_null() {
        // SAFETY: non-null and writable per the caller's contract.
        unsafe { major.write_unaligned(INTERFACE_VERSION_MAJOR) };
    }
    if !minor.is_null() {
        // SAFETY: as above.
        unsafe { minor.write_unaligned(INTERFACE_VERSION_MINOR) };
    }
}

/// `amd_comgr_status_string`.
///
/// # Safety
///
/// `status_string` is null or valid for writing a `const char*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amd_comgr_status_string(
    status: amd_comgr_status_t,
    status_string: *mut *const c_char,
) -> amd_comgr_status_t {
    guard(|| {
        let text: &'static CStr = match status {
            AMD_COMGR_STATUS_SUCCESS => c"SUCCESS",
            AMD_COMGR_STATUS_ERROR => c"ERROR",
            AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT => c"INVALID_ARGUMENT",
            AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES => c"OUT_OF_RESOURCES",
            _ => return Err(AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT),
        };
        if status_string.is_null() {
            return Err(AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null and writable per the caller's contract; the string is static.
        unsafe { status_string.write_unaligned(text.as_ptr()) };
        Ok(())
    })
}

/// `amd_comgr_create_disassembly_info`.
///
/// # Safety
///
/// `isa_name` is null or a NUL-terminated string; the callbacks are null or functions of the
/// documented C signatures that stay callable until the info is destroyed; `disassembly_info`
/// is null or valid for writing an `amd_comgr_disassembly_info_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amd_comgr_create_disassembly_info(
    isa_name: *const c_char,
    read_memory_callback: Option<ReadMemoryCallback>,
    print_instruction_callback: Option<PrintInstructionCallback>,
    print_address_annotation_callback: Option<PrintAddressAnnotationCallback>,
    disassembly_info: *mut amd_comgr_disassembly_info_t,
) -> amd_comgr_status_t {
    guard(|| {
        let invalid = AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT;
        if isa_name.is_null() || disassembly_info.is_null() {
            return Err(invalid);
        }
        // SAFETY: non-null and NUL-terminated per the caller's contract.
        let name = unsafe { CStr::from_ptr(isa_name) };
        if !name.to_str().is_ok_and(is_supported_isa) {
            return Err(invalid);
        }
        let (Some(read), Some(print), Some(annotate)) = (
            read_memory_callback,
            print_instruction_callback,
            print_address_annotation_callback,
        ) else {
            return Err(invalid);
        };
        let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        infos().insert(
            handle,
            Info {
                read,
                print,
                _annotate: annotate,
            },
        );
        // SAFETY: non-null and writable per the caller's contract.
        unsafe { disassembly_info.write_unaligned(amd_comgr_disassembly_info_t { handle }) };
        Ok(())
    })
}

/// `amd_comgr_destroy_disassembly_info`.
///
/// # Safety
///
/// None beyond the C signature: any handle value is accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amd_comgr_destroy_disassembly_info(
    disassembly_info: amd_comgr_disassembly_info_t,
) -> amd_comgr_status_t {
    guard(|| {
        infos()
            .remove(&disassembly_info.handle)
            .map(drop)
            .ok_or(AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT)
    })
}

/// `amd_comgr_disassemble_instruction`.
///
/// # Safety
///
/// `size` is null or valid for writing a `uint64_t`; `address` and `user_data` are whatever the
/// info's callbacks accept (they are passed through unchanged).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amd_comgr_disassemble_instruction(
    disassembly_info: amd_comgr_disassembly_info_t,
    address: u64,
    user_data: *mut c_void,
    size: *mut u64,
) -> amd_comgr_status_t {
    guard(|| {
        let info = infos()
            .get(&disassembly_info.handle)
            .copied()
            .ok_or(AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT)?;
        if size.is_null() {
            return Err(AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT);
        }
        let mut buffer = [0u8; MAX_INST_LENGTH];
        // SAFETY: the callback has the documented signature (checked non-null at creation) and
        // writes at most the requested MAX_INST_LENGTH bytes into `buffer`, which has that many.
        let read = unsafe {
            (info.read)(
                address,
                buffer.as_mut_ptr().cast(),
                MAX_INST_LENGTH as u64,
                user_data,
            )
        };
        if read == 0 || read > MAX_INST_LENGTH as u64 {
            return Err(AMD_COMGR_STATUS_ERROR);
        }
        let bytes = &buffer[..read as usize];
        let Some(instruction) = wslsim_codeobj::decode_instruction(bytes, 0) else {
            // SAFETY: non-null (checked above) and writable per the caller's contract.
            unsafe { size.write_unaligned(read.min(4)) };
            return Err(AMD_COMGR_STATUS_ERROR);
        };
        let text = CString::new(instruction.text).map_err(|_| AMD_COMGR_STATUS_ERROR)?;
        // SAFETY: as above.
        unsafe { size.write_unaligned(u64::from(instruction.size)) };
        // SAFETY: the callback has the documented signature; `text` is NUL-terminated and
        // outlives the call.
        unsafe { (info.print)(text.as_ptr(), user_data) };
        Ok(())
    })
}

#[cfg(test)]
mod tests;
