//! PM4 command buffers (intercept-pmc-att.md §5.2): decoding and validation of a whole buffer,
//! chained indirect buffers included, then execution against the register file and memory.
//!
//! [`decode`] validates everything first and turns the buffer into a flat list of [`Op`]s, so a
//! malformed buffer is rejected with a reason and nothing executes. It never reads outside
//! the buffer it is given, and reads a chained IB only after checking that the frame has room
//! for it. [`execute`] then runs the ops; only a WAIT_REG_MEM that times out (or a memory
//! access the [`Memory`] refuses) can fail there.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::regs::{self, RegisterFile};

/// Type-3 opcodes the command processor executes.
pub mod opcode {
    /// NOP (body ignored; see [`super::ONE_DWORD_NOP`]).
    pub const NOP: u32 = 0x10;
    /// WRITE_DATA.
    pub const WRITE_DATA: u32 = 0x37;
    /// WAIT_REG_MEM.
    pub const WAIT_REG_MEM: u32 = 0x3C;
    /// INDIRECT_BUFFER.
    pub const INDIRECT_BUFFER: u32 = 0x3F;
    /// COPY_DATA.
    pub const COPY_DATA: u32 = 0x40;
    /// EVENT_WRITE.
    pub const EVENT_WRITE: u32 = 0x46;
    /// ACQUIRE_MEM (a cache operation: nothing to do here).
    pub const ACQUIRE_MEM: u32 = 0x58;
    /// SET_SH_REG.
    pub const SET_SH_REG: u32 = 0x76;
    /// SET_UCONFIG_REG.
    pub const SET_UCONFIG_REG: u32 = 0x79;
}

/// EVENT_WRITE event types (soc21).
pub mod event {
    /// CS_PARTIAL_FLUSH (aqlprofile's WaitIdle).
    pub const CS_PARTIAL_FLUSH: u32 = 0x07;
    /// PERFCOUNTER_START.
    pub const PERFCOUNTER_START: u32 = 0x17;
    /// PERFCOUNTER_STOP.
    pub const PERFCOUNTER_STOP: u32 = 0x18;
    /// PERFCOUNTER_SAMPLE.
    pub const PERFCOUNTER_SAMPLE: u32 = 0x1B;
    /// THREAD_TRACE_START (accepted, no effect).
    pub const THREAD_TRACE_START: u32 = 0x33;
    /// THREAD_TRACE_STOP (accepted, no effect).
    pub const THREAD_TRACE_STOP: u32 = 0x34;
    /// THREAD_TRACE_FINISH (accepted, no effect).
    pub const THREAD_TRACE_FINISH: u32 = 0x37;
}

/// `PACKET3(op, count)`: count = total dwords − 2.
pub const fn packet3(op: u32, count: u32) -> u32 {
    (3 << 30) | ((count & 0x3FFF) << 16) | ((op & 0xFF) << 8)
}

/// The type-2 filler packet (one dword, no effect).
pub const TYPE2_FILLER: u32 = 0x8000_0000;

/// The one-dword NOP of the fact sheet (intercept-pmc-att.md §5.2). Read with the generic
/// formula it would be opcode 0xFF with count 0x3F, so it is recognised as a whole. A NOP
/// header with count 0x3FFF (`0xFFFF1000`, the kernel driver's ring NOP) is also one dword.
pub const ONE_DWORD_NOP: u32 = 0xC03F_FF00;

/// Deepest chain of INDIRECT_BUFFER packets: the submitted buffer may call an IB (level 1),
/// which may call one more (level 2).
pub const MAX_IB_DEPTH: u32 = 2;

/// Where COPY_DATA reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A register (src_sel 0; src_sel 4 "perfcounters" for a privileged CONFIG register).
    Register(u32),
    /// Memory (src_sel 2, TC_L2).
    Memory(u64),
    /// Immediate data (src_sel 5).
    Immediate(u64),
    /// The GPU clock counter (src_sel 9).
    GpuClock,
    /// The system (SoC reference) clock counter (src_sel 10).
    SystemClock,
}

