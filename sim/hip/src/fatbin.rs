//! The simulator's fat binary: what `__hipRegisterFatBinary` receives (see
//! `docs/SIMULATOR.md`, "HIP, ROCTx and the workloads").
//!
//! ```text
//! wslsim_fatbin_wrapper_t (48 bytes, 8-byte aligned; all integers little-endian)
//! offset  size  field
//! 0       4     magic 0x42465357 (the bytes "WSFB")
//! 4       4     version = 1
//! 8       8     const uint8_t* code_object      a WSLSIMCO code object (sim/codeobj)
//! 16      8     uint64_t code_object_size
//! 24      8     const uint8_t* kernarg_layout   the kernarg-layout blob below
//! 32      8     uint64_t kernarg_layout_size
//! 40      8     reserved, 0
//!
//! kernarg-layout blob
//! 0       4     magic "WSKA"
//! 4       4     version = 1
//! 8       4     kernel count K (= the code object's kernel count, same order)
//! 12      4     reserved, 0
//! 16      ...   K entries, each: u32 argument count N (<= 64), u32 reserved,
//!               then N x { u32 offset; u32 size; } of the explicit arguments in the
//!               kernarg segment, in parameter order
//! ```
//!
//! Every argument must lie inside the kernel's `kernarg_size` (descriptor offset 8) and
//! have a size of 1..=256 bytes. Parsing never panics: anything malformed is a
//! [`FatbinError`].

use std::fmt;

use wslsim_codeobj::Kernel;

/// `wslsim_fatbin_wrapper_t.magic`: the bytes "WSFB".
pub const WRAPPER_MAGIC: u32 = u32::from_le_bytes(*b"WSFB");
/// The only wrapper version.
pub const WRAPPER_VERSION: u32 = 1;
/// Size of `wslsim_fatbin_wrapper_t`.
pub const WRAPPER_SIZE: usize = 48;
/// Magic of the kernarg-layout blob.
pub const LAYOUT_MAGIC: [u8; 4] = *b"WSKA";
/// The only kernarg-layout version.
pub const LAYOUT_VERSION: u32 = 1;
/// Most explicit arguments per kernel.
pub const MAX_ARGS: usize = 64;
/// Largest single argument.
pub const MAX_ARG_SIZE: u32 = 256;
/// Largest code object or layout blob `__hipRegisterFatBinary` reads (a sanity bound).
pub const MAX_BLOB: u64 = 64 << 20;

/// `wslsim_fatbin_wrapper_t` as read from memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Wrapper {
    /// [`WRAPPER_MAGIC`].
    pub magic: u32,
    /// [`WRAPPER_VERSION`].
    pub version: u32,
    /// The code object.
    pub code_object: *const u8,
    /// Its size.
    pub code_object_size: u64,
    /// The kernarg-layout blob.
    pub kernarg_layout: *const u8,
    /// Its size.
    pub kernarg_layout_size: u64,
    /// Reserved, 0.
    pub reserved: u64,
}

const _: () = {
    assert!(size_of::<Wrapper>() == WRAPPER_SIZE);
    assert!(std::mem::offset_of!(Wrapper, code_object) == 8);
    assert!(std::mem::offset_of!(Wrapper, code_object_size) == 16);
    assert!(std::mem::offset_of!(Wrapper, kernarg_layout) == 24);
    assert!(std::mem::offset_of!(Wrapper, kernarg_layout_size) == 32);
};

/// One explicit kernel argument in the kernarg segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgSlot {
    /// Byte offset.
    pub offset: u32,
    /// Byte size.
    pub size: u32,
}

/// A kernel of a fat binary: the code-object record and its argument layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatKernel {
    /// The code-object record.
    pub kernel: Kernel,
    /// Explicit arguments in parameter order.
    pub args: Vec<ArgSlot>,
}

/// A parsed fat binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatBinary {
    /// The code object exactly as given (what the HSA loader receives).
    pub code_object: Vec<u8>,
    /// Its kernels with their layouts.
    pub kernels: Vec<FatKernel>,
}

/// Why a fat binary was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FatbinError {
    /// The wrapper pointer is null.
    Null,
    /// Wrong wrapper magic.
    BadMagic(u32),
    /// Unsupported wrapper version.
    BadVersion(u32),
    /// A null blob pointer or an absurd size.
    BadBlob(&'static str),
    /// The code object does not parse.
    CodeObject(wslsim_codeobj::ParseError),
    /// The kernarg-layout blob is malformed.
    Layout(String),
}

impl fmt::Display for FatbinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FatbinError::Null => write!(f, "null fat binary"),
            FatbinError::BadMagic(m) => write!(f, "bad fat binary magic {m:#010x}"),
            FatbinError::BadVersion(v) => write!(f, "unsupported fat binary version {v}"),
            FatbinError::BadBlob(what) => write!(f, "bad {what} pointer or size"),
            FatbinError::CodeObject(e) => write!(f, "code object: {e}"),
            FatbinError::Layout(why) => write!(f, "kernarg layout: {why}"),
        }
    }
}

fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    let raw = bytes.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
}

/// Checks the wrapper's fixed fields (magic, version, blob pointers and sizes).
pub fn check_wrapper(wrapper: &Wrapper) -> Result<(), FatbinError> {
    if wrapper.magic != WRAPPER_MAGIC {
        return Err(FatbinError::BadMagic(wrapper.magic));
    }
    if wrapper.version != WRAPPER_VERSION {
        return Err(FatbinError::BadVersion(wrapper.version));
    }
    if wrapper.code_object.is_null()
        || wrapper.code_object_size == 0
        || wrapper.code_object_size > MAX_BLOB
    {
        return Err(FatbinError::BadBlob("code object"));
    }
    if wrapper.kernarg_layout.is_null()
        || wrapper.kernarg_layout_size == 0
        || wrapper.kernarg_layout_size > MAX_BLOB
    {
        return Err(FatbinError::BadBlob("kernarg layout"));
    }
    Ok(())
}

