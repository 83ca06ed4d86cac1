//! The PM4 decoder and executor: round trips, every malformed case, the frame, and a property
//! test that random buffers never panic.

use std::time::Duration;

use proptest::prelude::*;
use wslsim_scenario::{Counters, Scenario};

use super::FakeMemory;
use super::builder::{self, Block, Pm4, counters, pmc_read, pmc_start, pmc_stop};
use crate::gpu::NodeGpu;
use crate::gpu::counters::{Geometry, PerfBlock, Session, grbm, sq};
use crate::gpu::pm4::{
    Compare, Context, Event, Failure, Op, Program, Reject, Source, Target, decode, execute, opcode,
    packet3,
};
use crate::gpu::regs::{self, RegisterFile};
use crate::gpu::{Pm4Error, pm4};

const FRAME: u32 = 512;
const OUT: u64 = 0x7000_0000_1000;

fn registers() -> RegisterFile {
    let session = Session::new(&Counters::default(), 7, 1);
    RegisterFile::new(PerfBlock::new(Geometry::radeon_890m(), session))
}

fn context(timeout_ms: u64) -> (impl Fn() -> u64, Duration) {
    (|| 0xABCD_0000_1234_u64, Duration::from_millis(timeout_ms))
}

fn decoded(buffer: &[u32]) -> Program {
    decode(buffer, FRAME, &FakeMemory::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn rejected(buffer: &[u32], memory: &FakeMemory) -> String {
    match decode(buffer, FRAME, memory) {
        Ok(program) => panic!("accepted {buffer:#x?}: {program:?}"),
        Err(reject) => reject.to_string(),
    }
}

fn run(buffer: &[u32], memory: &mut FakeMemory, registers: &mut RegisterFile) {
    let program = decode(buffer, FRAME, memory).unwrap_or_else(|e| panic!("{e}"));
    let (ticks, timeout) = context(50);
    let context = Context {
        ticks: &ticks,
        wait_timeout: timeout,
    };
    execute(&program, registers, memory, &context).unwrap();
}

// ------------------------------------------------------------------------------ round trips

fn sample_ops() -> Vec<Op> {
    vec![
        Op::SetRegisters {
            first: regs::CP_PERFMON_CNTL,
            values: vec![1].into(),
        },
        Op::SetRegisters {
            first: regs::COMPUTE_PERFCOUNT_ENABLE,
            values: vec![1, 2, 3].into(),
        },
        Op::Copy {
            source: Source::Register(regs::GRBM_PERFCOUNTER_LO[0]),
            target: Target::Memory(OUT),
            wide: true,
        },
        Op::Copy {
            source: Source::Immediate(0x1234_5678_9ABC_DEF0),
            target: Target::Register(0x3000),
            wide: true,
        },
        Op::Copy {
            source: Source::Memory(OUT + 8),
            target: Target::Memory(OUT + 16),
            wide: false,
        },
        Op::Copy {
            source: Source::GpuClock,
            target: Target::Memory(OUT + 24),
            wide: true,
        },
        Op::Copy {
            source: Source::SystemClock,
            target: Target::Register(regs::GRBM_GFX_INDEX),
            wide: false,
        },
        Op::Write {
            target: Target::Memory(OUT + 32),
            increment: true,
            data: vec![1, 2, 3].into(),
        },
        Op::Write {
            target: Target::Register(0xC300),
            increment: false,
            data: vec![9, 8].into(),
        },
        Op::Write {
            target: Target::Memory(OUT + 40),
            increment: true,
            data: vec![1, 2, 3, 4, 5, 6, 7].into(),
        },
        Op::SetRegisters {
            first: 0xC400,
            values: vec![6, 5, 4, 3, 2].into(),
        },
        Op::Wait {
            target: Target::Memory(OUT),
            compare: Compare::NotEqual,
            reference: 5,
            mask: 0xFF,
        },
        Op::Wait {
            target: Target::Register(regs::CP_PERFMON_CNTL),
            compare: Compare::GreaterEqual,
            reference: 0,
            mask: 0xF,
        },
        Op::Event(Event::Barrier),
        Op::Event(Event::PerfStart),
        Op::Event(Event::PerfStop),
        Op::Event(Event::PerfSample),
    ]
}

#[test]
fn every_op_round_trips_through_its_encoding() {
    let mut all = Pm4::new();
    for op in sample_ops() {
        let mut one = Pm4::new();
        one.op(&op);
        assert_eq!(
            decoded(&one.dwords).ops,
            vec![op.clone()],
            "{:#x?}",
            one.dwords
        );
        all.op(&op);
    }
    let program = decoded(&all.dwords);
    assert_eq!(program.ops, sample_ops());
    assert_eq!(program.dwords, all.dwords.len() as u64);
}

#[test]
fn aqlprofile_packets_decode_to_what_they_mean() {
    let mut pm4 = Pm4::new();
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, regs::GRBM_BROADCAST)
        .set_sh(regs::COMPUTE_PERFCOUNT_ENABLE, 1)
        .wait_idle()
        .copy_reg_to_memory(regs::SQ_PERFCOUNTER0_LO + 2, OUT | 3)
        .copy_reg_to_memory(0x2345, OUT)
        .acquire_mem(OUT, 64)
        .nop(1)
        .nop(4)
        .raw(&[pm4::TYPE2_FILLER, packet3(opcode::NOP, 0x3FFF)])
        .wait_reg_mem(true, OUT, true, 0xFFFF_FFFF, 7);
    let program = decoded(&pm4.dwords);
    assert_eq!(
        program.ops,
        vec![
            Op::SetRegisters {
                first: regs::GRBM_GFX_INDEX,
                values: vec![regs::GRBM_BROADCAST].into(),
            },
            Op::SetRegisters {
                first: 0x2E0B,
                values: vec![1].into(),
            },
            Op::Event(Event::Barrier),
            Op::Copy {
                source: Source::Register(0xD1C2),
                target: Target::Memory(OUT),
                wide: false,
            },
            Op::Copy {
                source: Source::Register(0x2345),
                target: Target::Memory(OUT),
                wide: false,
            },
            Op::Wait {
                target: Target::Memory(OUT),
                compare: Compare::Equal,
                reference: 7,
                mask: 0xFFFF_FFFF,
            },
        ]
    );
    assert_eq!(program.packets, 11);
    assert_eq!(packet3(opcode::SET_UCONFIG_REG, 1), 0xC001_7900);
    assert_eq!(packet3(opcode::SET_SH_REG, 1), 0xC001_7600);
    assert_eq!(packet3(opcode::COPY_DATA, 4), 0xC004_4000);
    assert_eq!(packet3(opcode::WAIT_REG_MEM, 5), 0xC005_3C00);
    assert_eq!(packet3(opcode::INDIRECT_BUFFER, 2), 0xC002_3F00);
    assert_eq!(packet3(opcode::EVENT_WRITE, 0), 0xC000_4600);
}

#[test]
fn chained_indirect_buffers_are_flattened_in_place() {
    let mut memory = FakeMemory::default();
    let mut level2 = Pm4::new();
    level2.set_uconfig(0xC300, 2);
    memory.map(0x2000_0000, &level2.dwords);
    let mut level1 = Pm4::new();
    level1
        .set_uconfig(0xC300, 1)
        .indirect_buffer(0x2000_0000, level2.dwords.len() as u32)
        .set_uconfig(0xC300, 3);
    memory.map(0x1_0000_0000, &level1.dwords);
    let mut top = Pm4::new();
    top.set_uconfig(0xC300, 0)
        .indirect_buffer(0x1_0000_0000, level1.dwords.len() as u32)
        .set_uconfig(0xC300, 4);
    let program = decode(&top.dwords, FRAME, &memory).unwrap();
    let values: Vec<u32> = program
        .ops
        .iter()
        .map(|op| match op {
            Op::SetRegisters { values, .. } => values[0],
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values, [0, 1, 2, 3, 4]);
    assert_eq!(program.dwords, 10 + 10 + 3);
}

// --------------------------------------------------------------------------- malformed input

#[test]
fn malformed_buffers_are_rejected_with_a_reason() {
    let copy = |control: u32, src: u32, dst_lo: u32, dst_hi: u32| {
        vec![
            packet3(opcode::COPY_DATA, 4),
            control,
            src,
            0,
            dst_lo,
            dst_hi,
        ]
    };
    let ib =
        |lo: u32, hi: u32, control: u32| vec![packet3(opcode::INDIRECT_BUFFER, 2), lo, hi, control];
    let mut memory = FakeMemory::default();
    // A self-referencing chain: IB at 0x1000 calls itself.
    memory.map(0x1000, &ib(0x1000, 0, 4 | (1 << 23)));
    let cases: Vec<(&str, Vec<u32>, &str)> = vec![
        (
            "type-0 header",
            vec![0x0000_1234],
            "type-0 PM4 header 0x00001234",
        ),
        ("type-1 header", vec![0x4000_0000], "type-1 PM4 header"),
        (
            "truncated",
            vec![packet3(opcode::SET_UCONFIG_REG, 1), 0x808],
            "truncated packet: SET_UCONFIG_REG (opcode 0x79) needs 3 dwords, 2 left",
        ),
        (
            "count past the end",
            vec![packet3(opcode::NOP, 100), 0, 0],
            "needs 102 dwords, 3 left",
        ),
        (
            "unknown opcode",
            vec![packet3(0x99, 0), 0],
            "dword 0: opcode 0x99: unsupported opcode 0x99",
        ),
        (
            "SET_UCONFIG without values",
            vec![packet3(opcode::SET_UCONFIG_REG, 0), 0x808],
            "no register values",
        ),
        (
            "SET_UCONFIG past the space",
            vec![packet3(opcode::SET_UCONFIG_REG, 2), 0x3FFF, 1, 2],
            "registers 0xffff..=0x10000 leave the 0xc000..0x10000 space",
        ),
        (
            "SET_SH past the SH space",
            vec![packet3(opcode::SET_SH_REG, 1), 0x400, 1],
            "registers 0x3000..=0x3000 leave the 0x2c00..0x3000 space",
        ),
        (
            "COPY_DATA to an unknown register",
            copy(5, 1, 0x1000, 0),
            "register 0x1000 is outside the CONFIG",
        ),
        (
            "COPY_DATA 64-bit into the gap after CONFIG",
            copy(5 | (1 << 16), 1, 0x9FFF, 0),
            "register 0x9fff is outside",
        ),
        (
            "COPY_DATA from an unknown register",
            copy(2 << 8, 0xA000, 0x100, 0),
            "register 0xa000 is outside",
        ),
        (
            "COPY_DATA to address 0",
            copy(5 | (2 << 8), 1, 3, 0),
            "memory address is 0",
        ),
        (
            "COPY_DATA bad SRC_SEL",
            copy(7 | (2 << 8), 1, 0x100, 0),
            "unsupported SRC_SEL 7",
        ),
        (
            "COPY_DATA bad DST_SEL",
            copy(5 | (3 << 8), 1, 0x100, 0),
            "unsupported DST_SEL 3",
        ),
        (
            "COPY_DATA too short",
            vec![packet3(opcode::COPY_DATA, 3), 5, 0, 0, 0],
            "has 4 body dwords, needs 5",
        ),
        (
            "WRITE_DATA outside",
            vec![packet3(opcode::WRITE_DATA, 3), 0, 0xB000, 0, 1],
            "register 0xb000 is outside",
        ),
        (
            "WRITE_DATA incrementing out of UCONFIG",
            vec![packet3(opcode::WRITE_DATA, 4), 0, 0xFFFF, 0, 1, 2],
            "register 0xffff is outside",
        ),
        (
            "WRITE_DATA to address 0",
            vec![packet3(opcode::WRITE_DATA, 3), 5 << 8, 0, 0, 1],
            "memory address is 0",
        ),
        (
            "WRITE_DATA without data",
            vec![packet3(opcode::WRITE_DATA, 2), 5 << 8, 0x100, 0],
            "carries no data",
        ),
        (
            "WAIT_REG_MEM on address 0",
            vec![
                packet3(opcode::WAIT_REG_MEM, 5),
                3 | (1 << 4),
                0,
                0,
                0,
                0,
                0x10,
            ],
            "memory address is 0",
        ),
        (
            "WAIT_REG_MEM reserved function",
            vec![packet3(opcode::WAIT_REG_MEM, 5), 7, 0xC200, 0, 0, 0, 0x10],
            "FUNCTION 7 is reserved",
        ),
        (
            "WAIT_REG_MEM other operation",
            vec![
                packet3(opcode::WAIT_REG_MEM, 5),
                3 | (1 << 6),
                0xC200,
                0,
                0,
                0,
                0x10,
            ],
            "OPERATION 1",
        ),
        (
            "WAIT_REG_MEM unknown register",
            vec![packet3(opcode::WAIT_REG_MEM, 5), 3, 0x20, 0, 0, 0, 0x10],
            "register 0x20 is outside",
        ),
        (
            "unknown event",
            vec![packet3(opcode::EVENT_WRITE, 0), 0x16],
            "unsupported event type 0x16",
        ),
        (
            "IB at address 0",
            ib(0, 0, 4 | (1 << 23)),
            "IB address is 0",
        ),
        (
            "IB not valid",
            ib(0x1000, 0, 4),
            "VALID (bit 23) is not set",
        ),
        ("IB of size 0", ib(0x1000, 0, 1 << 23), "IB_SIZE is 0"),
        (
            "unreadable IB",
            ib(0x5000, 0, 4 | (1 << 23)),
            "cannot read the IB at 0x5000: unmapped",
        ),
        (
            "IB chain too deep",
            ib(0x1000, 0, 4 | (1 << 23)),
            "chains deeper than 2 levels",
        ),
    ];
    for (name, buffer, needle) in cases {
        let reason = rejected(&buffer, &memory);
        assert!(reason.contains(needle), "{name}: {reason}");
    }
}

#[test]
fn a_rejected_buffer_executes_nothing() {
    let node = NodeGpu::new(&Scenario::default(), 1, 0).unwrap();
    let mut memory = FakeMemory::default();
    let mut pm4 = Pm4::new();
    pm4.set_uconfig(0xC300, 0x55)
        .raw(&[
            packet3(opcode::WRITE_DATA, 3),
            5 << 8,
            OUT as u32,
            (OUT >> 32) as u32,
            1,
        ])
        .raw(&[packet3(0x99, 0), 0]);
    let error = node.pm4(&pm4.dwords, &mut memory).unwrap_err();
    assert!(
        matches!(&error, Pm4Error::Rejected(Reject::Malformed(reason))
            if reason.starts_with("dword 8: opcode 0x99")),
        "{error:?}"
    );
    assert_eq!(node.with_registers(|r| r.read(0xC300)), 0);
    assert!(memory.dwords.is_empty());
    // The same buffer without the bad packet runs.
    let good = &pm4.dwords[..pm4.dwords.len() - 2];
    node.pm4(good, &mut memory).unwrap();
    assert_eq!(node.with_registers(|r| r.read(0xC300)), 0x55);
    assert_eq!(memory.get(OUT), 1);
}

// ---------------------------------------------------------------------------------- the frame

const FOUR: [(Block, u32); 4] = [
    (Block::Grbm, grbm::COUNT),
    (Block::Grbm, grbm::GUI_ACTIVE),
    (Block::Sq, sq::WAVES),
    (Block::Sq, sq::INSTS_VALU),
];

#[test]
fn aqlprofile_four_counter_pass_fits_the_frame() {
    let geometry = Geometry::radeon_890m();
    assert_eq!(geometry.wgp_per_array, 4);
    assert_eq!(geometry.sq_instances(), 8);
    let counters = counters(&FOUR);
    let start = pmc_start(&counters);
    let read = pmc_read(&counters, &geometry, OUT);
    let stop = pmc_stop();
    // 2 GRBM counters x 18 dwords, 2 SQ counters x (3 + 8 x 9) dwords, plus framing.
    assert_eq!(start.dwords.len(), 55);
    assert_eq!(read.dwords.len(), 205);
    assert_eq!(stop.dwords.len(), 8);
    for buffer in [&start, &read, &stop] {
        let program = decoded(&buffer.dwords);
        assert!(program.dwords <= u64::from(FRAME));
    }
    // Every SQ sample is one GRBM_GFX_INDEX write and one COPY_DATA.
    let program = decoded(&read.dwords);
    let copies = program
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Copy { .. }))
        .count();
    assert_eq!(copies, 2 * 2 + 2 * 8);
}

