//! What the dynamic loader reads of an ELF file, read the way it reads it (and without trusting
//! the file): class, machine, interpreter, `DT_NEEDED`, `DT_SONAME`, `DT_RPATH`, `DT_RUNPATH`.
//! Only the headers, the dynamic segment and its string table are read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_STRTAB: i64 = 5;
const DT_STRSZ: i64 = 10;
const DT_SONAME: i64 = 14;
const DT_RPATH: i64 = 15;
const DT_RUNPATH: i64 = 29;
/// `EM_X86_64`.
pub const EM_X86_64: u16 = 62;

/// The most program headers, dynamic bytes and string bytes read (a hostile file is refused).
const MAX_PHDRS: usize = 512;
const MAX_DYNAMIC: u64 = 1 << 20;
const MAX_STRTAB: u64 = 16 << 20;

/// What the loader sees of an ELF object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Elf {
    /// `e_machine`.
    pub machine: u16,
    /// `PT_INTERP`: the program interpreter (dynamically linked executables).
    pub interp: Option<String>,
    /// Whether it has a dynamic segment.
    pub dynamic: bool,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DT_RPATH` (searched before `LD_LIBRARY_PATH`, ignored when `DT_RUNPATH` exists).
    pub rpath: Option<String>,
    /// `DT_RUNPATH` (searched after `LD_LIBRARY_PATH`, for the object's own dependencies).
    pub runpath: Option<String>,
}

impl Elf {
    /// Whether this build's loader (x86-64, 64-bit little-endian) can load it.
    pub fn loadable_here(&self) -> bool {
        self.machine == EM_X86_64
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
    })
}

fn read_range(f: &mut File, offset: u64, len: u64) -> Result<Vec<u8>, String> {
    f.seek(SeekFrom::Start(offset)).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(len)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if (buf.len() as u64) < len {
        return Err(format!("truncated at byte {}", offset + buf.len() as u64));
    }
    Ok(buf)
}

/// One program header.
struct Phdr {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// Reads `path`'s loader-relevant parts. An error says why it is not a 64-bit little-endian
/// ELF file (or is damaged).
pub fn read(path: &Path) -> Result<Elf, String> {
    let mut f = File::open(path).map_err(|e| e.to_string())?;
    let header = read_range(&mut f, 0, 64).map_err(|_| "not an ELF file".to_owned())?;
    if header[..4] != *b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if header[4] != 2 || header[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let machine = u16_at(&header, 18);
    let phoff = u64_at(&header, 32);
    let phentsize = usize::from(u16_at(&header, 54));
    let phnum = usize::from(u16_at(&header, 56));
    if phnum > MAX_PHDRS || (phnum > 0 && phentsize < 56) {
        return Err("implausible program headers".into());
    }
    let table = read_range(&mut f, phoff, (phentsize * phnum) as u64)?;
    let phdrs: Vec<Phdr> = (0..phnum)
        .map(|i| {
            let at = i * phentsize;
            Phdr {
                kind: u32_at(&table, at),
                offset: u64_at(&table, at + 8),
                vaddr: u64_at(&table, at + 16),
                filesz: u64_at(&table, at + 32),
            }
        })
        .collect();
    let mut elf = Elf {
        machine,
        ..Elf::default()
    };
    if let Some(p) = phdrs.iter().find(|p| p.kind == PT_INTERP) {
        let bytes = read_range(&mut f, p.offset, p.filesz.min(4096))?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        elf.interp = Some(String::from_utf8_lossy(&bytes[..end]).into_owned());
    }
    let Some(dynamic) = phdrs.iter().find(|p| p.kind == PT_DYNAMIC) else {
        return Ok(elf);
    };
    elf.dynamic = true;
    let bytes = read_range(&mut f, dynamic.offset, dynamic.filesz.min(MAX_DYNAMIC))?;
    let mut entries = Vec::new();
    for e in bytes.chunks_exact(16) {
        let tag = u64_at(e, 0) as i64;
        if tag == DT_NULL {
            break;
        }
        entries.push((tag, u64_at(e, 8)));
    }
    let value = |tag: i64| entries.iter().find(|e| e.0 == tag).map(|e| e.1);
    let (Some(strtab), Some(strsz)) = (value(DT_STRTAB), value(DT_STRSZ)) else {
        return Ok(elf);
    };
    // The string table's file offset, through the PT_LOAD segment that maps its address.
    let Some(offset) = phdrs
        .iter()
        .filter(|p| p.kind == PT_LOAD)
        .find(|p| strtab >= p.vaddr && strtab < p.vaddr.saturating_add(p.filesz))
        .map(|p| strtab - p.vaddr + p.offset)
    else {
        return Err("the dynamic string table is not in a loaded segment".into());
    };
    let strings = read_range(&mut f, offset, strsz.min(MAX_STRTAB))?;
    let string = |at: u64| -> Option<String> {
        let rest = strings.get(at as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    for &(tag, v) in &entries {
        match tag {
            DT_NEEDED => elf.needed.extend(string(v)),
            DT_SONAME => elf.soname = string(v),
            DT_RPATH => elf.rpath = string(v),
            DT_RUNPATH => elf.runpath = string(v),
            _ => {}
        }
    }
    Ok(elf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_test_binary_and_refuses_other_files() {
        let me = std::env::current_exe().unwrap();
        let elf = read(&me).unwrap();
        assert!(elf.loadable_here());
        assert!(elf.dynamic);
        assert!(
            elf.interp.as_deref().unwrap_or("").contains("ld-linux"),
            "{elf:?}"
        );
        assert!(
            elf.needed.iter().any(|n| n.starts_with("libc.so")),
            "{elf:?}"
        );
        let dir = std::env::temp_dir().join(format!("rocprof-doctor-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("script");
        std::fs::write(&text, "#!/bin/sh\n").unwrap();
        assert_eq!(read(&text).unwrap_err(), "not an ELF file");
        let short = dir.join("short");
        std::fs::write(&short, b"\x7fELF\x02\x01").unwrap();
        assert!(read(&short).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
