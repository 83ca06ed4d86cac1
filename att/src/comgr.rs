//! Naming traced instructions with AMD's Code Object Manager (`libamd_comgr`), as rocprofv3
//! does: comgr's disassembly API turns the bytes of a saved code object into instruction texts
//! and sizes.
//!
//! **Loading** ([`Comgr::open`]): `dlopen(soname, RTLD_LAZY | RTLD_LOCAL)` for each of
//! [`SONAMES`] in turn (comgr 3 of ROCm 7, comgr 2 of ROCm 5/6, then the unversioned
//! development link), so the dynamic loader's usual search (`LD_LIBRARY_PATH`, the cache,
//! the system directories) decides which file is used; [`Comgr::path`] names it. The four
//! functions of [`SYMBOLS`] are resolved all-or-nothing: a library lacking any of them is
//! refused with every missing name ([`Error::ComgrMissingSymbols`]), and when no soname loads the
//! error lists the names tried and says that instructions will be named by address
//! ([`Error::ComgrNotFound`]). A library that loads but lacks the symbols ends the search (it
//! is reported, not skipped). [`Comgr::open_in`] looks for the same names in given
//! directories, [`Comgr::open_path`] loads one file.
//!
//! **Addresses.** The callbacks serve the code object's bytes as they are in the saved `.out`
//! file, at address = file offset. That is what a vaddr is in the simulated code objects; in a
//! real ELF code object the text segment's vaddrs and file offsets coincide too for the objects
//! the ROCm toolchain writes (the first `PT_LOAD` maps offset 0 at vaddr 0).
//!
//! **Kernels.** [`Listing::disassemble_all`] needs each kernel's vaddr range, which a real ELF
//! gives by its symbols. The simulated code objects are not ELF, and the tool does not know
//! symbol sizes either, so this module also offers a **linear sweep**
//! ([`ComgrDisassembler::sweep`]): from a kernel's first instruction (its entry vaddr, which
//! the trace names: the decoder's occupancy records carry each kernel's pc, see
//! [`kernel_entries`]) it disassembles instruction after instruction until one whose mnemonic
//! is `s_endpgm` (inclusive), an instruction comgr cannot disassemble, the end of the bytes, or
//! [`MAX_SWEEP_INSTRUCTIONS`] instructions. That works for both kinds of code object as long
//! as a kernel ends with its only `s_endpgm` and has no data between its instructions.
//! [`ComgrDisassembler::list_kernels`] sweeps a set of entries into a [`Listing`] and adds each
//! swept kernel to the [`CodeObjectTable`], so that
//! [`crate::outputs::CodeView::build`] lists every instruction of each hit kernel.
//!
//! **Decoding.** [`ComgrIsa`] answers the decoder's `isa_cb` by disassembling the instruction
//! at each pc on demand (cached per `(code object id, vaddr)`), so instruction sizes are real
//! during stitching and no kernel range is needed before decoding.
//!
//! Every callback comgr calls runs under `catch_unwind`; no panic crosses the C boundary. The
//! callbacks assume what comgr does: they are called synchronously, on the calling thread,
//! during `amd_comgr_disassemble_instruction`, with the `user_data` passed to that call.

use crate::Error;
use crate::abi::Pc;
use crate::codeobj::{
    CodeObjectTable, DisassembledInstruction, Disassembler, KernelSymbol, Listing,
};
use crate::decode::{Decoded, Instruction, Isa};
use core::cell::{Cell, RefCell};
use core::ffi::{CStr, c_char, c_void};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use libloading::os::unix::Library;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::CString;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The sonames [`Comgr::open`] tries, in order.
pub const SONAMES: [&str; 3] = ["libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"];

/// The four entry points, in the order they are resolved.
pub const SYMBOLS: [&CStr; 4] = [
    c"amd_comgr_get_version",
    c"amd_comgr_create_disassembly_info",
    c"amd_comgr_disassemble_instruction",
    c"amd_comgr_destroy_disassembly_info",
];

/// What precedes a gfx target in comgr's ISA names: `amdgcn-amd-amdhsa--gfx1150`.
pub const ISA_NAME_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// The most instructions one [`ComgrDisassembler::sweep`] lists.
pub const MAX_SWEEP_INSTRUCTIONS: usize = 65_536;

/// The mnemonic that ends a sweep.
pub const END_MNEMONIC: &str = "s_endpgm";

/// `amd_comgr_status_t` (a C enum of non-negative values: 32 bits).
#[repr(transparent)]
#[must_use]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComgrStatus(pub u32);

impl ComgrStatus {
    /// `AMD_COMGR_STATUS_SUCCESS` (0).
    pub const SUCCESS: Self = Self(0);
    /// `AMD_COMGR_STATUS_ERROR` (1): a generic failure, e.g. bytes that are no instruction.
    pub const ERROR: Self = Self(1);
    /// `AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT` (2), e.g. an ISA name comgr does not know.
    pub const ERROR_INVALID_ARGUMENT: Self = Self(2);
    /// `AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES` (3).
    pub const ERROR_OUT_OF_RESOURCES: Self = Self(3);

    /// True for [`ComgrStatus::SUCCESS`] only.
    pub const fn is_success(self) -> bool {
        self.0 == Self::SUCCESS.0
    }

