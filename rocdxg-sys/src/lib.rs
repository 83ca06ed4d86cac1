//! rocdxg-sys
