//! Counter requests that used to go wrong quietly, end to end on the simulated Radeon 890M:
//! a counter named several times (one row per mention), an empty `--pmc` (the counters
//! silently dropped) and a kernel filter that selects no dispatch (no counter file, no word).
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or `cargo xtask
//! build` first).

mod support;

use std::path::Path;
use support::*;

const AXPB: &str = "axpb(float const*, float*, unsigned long)";

/// `rocprof --sim <options> -d <scratch>/out -o run -- <app>` with seed 5 and none of the
/// caller's counter settings.
fn profile(tag: &str, options: &[&str], app: &Path) -> Run {
    sim_run(
        "hostile-counters",
        tag,
        options,
        app,
        &COUNTER_STEERING,
        &[("WSLSIM_SEED", "5")],
    )
}

/// (dispatch id, counter) of every counter_collection.csv row.
fn rows(r: &Run) -> Vec<(u64, String)> {
    r.rows("counter_collection")
        .iter()
        .map(|row| {
            (
                row["Dispatch_Id"].parse().unwrap(),
                row["Counter_Name"].clone(),
            )
        })
        .collect()
}

/// The lines of standard error that start with `prefix`.
fn lines(r: &Run, prefix: &str) -> Vec<String> {
    r.stderr()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// `--pmc SQ_WAVES SQ_WAVES SQ_WAVES`: one SQ_WAVES row per dispatch (not three), and a note
/// that the name was merged.
#[test]
fn a_counter_named_three_times_is_collected_once_with_a_note() {
    let r = profile(
        "three",
        &["--pmc", "SQ_WAVES", "SQ_WAVES", "SQ_WAVES"],
        &reference_workload(),
    )
    .succeeded();
    let got = rows(&r);
    let want: Vec<(u64, String)> = (1..=8).map(|d| (d, "SQ_WAVES".to_owned())).collect();
    assert_eq!(got, want);
    assert_eq!(
        lines(&r, "rocprof: note: SQ_WAVES"),
        [
            "rocprof: note: SQ_WAVES is named 3 times in the counter group: it is collected once \
          (a repeated counter is merged into its first mention)"
        ],
        "{}",
        r.stderr()
    );
    // The hygiene report has one line per dispatch too.
    assert_eq!(r.rows("counter_hygiene").len(), 8);
}

/// 5,000 mentions of SQ_WAVES: still one row per dispatch (not 40,000 rows), and several
/// repeated names keep the order they were first given.
#[test]
fn thousands_of_mentions_and_mixed_repeats_keep_one_row_per_counter() {
    let mut options = vec!["--pmc"];
    options.extend(std::iter::repeat_n("SQ_WAVES", 5_000));
    let r = profile("many", &options, &reference_workload()).succeeded();
    assert_eq!(rows(&r).len(), 8, "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("rocprof: note: SQ_WAVES is named 5000 times in the counter group"),
        "{}",
        r.stderr()
    );

    let r = profile(
        "mixed",
        &[
            "--pmc",
            "GPU_UTIL,SQ_WAVES",
            "GPU_UTIL",
            "GRBM_COUNT",
            "SQ_WAVES",
            "GPU_UTIL",
        ],
        &reference_workload(),
    )
    .succeeded();
    let first: Vec<String> = rows(&r)
        .into_iter()
        .filter(|(d, _)| *d == 1)
        .map(|(_, c)| c)
        .collect();
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(sorted, ["GPU_UTIL", "GRBM_COUNT", "SQ_WAVES"], "{first:?}");
    assert_eq!(rows(&r).len(), 24);
    assert!(
        r.stderr().contains(
            "rocprof: note: 2 counters are named more than once in the counter group \
             (GPU_UTIL 3 times, SQ_WAVES 2 times): each is collected once"
        ),
        "{}",
        r.stderr()
    );
}

/// The note comes before the run: it is there even when the application cannot be started,
/// and ahead of the refusal to run it. A `-i` job's repeats are merged too, naming its pass.
#[test]
fn the_merge_is_said_before_the_application_runs() {
    let tmp = scratch("hostile-counters", "before");
    let o = rocprof(&tmp)
        .args(["--sim", "--pmc", "SQ_WAVES", "SQ_WAVES", "--"])
        .arg(tmp.join("no-such-app"))
        .output()
        .unwrap();
    let err = stderr(&o);
    let note = err.find("rocprof: note: SQ_WAVES is named 2 times");
    let refusal = err.find("cannot run");
    assert!(
        note.is_some() && refusal.is_some() && note < refusal,
        "{err}"
    );

    let input = tmp.join("jobs.json");
    std::fs::write(
        &input,
        r#"{"jobs": [{"pmc": ["SQ_WAVES", "SQ_WAVES"]}, {"pmc": ["GRBM_COUNT"]}]}"#,
    )
    .unwrap();
    let r = profile(
        "input",
        &["-i", input.to_str().unwrap()],
        &reference_workload(),
    )
    .succeeded();
    assert!(
        r.stderr()
            .contains("rocprof: note: pass 1: SQ_WAVES is named 2 times in the counter group"),
        "{}",
        r.stderr()
    );
    assert_eq!(r.rows_in("pass_1", "counter_collection").len(), 8);
}

/// `--pmc ''` (or only separators) is refused before anything runs, with what to do, instead of
/// running the application without counters; so is a job's empty counter list.
#[test]
fn an_empty_pmc_is_refused_with_what_to_do() {
    let tmp = scratch("hostile-counters", "empty");
    let ran = tmp.join("ran");
    for args in [
        vec!["--pmc", ""],
        vec!["--pmc", " , "],
        vec!["--pmc", "SQ_WAVES", "--pmc", ""],
        vec!["--kernel-trace", "--pmc", ""],
    ] {
        let o = rocprof(&tmp)
            .arg("--sim")
            .args(&args)
            .args(["--", "/bin/sh", "-c", "echo > \"$0\""])
            .arg(&ran)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("names no counter: give one or more counter names")
                && err.contains("`rocprof avail list`")
                && err.contains("or leave it out to run without counters"),
            "{args:?}: {err}"
        );
        assert!(!ran.exists(), "{args:?}: the application ran");
        assert!(record_dirs(&tmp).is_empty());
    }
    let o = rocprof(&tmp)
        .args(["--sim", "--pmc", ""])
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("rocprof: error: --pmc '' names no counter"),
        "{}",
        stderr(&o)
    );

    for (name, text, field) in [
        ("pmc.json", r#"{"jobs": [{"pmc": ""}]}"#, "pmc"),
        (
            "groups.json",
            r#"{"jobs": [{"pmc_groups": [["SQ_WAVES"], []]}]}"#,
            "pmc_groups[1]",
        ),
    ] {
        let input = tmp.join(name);
        std::fs::write(&input, text).unwrap();
        let o = rocprof(&tmp)
            .args(["--sim", "-i"])
            .arg(&input)
            .args(["--", "/bin/sh", "-c", "echo > \"$0\""])
            .arg(&ran)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "{}: job 1: {field} names no counter",
                input.display()
            )),
            "{name}: {err}"
        );
        assert!(!ran.exists(), "{name}: the application ran");
    }
}

