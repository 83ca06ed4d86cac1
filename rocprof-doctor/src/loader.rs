//! Which file the dynamic loader resolves a library name to, and from where: glibc's search
//! order re-enacted without loading anything (so nothing is initialised and no copy is mapped).
//!
//! For a name without `/` asked for by an object: the object's `DT_RPATH` (and the
//! executable's) when the object has no `DT_RUNPATH`, then `LD_LIBRARY_PATH` (an empty entry is
//! the working directory; ignored in secure-execution mode), then the object's `DT_RUNPATH`,
//! then the directories of `/etc/ld.so.conf` (what `ldconfig` caches), then the system
//! directories. A file that is not a 64-bit x86-64 ELF object is skipped, as the loader skips
//! it. Every later match is kept too ("shadowed"), because which copies exist is evidence.

use crate::check::Env;
use crate::elf::{self, Elf};
use serde::Serialize;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The system directories searched last (x86-64 glibc, Debian/Ubuntu multiarch first).
const SYSTEM_DIRS: [&str; 6] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// Why a directory is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// The name is a path.
    Path,
    /// A `DT_RPATH`.
    Rpath,
    /// `LD_LIBRARY_PATH`.
    LdLibraryPath,
    /// A `DT_RUNPATH`.
    Runpath,
    /// `/etc/ld.so.conf` (the `ldconfig` cache).
    LdSoConf,
    /// The system directories.
    System,
}

impl Via {
    /// In words, for evidence.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Path => "given as a path",
            Self::Rpath => "DT_RPATH",
            Self::LdLibraryPath => "LD_LIBRARY_PATH",
            Self::Runpath => "DT_RUNPATH",
            Self::LdSoConf => "/etc/ld.so.conf",
            Self::System => "a system directory",
        }
    }
}

/// A directory of the search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dir {
    /// The directory.
    pub path: PathBuf,
    /// Why it is searched.
    pub via: Via,
}

/// A file the search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The path the loader opens (directory + name).
    pub path: PathBuf,
    /// The file behind it (links resolved).
    pub real: PathBuf,
    /// Why its directory was searched.
    pub via: Via,
    /// Its `DT_SONAME` (read when the search looked at the file).
    #[serde(skip)]
    pub soname: Option<String>,
}

impl Found {
    /// `/dir/name → real (LD_LIBRARY_PATH)`.
    pub fn describe(&self) -> String {
        if self.real == self.path {
            format!("{} ({})", self.path.display(), self.via.describe())
        } else {
            format!(
                "{} → {} ({})",
                self.path.display(),
                self.real.display(),
                self.via.describe()
            )
        }
    }
}

/// Where one name resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// The name asked for.
    pub name: String,
    /// The file the loader takes.
    pub chosen: Option<Found>,
    /// Later matches of other files (what an override shadows).
    pub shadowed: Vec<Found>,
}

/// An object whose dependencies are being resolved: its file and its ELF facts.
#[derive(Debug, Clone)]
pub struct Object {
    /// The file (links resolved).
    pub real: PathBuf,
    /// Its ELF facts.
    pub elf: Elf,
}

impl Object {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Object, String> {
        let real = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
        let elf = elf::read(&real)?;
        Ok(Object { real, elf })
    }

    /// A path list of this object's (`$ORIGIN` expanded).
    fn paths(&self, list: Option<&str>) -> Vec<PathBuf> {
        let origin = self
            .real
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        list.unwrap_or_default()
            .split(':')
            .filter(|s| !s.is_empty())
            .map(|s| PathBuf::from(s.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin)))
            .collect()
    }
}

/// The search configuration of one environment.
#[derive(Debug, Clone)]
pub struct Loader {
    ld_library_path: Vec<PathBuf>,
    conf: Vec<PathBuf>,
    /// Secure-execution mode (a setuid program): `LD_LIBRARY_PATH` is ignored.
    pub secure: bool,
}

