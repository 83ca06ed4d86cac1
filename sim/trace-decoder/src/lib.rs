//! Simulated `librocprof-trace-decoder.so`: AMD's thread-trace decoder V1 C API over the
//! simulated SQTT stream (`wslsim-sqtt`).
//!
//! Built as a cdylib that exports exactly the three V1 symbols, `rocprof_trace_decoder_parse_data`,
//! `rocprof_trace_decoder_get_info_string` and `rocprof_trace_decoder_get_status_string` (no
//! `dump_data`, as in AMD's released binaries). The C layouts are in [`ffi`]; the decoding, free
//! of raw pointers, in [`decode`].
//!
//! # `parse_data`
//!
//! * A null callback: `ERROR_INVALID_ARGUMENT`, nothing called.
//! * `se_data_cb` is called until it returns 0, a size of 0 or a null buffer (AMD's
//!   `while (ret && size && buf)`); bytes handed out with a 0 return are never read. Each chunk is
//!   one whole SE stream, decoded on its own (code objects, live waves).
//! * A chunk that does not parse (wrong magic or version, malformed token; see `wslsim-sqtt`)
//!   makes the call return `ERROR_INVALID_SHADER_DATA` at once, with nothing emitted for that
//!   chunk: 0 bytes give SUCCESS and no records; 4096 zero bytes or random bytes give
//!   INVALID_SHADER_DATA after one `se_data_cb` call and no records at all.
//! * Records, in this order per call: GFXIP once (`events` *is* the stream header's gfxip
//!   major, 11, count 0) before anything else; then per chunk, in stream order, a WAVE record
//!   (count 1) at each `WAVE_END`, INFO records as described below, the waves still live at the
//!   end of the chunk (by begin time), and last one OCCUPANCY batch (every wave's start and end,
//!   sorted by time; the pc is the wave's translated entry pc, else its first instruction's
//!   translated pc, else `{0,0}`). Arrays are freed after the callback returns.
//! * PCs: the USERDATA_2 code-object markers (after the `'\0ROC'`, 524801 preamble) build the
//!   chunk's table of loaded objects; a device pc inside one is `{pc - load addr, id}`, any other
//!   pc is `{pc, 0}`. Each distinct translated pc is asked of `isa_cb` once per call: capacity 64
//!   first, then once more with exactly the size the tool asked for (at most 1 MiB) if it returned
//!   `ERROR_OUT_OF_RESOURCES`. Any other failure leaves the instruction unstitched: its pc is
//!   `{0,0}`.
//! * INFO records: DATA_LOST (1) for every `DATA_LOST` token and for a chunk that ends inside a
//!   token; STITCH_INCOMPLETE (2) once per call, at the first unstitched pc; WAVE_INCOMPLETE (3)
//!   once per call, at the first wave cut off by the trace (an instruction or end of a wave that
//!   never started in the chunk, a start in a live wave's slot, a wave live at the chunk's end).
//! * `wave_t`: cu, simd, `wave_id` = the slot, contexts 0, begin/end times, the instructions
//!   (`category | stall << 8`, stall saturated to 24 bits, duration to `i32::MAX`) and the
//!   timeline derived from them ([`timeline`]). A cut-off wave ends at the latest time seen in its
//!   chunk; an end before the begin is taken as the begin.
//! * A panic inside the library (a simulator bug) returns `ERROR` (1).
//!
//! # Environment
//!
//! `WSLSIM_DECODER_FAIL=<status>` (a decimal integer, surrounding whitespace ignored), read at
//! every `parse_data` call: the call asks `se_data_cb` for one chunk, ignores it, emits nothing
//! and returns that status (e.g. `1` for ERROR, `4` for INVALID_SHADER_DATA), for testing a
//! tool's error handling. Unset or not an integer: normal decoding.

pub mod codeobj;
pub mod decode;
pub mod ffi;
pub mod timeline;

use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use decode::{Record, Sink, Source};
use ffi::*;

/// The environment variable that makes `parse_data` fail.
pub const FAIL_ENV: &str = "WSLSIM_DECODER_FAIL";

/// The status `WSLSIM_DECODER_FAIL` asks for, if any.
pub fn forced_status() -> Option<Status> {
    std::env::var(FAIL_ENV).ok()?.trim().parse().ok()
}

/// The tool's `se_data_cb`.
struct CallbackSource {
    se_data: SeDataCallback,
    userdata: *mut c_void,
}

