//! The gfx11 PM4 command buffers of one pass, as aqlprofile's gfx11 PMC builder emits them, the
//! AMD vendor PM4-IB AQL packets that carry them, and the decoding of the read-back.
//!
//! A pass is a set of SQ and GRBM events that fits the blocks' counter slots (see
//! [`crate::plan`]). [`build_pass`] makes its three buffers:
//!
//! * **start**: wait for idle, reset the perfmon state, program every counter's select
//!   register, enable compute counting, start counting, wait for idle — then one `WRITE_DATA`
//!   of [`PROOF_WORD`] into the output buffer's last slot ([`PassBuffers::proof_offset`]): the
//!   proof that the pass's packets ran, read back with the counters ([`packets_ran`]);
//! * **stop**: freeze the counters;
//! * **read**: sample, then copy every counter instance into the output buffer (GRBM: one
//!   64-bit value; SQ: one 32-bit value per shader engine × shader array × WGP), then make the
//!   copies visible with ACQUIRE_MEM.
//!
//! They live in one piece of command memory laid out `[read | start | stop]`, each part
//! 256-byte aligned, and each is submitted through a 64-byte PM4-IB AQL packet
//! ([`PassBuffers::packets`]). The output buffer has [`PassBuffers::output_bytes`] bytes and
//! must be zeroed before the read runs: an SQ slot is 8 bytes of which the read writes only
//! the low 4. [`decode`] turns it back into per-instance values.
//!
//! Register addresses and dword sequences are interoperability facts (gfx11 / GC 11.x, the
//! same in GC 11.5 = gfx1150) and are reproduced exactly.

use std::ops::Range;

use crate::{BaseEvent, Block, Error, Topology};

type Result<T> = std::result::Result<T, Error>;

/// gfx11 register addresses (absolute dword addresses) and the values aqlprofile writes.
pub mod reg {
    /// GRBM_GFX_INDEX: which SE / SA / instance later register accesses reach.
    pub const GRBM_GFX_INDEX: u32 = 0xC200;
    /// GRBM_GFX_INDEX broadcast to every SE, SA and instance.
    pub const GRBM_BROADCAST: u32 = 0xE000_0000;
    /// CP_PERFMON_CNTL.
    pub const CP_PERFMON_CNTL: u32 = 0xD808;
    /// COMPUTE_PERFCOUNT_ENABLE (SH space).
    pub const COMPUTE_PERFCOUNT_ENABLE: u32 = 0x2E0B;
    /// SQ_PERFCOUNTER_CTRL.
    pub const SQ_PERFCOUNTER_CTRL: u32 = 0xD9E0;
    /// SQ_PERFCOUNTER_CTRL2.
    pub const SQ_PERFCOUNTER_CTRL2: u32 = 0xD9E2;
    /// SQ_PERFCOUNTER0_SELECT; SQ slot i is programmed through SQ_PERFCOUNTER(2i)_SELECT.
    pub const SQ_PERFCOUNTER0_SELECT: u32 = 0xD9C0;
    /// SQ_PERFCOUNTER0_LO; SQ slot i is read from SQ_PERFCOUNTERi_LO = this + 2i (32-bit).
    pub const SQ_PERFCOUNTER0_LO: u32 = 0xD1C0;
    /// GRBM_PERFCOUNTER0/1_SELECT.
    pub const GRBM_PERFCOUNTER_SELECT: [u32; 2] = [0xD840, 0xD841];
    /// GRBM_PERFCOUNTER0/1_LO.
    pub const GRBM_PERFCOUNTER_LO: [u32; 2] = [0xD040, 0xD043];
    /// GRBM_PERFCOUNTER0/1_HI.
    pub const GRBM_PERFCOUNTER_HI: [u32; 2] = [0xD041, 0xD044];

