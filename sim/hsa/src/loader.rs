//! The AMD loader extension (`hsa_ven_amd_loader`, extension 0x201) and the device address
//! space kernel objects are placed in under `[faults] device_code_objects`.
//!
//! `hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, length, table)` copies
//! the first `length` bytes of the version 1.03 function table, as ROCr does. Of its seven
//! functions, `query_host_address`, `query_executable`, `executable_iterate_loaded_code_objects`
//! and `loaded_code_object_get_info` are simulated; the others are stubs that return
//! `HSA_STATUS_ERROR` and say so once.
//!
//! Loaded images and kernel objects normally live in host memory (an APU: device and host
//! share the address space; see [`crate::executable`]). With `device_code_objects`, images are
//! instead placed in an address range reserved with `PROT_NONE` (and version-1 kernel objects
//! are 64-byte slots of it): a host read faults, as a read of a code object in a discrete GPU's
//! memory would, and only `query_host_address` leads to the host copy.

use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::executable::{
    DescriptorBlock, executable_of, host_address, loaded_handles, loaded_info,
};
use crate::guard::{guard, say_once, write_out};
use crate::runtime;
use crate::types::*;

/// `HSA_EXTENSION_AMD_LOADER`.
pub const EXTENSION_AMD_LOADER: u16 = 0x201;
/// The loader extension's major version.
pub const LOADER_MAJOR: u16 = 1;
/// The loader extension's minor version (the table is `hsa_ven_amd_loader_1_03_pfn_t`).
pub const LOADER_MINOR: u16 = 3;

type Stub = unsafe extern "C" fn() -> Status;

/// The callback of `executable_iterate_loaded_code_objects`.
pub type LoadedCodeObjectCallback =
    unsafe extern "C" fn(Executable, LoadedCodeObject, *mut c_void) -> Status;

/// `hsa_ven_amd_loader_1_03_pfn_t`: seven function pointers, in the header's order.
#[repr(C)]
pub struct LoaderTable {
    pub query_host_address: unsafe extern "C" fn(*const c_void, *mut *const c_void) -> Status,
    pub query_segment_descriptors: Stub,
    pub query_executable: unsafe extern "C" fn(*const c_void, *mut Executable) -> Status,
    pub executable_iterate_loaded_code_objects:
        unsafe extern "C" fn(Executable, Option<LoadedCodeObjectCallback>, *mut c_void) -> Status,
    pub loaded_code_object_get_info:
        unsafe extern "C" fn(LoadedCodeObject, u32, *mut c_void) -> Status,
    pub code_object_reader_create_from_file_with_offset_size: Stub,
    pub iterate_executables: Stub,
}

const _: () = assert!(size_of::<LoaderTable>() == 56);

const STUB_NAMES: [&str; 3] = [
    "hsa_ven_amd_loader_query_segment_descriptors",
    "hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size",
    "hsa_ven_amd_loader_iterate_executables",
];

/// A loader function the simulator does not implement.
///
/// # Safety
///
/// None: it reads no argument (harmless with any caller signature on x86-64 SysV).
unsafe extern "C" fn stub<const K: usize>() -> Status {
    let _ = std::panic::catch_unwind(|| {
        say_once(format!(
            "libhsa-runtime64 (sim): {} is not implemented",
            STUB_NAMES[K]
        ))
    });
    ERROR
}

/// The runtime's loader table.
pub static LOADER_TABLE: LoaderTable = LoaderTable {
    query_host_address: hsa_ven_amd_loader_query_host_address,
    query_segment_descriptors: stub::<0>,
    query_executable: hsa_ven_amd_loader_query_executable,
    executable_iterate_loaded_code_objects:
        hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
    loaded_code_object_get_info: hsa_ven_amd_loader_loaded_code_object_get_info,
    code_object_reader_create_from_file_with_offset_size: stub::<1>,
    iterate_executables: stub::<2>,
};

/// Whether the scenario offers the loader extension.
pub fn offered() -> bool {
    wslsim_scenario::current().faults.loader_extension
}

/// `hsa_system_get_major_extension_table`: the AMD loader table (major 1), the first
/// `table_length` bytes of it; any other extension or major version is `HSA_STATUS_ERROR`.
pub unsafe extern "C" fn hsa_system_get_major_extension_table(
    extension: u16,
    version_major: u16,
    table_length: usize,
    table: *mut c_void,
) -> Status {
    guard(|| {
        runtime::require()?;
        if table.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        if extension != EXTENSION_AMD_LOADER || version_major != LOADER_MAJOR || !offered() {
            return Err(ERROR);
        }
        let n = table_length.min(size_of::<LoaderTable>());
        // SAFETY: the caller provides `table_length` writable bytes at `table`; the source is
        // the static table, which cannot overlap the caller's storage.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&raw const LOADER_TABLE).cast::<u8>(),
                table.cast::<u8>(),
                n,
            )
        };
        Ok(())
    })
}

