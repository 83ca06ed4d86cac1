//! Converting a GPU agent's wall-clock ticks to the system timestamp domain (`CLOCK_MONOTONIC`
//! ns), with periodic recalibration as ROCr's `GpuAgent::TranslateTime` / `SyncClocks` do.
//!
//! The agent's clock runs at a nominal `WallClockKHz` but drifts (the simulated 890M's runs
//! 2.2 ppm slow). The runtime samples (GPU tick, system ns) pairs through
//! `hsaKmtGetClockCounters`: each calibration takes [`SAMPLES`] pairs and fits the offset to the
//! tightest one (the pair whose system time lies closest to the start of its tick). A tick is
//! converted from the latest calibration at or before it at the nominal rate, so between
//! calibrations the system timeline advances at the drifting clock's rate (999.9978 MHz
//! against `CLOCK_MONOTONIC`), and the offset is refitted at [`RECALIBRATIONS_PER_S`] (16 Hz,
//! ROCr's rate): a conversion more than one period past the latest calibration takes a new one
//! first. The error is then bounded by one period's drift (62.5 ms × 2.2 ppm = 137.5 ns) plus
//! a tick (10 ns): the seed's "within 175 ns". A tick that lies in a gap longer than a period
//! between two calibrations is interpolated between them (the fitted slope).

/// Clock pairs taken per calibration.
pub const SAMPLES: usize = 4;
/// Calibrations per second of GPU time at most (one per period while ticks are converted).
pub const RECALIBRATIONS_PER_S: u64 = 16;
/// Calibrations kept (older ones are forgotten; a tick before the oldest kept one is
/// extrapolated from it).
pub const HISTORY: usize = 4096;

/// One fitted calibration point: GPU tick and the system ns at which it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub tick: u64,
    pub ns: u64,
}

/// The calibrations of one GPU agent.
#[derive(Clone, Debug)]
pub struct Calibration {
    hz: u64,
    period_ticks: u64,
    /// Increasing in tick.
    anchors: Vec<Anchor>,
}

impl Calibration {
    /// The first calibration of a clock of nominal `hz` (0 is taken as 100 MHz), from
    /// `sample` (one (GPU tick, system ns) pair per call).
    pub fn new(hz: u64, sample: &mut dyn FnMut() -> (u64, u64)) -> Calibration {
        let hz = if hz == 0 { 100_000_000 } else { hz };
        let mut calibration = Calibration {
            hz,
            period_ticks: (hz / RECALIBRATIONS_PER_S).max(1),
            anchors: Vec::new(),
        };
        calibration.calibrate(sample);
        calibration
    }

    /// The calibrations kept, oldest first.
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// Takes [`SAMPLES`] pairs and appends the fitted anchor: the offset of the pair with the
    /// smallest `ns − tick × 10⁹/hz` (system time nearest the start of its tick).
    pub fn calibrate(&mut self, sample: &mut dyn FnMut() -> (u64, u64)) {
        let mut best: Option<(i128, (u64, u64))> = None;
        for _ in 0..SAMPLES {
            let (tick, ns) = sample();
            let residual = i128::from(ns) - self.nominal_ns(tick);
            if best.is_none_or(|(r, _)| residual < r) {
                best = Some((residual, (tick, ns)));
            }
        }
        let Some((residual, (tick, _))) = best else {
            return;
        };
        let ns = (self.nominal_ns(tick) + residual).clamp(0, i128::from(u64::MAX)) as u64;
        if let Some(last) = self.anchors.last()
            && tick <= last.tick
        {
            return; // the clock did not advance: nothing new to fit
        }
        if self.anchors.len() >= HISTORY {
            self.anchors.remove(0);
        }
        self.anchors.push(Anchor { tick, ns });
    }

    fn nominal_ns(&self, tick: u64) -> i128 {
        i128::from(tick) * 1_000_000_000 / i128::from(self.hz)
    }

    /// Converts `tick` to system ns, recalibrating first (through `sample`) when it is more
    /// than one period past the latest calibration.
    pub fn convert(&mut self, tick: u64, sample: &mut dyn FnMut() -> (u64, u64)) -> u64 {
        let latest = self.anchors.last().map_or(0, |a| a.tick);
        if self.anchors.is_empty() || tick > latest.saturating_add(self.period_ticks) {
            self.calibrate(sample);
        }
        self.translate(tick)
    }

