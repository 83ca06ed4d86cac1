//! `cargo xtask <command>`: build, stage, demo, test and ABI tooling for the workspace.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

mod baseline;
mod merge_bench;
mod modules;
mod pm4_dump;
mod tidy;

const HELP: &str = "\
cargo xtask <command>

  build      build the workspace and stage the simulated WSL2 stack next to `rocprof`
             (target/debug/sim: lib/libdxcore.so, lib/librocdxg.so -> .so.1 -> .so.1.2.0, dev/dxg)
  demo       build, then on the simulated Radeon 890M: `rocprof --sim avail`, and a
             `--sys-trace --stats -S` run of the seed's reference workload (files in target/demo)
  test       tidy, build, run `cargo test --workspace`, then the valgrind check
  tidy       check the dependency direction of the workspace crates on cargo's resolved graph
             (the rule table is in xtask/src/tidy.rs; docs/ARCHITECTURE.md explains it)
  valgrind   run the layout-mismatch scenarios under valgrind (no invalid access allowed)
  abi-dump   print every #[repr(C)] layout of the FFI and interception crates
  api-signatures
             regenerate abi/api-signatures.tsv from rocprofiler-sdk's hip/, hsa/ and
             marker/api_args.h (the upstream mirror: ROCPROF_UPSTREAM_MIRROR, else
             ../.mirror/ROCm+rocm-systems/repo beside the workspace)
  pm4-dump   [--agent gfx1150] [--base ADDR] [--output ADDR] COUNTER...: the start, stop and
             read PM4 buffers of one counter pass on the simulated 890M's topology, and where
             each counter instance lands in the output buffer (one JSON document)
  kernel-gaps CSV...
             per kernel_trace.csv: the simulated GPU's time between one kernel's end and the
             next one's start (median, 90th percentile, mean, in ns), docs/PERFORMANCE.md's
             floor experiment for counters and thread trace
  callgrind  release build, then only the bench's instruction counts per traced HSA / HIP call
             under callgrind (two decimals; needs valgrind)
  bench-diff release build, then only the bench's `rocprof diff` of 2 × 5 runs × 1 M API calls
             (wall time, peak RSS)
  bench      release build, then: added cost per traced HSA / HIP call and kernel dispatch
             (max-rate loops traced vs untraced, interleaved, medians of 5), peak memory over
             10 M traced calls, log-to-CSV throughput, cost of a host timestamp, counter pass
             planning and derived-counter evaluation, the merge figures (as --merge), and (with
             valgrind) instructions per traced call; HIP calls also with their arguments
             captured (`-f json`)
  bench --merge
             release build, then only the merge figures (rocpd read-back, 8 × 1 M calls merged
             into CSV and into one rocpd, peak memory for 1, 8 and 64 inputs)
  bench --merge --baseline REV
             the merge figures of this tree and of revision REV (built as below), interleaved
             round by round over the same inputs: medians of 3, both builds, ratio
  bench --baseline REV
             the max-rate loops of this tree and of revision REV (built in release under
             target/baseline, cached), interleaved round by round in one session: added wall
             clock and added whole-application CPU per call or dispatch, both builds, ratio
  bench --baseline REV --dispatch
             the same for the kernel-dispatch loops only (traced, counted, thread-traced)
";

/// File name of the staged thunk and its soname chain.
const ROCDXG_FILE: &str = "librocdxg.so.1.2.0";
const ROCDXG_SONAME: &str = "librocdxg.so.1";
/// Simulated runtimes: (cargo's file name, staged file = soname, unversioned link).
const STAGED_RUNTIMES: [(&str, &str, &str); 4] = [
    (
        "libhsa_runtime64.so",
        "libhsa-runtime64.so.1",
        "libhsa-runtime64.so",
    ),
    (
        "librocprofiler_register.so",
        "librocprofiler-register.so.0",
        "librocprofiler-register.so",
    ),
    (
        "librocprofiler_sdk_roctx.so",
        "librocprofiler-sdk-roctx.so.1",
        "librocprofiler-sdk-roctx.so",
    ),
    ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so"),
];

