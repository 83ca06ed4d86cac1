//! Simulated libdxcore.so: WSL's D3DKMT user-mode library, driven by a scenario.
//!
//! Built as a cdylib (`libdxcore.so`) exporting the flat D3DKMT entry points the profiler uses:
//! `D3DKMTEnumAdapters3`, `D3DKMTQueryAdapterInfo` and `D3DKMTCloseAdapter` ([`exports`]), with
//! the x86-64 Linux layouts in [`ffi`] and the rules in [`state`]. See `sim/README.md` for the
//! scenario schema and the behaviour of every export.
//!
//! When loaded as the shared object, an ELF constructor logs the load to `WSLSIM_CALL_LOG` and
//! hides the exports named by `dxcore.hidden_exports`.

pub mod exports;
pub mod ffi;
pub mod state;

use wslsim_scenario::Scenario;

/// Installs `scenario` and forgets all state (open handles, handle serials).
///
/// For in-process tests that call the exports directly; export hiding is not affected.
#[doc(hidden)]
pub fn reset_for_tests(scenario: Scenario) {
    state::reset(scenario);
}

/// For `rocprof --sim`, before it launches anything: the scenario's one-line diagnostic
/// (`wslsim: cannot use scenario <path>: <reason>`, NUL-terminated, valid while the library
/// stays loaded), or null when the scenario is usable. Printing it is the caller's job; it
/// then sets `WSLSIM_SCENARIO_REPORTED` so the libraries stay quiet in the run's processes.
#[unsafe(no_mangle)]
pub extern "C" fn wslsim_scenario_diagnostic() -> *const std::ffi::c_char {
    static TEXT: std::sync::OnceLock<Option<std::ffi::CString>> = std::sync::OnceLock::new();
    std::panic::catch_unwind(|| {
        TEXT.get_or_init(|| {
            wslsim_scenario::current_diagnostic()
                .map(|d| std::ffi::CString::new(d.replace('\0', " ")).unwrap_or_default())
        })
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr())
    })
    .unwrap_or(std::ptr::null())
}

/// The ELF constructor: runs when the shared object is loaded (not in this crate's unit tests).
#[cfg_attr(test, allow(dead_code))]
extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| {
        let hidden = &wslsim_scenario::current().dxcore.hidden_exports;
        let anchor = exports::D3DKMTEnumAdapters3 as *const std::ffi::c_void;
        // SAFETY: we are this object's ELF constructor and `anchor` is one of its functions.
        unsafe { wslsim_scenario::on_library_load("dxcore", anchor, hidden) };
    });
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = on_load;

#[cfg(test)]
mod tests;
