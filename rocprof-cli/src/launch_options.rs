//! How the application is launched: `--preload`, `--disable-signal-handlers`, MPI rank
//! selection, attach (refused on WSL2) and rocprofv3's hidden debugging options.

/// The options (rocprofv3's names).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct LaunchOptions {}