/// Simulated libraries staged under one name: (cargo's file name, staged file name).
const STAGED_BY_NAME: [(&str, &str); 2] = [
    ("librocprof_trace_decoder.so", "librocprof-trace-decoder.so"),
    ("libamd_comgr.so", "libamd_comgr.so.3"),
];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("build") => build().map(drop),
        Some("bench") => match args.get(1).map(String::as_str) {
            None => bench(),
            Some("--baseline") => match (args.get(2), args.get(3).map(String::as_str)) {
                (Some(rev), None) => baseline::bench(rev, false),
                (Some(rev), Some("--dispatch")) => baseline::bench(rev, true),
                (Some(_), Some(other)) => {
                    bail!("unknown bench --baseline argument {other:?} (only --dispatch)")
                }
                (None, _) => {
                    bail!("--baseline needs a revision: cargo xtask bench --baseline REV")
                }
            },
            Some("--merge") if args.get(2).map(String::as_str) == Some("--baseline") => {
                let Some(rev) = args.get(3) else {
                    bail!("--baseline needs a revision: cargo xtask bench --merge --baseline REV")
                };
                baseline::bench_merge(rev)
            }
            Some("--merge") => {
                run(cargo().args(["build", "--release", "--workspace"]))?;
                let bin = stage(&target_dir().join("release"))?;
                let scratch = std::env::temp_dir()
                    .join(format!("rocprof-bench-merge-{}", std::process::id()));
                let lines = merge_bench::bench(&bin, &scratch);
                let _ = std::fs::remove_dir_all(&scratch);
                println!("| merge (issue 28) | wall | rate | rocprof peak RSS |");
                println!("|---|---|---|---|");
                for l in lines? {
                    println!("{l}");
                }
                Ok(())
            }
            Some(other) => {
                bail!("unknown bench argument {other:?} (only --baseline REV or --merge)")
            }
        },
        Some("bench-diff") => {
            run(cargo().args(["build", "--release", "--workspace"]))?;
            let bin = stage(&target_dir().join("release"))?;
            println!("{}", diff_bench(&bin)?);
            Ok(())
        }
        Some("callgrind") => callgrind(),
        Some("kernel-gaps") => kernel_gaps(&args[1..]),
        Some("demo") => demo(),
        Some("test") => test(),
        Some("tidy") => tidy::tidy(&root()),
        Some("pm4-dump") => pm4_dump::run(&args[1..]),
        Some("valgrind") => valgrind(&build()?),
        Some("api-signatures") => api_signatures(),
        Some("abi-dump") => {
            print!("{}", abi_dump());
            Ok(())
        }
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{HELP}"),
    }
}