/// Where COPY_DATA and WRITE_DATA write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A register.
    Register(u32),
    /// Memory at a dword-aligned host address.
    Memory(u64),
}

/// WAIT_REG_MEM compare functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// 0: always true.
    Always,
    /// 1: `<`.
    Less,
    /// 2: `<=`.
    LessEqual,
    /// 3: `==`.
    Equal,
    /// 4: `!=`.
    NotEqual,
    /// 5: `>=`.
    GreaterEqual,
    /// 6: `>`.
    Greater,
}

impl Compare {
    fn from_bits(bits: u32) -> Option<Compare> {
        Some(match bits {
            0 => Compare::Always,
            1 => Compare::Less,
            2 => Compare::LessEqual,
            3 => Compare::Equal,
            4 => Compare::NotEqual,
            5 => Compare::GreaterEqual,
            6 => Compare::Greater,
            _ => return None,
        })
    }

    /// Whether `value` (already masked) passes against `reference`.
    pub fn holds(self, value: u32, reference: u32) -> bool {
        match self {
            Compare::Always => true,
            Compare::Less => value < reference,
            Compare::LessEqual => value <= reference,
            Compare::Equal => value == reference,
            Compare::NotEqual => value != reference,
            Compare::GreaterEqual => value >= reference,
            Compare::Greater => value > reference,
        }
    }
}

/// The events EVENT_WRITE can raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Wait for idle (CS_PARTIAL_FLUSH); also the accepted thread-trace events. No effect.
    Barrier,
    /// PERFCOUNTER_START: like `CP_PERFMON_CNTL` state 1.
    PerfStart,
    /// PERFCOUNTER_STOP: like state 2.
    PerfStop,
    /// PERFCOUNTER_SAMPLE: counter reads are live, so nothing to latch.
    PerfSample,
}

/// An op's dwords (register values, WRITE_DATA data): up to [`Words::INLINE`] held in place,
/// more on the heap. The counter and thread-trace buffers write one or two dwords per packet,
/// so decoding them allocates nothing per packet; a slice in every other respect.
#[derive(Clone)]
pub enum Words {
    /// At most [`Words::INLINE`] dwords: the first `len` of `words`.
    Inline {
        /// Storage; the dwords after `len` are 0.
        words: [u32; Words::INLINE],
        /// How many are used.
        len: u8,
    },
    /// More dwords.
    Heap(Vec<u32>),
}

impl Words {
    /// Dwords held without an allocation.
    pub const INLINE: usize = 4;
}

impl From<&[u32]> for Words {
    fn from(dwords: &[u32]) -> Words {
        if dwords.len() <= Words::INLINE {
            let mut words = [0; Words::INLINE];
            words[..dwords.len()].copy_from_slice(dwords);
            Words::Inline {
                words,
                len: dwords.len() as u8,
            }
        } else {
            Words::Heap(dwords.to_vec())
        }
    }
}

impl From<Vec<u32>> for Words {
    fn from(dwords: Vec<u32>) -> Words {
        Words::from(dwords.as_slice())
    }
}

impl std::ops::Deref for Words {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match self {
            Words::Inline { words, len } => &words[..usize::from(*len)],
            Words::Heap(dwords) => dwords,
        }
    }
}

/// Equal when the dwords are, however they are held.
impl PartialEq for Words {
    fn eq(&self, other: &Words) -> bool {
        **self == **other
    }
}

impl Eq for Words {}

