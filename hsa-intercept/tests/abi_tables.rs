//! Every table and struct this crate lays out matches, member by member, the layouts compiled
//! from ROCr's headers (`abi/hsa-runtime-tables.tsv`); HIP and ROCTx tables follow the
//! `size` + 8·k rule of their headers.

use c_layout::{LayoutInfo, write_tsv};

fn dump(l: &LayoutInfo) -> Vec<String> {
    let mut s = String::new();
    write_tsv(&mut s, l).unwrap();
    s.lines().map(String::from).collect()
}

#[test]
fn hsa_layouts_match_the_compiled_headers() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../abi/hsa-runtime-tables.tsv");
    let tsv = std::fs::read_to_string(path).unwrap();
    let mut checked = Vec::new();
    let all: Vec<LayoutInfo> = hsa_intercept::tables::layouts()
        .into_iter()
        .chain(hsa_intercept::hsa::layouts())
        .collect();
    for l in &all {
        let reference: Vec<String> = tsv
            .lines()
            .filter(|line| line.starts_with(&format!("{}\t", l.c_name)))
            .map(String::from)
            .collect();
        if reference.is_empty() {
            continue;
        }
        assert_eq!(dump(l), reference, "{}", l.c_name);
        checked.push(l.c_name);
    }
    for must in [
        "ApiTableVersion",
        "HsaApiTable",
        "CoreApiTable",
        "AmdExtTable",
        "ImageExtTable",
        "FinalizerExtTable",
        "ToolsApiTable",
        "hsa_kernel_dispatch_packet_t",
        "hsa_barrier_and_packet_t",
        "amd_signal_t",
        "hsa_amd_profiling_dispatch_time_t",
        "hsa_amd_profiling_async_copy_time_t",
    ] {
        assert!(checked.contains(&must), "{must} not checked");
    }
}

#[test]
fn hip_and_roctx_tables_are_size_then_pointers() {
    for l in hsa_intercept::tables::layouts() {
        if !(l.c_name.starts_with("Hip") || l.c_name.starts_with("roctx")) {
            continue;
        }
        assert_eq!(
            (l.fields[0].name, l.fields[0].offset, l.fields[0].size),
            ("size", 0, 8)
        );
        for (k, f) in l.fields[1..].iter().enumerate() {
            assert_eq!(
                (f.offset, f.size),
                (8 + 8 * k, 8),
                "{}.{}",
                l.c_name,
                f.name
            );
            assert!(f.name.ends_with("_fn"));
        }
        assert_eq!(l.size, 8 + 8 * (l.fields.len() - 1));
    }
}
