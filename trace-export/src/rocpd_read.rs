//! Reading rocpd databases back into process records (`rocprof convert -i`, `rocprof merge`):
//! ours and upstream's schema-3 files, through the plain `rocpd_<name>` views both have.
//!
//! One [`ProcessTrace`] per process row (a process is its `guid` and `pid`). What comes back:
//! agents (from the agent row's `extdata` when it is this project's agent record, else from the
//! row's columns), API calls from regions — and from samples, which are zero-length calls —
//! with their category as the domain and their name as the operation (operation ids are
//! numbered per domain in order of first use, since a database stores names only), ROCTx marks
//! and ranges (events of `MARKER_CORE_RANGE_API`, or of upstream's `MARKER_CORE_API` with a
//! message; the message from the event's `extdata`; a sample or a `roctxMarkA` region is a
//! mark, an instant), kernel symbols,
//! dispatches, memory copies (the direction from their name) and counter values (summed per
//! dispatch and counter). Columns a file lacks read as 0 or empty; a table it lacks gives no
//! records; a file without the process view is refused with the reason.
//!
//! **Streaming.** Nothing is held per event or per row of a table: each kind of record is one
//! query over the process's own tables (`rocpd_<name><suffix>`, found through its
//! `rocpd_info_process<suffix>` table; the plain views when a file has no such tables), joined
//! to its event by the event's primary key. The API calls go from the rows straight into the
//! sorted runs ([`RecordsBuilder`]: spilled to disk past one run, as from a record log), in the
//! table's own order (no sort in SQLite); strings come through a bounded cache of the
//! process's string table; the correlation ids of markers, dispatches, copies and allocations
//! (the root of their stack) are resolved afterwards by scanning the events for just the
//! stacks those records name ([`roots`]). What is held is what [`ProcessTrace`] holds: the
//! device records, markers and counters (the calls are in the runs).

use crate::Error;
use crate::rocpd_pages;
use rusqlite::{Connection, OpenFlags, Row};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;
use trace_records::ProcessTrace;
use trace_records::agents::{Agent, AgentKind, GpuProperties};
use trace_records::docs::{AgentsList, Document};
use trace_records::record::*;
use trace_records::records::RecordsBuilder;

/// The key of an agent row's `extdata` under which this project's writer keeps the whole agent
/// record.
pub const AGENT_KEY: &str = "rocprof_wsl_agent";

/// An agent from an agent row's `extdata`: this project's record if it is there, else
/// rocprofv3's property keys (those named as ours; the rest stay 0).
fn agent_from_extdata(extdata: &str, gpu: bool) -> Option<Agent> {
    let v: serde_json::Value = serde_json::from_str(extdata).ok()?;
    if let Some(ours) = v
        .get(AGENT_KEY)
        .and_then(|a| serde_json::from_value(a.clone()).ok())
    {
        return Some(ours);
    }
    let object = v.as_object()?;
    let mut props = serde_json::to_value(GpuProperties::default()).ok()?;
    let slots = props.as_object_mut()?;
    for (k, value) in object {
        if let Some(slot) = slots.get_mut(k)
            && (value.is_u64() && slot.is_u64())
        {
            *slot = value.clone();
        }
    }
    let number = |k: &str| {
        object
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0) as u32
    };
    let string = |k: &str| {
        object
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Some(Agent {
        kind: if gpu { AgentKind::Gpu } else { AgentKind::Cpu },
        logical_node_id: number("logical_node_id"),
        node_id: number("node_id"),
        logical_node_type_id: number("logical_node_type_id"),
        name: string("name"),
        product_name: string("product_name"),
        vendor_name: string("vendor_name"),
        model_name: string("model_name"),
        cpu_cores_count: number("cpu_cores_count"),
        gpu: if gpu {
            serde_json::from_value(props).ok()
        } else {
            None
        },
    })
}

/// The processes a rocpd database holds, in the order of their rows.
pub fn read(path: &Path) -> Result<Vec<ProcessTrace>, Error> {
    let mut out = Vec::new();
    read_each(path, &mut |t| out.push(t))?;
    Ok(out)
}

/// Reads the processes of a rocpd database one after another, in the order of their rows,
/// handing each to `each` before the next is read (so a caller that writes and drops each
/// holds one process at a time).
pub fn read_each(path: &Path, each: &mut dyn FnMut(ProcessTrace)) -> Result<(), Error> {
    read_each_with(path, Join::Merge, each)
}

/// [`read_each`] with the regions joined to their events by `join`.
fn read_each_with(
    path: &Path,
    join: Join,
    each: &mut dyn FnMut(ProcessTrace),
) -> Result<(), Error> {
    let fail = |message: String| Error::Format {
        path: path.to_owned(),
        message,
    };
    let db = open_read(path).map_err(|e| fail(format!("cannot open it as SQLite: {e}")))?;
    let sql = |e: rusqlite::Error| fail(e.to_string());
    let names = Names::of(&db).map_err(sql)?;
    if !names.has("rocpd_info_process") {
        return Err(fail(
            "no rocpd_info_process view: not a rocpd database (schema 3)".into(),
        ));
    }
    let suffixes = names.process_suffixes(&db).map_err(sql)?;
    let processes = rows(
        &db,
        "SELECT guid, pid, ppid, init FROM rocpd_info_process ORDER BY id",
        |r| Ok((text(r, 0), int(r, 1), int(r, 2), int(r, 3))),
    )
    .map_err(sql)?;
    for (guid, pid, ppid, init) in processes {
        let suffix = suffixes.get(&(guid.clone(), pid)).cloned();
        let tables = Tables {
            path,
            db: &db,
            names: &names,
            suffix,
            guid,
            pid,
        };
        let mut p = Reader {
            strings: StringCache::new(&tables).map_err(sql)?,
            t: &tables,
            trace: ProcessTrace {
                pid: pid as u32,
                ppid: ppid as u32,
                created_ns: init as u64,
                ..ProcessTrace::default()
            },
            interned: HashMap::new(),
            pending: Pending::default(),
            join,
        };
        p.agents().map_err(sql)?;
        p.api().map_err(sql)?;
        p.symbols().map_err(sql)?;
        p.code_objects().map_err(sql)?;
        let counted = p.counted();
        let dispatch_of = p.dispatches(counted).map_err(sql)?;
        p.copies().map_err(sql)?;
        p.allocations().map_err(sql)?;
        p.correlate().map_err(sql)?;
        if counted {
            p.counters(&dispatch_of).map_err(sql)?;
        }
        each(p.trace);
    }
    Ok(())
}

/// A hash map with a fast hasher, for the maps consulted once per row (ids and small keys
/// from the file: no untrusted input can make them collide by more than it costs to read).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// How a process's regions are joined to their events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// Both scanned in id order, the events on a second connection and thread, and zipped by
    /// event id ([`regions_merged`]); a region whose event lies behind the events already
    /// passed is looked up by its key. Used when both are tables.
    Merge,
    /// As [`Join::Merge`], both tables read through SQLite even where the page walk could
    /// read them (the tests' check of the SQLite merge-join that files the walk refuses take).
    #[cfg_attr(not(test), allow(dead_code))]
    MergeSql,
    /// SQLite's join: one lookup of the event by its key per region (the tests' reference).
    #[cfg_attr(not(test), allow(dead_code))]
    Sql,
}

/// Opens `path` read-only for one thread: no mutex around every column read (a fifth of the
/// read-back's time in serialised mode), nothing written (`query_only`; sorts, if any, in
/// memory).
fn open_read(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags)?;
    db.execute_batch(READ_SETTINGS)?;
    Ok(db)
}

/// The read connection's settings. Decision: no memory map (`mmap_size`). Measured on a
/// 1 M-call database (`rocprof merge -f csv`, 3 interleaved rounds): a map of the whole file
/// saved 0–15 % of the wall time, within this VM's noise, but every page it touched counts in
/// the process's resident set, once per connection (183 MiB peak against 65 MiB), and the
/// merge's peak memory is bounded at 128 MiB; the default page cache (2 MB) serves scans in
/// rowid order as well as a larger one.
const READ_SETTINGS: &str = "PRAGMA query_only = ON;
     PRAGMA temp_store = MEMORY;";

/// The (pid, ppid) of a database's earliest started process, if it is a rocpd database with
/// one (a merge names its one database after it).
pub fn first_process(path: &Path) -> Option<(u32, u32)> {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    if !Names::of(&db).ok()?.has("rocpd_info_process") {
        return None;
    }
    db.query_row(
        "SELECT pid, ppid FROM rocpd_info_process ORDER BY init, id LIMIT 1",
        [],
        |r| Ok((int(r, 0) as u32, int(r, 1) as u32)),
    )
    .ok()
}

/// The file's tables and views (and which of them are tables).
struct Names {
    all: HashSet<String>,
    tables: HashSet<String>,
}

impl Names {
    fn of(db: &Connection) -> rusqlite::Result<Self> {
        let names = rows(db, "SELECT name, type FROM sqlite_master", |r| {
            Ok((text(r, 0), text(r, 1)))
        })?;
        let tables = names
            .iter()
            .filter(|(_, kind)| kind == "table")
            .map(|(name, _)| name.clone())
            .collect();
        Ok(Names {
            all: names.into_iter().map(|(name, _)| name).collect(),
            tables,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.all.contains(name)
    }

    /// Each process's table suffix: the process tables `rocpd_info_process<suffix>` (ours and
    /// upstream's one table set per process; a file whose `rocpd_info_process` is itself a
    /// table has the suffix ""), by the (guid, pid) of their rows.
    fn process_suffixes(
        &self,
        db: &Connection,
    ) -> rusqlite::Result<HashMap<(String, i64), String>> {
        let tables = rows(
            db,
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND substr(name, 1, 18) = 'rocpd_info_process'",
            |r| Ok(text(r, 0)),
        )?;
        let mut out = HashMap::new();
        for table in tables {
            let suffix = table["rocpd_info_process".len()..].to_owned();
            let sql = format!("SELECT guid, pid FROM {}", quoted(&table));
            for (guid, pid) in rows(db, &sql, |r| Ok((text(r, 0), int(r, 1))))? {
                out.entry((guid, pid)).or_insert_with(|| suffix.clone());
            }
        }
        Ok(out)
    }
}

/// `name` as an SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Where one process's rows are: its own tables (`rocpd_<name><suffix>`) when the file has
/// them, so every query reads one table straight by its primary key and joins by it; else the
/// plain views (filtered by the process's guid and pid, as the rows of any process).
struct Tables<'c> {
    /// The database's file (a second connection reads the events beside the regions).
    path: &'c Path,
    db: &'c Connection,
    names: &'c Names,
    suffix: Option<String>,
    guid: String,
    pid: i64,
}

impl Tables<'_> {
    /// The table (or view) holding this process's rows of `base`, if the file has one.
    fn of(&self, base: &str) -> Option<String> {
        if let Some(s) = &self.suffix {
            let own = format!("{base}{s}");
            if self.names.has(&own) {
                return Some(quoted(&own));
            }
        }
        self.names.has(base).then(|| quoted(base))
    }

