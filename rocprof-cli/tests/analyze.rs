//! `rocprof analyze` end to end: upstream's documentation samples, our reference workload's
//! CSV files, its rocpd database and a kept record directory (containment holds), a hand-built
//! upstream-schema database, a skewed GPU clock (violations, with the skew), the counter
//! hygiene — `--pmc-repeat` figures reproduced from separate runs, spreads over differently
//! seeded runs, GRBM zero bursts as rocprof records them and as rocprofv3 writes them,
//! counter passes — and inputs that are none of the three kinds.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test` (or `cargo xtask
//! build` first).

mod support;

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{Row, record_dirs, reference_run, rocprof, scratch, stderr, workload};

const AXPB: &str = "axpb(float const*, float*, unsigned long)";
const SEED: (&str, &str) = ("WSLSIM_SEED", "5");
const NEITHER: &str = "neither a CSV output directory, a rocpd database nor a record directory";

/// `rocprof --sim <options> -d <dir> -o run -- reference-workload` with `env`; must succeed.
fn profile(tmp: &Path, dir: &Path, options: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = rocprof(tmp);
    for v in [
        "WSLSIM_SEED",
        "WSLKMT_VENDOR_PACKET",
        "ROCPROFILER_METRICS_PATH",
    ] {
        c.env_remove(v);
    }
    c.arg("--sim").args(options).arg("-d").arg(dir);
    reference_run(c, env)
}

/// `rocprof analyze [--json] <inputs>`.
fn analyze(tmp: &Path, inputs: &[&Path], json: bool) -> Output {
    let mut c = rocprof(tmp);
    c.env_remove("ROCPROFILER_METRICS_PATH").arg("analyze");
    if json {
        c.arg("--json");
    }
    c.args(inputs).output().unwrap()
}

