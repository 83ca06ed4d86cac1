//! Records of one kind in their canonical order, held in memory up to a bound and beyond it
//! spilled to disk as sorted runs, then read back merged.
//!
//! A log of 10 M API calls is 320 MB of records; holding them would make `rocprof`'s memory
//! grow with the run. A [`RecordsBuilder`] keeps at most one run ([`RUN_BYTES`]) in memory:
//! when it is full it is sorted and appended to one unlinked temporary file next to the log
//! (`O_TMPFILE`, so nothing is left behind however `rocprof` ends). Once one run is spilled
//! the last one is too, and so is a small set whose records would take the records held in
//! memory over [`MEMORY_BUDGET`] (many processes read together). [`Records::iter`] yields the records by value in order: straight from memory when
//! nothing was spilled, else merged from every run, each read back through a small buffer.
//! Runs of a time-ordered log barely overlap, so the merge mostly streams one run at a time
//! (it keeps emitting from the leading run while its head is not past the runner-up's).
//!
//! A spilled run is packed ([`Ordered::pack`]): each record is written as its differences from
//! the one before it in the run, in variable-length integers, in blocks of [`BLOCK_RECORDS`]
//! that each start from the zeroed record, so a block reads back on its own. An API call packs
//! into 6–12 bytes instead of 32, and the spill's writes and reads shrink with it (writing
//! fresh page-cache pages was most of what reading a large log cost). A block that does not
//! unpack to exactly its count of records in exactly its bytes fails the pass like a read error.
//!
//! A read error while iterating (the disk went away) ends that iteration early and is kept:
//! [`Records::check`] reports it, and every writer checks before it keeps its output.

use std::cmp::Reverse;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// How many bytes of records one run holds in memory before it is spilled.
pub const RUN_BYTES: usize = 32 << 20;

/// How many bytes of records one run holds when the records are known to be more than one run
/// of [`RUN_BYTES`] ([`RecordsBuilder::for_count`]): they will be spilled anyway, and a smaller
/// run is less fresh memory to fault in (on this project's VM, touching fresh memory costs
/// about 0.75 ms per MiB, more than sorting and packing it) and stays in the cache while it is
/// sorted and packed.
pub const SPILL_RUN_BYTES: usize = 4 << 20;

/// How many bytes of finished records all [`Records`] of this process may keep in memory
/// together; a builder whose last run would exceed it (or that spilled already) spills that
/// run too, so reading many processes' logs does not hold a run of each.
pub const MEMORY_BUDGET: usize = 64 << 20;

/// Bytes of finished records held in memory, over every [`Records`].
static HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Records per packed block of a spilled run (the unit read back while merging).
pub const BLOCK_RECORDS: usize = 4096;

/// Records unpacked from a block at a time while merging (each run's read-back buffer).
const UNPACK_BATCH: usize = 256;

/// Packed bytes gathered before they are written to the spill file (a few blocks: the buffer
/// stays in cache instead of growing to a whole packed run).
const WRITE_BYTES: usize = 256 << 10;

/// A record kind with a canonical order (total over the record's fields, so the order does not
/// depend on how the records arrived).
pub trait Ordered: Copy + FromBytes + IntoBytes + Immutable + KnownLayout + 'static {
    /// The sort key.
    type Key: Ord;
    /// This record's key.
    fn key(&self) -> Self::Key;

    /// The most bytes [`Ordered::pack`] writes for one record.
    const PACKED_MAX: usize = size_of::<Self>();

    /// Writes this record's spilled form at the front of `out` (at least
    /// [`Ordered::PACKED_MAX`] bytes long), given the record before it in its run (the zeroed
    /// record for the first of a block), and returns how many bytes it took. The default is
    /// the record's bytes as they are; [`Ordered::unpack`] must read back exactly what this
    /// wrote.
    fn pack(&self, prev: &Self, out: &mut [u8]) -> usize {
        let _ = prev;
        let bytes = self.as_bytes();
        out[..bytes.len()].copy_from_slice(bytes);
        bytes.len()
    }

    /// Reads one record written by [`Ordered::pack`] after `prev` from the front of `input`,
    /// advancing it; `None` when `input` does not hold one.
    fn unpack(prev: &Self, input: &mut &[u8]) -> Option<Self> {
        let _ = prev;
        let (r, rest) = Self::read_from_prefix(input).ok()?;
        *input = rest;
        Some(r)
    }
}

