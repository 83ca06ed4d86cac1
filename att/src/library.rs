//! Finding and loading `librocprof-trace-decoder.so`, the way rocprofv3 does.
//!
//! **Search** ([`Search`], [`find`]), in this order of precedence ([`SearchOrigin`] says which
//! rule applied):
//! 1. the directories the caller gives, when any are given;
//! 2. otherwise `ROCPROF_ATT_LIBRARY_PATH` (one directory, or a `:`-separated list);
//! 3. otherwise every `LD_LIBRARY_PATH` entry, then `<rocm>/lib` (`<rocm>` = `ROCM_PATH`,
//!    default `/opt/rocm`).
//!
//! Each directory is walked recursively (like Python's `os.walk`: top-down, symlinked
//! directories not followed, unreadable directories skipped) for a file whose *name contains*
//! `librocprof-trace-decoder.so`. Within one directory the exact name wins, then the
//! lexicographically first match; a directory's own files are checked before its
//! subdirectories, which are visited in name order. Directories are searched in order and the
//! first hit ends the search. Duplicated directories are searched once.
//!
//! **Loading** ([`Decoder::load`]): `dlopen(path, RTLD_LAZY | RTLD_LOCAL)` and all three V1
//! symbols resolved before any is used; a missing one is reported together with every other
//! missing one and the file ([`Error::MissingSymbols`]).
//!
//! A failure to find or load the decoder says which directories were searched and why those
//! ([`Error::library_search`]); how to point the search elsewhere is the caller's to say.

use crate::Error;
use crate::abi::{DecoderInfo, DecoderStatus, GetStringFn, ParseDataFn};
pub use crate::search::{ENV_ATT_LIBRARY_PATH, SearchOrigin};
use core::ffi::{CStr, c_void};
use core::ptr::NonNull;
use libloading::os::unix::Library;
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The file name rocprofv3 looks for (as a substring of the file name).
pub const LIBRARY_FILE_NAME: &str = "librocprof-trace-decoder.so";

/// The ROCm root used when `ROCM_PATH` is unset or empty.
pub const DEFAULT_ROCM_PATH: &str = "/opt/rocm";

/// The three V1 entry points, in the order they are resolved.
pub const SYMBOLS: [&CStr; 3] = [
    c"rocprof_trace_decoder_parse_data",
    c"rocprof_trace_decoder_get_info_string",
    c"rocprof_trace_decoder_get_status_string",
];

/// The environment values the search depends on, passed in so the search is testable without
/// touching the process environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `ROCPROF_ATT_LIBRARY_PATH`.
    pub att_library_path: Option<OsString>,
    /// `LD_LIBRARY_PATH`.
    pub ld_library_path: Option<OsString>,
    /// `ROCM_PATH`.
    pub rocm_path: Option<OsString>,
}

impl SearchEnv {
    /// Reads the three variables from this process's environment.
    pub fn from_process() -> Self {
        Self {
            att_library_path: std::env::var_os(ENV_ATT_LIBRARY_PATH),
            ld_library_path: std::env::var_os("LD_LIBRARY_PATH"),
            rocm_path: std::env::var_os("ROCM_PATH"),
        }
    }
}

/// Splits a `:`-separated list, dropping empty entries.
fn split_paths(list: &OsString) -> impl Iterator<Item = PathBuf> + '_ {
    use std::os::unix::ffi::OsStrExt;
    list.as_bytes()
        .split(|&b| b == b':')
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(std::ffi::OsStr::from_bytes(s)))
}

/// The directories a search goes through, in order, without duplicates, and which rule chose
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// Which rule chose the directories.
    pub origin: SearchOrigin,
    /// The directories, in search order.
    pub dirs: Vec<PathBuf>,
}

