//! The crate's one error type.

use crate::abi::DecoderStatus;
use crate::comgr::ComgrStatus;
use crate::decode::Decoded;
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

/// Everything that can go wrong while finding, loading or running the trace decoder, or
/// writing its outputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No directory searched holds a file whose name contains `librocprof-trace-decoder.so`.
    #[error(
        "rocprof-trace-decoder library not found in [{}]; install ROCm's rocprof-trace-decoder \
         or point --att-library-path at the directory that holds librocprof-trace-decoder.so",
        list_paths(.searched)
    )]
    NotFound {
        /// Every directory searched, in search order.
        searched: Vec<PathBuf>,
    },

    /// `dlopen` refused the file.
    #[error(
        "cannot load the trace decoder {}: {reason}; check that it is a complete x86-64 Linux \
         build of librocprof-trace-decoder.so, or point --att-library-path at another one",
        .path.display()
    )]
    Open {
        /// The file passed to `dlopen`.
        path: PathBuf,
        /// `dlerror()`'s text.
        reason: String,
    },

    /// The library loaded but lacks one or more of the three V1 entry points; nothing was called.
    #[error(
        "{} is not a usable rocprof-trace-decoder: it does not export {}; install a \
         rocprof-trace-decoder release (0.1.x) or point --att-library-path at one",
        .library.display(),
        .symbols.join(", ")
    )]
    MissingSymbols {
        /// The file that was loaded.
        library: PathBuf,
        /// Every missing symbol, in lookup order.
        symbols: Vec<&'static str>,
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
    fn not_found_lists_every_dir_and_says_what_to_do() {
        let e = Error::NotFound {
            searched: vec![PathBuf::from("/a"), PathBuf::from("/opt/rocm/lib")],
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "rocprof-trace-decoder library not found in [\"/a\", \"/opt/rocm/lib\"]"
            ),
            "{msg}"
        );
        assert!(msg.contains("--att-library-path"), "{msg}");
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
