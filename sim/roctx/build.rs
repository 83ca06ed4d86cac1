fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librocprofiler-sdk-roctx.so.1");
}
