//! The gfx11 thread-trace (SQTT) PM4 command buffers, as aqlprofile's gfx11 thread-trace builder
//! lays them out, the split of the trace buffer over shader engines, the code-object marker
//! words the decoder names PCs by, and the reading of the control block after the trace.
//!
//! [`build_trace`] makes two buffers for one traced dispatch:
//!
//! * **begin** — broadcast, `SQ_THREAD_TRACE_STATUS` = 0; per shader engine (selected through
//!   `GRBM_GFX_INDEX`, shader array 0): `BUF0_SIZE`, `BUF0_BASE`, `MASK`, `TOKEN_MASK` (the
//!   detail tokens for a traced engine, none for a masked one), `CTRL` on; for traced engines
//!   `COMPUTE_THREAD_TRACE_ENABLE` = 1; broadcast, wait for idle; then `SQ_THREAD_TRACE_USERDATA_2`
//!   ← `'\0ROC'` (0x434F5200), 524801, and one marker per loaded code object ([`marker_words`]);
//!   last, one `WRITE_DATA` of [`PROOF_WORD`](crate::pm4::PROOF_WORD) into the control block's
//!   slot after the engines' records ([`TraceBuffers::proof_offset`]): the proof that the
//!   trace's packets ran, read after the dispatch with the records ([`packets_ran`]), as every
//!   counter pass's start buffer carries it;
//! * **end** — broadcast, wait for idle, `COMPUTE_THREAD_TRACE_ENABLE` = 0; per shader engine:
//!   wait until `STATUS.FINISH_PENDING` is 0, `CTRL` off, wait until `STATUS.BUSY` is 0, copy
//!   `STATUS`, `DROPPED_CNTR` and `WPTR` into the engine's 32-byte control record; broadcast, and
//!   make the copies visible (ACQUIRE_MEM).
//!
//! Register addresses and field positions are interoperability facts (verified-facts §1, the
//! project's `abi/gfx11-registers.tsv`). Where no fact sheet gives a value the choice is this
//! module's and is named in [`reg`] (the `CTRL` value's watermarks and timer bits, the position
//! of the user-data bit in `REG_INCLUDE`, the 32-byte unit of `WPTR`); the simulated GPU reads
//! the same choices.

use crate::pm4::{self, PROOF_WORD, Writer, reg as pmc};

/// Thread-trace registers (absolute dword addresses) and field values.
pub mod reg {
    /// `SQ_THREAD_TRACE_BUF0_BASE`: the engine's buffer address >> 12 (low 32 bits).
    pub const BUF0_BASE: u32 = 0xD9E8;
    /// `SQ_THREAD_TRACE_BUF0_SIZE`: `BASE_HI` [3:0] (address bits 44..48), `SIZE` [29:8] (bytes
    /// >> 12).
    pub const BUF0_SIZE: u32 = 0xD9E9;
    /// `SQ_THREAD_TRACE_CTRL`.
    pub const CTRL: u32 = 0xD9EC;
    /// `SQ_THREAD_TRACE_MASK`.
    pub const MASK: u32 = 0xD9ED;
    /// `SQ_THREAD_TRACE_TOKEN_MASK`.
    pub const TOKEN_MASK: u32 = 0xD9EE;
    /// `SQ_THREAD_TRACE_WPTR`: `OFFSET` [28:0].
    pub const WPTR: u32 = 0xD9EF;
    /// `SQ_THREAD_TRACE_STATUS`: `FINISH_PENDING` [11:0], `WRITE_ERROR` b24, `BUSY` b25.
    pub const STATUS: u32 = 0xD9F4;
    /// `SQ_THREAD_TRACE_DROPPED_CNTR`.
    pub const DROPPED_CNTR: u32 = 0xD9FA;
    /// `SQ_THREAD_TRACE_USERDATA_2`: each write is a user-data token in the stream.
    pub const USERDATA_2: u32 = 0xC342;
    /// `COMPUTE_THREAD_TRACE_ENABLE` (SH).
    pub const COMPUTE_THREAD_TRACE_ENABLE: u32 = 0x2E1E;

    /// `STATUS.FINISH_PENDING`.
    pub const STATUS_FINISH_PENDING: u32 = 0xFFF;
    /// `STATUS.WRITE_ERROR`.
    pub const STATUS_WRITE_ERROR: u32 = 1 << 24;
    /// `STATUS.BUSY`.
    pub const STATUS_BUSY: u32 = 1 << 25;
    /// `WPTR.OFFSET`.
    pub const WPTR_MASK: u32 = 0x1FFF_FFFF;
    /// Bytes per `WPTR` unit (this module's choice, read the same by the simulated GPU).
    pub const WPTR_UNIT: u64 = 32;

