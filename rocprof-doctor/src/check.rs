//! One finding of `rocprof doctor`, the report they make, and the environment they are about.

use serde::Serialize;
use std::collections::BTreeMap;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Profiling works, but something will be missing or wrong (said with the fix).
    Warning,
    /// A profiling run would record nothing, or wrong data (said with the fix).
    Error,
}

impl Status {
    /// `ok`, `warning`, `error`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable name (`platform.dxg`, `env.disable-register`, `self-test.table`, …).
    pub check: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found, with the values and files it rests on.
    pub evidence: String,
    /// What to do (`None` for an ok line that needs nothing).
    pub fix: Option<String>,
}

impl Check {
    /// An ok line.
    pub fn ok(check: &'static str, evidence: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Ok,
            evidence: evidence.into(),
            fix: None,
        }
    }

    /// A warning with its fix.
    pub fn warning(
        check: &'static str,
        evidence: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            check,
            status: Status::Warning,
            evidence: evidence.into(),
            fix: Some(fix.into()),
        }
    }

    /// An error with its fix.
    pub fn error(check: &'static str, evidence: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Error,
            evidence: evidence.into(),
            fix: Some(fix.into()),
        }
    }

    /// `ok       <check>: <evidence>; <fix>` (one line, terminal-safe: the evidence echoes
    /// paths and variables' values, so its line breaks become spaces and every other control,
    /// bidirectional control and backslash is escaped, [`terminal_text::escape`]).
    pub fn line(&self) -> String {
        let one_line = |s: &str| terminal_text::escape(&s.replace('\n', " ")).into_owned();
        match &self.fix {
            Some(fix) => format!(
                "{:<8} {}: {}; {}",
                self.status.name(),
                self.check,
                one_line(&self.evidence),
                one_line(fix)
            ),
            None => format!(
                "{:<8} {}: {}",
                self.status.name(),
                self.check,
                one_line(&self.evidence)
            ),
        }
    }
}

/// The environment the checks are about: the variables as the user set them, captured before
/// anything in `rocprof` changes its own (discovery sets `WSLKMT_VENDOR_PACKET`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// This process's environment now (non-UTF-8 values lossily).
    pub fn capture() -> Self {
        Self {
            vars: std::env::vars_os()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect(),
        }
    }

    /// An environment from pairs (tests).
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Self {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// A variable's value (`Some("")` when set but empty).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// A variable's value, `None` when unset or empty.
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// Every variable.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A copy with `name` set to `value` (`None`: removed).
    pub fn with(&self, name: &str, value: Option<&str>) -> Self {
        let mut vars = self.vars.clone();
        match value {
            Some(v) => vars.insert(name.to_owned(), v.to_owned()),
            None => vars.remove(name),
        };
        Self { vars }
    }
}

/// Counts of a report's statuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Checks that passed.
    pub ok: usize,
    /// Warnings.
    pub warnings: usize,
    /// Errors.
    pub errors: usize,
}

impl Summary {
    /// The counts of `checks`.
    pub fn of(checks: &[Check]) -> Self {
        let mut s = Self::default();
        for c in checks {
            match c.status {
                Status::Ok => s.ok += 1,
                Status::Warning => s.warnings += 1,
                Status::Error => s.errors += 1,
            }
        }
        s
    }
}

/// `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