#[test]
fn eight_sq_counters_overflow_the_frame() {
    let geometry = Geometry::radeon_890m();
    let requests: Vec<(Block, u32)> = (0..8)
        .map(|i| (Block::Sq, [4, 5, 6, 7, 24, 58, 62, 2][i]))
        .collect();
    let counters = counters(&requests);
    let start = pmc_start(&counters);
    assert!(
        decoded(&start.dwords).dwords <= u64::from(FRAME),
        "start still fits"
    );
    let read = pmc_read(&counters, &geometry, OUT);
    assert_eq!(read.dwords.len(), 619);
    let reason = rejected(&read.dwords, &FakeMemory::default());
    assert_eq!(
        reason,
        "PM4 command buffer overflow: 619 dwords exceed the 512-dword frame"
    );
    // Six SQ counters (469 dwords) still fit, seven (544) do not: each SQ counter takes
    // 3 + 8 x 9 = 75 dwords, plus the same framing as the 8-counter read above.
    let framing = 619 - 8 * 75;
    for (n, dwords, fits) in [(6, 469, true), (7, 544, false)] {
        let read = pmc_read(&counters[..n], &geometry, OUT);
        assert_eq!(read.dwords.len(), dwords, "{n} SQ counters");
        assert_eq!(dwords, n * 75 + framing, "{n} SQ counters");
        assert_eq!(
            decode(&read.dwords, FRAME, &FakeMemory::default()).is_ok(),
            fits,
            "{n} SQ counters: {} dwords",
            read.dwords.len()
        );
    }
}

