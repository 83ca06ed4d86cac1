//! The host timeline: `CLOCK_MONOTONIC` nanoseconds, read cheaply.
//!
//! Every record's host timestamps must be comparable with the runtime's (which reports
//! `CLOCK_MONOTONIC`), but `clock_gettime` costs ~20 ns here and a traced call needs two. When
//! the CPU has an invariant TSC, the time is instead `ns0 + (tsc − tsc0) · scale`, where the
//! epoch `(tsc0, ns0, scale)` is measured against `clock_gettime` at start and re-measured every
//! 50 ms by a background thread (so NTP slewing of the monotonic clock is followed). A new
//! epoch never moves time backwards. Without an invariant TSC, `clock_gettime` is used.

use std::sync::Once;
use std::sync::atomic::Ordering;
use std::time::Duration;

// One calibration (`crate::hot::Epoch`): time = `ns0 + (tsc − tsc0) · scale`, `scale` in ns
// per tick as 32.32 fixed point.
//
// Epochs are written into a ring and published by sequence number (from 1; the slot is the
// number modulo the ring), so a reader needs one acquire load and never retries. A slot is
// rewritten only 256 publications (about 13 s) after it was published, far longer than any
// reader holds a number. The number also names the epoch in the record log
// ([`trace_records::ClockEpochRecord`]): a chunk's tick-timed calls are converted with the
// epoch it carries, which the traced exit checks is the current one.
//
// The published index and the ring are one field of `crate::hot::HOT`: the tool is a shared
// object and [`now_ns`] is inlined into other crates, so each static it reads costs a GOT
// load; one static (shared with the sink's, which the traced exit also reads) and an index
// that also says whether the TSC is in use ([`NO_TSC`]) make that one GOT load and one
// flag-free check per clock read.
use crate::hot::{HOT, NO_TSC, RING};

/// The clock's published state.
const CLOCK: &crate::hot::ClockState = &HOT.clock;

static START: Once = Once::new();

/// `CLOCK_MONOTONIC` in nanoseconds, from the kernel.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; CLOCK_MONOTONIC is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The raw time-stamp counter.
#[inline]
pub(crate) fn tsc() -> u64 {
    // SAFETY: RDTSC is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The host timeline now.
#[inline]
pub fn now_ns() -> u64 {
    let current = CLOCK.current.load(Ordering::Acquire);
    if current == NO_TSC {
        return monotonic_ns();
    }
    // The log reader's own conversion (`ClockEpochRecord::ns_at`), so the times it converts
    // from ticks are the ones this clock gives.
    epoch_of(current).ns_at(tsc())
}

/// The current epoch's sequence number (while [`tsc_in_use`]): what a chunk's last clock epoch
/// must be for a tick-timed call to be appended without one.
#[inline(always)]
pub(crate) fn sequence() -> u64 {
    CLOCK.current.load(Ordering::Acquire) as u64
}

/// The current epoch, as the record log stores it (`None` while the TSC is not used).
pub(crate) fn epoch() -> Option<trace_records::ClockEpochRecord> {
    let current = CLOCK.current.load(Ordering::Acquire);
    (current != NO_TSC).then(|| epoch_of(current))
}

/// Epoch number `sequence` as the ring holds it (a published one, not [`NO_TSC`]).
#[inline(always)]
fn epoch_of(sequence: usize) -> trace_records::ClockEpochRecord {
    let e = &CLOCK.epochs[sequence % RING];
    trace_records::ClockEpochRecord {
        sequence: sequence as u64,
        tsc0: e.tsc0.load(Ordering::Relaxed),
        ns0: e.ns0.load(Ordering::Relaxed),
        scale: e.scale.load(Ordering::Relaxed),
    }
}

/// Whether [`now_ns`] reads the TSC (calibrated; once on, it stays on).
#[inline]
pub fn tsc_in_use() -> bool {
    CLOCK.current.load(Ordering::Acquire) != NO_TSC
}

/// The host-timeline times of two raw TSC values `start <= end` read while [`tsc_in_use`]:
/// `end` as [`now_ns`] would have given it when read, `start` that minus the ticks between
/// them at the current epoch's rate (so the span is exact whichever epoch `start` was read
/// under, and `start <= end`). One epoch read for both.
#[inline]
pub(crate) fn tsc_span_ns(start: u64, end: u64) -> (u64, u64) {
    epoch_of(CLOCK.current.load(Ordering::Acquire)).span_ns(start, end)
}

/// One (tsc, monotonic ns) pair, taken where the TSC brackets the clock read most tightly.
fn sample() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..7 {
        let a = tsc();
        let ns = monotonic_ns();
        let b = tsc();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b - a) / 2, ns);
        }
    }
    (best.1, best.2)
}

/// Publishes an epoch (the first one turns the TSC clock on).
fn publish(tsc0: u64, ns0: u64, scale: u64) {
    let current = CLOCK.current.load(Ordering::Relaxed);
    let next = if current == NO_TSC { 1 } else { current + 1 };
    let e = &CLOCK.epochs[next % RING];
    e.tsc0.store(tsc0, Ordering::Relaxed);
    e.ns0.store(ns0, Ordering::Relaxed);
    e.scale.store(scale, Ordering::Relaxed);
    CLOCK.current.store(next, Ordering::Release);
}

fn invariant_tsc() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines().find(|l| l.starts_with("flags")).is_some_and(|l| {
            l.split_whitespace().any(|f| f == "constant_tsc")
                && l.split_whitespace().any(|f| f == "nonstop_tsc")
        })
    })
}

