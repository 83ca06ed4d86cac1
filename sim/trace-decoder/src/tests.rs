use std::collections::HashMap;

use wslsim_sqtt::{Category, Encoder, Instruction, WaveKey};

use crate::codeobj::CodeObjects;
use crate::decode::{Record, Sink, Source, decode};
use crate::ffi::*;
use crate::timeline;

const W0: WaveKey = WaveKey {
    cu: 1,
    simd: 2,
    slot: 3,
};
const W1: WaveKey = WaveKey {
    cu: 1,
    simd: 0,
    slot: 0,
};
const BASE: u64 = 0x7F00_0000_0000;

/// Hands out each buffer once, then returns 0.
struct Chunks {
    chunks: Vec<Vec<u8>>,
    calls: usize,
}

impl Source for Chunks {
    fn with_next_chunk<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.calls += 1;
        let chunk = self.chunks.get(self.calls - 1)?;
        if chunk.is_empty() {
            return None;
        }
        Some(f(chunk))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Rec {
    Gfxip(u64),
    Occupancy(Vec<OccupancyT>),
    Wave(Box<OwnedWave>),
    Info(Info),
}

#[derive(Debug, Clone, PartialEq)]
struct OwnedWave {
    cu: u8,
    simd: u8,
    slot: u8,
    begin: i64,
    end: i64,
    timeline: Vec<WaveStateT>,
    insts: Vec<InstT>,
}

/// Answers pcs inside code objects (and any listed raw pc) with `text_len` bytes; records
/// every question.
#[derive(Default)]
struct Recorder {
    records: Vec<Rec>,
    asked: Vec<(PcT, u64)>,
    fail: Vec<PcT>,
    text_len: HashMap<PcT, u64>,
}

impl Sink for Recorder {
    fn isa(&mut self, pc: PcT, text: &mut [u8], size: &mut u64, memory_size: &mut u64) -> Status {
        self.asked.push((pc, *size));
        if self.fail.contains(&pc) {
            return STATUS_ERROR_INVALID_ARGUMENT;
        }
        let needed = self.text_len.get(&pc).copied().unwrap_or(12);
        let capacity = *size;
        *size = needed;
        if needed > capacity {
            return STATUS_ERROR_OUT_OF_RESOURCES;
        }
        text[..needed as usize].fill(b's');
        *memory_size = 4;
        STATUS_SUCCESS
    }

