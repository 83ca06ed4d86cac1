//! However the application ends, every record of the GPU work it finished is in the output:
//! `_exit`, `exec` (of itself or of a program without GPU runtime) and `SIGKILL` right after the
//! work, compared with a normal exit of the same workload.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;
use support::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocprof-endings-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `rocprof --sim --sys-trace -d <dir> -o run -- reference-then <ending>`.
fn run(ending: &str) -> (Output, PathBuf) {
    let dir = out_dir(ending);
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocprof"));
    for v in [
        "WSLSIM_SCENARIO",
        "HSA_TOOLS_DISABLE_REGISTER",
        "LD_PRELOAD",
    ] {
        c.env_remove(v);
    }
    c.args(["--sim", "--sys-trace", "-d"])
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload("reference-then"))
        .arg(ending);
    (c.output().unwrap(), dir)
}

/// (start, end) of each row, by kind of file, for one process image's files.
type Files = BTreeMap<&'static str, Vec<(u64, u64)>>;

const KINDS: [&str; 5] = [
    "hip_api_trace",
    "hsa_api_trace",
    "kernel_trace",
    "memory_copy_trace",
    "marker_api_trace",
];

/// Rows per kind of trace file (`kernel_trace`, `hip_api_trace`, …) that belong to the
/// workload's GPU work: those starting no later than the end of its last ROCTx range (the
/// teardown a normal exit adds afterwards, such as `__hipUnregisterFatBinary`, is not GPU work
/// and does not happen after `_exit`), API calls counted on the application's main thread only
/// (the runtime's own threads call HSA on their own schedule) and without the polls whose
/// number depends on timing (`hsa_signal_wait_*`, `hsa_signal_load_*`, and the read-index
/// polls of HIP's markers, `hsa_queue_load_read_index_*`). Summed over every
/// process image's files in `dir`.
fn rows(dir: &Path) -> BTreeMap<String, usize> {
    let mut by_prefix: BTreeMap<String, Files> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".csv") else {
            continue;
        };
        let Some(kind) = KINDS.into_iter().find(|k| stem.ends_with(k)) else {
            continue;
        };
        let prefix = stem[..stem.len() - kind.len()].to_owned();
        let mut reader = csv::Reader::from_path(&path).unwrap();
        let headers = reader.headers().unwrap().clone();
        let col = |h: &str| headers.iter().position(|x| x == h).unwrap();
        let (start, end) = (col("Start_Timestamp"), col("End_Timestamp"));
        let api = kind.ends_with("api_trace");
        let find = |h: &str| headers.iter().position(|x| x == h);
        let (pid, tid, function) = (find("Process_Id"), find("Thread_Id"), find("Function"));
        let poll = |r: &csv::StringRecord| {
            function.is_some_and(|f| {
                r[f].starts_with("hsa_signal_wait")
                    || r[f].starts_with("hsa_signal_load")
                    || r[f].starts_with("hsa_queue_load_read_index")
            })
        };
        let spans = reader
            .records()
            .map(Result::unwrap)
            .filter(|r| !api || matches!((pid, tid), (Some(p), Some(t)) if r[t] == r[p]))
            .filter(|r| !poll(r))
            .map(|r| (r[start].parse().unwrap(), r[end].parse().unwrap()))
            .collect();
        by_prefix.entry(prefix).or_default().insert(kind, spans);
    }
    let mut counts = BTreeMap::new();
    for files in by_prefix.values() {
        let work_end = files
            .get("marker_api_trace")
            .and_then(|m| m.iter().map(|s| s.1).max())
            .unwrap_or(0);
        for (kind, spans) in files {
            let n = spans.iter().filter(|s| s.0 <= work_end).count();
            *counts.entry((*kind).to_owned()).or_default() += n;
        }
    }
    counts
}

fn baseline() -> &'static BTreeMap<String, usize> {
    static B: std::sync::OnceLock<BTreeMap<String, usize>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let (o, dir) = run("exit");
        assert!(o.status.success(), "{}", stderr(&o));
        let r = rows(&dir);
        assert_eq!(r.get("kernel_trace"), Some(&8), "{r:?}\n{}", stderr(&o));
        assert_eq!(r.get("memory_copy_trace"), Some(&16), "{r:?}");
        r
    })
}

