//! The tool's code-object table, pc resolution, and the instruction sources for `isa_cb`.
//!
//! Code objects never reach the V1 decoder; the decoder learns load ids from markers in the
//! SQTT stream and asks the tool about pcs. So the tool keeps its own table of the objects
//! saved during the run (`<prefix>_<gpu>_code_object_id_<id>.out`) and resolves pcs itself:
//!
//! - `marker_id != 0`: `addr` already is the ELF vaddr inside object `marker_id`;
//! - `marker_id == 0`: `addr` is a raw device address; the object is found by a range lookup
//!   over `[load_base, load_base + load_size)` and the vaddr is `addr - load_base`.
//!
//! A resolved vaddr must also lie inside `[0, load_size)` (a `load_size` of 0 means "unknown"
//! and disables the check for marker pcs).
//!
//! Instruction text comes from a [`Listing`] (filled by a [`Disassembler`], e.g. comgr's
//! binding) through [`ListingIsa`], or, with no disassembler, from [`ByAddress`], which answers
//! every pc inside a known code object with a placeholder text and a guessed size of
//! [`FALLBACK_INSTRUCTION_SIZE`] bytes. With that fallback the decoder's stitching follows the
//! guessed sizes, so instructions longer than 4 bytes are mis-stepped; callers should warn once
//! when they use it.

use crate::Error;
use crate::abi::Pc;
use crate::decode::{Instruction, Isa};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

/// A kernel symbol inside a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// The symbol name as the ELF has it (usually mangled).
    pub name: String,
    /// The demangled name; empty when demangling failed or was not attempted (upstream writes
    /// an empty string in that case too).
    pub demangled: String,
    /// The kernel's code, as ELF vaddrs.
    pub vaddr: Range<u64>,
}

/// One loaded code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// The load id (`code_object_id`, the `marker_id` in pcs).
    pub id: u64,
    /// The load delta: device address = `load_base + vaddr`.
    pub load_base: u64,
    /// The loaded size in bytes.
    pub load_size: u64,
    /// The saved `.out` file.
    pub file: PathBuf,
    /// Kernel symbols, in any order.
    pub kernels: Vec<KernelSymbol>,
}

impl CodeObject {
    /// The saved file's contents.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read.
    pub fn read(&self) -> Result<Vec<u8>, Error> {
        std::fs::read(&self.file).map_err(|source| Error::Io {
            action: "read code object",
            path: self.file.clone(),
            source,
        })
    }
}

/// The code objects loaded during a run, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeObjectTable {
    objects: BTreeMap<u64, CodeObject>,
}

impl CodeObjectTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `object`, returning the one it replaces (same id), if any.
    pub fn insert(&mut self, object: CodeObject) -> Option<CodeObject> {
        self.objects.insert(object.id, object)
    }

    /// The object with load id `id`.
    pub fn get(&self, id: u64) -> Option<&CodeObject> {
        self.objects.get(&id)
    }

    /// Adds `kernel` to the symbols of object `id`; false (and nothing added) when there is
    /// no such object.
    pub fn add_kernel(&mut self, id: u64, kernel: KernelSymbol) -> bool {
        match self.objects.get_mut(&id) {
            Some(object) => {
                object.kernels.push(kernel);
                true
            }
            None => false,
        }
    }

    /// All objects, by ascending id.
    pub fn iter(&self) -> impl Iterator<Item = &CodeObject> {
        self.objects.values()
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when there are no objects.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Resolves a decoder pc to `(code object id, ELF vaddr)`.
    pub fn resolve(&self, pc: Pc) -> Option<(u64, u64)> {
        if pc.is_null() {
            return None;
        }
        if pc.marker_id != 0 {
            let obj = self.objects.get(&pc.marker_id)?;
            return (obj.load_size == 0 || pc.addr < obj.load_size).then_some((obj.id, pc.addr));
        }
        // Raw device address: the object whose loaded range holds it. Overlaps should not
        // happen; if they do, the highest base at or below the address wins.
        self.objects
            .values()
            .filter(|o| pc.addr >= o.load_base && pc.addr - o.load_base < o.load_size)
            .max_by_key(|o| o.load_base)
            .map(|o| (o.id, pc.addr - o.load_base))
    }

    /// The kernel of object `id` whose code holds `vaddr`.
    pub fn kernel_containing(&self, id: u64, vaddr: u64) -> Option<&KernelSymbol> {
        self.objects
            .get(&id)?
            .kernels
            .iter()
            .find(|k| k.vaddr.contains(&vaddr))
    }

    /// The kernel of object `id` that starts exactly at `vaddr`.
    pub fn kernel_at(&self, id: u64, vaddr: u64) -> Option<&KernelSymbol> {
        self.objects
            .get(&id)?
            .kernels
            .iter()
            .find(|k| k.vaddr.start == vaddr)
    }
}

/// The size [`ByAddress`] claims for every instruction.
pub const FALLBACK_INSTRUCTION_SIZE: u64 = 4;

