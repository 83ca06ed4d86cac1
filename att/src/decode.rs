//! Decoding one shader engine's SQTT stream with `parse_data`, and the three callbacks.
//!
//! [`Decoder::decode_stream`] makes exactly one `parse_data` call per SE stream (records carry
//! no SE id, so that is the only way to attribute waves to an SE). The callbacks:
//!
//! - `se_data_cb` hands out the whole stream once, then returns 0 with size 0;
//! - `trace_cb` copies every record it keeps into owned Rust values before returning, because
//!   the decoder frees the arrays afterwards: GFXIP (the `events` pointer *is* the number),
//!   INFO, WAVE (looping over `count`), OCCUPANCY. Every other type, known or not, is counted
//!   in [`Decoded::ignored_records`] and otherwise ignored;
//! - `isa_cb` answers from an [`Isa`] with the decoder's size protocol.
//!
//! No panic leaves a callback: each body runs under `catch_unwind`, a panic is recorded in
//! [`Decoded::callback_failures`] and the callback returns an error status instead.
//!
//! The callbacks assume what the decoder does: it calls them synchronously, on the thread that
//! called `parse_data`, and never after `parse_data` returns.

use crate::Error;
use crate::abi::{
    DecoderInfo, DecoderStatus, Pc, RawInst, RawOccupancy, RawWave, RawWaveState, record_type,
};
use crate::library::Decoder;
use core::cell::{Cell, RefCell};
use core::ffi::{c_char, c_void};
use core::fmt;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One instruction's disassembly, as the decoder needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The instruction text, e.g. `s_load_dwordx2 s[0:1], s[4:5], 0x0`.
    pub text: String,
    /// Its length in bytes; the decoder's next pc is `addr + size`.
    pub size: u64,
}

/// Answers the decoder's `isa_cb`: the instruction at a pc, or `None` for a pc that is not an
/// instruction this source knows (the decoder does ask about such pcs).
pub trait Isa {
    /// The instruction at `pc`.
    fn instruction(&self, pc: Pc) -> Option<Instruction>;
}

impl<F: Fn(Pc) -> Option<Instruction>> Isa for F {
    fn instruction(&self, pc: Pc) -> Option<Instruction> {
        self(pc)
    }
}

/// An occupancy event (an owned copy of `occupancy_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// The kernel's pc.
    pub pc: Pc,
    /// Shader-clock time.
    pub time: u64,
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot.
    pub slot: u8,
    /// True when a wave started, false when it ended.
    pub start: bool,
}

impl From<RawOccupancy> for Occupancy {
    fn from(raw: RawOccupancy) -> Self {
        Self {
            pc: raw.pc,
            time: raw.time,
            cu: raw.cu,
            simd: raw.simd,
            slot: raw.slot,
            start: raw.start(),
        }
    }
}

/// One segment of a wave's state timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveState {
    /// One of [`crate::abi::wave_state`]'s values, or a newer one.
    pub kind: i32,
    /// Duration in shader clocks.
    pub duration: i32,
}

impl From<RawWaveState> for WaveState {
    fn from(raw: RawWaveState) -> Self {
        Self {
            kind: raw.kind,
            duration: raw.duration,
        }
    }
}

/// One executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    /// One of [`crate::abi::category`]'s values.
    pub category: u8,
    /// Stall cycles before issue (24 bits).
    pub stall: u32,
    /// Latency in shader clocks.
    pub duration: i32,
    /// Issue time in shader clocks.
    pub time: i64,
    /// Where it is; `{0, 0}` when the decoder could not stitch it.
    pub pc: Pc,
}

impl From<RawInst> for Inst {
    fn from(raw: RawInst) -> Self {
        Self {
            category: raw.category(),
            stall: raw.stall(),
            duration: raw.duration,
            time: raw.time,
            pc: raw.pc,
        }
    }
}

/// One wave: an owned copy of `wave_t` and both of its arrays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wave {
    /// Compute unit.
    pub cu: u8,
    /// SIMD.
    pub simd: u8,
    /// Wave slot (`wave_t::wave_id`).
    pub slot: u8,
    /// Context save/restores during the wave (non-zero ones are warned about).
    pub contexts: u8,
    /// First shader-clock time.
    pub begin_time: i64,
    /// Last shader-clock time.
    pub end_time: i64,
    /// State timeline.
    pub timeline: Vec<WaveState>,
    /// Executed instructions.
    pub instructions: Vec<Inst>,
}

/// An INFO record and the decoder's text for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// The info code.
    pub info: DecoderInfo,
    /// `get_info_string`'s text, `None` if it returned NULL.
    pub text: Option<String>,
}