    /// The enumerator's name without `AMD_COMGR_STATUS_`, if this crate knows the value.
    pub const fn name(self) -> Option<&'static str> {
        match self.0 {
            0 => Some("SUCCESS"),
            1 => Some("ERROR"),
            2 => Some("ERROR_INVALID_ARGUMENT"),
            3 => Some("ERROR_OUT_OF_RESOURCES"),
            _ => None,
        }
    }
}

impl fmt::Display for ComgrStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{} (unknown)", self.0),
        }
    }
}

impl fmt::Debug for ComgrStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `amd_comgr_disassembly_info_t`: `struct { uint64_t handle; }`, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DisassemblyInfo {
    /// The opaque handle.
    pub handle: u64,
}

const _: () = assert!(size_of::<DisassemblyInfo>() == 8 && align_of::<DisassemblyInfo>() == 8);

/// `read_memory_callback`: copies up to `size` bytes from address `from` to `to` and returns
/// how many it copied.
pub type ReadMemoryCallback =
    unsafe extern "C" fn(from: u64, to: *mut c_char, size: u64, user_data: *mut c_void) -> u64;
/// `print_instruction_callback`: one NUL-terminated instruction text, valid during the call.
pub type PrintInstructionCallback =
    unsafe extern "C" fn(instruction: *const c_char, user_data: *mut c_void);
/// `print_address_annotation_callback`: a branch target's address.
pub type PrintAddressAnnotationCallback =
    unsafe extern "C" fn(address: u64, user_data: *mut c_void);
/// `void amd_comgr_get_version(size_t *major, size_t *minor)`.
pub type GetVersionFn = unsafe extern "C" fn(major: *mut usize, minor: *mut usize);
/// `amd_comgr_create_disassembly_info`.
pub type CreateDisassemblyInfoFn = unsafe extern "C" fn(
    isa_name: *const c_char,
    read_memory_callback: ReadMemoryCallback,
    print_instruction_callback: PrintInstructionCallback,
    print_address_annotation_callback: PrintAddressAnnotationCallback,
    disassembly_info: *mut DisassemblyInfo,
) -> ComgrStatus;
/// `amd_comgr_disassemble_instruction`.
pub type DisassembleInstructionFn = unsafe extern "C" fn(
    disassembly_info: DisassemblyInfo,
    address: u64,
    user_data: *mut c_void,
    size: *mut u64,
) -> ComgrStatus;
/// `amd_comgr_destroy_disassembly_info`.
pub type DestroyDisassemblyInfoFn =
    unsafe extern "C" fn(disassembly_info: DisassemblyInfo) -> ComgrStatus;

/// comgr's four entry points used here.
#[derive(Debug, Clone, Copy)]
pub struct ComgrFns {
    /// `amd_comgr_get_version`.
    pub get_version: GetVersionFn,
    /// `amd_comgr_create_disassembly_info`.
    pub create_disassembly_info: CreateDisassemblyInfoFn,
    /// `amd_comgr_disassemble_instruction`.
    pub disassemble_instruction: DisassembleInstructionFn,
    /// `amd_comgr_destroy_disassembly_info`.
    pub destroy_disassembly_info: DestroyDisassemblyInfoFn,
}

impl ComgrFns {
    /// Resolves all four entry points through `lookup`, asking for [`SYMBOLS`] in order.
    ///
    /// All-or-nothing: when any is missing the error names every missing one and `library`.
    ///
    /// # Errors
    /// [`Error::ComgrMissingSymbols`].
    ///
    /// # Safety
    /// Every non-null pointer `lookup` returns must be a function with the C signature of
    /// comgr's entry point of that name, callable for as long as the table is used.
    pub unsafe fn load(
        library: &Path,
        lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
    ) -> Result<Self, Error> {
        let [version, create, disassemble, destroy] = crate::library::resolve_all(&SYMBOLS, lookup)
            .map_err(|symbols| Error::ComgrMissingSymbols {
                library: library.to_owned(),
                symbols,
            })?;
        // SAFETY: each pointer was returned for the symbol of the matching name, which the
        // caller guarantees has the C signature of the function-pointer type it becomes here;
        // data and function pointers have the same size and representation on the supported
        // (x86-64 Linux) targets.
        unsafe {
            Ok(Self {
                get_version: core::mem::transmute::<*mut c_void, GetVersionFn>(version.as_ptr()),
                create_disassembly_info: core::mem::transmute::<*mut c_void, CreateDisassemblyInfoFn>(
                    create.as_ptr(),
                ),
                disassemble_instruction: core::mem::transmute::<
                    *mut c_void,
                    DisassembleInstructionFn,
                >(disassemble.as_ptr()),
                destroy_disassembly_info: core::mem::transmute::<
                    *mut c_void,
                    DestroyDisassemblyInfoFn,
                >(destroy.as_ptr()),
            })
        }
    }
}

/// A loaded comgr. Dropping it unloads the library (every [`ComgrDisassembler`] borrows it, so
/// none outlives it).
#[derive(Debug)]
pub struct Comgr {
    fns: ComgrFns,
    path: PathBuf,
    _lib: Option<Library>,
}

impl Comgr {
    /// [`Comgr::open`] for a program that trusts what the loader finds by comgr's sonames to
    /// be comgr (AMD's library or a faithful stand-in) with the documented C signatures, as
    /// rocprofv3 does.
    ///
    /// # Errors
    /// As [`Comgr::open`].
    pub fn open_trusted() -> Result<Self, Error> {
        // SAFETY: the contract of `open` is this function's documented premise: the library
        // the loader finds by comgr's soname is comgr.
        unsafe { Self::open() }
    }

