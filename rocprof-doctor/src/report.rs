//! What `rocprof doctor` found, as data: the checks in report order, their counts, what the
//! self-test saw and the application inspected. [`Report`] serialises to the `--json` document
//! and displays as the text report; [`Report::verdict`] decides the exit status.

use crate::app;
use crate::check::{Check, Summary};
use crate::error::Error;
use crate::selftest;
use rocprof_runner::Notice;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// `schema` of the JSON report.
pub const SCHEMA: &str = "rocprof-doctor/1";

/// The report (`Serialize`: the `--json` document; `Display`: the text report, one line per
/// check and the summary line, each ending in a newline).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// One entry per check, in report order.
    pub checks: Vec<Check>,
    /// The counts.
    pub summary: Summary,
    /// What the self-test saw.
    pub self_test: selftest::Details,
    /// The application inspected (`-- app`).
    pub app: Option<app::Details>,
    /// Wall-clock milliseconds the doctor took (self-test included).
    pub elapsed_ms: u64,
    /// The same, exactly (the text report gives it in seconds with two decimals).
    #[serde(skip)]
    pub elapsed: Duration,
    /// What reading the self-test's record logs had to say (a log that cannot be read), in
    /// order. Not part of either report: `rocprof` writes each to stderr as
    /// `rocprof: <level>: <notice>` before the report, where the doctor always wrote them.
    #[serde(skip)]
    pub notices: Vec<Notice>,
}

/// How the doctor came out: its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No check is an error (exit status 0; warnings allowed).
    NoErrors,
    /// At least one check is an error (exit status 1).
    Errors,
}

impl Verdict {
    /// The exit status: 0 or 1 (2, "the doctor itself could not run", is any [`Error`]).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::NoErrors => 0,
            Self::Errors => 1,
        }
    }
}

impl Report {
    /// No error among the checks, or some.
    pub fn verdict(&self) -> Verdict {
        if self.summary.errors == 0 {
            Verdict::NoErrors
        } else {
            Verdict::Errors
        }
    }

    /// `rocprof doctor`'s exit status: 0 when no check is an error, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        self.verdict().exit_code()
    }

    /// The `--json` document: pretty-printed, without a trailing newline.
    pub fn to_json(&self) -> Result<String, Error> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Everything `rocprof doctor` writes to stdout, trailing newline included: the JSON
    /// document when `json`, else the text report.
    pub fn render(&self, json: bool) -> Result<String, Error> {
        if json {
            Ok(format!("{}\n", self.to_json()?))
        } else {
            Ok(self.to_string())
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            writeln!(f, "{}", c.line())?;
        }
        let summary = &self.summary;
        writeln!(
            f,
            "summary: {} checks: {} ok, {} warning(s), {} error(s) ({:.2} s, self-test included){}",
            self.checks.len(),
            summary.ok,
            summary.warnings,
            summary.errors,
            self.elapsed.as_secs_f64(),
            if summary.errors == 0 {
                ""
            } else {
                "; a profiling run in this environment would record nothing or wrong data until the errors are fixed"
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Check;

    fn report(checks: Vec<Check>) -> Report {
        Report {
            schema: SCHEMA,
            summary: Summary::of(&checks),
            checks,
            self_test: selftest::SelfTest::default().details(),
            app: None,
            elapsed_ms: 1234,
            elapsed: Duration::from_millis(1234),
            notices: vec![
                rocprof_runner::notice::RecordNotice::LogUnreadable {
                    reason: "damaged".into(),
                }
                .into(),
            ],
        }
    }

    #[test]
    fn the_text_is_one_line_per_check_and_the_summary() {
        let ok = report(vec![
            Check::ok("a.b", "fine\nreally"),
            Check::warning("c-d", "hm", "do this"),
        ]);
        assert_eq!(
            ok.to_string(),
            "ok       a.b: fine really\nwarning  c-d: hm; do this\nsummary: 2 checks: 1 ok, 1 warning(s), 0 error(s) (1.23 s, self-test included)\n"
        );
        assert_eq!(ok.render(false).unwrap(), ok.to_string());
        assert_eq!((ok.verdict(), ok.exit_code()), (Verdict::NoErrors, 0));
        let bad = report(vec![Check::error("e", "broken", "fix it")]);
        assert_eq!(
            bad.to_string(),
            "error    e: broken; fix it\nsummary: 1 checks: 0 ok, 0 warning(s), 1 error(s) (1.23 s, self-test included); a profiling run in this environment would record nothing or wrong data until the errors are fixed\n"
        );
        assert_eq!((bad.verdict(), bad.exit_code()), (Verdict::Errors, 1));
    }

    #[test]
    fn echoed_values_cannot_forge_lines_or_run_escapes() {
        let r = report(vec![Check::warning(
            "variables.ld_library_path",
            "LD_LIBRARY_PATH=/opt/x\nrocprof: error: forged\x1b]0;t\x07\u{202e}",
            "unset it",
        )]);
        let text = r.to_string();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.starts_with(
                "warning  variables.ld_library_path: LD_LIBRARY_PATH=/opt/x rocprof: error: forged\\x1b]0;t\\x07\\u{202e}; unset it\n"
            ),
            "{text}"
        );
        assert!(text.chars().all(|c| c == '\n' || terminal_text::is_safe(c)));
        // --json keeps the exact text.
        assert!(
            r.render(true)
                .unwrap()
                .contains("forged\\u001b]0;t\\u0007\u{202e}")
        );
    }

    #[test]
    fn the_json_document_keeps_its_fields_and_leaves_the_notices_to_stderr() {
        let r = report(vec![Check::error("e", "broken", "fix it")]);
        let text = r.render(true).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        // The top-level keys, in document order (two-space indentation, pretty-printed).
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
            .collect();
        assert_eq!(
            keys,
            [
                "schema",
                "checks",
                "summary",
                "self_test",
                "app",
                "elapsed_ms"
            ]
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "rocprof-doctor/1");
        assert_eq!(v["checks"][0]["status"], "error");
        assert_eq!(v["summary"]["errors"], 1);
        assert_eq!(v["elapsed_ms"], 1234);
        assert_eq!(r.notices.len(), 1);
    }
}
