//! `rocprof doctor` end to end on the simulated stack: a clean setup reports no warning and no
//! error (and its self-test passes every step), and every pitfall of the seed document, set up
//! with a crafted environment or a simulator scenario, is reported by the check that names it.
//!
//! Needs the staged simulator: run through `cargo xtask test` (or `cargo xtask build` first).

mod support;

use serde_json::Value;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::{STEERING, exe_dir, scratch};

/// Variables of the caller's environment that would change what doctor finds, besides
/// [`STEERING`] (which change what a run does).
const CLEARED_TOO: [&str; 9] = [
    "LD_LIBRARY_PATH",
    "WSLKMT_VENDOR_PACKET",
    "ROCPROFILER_REGISTER_TOOL_ATTACHED",
    "ROCPROF_ATT_LIBRARY_PATH",
    "ROCPROF_DXG_DEVICE",
    "ROCM_PATH",
    "ROCPROF_SIM_ACTIVE",
    "ROCPROF_SIM_DIR",
    "HSA_TOOLS_REPORT_REGISTER_FAILURE",
];

struct Doctor {
    json: Value,
    out: Output,
    wall: Duration,
}

impl Doctor {
    fn checks(&self) -> &Vec<Value> {
        self.json["checks"].as_array().expect("checks")
    }

    fn check(&self, name: &str) -> &Value {
        self.checks()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no check {name} in\n{}", self.lines()))
    }

    fn status(&self, name: &str) -> String {
        self.check(name)["status"].as_str().unwrap().to_owned()
    }

    fn evidence(&self, name: &str) -> String {
        let c = self.check(name);
        format!(
            "{} | fix: {}",
            c["evidence"].as_str().unwrap(),
            c["fix"].as_str().unwrap_or("")
        )
    }

    /// Every check that is not ok, as `status check: evidence`.
    fn problems(&self) -> Vec<String> {
        self.checks()
            .iter()
            .filter(|c| c["status"] != "ok")
            .map(|c| format!("{} {}: {}", c["status"], c["check"], c["evidence"]))
            .collect()
    }