impl Loader {
    /// The search of a process started with `env`.
    pub fn new(env: &Env) -> Loader {
        let ld_library_path = env
            .get("LD_LIBRARY_PATH")
            .map(|v| {
                v.split([':', ';'])
                    .map(|s| PathBuf::from(if s.is_empty() { "." } else { s }))
                    .collect()
            })
            .unwrap_or_default();
        let mut conf = Vec::new();
        read_conf(Path::new("/etc/ld.so.conf"), &mut conf, 0);
        Loader {
            ld_library_path,
            conf,
            secure: false,
        }
    }

    /// The `LD_LIBRARY_PATH` directories (empty entries as `.`).
    pub fn ld_library_path(&self) -> &[PathBuf] {
        &self.ld_library_path
    }

    /// The directories searched for a dependency of `requester` in a process running `exe`
    /// (both `None`: a `dlopen` from an object without search paths, such as the profiler).
    pub fn dirs(&self, requester: Option<&Object>, exe: Option<&Object>) -> Vec<Dir> {
        let mut dirs = Vec::new();
        let mut push = |paths: Vec<PathBuf>, via: Via| {
            dirs.extend(paths.into_iter().map(|path| Dir { path, via }));
        };
        let has_runpath = |o: &Object| o.elf.runpath.is_some();
        if let Some(r) = requester.filter(|r| !has_runpath(r)) {
            push(r.paths(r.elf.rpath.as_deref()), Via::Rpath);
            if let Some(e) = exe.filter(|e| !has_runpath(e) && e.real != r.real) {
                push(e.paths(e.elf.rpath.as_deref()), Via::Rpath);
            }
        }
        if !self.secure {
            push(self.ld_library_path.clone(), Via::LdLibraryPath);
        }
        if let Some(r) = requester {
            push(r.paths(r.elf.runpath.as_deref()), Via::Runpath);
        }
        push(self.conf.clone(), Via::LdSoConf);
        push(SYSTEM_DIRS.iter().map(PathBuf::from).collect(), Via::System);
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|d| seen.insert(d.path.clone()));
        dirs
    }

    /// Where `name` resolves for `requester` (see [`Loader::dirs`]).
    pub fn resolve(
        &self,
        name: &str,
        requester: Option<&Object>,
        exe: Option<&Object>,
    ) -> Resolution {
        if name.contains('/') {
            let path = PathBuf::from(name);
            let chosen = loadable(&path).map(|(real, soname)| Found {
                path,
                real,
                via: Via::Path,
                soname,
            });
            return Resolution {
                name: name.to_owned(),
                chosen,
                shadowed: Vec::new(),
            };
        }
        let mut found: Vec<Found> = Vec::new();
        for dir in self.dirs(requester, exe) {
            let path = dir.path.join(name);
            if let Some((real, soname)) = loadable(&path)
                && !found.iter().any(|f| same_file(&f.real, &real))
            {
                found.push(Found {
                    path,
                    real,
                    via: dir.via,
                    soname,
                });
            }
        }
        let mut found = found.into_iter();
        Resolution {
            name: name.to_owned(),
            chosen: found.next(),
            shadowed: found.collect(),
        }
    }

    /// The first of `names` that resolves (for libraries known by several sonames).
    pub fn resolve_any(&self, names: &[&str]) -> Resolution {
        names
            .iter()
            .map(|n| self.resolve(n, None, None))
            .find(|r| r.chosen.is_some())
            .unwrap_or_else(|| Resolution {
                name: names.first().copied().unwrap_or_default().to_owned(),
                chosen: None,
                shadowed: Vec::new(),
            })
    }
}

/// The file behind `path` and its `DT_SONAME`, if the loader would take it (a 64-bit x86-64
/// ELF file).
fn loadable(path: &Path) -> Option<(PathBuf, Option<String>)> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let real = std::fs::canonicalize(path).ok()?;
    elf::read(&real)
        .ok()
        .filter(Elf::loadable_here)
        .map(|e| (real, e.soname))
}

