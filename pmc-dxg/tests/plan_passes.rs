//! Pass planning: slots, the frame, the fewest passes, refusals, determinism; and a property
//! test against a brute-force minimum computed from buffers actually built.

use std::collections::HashMap;

use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, Pass, plan};
use pmc_dxg::pm4::build_pass;
use pmc_dxg::{BaseEvent, Block, Error, Topology};
use proptest::prelude::*;

mod common;
use common::{counter, gfx11, radeon_890m};

fn sqs(n: usize) -> Vec<(String, BaseEvent)> {
    (0..n)
        .map(|i| counter(Block::Sq, &format!("SQ{i}"), i as u32))
        .collect()
}

fn grbms(n: usize) -> Vec<(String, BaseEvent)> {
    (0..n)
        .map(|i| counter(Block::Grbm, &format!("GRBM{i}"), i as u32))
        .collect()
}

fn names(passes: &[Pass]) -> Vec<Vec<&str>> {
    passes
        .iter()
        .map(|pass| {
            pass.counters
                .iter()
                .map(|(name, _)| name.as_str())
                .collect()
        })
        .collect()
}

/// The largest buffer of each pass, built for real.
fn largest_dwords(topology: &Topology, passes: &[Pass]) -> Vec<usize> {
    passes
        .iter()
        .map(|pass| {
            let buffers = build_pass(topology, &pass.counters, 0x10_0000, 0x20_0000).unwrap();
            buffers
                .start
                .len()
                .max(buffers.stop.len())
                .max(buffers.read.len())
        })
        .collect()
}

#[test]
fn a_set_that_fits_is_one_pass_in_request_order() {
    let four = vec![
        counter(Block::Sq, "SQ_WAVES", 4),
        counter(Block::Grbm, "GRBM_COUNT", 0),
        counter(Block::Sq, "SQ_BUSY_CYCLES", 3),
        counter(Block::Grbm, "GRBM_GUI_ACTIVE", 2),
    ];
    for packing in [Packing::OnePass, Packing::Split] {
        for frame in [None, Some(DXG_FRAME_DWORDS)] {
            let passes = plan(&radeon_890m(), &four, packing, frame).unwrap();
            assert_eq!(
                names(&passes),
                [[
                    "SQ_WAVES",
                    "GRBM_COUNT",
                    "SQ_BUSY_CYCLES",
                    "GRBM_GUI_ACTIVE"
                ]]
            );
        }
    }
    assert_eq!(
        plan(&radeon_890m(), &[], Packing::OnePass, None).unwrap(),
        []
    );
}

#[test]
fn slots_are_never_exceeded() {
    let nine = sqs(9);
    assert_eq!(
        plan(&radeon_890m(), &nine, Packing::OnePass, None),
        Err(Error::TooManyCounters {
            block: "SQ".into(),
            slots: 8,
            counters: (0..9).map(|i| format!("SQ{i}")).collect()
        })
    );
    let passes = plan(&radeon_890m(), &nine, Packing::Split, None).unwrap();
    assert_eq!(
        names(&passes),
        [
            vec!["SQ0", "SQ1", "SQ2", "SQ3", "SQ4", "SQ5", "SQ6", "SQ7"],
            vec!["SQ8"]
        ]
    );
    let mut three = grbms(3);
    three.insert(1, counter(Block::Sq, "SQ_WAVES", 4));
    let error = plan(&radeon_890m(), &three, Packing::OnePass, None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "GRBM has 2 counter slots, and one pass was asked for 3: GRBM0, GRBM1, GRBM2"
    );
    let passes = plan(&radeon_890m(), &three, Packing::Split, None).unwrap();
    assert_eq!(
        names(&passes),
        [vec!["GRBM0", "SQ_WAVES", "GRBM1"], vec!["GRBM2"]]
    );
    // Without a frame the largest slot-legal pass, 8 SQ + 2 GRBM, is one pass.
    let full: Vec<_> = sqs(8).into_iter().chain(grbms(2)).collect();
    let passes = plan(&radeon_890m(), &full, Packing::OnePass, None).unwrap();
    assert_eq!(passes.len(), 1);
    assert_eq!(largest_dwords(&radeon_890m(), &passes), [655]);
}

