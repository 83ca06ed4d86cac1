//! Thread trace end to end on the simulated Radeon 890M: `--att` captures through the HSA
//! runtime's memory and PM4-IB packets, the simulated GPU writes its SQTT stream, and `rocprof`
//! decodes it after the run with the simulated `librocprof-trace-decoder.so` into rocprofv3's
//! files, whose waves and instruction statistics must match what the GPU executed. Also: the
//! options' checks, a missing or broken decoder (raw data kept, the application's status
//! intact), `--att` beside `--kernel-trace` and `--pmc`, and PC sampling and SPM refused on WSL2
//! with the reason. Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::*;

/// Runs `rocprof --sim ARGS -- vector-add` with a marker file the workload would never see
/// created: the refusal must come before the launch.
fn refused(tag: &str, args: &[&str]) -> String {
    let tmp = scratch("att", tag);
    let out = rocprof(&tmp)
        .arg("--sim")
        .args(args)
        .arg("-d")
        .arg(tmp.join("out"))
        .arg("--")
        .arg(workload("vector-add"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        !tmp.join("out").exists(),
        "{args:?}: nothing may be written"
    );
    assert!(record_dirs(&tmp).is_empty(), "{args:?}: nothing may be run");
    let _ = std::fs::remove_dir_all(&tmp);
    err
}

#[test]
fn pc_sampling_and_spm_are_refused_before_the_run_naming_kfd() {
    let e = refused(
        "pcs",
        &[
            "--kernel-trace",
            "--pc-sampling-beta-enabled",
            "--pc-sampling-method",
            "host_trap",
            "--pc-sampling-unit",
            "time",
            "--pc-sampling-interval",
            "0x100",
        ],
    );
    assert!(e.contains("PC sampling is not available on WSL2"), "{e}");
    assert!(e.contains("/dev/kfd") && e.contains("native Linux"), "{e}");
    let e = refused(
        "spm",
        &[
            "--kernel-trace",
            "--spm-beta-enabled",
            "--spm",
            "GRBM_COUNT",
        ],
    );
    assert!(e.contains("SPM") && e.contains("/dev/kfd"), "{e}");
}

#[test]
fn att_options_are_checked_as_rocprofv3_and_aqlprofile_check_them() {
    let e = refused("cu", &["--att", "--att-target-cu", "0x10"]);
    assert!(
        e.contains("--att-target-cu 16") && e.contains("0..=15"),
        "{e}"
    );
    let e = refused("buf", &["--att", "--att-buffer-size", "0x10000"]);
    assert!(e.contains("128 KiB"), "{e}");
    let e = refused("gfx9", &["--att", "--att-activity", "4"]);
    assert!(e.contains("gfx9"), "{e}");
    let e = refused("hex", &["--att", "--att-simd-select", "0xZ"]);
    assert!(e.contains("not an unsigned integer"), "{e}");
}

/// `vector_add`'s cost model on the simulator: 4 SALU-side and 5 VALU instructions, then
/// `s_endpgm` (docs/SIMULATOR.md, the ISA).
const VECTOR_ADD_INSTRUCTIONS: usize = 4 + 5 + 1;

/// Runs `rocprof --sim --att ARGS -- WORKLOAD` into a fresh `out/`.
fn traced(
    tag: &str,
    args: &[&str],
    workload_name: &str,
    envs: &[(&str, &str)],
) -> (PathBuf, Output) {
    let tmp = scratch("att", tag);
    let out = tmp.join("out");
    let mut c = rocprof(&tmp);
    c.arg("--sim")
        .arg("--att")
        .args(args)
        .arg("-d")
        .arg(&out)
        .args(["-o", "run", "--"]);
    c.arg(workload(workload_name));
    for (k, v) in envs {
        c.env(k, v);
    }
    (out, c.output().unwrap())
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One row of the stats CSV: strings are quoted (without escaping), numbers bare.
fn fields(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').expect("a closing quote");
            out.push(&quoted[..end]);
            rest = quoted[end + 1..].strip_prefix(',').unwrap_or("");
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = rest.get(end + 1..).unwrap_or("");
        }
    }
    out
}

