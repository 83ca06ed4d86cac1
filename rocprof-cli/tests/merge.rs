//! `rocprof merge` / `rocprof convert -i`: a rocpd database read back gives the run's CSV
//! record for record (correlation ids renumbered consistently: a database keeps one id per
//! call), kept record directories merge with each process kept apart, and inputs of the wrong
//! kind are refused with the reason.
//!
//! Needs the staged simulator: run through `cargo xtask test`.

mod support;
use std::collections::HashMap;
use std::path::Path;
use std::process::Output;
use support::*;

fn rows(path: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.records()
        .map(|x| x.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

fn header(path: &Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.headers().unwrap().iter().map(str::to_owned).collect()
}

fn ok(o: &Output) -> String {
    let err = stderr(o);
    assert!(o.status.success(), "{err}");
    err
}

#[test]
fn a_database_read_back_gives_the_runs_records() {
    let tmp = scratch("merge", "roundtrip");
    let out = tmp.join("run");
    let o = rocprof(&tmp)
        .args(["--sim", "--sys-trace", "-f", "csv,rocpd", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    ok(&o);
    let back = tmp.join("back");
    let o = rocprof(&tmp)
        .arg("merge")
        .arg(out.join("run_results.db"))
        .args(["-f", "csv", "-d"])
        .arg(&back)
        .args(["-o", "back"])
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("merged 1 input, 1 process"), "{err}");
    assert_eq!(
        std::fs::read(out.join("run_agent_info.csv")).unwrap(),
        std::fs::read(back.join("back_agent_info.csv")).unwrap(),
        "agents come back whole"
    );
    // Every file: the same rows, but for the correlation ids, which map one to one.
    let mut ids: HashMap<String, String> = HashMap::new();
    for name in [
        "hip_api_trace",
        "hsa_api_trace",
        "kernel_trace",
        "memory_copy_trace",
        "marker_api_trace",
    ] {
        let a = out.join(format!("run_{name}.csv"));
        let b = back.join(format!("back_{name}.csv"));
        let h = header(&a);
        assert_eq!(h, header(&b), "{name}");
        let corr = h.iter().position(|c| c == "Correlation_Id").unwrap();
        let (ra, rb) = (rows(&a), rows(&b));
        assert_eq!(ra.len(), rb.len(), "{name}");
        assert!(!ra.is_empty(), "{name}");
        for (x, y) in ra.iter().zip(&rb) {
            for (k, (u, v)) in x.iter().zip(y).enumerate() {
                if k != corr {
                    assert_eq!(u, v, "{name}: column {}", h[k]);
                }
            }
            // The marker ranges are numbered on their own; the others are one id space.
            if name != "marker_api_trace" {
                let seen = ids
                    .entry(x[corr].clone())
                    .or_insert_with(|| y[corr].clone());
                assert_eq!(
                    *seen, y[corr],
                    "{name}: correlation {} maps to one id",
                    x[corr]
                );
            }
        }
    }
}

#[test]
fn kept_record_directories_merge_into_one_output_per_format() {
    let tmp = scratch("merge", "dirs");
    // A run that cannot write its outputs keeps its record directory: a directory stands
    // where its kernel trace would go.
    let out = tmp.join("out");
    std::fs::create_dir_all(out.join("run_kernel_trace.csv/x")).unwrap();
    for _ in 0..2 {
        let o = rocprof(&tmp)
            .args(["--sim", "--kernel-trace", "-o", "run", "-d"])
            .arg(&out)
            .arg("--")
            .arg(workload("vector-add"))
            .output()
            .unwrap();
        assert!(stderr(&o).contains("finish the job with"), "{}", stderr(&o));
    }
    let kept = record_dirs(&tmp);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let merged = tmp.join("merged");
    let o = rocprof(&tmp)
        .args(["convert", "-i"])
        .args(&kept)
        .args(["-f", "csv,rocpd", "-d"])
        .arg(&merged)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("merged 2 inputs, 2 processes"), "{err}");
    let csvs: Vec<String> = std::fs::read_dir(&merged)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("_kernel_trace.csv"))
        .collect();
    assert_eq!(csvs.len(), 2, "one kernel trace per process: {csvs:?}");
    for name in &csvs {
        let path = merged.join(name);
        let h = header(&path);
        let k = h.iter().position(|c| c == "Kernel_Name").unwrap();
        for row in rows(&path) {
            assert!(
                !row[k].starts_with("_Z"),
                "demangled as in a run: {}",
                row[k]
            );
        }
    }
    assert!(merged.join("merged_results.db").is_file(), "{err}");
    for d in &kept {
        assert!(d.is_dir(), "a merge only reads its inputs");
    }
}

#[test]
fn inputs_of_the_wrong_kind_are_refused_with_the_reason() {
    let tmp = scratch("merge", "refused");
    let text = tmp.join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let fake = tmp.join("fake.db");
    std::fs::write(&fake, "not sqlite at all, just text that is long enough").unwrap();
    for (input, expect) in [
        (&text, "neither a record directory"),
        (&fake, "cannot read the rocpd database"),
    ] {
        let o = rocprof(&tmp).arg("merge").arg(input).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{}", stderr(&o));
    }
    let o = rocprof(&tmp)
        .args(["convert", "somewhere", "-i"])
        .arg(&text)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("after -i only"), "{}", stderr(&o));
}