/// `hsa_ven_amd_loader_query_host_address`: the host copy of a device address inside a loaded
/// kernel descriptor (`HSA_STATUS_ERROR_INVALID_ARGUMENT` for any other address).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_ven_amd_loader_query_host_address(
    device_address: *const c_void,
    host: *mut *const c_void,
) -> Status {
    guard(|| {
        runtime::require()?;
        if device_address.is_null() || host.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let found = host_address(device_address as u64).ok_or(ERROR_INVALID_ARGUMENT)?;
        // SAFETY: non-null; the caller provides a writable pointer.
        unsafe { write_out(host, found.cast::<c_void>()) }
    })
}

/// `hsa_ven_amd_loader_query_executable`: the executable a kernel object belongs to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_ven_amd_loader_query_executable(
    device_address: *const c_void,
    executable: *mut Executable,
) -> Status {
    guard(|| {
        runtime::require()?;
        if device_address.is_null() || executable.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let found = executable_of(device_address as u64).ok_or(ERROR_INVALID_ARGUMENT)?;
        // SAFETY: non-null; the caller provides a writable handle.
        unsafe { write_out(executable, found) }
    })
}

/// `hsa_ven_amd_loader_loaded_code_object_info_t`.
pub mod info {
    /// `HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE` (`hsa_executable_t`).
    pub const EXECUTABLE: u32 = 0;
    /// `…_KIND` (u32, [`super::kind`]).
    pub const KIND: u32 = 1;
    /// `…_AGENT` (`hsa_agent_t`).
    pub const AGENT: u32 = 2;
    /// `…_CODE_OBJECT_STORAGE_TYPE` (u32, [`super::storage`]).
    pub const CODE_OBJECT_STORAGE_TYPE: u32 = 3;
    /// `…_CODE_OBJECT_STORAGE_MEMORY_BASE` (u64).
    pub const CODE_OBJECT_STORAGE_MEMORY_BASE: u32 = 4;
    /// `…_CODE_OBJECT_STORAGE_MEMORY_SIZE` (u64).
    pub const CODE_OBJECT_STORAGE_MEMORY_SIZE: u32 = 5;
    /// `…_CODE_OBJECT_STORAGE_FILE` (int).
    pub const CODE_OBJECT_STORAGE_FILE: u32 = 6;
    /// `…_LOAD_DELTA` (i64).
    pub const LOAD_DELTA: u32 = 7;
    /// `…_LOAD_BASE` (u64).
    pub const LOAD_BASE: u32 = 8;
    /// `…_LOAD_SIZE` (u64).
    pub const LOAD_SIZE: u32 = 9;
    /// `…_URI_LENGTH` (u32).
    pub const URI_LENGTH: u32 = 10;
    /// `…_URI` (`URI_LENGTH` chars, no NUL).
    pub const URI: u32 = 11;
}

/// `hsa_ven_amd_loader_loaded_code_object_kind_t`.
pub mod kind {
    /// `…_KIND_NONE`.
    pub const NONE: u32 = 0;
    /// `…_KIND_PROGRAM`.
    pub const PROGRAM: u32 = 1;
    /// `…_KIND_AGENT`.
    pub const AGENT: u32 = 2;
}

/// `hsa_ven_amd_loader_code_object_storage_type_t`.
pub mod storage {
    /// `…_STORAGE_TYPE_NONE`.
    pub const NONE: u32 = 0;
    /// `…_STORAGE_TYPE_FILE`.
    pub const FILE: u32 = 1;
    /// `…_STORAGE_TYPE_MEMORY`.
    pub const MEMORY: u32 = 2;
}

/// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects`: `callback(executable, loaded
/// code object, data)` for each code object loaded into `executable`, in load order; a status
/// other than `HSA_STATUS_SUCCESS` stops the iteration and is returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_ven_amd_loader_executable_iterate_loaded_code_objects(
    executable: Executable,
    callback: Option<LoadedCodeObjectCallback>,
    data: *mut c_void,
) -> Status {
    guard(|| {
        runtime::require()?;
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        for handle in loaded_handles(executable)? {
            // SAFETY: the tool's callback with its own data (called outside the runtime's
            // locks, so it may query the loaded code object).
            let status = unsafe { callback(executable, LoadedCodeObject { handle }, data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

/// `hsa_ven_amd_loader_loaded_code_object_get_info`, as ROCr answers it: the storage is always
/// memory (the bytes handed to the loader; `CODE_OBJECT_STORAGE_FILE` is
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`), the load base and size are the image's, the delta the
/// load base (the image's own addresses start at 0), the URI
/// `memory://<pid>#offset=0x<storage>&size=<bytes>` copied without a NUL. An unknown handle is
/// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`, a null `value` or unknown attribute
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_ven_amd_loader_loaded_code_object_get_info(
    loaded_code_object: LoadedCodeObject,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        runtime::require()?;
        if value.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let loaded = loaded_info(loaded_code_object.handle).ok_or(ERROR_INVALID_CODE_OBJECT)?;
        // SAFETY: (all writes) `value` is non-null and the caller provides storage of the
        // attribute's type (URI: URI_LENGTH bytes).
        unsafe {
            match attribute {
                info::EXECUTABLE => write_out(value.cast(), loaded.executable),
                info::KIND => write_out(value.cast(), kind::AGENT),
                info::AGENT => write_out(value.cast(), loaded.agent),
                info::CODE_OBJECT_STORAGE_TYPE => write_out(value.cast(), storage::MEMORY),
                info::CODE_OBJECT_STORAGE_MEMORY_BASE => {
                    write_out(value.cast(), loaded.storage_base)
                }
                info::CODE_OBJECT_STORAGE_MEMORY_SIZE => {
                    write_out(value.cast(), loaded.storage_size)
                }
                info::LOAD_DELTA => write_out(value.cast(), loaded.load_base as i64),
                info::LOAD_BASE => write_out(value.cast(), loaded.load_base),
                info::LOAD_SIZE => write_out(value.cast(), loaded.load_size),
                info::URI_LENGTH => write_out(value.cast(), loaded.uri.len() as u32),
                info::URI => {
                    std::ptr::copy_nonoverlapping(
                        loaded.uri.as_ptr(),
                        value.cast::<u8>(),
                        loaded.uri.len(),
                    );
                    Ok(())
                }
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// Address space reserved for device kernel objects: 1 MiB kernel objects' worth.
const DEVICE_SPACE_BYTES: usize = 64 << 20;

/// A range of address space no host access may touch (`PROT_NONE`), handed out in 64-byte
/// slots that are never reused.
pub struct DeviceSpace {
    base: usize,
    size: usize,
    next: AtomicUsize,
}

impl DeviceSpace {
    /// Reserves `size` bytes of inaccessible address space (`None` if mmap refuses).
    pub fn reserve(size: usize) -> Option<DeviceSpace> {
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing; it
        // replaces nothing, and PROT_NONE + MAP_NORESERVE commits no memory.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then(|| DeviceSpace {
            base: p as usize,
            size,
            next: AtomicUsize::new(0),
        })
    }

    /// The next unused 64-byte slot (`None` when the range is used up).
    pub fn place(&self) -> Option<u64> {
        let offset = self
            .next
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n + DescriptorBlock::SIZE <= self.size).then_some(n + DescriptorBlock::SIZE)
            })
            .ok()?;
        Some((self.base + offset) as u64)
    }

    /// An unused range of `len` bytes starting at an address ≡ `phase` (mod 64), after a page
    /// boundary (`None` when the range is used up). Later slots stay 64-byte aligned.
    pub fn place_range(&self, len: usize, phase: u64) -> Option<u64> {
        let phase = (phase % 64) as usize;
        let mut start = 0;
        self.next
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                start = n.next_multiple_of(4096) + phase;
                let end = start
                    .checked_add(len)?
                    .next_multiple_of(DescriptorBlock::SIZE);
                (end <= self.size).then_some(end)
            })
            .ok()?;
        Some((self.base + start) as u64)
    }

    /// Whether `address` lies in the range.
    pub fn contains(&self, address: u64) -> bool {
        (self.base as u64..(self.base + self.size) as u64).contains(&address)
    }
}

/// The process's device range (`HSA_STATUS_ERROR_OUT_OF_RESOURCES` when it cannot be
/// reserved).
fn device_space() -> Result<&'static DeviceSpace, Status> {
    static SPACE: OnceLock<Option<DeviceSpace>> = OnceLock::new();
    let space = SPACE.get_or_init(|| DeviceSpace::reserve(DEVICE_SPACE_BYTES));
    space.as_ref().ok_or_else(|| {
        say_once("libhsa-runtime64 (sim): cannot reserve the device code-object range".into());
        ERROR_OUT_OF_RESOURCES
    })
}

fn used_up() -> Status {
    say_once("libhsa-runtime64 (sim): the device code-object range is used up".into());
    ERROR_OUT_OF_RESOURCES
}

/// The kernel object for the runtime's descriptor copy `block` of a version-1 kernel: its own
/// address, or a slot of the device space under `[faults] device_code_objects`
/// (`HSA_STATUS_ERROR_OUT_OF_RESOURCES` when that cannot be reserved or is used up).
pub fn kernel_object_for(block: &DescriptorBlock) -> Result<u64, Status> {
    if !wslsim_scenario::current().faults.device_code_objects {
        return Ok(block as *const DescriptorBlock as u64);
    }
    device_space()?.place().ok_or_else(used_up)
}

/// A device range of `len` bytes at an address ≡ `phase` (mod 64) for a loaded image under
/// `[faults] device_code_objects`.
pub fn device_range(len: usize, phase: u64) -> Result<u64, Status> {
    device_space()?.place_range(len, phase).ok_or_else(used_up)
}
