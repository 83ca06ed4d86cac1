//! The GPU wall clock: `CLOCK_MONOTONIC` plus a fixed offset, counted at `WallClockKHz`.
//!
//! With the default 100 000 kHz a tick is 10 ns: `ticks = (monotonic_ns + offset_ns) / 10`.

use std::time::Duration;

/// `CLOCK_MONOTONIC` in nanoseconds.
pub use wslsim_scenario::monotonic_ns;

/// The wall clock of one GPU node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuClock {
    offset_ns: u64,
    khz: u64,
}

/// Frequency used when a scenario's node reports `WallClockKHz = 0`.
pub const DEFAULT_WALLCLOCK_KHZ: u64 = 100_000;

impl GpuClock {
    /// A clock `offset_ns` ahead of `CLOCK_MONOTONIC`, ticking at `khz` (0: 100 MHz).
    pub fn new(offset_ns: u64, khz: u64) -> GpuClock {
        let khz = if khz == 0 { DEFAULT_WALLCLOCK_KHZ } else { khz };
        GpuClock { offset_ns, khz }
    }

    /// The tick count at host time `monotonic_ns` (rounded down: the tick in progress).
    pub fn ticks_at(&self, monotonic_ns: u64) -> u64 {
        let ns = u128::from(monotonic_ns) + u128::from(self.offset_ns);
        (ns * u128::from(self.khz) / 1_000_000) as u64
    }

    /// The first tick that does not begin before host time `monotonic_ns` (rounded up).
    pub fn ticks_at_or_after(&self, monotonic_ns: u64) -> u64 {
        let ns = u128::from(monotonic_ns) + u128::from(self.offset_ns);
        (ns * u128::from(self.khz)).div_ceil(1_000_000) as u64
    }

    /// The clock now.
    pub fn now(&self) -> u64 {
        self.ticks_at(monotonic_ns())
    }

    /// The host time (`CLOCK_MONOTONIC` ns) at which tick `ticks` begins, saturating at 0.
    pub fn monotonic_at(&self, ticks: u64) -> u64 {
        let ns = u128::from(ticks) * 1_000_000 / u128::from(self.khz);
        ns.saturating_sub(u128::from(self.offset_ns))
            .min(u128::from(u64::MAX)) as u64
    }

    /// GPU time of tick `ticks` in ns since the clock's zero (no host offset removed).
    pub fn gpu_ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000 / u128::from(self.khz)).min(u128::from(u64::MAX)) as u64
    }

    /// How many ticks cover `ns` nanoseconds (rounded up).
    pub fn ticks_for(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.khz)).div_ceil(1_000_000) as u64
    }

    /// Blocks until the clock reads at least `ticks`: sleeps while far away, then spins.
    pub fn wait_until(&self, ticks: u64) {
        loop {
            let now_ns = monotonic_ns();
            if self.ticks_at(now_ns) >= ticks {
                return;
            }
            let remaining = self.monotonic_at(ticks).saturating_sub(now_ns);
            if remaining > 200_000 {
                std::thread::sleep(Duration::from_nanos(remaining - 100_000));
            } else if remaining > 20_000 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}
