//! The simulator's last gaps to the seed (issue 27), at the level a user sees them: what
//! `rocprof --sim` writes.
//!
//! - **First use costs the host call.** A real runtime commits device memory when it is
//!   allocated and pins its staging buffer when it creates the device, so a run's first kernel
//!   and first host-to-device copy take as long on the GPU as the later ones; the allocating
//!   host calls (`hipMalloc`) carry the cost.
//! - **The long kernel's lower tail.** Unseeded sessions of the 32,768-wave kernel include
//!   values within 15 % above the truth (the seed's smallest was 36,537, 11 % above) and none
//!   below it.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use std::path::Path;
use support::*;

type Row = std::collections::HashMap<String, String>;

fn read_rows(path: &Path) -> Vec<Row> {
    csv::Reader::from_path(path)
        .and_then(|mut r| r.deserialize().collect())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn duration_ns(r: &Row) -> f64 {
    let at = |c: &str| {
        r[c].parse::<f64>()
            .unwrap_or_else(|e| panic!("{c}: {e} in {r:?}"))
    };
    at("End_Timestamp") - at("Start_Timestamp")
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The reference workload's first kernel and first host-to-device copy take what the later
/// ones take on the GPU (before: the copy about 6× its successors', 1 ms against 150 µs in a
/// debug build, and the kernel 1.3 ms more, from committing the pages of fresh device memory
/// inside the GPU's window), and the two `hipMalloc` calls carry the commit: each takes at
/// least as long as a 1 MiB host-to-device copy on the GPU (before: 10–40 µs).
/// One reference run under `--kernel-trace --memory-copy-trace --hip-trace`: `Ok` if its
/// first kernel takes at most 1.5× the others' median, its first host-to-device copy at most
/// 3× theirs, and each `hipMalloc` at least a copy's median; else what it measured.
fn first_use_run(tmp: &Path, k: usize) -> Result<(), String> {
    let dir = tmp.join(format!("out{k}"));
    let out = rocprof(tmp)
        .args([
            "--sim",
            "--kernel-trace",
            "--memory-copy-trace",
            "--hip-trace",
            "-d",
        ])
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(reference_workload())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let kernels: Vec<f64> = read_rows(&dir.join("run_kernel_trace.csv"))
        .iter()
        .map(duration_ns)
        .collect();
    let h2d: Vec<f64> = read_rows(&dir.join("run_memory_copy_trace.csv"))
        .iter()
        .filter(|r| r["Direction"].ends_with("HOST_TO_DEVICE"))
        .map(duration_ns)
        .collect();
    assert_eq!((kernels.len(), h2d.len()), (8, 8), "{err}");
    let mallocs: Vec<f64> = read_rows(&dir.join("run_hip_api_trace.csv"))
        .iter()
        .filter(|r| r["Function"] == "hipMalloc")
        .map(duration_ns)
        .collect();
    assert_eq!(mallocs.len(), 2, "{mallocs:?}");
    let (k_rest, c_rest) = (median(&kernels[1..]), median(&h2d[1..]));
    if kernels[0] <= 1.5 * k_rest && h2d[0] <= 3.0 * c_rest && mallocs.iter().all(|&m| m >= c_rest)
    {
        return Ok(());
    }
    Err(format!(
        "kernels {kernels:?} (the others' median {k_rest}), host-to-device copies {h2d:?} \
         (median {c_rest}), hipMalloc {mallocs:?} ns"
    ))
}

/// The reference workload's first kernel and first host-to-device copy take what the later
/// ones take on the GPU (before: the copy about 6× its successors', 1 ms against 150 µs in a
/// debug build, and the kernel 1.3 ms more, from committing the pages of fresh device memory
/// inside the GPU's window), and the two `hipMalloc` calls carry the commit: each takes at
/// least as long as a 1 MiB host-to-device copy on the GPU (before: 10–40 µs). Durations of a
/// debug build on a loaded 2-core machine jump by milliseconds, so up to three runs are made
/// and one must hold it all (before the change, none could: every run's first copy was 6×).
#[test]
fn the_first_kernel_and_copy_take_what_the_later_ones_take_and_hip_malloc_pays() {
    let tmp = scratch("fidelity", "first-use");
    let mut seen = Vec::new();
    for k in 0..3 {
        match first_use_run(&tmp, k) {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return;
            }
            Err(e) => seen.push(e),
        }
    }
    panic!("no run had a first kernel and copy like the later ones: {seen:#?}");
}

/// 300 unseeded sessions of the 32,768-wave kernel (`vector-add 1048576 256`, one dispatch
/// each), all in one `rocprof --pmc SQ_WAVES` run of a shell loop — each process is its own GPU
/// session with its own draws: no value below the truth, and some within 15 % above it (the
/// model's share is about 14 in 300, so none in 300 has a chance of about 10⁻⁶). An isolated SQ
/// zero (0.1 % of read-backs) is written as its 0 and flagged, and is not a contaminated value.
#[test]
fn unseeded_long_kernel_sessions_reach_just_above_the_truth_and_never_below() {
    const SESSIONS: usize = 300;
    const TRUTH: f64 = 32_768.0;
    let tmp = scratch("fidelity", "long-kernel");
    let dir = tmp.join("out");
    let loop_script = format!(
        "for i in $(seq {SESSIONS}); do {} 1048576 256 >/dev/null || exit 1; done",
        workload("vector-add").display()
    );
    let out = rocprof(&tmp)
        .env_remove("WSLSIM_SEED")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .env_remove("WSLKMT_VENDOR_PACKET")
        .args(["--sim", "--pmc", "SQ_WAVES", "-d"])
        .arg(&dir)
        .args(["-o", "run_%pid%", "--", "/bin/sh", "-c", &loop_script])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_no_tracing(&err);
    let mut values = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with("_counter_collection.csv") {
            for r in read_rows(&path) {
                assert_eq!(r["Counter_Name"], "SQ_WAVES");
                values.push(r["Counter_Value"].parse::<f64>().unwrap());
            }
        }
    }
    assert_eq!(values.len(), SESSIONS, "one value per session: {err}");
    let read: Vec<f64> = values.iter().copied().filter(|&v| v != 0.0).collect();
    assert!(
        read.len() >= SESSIONS - 5,
        "isolated zeros are rare: {values:?}"
    );
    assert!(
        read.iter().all(|&v| v >= TRUTH),
        "below the truth: {:?}",
        read.iter().filter(|&&v| v < TRUTH).collect::<Vec<_>>()
    );
    let mut above: Vec<f64> = read.iter().copied().filter(|&v| v > TRUTH).collect();
    above.sort_by(f64::total_cmp);
    let near = above.iter().filter(|&&v| v <= TRUTH * 1.15).count();
    eprintln!(
        "{SESSIONS} CLI sessions: {near} within 15 % above the truth, smallest contaminated {:?} \
         (seed: 36,537)",
        above.first()
    );
    assert!(near >= 1, "none within 15 % above 32,768: {above:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}