/// Writes `v` as a little-endian base-128 varint (7 bits a byte, high bit: more follow) at
/// `out[at..]` (room for the 10 bytes of the longest), returning the index after it.
#[inline]
fn put_varint(out: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
    at + 1
}

/// Reads a varint written by [`put_varint`]; `None` when `input` ends inside it or it is
/// longer than a `u64` holds.
#[inline]
fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for (k, &b) in input.iter().enumerate().take(10) {
        let bits = u64::from(b & 0x7F);
        if k == 9 && b > 1 {
            return None;
        }
        v |= bits << (7 * k);
        if b < 0x80 {
            *input = &input[k + 1..];
            return Some(v);
        }
    }
    None
}

/// A signed difference folded onto small unsigned values (0, −1, 1, −2, … → 0, 1, 2, 3, …).
#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

impl Ordered for crate::record::ApiRecord {
    /// Start, then the longest first (a caller before the calls it makes at an equal start),
    /// then the remaining fields.
    type Key = (u64, Reverse<u64>, u64, u32, u8, u16);
    fn key(&self) -> Self::Key {
        (
            self.start,
            Reverse(self.end),
            self.correlation_id,
            self.thread_id,
            self.domain,
            self.operation,
        )
    }

    /// Six varints of at most 10, 10, 10, 5, 3 and 3 bytes.
    const PACKED_MAX: usize = 41;

    /// The start's advance over the previous record's (small in a sorted run), the duration,
    /// the correlation id's and the thread id's differences from the previous record's, the
    /// operation, then the domain and reserved byte. Every difference wraps, so any record
    /// (even one that ends before it starts) packs and unpacks to itself.
    #[inline]
    fn pack(&self, prev: &Self, out: &mut [u8]) -> usize {
        let out = &mut out[..Self::PACKED_MAX];
        let mut at = put_varint(out, 0, self.start.wrapping_sub(prev.start));
        at = put_varint(out, at, zigzag(self.end.wrapping_sub(self.start) as i64));
        at = put_varint(
            out,
            at,
            zigzag(self.correlation_id.wrapping_sub(prev.correlation_id) as i64),
        );
        at = put_varint(
            out,
            at,
            zigzag(i64::from(self.thread_id.wrapping_sub(prev.thread_id) as i32)),
        );
        at = put_varint(out, at, u64::from(self.operation));
        put_varint(
            out,
            at,
            u64::from(self.domain) | (u64::from(self.reserved) << 8),
        )
    }

    #[inline]
    fn unpack(prev: &Self, input: &mut &[u8]) -> Option<Self> {
        let start = prev.start.wrapping_add(get_varint(input)?);
        let end = start.wrapping_add(unzigzag(get_varint(input)?) as u64);
        let correlation_id = prev
            .correlation_id
            .wrapping_add(unzigzag(get_varint(input)?) as u64);
        let thread = unzigzag(get_varint(input)?);
        let thread_id = prev
            .thread_id
            .wrapping_add(i32::try_from(thread).ok()? as u32);
        let operation = u16::try_from(get_varint(input)?).ok()?;
        let tail = u16::try_from(get_varint(input)?).ok()?;
        Some(crate::record::ApiRecord {
            correlation_id,
            start,
            end,
            thread_id,
            operation,
            domain: tail as u8,
            reserved: (tail >> 8) as u8,
        })
    }
}

/// Spilling failed: the temporary file could not be created, written or read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("spilling records to {}: {message}", dir.display())]
pub struct SpillError {
    /// Where the spill file is (or was to be).
    pub dir: PathBuf,
    /// What failed.
    pub message: String,
}

/// Collects records; see the module text.
pub struct RecordsBuilder<T> {
    buffer: Vec<T>,
    run_len: usize,
    dir: PathBuf,
    spill: Option<Spill>,
    failed: Option<SpillError>,
    dropped: u64,
    /// Whether every record in `buffer` came after the one before it in key order.
    in_order: bool,
}

