//! The Perfetto writer over small synthetic processes, its packets decoded back with the
//! crate's own `prost` declarations and judged as a trace processor would judge them:
//! interning resolved per sequence, events sorted by time (stably) and nested per track.
//! (The end-to-end test in rocprof-cli decodes a real run with Perfetto's own classes.)
//!
//! The writer's speed: `cargo test --release -p trace-export --test perfetto -- --ignored
//! --nocapture` writes 1 M API records and prints the rate.

use prost::Message as _;
use std::collections::HashMap;
use std::path::PathBuf;
use trace_export::perfetto::proto::{self, Data, TracePacket};
use trace_export::view::{ProcessView, RunInfo};
use trace_records::agents::{Agent, AgentIndex, AgentKind, AgentLabels, GpuProperties};
use trace_records::docs::AgentsList;
use trace_records::*;

const PID: u32 = 4000;
const WORKER: u32 = 4007;

fn agents() -> Vec<Agent> {
    let cpu = Agent {
        kind: AgentKind::Cpu,
        logical_node_id: 0,
        node_id: 0,
        logical_node_type_id: 0,
        name: "cpu".into(),
        product_name: "cpu".into(),
        vendor_name: "CPU".into(),
        model_name: String::new(),
        cpu_cores_count: 8,
        gpu: None,
    };
    let gpu = Agent {
        kind: AgentKind::Gpu,
        logical_node_id: 1,
        node_id: 3,
        name: "gfx1150".into(),
        vendor_name: "AMD".into(),
        cpu_cores_count: 0,
        gpu: Some(GpuProperties::default()),
        ..cpu.clone()
    };
    vec![cpu, gpu]
}

/// A process trace being built: strings and operation names defined on first use.
struct Builder(ProcessTrace);

impl Builder {
    fn new(pid: u32) -> Self {
        let mut t = ProcessTrace {
            pid,
            ppid: 1,
            created_ns: 50,
            ..Default::default()
        };
        t.docs.agents = Some(AgentsList { agents: agents() });
        Builder(t)
    }

    fn string(&mut self, s: &str) -> StringId {
        if let Some((&id, _)) = self.0.strings.iter().find(|(_, v)| *v == s) {
            return id;
        }
        let id = self.0.strings.len() as StringId + 1;
        self.0.strings.insert(id, s.to_owned());
        id
    }

    fn call(&mut self, domain: ApiDomain, name: &str, corr: u64, tid: u32, span: (u64, u64)) {
        let op = self
            .0
            .operations
            .iter()
            .find(|(_, v)| self.0.strings[v] == name)
            .map(|(k, _)| k.1)
            .unwrap_or(self.0.operations.len() as u16);
        let id = self.string(name);
        self.0.operations.insert((domain as u8, op), id);
        self.0.api.push(ApiRecord {
            correlation_id: corr,
            start: span.0,
            end: span.1,
            thread_id: tid,
            operation: op,
            domain: domain as u8,
            reserved: 0,
        });
    }

    fn kernel(&mut self, dispatch_id: u64, corr: u64, stream: u64, span: (u64, u64)) {
        if self.0.symbols.is_empty() {
            let name = self.string("axpb(float const*, float*, unsigned long)");
            self.0.symbols.push(KernelSymbolRecord {
                kernel_id: 7,
                kernel_object: 0x1000,
                name,
                arch_vgpr_count: 8,
                accum_vgpr_count: 0,
                sgpr_count: 128,
                group_segment_size: 100,
                private_segment_size: 0,
                kernarg_segment_size: 24,
                code_object_id: 0,
            });
        }
        self.0.dispatches.push(KernelDispatchRecord {
            dispatch_id,
            kernel_id: 7,
            correlation_id: corr,
            start: span.0,
            end: span.1,
            queue_id: 1,
            stream_id: stream,
            agent_node_id: 3,
            thread_id: self.0.pid,
            grid: [1024, 2, 1],
            workgroup: [256, 1, 1],
            private_segment_size: 16,
            group_segment_size: 100,
            region: 0,
            reserved: 0,
        });
    }

