//! `[gpu]` and `[counters]`: the simulated GPU's timing and performance-counter behaviour.
//!
//! Owned by the GPU model in `sim/rocdxg`. Every key is optional; the defaults reproduce the
//! seed document's measurements (see "The GPU model" in `sim/README.md` for what each knob
//! reproduces). Values a model cannot use (a probability above 1, a zero bandwidth, ...) are
//! rejected when the file is parsed, with the offending line.

use serde::{Deserialize, Deserializer};

/// `[gpu]`: clocks, timing model and command-buffer limits.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gpu {
    /// Offset added to `CLOCK_MONOTONIC` before it is expressed in GPU ticks, so GPU and host
    /// values visibly differ.
    pub clock_offset_ns: u64,
    /// Largest PM4 command buffer one vendor packet may carry, chained IBs included, in dwords.
    #[serde(deserialize_with = "positive_u32")]
    pub pm4_frame_dwords: u32,
    /// Shader cycles per wave when a dispatch's `cycles_per_wave` is 0.
    #[serde(deserialize_with = "positive_u32")]
    pub cycles_per_wave: u32,
    /// Fixed command-processor cost of launching one dispatch, in ns.
    pub launch_overhead_ns: u64,
    /// Command-processor cost of one PM4 submission (vendor packet), in ns.
    pub pm4_overhead_ns: u64,
    /// SDMA copy bandwidth in MB/s (10^6 bytes per second).
    #[serde(deserialize_with = "positive_u64")]
    pub sdma_bandwidth_mb_s: u64,
    /// Fixed cost of one SDMA copy, in ns.
    pub sdma_overhead_ns: u64,
    /// How long a PM4 WAIT_REG_MEM polls before the submission fails, in ms.
    pub wait_timeout_ms: u64,
}

impl Default for Gpu {
    fn default() -> Self {
        Gpu {
            clock_offset_ns: 1_000_000_000_000,
            pm4_frame_dwords: 512,
            cycles_per_wave: 400,
            launch_overhead_ns: 4_000,
            pm4_overhead_ns: 1_000,
            sdma_bandwidth_mb_s: 20_000,
            sdma_overhead_ns: 2_000,
            wait_timeout_ms: 1_000,
        }
    }
}

/// `[counters]`: contamination by other GPU clients and read-back faults.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Counters {
    /// Mean number of foreign GPU work bursts landing in a 1 ms (modelled) counting window; a
    /// window of `w` ms gets `contamination_per_ms * w^contamination_rate_exponent` on average.
    /// 0 disables contamination.
    #[serde(deserialize_with = "non_negative")]
    pub contamination_per_ms: f64,
    /// How the burst count grows with the window: 1 is proportional, above 1 superlinear.
    #[serde(deserialize_with = "non_negative")]
    pub contamination_rate_exponent: f64,
    /// Median size of one foreign burst in a 1 ms window, in waves (log-normal); a window of
    /// `w` ms has median `contamination_median_waves * w^contamination_size_exponent`.
    #[serde(deserialize_with = "positive")]
    pub contamination_median_waves: f64,
    /// How the burst size grows with the window (0: the same size for every window).
    #[serde(deserialize_with = "non_negative")]
    pub contamination_size_exponent: f64,
    /// Log-normal sigma of the burst size (the tail's weight).
    #[serde(deserialize_with = "non_negative")]
    pub contamination_sigma: f64,
    /// Share of the foreign bursts that are small (a desktop compositor's frame rather than
    /// another application's kernels): the seed's smallest contaminated value is 11 % above
    /// the truth, which a burst of the big size alone never gives.
    #[serde(deserialize_with = "probability")]
    pub contamination_small_share: f64,
    /// Median size of a small burst, in waves (log-normal with the same sigma, not scaled by
    /// the window).
    #[serde(deserialize_with = "positive")]
    pub contamination_small_median_waves: f64,
    /// Probability that a session suffers a GRBM zero burst from its first counted dispatch,
    /// averaged over wall-clock time (the probability of one moment drifts around it).
    #[serde(deserialize_with = "probability")]
    pub grbm_zero_session_probability: f64,
    /// The highest probability the drift reaches (at or below the mean: no drift, the mean
    /// holds at every moment).
    #[serde(deserialize_with = "probability")]
    pub grbm_zero_peak_probability: f64,
    /// Spacing of the drift's knots, in minutes of wall-clock time: the probability moves
    /// smoothly from one random knot value to the next. 0 disables the drift.
    #[serde(deserialize_with = "non_negative")]
    pub grbm_drift_minutes: f64,
    /// Shortest GRBM zero burst, in ms of GPU time.
    #[serde(deserialize_with = "positive")]
    pub grbm_burst_min_ms: f64,
    /// Median GRBM zero burst, in ms (log-normal, truncated to min..max).
    #[serde(deserialize_with = "positive")]
    pub grbm_burst_median_ms: f64,
    /// Longest GRBM zero burst, in ms.
    #[serde(deserialize_with = "positive")]
    pub grbm_burst_max_ms: f64,
    /// Log-normal sigma of the burst duration.
    #[serde(deserialize_with = "non_negative")]
    pub grbm_burst_sigma: f64,
    /// Probability that one dispatch's SQ counters read back zero.
    #[serde(deserialize_with = "probability")]
    pub sq_zero_probability: f64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            contamination_per_ms: 12.0,
            contamination_rate_exponent: 1.1,
            contamination_median_waves: 60_000.0,
            contamination_size_exponent: 0.15,
            contamination_sigma: 0.7,
            contamination_small_share: 0.2,
            contamination_small_median_waves: 3_000.0,
            grbm_zero_session_probability: 0.031,
            grbm_zero_peak_probability: 0.1,
            grbm_drift_minutes: 10.0,
            grbm_burst_min_ms: 9.0,
            grbm_burst_median_ms: 54.0,
            grbm_burst_max_ms: 291.0,
            grbm_burst_sigma: 0.9,
            sq_zero_probability: 0.001,
        }
    }
}

