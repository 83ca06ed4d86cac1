//! `<prefix>_results.pftrace`: the run as a Perfetto trace, laid out as upstream rocprofv3's
//! writer (`generatePerfetto.cpp` over the Perfetto SDK) lays it out.
//!
//! **Sequences.** Each process is its own writer sequence (`trusted_packet_sequence_id` =
//! 1, 2, … in the order given). Its first packet clears the incremental state, sets the
//! sequence defaults (`timestamp_clock_id` 64 and the main thread's track, as the SDK does)
//! and carries a clock snapshot of the declared clock and the sequence's incremental clock 64
//! at the process's first timestamp. Every later packet names its clock explicitly, so nothing
//! depends on clock 64 or on packet order for time.
//!
//! **Clock.** Timestamps are the project's host timeline, `CLOCK_MONOTONIC` ns, written as
//! they are and declared `BOOTTIME` (6), the id upstream declares: BOOTTIME is MONOTONIC plus
//! the time the machine spent suspended since boot, so the two differ by that time only and
//! agree wherever the machine did not suspend between boot and the run. Declaring MONOTONIC
//! (3) would be exact, but a trace processor converts every clock to BOOTTIME and could relate
//! the two only through a snapshot of both taken while the records were, which the records do
//! not hold (a snapshot taken when the file is written would claim an offset it never
//! measured). As written, the file loads with the exact timestamps of the CSV, JSON and rocpd
//! files and upstream's layout.
//!
//! **Tracks**, each process with its own uuids (derived from its pid, image and log creation
//! time, so that several processes in one file never share one):
//! - the process track (`process {pid}`, plus the command line for the launched process);
//! - the main thread's track (`thread {pid, tid}`, tid = pid) and, for every other thread that
//!   made host calls, a track `THREAD <n> (<tid>)`, n = 1, 2, … in ascending tid order; both
//!   children of the process track. Host API calls and ROCTx markers are slices there (events
//!   on the main thread's track name no track: it is the sequence default, as with the SDK).
//! - for kernels and copies, `STREAM [" <stream> "] ` tracks (one per HIP stream) in a process
//!   that uses HIP (HIP calls recorded, HIP's table received, or a non-zero stream id); in
//!   other processes `COMPUTE <label> [<idx>] QUEUE [<n>] <type>` tracks for kernels (n = the
//!   queue's ordinal on its agent) and `COPY to AGENT [<logical id>] THREAD [<i>] (<type>)`
//!   tracks for copies (i = the issuing thread's ordinal in the process); with
//!   [`Options::group_by_queue`] (`--group-by-queue`) every process gets the queue and copy
//!   tracks;
//! - counter tracks `COPY BYTES to <label> [<idx>] (<type>)` (bytes in flight to an agent, in
//!   KiB: `UNIT_SIZE_BYTES`, `unit_multiplier` 1024, a value at every copy's start and end)
//!   and `<label> [<idx>] PMC <counter>` (a counter's value from its dispatch's start, 0 from
//!   its end);
//! - memory counter tracks: `ALLOCATE BYTES on <label> [<idx>] (<type>)` (bytes allocated and
//!   not yet freed on an agent, stepping at each allocation's end and at the end of the free
//!   of its address), `FREE BYTES` (bytes freed so far, process-wide: a free names no agent)
//!   and `SCRATCH MEMORY on <label> [<idx>] (<type>)` (scratch held by the agent's queues,
//!   stepping at each scratch event's end), all in bytes.
//!
//! **Slices.** Names: API = function, marker = its message, copy = `MEMORY_COPY_<DIR>`,
//! kernel = the demangled name + ` [clone .kd]` (upstream demangles the `.kd` symbol; a name
//! kept mangled by `-M` gets `.kd` appended instead). Categories and names are interned (a
//! category on each SLICE_BEGIN, none on END or COUNTER events), as are the debug-annotation
//! names; the annotations per kind are upstream's. `corr_id` and flows use the run-unique call
//! ids of [`crate::view::Api::id`]: each slice's `flow_ids` is that id XOR the process uuid, so
//! an API call and the kernel or copy it enqueued are joined by a flow. A marker has no call
//! record (the tool turns the ROCTx calls into the marker itself): it carries its own
//! correlation id, kind 32 for a range (7 for a mark), the operation of the ROCTx call that
//! opened it, and no flow. Slices are written per
//! track in nesting order (a call's END before its caller's at equal timestamps). Slices that
//! overlap without nesting on one track (a thread's calls never do; device timestamps can) are
//! clipped at the midpoint of the overlap, as upstream does for kernels; their annotations keep
//! the recorded times. Records without a start time or ending before they start are left out.
//!
//! Packets are encoded one at a time and streamed through a buffered writer into a temporary
//! file renamed over the result only when complete.

pub mod proto;
mod sequence;

