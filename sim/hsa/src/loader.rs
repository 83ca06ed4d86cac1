//! The AMD loader extension (`hsa_ven_amd_loader`, extension 0x201) and the device address
//! space kernel objects are placed in under `[faults] device_code_objects`.
//!
//! `hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, length, table)` copies
//! the first `length` bytes of the version 1.03 function table, as ROCr does. Of its seven
//! functions, `query_host_address` and `query_executable` are simulated; the others are stubs
//! that return `HSA_STATUS_ERROR` and say so once.
//!
//! Kernel objects are normally the addresses of the runtime's 64-byte descriptor copies (an
//! APU: device and host share the address space). With `device_code_objects`, each kernel
//! object is instead a 64-byte slot in an address range reserved with `PROT_NONE`: a host read
//! of it faults, as a read of a code object in a discrete GPU's memory would, and only
//! `query_host_address` leads to the host copy.

use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::executable::{DescriptorBlock, executable_of, host_address};
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

/// `hsa_ven_amd_loader_1_03_pfn_t`: seven function pointers, in the header's order.
#[repr(C)]
pub struct LoaderTable {
    pub query_host_address: unsafe extern "C" fn(*const c_void, *mut *const c_void) -> Status,
    pub query_segment_descriptors: Stub,
    pub query_executable: unsafe extern "C" fn(*const c_void, *mut Executable) -> Status,
    pub executable_iterate_loaded_code_objects: Stub,
    pub loaded_code_object_get_info: Stub,
    pub code_object_reader_create_from_file_with_offset_size: Stub,
    pub iterate_executables: Stub,
}

const _: () = assert!(size_of::<LoaderTable>() == 56);

const STUB_NAMES: [&str; 5] = [
    "hsa_ven_amd_loader_query_segment_descriptors",
    "hsa_ven_amd_loader_executable_iterate_loaded_code_objects",
    "hsa_ven_amd_loader_loaded_code_object_get_info",
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
    executable_iterate_loaded_code_objects: stub::<1>,
    loaded_code_object_get_info: stub::<2>,
    code_object_reader_create_from_file_with_offset_size: stub::<3>,
    iterate_executables: stub::<4>,
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

    /// Whether `address` lies in the range.
    pub fn contains(&self, address: u64) -> bool {
        (self.base as u64..(self.base + self.size) as u64).contains(&address)
    }
}

/// The kernel object for the runtime's descriptor copy `block`: its own address, or a slot of
/// the device space under `[faults] device_code_objects` (`HSA_STATUS_ERROR_OUT_OF_RESOURCES`
/// when that cannot be reserved or is used up).
pub fn kernel_object_for(block: &DescriptorBlock) -> Result<u64, Status> {
    if !wslsim_scenario::current().faults.device_code_objects {
        return Ok(block as *const DescriptorBlock as u64);
    }
    static SPACE: OnceLock<Option<DeviceSpace>> = OnceLock::new();
    let space = SPACE.get_or_init(|| DeviceSpace::reserve(DEVICE_SPACE_BYTES));
    let Some(space) = space else {
        say_once("libhsa-runtime64 (sim): cannot reserve the device code-object range".into());
        return Err(ERROR_OUT_OF_RESOURCES);
    };
    space.place().ok_or_else(|| {
        say_once("libhsa-runtime64 (sim): the device code-object range is used up".into());
        ERROR_OUT_OF_RESOURCES
    })
}
