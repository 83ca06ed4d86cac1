//! `parse_data`'s logic, free of raw pointers: chunks come from a [`Source`], records and ISA
//! questions go to a [`Sink`].

use std::collections::HashMap;

use wslsim_sqtt::marker::MarkerDecoder;
use wslsim_sqtt::{Instruction, Token, USERDATA_2, WaveKey};

use crate::codeobj::CodeObjects;
use crate::ffi::*;
use crate::timeline;

/// The first ISA buffer's capacity, as in AMD's decoder.
pub const ISA_FIRST_CAPACITY: usize = 64;
/// The largest ISA text the decoder accepts on its retry.
pub const ISA_MAX_CAPACITY: usize = 1 << 20;
/// The largest stall `inst_t` can hold (24 bits).
const MAX_STALL: u32 = (1 << 24) - 1;

/// Where chunks come from (`se_data_cb`).
pub trait Source {
    /// Asks for the next chunk once and hands it to `f`; `None` when the tool says there is no
    /// more (a 0 return, a size of 0 or a null buffer).
    fn with_next_chunk<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R>;
}

/// One record for `trace_cb`.
#[derive(Clone, Copy, Debug)]
pub enum Record<'a> {
    /// The gfxip major version.
    Gfxip(u64),
    /// A batch of occupancy events.
    Occupancy(&'a [OccupancyT]),
    /// One wave; its pointers point into `timeline` and `instructions`.
    Wave {
        /// The C struct.
        wave: &'a WaveT,
        /// What `wave.timeline` points to.
        timeline: &'a [WaveStateT],
        /// What `wave.instructions` points to.
        instructions: &'a [InstT],
    },
    /// An info value.
    Info(Info),
}

/// Where records and ISA questions go (`trace_cb`, `isa_cb`).
pub trait Sink {
    /// `isa_cb`: `text.len()` is the capacity (also in `*size` on entry).
    fn isa(&mut self, pc: PcT, text: &mut [u8], size: &mut u64, memory_size: &mut u64) -> Status;
    /// `trace_cb` (its status is ignored, as AMD's decoder does).
    fn record(&mut self, record: Record<'_>);
}

/// Decodes every chunk `source` hands out; the status `parse_data` returns.
pub fn decode(source: &mut impl Source, sink: &mut impl Sink) -> Status {
    let mut session = Session {
        sink,
        gfxip_sent: false,
        stitched: HashMap::new(),
        stitch_reported: false,
        incomplete_reported: false,
    };
    loop {
        match source.with_next_chunk(|bytes| session.chunk(bytes)) {
            None => return STATUS_SUCCESS,
            Some(Ok(())) => {}
            Some(Err(status)) => return status,
        }
    }
}

/// State that lasts for one `parse_data` call.
struct Session<'s, S> {
    sink: &'s mut S,
    gfxip_sent: bool,
    /// Whether each pc could be stitched (asked once per call).
    stitched: HashMap<PcT, bool>,
    stitch_reported: bool,
    incomplete_reported: bool,
}

/// A wave being assembled.
struct Wave {
    key: WaveKey,
    begin: u64,
    /// The translated entry pc, if the stream had one.
    kernel_pc: Option<PcT>,
    /// The first instruction's translated pc.
    first_pc: Option<PcT>,
    insts: Vec<Instruction>,
    /// The stitched pc of each instruction (`{0,0}` if unstitched).
    pcs: Vec<PcT>,
    /// The latest completion time of its instructions.
    last_done: u64,
}

/// State that lasts for one chunk (one SE stream).
#[derive(Default)]
struct Se {
    objects: CodeObjects,
    markers: MarkerDecoder,
    live: HashMap<WaveKey, Wave>,
    occupancy: Vec<OccupancyT>,
    last_time: u64,
}

