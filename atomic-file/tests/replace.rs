//! Atomic replacement on a real file system: a failure at any step keeps the old content and
//! leaves no temporary, the temporary's name fits beside a 255-byte name, the mode is the
//! file's, and an existing file (or link) under a temporary's name is never touched.

use atomic_file::{Error, Options, replace, write};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A fresh, empty directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atomic-file-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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

/// Fills the temporary through a buffer, as the exporters do.
fn fill(path: &Path, body: &[u8]) -> Result<(), Error> {
    replace(path, Options::new(), |_, file| {
        let mut out = io::BufWriter::new(file);
        out.write_all(body)
            .and_then(|()| out.flush())
            .map_err(|source| Error::Write {
                path: path.to_owned(),
                source,
            })
    })
}

#[test]
fn a_failed_write_keeps_the_old_file_and_leaves_no_temporary() {
    let dir = scratch("fail");
    let path = dir.join("x_kernel_trace.csv");
    fill(&path, b"old\n").unwrap();
    let err = replace(&path, Options::new(), |temp, mut file| {
        assert!(temp.starts_with(&dir), "{}", temp.display());
        file.write_all(b"half a ro").unwrap();
        Err::<(), _>(Error::Write {
            path: path.clone(),
            source: io::Error::other("disk went away"),
        })
    })
    .unwrap_err();
    assert!(err.to_string().contains("x_kernel_trace.csv"), "{err}");
    assert!(err.to_string().contains("disk went away"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(names(&dir), ["x_kernel_trace.csv"]);
    fill(&path, b"new\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    assert_eq!(names(&dir), ["x_kernel_trace.csv"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_callers_own_error_and_value_come_back_unchanged() {
    #[derive(Debug, PartialEq)]
    enum Mine {
        Sql(&'static str),
        File(String),
    }
    impl From<Error> for Mine {
        fn from(e: Error) -> Self {
            Mine::File(e.to_string())
        }
    }
    let dir = scratch("own");
    let path = dir.join("results.db");
    let r = replace(&path, Options::new(), |_, _| {
        Err::<(), _>(Mine::Sql("disk I/O error"))
    });
    assert_eq!(r, Err(Mine::Sql("disk I/O error")));
    assert!(names(&dir).is_empty());
    let n = replace(&path, Options::new(), |temp, file| {
        // A library that opens the file by name.
        drop(file);
        std::fs::write(temp, b"db").unwrap();
        Ok::<_, Mine>(2)
    });
    assert_eq!(n, Ok(2));
    assert_eq!(std::fs::read(&path).unwrap(), b"db");
    assert_eq!(names(&dir), ["results.db"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_rename_removes_the_temporary() {
    let dir = scratch("rename");
    // A non-empty directory where the file should go: the rename fails.
    let path = dir.join("out");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), b"x").unwrap();
    let err = write(&path, Options::new(), b"new").unwrap_err();
    assert!(matches!(err, Error::Rename { .. }), "{err:?}");
    assert_eq!(err.path(), path);
    assert_eq!(names(&dir), ["out"]);
    assert_eq!(names(&path), ["inside"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_directory_is_an_error_naming_the_target() {
    let dir = scratch("nodir");
    let path = dir.join("absent").join("x.json");
    let err = write(&path, Options::new(), b"{}").unwrap_err();
    assert!(matches!(err, Error::CreateTemp { .. }), "{err:?}");
    assert_eq!(err.io_error().kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("absent/x.json"), "{err}");
    assert!(names(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_temporary_name_fits_beside_a_255_byte_name() {
    let dir = scratch("long");
    let path = dir.join(format!("{}.csv", "k".repeat(251)));
    fill(&path, b"a\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n");
    assert_eq!(names(&dir).len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_mode_is_the_new_files_from_its_creation() {
    let dir = scratch("mode");
    let path = dir.join("run.json");
    std::fs::write(&path, b"old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let seen = replace(&path, Options::new().mode(0o600), |temp, mut file| {
        file.write_all(b"{}\n").unwrap();
        Ok::<_, Error>(mode(temp))
    })
    .unwrap();
    assert_eq!(seen, 0o600, "private while being written");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_existing_file_or_link_under_a_temporary_name_is_never_opened() {
    let dir = scratch("planted");
    let outside = scratch("planted-outside").join("victim");
    std::fs::write(&outside, b"keep").unwrap();
    // Every name the next writes of this process could choose (the counter is shared with the
    // other tests, which write far fewer files): regular files, and links to a file elsewhere.
    let pid = std::process::id();
    for n in 0..200 {
        let planted = dir.join(format!(".t.tmp-{pid}-{n}"));
        if n % 2 == 0 {
            std::fs::write(&planted, b"planted").unwrap();
        } else {
            std::os::unix::fs::symlink(&outside, &planted).unwrap();
        }
    }
    let path = dir.join("t");
    write(&path, Options::new(), b"mine").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"mine");
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    for n in (0..200).step_by(2) {
        assert_eq!(
            std::fs::read(dir.join(format!(".t.tmp-{pid}-{n}"))).unwrap(),
            b"planted"
        );
    }
    assert_eq!(names(&dir).len(), 201);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(outside.parent().unwrap()).unwrap();
}