impl fmt::Debug for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// One validated operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// SET_UCONFIG_REG / SET_SH_REG: consecutive registers from `first`.
    SetRegisters {
        /// First register.
        first: u32,
        /// Values, one per register.
        values: Words,
    },
    /// COPY_DATA.
    Copy {
        /// Source.
        source: Source,
        /// Destination.
        target: Target,
        /// COUNT_SEL: 64 bits instead of 32.
        wide: bool,
    },
    /// WRITE_DATA.
    Write {
        /// Destination of the first dword.
        target: Target,
        /// Whether the address advances per dword (ADDR_INCR = 0).
        increment: bool,
        /// Data dwords.
        data: Words,
    },
    /// WAIT_REG_MEM.
    Wait {
        /// A register (`Target::Register`) or a memory dword.
        target: Target,
        /// Compare function.
        compare: Compare,
        /// Reference value.
        reference: u32,
        /// Mask applied to the polled value.
        mask: u32,
    },
    /// EVENT_WRITE.
    Event(Event),
}

/// Memory the command processor reads and writes: the host's address space in the library,
/// a map in tests.
pub trait Memory {
    /// Reads `count` dwords starting at `address` (a chained IB).
    fn read_dwords(&self, address: u64, count: usize) -> Result<Vec<u32>, String>;
    /// Reads one dword (polled by WAIT_REG_MEM: must observe other threads' stores).
    fn read_u32(&self, address: u64) -> Result<u32, String>;
    /// Writes one dword.
    fn write_u32(&mut self, address: u64, value: u32) -> Result<(), String>;
}

/// The process's own memory: the simulated GPU shares the host address space, as an APU does.
pub struct HostMemory {
    _private: (),
}

impl HostMemory {
    /// Access to host memory.
    ///
    /// # Safety
    ///
    /// Every address the command buffers executed through it name (chained IBs, COPY_DATA and
    /// WRITE_DATA destinations and sources, WAIT_REG_MEM polls) must be valid for the access
    /// (4-byte aligned after the packet's `& ~3`), and so must the thread-trace buffers of the
    /// engines tracing (written dword by dword); this is `wslsim_gpu_pm4`'s contract.
    pub unsafe fn new() -> HostMemory {
        HostMemory { _private: () }
    }
}

impl Memory for HostMemory {
    fn read_dwords(&self, address: u64, count: usize) -> Result<Vec<u32>, String> {
        let pointer = address as usize as *const u32;
        let mut dwords = Vec::with_capacity(count);
        for index in 0..count {
            // SAFETY: `HostMemory::new`'s contract: the IB's `count` dwords at `address` are
            // readable; read_unaligned assumes no alignment.
            dwords.push(unsafe { pointer.add(index).read_unaligned() });
        }
        Ok(dwords)
    }

    fn read_u32(&self, address: u64) -> Result<u32, String> {
        let pointer = address as usize as *const AtomicU32;
        // SAFETY: `HostMemory::new`'s contract: a valid, 4-byte aligned dword (the decoder
        // clears the low two address bits). An atomic load sees other threads' stores.
        Ok(unsafe { (*pointer).load(Ordering::Acquire) })
    }

    fn write_u32(&mut self, address: u64, value: u32) -> Result<(), String> {
        let pointer = address as usize as *const AtomicU32;
        // SAFETY: as for `read_u32`; an atomic store so pollers on other threads see it.
        unsafe { (*pointer).store(value, Ordering::Release) };
        Ok(())
    }
}

/// Why a buffer was refused (nothing executed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The buffer, with its chained IBs, is larger than the frame.
    Overflow {
        /// Dwords counted when the frame was exceeded.
        dwords: u64,
        /// The frame, in dwords.
        frame: u32,
    },
    /// A malformed packet.
    Malformed(String),
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::Overflow { dwords, frame } => write!(
                f,
                "PM4 command buffer overflow: {dwords} dwords exceed the {frame}-dword frame"
            ),
            Reject::Malformed(reason) => f.write_str(reason),
        }
    }
}

/// A validated command buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// The operations, chained IBs flattened in place.
    pub ops: Vec<Op>,
    /// Dwords of the buffer and every chained IB.
    pub dwords: u64,
    /// Packets decoded (including NOPs, IB packets and fillers).
    pub packets: u64,
    /// Chained IBs followed: a program without any means what its own dwords say.
    pub chained_ibs: u64,
}

