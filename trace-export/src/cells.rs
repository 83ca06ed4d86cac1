//! rocprofv3's CSV cells and rows, shared by the trace files ([`crate::csv`]) and the stats
//! files ([`crate::stats`]).
//!
//! Every header cell is double-quoted; string cells are quoted, numbers are not; `,` separates
//! and `\n` ends rows. One deviation from upstream: a `"` inside a string cell is doubled
//! (standard CSV) instead of written bare, so every file this crate writes parses back.

use std::io::{self, Write};

/// One CSV cell.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    /// A quoted string.
    Str(&'a str),
    /// An unquoted integer.
    Int(u64),
    /// An unquoted, already formatted number.
    Num(&'a str),
}

/// Writes one row.
pub fn write_row(out: &mut impl Write, cells: &[Cell<'_>]) -> io::Result<()> {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        match cell {
            Cell::Str(s) => {
                out.write_all(b"\"")?;
                if s.contains('"') {
                    out.write_all(s.replace('"', "\"\"").as_bytes())?;
                } else {
                    out.write_all(s.as_bytes())?;
                }
                out.write_all(b"\"")?;
            }
            Cell::Int(v) => out.write_all(itoa_buf(*v).as_bytes())?,
            Cell::Num(s) => out.write_all(s.as_bytes())?,
        }
    }
    out.write_all(b"\n")
}

/// Decimal digits of `v` without allocating.
struct Digits {
    bytes: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

fn itoa_buf(mut v: u64) -> Digits {
    let mut d = Digits {
        bytes: [0; 20],
        start: 20,
    };
    loop {
        d.start -= 1;
        d.bytes[d.start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return d;
        }
    }
}

/// Writes the header row (every cell quoted).
pub fn write_header(out: &mut impl Write, columns: &[&str]) -> io::Result<()> {
    let cells: Vec<Cell<'_>> = columns.iter().map(|c| Cell::Str(c)).collect();
    write_row(out, &cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[Cell<'_>]) -> String {
        let mut out = Vec::new();
        write_row(&mut out, cells).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_quoted_numbers_are_not_and_quotes_are_doubled() {
        assert_eq!(
            row(&[
                Cell::Str("a,b"),
                Cell::Int(0),
                Cell::Int(u64::MAX),
                Cell::Num("1.5e-03"),
                Cell::Str("say \"hi\""),
            ]),
            "\"a,b\",0,18446744073709551615,1.5e-03,\"say \"\"hi\"\"\"\n"
        );
        let mut out = Vec::new();
        write_header(&mut out, &["Kind", "Agent_Id"]).unwrap();
        assert_eq!(out, b"\"Kind\",\"Agent_Id\"\n");
    }
}
