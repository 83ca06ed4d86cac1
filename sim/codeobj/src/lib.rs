//! Simulated code objects: the byte format `sim/hsa` loads through the HSA executable API and
//! `sim/hip` embeds in fat binaries (specified in `docs/SIMULATOR.md`), and the simulated ISA
//! ([`isa`]) whose programs they carry.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "WSLSIMCO"
//! 8       4     version = 2 (u32; version 1 files, without code, are still read)
//! 12      4     kernel count N (u32)
//! 16      ...   N kernel records of 384 bytes each:
//!   0     128   kernel symbol name, NUL-terminated (the HSA symbol name is this + ".kd")
//!   128   64    host symbol: NUL-terminated name of the CPU implementation (dlsym) if impl is 0
//!   192   8     impl: address of the CPU implementation, or 0
//!   200   4     valu_per_wave     204 salu_per_wave     208 cycles_per_wave
//!   212   4     kernarg_alignment
//!   216   4     code size in bytes (version 2; reserved, 0, in version 1)
//!   220   36    reserved, 0
//!   256   64    the AMD kernel descriptor
//!   320   64    reserved, 0
//! then (version 2) each kernel's encoded program, in kernel order, each starting at a
//! multiple of 256 at or after the end of the records, zero padding between; a kernel's
//! descriptor field kernel_code_entry_byte_offset (i64) is its code's file offset minus the
//! descriptor's file offset.
//! ```
//!
//! [`KernelBuilder`] and [`CodeObjectBuilder`] write version 2; [`parse`] reads versions 1 and
//! 2 and rejects anything malformed with a [`ParseError`] (it never panics, whatever the input).
//! The builder writes, for each kernel, [`Kernel::program`]: [`isa::program`] of its
//! `salu_per_wave` and `valu_per_wave`, each clamped to [`MAX_ENCODED_COUNT`].

pub mod isa;

/// [`isa::encode`] (the crate-level [`encode`] writes whole code objects).
pub use isa::encode as encode_program;
pub use isa::{
    Instruction, category, cycles_for, decode_instruction, decode_program, encode_instruction,
    program,
};

use std::fmt;

/// The 8-byte magic at offset 0.
pub const MAGIC: [u8; 8] = *b"WSLSIMCO";
/// The format version the builder writes.
pub const VERSION: u32 = 2;
/// The previous format version (no code section), still accepted by [`parse`].
pub const VERSION_1: u32 = 1;
/// Alignment of each kernel's code within the file.
pub const CODE_ALIGNMENT: usize = 256;
/// The builder encodes at most this many SALU-side and this many VALU instructions per kernel
/// (larger cost-model counts still drive the cost model, not the code).
pub const MAX_ENCODED_COUNT: u32 = 16_384;
/// Size of the header (magic, version, count).
pub const HEADER_SIZE: usize = 16;
/// Size of one kernel record.
pub const RECORD_SIZE: usize = 384;
/// Size of the AMD kernel descriptor (`kernel_descriptor_t`).
pub const DESCRIPTOR_SIZE: usize = 64;
/// Bytes of the kernel-name field (the name plus its NUL must fit).
pub const NAME_FIELD: usize = 128;
/// Bytes of the host-symbol field (the name plus its NUL must fit).
pub const HOST_SYMBOL_FIELD: usize = 64;

const OFF_NAME: usize = 0;
const OFF_HOST_SYMBOL: usize = 128;
const OFF_IMPL: usize = 192;
const OFF_VALU: usize = 200;
const OFF_SALU: usize = 204;
const OFF_CYCLES: usize = 208;
const OFF_KERNARG_ALIGN: usize = 212;
const OFF_CODE_SIZE: usize = 216;
const OFF_DESCRIPTOR: usize = 256;

