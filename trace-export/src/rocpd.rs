//! The rocpd output (`<prefix>_results.db`): rocprofv3's SQLite database, schema 3.0.0, in
//! the layout upstream's readers (the `rocpd` Python package, its `convert`, `query` and
//! `summary` commands, its SQL views) expect.
//!
//! Layout:
//! - Each process has its own set of tables, named `rocpd_<name>_<uuid>` with its guid's
//!   suffix (`guid`), and its own metadata (`schema_version` 3, `uuid` = the suffix,
//!   `guid`). A file of one process is exactly what upstream writes; a file of several is what
//!   upstream's `rocpd merge` makes of their files: every id stays the process's own, and the
//!   `guid` of every row says whose it is.
//! - The plain views `rocpd_<name>` select every process's rows (`UNION ALL`), and over them
//!   upstream's data and summary views (`regions`, `kernels`, `memory_copies`, `top`, …:
//!   `views`), stored as upstream's writer stores them, so `sqlite3` alone answers them.
//! - Ids as upstream gives them: process = pid, thread = tid, agent = driver node id,
//!   queue/stream = handle (0 = `Default Queue`/`Default Stream`, always present), kernel
//!   symbol = kernel id, dispatch = dispatch id, counter = counter id, string ids 1.. over the
//!   strings in byte order. Region and sample ids are the run-unique API call ids
//!   ([`crate::view::Api::id`]); markers continue after them. Events are numbered 1.. in write
//!   order (HIP calls, HSA calls, markers, dispatches, copies); an API event's stack id is its
//!   call's id and its parent the enclosing call's, a dispatch's or copy's stack id (and
//!   parent) the id of the call that issued it.
//! - A call with a duration is a region; a zero-length one is a sample on a track named after
//!   its category. Markers are `roctxThreadRangeA` (`roctxProcessRangeA`, `roctxMarkA`)
//!   regions with their message in the event's `extdata`.
//!
//! HIP calls' arguments, when the tool captured them, are `rocpd_arg` rows of the call's event
//! (position, demangled type, name, value), as upstream writes them (no HSA or marker call has
//! any there either).
//!
//! What the records do not hold is left out or stood in for: the process's environment and tool configuration (`{}`), copy addresses (NULL), and
//! code objects: one code object row (id 1) stands for the process's code, so that every
//! kernel symbol has one.
//!
//! Writing is one transaction of prepared statements inserting up to 64 rows each, every row
//! after the rows it refers to (foreign keys hold; `PRAGMA foreign_key_check` is empty), into a
//! temporary file beside the target that replaces it only once complete.

mod batch;
mod guid;
mod rows;
mod schema;
mod views;

use crate::Error;
use crate::view::{ProcessView, RunInfo};
use rusqlite::OptionalExtension as _;
use std::path::Path;