    /// CP_PERFMON_CNTL.PERFMON_STATE = DISABLE_AND_RESET.
    pub const PERFMON_RESET: u32 = 0;
    /// CP_PERFMON_CNTL.PERFMON_STATE = START_COUNTING.
    pub const PERFMON_START: u32 = 1;
    /// CP_PERFMON_CNTL.PERFMON_STATE = STOP_COUNTING.
    pub const PERFMON_STOP: u32 = 2;
    /// CP_PERFMON_CNTL before a read: START_COUNTING | PERFMON_SAMPLE_ENABLE (b10).
    pub const PERFMON_SAMPLE: u32 = 0x401;
    /// SQ_PERFCOUNTER_CTRL: PS_EN | GS_EN | HS_EN | CS_EN.
    pub const SQ_CTRL_VALUE: u32 = 0x55;
    /// SQ_PERFCOUNTER_CTRL2: FORCE_EN (b0) | VMID_EN = 0xFFFF (bits `[16:1]`).
    pub const SQ_CTRL2_VALUE: u32 = 0x0001_FFFF;

    /// SQ_PERFCOUNTERn_SELECT.PERF_SEL, bits `[8:0]`.
    pub const SQ_PERF_SEL_MASK: u32 = 0x1FF;
    /// GRBM_PERFCOUNTERn_SELECT.PERF_SEL, bits `[5:0]`.
    pub const GRBM_PERF_SEL_MASK: u32 = 0x3F;
}

/// PM4 type-3 packet headers and fixed dwords used here.
pub mod packet {
    /// `PACKET3(op, n)` with n = the packet's dwords − 2.
    pub const fn packet3(op: u32, n: u32) -> u32 {
        (3 << 30) | ((n & 0x3FFF) << 16) | ((op & 0xFF) << 8)
    }
    /// SET_UCONFIG_REG of one register (3 dwords).
    pub const SET_UCONFIG_REG: u32 = packet3(0x79, 1);
    /// SET_SH_REG of one register (3 dwords).
    pub const SET_SH_REG: u32 = packet3(0x76, 1);
    /// EVENT_WRITE (2 dwords).
    pub const EVENT_WRITE: u32 = packet3(0x46, 0);
    /// COPY_DATA (6 dwords).
    pub const COPY_DATA: u32 = packet3(0x40, 4);
    /// ACQUIRE_MEM (8 dwords).
    pub const ACQUIRE_MEM: u32 = packet3(0x58, 6);
    /// WAIT_REG_MEM (6 body dwords).
    pub const WAIT_REG_MEM: u32 = packet3(0x3C, 5);
    /// WAIT_REG_MEM control: FUNCTION 3 (equal), MEM_SPACE 0 (register), OPERATION 0.
    pub const WAIT_EQUAL_REGISTER: u32 = 3;
    /// WAIT_REG_MEM poll interval.
    pub const WAIT_POLL_INTERVAL: u32 = 4;
    /// INDIRECT_BUFFER (4 dwords).
    pub const INDIRECT_BUFFER: u32 = packet3(0x3F, 2);
    /// WRITE_DATA of one dword (5 dwords).
    pub const WRITE_DATA_ONE: u32 = packet3(0x37, 3);
    /// WRITE_DATA control: DST_SEL 5 (memory), WR_CONFIRM (b20).
    pub const WRITE_MEMORY_CONFIRMED: u32 = (5 << 8) | (1 << 20);
    /// EVENT_WRITE body: CS_PARTIAL_FLUSH (7), EVENT_INDEX 4 (aqlprofile's WaitIdle).
    pub const CS_PARTIAL_FLUSH: u32 = 0x407;
    /// COPY_DATA control: SRC_SEL 0 (register), DST_SEL 2 (TC_L2 memory), 32-bit.
    pub const COPY_REGISTER_TO_MEMORY: u32 = 0x200;
    /// ACQUIRE_MEM poll interval.
    pub const ACQUIRE_POLL: u32 = 0x10;
    /// ACQUIRE_MEM GCR_CNTL.
    pub const ACQUIRE_GCR: u32 = 0x1_8000;
    /// INDIRECT_BUFFER control bits: CACHE_POLICY stream (b28) | VALID (b23).
    pub const IB_CONTROL: u32 = 0x1080_0000;
    /// The largest IB_SIZE (20 bits).
    pub const IB_SIZE_MAX: u32 = 0xF_FFFF;
}

