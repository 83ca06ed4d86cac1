//! Runs every workload against the staged simulator (`target/debug/sim/lib`, made by
//! `cargo xtask build`) and checks its exit status and output (`harness = false`).

#[path = "support/common.rs"]
mod common;
#[path = "support/tour.rs"]
mod tour;

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use common::{Run, Tally, run, scratch, setup_failed, staged_lib_dir};

fn bin(name: &str) -> &'static Path {
    Path::new(match name {
        "reference-workload" => env!("CARGO_BIN_EXE_reference-workload"),
        "hip-rate" => env!("CARGO_BIN_EXE_hip-rate"),
        "hsa-rate" => env!("CARGO_BIN_EXE_hsa-rate"),
        "d2d-copy" => env!("CARGO_BIN_EXE_d2d-copy"),
        "crash-midway" => env!("CARGO_BIN_EXE_crash-midway"),
        "multi-process" => env!("CARGO_BIN_EXE_multi-process"),
        "vector-add" => env!("CARGO_BIN_EXE_vector-add"),
        _ => unreachable!("unknown workload {name}"),
    })
}

/// Problems common to every successful run: exit 0 and no simulator diagnostics.
fn succeeded(r: &Run) -> Vec<String> {
    let mut p = Vec::new();
    if !r.ok() {
        p.push("did not exit 0".into());
    }
    if r.stderr.contains("(sim)") {
        p.push("a simulator library printed a diagnostic".into());
    }
    p
}

fn has_line(r: &Run, line: &str) -> bool {
    r.stdout.lines().any(|l| l == line)
}

fn rate_line(r: &Run, calls: u64) -> Vec<String> {
    let last = r.stdout.lines().last().unwrap_or("");
    let prefix = format!("calls={calls} ns=");
    // Further `key=value` fields may follow (hsa-rate adds its peak RSS).
    let ns = last
        .strip_prefix(&prefix)
        .map(|rest| rest.split_whitespace().next().unwrap_or(""));
    match ns.map(str::parse::<u64>) {
        Some(Ok(ns)) if ns > 0 => Vec::new(),
        _ => vec![format!("last line {last:?} is not `{prefix}<ns>`")],
    }
}