impl<T: Ordered> RecordsBuilder<T> {
    /// A builder spilling into `dir` (else the system's temporary directory) with runs of
    /// [`RUN_BYTES`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_run_len(dir, RUN_BYTES / size_of::<T>().max(1))
    }

    /// A builder for about `expected` records: held in one run of [`RUN_BYTES`] when they fit
    /// it (nothing is spilled), else spilled in runs of [`SPILL_RUN_BYTES`]; room for the
    /// first run is reserved.
    pub fn for_count(dir: impl Into<PathBuf>, expected: usize) -> Self {
        let size = size_of::<T>().max(1);
        let run_bytes = if expected.saturating_mul(size) <= RUN_BYTES {
            RUN_BYTES
        } else {
            SPILL_RUN_BYTES
        };
        let mut b = Self::with_run_len(dir, run_bytes / size);
        b.reserve(expected);
        b
    }

    /// A builder whose runs hold `run_len` records (at least 1).
    pub fn with_run_len(dir: impl Into<PathBuf>, run_len: usize) -> Self {
        RecordsBuilder {
            buffer: Vec::new(),
            run_len: run_len.max(1),
            dir: dir.into(),
            spill: None,
            failed: None,
            dropped: 0,
            in_order: true,
        }
    }

    /// Room for `n` more records in memory (at most one run's worth).
    pub fn reserve(&mut self, n: usize) {
        self.buffer.reserve(n.min(self.run_len));
    }

    /// Adds a record. A spill failure is kept for [`RecordsBuilder::finish`]; records that
    /// arrive after it are counted, not kept.
    pub fn push(&mut self, record: T) {
        if self.failed.is_some() {
            self.dropped += 1;
            return;
        }
        if self.buffer.len() == self.run_len {
            let dropped = self.buffer.len() as u64;
            if let Err(e) = self.spill_buffer() {
                self.failed = Some(e);
                self.dropped += dropped + 1;
                self.buffer = Vec::new();
                return;
            }
        }
        if self.in_order && self.buffer.last().is_some_and(|l| record.key() < l.key()) {
            self.in_order = false;
        }
        self.buffer.push(record);
    }

    /// Sorts the buffer unless its records came in order (as a time-ordered log's mostly do:
    /// checking each record against the one before it while both are in the cache costs less
    /// than the sort's own pass over the run).
    fn sort_buffer(&mut self) {
        if !self.in_order {
            self.buffer.sort_unstable_by_key(T::key);
        }
        self.in_order = true;
    }

    /// Records added so far (kept or not).
    pub fn len(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.len()) + self.buffer.len() + self.dropped as usize
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn spill_buffer(&mut self) -> Result<(), SpillError> {
        self.sort_buffer();
        if self.spill.is_none() {
            self.spill = Some(Spill::create(&self.dir)?);
        }
        let spill = self.spill.as_mut().expect("created above");
        spill.append(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }

    /// The records in order, or why spilling failed (with how many records were lost).
    pub fn finish(mut self) -> Result<Records<T>, (SpillError, u64)> {
        if let Some(e) = self.failed.take() {
            return Err((e, self.dropped));
        }
        let bytes = self.buffer.len() * size_of::<T>();
        let held = HELD.load(std::sync::atomic::Ordering::Relaxed);
        if !self.buffer.is_empty() && (self.spill.is_some() || held + bytes > MEMORY_BUDGET) {
            let lost = self.buffer.len() as u64;
            self.spill_buffer().map_err(|e| (e, lost))?;
            self.buffer = Vec::new();
        }
        self.sort_buffer();
        self.buffer.shrink_to_fit();
        let spilled = self.spill.map(|s| {
            Arc::new(Spilled {
                file: s.file,
                dir: s.dir,
                runs: s.runs,
                blocks: s.blocks,
                failure: Mutex::new(None),
            })
        });
        let len = spilled.as_ref().map_or(0, |s| s.len()) + self.buffer.len();
        Ok(Records::new(self.buffer, spilled, len))
    }
}

/// A spill file being written.
struct Spill {
    file: File,
    dir: PathBuf,
    end: u64,
    runs: Vec<Run>,
    blocks: Vec<Block>,
    /// Packed bytes not yet written, `pending[..filled]` (they go at `end`).
    pending: Vec<u8>,
    filled: usize,
}

/// One sorted run in the spill file: its blocks, `blocks[first..first + count]`.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: usize,
    count: usize,
    len: usize,
}

/// One packed block of a run: `bytes` bytes at `offset` holding `records` records.
#[derive(Debug, Clone, Copy)]
struct Block {
    offset: u64,
    bytes: usize,
    records: usize,
}

impl Spill {
    /// An unlinked file in `dir`, else in the system's temporary directory.
    fn create(dir: &Path) -> Result<Self, SpillError> {
        let temp = std::env::temp_dir();
        let mut last = None;
        for dir in [dir, temp.as_path()] {
            match unlinked_file(dir) {
                Ok(file) => {
                    return Ok(Spill {
                        file,
                        dir: dir.to_owned(),
                        end: 0,
                        runs: Vec::new(),
                        blocks: Vec::new(),
                        pending: Vec::new(),
                        filled: 0,
                    });
                }
                Err(e) => last = Some((dir.to_owned(), e)),
            }
        }
        let (dir, e) = last.expect("two directories tried");
        Err(SpillError {
            dir,
            message: format!("cannot create a temporary file: {e}"),
        })
    }

