//! MPI the way users run it: a real Open MPI `mpirun` starting one `rocprof` per rank, each
//! writing its own outputs under `%rank%`, then `rocprof merge` turning the ranks' databases
//! into one Perfetto trace and one rocpd database that hold every rank as its own process.
//!
//! Needs `mpirun` (Debian's `openmpi-bin`, which `.ci/run` installs); without it the test says
//! so and does nothing. Needs the staged simulator: run through `cargo xtask test`.

mod support;
use std::path::Path;
use std::process::Command;
use support::*;

const RANKS: usize = 4;

fn mpirun() -> Option<Command> {
    let found = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("mpi: SKIPPED: no mpirun on PATH (install openmpi-bin; .ci/run does)");
        return None;
    }
    let mut c = Command::new("mpirun");
    // As root Open MPI refuses to start without the first; the machine may have fewer cores
    // than ranks.
    c.args(["--allow-run-as-root", "--oversubscribe"]);
    Some(c)
}

/// `mpirun [mpi_args] rocprof --sim <args> -d <out> -o <file> -- reference-workload` with
/// `TMPDIR=tmp` and none of the steering variables; `None` without `mpirun`.
fn under_mpirun(
    tmp: &Path,
    mpi_args: &[&str],
    args: &[&str],
    out: &Path,
    file: &str,
) -> Option<std::process::Output> {
    let mut mpi = mpirun()?;
    mpi.env("TMPDIR", tmp)
        .args(mpi_args)
        .arg(rocprof(tmp).get_program())
        .arg("--sim")
        .args(args)
        .arg("-d")
        .arg(out)
        .args(["-o", file, "--"])
        .arg(workload("reference-workload"));
    for v in STEERING {
        mpi.env_remove(v);
    }
    Some(mpi.output().unwrap())
}

fn csv_rows(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().count().saturating_sub(1)
}

#[test]
fn each_rank_writes_its_own_outputs_and_the_merge_holds_every_rank() {
    let tmp = scratch("mpi", "ranks");
    let out = tmp.join("out");
    let np = RANKS.to_string();
    let Some(o) = under_mpirun(
        &tmp,
        &["-np", &np],
        &["--sys-trace", "-f", "csv,rocpd"],
        &out,
        "%rank%/run",
    ) else {
        return;
    };
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for rank in 0..RANKS {
        let dir = out.join(rank.to_string());
        assert_eq!(
            csv_rows(&dir.join("run_kernel_trace.csv")),
            8,
            "rank {rank}: {err}"
        );
        assert_eq!(
            csv_rows(&dir.join("run_hip_api_trace.csv")),
            52,
            "rank {rank}"
        );
        assert!(dir.join("run_results.db").is_file(), "rank {rank}: {err}");
    }
    assert_eq!(
        err.matches("1 process recorded").count(),
        RANKS,
        "one rocprof per rank, each with its own process: {err}"
    );

    // One trace and one database from the four ranks' databases.
    let merged = tmp.join("merged");
    let mut m = rocprof(&tmp);
    m.arg("merge");
    for rank in 0..RANKS {
        m.arg(out.join(rank.to_string()).join("run_results.db"));
    }
    m.args(["-f", "pftrace,rocpd", "-d"])
        .arg(&merged)
        .args(["-o", "all"]);
    let o = m.output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("merged {RANKS} inputs, {RANKS} processes")),
        "{err}"
    );
    let db = merged.join("all_results.db");
    let pftrace = merged.join("all_results.pftrace");
    assert!(db.is_file() && pftrace.is_file(), "{err}");
    assert_eq!(processes_in(&db), RANKS, "one process row per rank");
    perfetto_processes(&pftrace);
}

