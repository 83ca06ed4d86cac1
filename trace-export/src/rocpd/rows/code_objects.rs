//! `rocpd_info_code_object`: one row per code object the process loaded, as upstream's writer
//! fills it (id = the code-object id, the agent's node id, URI, load base, size and delta, the
//! load record's JSON in `extdata`; upstream leaves `storage_type` empty), and the row a
//! kernel symbol of no known code object names: id 0, rocprofiler's "no code object"
//! (`ROCPROFILER_CODE_OBJECT_ID_NONE`), written only when some symbol needs it.

use super::context::{Process, int};
use crate::code_objects::code_objects;
use rusqlite::params;
use std::collections::HashSet;

/// The ids of the code objects [`write_code_objects`] writes (besides 0).
pub(super) fn known_ids(p: &Process<'_, '_>) -> HashSet<u64> {
    code_objects(p.v.trace)
        .iter()
        .map(|c| c.load.code_object_id)
        .collect()
}

/// Writes the code objects (and first the "no code object" row when `need_none`).
pub(super) fn write_code_objects(p: &Process<'_, '_>, need_none: bool) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"agent_id\", \"uri\", \"load_base\", \
         \"load_size\", \"load_delta\", \"extdata\") \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        p.table("rocpd_info_code_object")
    ))?;
    if need_none {
        // First, so the table fills in id order.
        conn.execute(
            &format!(
                "INSERT INTO {} (\"id\", \"nid\", \"pid\") VALUES (0, ?1, ?2)",
                p.table("rocpd_info_code_object")
            ),
            params![nid, pid],
        )?;
    }
    for c in code_objects(v.trace) {
        let l = &c.load;
        let uri = v.string(l.uri);
        let mut extdata = serde_json::json!({
            "size": 88,
            "code_object_id": l.code_object_id,
            "agent_id": { "handle": u64::from(l.agent_node_id) + 1 },
            "uri": uri,
            "load_base": l.load_base,
            "load_size": l.load_size,
            "load_delta": l.load_delta as i64,
            "storage_type": l.storage_type,
        });
        if l.storage_type == 2 {
            extdata["memory_base"] = l.memory_base.into();
            extdata["memory_size"] = l.memory_size.into();
        }
        // The agent column names an agent row; a node the process does not know is left out.
        let agent = v.agent(l.agent_node_id).map(|a| a.node_id);
        insert.execute(params![
            int(l.code_object_id),
            nid,
            pid,
            agent,
            uri,
            int(l.load_base),
            int(l.load_size),
            l.load_delta as i64,
            extdata.to_string(),
        ])?;
    }
    Ok(())
}
