//! The simulated GPU's thread-trace (SQTT) stream: format, [`Encoder`] and parser ([`parse`]).
//!
//! AMD's real SQTT token format lives inside the closed-source decoder, so the simulator defines
//! its own: the simulated GPU model writes one stream per shader engine (what a real SE's
//! thread-trace buffer holds), and the simulated `librocprof-trace-decoder.so` reads it. Nothing
//! in the product may depend on this format: the product only sees the decoder's V1 records.
//!
//! # Stream format, version 1
//!
//! All integers are little-endian; the stream is a sequence of 32-bit words ("dwords"). A stream
//! is a 16-byte **header** followed by **tokens**. Times are shader-clock cycles (u64).
//!
//! ## Header (16 bytes)
//!
//! | byte | type | field | value |
//! |---|---|---|---|
//! | 0 | u32 | magic | [`MAGIC`] = `0x54515357`, the bytes `"WSQT"` |
//! | 4 | u32 | version | [`VERSION`] = 1; any other value is rejected |
//! | 8 | u8 | gfxip major | 11 for the simulated gfx11 GPUs (the decoder's GFXIP record) |
//! | 9 | u8 | shader engine | the SE index the stream came from (informational) |
//! | 10 | u16 | reserved | 0 |
//! | 12 | u32 | reserved | 0 |
//!
//! A stream that is shorter than 16 bytes, has another magic or version, or non-zero reserved
//! fields is rejected, so zero-filled and random buffers are never mistaken for a trace.
//!
//! ## Token header (one dword)
//!
//! | bits | field |
//! |---|---|
//! | 0-7 | opcode |
//! | 8-15 | payload length in dwords (fixed per opcode; any other value is rejected) |
//! | 16-31 | aux: opcode-specific, 0 where the table below does not use it |
//!
//! The payload dwords follow the header. Unknown opcodes (including 0) are rejected: a new token
//! needs a new [`VERSION`].
//!
//! ## Tokens
//!
//! `delta` is a u32 added to the current **time base** to give the token's absolute time. The
//! base is 0 at the start of the stream and is replaced by every `TIME` token. `wave` is a
//! [`WaveKey`] dword: cu in bits 0-7, simd in 8-15, slot in 16-23, bits 24-31 reserved (0).
//!
//! | opcode | name | len | aux | payload dwords | meaning |
//! |---|---|---|---|---|---|
//! | `0x01` | `TIME` | 2 | 0 | time lo, time hi | sets the time base to this absolute time |
//! | `0x02` | `REG_WRITE` | 2 | 0 | register, value | a traced register write (register = absolute dword address, e.g. [`USERDATA_2`]); untimed, it takes effect at its place in the stream |
//! | `0x03` | `WAVE_START` | 4 | 0 | wave, delta, entry pc lo, entry pc hi | a wave starts in the slot at that time; entry pc = the kernel's first instruction's device address, or 0 if unknown |
//! | `0x04` | `INST` | 6 | category (bits 16-23), reserved (24-31) | wave, delta, pc lo, pc hi, duration, stall | one instruction the wave executed: device pc, issue time, duration in cycles, and the number of those cycles spent stalled (the first `stall` cycles of the duration) |
//! | `0x05` | `WAVE_END` | 2 | 0 | wave, delta | the wave in the slot ends at that time |
//! | `0x06` | `DATA_LOST` | 1 | 0 | dropped bytes (saturating; 0 = unknown) | the trace buffer overflowed here; tokens were dropped |
//!
//! At most one wave is live per [`WaveKey`]; the slot is the hardware wave id (the decoder's
//! `wave_t.wave_id`, the occupancy `slot`). Instruction categories are the decoder's
//! (`NONE 0` .. `BVH 12`, see [`Category`]).
//!
//! ## Truncation
//!
//! A stream may stop inside its last token (a buffer cut at its capacity): if the remaining
//! bytes are fewer than 4, or fewer than the token's declared length (its header being valid),
//! the partial token is ignored and [`Stream::truncated`] is set. [`Encoder::finish_bounded`]
//! instead cuts at a token boundary and ends the stream with a `DATA_LOST` token.
//!
//! ## Code-object markers
//!
//! The capture's `SQ_THREAD_TRACE_USERDATA_2` writes appear as `REG_WRITE` tokens to
//! [`USERDATA_2`] (`0xC342`). Their protocol (AMD's: first [`ROC_MAGIC`] `0x434F5200` ('\0ROC'),
//! then [`ROC_VERSION`] 524801; then per code object, each field as the two words
//! `4 | (type << 8)` and the 32-bit value) is encoded and decoded by the [`marker`] module; the
//! numeric field types are the simulator's choice, see [`marker::field`].
//!
//! # Example
//!
//! ```
//! use wslsim_sqtt::{Category, Encoder, Instruction, Token, WaveKey, parse};
//!
//! let wave = WaveKey { cu: 0, simd: 1, slot: 3 };
//! let mut enc = Encoder::new();
//! enc.roc_preamble()
//!     .code_object_marker(1, 0x7f00_0000_0000, 0x1000, false, true)
//!     .wave_start(wave, 100_000_000_000, 0x7f00_0000_0100)
//!     .instruction(wave, Instruction {
//!         pc: 0x7f00_0000_0100,
//!         category: Category::SALU,
//!         time: 100_000_000_004,
//!         duration: 4,
//!         stall: 0,
//!     })
//!     .wave_end(wave, 100_000_000_020);
//! let stream = parse(&enc.finish()).unwrap();
//! assert_eq!(stream.header.gfxip_major, 11);
//! assert!(matches!(stream.tokens.last(), Some(Token::WaveEnd { .. })));
//! ```

mod encode;
pub mod marker;
mod parse;
mod token;

pub use encode::Encoder;
pub use parse::{ParseError, Stream, Tokens, parse, tokens};
pub use token::{Category, Header, Instruction, Token, WaveKey};

/// The first dword of every stream: the bytes `"WSQT"`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"WSQT");
/// The stream format version this crate writes and accepts.
pub const VERSION: u32 = 1;
/// The size of the stream header in bytes.
pub const HEADER_BYTES: usize = 16;
/// The gfxip major version of the simulated GPUs.
pub const GFX11: u8 = 11;
/// `SQ_THREAD_TRACE_USERDATA_2` on gfx11 (absolute dword address).
pub const USERDATA_2: u32 = 0xC342;

/// Token opcodes (bits 0-7 of a token header).
pub mod opcode {
    /// Sets the time base.
    pub const TIME: u8 = 0x01;
    /// A register write.
    pub const REG_WRITE: u8 = 0x02;
    /// A wave starts.
    pub const WAVE_START: u8 = 0x03;
    /// A wave executed an instruction.
    pub const INST: u8 = 0x04;
    /// A wave ends.
    pub const WAVE_END: u8 = 0x05;
    /// The buffer overflowed.
    pub const DATA_LOST: u8 = 0x06;

    /// The payload length in dwords of each opcode, or `None` for an unknown opcode.
    pub const fn payload_len(opcode: u8) -> Option<usize> {
        match opcode {
            TIME | REG_WRITE | WAVE_END => Some(2),
            WAVE_START => Some(4),
            INST => Some(6),
            DATA_LOST => Some(1),
            _ => None,
        }
    }
}

pub use marker::{ROC_MAGIC, ROC_VERSION};

#[cfg(test)]
mod tests;
