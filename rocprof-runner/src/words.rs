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

/// `s` as Python's `repr` writes a string (how rocprofv3's `--echo` prints the command's
/// words): single quotes unless `s` holds one and no double quote, backslashes, the quote and
/// control characters escaped.
pub fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
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

/// `n` and the noun for it: `1 process`, `2 processes` (`plural` for every count but one).
pub fn counted(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

#[cfg(test)]
mod python_repr_tests {
    use super::python_repr;

    #[test]
    fn strings_are_written_as_python_writes_them() {
        assert_eq!(python_repr("/bin/app"), "'/bin/app'");
        assert_eq!(python_repr("it's"), "\"it's\"");
        assert_eq!(python_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(python_repr("t\tn\n\\\u{1b}"), "'t\\tn\\n\\\\\\x1b'");
    }
}

#[cfg(test)]
mod counted_tests {
    use super::counted;

    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(counted(1, "process", "processes"), "1 process");
        assert_eq!(counted(0, "file", "files"), "0 files");
        assert_eq!(counted(2, "input", "inputs"), "2 inputs");
    }
}
