//! `cargo xtask bench`'s merge figures (issue 28): reading one rocpd database of 1 M calls
//! back, merging 8 of them into CSV and into one rocpd, and the merge's peak memory for 1, 8
//! and 64 inputs (64 small generated ones).

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

/// The merge figures as markdown lines.
pub fn bench(bin: &Path, scratch: &Path) -> Result<Vec<String>> {
    const CALLS: f64 = 1_000_000.0;
    let mut lines = Vec::new();
    let big: Vec<PathBuf> = (0..8)
        .map(|k| database(bin, &scratch.join(format!("big{k}")), "1000000"))
        .collect::<Result<_>>()?;
    // Records of one database: its calls (each one region) and their events.
    let (s, kb) = timed(merge(bin, &scratch.join("one"), "csv", &big[..1]))?;
    lines.push(format!(
        "| read back 1 × 1 M calls → CSV | {s:.2} s | {:.2} M calls/s | {} MiB |",
        CALLS / s / 1e6,
        kb / 1024
    ));
    for format in ["csv", "rocpd"] {
        let (s, kb) = timed(merge(
            bin,
            &scratch.join(format!("eight-{format}")),
            format,
            &big,
        ))?;
        lines.push(format!(
            "| merge 8 × 1 M calls → {format} | {s:.2} s | {:.2} M calls/s | {} MiB |",
            8.0 * CALLS / s / 1e6,
            kb / 1024
        ));
    }
    let small: Vec<PathBuf> = (0..64)
        .map(|k| database(bin, &scratch.join(format!("small{k}")), "10000"))
        .collect::<Result<_>>()?;
    for n in [1usize, 8, 64] {
        let (s, kb) = timed(merge(
            bin,
            &scratch.join(format!("small-{n}")),
            "csv,rocpd",
            &small[..n],
        ))?;
        lines.push(format!(
            "| merge {n} × 10 k calls → csv,rocpd | {s:.2} s | {:.2} M calls/s | {} MiB |",
            n as f64 * 1e4 / s / 1e6,
            kb / 1024
        ));
    }
    Ok(lines)
}
