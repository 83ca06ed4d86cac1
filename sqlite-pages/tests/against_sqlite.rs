//! The page walk against SQLite's own reading of the same files: random tables with every
//! serial type, long values on overflow chains, trees several levels deep; and damaged files,
//! which must end in an error, never a panic or a hang.

use proptest::prelude::*;
use rusqlite::Connection;
use rusqlite::types::Value as Sql;
use sqlite_pages::{Database, Error, Value};
use std::path::Path;

/// A value owned, comparable across both readers (reals by their bits).
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Null,
    Int(i64),
    Real(u64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl From<Value<'_>> for Owned {
    fn from(v: Value<'_>) -> Self {
        match v {
            Value::Null => Owned::Null,
            Value::Integer(i) => Owned::Int(i),
            Value::Real(r) => Owned::Real(r.to_bits()),
            Value::Text(t) => Owned::Text(t.to_vec()),
            Value::Blob(b) => Owned::Blob(b.to_vec()),
        }
    }
}

impl From<Sql> for Owned {
    fn from(v: Sql) -> Self {
        match v {
            Sql::Null => Owned::Null,
            Sql::Integer(i) => Owned::Int(i),
            Sql::Real(r) => Owned::Real(r.to_bits()),
            Sql::Text(t) => Owned::Text(t.into_bytes()),
            Sql::Blob(b) => Owned::Blob(b),
        }
    }
}

/// A row as (key, values).
type Rows = Vec<(i64, Vec<Owned>)>;

fn root(db: &Connection, table: &str) -> u32 {
    db.query_row(
        "SELECT rootpage FROM sqlite_master WHERE name = ?1",
        [table],
        |r| r.get(0),
    )
    .unwrap()
}

/// The table's rows as the page walk gives them.
fn walked(path: &Path, root: u32) -> Result<Rows, Error> {
    let db = Database::open(path)?;
    let mut out = Vec::new();
    db.scan::<Error>(root, |r| {
        let values = (0..r.len()).map(|i| r.value(i).into()).collect();
        out.push((r.key(), values));
        Ok(())
    })?;
    Ok(out)
}

