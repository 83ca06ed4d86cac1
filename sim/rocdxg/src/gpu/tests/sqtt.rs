//! Thread trace: the begin and end buffers pmc-dxg's `sqtt::build_trace` submits (written out
//! here dword by dword, the simulator may not depend on the product), a dispatch between them,
//! and each engine's buffer parsed with `wslsim_sqtt::parse`.

use std::collections::BTreeMap;

use wslsim_scenario::Scenario;
use wslsim_sqtt::{Category, Stream, Token, WaveKey, parse};

use super::builder::{self, Block, Pm4};
use super::{FakeMemory, clean};
use crate::gpu::cost::Kernel;
use crate::gpu::counters::{Geometry, PerfBlock, Session, sq};
use crate::gpu::regs::{GfxIndex, RegisterFile};
use crate::gpu::sqtt::{Shape, ThreadTrace};
use crate::gpu::{NodeGpu, program_steps};

// The registers and values of pmc-dxg/src/sqtt.rs (verified-facts §1 "ATT bonus").
const GRBM_GFX_INDEX: u32 = 0xC200;
const BROADCAST: u32 = 0xE000_0000;
const BUF0_BASE: u32 = 0xD9E8;
const BUF0_SIZE: u32 = 0xD9E9;
const CTRL: u32 = 0xD9EC;
const MASK: u32 = 0xD9ED;
const TOKEN_MASK: u32 = 0xD9EE;
const WPTR: u32 = 0xD9EF;
const STATUS: u32 = 0xD9F4;
const DROPPED_CNTR: u32 = 0xD9FA;
const USERDATA_2: u32 = 0xC342;
const COMPUTE_THREAD_TRACE_ENABLE: u32 = 0x2E1E;
const CTRL_ON: u32 = 1 | (5 << 6) | (1 << 11) | (1 << 12) | (1 << 13) | (2 << 16) | (1 << 29);
const TOKENS_ALL: u32 = 0x7FF;
const TOKENS_DETAIL: u32 = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8);
const TOKENS_OCCUPANCY: u32 = (1 << 4) | (1 << 5);
const REG_INCLUDE_USERDATA: u32 = 1 << 16;
const REG_EXCLUDE: u32 = 3 << 26;
const WTYPE_COMPUTE: u32 = (1 << 6) << 10;
const EXCLUDE_NONDETAIL_SHADERDATA: u32 = 1 << 17;
const STATUS_FINISH_PENDING: u32 = 0xFFF;
const STATUS_WRITE_ERROR: u32 = 1 << 24;
const STATUS_BUSY: u32 = 1 << 25;
const STREAM_MAGIC: [u32; 2] = [0x434F_5200, 524_801];
/// pmc-dxg's `pm4::PROOF_WORD`, which the begin buffer writes last.
const PROOF_WORD: u32 = 0x5EED_CAFE;

const DATA: u64 = 0x7100_0000_0000;
const CONTROL: u64 = 0x7200_0000_0000;
const CODE: u64 = 0x7F00_1234_5100;
/// One code-object marker (pmc-dxg's `marker_words` of id 1 at 0x7F00_1234_5000, 0x2000
/// bytes, from the start).
const MARKER: [u32; 10] = [
    4,
    0x1234_5000,
    0x104,
    0x7F00,
    0x204,
    0x2000,
    0x304,
    0,
    0x604,
    6,
];

/// What to trace (pmc-dxg's `TraceParams`).
#[derive(Clone, Copy, Debug)]
struct Params {
    target_cu: u32,
    se_mask: u64,
    simd_select: u32,
    /// Bytes per traced engine (masked engines get 4 KiB).
    se_bytes: u64,
    occupancy_only: bool,
}

impl Params {
    fn detail(se_mask: u64) -> Params {
        Params {
            target_cu: 1,
            se_mask,
            simd_select: 0xF,
            se_bytes: 1 << 20,
            occupancy_only: false,
        }
    }

