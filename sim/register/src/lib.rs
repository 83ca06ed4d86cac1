//! Simulated librocprofiler-register.so.0.
