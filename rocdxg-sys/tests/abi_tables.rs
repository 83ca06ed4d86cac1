//! Every `HsaNodeProperties` layout and `HsaSystemProperties` match, member by member, the
//! tables compiled from the real headers (`abi/*.tsv`). Sizes and offsets are also asserted at
//! compile time; this test additionally catches a member missing from either side.

use c_layout::LayoutInfo;

fn reference(size: usize, c_name: &str) -> Vec<String> {
    let path = format!(
        "{}/../abi/HsaNodeProperties_{size}.tsv",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| l.starts_with(&format!("{c_name}\t")))
        .map(String::from)
        .collect()
}

fn dump(layout: &LayoutInfo) -> Vec<String> {
    let mut s = String::new();
    c_layout::write_tsv(&mut s, layout).unwrap();
    s.lines().map(String::from).collect()
}

#[test]
fn node_properties_match_the_compiled_headers() {
    let layouts = rocdxg_sys::layouts();
    for size in rocdxg_sys::KNOWN_NODE_PROPERTIES_SIZES {
        let ours = layouts
            .iter()
            .find(|l| l.c_name == "HsaNodeProperties" && l.size == size)
            .unwrap_or_else(|| panic!("no {size}-byte HsaNodeProperties"));
        assert_eq!(
            dump(ours),
            reference(size, "HsaNodeProperties"),
            "{}",
            ours.rust_name
        );
    }
}

#[test]
fn system_properties_match_the_compiled_header() {
    let ours = rocdxg_sys::layouts()
        .into_iter()
        .find(|l| l.c_name == "HsaSystemProperties")
        .unwrap();
    assert_eq!(dump(&ours), reference(368, "HsaSystemProperties"));
}