    fn record(&mut self, record: Record<'_>) {
        let rec = match record {
            Record::Gfxip(v) => Rec::Gfxip(v),
            Record::Occupancy(o) => Rec::Occupancy(o.to_vec()),
            Record::Wave {
                wave,
                timeline,
                instructions,
            } => {
                assert_eq!(wave.timeline_size, timeline.len() as u64);
                assert_eq!(wave.instructions_size, instructions.len() as u64);
                assert_eq!(wave.timeline.cast_const(), timeline.as_ptr());
                assert_eq!(wave.instructions.cast_const(), instructions.as_ptr());
                assert_eq!(wave.contexts, 0);
                Rec::Wave(Box::new(OwnedWave {
                    cu: wave.cu,
                    simd: wave.simd,
                    slot: wave.wave_id,
                    begin: wave.begin_time,
                    end: wave.end_time,
                    timeline: timeline.to_vec(),
                    insts: instructions.to_vec(),
                }))
            }
            Record::Info(i) => Rec::Info(i),
        };
        self.records.push(rec);
    }
}

fn run(chunks: Vec<Vec<u8>>, sink: &mut Recorder) -> (Status, usize) {
    let mut source = Chunks { chunks, calls: 0 };
    let status = decode(&mut source, sink);
    (status, source.calls)
}

fn inst(pc: u64, time: u64, duration: u32, stall: u32) -> Instruction {
    Instruction {
        pc,
        category: Category::VALU,
        time,
        duration,
        stall,
    }
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

fn infos(records: &[Rec]) -> Vec<Info> {
    records
        .iter()
        .filter_map(|r| match r {
            Rec::Info(i) => Some(*i),
            _ => None,
        })
        .collect()
}

fn state(r#type: i32, duration: i32) -> WaveStateT {
    WaveStateT { r#type, duration }
}

#[test]
fn timeline_covers_the_wave() {
    use wave_state::*;
    let insts = [
        inst(0, 110, 10, 4), // idle 10, stall 4, exec 6 -> cursor 120
        inst(0, 115, 10, 0), // overlaps: exec 5 more -> cursor 125
        Instruction {
            category: Category::IMMED,
            ..inst(0, 130, 20, 25) // idle 5; stall clamped to the duration: 20
        },
        Instruction {
            category: Category::IMMED,
            ..inst(0, 150, 8, 2) // stall 2, wait 6 -> 158
        },
    ];
    assert_eq!(
        timeline::derive(100, 170, &insts),
        [
            state(IDLE, 10),
            state(STALL, 4),
            state(EXEC, 11),
            state(IDLE, 5),
            state(STALL, 22),
            state(WAIT, 6),
            state(IDLE, 12),
        ]
    );
    assert_eq!(timeline::derive(5, 5, &[]), []);
    assert_eq!(
        timeline::derive(0, 3 * i32::MAX as u64 + 1, &[]),
        [
            state(IDLE, i32::MAX),
            state(IDLE, i32::MAX),
            state(IDLE, i32::MAX),
            state(IDLE, 1)
        ]
    );
}

#[test]
fn translation_uses_the_latest_load() {
    use wslsim_sqtt::marker::CodeObjectMarker;
    let mut objects = CodeObjects::new();
    let load = |id, addr, size| CodeObjectMarker {
        id,
        addr,
        size,
        unload: false,
        from_start: true,
    };
    objects.apply(&load(1, 0x1000, 0x100));
    objects.apply(&load(2, 0x1080, 0x100));
    objects.apply(&load(0, 0x0, 0x10_0000)); // id 0 is not a code object
    let pc = |addr, marker_id| PcT { addr, marker_id };
    assert_eq!(objects.translate(0x1010), pc(0x10, 1));
    assert_eq!(objects.translate(0x1090), pc(0x10, 2));
    assert_eq!(objects.translate(0x1180), pc(0x1180, 0));
    assert_eq!(objects.translate(0xFFF), pc(0xFFF, 0));
    objects.apply(&CodeObjectMarker {
        unload: true,
        ..load(2, 0, 0)
    });
    assert_eq!(objects.translate(0x1090), pc(0x90, 1));
    objects.apply(&load(u64::MAX, u64::MAX - 1, u64::MAX));
    assert_eq!(objects.translate(u64::MAX), pc(1, u64::MAX));
}

#[test]
fn invalid_chunks_emit_nothing() {
    let mut sink = Recorder::default();
    assert_eq!(run(vec![vec![0; 4096]], &mut sink), (4, 1));
    assert!(sink.records.is_empty());
    // A malformed token after valid ones still emits nothing for the chunk.
    let mut enc = Encoder::new();
    enc.wave_start(W0, 1, 0).wave_end(W0, 2);
    let mut bytes = enc.finish();
    bytes.extend_from_slice(&[0x99, 0, 0, 0]);
    assert_eq!(run(vec![bytes], &mut sink), (4, 1));
    assert!(sink.records.is_empty());
    assert!(sink.asked.is_empty());
}

#[test]
fn cut_off_waves_are_reported_once() {
    let mut enc = Encoder::new();
    enc.instruction(W1, inst(0x10, 5, 1, 0)) // W1 started before the trace
        .wave_start(W0, 10, 0)
        .instruction(W0, inst(0x20, 12, 3, 1))
        .wave_start(W0, 20, 0) // a new wave in a live slot
        .wave_end(W1, 25)
        .instruction(W0, inst(0x24, 30, 50, 0)); // live at the end, done at 80
    let mut sink = Recorder::default();
    assert_eq!(run(vec![enc.finish()], &mut sink).0, 0);
    assert_eq!(sink.records[0], Rec::Gfxip(11));
    assert_eq!(infos(&sink.records), [INFO_WAVE_INCOMPLETE]);
    let w = waves(&sink.records);
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].begin, w[0].end, w[0].insts.len()), (10, 20, 1));
    assert_eq!((w[1].begin, w[1].end, w[1].insts.len()), (20, 80, 1));
    let Some(Rec::Occupancy(occ)) = sink.records.last() else {
        panic!("no occupancy batch last: {:?}", sink.records);
    };
    let events: Vec<(u64, u32)> = occ.iter().map(|o| (o.time, o.flags)).collect();
    assert_eq!(events, [(10, 1), (20, 0), (20, 1), (80, 0)]);
    // No entry pc: the first instruction's pc (raw: no code objects in this stream).
    assert_eq!(
        occ[0].pc,
        PcT {
            addr: 0x20,
            marker_id: 0
        }
    );
    assert_eq!((occ[0].cu, occ[0].simd, occ[0].slot), (1, 2, 3));
}