/// The stats CSV's instruction rows (not the kernel's `; name` row): (vaddr, hitcount).
fn hit_rows(csv: &str) -> Vec<(u64, u64)> {
    csv.lines()
        .skip(1)
        .map(fields)
        .filter(|f| !f[2].starts_with("; "))
        .map(|f| (f[1].parse().unwrap(), f[3].parse().unwrap()))
        .collect()
}

#[test]
fn a_traced_dispatch_decodes_into_rocprofv3s_files_matching_what_the_gpu_ran() {
    // Hex accepted for every value.
    let (out, o) = traced(
        "va",
        &["--att-target-cu", "0x1", "--att-buffer-size", "0x4000000"],
        "vector-add",
        &[("WSLSIM_SEED", "3")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let names = files(&out);
    assert!(
        names.contains(&"run_2_shader_engine_0_1.att".to_owned()),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("run_gfx1150_code_object_id_") && n.ends_with(".out")),
        "{names:?}"
    );
    let ui = out.join("ui_output_agent_2_dispatch_1");
    let ui_files = files(&ui);
    for f in ["code.json", "filenames.json", "occupancy.json"] {
        assert!(ui_files.contains(&f.to_owned()), "{ui_files:?}");
    }
    // Every detail-traced wave ran the whole program once.
    let waves: Vec<&String> = ui_files
        .iter()
        .filter(|f| f.starts_with("se0_sm"))
        .collect();
    assert!(!waves.is_empty(), "{ui_files:?}");
    for w in &waves {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(ui.join(w)).unwrap()).unwrap();
        assert_eq!(json["num_insts"], VECTOR_ADD_INSTRUCTIONS, "{w}");
        assert_eq!(
            json["wave"]["instructions"].as_array().unwrap().len(),
            VECTOR_ADD_INSTRUCTIONS
        );
        assert_eq!(json["wave"]["cu"], 1, "the target CU");
    }
    // Hit counts = waves traced, for every instruction of the kernel.
    let csv = std::fs::read_to_string(out.join("stats_ui_output_agent_2_dispatch_1.csv")).unwrap();
    let rows = hit_rows(&csv);
    assert_eq!(rows.len(), VECTOR_ADD_INSTRUCTIONS, "{csv}");
    assert!(
        rows.iter().all(|&(_, hits)| hits == waves.len() as u64),
        "{csv}"
    );
    assert!(
        csv.contains("\"; vector_add(float const*, float const*, float*, unsigned long)\""),
        "{csv}"
    );
    // Occupancy holds every wave of the traced engine (detail or not).
    let occupancy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ui.join("occupancy.json")).unwrap()).unwrap();
    let events = occupancy["0"].as_array().unwrap().len();
    assert!(
        events >= 2 * waves.len(),
        "{events} occupancy events for {} waves",
        waves.len()
    );
}

