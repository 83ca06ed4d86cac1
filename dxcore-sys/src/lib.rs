//! Raw FFI to `libdxcore.so`, the D3DKMT user-mode library WSL2 maps into Linux
//! (`/usr/lib/wsl/lib`). Only the three flat exports agent discovery uses are bound:
//! `D3DKMTEnumAdapters3`, `D3DKMTQueryAdapterInfo` and `D3DKMTCloseAdapter`, with the query
//! payloads it reads. Layouts are x86-64 Linux (natural alignment; `WCHAR` is 32 bits there).

#![allow(non_snake_case, non_camel_case_types)]

use c_layout::c_struct;
use core::ffi::{CStr, c_void};
use core::fmt;
use core::ptr::NonNull;
use libloading::os::unix::Library;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// An `NTSTATUS`: 0 is success, values with the top bits `0xC...` are errors.
#[repr(transparent)]
#[must_use]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NTSTATUS(pub i32);

impl NTSTATUS {
    /// `STATUS_SUCCESS`.
    pub const SUCCESS: Self = Self(0);
    /// `STATUS_UNSUCCESSFUL`.
    pub const UNSUCCESSFUL: Self = Self(0xC000_0001_u32 as i32);
    /// `STATUS_INVALID_PARAMETER`.
    pub const INVALID_PARAMETER: Self = Self(0xC000_000D_u32 as i32);
    /// `STATUS_BUFFER_TOO_SMALL`.
    pub const BUFFER_TOO_SMALL: Self = Self(0xC000_0023_u32 as i32);
    /// `STATUS_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: Self = Self(0xC000_00BB_u32 as i32);

    /// True for `STATUS_SUCCESS` only.
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for NTSTATUS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0 as u32)
    }
}

impl fmt::Debug for NTSTATUS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A kernel-mode object handle (`D3DKMT_HANDLE`).
pub type D3DKMT_HANDLE = u32;

/// `KMTQUERYADAPTERINFOTYPE` values used here.
pub type KMTQUERYADAPTERINFOTYPE = u32;
/// Segment sizes: [`D3DKMT_SEGMENTSIZEINFO`].
pub const KMTQAITYPE_GETSEGMENTSIZE: KMTQUERYADAPTERINFOTYPE = 3;
/// PCI address: [`D3DKMT_ADAPTERADDRESS`].
pub const KMTQAITYPE_ADAPTERADDRESS: KMTQUERYADAPTERINFOTYPE = 6;
/// Registry strings: [`D3DKMT_ADAPTERREGISTRYINFO`].
pub const KMTQAITYPE_ADAPTERREGISTRYINFO: KMTQUERYADAPTERINFOTYPE = 8;
/// PCI ids: [`D3DKMT_QUERY_DEVICE_IDS`].
pub const KMTQAITYPE_PHYSICALADAPTERDEVICEIDS: KMTQUERYADAPTERINFOTYPE = 31;

/// `D3DKMT_ENUMADAPTERS_FILTER` bit 0: include compute-only adapters.
pub const ENUMADAPTERS_FILTER_INCLUDE_COMPUTE_ONLY: u64 = 1 << 0;
/// `D3DKMT_ENUMADAPTERS_FILTER` bit 1: include display-only adapters.
pub const ENUMADAPTERS_FILTER_INCLUDE_DISPLAY_ONLY: u64 = 1 << 1;

/// Characters in each `D3DKMT_ADAPTERREGISTRYINFO` string (`MAX_PATH`).
pub const MAX_PATH: usize = 260;

c_struct! {
    /// `LUID`: a locally unique identifier; Windows identifies adapters by it.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct LUID as "LUID", size 8 {
        pub LowPart: u32 => 0,
        pub HighPart: i32 => 4,
    }
}

c_struct! {
    /// `D3DKMT_ADAPTERINFO`: one enumerated adapter.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_ADAPTERINFO as "D3DKMT_ADAPTERINFO", size 20 {
        pub hAdapter: D3DKMT_HANDLE => 0,
        pub AdapterLuid: LUID => 4,
        pub NumOfSources: u32 => 12,
        pub bPrecisePresentRegionsPreferred: i32 => 16,
    }
}

c_struct! {
    /// `D3DKMT_ENUMADAPTERS3`: with `pAdapters` null only `NumAdapters` is returned.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct D3DKMT_ENUMADAPTERS3 as "D3DKMT_ENUMADAPTERS3", size 24 {
        pub Filter: u64 => 0,
        pub NumAdapters: u32 => 8,
        pub pAdapters: *mut D3DKMT_ADAPTERINFO => 16,
    }
}

