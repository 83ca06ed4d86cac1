//! Tests the built `librocprof_trace_decoder.so` through `dlopen`/`dlsym`, as the SDK and the
//! product load AMD's decoder. The C layouts here are written out again from the V1 header
//! rather than taken from the crate, so a layout mistake on either side fails a test.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use wslsim_sqtt::{Category, Encoder, Header, Instruction, WaveKey};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Pc {
    addr: u64,
    marker_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Occupancy {
    pc: Pc,
    time: u64,
    reserved: u8,
    cu: u8,
    simd: u8,
    slot: u8,
    flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WaveState {
    kind: i32,
    duration: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inst {
    bits: u32,
    duration: i32,
    time: i64,
    pc: Pc,
}

#[repr(C)]
struct Wave {
    cu: u8,
    simd: u8,
    wave_id: u8,
    contexts: u8,
    reserved: [u32; 3],
    begin_time: i64,
    end_time: i64,
    timeline_size: u64,
    instructions_size: u64,
    timeline: *const WaveState,
    instructions: *const Inst,
}

const _: () = {
    assert!(size_of::<Pc>() == 16);
    assert!(size_of::<Occupancy>() == 32 && offset_of!(Occupancy, flags) == 28);
    assert!(offset_of!(Occupancy, cu) == 25 && offset_of!(Occupancy, slot) == 27);
    assert!(size_of::<WaveState>() == 8);
    assert!(size_of::<Inst>() == 32 && offset_of!(Inst, pc) == 16);
    assert!(size_of::<Wave>() == 64 && offset_of!(Wave, begin_time) == 16);
    assert!(offset_of!(Wave, timeline) == 48 && offset_of!(Wave, instructions) == 56);
};

type SeDataCb = unsafe extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;
type TraceCb = unsafe extern "C" fn(c_int, *mut c_void, u64, *mut c_void) -> c_int;
type IsaCb = unsafe extern "C" fn(*mut c_char, *mut u64, *mut u64, Pc, *mut c_void) -> c_int;
type ParseFn =
    unsafe extern "C" fn(Option<SeDataCb>, Option<TraceCb>, Option<IsaCb>, *mut c_void) -> c_int;
type StringFn = unsafe extern "C" fn(c_int) -> *const c_char;

const SUCCESS: c_int = 0;
const OUT_OF_RESOURCES: c_int = 2;
const INVALID_ARGUMENT: c_int = 3;
const INVALID_SHADER_DATA: c_int = 4;

const GFXIP: c_int = 0;
const OCCUPANCY: c_int = 1;
const WAVE: c_int = 3;
const INFO: c_int = 4;

const DATA_LOST: i32 = 1;
const STITCH_INCOMPLETE: i32 = 2;

struct Lib {
    handle: usize,
    parse: ParseFn,
    info: StringFn,
    status: StringFn,
}

/// The newer of `target/<profile>/lib…so` and `target/<profile>/deps/lib…so`.
fn library_path() -> PathBuf {
    let name = "librocprof_trace_decoder.so";
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    let profile = deps.parent().expect("profile directory").to_path_buf();
    let fallback = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/debug");
    [
        profile.join(name),
        deps.join(name),
        fallback.join(name),
        fallback.join("deps").join(name),
    ]
    .into_iter()
    .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
    .max_by_key(|(modified, _)| *modified)
    .map(|(_, p)| p)
    .unwrap_or_else(|| panic!("{name} not found; run `cargo build -p sim-trace-decoder`"))
}

fn lib() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let path = CString::new(library_path().into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; loading the simulator runs no constructors that need
        // anything from us.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "dlopen {path:?} failed");
        let sym = |name: &CStr| {
            // SAFETY: a live handle and a NUL-terminated name.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            assert!(!p.is_null(), "dlsym {name:?} failed");
            p
        };
        let (parse, info, status) = (
            sym(c"rocprof_trace_decoder_parse_data"),
            sym(c"rocprof_trace_decoder_get_info_string"),
            sym(c"rocprof_trace_decoder_get_status_string"),
        );
        // SAFETY: the symbols are these functions with these C signatures (decoder V1).
        unsafe {
            Lib {
                handle: handle as usize,
                parse: std::mem::transmute::<*mut c_void, ParseFn>(parse),
                info: std::mem::transmute::<*mut c_void, StringFn>(info),
                status: std::mem::transmute::<*mut c_void, StringFn>(status),
            }
        }
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Rec {
    Gfxip(usize),
    Occupancy(Vec<Occupancy>),
    Wave(Box<OwnedWave>),
    Info(i32),
    Other(c_int),
}

#[derive(Debug, Clone, PartialEq)]
struct OwnedWave {
    cu: u8,
    simd: u8,
    slot: u8,
    begin: i64,
    end: i64,
    timeline: Vec<WaveState>,
    insts: Vec<Inst>,
}

/// What the callbacks see: the chunks to hand out and everything received.
#[derive(Default)]
struct Tool {
    chunks: Vec<Vec<u8>>,
    /// Handed out together with the final 0 return (must never be read).
    last: Vec<u8>,
    se_calls: usize,
    records: Vec<Rec>,
    /// Every isa_cb call: pc and capacity.
    asked: Vec<(Pc, u64)>,
    /// Disassembly per pc; other pcs are unknown (INVALID_ARGUMENT).
    isa: HashMap<Pc, String>,
}

unsafe extern "C" fn se_data(buffer: *mut *mut u8, size: *mut u64, ud: *mut c_void) -> u64 {
    // SAFETY: `ud` is the `Tool` passed to parse_data, used only by this thread.
    let tool = unsafe { &mut *ud.cast::<Tool>() };
    tool.se_calls += 1;
    let (chunk, more) = match tool.chunks.get_mut(tool.se_calls - 1) {
        Some(chunk) => (chunk, 1),
        None => (&mut tool.last, 0),
    };
    // SAFETY: the decoder passes writable out-pointers.
    unsafe {
        *buffer = chunk.as_mut_ptr();
        *size = chunk.len() as u64;
    }
    more
}

unsafe extern "C" fn trace(kind: c_int, events: *mut c_void, count: u64, ud: *mut c_void) -> c_int {
    // SAFETY: as in `se_data`.
    let tool = unsafe { &mut *ud.cast::<Tool>() };
    let n = count as usize;
    match kind {
        GFXIP => {
            assert_eq!(count, 0);
            tool.records.push(Rec::Gfxip(events as usize));
        }
        OCCUPANCY => {
            // SAFETY: an occupancy batch is `count` occupancy_t, valid during the callback.
            let batch = unsafe { std::slice::from_raw_parts(events.cast::<Occupancy>(), n) };
            tool.records.push(Rec::Occupancy(batch.to_vec()));
        }
        WAVE => {
            // SAFETY: `count` wave_t, valid during the callback.
            let waves = unsafe { std::slice::from_raw_parts(events.cast::<Wave>(), n) };
            for w in waves {
                assert_eq!((w.contexts, w.reserved), (0, [0; 3]));
                // SAFETY: each wave's arrays hold its sizes' entries during the callback.
                let (timeline, insts) = unsafe {
                    (
                        std::slice::from_raw_parts(w.timeline, w.timeline_size as usize),
                        std::slice::from_raw_parts(w.instructions, w.instructions_size as usize),
                    )
                };
                tool.records.push(Rec::Wave(Box::new(OwnedWave {
                    cu: w.cu,
                    simd: w.simd,
                    slot: w.wave_id,
                    begin: w.begin_time,
                    end: w.end_time,
                    timeline: timeline.to_vec(),
                    insts: insts.to_vec(),
                })));
            }
        }
        INFO => {
            assert_eq!(count, 1);
            // SAFETY: INFO points to one info_t (an int).
            tool.records
                .push(Rec::Info(unsafe { *events.cast::<i32>() }));
        }
        other => tool.records.push(Rec::Other(other)),
    }
    SUCCESS
}

unsafe extern "C" fn isa(
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    pc: Pc,
    ud: *mut c_void,
) -> c_int {
    // SAFETY: as in `se_data`; the decoder passes writable `size` and `memory_size`.
    let (tool, capacity) = unsafe { (&mut *ud.cast::<Tool>(), *size) };
    tool.asked.push((pc, capacity));
    let Some(line) = tool.isa.get(&pc) else {
        return INVALID_ARGUMENT;
    };
    // SAFETY: see above.
    unsafe { *size = line.len() as u64 };
    if line.len() as u64 > capacity {
        return OUT_OF_RESOURCES;
    }
    // SAFETY: `text` is writable for `capacity` bytes, at least `line.len()`.
    unsafe {
        std::ptr::copy_nonoverlapping(line.as_ptr(), text.cast::<u8>(), line.len());
        *memory_size = 4;
    }
    SUCCESS
}

fn parse(tool: &mut Tool) -> c_int {
    // SAFETY: the callbacks follow the V1 contract and `tool` outlives the call.
    unsafe {
        (lib().parse)(
            Some(se_data),
            Some(trace),
            Some(isa),
            std::ptr::from_mut(tool).cast(),
        )
    }
}

fn decode(chunks: Vec<Vec<u8>>) -> (c_int, Tool) {
    let mut tool = Tool {
        chunks,
        ..Tool::default()
    };
    let status = parse(&mut tool);
    (status, tool)
}

fn waves(records: &[Rec]) -> Vec<&OwnedWave> {
    records
        .iter()
        .filter_map(|r| match r {
            Rec::Wave(w) => Some(&**w),
            _ => None,
        })
        .collect()
}

fn infos(records: &[Rec]) -> Vec<i32> {
    records
        .iter()
        .filter_map(|r| match r {
            Rec::Info(i) => Some(*i),
            _ => None,
        })
        .collect()
}

fn occupancy(records: &[Rec]) -> Vec<Occupancy> {
    records
        .iter()
        .filter_map(|r| match r {
            Rec::Occupancy(o) => Some(o.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Deterministic pseudo-random bytes (xorshift64).
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn exports_are_the_v1_api() {
    let lib = lib();
    for name in [c"rocprof_trace_decoder_dump_data", c"wslsim_missing"] {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(lib.handle as *mut c_void, name.as_ptr()) };
        assert!(p.is_null(), "{name:?} should not be exported");
    }
}

#[test]
fn strings_are_exact() {
    let lib = lib();
    let get = |f: StringFn, v: c_int| {
        // SAFETY: both string functions accept any value and return a static C string.
        unsafe { CStr::from_ptr(f(v)) }.to_str().unwrap().to_owned()
    };
    let prefix = "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_";
    let statuses = [
        "SUCCESS",
        "ERROR",
        "ERROR_OUT_OF_RESOURCES",
        "ERROR_INVALID_ARGUMENT",
        "ERROR_INVALID_SHADER_DATA",
        "LAST",
    ];
    for (i, name) in statuses.iter().enumerate() {
        assert_eq!(get(lib.status, i as c_int), format!("{prefix}{name}"));
    }
    assert_eq!(get(lib.status, 6), "STATUS_UNKNOWN");
    assert_eq!(get(lib.status, -1), "STATUS_UNKNOWN");
    let infos = [
        "NONE",
        "Data Lost: The profiler dropped part of the trace due to bandwidth limitations.",
        "Stitch Incomplete: The parser could not fully match a trace token to the underlying disassembly.",
        "Wave incomplete: The trace was cutoff before all waves ended.",
        "INFO_LAST",
    ];
    for (i, text) in infos.iter().enumerate() {
        assert_eq!(get(lib.info, i as c_int), *text);
    }
    assert_eq!(get(lib.info, 5), "Unknown info parameter.");
    assert_eq!(get(lib.info, -7), "Unknown info parameter.");
}

#[test]
fn empty_input_is_success_without_records() {
    let (status, tool) = decode(vec![]);
    assert_eq!((status, tool.se_calls), (SUCCESS, 1));
    assert!(tool.records.is_empty());
    // Bytes handed out with the 0 return are never read, and a size of 0 also ends the loop.
    let mut tool = Tool {
        last: Encoder::new().finish(),
        ..Tool::default()
    };
    assert_eq!(parse(&mut tool), SUCCESS);
    assert!(tool.records.is_empty());
    let (status, tool) = decode(vec![vec![], Encoder::new().finish()]);
    assert_eq!((status, tool.se_calls), (SUCCESS, 1));
    assert!(tool.records.is_empty());
}

#[test]
fn null_callbacks_are_invalid_arguments() {
    let mut tool = Tool::default();
    let ud = std::ptr::from_mut(&mut tool).cast();
    // SAFETY: null callbacks are rejected before anything is called.
    let status = unsafe { (lib().parse)(None, Some(trace), Some(isa), ud) };
    assert_eq!(status, INVALID_ARGUMENT);
    // SAFETY: as above.
    let status = unsafe { (lib().parse)(Some(se_data), Some(trace), None, ud) };
    assert_eq!(status, INVALID_ARGUMENT);
    assert_eq!(tool.se_calls, 0);
}

#[test]
fn foreign_data_is_invalid_shader_data_without_records() {
    for bytes in [vec![0; 4096], noise(64 << 10)] {
        let (status, tool) = decode(vec![bytes.clone(), Encoder::new().finish()]);
        assert_eq!((status, tool.se_calls), (INVALID_SHADER_DATA, 1));
        assert!(tool.records.is_empty(), "{:?}", tool.records);
        assert!(tool.asked.is_empty());
    }
}

const BASE1: u64 = 0x7F10_0000_0000;
const BASE2: u64 = 0x7F20_0000_4000;
const BIG_ID: u64 = (1 << 31) + 5;
const RAW_PC: u64 = 0x0000_5555_0000_0040;

const W0: WaveKey = WaveKey {
    cu: 0,
    simd: 0,
    slot: 0,
};
const W1: WaveKey = WaveKey {
    cu: 1,
    simd: 2,
    slot: 5,
};
const W2: WaveKey = WaveKey {
    cu: 1,
    simd: 3,
    slot: 15,
};

fn inst(pc: u64, category: Category, time: u64, duration: u32, stall: u32) -> Instruction {
    Instruction {
        pc,
        category,
        time,
        duration,
        stall,
    }
}

/// A wave as encoded: slot, begin, end, instructions.
type Encoded = (WaveKey, u64, u64, Vec<Instruction>);

/// Two code objects, three waves (two of them interleaved), a data-lost token.
fn scenario() -> (Vec<u8>, Vec<Encoded>) {
    let t0 = 100_000_000_000u64;
    let w0 = vec![
        inst(BASE1 + 0x100, Category::SALU, t0 + 4, 4, 0),
        inst(BASE1 + 0x104, Category::VALU, t0 + 10, 8, 3), // long disassembly: retried
        inst(BASE1 + 0x108, Category::IMMED, t0 + 20, 30, 2), // isa fails: unstitched
        inst(BASE1 + 0x100, Category::SALU, t0 + 60, 4, 0),
    ];
    let w1 = vec![
        inst(BASE2 + 0x40, Category::SMEM, t0 + 1_000, 100, 10),
        inst(RAW_PC, Category::JUMP, t0 + 1_200, 2, 0), // outside every code object
    ];
    let w2 = vec![inst(BASE2 + 0x44, Category::VMEM, t0 + 1_050, 500, 400)];
    let mut enc = Encoder::new();
    enc.timestamp(t0)
        .roc_preamble()
        .code_object_marker(1, BASE1, 0x1000, false, true)
        .code_object_marker(BIG_ID, BASE2, 0x2000, false, true)
        .wave_start(W0, t0 + 2, BASE1 + 0x100);
    for i in &w0 {
        enc.instruction(W0, *i);
    }
    enc.wave_end(W0, t0 + 100)
        .wave_start(W1, t0 + 990, 0)
        .instruction(W1, w1[0])
        .wave_start(W2, t0 + 1_010, 0)
        .instruction(W2, w2[0])
        .data_lost(512)
        .instruction(W1, w1[1])
        .wave_end(W1, t0 + 1_300)
        .wave_end(W2, t0 + 1_600);
    let expected = vec![
        (W0, t0 + 2, t0 + 100, w0),
        (W1, t0 + 990, t0 + 1_300, w1),
        (W2, t0 + 1_010, t0 + 1_600, w2),
    ];
    (enc.finish(), expected)
}

fn pc(addr: u64, marker_id: u64) -> Pc {
    Pc { addr, marker_id }
}

/// The tool's disassembly: everything but BASE1 + 0x108.
fn disassembly() -> HashMap<Pc, String> {
    HashMap::from([
        (pc(0x100, 1), "s_mov_b32 s0, 0".to_owned()),
        (
            pc(0x104, 1),
            format!("v_add_f32 v0, v1, v2 ; {}", "x".repeat(80)),
        ),
        (
            pc(0x40, BIG_ID),
            "s_load_b64 s[0:1], s[2:3], 0x0".to_owned(),
        ),
        (
            pc(0x44, BIG_ID),
            "global_load_b32 v0, v1, s[0:1]".to_owned(),
        ),
        (pc(RAW_PC, 0), "s_branch 0".to_owned()),
        (pc(BASE1 + 0x100, 0), "s_mov_b32 s0, 0".to_owned()),
    ])
}

#[test]
fn waves_occupancy_and_infos_match_the_stream() {
    let (bytes, expected) = scenario();
    let mut tool = Tool {
        chunks: vec![bytes],
        isa: disassembly(),
        ..Tool::default()
    };
    assert_eq!(parse(&mut tool), SUCCESS);
    assert_eq!(tool.se_calls, 2);
    let records = &tool.records;
    assert_eq!(records[0], Rec::Gfxip(11));
    assert!(!records.iter().any(|r| matches!(r, Rec::Other(_))));
    assert_eq!(
        records
            .iter()
            .filter(|r| matches!(r, Rec::Gfxip(_)))
            .count(),
        1
    );

    // Stitching: one question per distinct pc, 64 bytes first, the long one retried with its
    // exact size, the failing one not retried.
    let long = disassembly()[&pc(0x104, 1)].len() as u64;
    assert!(long > 64);
    assert_eq!(
        tool.asked,
        [
            (pc(0x100, 1), 64),
            (pc(0x104, 1), 64),
            (pc(0x104, 1), long),
            (pc(0x108, 1), 64),
            (pc(0x40, BIG_ID), 64),
            (pc(0x44, BIG_ID), 64),
            (pc(RAW_PC, 0), 64),
        ]
    );

    let got = waves(records);
    assert_eq!(got.len(), 3);
    for (wave, (key, begin, end, insts)) in got.iter().zip(&expected) {
        assert_eq!(
            (wave.cu, wave.simd, wave.slot),
            (key.cu, key.simd, key.slot)
        );
        assert_eq!((wave.begin, wave.end), (*begin as i64, *end as i64));
        assert_eq!(wave.insts.len(), insts.len());
        for (got, want) in wave.insts.iter().zip(insts) {
            assert_eq!(got.bits & 0xFF, u32::from(want.category.0));
            assert_eq!(got.bits >> 8, want.stall);
            assert_eq!(got.duration, want.duration as i32);
            assert_eq!(got.time, want.time as i64);
        }
        // The timeline covers the wave exactly (no instruction runs past its end here).
        let total: i64 = wave.timeline.iter().map(|s| i64::from(s.duration)).sum();
        assert_eq!(total, wave.end - wave.begin);
        assert!(wave.timeline.iter().all(|s| (1..=4).contains(&s.kind)));
    }
    let pcs = |w: &OwnedWave| w.insts.iter().map(|i| i.pc).collect::<Vec<_>>();
    assert_eq!(
        pcs(got[0]),
        [pc(0x100, 1), pc(0x104, 1), pc(0, 0), pc(0x100, 1)]
    );
    assert_eq!(pcs(got[1]), [pc(0x40, BIG_ID), pc(RAW_PC, 0)]);
    assert_eq!(pcs(got[2]), [pc(0x44, BIG_ID)]);
    // W0: idle 2, exec 4, idle 2, stall 3, exec 5, idle 2, stall 2, wait 28, idle 10, exec 4,
    // idle 36.
    let states: Vec<(i32, i32)> = got[0]
        .timeline
        .iter()
        .map(|s| (s.kind, s.duration))
        .collect();
    assert_eq!(
        states,
        [
            (1, 2),
            (2, 4),
            (1, 2),
            (4, 3),
            (2, 5),
            (1, 2),
            (4, 2),
            (3, 28),
            (1, 10),
            (2, 4),
            (1, 36)
        ]
    );

    // INFO: the stitch failure (once) before W0, data lost where the token is (after W0).
    assert_eq!(infos(records), [STITCH_INCOMPLETE, DATA_LOST]);
    let position = |pred: &dyn Fn(&Rec) -> bool| records.iter().position(pred).unwrap();
    let stitch_at = position(&|r| *r == Rec::Info(STITCH_INCOMPLETE));
    let first_wave = position(&|r| matches!(r, Rec::Wave(_)));
    let lost_at = position(&|r| *r == Rec::Info(DATA_LOST));
    assert!(stitch_at < first_wave && first_wave < lost_at);

    // Occupancy: one batch, last, sorted by time; the entry pc names W0's kernel, W1 and W2
    // name their first instruction's pc.
    assert!(matches!(records.last(), Some(Rec::Occupancy(_))));
    let occ = occupancy(records);
    let events: Vec<(u64, u8, u8, u32, Pc)> = occ
        .iter()
        .map(|o| (o.time, o.simd, o.slot, o.flags, o.pc))
        .collect();
    let t0 = 100_000_000_000u64;
    assert_eq!(
        events,
        [
            (t0 + 2, 0, 0, 1, pc(0x100, 1)),
            (t0 + 100, 0, 0, 0, pc(0x100, 1)),
            (t0 + 990, 2, 5, 1, pc(0x40, BIG_ID)),
            (t0 + 1_010, 3, 15, 1, pc(0x44, BIG_ID)),
            (t0 + 1_300, 2, 5, 0, pc(0x40, BIG_ID)),
            (t0 + 1_600, 3, 15, 0, pc(0x44, BIG_ID)),
        ]
    );
    assert!(occ.iter().all(|o| o.reserved == 0));
    assert_eq!(occ[2].cu, 1);
}

#[test]
fn each_chunk_is_decoded_on_its_own() {
    let (first, _) = scenario();
    // The second SE saw no markers: the same device pc is a raw address there.
    let key = WaveKey {
        cu: 2,
        simd: 1,
        slot: 1,
    };
    let mut enc = Encoder::with_header(Header {
        gfxip_major: 11,
        shader_engine: 1,
    });
    enc.wave_start(key, 50, 0)
        .instruction(key, inst(BASE1 + 0x100, Category::SALU, 60, 4, 1))
        .wave_end(key, 70);
    let second = enc.finish();
    let mut tool = Tool {
        chunks: vec![first, second.clone()],
        isa: disassembly(),
        ..Tool::default()
    };
    assert_eq!(parse(&mut tool), SUCCESS);
    assert_eq!(tool.se_calls, 3);
    let records = &tool.records;
    assert_eq!(records[0], Rec::Gfxip(11));
    assert_eq!(
        records
            .iter()
            .filter(|r| matches!(r, Rec::Gfxip(_)))
            .count(),
        1
    );
    let got = waves(records);
    assert_eq!(got.len(), 4);
    assert_eq!(got[3].insts[0].pc, pc(BASE1 + 0x100, 0));
    assert_eq!((got[3].begin, got[3].end), (50, 70));
    // One occupancy batch per chunk, each after that chunk's waves.
    let batches: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Rec::Occupancy(_)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[1], records.len() - 1);
    let Rec::Occupancy(second_batch) = &records[batches[1]] else {
        unreachable!()
    };
    assert_eq!(second_batch.len(), 2);
    assert_eq!(second_batch[0].pc, pc(BASE1 + 0x100, 0));

    // An invalid second chunk stops the call: the first chunk's records stay, nothing more.
    let (first, _) = scenario();
    let mut tool = Tool {
        chunks: vec![first, vec![0; 4096], second],
        isa: disassembly(),
        ..Tool::default()
    };
    assert_eq!(parse(&mut tool), INVALID_SHADER_DATA);
    assert_eq!(tool.se_calls, 2);
    assert_eq!(waves(&tool.records).len(), 3);
    assert!(matches!(tool.records.last(), Some(Rec::Occupancy(_))));
}

#[test]
fn a_cut_stream_reports_data_lost_and_incomplete_waves() {
    let (bytes, _) = scenario();
    // Cut inside W1's last instruction token: W1 and W2 never end.
    let cut = bytes.len() - 12 - 12 - 10;
    let mut tool = Tool {
        chunks: vec![bytes[..cut].to_vec()],
        isa: disassembly(),
        ..Tool::default()
    };
    assert_eq!(parse(&mut tool), SUCCESS);
    let got = waves(&tool.records);
    assert_eq!(got.len(), 3);
    assert_eq!(got[1].insts.len(), 1);
    // Cut-off waves end at the latest time seen: W2's instruction completes at t0 + 1550.
    let t0 = 100_000_000_000i64;
    assert_eq!((got[1].end, got[2].end), (t0 + 1_550, t0 + 1_550));
    assert_eq!(
        infos(&tool.records),
        [STITCH_INCOMPLETE, DATA_LOST, 3, DATA_LOST]
    );
}

/// Runs `forced_failure_child` in a child process with `WSLSIM_DECODER_FAIL=value`.
fn child(value: &str, expect: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "forced_failure_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("WSLSIM_DECODER_FAIL", value)
        .env("DLOPEN_CHILD_EXPECT", expect)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child with {value:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn forced_failure_env() {
    child("1", "1");
    child(" 4 ", "4");
    child("not a status", "decode");
}

/// Only does something in a child started by `forced_failure_env`.
#[test]
fn forced_failure_child() {
    let Ok(expect) = std::env::var("DLOPEN_CHILD_EXPECT") else {
        return;
    };
    let (bytes, _) = scenario();
    let mut tool = Tool {
        chunks: vec![bytes.clone(), bytes],
        isa: disassembly(),
        ..Tool::default()
    };
    let status = parse(&mut tool);
    if expect == "decode" {
        assert_eq!(status, SUCCESS);
        assert_eq!(waves(&tool.records).len(), 6);
    } else {
        assert_eq!(status.to_string(), expect);
        assert_eq!(tool.se_calls, 1);
        assert!(tool.records.is_empty());
        assert!(tool.asked.is_empty());
    }
}