    /// Packs a sorted run into blocks and writes it after the runs before it.
    fn append<T: Ordered>(&mut self, records: &[T]) -> Result<(), SpillError> {
        let first = self.blocks.len();
        let at = self.end;
        let written = self.pack_and_write(records);
        if let Err(e) = written {
            // Forget the blocks of a run that was not written whole.
            self.blocks.truncate(first);
            self.filled = 0;
            self.end = at;
            return Err(e);
        }
        self.runs.push(Run {
            first,
            count: self.blocks.len() - first,
            len: records.len(),
        });
        Ok(())
    }

    fn pack_and_write<T: Ordered>(&mut self, records: &[T]) -> Result<(), SpillError> {
        // Room for a whole block past the point where the bytes are written out.
        let room = WRITE_BYTES + BLOCK_RECORDS * T::PACKED_MAX;
        if self.pending.len() < room {
            self.pending.resize(room, 0);
        }
        let zero = T::new_zeroed();
        let mut offset = self.end + self.filled as u64;
        for block in records.chunks(BLOCK_RECORDS) {
            let from = self.filled;
            let mut prev = &zero;
            for r in block {
                self.filled += r.pack(prev, &mut self.pending[self.filled..]);
                prev = r;
            }
            let bytes = self.filled - from;
            self.blocks.push(Block {
                offset,
                bytes,
                records: block.len(),
            });
            offset += bytes as u64;
            if self.filled >= WRITE_BYTES {
                self.write_pending()?;
            }
        }
        self.write_pending()
    }

    fn write_pending(&mut self) -> Result<(), SpillError> {
        if self.filled == 0 {
            return Ok(());
        }
        let bytes = &self.pending[..self.filled];
        self.file
            .write_all_at(bytes, self.end)
            .map_err(|e| SpillError {
                dir: self.dir.clone(),
                message: format!("writing {} bytes: {e}", bytes.len()),
            })?;
        self.end += self.filled as u64;
        self.filled = 0;
        Ok(())
    }

    fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }
}

/// A file in `dir` no directory entry names: `O_TMPFILE` where the file system has it, else a
/// fresh name removed as soon as it is open.
fn unlinked_file(dir: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmpfile = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir);
    if let Ok(f) = tmpfile {
        return Ok(f);
    }
    // The file system has no O_TMPFILE (or refused it): a fresh name, removed at once.
    let name = dir.join(format!(
        ".rocprof-spill-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(&name)?;
    std::fs::remove_file(&name)?;
    Ok(f)
}

/// The spilled runs, shared by every clone and iteration.
struct Spilled {
    file: File,
    dir: PathBuf,
    runs: Vec<Run>,
    blocks: Vec<Block>,
    failure: Mutex<Option<SpillError>>,
}

impl Spilled {
    fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }

    fn fail(&self, message: String) {
        let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(SpillError {
            dir: self.dir.clone(),
            message,
        });
    }
}

/// Records of one kind in canonical order; see the module text.
pub struct Records<T> {
    /// The last run (every record when nothing was spilled), sorted.
    memory: Vec<T>,
    spilled: Option<Arc<Spilled>>,
    len: usize,
}

impl<T> Records<T> {
    /// Accounts for `memory` in [`HELD`] (given back on drop).
    fn new(memory: Vec<T>, spilled: Option<Arc<Spilled>>, len: usize) -> Self {
        HELD.fetch_add(
            memory.capacity() * size_of::<T>(),
            std::sync::atomic::Ordering::Relaxed,
        );
        Records {
            memory,
            spilled,
            len,
        }
    }
}

impl<T> Drop for Records<T> {
    fn drop(&mut self) {
        HELD.fetch_sub(
            self.memory.capacity() * size_of::<T>(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

impl<T> Default for Records<T> {
    fn default() -> Self {
        Records::new(Vec::new(), None, 0)
    }
}

impl<T: Clone> Clone for Records<T> {
    fn clone(&self) -> Self {
        Records::new(self.memory.clone(), self.spilled.clone(), self.len)
    }
}

impl<T> std::fmt::Debug for Records<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("len", &self.len)
            .field(
                "spilled_runs",
                &self.spilled.as_ref().map_or(0, |s| s.runs.len()),
            )
            .finish()
    }
}

impl<T: Ordered> From<Vec<T>> for Records<T> {
    /// The records of `v`, sorted, in memory.
    fn from(mut v: Vec<T>) -> Self {
        v.sort_unstable_by_key(T::key);
        let len = v.len();
        Records::new(v, None, len)
    }
}

impl<T: Ordered> FromIterator<T> for Records<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<T>>().into()
    }
}

