//! Raw FFI to the OTF2 library (Open Trace Format 2, version 3.0: Debian's
//! `libopen-trace-format2-10`, soname `libopen-trace-format2.so.10`), loaded at run time with
//! `dlopen`, so nothing links against it: a program using this crate builds and runs without
//! the library, and only [`Otf2::open`] fails, naming the package to install.
//!
//! Only the writing side is bound: an archive (`OTF2_Archive_*`), its global definitions
//! (strings, clock, regions, attributes, the system tree, location groups, locations), local
//! definition writers (closed empty) and event writers (`Enter`/`Leave` with attribute lists).
//! The entry points form one all-or-nothing table ([`Otf2Fns`]): every symbol is resolved
//! before any is called, and the error names every missing one. Types and constants are
//! spelled as in the headers (`otf2/OTF2_GeneralDefinitions.h`, `OTF2_Definitions.h`); the one
//! struct, [`OTF2_FlushCallbacks`], is laid out with `c_layout::c_struct!` and checked against
//! `abi/otf2.tsv`, compiled from the installed 3.0.2 headers.

#![allow(non_snake_case, non_camel_case_types)]

use c_layout::c_struct;
use core::ffi::{CStr, c_char, c_void};
use core::ptr::NonNull;
use libloading::os::unix::Library;

/// `OTF2_ErrorCode` (an `int`-sized enum): [`OTF2_SUCCESS`] or an error.
pub type OTF2_ErrorCode = i32;
/// `OTF2_TimeStamp`.
pub type OTF2_TimeStamp = u64;
/// `OTF2_StringRef`.
pub type OTF2_StringRef = u32;
/// `OTF2_AttributeRef`.
pub type OTF2_AttributeRef = u32;
/// `OTF2_SystemTreeNodeRef`.
pub type OTF2_SystemTreeNodeRef = u32;
/// `OTF2_LocationGroupRef`.
pub type OTF2_LocationGroupRef = u32;
/// `OTF2_LocationRef`.
pub type OTF2_LocationRef = u64;
/// `OTF2_RegionRef`.
pub type OTF2_RegionRef = u32;
/// `OTF2_FileMode`.
pub type OTF2_FileMode = u8;
/// `OTF2_FileSubstrate`.
pub type OTF2_FileSubstrate = u8;
/// `OTF2_Compression`.
pub type OTF2_Compression = u8;
/// `OTF2_FlushType`.
pub type OTF2_FlushType = u8;
/// `OTF2_FileType`.
pub type OTF2_FileType = u8;
/// `OTF2_RegionRole`.
pub type OTF2_RegionRole = u8;
/// `OTF2_Paradigm`.
pub type OTF2_Paradigm = u8;
/// `OTF2_RegionFlag`.
pub type OTF2_RegionFlag = u32;
/// `OTF2_Type`.
pub type OTF2_Type = u8;
/// `OTF2_LocationGroupType`.
pub type OTF2_LocationGroupType = u8;
/// `OTF2_LocationType`.
pub type OTF2_LocationType = u8;

/// `OTF2_SUCCESS`.
pub const OTF2_SUCCESS: OTF2_ErrorCode = 0;
/// `OTF2_FILEMODE_WRITE`.
pub const OTF2_FILEMODE_WRITE: OTF2_FileMode = 0;
/// `OTF2_SUBSTRATE_POSIX`.
pub const OTF2_SUBSTRATE_POSIX: OTF2_FileSubstrate = 1;
/// `OTF2_COMPRESSION_NONE`.
pub const OTF2_COMPRESSION_NONE: OTF2_Compression = 1;
/// `OTF2_NO_FLUSH`.
pub const OTF2_NO_FLUSH: OTF2_FlushType = 0;
/// `OTF2_FLUSH`.
pub const OTF2_FLUSH: OTF2_FlushType = 1;
/// `OTF2_REGION_ROLE_FUNCTION`.
pub const OTF2_REGION_ROLE_FUNCTION: OTF2_RegionRole = 1;
/// `OTF2_REGION_ROLE_DATA_TRANSFER`.
pub const OTF2_REGION_ROLE_DATA_TRANSFER: OTF2_RegionRole = 30;
/// `OTF2_REGION_ROLE_ALLOCATE`.
pub const OTF2_REGION_ROLE_ALLOCATE: OTF2_RegionRole = 35;
/// `OTF2_PARADIGM_USER`.
pub const OTF2_PARADIGM_USER: OTF2_Paradigm = 1;
/// `OTF2_PARADIGM_HIP`.
pub const OTF2_PARADIGM_HIP: OTF2_Paradigm = 23;
/// `OTF2_REGION_FLAG_NONE`.
pub const OTF2_REGION_FLAG_NONE: OTF2_RegionFlag = 0;
/// `OTF2_TYPE_STRING`.
pub const OTF2_TYPE_STRING: OTF2_Type = 11;
/// `OTF2_LOCATION_GROUP_TYPE_PROCESS`.
pub const OTF2_LOCATION_GROUP_TYPE_PROCESS: OTF2_LocationGroupType = 1;
/// `OTF2_LOCATION_GROUP_TYPE_ACCELERATOR`.
pub const OTF2_LOCATION_GROUP_TYPE_ACCELERATOR: OTF2_LocationGroupType = 2;
/// `OTF2_LOCATION_TYPE_CPU_THREAD`.
pub const OTF2_LOCATION_TYPE_CPU_THREAD: OTF2_LocationType = 1;
/// `OTF2_LOCATION_TYPE_ACCELERATOR_STREAM`.
pub const OTF2_LOCATION_TYPE_ACCELERATOR_STREAM: OTF2_LocationType = 2;
/// `OTF2_UNDEFINED_SYSTEM_TREE_NODE`.
pub const OTF2_UNDEFINED_SYSTEM_TREE_NODE: OTF2_SystemTreeNodeRef = u32::MAX;
/// `OTF2_UNDEFINED_LOCATION_GROUP`.
pub const OTF2_UNDEFINED_LOCATION_GROUP: OTF2_LocationGroupRef = u32::MAX;

