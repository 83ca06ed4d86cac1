//! Both halves of the crate together, without the simulator: derived counters resolved for an
//! agent, their base counters planned and built into passes, each read buffer *executed* here
//! by a small interpreter (the index register and the COPY_DATA sources decide which modelled
//! value lands in which slot, so nothing of the builder's own sample table is trusted), the
//! output decoded, and [`readback::evaluate`] giving the derived values, checked against
//! arithmetic written out here.

use std::collections::HashMap;

use pmc_dxg::defs::{AgentCounters, Definitions};
use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, plan};
use pmc_dxg::pm4::{CounterValues, PassBuffers, build_pass, decode};
use pmc_dxg::{BaseEvent, Block, Error, Topology, readback};
use wslsim_scenario::GpuNode;

mod common;
use common::agent_from;

const BASE: u64 = 0x7F00_0010_0000;
const OUT: u64 = 0x7F00_0020_0040;

/// What the fake GPU counts: an event of a block at (se, sa, wgp).
type Model = dyn Fn(Block, u32, (u32, u32, u32)) -> u64;

/// Runs `buffers.read` against `model` as the command processor would: SET_UCONFIG_REG of
/// GRBM_GFX_INDEX selects the instance, COPY_DATA copies 32 bits of a counter register to
/// memory. Which event a register counts comes from the SELECT writes of `buffers.start`. The
/// upper halves of SQ slots are left as garbage, as an unzeroed buffer would have them.
fn execute(buffers: &PassBuffers, model: &Model) -> Vec<u8> {
    let mut output = vec![0xA5_u8; buffers.output_bytes];
    for slot in output.chunks_mut(8) {
        slot[..4].fill(0);
    }
    let mut selects: HashMap<u32, u32> = HashMap::new();
    let mut at = 0;
    while at < buffers.start.len() {
        let (header, body) = (buffers.start[at], &buffers.start[at + 1..]);
        if header == 0xC001_7900 {
            selects.insert(0xC000 + body[0], body[1]);
        }
        at += ((header >> 16) & 0x3FFF) as usize + 2;
    }
    let mut index = 0xE000_0000_u32;
    let mut at = 0;
    while at < buffers.read.len() {
        let (header, body) = (buffers.read[at], &buffers.read[at + 1..]);
        match header {
            0xC001_7900 if body[0] == 0x200 => index = body[1],
            0xC004_4000 => {
                let register = body[1];
                let address = u64::from(body[3]) | (u64::from(body[4]) << 32);
                let (block, event, half) = match register {
                    // SQ_PERFCOUNTERk_LO, counting what SQ_PERFCOUNTER(2k)_SELECT selected.
                    0xD1C0..=0xD1CE => (Block::Sq, selects[&(0xD9C0 + (register - 0xD1C0))], 0),
                    0xD040 => (Block::Grbm, selects[&0xD840], 0),
                    0xD041 => (Block::Grbm, selects[&0xD840], 1),
                    0xD043 => (Block::Grbm, selects[&0xD841], 0),
                    0xD044 => (Block::Grbm, selects[&0xD841], 1),
                    other => panic!("COPY_DATA from {other:#x}"),
                };
                let instance = if index == 0xE000_0000 {
                    (0, 0, 0)
                } else {
                    (
                        (index >> 16) & 0xFF,
                        (index >> 8) & 0xFF,
                        (index & 0x7F) >> 2,
                    )
                };
                let value = model(block, event, instance);
                let word = (value >> (32 * half)) as u32;
                let offset = (address - OUT) as usize;
                output[offset..offset + 4].copy_from_slice(&word.to_le_bytes());
            }
            _ => {}
        }
        at += ((header >> 16) & 0x3FFF) as usize + 2;
    }
    output
}

/// Plans the base counters of `names`, builds, executes and decodes every pass, and evaluates
/// `names` from the read-back; their values in order.
fn measure(
    ac: &AgentCounters,
    topology: &Topology,
    names: &[&str],
    model: &Model,
) -> Vec<Vec<f64>> {
    let mut base: Vec<(String, BaseEvent)> = Vec::new();
    for name in names {
        base.extend(ac.expand(name).unwrap());
    }
    let passes = plan(topology, &base, Packing::Split, Some(DXG_FRAME_DWORDS)).unwrap();
    let mut decoded: Vec<CounterValues> = Vec::new();
    for pass in &passes {
        let buffers = build_pass(topology, &pass.counters, BASE, OUT).unwrap();
        decoded.extend(decode(&buffers, &execute(&buffers, model)).unwrap());
    }
    let program = ac.prepare(names).unwrap();
    let mut evaluator = program.evaluator();
    readback::evaluate(&mut evaluator, &decoded).unwrap();
    evaluator.values().map(|(_, v)| v.to_vec()).collect()
}

