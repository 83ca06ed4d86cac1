//! A run's thread trace: the checked request and the decoder found before the run.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A thread-trace request, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttConfig {
    /// The detailed compute unit.
    pub target_cu: u32,
    /// The shader engines traced.
    pub shader_engine_mask: u64,
    /// The SIMD selected.
    pub simd_select: u32,
    /// The buffer's size in bytes.
    pub buffer_size: u64,
    /// The GPUs traced (None: all).
    pub gpu_index: Option<Vec<u32>>,
    /// Whether every dispatch is serialised.
    pub serialize_all: bool,
    /// Where the decoder library is searched.
    pub library_path: Vec<PathBuf>,
}

/// A run's thread trace: the checked request and the decoder found before the run (in the
/// run's manifest, so `rocprof convert` decodes the same way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttPlan {
    /// The request.
    pub config: AttConfig,
    /// The decoder library, if it was found and loads.
    pub decoder: Option<PathBuf>,
}