/// Validates `buffer` (and every chained IB it calls, read through `memory`) against a frame
/// of `frame` dwords and decodes it.
pub fn decode(buffer: &[u32], frame: u32, memory: &dyn Memory) -> Result<Program, Reject> {
    let mut decoder = Decoder {
        frame,
        memory,
        // Every op takes at least two dwords: one allocation for a buffer without chained IBs.
        program: Program {
            ops: Vec::with_capacity(buffer.len().div_ceil(2).min(frame as usize)),
            ..Program::default()
        },
    };
    decoder.charge(buffer.len() as u64)?;
    decoder.walk(buffer, 0, None)?;
    Ok(decoder.program)
}

/// The programs of buffers submitted before, so a buffer submitted again (the counter and
/// thread-trace packets of every dispatch are) is not decoded again: the simulator's own work
/// per submission, which no GPU spends on the host, stays small beside the modelled command
/// processor time. Decoding is a pure function of a buffer's dwords when it chains no IB, so
/// only such programs are kept, each with the dwords it was decoded from; a buffer at the same
/// address with other dwords is decoded anew. At most [`DecodeCache::CAPACITY`] programs, the
/// oldest given up first (a tool cycles through its slots' buffers in order, so the working
/// set must fit: a counted dispatch in flight holds three).
#[derive(Debug, Default)]
pub struct DecodeCache {
    programs: std::collections::HashMap<BufferKey, (Box<[u32]>, Arc<Program>)>,
    /// Keys in the order they were first kept.
    order: std::collections::VecDeque<BufferKey>,
}

/// A submitted buffer's address and length in dwords.
type BufferKey = (usize, usize);

impl DecodeCache {
    /// Programs kept at most (a few MiB of the simulator's memory when full).
    pub const CAPACITY: usize = 4096;

    /// What [`decode`] gives for `buffer`, from the cache when the same dwords at the same
    /// address were decoded before (with the same `frame`: one cache serves one node).
    pub fn decode(
        &mut self,
        buffer: &[u32],
        frame: u32,
        memory: &dyn Memory,
    ) -> Result<Arc<Program>, Reject> {
        let key = (buffer.as_ptr() as usize, buffer.len());
        if let Some((dwords, program)) = self.programs.get(&key)
            && **dwords == *buffer
        {
            return Ok(Arc::clone(program));
        }
        let mut program = decode(buffer, frame, memory)?;
        program.ops.shrink_to_fit();
        let program = Arc::new(program);
        if program.chained_ibs == 0 {
            let kept = (buffer.into(), Arc::clone(&program));
            if self.programs.insert(key, kept).is_none() {
                self.order.push_back(key);
                if self.order.len() > DecodeCache::CAPACITY
                    && let Some(oldest) = self.order.pop_front()
                {
                    self.programs.remove(&oldest);
                }
            }
        }
        // A program kept for other dwords at this address is never returned (the dwords are
        // compared), so it is left to be given up in its turn.
        Ok(program)
    }

    /// Programs held now.
    pub fn len(&self) -> usize {
        self.programs.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }
}

struct Decoder<'m> {
    frame: u32,
    memory: &'m dyn Memory,
    program: Program,
}

/// Names the dword `index` of a buffer at `depth` for error messages.
fn place(depth: u32, ib: Option<u64>, index: usize) -> String {
    match ib {
        None => format!("dword {index}"),
        Some(address) => format!("dword {index} of the level-{depth} IB at {address:#x}"),
    }
}