#[test]
fn derived_counters_of_the_890m_from_an_executed_read_back() {
    let agent = agent_from(&GpuNode::radeon_890m(), "gfx1150");
    let topology = Topology::of(&agent).unwrap();
    let ac = Definitions::built_in().unwrap().for_agent(&agent);
    // Sample i = the read's i-th SQ instance (SA-major, WGP minor on one SE).
    let model = |block: Block, event: u32, (se, sa, wgp): (u32, u32, u32)| -> u64 {
        let i = u64::from((se * 2 + sa) * 4 + wgp);
        match (block, event) {
            (Block::Sq, 4) => 100 + i,                 // SQ_WAVES
            (Block::Sq, 24) => 4_000 * (i + 1),        // SQ_WAVE_CYCLES
            (Block::Sq, 3) => 1_000 + 10 * i,          // SQ_BUSY_CYCLES
            (Block::Sq, 62) => 10 * (100 + i) + i % 2, // SQ_INSTS_VALU
            (Block::Grbm, 0) => (1 << 33) + 5,         // GRBM_COUNT, past 32 bits
            (Block::Grbm, 2) => 1 << 32,               // GRBM_GUI_ACTIVE
            other => panic!("{other:?} was not asked for"),
        }
    };
    let names = [
        "Wavefronts",
        "GPU_UTIL",
        "MeanOccupancyPerActiveCU",
        "OccupancyPercent",
        "VALUInsts",
        "SQ_WAVES",
        "CU_NUM",
        "simd_count",
    ];
    let got = measure(&ac, &topology, &names, &model);
    let waves: f64 = (0..8).map(|i| 100.0 + f64::from(i)).sum();
    let wave_cycles: f64 = (0..8).map(|i| 4_000.0 * f64::from(i + 1)).sum();
    let busy: f64 = (0..8).map(|i| 1_000.0 + 10.0 * f64::from(i)).sum();
    let valu: f64 = (0..8).map(|i| f64::from(10 * (100 + i) + i % 2)).sum();
    let (count, active) = (f64::from(1 << 30) * 8.0 + 5.0, f64::from(1 << 30) * 4.0);
    assert_eq!(
        got,
        [
            vec![waves],
            vec![100.0 * active / count],
            vec![wave_cycles / busy],
            vec![100.0 * wave_cycles / active / 16.0 / 32.0],
            vec![valu / waves],
            (0..8).map(|i| 100.0 + f64::from(i)).collect(),
            vec![16.0],
            vec![32.0],
        ]
    );
    assert_eq!(got[0], [828.0]);
}

const BY_DIMENSION: &str = r#"
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: SQ_WAVES
    description: waves
    properties: []
    definitions:
    - architectures: [gfx11]
      block: SQ
      event: 4
  - name: GRBM_COUNT
    description: cycles
    properties: []
    definitions:
    - architectures: [gfx11]
      block: GRBM
      event: 0
  - name: PER_ARRAY
    description: waves per (shader array, shader engine)
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(SQ_WAVES,sum,[DIMENSION_WGP])
  - name: PER_WGP
    description: waves per WGP position, over every array
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(SQ_WAVES,sum,[DIMENSION_SHADER_ARRAY,DIMENSION_SHADER_ENGINE])
  - name: ENGINE_1
    description: the second engine's values
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: select(SQ_WAVES,[DIMENSION_SHADER_ENGINE=[1]])
  - name: LAST_WGP_MAX
    description: the largest count among the last WGPs of the arrays
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(select(SQ_WAVES,[DIMENSION_WGP=[5]]),max)
  - name: PER_CYCLE
    description: each instance's waves over the cycles
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: 1000*SQ_WAVES/GRBM_COUNT
  - name: LEVEL
    description: an accumulated counter
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(accumulate(SQ_WAVES,HIGH_RES),sum)
"#;

/// Two engines of *one* reported shader array each, 24 CUs: aqlprofile's wgp_per_sa is
/// (12 + 2 − 1) / 2 = 6 and its read still walks two arrays per engine, 24 samples.
fn two_engines_one_array() -> GpuNode {
    let mut node = GpuNode::radeon_890m();
    node.simd_count = 48;
    node.shader_engines = 2;
    node.arrays_per_engine = 1;
    node
}