    /// Converts `tick` with the calibrations taken so far (no sampling).
    pub fn translate(&self, tick: u64) -> u64 {
        let Some(&first) = self.anchors.first() else {
            return (self.nominal_ns(tick).clamp(0, i128::from(u64::MAX))) as u64;
        };
        let index = self.anchors.partition_point(|a| a.tick <= tick);
        let base = if index == 0 {
            first
        } else {
            self.anchors[index - 1]
        };
        let delta = i128::from(tick) - i128::from(base.tick);
        let ns = match self.anchors.get(index) {
            // A gap of more than a period between two calibrations: the fitted slope.
            Some(next) if index > 0 && next.tick - base.tick > self.period_ticks => {
                i128::from(base.ns)
                    + delta * (i128::from(next.ns) - i128::from(base.ns))
                        / i128::from(next.tick - base.tick)
            }
            _ => i128::from(base.ns) + delta * 1_000_000_000 / i128::from(self.hz),
        };
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic GPU clock: 100 MHz, 2.2 ppm slow, 10¹² ns ahead; `sample` at host time `m`.
    fn ticks(m: u64) -> u64 {
        (m + 1_000_000_000_000 - (m * 2_200).div_ceil(1_000_000_000)) / 10
    }

    /// The host ns at which `tick` begins.
    fn begins(tick: u64) -> u64 {
        let mut m = ((i128::from(tick) * 10 - 1_000_000_000_000) * 1_000_000_000
            / (1_000_000_000 - 2_200)) as u64;
        while m > 0 && ticks(m - 1) >= tick {
            m -= 1;
        }
        while ticks(m) < tick {
            m += 1;
        }
        m
    }

    /// Samples at host times `*now`, advancing 37 ns per sample (a call's latency).
    fn sampler(now: &mut u64) -> impl FnMut() -> (u64, u64) + '_ {
        move || {
            *now += 37;
            (ticks(*now), *now)
        }
    }

    #[test]
    fn conversions_track_the_drifting_clock_within_175_ns() {
        let mut now = 5_000_000_000_u64;
        let mut calibration = Calibration::new(100_000_000, &mut sampler(&mut now));
        let mut worst = 0;
        // 20 s of conversions at irregular intervals (1 to 9 ms), each of the tick just read.
        let mut step = 1;
        for _ in 0..4_000 {
            step = step * 7 % 9 + 1;
            now += step * 1_000_000;
            let tick = ticks(now);
            let ns = calibration.convert(tick, &mut sampler(&mut now));
            worst = worst.max(ns.abs_diff(begins(tick)));
        }
        assert!(worst <= 175, "{worst} ns");
        assert!(
            worst >= 100,
            "{worst} ns: the drift should show between recalibrations"
        );
        // Old ticks convert from the calibrations of their time, not the newest one.
        let old = ticks(6_000_000_000);
        assert!(calibration.translate(old).abs_diff(begins(old)) <= 175);
    }

    #[test]
    fn between_recalibrations_the_timeline_runs_at_999_9978_mhz() {
        let mut now = 1_000_000_000_u64;
        let mut calibration = Calibration::new(100_000_000, &mut sampler(&mut now));
        let (t0, m0) = (ticks(now), now);
        now += 60_000_000; // within the 62.5 ms period
        let (t1, m1) = (ticks(now), now);
        assert_eq!(calibration.anchors().len(), 1);
        let converted = calibration.translate(t1) - calibration.translate(t0);
        let mhz = converted as f64 / (m1 - m0) as f64 * 1000.0;
        assert!((mhz - 999.9978).abs() < 0.0004, "{mhz} MHz");
        // A gap longer than a period is interpolated once the next calibration exists.
        now += 500_000_000;
        let late = ticks(now - 250_000_000);
        let _ = calibration.convert(ticks(now), &mut sampler(&mut now));
        assert!(calibration.translate(late).abs_diff(begins(late)) <= 20);
    }

    #[test]
    fn skipping_the_recalibration_or_the_conversion_breaks_the_bound() {
        let mut now = 1_000_000_000_u64;
        let calibration = Calibration::new(100_000_000, &mut sampler(&mut now));
        // Never recalibrated: 10 s later the drift is 22 µs.
        let tick = ticks(now + 10_000_000_000);
        let error = calibration.translate(tick).abs_diff(begins(tick));
        assert!((21_900..=22_100).contains(&error), "{error} ns");
        // Unconverted or nominally scaled without the offset: far from CLOCK_MONOTONIC.
        assert!(tick.abs_diff(begins(tick)) > 1_000_000_000);
        assert!((tick * 10).abs_diff(begins(tick)) > 1_000_000_000);
    }
}