/// Kernel-descriptor field offsets (bytes as the hardware reads them).
pub mod kd {
    /// `group_segment_fixed_size` (u32).
    pub const GROUP_SEGMENT_FIXED_SIZE: usize = 0;
    /// `private_segment_fixed_size` (u32).
    pub const PRIVATE_SEGMENT_FIXED_SIZE: usize = 4;
    /// `kernarg_size` (u32).
    pub const KERNARG_SIZE: usize = 8;
    /// `kernel_code_entry_byte_offset` (i64).
    pub const KERNEL_CODE_ENTRY_BYTE_OFFSET: usize = 16;
    /// `compute_pgm_rsrc3` (u32).
    pub const COMPUTE_PGM_RSRC3: usize = 44;
    /// `compute_pgm_rsrc1` (u32): VGPR granule bits 5:0, SGPR granule bits 9:6.
    pub const COMPUTE_PGM_RSRC1: usize = 48;
    /// `compute_pgm_rsrc2` (u32).
    pub const COMPUTE_PGM_RSRC2: usize = 52;
    /// `kernel_code_properties` (u16): bit 10 = wave32.
    pub const KERNEL_CODE_PROPERTIES: usize = 56;
    /// `kernel_code_properties` bit: the kernel runs in wave32 mode.
    pub const PROPERTY_WAVE32: u16 = 1 << 10;
}

fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    let mut raw = [0u8; 2];
    raw.copy_from_slice(&bytes[offset..offset + 2]);
    u16::from_le_bytes(raw)
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(raw)
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(raw)
}

/// The 64-byte AMD kernel descriptor, as bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KernelDescriptor(pub [u8; DESCRIPTOR_SIZE]);

impl fmt::Debug for KernelDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelDescriptor")
            .field("group_segment_fixed_size", &self.group_segment_fixed_size())
            .field(
                "private_segment_fixed_size",
                &self.private_segment_fixed_size(),
            )
            .field("kernarg_size", &self.kernarg_size())
            .field(
                "kernel_code_entry_byte_offset",
                &self.kernel_code_entry_byte_offset(),
            )
            .field("rsrc1", &format_args!("{:#x}", self.rsrc1()))
            .field(
                "code_properties",
                &format_args!("{:#x}", self.code_properties()),
            )
            .finish()
    }
}

impl KernelDescriptor {
    /// `group_segment_fixed_size` (LDS bytes).
    pub fn group_segment_fixed_size(&self) -> u32 {
        u32_at(&self.0, kd::GROUP_SEGMENT_FIXED_SIZE)
    }
    /// `private_segment_fixed_size` (scratch bytes per work-item).
    pub fn private_segment_fixed_size(&self) -> u32 {
        u32_at(&self.0, kd::PRIVATE_SEGMENT_FIXED_SIZE)
    }
    /// `kernarg_size`.
    pub fn kernarg_size(&self) -> u32 {
        u32_at(&self.0, kd::KERNARG_SIZE)
    }
    /// `compute_pgm_rsrc1`.
    pub fn rsrc1(&self) -> u32 {
        u32_at(&self.0, kd::COMPUTE_PGM_RSRC1)
    }
    /// `kernel_code_entry_byte_offset`: from the descriptor to the kernel's first instruction.
    pub fn kernel_code_entry_byte_offset(&self) -> i64 {
        u64_at(&self.0, kd::KERNEL_CODE_ENTRY_BYTE_OFFSET) as i64
    }
    /// The same descriptor with `kernel_code_entry_byte_offset` replaced.
    pub fn with_kernel_code_entry_byte_offset(mut self, offset: i64) -> KernelDescriptor {
        self.0[kd::KERNEL_CODE_ENTRY_BYTE_OFFSET..kd::KERNEL_CODE_ENTRY_BYTE_OFFSET + 8]
            .copy_from_slice(&offset.to_le_bytes());
        self
    }
    /// `kernel_code_properties`.
    pub fn code_properties(&self) -> u16 {
        u16_at(&self.0, kd::KERNEL_CODE_PROPERTIES)
    }
    /// Whether the kernel runs in wave32 mode (`kernel_code_properties` bit 10).
    pub fn is_wave32(&self) -> bool {
        self.code_properties() & kd::PROPERTY_WAVE32 != 0
    }
    /// The wave size the descriptor implies: 32 or 64.
    pub fn wave_size(&self) -> u16 {
        if self.is_wave32() { 32 } else { 64 }
    }
    /// Architected VGPRs per work-item, as a profiler decodes them:
    /// `(rsrc1[5:0] + 1) * (wave32 ? 8 : 4)`.
    pub fn arch_vgpr_count(&self) -> u32 {
        ((self.rsrc1() & 0x3F) + 1) * if self.is_wave32() { 8 } else { 4 }
    }
    /// SGPRs per wave as a profiler reports them: 128 for gfx10 and later, else
    /// `(rsrc1[9:6] / 2 + 1) * 16`.
    pub fn sgpr_count(&self, gfx_major: u32) -> u32 {
        if gfx_major >= 10 {
            128
        } else {
            (((self.rsrc1() >> 6) & 0xF) / 2 + 1) * 16
        }
    }
}

