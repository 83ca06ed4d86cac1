//! `[runtime]`: which HSA runtime the simulated `libhsa-runtime64.so.1` behaves like.
//!
//! Owned by `sim/hsa`. Every key is optional.

use serde::Deserialize;

/// Generations of the ROCr runtime with different DXG behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generation {
    /// Current sources: DXG detection on unless `HSA_ENABLE_DXG_DETECTION=0`.
    Current,
    /// Stock ROCm 7.2.x packages: DXG detection only with `HSA_ENABLE_DXG_DETECTION=1`.
    #[serde(rename = "stock-7.2")]
    Stock72,
}

/// `[runtime]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Runtime {
    /// The runtime generation.
    pub generation: Generation,
    /// `sizeof(HsaNodeProperties)` the runtime was built with.
    pub layout: u32,
    /// `false`: an older runtime that suppresses tool registration on the DXG path.
    pub register_on_dxg: bool,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            generation: Generation::Current,
            layout: 396,
            register_on_dxg: true,
        }
    }
}
