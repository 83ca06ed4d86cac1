//! The summary, output and Perfetto options end to end on the simulated Radeon 890M:
//! `-D/--summary-per-domain`, `--summary-groups`, `--summary-output-file`, `-u/--summary-units`,
//! `--output-config`, `--minimum-output-data`, `--group-by-queue`, `--perfetto-buffer-size`
//! with both fill policies, `--perfetto-backend system` (refused) and `-E/--extra-counters`.
//!
//! Needs the staged simulator and workloads: `cargo xtask build` first.

mod support;

use prost::Message as _;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use support::{Run, record_dirs, rocprof, scratch, stderr, workload};
use trace_export::perfetto::proto::{Data, TYPE_SLICE_BEGIN, Trace};

/// `rocprof --sim <options> -d <scratch>/out -o run -- reference-workload`.
fn profile(tag: &str, options: &[&str]) -> Run {
    profile_env(tag, options, &[])
}

fn profile_env(tag: &str, options: &[&str], env: &[(&str, &str)]) -> Run {
    let tmp = scratch("options-output", tag);
    let dir = tmp.join("out");
    let mut c = rocprof(&tmp);
    c.env_remove("WSLSIM_SEED")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(&dir)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .envs(env.iter().copied());
    Run {
        out: c.output().unwrap(),
        tmp,
        dir,
    }
}

/// The `ROCPROFV3 … SUMMARY:` titles of a text, in order, trimmed.
fn titles(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ROCPROFV3 ") && l.ends_with("SUMMARY:"))
        .map(str::to_owned)
        .collect()
}

/// The cells of a table line (`| a | b |` → `["a", "b"]`).
fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_owned())
        .collect()
}

/// The rows (cells) of the table titled `title` in `text`.
fn table(text: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| l.trim() != title).skip(1);
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        let l = l.trim();
        if l.is_empty() && rows.is_empty() {
            continue;
        }
        if !l.starts_with('|') {
            break;
        }
        rows.push(cells(l));
    }
    rows
}

#[test]
fn per_domain_tables_are_titled_by_domain_and_need_no_s() {
    let r = profile("per-domain", &["--sys-trace", "-D"]).succeeded();
    let t = titles(&r.stderr());
    for d in ["HSA_API", "HIP_API", "KERNEL_DISPATCH", "MEMORY_COPY"] {
        assert!(
            t.contains(&format!("ROCPROFV3 {d} SUMMARY:")),
            "{d} missing: {t:?}"
        );
    }
    // Upstream's domain order, and -D without -S prints no whole-run table.
    let pos = |d: &str| {
        t.iter()
            .position(|x| x.contains(&format!(" {d} ")))
            .unwrap()
    };
    assert!(pos("HSA_API") < pos("HIP_API") && pos("HIP_API") < pos("KERNEL_DISPATCH"));
    assert!(!t.contains(&"ROCPROFV3 SUMMARY:".to_owned()), "{t:?}");
    // Every row of a domain's table names that domain; on the console lines are indented.
    let text = r.stderr();
    let kernels = table(&text, "ROCPROFV3 KERNEL_DISPATCH SUMMARY:");
    assert_eq!(kernels[0][0], "NAME");
    assert!(kernels.len() > 2, "{kernels:?}");
    for row in &kernels[2..] {
        assert_eq!(row[1], "KERNEL_DISPATCH", "{row:?}");
    }
    assert!(text.contains("\n    ROCPROFV3 KERNEL_DISPATCH SUMMARY:"));
    // The kernel table's calls add up to the dispatches traced.
    let calls: u64 = kernels[2..]
        .iter()
        .map(|r| r[2].parse::<u64>().unwrap())
        .sum();
    assert_eq!(calls as usize, r.rows("kernel_trace").len());
}

