//! The GPU clock's drift and the run-to-run jitter of dispatch and copy durations.

use wslsim_scenario::Scenario;

use crate::gpu::NodeGpu;
use crate::gpu::clock::{DRIFT_PPB, GpuClock};
use crate::gpu::cost::{JITTER, Kernel, jittered};
use crate::gpu::rng::Rng;

#[test]
fn the_gpu_clock_runs_2_2_ppm_slow() {
    assert_eq!(DRIFT_PPB, -2_200);
    let clock = GpuClock::new(1_000_000_000_000, 0);
    // One second of CLOCK_MONOTONIC is 99 999 780 ticks: 999.9978 MHz in 10 ns units.
    for m in [0, 3_600_000_000_000_u64, 86_400_000_000_000] {
        let ticks = clock.ticks_at(m + 1_000_000_000) - clock.ticks_at(m);
        assert!((99_999_779..=99_999_781).contains(&ticks), "{ticks} at {m}");
    }
    // The documented rule, and its inverse: the first nanosecond of each tick.
    for m in [0_u64, 17, 1_234_567_891, 98_765_432_109_876] {
        let expected = (m + 1_000_000_000_000 - (m * 2_200).div_ceil(1_000_000_000)) / 10;
        let tick = clock.ticks_at(m);
        assert_eq!(tick, expected, "at {m}");
        let begins = clock.monotonic_at(tick);
        assert!(
            begins <= m && clock.ticks_at(begins) == tick,
            "{begins} for {m}"
        );
        assert!(begins == 0 || clock.ticks_at(begins - 1) < tick);
        assert!(clock.ticks_at_or_after(m) >= tick);
    }
    // Without drift the clock is the old one.
    let exact = GpuClock::with_drift(0, 25_000, 0);
    assert_eq!(exact.ticks_at(4_000_000), 100_000);
    assert_eq!(exact.monotonic_at(100_000), 4_000_000);
}

#[test]
fn jitter_stays_within_a_few_percent_and_follows_its_draws() {
    let mut low = u64::MAX;
    let mut high = 0;
    for stream in 0..2_000 {
        let ns = jittered(74_621, &mut Rng::stream(7, stream));
        assert_eq!(ns, jittered(74_621, &mut Rng::stream(7, stream)));
        low = low.min(ns);
        high = high.max(ns);
    }
    let bound = (74_621.0 * JITTER).ceil() as u64;
    assert!(
        low >= 74_621 - bound && high <= 74_621 + bound,
        "[{low}, {high}]"
    );
    assert!(high - low > bound, "too little spread: [{low}, {high}]");
    assert_eq!(jittered(0, &mut Rng::new(1)), 1);
}

/// The durations of `count` dispatches and copies on a node seeded with `seed`.
fn durations(seed: u64, count: usize) -> Vec<u64> {
    let node = NodeGpu::new(&Scenario::default(), 1, seed).unwrap();
    let kernel = Kernel::linear(4_096, 256);
    let mut out = Vec::new();
    for _ in 0..count {
        let timing = node.dispatch(&kernel, || Ok(())).unwrap().timing;
        out.push(timing.end_tick - timing.start_tick);
        let timing = node.copy(1 << 16, || {});
        out.push(timing.end_tick - timing.start_tick);
    }
    out
}

#[test]
fn durations_jitter_run_to_run_deterministically_per_seed() {
    // A duration is at least its jittered model; it is longer only when the host overslept,
    // so compare the minimum of several attempts (the model) rather than one run.
    let model = |seed| {
        (0..3)
            .map(|_| durations(seed, 6))
            .reduce(|a, b| a.iter().zip(&b).map(|(x, y)| *x.min(y)).collect())
            .unwrap()
    };
    let first = model(11);
    assert_eq!(first, model(11), "the same seed gives the same durations");
    assert_ne!(first, model(12), "another seed gives other durations");
    let dispatches: Vec<u64> = first.iter().step_by(2).copied().collect();
    assert!(
        dispatches.windows(2).any(|w| w[0] != w[1]),
        "dispatches of one run all took {dispatches:?}"
    );
}

#[test]
fn a_scaled_cost_scales_duration_and_the_cycles_counters_see() {
    use crate::gpu::counters::Geometry;
    let scenario = Scenario::default();
    let geometry = Geometry::from_node(&scenario.nodes[0]);
    let base =
        crate::gpu::cost::DispatchCost::of(&Kernel::linear(262_144, 256), &geometry, &scenario.gpu);
    assert_eq!(base.scaled(1.0), base);
    assert_eq!(base.scaled(f64::NAN), base);
    let slow = base.scaled(1.2);
    let ratio = slow.duration_ns as f64 / base.duration_ns as f64;
    assert!((ratio - 1.2).abs() < 1e-4, "{ratio}");
    let cycles = slow.activity.elapsed_cycles as f64 / base.activity.elapsed_cycles as f64;
    assert!((cycles - 1.2).abs() < 1e-3, "{cycles}");
    assert_eq!(slow.waves, base.waves);
    assert_eq!(slow.activity.waves, base.activity.waves);
    let fast = base.scaled(0.5);
    assert!(fast.duration_ns < base.duration_ns);
}