#[test]
fn extreme_values_saturate() {
    let mut enc = Encoder::new();
    enc.roc_preamble()
        .code_object_marker(7, BASE, 0x1000, false, true)
        .wave_start(W0, u64::MAX - 10, BASE + 0x100)
        .instruction(
            W0,
            Instruction {
                pc: BASE + 0x100,
                category: Category(200),
                time: u64::MAX - 5,
                duration: u32::MAX,
                stall: u32::MAX,
            },
        )
        .wave_end(W0, 3); // before the begin
    let mut sink = Recorder::default();
    assert_eq!(run(vec![enc.finish()], &mut sink).0, 0);
    let w = waves(&sink.records);
    assert_eq!((w[0].begin, w[0].end), (i64::MAX, i64::MAX));
    let i = w[0].insts[0];
    assert_eq!(
        (i.category(), i.stall(), i.duration),
        (200, 0xFF_FFFF, i32::MAX)
    );
    assert_eq!(i.time, i64::MAX);
    assert_eq!(
        i.pc,
        PcT {
            addr: 0x100,
            marker_id: 7
        }
    );
    let Some(Rec::Occupancy(occ)) = sink.records.last() else {
        panic!("no occupancy batch");
    };
    assert_eq!(
        occ[0].pc,
        PcT {
            addr: 0x100,
            marker_id: 7
        }
    );
}

#[test]
fn isa_answers_are_cached_and_retried_once() {
    let mut enc = Encoder::new();
    enc.roc_preamble()
        .code_object_marker(1, BASE, 0x1000, false, true)
        .wave_start(W0, 100, 0);
    for i in 0..4 {
        enc.instruction(W0, inst(BASE + 4 * (i % 2), 101 + i, 1, 0));
    }
    enc.instruction(W0, inst(BASE + 8, 110, 1, 0))
        .instruction(W0, inst(BASE + 12, 111, 1, 0))
        .wave_end(W0, 120);
    let pc = |addr| PcT { addr, marker_id: 1 };
    let mut sink = Recorder::default();
    sink.text_len.insert(pc(4), 100);
    // Asks for more the second time too: unstitched.
    sink.text_len.insert(pc(12), u64::from(u32::MAX));
    sink.fail.push(pc(8));
    assert_eq!(run(vec![enc.finish()], &mut sink).0, 0);
    assert_eq!(
        sink.asked,
        [
            (pc(0), 64),
            (pc(4), 64),
            (pc(4), 100),
            (pc(8), 64),
            (pc(12), 64)
        ]
    );
    let w = waves(&sink.records);
    let pcs: Vec<PcT> = w[0].insts.iter().map(|i| i.pc).collect();
    let none = PcT::default();
    assert_eq!(pcs, [pc(0), pc(4), pc(0), pc(4), none, none]);
    assert_eq!(infos(&sink.records), [INFO_STITCH_INCOMPLETE]);
}

#[test]
fn strings_are_exact() {
    assert_eq!(
        status_string(4).to_str().unwrap(),
        "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA"
    );
    assert_eq!(status_string(-1).to_str().unwrap(), "STATUS_UNKNOWN");
    assert_eq!(status_string(6).to_str().unwrap(), "STATUS_UNKNOWN");
    assert_eq!(info_string(4).to_str().unwrap(), "INFO_LAST");
    assert_eq!(info_string(5).to_str().unwrap(), "Unknown info parameter.");
}