#[test]
fn summary_groups_join_the_domains_each_regex_matches_in_full() {
    let r = profile(
        "groups",
        &[
            "--sys-trace",
            "--summary-groups",
            "KERNEL_DISPATCH|MEMORY_COPY",
            "HIP_.*",
            "KERNEL",
        ],
    )
    .succeeded();
    let t = titles(&r.stderr());
    assert_eq!(
        t,
        [
            "ROCPROFV3 KERNEL_DISPATCH + MEMORY_COPY SUMMARY:",
            "ROCPROFV3 HIP_API SUMMARY:",
        ],
        "{}",
        r.stderr()
    );
    // `KERNEL` matches no domain in full: said, and no table.
    assert!(
        r.stderr().contains("\"KERNEL\" matched no domain"),
        "{}",
        r.stderr()
    );
    let joined = table(
        &r.stderr(),
        "ROCPROFV3 KERNEL_DISPATCH + MEMORY_COPY SUMMARY:",
    );
    let domains: BTreeSet<&str> = joined[2..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(domains, BTreeSet::from(["KERNEL_DISPATCH", "MEMORY_COPY"]));
}

#[test]
fn a_bad_group_regex_is_refused_before_the_launch() {
    let r = profile(
        "bad-group",
        &["--sys-trace", "--summary-groups", "(unclosed"],
    );
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr().contains("--summary-groups") && r.stderr().contains("(unclosed"),
        "{}",
        r.stderr()
    );
    assert!(record_dirs(&r.tmp).is_empty(), "nothing was run");
    assert!(!r.dir.exists());
    // -D without tracing, as rocprofv3 refuses it.
    let r = profile("d-alone", &["-D"]);
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("-D/--summary-per-domain needs a tracing option")
    );
}

#[test]
fn summary_output_file_goes_to_stdout_or_a_file_beside_the_outputs() {
    let r = profile(
        "to-stdout",
        &["--kernel-trace", "-S", "--summary-output-file", "STDOUT"],
    )
    .succeeded();
    assert_eq!(titles(&r.stdout()), ["ROCPROFV3 SUMMARY:"]);
    assert!(r.stdout().contains("\n    ROCPROFV3 SUMMARY:"));
    assert!(titles(&r.stderr()).is_empty(), "{}", r.stderr());

    let r = profile(
        "to-file",
        &[
            "--kernel-trace",
            "-S",
            "-D",
            "--summary-output-file",
            "summary",
        ],
    )
    .succeeded();
    let path = r.file("summary.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: {:?}", path.display(), r.listing()));
    assert_eq!(
        titles(&text),
        ["ROCPROFV3 KERNEL_DISPATCH SUMMARY:", "ROCPROFV3 SUMMARY:"]
    );
    assert!(
        text.starts_with("\nROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n|"),
        "unindented in a file"
    );
    assert!(titles(&r.stderr()).is_empty(), "{}", r.stderr());
    assert!(!r.stdout().contains("ROCPROFV3"));

    // The columns are upstream's (docs sample), when the shared data is there.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/upstream-docs-samples/summary.txt");
    match std::fs::read_to_string(&sample) {
        Ok(up) => {
            let theirs = &table(&up, "ROCPROFV3 SUMMARY:")[0];
            let ours = &table(&text, "ROCPROFV3 SUMMARY:")[0];
            assert_eq!(ours, theirs);
            // Same widths for every column but NAME and DOMAIN (sized by their contents).
            let widths = |t: &str| -> Vec<usize> {
                let l = t
                    .lines()
                    .skip_while(|l| l.trim() != "ROCPROFV3 SUMMARY:")
                    .find(|l| l.starts_with("|---") || l.starts_with("|-"))
                    .unwrap()
                    .to_owned();
                l.trim_matches('|').split('|').map(str::len).collect()
            };
            assert_eq!(widths(&text)[2..], widths(&up)[2..]);
        }
        Err(_) => eprintln!(
            "SKIPPED the column comparison: {} is not there",
            sample.display()
        ),
    }
}

