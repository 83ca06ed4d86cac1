//! The record log's format: one file per process image, made of fixed-size chunks that the
//! writing threads fill in place through a shared file mapping, and a reader that survives
//! damage.
//!
//! ```text
//! file    = header chunk*                       (header: HEADER_LEN bytes, chunks: CHUNK_SIZE)
//! header  = "RPRFLOG\0" version:u32 header_len:u32 pid:u32 image:u32 created_ns:u64
//!           chunk_size:u32 ppid:u32 crc32(bytes 0..40):u32 reserved…   losses:[u64; 8] at 64
//! chunk   = magic:u32 ("CHNK") index:u32 commit:u64 crc32:u32 sealed:u32 tid:u32 reserved:u32
//!           payload[CHUNK_CAPACITY]
//! commit  = entries << 32 | payload_len   (one 64-bit store after each entry is complete)
//! entry   = tag:u16 len:u16 bytes[len]
//! ```
//!
//! All integers are little-endian. A writer fills its chunk's payload and then publishes the
//! new commit word with a single store, so a process that dies at any instant leaves every
//! chunk consistent up to its last commit: the reader trusts the commit word of an open chunk
//! and, once a chunk is full (or the process exits), its checksum (`sealed` = [`SEALED`]).
//! Chunks sit at fixed offsets, so a damaged chunk costs only itself: the reader goes on with
//! the next one. A chunk whose header is all zeros was never handed out.
//!
//! The loss counters in the header are updated in place by the writing process (they are not
//! covered by the header checksum).

use crate::loss::{LossCause, LossCounts};
use crate::record::{FixedRecord, StringId, Tag};
use std::io::Read;

/// First bytes of every log.
pub const MAGIC: [u8; 8] = *b"RPRFLOG\0";
/// Format version written; readers refuse others.
pub const VERSION: u32 = 2;
/// Size of the file header (one page, so the chunks are page-aligned in the file).
pub const HEADER_LEN: usize = 4096;
/// Offset of the loss counters in the header.
pub const LOSSES_AT: usize = 64;
/// Size of a chunk, header included.
pub const CHUNK_SIZE: usize = 64 * 1024;
/// Magic of each chunk ("CHNK").
pub const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"CHNK");
/// Size of a chunk header.
pub const CHUNK_HEADER_LEN: usize = 32;
/// Offset of the commit word in a chunk header.
pub const COMMIT_AT: usize = 8;
/// Offset of a sealed chunk's CRC-32 in its header.
pub const CRC_AT: usize = 16;
/// Offset of the seal mark ([`SEALED`] once the CRC is valid) in a chunk header.
pub const SEAL_AT: usize = 20;
/// Payload capacity of one chunk.
pub const CHUNK_CAPACITY: usize = CHUNK_SIZE - CHUNK_HEADER_LEN;
/// The `sealed` value of a chunk whose checksum covers its committed payload.
pub const SEALED: u32 = 0x5EA1_ED01;
/// Longest variable-length entry (strings, JSON) that fits even an empty chunk next to its
/// 4-byte entry header.
pub const MAX_ENTRY: usize = CHUNK_CAPACITY - 4;

const _: () = assert!(MAX_ENTRY <= u16::MAX as usize);
const _: () = assert!(LOSSES_AT + 8 * LossCause::COUNT <= HEADER_LEN);

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
    /// The header's bytes (loss counters zero).
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

    /// Decodes a header; `Err` says what is wrong.
    fn decode(b: &[u8]) -> Result<Self, HeaderProblem> {
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
        if version != VERSION {
            return Err(HeaderProblem::Version(version));
        }
        if u32_at(b, 12) as usize != HEADER_LEN || u32_at(b, 32) as usize != CHUNK_SIZE {
            return Err(HeaderProblem::Damaged("unexpected header or chunk size"));
        }
        Ok(Self {
            pid: u32_at(b, 16),
            image: u32_at(b, 20),
            created_ns: u64_at(b, 24),
            ppid: u32_at(b, 36),
        })
    }
}

enum HeaderProblem {
    Short,
    Version(u32),
    Damaged(&'static str),
}

/// Packs a commit word.
fn commit_word(entries: u32, len: u32) -> u64 {
    (u64::from(entries) << 32) | u64::from(len)
}

/// The header bytes of a chunk handed out as number `index` (not sealed, nothing committed).
pub fn open_chunk_header(index: u32, tid: u32) -> [u8; CHUNK_HEADER_LEN] {
    let mut h = [0u8; CHUNK_HEADER_LEN];
    h[..4].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
    h[4..8].copy_from_slice(&index.to_le_bytes());
    h[24..28].copy_from_slice(&tid.to_le_bytes());
    h
}

/// Fills a chunk's payload, entry by entry. The caller owns the payload bytes and publishes
/// [`ChunkFill::commit`] after each successful push.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkFill {
    len: u32,
    entries: u32,
}