    /// Each engine's (offset, size, traced) in the data buffer, in engine order.
    fn split(&self, ses: u32) -> Vec<(u64, u64, bool)> {
        let mut offset = 0;
        (0..ses)
            .map(|se| {
                let traced = self.se_mask & (1 << se) != 0;
                let size = if traced { self.se_bytes } else { 4096 };
                let part = (offset, size, traced);
                offset += size;
                part
            })
            .collect()
    }
}

fn select_se(se: u32) -> u32 {
    (se << 16) | (1 << 30)
}

/// pmc-dxg's begin buffer.
fn begin(params: &Params, ses: u32) -> Pm4 {
    let kept = if params.occupancy_only {
        TOKENS_OCCUPANCY
    } else {
        TOKENS_DETAIL
    };
    let token_on = (TOKENS_ALL & !kept) | REG_INCLUDE_USERDATA | REG_EXCLUDE;
    let mask = (params.simd_select & 0x3)
        | ((params.target_cu & 0xF) << 4)
        | WTYPE_COMPUTE
        | EXCLUDE_NONDETAIL_SHADERDATA;
    let mut w = Pm4::new();
    w.set_uconfig(GRBM_GFX_INDEX, BROADCAST);
    w.set_uconfig(STATUS, 0);
    let parts = params.split(ses);
    for (se, &(offset, size, traced)) in parts.iter().enumerate() {
        let address = DATA + offset;
        w.set_uconfig(GRBM_GFX_INDEX, select_se(se as u32));
        w.set_uconfig(
            BUF0_SIZE,
            (((size >> 12) as u32) << 8) | ((address >> 44) as u32 & 0xF),
        );
        w.set_uconfig(BUF0_BASE, (address >> 12) as u32);
        w.set_uconfig(MASK, mask);
        w.set_uconfig(TOKEN_MASK, if traced { token_on } else { TOKENS_ALL });
        w.set_uconfig(CTRL, CTRL_ON);
    }
    if parts.iter().any(|part| part.2) {
        w.set_sh(COMPUTE_THREAD_TRACE_ENABLE, 1);
    }
    w.set_uconfig(GRBM_GFX_INDEX, BROADCAST);
    w.wait_idle();
    for word in STREAM_MAGIC.into_iter().chain(MARKER) {
        w.set_uconfig(USERDATA_2, word);
    }
    // The proof of execution: WRITE_DATA (DST_SEL memory, WR_CONFIRM) of 0x5EEDCAFE into the
    // control block's slot after the engines' records.
    let proof = CONTROL + u64::from(ses) * 32;
    w.raw(&[
        0xC003_3700,
        0x0010_0500,
        proof as u32,
        (proof >> 32) as u32,
        PROOF_WORD,
    ]);
    w
}

/// pmc-dxg's end buffer.
fn end(ses: u32) -> Pm4 {
    let mut w = Pm4::new();
    w.set_uconfig(GRBM_GFX_INDEX, BROADCAST);
    w.wait_idle();
    w.set_sh(COMPUTE_THREAD_TRACE_ENABLE, 0);
    for se in 0..ses {
        w.set_uconfig(GRBM_GFX_INDEX, select_se(se));
        w.wait_reg_mem(false, u64::from(STATUS), true, STATUS_FINISH_PENDING, 0);
        w.set_uconfig(CTRL, 0);
        w.wait_reg_mem(false, u64::from(STATUS), true, STATUS_BUSY, 0);
        let record = CONTROL + u64::from(se) * 32;
        w.copy_reg_to_memory(STATUS, record);
        w.copy_reg_to_memory(DROPPED_CNTR, record + 4);
        w.copy_reg_to_memory(WPTR, record + 8);
    }
    w.set_uconfig(GRBM_GFX_INDEX, BROADCAST);
    w.acquire_mem(CONTROL, u64::from(ses) * 32);
    w
}

