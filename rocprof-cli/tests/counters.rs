//! `rocprof avail list|info|pmc-check` and `rocprof -L` on the simulated Radeon 890M: the
//! counters its GPU model implements, in rocprofv3-avail's layout, with their dimensions, and
//! whether sets fit one pass.
//!
//! Needs the staged simulator: run through `cargo xtask test`.

mod support;
use std::path::Path;
use std::process::{Command, Output};
use support::*;

fn avail(args: &[&str], env: &[(&str, &str)]) -> Output {
    let _ = workload("reference-workload"); // the simulator is staged
    let tmp = scratch("counters", "avail");
    let mut c: Command = rocprof(&tmp);
    c.env_remove("ROCPROFILER_METRICS_PATH")
        .env_remove("COLUMNS");
    c.arg("--sim").args(args).envs(env.iter().copied());
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const BASE: [&str; 13] = [
    "SQ_WAVES",
    "SQ_WAVES_32",
    "SQ_WAVES_64",
    "SQ_LEVEL_WAVES",
    "SQ_WAVE_CYCLES",
    "SQ_BUSY_CYCLES",
    "SQ_CYCLES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
    "GRBM_COUNT",
    "GRBM_GUI_ACTIVE",
    "GRBM_CP_BUSY",
    "GRBM_SPI_BUSY",
];
const DERIVED: [&str; 6] = [
    "GPU_UTIL",
    "Wavefronts",
    "VALUInsts",
    "OccupancyPercent",
    "MeanOccupancyPerCU",
    "MeanOccupancyPerActiveCU",
];

#[test]
fn list_names_every_counter_of_the_gpu_model_and_its_derived_ones() {
    let o = avail(&["avail", "list"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "GPU                           :\t0\nName                          :\tgfx1150\n"
        ),
        "{text}"
    );
    let words: Vec<&str> = text.split_whitespace().collect();
    for name in BASE.iter().chain(&DERIVED) {
        assert!(words.contains(name), "{name} missing:\n{text}");
    }
    assert!(
        stderr(&o).contains("gfx11 family's definitions are used"),
        "the fallback is said: {}",
        stderr(&o)
    );
}

#[test]
fn info_prints_rocprofv3_avails_layout_with_dimensions() {
    let o = avail(
        &[
            "avail",
            "info",
            "--pmc",
            "SQ_WAVES",
            "GPU_UTIL",
            "GRBM_COUNT",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("GPU:0\nName:gfx1150\n"), "{text}");
    for line in [
        "Counter_Name        :\tSQ_WAVES",
        "Block               :\tSQ",
        "Dimensions          :\tDIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:3] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_SHADER_ENGINE[0:0]",
        "Counter_Name        :\tGPU_UTIL",
        "Expression          :\t100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max)",
        "Block               :\tGRBM",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?}:\n{text}");
    }
    // Exactly the three asked for.
    assert_eq!(text.matches("Counter_Name").count(), 3, "{text}");
    let o = avail(&["avail", "info", "--pmc", "NOPE"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no counter NOPE"), "{}", stderr(&o));
}

#[test]
fn the_json_form_carries_kinds_events_and_dimensions() {
    let o = avail(&["avail", "info", "--pmc", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let counters = doc["gpus"][0]["counters"].as_array().unwrap();
    let find = |n: &str| counters.iter().find(|c| c["name"] == n).unwrap().clone();
    let waves = find("SQ_WAVES");
    assert_eq!(waves["kind"], "base");
    assert_eq!(waves["block"], "SQ");
    assert_eq!(waves["event"], 4);
    assert_eq!(waves["dimensions"].as_array().unwrap().len(), 4);
    assert_eq!(find("GRBM_GUI_ACTIVE")["event"], 2);
    assert_eq!(find("GPU_UTIL")["kind"], "derived");
    assert_eq!(find("simd_count")["value"], 32.0);
    assert_eq!(find("CU_NUM")["expression"], "simd_count/simd_per_cu");
    assert_eq!(doc["gpus"][0]["family_fallback"], true);
}

#[test]
fn pmc_check_says_whether_a_set_fits_one_pass_and_how_to_split_it() {
    let o = avail(
        &[
            "avail",
            "pmc-check",
            "SQ_WAVES",
            "SQ_BUSY_CYCLES",
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE:device=0",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "Following input counters can be collected together on GPU:0\tSQ_WAVES\tSQ_BUSY_CYCLES\tGRBM_COUNT\tGRBM_GUI_ACTIVE\n"
    );
    // Three GRBM counters need two passes; a derived counter brings its inputs.
    let o = avail(&["avail", "pmc-check", "GPU_UTIL", "GRBM_CP_BUSY"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(text.contains("cannot be collected together"), "{text}");
    assert!(text.contains("GRBM has 2 counter slots"), "{text}");
    assert!(
        text.contains("2 passes") && text.contains("pass 2: GRBM_CP_BUSY"),
        "{text}"
    );
    let o = avail(&["avail", "pmc-check", "SQ_WAVES:device=7"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no GPU 7"), "{}", stderr(&o));
}

#[test]
fn list_agent_and_dash_l_work_as_rocprofv3s() {
    let o = avail(&["avail", "list", "--agent"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("cu_count                      :\t16"),
        "{text}"
    );
    assert!(
        text.contains("name                          :\tgfx1150"),
        "{text}"
    );
    let o = avail(&["-L"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Counter_Name        :\tSQ_WAVES"),
        "{}",
        stdout(&o)
    );
    let o = avail(&["avail", "-d", "3", "list"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_upstream_file_resolves_gfx1150_through_its_family() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/counter_defs.yaml");
    if !file.exists() {
        eprintln!(
            "SKIPPED: upstream counter_defs.yaml not found; expected it at {}",
            file.display()
        );
        return;
    }
    let path = file.to_string_lossy().into_owned();
    let o = avail(&["avail", "list"], &[("ROCPROFILER_METRICS_PATH", &path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for name in [
        "SQ_WAVES",
        "GRBM_GUI_ACTIVE",
        "LDSBankConflict",
        "SQC_LDS_BANK_CONFLICT",
    ] {
        assert!(
            text.split_whitespace().any(|w| w == name),
            "{name}:\n{text}"
        );
    }
    assert!(
        stderr(&o).contains("counter_defs.yaml has no gfx1150 entries"),
        "{}",
        stderr(&o)
    );
    // Counters of blocks this build cannot program are listed, but not collectable.
    let o = avail(
        &["avail", "pmc-check", "SQ_WAVES", "GRBM_COUNT"],
        &[("ROCPROFILER_METRICS_PATH", &path)],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}