    /// Loads comgr by soname: each of [`SONAMES`] in turn with `RTLD_LAZY | RTLD_LOCAL`, the
    /// first that loads is used (see the module docs).
    ///
    /// # Errors
    /// [`Error::ComgrNotFound`] with every name tried and `dlerror()`'s text for each, or, for
    /// the library that loaded, [`Error::ComgrMissingSymbols`].
    ///
    /// # Safety
    /// Loading a shared object runs its initialisers; whatever the loader finds by these names
    /// must be comgr, exporting [`SYMBOLS`] with comgr's C signatures.
    #[doc(alias = "dlopen")]
    pub unsafe fn open() -> Result<Self, Error> {
        let mut reasons = Vec::new();
        for name in SONAMES {
            // SAFETY: the caller vouches for what is found under comgr's sonames.
            match unsafe { crate::library::open_local(std::ffi::OsStr::new(name)) } {
                Ok(lib) => {
                    let (lib, path) = loaded_path(lib, Path::new(name));
                    // SAFETY: as above.
                    return unsafe { Self::from_library(lib, path) };
                }
                Err(e) => reasons.push(e.to_string()),
            }
        }
        Err(Error::ComgrNotFound {
            tried: SONAMES.map(String::from).to_vec(),
            reasons,
        })
    }

    /// [`Comgr::open_in`] of directories the caller trusts: a file there named like comgr is
    /// taken to be comgr.
    ///
    /// # Errors
    /// As [`Comgr::open_in`].
    pub fn open_in_trusted(dirs: &[PathBuf]) -> Result<Self, Error> {
        // SAFETY: the documented premise of this function, as for `open_trusted`.
        unsafe { Self::open_in(dirs) }
    }

    /// Loads the first existing `<dir>/<soname>`, directories in order and within each
    /// directory [`SONAMES`] in order (e.g. `<rocm>/lib` when it is not on the loader's path).
    ///
    /// # Errors
    /// [`Error::ComgrNotFound`] listing every path tried when none exists; otherwise as
    /// [`Comgr::open_path`] for the one found.
    ///
    /// # Safety
    /// As for [`Comgr::open_path`], for the file found.
    pub unsafe fn open_in(dirs: &[PathBuf]) -> Result<Self, Error> {
        let mut tried = Vec::new();
        for dir in dirs {
            for name in SONAMES {
                let candidate = dir.join(name);
                if candidate.is_file() {
                    // SAFETY: forwarded to the caller.
                    return unsafe { Self::open_path(&candidate) };
                }
                tried.push(candidate.display().to_string());
            }
        }
        Err(Error::ComgrNotFound {
            tried,
            reasons: Vec::new(),
        })
    }

    /// [`Comgr::open_path`] of a file the caller trusts to be comgr.
    ///
    /// # Errors
    /// As [`Comgr::open_path`].
    pub fn open_path_trusted(path: &Path) -> Result<Self, Error> {
        // SAFETY: the documented premise of this function, as for `open_trusted`.
        unsafe { Self::open_path(path) }
    }

    /// Loads the file at `path` with `RTLD_LAZY | RTLD_LOCAL` and resolves [`SYMBOLS`].
    ///
    /// # Errors
    /// [`Error::ComgrOpen`] with `dlerror()`'s text, or [`Error::ComgrMissingSymbols`].
    ///
    /// # Safety
    /// Loading a shared object runs its initialisers; `path` must be comgr, exporting
    /// [`SYMBOLS`] with comgr's C signatures.
    pub unsafe fn open_path(path: &Path) -> Result<Self, Error> {
        // SAFETY: the caller vouches for the library's initialisers.
        let lib = unsafe { crate::library::open_local(path.as_os_str()) }.map_err(|e| {
            Error::ComgrOpen {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })?;
        // SAFETY: forwarded to the caller.
        unsafe { Self::from_library(lib, path.to_owned()) }
    }

    /// Resolves the table from a loaded library.
    ///
    /// # Safety
    /// `lib` is comgr (see [`Comgr::open_path`]).
    unsafe fn from_library(lib: Library, path: PathBuf) -> Result<Self, Error> {
        // SAFETY: the symbols come from the library the caller vouched for, and `lib` is kept
        // next to the table, so the pointers stay valid for the Comgr's lifetime.
        let fns = unsafe { ComgrFns::load(&path, |sym| crate::library::symbol(&lib, sym)) }?;
        tracing::debug!(library = %path.display(), "loaded comgr");
        Ok(Self {
            fns,
            path,
            _lib: Some(lib),
        })
    }

    /// A comgr made of entry points already in the process (a test double, or comgr linked
    /// some other way). `label` stands in for the path in messages.
    ///
    /// # Safety
    /// The functions must behave as comgr's API documents, for as long as the Comgr lives.
    pub unsafe fn from_fns(fns: ComgrFns, label: impl Into<PathBuf>) -> Self {
        Self {
            fns,
            path: label.into(),
            _lib: None,
        }
    }

    /// The file loaded (resolved by the loader for [`Comgr::open`]; the soname itself if the
    /// loader could not say), or the label given to [`Comgr::from_fns`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The resolved entry points.
    pub fn fns(&self) -> &ComgrFns {
        &self.fns
    }

    /// `amd_comgr_get_version`: `(major, minor)` of the library's interface.
    pub fn version(&self) -> (usize, usize) {
        let (mut major, mut minor) = (0usize, 0usize);
        // SAFETY: `get_version` is comgr's (guaranteed by whoever built `self`) and writes one
        // size_t through each pointer, both valid locals.
        unsafe { (self.fns.get_version)(&raw mut major, &raw mut minor) };
        (major, minor)
    }

    /// A disassembler for the ISA `isa_name` (e.g. `amdgcn-amd-amdhsa--gfx1150`, see
    /// [`isa_name`]).
    ///
    /// # Errors
    /// As [`ComgrDisassembler::new`].
    pub fn disassembler(&self, isa_name: &str) -> Result<ComgrDisassembler<'_>, Error> {
        ComgrDisassembler::new(self, isa_name)
    }
}

