//! Archives written from synthetic records, read back by the OTF2 library's own reader
//! (`otf2-print` from Debian's `otf2-tools`, which `.ci/run` installs). Where the library or the
//! reader is missing, each test says so on stderr and checks nothing else.

use std::path::{Path, PathBuf};
use std::process::Command;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::ProcessTrace;
use trace_records::agents::{Agent, AgentIndex, AgentKind, AgentLabels};
use trace_records::docs::{AgentsList, Document};
use trace_records::record::*;

const HIP: u8 = ApiDomain::HipRuntime as u8;
const HSA: u8 = ApiDomain::HsaCore as u8;
const MARKER: u8 = ApiDomain::MarkerCore as u8;

fn agent(kind: AgentKind, node_id: u32, name: &str) -> Agent {
    Agent {
        kind,
        logical_node_id: node_id,
        node_id,
        logical_node_type_id: 0,
        name: name.into(),
        product_name: String::new(),
        vendor_name: String::new(),
        model_name: String::new(),
        cpu_cores_count: 0,
        gpu: None,
    }
}

fn call(
    domain: u8,
    operation: u16,
    correlation_id: u64,
    start: u64,
    end: u64,
    thread_id: u32,
) -> ApiRecord {
    ApiRecord {
        correlation_id,
        start,
        end,
        thread_id,
        operation,
        domain,
        reserved: 0,
    }
}

/// A process: thread 7 calls hipLaunchKernel [2000,3000] (an HSA call nested in it from its
/// start), hipMemcpy [3000,5000] (starting as the launch ends) and a ROCTx range around all
/// of it with a mark inside; thread 8 makes one HSA call; a kernel on queue 0x40 and a copy
/// to the CPU; a marker-domain call roctxMarkA (left out) and roctxGetThreadId (kept).
fn synthetic() -> ProcessTrace {
    let mut t = ProcessTrace {
        pid: 4242,
        ppid: 1,
        created_ns: 1_000,
        ..Default::default()
    };
    for (id, s) in [
        (1, "hipLaunchKernel"),
        (2, "hipMemcpy"),
        (3, "hsa_signal_store_relaxed"),
        (4, "vk(float*, int)"),
        (5, "outer range"),
        (6, "tick"),
        (10, "roctxMarkA"),
        (11, "roctxGetThreadId"),
    ] {
        t.strings.insert(id, s.into());
    }
    t.operations.insert((HIP, 3), 1);
    t.operations.insert((HIP, 7), 2);
    t.operations.insert((HSA, 1), 3);
    t.operations.insert((MARKER, 0), 10);
    t.operations.insert((MARKER, 5), 11);
    t.api = vec![
        call(HIP, 3, 5, 2_000, 3_000, 7),
        call(HSA, 1, 5, 2_000, 2_200, 7),
        call(HSA, 1, 9, 2_500, 2_600, 8),
        call(HIP, 7, 6, 3_000, 5_000, 7),
        call(MARKER, 0, 12, 5_200, 5_200, 7),
        call(MARKER, 5, 13, 5_300, 5_310, 7),
    ]
    .into();
    t.symbols = vec![KernelSymbolRecord {
        kernel_id: 1,
        name: 4,
        ..Default::default()
    }];
    t.dispatches = vec![KernelDispatchRecord {
        dispatch_id: 1,
        kernel_id: 1,
        correlation_id: 5,
        start: 2_500,
        end: 2_900,
        queue_id: 0x40,
        agent_node_id: 1,
        thread_id: 7,
        ..Default::default()
    }];
    t.copies = vec![MemoryCopyRecord {
        correlation_id: 6,
        start: 3_400,
        end: 4_000,
        bytes: 4096,
        stream_id: 0,
        src_node_id: 1,
        dst_node_id: 0,
        thread_id: 7,
        direction: CopyDirection::DeviceToHost as u8,
        reserved: [0; 3],
    }];
    t.markers = vec![
        MarkerRecord {
            correlation_id: 4,
            start: 1_500,
            end: 5_500,
            message: 5,
            thread_id: 7,
            kind: MarkerKind::ThreadRange as u8,
            reserved: [0; 7],
        },
        MarkerRecord {
            correlation_id: 8,
            start: 2_050,
            end: 2_050,
            message: 6,
            thread_id: 7,
            kind: MarkerKind::Mark as u8,
            reserved: [0; 7],
        },
    ];
    t.docs.add(Document::Agents(AgentsList {
        agents: vec![
            agent(AgentKind::Cpu, 0, "AMD Ryzen AI 9 HX 370"),
            agent(AgentKind::Gpu, 1, "gfx1150"),
        ],
    }));
    t
}

