//! The counter model: truths, the perfmon state machine, and the WSL2 pitfall statistics over
//! many simulated sessions with synthetic time (pure Rust, no clock, no FFI).

use std::ffi::OsStr;

use wslsim_scenario::{Counters, Gpu as GpuKnobs, Scenario};

use crate::gpu::{Seeding, choose_seeding};

use crate::gpu::cost::{DispatchCost, Kernel, copy_ns};
use crate::gpu::counters::{Activity, Geometry, Knobs, PerfBlock, Session, grbm, sq};
use crate::gpu::rng::Rng;

use super::clean;

const MS: u64 = 1_000_000;

fn cost(kernel: &Kernel) -> DispatchCost {
    DispatchCost::of(kernel, &Geometry::radeon_890m(), &GpuKnobs::default())
}

/// The SDK's per-dispatch flow on the perfmon block: start (program, reset, count), the
/// dispatch, the read submission (its CP time counts), then stop.
struct Profiler {
    block: PerfBlock,
    grbm: Vec<u32>,
    sq: Vec<u32>,
}

/// One dispatch's read-back: GRBM values, and SQ values summed over instances.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sample {
    grbm: Vec<u64>,
    sq: Vec<u64>,
}

impl Profiler {
    fn new(seed: u64, counters: &Counters, grbm: &[u32], sq: &[u32]) -> Profiler {
        let session = Session::new(counters, seed, 1);
        Profiler {
            block: PerfBlock::new(Geometry::radeon_890m(), session),
            grbm: grbm.to_vec(),
            sq: sq.to_vec(),
        }
    }

    fn sample(&mut self, start_ns: u64, cost: &DispatchCost) -> Sample {
        let block = &mut self.block;
        for (slot, &select) in self.grbm.iter().enumerate() {
            block.set_grbm_select(slot, select);
        }
        for (slot, &select) in self.sq.iter().enumerate() {
            block.set_sq_select(slot, select);
        }
        block.set_compute_enable(true);
        block.set_state(0);
        block.set_state(1);
        block.count_dispatch(start_ns, cost.duration_ns, &cost.activity);
        block.count_command_processor(GpuKnobs::default().pm4_overhead_ns);
        let sample = Sample {
            grbm: (0..self.grbm.len()).map(|s| block.read_grbm(s)).collect(),
            sq: (0..self.sq.len()).map(|s| block.read_sq_sum(s)).collect(),
        };
        block.set_state(2);
        sample
    }
}

// ---------------------------------------------------------------------------------- truths

#[test]
fn waves_follow_the_grid() {
    assert_eq!(Kernel::linear(262_144, 256).waves(), 8_192);
    assert_eq!(Kernel::linear(1_048_576, 256).waves(), 32_768);
    assert_eq!(Kernel::linear(1_048_576, 1024).waves(), 32_768);
    let wave64 = Kernel {
        wave_size: 64,
        ..Kernel::linear(262_144, 256)
    };
    assert_eq!(wave64.waves(), 4_096);
    // Workgroups not a multiple of the wave: each workgroup rounds up.
    assert_eq!(Kernel::linear(1_000, 100).waves(), 10 * 4);
    // A partial workgroup at the edge launches only the waves its work-items need.
    assert_eq!(Kernel::linear(300, 256).waves(), 8 + 2);
    assert_eq!(Kernel::linear(300, 256).workgroups(), 2);
    let cube = Kernel {
        grid: [64, 64, 4],
        workgroup: [16, 16, 1],
        ..Kernel::linear(1, 1)
    };
    assert_eq!(cube.workgroups(), 4 * 4 * 4);
    assert_eq!(cube.waves(), 64 * 8);
    // When everything divides, it is exactly workgroups × ceil(items / wave).
    for (grid, workgroup, wave) in [(4096, 64, 32), (65_536, 256, 64), (1 << 20, 1024, 32)] {
        let kernel = Kernel {
            wave_size: wave,
            ..Kernel::linear(grid, workgroup)
        };
        assert_eq!(
            kernel.waves(),
            kernel.workgroups() * u64::from(workgroup).div_ceil(u64::from(wave))
        );
    }
}