/// The file behind a handle the loader opened by soname, or `fallback`.
fn loaded_path(lib: Library, fallback: &Path) -> (Library, PathBuf) {
    let handle = lib.into_raw();
    // SAFETY: `handle` is a live dlopen handle, just taken out of a Library.
    let name = unsafe { link_map_name(handle) };
    // SAFETY: `handle` came from `Library::into_raw` above and was not closed.
    let lib = unsafe { Library::from_raw(handle) };
    let path = name
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| fallback.to_owned());
    (lib, path)
}

/// The loaded object's file name, from glibc's `dlinfo(RTLD_DI_LINKMAP)`.
///
/// # Safety
/// `handle` is a live handle returned by `dlopen`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn link_map_name(handle: *mut c_void) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    /// The head of glibc's `struct link_map` (`<link.h>`): the fields up to `l_name`.
    #[repr(C)]
    struct LinkMapHead {
        l_addr: usize,
        l_name: *const c_char,
    }
    let mut map: *const LinkMapHead = core::ptr::null();
    // SAFETY: `handle` is live (this function's contract); RTLD_DI_LINKMAP writes one
    // `struct link_map *` through the pointer given, which points at a local of that type.
    let rc = unsafe { libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, (&raw mut map).cast()) };
    if rc != 0 || map.is_null() {
        return None;
    }
    // SAFETY: a non-null link map of a loaded object starts with `l_addr` and `l_name`
    // (glibc's public layout) and lives while the handle is open.
    let name = unsafe { (*map).l_name };
    if name.is_null() {
        return None;
    }
    // SAFETY: a non-null `l_name` is a NUL-terminated string owned by the loader, alive while
    // the handle is open; it is copied before returning.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// Other C libraries: the loader is not asked; the soname names the library.
///
/// # Safety
/// None (the handle is not used).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn link_map_name(_handle: *mut c_void) -> Option<PathBuf> {
    None
}

/// comgr's ISA name for a gfx target: `gfx1150` becomes `amdgcn-amd-amdhsa--gfx1150` (feature
/// suffixes such as `:xnack-` are kept); a name that already starts with `amdgcn-` is returned
/// as it is.
pub fn isa_name(gfx_target: &str) -> String {
    let target = gfx_target.trim();
    if target.starts_with("amdgcn-") {
        target.to_owned()
    } else {
        format!("{ISA_NAME_PREFIX}{target}")
    }
}

/// Whether `text`'s mnemonic is `s_endpgm`.
fn is_end(text: &str) -> bool {
    text.split_whitespace().next() == Some(END_MNEMONIC)
}

/// What the callbacks of one `disassemble_instruction` call work on.
struct Reader<'b> {
    /// The code object, at address = offset.
    bytes: &'b [u8],
    /// The printed text.
    text: RefCell<Option<String>>,
    /// Set when a callback panicked.
    panicked: Cell<bool>,
}

/// The [`Reader`] behind `user_data`.
///
/// # Safety
/// `user_data` is null or the `&Reader` that [`ComgrDisassembler::disassemble_at`] passed to
/// the `disassemble_instruction` call now running.
unsafe fn reader<'r>(user_data: *mut c_void) -> Option<&'r Reader<'r>> {
    // SAFETY: per this function's contract the pointer is null or a live Reader; only a
    // shared reference is made (the Reader's mutable parts are cells).
    unsafe { user_data.cast::<Reader<'r>>().cast_const().as_ref() }
}

unsafe extern "C" fn read_memory(
    from: u64,
    to: *mut c_char,
    size: u64,
    user_data: *mut c_void,
) -> u64 {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: comgr passes back the user_data given to `disassemble_instruction`.
        let Some(r) = (unsafe { reader(user_data) }) else {
            return 0;
        };
        if to.is_null() {
            return 0;
        }
        let Some(available) = usize::try_from(from).ok().and_then(|at| r.bytes.get(at..)) else {
            return 0;
        };
        let n = available
            .len()
            .min(usize::try_from(size).unwrap_or(usize::MAX));
        // SAFETY: comgr's buffer `to` holds at least `size` bytes (its contract) and `n` is at
        // most `size`; the source is `n` bytes of the in-memory code object; the two cannot
        // overlap (comgr's buffer is its own).
        unsafe { core::ptr::copy_nonoverlapping(available.as_ptr(), to.cast::<u8>(), n) };
        n as u64
    }));
    result.unwrap_or_else(|_| {
        // SAFETY: as above.
        if let Some(r) = unsafe { reader(user_data) } {
            r.panicked.set(true);
        }
        0
    })
}

