//! One writer sequence: packets encoded one at a time into a reused buffer and streamed to the
//! output, with the sequence's interning tables (categories, event names, debug-annotation
//! names) defined on the first packet that uses each entry.

use super::proto::*;
use std::collections::HashMap;
use std::io::{self, Write};

/// The track-event categories, as upstream names them; a category's interned id is its
/// position + 1.
pub(super) const CATEGORIES: [&str; 14] = [
    "hsa_api",
    "hip_api",
    "marker_api",
    "rccl_api",
    "openmp",
    "kernel_dispatch",
    "memory_copy",
    "memory_allocation",
    "rocdecode_api",
    "rocjpeg_api",
    "counter_collection",
    "kfd_events",
    "scratch_memory",
    "none",
];

/// A category (an index into [`CATEGORIES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Category {
    HsaApi = 0,
    HipApi = 1,
    MarkerApi = 2,
    KernelDispatch = 5,
    MemoryCopy = 6,
}

/// The debug-annotation names used (interned id = position + 1).
pub(super) const ANNOTATIONS: [&str; 23] = [
    "begin_ns",
    "end_ns",
    "delta_ns",
    "tid",
    "kind",
    "operation",
    "corr_id",
    "ancestor_id",
    "stream_ID",
    "src_agent",
    "dst_agent",
    "copy_bytes",
    "agent",
    "agent_type",
    "queue",
    "kernel_id",
    "Scratch_Size",
    "LDS_Block_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "workgroup_size",
    "grid_size",
];

/// A debug annotation's name (an index into [`ANNOTATIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs, non_camel_case_types)]
pub(super) enum Ann {
    begin_ns,
    end_ns,
    delta_ns,
    tid,
    kind,
    operation,
    corr_id,
    ancestor_id,
    stream_ID,
    src_agent,
    dst_agent,
    copy_bytes,
    agent,
    agent_type,
    queue,
    kernel_id,
    Scratch_Size,
    LDS_Block_Size,
    VGPR_Count,
    Accum_VGPR_Count,
    SGPR_Count,
    workgroup_size,
    grid_size,
}

/// A debug annotation's value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Value<'a> {
    /// An unsigned integer (`uint_value`).
    U(u64),
    /// A string (`string_value`).
    S(&'a str),
}

/// One slice's start: what a `TYPE_SLICE_BEGIN` event carries.
pub(super) struct Begin<'a> {
    /// When (ns, BOOTTIME-declared host timeline).
    pub ts: u64,
    /// On which track.
    pub track: u64,
    /// Its category.
    pub category: Category,
    /// Its interned name (from [`Sequence::intern`]).
    pub name_iid: u64,
    /// The flow it belongs to, if any.
    pub flow: Option<u64>,
    /// Its debug annotations, in order.
    pub annotations: &'a [(Ann, Value<'a>)],
    /// String annotations named inline, after those (a HIP call's arguments: name, value).
    pub named: &'a [(&'a str, &'a str)],
}

/// Time buckets of the size accounting ([`Budget`]).
const BUCKETS: usize = 4096;

/// The trace's size limit (`--perfetto-buffer-size`): what the events of a first, complete
/// pass weighed per time bucket, and for a second pass the time window of the events kept.
///
/// An event is weighed under its *key*: a slice's begin and end under the begin's time, a
/// counter value under its own. Descriptors, the sequence's first packet and interned
/// definitions are fixed costs, always written. A slice whose begin falls outside the window
/// is left out whole (its end too), so every kept slice is complete.
#[derive(Debug)]
pub(super) struct Budget {
    /// The first and last time of the run (the buckets' range).
    span: (u64, u64),
    /// Event bytes per time bucket.
    buckets: Vec<u64>,
    /// Bytes always written.
    fixed: u64,
    /// Keep only events whose key is in `[from, to)` (`None`: keep all).
    window: Option<(u64, u64)>,
    /// Slices and counter values left out by the window.
    pub dropped_slices: u64,
    pub dropped_counters: u64,
    /// Per track: the open slices' keys and whether each was kept.
    open: HashMap<u64, Vec<(u64, bool)>>,
}

