//! Counter hygiene with the real built-in definitions of the simulated Radeon 890M: which
//! counters a bad read spoils, and the run-to-run estimate's properties.

use pmc_dxg::defs::{AgentCounters, BUILT_IN_YAML, Definitions};
use pmc_dxg::expr::{Dim, Input};
use pmc_dxg::hygiene::{
    CounterPrograms, Discard, DispatchFacts, Outcome, SQ_WAVES, contaminated, estimate,
    unconfirmed_zero,
};
use pmc_dxg::pm4::{CounterValues, Instance};
use pmc_dxg::{Block, Error};
use proptest::prelude::*;
use wslsim_scenario::GpuNode;

mod common;
use common::agent_from;

fn radeon_890m(defs: &Definitions) -> AgentCounters {
    defs.for_agent(&agent_from(&GpuNode::radeon_890m(), "gfx1150"))
}

fn built_in() -> AgentCounters {
    radeon_890m(&Definitions::built_in().unwrap())
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|&n| n.to_owned()).collect()
}

/// A read-back of every base counter `programs` needs, element k of each from the instance its
/// shape puts there, valued `value(name, k)`.
fn read_back(
    agent: &AgentCounters,
    programs: &CounterPrograms,
    value: impl Fn(&str, usize) -> u64,
) -> Vec<CounterValues> {
    programs
        .base_counters()
        .into_iter()
        .map(|(name, event)| {
            let input: Input = agent.inputs(&name).unwrap()[0].clone();
            let n = input.shape.len();
            let instances = (0..n)
                .map(|k| {
                    let (mut rest, mut at) = (
                        k,
                        Instance {
                            se: 0,
                            sa: 0,
                            wgp: 0,
                        },
                    );
                    for &(dim, extent) in input.shape.dims() {
                        let c = (rest % extent as usize) as u32;
                        rest /= extent as usize;
                        match dim {
                            Dim::ShaderEngine => at.se = c,
                            Dim::ShaderArray => at.sa = c,
                            Dim::Wgp => at.wgp = c,
                            _ => {}
                        }
                    }
                    at
                })
                .collect();
            CounterValues {
                values: (0..n).map(|k| value(&name, k)).collect(),
                name,
                event,
                instances,
            }
        })
        .collect()
}

const RAN: DispatchFacts = DispatchFacts {
    ran: true,
    in_warmup: false,
};

fn values(outcomes: &[Outcome]) -> Vec<(&str, Result<f64, Discard>)> {
    outcomes
        .iter()
        .map(|o| (o.name.as_str(), o.value))
        .collect()
}

const REQUESTED: [&str; 6] = [
    "GPU_UTIL",
    "SQ_WAVES",
    "MeanOccupancyPerCU",
    "GRBM_COUNT",
    "MeanOccupancyPerActiveCU",
    "CU_NUM",
];

/// SQ_WAVES 10 + k on instance k, every other SQ counter 1000 + k, GRBM_COUNT 2000,
/// GRBM_GUI_ACTIVE 1500, or every GRBM counter 0 with `grbm_zero`.
fn model(grbm_zero: bool) -> impl Fn(&str, usize) -> u64 {
    move |name, k| match name {
        SQ_WAVES => 10 + k as u64,
        _ if grbm_zero && name.starts_with("GRBM_") => 0,
        "GRBM_COUNT" => 2000,
        "GRBM_GUI_ACTIVE" => 1500,
        _ => 1000 + k as u64,
    }
}

#[test]
fn sq_waves_sums_over_its_eight_instances() {
    let agent = built_in();
    let programs = CounterPrograms::new(&agent, &names(&REQUESTED)).unwrap();
    assert_eq!(programs.names().collect::<Vec<_>>(), REQUESTED);
    assert_eq!(agent.inputs(SQ_WAVES).unwrap()[0].shape.len(), 8);
    let decoded = read_back(&agent, &programs, model(false));
    let got = programs.evaluate(&decoded, RAN).unwrap();
    let waves: f64 = (10..18).map(f64::from).sum();
    let wave_cycles: f64 = (1000..1008).map(f64::from).sum();
    assert_eq!(
        values(&got),
        [
            ("GPU_UTIL", Ok(75.0)),
            (SQ_WAVES, Ok(waves)),
            ("MeanOccupancyPerCU", Ok(wave_cycles / 1500.0 / 16.0)),
            ("GRBM_COUNT", Ok(2000.0)),
            ("MeanOccupancyPerActiveCU", Ok(1.0)),
            ("CU_NUM", Ok(16.0)),
        ]
    );
}

#[test]
fn a_grbm_zero_burst_discards_what_depends_on_grbm_only() {
    let agent = built_in();
    let programs = CounterPrograms::new(&agent, &names(&REQUESTED)).unwrap();
    let decoded = read_back(&agent, &programs, model(true));
    let got = programs.evaluate(&decoded, RAN).unwrap();
    let waves: f64 = (10..18).map(f64::from).sum();
    assert_eq!(
        values(&got),
        [
            ("GPU_UTIL", Err(Discard::GrbmZero)),
            (SQ_WAVES, Ok(waves)),
            ("MeanOccupancyPerCU", Err(Discard::GrbmZero)),
            ("GRBM_COUNT", Err(Discard::GrbmZero)),
            ("MeanOccupancyPerActiveCU", Ok(1.0)),
            ("CU_NUM", Ok(16.0)),
        ]
    );
    // SQ_WAVES above 0 is proof enough that the dispatch ran.
    let idle = DispatchFacts::default();
    assert_eq!(programs.evaluate(&decoded, idle).unwrap(), got);
}

