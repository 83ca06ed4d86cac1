//! `rocprof -f csv,rocpd,json` end to end on the simulated Radeon 890M: the database holds the
//! seed's records, agrees with the CSV files record for record, keeps the timeline's
//! containment, carries counters, and answers upstream's data and summary views — stored in
//! the file, as upstream's writer stores them, and queried here as upstream's tests query them.
//!
//! [`VIEWS`] re-creates ten of those views independently, from the columns and joins they are
//! documented to use, as temporary views named `expected_<view>`: the file's views must give
//! exactly their rows, and a column they select or join on that is missing or empty fails here.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or `cargo xtask
//! build` first).

mod support;

use rusqlite::Connection;
use std::collections::HashMap;
use std::path::PathBuf;
use support::{rocprof, scratch, stderr, workload};

#[path = "../../trace-export/tests/rocpd_views/mod.rs"]
mod rocpd_views;
use rocpd_views::{PLAIN, UPSTREAM};

type Row = HashMap<String, String>;

/// One run of `rocprof --sim <options> -f csv,rocpd,json -d <dir> -o run -- reference-workload`.
struct Run {
    dir: PathBuf,
}

impl Run {
    fn new(tag: &str, options: &[&str], env: &[(&str, &str)]) -> Self {
        let tmp = scratch("rocpd", tag);
        let dir = tmp.join("out");
        let out = rocprof(&tmp)
            .arg("--sim")
            .args(options)
            .args(["-f", "csv,rocpd,json", "-d"])
            .arg(&dir)
            .args(["-o", "run", "--"])
            .arg(workload("reference-workload"))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        Run { dir }
    }

    fn csv(&self, name: &str) -> Vec<Row> {
        let path = self.dir.join(format!("run_{name}.csv"));
        let mut r =
            csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        r.deserialize().map(Result::unwrap).collect()
    }

    /// The database (read-only), with [`VIEWS`] as temporary views `expected_<view>`.
    fn db(&self) -> Connection {
        let path = self.dir.join("run_results.db");
        assert!(path.is_file(), "{} was not written", path.display());
        let c =
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        for (name, sql) in VIEWS {
            let sql = sql.replace("@CAT", CATEGORY);
            c.execute_batch(&format!("CREATE TEMPORARY VIEW expected_{name} AS {sql};"))
                .unwrap_or_else(|e| panic!("view {name}: {e}"));
        }
        c
    }

    /// The JSON file of the same run.
    fn json(&self) -> serde_json::Value {
        let path = self.dir.join("run_results.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }
}

fn num(r: &Row, k: &str) -> i64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k}={}", r[k]))
}

