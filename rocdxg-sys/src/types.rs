//! The structs exchanged with the thunk, mirrored from `hsakmttypes.h`.
//!
//! The header wraps its declarations in `#pragma pack(push, 4)`, so 64-bit members are only
//! 4-byte aligned: every struct here is `#[repr(C, packed(4))]`. Sizes and offsets are asserted at
//! compile time against the numbers in `abi/HsaNodeProperties_*.tsv` (compiled from the real
//! headers with gcc).

use c_layout::c_struct;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

c_struct! {
    /// `HsaSystemProperties`, filled by `hsaKmtAcquireSystemProperties`.
    #[repr(C, packed(4))]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct HsaSystemProperties as "HsaSystemProperties", size 16 {
        pub NumNodes: u32 => 0,
        pub PlatformOem: u32 => 4,
        pub PlatformId: u32 => 8,
        pub PlatformRev: u32 => 12,
    }
}

c_struct! {
    /// `HsaStructureSizes`, the argument of the `DxgAbiCheck` handshake. A size of 0 means
    /// "this caller never exchanges that struct".
    #[repr(C, packed(4))]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct HsaStructureSizes as "HsaStructureSizes", size 16 {
        pub StructureSizes: u16 => 0,
        pub SizeOfHsaNodeProperties: u16 => 2,
        pub SizeOfHsaExternalHandleDesc: u16 => 4,
        pub Reserved: [u16; 5] => 6,
    }
}

/// `HSA_ENGINE_ID`: a 32-bit bit-field union (`uCode` bits 0–9, `Major` 10–15, `Minor` 16–23,
/// `Stepping` 24–31; bits are allocated from the least significant one).
#[allow(non_camel_case_types, non_snake_case)]
#[repr(transparent)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct HSA_ENGINE_ID {
    /// The raw union value.
    pub Value: u32,
}

impl HSA_ENGINE_ID {
    /// Firmware (microcode) version, bits 0–9.
    pub const fn ucode(self) -> u32 {
        self.Value & 0x3ff
    }
    /// gfx major version, bits 10–15.
    pub const fn major(self) -> u32 {
        (self.Value >> 10) & 0x3f
    }
    /// gfx minor version, bits 16–23.
    pub const fn minor(self) -> u32 {
        (self.Value >> 16) & 0xff
    }
    /// gfx stepping, bits 24–31.
    pub const fn stepping(self) -> u32 {
        self.Value >> 24
    }
    /// Packs the four parts (each truncated to its bit width).
    pub const fn new(major: u32, minor: u32, stepping: u32, ucode: u32) -> Self {
        Self {
            Value: (ucode & 0x3ff)
                | ((major & 0x3f) << 10)
                | ((minor & 0xff) << 16)
                | ((stepping & 0xff) << 24),
        }
    }
}

/// `HSA_ENGINE_VERSION`: `uCodeSDMA` bits 0–9, `uCodeRes` bits 10–19.
#[allow(non_camel_case_types, non_snake_case)]
#[repr(transparent)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct HSA_ENGINE_VERSION {
    /// The raw union value.
    pub Value: u32,
}

impl HSA_ENGINE_VERSION {
    /// SDMA firmware version, bits 0–9.
    pub const fn ucode_sdma(self) -> u32 {
        self.Value & 0x3ff
    }
}

/// `HSA_CAPABILITY` (and `HSA_CAPABILITY2`): a 32-bit bit-field union, copied as a whole.
#[allow(non_camel_case_types, non_snake_case)]
#[repr(transparent)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct HSA_CAPABILITY {
    /// The raw union value.
    pub Value: u32,
}

