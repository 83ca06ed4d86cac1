//! The record log's format: one file per process image, made of fixed-size chunks that the
//! writing threads fill in place through a shared file mapping, and a reader that survives
//! damage.
//!
//! ```text
//! file    = header chunk*                       (header: HEADER_LEN bytes, chunks: CHUNK_SIZE)
//! header  = "RPRFLOG\0" version:u32 header_len:u32 pid:u32 image:u32 created_ns:u64
//!           chunk_size:u32 ppid:u32 crc32(bytes 0..40):u32 reserved:u32
//!           chunks:counter at 48   reserved…   losses:[counter; 8] at 64
//! counter = value:40 bits | check:24 bits       (one 64-bit word; all zeros is 0)
//! chunk   = magic:u32 ("CHNK") index:u32 commit:u64 crc:u32 sealed:u32 tid:u32 reserved:u32
//!           payload[CHUNK_CAPACITY]
//! commit  = entries << 32 | payload_len   (one 64-bit store after each entry is complete)
//! entry   = tag:u16 len:u16 bytes[len]
//! ```
//!
//! Entries are self-contained except compact API entries ([`Tag::ApiCompact`] and
//! [`Tag::ApiTicks`], version 5), which are read against their chunk: the thread id is the
//! chunk's `tid`, the correlation id (and a compact entry's start) are steps from the chunk's
//! previous API entry ([`crate::record::ApiBase`]), and a tick-timed entry's times are
//! converted with the chunk's last [`Tag::ClockEpoch`] entry. A chunk is the unit of damage, so
//! nothing an entry needs lies outside its own chunk.
//!
//! All integers are little-endian. A writer fills its chunk's payload and then publishes the
//! new commit word with a single store, so a process that dies at any instant leaves every
//! chunk consistent up to its last commit: the reader trusts the commit word of an open chunk
//! and, once a chunk is full (or the process exits), its checksum (`sealed` = [`SEALED`]: the
//! payload's CRC-32C, from version 6; [`SEALED_CRC32`]: its CRC-32, in versions 2 to 5).
//! Chunks sit at fixed offsets, so a damaged chunk costs only itself: the reader goes on with
//! the next one. A chunk whose header is all zeros was never handed out.
//!
//! The counters in the header — how many chunks the writer handed out, and the loss counts —
//! are updated in place by the writing process, one 64-bit store each, so they cannot be
//! covered by the header checksum; each carries its own check instead ([`HeaderCounter`]). A
//! chunk's `index` is its place in the file. So the reader knows what a complete log holds:
//! a chunk out of its place (a copy, or moved), a handed-out chunk that is all zeros, or a
//! file that ends before the last handed-out chunk is damage, reported with how many chunks
//! it concerns. The writer writes a chunk's header before it counts the chunk, so a process
//! killed at any instant leaves a log that reads as complete.
//!
//! Version 2 (the previous format) had no chunk count and plain 64-bit loss counters; it is
//! still read, its counters bounded by [`COUNTER_MAX`] instead of checked.

use crate::loss::{LossCause, LossCounts};
use crate::record::{
    ApiBase, ApiCompactRecord, ApiRecord, ApiTicksRecord, ClockEpochRecord, FixedRecord, StringId,
    Tag, TickCall,
};
use std::io::Read;
use zerocopy::{FromBytes, IntoBytes};

/// First bytes of every log.
pub const MAGIC: [u8; 8] = *b"RPRFLOG\0";
/// Format version written (4: API calls may carry their arguments, [`Tag::ApiArgs`]; 5: API
/// calls are stored compact where they fit, [`Tag::ApiCompact`]; 6: chunks are sealed with a
/// CRC-32C, [`SEALED`], which the `crc32` instruction computes).
pub const VERSION: u32 = 6;
/// Oldest format version still read (readers refuse others).
pub const OLDEST_VERSION: u32 = 2;
/// Size of the file header (one page, so the chunks are page-aligned in the file).
pub const HEADER_LEN: usize = 4096;
/// Offset of the count of chunks handed out (a [`HeaderCounter::Chunks`] word) in the header.
pub const CHUNKS_AT: usize = 48;
/// Offset of the loss counters in the header.
pub const LOSSES_AT: usize = 64;
/// Size of a chunk, header included.
pub const CHUNK_SIZE: usize = 64 * 1024;
/// Magic of each chunk ("CHNK").
pub const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"CHNK");
/// Size of a chunk header.
pub const CHUNK_HEADER_LEN: usize = 32;
/// Offset of the writing thread's id in a chunk header.
pub const TID_AT: usize = 24;
/// Offset of a chunk's index (its place in the file: chunk `k` starts at
/// `HEADER_LEN + k * CHUNK_SIZE`) in its header.
pub const INDEX_AT: usize = 4;
/// Offset of the commit word in a chunk header.
pub const COMMIT_AT: usize = 8;
/// Offset of a sealed chunk's checksum in its header.
pub const CRC_AT: usize = 16;
/// Offset of the seal mark ([`SEALED`] once the CRC is valid) in a chunk header.
pub const SEAL_AT: usize = 20;
/// Payload capacity of one chunk.
pub const CHUNK_CAPACITY: usize = CHUNK_SIZE - CHUNK_HEADER_LEN;
/// The `sealed` value of a chunk whose checksum, a CRC-32C ([`chunk_checksum`]), covers its
/// committed payload (what this version writes).
pub const SEALED: u32 = 0x5EA1_ED02;
/// The `sealed` value of a chunk sealed with a CRC-32 (IEEE) of its committed payload, as
/// versions 2 to 5 wrote it (still read).
pub const SEALED_CRC32: u32 = 0x5EA1_ED01;

