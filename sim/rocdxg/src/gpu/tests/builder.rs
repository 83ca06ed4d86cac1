//! A small PM4 builder for the tests (not exported): single packets as aqlprofile's
//! `Gfx11CmdBuilder` emits them, and aqlprofile's gfx11 PMC start / stop / read sequences
//! (`GpuPmcBuilder`, intercept-pmc-att.md §5.4) for GRBM and SQ counters on one XCC.

use crate::gpu::counters::Geometry;
use crate::gpu::counters::perfmon::{DISABLE_AND_RESET, START_COUNTING, STOP_COUNTING};
use crate::gpu::pm4::{Compare, Event, Op, Source, Target, event, opcode, packet3};
use crate::gpu::regs::{self, GRBM_BROADCAST};

/// `SQ_PERFCOUNTER_CTRL` as aqlprofile writes it for the SQ block (PS | GS | HS | CS).
pub const SQ_CONTROL: u32 = 0x55;
/// `SQ_PERFCOUNTER_CTRL2` enable: FORCE_EN (b0) | VMID_EN = 0xFFFF ([16:1]).
pub const SQ_CONTROL2: u32 = 0x0001_FFFF;
/// aqlprofile's SQ read walks 2 shader arrays per SE whatever the agent reports.
pub const SA_PER_SE: u32 = 2;
/// `CP_PERFMON_CNTL` count + sample enable: aqlprofile's read value.
pub const PERFMON_READ: u32 = 0x401;

/// A PM4 command buffer under construction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pm4 {
    /// The dwords so far.
    pub dwords: Vec<u32>,
}

impl Pm4 {
    /// An empty buffer.
    pub fn new() -> Pm4 {
        Pm4::default()
    }

    /// Appends raw dwords.
    pub fn raw(&mut self, dwords: &[u32]) -> &mut Self {
        self.dwords.extend_from_slice(dwords);
        self
    }

    /// SET_UCONFIG_REG of one register.
    pub fn set_uconfig(&mut self, reg: u32, value: u32) -> &mut Self {
        self.raw(&[
            packet3(opcode::SET_UCONFIG_REG, 1),
            reg - regs::UCONFIG_SPACE.start,
            value,
        ])
    }

    /// SET_SH_REG of one register (INDEX = default).
    pub fn set_sh(&mut self, reg: u32, value: u32) -> &mut Self {
        self.raw(&[
            packet3(opcode::SET_SH_REG, 1),
            reg - regs::SH_SPACE.start,
            value,
        ])
    }

    /// aqlprofile's WaitIdle: EVENT_WRITE CS_PARTIAL_FLUSH, index 4.
    pub fn wait_idle(&mut self) -> &mut Self {
        self.raw(&[
            packet3(opcode::EVENT_WRITE, 0),
            event::CS_PARTIAL_FLUSH | (4 << 8),
        ])
    }

    /// EVENT_WRITE of `event_type` (index 0).
    pub fn event(&mut self, event_type: u32) -> &mut Self {
        self.raw(&[packet3(opcode::EVENT_WRITE, 0), event_type])
    }

    /// aqlprofile's BuildCopyRegDataPacket: one 32-bit register → memory (TC_L2), src_sel 4
    /// for privileged CONFIG registers, else 0.
    pub fn copy_reg_to_memory(&mut self, reg: u32, address: u64) -> &mut Self {
        let src_sel = if regs::CONFIG_SPACE.contains(&reg) {
            4
        } else {
            0
        };
        self.raw(&[
            packet3(opcode::COPY_DATA, 4),
            src_sel | (2 << 8),
            reg,
            0,
            (address as u32) & !3,
            (address >> 32) as u32,
        ])
    }

    /// ACQUIRE_MEM over `size` bytes at `address` (aqlprofile's cache flush, verified-facts
    /// §1: `C0065800 0 S 0 base>>8 (base>>40)&FF 10 18000`).
    pub fn acquire_mem(&mut self, address: u64, size: u64) -> &mut Self {
        let units = ((address % 256 + size) >> 8) + size.div_ceil(256) - (size >> 8);
        self.raw(&[
            packet3(opcode::ACQUIRE_MEM, 6),
            0,
            units as u32,
            0,
            (address >> 8) as u32,
            ((address >> 40) & 0xFF) as u32,
            0x10,
            0x0001_8000,
        ])
    }

    /// NOP of `n` dwords in total (`n` = 1 uses the 1-dword form).
    pub fn nop(&mut self, n: u32) -> &mut Self {
        if n == 1 {
            return self.raw(&[crate::gpu::pm4::ONE_DWORD_NOP]);
        }
        self.raw(&[packet3(opcode::NOP, n - 2)]);
        self.raw(&vec![0; n as usize - 1])
    }

