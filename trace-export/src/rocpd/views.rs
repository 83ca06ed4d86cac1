//! Upstream's data, marker and summary views, stored in the file as rocprofv3's writer stores
//! them (its `data_views.sql`, `marker_views.sql` and `summary_views.sql`, executed after the
//! plain `rocpd_<name>` views), so that `SELECT * FROM regions`, `kernels`, `memory_copies`,
//! `top`, … work with `sqlite3` alone and upstream's tests and readers find them.
//!
//! Every view has upstream's name and upstream's columns in upstream's order; each is written
//! here over the plain views (so it spans every process of the file) and every join matches
//! `guid` as well as the id, since ids are only unique within one process. Where upstream's
//! SQL joins on something other than what it means, the meaning is kept:
//! - `threads` and `memory_allocations` match the thread's (and in `threads` the process's)
//!   `guid` to the row's; upstream's compare another table's `guid` there, which multiplies
//!   rows once a file holds two processes.
//! - `kernels` takes the process of the dispatch itself; upstream's takes the dispatch's
//!   queue's, which is the same row (a queue belongs to its process).
//! - `sample_regions` names its end column `end` (upstream spells it `END`; SQLite's names are
//!   case-insensitive, so every query reads it alike).
//!
//! `marker_views.sql` defines no view (only its heading), so there is nothing to create for
//! it. The views are created once, after every process's tables and plain views, in one
//! statement batch of the writer's transaction.

use rusqlite::Connection;

/// The category string of the event `E` (upstream's correlated sub-select).
const CATEGORY: &str =
    "(SELECT C.string FROM rocpd_string C WHERE C.id = E.category_id AND C.guid = E.guid)";

/// What `samples` and `sample_regions` select from: a sample with its track, event, process
/// and thread.
const SAMPLE_FROM: &str = "FROM rocpd_sample S
  JOIN rocpd_track K ON K.id = S.track_id AND K.guid = S.guid
  JOIN rocpd_event E ON E.id = S.event_id AND E.guid = S.guid
  JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
  JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid";

/// One view: its name and its `SELECT` (`{category}` stands for [`CATEGORY`], `{sample_from}`
/// for [`SAMPLE_FROM`]).
struct View {
    name: &'static str,
    select: &'static str,
}

