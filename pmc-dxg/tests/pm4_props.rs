//! Property tests of the builder over random valid counter sets and topologies, and of the
//! decoder over random output bytes.

use std::collections::HashSet;

use pmc_dxg::pm4::{Geometry, PassBuffers, build_pass, decode};
use pmc_dxg::{BaseEvent, Block, Error, Topology};
use proptest::prelude::*;

/// A valid pass: up to 8 SQ and 2 GRBM events in a random interleaving, on a random gfx11
/// topology, with a random command-memory base (256-aligned) and output address (8-aligned).
#[derive(Debug, Clone)]
struct Case {
    topology: Topology,
    events: Vec<(String, BaseEvent)>,
    base: u64,
    out: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let sq = prop::collection::vec(0_u32..=0x1FF, 0..=8);
    let grbm = prop::collection::vec(0_u32..=0x3F, 0..=2);
    let order = prop::collection::vec(any::<u32>(), 10);
    let chip = prop::sample::select(vec!["gfx1100", "gfx1101", "gfx1103", "gfx1150", "gfx1151"]);
    (
        sq,
        grbm,
        order,
        chip,
        1_u32..=4,
        1_u32..=3,
        2_u32..=64,
        0_u64..(1 << 40),
        1_u64..(1 << 44),
    )
        .prop_map(|(sq, grbm, order, chip, se, sa, cu, base, out)| {
            let mut keyed: Vec<(u32, (String, BaseEvent))> = sq
                .iter()
                .enumerate()
                .map(|(i, &event)| {
                    (
                        order[i],
                        (
                            format!("SQ{i}"),
                            BaseEvent {
                                block: Block::Sq,
                                event,
                            },
                        ),
                    )
                })
                .chain(grbm.iter().enumerate().map(|(i, &event)| {
                    (
                        order[8 + i],
                        (
                            format!("GRBM{i}"),
                            BaseEvent {
                                block: Block::Grbm,
                                event,
                            },
                        ),
                    )
                }))
                .collect();
            keyed.sort_by_key(|(key, _)| *key);
            Case {
                topology: Topology {
                    gfx: chip.to_owned(),
                    se,
                    cu,
                    sa,
                    xcc: 1,
                },
                events: keyed.into_iter().map(|(_, event)| event).collect(),
                base: base * 256,
                out: out * 8,
            }
        })
}

/// One decoded PM4 packet: opcode and body.
fn packets(buffer: &[u32]) -> Result<Vec<(u32, &[u32])>, String> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < buffer.len() {
        let header = buffer[at];
        if header >> 30 != 3 {
            return Err(format!("dword {at}: {header:#x} is not a type-3 header"));
        }
        let total = ((header >> 16) & 0x3FFF) as usize + 2;
        let body = buffer
            .get(at + 1..at + total)
            .ok_or_else(|| format!("dword {at}: packet runs past the end"))?;
        out.push(((header >> 8) & 0xFF, body));
        at += total;
    }
    Ok(out)
}

fn counts(case: &Case) -> (usize, usize) {
    let sq = case
        .events
        .iter()
        .filter(|(_, e)| e.block == Block::Sq)
        .count();
    (sq, case.events.len() - sq)
}