/// The default 890M with `ses` shader engines and counters without pitfalls.
fn scenario(ses: u32) -> Scenario {
    let mut scenario = Scenario {
        counters: clean(),
        ..Scenario::default()
    };
    scenario.nodes[0].shader_engines = ses;
    scenario
}

fn kernel(items: u32, salu: u32, valu: u32) -> Kernel {
    Kernel {
        salu_per_wave: salu,
        valu_per_wave: valu,
        ..Kernel::linear(items, 256)
    }
}

/// One engine's control record and trace as the memory holds them.
#[derive(Debug)]
struct Traced {
    status: u32,
    dropped: u32,
    wptr: u32,
    bytes: Vec<u8>,
    stream: Stream,
}

fn read_bytes(memory: &FakeMemory, address: u64, len: u64) -> Vec<u8> {
    (0..len / 4)
        .flat_map(|i| memory.get(address + 4 * i).to_le_bytes())
        .collect()
}

/// Reads engine `se`'s control record and the bytes its WPTR reports.
fn traced(memory: &FakeMemory, params: &Params, ses: u32, se: u32) -> Traced {
    let record = CONTROL + u64::from(se) * 32;
    let (status, dropped, wptr) = (
        memory.get(record),
        memory.get(record + 4),
        memory.get(record + 8),
    );
    let (offset, size, _) = params.split(ses)[se as usize];
    let address = DATA + offset;
    let units = wptr.wrapping_sub((address / 32) as u32) & 0x1FFF_FFFF;
    let len = u64::from(units) * 32;
    assert!(
        len <= size,
        "engine {se}: {len} bytes in a {size}-byte buffer"
    );
    let bytes = read_bytes(memory, address, len);
    let stream = parse(&bytes).unwrap_or_else(|e| panic!("engine {se}: {e}"));
    assert!(
        !stream.truncated,
        "engine {se}: the stream ends inside a token"
    );
    Traced {
        status,
        dropped,
        wptr,
        bytes,
        stream,
    }
}

/// Runs begin, the dispatch, end on a fresh node; returns the memory.
fn trace_one(
    scenario: &Scenario,
    params: &Params,
    kernel: &Kernel,
    seed: u64,
) -> (NodeGpu, FakeMemory) {
    let ses = scenario.nodes[0].shader_engines;
    let node = NodeGpu::new(scenario, 1, seed).unwrap();
    let mut memory = FakeMemory::default();
    node.pm4(&begin(params, ses).dwords, &mut memory).unwrap();
    node.dispatch_code(kernel, CODE, || Ok(())).unwrap();
    node.pm4(&end(ses).dwords, &mut memory).unwrap();
    (node, memory)
}

/// One wave of a stream: (key, start, entry pc, instructions, end).
type Wave = (
    WaveKey,
    u64,
    u64,
    Vec<wslsim_sqtt::Instruction>,
    Option<u64>,
);

/// The user data, waves (per slot, in stream order) and data-lost tokens of a stream.
#[derive(Debug, Default)]
struct Summary {
    userdata: Vec<u32>,
    waves: Vec<Wave>,
    data_lost: Vec<u32>,
}

fn summarize(stream: &Stream) -> Summary {
    let mut summary = Summary::default();
    let mut live: BTreeMap<WaveKey, usize> = BTreeMap::new();
    for token in &stream.tokens {
        match *token {
            Token::RegWrite { register, value } => {
                assert_eq!(register, USERDATA_2);
                summary.userdata.push(value);
            }
            Token::WaveStart {
                wave,
                time,
                entry_pc,
            } => {
                assert!(
                    live.insert(wave, summary.waves.len()).is_none(),
                    "two live waves in {wave:?}"
                );
                summary.waves.push((wave, time, entry_pc, Vec::new(), None));
            }
            Token::Instruction { wave, inst } => {
                let index = live[&wave];
                summary.waves[index].3.push(inst);
            }
            Token::WaveEnd { wave, time } => {
                let index = live.remove(&wave).expect("a wave ends that started");
                summary.waves[index].4 = Some(time);
            }
            Token::DataLost { dropped_bytes } => summary.data_lost.push(dropped_bytes),
            Token::Time(_) => {}
        }
    }
    summary
}