c_struct! {
    /// `D3DKMT_QUERYADAPTERINFO`: `Type` selects the payload at `pPrivateDriverData`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct D3DKMT_QUERYADAPTERINFO as "D3DKMT_QUERYADAPTERINFO", size 24 {
        pub hAdapter: D3DKMT_HANDLE => 0,
        pub Type: KMTQUERYADAPTERINFOTYPE => 4,
        pub pPrivateDriverData: *mut c_void => 8,
        pub PrivateDriverDataSize: u32 => 16,
    }
}

c_struct! {
    /// `D3DKMT_CLOSEADAPTER`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct D3DKMT_CLOSEADAPTER as "D3DKMT_CLOSEADAPTER", size 4 {
        pub hAdapter: D3DKMT_HANDLE => 0,
    }
}

c_struct! {
    /// `D3DKMT_DEVICE_IDS`: the adapter's PCI identity.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_DEVICE_IDS as "D3DKMT_DEVICE_IDS", size 24 {
        pub VendorID: u32 => 0,
        pub DeviceID: u32 => 4,
        pub SubVendorID: u32 => 8,
        pub SubSystemID: u32 => 12,
        pub RevisionID: u32 => 16,
        pub BusType: u32 => 20,
    }
}

c_struct! {
    /// `D3DKMT_QUERY_DEVICE_IDS`, payload of [`KMTQAITYPE_PHYSICALADAPTERDEVICEIDS`].
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_QUERY_DEVICE_IDS as "D3DKMT_QUERY_DEVICE_IDS", size 28 {
        pub PhysicalAdapterIndex: u32 => 0,
        pub DeviceIds: D3DKMT_DEVICE_IDS => 4,
    }
}

c_struct! {
    /// `D3DKMT_ADAPTERADDRESS`, payload of [`KMTQAITYPE_ADAPTERADDRESS`].
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_ADAPTERADDRESS as "D3DKMT_ADAPTERADDRESS", size 12 {
        pub BusNumber: u32 => 0,
        pub DeviceNumber: u32 => 4,
        pub FunctionNumber: u32 => 8,
    }
}

c_struct! {
    /// `D3DKMT_ADAPTERREGISTRYINFO`, payload of [`KMTQAITYPE_ADAPTERREGISTRYINFO`]. Each string
    /// is `WCHAR[MAX_PATH]`, and WSL's libdxcore widens `WCHAR` to 32 bits.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_ADAPTERREGISTRYINFO as "D3DKMT_ADAPTERREGISTRYINFO", size 4160 {
        pub AdapterString: [u32; MAX_PATH] => 0,
        pub BiosString: [u32; MAX_PATH] => 1040,
        pub DacType: [u32; MAX_PATH] => 2080,
        pub ChipType: [u32; MAX_PATH] => 3120,
    }
}

c_struct! {
    /// `D3DKMT_SEGMENTSIZEINFO`, payload of [`KMTQAITYPE_GETSEGMENTSIZE`].
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct D3DKMT_SEGMENTSIZEINFO as "D3DKMT_SEGMENTSIZEINFO", size 24 {
        pub DedicatedVideoMemorySize: u64 => 0,
        pub DedicatedSystemMemorySize: u64 => 8,
        pub SharedSystemMemorySize: u64 => 16,
    }
}

