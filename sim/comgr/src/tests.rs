use super::*;

#[test]
fn gfx11_isa_names_are_supported() {
    for name in [
        "amdgcn-amd-amdhsa--gfx1100",
        "amdgcn-amd-amdhsa--gfx1103",
        "amdgcn-amd-amdhsa--gfx1150",
        "amdgcn-amd-amdhsa--gfx1151",
        "amdgcn-amd-amdhsa--gfx11-generic",
        "amdgcn-amd-amdhsa--gfx1150:xnack-",
        "amdgcn-amd-amdhsa--gfx1100:sramecc+:xnack-",
    ] {
        assert!(is_supported_isa(name), "{name}");
    }
    for name in [
        "",
        "gfx1150",
        "amdgcn-amd-amdhsa--gfx1030",
        "amdgcn-amd-amdhsa--gfx90a",
        "amdgcn-amd-amdhsa--gfx1200",
        "amdgcn-amd-amdhsa--gfx115",
        "amdgcn-amd-amdhsa--gfx11500",
        "amdgcn-amd-amdhsa-gfx1150",
        "amdgcn-amd-amdhsa--gfx1150:",
        "amdgcn-amd-amdhsa--gfx1150:xnack",
        "amdgcn-amd-amdhsa--gfx1150:+",
        "amdgcn-amd-amdhsa--gfx1150:XNACK+",
        "amdgcn-amd-amdhsa--gfx1150 ",
        "amdgcn-amd-amdhsa--gfx11-generic2",
        "AMDGCN-amd-amdhsa--gfx1150",
    ] {
        assert!(!is_supported_isa(name), "{name:?}");
    }
}

#[test]
fn status_strings() {
    let mut text: *const c_char = std::ptr::null();
    for (status, expected) in [
        (AMD_COMGR_STATUS_SUCCESS, c"SUCCESS"),
        (AMD_COMGR_STATUS_ERROR, c"ERROR"),
        (AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT, c"INVALID_ARGUMENT"),
        (AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES, c"OUT_OF_RESOURCES"),
    ] {
        // SAFETY: `text` is a writable pointer slot.
        assert_eq!(unsafe { amd_comgr_status_string(status, &mut text) }, 0);
        // SAFETY: the library wrote a static NUL-terminated string.
        assert_eq!(unsafe { CStr::from_ptr(text) }, expected);
    }
    // SAFETY: as above; a null slot is refused, not written.
    unsafe {
        assert_eq!(
            amd_comgr_status_string(4, &mut text),
            AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            amd_comgr_status_string(0, std::ptr::null_mut()),
            AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT
        );
    }
}

#[test]
fn version_and_null_pointers() {
    let (mut major, mut minor) = (0usize, 0usize);
    // SAFETY: writable size_t slots, or null (skipped).
    unsafe {
        amd_comgr_get_version(&mut major, &mut minor);
        amd_comgr_get_version(std::ptr::null_mut(), std::ptr::null_mut());
    }
    assert_eq!((major, minor), (3, 0));
}

#[test]
fn a_panic_becomes_error() {
    assert_eq!(guard(|| panic!("simulated bug")), AMD_COMGR_STATUS_ERROR);
    assert_eq!(guard(|| Err(7)), 7);
    assert_eq!(guard(|| Ok(())), AMD_COMGR_STATUS_SUCCESS);
}