impl ChunkFill {
    /// Appends one entry made of `parts`; `false` (nothing written) if it does not fit.
    #[inline]
    pub fn push_parts(&mut self, payload: &mut [u8], tag: Tag, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let at = self.len as usize;
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
        self.len = end as u32;
        self.entries += 1;
        true
    }

    /// Appends a fixed-size record (the traced path: one bounds check, three copies).
    #[inline]
    pub fn push<R: FixedRecord>(&mut self, payload: &mut [u8], record: &R) -> bool {
        let bytes = record.as_bytes();
        let at = self.len as usize;
        let end = at + 4 + bytes.len();
        let Some(dst) = payload.get_mut(at..end).filter(|_| end <= CHUNK_CAPACITY) else {
            return false;
        };
        let (head, body) = dst.split_at_mut(4);
        head[..2].copy_from_slice(&(R::TAG as u16).to_le_bytes());
        head[2..].copy_from_slice(&(bytes.len() as u16).to_le_bytes());
        body.copy_from_slice(bytes);
        self.len = end as u32;
        self.entries += 1;
        true
    }

    /// Appends a string definition (a text too long for one entry is cut at a character
    /// boundary).
    pub fn push_string(&mut self, payload: &mut [u8], id: StringId, text: &str) -> bool {
        let text = truncate(text, MAX_ENTRY - 4);
        self.push_parts(
            payload,
            Tag::StringDef,
            &[&id.to_le_bytes(), text.as_bytes()],
        )
    }

    /// Appends a JSON document (`false` if it is longer than [`MAX_ENTRY`]).
    pub fn push_json(&mut self, payload: &mut [u8], json: &str) -> bool {
        self.push_parts(payload, Tag::Json, &[json.as_bytes()])
    }

    /// The commit word to publish after a push.
    #[inline]
    pub fn commit(&self) -> u64 {
        commit_word(self.entries, self.len)
    }