impl Decoder<'_> {
    fn charge(&mut self, dwords: u64) -> Result<(), Reject> {
        self.program.dwords = self.program.dwords.saturating_add(dwords);
        if self.program.dwords > u64::from(self.frame) {
            return Err(Reject::Overflow {
                dwords: self.program.dwords,
                frame: self.frame,
            });
        }
        Ok(())
    }

    fn walk(&mut self, buffer: &[u32], depth: u32, ib: Option<u64>) -> Result<(), Reject> {
        let mut index = 0;
        while let Some(&header) = buffer.get(index) {
            self.program.packets += 1;
            match header >> 30 {
                2 => {
                    index += 1;
                    continue;
                }
                3 => {}
                kind => {
                    return Err(Reject::Malformed(format!(
                        "{}: type-{kind} PM4 header {header:#010x} is not supported (only \
                         type-3 packets and type-2 fillers)",
                        place(depth, ib, index)
                    )));
                }
            }
            let op = (header >> 8) & 0xFF;
            let count = (header >> 16) & 0x3FFF;
            if header == ONE_DWORD_NOP || (op == opcode::NOP && count == 0x3FFF) {
                index += 1;
                continue;
            }
            let total = count as usize + 2;
            let left = buffer.len() - index;
            if total > left {
                return Err(Reject::Malformed(format!(
                    "{}: truncated packet: {} needs {total} dwords, {left} left in the buffer",
                    place(depth, ib, index),
                    describe(op)
                )));
            }
            let body = &buffer[index + 1..index + total];
            self.packet(op, body, depth)
                .map_err(|reason| match reason {
                    Reject::Malformed(reason) => Reject::Malformed(format!(
                        "{}: {}: {reason}",
                        place(depth, ib, index),
                        opcode_name(op).map_or_else(|| unknown_opcode(op), str::to_owned)
                    )),
                    overflow => overflow,
                })?;
            index += total;
        }
        Ok(())
    }

    fn packet(&mut self, op: u32, body: &[u32], depth: u32) -> Result<(), Reject> {
        let bad = |reason: String| Err(Reject::Malformed(reason));
        match op {
            opcode::NOP | opcode::ACQUIRE_MEM => Ok(()),
            opcode::SET_UCONFIG_REG | opcode::SET_SH_REG => {
                let Some((&offset, values)) = body.split_first() else {
                    return bad("no register offset".into());
                };
                if values.is_empty() {
                    return bad("no register values".into());
                }
                let (base, space) = if op == opcode::SET_SH_REG {
                    (regs::SH_SPACE.start, regs::SH_SPACE)
                } else {
                    (regs::UCONFIG_SPACE.start, regs::UCONFIG_SPACE)
                };
                let first = base + (offset & 0xFFFF);
                let last = u64::from(first) + values.len() as u64 - 1;
                if !space.contains(&first) || last >= u64::from(space.end) {
                    return bad(format!(
                        "registers {first:#x}..={last:#x} leave the {:#x}..{:#x} space",
                        space.start, space.end
                    ));
                }
                self.program.ops.push(Op::SetRegisters {
                    first,
                    values: Words::from(values),
                });
                Ok(())
            }
            opcode::COPY_DATA => {
                let &[control, src_lo, src_hi, dst_lo, dst_hi] = body else {
                    return bad(format!("has {} body dwords, needs 5", body.len()));
                };
                let wide = control & (1 << 16) != 0;
                let span = if wide { 2 } else { 1 };
                let source = match control & 0xF {
                    0 => Source::Register(register(src_lo, span)?),
                    4 => Source::Register(perfcounter_register(src_lo, span, "SRC_SEL")?),
                    2 => Source::Memory(memory_address(src_lo, src_hi)?),
                    5 => Source::Immediate(if wide {
                        u64::from(src_lo) | (u64::from(src_hi) << 32)
                    } else {
                        u64::from(src_lo)
                    }),
                    9 => Source::GpuClock,
                    10 => Source::SystemClock,
                    other => return bad(format!("unsupported SRC_SEL {other}")),
                };
                let target = match (control >> 8) & 0xF {
                    0 => Target::Register(register(dst_lo, span)?),
                    4 => Target::Register(perfcounter_register(dst_lo, span, "DST_SEL")?),
                    2 | 5 => Target::Memory(memory_address(dst_lo, dst_hi)?),
                    other => return bad(format!("unsupported DST_SEL {other}")),
                };
                self.program.ops.push(Op::Copy {
                    source,
                    target,
                    wide,
                });
                Ok(())
            }
            opcode::WRITE_DATA => {
                let &[control, addr_lo, addr_hi, ref data @ ..] = body else {
                    return bad(format!("has {} body dwords, needs at least 3", body.len()));
                };
                if data.is_empty() {
                    return bad("carries no data".into());
                }
                let increment = control & (1 << 16) == 0;
                let span = if increment { data.len() as u64 } else { 1 };
                let target = match (control >> 8) & 0xF {
                    0 => Target::Register(register(addr_lo, span)?),
                    2 | 5 => Target::Memory(memory_address(addr_lo, addr_hi)?),
                    other => return bad(format!("unsupported DST_SEL {other}")),
                };
                self.program.ops.push(Op::Write {
                    target,
                    increment,
                    data: Words::from(data),
                });
                Ok(())
            }
            opcode::WAIT_REG_MEM => {
                let &[control, addr_lo, addr_hi, reference, mask, _poll] = body else {
                    return bad(format!("has {} body dwords, needs 6", body.len()));
                };
                let Some(compare) = Compare::from_bits(control & 0x7) else {
                    return bad("FUNCTION 7 is reserved".into());
                };
                let operation = (control >> 6) & 0x3;
                if operation != 0 {
                    return bad(format!("OPERATION {operation} is not WAIT_REG_MEM (0)"));
                }
                let target = match (control >> 4) & 0x3 {
                    0 => Target::Register(register(addr_lo, 1)?),
                    1 => Target::Memory(memory_address(addr_lo, addr_hi)?),
                    other => return bad(format!("unsupported MEM_SPACE {other}")),
                };
                self.program.ops.push(Op::Wait {
                    target,
                    compare,
                    reference,
                    mask,
                });
                Ok(())
            }
            opcode::EVENT_WRITE => {
                let Some(&event) = body.first() else {
                    return bad("no event dword".into());
                };
                let event = match event & 0x3F {
                    event::CS_PARTIAL_FLUSH
                    | event::THREAD_TRACE_START
                    | event::THREAD_TRACE_STOP
                    | event::THREAD_TRACE_FINISH => Event::Barrier,
                    event::PERFCOUNTER_START => Event::PerfStart,
                    event::PERFCOUNTER_STOP => Event::PerfStop,
                    event::PERFCOUNTER_SAMPLE => Event::PerfSample,
                    other => return bad(format!("unsupported event type {other:#04x}")),
                };
                self.program.ops.push(Op::Event(event));
                Ok(())
            }
            opcode::INDIRECT_BUFFER => {
                let &[base_lo, base_hi, control] = body else {
                    return bad(format!("has {} body dwords, needs 3", body.len()));
                };
                if depth >= MAX_IB_DEPTH {
                    return bad(format!(
                        "chains deeper than {MAX_IB_DEPTH} levels of indirect buffers"
                    ));
                }
                if control & (1 << 23) == 0 {
                    return bad("VALID (bit 23) is not set".into());
                }
                let size = control & 0xF_FFFF;
                if size == 0 {
                    return bad("IB_SIZE is 0".into());
                }
                let address = u64::from(base_lo & !3) | (u64::from(base_hi & 0xFFFF) << 32);
                if address == 0 {
                    return bad("IB address is 0".into());
                }
                // The frame bounds what may be read: check before touching the memory.
                self.charge(u64::from(size))?;
                let dwords = self
                    .memory
                    .read_dwords(address, size as usize)
                    .map_err(|error| {
                        Reject::Malformed(format!("cannot read the IB at {address:#x}: {error}"))
                    })?;
                self.program.chained_ibs += 1;
                self.walk(&dwords, depth + 1, Some(address))
            }
            other => bad(format!("unsupported opcode {other:#04x}")),
        }
    }
}