/// Everything one `parse_data` call produced.
#[derive(Clone, PartialEq, Eq)]
pub struct Decoded {
    /// What `parse_data` returned.
    pub status: DecoderStatus,
    /// The gfx IP major version from the GFXIP record, if one arrived.
    pub gfxip: Option<u64>,
    /// INFO records, in arrival order.
    pub infos: Vec<Info>,
    /// Waves, in arrival order.
    pub waves: Vec<Wave>,
    /// Occupancy events, in arrival order.
    pub occupancy: Vec<Occupancy>,
    /// How many records of each ignored type arrived (PERFEVENT, DEBUG, SHADERDATA, unknown
    /// types, ...).
    pub ignored_records: BTreeMap<i32, u64>,
    /// How many `isa_cb` questions named a pc the [`Isa`] did not know.
    pub unknown_pcs: u64,
    /// Panics caught in callbacks and records that could not be copied; data from those
    /// callbacks is missing.
    pub callback_failures: Vec<String>,
}

impl Default for Decoded {
    fn default() -> Self {
        Self {
            status: DecoderStatus::SUCCESS,
            gfxip: None,
            infos: Vec::new(),
            waves: Vec::new(),
            occupancy: Vec::new(),
            ignored_records: BTreeMap::new(),
            unknown_pcs: 0,
            callback_failures: Vec::new(),
        }
    }
}

impl fmt::Debug for Decoded {
    /// A summary: the records themselves would swamp any log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoded")
            .field("status", &self.status)
            .field("gfxip", &self.gfxip)
            .field("infos", &self.infos)
            .field("waves", &self.waves.len())
            .field("occupancy", &self.occupancy.len())
            .field("ignored_records", &self.ignored_records)
            .field("unknown_pcs", &self.unknown_pcs)
            .field("callback_failures", &self.callback_failures)
            .finish()
    }
}

/// The state the three callbacks share during one `parse_data` call; its address is the
/// decoder's `void* ud`.
pub(crate) struct Session<'a> {
    stream: &'a [u8],
    handed_out: Cell<bool>,
    isa: &'a dyn Isa,
    unknown_pcs: Cell<u64>,
    decoded: RefCell<Decoded>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(stream: &'a [u8], isa: &'a dyn Isa) -> Self {
        Self {
            stream,
            handed_out: Cell::new(false),
            isa,
            unknown_pcs: Cell::new(0),
            decoded: RefCell::new(Decoded::default()),
        }
    }

    fn as_user_data(&self) -> *mut c_void {
        core::ptr::from_ref(self).cast_mut().cast()
    }

    fn fail(&self, message: String) {
        tracing::error!(%message, "trace decoder callback failed");
        if let Ok(mut d) = self.decoded.try_borrow_mut() {
            d.callback_failures.push(message);
        }
    }

    fn finish(self) -> Decoded {
        let mut d = self.decoded.into_inner();
        d.unknown_pcs = self.unknown_pcs.get();
        d
    }
}

/// Recovers the session from the decoder's `ud`.
///
/// # Safety
/// `ud` is null or the pointer [`Session::as_user_data`] produced for a session that is still
/// alive (it lives on `decode_stream`'s stack for the whole `parse_data` call).
unsafe fn session<'s>(ud: *mut c_void) -> Option<&'s Session<'s>> {
    // SAFETY: per this function's contract, a non-null `ud` points to a live `Session`; only
    // shared references are ever made from it.
    unsafe { ud.cast_const().cast::<Session<'s>>().as_ref() }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Copies `count` values of `T` from `ptr`, tolerating any alignment.
///
/// # Safety
/// When `count > 0` and `ptr` is non-null, `ptr` must be readable for `count` values of `T`.
unsafe fn copy_array<T: Copy>(ptr: *const T, count: u64, what: &str) -> Result<Vec<T>, String> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(format!("{what}: null pointer with {count} entries"));
    }
    let n = usize::try_from(count)
        .ok()
        .filter(|n| {
            n.checked_mul(size_of::<T>())
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or_else(|| format!("{what}: impossible entry count {count}"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|e| format!("{what}: cannot hold {count} entries: {e}"))?;
    for i in 0..n {
        // SAFETY: `i < n == count`, and the caller guarantees `count` readable values at `ptr`;
        // `read_unaligned` has no alignment requirement.
        out.push(unsafe { ptr.add(i).read_unaligned() });
    }
    Ok(out)
}

/// `se_data_cb`: the whole stream once, then 0 with size 0.
pub(crate) unsafe extern "C" fn se_data_callback(
    buf: *mut *mut u8,
    size: *mut u64,
    ud: *mut c_void,
) -> u64 {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if buf.is_null() || size.is_null() {
            return 0;
        }
        // SAFETY: `ud` is the session `decode_stream` passed to `parse_data`, alive for the
        // whole call during which the decoder invokes this callback.
        let Some(s) = (unsafe { session(ud) }) else {
            return 0;
        };
        let first = !s.handed_out.replace(true);
        let (ptr, len, more) = if first && !s.stream.is_empty() {
            // The decoder reads the buffer and never writes it (the tool owns it and it only
            // has to stay valid until the next call); the `*mut` is what the C type says.
            (s.stream.as_ptr().cast_mut(), s.stream.len() as u64, 1)
        } else {
            (core::ptr::null_mut(), 0, 0)
        };
        // SAFETY: both out-pointers were checked non-null and point to the decoder's locals.
        unsafe {
            *buf = ptr;
            *size = len;
        }
        more
    }));
    result.unwrap_or_else(|payload| {
        // SAFETY: as above; only a shared reference is made.
        if let Some(s) = unsafe { session(ud) } {
            s.fail(format!("se_data_cb panicked: {}", panic_text(&*payload)));
        }
        if !size.is_null() {
            // SAFETY: checked non-null; the decoder's local.
            unsafe { *size = 0 };
        }
        0
    })
}