/// Decodes a NUL-terminated 32-bit `WCHAR` string (at most its array length) to UTF-8;
/// invalid code points become U+FFFD.
pub fn wide_to_string(wide: &[u32]) -> String {
    wide.iter()
        .take_while(|&&c| c != 0)
        .map(|&c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// `NTSTATUS D3DKMTEnumAdapters3(D3DKMT_ENUMADAPTERS3*)`.
pub type PFN_D3DKMTEnumAdapters3 = unsafe extern "C" fn(*mut D3DKMT_ENUMADAPTERS3) -> NTSTATUS;
/// `NTSTATUS D3DKMTQueryAdapterInfo(const D3DKMT_QUERYADAPTERINFO*)`.
pub type PFN_D3DKMTQueryAdapterInfo =
    unsafe extern "C" fn(*const D3DKMT_QUERYADAPTERINFO) -> NTSTATUS;
/// `NTSTATUS D3DKMTCloseAdapter(const D3DKMT_CLOSEADAPTER*)`.
pub type PFN_D3DKMTCloseAdapter = unsafe extern "C" fn(*const D3DKMT_CLOSEADAPTER) -> NTSTATUS;

/// The name asked of the loader first.
pub const LIBRARY_NAME: &str = "libdxcore.so";
/// Where WSL2 installs it; tried when the loader's search fails.
pub const WSL_LIBRARY_PATH: &str = "/usr/lib/wsl/lib/libdxcore.so";

/// The three exports, in the order they are asked for.
pub const SYMBOLS: [&CStr; 3] = [
    c"D3DKMTEnumAdapters3",
    c"D3DKMTQueryAdapterInfo",
    c"D3DKMTCloseAdapter",
];

/// Errors of loading libdxcore.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither [`LIBRARY_NAME`] nor [`WSL_LIBRARY_PATH`] could be loaded.
    #[error("dlopen(libdxcore.so) failed: {reason}")]
    Open {
        /// `dlerror()`'s text for each name tried.
        reason: String,
    },
    /// Required exports are missing.
    #[error("{library} does not export {}", .symbols.join(", "))]
    MissingSymbols {
        /// The library searched.
        library: String,
        /// Every missing symbol, in lookup order.
        symbols: Vec<&'static str>,
    },
}

/// The D3DKMT entry points, all required.
#[derive(Debug, Clone, Copy)]
pub struct DxcoreFns {
    /// `D3DKMTEnumAdapters3`.
    pub D3DKMTEnumAdapters3: PFN_D3DKMTEnumAdapters3,
    /// `D3DKMTQueryAdapterInfo`.
    pub D3DKMTQueryAdapterInfo: PFN_D3DKMTQueryAdapterInfo,
    /// `D3DKMTCloseAdapter`.
    pub D3DKMTCloseAdapter: PFN_D3DKMTCloseAdapter,
}

impl DxcoreFns {
    /// Resolves the three exports through `lookup`; all-or-nothing, naming every missing one.
    ///
    /// # Safety
    /// Each non-null pointer returned for a name must be the D3DKMT function of that name and
    /// stay callable while the table is used.
    pub unsafe fn load(
        library: &str,
        mut lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
    ) -> Result<Self, Error> {
        let found: [Option<NonNull<c_void>>; 3] = core::array::from_fn(|i| lookup(SYMBOLS[i]));
        match found {
            [Some(enum3), Some(query), Some(close)] => {
                // SAFETY: the caller guarantees each pointer is the function of that name, whose C
                // signature is the target type.
                unsafe {
                    Ok(Self {
                        D3DKMTEnumAdapters3: core::mem::transmute::<
                            *mut c_void,
                            PFN_D3DKMTEnumAdapters3,
                        >(enum3.as_ptr()),
                        D3DKMTQueryAdapterInfo: core::mem::transmute::<
                            *mut c_void,
                            PFN_D3DKMTQueryAdapterInfo,
                        >(query.as_ptr()),
                        D3DKMTCloseAdapter: core::mem::transmute::<
                            *mut c_void,
                            PFN_D3DKMTCloseAdapter,
                        >(close.as_ptr()),
                    })
                }
            }
            _ => Err(Error::MissingSymbols {
                library: library.to_owned(),
                symbols: SYMBOLS
                    .iter()
                    .zip(&found)
                    .filter(|(_, f)| f.is_none())
                    .map(|(n, _)| n.to_str().unwrap_or("?"))
                    .collect(),
            }),
        }
    }
}

/// libdxcore, loaded, with its entry points. Dropping it closes the library once.
#[derive(Debug)]
pub struct Dxcore {
    fns: DxcoreFns,
    _lib: Library,
}

impl Dxcore {
    /// Loads [`LIBRARY_NAME`] (`RTLD_NOW | RTLD_LOCAL`), falling back to [`WSL_LIBRARY_PATH`],
    /// and resolves the three exports.
    ///
    /// # Safety
    /// Loading runs the library's initialisers; the library found must be a D3DKMT library
    /// whose exports have the documented signatures.
    pub unsafe fn open() -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        unsafe { DxcoreLibrary::open()?.resolve() }
    }

    /// Whether libdxcore loads and exports `D3DKMTEnumAdapters3` (the first of [`SYMBOLS`]).
    /// On success the library stays loaded, so that [`DxcoreLibrary::resolve`] can complete
    /// what [`Dxcore::open`] would do without loading it again; dropping it closes it.
    ///
    /// # Safety
    /// As for [`Dxcore::open`].
    pub unsafe fn probe() -> Result<DxcoreLibrary, Error> {
        // SAFETY: forwarded to the caller.
        let lib = unsafe { DxcoreLibrary::open() }?;
        let symbol = SYMBOLS[0];
        // SAFETY: only the presence of the symbol is checked; it is never called.
        let found = unsafe { lib.lib.get::<*mut c_void>(symbol.to_bytes_with_nul()) }
            .ok()
            .is_some_and(|s| !s.is_null());
        if found {
            Ok(lib)
        } else {
            Err(Error::MissingSymbols {
                library: lib.name.to_owned(),
                symbols: vec![symbol.to_str().unwrap_or("?")],
            })
        }
    }

    /// The resolved entry points; valid while `self` lives.
    pub fn fns(&self) -> &DxcoreFns {
        &self.fns
    }
}