/// One kernel of a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Kernel symbol name (mangled, as `hipModuleGetFunction` sees it), without ".kd".
    pub name: String,
    /// Name of the CPU implementation, looked up with `dlsym(RTLD_DEFAULT)` if `impl_address`
    /// is 0 (may be empty).
    pub host_symbol: String,
    /// Address of the CPU implementation, or 0.
    pub impl_address: u64,
    /// Cost model: VALU instructions per wave.
    pub valu_per_wave: u32,
    /// Cost model: SALU instructions per wave.
    pub salu_per_wave: u32,
    /// Cost model: shader cycles per wave (0 = the GPU model's default).
    pub cycles_per_wave: u32,
    /// Alignment of the kernarg segment.
    pub kernarg_alignment: u32,
    /// The AMD kernel descriptor. In a parsed version-2 kernel,
    /// `kernel_code_entry_byte_offset` is `code_offset` minus the descriptor's file offset; in a
    /// kernel fresh from [`KernelBuilder::build`] (not yet placed in a file) it is 0.
    pub descriptor: KernelDescriptor,
    /// File offset of the kernel's first instruction: 0 for version-1 files and for kernels not
    /// yet placed in a file.
    pub code_offset: u64,
    /// Bytes of the kernel's code (0 when there is none).
    pub code_len: u64,
}

impl Kernel {
    /// The HSA executable symbol name: the kernel name plus ".kd".
    pub fn symbol_name(&self) -> String {
        format!("{}.kd", self.name)
    }

    /// The file range of the kernel's code, or `None` when it has none (version 1).
    pub fn code_range(&self) -> Option<std::ops::Range<u64>> {
        (self.code_len != 0)
            .then(|| self.code_offset..self.code_offset.saturating_add(self.code_len))
    }

    /// The kernel's code within `file` (the bytes it was parsed from), or `None`.
    pub fn code<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        let range = self.code_range()?;
        let start = usize::try_from(range.start).ok()?;
        let end = usize::try_from(range.end).ok()?;
        file.get(start..end)
    }

    /// Whether the file offset `vaddr` lies inside the kernel's code.
    pub fn contains(&self, vaddr: u64) -> bool {
        self.code_range()
            .is_some_and(|range| range.contains(&vaddr))
    }

    /// The program the builder encodes for this kernel: [`isa::program`] of `salu_per_wave`
    /// and `valu_per_wave`, each clamped to [`MAX_ENCODED_COUNT`].
    pub fn program(&self) -> Vec<Instruction> {
        isa::program(
            self.salu_per_wave.min(MAX_ENCODED_COUNT),
            self.valu_per_wave.min(MAX_ENCODED_COUNT),
        )
    }
}

