//! Hands the compiler path to the `tool` integration test, which compiles its own mini tool
//! library (`tests/support/mini_tool.rs`) with rustc at test time.

fn main() {
    // Build scripts get RUSTC from cargo; test binaries do not, so pass it on.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    println!("cargo:rustc-env=SIM_WORKLOADS_RUSTC={rustc}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
