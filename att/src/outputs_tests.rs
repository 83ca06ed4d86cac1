//! Tests of the output rules and exact file contents.

use super::*;
use crate::abi::category;
use crate::codeobj::{CodeObject, DisassembledInstruction, KernelSymbol};
use crate::decode::{Inst, Occupancy, WaveState};
use proptest::prelude::*;

fn pc(addr: u64, marker_id: u64) -> Pc {
    Pc { addr, marker_id }
}

fn inst(pc: Pc, time: i64, duration: i32, stall: u32, category: u8) -> Inst {
    Inst {
        category,
        stall,
        duration,
        time,
        pc,
    }
}

fn states(list: &[(i32, i32)]) -> Vec<WaveState> {
    list.iter()
        .map(|&(kind, duration)| WaveState { kind, duration })
        .collect()
}

fn wave(simd: u8, slot: u8, begin: i64, end: i64) -> Wave {
    Wave {
        cu: 3,
        simd,
        slot,
        contexts: 0,
        begin_time: begin,
        end_time: end,
        timeline: Vec::new(),
        instructions: Vec::new(),
    }
}

fn identity(pc: Pc) -> Option<(u64, u64)> {
    (pc.marker_id != 9).then_some((pc.marker_id, pc.addr))
}

// ---- statistics ----

#[test]
fn idle_uses_prev_and_null_pcs_do_not_move_it() {
    let mut w = wave(0, 0, 100, 200);
    let a = pc(0x100, 1);
    let b = pc(0x104, 1);
    w.instructions = vec![
        inst(a, 110, 5, 1, category::SALU), // idle 10, prev 115
        inst(Pc::default(), 200, 50, 9, category::VALU), // skipped, prev stays 115
        inst(b, 112, 2, 0, category::VALU), // idle 0 (112 < 115), prev 115
        inst(a, 120, 10, 2, category::SALU), // idle 5, prev 130
        inst(pc(0x8, 9), 140, 10, 0, category::SALU), // unresolved, prev 150
        inst(b, 151, 1, 4, category::VALU), // idle 1, prev 152
    ];
    let mut s = Stats::new();
    s.add_wave(&w, identity);
    assert_eq!(
        s.per_instruction[&(1, 0x100)],
        InstStats {
            hitcount: 2,
            latency: 15,
            stall: 3,
            idle: 15
        }
    );
    assert_eq!(
        s.per_instruction[&(1, 0x104)],
        InstStats {
            hitcount: 2,
            latency: 3,
            stall: 4,
            idle: 1
        }
    );
    assert_eq!(s.unstitched, 1);
    assert_eq!(s.unresolved, 1);
    assert_eq!(s.first_touch, [(1, 0x100), (1, 0x104)]);
}

#[test]
fn null_pc_first_leaves_prev_at_begin() {
    let mut w = wave(0, 0, 100, 200);
    w.instructions = vec![
        inst(Pc::default(), 90, 500, 0, 0),
        inst(pc(4, 1), 130, 1, 0, 0),
    ];
    let mut s = Stats::new();
    s.add_wave(&w, identity);
    assert_eq!(
        s.per_instruction[&(1, 4)].idle,
        30,
        "prev is still the begin time"
    );
}

#[test]
fn hitcount_equals_number_of_waves_traced() {
    let mut s = Stats::new();
    for i in 0..7 {
        let mut w = wave(0, i, 0, 10);
        w.instructions = vec![inst(pc(0x10, 2), 1, 1, 0, 0)];
        s.add_wave(&w, identity);
    }
    assert_eq!(s.per_instruction[&(2, 0x10)].hitcount, 7);
    assert_eq!(s.total_hits(), 7);
}

#[test]
fn negative_gaps_and_extremes_saturate() {
    let mut w = wave(0, 0, i64::MAX - 1, i64::MAX);
    w.instructions = vec![
        inst(pc(1, 1), i64::MIN, i32::MIN, 0, 0),
        inst(pc(1, 1), i64::MAX, i32::MAX, 0xff_ffff, 0),
    ];
    let mut s = Stats::new();
    s.add_wave(&w, identity);
    let st = s.per_instruction[&(1, 1)];
    assert_eq!(st.hitcount, 2);
    assert_eq!(st.idle, 1);
    assert!(st.idle >= 0);
}

