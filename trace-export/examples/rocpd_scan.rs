//! The read-back's floor: how fast SQLite itself gives the rows `rocpd_read` reads, through
//! rusqlite, with nothing done per row but summing the columns read. For the first process
//! of a rocpd database: its region table alone, its event table alone, the two joined (as the
//! reader read them before its merge-join), both scanned one after the other on one thread,
//! and both at once on two threads (one connection each), each with the connection's default
//! settings and with a memory map of the whole file and a 16 MiB page cache (`mmap_size`,
//! `cache_size`; measured, and left out of the reader for the resident memory the map costs:
//! `rocpd_read`'s `READ_SETTINGS`). Prints one line per scan: rows, seconds, rows per second.
//!
//! `cargo run --release -p trace-export --example rocpd_scan -- DATABASE [ROUNDS]`

use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Instant;

/// Opens `path` read-only for one thread, with a map of the file and a larger cache when
/// `tuned`.
fn open(path: &Path, tuned: bool) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags)?;
    if tuned {
        db.execute_batch(
            "PRAGMA query_only = ON; PRAGMA mmap_size = 1099511627776; \
             PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY;",
        )?;
    }
    Ok(db)
}

/// Runs `sql` (`?1` the guid), summing every integer column of every row: (rows, sum).
fn scan(db: &Connection, sql: &str, guid: &str) -> rusqlite::Result<(u64, i64)> {
    let mut stmt = db.prepare(sql)?;
    let n = stmt.column_count();
    let mut rows = stmt.query([guid])?;
    let (mut count, mut sum) = (0u64, 0i64);
    while let Some(r) = rows.next()? {
        count += 1;
        for k in 0..n {
            if let rusqlite::types::ValueRef::Integer(i) = r.get_ref(k)? {
                sum = sum.wrapping_add(i);
            }
        }
    }
    Ok((count, sum))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = Path::new(args.first().ok_or("usage: rocpd_scan DATABASE [ROUNDS]")?);
    let rounds: usize = args.get(1).map_or(Ok(3), |r| r.parse())?;
    let db = open(path, false)?;
    let table: String = db.query_row(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND substr(name, 1, 18) = 'rocpd_info_process' ORDER BY name LIMIT 1",
        [],
        |r| r.get(0),
    )?;
    let suffix = table["rocpd_info_process".len()..].to_owned();
    let guid: String = db.query_row(
        &format!("SELECT guid FROM \"{table}\" ORDER BY id LIMIT 1"),
        [],
        |r| r.get(0),
    )?;
    drop(db);
    let region = format!(
        "SELECT x.start, x.\"end\", x.tid, x.name_id, x.id, x.event_id \
         FROM \"rocpd_region{suffix}\" AS x WHERE x.guid = ?1 ORDER BY x.id"
    );
    let event = format!(
        "SELECT e.id, e.stack_id, e.correlation_id, e.category_id \
         FROM \"rocpd_event{suffix}\" AS e WHERE e.guid = ?1 ORDER BY e.id"
    );
    let join = format!(
        "SELECT x.start, x.\"end\", x.tid, x.name_id, x.id, e.id, e.stack_id, \
         e.correlation_id, e.category_id, e.extdata FROM \"rocpd_region{suffix}\" AS x \
         LEFT JOIN \"rocpd_event{suffix}\" AS e ON e.id = x.event_id AND e.guid = ?1 \
         WHERE x.guid = ?1"
    );
    let line = |what: &str, rows: u64, secs: f64| {
        println!(
            "{what:<44} {rows:>9} rows {secs:>7.3} s {:>6.2} M rows/s",
            rows as f64 / secs / 1e6
        );
    };
    for round in 0..rounds {
        println!("round {}/{rounds}", round + 1);
        for tuned in [false, true] {
            let settings = if tuned { "mmap" } else { "defaults" };
            for (what, sql) in [
                ("region", &region),
                ("event", &event),
                ("region ⋈ event", &join),
            ] {
                let db = open(path, tuned)?;
                let start = Instant::now();
                let (rows, _) = scan(&db, sql, &guid)?;
                line(
                    &format!("{what}, {settings}"),
                    rows,
                    start.elapsed().as_secs_f64(),
                );
            }
            let db = open(path, tuned)?;
            let start = Instant::now();
            let (a, _) = scan(&db, &region, &guid)?;
            let (b, _) = scan(&db, &event, &guid)?;
            line(
                &format!("region then event, 1 thread, {settings}"),
                a + b,
                start.elapsed().as_secs_f64(),
            );
            let start = Instant::now();
            let rows = std::thread::scope(|s| -> rusqlite::Result<u64> {
                let other = s.spawn(|| scan(&open(path, tuned)?, &event, &guid));
                let (a, _) = scan(&open(path, tuned)?, &region, &guid)?;
                let (b, _) = other.join().expect("the event scan panicked")?;
                Ok(a + b)
            })?;
            line(
                &format!("region and event, 2 threads, {settings}"),
                rows,
                start.elapsed().as_secs_f64(),
            );
        }
    }
    Ok(())
}