impl Budget {
    /// Accounting over the run's time span `span`, keeping everything.
    pub fn new(span: (u64, u64)) -> Self {
        Budget {
            span: (span.0, span.1.max(span.0)),
            buckets: vec![0; BUCKETS],
            fixed: 0,
            window: None,
            dropped_slices: 0,
            dropped_counters: 0,
            open: HashMap::new(),
        }
    }

    fn width(&self) -> u128 {
        u128::from(self.span.1 - self.span.0) + 1
    }

    fn bucket(&self, key: u64) -> usize {
        let k = key.clamp(self.span.0, self.span.1) - self.span.0;
        (u128::from(k) * BUCKETS as u128 / self.width()) as usize
    }

    /// The first time of bucket `k` (`BUCKETS`: past the end).
    fn boundary(&self, k: usize) -> u64 {
        let w = self.width();
        let off = (k as u128 * w).div_ceil(BUCKETS as u128);
        self.span
            .0
            .saturating_add(u64::try_from(off).unwrap_or(u64::MAX))
    }

    fn keeps(&self, key: u64) -> bool {
        self.window.is_none_or(|(from, to)| from <= key && key < to)
    }

    fn weigh(&mut self, key: u64, bytes: u64) {
        let b = self.bucket(key);
        self.buckets[b] += bytes;
    }

    fn weigh_fixed(&mut self, bytes: u64) {
        self.fixed += bytes;
    }

    /// Every byte written: the fixed costs and the events'.
    pub fn written(&self) -> u64 {
        self.fixed + self.buckets.iter().sum::<u64>()
    }

    /// After a complete pass that wrote more than `limit` bytes: the accounting for a second
    /// pass that keeps the earliest events (`keep_latest` false) or the latest ones that fit.
    pub fn limited(&self, limit: u64, keep_latest: bool) -> Budget {
        // A little room for interned definitions moving to a later event.
        let room = limit.saturating_sub(self.fixed).saturating_sub(256);
        let mut next = Budget::new(self.span);
        let mut sum = 0u64;
        next.window = Some(if keep_latest {
            let mut k = BUCKETS;
            while k > 0 && sum + self.buckets[k - 1] <= room {
                sum += self.buckets[k - 1];
                k -= 1;
            }
            (self.boundary(k), u64::MAX)
        } else {
            let mut k = 0;
            while k < BUCKETS && sum + self.buckets[k] <= room {
                sum += self.buckets[k];
                k += 1;
            }
            (
                0,
                if k == BUCKETS {
                    u64::MAX
                } else {
                    self.boundary(k)
                },
            )
        });
        next
    }
}

/// A sequence being written to `out`.
pub(super) struct Sequence<'w, W: Write> {
    out: &'w mut W,
    /// The size accounting and the window of events written.
    budget: &'w mut Budget,
    id: u32,
    /// The track of events that name none (the sequence default).
    default_track: u64,
    /// The encoded packet (reused).
    buf: Vec<u8>,
    /// The track event, reused from event to event (its vectors keep their capacity, its
    /// string annotations their allocation).
    event: TrackEvent,
    /// The packet around it (reused): the encoded event, and in `interned_data` the
    /// definitions the next event must carry.
    packet: TrackEventPacket,
    /// Bit `k`: category `k` is defined on this sequence.
    categories_defined: u32,
    /// Bit `k`: annotation name `k` is defined.
    annotations_defined: u32,
    /// Event names defined on this sequence, and the next free id.
    names: HashMap<String, u64>,
    next_name: u64,
}

/// The clock every timestamp is declared in.
pub(super) const CLOCK: u32 = CLOCK_BOOTTIME;