    /// As [`Tables::of`] unquoted, only when that name is a table (not a view): a scan of it
    /// in rowid order is then a plain walk of its b-tree.
    fn table_of(&self, base: &str) -> Option<String> {
        let own = self
            .suffix
            .as_ref()
            .map(|s| format!("{base}{s}"))
            .filter(|n| self.names.has(n));
        let name = own.or_else(|| self.names.has(base).then(|| base.to_owned()))?;
        self.names.tables.contains(&name).then_some(name)
    }

    /// The filter selecting this process's rows of `base` under the alias `alias`: its guid,
    /// and its pid where the table has one (events, samples and counter values have none:
    /// their guid is the process's).
    fn filter(base: &str, alias: &str) -> String {
        match base {
            "rocpd_event" | "rocpd_sample" | "rocpd_pmc_event" => format!("{alias}.guid = ?1"),
            _ => format!("{alias}.guid = ?1 AND {alias}.pid = ?2"),
        }
    }

    /// `column` when `base` has it, else `NULL` (databases of older writers lack the newer
    /// columns).
    fn column_or_null(&self, base: &str, column: &str) -> String {
        let found = self.of(base).is_some_and(|t| {
            self.db
                .prepare(&format!("SELECT * FROM {t} LIMIT 0"))
                .is_ok_and(|stmt| stmt.column_names().contains(&column))
        });
        match found {
            true => column.to_owned(),
            false => "NULL".to_owned(),
        }
    }

    /// `SELECT <columns> FROM <base> AS x WHERE <this process> <tail>`, each row to `f` as it
    /// comes; nothing when the file has no such table.
    fn each(
        &self,
        base: &str,
        columns: &str,
        tail: &str,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        self.rows_of(base, columns, "", tail, &mut f)
    }

    /// As [`Tables::each`], each row of `base` with its event (`e`: columns `NULL` for a row
    /// whose event this process does not have, and when the file has no event table).
    fn each_with_event(
        &self,
        base: &str,
        columns: &str,
        tail: &str,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let join = match self.of("rocpd_event") {
            Some(events) => format!("LEFT JOIN {events} AS e ON e.id = x.event_id AND e.guid = ?1"),
            None => "LEFT JOIN (SELECT NULL AS id, NULL AS stack_id, NULL AS correlation_id, \
                     NULL AS category_id, NULL AS extdata) AS e ON 0"
                .to_owned(),
        };
        self.rows_of(base, columns, &join, tail, &mut f)
    }

    /// `SELECT <columns> FROM <base> AS x <join> WHERE <this process> <tail>` through
    /// [`Tables::query`]; nothing when the file has no `base` table.
    fn rows_of(
        &self,
        base: &str,
        columns: &str,
        join: &str,
        tail: &str,
        f: &mut dyn FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let Some(table) = self.of(base) else {
            return Ok(());
        };
        let sql = format!(
            "SELECT {columns} FROM {table} AS x {join} WHERE {} {tail}",
            Self::filter(base, "x")
        );
        self.query(&sql, f)
    }

    /// Runs `sql` (`?1` the process's guid, `?2` its pid), each row to `f`.
    fn query(
        &self,
        sql: &str,
        f: &mut dyn FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let mut stmt = self.db.prepare(sql)?;
        let mut rows = match stmt.parameter_count() {
            0 => stmt.query([])?,
            1 => stmt.query(rusqlite::params![self.guid])?,
            _ => stmt.query(rusqlite::params![self.guid, self.pid])?,
        };
        while let Some(r) = rows.next()? {
            f(r)?;
        }
        Ok(())
    }

    /// `SELECT <columns> FROM <base>` for this process, collected.
    fn select<T>(
        &self,
        base: &str,
        columns: &str,
        tail: &str,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let mut out = Vec::new();
        self.each(base, columns, tail, |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// How many strings [`StringCache`] keeps before it starts over (names and categories are few;
/// a file naming millions of distinct strings costs lookups, not memory).
const STRING_CACHE: usize = 1 << 14;

/// The process's strings by id, looked up as they are named and kept in a bounded cache.
struct StringCache<'c> {
    lookup: Option<rusqlite::Statement<'c>>,
    cache: FastMap<i64, Rc<str>>,
    empty: Rc<str>,
}

impl<'c> StringCache<'c> {
    fn new(t: &Tables<'c>) -> rusqlite::Result<Self> {
        // Every row of the process's string table (the file's, without one per process): ids
        // are per process, and the table has no pid.
        let lookup = match t.of("rocpd_string") {
            Some(table) => {
                Some(t.db.prepare(&format!("SELECT string FROM {table} WHERE id = ?1"))?)
            }
            None => None,
        };
        Ok(StringCache {
            lookup,
            cache: FastMap::default(),
            empty: Rc::from(""),
        })
    }

    fn get(&mut self, id: i64) -> rusqlite::Result<Rc<str>> {
        if let Some(s) = self.cache.get(&id) {
            return Ok(s.clone());
        }
        let Some(lookup) = self.lookup.as_mut() else {
            return Ok(self.empty.clone());
        };
        // The last row with the id, as a file with several (a malformed one) read before.
        let mut found: Option<String> = None;
        let mut rows = lookup.query([id])?;
        while let Some(r) = rows.next()? {
            found = Some(text(r, 0));
        }
        let s: Rc<str> = found.map_or_else(|| self.empty.clone(), Rc::from);
        if self.cache.len() >= STRING_CACHE {
            self.cache.clear();
        }
        self.cache.insert(id, s.clone());
        Ok(s)
    }
}

fn rows<T>(
    db: &Connection,
    sql: &str,
    f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = db.prepare(sql)?;
    let it = stmt.query_map([], f)?;
    it.collect()
}

/// A column as an integer (NULL, text or a missing value: 0).
fn int(r: &Row<'_>, k: usize) -> i64 {
    match r.get_ref(k) {
        Ok(rusqlite::types::ValueRef::Integer(i)) => i,
        _ => 0,
    }
}

/// A column as text (NULL or another type: empty).
fn text(r: &Row<'_>, k: usize) -> String {
    r.get::<_, Option<String>>(k)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A column as text without copying it (NULL or another type: empty).
fn text_ref<'r>(r: &'r Row<'_>, k: usize) -> &'r str {
    match r.get_ref(k) {
        Ok(rusqlite::types::ValueRef::Text(t)) => std::str::from_utf8(t).unwrap_or(""),
        _ => "",
    }
}

/// The API domain of an event category (rocprofiler's buffer-tracing kind names).
fn domain(category: &str) -> Option<ApiDomain> {
    Some(match category {
        "HSA_CORE_API" => ApiDomain::HsaCore,
        "HSA_AMD_EXT_API" => ApiDomain::HsaAmdExt,
        "HSA_IMAGE_EXT_API" => ApiDomain::HsaImage,
        "HSA_FINALIZE_EXT_API" => ApiDomain::HsaFinalize,
        "HIP_RUNTIME_API" | "HIP_RUNTIME_API_EXT" => ApiDomain::HipRuntime,
        "HIP_COMPILER_API" | "HIP_COMPILER_API_EXT" => ApiDomain::HipCompiler,
        "MARKER_CORE_API" => ApiDomain::MarkerCore,
        "MARKER_CONTROL_API" => ApiDomain::MarkerControl,
        "MARKER_NAME_API" => ApiDomain::MarkerName,
        _ => return None,
    })
}

/// What the events of a category are read back as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// This project's ROCTx category (`MARKER_CORE_RANGE_API`): always a marker.
    Range,
    /// Upstream's `MARKER_CORE_API`: a marker when its event carries a message, else a call.
    MarkerCore,
    /// Calls of an API domain.
    Api(ApiDomain),
    /// Anything else: not read back.
    Other,
}

fn class(category: &str) -> Class {
    match category {
        "MARKER_CORE_RANGE_API" => Class::Range,
        "MARKER_CORE_API" => Class::MarkerCore,
        c => domain(c).map_or(Class::Other, Class::Api),
    }
}

/// The kind of a ROCTx record read back: a zero-length one (a sample: its name is not stored)
/// or a region named `roctxMarkA` is a mark, an instant; a region named after a process-wide
/// range is one; any other is a thread range. Decision: the writer stores every zero-length
/// record as a sample, so a push/pop range that took no time at all comes back as a mark —
/// as the CSV files show it (their marks are the rows whose start equals their end).
fn marker_kind(name: &str, sample: bool) -> MarkerKind {
    match name {
        _ if sample => MarkerKind::Mark,
        "roctxMarkA" | "roctxMark" => MarkerKind::Mark,
        "roctxProcessRangeA" | "roctxRangeStartA" => MarkerKind::ProcessRange,
        _ => MarkerKind::ThreadRange,
    }
}

/// Where a region or sample comes in the order the calls are numbered in: regions before
/// samples, each by (start, row id).
type Key = (u8, i64, i64);

/// What a record's correlation id will be once the stack roots are known.
#[derive(Debug, Clone, Copy)]
enum Correlation {
    /// Known now.
    Is(u64),
    /// The root of this stack id.
    Root(i64),
}

/// A record's correlation id from its event's columns (`found`: the event exists): the root of
/// its stack id, else its external correlation id, else the event's own id; 0 without an event.
fn correlation(found: bool, event: i64, stack: i64, corr: i64) -> Correlation {
    match (found, stack, corr) {
        (false, ..) => Correlation::Is(0),
        (_, s, _) if s > 0 => Correlation::Root(s),
        (_, _, c) if c > 0 => Correlation::Is(c as u64),
        _ => Correlation::Is(event as u64),
    }
}

/// A marker read back, waiting for its message's string id and its correlation id.
struct PendingMarker {
    key: Key,
    record: MarkerRecord,
    message: String,
    correlation: Correlation,
}

/// The operations and strings of the API pass, numbered as the rows come and checked against
/// the order of first use afterwards ([`Reader::api`]).
#[derive(Default)]
struct Ops {
    /// The operation of each (domain, name string id) of a region, with the key of its first
    /// use.
    by_id: FastMap<(u8, i64), (u16, Key)>,
    /// The operation of each (domain, name), with the key of its first use.
    by_name: HashMap<(u8, Rc<str>), (u16, Key)>,
    /// Operations given so far, per domain.
    count: HashMap<u8, u16>,
    /// The numbering to use (a second pass, when the first one's differed from the order of
    /// first use).
    fixed: Option<HashMap<(u8, Rc<str>), u16>>,
}

impl Ops {
    fn get(&mut self, domain: u8, name: &Rc<str>, key: Key) -> u16 {
        let fixed = self.fixed.as_ref();
        let count = &mut self.count;
        let entry = self
            .by_name
            .entry((domain, name.clone()))
            .or_insert_with(|| {
                let op = match fixed.and_then(|f| f.get(&(domain, name.clone()))) {
                    Some(&op) => op,
                    None => {
                        let next = count.entry(domain).or_default();
                        *next += 1;
                        *next - 1
                    }
                };
                (op, key)
            });
        if key < entry.1 {
            entry.1 = key;
        }
        entry.0
    }

    /// The numbering of first use, when it is not the one given.
    fn renumbered(&self) -> Option<HashMap<(u8, Rc<str>), u16>> {
        // Per domain: (first use, name, operation number given).
        type Uses<'a> = Vec<(Key, &'a Rc<str>, u16)>;
        let mut by_domain: HashMap<u8, Uses<'_>> = HashMap::new();
        for ((d, name), &(op, key)) in &self.by_name {
            by_domain.entry(*d).or_default().push((key, name, op));
        }
        let mut differs = false;
        let mut out = HashMap::new();
        for (d, mut ops) in by_domain {
            ops.sort_by_key(|o| o.0);
            for (k, (_, name, op)) in ops.into_iter().enumerate() {
                differs |= usize::from(op) != k;
                out.insert((d, name.clone()), k as u16);
            }
        }
        differs.then_some(out)
    }
}

/// What the reader holds until the stack roots are resolved.
#[derive(Default)]
struct Pending {
    markers: Vec<(MarkerRecord, Correlation)>,
    dispatches: Vec<Correlation>,
    copies: Vec<Correlation>,
    allocations: Vec<Correlation>,
    scratch: Vec<Correlation>,
}

struct Reader<'t, 'c> {
    t: &'t Tables<'c>,
    strings: StringCache<'c>,
    trace: ProcessTrace,
    interned: HashMap<String, StringId>,
    pending: Pending,
    join: Join,
}

/// One region or sample read back.
struct Span<'r> {
    key: Key,
    start: i64,
    end: i64,
    tid: i64,
    event: i64,
    stack: i64,
    corr: i64,
    category: i64,
    /// Its event's `extdata` (read only for marker events).
    extdata: Extdata<'r>,
}