/// Two runs' databases, `a/a_results.db` and `b/b_results.db`.
fn two_databases(tmp: &Path) -> [std::path::PathBuf; 2] {
    ["a", "b"].map(|n| {
        let o = rocprof(tmp)
            .args(["--sim", "--kernel-trace", "-f", "rocpd", "-d"])
            .arg(tmp.join(n))
            .args(["-o", n, "--"])
            .arg(workload("vector-add"))
            .output()
            .unwrap();
        ok(&o);
        tmp.join(n).join(format!("{n}_results.db"))
    })
}

#[test]
fn formats_are_one_word_per_option_and_never_swallow_the_inputs() {
    let tmp = scratch("merge", "formats");
    let [a, b] = two_databases(&tmp);
    // Comma-separated and repeated, before the inputs (where `-f` used to take them all).
    let lists: [&[&str]; 2] = [&["-f", "rocpd,csv"], &["-f", "csv", "-f", "rocpd"]];
    for (k, formats) in lists.into_iter().enumerate() {
        let out = tmp.join(format!("out{k}"));
        let o = rocprof(&tmp)
            .arg("merge")
            .arg("-d")
            .arg(&out)
            .args(["-o", "m"])
            .args(formats)
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let err = ok(&o);
        assert!(err.contains("merged 2 inputs, 2 processes"), "{err}");
        assert!(out.join("m_results.db").is_file(), "{formats:?}: {err}");
        let csvs = std::fs::read_dir(&out)
            .unwrap()
            .filter(|e| {
                let e = e.as_ref().unwrap();
                e.file_name()
                    .to_string_lossy()
                    .ends_with("_kernel_trace.csv")
            })
            .count();
        assert_eq!(csvs, 2, "{formats:?}: CSV per process");
    }
    // `convert -i` alike, the formats first.
    let out = tmp.join("conv");
    let o = rocprof(&tmp)
        .args(["convert", "-f", "csv,rocpd", "-d"])
        .arg(&out)
        .arg("-i")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("merged 2 inputs"), "{err}");
    assert!(out.join("merged_results.db").is_file(), "{err}");
    // A space-separated list: the second word is an input, and the error says how to write it.
    let o = rocprof(&tmp)
        .args(["merge", "-f", "csv", "json"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("'json'"), "{}", stderr(&o));
    assert!(stderr(&o).contains("-f csv,json"), "{}", stderr(&o));
    // An unknown format is named.
    let o = rocprof(&tmp)
        .args(["merge", "-f", "csv,xml"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown --output-format 'xml'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn summary_groups_take_one_regex_each_before_the_inputs() {
    let tmp = scratch("merge", "groups");
    let [a, b] = two_databases(&tmp);
    let out = tmp.join("out");
    let o = rocprof(&tmp)
        .arg("merge")
        .args(["--stats", "-S", "--summary-output-file", "sum"])
        .args([
            "--summary-groups",
            "KERNEL_DISPATCH",
            "--summary-groups",
            "MEMORY_COPY",
        ])
        .arg("-d")
        .arg(&out)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(err.contains("merged 2 inputs, 2 processes"), "{err}");
}

#[test]
fn run_mode_takes_formats_comma_separated_or_repeated() {
    let tmp = scratch("merge", "runformats");
    for (k, formats) in [&["-f", "csv,rocpd"][..], &["-f", "csv", "-f", "rocpd"]]
        .into_iter()
        .enumerate()
    {
        let out = tmp.join(format!("r{k}"));
        // A seeded session: an unseeded one may fall in the GRBM start-of-session zero burst
        // (3 % of sessions), whose counter the hygiene rules hold back.
        let o = rocprof(&tmp)
            .env("WSLSIM_SEED", "1")
            .args(["--sim", "--kernel-trace"])
            .args(formats)
            .args(["--pmc", "SQ_WAVES,GRBM_COUNT", "-d"])
            .arg(&out)
            .args(["-o", "r", "--"])
            .arg(workload("vector-add"))
            .output()
            .unwrap();
        ok(&o);
        assert!(out.join("r_results.db").is_file(), "{formats:?}");
        assert!(out.join("r_kernel_trace.csv").is_file(), "{formats:?}");
        let counters = std::fs::read_to_string(out.join("r_counter_collection.csv")).unwrap();
        assert!(
            counters.contains("SQ_WAVES") && counters.contains("GRBM_COUNT"),
            "one --pmc with a comma list is one pass: {counters}"
        );
    }
}

/// The files a merge of `inputs` into CSV writes under `dir` (prefix `m`), by name.
fn merged_csv(tmp: &Path, dir: &str, inputs: &[&Path]) -> (Output, HashMap<String, Vec<u8>>) {
    let out = tmp.join(dir);
    let o = rocprof(tmp)
        .arg("merge")
        .args(["-f", "csv", "-o", "m", "-d"])
        .arg(&out)
        .args(inputs)
        .output()
        .unwrap();
    let files = std::fs::read_dir(&out)
        .map(|d| {
            d.map(|e| e.unwrap())
                .filter(|e| e.path().is_file())
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap())
                })
                .collect()
        })
        .unwrap_or_default();
    (o, files)
}