#[test]
fn exit_without_atexit_loses_nothing() {
    let (o, dir) = run("_exit");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(&rows(&dir), baseline(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains("lost"), "{err}");
    assert!(
        !err.contains("mismatch") && !err.contains("never"),
        "no false explanation: {err}"
    );
}

#[test]
fn sigkill_right_after_the_work_loses_nothing() {
    let (o, dir) = run("sigkill");
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    assert_eq!(&rows(&dir), baseline(), "{}", stderr(&o));
    assert!(stderr(&o).contains("SIGKILL"), "{}", stderr(&o));
}

#[test]
fn exec_of_a_program_without_gpu_loses_nothing() {
    let (o, dir) = run("exec-true");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(&rows(&dir), baseline(), "{}", stderr(&o));
}

#[test]
fn an_execd_image_gets_its_own_log_and_the_first_keeps_all_of_its_records() {
    let (o, dir) = run("exec");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let got = rows(&dir);
    for (kind, n) in baseline() {
        assert_eq!(
            got.get(kind),
            Some(&(2 * n)),
            "{kind}: both images' records\n{got:?}\n{}",
            stderr(&o)
        );
    }
}

/// A process that never touches the GPU costs almost nothing and says nothing: 200 of them
/// under one `rocprof`.
#[test]
fn processes_without_gpu_runtime_are_quiet_and_cheap() {
    let dir = out_dir("quiet");
    let t = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_rocprof"))
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(&dir)
        .args(["--", "sh", "-c", "for i in $(seq 200); do /bin/true; done"])
        .output()
        .unwrap();
    let elapsed = t.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        !err.contains("rocprof-tool"),
        "nothing from inside the processes: {err}"
    );
    assert!(
        err.lines().count() < 10,
        "a few lines, not one per process: {err}"
    );
    // Not a benchmark, a sanity bound: 201 processes each paying a discovery (milliseconds)
    // would take far longer than this on any machine.
    assert!(elapsed.as_secs() < 20, "{elapsed:?}");
}

/// `hsa-rate <n>` under `rocprof --sim --hsa-trace`, with the record directory on a file system
/// of `limit_kib` (a private tmpfs when this machine allows mounting one, else a file-size
/// limit on the application), or unlimited with `None`. Returns rocprof's output and the rows
/// of `hsa_api_trace.csv`.
fn hsa_rate(n: u32, limit_kib: Option<u32>) -> (Output, usize, &'static str) {
    let dir = out_dir(&format!("rate-{}", limit_kib.unwrap_or(0)));
    let records = out_dir(&format!("tmp-{}", limit_kib.unwrap_or(0)));
    std::fs::create_dir_all(&records).unwrap();
    let rocprof = env!("CARGO_BIN_EXE_rocprof");
    let app = workload("hsa-rate");
    let can_mount = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=64k tmpfs {0} && umount {0}",
            records.display()
        ))
        .output()
        .is_ok_and(|o| o.status.success());
    let mut c;
    let how;
    match limit_kib {
        None => {
            c = Command::new(rocprof);
            c.env("TMPDIR", &records)
                .args(["--sim", "--hsa-trace", "-d"])
                .arg(&dir)
                .args(["-o", "run", "--"])
                .arg(&app)
                .arg(n.to_string());
            how = "unlimited";
        }
        Some(kib) if can_mount => {
            c = Command::new("unshare");
            c.args(["-m", "sh", "-c"])
                .arg(format!(
                    "mount -t tmpfs -o size={kib}k tmpfs \"$0\" && exec \"$@\""
                ))
                .arg(&records)
                .arg("env")
                .arg(format!("TMPDIR={}", records.display()))
                .arg(rocprof)
                .args(["--sim", "--hsa-trace", "-d"])
                .arg(&dir)
                .args(["-o", "run", "--"])
                .arg(&app)
                .arg(n.to_string());
            how = "a full tmpfs";
        }
        Some(kib) => {
            c = Command::new(rocprof);
            c.env("TMPDIR", &records)
                .args(["--sim", "--hsa-trace", "-d"])
                .arg(&dir)
                .args(["-o", "run", "--", "sh", "-c"])
                .arg(format!("ulimit -f {}; exec \"$0\" \"$@\"", kib * 2))
                .arg(&app)
                .arg(n.to_string());
            how = "RLIMIT_FSIZE on the application";
        }
    }
    c.env_remove("WSLSIM_SCENARIO").env_remove("LD_PRELOAD");
    let o = c.output().unwrap();
    let rows = std::fs::read_to_string(dir.join("run_hsa_api_trace.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0);
    (o, rows, how)
}

/// `lost <n> records (no-space)` from rocprof's report, 0 when absent.
fn lost_no_space(err: &str) -> u64 {
    err.lines()
        .find_map(|l| {
            let rest = l.split("lost ").nth(1)?;
            let (n, rest) = rest.split_once(' ')?;
            rest.contains("(no-space)").then(|| n.parse().ok())?
        })
        .unwrap_or(0)
}

#[test]
fn a_full_record_directory_is_warned_once_and_every_lost_record_counted() {
    let n = 60_000;
    let (full, written, how) = hsa_rate(n, Some(512));
    eprintln!("record directory limited by {how}");
    let err = stderr(&full);
    assert_eq!(
        full.status.code(),
        Some(0),
        "the application keeps running: {err}"
    );
    assert_eq!(
        err.matches("cannot grow").count(),
        1,
        "one warning at the moment it happens: {err}"
    );
    let lost = lost_no_space(&err);
    assert!(
        lost > 0 && written > 0,
        "{written} written, {lost} lost: {err}"
    );
    let (all, total, _) = hsa_rate(n, None);
    assert!(all.status.success(), "{}", stderr(&all));
    assert_eq!(
        written as u64 + lost,
        total as u64,
        "the count is exact: {written} written + {lost} lost of {total}\n{err}"
    );
}
