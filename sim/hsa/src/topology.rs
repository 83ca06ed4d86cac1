//! The runtime's own description of `HsaNodeProperties` (pack 4) and the values it reads.
//!
//! The runtime reads each node into storage of its own layout size (`[runtime] layout`) plus
//! slack, and decodes only the members its layout has, at the offsets below. A test compares
//! every entry with `abi/HsaNodeProperties_<n>.tsv`.

/// One member: name, byte offset, byte size, first layout that has it.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    pub since: u32,
}

const fn field(name: &'static str, offset: usize, size: usize, since: u32) -> Field {
    Field {
        name,
        offset,
        size,
        since,
    }
}

/// The members the runtime uses.
pub const FIELDS: &[Field] = &[
    field("NumCPUCores", 0, 4, 368),
    field("NumFComputeCores", 4, 4, 368),
    field("NumMemoryBanks", 12, 4, 368),
    field("MaxWavesPerSIMD", 40, 4, 368),
    field("LDSSizeInKB", 44, 4, 368),
    field("WaveFrontSize", 52, 4, 368),
    field("NumShaderBanks", 56, 4, 368),
    field("NumArrays", 60, 4, 368),
    field("NumCUPerArray", 64, 4, 368),
    field("NumSIMDPerCU", 68, 4, 368),
    field("EngineId", 76, 4, 368),
    field("OverrideEngineId", 80, 4, 368),
    field("VendorId", 84, 2, 368),
    field("DeviceId", 86, 2, 368),
    field("LocationId", 88, 4, 368),
    field("MaxEngineClockMhzFCompute", 100, 4, 368),
    field("MarketingName", 112, 128, 368),
    field("uCodeEngineVersions", 304, 4, 368),
    field("NumSdmaEngines", 324, 4, 368),
    field("NumSdmaXgmiEngines", 328, 4, 368),
    field("Integrated", 335, 1, 368),
    field("Domain", 336, 4, 368),
    field("UniqueID", 340, 8, 368),
    field("NumXcc", 356, 4, 368),
    field("KFDGpuID", 360, 4, 368),
    field("FamilyID", 364, 4, 368),
    field("LuidLowPart", 376, 4, 392),
    field("LuidHighPart", 380, 4, 392),
    field("WallClockKHz", 384, 8, 392),
];

/// The decoded values of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeRecord {
    pub num_cpu_cores: u32,
    pub simd_count: u32,
    pub max_waves_per_simd: u32,
    pub lds_kb: u32,
    pub wave_size: u32,
    pub shader_engines: u32,
    pub arrays_per_engine: u32,
    pub cu_per_array: u32,
    pub simd_per_cu: u32,
    pub engine_id: u32,
    pub override_engine_id: u32,
    pub vendor_id: u16,
    pub device_id: u16,
    pub location_id: u32,
    pub max_clock_mhz: u32,
    pub marketing_name: String,
    pub sdma_ucode: u32,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub integrated: bool,
    pub domain: u32,
    pub unique_id: u64,
    pub num_xcc: u32,
    pub kfd_gpu_id: u32,
    pub family_id: u32,
    pub luid: (u32, i32),
    /// 0 when the layout has no WallClockKHz.
    pub wallclock_khz: u64,
}

/// An engine id's (major, minor, stepping, uCode) bit fields.
pub fn engine_fields(bits: u32) -> (u32, u32, u32, u32) {
    (
        (bits >> 10) & 0x3F,
        (bits >> 16) & 0xFF,
        (bits >> 24) & 0xFF,
        bits & 0x3FF,
    )
}

impl NodeRecord {
    /// The gfx target: the override engine id when set, else the engine id
    /// (`gfx<major><minor><stepping in hex>`, e.g. gfx1150, gfx90a).
    pub fn gfx_name(&self) -> String {
        let bits = if engine_fields(self.override_engine_id).0 != 0 {
            self.override_engine_id
        } else {
            self.engine_id
        };
        let (major, minor, stepping, _) = engine_fields(bits);
        format!("gfx{major}{minor}{stepping:x}")
    }

    /// The gfx major version.
    pub fn gfx_major(&self) -> u32 {
        engine_fields(self.engine_id).0
    }
}

fn lookup(name: &str) -> Field {
    FIELDS
        .iter()
        .copied()
        .find(|f| f.name == name)
        .unwrap_or(field("?", 0, 0, u32::MAX))
}

fn raw<'a>(bytes: &'a [u8], layout: u32, name: &str) -> Option<&'a [u8]> {
    let f = lookup(name);
    (layout >= f.since && f.offset + f.size <= bytes.len())
        .then(|| &bytes[f.offset..f.offset + f.size])
}

fn uint(bytes: &[u8], layout: u32, name: &str) -> u64 {
    raw(bytes, layout, name).map_or(0, |b| {
        let mut value = [0u8; 8];
        value[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(value)
    })
}

/// Decodes a node record of `layout` bytes (the runtime's layout), reading only the members
/// that layout has.
pub fn parse(bytes: &[u8], layout: u32) -> NodeRecord {
    let u32f = |name: &str| uint(bytes, layout, name) as u32;
    let marketing_name = raw(bytes, layout, "MarketingName")
        .map(|b| {
            let units: Vec<u16> = b
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .take_while(|&u| u != 0)
                .collect();
            String::from_utf16_lossy(&units)
        })
        .unwrap_or_default();
    NodeRecord {
        num_cpu_cores: u32f("NumCPUCores"),
        simd_count: u32f("NumFComputeCores"),
        max_waves_per_simd: u32f("MaxWavesPerSIMD"),
        lds_kb: u32f("LDSSizeInKB"),
        wave_size: u32f("WaveFrontSize"),
        shader_engines: u32f("NumShaderBanks"),
        arrays_per_engine: u32f("NumArrays"),
        cu_per_array: u32f("NumCUPerArray"),
        simd_per_cu: u32f("NumSIMDPerCU"),
        engine_id: u32f("EngineId"),
        override_engine_id: u32f("OverrideEngineId"),
        vendor_id: u32f("VendorId") as u16,
        device_id: u32f("DeviceId") as u16,
        location_id: u32f("LocationId"),
        max_clock_mhz: u32f("MaxEngineClockMhzFCompute"),
        marketing_name,
        sdma_ucode: u32f("uCodeEngineVersions") & 0x3FF,
        num_sdma_engines: u32f("NumSdmaEngines"),
        num_sdma_xgmi_engines: u32f("NumSdmaXgmiEngines"),
        integrated: u32f("Integrated") != 0,
        domain: u32f("Domain"),
        unique_id: uint(bytes, layout, "UniqueID"),
        num_xcc: u32f("NumXcc"),
        kfd_gpu_id: u32f("KFDGpuID"),
        family_id: u32f("FamilyID"),
        luid: (u32f("LuidLowPart"), u32f("LuidHighPart") as i32),
        wallclock_khz: uint(bytes, layout, "WallClockKHz"),
    }
}