/// `cargo xtask api-signatures`: the signature table from the upstream headers.
fn api_signatures() -> Result<()> {
    let mirror = std::env::var_os("ROCPROF_UPSTREAM_MIRROR").map_or_else(
        || root().join("../.mirror/ROCm+rocm-systems/repo"),
        PathBuf::from,
    );
    let mut texts = Vec::new();
    for (_, path) in api_signatures::header::SOURCES {
        let out = Command::new("git")
            .arg("-C")
            .arg(&mirror)
            .args(["show", &format!("HEAD:{path}")])
            .output()
            .with_context(|| format!("git show in {}", mirror.display()))?;
        if !out.status.success() {
            bail!(
                "{path} not readable in {}: {}",
                mirror.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        texts.push(String::from_utf8(out.stdout)?);
    }
    let tsv = api_signatures::header::tsv([&texts[0], &texts[1], &texts[2]])?;
    let dest = root().join("abi/api-signatures.tsv");
    std::fs::write(&dest, tsv).with_context(|| format!("writing {}", dest.display()))?;
    println!("wrote {}", dest.display());
    Ok(())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .into()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

/// Whether `valgrind` can be run.
fn has_valgrind() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok()
}

/// `exe args…` against the staged simulator, or with `traced = Some((option, out_dir))` the
/// same under `rocprof --sim <option> -d <out_dir> --`.
fn workload(
    bin: &Path,
    exe: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    traced: Option<(&str, &Path)>,
) -> Command {
    match traced {
        Some((option, out_dir)) => {
            let mut c = Command::new(bin.join("rocprof"));
            c.arg("--sim")
                .args(option.split_whitespace())
                .arg("-d")
                .arg(out_dir)
                .arg("--")
                .arg(exe)
                .args(args);
            c
        }
        None => {
            let mut c = Command::new(exe);
            c.args(args)
                .env("LD_LIBRARY_PATH", bin.join("sim").join("lib"));
            c
        }
    }
}

/// The standard output of `cargo run --release` of an example (which must succeed).
fn example_output(package: &str, example: &str) -> Result<String> {
    let out = cargo()
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            package,
            "--example",
            example,
        ])
        .output()?;
    if !out.status.success() {
        bail!(
            "example {example} of {package} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

/// Builds everything (debug) and stages the simulated stack; returns the `bin` directory.
fn build() -> Result<PathBuf> {
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    stage(&target_dir().join("debug"))
}

/// Stages the simulated stack built in `bin` into `bin/sim`; returns `bin`.
fn stage(bin: &Path) -> Result<PathBuf> {
    let bin = bin.to_owned();
    let lib = bin.join("sim").join("lib");
    let dev = bin.join("sim").join("dev");
    std::fs::create_dir_all(&lib)?;
    std::fs::create_dir_all(&dev)?;
    copy(&bin.join("libdxcore.so"), &lib.join("libdxcore.so"))?;
    copy(&bin.join("librocdxg.so"), &lib.join(ROCDXG_FILE))?;
    symlink(ROCDXG_FILE, &lib.join(ROCDXG_SONAME))?;
    symlink(ROCDXG_SONAME, &lib.join("librocdxg.so"))?;
    for (built, soname, link) in STAGED_RUNTIMES {
        let from = bin.join(built);
        if from.exists() {
            copy(&from, &lib.join(soname))?;
            symlink(soname, &lib.join(link))?;
        }
    }
    // Libraries found by name, not soname: the thread-trace decoder (rocprofv3 searches for a
    // file named librocprof-trace-decoder.so) and comgr (opened by its soname).
    for (built, staged) in STAGED_BY_NAME {
        let from = bin.join(built);
        if from.exists() {
            copy(&from, &lib.join(staged))?;
        }
    }
    // The simulated stack's stand-in for the DXG device node: its existence is what counts.
    std::fs::write(dev.join("dxg"), b"")?;
    Ok(bin)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    // Remove first: the destination may be mapped by a running process.
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).with_context(|| format!("cannot stage {}", from.display()))?;
    Ok(())
}

fn symlink(target: &str, link: &Path) -> Result<()> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("cannot link {} -> {target}", link.display()))
}