impl Search {
    /// The search for `given_dirs` (when not empty) or else what `env` says (see the module
    /// documentation).
    pub fn new(given_dirs: &[PathBuf], env: &SearchEnv) -> Self {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let origin = if !given_dirs.is_empty() {
            dirs.extend(given_dirs.iter().cloned());
            SearchOrigin::Given
        } else if let Some(att) = env.att_library_path.as_ref().filter(|v| !v.is_empty()) {
            dirs.extend(split_paths(att));
            SearchOrigin::Environment
        } else {
            if let Some(ld) = &env.ld_library_path {
                dirs.extend(split_paths(ld));
            }
            let rocm = env
                .rocm_path
                .as_ref()
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_ROCM_PATH));
            dirs.push(rocm.join("lib"));
            SearchOrigin::Defaults
        };
        let mut seen = HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        Self { origin, dirs }
    }

    /// The first hit over the directories ([`find_in`] each, in order).
    ///
    /// # Errors
    /// [`Error::NotFound`] listing every directory searched and why those.
    pub fn find(&self) -> Result<PathBuf, Error> {
        for dir in &self.dirs {
            if let Some(found) = find_in(dir) {
                tracing::debug!(library = %found.display(), "found the trace decoder");
                return Ok(found);
            }
        }
        Err(Error::NotFound {
            searched: self.dirs.clone(),
            search: self.origin,
        })
    }
}

/// The directories [`find`] searches, in order, without duplicates ([`Search::new`]'s).
pub fn search_dirs(given_dirs: &[PathBuf], env: &SearchEnv) -> Vec<PathBuf> {
    Search::new(given_dirs, env).dirs
}

/// Walks `dir` recursively for a file whose name contains [`LIBRARY_FILE_NAME`].
pub fn find_in(dir: &Path) -> Option<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "skipping unreadable directory");
            return None;
        }
    };
    let mut files = Vec::new();
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            subdirs.push(path);
        } else if entry
            .file_name()
            .to_string_lossy()
            .contains(LIBRARY_FILE_NAME)
            && path.is_file()
        {
            files.push(path);
        }
    }
    files.sort();
    if let Some(exact) = files
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == LIBRARY_FILE_NAME))
    {
        return Some(exact.clone());
    }
    if let Some(first) = files.into_iter().next() {
        return Some(first);
    }
    subdirs.sort();
    subdirs.iter().find_map(|d| find_in(d))
}

/// Finds the decoder library: the first hit over [`search_dirs`] ([`Search::find`]).
///
/// # Errors
/// [`Error::NotFound`] listing every directory searched and why those.
pub fn find(given_dirs: &[PathBuf], env: &SearchEnv) -> Result<PathBuf, Error> {
    Search::new(given_dirs, env).find()
}

/// Finds and loads the decoder, then unloads it again: the check the CLI runs before starting
/// the application, so that a missing or broken decoder is reported before any work is done.
/// Returns the library's path.
///
/// # Errors
/// As [`find`] and [`Decoder::load`]; a load failure names the search that found the file
/// ([`Error::library_search`]).
///
/// # Safety
/// As for [`Decoder::load`]: the library found runs its initialisers.
pub unsafe fn probe(given_dirs: &[PathBuf], env: &SearchEnv) -> Result<PathBuf, Error> {
    let search = Search::new(given_dirs, env);
    let path = search.find()?;
    // SAFETY: forwarded to the caller.
    let decoder = unsafe { Decoder::load(&path) }.map_err(|e| e.found_by(search.origin))?;
    drop(decoder);
    Ok(path)
}

/// [`probe`] for a program that trusts what the search finds to be the decoder, as rocprofv3
/// does: whatever is named `librocprof-trace-decoder.so*` in the searched directories is taken
/// to be AMD's library (or a faithful stand-in) with the V1 signatures.
///
/// # Errors
/// As [`probe`].
pub fn probe_trusted(given_dirs: &[PathBuf], env: &SearchEnv) -> Result<PathBuf, Error> {
    // SAFETY: the contract of `probe` is this function's documented premise: the library
    // found by the decoder's name is the decoder. rocprofv3's SDK loads it on the same premise.
    unsafe { probe(given_dirs, env) }
}

/// `dlopen(file, RTLD_LAZY | RTLD_LOCAL)`: how this crate loads every library (a path, or a
/// soname for the loader's search).
///
/// # Safety
/// Loading a shared object runs its initialisers: the caller vouches for them.
pub(crate) unsafe fn open_local(file: &std::ffi::OsStr) -> Result<Library, libloading::Error> {
    // SAFETY: forwarded to the caller.
    unsafe { Library::open(Some(file), libc::RTLD_LAZY | libc::RTLD_LOCAL) }
}

