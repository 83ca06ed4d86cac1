//! `att::comgr` against a real comgr library: the simulated `libamd_comgr.so` of this
//! workspace (built by `cargo build -p sim-comgr`, or by `cargo test -p att` as the cdylib of
//! a dev-dependency), disassembling code objects written by the simulated toolchain
//! (`wslsim-codeobj`), whose kernels run `program(salu, valu)`.

use att::codeobj::{CodeObject, CodeObjectTable, DisassembledInstruction, Disassembler, Listing};
use att::comgr::{self, Comgr, ComgrIsa, ComgrStatus, KernelEntry, SweepStop};
use att::decode::{Inst, Instruction, Isa, Wave};
use att::outputs::{AttWriter, CodeView, DispatchTrace, OutputOptions, ShaderEngineTrace, Stats};
use att::{Decoder, Error, Pc};
use std::path::{Path, PathBuf};
use wslsim_codeobj::{CodeObjectBuilder, Kernel, KernelBuilder, parse, program};
use wslsim_scenario::harness;

/// Where code object 1 is loaded in the end-to-end test.
const LOAD: u64 = 0x7f00_0000_0000;
/// The cost-model counts of the two kernels: (salu, valu).
const COUNTS: [(u32, u32); 2] = [(5, 7), (1, 3)];

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The simulator's `library`, built by `build_command` from the sources of the crates in
/// `sim/<crate_dirs>`.
fn sim_library(library: &str, build_command: &str, crate_dirs: [&str; 2]) -> PathBuf {
    harness::locate(&harness::Target {
        library,
        build_command,
        sources: &crate_dirs.map(|dir| manifest().join(format!("../sim/{dir}/src"))),
    })
    .unwrap_or_else(|why| panic!("{why}"))
}

fn comgr_library() -> PathBuf {
    sim_library(
        "libamd_comgr.so",
        "cargo build -p sim-comgr",
        ["comgr", "codeobj"],
    )
}

fn open_comgr() -> Comgr {
    Comgr::open_path_trusted(&comgr_library()).expect("the simulated comgr exports all four")
}

/// A code object with two kernels, its bytes and its kernels as parsed back.
fn code_object() -> (Vec<u8>, Vec<Kernel>) {
    let mut builder = CodeObjectBuilder::new();
    for (i, (salu, valu)) in COUNTS.into_iter().enumerate() {
        builder = builder.kernel(
            KernelBuilder::new(&format!("_Z7kernel{i}v"))
                .costs(valu, salu, 0)
                .build()
                .unwrap(),
        );
    }
    let bytes = builder.to_bytes();
    let kernels = parse(&bytes).expect("the builder's bytes parse");
    (bytes, kernels)
}

/// `program(salu, valu)` as the listing of a kernel whose code starts at `code_offset`.
fn expected(code_offset: u64, (salu, valu): (u32, u32)) -> Vec<DisassembledInstruction> {
    program(salu, valu)
        .into_iter()
        .map(|i| DisassembledInstruction {
            vaddr: code_offset + i.offset,
            size: u64::from(i.size),
            text: i.text,
            source: String::new(),
        })
        .collect()
}

/// `bytes` saved as `dir/name`, and a table holding them as code object 1 at [`LOAD`].
fn saved_table(dir: &Path, name: &str, bytes: &[u8], load_size: u64) -> CodeObjectTable {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap();
    let mut t = CodeObjectTable::new();
    t.insert(CodeObject {
        id: 1,
        load_base: LOAD,
        load_size,
        file,
        kernels: Vec::new(),
    });
    t
}

#[test]
fn version_and_isa_names() {
    let comgr = open_comgr();
    assert_eq!(comgr.version(), (3, 0));
    let gfx1150 = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    assert_eq!(gfx1150.isa_name(), "amdgcn-amd-amdhsa--gfx1150");
    match comgr.disassembler(&comgr::isa_name("gfx900")) {
        Err(e @ Error::Comgr { .. }) => {
            let Error::Comgr { call, status, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*call, "amd_comgr_create_disassembly_info");
            assert_eq!(*status, ComgrStatus::ERROR_INVALID_ARGUMENT);
            let msg = e.to_string();
            assert!(msg.contains("amdgcn-amd-amdhsa--gfx900"), "{msg}");
            assert!(msg.contains("supports the GPU"), "{msg}");
        }
        other => panic!("expected comgr to refuse gfx900, got {other:?}"),
    }
}