/// Counter slots of the SQ block.
pub const SQ_SLOTS: usize = 8;
/// Counter slots of the GRBM block.
pub const GRBM_SLOTS: usize = 2;
/// The shader-array loop bound of the SQ read, fixed at 2 by aqlprofile (not the agent's
/// `shader_arrays_per_se`).
pub const SA_PER_SE: u32 = 2;
/// Alignment of each part of the command memory, and of its base.
pub const COMMAND_ALIGN: usize = 256;
/// Bytes of one output slot.
pub const SLOT_BYTES: usize = 8;
/// Bytes of an AQL packet.
pub const AQL_PACKET_BYTES: usize = 64;
/// AQL header of the start packet (vendor-specific, no barrier, no fences).
pub const HEADER_START: u16 = 0x0000;
/// AQL header of the stop and read packets (vendor-specific with the barrier bit).
pub const HEADER_BARRIER: u16 = 0x0100;
/// `AMD_AQL_FORMAT_PM4_IB`.
pub const AMD_AQL_FORMAT_PM4_IB: u16 = 1;
/// The PM4-IB packet's `dw_count_remain`.
pub const PM4_IB_DW_COUNT_REMAIN: u32 = 0xA;
/// The word the start buffer writes into the output buffer's last slot: the proof that the
/// pass's PM4 ran. A closed vendor-packet gate (`WSLKMT_VENDOR_PACKET` other than 1) drops the
/// start packet with everything in it, so the slot stays 0; a dispatch whose counters read 0
/// with the word present did have them counted (the doctor's self-test writes the same word).
pub const PROOF_WORD: u32 = 0x5EED_CAFE;
/// Dwords of the proof's `WRITE_DATA` at the end of the start buffer.
pub const PROOF_DWORDS: usize = 5;

/// A PM4 `WRITE_DATA` of `value` to memory at `address` (4-byte aligned), with write
/// confirmation: what the start buffer ends with ([`PROOF_WORD`]) and the doctor's marker.
pub const fn write_data(address: u64, value: u32) -> [u32; PROOF_DWORDS] {
    [
        packet::WRITE_DATA_ONE,
        packet::WRITE_MEMORY_CONFIRMED,
        (address as u32) & !3,
        (address >> 32) as u32,
        value,
    ]
}

/// The gfx11 shader topology the SQ read walks: `se` × [`SA_PER_SE`] × `wgp_per_sa`
/// instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Shader engines.
    pub se: u32,
    /// WGPs per shader array: [`wgp_per_sa`] of the topology.
    pub wgp_per_sa: u32,
}

/// The most shader engines (and WGPs per shader array) whose values this crate can describe:
/// a counter instance keeps each coordinate in 6 bits.
pub const MAX_INSTANCES_PER_DIMENSION: u32 = 64;

/// aqlprofile's WGPs per shader array, `(cu/2 + sa·se − 1) / (se·sa)`, where `sa` is the
/// agent's shader arrays per engine (`shader_arrays_per_se`, not the read loop's bound of 2).
/// `None` when `se` or `sa` is 0 (aqlprofile would divide by zero).
pub fn wgp_per_sa(cu: u32, se: u32, sa: u32) -> Option<u64> {
    let arrays = u64::from(se) * u64::from(sa);
    // (cu/2 + arrays − 1) / arrays, i.e. ceil(cu/2 / arrays).
    (arrays > 0).then(|| u64::from(cu / 2).div_ceil(arrays))
}

impl Geometry {
    /// The geometry of `topology`, refusing targets other than gfx11 and topologies the
    /// index register cannot address (or this crate's dimensions cannot describe).
    pub fn of(topology: &Topology) -> Result<Geometry> {
        if !is_gfx11(&topology.gfx) {
            return Err(Error::UnsupportedTarget(topology.gfx.clone()));
        }
        let invalid = |message: String| Error::InvalidTopology {
            gfx: topology.gfx.clone(),
            message,
        };
        if topology.xcc != 1 {
            return Err(invalid(format!(
                "{} XCCs reported, gfx11 has one",
                topology.xcc
            )));
        }
        // SE_INDEX [23:16] could address 256; a coordinate holds 64.
        if topology.se == 0 || topology.se > MAX_INSTANCES_PER_DIMENSION {
            return Err(invalid(format!(
                "{} shader engines (1 to {MAX_INSTANCES_PER_DIMENSION} can be addressed)",
                topology.se
            )));
        }
        if topology.sa == 0 {
            return Err(invalid(
                "no shader arrays per engine reported (the WGPs per shader array follow from \
                 them)"
                    .to_owned(),
            ));
        }
        let wgp_per_sa = wgp_per_sa(topology.cu, topology.se, topology.sa).unwrap_or(0);
        // INSTANCE_INDEX [6:0] holds wgp << 2.
        if wgp_per_sa == 0 || wgp_per_sa > 32 {
            return Err(invalid(format!(
                "{} compute units over {} shader engines of {} shader arrays make \
                 {wgp_per_sa} WGPs per shader array (1 to 32 can be addressed)",
                topology.cu, topology.se, topology.sa
            )));
        }
        Ok(Geometry {
            se: topology.se,
            wgp_per_sa: wgp_per_sa as u32,
        })
    }

