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

use crate::Error;
use rusqlite::{Connection, OpenFlags, Row};
use std::collections::HashMap;
use std::path::Path;
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
    let fail = |message: String| Error::Format {
        path: path.to_owned(),
        message,
    };
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| fail(format!("cannot open it as SQLite: {e}")))?;
    let sql = |e: rusqlite::Error| fail(e.to_string());
    if !has(&db, "rocpd_info_process") {
        return Err(fail(
            "no rocpd_info_process view: not a rocpd database (schema 3)".into(),
        ));
    }
    let strings: HashMap<i64, String> = rows(&db, "SELECT id, string FROM rocpd_string", |r| {
        Ok((r.get::<_, i64>(0)?, text(r, 1)))
    })
    .map_err(sql)?
    .into_iter()
    .collect();
    let processes = rows(
        &db,
        "SELECT guid, pid, ppid, init FROM rocpd_info_process ORDER BY id",
        |r| Ok((text(r, 0), int(r, 1), int(r, 2), int(r, 3))),
    )
    .map_err(sql)?;
    let mut out = Vec::with_capacity(processes.len());
    for (guid, pid, ppid, init) in processes {
        let mut p = Reader {
            db: &db,
            strings: &strings,
            guid,
            pid,
            trace: ProcessTrace {
                pid: pid as u32,
                ppid: ppid as u32,
                created_ns: init as u64,
                ..ProcessTrace::default()
            },
            interned: HashMap::new(),
            operations: HashMap::new(),
            correlations: HashMap::new(),
            own_ids: HashMap::new(),
        };
        (p.correlations, p.own_ids) = p.stacks().map_err(sql)?;
        p.agents().map_err(sql)?;
        p.api().map_err(sql)?;
        p.symbols().map_err(sql)?;
        p.code_objects().map_err(sql)?;
        p.dispatches().map_err(sql)?;
        p.copies().map_err(sql)?;
        p.allocations().map_err(sql)?;
        p.counters().map_err(sql)?;
        out.push(p.trace);
    }
    Ok(out)
}

/// The (pid, ppid) of a database's earliest started process, if it is a rocpd database with
/// one (a merge names its one database after it).
pub fn first_process(path: &Path) -> Option<(u32, u32)> {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    if !has(&db, "rocpd_info_process") {
        return None;
    }
    db.query_row(
        "SELECT pid, ppid FROM rocpd_info_process ORDER BY init, id LIMIT 1",
        [],
        |r| Ok((int(r, 0) as u32, int(r, 1) as u32)),
    )
    .ok()
}

fn has(db: &Connection, name: &str) -> bool {
    db.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .is_ok_and(|n| n > 0)
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

/// `column` when `table` (a table or view) has it, else `NULL` (databases of older writers
/// lack the newer columns).
fn column_or_null(db: &Connection, table: &str, column: &str) -> String {
    let found = db
        .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
        .is_ok_and(|stmt| stmt.column_names().contains(&column));
    match found {
        true => column.to_owned(),
        false => "NULL".to_owned(),
    }
}

/// A column as an integer (NULL, text or a missing value: 0).
fn int(r: &Row<'_>, k: usize) -> i64 {
    r.get::<_, Option<i64>>(k).ok().flatten().unwrap_or(0)
}

/// A column as text (NULL or another type: empty).
fn text(r: &Row<'_>, k: usize) -> String {
    r.get::<_, Option<String>>(k)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The API domain of an event category (rocprofiler's buffer-tracing kind names), and whether
/// it is the ROCTx range category.
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

/// Per event id: its category and, for marker events, its `extdata`.
type Events<'a> = HashMap<i64, (&'a str, Option<String>)>;

/// A region or sample read back.
struct Call {
    start: i64,
    end: i64,
    tid: i64,
    event: i64,
    sample: bool,
}

/// `SELECT <columns> FROM <view>` for one process (its guid, and its pid where the view has
/// one), each row to `f` as it comes; nothing when the file has no such view.
fn each_row(
    db: &Connection,
    guid: &str,
    pid: i64,
    view: &str,
    columns: &str,
    tail: &str,
    mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    if !has(db, view) {
        return Ok(());
    }
    // Events, samples and counter values have no pid: their guid is the process's.
    let by_pid = !matches!(view, "rocpd_event" | "rocpd_sample" | "rocpd_pmc_event");
    let filter = if by_pid {
        "guid = ?1 AND pid = ?2"
    } else {
        "guid = ?1 AND ?2 = ?2"
    };
    let sql = format!("SELECT {columns} FROM {view} WHERE {filter} {tail}");
    let mut stmt = db.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params![guid, pid])?;
    while let Some(r) = rows.next()? {
        f(r)?;
    }
    Ok(())
}

struct Reader<'a> {
    db: &'a Connection,
    strings: &'a HashMap<i64, String>,
    guid: String,
    pid: i64,
    trace: ProcessTrace,
    interned: HashMap<String, StringId>,
    /// Per domain, the operation id of each name.
    operations: HashMap<u8, HashMap<String, u16>>,
    /// The correlation id of each event ([`Reader::stacks`]), read once per process.
    correlations: HashMap<i64, u64>,
    /// The stack id of each event that has one: an API call's own id (every call has its own,
    /// nested ones included).
    own_ids: HashMap<i64, u64>,
}

