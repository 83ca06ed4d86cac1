//! The sim's own description of `HsaNodeProperties` and `HsaSystemProperties`.
//!
//! [`NODE_FIELDS`] lists the C members in declaration order with their element size, element
//! count and the first layout size that has them. [`Layout::for_size`] places them the way
//! `#pragma pack(4)` does (each member at the previous end rounded up to
//! `min(element size, 4)`), and [`Layout::encode`] writes a [`NodeRecord`] through that
//! placement. Nothing here is derived from a Rust struct layout, so a test can compare it with
//! the offsets gcc computed from the real header (`abi/HsaNodeProperties_<n>.tsv`).

use crate::record::NodeRecord;

/// The four `sizeof(HsaNodeProperties)` values with a known field set.
pub const KNOWN_LAYOUTS: [u32; 4] = [368, 376, 392, 396];

/// The newest field set; larger layouts are these fields followed by zero bytes.
pub const NEWEST_LAYOUT: u32 = 396;

/// What a `write_size = "negotiated"` thunk copies when no `DxgAbiCheck` succeeded.
pub const LEGACY_WRITE_SIZE: u32 = 368;

/// `#pragma pack(push, 4)` of hsakmttypes.h.
const PACK: usize = 4;

/// Writes one member's little-endian value into its bytes (exactly `elem * count` long).
type Put = fn(&NodeRecord, &mut [u8]);

/// One C member of a struct.
#[derive(Clone, Copy)]
pub struct Field {
    /// The C member name.
    pub name: &'static str,
    /// Size of one element in bytes (also its natural alignment).
    pub elem: usize,
    /// Number of elements (1 unless an array).
    pub count: usize,
    /// The smallest layout size that has this member.
    pub since: u32,
    put: Put,
}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Field")
            .field("name", &self.name)
            .field("elem", &self.elem)
            .field("count", &self.count)
            .field("since", &self.since)
            .finish()
    }
}

fn put_u8(out: &mut [u8], value: u8) {
    out.copy_from_slice(&[value]);
}

fn put_u16(out: &mut [u8], value: u16) {
    out.copy_from_slice(&value.to_le_bytes());
}

fn put_u32(out: &mut [u8], value: u32) {
    out.copy_from_slice(&value.to_le_bytes());
}

fn put_i32(out: &mut [u8], value: i32) {
    out.copy_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut [u8], value: u64) {
    out.copy_from_slice(&value.to_le_bytes());
}

/// UTF-16 units into a zeroed `u16[N]`, always leaving a terminating NUL.
fn put_utf16(out: &mut [u8], units: &[u16]) {
    let capacity = (out.len() / 2).saturating_sub(1);
    for (slot, unit) in out.chunks_exact_mut(2).zip(units.iter().take(capacity)) {
        slot.copy_from_slice(&unit.to_le_bytes());
    }
}

/// Bytes into a zeroed `u8[N]`, always leaving a terminating NUL.
fn put_bytes(out: &mut [u8], bytes: &[u8]) {
    let used = bytes.len().min(out.len().saturating_sub(1));
    out[..used].copy_from_slice(&bytes[..used]);
}

macro_rules! field {
    ($name:literal, $elem:literal x $count:literal, $since:literal, $put:expr) => {
        Field {
            name: $name,
            elem: $elem,
            count: $count,
            since: $since,
            put: $put,
        }
    };
}

