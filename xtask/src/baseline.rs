//! `cargo xtask bench --baseline REV`: the max-rate figures of this tree and of revision REV,
//! measured in one session with the runs interleaved, each figure printed for both builds with
//! their ratio.
//!
//! A difference between two builds is only worth reporting when both ran on the same machine in
//! the same minutes: this VM's timing drifts by ±20 % over an hour, more than most changes
//! move a figure. So REV is extracted (`git archive`) into `target/baseline/<commit>/src`,
//! built in release with a target directory of its own (`target/baseline/<commit>/target`, kept,
//! so a second run rebuilds nothing), staged exactly as this tree's build is, and then
//! every round runs the untraced and traced loop of the baseline, then of this tree, then the
//! next round, so slow minutes hit both columns alike.
//!
//! Besides each loop's own wall-clock figure (the workload times its loop), every run is timed
//! from outside by bash's `time` around the application alone: user + system CPU of the whole
//! application process over its lifetime, all threads included (the tool's log writer, growth
//! and harvest threads, the runtime's), but not `rocprof`'s conversion after the application
//! ended. The added CPU per call is that total's difference, traced against untraced, divided by
//! the calls.

use crate::{MAX_RATE, Samples, cargo, median, root, run, stage, target_dir, workload};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit REV names (full hash), or an error saying why it names none.
fn resolve(rev: &str) -> Result<String> {
    let out = Command::new("git")
        .current_dir(root())
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "--baseline {rev:?} names no commit of this repository (a clone with its history is needed)"
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// REV's tree under `target/baseline/<commit>/src` (extracted once; a `.complete` file marks a
/// finished extraction), built in release; returns the staged release directory.
fn build_baseline(commit: &str) -> Result<PathBuf> {
    let base = target_dir().join("baseline");
    let src = base.join(&commit[..12]).join("src");
    let complete = src.join(".complete");
    if !complete.exists() {
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&src)?;
        eprintln!("bench: extracting {} into {}", &commit[..12], src.display());
        let archive = Command::new("git")
            .current_dir(root())
            .args(["archive", "--format=tar", commit])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .context("cannot run git archive")?;
        // `-m`: the files get the extraction's time, not the commit's (cargo judges a path
        // package fresh by comparing its sources' times with its last build's).
        let status = Command::new("tar")
            .arg("-x")
            .arg("-m")
            .arg("-C")
            .arg(&src)
            .stdin(archive.stdout.context("git archive has no output")?)
            .status()
            .context("cannot run tar")?;
        if !status.success() {
            bail!("extracting {commit} failed ({status})");
        }
        std::fs::write(&complete, b"")?;
    }
    // One target directory per baseline: when they shared one, a revision extracted before
    // another was built there looked older than the other's build-script outputs, and cargo
    // reused them (`--baseline f292967` after `--baseline d38facb` failed to compile with
    // d38facb's generated API tables).
    let target = base.join(&commit[..12]).join("target");
    eprintln!("bench: building the baseline {} in release", &commit[..12]);
    let mut c = cargo();
    c.current_dir(&src).env("CARGO_TARGET_DIR", &target).args([
        "build",
        "--release",
        "--workspace",
    ]);
    run(&mut c)?;
    stage(&target.join("release"))
}

/// `cargo xtask bench --merge --baseline REV`: the merge figures of REV and of this tree,
/// interleaved ([`crate::merge_bench::bench_against`]).
pub(crate) fn bench_merge(rev: &str) -> Result<()> {
    let commit = resolve(rev)?;
    let baseline = build_baseline(&commit)?;
    eprintln!("bench: building this tree in release");
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let current = stage(&target_dir().join("release"))?;
    let scratch = std::env::temp_dir().join(format!("rocprof-bench-merge-{}", std::process::id()));
    let lines = crate::merge_bench::bench_against(&baseline, &current, &commit[..7], &scratch, 3);
    let _ = std::fs::remove_dir_all(&scratch);
    for l in lines? {
        println!("{l}");
    }
    Ok(())
}

/// One loop's samples on one build: the loop's own figures, and the whole application's CPU.
#[derive(Default)]
struct Side {
    plain: Samples,
    traced: Samples,
    /// User + system seconds of the application over its lifetime, untraced and traced.
    plain_cpu: Vec<f64>,
    traced_cpu: Vec<f64>,
}

/// `cpu_s=<user>+<system>` as bash's `time` prints it with the TIMEFORMAT [`timed`] sets.
fn application_cpu(stderr: &[u8]) -> Option<f64> {
    let text = String::from_utf8_lossy(stderr);
    let (user, system) = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("cpu_s="))?
        .split_once('+')?;
    Some(user.trim().parse::<f64>().ok()? + system.trim().parse::<f64>().ok()?)
}

/// The workload command of [`workload`], with the application itself run under bash's `time`.
fn timed(bin: &Path, exe: &Path, iterations: &str, traced: Option<(&str, &Path)>) -> Command {
    let script = "TIMEFORMAT='cpu_s=%3U+%3S'; time \"$@\"";
    let exe = exe.display().to_string();
    workload(
        bin,
        "bash",
        &["-c", script, "bash", &exe, iterations],
        traced,
    )
}

impl Side {
    fn round(&mut self, bin: &Path, name: &str, option: &str, iterations: &str) -> Result<()> {
        let exe = bin.join(name);
        let calls: f64 = iterations.parse()?;
        let out_dir = std::env::temp_dir().join(format!("rocprof-baseline-{}", std::process::id()));
        let out = timed(bin, &exe, iterations, None).output()?;
        self.plain.add(&out, name, calls)?;
        self.plain_cpu.extend(application_cpu(&out.stderr));
        let out = timed(bin, &exe, iterations, Some((option, &out_dir))).output()?;
        self.traced.add(&out, name, calls)?;
        self.traced_cpu.extend(application_cpu(&out.stderr));
        let _ = std::fs::remove_dir_all(&out_dir);
        Ok(())
    }