unsafe extern "C" fn print_instruction(instruction: *const c_char, user_data: *mut c_void) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: comgr passes back the user_data given to `disassemble_instruction`.
        let Some(r) = (unsafe { reader(user_data) }) else {
            return;
        };
        if instruction.is_null() {
            return;
        }
        // SAFETY: comgr passes a NUL-terminated string valid during this call.
        let text = unsafe { CStr::from_ptr(instruction) }.to_string_lossy();
        // LLVM's instruction printer indents the text; comgr passes it on as it is.
        *r.text.borrow_mut() = Some(text.trim().to_owned());
    }));
    if result.is_err() {
        // SAFETY: as above.
        if let Some(r) = unsafe { reader(user_data) } {
            r.panicked.set(true);
        }
    }
}

unsafe extern "C" fn print_address_annotation(_address: u64, _user_data: *mut c_void) {
    // Branch targets are already part of the printed text; nothing to record.
}

/// Why one instruction could not be disassembled.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Failure {
    status: ComgrStatus,
    detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "status {}: {}", self.status, self.detail)
    }
}

/// How a [`Sweep`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepStop {
    /// At an `s_endpgm`, which is the last instruction listed.
    EndProgram,
    /// At `vaddr`, which comgr could not disassemble (`reason`); the listing ends before it.
    Undecodable {
        /// The address of the instruction that failed.
        vaddr: u64,
        /// comgr's status and what was asked.
        reason: String,
    },
    /// At the end of the code object's bytes.
    EndOfCode,
    /// After [`MAX_SWEEP_INSTRUCTIONS`] instructions.
    Cap,
}

/// The result of a linear sweep from a kernel's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The instructions, in address order, back to back from the entry; never empty.
    pub instructions: Vec<DisassembledInstruction>,
    /// Why the sweep stopped.
    pub stop: SweepStop,
}

impl Sweep {
    /// The vaddrs covered: from the entry to the end of the last instruction.
    pub fn range(&self) -> Range<u64> {
        match (self.instructions.first(), self.instructions.last()) {
            (Some(first), Some(last)) => first.vaddr..last.vaddr + last.size,
            _ => 0..0,
        }
    }

    /// True when the sweep reached the kernel's `s_endpgm`.
    pub fn is_complete(&self) -> bool {
        self.stop == SweepStop::EndProgram
    }
}

/// A kernel to list: where it starts in which code object, and its names for the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    /// The code object's load id.
    pub id: u64,
    /// The kernel's first instruction, as an ELF vaddr.
    pub vaddr: u64,
    /// The symbol name for the kernel's row (used when the table has no symbol for it).
    pub name: String,
    /// The demangled name (may be empty).
    pub demangled: String,
}

/// The kernels the trace shows, as `(code object id, entry vaddr)`: the resolved pc of every
/// occupancy record (the decoder names each wave's kernel by its first instruction there).
/// Pcs that do not resolve through `table` are left out.
pub fn kernel_entries<'d>(
    decoded: impl IntoIterator<Item = &'d Decoded>,
    table: &CodeObjectTable,
) -> BTreeSet<(u64, u64)> {
    decoded
        .into_iter()
        .flat_map(|d| d.occupancy.iter())
        .filter_map(|o| table.resolve(o.pc))
        .collect()
}

/// One comgr disassembly info for one ISA: disassembles code objects held in memory (the saved
/// `.out` file read whole), at address = file offset (see the module docs).
///
/// Not `Sync`: one info is used by one thread at a time. Dropping it destroys the info.
pub struct ComgrDisassembler<'c> {
    comgr: &'c Comgr,
    isa_name: String,
    info: DisassemblyInfo,
    _one_thread_at_a_time: PhantomData<Cell<()>>,
}

impl fmt::Debug for ComgrDisassembler<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComgrDisassembler")
            .field("comgr", &self.comgr.path)
            .field("isa_name", &self.isa_name)
            .field("info", &self.info)
            .finish()
    }
}

impl<'c> ComgrDisassembler<'c> {
    /// `amd_comgr_create_disassembly_info(isa_name, ...)` with this module's callbacks.
    ///
    /// # Errors
    /// [`Error::Comgr`] when comgr refuses the ISA name (`ERROR_INVALID_ARGUMENT` for a
    /// target it does not know) or fails otherwise.
    pub fn new(comgr: &'c Comgr, isa_name: &str) -> Result<Self, Error> {
        const CALL: &str = "amd_comgr_create_disassembly_info";
        let refused = |status, why: &str| Error::Comgr {
            call: CALL,
            status,
            detail: format!(
                "for ISA {isa_name:?} ({}){why}; check that this ROCm release's comgr supports \
                 the GPU",
                comgr.path.display()
            ),
        };
        let name = CString::new(isa_name).map_err(|_| {
            refused(
                ComgrStatus::ERROR_INVALID_ARGUMENT,
                ": the name contains a NUL byte",
            )
        })?;
        let mut info = DisassemblyInfo::default();
        // SAFETY: comgr's entry point (guaranteed by whoever built `comgr`); the name is
        // NUL-terminated and outlives the call; the callbacks have comgr's C signatures and,
        // being plain functions, stay callable as long as the info lives; `info` is a valid
        // out-pointer.
        let status = unsafe {
            (comgr.fns.create_disassembly_info)(
                name.as_ptr(),
                read_memory,
                print_instruction,
                print_address_annotation,
                &raw mut info,
            )
        };
        if !status.is_success() {
            return Err(refused(status, ""));
        }
        Ok(Self {
            comgr,
            isa_name: isa_name.to_owned(),
            info,
            _one_thread_at_a_time: PhantomData,
        })
    }