#[test]
fn chained_ibs_count_against_the_frame_before_they_are_read() {
    let mut memory = FakeMemory::default();
    let mut big = Pm4::new();
    big.nop(500);
    memory.map(0x4000, &big.dwords);
    let mut top = Pm4::new();
    top.nop(10).indirect_buffer(0x4000, 500);
    assert_eq!(
        rejected(&top.dwords, &memory),
        "PM4 command buffer overflow: 514 dwords exceed the 512-dword frame"
    );
    // An IB claiming a huge size is refused without reading it (it is not even mapped).
    let mut top = Pm4::new();
    top.indirect_buffer(0x9000, 0xF_FFFF);
    assert_eq!(
        rejected(&top.dwords, &memory),
        "PM4 command buffer overflow: 1048579 dwords exceed the 512-dword frame"
    );
    // Within the frame it is fine.
    let mut top = Pm4::new();
    top.nop(8).indirect_buffer(0x4000, 500);
    assert_eq!(decode(&top.dwords, FRAME, &memory).unwrap().dwords, 512);
    // A top-level buffer alone over the frame.
    let mut huge = Pm4::new();
    huge.nop(600);
    assert_eq!(
        rejected(&huge.dwords, &memory),
        "PM4 command buffer overflow: 600 dwords exceed the 512-dword frame"
    );
}