/// The checksum a sealed chunk ([`SEALED`]) carries of its committed payload: CRC-32C. The
/// writer (`record-log`) computes it on the application's thread once per chunk with its own
/// three-chain `crc32`-instruction routine, a third of the instructions a CRC-32 takes; this
/// is the definition it is tested against and what the reader checks with.
pub fn chunk_checksum(payload: &[u8]) -> u32 {
    crc32c::crc32c(payload)
}
/// Longest variable-length entry (strings, JSON) that fits even an empty chunk next to its
/// 4-byte entry header.
pub const MAX_ENTRY: usize = CHUNK_CAPACITY - 4;
/// Longest string a definition holds whole ([`Tag::StringDef`]: the id, then the text).
pub const MAX_STRING: usize = MAX_ENTRY - 4;
/// What is kept of a longer string ([`Tag::StringCut`]: the id, the full length, then the
/// text cut at a character boundary at most this long).
pub const MAX_CUT_STRING: usize = MAX_ENTRY - 12;
/// Largest value a header counter holds (it stays there once reached): 2^40 − 1, more records
/// than a process could lose in years.
pub const COUNTER_MAX: u64 = (1 << 40) - 1;

const _: () = assert!(MAX_ENTRY <= u16::MAX as usize);
const _: () = assert!(LOSSES_AT + 8 * LossCause::COUNT <= HEADER_LEN);
const _: () = assert!(CHUNKS_AT.is_multiple_of(8) && CHUNKS_AT + 8 <= LOSSES_AT);

/// A counter in the file header, updated in place by the writing process: one 64-bit word,
/// the value in its low 40 bits and a 24-bit check of the value (and of which counter it is)
/// above them; all zeros is zero. A word whose check fails is damage, never a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderCounter {
    /// Chunks handed out to writers (chunk indexes below this were handed out).
    Chunks,
    /// Records lost for a cause.
    Loss(LossCause),
}

impl HeaderCounter {
    /// The word's offset in the header (8-byte aligned).
    pub fn offset(self) -> usize {
        match self {
            Self::Chunks => CHUNKS_AT,
            Self::Loss(c) => LOSSES_AT + 8 * c as usize,
        }
    }

    fn check(self, value: u64) -> u64 {
        let slot = match self {
            Self::Chunks => 0xC4,
            Self::Loss(c) => c as u64,
        };
        // splitmix64's finaliser over the value and the slot: every bit of both moves the check.
        let mut x = value ^ (slot << 48) ^ 0x9E37_79B9_7F4A_7C15;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        x >> 40
    }

    /// The word holding `value` (at most [`COUNTER_MAX`]; more is stored as that).
    pub fn encode(self, value: u64) -> u64 {
        let v = value.min(COUNTER_MAX);
        if v == 0 { 0 } else { v | (self.check(v) << 40) }
    }

    /// The value of `word`, or `None` when its check fails.
    pub fn decode(self, word: u64) -> Option<u64> {
        if word == 0 {
            return Some(0);
        }
        let v = word & COUNTER_MAX;
        (v != 0 && word >> 40 == self.check(v)).then_some(v)
    }

    /// The value of this counter's word in `header` (a log's first bytes), or `None` when
    /// its check fails.
    pub fn read(self, header: &[u8]) -> Option<u64> {
        self.decode(u64_at(header, self.offset()))
    }