#[test]
fn summary_units_scale_the_time_columns() {
    let r = profile("msec", &["--kernel-trace", "-S", "-u", "msec"]).succeeded();
    let text = r.stderr();
    let rows = table(&text, "ROCPROFV3 SUMMARY:");
    assert_eq!(rows[0][3], "DURATION (msec)");
    assert_eq!(rows[0][4], "AVERAGE (msec)");
    assert_eq!(rows[0][6], "MIN (msec)");
    // Each kernel's duration is its dispatches' nanoseconds in milliseconds.
    let mut ns: HashMap<String, u64> = HashMap::new();
    for k in r.rows("kernel_trace") {
        let d: u64 = k["End_Timestamp"].parse::<u64>().unwrap()
            - k["Start_Timestamp"].parse::<u64>().unwrap();
        *ns.entry(k["Kernel_Name"].clone()).or_default() += d;
    }
    assert!(rows.len() > 2);
    for row in &rows[2..] {
        let want = ns[&row[0]] as f64 / 1e6;
        let got: f64 = row[3].parse().unwrap();
        assert!(
            (got - want).abs() <= want * 1e-12,
            "{}: {got} msec, {want} expected",
            row[0]
        );
    }
}

#[test]
fn output_config_writes_the_runs_configuration() {
    let r = profile(
        "config",
        &[
            "--kernel-trace",
            "--hip-runtime-trace",
            "--output-config",
            "--group-by-queue",
            "-f",
            "csv",
        ],
    )
    .succeeded();
    let path = r.file("config.json");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}: {:?}", path.display(), r.listing())),
    )
    .unwrap();
    let m = &doc["rocprofiler-sdk-tool"][0]["metadata"];
    let pid: u64 = r.rows("hip_api_trace")[0]["Process_Id"].parse().unwrap();
    assert!(m["pid"].as_u64().unwrap() > 0);
    assert!(m["init_time"].as_u64().unwrap() <= m["fini_time"].as_u64().unwrap());
    let c = &m["config"];
    assert_eq!(c["kernel_trace"], true);
    assert_eq!(c["hip_runtime_api_trace"], true);
    assert_eq!(c["hsa_core_api_trace"], false);
    assert_eq!(c["csv_output"], true);
    assert_eq!(c["json_output"], false);
    assert_eq!(c["group_by_queue"], true);
    assert_eq!(c["output_file"], "run");
    assert_eq!(c["kernel_filter_include"], ".*");
    assert_eq!(c["minimum_output_bytes"], 0);
    assert_eq!(c["demangle"], true);
    // The output configuration under its own names, last (as the results JSON has it).
    assert_eq!(c["raw_output_file"], "run");
    assert_eq!(
        (c["summary"].clone(), c["summary_file"].clone()),
        (Value::Bool(false), Value::from("stderr"))
    );
    assert!(c.get("stats_summary").is_none());
    assert!(
        m["command"][0]
            .as_str()
            .unwrap()
            .ends_with("reference-workload")
    );
    assert_eq!(m["rocprof"]["selection"]["kernels"], true);
    assert_eq!(
        m["pid"].as_u64().unwrap(),
        pid,
        "the process the CSV files describe"
    );
    // Without the option there is none.
    let r = profile("no-config", &["--kernel-trace"]).succeeded();
    assert!(!r.file("config.json").exists());
}

