//! Load-time export hiding for the simulated libraries (Linux x86-64 glibc).
//!
//! A shared object's exports are fixed when it is linked, but a scenario wants some of them to
//! be "missing". glibc's symbol lookup (`check_match` in `dl-lookup.c`) skips a defined symbol
//! whose `st_value` is 0, so zeroing `st_value` in the object's own in-memory `.dynsym` makes
//! `dlsym` fail with "undefined symbol" exactly as if the export did not exist.
//!
//! The steps: `dladdr` on an anchor function names the object; `dl_iterate_phdr` finds the
//! loaded object whose `PT_LOAD` segments contain the anchor and yields its `PT_DYNAMIC`;
//! `DT_SYMTAB`, `DT_STRTAB` and `DT_GNU_HASH` (or `DT_HASH`) locate the symbol, looked up with
//! the same hash function the loader uses; the page holding it is made writable around the
//! store and its protection restored afterwards.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

const DT_NULL: i64 = 0;
const DT_HASH: i64 = 4;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_STRSZ: i64 = 10;
const DT_GNU_HASH: i64 = 0x6fff_fef5;

const SHN_UNDEF: u16 = 0;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_GNU_RELRO: u32 = 0x6474_e552;

const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

/// `Elf64_Dyn`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Elf64Dyn {
    d_tag: i64,
    d_val: u64,
}

const _: () = assert!(size_of::<Elf64Dyn>() == 16);
const _: () = assert!(offset_of!(Elf64Dyn, d_tag) == 0);
const _: () = assert!(offset_of!(Elf64Dyn, d_val) == 8);

/// `Elf64_Sym`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Elf64Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

const _: () = assert!(size_of::<Elf64Sym>() == 24);
const _: () = assert!(offset_of!(Elf64Sym, st_name) == 0);
const _: () = assert!(offset_of!(Elf64Sym, st_info) == 4);
const _: () = assert!(offset_of!(Elf64Sym, st_other) == 5);
const _: () = assert!(offset_of!(Elf64Sym, st_shndx) == 6);
const _: () = assert!(offset_of!(Elf64Sym, st_value) == 8);
const _: () = assert!(offset_of!(Elf64Sym, st_size) == 16);

/// A `PT_LOAD` or `PT_GNU_RELRO` range, as absolute addresses.
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: usize,
    end: usize,
    flags: u32,
}

/// What `dl_iterate_phdr` told us about the object containing the anchor.
#[derive(Debug)]
struct LoadedObject {
    base: usize,
    main_program: bool,
    dynamic: Option<usize>,
    loads: Vec<Segment>,
    relro: Vec<Segment>,
}

/// The dynamic-section entries symbol lookup needs, relocated to absolute addresses.
#[derive(Debug)]
struct DynamicInfo {
    symtab: usize,
    strtab: usize,
    strsz: Option<usize>,
    gnu_hash: Option<usize>,
    sysv_hash: Option<usize>,
}