/// Why a kernel could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The kernel name is empty, contains a NUL, or does not fit its 128-byte field.
    BadName(String),
    /// The host symbol contains a NUL or does not fit its 64-byte field.
    BadHostSymbol(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::BadName(name) => write!(
                f,
                "kernel name {name:?} must be 1..{} bytes without NUL",
                NAME_FIELD - 1
            ),
            BuildError::BadHostSymbol(name) => write!(
                f,
                "host symbol {name:?} must be at most {} bytes without NUL",
                HOST_SYMBOL_FIELD - 1
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Builds one [`Kernel`]: names, CPU implementation, descriptor fields and costs.
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    name: String,
    host_symbol: String,
    impl_address: u64,
    valu_per_wave: u32,
    salu_per_wave: u32,
    cycles_per_wave: u32,
    kernarg_alignment: u32,
    kernarg_size: u32,
    group_segment_size: u32,
    private_segment_size: u32,
    vgprs: u32,
    sgprs: u32,
    wave32: bool,
}

impl KernelBuilder {
    /// A kernel called `name` (without ".kd"): wave32, 32 VGPRs, 32 SGPRs, no kernargs,
    /// kernarg alignment 16, no CPU implementation and zero costs.
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder {
            name: name.to_owned(),
            host_symbol: String::new(),
            impl_address: 0,
            valu_per_wave: 0,
            salu_per_wave: 0,
            cycles_per_wave: 0,
            kernarg_alignment: 16,
            kernarg_size: 0,
            group_segment_size: 0,
            private_segment_size: 0,
            vgprs: 32,
            sgprs: 32,
            wave32: true,
        }
    }
    /// The CPU implementation by name (`dlsym(RTLD_DEFAULT)` at dispatch time).
    pub fn host_symbol(mut self, symbol: &str) -> Self {
        symbol.clone_into(&mut self.host_symbol);
        self
    }
    /// The CPU implementation by address (in-memory code objects).
    pub fn impl_address(mut self, address: u64) -> Self {
        self.impl_address = address;
        self
    }
    /// Cost model: VALU and SALU instructions per wave, shader cycles per wave (0 = default).
    pub fn costs(mut self, valu_per_wave: u32, salu_per_wave: u32, cycles_per_wave: u32) -> Self {
        self.valu_per_wave = valu_per_wave;
        self.salu_per_wave = salu_per_wave;
        self.cycles_per_wave = cycles_per_wave;
        self
    }
    /// Kernarg segment size and alignment.
    pub fn kernarg(mut self, size: u32, alignment: u32) -> Self {
        self.kernarg_size = size;
        self.kernarg_alignment = alignment;
        self
    }
    /// Group (LDS) segment size.
    pub fn group_segment_size(mut self, bytes: u32) -> Self {
        self.group_segment_size = bytes;
        self
    }
    /// Private (scratch) segment size per work-item.
    pub fn private_segment_size(mut self, bytes: u32) -> Self {
        self.private_segment_size = bytes;
        self
    }
    /// Architected VGPRs per work-item (rounded up to the allocation granule).
    pub fn vgprs(mut self, count: u32) -> Self {
        self.vgprs = count;
        self
    }
    /// SGPRs per wave (rounded up to the allocation granule).
    pub fn sgprs(mut self, count: u32) -> Self {
        self.sgprs = count;
        self
    }
    /// Wave32 (`true`) or wave64.
    pub fn wave32(mut self, wave32: bool) -> Self {
        self.wave32 = wave32;
        self
    }

    /// `compute_pgm_rsrc1` for the VGPR/SGPR counts: VGPR granule
    /// `ceil(vgprs / (wave32 ? 8 : 4)) - 1` in bits 5:0 and SGPR granule
    /// `2 * (ceil(sgprs / 16) - 1)` in bits 9:6 (the inverse of the decoders in
    /// [`KernelDescriptor`]), each saturating at its field width.
    pub fn rsrc1(&self) -> u32 {
        let vgpr_granule_size = if self.wave32 { 8 } else { 4 };
        let vgpr_granule = self.vgprs.max(1).div_ceil(vgpr_granule_size) - 1;
        let sgpr_granule = 2 * (self.sgprs.max(1).div_ceil(16) - 1);
        vgpr_granule.min(0x3F) | (sgpr_granule.min(0xE) << 6)
    }

    /// The kernel descriptor bytes (`kernel_code_entry_byte_offset` is 0 until the kernel is
    /// placed in a file by [`encode`]; `compute_pgm_rsrc2` and `compute_pgm_rsrc3` are 0).
    pub fn descriptor(&self) -> KernelDescriptor {
        let mut bytes = [0u8; DESCRIPTOR_SIZE];
        let mut put = |offset: usize, value: &[u8]| {
            bytes[offset..offset + value.len()].copy_from_slice(value);
        };
        put(
            kd::GROUP_SEGMENT_FIXED_SIZE,
            &self.group_segment_size.to_le_bytes(),
        );
        put(
            kd::PRIVATE_SEGMENT_FIXED_SIZE,
            &self.private_segment_size.to_le_bytes(),
        );
        put(kd::KERNARG_SIZE, &self.kernarg_size.to_le_bytes());
        put(kd::COMPUTE_PGM_RSRC1, &self.rsrc1().to_le_bytes());
        let properties: u16 = if self.wave32 { kd::PROPERTY_WAVE32 } else { 0 };
        put(kd::KERNEL_CODE_PROPERTIES, &properties.to_le_bytes());
        KernelDescriptor(bytes)
    }

    /// Validates the names and produces the kernel.
    pub fn build(self) -> Result<Kernel, BuildError> {
        if self.name.is_empty() || self.name.len() >= NAME_FIELD || self.name.contains('\0') {
            return Err(BuildError::BadName(self.name));
        }
        if self.host_symbol.len() >= HOST_SYMBOL_FIELD || self.host_symbol.contains('\0') {
            return Err(BuildError::BadHostSymbol(self.host_symbol));
        }
        let descriptor = self.descriptor();
        Ok(Kernel {
            name: self.name,
            host_symbol: self.host_symbol,
            impl_address: self.impl_address,
            valu_per_wave: self.valu_per_wave,
            salu_per_wave: self.salu_per_wave,
            cycles_per_wave: self.cycles_per_wave,
            kernarg_alignment: self.kernarg_alignment,
            descriptor,
            code_offset: 0,
            code_len: 0,
        })
    }
}