// --------------------------------------------------------------------------------- execution

#[test]
fn copy_write_and_clock_semantics() {
    let mut memory = FakeMemory::default();
    let mut registers = registers();
    let mut pm4 = Pm4::new();
    pm4.op(&Op::Copy {
        source: Source::Immediate(0x1111_2222_3333_4444),
        target: Target::Memory(OUT),
        wide: true,
    })
    .op(&Op::Copy {
        source: Source::GpuClock,
        target: Target::Memory(OUT + 8),
        wide: true,
    })
    .op(&Op::Copy {
        source: Source::Immediate(0xAAAA_BBBB_CCCC_DDDD),
        target: Target::Register(0xC400),
        wide: true,
    })
    .op(&Op::Copy {
        source: Source::Register(0xC400),
        target: Target::Memory(OUT + 16),
        wide: true,
    })
    .op(&Op::Write {
        target: Target::Memory(OUT + 32),
        increment: true,
        data: vec![7, 8, 9].into(),
    })
    .op(&Op::Write {
        target: Target::Memory(OUT + 48),
        increment: false,
        data: vec![1, 2, 3].into(),
    })
    .op(&Op::Copy {
        source: Source::Memory(OUT + 36),
        target: Target::Memory(OUT + 52),
        wide: false,
    })
    // More dwords than an op holds in place.
    .op(&Op::Write {
        target: Target::Memory(OUT + 64),
        increment: true,
        data: vec![11, 12, 13, 14, 15, 16].into(),
    });
    run(&pm4.dwords, &mut memory, &mut registers);
    assert_eq!(
        [0, 4, 8, 12, 16, 20].map(|k| memory.get(OUT + 64 + k)),
        [11, 12, 13, 14, 15, 16]
    );
    assert_eq!(memory.get(OUT), 0x3333_4444);
    assert_eq!(memory.get(OUT + 4), 0x1111_2222);
    assert_eq!(memory.get(OUT + 8), 0x0000_1234);
    assert_eq!(memory.get(OUT + 12), 0xABCD);
    assert_eq!(registers.read(0xC400), 0xCCCC_DDDD);
    assert_eq!(registers.read(0xC401), 0xAAAA_BBBB);
    assert_eq!(
        (memory.get(OUT + 16), memory.get(OUT + 20)),
        (0xCCCC_DDDD, 0xAAAA_BBBB)
    );
    assert_eq!(
        [OUT + 32, OUT + 36, OUT + 40].map(|a| memory.get(a)),
        [7, 8, 9]
    );
    assert_eq!(memory.get(OUT + 48), 3, "ADDR_INCR=1 writes one address");
    assert_eq!(memory.get(OUT + 52), 8);
}