impl<'w, W: Write> Sequence<'w, W> {
    /// Starts sequence `id` (non-zero) at `ts`: the first packet clears the incremental state
    /// and sets the sequence's defaults (clock 64, `default_track`) and its clock snapshot
    /// (the declared clock and clock 64, incremental, both at `ts`).
    pub fn start(
        out: &'w mut W,
        budget: &'w mut Budget,
        id: u32,
        ts: u64,
        default_track: u64,
    ) -> io::Result<Self> {
        let mut seq = Sequence {
            out,
            budget,
            id,
            default_track,
            buf: Vec::with_capacity(256),
            event: TrackEvent::default(),
            packet: TrackEventPacket {
                timestamp: None,
                timestamp_clock_id: Some(CLOCK),
                trusted_packet_sequence_id: Some(id),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                interned_data: Some(InternedData::default()),
                track_event: Some(Vec::with_capacity(256)),
            },
            categories_defined: 0,
            annotations_defined: 0,
            names: HashMap::new(),
            next_name: 1,
        };
        let first = TracePacket {
            timestamp: Some(ts),
            timestamp_clock_id: Some(CLOCK),
            trusted_packet_sequence_id: Some(id),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            first_packet_on_sequence: Some(true),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(CLOCK_INCREMENTAL),
                track_event_defaults: Some(TrackEventDefaults {
                    track_uuid: Some(default_track),
                }),
            }),
            data: Some(Data::ClockSnapshot(ClockSnapshot {
                clocks: vec![
                    Clock {
                        clock_id: Some(CLOCK),
                        timestamp: Some(ts),
                        ..Default::default()
                    },
                    Clock {
                        clock_id: Some(CLOCK_INCREMENTAL),
                        timestamp: Some(ts),
                        is_incremental: Some(true),
                        unit_multiplier_ns: None,
                    },
                ],
                primary_trace_clock: None,
            })),
            ..Default::default()
        };
        seq.emit_packet(&first)?;
        Ok(seq)
    }

    /// Writes a track descriptor (timestamped `ts`).
    pub fn descriptor(&mut self, ts: u64, track: TrackDescriptor) -> io::Result<()> {
        let packet = TracePacket {
            timestamp: Some(ts),
            timestamp_clock_id: Some(CLOCK),
            trusted_packet_sequence_id: Some(self.id),
            data: Some(Data::TrackDescriptor(track)),
            ..Default::default()
        };
        self.emit_packet(&packet)
    }

    /// The interned id of an event name, defined with the next event if it is new.
    pub fn intern(&mut self, name: &str) -> u64 {
        if let Some(&iid) = self.names.get(name) {
            return iid;
        }
        let iid = self.next_name;
        self.next_name += 1;
        self.names.insert(name.to_owned(), iid);
        self.pending().event_names.push(InternedString {
            iid: Some(iid),
            name: Some(name.to_owned()),
        });
        iid
    }

    /// Writes a `TYPE_SLICE_BEGIN` event (or leaves the slice out, if the budget's window
    /// does not hold its start).
    pub fn begin(&mut self, b: &Begin<'_>) -> io::Result<()> {
        let kept = self.budget.keeps(b.ts);
        self.budget
            .open
            .entry(b.track)
            .or_default()
            .push((b.ts, kept));
        if !kept {
            self.budget.dropped_slices += 1;
            return Ok(());
        }
        let cat = b.category as usize;
        if self.categories_defined & (1 << cat) == 0 {
            self.categories_defined |= 1 << cat;
            self.pending().event_categories.push(InternedString {
                iid: Some(cat as u64 + 1),
                name: Some(CATEGORIES[cat].to_owned()),
            });
        }
        for (ann, _) in b.annotations {
            let k = *ann as usize;
            if self.annotations_defined & (1 << k) == 0 {
                self.annotations_defined |= 1 << k;
                self.pending().debug_annotation_names.push(InternedString {
                    iid: Some(k as u64 + 1),
                    name: Some(ANNOTATIONS[k].to_owned()),
                });
            }
        }
        self.packet.timestamp = Some(b.ts);
        let te = &mut self.event;
        te.r#type = Some(TYPE_SLICE_BEGIN);
        te.track_uuid = (b.track != self.default_track).then_some(b.track);
        te.category_iids.clear();
        te.category_iids.push(cat as u64 + 1);
        te.name_field = Some(EventNameField::NameIid(b.name_iid));
        te.flow_ids.clear();
        te.flow_ids.extend(b.flow);
        te.counter_value_field = None;
        let anns = &mut te.debug_annotations;
        anns.truncate(b.annotations.len());
        for (i, (ann, value)) in b.annotations.iter().enumerate() {
            if i == anns.len() {
                anns.push(DebugAnnotation::default());
            }
            let a = &mut anns[i];
            a.name_field = Some(AnnotationName::NameIid(*ann as u64 + 1));
            match (value, &mut a.value) {
                (Value::U(v), slot) => *slot = Some(AnnotationValue::Uint(*v)),
                (Value::S(s), Some(AnnotationValue::String(old))) => {
                    old.clear();
                    old.push_str(s);
                }
                (Value::S(s), slot) => *slot = Some(AnnotationValue::String((*s).to_owned())),
            }
        }
        for (name, value) in b.named {
            anns.push(DebugAnnotation {
                name_field: Some(AnnotationName::Name((*name).to_owned())),
                value: Some(AnnotationValue::String((*value).to_owned())),
            });
        }
        self.emit_event(b.ts)
    }

    /// Writes a `TYPE_SLICE_END` event (the end of the track's innermost open slice; left out
    /// with it).
    pub fn end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let opened = self.budget.open.get_mut(&track).and_then(Vec::pop);
        let (key, kept) = opened.unwrap_or((ts, self.budget.keeps(ts)));
        if !kept {
            return Ok(());
        }
        self.bare_event(ts, key, track, TYPE_SLICE_END, None)
    }

    /// Writes a `TYPE_COUNTER` event (or leaves it out, outside the budget's window).
    pub fn counter(&mut self, ts: u64, track: u64, value: CounterValue) -> io::Result<()> {
        if !self.budget.keeps(ts) {
            self.budget.dropped_counters += 1;
            return Ok(());
        }
        self.bare_event(ts, ts, track, TYPE_COUNTER, Some(value))
    }

    /// An event without name, category, annotations or flows: the reused event's vectors are
    /// set aside (not dropped) while it is written.
    fn bare_event(
        &mut self,
        ts: u64,
        key: u64,
        track: u64,
        kind: i32,
        value: Option<CounterValue>,
    ) -> io::Result<()> {
        self.packet.timestamp = Some(ts);
        let te = &mut self.event;
        let anns = std::mem::take(&mut te.debug_annotations);
        let cats = std::mem::take(&mut te.category_iids);
        let flows = std::mem::take(&mut te.flow_ids);
        te.name_field = None;
        te.r#type = Some(kind);
        te.track_uuid = (track != self.default_track).then_some(track);
        te.counter_value_field = value;
        let written = self.emit_event(key);
        let te = &mut self.event;
        te.debug_annotations = anns;
        te.category_iids = cats;
        te.flow_ids = flows;
        written
    }

    /// The definitions the next event carries.
    fn pending(&mut self) -> &mut InternedData {
        self.packet.interned_data.get_or_insert_default()
    }

    /// Writes the event in its packet: with the pending definitions if there are any (then
    /// cleared), without the field otherwise.
    fn emit_event(&mut self, key: u64) -> io::Result<()> {
        use prost::Message as _;
        let bytes = self.packet.track_event.get_or_insert_default();
        bytes.clear();
        self.event.encode(bytes).map_err(io::Error::other)?;
        let unused = self.packet.interned_data.take_if(|d| d.is_empty());
        // Interned definitions are a fixed cost (a later event carries them if this one is
        // left out): the tag and length around them, and their bytes.
        let interned = self
            .packet
            .interned_data
            .as_ref()
            .map_or(0, |d| d.encoded_len() as u64 + 4);
        let written = encode(&self.packet, &mut self.buf);
        let size = self.buf.len() as u64;
        self.budget.weigh_fixed(interned.min(size));
        self.budget.weigh(key, size.saturating_sub(interned));
        match unused {
            Some(empty) => self.packet.interned_data = Some(empty),
            None => {
                if let Some(d) = &mut self.packet.interned_data {
                    d.clear();
                }
            }
        }
        written?;
        self.out.write_all(&self.buf)
    }

    fn emit_packet(&mut self, packet: &TracePacket) -> io::Result<()> {
        encode(packet, &mut self.buf)?;
        self.budget.weigh_fixed(self.buf.len() as u64);
        self.out.write_all(&self.buf)
    }
}

/// Encodes `packet` into `buf` (cleared first) as one `Trace.packet` field.
fn encode(packet: &impl prost::Message, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    // Field 1, wire type 2 (length-delimited).
    buf.push((TRACE_PACKET_FIELD << 3 | 2) as u8);
    packet
        .encode_length_delimited(buf)
        .map_err(io::Error::other)
}
