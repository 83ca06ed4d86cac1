//! The run-to-run spread of HSA records (issue 27): the seed counts 710–734 HSA records in its
//! reference run, about 24 apart across runs. Twenty unseeded `rocprof --hsa-trace` runs of
//! the reference workload must each record 710–734 HSA calls (the simulator's one source of
//! spread, its spurious wait resumes, is bounded to 0..=24 over the fixed 710) and span at
//! least 12 between the smallest and the largest count: twenty draws fall short of that about
//! once in a million sets, of 20 about three times in a thousand (computed by sim-hsa's
//! `twenty_draws_span_at_least_12_but_about_once_in_a_million`), so the bound is half the
//! seed's spread, the part that does not flake.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use support::{STEERING, reference_workload, scratch, stderr};

const RUNS: usize = 20;

/// The number of rows of `run_hsa_api_trace.csv` one unseeded run writes.
fn hsa_records(dir: &std::path::Path) -> usize {
    let _ = std::fs::remove_dir_all(dir);
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in STEERING.iter().chain(&[
        "WSLSIM_SEED",
        "HIP_SIM_MARKER_POLLS",
        "HSA_SIM_SPURIOUS_WAITS",
    ]) {
        c.env_remove(v);
    }
    let out = c
        .args(["--sim", "--hsa-trace", "-d"])
        .arg(dir)
        .args(["-o", "run", "--"])
        .arg(reference_workload())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = dir.join("run_hsa_api_trace.csv");
    let rows = csv::Reader::from_path(&csv)
        .unwrap_or_else(|e| panic!("{}: {e}", csv.display()))
        .records()
        .count();
    let _ = std::fs::remove_dir_all(dir);
    rows
}

#[test]
fn twenty_unseeded_reference_runs_span_the_seeds_spread_of_hsa_records() {
    let tmp = scratch("hsa-spread", "runs");
    let counts: Vec<usize> = (0..RUNS)
        .map(|k| hsa_records(&tmp.join(k.to_string())))
        .collect();
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("HSA records per run: {counts:?}");
    for &n in &counts {
        assert!(
            (710..=734).contains(&n),
            "a run recorded {n} HSA calls, outside the seed's 710..=734: {counts:?}"
        );
    }
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(
        max - min >= 12,
        "{RUNS} runs span only {min}..={max} HSA records ({}), the seed about 24: {counts:?}",
        max - min
    );
}
