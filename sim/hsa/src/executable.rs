//! Code-object readers, executables, symbols and the kernel-object registry the packet
//! processor looks dispatches up in.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, RwLock, RwLockWriteGuard};

use wslsim_codeobj::{DESCRIPTOR_SIZE, Kernel};

use crate::guard::{guard, write_out};
use crate::runtime;
use crate::types::*;

/// A kernel descriptor copy owned by the runtime (the host copy of the kernel object).
#[repr(C, align(64))]
pub struct DescriptorBlock(pub [u8; DESCRIPTOR_SIZE]);

impl DescriptorBlock {
    /// Bytes per descriptor (and per kernel object slot).
    pub const SIZE: usize = DESCRIPTOR_SIZE;
}

const _: () = assert!(DESCRIPTOR_SIZE == 64 && align_of::<DescriptorBlock>() == 64);

/// What a dispatch needs to know about a kernel object.
pub struct KernelEntry {
    pub kernel: Kernel,
    pub descriptor: Box<DescriptorBlock>,
    pub agent: Agent,
    /// The kernel object: the descriptor's address, or a device address (see [`crate::loader`]).
    object: u64,
    /// The CPU implementation's address, resolved on first use (0 = none).
    resolved: OnceLock<usize>,
}

impl KernelEntry {
    /// The kernel object (the descriptor's device address).
    pub fn kernel_object(&self) -> u64 {
        self.object
    }

    /// The CPU implementation: the code object's address, else `dlsym(RTLD_DEFAULT, host)`.
    pub fn implementation(&self) -> Option<KernelImpl> {
        let address = *self.resolved.get_or_init(|| {
            if self.kernel.impl_address != 0 {
                return self.kernel.impl_address as usize;
            }
            let Ok(name) = std::ffi::CString::new(self.kernel.host_symbol.clone()) else {
                return 0;
            };
            if name.is_empty() {
                return 0;
            }
            // SAFETY: dlsym over the global scope with a NUL-terminated name.
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
        });
        (address != 0).then(|| {
            // SAFETY: the code object names a function with the documented CPU-implementation
            // signature `void(const void*, const wslsim_launch_t*)`.
            unsafe { std::mem::transmute::<usize, KernelImpl>(address) }
        })
    }
}

struct Symbol {
    name: String,
    entry: Arc<KernelEntry>,
}

struct ExecutableObj {
    frozen: bool,
    // Boxed: a symbol's address is its handle and must not move when the Vec grows.
    #[allow(clippy::vec_box)]
    symbols: Vec<Box<Symbol>>,
}

#[derive(Default)]
struct Tables {
    // The Vec's address (stable inside the Arc) is the reader handle; a load parses a clone of
    // the Arc outside the lock.
    readers: HashMap<u64, Arc<Vec<u8>>>,
    executables: HashMap<u64, Box<ExecutableObj>>,
}

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);

fn with_tables<T>(f: impl FnOnce(&mut Tables) -> T) -> T {
    let mut guard = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Tables::default))
}

/// Kernel objects by address, looked up on every dispatch: kept out of [`TABLES`] so dispatches
/// only share a read lock. Written with the TABLES lock held (lock order: TABLES, KERNELS).
static KERNELS: LazyLock<RwLock<HashMap<u64, Arc<KernelEntry>>>> = LazyLock::new(RwLock::default);

fn kernels_mut() -> RwLockWriteGuard<'static, HashMap<u64, Arc<KernelEntry>>> {
    KERNELS.write().unwrap_or_else(|e| e.into_inner())
}

/// The kernel registered under `kernel_object`.
pub fn lookup_kernel(kernel_object: u64) -> Option<Arc<KernelEntry>> {
    let kernels = KERNELS.read().unwrap_or_else(|e| e.into_inner());
    kernels.get(&kernel_object).cloned()
}