/// In a forked child: the recalibration thread did not survive the fork; start another one.
pub fn restart_after_fork() {
    if CLOCK.current.load(Ordering::Acquire) != NO_TSC {
        let (t, n) = sample();
        spawn_recalibration(t, n);
    }
}

/// Calibrates the TSC against `CLOCK_MONOTONIC` (a few milliseconds) and starts the
/// recalibration thread. Idempotent; without an invariant TSC it does nothing and [`now_ns`]
/// keeps using `clock_gettime`.
pub fn start() {
    START.call_once(|| {
        if !invariant_tsc() || std::env::var_os("ROCPROF_CLOCK_GETTIME").is_some() {
            return;
        }
        let (t1, n1) = sample();
        std::thread::sleep(Duration::from_millis(5));
        let (t2, n2) = sample();
        if t2 <= t1 || n2 <= n1 {
            return;
        }
        let scale = ((u128::from(n2 - n1) << 32) / u128::from(t2 - t1)) as u64;
        publish(t2, n2, scale);
        spawn_recalibration(t2, n2);
    });
}

/// Re-measures the TSC rate every 50 ms from the sample `(tp, np)` on, publishing epochs that
/// never move time backwards.
fn spawn_recalibration(tp: u64, np: u64) {
    let _ = std::thread::Builder::new()
        .name("rocprof-clock".into())
        .spawn(move || {
            let (mut tp, mut np) = (tp, np);
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let (t, n) = sample();
                if t <= tp || n <= np {
                    continue;
                }
                let scale = ((u128::from(n - np) << 32) / u128::from(t - tp)) as u64;
                // The epoch in use, and where it and the new one stand now (just before the
                // new one is published).
                let Some(old) = epoch() else { continue };
                let now = tsc();
                publish(t, continuous_ns0(&old, t, n, scale, now), scale);
                (tp, np) = (t, n);
            }
        });
}

/// The `ns0` of a new epoch `(t, n, scale)` measured at TSC `t`, published when the TSC reads
/// `now`, replacing `old`: `n` itself, unless the new epoch would then give an earlier time at
/// `now` than `old` gives (time never moves backwards), in which case it is raised just enough
/// to continue `old` there.
///
/// (It used to be `max(n, old time at now)`, taken at `t`: that moved time forward by the whole
/// delay between the sample and the publication at every recalibration — a few hundred ns on a
/// quiet machine, milliseconds when the clock thread was preempted in between — so a call that
/// straddled one started too late against the calls it made, and CI saw a `hipMemcpy` begin 14
/// µs after the HSA copy inside it.)
fn continuous_ns0(
    old: &trace_records::ClockEpochRecord,
    t: u64,
    n: u64,
    scale: u64,
    now: u64,
) -> u64 {
    let new = trace_records::ClockEpochRecord {
        sequence: 0,
        tsc0: t,
        ns0: n,
        scale,
    };
    let (then, after) = (old.ns_at(now), new.ns_at(now));
    n + then.saturating_sub(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_epoch_continues_the_old_one_without_jumping_over_its_publication_delay() {
        // 0.4 ns per tick, exact: the old epoch and the new sample agree.
        let scale = (1u64 << 32) * 2 / 5;
        let old = trace_records::ClockEpochRecord {
            sequence: 1,
            tsc0: 1_000_000,
            ns0: 5_000_000,
            scale,
        };
        let (t, n) = (126_000_000, old.ns_at(126_000_000));
        // Published 2.5 M ticks (1 ms) after the sample: no jump of that millisecond (1 ns of
        // fixed-point rounding at most).
        let ns0 = continuous_ns0(&old, t, n, scale, t + 2_500_000);
        assert!((n..=n + 1).contains(&ns0), "{ns0} against {n}");
        // The monotonic clock ahead of the old epoch by 3 µs: the new epoch takes it (forward).
        assert_eq!(
            continuous_ns0(&old, t, n + 3_000, scale, t + 2_500_000),
            n + 3_000
        );
        // Behind it by 3 µs: raised to continue the old epoch at the publication, never back.
        let behind = continuous_ns0(&old, t, n - 3_000, scale, t + 2_500_000);
        let new = trace_records::ClockEpochRecord {
            sequence: 2,
            tsc0: t,
            ns0: behind,
            scale,
        };
        assert_eq!(new.ns_at(t + 2_500_000), old.ns_at(t + 2_500_000));
        // A slower new rate: still not behind the old epoch at the publication.
        let slower = scale - scale / 1000;
        let ns0 = continuous_ns0(&old, t, n, slower, t + 2_500_000);
        let new = trace_records::ClockEpochRecord {
            ns0,
            scale: slower,
            ..new
        };
        assert!(new.ns_at(t + 2_500_000) >= old.ns_at(t + 2_500_000));
    }

    #[test]
    fn tracks_the_monotonic_clock_closely_and_never_goes_back() {
        start();
        let mut last = now_ns();
        let mut worst = 0i64;
        for _ in 0..200_000 {
            let a = monotonic_ns();
            let t = now_ns();
            let b = monotonic_ns();
            assert!(t >= last, "time went backwards");
            last = t;
            let off = if t < a {
                a as i64 - t as i64
            } else if t > b {
                t as i64 - b as i64
            } else {
                0
            };
            worst = worst.max(off);
        }
        assert!(
            worst < 2_000,
            "worst deviation from CLOCK_MONOTONIC {worst} ns"
        );
    }
}