/// The address of the symbol `name` in `lib`, or `None` when it is missing (or null): the
/// `lookup` the function tables are resolved through.
pub(crate) fn symbol(lib: &Library, name: &CStr) -> Option<NonNull<c_void>> {
    // SAFETY: the symbol is read as a raw address (`*mut c_void`), which is what `dlsym`
    // returns for any symbol; nothing is called or dereferenced here.
    unsafe { lib.get::<*mut c_void>(name.to_bytes_with_nul()) }
        .ok()
        .and_then(|s| NonNull::new(*s))
}

/// Looks every name of `symbols` up through `lookup`, in order: all the pointers, or every
/// name that did not resolve (the all-or-nothing rule of the project's function tables).
pub(crate) fn resolve_all<const N: usize>(
    symbols: &[&'static CStr; N],
    mut lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
) -> Result<[NonNull<c_void>; N], Vec<&'static str>> {
    let found: [Option<NonNull<c_void>>; N] = core::array::from_fn(|i| lookup(symbols[i]));
    if found.iter().all(Option::is_some) {
        return Ok(found.map(|f| f.expect("every entry checked above")));
    }
    Err(symbols
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(name, _)| name.to_str().unwrap_or("?"))
        .collect())
}

/// The decoder's three entry points.
#[derive(Debug, Clone, Copy)]
pub struct DecoderFns {
    /// `rocprof_trace_decoder_parse_data`.
    pub parse_data: ParseDataFn,
    /// `rocprof_trace_decoder_get_info_string`.
    pub get_info_string: GetStringFn,
    /// `rocprof_trace_decoder_get_status_string`.
    pub get_status_string: GetStringFn,
}

impl DecoderFns {
    /// Resolves all three entry points through `lookup`, asking for [`SYMBOLS`] in order.
    ///
    /// All-or-nothing: when any is missing the error names every missing one and `library`.
    ///
    /// # Errors
    /// [`Error::MissingSymbols`].
    ///
    /// # Safety
    /// Every non-null pointer `lookup` returns must be a function with the C signature of the
    /// V1 entry point of that name, callable for as long as the table is used.
    pub unsafe fn load(
        library: &Path,
        lookup: impl FnMut(&CStr) -> Option<NonNull<c_void>>,
    ) -> Result<Self, Error> {
        let [parse, info, status] =
            resolve_all(&SYMBOLS, lookup).map_err(|symbols| Error::MissingSymbols {
                library: library.to_owned(),
                symbols,
                search: None,
            })?;
        // SAFETY: each pointer was returned for the symbol of the matching name, which the
        // caller guarantees has the C signature of the function-pointer type it becomes here;
        // data and function pointers have the same size and representation on the supported
        // (x86-64 Linux) targets.
        unsafe {
            Ok(Self {
                parse_data: core::mem::transmute::<*mut c_void, ParseDataFn>(parse.as_ptr()),
                get_info_string: core::mem::transmute::<*mut c_void, GetStringFn>(info.as_ptr()),
                get_status_string: core::mem::transmute::<*mut c_void, GetStringFn>(
                    status.as_ptr(),
                ),
            })
        }
    }
}

/// A loaded trace decoder. Dropping it unloads the library.
#[derive(Debug)]
pub struct Decoder {
    pub(crate) fns: DecoderFns,
    path: PathBuf,
    _lib: Option<Library>,
}

impl Decoder {
    /// [`Decoder::load`] of a library the caller trusts to be the decoder (one that
    /// [`probe_trusted`] found): see there.
    ///
    /// # Errors
    /// As [`Decoder::load`].
    pub fn load_trusted(path: &Path) -> Result<Self, Error> {
        // SAFETY: the documented premise of this function, as for `probe_trusted`.
        unsafe { Self::load(path) }
    }