#[test]
fn invalid_kernels_are_refused() {
    for (kernel, needle) in [
        (Kernel::linear(0, 256), "grid [0, 1, 1]"),
        (Kernel::linear(64, 0), "workgroup [0, 1, 1]"),
        (
            Kernel {
                wave_size: 48,
                ..Kernel::linear(64, 64)
            },
            "wave size 48",
        ),
    ] {
        assert!(kernel.validate().unwrap_err().contains(needle));
    }
    assert!(Kernel::linear(64, 64).validate().is_ok());
}

#[test]
fn the_cost_model_on_the_890m() {
    let geometry = Geometry::radeon_890m();
    assert_eq!(geometry.cus, 16);
    assert_eq!(geometry.clock_mhz, 2900);
    let kernel = Kernel {
        valu_per_wave: 10,
        salu_per_wave: 3,
        ..Kernel::linear(262_144, 256)
    };
    let cost = cost(&kernel);
    assert_eq!(cost.waves, 8_192);
    assert_eq!(cost.cycles_per_wave, 400);
    assert_eq!(cost.shader_cycles, 8_192 * 400 / 16);
    assert_eq!(cost.shader_ns, 70_621); // 204 800 cycles at 2.9 GHz, rounded up
    assert_eq!(cost.duration_ns, 4_000 + 70_621);
    let activity = cost.activity;
    assert_eq!(activity.waves, 8_192);
    assert_eq!(activity.waves32, 8_192);
    assert_eq!(activity.waves64, 0);
    assert_eq!(activity.valu_insts, 81_920);
    assert_eq!(activity.salu_insts, 24_576);
    assert_eq!(activity.wave_cycles, 8_192 * 400);
    assert_eq!(activity.elapsed_cycles, 216_401);
    assert_eq!(activity.gui_active_cycles, 216_401);
    assert_eq!(activity.sq_busy_cycles, 204_800);
    // A descriptor's own cycles_per_wave wins over the default.
    let heavy = DispatchCost::of(
        &Kernel {
            cycles_per_wave: 800,
            ..kernel
        },
        &geometry,
        &GpuKnobs::default(),
    );
    assert_eq!(heavy.shader_cycles, 2 * cost.shader_cycles);
    // An absurd grid saturates instead of overflowing, and its duration is capped.
    let absurd = Kernel {
        grid: [u32::MAX; 3],
        workgroup: [1, 1, 1],
        ..Kernel::linear(1, 1)
    };
    assert_eq!(absurd.workgroups(), u64::MAX);
    assert_eq!(absurd.waves(), u64::MAX);
    let absurd = DispatchCost::of(&absurd, &geometry, &GpuKnobs::default());
    assert_eq!(absurd.duration_ns, crate::gpu::cost::MAX_DISPATCH_NS);
    // SDMA: 1 MiB at 20 GB/s plus 2 µs.
    assert_eq!(copy_ns(1 << 20, &GpuKnobs::default()), 2_000 + 52_429);
    assert_eq!(copy_ns(0, &GpuKnobs::default()), 2_000);
}

#[test]
fn a_clean_window_reads_the_truth_on_every_instance() {
    let kernel = Kernel {
        valu_per_wave: 10,
        salu_per_wave: 3,
        ..Kernel::linear(262_144, 256)
    };
    let cost = cost(&kernel);
    let mut profiler = Profiler::new(
        1,
        &clean(),
        &[grbm::COUNT, grbm::GUI_ACTIVE],
        &[
            sq::WAVES,
            sq::INSTS_VALU,
            sq::INSTS_SALU,
            sq::WAVES_32,
            sq::WAVES_64,
            sq::WAVE_CYCLES,
            sq::CYCLES,
            sq::BUSY_CYCLES,
        ],
    );
    let sample = profiler.sample(0, &cost);
    let window = cost.activity.elapsed_cycles + 2_900; // + the read submission's 1 µs
    assert_eq!(sample.grbm, [window, cost.activity.gui_active_cycles]);
    assert_eq!(
        sample.sq,
        [
            8_192,
            81_920,
            24_576,
            8_192,
            0,
            8_192 * 400,
            8 * window,
            8 * cost.shader_cycles
        ]
    );
    // Split evenly over the 8 WGPs: each reads 1 024 waves.
    for instance in 0..8 {
        assert_eq!(profiler.block.read_sq(0, instance), 1_024);
    }
    assert_eq!(profiler.block.read_sq(0, 8), 0, "no ninth instance");
    // Uneven totals still sum exactly.
    let odd = self::cost(&Kernel::linear(300, 256));
    let sample = profiler.sample(MS, &odd);
    assert_eq!(sample.sq[0], 10);
}