/// The documented placement: workgroup g on round-robin WGP g mod W (engines fastest, then
/// shader arrays, then WGPs), wave w of it on SIMD w mod 4. Returns, per engine, the waves
/// placed and those on (WGP `target`, SIMD `simd`).
fn placement(shape: &Shape, kernel: &Kernel, target: u32, simd: u32) -> Vec<(u64, u64)> {
    let mut counts = vec![(0, 0); shape.shader_engines as usize];
    let groups = kernel.workgroups();
    let waves_per_group = u64::from(kernel.workgroup[0]).div_ceil(u64::from(kernel.wave_size));
    for g in 0..groups {
        let j = g % shape.wgps();
        let se = j % u64::from(shape.shader_engines);
        let rest = j / u64::from(shape.shader_engines);
        let sa = rest % u64::from(shape.arrays_per_engine);
        let wgp = sa * u64::from(shape.wgp_per_array) + rest / u64::from(shape.arrays_per_engine);
        for w in 0..waves_per_group {
            counts[se as usize].0 += 1;
            if wgp == u64::from(target) && w % 4 == u64::from(simd) {
                counts[se as usize].1 += 1;
            }
        }
    }
    counts
}

#[test]
fn each_traced_engine_writes_its_waves_in_detail_on_the_target_and_occupancy_elsewhere() {
    let scenario = scenario(2);
    let node = NodeGpu::new(&scenario, 1, 7).unwrap();
    let shape = *node.shape();
    assert_eq!(
        (
            shape.shader_engines,
            shape.arrays_per_engine,
            shape.wgp_per_array
        ),
        (2, 2, 2)
    );
    assert_eq!((shape.simds_per_wgp, shape.slots_per_simd), (4, 16));
    let params = Params::detail(0b11);
    // 16 workgroups of 8 waves, each wave running 4 SALU-side + 10 VALU + s_endpgm.
    let kernel = kernel(4096, 4, 10);
    let (_, memory) = trace_one(&scenario, &params, &kernel, 7);
    let program = wslsim_codeobj::program(4, 10);
    assert_eq!(program.len(), 15);
    let expected = placement(&shape, &kernel, 1, 3);
    assert_eq!(expected, [(64, 4), (64, 4)], "the documented placement");
    for se in 0..2 {
        let t = traced(&memory, &params, 2, se);
        assert_eq!(t.stream.header.shader_engine, se as u8);
        assert_eq!(t.stream.header.gfxip_major, 11);
        assert!(t.bytes.len().is_multiple_of(32));
        assert_eq!(
            t.wptr,
            (((DATA + params.split(2)[se as usize].0) / 32) as u32 + t.bytes.len() as u32 / 32)
                & 0x1FFF_FFFF
        );
        assert_eq!(t.status & (STATUS_FINISH_PENDING | STATUS_BUSY), 0);
        assert_eq!(t.status & STATUS_WRITE_ERROR, 0, "engine {se}");
        assert_eq!(t.dropped, 0);
        let s = summarize(&t.stream);
        let mut userdata = STREAM_MAGIC.to_vec();
        userdata.extend(MARKER);
        assert_eq!(s.userdata, userdata, "the magic, then the marker, in order");
        assert!(s.data_lost.is_empty());
        assert_eq!(s.waves.len() as u64, expected[se as usize].0);
        let detail: Vec<_> = s.waves.iter().filter(|w| !w.3.is_empty()).collect();
        assert_eq!(detail.len() as u64, expected[se as usize].1);
        for (key, start, entry, insts, end) in &s.waves {
            assert_eq!(*entry, CODE);
            let on_target = key.cu == 1 && key.simd == 3;
            assert_eq!(!insts.is_empty(), on_target, "{key:?}");
            assert!(key.cu < 4 && key.simd < 4 && key.slot < 16, "{key:?}");
            let end = end.expect("every wave ends");
            if !on_target {
                assert!(end > *start);
                continue;
            }
            assert_eq!(insts.len(), program.len(), "one INST per instruction");
            let mut time = *start;
            for (inst, step) in insts.iter().zip(&program) {
                assert_eq!(inst.pc, CODE + step.offset);
                assert_eq!(inst.category, Category(step.category));
                assert_eq!(inst.time, time, "issue follows the previous instruction");
                assert_eq!(
                    inst.duration,
                    step.cycles + inst.stall,
                    "the stall is counted"
                );
                assert!(inst.stall <= 8);
                time += u64::from(inst.duration);
            }
            assert_eq!(end, time, "the wave ends when its last instruction does");
        }
        // Some instructions stall, most do not.
        let insts: Vec<_> = detail.iter().flat_map(|w| &w.3).collect();
        let stalled = insts.iter().filter(|i| i.stall > 0).count();
        assert!(
            stalled > 0 && stalled < insts.len() / 2,
            "{stalled} of {}",
            insts.len()
        );
    }
}

