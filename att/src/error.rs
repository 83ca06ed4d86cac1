//! The crate's one error type.

use crate::abi::DecoderStatus;
use crate::comgr::ComgrStatus;
use crate::decode::Decoded;
pub use crate::search::SearchOrigin;
use std::path::PathBuf;

/// Joins paths for a message: `"/a", "/b"`.
fn list_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `" (reason; reason)"`, or nothing when there are no reasons.
fn reasons_suffix(reasons: &[String]) -> String {
    if reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", reasons.join("; "))
    }
}

/// `" (found in the directories searched: …)"`, or nothing for a library loaded by path.
fn found_in(search: &Option<SearchOrigin>) -> String {
    match search {
        Some(origin) => format!(" (found in the directories searched: {origin})"),
        None => String::new(),
    }
}

/// Everything that can go wrong while finding, loading or running the trace decoder, or
/// writing its outputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No directory searched holds a file whose name contains `librocprof-trace-decoder.so`.
    #[error(
        "rocprof-trace-decoder library not found in [{}] (the directories searched: {search}); \
         install ROCm's rocprof-trace-decoder, or include the directory that holds \
         librocprof-trace-decoder.so in the search",
        list_paths(.searched)
    )]
    NotFound {
        /// Every directory searched, in search order.
        searched: Vec<PathBuf>,
        /// Why those directories.
        search: SearchOrigin,
    },

    /// `dlopen` refused the file.
    #[error(
        "cannot load the trace decoder {}{}: {reason}; check that it is a complete x86-64 Linux \
         build of librocprof-trace-decoder.so, or use another one",
        .path.display(),
        found_in(.search)
    )]
    Open {
        /// The file passed to `dlopen`.
        path: PathBuf,
        /// `dlerror()`'s text.
        reason: String,
        /// The search that found it (`None`: loaded by path, [`crate::Decoder::load`]).
        search: Option<SearchOrigin>,
    },

    /// The library loaded but lacks one or more of the three V1 entry points; nothing was called.
    #[error(
        "{}{} is not a usable rocprof-trace-decoder: it does not export {}; install a \
         rocprof-trace-decoder release (0.1.x), or use another library",
        .library.display(),
        found_in(.search),
        .symbols.join(", ")
    )]
    MissingSymbols {
        /// The file that was loaded.
        library: PathBuf,
        /// Every missing symbol, in lookup order.
        symbols: Vec<&'static str>,
        /// The search that found it (`None`: loaded by path, [`crate::Decoder::load`]).
        search: Option<SearchOrigin>,
    },

    /// `parse_data` returned a status other than SUCCESS. Whatever records arrived before it
    /// stopped are in `partial`; the raw `.att` data is untouched and worth keeping.
    #[error(
        "the trace decoder failed with status {} ({name}) after {} wave(s); the raw .att data \
         is kept for a later retry — INVALID_SHADER_DATA usually means a truncated trace or a \
         GPU this decoder does not support, so try a newer rocprof-trace-decoder",
        .status.0,
        .partial.waves.len()
    )]
    Decoder {
        /// What `parse_data` returned.
        status: DecoderStatus,
        /// `get_status_string`'s text for it.
        name: String,
        /// The records received before the failure.
        partial: Box<Decoded>,
    },

    /// A file or directory could not be read or written.
    #[error("cannot {action} {}: {source}; check the path and its permissions", .path.display())]
    Io {
        /// What was being done ("create directory", "write", "read", ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A JSON document could not be serialised.
    #[error("cannot serialise {}: {source}; this is a bug in the att crate, please report it", .path.display())]
    Json {
        /// The file being written.
        path: PathBuf,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },

    /// The disassembler failed on a kernel; its instructions fall back to
    /// [`crate::codeobj::ByAddress`] texts.
    #[error(
        "cannot disassemble kernel {kernel} of code object {id} ({}): {reason}; its \
         instructions are reported without disassembly",
        .file.display()
    )]
    Disassembly {
        /// The code object's load id.
        id: u64,
        /// Its saved file.
        file: PathBuf,
        /// The kernel symbol.
        kernel: String,
        /// The disassembler's message.
        reason: String,
    },

    /// No comgr could be loaded: [`crate::comgr::Comgr::open`] (sonames) or
    /// [`crate::comgr::Comgr::open_in`] (paths).
    #[error(
        "comgr (libamd_comgr) not found: tried {}{}; traced instructions will be named by \
         address and their sizes guessed as 4 bytes — install ROCm's comgr and put the \
         directory holding libamd_comgr.so.3 (usually /opt/rocm/lib) on LD_LIBRARY_PATH",
        .tried.join(", "),
        reasons_suffix(.reasons)
    )]
    ComgrNotFound {
        /// Every soname or path tried, in order.
        tried: Vec<String>,
        /// `dlerror()`'s text for each soname that failed to load (empty for a path search,
        /// which only tries files that exist).
        reasons: Vec<String>,
    },

    /// `dlopen` refused a comgr file.
    #[error(
        "cannot load comgr {}: {reason}; traced instructions will be named by address — check \
         that it is a complete x86-64 Linux build of libamd_comgr.so, or install ROCm's comgr",
        .path.display()
    )]
    ComgrOpen {
        /// The file passed to `dlopen`.
        path: PathBuf,
        /// `dlerror()`'s text.
        reason: String,
    },

    /// The library loaded but lacks one or more of comgr's disassembly entry points; nothing
    /// was called.
    #[error(
        "{} is not a usable libamd_comgr: it does not export {}; traced instructions will be \
         named by address — install ROCm's comgr (libamd_comgr.so.2 or .so.3)",
        .library.display(),
        .symbols.join(", ")
    )]
    ComgrMissingSymbols {
        /// The file that was loaded.
        library: PathBuf,
        /// Every missing symbol, in lookup order.
        symbols: Vec<&'static str>,
    },

    /// A comgr call failed.
    #[error(
        "comgr's {call} failed with status {status}: {detail}; instructions it cannot \
         disassemble are named by address"
    )]
    Comgr {
        /// The function called.
        call: &'static str,
        /// What it returned (SUCCESS when the call claimed success but its answer was unusable).
        status: ComgrStatus,
        /// What was asked and what to do.
        detail: String,
    },
}