#[test]
fn the_perfmon_state_machine() {
    let cost = cost(&Kernel::linear(4096, 256));
    let mut block = PerfBlock::new(Geometry::radeon_890m(), Session::new(&clean(), 0, 1));
    block.set_sq_select(0, sq::WAVES);
    block.set_grbm_select(0, grbm::COUNT);
    // Counting needs both CP_PERFMON_CNTL = 1 and COMPUTE_PERFCOUNT_ENABLE.
    block.set_state(1);
    assert_eq!(
        block.count_dispatch(0, cost.duration_ns, &cost.activity),
        None
    );
    assert_eq!(block.read_sq_sum(0), 0);
    block.set_compute_enable(true);
    assert!(
        block
            .count_dispatch(0, cost.duration_ns, &cost.activity)
            .is_some()
    );
    assert_eq!(block.read_sq_sum(0), 128);
    // Frozen: values hold, nothing more counts.
    block.set_state(2);
    block.count_dispatch(0, cost.duration_ns, &cost.activity);
    block.count_command_processor(1_000);
    assert_eq!(block.read_sq_sum(0), 128);
    // Counting again accumulates.
    block.set_state(1);
    block.count_dispatch(0, cost.duration_ns, &cost.activity);
    assert_eq!(block.read_sq_sum(0), 256);
    assert_eq!(block.read_grbm(0), 2 * cost.activity.elapsed_cycles);
    // Reset zeroes.
    block.set_state(0);
    assert_eq!((block.read_sq_sum(0), block.read_grbm(0)), (0, 0));
    // Unmodelled select ids count nothing; SQ counters are 32-bit.
    block.set_sq_select(1, 0x1FF);
    block.set_state(1);
    let huge = Activity {
        waves: (1 << 32) * 8 + 8 * 5,
        ..Activity::default()
    };
    block.count_dispatch(0, 1, &huge);
    assert_eq!(block.read_sq_sum(1), 0);
    assert_eq!(block.read_sq(0, 0), 5, "per instance, wrapped to 32 bits");
}

// ---------------------------------------------------------------------- contamination