/// [`BY_DIMENSION`] resolved for [`two_engines_one_array`], and its topology.
fn by_dimension() -> (Topology, AgentCounters) {
    let agent = agent_from(&two_engines_one_array(), "gfx1100");
    let ac = Definitions::parse("by dimension", BY_DIMENSION)
        .unwrap()
        .for_agent(&agent);
    (Topology::of(&agent).unwrap(), ac)
}

#[test]
fn reductions_and_selections_see_each_instance_where_the_read_put_it() {
    let (topology, ac) = by_dimension();
    assert_eq!(
        ac.get("SQ_WAVES").unwrap().dimensions.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:5] DIMENSION_SHADER_ARRAY[0:1] \
         DIMENSION_SHADER_ENGINE[0:1]"
    );
    let waves = |se: u32, sa: u32, wgp: u32| f64::from(1_000 * se + 100 * sa + wgp);
    let model = move |block: Block, _: u32, (se, sa, wgp): (u32, u32, u32)| -> u64 {
        match block {
            Block::Sq => waves(se, sa, wgp) as u64,
            _ => 4_000,
        }
    };
    let got = measure(
        &ac,
        &topology,
        &[
            "PER_ARRAY",
            "PER_WGP",
            "ENGINE_1",
            "LAST_WGP_MAX",
            "PER_CYCLE",
        ],
        &model,
    );
    // PER_ARRAY: shader array fastest, then engine.
    let per_array: Vec<f64> = [(0, 0), (0, 1), (1, 0), (1, 1)]
        .iter()
        .map(|&(se, sa)| (0..6).map(|w| waves(se, sa, w)).sum())
        .collect();
    assert_eq!(got[0], per_array);
    assert_eq!(got[0], [15.0, 615.0, 6015.0, 6615.0]);
    let per_wgp: Vec<f64> = (0..6)
        .map(|w| waves(0, 0, w) + waves(0, 1, w) + waves(1, 0, w) + waves(1, 1, w))
        .collect();
    assert_eq!(got[1], per_wgp);
    let engine_1: Vec<f64> = (0..2)
        .flat_map(|sa| (0..6).map(move |w| waves(1, sa, w)))
        .collect();
    assert_eq!(got[2], engine_1);
    assert_eq!(got[3], [waves(1, 1, 5)]);
    let per_cycle: Vec<f64> = (0..2)
        .flat_map(|se| (0..2).flat_map(move |sa| (0..6).map(move |w| (se, sa, w))))
        .map(|(se, sa, w)| 1000.0 * waves(se, sa, w) / 4_000.0)
        .collect();
    assert_eq!(got[4], per_cycle);
}

#[test]
fn the_read_back_must_be_what_the_program_reads() {
    let (topology, ac) = by_dimension();
    let read = |topology: &Topology, events: &[(String, BaseEvent)]| -> Vec<CounterValues> {
        let buffers = build_pass(topology, events, BASE, OUT).unwrap();
        decode(&buffers, &vec![0; buffers.output_bytes]).unwrap()
    };
    let waves = ac.expand("SQ_WAVES").unwrap();
    let program = ac.prepare(&["PER_ARRAY"]).unwrap();
    let mut evaluator = program.evaluator();
    let good = read(&topology, &waves);
    readback::evaluate(&mut evaluator, &good).unwrap();

    let message = |result: Result<(), Error>| match result {
        Err(Error::Evaluate { counter, message }) => format!("{counter}: {message}"),
        other => panic!("{other:?}"),
    };
    // Nothing read back for the input.
    assert_eq!(
        message(readback::evaluate(&mut evaluator, &[])),
        "SQ_WAVES: is not among the counters read back"
    );
    // Read with a topology that walks other instances (the old SA = 2 formula: 3 WGPs).
    let other = Topology {
        sa: 2,
        ..topology.clone()
    };
    let m = message(readback::evaluate(&mut evaluator, &read(&other, &waves)));
    assert!(m.contains("12 values read back"), "{m}");
    // The right number of values in another order.
    let mut shuffled = good.clone();
    shuffled[0].instances.swap(0, 1);
    let m = message(readback::evaluate(&mut evaluator, &shuffled));
    assert!(m.contains("value 0 was read from SE 0 SA 0 WGP 1"), "{m}");
    // Another event under the same name.
    let renamed = read(&topology, &[common::sq("SQ_WAVES", 5)]);
    let m = message(readback::evaluate(&mut evaluator, &renamed));
    assert!(m.contains("SQ event 5"), "{m}");
    // Accumulation this build does not program.
    let program = ac.prepare(&["LEVEL"]).unwrap();
    let mut evaluator = program.evaluator();
    let m = message(readback::evaluate(&mut evaluator, &good));
    assert!(m.contains("HIGH_RES accumulation"), "{m}");
}
