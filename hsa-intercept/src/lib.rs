//! The HSA, HIP and ROCTx API tables and their interception.
//!
//! - [`tables`]: layouts, operation ids and names of every table, generated from the fact files
//!   in `abi/`.

pub mod api;
pub mod clock;
pub mod copies;
pub mod counting;
pub mod dispatch;
pub mod hsa;
pub mod memory;
pub mod regions;
pub mod scope;
pub mod sink;
pub mod tables;
pub mod thread_trace;
pub mod wrap;