fn checked_f64<'de, D: Deserializer<'de>>(
    deserializer: D,
    ok: impl Fn(f64) -> bool,
    wanted: &str,
) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.is_finite() && ok(value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!("{value} is not {wanted}")))
    }
}

fn probability<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    checked_f64(
        deserializer,
        |v| (0.0..=1.0).contains(&v),
        "a probability (0 to 1)",
    )
}

fn positive<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    checked_f64(deserializer, |v| v > 0.0, "positive")
}

fn non_negative<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    checked_f64(deserializer, |v| v >= 0.0, "non-negative")
}

fn positive_u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    match u32::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom("0 is not positive")),
        value => Ok(value),
    }
}

fn positive_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    match u64::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom("0 is not positive")),
        value => Ok(value),
    }
}

impl Counters {
    /// Checks the relations between keys that single-value checks cannot see.
    ///
    /// The GPU model calls this and falls back to sane values rather than failing, because
    /// the scenario crate's resolver (owned elsewhere) does not call it.
    pub fn burst_range_ok(&self) -> bool {
        self.grbm_burst_min_ms <= self.grbm_burst_median_ms
            && self.grbm_burst_median_ms <= self.grbm_burst_max_ms
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    fn parse(text: &str) -> Result<Scenario, String> {
        Scenario::from_toml_str(text)
    }

    #[test]
    fn gpu_and_counters_keys_parse() {
        let scenario = parse(
            "[gpu]\nclock_offset_ns = 0\npm4_frame_dwords = 1024\ncycles_per_wave = 64\n\
             launch_overhead_ns = 0\npm4_overhead_ns = 0\nsdma_bandwidth_mb_s = 1\n\
             sdma_overhead_ns = 0\nwait_timeout_ms = 5\n\
             [counters]\ncontamination_per_ms = 0\ncontamination_median_waves = 1\n\
             contamination_sigma = 0\ngrbm_zero_session_probability = 1\n\
             grbm_burst_min_ms = 1\ngrbm_burst_median_ms = 2\ngrbm_burst_max_ms = 3.5\n\
             grbm_burst_sigma = 0\nsq_zero_probability = 0.5\n",
        )
        .unwrap();
        assert_eq!(scenario.gpu.pm4_frame_dwords, 1024);
        assert_eq!(scenario.gpu.cycles_per_wave, 64);
        assert_eq!(scenario.gpu.wait_timeout_ms, 5);
        assert_eq!(scenario.counters.contamination_per_ms, 0.0);
        assert_eq!(scenario.counters.grbm_burst_max_ms, 3.5);
        assert_eq!(scenario.counters.sq_zero_probability, 0.5);
        assert!(scenario.counters.burst_range_ok());
        // Keys not named keep their defaults.
        let partial = parse("[counters]\nsq_zero_probability = 0\n").unwrap();
        assert_eq!(partial.gpu, super::Gpu::default());
        assert_eq!(
            partial.counters.grbm_zero_session_probability,
            super::Counters::default().grbm_zero_session_probability
        );
    }

    #[test]
    fn unusable_values_are_rejected_with_their_line() {
        for (text, needle) in [
            (
                "[counters]\nsq_zero_probability = 1.5",
                "1.5 is not a probability",
            ),
            (
                "[counters]\ngrbm_zero_session_probability = -0.1",
                "is not a probability",
            ),
            (
                "[counters]\ncontamination_per_ms = -1",
                "-1 is not non-negative",
            ),
            (
                "[counters]\ncontamination_median_waves = 0",
                "0 is not positive",
            ),
            ("[counters]\ngrbm_burst_median_ms = nan", "is not positive"),
            ("[gpu]\npm4_frame_dwords = 0", "0 is not positive"),
            ("[gpu]\nsdma_bandwidth_mb_s = 0", "0 is not positive"),
            ("[gpu]\ncycles_per_wave = -1", "line 2"),
            (
                "[counters]\ncontamination = 1",
                "unknown field `contamination`",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(needle), "{text:?}: {error}");
            assert!(error.starts_with("line 2"), "{text:?}: {error}");
        }
        let inverted =
            parse("[counters]\ngrbm_burst_min_ms = 100\ngrbm_burst_max_ms = 10\n").unwrap();
        assert!(!inverted.counters.burst_range_ok());
    }
}