// ---- wave naming and skipping ----

#[test]
fn wave_numbers_count_per_simd_and_slot_and_skip_empty_waves() {
    let mut namer = WaveNamer::new(2);
    let mut with_inst = wave(1, 3, 0, 1);
    with_inst.instructions = vec![inst(pc(0, 1), 0, 0, 0, 0)];
    let mut long_timeline = wave(1, 3, 0, 1);
    long_timeline.timeline = states(&[(1, 1), (2, 1), (1, 1)]);
    let mut short_timeline = wave(1, 3, 0, 1);
    short_timeline.timeline = states(&[(1, 1), (2, 1)]);
    let empty = wave(1, 3, 0, 1);
    let mut other_slot = wave(1, 4, 0, 1);
    other_slot.instructions = with_inst.instructions.clone();

    assert_eq!(
        namer.assign(&with_inst),
        Some((0, "se2_sm1_sl3_wv0.json".into()))
    );
    assert_eq!(
        namer.assign(&short_timeline),
        None,
        "2 timeline entries, no instructions"
    );
    assert_eq!(namer.assign(&empty), None);
    assert_eq!(
        namer.assign(&long_timeline),
        Some((1, "se2_sm1_sl3_wv1.json".into())),
        "skipped waves do not use a number"
    );
    assert_eq!(
        namer.assign(&other_slot),
        Some((0, "se2_sm1_sl4_wv0.json".into()))
    );
    assert_eq!(
        WaveNamer::new(0).assign(&with_inst),
        Some((0, "se0_sm1_sl3_wv0.json".into())),
        "numbers restart per SE"
    );
}

// ---- wave-state sweep ----

#[test]
fn wstates_sweep_merges_equal_times_and_omits_absent_states() {
    let mut sweep = WstatesSweep::new();
    let mut a = wave(0, 0, 100, 130);
    a.timeline = states(&[(2, 10), (3, 5), (2, 15)]);
    let mut b = wave(0, 1, 110, 130);
    b.timeline = states(&[(2, 5), (4, 0), (9, 3), (2, 2)]);
    sweep.add_wave(&a);
    sweep.add_wave(&b);
    let out = sweep.finish();
    assert!(out[0].is_none() && out[1].is_none(), "never occurred");
    // State 2: a [100,110) [115,130); b [110,115) [118,120) (the unknown kind 9 still
    // advances time).
    assert_eq!(
        out[2],
        Some(Sweep {
            time: vec![100, 110, 115, 118, 120, 130],
            state: vec![1, 1, 1, 2, 1, 0],
        })
    );
    assert_eq!(
        out[3],
        Some(Sweep {
            time: vec![110, 115],
            state: vec![1, 0]
        })
    );
    // A zero-length segment still makes the state "occur".
    assert_eq!(
        out[4],
        Some(Sweep {
            time: vec![115],
            state: vec![0]
        })
    );
    assert_eq!(
        serde_json::to_string(&wstates_json(3, out[3].as_ref().unwrap())).unwrap(),
        r#"{"name":"wstates3.json","state":[1,0],"time":[110,115]}"#
    );
}

// ---- file names ----

#[test]
fn raw_file_names_round_trip() {
    let name = se_stream_file_name("run_7", 47831, 3, 14);
    assert_eq!(name, "run_7_47831_shader_engine_3_14.att");
    assert_eq!(
        parse_se_stream_file_name(&name),
        Some(SeStreamFile {
            prefix: "run_7".into(),
            agent_handle: 47831,
            se: 3,
            dispatch_id: 14
        })
    );
    assert_eq!(parse_se_stream_file_name("x_1_shader_engine_a_2.att"), None);
    assert_eq!(parse_se_stream_file_name("x_1_shader_engine_0_2.out"), None);
    assert_eq!(parse_se_stream_file_name("garbage.att"), None);
    assert_eq!(
        code_object_file_name("run", "gfx1100", 5),
        "run_gfx1100_code_object_id_5.out"
    );
    assert_eq!(dispatch_dir_name(9, 2), "ui_output_agent_9_dispatch_2");
    assert_eq!(
        stats_csv_file_name(9, 2),
        "stats_ui_output_agent_9_dispatch_2.csv"
    );
}