    /// `word` plus `n`, or `None` when `word` is damaged (a damaged counter stays damaged, so
    /// the reader reports it instead of a wrong count).
    pub fn add(self, word: u64, n: u64) -> Option<u64> {
        self.decode(word).map(|v| self.encode(v.saturating_add(n)))
    }
}

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileHeader {
    /// Process id of the writer.
    pub pid: u32,
    /// Which image of that process (0 for the first; each `exec` that loads the tool again
    /// writes a log of its own with the next number).
    pub image: u32,
    /// Parent process id.
    pub ppid: u32,
    /// When the log was created (host timeline, ns).
    pub created_ns: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl FileHeader {
    /// The header's bytes (counters zero).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[16..20].copy_from_slice(&self.pid.to_le_bytes());
        b[20..24].copy_from_slice(&self.image.to_le_bytes());
        b[24..32].copy_from_slice(&self.created_ns.to_le_bytes());
        b[32..36].copy_from_slice(&(CHUNK_SIZE as u32).to_le_bytes());
        b[36..40].copy_from_slice(&self.ppid.to_le_bytes());
        let crc = crc32fast::hash(&b[..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header and its version; `Err` says what is wrong.
    fn decode(b: &[u8]) -> Result<(Self, u32), HeaderProblem> {
        if b.len() < HEADER_LEN {
            return Err(HeaderProblem::Short);
        }
        if b[..8] != MAGIC {
            return Err(HeaderProblem::Damaged("bad magic"));
        }
        if crc32fast::hash(&b[..40]) != u32_at(b, 40) {
            return Err(HeaderProblem::Damaged("header checksum mismatch"));
        }
        let version = u32_at(b, 8);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(HeaderProblem::Version(version));
        }
        if u32_at(b, 12) as usize != HEADER_LEN || u32_at(b, 32) as usize != CHUNK_SIZE {
            return Err(HeaderProblem::Damaged("unexpected header or chunk size"));
        }
        let header = Self {
            pid: u32_at(b, 16),
            image: u32_at(b, 20),
            created_ns: u64_at(b, 24),
            ppid: u32_at(b, 36),
        };
        Ok((header, version))
    }
}

enum HeaderProblem {
    Short,
    Version(u32),
    Damaged(&'static str),
}

/// What the counters of an intact header say.
struct HeaderCounts {
    losses: LossCounts,
    /// Chunks handed out (`None`: a version-2 log, or a damaged count).
    chunks: Option<u64>,
    /// What is wrong with them, for a damage report.
    problem: Option<String>,
}

/// Reads the header's counters. A loss counter is believed only when its check holds (version
/// 3) or it is at most [`COUNTER_MAX`] (version 2), and the two causes only a reader counts
/// (`malformed`, `damaged`) must be zero; the chunk count must pass its check and fit a chunk
/// index.
fn header_counts(head: &[u8], version: u32) -> HeaderCounts {
    let mut losses = LossCounts::default();
    let mut bad: Vec<String> = Vec::new();
    for c in LossCause::ALL {
        let counter = HeaderCounter::Loss(c);
        let value = if version >= 3 {
            counter.read(head)
        } else {
            Some(u64_at(head, counter.offset())).filter(|v| *v <= COUNTER_MAX)
        };
        let value =
            value.filter(|v| *v == 0 || !matches!(c, LossCause::Malformed | LossCause::Damaged));
        match value {
            Some(v) => losses.add(c, v),
            None => bad.push(c.to_string()),
        }
    }
    let chunks = (version >= 3)
        .then(|| HeaderCounter::Chunks.read(head))
        .flatten()
        .filter(|n| *n <= u64::from(u32::MAX) + 1);
    let mut said = Vec::new();
    if !bad.is_empty() {
        said.push(format!(
            "its loss counters for {} fail their check, so those losses are unknown",
            bad.join(", ")
        ));
    }
    if version >= 3 && chunks.is_none() {
        said.push(
            "its count of chunks fails its check, so whether the log is complete is unknown"
                .to_owned(),
        );
    }
    HeaderCounts {
        losses,
        chunks,
        problem: (!said.is_empty()).then(|| format!("damaged file header: {}", said.join("; "))),
    }
}

/// The header bytes of a chunk handed out as number `index` (not sealed, nothing committed).
pub fn open_chunk_header(index: u32, tid: u32) -> [u8; CHUNK_HEADER_LEN] {
    let mut h = [0u8; CHUNK_HEADER_LEN];
    h[..4].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
    h[INDEX_AT..INDEX_AT + 4].copy_from_slice(&index.to_le_bytes());
    h[TID_AT..TID_AT + 4].copy_from_slice(&tid.to_le_bytes());
    h
}

/// Fills a chunk's payload, entry by entry. The caller owns the payload bytes and publishes
/// [`ChunkFill::commit`] after each successful push.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkFill {
    /// The commit word itself (entries in the high half, payload bytes in the low half): one
    /// add per entry keeps both.
    commit: u64,
    /// The chunk header's thread id (compact API entries leave it out).
    tid: u32,
    /// What the next compact API entry is written against.
    api: ApiBase,
    /// The sequence number of the chunk's last clock epoch entry (0: none yet).
    epoch: u64,
    /// That epoch's `tsc0`.
    epoch_tsc0: u64,
}

/// Bytes of a whole API entry, header included.
const WHOLE_API: usize = 4 + size_of::<ApiRecord>();
/// Bytes of a compact API entry, header included.
const COMPACT_API: usize = 4 + size_of::<ApiCompactRecord>();
/// Bytes of a tick-timed API entry, header included.
const TICKS_API: usize = 4 + size_of::<ApiTicksRecord>();
/// Bytes of a clock epoch entry, header included.
const EPOCH_ENTRY: usize = 4 + size_of::<ClockEpochRecord>();

/// Whether a wrapping 64-bit difference is a signed 32-bit step.
#[inline(always)]
fn fits_i32(d: u64) -> bool {
    d as i64 == i64::from(d as i32)
}

/// Whether a wrapping 64-bit difference is a step in `0..2^31`: the traced exit's check,
/// one compare with an immediate (no second register, as [`fits_i32`]'s sign extension needs).
/// Its steps forward are the common case (a thread's correlation ids increase; a call starts
/// after its chunk's epoch began); a step back is stored whole by the cold path instead.
#[inline(always)]
fn fits_forward(d: u64) -> bool {
    d >> 31 == 0
}

/// An entry header as one little-endian word.
const fn entry_header(tag: Tag, len: usize) -> u32 {
    tag as u32 | (len as u32) << 16
}

impl ChunkFill {
    /// An empty fill for a chunk whose header names thread `tid` ([`open_chunk_header`]).
    pub fn for_thread(tid: u32) -> Self {
        Self {
            tid,
            ..Self::default()
        }
    }

    /// Counts one more entry of `bytes` bytes (header included).
    #[inline(always)]
    fn advance(&mut self, bytes: usize) {
        self.commit += (1 << 32) | bytes as u64;
    }

    /// Appends one entry made of `parts`; `false` (nothing written) if it does not fit.
    #[inline]
    pub fn push_parts(&mut self, payload: &mut [u8], tag: Tag, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let at = self.len();
        let end = at + 4 + len;
        if len > MAX_ENTRY || end > payload.len().min(CHUNK_CAPACITY) {
            return false;
        }
        payload[at..at + 2].copy_from_slice(&(tag as u16).to_le_bytes());
        payload[at + 2..at + 4].copy_from_slice(&(len as u16).to_le_bytes());
        let mut p = at + 4;
        for part in parts {
            payload[p..p + part.len()].copy_from_slice(part);
            p += part.len();
        }
        self.advance(4 + len);
        true
    }

    /// Appends a fixed-size record (the traced path: one bounds check, three copies; an API
    /// call compact where it fits, [`ChunkFill::push_api`]).
    /// A clock epoch is remembered as the chunk's ([`ChunkFill::push_epoch`]). (The tag picks
    /// the way; for the record types that have those tags the conversion is a no-op.)
    #[inline(always)]
    pub fn push<R: FixedRecord>(&mut self, payload: &mut [u8], record: &R) -> bool {
        match R::TAG {
            Tag::Api => match ApiRecord::read_from_bytes(record.as_bytes()) {
                Ok(api) => self.push_api(payload, &api),
                Err(_) => false,
            },
            Tag::ClockEpoch => match ClockEpochRecord::read_from_bytes(record.as_bytes()) {
                Ok(epoch) => self.push_epoch(payload, &epoch),
                Err(_) => false,
            },
            tag => self.push_bytes(payload, tag, record.as_bytes()),
        }
    }

    /// Appends one entry of `bytes` under `tag` (a fixed record's bytes).
    #[inline(always)]
    fn push_bytes(&mut self, payload: &mut [u8], tag: Tag, bytes: &[u8]) -> bool {
        let at = self.len();
        let end = at + 4 + bytes.len();
        let Some(dst) = payload.get_mut(at..end).filter(|_| end <= CHUNK_CAPACITY) else {
            return false;
        };
        let (head, body) = dst.split_at_mut(4);
        head.copy_from_slice(&entry_header(tag, bytes.len()).to_le_bytes());
        body.copy_from_slice(bytes);
        self.advance(4 + bytes.len());
        true
    }

    /// Appends an API call: a [`Tag::ApiCompact`] entry (20 bytes) when it fits one against
    /// the chunk's previous API entry (steps within ±2^31, a duration under 2^32 ns, the
    /// chunk's thread: [`ApiCompactRecord`]), else the whole [`ApiRecord`]
    /// (36 bytes); `false` (nothing written) when the chunk has no room for a whole entry.
    ///
    /// The traced path: it decides and stores in one pass, every value stored as soon as it is
    /// known, field by field (the record is never copied as bytes, so it stays in registers
    /// and the traced exit needs no stack frame). At most 35 bytes at a chunk's end stay unused.
    #[inline(always)]
    pub fn push_api(&mut self, payload: &mut [u8], record: &ApiRecord) -> bool {
        let at = self.len();
        let Some(dst) = payload
            .get_mut(at..at + WHOLE_API)
            .filter(|_| at + WHOLE_API <= CHUNK_CAPACITY)
        else {
            return false;
        };
        let id_step = record.correlation_id.wrapping_sub(self.api.correlation_id);
        let start_step = record.start.wrapping_sub(self.api.start);
        let duration = record.end.wrapping_sub(record.start);
        let kind = record.kind();
        let size = if fits_i32(id_step)
            && fits_i32(start_step)
            && duration >> 32 == 0
            && record.thread_id == self.tid
        {
            let header = entry_header(Tag::ApiCompact, COMPACT_API - 4);
            dst[0..4].copy_from_slice(&header.to_le_bytes());
            dst[4..8].copy_from_slice(&(id_step as u32).to_le_bytes());
            dst[8..12].copy_from_slice(&(start_step as u32).to_le_bytes());
            dst[12..16].copy_from_slice(&(duration as u32).to_le_bytes());
            dst[16..20].copy_from_slice(&kind.to_le_bytes());
            COMPACT_API
        } else {
            // The fields at their `ApiRecord` offsets (the layout asserted in `record`).
            let header = entry_header(Tag::Api, WHOLE_API - 4);
            dst[0..4].copy_from_slice(&header.to_le_bytes());
            dst[4..12].copy_from_slice(&record.correlation_id.to_le_bytes());
            dst[12..20].copy_from_slice(&record.start.to_le_bytes());
            dst[20..28].copy_from_slice(&record.end.to_le_bytes());
            dst[28..32].copy_from_slice(&record.thread_id.to_le_bytes());
            dst[32..36].copy_from_slice(&kind.to_le_bytes());
            WHOLE_API
        };
        self.api = ApiBase::after(record);
        self.advance(size);
        true
    }

    /// Appends a clock epoch: the chunk's tick-timed calls after it are converted with it.
    /// Epochs are numbered from 1: one numbered 0 is refused (`false`, nothing written).
    #[inline]
    pub fn push_epoch(&mut self, payload: &mut [u8], epoch: &ClockEpochRecord) -> bool {
        let ok = epoch.sequence != 0 && self.push_bytes(payload, Tag::ClockEpoch, epoch.as_bytes());
        if ok {
            self.epoch = epoch.sequence;
            self.epoch_tsc0 = epoch.tsc0;
        }
        ok
    }

    /// The sequence number of the chunk's last clock epoch (0: none).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The traced exit's append: `call` as a [`Tag::ApiTicks`] entry (20 bytes), if the chunk's
    /// last epoch is number `sequence` (the clock's current one), the call fits the entry and
    /// the chunk has room; else `false`, nothing committed, and [`ChunkFill::push_call`]
    /// decides. Stored field by field in one pass, as [`ChunkFill::push_api`]. (A chunk without
    /// an epoch entry has epoch 0, which no epoch carries.)
    #[inline(always)]
    pub fn push_api_ticks(&mut self, payload: &mut [u8], call: &TickCall, sequence: u64) -> bool {
        let at = self.len();
        let Some(dst) = payload
            .get_mut(at..at + TICKS_API)
            .filter(|_| at + TICKS_API <= CHUNK_CAPACITY)
        else {
            return false;
        };
        debug_assert!(sequence != 0, "clock epochs are numbered from 1");
        if sequence != self.epoch || call.thread_id != self.tid {
            return false;
        }
        // Each value is stored before its range check (bytes past the commit word are never
        // read) and checked at once, so it is dead once checked and the exit keeps at most one
        // of them beside the call's own values. The steps must be forward ([`fits_forward`]):
        // an entry the reader would take is still one of signed steps.
        let header = entry_header(Tag::ApiTicks, TICKS_API - 4);
        dst[0..4].copy_from_slice(&header.to_le_bytes());
        dst[16..20].copy_from_slice(&call.kind.to_le_bytes());
        let id_step = call.correlation_id.wrapping_sub(self.api.correlation_id);
        dst[4..8].copy_from_slice(&(id_step as u32).to_le_bytes());
        if !fits_forward(id_step) {
            return false;
        }
        let start = call.start.wrapping_sub(self.epoch_tsc0);
        dst[8..12].copy_from_slice(&(start as u32).to_le_bytes());
        if !fits_forward(start) {
            return false;
        }
        let duration = call.end.wrapping_sub(call.start);
        dst[12..16].copy_from_slice(&(duration as u32).to_le_bytes());
        if duration >> 32 != 0 {
            return false;
        }
        // Only the correlation id is a base for what follows: a compact entry's start step
        // is from a converted start, which this entry does not have.
        self.api.correlation_id = call.correlation_id;
        self.advance(TICKS_API);
        true
    }

    /// `call` appended whichever way it fits, under `epoch` (the clock's current epoch): after
    /// a [`Tag::ClockEpoch`] entry when the chunk's last one is another, as a tick-timed entry
    /// when it fits one ([`ChunkFill::push_api_ticks`] decides), else converted
    /// ([`ChunkFill::push_api`]). All or nothing: `false`, nothing written, when the chunk has
    /// no room for the epoch entry and a whole API entry.
    pub fn push_call(
        &mut self,
        payload: &mut [u8],
        call: &TickCall,
        epoch: &ClockEpochRecord,
    ) -> bool {
        if epoch.sequence == 0 {
            return self.push_api(payload, &call.record(epoch));
        }
        let new_epoch = self.epoch != epoch.sequence;
        let epoch_entry = if new_epoch { EPOCH_ENTRY } else { 0 };
        if self.len() + epoch_entry + WHOLE_API > CHUNK_CAPACITY.min(payload.len()) {
            return false;
        }
        if new_epoch {
            self.push_epoch(payload, epoch);
        }
        self.push_api_ticks(payload, call, epoch.sequence)
            || self.push_api(payload, &call.record(epoch))
    }

    /// Appends a string definition. A text longer than [`MAX_STRING`] does not fit one entry:
    /// it is cut at a character boundary to at most [`MAX_CUT_STRING`] bytes and written as a
    /// [`Tag::StringCut`] entry that keeps its full length, so the reader can say so.
    pub fn push_string(&mut self, payload: &mut [u8], id: StringId, text: &str) -> bool {
        if text.len() <= MAX_STRING {
            return self.push_parts(
                payload,
                Tag::StringDef,
                &[&id.to_le_bytes(), text.as_bytes()],
            );
        }
        let kept = truncate(text, MAX_CUT_STRING);
        self.push_parts(
            payload,
            Tag::StringCut,
            &[
                &id.to_le_bytes(),
                &(text.len() as u64).to_le_bytes(),
                kept.as_bytes(),
            ],
        )
    }

    /// Appends a JSON document (`false` if it is longer than [`MAX_ENTRY`]).
    pub fn push_json(&mut self, payload: &mut [u8], json: &str) -> bool {
        self.push_parts(payload, Tag::Json, &[json.as_bytes()])
    }

    /// The commit word to publish after a push.
    #[inline]
    pub fn commit(&self) -> u64 {
        self.commit
    }

    /// Payload bytes used.
    pub fn len(&self) -> usize {
        self.commit as u32 as usize
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0
    }

    /// Entries appended.
    pub fn entries(&self) -> u32 {
        (self.commit >> 32) as u32
    }

    /// The checksum a sealed chunk carries (over the used part of `payload`).
    pub fn checksum(&self, payload: &[u8]) -> u32 {
        chunk_checksum(&payload[..self.len()])
    }
}

fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Builds a log in memory with the writer's exact format (for tests, examples and tools that
/// produce logs without a shared mapping): the header counts every chunk up to the last one
/// handed out, as the writer's does.
#[derive(Debug, Clone)]
pub struct LogBuilder {
    bytes: Vec<u8>,
    chunks: u32,
}

impl LogBuilder {
    /// A log with `header` and no chunks.
    pub fn new(header: FileHeader) -> Self {
        Self {
            bytes: header.encode(),
            chunks: 0,
        }
    }

    /// Appends a chunk of thread 1 filled by `fill`; sealed (checksummed) when `seal`, else
    /// left open as a process that died would leave it.
    pub fn chunk(&mut self, seal: bool, fill: impl FnOnce(&mut ChunkFill, &mut [u8])) -> &mut Self {
        self.thread_chunk(1, seal, fill)
    }

    /// [`LogBuilder::chunk`] for a chunk whose header names thread `tid` (API records of that
    /// thread are then stored compact where they fit).
    pub fn thread_chunk(
        &mut self,
        tid: u32,
        seal: bool,
        fill: impl FnOnce(&mut ChunkFill, &mut [u8]),
    ) -> &mut Self {
        let mut chunk = vec![0u8; CHUNK_SIZE];
        chunk[..CHUNK_HEADER_LEN].copy_from_slice(&open_chunk_header(self.chunks, tid));
        let mut f = ChunkFill::for_thread(tid);
        fill(&mut f, &mut chunk[CHUNK_HEADER_LEN..]);
        chunk[COMMIT_AT..COMMIT_AT + 8].copy_from_slice(&f.commit().to_le_bytes());
        if seal {
            let crc = f.checksum(&chunk[CHUNK_HEADER_LEN..]);
            chunk[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            chunk[SEAL_AT..SEAL_AT + 4].copy_from_slice(&SEALED.to_le_bytes());
        }
        self.bytes.extend_from_slice(&chunk);
        self.chunks += 1;
        let word = HeaderCounter::Chunks.encode(u64::from(self.chunks));
        self.bytes[CHUNKS_AT..CHUNKS_AT + 8].copy_from_slice(&word.to_le_bytes());
        self
    }

    /// Appends a chunk that was never handed out (all zeros: allocated ahead of the writers).
    /// Only unused chunks after the last handed-out one are what a writer leaves; one before a
    /// later [`LogBuilder::chunk`] reads as a handed-out chunk that was overwritten.
    pub fn unused_chunk(&mut self) -> &mut Self {
        self.bytes.resize(self.bytes.len() + CHUNK_SIZE, 0);
        self.chunks += 1;
        self
    }

    /// Sets a loss counter in the header.
    pub fn loss(&mut self, cause: LossCause, n: u64) -> &mut Self {
        let counter = HeaderCounter::Loss(cause);
        let at = counter.offset();
        self.bytes[at..at + 8].copy_from_slice(&counter.encode(n).to_le_bytes());
        self
    }

    /// The log's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEntry<'a> {
    /// Its tag.
    pub tag: Tag,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// A damaged part of a log, skipped by the reader.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Damage {
    /// Byte offset of the (first) damaged chunk, or of where missing chunks would start (0:
    /// the file header).
    pub offset: u64,
    /// What was wrong (with the number of chunks when it concerns several).
    pub reason: String,
    /// Records the chunks said they held and that were not read elsewhere (0 when that cannot
    /// be known).
    pub records: u64,
    /// Chunks concerned (damaged ones in a row, or missing ones; 0 for the file header).
    pub chunks: u64,
}

/// Errors that make a log unreadable as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// Empty, shorter than its header, or neither its header nor its first chunk is
    /// recognisable.
    #[error("not a rocprof record log ({0})")]
    NotALog(&'static str),
    /// Written by an incompatible version.
    #[error(
        "record log version {0} is not supported (this build reads versions {OLDEST_VERSION} to {VERSION})"
    )]
    Version(u32),
    /// Reading failed.
    #[error("cannot read the record log: {0}")]
    Io(#[from] std::io::Error),
    /// The records beyond what is held in memory could not be spilled to disk.
    #[error("{0} ({1} records could not be kept); free space there or point TMPDIR elsewhere")]
    Spill(crate::records::SpillError, u64),
}

/// What a walk over a log found besides its entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkOutcome {
    /// The header (from the file, or the fallback when the file's was damaged).
    pub header: FileHeader,
    /// The log's format version (0 when its header was damaged).
    pub version: u32,
    /// Loss counters the writer kept (zero when the header was damaged, and each one whose
    /// check failed), plus what the reader itself could not read.
    pub losses: LossCounts,
    /// Damaged chunks (and header), in file order; damage of one kind in consecutive chunks is
    /// one entry.
    pub damage: Vec<Damage>,
    /// Chunks holding records.
    pub chunks: u64,
    /// Chunks that were still open (not sealed) when the log was read.
    pub open_chunks: u64,
    /// Chunks the writer handed out, as its header says (`None`: unknown — a version-2 log, or
    /// a damaged header).
    pub chunks_written: Option<u64>,
}

/// How a chunk is damaged; consecutive chunks damaged the same way are reported once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Torn,
    Magic,
    Commit,
    Seal,
    Checksum,
    Entries,
    Repeat,
    OutOfPlace,
    Missing,
}

