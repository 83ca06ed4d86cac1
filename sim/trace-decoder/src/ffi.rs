//! The decoder V1 C ABI: statuses, record types, the record structs (x86-64 layouts, checked at
//! compile time), the callback types and the static strings.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

/// `rocprofiler_thread_trace_decoder_status_t` (a C enum: an `int`).
pub type Status = c_int;
/// Success.
pub const STATUS_SUCCESS: Status = 0;
/// Generic error (also: a panic inside the library).
pub const STATUS_ERROR: Status = 1;
/// A buffer was too small.
pub const STATUS_ERROR_OUT_OF_RESOURCES: Status = 2;
/// An argument was invalid (a null callback; the tool's answer for an unknown pc).
pub const STATUS_ERROR_INVALID_ARGUMENT: Status = 3;
/// A chunk is not a trace this decoder understands.
pub const STATUS_ERROR_INVALID_SHADER_DATA: Status = 4;
/// One past the last status.
pub const STATUS_LAST: Status = 5;

/// `rocprofiler_thread_trace_decoder_record_type_t`.
pub type RecordType = c_int;
/// `events` is the gfxip major value itself, count 0.
pub const RECORD_GFXIP: RecordType = 0;
/// `occupancy_t[count]`.
pub const RECORD_OCCUPANCY: RecordType = 1;
/// `perfevent_t[count]` (never emitted: gfx11 has no ATT perf counters).
pub const RECORD_PERFEVENT: RecordType = 2;
/// `wave_t[count]`.
pub const RECORD_WAVE: RecordType = 3;
/// `info_t*`, count 1.
pub const RECORD_INFO: RecordType = 4;
/// Debug (never emitted).
pub const RECORD_DEBUG: RecordType = 5;

/// `rocprofiler_thread_trace_decoder_info_t` (a C enum: an `int`).
pub type Info = c_int;
/// No information.
pub const INFO_NONE: Info = 0;
/// The trace lost data.
pub const INFO_DATA_LOST: Info = 1;
/// An instruction could not be stitched to its disassembly.
pub const INFO_STITCH_INCOMPLETE: Info = 2;
/// A wave was cut off by the start or end of the trace.
pub const INFO_WAVE_INCOMPLETE: Info = 3;
/// One past the last info.
pub const INFO_LAST: Info = 4;

/// `rocprofiler_thread_trace_decoder_wave_state_t`.
pub mod wave_state {
    /// No state.
    pub const EMPTY: i32 = 0;
    /// Nothing issued.
    pub const IDLE: i32 = 1;
    /// Executing.
    pub const EXEC: i32 = 2;
    /// Waiting (`s_waitcnt` and other IMMED instructions).
    pub const WAIT: i32 = 3;
    /// Stalled.
    pub const STALL: i32 = 4;
}

/// `rocprofiler_thread_trace_decoder_pc_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PcT {
    /// ELF vaddr if `marker_id != 0`, else the raw device address.
    pub addr: u64,
    /// Code-object load id; 0 = raw address.
    pub marker_id: u64,
}

/// `rocprofiler_thread_trace_decoder_occupancy_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OccupancyT {
    /// The kernel's pc.
    pub pc: PcT,
    /// Event time.
    pub time: u64,
    /// Reserved (0).
    pub reserved: u8,
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot.
    pub slot: u8,
    /// Bit 0: 1 = the wave starts, 0 = it ends.
    pub flags: u32,
}

/// `rocprofiler_thread_trace_decoder_wave_state_t`'s timeline entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveStateT {
    /// One of [`wave_state`].
    pub r#type: i32,
    /// Cycles in that state.
    pub duration: i32,
}

/// `rocprofiler_thread_trace_decoder_inst_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstT {
    /// Category in bits 0-7, stall cycles in bits 8-31.
    pub bits: u32,
    /// Cycles from issue to completion.
    pub duration: i32,
    /// Issue time.
    pub time: i64,
    /// The stitched pc, or `{0,0}` if the instruction could not be stitched.
    pub pc: PcT,
}

impl InstT {
    /// The category byte.
    pub fn category(&self) -> u8 {
        self.bits as u8
    }

    /// The stall cycles.
    pub fn stall(&self) -> u32 {
        self.bits >> 8
    }
}