// ---- a whole hand-made dispatch ----

fn table() -> CodeObjectTable {
    let mut t = CodeObjectTable::new();
    t.insert(CodeObject {
        id: 1,
        load_base: 0x1000_0000,
        load_size: 0x1000,
        file: PathBuf::from("run_gfx1100_code_object_id_1.out"),
        kernels: vec![
            KernelSymbol {
                name: "_Z3addv".into(),
                demangled: "add()".into(),
                vaddr: 0x100..0x110,
            },
            KernelSymbol {
                name: "_Z3subv".into(),
                demangled: "sub()".into(),
                vaddr: 0x200..0x208,
            },
        ],
    });
    t
}

fn dispatch() -> DispatchTrace {
    let a = pc(0x100, 1);
    let b = pc(0x104, 1);
    let c = pc(0x200, 1);
    let mut w0 = wave(0, 1, 100, 130);
    w0.timeline = states(&[(2, 10), (3, 5), (2, 15)]);
    w0.instructions = vec![
        inst(a, 100, 4, 2, category::SALU),
        inst(b, 106, 3, 1, category::VALU),
        inst(pc(0x1000_0100, 0), 110, 1, 0, category::SALU), // raw address of `a`
    ];
    let mut w1 = wave(0, 1, 150, 160);
    w1.timeline = states(&[(1, 5), (2, 5)]); // skipped
    let mut w2 = wave(0, 1, 200, 210);
    w2.timeline = states(&[(2, 10)]);
    w2.instructions = vec![inst(c, 205, 5, 0, category::SMEM)];
    let mut w3 = wave(1, 0, 50, 60);
    w3.instructions = vec![inst(b, 55, 2, 3, category::VALU)];

    let se0 = Decoded {
        gfxip: Some(11),
        waves: vec![w0, w1, w2],
        ..Decoded::default()
    };
    let se1 = Decoded {
        waves: vec![w3],
        occupancy: vec![
            Occupancy {
                pc: a,
                time: 40,
                cu: 3,
                simd: 1,
                slot: 0,
                start: true,
            },
            Occupancy {
                pc: a,
                time: 60,
                cu: 3,
                simd: 1,
                slot: 0,
                start: false,
            },
        ],
        ..Decoded::default()
    };
    DispatchTrace {
        agent_handle: 7,
        dispatch_id: 1,
        // Deliberately out of order: SE 0 must still come first.
        shader_engines: vec![
            ShaderEngineTrace {
                se: 1,
                decoded: se1,
            },
            ShaderEngineTrace {
                se: 0,
                decoded: se0,
            },
        ],
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn stats_csv_exact_text() {
    let out = tempfile::tempdir().unwrap();
    let mut writer = AttWriter::new(out.path(), OutputOptions::default());
    let summary = writer.write_dispatch(&dispatch(), &table(), None).unwrap();
    let csv_path = out.path().join("stats_ui_output_agent_7_dispatch_1.csv");
    assert_eq!(summary.stats_csv.as_deref(), Some(csv_path.as_path()));
    assert_eq!(
        read(&csv_path),
        concat!(
            "\"CodeObj\",\"Vaddr\",\"Instruction\",\"Hitcount\",\"Latency\",\"Stall\",\"Idle\",\"Source\"\n",
            "1,256,\"; _Z3addv\",0,0,0,0,\"add()\"\n",
            "1,256,\"s_unknown ; vaddr 0x100\",2,5,2,1,\"\"\n",
            "1,260,\"s_unknown ; vaddr 0x104\",2,5,4,7,\"\"\n",
            "1,512,\"; _Z3subv\",0,0,0,0,\"sub()\"\n",
            "1,512,\"s_unknown ; vaddr 0x200\",1,5,0,5,\"\"\n",
        )
    );
    assert_eq!(summary.wave_files, 3);
    assert_eq!(summary.skipped_waves, 1);
    assert_eq!(summary.unresolved_instructions, 0);
    assert_eq!(summary.fallback_rows, 3);
}

#[test]
fn json_outputs_exact_text() {
    let out = tempfile::tempdir().unwrap();
    let mut writer = AttWriter::new(out.path(), OutputOptions::default());
    let summary = writer.write_dispatch(&dispatch(), &table(), None).unwrap();
    let dir = out.path().join("ui_output_agent_7_dispatch_1");
    assert_eq!(summary.dir, dir);

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "code.json",
            "filenames.json",
            "occupancy.json",
            "se0_sm0_sl1_wv0.json",
            "se0_sm0_sl1_wv1.json",
            "se1_sm1_sl0_wv0.json",
            "wstates2.json",
            "wstates3.json",
        ],
        "no temporary files left, only states that occur"
    );

    assert_eq!(
        read(&dir.join("se0_sm0_sl1_wv0.json")),
        concat!(
            r#"{"duration":30,"name":"SE0","num_insts":3,"num_stitched":3,"wave":{"begin":100,"cu":3,"end":130,"id":0,"#,
            r#""instructions":[[100,2,2,4,1],[106,6,1,3,2],[110,2,0,1,1]],"simd":0,"slot":1,"#,
            r#""timeline":[[2,10],[3,5],[2,15]],"waitcnt":null}}"#
        )
    );
    assert_eq!(
        read(&dir.join("se1_sm1_sl0_wv0.json")),
        concat!(
            r#"{"duration":10,"name":"SE1","num_insts":1,"num_stitched":1,"wave":{"begin":50,"cu":3,"end":60,"id":0,"#,
            r#""instructions":[[55,6,3,2,2]],"simd":1,"slot":0,"timeline":null,"waitcnt":null}}"#
        )
    );
    assert_eq!(
        read(&dir.join("filenames.json")),
        concat!(
            r#"{"counter_names":[],"gfxip":11,"gfxv":"navi","global_begin_time":0,"version":"3.0.0","#,
            r#""wave_filenames":{"0":{"0":{"1":{"0":["se0_sm0_sl1_wv0.json",100,130],"1":["se0_sm0_sl1_wv1.json",200,210]}}},"#,
            r#""1":{"1":{"0":{"0":["se1_sm1_sl0_wv0.json",50,60]}}}}}"#
        )
    );
    assert_eq!(
        read(&dir.join("wstates2.json")),
        r#"{"name":"wstates2.json","state":[1,0,1,0,1,0],"time":[100,110,115,130,200,210]}"#
    );
    assert_eq!(
        read(&dir.join("occupancy.json")),
        r#"{"1":[[40,3,1,0,1,1],[60,3,1,0,0,1]],"dispatches":{"0":"0 / 0x0","1":"_Z3addv"},"version":"3.0.0"}"#
    );
    assert_eq!(
        read(&dir.join("code.json")),
        concat!(
            r#"{"code":[["; _Z3addv",0,0,"add()",1,256,0,0,0,0],["s_unknown ; vaddr 0x100",0,1,"",1,256,2,5,2,1],"#,
            r#"["s_unknown ; vaddr 0x104",0,2,"",1,260,2,5,4,7],["; _Z3subv",0,3,"sub()",1,512,0,0,0,0],"#,
            r#"["s_unknown ; vaddr 0x200",0,4,"",1,512,1,5,0,5]],"#,
            r#""header":"ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle","version":"3.0.0"}"#
        )
    );
}