/// `OTF2_Archive` (opaque).
#[repr(C)]
pub struct OTF2_Archive {
    _opaque: [u8; 0],
}
/// `OTF2_EvtWriter` (opaque).
#[repr(C)]
pub struct OTF2_EvtWriter {
    _opaque: [u8; 0],
}
/// `OTF2_DefWriter` (opaque).
#[repr(C)]
pub struct OTF2_DefWriter {
    _opaque: [u8; 0],
}
/// `OTF2_GlobalDefWriter` (opaque).
#[repr(C)]
pub struct OTF2_GlobalDefWriter {
    _opaque: [u8; 0],
}
/// `OTF2_AttributeList` (opaque).
#[repr(C)]
pub struct OTF2_AttributeList {
    _opaque: [u8; 0],
}

/// `OTF2_PreFlushCallback`: whether a full buffer is written to its file.
pub type OTF2_PreFlushCallback = unsafe extern "C" fn(
    userData: *mut c_void,
    fileType: OTF2_FileType,
    location: OTF2_LocationRef,
    callerData: *mut c_void,
    r#final: bool,
) -> OTF2_FlushType;
/// `OTF2_PostFlushCallback`: the time a flush ended (a `BufferFlush` event records it).
pub type OTF2_PostFlushCallback = unsafe extern "C" fn(
    userData: *mut c_void,
    fileType: OTF2_FileType,
    location: OTF2_LocationRef,
) -> OTF2_TimeStamp;

c_struct! {
    /// `OTF2_FlushCallbacks`: `otf2_post_flush` may be null (no `BufferFlush` records).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct OTF2_FlushCallbacks as "OTF2_FlushCallbacks", size 16 {
        pub otf2_pre_flush: Option<OTF2_PreFlushCallback> => 0,
        pub otf2_post_flush: Option<OTF2_PostFlushCallback> => 8,
    }
}

/// Declares the entry-point table: its struct, its symbol list and its all-or-nothing load.
macro_rules! otf2_fns {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)? ;)*) => {
        /// The OTF2 entry points this crate binds, all required.
        #[derive(Debug, Clone, Copy)]
        pub struct Otf2Fns {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,
            )*
        }

        /// Every symbol [`Otf2Fns::load`] asks for, in the order it asks.
        pub const SYMBOLS: &[&CStr] = &[
            $( match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(s) => s,
                Err(_) => panic!("a symbol name holds a NUL"),
            }, )*
        ];

        impl Otf2Fns {
            /// Resolves every entry point through `lookup`, asking for [`SYMBOLS`] in order;
            /// all-or-nothing: the error names every missing symbol.
            ///
            /// # Safety
            /// Each non-null pointer `lookup` returns for a name must be the OTF2 3.0 function
            /// of that name and stay callable while the table is used.
            pub unsafe fn load(
                library: &str,
                mut lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
            ) -> Result<Self, Error> {
                let found: Vec<Option<NonNull<c_void>>> =
                    SYMBOLS.iter().map(|s| lookup(s)).collect();
                let missing: Vec<&'static str> = SYMBOLS
                    .iter()
                    .zip(&found)
                    .filter(|(_, f)| f.is_none())
                    .map(|(n, _)| n.to_str().unwrap_or("?"))
                    .collect();
                if !missing.is_empty() {
                    return Err(Error::MissingSymbols {
                        library: library.to_owned(),
                        symbols: missing,
                    });
                }
                let mut next = found.into_iter().flatten();
                Ok(Self {
                    $(
                        // SAFETY: the pointer was returned for the symbol of this name (the
                        // table and SYMBOLS list the names in one order, and none is missing),
                        // which the caller guarantees is the function of this C signature.
                        $name: unsafe {
                            core::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                next.next().map_or(core::ptr::null_mut(), NonNull::as_ptr),
                            )
                        },
                    )*
                })
            }
        }
    };
}