    /// Loads the decoder at `path` with `RTLD_LAZY | RTLD_LOCAL` and resolves its three entry
    /// points.
    ///
    /// # Errors
    /// [`Error::Open`] with `dlerror()`'s text, or [`Error::MissingSymbols`].
    ///
    /// # Safety
    /// Loading a shared object runs its initialisers; `path` must be a rocprof-trace-decoder
    /// whose exports have the V1 C signatures in [`crate::abi`].
    #[doc(alias = "dlopen")]
    pub unsafe fn load(path: &Path) -> Result<Self, Error> {
        // SAFETY: the caller vouches for the library's initialisers.
        let lib = unsafe { open_local(path.as_os_str()) }.map_err(|e| Error::Open {
            path: path.to_owned(),
            reason: e.to_string(),
            search: None,
        })?;
        // SAFETY: the symbols come from the library the caller vouched for, and `lib` is kept
        // next to the table, so the pointers stay valid for the Decoder's lifetime.
        let fns = unsafe { DecoderFns::load(path, |sym| symbol(&lib, sym)) }?;
        tracing::debug!(library = %path.display(), "loaded the trace decoder");
        Ok(Self {
            fns,
            path: path.to_owned(),
            _lib: Some(lib),
        })
    }

    /// A decoder made of entry points already in the process (a test double, or a decoder
    /// linked some other way). `label` stands in for the path in messages.
    ///
    /// # Safety
    /// The functions must behave as the V1 API documents, for as long as the Decoder lives.
    pub unsafe fn from_fns(fns: DecoderFns, label: impl Into<PathBuf>) -> Self {
        Self {
            fns,
            path: label.into(),
            _lib: None,
        }
    }

    /// The library's path (or the label given to [`Decoder::from_fns`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The resolved entry points.
    pub fn fns(&self) -> &DecoderFns {
        &self.fns
    }

    /// `get_status_string(status)`, e.g.
    /// `ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA`; `None` if the
    /// decoder returned NULL.
    pub fn status_string(&self, status: DecoderStatus) -> Option<String> {
        // SAFETY: `get_status_string` is a V1 entry point (guaranteed by whoever built `self`)
        // taking any int and returning NULL or a static NUL-terminated string.
        unsafe { c_string((self.fns.get_status_string)(status.0)) }
    }

    /// `get_info_string(info)`, e.g. `Data Lost: ...`; `None` if the decoder returned NULL.
    pub fn info_string(&self, info: DecoderInfo) -> Option<String> {
        // SAFETY: as for `status_string`.
        unsafe { c_string((self.fns.get_info_string)(info.0)) }
    }
}

