//! The private record directory: where the profiled processes write their logs, and what a
//! later `rocprof convert` needs to finish a run (`run.json`).
//!
//! It is created atomically under `$TMPDIR` with a random name (`rocprof-<16 hex digits>`) and
//! mode 0700, never reused (an existing name is skipped, not entered), locked for as long as
//! its run or conversion holds it, removed after a successful conversion and kept after a
//! failure. Reading it opens only regular files inside it: an entry named like a log that is a
//! FIFO, a device, a directory or a symbolic link is skipped.

use crate::plan::{AttPlan, ForeignDomain, Launch, OutputSettings, Selection};
use crate::process::Status;
use crate::words::io_reason;
use pmc_dxg::collection::CounterPlan;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Read as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Name of the run description inside a record directory.
pub const MANIFEST: &str = "run.json";
/// `schema` of [`RunManifest`].
pub const SCHEMA: &str = "rocprof-run/1";
/// Record directory names start with this.
pub const PREFIX: &str = "rocprof-";

/// Everything `rocprof convert` needs to write the files the run would have written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// What was traced.
    pub selection: Selection,
    /// `--kernel-include-regex` (handed to the tool).
    pub kernel_include_regex: Option<String>,
    /// `--kernel-exclude-regex` (handed to the tool).
    pub kernel_exclude_regex: Option<String>,
    /// The counter pass of this run, if it counts.
    #[serde(default)]
    pub counters: Option<CounterPlan>,
    /// The thread trace of this run, if it traces.
    #[serde(default)]
    pub thread_trace: Option<AttPlan>,
    /// Where and how the outputs are written.
    pub outputs: OutputSettings,
    /// The placeholders' values (command line, working directory, host, date, rocprof's pid).
    pub launch: Launch,
    /// How the application ended; `None` while it runs, or if rocprof did not see its end.
    pub status: Option<Status>,
    /// Domains of libraries this stack does not ship, asked for by name (reported after the
    /// run).
    #[serde(default)]
    pub foreign_domains: Vec<ForeignDomain>,
}

/// Why a directory cannot be used as a record directory.
#[derive(Debug, thiserror::Error)]
pub enum RecordDirError {
    /// Creating a new one failed.
    #[error("{}", record_dir_create_failed(parent, cause))]
    Create {
        /// Where it was to be created.
        parent: PathBuf,
        /// Why it failed (not a `source`: the message says it already, once).
        cause: io::Error,
    },
    /// The path is not a directory rocprof kept.
    #[error("{}", not_a_record_dir(path, why))]
    NotARecordDir {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Another rocprof (a run still going, or a conversion) holds it.
    #[error("{}", record_dir_in_use(path, *pid))]
    InUse {
        /// The directory.
        path: PathBuf,
        /// The rocprof that wrote it.
        pid: u32,
    },
}

/// A record directory some earlier run kept, as `rocprof convert` without arguments lists it.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The directory.
    pub path: PathBuf,
    /// Its run (`None` when its `run.json` is unreadable).
    pub manifest: Option<RunManifest>,
    /// Whether a live run or conversion holds it.
    pub in_use: bool,
}

/// The record directories under `parent` (normally `$TMPDIR`): real directories named
/// `rocprof-*`, oldest launch first.
pub fn kept_in(parent: &Path) -> Vec<Kept> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut kept: Vec<Kept> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            // `rocprof-<hex token>` only: other tools' and tests' `rocprof-…` entries are not
            // record directories.
            e.file_name()
                .to_string_lossy()
                .strip_prefix(PREFIX)
                .is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let path = e.path();
            let manifest = read_manifest(&path.join(MANIFEST)).ok();
            let in_use = File::open(&path).is_ok_and(|f| f.try_lock().is_err());
            Kept {
                path,
                manifest,
                in_use,
            }
        })
        .collect();
    kept.sort_by_key(|k| {
        k.manifest
            .as_ref()
            .map(|m| (m.launch.launch_date.clone(), m.launch.launch_time.clone()))
    });
    kept
}

