//! Domains of libraries this stack does not ship, asked for by name.

use serde::{Deserialize, Serialize};
use trace_records::docs::DomainLibrary;

/// A domain this stack cannot trace by itself, asked for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForeignDomain {
    /// `--rccl-trace`.
    Rccl,
    /// `--rocdecode-trace`.
    RocDecode,
    /// `--rocjpeg-trace`.
    RocJpeg,
    /// `--kokkos-trace`.
    Kokkos,
    /// `--ompt-trace`.
    Ompt,
    /// `--rocshmem-trace`.
    RocShmem,
    /// `--hipfile-trace`.
    HipFile,
    /// `--hip-graph-trace`.
    HipGraph,
    /// `--hip-event-trace`.
    HipEvent,
    /// `--kfd-*`.
    Kfd,
}

impl ForeignDomain {
    /// The option that asks for it.
    pub fn option(self) -> &'static str {
        match self {
            Self::Rccl => "--rccl-trace",
            Self::RocDecode => "--rocdecode-trace",
            Self::RocJpeg => "--rocjpeg-trace",
            Self::Kokkos => "--kokkos-trace",
            Self::Ompt => "--ompt-trace",
            Self::RocShmem => "--rocshmem-trace",
            Self::HipFile => "--hipfile-trace",
            Self::HipGraph => "--hip-graph-trace",
            Self::HipEvent => "--hip-event-trace",
            Self::Kfd => "--kfd-trace",
        }
    }

    /// The library whose loading the domain needs.
    pub fn library(self) -> Option<DomainLibrary> {
        match self {
            Self::Rccl => Some(DomainLibrary::Rccl),
            Self::RocDecode => Some(DomainLibrary::RocDecode),
            Self::RocJpeg => Some(DomainLibrary::RocJpeg),
            Self::Kokkos => Some(DomainLibrary::Kokkos),
            Self::Ompt => Some(DomainLibrary::OpenMp),
            Self::RocShmem => Some(DomainLibrary::RocShmem),
            Self::HipFile => Some(DomainLibrary::HipFile),
            Self::HipGraph | Self::HipEvent | Self::Kfd => None,
        }
    }

    /// The name the library registers its API table under with rocprofiler-register, if it
    /// registers one.
    pub fn register_name(self) -> Option<&'static str> {
        match self {
            Self::Rccl => Some("rccl"),
            Self::RocDecode => Some("rocdecode"),
            Self::RocJpeg => Some("rocjpeg"),
            _ => None,
        }
    }

    /// What is said before the run, when the domain can never have records here.
    pub fn before_run(self) -> Option<&'static str> {
        match self {
            Self::Kfd => Some(
                "--kfd-*: KFD page-migration, page-mapping and queue events come from the amdgpu driver's /dev/kfd event interface, which WSL2 does not have (the GPU is reached through /dev/dxg); nothing of these domains will be recorded. They need native Linux with the amdgpu driver",
            ),
            Self::HipGraph | Self::HipEvent => Some(
                "--hip-graph-trace/--hip-event-trace: graph launches and event records as their own records come from ROCprofiler-SDK's HIP stream instrumentation, which rocprof does not have; the hipGraph*/hipEvent* calls themselves are in the HIP API trace (--hip-trace)",
            ),
            _ => None,
        }
    }
}