/// Rows of `sql`, each as its columns' values in text (NULL as `NULL`).
fn query(c: &Connection, sql: &str) -> Vec<Vec<String>> {
    let mut s = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = s.column_count();
    s.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                })
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn one(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Every column of `view` is filled (not NULL) in every row, except `may_be_null`.
fn assert_filled(c: &Connection, view: &str, may_be_null: &[&str]) {
    let columns: Vec<String> = query(c, &format!("SELECT name FROM pragma_table_info('{view}')"))
        .into_iter()
        .map(|mut r| r.remove(0))
        .collect();
    assert!(!columns.is_empty(), "{view} has no columns");
    for col in columns {
        if may_be_null.contains(&col.as_str()) {
            continue;
        }
        let empty = one(
            c,
            &format!("SELECT COUNT(*) FROM {view} WHERE \"{col}\" IS NULL"),
        );
        assert_eq!(empty, 0, "{view}.{col} is NULL in {empty} rows");
    }
}

/// The category of an event, from the string table.
const CATEGORY: &str =
    "(SELECT X.string FROM rocpd_string X WHERE X.id = E.category_id AND X.guid = E.guid)";

/// Upstream's data and summary views (rocprofv3-outputs.md §10.4): their columns, over the
/// same joins (every join matches `guid` too), re-created independently of the writer's.
/// `@CAT` stands for an event's category ([`CATEGORY`]).
const VIEWS: [(&str, &str); 10] = [
    (
        "regions",
        "SELECT R.id, R.guid, @CAT AS category, N.string AS name, R.nid, P.pid, T.tid,
                R.start, R.end, R.end - R.start AS duration, R.event_id, E.stack_id,
                E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, E.call_stack,
                E.line_info
         FROM rocpd_region R
         JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
         JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid
         JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
         JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid",
    ),
    (
        "sample_regions",
        "SELECT S.id, S.guid, @CAT AS category,
                (SELECT X.string FROM rocpd_string X WHERE X.id = K.name_id AND X.guid = K.guid)
                    AS name,
                K.nid, P.pid, T.tid, S.timestamp AS start, S.timestamp AS end, 0 AS duration,
                S.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id,
                E.extdata, E.call_stack, E.line_info
         FROM rocpd_sample S
         JOIN rocpd_track K ON K.id = S.track_id AND K.guid = S.guid
         JOIN rocpd_event E ON E.id = S.event_id AND E.guid = S.guid
         JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
         JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid",
    ),
    (
        "regions_and_samples",
        "SELECT * FROM regions UNION ALL SELECT * FROM sample_regions",
    ),
    (
        "kernels",
        "SELECT D.id, D.guid, T.tid, @CAT AS category, RN.string AS region,
                S.display_name AS name, D.nid, P.pid, A.absolute_index AS agent_abs_index,
                A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
                A.type AS agent_type, S.code_object_id, D.kernel_id, D.dispatch_id,
                D.stream_id, D.queue_id, Q.name AS queue, ST.name AS stream, D.start, D.end,
                D.end - D.start AS duration, D.grid_size_x AS grid_x, D.grid_size_y AS grid_y,
                D.grid_size_z AS grid_z, D.workgroup_size_x AS workgroup_x,
                D.workgroup_size_y AS workgroup_y, D.workgroup_size_z AS workgroup_z,
                D.group_segment_size AS lds_size, D.private_segment_size AS scratch_size,
                S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
                S.group_segment_size AS static_lds_size,
                S.private_segment_size AS static_scratch_size, E.stack_id, E.parent_stack_id,
                E.correlation_id AS corr_id
         FROM rocpd_kernel_dispatch D
         JOIN rocpd_info_agent A ON A.id = D.agent_id AND A.guid = D.guid
         JOIN rocpd_event E ON E.id = D.event_id AND E.guid = D.guid
         JOIN rocpd_string RN ON RN.id = D.region_name_id AND RN.guid = D.guid
         JOIN rocpd_info_kernel_symbol S ON S.id = D.kernel_id AND S.guid = D.guid
         LEFT JOIN rocpd_info_stream ST ON ST.id = D.stream_id AND ST.guid = D.guid
         LEFT JOIN rocpd_info_queue Q ON Q.id = D.queue_id AND Q.guid = D.guid
         JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
         JOIN rocpd_info_thread T ON T.id = D.tid AND T.guid = D.guid",
    ),
    (
        "memory_copies",
        "SELECT M.id, M.guid, @CAT AS category, M.nid, P.pid, T.tid, M.start, M.end,
                M.end - M.start AS duration, N.string AS name, RN.string AS region_name,
                M.stream_id, M.queue_id, ST.name AS stream_name, Q.name AS queue_name, M.size,
                DA.name AS dst_device, DA.absolute_index AS dst_agent_abs_index,
                DA.logical_index AS dst_agent_log_index, DA.type_index AS dst_agent_type_index,
                DA.type AS dst_agent_type, M.dst_address,
                SA.name AS src_device, SA.absolute_index AS src_agent_abs_index,
                SA.logical_index AS src_agent_log_index, SA.type_index AS src_agent_type_index,
                SA.type AS src_agent_type, M.src_address,
                E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
         FROM rocpd_memory_copy M
         JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid
         LEFT JOIN rocpd_string RN ON RN.id = M.region_name_id AND RN.guid = M.guid
         JOIN rocpd_info_agent DA ON DA.id = M.dst_agent_id AND DA.guid = M.guid
         JOIN rocpd_info_agent SA ON SA.id = M.src_agent_id AND SA.guid = M.guid
         LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
         LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
         JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
         JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
         JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid",
    ),
    (
        "counters_collection",
        "SELECT MIN(V.id) AS id, V.guid, D.dispatch_id, D.kernel_id, E.id AS event_id,
                E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, T.tid, D.agent_id,
                A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
                A.type_index AS agent_type_index, A.type AS agent_type, D.queue_id,
                D.grid_size_x, D.grid_size_y, D.grid_size_z,
                D.grid_size_x * D.grid_size_y * D.grid_size_z AS grid_size,
                S.display_name AS kernel_name,
                (SELECT X.string FROM rocpd_string X WHERE X.id = D.region_name_id
                    AND X.guid = D.guid) AS kernel_region,
                D.workgroup_size_x, D.workgroup_size_y, D.workgroup_size_z,
                D.workgroup_size_x * D.workgroup_size_y * D.workgroup_size_z AS workgroup_size,
                D.group_segment_size AS lds_block_size, D.private_segment_size AS scratch_size,
                S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
                I.name AS counter_name, I.symbol AS counter_symbol, I.component,
                I.description, I.block, I.expression, I.value_type, I.id AS counter_id,
                SUM(V.value) AS value, D.start, D.end, I.is_constant, I.is_derived,
                D.end - D.start AS duration, @CAT AS category, D.nid, E.extdata,
                S.code_object_id
         FROM rocpd_pmc_event V
         JOIN rocpd_info_pmc I ON I.id = V.pmc_id AND I.guid = V.guid
         JOIN rocpd_event E ON E.id = V.event_id AND E.guid = V.guid
         JOIN rocpd_kernel_dispatch D ON D.event_id = V.event_id AND D.guid = V.guid
         JOIN rocpd_info_agent A ON A.id = D.agent_id AND A.guid = D.guid
         JOIN rocpd_info_kernel_symbol S ON S.id = D.kernel_id AND S.guid = D.guid
         JOIN rocpd_info_process P ON P.id = D.pid AND P.guid = D.guid
         JOIN rocpd_info_thread T ON T.id = D.tid AND T.guid = D.guid
         GROUP BY V.guid, D.dispatch_id, I.name, D.agent_id",
    ),
    (
        "top_kernels",
        "SELECT S.display_name AS name, COUNT(D.kernel_id) AS total_calls,
                SUM(D.end - D.start) / 1000.0 AS total_duration,
                SUM(D.end - D.start) / COUNT(D.kernel_id) / 1000.0 AS average,
                SUM(D.end - D.start) * 100.0
                    / NULLIF((SELECT SUM(end - start) FROM rocpd_kernel_dispatch), 0)
                    AS percentage
         FROM rocpd_kernel_dispatch D
         JOIN rocpd_info_kernel_symbol S ON S.id = D.kernel_id AND S.guid = D.guid
         GROUP BY name ORDER BY total_duration DESC",
    ),
    (
        "busy",
        "SELECT G.agent_id, A.type, G.GpuTime, W.WallTime,
                G.GpuTime * 1.0 / NULLIF(W.WallTime, 0) AS Busy
         FROM (SELECT agent_id, guid, SUM(end - start) AS GpuTime
               FROM (SELECT agent_id, guid, start, end FROM rocpd_kernel_dispatch
                     UNION ALL
                     SELECT dst_agent_id, guid, start, end FROM rocpd_memory_copy)
               GROUP BY agent_id, guid) G
         JOIN (SELECT MAX(end) - MIN(start) AS WallTime
               FROM (SELECT start, end FROM rocpd_kernel_dispatch
                     UNION ALL SELECT start, end FROM rocpd_memory_copy)) W ON 1 = 1
         JOIN rocpd_info_agent A ON A.id = G.agent_id AND A.guid = G.guid",
    ),
    (
        "top",
        "SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
                SUM(duration) / COUNT(*) / 1000.0 AS average,
                SUM(duration) * 100.0 / NULLIF(total, 0) AS percentage
         FROM (SELECT S.display_name AS name, D.end - D.start AS duration
               FROM rocpd_kernel_dispatch D
               JOIN rocpd_info_kernel_symbol S ON S.id = D.kernel_id AND S.guid = D.guid
               UNION ALL
               SELECT N.string, M.end - M.start FROM rocpd_memory_copy M
               JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid
               UNION ALL
               SELECT N.string, R.end - R.start FROM rocpd_region R
               JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid)
         CROSS JOIN (SELECT SUM(end - start) AS total
                     FROM (SELECT start, end FROM rocpd_kernel_dispatch
                           UNION ALL SELECT start, end FROM rocpd_memory_copy
                           UNION ALL SELECT start, end FROM rocpd_region))
         GROUP BY name ORDER BY total_duration DESC",
    ),
    (
        "processes",
        "SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname,
                N.release AS system_release, N.version AS system_version, P.guid, P.ppid,
                P.pid, P.init, P.start, P.end, P.fini, P.command
         FROM rocpd_info_process P
         JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid",
    ),
];

fn sys_trace() -> &'static Run {
    static RUN: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
    RUN.get_or_init(|| Run::new("sys", &["--sys-trace"], &[]))
}

