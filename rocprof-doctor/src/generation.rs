//! The HSA runtime's generation, as the seed tells them apart: the layout of
//! `HsaNodeProperties` it is built for and how it treats `HSA_ENABLE_DXG_DETECTION`.

use serde::Serialize;

/// A runtime generation, as the seed tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generation {
    /// The stock ROCm 7.2.x packages: DXG detection opt-in, 376-byte records.
    Stock72,
    /// Current builds: DXG detection on unless `0`, 396-byte records.
    Current,
}

impl Generation {
    /// The `sizeof(HsaNodeProperties)` it is built with.
    pub fn layout(self) -> usize {
        match self {
            Self::Stock72 => 376,
            Self::Current => 396,
        }
    }

    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Stock72 => "a stock ROCm 7.2.x runtime",
            Self::Current => "a current runtime",
        }
    }
}

/// The generation and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenerationFinding {
    /// The generation.
    pub generation: Generation,
    /// The facts it rests on.
    pub evidence: String,
}