use crate::Error;
use crate::view::{Api, ProcessView, RunInfo, tracing_kind};
use proto::{
    CounterDescriptor, CounterValue, ProcessDescriptor, ThreadDescriptor, TrackDescriptor,
};
use sequence::{Ann, Begin, Budget, Category, Sequence, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;
use trace_records::record::*;

/// rocprofiler's buffer-tracing kinds of the records that are not API calls.
const KIND_MARKER_CORE: u64 = 7;
const KIND_MARKER_RANGE: u64 = 32;
const KIND_MEMORY_COPY: u64 = 10;
const KIND_KERNEL_DISPATCH: u64 = 11;

/// What happens to events past `--perfetto-buffer-size`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FillPolicy {
    /// The trace keeps the earliest events; later ones are left out (upstream's default: a
    /// full in-process buffer stops taking events).
    #[default]
    Discard,
    /// The trace keeps the latest events; the earliest are left out (a ring buffer
    /// overwrites its oldest events).
    RingBuffer,
}

/// How the trace is laid out and limited (rocprofv3's `--group-by-queue` and
/// `--perfetto-buffer-size`/`--perfetto-buffer-fill-policy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Kernels on `COMPUTE … QUEUE […]` tracks and copies on `COPY to AGENT […] THREAD […]`
    /// tracks even in a process that uses HIP (which otherwise gets `STREAM` tracks).
    pub group_by_queue: bool,
    /// The most bytes the file may hold (`None`: unlimited). Upstream's in-process buffer
    /// holds the trace while the application runs; this writer writes the file after the
    /// run, so the limit is applied to the file: when the complete trace is larger, it is
    /// written again with only the events of a time window that fits — from the start with
    /// [`FillPolicy::Discard`], up to the end with [`FillPolicy::RingBuffer`]. Track
    /// descriptors and interned names are always written; a slice is kept or left out whole.
    pub buffer_bytes: Option<u64>,
    /// Which events a full buffer keeps.
    pub fill_policy: FillPolicy,
}

/// What [`write_perfetto`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// The file's size.
    pub bytes: u64,
    /// The size of the complete trace (equal to `bytes` when nothing was left out).
    pub full_bytes: u64,
    /// Slices and counter values left out by the size limit.
    pub dropped_events: u64,
    /// Of those, slices.
    pub dropped_slices: u64,
    /// Of those, counter values.
    pub dropped_counters: u64,
}

