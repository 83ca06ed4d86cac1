//! Where the output files go and how each is written: never half-written.
//!
//! Every writer of this crate builds its file through one function here ([`write_whole`] for a
//! buffered stream of bytes; the rocpd writer hands SQLite the temporary's name): the content
//! goes to a temporary file beside the target, renamed over it only once complete
//! (`atomic_file`, which says how the temporary is named and created); on any error the
//! temporary is removed, so the target keeps either its old content or the whole new one, and
//! concurrent writers of one name never mix their rows.

use crate::Error;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where a set of output files go: `<prefix>_<name>.<ext>`.
#[derive(Debug, Clone)]
pub struct OutputPrefix(pub PathBuf);

impl OutputPrefix {
    /// The path of the file named `name` with extension `ext`.
    pub fn file(&self, name: &str, ext: &str) -> PathBuf {
        let mut s = self.0.clone().into_os_string();
        s.push(format!("_{name}.{ext}"));
        PathBuf::from(s)
    }
}

/// A file being written by [`write_whole`].
pub type Out = io::BufWriter<std::fs::File>;

/// Writes `body` into a new file at `path` (creating its directory), never half-written: the
/// bytes go through a 1 MiB buffer into a temporary file beside `path`, renamed over it once
/// complete; on any error the temporary is removed and `path` keeps its old content.
pub fn write_whole(
    path: &Path,
    body: impl FnOnce(&mut Out) -> io::Result<()>,
) -> Result<(), Error> {
    replace_whole(path, |_, file| {
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        body(&mut out)
            .and_then(|()| out.flush())
            .map_err(Error::io(path))
    })
}

/// Builds `path`'s new content with `build` in a new temporary file beside it (given the
/// temporary's path and the file, open for writing), then renames it over `path`, creating its
/// directory first. On any error the temporary is removed, so `path` keeps its old content or
/// holds the whole new one.
pub(crate) fn replace_whole(
    path: &Path,
    build: impl FnOnce(&Path, std::fs::File) -> Result<(), Error>,
) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(Error::io(path))?;
    }
    atomic_file::replace(path, atomic_file::Options::new(), build)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("trace-export-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_no_temporary() {
        let dir = scratch("fail");
        let path = dir.join("sub").join("x_kernel_trace.csv");
        write_whole(&path, |out| out.write_all(b"old\n")).unwrap();
        let err = write_whole(&path, |out| {
            out.write_all(b"half a ro")?;
            Err(io::Error::other("disk went away"))
        })
        .unwrap_err();
        assert!(
            matches!(&err, Error::Io { path: p, .. } if *p == path),
            "{err:?}"
        );
        assert!(err.to_string().contains("x_kernel_trace.csv"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(names(path.parent().unwrap()), ["x_kernel_trace.csv"]);
        write_whole(&path, |out| out.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(names(path.parent().unwrap()), ["x_kernel_trace.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_placed_is_an_io_error_naming_it() {
        let dir = scratch("blocked");
        std::fs::create_dir_all(&dir).unwrap();
        // A regular file where the directory should be.
        std::fs::write(dir.join("sub"), b"x").unwrap();
        let path = dir.join("sub").join("x.csv");
        let err = write_whole(&path, |out| out.write_all(b"a\n")).unwrap_err();
        assert!(
            matches!(&err, Error::Io { path: p, .. } if *p == path),
            "{err:?}"
        );
        // And a directory where the file should go: the rename fails, nothing is left.
        let path = dir.join("taken");
        std::fs::create_dir_all(path.join("inside")).unwrap();
        let err = write_whole(&path, |out| out.write_all(b"a\n")).unwrap_err();
        assert!(
            matches!(&err, Error::Io { path: p, .. } if *p == path),
            "{err:?}"
        );
        assert_eq!(names(&dir), ["sub", "taken"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_temporary_name_fits_beside_a_255_byte_name() {
        let dir = scratch("long");
        let path = dir.join(format!("{}.csv", "k".repeat(251)));
        write_whole(&path, |out| out.write_all(b"a\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n");
        assert_eq!(names(&dir).len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