/// Handles one record; anything that cannot be copied is recorded as a callback failure.
///
/// # Safety
/// `events` and `count` are what the decoder passed to `trace_cb` for a record of type `kind`,
/// valid for the duration of this call.
unsafe fn handle_record(s: &Session<'_>, kind: i32, events: *mut c_void, count: u64) {
    match kind {
        record_type::GFXIP => {
            // The pointer value is the number; it must never be dereferenced.
            s.decoded.borrow_mut().gfxip = Some(events as usize as u64);
        }
        record_type::INFO => {
            // SAFETY: an INFO record is an array of `count` info_t (C int) values.
            match unsafe { copy_array(events.cast_const().cast::<i32>(), count, "INFO") } {
                Ok(values) => s
                    .decoded
                    .borrow_mut()
                    .infos
                    .extend(values.into_iter().map(|v| Info {
                        info: DecoderInfo(v),
                        text: None,
                    })),
                Err(e) => s.fail(e),
            }
        }
        record_type::OCCUPANCY => {
            // SAFETY: an OCCUPANCY record is an array of `count` occupancy_t.
            match unsafe {
                copy_array(
                    events.cast_const().cast::<RawOccupancy>(),
                    count,
                    "OCCUPANCY",
                )
            } {
                Ok(raw) => s
                    .decoded
                    .borrow_mut()
                    .occupancy
                    .extend(raw.into_iter().map(Occupancy::from)),
                Err(e) => s.fail(e),
            }
        }
        record_type::WAVE => {
            // SAFETY: a WAVE record is an array of `count` wave_t.
            let raw =
                match unsafe { copy_array(events.cast_const().cast::<RawWave>(), count, "WAVE") } {
                    Ok(raw) => raw,
                    Err(e) => return s.fail(e),
                };
            for w in raw {
                // SAFETY: each wave's arrays hold `*_size` entries and are valid during this
                // callback.
                let timeline = unsafe { copy_array(w.timeline, w.timeline_size, "wave timeline") };
                // SAFETY: as above.
                let instructions =
                    unsafe { copy_array(w.instructions, w.instructions_size, "wave instructions") };
                let (timeline, instructions) = match (timeline, instructions) {
                    (Ok(t), Ok(i)) => (t, i),
                    (Err(e), _) | (_, Err(e)) => {
                        s.fail(format!(
                            "wave cu {} simd {} slot {} dropped: {e}",
                            w.cu, w.simd, w.wave_id
                        ));
                        continue;
                    }
                };
                s.decoded.borrow_mut().waves.push(Wave {
                    cu: w.cu,
                    simd: w.simd,
                    slot: w.wave_id,
                    contexts: w.contexts,
                    begin_time: w.begin_time,
                    end_time: w.end_time,
                    timeline: timeline.into_iter().map(WaveState::from).collect(),
                    instructions: instructions.into_iter().map(Inst::from).collect(),
                });
            }
        }
        other => {
            let mut d = s.decoded.borrow_mut();
            let n = d.ignored_records.entry(other).or_insert(0);
            if *n == 0 {
                tracing::debug!(
                    record_type = other,
                    name = record_type::name(other).unwrap_or("unknown"),
                    "ignoring trace decoder records of this type"
                );
            }
            *n += 1;
        }
    }
}

