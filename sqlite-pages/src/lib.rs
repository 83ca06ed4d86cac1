//! Reading an SQLite 3 file's table B-trees straight from its pages.
//!
//! SQLite hands a scan's rows over one column call at a time through its virtual machine; for
//! a table read whole in key order (a merge reading back a million regions) that machinery is
//! most of the time. The file format itself is simple and documented: a table is a B-tree of
//! fixed-size pages, its leaves hold records (a header of serial types, then the values), long
//! records continue on chains of overflow pages. [`Database::scan`] walks one table's B-tree
//! in key order with one positioned read per page and hands each row to a closure as borrowed
//! [`Value`]s.
//!
//! What it trusts: nothing. Every page number is checked against the file's page count, every
//! offset against the page, every record against its payload; a page reached twice (a cycle)
//! or a tree deeper than [`MAX_DEPTH`] ends the scan with [`Error::Corrupt`] instead of looping
//! or exhausting memory. What it does not read, it refuses with [`Error::Unsupported`] so the
//! caller can read through SQLite instead: text encodings other than UTF-8, a database in WAL
//! mode whose `-wal` file holds frames (its newest pages are not in the main file), index
//! B-trees (`WITHOUT ROWID` tables).
//!
//! What the caller does: takes the table's root page and its columns from SQLite itself
//! (`sqlite_master.rootpage`, `pragma_table_xinfo`), and holds a read transaction on its own
//! connection while scanning, so no writer commits underneath. A record may hold fewer values
//! than the table has columns (columns added by `ALTER TABLE`): [`Row::value`] gives
//! [`Value::Null`] for them, which is the column's value only when its default is NULL. A
//! column that is the table's `INTEGER PRIMARY KEY` is stored as NULL; its value is
//! [`Row::key`].
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let path = dir.path().join("names.db");
//! let sql = rusqlite::Connection::open(&path)?;
//! sql.execute_batch(
//!     "CREATE TABLE names(id INTEGER PRIMARY KEY, name TEXT);
//!      INSERT INTO names(name) VALUES ('hipMemcpy'), ('hsa_init');",
//! )?;
//! let root: u32 =
//!     sql.query_row("SELECT rootpage FROM sqlite_master WHERE name = 'names'", [], |r| r.get(0))?;
//!
//! let db = sqlite_pages::Database::open(&path)?;
//! let mut rows = Vec::new();
//! db.scan(root, |row| {
//!     if let sqlite_pages::Value::Text(name) = row.value(1) {
//!         rows.push((row.key(), String::from_utf8_lossy(name).into_owned()));
//!     }
//!     Ok::<_, sqlite_pages::Error>(())
//! })?;
//! assert_eq!(rows, [(1, "hipMemcpy".to_owned()), (2, "hsa_init".to_owned())]);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// How deep a table B-tree may be. A tree of 64 KiB pages holding 2^63 rows is 8 levels deep
/// with the smallest interior fan-out SQLite writes; anything deeper is a damaged file.
pub const MAX_DEPTH: usize = 64;

/// Why a file or a table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not an SQLite 3 database: {why}", path.display())]
    NotSqlite { path: PathBuf, why: &'static str },
    #[error("{} cannot be read page by page ({why}); read it through SQLite", path.display())]
    Unsupported { path: PathBuf, why: String },
    #[error("{} is damaged: page {page}: {why}", path.display())]
    Corrupt {
        path: PathBuf,
        page: u32,
        why: &'static str,
    },
}

/// One value of a row, borrowed from the page (or from the row's reassembled payload).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    Real(f64),
    /// The bytes as stored (the database's encoding is UTF-8; they are not validated).
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

/// One row: its key (the rowid) and its record's values.
pub struct Row<'a> {
    key: i64,
    payload: &'a [u8],
    columns: &'a [Column],
}

/// A column of a record: its serial type and where its value starts in the payload.
#[derive(Clone, Copy)]
struct Column {
    kind: u64,
    at: usize,
}

impl<'a> Row<'a> {
    /// The row's key (its rowid; the value of an `INTEGER PRIMARY KEY` column).
    pub fn key(&self) -> i64 {
        self.key
    }

