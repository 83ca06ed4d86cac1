//! Small pieces of wording shared by the notices: shell quoting, the convert command, why an
//! I/O operation failed, a list of directories.

use std::io;
use std::path::Path;

/// Shell-quotes `s` when it needs it (for commands to copy and paste).
pub fn quoted(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that converts `dir` (the `rocprof` this is, by the name it was started with).
pub fn convert_command(dir: &Path) -> String {
    let exe = std::env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rocprof".into());
    format!(
        "{} convert {}",
        quoted(&exe),
        quoted(&dir.to_string_lossy())
    )
}

/// Why an I/O operation failed, in words ("no space left on the file system" first, since
/// that is what a full disk needs to say).
pub fn io_reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "no space left on the file system".into(),
        Some(libc::EDQUOT) => "no space left: the disk quota is exhausted".into(),
        Some(libc::EFBIG) => {
            "no space for a file this large: the file-size limit (ulimit -f) was reached".into()
        }
        Some(libc::EROFS) => "the file system is read-only".into(),
        _ => e.to_string(),
    }
}

/// Whether `e` means the disk (or a quota, or the file-size limit) is full.
pub fn is_no_space(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG)
    )
}

/// ` in D`, ` in D1 and D2`, ` in D1, D2 and N more` (nothing for no directory).
pub fn in_dirs(dirs: &[&Path]) -> String {
    let shown: Vec<String> = dirs
        .iter()
        .take(2)
        .map(|d| d.display().to_string())
        .collect();
    match dirs.len() {
        0 => String::new(),
        1 => format!(" in {}", shown[0]),
        2 => format!(" in {} and {}", shown[0], shown[1]),
        n => format!(" in {}, {} and {} more", shown[0], shown[1], n - 2),
    }
}
