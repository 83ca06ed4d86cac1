//! The implementations behind the HIP compiler table (`HipCompilerDispatchTable`): what a
//! hipcc-compiled program's constructor (`__hipRegisterFatBinary`, `__hipRegisterFunction`),
//! its kernel call sites (`__hipPushCallConfiguration`) and device stubs
//! (`__hipPopCallConfiguration`) and its exit handler (`__hipUnregisterFatBinary`) call.
//! These do not initialise the runtime: registration only records (a fat binary registered
//! before initialisation is loaded during it).

// Every `unsafe extern "C"` entry point here has the same safety contract: that of the HIP
// API function it implements (valid handles; pointers valid for what the API reads or writes).
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{self, HipError};
use crate::modules;
use crate::ops::Dim3;
use crate::runtime::warn;

/// One `<<<grid, block, shmem, stream>>>` configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallConfiguration {
    /// Grid in workgroups.
    pub grid: Dim3,
    /// Workgroup size.
    pub block: Dim3,
    /// Dynamic LDS bytes.
    pub shared_mem: usize,
    /// `hipStream_t`.
    pub stream: usize,
}

thread_local! {
    static CONFIGURATIONS: RefCell<Vec<CallConfiguration>> = const { RefCell::new(Vec::new()) };
}

/// Pushes a configuration on the calling thread's stack.
pub fn push_configuration(c: CallConfiguration) {
    CONFIGURATIONS.with(|s| s.borrow_mut().push(c));
}

/// Pops the calling thread's most recent configuration.
pub fn pop_configuration() -> Option<CallConfiguration> {
    CONFIGURATIONS.with(|s| s.borrow_mut().pop())
}

pub unsafe extern "C" fn __hipPushCallConfiguration(
    grid: Dim3,
    block: Dim3,
    shared_mem: usize,
    stream: *mut c_void,
) -> HipError {
    let r = catch_unwind(|| {
        push_configuration(CallConfiguration {
            grid,
            block,
            shared_mem,
            stream: stream as usize,
        });
        error::SUCCESS
    })
    .unwrap_or(error::UNKNOWN);
    error::record(r)
}

pub unsafe extern "C" fn __hipPopCallConfiguration(
    grid: *mut Dim3,
    block: *mut Dim3,
    shared_mem: *mut usize,
    stream: *mut *mut c_void,
) -> HipError {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let Some(c) = pop_configuration() else {
            return error::MISSING_CONFIGURATION;
        };
        // SAFETY: the device stub passes its locals; null ones are skipped.
        unsafe {
            if !grid.is_null() {
                grid.write_unaligned(c.grid);
            }
            if !block.is_null() {
                block.write_unaligned(c.block);
            }
            if !shared_mem.is_null() {
                shared_mem.write_unaligned(c.shared_mem);
            }
            if !stream.is_null() {
                stream.write_unaligned(c.stream as *mut c_void);
            }
        }
        error::SUCCESS
    }))
    .unwrap_or(error::UNKNOWN);
    error::record(r)
}

pub unsafe extern "C" fn __hipRegisterFatBinary(data: *const c_void) -> *mut *mut c_void {
    catch_unwind(|| {
        // SAFETY: `data` is the program's fat-binary wrapper (or garbage we reject by magic).
        match unsafe { crate::fatbin::read(data.cast()) } {
            Ok(fatbin) => modules::register_fatbin(fatbin),
            Err(e) => {
                warn(&format!("__hipRegisterFatBinary: {e}"));
                std::ptr::null_mut()
            }
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __hipRegisterFunction(
    modules: *mut *mut c_void,
    host_function: *const c_void,
    _device_function: *mut c_char,
    device_name: *const c_char,
    _thread_limit: u32,
    _tid: *mut c_void,
    _bid: *mut c_void,
    _block_dim: *mut Dim3,
    _grid_dim: *mut Dim3,
    _wave_size: *mut c_int,
) {
    let _ = catch_unwind(|| {
        if device_name.is_null() || host_function.is_null() {
            warn("__hipRegisterFunction: null host function or name");
            return;
        }
        // SAFETY: non-null, NUL-terminated (compiler-generated).
        let name = unsafe { CStr::from_ptr(device_name) }
            .to_string_lossy()
            .into_owned();
        if !modules::register_function(modules as usize, host_function as usize, name.clone()) {
            warn(&format!(
                "__hipRegisterFunction: unknown fat binary handle for {name}"
            ));
        }
    });
}

pub unsafe extern "C" fn __hipRegisterManagedVar(
    _module: *mut c_void,
    _pointer: *mut *mut c_void,
    _init_value: *mut c_void,
    _name: *const c_char,
    _size: usize,
    _align: u32,
) {
}

pub unsafe extern "C" fn __hipRegisterSurface(
    _modules: *mut *mut c_void,
    _var: *mut c_void,
    _host_var: *mut c_char,
    _device_var: *mut c_char,
    _type: c_int,
    _ext: c_int,
) {
}

pub unsafe extern "C" fn __hipRegisterTexture(
    _modules: *mut *mut c_void,
    _var: *mut c_void,
    _host_var: *mut c_char,
    _device_var: *mut c_char,
    _type: c_int,
    _norm: c_int,
    _ext: c_int,
) {
}

#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __hipRegisterVar(
    _modules: *mut *mut c_void,
    _var: *mut c_void,
    _host_var: *mut c_char,
    _device_var: *mut c_char,
    _ext: c_int,
    _size: usize,
    _constant: c_int,
    _global: c_int,
) {
}

pub unsafe extern "C" fn __hipUnregisterFatBinary(modules: *mut *mut c_void) {
    let _ = catch_unwind(|| {
        if !modules::unregister_fatbin(modules as usize) {
            warn("__hipUnregisterFatBinary: unknown fat binary handle");
        }
    });
}
