//! A safe handle on one OTF2 archive being written, over `otf2-sys`'s entry points: every
//! call checked, every failure an [`Error::Otf2`] naming the call and OTF2's own words.

use crate::Error;
use otf2_sys::*;
use std::ffi::{CStr, CString, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Event chunk size (upstream's: 2 MiB).
const EVENT_CHUNK: u64 = 2 << 20;
/// Definition chunk size (upstream's: 8 MiB).
const DEF_CHUNK: u64 = 8 << 20;

/// Every full buffer is written to its file.
extern "C" fn pre_flush(
    _user: *mut c_void,
    _file: OTF2_FileType,
    _location: OTF2_LocationRef,
    _caller: *mut c_void,
    _final: bool,
) -> OTF2_FlushType {
    // Returns a constant: nothing here can panic or unwind.
    OTF2_FLUSH
}

static FLUSH_CALLBACKS: OTF2_FlushCallbacks = OTF2_FlushCallbacks {
    otf2_pre_flush: Some(pre_flush),
    otf2_post_flush: None,
};

/// A C string of `text`; NUL bytes (which a C string cannot hold) become U+FFFD.
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

/// An archive open for writing. Dropping it without [`Archive::close`] closes it, ignoring
/// errors (the caller removes what a failed write left).
pub(crate) struct Archive<'l> {
    lib: &'l Otf2Fns,
    raw: *mut OTF2_Archive,
    path: PathBuf,
    attributes: *mut OTF2_AttributeList,
}

/// An event writer of an open archive (owned by the archive).
#[derive(Clone, Copy)]
pub(crate) struct EvtWriter(*mut OTF2_EvtWriter);

impl<'l> Archive<'l> {
    /// Opens the archive `<dir>/<name>` for writing (POSIX files, no compression), with its
    /// event files open.
    pub(crate) fn create(
        lib: &'l Otf2Fns,
        dir: &Path,
        name: &str,
        path: &Path,
    ) -> Result<Self, Error> {
        let c_dir = CString::new(dir.as_os_str().as_bytes()).map_err(|_| Error::Otf2 {
            path: path.to_owned(),
            call: "OTF2_Archive_Open",
            name: "a path with a NUL byte".into(),
            description: String::new(),
        })?;
        let c_name = c_string(name);
        // SAFETY: both strings are NUL-terminated and outlive the call; the constants are
        // OTF2's own.
        let raw = unsafe {
            (lib.OTF2_Archive_Open)(
                c_dir.as_ptr(),
                c_name.as_ptr(),
                OTF2_FILEMODE_WRITE,
                EVENT_CHUNK,
                DEF_CHUNK,
                OTF2_SUBSTRATE_POSIX,
                OTF2_COMPRESSION_NONE,
            )
        };
        if raw.is_null() {
            return Err(Error::Otf2 {
                path: path.to_owned(),
                call: "OTF2_Archive_Open",
                name: "no archive".into(),
                description: "the archive could not be created".into(),
            });
        }
        let mut archive = Archive {
            lib,
            raw,
            path: path.to_owned(),
            attributes: std::ptr::null_mut(),
        };
        // SAFETY: `raw` is the open archive; the callbacks are a static that outlives it.
        archive.check("OTF2_Archive_SetFlushCallbacks", unsafe {
            (lib.OTF2_Archive_SetFlushCallbacks)(raw, &FLUSH_CALLBACKS, std::ptr::null_mut())
        })?;
        // SAFETY: as above.
        archive.check("OTF2_Archive_SetSerialCollectiveCallbacks", unsafe {
            (lib.OTF2_Archive_SetSerialCollectiveCallbacks)(raw)
        })?;
        // SAFETY: as above.
        archive.check("OTF2_Archive_OpenEvtFiles", unsafe {
            (lib.OTF2_Archive_OpenEvtFiles)(raw)
        })?;
        // SAFETY: takes no argument; the list is deleted on drop.
        archive.attributes = unsafe { (lib.OTF2_AttributeList_New)() };
        if archive.attributes.is_null() {
            return Err(archive.null("OTF2_AttributeList_New"));
        }
        Ok(archive)
    }

    fn check(&self, call: &'static str, code: OTF2_ErrorCode) -> Result<(), Error> {
        if code == OTF2_SUCCESS {
            return Ok(());
        }
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: OTF2 returns static NUL-terminated strings for every code.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: both take any code.
        let (name, description) = unsafe {
            (
                text((self.lib.OTF2_Error_GetName)(code)),
                text((self.lib.OTF2_Error_GetDescription)(code)),
            )
        };
        Err(Error::Otf2 {
            path: self.path.clone(),
            call,
            name,
            description,
        })
    }

    fn null(&self, call: &'static str) -> Error {
        Error::Otf2 {
            path: self.path.clone(),
            call,
            name: "null".into(),
            description: "returned no object".into(),
        }
    }

    /// The event writer of `location`.
    pub(crate) fn evt_writer(&mut self, location: u64) -> Result<EvtWriter, Error> {
        // SAFETY: the archive is open with its event files open.
        let w = unsafe { (self.lib.OTF2_Archive_GetEvtWriter)(self.raw, location) };
        if w.is_null() {
            return Err(self.null("OTF2_Archive_GetEvtWriter"));
        }
        Ok(EvtWriter(w))
    }

    /// An `Enter` of `region` at `ts`, carrying attribute 0 (`category`) = string `category`.
    pub(crate) fn enter(
        &mut self,
        w: EvtWriter,
        ts: u64,
        region: u32,
        category: u32,
    ) -> Result<(), Error> {
        // SAFETY: the list is this archive's; OTF2 empties it when the event is written.
        self.check("OTF2_AttributeList_AddStringRef", unsafe {
            (self.lib.OTF2_AttributeList_AddStringRef)(self.attributes, 0, category)
        })?;
        // SAFETY: `w` is a writer of this open archive (not closed), the list is valid.
        self.check("OTF2_EvtWriter_Enter", unsafe {
            (self.lib.OTF2_EvtWriter_Enter)(w.0, self.attributes, ts, region)
        })
    }

    /// A `Leave` of `region` at `ts`.
    pub(crate) fn leave(&mut self, w: EvtWriter, ts: u64, region: u32) -> Result<(), Error> {
        // SAFETY: `w` is a writer of this open archive (not closed); no attribute list.
        self.check("OTF2_EvtWriter_Leave", unsafe {
            (self.lib.OTF2_EvtWriter_Leave)(w.0, std::ptr::null_mut(), ts, region)
        })
    }

    /// Closes an event writer (its events go to its file); it is not used again.
    pub(crate) fn close_evt_writer(&mut self, w: EvtWriter) -> Result<(), Error> {
        // SAFETY: `w` is a writer of this archive, closed only here, once.
        self.check("OTF2_Archive_CloseEvtWriter", unsafe {
            (self.lib.OTF2_Archive_CloseEvtWriter)(self.raw, w.0)
        })
    }

    /// Closes the event files, then writes an empty local definition file per location.
    pub(crate) fn local_definitions(&mut self, locations: &[u64]) -> Result<(), Error> {
        // SAFETY: the archive is open; every event writer was closed.
        self.check("OTF2_Archive_CloseEvtFiles", unsafe {
            (self.lib.OTF2_Archive_CloseEvtFiles)(self.raw)
        })?;
        // SAFETY: as above.
        self.check("OTF2_Archive_OpenDefFiles", unsafe {
            (self.lib.OTF2_Archive_OpenDefFiles)(self.raw)
        })?;
        for &l in locations {
            // SAFETY: the definition files are open.
            let w = unsafe { (self.lib.OTF2_Archive_GetDefWriter)(self.raw, l) };
            if w.is_null() {
                return Err(self.null("OTF2_Archive_GetDefWriter"));
            }
            // SAFETY: `w` was just obtained from this archive.
            self.check("OTF2_Archive_CloseDefWriter", unsafe {
                (self.lib.OTF2_Archive_CloseDefWriter)(self.raw, w)
            })?;
        }
        // SAFETY: as above.
        self.check("OTF2_Archive_CloseDefFiles", unsafe {
            (self.lib.OTF2_Archive_CloseDefFiles)(self.raw)
        })
    }

    /// The global definition writer.
    pub(crate) fn global(&mut self) -> Result<GlobalDefs<'_, 'l>, Error> {
        // SAFETY: the archive is open.
        let w = unsafe { (self.lib.OTF2_Archive_GetGlobalDefWriter)(self.raw) };
        if w.is_null() {
            return Err(self.null("OTF2_Archive_GetGlobalDefWriter"));
        }
        Ok(GlobalDefs { archive: self, w })
    }

    /// Closes the archive (writing what is buffered).
    pub(crate) fn close(mut self) -> Result<(), Error> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // SAFETY: the archive is open, closed only here (drop sees null afterwards).
        self.check("OTF2_Archive_Close", unsafe {
            (self.lib.OTF2_Archive_Close)(raw)
        })
    }
}

