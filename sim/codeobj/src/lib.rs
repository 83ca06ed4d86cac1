//! Simulated code objects: the byte format `sim/hsa` loads through the HSA executable API and
//! `sim/hip` embeds in fat binaries (specified in `docs/SIMULATOR.md`).
//!
//! ```text
//! offset  size  field
//! 0       8     magic "WSLSIMCO"
//! 8       4     version = 1 (u32)
//! 12      4     kernel count N (u32)
//! 16      ...   N kernel records of 384 bytes each:
//!   0     128   kernel symbol name, NUL-terminated (the HSA symbol name is this + ".kd")
//!   128   64    host symbol: NUL-terminated name of the CPU implementation (dlsym) if impl is 0
//!   192   8     impl: address of the CPU implementation, or 0
//!   200   4     valu_per_wave     204 salu_per_wave     208 cycles_per_wave
//!   212   4     kernarg_alignment
//!   216   40    reserved, 0
//!   256   64    the AMD kernel descriptor
//!   320   64    reserved, 0
//! ```
//!
//! [`KernelBuilder`] and [`CodeObjectBuilder`] write the format; [`parse`] reads it and rejects
//! anything malformed with a [`ParseError`] (it never panics, whatever the input).

use std::fmt;

/// The 8-byte magic at offset 0.
pub const MAGIC: [u8; 8] = *b"WSLSIMCO";
/// The only format version.
pub const VERSION: u32 = 1;
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
/// The `kernel_code_entry_byte_offset` every built descriptor carries.
const ENTRY_BYTE_OFFSET: i64 = 256;

const OFF_NAME: usize = 0;
const OFF_HOST_SYMBOL: usize = 128;
const OFF_IMPL: usize = 192;
const OFF_VALU: usize = 200;
const OFF_SALU: usize = 204;
const OFF_CYCLES: usize = 208;
const OFF_KERNARG_ALIGN: usize = 212;
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
    /// `compute_pgm_rsrc1` (u32): VGPR granule [5:0], SGPR granule [9:6].
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
    /// The AMD kernel descriptor.
    pub descriptor: KernelDescriptor,
}

impl Kernel {
    /// The HSA executable symbol name: the kernel name plus ".kd".
    pub fn symbol_name(&self) -> String {
        format!("{}.kd", self.name)
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
    /// `ceil(vgprs / (wave32 ? 8 : 4)) - 1` in [5:0] and SGPR granule
    /// `2 * (ceil(sgprs / 16) - 1)` in [9:6] (the inverse of the decoders in
    /// [`KernelDescriptor`]), each saturating at its field width.
    pub fn rsrc1(&self) -> u32 {
        let vgpr_granule_size = if self.wave32 { 8 } else { 4 };
        let vgpr_granule = self.vgprs.max(1).div_ceil(vgpr_granule_size) - 1;
        let sgpr_granule = 2 * (self.sgprs.max(1).div_ceil(16) - 1);
        vgpr_granule.min(0x3F) | (sgpr_granule.min(0xE) << 6)
    }

    /// The kernel descriptor bytes (`kernel_code_entry_byte_offset` is always 256;
    /// `compute_pgm_rsrc2` and `compute_pgm_rsrc3` are 0).
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
        put(
            kd::KERNEL_CODE_ENTRY_BYTE_OFFSET,
            &ENTRY_BYTE_OFFSET.to_le_bytes(),
        );
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
}

/// Writes `kernels` as a code object. Names longer than their fields are truncated (a
/// [`Kernel`] made by [`KernelBuilder::build`] always fits).
pub fn encode(kernels: &[Kernel]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + kernels.len() * RECORD_SIZE);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    let count = u32::try_from(kernels.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for kernel in kernels.iter().take(count as usize) {
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
        record[OFF_DESCRIPTOR..OFF_DESCRIPTOR + DESCRIPTOR_SIZE]
            .copy_from_slice(&kernel.descriptor.0);
        out.extend_from_slice(&record);
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
    /// A version other than 1.
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
        }
    }
}

impl std::error::Error for ParseError {}

fn c_string(field: &[u8]) -> Option<String> {
    let end = field.iter().position(|&b| b == 0)?;
    String::from_utf8(field[..end].to_vec()).ok()
}

/// Parses a code object. Bytes after the last record are ignored.
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
    if version != VERSION {
        return Err(ParseError::UnsupportedVersion(version));
    }
    let count = u32_at(bytes, 12) as usize;
    let needed = count
        .checked_mul(RECORD_SIZE)
        .and_then(|records| records.checked_add(HEADER_SIZE))
        .unwrap_or(usize::MAX);
    if bytes.len() < needed {
        return Err(ParseError::Truncated {
            needed,
            actual: bytes.len(),
        });
    }
    let mut kernels = Vec::with_capacity(count);
    for index in 0..count {
        let record = &bytes[HEADER_SIZE + index * RECORD_SIZE..][..RECORD_SIZE];
        let name = c_string(&record[OFF_NAME..OFF_NAME + NAME_FIELD])
            .filter(|name| !name.is_empty())
            .ok_or(ParseError::BadName { index })?;
        let host_symbol = c_string(&record[OFF_HOST_SYMBOL..OFF_HOST_SYMBOL + HOST_SYMBOL_FIELD])
            .ok_or(ParseError::BadHostSymbol { index })?;
        let mut descriptor = [0u8; DESCRIPTOR_SIZE];
        descriptor.copy_from_slice(&record[OFF_DESCRIPTOR..OFF_DESCRIPTOR + DESCRIPTOR_SIZE]);
        kernels.push(Kernel {
            name,
            host_symbol,
            impl_address: u64_at(record, OFF_IMPL),
            valu_per_wave: u32_at(record, OFF_VALU),
            salu_per_wave: u32_at(record, OFF_SALU),
            cycles_per_wave: u32_at(record, OFF_CYCLES),
            kernarg_alignment: u32_at(record, OFF_KERNARG_ALIGN),
            descriptor: KernelDescriptor(descriptor),
        });
    }
    Ok(kernels)
}

#[cfg(test)]
mod tests;