/// Per wave, in stream order: its start and each instruction's (duration, stall), relative to
/// the first wave's start.
fn shape_of(memory: &FakeMemory, params: &Params) -> Vec<(u64, Vec<(u32, u32)>)> {
    let s = summarize(&traced(memory, params, 1, 0).stream);
    let first = s.waves[0].1;
    s.waves
        .iter()
        .map(|w| {
            (
                w.1 - first,
                w.3.iter().map(|i| (i.duration, i.stall)).collect(),
            )
        })
        .collect()
}

#[test]
fn the_begin_buffers_proof_word_reaches_the_control_block_beside_the_records() {
    for ses in [1, 2] {
        let scenario = scenario(ses);
        let params = Params::detail(1);
        let (_, memory) = trace_one(&scenario, &params, &kernel(4096, 2, 3), 5);
        let proof = CONTROL + u64::from(ses) * 32;
        assert_eq!(memory.get(proof), PROOF_WORD, "{ses} engines");
        assert_eq!(memory.get(proof + 4), 0, "one word, nothing after it");
        // The trace is untouched by the WRITE_DATA: engine 0's stream parses whole.
        assert!(!traced(&memory, &params, ses, 0).stream.tokens.is_empty());
    }
}

#[test]
fn the_same_seed_traces_the_same_waves() {
    let scenario = scenario(1);
    let params = Params::detail(1);
    let kernel = kernel(8192, 3, 6);
    let (_, a) = trace_one(&scenario, &params, &kernel, 11);
    let (_, b) = trace_one(&scenario, &params, &kernel, 11);
    let (_, c) = trace_one(&scenario, &params, &kernel, 12);
    assert_eq!(shape_of(&a, &params), shape_of(&b, &params));
    assert_ne!(shape_of(&a, &params), shape_of(&c, &params));
}

#[test]
fn a_full_buffer_ends_with_data_lost_a_write_error_and_a_dropped_count() {
    let scenario = scenario(1);
    let params = Params {
        se_bytes: 4096,
        ..Params::detail(1)
    };
    // 8 192 waves: far more than 4 KiB of tokens.
    let (_, memory) = trace_one(&scenario, &params, &kernel(262_144, 4, 10), 3);
    let t = traced(&memory, &params, 1, 0);
    assert_ne!(t.status & STATUS_WRITE_ERROR, 0);
    assert_eq!(t.status & (STATUS_FINISH_PENDING | STATUS_BUSY), 0);
    assert!(t.dropped > 8192 * 32, "dropped {}", t.dropped);
    assert!(t.bytes.len() <= 4096 && t.bytes.len().is_multiple_of(32));
    let s = summarize(&t.stream);
    assert_eq!(
        s.data_lost,
        [t.dropped],
        "one DATA_LOST with the dropped bytes"
    );
    let lost_at = t
        .stream
        .tokens
        .iter()
        .position(|token| matches!(token, Token::DataLost { .. }))
        .unwrap();
    assert!(
        t.stream.tokens[lost_at + 1..]
            .iter()
            .all(|token| matches!(token, Token::Time(_))),
        "only padding follows DATA_LOST"
    );
    assert!(!s.waves.is_empty(), "the first waves made it");
}