/// Where a span's event `extdata` is.
enum Extdata<'r> {
    /// A column of the row it came in.
    Column(&'r Row<'r>, usize),
    /// Read already (the merge-join's events: only those of marker categories carry it).
    Text(&'r str),
}

impl Extdata<'_> {
    fn text(&self) -> &str {
        match self {
            Extdata::Column(r, k) => text_ref(r, *k),
            Extdata::Text(s) => s,
        }
    }
}

/// The API pass's results.
struct ApiPass {
    api: RecordsBuilder<ApiRecord>,
    markers: Vec<PendingMarker>,
    ops: Ops,
    /// Each string the pass interns (operation names, marker messages) with its first use.
    first_use: HashMap<Rc<str>, Key>,
}

impl Reader<'_, '_> {
    fn intern(&mut self, s: &str) -> StringId {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.interned.len() as StringId + 1;
        self.interned.insert(s.to_owned(), id);
        self.trace.strings.insert(id, s.to_owned());
        id
    }

    fn agents(&mut self) -> rusqlite::Result<()> {
        let agents = self.t.select(
            "rocpd_info_agent",
            "id, type, absolute_index, logical_index, type_index, name, model_name, \
             vendor_name, product_name, extdata",
            "ORDER BY id",
            |r| {
                let gpu = text(r, 1) == "GPU";
                let from_extdata = agent_from_extdata(&text(r, 9), gpu);
                Ok(from_extdata.unwrap_or_else(|| Agent {
                    kind: if gpu { AgentKind::Gpu } else { AgentKind::Cpu },
                    logical_node_id: int(r, 3) as u32,
                    node_id: int(r, 2) as u32,
                    logical_node_type_id: int(r, 4) as u32,
                    name: text(r, 5),
                    product_name: text(r, 8),
                    vendor_name: text(r, 7),
                    model_name: text(r, 6),
                    cpu_cores_count: 0,
                    gpu: gpu.then(GpuProperties::default),
                }))
            },
        )?;
        self.trace.docs.add(Document::Agents(AgentsList { agents }));
        Ok(())
    }