    /// INDIRECT_BUFFER to `dwords` dwords at `address` (VALID, CACHE_POLICY stream).
    pub fn indirect_buffer(&mut self, address: u64, dwords: u32) -> &mut Self {
        self.raw(&[
            packet3(opcode::INDIRECT_BUFFER, 2),
            (address as u32) & !3,
            ((address >> 32) as u32) & 0xFFFF,
            (dwords & 0xF_FFFF) | (1 << 23) | (1 << 28),
        ])
    }

    /// aqlprofile's BuildWaitRegMemCommand.
    pub fn wait_reg_mem(
        &mut self,
        memory: bool,
        address: u64,
        equal: bool,
        mask: u32,
        value: u32,
    ) -> &mut Self {
        let function = if equal { 3 } else { 4 };
        let (lo, hi) = if memory {
            ((address as u32) & !3, (address >> 32) as u32)
        } else {
            (address as u32, 0)
        };
        self.raw(&[
            packet3(opcode::WAIT_REG_MEM, 5),
            function | (u32::from(memory) << 4),
            lo,
            hi,
            value,
            mask,
            0x10,
        ])
    }

    /// Encodes one op the way a driver would (the inverse of the decoder).
    pub fn op(&mut self, op: &Op) -> &mut Self {
        match op {
            Op::SetRegisters { first, values } => {
                let (code, base) = if regs::SH_SPACE.contains(first) {
                    (opcode::SET_SH_REG, regs::SH_SPACE.start)
                } else {
                    (opcode::SET_UCONFIG_REG, regs::UCONFIG_SPACE.start)
                };
                self.raw(&[packet3(code, values.len() as u32), first - base]);
                self.raw(values)
            }
            Op::Copy {
                source,
                target,
                wide,
            } => {
                let (src_sel, src_lo, src_hi) = match *source {
                    Source::Register(reg) => (0, reg, 0),
                    Source::Memory(address) => (2, address as u32, (address >> 32) as u32),
                    Source::Immediate(value) => (5, value as u32, (value >> 32) as u32),
                    Source::GpuClock => (9, 0, 0),
                    Source::SystemClock => (10, 0, 0),
                };
                let (dst_sel, dst_lo, dst_hi) = match *target {
                    Target::Register(reg) => (0, reg, 0),
                    Target::Memory(address) => (5, address as u32, (address >> 32) as u32),
                };
                self.raw(&[
                    packet3(opcode::COPY_DATA, 4),
                    src_sel | (dst_sel << 8) | (u32::from(*wide) << 16),
                    src_lo,
                    src_hi,
                    dst_lo,
                    dst_hi,
                ])
            }
            Op::Write {
                target,
                increment,
                data,
            } => {
                let (dst_sel, lo, hi) = match *target {
                    Target::Register(reg) => (0, reg, 0),
                    Target::Memory(address) => (5, address as u32, (address >> 32) as u32),
                };
                self.raw(&[
                    packet3(opcode::WRITE_DATA, 2 + data.len() as u32),
                    (dst_sel << 8) | (u32::from(!increment) << 16),
                    lo,
                    hi,
                ]);
                self.raw(data)
            }
            Op::Wait {
                target,
                compare,
                reference,
                mask,
            } => {
                let function = match compare {
                    Compare::Always => 0,
                    Compare::Less => 1,
                    Compare::LessEqual => 2,
                    Compare::Equal => 3,
                    Compare::NotEqual => 4,
                    Compare::GreaterEqual => 5,
                    Compare::Greater => 6,
                };
                let (space, lo, hi) = match *target {
                    Target::Register(reg) => (0, reg, 0),
                    Target::Memory(address) => (1, address as u32, (address >> 32) as u32),
                };
                self.raw(&[
                    packet3(opcode::WAIT_REG_MEM, 5),
                    function | (space << 4),
                    lo,
                    hi,
                    *reference,
                    *mask,
                    0x10,
                ])
            }
            Op::Event(kind) => {
                let event_type = match kind {
                    Event::Barrier => event::CS_PARTIAL_FLUSH,
                    Event::PerfStart => event::PERFCOUNTER_START,
                    Event::PerfStop => event::PERFCOUNTER_STOP,
                    Event::PerfSample => event::PERFCOUNTER_SAMPLE,
                };
                self.event(event_type)
            }
        }
    }
}

/// A counter block aqlprofile programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// GRBM: 2 global 64-bit counters.
    Grbm,
    /// SQ: 8 32-bit counters per WGP.
    Sq,
}

/// One requested counter, with the slot aqlprofile assigns (in request order per block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Block.
    pub block: Block,
    /// Select id.
    pub event: u32,
    /// Counter slot within the block.
    pub slot: u32,
}

/// Assigns slots to `(block, event)` requests in order.
pub fn counters(requests: &[(Block, u32)]) -> Vec<Counter> {
    let (mut grbm, mut sq) = (0, 0);
    requests
        .iter()
        .map(|&(block, event)| {
            let next = match block {
                Block::Grbm => &mut grbm,
                Block::Sq => &mut sq,
            };
            let slot = *next;
            *next += 1;
            Counter { block, event, slot }
        })
        .collect()
}

