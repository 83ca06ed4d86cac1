//! Gives the cdylib the SONAME the real library has, so it can be staged as
//! `libamd_comgr.so.3`.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libamd_comgr.so.3");
    println!("cargo:rerun-if-changed=build.rs");
}
