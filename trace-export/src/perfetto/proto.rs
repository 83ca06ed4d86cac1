//! The part of Perfetto's trace format (`protos/perfetto/trace/**.proto`) this writer uses,
//! declared for `prost` with the official field numbers and wire types.
//!
//! Perfetto's protos are proto2: a repeated scalar is *not* packed unless the `.proto` says so,
//! and Perfetto's own decoders read only the form the `.proto` declares, so every repeated
//! scalar here is `packed = "false"`. Enums are carried as their `int32` values (same wire
//! type); the values used are the constants below. A one-member `oneof` of the original (such
//! as `optional_trusted_packet_sequence_id`) is declared as the plain optional field it
//! encodes as. Fields this writer never sets are left out; a decoder of these types skips
//! them.
//!
//! The messages are public so that tests can decode a written file with them (a second
//! judge beside Perfetto's own Python classes).

/// `Trace`: the whole file, a sequence of `packet` fields (each one length-delimited field 1).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// `packet` = 1.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `Trace.packet`'s field number: the writer streams each packet as this field.
pub const TRACE_PACKET_FIELD: u32 = 1;

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `BuiltinClock.BUILTIN_CLOCK_MONOTONIC`.
pub const CLOCK_MONOTONIC: u32 = 3;
/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`.
pub const CLOCK_BOOTTIME: u32 = 6;
/// The first sequence-scoped clock id (64..127): the Perfetto SDK's incremental clock.
pub const CLOCK_INCREMENTAL: u32 = 64;

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `CounterDescriptor.Unit.UNIT_COUNT`.
pub const UNIT_COUNT: i32 = 2;
/// `CounterDescriptor.Unit.UNIT_SIZE_BYTES`.
pub const UNIT_SIZE_BYTES: i32 = 3;

/// `TracePacket` (trace_packet.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// `timestamp` = 8, in the clock `timestamp_clock_id` names.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `trusted_packet_sequence_id` = 10 (the only member of a `oneof`).
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `interned_data` = 12.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `sequence_flags` = 13 (`SEQ_*`).
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `timestamp_clock_id` = 58.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `trace_packet_defaults` = 59.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// `first_packet_on_sequence` = 87.
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    /// The `data` oneof: what the packet carries.
    #[prost(oneof = "Data", tags = "6, 11, 60")]
    pub data: Option<Data>,
}

/// `TracePacket.data`, the members used.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// `clock_snapshot` = 6.
    #[prost(message, tag = "6")]
    ClockSnapshot(ClockSnapshot),
    /// `track_event` = 11.
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    /// `track_descriptor` = 60.
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
}

/// A [`TracePacket`] that carries a track event, as the writer streams it: the same fields and
/// numbers, with `track_event` (11) already encoded. An embedded message and a `bytes` field
/// are the same length-delimited field on the wire, so this decodes as a `TracePacket`; the
/// writer encodes the event once into these bytes instead of having every enclosing message
/// measure the event's annotations again.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventPacket {
    /// `timestamp` = 8.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `trusted_packet_sequence_id` = 10.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `track_event` = 11: an encoded [`TrackEvent`].
    #[prost(bytes = "vec", optional, tag = "11")]
    pub track_event: Option<Vec<u8>>,
    /// `interned_data` = 12.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `sequence_flags` = 13.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `timestamp_clock_id` = 58.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
}

/// `TracePacketDefaults` (trace_packet_defaults.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// `track_event_defaults` = 11.
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
    /// `timestamp_clock_id` = 58.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
}

/// `TrackEventDefaults` (track_event.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    /// `track_uuid` = 11.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// `ClockSnapshot` (clock_snapshot.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// `clocks` = 1.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `primary_trace_clock` = 2 (a `BuiltinClock`).
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// `clock_id` = 1.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// `timestamp` = 2.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// `is_incremental` = 3.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    /// `unit_multiplier_ns` = 4.
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}

/// `TrackDescriptor` (track_descriptor.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// `uuid` = 1.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `name` = 2 (a member of `static_or_dynamic_name`).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `process` = 3.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `thread` = 4.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `parent_uuid` = 5.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `counter` = 8: the track is a counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor` (process_descriptor.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// `pid` = 1.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `cmdline` = 2.
    #[prost(string, repeated, tag = "2")]
    pub cmdline: Vec<String>,
    /// `process_name` = 6.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `ThreadDescriptor` (thread_descriptor.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// `pid` = 1.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `tid` = 2 (`int64` in current protos, `int32` in older ones: the same varint for any
    /// non-negative id).
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    /// `thread_name` = 5.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor` (counter_descriptor.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `unit` = 3 (`UNIT_*`).
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    /// `unit_multiplier` = 4: what one unit of a value is worth in `unit`.
    #[prost(int64, optional, tag = "4")]
    pub unit_multiplier: Option<i64>,
}