    /// Regions, and samples (zero-length calls), each joined to its event in one query, read
    /// in the tables' own order (no sort) straight into the sorted runs: nothing per event is
    /// held. Operation ids are numbered per domain in the order of first use by (start, row
    /// id), regions before samples, as they always were: the pass numbers them as they come
    /// and, when that order was not the order of first use (rows stored out of time order),
    /// runs once more with the right numbering. Strings are interned in the order of first use
    /// too, and markers kept in that order.
    fn api(&mut self) -> rusqlite::Result<()> {
        let mut pass = self.api_pass(None)?;
        if let Some(fixed) = pass.ops.renumbered() {
            pass = self.api_pass(Some(fixed))?;
        }
        let mut first: Vec<(Key, Rc<str>)> =
            pass.first_use.into_iter().map(|(s, k)| (k, s)).collect();
        first.sort_unstable();
        for (_, s) in &first {
            self.intern(s);
        }
        let mut ops: Vec<((u8, Rc<str>), u16)> = pass
            .ops
            .by_name
            .into_iter()
            .map(|(k, (op, _))| (k, op))
            .collect();
        ops.sort_unstable_by_key(|a| (a.0.0, a.1));
        for ((d, name), op) in ops {
            let id = self.intern(&name);
            self.trace.operations.insert((d, op), id);
        }
        pass.markers.sort_unstable_by_key(|m| m.key);
        for m in pass.markers {
            let mut record = m.record;
            record.message = self.intern(&m.message);
            self.pending.markers.push((record, m.correlation));
        }
        self.trace.api = pass
            .api
            .finish()
            .map_err(|(e, _)| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(())
    }

    fn api_pass(
        &mut self,
        fixed: Option<HashMap<(u8, Rc<str>), u16>>,
    ) -> rusqlite::Result<ApiPass> {
        let mut pass = ApiPass {
            api: RecordsBuilder::<ApiRecord>::new(std::env::temp_dir()),
            markers: Vec::new(),
            ops: Ops {
                fixed,
                ..Ops::default()
            },
            first_use: HashMap::new(),
        };
        let mut classes: FastMap<i64, Class> = FastMap::default();
        let t = self.t;
        let strings = &mut self.strings;
        let merged = match (
            self.join,
            t.table_of("rocpd_region"),
            t.table_of("rocpd_event"),
        ) {
            (Join::Merge | Join::MergeSql, Some(regions), Some(events)) => Some((regions, events)),
            _ => None,
        };
        let pages = self.join == Join::Merge;
        let columns = "x.start, x.\"end\", x.tid, x.name_id, x.id, e.id, e.stack_id, \
                       e.correlation_id, e.category_id, e.extdata";
        match merged {
            Some((regions, events)) => {
                regions_merged(
                    t,
                    strings,
                    &mut pass,
                    &mut classes,
                    &regions,
                    &events,
                    pages,
                )?;
            }
            None => t.each_with_event("rocpd_region", columns, "", |r| {
                if r.get_ref(5)?.data_type() == rusqlite::types::Type::Null {
                    return Ok(()); // no event of this process: not read back
                }
                let span = Span {
                    key: (0, int(r, 0), int(r, 4)),
                    start: int(r, 0),
                    end: int(r, 1),
                    tid: int(r, 2),
                    event: int(r, 5),
                    stack: int(r, 6),
                    corr: int(r, 7),
                    category: int(r, 8),
                    extdata: Extdata::Column(r, 9),
                };
                pass.span(strings, &mut classes, &span, Name::Id(int(r, 3)))
            })?,
        }
        // A sample's call name: upstream's `samples` view takes it from the event's `extdata`
        // (`name`); the track gives its thread.
        let track_join = match t.of("rocpd_track") {
            Some(tracks) => format!(
                "LEFT JOIN {tracks} AS k ON k.id = x.track_id AND {}",
                Tables::filter("rocpd_track", "k")
            ),
            None => "LEFT JOIN (SELECT NULL AS id, NULL AS tid) AS k ON 0".to_owned(),
        };
        if let (Some(samples), Some(events)) = (t.of("rocpd_sample"), t.of("rocpd_event")) {
            let sql = format!(
                "SELECT x.timestamp, k.tid, x.id, e.id, e.stack_id, e.correlation_id, \
                 e.category_id, e.extdata FROM {samples} AS x \
                 JOIN {events} AS e ON e.id = x.event_id AND e.guid = ?1 {track_join} \
                 WHERE x.guid = ?1"
            );
            t.query(&sql, &mut |r| {
                let extdata = text_ref(r, 7);
                let span = Span {
                    key: (1, int(r, 0), int(r, 2)),
                    start: int(r, 0),
                    end: int(r, 0),
                    tid: int(r, 1),
                    event: int(r, 3),
                    stack: int(r, 4),
                    corr: int(r, 5),
                    category: int(r, 6),
                    extdata: Extdata::Column(r, 7),
                };
                let name = serde_json::from_str::<serde_json::Value>(extdata)
                    .ok()
                    .and_then(|v| Some(v.get("name")?.as_str()?.to_owned()))
                    .unwrap_or_default();
                pass.span(strings, &mut classes, &span, Name::Text(name))
            })?;
        }
        Ok(pass)
    }

    fn symbols(&mut self) -> rusqlite::Result<()> {
        // A file without the column (a reduced or older schema) names no code object.
        let code_object = self
            .t
            .column_or_null("rocpd_info_kernel_symbol", "code_object_id");
        let symbols = self.t.select(
            "rocpd_info_kernel_symbol",
            &format!(
                "id, kernel_name, display_name, kernel_object, kernarg_segment_size, \
                 group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, \
                 accum_vgpr_count, {code_object}"
            ),
            "ORDER BY id",
            |r| {
                Ok((
                    int(r, 0),
                    text(r, 1),
                    text(r, 2),
                    [
                        int(r, 3),
                        int(r, 4),
                        int(r, 5),
                        int(r, 6),
                        int(r, 7),
                        int(r, 8),
                        int(r, 9),
                        int(r, 10),
                    ],
                ))
            },
        )?;
        for (id, name, display, v) in symbols {
            let name = self.intern(if name.is_empty() { &display } else { &name });
            self.trace.symbols.push(KernelSymbolRecord {
                kernel_id: id as u64,
                kernel_object: v[0] as u64,
                name,
                arch_vgpr_count: v[5] as u32,
                accum_vgpr_count: v[6] as u32,
                sgpr_count: v[4] as u32,
                group_segment_size: v[2] as u32,
                private_segment_size: v[3] as u32,
                kernarg_segment_size: v[1] as u32,
                code_object_id: u32::try_from(v[7]).unwrap_or(0),
            });
        }
        Ok(())
    }

    fn code_objects(&mut self) -> rusqlite::Result<()> {
        let rows = self.t.select(
            "rocpd_info_code_object",
            "id, agent_id, uri, load_base, load_size, load_delta, extdata",
            "ORDER BY id",
            |r| {
                Ok((
                    [int(r, 0), int(r, 1), int(r, 3), int(r, 4), int(r, 5)],
                    text(r, 2),
                    text(r, 6),
                ))
            },
        )?;
        for ([id, agent, base, size, delta], uri, extdata) in rows {
            if id <= 0 {
                continue;
            }
            let ext = serde_json::from_str::<serde_json::Value>(&extdata).unwrap_or_default();
            let field = |k: &str| ext.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let uri = self.intern(&uri);
            self.trace.code_objects.push(CodeObjectRecord {
                code_object_id: id as u64,
                timestamp: 0,
                load_base: base as u64,
                load_size: size as u64,
                load_delta: delta as u64,
                memory_base: field("memory_base"),
                memory_size: field("memory_size"),
                uri,
                agent_node_id: agent.max(0) as u32,
                storage_type: u32::try_from(field("storage_type")).unwrap_or(0),
                event: CodeObjectEvent::Load as u8,
                reserved: [0; 3],
            });
        }
        Ok(())
    }

    /// Whether the process has counter values to read (counter rows and a values table).
    fn counted(&self) -> bool {
        let Some(info) = self.t.of("rocpd_info_pmc") else {
            return false;
        };
        let any = format!(
            "SELECT 1 FROM {info} AS x WHERE {} LIMIT 1",
            Tables::filter("rocpd_info_pmc", "x")
        );
        let mut found = false;
        let _ = self.t.query(&any, &mut |_| {
            found = true;
            Ok(())
        });
        found && self.t.of("rocpd_pmc_event").is_some()
    }

    /// The dispatches, each with its event in one query; returns, when `counted`, the dispatch
    /// id of each dispatch event (the last row naming it) for the counter values.
    fn dispatches(&mut self, counted: bool) -> rusqlite::Result<HashMap<i64, (i64, u64)>> {
        let region = self
            .t
            .column_or_null("rocpd_kernel_dispatch", "region_name_id");
        let region = match region.as_str() {
            "NULL" => "NULL".to_owned(),
            c => format!("x.{c}"),
        };
        let mut dispatch_of: HashMap<i64, (i64, u64)> = HashMap::new();
        let mut rows: Vec<(KernelDispatchRecord, i64, Correlation)> = Vec::new();
        self.t.each_with_event(
            "rocpd_kernel_dispatch",
            &format!(
                "x.dispatch_id, x.kernel_id, x.queue_id, x.stream_id, x.start, x.\"end\", x.tid, \
                 x.agent_id, x.private_segment_size, x.group_segment_size, x.workgroup_size_x, \
                 x.workgroup_size_y, x.workgroup_size_z, x.grid_size_x, x.grid_size_y, \
                 x.grid_size_z, x.event_id, {region}, x.id, e.id, e.stack_id, e.correlation_id"
            ),
            "ORDER BY x.start, x.id",
            |r| {
                let v: Vec<i64> = (0..22).map(|k| int(r, k)).collect();
                let found = r.get_ref(19)?.data_type() != rusqlite::types::Type::Null;
                if counted {
                    let e = dispatch_of.entry(v[16]).or_insert((v[18], v[0] as u64));
                    if v[18] >= e.0 {
                        *e = (v[18], v[0] as u64);
                    }
                }
                let record = KernelDispatchRecord {
                    dispatch_id: v[0] as u64,
                    kernel_id: v[1] as u64,
                    correlation_id: 0,
                    start: v[4] as u64,
                    end: v[5] as u64,
                    queue_id: v[2] as u64,
                    stream_id: v[3] as u64,
                    agent_node_id: v[7] as u32,
                    thread_id: v[6] as u32,
                    grid: [v[13] as u32, v[14] as u32, v[15] as u32],
                    workgroup: [v[10] as u32, v[11] as u32, v[12] as u32],
                    private_segment_size: v[8] as u32,
                    group_segment_size: v[9] as u32,
                    region: 0,
                    reserved: 0,
                };
                rows.push((record, v[17], correlation(found, v[16], v[20], v[21])));
                Ok(())
            },
        )?;
        for (mut record, region, c) in rows {
            // A --kernel-rename name (upstream's region name); "" when not renamed.
            let name = self.strings.get(region)?;
            record.region = match &*name {
                "" => 0,
                name => self.intern(name),
            };
            self.trace.dispatches.push(record);
            self.pending.dispatches.push(c);
        }
        Ok(dispatch_of)
    }

    fn copies(&mut self) -> rusqlite::Result<()> {
        let t = self.t;
        let strings = &mut self.strings;
        let (copies, pending) = (&mut self.trace.copies, &mut self.pending.copies);
        t.each_with_event(
            "rocpd_memory_copy",
            "x.start, x.\"end\", x.size, x.src_agent_id, x.dst_agent_id, x.tid, x.stream_id, \
             x.name_id, x.event_id, e.id, e.stack_id, e.correlation_id",
            "ORDER BY x.start, x.id",
            |r| {
                let v: Vec<i64> = (0..12).map(|k| int(r, k)).collect();
                let found = r.get_ref(9)?.data_type() != rusqlite::types::Type::Null;
                let name = strings.get(v[7])?;
                let direction = [
                    CopyDirection::HostToHost,
                    CopyDirection::HostToDevice,
                    CopyDirection::DeviceToHost,
                    CopyDirection::DeviceToDevice,
                ]
                .into_iter()
                .find(|d| d.csv_name() == &*name)
                .map_or(0, |d| d as u8);
                copies.push(MemoryCopyRecord {
                    correlation_id: 0,
                    start: v[0] as u64,
                    end: v[1] as u64,
                    bytes: v[2] as u64,
                    stream_id: v[6] as u64,
                    src_node_id: v[3] as u32,
                    dst_node_id: v[4] as u32,
                    thread_id: v[5] as u32,
                    direction,
                    reserved: [0; 3],
                });
                pending.push(correlation(found, v[8], v[10], v[11]));
                Ok(())
            },
        )
    }

    /// `rocpd_memory_allocate`: level `SCRATCH` rows are scratch events, the others memory
    /// allocations (`VIRTUAL` ones the VMEM operations), each in time order.
    fn allocations(&mut self) -> rusqlite::Result<()> {
        let t = self.t;
        let trace = &mut self.trace;
        let pending = &mut self.pending;
        t.each_with_event(
            "rocpd_memory_allocate",
            "x.tid, x.agent_id, x.type, x.level, x.start, x.\"end\", x.address, x.size, \
             x.queue_id, x.event_id, x.extdata, e.id, e.stack_id, e.correlation_id",
            "ORDER BY x.start, x.id",
            |r| {
                let agent = r.get::<_, Option<i64>>(1).ok().flatten();
                let [tid, start, end, address, size, queue, event] =
                    [0, 4, 5, 6, 7, 8, 9].map(|k| int(r, k));
                let (kind, level) = (text_ref(r, 2), text_ref(r, 3));
                let found = r.get_ref(11)?.data_type() != rusqlite::types::Type::Null;
                let c = correlation(found, event, int(r, 12), int(r, 13));
                if level == "SCRATCH" {
                    let operation = match kind {
                        "FREE" => ScratchOperation::Free,
                        "RECLAIM" => ScratchOperation::AsyncReclaim,
                        _ => ScratchOperation::Alloc,
                    };
                    let flags = serde_json::from_str::<serde_json::Value>(text_ref(r, 10))
                        .ok()
                        .and_then(|v| v.get("flags")?.as_u64())
                        .unwrap_or(0);
                    trace.scratch.push(ScratchMemoryRecord {
                        correlation_id: 0,
                        start: start as u64,
                        end: end as u64,
                        queue_id: queue as u64,
                        size: size as u64,
                        thread_id: tid as u32,
                        agent_node_id: agent.unwrap_or(0) as u32,
                        flags: flags as u32,
                        operation: operation as u8,
                        reserved: [0; 3],
                    });
                    pending.scratch.push(c);
                    return Ok(());
                }
                let operation = match (kind, level) {
                    ("FREE", "VIRTUAL") => AllocationOperation::VmemFree,
                    ("FREE", _) => AllocationOperation::Free,
                    (_, "VIRTUAL") => AllocationOperation::VmemAllocate,
                    _ => AllocationOperation::Allocate,
                };
                trace.allocations.push(MemoryAllocationRecord {
                    correlation_id: 0,
                    start: start as u64,
                    end: end as u64,
                    address: address as u64,
                    size: size as u64,
                    thread_id: tid as u32,
                    agent_node_id: agent.unwrap_or(0) as u32,
                    operation: operation as u8,
                    has_agent: u8::from(agent.is_some()),
                    reserved: [0; 6],
                });
                pending.allocations.push(c);
                Ok(())
            },
        )
    }

    /// Gives the markers, dispatches, copies and allocations their correlation ids: the stack
    /// id of the outermost call each descends from (following `parent_stack_id`), so the
    /// dispatch a call enqueued and the outermost call that issued it share one id, as in this
    /// project's records. The roots are found by scanning the events for just the stacks these
    /// records name, one level of parents per scan ([`roots`]).
    fn correlate(&mut self) -> rusqlite::Result<()> {
        let p = &self.pending;
        let wanted: HashSet<i64> = p
            .markers
            .iter()
            .map(|m| m.1)
            .chain(p.dispatches.iter().copied())
            .chain(p.copies.iter().copied())
            .chain(p.allocations.iter().copied())
            .chain(p.scratch.iter().copied())
            .filter_map(|c| match c {
                Correlation::Root(s) => Some(s),
                Correlation::Is(_) => None,
            })
            .collect();
        let roots = roots(self.t, wanted)?;
        let id = |c: Correlation| match c {
            Correlation::Is(v) => v,
            Correlation::Root(s) => roots.get(&s).copied().unwrap_or(s) as u64,
        };
        let pending = std::mem::take(&mut self.pending);
        for (mut m, c) in pending.markers {
            m.correlation_id = id(c);
            self.trace.markers.push(m);
        }
        let t = &mut self.trace;
        for (d, c) in t.dispatches.iter_mut().zip(pending.dispatches) {
            d.correlation_id = id(c);
        }
        for (r, c) in t.copies.iter_mut().zip(pending.copies) {
            r.correlation_id = id(c);
        }
        for (r, c) in t.allocations.iter_mut().zip(pending.allocations) {
            r.correlation_id = id(c);
        }
        for (r, c) in t.scratch.iter_mut().zip(pending.scratch) {
            r.correlation_id = id(c);
        }
        Ok(())
    }

    fn counters(&mut self, dispatch_of: &HashMap<i64, (i64, u64)>) -> rusqlite::Result<()> {
        let info: HashMap<i64, String> = self
            .t
            .select("rocpd_info_pmc", "id, name", "", |r| {
                Ok((int(r, 0), text(r, 1)))
            })?
            .into_iter()
            .collect();
        let by_event: HashMap<u64, usize> = self
            .trace
            .dispatches
            .iter()
            .enumerate()
            .map(|(k, d)| (d.dispatch_id, k))
            .collect();
        // rocpd_pmc_event has no pid column: its events belong to this process's dispatches.
        // The values are summed as they come (one sum per dispatch and counter).
        let mut sums: HashMap<(u64, i64), f64> = HashMap::new();
        self.t
            .each("rocpd_pmc_event", "event_id, pmc_id, value", "", |r| {
                let value = r.get::<_, Option<f64>>(2)?.unwrap_or(0.0);
                if let Some(&(_, d)) = dispatch_of.get(&int(r, 0)) {
                    *sums.entry((d, int(r, 1))).or_default() += value;
                }
                Ok(())
            })?;
        let mut keys: Vec<(u64, i64)> = sums.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let Some(d) = by_event.get(&key.0).map(|&k| self.trace.dispatches[k]) else {
                continue;
            };
            let name = info.get(&key.1).cloned().unwrap_or_default();
            let name = self.intern(&name);
            self.trace.counters.push(CounterRecord {
                dispatch_id: d.dispatch_id,
                correlation_id: d.correlation_id,
                value: sums[&key],
                name,
                counter_id: key.1 as u32,
                agent_node_id: d.agent_node_id,
                reserved: 0,
            });
        }
        Ok(())
    }
}

