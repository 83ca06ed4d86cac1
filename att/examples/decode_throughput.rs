//! Decode throughput: SQTT streams (written by the simulated GPU's encoder, 64 MiB in all)
//! through the workspace's simulated `librocprof-trace-decoder.so`, one `parse_data` per
//! stream, then rocprofv3's per-dispatch outputs. Prints MB/s of SQTT data for the decode alone
//! and for decoding with the outputs (end to end, the files written on the writer thread while
//! the next stream decodes, as `rocprof` does it). Needs the decoder built (`cargo build -p sim-trace-decoder`, which
//! `cargo xtask bench` does).
//!
//! With a directory argument the outputs are written there and kept (to compare the files two
//! builds write); otherwise they go to a temporary directory that is removed afterwards.

use att::Decoder;
use att::codeobj::{ByAddress, CodeObject, CodeObjectTable, KernelSymbol};
use att::outputs::{AttWriter, BackgroundWriter, DispatchTrace, OutputOptions, ShaderEngineTrace};
use std::path::PathBuf;
use std::time::Instant;
use wslsim_sqtt::{Category, Encoder, Instruction, WaveKey};

const LOAD: u64 = 0x7f00_0000_0000;
const INSTRUCTIONS: u64 = 64;
const WAVES: u32 = 2048;

fn stream() -> Vec<u8> {
    let mut e = Encoder::new();
    e.roc_preamble()
        .code_object_marker(1, LOAD, 0x10000, false, true);
    for w in 0..WAVES {
        let key = WaveKey {
            cu: 1,
            simd: (w % 4) as u8,
            slot: (w / 4 % 16) as u8,
        };
        let t0 = 1_000 + u64::from(w) * 300;
        e.wave_start(key, t0, LOAD + 0x100);
        for k in 0..INSTRUCTIONS {
            e.instruction(
                key,
                Instruction {
                    pc: LOAD + 0x100 + 4 * k,
                    category: if k % 4 == 0 {
                        Category::SALU
                    } else {
                        Category::VALU
                    },
                    time: t0 + 4 * k,
                    duration: 4,
                    stall: u32::from(k % 7 == 0),
                },
            );
        }
        e.wave_end(key, t0 + 4 * INSTRUCTIONS);
    }
    e.finish()
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let built = ["target/release", "target/debug"]
        .iter()
        .map(|d| root.join(d).join("librocprof_trace_decoder.so"))
        .find(|p| p.exists())
        .expect("build the simulated decoder first: cargo build -p sim-trace-decoder");
    let decoder = Decoder::load_trusted(&built).expect("the simulated decoder loads");
    let one = stream();
    let streams = (64usize << 20).div_ceil(one.len());
    let mut table = CodeObjectTable::new();
    table.insert(CodeObject {
        id: 1,
        load_base: LOAD,
        load_size: 0x10000,
        file: PathBuf::from("bench.out"),
        kernels: vec![KernelSymbol {
            name: "bench_kernel".into(),
            demangled: "bench_kernel".into(),
            vaddr: 0x100..0x100 + 4 * INSTRUCTIONS,
        }],
    });
    let isa = ByAddress::new(&table);
    let t = Instant::now();
    for _ in 0..streams {
        std::hint::black_box(decoder.decode_stream(&one, &isa).expect("decodes"));
    }
    let decode_s = t.elapsed().as_secs_f64();
    // Decoding with the outputs as `rocprof` runs it: each dispatch's files are written on the
    // writer thread while the next dispatch decodes.
    let keep = std::env::args_os().nth(1).map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("att-decode-bench-{}", std::process::id()))
    });
    let t = Instant::now();
    let mut writer =
        BackgroundWriter::spawn(AttWriter::new(&dir, OutputOptions::default()), 1).expect("starts");
    for k in 0..streams {
        let d = decoder.decode_stream(&one, &isa).expect("decodes");
        writer.submit(
            DispatchTrace {
                agent_handle: 1,
                dispatch_id: k as u64 + 1,
                shader_engines: vec![ShaderEngineTrace { se: 0, decoded: d }],
            },
            table.clone(),
            None,
        );
    }
    for r in writer.finish().1 {
        r.expect("written");
    }
    let total_s = t.elapsed().as_secs_f64();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let mb = (streams * one.len()) as f64 / 1e6;
    println!(
        "thread-trace decode: {mb:.1} MB of SQTT data in {streams} streams of {WAVES} waves × \
         {INSTRUCTIONS} instructions: decode {:.1} MB/s, decode + rocprofv3's outputs {:.1} MB/s",
        mb / decode_s,
        mb / total_s
    );
}