/// The host address of `device_address` when it lies inside a loaded kernel descriptor (kernel
/// objects are 64-byte aligned and 64 bytes long). Valid while the executable is loaded.
pub fn host_address(device_address: u64) -> Option<*const u8> {
    let offset = device_address % DescriptorBlock::SIZE as u64;
    let entry = lookup_kernel(device_address - offset)?;
    // `offset` < 64: inside the runtime's descriptor copy, which the entry keeps alive.
    Some(entry.descriptor.0[offset as usize..].as_ptr())
}

/// The executable that loaded the kernel object `kernel_object`.
pub fn executable_of(kernel_object: u64) -> Option<Executable> {
    with_tables(|t| {
        t.executables.iter().find_map(|(handle, exe)| {
            exe.symbols
                .iter()
                .any(|s| s.entry.kernel_object() == kernel_object)
                .then_some(Executable { handle: *handle })
        })
    })
}

fn find_symbol(symbol: ExecutableSymbol) -> Option<(String, Arc<KernelEntry>)> {
    with_tables(|t| {
        t.executables.values().find_map(|exe| {
            exe.symbols
                .iter()
                .find(|s| &***s as *const Symbol as u64 == symbol.handle)
                .map(|s| (s.name.clone(), s.entry.clone()))
        })
    })
}

fn symbol_handles(executable: Executable) -> Result<Vec<(u64, Agent)>, Status> {
    with_tables(|t| {
        let exe = t
            .executables
            .get(&executable.handle)
            .ok_or(ERROR_INVALID_EXECUTABLE)?;
        Ok(exe
            .symbols
            .iter()
            .map(|s| (&**s as *const Symbol as u64, s.entry.agent))
            .collect())
    })
}

fn new_reader(bytes: Vec<u8>, reader: *mut CodeObjectReader) -> Result<(), Status> {
    if reader.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let shared = Arc::new(bytes);
    let handle = Arc::as_ptr(&shared) as u64;
    with_tables(|t| t.readers.insert(handle, shared));
    // SAFETY: non-null and writable per the API.
    unsafe { write_out(reader, CodeObjectReader { handle }) }
}