    /// Samples one SQ counter reads: se × 2 × wgp_per_sa.
    pub const fn sq_samples(&self) -> usize {
        self.se as usize * SA_PER_SE as usize * self.wgp_per_sa as usize
    }

    /// Dwords of each buffer of a pass with `sq` SQ and `grbm` GRBM counters.
    pub const fn dwords(&self, sq: usize, grbm: usize) -> PassDwords {
        let ctrl2 = if sq > 0 { 3 } else { 0 };
        PassDwords {
            // flush, broadcast, reset, [CTRL2], per counter, broadcast, enable, reset, start,
            // flush, proof.
            start: 2 + 3 + 3 + ctrl2 + 9 * sq + 6 * grbm + 3 + 3 + 3 + 3 + 2 + PROOF_DWORDS,
            stop: 3 + 3 + 2,
            // sample, broadcast, flush, per counter, broadcast, ACQUIRE_MEM.
            read: 3 + 3 + 2 + (3 + 9 * self.sq_samples()) * sq + 18 * grbm + 3 + 8,
        }
    }
}

/// `gfx11` followed by two hex digits (any `:feature` suffix ignored).
fn is_gfx11(gfx: &str) -> bool {
    let name = gfx.split(':').next().unwrap_or_default();
    name.strip_prefix("gfx11")
        .is_some_and(|chip| chip.len() == 2 && chip.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Dwords of the three buffers of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassDwords {
    /// The start buffer.
    pub start: usize,
    /// The stop buffer.
    pub stop: usize,
    /// The read buffer.
    pub read: usize,
}

impl PassDwords {
    /// The largest of the three: what one submission must fit.
    pub const fn largest(&self) -> usize {
        let larger = if self.start > self.read {
            self.start
        } else {
            self.read
        };
        if larger > self.stop {
            larger
        } else {
            self.stop
        }
    }
}

/// One counter of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassCounter {
    /// The base counter's name.
    pub name: String,
    /// Its event.
    pub event: BaseEvent,
    /// The block's counter register it was given (the k-th event of a block gets k).
    pub slot: u32,
    /// Its samples: indices into [`PassBuffers::samples`].
    pub samples: Range<usize>,
}

/// One value the read buffer copies into the output buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The counter: an index into [`PassBuffers::counters`].
    pub counter: usize,
    /// Its block.
    pub block: Block,
    /// Shader engine (0 for GRBM).
    pub se: u32,
    /// Shader array (0 for GRBM).
    pub sa: u32,
    /// WGP (0 for GRBM).
    pub wgp: u32,
    /// Byte offset of the 8-byte slot in the output buffer.
    pub offset: usize,
}

/// The command buffers of one pass and where they go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassBuffers {
    /// The start buffer.
    pub start: Vec<u32>,
    /// The stop buffer.
    pub stop: Vec<u32>,
    /// The read buffer.
    pub read: Vec<u32>,
    /// Byte offset of the read buffer in the command memory (0: it comes first).
    pub read_offset: usize,
    /// Byte offset of the start buffer in the command memory.
    pub start_offset: usize,
    /// Byte offset of the stop buffer in the command memory.
    pub stop_offset: usize,
    /// Size of the command memory: the three parts, each 256-byte aligned.
    pub command_bytes: usize,
    /// Size of the output buffer: 8 × samples, then the proof's slot.
    pub output_bytes: usize,
    /// Where in the output buffer the start buffer writes [`PROOF_WORD`] (its last slot);
    /// `None` for a layout recorded by a tool that wrote no proof ([`PassBuffers::without_proof`]).
    pub proof_offset: Option<usize>,
    /// Where the command memory lives.
    pub base_addr: u64,
    /// Where the output buffer lives.
    pub output_addr: u64,
    /// The counters, in request order.
    pub counters: Vec<PassCounter>,
    /// Every value the read copies, in the order it copies them.
    pub samples: Vec<Sample>,
}