/// `samples` read-backs of SQ_WAVES for `kernel` in session `seed` (one dispatch each, 10 ms
/// apart), zero read-backs dropped.
fn sq_waves(seed: u64, kernel: &Kernel, samples: usize) -> Vec<u64> {
    let cost = cost(kernel);
    let mut profiler = Profiler::new(seed, &Counters::default(), &[grbm::COUNT], &[sq::WAVES]);
    (0..samples as u64)
        .map(|i| profiler.sample(5_000 * MS + i * 10 * MS, &cost).sq[0])
        .filter(|&value| value != 0)
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The seed: a 262 144 work-item kernel (8 192 waves) reported a minimum SQ_WAVES of exactly
/// 8 192 in each of three configurations, with maxima reaching 185 561. Over 1000 sessions of
/// 12 samples: the minimum of 5 is exact in most sessions, no sample is below the truth, and
/// the session maxima land in the tens to low hundreds of thousands.
#[test]
fn the_small_kernel_floor_is_exact_and_its_maxima_reach_the_hundreds_of_thousands() {
    let small = Kernel::linear(262_144, 256);
    let seeds = 1000;
    let mut floor_exact = 0;
    let mut maxima = Vec::new();
    for seed in 0..seeds {
        let values = sq_waves(seed, &small, 12);
        assert!(
            values.iter().all(|&v| v >= 8_192),
            "seed {seed}: {values:?}"
        );
        if values[..5].iter().min() == Some(&8_192) {
            floor_exact += 1;
        }
        maxima.push(*values.iter().max().unwrap() as f64);
    }
    maxima.sort_by(f64::total_cmp);
    let (p10, p50, p90) = (
        quantile(&maxima, 0.1),
        quantile(&maxima, 0.5),
        quantile(&maxima, 0.9),
    );
    eprintln!(
        "8192-wave kernel over {seeds} sessions: min of 5 == 8192 in {floor_exact}/{seeds}, \
         max of 12: p10 {p10:.0}, median {p50:.0}, p90 {p90:.0} (seed: 185,561)"
    );
    // Three of three configurations exact: a model exact in under 90 % of sessions would
    // rarely manage that; one exact in every session has no tail.
    assert!((900..1000).contains(&floor_exact), "{floor_exact}/{seeds}");
    assert!((80_000.0..=300_000.0).contains(&p50), "{p50}");
    assert!(p10 >= 20_000.0 && p90 <= 600_000.0, "{p10} {p90}");
}

/// The seed: a 1 048 576 work-item kernel (32 768 waves) gave 36 537, 111 929, 162 155,
/// 260 666, 315 977 and 394 836 over six runs, the smallest 11 % above theory, none below.
/// Over 1000 sessions of six runs: rarely exact, never below, spread of that magnitude.
#[test]
fn the_big_kernel_is_rarely_exact_and_spreads_like_the_seed() {
    const SEED_RUNS: [f64; 6] = [
        36_537.0, 111_929.0, 162_155.0, 260_666.0, 315_977.0, 394_836.0,
    ];
    let big = Kernel::linear(1_048_576, 256);
    let seeds = 1000;
    let mut values = Vec::new();
    let mut minima = Vec::new();
    for seed in 0..seeds {
        let runs = sq_waves(seed, &big, 6);
        assert!(runs.iter().all(|&v| v >= 32_768), "seed {seed}: {runs:?}");
        if let Some(&min) = runs.iter().min() {
            minima.push(min as f64 / 32_768.0);
        }
        values.extend(runs.iter().map(|&v| v as f64));
    }
    let exact = values.iter().filter(|&&v| v == 32_768.0).count() as f64 / values.len() as f64;
    let inside = values
        .iter()
        .filter(|&&v| (SEED_RUNS[0]..=SEED_RUNS[5]).contains(&v))
        .count() as f64
        / values.len() as f64;
    values.sort_by(f64::total_cmp);
    minima.sort_by(f64::total_cmp);
    let (p10, p50, p90) = (
        quantile(&values, 0.1),
        quantile(&values, 0.5),
        quantile(&values, 0.9),
    );
    let seed_median = (SEED_RUNS[2] + SEED_RUNS[3]) / 2.0;
    let min_median = quantile(&minima, 0.5);
    eprintln!(
        "32768-wave kernel over {} runs: exact {:.1} %, p10 {p10:.0}, median {p50:.0} (seed \
         {seed_median:.0}), p90 {p90:.0}, inside the seed's range {:.0} %, min of 6 / truth: \
         median {min_median:.2}x (seed 1.11x)",
        values.len(),
        100.0 * exact,
        100.0 * inside
    );
    assert!(exact <= 0.08, "rarely exact: {exact}");
    assert!(
        (0.6 * seed_median..=1.5 * seed_median).contains(&p50),
        "{p50}"
    );
    assert!((35_000.0..=110_000.0).contains(&p10), "{p10}");
    assert!((300_000.0..=700_000.0).contains(&p90), "{p90}");
    assert!(inside >= 0.6, "{inside}");
    assert!((1.0..=3.5).contains(&min_median), "{min_median}");
}

/// The seed's smallest contaminated value of the big kernel is 36 537, 11 % above its 32 768
/// waves: small contamination must be possible. Over 300 sessions (one dispatch each, as
/// unseeded CLI runs are): some value is above the truth by at most 15 %, none below it.
#[test]
fn the_big_kernel_has_a_lower_tail_of_small_contamination() {
    let big = Kernel::linear(1_048_576, 256);
    let values: Vec<u64> = (0..300)
        .map(|seed| sq_waves(seed + 7_000, &big, 1)[0])
        .collect();
    assert!(values.iter().all(|&v| v >= 32_768), "{values:?}");
    let near = values
        .iter()
        .filter(|&&v| v > 32_768 && v as f64 <= 32_768.0 * 1.15)
        .count();
    let mut above: Vec<u64> = values.iter().copied().filter(|&v| v > 32_768).collect();
    above.sort_unstable();
    eprintln!(
        "32768-wave kernel, 300 sessions: {near} within 15 % above the truth, smallest \
         contaminated {:?} (seed 36,537)",
        above.first()
    );
    assert!(near >= 1, "{above:?}");
}

#[test]
fn contamination_grows_with_the_modelled_window_not_with_wall_time() {
    // The same dispatch at very different GPU times gets the same draws from the same seed.
    let kernel = Kernel::linear(262_144, 256);
    let cost = cost(&kernel);
    let mut early = Profiler::new(9, &Counters::default(), &[], &[sq::WAVES]);
    let mut late = Profiler::new(9, &Counters::default(), &[], &[sq::WAVES]);
    for i in 0..50 {
        assert_eq!(
            early.sample(i * MS, &cost),
            late.sample(3_600_000 * MS + i * 97 * MS, &cost)
        );
    }
    // Clean share falls with the window length.
    let share_clean = |items: u32| {
        let cost = self::cost(&Kernel::linear(items, 256));
        let mut clean = 0;
        for seed in 0..2000 {
            let mut profiler = Profiler::new(seed, &Counters::default(), &[], &[sq::WAVES]);
            let value = profiler.sample(0, &cost).sq[0];
            clean += usize::from(value == cost.waves || value == 0);
        }
        clean as f64 / 2000.0
    };
    let (short, medium, long) = (
        share_clean(8_192),
        share_clean(262_144),
        share_clean(1 << 20),
    );
    eprintln!("clean windows: 256 waves {short:.2}, 8192 waves {medium:.2}, 32768 waves {long:.2}");
    assert!(short > medium && medium > long, "{short} {medium} {long}");
}

// ----------------------------------------------------------------------------- GRBM bursts

#[test]
fn grbm_bursts_hit_about_three_percent_of_sessions_at_their_start_only() {
    // Sessions shaped like the seed's: 23 990 dispatches over 354 sessions is 68 each; 4 ms
    // apart, so a 54 ms burst covers 14 (the seed: 191 dispatches over 11 bursts, 17 each).
    let sessions = 5000_u64;
    let period = 4 * MS;
    let dispatches = 68_u64;
    let kernel = Kernel::linear(65_536, 256);
    let cost = cost(&kernel);
    let mut affected_sessions = 0;
    let mut affected_dispatches = 0;
    let mut durations = Vec::new();
    for seed in 0..sessions {
        let mut profiler = Profiler::new(
            seed,
            &Counters::default(),
            &[grbm::COUNT, grbm::GUI_ACTIVE],
            &[sq::WAVES],
        );
        let start = 7_000 * MS + (seed % 13) * MS;
        let zeros: Vec<bool> = (0..dispatches)
            .map(|i| {
                let sample = profiler.sample(start + i * period, &cost);
                // Every GRBM counter fails together; SQ keeps counting.
                assert_eq!(sample.grbm[0] == 0, sample.grbm[1] == 0, "seed {seed}");
                if sample.grbm[0] == 0 {
                    assert!(sample.sq[0] >= cost.waves || sample.sq[0] == 0);
                } else {
                    assert!(sample.grbm[1] <= sample.grbm[0]);
                }
                sample.grbm[0] == 0
            })
            .collect();
        let burst = profiler.block.session().burst_ns();
        let affected = zeros.iter().filter(|&&z| z).count();
        assert_eq!(affected > 0, burst.is_some(), "seed {seed}");
        if let Some(burst) = burst {
            // Contiguous from the very first dispatch, never mid-session, never recurring.
            assert!(
                zeros[..affected].iter().all(|&z| z),
                "seed {seed}: {zeros:?}"
            );
            assert!(zeros[affected..].iter().all(|&z| !z), "seed {seed}");
            assert!((9 * MS..=291 * MS).contains(&burst), "seed {seed}: {burst}");
            assert_eq!(affected as u64, burst.div_ceil(period).min(dispatches));
            affected_sessions += 1;
            affected_dispatches += affected;
            durations.push(burst as f64 / MS as f64);
        }
    }
    let rate = affected_sessions as f64 / sessions as f64;
    let dispatch_rate = affected_dispatches as f64 / (sessions * dispatches) as f64;
    let shortest = durations.iter().copied().fold(f64::INFINITY, f64::min);
    let longest = durations.iter().copied().fold(0.0, f64::max);
    let median_ms = median(&mut durations);
    eprintln!(
        "GRBM zero bursts: {affected_sessions}/{sessions} sessions ({:.2} %), {:.2} % of \
         dispatches, durations {shortest:.1}..{longest:.1} ms, median {median_ms:.1} ms",
        100.0 * rate,
        100.0 * dispatch_rate
    );
    assert!((rate - 0.031).abs() < 0.008, "{rate}");
    assert!((0.005..=0.012).contains(&dispatch_rate), "{dispatch_rate}");
    assert!((40.0..=70.0).contains(&median_ms), "{median_ms}");
    assert!(shortest >= 9.0 && longest <= 291.0);
}

#[test]
fn the_burst_does_not_depend_on_the_counters_requested() {
    let cost = cost(&Kernel::linear(64, 64));
    // Which of a session's dispatches (10 ms apart, past the longest burst) read GRBM as zero.
    let zero_grbm = |seed: u64, grbm: &[u32], sq: &[u32]| {
        let mut profiler = Profiler::new(seed, &Counters::default(), grbm, sq);
        (0..32)
            .map(|i| {
                profiler
                    .sample(i * 10 * MS, &cost)
                    .grbm
                    .iter()
                    .all(|&v| v == 0)
            })
            .collect::<Vec<bool>>()
    };
    let mut bursts = 0;
    for seed in 0..3000 {
        let one = zero_grbm(seed, &[grbm::GUI_ACTIVE], &[]);
        let many = zero_grbm(
            seed,
            &[grbm::COUNT, grbm::GUI_ACTIVE],
            &[sq::WAVES, sq::INSTS_VALU, sq::BUSY_CYCLES],
        );
        assert_eq!(one, many, "seed {seed}");
        bursts += usize::from(one[0]);
    }
    assert!(bursts > 0, "some sessions have a burst");
    // Each node of a machine has its own session.
    let differ = (0..500).any(|seed| {
        Session::new(&Counters::default(), seed, 1).burst_ns()
            != Session::new(&Counters::default(), seed, 2).burst_ns()
    });
    assert!(differ);
}

/// The seed: the rate "does drift over time ... across roughly an hour of continuous profiling
/// it moved between zero and about one session in ten", averaging 3.1 %.
#[test]
fn the_burst_probability_drifts_between_zero_and_a_tenth_around_three_percent() {
    let knobs = Knobs::new(&Counters::default());
    let hours = 2000;
    let mut sum = 0.0;
    let mut samples = 0;
    let mut wide_hours = 0;
    let (mut low, mut high) = (1.0_f64, 0.0_f64);
    for hour in 0..hours {
        let (mut hour_low, mut hour_high) = (1.0_f64, 0.0_f64);
        for minute in 0..60 {
            let p = knobs.grbm_probability_at(f64::from(hour * 3600 + minute * 60));
            assert!((0.0..=0.1 + 1e-12).contains(&p), "{p}");
            sum += p;
            samples += 1;
            hour_low = hour_low.min(p);
            hour_high = hour_high.max(p);
        }
        wide_hours += usize::from(hour_high - hour_low > 0.03);
        low = low.min(hour_low);
        high = high.max(hour_high);
    }
    let mean = sum / f64::from(samples);
    let wide = wide_hours as f64 / f64::from(hours);
    eprintln!(
        "GRBM drift over {hours} h: mean {:.2} %, range {:.2}..{:.2} %, {:.0} % of hours span \
         more than 3 points",
        100.0 * mean,
        100.0 * low,
        100.0 * high,
        100.0 * wide
    );
    assert!((mean - 0.031).abs() < 0.003, "{mean}");
    assert!(low < 0.002 && high > 0.09, "{low} {high}");
    assert!(wide > 0.5, "most hours move: {wide}");
    // Smooth: a minute moves it by little.
    let steps = (0..10_000).map(|m| {
        let t = f64::from(m) * 60.0;
        (knobs.grbm_probability_at(t + 60.0) - knobs.grbm_probability_at(t)).abs()
    });
    assert!(steps.fold(0.0, f64::max) < 0.02);
    // No drift when disabled or when the peak does not exceed the mean.
    for counters in [
        Counters {
            grbm_drift_minutes: 0.0,
            ..Counters::default()
        },
        Counters {
            grbm_zero_peak_probability: 0.02,
            ..Counters::default()
        },
    ] {
        let knobs = Knobs::new(&counters);
        assert!((0..500).all(|m| knobs.grbm_probability_at(f64::from(m) * 97.0) == 0.031));
    }
}

/// Affected sessions "arrive in clusters rather than independently": unpinned sessions opened
/// one every 10 s of wall-clock time, each with its own seed, counted per 10 minutes, are
/// over-dispersed (variance well above a binomial's), and the same moment gives every
/// process the same probability.
#[test]
fn affected_sessions_cluster_in_wall_clock_time() {
    let counters = Counters::default();
    let buckets = 3000_u64; // 500 h
    let per_bucket = 60_u64;
    let mut counts = Vec::new();
    for bucket in 0..buckets {
        let affected = (0..per_bucket)
            .filter(|&i| {
                let time_ns = u128::from((bucket * per_bucket + i) * 10) * 1_000_000_000;
                let seeding = Seeding::unpinned(1000 + i as u32, time_ns);
                Session::at(&counters, seeding.seed, 1, seeding.drift_time_s)
                    .burst_ns()
                    .is_some()
            })
            .count();
        counts.push(affected as f64);
    }
    let n = counts.len() as f64;
    let mean = counts.iter().sum::<f64>() / n;
    let variance = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let rate = mean / per_bucket as f64;
    let binomial = per_bucket as f64 * rate * (1.0 - rate);
    let dispersion = variance / binomial;
    eprintln!(
        "clustered sessions: rate {:.2} %, dispersion {dispersion:.2} (independent: 1)",
        100.0 * rate
    );
    assert!((rate - 0.031).abs() < 0.005, "{rate}");
    assert!(dispersion > 1.5, "{dispersion}");
    let moment = Seeding::unpinned(7, 5_000_000_000_000_000_000);
    let other = Seeding::unpinned(8, 5_000_000_000_000_000_000);
    assert_ne!(moment.seed, other.seed);
    assert_eq!(
        Session::at(&counters, moment.seed, 1, moment.drift_time_s).burst_probability(),
        Session::at(&counters, other.seed, 1, other.drift_time_s).burst_probability()
    );
}

/// `WSLSIM_SEED` pins everything; so does a scenario's `seed`; without either each process
/// draws its own seed from pid and time.
#[test]
fn the_seeding_rule() {
    let scenario = Scenario::default();
    let given = Scenario {
        seed: 99,
        seed_given: true,
        ..Scenario::default()
    };
    let never = || -> (u32, u128) { panic!("a pinned seed needs no entropy") };
    let env = Seeding::pinned(42);
    assert_eq!(
        choose_seeding(Some(OsStr::new("42")), &scenario, never),
        env
    );
    assert_eq!(choose_seeding(Some(OsStr::new("0x2a")), &given, never), env);
    assert_eq!(choose_seeding(None, &given, never), Seeding::pinned(99));
    assert_eq!(
        choose_seeding(Some(OsStr::new("nope")), &given, never),
        Seeding::pinned(99)
    );
    // A pinned seed's drift time is fixed, so its session is the same every run.
    assert_eq!(Seeding::pinned(42), Seeding::pinned(42));
    let a = Session::new(&Counters::default(), 42, 1);
    let b = Session::new(&Counters::default(), 42, 1);
    assert_eq!(
        (a.burst_ns(), a.burst_probability()),
        (b.burst_ns(), b.burst_probability())
    );
    // Unpinned: pid and time make the seed; the wall clock is the drift time.
    let unpinned = choose_seeding(None, &scenario, || (1234, 1_700_000_000_123_456_789));
    assert!(!unpinned.pinned);
    assert!((unpinned.drift_time_s - 1_700_000_000.123).abs() < 1e-3);
    let seeds: std::collections::BTreeSet<u64> = (0..1000_u32)
        .flat_map(|pid| {
            [
                Seeding::unpinned(pid, 1_700_000_000_000_000_000).seed,
                Seeding::unpinned(pid, 1_700_000_000_000_000_001).seed,
            ]
        })
        .collect();
    assert_eq!(seeds.len(), 2000, "every (pid, time) its own seed");
    // Pinned seeds sample the drift uniformly: over many seeds, the time-averaged rate.
    let affected = (0..20_000)
        .filter(|&seed| {
            Session::new(&Counters::default(), seed, 1)
                .burst_ns()
                .is_some()
        })
        .count();
    let rate = affected as f64 / 20_000.0;
    assert!((rate - 0.031).abs() < 0.005, "{rate}");
}

#[test]
fn the_session_probability_knob_is_honoured() {
    let always = Counters {
        grbm_zero_session_probability: 1.0,
        ..Counters::default()
    };
    let never = Counters {
        grbm_zero_session_probability: 0.0,
        ..Counters::default()
    };
    for seed in 0..200 {
        assert!(Session::new(&always, seed, 1).burst_ns().is_some());
        assert!(Session::new(&never, seed, 1).burst_ns().is_none());
    }
}

// ---------------------------------------------------------------------------- SQ zeros

#[test]
fn sq_zero_read_backs_are_rare_isolated_and_spare_grbm() {
    let cost = cost(&Kernel::linear(4096, 256));
    let counters = Counters {
        grbm_zero_session_probability: 0.0,
        ..Counters::default()
    };
    let mut zeros = 0;
    let total = 200_000;
    for seed in 0..200 {
        let mut profiler = Profiler::new(seed, &counters, &[grbm::COUNT], &[sq::WAVES]);
        for i in 0..1000 {
            let sample = profiler.sample(i * MS, &cost);
            if sample.sq[0] == 0 {
                zeros += 1;
                assert!(sample.grbm[0] > 0, "GRBM unaffected");
            }
        }
    }
    let rate = zeros as f64 / f64::from(total);
    eprintln!(
        "SQ zero read-backs: {zeros}/{total} dispatches ({:.3} %)",
        100.0 * rate
    );
    assert!((0.0006..=0.0014).contains(&rate), "{rate}");
}

// ----------------------------------------------------------------------------- determinism

#[test]
fn the_same_seed_gives_the_same_values() {
    let cost = cost(&Kernel::linear(262_144, 256));
    let always = Counters {
        grbm_zero_session_probability: 0.5,
        ..Counters::default()
    };
    let run = |seed| {
        let mut profiler = Profiler::new(
            seed,
            &always,
            &[grbm::COUNT, grbm::GUI_ACTIVE],
            &[sq::WAVES, sq::INSTS_VALU, sq::BUSY_CYCLES],
        );
        (0..200)
            .map(|i| profiler.sample(i * 2 * MS, &cost))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

#[test]
fn the_rng_is_deterministic_and_sane() {
    let mut a = Rng::new(5);
    let mut b = Rng::new(5);
    let draws: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
    assert_eq!(draws, (0..100).map(|_| b.next_u64()).collect::<Vec<_>>());
    assert_ne!(Rng::stream(5, 1).next_u64(), Rng::stream(5, 2).next_u64());
    let mut rng = Rng::new(1);
    let n = 200_000;
    let mean = (0..n).map(|_| rng.uniform()).sum::<f64>() / f64::from(n);
    assert!((mean - 0.5).abs() < 0.01, "{mean}");
    for lambda in [0.5, 3.0, 100.0] {
        let mean = (0..n).map(|_| rng.poisson(lambda) as f64).sum::<f64>() / f64::from(n);
        assert!((mean / lambda - 1.0).abs() < 0.02, "{lambda}: {mean}");
    }
    let mut normals: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    assert!(median(&mut normals).abs() < 0.02);
    assert_eq!(rng.poisson(0.0), 0);
    assert_eq!(rng.poisson(f64::NAN), 0);
}