impl Kind {
    /// What several chunks in a row share.
    fn summary(self) -> &'static str {
        match self {
            Self::Torn => "torn chunks",
            Self::Magic => "bad chunk magic",
            Self::Commit => "commit words that claim more payload than a chunk holds",
            Self::Seal => "bad seal marks",
            Self::Checksum => "chunk checksum mismatch",
            Self::Entries => "entries that do not match their chunk's commit word",
            Self::Repeat => {
                "each carries the index of a chunk read already: copies, skipped (nothing is counted twice)"
            }
            Self::OutOfPlace => {
                "their indexes do not match their places in the file (moved or copied within it): skipped"
            }
            Self::Missing => {
                "all zeros, although the writer handed them out: overwritten after they were written"
            }
        }
    }
}

/// One damaged chunk.
struct Problem {
    kind: Kind,
    reason: String,
    records: u64,
}

/// The damage of a walk, gathered: consecutive chunks damaged the same way become one report
/// (with their number), so a region of thousands of bad chunks is one line, not thousands.
#[derive(Default)]
struct Reports {
    done: Vec<Damage>,
    run: Option<(Kind, Damage)>,
}

impl Reports {
    fn header(&mut self, reason: String) {
        self.done.push(Damage {
            offset: 0,
            reason,
            records: 0,
            chunks: 0,
        });
    }