    fn copy(&mut self, corr: u64, bytes: u64, stream: u64, span: (u64, u64)) {
        self.0.copies.push(MemoryCopyRecord {
            correlation_id: corr,
            start: span.0,
            end: span.1,
            bytes,
            stream_id: stream,
            src_node_id: 0,
            dst_node_id: 3,
            thread_id: self.0.pid,
            direction: CopyDirection::HostToDevice as u8,
            reserved: [0; 3],
        });
    }

    fn marker(&mut self, message: &str, corr: u64, tid: u32, span: (u64, u64)) {
        let message = self.string(message);
        self.0.markers.push(MarkerRecord {
            correlation_id: corr,
            start: span.0,
            end: span.1,
            message,
            thread_id: tid,
            kind: MarkerKind::ThreadRange as u8,
            reserved: [0; 7],
        });
    }

    fn counter(&mut self, dispatch_id: u64, name: &str, value: f64) {
        let name = self.string(name);
        self.0.counters.push(CounterRecord {
            dispatch_id,
            correlation_id: 1,
            value,
            name,
            counter_id: 1,
            agent_node_id: 3,
            reserved: 0,
        });
    }
}

/// The main synthetic process: a marker range enclosing a kernel launch (with an HSA call
/// nested in it, ending with it) and a copy; another thread's call; one counter.
fn sample(pid: u32) -> ProcessTrace {
    let mut b = Builder::new(pid);
    // Correlation ids (the tool's) differ from the calls' ids in the view (1, 2, … by start).
    b.marker("outer", 100, pid, (90, 500));
    b.call(
        ApiDomain::HipRuntime,
        "hipLaunchKernel",
        11,
        pid,
        (100, 200),
    );
    b.call(
        ApiDomain::HsaCore,
        "hsa_signal_store_screlease",
        11,
        pid,
        (150, 200),
    );
    b.call(ApiDomain::HipRuntime, "hipMemcpy", 12, pid, (300, 400));
    b.call(
        ApiDomain::HsaCore,
        "hsa_signal_wait_scacquire",
        12,
        pid,
        (310, 390),
    );
    b.call(ApiDomain::HipRuntime, "hipMemcpy", 13, WORKER, (110, 190));
    b.kernel(1, 11, 5, (160, 260));
    b.copy(12, 2 << 20, 5, (320, 380));
    b.counter(1, "SQ_WAVES", 42.0);
    b.0
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trace-export-perfetto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn labels() -> AgentLabels {
    AgentLabels::new(agents(), AgentIndex::Relative)
}

fn write(name: &str, traces: &[&ProcessTrace], run: &RunInfo) -> Vec<TracePacket> {
    let labels = labels();
    let views: Vec<ProcessView<'_>> = traces
        .iter()
        .map(|t| ProcessView::new(t, &labels))
        .collect();
    let path = scratch(name);
    trace_export::perfetto::write_perfetto(&path, run, &views, &Default::default()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    proto::Trace::decode(bytes.as_slice()).unwrap().packet
}

/// One slice as a trace processor builds it.
#[derive(Debug, Clone)]
struct Slice {
    track: u64,
    name: String,
    category: String,
    ts: u64,
    end: u64,
    depth: usize,
    parent: Option<usize>,
    args: HashMap<String, proto::AnnotationValue>,
    flows: Vec<u64>,
}

impl Slice {
    fn uint(&self, name: &str) -> u64 {
        match self.args.get(name) {
            Some(proto::AnnotationValue::Uint(v)) => *v,
            other => panic!("{}: annotation {name} = {other:?}", self.name),
        }
    }
    fn text(&self, name: &str) -> &str {
        match self.args.get(name) {
            Some(proto::AnnotationValue::String(v)) => v,
            other => panic!("{}: annotation {name} = {other:?}", self.name),
        }
    }
}

/// What a file holds, decoded and judged; panics on any rule broken.
struct Decoded {
    tracks: HashMap<u64, proto::TrackDescriptor>,
    slices: Vec<Slice>,
    counters: HashMap<String, Vec<(u64, f64)>>,
    /// Per sequence id: its uuid-less facts (defaults clock, snapshot clocks).
    sequences: HashMap<u32, (Option<u32>, Vec<u32>)>,
}

impl Decoded {
    fn track_named(&self, name: &str) -> &proto::TrackDescriptor {
        self.tracks
            .values()
            .find(|t| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no track {name:?}: {:?}", self.tracks))
    }
    fn slices_named(&self, name: &str) -> Vec<&Slice> {
        self.slices.iter().filter(|s| s.name == name).collect()
    }
}

#[derive(Default)]
struct SeqState {
    default_track: Option<u64>,
    categories: HashMap<u64, String>,
    names: HashMap<u64, String>,
    annotations: HashMap<u64, String>,
}

fn decode(packets: &[TracePacket]) -> Decoded {
    let mut seqs: HashMap<u32, SeqState> = HashMap::new();
    let mut sequences = HashMap::new();
    let mut tracks = HashMap::new();
    // (ts, order, track, kind, slice data)
    let mut events = Vec::new();
    for (order, p) in packets.iter().enumerate() {
        let id = p.trusted_packet_sequence_id.expect("sequence id");
        assert_ne!(id, 0, "packet {order}: zero sequence id");
        let flags = p.sequence_flags.unwrap_or(0);
        let st = seqs.entry(id).or_insert_with(|| {
            assert_ne!(
                flags & proto::SEQ_INCREMENTAL_STATE_CLEARED,
                0,
                "packet {order}: the first packet of sequence {id} must clear the state"
            );
            let d = p
                .trace_packet_defaults
                .as_ref()
                .expect("defaults on the first packet");
            let clocks = match &p.data {
                Some(Data::ClockSnapshot(c)) => {
                    c.clocks.iter().map(|c| c.clock_id.unwrap()).collect()
                }
                _ => panic!("no clock snapshot on the first packet"),
            };
            sequences.insert(id, (d.timestamp_clock_id, clocks));
            let default_track = d.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
            SeqState {
                default_track,
                ..Default::default()
            }
        });
        if let Some(i) = &p.interned_data {
            for (table, entries) in [
                (&mut st.categories, &i.event_categories),
                (&mut st.names, &i.event_names),
                (&mut st.annotations, &i.debug_annotation_names),
            ] {
                for e in entries {
                    let old = table.insert(e.iid.unwrap(), e.name.clone().unwrap());
                    assert!(
                        old.is_none(),
                        "packet {order}: iid {:?} defined twice",
                        e.iid
                    );
                }
            }
        }
        match &p.data {
            Some(Data::TrackDescriptor(t)) => {
                assert!(
                    tracks.insert(t.uuid.unwrap(), t.clone()).is_none(),
                    "track twice"
                );
            }
            Some(Data::TrackEvent(e)) => {
                assert_eq!(
                    p.timestamp_clock_id,
                    Some(proto::CLOCK_BOOTTIME),
                    "packet {order}"
                );
                assert_ne!(
                    flags & proto::SEQ_NEEDS_INCREMENTAL_STATE,
                    0,
                    "packet {order}"
                );
                let ts = p.timestamp.expect("timestamp");
                // No uuid: the sequence's default track (the main thread's).
                let track = e.track_uuid.or(st.default_track).expect("track uuid");
                let kind = e.r#type.unwrap();
                let mut slice = None;
                let mut value = None;
                if kind == proto::TYPE_SLICE_BEGIN {
                    let name = match &e.name_field {
                        Some(proto::EventNameField::NameIid(iid)) => st.names[iid].clone(),
                        other => panic!("packet {order}: name {other:?}"),
                    };
                    assert_eq!(e.category_iids.len(), 1, "one category per slice");
                    let category = st.categories[&e.category_iids[0]].clone();
                    let args = e
                        .debug_annotations
                        .iter()
                        .map(|a| {
                            let name = match &a.name_field {
                                Some(proto::AnnotationName::NameIid(iid)) => {
                                    st.annotations[iid].clone()
                                }
                                other => panic!("annotation name {other:?}"),
                            };
                            (name, a.value.clone().unwrap())
                        })
                        .collect();
                    slice = Some((name, category, args, e.flow_ids.clone()));
                } else {
                    assert!(e.category_iids.is_empty() && e.name_field.is_none());
                    assert!(e.debug_annotations.is_empty() && e.flow_ids.is_empty());
                }
                if kind == proto::TYPE_COUNTER {
                    value = Some(match e.counter_value_field {
                        Some(proto::CounterValue::Int(v)) => v as f64,
                        Some(proto::CounterValue::Double(v)) => v,
                        None => panic!("counter without value"),
                    });
                }
                events.push((ts, order, track, kind, slice, value));
            }
            _ => {}
        }
    }
    for t in tracks.values() {
        if let Some(parent) = t.parent_uuid {
            assert!(tracks.contains_key(&parent), "parent of {t:?} undescribed");
        }
    }
    events.sort_by_key(|e| (e.0, e.1));
    let mut stacks: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut slices: Vec<Slice> = Vec::new();
    let mut counters: HashMap<String, Vec<(u64, f64)>> = HashMap::new();
    for (ts, order, track, kind, slice, value) in events {
        let desc = tracks
            .get(&track)
            .unwrap_or_else(|| panic!("packet {order}: no track"));
        let stack = stacks.entry(track).or_default();
        match kind {
            proto::TYPE_SLICE_BEGIN => {
                let (name, category, args, flows) = slice.unwrap();
                stack.push(slices.len());
                slices.push(Slice {
                    track,
                    name,
                    category,
                    ts,
                    end: 0,
                    depth: stack.len() - 1,
                    parent: stack.len().checked_sub(2).map(|i| stack[i]),
                    args,
                    flows,
                });
            }
            proto::TYPE_SLICE_END => {
                let i = stack
                    .pop()
                    .unwrap_or_else(|| panic!("packet {order}: END with nothing open"));
                slices[i].end = ts;
            }
            proto::TYPE_COUNTER => {
                assert!(desc.counter.is_some(), "counter event on a slice track");
                counters
                    .entry(desc.name.clone().unwrap())
                    .or_default()
                    .push((ts, value.unwrap()));
            }
            other => panic!("event type {other}"),
        }
    }
    for (track, stack) in &stacks {
        assert!(stack.is_empty(), "slices left open on {:?}", tracks[track]);
    }
    Decoded {
        tracks,
        slices,
        counters,
        sequences,
    }
}

#[test]
fn a_process_is_laid_out_as_upstream_lays_it_out() {
    let trace = sample(PID);
    let run = RunInfo {
        hostname: "h".into(),
        command: vec!["/opt/app/bin/app".into(), "--x".into()],
    };
    let packets = write("layout.pftrace", &[&trace], &run);
    let d = decode(&packets);

    // The first packet: defaults (clock 64, the main thread's track) and the clock snapshot.
    let first = &packets[0];
    assert_eq!(first.first_packet_on_sequence, Some(true));
    let defaults = first.trace_packet_defaults.as_ref().unwrap();
    assert_eq!(defaults.timestamp_clock_id, Some(proto::CLOCK_INCREMENTAL));
    assert_eq!(
        d.sequences[&1].1,
        [proto::CLOCK_BOOTTIME, proto::CLOCK_INCREMENTAL]
    );

    // Process, threads.
    let process = d
        .tracks
        .values()
        .find(|t| t.process.is_some())
        .expect("process track");
    let pd = process.process.as_ref().unwrap();
    assert_eq!(pd.pid, Some(PID as i32));
    assert_eq!(pd.process_name.as_deref(), Some("app"));
    assert_eq!(pd.cmdline, run.command);
    let main = d
        .tracks
        .values()
        .find(|t| t.thread.is_some())
        .expect("main thread track");
    let td = main.thread.as_ref().unwrap();
    assert_eq!((td.pid, td.tid), (Some(PID as i32), Some(PID.into())));
    assert_eq!(main.parent_uuid, process.uuid);
    assert_eq!(
        defaults.track_event_defaults.as_ref().unwrap().track_uuid,
        main.uuid
    );
    let worker = d.track_named(&format!("THREAD 1 ({WORKER})"));
    assert_eq!(worker.parent_uuid, process.uuid);
    let stream = d.track_named("STREAM [\" 5 \"] ");
    assert_eq!(stream.parent_uuid, process.uuid);

    // Host slices nest: marker ⊃ hipLaunchKernel ⊃ hsa call (ending with it).
    let outer = &d.slices_named("outer")[0];
    assert_eq!(
        (outer.category.as_str(), outer.track, outer.depth),
        ("marker_api", main.uuid.unwrap(), 0)
    );
    assert_eq!(outer.uint("kind"), 32);
    assert_eq!((outer.uint("operation"), outer.uint("corr_id")), (1, 100));
    assert!(outer.flows.is_empty());
    let launch = &d.slices_named("hipLaunchKernel")[0];
    assert_eq!(launch.category, "hip_api");
    assert_eq!(
        launch.parent.map(|i| d.slices[i].name.as_str()),
        Some("outer")
    );
    assert_eq!((launch.ts, launch.end), (100, 200));
    assert_eq!(launch.uint("stream_ID"), 5);
    assert_eq!(launch.uint("kind"), 21);
    let store = &d.slices_named("hsa_signal_store_screlease")[0];
    assert_eq!(store.category, "hsa_api");
    assert_eq!(
        store.parent.map(|i| d.slices[i].name.as_str()),
        Some("hipLaunchKernel")
    );
    assert_eq!(store.uint("ancestor_id"), launch.uint("corr_id"));
    assert_eq!((store.ts, store.end, store.depth), (150, 200, 2));
    assert!(
        !store.args.contains_key("stream_ID"),
        "stream_ID is HIP's only"
    );
    let names: Vec<&str> = launch.args.keys().map(String::as_str).collect();
    for a in [
        "begin_ns",
        "end_ns",
        "delta_ns",
        "tid",
        "kind",
        "operation",
        "corr_id",
        "ancestor_id",
    ] {
        assert!(names.contains(&a), "{a} missing from {names:?}");
    }
    assert_eq!(launch.uint("delta_ns"), 100);
    let memcpys = d.slices_named("hipMemcpy");
    assert_eq!(memcpys.len(), 2);
    let other = memcpys
        .iter()
        .find(|s| s.track == worker.uuid.unwrap())
        .unwrap();
    assert_eq!((other.ts, other.end, other.depth), (110, 190, 0));

    // The kernel: named as upstream, on the stream track, flow-joined to its launch.
    let kernel = &d.slices_named("axpb(float const*, float*, unsigned long) [clone .kd]")[0];
    assert_eq!(
        (kernel.category.as_str(), kernel.track),
        ("kernel_dispatch", stream.uuid.unwrap())
    );
    assert_eq!((kernel.ts, kernel.end), (160, 260));
    assert_eq!(kernel.flows, launch.flows);
    assert_eq!(kernel.flows.len(), 1);
    assert_eq!(kernel.uint("corr_id"), launch.uint("corr_id"));
    assert_eq!(kernel.text("agent"), "Agent-1");
    assert_eq!(kernel.text("agent_type"), "GPU");
    assert_eq!(kernel.uint("kind"), 11);
    assert_eq!(kernel.uint("queue"), 0);
    assert_eq!(kernel.uint("workgroup_size"), 256);
    assert_eq!(kernel.uint("grid_size"), 2048);
    assert_eq!(kernel.uint("LDS_Block_Size"), 512);
    assert_eq!(kernel.uint("Scratch_Size"), 16);
    assert_eq!(
        (kernel.uint("VGPR_Count"), kernel.uint("SGPR_Count")),
        (8, 128)
    );
    let kernel_args: Vec<&str> = kernel.args.keys().map(String::as_str).collect();
    assert_eq!(kernel_args.len(), 18, "{kernel_args:?}");

    // The copy.
    let copy = &d.slices_named("MEMORY_COPY_HOST_TO_DEVICE")[0];
    let memcpy = memcpys
        .iter()
        .find(|s| s.track == main.uuid.unwrap())
        .unwrap();
    assert_eq!(
        (copy.category.as_str(), copy.track),
        ("memory_copy", stream.uuid.unwrap())
    );
    assert_eq!(copy.flows, memcpy.flows);
    assert_ne!(copy.flows, kernel.flows);
    assert_eq!(
        (copy.text("src_agent"), copy.text("dst_agent")),
        ("Agent-0", "Agent-1")
    );
    assert_eq!(
        (
            copy.uint("copy_bytes"),
            copy.uint("operation"),
            copy.uint("kind")
        ),
        (2 << 20, 2, 10)
    );

    // Counter tracks.
    let bytes = d.track_named("COPY BYTES to Agent [1] (GPU)");
    let unit = bytes.counter.as_ref().unwrap();
    assert_eq!(
        (unit.unit, unit.unit_multiplier),
        (Some(proto::UNIT_SIZE_BYTES), Some(1024))
    );
    assert_eq!(
        d.counters["COPY BYTES to Agent [1] (GPU)"],
        [(320, 2048.0), (380, 0.0)]
    );
    assert_eq!(
        d.counters["Agent [1] PMC SQ_WAVES"],
        [(160, 42.0), (260, 0.0)]
    );

    // Every slice is accounted for.
    assert_eq!(d.slices.len(), 8);
}

#[test]
fn several_processes_keep_their_own_sequences_and_uuids() {
    let a = sample(PID);
    let b = sample(PID + 100);
    let packets = write("two.pftrace", &[&a, &b], &RunInfo::default());
    let d = decode(&packets);
    assert_eq!(d.sequences.len(), 2);
    let pids: Vec<i32> = d
        .tracks
        .values()
        .filter_map(|t| t.process.as_ref()?.pid)
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.contains(&(PID as i32)) && pids.contains(&(PID as i32 + 100)));
    // Two of every track (the uuids are distinct: `decode` refuses a uuid described twice).
    assert_eq!(d.tracks.len(), 2 * 6);
    assert_eq!(d.slices.len(), 16);
    // Each kernel's flow joins its own process's launch only.
    for k in d.slices.iter().filter(|s| s.category == "kernel_dispatch") {
        let joined: Vec<&Slice> = d.slices.iter().filter(|s| s.flows == k.flows).collect();
        assert_eq!(joined.len(), 2);
        let parent = |s: &Slice| {
            let mut t = d.tracks[&s.track].clone();
            while let Some(p) = t.parent_uuid {
                t = d.tracks[&p].clone();
            }
            t.uuid
        };
        assert_eq!(parent(joined[0]), parent(joined[1]));
    }
}

#[test]
fn overlapping_kernels_are_clipped_at_the_midpoint_and_keep_their_times() {
    let mut b = Builder::new(PID);
    b.kernel(1, 1, 0, (100, 200));
    b.kernel(2, 2, 0, (150, 250));
    let packets = write("overlap.pftrace", &[&b.0], &RunInfo::default());
    let d = decode(&packets);
    let mut k: Vec<&Slice> = d.slices.iter().collect();
    k.sort_by_key(|s| s.ts);
    assert_eq!((k[0].ts, k[0].end, k[1].ts, k[1].end), (100, 175, 175, 250));
    assert_eq!((k[0].uint("end_ns"), k[1].uint("begin_ns")), (200, 150));
    assert_eq!((k[0].depth, k[1].depth), (0, 0));
    // Without HIP, kernels go on their queue's track.
    d.track_named("COMPUTE Agent [1] QUEUE [0] GPU");
}

#[test]
fn back_to_back_and_equal_end_slices_nest_correctly() {
    let mut b = Builder::new(PID);
    b.call(ApiDomain::HipRuntime, "hipA", 1, PID, (100, 200));
    b.call(ApiDomain::HsaCore, "hsa_a", 1, PID, (100, 150));
    b.call(ApiDomain::HsaCore, "hsa_b", 1, PID, (150, 200));
    b.call(ApiDomain::HipRuntime, "hipB", 2, PID, (200, 300));
    b.call(ApiDomain::HsaCore, "hsa_c", 2, PID, (300, 300));
    let packets = write("ties.pftrace", &[&b.0], &RunInfo::default());
    let d = decode(&packets);
    let depth = |n: &str| {
        let s = &d.slices_named(n)[0];
        (
            s.depth,
            s.parent.map(|i| d.slices[i].name.clone()),
            s.ts,
            s.end,
        )
    };
    assert_eq!(depth("hipA"), (0, None, 100, 200));
    assert_eq!(depth("hsa_a"), (1, Some("hipA".into()), 100, 150));
    assert_eq!(depth("hsa_b"), (1, Some("hipA".into()), 150, 200));
    assert_eq!(depth("hipB"), (0, None, 200, 300));
    // A zero-length call at its caller's very end follows it (as `Api::ancestor` has it).
    assert_eq!(depth("hsa_c"), (0, None, 300, 300));
    for s in &d.slices {
        let parent = s.parent.map_or(0, |i| d.slices[i].uint("corr_id"));
        assert_eq!(s.uint("ancestor_id"), parent, "{}", s.name);
    }
}

#[test]
fn an_empty_run_writes_an_empty_trace() {
    let packets = write("empty.pftrace", &[], &RunInfo::default());
    assert!(packets.is_empty());
    let t = ProcessTrace {
        pid: PID,
        ..Default::default()
    };
    let packets = write("bare.pftrace", &[&t], &RunInfo::default());
    let d = decode(&packets);
    assert!(d.slices.is_empty());
    assert_eq!(d.tracks.len(), 2, "the process and its main thread");
}

/// The writer's rate over 1 M HSA API records on one thread (2 M slice events, 9 annotations
/// on each BEGIN). Run in release (see the module text).
#[test]
#[ignore]
fn rate_of_one_million_api_records() {
    let n = 1_000_000u64;
    let mut t = ProcessTrace {
        pid: PID,
        ..Default::default()
    };
    for op in 0..125u16 {
        let id = u32::from(op) + 1;
        t.strings.insert(id, format!("hsa_operation_{op}"));
        t.operations.insert((ApiDomain::HsaCore as u8, op), id);
    }
    t.api = (0..n)
        .map(|i| ApiRecord {
            correlation_id: i + 1,
            start: 1_000_000_000 + i * 50,
            end: 1_000_000_000 + i * 50 + 20,
            thread_id: PID,
            operation: (i % 125) as u16,
            domain: ApiDomain::HsaCore as u8,
            reserved: 0,
        })
        .collect();
    let labels = AgentLabels::default();
    let view = ProcessView::new(&t, &labels);
    let path = scratch("rate.pftrace");
    let started = std::time::Instant::now();
    trace_export::perfetto::write_perfetto(
        &path,
        &RunInfo::default(),
        std::slice::from_ref(&view),
        &Default::default(),
    )
    .unwrap();
    let secs = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&path).unwrap().len();
    let _ = std::fs::remove_file(&path);
    let records = n as f64 / secs;
    eprintln!(
        "perfetto writer: {n} API records ({} slice events) in {:.3} s: {:.2} M records/s, {:.2} M events/s, {:.1} MB",
        2 * n,
        secs,
        records / 1e6,
        2.0 * records / 1e6,
        size as f64 / 1e6
    );
    if !cfg!(debug_assertions) {
        assert!(
            2.0 * records >= 3e6,
            "{:.0} events/s is below 3 M/s",
            2.0 * records
        );
    }
}

/// [`write`] with options; also returns what the writer says it wrote and the file's size.
fn write_with(
    name: &str,
    t: &ProcessTrace,
    options: &trace_export::perfetto::Options,
) -> (Vec<TracePacket>, trace_export::perfetto::Written, u64) {
    let labels = labels();
    let views = [ProcessView::new(t, &labels)];
    let path = scratch(name);
    let run = RunInfo {
        hostname: "h".into(),
        command: vec!["app".into()],
    };
    let w = trace_export::perfetto::write_perfetto(&path, &run, &views, options).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let packets = proto::Trace::decode(bytes.as_slice()).unwrap().packet;
    (packets, w, bytes.len() as u64)
}

#[test]
fn group_by_queue_lays_a_hip_process_out_on_queue_and_copy_tracks() {
    let t = sample(4242);
    let by_stream = decode(&write("streams.pftrace", &[&t], &RunInfo::default()));
    let names = |d: &Decoded| -> Vec<String> {
        let mut v: Vec<String> = d.tracks.values().filter_map(|t| t.name.clone()).collect();
        v.sort();
        v
    };
    assert!(
        names(&by_stream)
            .iter()
            .any(|n| n.starts_with("STREAM [\" "))
    );
    let options = trace_export::perfetto::Options {
        group_by_queue: true,
        ..Default::default()
    };
    let (packets, w, size) = write_with("queues.pftrace", &t, &options);
    assert_eq!((w.bytes, w.dropped_events), (size, 0));
    let by_queue = decode(&packets);
    let n = names(&by_queue);
    assert!(!n.iter().any(|n| n.starts_with("STREAM")), "{n:?}");
    assert!(
        n.iter()
            .any(|n| n.starts_with("COMPUTE Agent [") && n.contains("QUEUE [0]")),
        "{n:?}"
    );
    assert!(n.iter().any(|n| n.starts_with("COPY to AGENT [")), "{n:?}");
    // The same slices, only on other tracks.
    assert_eq!(by_queue.slices.len(), by_stream.slices.len());
}

#[test]
fn a_size_limit_keeps_whole_slices_of_the_earliest_or_latest_time() {
    use trace_export::perfetto::{FillPolicy, Options};
    let mut b = Builder::new(77);
    for k in 0..400u64 {
        let start = 1_000 + k * 100;
        b.call(
            ApiDomain::HipRuntime,
            "hipMemcpy",
            k + 1,
            77,
            (start, start + 50),
        );
        b.call(
            ApiDomain::HsaCore,
            "hsa_signal_wait_scacquire",
            k + 1,
            77,
            (start + 10, start + 40),
        );
    }
    let t = b.0;
    let (_, full, full_size) = write_with("full.pftrace", &t, &Options::default());
    assert_eq!(
        (full.bytes, full.full_bytes, full.dropped_events),
        (full_size, full_size, 0)
    );
    let limit = full_size / 3;
    for policy in [FillPolicy::Discard, FillPolicy::RingBuffer] {
        let options = Options {
            buffer_bytes: Some(limit),
            fill_policy: policy,
            ..Default::default()
        };
        let (packets, w, size) = write_with("limited.pftrace", &t, &options);
        assert!(size <= limit, "{policy:?}: {size} > {limit}");
        assert_eq!((w.bytes, w.full_bytes), (size, full_size));
        // `decode` checks every slice ends on its track: none is left half.
        let d = decode(&packets);
        let outer: Vec<u64> = d.slices_named("hipMemcpy").iter().map(|s| s.ts).collect();
        let inner = d.slices_named("hsa_signal_wait_scacquire").len();
        assert!(
            !outer.is_empty() && outer.len() < 400,
            "{policy:?}: {}",
            outer.len()
        );
        assert!(
            inner.abs_diff(outer.len()) <= 1,
            "a call's nested call goes with it"
        );
        assert_eq!(w.dropped_slices as usize, 800 - outer.len() - inner);
        let starts: Vec<u64> = (0..400).map(|k| 1_000 + k * 100).collect();
        let want = match policy {
            FillPolicy::Discard => &starts[..outer.len()],
            FillPolicy::RingBuffer => &starts[400 - outer.len()..],
        };
        let mut got = outer.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{policy:?}");
    }
}