/// `trace_cb`: copies the records this crate keeps.
pub(crate) unsafe extern "C" fn trace_callback(
    kind: i32,
    events: *mut c_void,
    count: u64,
    ud: *mut c_void,
) -> i32 {
    // SAFETY: `ud` is the live session `decode_stream` passed to `parse_data`.
    let Some(s) = (unsafe { session(ud) }) else {
        return DecoderStatus::ERROR_INVALID_ARGUMENT.0;
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the arguments are exactly what the decoder passed for this record.
        unsafe { handle_record(s, kind, events, count) }
    }));
    match result {
        Ok(()) => DecoderStatus::SUCCESS.0,
        Err(payload) => {
            s.fail(format!(
                "trace_cb panicked on a record of type {kind}: {}",
                panic_text(&*payload)
            ));
            DecoderStatus::ERROR.0
        }
    }
}

/// `isa_cb`: the instruction at `pc`, with the size protocol.
///
/// `*size` is the capacity on entry. The needed length is always written back; when it
/// exceeds the capacity the result is OUT_OF_RESOURCES and nothing else is written. Otherwise
/// exactly the text's bytes are copied (no NUL) and `*memory_size` is set to the instruction's
/// byte length. An unknown pc is INVALID_ARGUMENT.
pub(crate) unsafe extern "C" fn isa_callback(
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    pc: Pc,
    ud: *mut c_void,
) -> i32 {
    // SAFETY: `ud` is the live session `decode_stream` passed to `parse_data`.
    let Some(s) = (unsafe { session(ud) }) else {
        return DecoderStatus::ERROR_INVALID_ARGUMENT.0;
    };
    if size.is_null() || memory_size.is_null() {
        return DecoderStatus::ERROR_INVALID_ARGUMENT.0;
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        let Some(inst) = s.isa.instruction(pc) else {
            s.unknown_pcs.set(s.unknown_pcs.get() + 1);
            return DecoderStatus::ERROR_INVALID_ARGUMENT;
        };
        let needed = inst.text.len() as u64;
        // SAFETY: `size` was checked non-null and points to the decoder's capacity variable.
        let capacity = unsafe { size.replace(needed) };
        if needed > capacity {
            return DecoderStatus::ERROR_OUT_OF_RESOURCES;
        }
        if needed > 0 {
            if text.is_null() {
                return DecoderStatus::ERROR_INVALID_ARGUMENT;
            }
            // SAFETY: the decoder's buffer holds `capacity >= needed` bytes and cannot overlap
            // the Rust-owned string.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    inst.text.as_ptr(),
                    text.cast::<u8>(),
                    inst.text.len(),
                );
            }
        }
        // SAFETY: checked non-null; the decoder's variable.
        unsafe { *memory_size = inst.size };
        DecoderStatus::SUCCESS
    }));
    match result {
        Ok(status) => status.0,
        Err(payload) => {
            s.fail(format!(
                "isa_cb panicked for pc {{0x{:x}, {}}}: {}",
                pc.addr,
                pc.marker_id,
                panic_text(&*payload)
            ));
            DecoderStatus::ERROR.0
        }
    }
}