/// The data views (`data_views.sql`), in upstream's order.
const DATA: &[View] = &[
    View {
        name: "code_objects",
        select: r#"SELECT O.id, O.guid, O.nid, P.pid, G.absolute_index AS agent_abs_index,
    O.uri, O.load_base, O.load_size, O.load_delta, O.storage_type AS storage_type_str,
    json_extract(O.extdata, '$.size') AS code_object_size,
    json_extract(O.extdata, '$.storage_type') AS storage_type,
    json_extract(O.extdata, '$.memory_base') AS memory_base,
    json_extract(O.extdata, '$.memory_size') AS memory_size
  FROM rocpd_info_code_object O
  JOIN rocpd_info_agent G ON G.id = O.agent_id AND G.guid = O.guid
  JOIN rocpd_info_process P ON P.id = O.pid AND P.guid = O.guid"#,
    },
    View {
        name: "kernel_symbols",
        select: r#"SELECT Y.id, Y.guid, Y.nid, P.pid, Y.code_object_id, Y.kernel_name,
    Y.display_name, Y.kernel_object, Y.kernarg_segment_size, Y.kernarg_segment_alignment,
    Y.group_segment_size, Y.private_segment_size, Y.sgpr_count, Y.arch_vgpr_count,
    Y.accum_vgpr_count, json_extract(Y.extdata, '$.size') AS kernel_symbol_size,
    json_extract(Y.extdata, '$.kernel_id') AS kernel_id,
    json_extract(Y.extdata, '$.kernel_code_entry_byte_offset')
      AS kernel_code_entry_byte_offset,
    json_extract(Y.extdata, '$.formatted_kernel_name') AS formatted_kernel_name,
    json_extract(Y.extdata, '$.demangled_kernel_name') AS demangled_kernel_name,
    json_extract(Y.extdata, '$.truncated_kernel_name') AS truncated_kernel_name,
    json_extract(Y.extdata, '$.kernel_address.handle') AS kernel_address
  FROM rocpd_info_kernel_symbol Y
  JOIN rocpd_info_process P ON P.id = Y.pid AND P.guid = Y.guid"#,
    },
    View {
        name: "processes",
        select: r#"SELECT H.id AS nid, H.machine_id, H.system_name, H.hostname,
    H.release AS system_release, H.version AS system_version, P.guid, P.ppid, P.pid, P.init,
    P.start, P."end", P.fini, P.command
  FROM rocpd_info_process P
  JOIN rocpd_info_node H ON H.id = P.nid AND H.guid = P.guid"#,
    },
    View {
        name: "threads",
        select: r#"SELECT H.id AS nid, H.machine_id, H.system_name, H.hostname,
    H.release AS system_release, H.version AS system_version, P.guid, P.ppid, P.pid, T.tid,
    T.start, T."end", T.name
  FROM rocpd_info_thread T
  JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid
  JOIN rocpd_info_node H ON H.id = T.nid AND H.guid = T.guid"#,
    },
    View {
        name: "regions",
        select: r#"SELECT R.id, R.guid, {category} AS category, N.string AS name, R.nid, P.pid,
    T.tid, R.start, R."end", (R."end" - R.start) AS duration, R.event_id, E.stack_id,
    E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
  FROM rocpd_region R
  JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
  JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid
  JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
  JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid"#,
    },
    View {
        name: "region_args",
        select: r#"SELECT R.id, R.guid, R.nid, P.pid, A."type", A.name, A.value
  FROM rocpd_region R
  JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
  JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = R.guid
  JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid"#,
    },
    View {
        name: "samples",
        select: r#"SELECT S.id, S.guid, {category} AS category,
    (SELECT N.string FROM rocpd_string N WHERE N.id = K.name_id AND N.guid = K.guid) AS name,
    K.nid, P.pid, T.tid, S.timestamp, S.event_id, E.stack_id, E.parent_stack_id,
    E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
  {sample_from}"#,
    },
    View {
        name: "sample_regions",
        select: r#"SELECT S.id, S.guid, {category} AS category,
    (SELECT N.string FROM rocpd_string N WHERE N.id = K.name_id AND N.guid = K.guid) AS name,
    K.nid, P.pid, T.tid, S.timestamp AS start, S.timestamp AS "end",
    (S.timestamp - S.timestamp) AS duration, S.event_id, E.stack_id, E.parent_stack_id,
    E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
  {sample_from}"#,
    },
    View {
        name: "regions_and_samples",
        select: "SELECT * FROM regions UNION ALL SELECT * FROM sample_regions",
    },
    View {
        name: "kernels",
        select: r#"SELECT D.id, D.guid, T.tid, {category} AS category, RN.string AS region,
    Y.display_name AS name, D.nid, P.pid, G.absolute_index AS agent_abs_index,
    G.logical_index AS agent_log_index, G.type_index AS agent_type_index,
    G."type" AS agent_type, Y.code_object_id AS code_object_id, D.kernel_id, D.dispatch_id,
    D.stream_id, D.queue_id, Q.name AS queue, SM.name AS stream, D.start, D."end",
    (D."end" - D.start) AS duration, D.grid_size_x AS grid_x, D.grid_size_y AS grid_y,
    D.grid_size_z AS grid_z, D.workgroup_size_x AS workgroup_x,
    D.workgroup_size_y AS workgroup_y, D.workgroup_size_z AS workgroup_z,
    D.group_segment_size AS lds_size, D.private_segment_size AS scratch_size,
    Y.arch_vgpr_count AS vgpr_count, Y.accum_vgpr_count, Y.sgpr_count,
    Y.group_segment_size AS static_lds_size, Y.private_segment_size AS static_scratch_size,
    E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_kernel_dispatch D
  JOIN rocpd_info_agent G ON G.id = D.agent_id AND G.guid = D.guid
  JOIN rocpd_event E ON E.id = D.event_id AND E.guid = D.guid
  JOIN rocpd_string RN ON RN.id = D.region_name_id AND RN.guid = D.guid
  JOIN rocpd_info_kernel_symbol Y ON Y.id = D.kernel_id AND Y.guid = D.guid
  LEFT JOIN rocpd_info_stream SM ON SM.id = D.stream_id AND SM.guid = D.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = D.queue_id AND Q.guid = D.guid
  JOIN rocpd_info_process P ON P.id = D.pid AND P.guid = D.guid
  JOIN rocpd_info_thread T ON T.id = D.tid AND T.guid = D.guid"#,
    },
    View {
        name: "pmc_info",
        select: r#"SELECT I.id, I.guid, I.nid, P.pid, G.absolute_index AS agent_abs_index,
    I.is_constant, I.is_derived, I.name, I.description, I.block, I.expression
  FROM rocpd_info_pmc I
  JOIN rocpd_info_agent G ON G.id = I.agent_id AND G.guid = I.guid
  JOIN rocpd_info_process P ON P.id = I.pid AND P.guid = I.guid"#,
    },
    View {
        name: "pmc_events",
        select: r#"SELECT V.id, V.guid, V.pmc_id, E.id AS event_id, {category} AS category,
    (SELECT Y.display_name FROM rocpd_info_kernel_symbol Y
      WHERE Y.id = D.kernel_id AND Y.guid = D.guid) AS name,
    D.nid, P.pid, D.dispatch_id, D.start, D."end", (D."end" - D.start) AS duration,
    I.name AS counter_name, V.value AS counter_value
  FROM rocpd_pmc_event V
  JOIN rocpd_info_pmc I ON I.id = V.pmc_id AND I.guid = V.guid
  JOIN rocpd_event E ON E.id = V.event_id AND E.guid = V.guid
  JOIN rocpd_kernel_dispatch D ON D.event_id = V.event_id AND D.guid = V.guid
  JOIN rocpd_info_process P ON P.id = D.pid AND P.guid = D.guid"#,
    },
    View {
        name: "events_args",
        select: r#"SELECT E.id AS event_id, {category} AS category, E.stack_id,
    E.parent_stack_id, E.correlation_id, A.position AS arg_position, A."type" AS arg_type,
    A.name AS arg_name, A.value AS arg_value, E.call_stack, E.line_info, A.extdata
  FROM rocpd_event E
  JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = E.guid"#,
    },
    View {
        name: "stream_args",
        select: r#"SELECT A.id AS argument_id, A.event_id AS event_id, A.position AS arg_position,
    A."type" AS arg_type, A.value AS arg_value,
    json_extract(A.extdata, '$.stream_id') AS stream_id, SM.nid, P.pid,
    SM.name AS stream_name, SM.extdata AS extdata
  FROM rocpd_arg A
  JOIN rocpd_info_stream SM
    ON SM.id = json_extract(A.extdata, '$.stream_id') AND SM.guid = A.guid
  JOIN rocpd_info_process P ON P.id = SM.pid AND P.guid = SM.guid
  WHERE A.name = 'stream'"#,
    },
    View {
        name: "memory_copies",
        select: r#"SELECT M.id, M.guid, {category} AS category, M.nid, P.pid, T.tid, M.start,
    M."end", (M."end" - M.start) AS duration, N.string AS name, RN.string AS region_name,
    M.stream_id, M.queue_id, SM.name AS stream_name, Q.name AS queue_name, M.size,
    DST.name AS dst_device, DST.absolute_index AS dst_agent_abs_index,
    DST.logical_index AS dst_agent_log_index, DST.type_index AS dst_agent_type_index,
    DST."type" AS dst_agent_type, M.dst_address,
    SRC.name AS src_device, SRC.absolute_index AS src_agent_abs_index,
    SRC.logical_index AS src_agent_log_index, SRC.type_index AS src_agent_type_index,
    SRC."type" AS src_agent_type, M.src_address,
    E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_memory_copy M
  JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid
  LEFT JOIN rocpd_string RN ON RN.id = M.region_name_id AND RN.guid = M.guid
  JOIN rocpd_info_agent DST ON DST.id = M.dst_agent_id AND DST.guid = M.guid
  JOIN rocpd_info_agent SRC ON SRC.id = M.src_agent_id AND SRC.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  LEFT JOIN rocpd_info_stream SM ON SM.id = M.stream_id AND SM.guid = M.guid
  JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid"#,
    },
    View {
        name: "memory_allocations",
        select: r#"SELECT M.id, M.guid, {category} AS category, M.nid, P.pid, T.tid, M.start,
    M."end", (M."end" - M.start) AS duration, M."type", M.level, G.name AS agent_name,
    G.absolute_index AS agent_abs_index, G.logical_index AS agent_log_index,
    G.type_index AS agent_type_index, G."type" AS agent_type, M.address, M.size, M.queue_id,
    Q.name AS queue_name, M.stream_id, SM.name AS stream_name, E.stack_id,
    E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_memory_allocate M
  LEFT JOIN rocpd_info_agent G ON G.id = M.agent_id AND G.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  LEFT JOIN rocpd_info_stream SM ON SM.id = M.stream_id AND SM.guid = M.guid
  JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid"#,
    },
    View {
        name: "scratch_memory",
        select: r#"SELECT M.id, M.guid, M.nid, P.pid, M."type" AS operation, G.name AS agent_name,
    G.absolute_index AS agent_abs_index, G.logical_index AS agent_log_index,
    G.type_index AS agent_type_index, G."type" AS agent_type, M.queue_id, T.tid,
    json_extract(M.extdata, '$.flags') AS alloc_flags, M.start, M."end",
    (M."end" - M.start) AS duration, M.size, M.address, E.correlation_id, E.stack_id,
    E.parent_stack_id, E.correlation_id AS corr_id, {category} AS category,
    E.extdata AS event_extdata
  FROM rocpd_memory_allocate M
  LEFT JOIN rocpd_info_agent G ON G.id = M.agent_id AND G.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid
  WHERE M.level = 'SCRATCH'
  ORDER BY M.start"#,
    },
    View {
        name: "counters_collection",
        select: r#"SELECT MIN(V.id) AS id, V.guid, D.dispatch_id, D.kernel_id, E.id AS event_id,
    E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, T.tid, D.agent_id,
    G.absolute_index AS agent_abs_index, G.logical_index AS agent_log_index,
    G.type_index AS agent_type_index, G."type" AS agent_type, D.queue_id,
    D.grid_size_x AS grid_size_x, D.grid_size_y AS grid_size_y, D.grid_size_z AS grid_size_z,
    (D.grid_size_x * D.grid_size_y * D.grid_size_z) AS grid_size,
    Y.display_name AS kernel_name,
    (SELECT N.string FROM rocpd_string N WHERE N.id = D.region_name_id AND N.guid = D.guid)
      AS kernel_region,
    D.workgroup_size_x AS workgroup_size_x, D.workgroup_size_y AS workgroup_size_y,
    D.workgroup_size_z AS workgroup_size_z,
    (D.workgroup_size_x * D.workgroup_size_y * D.workgroup_size_z) AS workgroup_size,
    D.group_segment_size AS lds_block_size, D.private_segment_size AS scratch_size,
    Y.arch_vgpr_count AS vgpr_count, Y.accum_vgpr_count, Y.sgpr_count,
    I.name AS counter_name, I.symbol AS counter_symbol, I.component, I.description, I.block,
    I.expression, I.value_type, I.id AS counter_id, SUM(V.value) AS value, D.start, D."end",
    I.is_constant, I.is_derived, (D."end" - D.start) AS duration, {category} AS category,
    D.nid, E.extdata, Y.code_object_id
  FROM rocpd_pmc_event V
  JOIN rocpd_info_pmc I ON I.id = V.pmc_id AND I.guid = V.guid
  JOIN rocpd_event E ON E.id = V.event_id AND E.guid = V.guid
  JOIN rocpd_kernel_dispatch D ON D.event_id = V.event_id AND D.guid = V.guid
  JOIN rocpd_info_agent G ON G.id = D.agent_id AND G.guid = D.guid
  JOIN rocpd_info_kernel_symbol Y ON Y.id = D.kernel_id AND Y.guid = D.guid
  JOIN rocpd_info_process P ON P.id = D.pid AND P.guid = D.guid
  JOIN rocpd_info_thread T ON T.id = D.tid AND T.guid = D.guid
  GROUP BY V.guid, D.dispatch_id, I.name, D.agent_id"#,
    },
];