/// The placeholder text [`ByAddress`] answers for an instruction at `vaddr`.
pub fn fallback_text(vaddr: u64) -> String {
    format!("s_unknown ; vaddr 0x{vaddr:x}")
}

/// The `isa_cb` answer when no disassembler is available: every pc inside a known code object
/// is a [`FALLBACK_INSTRUCTION_SIZE`]-byte instruction with [`fallback_text`]. Sizes are a
/// guess, so stitching across longer instructions goes wrong; warn the user once.
#[derive(Clone, Copy, Debug)]
pub struct ByAddress<'a> {
    table: &'a CodeObjectTable,
}

impl<'a> ByAddress<'a> {
    /// Answers from `table`.
    pub fn new(table: &'a CodeObjectTable) -> Self {
        Self { table }
    }
}

impl Isa for ByAddress<'_> {
    fn instruction(&self, pc: Pc) -> Option<Instruction> {
        let (_, vaddr) = self.table.resolve(pc)?;
        Some(Instruction {
            text: fallback_text(vaddr),
            size: FALLBACK_INSTRUCTION_SIZE,
        })
    }
}

/// One disassembled instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisassembledInstruction {
    /// Its ELF vaddr.
    pub vaddr: u64,
    /// Its length in bytes (non-zero).
    pub size: u64,
    /// The instruction text.
    pub text: String,
    /// A source-location comment (`file:line`), empty when unknown.
    pub source: String,
}

/// Disassembles code objects (comgr's: [`crate::comgr::ComgrDisassembler`]).
pub trait Disassembler {
    /// Disassembles the instructions of `code_object` (the whole ELF file) whose vaddrs lie in
    /// `vaddr`, in address order.
    ///
    /// # Errors
    /// A message saying why the range could not be disassembled.
    fn disassemble(
        &self,
        code_object: &[u8],
        vaddr: Range<u64>,
    ) -> Result<Vec<DisassembledInstruction>, String>;
}

/// Disassembled instructions by `(code object id, vaddr)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    instructions: BTreeMap<(u64, u64), DisassembledInstruction>,
}

impl Listing {
    /// An empty listing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an instruction of code object `id`.
    pub fn insert(&mut self, id: u64, instruction: DisassembledInstruction) {
        self.instructions
            .insert((id, instruction.vaddr), instruction);
    }

    /// The instruction of object `id` at `vaddr`.
    pub fn get(&self, id: u64, vaddr: u64) -> Option<&DisassembledInstruction> {
        self.instructions.get(&(id, vaddr))
    }

    /// The instructions of object `id` within `vaddr`, in address order.
    pub fn range(
        &self,
        id: u64,
        vaddr: Range<u64>,
    ) -> impl Iterator<Item = &DisassembledInstruction> {
        self.instructions
            .range((id, vaddr.start)..(id, vaddr.end))
            .map(|(_, i)| i)
    }

    /// Disassembles `kernel` of `object` (whose file holds `bytes`) with `disassembler` and
    /// adds its instructions.
    ///
    /// # Errors
    /// [`Error::Disassembly`] with the disassembler's message; nothing is added then.
    pub fn disassemble_kernel(
        &mut self,
        disassembler: &dyn Disassembler,
        object: &CodeObject,
        bytes: &[u8],
        kernel: &KernelSymbol,
    ) -> Result<(), Error> {
        let instructions = disassembler
            .disassemble(bytes, kernel.vaddr.clone())
            .map_err(|reason| Error::Disassembly {
                id: object.id,
                file: object.file.clone(),
                kernel: kernel.name.clone(),
                reason,
            })?;
        for inst in instructions {
            self.insert(object.id, inst);
        }
        Ok(())
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.instructions.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_empty()
    }

    /// Disassembles every kernel of every object in `table`, reading each object's file.
    /// Objects or kernels that fail are left out and their errors returned alongside (their
    /// instructions then get [`fallback_text`]).
    pub fn disassemble_all(
        table: &CodeObjectTable,
        disassembler: &dyn Disassembler,
    ) -> (Self, Vec<Error>) {
        let mut listing = Self::new();
        let mut errors = Vec::new();
        for obj in table.iter() {
            let bytes = match obj.read() {
                Ok(b) => b,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            for kernel in &obj.kernels {
                if let Err(e) = listing.disassemble_kernel(disassembler, obj, &bytes, kernel) {
                    errors.push(e);
                }
            }
        }
        (listing, errors)
    }
}

/// The `isa_cb` answer from a [`Listing`].
#[derive(Clone, Copy, Debug)]
pub struct ListingIsa<'a> {
    table: &'a CodeObjectTable,
    listing: &'a Listing,
}

impl<'a> ListingIsa<'a> {
    /// Resolves pcs through `table` and answers from `listing`.
    pub fn new(table: &'a CodeObjectTable, listing: &'a Listing) -> Self {
        Self { table, listing }
    }
}