impl Drop for Archive<'_> {
    fn drop(&mut self) {
        if !self.attributes.is_null() {
            // SAFETY: created by OTF2_AttributeList_New, deleted only here.
            let _ = unsafe { (self.lib.OTF2_AttributeList_Delete)(self.attributes) };
        }
        if !self.raw.is_null() {
            // SAFETY: the archive is still open (close nulls it).
            let _ = unsafe { (self.lib.OTF2_Archive_Close)(self.raw) };
        }
    }
}

/// The global definition writer of an open archive.
pub(crate) struct GlobalDefs<'a, 'l> {
    archive: &'a mut Archive<'l>,
    w: *mut OTF2_GlobalDefWriter,
}

impl GlobalDefs<'_, '_> {
    fn lib(&self) -> &Otf2Fns {
        self.archive.lib
    }

    /// The clock: resolution (ticks per second), offset, length, realtime anchor.
    pub(crate) fn clock(
        &mut self,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> Result<(), Error> {
        // SAFETY: `w` is the archive's global writer.
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteClockProperties)(
                self.w, resolution, offset, length, realtime,
            )
        };
        self.archive
            .check("OTF2_GlobalDefWriter_WriteClockProperties", code)
    }

    /// String `id` = `text`.
    pub(crate) fn string(&mut self, id: u32, text: &str) -> Result<(), Error> {
        let c = c_string(text);
        // SAFETY: `c` is NUL-terminated and outlives the call (OTF2 copies it).
        let code = unsafe { (self.lib().OTF2_GlobalDefWriter_WriteString)(self.w, id, c.as_ptr()) };
        self.archive.check("OTF2_GlobalDefWriter_WriteString", code)
    }

    /// Region `id`, named by string `name`.
    pub(crate) fn region(
        &mut self,
        id: u32,
        name: u32,
        role: OTF2_RegionRole,
        paradigm: OTF2_Paradigm,
    ) -> Result<(), Error> {
        // SAFETY: `w` is the archive's global writer; string 0 is defined ("").
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteRegion)(
                self.w,
                id,
                name,
                0,
                0,
                role,
                paradigm,
                OTF2_REGION_FLAG_NONE,
                0,
                0,
                0,
            )
        };
        self.archive.check("OTF2_GlobalDefWriter_WriteRegion", code)
    }

    /// A string attribute.
    pub(crate) fn attribute(&mut self, id: u32, name: u32, description: u32) -> Result<(), Error> {
        // SAFETY: `w` is the archive's global writer.
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteAttribute)(
                self.w,
                id,
                name,
                description,
                OTF2_TYPE_STRING,
            )
        };
        self.archive
            .check("OTF2_GlobalDefWriter_WriteAttribute", code)
    }

    /// A root system-tree node.
    pub(crate) fn system_tree_node(&mut self, id: u32, name: u32, class: u32) -> Result<(), Error> {
        // SAFETY: `w` is the archive's global writer.
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteSystemTreeNode)(
                self.w,
                id,
                name,
                class,
                OTF2_UNDEFINED_SYSTEM_TREE_NODE,
            )
        };
        self.archive
            .check("OTF2_GlobalDefWriter_WriteSystemTreeNode", code)
    }

    /// A location group under system-tree node `node`.
    pub(crate) fn location_group(
        &mut self,
        id: u32,
        name: u32,
        accelerator: bool,
        node: u32,
    ) -> Result<(), Error> {
        let kind = if accelerator {
            OTF2_LOCATION_GROUP_TYPE_ACCELERATOR
        } else {
            OTF2_LOCATION_GROUP_TYPE_PROCESS
        };
        // SAFETY: `w` is the archive's global writer.
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteLocationGroup)(
                self.w,
                id,
                name,
                kind,
                node,
                OTF2_UNDEFINED_LOCATION_GROUP,
            )
        };
        self.archive
            .check("OTF2_GlobalDefWriter_WriteLocationGroup", code)
    }

    /// A location with its event count.
    pub(crate) fn location(
        &mut self,
        id: u64,
        name: u32,
        thread: bool,
        events: u64,
        group: u32,
    ) -> Result<(), Error> {
        let kind = if thread {
            OTF2_LOCATION_TYPE_CPU_THREAD
        } else {
            OTF2_LOCATION_TYPE_ACCELERATOR_STREAM
        };
        // SAFETY: `w` is the archive's global writer.
        let code = unsafe {
            (self.lib().OTF2_GlobalDefWriter_WriteLocation)(self.w, id, name, kind, events, group)
        };
        self.archive
            .check("OTF2_GlobalDefWriter_WriteLocation", code)
    }
}
