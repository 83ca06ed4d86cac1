//! `abi/api-signatures.tsv` is what `cargo xtask api-signatures` makes of rocprofiler-sdk's
//! headers today: regenerated in memory from the upstream mirror and compared (skipped, saying
//! so, where the mirror is absent).

use std::path::PathBuf;
use std::process::Command;

fn mirror() -> PathBuf {
    std::env::var_os("ROCPROF_UPSTREAM_MIRROR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.mirror/ROCm+rocm-systems/repo"),
        PathBuf::from,
    )
}

#[test]
fn the_table_matches_the_headers() {
    let mirror = mirror();
    let mut texts = Vec::new();
    for (_, path) in api_signatures::header::SOURCES {
        let out = Command::new("git")
            .arg("-C")
            .arg(&mirror)
            .args(["show", &format!("HEAD:{path}")])
            .output();
        match out {
            Ok(o) if o.status.success() => texts.push(String::from_utf8(o.stdout).unwrap()),
            _ => {
                eprintln!(
                    "skipped: {path} is not readable in {} (set ROCPROF_UPSTREAM_MIRROR)",
                    mirror.display()
                );
                return;
            }
        }
    }
    let fresh = api_signatures::header::tsv([&texts[0], &texts[1], &texts[2]]).unwrap();
    let checked_in = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../abi/api-signatures.tsv"),
    )
    .unwrap();
    assert!(
        fresh == checked_in,
        "abi/api-signatures.tsv is stale: run `cargo xtask api-signatures`"
    );
}

#[test]
fn every_traced_hip_and_roctx_entry_known_upstream_has_a_signature() {
    // The table-order file names every HipDispatchTable entry; upstream's iteration knows all
    // but the entries it leaves without arguments (those still have a line in the table).
    let order = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../abi/hip-table-order.txt"),
    )
    .unwrap();
    let known = order
        .lines()
        .filter(|l| api_signatures::signature(l.trim()).is_some())
        .count();
    assert!(
        known >= 450,
        "only {known} of the HIP table's entries have a signature"
    );
    for f in [
        "roctxMarkA",
        "roctxRangePushA",
        "roctxRangePop",
        "roctxRangeStop",
    ] {
        assert!(api_signatures::signature(f).is_some(), "{f}");
    }
}