    /// `CTRL` on: `MODE` 1, `HIWATER` 5, `SPI_STALL_EN`, `SQ_STALL_EN`, `UTIL_TIMER`, `RT_FREQ`
    /// 2, `AUTO_FLUSH_MODE` (the watermark and timer values are this module's choice).
    pub const CTRL_ON: u32 =
        1 | (5 << 6) | (1 << 11) | (1 << 12) | (1 << 13) | (2 << 16) | (1 << 29);
    /// `CTRL` off: `MODE` 0.
    pub const CTRL_OFF: u32 = 0;

    /// Token kinds kept in detail mode (gfx11 `TOKEN_EXCLUDE` bits): VALU, WVRDY, WAVE, REG,
    /// IMMED, INST.
    pub const TOKENS_DETAIL: u32 = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8);
    /// Token kinds kept in occupancy mode: WAVE, REG.
    pub const TOKENS_OCCUPANCY: u32 = (1 << 4) | (1 << 5);
    /// Every token kind (`TOKEN_EXCLUDE` is 11 bits).
    pub const TOKENS_ALL: u32 = 0x7FF;
    /// `REG_INCLUDE` [23:16]: the user-data registers (bit 0 of the field: this module's
    /// choice; no fact sheet gives the position).
    pub const REG_INCLUDE_USERDATA: u32 = 1 << 16;
    /// `REG_EXCLUDE` [28:26] = 3.
    pub const REG_EXCLUDE: u32 = 3 << 26;
    /// `MASK.WTYPE_INCLUDE` [16:10] = compute (1 << 6).
    pub const WTYPE_COMPUTE: u32 = (1 << 6) << 10;
    /// `MASK.EXCLUDE_NONDETAIL_SHADERDATA` b17.
    pub const EXCLUDE_NONDETAIL_SHADERDATA: u32 = 1 << 17;

    /// The first two user-data words of a trace: `'\0ROC'`, then 524801.
    pub const STREAM_MAGIC: [u32; 2] = [0x434F_5200, 524_801];
}

/// What to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParams {
    /// The compute unit (WGP) traced in detail, 0..=15.
    pub target_cu: u32,
    /// The shader engines traced.
    pub se_mask: u64,
    /// The SIMD traced (its id on gfx10+), 0..=15 (only the low 2 bits reach `SIMD_SEL`).
    pub simd_select: u32,
    /// The trace buffer's size in bytes.
    pub buffer_size: u64,
    /// Occupancy mode (wave starts and ends only) instead of detail.
    pub occupancy_only: bool,
}

/// One shader engine's share of the trace buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeBuffer {
    /// Shader engine.
    pub se: u32,
    /// Byte offset from the buffer's start.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// Whether the engine is traced (masked engines get 4 KiB and no tokens).
    pub traced: bool,
}

/// Errors of building a trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The parameters cannot be programmed.
    #[error("thread trace: {0}")]
    Invalid(String),
}

/// Bytes of a masked engine's buffer, and the least an engine traced gets.
const MASKED_SE_BYTES: u64 = 4096;
const MIN_SE_BYTES: u64 = 128 << 10;
/// gfx11 takes less than this per engine.
const MAX_SE_BYTES: u64 = 512 << 20;
/// Bytes of one engine's control record: `u32 status, dropped, wptr, reserved; u64 clk_start,
/// clk_end`.
pub const CONTROL_RECORD_BYTES: u64 = 32;
/// Bytes of the control block's last slot, after the engines' records, where the begin buffer
/// writes [`PROOF_WORD`](crate::pm4::PROOF_WORD) (4 used, 8 kept for alignment).
pub const PROOF_SLOT_BYTES: u64 = 8;

/// Bytes of the control block of a trace over `se_count` engines: one record per engine, then
/// the proof's slot.
pub const fn control_block_bytes(se_count: u32) -> u64 {
    se_count as u64 * CONTROL_RECORD_BYTES + PROOF_SLOT_BYTES
}