    /// Added wall-clock ns per call (median traced − median untraced).
    fn added_wall(&self) -> f64 {
        median(self.traced.wall.clone()) - median(self.plain.wall.clone())
    }

    /// Added host CPU ns per call over every thread the workload reports but the simulated
    /// GPU's (a real GPU spends no host CPU), if it reported them (`dispatch-rate` does).
    fn added_host_cpu(&self) -> Option<f64> {
        Some(self.traced.host_cpu()? - self.plain.host_cpu()?)
    }

    /// Added CPU ns per call of the whole application, if every run was timed.
    fn added_cpu(&self, calls: f64) -> Option<f64> {
        if self.plain_cpu.is_empty() || self.traced_cpu.is_empty() {
            return None;
        }
        Some((median(self.traced_cpu.clone()) - median(self.plain_cpu.clone())) * 1e9 / calls)
    }
}

/// `cargo xtask bench --baseline REV` (with `dispatch_only`, `… --dispatch`: the
/// kernel-dispatch loops alone).
pub(crate) fn bench(rev: &str, dispatch_only: bool) -> Result<()> {
    let commit = resolve(rev)?;
    let baseline = build_baseline(&commit)?;
    eprintln!("bench: building this tree in release");
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let current = stage(&target_dir().join("release"))?;
    let short = &commit[..commit.len().min(7)];
    let mut rows = Vec::new();
    for (name, option, iterations, rounds) in MAX_RATE {
        if dispatch_only && name != "dispatch-rate" {
            continue;
        }
        let (base_exe, this_exe) = (baseline.join(name), current.join(name));
        if !base_exe.exists() || !this_exe.exists() {
            eprintln!("bench: {name} is not built by both revisions; skipped");
            continue;
        }
        let calls: f64 = iterations.parse()?;
        let (mut base, mut this) = (Side::default(), Side::default());
        // A figure the baseline cannot run (an option it did not have yet) is measured on this
        // tree alone, and the table says why its baseline column is empty.
        let mut base_failed = None;
        for round in 0..rounds {
            eprintln!("bench: {name} {option}, round {}/{rounds}", round + 1);
            if base_failed.is_none()
                && let Err(e) = base.round(&baseline, name, option, iterations)
            {
                let why = e.to_string();
                // rocprof's own refusal (`error: …`), not the bench's wrapping of it.
                let first = why
                    .lines()
                    .find_map(|l| l.find("error:").map(|at| &l[at..]))
                    .unwrap_or("it failed");
                eprintln!("bench: the baseline cannot run {name} {option}: {first}");
                base_failed = Some(first.trim().replace('|', "/"));
            }
            this.round(&current, name, option, iterations)?;
        }
        let unit = if name == "dispatch-rate" {
            "dispatch"
        } else {
            "call"
        };
        let ratio = |b: f64, t: f64| {
            if b.abs() < f64::EPSILON {
                "–".to_owned()
            } else {
                format!("{:.2}", t / b)
            }
        };
        if let Some(why) = base_failed {
            let t = this.added_wall();
            rows.push(format!(
                "| {name} {option}: added wall-clock ns per {unit} (the loop's own timing) | not measurable ({why}) | {t:.1} | – |"
            ));
            if let Some(t) = this.added_cpu(calls) {
                rows.push(format!(
                    "| {name} {option}: added CPU ns per {unit}, whole application (all threads, its lifetime) | not measurable | {t:.1} | – |"
                ));
            }
            if let Some(t) = this.added_host_cpu() {
                rows.push(format!(
                    "| {name} {option}: added host CPU ns per {unit}, every thread but the simulated GPU's (to the loop's end) | not measurable | {t:.1} | – |"
                ));
            }
            continue;
        }
        let (b, t) = (base.added_wall(), this.added_wall());
        rows.push(format!(
            "| {name} {option}: added wall-clock ns per {unit} (the loop's own timing) | {b:.1} | {t:.1} | {} |",
            ratio(b, t)
        ));
        if let (Some(b), Some(t)) = (base.added_cpu(calls), this.added_cpu(calls)) {
            rows.push(format!(
                "| {name} {option}: added CPU ns per {unit}, whole application (all threads, its lifetime) | {b:.1} | {t:.1} | {} |",
                ratio(b, t)
            ));
        }
        if let Some(t) = this.added_host_cpu() {
            let (b, r) = match base.added_host_cpu() {
                Some(b) => (format!("{b:.1}"), ratio(b, t)),
                None => ("not reported".to_owned(), "–".to_owned()),
            };
            rows.push(format!(
                "| {name} {option}: added host CPU ns per {unit}, every thread but the simulated GPU's (to the loop's end) | {b} | {t:.1} | {r} |"
            ));
        }
    }
    println!(
        "| figure (medians of the interleaved rounds) | baseline {short} | this tree | ratio |"
    );
    println!("|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::application_cpu;

    #[test]
    fn reads_bash_time_output() {
        assert_eq!(
            application_cpu(b"noise\ncpu_s=0.250+0.125\n"),
            Some(0.375),
            "user plus system"
        );
        assert_eq!(application_cpu(b"cpu_s=abc+0.1\n"), None);
        assert_eq!(application_cpu(b"no timing here\n"), None);
        // The last report wins (an application may print its own lines first).
        assert_eq!(
            application_cpu(b"cpu_s=9+9\ncpu_s=1.000+0.000\n"),
            Some(1.0)
        );
    }
}
