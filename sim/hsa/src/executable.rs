//! Code-object readers, executables, symbols, loaded code objects (their images in device
//! memory) and the kernel-object registry the packet processor looks dispatches up in.
//!
//! Loading a code object places a copy of its bytes, the **image**, at a device address (the
//! loaded code object's `LOAD_BASE`; host memory, an APU's, unless `[faults]
//! device_code_objects` puts it in the `PROT_NONE` device range). The image starts at an
//! address ≡ [`image_phase`] (mod 64) so that the kernel descriptors of a version-2 code object
//! — at file offsets 272 + 384·i — are 64-byte aligned: their image addresses are the kernel
//! objects, and kernel object + `kernel_code_entry_byte_offset` is the kernel's first
//! instruction in the same image. Version-1 code objects carry no code: their kernel objects
//! stay 64-byte descriptor copies of their own (see [`crate::loader`]).

use std::collections::{BTreeMap, HashMap};
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
    /// The runtime's copy of the descriptor (what the packet processor reads).
    pub descriptor: Box<DescriptorBlock>,
    pub agent: Agent,
    /// The kernel object: the descriptor's address in the image (version 2), or of the
    /// runtime's copy or a device slot (version 1, see [`crate::loader`]).
    object: u64,
    /// The device address of the kernel's first instruction (0: the code object has none).
    code: u64,
    /// The CPU implementation's address, resolved on first use (0 = none).
    resolved: OnceLock<usize>,
}

impl KernelEntry {
    /// The kernel object (the descriptor's device address).
    pub fn kernel_object(&self) -> u64 {
        self.object
    }

