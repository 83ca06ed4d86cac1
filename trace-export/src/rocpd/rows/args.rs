//! `rocpd_arg`: one row per argument of every HIP call whose arguments were captured, naming the
//! call's event, as upstream's writer fills it (position, the type demangled, name, value).

use super::context::{Process, api_pass};
use super::events::Events;
use rusqlite::params;

/// Writes the arguments of the process's HIP calls (events 1..=`hip_calls`, in the order the
/// events were numbered).
pub(super) fn write_args(p: &Process<'_, '_>, events: &Events<'_>) -> rusqlite::Result<()> {
    let &Process { conn, v, .. } = p;
    if v.trace.api_args.is_empty() || events.hip_calls == 0 {
        return Ok(());
    }
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {} (\"event_id\", \"position\", \"type\", \"name\", \"value\") \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        p.table("rocpd_arg")
    ))?;
    let hip = v.api().filter(|a| api_pass(a.domain) == Some(0));
    for (k, a) in hip.enumerate() {
        let Some(d) = crate::args::decoded(v, &a.record) else {
            continue;
        };
        for arg in &d.args {
            insert.execute(params![
                k as i64 + 1,
                arg.position,
                arg.type_name,
                arg.name,
                arg.value
            ])?;
        }
    }
    Ok(())
}
