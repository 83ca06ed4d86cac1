//! The gfx11 buffers against verified-facts §1: `{SQ_WAVES}` dword for dword as the facts give
//! it, two four-counter sets against sequences written out here from the rules (not from the
//! builder), a multi-engine walk, the AQL packets, the command-memory layout, decoding, the
//! geometry and the refusals.

use pmc_dxg::pm4::{
    self, CounterValues, Geometry, Instance, PassBuffers, Sample, acquire_units, build_pass,
    decode, pm4_ib_packet,
};
use pmc_dxg::{BaseEvent, Block, Error, Topology};

mod common;
use common::{gfx11, grbm, radeon_890m, sq};

const BASE: u64 = 0x1234_5678_9ABC_DE00;
/// Not 256-aligned, so the ACQUIRE_MEM size formula has work to do.
const OUT: u64 = 0x0000_7F12_3456_78C8;

// ---------------------------------------------------------- the expected sequences, by hand

/// `C0017900 <offset> <value>`: SET_UCONFIG_REG with the offset already taken off 0xC000.
fn uconfig(offset: u32, value: u32) -> Vec<u32> {
    vec![0xC001_7900, offset, value]
}

fn broadcast() -> Vec<u32> {
    uconfig(0x200, 0xE000_0000)
}

fn wait_idle() -> Vec<u32> {
    vec![0xC000_4600, 0x407]
}

/// `C0044000 00000200 <abs reg> 0 <dst_lo & ~3> <dst_hi>`.
fn copy(register: u32, destination: u64) -> Vec<u32> {
    vec![
        0xC004_4000,
        0x200,
        register,
        0,
        (destination & 0xFFFF_FFFC) as u32,
        (destination >> 32) as u32,
    ]
}

/// `C0065800 0 S 0 base>>8 (base>>40)&FF 10 18000` over `data` bytes at `base`.
fn acquire(base: u64, data: u64) -> Vec<u32> {
    let floor = data / 256;
    let ceil = data.div_ceil(256);
    let s = ((base % 256 + data) >> 8) + ceil - floor;
    vec![
        0xC006_5800,
        0,
        s as u32,
        0,
        (base >> 8) as u32,
        ((base >> 40) & 0xFF) as u32,
        0x10,
        0x1_8000,
    ]
}

/// A requested counter as the rules see it.
enum Req {
    /// SQ slot i with event e: SELECT offset 0x19C0 + 2i, LO 0xD1C0 + 2i.
    Sq(u32, u32),
    /// GRBM slot k with event e: SELECT offset 0x1840 + k, LO/HI 0xD040/0xD041 or 0xD043/0xD044.
    Grbm(u32, u32),
}

/// aqlprofile's start sequence, then the proof: WRITE_DATA (DST_SEL 5, WR_CONFIRM) of
/// 0x5EEDCAFE into the output's slot after the samples (`OUT` + 8 × samples on the 890M).
fn expected_start(requests: &[Req]) -> Vec<u32> {
    let samples: u64 = requests
        .iter()
        .map(|r| match r {
            Req::Sq(..) => INDICES_890M.len() as u64,
            Req::Grbm(..) => 1,
        })
        .sum();
    let mut dwords = aqlprofile_start(requests);
    let proof = OUT + 8 * samples;
    dwords.extend([
        0xC003_3700,
        0x10_0500,
        proof as u32,
        (proof >> 32) as u32,
        0x5EED_CAFE,
    ]);
    dwords
}

fn aqlprofile_start(requests: &[Req]) -> Vec<u32> {
    let mut dwords = wait_idle();
    dwords.extend(broadcast());
    dwords.extend(uconfig(0x1808, 0));
    if requests.iter().any(|r| matches!(r, Req::Sq(..))) {
        dwords.extend(uconfig(0x19E2, 0x1_FFFF));
    }
    for request in requests {
        dwords.extend(broadcast());
        match *request {
            Req::Sq(slot, event) => {
                dwords.extend(uconfig(0x19C0 + 2 * slot, event));
                dwords.extend(uconfig(0x19E0, 0x55));
            }
            Req::Grbm(slot, event) => dwords.extend(uconfig(0x1840 + slot, event)),
        }
    }
    dwords.extend(broadcast());
    dwords.extend([0xC001_7600, 0x20B, 1]);
    dwords.extend(uconfig(0x1808, 0));
    dwords.extend(uconfig(0x1808, 1));
    dwords.extend(wait_idle());
    dwords
}