impl Error {
    /// Whether this is a failure to find or load the trace decoder library ([`Error::NotFound`],
    /// [`Error::Open`], [`Error::MissingSymbols`]): the errors a caller that chose the
    /// directories to search may want to say how to choose others.
    pub fn is_decoder_library(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. } | Self::Open { .. } | Self::MissingSymbols { .. }
        )
    }

    /// For a failure to find or load the trace decoder, which directories the search went
    /// through; `None` for every other error and for a library loaded by path.
    pub fn library_search(&self) -> Option<SearchOrigin> {
        match self {
            Self::NotFound { search, .. } => Some(*search),
            Self::Open { search, .. } | Self::MissingSymbols { search, .. } => *search,
            _ => None,
        }
    }

    /// The same failure to load a library, as found by `origin`'s search (other errors are
    /// returned as they are).
    pub(crate) fn found_by(mut self, origin: SearchOrigin) -> Self {
        if let Self::Open { search, .. } | Self::MissingSymbols { search, .. } = &mut self {
            *search = Some(origin);
        }
        self
    }

    /// The records decoded before a [`Error::Decoder`] failure, if this is one.
    pub fn partial(&self) -> Option<&Decoded> {
        match self {
            Self::Decoder { partial, .. } => Some(partial),
            _ => None,
        }
    }

    /// Takes the records out of a [`Error::Decoder`] failure.
    pub fn into_partial(self) -> Option<Decoded> {
        match self {
            Self::Decoder { partial, .. } => Some(*partial),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_lists_every_dir_says_why_those_and_names_no_option() {
        let e = Error::NotFound {
            searched: vec![PathBuf::from("/a"), PathBuf::from("/opt/rocm/lib")],
            search: SearchOrigin::Defaults,
        };
        assert_eq!(
            e.to_string(),
            "rocprof-trace-decoder library not found in [\"/a\", \"/opt/rocm/lib\"] (the \
             directories searched: the LD_LIBRARY_PATH entries, then <ROCm>/lib); install \
             ROCm's rocprof-trace-decoder, or include the directory that holds \
             librocprof-trace-decoder.so in the search"
        );
        assert_eq!(e.library_search(), Some(SearchOrigin::Defaults));
        assert!(e.is_decoder_library());
        for origin in [
            SearchOrigin::Given,
            SearchOrigin::Environment,
            SearchOrigin::Defaults,
        ] {
            let e = Error::NotFound {
                searched: Vec::new(),
                search: origin,
            };
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("(the directories searched: {origin})")),
                "{msg}"
            );
            assert!(!msg.contains("--"), "a command-line option named: {msg}");
        }
    }

    #[test]
    fn load_failures_say_which_search_found_the_file() {
        let open = Error::Open {
            path: PathBuf::from("/d/librocprof-trace-decoder.so"),
            reason: "invalid ELF header".into(),
            search: None,
        };
        assert_eq!(
            open.to_string(),
            "cannot load the trace decoder /d/librocprof-trace-decoder.so: invalid ELF header; \
             check that it is a complete x86-64 Linux build of librocprof-trace-decoder.so, or \
             use another one"
        );
        assert_eq!(open.library_search(), None);
        assert!(open.is_decoder_library());
        let open = open.found_by(SearchOrigin::Environment);
        assert_eq!(open.library_search(), Some(SearchOrigin::Environment));
        assert!(
            open.to_string().starts_with(
                "cannot load the trace decoder /d/librocprof-trace-decoder.so (found in the \
                 directories searched: the ones ROCPROF_ATT_LIBRARY_PATH lists): invalid ELF"
            ),
            "{open}"
        );
        let missing = Error::MissingSymbols {
            library: PathBuf::from("/d/x.so"),
            symbols: vec!["a", "b"],
            search: None,
        }
        .found_by(SearchOrigin::Given);
        assert_eq!(
            missing.to_string(),
            "/d/x.so (found in the directories searched: the ones given) is not a usable \
             rocprof-trace-decoder: it does not export a, b; install a rocprof-trace-decoder \
             release (0.1.x), or use another library"
        );
        assert_eq!(missing.library_search(), Some(SearchOrigin::Given));
        // Other errors carry no search and are left as they are.
        let comgr = Error::ComgrOpen {
            path: PathBuf::from("/c.so"),
            reason: "r".into(),
        };
        assert!(!comgr.is_decoder_library());
        let comgr = comgr.found_by(SearchOrigin::Given);
        assert_eq!(comgr.library_search(), None);
        assert!(matches!(comgr, Error::ComgrOpen { .. }));
    }

    #[test]
    fn decoder_error_keeps_partial_records() {
        let partial = Decoded {
            gfxip: Some(11),
            ..Decoded::default()
        };
        let e = Error::Decoder {
            status: DecoderStatus::ERROR_INVALID_SHADER_DATA,
            name: "X".into(),
            partial: Box::new(partial),
        };
        assert!(e.to_string().contains("status 4 (X)"));
        assert_eq!(e.partial().and_then(|d| d.gfxip), Some(11));
        assert_eq!(e.into_partial().and_then(|d| d.gfxip), Some(11));
    }
}