/// `HsaNodeProperties` members in declaration order (hsakmttypes.h, newest development layout;
/// wsl-platform.md §1.7 and §1.8 for which layout added what).
pub const NODE_FIELDS: &[Field] = &[
    field!("NumCPUCores", 4 x 1, 368, |r, o| put_u32(o, r.num_cpu_cores)),
    field!("NumFComputeCores", 4 x 1, 368, |r, o| put_u32(o, r.num_fcompute_cores)),
    field!("NumNeuralCores", 4 x 1, 368, |r, o| put_u32(o, r.num_neural_cores)),
    field!("NumMemoryBanks", 4 x 1, 368, |r, o| put_u32(o, r.num_memory_banks)),
    field!("NumCaches", 4 x 1, 368, |r, o| put_u32(o, r.num_caches)),
    field!("NumIOLinks", 4 x 1, 368, |r, o| put_u32(o, r.num_io_links)),
    field!("CComputeIdLo", 4 x 1, 368, |r, o| put_u32(o, r.ccompute_id_lo)),
    field!("FComputeIdLo", 4 x 1, 368, |r, o| put_u32(o, r.fcompute_id_lo)),
    field!("Capability", 4 x 1, 368, |r, o| put_u32(o, r.capability)),
    field!("Capability2", 4 x 1, 368, |r, o| put_u32(o, r.capability2)),
    field!("MaxWavesPerSIMD", 4 x 1, 368, |r, o| put_u32(o, r.max_waves_per_simd)),
    field!("LDSSizeInKB", 4 x 1, 368, |r, o| put_u32(o, r.lds_size_in_kb)),
    field!("GDSSizeInKB", 4 x 1, 368, |r, o| put_u32(o, r.gds_size_in_kb)),
    field!("WaveFrontSize", 4 x 1, 368, |r, o| put_u32(o, r.wave_front_size)),
    field!("NumShaderBanks", 4 x 1, 368, |r, o| put_u32(o, r.num_shader_banks)),
    field!("NumArrays", 4 x 1, 368, |r, o| put_u32(o, r.num_arrays)),
    field!("NumCUPerArray", 4 x 1, 368, |r, o| put_u32(o, r.num_cu_per_array)),
    field!("NumSIMDPerCU", 4 x 1, 368, |r, o| put_u32(o, r.num_simd_per_cu)),
    field!("MaxSlotsScratchCU", 4 x 1, 368, |r, o| put_u32(o, r.max_slots_scratch_cu)),
    field!("EngineId", 4 x 1, 368, |r, o| put_u32(o, r.engine_id)),
    field!("OverrideEngineId", 4 x 1, 368, |r, o| put_u32(o, r.override_engine_id)),
    field!("VendorId", 2 x 1, 368, |r, o| put_u16(o, r.vendor_id)),
    field!("DeviceId", 2 x 1, 368, |r, o| put_u16(o, r.device_id)),
    field!("LocationId", 4 x 1, 368, |r, o| put_u32(o, r.location_id)),
    field!("LocalMemSize", 8 x 1, 368, |r, o| put_u64(o, r.local_mem_size)),
    field!("MaxEngineClockMhzFCompute", 4 x 1, 368, |r, o| {
        put_u32(o, r.max_engine_clock_mhz_fcompute)
    }),
    field!("MaxEngineClockMhzCCompute", 4 x 1, 368, |r, o| {
        put_u32(o, r.max_engine_clock_mhz_ccompute)
    }),
    field!("DrmRenderMinor", 4 x 1, 368, |r, o| put_i32(o, r.drm_render_minor)),
    field!("MarketingName", 2 x 64, 368, |r, o| put_utf16(o, &r.marketing_name)),
    field!("AMDName", 1 x 64, 368, |r, o| put_bytes(o, &r.amd_name)),
    field!("uCodeEngineVersions", 4 x 1, 368, |r, o| {
        put_u32(o, r.ucode_engine_versions)
    }),
    field!("DebugProperties", 8 x 1, 368, |r, o| put_u64(o, r.debug_properties)),
    field!("HiveID", 8 x 1, 368, |r, o| put_u64(o, r.hive_id)),
    field!("NumSdmaEngines", 4 x 1, 368, |r, o| put_u32(o, r.num_sdma_engines)),
    field!("NumSdmaXgmiEngines", 4 x 1, 368, |r, o| put_u32(o, r.num_sdma_xgmi_engines)),
    field!("NumSdmaQueuesPerEngine", 1 x 1, 368, |r, o| {
        put_u8(o, r.num_sdma_queues_per_engine)
    }),
    field!("NumCpQueues", 1 x 1, 368, |r, o| put_u8(o, r.num_cp_queues)),
    field!("NumGws", 1 x 1, 368, |r, o| put_u8(o, r.num_gws)),
    field!("Integrated", 1 x 1, 368, |r, o| put_u8(o, r.integrated)),
    field!("Domain", 4 x 1, 368, |r, o| put_u32(o, r.domain)),
    field!("UniqueID", 8 x 1, 368, |r, o| put_u64(o, r.unique_id)),
    field!("VGPRSizePerCU", 4 x 1, 368, |r, o| put_u32(o, r.vgpr_size_per_cu)),
    field!("SGPRSizePerCU", 4 x 1, 368, |r, o| put_u32(o, r.sgpr_size_per_cu)),
    field!("NumXcc", 4 x 1, 368, |r, o| put_u32(o, r.num_xcc)),
    field!("KFDGpuID", 4 x 1, 368, |r, o| put_u32(o, r.kfd_gpu_id)),
    field!("FamilyID", 4 x 1, 368, |r, o| put_u32(o, r.family_id)),
    field!("CwsrSize", 4 x 1, 376, |r, o| put_u32(o, r.cwsr_size)),
    field!("CtlStackSize", 4 x 1, 376, |r, o| put_u32(o, r.ctl_stack_size)),
    field!("LuidLowPart", 4 x 1, 392, |r, o| put_u32(o, r.luid_low_part)),
    field!("LuidHighPart", 4 x 1, 392, |r, o| put_i32(o, r.luid_high_part)),
    field!("WallClockKHz", 8 x 1, 392, |r, o| put_u64(o, r.wall_clock_khz)),
    field!("FabricHandleSupported", 4 x 1, 396, |r, o| {
        put_u32(o, r.fabric_handle_supported)
    }),
];

