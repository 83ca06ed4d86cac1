//! Tests the built `libamd_comgr.so` through `dlopen`/`dlsym`, as rocprofv3 would use it.
//!
//! The library is the newer of `target/<profile>/libamd_comgr.so` (what `cargo build` uplifts)
//! and `target/<profile>/deps/libamd_comgr.so` (what `cargo test` writes when it compiles the
//! package's lib, cdylib included, for this test). The C types are written out here
//! independently of the library's own.

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::PathBuf;
use std::time::SystemTime;

use wslsim_codeobj::{Instruction, encode_program, program};

type Status = u32;
const SUCCESS: Status = 0;
const ERROR: Status = 1;
const INVALID_ARGUMENT: Status = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InfoHandle {
    handle: u64,
}

type ReadMemory = unsafe extern "C" fn(u64, *mut c_char, u64, *mut c_void) -> u64;
type PrintInstruction = unsafe extern "C" fn(*const c_char, *mut c_void);
type PrintAnnotation = unsafe extern "C" fn(u64, *mut c_void);
type GetVersion = unsafe extern "C" fn(*mut usize, *mut usize);
type StatusString = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
type Create = unsafe extern "C" fn(
    *const c_char,
    Option<ReadMemory>,
    Option<PrintInstruction>,
    Option<PrintAnnotation>,
    *mut InfoHandle,
) -> Status;
type Destroy = unsafe extern "C" fn(InfoHandle) -> Status;
type Disassemble = unsafe extern "C" fn(InfoHandle, u64, *mut c_void, *mut u64) -> Status;

fn library_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_owned();
    let candidates = [
        deps.join("libamd_comgr.so"),
        deps.parent()
            .expect("profile directory")
            .join("libamd_comgr.so"),
    ];
    candidates
        .into_iter()
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            Some((modified, path))
        })
        .max_by_key(|(modified, _): &(SystemTime, PathBuf)| *modified)
        .map(|(_, path)| path)
        .expect("libamd_comgr.so not built: run `cargo build -p sim-comgr`")
}

struct Comgr {
    get_version: GetVersion,
    status_string: StatusString,
    create: Create,
    destroy: Destroy,
    disassemble: Disassemble,
}

fn symbol(handle: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: a live dlopen handle and a NUL-terminated name.
    let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
    assert!(!address.is_null(), "{name:?} is not exported");
    address
}

fn load() -> Comgr {
    let path = CString::new(library_path().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; the library has no initialisers with preconditions.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "cannot dlopen {path:?}");
    // SAFETY: each symbol has the C signature of its type (see comgr's amd_comgr.h); the
    // library stays loaded (never dlclosed).
    unsafe {
        Comgr {
            get_version: std::mem::transmute::<*mut c_void, GetVersion>(symbol(
                handle,
                c"amd_comgr_get_version",
            )),
            status_string: std::mem::transmute::<*mut c_void, StatusString>(symbol(
                handle,
                c"amd_comgr_status_string",
            )),
            create: std::mem::transmute::<*mut c_void, Create>(symbol(
                handle,
                c"amd_comgr_create_disassembly_info",
            )),
            destroy: std::mem::transmute::<*mut c_void, Destroy>(symbol(
                handle,
                c"amd_comgr_destroy_disassembly_info",
            )),
            disassemble: std::mem::transmute::<*mut c_void, Disassemble>(symbol(
                handle,
                c"amd_comgr_disassemble_instruction",
            )),
        }
    }
}

/// What the callbacks see through `user_data`: code at its real address, and a record of the
/// calls.
struct Memory {
    bytes: Vec<u8>,
    reads: Vec<(u64, u64)>,
    printed: Vec<String>,
    annotations: usize,
}

impl Memory {
    fn new(bytes: Vec<u8>) -> Memory {
        Memory {
            bytes,
            reads: Vec::new(),
            printed: Vec::new(),
            annotations: 0,
        }
    }
    fn base(&self) -> u64 {
        self.bytes.as_ptr() as u64
    }
    fn user_data(&mut self) -> *mut c_void {
        (self as *mut Memory).cast()
    }
}