/// Reads a wrapper from memory and parses the blobs it points to.
///
/// # Safety
///
/// `data` is null or points to a readable `wslsim_fatbin_wrapper_t` whose blob pointers are
/// readable for the sizes it states (once those pass [`check_wrapper`]).
pub unsafe fn read(data: *const u8) -> Result<FatBinary, FatbinError> {
    if data.is_null() {
        return Err(FatbinError::Null);
    }
    // SAFETY: readable per the contract; no alignment assumed.
    let wrapper = unsafe { data.cast::<Wrapper>().read_unaligned() };
    check_wrapper(&wrapper)?;
    // SAFETY: readable for the stated sizes (contract), which check_wrapper bounded.
    let (code, layout) = unsafe {
        (
            std::slice::from_raw_parts(wrapper.code_object, wrapper.code_object_size as usize),
            std::slice::from_raw_parts(
                wrapper.kernarg_layout,
                wrapper.kernarg_layout_size as usize,
            ),
        )
    };
    parse(code, layout)
}

/// Parses a code object and its kernarg-layout blob.
pub fn parse(code_object: &[u8], layout: &[u8]) -> Result<FatBinary, FatbinError> {
    let kernels = wslsim_codeobj::parse(code_object).map_err(FatbinError::CodeObject)?;
    let args = parse_layout(layout, &kernels)?;
    Ok(FatBinary {
        code_object: code_object.to_vec(),
        kernels: kernels
            .into_iter()
            .zip(args)
            .map(|(kernel, args)| FatKernel { kernel, args })
            .collect(),
    })
}

/// Parses a kernarg-layout blob against the code object's kernels.
pub fn parse_layout(blob: &[u8], kernels: &[Kernel]) -> Result<Vec<Vec<ArgSlot>>, FatbinError> {
    let bad = |why: String| FatbinError::Layout(why);
    if blob.get(..4) != Some(&LAYOUT_MAGIC[..]) {
        return Err(bad("bad magic".into()));
    }
    let version = u32_at(blob, 4).ok_or_else(|| bad("truncated header".into()))?;
    if version != LAYOUT_VERSION {
        return Err(bad(format!("unsupported version {version}")));
    }
    let count = u32_at(blob, 8).ok_or_else(|| bad("truncated header".into()))? as usize;
    if count != kernels.len() {
        return Err(bad(format!(
            "{count} entries for {} kernels",
            kernels.len()
        )));
    }
    let mut at = 16usize;
    let mut out = Vec::with_capacity(count);
    for (index, kernel) in kernels.iter().enumerate() {
        let n = u32_at(blob, at).ok_or_else(|| bad(format!("entry {index} truncated")))? as usize;
        if n > MAX_ARGS {
            return Err(bad(format!(
                "entry {index}: {n} arguments (at most {MAX_ARGS})"
            )));
        }
        at += 8;
        let kernarg_size = kernel.descriptor.kernarg_size();
        let mut args = Vec::with_capacity(n);
        for arg in 0..n {
            let (Some(offset), Some(size)) = (u32_at(blob, at), u32_at(blob, at + 4)) else {
                return Err(bad(format!("entry {index} argument {arg} truncated")));
            };
            at += 8;
            if size == 0 || size > MAX_ARG_SIZE {
                return Err(bad(format!("entry {index} argument {arg}: size {size}")));
            }
            if u64::from(offset) + u64::from(size) > u64::from(kernarg_size) {
                return Err(bad(format!(
                    "entry {index} argument {arg}: bytes {offset}..{} outside kernarg_size {kernarg_size}",
                    u64::from(offset) + u64::from(size)
                )));
            }
            args.push(ArgSlot { offset, size });
        }
        out.push(args);
    }
    Ok(out)
}

/// Writes a kernarg-layout blob (the inverse of [`parse_layout`]; used by tests).
pub fn encode_layout(layouts: &[Vec<ArgSlot>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&LAYOUT_MAGIC);
    out.extend_from_slice(&LAYOUT_VERSION.to_le_bytes());
    out.extend_from_slice(&(layouts.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for args in layouts {
        out.extend_from_slice(&(args.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for arg in args {
            out.extend_from_slice(&arg.offset.to_le_bytes());
            out.extend_from_slice(&arg.size.to_le_bytes());
        }
    }
    out
}

/// Packs kernel arguments into a kernarg segment of `kernarg.len()` bytes: zero-fills it, then
/// copies `size` bytes from each argument pointer to its offset.
///
/// # Safety
///
/// `args` holds at least `layout.len()` pointers, each readable for its slot's size.
pub unsafe fn pack_kernargs(
    kernarg: &mut [u8],
    layout: &[ArgSlot],
    args: *const *const u8,
) -> Result<(), crate::error::HipError> {
    kernarg.fill(0);
    if layout.is_empty() {
        return Ok(());
    }
    if args.is_null() {
        return Err(crate::error::INVALID_VALUE);
    }
    for (i, slot) in layout.iter().enumerate() {
        let start = slot.offset as usize;
        let end = start + slot.size as usize;
        let Some(dst) = kernarg.get_mut(start..end) else {
            return Err(crate::error::INVALID_VALUE);
        };
        // SAFETY: `args` holds layout.len() pointers (contract).
        let src = unsafe { *args.add(i) };
        if src.is_null() {
            return Err(crate::error::INVALID_VALUE);
        }
        // SAFETY: `src` is readable for slot.size bytes (contract); `dst` has that length.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
    }
    Ok(())
}