#[test]
fn perfcounter_events_drive_the_perfmon_state() {
    let mut memory = FakeMemory::default();
    let mut registers = registers();
    let mut pm4 = Pm4::new();
    pm4.set_sh(regs::COMPUTE_PERFCOUNT_ENABLE, 1)
        .event(pm4::event::PERFCOUNTER_START);
    run(&pm4.dwords, &mut memory, &mut registers);
    assert!(registers.perf.counting());
    assert_eq!(registers.read(regs::CP_PERFMON_CNTL) & 0xF, 1);
    let mut pm4 = Pm4::new();
    pm4.event(pm4::event::PERFCOUNTER_SAMPLE)
        .event(pm4::event::PERFCOUNTER_STOP);
    run(&pm4.dwords, &mut memory, &mut registers);
    assert!(!registers.perf.counting());
    assert_eq!(registers.perf.state(), 2);
}

#[test]
fn wait_reg_mem_polls_until_the_condition_holds_or_times_out() {
    // Register space: the value never changes while the CP waits, so a false condition times
    // out, a true one passes at once.
    let mut registers = registers();
    let mut memory = FakeMemory::default();
    let mut pass = Pm4::new();
    pass.set_uconfig(0xC300, 0x1234)
        .wait_reg_mem(false, 0xC300, true, 0xFF00, 0x1200);
    run(&pass.dwords, &mut memory, &mut registers);

    let mut fail = Pm4::new();
    fail.wait_reg_mem(false, 0xC300, false, 0xFFFF, 0x1234);
    let program = decoded(&fail.dwords);
    let (ticks, timeout) = context(20);
    let context = Context {
        ticks: &ticks,
        wait_timeout: timeout,
    };
    let started = std::time::Instant::now();
    let failure = execute(&program, &mut registers, &mut memory, &context).unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(20));
    assert_eq!(
        failure,
        Failure::Timeout(
            "WAIT_REG_MEM on register 0xc300 timed out after 20 ms: 0x1234 & 0xffff NotEqual \
             0x1234 never held"
                .into()
        )
    );
}