/// A region's name (its string id) or a sample's (from its event).
enum Name {
    Id(i64),
    Text(String),
}

impl ApiPass {
    /// One region or sample: a ROCTx record, an API call, or nothing (another category).
    fn span(
        &mut self,
        strings: &mut StringCache<'_>,
        classes: &mut FastMap<i64, Class>,
        c: &Span<'_>,
        name: Name,
    ) -> rusqlite::Result<()> {
        let class = match classes.get(&c.category) {
            Some(&k) => k,
            None => {
                let k = class(&strings.get(c.category)?);
                classes.insert(c.category, k);
                k
            }
        };
        let d = match class {
            Class::Other => return Ok(()),
            Class::Api(d) => d,
            Class::Range | Class::MarkerCore => {
                // Only marker events carry a message: the others' extdata is not read.
                let message = serde_json::from_str::<serde_json::Value>(c.extdata.text())
                    .ok()
                    .and_then(|v| v.get("message")?.as_str().map(str::to_owned));
                if class == Class::Range || message.is_some() {
                    let name: Rc<str> = match &name {
                        Name::Id(id) => strings.get(*id)?,
                        Name::Text(s) => Rc::from(s.as_str()),
                    };
                    let sample = c.key.0 == 1;
                    let kind = marker_kind(&name, sample);
                    let message = message.unwrap_or_else(|| name.to_string());
                    self.used(Rc::from(message.as_str()), c.key);
                    self.markers.push(PendingMarker {
                        key: c.key,
                        record: MarkerRecord {
                            correlation_id: 0,
                            start: c.start as u64,
                            end: c.end as u64,
                            message: 0,
                            thread_id: c.tid as u32,
                            kind: kind as u8,
                            reserved: [0; 7],
                        },
                        message,
                        correlation: correlation(true, c.event, c.stack, c.corr),
                    });
                    return Ok(());
                }
                ApiDomain::MarkerCore
            }
        };
        let domain = d as u8;
        let operation = match name {
            Name::Id(id) => match self.ops.by_id.get_mut(&(domain, id)) {
                // The same name again: only its first use may move earlier (rows out of
                // time order).
                Some(e) if c.key >= e.1 => e.0,
                Some(e) => {
                    e.1 = c.key;
                    let op = e.0;
                    let name = strings.get(id)?;
                    self.ops.get(domain, &name, c.key);
                    self.used(name, c.key);
                    op
                }
                None => {
                    let name = strings.get(id)?;
                    let op = self.ops.get(domain, &name, c.key);
                    self.used(name, c.key);
                    self.ops.by_id.insert((domain, id), (op, c.key));
                    op
                }
            },
            Name::Text(s) => {
                let name: Rc<str> = Rc::from(s.as_str());
                let op = self.ops.get(domain, &name, c.key);
                self.used(name, c.key);
                op
            }
        };
        // An API call keeps its own stack id (unique per call, nested ones included).
        let correlation_id = match (c.stack, c.corr) {
            (s, _) if s > 0 => s as u64,
            (_, k) if k > 0 => k as u64,
            _ => c.event as u64,
        };
        self.api.push(ApiRecord {
            correlation_id,
            start: c.start as u64,
            end: c.end as u64,
            thread_id: c.tid as u32,
            operation,
            domain,
            reserved: 0,
        });
        Ok(())
    }

    /// `s` was interned at `key` (its first use is the earliest).
    fn used(&mut self, s: Rc<str>, key: Key) {
        let k = self.first_use.entry(s).or_insert(key);
        if key < *k {
            *k = key;
        }
    }
}

/// How many events the event reader of [`regions_merged`] hands over at once, and how many
/// such batches may wait.
const EVENT_BATCH: usize = if cfg!(test) { 3 } else { 4096 };
const EVENT_QUEUE: usize = 4;

/// An event as the merge-join reads it; `extdata` only for events of a marker category.
struct EventRow {
    id: i64,
    stack: i64,
    corr: i64,
    category: i64,
    extdata: Option<Box<str>>,
}

impl EventRow {
    /// The columns `id, stack_id, correlation_id, category_id, <extdata>` of a row.
    fn of(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(EventRow {
            id: int(r, 0),
            stack: int(r, 1),
            corr: int(r, 2),
            category: int(r, 3),
            extdata: match r.get_ref(4)? {
                rusqlite::types::ValueRef::Text(t) => {
                    Some(Box::from(std::str::from_utf8(t).unwrap_or("")))
                }
                _ => None,
            },
        })
    }
}

/// Where an event id is, as far as the events in id order tell.
enum Seek {
    /// It is the cursor's current event.
    Found,
    /// The process has no such event.
    Absent,
    /// Look it up by its key: the cursor has passed it already, or it lies far ahead (see
    /// [`FAR`]).
    Lookup,
}

/// How far ahead of the cursor (in ids) an event is looked up by its key rather than reached
/// by moving the cursor there, for up to [`FAR_RUN`] regions in a row: a file whose regions
/// interleave two runs of events (ours with HIP and HSA calls: the HSA calls' events come after
/// every HIP call's) keeps its cursor on the longer run instead of jumping over it and looking
/// up every region of it afterwards.
const FAR: i64 = if cfg!(test) { 4 } else { 65536 };
const FAR_RUN: u32 = if cfg!(test) { 3 } else { 4096 };

/// The events of a process in id order, as the event reader sends them.
struct EventCursor {
    rx: std::sync::mpsc::Receiver<Vec<EventRow>>,
    batch: Vec<EventRow>,
    at: usize,
    /// The highest id passed (every event up to it has been seen).
    passed: Option<i64>,
    /// Regions in a row whose event was far ahead.
    far: u32,
}

impl EventCursor {
    /// Moves to the event `id` if it is ahead (never past it: several rows may name one
    /// event).
    fn seek(&mut self, id: i64) -> Seek {
        loop {
            if self.at == self.batch.len() {
                match self.rx.recv() {
                    Ok(batch) => {
                        self.batch = batch;
                        self.at = 0;
                        continue;
                    }
                    Err(_) => break,
                }
            }
            let e = &self.batch[self.at];
            if e.id == id {
                self.far = 0;
                return Seek::Found;
            }
            if e.id > id {
                break;
            }
            if id.saturating_sub(e.id) > FAR && self.far < FAR_RUN {
                self.far += 1;
                return Seek::Lookup;
            }
            self.passed = Some(e.id);
            self.at += 1;
        }
        self.far = 0;
        match self.passed {
            Some(p) if id <= p => Seek::Lookup,
            _ => Seek::Absent,
        }
    }

    fn current(&self) -> &EventRow {
        &self.batch[self.at]
    }
}

