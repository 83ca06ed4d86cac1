//! The one place the libraries' notices reach the terminal: `rocprof: <level>: <text>` on
//! stderr (the `-S` tables where `--summary-output-file` sends them), and the CLI's own lines.

use rocprof_runner::notice::{LaunchNotice, Level, Notice, Report, Stream};
use std::io::Write as _;

/// The terminal: every notice is written as it arrives.
#[derive(Debug, Default, Clone, Copy)]
pub struct Terminal;

/// The prefix a level is introduced with (after `rocprof: `).
fn prefix(level: Level) -> &'static str {
    match level {
        Level::Error => "error: ",
        Level::Warning => "warning: ",
        Level::Note => "note: ",
        Level::Counters => "counters: ",
        Level::Info => "",
        Level::Echo => "echo: ",
    }
}

impl Report for Terminal {
    fn notice(&mut self, notice: Notice) {
        if let Notice::Summary(s) = &notice {
            if let Some(pid) = s.pid {
                line(&format!("summary of process {pid}:"));
            }
            // One write each, so the tables are not interleaved with other output.
            let _ = match s.stream {
                Stream::Stdout => std::io::stdout().write_all(s.tables.as_bytes()),
                Stream::Stderr => std::io::stderr().write_all(s.tables.as_bytes()),
            };
            return;
        }
        // The library names no option; the hint for the decoder's directory is the CLI's.
        if let Notice::Launch(LaunchNotice::NoDecoder {
            reason,
            library: true,
        }) = &notice
        {
            warn(&format!(
                "--att: {reason}; point --att-library-path at the directory that holds librocprof-trace-decoder.so; the thread trace is captured and its raw .att and .out files are written, but not decoded"
            ));
            return;
        }
        line(&format!("{}{notice}", prefix(notice.level())));
    }
}

/// `rocprof: <text>` on stderr, in one write (ranks sharing a terminal do not interleave).
pub fn line(text: &str) {
    let _ = std::io::stderr().write_all(format!("rocprof: {text}\n").as_bytes());
}

/// `rocprof: warning: <text>`.
pub fn warn(text: &str) {
    line(&format!("warning: {text}"));
}

/// `rocprof: note: <text>`.
pub fn note(text: &str) {
    line(&format!("note: {text}"));
}