#[test]
fn minimum_output_data_leaves_small_files_out_and_says_so() {
    let r = profile(
        "min-huge",
        &["--sys-trace", "--minimum-output-data", "100000"],
    )
    .succeeded();
    let csv: Vec<String> = r
        .listing()
        .into_iter()
        .filter(|f| f.ends_with(".csv"))
        .collect();
    assert!(csv.is_empty(), "{csv:?}");
    let err = r.stderr();
    let line = err
        .lines()
        .find(|l| l.contains("--minimum-output-data 100000 KB"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("run_kernel_trace.csv") && line.contains("not written"));

    // 2 KB: the files that are written are at least that big, the others are named.
    let r = profile("min-2k", &["--sys-trace", "--minimum-output-data", "2"]).succeeded();
    let err = r.stderr();
    let line = err
        .lines()
        .find(|l| l.contains("--minimum-output-data 2 KB"))
        .unwrap_or_else(|| panic!("{err}"));
    let written = r.listing();
    assert!(!written.is_empty());
    for f in &written {
        let n = std::fs::metadata(r.dir.join(f)).unwrap().len();
        assert!(n >= 2048, "{f}: {n} bytes");
        assert!(
            !line.contains(&format!("/{f} (")),
            "{f} both written and left out"
        );
    }

    // 0 keeps every file, and nothing is said.
    let r = profile("min-zero", &["--sys-trace", "--minimum-output-data", "0"]).succeeded();
    assert!(r.file("kernel_trace.csv").exists());
    assert!(r.file("marker_api_trace.csv").exists());
    assert!(!r.stderr().contains("--minimum-output-data"));
}

/// The Perfetto file's track names and its slices' begin timestamps.
fn decode(path: &Path) -> (Vec<String>, Vec<u64>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let trace = Trace::decode(&bytes[..]).expect("the trace decodes");
    let mut names = Vec::new();
    let mut begins = Vec::new();
    for p in trace.packet {
        match p.data {
            Some(Data::TrackDescriptor(d)) => names.extend(d.name),
            Some(Data::TrackEvent(e)) if e.r#type == Some(TYPE_SLICE_BEGIN) => {
                begins.push(p.timestamp.unwrap())
            }
            _ => {}
        }
    }
    (names, begins)
}

#[test]
fn group_by_queue_puts_kernels_and_copies_on_queue_tracks() {
    let args = [
        "--hip-trace",
        "--kernel-trace",
        "--memory-copy-trace",
        "-f",
        "pftrace",
    ];
    let r = profile("streams", &args).succeeded();
    let (names, _) = decode(&r.file("results.pftrace"));
    assert!(
        names.iter().any(|n| n.starts_with("STREAM [\" ")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("COMPUTE ")),
        "{names:?}"
    );

    let mut with = args.to_vec();
    with.push("--group-by-queue");
    let r = profile("queues", &with).succeeded();
    let (names, _) = decode(&r.file("results.pftrace"));
    assert!(
        names.iter().any(|n| n.starts_with("COMPUTE Agent [")
            && n.contains("] QUEUE [")
            && n.ends_with(" GPU")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("COPY to AGENT [")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("STREAM")), "{names:?}");
}

#[test]
fn perfetto_buffer_size_keeps_the_earliest_or_the_latest_events() {
    for (policy, tag) in [("discard", "discard"), ("ring_buffer", "ring")] {
        let r = profile(
            tag,
            &[
                "--sys-trace",
                "-f",
                "csv,pftrace",
                "--perfetto-buffer-size",
                "16",
                "--perfetto-buffer-fill-policy",
                policy,
            ],
        )
        .succeeded();
        let path = r.file("results.pftrace");
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 16 * 1024, "{policy}: {size} bytes");
        assert!(
            r.stderr().contains("--perfetto-buffer-size 16 KB"),
            "{}",
            r.stderr()
        );
        // The API calls of the trace are a prefix (discard) or a suffix (ring buffer) of the
        // ones the CSV files hold, in start order.
        let mut all: Vec<u64> = ["hip_api_trace", "hsa_api_trace"]
            .iter()
            .flat_map(|f| r.rows(f))
            .map(|c| c["Start_Timestamp"].parse().unwrap())
            .filter(|&s| s > 0)
            .collect();
        all.sort_unstable();
        let (_, begins) = decode(&path);
        let kept: BTreeSet<u64> = begins.into_iter().collect();
        let in_trace: Vec<bool> = all.iter().map(|s| kept.contains(s)).collect();
        let n = in_trace.iter().filter(|k| **k).count();
        assert!(
            n > 0 && n < all.len(),
            "{policy}: {n} of {} kept",
            all.len()
        );
        let expected: Vec<bool> = match policy {
            "discard" => (0..all.len()).map(|i| i < n).collect(),
            _ => (0..all.len()).map(|i| i >= all.len() - n).collect(),
        };
        assert_eq!(in_trace, expected, "{policy}");
    }
}