/// `(function, thread, start, end)` of the API calls of a CSV file, sorted.
fn csv_calls(rows: &[Row]) -> Vec<(String, i64, i64, i64)> {
    let mut v: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r["Function"].clone(),
                num(r, "Thread_Id"),
                num(r, "Start_Timestamp"),
                num(r, "End_Timestamp"),
            )
        })
        .collect();
    v.sort();
    v
}

/// The same of the database's regions and samples of categories matching `like`.
fn db_calls(c: &Connection, like: &str) -> Vec<(String, i64, i64, i64)> {
    let mut v: Vec<_> = query(
        c,
        &format!(
            "SELECT name, tid, start, end FROM regions_and_samples WHERE category LIKE '{like}'"
        ),
    )
    .into_iter()
    .map(|r| {
        (
            r[0].clone(),
            r[1].parse().unwrap(),
            r[2].parse().unwrap(),
            r[3].parse().unwrap(),
        )
    })
    .collect();
    v.sort();
    v
}

#[test]
fn the_file_has_the_plain_views_and_one_guid() {
    let c = sys_trace().db();
    for view in PLAIN {
        let n = one(
            &c,
            &format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = '{view}'"),
        );
        assert_eq!(n, 1, "plain view {view}");
    }
    let meta: HashMap<String, String> = query(&c, "SELECT tag, value FROM rocpd_metadata")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(meta["schema_version"], "3");
    let guid = &meta["guid"];
    assert_eq!(meta["uuid"], format!("_{}", guid.replace('-', "_")));
    assert_eq!(&guid[14..15], "7", "a version-7 UUID: {guid}");
    for view in &PLAIN[1..] {
        let other = one(
            &c,
            &format!("SELECT COUNT(*) FROM {view} WHERE guid != '{guid}'"),
        );
        assert_eq!(other, 0, "{view} has rows of another guid");
    }
    let broken = query(&c, "PRAGMA foreign_key_check");
    assert!(broken.is_empty(), "dangling references: {broken:?}");
    let processes = query(&c, "SELECT pid, command FROM processes");
    assert_eq!(processes.len(), 1);
    assert!(
        processes[0][1].ends_with("reference-workload"),
        "{processes:?}"
    );
}

