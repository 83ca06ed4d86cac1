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
}

/// A sequence being written to `out`.
pub(super) struct Sequence<'w, W: Write> {
    out: &'w mut W,
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
    pub fn start(out: &'w mut W, id: u32, ts: u64, default_track: u64) -> io::Result<Self> {
        let mut seq = Sequence {
            out,
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

    /// Writes a `TYPE_SLICE_BEGIN` event.
    pub fn begin(&mut self, b: &Begin<'_>) -> io::Result<()> {
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
        self.emit_event()
    }

    /// Writes a `TYPE_SLICE_END` event.
    pub fn end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        self.bare_event(ts, track, TYPE_SLICE_END, None)
    }

    /// Writes a `TYPE_COUNTER` event.
    pub fn counter(&mut self, ts: u64, track: u64, value: CounterValue) -> io::Result<()> {
        self.bare_event(ts, track, TYPE_COUNTER, Some(value))
    }

    /// An event without name, category, annotations or flows: the reused event's vectors are
    /// set aside (not dropped) while it is written.
    fn bare_event(
        &mut self,
        ts: u64,
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
        let written = self.emit_event();
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
    fn emit_event(&mut self) -> io::Result<()> {
        use prost::Message as _;
        let bytes = self.packet.track_event.get_or_insert_default();
        bytes.clear();
        self.event.encode(bytes).map_err(io::Error::other)?;
        let unused = self.packet.interned_data.take_if(|d| d.is_empty());
        let written = encode(&self.packet, &mut self.buf);
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
