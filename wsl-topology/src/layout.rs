//! The `HsaNodeProperties` layout in use, chosen at run time, and decoding a record written in it.

use rocdxg_sys::{
    HSA_ENGINE_ID, HsaNodeProperties368, HsaNodeProperties376, HsaNodeProperties392,
    HsaNodeProperties396,
};
use zerocopy::FromBytes;

/// One of the known `HsaNodeProperties` layouts, named by its `sizeof`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum NodeLayout {
    /// 368 bytes: ends at `FamilyID` (develop of Aug 2025; librocdxg's legacy fallback).
    L368,
    /// 376 bytes: + `CwsrSize`, `CtlStackSize` (ROCm 7.2.x packages).
    L376,
    /// 392 bytes: + `LuidLowPart`, `LuidHighPart`, `WallClockKHz` (librocdxg's header).
    L392,
    /// 396 bytes: + `FabricHandleSupported` (current development sources).
    L396,
}

impl NodeLayout {
    /// The layout assumed when nothing else is known.
    pub const DEFAULT: Self = Self::L396;
    /// Every layout, largest first (the order a probe tries them). Variants are declared
    /// smallest first, so `Ord` follows the size.
    pub const ALL: [Self; 4] = [Self::L396, Self::L392, Self::L376, Self::L368];

    /// `sizeof(HsaNodeProperties)` in this layout.
    pub const fn size(self) -> usize {
        match self {
            Self::L368 => size_of::<HsaNodeProperties368>(),
            Self::L376 => size_of::<HsaNodeProperties376>(),
            Self::L392 => size_of::<HsaNodeProperties392>(),
            Self::L396 => size_of::<HsaNodeProperties396>(),
        }
    }

    /// The layout of exactly `size` bytes.
    pub fn from_size(size: usize) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.size() == size)
    }

    /// Parses a `ROCPROF_HSAKMT_LAYOUT` value (`368`, `376`, `392` or `396`).
    pub fn parse(text: &str) -> Option<Self> {
        text.trim().parse().ok().and_then(Self::from_size)
    }

    /// Decodes a record written in this layout. `bytes` must hold at least [`Self::size`].
    pub fn decode(self, bytes: &[u8]) -> Option<NodeProps> {
        let base = HsaNodeProperties368::read_from_prefix(bytes).ok()?.0;
        let mut props = NodeProps::from_common(&base);
        // Each longer layout extends the previous one, so each tail is read from its own prefix.
        if self >= Self::L376 {
            let r = HsaNodeProperties376::read_from_prefix(bytes).ok()?.0;
            props.cwsr_size = Some(r.CwsrSize);
            props.ctl_stack_size = Some(r.CtlStackSize);
        }
        if self >= Self::L392 {
            let r = HsaNodeProperties392::read_from_prefix(bytes).ok()?.0;
            props.luid = Some(Luid {
                low: r.LuidLowPart,
                high: r.LuidHighPart,
            });
            props.wallclock_khz = Some(r.WallClockKHz);
        }
        if self >= Self::L396 {
            let r = HsaNodeProperties396::read_from_prefix(bytes).ok()?.0;
            props.fabric_handle_supported = Some(r.FabricHandleSupported != 0);
        }
        Some(props)
    }
}

/// A Windows adapter LUID; the type is shared with the agent record.
pub use trace_records::agents::Luid;

/// What the thunk reported for one KMT node, decoded from whichever layout was read. Fields a
/// layout does not have are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(missing_docs)]
pub struct NodeProps {
    pub cpu_cores: u32,
    /// `NumFComputeCores`: SIMDs; 0 on a CPU node.
    pub simd_count: u32,
    pub memory_banks: u32,
    pub caches: u32,
    pub io_links: u32,
    pub capability: u32,
    pub max_waves_per_simd: u32,
    pub lds_size_kb: u32,
    pub gds_size_kb: u32,
    pub wave_front_size: u32,
    /// `NumShaderBanks`: shader engines.
    pub shader_engines: u32,
    /// `NumArrays`: shader arrays per engine.
    pub arrays_per_engine: u32,
    pub cu_per_array: u32,
    pub simd_per_cu: u32,
    pub max_slots_scratch_cu: u32,
    pub engine_id: HSA_ENGINE_ID,
    pub override_engine_id: HSA_ENGINE_ID,
    pub vendor_id: u16,
    pub device_id: u16,
    pub location_id: u32,
    pub local_mem_size: u64,
    pub max_engine_clock_mhz_fcompute: u32,
    pub max_engine_clock_mhz_ccompute: u32,
    pub marketing_name: String,
    pub amd_name: String,
    pub sdma_ucode: u32,
    pub hive_id: u64,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u32,
    pub num_cp_queues: u32,
    pub num_gws: u32,
    pub integrated: bool,
    pub domain: u32,
    pub unique_id: u64,
    pub num_xcc: u32,
    pub kfd_gpu_id: u32,
    pub family_id: u32,
    pub cwsr_size: Option<u32>,
    pub ctl_stack_size: Option<u32>,
    pub luid: Option<Luid>,
    pub wallclock_khz: Option<u64>,
    pub fabric_handle_supported: Option<bool>,
}