    fn lines(&self) -> String {
        self.checks()
            .iter()
            .map(|c| format!("{} {}: {}", c["status"], c["check"], c["evidence"]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Asserts `name` has `status` and its evidence (or fix) contains every one of `words`.
    fn says(&self, name: &str, status: &str, words: &[&str]) {
        let evidence = self.evidence(name);
        assert_eq!(
            self.status(name),
            status,
            "{name}: {evidence}\n--- all:\n{}",
            self.lines()
        );
        for w in words {
            assert!(evidence.contains(w), "{name} lacks {w:?}: {evidence}");
        }
    }
}

fn staged() {
    assert!(
        exe_dir().join("sim/lib/libhsa-runtime64.so.1").exists()
            && exe_dir().join("rocprof-selftest").exists()
            && exe_dir().join("librocprof_tool.so").exists(),
        "the simulated stack is not staged: run `cargo xtask build` (or `cargo xtask test`)"
    );
}

/// `rocprof --sim doctor --json [args] [-- app]` with a clean environment plus `env`, a fresh
/// `HOME` (made by `home`) and `TMPDIR`.
fn doctor_with(tag: &str, env: &[(&str, &str)], args: &[&str], home: impl FnOnce(&Path)) -> Doctor {
    staged();
    let dir = scratch("doctor", tag);
    let home_dir = dir.join("home");
    std::fs::create_dir_all(&home_dir).unwrap();
    home(&home_dir);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in STEERING.iter().chain(&CLEARED_TOO) {
        c.env_remove(v);
    }
    c.env("HOME", &home_dir).env("TMPDIR", &tmp);
    c.args(["--sim", "doctor", "--json"]).args(args);
    c.envs(env.iter().copied());
    let started = Instant::now();
    let out = c.output().unwrap();
    let wall = started.elapsed();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let d = Doctor { json, out, wall };
    let leftover: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(
        leftover.is_empty(),
        "record directories left in TMPDIR: {leftover:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    d
}

fn doctor(tag: &str, env: &[(&str, &str)]) -> Doctor {
    doctor_with(tag, env, &[], |_| {})
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
        .display()
        .to_string()
}

/// A scenario file written for one test.
fn crafted_scenario(tag: &str, text: &str) -> PathBuf {
    let dir = scratch("doctor-scenario", tag);
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn exit_code(d: &Doctor) -> i32 {
    d.out.status.code().unwrap_or(-1)
}

#[test]
fn a_clean_setup_reports_nothing_and_its_self_test_passes_within_the_budget() {
    let d = doctor("clean", &[]);
    assert!(d.problems().is_empty(), "{:#?}", d.problems());
    assert_eq!(exit_code(&d), 0);
    assert_eq!(d.json["schema"], "rocprof-doctor/1");
    assert_eq!(d.json["summary"]["errors"], 0);
    assert_eq!(d.json["summary"]["warnings"], 0);
    d.says(
        "self-test.init",
        "ok",
        &["hsa_init", "succeeded", "GPU gfx1150 (node 1)"],
    );
    d.says("self-test.table", "ok", &["offered its API table"]);
    d.says("self-test.agents", "ok", &["node 1 (gfx1150)"]);
    d.says(
        "self-test.dispatch",
        "ok",
        &[
            "completed its signal",
            "through the profiler's intercepted queue",
        ],
    );
    d.says(
        "self-test.counters",
        "ok",
        &["GRBM_COUNT=", "came back non-zero", "wrote 0x5eedcafe"],
    );
    d.says(
        "platform.kfd",
        "ok",
        &[
            "PC sampling and SPM are unavailable",
            "native Linux with the amdgpu driver",
        ],
    );
    d.says("lib.pair", "ok", &["a matched pair", "396-byte"]);
    d.says(
        "lib.thunk",
        "ok",
        &["librocdxg.so.1.2.0", "LD_LIBRARY_PATH", "version 1.2.0"],
    );
    let outcome = &d.json["self_test"]["outcome"];
    assert!(outcome["counters"]["values"][0]["value"].as_u64().unwrap() > 0);
    assert!(
        d.json["self_test"]["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "hsa")
    );
    let elapsed = d.json["elapsed_ms"].as_u64().unwrap();
    eprintln!(
        "rocprof doctor on the simulated stack: {elapsed} ms inside doctor, {} ms wall clock (re-exec for --sim included)",
        d.wall.as_millis()
    );
    // The budget is 2 s; only a pathological slowdown fails here (the time is printed above).
    assert!(d.wall < Duration::from_secs(10), "took {:?}", d.wall);
}

#[test]
fn the_text_report_is_one_line_per_check_and_a_summary() {
    staged();
    let dir = scratch("doctor", "text");
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in STEERING.iter().chain(&CLEARED_TOO) {
        c.env_remove(v);
    }
    let out = c
        .env("HOME", &dir)
        .env("TMPDIR", &dir)
        .args(["--sim", "doctor"])
        .env("HSA_TOOLS_DISABLE_REGISTER", "1")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (last, checks) = lines.split_last().unwrap();
    assert!(last.starts_with("summary: "), "{text}");
    assert!(last.contains("error(s)"), "{text}");
    for l in checks {
        let (status, rest) = l.split_once(' ').unwrap();
        assert!(["ok", "warning", "error"].contains(&status), "{l}");
        let name = rest.trim_start().split(':').next().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c == '.' || c == '-'),
            "{l}"
        );
        if status != "ok" {
            assert!(
                l.matches("; ").count() >= 1,
                "a problem line has its fix: {l}"
            );
        }
    }
    assert!(
        text.contains("error    env.disable-register: HSA_TOOLS_DISABLE_REGISTER=1"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1), "an error exits 1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_dxg_device_is_reported() {
    let d = doctor("no-dxg", &[("ROCPROF_DXG_DEVICE", "/nonexistent/dev/dxg")]);
    d.says(
        "platform.dxg",
        "error",
        &[
            "/nonexistent/dev/dxg",
            "not present",
            "unset ROCPROF_DXG_DEVICE",
        ],
    );
    d.says("discovery.agents", "error", &["no GPU agent"]);
    // The runtime still finds its GPU; the profiler cannot describe it.
    d.says("self-test.agents", "error", &["node 1", "no agent record"]);
    assert_eq!(exit_code(&d), 1);
}

#[test]
fn a_forced_platform_is_reported() {
    let d = doctor("force-wsl", &[("ROCPROFILER_FORCE_PLATFORM", "wsl")]);
    d.says(
        "env.force-platform",
        "warning",
        &["escape hatch", "unset ROCPROFILER_FORCE_PLATFORM"],
    );
    assert_eq!(d.json["summary"]["errors"], 0, "{:#?}", d.problems());
    let d = doctor(
        "force-gnulinux",
        &[("ROCPROFILER_FORCE_PLATFORM", "gnulinux")],
    );
    d.says("env.force-platform", "error", &["gnulinux", "no GPU agent"]);
    d.says("self-test.agents", "error", &["node 1"]);
    let d = doctor("force-bogus", &[("ROCPROFILER_FORCE_PLATFORM", "windows")]);
    d.says("env.force-platform", "warning", &["'windows'", "ignored"]);
}

#[test]
fn a_stock_runtime_with_a_newer_thunk_is_the_heap_corruption_case() {
    let s = crafted_scenario(
        "stock-newer-thunk",
        "[runtime]\ngeneration = \"stock-7.2\"\nlayout = 376\n\n[thunk]\nlayout = 396\nabi_check = \"absent\"\n",
    );
    let s = s.to_str().unwrap();
    // With the variable unset: hsa_init fails, and the probes tell the generation.
    let d = doctor("stock-unset", &[("WSLSIM_SCENARIO", s)]);
    d.says(
        "lib.pair",
        "error",
        &[
            "heap corruption",
            "stock ROCm 7.2.x",
            "376",
            "396",
            "no DxgAbiCheck",
        ],
    );
    d.says("env.dxg-detection", "error", &["unset", "needs 1"]);
    d.says(
        "self-test.init",
        "error",
        &["with HSA_ENABLE_DXG_DETECTION=1 it succeeds"],
    );
    // With it set, the runtime runs, and is still told apart as a stock one.
    let d = doctor(
        "stock-set",
        &[("WSLSIM_SCENARIO", s), ("HSA_ENABLE_DXG_DETECTION", "1")],
    );
    d.says("lib.pair", "error", &["heap corruption"]);
    d.says("env.dxg-detection", "ok", &["stock ROCm 7.2.x"]);
    d.says("self-test.init", "ok", &[]);
}

#[test]
fn a_matched_stock_pair_is_fine_but_needs_dxg_detection() {
    let s = scenario("stock-7.2-runtime.toml");
    let d = doctor(
        "stock-matched",
        &[("WSLSIM_SCENARIO", &s), ("HSA_ENABLE_DXG_DETECTION", "1")],
    );
    d.says("lib.pair", "ok", &["a matched pair", "376"]);
    assert!(d.problems().is_empty(), "{:#?}", d.problems());
    let d = doctor("stock-matched-unset", &[("WSLSIM_SCENARIO", &s)]);
    d.says(
        "env.dxg-detection",
        "error",
        &["the runtime needs 1", "export HSA_ENABLE_DXG_DETECTION=1"],
    );
}

#[test]
fn an_older_thunk_under_a_current_runtime_is_a_mismatched_pair() {
    let d = doctor(
        "old-thunk",
        &[("WSLSIM_SCENARIO", &scenario("thunk-376-no-handshake.toml"))],
    );
    d.says(
        "lib.pair",
        "error",
        &[
            "mismatched pair",
            "current runtime",
            "396",
            "376",
            "20 bytes",
        ],
    );
    let d = doctor(
        "rejecting-thunk",
        &[("WSLSIM_SCENARIO", &scenario("thunk-rejects.toml"))],
    );
    d.says("lib.thunk-layout", "error", &["refuses every layout"]);
    d.says("lib.pair", "error", &["hsa_init failed"]);
}

#[test]
fn preloading_librocdxg_by_path_loads_it_twice_and_by_name_does_not() {
    let dir = scratch("doctor", "preload-copy-dir");
    let copy = dir.join("librocdxg.so.1.2.0");
    std::fs::copy(exe_dir().join("sim/lib/librocdxg.so.1.2.0"), &copy).unwrap();
    let d = doctor("preload-path", &[("LD_PRELOAD", copy.to_str().unwrap())]);
    d.says(
        "env.ld-preload",
        "error",
        &[
            "librocdxg.so.1 (its SONAME)",
            "maps another copy",
            "sim/lib/librocdxg.so",
            "mapped 2 copies",
            "LD_PRELOAD=librocdxg.so",
        ],
    );
    let d = doctor("preload-name", &[("LD_PRELOAD", "librocdxg.so")]);
    d.says("env.ld-preload", "ok", &["by bare name"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_disabled_registration_is_reported_with_the_counterfactual() {
    let d = doctor("disable-register", &[("HSA_TOOLS_DISABLE_REGISTER", "1")]);
    d.says(
        "env.disable-register",
        "error",
        &["HSA_TOOLS_DISABLE_REGISTER=1", "no output files"],
    );
    d.says(
        "self-test.table",
        "error",
        &[
            "never offered",
            "without it the runtime does offer the table",
        ],
    );
    let d = doctor(
        "disable-register-true",
        &[("HSA_TOOLS_DISABLE_REGISTER", "true")],
    );
    d.says("env.disable-register", "ok", &["only exactly 1"]);
    d.says("self-test.table", "ok", &[]);
}

#[test]
fn dxg_detection_off_is_reported() {
    let d = doctor("dxg-off", &[("HSA_ENABLE_DXG_DETECTION", "0")]);
    d.says("env.dxg-detection", "error", &["=0", "never set it to 0"]);
    d.says("self-test.init", "error", &["hsa_init", "failed"]);
}

#[test]
fn a_closed_vendor_packet_gate_zeroes_the_self_tests_counter_read() {
    let d = doctor("vendor-packet", &[("WSLKMT_VENDOR_PACKET", "0")]);
    d.says(
        "env.vendor-packet",
        "warning",
        &["WSLKMT_VENDOR_PACKET=0", "every counter reads 0"],
    );
    d.says(
        "self-test.counters",
        "warning",
        &[
            "came back zero",
            "GRBM_COUNT=0",
            "WSLKMT_VENDOR_PACKET=0",
            "never reached memory",
        ],
    );
    d.says("self-test.dispatch", "ok", &[]);
    assert_eq!(d.json["summary"]["errors"], 0, "{:#?}", d.problems());
}

#[test]
fn the_late_attach_marker_is_reported() {
    let d = doctor(
        "late-attach",
        &[("ROCPROFILER_REGISTER_TOOL_ATTACHED", "0")],
    );
    d.says(
        "env.late-attach",
        "error",
        &[
            "late-attach marker",
            "reference-count",
            "launch the application under rocprof",
        ],
    );
    d.says("self-test.agents", "error", &["late attach"]);
}

#[test]
fn a_malformed_forced_gfx_target_is_reported() {
    let d = doctor("force-gfx-bad", &[("ROCPROFILER_FORCE_GFX", "gfx11")]);
    d.says(
        "env.force-gfx",
        "warning",
        &["'gfx11' is malformed", "gfx<NNN>"],
    );
    let d = doctor("force-gfx-good", &[("ROCPROFILER_FORCE_GFX", "gfx1150")]);
    d.says("env.force-gfx", "ok", &["gfx1150 overrides"]);
}

#[test]
fn a_malformed_layout_override_is_reported() {
    let d = doctor("layout", &[("ROCPROF_HSAKMT_LAYOUT", "400")]);
    d.says("env.hsakmt-layout", "error", &["'400'", "refuses to start"]);
}

const UBUNTU_BASHRC: &str = "# ~/.bashrc: executed by bash(1) for non-login shells.\n\n# If not running interactively, don't do anything\ncase $- in\n    *i*) ;;\n      *) return;;\nesac\n\nHISTCONTROL=ignoreboth\nexport HSA_ENABLE_DXG_DETECTION=1\nexport WSLKMT_VENDOR_PACKET=1\nexport EDITOR=vi\n";

#[test]
fn exports_after_the_bashrc_early_return_are_reported() {
    let d = doctor_with("bashrc", &[], &[], |home| {
        std::fs::write(home.join(".bashrc"), UBUNTU_BASHRC).unwrap();
        std::fs::write(
            home.join(".profile"),
            "if [ -n \"$BASH_VERSION\" ]; then\n    . \"$HOME/.bashrc\"\nfi\nexport WSLKMT_VENDOR_PACKET=1\n",
        )
        .unwrap();
    });
    d.says(
        "shell.startup",
        "warning",
        &[
            "HSA_ENABLE_DXG_DETECTION (line 10)",
            "line 6",
            "scripts, CI jobs",
            ".profile",
        ],
    );
    let evidence = d.evidence("shell.startup");
    assert!(
        !evidence.contains("WSLKMT_VENDOR_PACKET (line"),
        "{evidence}"
    );
    assert!(!evidence.contains("EDITOR"), "{evidence}");
    // Exported from ~/.profile too: nothing to say.
    let d = doctor_with("bashrc-profile", &[], &[], |home| {
        std::fs::write(home.join(".bashrc"), UBUNTU_BASHRC).unwrap();
        std::fs::write(
            home.join(".profile"),
            "export HSA_ENABLE_DXG_DETECTION=1\nexport WSLKMT_VENDOR_PACKET=1\n",
        )
        .unwrap();
    });
    d.says("shell.startup", "ok", &["returns early"]);
}

#[test]
fn an_empty_decoder_path_is_reported() {
    let d = doctor("att-empty-var", &[("ROCPROF_ATT_LIBRARY_PATH", "")]);
    d.says(
        "att.decoder",
        "warning",
        &["set but empty", "librocprof-trace-decoder.so"],
    );
    let dir = scratch("doctor", "att-decoder-dir");
    let d = doctor(
        "att-empty-dir",
        &[("ROCPROF_ATT_LIBRARY_PATH", dir.to_str().unwrap())],
    );
    d.says(
        "att.decoder",
        "warning",
        &[
            "not found",
            dir.to_str().unwrap(),
            "raw .att and .out files",
        ],
    );
    let d = doctor_with(
        "att-option",
        &[],
        &["--att-library-path", dir.to_str().unwrap()],
        |_| {},
    );
    d.says("att.decoder", "warning", &["--att-library-path"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_runtime_suppressing_registration_fails_the_self_test() {
    let d = doctor(
        "suppressing",
        &[("WSLSIM_SCENARIO", &scenario("suppressing-runtime.toml"))],
    );
    d.says(
        "self-test.table",
        "error",
        &[
            "never offered its API table",
            "suppresses registration on the DXG path",
            "no output files",
        ],
    );
    d.says("self-test.init", "ok", &[]);
    d.says("env.disable-register", "ok", &[]);
    assert_eq!(exit_code(&d), 1);
}

#[test]
fn an_application_is_inspected_not_run() {
    let dir = scratch("doctor", "apps-dir");
    // A script that drops the environment of what it starts.
    let script = dir.join("wrapper.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n# run the real thing\nexec env -i ./real-app \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A statically linked program: an ELF header and one PT_LOAD, no interpreter.
    let mut elf = vec![0u8; 120];
    elf[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
    elf[16..18].copy_from_slice(&2u16.to_le_bytes());
    elf[18..20].copy_from_slice(&62u16.to_le_bytes());
    elf[20..24].copy_from_slice(&1u32.to_le_bytes());
    elf[32..40].copy_from_slice(&64u64.to_le_bytes());
    elf[52..54].copy_from_slice(&64u16.to_le_bytes());
    elf[54..56].copy_from_slice(&56u16.to_le_bytes());
    elf[56..58].copy_from_slice(&1u16.to_le_bytes());
    elf[64..68].copy_from_slice(&1u32.to_le_bytes());
    elf[96..104].copy_from_slice(&120u64.to_le_bytes());
    let static_app = dir.join("static-app");
    std::fs::write(&static_app, &elf).unwrap();
    std::fs::set_permissions(&static_app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let setuid = dir.join("setuid-app");
    std::fs::copy(exe_dir().join("reference-workload"), &setuid).unwrap();
    std::fs::set_permissions(&setuid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let plain = dir.join("not-executable");
    std::fs::write(&plain, "data").unwrap();

    let app = exe_dir().join("reference-workload");
    let d = doctor_with(
        "app-ok",
        &[],
        &["--", app.to_str().unwrap(), "--ignored"],
        |_| {},
    );
    d.says("app", "ok", &["dynamically linked", "does not run it"]);
    d.says("app.libraries", "ok", &["links no ROCm library directly"]);
    assert!(d.problems().is_empty(), "{:#?}", d.problems());

    let d = doctor_with("app-script", &[], &["--", script.to_str().unwrap()], |_| {});
    d.says("app", "ok", &["a script run by"]);
    d.says("app.script", "warning", &["env -i", "line 3"]);

    let d = doctor_with(
        "app-static",
        &[],
        &["--", static_app.to_str().unwrap()],
        |_| {},
    );
    d.says("app", "error", &["statically linked", "ignores LD_PRELOAD"]);

    let d = doctor_with("app-setuid", &[], &["--", setuid.to_str().unwrap()], |_| {});
    d.says("app", "error", &["set-user-ID", "secure-execution"]);

    let d = doctor_with("app-plain", &[], &["--", plain.to_str().unwrap()], |_| {});
    d.says("app", "error", &["not executable"]);

    let d = doctor_with("app-missing", &[], &["--", "no-such-app-anywhere"], |_| {});
    d.says("app", "error", &["not found on PATH"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An application linked against a second copy of the HSA runtime through its DT_RPATH (which
/// the loader searches before LD_LIBRARY_PATH): doctor names it, and the self-test loads that
/// copy. Needs a C compiler (skipped, and said, without one).
#[test]
fn an_applications_runpath_selects_its_runtime() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler (cc) to build the test application");
        return;
    }
    staged();
    let dir = scratch("doctor", "runpath-app");
    let lib = dir.join("rocm/lib");
    std::fs::create_dir_all(&lib).unwrap();
    // The simulated runtime finds the DXG stand-in at <its dir>/../dev/dxg.
    std::fs::create_dir_all(dir.join("rocm/dev")).unwrap();
    std::fs::write(dir.join("rocm/dev/dxg"), "").unwrap();
    std::fs::copy(
        exe_dir().join("sim/lib/libhsa-runtime64.so.1"),
        lib.join("libhsa-runtime64.so.1"),
    )
    .unwrap();
    let source = dir.join("app.c");
    std::fs::write(
        &source,
        "int hsa_init(void);\nint main(void) { return hsa_init(); }\n",
    )
    .unwrap();
    let app = dir.join("app");
    let built = Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(&app)
        .arg(format!("-L{}", lib.display()))
        .arg("-l:libhsa-runtime64.so.1")
        .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", lib.display()))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let d = doctor_with("runpath", &[], &["--", app.to_str().unwrap()], |_| {});
    d.says(
        "app.libraries",
        "warning",
        &[
            "rocm/lib/libhsa-runtime64.so.1 (DT_RPATH)",
            "an LD_LIBRARY_PATH override does not reach",
        ],
    );
    let loaded = d.json["self_test"]["outcome"]["runtime_path"]
        .as_str()
        .unwrap();
    assert!(
        loaded.contains("rocm/lib/libhsa-runtime64.so.1"),
        "{loaded}"
    );
    d.says("self-test.table", "ok", &[]);
    let _ = std::fs::remove_dir_all(&dir);
}