/// Writes the Perfetto file at `path` for `processes` (one file may hold several processes,
/// each kept distinct), laid out and limited by `options`; says what the size limit left out.
pub fn write_perfetto(
    path: &Path,
    run: &RunInfo,
    processes: &[ProcessView<'_>],
    options: &Options,
) -> Result<Written, Error> {
    for view in processes {
        let ids = std::iter::once(view.trace.pid).chain(view.threads.iter().copied());
        if let Some(id) = ids.into_iter().find(|&id| i32::try_from(id).is_err()) {
            return Err(Error::Format {
                path: path.to_owned(),
                message: format!(
                    "process {}: id {id} does not fit the trace format's 32-bit pid/tid",
                    view.trace.pid
                ),
            });
        }
    }
    let pids: Vec<u32> = processes.iter().map(|v| v.trace.pid).collect();
    let span = processes
        .iter()
        .map(|v| v.span)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .unwrap_or((0, 0));
    let pass = |budget: &mut Budget| {
        crate::output::write_whole(path, |out| {
            for (k, view) in processes.iter().enumerate() {
                let launched = view.trace.image == 0 && !pids.contains(&view.trace.ppid);
                let command = if launched { &run.command[..] } else { &[] };
                write_process(out, k, view, command, options, budget)?;
            }
            crate::view::check_all(processes).map_err(|e| io::Error::other(e.to_string()))
        })
    };
    let mut full = Budget::new(span);
    pass(&mut full)?;
    let full_bytes = full.written();
    let mut written = Written {
        bytes: full_bytes,
        full_bytes,
        ..Written::default()
    };
    if let Some(limit) = options.buffer_bytes
        && full_bytes > limit
    {
        let mut limited = full.limited(limit, options.fill_policy == FillPolicy::RingBuffer);
        pass(&mut limited)?;
        written.bytes = limited.written();
        written.dropped_slices = limited.dropped_slices;
        written.dropped_counters = limited.dropped_counters;
        written.dropped_events = limited.dropped_slices + limited.dropped_counters;
    }
    Ok(written)
}

/// A 64-bit mix (splitmix64's finalizer).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The uuids of one process's tracks.
#[derive(Clone, Copy)]
struct Uuids(u64);

impl Uuids {
    fn of(view: &ProcessView<'_>, index: usize) -> Self {
        let t = view.trace;
        let seed = mix(u64::from(t.pid) << 32 | u64::from(t.image))
            ^ mix(t.created_ns.wrapping_add(0x9e37_79b9_7f4a_7c15))
            ^ mix(index as u64 + 1);
        Uuids(mix(seed) | 1)
    }

    fn process(self) -> u64 {
        self.0
    }

    /// The uuid of track `key` of kind `kind`.
    fn track(self, kind: u8, key: u64) -> u64 {
        mix(self.0 ^ mix(u64::from(kind) << 56 ^ mix(key))) | 1
    }

    fn thread(self, tid: u32) -> u64 {
        self.track(1, tid.into())
    }

    /// A flow id: the process-scoped id of a call.
    fn flow(self, call: u64) -> u64 {
        call ^ self.0
    }
}

const TRACK_STREAM: u8 = 2;
const TRACK_QUEUE: u8 = 3;
const TRACK_COPY: u8 = 4;
const TRACK_COPY_BYTES: u8 = 5;
const TRACK_PMC: u8 = 6;
const TRACK_ALLOCATE_BYTES: u8 = 7;
const TRACK_FREE_BYTES: u8 = 8;
const TRACK_SCRATCH: u8 = 9;

/// An agent's parts in track names: its label split into name and index (`Agent 1` →
/// `Agent`, `1`) and its type (`CPU`, `GPU`, `UNK`).
struct AgentName {
    label: String,
    index: String,
    kind: &'static str,
    /// `Agent-<logical node id>` (debug annotations).
    annotation: String,
}

fn agent_name(view: &ProcessView<'_>, node_id: u32) -> AgentName {
    let label = view.labels.label(node_id);
    let (name, index) = label.rsplit_once(' ').unwrap_or((&label, ""));
    let agent = view.agent(node_id);
    AgentName {
        label: name.to_owned(),
        index: index.to_owned(),
        kind: agent.map_or("UNK", |a| a.kind.csv_name()),
        annotation: format!("Agent-{}", agent.map_or(node_id, |a| a.logical_node_id)),
    }
}

fn io_err(e: std::fmt::Error) -> io::Error {
    io::Error::other(e)
}

fn write_process<W: Write>(
    out: &mut W,
    index: usize,
    view: &ProcessView<'_>,
    command: &[String],
    options: &Options,
    budget: &mut Budget,
) -> io::Result<()> {
    let t = view.trace;
    let uuids = Uuids::of(view, index);
    let t0 = view.span.0;
    let main_track = uuids.thread(t.pid);
    let seq_id = u32::try_from(index + 1).unwrap_or(u32::MAX);
    let mut seq = Sequence::start(out, budget, seq_id, t0, main_track)?;

    seq.descriptor(
        t0,
        TrackDescriptor {
            uuid: Some(uuids.process()),
            process: Some(ProcessDescriptor {
                pid: Some(t.pid as i32),
                cmdline: command.to_vec(),
                process_name: command
                    .first()
                    .map(|c| c.rsplit('/').next().unwrap_or(c).to_owned()),
            }),
            ..Default::default()
        },
    )?;

    write_host(&mut seq, view, uuids, t0)?;
    write_device(&mut seq, view, uuids, t0, options.group_by_queue)?;
    write_copy_bytes(&mut seq, view, uuids, t0)?;
    write_memory(&mut seq, view, uuids, t0)?;
    write_pmc(&mut seq, view, uuids, t0)?;
    Ok(())
}

/// Per-track stacks of open slices, written in nesting order.
struct Nesting {
    /// Per track slot: its uuid and the ends of its open slices, innermost last.
    stacks: Vec<(u64, Vec<u64>)>,
}

impl Nesting {
    fn new(tracks: impl IntoIterator<Item = u64>) -> Self {
        Nesting {
            stacks: tracks.into_iter().map(|u| (u, Vec::new())).collect(),
        }
    }

    /// Opens a slice `[start, end]` on track `slot` (slices must come in (start, longest
    /// first) order): closes the slices that ended by `start`, clips a slice it overlaps
    /// without nesting at the overlap's midpoint, and returns the (possibly clipped) start.
    fn open<W: Write>(
        &mut self,
        seq: &mut Sequence<'_, W>,
        slot: usize,
        start: u64,
        end: u64,
    ) -> io::Result<(u64, u64)> {
        let (track, stack) = &mut self.stacks[slot];
        let mut start = start;
        while let Some(top) = stack.last_mut() {
            if *top <= start {
                seq.end(*top, *track)?;
                stack.pop();
            } else if *top < end {
                let mid = start + (*top - start) / 2;
                *top = mid;
                start = mid;
            } else {
                break;
            }
        }
        stack.push(end);
        Ok((start, *track))
    }

    /// Closes every open slice.
    fn close_all<W: Write>(&mut self, seq: &mut Sequence<'_, W>) -> io::Result<()> {
        for (track, stack) in &mut self.stacks {
            while let Some(end) = stack.pop() {
                seq.end(end, *track)?;
            }
        }
        Ok(())
    }
}

/// Whether a record's times can be drawn.
fn drawable(start: u64, end: u64) -> bool {
    start > 0 && end >= start
}

/// A host slice: an API call or a marker (index into `view.markers`).
#[derive(Clone, Copy)]
enum Host {
    Api(Api),
    Marker(usize),
}

fn is_marker_domain(d: ApiDomain) -> bool {
    matches!(
        d,
        ApiDomain::MarkerCore | ApiDomain::MarkerControl | ApiDomain::MarkerName
    )
}

/// The host slices in (start, longest first) order, markers before calls at a tie (a range
/// encloses the calls made in it). Marker API calls are left out: the markers show them.
fn host_order<'v>(view: &'v ProcessView<'_>) -> impl Iterator<Item = (u64, u64, u32, Host)> + 'v {
    let key = |start: u64, end: u64| (start, std::cmp::Reverse(end));
    // The view streams the calls in this order already (start, the longest first).
    let api = view
        .api()
        .filter(|a| !is_marker_domain(a.domain) && drawable(a.record.start, a.record.end));
    let mut markers: Vec<usize> = (0..view.markers.len())
        .filter(|&i| drawable(view.markers[i].start, view.markers[i].end))
        .collect();
    markers.sort_by_key(|&i| key(view.markers[i].start, view.markers[i].end));
    let api = api.map(|a| {
        (
            a.record.start,
            a.record.end,
            a.record.thread_id,
            Host::Api(a),
        )
    });
    let markers = markers.into_iter().map(|i| {
        let m = view.markers[i];
        (m.start, m.end, m.thread_id, Host::Marker(i))
    });
    Merge {
        a: api.peekable(),
        b: markers.peekable(),
    }
}

/// Merges two sorted streams of slices; at a tie in (start, longest first) `b` comes first.
struct Merge<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A, B> Iterator for Merge<A, B>
where
    A: Iterator<Item = (u64, u64, u32, Host)>,
    B: Iterator<Item = (u64, u64, u32, Host)>,
{
    type Item = (u64, u64, u32, Host);

    fn next(&mut self) -> Option<Self::Item> {
        let take_b = match (self.a.peek(), self.b.peek()) {
            (Some(a), Some(b)) => (b.0, std::cmp::Reverse(b.1)) <= (a.0, std::cmp::Reverse(a.1)),
            (None, Some(_)) => true,
            _ => false,
        };
        if take_b { self.b.next() } else { self.a.next() }
    }
}

/// Host API calls and markers on their threads' tracks.
fn write_host<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
) -> io::Result<()> {
    let t = view.trace;
    let pid = t.pid;
    // Which threads have host slices (`view.threads` is ascending).
    let mut used = vec![false; view.threads.len()];
    let slot_of = |tid: u32| view.threads.binary_search(&tid).ok();
    for r in view.trace.api.iter() {
        if ApiDomain::from_u8(r.domain).is_some_and(|d| !is_marker_domain(d))
            && let Some(s) = slot_of(r.thread_id)
        {
            used[s] = true;
        }
    }
    for m in &view.markers {
        if let Some(s) = slot_of(m.thread_id) {
            used[s] = true;
        }
    }
    seq.descriptor(
        t0,
        TrackDescriptor {
            uuid: Some(uuids.thread(pid)),
            parent_uuid: Some(uuids.process()),
            thread: Some(ThreadDescriptor {
                pid: Some(pid as i32),
                tid: Some(pid.into()),
                thread_name: None,
            }),
            ..Default::default()
        },
    )?;
    let mut n = 0;
    for (slot, &tid) in view.threads.iter().enumerate() {
        if tid == pid || !used[slot] {
            continue;
        }
        n += 1;
        seq.descriptor(
            t0,
            TrackDescriptor {
                uuid: Some(uuids.thread(tid)),
                parent_uuid: Some(uuids.process()),
                name: Some(format!("THREAD {n} ({tid})")),
                ..Default::default()
            },
        )?;
    }

    let mut nesting = Nesting::new(view.threads.iter().map(|&tid| uuids.thread(tid)));
    let mut names = NameCache::default();
    let mut anns: Vec<(Ann, Value<'_>)> = Vec::with_capacity(9);
    for (start, end, tid, item) in host_order(view) {
        let Some(slot) = slot_of(tid) else { continue };
        let (ts, track) = nesting.open(seq, slot, start, end)?;
        anns.clear();
        // A HIP call's captured arguments, after upstream's annotations, named inline
        // `args.<name>` (a bare name would clash with upstream's own: `hipMemcpy` has a `kind`,
        // `__hipRegisterFunction` a `tid`).
        let decoded = match &item {
            Host::Api(a) if a.domain.is_hip() => crate::args::decoded(view, &a.record),
            _ => None,
        };
        let arg_names: Vec<String> = decoded
            .iter()
            .flat_map(|d| d.args.iter().map(|a| format!("args.{}", a.name)))
            .collect();
        let named: Vec<(&str, &str)> = decoded
            .iter()
            .flat_map(|d| d.args.iter().map(|a| a.value.as_str()))
            .zip(&arg_names)
            .map(|(value, name)| (name.as_str(), value))
            .collect();
        let (category, name_iid, flow) = match item {
            Host::Api(a) => {
                let r = a.record;
                let cached = names.api(r.domain, r.operation);
                let name_iid = match *cached {
                    0 => {
                        *cached = seq.intern(&t.operation_name(r.domain, r.operation));
                        *cached
                    }
                    iid => iid,
                };
                anns.extend([
                    (Ann::begin_ns, Value::U(r.start)),
                    (Ann::end_ns, Value::U(r.end)),
                    (Ann::delta_ns, Value::U(r.end - r.start)),
                    (Ann::tid, Value::U(r.thread_id.into())),
                    (Ann::kind, Value::U(tracing_kind(a.domain).into())),
                    (Ann::operation, Value::U(r.operation.into())),
                    (Ann::corr_id, Value::U(a.id)),
                    (Ann::ancestor_id, Value::U(a.ancestor)),
                ]);
                let category = if a.domain.is_hip() {
                    let stream = view.stream_of(r.correlation_id);
                    anns.push((Ann::stream_ID, Value::U(stream.unwrap_or(0))));
                    Category::HipApi
                } else {
                    Category::HsaApi
                };
                (category, name_iid, Some(uuids.flow(a.id)))
            }
            Host::Marker(i) => {
                let m = view.markers[i];
                let name_iid = match names.markers.get(&m.message) {
                    Some(&iid) => iid,
                    None => {
                        let iid = seq.intern(t.string(m.message));
                        names.markers.insert(m.message, iid);
                        iid
                    }
                };
                let call = view.issuing_call(m.correlation_id);
                let kind = match MarkerKind::from_u8(m.kind) {
                    Some(MarkerKind::Mark) => KIND_MARKER_CORE,
                    _ => KIND_MARKER_RANGE,
                };
                anns.extend([
                    (Ann::begin_ns, Value::U(m.start)),
                    (Ann::end_ns, Value::U(m.end)),
                    (Ann::delta_ns, Value::U(m.end - m.start)),
                    (Ann::tid, Value::U(m.thread_id.into())),
                    (Ann::kind, Value::U(kind)),
                    (
                        Ann::operation,
                        Value::U(
                            call.map_or(marker_operation(m.kind), |c| c.record.operation.into()),
                        ),
                    ),
                    (
                        Ann::corr_id,
                        Value::U(call.map_or(m.correlation_id, |c| c.id)),
                    ),
                    (Ann::ancestor_id, Value::U(call.map_or(0, |c| c.ancestor))),
                ]);
                let flow = call.map(|c| uuids.flow(c.id));
                (Category::MarkerApi, name_iid, flow)
            }
        };
        seq.begin(&Begin {
            ts,
            track,
            category,
            name_iid,
            flow,
            annotations: &anns,
            named: &named,
        })?;
    }
    nesting.close_all(seq)
}

/// The ROCTx core operation that opens a marker of `kind` (`roctxMarkA` 0, `roctxRangePushA`
/// 1, `roctxRangeStartA` 3: the table's order).
fn marker_operation(kind: u8) -> u64 {
    match MarkerKind::from_u8(kind) {
        Some(MarkerKind::Mark) | None => 0,
        Some(MarkerKind::ThreadRange) => 1,
        Some(MarkerKind::ProcessRange) => 3,
    }
}

/// Event names already interned, by what they are named after (0 = not yet).
#[derive(Default)]
struct NameCache {
    /// By domain, then operation (tables are dense and small: looked up per call).
    api: Vec<Vec<u64>>,
    markers: HashMap<StringId, u64>,
    kernels: HashMap<u64, u64>,
    /// `--kernel-rename`: by the range's message.
    regions: HashMap<StringId, u64>,
}

impl NameCache {
    fn api(&mut self, domain: u8, operation: u16) -> &mut u64 {
        let (d, op) = (usize::from(domain), usize::from(operation));
        if self.api.len() <= d {
            self.api.resize_with(d + 1, Vec::new);
        }
        let ops = &mut self.api[d];
        if ops.len() <= op {
            ops.resize(op + 1, 0);
        }
        &mut ops[op]
    }
}

/// The kernel slice's name: upstream demangles the kernel's `.kd` symbol.
fn kernel_slice_name(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else if name.starts_with("_Z") {
        format!("{name}.kd")
    } else {
        format!("{name} [clone .kd]")
    }
}

/// A device slice: a kernel dispatch or a memory copy.
#[derive(Clone, Copy)]
enum Device<'a> {
    Kernel(&'a KernelDispatchRecord),
    Copy(&'a MemoryCopyRecord),
}

/// Kernels and copies on stream tracks (or queue and copy tracks).
fn write_device<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
    group_by_queue: bool,
) -> io::Result<()> {
    use std::fmt::Write as _;
    let t = view.trace;
    let dispatches = view.dispatches.iter().filter(|d| drawable(d.start, d.end));
    let copies = view.copies.iter().filter(|c| drawable(c.start, c.end));
    let mut items: Vec<(u64, u64, Device<'_>)> = dispatches
        .map(|&d| (d.start, d.end, Device::Kernel(d)))
        .chain(copies.map(|&c| (c.start, c.end, Device::Copy(c))))
        .collect();
    if items.is_empty() {
        return Ok(());
    }
    items.sort_by_key(|&(s, e, d)| {
        let rank = match d {
            Device::Kernel(k) => k.dispatch_id,
            Device::Copy(c) => c.correlation_id,
        };
        (s, std::cmp::Reverse(e), rank)
    });

    // Stream tracks in a process that uses HIP, unless --group-by-queue asks for queues.
    let hip = !group_by_queue
        && (view.has_hip_calls
            || t.docs.received(&trace_records::docs::Runtime::Hip)
            || view.dispatches.iter().any(|d| d.stream_id != 0)
            || view.copies.iter().any(|c| c.stream_id != 0));
    // Track key → slot, in a stable order (BTreeMap) with the descriptor's name.
    let mut tracks: BTreeMap<(u8, u64, u64), String> = BTreeMap::new();
    let track_key = |d: Device<'_>| -> (u8, u64, u64) {
        match d {
            Device::Kernel(k) if hip => (TRACK_STREAM, k.stream_id, 0),
            Device::Copy(c) if hip => (TRACK_STREAM, c.stream_id, 0),
            Device::Kernel(k) => (TRACK_QUEUE, k.agent_node_id.into(), k.queue_id),
            Device::Copy(c) => {
                let thread = view.threads.binary_search(&c.thread_id).unwrap_or(0);
                (TRACK_COPY, c.dst_node_id.into(), thread as u64)
            }
        }
    };
    let mut agents: HashMap<u32, AgentName> = HashMap::new();
    for &(_, _, d) in &items {
        let nodes = match d {
            Device::Kernel(k) => [k.agent_node_id, k.agent_node_id],
            Device::Copy(c) => [c.src_node_id, c.dst_node_id],
        };
        for node in nodes {
            agents.entry(node).or_insert_with(|| agent_name(view, node));
        }
    }
    let agent = |node: u32| -> &AgentName { &agents[&node] };
    for &(_, _, d) in &items {
        let key = track_key(d);
        if tracks.contains_key(&key) {
            continue;
        }
        let mut name = String::new();
        match key {
            (TRACK_STREAM, stream, _) => write!(name, "STREAM [\" {stream} \"] "),
            (TRACK_QUEUE, node, queue) => {
                let node = node as u32;
                let ordinal = view
                    .dispatches
                    .iter()
                    .filter(|k| k.agent_node_id == node && k.queue_id < queue)
                    .map(|k| k.queue_id)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                let a = agent(node);
                write!(
                    name,
                    "COMPUTE {} [{}] QUEUE [{ordinal}] {}",
                    a.label, a.index, a.kind
                )
            }
            (_, node, thread) => {
                let node = node as u32;
                let logical = view.agent(node).map_or(node, |a| a.logical_node_id);
                let a = agent(node);
                write!(
                    name,
                    "COPY to AGENT [{logical}] THREAD [{thread}] ({})",
                    a.kind
                )
            }
        }
        .map_err(io_err)?;
        tracks.insert(key, name);
    }
    let slots: HashMap<(u8, u64, u64), usize> =
        tracks.keys().enumerate().map(|(i, &k)| (k, i)).collect();
    let uuid_of = |key: (u8, u64, u64)| uuids.track(key.0, mix(key.1) ^ key.2);
    for (&key, name) in &tracks {
        seq.descriptor(
            t0,
            TrackDescriptor {
                uuid: Some(uuid_of(key)),
                parent_uuid: Some(uuids.process()),
                name: Some(name.clone()),
                ..Default::default()
            },
        )?;
    }

    let mut nesting = Nesting::new(tracks.keys().map(|&k| uuid_of(k)));
    let mut names = NameCache::default();
    let mut copy_names: [Option<u64>; 5] = [None; 5];
    let mut text = String::new();
    for (start, end, d) in items {
        let slot = slots[&track_key(d)];
        let (ts, track) = nesting.open(seq, slot, start, end)?;
        match d {
            Device::Kernel(k) => {
                let name_iid = match crate::rename::region(view.trace, k) {
                    Some(region) => *names
                        .regions
                        .entry(k.region)
                        .or_insert_with(|| seq.intern(region)),
                    None => *names.kernels.entry(k.kernel_id).or_insert_with(|| {
                        seq.intern(&kernel_slice_name(view.kernel_name(k.kernel_id)))
                    }),
                };
                let call = view.issuing_call(k.correlation_id);
                let symbol = view.symbol(k.kernel_id);
                let of = |f: fn(&KernelSymbolRecord) -> u32| symbol.map_or(0, |s| u64::from(f(s)));
                let a = agent(k.agent_node_id);
                let product = |v: [u32; 3]| v.iter().map(|&x| u64::from(x)).product::<u64>();
                let anns = [
                    (Ann::begin_ns, Value::U(k.start)),
                    (Ann::end_ns, Value::U(k.end)),
                    (Ann::delta_ns, Value::U(k.end - k.start)),
                    (Ann::kind, Value::U(KIND_KERNEL_DISPATCH)),
                    (Ann::agent, Value::S(&a.annotation)),
                    (Ann::agent_type, Value::S(a.kind)),
                    (
                        Ann::corr_id,
                        Value::U(call.map_or(k.correlation_id, |c| c.id)),
                    ),
                    (Ann::queue, Value::U(k.queue_id.saturating_sub(1))),
                    (Ann::tid, Value::U(k.thread_id.into())),
                    (Ann::kernel_id, Value::U(k.kernel_id)),
                    (Ann::Scratch_Size, Value::U(k.private_segment_size.into())),
                    (
                        Ann::LDS_Block_Size,
                        Value::U(of(|s| s.group_segment_size).div_ceil(512) * 512),
                    ),
                    (Ann::VGPR_Count, Value::U(of(|s| s.arch_vgpr_count))),
                    (Ann::Accum_VGPR_Count, Value::U(of(|s| s.accum_vgpr_count))),
                    (Ann::SGPR_Count, Value::U(of(|s| s.sgpr_count))),
                    (Ann::workgroup_size, Value::U(product(k.workgroup))),
                    (Ann::grid_size, Value::U(product(k.grid))),
                    (Ann::stream_ID, Value::U(k.stream_id)),
                ];
                seq.begin(&Begin {
                    ts,
                    track,
                    category: Category::KernelDispatch,
                    name_iid,
                    flow: call.map(|c| uuids.flow(c.id)),
                    annotations: &anns,
                    named: &[],
                })?;
            }
            Device::Copy(c) => {
                let dir = usize::from(c.direction).min(copy_names.len() - 1);
                let name_iid = match copy_names[dir] {
                    Some(iid) => iid,
                    None => {
                        let iid = seq.intern(CopyDirection::label(c.direction));
                        copy_names[dir] = Some(iid);
                        iid
                    }
                };
                let call = view.issuing_call(c.correlation_id);
                text.clear();
                text.push_str(&agent(c.src_node_id).annotation);
                let src_len = text.len();
                text.push_str(&agent(c.dst_node_id).annotation);
                let (src, dst) = text.split_at(src_len);
                let anns = [
                    (Ann::begin_ns, Value::U(c.start)),
                    (Ann::end_ns, Value::U(c.end)),
                    (Ann::delta_ns, Value::U(c.end - c.start)),
                    (Ann::kind, Value::U(KIND_MEMORY_COPY)),
                    (Ann::operation, Value::U(c.direction.into())),
                    (Ann::src_agent, Value::S(src)),
                    (Ann::dst_agent, Value::S(dst)),
                    (Ann::copy_bytes, Value::U(c.bytes)),
                    (
                        Ann::corr_id,
                        Value::U(call.map_or(c.correlation_id, |a| a.id)),
                    ),
                    (Ann::tid, Value::U(c.thread_id.into())),
                    (Ann::stream_ID, Value::U(c.stream_id)),
                ];
                seq.begin(&Begin {
                    ts,
                    track,
                    category: Category::MemoryCopy,
                    name_iid,
                    flow: call.map(|a| uuids.flow(a.id)),
                    annotations: &anns,
                    named: &[],
                })?;
            }
        }
    }
    nesting.close_all(seq)
}

/// `COPY BYTES to <agent>` counter tracks: the bytes of copies in flight to each destination
/// agent, in KiB, at every copy's start and end.
fn write_copy_bytes<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
) -> io::Result<()> {
    // (agent, time, +bytes at a start / -bytes at an end)
    let mut steps: Vec<(u32, u64, i128)> = Vec::with_capacity(view.copies.len() * 2);
    for c in view.copies.iter().filter(|c| drawable(c.start, c.end)) {
        steps.push((c.dst_node_id, c.start, c.bytes.into()));
        steps.push((c.dst_node_id, c.end, -i128::from(c.bytes)));
    }
    write_steps(
        seq,
        view,
        uuids,
        t0,
        (TRACK_COPY_BYTES, "COPY BYTES to", Some(1024)),
        steps,
    )
}