#[test]
fn an_sq_zero_discards_what_depends_on_sq_waves() {
    let agent = built_in();
    let list = [
        "Wavefronts",
        "VALUInsts",
        "GPU_UTIL",
        "MeanOccupancyPerActiveCU",
    ];
    let programs = CounterPrograms::new(&agent, &names(&list)).unwrap();
    let zero_waves = |name: &str, k| {
        if name == SQ_WAVES {
            0
        } else {
            model(false)(name, k)
        }
    };
    let decoded = read_back(&agent, &programs, zero_waves);
    let got = programs.evaluate(&decoded, RAN).unwrap();
    assert_eq!(
        values(&got),
        [
            ("Wavefronts", Err(Discard::SqZero)),
            ("VALUInsts", Err(Discard::SqZeroInput)),
            ("GPU_UTIL", Ok(75.0)),
            ("MeanOccupancyPerActiveCU", Ok(1.0)),
        ]
    );
    // Without a duration above 0 nothing says it ran: a genuine zero.
    let got = programs
        .evaluate(&decoded, DispatchFacts::default())
        .unwrap();
    assert_eq!(got[0].value, Ok(0.0));
    assert_eq!(got[1].value, Ok(0.0), "x/0 is 0 in the counter language");
}

#[test]
fn warmup_discards_every_counter() {
    let agent = built_in();
    let programs = CounterPrograms::new(&agent, &names(&REQUESTED)).unwrap();
    let decoded = read_back(&agent, &programs, model(false));
    let facts = DispatchFacts {
        ran: true,
        in_warmup: true,
    };
    let got = programs.evaluate(&decoded, facts).unwrap();
    assert_eq!(got.len(), REQUESTED.len());
    assert!(
        got.iter().all(|o| o.value == Err(Discard::Warmup)),
        "{got:?}"
    );
}

#[test]
fn bad_requests_and_read_backs_are_errors() {
    let agent = built_in();
    let err = CounterPrograms::new(&agent, &names(&["SQ_WAVES", "NO_SUCH_COUNTER"])).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownCounter { name, .. } if name == "NO_SUCH_COUNTER"),
        "{err:?}"
    );

    let programs = CounterPrograms::new(&agent, &names(&["GPU_UTIL", SQ_WAVES])).unwrap();
    let mut decoded = read_back(&agent, &programs, model(false));
    // Missing GRBM_COUNT: refused even though the warm-up would discard everything.
    decoded.retain(|c| c.name != "GRBM_COUNT");
    let warm = DispatchFacts {
        ran: true,
        in_warmup: true,
    };
    let err = programs.evaluate(&decoded, warm).unwrap_err();
    assert!(
        matches!(&err, Error::Evaluate { counter, .. } if counter == "GRBM_COUNT"),
        "{err:?}"
    );
    // SQ_WAVES with one value too few.
    let mut decoded = read_back(&agent, &programs, model(false));
    let waves = decoded.iter_mut().find(|c| c.name == SQ_WAVES).unwrap();
    waves.values.pop();
    waves.instances.pop();
    assert!(programs.evaluate(&decoded, RAN).is_err());
}

#[test]
fn base_counters_are_the_distinct_inputs_in_first_use_order() {
    let agent = built_in();
    let list = ["GPU_UTIL", "GPUBusy", "Wavefronts", "GRBM_COUNT", "CU_NUM"];
    let programs = CounterPrograms::new(&agent, &names(&list)).unwrap();
    let got: Vec<(String, Block)> = programs
        .base_counters()
        .into_iter()
        .map(|(n, e)| (n, e.block))
        .collect();
    assert_eq!(
        got,
        [
            ("GRBM_GUI_ACTIVE".to_owned(), Block::Grbm),
            ("GRBM_COUNT".to_owned(), Block::Grbm),
            (SQ_WAVES.to_owned(), Block::Sq),
        ]
    );
}

#[test]
fn a_value_that_is_not_finite_is_discarded() {
    // Twenty GRBM_COUNT factors of about 1.8e19 overflow a double.
    let product = vec!["GRBM_COUNT"; 20].join("*");
    let yaml = format!(
        "{BUILT_IN_YAML}  - name: HUGE\n    description: overflows\n    properties: []\n    \
         definitions:\n    - architectures: [gfx11]\n      expression: {product}\n"
    );
    let defs = Definitions::parse("test", &yaml).unwrap();
    let agent = radeon_890m(&defs);
    let programs = CounterPrograms::new(&agent, &names(&["HUGE", "GRBM_COUNT"])).unwrap();
    let decoded = read_back(&agent, &programs, |_, _| u64::MAX);
    let got = programs.evaluate(&decoded, RAN).unwrap();
    assert_eq!(
        values(&got),
        [
            ("HUGE", Err(Discard::NotFinite)),
            ("GRBM_COUNT", Ok(u64::MAX as f64))
        ]
    );
}