#[test]
fn kernel_ids_are_process_global_across_dispatches() {
    let out = tempfile::tempdir().unwrap();
    let mut writer = AttWriter::new(out.path(), OutputOptions::default());
    writer.write_dispatch(&dispatch(), &table(), None).unwrap();
    let mut second = dispatch();
    second.dispatch_id = 2;
    second.shader_engines[0].decoded.occupancy = vec![Occupancy {
        pc: pc(0x1000_0200, 0), // raw address of `sub`
        time: 5,
        cu: 0,
        simd: 0,
        slot: 0,
        start: true,
    }];
    second.shader_engines[1].decoded.occupancy = vec![Occupancy {
        pc: pc(0x7777, 4), // unknown object
        time: 6,
        cu: 0,
        simd: 0,
        slot: 1,
        start: true,
    }];
    writer.write_dispatch(&second, &table(), None).unwrap();
    assert_eq!(
        read(
            &out.path()
                .join("ui_output_agent_7_dispatch_2/occupancy.json")
        ),
        concat!(
            r#"{"0":[[6,0,0,1,1,2]],"1":[[5,0,0,0,1,3]],"#,
            r#""dispatches":{"0":"0 / 0x0","1":"_Z3addv","2":"4 / 0x7777","3":"_Z3subv"},"version":"3.0.0"}"#
        )
    );
}