    fn chunk(&mut self, offset: u64, p: Problem) {
        if let Some((kind, d)) = &mut self.run
            && *kind == p.kind
            && d.offset + d.chunks * CHUNK_SIZE as u64 == offset
        {
            d.chunks += 1;
            d.records = d.records.saturating_add(p.records);
            return;
        }
        self.flush();
        self.run = Some((
            p.kind,
            Damage {
                offset,
                reason: p.reason,
                records: p.records,
                chunks: 1,
            },
        ));
    }

    fn flush(&mut self) {
        if let Some((kind, mut d)) = self.run.take() {
            if d.chunks > 1 {
                d.reason = format!(
                    "{} chunks in a row, to byte {}: {}",
                    d.chunks,
                    d.offset + d.chunks * CHUNK_SIZE as u64,
                    kind.summary()
                );
            }
            self.done.push(d);
        }
    }

    fn finish(mut self) -> Vec<Damage> {
        self.flush();
        self.done
    }
}

/// Which chunk places were read intact (one bit per place in the file, so its size follows the
/// file's, never a value read from it).
#[derive(Default)]
struct Places(Vec<u64>);

impl Places {
    fn set(&mut self, place: u64) {
        let word = (place / 64) as usize;
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (place % 64);
    }

    fn get(&self, place: u64) -> bool {
        self.0
            .get((place / 64) as usize)
            .is_some_and(|w| w & (1 << (place % 64)) != 0)
    }
}