/// `rocprofiler_thread_trace_decoder_wave_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WaveT {
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot (att-tool's `sl`).
    pub wave_id: u8,
    /// Context save/restores (always 0 here).
    pub contexts: u8,
    /// Reserved (0).
    pub reserved: [u32; 3],
    /// Start time.
    pub begin_time: i64,
    /// End time.
    pub end_time: i64,
    /// Entries in `timeline`.
    pub timeline_size: u64,
    /// Entries in `instructions`.
    pub instructions_size: u64,
    /// The wave's states over time.
    pub timeline: *mut WaveStateT,
    /// The instructions it executed.
    pub instructions: *mut InstT,
}

const _: () = {
    assert!(size_of::<PcT>() == 16);
    assert!(offset_of!(PcT, addr) == 0);
    assert!(offset_of!(PcT, marker_id) == 8);

    assert!(size_of::<OccupancyT>() == 32);
    assert!(offset_of!(OccupancyT, pc) == 0);
    assert!(offset_of!(OccupancyT, time) == 16);
    assert!(offset_of!(OccupancyT, reserved) == 24);
    assert!(offset_of!(OccupancyT, cu) == 25);
    assert!(offset_of!(OccupancyT, simd) == 26);
    assert!(offset_of!(OccupancyT, slot) == 27);
    assert!(offset_of!(OccupancyT, flags) == 28);

    assert!(size_of::<WaveStateT>() == 8);
    assert!(offset_of!(WaveStateT, r#type) == 0);
    assert!(offset_of!(WaveStateT, duration) == 4);

    assert!(size_of::<InstT>() == 32);
    assert!(offset_of!(InstT, bits) == 0);
    assert!(offset_of!(InstT, duration) == 4);
    assert!(offset_of!(InstT, time) == 8);
    assert!(offset_of!(InstT, pc) == 16);

    assert!(size_of::<WaveT>() == 64);
    assert!(offset_of!(WaveT, cu) == 0);
    assert!(offset_of!(WaveT, simd) == 1);
    assert!(offset_of!(WaveT, wave_id) == 2);
    assert!(offset_of!(WaveT, contexts) == 3);
    assert!(offset_of!(WaveT, reserved) == 4);
    assert!(offset_of!(WaveT, begin_time) == 16);
    assert!(offset_of!(WaveT, end_time) == 24);
    assert!(offset_of!(WaveT, timeline_size) == 32);
    assert!(offset_of!(WaveT, instructions_size) == 40);
    assert!(offset_of!(WaveT, timeline) == 48);
    assert!(offset_of!(WaveT, instructions) == 56);

    assert!(size_of::<Info>() == 4);
    assert!(size_of::<Status>() == 4);
};

/// `uint64_t se_data_cb(uint8_t** buffer, uint64_t* size, void* userdata)`.
pub type SeDataCallback = unsafe extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;
/// `status trace_cb(record_type, void* events, uint64_t count, void* userdata)`.
pub type TraceCallback = unsafe extern "C" fn(RecordType, *mut c_void, u64, *mut c_void) -> Status;
/// `status isa_cb(char* text, uint64_t* memory_size, uint64_t* size, pc_t pc, void* userdata)`.
pub type IsaCallback =
    unsafe extern "C" fn(*mut c_char, *mut u64, *mut u64, PcT, *mut c_void) -> Status;

/// `get_status_string`'s answer.
pub fn status_string(status: Status) -> &'static CStr {
    match status {
        STATUS_SUCCESS => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS",
        STATUS_ERROR => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR",
        STATUS_ERROR_OUT_OF_RESOURCES => {
            c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES"
        }
        STATUS_ERROR_INVALID_ARGUMENT => {
            c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT"
        }
        STATUS_ERROR_INVALID_SHADER_DATA => {
            c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA"
        }
        STATUS_LAST => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST",
        _ => c"STATUS_UNKNOWN",
    }
}

/// `get_info_string`'s answer.
pub fn info_string(info: Info) -> &'static CStr {
    match info {
        INFO_NONE => c"NONE",
        INFO_DATA_LOST => {
            c"Data Lost: The profiler dropped part of the trace due to bandwidth limitations."
        }
        INFO_STITCH_INCOMPLETE => {
            c"Stitch Incomplete: The parser could not fully match a trace token to the underlying disassembly."
        }
        INFO_WAVE_INCOMPLETE => c"Wave incomplete: The trace was cutoff before all waves ended.",
        INFO_LAST => c"INFO_LAST",
        _ => c"Unknown info parameter.",
    }
}