#[test]
fn wait_reg_mem_sees_host_stores_from_another_thread() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let node = NodeGpu::new(&Scenario::default(), 1, 0).unwrap();
    let flag = Box::new(AtomicU32::new(0));
    let address = &*flag as *const AtomicU32 as u64;
    let mut pm4 = Pm4::new();
    pm4.wait_reg_mem(true, address, true, 0xFFFF_FFFF, 42)
        .set_uconfig(0xC300, 1);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            flag.store(42, Ordering::Release);
        });
        // SAFETY: the only address the buffer names is `flag`, alive for the whole scope.
        let mut memory = unsafe { pm4::HostMemory::new() };
        node.pm4(&pm4.dwords, &mut memory).unwrap();
    });
    assert_eq!(node.with_registers(|r| r.read(0xC300)), 1);
}

// ------------------------------------------------------------------------- random buffers

/// Dwords biased towards meaningful headers so the fuzzer reaches deep into the decoder.
fn dword() -> impl Strategy<Value = u32> {
    let opcodes = prop::sample::select(vec![
        opcode::NOP,
        opcode::WRITE_DATA,
        opcode::WAIT_REG_MEM,
        opcode::INDIRECT_BUFFER,
        opcode::COPY_DATA,
        opcode::EVENT_WRITE,
        opcode::ACQUIRE_MEM,
        opcode::SET_SH_REG,
        opcode::SET_UCONFIG_REG,
        0x99,
    ]);
    prop_oneof![
        4 => any::<u32>(),
        4 => (opcodes, 0_u32..8).prop_map(|(op, count)| packet3(op, count)),
        1 => Just(pm4::TYPE2_FILLER),
        1 => Just(0xC03F_FF00),
        2 => 0xC000_u32..0xC400,
        2 => 0_u32..0x800,
        1 => Just(OUT as u32),
        // COPY_DATA / WRITE_DATA / WAIT_REG_MEM control words.
        2 => (0_u32..16, 0_u32..16, any::<bool>())
            .prop_map(|(src, dst, wide)| src | (dst << 8) | (u32::from(wide) << 16)),
        1 => (0_u32..8, 0_u32..4).prop_map(|(function, space)| function | (space << 4)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_buffers_never_panic(buffer in prop::collection::vec(dword(), 0..160)) {
        let mut memory = FakeMemory::default();
        // Some IBs exist, some do not.
        memory.map(OUT & !0xFFFF, &buffer);
        let mut registers = registers();
        match decode(&buffer, 128, &memory) {
            Err(reject) => prop_assert!(!reject.to_string().is_empty()),
            Ok(program) => {
                prop_assert!(program.dwords <= 128);
                let (ticks, _) = context(0);
                let context = Context { ticks: &ticks, wait_timeout: Duration::ZERO };
                match execute(&program, &mut registers, &mut memory, &context) {
                    Ok(()) | Err(Failure::Timeout(_)) => {}
                    Err(other) => prop_assert!(false, "{other:?}"),
                }
            }
        }
    }

    #[test]
    fn encoded_ops_decode_back(ops in prop::collection::vec(op(), 1..12)) {
        let mut pm4 = Pm4::new();
        for op in &ops {
            pm4.op(op);
        }
        let program = decode(&pm4.dwords, 4096, &FakeMemory::default()).unwrap();
        prop_assert_eq!(program.ops, ops);
    }
}

fn register() -> impl Strategy<Value = u32> {
    prop_oneof![0x2000_u32..0x9FFF, 0xC000_u32..0xFFFF]
}

fn address() -> impl Strategy<Value = u64> {
    (1_u64..(1 << 46)).prop_map(|a| a << 2)
}

fn op() -> impl Strategy<Value = Op> {
    let target = prop_oneof![
        register().prop_map(Target::Register),
        address().prop_map(Target::Memory),
    ];
    let source = prop_oneof![
        register().prop_map(Source::Register),
        address().prop_map(Source::Memory),
        any::<u32>().prop_map(|v| Source::Immediate(u64::from(v))),
        Just(Source::GpuClock),
        Just(Source::SystemClock),
    ];
    let compare = prop::sample::select(vec![
        Compare::Always,
        Compare::Less,
        Compare::LessEqual,
        Compare::Equal,
        Compare::NotEqual,
        Compare::GreaterEqual,
        Compare::Greater,
    ]);
    let event = prop::sample::select(vec![
        Event::Barrier,
        Event::PerfStart,
        Event::PerfStop,
        Event::PerfSample,
    ]);
    prop_oneof![
        (
            0xC000_u32..0xFF00,
            prop::collection::vec(any::<u32>(), 1..8)
        )
            .prop_map(|(first, values)| Op::SetRegisters {
                first,
                values: values.into()
            }),
        (
            0x2C00_u32..0x2FF0,
            prop::collection::vec(any::<u32>(), 1..8)
        )
            .prop_map(|(first, values)| Op::SetRegisters {
                first,
                values: values.into()
            }),
        (source, target.clone()).prop_map(|(source, target)| Op::Copy {
            source,
            target,
            wide: false
        }),
        (
            target.clone(),
            any::<bool>(),
            prop::collection::vec(any::<u32>(), 1..4)
        )
            .prop_map(|(target, increment, data)| {
                let increment = increment && matches!(target, Target::Memory(_));
                Op::Write {
                    target,
                    increment,
                    data: data.into(),
                }
            }),
        (target, compare, any::<u32>(), any::<u32>()).prop_map(
            |(target, compare, reference, mask)| Op::Wait {
                target,
                compare,
                reference,
                mask
            }
        ),
        event.prop_map(Op::Event),
    ]
}

#[test]
fn builder_counter_slots_follow_request_order() {
    let counters = counters(&FOUR);
    let slots: Vec<u32> = counters.iter().map(|c| c.slot).collect();
    assert_eq!(slots, [0, 1, 0, 1]);
    assert_eq!(builder::gfx_index(0, 1, 3), 0x0000_010C);
}

// ------------------------------------------------------------------------------ decode cache

#[test]
fn a_buffer_submitted_again_is_decoded_once_and_means_the_same() {
    let memory = FakeMemory::default();
    let mut cache = pm4::DecodeCache::default();
    let mut pm4 = Pm4::new();
    pm4.set_uconfig(regs::GRBM_GFX_INDEX, regs::GRBM_BROADCAST)
        .copy_reg_to_memory(regs::GRBM_PERFCOUNTER_LO[0], OUT);
    let buffer = pm4.dwords.clone();
    let first = cache.decode(&buffer, FRAME, &memory).unwrap();
    let again = cache.decode(&buffer, FRAME, &memory).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again), "the kept program");
    assert_eq!(*first, decoded(&buffer));
    assert_eq!(cache.len(), 1);
}