/// Collects kernels and writes the code-object bytes.
#[derive(Clone, Debug, Default)]
pub struct CodeObjectBuilder {
    kernels: Vec<Kernel>,
}

impl CodeObjectBuilder {
    /// An empty code object.
    pub fn new() -> CodeObjectBuilder {
        CodeObjectBuilder::default()
    }
    /// Appends a kernel.
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernels.push(kernel);
        self
    }
    /// The code-object bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(&self.kernels)
    }
    /// The kernels as [`parse`] will return them from [`CodeObjectBuilder::to_bytes`]: with
    /// their code placed (`code_offset`, `code_len` and the descriptor's entry offset set).
    pub fn placed_kernels(&self) -> Vec<Kernel> {
        place(&self.kernels).0
    }
}

fn align_up(value: usize, alignment: usize) -> usize {
    value.div_ceil(alignment).saturating_mul(alignment)
}

/// The kernels with their code placed, and each one's encoded program.
fn place(kernels: &[Kernel]) -> (Vec<Kernel>, Vec<Vec<u8>>) {
    let count = kernels.len().min(u32::MAX as usize);
    let mut at = HEADER_SIZE + count * RECORD_SIZE;
    let mut placed = Vec::with_capacity(count);
    let mut codes = Vec::with_capacity(count);
    for (index, kernel) in kernels.iter().take(count).enumerate() {
        let code = isa::encode(&kernel.program());
        at = align_up(at, CODE_ALIGNMENT);
        let descriptor_at = HEADER_SIZE + index * RECORD_SIZE + OFF_DESCRIPTOR;
        let mut kernel = kernel.clone();
        kernel.code_offset = at as u64;
        kernel.code_len = code.len() as u64;
        kernel.descriptor = kernel
            .descriptor
            .with_kernel_code_entry_byte_offset((at - descriptor_at) as i64);
        at += code.len();
        placed.push(kernel);
        codes.push(code);
    }
    (placed, codes)
}

/// Writes `kernels` as a version-2 code object: the records, then each kernel's
/// [`Kernel::program`] encoded at the next multiple of [`CODE_ALIGNMENT`] (the kernels'
/// `code_offset`/`code_len` and entry offsets are recomputed; any code they were parsed with
/// is not kept). Names longer than their fields are truncated (a [`Kernel`] made by
/// [`KernelBuilder::build`] always fits).
pub fn encode(kernels: &[Kernel]) -> Vec<u8> {
    let (kernels, codes) = place(kernels);
    let code_bytes: usize = codes.iter().map(|c| c.len() + CODE_ALIGNMENT).sum();
    let mut out = Vec::with_capacity(HEADER_SIZE + kernels.len() * RECORD_SIZE + code_bytes);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
    for kernel in &kernels {
        let mut record = [0u8; RECORD_SIZE];
        let name = kernel.name.as_bytes();
        let name_len = name.len().min(NAME_FIELD - 1);
        record[OFF_NAME..OFF_NAME + name_len].copy_from_slice(&name[..name_len]);
        let host = kernel.host_symbol.as_bytes();
        let host_len = host.len().min(HOST_SYMBOL_FIELD - 1);
        record[OFF_HOST_SYMBOL..OFF_HOST_SYMBOL + host_len].copy_from_slice(&host[..host_len]);
        record[OFF_IMPL..OFF_IMPL + 8].copy_from_slice(&kernel.impl_address.to_le_bytes());
        record[OFF_VALU..OFF_VALU + 4].copy_from_slice(&kernel.valu_per_wave.to_le_bytes());
        record[OFF_SALU..OFF_SALU + 4].copy_from_slice(&kernel.salu_per_wave.to_le_bytes());
        record[OFF_CYCLES..OFF_CYCLES + 4].copy_from_slice(&kernel.cycles_per_wave.to_le_bytes());
        record[OFF_KERNARG_ALIGN..OFF_KERNARG_ALIGN + 4]
            .copy_from_slice(&kernel.kernarg_alignment.to_le_bytes());
        record[OFF_CODE_SIZE..OFF_CODE_SIZE + 4]
            .copy_from_slice(&(kernel.code_len as u32).to_le_bytes());
        record[OFF_DESCRIPTOR..OFF_DESCRIPTOR + DESCRIPTOR_SIZE]
            .copy_from_slice(&kernel.descriptor.0);
        out.extend_from_slice(&record);
    }
    for (kernel, code) in kernels.iter().zip(&codes) {
        out.resize(kernel.code_offset as usize, 0);
        out.extend_from_slice(code);
    }
    out
}