    /// The ISA name the info was created for.
    pub fn isa_name(&self) -> &str {
        &self.isa_name
    }

    /// The comgr it uses.
    pub fn comgr(&self) -> &'c Comgr {
        self.comgr
    }

    /// One `amd_comgr_disassemble_instruction` at `vaddr` of `bytes`.
    fn disassemble_at(&self, bytes: &[u8], vaddr: u64) -> Result<DisassembledInstruction, Failure> {
        let reader = Reader {
            bytes,
            text: RefCell::new(None),
            panicked: Cell::new(false),
        };
        let mut size = 0u64;
        // SAFETY: comgr's entry point with the info created in `new` (destroyed only on drop);
        // `user_data` is `reader`, which outlives the call and is what this module's callbacks
        // expect (they make shared references only); `size` is a valid out-pointer.
        let status = unsafe {
            (self.comgr.fns.disassemble_instruction)(
                self.info,
                vaddr,
                (&raw const reader).cast_mut().cast(),
                &raw mut size,
            )
        };
        let fail = |status, detail: String| Failure { status, detail };
        if reader.panicked.get() {
            return Err(fail(
                status,
                format!("a callback panicked at vaddr {vaddr:#x}; this is a bug in the att crate"),
            ));
        }
        if !status.is_success() {
            return Err(fail(
                status,
                format!(
                    "no instruction at vaddr {vaddr:#x} of a {}-byte code object",
                    bytes.len()
                ),
            ));
        }
        let Some(text) = reader.text.into_inner() else {
            return Err(fail(
                status,
                format!("nothing was printed for the instruction at vaddr {vaddr:#x}"),
            ));
        };
        let in_bytes = vaddr
            .checked_add(size)
            .is_some_and(|end| end <= bytes.len() as u64);
        if size == 0 || !in_bytes {
            return Err(fail(
                status,
                format!(
                    "the instruction at vaddr {vaddr:#x} is said to be {size} bytes long, in a \
                     {}-byte code object",
                    bytes.len()
                ),
            ));
        }
        Ok(DisassembledInstruction {
            vaddr,
            size,
            text,
            source: String::new(),
        })
    }

    /// The instruction at `vaddr` of the code object `bytes`.
    ///
    /// # Errors
    /// [`Error::Comgr`] when comgr cannot disassemble it (e.g. `vaddr` is not the start of an
    /// instruction, or lies past the bytes).
    pub fn instruction_at(
        &self,
        bytes: &[u8],
        vaddr: u64,
    ) -> Result<DisassembledInstruction, Error> {
        self.disassemble_at(bytes, vaddr).map_err(|f| Error::Comgr {
            call: "amd_comgr_disassemble_instruction",
            status: f.status,
            detail: format!("{} (ISA {})", f.detail, self.isa_name),
        })
    }

    /// A linear sweep of the kernel whose first instruction is at `entry_vaddr` in `bytes`
    /// (see the module docs): instructions back to back until `s_endpgm` (inclusive), an
    /// instruction comgr cannot disassemble, the end of the bytes, or
    /// [`MAX_SWEEP_INSTRUCTIONS`].
    ///
    /// # Errors
    /// [`Error::Comgr`] when the entry itself is not an instruction comgr can disassemble (an
    /// entry in data or in the middle of an instruction), so a [`Sweep`] is never empty.
    pub fn sweep(&self, bytes: &[u8], entry_vaddr: u64) -> Result<Sweep, Error> {
        let mut last = self.instruction_at(bytes, entry_vaddr)?;
        let mut instructions = Vec::new();
        let stop = loop {
            // In bounds: `disassemble_at` checked that the instruction ends within `bytes`.
            let next = last.vaddr + last.size;
            let end = is_end(&last.text);
            instructions.push(last);
            if end {
                break SweepStop::EndProgram;
            }
            if instructions.len() >= MAX_SWEEP_INSTRUCTIONS {
                break SweepStop::Cap;
            }
            if next >= bytes.len() as u64 {
                break SweepStop::EndOfCode;
            }
            match self.disassemble_at(bytes, next) {
                Ok(inst) => last = inst,
                Err(failure) => {
                    break SweepStop::Undecodable {
                        vaddr: next,
                        reason: failure.to_string(),
                    };
                }
            }
        };
        Ok(Sweep { instructions, stop })
    }

    /// Sweeps the kernel at `entry_vaddr` of code object `id` (whose bytes are `bytes`) into
    /// `listing` and returns the sweep (its instructions are in `listing` too).
    ///
    /// # Errors
    /// As [`ComgrDisassembler::sweep`].
    pub fn list_kernel(
        &self,
        listing: &mut Listing,
        id: u64,
        bytes: &[u8],
        entry_vaddr: u64,
    ) -> Result<Sweep, Error> {
        let sweep = self.sweep(bytes, entry_vaddr)?;
        for inst in &sweep.instructions {
            listing.insert(id, inst.clone());
        }
        Ok(sweep)
    }

    /// Lists every kernel of `kernels` into `listing`, reading each code object's file from
    /// `table` once, so that [`crate::outputs::CodeView::build`]`(stats, table,
    /// Some(listing))` lists every instruction of each hit kernel:
    ///
    /// - when the table already has a kernel symbol containing the entry (an ELF symbol with
    ///   its range), that range is disassembled ([`Disassembler::disassemble`]);
    /// - otherwise the kernel is swept from its entry and a [`KernelSymbol`] with the sweep's
    ///   range and the entry's names is added to its code object in `table`.
    ///
    /// Each kernel is listed once however often it is named. Failures do not stop the others
    /// and are returned, one per kernel: [`Error::Io`] for a file that cannot be read (once per
    /// object) and [`Error::Disassembly`] for an unknown id, a kernel that cannot be
    /// disassembled, or a sweep that stopped before `s_endpgm` (what was swept is still
    /// listed). Instructions left out are reported with fallback texts by the outputs.
    pub fn list_kernels(
        &self,
        table: &mut CodeObjectTable,
        listing: &mut Listing,
        kernels: &[KernelEntry],
    ) -> Vec<Error> {
        let mut files: HashMap<u64, Option<Vec<u8>>> = HashMap::new();
        let mut done: HashSet<(u64, u64)> = HashSet::new();
        let mut errors = Vec::new();
        for k in kernels {
            let disassembly_error =
                |file: PathBuf, kernel: &str, reason: String| Error::Disassembly {
                    id: k.id,
                    file,
                    kernel: kernel.to_owned(),
                    reason,
                };
            let Some(object) = table.get(k.id) else {
                if done.insert((k.id, k.vaddr)) {
                    errors.push(disassembly_error(
                        PathBuf::new(),
                        &k.name,
                        "no code object with this id was saved during the run".into(),
                    ));
                }
                continue;
            };
            let file = object.file.clone();
            let bytes = files
                .entry(k.id)
                .or_insert_with(|| object.read().map_err(|e| errors.push(e)).ok());
            let Some(bytes) = bytes.as_deref() else {
                continue;
            };
            if let Some(symbol) = table.kernel_containing(k.id, k.vaddr) {
                if done.insert((k.id, symbol.vaddr.start))
                    && let Err(e) = listing.disassemble_kernel(self, object, bytes, symbol)
                {
                    errors.push(e);
                }
                continue;
            }
            if !done.insert((k.id, k.vaddr)) {
                continue;
            }
            match self.list_kernel(listing, k.id, bytes, k.vaddr) {
                Ok(sweep) => {
                    let range = sweep.range();
                    if !sweep.is_complete() {
                        let why = match &sweep.stop {
                            SweepStop::Undecodable { reason, .. } => reason.clone(),
                            SweepStop::EndOfCode => "the code object's bytes ended".into(),
                            SweepStop::Cap => {
                                format!("{MAX_SWEEP_INSTRUCTIONS} instructions were listed")
                            }
                            SweepStop::EndProgram => String::new(),
                        };
                        errors.push(disassembly_error(
                            file.clone(),
                            &k.name,
                            format!(
                                "the sweep from its entry {:#x} stopped at {:#x} before \
                                 s_endpgm: {why}",
                                range.start, range.end
                            ),
                        ));
                    }
                    table.add_kernel(
                        k.id,
                        KernelSymbol {
                            name: k.name.clone(),
                            demangled: k.demangled.clone(),
                            vaddr: range,
                        },
                    );
                }
                Err(e) => errors.push(disassembly_error(file.clone(), &k.name, e.to_string())),
            }
        }
        errors
    }
}

