//! The traced calls' signatures and their arguments' values as rocprofv3 shows them.
//!
//! - [`SIGNATURES`]: every HIP, HSA and ROCTx function upstream's argument iteration knows,
//!   with its arguments' names and C types in call order, generated at build time from
//!   `abi/api-signatures.tsv` (which `cargo xtask api-signatures` writes from rocprofiler-sdk's
//!   `hip/`, `hsa/` and `marker/api_args.h`; `tests/headers.rs` checks it against them).
//! - [`layout`]: where each argument lives when the function is called (System V x86-64:
//!   integer registers, vector registers, stack words) and the [`Shape`] the tool captures: as
//!   many words as the signature has, and which of them are C strings.
//! - [`decode`]: after the run, the captured words back into upstream's stringified arguments
//!   (type as `typeid` names it, demangled type, name, value) and the return value as upstream's
//!   `uint64_t_retval` holds it.
//!
//! Nothing here allocates on a traced path: the tool only calls [`Shape::of`] while wrapping.

pub mod ctype;
mod decode;
mod format;
pub mod header;

pub use decode::{Decoded, DecodedArg, RawCall, decode};
pub use format::enum_name;

use ctype::{CType, Class};

/// One library crate, one error type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An `api_args.h` header could not be read as one.
    #[error("not an api_args.h header: {0}")]
    Header(String),
}

/// Which library a function belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// HIP runtime and compiler APIs.
    Hip,
    /// HSA core and extension APIs.
    Hsa,
    /// ROCTx.
    Roctx,
}

/// One argument of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name, as upstream's argument iteration reports it.
    pub name: &'static str,
    /// Its C type, canonical spelling ([`header::canonical`]).
    pub c_type: &'static str,
}

/// A traced function's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// The function's name.
    pub name: &'static str,
    /// Its library.
    pub group: Group,
    /// Its arguments, in call order.
    pub args: &'static [Param],
}

include!(concat!(env!("OUT_DIR"), "/signatures.rs"));

/// The signature of `function`, if upstream's argument iteration knows it.
pub fn signature(function: &str) -> Option<&'static Signature> {
    SIGNATURES
        .binary_search_by(|s| s.name.cmp(function))
        .ok()
        .map(|k| &SIGNATURES[k])
}

/// What a HIP function returns, as upstream records it (`rocprofiler_hip_api_retval_t`): every
/// HIP function returns `hipError_t` except these (facts of `hip_runtime_api.h`).
const HIP_RETURNS: &[(&str, Return)] = &[
    ("hipApiName", Return::Word),
    ("hipGetErrorName", Return::Word),
    ("hipGetErrorString", Return::Word),
    ("hipKernelNameRef", Return::Word),
    ("hipKernelNameRefByPtr", Return::Word),
    ("__hipRegisterFatBinary", Return::Word),
    ("hipGetStreamDeviceId", Return::Int32),
    ("hipCreateChannelDesc", Return::InMemory),
    ("__hipRegisterFunction", Return::Void),
    ("__hipRegisterManagedVar", Return::Void),
    ("__hipRegisterSurface", Return::Void),
    ("__hipRegisterTexture", Return::Void),
    ("__hipRegisterVar", Return::Void),
    ("__hipUnregisterFatBinary", Return::Void),
];

/// How a function's return value is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Return {
    /// A 32-bit value (`hipError_t`, `int`, `hsa_status_t`): `rax`'s low half, zero-extended
    /// (upstream's retval union is zeroed before the value is stored).
    Int32,
    /// A pointer or 64-bit value: all of `rax`.
    Word,
    /// Nothing (the retval stays 0).
    Void,
    /// A struct returned in memory (`hipChannelFormatDesc`): the caller passes the buffer's
    /// address first (in `rdi`), `rax` returns it, and the retval holds the struct's first 8
    /// bytes.
    InMemory,
}

impl Signature {
    /// What the function returns.
    pub fn returns(&self) -> Return {
        match self.group {
            Group::Hip => HIP_RETURNS
                .iter()
                .find(|(n, _)| *n == self.name)
                .map_or(Return::Int32, |&(_, r)| r),
            // Neither is written by any upstream writer: the whole register is kept.
            Group::Hsa | Group::Roctx => Return::Word,
        }
    }
}

/// Where one argument lives at the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Integer registers from index `first` (0 = `rdi`), `count` of them.
    Int { first: usize, count: usize },
    /// Vector register `index` (0 = `xmm0`), its low 8 bytes.
    Sse { index: usize },
    /// Stack words from `first` (0 = the word at the caller's `rsp` before the call), `count`
    /// of them.
    Stack { first: usize, count: usize },
}

/// Integer argument registers.
pub const INT_REGS: usize = 6;
/// Vector argument registers.
pub const SSE_REGS: usize = 8;
/// Stack words the trampoline forwards (and can capture).
pub const STACK_WORDS: usize = 12;
/// At most this many C strings are captured per call (their words marked in the shape).
pub const MAX_STRINGS: usize = 4;
/// Bytes kept of a captured C string.
pub const STRING_BYTES: usize = 256;