/// The 890M's SE/SA/WGP walk: SE 0, SA 0..2, WGP 0..4.
const INDICES_890M: [u32; 8] = [0x0, 0x4, 0x8, 0xC, 0x100, 0x104, 0x108, 0x10C];

fn expected_read(requests: &[Req], out: u64) -> Vec<u32> {
    let mut dwords = uconfig(0x1808, 0x401);
    dwords.extend(broadcast());
    dwords.extend(wait_idle());
    let mut at = out;
    for request in requests {
        dwords.extend(broadcast());
        match *request {
            Req::Sq(slot, _) => {
                for index in INDICES_890M {
                    dwords.extend(uconfig(0x200, index));
                    dwords.extend(copy(0xD1C0 + 2 * slot, at));
                    at += 8;
                }
            }
            Req::Grbm(slot, _) => {
                let (lo, hi) = [(0xD040, 0xD041), (0xD043, 0xD044)][slot as usize];
                dwords.extend(broadcast());
                dwords.extend(copy(lo, at));
                dwords.extend(copy(hi, at + 4));
                at += 8;
            }
        }
    }
    dwords.extend(broadcast());
    dwords.extend(acquire(out, at - out));
    dwords
}

const STOP: [u32; 8] = [
    0xC001_7900,
    0x200,
    0xE000_0000,
    0xC001_7900,
    0x1808,
    2,
    0xC000_4600,
    0x407,
];