/// Every file under `dir` (relative path → content), recursively.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn the_background_writer_writes_what_the_writer_writes_in_submission_order() {
    // Dispatches whose occupancy names kernels in an order that only sequential writing in
    // submission order numbers the same way; one dispatch fails (its directory is a file).
    let dispatches: Vec<DispatchTrace> = (1..=6)
        .map(|id| {
            let mut d = dispatch();
            d.dispatch_id = id;
            d.shader_engines[0].decoded.occupancy[0].pc = pc(0x100 * (7 - id), 5 + id % 2);
            d
        })
        .collect();
    let direct = tempfile::tempdir().unwrap();
    let threaded = tempfile::tempdir().unwrap();
    for out in [direct.path(), threaded.path()] {
        std::fs::write(out.join("ui_output_agent_7_dispatch_4"), b"in the way").unwrap();
    }
    let mut writer = AttWriter::new(direct.path(), OutputOptions::default());
    let expected: Vec<Result<DispatchSummary, String>> = dispatches
        .iter()
        .map(|d| {
            writer
                .write_dispatch(d, &table(), None)
                .map_err(|e| e.to_string())
        })
        .collect();

    let mut background =
        BackgroundWriter::spawn(AttWriter::new(threaded.path(), OutputOptions::default()), 1)
            .unwrap();
    for d in dispatches {
        background.submit(d, table(), None);
    }
    let (after, results) = background.finish();
    let rebase = |r: Result<DispatchSummary, Error>| {
        r.map(|mut s| {
            s.dir = direct
                .path()
                .join(s.dir.strip_prefix(threaded.path()).unwrap());
            s.stats_csv = s
                .stats_csv
                .map(|c| direct.path().join(c.strip_prefix(threaded.path()).unwrap()));
            s
        })
        .map_err(|e| {
            e.to_string().replace(
                &threaded.path().display().to_string(),
                &direct.path().display().to_string(),
            )
        })
    };
    let results: Vec<_> = results.into_iter().map(rebase).collect();
    assert_eq!(results, expected);
    assert!(results[3].is_err() && results.iter().filter(|r| r.is_ok()).count() == 5);
    assert_eq!(tree(threaded.path()), tree(direct.path()));
    assert_eq!(
        after.kernel_ids().iter().collect::<Vec<_>>(),
        writer.kernel_ids().iter().collect::<Vec<_>>()
    );
}