impl<'a> Reader<'a> {
    fn string(&self, id: i64) -> &'a str {
        self.strings.get(&id).map_or("", String::as_str)
    }

    fn intern(&mut self, s: &str) -> StringId {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.interned.len() as StringId + 1;
        self.interned.insert(s.to_owned(), id);
        self.trace.strings.insert(id, s.to_owned());
        id
    }

    fn operation(&mut self, domain: ApiDomain, name: &str) -> u16 {
        let names = self.operations.entry(domain as u8).or_default();
        if let Some(&op) = names.get(name) {
            return op;
        }
        let op = names.len() as u16;
        names.insert(name.to_owned(), op);
        let id = self.intern(name);
        self.trace.operations.insert((domain as u8, op), id);
        op
    }

    /// `SELECT <columns> FROM <view>` for this process (its guid, and its pid where the view has
    /// one), or nothing when the file has no such view.
    fn select<T>(
        &self,
        view: &str,
        columns: &str,
        tail: &str,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let mut out = Vec::new();
        each_row(self.db, &self.guid, self.pid, view, columns, tail, |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    fn agents(&mut self) -> rusqlite::Result<()> {
        let agents = self.select(
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

    fn api(&mut self) -> rusqlite::Result<()> {
        // Regions, and samples (zero-length calls), with their event's category and ids.
        // Only marker events carry a message: the others' extdata is not read.
        let strings = self.strings;
        let events: Events<'a> = self
            .select(
                "rocpd_event",
                "id, category_id, stack_id, extdata",
                "",
                |r| {
                    let category = strings.get(&int(r, 1)).map_or("", String::as_str);
                    let marker = matches!(category, "MARKER_CORE_RANGE_API" | "MARKER_CORE_API");
                    Ok((int(r, 0), (category, marker.then(|| text(r, 3)))))
                },
            )?
            .into_iter()
            .collect();
        let tracks: HashMap<i64, i64> = self
            .select("rocpd_track", "id, tid", "", |r| Ok((int(r, 0), int(r, 1))))?
            .into_iter()
            .collect();
        let sample_names = self.sample_names()?;
        // The calls go straight from the rows into sorted runs (spilled past one run's
        // worth), not into an intermediate list.
        let mut api = RecordsBuilder::<ApiRecord>::new(std::env::temp_dir());
        let (db, guid, pid) = (self.db, self.guid.clone(), self.pid);
        let tail = "ORDER BY start, id";
        let columns = "start, end, tid, name_id, event_id";
        each_row(db, &guid, pid, "rocpd_region", columns, tail, |r| {
            let name = strings.get(&int(r, 3)).map_or("", String::as_str);
            let call = Call {
                start: int(r, 0),
                end: int(r, 1),
                tid: int(r, 2),
                event: int(r, 4),
                sample: false,
            };
            self.call(&events, &mut api, call, name);
            Ok(())
        })?;
        let tail = "ORDER BY timestamp, id";
        let columns = "timestamp, track_id, event_id";
        each_row(db, &guid, pid, "rocpd_sample", columns, tail, |r| {
            let event = int(r, 2);
            let name = sample_names.get(&event).map_or("", String::as_str);
            let call = Call {
                start: int(r, 0),
                end: int(r, 0),
                tid: tracks.get(&int(r, 1)).copied().unwrap_or(0),
                event,
                sample: true,
            };
            self.call(&events, &mut api, call, name);
            Ok(())
        })?;
        self.trace.api = api
            .finish()
            .map_err(|(e, _)| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(())
    }

    /// One region or sample: a ROCTx record, an API call, or nothing (another category).
    fn call(
        &mut self,
        events: &Events<'_>,
        api: &mut RecordsBuilder<ApiRecord>,
        c: Call,
        name: &str,
    ) {
        let Some((category, extdata)) = events.get(&c.event) else {
            return;
        };
        let correlation = self
            .correlations
            .get(&c.event)
            .copied()
            .unwrap_or(c.event as u64);
        let message = extdata
            .as_deref()
            .and_then(|e| serde_json::from_str::<serde_json::Value>(e).ok())
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned));
        // ROCTx records: this project's category, or upstream's marker category with the
        // message in the event (its other marker-domain calls stay calls).
        let category = *category;
        let marker = category == "MARKER_CORE_RANGE_API"
            || (category == "MARKER_CORE_API" && message.is_some());
        if marker {
            let kind = marker_kind(name, c.sample);
            let message = self.intern(&message.unwrap_or_else(|| name.to_owned()));
            self.trace.markers.push(MarkerRecord {
                correlation_id: correlation,
                start: c.start as u64,
                end: c.end as u64,
                message,
                thread_id: c.tid as u32,
                kind: kind as u8,
                reserved: [0; 7],
            });
            return;
        }
        let Some(d) = domain(category) else { return };
        let operation = self.operation(d, name);
        api.push(ApiRecord {
            correlation_id: self.own_ids.get(&c.event).copied().unwrap_or(correlation),
            start: c.start as u64,
            end: c.end as u64,
            thread_id: c.tid as u32,
            operation,
            domain: d as u8,
            reserved: 0,
        });
    }

    /// A sample's call name: upstream's `samples` view takes it from the event's `extdata`
    /// (`name`) or the track; this reads `extdata.name`, then the track's name.
    fn sample_names(&self) -> rusqlite::Result<HashMap<i64, String>> {
        // Only the samples' events (a superset: the subquery is over every process).
        if !has(self.db, "rocpd_sample") {
            return Ok(HashMap::new());
        }
        let events = self.select(
            "rocpd_event",
            "id, extdata",
            "AND id IN (SELECT event_id FROM rocpd_sample)",
            |r| Ok((int(r, 0), text(r, 1))),
        )?;
        Ok(events
            .into_iter()
            .filter_map(|(id, extdata)| {
                let v: serde_json::Value = serde_json::from_str(&extdata).ok()?;
                let name = v.get("name")?.as_str()?.to_owned();
                Some((id, name))
            })
            .collect())
    }

    fn symbols(&mut self) -> rusqlite::Result<()> {
        // A file without the column (a reduced or older schema) names no code object.
        let code_object = column_or_null(self.db, "rocpd_info_kernel_symbol", "code_object_id");
        let symbols = self.select(
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
        let rows = self.select(
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

    /// The correlation id of each event: the stack id of the outermost call it descends from
    /// (following `parent_stack_id`), so the dispatch a call enqueued and the outermost call
    /// that issued it share one id, as in this project's records. An event without a stack id
    /// keeps its external `correlation_id`, or its own id. Second, each event's own stack id
    /// (what an API call keeps: ids are unique per call).
    #[allow(clippy::type_complexity)]
    fn stacks(&self) -> rusqlite::Result<(HashMap<i64, u64>, HashMap<i64, u64>)> {
        let events = self.select(
            "rocpd_event",
            "id, stack_id, parent_stack_id, correlation_id",
            "",
            |r| Ok((int(r, 0), int(r, 1), int(r, 2), int(r, 3))),
        )?;
        let parent: HashMap<i64, i64> = events
            .iter()
            .filter(|e| e.1 > 0)
            .map(|e| (e.1, e.2))
            .collect();
        let root = |mut stack: i64| {
            // Bounded: a malformed file may hold a cycle.
            for _ in 0..4096 {
                match parent.get(&stack) {
                    Some(&p) if p > 0 && p != stack && parent.contains_key(&p) => stack = p,
                    _ => break,
                }
            }
            stack
        };
        let own = events
            .iter()
            .filter(|e| e.1 > 0)
            .map(|e| (e.0, e.1 as u64))
            .collect();
        let roots = events
            .iter()
            .map(|&(id, stack, _, corr)| {
                let c = match (stack, corr) {
                    (s, _) if s > 0 => root(s),
                    (_, c) if c > 0 => c,
                    _ => id,
                };
                (id, c as u64)
            })
            .collect();
        Ok((roots, own))
    }

    fn dispatches(&mut self) -> rusqlite::Result<()> {
        let region = column_or_null(self.db, "rocpd_kernel_dispatch", "region_name_id");
        let rows = self.select(
            "rocpd_kernel_dispatch",
            &format!(
                "dispatch_id, kernel_id, queue_id, stream_id, start, end, tid, agent_id, \
                 private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, \
                 workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id, {region}"
            ),
            "ORDER BY start, id",
            |r| Ok((0..18).map(|k| int(r, k)).collect::<Vec<i64>>()),
        )?;
        for v in rows {
            // A --kernel-rename name (upstream's region name); "" when not renamed.
            let region = match self.string(v[17]) {
                "" => 0,
                name => self.intern(name),
            };
            self.trace.dispatches.push(KernelDispatchRecord {
                dispatch_id: v[0] as u64,
                kernel_id: v[1] as u64,
                correlation_id: self.correlations.get(&v[16]).copied().unwrap_or(0),
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
                region,
                reserved: 0,
            });
        }
        Ok(())
    }

    fn copies(&mut self) -> rusqlite::Result<()> {
        let rows = self.select(
            "rocpd_memory_copy",
            "start, end, size, src_agent_id, dst_agent_id, tid, stream_id, name_id, event_id",
            "ORDER BY start, id",
            |r| Ok((0..9).map(|k| int(r, k)).collect::<Vec<i64>>()),
        )?;
        for v in rows {
            let direction = [
                CopyDirection::HostToHost,
                CopyDirection::HostToDevice,
                CopyDirection::DeviceToHost,
                CopyDirection::DeviceToDevice,
            ]
            .into_iter()
            .find(|d| d.csv_name() == self.string(v[7]))
            .map_or(0, |d| d as u8);
            self.trace.copies.push(MemoryCopyRecord {
                correlation_id: self.correlations.get(&v[8]).copied().unwrap_or(0),
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
        }
        Ok(())
    }

    /// `rocpd_memory_allocate`: level `SCRATCH` rows are scratch events, the others memory
    /// allocations (`VIRTUAL` ones the VMEM operations), each in time order.
    fn allocations(&mut self) -> rusqlite::Result<()> {
        let rows = self.select(
            "rocpd_memory_allocate",
            "tid, agent_id, type, level, start, end, address, size, queue_id, event_id, extdata",
            "ORDER BY start, id",
            |r| {
                let agent = r.get::<_, Option<i64>>(1).ok().flatten();
                Ok((
                    [
                        int(r, 0),
                        int(r, 4),
                        int(r, 5),
                        int(r, 6),
                        int(r, 7),
                        int(r, 8),
                        int(r, 9),
                    ],
                    agent,
                    text(r, 2),
                    text(r, 3),
                    text(r, 10),
                ))
            },
        )?;
        for ([tid, start, end, address, size, queue, event], agent, kind, level, extdata) in rows {
            let correlation_id = self.correlations.get(&event).copied().unwrap_or(0);
            if level == "SCRATCH" {
                let operation = match kind.as_str() {
                    "FREE" => ScratchOperation::Free,
                    "RECLAIM" => ScratchOperation::AsyncReclaim,
                    _ => ScratchOperation::Alloc,
                };
                let flags = serde_json::from_str::<serde_json::Value>(&extdata)
                    .ok()
                    .and_then(|v| v.get("flags")?.as_u64())
                    .unwrap_or(0);
                self.trace.scratch.push(ScratchMemoryRecord {
                    correlation_id,
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
                continue;
            }
            let operation = match (kind.as_str(), level.as_str()) {
                ("FREE", "VIRTUAL") => AllocationOperation::VmemFree,
                ("FREE", _) => AllocationOperation::Free,
                (_, "VIRTUAL") => AllocationOperation::VmemAllocate,
                _ => AllocationOperation::Allocate,
            };
            self.trace.allocations.push(MemoryAllocationRecord {
                correlation_id,
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
        }
        Ok(())
    }

    fn counters(&mut self) -> rusqlite::Result<()> {
        let info: HashMap<i64, String> = self
            .select("rocpd_info_pmc", "id, name", "", |r| {
                Ok((int(r, 0), text(r, 1)))
            })?
            .into_iter()
            .collect();
        if info.is_empty() || !has(self.db, "rocpd_pmc_event") {
            return Ok(());
        }
        let by_event: HashMap<u64, usize> = self
            .trace
            .dispatches
            .iter()
            .enumerate()
            .map(|(k, d)| (d.dispatch_id, k))
            .collect();
        let events = self.select("rocpd_kernel_dispatch", "event_id, dispatch_id", "", |r| {
            Ok((int(r, 0), int(r, 1) as u64))
        })?;
        let dispatch_of: HashMap<i64, u64> = events.into_iter().collect();
        // rocpd_pmc_event has no pid column: its events belong to this process's dispatches.
        let mut stmt = self
            .db
            .prepare("SELECT event_id, pmc_id, value FROM rocpd_pmc_event WHERE guid = ?1")?;
        let values = stmt
            .query_map([&self.guid], |r| {
                Ok((
                    int(r, 0),
                    int(r, 1),
                    r.get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut sums: HashMap<(u64, i64), f64> = HashMap::new();
        for (event, pmc, value) in values {
            if let Some(&d) = dispatch_of.get(&event) {
                *sums.entry((d, pmc)).or_default() += value;
            }
        }
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
}