#[test]
fn occupancy_mode_writes_no_instructions() {
    let scenario = scenario(1);
    let params = Params {
        occupancy_only: true,
        ..Params::detail(1)
    };
    let kernel = kernel(4096, 4, 10);
    let (node, memory) = trace_one(&scenario, &params, &kernel, 5);
    let t = traced(&memory, &params, 1, 0);
    assert!(
        !t.stream
            .tokens
            .iter()
            .any(|token| matches!(token, Token::Instruction { .. }))
    );
    let s = summarize(&t.stream);
    assert_eq!(s.userdata.len(), 12);
    let expected = placement(node.shape(), &kernel, 1, 3);
    assert_eq!(s.waves.len() as u64, expected[0].0);
    assert!(s.waves.iter().all(|w| w.4.is_some()));
}

#[test]
fn a_masked_engine_writes_only_its_header() {
    let scenario = scenario(2);
    let params = Params::detail(0b01);
    let (_, memory) = trace_one(&scenario, &params, &kernel(4096, 4, 10), 5);
    let t = traced(&memory, &params, 2, 1);
    assert!(
        t.stream
            .tokens
            .iter()
            .all(|token| matches!(token, Token::Time(_)))
    );
    assert_eq!((t.bytes.len(), t.status, t.dropped), (64, 0, 0));
    let traced_one = traced(&memory, &params, 2, 0);
    assert!(summarize(&traced_one.stream).waves.len() == 64);
}

#[test]
fn without_tracing_nothing_is_written_and_timing_and_counters_do_not_change() {
    let scenario = scenario(1);
    let kernel = kernel(262_144, 4, 10);
    let requests = [(Block::Sq, sq::WAVES), (Block::Sq, sq::INSTS_VALU)];
    let counters = builder::counters(&requests);
    let run = |traced: bool| {
        let node = NodeGpu::new(&scenario, 1, 9).unwrap();
        let mut memory = FakeMemory::default();
        node.pm4(&builder::pmc_start(&counters).dwords, &mut memory)
            .unwrap();
        if traced {
            node.pm4(&begin(&Params::detail(1), 1).dwords, &mut memory)
                .unwrap();
        }
        let dispatched = node.dispatch_code(&kernel, CODE, || Ok(())).unwrap();
        if traced {
            node.pm4(&end(1).dwords, &mut memory).unwrap();
        } else {
            // A submission that flushes anything pending (nothing is).
            node.pm4(&Pm4::new().nop(4).dwords, &mut memory).unwrap();
        }
        let values = node.with_registers(|r| [r.perf.read_sq_sum(0), r.perf.read_sq_sum(1)]);
        (dispatched, values, memory)
    };
    let (plain, plain_values, plain_memory) = run(false);
    let (both, both_values, both_memory) = run(true);
    assert!(plain_memory.dwords.is_empty(), "no trace, no writes");
    assert!(!both_memory.dwords.is_empty());
    assert_eq!(plain.cost, both.cost);
    let ticks = |d: &crate::gpu::Dispatched| d.timing.end_tick - d.timing.start_tick;
    let modelled = NodeGpu::new(&scenario, 1, 9)
        .unwrap()
        .clock()
        .ticks_for(plain.cost.duration_ns);
    assert!(ticks(&plain) >= modelled && ticks(&both) >= modelled);
    assert_eq!(plain_values, [8192, 81_920]);
    assert_eq!(both_values, plain_values, "counting and tracing together");

    // Engines on but compute tracing disabled: the dispatch adds nothing to the stream.
    let node = NodeGpu::new(&scenario, 1, 9).unwrap();
    let mut memory = FakeMemory::default();
    node.pm4(&begin(&Params::detail(1), 1).dwords, &mut memory)
        .unwrap();
    let mut off = Pm4::new();
    off.set_sh(COMPUTE_THREAD_TRACE_ENABLE, 0);
    node.pm4(&off.dwords, &mut memory).unwrap();
    node.dispatch_code(&kernel, CODE, || Ok(())).unwrap();
    node.pm4(&end(1).dwords, &mut memory).unwrap();
    let t = traced(&memory, &Params::detail(1), 1, 0);
    assert!(summarize(&t.stream).waves.is_empty());
}

