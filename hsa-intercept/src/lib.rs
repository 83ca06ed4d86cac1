//! The HSA, HIP and ROCTx API tables and their interception.
//!
//! - [`tables`]: layouts, operation ids and names of every table, generated from the fact files
//!   in `abi/`.
//! - [`tracer`]: the per-thread call stack, correlation ids, and the work around each traced
//!   call; [`wrap`]: the trampolines and table wrapping that call it.
//!
//! The modules depend on each other one way only (no two of them through each other).

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
pub mod tracer;
pub mod wrap;

/// API call tracing under the paths other crates name it by: the tracer's ids and thread
/// state ([`tracer`]), the host timeline ([`clock::now_ns`]) and table wrapping
/// ([`wrap::wrap_table`]). Re-exports only; the crate's own modules use the originals.
pub mod api {
    pub use crate::clock::now_ns;
    pub use crate::tables::runtime_size;
    pub use crate::tracer::{
        MAX_DEPTH, current_correlation_id, current_region, new_correlation_id, set_region, tag,
        thread_id,
    };
    pub use crate::wrap::{ApiTracer, WrapReport, wrap_table};
}