/// The event category ids whose events are markers (their `extdata` holds the message):
/// those the string table names `MARKER_CORE_RANGE_API` or `MARKER_CORE_API`, as the string
/// cache resolves them.
fn marker_categories(t: &Tables<'_>, strings: &mut StringCache<'_>) -> rusqlite::Result<Vec<i64>> {
    let Some(table) = t.of("rocpd_string") else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    let sql = format!(
        "SELECT id FROM {table} WHERE string IN ('MARKER_CORE_RANGE_API', 'MARKER_CORE_API')"
    );
    t.query(&sql, &mut |r| {
        ids.push(int(r, 0));
        Ok(())
    })?;
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    for id in ids {
        if matches!(class(&strings.get(id)?), Class::Range | Class::MarkerCore) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Reads `sql` (`?1` the guid) on its own connection to `path`, the events in batches to
/// `tx` until they end or the receiver is gone.
fn event_rows(
    path: &Path,
    sql: &str,
    guid: &str,
    tx: std::sync::mpsc::SyncSender<Vec<EventRow>>,
) -> rusqlite::Result<()> {
    let db = open_read(path)?;
    let mut stmt = db.prepare(sql)?;
    let mut rows = stmt.query([guid])?;
    let mut batch = Batch::new(tx);
    while let Some(r) = rows.next()? {
        if batch.push(EventRow::of(r)?).is_err() {
            return Ok(());
        }
    }
    batch.finish();
    Ok(())
}

/// Events gathered into batches for the region reader.
struct Batch {
    tx: std::sync::mpsc::SyncSender<Vec<EventRow>>,
    rows: Vec<EventRow>,
}

impl Batch {
    fn new(tx: std::sync::mpsc::SyncSender<Vec<EventRow>>) -> Self {
        Batch {
            tx,
            rows: Vec::with_capacity(EVENT_BATCH),
        }
    }

    /// Adds `e`; `Err` once the receiver is gone.
    fn push(&mut self, e: EventRow) -> Result<(), Gone> {
        self.rows.push(e);
        if self.rows.len() == EVENT_BATCH {
            let full = std::mem::replace(&mut self.rows, Vec::with_capacity(EVENT_BATCH));
            self.tx.send(full).map_err(|_| Gone)?;
        }
        Ok(())
    }

    fn finish(self) {
        if !self.rows.is_empty() {
            let _ = self.tx.send(self.rows);
        }
    }
}

/// The region reader stopped reading: the event reader may stop too.
struct Gone;

/// Why a page walk of the read-back stopped early.
enum Stopped {
    Pages(sqlite_pages::Error),
    Sql(rusqlite::Error),
    Gone,
}

impl From<sqlite_pages::Error> for Stopped {
    fn from(e: sqlite_pages::Error) -> Self {
        Stopped::Pages(e)
    }
}

impl From<rusqlite::Error> for Stopped {
    fn from(e: rusqlite::Error) -> Self {
        Stopped::Sql(e)
    }
}

impl From<Gone> for Stopped {
    fn from(_: Gone) -> Self {
        Stopped::Gone
    }
}

impl Stopped {
    fn into_sql(self) -> rusqlite::Result<()> {
        match self {
            Stopped::Pages(e) => Err(rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
            Stopped::Sql(e) => Err(e),
            Stopped::Gone => Ok(()),
        }
    }
}

/// The region and event tables of a process as the page walk reads them (`rocpd_pages`).
struct PagePlan {
    db: sqlite_pages::Database,
    /// `start, end, tid, name_id, id, event_id, guid, pid`.
    regions: rocpd_pages::Shape,
    /// `id, stack_id, correlation_id, category_id, extdata, guid`.
    events: rocpd_pages::Shape,
}

/// The page walk's plan for the tables `regions` and `events` (unquoted names), or `None`
/// when either must be read through SQLite (its shape, or a file the walk refuses: UTF-16,
/// WAL frames not yet checkpointed). Called with the connection's read transaction open, so
/// the file is read as SQLite sees it.
fn page_plan(t: &Tables<'_>, regions: &str, events: &str) -> rusqlite::Result<Option<PagePlan>> {
    let region_columns = [
        "start", "end", "tid", "name_id", "id", "event_id", "guid", "pid",
    ];
    let event_columns = [
        "id",
        "stack_id",
        "correlation_id",
        "category_id",
        "extdata",
        "guid",
    ];
    let (Some(regions), Some(events)) = (
        rocpd_pages::shape(t.db, regions, &region_columns)?,
        rocpd_pages::shape(t.db, events, &event_columns)?,
    ) else {
        return Ok(None);
    };
    Ok(sqlite_pages::Database::open(t.path)
        .ok()
        .map(|db| PagePlan {
            db,
            regions,
            events,
        }))
}

/// The events of `plan` for process `guid`, in id order, to `batch`: as the event query of
/// [`regions_merged`] reads them (`extdata` only for a category in `markers`).
fn event_pages(
    plan: &PagePlan,
    guid: &str,
    markers: &[i64],
    mut batch: Batch,
) -> rusqlite::Result<()> {
    let c = &plan.events.columns;
    // A category that is no integer counts as 0 (the query's `CASE`) when 0 is a marker
    // category; else it matches only as the number it is.
    let zero = markers.contains(&0);
    let scanned = plan.db.scan::<Stopped>(plan.events.root, |r| {
        if !rocpd_pages::is_text(c[5].get(r), guid) {
            return Ok(());
        }
        let category = c[3].get(r);
        let marker = match category {
            sqlite_pages::Value::Integer(i) => markers.contains(&i),
            sqlite_pages::Value::Real(_) if !zero => markers
                .iter()
                .any(|&m| rocpd_pages::is_integer(category, m)),
            _ => zero,
        };
        let extdata = match (marker, c[4].get(r)) {
            (true, sqlite_pages::Value::Text(t)) => {
                Some(Box::from(std::str::from_utf8(t).unwrap_or("")))
            }
            _ => None,
        };
        batch.push(EventRow {
            id: c[0].int(r),
            stack: c[1].int(r),
            corr: c[2].int(r),
            category: c[3].int(r),
            extdata,
        })?;
        Ok(())
    });
    match scanned {
        Ok(()) => {
            batch.finish();
            Ok(())
        }
        Err(stop) => stop.into_sql(),
    }
}

/// The regions of a process with their events, as [`Tables::each_with_event`] gives them but
/// without a lookup per region: the regions (this thread) and the events (a second thread,
/// handed over in batches) are both scanned in id order and zipped by event id. Writers store
/// a region after its event, so event ids rise with the region ids; a region naming an event
/// already passed (a file written in another order) has it looked up by its key instead, so
/// every file reads as the join reads it. Both tables are walked page by page (`sqlite_pages`)
/// when their shape allows, else read through SQLite (a second connection for the events).
#[allow(clippy::too_many_arguments)]
fn regions_merged(
    t: &Tables<'_>,
    strings: &mut StringCache<'_>,
    pass: &mut ApiPass,
    classes: &mut FastMap<i64, Class>,
    regions: &str,
    events: &str,
    pages: bool,
) -> rusqlite::Result<()> {
    let markers = marker_categories(t, strings)?;
    let extdata = match markers.is_empty() {
        true => "NULL".to_owned(),
        false => {
            // A category that is no integer reads as 0 (`int`).
            let category = match markers.contains(&0) {
                true => {
                    "(CASE WHEN typeof(e.category_id) = 'integer' THEN e.category_id ELSE 0 END)"
                }
                false => "e.category_id",
            };
            let list: Vec<String> = markers.iter().map(i64::to_string).collect();
            format!(
                "CASE WHEN {category} IN ({}) THEN e.extdata END",
                list.join(", ")
            )
        }
    };
    let (regions_q, events_q) = (quoted(regions), quoted(events));
    let event_filter = Tables::filter("rocpd_event", "e");
    let event_sql = format!(
        "SELECT e.id, e.stack_id, e.correlation_id, e.category_id, {extdata} FROM {events_q} AS e \
         WHERE {event_filter} ORDER BY e.id"
    );
    let region_sql = format!(
        "SELECT x.start, x.\"end\", x.tid, x.name_id, x.id, x.event_id FROM {regions_q} AS x \
         WHERE {} ORDER BY x.id",
        Tables::filter("rocpd_region", "x")
    );
    let mut lookup = t.db.prepare(&format!(
        "SELECT e.id, e.stack_id, e.correlation_id, e.category_id, {extdata} FROM {events_q} AS e \
         WHERE e.id = ?2 AND {event_filter}"
    ))?;
    // The guid once; the id per lookup.
    lookup.raw_bind_parameter(1, &t.guid)?;
    // Held while the pages are read: no writer commits underneath (a shared lock).
    let held = t.db.unchecked_transaction()?;
    held.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
    let plan = match pages {
        true => page_plan(t, regions, events)?,
        false => None,
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(EVENT_QUEUE);
        let (path, guid, sql) = (t.path, t.guid.as_str(), event_sql.as_str());
        let (plan, markers) = (plan.as_ref(), markers.as_slice());
        let reader = scope.spawn(move || match plan {
            Some(plan) => event_pages(plan, guid, markers, Batch::new(tx)),
            None => event_rows(path, sql, guid, tx),
        });
        let mut cursor = EventCursor {
            rx,
            batch: Vec::new(),
            at: 0,
            passed: None,
            far: 0,
        };
        // Each region as (start, end, tid, name_id, id, event_id).
        let mut region = |start: i64,
                          end: i64,
                          tid: i64,
                          name: i64,
                          id: i64,
                          event: i64|
         -> rusqlite::Result<()> {
            let looked_up;
            let e = match cursor.seek(event) {
                Seek::Found => cursor.current(),
                Seek::Absent => return Ok(()),
                Seek::Lookup => {
                    lookup.raw_bind_parameter(2, event)?;
                    let mut rows = lookup.raw_query();
                    looked_up = match rows.next()? {
                        Some(r) => EventRow::of(r)?,
                        None => return Ok(()),
                    };
                    &looked_up
                }
            };
            let span = Span {
                key: (0, start, id),
                start,
                end,
                tid,
                event: e.id,
                stack: e.stack,
                corr: e.corr,
                category: e.category,
                extdata: Extdata::Text(e.extdata.as_deref().unwrap_or("")),
            };
            pass.span(strings, classes, &span, Name::Id(name))
        };
        let scanned = match plan {
            Some(plan) => {
                #[cfg(test)]
                tests::WALKS.set(tests::WALKS.get() + 1);
                let c = &plan.regions.columns;
                let (guid, pid) = (t.guid.as_str(), t.pid);
                plan.db
                    .scan::<Stopped>(plan.regions.root, |r| {
                        if !rocpd_pages::is_text(c[6].get(r), guid)
                            || !rocpd_pages::is_integer(c[7].get(r), pid)
                        {
                            return Ok(());
                        }
                        let sqlite_pages::Value::Integer(event) = c[5].get(r) else {
                            return Ok(()); // no event: not read back
                        };
                        let at = |k: usize| c[k].int(r);
                        Ok(region(at(0), at(1), at(2), at(3), at(4), event)?)
                    })
                    .or_else(Stopped::into_sql)
            }
            None => t.query(&region_sql, &mut |r| {
                let rusqlite::types::ValueRef::Integer(event) = r.get_ref(5)? else {
                    return Ok(()); // no event: not read back
                };
                region(int(r, 0), int(r, 1), int(r, 2), int(r, 3), int(r, 4), event)
            }),
        };
        // The receiver gone, the reader stops at its next batch.
        drop(cursor);
        let read = reader.join().unwrap_or_else(|_| {
            Err(rusqlite::Error::ToSqlConversionFailure(Box::new(
                std::io::Error::other("the event reader panicked"),
            )))
        });
        read.and(scanned)
    })?;
    drop(held);
    Ok(())
}

/// How many scans of the events [`roots`] makes, one level of parents each, before it reads
/// every stack's parent at once (a chain deeper than this is no file's we know).
const ROOT_SCANS: usize = 16;

/// The root of each stack id in `wanted`: following each stack's parent (the
/// `parent_stack_id` of the last event with that stack id) while the parent is itself an
/// event's stack id. The events are scanned for just the stacks asked for and then their
/// parents, level by level, so what is held is the records' stacks, not a map of every event.
fn roots(t: &Tables<'_>, wanted: HashSet<i64>) -> rusqlite::Result<HashMap<i64, i64>> {
    // Stack id → (event id, parent) of the last event with it.
    let mut parent: HashMap<i64, (i64, i64)> = HashMap::new();
    let mut scanned: HashSet<i64> = HashSet::new();
    let mut frontier = wanted.clone();
    let mut scans = 0;
    while !frontier.is_empty() {
        scans += 1;
        let whole = scans > ROOT_SCANS;
        t.each(
            "rocpd_event",
            "id, stack_id, parent_stack_id",
            "AND x.stack_id > 0",
            |r| {
                let (id, stack, p) = (int(r, 0), int(r, 1), int(r, 2));
                if stack > 0 && (whole || frontier.contains(&stack)) {
                    let e = parent.entry(stack).or_insert((id, p));
                    if id >= e.0 {
                        *e = (id, p);
                    }
                }
                Ok(())
            },
        )?;
        if whole {
            break;
        }
        scanned.extend(frontier.iter().copied());
        frontier = frontier
            .iter()
            .filter_map(|s| parent.get(s))
            .map(|&(_, p)| p)
            .filter(|p| *p > 0 && !scanned.contains(p))
            .collect();
    }
    let root = |mut stack: i64| {
        // Bounded: a malformed file may hold a cycle.
        for _ in 0..4096 {
            match parent.get(&stack) {
                Some(&(_, p)) if p > 0 && p != stack && parent.contains_key(&p) => stack = p,
                _ => break,
            }
        }
        stack
    };
    Ok(wanted.into_iter().map(|s| (s, root(s))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ProcessView, RunInfo};
    use trace_records::agents::{AgentIndex, AgentLabels};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rocpd-read-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// (kind, message, start, end) of every marker read back, in time order.
    fn markers(t: &ProcessTrace) -> Vec<(Option<MarkerKind>, &str, u64, u64)> {
        let mut m: Vec<_> = t
            .markers
            .iter()
            .map(|m| {
                (
                    MarkerKind::from_u8(m.kind),
                    t.string(m.message),
                    m.start,
                    m.end,
                )
            })
            .collect();
        m.sort_by_key(|r| r.2);
        m
    }

    #[test]
    fn marks_come_back_as_marks_and_ranges_as_their_kind() {
        let mut t = ProcessTrace {
            pid: 42,
            ppid: 1,
            created_ns: 1_000,
            ..ProcessTrace::default()
        };
        let kinds = [
            (MarkerKind::ThreadRange, "iteration", 1_100, 1_900),
            (MarkerKind::Mark, "checkpoint", 1_200, 1_200),
            (MarkerKind::ProcessRange, "phase", 1_300, 2_500),
            (MarkerKind::Mark, "done", 2_600, 2_600),
        ];
        for (k, (kind, message, start, end)) in kinds.iter().enumerate() {
            let id = k as StringId + 1;
            t.strings.insert(id, (*message).to_owned());
            t.markers.push(MarkerRecord {
                correlation_id: 10 + k as u64,
                start: *start,
                end: *end,
                message: id,
                thread_id: 42,
                kind: *kind as u8,
                reserved: [0; 7],
            });
        }
        let dir = scratch("kinds");
        let path = dir.join("results.db");
        let labels = AgentLabels::new(Vec::new(), AgentIndex::default());
        let run = RunInfo {
            hostname: "h".into(),
            command: vec!["app".into()],
        };
        crate::rocpd::write_rocpd(&path, &run, &[ProcessView::new(&t, &labels)]).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.len(), 1);
        let expected: Vec<_> = kinds
            .iter()
            .map(|&(kind, message, start, end)| (Some(kind), message, start, end))
            .collect();
        assert_eq!(markers(&back[0]), expected);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn upstream_marker_events_are_markers_and_a_sample_is_a_mark() {
        let dir = scratch("upstream");
        let path = dir.join("upstream.db");
        let db = Connection::open(&path).unwrap();
        let g = "0000ddb5-8903-7903-b269-cd8d3745bb8a";
        db.execute_batch(&format!(
            "CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
             CREATE TABLE rocpd_info_process (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
                 ppid INTEGER, init INTEGER);
             CREATE TABLE rocpd_event (id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER,
                 stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, extdata TEXT);
             CREATE TABLE rocpd_region (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
                 start INTEGER, end INTEGER, tid INTEGER, name_id INTEGER, event_id INTEGER);
             CREATE TABLE rocpd_track (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
                 tid INTEGER, name_id INTEGER);
             CREATE TABLE rocpd_sample (id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER,
                 timestamp INTEGER, event_id INTEGER);
             INSERT INTO rocpd_info_process VALUES (1, '{g}', 7, 1, 100);
             INSERT INTO rocpd_string VALUES (1, '{g}', 'MARKER_CORE_API'),
                 (2, '{g}', 'roctxRangePushA'), (3, '{g}', 'roctxMarkA'),
                 (4, '{g}', 'roctxGetThreadId');
             INSERT INTO rocpd_event VALUES
                 (1, '{g}', 1, 1, 0, 0, '{{\"message\": \"outer\"}}'),
                 (2, '{g}', 1, 2, 0, 0, '{{\"message\": \"tick\"}}'),
                 (3, '{g}', 1, 3, 0, 0, '{{\"message\": \"tock\"}}'),
                 (4, '{g}', 1, 4, 0, 0, '{{}}');
             INSERT INTO rocpd_region VALUES (1, '{g}', 7, 1000, 2000, 7, 2, 1),
                 (2, '{g}', 7, 1500, 1500, 7, 3, 2), (3, '{g}', 7, 1600, 1700, 7, 4, 4);
             INSERT INTO rocpd_track VALUES (1, '{g}', 7, 7, 1);
             INSERT INTO rocpd_sample VALUES (1, '{g}', 1, 1800, 3);"
        ))
        .unwrap();
        drop(db);
        let back = read(&path).unwrap();
        let t = &back[0];
        assert_eq!(
            markers(t),
            [
                (Some(MarkerKind::ThreadRange), "outer", 1000, 2000),
                (Some(MarkerKind::Mark), "tick", 1500, 1500),
                (Some(MarkerKind::Mark), "tock", 1800, 1800),
            ]
        );
        // A marker-domain call without a message stays a call.
        assert_eq!(t.api.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A process of `calls` (domain, name, start): each call its own correlation id.
    fn calls(pid: u32, calls: &[(ApiDomain, &str, u64)]) -> ProcessTrace {
        let mut t = ProcessTrace {
            pid,
            ppid: 1,
            created_ns: 100,
            ..ProcessTrace::default()
        };
        let mut api = Vec::new();
        for (k, &(domain, name, start)) in calls.iter().enumerate() {
            let id = k as StringId + 1;
            t.strings.insert(id, name.to_owned());
            t.operations.insert((domain as u8, k as u16), id);
            api.push(ApiRecord {
                correlation_id: 1 + k as u64,
                start,
                end: start + 10,
                thread_id: pid,
                operation: k as u16,
                domain: domain as u8,
                reserved: 0,
            });
        }
        t.api = api.into_iter().collect();
        t
    }

    /// (domain, name) of every call read back, in order.
    fn names(t: &ProcessTrace) -> Vec<(u8, String)> {
        t.api
            .iter()
            .map(|a| {
                (
                    a.domain,
                    t.operation_name(a.domain, a.operation).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn each_process_of_a_file_reads_its_own_strings() {
        // String ids are per process: the same ids name other strings in the second one.
        let one = calls(
            7,
            &[
                (ApiDomain::HsaCore, "hsa_init", 1_000),
                (ApiDomain::HsaCore, "hsa_shut_down", 2_000),
            ],
        );
        let two = calls(
            8,
            &[
                (ApiDomain::HipRuntime, "hipMalloc", 1_500),
                (ApiDomain::HipRuntime, "hipFree", 2_500),
            ],
        );
        let dir = scratch("strings");
        let path = dir.join("two.db");
        let labels = AgentLabels::new(Vec::new(), AgentIndex::default());
        let run = RunInfo {
            hostname: "h".into(),
            command: vec!["app".into()],
        };
        let views = [
            ProcessView::new(&one, &labels),
            ProcessView::new(&two, &labels),
        ];
        crate::rocpd::write_rocpd(&path, &run, &views).unwrap();
        let back = read(&path).unwrap();
        let by_pid = |pid: u32| back.iter().find(|t| t.pid == pid).unwrap();
        let hsa = ApiDomain::HsaCore as u8;
        let hip = ApiDomain::HipRuntime as u8;
        assert_eq!(
            names(by_pid(7)),
            [
                (hsa, "hsa_init".to_owned()),
                (hsa, "hsa_shut_down".to_owned())
            ]
        );
        assert_eq!(
            names(by_pid(8)),
            [(hip, "hipMalloc".to_owned()), (hip, "hipFree".to_owned())]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A schema-3 file as upstream's tables have it (no suffix), with the given rows.
    fn upstream(name: &str, rows: &str) -> std::path::PathBuf {
        let dir = scratch(name);
        let path = dir.join("upstream.db");
        let db = Connection::open(&path).unwrap();
        db.execute_batch(&format!(
            "CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
             CREATE TABLE rocpd_info_process (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
                 ppid INTEGER, init INTEGER);
             CREATE TABLE rocpd_event (id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER,
                 stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, extdata TEXT);
             CREATE TABLE rocpd_region (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
                 start INTEGER, end INTEGER, tid INTEGER, name_id INTEGER, event_id INTEGER);
             CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, guid TEXT,
                 pid INTEGER, tid INTEGER, agent_id INTEGER, kernel_id INTEGER,
                 dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start INTEGER,
                 end INTEGER, private_segment_size INTEGER, group_segment_size INTEGER,
                 workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER,
                 grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER,
                 event_id INTEGER);
             INSERT INTO rocpd_info_process VALUES (1, 'g', 7, 1, 100);
             {rows}"
        ))
        .unwrap();
        path
    }

    #[test]
    fn operations_are_numbered_by_first_use_in_time_whatever_the_row_order() {
        // The later call is stored first.
        let path = upstream(
            "order",
            "INSERT INTO rocpd_string VALUES (1, 'g', 'HSA_CORE_API'), (2, 'g', 'late'),
                 (3, 'g', 'early');
             INSERT INTO rocpd_event VALUES (1, 'g', 1, 1, 0, 0, '{}'), (2, 'g', 1, 2, 0, 0, '{}'),
                 (3, 'g', 1, 3, 0, 0, '{}');
             INSERT INTO rocpd_region VALUES (1, 'g', 7, 3000, 3100, 7, 2, 1),
                 (2, 'g', 7, 1000, 1100, 7, 3, 2), (3, 'g', 7, 2000, 2100, 7, 2, 3);",
        );
        let back = read(&path).unwrap();
        let t = &back[0];
        let d = ApiDomain::HsaCore as u8;
        assert_eq!(t.operation_name(d, 0), "early");
        assert_eq!(t.operation_name(d, 1), "late");
        let ops: Vec<(u64, u16)> = t.api.iter().map(|a| (a.start, a.operation)).collect();
        assert_eq!(ops, [(1000, 0), (2000, 1), (3000, 1)]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_dispatch_takes_the_stack_id_of_the_outermost_call_it_descends_from() {
        // hipLaunchKernel (stack 10) calls an HSA function (stack 11, parent 10), whose
        // dispatch carries stack 11: it belongs to the outermost call, 10. A dispatch without
        // a stack keeps its external correlation id.
        let path = upstream(
            "roots",
            "INSERT INTO rocpd_string VALUES (1, 'g', 'HIP_RUNTIME_API'), (2, 'g', 'HSA_CORE_API'),
                 (3, 'g', 'KERNEL_DISPATCH'), (4, 'g', 'hipLaunchKernel'),
                 (5, 'g', 'hsa_signal_store');
             INSERT INTO rocpd_event VALUES (1, 'g', 1, 10, 0, 0, '{}'),
                 (2, 'g', 2, 11, 10, 0, '{}'), (3, 'g', 3, 11, 10, 0, '{}'),
                 (4, 'g', 3, 0, 0, 42, '{}');
             INSERT INTO rocpd_region VALUES (1, 'g', 7, 1000, 2000, 7, 4, 1),
                 (2, 'g', 7, 1100, 1200, 7, 5, 2);
             INSERT INTO rocpd_kernel_dispatch VALUES
                 (1, 'g', 7, 7, 1, 1, 1, 1, 0, 3000, 4000, 0, 0, 64, 1, 1, 64, 1, 1, 3),
                 (2, 'g', 7, 7, 1, 1, 2, 1, 0, 5000, 6000, 0, 0, 64, 1, 1, 64, 1, 1, 4);",
        );
        let back = read(&path).unwrap();
        let t = &back[0];
        let calls: Vec<u64> = t.api.iter().map(|a| a.correlation_id).collect();
        assert_eq!(calls, [10, 11], "a call keeps its own stack id");
        let dispatches: Vec<(u64, u64)> = t
            .dispatches
            .iter()
            .map(|d| (d.dispatch_id, d.correlation_id))
            .collect();
        assert_eq!(dispatches, [(1, 10), (2, 42)]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// What a process read back holds of its calls and markers, comparable across readers.
    type Summary = (
        Vec<(u64, u64, u64, u32, u8, String)>,
        Vec<(u64, u64, u64, u32, u8, String)>,
    );

    fn summary(t: &ProcessTrace) -> Summary {
        let api = t
            .api
            .iter()
            .map(|a| {
                let name = t.operation_name(a.domain, a.operation).into_owned();
                (
                    a.correlation_id,
                    a.start,
                    a.end,
                    a.thread_id,
                    a.domain,
                    name,
                )
            })
            .collect();
        let markers = t
            .markers
            .iter()
            .map(|m| {
                let message = t.string(m.message).to_owned();
                (
                    m.correlation_id,
                    m.start,
                    m.end,
                    m.thread_id,
                    m.kind,
                    message,
                )
            })
            .collect();
        (api, markers)
    }

    thread_local! {
        /// How many region tables this thread has walked page by page.
        pub(super) static WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Both joins' reading of `path`, process by process (the merge-join's page walk and its
    /// reading through SQLite checked alike first).
    fn both_joins(path: &Path) -> (Vec<Summary>, Vec<Summary>) {
        let read = |join| {
            let mut out = Vec::new();
            read_each_with(path, join, &mut |t| out.push(summary(&t))).unwrap();
            out
        };
        let walks = WALKS.get();
        let merged = read(Join::Merge);
        assert!(WALKS.get() > walks, "the file was not walked page by page");
        assert_eq!(merged, read(Join::MergeSql), "the page walk against SQLite");
        (merged, read(Join::Sql))
    }

    /// An upstream-style file (no suffix) whose regions name `events[k]` in the given order:
    /// event `k + 1` of category `categories[k]` (1 HSA, 2 `MARKER_CORE_API`, 3
    /// `MARKER_CORE_RANGE_API`, others unnamed), with a message when `k` is even; events
    /// `>= 1000` are of another process.
    fn shuffled(name: &str, categories: &[i64], regions: &[Option<i64>]) -> std::path::PathBuf {
        let mut rows = String::from(
            "INSERT INTO rocpd_string VALUES (1, 'g', 'HSA_CORE_API'), (2, 'g', 'MARKER_CORE_API'),
                 (3, 'g', 'MARKER_CORE_RANGE_API'), (4, 'g', 'hsa_init'), (5, 'g', 'roctxMarkA');",
        );
        for (k, c) in categories.iter().enumerate() {
            let id = k + 1;
            let extdata = match k % 2 {
                0 => format!("{{\"message\": \"m{id}\"}}"),
                _ => "{}".to_owned(),
            };
            rows.push_str(&format!(
                "INSERT INTO rocpd_event VALUES ({id}, 'g', {c}, {}, 0, {}, '{extdata}');",
                id * 10 * (k % 3),
                id * 7 * (k % 2),
            ));
        }
        // Events of another process, with ids a region of this one may name.
        rows.push_str("INSERT INTO rocpd_event VALUES (1000, 'other', 1, 5, 0, 0, '{}');");
        for (k, event) in regions.iter().enumerate() {
            let event = event.map_or("NULL".to_owned(), |e| e.to_string());
            let name = 4 + (k % 2);
            rows.push_str(&format!(
                "INSERT INTO rocpd_region VALUES ({}, 'g', 7, {}, {}, 7, {name}, {event});",
                k + 1,
                5000 - 10 * k as i64,
                5005 - 10 * k as i64 + (k % 4) as i64,
            ));
        }
        upstream(name, &rows)
    }

    #[test]
    fn the_merge_join_reads_what_the_join_reads_whatever_the_order_of_the_events() {
        // Rising, then falling back (behind the cursor), repeated, absent, of another
        // process, NULL, and past the last event.
        let categories = [1, 2, 3, 1, 1, 9, 2, 3, 1, 1];
        let regions = [
            Some(1),
            Some(2),
            Some(4),
            Some(3),
            Some(3),
            Some(10),
            Some(5),
            Some(1000),
            None,
            Some(42),
            Some(7),
            Some(8),
            Some(6),
            Some(9),
            Some(2),
        ];
        let path = shuffled("shuffled", &categories, &regions);
        let (merged, joined) = both_joins(&path);
        assert_eq!(merged, joined);
        let (api, markers) = &merged[0];
        assert!(!api.is_empty() && !markers.is_empty(), "{merged:?}");
        // Region 4 names event 3 after event 4 was passed: it is still read (the lookup).
        assert!(markers.iter().any(|m| m.5 == "m3"), "{markers:?}");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn merge_join_and_join_agree(
            categories in proptest::collection::vec(0i64..5, 1..24),
            regions in proptest::collection::vec(proptest::option::weighted(0.9, 0i64..30), 0..40),
        ) {
            let path = shuffled("prop", &categories, &regions);
            let (merged, joined) = both_joins(&path);
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
            proptest::prop_assert_eq!(merged, joined);
        }
    }

    #[test]
    fn a_database_of_ours_reads_alike_through_both_joins() {
        let one = calls(
            7,
            &[
                (ApiDomain::HsaCore, "hsa_init", 1_000),
                (ApiDomain::HsaCore, "hsa_shut_down", 2_000),
                (ApiDomain::HipRuntime, "hipMalloc", 1_500),
                (ApiDomain::HsaCore, "hsa_init", 2_500),
            ],
        );
        let dir = scratch("ours-both");
        let path = dir.join("one.db");
        let labels = AgentLabels::new(Vec::new(), AgentIndex::default());
        let run = RunInfo {
            hostname: "h".into(),
            command: vec!["app".into()],
        };
        crate::rocpd::write_rocpd(&path, &run, &[ProcessView::new(&one, &labels)]).unwrap();
        let (merged, joined) = both_joins(&path);
        assert_eq!(merged, joined);
        assert_eq!(merged[0].0.len(), 4);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
