//! Simulated libdxcore.so.
