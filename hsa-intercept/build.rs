//! Generates the API tables' entry names and layouts from the fact files in `abi/`:
//! `hsa-runtime-tables.tsv` (compiled from ROCr's headers) and `hip-table-order.txt` (the
//! HipDispatchTable order). One declarative list per table; nothing is written out by hand.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // The manifest directory of this build, read when the script runs: `env!` would fix the
    // one the script was compiled for, and cargo reuses a compiled script for a copy of the
    // package elsewhere (the bench's baselines share one target directory).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let abi = Path::new(&manifest).join("../abi");
    let tsv_path = abi.join("hsa-runtime-tables.tsv");
    let hip_path = abi.join("hip-table-order.txt");
    println!("cargo:rerun-if-changed={}", tsv_path.display());
    println!("cargo:rerun-if-changed={}", hip_path.display());
    let tsv = std::fs::read_to_string(&tsv_path).expect("abi/hsa-runtime-tables.tsv");
    let hip = std::fs::read_to_string(&hip_path).expect("abi/hip-table-order.txt");

    let mut out = String::new();
    for (table, konst) in [
        ("CoreApiTable", "HSA_CORE"),
        ("AmdExtTable", "HSA_AMD_EXT"),
        ("ImageExtTable", "HSA_IMAGE_EXT"),
        ("FinalizerExtTable", "HSA_FINALIZER_EXT"),
        ("ToolsApiTable", "HSA_TOOLS"),
    ] {
        let mut names = Vec::new();
        let mut size = 0;
        for line in tsv.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() != 4 || cols[0] != table {
                continue;
            }
            let offset: usize = cols[2].parse().expect("offset");
            match cols[1] {
                "version" => assert_eq!(offset, 0, "{table}.version"),
                "<sizeof>" => size = cols[3].parse().expect("size"),
                member => {
                    assert_eq!(
                        offset,
                        16 + 8 * names.len(),
                        "{table}.{member} is not at 16 + 8k"
                    );
                    names.push(
                        member
                            .strip_suffix("_fn")
                            .expect("member ends in _fn")
                            .to_owned(),
                    );
                }
            }
        }
        assert_eq!(size, 16 + 8 * names.len(), "sizeof({table})");
        emit(&mut out, konst, table, &names);
    }
    let hip: Vec<String> = hip
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(hip.len(), 503, "hip-table-order.txt");
    emit(&mut out, "HIP_RUNTIME", "HipDispatchTable", &hip);

    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("tables.rs");
    std::fs::write(dest, out).expect("write tables.rs");
}

/// Emits the entry names (`KONST`) and the C layout (`KONST_FIELDS`: the header member, then
/// one `<name>_fn` pointer per entry).
fn emit(out: &mut String, konst: &str, table: &str, names: &[String]) {
    let (header, header_size) = if table.starts_with("Hip") {
        ("size", 8)
    } else {
        ("version", 16)
    };
    writeln!(
        out,
        "/// Entry names of `{table}`, in table order (operation id = index)."
    )
    .unwrap();
    writeln!(out, "pub const {konst}: [&str; {}] = [", names.len()).unwrap();
    for n in names {
        writeln!(out, "    {n:?},").unwrap();
    }
    writeln!(out, "];").unwrap();
    writeln!(out, "/// Members of `{table}` as laid out in C.").unwrap();
    writeln!(
        out,
        "pub static {konst}_FIELDS: [c_layout::Field; {}] = [",
        names.len() + 1
    )
    .unwrap();
    writeln!(
        out,
        "    c_layout::Field {{ name: {header:?}, offset: 0, size: {header_size} }},"
    )
    .unwrap();
    for (k, n) in names.iter().enumerate() {
        let name = format!("{n}_fn");
        writeln!(
            out,
            "    c_layout::Field {{ name: {name:?}, offset: {}, size: 8 }},",
            header_size + 8 * k
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
}