#[test]
fn upstreams_views_are_stored_in_the_file_and_answer_upstreams_queries() {
    let r = sys_trace();
    let c = r.db();
    // Stored in the file (not the temporary ones), with upstream's columns.
    for (view, columns) in UPSTREAM {
        let stored = one(
            &c,
            &format!(
                "SELECT COUNT(*) FROM main.sqlite_master WHERE type = 'view' AND name = '{view}'"
            ),
        );
        assert_eq!(stored, 1, "the file has no view {view}");
        assert_eq!(
            rocpd_views::columns(&c, view),
            *columns,
            "columns of {view}"
        );
        // Every view reads.
        one(&c, &format!("SELECT COUNT(*) FROM {view}"));
    }
    // The same rows as the independent re-creation, row for row.
    for (view, _) in VIEWS {
        let n = one(&c, &format!("SELECT COUNT(*) FROM {view}"));
        assert_eq!(
            n,
            one(&c, &format!("SELECT COUNT(*) FROM expected_{view}")),
            "{view}"
        );
        for (a, b) in [
            (view.to_owned(), format!("expected_{view}")),
            (format!("expected_{view}"), view.to_owned()),
        ] {
            let extra = query(&c, &format!("SELECT * FROM {a} EXCEPT SELECT * FROM {b}"));
            assert!(extra.is_empty(), "{a} has rows {b} lacks: {extra:?}");
        }
    }
    // Each data view has one row per row it describes.
    for (view, table) in [
        ("regions", "rocpd_region"),
        ("samples", "rocpd_sample"),
        ("kernels", "rocpd_kernel_dispatch"),
        ("memory_copies", "rocpd_memory_copy"),
        ("memory_allocations", "rocpd_memory_allocate"),
        ("kernel_symbols", "rocpd_info_kernel_symbol"),
        ("code_objects", "rocpd_info_code_object"),
        ("threads", "rocpd_info_thread"),
        ("processes", "rocpd_info_process"),
    ] {
        let n = one(&c, &format!("SELECT COUNT(*) FROM {view}"));
        assert_eq!(
            n,
            one(&c, &format!("SELECT COUNT(*) FROM {table}")),
            "{view}"
        );
    }
    assert_eq!(
        one(&c, "SELECT COUNT(*) FROM regions_and_samples"),
        one(
            &c,
            "SELECT (SELECT COUNT(*) FROM rocpd_region) + (SELECT COUNT(*) FROM rocpd_sample)"
        )
    );
    assert_eq!(one(&c, "SELECT COUNT(*) FROM kernels"), 8);
    assert_eq!(one(&c, "SELECT COUNT(*) FROM memory_copies"), 16);

    // Upstream's `test_rocpd_data` (tests/pytest-packages/tests/rocprofv3.py, which
    // tracing/validate.py runs): each JSON buffer-record category has as many rows in its view.
    let json = r.json();
    let records = &json["rocprofiler-sdk-tool"][0]["buffer_records"];
    for (key, view, categories) in [
        (
            "hip_api",
            "regions",
            &[
                "HIP_COMPILER_API",
                "HIP_COMPILER_API_EXT",
                "HIP_RUNTIME_API",
                "HIP_RUNTIME_API_EXT",
            ][..],
        ),
        (
            "hsa_api",
            "regions",
            &[
                "HSA_CORE_API",
                "HSA_AMD_EXT_API",
                "HSA_IMAGE_EXT_API",
                "HSA_FINALIZE_EXT_API",
            ][..],
        ),
        (
            "marker_api",
            "regions_and_samples",
            &[
                "MARKER_CORE_API",
                "MARKER_CONTROL_API",
                "MARKER_NAME_API",
                "MARKER_CORE_RANGE_API",
            ][..],
        ),
        ("kernel_dispatch", "kernels", &["KERNEL_DISPATCH"][..]),
        ("memory_copy", "memory_copies", &["MEMORY_COPY"][..]),
        (
            "memory_allocation",
            "memory_allocations",
            &["MEMORY_ALLOCATION"][..],
        ),
    ] {
        let condition: Vec<String> = categories
            .iter()
            .map(|c| format!("category = '{c}'"))
            .collect();
        let sql = format!("SELECT * FROM {view} WHERE {}", condition.join(" OR "));
        let in_json = records[key].as_array().unwrap().len();
        assert!(in_json > 0, "{key}");
        assert_eq!(query(&c, &sql).len(), in_json, "{sql}");
    }
}

