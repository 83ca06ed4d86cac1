//! Tracing domains whose libraries this stack does not ship (RCCL, rocDecode, rocJPEG, Kokkos,
//! OpenMP tools, rocSHMEM, hipFile, KFD events, HIP graphs and events): accepted with
//! rocprofv3's names, and after the run said plainly when no table came.

/// The options (rocprofv3's names).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct DomainOptions {}