#[test]
fn perfetto_backend_system_is_refused_and_the_shmem_hint_is_not_used() {
    let r = profile(
        "system",
        &[
            "--kernel-trace",
            "-f",
            "pftrace",
            "--perfetto-backend",
            "system",
        ],
    );
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    assert!(r.stderr().contains("traced"), "{}", r.stderr());
    assert!(record_dirs(&r.tmp).is_empty(), "nothing was run");

    let r = profile(
        "shmem",
        &[
            "--kernel-trace",
            "-f",
            "pftrace",
            "--perfetto-backend",
            "inprocess",
            "--perfetto-shmem-size-hint",
            "128",
        ],
    )
    .succeeded();
    assert!(
        r.stderr()
            .contains("--perfetto-shmem-size-hint 128 is accepted and not used"),
        "{}",
        r.stderr()
    );
    assert!(r.file("results.pftrace").exists());
}

#[test]
fn extra_counters_define_a_derived_counter_for_the_run() {
    let tmp = scratch("options-output", "extra-yaml");
    let yaml = tmp.join("extra.yaml");
    std::fs::write(
        &yaml,
        "MY_WAVES_X2:\n  architectures:\n    gfx11:\n      expression: SQ_WAVES*2\n  description: Twice SQ_WAVES.\n",
    )
    .unwrap();
    let seed = [("WSLSIM_SEED", "5")];
    let values = |r: &Run, counter: &str| -> Vec<(u64, f64)> {
        r.rows("counter_collection")
            .iter()
            .filter(|row| row["Counter_Name"] == counter)
            .map(|row| {
                (
                    row["Dispatch_Id"].parse().unwrap(),
                    row["Counter_Value"].parse().unwrap(),
                )
            })
            .collect()
    };
    let x2 = profile_env(
        "extra",
        &["--pmc", "MY_WAVES_X2", "-E", yaml.to_str().unwrap()],
        &seed,
    )
    .succeeded();
    let base = profile_env("extra-base", &["--pmc", "SQ_WAVES"], &seed).succeeded();
    let doubled = values(&x2, "MY_WAVES_X2");
    let waves = values(&base, "SQ_WAVES");
    assert_eq!(doubled.len(), 8, "{}", x2.stderr());
    assert_eq!(
        doubled,
        waves.iter().map(|(d, v)| (*d, v * 2.0)).collect::<Vec<_>>()
    );
    assert!(waves.iter().all(|(_, v)| *v > 0.0));

    // Without -E the name is unknown; a missing or malformed file is refused naming it.
    let r = profile("extra-unknown", &["--pmc", "MY_WAVES_X2"]);
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    let missing = tmp.join("missing.yaml");
    let r = profile(
        "extra-missing",
        &["--pmc", "MY_WAVES_X2", "-E", missing.to_str().unwrap()],
    );
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr().contains(missing.to_str().unwrap()),
        "{}",
        r.stderr()
    );
    assert!(record_dirs(&r.tmp).is_empty());
    let bad = tmp.join("bad.yaml");
    std::fs::write(&bad, "MY_WAVES_X2: [unclosed").unwrap();
    let r = profile(
        "extra-bad",
        &["--pmc", "MY_WAVES_X2", "-E", bad.to_str().unwrap()],
    );
    assert_eq!(r.out.status.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr().contains(bad.to_str().unwrap()) && r.stderr().contains("YAML"),
        "{}",
        r.stderr()
    );

    // `rocprof avail -E` lists the extra counter with the installed ones.
    let listed = |extra: Option<&Path>| -> String {
        let mut c = rocprof(&tmp);
        c.args(["--sim", "avail"]);
        if let Some(p) = extra {
            c.arg("-E").arg(p);
        }
        let o = c.arg("list").output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(listed(Some(&yaml)).contains("MY_WAVES_X2"));
    assert!(!listed(None).contains("MY_WAVES_X2"));
}
