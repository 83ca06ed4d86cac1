//! The record log: one append-only file per process, written in checksummed chunks by a
//! background thread, and read back up to the first damage.
//!
//! ```text
//! file   = header chunk*
//! header = "RPRFLOG\0" version:u32 header_len:u32 pid:u32 reserved:u32 created_ns:u64   (32 B)
//! chunk  = magic:u32 ("CHNK") payload_len:u32 entries:u32 crc32(payload):u32 payload
//! entry  = tag:u16 len:u16 bytes[len]
//! ```
//!
//! All integers are little-endian. A process that dies mid-write leaves at most a torn last
//! chunk; the reader stops there and keeps everything before it.

use crate::record::{FixedRecord, StringId, Tag};
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// First bytes of every log.
pub const MAGIC: [u8; 8] = *b"RPRFLOG\0";
/// Format version written; readers refuse others.
pub const VERSION: u32 = 1;
/// Size of the file header.
pub const HEADER_LEN: usize = 32;
/// Magic of each chunk ("CHNK").
pub const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"CHNK");
/// Size of a chunk header.
pub const CHUNK_HEADER_LEN: usize = 16;
/// Payload capacity of one chunk buffer.
pub const CHUNK_CAPACITY: usize = 64 * 1024;
/// Longest variable-length entry (strings, JSON) that fits even an empty chunk next to its
/// 4-byte entry header (the length field itself could say up to `u16::MAX`).
pub const MAX_ENTRY: usize = CHUNK_CAPACITY - 4;

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Process id of the writer.
    pub pid: u32,
    /// When the log was created (host timeline, ns).
    pub created_ns: u64,
}

impl FileHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[16..20].copy_from_slice(&self.pid.to_le_bytes());
        b[24..32].copy_from_slice(&self.created_ns.to_le_bytes());
        b
    }
}

/// A chunk's worth of encoded entries, filled on the traced thread without allocating.
///
/// The first [`CHUNK_HEADER_LEN`] bytes are reserved for the chunk header, so a finished chunk
/// is one contiguous buffer written with a single `write(2)`: chunks from different writers
/// (the log thread, a crash handler) never interleave in an `O_APPEND` file.
#[derive(Debug)]
pub struct ChunkBuffer {
    bytes: Vec<u8>,
    entries: u32,
}

impl Default for ChunkBuffer {
    fn default() -> Self {
        Self::with_vec(Vec::new())
    }
}

impl ChunkBuffer {
    /// Reuses `bytes` (cleared) as the buffer, with room for a whole chunk so that filling it
    /// never reallocates.
    pub fn with_vec(mut bytes: Vec<u8>) -> Self {
        bytes.clear();
        // `reserve_exact` counts from the length, which is 0 now.
        bytes.reserve_exact(CHUNK_HEADER_LEN + CHUNK_CAPACITY);
        bytes.extend_from_slice(&[0; CHUNK_HEADER_LEN]);
        Self { bytes, entries: 0 }
    }

    /// Appends a fixed-size record; `false` (nothing written) if the chunk is full.
    #[inline]
    pub fn push<R: FixedRecord>(&mut self, record: &R) -> bool {
        let bytes = record.as_bytes();
        if self.len() + 4 + bytes.len() > CHUNK_CAPACITY {
            return false;
        }
        let mut head = [0u8; 4];
        head[..2].copy_from_slice(&(R::TAG as u16).to_le_bytes());
        head[2..].copy_from_slice(&(bytes.len() as u16).to_le_bytes());
        self.bytes.extend_from_slice(&head);
        self.bytes.extend_from_slice(bytes);
        self.entries += 1;
        true
    }

    /// Appends a string definition (a text too long for one entry is cut at a character
    /// boundary); `false` if it does not fit in this chunk.
    pub fn push_string(&mut self, id: StringId, text: &str) -> bool {
        let text = truncate(text, MAX_ENTRY - 4);
        self.push_raw(Tag::StringDef, &[&id.to_le_bytes(), text.as_bytes()])
    }

    /// Appends a JSON document; `false` if it does not fit (or is too long).
    pub fn push_json(&mut self, json: &str) -> bool {
        json.len() <= MAX_ENTRY && self.push_raw(Tag::Json, &[json.as_bytes()])
    }