/// Copies a C string the decoder returned.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string valid for the duration of the call.
unsafe fn c_string(ptr: *const core::ffi::c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    Some(
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn env(att: Option<&str>, ld: Option<&str>, rocm: Option<&str>) -> SearchEnv {
        SearchEnv {
            att_library_path: att.map(OsString::from),
            ld_library_path: ld.map(OsString::from),
            rocm_path: rocm.map(OsString::from),
        }
    }

    #[test]
    fn given_dirs_win_over_everything() {
        let given = [
            PathBuf::from("/x"),
            PathBuf::from("/y"),
            PathBuf::from("/x"),
        ];
        let e = env(Some("/att"), Some("/ld"), Some("/rocm"));
        let search = Search::new(&given, &e);
        assert_eq!(search.origin, SearchOrigin::Given);
        assert_eq!(search.dirs, [PathBuf::from("/x"), PathBuf::from("/y")]);
        assert_eq!(search_dirs(&given, &e), search.dirs);
    }

    #[test]
    fn env_var_only_without_given_dirs() {
        let e = env(Some("/att:/att2"), Some("/ld"), Some("/rocm"));
        assert_eq!(
            search_dirs(&[], &e),
            [PathBuf::from("/att"), PathBuf::from("/att2")]
        );
        assert_eq!(Search::new(&[], &e).origin, SearchOrigin::Environment);
        let one = env(Some("/one dir"), None, None);
        assert_eq!(search_dirs(&[], &one), [PathBuf::from("/one dir")]);
        // Empty counts as unset.
        let empty = env(Some(""), Some("/ld"), None);
        assert_eq!(
            search_dirs(&[], &empty),
            [PathBuf::from("/ld"), PathBuf::from("/opt/rocm/lib")]
        );
        assert_eq!(Search::new(&[], &empty).origin, SearchOrigin::Defaults);
    }

    #[test]
    fn the_environment_origin_names_the_variable() {
        assert!(
            SearchOrigin::Environment
                .to_string()
                .contains(ENV_ATT_LIBRARY_PATH)
        );
    }

    #[test]
    fn not_found_says_which_search_was_used() {
        let empty = tempfile::tempdir().unwrap();
        let dir = empty.path().to_str().unwrap().to_owned();
        let cases = [
            (
                vec![empty.path().to_owned()],
                env(None, None, None),
                SearchOrigin::Given,
            ),
            (
                Vec::new(),
                env(Some(&dir), None, None),
                SearchOrigin::Environment,
            ),
            (
                Vec::new(),
                env(None, Some(&dir), Some(&dir)),
                SearchOrigin::Defaults,
            ),
        ];
        for (given, e, origin) in cases {
            let err = find(&given, &e).unwrap_err();
            assert_eq!(err.library_search(), Some(origin), "{err}");
            match &err {
                Error::NotFound { searched, search } => {
                    assert_eq!(searched, &search_dirs(&given, &e));
                    assert_eq!(*search, origin);
                }
                other => panic!("unexpected {other:?}"),
            }
            assert!(
                err.to_string()
                    .contains(&format!("(the directories searched: {origin})")),
                "{err}"
            );
        }
    }

    #[test]
    fn fallback_is_ld_library_path_then_rocm_lib() {
        let e = env(None, Some("/a::/b:/rocm/lib"), Some("/rocm"));
        assert_eq!(
            search_dirs(&[], &e),
            [
                PathBuf::from("/a"),
                PathBuf::from("/b"),
                PathBuf::from("/rocm/lib")
            ],
            "empty entries dropped, duplicates searched once"
        );
        assert_eq!(
            search_dirs(&[], &env(None, None, Some(""))),
            [PathBuf::from("/opt/rocm/lib")]
        );
    }

    #[test]
    fn recursive_walk_finds_nested_file_containing_the_name() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("a/b/c");
        fs::create_dir_all(&nested).unwrap();
        fs::create_dir_all(root.path().join("a/other")).unwrap();
        fs::write(root.path().join("a/other/libsomething.so"), b"x").unwrap();
        let lib = nested.join("librocprof-trace-decoder.so.0.1.3");
        fs::write(&lib, b"x").unwrap();
        assert_eq!(find_in(root.path()), Some(lib.clone()));
        let found = find(&[root.path().to_owned()], &SearchEnv::default()).unwrap();
        assert_eq!(found, lib);
    }

    #[test]
    fn exact_name_preferred_and_env_dir_used_without_options() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("librocprof-trace-decoder.so.0"), b"x").unwrap();
        fs::write(root.path().join("librocprof-trace-decoder.so"), b"x").unwrap();
        let e = env(Some(root.path().to_str().unwrap()), None, None);
        assert_eq!(
            find(&[], &e).unwrap(),
            root.path().join("librocprof-trace-decoder.so")
        );
        // With option dirs given, the env var is not consulted.
        let empty = tempfile::tempdir().unwrap();
        let err = find(&[empty.path().to_owned()], &e).unwrap_err();
        assert!(matches!(
            err,
            Error::NotFound { ref searched, search: SearchOrigin::Given }
                if searched == &[empty.path().to_owned()]
        ));
    }

    #[test]
    fn not_found_names_every_directory() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        // A directory whose *name* matches is not a file.
        fs::create_dir(a.path().join("librocprof-trace-decoder.so")).unwrap();
        let missing = b.path().join("does-not-exist");
        let err = find(
            &[a.path().to_owned(), b.path().to_owned(), missing.clone()],
            &SearchEnv::default(),
        )
        .unwrap_err();
        let msg = err.to_string();
        for d in [a.path(), b.path(), missing.as_path()] {
            assert!(msg.contains(d.to_str().unwrap()), "{msg}");
        }
        assert!(
            msg.contains("install ROCm's rocprof-trace-decoder"),
            "{msg}"
        );
    }

    unsafe extern "C" fn fake_parse(
        _: crate::abi::SeDataCallback,
        _: crate::abi::TraceCallback,
        _: crate::abi::IsaCallback,
        _: *mut c_void,
    ) -> i32 {
        0
    }

    #[test]
    fn symbol_table_reports_every_missing_symbol() {
        let mut asked = Vec::new();
        // SAFETY: the table is never built from these pointers (both are missing).
        let err = unsafe {
            DecoderFns::load(Path::new("/lib/x.so"), |name| {
                asked.push(name.to_owned());
                (name == SYMBOLS[0]).then(|| NonNull::new(fake_parse as *mut c_void))?
            })
        }
        .unwrap_err();
        assert_eq!(asked, SYMBOLS.map(CStr::to_owned));
        match err {
            Error::MissingSymbols {
                library,
                symbols,
                search,
            } => {
                assert_eq!(library, Path::new("/lib/x.so"));
                assert_eq!(search, None, "loaded by path, not found by a search");
                assert_eq!(
                    symbols,
                    [
                        "rocprof_trace_decoder_get_info_string",
                        "rocprof_trace_decoder_get_status_string"
                    ]
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn system_libm() -> Option<PathBuf> {
        [
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/usr/lib/x86_64-linux-gnu/libm.so.6",
            "/lib64/libm.so.6",
            "/usr/lib64/libm.so.6",
        ]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    }

    #[test]
    fn empty_directory_is_not_found_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: nothing is found, so nothing is loaded.
        let err = unsafe { probe(&[dir.path().to_owned()], &SearchEnv::default()) }.unwrap_err();
        match &err {
            Error::NotFound { searched, search } => {
                assert_eq!(searched, &[dir.path().to_owned()]);
                assert_eq!(*search, SearchOrigin::Given);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains(dir.path().to_str().unwrap()));
    }

    #[test]
    fn real_library_without_the_symbols_names_all_three() {
        let Some(libm) = system_libm() else {
            panic!("no libm.so.6 found in the usual places; this test needs one");
        };
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(LIBRARY_FILE_NAME);
        fs::copy(&libm, &target).unwrap();
        // SAFETY: a copy of the system libm; its initialisers are harmless.
        let err = unsafe { probe(&[dir.path().to_owned()], &SearchEnv::default()) }.unwrap_err();
        match &err {
            Error::MissingSymbols {
                library,
                symbols,
                search,
            } => {
                assert_eq!(library, &target);
                assert_eq!(*search, Some(SearchOrigin::Given), "probe names its search");
                assert_eq!(
                    symbols,
                    &SYMBOLS.map(|s| s.to_str().unwrap()).to_vec(),
                    "all three symbols named"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(target.to_str().unwrap()), "{msg}");
        assert!(
            msg.contains("rocprof_trace_decoder_parse_data, rocprof_trace_decoder_get_info_string, rocprof_trace_decoder_get_status_string"),
            "{msg}"
        );
    }

    #[test]
    fn garbage_file_is_an_open_error_with_dlerror_text() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(LIBRARY_FILE_NAME);
        fs::write(&target, vec![0x5a_u8; 4096]).unwrap();
        // SAFETY: dlopen rejects the file before running anything.
        let err = unsafe { Decoder::load(&target) }.unwrap_err();
        match &err {
            Error::Open {
                path,
                reason,
                search,
            } => {
                assert_eq!(path, &target);
                assert_eq!(*search, None);
                // glibc: "<path>: invalid ELF header" (or "file too short").
                assert!(
                    reason.contains("ELF") || reason.contains("too short"),
                    "dlerror text expected, got {reason:?}"
                );
                assert!(reason.contains(target.to_str().unwrap()), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        // The same through the search.
        // SAFETY: as above.
        let via_probe =
            unsafe { probe(&[dir.path().to_owned()], &SearchEnv::default()) }.unwrap_err();
        assert!(matches!(
            via_probe,
            Error::Open {
                search: Some(SearchOrigin::Given),
                ..
            }
        ));
    }

    #[test]
    fn missing_file_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: nothing to load.
        let err = unsafe { Decoder::load(&dir.path().join("nope.so")) }.unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{err}");
    }
}