otf2_fns! {
    OTF2_Archive_Open: fn(*const c_char, *const c_char, OTF2_FileMode, u64, u64, OTF2_FileSubstrate, OTF2_Compression) -> *mut OTF2_Archive;
    OTF2_Archive_Close: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_SetFlushCallbacks: fn(*mut OTF2_Archive, *const OTF2_FlushCallbacks, *mut c_void) -> OTF2_ErrorCode;
    OTF2_Archive_SetSerialCollectiveCallbacks: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_OpenEvtFiles: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_CloseEvtFiles: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_GetEvtWriter: fn(*mut OTF2_Archive, OTF2_LocationRef) -> *mut OTF2_EvtWriter;
    OTF2_Archive_CloseEvtWriter: fn(*mut OTF2_Archive, *mut OTF2_EvtWriter) -> OTF2_ErrorCode;
    OTF2_Archive_OpenDefFiles: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_CloseDefFiles: fn(*mut OTF2_Archive) -> OTF2_ErrorCode;
    OTF2_Archive_GetDefWriter: fn(*mut OTF2_Archive, OTF2_LocationRef) -> *mut OTF2_DefWriter;
    OTF2_Archive_CloseDefWriter: fn(*mut OTF2_Archive, *mut OTF2_DefWriter) -> OTF2_ErrorCode;
    OTF2_Archive_GetGlobalDefWriter: fn(*mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;
    OTF2_EvtWriter_Enter: fn(*mut OTF2_EvtWriter, *mut OTF2_AttributeList, OTF2_TimeStamp, OTF2_RegionRef) -> OTF2_ErrorCode;
    OTF2_EvtWriter_Leave: fn(*mut OTF2_EvtWriter, *mut OTF2_AttributeList, OTF2_TimeStamp, OTF2_RegionRef) -> OTF2_ErrorCode;
    OTF2_AttributeList_New: fn() -> *mut OTF2_AttributeList;
    OTF2_AttributeList_Delete: fn(*mut OTF2_AttributeList) -> OTF2_ErrorCode;
    OTF2_AttributeList_AddStringRef: fn(*mut OTF2_AttributeList, OTF2_AttributeRef, OTF2_StringRef) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteClockProperties: fn(*mut OTF2_GlobalDefWriter, u64, u64, u64, u64) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteString: fn(*mut OTF2_GlobalDefWriter, OTF2_StringRef, *const c_char) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteRegion: fn(*mut OTF2_GlobalDefWriter, OTF2_RegionRef, OTF2_StringRef, OTF2_StringRef, OTF2_StringRef, OTF2_RegionRole, OTF2_Paradigm, OTF2_RegionFlag, OTF2_StringRef, u32, u32) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteAttribute: fn(*mut OTF2_GlobalDefWriter, OTF2_AttributeRef, OTF2_StringRef, OTF2_StringRef, OTF2_Type) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteSystemTreeNode: fn(*mut OTF2_GlobalDefWriter, OTF2_SystemTreeNodeRef, OTF2_StringRef, OTF2_StringRef, OTF2_SystemTreeNodeRef) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteLocationGroup: fn(*mut OTF2_GlobalDefWriter, OTF2_LocationGroupRef, OTF2_StringRef, OTF2_LocationGroupType, OTF2_SystemTreeNodeRef, OTF2_LocationGroupRef) -> OTF2_ErrorCode;
    OTF2_GlobalDefWriter_WriteLocation: fn(*mut OTF2_GlobalDefWriter, OTF2_LocationRef, OTF2_StringRef, OTF2_LocationType, u64, OTF2_LocationGroupRef) -> OTF2_ErrorCode;
    OTF2_Error_GetName: fn(OTF2_ErrorCode) -> *const c_char;
    OTF2_Error_GetDescription: fn(OTF2_ErrorCode) -> *const c_char;
}

/// The soname asked of the loader: OTF2 3.0's ABI, as Debian and Ubuntu ship it.
pub const LIBRARY_NAME: &str = "libopen-trace-format2.so.10";
/// The Debian/Ubuntu package that installs [`LIBRARY_NAME`].
pub const PACKAGE: &str = "libopen-trace-format2-10";
/// Loads this file instead of [`LIBRARY_NAME`] (a path or a name for the loader): for a
/// library installed elsewhere, and for tests that need it absent.
pub const LIBRARY_ENV: &str = "ROCPROF_OTF2_LIBRARY";

/// Errors of loading the OTF2 library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The library cannot be loaded.
    #[error(
        "the OTF2 library cannot be loaded ({reason}); install it with `apt-get install {PACKAGE}` \
         (or point {LIBRARY_ENV} at a libopen-trace-format2.so.10 installed elsewhere)"
    )]
    Open {
        /// The name given to `dlopen`.
        library: String,
        /// `dlerror()`'s text.
        reason: String,
    },
    /// Entry points are missing (a library of another OTF2 version).
    #[error(
        "{library} does not export {} (OTF2 3.0 is needed: `apt-get install {PACKAGE}`)",
        .symbols.join(", ")
    )]
    MissingSymbols {
        /// The library searched.
        library: String,
        /// Every missing symbol, in lookup order.
        symbols: Vec<&'static str>,
    },
}