/// A byte-counter track named `name` under the process, its values in units of
/// `unit_multiplier` bytes (`None`: bytes).
fn bytes_track<W: Write>(
    seq: &mut Sequence<'_, W>,
    uuids: Uuids,
    t0: u64,
    track: u64,
    name: String,
    unit_multiplier: Option<i64>,
) -> io::Result<()> {
    seq.descriptor(
        t0,
        TrackDescriptor {
            uuid: Some(track),
            parent_uuid: Some(uuids.process()),
            name: Some(name),
            counter: Some(CounterDescriptor {
                unit: Some(proto::UNIT_SIZE_BYTES),
                unit_multiplier,
            }),
            ..Default::default()
        },
    )
}

/// Writes one counter track per agent, `<title> <agent> [<idx>] (<type>)`, from
/// `(agent, time, delta)` steps: the running sum (in units of `unit_multiplier` bytes) at each
/// distinct time.
fn write_steps<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
    (kind, title, unit_multiplier): (u8, &str, Option<i64>),
    mut steps: Vec<(u32, u64, i128)>,
) -> io::Result<()> {
    steps.sort_unstable();
    let unit = i128::from(unit_multiplier.unwrap_or(1));
    let mut i = 0;
    while i < steps.len() {
        let node = steps[i].0;
        let a = agent_name(view, node);
        let track = uuids.track(kind, node.into());
        bytes_track(
            seq,
            uuids,
            t0,
            track,
            format!("{title} {} [{}] ({})", a.label, a.index, a.kind),
            unit_multiplier,
        )?;
        let mut held: i128 = 0;
        while i < steps.len() && steps[i].0 == node {
            let ts = steps[i].1;
            while i < steps.len() && steps[i].0 == node && steps[i].1 == ts {
                held += steps[i].2;
                i += 1;
            }
            let value = i64::try_from(held.max(0) / unit).unwrap_or(i64::MAX);
            seq.counter(ts, track, CounterValue::Int(value))?;
        }
    }
    Ok(())
}