/// `TrackEvent` (track_event.proto), the fields used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `category_iids` = 3 (interned `EventCategory` ids).
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    /// `debug_annotations` = 4.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `type` = 9 (`TYPE_*`).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `track_uuid` = 11.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// `flow_ids` = 47 (`fixed64`): a flow from the previous slice with the same id.
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// The `name_field` oneof.
    #[prost(oneof = "EventNameField", tags = "10, 23")]
    pub name_field: Option<EventNameField>,
    /// The `counter_value_field` oneof.
    #[prost(oneof = "CounterValue", tags = "30, 44")]
    pub counter_value_field: Option<CounterValue>,
}

/// `TrackEvent.name_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum EventNameField {
    /// `name_iid` = 10 (an interned `EventName`).
    #[prost(uint64, tag = "10")]
    NameIid(u64),
    /// `name` = 23.
    #[prost(string, tag = "23")]
    Name(String),
}

/// `TrackEvent.counter_value_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CounterValue {
    /// `counter_value` = 30.
    #[prost(int64, tag = "30")]
    Int(i64),
    /// `double_counter_value` = 44.
    #[prost(double, tag = "44")]
    Double(f64),
}

/// `DebugAnnotation` (debug_annotation.proto), the scalar forms.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// The `name_field` oneof.
    #[prost(oneof = "AnnotationName", tags = "1, 10")]
    pub name_field: Option<AnnotationName>,
    /// The `value` oneof.
    #[prost(oneof = "AnnotationValue", tags = "2, 3, 4, 5, 6")]
    pub value: Option<AnnotationValue>,
}

/// `DebugAnnotation.name_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationName {
    /// `name_iid` = 1 (an interned `DebugAnnotationName`).
    #[prost(uint64, tag = "1")]
    NameIid(u64),
    /// `name` = 10.
    #[prost(string, tag = "10")]
    Name(String),
}

/// `DebugAnnotation.value`, the scalar members.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationValue {
    /// `bool_value` = 2.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// `uint_value` = 3.
    #[prost(uint64, tag = "3")]
    Uint(u64),
    /// `int_value` = 4.
    #[prost(int64, tag = "4")]
    Int(i64),
    /// `double_value` = 5.
    #[prost(double, tag = "5")]
    Double(f64),
    /// `string_value` = 6.
    #[prost(string, tag = "6")]
    String(String),
}

/// `InternedData` (interned_data.proto), the tables used.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// `event_categories` = 1.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedString>,
    /// `event_names` = 2.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedString>,
    /// `debug_annotation_names` = 3.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedString>,
}

impl InternedData {
    /// Whether it defines nothing.
    pub fn is_empty(&self) -> bool {
        self.event_categories.is_empty()
            && self.event_names.is_empty()
            && self.debug_annotation_names.is_empty()
    }

    /// Empties every table, keeping their allocations.
    pub fn clear(&mut self) {
        self.event_categories.clear();
        self.event_names.clear();
        self.debug_annotation_names.clear();
    }
}

/// `EventCategory`, `EventName` and `DebugAnnotationName`: the same two fields each.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// `iid` = 1.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name` = 2.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}