/// The text report of a successful analysis.
fn text(tmp: &Path, inputs: &[&Path]) -> String {
    let out = analyze(tmp, inputs, false);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON report of a successful analysis.
fn report(tmp: &Path, inputs: &[&Path]) -> Value {
    let out = analyze(tmp, inputs, true);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The `k`-th process of input `i`.
fn process(r: &Value, i: usize, k: usize) -> &Value {
    &r["inputs"][i]["processes"][k]
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The dispatch ids of a counter group's GRBM zeros.
fn grbm_zero_ids(g: &Value) -> Vec<u64> {
    g["grbm_zero"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| n(&z["dispatch_id"]))
        .collect()
}

/// (checked, held, violated, start-only, unmatched) of a tally.
fn tally(t: &Value) -> [u64; 5] {
    ["checked", "held", "violated", "start_only", "unmatched"].map(|k| n(&t[k]))
}

fn rows(path: &Path) -> Vec<Row> {
    csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .deserialize()
        .map(Result::unwrap)
        .collect()
}

/// Rewrites `path` with `edit` applied to each row (string cells quoted, numbers bare).
fn rewrite(path: &Path, mut edit: impl FnMut(&mut Vec<String>, &HashMap<String, usize>)) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    let index: HashMap<String, usize> = header
        .iter()
        .enumerate()
        .map(|(k, h)| (h.clone(), k))
        .collect();
    let mut records: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect();
    for rec in &mut records {
        edit(rec, &index);
    }
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_path(path)
        .unwrap();
    w.write_record(&header).unwrap();
    for rec in records {
        w.write_record(&rec).unwrap();
    }
    w.flush().unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The summary row `name` of `domain`.
fn summary_row<'a>(p: &'a Value, domain: &str, name: &str) -> &'a Value {
    p["summary"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["domain"] == domain)
        .and_then(|d| {
            d["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
        })
        .unwrap_or_else(|| panic!("no {domain} row {name}: {}", p["summary"]))
}

/// Upstream's documentation samples (plain names, files of several runs put together): the
/// analysis runs and reports what it can — nothing to contain (the correlation ids name other
/// runs' calls), the processes named, the summary, the one counter.
#[test]
fn upstream_documentation_samples_are_analysed() {
    let samples =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/upstream-docs-samples");
    if !samples.join("kernel_trace.csv").is_file() {
        eprintln!(
            "SKIPPED upstream_documentation_samples_are_analysed: {} is absent",
            samples.display()
        );
        return;
    }
    let tmp = scratch("analyze", "upstream");
    let out = text(&tmp, &[&samples]);
    assert!(out.contains("(CSV output directory)"), "{out}");
    assert!(
        out.contains("containment (dispatches): 0 of 9 checked"),
        "{out}"
    );
    assert!(
        out.contains("files of different runs put together?"),
        "{out}"
    );
    assert!(
        out.contains("not rocprofv3 output names, not read: kernel_names.csv"),
        "{out}"
    );
    assert!(out.contains("process ids (15, 197, 717, 15606)"), "{out}");
    let r = report(&tmp, &[&samples]);
    let p = process(&r, 0, 0);
    assert_eq!(n(&p["counts"]["dispatches"]), 9);
    assert_eq!(n(&p["counts"]["copies"]), 4);
    assert_eq!(tally(&p["timeline"]["dispatches"]), [0, 0, 0, 0, 9]);
    let divide = summary_row(
        p,
        "KERNEL_DISPATCH",
        "divide_kernel(float*, float const*, float const*, int, int)",
    );
    assert!(n(&divide["calls"]) >= 1, "{divide}");
    assert_eq!(
        summary_row(p, "MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE")["calls"],
        2
    );
    // The counter file: SQ_WAVES of four dispatches, one run, rocprofv3's values.
    let g = &r["counters"][0];
    assert_eq!(g["origins"][0], "csv");
    assert_eq!(g["counters"], serde_json::json!(["SQ_WAVES"]));
    let est: Vec<f64> = g["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["estimate"]["estimate"].as_f64().unwrap())
        .collect();
    assert_eq!(est, [16384.0; 4]);
}

/// Our reference workload under `--sys-trace`: every dispatch inside its hipLaunchKernel →
/// device-to-host hipMemcpy interval and every copy inside its hipMemcpy (8 and 16), no zero
/// or negative durations, axpb's 8 dispatches in the summary; `--json` has the same counts.
#[test]
fn our_reference_run_is_contained() {
    let tmp = scratch("analyze", "reference");
    let out = tmp.join("out");
    profile(&tmp, &out, &["--sys-trace"], &[]);
    let t = text(&tmp, &[&out]);
    assert!(
        t.contains(
            "containment (dispatches): 8 of 8 checked, 8 held, 0 violated: every one inside"
        ),
        "{t}"
    );
    assert!(
        t.contains("containment (copies): 16 of 16 checked, 16 held, 0 violated: every one inside"),
        "{t}"
    );
    assert!(
        t.contains("durations: no zero or negative durations"),
        "{t}"
    );
    assert!(t.contains("margins: dispatches start ≥"), "{t}");
    assert!(!t.contains("violation:"), "{t}");
    let line = t
        .lines()
        .find(|l| l.contains(AXPB) && l.contains("KERNEL_DISPATCH"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(line.contains("|         8 |"), "{line}");

    let r = report(&tmp, &[&out]);
    assert_eq!(r["schema"], "rocprof-analyze/1");
    assert_eq!(r["inputs"][0]["kind"], "csv-directory");
    let p = process(&r, 0, 0);
    assert!(
        p["label"].as_str().unwrap().ends_with("out/run"),
        "{}",
        p["label"]
    );
    assert_eq!(tally(&p["timeline"]["dispatches"]), [8, 8, 0, 0, 0]);
    assert_eq!(tally(&p["timeline"]["copies"]), [16, 16, 0, 0, 0]);
    assert_eq!(p["timeline"]["violations_total"], 0);
    assert!(p["timeline"]["clock"]["skew"].is_null());
    assert_eq!(p["timeline"]["clock"]["outside_host_span"], 0);
    assert_eq!(n(&summary_row(p, "KERNEL_DISPATCH", AXPB)["calls"]), 8);
    assert_eq!(n(&summary_row(p, "HIP_API", "hipMemcpy")["calls"]), 16);
    assert_eq!(n(&summary_row(p, "HIP_API", "hipLaunchKernel")["calls"]), 8);
    assert_eq!(n(&p["counts"]["markers"]), 8);
    assert!(r["counters"].as_array().unwrap().is_empty());
    // A trace without counters says so; the process is named by its pid.
    assert!(t.contains("## counters: none in the inputs"), "{t}");
    assert!(p["pid"].is_u64());
}

/// The rocpd database of the same run (`-f csv,rocpd`) gives the same containment result, to
/// the nanosecond of every margin.
#[test]
fn the_rocpd_database_of_a_run_gives_the_same_containment() {
    let tmp = scratch("analyze", "rocpd");
    let out = tmp.join("out");
    profile(&tmp, &out, &["--sys-trace", "-f", "csv,rocpd"], &[]);
    let db = out.join("run_results.db");
    let r = report(&tmp, &[&db, &out]);
    assert_eq!(r["inputs"][0]["kind"], "rocpd");
    assert_eq!(r["inputs"][1]["kind"], "csv-directory");
    let (a, b) = (process(&r, 0, 0), process(&r, 1, 0));
    for key in ["dispatches", "copies", "margins", "durations"] {
        assert_eq!(a["timeline"][key], b["timeline"][key], "{key}");
    }
    assert_eq!(tally(&a["timeline"]["dispatches"]), [8, 8, 0, 0, 0]);
    assert_eq!(tally(&a["timeline"]["copies"]), [16, 16, 0, 0, 0]);
    assert_eq!(a["pid"], b["pid"]);
    assert_eq!(n(&summary_row(a, "KERNEL_DISPATCH", AXPB)["calls"]), 8);
    // A directory holding only the database is read as the database.
    let only = tmp.join("only");
    std::fs::create_dir_all(&only).unwrap();
    std::fs::copy(&db, only.join("run_results.db")).unwrap();
    let r = report(&tmp, &[&only]);
    assert_eq!(r["inputs"][0]["kind"], "rocpd");
    assert_eq!(
        tally(&process(&r, 0, 0)["timeline"]["dispatches"]),
        [8, 8, 0, 0, 0]
    );
}

/// A kept record directory (the run could not write its outputs) with tracing and counters:
/// containment holds, the counters come from the raw read-backs, the directory stays.
#[test]
fn a_kept_record_directory_is_analysed_with_its_read_backs() {
    let tmp = scratch("analyze", "recdir");
    let out = tmp.join("out");
    std::fs::create_dir_all(out.join("run_kernel_trace.csv/x")).unwrap();
    let o = rocprof(&tmp)
        .args([
            "--sim",
            "--sys-trace",
            "--pmc",
            "SQ_WAVES",
            "GRBM_COUNT",
            "-d",
        ])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .env("WSLSIM_SEED", "5")
        .env_remove("WSLKMT_VENDOR_PACKET")
        .env_remove("ROCPROFILER_METRICS_PATH")
        .output()
        .unwrap();
    assert!(stderr(&o).contains("finish the job with"), "{}", stderr(&o));
    let kept = record_dirs(&tmp);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let r = report(&tmp, &[&kept[0]]);
    assert_eq!(r["inputs"][0]["kind"], "record-directory");
    let p = process(&r, 0, 0);
    assert_eq!(tally(&p["timeline"]["dispatches"]), [8, 8, 0, 0, 0]);
    assert_eq!(tally(&p["timeline"]["copies"]), [16, 16, 0, 0, 0]);
    let g = &r["counters"][0];
    assert_eq!(g["origins"][0], "read-backs");
    assert_eq!(g["rows"].as_array().unwrap().len(), 16);
    // Seed 5: dispatch 1 is clean (8,192 waves), dispatch 2 carries other clients' waves.
    let waves = |id: u64| {
        g["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["dispatch_id"] == id && r["counter"] == "SQ_WAVES")
            .unwrap()["estimate"]["estimate"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(waves(1), 8192.0);
    assert_eq!(waves(2), 22_302.0);
    assert!(kept[0].is_dir(), "analyze only reads a record directory");
}

/// A database with upstream's schema-3 shape, built here: every call its own event, nested
/// HSA calls pointing at the HIP call by `parent_stack_id`, the dispatch's event at the HSA
/// doorbell store's stack; GRBM_COUNT reading 0 on the first dispatch, as rocprofv3 writes it.
#[test]
fn an_upstream_schema_database_is_analysed() {
    let tmp = scratch("analyze", "upstream-db");
    let path = tmp.join("upstream_results.db");
    let db = rusqlite::Connection::open(&path).unwrap();
    let g = "0000ddb5-8903-7903-b269-cd8d3745bb8a";
    db.execute_batch(&format!(
        "CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
         CREATE TABLE rocpd_info_process (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             ppid INTEGER, init INTEGER);
         CREATE TABLE rocpd_info_agent (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             type TEXT, absolute_index INTEGER, logical_index INTEGER, type_index INTEGER,
             name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, extdata TEXT);
         CREATE TABLE rocpd_event (id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER,
             stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, extdata TEXT);
         CREATE TABLE rocpd_region (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             start INTEGER, end INTEGER, tid INTEGER, name_id INTEGER, event_id INTEGER);
         CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             kernel_name TEXT, display_name TEXT, kernel_object INTEGER,
             kernarg_segment_size INTEGER, group_segment_size INTEGER,
             private_segment_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER,
             accum_vgpr_count INTEGER);
         CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             dispatch_id INTEGER, kernel_id INTEGER, queue_id INTEGER, stream_id INTEGER,
             start INTEGER, end INTEGER, tid INTEGER, agent_id INTEGER,
             private_segment_size INTEGER, group_segment_size INTEGER,
             workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER,
             grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER, event_id INTEGER);
         CREATE TABLE rocpd_memory_copy (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER,
             start INTEGER, end INTEGER, size INTEGER, src_agent_id INTEGER,
             dst_agent_id INTEGER, tid INTEGER, stream_id INTEGER, name_id INTEGER,
             event_id INTEGER);
         CREATE TABLE rocpd_info_pmc (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER, name TEXT);
         CREATE TABLE rocpd_pmc_event (id INTEGER PRIMARY KEY, guid TEXT, event_id INTEGER,
             pmc_id INTEGER, value REAL);
         INSERT INTO rocpd_info_process VALUES (1, '{g}', 4242, 1, 1000);
         INSERT INTO rocpd_string VALUES (1, '{g}', 'HIP_RUNTIME_API'), (2, '{g}', 'HSA_CORE_API'),
             (3, '{g}', 'hipMemcpy'), (4, '{g}', 'hipLaunchKernel'),
             (5, '{g}', 'hsa_signal_store_screlease'), (6, '{g}', 'MEMORY_COPY_HOST_TO_DEVICE'),
             (7, '{g}', 'MEMORY_COPY_DEVICE_TO_HOST'), (8, '{g}', 'KERNEL_DISPATCH'),
             (9, '{g}', 'MEMORY_COPY');
         INSERT INTO rocpd_info_agent VALUES
             (1, '{g}', 4242, 'CPU', 0, 0, 0, 'AMD EPYC', '', 'CPU', 'AMD EPYC', '{{}}'),
             (2, '{g}', 4242, 'GPU', 1, 1, 0, 'gfx1150', '', 'AMD', 'Radeon', '{{}}');
         INSERT INTO rocpd_info_kernel_symbol VALUES
             (1, '{g}', 4242, 'scale', 'scale', 1, 16, 0, 0, 16, 8, 0);"
    ))
    .unwrap();
    // Two iterations: copy in, launch (with its HSA doorbell store), copy out. Event ids:
    // 10·iteration + k; stack ids: upstream's internal correlation ids.
    let mut id = 0;
    for (it, kernel_end) in [(0u64, 1_500u64), (1, 3_000)] {
        let base = 10_000 * (it + 1);
        let ev = |k: u64| (10 * (it + 1) + k) as i64;
        let corr = |k: u64| (10 * (it + 1) + k) as i64;
        let event = |db: &rusqlite::Connection, k: u64, cat: i64, parent: i64| {
            db.execute(
                "INSERT INTO rocpd_event VALUES (?1, ?2, ?3, ?4, ?5, 0, '{}')",
                rusqlite::params![ev(k), g, cat, corr(k), parent],
            )
            .unwrap();
        };
        let mut region = |db: &rusqlite::Connection, k: u64, start: u64, end: u64, name: i64| {
            id += 1;
            db.execute(
                "INSERT INTO rocpd_region VALUES (?1, ?2, 4242, ?3, ?4, 4242, ?5, ?6)",
                rusqlite::params![
                    id,
                    g,
                    (base + start) as i64,
                    (base + end) as i64,
                    name,
                    ev(k)
                ],
            )
            .unwrap();
        };
        event(&db, 1, 1, 0);
        region(&db, 1, 0, 400, 3); // hipMemcpy H2D
        event(&db, 2, 1, 0);
        region(&db, 2, 500, 600, 4); // hipLaunchKernel
        event(&db, 3, 2, corr(2));
        region(&db, 3, 550, 560, 5); // its doorbell store, nested
        event(&db, 4, 1, 0);
        region(&db, 4, 610, 2_000, 3); // hipMemcpy D2H
        // The copies' events carry their calls' stacks; the dispatch's, the doorbell store's
        // (under the HIP call).
        for (k, stack, parent, cat) in [
            (5u64, corr(1), 0, 9),
            (6, corr(4), 0, 9),
            (7, corr(3), corr(2), 8),
        ] {
            db.execute(
                "INSERT INTO rocpd_event VALUES (?1, ?2, ?3, ?4, ?5, 0, '{}')",
                rusqlite::params![ev(k), g, cat, stack, parent],
            )
            .unwrap();
        }
        db.execute(
            "INSERT INTO rocpd_memory_copy VALUES (?1, ?2, 4242, ?3, ?4, 1048576, 1, 2, 4242, 0, 6, ?5)",
            rusqlite::params![ev(5), g, (base + 100) as i64, (base + 300) as i64, ev(5)],
        )
        .unwrap();
        db.execute(
            "INSERT INTO rocpd_memory_copy VALUES (?1, ?2, 4242, ?3, ?4, 1048576, 2, 1, 4242, 0, 7, ?5)",
            rusqlite::params![ev(6), g, (base + 1_600) as i64, (base + 1_900) as i64, ev(6)],
        )
        .unwrap();
        // The second iteration's kernel ends after its copy back returned: a violation.
        db.execute(
            "INSERT INTO rocpd_kernel_dispatch VALUES (?1, ?2, 4242, ?3, 1, 1, 0, ?4, ?5, 4242, 2,
                 0, 0, 64, 1, 1, 4096, 1, 1, ?6)",
            rusqlite::params![
                ev(7),
                g,
                (it + 1) as i64,
                (base + 700) as i64,
                (base + kernel_end) as i64,
                ev(7)
            ],
        )
        .unwrap();
    }
    db.execute_batch(&format!(
        "INSERT INTO rocpd_info_pmc VALUES (1, '{g}', 4242, 'GRBM_COUNT'), (2, '{g}', 4242, 'SQ_WAVES');
         INSERT INTO rocpd_pmc_event VALUES (1, '{g}', 17, 1, 0.0), (2, '{g}', 17, 2, 64.0),
             (3, '{g}', 27, 1, 7000.0), (4, '{g}', 27, 2, 64.0);"
    ))
    .unwrap();
    drop(db);

    let r = report(&tmp, &[&path]);
    let p = process(&r, 0, 0);
    assert_eq!(p["pid"], 4242);
    assert_eq!(tally(&p["timeline"]["dispatches"]), [2, 1, 1, 0, 0]);
    assert_eq!(tally(&p["timeline"]["copies"]), [4, 4, 0, 0, 0]);
    let v = &p["timeline"]["violations"][0];
    assert_eq!(
        (&v["record"], &v["id"], &v["bound"], &v["call"], &v["by_ns"]),
        (
            &Value::from("dispatch"),
            &Value::from(2),
            &Value::from("end"),
            &Value::from("hipMemcpy"),
            &Value::from(1_000)
        )
    );
    // One record 1 µs late while the copies start only 100 ns after their calls: no single
    // offset of the GPU timeline explains it.
    let skew = &p["timeline"]["clock"]["skew"];
    assert_eq!(skew["direction"], "late");
    assert!(skew["constant_offset"].is_null(), "{skew}");
    let g = &r["counters"][0];
    assert_eq!(g["origins"][0], "rocpd");
    assert_eq!(g["grbm_zero"][0]["dispatch_id"], 1);
    assert_eq!(g["grbm_bursts"][0]["at_session_start"], true);
}

/// A skewed GPU clock, crafted from our own outputs: every kernel and copy timestamp 1 s early
/// (longer than any call of the run, however slow the machine) breaks containment at the start
/// of every record, and the report finds one constant
/// offset (containing the 1 s) that would fix them all. A 50 µs late skew of the kernels
/// alone stays inside the margins the report gives, which shrink by exactly 50 µs.
#[test]
fn a_skewed_gpu_clock_is_found_with_its_skew() {
    let tmp = scratch("analyze", "skew");
    let out = tmp.join("out");
    profile(&tmp, &out, &["--sys-trace"], &[]);
    let shifted = |tag: &str, files: &[&str], by: i64| -> PathBuf {
        let dir = tmp.join(tag);
        copy_dir(&out, &dir);
        for f in files {
            rewrite(&dir.join(format!("run_{f}.csv")), |rec, ix| {
                for col in ["Start_Timestamp", "End_Timestamp"] {
                    let v: i64 = rec[ix[col]].parse().unwrap();
                    rec[ix[col]] = (v + by).to_string();
                }
            });
        }
        dir
    };
    let early = shifted(
        "early",
        &["kernel_trace", "memory_copy_trace"],
        -1_000_000_000,
    );
    let t = text(&tmp, &[&early]);
    assert!(
        t.contains("containment (dispatches): 8 of 8 checked, 0 held, 8 violated"),
        "{t}"
    );
    assert!(
        t.contains("containment (copies): 16 of 16 checked, 0 held, 16 violated"),
        "{t}"
    );
    assert!(t.contains("violation: dispatch 1 (axpb"), "{t}");
    assert!(t.contains("… and 14 more violations"), "{t}");
    assert!(t.contains("skewed early by a constant offset"), "{t}");
    let r = report(&tmp, &[&early]);
    let tl = &process(&r, 0, 0)["timeline"];
    assert_eq!(tl["violations_total"], 24);
    let skew = &tl["clock"]["skew"];
    assert_eq!(skew["direction"], "early");
    let (lo, hi) = (
        skew["constant_offset"]["min_ns"].as_i64().unwrap(),
        skew["constant_offset"]["max_ns"].as_i64().unwrap(),
    );
    assert!(lo <= 1_000_000_000 && 1_000_000_000 <= hi, "[{lo}, {hi}]");
    let median = n(&skew["median_ns"]);
    assert!(median > 900_000_000 && median < 1_000_000_000, "{median}");
    for v in tl["violations"].as_array().unwrap() {
        assert_eq!(v["bound"], "start", "{v}");
    }

    let base = report(&tmp, &[&out]);
    let margin = n(&process(&base, 0, 0)["timeline"]["margins"]["dispatch_end_ns"]);
    assert!(
        margin > 50_000,
        "the kernels end {margin} ns before their copy back"
    );
    let late = shifted("late", &["kernel_trace"], 50_000);
    let r = report(&tmp, &[&late]);
    let tl = &process(&r, 0, 0)["timeline"];
    assert_eq!(tally(&tl["dispatches"]), [8, 8, 0, 0, 0]);
    assert_eq!(n(&tl["margins"]["dispatch_end_ns"]), margin - 50_000);
}

/// One `counter_hygiene.csv` row: (kernel, ordinal, counter) → the row.
fn hygiene_rows(path: &Path) -> HashMap<(String, String, String), Row> {
    rows(path)
        .into_iter()
        .map(|r| {
            let key = (
                r["Kernel_Name"].clone(),
                r["Kernel_Ordinal"].clone(),
                r["Counter_Name"].clone(),
            );
            (key, r)
        })
        .collect()
}

/// Analyze's rows of group `g`: (kernel, ordinal, counter) → the row.
fn analyzed_rows(g: &Value) -> HashMap<(String, String, String), Value> {
    g["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["key"]["kernel"].as_str().unwrap().to_owned(),
                r["key"]["ordinal"].to_string(),
                r["counter"].as_str().unwrap().to_owned(),
            );
            (key, r.clone())
        })
        .collect()
}

fn same_number(csv: &str, json: &Value) -> bool {
    match (csv, json.as_f64()) {
        ("", None) => true,
        (s, Some(v)) => s
            .parse::<f64>()
            .is_ok_and(|c| (c - v).abs() <= 1e-6 * c.abs().max(1.0)),
        _ => false,
    }
}

/// Checks analyze's row against a `counter_hygiene.csv` row, figure by figure.
fn assert_same_figures(csv: &Row, a: &Value) {
    let e = &a["estimate"];
    for (c, j) in [("Estimate", "estimate"), ("Min", "min"), ("Max", "max")] {
        assert!(
            same_number(&csv[c], &e[j]),
            "{c}: {} vs {}\n{csv:?}\n{a}",
            csv[c],
            e[j]
        );
    }
    let spread = e["spread_percent"]
        .as_f64()
        .map_or(String::new(), |s| format!("{s:.2}"));
    assert_eq!(csv["Spread_Percent"], spread, "{csv:?}\n{a}");
    for (c, j) in [
        ("Runs", "runs"),
        ("Runs_Used", "runs_used"),
        ("Zeros_Discarded", "zeros_discarded"),
    ] {
        assert_eq!(csv[c], e[j].to_string(), "{c}: {csv:?}\n{a}");
    }
}

/// `--pmc-repeat 3` keeps its runs in memory; with the seed pinned (WSLSIM_SEED=5) each of them
/// is the same simulated session, so three separate `--pmc` runs with that seed are those runs:
/// analyze over their outputs reproduces every figure of the repeat's counter_hygiene.csv
/// (estimate, min, max, spread, runs, runs used, zeros discarded) for every dispatch × counter,
/// and analyze on the repeat's own output reports rocprof's figures from that file.
#[test]
fn pmc_repeat_figures_are_reproduced_from_separate_runs() {
    let tmp = scratch("analyze", "repeat");
    let counters = [
        "--pmc",
        "SQ_WAVES",
        "GRBM_COUNT",
        "GRBM_GUI_ACTIVE",
        "GPU_UTIL",
    ];
    let repeat = tmp.join("repeat");
    let mut options = counters.to_vec();
    options.extend(["--pmc-repeat", "3"]);
    profile(&tmp, &repeat, &options, &[SEED]);
    let runs: Vec<PathBuf> = (1..=3).map(|k| tmp.join(format!("run{k}"))).collect();
    for dir in &runs {
        profile(&tmp, dir, &counters, &[SEED]);
    }
    let expected = hygiene_rows(&repeat.join("run_counter_hygiene.csv"));
    assert_eq!(expected.len(), 32);

    let inputs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
    let r = report(&tmp, &inputs);
    let groups = r["counters"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "one process per run: one group");
    let g = &groups[0];
    assert_eq!(g["runs"].as_array().unwrap().len(), 3);
    assert_eq!(g["unmatched_dispatches"], 0);
    assert!(g["repeat_runs"].is_null());
    let got = analyzed_rows(g);
    assert_eq!(got.len(), expected.len());
    for (key, row) in &expected {
        let a = got.get(key).unwrap_or_else(|| panic!("no row for {key:?}"));
        assert_same_figures(row, a);
    }
    let summary: Vec<&str> = g["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        summary[0],
        "32 dispatch-counter values estimated from 3 runs"
    );

    // The repeat's own output: rocprof's figures, as its file has them.
    let r = report(&tmp, &[&repeat]);
    let g = &r["counters"][0];
    assert_eq!(g["repeat_runs"], 3);
    let own = analyzed_rows(g);
    for (key, row) in &expected {
        assert_same_figures(row, &own[key]);
    }
    let t = text(&tmp, &[&repeat]);
    assert!(t.contains("rocprof's own estimates over 3 runs"), "{t}");
}

/// Runs with different seeds carry different contamination: analyze's min, max and estimate
/// per dispatch are those of the three counter_collection.csv files, the smallest value is the
/// estimate, and spreads above 5 % are warned about as rocprof warns after a repeat.
#[test]
fn differently_seeded_runs_give_the_spread_and_the_smallest_value() {
    let tmp = scratch("analyze", "seeds");
    let mut dirs = Vec::new();
    for seed in ["5", "6", "7"] {
        let dir = tmp.join(format!("seed{seed}"));
        profile(&tmp, &dir, &["--pmc", "SQ_WAVES"], &[("WSLSIM_SEED", seed)]);
        dirs.push(dir);
    }
    let mut per_dispatch: HashMap<u64, Vec<f64>> = HashMap::new();
    for d in &dirs {
        for row in rows(&d.join("run_counter_collection.csv")) {
            per_dispatch
                .entry(row["Dispatch_Id"].parse().unwrap())
                .or_default()
                .push(row["Counter_Value"].parse().unwrap());
        }
    }
    let inputs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let r = report(&tmp, &inputs);
    let g = &r["counters"][0];
    let mut contaminated = false;
    for row in g["rows"].as_array().unwrap() {
        let values = &per_dispatch[&row["dispatch_id"].as_u64().unwrap()];
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(0.0, f64::max);
        let e = &row["estimate"];
        assert_eq!(e["min"].as_f64(), Some(min), "{row}");
        assert_eq!(e["max"].as_f64(), Some(max), "{row}");
        assert_eq!(e["estimate"].as_f64(), Some(min), "{row}");
        assert!(min >= 8192.0, "never below the theory: {row}");
        contaminated |= (max - min) / min > 0.05;
    }
    assert_eq!(g["rows"].as_array().unwrap().len(), 8);
    let t = text(&tmp, &inputs);
    assert_eq!(
        t.contains("by more than 5% between runs"),
        contaminated,
        "{t}"
    );
}

/// A GRBM zero burst as rocprof records it (the values left out of counter_collection.csv,
/// the reason in counter_hygiene.csv): the same dispatches flagged, as one burst from the
/// session's first counted dispatch, and GPU_UTIL named as divided by a zero.
#[test]
fn a_grbm_burst_recorded_by_rocprof_is_reported() {
    let tmp = scratch("analyze", "burst");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/grbm-burst-25ms.toml");
    let out = tmp.join("out");
    profile(
        &tmp,
        &out,
        &["--pmc", "GPU_UTIL", "SQ_WAVES"],
        &[SEED, ("WSLSIM_SCENARIO", scenario.to_str().unwrap())],
    );
    let mut flagged: Vec<u64> = rows(&out.join("run_counter_hygiene.csv"))
        .into_iter()
        .filter(|r| r["Discarded"].contains("grbm-zero"))
        .map(|r| r["Dispatch_Id"].parse().unwrap())
        .collect();
    flagged.sort_unstable();
    flagged.dedup();
    assert!(!flagged.is_empty() && flagged[0] == 1, "{flagged:?}");
    let r = report(&tmp, &[&out]);
    let g = &r["counters"][0];
    assert_eq!(g["origins"][0], "csv-with-hygiene");
    let ids = grbm_zero_ids(g);
    assert_eq!(ids, flagged);
    let b = &g["grbm_bursts"][0];
    assert_eq!(b["at_session_start"], true);
    assert_eq!(n(&b["dispatches"]), flagged.len() as u64);
    let divided: Vec<u64> = g["divisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["counter"] == "GPU_UTIL")
        .map(|d| n(&d["dispatch_id"]))
        .collect();
    assert_eq!(divided, flagged);
    let t = text(&tmp, &[&out]);
    assert!(t.contains("GRBM zero burst (run 1): dispatch"), "{t}");
    assert!(
        t.contains("from the session's first counted dispatch"),
        "{t}"
    );
}

/// The same burst as rocprofv3 writes it: the zeros are rows (GPU_UTIL's x/0 = 0) and there is
/// no hygiene file. Crafted from a clean run: GRBM_COUNT and GPU_UTIL of dispatches 1 and 2 set
/// to 0.
#[test]
fn a_grbm_burst_written_as_zeros_is_recognised() {
    let tmp = scratch("analyze", "zeros");
    let out = tmp.join("out");
    profile(
        &tmp,
        &out,
        &["--pmc", "GPU_UTIL", "GRBM_COUNT", "SQ_WAVES"],
        &[SEED],
    );
    std::fs::remove_file(out.join("run_counter_hygiene.csv")).unwrap();
    rewrite(&out.join("run_counter_collection.csv"), |rec, ix| {
        let id: u64 = rec[ix["Dispatch_Id"]].parse().unwrap();
        let name = rec[ix["Counter_Name"]].clone();
        if id <= 2 && (name == "GRBM_COUNT" || name == "GPU_UTIL") {
            rec[ix["Counter_Value"]] = "0.00000000e+00".into();
        }
    });
    let r = report(&tmp, &[&out]);
    let g = &r["counters"][0];
    assert_eq!(g["origins"][0], "csv");
    let ids = grbm_zero_ids(g);
    assert_eq!(ids, [1, 2]);
    assert_eq!(g["grbm_bursts"][0]["at_session_start"], true);
    let d = &g["divisions"][0];
    assert_eq!(
        (&d["counter"], &d["dispatch_id"]),
        (&Value::from("GPU_UTIL"), &Value::from(1))
    );
    assert_eq!(d["divisors"], serde_json::json!(["GRBM_COUNT"]));
    let util1 = analyzed_rows(g)[&(AXPB.to_owned(), "0".to_owned(), "GPU_UTIL".to_owned())].clone();
    assert!(util1["estimate"]["estimate"].is_null(), "{util1}");
    assert_eq!(
        util1["estimate"]["discarded"],
        serde_json::json!([[0, "grbm-zero"]])
    );
    // SQ_WAVES is no GRBM counter: kept.
    let waves1 = &analyzed_rows(g)[&(AXPB.to_owned(), "0".to_owned(), "SQ_WAVES".to_owned())];
    assert_eq!(waves1["estimate"]["estimate"], 8192.0);
}

/// Two counter passes write `pass_1/` and `pass_2/`: one input, two runs; the counter both
/// passes collect is estimated over two runs, the other over one.
#[test]
fn counter_passes_are_runs_of_one_input() {
    let tmp = scratch("analyze", "passes");
    let out = tmp.join("out");
    profile(
        &tmp,
        &out,
        &["--pmc", "SQ_WAVES", "GRBM_COUNT", "--pmc", "SQ_WAVES"],
        &[SEED],
    );
    assert!(out.join("pass_1").is_dir() && out.join("pass_2").is_dir());
    let r = report(&tmp, &[&out]);
    let ps = r["inputs"][0]["processes"].as_array().unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!(
        (&ps[0]["run"], &ps[1]["run"]),
        (&Value::from("pass_1"), &Value::from("pass_2"))
    );
    let g = &r["counters"][0];
    assert_eq!(g["runs"].as_array().unwrap().len(), 2);
    for row in g["rows"].as_array().unwrap() {
        let runs = if row["counter"] == "SQ_WAVES" { 2 } else { 1 };
        assert_eq!(row["estimate"]["runs"], runs, "{row}");
    }
}

/// Inputs that are none of the three kinds stop the command (exit 2, the path and why, nothing
/// on stdout); a recognised directory with broken files is analysed, the problems noted.
#[test]
fn bad_inputs_are_refused_and_broken_files_noted() {
    let tmp = scratch("analyze", "bad");
    let file = tmp.join("notes.txt");
    std::fs::write(&file, "not a trace\n").unwrap();
    let empty = tmp.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let sqlite = tmp.join("other.db");
    rusqlite::Connection::open(&sqlite)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .unwrap();
    let missing = tmp.join("nowhere");
    let damaged = tmp.join("damaged-record-dir");
    std::fs::create_dir_all(&damaged).unwrap();
    std::fs::write(damaged.join("run.json"), "{").unwrap();
    for (path, why) in [
        (&file, NEITHER),
        (&empty, NEITHER),
        (&missing, NEITHER),
        (&sqlite, "not a readable rocpd database"),
        (&damaged, "is not a record directory that rocprof kept"),
    ] {
        for json in [false, true] {
            let out = analyze(&tmp, &[path], json);
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&format!("rocprof: error: {}", path.display())) && err.contains(why),
                "{err}"
            );
            assert!(out.stdout.is_empty());
        }
    }
    // One bad input among good ones still stops everything.
    let broken = tmp.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("x_kernel_trace.csv"),
        "\"Kind\",\"Dispatch_Id\"\n\"KERNEL_DISPATCH\",1\n",
    )
    .unwrap();
    std::fs::write(
        broken.join("x_hip_api_trace.csv"),
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\
         \"Start_Timestamp\",\"End_Timestamp\"\n\
         \"HIP_RUNTIME_API_EXT\",\"hipMalloc\",1,1,1,100,200\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,2,soon,300\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,3,400,390\n",
    )
    .unwrap();
    let out = analyze(&tmp, &[&broken, &file], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());

    let r = report(&tmp, &[&broken]);
    let p = process(&r, 0, 0);
    let notes = p["notes"].to_string();
    assert!(
        notes.contains("not read: no Kernel_Name, Correlation_Id"),
        "{notes}"
    );
    assert!(
        notes.contains("1 row not read (line 3: Start_Timestamp \\\"soon\\\""),
        "{notes}"
    );
    assert_eq!(n(&p["counts"]["calls"]), 2);
    let d = &p["timeline"]["durations"];
    assert_eq!(n(&d["calls"]["negative"]), 1);
    assert_eq!(d["listed"][0]["name"], "hipFree");
    assert_eq!(d["listed"][0]["duration_ns"], -10);
    assert!(
        p["missing"]
            .to_string()
            .contains("no kernel dispatches or memory copies"),
        "{}",
        p["missing"]
    );
}
