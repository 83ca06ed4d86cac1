//! The stream encoder, for the GPU model and for tests.

use crate::marker::{CodeObjectMarker, ROC_MAGIC, ROC_VERSION};
use crate::opcode;
use crate::{HEADER_BYTES, Header, Instruction, MAGIC, Token, USERDATA_2, VERSION, WaveKey};

/// Bytes of a `DATA_LOST` token (header plus one payload dword).
const DATA_LOST_BYTES: usize = 8;

/// Writes one shader engine's stream, token by token.
///
/// Methods taking an absolute time insert a `TIME` token first whenever the time is not within
/// `u32::MAX` cycles at or after the current time base, so times may go backwards (e.g. when the
/// model writes one wave after another) and may be anything in `u64`.
#[derive(Clone, Debug)]
pub struct Encoder {
    header: Header,
    words: Vec<u32>,
    base: u64,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    /// An empty gfx11 stream for shader engine 0.
    pub fn new() -> Self {
        Self::with_header(Header::default())
    }

    /// An empty stream with the given header fields.
    pub fn with_header(header: Header) -> Self {
        Self {
            header,
            words: Vec::new(),
            base: 0,
        }
    }

    /// The header this encoder writes.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Length in bytes of the stream so far, header included.
    pub fn len_bytes(&self) -> usize {
        HEADER_BYTES + 4 * self.words.len()
    }

    fn push(&mut self, op: u8, aux: u16, payload: &[u32]) {
        debug_assert_eq!(opcode::payload_len(op), Some(payload.len()));
        self.words
            .push(u32::from(op) | (payload.len() as u32) << 8 | u32::from(aux) << 16);
        self.words.extend_from_slice(payload);
    }

    /// The delta of `time` from the time base, writing a `TIME` token first if needed.
    fn delta(&mut self, time: u64) -> u32 {
        match time.checked_sub(self.base).map(u32::try_from) {
            Some(Ok(delta)) => delta,
            _ => {
                self.timestamp(time);
                0
            }
        }
    }

    /// `TIME`: sets the time base to `time` (always written).
    pub fn timestamp(&mut self, time: u64) -> &mut Self {
        self.push(opcode::TIME, 0, &[time as u32, (time >> 32) as u32]);
        self.base = time;
        self
    }

    /// `REG_WRITE` of `value` to the register at absolute dword address `register`.
    pub fn reg_write(&mut self, register: u32, value: u32) -> &mut Self {
        self.push(opcode::REG_WRITE, 0, &[register, value]);
        self
    }

    /// A write of `value` to `SQ_THREAD_TRACE_USERDATA_2`.
    pub fn userdata(&mut self, value: u32) -> &mut Self {
        self.reg_write(USERDATA_2, value)
    }

    /// The capture's two USERDATA_2 words that open the marker protocol: [`ROC_MAGIC`], then
    /// [`ROC_VERSION`]. The decoder ignores code-object markers until it has seen them.
    pub fn roc_preamble(&mut self) -> &mut Self {
        self.userdata(ROC_MAGIC).userdata(ROC_VERSION)
    }

    /// The USERDATA_2 writes of one code-object load (or unload) marker; see [`crate::marker`].
    pub fn code_object_marker(
        &mut self,
        id: u64,
        addr: u64,
        size: u64,
        unload: bool,
        from_start: bool,
    ) -> &mut Self {
        let marker = CodeObjectMarker {
            id,
            addr,
            size,
            unload,
            from_start,
        };
        for word in marker.words() {
            self.userdata(word);
        }
        self
    }

    /// `WAVE_START`: a wave starts in slot `wave` at `time`; `entry_pc` is the kernel's entry
    /// device address (0 if unknown).
    pub fn wave_start(&mut self, wave: WaveKey, time: u64, entry_pc: u64) -> &mut Self {
        let delta = self.delta(time);
        self.push(
            opcode::WAVE_START,
            0,
            &[
                wave.to_word(),
                delta,
                entry_pc as u32,
                (entry_pc >> 32) as u32,
            ],
        );
        self
    }

