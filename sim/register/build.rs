//! Gives the cdylib the SONAME of AMD's library, so `cargo xtask build` can
//! stage it as `librocprofiler-register.so.0`, and hands the compiler path to
//! the `discovery` integration test, which compiles its own mini tool library.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librocprofiler-register.so.0");
    // Build scripts get RUSTC from cargo; test binaries do not, so pass it on.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    println!("cargo:rustc-env=SIM_REGISTER_RUSTC={rustc}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
