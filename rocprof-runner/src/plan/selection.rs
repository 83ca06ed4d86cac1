//! What a run traces: the resolved selection of API domains and activities.

use serde::{Deserialize, Serialize};
use trace_records::{ApiDomain, ProcessTrace, env};

/// The resolved selection of what to trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub hip_runtime: bool,
    pub hip_compiler: bool,
    pub hsa_core: bool,
    pub hsa_amd: bool,
    pub hsa_image: bool,
    pub hsa_finalizer: bool,
    pub kernels: bool,
    pub copies: bool,
    pub markers: bool,
    #[serde(default)]
    pub memory_allocations: bool,
    #[serde(default)]
    pub scratch_memory: bool,
}

impl Selection {
    /// The tool's switches for this selection.
    pub fn env(&self) -> Vec<(&'static str, &'static str)> {
        [
            (env::HIP_RUNTIME_API_TRACE, self.hip_runtime),
            (env::HIP_COMPILER_API_TRACE, self.hip_compiler),
            (env::HSA_CORE_API_TRACE, self.hsa_core),
            (env::HSA_AMD_EXT_API_TRACE, self.hsa_amd),
            (env::HSA_IMAGE_EXT_API_TRACE, self.hsa_image),
            (env::HSA_FINALIZER_EXT_API_TRACE, self.hsa_finalizer),
            (env::KERNEL_TRACE, self.kernels),
            (env::MEMORY_COPY_TRACE, self.copies),
            (env::MARKER_API_TRACE, self.markers),
            (env::MEMORY_ALLOCATION_TRACE, self.memory_allocations),
            (env::SCRATCH_MEMORY_TRACE, self.scratch_memory),
        ]
        .into_iter()
        .map(|(k, v)| (k, if v { "1" } else { "0" }))
        .collect()
    }
}

/// Domains with records, to compare with what was asked for.
pub fn recorded(traces: &[ProcessTrace]) -> Selection {
    let mut s = Selection::default();
    for t in traces {
        for r in &t.api {
            match ApiDomain::from_u8(r.domain) {
                Some(ApiDomain::HipRuntime) => s.hip_runtime = true,
                Some(ApiDomain::HipCompiler) => s.hip_compiler = true,
                Some(ApiDomain::HsaCore) => s.hsa_core = true,
                Some(ApiDomain::HsaAmdExt) => s.hsa_amd = true,
                Some(ApiDomain::HsaImage) => s.hsa_image = true,
                Some(ApiDomain::HsaFinalize) => s.hsa_finalizer = true,
                _ => {}
            }
        }
        s.kernels |= !t.dispatches.is_empty();
        s.copies |= !t.copies.is_empty();
        s.markers |= !t.markers.is_empty();
        s.memory_allocations |= !t.allocations.is_empty();
        s.scratch_memory |= !t.scratch.is_empty();
    }
    s
}