/// The three AQL packets of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassPackets {
    /// Before the dispatch.
    pub start: [u8; AQL_PACKET_BYTES],
    /// After the dispatch, after `read`.
    pub stop: [u8; AQL_PACKET_BYTES],
    /// After the dispatch.
    pub read: [u8; AQL_PACKET_BYTES],
}

impl PassBuffers {
    /// Address of the start buffer.
    pub fn start_addr(&self) -> u64 {
        self.base_addr + self.start_offset as u64
    }

    /// Address of the stop buffer.
    pub fn stop_addr(&self) -> u64 {
        self.base_addr + self.stop_offset as u64
    }

    /// Address of the read buffer.
    pub fn read_addr(&self) -> u64 {
        self.base_addr + self.read_offset as u64
    }

    /// The PM4-IB packets pointing at the three buffers in the command memory, without a
    /// completion signal (see [`pm4_ib_packet`] to give one).
    pub fn packets(&self) -> PassPackets {
        PassPackets {
            start: pm4_ib_packet(HEADER_START, self.start_addr(), self.start.len() as u32, 0),
            stop: pm4_ib_packet(HEADER_BARRIER, self.stop_addr(), self.stop.len() as u32, 0),
            read: pm4_ib_packet(HEADER_BARRIER, self.read_addr(), self.read.len() as u32, 0),
        }
    }

    /// This layout as a tool that wrote no proof word recorded it (an older record log): the
    /// read-back is then judged by its values alone ([`packets_ran`]).
    pub fn without_proof(mut self) -> PassBuffers {
        self.proof_offset = None;
        self
    }

    /// The bytes of the command memory (`command_bytes`, little-endian, padding zeroed), to be
    /// copied to `base_addr`.
    pub fn command_memory(&self) -> Vec<u8> {
        let mut memory = vec![0; self.command_bytes];
        for (offset, buffer) in [
            (self.read_offset, &self.read),
            (self.start_offset, &self.start),
            (self.stop_offset, &self.stop),
        ] {
            for (chunk, dword) in memory[offset..offset + 4 * buffer.len()]
                .chunks_exact_mut(4)
                .zip(buffer)
            {
                chunk.copy_from_slice(&dword.to_le_bytes());
            }
        }
        memory
    }
}

/// An AMD vendor PM4-IB AQL packet (64 bytes) running `ib_dwords` dwords at `ib_addr`.
pub fn pm4_ib_packet(
    header: u16,
    ib_addr: u64,
    ib_dwords: u32,
    completion_signal: u64,
) -> [u8; AQL_PACKET_BYTES] {
    let mut bytes = [0; AQL_PACKET_BYTES];
    bytes[0..2].copy_from_slice(&header.to_le_bytes());
    bytes[2..4].copy_from_slice(&AMD_AQL_FORMAT_PM4_IB.to_le_bytes());
    let body = [
        packet::INDIRECT_BUFFER,
        (ib_addr as u32) & !3,
        (ib_addr >> 32) as u32,
        packet::IB_CONTROL | (ib_dwords & packet::IB_SIZE_MAX),
        PM4_IB_DW_COUNT_REMAIN,
    ];
    for (index, dword) in body.into_iter().enumerate() {
        let at = 4 + 4 * index;
        bytes[at..at + 4].copy_from_slice(&dword.to_le_bytes());
    }
    bytes[56..64].copy_from_slice(&completion_signal.to_le_bytes());
    bytes
}

