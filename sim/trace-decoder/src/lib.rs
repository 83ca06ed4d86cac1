//! Simulated librocprof-trace-decoder.so (being written).
