//! Resolving and loading the thunk's entry points.

use crate::*;
use core::ffi::{CStr, c_void};
use core::ptr::NonNull;
use libloading::os::unix::Library;
use std::path::PathBuf;

/// The unversioned name both the HSA runtime and the profiler ask the loader for, so one
/// `librocdxg.so` link early on `LD_LIBRARY_PATH` redirects both.
pub const LIBRARY_NAME: &str = "librocdxg.so";

/// The symbols [`ThunkFns::load`] asks for, in the order it asks: the five required entry
/// points, then the optional `DxgAbiCheck` and `hsaKmtGetNodeWallclockFrequency`.
pub const SYMBOLS: [&CStr; 7] = [
    c"hsaKmtOpenKFD",
    c"hsaKmtAcquireSystemProperties",
    c"hsaKmtGetNodeProperties",
    c"hsaKmtReleaseSystemProperties",
    c"hsaKmtCloseKFD",
    c"DxgAbiCheck",
    c"hsaKmtGetNodeWallclockFrequency",
];
const REQUIRED: usize = 5;

/// Errors of loading the thunk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `dlopen` failed (both with `RTLD_NOLOAD` and normally).
    #[error("dlopen({name}) failed: {reason}")]
    Open {
        /// The name passed to `dlopen`.
        name: String,
        /// `dlerror()`'s text.
        reason: String,
    },
    /// One or more required entry points are not exported; nothing was called.
    #[error("{library} does not export {}", .symbols.join(", "))]
    MissingSymbols {
        /// The library (or lookup) that was searched.
        library: String,
        /// Every required symbol that did not resolve, in lookup order.
        symbols: Vec<&'static str>,
    },
}

/// The entry points of the topology read. The five required ones are all resolved before any
/// can be called; the handshake and the wall-clock query are optional.
#[derive(Debug, Clone, Copy)]
pub struct ThunkFns {
    /// `hsaKmtOpenKFD`.
    pub hsaKmtOpenKFD: PFN_hsaKmtOpenKFD,
    /// `hsaKmtAcquireSystemProperties`.
    pub hsaKmtAcquireSystemProperties: PFN_hsaKmtAcquireSystemProperties,
    /// `hsaKmtGetNodeProperties`.
    pub hsaKmtGetNodeProperties: PFN_hsaKmtGetNodeProperties,
    /// `hsaKmtReleaseSystemProperties`.
    pub hsaKmtReleaseSystemProperties: PFN_hsaKmtReleaseSystemProperties,
    /// `hsaKmtCloseKFD`.
    pub hsaKmtCloseKFD: PFN_hsaKmtCloseKFD,
    /// `DxgAbiCheck`, exported by released librocdxg packages but not by every build.
    pub DxgAbiCheck: Option<PFN_DxgAbiCheck>,
    /// `hsaKmtGetNodeWallclockFrequency`.
    pub hsaKmtGetNodeWallclockFrequency: Option<PFN_hsaKmtGetNodeWallclockFrequency>,
}

impl ThunkFns {
    /// Resolves every entry point through `lookup`, asking for [`SYMBOLS`] in order.
    ///
    /// All-or-nothing: if any required symbol is missing, the error names every missing one
    /// (`library` labels the source in the message).
    ///
    /// # Safety
    /// Every non-null pointer `lookup` returns for a name must be a function with the C
    /// signature of the hsaKmt entry point of that name, and must stay callable for as long as
    /// the returned table is used.
    pub unsafe fn load(
        library: &str,
        mut lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
    ) -> Result<Self, Error> {
        let found: [Option<NonNull<c_void>>; 7] = core::array::from_fn(|i| lookup(SYMBOLS[i]));
        let missing: Vec<&'static str> = SYMBOLS[..REQUIRED]
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(name, _)| name.to_str().unwrap_or("?"))
            .collect();
        if !missing.is_empty() {
            return Err(Error::MissingSymbols {
                library: library.to_owned(),
                symbols: missing,
            });
        }
        let req = |i: usize| found[i].expect("checked above").as_ptr();
        // SAFETY: each pointer was returned for the symbol of the matching name, which the
        // caller guarantees has the C signature of the function-pointer type it becomes here.
        unsafe {
            Ok(Self {
                hsaKmtOpenKFD: core::mem::transmute::<*mut c_void, PFN_hsaKmtOpenKFD>(req(0)),
                hsaKmtAcquireSystemProperties: core::mem::transmute::<
                    *mut c_void,
                    PFN_hsaKmtAcquireSystemProperties,
                >(req(1)),
                hsaKmtGetNodeProperties: core::mem::transmute::<
                    *mut c_void,
                    PFN_hsaKmtGetNodeProperties,
                >(req(2)),
                hsaKmtReleaseSystemProperties: core::mem::transmute::<
                    *mut c_void,
                    PFN_hsaKmtReleaseSystemProperties,
                >(req(3)),
                hsaKmtCloseKFD: core::mem::transmute::<*mut c_void, PFN_hsaKmtCloseKFD>(req(4)),
                DxgAbiCheck: found[5]
                    .map(|p| core::mem::transmute::<*mut c_void, PFN_DxgAbiCheck>(p.as_ptr())),
                hsaKmtGetNodeWallclockFrequency: found[6].map(|p| {
                    core::mem::transmute::<*mut c_void, PFN_hsaKmtGetNodeWallclockFrequency>(
                        p.as_ptr(),
                    )
                }),
            })
        }
    }
}