#[test]
fn a_sweep_lists_the_program_up_to_s_endpgm() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (bytes, kernels) = code_object();
    for (kernel, counts) in kernels.iter().zip(COUNTS) {
        let sweep = d
            .sweep(&bytes, kernel.code_offset)
            .expect("the entry decodes");
        assert_eq!(sweep.instructions, expected(kernel.code_offset, counts));
        assert_eq!(sweep.stop, SweepStop::EndProgram);
        assert!(sweep.is_complete());
        assert_eq!(Some(sweep.range()), kernel.code_range());
        assert_eq!(sweep.instructions.last().unwrap().text, "s_endpgm");
        assert!(
            sweep.instructions.iter().any(|i| i.size == 8),
            "8-byte instructions are stepped over whole"
        );
        // The range form (what `Listing::disassemble_all` uses) agrees.
        assert_eq!(
            d.disassemble(&bytes, sweep.range()).unwrap(),
            sweep.instructions
        );
    }
}

#[test]
fn entries_outside_code_fail_and_sweeps_stop_at_bad_bytes() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (bytes, kernels) = code_object();
    let entry = kernels[0].code_offset;
    let first = &program(COUNTS[0].0, COUNTS[0].1)[0];
    assert_eq!(first.size, 8, "program(5, 7) starts with s_load_b128");
    // The header, the middle of an 8-byte instruction, padding, past the end: errors, never
    // an empty listing.
    for at in [0, entry + 4, entry - 4, bytes.len() as u64, u64::MAX] {
        match d.sweep(&bytes, at) {
            Err(Error::Comgr { call, status, .. }) => {
                assert_eq!(call, "amd_comgr_disassemble_instruction");
                assert_eq!(status, ComgrStatus::ERROR, "at {at:#x}");
            }
            other => panic!("entry {at:#x}: expected an error, got {other:?}"),
        }
    }
    // Bytes ending after two instructions (8 + 4): the sweep stops at the end of the code.
    let short = &bytes[..(entry + 12) as usize];
    let sweep = d.sweep(short, entry).unwrap();
    assert_eq!(sweep.stop, SweepStop::EndOfCode);
    assert_eq!(sweep.instructions, expected(entry, COUNTS[0])[..2]);
    // Bytes ending inside the third instruction: comgr gets fewer bytes than it needs.
    let cut = &bytes[..(entry + 14) as usize];
    let sweep = d.sweep(cut, entry).unwrap();
    assert!(
        matches!(sweep.stop, SweepStop::Undecodable { vaddr, .. } if vaddr == entry + 12),
        "{:?}",
        sweep.stop
    );
    // A word of garbage in the middle: listed up to it.
    let mut bad = bytes.clone();
    let third = (entry + 12) as usize;
    bad[third..third + 4].copy_from_slice(&[0xff; 4]);
    let sweep = d.sweep(&bad, entry).unwrap();
    assert_eq!(sweep.instructions.len(), 2);
    assert_eq!(sweep.range(), entry..entry + 12);
    match &sweep.stop {
        SweepStop::Undecodable { vaddr, reason } => {
            assert_eq!(*vaddr, entry + 12);
            assert!(reason.contains("1 (ERROR)"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    // The range form refuses the whole range.
    let err = d
        .disassemble(&bad, kernels[0].code_range().unwrap())
        .unwrap_err();
    assert!(err.contains(&format!("{:#x}", entry + 12)), "{err}");
}

#[test]
fn the_isa_answers_marker_and_raw_pcs_from_the_saved_file() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (bytes, kernels) = code_object();
    let dir = tempfile::tempdir().unwrap();
    let mut table = saved_table(
        dir.path(),
        "1_gfx1150_code_object_id_1.out",
        &bytes,
        bytes.len() as u64,
    );
    table.insert(CodeObject {
        id: 2,
        load_base: LOAD + 0x10_0000,
        load_size: 0x1000,
        file: dir.path().join("missing.out"),
        kernels: Vec::new(),
    });
    let isa = ComgrIsa::new(&d, &table);
    let want = expected(kernels[1].code_offset, COUNTS[1]);
    for inst in &want {
        let answer = Some(Instruction {
            text: inst.text.clone(),
            size: inst.size,
        });
        let marker = Pc {
            addr: inst.vaddr,
            marker_id: 1,
        };
        assert_eq!(isa.instruction(marker), answer);
        let raw = Pc {
            addr: LOAD + inst.vaddr,
            marker_id: 0,
        };
        assert_eq!(isa.instruction(raw), answer);
    }
    assert_eq!(isa.cached(), want.len(), "one entry per (id, vaddr)");
    let header = Pc {
        addr: 0,
        marker_id: 1,
    };
    assert_eq!(isa.instruction(header), None);
    assert_eq!(isa.instruction(header), None, "refusals are cached too");
    let past = Pc {
        addr: bytes.len() as u64,
        marker_id: 1,
    };
    assert_eq!(isa.instruction(past), None, "outside load_size");
    assert!(isa.take_errors().is_empty());
    let unreadable = Pc {
        addr: 0x100,
        marker_id: 2,
    };
    assert_eq!(isa.instruction(unreadable), None);
    assert_eq!(
        isa.instruction(Pc {
            addr: 0x104,
            ..unreadable
        }),
        None
    );
    let errors = isa.take_errors();
    assert_eq!(errors.len(), 1, "the file is read once: {errors:?}");
    assert!(matches!(errors[0], Error::Io { .. }));
    // In-memory bytes instead of the file.
    let isa = ComgrIsa::new(&d, &table).with_bytes(2, bytes.clone());
    let code = kernels[0].code_offset;
    assert_eq!(
        isa.instruction(Pc {
            addr: code,
            marker_id: 2
        })
        .map(|i| i.size),
        Some(8)
    );
}

fn wave(pcs: &[Pc]) -> Wave {
    Wave {
        begin_time: 100,
        end_time: 200,
        instructions: pcs
            .iter()
            .enumerate()
            .map(|(k, &pc)| Inst {
                category: 2,
                stall: 0,
                duration: 4,
                time: 100 + 10 * k as i64,
                pc,
            })
            .collect(),
        ..Wave::default()
    }
}

#[test]
fn listed_kernels_give_the_code_view_every_instruction() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (bytes, kernels) = code_object();
    let dir = tempfile::tempdir().unwrap();
    let mut table = saved_table(dir.path(), "co.out", &bytes, bytes.len() as u64);
    let entry = |i: usize, id| KernelEntry {
        id,
        vaddr: kernels[i].code_offset,
        name: kernels[i].name.clone(),
        demangled: format!("kernel{i}()"),
    };
    let mut listing = Listing::new();
    let errors = d.list_kernels(
        &mut table,
        &mut listing,
        &[entry(0, 1), entry(1, 1), entry(0, 1), entry(0, 9)],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        matches!(&errors[0], Error::Disassembly { id: 9, kernel, .. } if kernel == "_Z7kernel0v"),
        "{:?}",
        errors[0]
    );
    let symbols = &table.get(1).unwrap().kernels;
    assert_eq!(symbols.len(), 2, "each kernel added once: {symbols:?}");
    for (k, counts) in kernels.iter().zip(COUNTS) {
        let symbol = table.kernel_at(1, k.code_offset).unwrap();
        assert_eq!(Some(symbol.vaddr.clone()), k.code_range());
        assert_eq!(symbol.name, k.name);
        let listed: Vec<_> = listing.range(1, symbol.vaddr.clone()).cloned().collect();
        assert_eq!(listed, expected(k.code_offset, counts));
    }
    // Listing again with the symbols now in the table disassembles their ranges: same result.
    let mut again = Listing::new();
    assert!(
        d.list_kernels(&mut table, &mut again, &[entry(0, 1)])
            .is_empty()
    );
    assert_eq!(
        again.len(),
        program(COUNTS[0].0, COUNTS[0].1).len(),
        "only the kernel named"
    );
    assert_eq!(table.get(1).unwrap().kernels.len(), 2, "no symbol added");

    // One wave hit only the second instruction of kernel 0: its row lists them all.
    let code = kernels[0].code_offset;
    let first = program(COUNTS[0].0, COUNTS[0].1);
    let mut stats = Stats::new();
    stats.add_wave(
        &wave(&[Pc {
            addr: code + first[1].offset,
            marker_id: 1,
        }]),
        |pc| table.resolve(pc),
    );
    let view = CodeView::build(&stats, &table, Some(&listing));
    assert_eq!(view.fallback_rows(), 0);
    assert_eq!(view.rows.len(), 1 + first.len(), "{:?}", view.rows);
    assert_eq!(view.rows[0].text, "; _Z7kernel0v");
    assert_eq!(view.rows[0].source, "kernel0()");
    for (row, inst) in view.rows[1..].iter().zip(&first) {
        assert_eq!(row.vaddr, code + inst.offset);
        assert_eq!(row.text, inst.text);
        assert_eq!(
            row.stats.hitcount,
            u64::from(inst.offset == first[1].offset)
        );
    }
}

#[test]
fn a_sweep_stopping_early_is_listed_and_reported() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (mut bytes, kernels) = code_object();
    let entry = kernels[0].code_offset;
    let third = (entry + 12) as usize;
    bytes[third..third + 4].copy_from_slice(&[0xff; 4]);
    let dir = tempfile::tempdir().unwrap();
    let mut table = saved_table(dir.path(), "co.out", &bytes, 0);
    let file = dir.path().join("co.out");
    let mut listing = Listing::new();
    let errors = d.list_kernels(
        &mut table,
        &mut listing,
        &[KernelEntry {
            id: 1,
            vaddr: entry,
            name: "k".into(),
            demangled: String::new(),
        }],
    );
    assert_eq!(listing.len(), 2);
    assert_eq!(table.kernel_at(1, entry).unwrap().vaddr, entry..entry + 12);
    match &errors[..] {
        [e @ Error::Disassembly { reason, .. }] => {
            assert!(reason.contains("before s_endpgm"), "{reason}");
            assert!(e.to_string().contains(file.to_str().unwrap()), "{e}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn decoder_library() -> PathBuf {
    sim_library(
        "librocprof_trace_decoder.so",
        "cargo build -p sim-trace-decoder",
        ["trace-decoder", "sqtt"],
    )
}

/// One SE stream: two waves of kernel 0 running its whole program.
fn stream(code: u64, load_size: u64) -> Vec<u8> {
    use wslsim_sqtt::{Category, Encoder, Header, Instruction as SqttInst, WaveKey};
    let mut e = Encoder::with_header(Header {
        gfxip_major: 11,
        shader_engine: 0,
    });
    e.roc_preamble()
        .code_object_marker(1, LOAD, load_size, false, true);
    for slot in 0..2u8 {
        let wave = WaveKey {
            cu: 0,
            simd: 0,
            slot,
        };
        let t0 = 1_000 + 500 * u64::from(slot);
        e.wave_start(wave, t0, LOAD + code);
        let insts = program(COUNTS[0].0, COUNTS[0].1);
        for (k, inst) in insts.iter().enumerate() {
            e.instruction(
                wave,
                SqttInst {
                    pc: LOAD + code + inst.offset,
                    category: Category(inst.category),
                    time: t0 + 10 * k as u64,
                    duration: inst.cycles,
                    stall: 0,
                },
            );
        }
        e.wave_end(wave, t0 + 10 * insts.len() as u64);
    }
    e.finish()
}

#[test]
fn decoded_through_the_simulated_decoder_with_real_sizes_and_texts() {
    let comgr = open_comgr();
    let d = comgr.disassembler(&comgr::isa_name("gfx1150")).unwrap();
    let (bytes, kernels) = code_object();
    let code = kernels[0].code_offset;
    let dir = tempfile::tempdir().unwrap();
    let mut table = saved_table(
        dir.path(),
        "1_gfx1150_code_object_id_1.out",
        &bytes,
        bytes.len() as u64,
    );
    // SAFETY: the workspace's own simulated decoder; its initialisers do nothing.
    let decoder = unsafe { Decoder::load(&decoder_library()) }.unwrap();
    let decoded = {
        let isa = ComgrIsa::new(&d, &table);
        let decoded = decoder
            .decode_stream(&stream(code, bytes.len() as u64), &isa)
            .expect("decodes");
        assert!(isa.take_errors().is_empty());
        decoded
    };
    let program0 = program(COUNTS[0].0, COUNTS[0].1);
    assert_eq!(decoded.unknown_pcs, 0);
    assert_eq!(decoded.waves.len(), 2);
    for w in &decoded.waves {
        assert_eq!(w.instructions.len(), program0.len());
        assert!(
            w.instructions.iter().all(|i| !i.pc.is_null()),
            "all stitched"
        );
    }
    let entries = comgr::kernel_entries([&decoded], &table);
    assert_eq!(entries.into_iter().collect::<Vec<_>>(), [(1, code)]);
    let mut listing = Listing::new();
    let errors = d.list_kernels(
        &mut table,
        &mut listing,
        &[KernelEntry {
            id: 1,
            vaddr: code,
            name: kernels[0].name.clone(),
            demangled: "kernel0()".into(),
        }],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let out = dir.path().join("out");
    let summary = AttWriter::new(&out, OutputOptions::default())
        .write_dispatch(
            &DispatchTrace {
                agent_handle: 1,
                dispatch_id: 3,
                shader_engines: vec![ShaderEngineTrace { se: 0, decoded }],
            },
            &table,
            Some(&listing),
        )
        .expect("written");
    assert_eq!(summary.fallback_rows, 0);
    assert_eq!(summary.unresolved_instructions, 0);
    let csv = std::fs::read_to_string(summary.stats_csv.expect("a stats CSV")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(2).collect();
    assert_eq!(rows.len(), program0.len(), "{csv}");
    for (row, inst) in rows.iter().zip(&program0) {
        assert!(
            row.starts_with(&format!("1,{},\"{}\",2,", code + inst.offset, inst.text)),
            "every instruction hit by both waves, with comgr's text: {row}"
        );
    }
}

fn system_libm() -> PathBuf {
    [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .expect("no libm.so.6 found in the usual places; this test needs one")
}

#[test]
fn a_library_without_the_symbols_names_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("libamd_comgr.so.3");
    std::fs::copy(system_libm(), &target).unwrap();
    // Found by the directory search, then refused.
    for err in [
        Comgr::open_path_trusted(&target).unwrap_err(),
        Comgr::open_in_trusted(&[dir.path().to_owned()]).unwrap_err(),
    ] {
        match &err {
            Error::ComgrMissingSymbols { library, symbols } => {
                assert_eq!(library, &target);
                assert_eq!(
                    symbols,
                    &comgr::SYMBOLS.map(|s| s.to_str().unwrap()).to_vec()
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(target.to_str().unwrap()), "{msg}");
        assert!(
            msg.contains(
                "amd_comgr_get_version, amd_comgr_create_disassembly_info, \
                 amd_comgr_disassemble_instruction, amd_comgr_destroy_disassembly_info"
            ),
            "{msg}"
        );
        assert!(msg.contains("named by address"), "{msg}");
    }
}

#[test]
fn garbage_and_missing_files_are_open_errors() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("libamd_comgr.so");
    std::fs::write(&garbage, vec![0x5a_u8; 4096]).unwrap();
    for path in [garbage, dir.path().join("nope.so")] {
        match Comgr::open_path_trusted(&path) {
            Err(Error::ComgrOpen { path: p, reason }) => {
                assert_eq!(p, path);
                assert!(reason.contains(path.to_str().unwrap()), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn an_empty_directory_is_not_found_naming_every_path_tried() {
    let dir = tempfile::tempdir().unwrap();
    let err = Comgr::open_in_trusted(&[dir.path().to_owned()]).unwrap_err();
    match &err {
        Error::ComgrNotFound { tried, reasons } => {
            let want: Vec<String> = comgr::SONAMES
                .iter()
                .map(|n| dir.path().join(n).display().to_string())
                .collect();
            assert_eq!(tried, &want);
            assert!(reasons.is_empty());
        }
        other => panic!("unexpected {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(dir.path().to_str().unwrap()), "{msg}");
    assert!(msg.contains("named by address"), "{msg}");
}

/// `Comgr::open` goes through the loader's search, which reads `LD_LIBRARY_PATH` at process
/// start: each case runs in a child started with it set.
#[test]
fn open_by_soname_through_ld_library_path() {
    const CHILD: &str = "ATT_COMGR_CHILD";
    match std::env::var(CHILD).as_deref() {
        Ok("found") => {
            let dir = PathBuf::from(std::env::var_os("LD_LIBRARY_PATH").unwrap());
            let comgr = Comgr::open_trusted().expect("found by soname");
            assert_eq!(
                comgr.path().canonicalize().unwrap(),
                dir.join("libamd_comgr.so.3").canonicalize().unwrap(),
                "the loader's file is named"
            );
            assert_eq!(comgr.version(), (3, 0));
            let d = comgr.disassembler(&comgr::isa_name("gfx1100")).unwrap();
            let (bytes, kernels) = code_object();
            assert!(
                d.sweep(&bytes, kernels[1].code_offset)
                    .unwrap()
                    .is_complete()
            );
            return;
        }
        Ok("missing") => {
            match Comgr::open_trusted() {
                Err(e @ Error::ComgrNotFound { .. }) => {
                    let Error::ComgrNotFound { tried, reasons } = &e else {
                        unreachable!()
                    };
                    assert_eq!(tried, &comgr::SONAMES.map(String::from).to_vec());
                    assert_eq!(reasons.len(), 3);
                    assert!(reasons[0].contains("libamd_comgr.so.3"), "{reasons:?}");
                    assert!(e.to_string().contains("named by address"), "{e}");
                }
                // A comgr installed on this system is found through the loader's cache.
                Ok(c) => eprintln!("a system comgr exists at {}", c.path().display()),
                Err(other) => panic!("unexpected {other:?}"),
            }
            return;
        }
        _ => {}
    }
    let found = tempfile::tempdir().unwrap();
    std::fs::copy(comgr_library(), found.path().join("libamd_comgr.so.3")).unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (case, dir) in [("found", found.path()), ("missing", empty.path())] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "open_by_soname_through_ld_library_path",
                "--nocapture",
            ])
            .env(CHILD, case)
            .env("LD_LIBRARY_PATH", dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{case}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
