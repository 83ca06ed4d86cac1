//! Support for the simulated libraries' `dlopen` test targets (`harness = false`).
//!
//! The parent process locates the built cdylib next to the test executable, then re-executes
//! itself once per case with `WSLSIM_SCENARIO` pointing to that case's scenario file and
//! `WSLSIM_CALL_LOG` to a fresh log; the child `dlopen`s the library by absolute path and runs
//! the case. The parent checks the child's exit status, its stderr and its call log.

use std::ffi::{CStr, CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::SystemTime;

use crate::{CALL_LOG_ENV, SCENARIO_ENV};

const CASE_ENV: &str = "WSLSIM_DLOPEN_CASE";
const LIBRARY_ENV: &str = "WSLSIM_DLOPEN_LIBRARY";

/// One test case, run in its own child process.
pub struct Case {
    /// Name (also the filter key: `cargo test -p ... -- <substring>`).
    pub name: &'static str,
    /// Scenario file contents; `None` leaves `WSLSIM_SCENARIO` unset (the built-in default).
    pub scenario: Option<&'static str>,
    /// Substrings the child's stderr must contain exactly once (`{scenario}` is replaced by the
    /// file path). When empty, stderr must be empty.
    pub stderr_contains: &'static [&'static str],
    /// Lines the call log must contain (`{pid}` and `{library}` are replaced).
    pub log_lines: &'static [&'static str],
    /// The check, run in the child after `dlopen`.
    pub run: fn(&Library) -> Result<(), String>,
}

/// What the test target is about.
pub struct Target<'a> {
    /// File name of the cdylib, e.g. `librocdxg.so`.
    pub library: &'a str,
    /// The `cargo build` command that produces it.
    pub build_command: &'a str,
    /// Files and directories whose sources the library is built from (for the staleness check).
    pub sources: &'a [PathBuf],
}

/// A library opened with `dlopen(path, RTLD_NOW | RTLD_LOCAL)`; never closed.
pub struct Library {
    handle: *mut c_void,
    path: String,
}

impl Library {
    /// Opens the library at `path`.
    pub fn open(path: &str) -> Result<Library, String> {
        Library::open_with(path, libc::RTLD_NOW | libc::RTLD_LOCAL)
    }

    /// Opens the library at `path` with `RTLD_GLOBAL`, as `LD_PRELOAD` places an object: its
    /// exports then bind every later object's references to those names.
    pub fn open_global(path: &str) -> Result<Library, String> {
        Library::open_with(path, libc::RTLD_NOW | libc::RTLD_GLOBAL)
    }

    fn open_with(path: &str, flags: c_int) -> Result<Library, String> {
        let c_path = CString::new(path).map_err(|e| e.to_string())?;
        // SAFETY: dlopen with a valid NUL-terminated path; the library's constructors are the
        // code under test.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), flags) };
        if handle.is_null() {
            return Err(format!("dlopen({path}) failed: {}", dlerror()));
        }
        Ok(Library {
            handle,
            path: path.to_owned(),
        })
    }

    /// The path it was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `dlsym(name)`, `None` if it is not found.
    pub fn symbol(&self, name: &str) -> Option<*mut c_void> {
        let c_name = CString::new(name).ok()?;
        // SAFETY: clears any stale error state before the lookup.
        unsafe { libc::dlerror() };
        // SAFETY: a live handle and a valid NUL-terminated name.
        let address = unsafe { libc::dlsym(self.handle, c_name.as_ptr()) };
        (!address.is_null()).then_some(address)
    }

    /// Checks that `dlsym(name)` fails with "undefined symbol".
    pub fn expect_missing(&self, name: &str) -> Result<(), String> {
        if let Some(address) = self.symbol(name) {
            return Err(format!(
                "dlsym({name}) = {address:p}, expected it to be hidden"
            ));
        }
        let error = dlerror();
        if error.contains("undefined symbol") && error.contains(name) {
            Ok(())
        } else {
            Err(format!(
                "dlsym({name}) failed, but dlerror() says {error:?}, not \"undefined symbol\""
            ))
        }
    }

    /// Checks that every one of `names` resolves.
    pub fn expect_present(&self, names: &[&str]) -> Result<(), String> {
        for name in names {
            if self.symbol(name).is_none() {
                return Err(format!("dlsym({name}) failed: {}", dlerror()));
            }
        }
        Ok(())
    }

    /// The export `name` as a function pointer of type `F`.
    ///
    /// # Safety
    ///
    /// `F` must be an `unsafe extern "C" fn` type matching the export's real signature.
    pub unsafe fn function<F: Copy>(&self, name: &str) -> Result<F, String> {
        assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
        let address = self
            .symbol(name)
            .ok_or_else(|| format!("dlsym({name}) failed: {}", dlerror()))?;
        // SAFETY: `F` is a function pointer type of the export's signature (caller's contract),
        // the same size as the data pointer dlsym returned.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
    }
}

fn dlerror() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "(no dlerror)".to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated (see above).
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The test target's `main`: parent or child depending on the environment.
pub fn main(target: &Target<'_>, cases: &[Case]) -> ExitCode {
    match std::env::var(CASE_ENV) {
        Ok(name) => child(&name, cases),
        Err(_) => parent(target, cases),
    }
}