/// A register operand covering `span` consecutive registers, all in a known space.
fn register(reg: u32, span: u64) -> Result<u32, Reject> {
    let last = u64::from(reg) + span.max(1) - 1;
    let inside = |space: &std::ops::Range<u32>| space.contains(&reg) && last < u64::from(space.end);
    if inside(&regs::CONFIG_SPACE) || inside(&regs::UCONFIG_SPACE) {
        Ok(reg)
    } else {
        Err(Reject::Malformed(format!(
            "register {reg:#x} is outside the CONFIG ({:#x}..{:#x}) and UCONFIG ({:#x}..{:#x}) \
             spaces",
            regs::CONFIG_SPACE.start,
            regs::CONFIG_SPACE.end,
            regs::UCONFIG_SPACE.start,
            regs::UCONFIG_SPACE.end
        )))
    }
}

/// A register operand of COPY_DATA's select 4 ("perfcounters"): that path reaches the
/// privileged CONFIG space only. The SQ and GRBM counter registers are UCONFIG and are read
/// with select 0 (verified-facts §1), so select 4 on them is refused.
fn perfcounter_register(reg: u32, span: u64, field: &str) -> Result<u32, Reject> {
    let reg = register(reg, span)?;
    if regs::CONFIG_SPACE.contains(&reg) {
        Ok(reg)
    } else {
        Err(Reject::Malformed(format!(
            "{field} 4 (perfcounters) reaches the CONFIG space ({:#x}..{:#x}) only; register \
             {reg:#x} is UCONFIG: use {field} 0",
            regs::CONFIG_SPACE.start,
            regs::CONFIG_SPACE.end
        )))
    }
}

