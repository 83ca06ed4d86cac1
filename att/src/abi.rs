//! The C ABI of `librocprof-trace-decoder.so` (the released 0.1.x "V1" API).
//!
//! Everything here mirrors the decoder's public header: status and info codes, record-type
//! numbers, the records the decoder hands to `trace_cb`, and the four function-pointer types.
//! Nothing in this module calls the library; see [`crate::Decoder`] for that.
//!
//! C enumerations are modelled as newtypes over `i32` ([`DecoderStatus`], [`DecoderInfo`]) or as
//! plain constants ([`record_type`], [`wave_state`], [`category`]), never as Rust `enum`s: the
//! decoder may return values newer than this crate, and every `i32` must stay representable.
//! Every `#[repr(C)]` struct has its size and each field offset asserted at compile time.

use core::ffi::{c_char, c_void};
use core::fmt;
use core::mem::{offset_of, size_of};

/// Defines a status-like newtype's associated constants and its `name()` lookup.
macro_rules! c_codes {
    ($ty:ident, $prefix:literal, { $($name:ident = $value:literal,)* }) => {
        impl $ty {
            $(
                #[doc = concat!("`", $prefix, stringify!($name), "` (", stringify!($value), ").")]
                pub const $name: Self = Self($value);
            )*

            /// The C enumerator's name without its prefix, if the value is one this crate knows.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($name)), )*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{} ({name})", self.0),
                    None => write!(f, "{} (unknown)", self.0),
                }
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

/// `rocprofiler_thread_trace_decoder_status_t`: what `parse_data` and the callbacks return.
///
/// `LAST` is 5 in the released header; the open-source header inserts `NOT_IMPLEMENTED = 5`.
/// Neither is a value the decoder returns from `parse_data`, so neither has a constant here;
/// [`DecoderStatus::name`] reports them (and anything newer) as unknown.
#[repr(transparent)]
#[must_use]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DecoderStatus(pub i32);

c_codes!(DecoderStatus, "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_", {
    SUCCESS = 0,
    ERROR = 1,
    ERROR_OUT_OF_RESOURCES = 2,
    ERROR_INVALID_ARGUMENT = 3,
    ERROR_INVALID_SHADER_DATA = 4,
});

impl DecoderStatus {
    /// True for [`DecoderStatus::SUCCESS`] only.
    pub const fn is_success(self) -> bool {
        self.0 == Self::SUCCESS.0
    }
}

/// `rocprofiler_thread_trace_decoder_info_t`: the payload of an [`record_type::INFO`] record.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DecoderInfo(pub i32);

c_codes!(DecoderInfo, "ROCPROFILER_THREAD_TRACE_DECODER_INFO_", {
    NONE = 0,
    DATA_LOST = 1,
    STITCH_INCOMPLETE = 2,
    WAVE_INCOMPLETE = 3,
});

/// Record types passed as the first argument of `trace_cb`.
///
/// Plain constants, not an enum: decoders newer than this crate send types it has never heard
/// of, and those must be ignored.
pub mod record_type {
    /// The GPU's gfx IP major version. The `events` pointer *is* the value; never dereference it.
    pub const GFXIP: i32 = 0;
    /// A batch of `occupancy_t` ([`super::RawOccupancy`]).
    pub const OCCUPANCY: i32 = 1;
    /// A batch of `perfevent_t` (gfx9 SQ counters).
    pub const PERFEVENT: i32 = 2;
    /// An array of `wave_t` ([`super::RawWave`]).
    pub const WAVE: i32 = 3;
    /// An array of `info_t` ([`super::DecoderInfo`]), count 1 in practice.
    pub const INFO: i32 = 4;
    /// Decoder debug output.
    pub const DEBUG: i32 = 5;
    /// `shaderdata_t` records (decoder 0.1.3 and later).
    pub const SHADERDATA: i32 = 6;
    /// `realtime_t` records (decoder 0.1.3 and later).
    pub const REALTIME: i32 = 7;
    /// The real-time clock frequency, a `uint64_t*` in Hz (decoder 0.1.3 and later).
    pub const RT_FREQUENCY: i32 = 8;
    /// Instructions issued by another SIMD (open-source decoder).
    pub const INST_OTHER_SIMD: i32 = 9;

    /// The header's name for a record type, if known.
    pub const fn name(record_type: i32) -> Option<&'static str> {
        Some(match record_type {
            GFXIP => "GFXIP",
            OCCUPANCY => "OCCUPANCY",
            PERFEVENT => "PERFEVENT",
            WAVE => "WAVE",
            INFO => "INFO",
            DEBUG => "DEBUG",
            SHADERDATA => "SHADERDATA",
            REALTIME => "REALTIME",
            RT_FREQUENCY => "RT_FREQUENCY",
            INST_OTHER_SIMD => "INST_OTHER_SIMD",
            _ => return None,
        })
    }
}

/// `wave_state_t::type` values.
pub mod wave_state {
    /// No wave in the slot.
    pub const EMPTY: i32 = 0;
    /// Resident but not issuing.
    pub const IDLE: i32 = 1;
    /// Executing.
    pub const EXEC: i32 = 2;
    /// Waiting (e.g. on `s_waitcnt`).
    pub const WAIT: i32 = 3;
    /// Stalled.
    pub const STALL: i32 = 4;
    /// The number of states the header defines (`WSTATE_LAST`); `wstates<N>.json` exists for
    /// `N` in `0..COUNT`.
    pub const COUNT: usize = 5;
}

/// Instruction categories (bits 0–7 of `inst_t`'s first word).
pub mod category {
    /// Uncategorised.
    pub const NONE: u8 = 0;
    /// Scalar memory.
    pub const SMEM: u8 = 1;
    /// Scalar ALU.
    pub const SALU: u8 = 2;
    /// Vector memory.
    pub const VMEM: u8 = 3;
    /// Flat memory.
    pub const FLAT: u8 = 4;
    /// Local data share.
    pub const LDS: u8 = 5;
    /// Vector ALU.
    pub const VALU: u8 = 6;
    /// Branch taken.
    pub const JUMP: u8 = 7;
    /// Branch not taken.
    pub const NEXT: u8 = 8;
    /// Immediate (e.g. `s_nop`, `s_waitcnt`).
    pub const IMMED: u8 = 9;
    /// Context save/restore.
    pub const CONTEXT: u8 = 10;
    /// Messages (`s_sendmsg`).
    pub const MESSAGE: u8 = 11;
    /// Ray-tracing BVH.
    pub const BVH: u8 = 12;
}

/// `pc_t`: a program counter as the decoder names it.
///
/// `marker_id != 0`: `addr` is the ELF virtual address inside the code object whose load id is
/// `marker_id`. `marker_id == 0`: `addr` is a raw device address. `{0, 0}` marks an instruction
/// the decoder could not stitch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pc {
    /// ELF vaddr (when `marker_id != 0`) or device address (when `marker_id == 0`).
    pub addr: u64,
    /// The code object's load id, or 0.
    pub marker_id: u64,
}

