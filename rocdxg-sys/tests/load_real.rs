//! Loading a real shared object: the simulated thunk built in this workspace
//! (`target/<profile>/librocdxg.so`, produced by `cargo xtask build`).

use rocdxg_sys::{LoadedFrom, Rocdxg};
use std::path::PathBuf;

fn thunk() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().parent().unwrap().join("librocdxg.so");
    assert!(
        lib.exists(),
        "{} is not built: run `cargo xtask test`",
        lib.display()
    );
    lib
}

#[test]
fn a_resident_thunk_is_reused_and_a_cold_one_loaded() {
    let path = thunk();
    let path = path.to_str().unwrap();
    // SAFETY: the simulated thunk has the hsaKmt signatures.
    let first = unsafe { Rocdxg::open_named(path) }.unwrap();
    assert_eq!(first.loaded_from(), LoadedFrom::Loaded);
    assert!(first.fns().DxgAbiCheck.is_some());
    assert!(first.fns().hsaKmtGetNodeWallclockFrequency.is_some());
    assert!(first.path().unwrap().ends_with("librocdxg.so"));
    // SAFETY: as above.
    let second = unsafe { Rocdxg::open_named(path) }.unwrap();
    assert_eq!(
        second.loaded_from(),
        LoadedFrom::Resident,
        "RTLD_NOLOAD must find the first copy"
    );
    drop(second);
    drop(first);
}