/// The table's rows as SQLite gives them (`columns` of them, in rowid order).
fn selected(db: &Connection, table: &str, columns: usize) -> Rows {
    let mut stmt = db
        .prepare(&format!("SELECT rowid, * FROM {table} ORDER BY rowid"))
        .unwrap();
    stmt.query_map([], |r| {
        let values = (1..=columns)
            .map(|i| r.get::<_, Sql>(i).map(Owned::from))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((r.get::<_, i64>(0)?, values))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

/// Integers at every serial type's edges.
fn integer() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(1),
        Just(-1),
        Just(i64::MIN),
        Just(i64::MAX),
        (0u32..63).prop_flat_map(|bits| {
            let top = 1i64 << bits;
            prop_oneof![Just(top), Just(-top), Just(top - 1), Just(-top - 1)]
        }),
        any::<i64>(),
    ]
}

fn value() -> impl Strategy<Value = Sql> {
    prop_oneof![
        Just(Sql::Null),
        integer().prop_map(Sql::Integer),
        any::<f64>()
            .prop_filter("SQLite stores NaN as NULL", |r| !r.is_nan())
            .prop_map(Sql::Real),
        prop_oneof![
            "[a-z ]{0,40}",
            "\\PC{0,300}",
            (0usize..200_000).prop_map(|n| "x".repeat(n)),
        ]
        .prop_map(Sql::Text),
        prop::collection::vec(any::<u8>(), 0..3000).prop_map(Sql::Blob),
    ]
}

/// Writes `rows` into a table of `columns` untyped columns (the first one, when `ipk`, the
/// `INTEGER PRIMARY KEY`), in a file of `page_size` pages; deletes every row whose index is
/// in `deleted` afterwards (free blocks and freed overflow pages).
fn write(
    path: &Path,
    page_size: u32,
    columns: usize,
    ipk: bool,
    rows: &[Vec<Sql>],
    deleted: &[usize],
) -> Connection {
    let db = Connection::open(path).unwrap();
    // One transaction, no syncing: the tests write hundreds of files.
    db.execute_batch(&format!(
        "PRAGMA page_size = {page_size}; PRAGMA synchronous = OFF; BEGIN;"
    ))
    .unwrap();
    let mut decl: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
    if ipk {
        decl[0] = "c0 INTEGER PRIMARY KEY".to_owned();
    }
    db.execute_batch(&format!("CREATE TABLE t ({})", decl.join(", ")))
        .unwrap();
    let marks = vec!["?"; columns].join(", ");
    let mut insert = db
        .prepare(&format!("INSERT INTO t VALUES ({marks})"))
        .unwrap();
    for (n, row) in rows.iter().enumerate() {
        let mut row = row.clone();
        row.resize(columns, Sql::Null);
        if ipk {
            // A unique key, sometimes far from the others.
            row[0] = Sql::Integer((n as i64) * 7919 - 1000);
        }
        insert
            .execute(rusqlite::params_from_iter(row.iter()))
            .unwrap();
    }
    drop(insert);
    for &d in deleted {
        db.execute(
            "DELETE FROM t WHERE rowid IN (SELECT rowid FROM t LIMIT 1 OFFSET ?1)",
            [d],
        )
        .unwrap();
    }
    db.execute_batch("COMMIT").unwrap();
    db
}

/// What SQLite's rows are on the page: an `INTEGER PRIMARY KEY` column is stored as NULL.
fn as_stored(mut rows: Rows, ipk: bool) -> Rows {
    if ipk {
        for (_, values) in &mut rows {
            values[0] = Owned::Null;
        }
    }
    rows
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_walk_reads_what_sqlite_reads(
        page_size in prop_oneof![Just(512u32), Just(4096), Just(65536)],
        columns in 1usize..6,
        ipk in any::<bool>(),
        rows in prop::collection::vec(prop::collection::vec(value(), 0..6), 0..40),
        deleted in prop::collection::vec(0usize..40, 0..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let db = write(&path, page_size, columns, ipk, &rows, &deleted);
        let want = as_stored(selected(&db, "t", columns), ipk);
        let got = walked(&path, root(&db, "t")).unwrap();
        // Records never hold more values than the table's columns; short ones read as NULL.
        let got: Rows = got
            .into_iter()
            .map(|(k, mut v)| {
                v.resize(columns, Owned::Null);
                (k, v)
            })
            .collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_deep_tree_of_small_pages_is_walked_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.db");
    let rows: Vec<Vec<Sql>> = (0..20_000)
        .map(|i| {
            vec![
                Sql::Integer(i),
                Sql::Text(format!("row {i} {}", "y".repeat((i % 97) as usize))),
            ]
        })
        .collect();
    let db = write(&path, 512, 2, false, &rows, &[5, 500, 5000]);
    let want = selected(&db, "t", 2);
    let got = walked(&path, root(&db, "t")).unwrap();
    assert_eq!(got.len(), 20_000 - 3);
    assert_eq!(got, want);
}

#[test]
fn the_schema_table_itself_is_walked_from_page_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.db");
    let db = write(&path, 4096, 3, true, &[], &[]);
    db.execute_batch("CREATE TABLE u (a, b); CREATE INDEX ub ON u (b);")
        .unwrap();
    let want = selected(&db, "sqlite_master", 5);
    assert_eq!(walked(&path, 1).unwrap(), want);
}

#[test]
fn a_column_added_later_reads_as_null_in_older_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alter.db");
    let db = write(&path, 4096, 2, false, &[vec![Sql::Integer(1)]], &[]);
    db.execute_batch("ALTER TABLE t ADD COLUMN c2; INSERT INTO t VALUES (2, 3, 4);")
        .unwrap();
    let pages = Database::open(&path).unwrap();
    let mut seen = Vec::new();
    pages
        .scan::<Error>(root(&db, "t"), |r| {
            seen.push((r.len(), Owned::from(r.value(2))));
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, vec![(2, Owned::Null), (3, Owned::Int(4))]);
}

#[test]
fn what_the_walk_cannot_read_is_refused_as_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    // An index B-tree: a WITHOUT ROWID table.
    let path = dir.path().join("norowid.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch(
        "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID; INSERT INTO w VALUES ('a', 1);",
    )
    .unwrap();
    let err = walked(&path, root(&db, "w")).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");

    // UTF-16 text.
    let path = dir.path().join("utf16.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch(
        "PRAGMA encoding = 'UTF-16le'; CREATE TABLE t (a); INSERT INTO t VALUES ('é');",
    )
    .unwrap();
    drop(db);
    let err = Database::open(&path).err().unwrap();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("UTF-16"), "{err}");

    // WAL mode with frames not yet checkpointed (the writer still open).
    let path = dir.path().join("wal.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (a); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    let err = Database::open(&path).err().unwrap();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    // Checkpointed and closed, the -wal is gone and the file reads.
    drop(db);
    let db = Connection::open(&path).unwrap();
    let t = root(&db, "t");
    drop(db);
    assert_eq!(walked(&path, t).unwrap(), vec![(1, vec![Owned::Int(1)])]);
}

/// A file with long rows on overflow chains and a tree of several levels: its bytes and the
/// roots of its two tables (made once).
fn victim() -> &'static (Vec<u8>, Vec<u32>) {
    static VICTIM: std::sync::OnceLock<(Vec<u8>, Vec<u32>)> = std::sync::OnceLock::new();
    VICTIM.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        made(dir.path())
    })
}

fn made(dir: &Path) -> (Vec<u8>, Vec<u32>) {
    let path = dir.join("victim.db");
    let rows: Vec<Vec<Sql>> = (0..400)
        .map(|i| {
            vec![
                Sql::Integer(i),
                Sql::Text("z".repeat((i as usize * 37) % 1500)),
                Sql::Real(i as f64 / 3.0),
            ]
        })
        .collect();
    let db = write(&path, 512, 3, true, &rows, &[3, 30]);
    let roots = vec![1, root(&db, "t")];
    drop(db);
    (std::fs::read(&path).unwrap(), roots)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Damaged bytes anywhere (header, interior pages, leaves, overflow pages) or a cut file:
    /// every scan ends, with rows or with an error, and never panics.
    #[test]
    fn damaged_files_end_in_an_error_never_a_panic_or_a_hang(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, roots) = victim();
        let mut bytes = bytes.clone();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Some(cut) = cut {
            let len = cut.index(bytes.len());
            bytes.truncate(len);
        }
        let path = dir.path().join("damaged.db");
        std::fs::write(&path, &bytes).unwrap();
        for &root in roots {
            let _ = walked(&path, root);
        }
    }
}

#[test]
fn a_child_pointing_back_at_its_parent_is_a_cycle_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, roots) = victim();
    let (mut bytes, root) = (bytes.clone(), roots[1]);
    // The table's root is an interior page (400 rows of 512-byte pages): point its right-most
    // child at itself.
    let at = (root as usize - 1) * 512;
    assert_eq!(bytes[at], 5, "the root is an interior table page");
    bytes[at + 8..at + 12].copy_from_slice(&root.to_be_bytes());
    let path = dir.path().join("cycle.db");
    std::fs::write(&path, &bytes).unwrap();
    let err = walked(&path, root).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
}
