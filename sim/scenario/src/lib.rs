//! Scenario model of the simulated WSL2 ROCm stack.