/// Reads a whole log from `source`, chunk by chunk (memory: one chunk, and a bit per chunk),
/// calling `visit` for every entry of every intact chunk. A damaged chunk is reported in
/// [`WalkOutcome::damage`] and skipped; reading goes on at the next chunk. So is a chunk out
/// of its place, a handed-out chunk that is all zeros, and a file that ends before the last
/// chunk its header counts. When the file header is damaged but chunks follow, `fallback`
/// supplies the header (e.g. the pid from the file name) and the damage is reported at
/// offset 0; so are header counters whose check fails (they are left out, not believed).
pub fn walk(
    mut source: impl Read,
    fallback: Option<FileHeader>,
    mut visit: impl FnMut(RawEntry<'_>),
) -> Result<WalkOutcome, LogError> {
    let mut head = vec![0u8; HEADER_LEN];
    let got = read_full(&mut source, &mut head)?;
    let mut out = WalkOutcome::default();
    let mut reports = Reports::default();
    let header_ok = match FileHeader::decode(&head[..got]) {
        Ok((h, version)) => {
            out.header = h;
            out.version = version;
            let counts = header_counts(&head, version);
            out.losses = counts.losses;
            out.chunks_written = counts.chunks;
            if let Some(reason) = counts.problem {
                reports.header(reason);
            }
            true
        }
        Err(HeaderProblem::Version(v)) => return Err(LogError::Version(v)),
        Err(HeaderProblem::Short) if got == 0 => {
            return Err(LogError::NotALog("the file is empty"));
        }
        Err(HeaderProblem::Short) => {
            return Err(LogError::NotALog("the file is shorter than a log header"));
        }
        Err(HeaderProblem::Damaged(why)) => {
            reports.header(format!(
                "damaged file header ({why}); its loss counters are unknown"
            ));
            false
        }
    };
    let written = out.chunks_written;
    let mut chunk = vec![0u8; CHUNK_SIZE];
    let mut intact = Places::default();
    let mut place: u64 = 0;
    loop {
        let n = read_full(&mut source, &mut chunk)?;
        if n == 0 {
            break;
        }
        if place == 0 && !header_ok {
            // Without a header, go on only if the first chunk is recognisably a chunk.
            if n < CHUNK_HEADER_LEN || u32_at(&chunk, 0) != CHUNK_MAGIC {
                return Err(LogError::NotALog("bad header and no recognisable chunk"));
            }
            out.header = fallback.unwrap_or_default();
        }
        let offset = HEADER_LEN as u64 + place * CHUNK_SIZE as u64;
        let bytes = &chunk[..n];
        let handed_out = written.is_some_and(|w| place < w);
        let problem = match check_chunk(bytes) {
            ChunkState::Unused if handed_out && n < CHUNK_SIZE => Some(Problem {
                kind: Kind::Torn,
                reason: format!("torn chunk: {n} of {CHUNK_SIZE} bytes"),
                records: 0,
            }),
            ChunkState::Unused if handed_out => Some(Problem {
                kind: Kind::Missing,
                reason: format!(
                    "chunk {place} is all zeros, although the writer handed it out: it was overwritten after it was written"
                ),
                records: 0,
            }),
            ChunkState::Unused => None,
            ChunkState::Intact { index, entries, .. } if u64::from(index) != place => {
                let index = u64::from(index);
                Some(if index < place && intact.get(index) {
                    Problem {
                        kind: Kind::Repeat,
                        reason: format!(
                            "chunk {place} carries the index of chunk {index}, which was read already: a copy, skipped (nothing is counted twice)"
                        ),
                        records: 0,
                    }
                } else {
                    Problem {
                        kind: Kind::OutOfPlace,
                        reason: format!(
                            "chunk {place} carries index {index}: it does not belong here (moved or copied within the file), skipped"
                        ),
                        records: u64::from(entries).min(MAX_ENTRIES),
                    }
                })
            }
            ChunkState::Intact {
                len,
                entries,
                sealed,
                ..
            } => {
                let payload = &bytes[CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + len];
                match split_entries(payload, entries) {
                    Ok(()) => {
                        for_each_entry(payload, u32_at(bytes, TID_AT), &mut visit);
                        out.chunks += 1;
                        out.open_chunks += u64::from(!sealed);
                        intact.set(place);
                        None
                    }
                    Err(reason) => Some(Problem {
                        kind: Kind::Entries,
                        reason,
                        records: u64::from(entries).min(MAX_ENTRIES),
                    }),
                }
            }
            ChunkState::Damaged {
                kind,
                reason,
                records,
            } => Some(Problem {
                kind,
                reason,
                records,
            }),
        };
        if let Some(p) = problem {
            out.losses.add(LossCause::Damaged, p.records);
            reports.chunk(offset, p);
        }
        place += 1;
        if n < CHUNK_SIZE {
            break;
        }
    }
    if !header_ok && place == 0 {
        return Err(LogError::NotALog("bad header and no chunks"));
    }
    if let Some(w) = written
        && place < w
    {
        reports.flush();
        let missing = w - place;
        reports.done.push(Damage {
            offset: HEADER_LEN as u64 + place * CHUNK_SIZE as u64,
            reason: format!(
                "the log ends early: {missing} of the {w} chunks its writer handed out are missing (the file was cut short after it was written), so what they held is unknown"
            ),
            records: 0,
            chunks: missing,
        });
    }
    out.damage = reports.finish();
    Ok(out)
}

/// Reads until `buf` is full or the source ends; returns the bytes read.
fn read_full(source: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

enum ChunkState {
    Unused,
    Intact {
        len: usize,
        entries: u32,
        sealed: bool,
        index: u32,
    },
    Damaged {
        kind: Kind,
        reason: String,
        records: u64,
    },
}

/// Most records a chunk can hold (each entry takes at least its 4-byte header).
const MAX_ENTRIES: u64 = (CHUNK_CAPACITY / 4) as u64;

fn check_chunk(b: &[u8]) -> ChunkState {
    if b.len() < CHUNK_SIZE {
        if b.iter().all(|&x| x == 0) {
            return ChunkState::Unused;
        }
        return ChunkState::Damaged {
            kind: Kind::Torn,
            reason: format!("torn chunk: {} of {CHUNK_SIZE} bytes", b.len()),
            records: 0,
        };
    }
    let commit = u64_at(b, COMMIT_AT);
    let (entries, len) = ((commit >> 32) as u32, (commit & 0xFFFF_FFFF) as usize);
    let plausible = u64::from(entries).min(MAX_ENTRIES);
    let magic = u32_at(b, 0);
    if magic != CHUNK_MAGIC {
        if b[..CHUNK_HEADER_LEN].iter().all(|&x| x == 0)
            && b[CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + 4] == [0; 4]
        {
            return ChunkState::Unused;
        }
        return ChunkState::Damaged {
            kind: Kind::Magic,
            reason: "bad chunk magic".into(),
            records: plausible,
        };
    }
    if len > CHUNK_CAPACITY {
        return ChunkState::Damaged {
            kind: Kind::Commit,
            reason: format!("commit word claims {len} payload bytes (at most {CHUNK_CAPACITY})"),
            records: plausible,
        };
    }
    let checksum: Option<fn(&[u8]) -> u32> = match u32_at(b, SEAL_AT) {
        0 => None,
        SEALED => Some(chunk_checksum),
        SEALED_CRC32 => Some(crc32fast::hash),
        other => {
            return ChunkState::Damaged {
                kind: Kind::Seal,
                reason: format!("bad seal mark {other:#x}"),
                records: plausible,
            };
        }
    };
    let sealed = checksum.is_some();
    if checksum
        .is_some_and(|sum| sum(&b[CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + len]) != u32_at(b, CRC_AT))
    {
        return ChunkState::Damaged {
            kind: Kind::Checksum,
            reason: "chunk checksum mismatch".into(),
            records: plausible,
        };
    }
    ChunkState::Intact {
        len,
        entries,
        sealed,
        index: u32_at(b, INDEX_AT),
    }
}

/// Checks that `payload` holds exactly `expected` well-formed entries.
fn split_entries(payload: &[u8], expected: u32) -> Result<(), String> {
    let mut at = 0;
    let mut n: u64 = 0;
    while at < payload.len() {
        if payload.len() - at < 4 {
            return Err("truncated entry header".into());
        }
        let tag = u16::from_le_bytes([payload[at], payload[at + 1]]);
        let len = u16::from_le_bytes([payload[at + 2], payload[at + 3]]) as usize;
        if Tag::from_u16(tag).is_none() {
            return Err(format!("unknown entry tag {tag}"));
        }
        let end = at + 4 + len;
        if end > payload.len() {
            return Err("entry runs past its chunk's commit".into());
        }
        n += 1;
        at = end;
    }
    if n != u64::from(expected) {
        return Err(format!("chunk commits {expected} entries but holds {n}"));
    }
    Ok(())
}

/// Visits the entries of a payload already checked by [`split_entries`], of a chunk written by
/// thread `tid`: a compact API entry is visited as the [`Tag::Api`] record it stands for (one
/// whose length is wrong as itself, for the caller to count malformed).
fn for_each_entry(payload: &[u8], tid: u32, visit: &mut impl FnMut(RawEntry<'_>)) {
    let mut at = 0;
    let mut base = ApiBase::default();
    let mut epoch: Option<ClockEpochRecord> = None;
    while at + 4 <= payload.len() {
        let tag = u16::from_le_bytes([payload[at], payload[at + 1]]);
        let len = u16::from_le_bytes([payload[at + 2], payload[at + 3]]) as usize;
        let end = at + 4 + len;
        let bytes = &payload[at + 4..end];
        at = end;
        let Some(tag) = Tag::from_u16(tag) else {
            continue;
        };
        // An expanded call, and whether it moves the start base too (a tick-timed entry has
        // no converted start to step from).
        let expanded = match tag {
            Tag::ApiCompact => ApiCompactRecord::read_from_bytes(bytes)
                .ok()
                .map(|c| (base.expand(&c, tid), true)),
            Tag::ApiTicks => match (ApiTicksRecord::read_from_bytes(bytes), &epoch) {
                (Ok(t), Some(e)) => Some((t.expand(&base, e, tid), false)),
                _ => None,
            },
            Tag::Api => {
                if let Ok(record) = ApiRecord::read_from_bytes(bytes) {
                    base = ApiBase::after(&record);
                }
                None
            }
            Tag::ClockEpoch => {
                epoch = ClockEpochRecord::read_from_bytes(bytes).ok();
                None
            }
            _ => None,
        };
        match expanded {
            Some((record, moves_start)) => {
                base.correlation_id = record.correlation_id;
                if moves_start {
                    base.start = record.start;
                }
                visit(RawEntry {
                    tag: Tag::Api,
                    bytes: record.as_bytes(),
                });
            }
            // Anything else as itself (a compact entry that could not be read, for the
            // caller to count malformed).
            None => visit(RawEntry { tag, bytes }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_round_trip_and_a_word_of_ones_is_damage() {
        let mut slots = vec![HeaderCounter::Chunks];
        slots.extend(LossCause::ALL.map(HeaderCounter::Loss));
        for c in &slots {
            for v in [0, 1, 2, 7, 1 << 20, COUNTER_MAX - 1, COUNTER_MAX] {
                assert_eq!(c.decode(c.encode(v)), Some(v), "{c:?} {v}");
            }
            assert_eq!(c.encode(u64::MAX), c.encode(COUNTER_MAX), "saturates");
            assert_eq!(c.decode(u64::MAX), None, "{c:?}: all ones");
            assert_eq!(
                c.decode(COUNTER_MAX),
                None,
                "{c:?}: a value without its check"
            );
            assert_eq!(c.decode(1 << 40), None, "{c:?}: a check without a value");
            assert_eq!(c.add(c.encode(5), 3).and_then(|w| c.decode(w)), Some(8));
            assert_eq!(c.add(u64::MAX, 3), None, "a damaged counter stays damaged");
        }
        // A count moved to another counter's place does not pass there.
        let w = HeaderCounter::Loss(LossCause::NoSpace).encode(12);
        assert_eq!(HeaderCounter::Loss(LossCause::NoBuffer).decode(w), None);
        assert_eq!(HeaderCounter::Chunks.decode(w), None);
    }

    #[test]
    fn long_strings_say_how_long_they_were() {
        let mut payload = vec![0u8; CHUNK_CAPACITY];
        let mut f = ChunkFill::default();
        assert!(f.push_string(&mut payload, 3, &"x".repeat(MAX_STRING)));
        let whole = f.len();
        assert_eq!(
            u16::from_le_bytes([payload[0], payload[1]]),
            Tag::StringDef as u16
        );
        let mut f = ChunkFill::default();
        assert!(f.push_string(&mut payload, 3, &"x".repeat(MAX_STRING + 1)));
        assert_eq!(
            u16::from_le_bytes([payload[0], payload[1]]),
            Tag::StringCut as u16
        );
        assert_eq!(u64_at(&payload, 8), MAX_STRING as u64 + 1);
        assert_eq!(f.len(), 4 + 12 + MAX_CUT_STRING);
        assert!(f.len() <= whole);
    }
}
