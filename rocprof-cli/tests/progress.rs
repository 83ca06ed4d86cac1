//! Progress on long work (issues 25 and 28): a bar on stderr for conversion, merging and
//! thread-trace decoding when stderr is a terminal — here a pseudo-terminal, `script(1)` —
//! and nothing when it is not (the tests' normal case) or under `--log-level error`.
//!
//! The bar appears once a task has run for a second; `ROCPROF_PROGRESS_AFTER_MS=0` (the
//! CLI's documented test knob) shows it at once, so short workloads show it too.
//!
//! Needs the staged simulator: run through `cargo xtask test`.

mod support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

/// What a progress bar's line starts with (`rocprof: <verb> [<elapsed>] …`).
const MERGING: &str = "rocprof: merging [";
const CONVERTING: &str = "rocprof: converting [";
const DECODING: &str = "rocprof: decoding thread traces [";

fn ok(o: &Output) -> String {
    let err = stderr(o);
    assert!(o.status.success(), "{err}");
    err
}

/// A run's database, `<n>/<n>_results.db`.
fn database(tmp: &Path, n: &str) -> PathBuf {
    let o = rocprof(tmp)
        .args([
            "--sim",
            "--kernel-trace",
            "--hip-trace",
            "-f",
            "rocpd",
            "-d",
        ])
        .arg(tmp.join(n))
        .args(["-o", n, "--"])
        .arg(workload("vector-add"))
        .output()
        .unwrap();
    ok(&o);
    tmp.join(n).join(format!("{n}_results.db"))
}

/// `rocprof ARGS` run on a pseudo-terminal by `script -q -e -c … /dev/null` (which copies
/// what the terminal shows to its own stdout), with the bar shown at once unless `after_ms`
/// says otherwise; what the terminal showed.
fn on_terminal(tmp: &Path, args: &[&std::ffi::OsStr], after_ms: &str) -> String {
    let rocprof = rocprof(tmp);
    let mut line = shell_word(rocprof.get_program());
    for a in args {
        line.push(' ');
        line.push_str(&shell_word(a));
    }
    let mut c = Command::new("script");
    for v in STEERING {
        c.env_remove(v);
    }
    c.env("TMPDIR", tmp)
        .env("ROCPROF_PROGRESS_AFTER_MS", after_ms)
        .env("TERM", "xterm")
        .args(["-q", "-e", "-c"])
        .arg(&line)
        .arg("/dev/null")
        .stdin(std::process::Stdio::null());
    let o = c.output().expect("script(1) (util-linux) runs");
    assert!(
        o.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn shell_word(s: &std::ffi::OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"))
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let tmp = scratch("progress", "pipe");
    let [a, b] = [database(&tmp, "a"), database(&tmp, "b")];
    let o = rocprof(&tmp)
        .env("ROCPROF_PROGRESS_AFTER_MS", "0")
        .args(["merge", "-f", "csv,rocpd", "-d"])
        .arg(tmp.join("m"))
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("merged 2 inputs"), "{err}");
    for text in [MERGING, "\r", "\x1b["] {
        assert!(!err.contains(text), "{text:?} in {err:?}");
    }
    // A run's conversion and its thread-trace decoding alike.
    let o = rocprof(&tmp)
        .env("ROCPROF_PROGRESS_AFTER_MS", "0")
        .args(["--sim", "--kernel-trace", "--att", "-d"])
        .arg(tmp.join("run"))
        .args(["-o", "run", "--"])
        .arg(workload("vector-add"))
        .output()
        .unwrap();
    let err = ok(&o);
    for text in [CONVERTING, DECODING, "\r", "\x1b["] {
        assert!(!err.contains(text), "{text:?} in {err:?}");
    }
}

#[test]
fn a_terminal_shows_the_progress_of_merging_converting_and_decoding() {
    let tmp = scratch("progress", "pty");
    let [a, b] = [database(&tmp, "a"), database(&tmp, "b")];
    let out = tmp.join("m");
    let shown = on_terminal(
        &tmp,
        &[
            os("merge"),
            os("-f"),
            os("csv,rocpd"),
            os("-d"),
            out.as_os_str(),
            a.as_os_str(),
            b.as_os_str(),
        ],
        "0",
    );
    assert!(shown.contains(MERGING), "{shown:?}");
    assert!(shown.contains("/2"), "steps are inputs: {shown:?}");
    assert!(shown.contains("merged 2 inputs"), "{shown:?}");
    assert!(out.join("merged_results.db").is_file());

    let run = tmp.join("run");
    let workload = workload("vector-add");
    let shown = on_terminal(
        &tmp,
        &[
            os("--sim"),
            os("--kernel-trace"),
            os("--att"),
            os("-d"),
            run.as_os_str(),
            os("-o"),
            os("run"),
            os("--"),
            workload.as_os_str(),
        ],
        "0",
    );
    assert!(shown.contains(CONVERTING), "{shown:?}");
    assert!(shown.contains(DECODING), "{shown:?}");
    assert!(run.join("run_kernel_trace.csv").is_file(), "{shown:?}");
}

#[test]
fn a_quiet_log_level_or_a_short_task_shows_no_progress_on_a_terminal() {
    let tmp = scratch("progress", "quiet");
    let a = database(&tmp, "a");
    let out = tmp.join("m");
    let merge = |extra: &[&std::ffi::OsStr], after_ms: &str| {
        let mut args = vec![os("merge")];
        args.extend_from_slice(extra);
        args.extend([
            os("-f"),
            os("csv"),
            os("-d"),
            out.as_os_str(),
            a.as_os_str(),
        ]);
        on_terminal(&tmp, &args, after_ms)
    };
    let shown = merge(&[os("--log-level"), os("error")], "0");
    assert!(!shown.contains(MERGING), "{shown:?}");
    assert!(shown.contains("merged 1 input"), "{shown:?}");
    // The default delay: a merge of one small database ends well within it.
    let shown = merge(&[], "60000");
    assert!(!shown.contains(MERGING), "{shown:?}");
}