impl Drop for ComgrDisassembler<'_> {
    fn drop(&mut self) {
        // SAFETY: comgr's entry point with the info created in `new`, destroyed only here.
        let status = unsafe { (self.comgr.fns.destroy_disassembly_info)(self.info) };
        if !status.is_success() {
            tracing::debug!(%status, "amd_comgr_destroy_disassembly_info failed");
        }
    }
}

impl Disassembler for ComgrDisassembler<'_> {
    /// Disassembles instruction after instruction from `vaddr.start` while the next one starts
    /// before `vaddr.end` (the last may end after it). Any instruction comgr cannot
    /// disassemble fails the whole range.
    fn disassemble(
        &self,
        code_object: &[u8],
        vaddr: Range<u64>,
    ) -> Result<Vec<DisassembledInstruction>, String> {
        let mut out = Vec::new();
        let mut at = vaddr.start;
        while at < vaddr.end {
            let inst = self.disassemble_at(code_object, at).map_err(|f| {
                format!(
                    "comgr ({}, ISA {}) failed with {f}",
                    self.comgr.path.display(),
                    self.isa_name
                )
            })?;
            // No overflow: `disassemble_at` checked that the instruction ends within the bytes.
            at = inst.vaddr + inst.size;
            out.push(inst);
        }
        Ok(out)
    }
}

/// The `isa_cb` answer from comgr: resolves each pc through the table, reads the code object's
/// saved file (once per object) and disassembles the instruction there, caching every answer
/// (also the negative ones) per `(code object id, vaddr)`.
///
/// Files that cannot be read are remembered as errors for [`ComgrIsa::take_errors`]; their pcs
/// get no answer (the decoder counts them in [`Decoded::unknown_pcs`]).
pub struct ComgrIsa<'a> {
    disassembler: &'a ComgrDisassembler<'a>,
    table: &'a CodeObjectTable,
    files: RefCell<HashMap<u64, Option<Rc<[u8]>>>>,
    cache: RefCell<HashMap<(u64, u64), Option<Instruction>>>,
    errors: RefCell<Vec<Error>>,
}

