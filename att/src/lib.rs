//! Thread trace (being written).
