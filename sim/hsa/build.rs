//! Gives the cdylib the SONAME of the real runtime, so it can be staged as
//! `libhsa-runtime64.so.1` with a `libhsa-runtime64.so` link.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsa-runtime64.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