/// aqlprofile's split of `buffer_size` over `se_count` engines: the traced ones share what the
/// 64 − traced masked slots of 4 KiB leave, rounded down to 4 KiB; masked ones get 4 KiB; the
/// parts follow each other in engine order.
pub fn split(buffer_size: u64, se_count: u32, se_mask: u64) -> Result<Vec<SeBuffer>, TraceError> {
    if se_count == 0 || se_count > 64 {
        return Err(TraceError::Invalid(format!(
            "{se_count} shader engines (1 to 64 can be traced)"
        )));
    }
    let mask = se_mask & (u64::MAX >> (64 - se_count));
    let traced = u64::from(mask.count_ones());
    if traced == 0 {
        return Err(TraceError::Invalid(format!(
            "shader-engine mask {se_mask:#x} selects none of the {se_count} engines"
        )));
    }
    let step = (buffer_size.saturating_sub((64 - traced) * MASKED_SE_BYTES) / traced) & !0xFFF;
    if step < MIN_SE_BYTES {
        return Err(TraceError::Invalid(format!(
            "a {buffer_size:#x}-byte buffer leaves {step} bytes per traced shader engine, below 128 KiB"
        )));
    }
    if step >= MAX_SE_BYTES {
        return Err(TraceError::Invalid(format!(
            "a {buffer_size:#x}-byte buffer gives {step:#x} bytes per shader engine; gfx11 takes less than 512 MiB"
        )));
    }
    let mut offset = 0;
    Ok((0..se_count)
        .map(|se| {
            let traced = mask & (1 << se) != 0;
            let size = if traced { step } else { MASKED_SE_BYTES };
            let b = SeBuffer {
                se,
                offset,
                size,
                traced,
            };
            offset += size;
            b
        })
        .collect())
}

/// A code object the decoder is told about through the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeObjectMarker {
    /// The code object's load id.
    pub id: u64,
    /// Its load address.
    pub addr: u64,
    /// Its loaded size.
    pub size: u64,
    /// An unload (else a load).
    pub unload: bool,
    /// Loaded before the trace started.
    pub from_start: bool,
}

/// Marker field types (the `type` of `4 | (type << 8)`).
pub mod marker {
    /// Address, low 32 bits.
    pub const ADDR_LO: u32 = 0;
    /// Address, high 32 bits.
    pub const ADDR_HI: u32 = 1;
    /// Size, low 32 bits.
    pub const SIZE_LO: u32 = 2;
    /// Size, high 32 bits.
    pub const SIZE_HI: u32 = 3;
    /// Id, low 32 bits (only for ids ≥ 2^30).
    pub const ID_LO: u32 = 4;
    /// Id, high 32 bits (only for ids ≥ 2^30).
    pub const ID_HI: u32 = 5;
    /// `{isUnload:1, bFromStart:1, legacy_id:30}`.
    pub const TAIL: u32 = 6;
}

/// The user-data words of one marker: per field `4 | (type << 8)` then its value, in the order
/// ADDR_LO, ADDR_HI, SIZE_LO, SIZE_HI, [ID_LO, ID_HI when the id needs more than 30 bits],
/// TAIL.
pub fn marker_words(m: &CodeObjectMarker) -> Vec<u32> {
    let mut fields = vec![
        (marker::ADDR_LO, m.addr as u32),
        (marker::ADDR_HI, (m.addr >> 32) as u32),
        (marker::SIZE_LO, m.size as u32),
        (marker::SIZE_HI, (m.size >> 32) as u32),
    ];
    let wide = m.id >= 1 << 30;
    if wide {
        fields.push((marker::ID_LO, m.id as u32));
        fields.push((marker::ID_HI, (m.id >> 32) as u32));
    }
    let legacy = if wide { 0 } else { m.id as u32 };
    let tail = u32::from(m.unload) | (u32::from(m.from_start) << 1) | (legacy << 2);
    fields.push((marker::TAIL, tail));
    fields
        .into_iter()
        .flat_map(|(kind, value)| [4 | (kind << 8), value])
        .collect()
}

/// The two buffers of a traced dispatch and where the trace goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceBuffers {
    /// Runs before the dispatch.
    pub begin: Vec<u32>,
    /// Runs after it.
    pub end: Vec<u32>,
    /// Each engine's share of the data buffer.
    pub ses: Vec<SeBuffer>,
    /// Where the data buffer is (4 KiB aligned).
    pub data_addr: u64,
    /// Where the control records are (one per engine, [`CONTROL_RECORD_BYTES`] each, then the
    /// proof's slot).
    pub control_addr: u64,
    /// Where in the control block the begin buffer writes
    /// [`PROOF_WORD`](crate::pm4::PROOF_WORD) (the slot after the engines' records).
    pub proof_offset: u64,
}

