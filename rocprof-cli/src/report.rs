//! The one place the libraries' notices reach the terminal: `rocprof: <level>: <text>` on
//! stderr (the `-S` tables where `--summary-output-file` sends them), and the CLI's own lines.
//!
//! Notices carry text exactly as it is (a kernel name, a path, an option value); it is made
//! terminal-safe here, as it is written ([`terminal_text`]): a notice is one line, with every
//! control, bidirectional control and backslash in it escaped, so nothing a user or the
//! application chose can start a line, run an escape sequence or reorder the text. The
//! exceptions are the notices whose text is several lines by itself — the kept record
//! directory's two (`KeptToFinish`, `KeptAfterLosses`: the directory is escaped before it is
//! formatted in) and the run's explanations (library text, line by line) — and the `-S`
//! tables, which the runner renders terminal-safe already.

use rocprof_runner::notice::{EndNotice, Finding, LaunchNotice, Level, Notice, Report, Stream};
use std::borrow::Cow;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use terminal_text::{escape, escape_lines, escape_path, is_safe};

/// The terminal: every notice is written as it arrives.
#[derive(Debug, Default, Clone, Copy)]
pub struct Terminal;

/// The prefix a level is introduced with (after `rocprof: `).
fn prefix(level: Level) -> &'static str {
    match level {
        Level::Error => "error: ",
        Level::Warning => "warning: ",
        Level::Note => "note: ",
        Level::Info => "",
        Level::Echo => "echo: ",
    }
}

/// A path with its escapes in place of its controls (for a notice formatted after it).
fn escaped_path(p: &Path) -> PathBuf {
    PathBuf::from(escape_path(p).into_owned())
}

/// `s` with every control, bidirectional control and separator escaped but its newlines and
/// backslashes (for text whose user parts are escaped already).
fn controls_escaped(s: &str) -> Cow<'_, str> {
    if s.chars().all(|c| c == '\n' || is_safe(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\n' || is_safe(c) {
            out.push(c);
        } else {
            out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
        }
    }
    Cow::Owned(out)
}

/// The text of `notice` as the terminal shows it (without its prefix): one line, except for
/// the notices that are several lines by themselves, whose user parts are escaped.
pub fn terminal_text(notice: &Notice) -> String {
    match notice {
        Notice::End(EndNotice::KeptToFinish { dir }) => {
            let n = EndNotice::KeptToFinish {
                dir: escaped_path(dir),
            };
            controls_escaped(&n.to_string()).into_owned()
        }
        Notice::End(EndNotice::KeptAfterLosses { dir }) => {
            let n = EndNotice::KeptAfterLosses {
                dir: escaped_path(dir),
            };
            controls_escaped(&n.to_string()).into_owned()
        }
        // The library names no option; the hint for the decoder's directory is the CLI's.
        Notice::Launch(LaunchNotice::NoDecoder {
            reason,
            library: true,
        }) => {
            let n = LaunchNotice::NoDecoder {
                reason: format!(
                    "{reason}; point --att-library-path at the directory that holds librocprof-trace-decoder.so"
                ),
                library: true,
            };
            escape(&n.to_string()).into_owned()
        }
        // The runner's own paragraphs (failed and passed checks on lines of their own).
        Notice::Finding(Finding::Explanation { text }) => escape_lines(text).into_owned(),
        Notice::Summary(s) => s.tables.clone(),
        n => escape(&n.to_string()).into_owned(),
    }
}

impl Report for Terminal {
    fn progress(&mut self, progress: rocprof_runner::notice::Progress) {
        crate::progress::update(&progress);
    }

    fn notice(&mut self, notice: Notice) {
        crate::progress::suspend(|| self.write_notice(notice));
    }
}

impl Terminal {
    fn write_notice(&mut self, notice: Notice) {
        if let Notice::Summary(s) = &notice {
            if let Some(pid) = s.pid {
                line(&format!("summary of process {pid}:"));
            }
            // One write each, so the tables are not interleaved with other output. The runner
            // renders them terminal-safe (names escaped and shortened).
            let _ = match s.stream {
                Stream::Stdout => std::io::stdout().write_all(s.tables.as_bytes()),
                Stream::Stderr => std::io::stderr().write_all(s.tables.as_bytes()),
            };
            return;
        }
        if let Notice::Launch(LaunchNotice::EchoCommand { .. }) = &notice {
            let text = format!("{}\n", escape(&notice.to_string()));
            let _ = std::io::stdout().write_all(text.as_bytes());
            return;
        }
        write_line(&format!(
            "{}{}",
            prefix(notice.level()),
            terminal_text(&notice)
        ));
    }
}