#[test]
fn without_a_usable_decoder_the_run_goes_on_and_the_raw_data_is_kept() {
    // An empty directory: said before the run, naming it.
    let tmp = scratch("att", "empty-lib");
    let empty = tmp.join("nothing-here");
    std::fs::create_dir_all(&empty).unwrap();
    let (out, o) = traced(
        "nolib",
        &["--att-library-path", empty.to_str().unwrap()],
        "vector-add",
        &[],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "the application's status: {err}");
    assert!(
        err.contains("not found in") && err.contains("nothing-here"),
        "{err}"
    );
    let names = files(&out);
    assert!(
        names.iter().any(|n| n.ends_with(".att")),
        "raw data kept: {names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("ui_output")),
        "{names:?}"
    );

    // A library named like the decoder without its symbols: each missing one named.
    let fake = tmp.join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    let libm = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
    .expect("libm.so.6");
    std::fs::copy(libm, fake.join("librocprof-trace-decoder.so")).unwrap();
    let (out, o) = traced(
        "fake",
        &["--att-library-path", fake.to_str().unwrap()],
        "vector-add",
        &[],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("rocprof_trace_decoder_parse_data"), "{err}");
    assert!(files(&out).iter().any(|n| n.ends_with(".att")));

    // A decoder that fails: its status is named, the raw data kept, the status intact.
    let (out, o) = traced("fails", &[], "vector-add", &[("WSLSIM_DECODER_FAIL", "4")]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("ERROR_INVALID_SHADER_DATA") && err.contains("raw data is kept"),
        "{err}"
    );
    assert!(files(&out).iter().any(|n| n.ends_with(".att")));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn thread_trace_beside_kernel_trace_and_counters_agrees_with_them() {
    let (out, o) = traced(
        "mixed",
        &[
            "--kernel-trace",
            "--pmc",
            "SQ_WAVES",
            "--kernel-include-regex",
            "axpb",
        ],
        "reference-workload",
        &[("WSLSIM_SEED", "5")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let kernels = std::fs::read_to_string(out.join("run_kernel_trace.csv")).unwrap();
    let counters = std::fs::read_to_string(out.join("run_counter_collection.csv")).unwrap();
    // The kernel trace's dispatch ids (column Dispatch_Id) are the traced and counted ones.
    let ids: Vec<String> = kernels
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 8, "{kernels}");
    let traced_dirs: Vec<String> = files(&out)
        .into_iter()
        .filter_map(|n| {
            n.strip_prefix("ui_output_agent_2_dispatch_")
                .map(str::to_owned)
        })
        .collect();
    let mut sorted = traced_dirs.clone();
    sorted.sort_by_key(|d| d.parse::<u64>().unwrap());
    assert_eq!(
        sorted, ids,
        "every selected dispatch traced, under its kernel-trace id"
    );
    assert_eq!(
        counters.lines().count() - 1,
        8,
        "one SQ_WAVES row per dispatch: {counters}"
    );
    for id in &ids {
        assert!(
            counters.lines().any(|l| l.contains(&format!(",{id},"))),
            "dispatch {id} counted: {counters}"
        );
    }
    // Counting inside the trace window leaves the counts as the theory says (seed 5's clean
    // dispatches count the kernel's 8192 waves).
    assert!(counters.contains(",8192"), "{counters}");

    // A filter that selects nothing: the dispatches run and are traced as kernels only.
    let (out, o) = traced(
        "none",
        &["--kernel-trace", "--kernel-exclude-regex", "vector"],
        "vector-add",
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!files(&out).iter().any(|n| n.starts_with("ui_output")));
    assert!(out.join("run_kernel_trace.csv").exists());
}

#[test]
fn selected_regions_trace_only_between_resume_and_pause_and_serialize_all_is_accepted() {
    let (out, o) = traced(
        "regions",
        &[
            "--kernel-trace",
            "--selected-regions",
            "--att-serialize-all",
        ],
        "selected-regions",
        &[],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("rocprofv3 captured empty traces"),
        "no warning on the simulator: {err}"
    );
    let kernels = std::fs::read_to_string(out.join("run_kernel_trace.csv")).unwrap();
    assert_eq!(
        kernels.lines().count() - 1,
        4,
        "every launch is traced as a kernel"
    );
    let mut dispatches: Vec<String> = files(&out)
        .into_iter()
        .filter_map(|n| {
            n.strip_prefix("ui_output_agent_2_dispatch_")
                .map(str::to_owned)
        })
        .collect();
    dispatches.sort();
    assert_eq!(
        dispatches,
        ["2", "3"],
        "only the launches between resume and pause"
    );

    // Without it, every launch is.
    let (out, o) = traced("all", &[], "selected-regions", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let n = files(&out)
        .iter()
        .filter(|f| f.starts_with("ui_output_agent_"))
        .count();
    assert_eq!(n, 4);
}

#[test]
fn a_full_trace_buffer_is_said_with_the_fix_and_what_fit_is_decoded() {
    // 0x80000 bytes leave 256 KiB for the traced engine: less than vector-add's trace.
    let (out, o) = traced("full", &["--att-buffer-size", "0x80000"], "vector-add", &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("filled the buffer of shader engine 0") && err.contains("--att-buffer-size"),
        "{err}"
    );
    assert!(err.contains("Data Lost"), "the decoder's own report: {err}");
    assert!(out.join("ui_output_agent_2_dispatch_1").exists());
}

/// The begin packet writes the proof word into the control block (issue 27). A closed
/// vendor-packet gate drops it with the packets: `rocprof` says the packets did not run, with
/// `WSLKMT_VENDOR_PACKET` as the application saw it, and saves and decodes nothing (before,
/// the zeroed control block read as a full buffer of stale data). With the gate open, a trace
/// that holds no detail wave (one workgroup on WGP 0, the detail target WGP 1) ran all the
/// same: no gate explanation.
#[test]
fn a_closed_gate_is_said_per_traced_dispatch_and_an_empty_trace_that_ran_is_not_blamed() {
    let (out, o) = traced("gate", &[], "vector-add", &[("WSLKMT_VENDOR_PACKET", "0")]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "rocprof: warning: the thread-trace packets did not run on the traced dispatch \
             (dispatch 1: its control block does not hold the word the begin packet writes): \
             WSLKMT_VENDOR_PACKET was 0 in the application's environment"
        ) && err.contains("It has no thread trace; run again with WSLKMT_VENDOR_PACKET=1"),
        "{err}"
    );
    assert!(!err.contains("filled the buffer"), "{err}");
    let names = files(&out);
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".att") || n.starts_with("ui_output")),
        "nothing of a trace that did not run: {names:?}"
    );

    let tmp = scratch("att", "gate-open-empty");
    let out = tmp.join("out");
    let o = rocprof(&tmp)
        .args(["--sim", "--att", "--att-target-cu", "1", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("vector-add"))
        .args(["256", "256"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("did not run") && !err.contains("WSLKMT_VENDOR_PACKET"),
        "{err}"
    );
    let ui = files(&out.join("ui_output_agent_2_dispatch_1"));
    assert!(
        !ui.is_empty() && !ui.iter().any(|f| f.starts_with("se0_sm")),
        "decoded, with no detail wave: {ui:?}"
    );
}

/// A code object loaded after traced dispatches ran: the dispatch after it carries its load
/// marker (the trace names its PCs), although the slot it takes was built before the load.
#[test]
fn a_code_object_loaded_after_traced_dispatches_names_the_later_ones() {
    let (out, o) = traced(
        "late",
        &["--att-target-cu", "0"],
        "late-code-object",
        &[("WSLSIM_SEED", "5")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let names = files(&out);
    let objects = names
        .iter()
        .filter(|n| n.starts_with("run_gfx1150_code_object_id_") && n.ends_with(".out"))
        .count();
    assert!(objects >= 2, "{names:?}");
    for k in 1..=3 {
        assert!(
            names.contains(&format!("stats_ui_output_agent_2_dispatch_{k}.csv")),
            "{names:?}"
        );
    }
    // The raw data of each dispatch: the load markers its begin buffer wrote.
    let markers = |k: usize| -> Vec<u64> {
        let bytes = std::fs::read(out.join(format!("run_2_shader_engine_0_{k}.att"))).unwrap();
        let stream = wslsim_sqtt::parse(&bytes).unwrap();
        let mut decoder = wslsim_sqtt::marker::MarkerDecoder::new();
        let mut ids: Vec<u64> = stream
            .tokens
            .iter()
            .filter_map(|t| match *t {
                wslsim_sqtt::Token::RegWrite { register, value }
                    if register == wslsim_sqtt::USERDATA_2 =>
                {
                    decoder.feed(value).map(|m| m.id)
                }
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids
    };
    let (before, late) = (markers(1), markers(2));
    assert!(
        !before.is_empty(),
        "dispatch 1 names the code objects then loaded"
    );
    assert!(
        late.len() > before.len() && before.iter().all(|id| late.contains(id)),
        "dispatch 2 adds the late code object's marker: {before:?} then {late:?}"
    );
    assert_eq!(markers(3), late, "dispatch 3 as dispatch 2");
    // `scale` (dispatch 2) is in the code object loaded after dispatch 1 was traced.
    let csv = std::fs::read_to_string(out.join("stats_ui_output_agent_2_dispatch_2.csv")).unwrap();
    assert!(
        csv.contains("\"; scale(float const*, float*, unsigned long)\""),
        "{csv}"
    );
    let rows = hit_rows(&csv);
    assert!(
        !rows.is_empty() && rows.iter().all(|&(_, hits)| hits > 0),
        "{csv}"
    );
}