    /// How many values the record holds.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The `i`th value; [`Value::Null`] past the record's end.
    pub fn value(&self, i: usize) -> Value<'a> {
        let Some(c) = self.columns.get(i) else {
            return Value::Null;
        };
        let p = self.payload;
        // The record was checked when the row was made: every value lies inside the payload.
        match c.kind {
            0 | 10 | 11 => Value::Null,
            1 => Value::Integer(signed(&p[c.at..c.at + 1])),
            2 => Value::Integer(signed(&p[c.at..c.at + 2])),
            3 => Value::Integer(signed(&p[c.at..c.at + 3])),
            4 => Value::Integer(signed(&p[c.at..c.at + 4])),
            5 => Value::Integer(signed(&p[c.at..c.at + 6])),
            6 => Value::Integer(signed(&p[c.at..c.at + 8])),
            7 => Value::Real(f64::from_bits(signed(&p[c.at..c.at + 8]) as u64)),
            8 => Value::Integer(0),
            9 => Value::Integer(1),
            n => {
                let len = ((n - 12) / 2) as usize;
                let bytes = &p[c.at..c.at + len];
                match n % 2 {
                    0 => Value::Blob(bytes),
                    _ => Value::Text(bytes),
                }
            }
        }
    }
}

/// A big-endian two's-complement integer of 1 to 8 bytes.
fn signed(b: &[u8]) -> i64 {
    let mut v: i64 = if b[0] & 0x80 != 0 { -1 } else { 0 };
    for &byte in b {
        v = (v << 8) | i64::from(byte);
    }
    v
}

/// The size in bytes of a value of serial type `kind`.
fn value_size(kind: u64) -> u64 {
    match kind {
        0 | 8..=11 => 0,
        1..=4 => kind,
        5 => 6,
        6 | 7 => 8,
        n => (n - 12) / 2,
    }
}

/// SQLite's variable-length integer at `at`: the value and its length in bytes.
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..8 {
        let byte = *b.get(at + i)?;
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    let byte = *b.get(at + 8)?;
    Some(((v << 8) | u64::from(byte), 9))
}