/// How [`Rocdxg::open`] obtained the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedFrom {
    /// It was already resident (the HSA runtime's copy), found with `RTLD_NOLOAD`.
    Resident,
    /// It was loaded by this call.
    Loaded,
}

/// The loaded thunk: its entry points and the handle keeping them valid. Dropping it calls
/// `dlclose` exactly once.
#[derive(Debug)]
pub struct Rocdxg {
    fns: ThunkFns,
    from: LoadedFrom,
    path: Option<PathBuf>,
    _lib: Library,
}

impl Rocdxg {
    /// Loads [`LIBRARY_NAME`]: first with `RTLD_NOLOAD` to reuse a copy already in the process,
    /// then normally. Either way with `RTLD_NOW | RTLD_LOCAL`.
    ///
    /// # Safety
    /// Loading a shared object runs its initialisers; the library found must be a DXG thunk
    /// whose exports have the hsaKmt C signatures.
    #[doc(alias = "dlopen")]
    pub unsafe fn open() -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::open_named(LIBRARY_NAME) }
    }

    /// [`Rocdxg::open`] with another file name or path.
    ///
    /// # Safety
    /// As for [`Rocdxg::open`].
    pub unsafe fn open_named(name: &str) -> Result<Self, Error> {
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
        // SAFETY: the caller vouches for the library's initialisers.
        let (lib, from) = match unsafe { Library::open(Some(name), flags | libc::RTLD_NOLOAD) } {
            Ok(lib) => (lib, LoadedFrom::Resident),
            Err(_) => {
                // SAFETY: as above.
                let lib = unsafe { Library::open(Some(name), flags) }.map_err(|e| Error::Open {
                    name: name.to_owned(),
                    reason: e.to_string(),
                })?;
                (lib, LoadedFrom::Loaded)
            }
        };
        // SAFETY: symbols come from the thunk the caller vouched for; `lib` is stored next to
        // the table so the pointers stay valid for its lifetime.
        let fns = unsafe {
            ThunkFns::load(name, |sym| {
                lib.get::<*mut c_void>(sym.to_bytes_with_nul())
                    .ok()
                    .and_then(|s| NonNull::new(*s))
            })
        }?;
        let path = object_path(fns.hsaKmtOpenKFD as *const c_void);
        Ok(Self {
            fns,
            from,
            path,
            _lib: lib,
        })
    }

    /// The resolved entry points; valid while `self` lives.
    pub fn fns(&self) -> &ThunkFns {
        &self.fns
    }

    /// Whether the library was already resident or loaded by this call.
    pub fn loaded_from(&self) -> LoadedFrom {
        self.from
    }

    /// The file the loader actually mapped, if it could be determined.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }
}

/// The path of the shared object containing `addr`, from `dladdr`.
fn object_path(addr: *const c_void) -> Option<PathBuf> {
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` only reads `addr` as an address and writes `info`.
    let ok = unsafe { libc::dladdr(addr, info.as_mut_ptr()) };
    // SAFETY: zero-initialised and possibly filled by `dladdr`; all-zero is a valid Dl_info.
    let info = unsafe { info.assume_init() };
    if ok == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: `dli_fname` is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn ok0() -> HSAKMT_STATUS {
        HSAKMT_STATUS::SUCCESS
    }

    fn fake(name: &CStr) -> Option<NonNull<c_void>> {
        // Any valid function pointer works for resolution; only the names matter here.
        SYMBOLS
            .contains(&name)
            .then(|| NonNull::new(ok0 as *mut c_void))
            .flatten()
    }

    #[test]
    fn asks_for_every_symbol_in_order() {
        let mut asked = Vec::new();
        // SAFETY: the table is only inspected, never called.
        let fns = unsafe {
            ThunkFns::load("fake", |n| {
                asked.push(n.to_owned());
                fake(n)
            })
        }
        .unwrap();
        assert_eq!(
            asked,
            SYMBOLS.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()
        );
        assert!(fns.DxgAbiCheck.is_some());
    }

    #[test]
    fn each_missing_required_symbol_is_named() {
        for missing in &SYMBOLS[..REQUIRED] {
            // SAFETY: the table is never called.
            let err =
                unsafe { ThunkFns::load("fake", |n| if n == *missing { None } else { fake(n) }) }
                    .unwrap_err();
            let text = err.to_string();
            assert_eq!(
                text,
                format!("fake does not export {}", missing.to_str().unwrap())
            );
        }
    }

    #[test]
    fn optional_symbols_may_be_absent() {
        // SAFETY: the table is never called.
        let fns =
            unsafe { ThunkFns::load("fake", |n| if n == c"DxgAbiCheck" { None } else { fake(n) }) }
                .unwrap();
        assert!(fns.DxgAbiCheck.is_none());
        assert!(fns.hsaKmtGetNodeWallclockFrequency.is_some());
    }

    #[test]
    fn missing_library_is_an_open_error() {
        // SAFETY: the name does not exist, so nothing is loaded.
        let err = unsafe { Rocdxg::open_named("librocdxg-does-not-exist.so") }.unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{err}");
    }
}