#[test]
fn the_seeds_records_are_in_the_database_as_in_the_csv_files() {
    let r = sys_trace();
    let c = r.db();

    // API calls, record for record.
    let hip = csv_calls(&r.csv("hip_api_trace"));
    assert_eq!(hip.len(), 52);
    let db_hip = db_calls(&c, "HIP_%");
    assert_eq!(db_hip, hip, "HIP calls");
    let count = |name: &str| db_hip.iter().filter(|h| h.0 == name).count();
    assert_eq!((count("hipMemcpy"), count("hipLaunchKernel")), (16, 8));
    let hsa = csv_calls(&r.csv("hsa_api_trace"));
    assert!(hsa.len() >= 300, "{}", hsa.len());
    assert_eq!(db_calls(&c, "HSA_%"), hsa, "HSA calls");

    // Kernel dispatches.
    let mut csv_kernels: Vec<Vec<String>> = r
        .csv("kernel_trace")
        .iter()
        .map(|k| {
            [
                "Dispatch_Id",
                "Kernel_Name",
                "Start_Timestamp",
                "End_Timestamp",
                "Grid_Size_X",
                "Workgroup_Size_X",
                "Queue_Id",
                "Stream_Id",
                "Thread_Id",
                "VGPR_Count",
                "SGPR_Count",
            ]
            .iter()
            .map(|f| k[*f].clone())
            .collect()
        })
        .collect();
    csv_kernels.sort();
    let mut kernels = query(
        &c,
        "SELECT dispatch_id, name, start, end, grid_x, workgroup_x, queue_id, stream_id, tid, \
         vgpr_count, sgpr_count FROM kernels",
    );
    kernels.sort();
    assert_eq!(kernels.len(), 8);
    assert_eq!(kernels, csv_kernels);
    assert!(
        kernels
            .iter()
            .all(|k| k[1] == "axpb(float const*, float*, unsigned long)")
    );
    assert_eq!(
        query(
            &c,
            "SELECT DISTINCT 'Agent ' || agent_log_index, agent_type, region FROM kernels"
        ),
        [["Agent 1", "GPU", ""]]
    );
    assert_filled(&c, "kernels", &[]);

    // Memory copies: each of 1 MiB.
    let mut csv_copies: Vec<Vec<String>> = r
        .csv("memory_copy_trace")
        .iter()
        .map(|m| {
            [
                "Direction",
                "Start_Timestamp",
                "End_Timestamp",
                "Source_Agent_Id",
                "Destination_Agent_Id",
                "Stream_Id",
            ]
            .iter()
            .map(|f| m[*f].clone())
            .collect()
        })
        .collect();
    csv_copies.sort();
    let mut copies = query(
        &c,
        "SELECT name, start, end, 'Agent ' || src_agent_log_index, \
         'Agent ' || dst_agent_log_index, stream_id FROM memory_copies",
    );
    copies.sort();
    assert_eq!(copies.len(), 16);
    assert_eq!(copies, csv_copies);
    assert_eq!(
        one(
            &c,
            "SELECT COUNT(*) FROM memory_copies WHERE size = 1048576"
        ),
        16
    );
    assert_filled(
        &c,
        "memory_copies",
        &[
            "region_name",
            "queue_id",
            "queue_name",
            "dst_address",
            "src_address",
        ],
    );

    // Markers: push/pop regions named roctxThreadRangeA, the message in the event.
    let mut csv_markers: Vec<Vec<String>> = r
        .csv("marker_api_trace")
        .iter()
        .map(|m| {
            vec![
                m["Function"].clone(),
                m["Start_Timestamp"].clone(),
                m["End_Timestamp"].clone(),
            ]
        })
        .collect();
    csv_markers.sort();
    let markers = query(
        &c,
        "SELECT json_extract(extdata, '$.message'), start, end FROM regions \
         WHERE category = 'MARKER_CORE_RANGE_API' AND name = 'roctxThreadRangeA' \
         ORDER BY 1",
    );
    assert_eq!(markers, csv_markers);
    assert_eq!(
        markers.iter().map(|m| m[0].clone()).collect::<Vec<_>>(),
        (0..8).map(|i| format!("iter{i}")).collect::<Vec<_>>()
    );
    assert_filled(&c, "regions", &[]);
    assert_filled(&c, "regions_and_samples", &[]);

    // Every event has a category, one of the known ones.
    let categories = query(
        &c,
        &format!("SELECT DISTINCT {CATEGORY} FROM rocpd_event E ORDER BY 1"),
    );
    assert_eq!(
        categories,
        [
            ["HIP_COMPILER_API_EXT"],
            ["HIP_RUNTIME_API_EXT"],
            ["HSA_AMD_EXT_API"],
            ["HSA_CORE_API"],
            ["KERNEL_DISPATCH"],
            ["MARKER_CORE_RANGE_API"],
            ["MEMORY_ALLOCATION"],
            ["MEMORY_COPY"]
        ]
    );
    // -s includes --memory-allocation-trace: HIP's allocations and frees are events too.
    let allocations = r.csv("memory_allocation_trace").len();
    assert!(allocations > 0);
    assert_eq!(
        one(&c, "SELECT COUNT(*) FROM rocpd_event"),
        (hip.len() + hsa.len() + 8 + 8 + 16 + allocations) as i64
    );

    // A dispatch's stack id is its hipLaunchKernel's region id, the call the CSV correlates.
    let by_time: HashMap<(i64, i64), i64> = r
        .csv("hip_api_trace")
        .iter()
        .map(|h| {
            (
                (num(h, "Start_Timestamp"), num(h, "End_Timestamp")),
                num(h, "Correlation_Id"),
            )
        })
        .collect();
    let csv_corr: HashMap<i64, i64> = r
        .csv("kernel_trace")
        .iter()
        .map(|k| (num(k, "Dispatch_Id"), num(k, "Correlation_Id")))
        .collect();
    for k in query(
        &c,
        "SELECT K.dispatch_id, R.name, R.start, R.end FROM kernels K \
         JOIN regions R ON R.id = K.stack_id AND R.guid = K.guid",
    ) {
        assert_eq!(k[1], "hipLaunchKernel");
        let launch = by_time[&(k[2].parse().unwrap(), k[3].parse().unwrap())];
        assert_eq!(launch, csv_corr[&k[0].parse::<i64>().unwrap()], "{k:?}");
    }
}

