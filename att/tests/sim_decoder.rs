//! The whole decode path against a real decoder library: the simulated
//! `librocprof-trace-decoder.so` of this workspace (found by rocprofv3's search in a directory
//! holding a copy under the real name), streams written by the simulated GPU's encoder
//! (`wslsim-sqtt`), decoded one `parse_data` per shader engine, then rocprofv3's outputs.
//! The library is built by `cargo xtask build` (or `cargo build -p sim-trace-decoder`).

use att::codeobj::{CodeObject, CodeObjectTable, KernelSymbol};
use att::decode::Instruction;
use att::library::{SearchEnv, find};
use att::outputs::{AttWriter, DispatchTrace, OutputOptions, ShaderEngineTrace};
use att::{Decoder, Error, Pc};
use std::path::{Path, PathBuf};
use wslsim_scenario::harness;
use wslsim_sqtt::{Category, Encoder, Instruction as Inst, WaveKey};

const LOAD: u64 = 0x7f00_0000_0000;
const KERNEL: u64 = 0x100; // the kernel's first instruction, as an ELF vaddr
const WAVE_INSTRUCTIONS: u64 = 6;

/// A directory holding the built decoder under its real name.
fn decoder_dir(tag: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = harness::locate(&harness::Target {
        library: "librocprof_trace_decoder.so",
        build_command: "cargo build -p sim-trace-decoder",
        sources: &[
            manifest.join("../sim/trace-decoder/src"),
            manifest.join("../sim/sqtt/src"),
        ],
    })
    .unwrap_or_else(|why| panic!("{why}"));
    let dir = std::env::temp_dir().join(format!("att-sim-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lib/nested")).unwrap();
    std::fs::copy(built, dir.join("lib/nested/librocprof-trace-decoder.so")).unwrap();
    dir
}

fn no_env() -> SearchEnv {
    SearchEnv {
        att_library_path: None,
        ld_library_path: None,
        rocm_path: Some("/nonexistent-rocm".into()),
    }
}

/// One SE's stream: `waves` waves of the kernel on SIMD 0, slots 0.., each executing
/// [`WAVE_INSTRUCTIONS`] instructions of 4 bytes (SALU, then VALU), stalled on the third.
fn stream(se: u8, waves: u8) -> Vec<u8> {
    let mut e = Encoder::with_header(wslsim_sqtt::Header {
        gfxip_major: 11,
        shader_engine: se,
    });
    e.roc_preamble()
        .code_object_marker(1, LOAD, 0x1000, false, true);
    for slot in 0..waves {
        let wave = WaveKey {
            cu: 1,
            simd: 0,
            slot,
        };
        let t0 = 1_000 + u64::from(slot) * 100;
        e.wave_start(wave, t0, LOAD + KERNEL);
        for k in 0..WAVE_INSTRUCTIONS {
            e.instruction(
                wave,
                Inst {
                    pc: LOAD + KERNEL + 4 * k,
                    category: if k < 2 {
                        Category::SALU
                    } else {
                        Category::VALU
                    },
                    time: t0 + 10 * k,
                    duration: 4 + u32::from(k == 2) * 3,
                    stall: u32::from(k == 2) * 3,
                },
            );
        }
        e.wave_end(wave, t0 + 10 * WAVE_INSTRUCTIONS);
    }
    e.finish()
}

fn isa(pc: Pc) -> Option<Instruction> {
    let vaddr = if pc.marker_id == 1 {
        pc.addr
    } else {
        return None;
    };
    let k = vaddr.checked_sub(KERNEL)? / 4;
    (k < WAVE_INSTRUCTIONS).then(|| Instruction {
        text: if k < 2 {
            format!("s_mov_b32 s{k}, 0")
        } else {
            // Longer than the decoder's first 64-byte buffer: exercises the retry.
            format!("v_fma_f32 v{k}, v1, v2, v3 ; a comment long enough to need a second buffer")
        },
        size: 4,
    })
}

fn table() -> CodeObjectTable {
    let mut t = CodeObjectTable::new();
    t.insert(CodeObject {
        id: 1,
        load_base: LOAD,
        load_size: 0x1000,
        file: PathBuf::from("1_code_object_id_1.out"),
        kernels: vec![KernelSymbol {
            name: "_Z10vector_addPKfS0_Pfm".into(),
            demangled: "vector_add(float const*, float const*, float*, unsigned long)".into(),
            vaddr: KERNEL..KERNEL + 4 * WAVE_INSTRUCTIONS,
        }],
    });
    t
}