/// The OTF2 library, loaded, with its entry points. Dropping it closes the library once.
#[derive(Debug)]
pub struct Otf2 {
    fns: Otf2Fns,
    library: String,
    _lib: Library,
}

impl Otf2 {
    /// Loads the library named by [`LIBRARY_ENV`] when set (and not empty), else
    /// [`LIBRARY_NAME`] (`RTLD_NOW | RTLD_LOCAL`), and resolves every entry point.
    ///
    /// # Safety
    /// Loading runs the library's initialisers; the library found must be OTF2 3.0 (whose
    /// exports have the signatures of [`Otf2Fns`]).
    pub unsafe fn open() -> Result<Self, Error> {
        let library = std::env::var(LIBRARY_ENV)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| LIBRARY_NAME.to_owned());
        // SAFETY: forwarded to the caller.
        let lib = unsafe { Library::open(Some(&library), libc::RTLD_NOW | libc::RTLD_LOCAL) }
            .map_err(|e| Error::Open {
                library: library.clone(),
                reason: e.to_string(),
            })?;
        // SAFETY: the symbols come from the library the caller vouched for, kept alive next
        // to the table.
        let fns = unsafe {
            Otf2Fns::load(&library, |sym| {
                lib.get::<*mut c_void>(sym.to_bytes_with_nul())
                    .ok()
                    .and_then(|s| NonNull::new(*s))
            })
        }?;
        Ok(Self {
            fns,
            library,
            _lib: lib,
        })
    }

    /// The resolved entry points; valid while `self` lives.
    pub fn fns(&self) -> &Otf2Fns {
        &self.fns
    }

    /// The name (or path) the library was loaded by.
    pub fn library(&self) -> &str {
        &self.library
    }
}

/// Every `#[repr(C)]` layout this crate defines, for `cargo xtask abi-dump`.
pub fn layouts() -> Vec<c_layout::LayoutInfo> {
    vec![c_layout::LayoutInfo::of::<OTF2_FlushCallbacks>(
        "OTF2_FlushCallbacks",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_entry_points_are_all_named_and_nothing_resolves_partly() {
        let present = [c"OTF2_Archive_Open", c"OTF2_Archive_Close"];
        let mut asked = 0;
        // SAFETY: nothing is called; the pointers handed out are never used.
        let err = unsafe {
            Otf2Fns::load("libotf2-old.so", |s| {
                asked += 1;
                present.contains(&s).then(NonNull::<c_void>::dangling)
            })
        }
        .unwrap_err();
        assert_eq!(asked, SYMBOLS.len(), "every symbol is asked for");
        let Error::MissingSymbols { library, symbols } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(library, "libotf2-old.so");
        assert_eq!(symbols.len(), SYMBOLS.len() - 2);
        assert!(!symbols.contains(&"OTF2_Archive_Open"));
        assert!(symbols.contains(&"OTF2_EvtWriter_Enter"), "{symbols:?}");
        assert!(
            err.to_string()
                .contains("apt-get install libopen-trace-format2-10")
        );
    }

    #[test]
    fn a_library_that_cannot_be_loaded_says_how_to_install_it() {
        // Not through the environment (tests run in parallel): the error as open builds it.
        // SAFETY: the path does not exist, so nothing is loaded or run.
        let r = unsafe {
            Library::open(
                Some("/nonexistent/libopen-trace-format2.so.10"),
                libc::RTLD_NOW,
            )
        };
        let err = Error::Open {
            library: "/nonexistent/libopen-trace-format2.so.10".into(),
            reason: r.unwrap_err().to_string(),
        };
        let text = err.to_string();
        assert!(
            text.contains("apt-get install libopen-trace-format2-10"),
            "{text}"
        );
        assert!(text.contains("No such file"), "{text}");
    }

    #[test]
    fn symbol_names_are_the_c_names() {
        assert_eq!(SYMBOLS[0], c"OTF2_Archive_Open");
        assert!(SYMBOLS.iter().all(|s| s.to_bytes().starts_with(b"OTF2_")));
        assert_eq!(SYMBOLS.len(), 27);
    }
}
