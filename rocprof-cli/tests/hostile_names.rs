//! Output names built from the application's arguments (issue 23, cases 1-3), end to end on the
//! simulated stack: a placeholder of `-o`/`-d` is substituted once, its value inserted as
//! written (never scanned for placeholders again), and a name a value makes is checked before
//! the application starts.
//!
//! Needs the staged simulator and workloads: `cargo xtask build` first.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{record_dirs, rocprof, scratch, stderr, workload};

/// `rocprof --sim --kernel-trace -d <tmp>/<dir> -o <o> -- init-then-exit <args…>`, run in `tmp`.
fn profile(tmp: &Path, dir: &str, o: &str, args: &[&str]) -> Output {
    rocprof(tmp)
        .current_dir(tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(tmp.join(dir))
        .args(["-o", o, "--"])
        .arg(workload("init-then-exit"))
        .args(args)
        .output()
        .unwrap()
}

/// Every file under `dir` (relative to it), sorted; empty if it does not exist.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(at) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_owned());
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

/// The run exited 0 after the application ran, and wrote only `<dir>/<name>_agent_info.csv`.
fn wrote_only(o: &Output, dir: &Path, name: &str) {
    assert!(o.status.success(), "{}", stderr(o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("main returns"),
        "the application did not run: {}",
        stderr(o)
    );
    assert_eq!(
        files_under(dir),
        [PathBuf::from(format!("{name}_agent_info.csv"))],
        "{}",
        stderr(o)
    );
}

/// The run was refused with exit 2 and `reason` before the application started.
fn refused(o: &Output, tmp: &Path, reason: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(reason), "{}", stderr(o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("hsa_init"),
        "the application started: {}",
        stderr(o)
    );
    assert!(record_dirs(tmp).is_empty(), "a record directory was left");
}

#[test]
fn an_argument_made_of_its_own_placeholder_is_inserted_once() {
    let tmp = scratch("hostile", "case1");
    // Expanded again over its own output, this grew ~50x per pass until the allocation failed.
    let fifty = "%arg1%".repeat(50);
    let o = profile(&tmp, "out", "%arg1%", &[&fifty]);
    refused(&o, &tmp, "more than the 255 a file name may have");
    assert!(
        stderr(&o).contains(&format!("'{fifty}_4194304_memory_copy_trace.csv' would be")),
        "the name is the argument as written: {}",
        stderr(&o)
    );
    assert!(!tmp.join("out").exists());
    // Short enough to fit once, and written as given (3^8 copies before).
    let three = "%arg1%".repeat(3);
    let o = profile(&tmp, "out", "%arg1%", &[&three]);
    wrote_only(&o, &tmp.join("out"), &three);
}

#[test]
fn placeholder_text_in_an_argument_is_not_interpreted() {
    let tmp = scratch("hostile", "case2");
    for (arg, dir) in [("%cwd%", "cwd"), ("%env{HOME}%", "home"), ("{pid}", "pid")] {
        let o = profile(&tmp, dir, "r%arg1%", &[arg]);
        wrote_only(&o, &tmp.join(dir), &format!("r{arg}"));
    }
    // In -d as well: the directory is named by the argument as written.
    let o = rocprof(&tmp)
        .current_dir(&tmp)
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(tmp.join("in-d/%arg1%"))
        .args(["-o", "run", "--"])
        .arg(workload("init-then-exit"))
        .arg("%hostname%")
        .output()
        .unwrap();
    wrote_only(&o, &tmp.join("in-d"), "%hostname%/run");
}

#[test]
fn a_placeholder_value_dot_or_empty_cannot_leave_or_rename_the_directory() {
    let tmp = scratch("hostile", "case3");
    std::fs::create_dir(tmp.join("P")).unwrap();
    // `.` made `-d P/outdir -o %arg1%` write P/outdir_agent_info.csv, outside -d. Arguments
    // are cleaned as rocprofv3 cleans them (every `/` an `_`, leading `.` then `_` removed),
    // so `/.` gives `.` and `/..` gives `..`.
    let o = profile(&tmp, "P/outdir", "%arg1%", &["/."]);
    refused(&o, &tmp, "-o '%arg1%' expands to '.'");
    assert!(
        stderr(&o).contains("a placeholder's value makes the path component '.'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(files_under(&tmp.join("P")), Vec::<PathBuf>::new());
    for (o_arg, arg, reason) in [
        (
            "%arg1%",
            "",
            "a placeholder's value makes an empty path component",
        ),
        ("%arg1%", ".", "makes an empty path component"),
        ("a/%arg1%/b", "", "makes an empty path component"),
        ("a/%arg1%", "/..", "makes the path component '..'"),
        ("%arg1%", "/..", "takes out of the output directory"),
        ("%arg1%/%arg1%", "/..", "takes out of the output directory"),
    ] {
        let o = profile(&tmp, "P/outdir", o_arg, &[arg]);
        refused(&o, &tmp, reason);
        assert_eq!(files_under(&tmp.join("P")), Vec::<PathBuf>::new(), "{arg}");
    }
    // A dot inside a name is a name.
    let o = profile(&tmp, "P/outdir", "run%arg1%", &["/."]);
    wrote_only(&o, &tmp.join("P/outdir"), "run.");
}