/// Writes the rocpd file at `path` for `processes` (one file may hold several processes, each
/// with its own guid and tables).
pub fn write_rocpd(path: &Path, run: &RunInfo, processes: &[ProcessView<'_>]) -> Result<(), Error> {
    if processes.is_empty() {
        return Err(Error::Format {
            path: path.to_owned(),
            message: "no process to write".into(),
        });
    }
    crate::output::replace_whole(path, |temp, file| {
        // SQLite opens the (empty) temporary by its name.
        drop(file);
        write_file(temp, run, processes)
            .and_then(|()| crate::view::check_all(processes).map_err(|e| e.to_string()))
            .map_err(|message| Error::Format {
                path: path.to_owned(),
                message,
            })
    })
}

/// Builds the whole database in the (empty) file at `temp`; the error says what failed.
fn write_file(temp: &Path, run: &RunInfo, processes: &[ProcessView<'_>]) -> Result<(), String> {
    let sql = |e: rusqlite::Error| e.to_string();
    let mut conn = rusqlite::Connection::open(temp).map_err(sql)?;
    conn.execute_batch(PRIVATE_FILE).map_err(sql)?;
    let host = rows::Host::read(run);
    let tx = conn.transaction().map_err(sql)?;
    let mut suffixes: Vec<String> = Vec::with_capacity(processes.len());
    for p in processes {
        add_process(&tx, &host, run, &mut suffixes, p)?;
    }
    schema::create_plain_views(&tx, &suffixes).map_err(sql)?;
    views::create_views(&tx).map_err(sql)?;
    tx.commit().map_err(sql)?;
    conn.close().map_err(|(_, e)| sql(e))
}

/// The pragmas of a file private until renamed and discarded on any failure: no journal and
/// no syncing. Rows go in in dependency order (every row after the rows it names), but SQLite
/// does not look every reference up as it goes: that costs a cursor per key per row and halves
/// the rate. The references are checked once each process is written instead. Pages of
/// 64 KiB (SQLite's largest; set before the first table exists) take a sixteenth of the
/// writes of 4 KiB ones once the cache spills, and the same cache in bytes.
const PRIVATE_FILE: &str = "PRAGMA page_size = 65536;
     PRAGMA journal_mode = OFF;
     PRAGMA synchronous = OFF;
     PRAGMA locking_mode = EXCLUSIVE;
     PRAGMA cache_size = -65536;
     PRAGMA foreign_keys = OFF;";

/// Writes one process's tables and rows under a guid no earlier process of the file has;
/// its suffix joins `suffixes`.
fn add_process(
    conn: &rusqlite::Connection,
    host: &rows::Host,
    run: &RunInfo,
    suffixes: &mut Vec<String>,
    p: &ProcessView<'_>,
) -> Result<(), String> {
    let sql = |e: rusqlite::Error| e.to_string();
    let (start, _) = rows::process_span(p);
    let mut guid = guid::process_guid(
        &host.machine_id,
        p.trace.pid,
        p.trace.ppid,
        p.trace.image,
        start,
    );
    // Two processes of one file never share tables, however alike they are.
    let mut salt = 0u32;
    while suffixes.contains(&guid::suffix(&guid)) {
        salt += 1;
        let machine = format!("{}#{salt}", host.machine_id);
        guid = guid::process_guid(&machine, p.trace.pid, p.trace.ppid, p.trace.image, start);
    }
    let suffix = guid::suffix(&guid);
    schema::create_tables(conn, &suffix, &guid).map_err(sql)?;
    rows::write_process(conn, &suffix, p, run, host).map_err(sql)?;
    check_references(conn, &suffix, cfg!(debug_assertions))?;
    suffixes.push(suffix);
    Ok(())
}

/// A rocpd file written one process at a time (a merge's: each input read, written and
/// dropped before the next), with the layout [`write_rocpd`] gives a file of several processes.
/// The file is built beside `path` and replaces it only at [`RocpdWriter::finish`]; dropped
/// unfinished, it leaves nothing.
pub struct RocpdWriter {
    path: std::path::PathBuf,
    temp: std::path::PathBuf,
    conn: Option<rusqlite::Connection>,
    host: rows::Host,
    run: RunInfo,
    suffixes: Vec<String>,
}

impl RocpdWriter {
    /// Starts the file for `path` (its directory created if need be).
    pub fn create(path: &Path, run: &RunInfo) -> Result<Self, Error> {
        let fail = |message: String| Error::Format {
            path: path.to_owned(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(Error::io(path))?;
        }
        let mut name = path.file_name().unwrap_or_default().to_owned();
        name.push(format!(".partial-{}", std::process::id()));
        let temp = path.with_file_name(name);
        let _ = std::fs::remove_file(&temp);
        let conn = rusqlite::Connection::open(&temp).map_err(|e| fail(e.to_string()))?;
        conn.execute_batch(PRIVATE_FILE)
            .and_then(|()| conn.execute_batch("BEGIN"))
            .map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            path: path.to_owned(),
            temp,
            conn: Some(conn),
            host: rows::Host::read(run),
            run: run.clone(),
            suffixes: Vec::new(),
        })
    }

    /// Adds one process (its own guid, tables and metadata).
    pub fn add(&mut self, process: &ProcessView<'_>) -> Result<(), Error> {
        let conn = self
            .conn
            .as_ref()
            .ok_or_else(|| self.fail("finished".into()))?;
        add_process(conn, &self.host, &self.run, &mut self.suffixes, process)
            .and_then(|()| process.check().map_err(|e| e.to_string()))
            .map_err(|m| self.fail(m))
    }

    /// Copies every process of the rocpd database at `db` table by table (SQLite to SQLite:
    /// every row as it is, in bounded memory), when each of its processes has exactly the
    /// tables this writer writes and a guid suffix no process of the file has yet; returns
    /// each process copied, or `None` (nothing copied) when the file is
    /// not such a file — the caller then reads it and adds its processes.
    pub fn copy_from(&mut self, db: &Path) -> Result<Option<Vec<CopiedProcess>>, Error> {
        let conn = self
            .conn
            .as_ref()
            .ok_or_else(|| self.fail("finished".into()))?;
        let result = copy_file(conn, db, &self.suffixes);
        // ATTACH needs no open transaction: the copy ran between two.
        let _ = conn.execute_batch("BEGIN");
        match result {
            Ok(Some((suffixes, processes))) => {
                self.suffixes.extend(suffixes);
                Ok(Some(processes))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(Error::Format {
                path: db.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// The processes added so far.
    pub fn processes(&self) -> usize {
        self.suffixes.len()
    }

    /// Creates the views over every process added, commits and puts the file in place.
    pub fn finish(mut self) -> Result<(), Error> {
        if self.suffixes.is_empty() {
            return Err(self.fail("no process to write".into()));
        }
        let conn = self
            .conn
            .take()
            .ok_or_else(|| self.fail("finished".into()))?;
        let sql = |e: rusqlite::Error| e.to_string();
        let built = schema::create_plain_views(&conn, &self.suffixes)
            .and_then(|()| views::create_views(&conn))
            .and_then(|()| conn.execute_batch("COMMIT"))
            .map_err(sql)
            .and_then(|()| conn.close().map_err(|(_, e)| sql(e)))
            .map_err(|m| self.fail(m))
            .and_then(|()| std::fs::rename(&self.temp, &self.path).map_err(Error::io(&self.path)));
        if built.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        built
    }

    fn fail(&self, message: String) -> Error {
        Error::Format {
            path: self.path.clone(),
            message,
        }
    }
}

/// A process [`RocpdWriter::copy_from`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedProcess {
    /// Its pid.
    pub pid: u32,
    /// Its parent's.
    pub ppid: u32,
    /// When it started (`init`, ns).
    pub init_ns: u64,
}

/// The guid suffixes and the processes of one file copied.
type Copied = (Vec<String>, Vec<CopiedProcess>);

/// [`RocpdWriter::copy_from`]'s work, with the writer's transaction committed: the suffixes
/// and processes copied, or `None`.
fn copy_file(
    conn: &rusqlite::Connection,
    db: &Path,
    taken: &[String],
) -> rusqlite::Result<Option<Copied>> {
    conn.execute_batch("COMMIT")?;
    conn.execute("ATTACH DATABASE ?1 AS src", [db.to_string_lossy().as_ref()])?;
    let copied = copy_attached(conn, taken);
    let copied = match copied {
        Ok(Some(c)) => conn.execute_batch("COMMIT").map(|()| Some(c)),
        other => {
            let _ = conn.execute_batch("ROLLBACK");
            other
        }
    };
    conn.execute_batch("DETACH DATABASE src")?;
    copied
}

fn copy_attached(
    conn: &rusqlite::Connection,
    taken: &[String],
) -> rusqlite::Result<Option<Copied>> {
    let prefix = "rocpd_metadata";
    let suffixes: Vec<String> = {
        let mut stmt = conn.prepare(
            "SELECT substr(name, ?1) FROM src.sqlite_master WHERE type = 'table' \
             AND substr(name, 1, ?2) = ?3 ORDER BY name",
        )?;
        let it = stmt.query_map(
            rusqlite::params![prefix.len() + 1, prefix.len(), prefix],
            |r| r.get(0),
        )?;
        it.collect::<rusqlite::Result<_>>()?
    };
    if suffixes.is_empty() {
        return Ok(None);
    }
    // Check every process first: all or nothing.
    let mut plan = Vec::new();
    for suffix in &suffixes {
        if taken.contains(suffix) || suffixes.iter().filter(|s| *s == suffix).count() > 1 {
            return Ok(None);
        }
        let guid: Option<String> = conn
            .query_row(
                &format!("SELECT value FROM src.\"{prefix}{suffix}\" WHERE tag = 'guid'"),
                [],
                |r| r.get(0),
            )
            .optional()?;
        let Some(guid) = guid else { return Ok(None) };
        let mem = rusqlite::Connection::open_in_memory()?;
        schema::create_tables(&mem, suffix, &guid)?;
        let expected: Vec<(String, String)> = {
            let mut stmt = mem.prepare(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' \
                 AND name <> 'sqlite_sequence' ORDER BY rowid",
            )?;
            let it = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            it.collect::<rusqlite::Result<_>>()?
        };
        let theirs: i64 = conn.query_row(
            "SELECT COUNT(*) FROM src.sqlite_master WHERE type = 'table' \
             AND substr(name, -length(?1)) = ?1",
            [suffix],
            |r| r.get(0),
        )?;
        if theirs as usize != expected.len() {
            return Ok(None);
        }
        for (name, sql) in &expected {
            let found: Option<String> = conn
                .query_row(
                    "SELECT sql FROM src.sqlite_master WHERE type = 'table' AND name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .optional()?;
            if found.as_deref() != Some(sql.as_str()) {
                return Ok(None);
            }
        }
        plan.push((suffix.clone(), guid, expected));
    }
    conn.execute_batch("BEGIN")?;
    let mut processes = Vec::new();
    for (suffix, guid, tables) in &plan {
        schema::create_tables(conn, suffix, guid)?;
        conn.execute_batch(&format!("DELETE FROM main.\"{prefix}{suffix}\""))?;
        for (name, _) in tables {
            conn.execute_batch(&format!(
                "INSERT INTO main.\"{name}\" SELECT * FROM src.\"{name}\""
            ))?;
        }
        let mut stmt = conn.prepare(&format!(
            "SELECT pid, ppid, init FROM main.\"rocpd_info_process{suffix}\" ORDER BY id"
        ))?;
        let it = stmt.query_map([], |r| {
            Ok(CopiedProcess {
                pid: r.get::<_, Option<i64>>(0)?.unwrap_or(0) as u32,
                ppid: r.get::<_, Option<i64>>(1)?.unwrap_or(0) as u32,
                init_ns: r.get::<_, Option<i64>>(2)?.unwrap_or(0) as u64,
            })
        })?;
        for p in it {
            processes.push(p?);
        }
    }
    Ok(Some((plan.into_iter().map(|p| p.0).collect(), processes)))
}

impl Drop for RocpdWriter {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(conn);
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Checks that the references of one process's tables resolve (`PRAGMA foreign_key_check`):
/// those of its catalog always, those of its events and their rows too when `everything`.
fn check_references(
    conn: &rusqlite::Connection,
    suffix: &str,
    everything: bool,
) -> Result<(), String> {
    let tables: Vec<String> = if everything {
        schema::base_names()
            .map(|b| format!("{b}{suffix}"))
            .collect()
    } else {
        schema::CATALOG
            .iter()
            .map(|b| format!("{b}{suffix}"))
            .collect()
    };
    for table in tables {
        let broken = conn
            .query_row(
                &format!(
                    "SELECT \"table\", rowid, \"parent\" FROM pragma_foreign_key_check('{table}')"
                ),
                [],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| e.to_string())?;
        if let Some((table, row, parent)) = broken {
            return Err(format!(
                "internal error: row {row} of {table} names a row of {parent} that was not written"
            ));
        }
    }
    Ok(())
}
