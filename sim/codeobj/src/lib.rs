//! Simulated code objects.