fn demo() -> Result<()> {
    let bin = build()?;
    eprintln!("\n$ rocprof --sim avail\n");
    run(Command::new(bin.join("rocprof")).args(["--sim", "avail"]))?;
    let out = target_dir().join("demo");
    let _ = std::fs::remove_dir_all(&out);
    eprintln!(
        "\n$ rocprof --sim --sys-trace --stats -S -d {} -o run -- reference-workload\n",
        out.display()
    );
    run(Command::new(bin.join("rocprof"))
        .args(["--sim", "--sys-trace", "--stats", "-S", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(bin.join("reference-workload")))?;
    eprintln!("\nfiles written in {}:", out.display());
    let mut files: Vec<_> = std::fs::read_dir(&out)?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    files.sort();
    for f in files {
        eprintln!("  {f}");
    }
    Ok(())
}

fn test() -> Result<()> {
    tidy::tidy(&root())?;
    let bin = build()?;
    run(cargo().args(["test", "--workspace"]))?;
    valgrind(&bin)
}

/// Scenarios where the thunk's record size differs from the layout in use, run under valgrind:
/// the node must be refused and no byte outside the read's own storage touched.
fn valgrind(bin: &Path) -> Result<()> {
    if !has_valgrind() {
        bail!(
            "valgrind is not installed (apt-get install valgrind); it checks that a mismatched thunk corrupts no memory"
        );
    }
    let scenarios = root().join("rocprof-cli").join("tests").join("scenarios");
    let cases = [
        ("thunk-396-no-handshake.toml", "376"),
        ("thunk-376-no-handshake.toml", "396"),
        ("thunk-396-no-handshake.toml", "396"),
    ];
    for (scenario, layout) in cases {
        eprintln!("valgrind: {scenario} read as {layout} bytes");
        let out = Command::new("valgrind")
            .args(["--error-exitcode=99", "--quiet", "--trace-children=yes"])
            .arg(bin.join("rocprof"))
            .args(["--sim", "avail", "--json"])
            .env("WSLSIM_SCENARIO", scenarios.join(scenario))
            .env("ROCPROF_HSAKMT_LAYOUT", layout)
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "valgrind reported errors for {scenario} read as {layout} bytes ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Matching sizes publish the GPU; mismatched ones refuse it.
        let mismatch = stdout.contains("\"layout-mismatch\"");
        let expect_mismatch = !scenario.contains(&format!("-{layout}-"));
        if mismatch != expect_mismatch {
            bail!(
                "{scenario} read as {layout}: expected layout-mismatch={expect_mismatch}:\n{stdout}"
            );
        }
    }
    eprintln!("valgrind: no invalid memory access in {} runs", cases.len());
    Ok(())
}

/// `calls=<N> ns=<T> [cpu_ns=<C>]` from a workload's last line: wall-clock nanoseconds per
/// call, and CPU nanoseconds per call (all threads) when reported.
fn per_call(out: &std::process::Output) -> Result<(f64, Option<f64>)> {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    let field = |k: &str| {
        last.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse::<f64>().ok())
    };
    match (field("calls="), field("ns=")) {
        (Some(c), Some(ns)) if c > 0.0 => Ok((ns / c, field("cpu_ns=").map(|cpu| cpu / c))),
        _ => bail!(
            "unexpected workload output: {last:?} (status {}, stderr: {})",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Host CPU per call by kind of thread, from the `thread <name> cpu_ns=<n>` lines a workload
/// prints on stderr: `[application, runtime, tool]`. The simulated GPU's threads (`hsa-cp-*`)
/// are left out: a real GPU does not spend host CPU.
fn thread_cpu(out: &std::process::Output, workload: &str, calls: f64) -> Option<[f64; 3]> {
    let text = String::from_utf8_lossy(&out.stderr);
    let mut sums = [0.0; 3];
    let mut seen = false;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("thread ") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(" cpu_ns=") else {
            continue;
        };
        let Some(ns) = fields
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        seen = true;
        let kind = if name.starts_with("hsa-cp-") {
            continue;
        } else if workload.starts_with(name) {
            0
        } else if name.starts_with("hsa-") {
            1
        } else {
            2
        };
        sums[kind] += ns / calls;
    }
    seen.then_some(sums)
}

/// One side (untraced or traced) of a benchmark's rounds, per call.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    threads: Vec<[f64; 3]>,
}

impl Samples {
    /// The median over the rounds of the host CPU per call of every reported thread (the
    /// simulated GPU's left out by [`thread_cpu`]), if the workload reported its threads.
    fn host_cpu(&self) -> Option<f64> {
        (!self.threads.is_empty())
            .then(|| median(self.threads.iter().map(|t| t.iter().sum()).collect()))
    }

    fn add(&mut self, out: &std::process::Output, workload: &str, calls: f64) -> Result<()> {
        let (wall, cpu) = per_call(out)?;
        self.wall.push(wall);
        self.cpu.extend(cpu);
        self.threads.extend(thread_cpu(out, workload, calls));
        Ok(())
    }
}

/// Waits for `child` to end, sampling its peak resident memory (VmHWM, a high-water mark, from
/// `/proc/<pid>/status`) every `every_ms` milliseconds; the highest reading in KiB.
fn peak_rss_kib(child: &mut std::process::Child, every_ms: u64) -> Result<u64> {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    while child.try_wait()?.is_none() {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        std::thread::sleep(std::time::Duration::from_millis(every_ms));
    }
    Ok(peak)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The counted dispatch benchmark: the seed's four counters with the kernel trace.
const COUNTED: &str = "--kernel-trace --pmc SQ_WAVES SQ_BUSY_CYCLES GRBM_COUNT GRBM_GUI_ACTIVE";

/// The thread-traced dispatch benchmark: every dispatch traced (and decoded after the run), with
/// 16 MiB trace buffers (so 64 may be in flight: the loop is not held to the harvest's pace).
const THREAD_TRACED: &str = "--kernel-trace --att --att-buffer-size 0x1000000";

/// HIP tracing into JSON, which shows API arguments: every call captures its arguments and
/// return value.
const HIP_TRACED_WITH_ARGUMENTS: &str = "--hip-trace -f json";
/// The max-rate loops: (workload, rocprof options, iterations, rounds). Dispatch timing on a
/// 2-core VM is bimodal (whether the runtime's threads keep pace with the simulated GPU), so its
/// median needs more rounds; the thread-traced one fewer, as every dispatch leaves a trace
/// directory to decode and write after the run.
const MAX_RATE: [(&str, &str, &str, usize); 6] = [
    ("hsa-rate", "--hsa-trace", "2000000", 5),
    ("hip-rate", "--hip-trace", "2000000", 5),
    // JSON shows arguments: the HIP calls capture theirs.
    ("hip-rate", HIP_TRACED_WITH_ARGUMENTS, "2000000", 5),
    ("dispatch-rate", "--kernel-trace", "20000", 11),
    ("dispatch-rate", COUNTED, "20000", 11),
    ("dispatch-rate", THREAD_TRACED, "2000", 5),
];

/// Release build, then the overhead and throughput benchmarks (results as a markdown table).
fn bench() -> Result<()> {
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let bin = stage(&target_dir().join("release"))?;
    let out_dir = std::env::temp_dir().join(format!("rocprof-bench-{}", std::process::id()));
    let mut rows = Vec::new();
    let mut threads = Vec::new();
    // Traced and counted dispatch medians, for the cost of counting itself.
    let mut dispatch_medians: Vec<(&str, f64)> = Vec::new();
    for (name, option, iterations, rounds) in MAX_RATE {
        let exe = bin.join(name);
        if !exe.exists() {
            eprintln!("bench: {name} is not built; skipped");
            continue;
        }
        let calls: f64 = iterations.parse()?;
        let (mut plain, mut traced) = (Samples::default(), Samples::default());
        for round in 0..rounds {
            eprintln!("bench: {name} round {}/{rounds}", round + 1);
            let out = workload(&bin, &exe, &[iterations], None).output()?;
            plain.add(&out, name, calls)?;
            let out = workload(&bin, &exe, &[iterations], Some((option, &out_dir))).output()?;
            traced.add(&out, name, calls)?;
        }
        let row = |label: String, p: f64, t: f64| {
            format!(
                "| {label} | {p:.1} ns | {t:.1} ns | {:.1} ns | {:.2}x |",
                t - p,
                t / p
            )
        };
        let traced_median = median(traced.wall.clone());
        rows.push(row(
            format!("{name} {option}"),
            median(plain.wall.clone()),
            traced_median,
        ));
        if name == "dispatch-rate" {
            dispatch_medians.push((option, traced_median));
        }
        if !plain.cpu.is_empty() && !traced.cpu.is_empty() {
            rows.push(row(
                format!("{name} {option}, CPU time of all threads"),
                median(plain.cpu.clone()),
                median(traced.cpu.clone()),
            ));
        }
        if !plain.threads.is_empty()
            && !traced.threads.is_empty()
            && option != COUNTED
            && option != THREAD_TRACED
        {
            let kinds = [
                "application thread",
                "runtime threads (intercept queue, async handlers)",
                "tool threads (log writer, harvester, clock)",
                "all host threads",
            ];
            // Column 3 is the sum of the three kinds.
            let column = |v: &Samples, k: usize| match k {
                3 => v.host_cpu().unwrap_or(0.0),
                _ => median(v.threads.iter().map(|t| t[k]).collect()),
            };
            for (k, kind) in kinds.iter().enumerate() {
                let (p, t) = (column(&plain, k), column(&traced, k));
                threads.push(format!(
                    "| {kind} | {p:.1} ns | {t:.1} ns | {:.1} ns |",
                    t - p
                ));
            }
        }
    }
    eprintln!("bench: peak memory while tracing 10 M HSA calls, and of rocprof converting them");
    // The application's own peak (it prints maxrss_kb=), and, traced, rocprof's: sampled from
    // /proc/<pid>/status (VmHWM, a high-water mark) until it exits, so the conversion of the
    // 10 M records after the application ended is included.
    let rss = |option: Option<&str>| -> Result<(String, u64)> {
        let mut child = workload(
            &bin,
            bin.join("hsa-rate"),
            &["10000000"],
            option.map(|o| (o, out_dir.as_path())),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
        let peak = peak_rss_kib(&mut child, 10)?;
        let out = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let app = text
            .lines()
            .last()
            .and_then(|l| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix("maxrss_kb="))
            })
            .unwrap_or("?")
            .to_owned();
        Ok((app, peak))
    };
    let (plain, _) = rss(None)?;
    let (traced, converting) = rss(Some("--hsa-trace"))?;
    let mut memory = format!(
        "peak RSS of hsa-rate 10000000: untraced {plain} KiB, traced --hsa-trace {traced} KiB; rocprof itself (reading the 10 M records and writing hsa_api_trace.csv) {converting} KiB"
    );
    for format in ["rocpd", "json", "pftrace"] {
        eprintln!("bench: rocprof's peak memory converting 10 M records to {format}");
        let (_, peak) = rss(Some(&format!("--hsa-trace -f {format}")))?;
        memory.push_str(&format!("; with -f {format} {peak} KiB"));
    }
    eprintln!("bench: rocpd read-back and merges (issue 28)");
    let merges = merge_bench::bench(&bin, &out_dir.join("merge"))?;
    let _ = std::fs::remove_dir_all(&out_dir);
    eprintln!("bench: record log write, read and CSV throughput");
    let csv = example_output("trace-export", "log_throughput")?;
    eprintln!("bench: planning and building a 4-counter pass, evaluating derived counters");
    let pass_cost = example_output("pmc-dxg", "build_cost")?;
    let eval_cost = example_output("pmc-dxg", "eval_cost")?;
    eprintln!("bench: thread-trace decode throughput");
    let decode = example_output("att", "decode_throughput")?;
    eprintln!("bench: cost of a host timestamp");
    let clock = example_output("hsa-intercept", "clock_cost")?;
    let instructions = callgrind_per_call(&bin)?;
    eprintln!("bench: start-up cost of processes that never touch the GPU");
    let startup = untraced_startup(&bin)?;
    let diff = diff_bench(&bin)?;
    println!("| loop (calls) | untraced / call | traced / call | added / call | ratio |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    if let (Some(traced), Some(counted)) = (
        dispatch_medians.iter().find(|m| m.0 == "--kernel-trace"),
        dispatch_medians.iter().find(|m| m.0 == COUNTED),
    ) {
        println!();
        println!(
            "Counting 4 counters (serialised, start/read/stop PM4-IB packets around each dispatch) adds {:.2} µs per dispatch over --kernel-trace (median of the rounds; target ≤ 10 µs; the simulated command processor books 1 µs per PM4 packet of that)",
            (counted.1 - traced.1) / 1000.0
        );
    }
    if let (Some(traced), Some(att)) = (
        dispatch_medians.iter().find(|m| m.0 == "--kernel-trace"),
        dispatch_medians.iter().find(|m| m.0 == THREAD_TRACED),
    ) {
        println!();
        println!(
            "Thread trace (SQTT begin/end PM4-IB packets around each dispatch, the trace saved after it) adds {:.2} µs per traced dispatch over --kernel-trace (median of the rounds; the decode runs in rocprof after the application)",
            (att.1 - traced.1) / 1000.0
        );
    }
    println!();
    print!("{decode}");
    if !threads.is_empty() {
        println!();
        println!(
            "| dispatch-rate host CPU per dispatch (simulated GPU thread excluded) | untraced | traced | added |"
        );
        println!("|---|---|---|---|");
        for r in threads {
            println!("{r}");
        }
    }
    println!();
    println!("{memory}");
    println!();
    println!("| merge (issue 28) | wall | rate | rocprof peak RSS |");
    println!("|---|---|---|---|");
    for m in &merges {
        println!("{m}");
    }
    println!();
    println!("{startup}");
    println!();
    println!("{diff}");
    println!();
    print!("{csv}");
    println!();
    print!("{clock}");
    println!();
    println!(
        "Counters (pmc-dxg; targets: plan + build of a 4-counter pass ≤ 20 µs, derived counters of one dispatch ≤ 2 µs):"
    );
    for line in pass_cost
        .lines()
        .chain(eval_cost.lines())
        .filter(|l| !l.starts_with("median_ns="))
    {
        println!("- {line}");
    }
    if let Some(line) = instructions {
        println!();
        println!("{line}");
    }
    Ok(())
}

/// `rocprof diff` of two sides of 5 runs × 1 M API calls each (`hip-rate 1000000` under
/// `--hip-trace`, CSV directories): wall time and rocprof's peak RSS (VmHWM sampled every
/// 10 ms). Targets: under 10 s, at most 256 MiB.
fn diff_bench(bin: &Path) -> Result<String> {
    let root = std::env::temp_dir().join(format!("rocprof-diff-bench-{}", std::process::id()));
    let mut sides: [Vec<PathBuf>; 2] = [Vec::new(), Vec::new()];
    for k in 0..10 {
        eprintln!(
            "bench: diff input {}/10 (hip-rate 1000000 --hip-trace)",
            k + 1
        );
        let dir = root.join(format!("run{k}"));
        let out = workload(
            bin,
            bin.join("hip-rate"),
            &["1000000"],
            Some(("--hip-trace -o run", &dir)),
        )
        .stdout(std::process::Stdio::null())
        .output()?;
        if !out.status.success() {
            bail!(
                "hip-rate under rocprof failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        sides[k % 2].push(dir);
    }
    eprintln!("bench: rocprof diff of 5 × 1 M calls against 5 × 1 M calls");
    let start = std::time::Instant::now();
    let mut child = Command::new(bin.join("rocprof"))
        .arg("diff")
        .args(&sides[0])
        .arg("--")
        .args(&sides[1])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let peak = peak_rss_kib(&mut child, 10)?;
    let seconds = start.elapsed().as_secs_f64();
    let out = child.wait_with_output()?;
    let _ = std::fs::remove_dir_all(&root);
    if !out.status.success() {
        bail!(
            "rocprof diff failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(format!(
        "rocprof diff of two sides of 5 runs × 1 M HIP calls (CSV directories): {seconds:.2} s, peak RSS {:.1} MiB (targets: under 10 s, at most 256 MiB)",
        peak as f64 / 1024.0
    ))
}

/// Added start-up cost per process that loads no GPU runtime: `sh -c 'for i in $(seq 200); do
/// /bin/true; done'` plain and under `rocprof --sim --kernel-trace` (the tool is preloaded into
/// all 201 processes), interleaved, medians of 5.
fn untraced_startup(bin: &Path) -> Result<String> {
    let script = "for i in $(seq 200); do /bin/true; done";
    let out_dir = std::env::temp_dir().join(format!("rocprof-startup-{}", std::process::id()));
    let time = |traced: bool| -> Result<f64> {
        let mut c = if traced {
            let mut c = Command::new(bin.join("rocprof"));
            c.args(["--sim", "--kernel-trace", "-d"])
                .arg(&out_dir)
                .args(["--", "sh", "-c", script]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            c
        };
        let t = std::time::Instant::now();
        let out = c.output()?;
        if !out.status.success() {
            bail!("{c:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(t.elapsed().as_secs_f64() * 1e6)
    };
    let (mut plain, mut traced) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain.push(time(false)?);
        traced.push(time(true)?);
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    let (p, t) = (median(plain), median(traced));
    Ok(format!(
        "200 processes without GPU runtime (sh loop of /bin/true): untraced {:.0} µs, under rocprof {:.0} µs; added per process {:.0} µs (rocprof's own start and end included)",
        p,
        t,
        (t - p) / 201.0
    ))
}

/// `cargo xtask callgrind`: the release build staged, then [`callgrind_per_call`] alone.
fn callgrind() -> Result<()> {
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let bin = stage(&target_dir().join("release"))?;
    match callgrind_per_call(&bin)? {
        Some(lines) => println!("{lines}"),
        None => bail!("valgrind is not installed: install it to count instructions"),
    }
    Ok(())
}

/// Instructions per call of the `hsa-rate` and `hip-rate` loops under callgrind, untraced and
/// traced (`--hsa-trace`, `--hip-trace`): the difference between a 200 000- and a 100 000-call
/// run, so start-up cancels out. `None` when valgrind is not installed.
fn callgrind_per_call(bin: &Path) -> Result<Option<String>> {
    if !has_valgrind() {
        eprintln!("bench: valgrind is not installed; instruction counts skipped");
        return Ok(None);
    }
    let dir = std::env::temp_dir().join(format!("rocprof-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let total = |loop_name: &str, option: Option<&str>, calls: u32| -> Result<u64> {
        let profile = dir.join(format!(
            "callgrind.{loop_name}.{}.{calls}",
            option.is_some()
        ));
        let out_file = format!("--callgrind-out-file={}", profile.display());
        let exe = bin.join(loop_name).display().to_string();
        let calls = calls.to_string();
        let out_dir = dir.join("out");
        let out = workload(
            bin,
            "valgrind",
            &["--tool=callgrind", &out_file, &exe, &calls],
            option.map(|o| (o, out_dir.as_path())),
        )
        .output()?;
        if !out.status.success() {
            bail!(
                "callgrind run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = std::fs::read_to_string(&profile)?;
        text.lines()
            .find_map(|l| l.strip_prefix("summary: "))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("no summary line in {}", profile.display()))
    };
    let per_call = |loop_name: &str, option: Option<&str>| -> Result<f64> {
        Ok(
            (total(loop_name, option, 200_000)? as f64 - total(loop_name, option, 100_000)? as f64)
                / 100_000.0,
        )
    };
    let mut lines = Vec::new();
    for (loop_name, option) in [
        ("hsa-rate", "--hsa-trace"),
        ("hip-rate", "--hip-trace"),
        ("hip-rate", HIP_TRACED_WITH_ARGUMENTS),
    ] {
        eprintln!("bench: instructions per {loop_name} call under callgrind");
        let (plain, traced) = (
            per_call(loop_name, None)?,
            per_call(loop_name, Some(option))?,
        );
        lines.push(format!(
            "instructions per {loop_name} call (callgrind): untraced {plain:.2}, traced {option} {traced:.2}"
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Some(lines.join("\n")))
}

/// One tab-separated line per field of every layout the FFI and interception crates define.
fn abi_dump() -> String {
    let mut out = String::new();
    let layouts = [
        dxcore_sys::layouts(),
        rocdxg_sys::layouts(),
        otf2_sys::layouts(),
        hsa_intercept::tables::layouts(),
        hsa_intercept::hsa::layouts(),
        hsa_intercept::memory::layouts(),
    ];
    for layout in layouts.iter().flatten() {
        c_layout::write_tsv(&mut out, layout).expect("writing to a String");
    }
    out
}

/// `cargo xtask kernel-gaps CSV...`: for each kernel trace (rocprofv3's `kernel_trace.csv`), the
/// gaps between consecutive kernels on the GPU timeline (a kernel's `End_Timestamp` to the next
/// one's `Start_Timestamp`, in start order) and the kernels' durations: median, 90th
/// percentile and mean, in ns.
fn kernel_gaps(files: &[String]) -> Result<()> {
    if files.is_empty() {
        bail!("kernel-gaps needs at least one kernel_trace.csv");
    }
    let stats = |mut v: Vec<f64>| -> String {
        if v.is_empty() {
            return "-".to_owned();
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.sort_by(f64::total_cmp);
        let p90 = v[(v.len() * 9 / 10).min(v.len() - 1)];
        format!("median {:.0}, p90 {p90:.0}, mean {mean:.0}", v[v.len() / 2])
    };
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .split(',')
            .map(|h| h.trim_matches('"'))
            .collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .with_context(|| format!("{file} has no {name} column"))
        };
        let (start, end) = (column("Start_Timestamp")?, column("End_Timestamp")?);
        // Quoted fields (kernel names) may hold commas: the timestamps are read from the
        // unquoted fields after the last quoted one, counted from the end of the row.
        let from_end = (header.len() - start, header.len() - end);
        let mut kernels: Vec<(u64, u64)> = lines
            .filter_map(|row| {
                let fields: Vec<&str> = row.split(',').collect();
                let at = |k: usize| {
                    fields
                        .get(fields.len().checked_sub(k)?)?
                        .parse::<u64>()
                        .ok()
                };
                Some((at(from_end.0)?, at(from_end.1)?))
            })
            .collect();
        kernels.sort_unstable();
        let durations = kernels
            .iter()
            .map(|&(s, e)| e.saturating_sub(s) as f64)
            .collect();
        let gaps = kernels
            .windows(2)
            .map(|w| w[1].0.saturating_sub(w[0].1) as f64)
            .collect();
        println!(
            "{file}: {} kernels; duration {}; gap to the next {}",
            kernels.len(),
            stats(durations),
            stats(gaps)
        );
    }
    Ok(())
}