#[test]
fn engine_registers_follow_grbm_gfx_index() {
    let geometry = Geometry {
        shader_engines: 2,
        ..Geometry::radeon_890m()
    };
    let mut registers = RegisterFile::new(PerfBlock::new(geometry, Session::new(&clean(), 1, 1)));
    registers.write(GRBM_GFX_INDEX, select_se(1));
    registers.write(MASK, 0x51);
    registers.write(GRBM_GFX_INDEX, select_se(0));
    registers.write(MASK, 0x13);
    assert_eq!(registers.read(MASK), 0x13);
    registers.write(GRBM_GFX_INDEX, select_se(1));
    assert_eq!(registers.read(MASK), 0x51);
    registers.write(GRBM_GFX_INDEX, BROADCAST);
    registers.write(TOKEN_MASK, 0x7FF);
    assert_eq!(
        registers.read(TOKEN_MASK),
        0x7FF,
        "a broadcast reads engine 0"
    );
    registers.write(GRBM_GFX_INDEX, select_se(1));
    assert_eq!(
        registers.read(TOKEN_MASK),
        0x7FF,
        "the broadcast reached engine 1"
    );
    // An engine that does not exist takes no writes and reads 0.
    registers.write(GRBM_GFX_INDEX, select_se(5));
    registers.write(MASK, 0x99);
    assert_eq!(registers.read(MASK), 0);
    assert!(ThreadTrace::owns(USERDATA_2) && ThreadTrace::owns(WPTR));
    assert!(!ThreadTrace::owns(GRBM_GFX_INDEX));
    // Tracing starts for the selected engine only; STATUS never reports pending or busy.
    registers.write(GRBM_GFX_INDEX, select_se(1));
    registers.write(BUF0_SIZE, 1 << 8);
    registers.write(BUF0_BASE, 0x1234);
    registers.write(CTRL, CTRL_ON);
    registers.write(COMPUTE_THREAD_TRACE_ENABLE, 1);
    assert!(registers.trace.capturing());
    // 16 header bytes are not yet a whole 32-byte unit.
    assert_eq!(registers.read(WPTR), 0x0123_4000 / 32);
    assert_eq!(registers.read(STATUS), 0);
    assert_eq!(registers.trace.stream_bytes(1).map(|b| b.len()), Some(16));
    assert!(registers.trace.stream_bytes(0).is_none());
    let index = GfxIndex::decode(select_se(0));
    assert_eq!(registers.trace.read(index, CTRL), 0);
}

#[test]
fn the_traced_program_is_the_code_objects() {
    let steps = program_steps(&kernel(64, 4, 10));
    let program = wslsim_codeobj::program(4, 10);
    assert_eq!(steps.len(), 15);
    for (step, inst) in steps.iter().zip(&program) {
        assert_eq!(
            (step.offset, step.category, step.cycles),
            (inst.offset, inst.category, inst.cycles)
        );
    }
}