fn clamp_i64(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl<S: Sink> Session<'_, S> {
    fn info(&mut self, info: Info) {
        self.sink.record(Record::Info(info));
    }

    fn report_incomplete(&mut self) {
        if !std::mem::replace(&mut self.incomplete_reported, true) {
            self.info(INFO_WAVE_INCOMPLETE);
        }
    }

    /// Decodes one whole SE stream; nothing is emitted for it unless all of it parses.
    fn chunk(&mut self, bytes: &[u8]) -> Result<(), Status> {
        let invalid = |_| STATUS_ERROR_INVALID_SHADER_DATA;
        let (header, tokens) = wslsim_sqtt::tokens(bytes).map_err(invalid)?;
        let mut check = tokens.clone();
        for token in check.by_ref() {
            token.map_err(invalid)?;
        }
        if !std::mem::replace(&mut self.gfxip_sent, true) {
            self.sink
                .record(Record::Gfxip(u64::from(header.gfxip_major)));
        }
        let mut se = Se::default();
        for token in tokens.flatten() {
            self.token(&mut se, token);
        }
        let mut rest: Vec<Wave> = se.live.drain().map(|(_, w)| w).collect();
        rest.sort_by_key(|w| (w.begin, w.key));
        for wave in rest {
            let end = se.last_time.max(wave.last_done);
            self.finish(&mut se.occupancy, wave, end, true);
        }
        if check.truncated() {
            self.info(INFO_DATA_LOST);
        }
        if !se.occupancy.is_empty() {
            se.occupancy.sort_by_key(|o| o.time);
            self.sink.record(Record::Occupancy(&se.occupancy));
        }
        Ok(())
    }

    fn token(&mut self, se: &mut Se, token: Token) {
        match token {
            Token::Time(time) => se.last_time = se.last_time.max(time),
            Token::RegWrite { register, value } => {
                if register == USERDATA_2
                    && let Some(marker) = se.markers.feed(value)
                {
                    se.objects.apply(&marker);
                }
            }
            Token::WaveStart {
                wave: key,
                time,
                entry_pc,
            } => {
                se.last_time = se.last_time.max(time);
                let wave = Wave {
                    key,
                    begin: time,
                    kernel_pc: (entry_pc != 0).then(|| se.objects.translate(entry_pc)),
                    first_pc: None,
                    insts: Vec::new(),
                    pcs: Vec::new(),
                    last_done: time,
                };
                if let Some(old) = se.live.insert(key, wave) {
                    self.finish(&mut se.occupancy, old, time, true);
                }
            }
            Token::Instruction { wave: key, inst } => {
                let done = inst.time.saturating_add(u64::from(inst.duration));
                se.last_time = se.last_time.max(done);
                let Some(wave) = se.live.get_mut(&key) else {
                    // The wave started before the trace did.
                    self.report_incomplete();
                    return;
                };
                let pc = se.objects.translate(inst.pc);
                wave.first_pc.get_or_insert(pc);
                wave.last_done = wave.last_done.max(done);
                wave.insts.push(inst);
                let stitched = self.stitch(pc);
                wave.pcs.push(if stitched { pc } else { PcT::default() });
            }
            Token::WaveEnd { wave: key, time } => {
                se.last_time = se.last_time.max(time);
                match se.live.remove(&key) {
                    Some(wave) => self.finish(&mut se.occupancy, wave, time, false),
                    None => self.report_incomplete(),
                }
            }
            Token::DataLost { .. } => self.info(INFO_DATA_LOST),
        }
    }

    /// Whether `pc` can be stitched, asking the tool the first time.
    fn stitch(&mut self, pc: PcT) -> bool {
        if let Some(&ok) = self.stitched.get(&pc) {
            return ok;
        }
        let ok = self.ask_isa(pc);
        self.stitched.insert(pc, ok);
        if !ok && !std::mem::replace(&mut self.stitch_reported, true) {
            self.info(INFO_STITCH_INCOMPLETE);
        }
        ok
    }

    /// AMD's protocol: a 64-byte buffer, then once more with the size the tool asked for.
    fn ask_isa(&mut self, pc: PcT) -> bool {
        let mut text = vec![0u8; ISA_FIRST_CAPACITY];
        let mut size = ISA_FIRST_CAPACITY as u64;
        let mut memory_size = 0;
        match self.sink.isa(pc, &mut text, &mut size, &mut memory_size) {
            STATUS_SUCCESS => size <= ISA_FIRST_CAPACITY as u64,
            STATUS_ERROR_OUT_OF_RESOURCES => {
                let Some(needed) = usize::try_from(size)
                    .ok()
                    .filter(|&n| n > 0 && n <= ISA_MAX_CAPACITY)
                else {
                    return false;
                };
                let mut text = vec![0u8; needed];
                let mut size = needed as u64;
                let status = self.sink.isa(pc, &mut text, &mut size, &mut memory_size);
                status == STATUS_SUCCESS && size <= needed as u64
            }
            _ => false,
        }
    }

    /// Emits a finished wave and queues its occupancy events.
    fn finish(&mut self, occupancy: &mut Vec<OccupancyT>, wave: Wave, end: u64, incomplete: bool) {
        if incomplete {
            self.report_incomplete();
        }
        let end = end.max(wave.begin);
        let mut timeline = timeline::derive(wave.begin, end, &wave.insts);
        let mut instructions: Vec<InstT> = wave
            .insts
            .iter()
            .zip(&wave.pcs)
            .map(|(inst, &pc)| InstT {
                bits: u32::from(inst.category.0) | inst.stall.min(MAX_STALL) << 8,
                duration: i32::try_from(inst.duration).unwrap_or(i32::MAX),
                time: clamp_i64(inst.time),
                pc,
            })
            .collect();
        let c_wave = WaveT {
            cu: wave.key.cu,
            simd: wave.key.simd,
            wave_id: wave.key.slot,
            contexts: 0,
            reserved: [0; 3],
            begin_time: clamp_i64(wave.begin),
            end_time: clamp_i64(end),
            timeline_size: timeline.len() as u64,
            instructions_size: instructions.len() as u64,
            timeline: timeline.as_mut_ptr(),
            instructions: instructions.as_mut_ptr(),
        };
        self.sink.record(Record::Wave {
            wave: &c_wave,
            timeline: &timeline,
            instructions: &instructions,
        });
        let pc = wave.kernel_pc.or(wave.first_pc).unwrap_or_default();
        for (time, start) in [(wave.begin, 1), (end, 0)] {
            occupancy.push(OccupancyT {
                pc,
                time,
                reserved: 0,
                cu: wave.key.cu,
                simd: wave.key.simd,
                slot: wave.key.slot,
                flags: start,
            });
        }
    }
}
