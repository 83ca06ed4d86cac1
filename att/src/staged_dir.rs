//! A directory built under a hidden temporary name beside its target and renamed into place
//! once complete, so that a reader (or a run that failed half-way) never sees a dispatch
//! directory with only some of its files.
//!
//! The files inside are written plainly (create, one write, close): the directory is what is
//! atomic, so the thousands of wave files of a dispatch do not each pay a temporary name and a
//! rename. When the target already exists with files in it (an earlier run into the same output
//! directory), the directory cannot be renamed over it; each file is then renamed over its
//! namesake, which keeps every file whole and leaves files the new run did not write, as writing
//! them one by one into place would.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A temporary directory beside a target; removed with its content unless [`commit`]ted.
///
/// [`commit`]: StagedDir::commit
#[derive(Debug)]
pub(crate) struct StagedDir {
    temp: PathBuf,
    committed: bool,
}

/// A step that failed: what was being done, the path, and the OS error.
pub(crate) type StageError = (&'static str, PathBuf, io::Error);

impl StagedDir {
    /// Creates a new, empty `.<name>.tmp-<pid>-<n>` beside `target` (whose parent must exist);
    /// an existing entry of that name is never reused.
    pub(crate) fn create(target: &Path) -> Result<Self, StageError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let temp = parent.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
            match std::fs::create_dir(&temp) {
                Ok(()) => {
                    return Ok(Self {
                        temp,
                        committed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(("create directory", temp, e)),
            }
        }
    }

    /// Where to write the files.
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// Puts the content in place as `target`: one rename when `target` is absent or an empty
    /// directory, else each entry renamed over its namesake inside `target`.
    pub(crate) fn commit(mut self, target: &Path) -> Result<(), StageError> {
        let whole = std::fs::rename(&self.temp, target);
        let Err(first) = whole else {
            self.committed = true;
            return Ok(());
        };
        if !target.is_dir() {
            return Err(("rename into place", target.to_owned(), first));
        }
        let entries = std::fs::read_dir(&self.temp).map_err(|e| ("read", self.temp.clone(), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| ("read", self.temp.clone(), e))?;
            let to = target.join(entry.file_name());
            std::fs::rename(entry.path(), &to).map_err(|e| ("rename into place", to, e))?;
        }
        std::fs::remove_dir(&self.temp).map_err(|e| ("remove", self.temp.clone(), e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed
            && let Err(e) = std::fs::remove_dir_all(&self.temp)
        {
            tracing::debug!(path = %self.temp.display(), error = %e, "cannot remove a staged directory");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_directory_appears_whole_with_one_rename() {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("d");
        let s = StagedDir::create(&target).unwrap();
        assert!(s.path().starts_with(out.path()));
        assert!(
            s.path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".d.tmp-")
        );
        std::fs::write(s.path().join("a"), b"1").unwrap();
        assert!(!target.exists(), "nothing visible before the commit");
        s.commit(&target).unwrap();
        assert_eq!(names(out.path()), ["d"], "no temporary left");
        assert_eq!(std::fs::read(target.join("a")).unwrap(), b"1");
    }

    #[test]
    fn an_existing_directory_gets_each_file_replaced_and_keeps_the_others() {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("d");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("a"), b"old").unwrap();
        std::fs::write(target.join("stale"), b"old").unwrap();
        let s = StagedDir::create(&target).unwrap();
        std::fs::write(s.path().join("a"), b"new").unwrap();
        std::fs::write(s.path().join("b"), b"new").unwrap();
        s.commit(&target).unwrap();
        assert_eq!(names(out.path()), ["d"]);
        assert_eq!(names(&target), ["a", "b", "stale"]);
        assert_eq!(std::fs::read(target.join("a")).unwrap(), b"new");
        assert_eq!(std::fs::read(target.join("stale")).unwrap(), b"old");
    }

    #[test]
    fn an_abandoned_stage_is_removed_and_a_file_in_the_way_is_an_error() {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("d");
        let s = StagedDir::create(&target).unwrap();
        std::fs::write(s.path().join("a"), b"1").unwrap();
        drop(s);
        assert!(
            names(out.path()).is_empty(),
            "dropped without commit: removed"
        );

        std::fs::write(&target, b"a file").unwrap();
        let s = StagedDir::create(&target).unwrap();
        let (action, path, _) = s.commit(&target).unwrap_err();
        assert_eq!(
            (action, path.as_path()),
            ("rename into place", target.as_path())
        );
        assert_eq!(names(out.path()), ["d"], "the failed stage is removed");
    }
}
