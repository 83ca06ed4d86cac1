//! The GPU wall clock: `CLOCK_MONOTONIC` plus a fixed offset, running [`DRIFT_PPB`] slow, counted
//! at `WallClockKHz`.
//!
//! The clock's nanoseconds at host time `m` are `g(m) = m + offset_ns + floor(m × drift / 10⁹)`
//! (drift in parts per billion, −2 200 by default: the seed's 999.9978 MHz, measured against
//! `CLOCK_MONOTONIC`). The drift is counted from `CLOCK_MONOTONIC`'s zero, so it is
//! deterministic and every process of the machine sees the same clock. With the default
//! 100 000 kHz a tick is 10 ns: `ticks = floor(g(m) / 10)`.

use std::time::Duration;

/// `CLOCK_MONOTONIC` in nanoseconds.
pub use wslsim_scenario::monotonic_ns;

/// The wall clock of one GPU node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuClock {
    offset_ns: u64,
    khz: u64,
    drift_ppb: i64,
}

/// Frequency used when a scenario's node reports `WallClockKHz = 0`.
pub const DEFAULT_WALLCLOCK_KHZ: u64 = 100_000;

/// How far the GPU's oscillator runs from `CLOCK_MONOTONIC`'s rate, in parts per billion: 2.2
/// ppm slow (the seed's 999.9978 MHz).
pub const DRIFT_PPB: i64 = -2_200;

impl GpuClock {
    /// A clock `offset_ns` ahead of `CLOCK_MONOTONIC`, ticking at `khz` (0: 100 MHz) and
    /// drifting [`DRIFT_PPB`].
    pub fn new(offset_ns: u64, khz: u64) -> GpuClock {
        GpuClock::with_drift(offset_ns, khz, DRIFT_PPB)
    }

    /// A clock as [`GpuClock::new`] drifting `drift_ppb` parts per billion (|drift| < 10⁸).
    pub fn with_drift(offset_ns: u64, khz: u64, drift_ppb: i64) -> GpuClock {
        let khz = if khz == 0 { DEFAULT_WALLCLOCK_KHZ } else { khz };
        let drift_ppb = drift_ppb.clamp(-99_999_999, 99_999_999);
        GpuClock {
            offset_ns,
            khz,
            drift_ppb,
        }
    }

    /// The clock's own nanoseconds at host time `monotonic_ns`: `g(m)` above (never negative).
    pub fn clock_ns_at(&self, monotonic_ns: u64) -> u128 {
        let m = i128::from(monotonic_ns);
        let drift = (m * i128::from(self.drift_ppb)).div_euclid(1_000_000_000);
        (m + i128::from(self.offset_ns) + drift).max(0) as u128
    }

    /// The tick count at host time `monotonic_ns` (rounded down: the tick in progress).
    pub fn ticks_at(&self, monotonic_ns: u64) -> u64 {
        (self.clock_ns_at(monotonic_ns) * u128::from(self.khz) / 1_000_000) as u64
    }

    /// The first tick that does not begin before host time `monotonic_ns` (rounded up).
    pub fn ticks_at_or_after(&self, monotonic_ns: u64) -> u64 {
        (self.clock_ns_at(monotonic_ns) * u128::from(self.khz)).div_ceil(1_000_000) as u64
    }

    /// The clock now.
    pub fn now(&self) -> u64 {
        self.ticks_at(monotonic_ns())
    }

    /// The host time (`CLOCK_MONOTONIC` ns) at which tick `ticks` begins: the first host
    /// nanosecond whose [`GpuClock::ticks_at`] reaches it, saturating at 0 and `u64::MAX`.
    pub fn monotonic_at(&self, ticks: u64) -> u64 {
        let clock_ns = (u128::from(ticks) * 1_000_000).div_ceil(u128::from(self.khz));
        let target = i128::try_from(clock_ns).unwrap_or(i128::MAX / 4);
        // g is non-decreasing with slope 1 + drift: invert it, then settle on the first nanosecond.
        let estimate = (target - i128::from(self.offset_ns)) * 1_000_000_000
            / (1_000_000_000 + i128::from(self.drift_ppb));
        let mut m = estimate.clamp(0, i128::from(u64::MAX)) as u64;
        while m > 0 && self.clock_ns_at(m - 1) >= clock_ns {
            m -= 1;
        }
        while m < u64::MAX && self.clock_ns_at(m) < clock_ns {
            m += 1;
        }
        m
    }

    /// GPU time of tick `ticks` in ns since the clock's zero (no host offset removed).
    pub fn gpu_ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000 / u128::from(self.khz)).min(u128::from(u64::MAX)) as u64
    }

    /// How many ticks cover `ns` nanoseconds (rounded up).
    pub fn ticks_for(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.khz)).div_ceil(1_000_000) as u64
    }

    /// Blocks until the clock reads at least `ticks`: sleeps while far away, then yields the
    /// CPU between looks, and spins only for the last couple of microseconds.
    ///
    /// A real GPU takes no host CPU while a kernel runs. A packet processor spinning for the
    /// whole of a short kernel would: on a 2-core machine, a run where the scheduler put it
    /// beside the application's thread had every `hipLaunchKernel` wait out the kernel
    /// (1.2 µs launches became 15 µs ones, a whole run at a time), so which runs of a
    /// comparison were slow depended on thread placement, not on what was measured.
    pub fn wait_until(&self, ticks: u64) {
        loop {
            let now_ns = monotonic_ns();
            if self.ticks_at(now_ns) >= ticks {
                return;
            }
            let remaining = self.monotonic_at(ticks).saturating_sub(now_ns);
            if remaining > 200_000 {
                std::thread::sleep(Duration::from_nanos(remaining - 100_000));
            } else if remaining > 2_000 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}