impl<T: Ordered> Records<T> {
    /// How many records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many runs are on disk (0: every record is in memory).
    pub fn spilled_runs(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.runs.len())
    }

    /// The records as one slice when none was spilled.
    pub fn as_slice(&self) -> Option<&[T]> {
        self.spilled.is_none().then_some(&self.memory[..])
    }

    /// Adds one record in its place (cheap when records come in order; a record out of order
    /// moves the in-memory ones after it). For small sets built by hand: a large set is built
    /// with a [`RecordsBuilder`].
    pub fn push(&mut self, record: T) {
        let key = record.key();
        let at = if self.memory.last().is_none_or(|l| l.key() <= key) {
            self.memory.len()
        } else {
            self.memory.partition_point(|r| r.key() <= key)
        };
        let before = self.memory.capacity();
        self.memory.insert(at, record);
        self.len += 1;
        HELD.fetch_add(
            (self.memory.capacity() - before) * size_of::<T>(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Every record in order, in one vector (for small sets and tests).
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }

    /// The records in order, by value.
    pub fn iter(&self) -> Iter<'_, T> {
        let Some(spilled) = &self.spilled else {
            return Iter(Inner::Memory(self.memory.iter()));
        };
        let mut sources: Vec<Source<'_, T>> = spilled
            .runs
            .iter()
            .map(|&run| Source::on_disk(spilled, run))
            .collect();
        sources.push(Source::in_memory(&self.memory));
        Iter(Inner::Merge(Merge {
            sources,
            lead: 0,
            streak: 0,
        }))
    }

    /// Whether every iteration so far read every record: the first read failure, if any.
    pub fn check(&self) -> Result<(), SpillError> {
        match &self.spilled {
            Some(s) => match &*s.failure.lock().unwrap_or_else(|p| p.into_inner()) {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }
}

impl<'a, T: Ordered> IntoIterator for &'a Records<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// The records of a [`Records`] in order.
pub struct Iter<'a, T>(Inner<'a, T>);

enum Inner<'a, T> {
    Memory(std::slice::Iter<'a, T>),
    Merge(Merge<'a, T>),
}

impl<T: Ordered> Iterator for Iter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match &mut self.0 {
            Inner::Memory(it) => it.next().copied(),
            Inner::Merge(m) => m.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Inner::Memory(it) => it.size_hint(),
            Inner::Merge(_) => (0, None),
        }
    }
}

/// One run being read back: its records not yet taken are `buffer[at..]` (the whole rest of
/// an in-memory run; the records unpacked last from a spilled one), then, for a spilled run,
/// `block_left` more packed in `packed[pos..]` and the blocks `blocks` not yet read.
struct Source<'a, T> {
    memory: &'a [T],
    spilled: Option<&'a Spilled>,
    blocks: &'a [Block],
    buffer: Vec<T>,
    at: usize,
    /// The current block's packed bytes, read back, and how far they are unpacked.
    packed: Vec<u8>,
    pos: usize,
    block_left: usize,
    /// The last record unpacked (what the next one is packed against).
    prev: T,
    /// Where the current block is in the spill file (for a failure's message).
    block_at: u64,
}

impl<'a, T: Ordered> Source<'a, T> {
    fn in_memory(records: &'a [T]) -> Self {
        Source {
            memory: records,
            spilled: None,
            blocks: &[],
            buffer: Vec::new(),
            at: 0,
            packed: Vec::new(),
            pos: 0,
            block_left: 0,
            prev: T::new_zeroed(),
            block_at: 0,
        }
    }

    fn on_disk(spilled: &'a Spilled, run: Run) -> Self {
        Source {
            blocks: spilled
                .blocks
                .get(run.first..run.first + run.count)
                .unwrap_or(&[]),
            spilled: Some(spilled),
            ..Self::in_memory(&[])
        }
    }

