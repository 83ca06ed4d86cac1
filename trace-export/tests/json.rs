//! The JSON writer (`<prefix>_results.json`) over small synthetic traces: upstream's layout,
//! the names behind every integer (through the `strings` tables and `kernel_symbols`), unique
//! correlation ids that still match the CSV files', records inside the process's
//! `[init_time, fini_time]`, counters, several processes in one file, and validation against
//! upstream's JSON schema (`rocprofv3-schema.json`) patched with exactly the places where
//! upstream's own writer departs from it. An ignored test measures the writer's rate.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use trace_export::json;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::ProcessTrace;
use trace_records::agents::{Agent, AgentIndex, AgentKind, AgentLabels, GpuProperties};
use trace_records::docs::{
    AgentsList, CounterEvent, CounterSetup, DiscoveryFacts, Document, TracingConfig,
};
use trace_records::record::*;

// ---------------------------------------------------------------------------------------------
// Upstream's schema and its documented deviations (shared with rocprof-cli: `schema/mod.rs`).

mod schema;
use schema::*;

#[test]
fn the_patch_relaxes_exactly_the_deviations() {
    let Some(schema) = upstream_schema() else {
        return;
    };
    // A minimal process object that has each deviation once, in upstream's writer's layout.
    let doc = json!({"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 1, "init_time": 1, "fini_time": 2},
        "agents": [{"size": 1, "id": {"handle": 1}, "type": 2, "capability": {
            "HotPluggable": 0, "HSAMMUPresent": 0, "SharedWithGraphics": 0,
            "QueueSizePowerOfTwo": 0, "QueueSize32bit": 0, "QueueIdleEvent": 0, "VALimit": 0,
            "WatchPointsSupported": 0, "WatchPointsTotalBits": 0, "DoorbellType": 0,
            "AQLQueueDoubleMap": 0, "DebugTrapSupported": 0,
            "WaveLaunchTrapOverrideSupported": 0, "WaveLaunchModeSupported": 0,
            "PreciseMemoryOperationsSupported": 0, "DEPRECATED_SRAM_EDCSupport": 0,
            "Mem_EDCSupport": 0, "RASEventNotify": 0, "ASICRevision": 0, "SRAM_EDCSupport": 0,
            "SVMAPISupported": 0, "CoherentHostAccess": 0, "DebugSupportedFirmware": 0}}],
        "counters": [{"agent_id": {"handle": 1}, "id": {"handle": 1}, "is_constant": 0,
            "is_derived": 0, "name": "n", "description": "", "block": "", "expression": "",
            "dimensions": [], "instances": []}],
        "strings": {"code_object_snapshot_filenames": ["a.co"]},
        "code_objects": [{"size": 1, "code_object_id": 1, "agent_id": {"handle": 1}, "uri": "",
            "load_base": 0, "load_size": 0, "load_delta": 0, "storage_type": 1}],
        "kernel_symbols": [],
        "host_functions": [{"size": 1, "host_function_id": 1, "kernel_id": 1,
            "code_object_id": 1, "host_function": 0, "modules": 0, "device_function": "",
            "thread_limit": 0, "thread_ids": 0, "block_ids": 0, "block_dims": 0,
            "grid_dims": 0, "workgroup_size": 0, "formatted_host_function_name": "",
            "demangled_host_function_name": "", "truncated_host_function_name": ""}],
        "callback_records": {"counter_collection": [{"thread_id": 1, "dispatch_data": {
            "size": 1, "correlation_id": {"internal": 1, "external": 0},
            "dispatch_info": {"size": 1, "agent_id": {"handle": 1}, "queue_id": {"handle": 1},
                "kernel_id": 1, "dispatch_id": 1, "private_segment_size": 0,
                "group_segment_size": 0, "workgroup_size": {"x": 1, "y": 1, "z": 1},
                "grid_size": {"x": 1, "y": 1, "z": 1}}},
            "records": [], "stream_id": {"handle": 0}}]},
        "buffer_records": {}
    }]});
    let met = validate(&doc).unwrap();
    let all: BTreeSet<&str> = DEVIATIONS.iter().map(|(p, _)| *p).collect();
    assert_eq!(met, all, "each deviation is an error of upstream's schema");

    // Everything else is still checked: a memory-backed code object without its memory, or
    // a counter entry with the schema's extra fields, is refused by the patched schema.
    let strict = jsonschema::draft7::new(&patched(&schema)).unwrap();
    let mut bad = doc.clone();
    bad["rocprofiler-sdk-tool"][0]["code_objects"][0]["storage_type"] = json!(2);
    assert!(!strict.is_valid(&bad));
    let mut bad = doc.clone();
    bad["rocprofiler-sdk-tool"][0]["callback_records"]["counter_collection"][0]["sgpr_count"] =
        json!(1);
    assert!(!strict.is_valid(&bad));
    let mut bad = doc;
    bad["rocprofiler-sdk-tool"][0]["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("fini_time");
    assert!(!strict.is_valid(&bad));
}