/// aqlprofile's `grbm_se_sh_wgp_index_value(se, sa, wgp)`.
pub fn gfx_index(se: u32, sa: u32, wgp: u32) -> u32 {
    (se << 16) | (sa << 8) | (wgp << 2)
}

/// aqlprofile's gfx11 Start (not concurrent).
pub fn pmc_start(counters: &[Counter]) -> Pm4 {
    let mut pm4 = Pm4::new();
    pm4.wait_idle();
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
    pm4.set_uconfig(regs::CP_PERFMON_CNTL, DISABLE_AND_RESET);
    if counters.iter().any(|c| c.block == Block::Sq) {
        pm4.set_uconfig(regs::SQ_PERFCOUNTER_CTRL2, SQ_CONTROL2);
    }
    for counter in counters {
        pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
        match counter.block {
            Block::Grbm => {
                pm4.set_uconfig(
                    regs::GRBM_PERFCOUNTER_SELECT[counter.slot as usize],
                    counter.event,
                );
            }
            Block::Sq => {
                pm4.set_uconfig(
                    regs::SQ_PERFCOUNTER0_SELECT + 2 * counter.slot,
                    counter.event,
                );
                pm4.set_uconfig(regs::SQ_PERFCOUNTER_CTRL, SQ_CONTROL);
            }
        }
    }
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
    pm4.set_sh(regs::COMPUTE_PERFCOUNT_ENABLE, 1);
    pm4.set_uconfig(regs::CP_PERFMON_CNTL, DISABLE_AND_RESET);
    pm4.set_uconfig(regs::CP_PERFMON_CNTL, START_COUNTING);
    pm4.wait_idle();
    pm4
}

/// aqlprofile's gfx11 Stop.
pub fn pmc_stop() -> Pm4 {
    let mut pm4 = Pm4::new();
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
    pm4.set_uconfig(regs::CP_PERFMON_CNTL, STOP_COUNTING);
    pm4.wait_idle();
    pm4
}

/// aqlprofile's WGPs per shader array: `(cu/2 + SA·se − 1) / (se·SA)` with SA = 2.
pub fn wgp_per_sa(geometry: &Geometry) -> u32 {
    let arrays = SA_PER_SE * geometry.shader_engines;
    (geometry.cus / 2).div_ceil(arrays)
}

/// Samples aqlprofile reads per SQ counter: se × 2 × wgp_per_sa.
pub fn sq_samples(geometry: &Geometry) -> usize {
    (geometry.shader_engines * SA_PER_SE * wgp_per_sa(geometry)) as usize
}

/// u64 output slots aqlprofile's Read fills for `counters`, in iterate order.
pub fn read_slots(counters: &[Counter], geometry: &Geometry) -> usize {
    counters
        .iter()
        .map(|c| match c.block {
            Block::Grbm => 1,
            Block::Sq => sq_samples(geometry),
        })
        .sum()
}

/// aqlprofile's gfx11 Read into the u64 slots at `output` (one XCC).
pub fn pmc_read(counters: &[Counter], geometry: &Geometry, output: u64) -> Pm4 {
    let mut pm4 = Pm4::new();
    pm4.set_uconfig(regs::CP_PERFMON_CNTL, PERFMON_READ);
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
    pm4.wait_idle();
    let mut slot = 0_u64;
    for counter in counters {
        pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
        match counter.block {
            Block::Grbm => {
                let s = counter.slot as usize;
                pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
                pm4.copy_reg_to_memory(regs::GRBM_PERFCOUNTER_LO[s], output + 8 * slot);
                pm4.copy_reg_to_memory(regs::GRBM_PERFCOUNTER_HI[s], output + 8 * slot + 4);
                slot += 1;
            }
            Block::Sq => {
                for se in 0..geometry.shader_engines {
                    for sa in 0..SA_PER_SE {
                        for wgp in 0..wgp_per_sa(geometry) {
                            pm4.set_uconfig(regs::GRBM_GFX_INDEX, gfx_index(se, sa, wgp));
                            pm4.copy_reg_to_memory(
                                regs::SQ_PERFCOUNTER0_LO + 2 * counter.slot,
                                output + 8 * slot,
                            );
                            slot += 1;
                        }
                    }
                }
            }
        }
    }
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, GRBM_BROADCAST);
    pm4.acquire_mem(output, 8 * slot);
    pm4
}

/// Sums the read-back slots per counter (aqlprofile's iterate_data + reduce(sum)).
pub fn per_counter(counters: &[Counter], geometry: &Geometry, slots: &[u64]) -> Vec<u64> {
    let mut at = 0;
    counters
        .iter()
        .map(|c| {
            let n = match c.block {
                Block::Grbm => 1,
                Block::Sq => sq_samples(geometry),
            };
            let sum = slots[at..at + n].iter().sum();
            at += n;
            sum
        })
        .collect()
}