    /// The records ready to be taken (empty only when the run is done).
    fn ready(&mut self) -> &[T] {
        let Some(spilled) = self.spilled else {
            return &self.memory[self.at..];
        };
        if self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
            if let Err(message) = self.unpack_more(spilled) {
                spilled.fail(message);
                self.buffer.clear();
                self.blocks = &[];
                self.block_left = 0;
            }
        }
        &self.buffer[self.at..]
    }

    /// Unpacks up to [`UNPACK_BATCH`] records into `buffer`, reading the next block first if
    /// the current one is done; or says why it could not.
    fn unpack_more(&mut self, spilled: &Spilled) -> Result<(), String> {
        if self.block_left == 0 {
            let Some((&block, rest)) = self.blocks.split_first() else {
                return Ok(());
            };
            self.blocks = rest;
            self.packed.resize(block.bytes, 0);
            spilled
                .file
                .read_exact_at(&mut self.packed, block.offset)
                .map_err(|e| {
                    format!(
                        "reading back {} records at byte {}: {e}",
                        block.records, block.offset
                    )
                })?;
            self.pos = 0;
            self.block_left = block.records;
            self.prev = T::new_zeroed();
            self.block_at = block.offset;
        }
        let n = self.block_left.min(UNPACK_BATCH);
        let mut input = &self.packed[self.pos..];
        let before = input.len();
        for _ in 0..n {
            let Some(r) = T::unpack(&self.prev, &mut input) else {
                break;
            };
            self.buffer.push(r);
            self.prev = r;
        }
        self.pos += before - input.len();
        self.block_left -= n;
        let short = self.buffer.len() != n;
        if short || (self.block_left == 0 && self.pos != self.packed.len()) {
            return Err(format!(
                "reading back the block at byte {}: it does not unpack to its records (damaged spill file)",
                self.block_at
            ));
        }
        Ok(())
    }

    /// The record at `k` of [`Source::ready`]'s slice, without refilling.
    #[inline]
    fn get(&self, k: usize) -> T {
        match self.spilled {
            None => self.memory[self.at + k],
            Some(_) => self.buffer[self.at + k],
        }
    }
}

/// The k-way merge of the runs: it finds the run with the least head and how many of its ready
/// records precede the runner-up's head, and hands those out without further comparison.
struct Merge<'a, T> {
    sources: Vec<Source<'a, T>>,
    /// The run being handed out and how many of its ready records may still be.
    lead: usize,
    streak: usize,
}

