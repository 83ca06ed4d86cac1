//! `OTF2_FlushCallbacks` matches, member by member, the table compiled from the installed OTF2
//! 3.0.2 headers (`abi/otf2.tsv`); its size and offsets are also asserted at compile time.

#[test]
fn flush_callbacks_match_the_compiled_header() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../abi/otf2.tsv");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    for layout in otf2_sys::layouts() {
        let mut ours = String::new();
        c_layout::write_tsv(&mut ours, &layout).unwrap();
        let reference: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{}\t", layout.c_name)))
            .collect();
        assert_eq!(
            ours.lines().collect::<Vec<_>>(),
            reference,
            "{}",
            layout.rust_name
        );
    }
}

#[test]
fn the_library_loads_where_it_is_installed() {
    // Only where the package is installed (as `.ci/run` installs it); a library that loads
    // must have every entry point.
    // SAFETY: the installed OTF2 3.0 library; loading only runs its initialisers.
    let lib = match unsafe { otf2_sys::Otf2::open() } {
        Err(otf2_sys::Error::Open { reason, .. }) => {
            eprintln!("the OTF2 library is not installed ({reason}): checks nothing");
            return;
        }
        r => r.unwrap(),
    };
    // SAFETY: OTF2_Error_GetName takes any code and returns a static string.
    let name = unsafe { core::ffi::CStr::from_ptr((lib.fns().OTF2_Error_GetName)(0)) };
    assert_eq!(name.to_str().unwrap(), "SUCCESS");
}
