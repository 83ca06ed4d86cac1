//! The set of library names that may register, in upstream enum order.

use std::ffi::CStr;

/// A library that may register its API tables; the discriminant is the
/// upstream `rocp_reg_supported_library` value used in the register id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Library {
    /// ROCr, `libhsa-runtime64.so`.
    Hsa = 0,
    /// HIP runtime dispatch table.
    Hip = 1,
    /// ROCTx markers (3 tables).
    Roctx = 2,
    /// HIP compiler dispatch table.
    HipCompiler = 3,
    /// RCCL.
    Rccl = 4,
    /// rocDecode.
    RocDecode = 5,
    /// rocJPEG.
    RocJpeg = 6,
    /// The late-attach library registering back (newest upstream only).
    RocAttach = 7,
}

impl Library {
    /// All supported libraries in enum order.
    pub const ALL: [Library; 8] = [
        Library::Hsa,
        Library::Hip,
        Library::Roctx,
        Library::HipCompiler,
        Library::Rccl,
        Library::RocDecode,
        Library::RocJpeg,
        Library::RocAttach,
    ];

    /// Number of supported libraries (upstream `ROCP_REG_LAST`).
    pub const COUNT: usize = Library::ALL.len();

    /// Index in the enumeration.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The common name a runtime passes, NUL-terminated and `'static`, so it
    /// can be handed out through `rocprofiler_register_registration_info_t`.
    pub const fn common_name(self) -> &'static CStr {
        match self {
            Library::Hsa => c"hsa",
            Library::Hip => c"hip",
            Library::Roctx => c"roctx",
            Library::HipCompiler => c"hip_compiler",
            Library::Rccl => c"rccl",
            Library::RocDecode => c"rocdecode",
            Library::RocJpeg => c"rocjpeg",
            Library::RocAttach => c"rocattach",
        }
    }

    /// Exact, case-sensitive lookup of a common name (bytes without the NUL).
    pub fn from_name(name: &[u8]) -> Option<Library> {
        Library::ALL
            .into_iter()
            .find(|lib| lib.common_name().to_bytes() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_upstream_enum_order() {
        let expected = [
            ("hsa", 0),
            ("hip", 1),
            ("roctx", 2),
            ("hip_compiler", 3),
            ("rccl", 4),
            ("rocdecode", 5),
            ("rocjpeg", 6),
            ("rocattach", 7),
        ];
        for (name, idx) in expected {
            let lib = Library::from_name(name.as_bytes()).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(lib.index(), idx, "{name}");
            assert_eq!(lib.common_name().to_str(), Ok(name));
        }
        assert_eq!(Library::COUNT, 8);
    }

    #[test]
    fn unknown_or_near_miss_names_are_rejected() {
        for name in [
            "",
            "cuda",
            "HSA",
            "hsa ",
            " hsa",
            "hs",
            "hsa\0",
            "hip-compiler",
            "roctx64",
            "attach",
        ] {
            assert_eq!(Library::from_name(name.as_bytes()), None, "{name:?}");
        }
    }
}