/// Why bytes are not a valid code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the header or than the records the header announces.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The first 8 bytes are not "WSLSIMCO".
    BadMagic,
    /// A version other than 1 and 2.
    UnsupportedVersion(u32),
    /// A kernel record's name is empty, not NUL-terminated within its field, or not UTF-8.
    BadName {
        /// Index of the record.
        index: usize,
    },
    /// A kernel record's host symbol is not NUL-terminated within its field or not UTF-8.
    BadHostSymbol {
        /// Index of the record.
        index: usize,
    },
    /// A version-2 kernel's code range (descriptor entry offset and record code size) is empty,
    /// not aligned to [`CODE_ALIGNMENT`], inside the records, or before the end of the previous
    /// kernel's code. (A range past the end of the file is [`ParseError::Truncated`].)
    BadCodeRange {
        /// Index of the record.
        index: usize,
    },
    /// A version-2 kernel's code does not decode at `offset` (bytes from its first
    /// instruction), runs past its end there, or does not end with `s_endpgm` (then `offset`
    /// is that of the last instruction).
    BadInstruction {
        /// Index of the record.
        index: usize,
        /// Offset of the offending instruction within the kernel's code.
        offset: u64,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { needed, actual } => {
                write!(f, "truncated code object: {actual} bytes, {needed} needed")
            }
            ParseError::BadMagic => write!(f, "not a simulated code object (bad magic)"),
            ParseError::UnsupportedVersion(version) => {
                write!(f, "unsupported code-object version {version}")
            }
            ParseError::BadName { index } => write!(f, "kernel record {index}: bad name"),
            ParseError::BadHostSymbol { index } => {
                write!(f, "kernel record {index}: bad host symbol")
            }
            ParseError::BadCodeRange { index } => write!(f, "kernel {index}: bad code range"),
            ParseError::BadInstruction { index, offset } => {
                write!(
                    f,
                    "kernel {index}: bad instruction at code offset {offset:#x}"
                )
            }
        }
    }
}

impl std::error::Error for ParseError {}

fn c_string(field: &[u8]) -> Option<String> {
    let end = field.iter().position(|&b| b == 0)?;
    String::from_utf8(field[..end].to_vec()).ok()
}

/// Checks that `code` is a sequence of valid instructions ending with `s_endpgm`; the error
/// is the offset of the offending instruction.
fn check_code(code: &[u8]) -> Result<(), u64> {
    let mut at = 0usize;
    let mut last = None;
    while at < code.len() {
        let instruction = isa::decode_instruction(&code[at..], at as u64).ok_or(at as u64)?;
        at += instruction.size as usize;
        last = Some(instruction);
    }
    match last {
        Some(last) if last.text == "s_endpgm" => Ok(()),
        Some(last) => Err(last.offset),
        None => Err(0),
    }
}