/// The summary views (`summary_views.sql`), in upstream's order. Durations in µs (the
/// nanoseconds divided by 1000.0), percentages of the total of what each view sums.
const SUMMARY: &[View] = &[
    View {
        name: "top_kernels",
        select: r#"SELECT Y.display_name AS name, COUNT(D.kernel_id) AS total_calls,
    SUM(D."end" - D.start) / 1000.0 AS total_duration,
    (SUM(D."end" - D.start) / COUNT(D.kernel_id)) / 1000.0 AS average,
    SUM(D."end" - D.start) * 100.0
      / (SELECT SUM(X."end" - X.start) FROM rocpd_kernel_dispatch X) AS percentage
  FROM rocpd_kernel_dispatch D
  JOIN rocpd_info_kernel_symbol Y ON Y.id = D.kernel_id AND Y.guid = D.guid
  GROUP BY name
  ORDER BY total_duration DESC"#,
    },
    View {
        name: "busy",
        select: r#"SELECT W.agent_id, G."type", W.GpuTime, L.WallTime,
    W.GpuTime * 1.0 / L.WallTime AS Busy
  FROM (SELECT agent_id, guid, SUM("end" - start) AS GpuTime
        FROM (SELECT agent_id, guid, "end", start FROM rocpd_kernel_dispatch
              UNION ALL
              SELECT dst_agent_id AS agent_id, guid, "end", start FROM rocpd_memory_copy)
        GROUP BY agent_id, guid) W
  JOIN (SELECT MAX("end") - MIN(start) AS WallTime
        FROM (SELECT "end", start FROM rocpd_kernel_dispatch
              UNION ALL
              SELECT "end", start FROM rocpd_memory_copy)) L ON 1 = 1
  JOIN rocpd_info_agent G ON G.id = W.agent_id AND G.guid = W.guid"#,
    },
    View {
        name: "top",
        select: r#"SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
    (SUM(duration) / COUNT(*)) / 1000.0 AS average,
    SUM(duration) * 100.0 / total_time AS percentage
  FROM (SELECT Y.display_name AS name, (D."end" - D.start) AS duration
        FROM rocpd_kernel_dispatch D
        JOIN rocpd_info_kernel_symbol Y ON Y.id = D.kernel_id AND Y.guid = D.guid
        UNION ALL
        SELECT N.string AS name, (M."end" - M.start) AS duration
        FROM rocpd_memory_copy M
        JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid
        UNION ALL
        SELECT N.string AS name, (R."end" - R.start) AS duration
        FROM rocpd_region R
        JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid) operations
  CROSS JOIN (SELECT SUM("end" - start) AS total_time
              FROM (SELECT "end", start FROM rocpd_kernel_dispatch
                    UNION ALL SELECT "end", start FROM rocpd_memory_copy
                    UNION ALL SELECT "end", start FROM rocpd_region)) TOTAL
  GROUP BY name
  ORDER BY total_duration DESC"#,
    },
];

/// The `CREATE VIEW` statements of every view, in creation order.
fn statements() -> String {
    let mut sql = String::new();
    for v in DATA.iter().chain(SUMMARY) {
        let select = v
            .select
            .replace("{category}", CATEGORY)
            .replace("{sample_from}", SAMPLE_FROM);
        sql.push_str(&format!("CREATE VIEW \"{}\" AS {select};\n", v.name));
    }
    sql
}

/// Creates the data and summary views (after the plain views they select from).
pub(crate) fn create_views(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&statements())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of every view, in creation order.
    fn names() -> impl Iterator<Item = &'static str> {
        DATA.iter().chain(SUMMARY).map(|v| v.name)
    }

    #[test]
    fn names_are_unique_and_upstreams() {
        let all: Vec<&str> = names().collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "a view is defined twice");
        for name in [
            "regions",
            "regions_and_samples",
            "kernels",
            "memory_copies",
            "top",
        ] {
            assert!(all.contains(&name), "{name}");
        }
        // Each statement is the name's; no placeholder is left.
        let sql = statements();
        assert!(!sql.contains("{category}") && !sql.contains("{sample_from}"));
        assert_eq!(sql.matches("CREATE VIEW").count(), all.len());
    }
}
