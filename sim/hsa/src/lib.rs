//! Simulated libhsa-runtime64.so.1.
