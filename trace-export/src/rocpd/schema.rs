//! The rocpd schema, version 3.0.0: one set of tables per process, named with the process's
//! suffix, and the plain `rocpd_<name>` views over every process's tables.
//!
//! Every table but the metadata starts with `id INTEGER PRIMARY KEY AUTOINCREMENT` and a
//! `guid` defaulting to the process's guid, so rows carry their process without binding it.
//! String literals are single-quoted throughout (the file must build with SQLite's
//! double-quoted string literals disabled).

use rusqlite::Connection;

/// One table: its base name, its own columns (after `id` and `guid`) and its foreign keys
/// (`column`, base name of the referenced table; always its `id`).
struct Table {
    name: &'static str,
    columns: &'static str,
    keys: &'static [(&'static str, &'static str)],
}

const NODE: &str = "rocpd_info_node";
const PROCESS: &str = "rocpd_info_process";
const THREAD: &str = "rocpd_info_thread";
const AGENT: &str = "rocpd_info_agent";
const QUEUE: &str = "rocpd_info_queue";
const STREAM: &str = "rocpd_info_stream";
const PMC: &str = "rocpd_info_pmc";
const CODE_OBJECT: &str = "rocpd_info_code_object";
const SYMBOL: &str = "rocpd_info_kernel_symbol";
const STRING: &str = "rocpd_string";
const TRACK: &str = "rocpd_track";
const EVENT: &str = "rocpd_event";

/// The tables in dependency order (a table only references tables before it).
const TABLES: &[Table] = &[
    Table {
        name: STRING,
        columns: r#""string" TEXT NOT NULL UNIQUE ON CONFLICT ABORT"#,
        keys: &[],
    },
    Table {
        name: NODE,
        columns: r#""hash" BIGINT NOT NULL UNIQUE, "machine_id" TEXT NOT NULL UNIQUE,
            "system_name" TEXT, "hostname" TEXT, "release" TEXT, "version" TEXT,
            "hardware_name" TEXT, "domain_name" TEXT"#,
        keys: &[],
    },
    Table {
        name: PROCESS,
        columns: r#""nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL,
            "init" BIGINT, "fini" BIGINT, "start" BIGINT, "end" BIGINT, "command" TEXT,
            "environment" JSONB NOT NULL DEFAULT '{}', "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE)],
    },
    Table {
        name: THREAD,
        columns: r#""nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL,
            "tid" INTEGER NOT NULL, "name" TEXT, "start" BIGINT, "end" BIGINT,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS)],
    },
    Table {
        name: AGENT,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
            "type" TEXT CHECK ("type" IN ('CPU', 'GPU')), "absolute_index" INTEGER,
            "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT,
            "model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS)],
    },
    Table {
        name: QUEUE,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS)],
    },
    Table {
        name: STREAM,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS)],
    },
    Table {
        name: PMC,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER,
            "target_arch" TEXT CHECK ("target_arch" IN ('CPU', 'GPU')), "event_code" INT,
            "instance_id" INTEGER, "name" TEXT NOT NULL, "symbol" TEXT NOT NULL,
            "description" TEXT, "long_description" TEXT DEFAULT '', "component" TEXT,
            "units" TEXT DEFAULT '',
            "value_type" TEXT CHECK ("value_type" IN ('ABS', 'ACCUM', 'RELATIVE')),
            "block" TEXT, "expression" TEXT, "is_constant" INTEGER, "is_derived" INTEGER,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS), ("agent_id", AGENT)],
    },
    Table {
        name: CODE_OBJECT,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER,
            "uri" TEXT, "load_base" BIGINT, "load_size" BIGINT, "load_delta" BIGINT,
            "storage_type" TEXT CHECK ("storage_type" IN ('FILE', 'MEMORY')),
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("nid", NODE), ("pid", PROCESS), ("agent_id", AGENT)],
    },
    Table {
        name: SYMBOL,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
            "code_object_id" INTEGER NOT NULL, "kernel_name" TEXT, "display_name" TEXT,
            "kernel_object" INTEGER, "kernarg_segment_size" INTEGER,
            "kernarg_segment_alignment" INTEGER, "group_segment_size" INTEGER,
            "private_segment_size" INTEGER, "sgpr_count" INTEGER, "arch_vgpr_count" INTEGER,
            "accum_vgpr_count" INTEGER, "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("code_object_id", CODE_OBJECT),
        ],
    },
    Table {
        name: TRACK,
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER, "tid" INTEGER, "name_id" INTEGER,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
        ],
    },
    Table {
        name: EVENT,
        columns: r#""category_id" INTEGER, "stack_id" INTEGER, "parent_stack_id" INTEGER,
            "correlation_id" INTEGER, "call_stack" JSONB NOT NULL DEFAULT '{}',
            "line_info" JSONB NOT NULL DEFAULT '{}', "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("category_id", STRING)],
    },
    Table {
        name: "rocpd_arg",
        columns: r#""event_id" INTEGER NOT NULL, "position" INTEGER NOT NULL,
            "type" TEXT NOT NULL, "name" TEXT NOT NULL, "value" TEXT,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("event_id", EVENT)],
    },
    Table {
        name: "rocpd_pmc_event",
        columns: r#""event_id" INTEGER, "pmc_id" INTEGER NOT NULL, "value" REAL DEFAULT 0.0,
            "extdata" JSONB DEFAULT '{}'"#,
        keys: &[("pmc_id", PMC), ("event_id", EVENT)],
    },
    Table {
        name: "rocpd_region",
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL,
            "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL,
            "event_id" INTEGER, "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: "rocpd_sample",
        columns: r#""track_id" INTEGER NOT NULL, "timestamp" BIGINT NOT NULL,
            "event_id" INTEGER, "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[("track_id", TRACK), ("event_id", EVENT)],
    },
    Table {
        name: "rocpd_kernel_dispatch",
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER,
            "agent_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL,
            "dispatch_id" INTEGER NOT NULL, "queue_id" INTEGER NOT NULL,
            "stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL,
            "private_segment_size" INTEGER, "group_segment_size" INTEGER,
            "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL,
            "workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL,
            "grid_size_y" INTEGER NOT NULL, "grid_size_z" INTEGER NOT NULL,
            "region_name_id" INTEGER, "event_id" INTEGER,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("kernel_id", SYMBOL),
            ("queue_id", QUEUE),
            ("stream_id", STREAM),
            ("region_name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: "rocpd_memory_copy",
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER,
            "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL,
            "dst_agent_id" INTEGER, "dst_address" INTEGER, "src_agent_id" INTEGER,
            "src_address" INTEGER, "size" INTEGER NOT NULL, "queue_id" INTEGER,
            "stream_id" INTEGER, "region_name_id" INTEGER, "event_id" INTEGER,
            "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("name_id", STRING),
            ("dst_agent_id", AGENT),
            ("src_agent_id", AGENT),
            ("stream_id", STREAM),
            ("queue_id", QUEUE),
            ("region_name_id", STRING),
            ("event_id", EVENT),
        ],
    },
    Table {
        name: "rocpd_memory_allocate",
        columns: r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER,
            "agent_id" INTEGER,
            "type" TEXT CHECK ("type" IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')),
            "level" TEXT CHECK ("level" IN ('REAL', 'VIRTUAL', 'SCRATCH')),
            "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "address" INTEGER,
            "size" INTEGER NOT NULL, "queue_id" INTEGER, "stream_id" INTEGER,
            "event_id" INTEGER, "extdata" JSONB NOT NULL DEFAULT '{}'"#,
        keys: &[
            ("nid", NODE),
            ("pid", PROCESS),
            ("tid", THREAD),
            ("agent_id", AGENT),
            ("stream_id", STREAM),
            ("queue_id", QUEUE),
            ("event_id", EVENT),
        ],
    },
];