// ---------------------------------------------------------------------------------------------
// Synthetic traces.

const HIP: u8 = ApiDomain::HipRuntime as u8;
const HSA: u8 = ApiDomain::HsaCore as u8;
const LAUNCH: u16 = 3;
const MEMCPY: u16 = 7;
const SIGNAL: u16 = 1;
const STREAM: u64 = 0x77;

fn call(
    domain: u8,
    operation: u16,
    correlation_id: u64,
    start: u64,
    end: u64,
    thread: u32,
) -> ApiRecord {
    ApiRecord {
        correlation_id,
        start,
        end,
        thread_id: thread,
        operation,
        domain,
        reserved: 0,
    }
}

fn dispatch(dispatch_id: u64, correlation_id: u64, start: u64, end: u64) -> KernelDispatchRecord {
    KernelDispatchRecord {
        dispatch_id,
        kernel_id: 1,
        correlation_id,
        start,
        end,
        queue_id: 3,
        stream_id: STREAM,
        agent_node_id: 1,
        thread_id: 7,
        grid: [1024, 2, 1],
        workgroup: [64, 1, 1],
        private_segment_size: 16,
        group_segment_size: 1024,
        region: 0,
        reserved: 0,
    }
}

fn counter(dispatch_id: u64, counter_id: u32, name: StringId, value: f64) -> CounterRecord {
    CounterRecord {
        dispatch_id,
        correlation_id: 5,
        value,
        name,
        counter_id,
        agent_node_id: 1,
        reserved: 0,
    }
}

fn gpu() -> Agent {
    Agent {
        kind: AgentKind::Gpu,
        logical_node_id: 1,
        node_id: 1,
        logical_node_type_id: 0,
        name: "gfx1150".into(),
        product_name: "AMD Radeon(TM) 890M Graphics".into(),
        vendor_name: "AMD".into(),
        model_name: String::new(),
        cpu_cores_count: 0,
        gpu: Some(GpuProperties {
            gfx_target_version: 110501,
            simd_count: 32,
            cu_count: 16,
            wave_front_size: 32,
            // HotPluggable, DoorbellType 1, ASICRevision 2, and the unnamed top bits.
            capability: 1 | (1 << 12) | (2 << 22) | (3 << 30),
            fw_version: 42,
            sdma_fw_version: 17 | (5 << 10),
            workgroup_max_dim: [1024, 1024, 1024],
            grid_max_dim: [u32::MAX >> 1, 65535, 65535],
            gpu_id: 23100,
            ..Default::default()
        }),
    }
}

fn cpu() -> Agent {
    Agent {
        kind: AgentKind::Cpu,
        logical_node_id: 0,
        node_id: 0,
        logical_node_type_id: 0,
        name: "AMD EPYC".into(),
        product_name: "AMD EPYC".into(),
        vendor_name: "CPU".into(),
        model_name: String::new(),
        cpu_cores_count: 2,
        gpu: None,
    }
}