    /// The device address of the kernel's first instruction: kernel object +
    /// `kernel_code_entry_byte_offset`, inside the loaded image (0 for a version-1 kernel,
    /// which has no code).
    pub fn code_address(&self) -> u64 {
        self.code
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

/// A loaded code object's image: the code object's bytes at device address `base`.
pub struct Image {
    /// Device address of the first byte (`LOAD_BASE`, and `LOAD_DELTA`: the image's own
    /// addresses start at 0).
    pub base: u64,
    /// Bytes (`LOAD_SIZE`): the code object's size.
    pub size: u64,
    /// The host copy: `size` bytes from `host_offset` (the block is 64 bytes longer so the
    /// copy can start at the image's phase).
    host: Box<[u8]>,
    host_offset: usize,
}

impl Image {
    /// The host copy of the image.
    pub fn host_bytes(&self) -> &[u8] {
        &self.host[self.host_offset..self.host_offset + self.size as usize]
    }

    /// Whether `device_address` lies inside the image.
    pub fn contains(&self, device_address: u64) -> bool {
        (self.base..self.base + self.size).contains(&device_address)
    }
}

/// The address residue mod 64 an image starts at: the one that makes the descriptors of a
/// version-2 code object 64-byte aligned (every descriptor's file offset has the same residue,
/// records being 384 bytes); 0 when no kernel has code.
pub fn image_phase(kernels: &[Kernel]) -> u64 {
    kernels
        .iter()
        .find(|kernel| kernel.code_range().is_some())
        .map_or(0, |kernel| {
            let descriptor_at = (kernel.code_offset as i64)
                .wrapping_sub(kernel.descriptor.kernel_code_entry_byte_offset());
            (64 - (descriptor_at as u64 % 64)) % 64
        })
}

/// Copies `bytes` into a new image placed at a device address ≡ `phase` (mod 64): the host
/// copy's own address, or a range of the device space under `[faults] device_code_objects`.
fn load_image(bytes: &[u8], phase: u64) -> Result<Image, Status> {
    let mut host = vec![0u8; bytes.len() + 64].into_boxed_slice();
    let host_offset = ((phase + 64 - host.as_ptr() as u64 % 64) % 64) as usize;
    host[host_offset..host_offset + bytes.len()].copy_from_slice(bytes);
    let base = if wslsim_scenario::current().faults.device_code_objects {
        crate::loader::device_range(bytes.len(), phase)?
    } else {
        host.as_ptr() as u64 + host_offset as u64
    };
    Ok(Image {
        base,
        size: bytes.len() as u64,
        host,
        host_offset,
    })
}

/// One `hsa_executable_load_agent_code_object`: its address is the loaded code object handle.
pub struct LoadedObject {
    pub agent: Agent,
    /// The bytes the application handed to the loader (the reader's copy, kept alive here).
    pub storage: Arc<Vec<u8>>,
    pub image: Arc<Image>,
}

impl LoadedObject {
    /// ROCr's URI of a code object loaded from memory:
    /// `memory://<pid>#offset=0x<storage address>&size=<storage bytes>`.
    pub fn uri(&self) -> String {
        format!(
            "memory://{}#offset=0x{:x}&size={}",
            std::process::id(),
            self.storage.as_ptr() as u64,
            self.storage.len()
        )
    }
}

struct ExecutableObj {
    frozen: bool,
    // Boxed: a symbol's (loaded object's) address is its handle and must not move when the
    // Vec grows.
    #[allow(clippy::vec_box)]
    symbols: Vec<Box<Symbol>>,
    #[allow(clippy::vec_box)]
    loaded: Vec<Box<LoadedObject>>,
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

/// `f` on the executable `executable` (under the tables' lock), or `ERROR_INVALID_EXECUTABLE`.
fn with_executable<T>(
    executable: Executable,
    f: impl FnOnce(&mut ExecutableObj) -> Result<T, Status>,
) -> Result<T, Status> {
    with_tables(|t| {
        let exe = t
            .executables
            .get_mut(&executable.handle)
            .ok_or(ERROR_INVALID_EXECUTABLE)?;
        f(exe)
    })
}

/// Kernel objects by address, looked up on every dispatch: kept out of [`TABLES`] so dispatches
/// only share a read lock. Written with the TABLES lock held (lock order: TABLES, KERNELS,
/// IMAGES).
static KERNELS: LazyLock<RwLock<HashMap<u64, Arc<KernelEntry>>>> = LazyLock::new(RwLock::default);

/// Loaded images by device base, for [`host_address`].
static IMAGES: LazyLock<RwLock<BTreeMap<u64, Arc<Image>>>> = LazyLock::new(RwLock::default);

fn kernels_mut() -> RwLockWriteGuard<'static, HashMap<u64, Arc<KernelEntry>>> {
    KERNELS.write().unwrap_or_else(|e| e.into_inner())
}

fn images_mut() -> RwLockWriteGuard<'static, BTreeMap<u64, Arc<Image>>> {
    IMAGES.write().unwrap_or_else(|e| e.into_inner())
}

/// The loaded image holding `device_address`.
pub fn image_at(device_address: u64) -> Option<Arc<Image>> {
    let images = IMAGES.read().unwrap_or_else(|e| e.into_inner());
    let (_, image) = images.range(..=device_address).next_back()?;
    image.contains(device_address).then(|| image.clone())
}

/// The kernel registered under `kernel_object`.
pub fn lookup_kernel(kernel_object: u64) -> Option<Arc<KernelEntry>> {
    let kernels = KERNELS.read().unwrap_or_else(|e| e.into_inner());
    kernels.get(&kernel_object).cloned()
}

/// The host address of `device_address` when it lies inside a loaded image (its host copy) or
/// inside a version-1 kernel descriptor (kernel objects are 64-byte aligned and 64 bytes long).
/// Valid while the executable is loaded.
pub fn host_address(device_address: u64) -> Option<*const u8> {
    if let Some(image) = image_at(device_address) {
        let offset = (device_address - image.base) as usize;
        // Inside the host copy, which the image keeps alive while it is loaded.
        return Some(image.host_bytes()[offset..].as_ptr());
    }
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

/// What `hsa_ven_amd_loader_loaded_code_object_get_info` reports of a loaded code object.
pub struct LoadedInfo {
    pub executable: Executable,
    pub agent: Agent,
    pub storage_base: u64,
    pub storage_size: u64,
    pub load_base: u64,
    pub load_size: u64,
    pub uri: String,
}

/// The loaded code object `handle`, if some executable has it.
pub fn loaded_info(handle: u64) -> Option<LoadedInfo> {
    with_tables(|t| {
        t.executables.iter().find_map(|(&exe, obj)| {
            obj.loaded
                .iter()
                .find(|o| &***o as *const LoadedObject as u64 == handle)
                .map(|o| LoadedInfo {
                    executable: Executable { handle: exe },
                    agent: o.agent,
                    storage_base: o.storage.as_ptr() as u64,
                    storage_size: o.storage.len() as u64,
                    load_base: o.image.base,
                    load_size: o.image.size,
                    uri: o.uri(),
                })
        })
    })
}

/// The loaded code objects of `executable`, in load order.
pub fn loaded_handles(executable: Executable) -> Result<Vec<u64>, Status> {
    with_executable(executable, |exe| {
        Ok(exe
            .loaded
            .iter()
            .map(|o| &**o as *const LoadedObject as u64)
            .collect())
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
    with_executable(executable, |exe| {
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
        loaded: Vec::new(),
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

/// `hsa_executable_load_agent_code_object`: parses the code object, places its image (see the
/// module documentation) and registers each kernel: a version-2 kernel's object is its
/// descriptor in the image, a version-1 kernel's a 64-byte aligned descriptor copy the runtime
/// owns (or, under `[faults] device_code_objects`, a device slot, see [`crate::loader`]).
/// `*loaded` receives the loaded code object.
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
        let handle = with_executable(executable, |exe| {
            if exe.frozen {
                return Err(ERROR_FROZEN_EXECUTABLE);
            }
            let image = Arc::new(load_image(&bytes, image_phase(&kernels))?);
            let mut entries = Vec::with_capacity(kernels.len());
            for kernel in kernels {
                let descriptor = Box::new(DescriptorBlock(kernel.descriptor.0));
                let (object, code) = match kernel.code_range() {
                    Some(code) => {
                        let entry = kernel.descriptor.kernel_code_entry_byte_offset();
                        let object =
                            (image.base + code.start).wrapping_add_signed(entry.wrapping_neg());
                        (object, image.base + code.start)
                    }
                    None => (crate::loader::kernel_object_for(&descriptor)?, 0),
                };
                entries.push(Arc::new(KernelEntry {
                    descriptor,
                    kernel,
                    agent,
                    object,
                    code,
                    resolved: OnceLock::new(),
                }));
            }
            let mut registered = kernels_mut();
            for entry in entries {
                registered.insert(entry.kernel_object(), entry.clone());
                exe.symbols.push(Box::new(Symbol {
                    name: entry.kernel.symbol_name(),
                    entry,
                }));
            }
            images_mut().insert(image.base, image.clone());
            let object = Box::new(LoadedObject {
                agent,
                storage: bytes.clone(),
                image,
            });
            let handle = &*object as *const LoadedObject as u64;
            exe.loaded.push(object);
            Ok(handle)
        })?;
        if !loaded.is_null() {
            // SAFETY: non-null and writable per the API.
            unsafe { write_out(loaded, LoadedCodeObject { handle })? };
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
        with_executable(executable, |exe| {
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
            let mut images = images_mut();
            for object in &exe.loaded {
                images.remove(&object.image.base);
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
        let frozen = with_executable(executable, |e| Ok(e.frozen))?;
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
        with_executable(executable, |_| Ok(()))?;
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
    let found = with_executable(executable, |exe| {
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