impl TraceBuffers {
    /// Bytes of the control block: the engines' records and the proof's slot (the tool zeroes
    /// them before each dispatch).
    pub fn control_bytes(&self) -> u64 {
        control_block_bytes(self.ses.len() as u32)
    }
}

/// Builds the begin and end buffers (see the module text) for `se_count` engines, the data
/// buffer at `data_addr` (4 KiB aligned) and the control block at `control_addr`; `markers` go
/// into the stream right after its magic.
pub fn build_trace(
    params: &TraceParams,
    se_count: u32,
    data_addr: u64,
    control_addr: u64,
    markers: &[CodeObjectMarker],
) -> Result<TraceBuffers, TraceError> {
    if params.target_cu > 15 {
        return Err(TraceError::Invalid(format!(
            "target compute unit {} (0 to 15)",
            params.target_cu
        )));
    }
    if data_addr & 0xFFF != 0 {
        return Err(TraceError::Invalid(format!(
            "data buffer at {data_addr:#x} is not 4 KiB aligned"
        )));
    }
    if control_addr & 0x7 != 0 {
        return Err(TraceError::Invalid(format!(
            "control block at {control_addr:#x} is not 8-byte aligned"
        )));
    }
    let ses = split(params.buffer_size, se_count, params.se_mask)?;
    let kept = if params.occupancy_only {
        reg::TOKENS_OCCUPANCY
    } else {
        reg::TOKENS_DETAIL
    };
    let token_on = (reg::TOKENS_ALL & !kept) | reg::REG_INCLUDE_USERDATA | reg::REG_EXCLUDE;
    let token_off = reg::TOKENS_ALL;
    let mask = (params.simd_select & 0x3)
        | ((params.target_cu & 0xF) << 4)
        | reg::WTYPE_COMPUTE
        | reg::EXCLUDE_NONDETAIL_SHADERDATA;

    let mut w = Writer::with_capacity(64 + 20 * ses.len());
    w.broadcast();
    w.uconfig(reg::STATUS, 0);
    for b in &ses {
        let addr = data_addr + b.offset;
        w.uconfig(pmc::GRBM_GFX_INDEX, select_se(b.se));
        let size = (((b.size >> 12) as u32) << 8) | ((addr >> 44) as u32 & 0xF);
        w.uconfig(reg::BUF0_SIZE, size);
        w.uconfig(reg::BUF0_BASE, (addr >> 12) as u32);
        w.uconfig(reg::MASK, mask);
        w.uconfig(reg::TOKEN_MASK, if b.traced { token_on } else { token_off });
        w.uconfig(reg::CTRL, reg::CTRL_ON);
    }
    if ses.iter().any(|b| b.traced) {
        w.sh(reg::COMPUTE_THREAD_TRACE_ENABLE, 1);
    }
    w.broadcast();
    w.wait_idle();
    for word in reg::STREAM_MAGIC {
        w.uconfig(reg::USERDATA_2, word);
    }
    for m in markers {
        for word in marker_words(m) {
            w.uconfig(reg::USERDATA_2, word);
        }
    }
    let proof_offset = ses.len() as u64 * CONTROL_RECORD_BYTES;
    w.0.extend_from_slice(&pm4::write_data(control_addr + proof_offset, PROOF_WORD));
    let begin = w.0;

    let mut w = Writer::with_capacity(32 + 40 * ses.len());
    w.broadcast();
    w.wait_idle();
    w.sh(reg::COMPUTE_THREAD_TRACE_ENABLE, 0);
    for b in &ses {
        w.uconfig(pmc::GRBM_GFX_INDEX, select_se(b.se));
        w.wait_register(reg::STATUS, reg::STATUS_FINISH_PENDING, 0);
        w.uconfig(reg::CTRL, reg::CTRL_OFF);
        w.wait_register(reg::STATUS, reg::STATUS_BUSY, 0);
        let record = control_addr + u64::from(b.se) * CONTROL_RECORD_BYTES;
        w.copy(reg::STATUS, record);
        w.copy(reg::DROPPED_CNTR, record + 4);
        w.copy(reg::WPTR, record + 8);
    }
    w.broadcast();
    w.acquire_mem(control_addr, ses.len() as u64 * CONTROL_RECORD_BYTES);
    Ok(TraceBuffers {
        begin,
        end: w.0,
        ses,
        data_addr,
        control_addr,
        proof_offset,
    })
}