/// A process that launched one kernel and copied its result back, inside a ROCTx range, with
/// an HSA call nested in each HIP call, one on another thread, and two counters on the
/// dispatch (one of them derived).
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
        (4, "void ns::vk<float>(float*, int)"),
        (5, "outer"),
        (6, "tick"),
        (7, "SQ_WAVES"),
        (8, "GPU_UTIL"),
        (9, "a later definition"),
    ] {
        t.strings.insert(id, s.into());
    }
    t.operations.insert((HIP, LAUNCH), 1);
    t.operations.insert((HIP, MEMCPY), 2);
    t.operations.insert((HSA, SIGNAL), 3);
    t.api = vec![
        call(HIP, LAUNCH, 5, 2_000, 3_000, 7),
        call(HSA, SIGNAL, 5, 2_100, 2_200, 7),
        call(HSA, SIGNAL, 9, 2_500, 2_600, 8),
        call(HIP, MEMCPY, 6, 3_100, 5_000, 7),
        call(HSA, SIGNAL, 6, 3_200, 3_300, 7),
    ]
    .into();
    let symbol = |name| KernelSymbolRecord {
        kernel_id: 1,
        kernel_object: 0x7000,
        name,
        arch_vgpr_count: 8,
        accum_vgpr_count: 4,
        sgpr_count: 128,
        group_segment_size: 1024,
        private_segment_size: 16,
        kernarg_segment_size: 24,
        code_object_id: 0,
    };
    t.symbols = vec![symbol(4), symbol(9)];
    t.dispatches = vec![dispatch(1, 5, 2_500, 2_900)];
    t.copies = vec![MemoryCopyRecord {
        correlation_id: 6,
        start: 3_400,
        end: 4_000,
        bytes: 4096,
        stream_id: STREAM,
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
    t.counters = vec![counter(1, 1, 7, 64.0), counter(1, 2, 8, 0.5)];
    t.docs.add(Document::Agents(AgentsList {
        agents: vec![cpu(), gpu()],
    }));
    t.docs.add(Document::CounterSetup(CounterSetup {
        agent_node_id: 1,
        events: vec![CounterEvent {
            name: "SQ_WAVES".into(),
            block: "SQ".into(),
            event: 4,
        }],
        group: 0,
        output_bytes: 8,
        proof: false,
    }));
    t.docs.add(Document::Discovery(DiscoveryFacts {
        config: TracingConfig {
            kernels: true,
            ..Default::default()
        },
        ..Default::default()
    }));
    t
}

fn run_info() -> RunInfo {
    RunInfo {
        hostname: "testhost".into(),
        command: vec!["./app".into(), "--size".into(), "1 MiB".into()],
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trace-export-json-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Writes `traces` into one file and returns its text.
fn written(name: &str, traces: &[ProcessTrace]) -> String {
    written_with(name, traces, &json::JsonOptions::default())
}

/// Writes `traces` into one file with `options` and returns its text.
fn written_with(name: &str, traces: &[ProcessTrace], options: &json::JsonOptions) -> String {
    let labels: Vec<AgentLabels> = traces
        .iter()
        .map(|t| AgentLabels::new(t.docs.agents().to_vec(), AgentIndex::Relative))
        .collect();
    let views: Vec<ProcessView<'_>> = traces
        .iter()
        .zip(&labels)
        .map(|(t, l)| ProcessView::new(t, l))
        .collect();
    let dir = scratch(name);
    let path = dir.join("sub").join("out_results.json");
    json::write_json(&path, &run_info(), &views, options).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left beside the output");
    std::fs::remove_dir_all(&dir).unwrap();
    text
}

/// The name of a record's `(kind, operation)` through `strings.buffer_records`.
fn op_name<'a>(process: &'a Value, record: &Value) -> &'a str {
    let kind = record["kind"].as_u64().unwrap() as usize;
    let op = record["operation"].as_u64().unwrap() as usize;
    process["strings"]["buffer_records"][kind]["operations"][op]
        .as_str()
        .unwrap()
}

/// Every `(start, end)` of the records of a process object.
fn intervals(process: &Value) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    let pair = |r: &Value| {
        (
            r["start_timestamp"].as_u64().unwrap(),
            r["end_timestamp"].as_u64().unwrap(),
        )
    };
    for records in process["buffer_records"].as_object().unwrap().values() {
        v.extend(records.as_array().unwrap().iter().map(pair));
    }
    for entry in process["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
    {
        v.push(pair(&entry["dispatch_data"]));
    }
    v
}

#[test]
fn a_synthetic_process_in_upstreams_layout() {
    let text = written("layout", &[synthetic()]);
    // Upstream's cereal layout: each member on its own line, no indentation.
    assert!(
        text.starts_with("{\n\"rocprofiler-sdk-tool\": [\n{\n\"metadata\": {\n"),
        "{text:.80}"
    );
    assert!(text.ends_with("]\n}\n"));
    let mut at = 0;
    for key in [
        "metadata",
        "agents",
        "counters",
        "strings",
        "code_objects",
        "kernel_symbols",
        "host_functions",
        "summary",
        "callback_records",
        "buffer_records",
    ] {
        let found = text[at..]
            .find(&format!("\n\"{key}\": "))
            .unwrap_or_else(|| panic!("{key} missing or out of order"));
        at += found + 1;
    }

    let doc: Value = serde_json::from_str(&text).unwrap();
    let tool = doc["rocprofiler-sdk-tool"].as_array().unwrap();
    assert_eq!(tool.len(), 1);
    let p = &tool[0];

    let meta = &p["metadata"];
    assert_eq!(meta["pid"], 4242);
    assert_eq!(meta["command"], json!(["./app", "--size", "1 MiB"]));
    assert_eq!(meta["node"]["hostname"], "testhost");
    for key in ["id", "hash"] {
        assert!(meta["node"][key].is_u64(), "node.{key}");
    }
    assert_eq!(
        (meta["init_time"].as_u64(), meta["fini_time"].as_u64()),
        (Some(1_000), Some(5_500))
    );
    for (start, end) in intervals(p) {
        assert!(
            1_000 <= start && start <= end && end <= 5_500,
            "{start}..{end}"
        );
    }

    // Agents: the GPU's words split into upstream's fields, handles = node id + 1.
    let agents = p["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    let g = &agents[1];
    assert_eq!(
        (g["type"].as_u64(), g["id"]["handle"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        (
            agents[0]["type"].as_u64(),
            agents[0]["id"]["handle"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(g["name"], "gfx1150");
    assert_eq!(g["node_id"], 1);
    assert_eq!(g["gfx_target_version"], 110501);
    assert_eq!(g["capability"]["HotPluggable"], 1);
    assert_eq!(g["capability"]["DoorbellType"], 1);
    assert_eq!(g["capability"]["ASICRevision"], 2);
    assert_eq!(g["capability"].as_object().unwrap().len(), 23);
    assert_eq!(
        g["fw_version"],
        json!({"uCode": 42, "Major": 11, "Minor": 5, "Stepping": 1})
    );
    assert_eq!(
        g["sdma_fw_version"],
        json!({"uCodeSDMA": 17, "uCodeRes": 5})
    );
    assert_eq!(
        g["workgroup_max_dim"],
        json!({"x": 1024, "y": 1024, "z": 1024})
    );

    // Counters collected, per agent.
    let counters = p["counters"].as_array().unwrap();
    let summary: Vec<(&str, u64, &str, u64)> = counters
        .iter()
        .map(|c| {
            assert_eq!(c["agent_id"]["handle"], 2);
            (
                c["name"].as_str().unwrap(),
                c["id"]["handle"].as_u64().unwrap(),
                c["block"].as_str().unwrap(),
                c["is_derived"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summary, [("SQ_WAVES", 1, "SQ", 0), ("GPU_UTIL", 2, "", 1)]);

    // Name tables: indexed by kind, then operation.
    let tables = p["strings"]["buffer_records"].as_array().unwrap();
    assert_eq!(tables.len(), 33);
    assert_eq!(tables[0], json!({"kind": "NONE", "operations": []}));
    assert_eq!(tables[21]["kind"], "HIP_RUNTIME_API_EXT");
    assert_eq!(tables[21]["operations"][LAUNCH as usize], "hipLaunchKernel");
    assert_eq!(
        tables[21]["operations"][0], "",
        "an operation the log never named"
    );
    assert_eq!(tables[10]["operations"][3], "MEMORY_COPY_DEVICE_TO_HOST");
    assert_eq!(tables[32]["kind"], "MARKER_CORE_RANGE_API");
    let callbacks = p["strings"]["callback_records"].as_array().unwrap();
    assert_eq!(callbacks[5]["operations"][MEMCPY as usize], "hipMemcpy");
    assert_eq!(
        p["strings"]["marker_api"],
        json!([{"key": 4, "value": "outer"}, {"key": 8, "value": "tick"}])
    );
    assert_eq!(p["strings"]["correlation_id"], json!({"external": []}));
    assert_eq!(p["strings"]["counters"], json!({"dimension_ids": []}));
    assert_eq!(p["summary"], json!([]), "no statistics were asked for");
    // No code object was loaded and no host function registered: only upstream's all-zero
    // entry 0 of each (which the kernel symbols, code_object_id 0, name).
    let code_objects = p["code_objects"].as_array().unwrap();
    assert_eq!(code_objects.len(), 1, "{code_objects:?}");
    assert_eq!(code_objects[0]["code_object_id"], 0);
    assert_eq!(code_objects[0]["uri"], "");
    let host_functions = p["host_functions"].as_array().unwrap();
    assert_eq!(host_functions.len(), 1, "{host_functions:?}");
    assert_eq!(host_functions[0]["host_function_id"], 0);
    assert_eq!(host_functions[0]["device_function"], "");

    // Kernel symbols: the id-0 placeholder, then each kernel once (its first definition).
    let symbols = p["kernel_symbols"].as_array().unwrap();
    assert_eq!(symbols.len(), 2);
    for name in [
        "kernel_name",
        "formatted_kernel_name",
        "demangled_kernel_name",
        "truncated_kernel_name",
    ] {
        assert_eq!(symbols[0][name], "0", "{name}");
    }
    assert_eq!(symbols[0]["kernel_id"], 0);
    let k = &symbols[1];
    assert_eq!(k["kernel_id"], 1);
    assert_eq!(k["kernel_name"], "void ns::vk<float>(float*, int)");
    assert_eq!(k["truncated_kernel_name"], "vk");
    assert_eq!(
        (k["arch_vgpr_count"].as_u64(), k["sgpr_count"].as_u64()),
        (Some(8), Some(128))
    );
    assert_eq!(k["kernel_object"], 0x7000);

    // API calls: the outermost keeps the recorded id (the CSV's), a nested call gets a fresh
    // one and names its enclosing call.
    let b = &p["buffer_records"];
    let hip = b["hip_api"].as_array().unwrap();
    let names: Vec<&str> = hip.iter().map(|r| op_name(p, r)).collect();
    assert_eq!(names, ["hipLaunchKernel", "hipMemcpy"]);
    for (r, id) in hip.iter().zip([5, 6]) {
        assert_eq!(r["kind"], 21);
        assert_eq!(
            r["correlation_id"],
            json!({"internal": id, "external": 0, "ancestor": 0})
        );
        assert_eq!(
            r["stream_id"],
            json!({"handle": STREAM}),
            "the stream of what it caused"
        );
        assert_eq!(r["args"], json!([]));
        assert_eq!(r["thread_id"], 7);
    }
    let hsa = b["hsa_api"].as_array().unwrap();
    let ids: Vec<(u64, u64, u64)> = hsa
        .iter()
        .map(|r| {
            assert_eq!(op_name(p, r), "hsa_signal_store_relaxed");
            assert!(r.get("stream_id").is_none() && r.get("args").is_none());
            (
                r["correlation_id"]["internal"].as_u64().unwrap(),
                r["correlation_id"]["ancestor"].as_u64().unwrap(),
                r["thread_id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, [(10, 5, 7), (9, 0, 8), (11, 6, 7)]);

    let kernels = b["kernel_dispatch"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    let d = &kernels[0];
    assert_eq!(op_name(p, d), "KERNEL_DISPATCH_COMPLETE");
    assert_eq!(d["correlation_id"], json!({"internal": 5, "external": 0}));
    assert_eq!(
        d["dispatch_info"],
        json!({"size": 128, "agent_id": {"handle": 2}, "queue_id": {"handle": 3},
            "kernel_id": 1, "dispatch_id": 1, "private_segment_size": 16,
            "group_segment_size": 1024, "workgroup_size": {"x": 64, "y": 1, "z": 1},
            "grid_size": {"x": 1024, "y": 2, "z": 1}})
    );
    assert_eq!(d["stream_id"], json!({"handle": STREAM}));
    let kernel = d["dispatch_info"]["kernel_id"].as_u64().unwrap();
    let symbol = symbols.iter().find(|s| s["kernel_id"] == kernel).unwrap();
    assert_eq!(symbol["kernel_name"], "void ns::vk<float>(float*, int)");

    let copies = b["memory_copy"].as_array().unwrap();
    assert_eq!(copies.len(), 1);
    let c = &copies[0];
    assert_eq!(op_name(p, c), "MEMORY_COPY_DEVICE_TO_HOST");
    assert_eq!(c["correlation_id"], json!({"internal": 6, "external": 0}));
    assert_eq!(
        (
            c["src_agent_id"]["handle"].as_u64(),
            c["dst_agent_id"]["handle"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(c["bytes"], 4096);

    let markers = b["marker_api"].as_array().unwrap();
    let got: Vec<(&str, u64, u64)> = markers
        .iter()
        .map(|m| {
            assert_eq!(m["kind"], 32);
            let id = m["correlation_id"]["internal"].as_u64().unwrap();
            let message = p["strings"]["marker_api"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["key"] == id)
                .unwrap()["value"]
                .as_str()
                .unwrap();
            (message, m["operation"].as_u64().unwrap(), id)
        })
        .collect();
    assert_eq!(got, [("outer", 1, 4), ("tick", 0, 8)]);
    assert_eq!(op_name(p, &markers[0]), "roctxThreadRangeA");
    for empty in [
        "rccl_api",
        "memory_allocation",
        "scratch_memory",
        "rocdecode_api",
        "rocjpeg_api",
        "pc_sample_host_trap",
        "pc_sample_stochastic",
    ] {
        assert_eq!(b[empty], json!([]), "{empty}");
    }

    // Counter collection: one entry for the dispatch, its values in counter-id order.
    let entries = p["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert_eq!(e["thread_id"], 7);
    assert_eq!(
        e["dispatch_data"]["correlation_id"],
        json!({"internal": 5, "external": 0})
    );
    assert_eq!(e["dispatch_data"]["start_timestamp"], 2_500);
    assert_eq!(e["dispatch_data"]["dispatch_info"]["dispatch_id"], 1);
    assert_eq!(
        e["records"],
        json!([{"counter_id": {"handle": 1}, "value": 64.0}, {"counter_id": {"handle": 2}, "value": 0.5}])
    );

    // Unique correlation ids across the host records.
    let mut seen = BTreeSet::new();
    for kind in ["hip_api", "hsa_api", "marker_api"] {
        for r in b[kind].as_array().unwrap() {
            assert!(
                seen.insert(r["correlation_id"]["internal"].as_u64().unwrap()),
                "{r}"
            );
        }
    }

    if let Some(met) = validate(&doc) {
        assert_eq!(
            met,
            BTreeSet::from([
                "/rocprofiler-sdk-tool/#/agents/#/capability",
                "/rocprofiler-sdk-tool/#/counters/#",
                "/rocprofiler-sdk-tool/#/callback_records/counter_collection/#",
                // The writer's member names for code objects and host functions, where they
                // depart from the schema (the patch says so).
                "/rocprofiler-sdk-tool/#/code_objects/#",
                "/rocprofiler-sdk-tool/#/host_functions/#",
            ])
        );
    }
}

#[test]
fn several_processes_stay_distinct_and_lost_dispatches_keep_their_counters() {
    let first = synthetic();
    // A second process that counted without kernel tracing and lost a dispatch's record.
    let mut second = ProcessTrace {
        pid: 4343,
        created_ns: 10_000,
        ..Default::default()
    };
    second.strings.insert(1, "SQ_WAVES".into());
    second.dispatches = vec![dispatch(2, 1, 20_000, 21_000)];
    second.counters = vec![
        CounterRecord {
            correlation_id: 1,
            ..counter(2, 1, 1, 7.0)
        },
        CounterRecord {
            correlation_id: 3,
            ..counter(9, 1, 1, 3.0)
        },
    ];
    second
        .docs
        .add(Document::Discovery(DiscoveryFacts::default()));
    let doc: Value = serde_json::from_str(&written("several", &[first, second])).unwrap();
    let tool = doc["rocprofiler-sdk-tool"].as_array().unwrap();
    assert_eq!(tool.len(), 2);
    assert_eq!(
        (
            tool[0]["metadata"]["pid"].as_u64(),
            tool[1]["metadata"]["pid"].as_u64()
        ),
        (Some(4242), Some(4343))
    );
    assert_eq!(
        tool[0]["buffer_records"]["hip_api"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let p = &tool[1];
    assert_eq!(
        p["buffer_records"]["kernel_dispatch"],
        json!([]),
        "kernels were not traced"
    );
    assert_eq!(p["buffer_records"]["hip_api"], json!([]));
    assert_eq!(p["agents"], json!([]));
    assert_eq!(
        p["kernel_symbols"].as_array().unwrap().len(),
        1,
        "the placeholder alone"
    );
    let entries = p["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["dispatch_data"]["start_timestamp"], 20_000);
    assert_eq!(entries[0]["records"][0]["value"], 7.0);
    let lost = &entries[1];
    assert_eq!(lost["dispatch_data"]["correlation_id"]["internal"], 3);
    assert_eq!(lost["dispatch_data"]["dispatch_info"]["dispatch_id"], 9);
    assert_eq!(
        lost["dispatch_data"]["dispatch_info"]["agent_id"]["handle"],
        2
    );
    assert_eq!(lost["dispatch_data"]["start_timestamp"], 0);
    assert_eq!(lost["records"][0]["value"], 3.0);
    // The lost dispatch's zero times widen the process's bounds: every record stays inside.
    let (init, fini) = (
        p["metadata"]["init_time"].as_u64().unwrap(),
        p["metadata"]["fini_time"].as_u64().unwrap(),
    );
    assert_eq!((init, fini), (0, 21_000));
    for (start, end) in intervals(p) {
        assert!(init <= start && end <= fini);
    }
    let counters: Vec<&str> = p["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(counters, ["SQ_WAVES"]);
    validate(&doc);
}

#[test]
fn an_empty_process_still_has_every_section() {
    let t = ProcessTrace {
        pid: 7,
        created_ns: 55,
        ..Default::default()
    };
    let doc: Value = serde_json::from_str(&written("empty", &[t])).unwrap();
    let p = &doc["rocprofiler-sdk-tool"][0];
    assert_eq!(
        (
            p["metadata"]["init_time"].as_u64(),
            p["metadata"]["fini_time"].as_u64()
        ),
        (Some(55), Some(55))
    );
    assert_eq!(p["counters"], json!([]));
    assert_eq!(p["callback_records"], json!({"counter_collection": []}));
    assert_eq!(p["buffer_records"].as_object().unwrap().len(), 12);
    validate(&doc);

    let none: Value = serde_json::from_str(&written("none", &[])).unwrap();
    assert_eq!(none, json!({"rocprofiler-sdk-tool": []}));
}

/// Upstream's `metadata.config` keys (its output configuration's serialization), in order.
const CONFIG_KEYS: [&str; 23] = [
    "output_path",
    "output_file",
    "tmp_directory",
    "raw_output_path",
    "raw_output_file",
    "raw_tmp_directory",
    "perfetto_shmem_size_hint",
    "perfetto_buffer_size",
    "perfetto_buffer_fill_policy",
    "perfetto_backend",
    "summary",
    "summary_per_domain",
    "summary_groups",
    "summary_unit",
    "summary_file",
    "csv_output",
    "json_output",
    "pftrace_output",
    "otf2_output",
    "summary_output",
    "rocpd_output",
    "kernel_rename",
    "group_by_queue",
];

/// The positions of `keys` (as `"key":`) in `text` from `from` on, each after the one before.
fn in_order(text: &str, from: usize, keys: &[&str]) -> bool {
    let mut at = from;
    keys.iter()
        .all(|k| match text[at..].find(&format!("\"{k}\": ")) {
            Some(i) => {
                at += i + 1;
                true
            }
            None => false,
        })
}

#[test]
fn metadata_config_and_the_summary_are_written_as_upstream_writes_them() {
    let config = json::OutputConfig {
        output_path: "/work/out".into(),
        output_file: "run".into(),
        tmp_directory: "/work".into(),
        raw_output_path: "%cwd%/out".into(),
        raw_output_file: "run".into(),
        raw_tmp_directory: "%cwd%".into(),
        perfetto_shmem_size_hint: 64,
        perfetto_buffer_fill_policy: "discard".into(),
        perfetto_backend: "inprocess".into(),
        summary: true,
        summary_per_domain: true,
        summary_groups: vec!["KERNEL_DISPATCH|MEMORY_COPY".into(), ".*_API".into()],
        summary_unit: "nsec".into(),
        summary_file: "summary".into(),
        json_output: true,
        summary_output: true,
        kernel_rename: true,
        ..Default::default()
    };
    let options = json::JsonOptions {
        config: Some(config),
        summary: true,
    };
    let text = written_with("config", &[synthetic()], &options);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let p = &doc["rocprofiler-sdk-tool"][0];

    // `metadata.config` after `command`, upstream's keys in upstream's order, as given.
    assert!(
        in_order(
            &text,
            0,
            &["node", "pid", "init_time", "fini_time", "command", "config"]
        ),
        "{text:.600}"
    );
    let c = &p["metadata"]["config"];
    let keys: BTreeSet<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, CONFIG_KEYS.into_iter().collect::<BTreeSet<_>>());
    assert!(in_order(
        &text,
        text.find("\"config\": ").unwrap(),
        &CONFIG_KEYS
    ));
    // What summary/validate.py asks of it.
    assert_eq!(c["summary"], true);
    assert_eq!(c["summary_per_domain"], true);
    assert_eq!(c["summary_unit"], "nsec");
    assert_eq!(c["summary_file"], "summary");
    assert_eq!(
        c["summary_groups"],
        json!(["KERNEL_DISPATCH|MEMORY_COPY", ".*_API"])
    );
    assert_eq!(
        (c["output_path"].clone(), c["raw_output_path"].clone()),
        (json!("/work/out"), json!("%cwd%/out"))
    );

    // `summary`: one entry per domain with records, in upstream's order, the totals and each
    // name's figures (cereal's key/value pairs, names in byte order).
    let summary = p["summary"].as_array().unwrap();
    let domains: Vec<&str> = summary
        .iter()
        .map(|d| d["domain"].as_str().unwrap())
        .collect();
    assert_eq!(
        domains,
        [
            "KERNEL_DISPATCH",
            "HSA_API",
            "HIP_API",
            "MEMORY_COPY",
            "MARKER_API"
        ]
    );
    let stats = |d: usize| &summary[d]["stats"];
    let figures = |v: &Value| ["count", "sum", "sqr", "min", "max"].map(|k| v[k].as_u64().unwrap());
    assert_eq!(figures(stats(0)), [1, 400, 160_000, 400, 400]);
    assert_eq!(figures(stats(1)), [3, 300, 30_000, 100, 100]);
    assert_eq!(stats(1)["variance"], 0.0);
    assert_eq!(
        figures(stats(2)),
        [2, 2_900, 1_000_000 + 3_610_000, 1_000, 1_900]
    );
    assert_eq!(stats(2)["mean"], 1450.0);
    // (4 610 000 − 2900²/2) / 1 = 405 000.
    assert_eq!(stats(2)["variance"], 405_000.0);
    assert_eq!(stats(2)["stddev"], 405_000f64.sqrt());
    let ops: Vec<(&str, u64)> = stats(2)["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["key"].as_str().unwrap(),
                o["value"]["sum"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ops, [("hipLaunchKernel", 1_000), ("hipMemcpy", 1_900)]);
    assert_eq!(
        stats(3)["operations"][0]["key"],
        "MEMORY_COPY_DEVICE_TO_HOST"
    );
    let markers: Vec<&str> = stats(4)["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(markers, ["outer", "tick"]);
    assert!(in_order(
        &text,
        text.find("\"summary\": [").unwrap(),
        &[
            "domain",
            "stats",
            "count",
            "sum",
            "sqr",
            "min",
            "max",
            "mean",
            "stddev",
            "variance",
            "operations",
            "key",
            "value"
        ]
    ));
    validate(&doc);

    // Without a summary asked for the section is empty; without a configuration it is left out.
    let plain: Value = serde_json::from_str(&written("plain", &[synthetic()])).unwrap();
    let p = &plain["rocprofiler-sdk-tool"][0];
    assert_eq!(p["summary"], json!([]));
    assert!(p["metadata"].get("config").is_none());
    // Dispatches recorded only for counters are no KERNEL_DISPATCH statistics.
    let mut counted = synthetic();
    counted.docs.discovery.as_mut().unwrap().config.kernels = false;
    let options = json::JsonOptions {
        summary: true,
        ..Default::default()
    };
    let doc: Value = serde_json::from_str(&written_with("counted", &[counted], &options)).unwrap();
    let summary = doc["rocprofiler-sdk-tool"][0]["summary"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        summary.iter().all(|d| d["domain"] != "KERNEL_DISPATCH"),
        "{summary:?}"
    );
    assert_eq!(summary.len(), 4);
}

#[test]
fn a_file_that_cannot_be_written_is_an_io_error_naming_it() {
    let dir = scratch("unwritable");
    std::fs::create_dir_all(&dir).unwrap();
    let blocker = dir.join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let path = blocker.join("out_results.json");
    let err = json::write_json(&path, &run_info(), &[], &Default::default()).unwrap_err();
    assert!(matches!(err, trace_export::Error::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("out_results.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The writer's rate over one million HIP calls (each with a nested HSA call every other
/// record, so half get fresh correlation ids): at least a million records a second in a
/// release build. `cargo test --release -p trace-export --test json -- --ignored --nocapture`.
#[test]
#[ignore]
fn writes_a_million_api_records_a_second() {
    const N: u64 = 1_000_000;
    let mut t = ProcessTrace {
        pid: 1,
        created_ns: 1,
        ..Default::default()
    };
    t.strings.insert(1, "hipLaunchKernel".into());
    t.strings.insert(2, "hsa_signal_store_relaxed".into());
    t.operations.insert((HIP, LAUNCH), 1);
    t.operations.insert((HSA, SIGNAL), 2);
    t.api = (0..N)
        .map(|k| {
            let outer = k / 2 + 1;
            let start = 10 + k * 100;
            if k % 2 == 0 {
                call(HIP, LAUNCH, outer, start, start + 150, 7)
            } else {
                call(HSA, SIGNAL, outer, start, start + 20, 7)
            }
        })
        .collect();
    let labels = AgentLabels::default();
    let started = std::time::Instant::now();
    let view = ProcessView::new(&t, &labels);
    let viewed = started.elapsed();
    let dir = scratch("rate");
    let path = dir.join("rate_results.json");
    let started = std::time::Instant::now();
    json::write_json(
        &path,
        &run_info(),
        std::slice::from_ref(&view),
        &Default::default(),
    )
    .unwrap();
    let took = started.elapsed();
    let bytes = std::fs::metadata(&path).unwrap().len();
    std::fs::remove_dir_all(&dir).unwrap();
    let rate = N as f64 / took.as_secs_f64();
    eprintln!(
        "json: {N} API records in {took:?} ({:.2} M records/s, {:.0} MB, {:.0} MB/s); the view took {viewed:?}",
        rate / 1e6,
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / took.as_secs_f64()
    );
    if !cfg!(debug_assertions) {
        assert!(rate >= 1e6, "{rate:.0} records/s");
    }
}