/// An entry named like a record log that is not a regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry.
    pub path: PathBuf,
    /// What it is ("a FIFO", "a symbolic link", …).
    pub kind: &'static str,
}

/// A record directory, locked by this process.
#[derive(Debug)]
pub struct RecordDir {
    path: PathBuf,
    /// The directory itself, `flock`ed exclusively (released when this process ends, however
    /// it ends; close-on-exec, so the application never holds it).
    _lock: File,
}

impl RecordDir {
    /// Creates a new private record directory under `$TMPDIR` (or `/tmp`).
    pub fn create() -> Result<Self, RecordDirError> {
        let mut parent = std::env::temp_dir();
        if parent.is_relative()
            && let Ok(cwd) = std::env::current_dir()
        {
            parent = cwd.join(parent);
        }
        let err = |cause| RecordDirError::Create {
            parent: parent.clone(),
            cause,
        };
        for _ in 0..64 {
            let path = parent.join(format!("{PREFIX}{}", random_hex().map_err(err)?));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    // The umask can only have removed bits; set exactly 0700.
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                        .map_err(err)?;
                    let lock = File::open(&path).map_err(err)?;
                    lock.try_lock()
                        .map_err(|e| err(io::Error::other(e.to_string())))?;
                    return Ok(Self { path, _lock: lock });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(err(e)),
            }
        }
        Err(err(io::Error::other(
            "64 random names in a row already existed",
        )))
    }

    /// Opens a kept record directory for conversion: it must be a real directory (not a
    /// link to one) with a `run.json`, and no other rocprof may hold it.
    pub fn open(path: &Path) -> Result<(Self, RunManifest), RecordDirError> {
        let not = |why: String| RecordDirError::NotARecordDir {
            path: path.to_owned(),
            why,
        };
        let meta = std::fs::symlink_metadata(path).map_err(|e| not(e.to_string()))?;
        if meta.file_type().is_symlink() {
            return Err(not(
                "it is a symbolic link; give the directory itself".into()
            ));
        }
        if !meta.is_dir() {
            return Err(not("it is not a directory".into()));
        }
        let manifest = read_manifest(&path.join(MANIFEST)).map_err(not)?;
        let lock = File::open(path).map_err(|e| not(e.to_string()))?;
        if lock.try_lock().is_err() {
            return Err(RecordDirError::InUse {
                path: path.to_owned(),
                pid: manifest.launch.rocprof_pid,
            });
        }
        Ok((
            Self {
                path: path.to_owned(),
                _lock: lock,
            },
            manifest,
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `run.json` (whole, mode 0600: a temporary file renamed over it).
    pub fn write_manifest(&self, m: &RunManifest) -> io::Result<()> {
        let mut body = serde_json::to_vec_pretty(m).map_err(io::Error::other)?;
        body.push(b'\n');
        let options = atomic_file::Options::new().mode(0o600);
        atomic_file::write(&self.path.join(MANIFEST), options, &body).map_err(io::Error::from)
    }

    /// The modification time the file system gives a file created now (its clock can lag the
    /// system clock by a tick), to compare other files' times with.
    pub fn fs_now(&self) -> SystemTime {
        let stamp = self.path.join(format!(".stamp-{}", std::process::id()));
        let t = File::create(&stamp)
            .and_then(|f| f.metadata())
            .and_then(|m| m.modified());
        let _ = std::fs::remove_file(&stamp);
        t.unwrap_or_else(|_| SystemTime::now())
    }

    /// The record logs in the directory, by process id and image, and the entries named like
    /// logs that are skipped because they are not regular files.
    pub fn logs(&self) -> (Vec<PathBuf>, Vec<Skipped>) {
        let mut logs = Vec::new();
        let mut skipped = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return (logs, skipped);
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "rplog") {
                continue;
            }
            // symlink_metadata: a link is reported as a link, never followed.
            let kind = match std::fs::symlink_metadata(&path) {
                Ok(m) => file_kind(&m.file_type()),
                Err(_) => continue,
            };
            match kind {
                None => logs.push(path),
                Some(kind) => skipped.push(Skipped { path, kind }),
            }
        }
        logs.sort_by_key(|p| (log_order(p), p.clone()));
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        (logs, skipped)
    }

    /// Removes the directory and everything in it.
    pub fn remove(self) -> io::Result<()> {
        std::fs::remove_dir_all(&self.path)
    }
}

