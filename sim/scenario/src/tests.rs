use std::path::PathBuf;

use super::*;

fn parse(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|error| panic!("{error}\n--- in ---\n{text}"))
}

fn parse_err(text: &str) -> String {
    match Scenario::from_toml_str(text) {
        Ok(scenario) => panic!("accepted: {scenario:?}"),
        Err(error) => error,
    }
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wslsim-scenario-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn empty_text_is_the_default_890m() {
    let scenario = parse("");
    assert_eq!(scenario, Scenario::default());
    assert_eq!(scenario.machine, Machine::Radeon890m);
    assert_eq!(scenario.adapters.len(), 1);
    assert_eq!(scenario.nodes.len(), 1);
    assert_eq!(scenario.num_kmt_nodes(), 2);
    let adapter = &scenario.adapters[0];
    let node = &scenario.nodes[0];
    assert_eq!(adapter.luid, node.luid);
    assert_eq!(
        adapter.luid,
        Luid {
            low: 0x0001_D3A5,
            high: 0
        }
    );
    assert_eq!(adapter.device_id, u32::from(node.device_id));
    assert_eq!(node.device_id, 0x150E);
    assert_eq!(node.simd_count, 32);
    assert_eq!(node.wallclock_khz, 100_000);
    assert_eq!(node.amd_name, "gfx1150");
    assert_eq!(scenario.cpu.cores, 24);
    assert_eq!(scenario.thunk.layout, 396);
    assert_eq!(scenario.thunk.abi_check, AbiCheck::Strict);
    assert_eq!(scenario.thunk.write_size, WriteSize::Layout);
    // The node's LocationId is the adapter's bus/device/function.
    assert_eq!(
        node.location_id,
        (adapter.bus << 8) | (adapter.device << 3) | adapter.function
    );
}

#[test]
fn empty_machine_keeps_the_cpu_only() {
    let scenario = parse(r#"machine = "empty""#);
    assert_eq!(scenario.machine, Machine::Empty);
    assert!(scenario.adapters.is_empty());
    assert!(scenario.nodes.is_empty());
    assert_eq!(scenario.num_kmt_nodes(), 1);
    assert_eq!(scenario, Scenario::empty());
    assert!(scenario.gpu_node(0).is_none());
    assert!(scenario.gpu_node(1).is_none());
}

#[test]
fn overrides_start_from_the_890m_entries() {
    let scenario = parse(
        r#"
        seed = 7
        [cpu]
        cores = 8
        [thunk]
        layout = 376
        abi_check = "lenient"
        write_size = "negotiated"
        hidden_exports = ["hsaKmtCloseKFD"]
        kfd_already_open = true
        open_status = 0
        node_status = { "2" = 1, " 3 " = 5 }
        handle_import_desc_size = 0x40
        [dxcore]
        enum_status = 0xC0000001
        hidden_exports = ["D3DKMTCloseAdapter"]
        [[adapters]]
        luid = [0x10, -1]
        device_id = 0x7480
        compute_only = true
        fail_queries = ["registry", "segment-size"]
        [[adapters]]
        [[nodes]]
        luid = [0, 0]
        device_id = 0x7480
        engine_id = "11.0.0"
        override_engine_id = "9.0.10"
        unique_id = 0x7FFFFFFFFFFFFFFF
        "#,
    );
    assert_eq!(scenario.seed, 7);
    assert!(scenario.seed_given);
    assert_eq!(scenario.cpu.cores, 8);
    assert_eq!(scenario.cpu.name, Cpu::radeon_890m_host().name);
    assert_eq!(scenario.thunk.layout, 376);
    assert_eq!(scenario.thunk.abi_check, AbiCheck::Lenient);
    assert_eq!(scenario.thunk.write_size, WriteSize::Negotiated);
    assert_eq!(scenario.thunk.hidden_exports, ["hsaKmtCloseKFD"]);
    assert!(scenario.thunk.kfd_already_open);
    assert_eq!(
        scenario.thunk.node_status.iter().collect::<Vec<_>>(),
        [(&2, &1), (&3, &5)]
    );
    assert_eq!(scenario.thunk.handle_import_desc_size, 0x40);
    assert_eq!(scenario.dxcore.enum_status, 0xC000_0001);
    assert_eq!(scenario.dxcore.hidden_exports, ["D3DKMTCloseAdapter"]);

    assert_eq!(scenario.adapters.len(), 2);
    let first = &scenario.adapters[0];
    assert_eq!(
        first.luid,
        Luid {
            low: 0x10,
            high: -1
        }
    );
    assert_eq!(first.device_id, 0x7480);
    assert!(first.compute_only);
    assert_eq!(
        first.fail_queries,
        [AdapterQuery::Registry, AdapterQuery::SegmentSize]
    );
    assert_eq!(first.vendor_id, 0x1002, "unnamed keys keep the 890M value");
    assert_eq!(scenario.adapters[1], Adapter::radeon_890m());

    assert_eq!(scenario.nodes.len(), 1);
    let node = &scenario.nodes[0];
    assert_eq!(node.luid, Luid::NONE);
    assert_eq!(node.device_id, 0x7480);
    assert_eq!(
        node.engine_id,
        EngineId {
            major: 11,
            minor: 0,
            stepping: 0,
            ucode: 42
        },
        "engine_id keeps the preset uCode"
    );
    assert_eq!(
        node.override_engine_id,
        EngineId {
            major: 9,
            minor: 0,
            stepping: 10,
            ucode: 0
        }
    );
    assert_eq!(node.unique_id, 0x7FFF_FFFF_FFFF_FFFF);
    assert_eq!(node.simd_count, 32);
}

#[test]
fn empty_machine_with_explicit_lists() {
    let scenario = parse(
        r#"
        machine = "empty"
        [[nodes]]
        [[nodes]]
        kfd_gpu_id = 2
        "#,
    );
    assert!(scenario.adapters.is_empty());
    assert_eq!(scenario.nodes.len(), 2);
    assert_eq!(scenario.gpu_node(2).unwrap().kfd_gpu_id, 2);
    assert_eq!(scenario.num_kmt_nodes(), 3);
}

#[test]
fn hex_literals_are_accepted_everywhere_integers_are() {
    let scenario = parse(
        r#"
        seed = 0xFF
        [[nodes]]
        vendor_id = 0x1002
        location_id = 0xC500
        engine_ucode = 0x3FF
        capability = 0xDEADBEEF
        "#,
    );
    assert_eq!(scenario.seed, 255);
    assert_eq!(scenario.nodes[0].capability, 0xDEAD_BEEF);
    assert_eq!(scenario.nodes[0].engine_id.ucode, 0x3FF);
}

#[test]
fn unknown_keys_are_rejected() {
    for (text, key) in [
        ("sede = 1", "sede"),
        ("[thunk]\nlyout = 376", "lyout"),
        ("[cpu]\nthreads = 2", "threads"),
        ("[dxcore]\nenum = 1", "enum"),
        ("[[adapters]]\nvendor = 1", "vendor"),
        ("[[nodes]]\nsimds = 1", "simds"),
        ("[gpu]\nx = 1", "x"),
        ("[runtime]\ngen = 1", "gen"),
        ("[nonsense]\nx = 1", "nonsense"),
    ] {
        let error = parse_err(text);
        assert!(
            error.contains(&format!("unknown field `{key}`")),
            "{text:?}: {error}"
        );
        assert!(!error.contains('\n'), "one line: {error}");
        assert!(error.starts_with("line "), "{error}");
    }
}

#[test]
fn bad_values_are_rejected() {
    for (text, needle) in [
        ("[thunk]\nlayout = 380", "thunk.layout = 380"),
        ("[thunk]\nlayout = 398", "thunk.layout = 398"),
        ("[thunk]\nlayout = 70000", "thunk.layout = 70000"),
        ("[thunk]\nabi_check = \"loose\"", "unknown variant `loose`"),
        ("[thunk]\nwrite_size = \"all\"", "unknown variant `all`"),
        ("machine = \"mi300\"", "unknown variant `mi300`"),
        ("[thunk]\nnode_status = { one = 1 }", "key `one`"),
        ("[[adapters]]\nvendor_id = -1", "line 2"),
        (
            "[[adapters]]\nfail_queries = [\"bios\"]",
            "unknown variant `bios`",
        ),
        ("[[nodes]]\nengine_id = \"11.5\"", "nodes[0].engine_id"),
        ("[[nodes]]\nengine_id = \"64.0.0\"", "major 64"),
        (
            "[[nodes]]\nengine_ucode = 1024",
            "nodes[0].engine_ucode = 1024",
        ),
        ("[[nodes]]\nsdma_ucode = 1024", "nodes[0].sdma_ucode = 1024"),
        ("[[nodes]]\nvendor_id = 0x10000", "line 2"),
        ("[[nodes]]\nluid = [1]", "line 2"),
        ("seed = \"zero\"", "line 1"),
    ] {
        let error = parse_err(text);
        assert!(error.contains(needle), "{text:?}: {error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }
    let long_name = format!("[[nodes]]\namd_name = \"{}\"", "x".repeat(64));
    assert!(parse_err(&long_name).contains("nodes[0].amd_name is 64 bytes"));
    let long_name = format!("[[nodes]]\nmarketing_name = \"{}\"", "\u{1F600}".repeat(32));
    assert!(parse_err(&long_name).contains("nodes[0].marketing_name is 64 UTF-16 units"));
    let long_name = format!("[[adapters]]\nbios = \"{}\"", "b".repeat(260));
    assert!(parse_err(&long_name).contains("adapters[0].bios has 260 characters"));
    // Newer hypothetical layouts: multiples of 4 above 396.
    assert_eq!(parse("[thunk]\nlayout = 400").thunk.layout, 400);
    assert_eq!(parse("[thunk]\nlayout = 1024").thunk.layout, 1024);
}

#[test]
fn engine_id_packs_its_bit_fields() {
    let id = EngineId {
        major: 11,
        minor: 5,
        stepping: 0,
        ucode: 42,
    };
    assert_eq!(id.to_bits(), 42 | (11 << 10) | (5 << 16));
    let gfx90a = EngineId::parse_version("9.0.10").unwrap();
    assert_eq!(gfx90a.to_bits(), (9 << 10) | (10 << 24));
}

#[test]
fn no_path_gives_the_default_without_a_message() {
    assert_eq!(
        load(None),
        Loaded {
            scenario: Scenario::default(),
            diagnostic: None
        }
    );
    assert_eq!(load(Some(Path::new(""))).scenario, Scenario::default());
}

#[test]
fn unusable_files_give_the_empty_machine_and_one_line() {
    let bad = temp_file(
        "bad.toml",
        "[thunk]\nlayout = 376\nabi_check = \"strict\"\ntypo = 1\n",
    );
    let loaded = load(Some(&bad));
    assert_eq!(loaded.scenario, Scenario::empty());
    let line = loaded.diagnostic.unwrap();
    assert_eq!(
        line,
        format!(
            "wslsim: cannot use scenario {}: line 4, column 1: unknown field `typo`, expected one of `layout`, `abi_check`, `write_size`, `hidden_exports`, `kfd_already_open`, `open_status`, `acquire_status`, `release_status`, `close_status`, `node_status`, `handle_import_desc_size`, `snapshot_refcount`, `path`, `copies`",
            bad.display()
        )
    );

    let missing = bad.with_file_name("does-not-exist.toml");
    let loaded = load(Some(&missing));
    assert_eq!(loaded.scenario, Scenario::empty());
    let line = loaded.diagnostic.unwrap();
    assert!(
        line.starts_with(&format!(
            "wslsim: cannot use scenario {}: ",
            missing.display()
        )),
        "{line}"
    );
    assert!(!line.contains('\n'));

    let good = temp_file("good.toml", "[cpu]\ncores = 2\n");
    let loaded = load(Some(&good));
    assert_eq!(loaded.diagnostic, None);
    assert_eq!(loaded.scenario.cpu.cores, 2);
}

/// The TOML examples in sim/README.md parse, so the documentation cannot drift from the schema.
#[test]
fn readme_examples_parse() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let blocks: Vec<&str> = text
        .split("```toml\n")
        .skip(1)
        .map(|block| &block[..block.find("```").expect("closed block")])
        .collect();
    assert!(blocks.len() >= 2, "README has its ```toml examples");
    // The first example spells out every key with its default value.
    assert_eq!(parse(blocks[0]), Scenario::default());
    for block in &blocks[1..] {
        parse(block);
    }
}

#[test]
fn call_log_lines_stay_whole_under_concurrency() {
    let path = temp_file("calls.log", "");
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                for line in 0..200 {
                    let text = format!("rocdxg writer={writer} line={line} {}", "x".repeat(300));
                    append_line(&path, &text);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 800);
    assert!(text.ends_with('\n'));
    for line in lines {
        assert!(line.starts_with("rocdxg writer="), "{line:?}");
        assert!(line.ends_with(&"x".repeat(300)), "{line:?}");
    }
}

#[test]
fn ntstatus_formatting() {
    assert_eq!(ntstatus(0).to_string(), "0x00000000");
    assert_eq!(
        ntstatus(0xC000_000D_u32.cast_signed()).to_string(),
        "0xC000000D"
    );
}

#[test]
fn a_seed_is_given_only_when_the_file_names_one() {
    assert!(!parse("").seed_given);
    assert!(!Scenario::default().seed_given);
    let scenario = parse("seed = 0");
    assert_eq!((scenario.seed, scenario.seed_given), (0, true));
}

#[test]
fn contamination_and_drift_keys_parse_and_are_checked() {
    let scenario = parse(
        "[counters]\ncontamination_rate_exponent = 1.5\ncontamination_size_exponent = 0\n\
         grbm_zero_peak_probability = 0.2\ngrbm_drift_minutes = 0\n",
    );
    assert_eq!(scenario.counters.contamination_rate_exponent, 1.5);
    assert_eq!(scenario.counters.contamination_size_exponent, 0.0);
    assert_eq!(scenario.counters.grbm_zero_peak_probability, 0.2);
    assert_eq!(scenario.counters.grbm_drift_minutes, 0.0);
    assert!(parse_err("[counters]\ngrbm_zero_peak_probability = 1.5\n").contains("line 2"));
    assert!(parse_err("[counters]\ngrbm_drift_minutes = -1.0\n").contains("line 2"));
    assert!(parse_err("[counters]\ncontamination_rate_exponent = -1.0\n").contains("line 2"));
}

#[test]
fn thunk_copies_start_from_the_files_thunk_and_match_by_path_suffix() {
    let scenario = parse(
        "[thunk]\nlayout = 396\nabi_check = \"absent\"\nsnapshot_refcount = false\n\n\
         [[thunk.copies]]\npath = \"/opt/rocm-7.2.0/lib/librocdxg.so\"\nlayout = 376\n\
         abi_check = \"strict\"\n\n\
         [[thunk.copies]]\npath = \"librocdxg.so.1.2.0\"\nhidden_exports = [\"hsaKmtCloseKFD\"]\n",
    );
    let thunk = &scenario.thunk;
    assert!(!thunk.snapshot_refcount);
    assert_eq!(thunk.copies.len(), 2);
    let (stock, index) = thunk.for_copy(Some("/opt/rocm-7.2.0/lib/librocdxg.so"));
    assert_eq!(index, Some(0));
    assert_eq!((stock.layout, stock.abi_check), (376, AbiCheck::Strict));
    // Keys the entry does not name come from the file's [thunk].
    assert!(!stock.snapshot_refcount);
    assert!(stock.copies.is_empty());
    let (other, index) = thunk.for_copy(Some("/home/me/build/librocdxg.so.1.2.0"));
    assert_eq!(index, Some(1));
    assert_eq!((other.layout, other.abi_check), (396, AbiCheck::Absent));
    assert_eq!(other.hidden_exports, vec!["hsaKmtCloseKFD".to_owned()]);
    let (own, index) = thunk.for_copy(Some("/somewhere/else/librocdxg.so"));
    assert_eq!(index, None);
    assert_eq!((own.layout, own.abi_check), (396, AbiCheck::Absent));
    assert!(own.copies.is_empty());
    assert_eq!(thunk.for_copy(None).1, None);
    assert!(Scenario::default().thunk.snapshot_refcount);
}

#[test]
fn thunk_copies_are_checked() {
    assert!(parse_err("[thunk]\npath = \"x\"\n").contains("only a [[thunk.copies]] entry"));
    assert!(parse_err("[[thunk.copies]]\nlayout = 376\n").contains("`path`"));
    assert!(
        parse_err("[[thunk.copies]]\npath = \"a\"\nlayout = 377\n").contains("thunk.copies[0]")
    );
    assert!(
        parse_err("[[thunk.copies]]\npath = \"a\"\n[[thunk.copies.copies]]\npath = \"b\"\n")
            .contains("cannot have copies")
    );
}

#[test]
fn kernel_duration_factors_by_mangled_or_plain_name() {
    let scenario = parse("[kernel_duration]\naxpb = 1.2\n\"_Z5scalePfm\" = 0.5\n");
    assert_eq!(scenario.kernel_duration_factor("_Z4axpbPKfPfm"), 1.2);
    assert_eq!(
        scenario.kernel_duration_factor("axpb(float const*, float*, unsigned long)"),
        1.2
    );
    assert_eq!(scenario.kernel_duration_factor("axpb"), 1.2);
    assert_eq!(scenario.kernel_duration_factor("_Z5scalePfm"), 0.5);
    assert_eq!(scenario.kernel_duration_factor("_Z10deep_scalePfm"), 1.0);
    assert_eq!(scenario.kernel_duration_factor("_Zgarbage"), 1.0);
    assert_eq!(Scenario::default().kernel_duration_factor("axpb"), 1.0);
    for bad in ["0", "-1.0", "nan", "inf", "1e6"] {
        let err = parse_err(&format!("[kernel_duration]\naxpb = {bad}\n"));
        assert!(err.contains("kernel_duration.axpb"), "{bad}: {err}");
    }
}