/// The memory counter tracks: `ALLOCATE BYTES on <agent>`, `FREE BYTES` and `SCRATCH MEMORY
/// on <agent>`.
fn write_memory<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
) -> io::Result<()> {
    let t = view.trace;
    // Live allocations by address: (agent, bytes), so a free lowers its agent's track.
    let mut live: HashMap<u64, (u32, u64)> = HashMap::new();
    let mut allocated: Vec<(u32, u64, i128)> = Vec::new();
    // (time, bytes freed so far) at each free.
    let mut freed: Vec<(u64, u64)> = Vec::new();
    let mut freed_total: u64 = 0;
    for a in t.allocations.iter().filter(|a| drawable(a.start, a.end)) {
        let op = AllocationOperation::from_u8(a.operation);
        match op {
            Some(o) if o.is_allocation() && a.has_agent != 0 => {
                live.insert(a.address, (a.agent_node_id, a.size));
                allocated.push((a.agent_node_id, a.end, a.size.into()));
            }
            Some(o) if o.is_allocation() => {}
            Some(_) => {
                if let Some((node, size)) = live.remove(&a.address) {
                    allocated.push((node, a.end, -i128::from(size)));
                    freed_total = freed_total.saturating_add(size);
                }
                freed.push((a.end, freed_total));
            }
            None => {}
        }
    }
    write_steps(
        seq,
        view,
        uuids,
        t0,
        (TRACK_ALLOCATE_BYTES, "ALLOCATE BYTES on", None),
        allocated,
    )?;
    if !freed.is_empty() {
        let track = uuids.track(TRACK_FREE_BYTES, 0);
        bytes_track(seq, uuids, t0, track, "FREE BYTES".into(), None)?;
        for (ts, total) in freed {
            let bytes = i64::try_from(total).unwrap_or(i64::MAX);
            seq.counter(ts, track, CounterValue::Int(bytes))?;
        }
    }
    // Scratch held per queue: an alloc replaces the queue's area, a free or reclaim ends it.
    let mut held: HashMap<u64, (u32, u64)> = HashMap::new();
    let mut scratch: Vec<(u32, u64, i128)> = Vec::new();
    for e in t.scratch.iter().filter(|e| drawable(e.start, e.end)) {
        if let Some((node, size)) = held.remove(&e.queue_id) {
            scratch.push((node, e.end, -i128::from(size)));
        }
        if ScratchOperation::from_u8(e.operation) == Some(ScratchOperation::Alloc) {
            held.insert(e.queue_id, (e.agent_node_id, e.size));
            scratch.push((e.agent_node_id, e.end, e.size.into()));
        } else {
            scratch.push((e.agent_node_id, e.end, 0));
        }
    }
    write_steps(
        seq,
        view,
        uuids,
        t0,
        (TRACK_SCRATCH, "SCRATCH MEMORY on", None),
        scratch,
    )
}