fn check_buffers(case: &Case, buffers: &PassBuffers) -> Result<(), TestCaseError> {
    let geometry = Geometry::of(&case.topology).unwrap();
    let (sq, grbm) = counts(case);
    // Sizes.
    let sizes = geometry.dwords(sq, grbm);
    prop_assert_eq!(
        (buffers.start.len(), buffers.stop.len(), buffers.read.len()),
        (sizes.start, sizes.stop, sizes.read)
    );
    // aqlprofile's wgp_per_sa, written out: (cu/2 + sa·se − 1) / (se·sa); the loop walks 2 SAs.
    let t = &case.topology;
    #[allow(clippy::manual_div_ceil)] // the formula as aqlprofile writes it
    let wgp = ((t.cu / 2 + t.sa * t.se - 1) / (t.se * t.sa)) as usize;
    prop_assert_eq!(geometry.wgp_per_sa as usize, wgp);
    let samples = sq * t.se as usize * 2 * wgp + grbm;
    prop_assert_eq!(buffers.samples.len(), samples);
    prop_assert_eq!(buffers.output_bytes, 8 + 8 * samples);
    // Layout: [read | start | stop], each part 256-aligned in memory, no overlap.
    prop_assert_eq!(buffers.read_offset, 0);
    let parts = [
        (buffers.read_offset, buffers.read.len()),
        (buffers.start_offset, buffers.start.len()),
        (buffers.stop_offset, buffers.stop.len()),
    ];
    let mut end = 0;
    for (offset, dwords) in parts {
        prop_assert!(offset >= end, "parts overlap");
        prop_assert_eq!((case.base + offset as u64) % 256, 0);
        end = offset + 4 * dwords;
    }
    prop_assert!(buffers.command_bytes >= end && buffers.command_bytes.is_multiple_of(256));
    prop_assert!(buffers.command_bytes < end + 256);
    // Every buffer is whole type-3 packets of the opcodes the builder uses; the start ends
    // with the proof: one WRITE_DATA of the proof word into the output's last slot.
    for buffer in [&buffers.start, &buffers.stop, &buffers.read] {
        let parsed = packets(buffer).map_err(TestCaseError::fail)?;
        for (k, (op, body)) in parsed.iter().enumerate() {
            if *op == 0x37 {
                prop_assert!(std::ptr::eq(buffer, &buffers.start) && k == parsed.len() - 1);
                let at = case.out + 8 * samples as u64;
                prop_assert_eq!(
                    body.to_vec(),
                    vec![
                        5 << 8 | 1 << 20,
                        at as u32,
                        (at >> 32) as u32,
                        pmc_dxg::pm4::PROOF_WORD
                    ]
                );
                prop_assert_eq!(buffers.proof_offset, Some(8 * samples));
                continue;
            }
            prop_assert!(
                [0x79, 0x76, 0x46, 0x40, 0x58].contains(op),
                "opcode {op:#x}"
            );
        }
    }
    prop_assert_eq!(
        packets(&buffers.start)
            .map_err(TestCaseError::fail)?
            .last()
            .map(|p| p.0),
        Some(0x37)
    );
    // The read: every COPY_DATA lands inside the output buffer, once each; ACQUIRE_MEM last.
    let read = packets(&buffers.read).map_err(TestCaseError::fail)?;
    let mut destinations = HashSet::new();
    let output_end = case.out + buffers.output_bytes as u64;
    for (op, body) in &read {
        if *op == 0x40 {
            prop_assert_eq!(body.len(), 5);
            prop_assert_eq!(body[0], 0x200, "SRC_SEL 0, DST_SEL 2, 32-bit");
            let destination = u64::from(body[3]) | (u64::from(body[4]) << 32);
            prop_assert!(destination.is_multiple_of(4));
            prop_assert!(case.out <= destination && destination + 4 <= output_end);
            prop_assert!(destinations.insert(destination), "written twice");
        }
    }
    // One copy per SQ sample, two (LO, HI) per GRBM sample.
    prop_assert_eq!(destinations.len(), samples + grbm);
    let (op, acquire) = read.last().unwrap();
    prop_assert_eq!(*op, 0x58);
    let data = 8 * samples as u64;
    let s = ((case.out % 256 + data) >> 8) + data.div_ceil(256) - data / 256;
    prop_assert_eq!(
        acquire.to_vec(),
        vec![
            0,
            s as u32,
            0,
            (case.out >> 8) as u32,
            ((case.out >> 40) & 0xFF) as u32,
            0x10,
            0x1_8000
        ]
    );
    // Slots: the k-th event of a block gets register k, so SELECTs are distinct.
    let mut selects = HashSet::new();
    for (op, body) in packets(&buffers.start).map_err(TestCaseError::fail)? {
        let select = (0x19C0..0x19D0).contains(&body[0]) || (0x1840..0x1842).contains(&body[0]);
        if op == 0x79 && select {
            prop_assert!(selects.insert(body[0]), "select {:#x} twice", body[0]);
        }
    }
    prop_assert_eq!(selects.len(), sq + grbm);
    for (block, n) in [(Block::Sq, sq), (Block::Grbm, grbm)] {
        let slots: Vec<u32> = buffers
            .counters
            .iter()
            .filter(|c| c.event.block == block)
            .map(|c| c.slot)
            .collect();
        prop_assert_eq!(slots, (0..n as u32).collect::<Vec<u32>>());
    }
    // Samples: dense 8-byte slots in read order, each inside the output.
    for (i, sample) in buffers.samples.iter().enumerate() {
        prop_assert_eq!(sample.offset, 8 * i);
        prop_assert!(sample.offset + 8 <= buffers.output_bytes);
    }
    // The read walks each SQ counter SE, then SA, then WGP; the index written before each
    // SQ copy is that sample's instance, and the copy goes to that sample's slot.
    let mut index = 0xE000_0000;
    let mut copies = buffers.samples.iter().flat_map(|s| {
        let both = if s.block == Block::Sq { 1 } else { 2 };
        std::iter::repeat_n(s, both)
    });
    for (op, body) in &read {
        if *op == 0x79 && body[0] == 0x200 {
            index = body[1];
        } else if *op == 0x40 {
            let sample = copies.next().unwrap();
            let destination = u64::from(body[3]) | (u64::from(body[4]) << 32);
            prop_assert!(
                destination == case.out + sample.offset as u64
                    || destination == case.out + sample.offset as u64 + 4
            );
            if sample.block == Block::Sq {
                prop_assert_eq!(
                    index,
                    (sample.se << 16) | (sample.sa << 8) | (sample.wgp << 2)
                );
            } else {
                prop_assert_eq!(index, 0xE000_0000);
            }
        }
    }
    for counter in buffers
        .counters
        .iter()
        .filter(|c| c.event.block == Block::Sq)
    {
        let walked: Vec<(u32, u32, u32)> = buffers.samples[counter.samples.clone()]
            .iter()
            .map(|s| (s.se, s.sa, s.wgp))
            .collect();
        let mut wanted = Vec::new();
        for se in 0..t.se {
            for sa in 0..2 {
                for w in 0..wgp as u32 {
                    wanted.push((se, sa, w));
                }
            }
        }
        prop_assert_eq!(walked, wanted);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn random_valid_sets_build_consistent_buffers(case in case()) {
        let buffers = build_pass(&case.topology, &case.events, case.base, case.out)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_buffers(&case, &buffers)?;
    }

    #[test]
    fn random_output_bytes_decode_without_panicking(
        case in case(),
        noise in prop::collection::vec(any::<u8>(), 1..2048),
        delta in -24_i64..48,
    ) {
        let buffers = build_pass(&case.topology, &case.events, case.base, case.out)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Random bytes around the needed length, short ones included.
        let len = (buffers.output_bytes as i64 + delta).max(0) as usize;
        let bytes: Vec<u8> = noise.iter().copied().cycle().take(len).collect();
        match decode(&buffers, &bytes) {
            Err(error) => {
                prop_assert!(bytes.len() < buffers.output_bytes);
                prop_assert_eq!(error, Error::ShortOutput { got: bytes.len(), need: buffers.output_bytes });
            }
            Ok(values) => {
                prop_assert!(bytes.len() >= buffers.output_bytes);
                prop_assert_eq!(values.len(), case.events.len());
                let total: usize = values.iter().map(|v| v.values.len()).sum();
                prop_assert_eq!(total, buffers.samples.len());
                for (counter, decoded) in buffers.counters.iter().zip(&values) {
                    prop_assert_eq!(&counter.name, &decoded.name);
                    prop_assert_eq!(decoded.values.len(), counter.samples.len());
                    prop_assert_eq!(decoded.instances.len(), counter.samples.len());
                    for (sample, &value) in buffers.samples[counter.samples.clone()].iter().zip(&decoded.values) {
                        let raw = u64::from_le_bytes(bytes[sample.offset..sample.offset + 8].try_into().unwrap());
                        let wanted = if sample.block == Block::Sq { raw & 0xFFFF_FFFF } else { raw };
                        prop_assert_eq!(value, wanted);
                    }
                }
            }
        }
    }
}