/// A memory operand: the dword-aligned address `lo & ~3 | hi << 32`, never 0.
fn memory_address(lo: u32, hi: u32) -> Result<u64, Reject> {
    let address = u64::from(lo & !3) | (u64::from(hi) << 32);
    if address == 0 {
        Err(Reject::Malformed("memory address is 0".into()))
    } else {
        Ok(address)
    }
}

/// An opcode's name and number, e.g. `COPY_DATA (opcode 0x40)` (just `opcode 0x99` if unknown).
fn describe(op: u32) -> String {
    match opcode_name(op) {
        Some(name) => format!("{name} (opcode {op:#04x})"),
        None => unknown_opcode(op),
    }
}

/// How messages name an opcode without a name: `opcode 0x99`.
fn unknown_opcode(op: u32) -> String {
    format!("opcode {op:#04x}")
}

/// The name of a supported opcode, for messages (`None` for any other).
pub fn opcode_name(op: u32) -> Option<&'static str> {
    Some(match op {
        opcode::NOP => "NOP",
        opcode::WRITE_DATA => "WRITE_DATA",
        opcode::WAIT_REG_MEM => "WAIT_REG_MEM",
        opcode::INDIRECT_BUFFER => "INDIRECT_BUFFER",
        opcode::COPY_DATA => "COPY_DATA",
        opcode::EVENT_WRITE => "EVENT_WRITE",
        opcode::ACQUIRE_MEM => "ACQUIRE_MEM",
        opcode::SET_SH_REG => "SET_SH_REG",
        opcode::SET_UCONFIG_REG => "SET_UCONFIG_REG",
        _ => return None,
    })
}

/// What execution needs besides the registers and memory.
pub struct Context<'a> {
    /// The GPU clock now, in ticks (COPY_DATA src_sel 9 and 10).
    pub ticks: &'a dyn Fn() -> u64,
    /// How long a WAIT_REG_MEM polls before failing.
    pub wait_timeout: Duration,
}

/// Why execution stopped part-way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A WAIT_REG_MEM was not satisfied in time.
    Timeout(String),
    /// A memory access failed.
    Memory(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Timeout(reason) | Failure::Memory(reason) => f.write_str(reason),
        }
    }
}

