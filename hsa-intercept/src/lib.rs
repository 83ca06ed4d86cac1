//! The HSA, HIP and ROCTx API tables and their interception.
//!
//! - [`tables`]: layouts, operation ids and names of every table, generated from the fact files
//!   in `abi/`.
//! - [`tracer`]: the per-thread call stack, correlation ids, and the work around each traced
//!   call; [`wrap`]: the trampolines and table wrapping that call it.
//!
//! The modules depend on each other one way only (no two of them through each other).

pub mod clock;
pub mod code_objects;
pub mod copies;
pub mod counting;
pub mod dispatch;
mod hot;
pub mod hsa;
pub mod memory;
pub mod regions;
pub mod scope;
pub mod sink;
pub mod tables;
mod thread_slot;
pub mod thread_trace;
pub mod tracer;
pub mod wrap;