/// libdxcore loaded by [`Dxcore::probe`], its exports not yet resolved. Dropping it closes the
/// library once.
#[derive(Debug)]
pub struct DxcoreLibrary {
    lib: Library,
    name: &'static str,
}

impl DxcoreLibrary {
    /// Loads [`LIBRARY_NAME`], falling back to [`WSL_LIBRARY_PATH`].
    ///
    /// # Safety
    /// Loading runs the library's initialisers.
    unsafe fn open() -> Result<Self, Error> {
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
        let mut reasons = Vec::new();
        for name in [LIBRARY_NAME, WSL_LIBRARY_PATH] {
            // SAFETY: forwarded to the caller.
            match unsafe { Library::open(Some(name), flags) } {
                Ok(lib) => return Ok(Self { lib, name }),
                Err(e) => reasons.push(e.to_string()),
            }
        }
        Err(Error::Open {
            reason: reasons.join("; "),
        })
    }

    /// Resolves the three exports, as [`Dxcore::open`] does; the library moves into the result
    /// (and is closed if resolution fails).
    ///
    /// # Safety
    /// The library must be a D3DKMT library whose exports have the documented signatures.
    pub unsafe fn resolve(self) -> Result<Dxcore, Error> {
        let Self { lib, name } = self;
        // SAFETY: the symbols come from the library the caller vouched for, which is kept
        // alive next to the table.
        let fns = unsafe {
            DxcoreFns::load(name, |sym| {
                lib.get::<*mut c_void>(sym.to_bytes_with_nul())
                    .ok()
                    .and_then(|s| NonNull::new(*s))
            })
        }?;
        Ok(Dxcore { fns, _lib: lib })
    }
}

/// Every `#[repr(C)]` layout this crate defines, for `cargo xtask abi-dump`.
pub fn layouts() -> Vec<c_layout::LayoutInfo> {
    use c_layout::LayoutInfo;
    vec![
        LayoutInfo::of::<LUID>("LUID"),
        LayoutInfo::of::<D3DKMT_ADAPTERINFO>("D3DKMT_ADAPTERINFO"),
        LayoutInfo::of::<D3DKMT_ENUMADAPTERS3>("D3DKMT_ENUMADAPTERS3"),
        LayoutInfo::of::<D3DKMT_QUERYADAPTERINFO>("D3DKMT_QUERYADAPTERINFO"),
        LayoutInfo::of::<D3DKMT_CLOSEADAPTER>("D3DKMT_CLOSEADAPTER"),
        LayoutInfo::of::<D3DKMT_DEVICE_IDS>("D3DKMT_DEVICE_IDS"),
        LayoutInfo::of::<D3DKMT_QUERY_DEVICE_IDS>("D3DKMT_QUERY_DEVICE_IDS"),
        LayoutInfo::of::<D3DKMT_ADAPTERADDRESS>("D3DKMT_ADAPTERADDRESS"),
        LayoutInfo::of::<D3DKMT_ADAPTERREGISTRYINFO>("D3DKMT_ADAPTERREGISTRYINFO"),
        LayoutInfo::of::<D3DKMT_SEGMENTSIZEINFO>("D3DKMT_SEGMENTSIZEINFO"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_strings_stop_at_nul_and_replace_invalid_code_points() {
        let mut s = [0u32; 8];
        for (i, c) in "Radeon".chars().enumerate() {
            s[i] = c as u32;
        }
        assert_eq!(wide_to_string(&s), "Radeon");
        assert_eq!(wide_to_string(&[0x41, 0xD800, 0x42]), "A\u{FFFD}B");
        assert_eq!(wide_to_string(&[0x41; 4]), "AAAA");
    }

    #[test]
    fn missing_exports_are_all_named() {
        // SAFETY: nothing resolves, so nothing can be called.
        let err = unsafe { DxcoreFns::load("libdxcore.so", |_| None) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            "libdxcore.so does not export D3DKMTEnumAdapters3, D3DKMTQueryAdapterInfo, D3DKMTCloseAdapter"
        );
    }

    #[test]
    fn ntstatus_prints_as_hex() {
        assert_eq!(NTSTATUS::INVALID_PARAMETER.to_string(), "0xc000000d");
    }
}