impl fmt::Debug for ComgrIsa<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComgrIsa")
            .field("disassembler", self.disassembler)
            .field("objects", &self.table.len())
            .field("cached", &self.cache.borrow().len())
            .finish()
    }
}

impl<'a> ComgrIsa<'a> {
    /// Answers with `disassembler` for the objects of `table`.
    pub fn new(disassembler: &'a ComgrDisassembler<'a>, table: &'a CodeObjectTable) -> Self {
        Self {
            disassembler,
            table,
            files: RefCell::new(HashMap::new()),
            cache: RefCell::new(HashMap::new()),
            errors: RefCell::new(Vec::new()),
        }
    }

    /// Uses `bytes` as the contents of code object `id` instead of reading its file.
    pub fn with_bytes(self, id: u64, bytes: impl Into<Rc<[u8]>>) -> Self {
        self.files.borrow_mut().insert(id, Some(bytes.into()));
        self
    }

    /// The errors met so far (files that could not be read), leaving none behind.
    pub fn take_errors(&self) -> Vec<Error> {
        self.errors.take()
    }

    /// The number of distinct `(id, vaddr)` questions answered or refused so far.
    pub fn cached(&self) -> usize {
        self.cache.borrow().len()
    }

    /// The bytes of object `id`, read on first use.
    fn bytes(&self, id: u64) -> Option<Rc<[u8]>> {
        if let Some(known) = self.files.borrow().get(&id) {
            return known.clone();
        }
        let bytes = match self.table.get(id)?.read() {
            Ok(b) => Some(Rc::<[u8]>::from(b)),
            Err(e) => {
                self.errors.borrow_mut().push(e);
                None
            }
        };
        self.files.borrow_mut().insert(id, bytes.clone());
        bytes
    }
}

impl Isa for ComgrIsa<'_> {
    fn instruction(&self, pc: Pc) -> Option<Instruction> {
        let key = self.table.resolve(pc)?;
        if let Some(known) = self.cache.borrow().get(&key) {
            return known.clone();
        }
        let answer = self.bytes(key.0).and_then(|bytes| {
            self.disassembler
                .disassemble_at(&bytes, key.1)
                .ok()
                .map(|i| Instruction {
                    text: i.text,
                    size: i.size,
                })
        });
        self.cache.borrow_mut().insert(key, answer.clone());
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_names_from_gfx_targets() {
        assert_eq!(isa_name("gfx1150"), "amdgcn-amd-amdhsa--gfx1150");
        assert_eq!(
            isa_name(" gfx90a:sramecc+:xnack- "),
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        );
        assert_eq!(
            isa_name("amdgcn-amd-amdhsa--gfx1100"),
            "amdgcn-amd-amdhsa--gfx1100"
        );
    }

    #[test]
    fn status_names() {
        assert_eq!(ComgrStatus::ERROR.to_string(), "1 (ERROR)");
        assert_eq!(
            format!("{:?}", ComgrStatus::ERROR_INVALID_ARGUMENT),
            "2 (ERROR_INVALID_ARGUMENT)"
        );
        assert_eq!(ComgrStatus(9).to_string(), "9 (unknown)");
        assert!(ComgrStatus::SUCCESS.is_success());
    }

    #[test]
    fn end_mnemonic_is_the_first_word() {
        assert!(is_end("s_endpgm"));
        assert!(is_end("s_endpgm  ; comment"));
        assert!(!is_end("s_endpgm_saved"));
        assert!(!is_end("s_nop 0 ; s_endpgm"));
    }

    unsafe extern "C" fn no_version(_: *mut usize, _: *mut usize) {}

    #[test]
    fn symbol_table_reports_every_missing_symbol() {
        let mut asked = Vec::new();
        // SAFETY: the table is never built (three symbols are missing).
        let err = unsafe {
            ComgrFns::load(Path::new("/lib/x.so"), |name| {
                asked.push(name.to_owned());
                (name == SYMBOLS[0]).then(|| NonNull::new(no_version as *mut c_void))?
            })
        }
        .unwrap_err();
        assert_eq!(asked, SYMBOLS.map(CStr::to_owned));
        match &err {
            Error::ComgrMissingSymbols { library, symbols } => {
                assert_eq!(library, Path::new("/lib/x.so"));
                assert_eq!(
                    symbols,
                    &[
                        "amd_comgr_create_disassembly_info",
                        "amd_comgr_disassemble_instruction",
                        "amd_comgr_destroy_disassembly_info"
                    ]
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("named by address"), "{err}");
    }

    #[test]
    fn not_found_names_what_was_tried_and_the_consequence() {
        let e = Error::ComgrNotFound {
            tried: SONAMES.map(String::from).to_vec(),
            reasons: vec!["libamd_comgr.so.3: cannot open shared object file".into()],
        };
        let msg = e.to_string();
        assert!(
            msg.contains("libamd_comgr.so.3, libamd_comgr.so.2, libamd_comgr.so"),
            "{msg}"
        );
        assert!(msg.contains("cannot open shared object file"), "{msg}");
        assert!(msg.contains("named by address"), "{msg}");
        assert!(msg.contains("LD_LIBRARY_PATH"), "{msg}");
    }
}