fn child(name: &str, cases: &[Case]) -> ExitCode {
    let Some(case) = cases.iter().find(|case| case.name == name) else {
        eprintln!("unknown case {name}");
        return ExitCode::FAILURE;
    };
    let result = std::env::var(LIBRARY_ENV)
        .map_err(|_| format!("{LIBRARY_ENV} is not set"))
        .and_then(|path| Library::open(&path))
        .and_then(|library| (case.run)(&library));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("case {name} failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The newest modification time of `path`, or of any file under it if it is a directory.
pub fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let metadata = std::fs::metadata(path).ok()?;
    if metadata.is_dir() {
        std::fs::read_dir(path)
            .ok()?
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| newest_mtime(&entry.path()))
            .max()
    } else {
        metadata.modified().ok()
    }
}

/// The built `target.library` next to the running test executable, refused (with the reason to
/// print) when it is missing or older than `target.sources`.
pub fn locate(target: &Target<'_>) -> Result<PathBuf, String> {
    let exe = std::env::current_exe()
        .map_err(|error| format!("cannot locate the test executable: {error}"))?;
    // target/<profile>/deps/<test>: the library is target/<profile>/<library> (uplifted by
    // `cargo build`) or target/<profile>/deps/<library> (also written by `cargo test`, which
    // compiles every crate type of the package's lib for its integration tests).
    let deps_dir = exe
        .parent()
        .ok_or_else(|| format!("unexpected test executable location {}", exe.display()))?;
    // On a tie (the uplifted file is a hard link of the deps one) the uplifted path wins.
    let candidates = [
        Some(deps_dir.join(target.library)),
        deps_dir
            .parent()
            .map(|profile| profile.join(target.library)),
    ];
    let newest = candidates
        .into_iter()
        .flatten()
        .filter_map(|path| {
            let built = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            Some((built, path))
        })
        .max_by_key(|(built, _)| *built);
    let Some((built, library)) = newest else {
        return Err(format!(
            "error: {} was not found next to {}.\nRun `{}` first, then run the tests again.",
            target.library,
            exe.display(),
            target.build_command
        ));
    };
    let newest_source = target.sources.iter().filter_map(|s| newest_mtime(s)).max();
    if newest_source.is_some_and(|newest| newest > built) {
        return Err(format!(
            "error: {} is older than its sources, so it would not test them.\nRun `{}` first, \
             then run the tests again.",
            library.display(),
            target.build_command
        ));
    }
    Ok(library)
}

fn parent(target: &Target<'_>, cases: &[Case]) -> ExitCode {
    let (exe, library) = match std::env::current_exe()
        .map_err(|error| format!("cannot locate the test executable: {error}"))
        .and_then(|exe| Ok((exe, locate(target)?)))
    {
        Ok(found) => found,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let work = std::env::temp_dir().join(format!(
        "wslsim-dlopen-{}-{}",
        target.library,
        std::process::id()
    ));
    if let Err(error) = std::fs::create_dir_all(&work) {
        eprintln!("cannot create {}: {error}", work.display());
        return ExitCode::FAILURE;
    }
    println!(
        "\nrunning {} dlopen cases against {}",
        cases.len(),
        library.display()
    );
    let mut failed = Vec::new();
    for case in cases {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        match run_case(&exe, &library, &work, case) {
            Ok(()) => println!("case {} ... ok", case.name),
            Err(error) => {
                println!("case {} ... FAILED\n{error}", case.name);
                failed.push(case.name);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    if failed.is_empty() {
        println!("dlopen cases: ok\n");
        ExitCode::SUCCESS
    } else {
        println!("dlopen cases FAILED: {}\n", failed.join(", "));
        ExitCode::FAILURE
    }
}

fn run_case(exe: &Path, library: &Path, work: &Path, case: &Case) -> Result<(), String> {
    let log = work.join(format!("{}.log", case.name));
    let scenario = work.join(format!("{}.toml", case.name));
    let mut command = Command::new(exe);
    command
        .env(CASE_ENV, case.name)
        .env(LIBRARY_ENV, library)
        .env(CALL_LOG_ENV, &log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match case.scenario {
        Some(text) => {
            std::fs::write(&scenario, text).map_err(|e| e.to_string())?;
            command.env(SCENARIO_ENV, &scenario);
        }
        None => {
            command.env_remove(SCENARIO_ENV);
        }
    }
    let child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id();
    let output = child.wait_with_output().map_err(|e| format!("wait: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let describe = || format!("--- child stderr ---\n{stderr}--- child stdout ---\n{stdout}");
    if !output.status.success() {
        return Err(format!(
            "child exited with {}\n{}",
            output.status,
            describe()
        ));
    }
    for needle in case.stderr_contains {
        let needle = needle.replace("{scenario}", &scenario.display().to_string());
        let found = stderr.matches(&needle).count();
        if found != 1 {
            return Err(format!(
                "stderr has {found} occurrences of {needle:?}, expected exactly one\n{}",
                describe()
            ));
        }
    }
    if case.stderr_contains.is_empty() && !stderr.trim().is_empty() {
        return Err(format!("unexpected stderr\n{}", describe()));
    }
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    for line in case.log_lines {
        let line = line
            .replace("{pid}", &pid.to_string())
            .replace("{library}", &library.display().to_string());
        if !log_text.lines().any(|logged| logged == line) {
            return Err(format!(
                "call log lacks the line {line:?}\n--- call log ---\n{log_text}"
            ));
        }
    }
    Ok(())
}

/// A case's comparison: fails with a message naming `what` unless `actual == wanted`.
pub fn check<T: PartialEq + std::fmt::Debug>(
    what: &str,
    actual: T,
    wanted: T,
) -> Result<(), String> {
    if actual == wanted {
        Ok(())
    } else {
        Err(format!("{what}: got {actual:?}, expected {wanted:?}"))
    }
}

/// The little-endian `u32` at `offset` of `bytes` (panics past the end).
pub fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    let mut raw = [0; 4];
    raw.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(raw)
}
