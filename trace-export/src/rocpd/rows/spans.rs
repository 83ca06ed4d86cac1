//! The regions and samples of one process (`rocpd_region`, `rocpd_sample`) and the tracks the
//! samples lie on (`rocpd_track`): a call or marker with a duration is a region, a zero-length
//! one a sample on the track named after its category on its thread.

use super::context::{OpTable, Process, Strings, api_pass, int, marker_name};
use super::events::Events;
use crate::rocpd::batch::Batch;
use rusqlite::{Statement, params};
use std::collections::HashMap;

/// Writes the regions and samples of the API calls, in id (time) order, then of the markers.
pub(super) fn write_regions_and_samples(
    p: &Process<'_, '_>,
    strings: &Strings,
    events: &Events<'_>,
) -> rusqlite::Result<()> {
    let &Process {
        conn, v, nid, pid, ..
    } = p;
    let mut spans = Spans {
        regions: p.batch(
            "rocpd_region",
            "\"id\", \"nid\", \"pid\", \"tid\", \"start\", \"end\", \"name_id\", \"event_id\"",
            &format!("(?, {nid}, {pid}, ?, ?, ?, ?, ?)"),
        )?,
        samples: p.batch(
            "rocpd_sample",
            "\"id\", \"track_id\", \"timestamp\", \"event_id\"",
            "(?, ?, ?, ?)",
        )?,
        track: conn.prepare(&format!(
            "INSERT INTO {} (\"id\", \"nid\", \"pid\", \"tid\", \"name_id\") \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            p.table("rocpd_track")
        ))?,
        tracks: HashMap::new(),
        nid,
        pid,
    };
    let mut names = OpTable::default();
    let (mut hip_seen, mut hsa_seen) = (0i64, 0i64);
    for a in v.api() {
        let event = match api_pass(a.domain) {
            Some(0) => {
                hip_seen += 1;
                hip_seen
            }
            Some(_) => {
                hsa_seen += 1;
                events.hip_calls + hsa_seen
            }
            None => continue,
        };
        let r = &a.record;
        let name = match names.get(r) {
            Some(id) => id,
            None => {
                let id = strings.id(&v.api_name(&a));
                names.set(r, id);
                id
            }
        };
        let category = events.categories[usize::from(a.domain as u8)];
        spans.add(
            int(a.id),
            r.thread_id,
            (r.start, r.end),
            name,
            category,
            event,
        )?;
    }
    for (k, m) in v.markers.iter().enumerate() {
        let id = int(v.marker_ids[k]);
        let name = strings.id(marker_name(m.kind));
        let event = events.first_marker + k as i64;
        spans.add(
            id,
            m.thread_id,
            (m.start, m.end),
            name,
            events.marker_category,
            event,
        )?;
    }
    spans.regions.flush()?;
    spans.samples.flush()
}

/// The regions and samples of calls and markers, and the tracks the samples lie on.
struct Spans<'c> {
    regions: Batch<'c>,
    samples: Batch<'c>,
    track: Statement<'c>,
    tracks: HashMap<(u32, i64), i64>,
    nid: i64,
    pid: i64,
}

impl Spans<'_> {
    /// Buffers the region of a call (`start != end`) or, for a zero-length one, a sample on
    /// the track named after its category on its thread.
    fn add(
        &mut self,
        id: i64,
        tid: u32,
        (start, end): (u64, u64),
        name: i64,
        category: i64,
        event: i64,
    ) -> rusqlite::Result<()> {
        if start != end {
            return self.regions.push(&[
                id.into(),
                tid.into(),
                int(start).into(),
                int(end).into(),
                name.into(),
                event.into(),
            ]);
        }
        let track = match self.tracks.get(&(tid, category)) {
            Some(&t) => t,
            None => {
                let t = self.tracks.len() as i64 + 1;
                self.track
                    .execute(params![t, self.nid, self.pid, tid, category])?;
                self.tracks.insert((tid, category), t);
                t
            }
        };
        self.samples
            .push(&[id.into(), track.into(), int(start).into(), event.into()])
    }
}