/// Runs a validated program.
pub fn execute(
    program: &Program,
    registers: &mut RegisterFile,
    memory: &mut dyn Memory,
    context: &Context<'_>,
) -> Result<(), Failure> {
    // Thread-trace tokens appended since the last submission (a dispatch's) reach memory
    // first, and after every op that wrote a thread-trace register those of its writes (a
    // stream's header, user data, a stream's end): no other op appends tokens.
    registers.trace.flush(memory).map_err(Failure::Memory)?;
    registers.take_trace_written();
    for op in &program.ops {
        match op {
            Op::SetRegisters { first, values } => {
                for (reg, &value) in (*first..).zip(values.iter()) {
                    registers.write(reg, value);
                }
            }
            Op::Copy {
                source,
                target,
                wide,
            } => {
                let value = match *source {
                    Source::Register(reg) => {
                        let lo = u64::from(registers.read(reg));
                        if *wide {
                            lo | (u64::from(registers.read(reg + 1)) << 32)
                        } else {
                            lo
                        }
                    }
                    Source::Memory(address) => {
                        let lo = u64::from(memory.read_u32(address).map_err(Failure::Memory)?);
                        if *wide {
                            let hi = memory
                                .read_u32(address.wrapping_add(4))
                                .map_err(Failure::Memory)?;
                            lo | (u64::from(hi) << 32)
                        } else {
                            lo
                        }
                    }
                    Source::Immediate(value) => value,
                    Source::GpuClock | Source::SystemClock => (context.ticks)(),
                };
                store(registers, memory, *target, value as u32)?;
                if *wide {
                    store(registers, memory, next(*target), (value >> 32) as u32)?;
                }
            }
            Op::Write {
                target,
                increment,
                data,
            } => {
                let mut at = *target;
                for &value in data.iter() {
                    store(registers, memory, at, value)?;
                    if *increment {
                        at = next(at);
                    }
                }
            }
            Op::Wait {
                target,
                compare,
                reference,
                mask,
            } => wait(
                registers, &*memory, *target, *compare, *reference, *mask, context,
            )?,
            Op::Event(event) => {
                let state = match event {
                    Event::PerfStart => Some(super::counters::perfmon::START_COUNTING),
                    Event::PerfStop => Some(super::counters::perfmon::STOP_COUNTING),
                    Event::PerfSample | Event::Barrier => None,
                };
                if let Some(state) = state {
                    let cntl = registers.read(regs::CP_PERFMON_CNTL);
                    registers.write(regs::CP_PERFMON_CNTL, (cntl & !0xF) | state);
                }
            }
        }
        if registers.take_trace_written() {
            registers.trace.flush(memory).map_err(Failure::Memory)?;
        }
    }
    Ok(())
}

fn next(target: Target) -> Target {
    match target {
        Target::Register(reg) => Target::Register(reg.wrapping_add(1)),
        Target::Memory(address) => Target::Memory(address.wrapping_add(4)),
    }
}

fn store(
    registers: &mut RegisterFile,
    memory: &mut dyn Memory,
    target: Target,
    value: u32,
) -> Result<(), Failure> {
    match target {
        Target::Register(reg) => {
            registers.write(reg, value);
            Ok(())
        }
        Target::Memory(address) => memory.write_u32(address, value).map_err(Failure::Memory),
    }
}

fn wait(
    registers: &RegisterFile,
    memory: &dyn Memory,
    target: Target,
    compare: Compare,
    reference: u32,
    mask: u32,
    context: &Context<'_>,
) -> Result<(), Failure> {
    let started = Instant::now();
    loop {
        let value = match target {
            Target::Register(reg) => registers.read(reg),
            Target::Memory(address) => memory.read_u32(address).map_err(Failure::Memory)?,
        };
        if compare.holds(value & mask, reference) {
            return Ok(());
        }
        let waited = started.elapsed();
        if waited >= context.wait_timeout {
            let what = match target {
                Target::Register(reg) => format!("register {reg:#x}"),
                Target::Memory(address) => format!("memory at {address:#x}"),
            };
            return Err(Failure::Timeout(format!(
                "WAIT_REG_MEM on {what} timed out after {} ms: {value:#x} & {mask:#x} {compare:?} \
                 {reference:#x} never held",
                context.wait_timeout.as_millis()
            )));
        }
        if waited < Duration::from_micros(100) {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
