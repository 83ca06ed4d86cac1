//! `[gpu]` and `[counters]`: the simulated GPU's timing and performance-counter behaviour.
//!
//! Owned by the GPU model in `sim/rocdxg`. Every key is optional; the defaults reproduce the
//! seed document's measurements.

use serde::Deserialize;

/// `[gpu]`: clocks, timing model and command-buffer limits.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gpu {
    /// Offset added to `CLOCK_MONOTONIC` before it is expressed in GPU ticks, so GPU and host
    /// values visibly differ.
    pub clock_offset_ns: u64,
    /// Largest PM4 indirect buffer one vendor packet may carry, in dwords.
    pub pm4_frame_dwords: u32,
}

impl Default for Gpu {
    fn default() -> Self {
        Gpu { clock_offset_ns: 1_000_000_000_000, pm4_frame_dwords: 512 }
    }
}

/// `[counters]`: contamination by other GPU clients and read-back faults.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Counters {
    /// Probability that a session suffers a GRBM zero burst from its first dispatch.
    pub grbm_zero_session_probability: f64,
    /// Probability that one dispatch's SQ counters read back zero.
    pub sq_zero_probability: f64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters { grbm_zero_session_probability: 0.031, sq_zero_probability: 0.001 }
    }
}