/// `None` for a regular file, else what the entry is.
fn file_kind(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    Some(if t.is_file() {
        return None;
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    })
}

/// `(pid, image)` of `<pid>.rplog` / `<pid>.<image>.rplog`; other names sort last.
fn log_order(p: &Path) -> (u64, u64) {
    let name = p
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".rplog"))
        .unwrap_or("");
    let mut parts = name.splitn(2, '.');
    let pid = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    let image = parts.next().map_or(Some(0), |s| s.parse().ok());
    (pid, image.unwrap_or(u64::MAX))
}

/// Most bytes of a `run.json` read: far more than a run description takes (the command line
/// is at most the kernel's 2 MiB argument limit); a longer file is refused unread.
pub const MANIFEST_LIMIT: u64 = 16 << 20;

/// Reads and checks `run.json` (at most [`MANIFEST_LIMIT`] bytes of it); the error says what
/// is wrong.
fn read_manifest(path: &Path) -> Result<RunManifest, String> {
    let mut text = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|f| {
            let meta = f.metadata()?;
            if !meta.is_file() {
                return Err(io::Error::other("not a regular file"));
            }
            if meta.len() > MANIFEST_LIMIT {
                return Err(io::Error::other(format!(
                    "{} bytes, more than the {MANIFEST_LIMIT} a run description can take; not read",
                    meta.len()
                )));
            }
            // The size can change while it is read: never read past the limit either way.
            f.take(MANIFEST_LIMIT + 1).read_to_string(&mut text)?;
            if text.len() as u64 > MANIFEST_LIMIT {
                return Err(io::Error::other(format!(
                    "more than the {MANIFEST_LIMIT} bytes a run description can take; not read"
                )));
            }
            Ok(())
        })
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let m: RunManifest =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if m.schema != SCHEMA {
        return Err(format!(
            "{}: schema '{}', this rocprof reads '{SCHEMA}'",
            path.display(),
            m.schema
        ));
    }
    Ok(m)
}

/// 16 hex digits from the kernel's random source.
fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; 8];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A random token for names that must not collide (staging directories, probes).
pub fn random_token() -> String {
    random_hex().unwrap_or_else(|_| {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{:x}{:x}", std::process::id(), t)
    })
}

/// The private record directory cannot be created.
fn record_dir_create_failed(parent: &Path, e: &io::Error) -> String {
    format!(
        "cannot create a private record directory in {}: {}; point TMPDIR at a writable directory",
        parent.display(),
        io_reason(e)
    )
}

/// A convert of a directory that is not a kept record directory.
fn not_a_record_dir(path: &Path, why: &str) -> String {
    format!(
        "{} is not a record directory that rocprof kept ({why}): give a directory named in a `rocprof convert` command rocprof printed",
        path.display()
    )
}

/// A convert of a directory that a running rocprof holds.
fn record_dir_in_use(path: &Path, pid: u32) -> String {
    format!(
        "{} is in use by another rocprof (the run was started by pid {pid}; it may still be running, or converting it): wait for it to finish, then convert again",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_run_json_is_refused_unread() {
        let dir = std::env::temp_dir().join(format!("rocprof-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(MANIFEST);
        let f = File::create(&path).unwrap();
        f.set_len(1 << 30).unwrap();
        drop(f);
        let e = read_manifest(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("1073741824 bytes, more than the 16777216"),
            "{e}"
        );
    }

    #[test]
    fn logs_sort_by_process_and_image() {
        let mut v: Vec<PathBuf> = ["10.rplog", "9.1.rplog", "9.rplog", "x.rplog", "9.10.rplog"]
            .iter()
            .map(PathBuf::from)
            .collect();
        v.sort_by_key(|p| (log_order(p), p.clone()));
        let names: Vec<_> = v.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            names,
            ["9.rplog", "9.1.rplog", "9.10.rplog", "10.rplog", "x.rplog"]
        );
    }
}
