//! Simulated ROCr HSA runtime: `libhsa-runtime64.so.1`.
//!
//! A real shared object with the real name, SONAME and C ABI, so the profiler's interception
//! code runs unchanged against it. It owns the `HsaApiTable` (see [`tables`]): every core and
//! AMD-extension function is exported by its real name and calls through its table slot, so a
//! tool that rewrites the table in place (as rocprofiler-sdk does after
//! `rocprofiler_register_library_api_table`) intercepts the application's calls.
//!
//! `hsa_init` ([`runtime`]) detects the DXG device, loads `librocdxg.so` with `dlopen`, reads
//! the KMT topology into storage of its own `HsaNodeProperties` layout ([`topology`]), creates
//! a CPU agent and a GPU agent per GPU node, and offers the table to rocprofiler-register.
//! Queues ([`queue`], [`intercept`]) are real AQL rings processed by a runtime thread that
//! executes dispatches through the GPU model of `librocdxg.so` (`wslsim_gpu_dispatch`), which
//! calls the kernel's CPU implementation from the code object ([`executable`]).
//!
//! See `sim/hsa/README.md` for what is modelled and what is not.

// Every `unsafe extern "C"` entry point has the same safety contract: that of the HSA API
// function it implements (valid handles, pointers valid for what the API reads or writes).
#![allow(clippy::missing_safety_doc)]
// The C signatures are fixed by the HSA API.
#![allow(clippy::too_many_arguments)]

pub mod clock;
pub mod copy;
pub mod executable;
pub mod guard;
pub mod info;
pub mod intercept;
pub mod loader;
pub mod memory;
pub mod queue;
pub mod runtime;
pub mod scratch;
pub mod signal;
pub mod stock_read;
pub mod tables;
pub mod topology;
pub mod types;

/// `rocprofiler_register_import_hsa`: the runtime version, `10000 * major + 100 * minor +
/// patch`.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_register_import_hsa() -> u32 {
    runtime::RUNTIME_VERSION_CODE
}

#[cfg(test)]
mod tests;