/// The block's slots and PERF_SEL mask, or why the counter cannot be programmed.
pub(crate) fn check_event(name: &str, event: &BaseEvent) -> Result<(usize, u32)> {
    let (slots, mask) = match event.block {
        Block::Sq => (SQ_SLOTS, reg::SQ_PERF_SEL_MASK),
        Block::Grbm => (GRBM_SLOTS, reg::GRBM_PERF_SEL_MASK),
        Block::Other(ref block) => {
            return Err(Error::UnsupportedBlock {
                counter: name.to_owned(),
                block: block.clone(),
            });
        }
    };
    if event.event > mask {
        return Err(Error::EventOutOfRange {
            counter: name.to_owned(),
            block: event.block.name().to_owned(),
            event: event.event,
            max: mask,
        });
    }
    Ok((slots, mask))
}

const fn align_up(value: usize) -> usize {
    value.div_ceil(COMMAND_ALIGN) * COMMAND_ALIGN
}

/// Builds the start, stop and read buffers of one pass: `events` in request order (the k-th
/// event of a block gets the block's counter register k), the command memory at `base_addr`
/// (256-byte aligned), the output buffer at `output_addr` (8-byte aligned).
pub fn build_pass(
    topology: &Topology,
    events: &[(String, BaseEvent)],
    base_addr: u64,
    output_addr: u64,
) -> Result<PassBuffers> {
    let geometry = Geometry::of(topology)?;
    if !base_addr.is_multiple_of(COMMAND_ALIGN as u64) {
        return Err(Error::Misaligned {
            what: "command memory",
            address: base_addr,
            alignment: COMMAND_ALIGN as u64,
        });
    }
    if !output_addr.is_multiple_of(SLOT_BYTES as u64) {
        return Err(Error::Misaligned {
            what: "counter output",
            address: output_addr,
            alignment: SLOT_BYTES as u64,
        });
    }
    // Slots, in request order per block.
    let (mut sq, mut grbm) = (0_usize, 0_usize);
    let mut slots = Vec::with_capacity(events.len());
    for (name, event) in events {
        check_event(name, event)?;
        let next = if event.block == Block::Sq {
            &mut sq
        } else {
            &mut grbm
        };
        slots.push(*next as u32);
        *next += 1;
    }
    if sq > SQ_SLOTS || grbm > GRBM_SLOTS {
        let (block, limit) = if sq > SQ_SLOTS {
            (Block::Sq, SQ_SLOTS)
        } else {
            (Block::Grbm, GRBM_SLOTS)
        };
        return Err(Error::TooManyCounters {
            block: block.name().to_owned(),
            slots: limit,
            counters: events
                .iter()
                .filter(|(_, event)| event.block == block)
                .map(|(name, _)| name.clone())
                .collect(),
        });
    }
    let sizes = geometry.dwords(sq, grbm);
    if sizes.largest() > packet::IB_SIZE_MAX as usize {
        return Err(Error::FrameOverflow {
            dwords: sizes.largest(),
            frame: packet::IB_SIZE_MAX as usize,
            counters: events.iter().map(|(name, _)| name.clone()).collect(),
        });
    }

    let mut start = Writer::with_capacity(sizes.start);
    start.wait_idle();
    start.broadcast();
    start.uconfig(reg::CP_PERFMON_CNTL, reg::PERFMON_RESET);
    if sq > 0 {
        start.uconfig(reg::SQ_PERFCOUNTER_CTRL2, reg::SQ_CTRL2_VALUE);
    }
    for ((_, event), &slot) in events.iter().zip(&slots) {
        start.broadcast();
        if event.block == Block::Sq {
            start.uconfig(reg::SQ_PERFCOUNTER0_SELECT + 2 * slot, event.event);
            start.uconfig(reg::SQ_PERFCOUNTER_CTRL, reg::SQ_CTRL_VALUE);
        } else {
            start.uconfig(reg::GRBM_PERFCOUNTER_SELECT[slot as usize], event.event);
        }
    }
    start.broadcast();
    start.sh(reg::COMPUTE_PERFCOUNT_ENABLE, 1);
    start.uconfig(reg::CP_PERFMON_CNTL, reg::PERFMON_RESET);
    start.uconfig(reg::CP_PERFMON_CNTL, reg::PERFMON_START);
    start.wait_idle();
    let total_samples = sq * geometry.sq_samples() + grbm;
    let proof_offset = SLOT_BYTES * total_samples;
    start
        .0
        .extend_from_slice(&write_data(output_addr + proof_offset as u64, PROOF_WORD));

    let mut stop = Writer::with_capacity(sizes.stop);
    stop.broadcast();
    stop.uconfig(reg::CP_PERFMON_CNTL, reg::PERFMON_STOP);
    stop.wait_idle();

    let mut samples = Vec::with_capacity(total_samples);
    let mut counters = Vec::with_capacity(events.len());
    let mut read = Writer::with_capacity(sizes.read);
    read.uconfig(reg::CP_PERFMON_CNTL, reg::PERFMON_SAMPLE);
    read.broadcast();
    read.wait_idle();
    for (index, ((name, event), &slot)) in events.iter().zip(&slots).enumerate() {
        let first = samples.len();
        read.broadcast();
        if event.block == Block::Sq {
            let register = reg::SQ_PERFCOUNTER0_LO + 2 * slot;
            for se in 0..geometry.se {
                for sa in 0..SA_PER_SE {
                    for wgp in 0..geometry.wgp_per_sa {
                        let offset = SLOT_BYTES * samples.len();
                        read.uconfig(reg::GRBM_GFX_INDEX, (se << 16) | (sa << 8) | (wgp << 2));
                        read.copy(register, output_addr + offset as u64);
                        samples.push(Sample {
                            counter: index,
                            block: Block::Sq,
                            se,
                            sa,
                            wgp,
                            offset,
                        });
                    }
                }
            }
        } else {
            let offset = SLOT_BYTES * samples.len();
            let address = output_addr + offset as u64;
            read.broadcast();
            read.copy(reg::GRBM_PERFCOUNTER_LO[slot as usize], address);
            read.copy(reg::GRBM_PERFCOUNTER_HI[slot as usize], address + 4);
            samples.push(Sample {
                counter: index,
                block: Block::Grbm,
                se: 0,
                sa: 0,
                wgp: 0,
                offset,
            });
        }
        counters.push(PassCounter {
            name: name.clone(),
            event: event.clone(),
            slot,
            samples: first..samples.len(),
        });
    }
    read.broadcast();
    read.acquire_mem(output_addr, (SLOT_BYTES * samples.len()) as u64);

    debug_assert_eq!(
        (start.0.len(), stop.0.len(), read.0.len()),
        (sizes.start, sizes.stop, sizes.read)
    );
    let read_offset = 0;
    let start_offset = align_up(read_offset + 4 * sizes.read);
    let stop_offset = align_up(start_offset + 4 * sizes.start);
    let command_bytes = align_up(stop_offset + 4 * sizes.stop);
    Ok(PassBuffers {
        output_bytes: proof_offset + SLOT_BYTES,
        proof_offset: Some(proof_offset),
        start: start.0,
        stop: stop.0,
        read: read.0,
        read_offset,
        start_offset,
        stop_offset,
        command_bytes,
        base_addr,
        output_addr,
        counters,
        samples,
    })
}