fn hex(dwords: &[u32]) -> String {
    dwords
        .iter()
        .map(|d| format!("{d:X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn assert_dwords(what: &str, got: &[u32], wanted: &[u32]) {
    if got != wanted {
        let first = got
            .iter()
            .zip(wanted)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(wanted.len()));
        panic!(
            "{what}: {} dwords, expected {}; first difference at dword {first}\n got: {}\nwant: {}",
            got.len(),
            wanted.len(),
            hex(got),
            hex(wanted)
        );
    }
}

fn build(events: &[(String, BaseEvent)]) -> PassBuffers {
    build_pass(&radeon_890m(), events, BASE, OUT).unwrap_or_else(|e| panic!("{e}"))
}

// ------------------------------------------------------------------------------- the cases

#[test]
fn sq_waves_is_exactly_the_verified_sequence() {
    let buffers = build(&[sq("SQ_WAVES", 4)]);
    // verified-facts §1 "Start, for {SQ_WAVES}, as exact dwords".
    let start: [u32; 34] = [
        0xC0004600, 0x407, //
        0xC0017900, 0x200, 0xE0000000, //
        0xC0017900, 0x1808, 0x0, //
        0xC0017900, 0x19E2, 0x1FFFF, //
        0xC0017900, 0x200, 0xE0000000, //
        0xC0017900, 0x19C0, 0x4, //
        0xC0017900, 0x19E0, 0x55, //
        0xC0017900, 0x200, 0xE0000000, //
        0xC0017600, 0x20B, 0x1, //
        0xC0017900, 0x1808, 0x0, //
        0xC0017900, 0x1808, 0x1, //
        0xC0004600, 0x407,
    ];
    // aqlprofile's sequence, exactly, then this project's proof of execution: WRITE_DATA of
    // 0x5EEDCAFE into the slot after the 8 samples (OUT + 64).
    assert_dwords("start", &buffers.start[..34], &start);
    assert_dwords(
        "start's proof",
        &buffers.start[34..],
        &[0xC0033700, 0x100500, 0x34567908, 0x7F12, 0x5EEDCAFE],
    );
    assert_eq!(buffers.proof_offset, Some(64));
    assert_dwords("stop", &buffers.stop, &STOP);
    // Read: sample + broadcast + flush, the counter's broadcast, 8 × (index, COPY LO),
    // broadcast, ACQUIRE_MEM over 64 data bytes at OUT (S = ((0xC8 + 64) >> 8) + 1 − 0 = 2).
    let mut read = vec![
        0xC0017900, 0x1808, 0x401, 0xC0017900, 0x200, 0xE0000000, 0xC0004600, 0x407, 0xC0017900,
        0x200, 0xE0000000,
    ];
    for (i, index) in [0x0, 0x4, 0x8, 0xC, 0x100, 0x104, 0x108, 0x10C]
        .into_iter()
        .enumerate()
    {
        read.extend([0xC0017900, 0x200, index]);
        read.extend([
            0xC0044000,
            0x200,
            0xD1C0,
            0,
            0x345678C8 + 8 * i as u32,
            0x7F12,
        ]);
    }
    read.extend([0xC0017900, 0x200, 0xE0000000]);
    read.extend([0xC0065800, 0, 2, 0, 0x12345678, 0x7F, 0x10, 0x18000]);
    assert_dwords("read", &buffers.read, &read);
    assert_dwords(
        "read (rules)",
        &buffers.read,
        &expected_read(&[Req::Sq(0, 4)], OUT),
    );
    assert_eq!(buffers.output_bytes, 8 + 8 * 8);
}

#[test]
fn four_counter_set_follows_the_rules() {
    let buffers = build(&[
        sq("SQ_WAVES", 4),
        sq("SQ_BUSY_CYCLES", 3),
        grbm("GRBM_COUNT", 0),
        grbm("GRBM_GUI_ACTIVE", 2),
    ]);
    let requests = [
        Req::Sq(0, 4),
        Req::Sq(1, 3),
        Req::Grbm(0, 0),
        Req::Grbm(1, 2),
    ];
    assert_dwords("start", &buffers.start, &expected_start(&requests));
    assert_dwords("stop", &buffers.stop, &STOP);
    assert_dwords("read", &buffers.read, &expected_read(&requests, OUT));
    assert_eq!(
        (buffers.start.len(), buffers.read.len(), buffers.stop.len()),
        (60, 205, 8)
    );
    // 8 + 8 × 18 samples; SQ_WAVES at 0–56, SQ_BUSY_CYCLES at 64–120, GRBM at 128 and 136.
    assert_eq!(buffers.output_bytes, 152);
    let offsets = |name: &str| -> Vec<usize> {
        let index = buffers
            .counters
            .iter()
            .position(|c| c.name == name)
            .unwrap();
        buffers
            .samples
            .iter()
            .filter(|s| s.counter == index)
            .map(|s| s.offset)
            .collect()
    };
    assert_eq!(
        offsets("SQ_WAVES"),
        (0..8).map(|i| 8 * i).collect::<Vec<_>>()
    );
    assert_eq!(
        offsets("SQ_BUSY_CYCLES"),
        (0..8).map(|i| 64 + 8 * i).collect::<Vec<_>>()
    );
    assert_eq!(offsets("GRBM_COUNT"), [128]);
    assert_eq!(offsets("GRBM_GUI_ACTIVE"), [136]);
    let slots: Vec<u32> = buffers.counters.iter().map(|c| c.slot).collect();
    assert_eq!(slots, [0, 1, 0, 1]);
}

#[test]
fn instruction_set_follows_the_rules() {
    let buffers = build(&[
        sq("SQ_INSTS_VALU", 62),
        sq("SQ_INSTS_SALU", 58),
        sq("SQ_WAVE_CYCLES", 24),
        grbm("GRBM_COUNT", 0),
    ]);
    let requests = [
        Req::Sq(0, 62),
        Req::Sq(1, 58),
        Req::Sq(2, 24),
        Req::Grbm(0, 0),
    ];
    assert_dwords("start", &buffers.start, &expected_start(&requests));
    assert_dwords("stop", &buffers.stop, &STOP);
    assert_dwords("read", &buffers.read, &expected_read(&requests, OUT));
    // SQ slot 2 is programmed through SQ_PERFCOUNTER4_SELECT (0xD9C4) and read from
    // SQ_PERFCOUNTER2_LO (0xD1C4).
    assert!(
        buffers
            .start
            .windows(3)
            .any(|w| w == [0xC0017900, 0x19C4, 24])
    );
    assert!(
        buffers
            .read
            .windows(3)
            .any(|w| w == [0xC0044000, 0x200, 0xD1C4])
    );
    assert_eq!(buffers.output_bytes, 8 + 8 * (3 * 8 + 1));
}

#[test]
fn grbm_only_passes_have_no_ctrl2_and_interleaving_keeps_request_order() {
    let buffers = build(&[grbm("GRBM_GUI_ACTIVE", 2)]);
    assert_dwords("start", &buffers.start, &expected_start(&[Req::Grbm(0, 2)]));
    assert!(
        !buffers.start.contains(&0x19E2),
        "CTRL2 only with SQ counters"
    );
    assert_eq!(buffers.output_bytes, 16);
    // GRBM, SQ, GRBM, SQ: each block numbers its own slots in request order.
    let buffers = build(&[
        grbm("GRBM_COUNT", 0),
        sq("SQ_WAVES", 4),
        grbm("GRBM_CP_BUSY", 3),
        sq("SQ_CYCLES", 2),
    ]);
    let requests = [
        Req::Grbm(0, 0),
        Req::Sq(0, 4),
        Req::Grbm(1, 3),
        Req::Sq(1, 2),
    ];
    assert_dwords("start", &buffers.start, &expected_start(&requests));
    assert_dwords("read", &buffers.read, &expected_read(&requests, OUT));
    let layout: Vec<(usize, usize)> = buffers
        .counters
        .iter()
        .map(|c| (c.samples.start, c.samples.end))
        .collect();
    assert_eq!(layout, [(0, 1), (1, 9), (9, 10), (10, 18)]);
}

#[test]
fn event_ids_use_all_nine_sq_bits() {
    // SQC_LDS_BANK_CONFLICT = 256 needs PERF_SEL bit 8.
    let buffers = build(&[
        sq("SQC_LDS_BANK_CONFLICT", 256),
        sq("SQC_LDS_IDX_ACTIVE", 261),
    ]);
    assert!(
        buffers
            .start
            .windows(3)
            .any(|w| w == [0xC0017900, 0x19C0, 256])
    );
    assert!(
        buffers
            .start
            .windows(3)
            .any(|w| w == [0xC0017900, 0x19C2, 261])
    );
    // Ids the field cannot hold are refused rather than truncated into another event.
    assert_eq!(
        build_pass(&radeon_890m(), &[sq("BIG", 0x200)], BASE, OUT),
        Err(Error::EventOutOfRange {
            counter: "BIG".into(),
            block: "SQ".into(),
            event: 0x200,
            max: 0x1FF
        })
    );
    assert_eq!(
        build_pass(&radeon_890m(), &[grbm("G", 0x40)], BASE, OUT),
        Err(Error::EventOutOfRange {
            counter: "G".into(),
            block: "GRBM".into(),
            event: 0x40,
            max: 0x3F
        })
    );
    assert!(build_pass(&radeon_890m(), &[grbm("G", 0x3F)], BASE, OUT).is_ok());
}

#[test]
fn the_aql_packets_carry_the_buffers() {
    let buffers = build(&[
        sq("SQ_WAVES", 4),
        sq("SQ_BUSY_CYCLES", 3),
        grbm("GRBM_COUNT", 0),
        grbm("GRBM_GUI_ACTIVE", 2),
    ]);
    // [read | start | stop], each 256-byte aligned: 820 → 1024, 1024 + 220 → 1280, + 32.
    assert_eq!(
        (
            buffers.read_offset,
            buffers.start_offset,
            buffers.stop_offset,
            buffers.command_bytes
        ),
        (0, 1024, 1280, 1536)
    );
    let packets = buffers.packets();
    let dword = |packet: &[u8; 64], i: usize| {
        u32::from_le_bytes(packet[4 * i..4 * i + 4].try_into().unwrap())
    };
    for (packet, header, offset, dwords) in [
        (&packets.start, 0x0000_u16, 1024_u64, 60_u32),
        (&packets.stop, 0x0100, 1280, 8),
        (&packets.read, 0x0100, 0, 205),
    ] {
        let address = BASE + offset;
        assert_eq!(u16::from_le_bytes([packet[0], packet[1]]), header);
        assert_eq!(
            u16::from_le_bytes([packet[2], packet[3]]),
            1,
            "AMD_AQL_FORMAT_PM4_IB"
        );
        assert_eq!(dword(packet, 1), 0xC002_3F00);
        assert_eq!(dword(packet, 2), (address as u32) & !3);
        assert_eq!(dword(packet, 3), 0x1234_5678, "the full high 32 bits");
        assert_eq!(dword(packet, 4), 0x1080_0000 | dwords);
        assert_eq!(dword(packet, 5), 0xA);
        assert!(
            packet[24..64].iter().all(|&b| b == 0),
            "reserved and signal"
        );
    }
    let with_signal = pm4_ib_packet(0x0100, 0x1000, 8, 0xDEAD_BEEF_0000_0042);
    assert_eq!(
        u64::from_le_bytes(with_signal[56..64].try_into().unwrap()),
        0xDEAD_BEEF_0000_0042
    );
    // The command memory image holds each buffer at its offset, zero padding between.
    let memory = buffers.command_memory();
    assert_eq!(memory.len(), 1536);
    let at = |offset: usize| u32::from_le_bytes(memory[offset..offset + 4].try_into().unwrap());
    assert_eq!(at(0), 0xC001_7900);
    assert_eq!(at(4 * 204), 0x1_8000, "the read's last dword");
    assert!(memory[820..1024].iter().all(|&b| b == 0));
    assert_eq!(at(1024), 0xC000_4600);
    assert_eq!(at(1280 + 4 * 5), 2, "stop: CP_PERFMON_CNTL = 2");
    assert!(memory[1312..].iter().all(|&b| b == 0));
}

#[test]
fn decode_reads_each_instance_in_order() {
    let buffers = build(&[sq("SQ_WAVES", 4), grbm("GRBM_COUNT", 0)]);
    assert_eq!(buffers.output_bytes, 8 + 8 * 9);
    let mut output = vec![0_u8; buffers.output_bytes];
    for i in 0..8 {
        // Low half the count, high half garbage the PM4 never writes.
        output[8 * i..8 * i + 4].copy_from_slice(&(1000 + i as u32).to_le_bytes());
        output[8 * i + 4..8 * i + 8].copy_from_slice(&0xA5A5_A5A5_u32.to_le_bytes());
    }
    output[64..72].copy_from_slice(&0x0000_0001_0000_0002_u64.to_le_bytes());
    let values = decode(&buffers, &output).unwrap();
    let instances: Vec<Instance> = [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
    ]
    .into_iter()
    .map(|(sa, wgp)| Instance { se: 0, sa, wgp })
    .collect();
    assert_eq!(
        values,
        [
            CounterValues {
                name: "SQ_WAVES".into(),
                event: BaseEvent {
                    block: Block::Sq,
                    event: 4
                },
                values: (1000..1008).collect(),
                instances,
            },
            CounterValues {
                name: "GRBM_COUNT".into(),
                event: BaseEvent {
                    block: Block::Grbm,
                    event: 0
                },
                values: vec![0x1_0000_0002],
                instances: vec![Instance {
                    se: 0,
                    sa: 0,
                    wgp: 0
                }],
            },
        ]
    );
    assert_eq!(
        buffers.samples[4],
        Sample {
            counter: 0,
            block: Block::Sq,
            se: 0,
            sa: 1,
            wgp: 0,
            offset: 32
        }
    );
    assert_eq!(
        decode(&buffers, &output[..79]),
        Err(Error::ShortOutput { got: 79, need: 80 })
    );
}

#[test]
fn what_cannot_be_programmed_is_refused() {
    let other = Topology {
        gfx: "gfx90a".into(),
        ..radeon_890m()
    };
    assert_eq!(
        build_pass(&other, &[sq("SQ_WAVES", 4)], BASE, OUT),
        Err(Error::UnsupportedTarget("gfx90a".into()))
    );
    assert_eq!(
        Error::UnsupportedTarget("gfx90a".into()).to_string(),
        "counters on gfx90a are not supported yet (this build programs gfx11 only)"
    );
    let tcp = (
        "TCP_TOTAL_CACHE_ACCESSES".to_owned(),
        BaseEvent {
            block: Block::Other("TCP".into()),
            event: 1,
        },
    );
    assert_eq!(
        build_pass(&radeon_890m(), &[sq("SQ_WAVES", 4), tcp], BASE, OUT),
        Err(Error::UnsupportedBlock {
            counter: "TCP_TOTAL_CACHE_ACCESSES".into(),
            block: "TCP".into()
        })
    );
    let nine: Vec<_> = (0..9).map(|i| sq(&format!("S{i}"), i)).collect();
    assert_eq!(
        build_pass(&radeon_890m(), &nine, BASE, OUT),
        Err(Error::TooManyCounters {
            block: "SQ".into(),
            slots: 8,
            counters: (0..9).map(|i| format!("S{i}")).collect()
        })
    );
    let three = [grbm("A", 0), sq("S", 4), grbm("B", 2), grbm("C", 3)];
    assert!(matches!(
        build_pass(&radeon_890m(), &three, BASE, OUT),
        Err(Error::TooManyCounters { block, slots: 2, counters }) if block == "GRBM" && counters == ["A", "B", "C"]
    ));
    assert_eq!(
        build_pass(&radeon_890m(), &[sq("SQ_WAVES", 4)], BASE + 0x80, OUT),
        Err(Error::Misaligned {
            what: "command memory",
            address: BASE + 0x80,
            alignment: 256
        })
    );
    assert_eq!(
        build_pass(&radeon_890m(), &[sq("SQ_WAVES", 4)], BASE, OUT + 4),
        Err(Error::Misaligned {
            what: "counter output",
            address: OUT + 4,
            alignment: 8
        })
    );
}

#[test]
fn sizes_match_the_buffers_built() {
    let geometry = pm4::Geometry::of(&radeon_890m()).unwrap();
    let buffers = build(&[
        sq("SQ_WAVES", 4),
        sq("SQ_BUSY_CYCLES", 3),
        grbm("GRBM_COUNT", 0),
        grbm("GRBM_GUI_ACTIVE", 2),
    ]);
    let sizes = geometry.dwords(2, 2);
    assert_eq!(
        (sizes.start, sizes.stop, sizes.read, sizes.largest()),
        (
            buffers.start.len(),
            buffers.stop.len(),
            buffers.read.len(),
            205
        )
    );
    // The largest pass the slots allow on the 890M: 8 SQ + 2 GRBM.
    assert_eq!(geometry.dwords(8, 2).read, 655);
    // An empty pass still starts, stops and reads (nothing).
    let empty = build(&[]);
    assert_eq!((empty.samples.len(), empty.output_bytes), (0, 8));
    assert_eq!(decode(&empty, &[0; 8]).unwrap(), []);
}

#[test]
fn gfx11_names_are_recognised_and_others_refused() {
    for name in ["gfx1100", "gfx1103", "gfx1150", "gfx1151", "gfx1150:xnack-"] {
        let topology = Topology {
            gfx: name.into(),
            ..radeon_890m()
        };
        assert!(Geometry::of(&topology).is_ok(), "{name}");
    }
    for name in [
        "gfx11", "gfx110", "gfx11000", "gfx1200", "gfx90a", "gfx942", "", "GFX1150", "gfx11g0",
    ] {
        let topology = Topology {
            gfx: name.into(),
            ..radeon_890m()
        };
        assert_eq!(
            Geometry::of(&topology),
            Err(Error::UnsupportedTarget(name.into())),
            "{name}"
        );
    }
}

#[test]
fn the_wgps_per_array_follow_the_agents_shader_arrays() {
    let geometry = Geometry::of(&radeon_890m()).unwrap();
    assert_eq!(
        geometry,
        Geometry {
            se: 1,
            wgp_per_sa: 4
        }
    );
    assert_eq!(geometry.sq_samples(), 8);
    // (cu/2 + sa·se − 1) / (se·sa) with the agent's sa; the read still walks 2 arrays.
    for (se, sa, cu, wgp) in [
        (6, 2, 96, 4), // (48 + 12 - 1) / 12
        (1, 1, 16, 8), // one array per engine reported: (8 + 1 - 1) / 1
        (2, 2, 30, 4), // (15 + 4 - 1) / 4, rounded up
        (1, 4, 16, 2), // (8 + 4 - 1) / 4
        (3, 2, 2, 1),  // (1 + 6 - 1) / 6
    ] {
        let geometry = Geometry::of(&gfx11("gfx1100", se, sa, cu)).unwrap();
        assert_eq!(geometry.wgp_per_sa, wgp, "se {se} sa {sa} cu {cu}");
        assert_eq!(geometry.sq_samples(), (se * 2 * wgp) as usize);
        assert_eq!(pm4::wgp_per_sa(cu, se, sa), Some(u64::from(wgp)));
    }
    assert_eq!(pm4::wgp_per_sa(16, 0, 2), None);
    assert_eq!(pm4::wgp_per_sa(16, 1, 0), None);
    // One array per engine: 2 × 8 samples, WGP indices up to 7 (0x1C).
    let buffers = build_pass(&gfx11("gfx1150", 1, 1, 16), &[sq("SQ_WAVES", 4)], BASE, OUT).unwrap();
    assert_eq!(buffers.output_bytes, 8 + 8 * 16);
    assert!(
        buffers
            .read
            .windows(3)
            .any(|w| w == [0xC001_7900, 0x200, 0x11C])
    );
}

#[test]
fn unaddressable_topologies_are_refused() {
    for (se, sa, cu, xcc) in [
        (0, 2, 16, 1),
        (65, 2, 1024, 1),
        (256, 2, 1024, 1),
        (u32::MAX, 2, u32::MAX, 1),
        (1, 2, 1, 1),
        (1, 2, 0, 1),
        (1, 2, 16, 2),
        (1, 2, 16, 0),
        (1, 0, 16, 1),
        (1, 2, 200, 1),
        (1, 1, u32::MAX, 1),
    ] {
        let topology = Topology {
            xcc,
            ..gfx11("gfx1150", se, sa, cu)
        };
        assert!(
            matches!(Geometry::of(&topology), Err(Error::InvalidTopology { .. })),
            "se {se} sa {sa} cu {cu} xcc {xcc}: {:?}",
            Geometry::of(&topology)
        );
        assert!(matches!(
            build_pass(&topology, &[sq("SQ_WAVES", 4)], BASE, OUT),
            Err(Error::InvalidTopology { .. })
        ));
    }
    // The edges that still work: 64 engines, 32 WGPs per array.
    assert_eq!(
        Geometry::of(&gfx11("gfx1100", 64, 1, 128))
            .unwrap()
            .wgp_per_sa,
        1
    );
    assert_eq!(
        Geometry::of(&gfx11("gfx1100", 1, 2, 128))
            .unwrap()
            .wgp_per_sa,
        32
    );
    assert!(Geometry::of(&gfx11("gfx1100", 1, 2, 130)).is_err());
    // Absurd shader-array counts do not overflow the formula.
    assert_eq!(
        Geometry::of(&gfx11("gfx1100", 64, u32::MAX, u32::MAX))
            .unwrap()
            .wgp_per_sa,
        1
    );
}

#[test]
fn acquire_units_follow_the_formula() {
    assert_eq!(acquire_units(0, 0), 0);
    assert_eq!(acquire_units(0, 256), 1);
    assert_eq!(acquire_units(0, 144), 1);
    assert_eq!(acquire_units(0x80, 144), 2);
    assert_eq!(acquire_units(0xF8, 8), 2);
    assert_eq!(acquire_units(0, 512), 2);
    // The formula's own rounding: 512 bytes at offset 1 touch three units, it asks for two.
    assert_eq!(acquire_units(1, 512), 2);
    // The highest address does not overflow.
    assert_eq!(acquire_units(u64::MAX - 7, 8), 2);
}

#[test]
fn several_engines_are_walked_engine_then_array_then_wgp() {
    // 2 SEs × 2 SAs × 3 WGPs (24 CUs).
    let topology = gfx11("gfx1100", 2, 2, 24);
    let buffers = build_pass(
        &topology,
        &[sq("SQ_WAVES", 4), grbm("GRBM_COUNT", 0)],
        BASE,
        OUT,
    )
    .unwrap();
    let mut wanted = Vec::new();
    for se in 0..2 {
        for sa in 0..2 {
            for wgp in 0..3 {
                wanted.push((se << 16) | (sa << 8) | (wgp << 2));
            }
        }
    }
    // The GRBM_GFX_INDEX values the read writes, broadcasts left out, in order.
    let indices: Vec<u32> = buffers
        .read
        .windows(3)
        .filter(|w| w[0] == 0xC001_7900 && w[1] == 0x200 && w[2] != 0xE000_0000)
        .map(|w| w[2])
        .collect();
    assert_eq!(indices, wanted);
    assert_eq!(
        indices[..4],
        [0x0, 0x4, 0x8, 0x100],
        "WGP innermost, then the array"
    );
    assert_eq!(indices[6], 0x1_0000, "then the engine");
    // Each sample names the instance its index selected, at dense offsets.
    for (k, sample) in buffers.samples[..12].iter().enumerate() {
        assert_eq!(
            (sample.se << 16) | (sample.sa << 8) | (sample.wgp << 2),
            wanted[k]
        );
        assert_eq!(sample.offset, 8 * k);
    }
    assert_eq!(buffers.samples[12].offset, 96);
    assert_eq!(buffers.output_bytes, 8 + 8 * 13);
}