impl NodeProps {
    fn from_common(r: &HsaNodeProperties368) -> Self {
        let name16 = r.MarketingName;
        let name8 = r.AMDName;
        Self {
            cpu_cores: r.NumCPUCores,
            simd_count: r.NumFComputeCores,
            memory_banks: r.NumMemoryBanks,
            caches: r.NumCaches,
            io_links: r.NumIOLinks,
            capability: r.Capability.Value,
            max_waves_per_simd: r.MaxWavesPerSIMD,
            lds_size_kb: r.LDSSizeInKB,
            gds_size_kb: r.GDSSizeInKB,
            wave_front_size: r.WaveFrontSize,
            shader_engines: r.NumShaderBanks,
            arrays_per_engine: r.NumArrays,
            cu_per_array: r.NumCUPerArray,
            simd_per_cu: r.NumSIMDPerCU,
            max_slots_scratch_cu: r.MaxSlotsScratchCU,
            engine_id: r.EngineId,
            override_engine_id: r.OverrideEngineId,
            vendor_id: r.VendorId,
            device_id: r.DeviceId,
            location_id: r.LocationId,
            local_mem_size: r.LocalMemSize,
            max_engine_clock_mhz_fcompute: r.MaxEngineClockMhzFCompute,
            max_engine_clock_mhz_ccompute: r.MaxEngineClockMhzCCompute,
            marketing_name: String::from_utf16_lossy(
                &name16[..name16.iter().position(|&c| c == 0).unwrap_or(name16.len())],
            ),
            amd_name: String::from_utf8_lossy(
                &name8[..name8.iter().position(|&c| c == 0).unwrap_or(name8.len())],
            )
            .into_owned(),
            sdma_ucode: r.uCodeEngineVersions.ucode_sdma(),
            hive_id: r.HiveID,
            num_sdma_engines: r.NumSdmaEngines,
            num_sdma_xgmi_engines: r.NumSdmaXgmiEngines,
            num_sdma_queues_per_engine: r.NumSdmaQueuesPerEngine.into(),
            num_cp_queues: r.NumCpQueues.into(),
            num_gws: r.NumGws.into(),
            integrated: r.Integrated != 0,
            domain: r.Domain,
            unique_id: r.UniqueID,
            num_xcc: r.NumXcc,
            kfd_gpu_id: r.KFDGpuID,
            family_id: r.FamilyID,
            cwsr_size: None,
            ctl_stack_size: None,
            luid: None,
            wallclock_khz: None,
            fabric_handle_supported: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_only_known_sizes() {
        assert_eq!(NodeLayout::parse("376"), Some(NodeLayout::L376));
        assert_eq!(NodeLayout::parse(" 396\n"), Some(NodeLayout::L396));
        for bad in ["", "364", "400", "abc", "-396"] {
            assert_eq!(NodeLayout::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tail_fields_exist_only_in_layouts_that_have_them() {
        let mut bytes = vec![0u8; 396];
        bytes[376..380].copy_from_slice(&0xAABB_CCDDu32.to_le_bytes());
        bytes[380..384].copy_from_slice(&0x11u32.to_le_bytes());
        bytes[384..392].copy_from_slice(&100_000u64.to_le_bytes());
        let p = NodeLayout::L396.decode(&bytes).unwrap();
        assert_eq!(
            p.luid,
            Some(Luid {
                low: 0xAABB_CCDD,
                high: 0x11
            })
        );
        assert_eq!(p.wallclock_khz, Some(100_000));
        assert_eq!(p.fabric_handle_supported, Some(false));
        let p = NodeLayout::L392.decode(&bytes).unwrap();
        assert_eq!(
            (p.wallclock_khz, p.fabric_handle_supported),
            (Some(100_000), None)
        );
        let p = NodeLayout::L376.decode(&bytes).unwrap();
        assert_eq!(p.luid, None);
        assert_eq!(p.cwsr_size, Some(0));
        assert!(NodeLayout::L396.decode(&bytes[..392]).is_none());
    }

    #[test]
    fn names_are_decoded_up_to_the_first_nul() {
        let mut bytes = vec![0u8; 368];
        for (i, c) in "Radeon".encode_utf16().enumerate() {
            bytes[112 + 2 * i..114 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        bytes[240..247].copy_from_slice(b"gfx1150");
        let p = NodeLayout::L368.decode(&bytes).unwrap();
        assert_eq!(p.marketing_name, "Radeon");
        assert_eq!(p.amd_name, "gfx1150");
    }
}