/// A kernel include filter that matches no kernel (here a pattern that could backtrack
/// without end in a backtracking engine) is said after the run, with the kernels that ran.
#[test]
fn an_include_filter_that_matches_nothing_is_said_with_the_kernels_that_ran() {
    let r = profile(
        "include",
        &["--pmc", "SQ_WAVES", "--kernel-include-regex", "(a+)+$"],
        &reference_workload(),
    )
    .succeeded();
    assert!(!r.file("counter_collection.csv").exists());
    assert_eq!(
        lines(&r, "rocprof: warning: the kernel"),
        [format!(
            "rocprof: warning: the kernel include filter '(a+)+$' matched none of the 8 \
             dispatches that ran, so no counter was collected and no counter values are \
             written; the kernels that ran (the filters are searched in these names): {AXPB} \
             (8 dispatches)"
        )],
        "{}",
        r.stderr()
    );
    // A filter that matches says nothing of the kind.
    let r = profile(
        "include-match",
        &["--pmc", "SQ_WAVES", "--kernel-include-regex", "^axpb"],
        &reference_workload(),
    )
    .succeeded();
    assert_eq!(rows(&r).len(), 8);
    assert!(
        lines(&r, "rocprof: warning: the kernel").is_empty(),
        "{}",
        r.stderr()
    );
}

/// An exclude filter that excludes every dispatch is said as such; with an include filter too,
/// which one left nothing.
#[test]
fn an_exclude_filter_that_excludes_everything_is_said() {
    let r = profile(
        "exclude",
        &["--pmc", "SQ_WAVES", "--kernel-exclude-regex", "axpb"],
        &reference_workload(),
    )
    .succeeded();
    assert!(!r.file("counter_collection.csv").exists());
    let said = lines(&r, "rocprof: warning: the kernel");
    assert_eq!(said.len(), 1, "{}", r.stderr());
    assert!(
        said[0].starts_with(
            "rocprof: warning: the kernel exclude filter 'axpb' excluded every one of the 8 \
             dispatches that ran, so no counter was collected"
        ) && said[0].ends_with(&format!("{AXPB} (8 dispatches)")),
        "{}",
        said[0]
    );

    let r = profile(
        "both",
        &[
            "--pmc",
            "SQ_WAVES",
            "--kernel-include-regex",
            "axpb",
            "--kernel-exclude-regex",
            "float",
        ],
        &reference_workload(),
    )
    .succeeded();
    let said = lines(&r, "rocprof: warning: the kernel");
    assert_eq!(said.len(), 1, "{}", r.stderr());
    assert!(
        said[0].starts_with(
            "rocprof: warning: the kernel include filter 'axpb' matched 8 of the 8 dispatches \
             that ran and the exclude filter 'float' excluded every one of them"
        ),
        "{}",
        said[0]
    );

    // The blit kernel of d2d-copy excluded: the runtime's kernel is named as it ran.
    let r = profile(
        "blit",
        &["--pmc", "SQ_WAVES", "--kernel-exclude-regex", "copyBuffer"],
        &workload("d2d-copy"),
    )
    .succeeded();
    let said = lines(&r, "rocprof: warning: the kernel");
    assert_eq!(said.len(), 1, "{}", r.stderr());
    assert!(
        said[0].ends_with("__amd_rocclr_copyBuffer (1 dispatch)"),
        "{}",
        said[0]
    );
}