#[test]
fn the_summary_views_answer() {
    let c = sys_trace().db();
    let top_kernels = query(&c, "SELECT name, total_calls, percentage FROM top_kernels");
    assert_eq!(top_kernels.len(), 1);
    assert_eq!(
        top_kernels[0][0],
        "axpb(float const*, float*, unsigned long)"
    );
    assert_eq!(top_kernels[0][1], "8");
    assert!((top_kernels[0][2].parse::<f64>().unwrap() - 100.0).abs() < 1e-9);
    assert_filled(&c, "top_kernels", &[]);

    let busy = query(
        &c,
        "SELECT agent_id, type, Busy FROM busy ORDER BY agent_id",
    );
    assert!(!busy.is_empty());
    for b in &busy {
        let share: f64 = b[2].parse().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{busy:?}");
    }
    assert!(busy.iter().any(|b| b[1] == "GPU"), "{busy:?}");
    assert_filled(&c, "busy", &[]);

    let top: HashMap<String, i64> = query(&c, "SELECT name, total_calls FROM top")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect();
    assert_eq!(top["axpb(float const*, float*, unsigned long)"], 8);
    assert_eq!(top["hipMemcpy"], 16);
    assert_eq!(top["MEMORY_COPY_HOST_TO_DEVICE"], 8);
    assert_eq!(top["roctxThreadRangeA"], 8);
    let total: f64 = c
        .query_row("SELECT SUM(percentage) FROM top", [], |r| r.get(0))
        .unwrap();
    assert!((total - 100.0).abs() < 1e-6, "{total}");
    assert_filled(&c, "top", &[]);
    assert_filled(&c, "processes", &[]);
    // Upstream's summary groups regions by the part of the category before the first `_`.
    let groups = query(
        &c,
        "SELECT DISTINCT substr(category, 1, instr(category, '_') - 1) FROM regions ORDER BY 1",
    );
    assert_eq!(groups, [["HIP"], ["HSA"], ["MARKER"]]);
}