/// The merged trace, decoded with Perfetto's own protobuf classes (`tests/perfetto/
/// summarize.py`): one process track per rank, every rank's 8 kernels, no format error.
fn perfetto_processes(trace: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto/summarize.py");
    let o = Command::new(python())
        .arg(script)
        .arg(trace)
        .output()
        .unwrap();
    if o.status.code() == Some(3) {
        eprintln!("mpi: the merged trace was not decoded: {}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["errors"], serde_json::json!([]), "{summary}");
    let pids: std::collections::BTreeSet<u64> = summary["tracks"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|t| t["process"]["pid"].as_u64())
        .collect();
    assert_eq!(pids.len(), RANKS, "one process track per rank: {pids:?}");
    let kernels = summary["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] == "kernel_dispatch")
        .count();
    assert_eq!(kernels, 8 * RANKS, "every rank's kernels");
}

/// The number of processes in a rocpd database, read with Python's sqlite3 (the way upstream's
/// readers open it).
fn processes_in(db: &Path) -> usize {
    let script = "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nprint(c.execute('SELECT COUNT(DISTINCT pid) FROM rocpd_info_process').fetchone()[0])\n";
    let o = Command::new(python())
        .args(["-c", script])
        .arg(db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// `--profile-mpi-ranks 0,2` under the real `mpirun`: ranks 0 and 2 are profiled, ranks 1 and
/// 3 run the application unprofiled (it still runs: its exit status is the job's) and write
/// nothing; a rank variable named with `--mpi-world-rank-variable` is used instead of Open
/// MPI's own.
#[test]
fn only_the_selected_ranks_are_profiled() {
    let tmp = scratch("mpi", "selected");
    let out = tmp.join("out");
    let np = RANKS.to_string();
    let Some(o) = under_mpirun(
        &tmp,
        &["-np", &np],
        &["--kernel-trace", "--profile-mpi-ranks", "0,2"],
        &out,
        "%rank%/run",
    ) else {
        return;
    };
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for rank in 0..RANKS {
        let file = out.join(rank.to_string()).join("run_kernel_trace.csv");
        if rank % 2 == 0 {
            assert_eq!(csv_rows(&file), 8, "rank {rank}: {err}");
        } else {
            assert!(!file.exists(), "rank {rank} is not selected: {err}");
            assert!(
                err.contains(&format!(
                    "rank {rank} (OMPI_COMM_WORLD_RANK) is not in --profile-mpi-ranks"
                )),
                "{err}"
            );
        }
    }
    assert_eq!(err.matches("1 process recorded").count(), 2, "{err}");

    // Ranks named by another variable: every rank is 7 here, and 7 is not selected.
    let out = tmp.join("named");
    let o = under_mpirun(
        &tmp,
        &["-np", "2", "-x", "MY_RANK=7", "-x", "MY_SIZE=8"],
        &[
            "--kernel-trace",
            "--profile-mpi-ranks",
            "0-3",
            "--mpi-world-rank-variable",
            "MY_RANK",
            "--mpi-world-size-variable",
            "MY_SIZE",
        ],
        &out,
        "run",
    )
    .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.matches("rank 7 (MY_RANK) is not in").count(),
        2,
        "{err}"
    );
    assert!(!out.exists(), "no rank was profiled: {err}");
}

/// The row count of every plain `rocpd_*` view of a database (Python's sqlite3), and whether
/// upstream's data and summary views answer on it.
fn view_counts(db: &Path) -> serde_json::Value {
    let script = "import sqlite3,sys,json\n\
c=sqlite3.connect(sys.argv[1])\n\
names=[r[0] for r in c.execute(\"SELECT name FROM sqlite_master WHERE type='view' ORDER BY name\")]\n\
print(json.dumps({n: c.execute('SELECT COUNT(*) FROM \"%s\"' % n).fetchone()[0] for n in names}))\n";
    let o = Command::new(python())
        .args(["-c", script])
        .arg(db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}: {}", db.display(), stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `rocprof analyze --json` of some inputs: each process's pid and timeline verdicts.
fn verdicts(
    tmp: &Path,
    inputs: &[std::path::PathBuf],
) -> std::collections::BTreeMap<u64, serde_json::Value> {
    let o = rocprof(tmp)
        .args(["analyze", "--json"])
        .args(inputs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for input in r["inputs"].as_array().unwrap() {
        for p in input["processes"].as_array().unwrap() {
            out.insert(p["pid"].as_u64().unwrap(), p["timeline"].clone());
        }
    }
    out
}

/// Sixteen ranks (oversubscribed) each writing one database, merged into one: every view of
/// the merged file has the sum of the inputs' rows (upstream's data and summary views included,
/// so they work on it), every rank is its own process, and `rocprof analyze` gives every
/// process the same verdicts in the merged file as in its own.
#[test]
fn sixteen_ranks_merge_into_one_database_table_by_table() {
    const N: usize = 16;
    let tmp = scratch("mpi", "sixteen");
    let out = tmp.join("out");
    let Some(o) = under_mpirun(
        &tmp,
        &["-np", &N.to_string()],
        &["--sys-trace", "-f", "rocpd"],
        &out,
        "%rank%/run",
    ) else {
        return;
    };
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let inputs: Vec<std::path::PathBuf> = (0..N)
        .map(|r| out.join(r.to_string()).join("run_results.db"))
        .collect();
    let merged = tmp.join("merged");
    let o = rocprof(&tmp)
        .args(["merge", "-f", "rocpd", "-d"])
        .arg(&merged)
        .args(["-o", "all"])
        .args(&inputs)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("merged {N} inputs, {N} processes")),
        "{err}"
    );
    let db = merged.join("all_results.db");
    let total = view_counts(&db);
    let mut sum: std::collections::BTreeMap<String, u64> = Default::default();
    for i in &inputs {
        for (name, n) in view_counts(i).as_object().unwrap() {
            // The summary views aggregate (one row per name, not per process).
            *sum.entry(name.clone()).or_default() += n.as_u64().unwrap();
        }
    }
    assert_eq!(processes_in(&db), N);
    for table in [
        "rocpd_info_process",
        "rocpd_info_agent",
        "rocpd_info_thread",
        "rocpd_string",
        "rocpd_region",
        "rocpd_sample",
        "rocpd_event",
        "rocpd_kernel_dispatch",
        "rocpd_memory_copy",
        "rocpd_memory_allocate",
        "rocpd_track",
        "regions",
        "kernels",
        "memory_copies",
    ] {
        assert!(sum.contains_key(table), "{table} in every input: {sum:?}");
        assert_eq!(total[table].as_u64(), Some(sum[table]), "{table}");
    }
    for (name, n) in &sum {
        if name.starts_with("rocpd_") {
            assert_eq!(total[name.as_str()].as_u64(), Some(*n), "{name}");
        }
    }
    assert_eq!(total["kernels"].as_u64(), Some(8 * N as u64));
    assert!(
        total["top"].as_u64().unwrap() > 0,
        "upstream's summary view answers"
    );
    let one = verdicts(&tmp, &[db]);
    let each = verdicts(&tmp, &inputs);
    assert_eq!(one.len(), N);
    assert_eq!(one, each, "the same verdicts per process");
}
