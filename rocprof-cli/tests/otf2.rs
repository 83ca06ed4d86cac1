//! `-f otf2` end to end on the simulated Radeon 890M: the reference workload's archive
//! (`run_results.otf2`, `.def`, `run_results/`) read back by the OTF2 library's own reader,
//! `otf2-print` (Debian's `otf2-tools`, which `.ci/run` installs with the library), and
//! compared with the CSV files of the same run; `rocprof merge` into an archive; a second run
//! replacing the archive of the first; and, with the library absent (the loader pointed at a
//! file that does not exist through `ROCPROF_OTF2_LIBRARY`), the refusal before anything runs,
//! saying what to install. Where the library or the reader is missing, the reading tests say so
//! on stderr and check nothing else.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use support::{Run, reference_workload, rocprof, scratch, sim_run, stderr};

/// Whether the library and `otf2-print` are installed; says why not on stderr.
fn tools(test: &str) -> bool {
    let lib = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .any(|d| Path::new(d).join("libopen-trace-format2.so.10").exists());
    let reader = Command::new("otf2-print").arg("--help").output().is_ok();
    if !(lib && reader) {
        eprintln!(
            "{test}: checks nothing: the OTF2 library or otf2-print is not installed \
             (apt-get install libopen-trace-format2-10 otf2-tools)"
        );
    }
    lib && reader
}

/// `otf2-print` of an archive's anchor file.
fn print(anchor: &Path, args: &[&str]) -> String {
    let out = Command::new("otf2-print")
        .args(args)
        .arg(anchor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "otf2-print {}: {}",
        anchor.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One region read back: its events' location, enter and leave times, name, category.
#[derive(Debug, Clone)]
struct Region {
    location: u64,
    enter: u64,
    leave: u64,
    name: String,
    category: String,
}

/// The regions of `otf2-print`'s event listing, each enter matched with its leave on its
/// location (innermost first, as the reader nests them); fails on an unmatched event.
fn regions(text: &str) -> Vec<Region> {
    let lines: Vec<&str> = text.lines().collect();
    let mut open: BTreeMap<u64, Vec<Region>> = BTreeMap::new();
    let mut done = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let enter = l.starts_with("ENTER ");
        if !(enter || l.starts_with("LEAVE ")) {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let location: u64 = w[1].parse().unwrap();
        let ts: u64 = w[2].parse().unwrap();
        let quoted = l.split_once("Region: \"").map_or("", |(_, r)| r);
        let name = quoted.rsplit_once("\" <").map_or(quoted, |(r, _)| r);
        let stack = open.entry(location).or_default();
        if enter {
            let attrs = lines.get(i + 1).map_or("", |n| n.trim());
            let category = attrs
                .strip_prefix("ADDITIONAL ATTRIBUTES: (\"category\"")
                .and_then(|r| r.split('"').nth(1))
                .unwrap_or("")
                .to_owned();
            stack.push(Region {
                location,
                enter: ts,
                leave: 0,
                name: name.to_owned(),
                category,
            });
        } else {
            let mut r = stack
                .pop()
                .unwrap_or_else(|| panic!("a leave without enter: {l}"));
            assert_eq!(
                r.name, name,
                "leave of another region than the last entered: {l}"
            );
            assert!(ts >= r.enter, "{l}");
            r.leave = ts;
            done.push(r);
        }
    }
    assert!(
        open.values().all(Vec::is_empty),
        "regions left open: {open:?}"
    );
    done
}

fn names_in(regions: &[Region], category: &str) -> Vec<String> {
    let mut v: Vec<String> = regions
        .iter()
        .filter(|r| r.category == category)
        .map(|r| r.name.clone())
        .collect();
    v.sort();
    v
}

fn column(run: &Run, file: &str, col: &str) -> Vec<String> {
    let mut v: Vec<String> = run.rows(file).into_iter().map(|r| r[col].clone()).collect();
    v.sort();
    v
}

fn traced() -> &'static Run {
    static RUN: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        sim_run(
            "otf2",
            "sys-trace",
            &["--sys-trace", "-f", "csv,otf2"],
            &reference_workload(),
            &[],
            &[],
        )
    })
}