/// Whether two paths are the same file (device and inode), as the loader compares them.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The directories of an `ld.so.conf` file, following `include` lines (`dir/*.conf` globs).
fn read_conf(file: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    if depth > 4 {
        return;
    }
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line.strip_prefix("include").map(str::trim) {
            for f in glob_conf(pattern, file) {
                read_conf(&f, out, depth + 1);
            }
        } else if line.starts_with('/') {
            // `dir=TYPE` (an old hwcap syntax) keeps only the directory.
            let dir = line.split(['=', ' ', '\t']).next().unwrap_or(line);
            out.push(PathBuf::from(dir));
        }
    }
}

/// The files an `include` pattern names: a literal path, or `dir/*suffix`.
fn glob_conf(pattern: &str, from: &Path) -> Vec<PathBuf> {
    let pattern = if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        from.parent().unwrap_or(Path::new("/")).join(pattern)
    };
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(suffix) = name.strip_prefix('*') else {
        return vec![pattern];
    };
    let Some(dir) = pattern.parent() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The version in a library's file name: `librocdxg.so.1.2.0` → `1.2.0` for `stem`
/// `librocdxg.so`.
pub fn file_version(real: &Path, stem: &str) -> Option<String> {
    let name = real.file_name()?.to_string_lossy().into_owned();
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('.'))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The ROCm release a library belongs to, from its versioned file name (ROCm's
/// `libhsa-runtime64.so.1.15.70200`: the last number is the ROCm version, 7.2.0) or from a
/// `rocm-X.Y.Z` directory on its path.
pub fn rocm_release(real: &Path, stem: &str) -> Option<(u32, u32, u32)> {
    if let Some(v) = file_version(real, stem)
        && let Some(last) = v.rsplit('.').next()
        && last.len() == 5
        && let Ok(n) = last.parse::<u32>()
        && v.contains('.')
    {
        return Some((n / 10000, n / 100 % 100, n % 100));
    }
    real.ancestors().find_map(|a| {
        let name = a.file_name()?.to_string_lossy().into_owned();
        let v = name.strip_prefix("rocm-")?;
        let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
        Some((
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
            parts.next().flatten().unwrap_or(0),
        ))
    })
}

/// The `SONAME` of a file, if it has one.
pub fn soname(real: &Path) -> Option<String> {
    elf::read(real).ok()?.soname
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_file_names_and_rocm_directories() {
        let v = |p: &str, stem: &str| file_version(Path::new(p), stem);
        assert_eq!(
            v("/x/librocdxg.so.1.2.0", "librocdxg.so").as_deref(),
            Some("1.2.0")
        );
        assert_eq!(v("/x/librocdxg.so", "librocdxg.so"), None);
        let r = |p: &str| rocm_release(Path::new(p), "libhsa-runtime64.so");
        assert_eq!(
            r("/opt/rocm/lib/libhsa-runtime64.so.1.15.70200"),
            Some((7, 2, 0))
        );
        assert_eq!(
            r("/opt/rocm-7.2.1/lib/libhsa-runtime64.so.1"),
            Some((7, 2, 1))
        );
        assert_eq!(r("/x/libhsa-runtime64.so.1"), None);
    }

    #[test]
    fn the_search_takes_ld_library_path_first_and_keeps_what_it_shadows() {
        let base =
            std::env::temp_dir().join(format!("rocprof-doctor-loader-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let me = std::env::current_exe().unwrap();
        std::fs::copy(&me, a.join("libfake.so.1")).unwrap();
        std::fs::copy(&me, b.join("libfake.so.1")).unwrap();
        std::fs::write(base.join("libfake.so.1"), "not elf").unwrap();
        let env = Env::from_pairs(&[(
            "LD_LIBRARY_PATH",
            &format!("{}:{}:{}", base.display(), a.display(), b.display()),
        )]);
        let r = Loader::new(&env).resolve("libfake.so.1", None, None);
        assert_eq!(
            r.chosen.as_ref().unwrap().path,
            a.join("libfake.so.1"),
            "{r:?}"
        );
        assert_eq!(r.shadowed.len(), 1, "{r:?}");
        assert_eq!(r.shadowed[0].via, Via::LdLibraryPath);
        let none = Loader::new(&Env::default()).resolve("libfake.so.1", None, None);
        assert!(none.chosen.is_none());
        let _ = std::fs::remove_dir_all(&base);
    }
}
