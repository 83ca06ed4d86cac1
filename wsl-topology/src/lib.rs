//! wsl-topology