/// Where each argument of `sig` lives, in order (System V x86-64; a struct returned in memory
/// takes `rdi` first).
pub fn layout(sig: &Signature) -> Vec<Place> {
    let (mut int, mut sse, mut stack) = (0, 0, 0);
    if sig.returns() == Return::InMemory {
        int = 1;
    }
    sig.args
        .iter()
        .map(|p| match CType::parse(p.c_type).class() {
            Class::Integer(n) if int + n <= INT_REGS => {
                int += n;
                Place::Int {
                    first: int - n,
                    count: n,
                }
            }
            Class::Sse if sse < SSE_REGS => {
                sse += 1;
                Place::Sse { index: sse - 1 }
            }
            Class::Integer(n) | Class::Memory(n) => {
                stack += n;
                Place::Stack {
                    first: stack - n,
                    count: n,
                }
            }
            Class::Sse => {
                stack += 1;
                Place::Stack {
                    first: stack - 1,
                    count: 1,
                }
            }
        })
        .collect()
}

/// What the tool captures of one function's calls, packed in one word for its trampoline slot:
/// how many integer registers, vector registers and stack words its arguments take (the
/// captured words are laid out in that order), which of those words are C strings, and
/// whether the return value is a struct in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape(pub u64);

impl Shape {
    /// The shape of `sig`'s calls.
    pub fn of(sig: &Signature) -> Shape {
        let places = layout(sig);
        let mut n_int = usize::from(sig.returns() == Return::InMemory);
        let (mut n_sse, mut n_stack) = (0, 0);
        for p in &places {
            match *p {
                Place::Int { first, count } => n_int = n_int.max(first + count),
                Place::Sse { index } => n_sse = n_sse.max(index + 1),
                Place::Stack { first, count } => n_stack = n_stack.max(first + count),
            }
        }
        let n_stack = n_stack.min(STACK_WORDS);
        let mut strings = 0u64;
        let mut marked = 0;
        for (p, place) in sig.args.iter().zip(&places) {
            if !CType::parse(p.c_type).is_c_string() || marked == MAX_STRINGS {
                continue;
            }
            let word = match *place {
                Place::Int { first, .. } => first,
                Place::Sse { .. } => continue,
                Place::Stack { first, .. } if first < STACK_WORDS => n_int + n_sse + first,
                Place::Stack { .. } => continue,
            };
            strings |= 1 << word;
            marked += 1;
        }
        let ret_mem = u64::from(sig.returns() == Return::InMemory);
        Shape(
            n_int as u64
                | (n_sse as u64) << 3
                | (n_stack as u64) << 7
                | ret_mem << 11
                | strings << 12,
        )
    }

    /// Integer registers captured.
    pub const fn int_words(self) -> usize {
        (self.0 & 0x7) as usize
    }

    /// Vector registers captured (low 8 bytes each).
    pub const fn sse_words(self) -> usize {
        ((self.0 >> 3) & 0xf) as usize
    }

    /// Stack words captured.
    pub const fn stack_words(self) -> usize {
        ((self.0 >> 7) & 0xf) as usize
    }

    /// All words captured.
    pub const fn words(self) -> usize {
        self.int_words() + self.sse_words() + self.stack_words()
    }

    /// Whether the return value is a struct in memory (`rax` holds its address).
    pub const fn returns_in_memory(self) -> bool {
        (self.0 >> 11) & 1 == 1
    }

    /// Whether captured word `k` is a C string's address.
    pub const fn is_string(self, k: usize) -> bool {
        k < 26 && (self.0 >> (12 + k)) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_memcpy_is_four_integer_registers() {
        let sig = signature("hipMemcpy").expect("hipMemcpy has a signature");
        let names: Vec<&str> = sig.args.iter().map(|p| p.name).collect();
        assert_eq!(names, ["dst", "src", "sizeBytes", "kind"]);
        let shape = Shape::of(sig);
        assert_eq!(
            (shape.int_words(), shape.sse_words(), shape.stack_words()),
            (4, 0, 0)
        );
        assert!(!(0..4).any(|k| shape.is_string(k)));
    }

    #[test]
    fn launch_kernel_passes_dim3_in_two_registers_and_spills_to_the_stack() {
        let sig = signature("hipLaunchKernel").expect("hipLaunchKernel");
        assert_eq!(
            layout(sig),
            [
                Place::Int { first: 0, count: 1 },
                Place::Int { first: 1, count: 2 },
                Place::Int { first: 3, count: 2 },
                Place::Int { first: 5, count: 1 },
                Place::Stack { first: 0, count: 1 },
                Place::Stack { first: 1, count: 1 },
            ]
        );
        assert_eq!(Shape::of(sig).words(), 8);
    }

    #[test]
    fn strings_are_marked_and_struct_returns_take_rdi() {
        let sig = signature("hipModuleGetFunction").expect("hipModuleGetFunction");
        let shape = Shape::of(sig);
        assert!(shape.is_string(2), "{:?}", sig.args);
        assert!(!shape.is_string(0) && !shape.is_string(1));
        let desc = signature("hipCreateChannelDesc").expect("hipCreateChannelDesc");
        assert_eq!(desc.returns(), Return::InMemory);
        assert_eq!(layout(desc)[0], Place::Int { first: 1, count: 1 });
        assert!(Shape::of(desc).returns_in_memory());
    }

    #[test]
    fn the_table_is_sorted_and_covers_every_library() {
        assert!(SIGNATURES.windows(2).all(|w| w[0].name < w[1].name));
        for (name, group) in [
            ("hipMalloc", Group::Hip),
            ("__hipPushCallConfiguration", Group::Hip),
            ("hsa_agent_get_info", Group::Hsa),
            ("hsa_amd_memory_pool_allocate", Group::Hsa),
            ("roctxRangePushA", Group::Roctx),
        ] {
            assert_eq!(signature(name).map(|s| s.group), Some(group), "{name}");
        }
        assert!(signature("notAFunction").is_none());
    }
}