/// `rocprof: <text>` on stderr, in one write (ranks sharing a terminal do not interleave);
/// `text` is terminal-safe already.
fn write_line(text: &str) {
    let line = format!("rocprof: {text}\n");
    let _ = crate::progress::suspend(|| std::io::stderr().write_all(line.as_bytes()));
}

/// `rocprof: <text>` on stderr as one line: every control, bidirectional control and backslash
/// in `text` escaped (it may echo option values, paths and names).
pub fn line(text: &str) {
    write_line(&escape(text));
}

/// `rocprof: warning: <text>`, escaped as [`line`].
pub fn warn(text: &str) {
    line(&format!("warning: {text}"));
}

/// `rocprof: note: <text>`, escaped as [`line`].
pub fn note(text: &str) {
    line(&format!("note: {text}"));
}

/// The line `main` ends with when a command fails: `rocprof: error: <message>`, the message
/// (with its causes) escaped as [`line`] — it echoes option values (`--pmc`, `-o`, regexes)
/// and paths.
pub fn error_line(e: &anyhow::Error) -> String {
    format!("rocprof: error: {}", escape(&format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocprof_runner::notice::{OutputNotice, RecordNotice};

    const FORGED: &str = "\nrocprof: error: forged line\n";

    #[test]
    fn a_notice_is_one_line_whatever_its_user_text() {
        let n: Notice = RecordNotice::LogDamaged {
            log: PathBuf::from(format!("/tmp/a{FORGED}\x1b]0;t\x07")),
            offset: 3,
            reason: "bad \u{202e}word".into(),
        }
        .into();
        let t = terminal_text(&n);
        assert!(!t.contains('\n') && t.chars().all(is_safe), "{t:?}");
        assert!(
            t.starts_with("/tmp/a\\nrocprof: error: forged line\\n\\x1b]0;t\\x07: the record log"),
            "{t}"
        );
        assert!(t.contains("bad \\u{202e}word"), "{t}");
        let n = OutputNotice::failed(&format!("cannot write C:\\out{FORGED}"));
        assert_eq!(
            terminal_text(&n),
            "cannot write C:\\\\out\\nrocprof: error: forged line\\n"
        );
    }

    #[test]
    fn the_kept_directory_notices_keep_their_own_lines_only() {
        let dir = PathBuf::from(format!("/tmp/rocprof-x{FORGED}\u{202e}"));
        type Kept = fn(PathBuf) -> EndNotice;
        let kinds: [Kept; 2] = [
            |dir| EndNotice::KeptToFinish { dir },
            |dir| EndNotice::KeptAfterLosses { dir },
        ];
        for kind in kinds {
            let own = kind("/tmp/rocprof-x".into())
                .to_string()
                .matches('\n')
                .count();
            let t = terminal_text(&kind(dir.clone()).into());
            assert_eq!(t.matches('\n').count(), own, "{t}");
            assert!(t.chars().all(|c| c == '\n' || is_safe(c)), "{t:?}");
            assert!(
                t.contains("/tmp/rocprof-x\\nrocprof: error: forged line\\n\\u{202e}"),
                "{t}"
            );
            assert!(!t.lines().any(|l| l.starts_with("rocprof:")), "{t}");
        }
        let plain = EndNotice::KeptToFinish {
            dir: "/tmp/rocprof-abc".into(),
        };
        assert_eq!(terminal_text(&plain.clone().into()), plain.to_string());
    }

    #[test]
    fn explanations_keep_their_lines_and_lose_their_controls() {
        let n: Notice = Finding::Explanation {
            text: "nothing:\n  failed checks:\n    - \x1b[2J".into(),
        }
        .into();
        assert_eq!(
            terminal_text(&n),
            "nothing:\n  failed checks:\n    - \\x1b[2J"
        );
    }

    #[test]
    fn errors_are_one_escaped_line() {
        let e = anyhow::anyhow!("unknown counter 'A\x1b[2J{FORGED}'").context("--pmc");
        assert_eq!(
            error_line(&e),
            "rocprof: error: --pmc: unknown counter 'A\\x1b[2J\\nrocprof: error: forged line\\n'"
        );
    }
}