/// Declares one `HsaNodeProperties` layout: the members every known layout shares (the 368-byte
/// record, ending at `FamilyID`), followed by the layout's own tail members.
macro_rules! node_properties_layout {
    (
        $(#[$meta:meta])*
        $name:ident, size $size:literal { $( $xf:ident : $xt:ty => $xo:literal ),* $(,)? }
    ) => {
        c_struct! {
            $(#[$meta])*
            #[repr(C, packed(4))]
            #[derive(Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable)]
            pub struct $name as "HsaNodeProperties", size $size {
                pub NumCPUCores: u32 => 0,
                pub NumFComputeCores: u32 => 4,
                pub NumNeuralCores: u32 => 8,
                pub NumMemoryBanks: u32 => 12,
                pub NumCaches: u32 => 16,
                pub NumIOLinks: u32 => 20,
                pub CComputeIdLo: u32 => 24,
                pub FComputeIdLo: u32 => 28,
                pub Capability: HSA_CAPABILITY => 32,
                pub Capability2: HSA_CAPABILITY => 36,
                pub MaxWavesPerSIMD: u32 => 40,
                pub LDSSizeInKB: u32 => 44,
                pub GDSSizeInKB: u32 => 48,
                pub WaveFrontSize: u32 => 52,
                pub NumShaderBanks: u32 => 56,
                pub NumArrays: u32 => 60,
                pub NumCUPerArray: u32 => 64,
                pub NumSIMDPerCU: u32 => 68,
                pub MaxSlotsScratchCU: u32 => 72,
                pub EngineId: HSA_ENGINE_ID => 76,
                pub OverrideEngineId: HSA_ENGINE_ID => 80,
                pub VendorId: u16 => 84,
                pub DeviceId: u16 => 86,
                pub LocationId: u32 => 88,
                pub LocalMemSize: u64 => 92,
                pub MaxEngineClockMhzFCompute: u32 => 100,
                pub MaxEngineClockMhzCCompute: u32 => 104,
                pub DrmRenderMinor: i32 => 108,
                pub MarketingName: [u16; 64] => 112,
                pub AMDName: [u8; 64] => 240,
                pub uCodeEngineVersions: HSA_ENGINE_VERSION => 304,
                pub DebugProperties: u64 => 308,
                pub HiveID: u64 => 316,
                pub NumSdmaEngines: u32 => 324,
                pub NumSdmaXgmiEngines: u32 => 328,
                pub NumSdmaQueuesPerEngine: u8 => 332,
                pub NumCpQueues: u8 => 333,
                pub NumGws: u8 => 334,
                pub Integrated: u8 => 335,
                pub Domain: u32 => 336,
                pub UniqueID: u64 => 340,
                pub VGPRSizePerCU: u32 => 348,
                pub SGPRSizePerCU: u32 => 352,
                pub NumXcc: u32 => 356,
                pub KFDGpuID: u32 => 360,
                pub FamilyID: u32 => 364,
                $( pub $xf : $xt => $xo, )*
            }
        }
    };
}

node_properties_layout! {
    /// `HsaNodeProperties` as of rocm-systems develop, Aug 2025 (368 bytes, ends at `FamilyID`).
    /// Also the size librocdxg falls back to when no caller negotiated one.
    HsaNodeProperties368, size 368 {}
}

node_properties_layout! {
    /// `HsaNodeProperties` of the ROCm 7.2.x packages (376 bytes). Which two members make up the
    /// extra 8 bytes is inferred (`CwsrSize`, `CtlStackSize`), not read from a 7.2 header.
    HsaNodeProperties376, size 376 {
        CwsrSize: u32 => 368,
        CtlStackSize: u32 => 372,
    }
}

node_properties_layout! {
    /// `HsaNodeProperties` of the `ROCm/librocdxg` header (392 bytes): adds the adapter LUID and
    /// the GPU wall-clock frequency.
    HsaNodeProperties392, size 392 {
        CwsrSize: u32 => 368,
        CtlStackSize: u32 => 372,
        LuidLowPart: u32 => 376,
        LuidHighPart: u32 => 380,
        WallClockKHz: u64 => 384,
    }
}

node_properties_layout! {
    /// `HsaNodeProperties` of current development sources (396 bytes).
    HsaNodeProperties396, size 396 {
        CwsrSize: u32 => 368,
        CtlStackSize: u32 => 372,
        LuidLowPart: u32 => 376,
        LuidHighPart: u32 => 380,
        WallClockKHz: u64 => 384,
        FabricHandleSupported: u32 => 392,
    }
}

/// Every `sizeof(HsaNodeProperties)` this crate can describe, smallest first.
pub const KNOWN_NODE_PROPERTIES_SIZES: [usize; 4] = [
    size_of::<HsaNodeProperties368>(),
    size_of::<HsaNodeProperties376>(),
    size_of::<HsaNodeProperties392>(),
    size_of::<HsaNodeProperties396>(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_id_bitfields_round_trip() {
        let id = HSA_ENGINE_ID::new(11, 5, 0, 42);
        assert_eq!(
            (id.major(), id.minor(), id.stepping(), id.ucode()),
            (11, 5, 0, 42)
        );
        let id = HSA_ENGINE_ID::new(9, 0, 10, 0);
        assert_eq!(id.Value, (9 << 10) | (10 << 24));
        assert_eq!(id.stepping(), 10);
    }

    #[test]
    fn shared_prefix_decodes_identically_in_every_layout() {
        let mut bytes = [0u8; 396];
        bytes[4..8].copy_from_slice(&32u32.to_le_bytes());
        bytes[364..368].copy_from_slice(&150u32.to_le_bytes());
        let a = HsaNodeProperties368::read_from_prefix(&bytes).unwrap().0;
        let b = HsaNodeProperties396::read_from_bytes(&bytes).unwrap();
        assert_eq!({ a.NumFComputeCores }, { b.NumFComputeCores });
        assert_eq!({ a.FamilyID }, 150);
    }
}