impl Pc {
    /// True for the `{0, 0}` "unstitched" pc.
    pub const fn is_null(self) -> bool {
        self.addr == 0 && self.marker_id == 0
    }
}

const _: () = assert!(size_of::<Pc>() == 16);
const _: () = assert!(offset_of!(Pc, addr) == 0);
const _: () = assert!(offset_of!(Pc, marker_id) == 8);

/// `occupancy_t`: a wave starting or ending in a slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawOccupancy {
    /// The kernel's pc.
    pub pc: Pc,
    /// Shader-clock time.
    pub time: u64,
    /// Reserved.
    pub reserved: u8,
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot.
    pub slot: u8,
    /// Bit 0 is `start` (1 = the wave started, 0 = it ended). Newer headers put other fields
    /// in the remaining bits; they are ignored.
    pub flags: u32,
}

impl RawOccupancy {
    /// Bit 0 of [`RawOccupancy::flags`].
    pub const fn start(&self) -> bool {
        self.flags & 1 != 0
    }
}

const _: () = assert!(size_of::<RawOccupancy>() == 32);
const _: () = assert!(offset_of!(RawOccupancy, pc) == 0);
const _: () = assert!(offset_of!(RawOccupancy, time) == 16);
const _: () = assert!(offset_of!(RawOccupancy, reserved) == 24);
const _: () = assert!(offset_of!(RawOccupancy, cu) == 25);
const _: () = assert!(offset_of!(RawOccupancy, simd) == 26);
const _: () = assert!(offset_of!(RawOccupancy, slot) == 27);
const _: () = assert!(offset_of!(RawOccupancy, flags) == 28);

/// `wave_state_t`: one segment of a wave's state timeline.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawWaveState {
    /// One of [`wave_state`]'s values (or a newer one).
    pub kind: i32,
    /// Duration in shader clocks.
    pub duration: i32,
}

const _: () = assert!(size_of::<RawWaveState>() == 8);
const _: () = assert!(offset_of!(RawWaveState, kind) == 0);
const _: () = assert!(offset_of!(RawWaveState, duration) == 4);

/// `inst_t`: one executed instruction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawInst {
    /// `category` in bits 0–7, `stall` in bits 8–31.
    pub bits: u32,
    /// Issue-to-completion latency in shader clocks.
    pub duration: i32,
    /// Issue time in shader clocks.
    pub time: i64,
    /// Where the instruction is.
    pub pc: Pc,
}

impl RawInst {
    /// Bits 0–7 of [`RawInst::bits`]: one of [`category`]'s values.
    pub const fn category(&self) -> u8 {
        (self.bits & 0xff) as u8
    }

    /// Bits 8–31 of [`RawInst::bits`]: stall cycles before issue.
    pub const fn stall(&self) -> u32 {
        self.bits >> 8
    }
}

