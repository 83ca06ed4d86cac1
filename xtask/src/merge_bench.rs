//! `cargo xtask bench`'s merge figures (issue 28): reading one rocpd database of 1 M calls
//! back, merging 8 of them into CSV and into one rocpd, and the merge's peak memory for 1, 8
//! and 64 inputs (64 small generated ones).
//!
//! With a baseline (`cargo xtask bench --merge --baseline REV`) every merge runs on both
//! builds, interleaved round by round (baseline, then this tree), over the same input
//! databases (written once, by this tree), and each figure is printed for both with the ratio
//! of this tree's median wall time to the baseline's.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Runs `rocprof` to its end, sampling its peak RSS (VmHWM); (seconds, peak KiB).
fn timed(mut c: Command) -> Result<(f64, u64)> {
    let start = Instant::now();
    let mut child = c
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let peak = crate::peak_rss_kib(&mut child, 5)?;
    let secs = start.elapsed().as_secs_f64();
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("{:?}: {}", c, String::from_utf8_lossy(&out.stderr));
    }
    Ok((secs, peak))
}

/// `hsa-rate CALLS --hsa-trace -f rocpd` into `dir`: the database.
fn database(bin: &Path, dir: &Path, calls: &str) -> Result<PathBuf> {
    let out = Command::new(bin.join("rocprof"))
        .args(["--sim", "--hsa-trace", "-f", "rocpd", "-o", "run", "-d"])
        .arg(dir)
        .arg("--")
        .arg(bin.join("hsa-rate"))
        .arg(calls)
        .output()?;
    if !out.status.success() {
        bail!("hsa-rate {calls}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let db = dir.join("run_results.db");
    db.is_file().then_some(db).context("no database written")
}

fn merge(bin: &Path, out: &Path, format: &str, inputs: &[PathBuf]) -> Command {
    let mut c = Command::new(bin.join("rocprof"));
    c.args(["merge", "-f", format, "-d"])
        .arg(out)
        .args(["-o", "m"])
        .args(inputs);
    c
}

/// One figure: its label, the format merged into, the inputs and the calls they hold.
struct Case {
    label: String,
    format: &'static str,
    inputs: Vec<PathBuf>,
    calls: f64,
}

/// The figures' inputs (written by `bin` under `scratch`).
fn cases(bin: &Path, scratch: &Path) -> Result<Vec<Case>> {
    const CALLS: f64 = 1_000_000.0;
    let big: Vec<PathBuf> = (0..8)
        .map(|k| database(bin, &scratch.join(format!("big{k}")), "1000000"))
        .collect::<Result<_>>()?;
    let small: Vec<PathBuf> = (0..64)
        .map(|k| database(bin, &scratch.join(format!("small{k}")), "10000"))
        .collect::<Result<_>>()?;
    // Records of one database: its calls (each one region and its event).
    let mut out = vec![Case {
        label: "read back 1 × 1 M calls → CSV".into(),
        format: "csv",
        inputs: big[..1].to_vec(),
        calls: CALLS,
    }];
    for format in ["csv", "rocpd"] {
        out.push(Case {
            label: format!("merge 8 × 1 M calls → {format}"),
            format,
            inputs: big.clone(),
            calls: 8.0 * CALLS,
        });
    }
    for n in [1usize, 8, 64] {
        out.push(Case {
            label: format!("merge {n} × 10 k calls → csv,rocpd"),
            format: "csv,rocpd",
            inputs: small[..n].to_vec(),
            calls: n as f64 * 1e4,
        });
    }
    Ok(out)
}

/// The merge figures as markdown lines (`| figure | wall | rate | peak RSS |`).
pub fn bench(bin: &Path, scratch: &Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for (k, case) in cases(bin, scratch)?.iter().enumerate() {
        let out = scratch.join(format!("out{k}"));
        let (s, kb) = timed(merge(bin, &out, case.format, &case.inputs))?;
        let _ = std::fs::remove_dir_all(&out);
        lines.push(format!(
            "| {} | {s:.2} s | {:.2} M calls/s | {} MiB |",
            case.label,
            case.calls / s / 1e6,
            kb / 1024
        ));
    }
    Ok(lines)
}

/// The merge figures of `base` (the baseline `short`'s staged build) and `bin`, `rounds`
/// interleaved rounds each, as markdown lines: `| figure | baseline wall (rate, peak) | this
/// tree's | ratio |` with medians.
pub fn bench_against(
    base: &Path,
    bin: &Path,
    short: &str,
    scratch: &Path,
    rounds: usize,
) -> Result<Vec<String>> {
    let mut lines = vec![
        format!(
            "| merge (issue 28; medians of {rounds} interleaved rounds) | baseline {short} | this tree | ratio (wall) |"
        ),
        "|---|---|---|---|".to_owned(),
    ];
    for (k, case) in cases(bin, scratch)?.iter().enumerate() {
        let (mut b, mut t) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            eprintln!("bench: {}, round {}/{rounds}", case.label, round + 1);
            for (side, samples) in [(base, &mut b), (bin, &mut t)] {
                let out = scratch.join(format!("out{k}"));
                samples.push(timed(merge(side, &out, case.format, &case.inputs))?);
                let _ = std::fs::remove_dir_all(&out);
            }
        }
        let cell = |v: &[(f64, u64)]| {
            let s = crate::median(v.iter().map(|x| x.0).collect());
            let kb = v.iter().map(|x| x.1).max().unwrap_or(0);
            (
                s,
                format!(
                    "{s:.2} s, {:.2} M calls/s, {} MiB",
                    case.calls / s / 1e6,
                    kb / 1024
                ),
            )
        };
        let ((bs, bc), (ts, tc)) = (cell(&b), cell(&t));
        lines.push(format!("| {} | {bc} | {tc} | {:.2} |", case.label, ts / bs));
    }
    Ok(lines)
}