    /// Payload bytes used.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries appended.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// The checksum a sealed chunk carries (over the used part of `payload`).
    pub fn checksum(&self, payload: &[u8]) -> u32 {
        crc32fast::hash(&payload[..self.len as usize])
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
/// produce logs without a shared mapping).
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

    /// Appends a chunk filled by `fill`; sealed (checksummed) when `seal`, else left open as a
    /// process that died would leave it.
    pub fn chunk(&mut self, seal: bool, fill: impl FnOnce(&mut ChunkFill, &mut [u8])) -> &mut Self {
        let mut chunk = vec![0u8; CHUNK_SIZE];
        chunk[..CHUNK_HEADER_LEN].copy_from_slice(&open_chunk_header(self.chunks, 1));
        let mut f = ChunkFill::default();
        fill(&mut f, &mut chunk[CHUNK_HEADER_LEN..]);
        chunk[COMMIT_AT..COMMIT_AT + 8].copy_from_slice(&f.commit().to_le_bytes());
        if seal {
            let crc = f.checksum(&chunk[CHUNK_HEADER_LEN..]);
            chunk[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            chunk[SEAL_AT..SEAL_AT + 4].copy_from_slice(&SEALED.to_le_bytes());
        }
        self.bytes.extend_from_slice(&chunk);
        self.chunks += 1;
        self
    }

    /// Appends a chunk that was never handed out (all zeros).
    pub fn unused_chunk(&mut self) -> &mut Self {
        self.bytes.resize(self.bytes.len() + CHUNK_SIZE, 0);
        self.chunks += 1;
        self
    }

    /// Sets a loss counter in the header.
    pub fn loss(&mut self, cause: LossCause, n: u64) -> &mut Self {
        let at = LOSSES_AT + 8 * cause as usize;
        self.bytes[at..at + 8].copy_from_slice(&n.to_le_bytes());
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
    /// Byte offset of the damaged chunk (0: the file header).
    pub offset: u64,
    /// What was wrong.
    pub reason: String,
    /// Records the chunk said it held (0 when that cannot be known).
    pub records: u64,
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
    #[error("record log version {0} is not supported (this build reads version {VERSION})")]
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
    /// Loss counters the writer kept (zero when the header was damaged), plus what the reader
    /// itself could not read.
    pub losses: LossCounts,
    /// Damaged chunks (and header), in file order.
    pub damage: Vec<Damage>,
    /// Chunks holding records.
    pub chunks: u64,
    /// Chunks that were still open (not sealed) when the log was read.
    pub open_chunks: u64,
}

/// Reads a whole log from `source`, chunk by chunk (memory: one chunk), calling `visit` for
/// every entry of every intact chunk. A damaged chunk is reported in
/// [`WalkOutcome::damage`] and skipped; reading goes on at the next chunk. When the file header
/// is damaged but chunks follow, `fallback` supplies the header (e.g. the pid from the file
/// name) and the damage is reported at offset 0.
pub fn walk(
    mut source: impl Read,
    fallback: Option<FileHeader>,
    mut visit: impl FnMut(RawEntry<'_>),
) -> Result<WalkOutcome, LogError> {
    let mut head = vec![0u8; HEADER_LEN];
    let got = read_full(&mut source, &mut head)?;
    let mut out = WalkOutcome::default();
    let header_ok = match FileHeader::decode(&head[..got]) {
        Ok(h) => {
            out.header = h;
            for c in LossCause::ALL {
                out.losses.add(c, u64_at(&head, LOSSES_AT + 8 * c as usize));
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
            out.damage.push(Damage {
                offset: 0,
                reason: format!("damaged file header ({why}); its loss counters are unknown"),
                records: 0,
            });
            false
        }
    };
    let mut chunk = vec![0u8; CHUNK_SIZE];
    let mut offset = HEADER_LEN as u64;
    let mut first = true;
    loop {
        let n = read_full(&mut source, &mut chunk)?;
        if n == 0 {
            break;
        }
        if first && !header_ok {
            // Without a header, go on only if the first chunk is recognisably a chunk.
            if n < CHUNK_HEADER_LEN || u32_at(&chunk, 0) != CHUNK_MAGIC {
                return Err(LogError::NotALog("bad header and no recognisable chunk"));
            }
            out.header = fallback.unwrap_or_default();
        }
        first = false;
        let bytes = &chunk[..n];
        match check_chunk(bytes) {
            ChunkState::Unused => {}
            ChunkState::Intact {
                len,
                entries,
                sealed,
            } => {
                let payload = &bytes[CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + len];
                match split_entries(payload, entries) {
                    Ok(()) => {
                        for_each_entry(payload, &mut visit);
                        out.chunks += 1;
                        out.open_chunks += u64::from(!sealed);
                    }
                    Err(reason) => out.damaged(offset, reason, u64::from(entries)),
                }
            }
            ChunkState::Damaged { reason, records } => out.damaged(offset, reason, records),
        }
        if n < CHUNK_SIZE {
            break;
        }
        offset += CHUNK_SIZE as u64;
    }
    if !header_ok && first {
        return Err(LogError::NotALog("bad header and no chunks"));
    }
    Ok(out)
}

impl WalkOutcome {
    fn damaged(&mut self, offset: u64, reason: String, records: u64) {
        self.losses.add(LossCause::Damaged, records);
        self.damage.push(Damage {
            offset,
            reason,
            records,
        });
    }
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
    },
    Damaged {
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
            reason: "bad chunk magic".into(),
            records: plausible,
        };
    }
    if len > CHUNK_CAPACITY {
        return ChunkState::Damaged {
            reason: format!("commit word claims {len} payload bytes (at most {CHUNK_CAPACITY})"),
            records: plausible,
        };
    }
    let sealed = match u32_at(b, SEAL_AT) {
        0 => false,
        SEALED => true,
        other => {
            return ChunkState::Damaged {
                reason: format!("bad seal mark {other:#x}"),
                records: plausible,
            };
        }
    };
    if sealed && crc32fast::hash(&b[CHUNK_HEADER_LEN..CHUNK_HEADER_LEN + len]) != u32_at(b, CRC_AT)
    {
        return ChunkState::Damaged {
            reason: "chunk checksum mismatch".into(),
            records: plausible,
        };
    }
    ChunkState::Intact {
        len,
        entries,
        sealed,
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

/// Visits the entries of a payload already checked by [`split_entries`].
fn for_each_entry<'a>(payload: &'a [u8], visit: &mut impl FnMut(RawEntry<'a>)) {
    let mut at = 0;
    while at + 4 <= payload.len() {
        let tag = u16::from_le_bytes([payload[at], payload[at + 1]]);
        let len = u16::from_le_bytes([payload[at + 2], payload[at + 3]]) as usize;
        let end = at + 4 + len;
        if let Some(tag) = Tag::from_u16(tag) {
            visit(RawEntry {
                tag,
                bytes: &payload[at + 4..end],
            });
        }
        at = end;
    }
}