#[test]
fn databases_read_ahead_come_in_the_order_of_the_inputs_and_a_bad_one_stops_the_merge() {
    let tmp = scratch("merge", "ahead");
    let [a, b] = two_databases(&tmp);
    // The first input's process takes the plain prefix: each order's unsuffixed kernel trace
    // is its first input's, as merged alone.
    for (name, order) in [("ab", [&a, &b]), ("ba", [&b, &a])] {
        let (o, alone) = merged_csv(&tmp, &format!("{name}-alone"), &[order[0]]);
        ok(&o);
        let (o, both) = merged_csv(&tmp, name, &[order[0], order[1]]);
        let err = ok(&o);
        assert!(err.contains("merged 2 inputs, 2 processes"), "{err}");
        assert_eq!(
            both.get("m_kernel_trace.csv"),
            alone.get("m_kernel_trace.csv"),
            "{name}: the first input's trace under the plain name"
        );
        assert_eq!(both.len(), 2 * alone.len(), "{name}: {:?}", both.keys());
    }
    // A database that cannot be read, between two good ones: the merge stops there, naming it.
    let bad = tmp.join("bad.db");
    std::fs::write(&bad, "not sqlite at all, just text that is long enough").unwrap();
    let (o, _) = merged_csv(&tmp, "bad", &[&a, &bad, &b]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("cannot read the rocpd database") && err.contains("bad.db"),
        "{err}"
    );
}
