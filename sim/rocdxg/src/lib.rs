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

use std::ffi::c_void;
use std::sync::OnceLock;

use wslsim_scenario::{AbiCheck, Scenario};

/// The export names the scenario hides from `dlsym`.
pub fn hidden_exports(scenario: &Scenario) -> Vec<String> {
    let mut hidden = scenario.thunk.hidden_exports.clone();
    if scenario.thunk.abi_check == AbiCheck::Absent && !hidden.iter().any(|n| n == "DxgAbiCheck") {
        hidden.push("DxgAbiCheck".to_owned());
    }
    hidden
}

/// An address inside this copy of the library that the dynamic linker never rebinds.
///
/// A Rust function that is not `#[no_mangle]` is not exported from the cdylib (its version
/// script makes it local), so taking its address is a PC-relative computation within this
/// object. An exported entry point would not do: its address is loaded through the GOT, which
/// the loader binds to the first object in the global scope defining the name — with two
/// copies of librocdxg loaded, the second copy's constructor would find the first copy.
#[inline(never)]
fn own_anchor() -> *const c_void {
    own_anchor as *const c_void
}

/// This copy's path, as the loader registered it (`dladdr` of [`own_anchor`]).
pub fn own_path() -> Option<&'static str> {
    static PATH: OnceLock<Option<String>> = OnceLock::new();
    PATH.get_or_init(|| wslsim_scenario::object_path(own_anchor()))
        .as_deref()
}

/// The process scenario as this copy of the thunk simulates it: `[thunk]`, or the
/// `[[thunk.copies]]` entry matching this copy's path. Also which entry matched.
pub fn copy_scenario(scenario: &Scenario, path: Option<&str>) -> (Scenario, Option<usize>) {
    let (thunk, entry) = scenario.thunk.for_copy(path);
    (
        Scenario {
            thunk,
            ..scenario.clone()
        },
        entry,
    )
}

/// [`copy_scenario`] for this copy, read once.
pub fn this_copy() -> &'static (Scenario, Option<usize>) {
    static COPY: OnceLock<(Scenario, Option<usize>)> = OnceLock::new();
    COPY.get_or_init(|| copy_scenario(wslsim_scenario::current(), own_path()))
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
        let (scenario, entry) = this_copy();
        let hidden = hidden_exports(scenario);
        // SAFETY: we are this object's ELF constructor and the anchor lies in this object.
        unsafe { wslsim_scenario::on_library_load("rocdxg", own_anchor(), &hidden) };
        let thunk = &scenario.thunk;
        wslsim_scenario::log_call(
            "rocdxg",
            format_args!(
                "behaves path={} as={} layout={} abi_check={} snapshot_refcount={}",
                own_path().unwrap_or("?"),
                entry.map_or_else(|| "[thunk]".to_owned(), |i| format!("thunk.copies[{i}]")),
                thunk.layout,
                match thunk.abi_check {
                    AbiCheck::Absent => "absent",
                    AbiCheck::Strict => "strict",
                    AbiCheck::Lenient => "lenient",
                    AbiCheck::Reject => "reject",
                },
                thunk.snapshot_refcount
            ),
        );
    });
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = on_load;

#[cfg(test)]
mod tests;