/// ACQUIRE_MEM's size in 256-byte units for `bytes` at `base`, as aqlprofile computes it:
/// `((base % 256 + bytes) >> 8) + ceil(bytes / 256) − floor(bytes / 256)`.
pub const fn acquire_units(base: u64, bytes: u64) -> u64 {
    ((base % 256 + bytes) >> 8) + bytes.div_ceil(256) - (bytes >> 8)
}

/// A PM4 buffer under construction.
pub(crate) struct Writer(pub(crate) Vec<u32>);

impl Writer {
    pub(crate) fn with_capacity(dwords: usize) -> Writer {
        Writer(Vec::with_capacity(dwords))
    }

    pub(crate) fn uconfig(&mut self, register: u32, value: u32) {
        self.0
            .extend_from_slice(&[packet::SET_UCONFIG_REG, register - 0xC000, value]);
    }

    pub(crate) fn broadcast(&mut self) {
        self.uconfig(reg::GRBM_GFX_INDEX, reg::GRBM_BROADCAST);
    }

    pub(crate) fn sh(&mut self, register: u32, value: u32) {
        self.0
            .extend_from_slice(&[packet::SET_SH_REG, register - 0x2C00, value]);
    }

    pub(crate) fn wait_idle(&mut self) {
        self.0
            .extend_from_slice(&[packet::EVENT_WRITE, packet::CS_PARTIAL_FLUSH]);
    }