    /// `INST`: the wave in slot `wave` executed `inst`.
    pub fn instruction(&mut self, wave: WaveKey, inst: Instruction) -> &mut Self {
        let delta = self.delta(inst.time);
        self.push(
            opcode::INST,
            u16::from(inst.category.0),
            &[
                wave.to_word(),
                delta,
                inst.pc as u32,
                (inst.pc >> 32) as u32,
                inst.duration,
                inst.stall,
            ],
        );
        self
    }

    /// `WAVE_END`: the wave in slot `wave` ends at `time`.
    pub fn wave_end(&mut self, wave: WaveKey, time: u64) -> &mut Self {
        let delta = self.delta(time);
        self.push(opcode::WAVE_END, 0, &[wave.to_word(), delta]);
        self
    }

    /// `DATA_LOST`: the buffer overflowed and about `dropped_bytes` were lost (0 = unknown).
    pub fn data_lost(&mut self, dropped_bytes: u32) -> &mut Self {
        self.push(opcode::DATA_LOST, 0, &[dropped_bytes]);
        self
    }

    /// Writes any token (what [`crate::parse`] returns), so parsed streams can be re-encoded.
    pub fn token(&mut self, token: &Token) -> &mut Self {
        match *token {
            Token::Time(time) => self.timestamp(time),
            Token::RegWrite { register, value } => self.reg_write(register, value),
            Token::WaveStart {
                wave,
                time,
                entry_pc,
            } => self.wave_start(wave, time, entry_pc),
            Token::Instruction { wave, inst } => self.instruction(wave, inst),
            Token::WaveEnd { wave, time } => self.wave_end(wave, time),
            Token::DataLost { dropped_bytes } => self.data_lost(dropped_bytes),
        }
    }

    fn header_words(&self) -> [u32; 4] {
        [
            MAGIC,
            VERSION,
            u32::from(self.header.gfxip_major) | u32::from(self.header.shader_engine) << 8,
            0,
        ]
    }

    fn to_bytes(&self, words: &[u32]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + 4 * words.len());
        for word in self.header_words().iter().chain(words) {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    /// The stream's dwords from dword `first` on (header included: dword 0 is the header's
    /// first), as little-endian words of [`Encoder::bytes`]; nothing is copied.
    pub fn dwords_from(&self, first: usize) -> impl Iterator<Item = u32> + '_ {
        const HEADER_DWORDS: usize = HEADER_BYTES / 4;
        let header = self.header_words();
        let head = header.into_iter().skip(first);
        let body = self.words.get(first.saturating_sub(HEADER_DWORDS)..);
        head.chain(body.unwrap_or_default().iter().copied())
    }

    /// The stream so far (the encoder can go on).
    pub fn bytes(&self) -> Vec<u8> {
        self.to_bytes(&self.words)
    }

    /// The whole stream.
    pub fn finish(self) -> Vec<u8> {
        self.bytes()
    }

    /// The stream as a trace buffer of `capacity` bytes holds it: the whole stream if it fits;
    /// otherwise as many whole tokens as fit before a final `DATA_LOST` token (counting the
    /// bytes left out), so the result is at most `capacity` bytes. A capacity below 24 bytes (the
    /// header and one `DATA_LOST` token) is treated as 24.
    pub fn finish_bounded(self, capacity: usize) -> Vec<u8> {
        let total = self.len_bytes();
        if total <= capacity {
            return self.finish();
        }
        let room = capacity.saturating_sub(HEADER_BYTES + DATA_LOST_BYTES) / 4;
        let mut keep = 0;
        while keep < self.words.len() {
            let op = self.words[keep] as u8;
            let next = keep + 1 + opcode::payload_len(op).unwrap_or(0);
            if next > room {
                break;
            }
            keep = next;
        }
        let dropped = u32::try_from(total - HEADER_BYTES - 4 * keep).unwrap_or(u32::MAX);
        let mut words = self.words[..keep].to_vec();
        words.extend_from_slice(&[u32::from(opcode::DATA_LOST) | 1 << 8, dropped]);
        self.to_bytes(&words)
    }
}