fn call_log_lines(path: &Path, needle: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let code = match args.get(2).map(String::as_str) {
            Some("tour") => tour::tour(),
            Some("after-teardown") => tour::after_teardown(),
            other => {
                println!("unknown child mode {other:?}");
                2
            }
        };
        std::process::exit(code);
    }
    let lib = match staged_lib_dir() {
        Ok(lib) => lib,
        Err(why) => return setup_failed(&why),
    };
    let dir = scratch("sim-workloads");
    let mut t = Tally::default();
    let go = |name: &str, args: &[&str], env: &[(&str, OsString)]| {
        run(bin(name), args, Some(&lib), env, &dir)
    };

    // The reference workload, with the GPU model's call log: 16 SDMA copies, 8 dispatches.
    let log = dir.join("reference.calls");
    let r = go(
        "reference-workload",
        &[],
        &[("WSLSIM_CALL_LOG", log.clone().into())],
    );
    let mut p = succeeded(&r);
    for i in 0..8 {
        if !has_line(&r, &format!("reference-workload: iter{i} verified")) {
            p.push(format!("iter{i} not verified"));
        }
    }
    if !has_line(&r, "reference-workload: 8 iterations verified") {
        p.push("no final verification line".into());
    }
    let copies = call_log_lines(&log, "wslsim_gpu_copy node=1 bytes=1048576 -> 0").len();
    let dispatches = call_log_lines(
        &log,
        "wslsim_gpu_dispatch node=1 grid=262144x1x1 workgroup=256x1x1",
    )
    .len();
    if copies != 16 || dispatches != 8 {
        p.push(format!(
            "GPU model saw {copies} 1 MiB copies and {dispatches} dispatches, expected 16 and 8"
        ));
    }
    if call_log_lines(&log, "hsa hsa_shut_down").len() != 1 {
        p.push("the teardown at exit did not call hsa_shut_down exactly once".into());
    }
    t.check("reference-workload", p, Some(&r));

    let r = go("hip-rate", &["20000"], &[]);
    let mut p = succeeded(&r);
    p.extend(rate_line(&r, 20000));
    t.check("hip-rate 20000", p, Some(&r));

    let r = go("hsa-rate", &["20000"], &[]);
    let mut p = succeeded(&r);
    p.extend(rate_line(&r, 20000));
    t.check("hsa-rate 20000", p, Some(&r));

    // Device-to-device: one blit dispatch (512-item workgroups, at most 16), no third copy.
    let log = dir.join("d2d.calls");
    let r = go("d2d-copy", &[], &[("WSLSIM_CALL_LOG", log.clone().into())]);
    let mut p = succeeded(&r);
    if !has_line(
        &r,
        "d2d-copy: 1048576 bytes copied device-to-device and verified",
    ) {
        p.push("no verification line".into());
    }
    let copies = call_log_lines(&log, "wslsim_gpu_copy").len();
    let dispatches = call_log_lines(&log, "wslsim_gpu_dispatch");
    let blit_ok =
        dispatches.len() == 1 && dispatches[0].contains("grid=8192x1x1 workgroup=512x1x1");
    if copies != 2 || !blit_ok {
        p.push(format!("expected 2 SDMA copies and one 16x512 blit dispatch, got {copies} copies and {dispatches:?}"));
    }
    t.check("d2d-copy", p, Some(&r));

    for (args, done) in [(&[][..], 4u32), (&["2"][..], 2)] {
        let r = go("crash-midway", args, &[]);
        let mut p = Vec::new();
        if r.signal != Some(libc::SIGSEGV) {
            p.push("not terminated by SIGSEGV".into());
        }
        for i in 0..8 {
            let seen = has_line(&r, &format!("crash-midway: iter{i} verified"));
            if seen != (i < done) {
                p.push(format!("iter{i} verified: {seen}, expected {}", i < done));
            }
        }
        if !has_line(
            &r,
            &format!("crash-midway: raising SIGSEGV after {done} iterations"),
        ) {
            p.push("no crash announcement".into());
        }
        t.check(&format!("crash-midway {}", args.join(" ")), p, Some(&r));
    }

    let r = go("multi-process", &[], &[]);
    let mut p = succeeded(&r);
    for who in ["child", "parent"] {
        if !has_line(&r, &format!("multi-process {who}: 8 iterations verified")) {
            p.push(format!("{who} did not verify"));
        }
    }
    t.check("multi-process", p, Some(&r));

    for (args, waves) in [
        (&[][..], 8192u64),
        (&["1000", "64"][..], 32),
        (&["100", "33"][..], 8),
        (&["65536", "1024"][..], 2048),
    ] {
        let r = go("vector-add", args, &[]);
        let mut p = succeeded(&r);
        if r.stdout.lines().last() != Some(&format!("waves={waves}")) {
            p.push(format!("expected the last line waves={waves}"));
        }
        t.check(&format!("vector-add {}", args.join(" ")), p, Some(&r));
    }

    // HIP entry points beyond the workloads', driven from a child of this test.
    let me = std::env::current_exe().unwrap_or_default();
    let r = run(&me, &["--child", "tour"], Some(&lib), &[], &dir);
    let mut p = succeeded(&r);
    if !has_line(&r, "tour ok") {
        p.push("the tour did not complete".into());
    }
    t.check(
        "api tour: pinned, streams, events, memset, modules, errors",
        p,
        Some(&r),
    );

    // A HIP call from an exit handler that runs after the teardown fails cleanly.
    let log = dir.join("after.calls");
    let r = run(
        &me,
        &["--child", "after-teardown"],
        Some(&lib),
        &[("WSLSIM_CALL_LOG", log.clone().into())],
        &dir,
    );
    let mut p = succeeded(&r);
    if !has_line(&r, "after teardown: hipGetDevice -> 4") {
        p.push("expected hipErrorDeinitialized (4) after the teardown".into());
    }
    if call_log_lines(&log, "hsa hsa_shut_down").len() != 1 {
        p.push("hsa_shut_down must run exactly once".into());
    }
    t.check("calls after the teardown at exit", p, Some(&r));

    // An empty machine: HIP reports no device; the workload exits 1 with HIP's message.
    let scenario = dir.join("empty.toml");
    let _ = std::fs::write(&scenario, "machine = \"empty\"\n");
    let r = go(
        "reference-workload",
        &[],
        &[("WSLSIM_SCENARIO", scenario.into())],
    );
    let mut p = Vec::new();
    if r.code != Some(1)
        || !r
            .stderr
            .contains("no ROCm-capable device is detected (100)")
    {
        p.push("expected exit 1 and hipErrorNoDevice from hipGetDeviceCount".into());
    }
    t.check("no GPU in the scenario", p, Some(&r));

    // Without the staged libraries: a clear message naming LD_LIBRARY_PATH, exit 2.
    let r = run(bin("reference-workload"), &[], None, &[], &dir);
    let mut p = Vec::new();
    if r.code != Some(2) {
        p.push("expected exit status 2".into());
    }
    if !r.stderr.contains("libamdhip64.so.7") || !r.stderr.contains("LD_LIBRARY_PATH") {
        p.push("the message must name libamdhip64.so.7 and LD_LIBRARY_PATH".into());
    }
    t.check("missing libraries", p, Some(&r));

    t.finish(&dir)
}