#[test]
fn the_reference_run_reads_back_with_its_hip_calls_kernels_and_copies() {
    if !tools("the_reference_run_reads_back_with_its_hip_calls_kernels_and_copies") {
        return;
    }
    let run = traced();
    assert!(run.out.status.success(), "{}", run.stderr());
    let listing = run.listing();
    for f in ["run_results.otf2", "run_results.def", "run_results"] {
        assert!(listing.contains(&f.to_owned()), "no {f} in {listing:?}");
    }
    let all = regions(&print(&run.file("results.otf2"), &[]));
    let hip = names_in(&all, "hip_api");
    assert_eq!(hip.len(), 52, "HIP regions");
    assert_eq!(hip, column(run, "hip_api_trace", "Function"));
    let kernels = names_in(&all, "kernel_dispatch");
    assert_eq!(kernels.len(), 8, "kernels");
    assert_eq!(kernels, column(run, "kernel_trace", "Kernel_Name"));
    let copies = names_in(&all, "memory_copy");
    assert_eq!(copies.len(), 16, "copies");
    assert_eq!(copies, column(run, "memory_copy_trace", "Direction"));
    assert_eq!(
        names_in(&all, "hsa_api"),
        column(run, "hsa_api_trace", "Function")
    );
    assert_eq!(
        names_in(&all, "marker_api"),
        column(run, "marker_api_trace", "Function"),
        "the ROCTx ranges, by their messages"
    );
    assert_eq!(
        names_in(&all, "memory_allocation").len(),
        run.rows("memory_allocation_trace").len()
    );
    // The kernels' times are the CSV's.
    let mut csv_times: Vec<(u64, u64)> = run
        .rows("kernel_trace")
        .iter()
        .map(|r| {
            (
                r["Start_Timestamp"].parse().unwrap(),
                r["End_Timestamp"].parse().unwrap(),
            )
        })
        .collect();
    csv_times.sort();
    let mut otf2_times: Vec<(u64, u64)> = all
        .iter()
        .filter(|r| r.category == "kernel_dispatch")
        .map(|r| (r.enter, r.leave))
        .collect();
    otf2_times.sort();
    assert_eq!(otf2_times, csv_times);
    // Locations as upstream names them: the thread, copies per destination, the queue.
    let defs = print(&run.file("results.otf2"), &["-G"]);
    let locations: Vec<&str> = defs
        .lines()
        .filter(|l| l.starts_with("LOCATION "))
        .collect();
    let tid = &run.rows("kernel_trace")[0]["Thread_Id"];
    for want in [
        format!("\"Thread {tid}\""),
        format!("\"Thread {tid}, Copy to GPU Agent-1\""),
        format!("\"Thread {tid}, Copy to CPU Agent-0\""),
        format!("\"Thread {tid}, Compute on GPU Agent-1, Queue 0\""),
    ] {
        assert!(
            locations.iter().any(|l| l.contains(&want)),
            "no {want} in {locations:#?}"
        );
    }
    let queue = locations.iter().find(|l| l.contains(", Queue 0")).unwrap();
    assert!(queue.contains("# Events: 16"), "{queue}");
    assert!(
        defs.contains("Name: \"gfx1150\""),
        "the GPU's location group"
    );
    let on_queue: Vec<&Region> = all
        .iter()
        .filter(|r| r.category == "kernel_dispatch")
        .collect();
    assert!(on_queue.iter().all(|r| r.location == on_queue[0].location));
}

#[test]
fn a_merge_writes_an_archive_and_a_second_run_replaces_the_first() {
    if !tools("a_merge_writes_an_archive_and_a_second_run_replaces_the_first") {
        return;
    }
    let tmp = scratch("otf2", "merge");
    let out = tmp.join("out");
    for round in 0..2 {
        // The second with --minimum-output-data: an archive is kept whole (its anchor and
        // definition files are small whatever it holds).
        let minimum: &[&str] = if round == 1 {
            &["--minimum-output-data", "1"]
        } else {
            &[]
        };
        let o = rocprof(&tmp)
            .args([
                "--sim",
                "--kernel-trace",
                "--hip-trace",
                "-f",
                "otf2,rocpd",
                "-d",
            ])
            .arg(&out)
            .args(minimum)
            .args(["-o", "run", "--"])
            .arg(reference_workload())
            .output()
            .unwrap();
        assert!(o.status.success(), "round {round}: {}", stderr(&o));
    }
    // The second run's archive in place of the first: one location file set, no leftovers.
    assert!(out.join("run_results.otf2").is_file() && out.join("run_results.def").is_file());
    let mut inside: Vec<String> = std::fs::read_dir(out.join("run_results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    assert_eq!(
        inside,
        ["1.def", "1.evt", "2.def", "2.evt"],
        "the thread and the queue"
    );
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with('.')),
        "no staging left: {names:?}"
    );
    let again = regions(&print(&out.join("run_results.otf2"), &[]));
    assert_eq!(names_in(&again, "kernel_dispatch").len(), 8);

    let merged = tmp.join("merged");
    let o = rocprof(&tmp)
        .arg("merge")
        .arg(out.join("run_results.db"))
        .arg(out.join("run_results.db"))
        .args(["-f", "otf2", "-d"])
        .arg(&merged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let all = regions(&print(&merged.join("merged_results.otf2"), &[]));
    assert_eq!(
        names_in(&all, "hip_api").len(),
        2 * 52,
        "both inputs' HIP calls"
    );
    assert_eq!(names_in(&all, "kernel_dispatch").len(), 2 * 8);
    let defs = print(&merged.join("merged_results.otf2"), &["-G"]);
    assert_eq!(
        defs.lines()
            .filter(|l| l.starts_with("SYSTEM_TREE_NODE "))
            .count(),
        2,
        "a node per process"
    );
}

#[test]
fn without_the_library_otf2_is_refused_before_the_run_with_how_to_install_it() {
    let tmp = scratch("otf2", "absent");
    let out = tmp.join("out");
    let o = rocprof(&tmp)
        .env(
            "ROCPROF_OTF2_LIBRARY",
            tmp.join("libopen-trace-format2.so.10"),
        )
        .args(["--sim", "--kernel-trace", "-f", "csv,otf2", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(reference_workload())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("-f otf2"), "{err}");
    assert!(
        err.contains("apt-get install libopen-trace-format2-10"),
        "{err}"
    );
    assert!(
        !err.contains("iterations verified")
            && !String::from_utf8_lossy(&o.stdout).contains("verified"),
        "the application did not run: {err}"
    );
    assert!(
        !out.join("run_kernel_trace.csv").exists(),
        "nothing was written"
    );
}