#[test]
fn dispatches_and_copies_lie_inside_the_calls_that_caused_them() {
    let c = sys_trace().db();
    let d2h: Vec<(i64, i64)> = {
        let mut v: Vec<(i64, i64)> = query(
            &c,
            "SELECT R.start, R.end FROM memory_copies M \
             JOIN regions R ON R.id = M.stack_id AND R.guid = M.guid \
             WHERE M.name = 'MEMORY_COPY_DEVICE_TO_HOST'",
        )
        .into_iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect();
        v.sort();
        v
    };
    assert_eq!(d2h.len(), 8);
    let copies = query(
        &c,
        "SELECT R.name, R.start, M.start, M.end, R.end FROM memory_copies M \
         JOIN regions R ON R.id = M.stack_id AND R.guid = M.guid",
    );
    assert_eq!(copies.len(), 16, "every copy names its call");
    for m in copies {
        assert_eq!(m[0], "hipMemcpy");
        let t: Vec<i64> = m[1..].iter().map(|v| v.parse().unwrap()).collect();
        assert!(
            t[0] <= t[1] && t[2] <= t[3],
            "copy outside its hipMemcpy: {m:?}"
        );
    }
    let kernels = query(
        &c,
        "SELECT R.name, R.start, R.end, K.start, K.end FROM kernels K \
         JOIN regions R ON R.id = K.stack_id AND R.guid = K.guid",
    );
    assert_eq!(kernels.len(), 8, "every dispatch names its call");
    for k in kernels {
        assert_eq!(k[0], "hipLaunchKernel");
        let t: Vec<i64> = k[1..].iter().map(|v| v.parse().unwrap()).collect();
        assert!(
            t[0] <= t[2],
            "dispatch starts before its hipLaunchKernel: {k:?}"
        );
        let consumer = d2h
            .iter()
            .find(|(s, _)| *s >= t[1])
            .expect("a later D2H hipMemcpy");
        assert!(
            t[3] <= consumer.1,
            "dispatch ends after the hipMemcpy consuming it: {k:?}"
        );
    }
}

