//! The stream parser: never panics, whatever the input.

use std::fmt;

use crate::opcode;
use crate::{Category, HEADER_BYTES, Header, Instruction, MAGIC, Token, VERSION, WaveKey};

/// Why a buffer is not a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Fewer than [`HEADER_BYTES`] bytes.
    TooShort {
        /// The buffer's length.
        len: usize,
    },
    /// The first dword is not [`MAGIC`].
    BadMagic {
        /// The first dword.
        found: u32,
    },
    /// The version is not [`VERSION`].
    UnsupportedVersion {
        /// The version dword.
        found: u32,
    },
    /// A token header names an unknown opcode.
    UnknownOpcode {
        /// Byte offset of the token.
        offset: usize,
        /// The opcode.
        opcode: u8,
    },
    /// A token's payload length is not its opcode's.
    BadLength {
        /// Byte offset of the token.
        offset: usize,
        /// The opcode.
        opcode: u8,
        /// The length in the header.
        len: u8,
    },
    /// Reserved bits are set (in the header, a token header or a wave key).
    ReservedBits {
        /// Byte offset of the header or token.
        offset: usize,
    },
    /// A time delta takes the time past `u64::MAX`.
    TimeOverflow {
        /// Byte offset of the token.
        offset: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { len } => {
                write!(
                    f,
                    "{len} bytes is too short for a {HEADER_BYTES}-byte SQTT header"
                )
            }
            Self::BadMagic { found } => {
                write!(
                    f,
                    "not a simulated SQTT stream (magic {found:#010x}, expected {MAGIC:#010x})"
                )
            }
            Self::UnsupportedVersion { found } => {
                write!(
                    f,
                    "unsupported SQTT stream version {found} (expected {VERSION})"
                )
            }
            Self::UnknownOpcode { offset, opcode } => {
                write!(f, "unknown token opcode {opcode:#04x} at byte {offset}")
            }
            Self::BadLength {
                offset,
                opcode,
                len,
            } => write!(
                f,
                "token {opcode:#04x} at byte {offset} has payload length {len} (expected {})",
                opcode::payload_len(opcode).unwrap_or(0)
            ),
            Self::ReservedBits { offset } => write!(f, "reserved bits set at byte {offset}"),
            Self::TimeOverflow { offset } => {
                write!(f, "time of the token at byte {offset} overflows u64")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// A parsed stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// The header's fields.
    pub header: Header,
    /// Every whole token, in stream order.
    pub tokens: Vec<Token>,
    /// The stream ended inside a token (which is not in `tokens`).
    pub truncated: bool,
}

/// Parses a whole stream.
pub fn parse(bytes: &[u8]) -> Result<Stream, ParseError> {
    let (header, mut iter) = tokens(bytes)?;
    let tokens = iter.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(Stream {
        header,
        tokens,
        truncated: iter.truncated(),
    })
}

/// Checks the header and returns an iterator over the tokens, which yields at most one error
/// and then ends. For streaming consumers that do not want every token in memory at once.
pub fn tokens(bytes: &[u8]) -> Result<(Header, Tokens<'_>), ParseError> {
    let word = |i: usize| {
        let b = &bytes[4 * i..4 * i + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    };
    if bytes.len() < HEADER_BYTES {
        return Err(ParseError::TooShort { len: bytes.len() });
    }
    if word(0) != MAGIC {
        return Err(ParseError::BadMagic { found: word(0) });
    }
    if word(1) != VERSION {
        return Err(ParseError::UnsupportedVersion { found: word(1) });
    }
    let info = word(2);
    if info >> 16 != 0 || word(3) != 0 {
        return Err(ParseError::ReservedBits { offset: 8 });
    }
    let header = Header {
        gfxip_major: info as u8,
        shader_engine: (info >> 8) as u8,
    };
    let iter = Tokens {
        bytes,
        pos: HEADER_BYTES,
        base: 0,
        done: false,
        truncated: false,
    };
    Ok((header, iter))
}

/// The tokens of a stream; see [`tokens`].
#[derive(Clone, Debug)]
pub struct Tokens<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
    done: bool,
    truncated: bool,
}

impl Tokens<'_> {
    /// Whether the stream ended inside a token (meaningful once the iterator has ended).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    fn word(&self, index: usize) -> u32 {
        let at = self.pos + 4 * index;
        let b = &self.bytes[at..at + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn next_token(&mut self) -> Result<Option<Token>, ParseError> {
        let offset = self.pos;
        let remaining = self.bytes.len() - offset;
        if remaining == 0 {
            return Ok(None);
        }
        if remaining < 4 {
            self.truncated = true;
            return Ok(None);
        }
        let head = self.word(0);
        let op = head as u8;
        let len = (head >> 8) as u8;
        let aux = head >> 16;
        let Some(expected) = opcode::payload_len(op) else {
            return Err(ParseError::UnknownOpcode { offset, opcode: op });
        };
        if usize::from(len) != expected {
            return Err(ParseError::BadLength {
                offset,
                opcode: op,
                len,
            });
        }
        let aux_mask = if op == opcode::INST { 0xFF00 } else { 0xFFFF };
        if aux & aux_mask != 0 {
            return Err(ParseError::ReservedBits { offset });
        }
        if remaining < 4 * (1 + expected) {
            self.truncated = true;
            return Ok(None);
        }
        let p = |i: usize| self.word(1 + i);
        let wave = || WaveKey::from_word(p(0)).ok_or(ParseError::ReservedBits { offset });
        let at = |delta: u32| {
            self.base
                .checked_add(u64::from(delta))
                .ok_or(ParseError::TimeOverflow { offset })
        };
        let wide = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
        let token = match op {
            opcode::TIME => Token::Time(wide(p(0), p(1))),
            opcode::REG_WRITE => Token::RegWrite {
                register: p(0),
                value: p(1),
            },
            opcode::WAVE_START => Token::WaveStart {
                wave: wave()?,
                time: at(p(1))?,
                entry_pc: wide(p(2), p(3)),
            },
            opcode::INST => Token::Instruction {
                wave: wave()?,
                inst: Instruction {
                    pc: wide(p(2), p(3)),
                    category: Category(aux as u8),
                    time: at(p(1))?,
                    duration: p(4),
                    stall: p(5),
                },
            },
            opcode::WAVE_END => Token::WaveEnd {
                wave: wave()?,
                time: at(p(1))?,
            },
            opcode::DATA_LOST => Token::DataLost {
                dropped_bytes: p(0),
            },
            _ => return Err(ParseError::UnknownOpcode { offset, opcode: op }),
        };
        if let Token::Time(time) = token {
            self.base = time;
        }
        self.pos += 4 * (1 + expected);
        Ok(Some(token))
    }
}

impl Iterator for Tokens<'_> {
    type Item = Result<Token, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_token().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl std::iter::FusedIterator for Tokens<'_> {}
