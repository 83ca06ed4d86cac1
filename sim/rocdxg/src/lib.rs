//! Simulated librocdxg.so.
