//! Gives the cdylib the SONAME the real thunk has, so it can be staged as
//! `librocdxg.so.1.2.0` with `librocdxg.so.1` and `librocdxg.so` links.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librocdxg.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
