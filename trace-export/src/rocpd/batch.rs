//! Rows inserted many at a time: one `INSERT … VALUES (…), (…), …` statement carries up to
//! [`ROWS`] rows, which spreads SQLite's per-statement work (opening cursors, checking the
//! schema, ending the statement) over them. Rows are buffered as plain values and bound
//! positionally.

use rusqlite::{Connection, Statement};

/// Rows per statement of a full batch; smaller statements take what is left over.
const ROWS: usize = 128;
/// The statement sizes a flush is split into, largest first.
const SIZES: [usize; 4] = [ROWS, 16, 4, 1];

/// One value of a buffered row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cell {
    /// An integer.
    Int(i64),
    /// A real number.
    Real(f64),
    /// NULL.
    Null,
}

impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Cell::Int(v)
    }
}

impl From<u32> for Cell {
    fn from(v: u32) -> Self {
        Cell::Int(i64::from(v))
    }
}

impl From<Option<i64>> for Cell {
    fn from(v: Option<i64>) -> Self {
        v.map_or(Cell::Null, Cell::Int)
    }
}

/// Buffered inserts into one table.
pub(crate) struct Batch<'c> {
    /// The statements for each of [`SIZES`].
    statements: Vec<Statement<'c>>,
    width: usize,
    values: Vec<Cell>,
}

impl<'c> Batch<'c> {
    /// Inserts into `table` (quoted, suffixed) the `columns` (quoted, comma-separated) with one
    /// `row` of values per row, e.g. `(?, ?, 0)`: an anonymous `?` for each buffered value (never
    /// a numbered one: the rows of a statement share one numbering), literals for constants.
    pub(crate) fn new(
        conn: &'c Connection,
        table: &str,
        columns: &str,
        row: &str,
    ) -> rusqlite::Result<Self> {
        let width = row.matches('?').count();
        let statements = SIZES
            .iter()
            .map(|&n| {
                let rows = vec![row; n].join(", ");
                conn.prepare(&format!("INSERT INTO {table} ({columns}) VALUES {rows}"))
            })
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Self {
            statements,
            width,
            values: Vec::with_capacity(width * ROWS),
        })
    }

    /// Buffers one row (as many values as the row has `?`), inserting the buffered rows once
    /// they make a full batch.
    pub(crate) fn push(&mut self, row: &[Cell]) -> rusqlite::Result<()> {
        debug_assert_eq!(row.len(), self.width);
        self.values.extend_from_slice(row);
        if self.values.len() >= self.width * ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Inserts every buffered row.
    pub(crate) fn flush(&mut self) -> rusqlite::Result<()> {
        let mut rest: &[Cell] = &self.values;
        for (statement, &n) in self.statements.iter_mut().zip(&SIZES) {
            let chunk = n * self.width;
            while rest.len() >= chunk {
                for (k, cell) in rest[..chunk].iter().enumerate() {
                    match *cell {
                        Cell::Int(v) => statement.raw_bind_parameter(k + 1, v)?,
                        Cell::Real(v) => statement.raw_bind_parameter(k + 1, v)?,
                        Cell::Null => statement.raw_bind_parameter(k + 1, rusqlite::types::Null)?,
                    }
                }
                statement.raw_execute()?;
                rest = &rest[chunk..];
            }
        }
        self.values.clear();
        Ok(())
    }
}
