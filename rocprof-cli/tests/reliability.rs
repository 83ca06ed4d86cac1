//! The record directory, `rocprof convert`, outputs that are never half-written or mixed,
//! and configuration errors refused before the launch, end to end on the simulated 890M.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;
use support::*;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The `rocprof convert <dir>` command in `stderr`, as (executable, record directory).
fn convert_command(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .find(|l| l.contains(" convert /"))
        .unwrap_or_else(|| panic!("no convert command printed:\n{stderr}"));
    PathBuf::from(line.trim().rsplit(' ').next().unwrap())
}

/// Data rows of a CSV file, each as column → value.
fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(Result::unwrap).collect()
}

/// Copies a directory's regular files (a record directory has no subdirectories).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// How the test fills the output file system: a 16 KiB tmpfs mounted in a private mount
/// namespace, or (without the privilege) rocprof's own file-size limit lowered once the
/// application runs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FullDisk {
    Tmpfs,
    FileSizeLimit,
}

fn full_disk_mechanism() -> FullDisk {
    let ok = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        FullDisk::Tmpfs
    } else {
        FullDisk::FileSizeLimit
    }
}

#[test]
fn the_record_directory_is_private_described_and_removed_after_success() {
    let tmp = scratch_here("private");
    let out = tmp.join("out");
    let seen = tmp.join("seen");
    // The application looks at its own record directory while it runs.
    let script = r#"
import json, os, stat, sys
d = os.environ["ROCPROF_RECORD_DIR"]
m = json.load(open(os.path.join(d, "run.json")))
open(sys.argv[1], "w").write(json.dumps({"dir": d, "mode": stat.S_IMODE(os.stat(d).st_mode), "run": m}))
"#;
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "--stats", "-d"])
        .arg(&out)
        .args(["-o", "%tag%-%env{ROCPROF_REL_TEST}%", "-T", "--"])
        .arg(python())
        .args(["-c", script])
        .arg(&seen)
        .env("ROCPROF_REL_TEST", "v1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let dir = PathBuf::from(seen["dir"].as_str().unwrap());
    assert_eq!(dir.parent().unwrap(), tmp, "under $TMPDIR");
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(
        name.len() == 24
            && name.starts_with("rocprof-")
            && name[8..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    assert_eq!(seen["mode"], 0o700);
    let run = &seen["run"];
    assert_eq!(run["schema"], "rocprof-run/1");
    assert_eq!(run["selection"]["kernels"], true);
    assert_eq!(run["selection"]["hip_runtime"], false);
    assert_eq!(run["outputs"]["directory"], out.to_str().unwrap());
    assert_eq!(run["outputs"]["stats"], true);
    assert_eq!(run["outputs"]["truncate_kernels"], true);
    assert_eq!(run["launch"]["env"]["ROCPROF_REL_TEST"], "v1");
    assert_eq!(run["launch"]["argv"][1], "-c");
    assert!(run["launch"]["rocprof_pid"].as_u64().unwrap() > 0);
    assert!(
        run["status"].is_null(),
        "unknown while the application runs"
    );
    assert!(
        !dir.exists() && record_dirs(&tmp).is_empty(),
        "removed after a successful run: {:?}",
        names(&tmp)
    );
    // A second run gets a different directory (never reused).
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(&out)
        .args(["--"])
        .arg(python())
        .args(["-c", script])
        .arg(tmp.join("seen2"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let seen2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.join("seen2")).unwrap()).unwrap();
    assert_ne!(seen2["dir"], seen["dir"]);
}

#[test]
fn a_full_disk_keeps_the_logs_and_convert_finishes_the_job_identically() {
    let tmp = scratch_here("full");
    let mount = tmp.join("mnt");
    std::fs::create_dir_all(&mount).unwrap();
    let mechanism = full_disk_mechanism();
    eprintln!("full disk simulated with: {mechanism:?}");
    let app = workload("reference-workload");
    let o = match mechanism {
        FullDisk::Tmpfs => {
            // Inside the namespace: the run, then a listing of what it left in -d.
            let script = format!(
                "mount -t tmpfs -o size=16k tmpfs '{m}' && '{r}' --sim --sys-trace -d '{m}' -o run -- '{a}' >/dev/null; rc=$?; ls -A '{m}'; exit $rc",
                m = mount.display(),
                r = env!("CARGO_BIN_EXE_rocprof"),
                a = app.display()
            );
            let mut c = Command::new("unshare");
            c.args(["-m", "sh", "-c", &script]).env("TMPDIR", &tmp);
            for v in [
                "WSLSIM_SCENARIO",
                "LD_PRELOAD",
                "HSA_TOOLS_DISABLE_REGISTER",
            ] {
                c.env_remove(v);
            }
            c.output().unwrap()
        }
        FullDisk::FileSizeLimit => {
            // The application waits for `go`; meanwhile rocprof's own file-size limit is
            // lowered (the running application keeps its own).
            let go = tmp.join("go");
            let script = format!(
                "import os, time\nwhile not os.path.exists('{g}'): time.sleep(0.01)\nos.execv('{a}', ['{a}'])",
                g = go.display(),
                a = app.display()
            );
            let child = rocprof(&tmp)
                .args(["--sim", "--sys-trace", "-d"])
                .arg(&mount)
                .args(["-o", "run", "--"])
                .arg(python())
                .args(["-c", &script])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(300));
            let limit = libc::rlimit {
                rlim_cur: 8192,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: prlimit on our own child with a valid rlimit; the old value is not read.
            let r = unsafe {
                libc::prlimit(
                    child.id() as libc::pid_t,
                    libc::RLIMIT_FSIZE,
                    &limit,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
            std::fs::write(&go, "").unwrap();
            child.wait_with_output().unwrap()
        }
    };
    let err = stderr(&o);
    assert!(
        !o.status.success(),
        "a failed conversion fails the run:\n{err}"
    );
    assert!(
        err.contains("run_hsa_api_trace.csv") && err.contains("no space"),
        "names the file and says no space:\n{err}"
    );
    if mechanism == FullDisk::Tmpfs {
        let left = String::from_utf8_lossy(&o.stdout);
        assert!(
            !left.contains("tmp") && !left.contains(".rocprof"),
            "nothing half-written left in -d: {left}"
        );
    }
    let kept = convert_command(&err);
    assert_eq!(record_dirs(&tmp), std::slice::from_ref(&kept), "{err}");

    // Convert a copy and the kept directory itself, into two directories.
    let copy = tmp.join("copy");
    copy_dir(&kept, &copy);
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    for (dir, out) in [(&copy, &a), (&kept, &b)] {
        let o = rocprof(&tmp)
            .arg("convert")
            .arg(dir)
            .arg("-d")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!dir.exists(), "removed once converted");
        // -s: agent info, HIP, HSA, kernel, copy and memory-allocation traces.
        assert!(stderr(&o).contains("7 files written"), "{}", stderr(&o));
    }
    assert_eq!(names(&a), names(&b));
    for n in names(&a) {
        assert_eq!(
            std::fs::read(a.join(&n)).unwrap(),
            std::fs::read(b.join(&n)).unwrap(),
            "{n} differs"
        );
    }
    // What the workload does: 8 iterations of 2 copies, a launch and a marker.
    let count = |n: &str| rows(&a.join(format!("run_{n}.csv"))).len();
    assert_eq!(count("kernel_trace"), 8);
    assert_eq!(count("memory_copy_trace"), 16);
    assert_eq!(count("marker_api_trace"), 8);
    assert_eq!(count("hip_api_trace"), 52);
    assert!(count("hsa_api_trace") >= 300);
    // Converting it again is refused: the job is done.
    let o = rocprof(&tmp).arg("convert").arg(&kept).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a record directory"),
        "{}",
        stderr(&o)
    );
}

/// Starts `rocprof` on a Python application that waits for `<tmp>/stop`; returns the child
/// and its record directory once the application runs.
fn waiting_run(tmp: &Path, out: &Path) -> (std::process::Child, PathBuf) {
    let ready = tmp.join("ready");
    let script = "import os, sys, time\nopen(sys.argv[1], 'w').write('x')\nwhile not os.path.exists(sys.argv[2]): time.sleep(0.01)";
    let child = rocprof(tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(out)
        .args(["--"])
        .arg(python())
        .args(["-c", script])
        .arg(&ready)
        .arg(tmp.join("stop"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the application never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let dirs = record_dirs(tmp);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    (child, dirs[0].clone())
}

#[test]
fn a_fifo_or_a_link_named_like_a_log_is_skipped_with_a_warning() {
    let tmp = scratch_here("fifo");
    let (mut child, dir) = waiting_run(&tmp, &tmp.join("out"));
    // While the run holds it, its directory cannot be converted.
    let o = rocprof(&tmp).arg("convert").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("in use by another rocprof"),
        "{}",
        stderr(&o)
    );
    // Killed outright, rocprof keeps the directory (and the application dies with it).
    child.kill().unwrap();
    child.wait().unwrap();
    let fifo = dir.join("999.rplog");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let outside = tmp.join("outside.rplog");
    std::fs::write(&outside, "not a log").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("998.rplog")).unwrap();
    let mut c = rocprof(&tmp)
        .arg("convert")
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(10) {
            c.kill().unwrap();
            panic!("rocprof convert blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = c.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(status.success(), "{err}");
    assert!(
        err.contains("999.rplog is named like a record log but is a FIFO: skipped"),
        "{err}"
    );
    assert!(
        err.contains("998.rplog is named like a record log but is a symbolic link: skipped"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not a log",
        "the link's target is untouched"
    );
}

#[test]
fn concurrent_runs_into_the_same_names_never_mix_and_say_who_replaced_whom() {
    let tmp = scratch_here("concurrent");
    let out = tmp.join("out");
    let runs: Vec<std::process::Child> = (0..4)
        .map(|_| {
            rocprof(&tmp)
                .args(["--sim", "--hip-trace", "--kernel-trace", "-d"])
                .arg(&out)
                .args(["-o", "same", "--"])
                .arg(workload("reference-workload"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = runs
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for o in &outputs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    assert_eq!(
        names(&out),
        [
            "same_agent_info.csv",
            "same_hip_api_trace.csv",
            "same_kernel_trace.csv"
        ],
        "no staging directory or temporary file is left"
    );
    // Whole files of one process each.
    let hip = rows(&out.join("same_hip_api_trace.csv"));
    assert_eq!(hip.len(), 52);
    let pids: std::collections::BTreeSet<&str> =
        hip.iter().map(|r| r["Process_Id"].as_str()).collect();
    assert_eq!(pids.len(), 1, "rows of one process only: {pids:?}");
    let kernels = rows(&out.join("same_kernel_trace.csv"));
    assert_eq!(kernels.len(), 8);
    let threads: std::collections::BTreeSet<&str> =
        kernels.iter().map(|r| r["Thread_Id"].as_str()).collect();
    assert_eq!(threads.len(), 1, "{threads:?}");
    // Every run started before any wrote: each replacement of a file is said, by the run
    // that replaced it at least.
    for file in ["same_hip_api_trace.csv", "same_kernel_trace.csv"] {
        let saying: Vec<&Output> = outputs
            .iter()
            .filter(|o| {
                stderr(o).lines().any(|l| {
                    l.contains(file)
                        && (l.contains("this run replaced")
                            || l.contains("was replaced by another run"))
                })
            })
            .collect();
        assert!(
            saying.len() >= 3,
            "{file}: {} of 4 runs said a replacement:\n{}",
            saying.len(),
            outputs
                .iter()
                .map(stderr)
                .collect::<Vec<_>>()
                .join("\n----\n")
        );
        let replacers = outputs
            .iter()
            .filter(|o| {
                stderr(o)
                    .lines()
                    .any(|l| l.contains(file) && l.contains("this run replaced"))
            })
            .count();
        assert_eq!(replacers, 3, "{file}: three runs replaced another's file");
    }
    // A run alone says nothing of the kind.
    let o = rocprof(&tmp)
        .args(["--sim", "--hip-trace", "-d"])
        .arg(&out)
        .args(["-o", "same", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("replaced"), "{}", stderr(&o));
}

#[test]
fn bad_output_paths_exit_2_before_the_application_starts() {
    let tmp = scratch_here("paths");
    let marker = tmp.join("ran");
    let file = tmp.join("a-file");
    std::fs::write(&file, "").unwrap();
    let readonly = tmp.join("ro");
    std::fs::create_dir(&readonly).unwrap();
    let long = "n".repeat(250);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["-d".into(), file.display().to_string()],
            "is not a directory",
        ),
        (
            vec!["-d".into(), file.join("sub").display().to_string()],
            "is not a directory",
        ),
        (
            vec![
                "-d".into(),
                tmp.display().to_string(),
                "-o".into(),
                "%arg2%".into(),
            ],
            "takes out of the output directory",
        ),
        (
            vec!["-d".into(), tmp.display().to_string(), "-o".into(), long],
            "more than the 255 a file name may have",
        ),
        (
            vec!["-d".into(), "/proc/self/x".into()],
            "cannot create the output files under /proc/self",
        ),
    ];
    for (args, expected) in cases {
        let o = rocprof(&tmp)
            .args(["--sim", "--kernel-trace"])
            .args(&args)
            .args(["--", "/usr/bin/touch"])
            .arg(&marker)
            // Cleaned as rocprofv3 cleans arguments, `/..` is `..`.
            .arg("/..")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
        assert!(!marker.exists(), "{args:?}: the application ran");
        assert!(
            record_dirs(&tmp).is_empty(),
            "{args:?}: a record directory was left"
        );
    }
    // A directory that cannot be created into, for a user the permissions apply to.
    std::fs::set_permissions(&readonly, std::fs::Permissions::from_mode(0o500)).unwrap();
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(readonly.join("sub"))
        .args(["--", "/usr/bin/touch"])
        .arg(&marker)
        .output()
        .unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(!marker.exists());
    }
}

#[test]
fn configuration_errors_are_found_before_the_launch() {
    let tmp = scratch_here("config");
    let marker = tmp.join("ran");
    let run = |env: &[(&str, &str)]| {
        rocprof(&tmp)
            .args(["--sim", "--kernel-trace", "-d"])
            .arg(tmp.join("out"))
            .args(["--", "/usr/bin/touch"])
            .arg(&marker)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let o = run(&[("ROCPROF_HSAKMT_LAYOUT", "400")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ROCPROF_HSAKMT_LAYOUT='400'")
            && stderr(&o).contains("368, 376, 392, 396"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "refused before the launch");
    for (var, value, said) in [
        (
            "ROCPROFILER_FORCE_GFX",
            "gfx11",
            "ROCPROFILER_FORCE_GFX='gfx11'",
        ),
        (
            "ROCPROFILER_FORCE_PLATFORM",
            "windows",
            "ROCPROFILER_FORCE_PLATFORM='windows'",
        ),
    ] {
        let o = run(&[(var, value)]);
        assert!(o.status.success(), "{var}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{var}: {}", stderr(&o));
        assert!(marker.exists(), "{var}: the run proceeds");
        std::fs::remove_file(&marker).unwrap();
    }
}

#[test]
fn a_broken_scenario_is_reported_once_by_rocprof_before_the_launch() {
    let tmp = scratch_here("scenario");
    let bad = tmp.join("bad.toml");
    std::fs::write(&bad, "[thunk]\nlayuot = 376\n").unwrap();
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(tmp.join("out"))
        .args(["--"])
        .arg(workload("reference-workload"))
        .env("WSLSIM_SCENARIO", &bad)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(
        err.matches("wslsim: cannot use scenario").count(),
        1,
        "once, for rocprof and the application together:\n{err}"
    );
    assert!(
        err.starts_with("wslsim: cannot use scenario"),
        "before anything else:\n{err}"
    );
    // A good scenario says nothing of the kind.
    let o = rocprof(&tmp).args(["--sim", "avail"]).output().unwrap();
    assert!(!stderr(&o).contains("wslsim:"), "{}", stderr(&o));
}

#[test]
fn convert_refuses_what_is_not_a_kept_record_directory() {
    let tmp = scratch_here("notdir");
    let o = rocprof(&tmp).arg("convert").arg(&tmp).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a record directory"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("run.json"), "{}", stderr(&o));
    // Without a directory it lists the kept ones instead (none here).
    let o = rocprof(&tmp).arg("convert").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no record directory is kept"),
        "{}",
        stderr(&o)
    );
    std::os::unix::fs::symlink(&tmp, tmp.join("link")).unwrap();
    let o = rocprof(&tmp)
        .arg("convert")
        .arg(tmp.join("link"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
}

/// A kept record directory with one flipped byte in a sealed chunk and an empty log beside it:
/// `rocprof convert` loses that chunk only, counts what it held, says the empty log is
/// unreadable and why, and blames neither on the runtime.
#[test]
fn a_flipped_byte_costs_one_chunk_and_an_unreadable_log_is_not_a_runtime_problem() {
    let tmp = scratch_here("flip");
    let out = tmp.join("out");
    // Dispatch and copy times that cannot be read are counted as lost, so the directory is kept.
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/times-fail.toml");
    let o = rocprof(&tmp)
        .env("WSLSIM_SCENARIO", &scenario)
        .args(["--sim", "--sys-trace", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = convert_command(&stderr(&o));
    // `rocprof convert` alone lists what is kept (the way to find a directory after rocprof
    // itself was killed and could print nothing).
    let listed = rocprof(&tmp).arg("convert").output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        text.contains(&dir.display().to_string()) && text.contains("reference-workload"),
        "{text}"
    );
    let empty = scratch_here("flip-empty");
    let none = rocprof(&empty).arg("convert").output().unwrap();
    assert!(
        stderr(&none).contains("no record directory is kept"),
        "{}",
        stderr(&none)
    );
    let before = rows(&out.join("run_hsa_api_trace.csv")).len();
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rplog"))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    // The fullest sealed chunk (64 KiB slots after a 4 KiB header; commit word at +8, seal mark
    // at +20): flip a byte in the middle of what it committed.
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let chunk = (4096..bytes.len())
        .step_by(65536)
        .filter(|&at| word(at + 20) == trace_records::log::SEALED)
        .max_by_key(|&at| word(at + 12))
        .expect("a sealed chunk");
    let (used, entries) = (word(chunk + 8) as usize, word(chunk + 12));
    assert!(entries > 1, "{entries}");
    bytes[chunk + 32 + used / 2] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();
    std::fs::write(dir.join("4242.rplog"), b"").unwrap();

    let again = tmp.join("again");
    let o = rocprof(&tmp)
        .arg("convert")
        .arg(&dir)
        .arg("-d")
        .arg(&again)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(err.contains("damaged at byte"), "{err}");
    assert!(
        err.contains(&format!("lost {entries} records (damaged)")),
        "the chunk's {entries} entries are counted: {err}"
    );
    assert!(err.contains("4242.rplog") && err.contains("empty"), "{err}");
    assert!(err.contains("could not be read"), "{err}");
    assert!(
        !err.contains("suppresses") && !err.contains("never loaded"),
        "no runtime is blamed: {err}"
    );
    // Every HSA call may have been in that chunk: then the file is not written at all.
    let hsa = again.join("run_hsa_api_trace.csv");
    let after = if hsa.exists() { rows(&hsa).len() } else { 0 };
    assert!(
        after < before && before - after <= entries as usize,
        "at most the damaged chunk's records are missing: {before} -> {after}"
    );
}

fn scratch_here(tag: &str) -> PathBuf {
    support::scratch("rel", tag)
}