fn be16(b: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// An SQLite database file opened for page reads.
pub struct Database {
    path: PathBuf,
    file: File,
    page_size: usize,
    /// The page size less the reserved bytes at each page's end.
    usable: usize,
    pages: u32,
}

/// Page type bytes of the B-tree pages.
const TABLE_LEAF: u8 = 13;
const TABLE_INTERIOR: u8 = 5;
const INDEX_LEAF: u8 = 10;
const INDEX_INTERIOR: u8 = 2;

impl Database {
    /// Opens `path` and checks its header.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let not = |why| Error::NotSqlite {
            path: path.to_owned(),
            why,
        };
        let unsupported = |why: &str| Error::Unsupported {
            path: path.to_owned(),
            why: why.to_owned(),
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < 100 {
            return Err(not("shorter than the 100-byte header"));
        }
        let mut h = [0u8; 100];
        file.read_exact_at(&mut h, 0).map_err(io)?;
        if &h[..16] != b"SQLite format 3\0" {
            return Err(not("no SQLite header string"));
        }
        let page_size = match u16::from_be_bytes([h[16], h[17]]) {
            1 => 65536,
            n if n >= 512 && n.is_power_of_two() => usize::from(n),
            _ => return Err(not("its page size is no power of two from 512 to 65536")),
        };
        if h[21] != 64 || h[22] != 32 || h[23] != 32 {
            return Err(not("its payload fractions are not 64, 32 and 32"));
        }
        let usable = page_size - usize::from(h[20]);
        if usable < 480 {
            return Err(not("fewer than 480 usable bytes per page"));
        }
        match h[19] {
            1 => {}
            2 => {
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                    return Err(unsupported(
                        "in WAL mode with frames in its -wal file not yet in the database",
                    ));
                }
            }
            _ => return Err(unsupported("a file format version newer than 2")),
        }
        match u32::from_be_bytes([h[56], h[57], h[58], h[59]]) {
            0 | 1 => {}
            _ => return Err(unsupported("its text encoding is UTF-16")),
        }
        // The header's page count holds only when the change counter matches the version it
        // was written at (older writers left it stale); else the file's length tells.
        let counted = u32::from_be_bytes([h[28], h[29], h[30], h[31]]);
        let valid = h[24..28] == h[92..96];
        let by_length = u32::try_from(len / page_size as u64).unwrap_or(u32::MAX);
        let pages = match counted != 0 && valid {
            true => counted,
            false => by_length,
        };
        Ok(Database {
            path: path.to_owned(),
            file,
            page_size,
            usable,
            pages,
        })
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The number of pages in the database.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    fn corrupt(&self, page: u32, why: &'static str) -> Error {
        Error::Corrupt {
            path: self.path.clone(),
            page,
            why,
        }
    }

    /// Reads page `page` (1-based) into `buf`.
    fn read_page(&self, page: u32, buf: &mut Vec<u8>) -> Result<(), Error> {
        if page == 0 || page > self.pages {
            return Err(self.corrupt(page, "a page number outside the file"));
        }
        buf.resize(self.page_size, 0);
        let at = u64::from(page - 1) * self.page_size as u64;
        self.file
            .read_exact_at(buf, at)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => self.corrupt(page, "the file ends inside it"),
                _ => Error::Io {
                    path: self.path.clone(),
                    source: e,
                },
            })
    }

    /// Each row of the table whose B-tree has its root at page `root`, in key order, to `f`;
    /// the first error `f` returns ends the scan and is returned.
    pub fn scan<E: From<Error>>(
        &self,
        root: u32,
        mut f: impl FnMut(&Row<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut spare: Vec<Vec<u8>> = Vec::new();
        let mut scratch = Scratch::default();
        // A valid tree reaches each of its pages once.
        let mut visits: u64 = 0;
        let mut next = Some(root);
        loop {
            if let Some(page) = next.take() {
                visits += 1;
                if visits > u64::from(self.pages) {
                    return Err(self
                        .corrupt(page, "reached twice: the tree has a cycle")
                        .into());
                }
                if stack.len() == MAX_DEPTH {
                    return Err(self
                        .corrupt(page, "the tree is deeper than any valid one")
                        .into());
                }
                let mut buf = spare.pop().unwrap_or_default();
                self.read_page(page, &mut buf)?;
                let frame = self.frame(page, buf, page == root)?;
                if frame.leaf {
                    let leaf = self.leaf(&frame, &mut scratch, &mut f);
                    spare.push(frame.buf);
                    leaf?;
                } else {
                    stack.push(frame);
                }
            }
            let Some(top) = stack.last_mut() else {
                return Ok(());
            };
            if top.next < top.cells {
                let at = be16(&top.buf, top.pointers + 2 * top.next)
                    .filter(|&at| at + 4 <= self.usable)
                    .ok_or_else(|| self.corrupt(top.page, "a cell outside the page"))?;
                top.next += 1;
                next = Some(be32(&top.buf, at).unwrap_or(0));
            } else if top.next == top.cells {
                top.next += 1;
                next = Some(top.right);
            } else if let Some(done) = stack.pop() {
                spare.push(done.buf);
            }
        }
    }

    /// Checks a table B-tree page's header.
    fn frame(&self, page: u32, buf: Vec<u8>, root: bool) -> Result<Frame, Error> {
        let head = if page == 1 { 100 } else { 0 };
        let leaf = match buf[head] {
            TABLE_LEAF => true,
            TABLE_INTERIOR => false,
            INDEX_LEAF | INDEX_INTERIOR if root => {
                return Err(Error::Unsupported {
                    path: self.path.clone(),
                    why: format!("page {page} roots an index B-tree (a WITHOUT ROWID table)"),
                });
            }
            _ => return Err(self.corrupt(page, "not a table B-tree page")),
        };
        let cells = be16(&buf, head + 3).unwrap_or(0);
        let pointers = head + if leaf { 8 } else { 12 };
        if pointers + 2 * cells > self.usable {
            return Err(self.corrupt(page, "more cells than the page holds"));
        }
        let right = match leaf {
            true => 0,
            false => be32(&buf, head + 8).unwrap_or(0),
        };
        Ok(Frame {
            page,
            buf,
            leaf,
            cells,
            pointers,
            next: 0,
            right,
        })
    }

    /// Each row of a leaf page to `f`.
    fn leaf<E: From<Error>>(
        &self,
        frame: &Frame,
        scratch: &mut Scratch,
        f: &mut impl FnMut(&Row<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let page = frame.page;
        let b = &frame.buf[..self.usable];
        let bad = |why| self.corrupt(page, why);
        let u = self.usable as u64;
        // The most a leaf keeps of a payload on the page, and the least it keeps of one that
        // overflows (the file format's X and M).
        let most = u - 35;
        let least = (u - 12) * 32 / 255 - 23;
        for i in 0..frame.cells {
            let at =
                be16(b, frame.pointers + 2 * i).ok_or_else(|| bad("a cell outside the page"))?;
            let (size, n) = varint(b, at).ok_or_else(|| bad("a cell outside the page"))?;
            let (key, m) = varint(b, at + n).ok_or_else(|| bad("a cell outside the page"))?;
            let start = at + n + m;
            let local = match size <= most {
                true => size,
                false => {
                    let k = least + (size - least) % (u - 4);
                    if k <= most { k } else { least }
                }
            };
            let end = start + local as usize;
            let on_page = b
                .get(start..end)
                .ok_or_else(|| bad("a payload outside the page"))?;
            let payload: &[u8] = match local == size {
                true => on_page,
                false => {
                    let first = be32(b, end).ok_or_else(|| bad("a payload outside the page"))?;
                    self.overflow(page, on_page, first, size, scratch)?;
                    &scratch.payload
                }
            };
            record(payload, &mut scratch.columns).ok_or_else(|| bad("a malformed record"))?;
            f(&Row {
                key: key as i64,
                payload,
                columns: &scratch.columns,
            })?;
        }
        Ok(())
    }

    /// Reassembles a payload of `size` bytes whose first part `local` is on the page and whose
    /// rest starts on overflow page `first`, into `scratch.payload`.
    fn overflow(
        &self,
        page: u32,
        local: &[u8],
        first: u32,
        size: u64,
        scratch: &mut Scratch,
    ) -> Result<(), Error> {
        let chunk = self.usable - 4;
        // A payload larger than the file is no payload.
        if size > u64::from(self.pages) * chunk as u64 {
            return Err(self.corrupt(page, "a payload larger than the file"));
        }
        scratch.payload.clear();
        scratch.payload.extend_from_slice(local);
        let mut left = size as usize - local.len();
        let mut next = first;
        // The chain is as long as the payload needs and no longer, so it cannot loop.
        while left > 0 {
            // Each overflow page belongs to one payload: more reads than pages is a chain
            // shared by several payloads (or a damaged page count), not a file to read on.
            scratch.overflow_reads += 1;
            if scratch.overflow_reads > u64::from(self.pages) {
                return Err(self.corrupt(next, "an overflow page in more than one chain"));
            }
            if next < 2 {
                return Err(self.corrupt(page, "an overflow chain ends early"));
            }
            self.read_page(next, &mut scratch.page)?;
            let out = &mut scratch.payload;
            let take = left.min(chunk);
            out.extend_from_slice(&scratch.page[4..4 + take]);
            left -= take;
            next = be32(&scratch.page, 0).unwrap_or(0);
        }
        Ok(())
    }
}

/// An interior page being walked (or a leaf page about to be read).
struct Frame {
    page: u32,
    buf: Vec<u8>,
    leaf: bool,
    cells: usize,
    /// Where the cell pointer array starts.
    pointers: usize,
    /// The next child to visit: cells `0..cells`, then the right-most pointer at `cells`.
    next: usize,
    right: u32,
}

/// Buffers reused from row to row.
#[derive(Default)]
struct Scratch {
    columns: Vec<Column>,
    payload: Vec<u8>,
    page: Vec<u8>,
    overflow_reads: u64,
}

/// Decodes a record's header into `columns`, checking that every value lies in `payload`.
fn record(payload: &[u8], columns: &mut Vec<Column>) -> Option<()> {
    columns.clear();
    let (head, mut at) = varint(payload, 0)?;
    let head = usize::try_from(head).ok()?;
    if head > payload.len() || head < at {
        return None;
    }
    let mut value = head as u64;
    while at < head {
        let (kind, n) = varint(&payload[..head], at)?;
        at += n;
        if kind == 10 || kind == 11 {
            return None;
        }
        columns.push(Column {
            kind,
            at: value as usize,
        });
        value = value.checked_add(value_size(kind))?;
        if value > payload.len() as u64 {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_one_to_nine_bytes() {
        assert_eq!(varint(&[0x05], 0), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00], 0), Some((128, 2)));
        assert_eq!(varint(&[0xff; 9], 0), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x81], 0), None);
    }

    #[test]
    fn integers_are_sign_extended() {
        assert_eq!(signed(&[0xff]), -1);
        assert_eq!(signed(&[0x7f, 0xff]), 32767);
        assert_eq!(signed(&[0x80, 0, 0]), -(1 << 23));
        assert_eq!(signed(&[0xff; 8]), -1);
    }

    #[test]
    fn a_record_whose_values_pass_its_payload_is_refused() {
        let mut columns = Vec::new();
        // Header of 3 bytes: an int8 and a 2-byte text; the text is cut short.
        assert!(record(&[3, 1, 17, 7, b'a'], &mut columns).is_none());
        assert!(record(&[3, 1, 17, 7, b'a', b'b'], &mut columns).is_some());
        assert_eq!(columns.len(), 2);
        // Reserved serial types.
        assert!(record(&[2, 10], &mut columns).is_none());
        // A header longer than the payload.
        assert!(record(&[9, 1], &mut columns).is_none());
    }

    #[test]
    fn files_that_are_no_database_are_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("sqlite-pages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, b"SQLite format 3\0").unwrap();
        assert!(matches!(
            Database::open(&short),
            Err(Error::NotSqlite { .. })
        ));
        let text = dir.join("text");
        std::fs::write(&text, [b'x'; 4096]).unwrap();
        let err = Database::open(&text).err().unwrap();
        assert!(err.to_string().contains("no SQLite header"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
