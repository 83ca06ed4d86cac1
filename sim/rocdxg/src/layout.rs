//! The sim's own description of `HsaNodeProperties` and `HsaSystemProperties`.
//!
//! [`NODE_FIELDS`] lists the C members in declaration order with their element size, element
//! count and the first layout size that has them. [`Layout::for_size`] places them the way
//! `#pragma pack(4)` does (each member at the previous end rounded up to
//! `min(element size, 4)`), and [`Layout::encode`] writes a [`NodeRecord`] through that
//! placement. Nothing here is derived from a Rust struct layout, so a test can compare it with
//! the offsets gcc computed from the real header (`abi/HsaNodeProperties_<n>.tsv`).

use wslsim_scenario::NODE_NAME_ELEMENTS;

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

/// A scalar member's value, written little-endian.
trait Scalar: Copy {
    fn put_le(self, out: &mut [u8]);
}

macro_rules! scalar {
    ($($ty:ty),*) => {
        $(impl Scalar for $ty {
            fn put_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        })*
    };
}

scalar!(u8, u16, u32, i32, u64);

/// A scalar into its exactly `size_of::<T>()` bytes.
fn put<T: Scalar>(out: &mut [u8], value: T) {
    value.put_le(out);
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

/// `field!(C name, record member: type, since)` for a scalar (its size is the type's), or
/// `field!(C name, [element type; count], since, put)` for an array.
macro_rules! field {
    ($name:literal, $member:ident: $ty:ty, $since:literal) => {
        Field {
            name: $name,
            elem: size_of::<$ty>(),
            count: 1,
            since: $since,
            put: |r, o| put::<$ty>(o, r.$member),
        }
    };
    ($name:literal, [$elem:ty; $count:expr], $since:literal, $put:expr) => {
        Field {
            name: $name,
            elem: size_of::<$elem>(),
            count: $count,
            since: $since,
            put: $put,
        }
    };
}

/// `HsaNodeProperties` members in declaration order (hsakmttypes.h, newest development layout;
/// wsl-platform.md §1.7 and §1.8 for which layout added what).
pub const NODE_FIELDS: &[Field] = &[
    field!("NumCPUCores", num_cpu_cores: u32, 368),
    field!("NumFComputeCores", num_fcompute_cores: u32, 368),
    field!("NumNeuralCores", num_neural_cores: u32, 368),
    field!("NumMemoryBanks", num_memory_banks: u32, 368),
    field!("NumCaches", num_caches: u32, 368),
    field!("NumIOLinks", num_io_links: u32, 368),
    field!("CComputeIdLo", ccompute_id_lo: u32, 368),
    field!("FComputeIdLo", fcompute_id_lo: u32, 368),
    field!("Capability", capability: u32, 368),
    field!("Capability2", capability2: u32, 368),
    field!("MaxWavesPerSIMD", max_waves_per_simd: u32, 368),
    field!("LDSSizeInKB", lds_size_in_kb: u32, 368),
    field!("GDSSizeInKB", gds_size_in_kb: u32, 368),
    field!("WaveFrontSize", wave_front_size: u32, 368),
    field!("NumShaderBanks", num_shader_banks: u32, 368),
    field!("NumArrays", num_arrays: u32, 368),
    field!("NumCUPerArray", num_cu_per_array: u32, 368),
    field!("NumSIMDPerCU", num_simd_per_cu: u32, 368),
    field!("MaxSlotsScratchCU", max_slots_scratch_cu: u32, 368),
    field!("EngineId", engine_id: u32, 368),
    field!("OverrideEngineId", override_engine_id: u32, 368),
    field!("VendorId", vendor_id: u16, 368),
    field!("DeviceId", device_id: u16, 368),
    field!("LocationId", location_id: u32, 368),
    field!("LocalMemSize", local_mem_size: u64, 368),
    field!("MaxEngineClockMhzFCompute", max_engine_clock_mhz_fcompute: u32, 368),
    field!("MaxEngineClockMhzCCompute", max_engine_clock_mhz_ccompute: u32, 368),
    field!("DrmRenderMinor", drm_render_minor: i32, 368),
    field!("MarketingName", [u16; NODE_NAME_ELEMENTS], 368, |r, o| {
        put_utf16(o, &r.marketing_name)
    }),
    field!("AMDName", [u8; NODE_NAME_ELEMENTS], 368, |r, o| {
        put_bytes(o, &r.amd_name)
    }),
    field!("uCodeEngineVersions", ucode_engine_versions: u32, 368),
    field!("DebugProperties", debug_properties: u64, 368),
    field!("HiveID", hive_id: u64, 368),
    field!("NumSdmaEngines", num_sdma_engines: u32, 368),
    field!("NumSdmaXgmiEngines", num_sdma_xgmi_engines: u32, 368),
    field!("NumSdmaQueuesPerEngine", num_sdma_queues_per_engine: u8, 368),
    field!("NumCpQueues", num_cp_queues: u8, 368),
    field!("NumGws", num_gws: u8, 368),
    field!("Integrated", integrated: u8, 368),
    field!("Domain", domain: u32, 368),
    field!("UniqueID", unique_id: u64, 368),
    field!("VGPRSizePerCU", vgpr_size_per_cu: u32, 368),
    field!("SGPRSizePerCU", sgpr_size_per_cu: u32, 368),
    field!("NumXcc", num_xcc: u32, 368),
    field!("KFDGpuID", kfd_gpu_id: u32, 368),
    field!("FamilyID", family_id: u32, 368),
    field!("CwsrSize", cwsr_size: u32, 376),
    field!("CtlStackSize", ctl_stack_size: u32, 376),
    field!("LuidLowPart", luid_low_part: u32, 392),
    field!("LuidHighPart", luid_high_part: i32, 392),
    field!("WallClockKHz", wall_clock_khz: u64, 392),
    field!("FabricHandleSupported", fabric_handle_supported: u32, 396),
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
