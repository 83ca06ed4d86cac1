//! The stream's values: header, wave keys, instructions and tokens.

use crate::GFX11;

/// The stream header's fields (magic, version and reserved fields are implied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The gfxip major version (11 for the simulated GPUs).
    pub gfxip_major: u8,
    /// The shader engine the stream came from.
    pub shader_engine: u8,
}

impl Default for Header {
    /// gfx11, shader engine 0.
    fn default() -> Self {
        Self {
            gfxip_major: GFX11,
            shader_engine: 0,
        }
    }
}

/// The hardware slot a wave occupies: at most one wave is live per key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaveKey {
    /// Compute unit (WGP) index within the shader engine.
    pub cu: u8,
    /// SIMD index within the CU.
    pub simd: u8,
    /// Wave slot on the SIMD (the hardware wave id).
    pub slot: u8,
}

impl WaveKey {
    /// The key's dword: cu in bits 0-7, simd in 8-15, slot in 16-23.
    pub const fn to_word(self) -> u32 {
        self.cu as u32 | (self.simd as u32) << 8 | (self.slot as u32) << 16
    }

    /// The key a dword holds, or `None` if its reserved bits 24-31 are set.
    pub const fn from_word(word: u32) -> Option<Self> {
        if word >> 24 != 0 {
            return None;
        }
        Some(Self {
            cu: word as u8,
            simd: (word >> 8) as u8,
            slot: (word >> 16) as u8,
        })
    }
}

/// An instruction category: the decoder's `inst_t` category (bits 0-7 of its first u32).
///
/// A newtype rather than an enum, so that any byte in a stream is representable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Category(pub u8);

impl Category {
    /// No category.
    pub const NONE: Self = Self(0);
    /// Scalar memory.
    pub const SMEM: Self = Self(1);
    /// Scalar ALU.
    pub const SALU: Self = Self(2);
    /// Vector memory.
    pub const VMEM: Self = Self(3);
    /// Flat memory.
    pub const FLAT: Self = Self(4);
    /// LDS.
    pub const LDS: Self = Self(5);
    /// Vector ALU.
    pub const VALU: Self = Self(6);
    /// Branch.
    pub const JUMP: Self = Self(7);
    /// Branch not taken.
    pub const NEXT: Self = Self(8);
    /// Immediate (`s_waitcnt`, `s_nop`, ...); the decoder shows its non-stall cycles as WAIT.
    pub const IMMED: Self = Self(9);
    /// Context save/restore.
    pub const CONTEXT: Self = Self(10);
    /// Message (`s_sendmsg`).
    pub const MESSAGE: Self = Self(11);
    /// Ray-tracing BVH.
    pub const BVH: Self = Self(12);
}

/// One instruction a wave executed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// Device address of the instruction.
    pub pc: u64,
    /// Its category.
    pub category: Category,
    /// Issue time (shader clock).
    pub time: u64,
    /// Cycles from issue until it completed.
    pub duration: u32,
    /// How many of the first `duration` cycles it was stalled.
    pub stall: u32,
}

/// One token, with its time resolved to an absolute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Token {
    /// `TIME`: sets the time base.
    Time(u64),
    /// `REG_WRITE`: a traced register write.
    RegWrite {
        /// Absolute dword address of the register.
        register: u32,
        /// The value written.
        value: u32,
    },
    /// `WAVE_START`.
    WaveStart {
        /// The wave's slot.
        wave: WaveKey,
        /// Start time.
        time: u64,
        /// The kernel's entry device address, or 0 if unknown.
        entry_pc: u64,
    },
    /// `INST`.
    Instruction {
        /// The executing wave's slot.
        wave: WaveKey,
        /// The instruction.
        inst: Instruction,
    },
    /// `WAVE_END`.
    WaveEnd {
        /// The wave's slot.
        wave: WaveKey,
        /// End time.
        time: u64,
    },
    /// `DATA_LOST`: the buffer overflowed.
    DataLost {
        /// Bytes dropped (saturating; 0 = unknown).
        dropped_bytes: u32,
    },
}