#[test]
fn listing_gives_every_instruction_of_hit_kernels() {
    let mut listing = Listing::new();
    for (vaddr, size, text) in [
        (0x100, 4, "s_mov_b32 s0, 0"),
        (0x104, 8, "v_add_f32 v0, v1, v2"),
        (0x10c, 4, "s_endpgm"),
    ] {
        listing.insert(
            1,
            DisassembledInstruction {
                vaddr,
                size,
                text: text.into(),
                source: "add.hip:3".into(),
            },
        );
    }
    let mut w = wave(0, 0, 0, 20);
    w.instructions = vec![
        inst(pc(0x104, 1), 2, 3, 1, category::VALU),
        inst(pc(0x900, 1), 8, 1, 0, category::SALU), // outside every kernel
    ];
    let trace = DispatchTrace {
        agent_handle: 1,
        dispatch_id: 5,
        shader_engines: vec![ShaderEngineTrace {
            se: 0,
            decoded: Decoded {
                waves: vec![w],
                ..Decoded::default()
            },
        }],
    };
    let out = tempfile::tempdir().unwrap();
    let mut writer = AttWriter::new(
        out.path(),
        OutputOptions {
            json: true,
            csv: true,
            counter_names: vec!["SQ_WAVES".into()],
        },
    );
    let summary = writer
        .write_dispatch(&trace, &table(), Some(&listing))
        .unwrap();
    assert_eq!(
        read(&out.path().join("stats_ui_output_agent_1_dispatch_5.csv")),
        concat!(
            "\"CodeObj\",\"Vaddr\",\"Instruction\",\"Hitcount\",\"Latency\",\"Stall\",\"Idle\",\"Source\"\n",
            "1,256,\"; _Z3addv\",0,0,0,0,\"add()\"\n",
            "1,256,\"s_mov_b32 s0, 0\",0,0,0,0,\"add.hip:3\"\n",
            "1,260,\"v_add_f32 v0, v1, v2\",1,3,1,2,\"add.hip:3\"\n",
            "1,268,\"s_endpgm\",0,0,0,0,\"add.hip:3\"\n",
            "1,2304,\"s_unknown ; vaddr 0x900\",1,1,0,3,\"\"\n",
        )
    );
    assert_eq!(summary.fallback_rows, 1);
    let dir = out.path().join("ui_output_agent_1_dispatch_5");
    let wave_file = read(&dir.join("se0_sm0_sl0_wv0.json"));
    assert!(
        wave_file.contains(r#""instructions":[[2,6,1,3,2],[8,2,0,1,4]]"#),
        "{wave_file}"
    );
    let filenames = read(&dir.join("filenames.json"));
    assert!(
        filenames.starts_with(r#"{"counter_names":["SQ_WAVES"],"gfxip":0,"gfxv":"vega""#),
        "{filenames}"
    );
    let code = read(&dir.join("code.json"));
    assert!(
        code.contains(r#"["s_endpgm",0,3,"add.hip:3",1,268,0,0,0,0]"#),
        "{code}"
    );
    assert!(
        code.contains(r#"["s_unknown ; vaddr 0x900",0,4,"",1,2304,1,1,0,3]"#),
        "{code}"
    );
}

#[test]
fn empty_dispatch_writes_nulls_and_header_only_csv() {
    let out = tempfile::tempdir().unwrap();
    let mut writer = AttWriter::new(out.path(), OutputOptions::default());
    let trace = DispatchTrace {
        agent_handle: 3,
        dispatch_id: 4,
        shader_engines: vec![],
    };
    let s = writer
        .write_dispatch(&trace, &CodeObjectTable::new(), None)
        .unwrap();
    assert_eq!((s.wave_files, s.skipped_waves), (0, 0));
    let dir = out.path().join("ui_output_agent_3_dispatch_4");
    assert_eq!(
        read(&dir.join("filenames.json")),
        r#"{"counter_names":[],"gfxip":0,"gfxv":"vega","global_begin_time":0,"version":"3.0.0","wave_filenames":null}"#
    );
    assert_eq!(
        read(&dir.join("code.json")),
        r#"{"code":null,"header":"ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle","version":"3.0.0"}"#
    );
    assert_eq!(
        read(&dir.join("occupancy.json")),
        r#"{"dispatches":{"0":"0 / 0x0"},"version":"3.0.0"}"#
    );
    assert_eq!(
        read(&out.path().join("stats_ui_output_agent_3_dispatch_4.csv")),
        format!("{STATS_CSV_HEADER}\n")
    );
}

#[test]
fn formats_can_be_turned_off_and_unwritable_output_is_an_error() {
    let out = tempfile::tempdir().unwrap();
    let mut csv_only = AttWriter::new(
        out.path(),
        OutputOptions {
            json: false,
            csv: true,
            counter_names: vec![],
        },
    );
    let s = csv_only
        .write_dispatch(&dispatch(), &table(), None)
        .unwrap();
    assert!(s.stats_csv.is_some());
    assert_eq!(std::fs::read_dir(&s.dir).unwrap().count(), 0, "no JSON");

    // The output "directory" is a regular file.
    let file = out.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let mut writer = AttWriter::new(&file, OutputOptions::default());
    let err = writer
        .write_dispatch(&dispatch(), &table(), None)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Io {
                action: "create directory",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("permissions"), "{err}");
}

#[test]
fn code_view_lines_follow_first_touch_of_kernels() {
    let mut s = Stats::new();
    let mut w = wave(0, 0, 0, 10);
    // `sub` is touched before `add`.
    w.instructions = vec![
        inst(pc(0x200, 1), 1, 1, 0, 0),
        inst(pc(0x108, 1), 2, 1, 0, 0),
        inst(pc(0x100, 1), 3, 1, 0, 0),
    ];
    s.add_wave(&w, identity);
    let view = CodeView::build(&s, &table(), None);
    let summary: Vec<(u32, &str)> = view
        .rows
        .iter()
        .map(|r| (r.line, r.text.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (0, "; _Z3subv"),
            (1, "s_unknown ; vaddr 0x200"),
            (2, "; _Z3addv"),
            (3, "s_unknown ; vaddr 0x100"),
            (4, "s_unknown ; vaddr 0x108"),
        ]
    );
    assert_eq!(view.line_of(1, 0x108), Some(4));
    assert_eq!(view.line_of(1, 0x104), None);
    // The CSV is still in address order.
    let csv = view.stats_csv();
    let vaddrs: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(vaddrs, ["256", "256", "264", "512", "512"]);
}

#[test]
fn filenames_json_is_the_bytes_serde_json_prints_for_the_document() {
    let mut index = WaveIndex::new();
    for (se, simd, slot, n, begin) in [
        (0, 0, 1, 0, 5),
        (0, 0, 1, 10, -3),
        (10, 2, 0, 2, 7),
        (2, 1, 0, 0, 1),
    ] {
        index
            .entry(se.to_string())
            .or_default()
            .entry(simd.to_string())
            .or_default()
            .entry(slot.to_string())
            .or_default()
            .insert(n.to_string(), (format!("f{se}{n}.json"), begin, begin + 1));
    }
    let names = vec!["A\"b".to_owned(), "\u{fc}\n\u{1}".to_owned()];
    let reference = |gfxip: u64, index: &WaveIndex| {
        let wave_filenames: Value = if index.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(index).unwrap()
        };
        serde_json::json!({
            "counter_names": names,
            "gfxip": gfxip,
            "gfxv": if gfxip > 9 { "navi" } else { "vega" },
            "global_begin_time": 0,
            "version": TOOL_VERSION,
            "wave_filenames": wave_filenames,
        })
        .to_string()
    };
    for (gfxip, index) in [(11, index), (9, WaveIndex::new())] {
        let mut fast = Vec::new();
        write_filenames_json(&mut fast, &names, gfxip, &index).unwrap();
        assert_eq!(String::from_utf8(fast).unwrap(), reference(gfxip, &index));
    }
}

#[test]
fn a_second_run_into_the_same_directory_replaces_its_files_and_leaves_no_temporaries() {
    let out = tempfile::tempdir().unwrap();
    let mut first = AttWriter::new(out.path(), OutputOptions::default());
    let s = first.write_dispatch(&dispatch(), &table(), None).unwrap();
    std::fs::write(s.dir.join("filenames.json"), b"damaged").unwrap();
    std::fs::write(s.dir.join("other.txt"), b"not ours").unwrap();
    let mut second = AttWriter::new(out.path(), OutputOptions::default());
    let again = second.write_dispatch(&dispatch(), &table(), None).unwrap();
    assert_eq!(again, s);
    let top: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(top.iter().all(|n| !n.starts_with('.')), "{top:?}");
    assert!(read(&s.dir.join("filenames.json")).starts_with(r#"{"counter_names":[]"#));
    assert_eq!(read(&s.dir.join("other.txt")), "not ours");
    assert_eq!(std::fs::read_dir(&s.dir).unwrap().count(), 9);
}

// ---- properties ----

fn arb_inst() -> impl Strategy<Value = Inst> {
    (
        prop_oneof![
            Just(Pc::default()),
            (0u64..4, 0u64..3).prop_map(|(a, m)| pc(a * 4, m)),
            Just(pc(0x40, 9)), // never resolves
        ],
        -1_000i64..1_000,
        -50i32..200,
        0u32..0x100_0000,
        any::<u8>(),
    )
        .prop_map(|(pc, time, duration, stall, category)| Inst {
            category,
            stall,
            duration,
            time,
            pc,
        })
}

fn arb_wave() -> impl Strategy<Value = Wave> {
    (
        -1_000i64..1_000,
        proptest::collection::vec(arb_inst(), 0..40),
        proptest::collection::vec((-1i32..7, 0i32..50), 0..10),
    )
        .prop_map(|(begin, instructions, timeline)| Wave {
            cu: 0,
            simd: 0,
            slot: 0,
            contexts: 0,
            begin_time: begin,
            end_time: begin + 100,
            timeline: timeline
                .into_iter()
                .map(|(kind, duration)| WaveState { kind, duration })
                .collect(),
            instructions,
        })
}

proptest! {
    #[test]
    fn stats_invariants(waves in proptest::collection::vec(arb_wave(), 0..8)) {
        let mut s = Stats::new();
        for w in &waves {
            s.add_wave(w, identity);
        }
        let all: Vec<&Inst> = waves.iter().flat_map(|w| &w.instructions).collect();
        let non_null = all.iter().filter(|i| !i.pc.is_null()).count() as u64;
        let unresolved = all.iter().filter(|i| i.pc.marker_id == 9).count() as u64;
        prop_assert_eq!(s.total_hits() + s.unresolved, non_null);
        prop_assert_eq!(s.unresolved, unresolved);
        prop_assert_eq!(s.unstitched, all.len() as u64 - non_null);
        for (key, st) in &s.per_instruction {
            prop_assert!(st.idle >= 0, "idle {} at {:?}", st.idle, key);
            prop_assert!(st.hitcount >= 1);
            let expected = all
                .iter()
                .filter(|i| identity(i.pc) == Some(*key) && !i.pc.is_null())
                .count() as u64;
            prop_assert_eq!(st.hitcount, expected);
        }
        let touched: BTreeSet<(u64, u64)> = s.first_touch.iter().copied().collect();
        prop_assert_eq!(touched.len(), s.first_touch.len(), "first_touch has no duplicates");
        prop_assert!(touched.iter().eq(s.per_instruction.keys()));
    }

    #[test]
    fn wstates_invariants(waves in proptest::collection::vec(arb_wave(), 0..8)) {
        let mut sweep = WstatesSweep::new();
        for w in &waves {
            sweep.add_wave(w);
        }
        for (state, out) in sweep.finish().into_iter().enumerate() {
            let occurs = waves
                .iter()
                .any(|w| w.timeline.iter().any(|t| t.kind == state as i32));
            prop_assert_eq!(out.is_some(), occurs);
            if let Some(sw) = out {
                prop_assert_eq!(sw.time.len(), sw.state.len());
                prop_assert!(sw.time.windows(2).all(|p| p[0] < p[1]), "strictly increasing");
                prop_assert!(sw.state.iter().all(|&v| v >= 0));
                prop_assert_eq!(sw.state.last().copied(), Some(0), "every segment ends");
            }
        }
    }

    #[test]
    fn wave_files_are_the_bytes_serde_json_prints_for_the_document(
        wave in arb_wave(),
        extremes in any::<(u8, u8, u8, i64, i64)>(),
        se in any::<u32>(),
        n in any::<u32>(),
        line in any::<u32>(),
        timeline_extreme in any::<(i32, i32)>(),
    ) {
        let mut w = wave;
        (w.cu, w.simd, w.slot) = (extremes.0, extremes.1, extremes.2);
        if extremes.3 % 2 == 0 {
            (w.begin_time, w.end_time) = (extremes.3, extremes.4);
        }
        if let Some(t) = w.timeline.first_mut() {
            (t.kind, t.duration) = timeline_extreme;
        }
        let line_of = |pc: Pc| if pc.is_null() { 0 } else { line ^ pc.addr as u32 };
        let mut fast = b"kept".to_vec();
        write_wave_json(&mut fast, se, n, &w, line_of);
        let reference = serde_json::to_vec(&wave_json(se, n, &w, line_of)).unwrap();
        prop_assert_eq!(&fast[..4], b"kept", "appends");
        prop_assert_eq!(String::from_utf8_lossy(&fast[4..]), String::from_utf8_lossy(&reference));
    }

    #[test]
    fn wstates_files_are_the_bytes_serde_json_prints_for_the_document(
        time in proptest::collection::vec(any::<i64>(), 0..20),
        state in proptest::collection::vec(any::<i64>(), 0..20),
        n in 0usize..5,
    ) {
        let sweep = Sweep { time, state };
        let mut fast = Vec::new();
        write_wstates_json(&mut fast, n, &sweep);
        let reference = serde_json::to_vec(&wstates_json(n, &sweep)).unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&reference));
    }
}