/// The path of the loaded object containing `anchor`, as `dladdr` reports it.
///
/// `anchor` is only used as an address (dladdr accepts any value), never dereferenced.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn object_path(anchor: *const c_void) -> Option<String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only inspects the loader's bookkeeping for the address and fills `info`,
    // which is a valid, writable Dl_info.
    let found = unsafe { libc::dladdr(anchor, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success dli_fname points to the NUL-terminated name the loader keeps for the
    // object, valid while the object stays loaded (which it does while we run its code).
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(name.to_string_lossy().into_owned())
}

/// Whether `anchor` lies in a shared object (rather than in the main program).
///
/// The simulated libraries' constructors only hide exports when they run as the real shared
/// object, not when their code is linked into a test executable.
pub fn in_shared_object(anchor: *const c_void) -> bool {
    find_object(anchor as usize).is_ok_and(|object| !object.main_program)
}

/// Makes each of `names` unresolvable by `dlsym` in the shared object that contains `anchor`.
///
/// Every name is attempted. On failure the error holds one line per name that could not be
/// hidden, each of the form `cannot hide export NAME: REASON`.
///
/// # Safety
///
/// `anchor` must be an address inside a currently loaded object (normally one of its own
/// functions). The call rewrites that object's in-memory dynamic symbol table: no other thread
/// may be looking symbols up in it at the same time, so call it from the object's own ELF
/// constructor (which runs under the loader's lock) or while the process is single-threaded.
pub unsafe fn hide_exports(anchor: *const c_void, names: &[&str]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let path = object_path(anchor);
    let object = find_object(anchor as usize).map_err(|reason| failure(names, &reason))?;
    // SAFETY: forwarded from this function's own contract.
    unsafe { hide_in(&object, anchor, path.as_deref(), names) }
}

/// [`hide_exports`] for a library's constructor that already has the object's path: does
/// nothing when `anchor` does not lie in a shared object (see [`in_shared_object`]).
///
/// # Safety
///
/// As for [`hide_exports`].
pub(crate) unsafe fn hide_exports_in_library<S: AsRef<str>>(
    anchor: *const c_void,
    path: Option<&str>,
    names: &[S],
) -> Result<(), String> {
    match find_object(anchor as usize) {
        // SAFETY: forwarded from this function's own contract.
        Ok(object) if !object.main_program => unsafe { hide_in(&object, anchor, path, names) },
        _ => Ok(()),
    }
}

/// One `cannot hide export NAME: REASON` line per name.
fn failure<S: AsRef<str>>(names: &[S], reason: &str) -> String {
    names
        .iter()
        .map(|name| format!("cannot hide export {}: {reason}", name.as_ref()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The body of [`hide_exports`] for the loaded `object` containing `anchor`, whose path is
/// `path` (`anchor`'s address if unknown).
///
/// # Safety
///
/// As for [`hide_exports`].
unsafe fn hide_in<S: AsRef<str>>(
    object: &LoadedObject,
    anchor: *const c_void,
    path: Option<&str>,
    names: &[S],
) -> Result<(), String> {
    let path = path.map_or_else(|| format!("{anchor:p}"), str::to_owned);
    let dynamic =
        read_dynamic(object).map_err(|reason| failure(names, &format!("{path}: {reason}")))?;
    let mut errors = Vec::new();
    for name in names.iter().map(AsRef::as_ref) {
        let indices = lookup(&dynamic, name);
        let result = if indices.is_empty() {
            Err(format!("not in the dynamic symbol table of {path}"))
        } else {
            indices.into_iter().try_for_each(|index| {
                // SAFETY: `index` came from the object's own hash table, so it names an entry
                // of its symbol table; the caller guarantees no concurrent lookups.
                unsafe { clear_symbol_value(object, &dynamic, index) }
            })
        };
        if let Err(reason) = result {
            errors.push(format!("cannot hide export {name}: {reason}"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// The GNU hash of a symbol name (`dl_new_hash`).
pub fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381_u32, |hash, &byte| {
        hash.wrapping_mul(33).wrapping_add(u32::from(byte))
    })
}

/// The System V ELF hash of a symbol name (`_dl_elf_hash`).
pub fn sysv_hash(name: &[u8]) -> u32 {
    let mut hash = 0_u32;
    for &byte in name {
        hash = (hash << 4).wrapping_add(u32::from(byte));
        let high = hash & 0xF000_0000;
        if high != 0 {
            hash ^= high >> 24;
        }
        hash &= !high;
    }
    hash
}

struct Search {
    anchor: usize,
    found: Option<LoadedObject>,
}

unsafe extern "C" fn visit_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the `&mut Search` passed to dl_iterate_phdr below, alive for the call.
    let search = unsafe { &mut *data.cast::<Search>() };
    // SAFETY: glibc passes a valid dl_phdr_info for the duration of the callback.
    let info = unsafe { &*info };
    let base = info.dlpi_addr as usize;
    let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() || info.dlpi_phnum == 0 {
        &[]
    } else {
        // SAFETY: dlpi_phdr points to dlpi_phnum program headers of a loaded object.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    let segment = |header: &libc::Elf64_Phdr| {
        let start = base.wrapping_add(header.p_vaddr as usize);
        Segment {
            start,
            end: start.wrapping_add(header.p_memsz as usize),
            flags: header.p_flags,
        }
    };
    let loads: Vec<Segment> = headers
        .iter()
        .filter(|header| header.p_type == PT_LOAD)
        .map(segment)
        .collect();
    if !loads
        .iter()
        .any(|load| (load.start..load.end).contains(&search.anchor))
    {
        return 0;
    }
    let name_empty = info.dlpi_name.is_null() || {
        // SAFETY: a non-null dlpi_name is a NUL-terminated string owned by the loader.
        unsafe { *info.dlpi_name == 0 as c_char }
    };
    search.found = Some(LoadedObject {
        base,
        main_program: name_empty,
        dynamic: headers
            .iter()
            .find(|header| header.p_type == PT_DYNAMIC)
            .map(|header| base.wrapping_add(header.p_vaddr as usize)),
        loads,
        relro: headers
            .iter()
            .filter(|header| header.p_type == PT_GNU_RELRO)
            .map(segment)
            .collect(),
    });
    1
}

fn find_object(anchor: usize) -> Result<LoadedObject, String> {
    let mut search = Search {
        anchor,
        found: None,
    };
    // SAFETY: the callback matches dl_iterate_phdr's contract and only uses `data` as the
    // `Search` we pass, which outlives the call.
    unsafe {
        libc::dl_iterate_phdr(Some(visit_object), (&raw mut search).cast::<c_void>());
    }
    search
        .found
        .ok_or_else(|| format!("no loaded object contains address {anchor:#x}"))
}

fn read_dynamic(object: &LoadedObject) -> Result<DynamicInfo, String> {
    let dynamic = object
        .dynamic
        .ok_or_else(|| "the object has no PT_DYNAMIC segment".to_owned())?;
    // x86-64 glibc relocates the d_ptr values of the in-memory dynamic section; other loaders
    // leave them as link-time addresses, which are below the load base.
    let absolute = |value: u64| -> usize {
        let value = value as usize;
        if value < object.base {
            value.wrapping_add(object.base)
        } else {
            value
        }
    };
    let mut info = DynamicInfo {
        symtab: 0,
        strtab: 0,
        strsz: None,
        gnu_hash: None,
        sysv_hash: None,
    };
    let mut entry = dynamic as *const Elf64Dyn;
    loop {
        // SAFETY: PT_DYNAMIC of a loaded object is an array of Elf64_Dyn terminated by DT_NULL;
        // we stop at the terminator.
        let Elf64Dyn { d_tag, d_val } = unsafe { entry.read() };
        match d_tag {
            DT_NULL => break,
            DT_SYMTAB => info.symtab = absolute(d_val),
            DT_STRTAB => info.strtab = absolute(d_val),
            DT_STRSZ => info.strsz = Some(d_val as usize),
            DT_GNU_HASH => info.gnu_hash = Some(absolute(d_val)),
            DT_HASH => info.sysv_hash = Some(absolute(d_val)),
            _ => {}
        }
        // SAFETY: the entry just read was not DT_NULL, so the next one is still in the array.
        entry = unsafe { entry.add(1) };
    }
    if info.symtab == 0 || info.strtab == 0 {
        return Err("the dynamic section has no DT_SYMTAB or DT_STRTAB".to_owned());
    }
    if info.gnu_hash.is_none() && info.sysv_hash.is_none() {
        return Err("the dynamic section has neither DT_GNU_HASH nor DT_HASH".to_owned());
    }
    Ok(info)
}

/// Indices of the defined dynamic symbols called `name`.
fn lookup(dynamic: &DynamicInfo, name: &str) -> Vec<usize> {
    let candidates = match (dynamic.gnu_hash, dynamic.sysv_hash) {
        (Some(table), _) => {
            // SAFETY: `table` is the object's DT_GNU_HASH section.
            unsafe { gnu_candidates(table, name.as_bytes()) }
        }
        (None, Some(table)) => {
            // SAFETY: `table` is the object's DT_HASH section.
            unsafe { sysv_candidates(table, name.as_bytes()) }
        }
        (None, None) => Vec::new(),
    };
    let mut found = Vec::new();
    for index in candidates {
        // SAFETY: the hash tables only yield indices of symbol table entries.
        let symbol = unsafe { symbol_at(dynamic, index) };
        if symbol.st_shndx == SHN_UNDEF {
            continue;
        }
        // SAFETY: st_name is an offset into the object's string table.
        if unsafe { symbol_name(dynamic, symbol.st_name) } == Some(name.as_bytes()) {
            found.push(index);
        }
    }
    found
}

/// # Safety
/// `index` must be a valid index of the object's symbol table.
unsafe fn symbol_at(dynamic: &DynamicInfo, index: usize) -> Elf64Sym {
    let symbols = dynamic.symtab as *const Elf64Sym;
    // SAFETY: guaranteed by the caller.
    unsafe { symbols.add(index).read() }
}

/// # Safety
/// `offset` must be an `st_name` of the object's symbol table.
unsafe fn symbol_name(dynamic: &DynamicInfo, offset: u32) -> Option<&'static [u8]> {
    let offset = offset as usize;
    if dynamic.strsz.is_some_and(|size| offset >= size) {
        return None;
    }
    let start = (dynamic.strtab + offset) as *const c_char;
    // SAFETY: the string table holds NUL-terminated names and stays mapped while the object
    // is loaded.
    Some(unsafe { CStr::from_ptr(start) }.to_bytes())
}

/// Symbol indices on the GNU hash chain of `name` (not yet compared by name).
///
/// # Safety
/// `table` must be the address of a loaded object's DT_GNU_HASH section.
unsafe fn gnu_candidates(table: usize, name: &[u8]) -> Vec<usize> {
    let words = table as *const u32;
    // SAFETY: the section starts with four u32: nbuckets, symoffset, bloom_size, bloom_shift.
    let (nbuckets, symoffset, bloom_size) =
        unsafe { (words.read(), words.add(1).read(), words.add(2).read()) };
    if nbuckets == 0 {
        return Vec::new();
    }
    let hash = gnu_hash(name);
    // The bloom filter is u64 words (ELFCLASS64) right after the header.
    let buckets = (table + 16 + 8 * bloom_size as usize) as *const u32;
    let chains = buckets.wrapping_add(nbuckets as usize);
    // SAFETY: `hash % nbuckets` is a valid bucket index.
    let mut index = unsafe { buckets.add((hash % nbuckets) as usize).read() };
    let mut out = Vec::new();
    if index < symoffset {
        return out;
    }
    loop {
        // SAFETY: chain entries exist for every symbol from symoffset on, and a chain ends at
        // an entry with its low bit set.
        let chain_hash = unsafe { chains.add((index - symoffset) as usize).read() };
        if (chain_hash | 1) == (hash | 1) {
            out.push(index as usize);
        }
        if chain_hash & 1 != 0 {
            break;
        }
        index += 1;
    }
    out
}

/// Symbol indices on the System V hash chain of `name` (not yet compared by name).
///
/// # Safety
/// `table` must be the address of a loaded object's DT_HASH section.
unsafe fn sysv_candidates(table: usize, name: &[u8]) -> Vec<usize> {
    let words = table as *const u32;
    // SAFETY: the section starts with nbucket and nchain.
    let (nbucket, nchain) = unsafe { (words.read(), words.add(1).read()) };
    if nbucket == 0 {
        return Vec::new();
    }
    let buckets = words.wrapping_add(2);
    let chains = buckets.wrapping_add(nbucket as usize);
    // SAFETY: `hash % nbucket` is a valid bucket index.
    let mut index = unsafe { buckets.add((sysv_hash(name) % nbucket) as usize).read() };
    let mut out = Vec::new();
    // STN_UNDEF (0) ends a chain; the nchain bound guards against a corrupt table.
    while index != 0 && index < nchain && out.len() <= nchain as usize {
        out.push(index as usize);
        // SAFETY: `index < nchain`, so the chain entry exists.
        index = unsafe { chains.add(index as usize).read() };
    }
    out
}

fn protection(flags: u32) -> c_int {
    let mut prot = libc::PROT_NONE;
    if flags & PF_R != 0 {
        prot |= libc::PROT_READ;
    }
    if flags & PF_W != 0 {
        prot |= libc::PROT_WRITE;
    }
    if flags & PF_X != 0 {
        prot |= libc::PROT_EXEC;
    }
    prot
}

/// Sets `st_value` of symbol `index` to 0, making the page writable around the store.
///
/// # Safety
/// `index` must be a valid index of the object's symbol table, and no other thread may be
/// reading the symbol table concurrently.
unsafe fn clear_symbol_value(
    object: &LoadedObject,
    dynamic: &DynamicInfo,
    index: usize,
) -> Result<(), String> {
    let field = dynamic.symtab + index * size_of::<Elf64Sym>() + offset_of!(Elf64Sym, st_value);
    let segment = object
        .loads
        .iter()
        .find(|load| (load.start..load.end).contains(&field))
        .ok_or_else(|| format!("its symbol entry at {field:#x} is outside every PT_LOAD"))?;
    let mut original = protection(segment.flags);
    if object
        .relro
        .iter()
        .any(|relro| (relro.start..relro.end).contains(&field))
    {
        original &= !libc::PROT_WRITE;
    }
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|page| page.is_power_of_two())
        .unwrap_or(4096);
    let page_start = field & !(page - 1);
    let span = field + size_of::<u64>() - page_start;
    let writable = original | libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: the range is the page(s) of a mapped segment of this object; adding write
    // permission (keeping read/exec) cannot invalidate any other access to it.
    if unsafe { libc::mprotect(page_start as *mut c_void, span, writable) } != 0 {
        return Err(format!(
            "mprotect(writable) failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `field` is the 8-byte aligned st_value of a symbol table entry, now writable;
    // the caller guarantees no concurrent readers.
    unsafe { (field as *mut u64).write_volatile(0) };
    // SAFETY: same range as above, restoring the segment's own protection.
    if unsafe { libc::mprotect(page_start as *mut c_void, span, original) } != 0 {
        return Err(format!(
            "hidden, but restoring the page protection failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_the_loader() {
        assert_eq!(gnu_hash(b""), 5381);
        // Reference values of dl_new_hash / _dl_elf_hash from the ELF gABI / glibc sources.
        assert_eq!(gnu_hash(b"printf"), 0x156b_2bb8);
        assert_eq!(sysv_hash(b"printf"), 0x0779_05a6);
    }

    #[test]
    fn finds_malloc_in_libc() {
        let anchor = libc::malloc as *const c_void;
        let object = find_object(anchor as usize).expect("libc is loaded");
        assert!(!object.main_program);
        let dynamic = read_dynamic(&object).expect("libc has a dynamic section");
        let mut seen = 0;
        if let Some(table) = dynamic.gnu_hash {
            // SAFETY: the table comes from libc's own dynamic section.
            let candidates = unsafe { gnu_candidates(table, b"malloc") };
            assert!(!candidates.is_empty());
            seen += 1;
        }
        if let Some(table) = dynamic.sysv_hash {
            // SAFETY: the table comes from libc's own dynamic section.
            let candidates = unsafe { sysv_candidates(table, b"malloc") };
            assert!(!candidates.is_empty());
            seen += 1;
        }
        assert!(seen > 0);
        let indices = lookup(&dynamic, "malloc");
        assert_eq!(indices.len(), 1, "malloc is defined once in libc");
        // SAFETY: the index came from the lookup above.
        let symbol = unsafe { symbol_at(&dynamic, indices[0]) };
        assert_eq!(object.base + symbol.st_value as usize, anchor as usize);
        assert!(lookup(&dynamic, "wslsim_surely_not_a_symbol").is_empty());
        assert!(object_path(anchor).is_some_and(|path| path.contains("libc")));
    }

    #[test]
    fn main_program_is_recognised() {
        let anchor = hashes_match_the_loader as *const c_void;
        assert!(!in_shared_object(anchor));
        assert!(in_shared_object(libc::malloc as *const c_void));
    }

    #[test]
    fn unknown_name_is_an_error_per_name() {
        // SAFETY: looking up a name that does not exist never writes anything.
        let error = unsafe {
            hide_exports(
                libc::malloc as *const c_void,
                &["wslsim_missing_a", "wslsim_missing_b"],
            )
        }
        .unwrap_err();
        let lines: Vec<&str> = error.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("cannot hide export wslsim_missing_a: not in the dynamic"));
        assert!(lines[1].starts_with("cannot hide export wslsim_missing_b: "));
    }
}
