//! The simulated SQTT token stream (being written).
