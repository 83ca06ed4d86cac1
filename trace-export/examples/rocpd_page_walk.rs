//! The floor of reading a rocpd database without SQLite's virtual machine: the first process's
//! region and event tables walked straight from the file's bytes (the table B-tree's interior
//! and leaf pages in key order, overflow chains followed, every record's header decoded), with
//! nothing done per row but summing its key and integer columns. The same sum is then asked of
//! SQLite, so the walk is checked to have read the same values. Prints one line per table and
//! round: rows, seconds, rows per second, and whether the sums agree.
//!
//! A measurement for docs/PERFORMANCE.md (the read-back's floor beside `rocpd_scan`'s), not a
//! reader: it reads the whole file into memory, and refuses what it does not expect (a page of
//! another kind, a record that runs past its page) with an error instead of reading it.
//!
//! `cargo run --release -p trace-export --example rocpd_page_walk -- DATABASE [ROUNDS]`

use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Instant;

type Failure = Box<dyn std::error::Error>;

/// A SQLite varint at `at` of `b`: (value, the offset after it).
fn varint(b: &[u8], mut at: usize) -> Result<(u64, usize), Failure> {
    let mut v = 0u64;
    for k in 0..9 {
        let c = *b.get(at).ok_or("varint past the end")?;
        at += 1;
        if k == 8 {
            return Ok(((v << 8) | u64::from(c), at));
        }
        v = (v << 7) | u64::from(c & 0x7f);
        if c & 0x80 == 0 {
            return Ok((v, at));
        }
    }
    Err("varint longer than 9 bytes".into())
}

fn be16(b: &[u8], at: usize) -> Result<usize, Failure> {
    let s = b.get(at..at + 2).ok_or("u16 past the end")?;
    Ok(usize::from(u16::from_be_bytes([s[0], s[1]])))
}