unsafe extern "C" fn read_memory(from: u64, to: *mut c_char, size: u64, user: *mut c_void) -> u64 {
    // SAFETY: `user` is the `Memory` the test passed, exclusively borrowed for the call.
    let memory = unsafe { &mut *user.cast::<Memory>() };
    memory.reads.push((from, size));
    let Some(start) = from.checked_sub(memory.base()) else {
        return 0;
    };
    let len = memory.bytes.len() as u64;
    if start >= len {
        return 0;
    }
    let count = size.min(len - start);
    // SAFETY: `start..start + count` is inside `bytes`; `to` has room for `size >= count`
    // bytes per the callback contract.
    unsafe {
        std::ptr::copy_nonoverlapping(
            memory.bytes.as_ptr().add(start as usize),
            to.cast::<u8>(),
            count as usize,
        )
    };
    count
}

unsafe extern "C" fn print_instruction(text: *const c_char, user: *mut c_void) {
    // SAFETY: as in `read_memory`; `text` is NUL-terminated per the API.
    let (memory, text) = unsafe { (&mut *user.cast::<Memory>(), CStr::from_ptr(text)) };
    memory.printed.push(text.to_string_lossy().into_owned());
}

unsafe extern "C" fn print_annotation(_address: u64, user: *mut c_void) {
    // SAFETY: as in `read_memory`.
    let memory = unsafe { &mut *user.cast::<Memory>() };
    memory.annotations += 1;
}

impl Comgr {
    fn create(&self, isa: &CStr) -> Result<InfoHandle, Status> {
        let mut info = InfoHandle { handle: 0 };
        // SAFETY: a NUL-terminated name, callbacks of the API's signatures, a writable handle.
        let status = unsafe {
            (self.create)(
                isa.as_ptr(),
                Some(read_memory),
                Some(print_instruction),
                Some(print_annotation),
                &mut info,
            )
        };
        if status == SUCCESS {
            assert_ne!(info.handle, 0);
            Ok(info)
        } else {
            assert_eq!(info.handle, 0, "handle written on failure");
            Err(status)
        }
    }

    fn disassemble(&self, info: InfoHandle, address: u64, memory: &mut Memory) -> (Status, u64) {
        let mut size = u64::MAX;
        // SAFETY: `user_data` is `memory`, which the callbacks expect; `size` is writable.
        let status = unsafe { (self.disassemble)(info, address, memory.user_data(), &mut size) };
        (status, size)
    }

    fn destroy(&self, info: InfoHandle) -> Status {
        // SAFETY: any handle value is accepted.
        unsafe { (self.destroy)(info) }
    }
}

const GFX1150: &CStr = c"amdgcn-amd-amdhsa--gfx1150";

#[test]
fn disassembles_a_whole_program_through_the_callbacks() {
    let comgr = load();
    let info = comgr.create(GFX1150).unwrap();
    let expected: Vec<Instruction> = program(5, 7);
    let mut memory = Memory::new(encode_program(&expected));
    let base = memory.base();
    let mut offset = 0u64;
    for (index, instruction) in expected.iter().enumerate() {
        assert_eq!(offset, instruction.offset);
        let (status, size) = comgr.disassemble(info, base + offset, &mut memory);
        assert_eq!(status, SUCCESS, "at {offset}");
        assert_eq!(size, u64::from(instruction.size), "{}", instruction.text);
        assert_eq!(memory.printed.len(), index + 1, "one print per instruction");
        assert_eq!(memory.printed[index], instruction.text);
        // One read per instruction, of LLVM's MaxInstLength (20) bytes at the address.
        assert_eq!(memory.reads.len(), index + 1);
        assert_eq!(memory.reads[index], (base + offset, 20));
        offset += size;
    }
    assert_eq!(offset, memory.bytes.len() as u64);
    assert_eq!(memory.printed.last().unwrap(), "s_endpgm");
    assert_eq!(memory.printed[0], "s_load_b128 s[0:3], s[0:1], null");
    assert_eq!(memory.annotations, 0);
    assert_eq!(comgr.destroy(info), SUCCESS);
}

