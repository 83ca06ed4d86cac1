//! Shared code of the simulator's test applications.
//!
//! Each workload is a plain executable. A real HIP program is linked against
//! `libamdhip64.so.7` (and `librocprofiler-sdk-roctx.so.1`) through `DT_NEEDED`; cargo cannot
//! link a binary against a cdylib of the same workspace, so the workloads do the simulator's
//! stand-in for that: at the very start of `main` they `dlopen` the runtimes by SONAME
//! (`RTLD_NOW | RTLD_GLOBAL`, found through `LD_LIBRARY_PATH` like a `DT_NEEDED` entry) and
//! resolve every function they call, all or nothing ([`loader`]). Their kernels are Rust
//! `extern "C"` CPU implementations registered exactly like a hipcc-compiled program's
//! constructor registers them ([`program`]) and launched like `kernel<<<g, b>>>()` compiles
//! ([`kernels`]).

pub mod kernels;
pub mod loader;
pub mod program;
pub mod reference;

/// How to run a workload against the staged simulator (printed when loading fails).
pub const HOW_TO_RUN: &str = "set LD_LIBRARY_PATH to the staged simulator libraries, e.g. \
`LD_LIBRARY_PATH=target/debug/sim/lib target/debug/reference-workload` after `cargo xtask build`";

/// The program name for messages.
pub fn program_name() -> String {
    std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "workload".to_owned())
}

/// Prints a message and exits with status 1 (a wrong result or a failed call).
pub fn fail(message: &str) -> ! {
    eprintln!("{}: {message}", program_name());
    std::process::exit(1)
}

/// Parses the optional positional argument `index` as a number, or exits with status 2.
pub fn arg_or<T: std::str::FromStr>(index: usize, default: T) -> T {
    match std::env::args().nth(index) {
        None => default,
        Some(text) => text.parse().unwrap_or_else(|_| {
            eprintln!(
                "{}: argument {index} ({text:?}) is not a valid number",
                program_name()
            );
            std::process::exit(2)
        }),
    }
}
