//! Writing a file atomically: a reader of the target sees either its old content or the whole
//! new one, never a part.
//!
//! [`replace`] creates a new temporary file beside the target (in the same directory, so the
//! rename cannot cross file systems), hands it to the caller to fill, and renames it over the
//! target once the caller says it is complete. On any error — creating the temporary, the
//! caller's own, the rename — the temporary is removed and the target keeps its old content
//! (or stays absent). [`write`] does the same for bytes already in memory.
//!
//! The temporary is `.<name>.tmp-<pid>-<n>`: a hidden name, the target's name cut so that the
//! whole fits a 255-byte file name, this process's id and a per-process counter. It is created
//! exclusively (`O_CREAT | O_EXCL`: an existing file, or a symbolic link planted under that
//! name, is never opened; the next counter value is tried instead), so concurrent writers of one
//! target never share a temporary, and the last rename wins whole. [`Options::mode`] gives the
//! temporary — and so the file — its permission bits at creation (less the umask, as `open(2)`
//! applies them), so a private file is never readable by others, not even briefly.
//!
//! The parent directory must exist: creating it is the caller's decision. Nothing is synced to
//! disk (the guarantee is against readers and failed writes, not against a power loss).
//!
//! Errors are this crate's [`Error`], which names the target and the step that failed, and
//! converts into the caller's error type (`E: From<Error>`) or into a [`std::io::Error`] of the
//! same kind.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The longest file name (in bytes) the temporary's name is kept within.
const NAME_MAX: usize = 255;

/// A step of an atomic write that failed, with the target's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The temporary file could not be created beside the target.
    #[error("cannot create a temporary file beside {}: {source}", path.display())]
    CreateTemp {
        /// The target.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The content could not be written ([`write`]).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The target.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The complete temporary file could not be renamed over the target.
    #[error("cannot rename the new content over {}: {source}", path.display())]
    Rename {
        /// The target.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

impl Error {
    /// The target the write was for.
    pub fn path(&self) -> &Path {
        match self {
            Error::CreateTemp { path, .. }
            | Error::Write { path, .. }
            | Error::Rename { path, .. } => path,
        }
    }

    /// The I/O error.
    pub fn io_error(&self) -> &io::Error {
        match self {
            Error::CreateTemp { source, .. }
            | Error::Write { source, .. }
            | Error::Rename { source, .. } => source,
        }
    }

    /// The target and the I/O error.
    pub fn into_parts(self) -> (PathBuf, io::Error) {
        match self {
            Error::CreateTemp { path, source }
            | Error::Write { path, source }
            | Error::Rename { path, source } => (path, source),
        }
    }
}

/// An [`io::Error`] of the same kind, whose message names the target and the step.
impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        io::Error::new(e.io_error().kind(), e)
    }
}

/// How the file is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    mode: Option<u32>,
}

impl Options {
    /// The defaults: permission bits `0o666` less the umask, as a newly created file gets.
    pub const fn new() -> Self {
        Options { mode: None }
    }

    /// Creates the file with permission bits `mode` (less the umask), e.g. `0o600` for a file
    /// only its owner may read.
    pub const fn mode(self, mode: u32) -> Self {
        Options { mode: Some(mode) }
    }
}

/// Builds `path`'s new content with `build` in a new temporary file beside it, then renames the
/// temporary over `path`.
///
/// `build` gets the temporary's path (for a library that opens files by name, such as SQLite)
/// and the file, open for writing (closed when `build` drops it). On any error — creating the
/// temporary, `build`'s own (returned as it is), the rename — the temporary is removed, so `path`
/// keeps its old content; on success `path` holds the whole new content and `build`'s value is
/// returned. `path`'s directory must exist.
pub fn replace<T, E>(
    path: &Path,
    options: Options,
    build: impl FnOnce(&Path, File) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<Error>,
{
    let (temp, file) = create_temp_beside(path, options).map_err(|source| Error::CreateTemp {
        path: path.to_owned(),
        source,
    })?;
    let done = build(&temp, file).and_then(|value| {
        std::fs::rename(&temp, path)
            .map(|()| value)
            .map_err(|source| {
                E::from(Error::Rename {
                    path: path.to_owned(),
                    source,
                })
            })
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    done
}

/// Writes `bytes` as `path`'s whole new content, through [`replace`].
pub fn write(path: &Path, options: Options, bytes: &[u8]) -> Result<(), Error> {
    replace(path, options, |_, mut file| {
        file.write_all(bytes).map_err(|source| Error::Write {
            path: path.to_owned(),
            source,
        })
    })
}

/// The temporary's file name for a target named `name`: `.<name>.tmp-<pid>-<n>`, with `name`
/// cut (at a character boundary) so that the whole fits [`NAME_MAX`] bytes.
fn temp_name(name: &str, pid: u32, n: u64) -> String {
    let suffix = format!(".tmp-{pid}-{n}");
    let mut keep = name.len().min(NAME_MAX - 1 - suffix.len());
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!(".{}{suffix}", &name[..keep])
}

/// Creates a new, empty temporary file beside `path` (in its directory, `.` when it names
/// none); an existing file of the chosen name is never reused.
fn create_temp_beside(path: &Path, options: Options) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(temp_name(&name, std::process::id(), n));
        let mut open = OpenOptions::new();
        open.write(true).create_new(true);
        if let Some(mode) = options.mode {
            open.mode(mode);
        }
        match open.open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_name_is_hidden_and_fits_a_255_byte_name() {
        assert_eq!(temp_name("x.csv", 12, 3), ".x.csv.tmp-12-3");
        let long = "k".repeat(255);
        let name = temp_name(&long, u32::MAX, u64::MAX);
        assert_eq!(name.len(), 255);
        assert!(name.starts_with(".kkk"));
        assert!(name.ends_with(&format!(".tmp-{}-{}", u32::MAX, u64::MAX)));
        // A multi-byte character is never cut in half.
        let wide = "é".repeat(200);
        let name = temp_name(&wide, 1, 1);
        assert!(name.len() <= 255);
        assert!(
            name.len() >= 253,
            "cut by at most one character: {}",
            name.len()
        );
    }

    #[test]
    fn errors_name_the_target_and_keep_the_kind() {
        let e = Error::Rename {
            path: "/o/x.csv".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert_eq!(e.path(), Path::new("/o/x.csv"));
        assert!(
            e.to_string()
                .starts_with("cannot rename the new content over /o/x.csv: ")
        );
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
        assert!(io.to_string().contains("/o/x.csv"), "{io}");
    }
}
