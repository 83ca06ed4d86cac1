//! The gfx11 register facts the model follows (verified-facts §1): field widths of
//! GRBM_GFX_INDEX and the PERF_SEL fields, COPY_DATA's select for UCONFIG counter registers,
//! CP_PERFMON_CNTL's read value, what the read writes of an SQ slot, and the frame against
//! the largest pass a frame-aware planner makes.

use std::time::Duration;

use super::builder::{self, Block, Pm4, counters, pmc_read, pmc_start, pmc_stop};
use super::{FakeMemory, clean};
use crate::gpu::cost::{DispatchCost, Kernel};
use crate::gpu::counters::{Geometry, PerfBlock, Session, grbm, sq};
use crate::gpu::pm4::{Context, decode, execute, opcode, packet3};
use crate::gpu::regs::{self, GfxIndex, RegisterFile};

const FRAME: u32 = 512;
const OUT: u64 = 0x7000_0000_1000;

fn clean_registers() -> RegisterFile {
    RegisterFile::new(PerfBlock::new(
        Geometry::radeon_890m(),
        Session::new(&clean(), 3, 1),
    ))
}

fn run(buffer: &[u32], memory: &mut FakeMemory, registers: &mut RegisterFile) {
    let program = decode(buffer, FRAME, memory).unwrap_or_else(|e| panic!("{e}"));
    let ticks = || 0_u64;
    let context = Context {
        ticks: &ticks,
        wait_timeout: Duration::from_millis(10),
    };
    execute(&program, registers, memory, &context).unwrap();
}

/// Start, one 8 192-wave dispatch, read, stop: the modelled counts in `memory` at OUT.
fn profile(requests: &[(Block, u32)], memory: &mut FakeMemory) -> RegisterFile {
    let geometry = Geometry::radeon_890m();
    let counters = counters(requests);
    let mut registers = clean_registers();
    run(&pmc_start(&counters).dwords, memory, &mut registers);
    let cost = DispatchCost::of(
        &Kernel::linear(262_144, 256),
        &geometry,
        &wslsim_scenario::Gpu::default(),
    );
    registers
        .perf
        .count_dispatch(0, cost.duration_ns, &cost.activity);
    run(
        &pmc_read(&counters, &geometry, OUT).dwords,
        memory,
        &mut registers,
    );
    run(&pmc_stop().dwords, memory, &mut registers);
    registers
}

#[test]
fn grbm_gfx_index_instance_is_seven_bits() {
    assert_eq!(
        GfxIndex::decode(0x0001_010C),
        GfxIndex {
            se: Some(1),
            sa: Some(1),
            instance: Some(0xC)
        }
    );
    // Bit 7 belongs to no field in GC 11.5: 0x84 is instance 4 (WGP 1), not 0x84.
    assert_eq!(GfxIndex::decode(0x84).instance, Some(4));
    assert_eq!(
        GfxIndex::decode(regs::GRBM_BROADCAST),
        GfxIndex {
            se: None,
            sa: None,
            instance: None
        }
    );
    // Through the register file: WGP 1 of SA 0 read with and without bit 7.
    let mut memory = FakeMemory::default();
    let mut registers = profile(&[(Block::Sq, sq::WAVES)], &mut memory);
    registers.write(regs::GRBM_GFX_INDEX, 0x4);
    let wgp1 = registers.read(regs::SQ_PERFCOUNTER0_LO);
    assert_eq!(wgp1, 1_024);
    registers.write(regs::GRBM_GFX_INDEX, 0x84);
    assert_eq!(registers.read(regs::SQ_PERFCOUNTER0_LO), wgp1);
}

#[test]
fn the_890m_read_walks_the_verified_indices() {
    let geometry = Geometry::radeon_890m();
    assert_eq!(builder::wgp_per_sa(&geometry), 4);
    assert_eq!(builder::sq_samples(&geometry), 8);
    let read = pmc_read(&counters(&[(Block::Sq, sq::WAVES)]), &geometry, OUT);
    let indices: Vec<u32> = read
        .dwords
        .windows(3)
        .filter(|w| w[0] == packet3(opcode::SET_UCONFIG_REG, 1) && w[1] == 0x200)
        .map(|w| w[2])
        .filter(|&v| v != regs::GRBM_BROADCAST)
        .collect();
    assert_eq!(indices, [0x0, 0x4, 0x8, 0xC, 0x100, 0x104, 0x108, 0x10C]);
}

#[test]
fn perf_sel_is_nine_bits_on_sq_and_six_on_grbm() {
    // Bit 9 is outside SQ PERF_SEL [8:0]: 0x204 programs SQ_WAVES (4). Bit 8 is inside it:
    // 0x104 (260) is another event, which the model does not count (an 8-bit field would
    // have made it SQ_WAVES). GRBM PERF_SEL is [5:0]: 0x42 is GRBM_GUI_ACTIVE.
    let mut memory = FakeMemory::default();
    profile(
        &[
            (Block::Sq, 0x204),
            (Block::Sq, 0x104),
            (Block::Grbm, 0x40 | grbm::GUI_ACTIVE),
        ],
        &mut memory,
    );
    let slot = |i: u64| memory.get(OUT + 8 * i);
    let waves: u32 = (0..8).map(slot).sum();
    let other: u32 = (8..16).map(slot).sum();
    assert_eq!((waves, other), (8_192, 0));
    assert_eq!(slot(16), 216_401, "GUI_ACTIVE: the dispatch's cycles");
}