/// Held for the duration of every `parse_data` call.
static PARSE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Decoder {
    /// Decodes one shader engine's stream with a single `parse_data` call, answering `isa_cb`
    /// from `isa`. Calls from several threads are serialised.
    ///
    /// # Errors
    /// [`Error::Decoder`] when `parse_data` returns anything but SUCCESS; the records received
    /// before that are in the error ([`Error::partial`]). Callback failures do not make this
    /// fail; they are in [`Decoded::callback_failures`].
    pub fn decode_stream(&self, se_stream: &[u8], isa: &dyn Isa) -> Result<Decoded, Error> {
        let session = Session::new(se_stream, isa);
        // The decoder's thread safety is undocumented; serialise every parse_data call in the
        // process (all Decoders share one loaded copy of the library).
        let _serial = PARSE_LOCK
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: `parse_data` is the V1 entry point (guaranteed by whoever built `self`); the
        // three callbacks have the V1 signatures, and `ud` points to `session`, which outlives
        // the call. The decoder invokes the callbacks only during this call, on this thread.
        let ret = unsafe {
            (self.fns.parse_data)(
                se_data_callback,
                trace_callback,
                isa_callback,
                session.as_user_data(),
            )
        };
        let mut decoded = session.finish();
        decoded.status = DecoderStatus(ret);
        for info in &mut decoded.infos {
            info.text = self.info_string(info.info);
            tracing::warn!(
                info = info.info.0,
                text = info.text.as_deref().unwrap_or("?"),
                "trace decoder reported"
            );
        }
        if decoded.unknown_pcs > 0 {
            tracing::debug!(
                count = decoded.unknown_pcs,
                "the decoder asked about pcs outside every known code object"
            );
        }
        if decoded.status.is_success() {
            return Ok(decoded);
        }
        let name = self
            .status_string(decoded.status)
            .or_else(|| decoded.status.name().map(str::to_owned))
            .unwrap_or_else(|| "STATUS_UNKNOWN".to_owned());
        tracing::warn!(
            status = decoded.status.0,
            %name,
            waves = decoded.waves.len(),
            "trace decoder failed"
        );
        Err(Error::Decoder {
            status: decoded.status,
            name,
            partial: Box::new(decoded),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{
        GetStringFn, IsaCallback, ParseDataFn, SeDataCallback, TraceCallback, category,
    };
    use crate::library::DecoderFns;
    use std::cell::RefCell as StdRefCell;

    fn isa_table(pc: Pc) -> Option<Instruction> {
        match (pc.marker_id, pc.addr) {
            (1, 0x100) => Some(Instruction {
                text: "s_mov_b32 s0, s1".into(),
                size: 4,
            }),
            (1, 0x104) => Some(Instruction {
                text: "v_add_f32 v0, v1, v2 ; a comment long enough to exceed sixty-four bytes"
                    .into(),
                size: 8,
            }),
            (1, 0x10c) => Some(Instruction {
                text: String::new(),
                size: 4,
            }),
            _ => None,
        }
    }

    fn call_isa(s: &Session<'_>, buf: &mut [u8], capacity: u64, pc: Pc) -> (i32, u64, u64) {
        let mut size = capacity;
        let mut memory_size = 0xdead_u64;
        // SAFETY: `buf` holds at least `capacity` bytes (asserted by callers); the session
        // outlives the call.
        let status = unsafe {
            isa_callback(
                buf.as_mut_ptr().cast(),
                &mut memory_size,
                &mut size,
                pc,
                s.as_user_data(),
            )
        };
        (status, size, memory_size)
    }

    #[test]
    fn isa_cb_reports_needed_size_without_writing_when_too_small() {
        let s = Session::new(&[], &isa_table);
        let pc = Pc {
            addr: 0x100,
            marker_id: 1,
        };
        let mut buf = [0xaa_u8; 64];
        let (status, size, mem) = call_isa(&s, &mut buf, 3, pc);
        assert_eq!(status, DecoderStatus::ERROR_OUT_OF_RESOURCES.0);
        assert_eq!(size, "s_mov_b32 s0, s1".len() as u64);
        assert_eq!(mem, 0xdead, "memory_size untouched");
        assert!(buf.iter().all(|&b| b == 0xaa), "buffer untouched");

        // Exactly the needed capacity: exact bytes, no NUL, memory_size set.
        let (status, size, mem) = call_isa(&s, &mut buf, 16, pc);
        assert_eq!(status, DecoderStatus::SUCCESS.0);
        assert_eq!(size, 16);
        assert_eq!(mem, 4);
        assert_eq!(&buf[..16], b"s_mov_b32 s0, s1");
        assert!(
            buf[16..].iter().all(|&b| b == 0xaa),
            "no NUL or extra bytes"
        );
    }

    #[test]
    fn isa_cb_retry_protocol_like_the_real_decoder() {
        let s = Session::new(&[], &isa_table);
        let pc = Pc {
            addr: 0x104,
            marker_id: 1,
        };
        let mut small = [0u8; 64];
        let (status, needed, _) = call_isa(&s, &mut small, 64, pc);
        assert_eq!(status, DecoderStatus::ERROR_OUT_OF_RESOURCES.0);
        assert!(needed > 64);
        let mut big = vec![0u8; needed as usize];
        let (status, size, mem) = call_isa(&s, &mut big, needed, pc);
        assert_eq!(status, DecoderStatus::SUCCESS.0);
        assert_eq!(size, needed);
        assert_eq!(mem, 8);
        assert_eq!(big, isa_table(pc).unwrap().text.into_bytes());
    }

    #[test]
    fn isa_cb_unknown_pc_and_bad_arguments() {
        let s = Session::new(&[], &isa_table);
        let mut buf = [0x11_u8; 8];
        let (status, size, mem) = call_isa(
            &s,
            &mut buf,
            8,
            Pc {
                addr: 0x999,
                marker_id: 1,
            },
        );
        assert_eq!(status, DecoderStatus::ERROR_INVALID_ARGUMENT.0);
        assert_eq!((size, mem), (8, 0xdead), "nothing written");
        assert!(buf.iter().all(|&b| b == 0x11));
        assert_eq!(s.unknown_pcs.get(), 1);

        // Empty text is fine even with a null buffer.
        let mut size = 0u64;
        let mut mem = 0u64;
        // SAFETY: null text with zero capacity; valid out-pointers; live session.
        let status = unsafe {
            isa_callback(
                core::ptr::null_mut(),
                &mut mem,
                &mut size,
                Pc {
                    addr: 0x10c,
                    marker_id: 1,
                },
                s.as_user_data(),
            )
        };
        assert_eq!(status, DecoderStatus::SUCCESS.0);
        assert_eq!((size, mem), (0, 4));

        // Null out-pointers and null ud are rejected, not dereferenced.
        // SAFETY: the callback checks for null before any access.
        let status = unsafe {
            isa_callback(
                buf.as_mut_ptr().cast(),
                core::ptr::null_mut(),
                &mut size,
                Pc::default(),
                s.as_user_data(),
            )
        };
        assert_eq!(status, DecoderStatus::ERROR_INVALID_ARGUMENT.0);
        // SAFETY: as above.
        let status = unsafe {
            isa_callback(
                buf.as_mut_ptr().cast(),
                &mut mem,
                &mut size,
                Pc::default(),
                core::ptr::null_mut(),
            )
        };
        assert_eq!(status, DecoderStatus::ERROR_INVALID_ARGUMENT.0);
    }

    #[test]
    fn isa_cb_panic_is_caught_and_recorded() {
        let panicking = |_: Pc| -> Option<Instruction> { panic!("disassembler exploded") };
        let s = Session::new(&[], &panicking);
        let mut buf = [0u8; 8];
        let (status, _, _) = call_isa(&s, &mut buf, 8, Pc::default());
        assert_eq!(status, DecoderStatus::ERROR.0);
        let d = s.finish();
        assert_eq!(d.callback_failures.len(), 1);
        assert!(d.callback_failures[0].contains("disassembler exploded"));
    }

    #[test]
    fn se_data_cb_hands_out_the_whole_buffer_once() {
        let data = [1u8, 2, 3, 4, 5];
        let s = Session::new(&data, &isa_table);
        let mut buf: *mut u8 = core::ptr::null_mut();
        let mut size = 0u64;
        // SAFETY: valid out-pointers; live session.
        let more = unsafe { se_data_callback(&mut buf, &mut size, s.as_user_data()) };
        assert_eq!(more, 1);
        assert_eq!(size, 5);
        assert_eq!(buf.cast_const(), data.as_ptr());
        // SAFETY: as above.
        let more = unsafe { se_data_callback(&mut buf, &mut size, s.as_user_data()) };
        assert_eq!((more, size), (0, 0));
        assert!(buf.is_null());

        let empty = Session::new(&[], &isa_table);
        // SAFETY: as above.
        let more = unsafe { se_data_callback(&mut buf, &mut size, empty.as_user_data()) };
        assert_eq!((more, size), (0, 0), "an empty stream ends at once");
        // SAFETY: null out-pointers are checked before use.
        let more = unsafe { se_data_callback(core::ptr::null_mut(), &mut size, s.as_user_data()) };
        assert_eq!(more, 0);
    }

    // ---- A fake decoder built from Rust functions ----

    #[derive(Default)]
    struct Observed {
        chunks: Vec<Vec<u8>>,
        second_call: Option<(u64, u64)>,
        isa_answers: Vec<(i32, String, u64)>,
    }

    thread_local! {
        static OBSERVED: StdRefCell<Observed> = StdRefCell::new(Observed::default());
        static FINAL_STATUS: Cell<i32> = const { Cell::new(0) };
    }

    unsafe extern "C" fn fake_parse(
        se: SeDataCallback,
        trace: TraceCallback,
        isa: IsaCallback,
        ud: *mut c_void,
    ) -> i32 {
        let mut buf: *mut u8 = core::ptr::null_mut();
        let mut size = 0u64;
        // SAFETY: the fake calls the callbacks exactly as the real decoder does.
        unsafe {
            let more = se(&mut buf, &mut size, ud);
            if more != 0 && size != 0 && !buf.is_null() {
                let chunk = core::slice::from_raw_parts(buf, size as usize).to_vec();
                OBSERVED.with(|o| o.borrow_mut().chunks.push(chunk));
                let mut size2 = 77u64;
                let ret2 = se(&mut buf, &mut size2, ud);
                OBSERVED.with(|o| o.borrow_mut().second_call = Some((ret2, size2)));
            }
            trace(record_type::GFXIP, 11usize as *mut c_void, 0, ud);
            let info = [DecoderInfo::STITCH_INCOMPLETE.0];
            trace(record_type::INFO, info.as_ptr().cast_mut().cast(), 1, ud);

            let timeline = [
                RawWaveState {
                    kind: 2,
                    duration: 10,
                },
                RawWaveState {
                    kind: 3,
                    duration: 5,
                },
            ];
            let insts = [RawInst {
                bits: (7 << 8) | u32::from(category::SALU),
                duration: 4,
                time: 105,
                pc: Pc {
                    addr: 0x100,
                    marker_id: 1,
                },
            }];
            let waves = [
                RawWave {
                    cu: 1,
                    simd: 2,
                    wave_id: 3,
                    contexts: 0,
                    reserved: [0; 3],
                    begin_time: 100,
                    end_time: 115,
                    timeline_size: 2,
                    instructions_size: 1,
                    timeline: timeline.as_ptr(),
                    instructions: insts.as_ptr(),
                },
                RawWave {
                    cu: 1,
                    simd: 0,
                    wave_id: 0,
                    contexts: 1,
                    reserved: [0; 3],
                    begin_time: 200,
                    end_time: 201,
                    timeline_size: 0,
                    instructions_size: 0,
                    timeline: core::ptr::null(),
                    instructions: core::ptr::null(),
                },
            ];
            trace(record_type::WAVE, waves.as_ptr().cast_mut().cast(), 2, ud);
            let occ = [RawOccupancy {
                pc: Pc {
                    addr: 0x100,
                    marker_id: 1,
                },
                time: 99,
                reserved: 0,
                cu: 1,
                simd: 2,
                slot: 3,
                flags: 0xffff_ff01,
            }];
            trace(
                record_type::OCCUPANCY,
                occ.as_ptr().cast_mut().cast(),
                1,
                ud,
            );
            // Unknown and ignored types, with pointers that must not be touched.
            trace(42, 0x10 as *mut c_void, 9, ud);
            trace(record_type::RT_FREQUENCY, 0x20 as *mut c_void, 1, ud);
            trace(record_type::RT_FREQUENCY, 0x20 as *mut c_void, 1, ud);

            for addr in [0x100_u64, 0x104, 0x500] {
                let mut text = [0u8; 64];
                let mut cap = 64u64;
                let mut mem = 0u64;
                let pc = Pc { addr, marker_id: 1 };
                let mut st = isa(text.as_mut_ptr().cast(), &mut mem, &mut cap, pc, ud);
                let mut got = String::from_utf8_lossy(&text[..cap.min(64) as usize]).into_owned();
                if st == DecoderStatus::ERROR_OUT_OF_RESOURCES.0 {
                    let mut big = vec![0u8; cap as usize];
                    st = isa(big.as_mut_ptr().cast(), &mut mem, &mut cap, pc, ud);
                    got = String::from_utf8_lossy(&big[..cap as usize]).into_owned();
                }
                OBSERVED.with(|o| o.borrow_mut().isa_answers.push((st, got, mem)));
            }
        }
        FINAL_STATUS.with(Cell::get)
    }

    unsafe extern "C" fn fake_status_string(status: i32) -> *const c_char {
        match status {
            4 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA".as_ptr(),
            _ => c"STATUS_UNKNOWN".as_ptr(),
        }
    }

    unsafe extern "C" fn fake_info_string(info: i32) -> *const c_char {
        match info {
            2 => c"Stitch Incomplete: The parser could not fully match a trace token to the underlying disassembly.".as_ptr(),
            _ => core::ptr::null(),
        }
    }

    fn fake_decoder() -> Decoder {
        let fns = DecoderFns {
            parse_data: fake_parse as ParseDataFn,
            get_info_string: fake_info_string as GetStringFn,
            get_status_string: fake_status_string as GetStringFn,
        };
        // SAFETY: the fakes follow the V1 contract.
        unsafe { Decoder::from_fns(fns, "fake-decoder") }
    }

    #[test]
    fn decode_stream_copies_every_kept_record() {
        OBSERVED.with(|o| *o.borrow_mut() = Observed::default());
        FINAL_STATUS.with(|s| s.set(0));
        let stream = b"\0ROCsome sqtt bytes".to_vec();
        let d = fake_decoder().decode_stream(&stream, &isa_table).unwrap();

        OBSERVED.with(|o| {
            let o = o.borrow();
            assert_eq!(
                o.chunks,
                core::slice::from_ref(&stream),
                "one chunk: the whole stream"
            );
            assert_eq!(o.second_call, Some((0, 0)), "then 0 with size 0");
            assert_eq!(o.isa_answers[0], (0, "s_mov_b32 s0, s1".into(), 4));
            assert_eq!(
                o.isa_answers[1].0, 0,
                "retry with the needed size succeeded"
            );
            assert_eq!(o.isa_answers[1].2, 8);
            assert_eq!(o.isa_answers[2].0, DecoderStatus::ERROR_INVALID_ARGUMENT.0);
        });

        assert_eq!(d.status, DecoderStatus::SUCCESS);
        assert_eq!(d.gfxip, Some(11));
        assert_eq!(d.infos.len(), 1);
        assert_eq!(d.infos[0].info, DecoderInfo::STITCH_INCOMPLETE);
        assert!(
            d.infos[0]
                .text
                .as_deref()
                .unwrap()
                .starts_with("Stitch Incomplete")
        );
        assert_eq!(d.waves.len(), 2, "both waves of one record");
        let w = &d.waves[0];
        assert_eq!((w.cu, w.simd, w.slot, w.contexts), (1, 2, 3, 0));
        assert_eq!((w.begin_time, w.end_time), (100, 115));
        assert_eq!(
            w.timeline,
            [
                WaveState {
                    kind: 2,
                    duration: 10
                },
                WaveState {
                    kind: 3,
                    duration: 5
                }
            ]
        );
        assert_eq!(
            w.instructions,
            [Inst {
                category: category::SALU,
                stall: 7,
                duration: 4,
                time: 105,
                pc: Pc {
                    addr: 0x100,
                    marker_id: 1
                }
            }]
        );
        assert!(d.waves[1].timeline.is_empty() && d.waves[1].instructions.is_empty());
        assert_eq!(d.waves[1].contexts, 1);
        assert_eq!(d.occupancy.len(), 1);
        assert!(d.occupancy[0].start, "only bit 0 is start");
        assert_eq!(d.occupancy[0].slot, 3);
        assert_eq!(
            d.ignored_records,
            BTreeMap::from([(42, 1), (record_type::RT_FREQUENCY, 2)])
        );
        assert_eq!(d.unknown_pcs, 1);
        assert!(d.callback_failures.is_empty());
    }

    #[test]
    fn failed_parse_keeps_the_records_received() {
        OBSERVED.with(|o| *o.borrow_mut() = Observed::default());
        FINAL_STATUS.with(|s| s.set(DecoderStatus::ERROR_INVALID_SHADER_DATA.0));
        let err = fake_decoder()
            .decode_stream(b"junk", &isa_table)
            .unwrap_err();
        let msg = err.to_string();
        match &err {
            Error::Decoder {
                status,
                name,
                partial,
            } => {
                assert_eq!(*status, DecoderStatus::ERROR_INVALID_SHADER_DATA);
                assert_eq!(
                    name,
                    "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA"
                );
                assert_eq!(partial.waves.len(), 2);
                assert_eq!(partial.status, *status);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(msg.contains("status 4"), "{msg}");
        assert!(msg.contains("after 2 wave(s)"), "{msg}");
        FINAL_STATUS.with(|s| s.set(0));
    }

    #[test]
    fn trace_cb_rejects_bad_records_without_crashing() {
        let s = Session::new(&[], &isa_table);
        // SAFETY: null pointers with non-zero counts are detected before any read.
        unsafe {
            assert_eq!(
                trace_callback(
                    record_type::WAVE,
                    core::ptr::null_mut(),
                    3,
                    s.as_user_data()
                ),
                0
            );
            assert_eq!(
                trace_callback(
                    record_type::INFO,
                    core::ptr::null_mut(),
                    1,
                    s.as_user_data()
                ),
                0
            );
            assert_eq!(
                trace_callback(
                    record_type::OCCUPANCY,
                    0x8 as *mut c_void,
                    u64::MAX,
                    s.as_user_data()
                ),
                0
            );
            assert_eq!(
                trace_callback(
                    record_type::WAVE,
                    core::ptr::null_mut(),
                    0,
                    s.as_user_data()
                ),
                0
            );
            assert_eq!(
                trace_callback(
                    record_type::GFXIP,
                    9 as *mut c_void,
                    0,
                    core::ptr::null_mut()
                ),
                DecoderStatus::ERROR_INVALID_ARGUMENT.0
            );
        }
        // A wave whose instruction pointer is null but whose size is not.
        let bad = [RawWave {
            cu: 0,
            simd: 0,
            wave_id: 0,
            contexts: 0,
            reserved: [0; 3],
            begin_time: 0,
            end_time: 0,
            timeline_size: 0,
            instructions_size: 5,
            timeline: core::ptr::null(),
            instructions: core::ptr::null(),
        }];
        // SAFETY: `bad` is a valid one-element wave_t array.
        unsafe {
            trace_callback(
                record_type::WAVE,
                bad.as_ptr().cast_mut().cast(),
                1,
                s.as_user_data(),
            );
        }
        let d = s.finish();
        assert!(d.waves.is_empty());
        assert_eq!(d.callback_failures.len(), 4, "{:?}", d.callback_failures);
        assert!(d.callback_failures[3].contains("dropped"));
    }
}
