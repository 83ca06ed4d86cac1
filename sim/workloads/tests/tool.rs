//! The reference workload under a minimal tool of its own (`harness = false`).
//!
//! Compiles `tests/support/mini_tool.rs` with rustc into a cdylib, preloads it
//! (`LD_PRELOAD`) into `reference-workload` running on the staged simulator, and checks what
//! the tool saw through rocprofiler-register: the order in which the "hip_compiler", "hip",
//! "hsa" and "roctx" tables arrived (each before its first use), the table sizes, and the
//! calls counted by wrapping the table entries in place: exactly 52 HIP API calls (16
//! `hipMemcpy`, 8 `hipLaunchKernel`, ...) and nothing else, 8 ROCTx pushes and pops, and the
//! HSA calls HIP made underneath: 705..=740 records (the seed: 710..=734) across exactly 38
//! functions, with the signal pool, queue, copies, markers and their async handlers.

#[path = "support/common.rs"]
mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use common::{Tally, run, scratch, setup_failed, staged_lib_dir};

fn rustc() -> OsString {
    std::env::var_os("RUSTC")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| OsString::from(env!("SIM_WORKLOADS_RUSTC")))
}

fn build_tool(dir: &Path) -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mini_tool.rs");
    let out = dir.join("libmini_tool.so");
    let rustc = rustc();
    let output = Command::new(&rustc)
        .args([
            "--crate-type",
            "cdylib",
            "--edition",
            "2024",
            "-C",
            "debuginfo=0",
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", rustc.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "compiling {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(out)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// HIP runtime names by index (`abi/hip-table-order.txt`, line n+1 = index n).
fn hip_names() -> Result<Vec<String>, String> {
    let path = workspace().join("abi/hip-table-order.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.lines().map(|l| l.trim().to_owned()).collect())
}

const HIP_COMPILER_NAMES: [&str; 9] = [
    "__hipPopCallConfiguration",
    "__hipPushCallConfiguration",
    "__hipRegisterFatBinary",
    "__hipRegisterFunction",
    "__hipRegisterManagedVar",
    "__hipRegisterSurface",
    "__hipRegisterTexture",
    "__hipRegisterVar",
    "__hipUnregisterFatBinary",
];

/// HSA names of a table by index (`abi/hsa-runtime-tables.tsv`: offset 16 + 8·index).
fn hsa_names(table: &str) -> Result<BTreeMap<usize, String>, String> {
    let path = workspace().join("abi/hsa-runtime-tables.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut names = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() == 4 && f[0] == table && f[1].ends_with("_fn") {
            let offset: usize = f[2]
                .parse()
                .map_err(|_| format!("bad offset in {line:?}"))?;
            names.insert((offset - 16) / 8, f[1].trim_end_matches("_fn").to_owned());
        }
    }
    Ok(names)
}

/// What the tool wrote.
#[derive(Default, Debug)]
struct Report {
    order: Vec<String>,
    tables: BTreeMap<String, String>,
    counts: BTreeMap<(String, usize), u64>,
    typed: BTreeMap<String, u64>,
}

fn parse(text: &str) -> Report {
    let mut r = Report::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["order", rest @ ..] => r.order = rest.iter().map(|s| s.to_string()).collect(),
            ["table", name, ..] => {
                r.tables.insert(name.to_string(), line.to_owned());
            }
            ["count", table, index, n] => {
                if let (Ok(i), Ok(n)) = (index.parse(), n.parse()) {
                    r.counts.insert((table.to_string(), i), n);
                }
            }
            ["typed", name, n] => {
                r.typed
                    .insert(name.to_string(), n.parse().unwrap_or(u64::MAX));
            }
            _ => {}
        }
    }
    r
}

/// Calls per function name for one counter table.
fn named(
    r: &Report,
    table: &str,
    names: &dyn Fn(usize) -> Option<String>,
) -> BTreeMap<String, u64> {
    r.counts
        .iter()
        .filter(|((t, _), _)| t == table)
        .map(|((_, i), n)| (names(*i).unwrap_or_else(|| format!("#{i}")), *n))
        .collect()
}

fn main() -> ExitCode {
    let setup = || -> Result<_, String> {
        let lib = staged_lib_dir()?;
        let dir = scratch("sim-workloads-tool");
        let tool = build_tool(&dir)?;
        Ok((
            lib,
            dir,
            tool,
            hip_names()?,
            hsa_names("CoreApiTable")?,
            hsa_names("AmdExtTable")?,
        ))
    };
    let (lib, dir, tool, hip, core, amd) = match setup() {
        Ok(s) => s,
        Err(why) => return setup_failed(&why),
    };
    println!("mini tool: {}", tool.display());
    let out = dir.join("report.txt");
    let r = run(
        Path::new(env!("CARGO_BIN_EXE_reference-workload")),
        &[],
        Some(&lib),
        &[
            ("LD_PRELOAD", tool.clone().into()),
            ("MINI_TOOL_OUT", out.clone().into()),
            // HIP_SIM_MARKER_POLLS unset: one read-index poll per blocking copy's marker (the
            // seed's run-to-run spread, 710..=734, comes from the spurious wait resumes).
        ],
        &dir,
    );
    let mut t = Tally::default();
    let report = parse(&std::fs::read_to_string(&out).unwrap_or_default());

    let mut p = Vec::new();
    if !r.ok() {
        p.push("the workload did not exit 0 under the tool".into());
    }
    if !out.exists() {
        p.push("the tool wrote no report (its destructor did not run)".into());
    }
    t.check("runs under the tool", p, Some(&r));

    // Table arrival: hip_compiler (constructor), hip (first runtime call), hsa (HIP's lazy
    // init inside that call), roctx (first range).
    let mut p = Vec::new();
    if report.order != ["hip_compiler", "hip", "hsa", "roctx"] {
        p.push(format!("arrival order {:?}", report.order));
    }
    let expect_table = |p: &mut Vec<String>, name: &str, needles: &[&str]| {
        let line = report.tables.get(name).cloned().unwrap_or_default();
        for n in needles {
            if !line.contains(n) {
                p.push(format!("table {name}: {line:?} lacks {n:?}"));
            }
        }
    };
    expect_table(
        &mut p,
        "hip_compiler",
        &[
            "version=70000",
            "size=80 entries=9 wrapped=9",
            "seen_before=hip=0 hip_compiler=0 hsa=0",
        ],
    );
    expect_table(
        &mut p,
        "hip",
        &[
            "version=70000",
            "size=3712 entries=463 wrapped=463",
            "seen_before=hip=0 hip_compiler=2 hsa=0",
        ],
    );
    expect_table(
        &mut p,
        "hsa",
        &[
            "core_entries=125 amd_entries=74",
            "seen_before=hip=1 hip_compiler=2 hsa=0",
        ],
    );
    expect_table(&mut p, "roctx", &["tables=3"]);
    t.check("tables arrive in order, each before its first use", p, None);

    // Exactly the 52 HIP calls of the reference workload, nothing else.
    let runtime = named(&report, "hip", &|i| hip.get(i).cloned());
    let compiler = named(&report, "hip_compiler", &|i| {
        HIP_COMPILER_NAMES.get(i).map(|s| s.to_string())
    });
    let expected_runtime: BTreeMap<String, u64> = [
        ("hipFree", 2),
        ("hipGetDeviceCount", 1),
        ("hipGetDevicePropertiesR0600", 1),
        ("hipGetLastError", 1),
        ("hipLaunchKernel", 8),
        ("hipMalloc", 2),
        ("hipMemcpy", 16),
        ("hipRuntimeGetVersion", 1),
        ("hipSetDevice", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let expected_compiler: BTreeMap<String, u64> = [
        ("__hipPopCallConfiguration", 8),
        ("__hipPushCallConfiguration", 8),
        ("__hipRegisterFatBinary", 1),
        ("__hipRegisterFunction", 1),
        ("__hipUnregisterFatBinary", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let total: u64 = runtime.values().chain(compiler.values()).sum();
    let mut p = Vec::new();
    if total != 52 {
        p.push(format!("{total} HIP API calls, expected 52"));
    }
    if runtime != expected_runtime {
        p.push(format!(
            "runtime calls {runtime:?}, expected {expected_runtime:?}"
        ));
    }
    if compiler != expected_compiler {
        p.push(format!(
            "compiler calls {compiler:?}, expected {expected_compiler:?}"
        ));
    }
    t.check(
        "52 HIP API records: 16 hipMemcpy, 8 hipLaunchKernel, no other entry",
        p,
        None,
    );

    // The typed wrappers (in-place wrapping intercepts the exported functions the workload
    // resolved with dlsym) saw the same calls, with the expected arguments.
    let mut p = Vec::new();
    for (name, n) in expected_runtime.iter().chain(expected_compiler.iter()) {
        if report.typed.get(name) != Some(n) {
            p.push(format!(
                "typed wrapper {name}: {:?}, expected {n}",
                report.typed.get(name)
            ));
        }
    }
    for (name, n) in [
        ("hipMemcpy_h2d_1MiB", 8),
        ("hipMemcpy_d2h_1MiB", 8),
        ("hipLaunchKernel_1024x256", 8),
        ("hipMalloc_1MiB", 2),
        ("roctxRangePushA", 8),
        ("roctxRangePushA_iter", 8),
        ("roctxRangePop", 8),
    ] {
        if report.typed.get(name) != Some(&n) {
            p.push(format!(
                "{name}: {:?}, expected {n}",
                report.typed.get(name)
            ));
        }
    }
    t.check(
        "typed wrappers: first calls included, arguments as expected, ROCTx 8/8",
        p,
        None,
    );

    // HSA underneath.
    let mut hsa = named(&report, "hsa_core", &|i| core.get(&i).cloned());
    hsa.extend(named(&report, "hsa_amd", &|i| amd.get(&i).cloned()));
    let hsa_total: u64 = hsa.values().sum();
    println!(
        "HSA API calls seen by the tool: {hsa_total} across {} distinct functions",
        hsa.len()
    );
    for (name, n) in &hsa {
        println!("  {n:5}  {name}");
    }
    let mut p = Vec::new();
    for (name, n) in [
        ("hsa_signal_create", 64),
        ("hsa_signal_destroy", 64),
        ("hsa_queue_create", 1),
        ("hsa_queue_destroy", 1),
        // 8 dispatches + 16 blocking-copy markers.
        ("hsa_queue_add_write_index_screlease", 24),
        ("hsa_queue_load_read_index_relaxed", 24),
        ("hsa_signal_store_screlease", 24),
        ("hsa_amd_memory_async_copy", 16),
        ("hsa_amd_signal_async_handler", 16),
        ("hsa_amd_profiling_async_copy_enable", 1),
        ("hsa_amd_profiling_set_profiler_enabled", 1),
        ("hsa_amd_memory_copy_engine_status", 16),
        ("hsa_system_major_extension_supported", 1),
        ("hsa_system_get_major_extension_table", 1),
        ("hsa_executable_freeze", 2),
        ("hsa_shut_down", 1),
    ] {
        if hsa.get(name) != Some(&n) {
            p.push(format!("{name}: {:?}, expected {n}", hsa.get(name)));
        }
    }
    let load = hsa.get("hsa_signal_load_relaxed").copied().unwrap_or(0);
    if load == 0 || report.typed.get("hsa_signal_load_relaxed") != Some(&load) {
        p.push(format!(
            "hsa_signal_load_relaxed: generic {load}, typed {:?}",
            report.typed.get("hsa_signal_load_relaxed")
        ));
    }
    // Each of the 16 markers polls the read index 1..=4 times, depending on how busy the GPU
    // still is.
    let polls = hsa
        .get("hsa_queue_load_read_index_scacquire")
        .copied()
        .unwrap_or(0);
    if !(16..=64).contains(&polls) {
        p.push(format!(
            "hsa_queue_load_read_index_scacquire: {polls}, expected 16..=64"
        ));
    }
    // 710 fixed calls, plus the timing-dependent ones: extra marker polls, and the spurious
    // wait resumes the runtime draws per process (0..=26).
    if !(705..=740).contains(&hsa_total) || hsa.len() != 38 {
        p.push(format!(
            "{hsa_total} HSA calls across {} functions: expected 705..=740 across 38 (the seed: 710..=734)",
            hsa.len()
        ));
    }
    t.check(
        "HSA underneath: 705..=740 calls across 38 functions (signal pool, queue, copies, \
         markers, async handlers, teardown)",
        p,
        None,
    );

    t.finish(&dir)
}