/// Whether the trace's packets ran for the dispatch whose control block (as copied back) is
/// `control`: the begin buffer's [`PROOF_WORD`](crate::pm4::PROOF_WORD) is in its slot. A closed
/// vendor-packet gate drops the begin packet with the word, so the slot keeps the 0 the tool
/// wrote; an empty trace with the word present is a trace that ran and recorded nothing.
pub fn packets_ran(buffers: &TraceBuffers, control: &[u8]) -> bool {
    let at = buffers.proof_offset as usize;
    control
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .is_some_and(|b| u32::from_le_bytes(b) == PROOF_WORD)
}

/// `GRBM_GFX_INDEX` for engine `se`, shader array 0, every instance.
fn select_se(se: u32) -> u32 {
    (se << 16) | (1 << 30)
}

/// One engine's control record after the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeResult {
    /// Shader engine.
    pub se: u32,
    /// `SQ_THREAD_TRACE_STATUS`.
    pub status: u32,
    /// `SQ_THREAD_TRACE_DROPPED_CNTR`.
    pub dropped: u32,
    /// Bytes of trace data in the engine's buffer (clamped to its size).
    pub bytes: u64,
    /// The data reached the buffer's end (or the hardware reported a write error): the trace
    /// is cut short.
    pub full: bool,
}

