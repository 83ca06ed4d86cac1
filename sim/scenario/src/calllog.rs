//! The call log named by `WSLSIM_CALL_LOG`: one line per exported call, one `write(2)` per line.
//!
//! The file is opened `O_WRONLY | O_APPEND | O_CREAT` for every line, so lines written by
//! several processes (or both libraries of one process) interleave whole. Errors are ignored:
//! the log is a test aid and must never change what a simulated call returns.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variable naming the call log file.
pub const CALL_LOG_ENV: &str = "WSLSIM_CALL_LOG";

fn log_path() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::var_os(CALL_LOG_ENV)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    })
    .as_deref()
}

/// Whether a call log is being written (callers skip formatting arguments otherwise).
pub fn call_log_enabled() -> bool {
    log_path().is_some()
}

/// `format!` when the call log is enabled, else an empty string (no formatting, no allocation).
#[macro_export]
macro_rules! log_args {
    ($($t:tt)*) => {
        if $crate::call_log_enabled() { format!($($t)*) } else { String::new() }
    };
}

/// Appends `<lib> <rest>\n` to the call log, if `WSLSIM_CALL_LOG` is set.
///
/// `rest` is only formatted when a log is configured.
pub fn log_call(lib: &str, rest: fmt::Arguments<'_>) {
    if let Some(path) = log_path() {
        append_line(path, &format!("{lib} {rest}"));
    }
}

/// Appends `line` plus a newline to `path` with a single `write(2)`; errors are ignored.
pub fn append_line(path: &Path, line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    if let Ok(mut file) = OpenOptions::new().append(true).create(true).open(path) {
        // `File::write` is exactly one write(2); with O_APPEND the line lands whole.
        let _ = file.write(&bytes);
    }
}

/// Formats an NTSTATUS the way the log shows it: `0x` and 8 upper-case hex digits.
pub fn ntstatus(status: i32) -> impl fmt::Display {
    struct Hex(u32);
    impl fmt::Display for Hex {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "0x{:08X}", self.0)
        }
    }
    Hex(status.cast_unsigned())
}
