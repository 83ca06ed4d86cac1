//! `rocprof-doctor`: every WSL2 pitfall of the seed document checked before a run, as a
//! library. [`diagnose`] gathers the environment once and runs the checks; the [`Report`] it
//! returns is data (`Serialize`: the `rocprof doctor --json` document), displays as the text
//! report — one line per check, `ok|warning|error  <check>: <evidence>; <fix>`, then a summary
//! line — and decides the exit status ([`Report::verdict`], [`Report::exit_code`]: 0 when no
//! check is an error, 1 otherwise; 2 is an [`Error`], the doctor itself could not run). This
//! crate prints nothing.
//!
//! What is checked (docs/troubleshooting.md, "rocprof doctor", has the table):
//!
//! * the platform: `/dev/dxg`, libdxcore and its exports, `/dev/kfd` (absent on WSL2: no PC
//!   sampling, no SPM), `ROCPROFILER_FORCE_PLATFORM`, and what discovery publishes;
//! * the libraries the loader resolves first (and from where; what they shadow): the DXG
//!   thunk, the HSA runtime, HIP, ROCTx, rocprofiler-register; the thunk's record layout
//!   (the `DxgAbiCheck` handshake and the canary measurement of `rocprof avail`) against the
//!   layout the runtime was built for (its generation, from its version and from how it
//!   behaves); `LD_PRELOAD` of librocdxg by path (the double load) or by name;
//! * the variables: `HSA_TOOLS_DISABLE_REGISTER`, `HSA_ENABLE_DXG_DETECTION` (with the
//!   runtime's generation), `WSLKMT_VENDOR_PACKET`, the late-attach marker,
//!   `ROCPROFILER_FORCE_GFX`, `ROCPROF_HSAKMT_LAYOUT`; exports that `~/.bashrc` makes only
//!   after its early return for non-interactive shells;
//! * the thread-trace decoder and comgr;
//! * an end-to-end self-test: `rocprof-selftest` (shipped next to `rocprof`) run with the
//!   profiler preloaded exactly as `rocprof` runs an application; its record log says whether
//!   the runtime offered its API table and how the agents paired, the program itself whether a
//!   packet on a GPU queue came back and whether a counter read came back non-zero.
//!
//! With `-- app args`, the application is inspected, never run: found on `PATH`, a script
//! (its interpreter is what the loader starts; a script that drops `LD_PRELOAD` is said), a
//! static or set-user-ID program (which ignores `LD_PRELOAD`), and the ROCm libraries its
//! `DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` resolve to in this environment; the self-test then
//! loads the HSA runtime the application would load. Its arguments are not used.
//!
//! Before a launch, [`pairing_warning`] says whether the HSA runtime the loader will resolve
//! and the probed DXG thunk are a matched pair (run mode and `rocprof avail` print it).
//!
//! Modules: [`check`] (one finding, the counts, the environment captured), [`loader`] (the
//! dynamic loader's search re-enacted without loading anything) over [`elf`], [`generation`]
//! (the runtime generations), [`protocol`] (what the doctor and `rocprof-selftest` exchange),
//! [`pairing`]; privately the gathered context, the library facts, one module per group of
//! checks, the self-test, the report and [`diagnose`] itself.

mod app;
pub mod check;
mod context;
mod decoder;
mod diagnose;
pub mod elf;
mod error;
pub mod generation;
mod libraries;
mod libs;
pub mod loader;
pub mod pairing;
mod platform;
pub mod protocol;
mod report;
mod selftest;
mod shell;
mod variables;

pub use app::Details as AppDetails;
pub use check::{Check, Status, Summary};
pub use diagnose::{Options, diagnose};
pub use error::Error;
pub use pairing::{Consequence, PairingWarning, pairing_warning};
pub use platform::{PC_SAMPLING_UNAVAILABLE, SPM_UNAVAILABLE};
pub use report::{Report, SCHEMA, Verdict};
pub use selftest::{Details as SelfTestDetails, PROGRAM as SELFTEST_PROGRAM, Probe};