/// Reads the control block (`control`, as copied back) of a trace built as `buffers`. Only
/// traced engines are reported.
pub fn read_control(buffers: &TraceBuffers, control: &[u8]) -> Result<Vec<SeResult>, TraceError> {
    let need = buffers.control_bytes() as usize;
    if control.len() < need {
        return Err(TraceError::Invalid(format!(
            "the control block holds {} bytes, {need} are needed",
            control.len()
        )));
    }
    let word = |at: usize| u32::from_le_bytes(control[at..at + 4].try_into().expect("4 bytes"));
    Ok(buffers
        .ses
        .iter()
        .filter(|b| b.traced)
        .map(|b| {
            let at = b.se as usize * CONTROL_RECORD_BYTES as usize;
            let (status, dropped, wptr) = (word(at), word(at + 4), word(at + 8));
            let base = ((buffers.data_addr + b.offset) / reg::WPTR_UNIT) as u32 & reg::WPTR_MASK;
            let units = (wptr & reg::WPTR_MASK).wrapping_sub(base) & reg::WPTR_MASK;
            let written = u64::from(units) * reg::WPTR_UNIT;
            let full = written >= b.size || status & reg::STATUS_WRITE_ERROR != 0;
            SeResult {
                se: b.se,
                status,
                dropped,
                bytes: written.min(b.size),
                full,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pm4::packet;

    fn params() -> TraceParams {
        TraceParams {
            target_cu: 1,
            se_mask: 1,
            simd_select: 0xF,
            buffer_size: 0x1000_0000,
            occupancy_only: false,
        }
    }

    #[test]
    fn the_buffer_is_split_as_aqlprofile_splits_it() {
        let ses = split(0x1000_0000, 2, 0x1).unwrap();
        // 63 masked slots of 4 KiB come off the top; the one traced engine gets the rest.
        assert_eq!(ses[0].size, (0x1000_0000 - 63 * 4096) & !0xFFF);
        assert!(ses[0].traced && !ses[1].traced);
        assert_eq!((ses[1].offset, ses[1].size), (ses[0].size, 4096));
        let both = split(0x1000_0000, 2, 0x11).unwrap();
        assert!(
            both[0].traced && !both[1].traced,
            "0x11 is masked to the engines there are"
        );
        assert!(
            split(64 << 10, 1, 1)
                .unwrap_err()
                .to_string()
                .contains("128 KiB")
        );
        assert!(split(0x1000_0000, 1, 0x2).is_err());
    }

    #[test]
    fn markers_follow_the_decoders_field_order() {
        let m = CodeObjectMarker {
            id: 3,
            addr: 0x7f00_1234_5000,
            size: 0x2000,
            unload: false,
            from_start: true,
        };
        assert_eq!(
            marker_words(&m),
            [
                4,
                0x1234_5000,
                0x104,
                0x7f00,
                0x204,
                0x2000,
                0x304,
                0,
                0x604,
                2 | (3 << 2)
            ]
        );
        let wide = CodeObjectMarker { id: 1 << 31, ..m };
        let w = marker_words(&wide);
        assert_eq!(&w[8..12], &[0x404, 1 << 31, 0x504, 0]);
        assert_eq!(w[13], 2, "the legacy id is 0 when the id is sent wide");
    }

    #[test]
    fn begin_programs_each_engine_and_ends_with_the_stream_magic() {
        let m = CodeObjectMarker {
            id: 1,
            addr: 0x10_0000,
            size: 0x1000,
            unload: false,
            from_start: true,
        };
        let t = build_trace(&params(), 1, 0x2000_0000, 0x3000, &[m]).unwrap();
        let uconfig = |reg: u32, value: u32| [packet::SET_UCONFIG_REG, reg - 0xC000, value];
        assert_eq!(
            &t.begin[..3],
            &uconfig(pmc::GRBM_GFX_INDEX, pmc::GRBM_BROADCAST)
        );
        assert_eq!(&t.begin[3..6], &uconfig(reg::STATUS, 0));
        assert_eq!(&t.begin[6..9], &uconfig(pmc::GRBM_GFX_INDEX, 1 << 30));
        let size = ((t.ses[0].size >> 12) as u32) << 8;
        assert_eq!(&t.begin[9..12], &uconfig(reg::BUF0_SIZE, size));
        assert_eq!(&t.begin[12..15], &uconfig(reg::BUF0_BASE, 0x2_0000));
        let mask = 3 | (1 << 4) | (1 << 16) | (1 << 17);
        assert_eq!(&t.begin[15..18], &uconfig(reg::MASK, mask));
        assert_eq!(
            &t.begin[24..27],
            &[packet::SET_SH_REG, 0x21E, 1],
            "COMPUTE_THREAD_TRACE_ENABLE"
        );
        // Last, the proof: WRITE_DATA of the word into the slot after the one engine's record.
        let (stream, proof) = t.begin.split_at(t.begin.len() - pm4::PROOF_DWORDS);
        assert_eq!(proof, &pm4::write_data(0x3000 + 32, PROOF_WORD));
        assert_eq!((t.proof_offset, t.control_bytes()), (32, 40));
        let tail: Vec<u32> = stream[stream.len() - 3 * 12..]
            .chunks(3)
            .map(|c| c[2])
            .collect();
        assert_eq!(&tail[..2], &reg::STREAM_MAGIC);
        assert_eq!(&tail[2..], &marker_words(&m)[..]);
        // The end copies STATUS, DROPPED_CNTR and WPTR into the engine's record.
        let copies: Vec<&[u32]> = t
            .end
            .windows(6)
            .filter(|w| w[0] == packet::COPY_DATA)
            .collect();
        assert_eq!(copies.len(), 3);
        assert_eq!((copies[0][2], copies[0][4]), (reg::STATUS, 0x3000));
        assert_eq!((copies[2][2], copies[2][4]), (reg::WPTR, 0x3008));
    }

    #[test]
    fn the_proof_word_in_its_slot_says_the_packets_ran() {
        let t = build_trace(&params(), 2, 0x2000_0000, 0x3000, &[]).unwrap();
        assert_eq!(t.proof_offset, 64, "after both engines' records");
        assert_eq!(control_block_bytes(2), t.control_bytes());
        let mut control = vec![0u8; t.control_bytes() as usize];
        assert!(
            !packets_ran(&t, &control),
            "the zeroed block: the gate dropped them"
        );
        control[64..68].copy_from_slice(&PROOF_WORD.to_le_bytes());
        assert!(
            packets_ran(&t, &control),
            "an empty trace whose packets ran"
        );
        assert!(
            !packets_ran(&t, &control[..66]),
            "a short block holds no proof"
        );
        control[64] ^= 1;
        assert!(!packets_ran(&t, &control));
    }

    #[test]
    fn the_control_block_gives_each_engines_bytes_and_a_full_buffer() {
        let t = build_trace(&params(), 1, 0x2000_0000, 0x3000, &[]).unwrap();
        let mut control = vec![0u8; 40];
        let base = (0x2000_0000u64 / 32) as u32;
        control[8..12].copy_from_slice(&(base + 100).to_le_bytes());
        let r = read_control(&t, &control).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].bytes, r[0].full), (3200, false));
        let units = (t.ses[0].size / 32) as u32;
        control[8..12].copy_from_slice(&(base + units).to_le_bytes());
        let r = read_control(&t, &control).unwrap();
        assert!(r[0].full && r[0].bytes == t.ses[0].size);
        assert!(read_control(&t, &control[..8]).is_err());
    }
}