/// `<agent> PMC <counter>` counter tracks: each counter's value over its dispatch.
fn write_pmc<W: Write>(
    seq: &mut Sequence<'_, W>,
    view: &ProcessView<'_>,
    uuids: Uuids,
    t0: u64,
) -> io::Result<()> {
    if view.counters.is_empty() {
        return Ok(());
    }
    let mut dispatches: HashMap<u64, &KernelDispatchRecord> = HashMap::new();
    for d in &view.dispatches {
        dispatches.entry(d.dispatch_id).or_insert(d);
    }
    let mut tracks: HashMap<(u32, &str), u64> = HashMap::new();
    for c in &view.counters {
        let Some(d) = dispatches.get(&c.dispatch_id) else {
            continue;
        };
        if !drawable(d.start, d.end) {
            continue;
        }
        let name = view.string(c.name);
        let key = (c.agent_node_id, name);
        let track = match tracks.get(&key) {
            Some(&track) => track,
            None => {
                let track = uuids.track(
                    TRACK_PMC,
                    mix(c.agent_node_id.into()) ^ mix(tracks.len() as u64 + 1),
                );
                let a = agent_name(view, c.agent_node_id);
                seq.descriptor(
                    t0,
                    TrackDescriptor {
                        uuid: Some(track),
                        parent_uuid: Some(uuids.process()),
                        name: Some(format!("{} [{}] PMC {name}", a.label, a.index)),
                        counter: Some(CounterDescriptor {
                            unit: Some(proto::UNIT_COUNT),
                            unit_multiplier: None,
                        }),
                        ..Default::default()
                    },
                )?;
                tracks.insert(key, track);
                track
            }
        };
        seq.counter(d.start, track, CounterValue::Double(c.value))?;
        seq.counter(d.end, track, CounterValue::Double(0.0))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_read_as_upstream_demangles_the_kd_symbol() {
        assert_eq!(
            kernel_slice_name("axpb(float const*, float*, unsigned long)"),
            "axpb(float const*, float*, unsigned long) [clone .kd]"
        );
        assert_eq!(kernel_slice_name("_Z4axpbPKfPfm"), "_Z4axpbPKfPfm.kd");
        assert_eq!(kernel_slice_name(""), "");
    }

    #[test]
    fn uuids_differ_by_kind_key_and_process() {
        let a = Uuids(0x1234_5678_9abc_def1);
        let b = Uuids(0x0fed_cba9_8765_4321);
        let all = [
            a.process(),
            a.thread(1),
            a.thread(2),
            a.track(TRACK_STREAM, 1),
            a.track(TRACK_QUEUE, 1),
            b.process(),
            b.thread(1),
            b.track(TRACK_STREAM, 1),
        ];
        let distinct: std::collections::HashSet<u64> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len());
    }
}