/// `HsaSystemProperties` members (all u32), for the layout check against the tsv files.
pub const SYSTEM_FIELDS: &[(&str, usize, usize)] = &[
    ("NumNodes", 4, 1),
    ("PlatformOem", 4, 1),
    ("PlatformId", 4, 1),
    ("PlatformRev", 4, 1),
];

/// A member placed at its offset.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    /// The member.
    pub field: &'static Field,
    /// Byte offset in the struct.
    pub offset: usize,
    /// `elem * count`.
    pub size: usize,
}

/// Places `(elem, count)` members packed to 4; returns the offsets and `sizeof`.
pub fn pack4(members: impl IntoIterator<Item = (usize, usize)>) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut end = 0_usize;
    let mut struct_align = 1_usize;
    for (elem, count) in members {
        let align = elem.min(PACK);
        struct_align = struct_align.max(align);
        let offset = end.next_multiple_of(align);
        offsets.push(offset);
        end = offset + elem * count;
    }
    (offsets, end.next_multiple_of(struct_align))
}

/// A `sizeof(HsaNodeProperties)` the thunk was built with, and where each member lands.
#[derive(Clone, Debug)]
pub struct Layout {
    /// `sizeof(HsaNodeProperties)`.
    pub size: usize,
    /// The members present, with offsets, in declaration order.
    pub fields: Vec<Placed>,
}

impl Layout {
    /// The layout for `size`: 368, 376, 392, 396, or a multiple of 4 above 396 (the 396 field
    /// set followed by zero bytes).
    pub fn for_size(size: u32) -> Result<Layout, String> {
        wslsim_scenario::check_layout(size)?;
        let era = size.min(NEWEST_LAYOUT);
        let present: Vec<&'static Field> = NODE_FIELDS
            .iter()
            .filter(|field| field.since <= era)
            .collect();
        let (offsets, natural) = pack4(present.iter().map(|field| (field.elem, field.count)));
        if natural != era as usize {
            return Err(format!("the {era}-byte field set packs to {natural} bytes"));
        }
        let size = size as usize;
        let fields = present
            .into_iter()
            .zip(offsets)
            .map(|(field, offset)| Placed {
                field,
                offset,
                size: field.elem * field.count,
            })
            .collect();
        Ok(Layout { size, fields })
    }

    /// The placed member called `name`, if this layout has it.
    pub fn field(&self, name: &str) -> Option<&Placed> {
        self.fields.iter().find(|placed| placed.field.name == name)
    }

    /// The first `write_size` bytes of `record` in this layout: a zeroed buffer with every
    /// member that fits written little-endian at its offset.
    pub fn encode(&self, record: &NodeRecord, write_size: usize) -> Vec<u8> {
        let mut bytes = vec![0_u8; write_size];
        for placed in &self.fields {
            let end = placed.offset + placed.size;
            if end <= write_size {
                (placed.field.put)(record, &mut bytes[placed.offset..end]);
            }
        }
        bytes
    }
}