/// `hsa_code_object_reader_create_from_memory`.
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    reader: *mut CodeObjectReader,
) -> Status {
    guard(|| {
        runtime::require()?;
        if code_object.is_null() || size == 0 {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: the caller provides `size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) };
        new_reader(bytes.to_vec(), reader)
    })
}

/// `hsa_code_object_reader_create_from_file`: reads the whole file from offset 0.
pub unsafe extern "C" fn hsa_code_object_reader_create_from_file(
    file: i32,
    reader: *mut CodeObjectReader,
) -> Status {
    guard(|| {
        runtime::require()?;
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            // SAFETY: pread into a valid buffer; a bad descriptor fails with -1.
            let n = unsafe {
                libc::pread(
                    file,
                    chunk.as_mut_ptr().cast(),
                    chunk.len(),
                    bytes.len() as libc::off_t,
                )
            };
            if n < 0 {
                return Err(ERROR_INVALID_FILE);
            }
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..n as usize]);
        }
        new_reader(bytes, reader)
    })
}

/// `hsa_code_object_reader_destroy`.
pub unsafe extern "C" fn hsa_code_object_reader_destroy(reader: CodeObjectReader) -> Status {
    guard(|| {
        with_tables(|t| t.readers.remove(&reader.handle))
            .map(drop)
            .ok_or(ERROR_INVALID_CODE_OBJECT_READER)
    })
}

fn create_executable(executable: *mut Executable) -> Result<(), Status> {
    runtime::require()?;
    if executable.is_null() {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let boxed = Box::new(ExecutableObj {
        frozen: false,
        symbols: Vec::new(),
    });
    let handle = &*boxed as *const ExecutableObj as u64;
    with_tables(|t| t.executables.insert(handle, boxed));
    // SAFETY: non-null and writable per the API.
    unsafe { write_out(executable, Executable { handle }) }
}

/// `hsa_executable_create_alt`.
pub unsafe extern "C" fn hsa_executable_create_alt(
    _profile: u32,
    _rounding_mode: u32,
    _options: *const c_char,
    executable: *mut Executable,
) -> Status {
    guard(|| create_executable(executable))
}

/// `hsa_executable_create`.
pub unsafe extern "C" fn hsa_executable_create(
    _profile: u32,
    _state: u32,
    _options: *const c_char,
    executable: *mut Executable,
) -> Status {
    guard(|| create_executable(executable))
}

/// `hsa_executable_load_agent_code_object`: parses the code object and copies each kernel
/// descriptor into 64-byte aligned memory the runtime owns (the host copy; its address is the
/// kernel object unless `[faults] device_code_objects` places kernel objects at device
/// addresses, see [`crate::loader`]).
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: Executable,
    agent: Agent,
    reader: CodeObjectReader,
    _options: *const c_char,
    loaded: *mut LoadedCodeObject,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.gpu(agent).ok_or(ERROR_INVALID_AGENT)?;
        let bytes = with_tables(|t| t.readers.get(&reader.handle).cloned())
            .ok_or(ERROR_INVALID_CODE_OBJECT_READER)?;
        let kernels = wslsim_codeobj::parse(&bytes).map_err(|error| {
            eprintln!("libhsa-runtime64 (sim): cannot load code object: {error}");
            ERROR_INVALID_CODE_OBJECT
        })?;
        with_tables(|t| {
            let exe = t
                .executables
                .get_mut(&executable.handle)
                .ok_or(ERROR_INVALID_EXECUTABLE)?;
            if exe.frozen {
                return Err(ERROR_FROZEN_EXECUTABLE);
            }
            let mut registered = kernels_mut();
            for kernel in kernels {
                let descriptor = Box::new(DescriptorBlock(kernel.descriptor.0));
                let object = crate::loader::kernel_object_for(&descriptor)?;
                let entry = Arc::new(KernelEntry {
                    descriptor,
                    kernel,
                    agent,
                    object,
                    resolved: OnceLock::new(),
                });
                registered.insert(entry.kernel_object(), entry.clone());
                exe.symbols.push(Box::new(Symbol {
                    name: entry.kernel.symbol_name(),
                    entry,
                }));
            }
            Ok(())
        })?;
        if !loaded.is_null() {
            // SAFETY: non-null and writable per the API.
            unsafe {
                write_out(
                    loaded,
                    LoadedCodeObject {
                        handle: reader.handle,
                    },
                )?
            };
        }
        Ok(())
    })
}

/// `hsa_executable_freeze`.
pub unsafe extern "C" fn hsa_executable_freeze(
    executable: Executable,
    _options: *const c_char,
) -> Status {
    guard(|| {
        with_tables(|t| {
            let exe = t
                .executables
                .get_mut(&executable.handle)
                .ok_or(ERROR_INVALID_EXECUTABLE)?;
            if exe.frozen {
                return Err(ERROR_FROZEN_EXECUTABLE);
            }
            exe.frozen = true;
            Ok(())
        })
    })
}

/// `hsa_executable_destroy`: unregisters its kernel objects.
pub unsafe extern "C" fn hsa_executable_destroy(executable: Executable) -> Status {
    guard(|| {
        with_tables(|t| {
            let exe = t
                .executables
                .remove(&executable.handle)
                .ok_or(ERROR_INVALID_EXECUTABLE)?;
            let mut registered = kernels_mut();
            for symbol in &exe.symbols {
                registered.remove(&symbol.entry.kernel_object());
            }
            Ok(())
        })
    })
}

const EXECUTABLE_INFO_PROFILE: u32 = 1;
const EXECUTABLE_INFO_STATE: u32 = 2;
const EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE: u32 = 3;

/// `hsa_executable_get_info`.
pub unsafe extern "C" fn hsa_executable_get_info(
    executable: Executable,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let frozen = with_tables(|t| t.executables.get(&executable.handle).map(|e| e.frozen))
            .ok_or(ERROR_INVALID_EXECUTABLE)?;
        let out = value.cast::<u32>();
        // SAFETY: the caller provides storage of the attribute's type (all u32 enums here).
        unsafe {
            match attribute {
                EXECUTABLE_INFO_PROFILE => write_out(out, 0),
                EXECUTABLE_INFO_STATE => write_out(out, u32::from(frozen)),
                EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE => write_out(out, 2),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_executable_validate`.
pub unsafe extern "C" fn hsa_executable_validate(
    executable: Executable,
    result: *mut u32,
) -> Status {
    guard(|| {
        with_tables(|t| t.executables.contains_key(&executable.handle))
            .then_some(())
            .ok_or(ERROR_INVALID_EXECUTABLE)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(result, 0) }
    })
}

/// `hsa_executable_validate_alt`.
pub unsafe extern "C" fn hsa_executable_validate_alt(
    executable: Executable,
    _options: *const c_char,
    result: *mut u32,
) -> Status {
    // SAFETY: same contract.
    unsafe { hsa_executable_validate(executable, result) }
}

fn symbol_by_name(
    executable: Executable,
    name: &CStr,
    agent: Option<Agent>,
    symbol: *mut ExecutableSymbol,
) -> Result<(), Status> {
    let name = name.to_str().map_err(|_| ERROR_INVALID_SYMBOL_NAME)?;
    let found = with_tables(|t| {
        let exe = t
            .executables
            .get(&executable.handle)
            .ok_or(ERROR_INVALID_EXECUTABLE)?;
        exe.symbols
            .iter()
            .find(|s| s.name == name && agent.is_none_or(|a| a == s.entry.agent))
            .map(|s| &**s as *const Symbol as u64)
            .ok_or(ERROR_INVALID_SYMBOL_NAME)
    })?;
    // SAFETY: checked for null by write_out; writable per the API.
    unsafe { write_out(symbol, ExecutableSymbol { handle: found }) }
}

/// `hsa_executable_get_symbol_by_name` (kernel symbols are named `<kernel>.kd`).
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: Executable,
    symbol_name: *const c_char,
    agent: *const Agent,
    symbol: *mut ExecutableSymbol,
) -> Status {
    guard(|| {
        if symbol_name.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: a NUL-terminated name per the API.
        let name = unsafe { CStr::from_ptr(symbol_name) };
        // SAFETY: null or a valid agent handle per the API.
        let agent = (!agent.is_null()).then(|| unsafe { agent.read_unaligned() });
        symbol_by_name(executable, name, agent, symbol)
    })
}

/// `hsa_executable_get_symbol` (deprecated form).
pub unsafe extern "C" fn hsa_executable_get_symbol(
    executable: Executable,
    _module_name: *const c_char,
    symbol_name: *const c_char,
    agent: Agent,
    _call_convention: i32,
    symbol: *mut ExecutableSymbol,
) -> Status {
    guard(|| {
        if symbol_name.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: a NUL-terminated name per the API.
        let name = unsafe { CStr::from_ptr(symbol_name) };
        symbol_by_name(executable, name, Some(agent), symbol)
    })
}

// hsa_executable_symbol_info_t
const SYMBOL_INFO_TYPE: u32 = 0;
const SYMBOL_INFO_NAME_LENGTH: u32 = 1;
const SYMBOL_INFO_NAME: u32 = 2;
const SYMBOL_INFO_MODULE_NAME_LENGTH: u32 = 3;
const SYMBOL_INFO_MODULE_NAME: u32 = 4;
const SYMBOL_INFO_LINKAGE: u32 = 5;
const SYMBOL_INFO_KERNARG_SEGMENT_SIZE: u32 = 11;
const SYMBOL_INFO_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
const SYMBOL_INFO_GROUP_SEGMENT_SIZE: u32 = 13;
const SYMBOL_INFO_PRIVATE_SEGMENT_SIZE: u32 = 14;
const SYMBOL_INFO_DYNAMIC_CALLSTACK: u32 = 15;
const SYMBOL_INFO_IS_DEFINITION: u32 = 17;
const SYMBOL_INFO_CALL_CONVENTION: u32 = 18;
const SYMBOL_INFO_AGENT: u32 = 20;
const SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;
const SYMBOL_KIND_KERNEL: u32 = 1;
const SYMBOL_LINKAGE_PROGRAM: u32 = 1;

/// `hsa_executable_symbol_get_info`.
pub unsafe extern "C" fn hsa_executable_symbol_get_info(
    symbol: ExecutableSymbol,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    guard(|| {
        let (name, entry) = find_symbol(symbol).ok_or(ERROR_INVALID_EXECUTABLE_SYMBOL)?;
        let kd = wslsim_codeobj::KernelDescriptor(entry.descriptor.0);
        // SAFETY: (all writes) the caller provides storage of the attribute's type.
        unsafe {
            match attribute {
                SYMBOL_INFO_TYPE => write_out(value.cast(), SYMBOL_KIND_KERNEL),
                SYMBOL_INFO_NAME_LENGTH => write_out(value.cast(), name.len() as u32),
                SYMBOL_INFO_NAME => {
                    if value.is_null() {
                        return Err(ERROR_INVALID_ARGUMENT);
                    }
                    // Not NUL-terminated: exactly NAME_LENGTH bytes, as ROCr writes it.
                    std::ptr::copy_nonoverlapping(name.as_ptr(), value.cast::<u8>(), name.len());
                    Ok(())
                }
                SYMBOL_INFO_MODULE_NAME_LENGTH => write_out(value.cast(), 0u32),
                SYMBOL_INFO_MODULE_NAME => Ok(()),
                SYMBOL_INFO_LINKAGE => write_out(value.cast(), SYMBOL_LINKAGE_PROGRAM),
                SYMBOL_INFO_IS_DEFINITION => write_out(value.cast(), true),
                SYMBOL_INFO_AGENT => write_out(value.cast(), entry.agent),
                SYMBOL_INFO_KERNEL_OBJECT => write_out(value.cast(), entry.kernel_object()),
                SYMBOL_INFO_KERNARG_SEGMENT_SIZE => write_out(value.cast(), kd.kernarg_size()),
                SYMBOL_INFO_KERNARG_SEGMENT_ALIGNMENT => {
                    write_out(value.cast(), entry.kernel.kernarg_alignment)
                }
                SYMBOL_INFO_GROUP_SEGMENT_SIZE => {
                    write_out(value.cast(), kd.group_segment_fixed_size())
                }
                SYMBOL_INFO_PRIVATE_SEGMENT_SIZE => {
                    write_out(value.cast(), kd.private_segment_fixed_size())
                }
                SYMBOL_INFO_DYNAMIC_CALLSTACK => write_out(value.cast(), false),
                SYMBOL_INFO_CALL_CONVENTION => write_out(value.cast(), 0u32),
                _ => Err(ERROR_INVALID_ARGUMENT),
            }
        }
    })
}

/// `hsa_executable_iterate_symbols`.
pub unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: Executable,
    callback: Option<unsafe extern "C" fn(Executable, ExecutableSymbol, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    guard(|| {
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        for (handle, _) in symbol_handles(executable)? {
            // SAFETY: the application's callback with its own data.
            let status = unsafe { callback(executable, ExecutableSymbol { handle }, data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

/// `hsa_executable_iterate_agent_symbols`.
pub unsafe extern "C" fn hsa_executable_iterate_agent_symbols(
    executable: Executable,
    agent: Agent,
    callback: Option<
        unsafe extern "C" fn(Executable, Agent, ExecutableSymbol, *mut c_void) -> Status,
    >,
    data: *mut c_void,
) -> Status {
    guard(|| {
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        for (handle, owner) in symbol_handles(executable)? {
            if owner != agent {
                continue;
            }
            // SAFETY: the application's callback with its own data.
            let status = unsafe { callback(executable, agent, ExecutableSymbol { handle }, data) };
            if status != SUCCESS {
                return Err(status);
            }
        }
        Ok(())
    })
}

/// `hsa_executable_iterate_program_symbols`: there are no program symbols.
pub unsafe extern "C" fn hsa_executable_iterate_program_symbols(
    executable: Executable,
    _callback: Option<unsafe extern "C" fn(Executable, ExecutableSymbol, *mut c_void) -> Status>,
    _data: *mut c_void,
) -> Status {
    guard(|| symbol_handles(executable).map(drop))
}