impl Source for CallbackSource {
    fn with_next_chunk<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let mut buffer: *mut u8 = std::ptr::null_mut();
        let mut size: u64 = 0;
        // SAFETY: `se_data` is the tool's callback (parse_data's contract); both out-pointers
        // point to live locals.
        let more = unsafe { (self.se_data)(&mut buffer, &mut size, self.userdata) };
        if more == 0 || size == 0 || buffer.is_null() {
            return None;
        }
        let bytes: &[u8] = match usize::try_from(size) {
            Ok(len) if len <= isize::MAX as usize => {
                // SAFETY: the tool hands out `size` readable bytes at `buffer`, valid until the
                // next `se_data_cb` call or until parse_data returns, and `f` is done with them
                // before either; `len` does not exceed isize::MAX.
                unsafe { std::slice::from_raw_parts(buffer, len) }
            }
            // No buffer can be that large: not a stream.
            _ => &[],
        };
        Some(f(bytes))
    }
}

/// The tool's `trace_cb` and `isa_cb`.
struct CallbackSink {
    trace: TraceCallback,
    isa: IsaCallback,
    userdata: *mut c_void,
}

impl CallbackSink {
    fn emit(&mut self, kind: RecordType, events: *mut c_void, count: u64) {
        // SAFETY: `trace` is the tool's callback; `events` is what the record type says (a
        // value for GFXIP, else `count` live elements that outlive the call).
        let _ = unsafe { (self.trace)(kind, events, count, self.userdata) };
    }
}

impl Sink for CallbackSink {
    fn isa(&mut self, pc: PcT, text: &mut [u8], size: &mut u64, memory_size: &mut u64) -> Status {
        debug_assert_eq!(*size, text.len() as u64);
        // SAFETY: `isa` is the tool's callback; `text` is writable for `*size` bytes (its
        // capacity, which the tool must not exceed) and the other two point to live u64s.
        unsafe {
            (self.isa)(
                text.as_mut_ptr().cast(),
                memory_size,
                size,
                pc,
                self.userdata,
            )
        }
    }

    fn record(&mut self, record: Record<'_>) {
        match record {
            Record::Gfxip(gfxip) => self.emit(
                RECORD_GFXIP,
                std::ptr::without_provenance_mut(gfxip as usize),
                0,
            ),
            Record::Occupancy(events) => self.emit(
                RECORD_OCCUPANCY,
                events.as_ptr().cast_mut().cast(),
                events.len() as u64,
            ),
            Record::Wave { wave, .. } => {
                self.emit(RECORD_WAVE, std::ptr::from_ref(wave).cast_mut().cast(), 1)
            }
            Record::Info(info) => {
                let mut info = info;
                self.emit(RECORD_INFO, (&raw mut info).cast(), 1);
            }
        }
    }
}

/// Decodes the SE streams `se_data_cb` hands out, reporting records to `trace_cb` and asking
/// `isa_cb` for each instruction's disassembly (see the crate documentation).
///
/// # Safety
///
/// Non-null callbacks must follow the decoder V1 contract: `se_data_cb` writes a buffer pointer
/// and size (the buffer readable for that many bytes until the next `se_data_cb` call or the
/// return); `isa_cb` writes at most `*size` bytes to `text` when it succeeds; none of them
/// unwinds. `userdata` is passed through untouched.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprof_trace_decoder_parse_data(
    se_data_cb: Option<SeDataCallback>,
    trace_cb: Option<TraceCallback>,
    isa_cb: Option<IsaCallback>,
    userdata: *mut c_void,
) -> Status {
    let (Some(se_data), Some(trace), Some(isa)) = (se_data_cb, trace_cb, isa_cb) else {
        return STATUS_ERROR_INVALID_ARGUMENT;
    };
    catch_unwind(AssertUnwindSafe(|| {
        let mut source = CallbackSource { se_data, userdata };
        if let Some(status) = forced_status() {
            let _ = source.with_next_chunk(|_| ());
            return status;
        }
        let mut sink = CallbackSink {
            trace,
            isa,
            userdata,
        };
        decode::decode(&mut source, &mut sink)
    }))
    .unwrap_or(STATUS_ERROR)
}

/// The static, NUL-terminated description of an info value (`"Unknown info parameter."` for
/// values it does not know).
///
/// # Safety
///
/// Always safe to call; `unsafe` only to match the C declaration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprof_trace_decoder_get_info_string(info: Info) -> *const c_char {
    catch_unwind(|| info_string(info))
        .unwrap_or(c"Unknown info parameter.")
        .as_ptr()
}

/// The static, NUL-terminated enumerator name of a status (`"STATUS_UNKNOWN"` for values it
/// does not know).
///
/// # Safety
///
/// Always safe to call; `unsafe` only to match the C declaration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprof_trace_decoder_get_status_string(status: Status) -> *const c_char {
    catch_unwind(|| status_string(status))
        .unwrap_or(c"STATUS_UNKNOWN")
        .as_ptr()
}

#[cfg(test)]
mod tests;
