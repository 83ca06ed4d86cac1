//! Simulated librocdxg.so: the WSL2 DXG thunk's KMT entry points, driven by a scenario.
//!
//! Built as a cdylib (`librocdxg.so`, SONAME `librocdxg.so.1`) that product code `dlopen`s like
//! the real thunk. The exports are in [`kmt`]; their rules, free of raw pointers, in [`state`];
//! the `HsaNodeProperties` description in [`layout`] and the values it encodes in [`record`].
//! The GPU behind the thunk (clocks, dispatch timeline, SDMA, PM4, performance counters) and
//! its simulator-internal `wslsim_gpu_*` exports are in [`gpu`].
//! See `sim/README.md` for the scenario schema and the behaviour of every export.
//!
//! When loaded as the shared object, an ELF constructor logs the load to `WSLSIM_CALL_LOG` and
//! hides the exports the scenario says are missing (`thunk.hidden_exports`, and `DxgAbiCheck`
//! when `thunk.abi_check = "absent"`).

pub mod ffi;
pub mod gpu;
pub mod kmt;
pub mod layout;
pub mod record;
pub mod state;
pub mod status;

use wslsim_scenario::{AbiCheck, Scenario};

/// The export names the scenario hides from `dlsym`.
pub fn hidden_exports(scenario: &Scenario) -> Vec<String> {
    let mut hidden = scenario.thunk.hidden_exports.clone();
    if scenario.thunk.abi_check == AbiCheck::Absent && !hidden.iter().any(|n| n == "DxgAbiCheck") {
        hidden.push("DxgAbiCheck".to_owned());
    }
    hidden
}

/// Installs `scenario` and forgets all thunk state (open count, snapshot, negotiated size),
/// the GPU (timelines, registers, counter sessions) and the vendor-packet gate.
///
/// For in-process tests that call the exports directly; export hiding is not affected.
#[doc(hidden)]
pub fn reset_for_tests(scenario: Scenario) {
    state::reset(scenario);
    gpu::reset();
}

/// The ELF constructor: runs when the shared object is loaded (not in this crate's unit tests).
#[cfg_attr(test, allow(dead_code))]
extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| {
        let hidden = hidden_exports(wslsim_scenario::current());
        let anchor = kmt::hsaKmtOpenKFD as *const std::ffi::c_void;
        // SAFETY: we are this object's ELF constructor and `anchor` is one of its functions.
        unsafe { wslsim_scenario::on_library_load("rocdxg", anchor, &hidden) };
    });
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = on_load;

#[cfg(test)]
mod tests;