#[test]
fn copy_data_perfcounter_select_reaches_config_registers_only() {
    let copy = |control: u32, register: u32| {
        vec![
            packet3(opcode::COPY_DATA, 4),
            control,
            register,
            0,
            OUT as u32,
            (OUT >> 32) as u32,
        ]
    };
    let memory = FakeMemory::default();
    // SQ_PERFCOUNTER0_LO is UCONFIG: SRC_SEL 0 reads it, SRC_SEL 4 is refused.
    assert!(decode(&copy(0x200, regs::SQ_PERFCOUNTER0_LO), FRAME, &memory).is_ok());
    let reason = decode(&copy(0x204, regs::SQ_PERFCOUNTER0_LO), FRAME, &memory)
        .unwrap_err()
        .to_string();
    assert_eq!(
        reason,
        "dword 0: COPY_DATA: SRC_SEL 4 (perfcounters) reaches the CONFIG space \
         (0x2000..0xa000) only; register 0xd1c0 is UCONFIG: use SRC_SEL 0"
    );
    for register in regs::GRBM_PERFCOUNTER_LO
        .into_iter()
        .chain(regs::GRBM_PERFCOUNTER_HI)
    {
        assert!(decode(&copy(0x204, register), FRAME, &memory).is_err());
    }
    // A privileged CONFIG register may be read through select 4.
    assert!(decode(&copy(0x204, 0x2345), FRAME, &memory).is_ok());
    // The same rule for DST_SEL 4: writing UCONFIG through it is refused.
    let to_register = vec![packet3(opcode::COPY_DATA, 4), 5 | (4 << 8), 1, 0, 0xC300, 0];
    assert!(
        decode(&to_register, FRAME, &memory)
            .unwrap_err()
            .to_string()
            .contains("DST_SEL 4 (perfcounters)")
    );
}

#[test]
fn cp_perfmon_cntl_reads_back_the_sample_value() {
    let mut registers = clean_registers();
    registers.write(regs::COMPUTE_PERFCOUNT_ENABLE, 1);
    registers.write(regs::CP_PERFMON_CNTL, builder::PERFMON_READ);
    assert_eq!(registers.read(regs::CP_PERFMON_CNTL), 0x401);
    assert!(
        registers.perf.counting(),
        "0x401 is START_COUNTING | SAMPLE_ENABLE"
    );
}

#[test]
fn the_read_writes_only_the_low_half_of_an_sq_slot() {
    let mut memory = FakeMemory::default();
    // Canaries in every upper half; the GRBM slot (16) gets both halves written.
    for slot in 0..17 {
        memory.dwords.insert(OUT + 8 * slot + 4, 0xA5A5_A5A5);
    }
    profile(
        &[
            (Block::Sq, sq::WAVES),
            (Block::Sq, sq::WAVE_CYCLES),
            (Block::Grbm, grbm::COUNT),
        ],
        &mut memory,
    );
    for slot in 0..16 {
        assert_eq!(
            memory.get(OUT + 8 * slot + 4),
            0xA5A5_A5A5,
            "SQ slot {slot}"
        );
        assert_ne!(memory.get(OUT + 8 * slot), 0, "SQ slot {slot}");
    }
    assert_eq!(memory.get(OUT + 8 * 16 + 4), 0, "GRBM HI is written");
}

#[test]
fn the_largest_pass_under_the_frame_fits_and_one_more_sq_counter_does_not() {
    // With a 512-dword frame the 890M holds 6 SQ + 2 GRBM per pass (read 505 dwords); the
    // slot-legal maximum, 8 SQ + 2 GRBM (655), overflows (see eight_sq_counters_overflow_the_frame).
    let geometry = Geometry::radeon_890m();
    let mut requests: Vec<(Block, u32)> = [4, 5, 6, 7, 24, 58]
        .into_iter()
        .map(|event| (Block::Sq, event))
        .collect();
    requests.extend([(Block::Grbm, grbm::COUNT), (Block::Grbm, grbm::GUI_ACTIVE)]);
    let read = pmc_read(&counters(&requests), &geometry, OUT);
    assert_eq!(read.dwords.len(), 505);
    assert!(decode(&read.dwords, FRAME, &FakeMemory::default()).is_ok());
    // Chained behind the 4-dword INDIRECT_BUFFER of a PM4-IB packet it still fits (509).
    let mut memory = FakeMemory::default();
    memory.map(0x4000, &read.dwords);
    let mut top = Pm4::new();
    top.indirect_buffer(0x4000, 505);
    assert_eq!(decode(&top.dwords, FRAME, &memory).unwrap().dwords, 509);
    requests.insert(0, (Block::Sq, sq::CYCLES));
    let read = pmc_read(&counters(&requests), &geometry, OUT);
    assert_eq!(read.dwords.len(), 580);
    assert!(decode(&read.dwords, FRAME, &FakeMemory::default()).is_err());
}