#[test]
fn streams_decode_through_the_real_library_into_rocprofv3s_outputs() {
    let dir = decoder_dir("ok");
    let path = find(&[dir.join("lib")], &no_env()).expect("found by the recursive search");
    // SAFETY: the workspace's own simulated decoder; its initialisers do nothing.
    let decoder = unsafe { Decoder::load(&path) }.expect("all three symbols");
    let ses: Vec<ShaderEngineTrace> = [(0u8, 3u8), (1, 2)]
        .into_iter()
        .map(|(se, waves)| ShaderEngineTrace {
            se: u32::from(se),
            decoded: decoder
                .decode_stream(&stream(se, waves), &isa)
                .expect("decodes"),
        })
        .collect();
    for s in &ses {
        assert_eq!(s.decoded.gfxip, Some(11));
        for w in &s.decoded.waves {
            assert_eq!(w.instructions.len() as u64, WAVE_INSTRUCTIONS);
            assert!(w.instructions.iter().all(|i| i.pc.marker_id == 1));
        }
    }
    assert_eq!(ses[0].decoded.waves.len(), 3);
    assert_eq!(ses[1].decoded.waves.len(), 2);

    let out = dir.join("out");
    let mut writer = AttWriter::new(&out, OutputOptions::default());
    let summary = writer
        .write_dispatch(
            &DispatchTrace {
                agent_handle: 1,
                dispatch_id: 7,
                shader_engines: ses,
            },
            &table(),
            None,
        )
        .expect("written");
    assert_eq!(summary.wave_files, 5);
    assert_eq!(summary.unresolved_instructions, 0);
    let ui = out.join("ui_output_agent_1_dispatch_7");
    for f in [
        "code.json",
        "filenames.json",
        "occupancy.json",
        "se0_sm0_sl0_wv0.json",
    ] {
        assert!(ui.join(f).exists(), "{f}");
    }
    assert!(ui.join("se1_sm0_sl1_wv0.json").exists());
    // Every instruction was hit once per wave traced (5), the third one stalled 3 cycles each.
    let csv = std::fs::read_to_string(out.join("stats_ui_output_agent_1_dispatch_7.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        r#""CodeObj","Vaddr","Instruction","Hitcount","Latency","Stall","Idle","Source""#
    );
    let hits: Vec<Vec<&str>> = rows[2..].iter().map(|r| r.split(',').collect()).collect();
    assert_eq!(hits.len() as u64, WAVE_INSTRUCTIONS, "{csv}");
    assert!(hits.iter().all(|r| r[3] == "5"), "{csv}");
    assert_eq!(hits[2][5], "15", "stall summed over the waves: {csv}");
    assert!(
        rows[1].starts_with(r#"1,256,"; _Z10vector_addPKfS0_Pfm",0,0,0,0,"vector_add("#),
        "the kernel's row of zeros, its demangled name as the Source: {csv}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_decoder_returning_errors_is_reported_by_its_status_name() {
    let dir = decoder_dir("fail");
    let path = find(&[dir.join("lib")], &no_env()).unwrap();
    // Each case runs in a child: the variable is read by the library at every call, but the
    // test harness runs tests on threads of one process.
    if std::env::var_os("ATT_SIM_CHILD").is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_decoder_returning_errors_is_reported_by_its_status_name",
                "--nocapture",
            ])
            .env("ATT_SIM_CHILD", "1")
            .env("WSLSIM_DECODER_FAIL", "4")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Garbage is refused as AMD's decoder refuses it: INVALID_SHADER_DATA, no records.
        // SAFETY: the workspace's own simulated decoder.
        let decoder = unsafe { Decoder::load(&path) }.unwrap();
        match decoder.decode_stream(&[0u8; 4096], &isa) {
            Err(e @ Error::Decoder { .. }) => {
                let partial = e.partial().expect("the records received");
                assert!(partial.waves.is_empty() && partial.gfxip.is_none());
            }
            other => panic!("expected the decoder's error, got {other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // SAFETY: the workspace's own simulated decoder.
    let decoder = unsafe { Decoder::load(&path) }.unwrap();
    match decoder.decode_stream(&stream(0, 1), &isa) {
        Err(Error::Decoder { name, .. }) => assert_eq!(
            name,
            "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA"
        ),
        other => panic!("expected the decoder's error, got {other:?}"),
    }
}