#[test]
fn a_buffer_rewritten_in_place_is_decoded_anew() {
    let memory = FakeMemory::default();
    let mut cache = pm4::DecodeCache::default();
    let mut buffer = Pm4::new().set_uconfig(0xC400, 1).dwords.clone();
    let before = cache.decode(&buffer, FRAME, &memory).unwrap();
    // Same address and length, another value: the new dwords' meaning.
    buffer[2] = 2;
    let after = cache.decode(&buffer, FRAME, &memory).unwrap();
    assert_ne!(*before, *after);
    assert_eq!(*after, decoded(&buffer));
    // Turned malformed in place: rejected as decode rejects it.
    buffer[0] = 0x0000_1234;
    let reject = cache.decode(&buffer, FRAME, &memory).unwrap_err();
    assert_eq!(Err(reject), decode(&buffer, FRAME, &memory));
}

#[test]
fn a_program_that_chains_an_ib_is_never_kept() {
    let mut memory = FakeMemory::default();
    let mut cache = pm4::DecodeCache::default();
    memory.map(0x1000, &Pm4::new().set_uconfig(0xC400, 1).dwords);
    let buffer = Pm4::new().indirect_buffer(0x1000, 3).dwords.clone();
    let first = cache.decode(&buffer, FRAME, &memory).unwrap();
    assert_eq!(first.chained_ibs, 1);
    assert!(
        cache.is_empty(),
        "its meaning depends on memory it does not hold"
    );
    // The chained IB changes behind the unchanged buffer: the change is seen.
    memory.map(0x1000, &Pm4::new().set_uconfig(0xC400, 7).dwords);
    let second = cache.decode(&buffer, FRAME, &memory).unwrap();
    assert_ne!(*first, *second);
}

#[test]
fn the_cache_stays_within_its_capacity_giving_up_the_oldest() {
    let memory = FakeMemory::default();
    let mut cache = pm4::DecodeCache::default();
    let buffers: Vec<Vec<u32>> = (0..pm4::DecodeCache::CAPACITY as u32 + 10)
        .map(|k| Pm4::new().set_uconfig(0xC400, k).dwords.clone())
        .collect();
    let programs: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(k, buffer)| {
            let program = cache.decode(buffer, FRAME, &memory).unwrap();
            assert_eq!(*program, decoded(buffer), "buffer {k}");
            assert!(cache.len() <= pm4::DecodeCache::CAPACITY);
            program
        })
        .collect();
    assert_eq!(cache.len(), pm4::DecodeCache::CAPACITY);
    let again = |k: usize, cache: &mut pm4::DecodeCache| {
        let program = cache.decode(&buffers[k], FRAME, &memory).unwrap();
        std::sync::Arc::ptr_eq(&program, &programs[k])
    };
    // The newest are still held, the oldest were given up (and come back decoded anew).
    assert!(again(buffers.len() - 1, &mut cache));
    assert!(!again(0, &mut cache));
}
