//! `rocprof avail` end to end on the simulated WSL2 stack: real dlopen of the simulated
//! libdxcore.so and librocdxg.so, one process per scenario (the thunk's state is process-global).
//!
//! Needs the staged simulator: run through `cargo xtask test` (or `cargo xtask build` first).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CLEARED: [&str; 12] = [
    "WSLSIM_SCENARIO",
    "WSLSIM_CALL_LOG",
    "ROCPROF_HSAKMT_LAYOUT",
    "ROCPROF_DXG_DEVICE",
    "ROCPROF_SIM_ACTIVE",
    "ROCPROFILER_FORCE_PLATFORM",
    "ROCPROFILER_FORCE_GFX",
    "ROCPROFILER_REGISTER_TOOL_ATTACHED",
    "ROCPROFILER_KFD_TOPOLOGY",
    "AMD_KFD_TOPOLOGY",
    "HSA_MODEL_TOPOLOGY",
    "WSLKMT_VENDOR_PACKET",
];

fn rocprof() -> Command {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rocprof"));
    let sim = exe
        .parent()
        .unwrap()
        .join("sim")
        .join("lib")
        .join("librocdxg.so");
    assert!(
        sim.exists(),
        "the simulated stack is not staged at {}: run `cargo xtask test` (or `cargo xtask build`)",
        sim.display()
    );
    let mut c = Command::new(exe);
    for v in CLEARED {
        c.env_remove(v);
    }
    c
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

struct Run {
    json: Value,
    out: Output,
}

impl Run {
    fn gpus(&self) -> Vec<&Value> {
        self.json["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["kind"] == "gpu")
            .collect()
    }
    fn omission_kinds(&self) -> Vec<String> {
        self.json["omissions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap().to_owned())
            .collect()
    }
    fn omission(&self, kind: &str) -> String {
        self.json["omissions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} omission in {:#}", self.json["omissions"]))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

fn avail_json(cmd: &mut Command) -> Run {
    let out = cmd.args(["avail", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "rocprof avail failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)));
    Run { json, out }
}

fn sim(scenario_file: Option<&str>, env: &[(&str, &str)]) -> Run {
    let mut c = rocprof();
    c.arg("--sim");
    if let Some(s) = scenario_file {
        c.env("WSLSIM_SCENARIO", scenario(s));
    }
    c.envs(env.iter().copied());
    avail_json(&mut c)
}

fn call_log(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rocprof-avail-{}-{name}.log", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn default_simulation_shows_the_radeon_890m() {
    let r = sim(None, &[]);
    assert_eq!(r.json["schema"], "rocprof-avail/1");
    assert_eq!(r.json["selection"]["platform"], "wsl");
    assert_eq!(r.json["selection"]["reason"], "dxg");
    let agents = r.json["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["kind"], "cpu");
    let g = &agents[1];
    assert_eq!(g["name"], "gfx1150");
    assert_eq!(g["node_id"], 1);
    assert_eq!(g["product_name"], "AMD Radeon(TM) 890M Graphics");
    let p = &g["gpu"];
    assert_eq!(p["device_id"], 0x150e);
    assert_eq!(p["cu_count"], 16);
    assert_eq!(p["wave_front_size"], 32);
    assert_eq!(p["gfx_target_version"], 110500);
    assert_eq!(p["wallclock_khz"], 100000);
    assert!(p["luid"].is_object());
    assert_eq!(r.json["layout"]["size"], 396);
    assert_eq!(r.json["layout"]["source"], "probe");
    assert_eq!(r.json["probe"]["accepted"], "L396");
    assert_eq!(r.json["probe"]["measured"], 396);
    assert_eq!(r.json["thunk"]["handshake"], "accepted");
    assert_eq!(r.json["vendor_packet"], "1");
    assert!(r.omission_kinds().is_empty(), "{:#}", r.json["omissions"]);
}

#[test]
fn text_report_ends_with_a_summary() {
    let out = rocprof().args(["--sim", "avail"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Platform   : wsl"), "{text}");
    assert!(
        text.contains("Agent 1  GPU  gfx1150  AMD Radeon(TM) 890M Graphics"),
        "{text}"
    );
    assert!(
        text.contains("DxgAbiCheck   : accepts 396-byte HsaNodeProperties"),
        "{text}"
    );
    assert!(
        text.contains("Summary    : 1 GPU agent(s) (gfx1150), 1 CPU agent(s), 0 omission(s)"),
        "{text}"
    );
}

#[test]
fn a_396_thunk_read_as_376_is_refused_without_corruption() {
    let r = sim(
        Some("thunk-396-no-handshake.toml"),
        &[("ROCPROF_HSAKMT_LAYOUT", "376")],
    );
    assert!(r.gpus().is_empty());
    assert_eq!(r.json["layout"]["source"], "environment");
    let reason = r.omission("layout-mismatch");
    assert!(
        reason.contains("wrote 396 bytes") && reason.contains("has 376 bytes"),
        "{reason}"
    );
    assert!(r.omission_kinds().contains(&"no-gpu-nodes".to_owned()));
    assert!(
        r.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("overrides the thunk's own 396-byte layout")
    );
}

#[test]
fn a_376_thunk_read_as_396_is_refused() {
    let r = sim(
        Some("thunk-376-no-handshake.toml"),
        &[("ROCPROF_HSAKMT_LAYOUT", "396")],
    );
    assert!(r.gpus().is_empty());
    let reason = r.omission("layout-mismatch");
    assert!(
        reason.contains("wrote 376 bytes") && reason.contains("has 396 bytes"),
        "{reason}"
    );
}

#[test]
fn without_the_handshake_the_probe_measures_the_record_size() {
    let r = sim(Some("thunk-376-no-handshake.toml"), &[]);
    assert_eq!(r.json["probe"]["handshake_offered"], false);
    assert_eq!(r.json["probe"]["measured"], 376);
    assert_eq!(r.json["layout"]["size"], 376);
    assert_eq!(r.json["thunk"]["handshake"], "not-offered");
    let gpus = r.gpus();
    assert_eq!(gpus.len(), 1, "{:#}", r.json["omissions"]);
    // 376-byte records carry neither LUID nor wall clock: the pairing fell back to the unique
    // device id, and the agent's LUID is the adapter's.
    assert_eq!(gpus[0]["gpu"]["wallclock_khz"], Value::Null);
    assert_eq!(gpus[0]["gpu"]["luid"]["low"], 0x1d3a5);
}

#[test]
fn a_released_7_2_thunk_is_negotiated_by_handshake() {
    let r = sim(Some("thunk-376-released.toml"), &[]);
    assert_eq!(r.json["probe"]["accepted"], "L376");
    assert_eq!(r.json["probe"]["refused"].as_array().unwrap().len(), 2);
    assert_eq!(r.gpus().len(), 1);
}

#[test]
fn a_rejected_handshake_yields_no_gpu_and_one_clear_error() {
    let r = sim(Some("thunk-rejects.toml"), &[]);
    assert!(r.gpus().is_empty());
    assert_eq!(
        r.json["agents"].as_array().unwrap().len(),
        1,
        "the CPU agent remains"
    );
    let reason = r.omission("handshake-rejected");
    assert!(
        reason.contains("396-byte") && reason.contains("ROCPROF_HSAKMT_LAYOUT"),
        "{reason}"
    );
    assert!(
        r.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("accepts none")
    );
}

#[test]
fn a_negotiating_thunk_writes_what_was_agreed() {
    let r = sim(Some("thunk-negotiated.toml"), &[]);
    assert_eq!(r.json["probe"]["accepted"], "L396");
    assert_eq!(r.json["probe"]["measured"], 396);
    assert_eq!(r.gpus().len(), 1, "{:#}", r.json["omissions"]);
}

#[test]
fn an_unknown_record_size_is_reported_and_refused() {
    let r = sim(Some("thunk-420.toml"), &[]);
    assert_eq!(r.json["probe"]["measured"], 420);
    assert_eq!(r.json["layout"]["source"], "default");
    assert!(r.gpus().is_empty());
    assert!(r.json["warnings"][0].as_str().unwrap().contains("420-byte"));
}

#[test]
fn a_missing_entry_point_is_named_and_nothing_is_called() {
    let log = call_log("missing-close");
    let r = sim(
        Some("missing-close.toml"),
        &[("WSLSIM_CALL_LOG", log.to_str().unwrap())],
    );
    assert!(r.gpus().is_empty());
    let reason = r.omission("thunk-incomplete");
    assert!(
        reason.contains("does not export hsaKmtCloseKFD"),
        "{reason}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        !calls.contains("rocdxg hsaKmt"),
        "no thunk entry point may be called:\n{calls}"
    );
    // The text report says the library was found and refused, not that it never loaded.
    let o = rocprof()
        .arg("--sim")
        .env("WSLSIM_SCENARIO", scenario("missing-close.toml"))
        .arg("avail")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("librocdxg.so (found, refused: it lacks entry points"),
        "{text}"
    );
}

#[test]
fn kfd_already_open_is_success_and_every_open_is_closed() {
    let log = call_log("already-open");
    let r = sim(
        Some("kfd-already-open.toml"),
        &[("WSLSIM_CALL_LOG", log.to_str().unwrap())],
    );
    assert_eq!(r.gpus().len(), 1);
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = |f: &str| {
        calls
            .lines()
            .filter(|l| l.starts_with(&format!("rocdxg {f} ")))
            .count()
    };
    assert_eq!(count("hsaKmtOpenKFD"), count("hsaKmtCloseKFD"), "{calls}");
    assert_eq!(
        count("hsaKmtAcquireSystemProperties"),
        count("hsaKmtReleaseSystemProperties")
    );
    let opens = calls
        .lines()
        .filter(|l| l.starts_with("dxcore D3DKMTEnumAdapters3") && !l.contains("num=0 "))
        .count();
    let adapters_closed = calls
        .lines()
        .filter(|l| l.starts_with("dxcore D3DKMTCloseAdapter"))
        .count();
    assert_eq!(
        opens, adapters_closed,
        "every enumerated adapter handle is closed:\n{calls}"
    );
}

#[test]
fn a_failing_open_is_reported() {
    let r = sim(Some("open-fails.toml"), &[]);
    assert!(r.gpus().is_empty());
    assert!(
        r.omission("kfd-open-failed")
            .contains("hsaKmtOpenKFD failed with status 1 (ERROR)")
    );
}

#[test]
fn a_failing_node_read_is_reported_by_node() {
    let r = sim(Some("node-read-fails.toml"), &[]);
    assert!(r.gpus().is_empty());
    assert_eq!(r.json["omissions"][0]["subject"]["node_id"], 1);
    assert_eq!(r.json["omissions"][0]["kind"], "node-read-failed");
}

#[test]
fn two_identical_gpus_with_luids_are_paired_by_luid() {
    let r = sim(Some("two-gpus-luid.toml"), &[]);
    let gpus = r.gpus();
    assert_eq!(gpus.len(), 2, "{:#}", r.json["omissions"]);
    // Adapter 0 (LUID 0x2222) owns node 2, adapter 1 (LUID 0x1111) node 1.
    assert_eq!(gpus[0]["node_id"], 2);
    assert_eq!(gpus[0]["product_name"], "AMD Radeon RX 7600 (B)");
    assert_eq!(gpus[1]["node_id"], 1);
    assert_eq!(gpus[0]["name"], "gfx1102");
    assert_eq!(gpus[0]["logical_node_type_id"], 0);
    assert_eq!(gpus[1]["logical_node_type_id"], 1);
}

#[test]
fn two_identical_gpus_without_luids_are_both_omitted() {
    let r = sim(Some("two-gpus-no-luid.toml"), &[]);
    assert!(r.gpus().is_empty());
    assert_eq!(
        r.omission_kinds(),
        [
            "ambiguous-adapter",
            "ambiguous-adapter",
            "unclaimed-node",
            "unclaimed-node"
        ]
    );
}

#[test]
fn a_non_amd_adapter_is_skipped_and_said() {
    let r = sim(Some("non-amd-adapter.toml"), &[]);
    assert_eq!(r.gpus().len(), 1);
    assert_eq!(r.omission_kinds(), ["non-amd-adapter"]);
    assert_eq!(r.json["omissions"][0]["subject"]["vendor_id"], 0x10de);
    assert_eq!(r.gpus()[0]["logical_node_id"], 1);
}

#[test]
fn an_incomplete_topology_omits_only_that_gpu() {
    let r = sim(Some("incomplete-node.toml"), &[]);
    assert_eq!(r.gpus().len(), 1);
    assert_eq!(r.gpus()[0]["name"], "gfx1150");
    assert!(r.omission("incomplete-topology").contains("simd_per_cu=0"));
}

#[test]
fn gfx_override_and_force() {
    let r = sim(Some("override-gfx.toml"), &[]);
    assert_eq!(r.gpus()[0]["name"], "gfx1100");
    let r = sim(
        Some("override-gfx.toml"),
        &[("ROCPROFILER_FORCE_GFX", "gfx90a")],
    );
    assert_eq!(r.gpus()[0]["name"], "gfx90a");
    assert_eq!(r.gpus()[0]["gpu"]["gfx_target_version"], 90010);
}

#[test]
fn a_malformed_force_gfx_is_ignored_with_a_warning() {
    let r = sim(None, &[("ROCPROFILER_FORCE_GFX", "gfx11")]);
    assert_eq!(r.gpus()[0]["name"], "gfx1150");
    let w = r.json["warnings"][0].as_str().unwrap();
    assert!(w.contains("ROCPROFILER_FORCE_GFX='gfx11'"), "{w}");
}

#[test]
fn the_late_attach_marker_disables_wsl_before_the_thunk_is_loaded() {
    let log = call_log("attach");
    let r = sim(
        None,
        &[
            ("ROCPROFILER_REGISTER_TOOL_ATTACHED", "0"),
            ("WSLSIM_CALL_LOG", log.to_str().unwrap()),
        ],
    );
    assert!(r.json["agents"].as_array().unwrap().is_empty());
    assert_eq!(r.omission_kinds(), ["late-attach"]);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !calls.contains("rocdxg"),
        "librocdxg must not be loaded:\n{calls}"
    );
}

#[test]
fn the_user_vendor_packet_setting_wins() {
    let r = sim(None, &[("WSLKMT_VENDOR_PACKET", "0")]);
    assert_eq!(r.json["vendor_packet"], "0");
}

#[test]
fn no_adapters_is_not_an_error() {
    let r = sim(Some("no-adapters.toml"), &[]);
    assert!(r.json["agents"].as_array().unwrap().is_empty());
    assert_eq!(r.omission_kinds(), ["no-adapters"]);
}

#[test]
fn libdxcore_without_enum_adapters_is_not_wsl() {
    let r = sim(Some("dxcore-no-enum.toml"), &[]);
    assert_eq!(r.json["selection"]["platform"], "gnulinux");
    assert_eq!(r.json["selection"]["reason"], "fallback");
    assert!(
        r.json["selection"]["detail"]
            .as_str()
            .unwrap()
            .contains("D3DKMTEnumAdapters3")
    );
    let r = sim(
        Some("dxcore-no-enum.toml"),
        &[("ROCPROFILER_FORCE_PLATFORM", "wsl")],
    );
    assert!(
        r.omission("dxcore-unavailable")
            .contains("does not export D3DKMTEnumAdapters3")
    );
}

#[test]
fn forcing_native_linux_on_wsl_says_why_no_gpu_is_found() {
    let r = sim(None, &[("ROCPROFILER_FORCE_PLATFORM", "gnulinux")]);
    assert_eq!(r.json["selection"]["platform"], "gnulinux");
    assert!(r.json["agents"].as_array().unwrap().is_empty());
    let why = r.omission("kfd-node-unreadable");
    assert!(
        why.contains("no KFD topology exists") && why.contains("unset ROCPROFILER_FORCE_PLATFORM"),
        "{why}"
    );
}

#[test]
fn forcing_wsl_off_wsl_gives_no_agents() {
    let r = avail_json(
        rocprof()
            .env("ROCPROFILER_FORCE_PLATFORM", "wsl")
            .env("LD_LIBRARY_PATH", "/nonexistent"),
    );
    assert_eq!(r.json["selection"]["reason"], "forced");
    assert!(r.json["agents"].as_array().unwrap().is_empty());
    assert_eq!(r.omission_kinds(), ["dxcore-unavailable"]);
}

#[test]
fn native_linux_reads_the_kfd_topology() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kfd/nodes");
    let r = avail_json(rocprof().env("ROCPROFILER_KFD_TOPOLOGY", &fixture));
    assert_eq!(r.json["selection"]["platform"], "gnulinux");
    assert_eq!(r.json["selection"]["reason"], "kfd-sysfs");
    assert_eq!(r.gpus()[0]["name"], "gfx1100");
    assert_eq!(r.gpus()[0]["gpu"]["cu_count"], 96);
    // An unknown forced platform falls back to autodetection.
    let r = avail_json(
        rocprof()
            .env("ROCPROFILER_KFD_TOPOLOGY", &fixture)
            .env("ROCPROFILER_FORCE_PLATFORM", "not-a-platform"),
    );
    assert_eq!(r.json["selection"]["reason"], "kfd-sysfs");
    assert_eq!(r.gpus().len(), 1);
    assert!(
        r.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not-a-platform")
    );
}

#[test]
fn an_invalid_layout_value_is_refused_before_anything_runs() {
    let out = rocprof()
        .args(["--sim", "avail"])
        .env("ROCPROF_HSAKMT_LAYOUT", "400")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ROCPROF_HSAKMT_LAYOUT='400'") && err.contains("368, 376, 392, 396"),
        "{err}"
    );
}

#[test]
fn a_broken_scenario_file_is_loud_and_nothing_crashes() {
    let bad = std::env::temp_dir().join(format!("rocprof-bad-{}.toml", std::process::id()));
    std::fs::write(&bad, "[thunk]\nlayuot = 376\n").unwrap();
    let r = sim(Some(bad.to_str().unwrap()), &[]);
    assert!(r.gpus().is_empty());
    assert!(String::from_utf8_lossy(&r.out.stderr).contains("wslsim: cannot use scenario"));
}

#[test]
fn a_missing_simulator_is_explained() {
    let out = rocprof()
        .args(["--sim", "avail"])
        .env("ROCPROF_SIM_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cargo xtask build"));
}