fn be32(b: &[u8], at: usize) -> Result<u32, Failure> {
    let s = b.get(at..at + 4).ok_or("u32 past the end")?;
    Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// The file's bytes and its page geometry.
struct File {
    bytes: Vec<u8>,
    page_size: usize,
    usable: usize,
}

/// What a walk counted: rows, and the wrapping sum of keys and integer columns.
#[derive(Default)]
struct Tally {
    rows: u64,
    sum: i64,
    overflow: Vec<u8>,
}

impl File {
    fn open(path: &Path) -> Result<Self, Failure> {
        let bytes = std::fs::read(path)?;
        if !bytes.starts_with(b"SQLite format 3\0") || bytes.len() < 100 {
            return Err("not a SQLite file".into());
        }
        let page_size = match be16(&bytes, 16)? {
            1 => 65536,
            p => p,
        };
        let usable = page_size - usize::from(bytes[20]);
        Ok(File {
            bytes,
            page_size,
            usable,
        })
    }

    fn page(&self, n: u32) -> Result<&[u8], Failure> {
        let start = (n as usize).checked_sub(1).ok_or("page 0")? * self.page_size;
        Ok(self
            .bytes
            .get(start..start + self.page_size)
            .ok_or("page past the file's end")?)
    }

    /// Walks the table B-tree rooted at `n` in key order.
    fn walk(&self, n: u32, t: &mut Tally) -> Result<(), Failure> {
        let p = self.page(n)?;
        let h = if n == 1 { 100 } else { 0 };
        let cells = be16(p, h + 3)?;
        match p.get(h) {
            Some(5) => {
                for c in 0..cells {
                    let cell = be16(p, h + 12 + 2 * c)?;
                    self.walk(be32(p, cell)?, t)?;
                }
                self.walk(be32(p, h + 8)?, t)
            }
            Some(13) => {
                for c in 0..cells {
                    let cell = be16(p, h + 8 + 2 * c)?;
                    self.leaf_cell(p, cell, t)?;
                }
                Ok(())
            }
            other => Err(format!("page {n} is not a table page ({other:?})").into()),
        }
    }

    fn leaf_cell(&self, p: &[u8], cell: usize, t: &mut Tally) -> Result<(), Failure> {
        let (len, at) = varint(p, cell)?;
        let (key, at) = varint(p, at)?;
        let len = len as usize;
        let u = self.usable;
        let max_local = u - 35;
        let mut overflow = std::mem::take(&mut t.overflow);
        let payload: &[u8] = if len <= max_local {
            p.get(at..at + len).ok_or("record past its page")?
        } else {
            let min_local = (u - 12) * 32 / 255 - 23;
            let k = min_local + (len - min_local) % (u - 4);
            let local = if k <= max_local { k } else { min_local };
            overflow.clear();
            overflow.extend_from_slice(p.get(at..at + local).ok_or("record past its page")?);
            let mut next = be32(p, at + local)?;
            while overflow.len() < len {
                let o = self.page(next)?;
                let take = (len - overflow.len()).min(u - 4);
                overflow.extend_from_slice(&o[4..4 + take]);
                next = be32(o, 0)?;
            }
            &overflow
        };
        t.rows += 1;
        t.sum = t.sum.wrapping_add(key as i64);
        t.sum = t.sum.wrapping_add(integers(payload)?);
        t.overflow = overflow;
        Ok(())
    }
}

/// The wrapping sum of a record's integer columns.
fn integers(record: &[u8]) -> Result<i64, Failure> {
    let (header, mut at) = varint(record, 0)?;
    let mut body = header as usize;
    let mut sum = 0i64;
    while at < header as usize {
        let (serial, next) = varint(record, at)?;
        at = next;
        let width = match serial {
            0 | 8 | 9 => 0,
            1..=4 => serial as usize,
            5 => 6,
            6 | 7 => 8,
            s if s >= 12 => ((s - 12) / 2) as usize,
            _ => return Err("reserved serial type".into()),
        };
        let bytes = record
            .get(body..body + width)
            .ok_or("column past its record")?;
        match serial {
            1..=6 => {
                let mut v: i64 = if bytes[0] & 0x80 != 0 { -1 } else { 0 };
                for b in bytes {
                    v = (v << 8) | i64::from(*b);
                }
                sum = sum.wrapping_add(v);
            }
            9 => sum = sum.wrapping_add(1),
            _ => {}
        }
        body += width;
    }
    Ok(sum)
}

/// SQLite's sum of the same: the key and every integer column of `table`.
fn sqlite_sum(db: &Connection, table: &str) -> rusqlite::Result<i64> {
    let mut columns = Vec::new();
    let mut stmt = db.prepare(&format!(
        "SELECT name, pk FROM pragma_table_info('{table}')"
    ))?;
    let mut rows = stmt.query([])?;
    let mut terms = vec!["rowid".to_owned()];
    while let Some(r) = rows.next()? {
        let (name, pk): (String, i64) = (r.get(0)?, r.get(1)?);
        if pk == 0 {
            columns.push(name);
        }
    }
    for c in columns {
        terms.push(format!(
            "(CASE WHEN typeof(\"{c}\") = 'integer' THEN \"{c}\" ELSE 0 END)"
        ));
    }
    let sql = format!("SELECT {} FROM \"{table}\"", terms.join(" + "));
    let mut stmt = db.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    let mut sum = 0i64;
    while let Some(r) = rows.next()? {
        sum = sum.wrapping_add(r.get::<_, i64>(0)?);
    }
    Ok(sum)
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = Path::new(
        args.first()
            .ok_or("usage: rocpd_page_walk DATABASE [ROUNDS]")?,
    );
    let rounds: usize = args.get(1).map_or(Ok(3), |r| r.parse())?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags)?;
    let mut tables = Vec::new();
    for base in ["rocpd_region", "rocpd_event"] {
        let (name, root): (String, u32) = db.query_row(
            "SELECT name, rootpage FROM sqlite_master WHERE type = 'table' \
             AND substr(name, 1, length(?1) + 1) = ?1 || '_' ORDER BY name LIMIT 1",
            [base],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let expected = sqlite_sum(&db, &name)?;
        tables.push((base, root, expected));
    }
    let start = Instant::now();
    let file = File::open(path)?;
    println!(
        "file read into memory: {} bytes in {:.3} s",
        file.bytes.len(),
        start.elapsed().as_secs_f64()
    );
    for round in 0..rounds {
        println!("round {}/{rounds}", round + 1);
        for (base, root, expected) in &tables {
            let start = Instant::now();
            let mut t = Tally::default();
            file.walk(*root, &mut t)?;
            let secs = start.elapsed().as_secs_f64();
            let agrees = if t.sum == *expected {
                "same sum as SQLite"
            } else {
                "SUM DIFFERS FROM SQLITE'S"
            };
            println!(
                "{base:<14} {:>9} rows {secs:>7.3} s {:>6.2} M rows/s  {agrees}",
                t.rows,
                t.rows as f64 / secs / 1e6
            );
        }
    }
    Ok(())
}