impl Isa for ListingIsa<'_> {
    fn instruction(&self, pc: Pc) -> Option<Instruction> {
        let (id, vaddr) = self.table.resolve(pc)?;
        let inst = self.listing.get(id, vaddr)?;
        Some(Instruction {
            text: inst.text.clone(),
            size: inst.size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> CodeObjectTable {
        let mut t = CodeObjectTable::new();
        t.insert(CodeObject {
            id: 1,
            load_base: 0x7000_0000,
            load_size: 0x2000,
            file: PathBuf::from("a.out"),
            kernels: vec![KernelSymbol {
                name: "_Z1kv".into(),
                demangled: "k()".into(),
                vaddr: 0x1000..0x1100,
            }],
        });
        t.insert(CodeObject {
            id: 2,
            load_base: 0x7000_4000,
            load_size: 0x1000,
            file: PathBuf::from("b.out"),
            kernels: vec![],
        });
        t
    }

    #[test]
    fn resolve_marker_and_raw_pcs() {
        let t = table();
        let pc = |addr, marker_id| Pc { addr, marker_id };
        assert_eq!(t.resolve(pc(0x1010, 1)), Some((1, 0x1010)));
        assert_eq!(t.resolve(pc(0x2000, 1)), None, "past load_size");
        assert_eq!(t.resolve(pc(0x10, 9)), None, "unknown id");
        assert_eq!(t.resolve(pc(0x7000_1010, 0)), Some((1, 0x1010)));
        assert_eq!(t.resolve(pc(0x7000_4ffc, 0)), Some((2, 0xffc)));
        assert_eq!(t.resolve(pc(0x7000_2000, 0)), None, "gap between objects");
        assert_eq!(t.resolve(pc(0x6fff_ffff, 0)), None);
        assert_eq!(t.resolve(Pc::default()), None, "{{0,0}} never resolves");
    }

    #[test]
    fn kernels_by_containment_and_start() {
        let t = table();
        assert_eq!(t.kernel_containing(1, 0x10fc).unwrap().name, "_Z1kv");
        assert!(t.kernel_containing(1, 0x1100).is_none());
        assert!(t.kernel_at(1, 0x1004).is_none());
        assert_eq!(t.kernel_at(1, 0x1000).unwrap().demangled, "k()");
    }

    #[test]
    fn by_address_answers_known_objects_only() {
        let t = table();
        let isa = ByAddress::new(&t);
        assert_eq!(
            isa.instruction(Pc {
                addr: 0x1a0,
                marker_id: 1
            }),
            Some(Instruction {
                text: "s_unknown ; vaddr 0x1a0".into(),
                size: 4
            })
        );
        assert_eq!(
            isa.instruction(Pc {
                addr: 0x7000_4010,
                marker_id: 0
            })
            .unwrap()
            .text,
            "s_unknown ; vaddr 0x10"
        );
        assert_eq!(
            isa.instruction(Pc {
                addr: 0x1a0,
                marker_id: 5
            }),
            None
        );
    }

    struct FakeDisasm;
    impl Disassembler for FakeDisasm {
        fn disassemble(
            &self,
            bytes: &[u8],
            vaddr: Range<u64>,
        ) -> Result<Vec<DisassembledInstruction>, String> {
            if bytes == b"bad" {
                return Err("not an ELF".into());
            }
            Ok(vaddr
                .step_by(8)
                .map(|v| DisassembledInstruction {
                    vaddr: v,
                    size: 8,
                    text: format!("v_nop_{v:x}"),
                    source: String::new(),
                })
                .collect())
        }
    }

    #[test]
    fn listing_from_disassembler_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.out");
        let bad = dir.path().join("bad.out");
        std::fs::write(&good, b"ELF").unwrap();
        std::fs::write(&bad, b"bad").unwrap();
        let mut t = CodeObjectTable::new();
        for (id, file) in [(1, good), (2, bad), (3, dir.path().join("missing.out"))] {
            t.insert(CodeObject {
                id,
                load_base: 0,
                load_size: 0,
                file,
                kernels: vec![KernelSymbol {
                    name: format!("k{id}"),
                    demangled: String::new(),
                    vaddr: 0x100..0x120,
                }],
            });
        }
        let (listing, errors) = Listing::disassemble_all(&t, &FakeDisasm);
        assert_eq!(listing.len(), 4);
        assert_eq!(listing.range(1, 0x100..0x110).count(), 2);
        assert_eq!(errors.len(), 2);
        assert!(matches!(errors[0], Error::Disassembly { id: 2, .. }));
        assert!(matches!(errors[1], Error::Io { .. }));
        let isa = ListingIsa::new(&t, &listing);
        assert_eq!(
            isa.instruction(Pc {
                addr: 0x108,
                marker_id: 1
            }),
            Some(Instruction {
                text: "v_nop_108".into(),
                size: 8
            })
        );
        assert_eq!(
            isa.instruction(Pc {
                addr: 0x104,
                marker_id: 1
            }),
            None,
            "not an instruction boundary"
        );
    }
}
