//! Simulated HIP runtime: `libamdhip64.so.7`.
//!
//! The exports have HIP's real C signatures and call through the two dispatch tables HIP
//! registers with rocprofiler-register ([`table`]). Underneath, the runtime drives the
//! simulated HSA runtime (`libhsa-runtime64.so.1`, opened with `dlopen`) through its public C
//! API the way ROCclr does: agent and pool discovery, one AQL queue per device with a pool of
//! 64 completion signals, kernarg and staging buffers, code-object loading, kernel dispatch
//! packets, SDMA copies and a blit kernel for device-to-device copies ([`runtime`], [`ops`]).
//! Kernels come from the simulator's fat-binary format ([`fatbin`]); their CPU
//! implementations compute real results. `docs/SIMULATOR.md` documents the whole model.

pub mod api;
pub mod blit;
pub mod compiler;
pub mod error;
pub mod fatbin;
pub mod hsa;
pub mod memory;
pub mod modules;
pub mod ops;
pub mod props;
mod register_table;
pub mod runtime;
pub mod table;

#[cfg_attr(test, allow(dead_code))]
extern "C" fn teardown_at_exit() {
    let _ = std::panic::catch_unwind(runtime::teardown);
}

/// The ELF constructor: registers the teardown with `atexit` when the library is loaded, so it
/// runs after the exit handlers the application registers later (such as the
/// `__hipUnregisterFatBinary` handler of a hipcc-compiled program) and before the libraries'
/// destructors. The teardown only acts if the runtime was initialised, and runs once.
#[cfg_attr(test, allow(dead_code))]
extern "C" fn on_load() {
    // SAFETY: registers a plain `extern "C" fn()` with the C library.
    unsafe { libc::atexit(teardown_at_exit) };
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = on_load;

#[cfg(test)]
mod tests;