impl<T: Ordered> Merge<'_, T> {
    /// Picks the next streak; `false` when every run is done.
    fn choose(&mut self) -> bool {
        let mut best: Option<(usize, T::Key)> = None;
        let mut second: Option<T::Key> = None;
        for k in 0..self.sources.len() {
            let Some(head) = self.sources[k].ready().first() else {
                continue;
            };
            let key = head.key();
            match &best {
                Some((_, b)) if key >= *b => {
                    if second.as_ref().is_none_or(|s| key < *s) {
                        second = Some(key);
                    }
                }
                _ => {
                    second = best.take().map(|(_, b)| b);
                    best = Some((k, key));
                }
            }
        }
        let Some((lead, _)) = best else {
            return false;
        };
        let ready = self.sources[lead].ready();
        self.streak = match second {
            // At least the head: the runner-up's head is not below it.
            Some(bound) => ready.partition_point(|r| r.key() <= bound).max(1),
            None => ready.len(),
        };
        self.lead = lead;
        true
    }

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.streak == 0 && !self.choose() {
            return None;
        }
        let source = &mut self.sources[self.lead];
        let r = source.get(0);
        source.at += 1;
        self.streak -= 1;
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ApiRecord;
    use proptest::prelude::*;

    fn call(start: u64, end: u64, correlation_id: u64) -> ApiRecord {
        ApiRecord {
            correlation_id,
            start,
            end,
            thread_id: 1,
            operation: 0,
            domain: 1,
            reserved: 0,
        }
    }

    fn build(records: &[ApiRecord], run_len: usize) -> Records<ApiRecord> {
        let dir = std::env::temp_dir();
        let mut b = RecordsBuilder::with_run_len(dir, run_len);
        for &r in records {
            b.push(r);
        }
        b.finish().map_err(|(e, _)| e).expect("spills")
    }

    #[test]
    fn a_caller_comes_before_the_calls_it_makes_at_an_equal_start() {
        let r = Records::from(vec![call(10, 20, 1), call(10, 50, 1), call(5, 60, 2)]);
        let got: Vec<(u64, u64)> = r.iter().map(|c| (c.start, c.end)).collect();
        assert_eq!(got, [(5, 60), (10, 50), (10, 20)]);
    }

    #[test]
    fn pushed_records_take_their_place_even_after_a_spill() {
        let mut r = build(&[call(1, 2, 1), call(5, 6, 2), call(9, 10, 3)], 1);
        assert_eq!(r.spilled_runs(), 3);
        r.push(call(7, 8, 4));
        r.push(call(0, 1, 5));
        let starts: Vec<u64> = r.iter().map(|c| c.start).collect();
        assert_eq!(starts, [0, 1, 5, 7, 9]);
        assert_eq!(r.len(), 5);
    }

    #[test]
    fn spilled_runs_read_back_in_order_and_repeatably() {
        let records: Vec<ApiRecord> = (0..10_000u64)
            .map(|k| call((k * 7919) % 10_007, (k * 7919) % 10_007 + 5, k))
            .collect();
        let r = build(&records, 1000);
        assert_eq!(
            r.spilled_runs(),
            10,
            "once one run is spilled, the last is too"
        );
        assert_eq!(r.len(), 10_000);
        assert!(r.as_slice().is_none());
        let mut want = records.clone();
        want.sort_unstable_by_key(ApiRecord::key);
        for _ in 0..2 {
            assert_eq!(r.iter().collect::<Vec<_>>(), want);
        }
        r.check().expect("no read failed");
    }

    #[test]
    fn a_directory_that_cannot_hold_files_falls_back_to_the_temporary_directory() {
        let mut b = RecordsBuilder::with_run_len("/proc/no-such-dir", 2);
        for k in 0..5 {
            b.push(call(k, k + 1, k));
        }
        let r = b
            .finish()
            .map_err(|(e, _)| e)
            .expect("spills to the temp dir");
        assert_eq!(r.spilled_runs(), 3);
        assert_eq!(r.iter().count(), 5);
    }

    #[test]
    fn a_spill_that_cannot_be_written_fails_the_build_and_counts_what_it_lost() {
        let mut b = RecordsBuilder::with_run_len(std::env::temp_dir(), 2);
        // A file open for reading only: every write to it fails, as on a full disk.
        b.spill = Some(Spill {
            file: File::open("/dev/null").unwrap(),
            dir: "/dev".into(),
            end: 0,
            runs: Vec::new(),
            blocks: Vec::new(),
            pending: Vec::new(),
            filled: 0,
        });
        for k in 0..7 {
            b.push(call(k, k + 1, k));
        }
        let (e, lost) = b.finish().map(|_| ()).unwrap_err();
        assert_eq!(lost, 7, "the run that failed and every record after it");
        assert!(
            e.to_string()
                .starts_with("spilling records to /dev: writing"),
            "{e}"
        );
    }

    #[test]
    fn a_run_that_fails_to_read_back_ends_the_pass_and_is_reported() {
        let records: Vec<ApiRecord> = (0..100).map(|k| call(k, k + 1, k)).collect();
        let mut r = build(&records, 10);
        // Claim a run beyond the file's end.
        let spilled = r.spilled.take().unwrap();
        let mut runs = spilled.runs.clone();
        let mut blocks = spilled.blocks.clone();
        blocks.push(Block {
            offset: 1 << 30,
            bytes: 30,
            records: 5,
        });
        runs.push(Run {
            first: blocks.len() - 1,
            count: 1,
            len: 5,
        });
        r.spilled = Some(Arc::new(Spilled {
            file: spilled.file.try_clone().unwrap(),
            dir: spilled.dir.clone(),
            runs,
            blocks,
            failure: Mutex::new(None),
        }));
        assert!(r.check().is_ok());
        assert!(r.iter().count() < 105);
        let e = r.check().unwrap_err();
        assert!(e.message.contains("reading back 5 records"), "{e}");
    }

    #[test]
    fn a_damaged_spilled_block_ends_the_pass_and_is_reported() {
        let records: Vec<ApiRecord> = (0..100).map(|k| call(k, k + 1, k)).collect();
        let r = build(&records, 10);
        let spilled = r.spilled.as_ref().unwrap();
        let block = spilled.blocks[3];
        // Bytes that are no varint at all (ten continuation bytes and more).
        spilled
            .file
            .write_all_at(&vec![0xFF; block.bytes], block.offset)
            .unwrap();
        assert!(r.check().is_ok());
        assert!(r.iter().count() < 100);
        let e = r.check().unwrap_err();
        assert!(
            e.message.contains("does not unpack")
                && e.message.contains(&format!("at byte {}", block.offset)),
            "{e}"
        );
    }

    #[test]
    fn a_time_ordered_run_packs_into_a_third_of_its_bytes() {
        let records: Vec<ApiRecord> = (0..10_000u64)
            .map(|k| ApiRecord {
                correlation_id: k + 1,
                start: 1_000_000_000 + k * 250,
                end: 1_000_000_000 + k * 250 + 120,
                thread_id: 4321 + (k % 3) as u32,
                operation: (k % 125) as u16,
                domain: 1,
                reserved: 0,
            })
            .collect();
        let r = build(&records, 5_000);
        let spilled = r.spilled.as_ref().unwrap();
        let bytes: usize = spilled.blocks.iter().map(|b| b.bytes).sum();
        assert!(
            bytes * 3 <= records.len() * size_of::<ApiRecord>(),
            "{bytes} bytes packed"
        );
        assert_eq!(r.to_vec(), records);
    }

    #[test]
    fn a_set_known_to_spill_is_sorted_in_smaller_runs() {
        let dir = std::env::temp_dir();
        let per_run = SPILL_RUN_BYTES / size_of::<ApiRecord>();
        let fits = RUN_BYTES / size_of::<ApiRecord>();
        let mut small = RecordsBuilder::<ApiRecord>::for_count(&dir, fits);
        let mut large = RecordsBuilder::<ApiRecord>::for_count(&dir, fits + 1);
        // Each run out of order, so each is sorted: the runs must still read back merged.
        for k in 0..(2 * per_run + 1) as u64 {
            let start = k ^ 1;
            small.push(call(start, start + 1, k));
            large.push(call(start, start + 1, k));
        }
        let small = small.finish().map_err(|(e, _)| e).unwrap();
        let large = large.finish().map_err(|(e, _)| e).unwrap();
        assert_eq!(small.spilled_runs(), 0, "held whole");
        assert_eq!(large.spilled_runs(), 3, "runs of {per_run}");
        assert!(small.iter().eq(large.iter()));
        assert!(large.iter().map(|r| r.key()).is_sorted());
    }

    fn packed(r: &ApiRecord, prev: &ApiRecord) -> Vec<u8> {
        let mut out = vec![0; ApiRecord::PACKED_MAX];
        let n = r.pack(prev, &mut out);
        out.truncate(n);
        out
    }

    fn any_call() -> impl Strategy<Value = ApiRecord> {
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u16>(),
            any::<u8>(),
            any::<u8>(),
        )
            .prop_map(
                |(correlation_id, start, end, thread_id, operation, domain, reserved)| ApiRecord {
                    correlation_id,
                    start,
                    end,
                    thread_id,
                    operation,
                    domain,
                    reserved,
                },
            )
    }

    proptest! {
        #[test]
        fn any_call_unpacks_to_itself_after_any_other(a in any_call(), b in any_call()) {
            let mut out = packed(&b, &a);
            out.extend(packed(&a, &b));
            let mut input = &out[..];
            prop_assert_eq!(ApiRecord::unpack(&a, &mut input), Some(b));
            prop_assert_eq!(ApiRecord::unpack(&b, &mut input), Some(a));
            prop_assert!(input.is_empty());
        }

        #[test]
        fn unpacking_any_bytes_never_panics_nor_overreads(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            prev in any_call(),
        ) {
            let mut input = &bytes[..];
            while let Some(r) = ApiRecord::unpack(&prev, &mut input) {
                prop_assert!(packed(&r, &prev).len() <= bytes.len());
            }
            prop_assert!(input.len() <= bytes.len());
        }

        #[test]
        fn any_calls_spilled_in_any_runs_read_back_sorted(
            records in proptest::collection::vec(any_call(), 0..200),
            run_len in 1usize..40,
        ) {
            let r = build(&records, run_len);
            let mut want = records.clone();
            want.sort_unstable_by_key(ApiRecord::key);
            prop_assert_eq!(r.iter().collect::<Vec<_>>(), want);
            prop_assert!(r.check().is_ok());
        }

        #[test]
        fn any_run_length_gives_the_sorted_records(
            raw in proptest::collection::vec((0u64..50, 0u64..20, 0u64..4), 0..300),
            run_len in 1usize..40,
        ) {
            let records: Vec<ApiRecord> =
                raw.iter().map(|&(s, d, c)| call(s, s + d, c)).collect();
            let r = build(&records, run_len);
            let mut want = records.clone();
            want.sort_unstable_by_key(ApiRecord::key);
            prop_assert_eq!(r.len(), want.len());
            prop_assert_eq!(r.iter().collect::<Vec<_>>(), want);
        }
    }
}