#[test]
fn the_dxg_frame_bounds_every_pass() {
    assert_eq!(DXG_FRAME_DWORDS, 512);
    let topology = radeon_890m();
    let frame = Some(DXG_FRAME_DWORDS);
    // 6 SQ + 2 GRBM is the largest pass within 512 dwords on the 890M (a 505-dword read)...
    let largest: Vec<_> = sqs(6).into_iter().chain(grbms(2)).collect();
    let passes = plan(&topology, &largest, Packing::OnePass, frame).unwrap();
    assert_eq!(largest_dwords(&topology, &passes), [505]);
    // ... a seventh SQ counter does not fit (544 dwords), even alone with its peers.
    assert_eq!(
        plan(&topology, &sqs(7), Packing::OnePass, frame),
        Err(Error::FrameOverflow {
            dwords: 544,
            frame: 512,
            counters: (0..7).map(|i| format!("SQ{i}")).collect()
        })
    );
    // 8 SQ + 2 GRBM: fine for the slots, too big for the frame; split in two.
    let full: Vec<_> = sqs(8).into_iter().chain(grbms(2)).collect();
    let error = plan(&topology, &full, Packing::OnePass, frame).unwrap_err();
    assert!(
        matches!(
            error,
            Error::FrameOverflow {
                dwords: 655,
                frame: 512,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().starts_with(
        "one pass of SQ0, SQ1, SQ2, SQ3, SQ4, SQ5, SQ6, SQ7, GRBM0, GRBM1 needs a 655-dword PM4 \
         buffer, and at most 512 dwords fit"
    ));
    let passes = plan(&topology, &full, Packing::Split, frame).unwrap();
    assert_eq!(
        names(&passes),
        [
            vec!["SQ0", "SQ1", "SQ2", "SQ3", "SQ4", "SQ5", "GRBM0", "GRBM1"],
            vec!["SQ6", "SQ7"]
        ]
    );
    assert!(largest_dwords(&topology, &passes).iter().all(|&d| d <= 512));
}

#[test]
fn a_counter_too_big_for_the_frame_alone_is_refused() {
    // 6 SEs × 2 SAs × 4 WGPs: one SQ counter reads 48 samples (435 dwords + 19).
    let big = gfx11("gfx1100", 6, 2, 96);
    let passes = plan(&big, &sqs(3), Packing::Split, Some(DXG_FRAME_DWORDS)).unwrap();
    assert_eq!(names(&passes), [["SQ0"], ["SQ1"], ["SQ2"]]);
    assert_eq!(largest_dwords(&big, &passes), [454, 454, 454]);
    assert_eq!(
        plan(&big, &sqs(3), Packing::Split, Some(400)),
        Err(Error::FrameOverflow {
            dwords: 454,
            frame: 400,
            counters: vec!["SQ0".into()]
        })
    );
    // GRBM counters alone need 37 dwords of read, 28 of start.
    assert!(plan(&radeon_890m(), &grbms(1), Packing::Split, Some(37)).is_ok());
    assert!(matches!(
        plan(&radeon_890m(), &grbms(1), Packing::Split, Some(36)),
        Err(Error::FrameOverflow { dwords: 37, .. })
    ));
}

#[test]
fn repeats_are_kept_once_and_planning_is_deterministic() {
    let mut request = sqs(5);
    request.extend(grbms(3));
    request.push(counter(Block::Sq, "SQ1", 1));
    request.insert(0, counter(Block::Grbm, "GRBM2", 2));
    let first = plan(&radeon_890m(), &request, Packing::Split, Some(512)).unwrap();
    for _ in 0..10 {
        assert_eq!(
            plan(&radeon_890m(), &request, Packing::Split, Some(512)).unwrap(),
            first
        );
    }
    assert_eq!(
        names(&first),
        [
            vec!["GRBM2", "SQ0", "SQ1", "SQ2", "SQ3", "SQ4", "GRBM0"],
            vec!["GRBM1"]
        ]
    );
}

#[test]
fn what_cannot_be_collected_is_refused() {
    let request = vec![
        counter(Block::Sq, "SQ_WAVES", 4),
        counter(Block::Other("TA".into()), "TA_BUSY", 1),
    ];
    assert_eq!(
        plan(&radeon_890m(), &request, Packing::Split, None),
        Err(Error::UnsupportedBlock {
            counter: "TA_BUSY".into(),
            block: "TA".into()
        })
    );
    let gfx12 = Topology {
        gfx: "gfx1201".into(),
        ..radeon_890m()
    };
    assert_eq!(
        plan(&gfx12, &sqs(1), Packing::Split, None),
        Err(Error::UnsupportedTarget("gfx1201".into()))
    );
    assert!(matches!(
        plan(
            &radeon_890m(),
            &[counter(Block::Sq, "X", 512)],
            Packing::Split,
            None
        ),
        Err(Error::EventOutOfRange { event: 512, .. })
    ));
}

// ------------------------------------------------------------------------------ properties

/// The fewest passes for `sq` SQ and `grbm` GRBM counters, by exhaustive search over the
/// (SQ, GRBM) contents of one pass, whose fit is measured on buffers actually built.
fn brute_force_minimum(
    topology: &Topology,
    frame: Option<usize>,
    sq: usize,
    grbm: usize,
) -> Option<usize> {
    let mut fits = HashMap::new();
    for a in 0..=8 {
        for b in 0..=2 {
            let pass: Vec<_> = sqs(a).into_iter().chain(grbms(b)).collect();
            let largest = largest_dwords(topology, &[Pass { counters: pass }])[0];
            fits.insert((a, b), frame.is_none_or(|f| largest <= f));
        }
    }
    let mut best = vec![vec![None; grbm + 1]; sq + 1];
    best[0][0] = Some(0);
    for s in 0..=sq {
        for g in 0..=grbm {
            if s + g == 0 {
                continue;
            }
            let mut minimum: Option<usize> = None;
            for a in 0..=s.min(8) {
                for b in 0..=g.min(2) {
                    if a + b == 0 || !fits[&(a, b)] {
                        continue;
                    }
                    if let Some(rest) = best[s - a][g - b] {
                        minimum = Some(minimum.map_or(rest + 1, |m: usize| m.min(rest + 1)));
                    }
                }
            }
            best[s][g] = minimum;
        }
    }
    best[sq][grbm]
}

fn request() -> impl Strategy<Value = (Topology, Vec<(String, BaseEvent)>, Option<usize>)> {
    let topology =
        (1_u32..=3, 1_u32..=2, 2_u32..=48).prop_map(|(se, sa, cu)| gfx11("gfx1150", se, sa, cu));
    let counters = prop::collection::vec((any::<bool>(), 0_u32..12), 0..24).prop_map(|picks| {
        picks
            .into_iter()
            .map(|(is_sq, id)| {
                if is_sq {
                    counter(Block::Sq, &format!("SQ{id}"), id)
                } else {
                    counter(Block::Grbm, &format!("GRBM{id}"), id % 4)
                }
            })
            .collect::<Vec<_>>()
    });
    let frame = prop_oneof![
        Just(None),
        Just(Some(DXG_FRAME_DWORDS)),
        (30_usize..1500).prop_map(Some)
    ];
    (topology, counters, frame)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(250))]

    #[test]
    fn split_plans_are_minimal_and_fit(case in request()) {
        let (topology, counters, frame) = case;
        let mut distinct: Vec<(String, BaseEvent)> = Vec::new();
        for c in &counters {
            if !distinct.iter().any(|d| d.0 == c.0) {
                distinct.push(c.clone());
            }
        }
        let sq = distinct.iter().filter(|c| c.1.block == Block::Sq).count();
        let grbm = distinct.len() - sq;
        let minimum = brute_force_minimum(&topology, frame, sq, grbm);
        match plan(&topology, &counters, Packing::Split, frame) {
            Err(error) => {
                prop_assert!(matches!(error, Error::FrameOverflow { .. }), "{error}");
                prop_assert_eq!(minimum, None, "a plan exists");
            }
            Ok(passes) => {
                prop_assert_eq!(Some(passes.len()), minimum);
                // Every counter exactly once, in request order within each pass.
                let mut seen: Vec<&str> = passes.iter().flat_map(|p| &p.counters).map(|c| c.0.as_str()).collect();
                prop_assert_eq!(seen.len(), distinct.len());
                for pass in &passes {
                    let positions: Vec<usize> = pass.counters.iter()
                        .map(|c| distinct.iter().position(|d| d == c).unwrap())
                        .collect();
                    prop_assert!(positions.windows(2).all(|w| w[0] < w[1]));
                    let sq_here = pass.counters.iter().filter(|c| c.1.block == Block::Sq).count();
                    prop_assert!(sq_here <= 8 && pass.counters.len() - sq_here <= 2);
                    prop_assert!(!pass.counters.is_empty());
                }
                seen.sort();
                seen.dedup();
                prop_assert_eq!(seen.len(), distinct.len());
                for dwords in largest_dwords(&topology, &passes) {
                    prop_assert!(frame.is_none_or(|f| dwords <= f), "{dwords} dwords");
                }
                prop_assert_eq!(plan(&topology, &counters, Packing::Split, frame).unwrap(), passes.clone());
                // One pass is accepted exactly when the split needs one.
                let one = plan(&topology, &counters, Packing::OnePass, frame);
                prop_assert_eq!(one.is_ok(), passes.len() <= 1, "{:?}", one);
            }
        }
    }
}