#[test]
fn undecodable_bytes_and_failed_reads_are_errors() {
    let comgr = load();
    let info = comgr.create(GFX1150).unwrap();
    // Zero bytes are no instruction: ERROR (comgr's status for an invalid encoding), size 4,
    // nothing printed.
    let mut memory = Memory::new(vec![0u8; 16]);
    let (status, size) = comgr.disassemble(info, memory.base(), &mut memory);
    assert_eq!((status, size), (ERROR, 4));
    assert!(memory.printed.is_empty());
    // An 8-byte instruction of which only the first word can be read.
    let fma = encode_program(&program(0, 1)[..1]);
    assert_eq!(fma.len(), 8);
    let mut memory = Memory::new(fma[..4].to_vec());
    let (status, size) = comgr.disassemble(info, memory.base(), &mut memory);
    assert_eq!((status, size), (ERROR, 4));
    assert!(memory.printed.is_empty());
    // Three readable bytes: size 3.
    let mut memory = Memory::new(vec![0, 0, 0xA2]);
    let (status, size) = comgr.disassemble(info, memory.base(), &mut memory);
    assert_eq!((status, size), (ERROR, 3));
    // Nothing readable: ERROR, size untouched.
    let mut memory = Memory::new(vec![0u8; 4]);
    let (status, size) = comgr.disassemble(info, memory.base() + 100, &mut memory);
    assert_eq!((status, size), (ERROR, u64::MAX));
    assert_eq!(memory.reads.len(), 1);
    assert!(memory.printed.is_empty());
    // A null size pointer.
    let mut memory = Memory::new(fma.clone());
    // SAFETY: a live handle and `memory` as user data; the null size is refused.
    let status = unsafe {
        (comgr.disassemble)(
            info,
            memory.base(),
            memory.user_data(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(status, INVALID_ARGUMENT);
    assert!(memory.reads.is_empty() && memory.printed.is_empty());
    assert_eq!(comgr.destroy(info), SUCCESS);
    // A destroyed, a zero and a never-created handle.
    for dead in [
        info,
        InfoHandle { handle: 0 },
        InfoHandle { handle: u64::MAX },
    ] {
        let mut memory = Memory::new(fma.clone());
        let (status, size) = comgr.disassemble(dead, memory.base(), &mut memory);
        assert_eq!((status, size), (INVALID_ARGUMENT, u64::MAX));
        assert!(memory.reads.is_empty());
        assert_eq!(comgr.destroy(dead), INVALID_ARGUMENT);
    }
}

#[test]
fn only_gfx11_isa_names_are_accepted() {
    let comgr = load();
    for isa in [
        c"amdgcn-amd-amdhsa--gfx1150",
        c"amdgcn-amd-amdhsa--gfx1100",
        c"amdgcn-amd-amdhsa--gfx1151",
        c"amdgcn-amd-amdhsa--gfx1102:xnack-",
        c"amdgcn-amd-amdhsa--gfx1100:sramecc+:xnack-",
    ] {
        let info = comgr.create(isa).unwrap_or_else(|s| panic!("{isa:?}: {s}"));
        assert_eq!(comgr.destroy(info), SUCCESS);
    }
    for isa in [
        c"amdgcn-amd-amdhsa--gfx1030",
        c"amdgcn-amd-amdhsa--gfx90a:xnack+",
        c"amdgcn-amd-amdhsa--gfx1200",
        c"gfx1150",
        c"amdgcn-amd-amdhsa--gfx1150:",
        c"",
    ] {
        assert_eq!(comgr.create(isa), Err(INVALID_ARGUMENT), "{isa:?}");
    }
    // Null arguments.
    let mut info = InfoHandle { handle: 0 };
    // SAFETY: each call passes one null where the API allows the library to refuse it.
    unsafe {
        let create = comgr.create;
        let isa = GFX1150.as_ptr();
        let (r, p, a) = (
            Some(read_memory as ReadMemory),
            Some(print_instruction as PrintInstruction),
            Some(print_annotation as PrintAnnotation),
        );
        assert_eq!(
            create(std::ptr::null(), r, p, a, &mut info),
            INVALID_ARGUMENT
        );
        assert_eq!(create(isa, None, p, a, &mut info), INVALID_ARGUMENT);
        assert_eq!(create(isa, r, None, a, &mut info), INVALID_ARGUMENT);
        assert_eq!(create(isa, r, p, None, &mut info), INVALID_ARGUMENT);
        assert_eq!(create(isa, r, p, a, std::ptr::null_mut()), INVALID_ARGUMENT);
    }
    assert_eq!(info.handle, 0);
}

#[test]
fn version_and_status_strings() {
    let comgr = load();
    let (mut major, mut minor) = (usize::MAX, usize::MAX);
    // SAFETY: writable size_t slots.
    unsafe { (comgr.get_version)(&mut major, &mut minor) };
    assert_eq!((major, minor), (3, 0));
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a writable slot; the library writes a static string.
    unsafe {
        assert_eq!((comgr.status_string)(INVALID_ARGUMENT, &mut text), SUCCESS);
        assert_eq!(CStr::from_ptr(text), c"INVALID_ARGUMENT");
        assert_eq!((comgr.status_string)(9, &mut text), INVALID_ARGUMENT);
    }
}

#[test]
fn handles_are_independent_across_threads() {
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            std::thread::spawn(move || {
                let comgr = load();
                let info = comgr.create(GFX1150).unwrap();
                let expected = program(t * 3, 20 + t);
                let mut memory = Memory::new(encode_program(&expected));
                let base = memory.base();
                for instruction in &expected {
                    let (status, _) =
                        comgr.disassemble(info, base + instruction.offset, &mut memory);
                    assert_eq!(status, SUCCESS);
                }
                let texts: Vec<&str> = expected.iter().map(|i| i.text.as_str()).collect();
                assert_eq!(memory.printed, texts);
                assert_eq!(comgr.destroy(info), SUCCESS);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// The `DT_SONAME` of the ELF file at `bytes`, from its section headers.
fn soname(bytes: &[u8]) -> Option<String> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    if bytes.get(..4)? != b"\x7fELF" || *bytes.get(4)? != 2 {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = usize::from(u16_at(0x3A)?);
    let shnum = usize::from(u16_at(0x3C)?);
    let section = |index: usize| shoff + index * shentsize;
    const SHT_DYNAMIC: u32 = 6;
    const DT_SONAME: u64 = 14;
    let dynamic = (0..shnum).find(|&i| u32_at(section(i) + 4) == Some(SHT_DYNAMIC))?;
    let strtab = section(u32_at(section(dynamic) + 0x28)? as usize);
    let strings = u64_at(strtab + 0x18)? as usize;
    let offset = u64_at(section(dynamic) + 0x18)? as usize;
    let size = u64_at(section(dynamic) + 0x20)? as usize;
    (0..size / 16).find_map(|i| {
        let entry = offset + i * 16;
        (u64_at(entry)? == DT_SONAME).then_some(())?;
        let name = strings + u64_at(entry + 8)? as usize;
        let end = bytes.get(name..)?.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&bytes[name..name + end]).into_owned())
    })
}

#[test]
fn the_soname_is_libamd_comgr_so_3() {
    let bytes = std::fs::read(library_path()).unwrap();
    assert_eq!(soname(&bytes).as_deref(), Some("libamd_comgr.so.3"));
}