#[test]
fn counters_are_in_the_database_on_their_dispatches() {
    let r = Run::new(
        "pmc",
        &["--pmc", "SQ_WAVES", "GRBM_COUNT"],
        &[("WSLSIM_SEED", "5")],
    );
    let c = r.db();
    assert_eq!(
        query(
            &c,
            "SELECT name, symbol, component, value_type, block, target_arch FROM rocpd_info_pmc \
             ORDER BY name"
        ),
        [
            ["GRBM_COUNT", "GRBM_COUNT", "rocm", "ABS", "GRBM", "GPU"],
            ["SQ_WAVES", "SQ_WAVES", "rocm", "ABS", "SQ", "GPU"]
        ]
    );
    let dispatches = one(&c, "SELECT COUNT(*) FROM rocpd_kernel_dispatch");
    assert_eq!(dispatches, 8);
    assert_eq!(
        one(&c, "SELECT COUNT(*) FROM rocpd_pmc_event"),
        2 * dispatches
    );
    assert_eq!(
        one(
            &c,
            "SELECT COUNT(DISTINCT event_id || '/' || pmc_id) FROM rocpd_pmc_event"
        ),
        2 * dispatches,
        "one value per dispatch and counter"
    );

    let csv: HashMap<(String, String), String> = r
        .csv("counter_collection")
        .iter()
        .map(|row| {
            (
                (row["Dispatch_Id"].clone(), row["Counter_Name"].clone()),
                row["Counter_Value"].clone(),
            )
        })
        .collect();
    assert_eq!(csv.len(), 16);
    let rows = query(
        &c,
        "SELECT dispatch_id, counter_name, value, kernel_name, grid_size, workgroup_size \
         FROM counters_collection",
    );
    assert_eq!(rows.len(), 16);
    for row in &rows {
        let key = (row[0].clone(), row[1].clone());
        let value: f64 = row[2].parse().unwrap();
        let expected: f64 = csv[&key].parse().unwrap();
        assert_eq!(value, expected, "{row:?}");
        assert_eq!(row[3], "axpb(float const*, float*, unsigned long)");
        assert_eq!((row[4].as_str(), row[5].as_str()), ("262144", "256"));
    }
    assert_filled(
        &c,
        "counters_collection",
        &["description", "expression", "kernel_region"],
    );
    let broken = query(&c, "PRAGMA foreign_key_check");
    assert!(broken.is_empty(), "dangling references: {broken:?}");
}