/// A sample of one run: mostly counts, some zeros, some already discarded.
fn sample() -> impl Strategy<Value = Result<f64, Discard>> {
    prop_oneof![
        4 => (1_u64..2_000_000).prop_map(|v| Ok(v as f64)),
        2 => Just(Ok(0.0)),
        1 => prop::sample::select(Discard::ALL.to_vec()).prop_map(Err),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_estimate_is_the_smallest_non_zero_usable_value(
        samples in prop::collection::vec(sample(), 0..12),
    ) {
        let e = estimate(&samples);
        let usable: Vec<f64> = samples.iter().filter_map(|s| s.as_ref().ok().copied()).collect();
        let non_zero: Vec<f64> = usable.iter().copied().filter(|&v| v != 0.0).collect();
        prop_assert_eq!(e.runs, samples.len());
        prop_assert_eq!(e.runs_used + e.discarded.len(), samples.len());
        if let Some(&first) = non_zero.first() {
            let est = e.estimate.unwrap();
            prop_assert!(non_zero.iter().all(|&v| est <= v));
            prop_assert!(non_zero.contains(&est));
            prop_assert_eq!(e.min, Some(est));
            prop_assert!(e.max.unwrap() >= first);
            prop_assert_eq!(e.runs_used, non_zero.len());
        } else if !usable.is_empty() {
            prop_assert_eq!(e.estimate, Some(0.0));
            prop_assert_eq!(e.runs_used, usable.len());
            prop_assert_eq!(e.spread_percent, None);
        } else if samples.iter().all(|s| *s == Err(Discard::SqZero)) && !samples.is_empty() {
            // Nothing usable but zeros read with SQ_WAVES: that 0, unconfirmed.
            prop_assert_eq!(e.estimate, Some(0.0));
            prop_assert!(unconfirmed_zero(&e));
            prop_assert_eq!(e.runs_used, 0);
        } else {
            prop_assert_eq!(e.estimate, None);
            prop_assert_eq!((e.min, e.max, e.spread_percent), (None, None, None));
            prop_assert_eq!(e.runs_used, 0);
        }
        prop_assert_eq!(
            unconfirmed_zero(&e),
            !samples.is_empty() && samples.iter().all(|s| *s == Err(Discard::SqZero))
        );
        prop_assert!(e.spread_percent.is_none_or(|s| s >= 0.0));
        prop_assert!(!contaminated(&e) || e.runs_used >= 2);
    }

    #[test]
    fn zeros_are_set_aside_only_beside_a_non_zero_run(
        samples in prop::collection::vec(sample(), 0..12),
    ) {
        let e = estimate(&samples);
        let zeros = samples.iter().filter(|s| **s == Ok(0.0)).count();
        let any_non_zero = samples.iter().any(|s| matches!(s, Ok(v) if *v != 0.0));
        // Zeros this estimate set aside, not samples that came discarded as such.
        let isolated = e
            .discarded
            .iter()
            .filter(|(run, _)| samples[*run].is_ok())
            .count();
        let already = samples.iter().filter(|s| matches!(s, Err(d) if d.is_zero_read())).count();
        prop_assert_eq!(isolated, if any_non_zero { zeros } else { 0 });
        prop_assert_eq!(e.zeros_discarded, isolated + already);
        for (run, d) in &e.discarded {
            match &samples[*run] {
                Err(given) => prop_assert_eq!(given, d),
                Ok(v) => {
                    prop_assert_eq!(*v, 0.0);
                    prop_assert_eq!(d, &Discard::IsolatedZero);
                }
            }
        }
        prop_assert!(e.discarded.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn every_run_discarded_gives_no_estimate_but_an_sq_zero_read_in_each(
        kinds in prop::collection::vec(prop::sample::select(Discard::ALL.to_vec()), 1..8),
    ) {
        let samples: Vec<Result<f64, Discard>> = kinds.iter().copied().map(Err).collect();
        let e = estimate(&samples);
        if kinds.iter().all(|k| *k == Discard::SqZero) {
            prop_assert_eq!((e.estimate, e.min, e.max), (Some(0.0), Some(0.0), Some(0.0)));
            prop_assert!(unconfirmed_zero(&e));
        } else {
            prop_assert_eq!(e.estimate, None);
        }
        prop_assert_eq!(e.runs_used, 0);
        prop_assert_eq!(e.discarded.len(), kinds.len());
        prop_assert!(!contaminated(&e));
    }

    #[test]
    fn all_zero_runs_are_a_genuine_zero(zeros in 1_usize..8, discarded in 0_usize..4) {
        let mut samples = vec![Ok(0.0); zeros];
        samples.extend(std::iter::repeat_n(Err(Discard::Warmup), discarded));
        let e = estimate(&samples);
        prop_assert_eq!(e.estimate, Some(0.0));
        prop_assert_eq!((e.runs_used, e.zeros_discarded), (zeros, 0));
    }
}