fn run_info() -> RunInfo {
    RunInfo {
        hostname: "testhost".into(),
        command: vec!["./app".into(), "--size".into()],
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("otf2-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether the library and the reader are there; says why not on stderr.
fn tools(test: &str) -> bool {
    if let Err(e) = otf2_export::available() {
        eprintln!("{test}: checks nothing: {e}");
        return false;
    }
    if Command::new("otf2-print").arg("--help").output().is_err() {
        eprintln!(
            "{test}: checks nothing: otf2-print is not installed (apt-get install otf2-tools)"
        );
        return false;
    }
    true
}

fn write(dir: &Path, traces: &[ProcessTrace]) -> (PathBuf, Vec<PathBuf>) {
    let labels: Vec<AgentLabels> = traces
        .iter()
        .map(|t| AgentLabels::new(t.docs.agents().to_vec(), AgentIndex::Relative))
        .collect();
    let views: Vec<ProcessView<'_>> = traces
        .iter()
        .zip(&labels)
        .map(|(t, l)| ProcessView::new(t, l))
        .collect();
    let archive = dir.join("out_results");
    let files = otf2_export::write_otf2(&archive, &run_info(), &views).unwrap();
    (archive, files)
}

/// `otf2-print` of the archive (`-G`: with the global definitions).
fn print(archive: &Path, args: &[&str]) -> String {
    let anchor = otf2_export::archive_files(archive)[0].clone();
    let out = Command::new("otf2-print")
        .args(args)
        .arg(&anchor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The events: (kind, location, time, region name, attributes), in the reader's order.
fn events(text: &str) -> Vec<(String, u64, u64, String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !(l.starts_with("ENTER ") || l.starts_with("LEAVE ")) {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let quoted = l.split_once("Region: \"").map_or("", |(_, r)| r);
        let region = quoted.rsplit_once("\" <").map_or(quoted, |(r, _)| r);
        let attrs = lines
            .get(i + 1)
            .map(|n| n.trim())
            .filter(|n| n.starts_with("ADDITIONAL ATTRIBUTES:"))
            .unwrap_or("");
        out.push((
            w[0].to_owned(),
            w[1].parse().unwrap(),
            w[2].parse().unwrap(),
            region.to_owned(),
            attrs.to_owned(),
        ));
    }
    out
}

#[test]
fn the_archive_has_upstreams_files() {
    if !tools("the_archive_has_upstreams_files") {
        return;
    }
    let dir = scratch("files");
    let (archive, files) = write(&dir, &[synthetic()]);
    assert_eq!(files, otf2_export::archive_files(&archive));
    assert!(dir.join("out_results.otf2").is_file());
    assert!(dir.join("out_results.def").is_file());
    assert!(dir.join("out_results").is_dir());
    let mut inside: Vec<String> = std::fs::read_dir(dir.join("out_results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    // Locations 1, 2 (threads 7, 8), 3 (the copy), 4 (the queue).
    assert_eq!(
        inside,
        [
            "1.def", "1.evt", "2.def", "2.evt", "3.def", "3.evt", "4.def", "4.evt"
        ]
    );
    // Written once: a second archive in the same place is refused, the first is kept.
    let labels = AgentLabels::new(Vec::new(), AgentIndex::Relative);
    let t = ProcessTrace::default();
    let err = otf2_export::write_otf2(&archive, &run_info(), &[ProcessView::new(&t, &labels)])
        .unwrap_err();
    assert!(matches!(err, otf2_export::Error::Exists(_)), "{err}");
    assert!(dir.join("out_results.otf2").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn definitions_are_upstreams() {
    if !tools("definitions_are_upstreams") {
        return;
    }
    let dir = scratch("defs");
    let (archive, _) = write(&dir, &[synthetic()]);
    let text = print(&archive, &["-G"]);
    for want in [
        "\"Thread 7\"",
        "\"Thread 8\"",
        "\"Thread 7, Copy to CPU Agent-0\"",
        "\"Thread 7, Compute on GPU Agent-1, Queue 0\"",
        "\"./app\"",
        "\"testhost\"",
        "\"gfx1150\"",
        "\"AMD Ryzen AI 9 HX 370\"",
        "\"category\"",
        "\"tracing category\"",
        "\"hip_api\"",
        "\"MEMORY_COPY_DEVICE_TO_HOST\"",
        "\"vk(float*, int)\"",
        "\"outer range\"",
    ] {
        assert!(text.contains(want), "no {want} in\n{text}");
    }
    let region_line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with("REGION ") && l.contains(&format!("Name: \"{name}\"")))
            .unwrap_or_else(|| panic!("no region {name} in\n{text}"))
            .to_owned()
    };
    assert!(region_line("hipLaunchKernel").contains("Role: FUNCTION"));
    assert!(region_line("hipLaunchKernel").contains("Paradigm: HIP"));
    assert!(region_line("outer range").contains("Paradigm: USER"));
    assert!(region_line("roctxGetThreadId").contains("Paradigm: USER"));
    assert!(region_line("MEMORY_COPY_DEVICE_TO_HOST").contains("Role: DATA_TRANSFER"));
    assert!(
        !text.contains("\"roctxMarkA\""),
        "marks are left out:\n{text}"
    );
    assert!(!text.contains("\"tick\""), "marks are left out:\n{text}");
    let location = |name: &str| {
        text.lines()
            .find(|l| l.starts_with("LOCATION ") && l.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no location {name} in\n{text}"))
            .to_owned()
    };
    let thread = location("Thread 7");
    assert!(thread.contains("Type: CPU_THREAD"), "{thread}");
    // hipLaunchKernel, its HSA call, hipMemcpy, the range, roctxGetThreadId: 10 events.
    assert!(thread.contains("# Events: 10"), "{thread}");
    let queue = location("Thread 7, Compute on GPU Agent-1, Queue 0");
    assert!(queue.contains("Type: ACCELERATOR_STREAM"), "{queue}");
    assert!(queue.contains("# Events: 2"), "{queue}");
    assert!(text.contains("LOCATION_GROUP"), "{text}");
    assert!(text.contains("Type: ACCELERATOR"), "{text}");
    assert!(text.contains("Type: PROCESS"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn events_nest_per_location_with_their_category() {
    if !tools("events_nest_per_location_with_their_category") {
        return;
    }
    let dir = scratch("events");
    let (archive, _) = write(&dir, &[synthetic()]);
    let all = events(&print(&archive, &[]));
    let on = |loc: u64| -> Vec<(String, u64, String)> {
        all.iter()
            .filter(|e| e.1 == loc)
            .map(|e| (e.0.clone(), e.2, e.3.clone()))
            .collect()
    };
    let e = |k: &str, t: u64, r: &str| (k.to_owned(), t, r.to_owned());
    assert_eq!(
        on(1),
        [
            e("ENTER", 1_500, "outer range"),
            e("ENTER", 2_000, "hipLaunchKernel"),
            e("ENTER", 2_000, "hsa_signal_store_relaxed"),
            e("LEAVE", 2_200, "hsa_signal_store_relaxed"),
            e("LEAVE", 3_000, "hipLaunchKernel"),
            e("ENTER", 3_000, "hipMemcpy"),
            e("LEAVE", 5_000, "hipMemcpy"),
            e("ENTER", 5_300, "roctxGetThreadId"),
            e("LEAVE", 5_310, "roctxGetThreadId"),
            e("LEAVE", 5_500, "outer range"),
        ]
    );
    assert_eq!(on(2).len(), 2);
    assert_eq!(
        on(3),
        [
            e("ENTER", 3_400, "MEMORY_COPY_DEVICE_TO_HOST"),
            e("LEAVE", 4_000, "MEMORY_COPY_DEVICE_TO_HOST")
        ]
    );
    assert_eq!(
        on(4),
        [
            e("ENTER", 2_500, "vk(float*, int)"),
            e("LEAVE", 2_900, "vk(float*, int)")
        ]
    );
    // Every enter carries its category, no leave does.
    let category = |loc: u64, region: &str| {
        all.iter()
            .find(|e| e.0 == "ENTER" && e.1 == loc && e.3 == region)
            .map(|e| e.4.clone())
            .unwrap()
    };
    assert!(category(1, "hipMemcpy").contains("\"hip_api\""), "{all:?}");
    assert!(category(1, "hsa_signal_store_relaxed").contains("\"hsa_api\""));
    assert!(category(1, "outer range").contains("\"marker_api\""));
    assert!(category(3, "MEMORY_COPY_DEVICE_TO_HOST").contains("\"memory_copy\""));
    assert!(category(4, "vk(float*, int)").contains("\"kernel_dispatch\""));
    assert!(
        all.iter()
            .filter(|e| e.0 == "LEAVE")
            .all(|e| e.4.is_empty()),
        "{all:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn several_processes_stay_distinct() {
    if !tools("several_processes_stay_distinct") {
        return;
    }
    let dir = scratch("merged");
    let mut second = synthetic();
    second.pid = 4343;
    second.ppid = 4242;
    let (archive, _) = write(&dir, &[synthetic(), second]);
    let text = print(&archive, &["-G"]);
    let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(count("SYSTEM_TREE_NODE "), 2, "{text}");
    // A process group and two agent groups per process.
    assert_eq!(count("LOCATION_GROUP "), 6, "{text}");
    assert_eq!(count("LOCATION "), 8, "{text}");
    // The child's command line is not in the records: upstream's fallback name.
    assert!(text.contains("\"??\""), "{text}");
    let all = events(&print(&archive, &[]));
    assert_eq!(all.iter().filter(|e| e.1 == 5).count(), 10, "{all:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_the_library_nothing_is_written_and_the_error_says_what_to_install() {
    // The loader override at a library that does not exist (run in its own process: the
    // variable is read when the archive is written).
    if std::env::var_os("OTF2_EXPORT_CHILD").is_none() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "without_the_library_nothing_is_written_and_the_error_says_what_to_install",
                "--nocapture",
            ])
            .env("OTF2_EXPORT_CHILD", "1")
            .env(
                otf2_sys::LIBRARY_ENV,
                "/nonexistent/libopen-trace-format2.so.10",
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        return;
    }
    let dir = scratch("absent");
    let err = otf2_export::available().unwrap_err();
    assert!(
        err.to_string()
            .contains("apt-get install libopen-trace-format2-10"),
        "{err}"
    );
    let labels = AgentLabels::new(Vec::new(), AgentIndex::Relative);
    let t = synthetic();
    let err = otf2_export::write_otf2(
        &dir.join("out_results"),
        &run_info(),
        &[ProcessView::new(&t, &labels)],
    )
    .unwrap_err();
    assert!(matches!(err, otf2_export::Error::Library(_)), "{err}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing is left"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