/// The metadata table, which has no `guid` column.
const METADATA: &str = "rocpd_metadata";

/// The schema version written to the metadata.
pub(crate) const SCHEMA_VERSION: &str = "3";

/// The tables describing a process (few rows, each built from what the records name), as
/// opposed to its events and the rows hanging off them.
pub(crate) const CATALOG: [&str; 9] = [
    PROCESS,
    THREAD,
    AGENT,
    QUEUE,
    STREAM,
    PMC,
    CODE_OBJECT,
    SYMBOL,
    TRACK,
];

/// The base names of every table, i.e. of the plain views readers select from.
pub(crate) fn base_names() -> impl Iterator<Item = &'static str> {
    std::iter::once(METADATA).chain(TABLES.iter().map(|t| t.name))
}

/// Creates one process's tables (names ending in `suffix`, rows defaulting to `guid`) and
/// fills its metadata.
pub(crate) fn create_tables(conn: &Connection, suffix: &str, guid: &str) -> rusqlite::Result<()> {
    let mut sql = format!(
        "CREATE TABLE \"{METADATA}{suffix}\" (\"id\" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \
         \"tag\" TEXT NOT NULL, \"value\" TEXT NOT NULL);\n"
    );
    for t in TABLES {
        sql.push_str(&format!(
            "CREATE TABLE \"{}{suffix}\" (\"id\" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \
             \"guid\" TEXT NOT NULL DEFAULT '{guid}', {}",
            t.name, t.columns
        ));
        for (column, target) in t.keys {
            sql.push_str(&format!(
                ", FOREIGN KEY (\"{column}\") REFERENCES \"{target}{suffix}\" (\"id\") ON UPDATE CASCADE"
            ));
        }
        sql.push_str(");\n");
    }
    conn.execute_batch(&sql)?;
    let mut meta = conn.prepare(&format!(
        "INSERT INTO \"{METADATA}{suffix}\" (\"tag\", \"value\") VALUES (?1, ?2)"
    ))?;
    for (tag, value) in [
        ("schema_version", SCHEMA_VERSION),
        ("uuid", suffix),
        ("guid", guid),
    ] {
        meta.execute([tag, value])?;
    }
    Ok(())
}

/// Creates the plain views: `rocpd_<name>` selects every row of that table of every process
/// (`suffixes`, in the order the processes were written).
pub(crate) fn create_plain_views(conn: &Connection, suffixes: &[String]) -> rusqlite::Result<()> {
    let mut sql = String::new();
    for base in base_names() {
        let selects: Vec<String> = suffixes
            .iter()
            .map(|s| format!("SELECT * FROM \"{base}{s}\""))
            .collect();
        sql.push_str(&format!(
            "CREATE VIEW \"{base}\" AS {};\n",
            selects.join(" UNION ALL ")
        ));
    }
    conn.execute_batch(&sql)
}