const _: () = assert!(size_of::<RawInst>() == 32);
const _: () = assert!(offset_of!(RawInst, bits) == 0);
const _: () = assert!(offset_of!(RawInst, duration) == 4);
const _: () = assert!(offset_of!(RawInst, time) == 8);
const _: () = assert!(offset_of!(RawInst, pc) == 16);

/// `wave_t`: one wave's instructions and timeline. Both arrays are valid only during the
/// `trace_cb` call that delivers the wave.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawWave {
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot.
    pub wave_id: u8,
    /// Context save/restores seen during the wave.
    pub contexts: u8,
    /// Reserved.
    pub reserved: [u32; 3],
    /// First shader-clock time of the wave.
    pub begin_time: i64,
    /// Last shader-clock time of the wave.
    pub end_time: i64,
    /// Number of entries at `timeline`.
    pub timeline_size: u64,
    /// Number of entries at `instructions`.
    pub instructions_size: u64,
    /// The state timeline.
    pub timeline: *const RawWaveState,
    /// The executed instructions.
    pub instructions: *const RawInst,
}

const _: () = assert!(size_of::<RawWave>() == 64);
const _: () = assert!(offset_of!(RawWave, cu) == 0);
const _: () = assert!(offset_of!(RawWave, simd) == 1);
const _: () = assert!(offset_of!(RawWave, wave_id) == 2);
const _: () = assert!(offset_of!(RawWave, contexts) == 3);
const _: () = assert!(offset_of!(RawWave, reserved) == 4);
const _: () = assert!(offset_of!(RawWave, begin_time) == 16);
const _: () = assert!(offset_of!(RawWave, end_time) == 24);
const _: () = assert!(offset_of!(RawWave, timeline_size) == 32);
const _: () = assert!(offset_of!(RawWave, instructions_size) == 40);
const _: () = assert!(offset_of!(RawWave, timeline) == 48);
const _: () = assert!(offset_of!(RawWave, instructions) == 56);

/// `se_data_cb(uint8_t** buf, uint64_t* size, void* ud) -> uint64_t`: hands the decoder the
/// next chunk of the stream; a zero return ends the stream.
pub type SeDataCallback = unsafe extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;

/// `trace_cb(record_type, void* events, uint64_t count, void* ud) -> status`: delivers records.
/// The decoder ignores the return value.
pub type TraceCallback = unsafe extern "C" fn(i32, *mut c_void, u64, *mut c_void) -> i32;

/// `isa_cb(char* text, uint64_t* memory_size, uint64_t* size, pc_t pc, void* ud) -> status`:
/// answers the disassembly of one instruction.
pub type IsaCallback =
    unsafe extern "C" fn(*mut c_char, *mut u64, *mut u64, Pc, *mut c_void) -> i32;

/// `rocprof_trace_decoder_parse_data(se_data_cb, trace_cb, isa_cb, void* ud) -> status`.
pub type ParseDataFn =
    unsafe extern "C" fn(SeDataCallback, TraceCallback, IsaCallback, *mut c_void) -> i32;

/// `rocprof_trace_decoder_get_info_string` / `_get_status_string`: `const char*(int)`, a static
/// NUL-terminated string.
pub type GetStringFn = unsafe extern "C" fn(i32) -> *const c_char;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_and_unknown_values() {
        assert_eq!(DecoderStatus(0).name(), Some("SUCCESS"));
        assert_eq!(
            DecoderStatus::ERROR_INVALID_SHADER_DATA.name(),
            Some("ERROR_INVALID_SHADER_DATA")
        );
        assert_eq!(DecoderStatus(5).name(), None);
        assert_eq!(DecoderStatus(-7).to_string(), "-7 (unknown)");
        assert_eq!(DecoderStatus(2).to_string(), "2 (ERROR_OUT_OF_RESOURCES)");
        assert!(DecoderStatus::SUCCESS.is_success());
        assert!(!DecoderStatus::ERROR.is_success());
        assert_eq!(DecoderInfo(3).name(), Some("WAVE_INCOMPLETE"));
        assert_eq!(DecoderInfo(9).name(), None);
    }

    #[test]
    fn record_types_are_open() {
        assert_eq!(
            record_type::name(record_type::INST_OTHER_SIMD),
            Some("INST_OTHER_SIMD")
        );
        assert_eq!(record_type::name(42), None);
    }

    #[test]
    fn inst_bit_fields() {
        let inst = RawInst {
            bits: (0x00_1234 << 8) | u32::from(category::VALU),
            ..RawInst::default()
        };
        assert_eq!(inst.category(), category::VALU);
        assert_eq!(inst.stall(), 0x1234);
        let max = RawInst {
            bits: u32::MAX,
            ..RawInst::default()
        };
        assert_eq!(max.category(), 0xff);
        assert_eq!(max.stall(), 0x00ff_ffff);
    }

    #[test]
    fn occupancy_start_is_bit_zero_only() {
        let mut o = RawOccupancy {
            flags: 0xffff_fffe,
            ..RawOccupancy::default()
        };
        assert!(!o.start());
        o.flags = 1;
        assert!(o.start());
    }
}