    #[inline]
    fn push_raw(&mut self, tag: Tag, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > MAX_ENTRY || self.len() + 4 + len > CHUNK_CAPACITY {
            return false;
        }
        self.bytes.extend_from_slice(&(tag as u16).to_le_bytes());
        self.bytes.extend_from_slice(&(len as u16).to_le_bytes());
        for p in parts {
            self.bytes.extend_from_slice(p);
        }
        self.entries += 1;
        true
    }

    /// Entries in the buffer.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Encoded payload length.
    pub fn len(&self) -> usize {
        self.bytes.len() - CHUNK_HEADER_LEN
    }

    /// Fills in the chunk header and returns the whole chunk (header and payload).
    pub fn finish(&mut self) -> &[u8] {
        let payload = &self.bytes[CHUNK_HEADER_LEN..];
        let crc = crc32fast::hash(payload);
        let len = payload.len() as u32;
        self.bytes[..4].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
        self.bytes[4..8].copy_from_slice(&len.to_le_bytes());
        self.bytes[8..12].copy_from_slice(&self.entries.to_le_bytes());
        self.bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        &self.bytes
    }

    /// Empties the buffer for reuse.
    pub fn clear(&mut self) {
        self.bytes.truncate(CHUNK_HEADER_LEN);
        self.entries = 0;
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

enum Msg {
    Chunk(ChunkBuffer),
    Flush(SyncSender<io::Result<()>>),
}

/// Writes chunks to the log on a background thread, so traced threads never wait for I/O
/// (unless more than a bounded number of chunks are in flight).
#[derive(Debug)]
pub struct LogWriter {
    tx: Option<SyncSender<Msg>>,
    spare: std::sync::Mutex<Receiver<Vec<u8>>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msg")
    }
}

impl LogWriter {
    /// Creates (truncating) the log at `path`, writes its header, and opens it for appending.
    pub fn create(path: &Path, header: FileHeader) -> io::Result<Self> {
        Self::create_shared(path, header).map(|(writer, _)| writer)
    }

    /// [`LogWriter::create`], also returning a second handle to the same open file
    /// (`O_APPEND`, close-on-exec) for a writer outside the log thread, such as a crash handler:
    /// whole chunks written through either never interleave.
    pub fn create_shared(path: &Path, header: FileHeader) -> io::Result<(Self, std::fs::File)> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)?;
        file.set_len(0)?;
        file.write_all(&header.encode())?;
        let twin = file.try_clone()?;
        Ok((Self::spawn(file)?, twin))
    }

    /// Appends to an already created log through `file` (opened with `O_APPEND`).
    pub fn spawn(file: std::fs::File) -> io::Result<Self> {
        let (tx, rx) = sync_channel::<Msg>(64);
        let (spare_tx, spare_rx) = sync_channel::<Vec<u8>>(64);
        let thread = std::thread::Builder::new()
            .name("rocprof-log".into())
            .spawn(move || write_loop(file, rx, spare_tx))?;
        Ok(Self {
            tx: Some(tx),
            spare: std::sync::Mutex::new(spare_rx),
            thread: Some(thread),
        })
    }

    /// An empty buffer, recycled from written chunks when one is available.
    pub fn buffer(&self) -> ChunkBuffer {
        let recycled = self.spare.lock().ok().and_then(|rx| rx.try_recv().ok());
        recycled.map_or_else(ChunkBuffer::default, ChunkBuffer::with_vec)
    }

    /// Queues a chunk for writing (empty buffers are dropped).
    pub fn submit(&self, buffer: ChunkBuffer) {
        if buffer.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Chunk(buffer));
        }
    }

    /// Waits until every submitted chunk is written to the file.
    pub fn flush(&self) -> io::Result<()> {
        let (done_tx, done_rx) = sync_channel(1);
        let Some(tx) = &self.tx else { return Ok(()) };
        tx.send(Msg::Flush(done_tx))
            .map_err(|_| io::Error::other("log writer stopped"))?;
        // Bounded: a writer thread that no longer exists (after fork) must not hang the caller.
        done_rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .map_err(|_| io::Error::other("log writer did not answer"))?
    }

    /// Writes everything still queued and closes the file.
    pub fn finish(mut self) -> io::Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> io::Result<()> {
        drop(self.tx.take());
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("log writer panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn write_loop(
    mut file: std::fs::File,
    rx: Receiver<Msg>,
    spare: SyncSender<Vec<u8>>,
) -> io::Result<()> {
    let mut status = Ok(());
    for msg in rx {
        match msg {
            Msg::Chunk(mut buffer) => {
                // One write per chunk: nothing is buffered here that a crash could lose.
                if status.is_ok() {
                    status = file.write_all(buffer.finish());
                }
                let _ = spare.try_send(buffer.bytes);
            }
            Msg::Flush(done) => {
                let result = match &status {
                    Ok(()) => Ok(()),
                    Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                };
                let _ = done.send(result);
            }
        }
    }
    status
}

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEntry<'a> {
    /// Its tag.
    pub tag: Tag,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// Where and why reading stopped early.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Damage {
    /// Byte offset of the damaged chunk.
    pub offset: usize,
    /// What was wrong.
    pub reason: String,
    /// Bytes from the damage to the end of the file (not read).
    pub bytes_lost: usize,
}