/// Parses a code object (version 1 or 2). Bytes after the last record (version 1) or after
/// the last kernel's code (version 2) are ignored, as is the padding between codes.
pub fn parse(bytes: &[u8]) -> Result<Vec<Kernel>, ParseError> {
    if bytes.len() < HEADER_SIZE {
        return Err(ParseError::Truncated {
            needed: HEADER_SIZE,
            actual: bytes.len(),
        });
    }
    if bytes[..8] != MAGIC {
        return Err(ParseError::BadMagic);
    }
    let version = u32_at(bytes, 8);
    if version != VERSION && version != VERSION_1 {
        return Err(ParseError::UnsupportedVersion(version));
    }
    let count = u32_at(bytes, 12) as usize;
    let records_end = count
        .checked_mul(RECORD_SIZE)
        .and_then(|records| records.checked_add(HEADER_SIZE))
        .unwrap_or(usize::MAX);
    if bytes.len() < records_end {
        return Err(ParseError::Truncated {
            needed: records_end,
            actual: bytes.len(),
        });
    }
    let mut kernels = Vec::with_capacity(count);
    let mut previous_end = records_end;
    for index in 0..count {
        let record_at = HEADER_SIZE + index * RECORD_SIZE;
        let record = &bytes[record_at..][..RECORD_SIZE];
        let name = c_string(&record[OFF_NAME..OFF_NAME + NAME_FIELD])
            .filter(|name| !name.is_empty())
            .ok_or(ParseError::BadName { index })?;
        let host_symbol = c_string(&record[OFF_HOST_SYMBOL..OFF_HOST_SYMBOL + HOST_SYMBOL_FIELD])
            .ok_or(ParseError::BadHostSymbol { index })?;
        let mut descriptor = [0u8; DESCRIPTOR_SIZE];
        descriptor.copy_from_slice(&record[OFF_DESCRIPTOR..OFF_DESCRIPTOR + DESCRIPTOR_SIZE]);
        let descriptor = KernelDescriptor(descriptor);
        let (code_offset, code_len) = if version == VERSION_1 {
            (0, 0)
        } else {
            let len = u32_at(record, OFF_CODE_SIZE) as usize;
            let bad_range = ParseError::BadCodeRange { index };
            let start = i64::try_from(record_at + OFF_DESCRIPTOR)
                .ok()
                .and_then(|at| at.checked_add(descriptor.kernel_code_entry_byte_offset()))
                .and_then(|start| usize::try_from(start).ok())
                .ok_or(bad_range.clone())?;
            if len == 0 || start < previous_end || !start.is_multiple_of(CODE_ALIGNMENT) {
                return Err(bad_range);
            }
            let end = start.checked_add(len).ok_or(bad_range)?;
            if bytes.len() < end {
                return Err(ParseError::Truncated {
                    needed: end,
                    actual: bytes.len(),
                });
            }
            check_code(&bytes[start..end])
                .map_err(|offset| ParseError::BadInstruction { index, offset })?;
            previous_end = end;
            (start as u64, len as u64)
        };
        kernels.push(Kernel {
            name,
            host_symbol,
            impl_address: u64_at(record, OFF_IMPL),
            valu_per_wave: u32_at(record, OFF_VALU),
            salu_per_wave: u32_at(record, OFF_SALU),
            cycles_per_wave: u32_at(record, OFF_CYCLES),
            kernarg_alignment: u32_at(record, OFF_KERNARG_ALIGN),
            descriptor,
            code_offset,
            code_len,
        });
    }
    Ok(kernels)
}

/// The instruction at file offset `vaddr` of the code object `file`, with the index of the
/// kernel whose code holds it; its [`Instruction::offset`] is relative to that kernel's first
/// instruction. `None` if `file` does not parse, no kernel's code contains `vaddr`, or `vaddr`
/// is not the start of an instruction (e.g. the second word of an 8-byte one).
pub fn instruction_at(file: &[u8], vaddr: u64) -> Option<(usize, Instruction)> {
    let kernels = parse(file).ok()?;
    let index = kernels.iter().position(|kernel| kernel.contains(vaddr))?;
    let kernel = &kernels[index];
    let code = kernel.code(file)?;
    let target = vaddr - kernel.code_offset;
    let mut at = 0u64;
    while at < target {
        let instruction = isa::decode_instruction(code.get(usize::try_from(at).ok()?..)?, at)?;
        at += u64::from(instruction.size);
    }
    (at == target)
        .then(|| isa::decode_instruction(code.get(usize::try_from(at).ok()?..)?, at))
        .flatten()
        .map(|instruction| (index, instruction))
}

#[cfg(test)]
mod tests;