    /// WAIT_REG_MEM on a register: until `(register & mask) == reference`.
    pub(crate) fn wait_register(&mut self, register: u32, mask: u32, reference: u32) {
        self.0.extend_from_slice(&[
            packet::WAIT_REG_MEM,
            packet::WAIT_EQUAL_REGISTER,
            register,
            0,
            reference,
            mask,
            packet::WAIT_POLL_INTERVAL,
        ]);
    }

    pub(crate) fn copy(&mut self, register: u32, address: u64) {
        self.0.extend_from_slice(&[
            packet::COPY_DATA,
            packet::COPY_REGISTER_TO_MEMORY,
            register,
            0,
            (address as u32) & !3,
            (address >> 32) as u32,
        ]);
    }

    pub(crate) fn acquire_mem(&mut self, base: u64, bytes: u64) {
        self.0.extend_from_slice(&[
            packet::ACQUIRE_MEM,
            0,
            acquire_units(base, bytes) as u32,
            0,
            (base >> 8) as u32,
            ((base >> 40) & 0xFF) as u32,
            packet::ACQUIRE_POLL,
            packet::ACQUIRE_GCR,
        ]);
    }
}

/// Where one value of a counter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Instance {
    /// Shader engine (0 for GRBM).
    pub se: u32,
    /// Shader array (0 for GRBM).
    pub sa: u32,
    /// WGP (0 for GRBM).
    pub wgp: u32,
}

/// One counter's read-back values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterValues {
    /// The base counter.
    pub name: String,
    /// Its event.
    pub event: BaseEvent,
    /// One value per instance, in read order (SQ: 32-bit counts; GRBM: one 64-bit count).
    pub values: Vec<u64>,
    /// The instance of each value.
    pub instances: Vec<Instance>,
}

/// Whether the pass's packets ran for the dispatch whose output buffer is `output`: the start
/// buffer's [`PROOF_WORD`] is in its slot. For a layout without the proof
/// ([`PassBuffers::without_proof`]) only a value can tell: any counter of `decoded` above 0
/// says they ran, all zeros say nothing either way and count as not run.
pub fn packets_ran(buffers: &PassBuffers, output: &[u8], decoded: &[CounterValues]) -> bool {
    match buffers.proof_offset {
        Some(at) => output
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .is_some_and(|b| u32::from_le_bytes(b) == PROOF_WORD),
        None => decoded.iter().any(|c| c.values.iter().any(|&v| v != 0)),
    }
}

/// Decodes the output buffer of `buffers`' read into per-instance values per counter, in the
/// order the read wrote them. SQ slots yield their low 32 bits only (the upper 4 bytes are
/// never written); GRBM slots yield all 64.
pub fn decode(buffers: &PassBuffers, output: &[u8]) -> Result<Vec<CounterValues>> {
    if output.len() < buffers.output_bytes {
        return Err(Error::ShortOutput {
            got: output.len(),
            need: buffers.output_bytes,
        });
    }
    let mut decoded = Vec::with_capacity(buffers.counters.len());
    for counter in &buffers.counters {
        let samples = buffers.samples.get(counter.samples.clone()).unwrap_or(&[]);
        let mut values = Vec::with_capacity(samples.len());
        let mut instances = Vec::with_capacity(samples.len());
        for sample in samples {
            let slot = sample
                .offset
                .checked_add(SLOT_BYTES)
                .and_then(|end| output.get(sample.offset..end))
                .and_then(|bytes| <[u8; SLOT_BYTES]>::try_from(bytes).ok())
                .ok_or(Error::ShortOutput {
                    got: output.len(),
                    need: sample.offset.saturating_add(SLOT_BYTES),
                })?;
            let value = u64::from_le_bytes(slot);
            values.push(if sample.block == Block::Sq {
                value & 0xFFFF_FFFF
            } else {
                value
            });
            instances.push(Instance {
                se: sample.se,
                sa: sample.sa,
                wgp: sample.wgp,
            });
        }
        decoded.push(CounterValues {
            name: counter.name.clone(),
            event: counter.event.clone(),
            values,
            instances,
        });
    }
    Ok(decoded)
}
