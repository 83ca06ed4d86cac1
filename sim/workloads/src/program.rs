//! What hipcc emits for a program's device code, in the simulator's format: a fat-binary
//! wrapper (`wslsim_fatbin_wrapper_t`, documented in `docs/SIMULATOR.md`) holding a WSLSIMCO
//! code object and a kernarg-layout blob, registered by the program's "constructor" with
//! `__hipRegisterFatBinary` + one `__hipRegisterFunction` per kernel, and unregistered at exit
//! with `__hipUnregisterFatBinary` (an `atexit` handler, as hipcc's constructor installs it).
//!
//! The bytes are written here independently of `sim/hip`'s parser, so a format mismatch fails
//! the tests instead of cancelling out.

use std::ffi::{CString, c_void};

use wslsim_codeobj::{CodeObjectBuilder, KernelBuilder};

use crate::kernels::KernelDef;
use crate::loader::hip;

/// `wslsim_fatbin_wrapper_t`.
#[repr(C)]
struct Wrapper {
    magic: u32,
    version: u32,
    code_object: *const u8,
    code_object_size: u64,
    kernarg_layout: *const u8,
    kernarg_layout_size: u64,
    reserved: u64,
}

const _: () = assert!(size_of::<Wrapper>() == 48);

/// The kernarg-layout blob for `kernels` (magic "WSKA", version 1, per kernel the argument
/// count and `{offset, size}` pairs).
fn kernarg_layout(kernels: &[&KernelDef]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"WSKA");
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for k in kernels {
        out.extend_from_slice(&(k.args.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for &(offset, size) in k.args {
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
        }
    }
    out
}

/// The code object for `kernels`.
fn code_object(kernels: &[&KernelDef]) -> Vec<u8> {
    let mut builder = CodeObjectBuilder::new();
    for k in kernels {
        let kernel = KernelBuilder::new(k.name)
            .impl_address(k.implementation as usize as u64)
            .kernarg(k.kernarg_size, 8)
            .vgprs(k.vgprs)
            .sgprs(k.sgprs)
            .wave32(true)
            .costs(k.valu_per_wave, k.salu_per_wave, 0)
            .private_segment_size(k.private_segment_size)
            .build()
            .unwrap_or_else(|e| crate::fail(&format!("kernel {}: {e}", k.name)));
        builder = builder.kernel(kernel);
    }
    builder.to_bytes()
}

/// Every handle [`register`] got, unregistered at exit (newest first).
static HANDLES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

extern "C" fn unregister_at_exit() {
    let handles = std::mem::take(&mut *HANDLES.lock().unwrap_or_else(|e| e.into_inner()));
    for handle in handles.into_iter().rev() {
        // SAFETY: a handle __hipRegisterFatBinary returned, unregistered once.
        unsafe { (hip().unregister_fat_binary)(handle as *mut *mut c_void) };
    }
}

/// The fat-binary wrapper for `kernels` (what `__hipRegisterFatBinary` and
/// `hipModuleLoadData` receive). The wrapper and its blobs live for the whole process, like the
/// compiler's globals.
pub fn fat_binary(kernels: &[&KernelDef]) -> *const c_void {
    let code: &'static [u8] = Box::leak(code_object(kernels).into_boxed_slice());
    let layout: &'static [u8] = Box::leak(kernarg_layout(kernels).into_boxed_slice());
    let wrapper: &'static Wrapper = Box::leak(Box::new(Wrapper {
        magic: u32::from_le_bytes(*b"WSFB"),
        version: 1,
        code_object: code.as_ptr(),
        code_object_size: code.len() as u64,
        kernarg_layout: layout.as_ptr(),
        kernarg_layout_size: layout.len() as u64,
        reserved: 0,
    }));
    (wrapper as *const Wrapper).cast()
}

/// Registers the program's kernels the way a hipcc-generated constructor does:
/// `__hipRegisterFatBinary` with their [`fat_binary`], then `__hipRegisterFunction` for each
/// kernel (host stub → device name), then `atexit(__hipUnregisterFatBinary)`.
pub fn register(kernels: &[&KernelDef]) {
    let hip = hip();
    // SAFETY: a valid wrapper that outlives the process's use of it.
    let handle = unsafe { (hip.register_fat_binary)(fat_binary(kernels)) };
    if handle.is_null() {
        crate::fail("__hipRegisterFatBinary refused the program's fat binary");
    }
    for k in kernels {
        let name: &'static CString = Box::leak(Box::new(CString::new(k.name).unwrap_or_default()));
        // SAFETY: the handle, the stub address and a NUL-terminated name that lives forever;
        // the optional pointers are null as in hipcc's output.
        unsafe {
            (hip.register_function)(
                handle,
                k.host_stub,
                name.as_ptr().cast_mut(),
                name.as_ptr(),
                u32::MAX,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }
    let mut handles = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    if handles.is_empty() {
        // SAFETY: registers a plain extern "C" fn().
        unsafe { libc::atexit(unregister_at_exit) };
    }
    handles.push(handle as usize);
}