/// Errors that make a log unreadable as a whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogError {
    /// The file is shorter than its header or does not start with the magic.
    #[error("not a rocprof record log (bad or missing header)")]
    NotALog,
    /// Written by an incompatible version.
    #[error("record log version {0} is not supported (this build reads version {VERSION})")]
    Version(u32),
}

/// Parses the header and walks the chunks, calling `visit` for every entry of every intact
/// chunk. Stops at the first damaged chunk (torn, bad magic, bad checksum, malformed entry)
/// and reports it; entries of earlier chunks have been visited, none of the damaged one.
pub fn walk<'a>(
    bytes: &'a [u8],
    mut visit: impl FnMut(RawEntry<'a>),
) -> Result<(FileHeader, Option<Damage>), LogError> {
    if bytes.len() < HEADER_LEN || bytes[..8] != MAGIC {
        return Err(LogError::NotALog);
    }
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(LogError::Version(version));
    }
    let header_len = u32_at(bytes, 12) as usize;
    if header_len < HEADER_LEN || header_len > bytes.len() {
        return Err(LogError::NotALog);
    }
    let header = FileHeader {
        pid: u32_at(bytes, 16),
        created_ns: u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")),
    };
    let mut at = header_len;
    let damage = |at: usize, reason: String| Damage {
        offset: at,
        reason,
        bytes_lost: bytes.len() - at,
    };
    while at < bytes.len() {
        if bytes.len() - at < CHUNK_HEADER_LEN {
            return Ok((header, Some(damage(at, "torn chunk header".into()))));
        }
        if u32_at(bytes, at) != CHUNK_MAGIC {
            return Ok((header, Some(damage(at, "bad chunk magic".into()))));
        }
        let len = u32_at(bytes, at + 4) as usize;
        let entries = u32_at(bytes, at + 8);
        let crc = u32_at(bytes, at + 12);
        let body = at + CHUNK_HEADER_LEN;
        if len > bytes.len() - body {
            return Ok((
                header,
                Some(damage(
                    at,
                    format!("torn chunk: {} of {len} payload bytes", bytes.len() - body),
                )),
            ));
        }
        let payload = &bytes[body..body + len];
        if crc32fast::hash(payload) != crc {
            return Ok((header, Some(damage(at, "chunk checksum mismatch".into()))));
        }
        match split_entries(payload, entries) {
            Ok(list) => list.into_iter().for_each(&mut visit),
            Err(reason) => return Ok((header, Some(damage(at, reason)))),
        }
        at = body + len;
    }
    Ok((header, None))
}

fn split_entries(payload: &[u8], expected: u32) -> Result<Vec<RawEntry<'_>>, String> {
    // `expected` comes from the chunk header, which the checksum does not cover: a damaged count
    // must not size the allocation (every entry takes at least its 4-byte header).
    let mut out = Vec::with_capacity((expected as usize).min(payload.len() / 4));
    let mut at = 0;
    while at < payload.len() {
        if payload.len() - at < 4 {
            return Err("truncated entry header".into());
        }
        let tag = u16::from_le_bytes([payload[at], payload[at + 1]]);
        let len = u16::from_le_bytes([payload[at + 2], payload[at + 3]]) as usize;
        let Some(tag) = Tag::from_u16(tag) else {
            return Err(format!("unknown entry tag {tag}"));
        };
        let end = at + 4 + len;
        if end > payload.len() {
            return Err("entry runs past its chunk".into());
        }
        out.push(RawEntry {
            tag,
            bytes: &payload[at + 4..end],
        });
        at = end;
    }
    if out.len() != expected as usize {
        return Err(format!(
            "chunk declares {expected} entries but holds {}",
            out.len()
        ));
    }
    Ok(out)
}
