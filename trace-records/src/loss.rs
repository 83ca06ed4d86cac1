//! Why records were lost, counted per cause.
//!
//! Every place that fails to record something counts it under one [`LossCause`]. The counts of
//! a process live in its log's header (shared memory, so they survive however the process
//! ends) and the reader adds what it could not read itself; `rocprof` prints one line per
//! cause with a count above zero.

use serde::{Deserialize, Serialize};

/// The reasons a record can be lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum LossCause {
    /// The record log could not grow: the file system is full, a quota or the file-size limit
    /// was reached, or it reported an I/O error.
    NoSpace = 0,
    /// A record arrived while the thread's buffer was unavailable: before the log was open, in
    /// a thread the process was tearing down, or while the process was exiting.
    NoBuffer = 1,
    /// A kernel dispatch finished but the runtime could not report its time.
    DispatchTime = 2,
    /// A memory copy ran untraced because the runtime refused the tool's completion handler
    /// (or its signal), or its time could not be read.
    CopyUntraced = 3,
    /// An entry in an intact chunk that could not be decoded.
    Malformed = 4,
    /// A chunk of the log was damaged (checksum, magic or commit count wrong): its records.
    Damaged = 5,
    /// Kernel dispatches that never finished before their queue or the runtime went away.
    Unfinished = 6,
    /// Definitions rather than trace records — string definitions (kernel and marker names),
    /// operation names, and the tool's documents (agents, discovery facts, warnings) — lost for
    /// any reason. Counted apart so that the other causes count trace records exactly.
    Definitions = 7,
}

impl LossCause {
    /// Every cause, in report order.
    pub const ALL: [LossCause; 8] = [
        LossCause::NoSpace,
        LossCause::NoBuffer,
        LossCause::DispatchTime,
        LossCause::CopyUntraced,
        LossCause::Malformed,
        LossCause::Damaged,
        LossCause::Unfinished,
        LossCause::Definitions,
    ];

    /// Number of causes (the size of a count table).
    pub const COUNT: usize = Self::ALL.len();

    /// From its stored value.
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.get(v as usize).copied()
    }

    /// What happened, completing "N records ...".
    pub fn what(self) -> &'static str {
        match self {
            Self::NoSpace => {
                "could not be written because the record directory's file system was full (or a quota, the file-size limit or an I/O error stopped the log from growing)"
            }
            Self::NoBuffer => {
                "arrived when no record buffer was available (before the log was open, or while the process was exiting)"
            }
            Self::DispatchTime => {
                "were kernel dispatches whose GPU time the runtime could not report"
            }
            Self::CopyUntraced => {
                "were memory copies that ran untraced because the runtime refused the profiler's completion signal or handler"
            }
            Self::Malformed => {
                "were malformed entries in otherwise intact chunks of the record log"
            }
            Self::Damaged => "were in damaged chunks of the record log",
            Self::Unfinished => {
                "were kernel dispatches that had not finished when their queue was destroyed or the runtime shut down"
            }
            Self::Definitions => {
                "were definitions (names of kernels, markers or API operations, or the profiler's facts about the run) rather than trace records, so some names may read as numbers and some explanations may be missing"
            }
        }
    }

    /// What the user can do about it.
    pub fn fix(self) -> &'static str {
        match self {
            Self::NoSpace => {
                "free space where the records are kept (TMPDIR) or point TMPDIR at a larger file system, then run again"
            }
            Self::NoBuffer => {
                "usually harmless at start-up or exit; if the count is large, report it with the application"
            }
            Self::DispatchTime => {
                "a runtime problem: check that libhsa-runtime64 and librocdxg are a matched pair (`rocprof avail`)"
            }
            Self::CopyUntraced => {
                "a runtime problem: the copies themselves completed; check the runtime with `rocprof avail`"
            }
            Self::Malformed => {
                "the log was written by another version of the profiler or damaged on disk; run again"
            }
            Self::Damaged => {
                "the log was damaged on disk after it was written (or by the application writing through a stray pointer); run again"
            }
            Self::Unfinished => {
                "make the application wait for its kernels (hipDeviceSynchronize or a blocking copy) before it exits"
            }
            Self::Definitions => {
                "see the other lost-record lines for why; a definition longer than 64 KiB cannot be recorded at all"
            }
        }
    }
}

impl std::fmt::Display for LossCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Self::NoSpace => "no-space",
            Self::NoBuffer => "no-buffer",
            Self::DispatchTime => "dispatch-time",
            Self::CopyUntraced => "copy-untraced",
            Self::Malformed => "malformed",
            Self::Damaged => "damaged",
            Self::Unfinished => "unfinished",
            Self::Definitions => "definitions",
        };
        f.write_str(name)
    }
}

/// Lost records by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCounts(pub [u64; LossCause::COUNT]);

impl LossCounts {
    /// The count of `cause`.
    pub fn get(&self, cause: LossCause) -> u64 {
        self.0[cause as usize]
    }

    /// Adds `n` to `cause`.
    pub fn add(&mut self, cause: LossCause, n: u64) {
        self.0[cause as usize] = self.0[cause as usize].saturating_add(n);
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &LossCounts) {
        for c in LossCause::ALL {
            self.add(c, other.get(c));
        }
    }

    /// Total over all causes.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// Causes with a count above zero, in report order.
    pub fn nonzero(&self) -> impl Iterator<Item = (LossCause, u64)> + '_ {
        LossCause::ALL
            .into_iter()
            .map(|c| (c, self.get(c)))
            .filter(|(_, n)| *n > 0)
    }

    /// One line per cause: how many, why, what to do.
    pub fn report_lines(&self) -> Vec<String> {
        self.nonzero()
            .map(|(c, n)| {
                let records = if n == 1 { "record" } else { "records" };
                format!("lost {n} {records} ({c}): they {}; {}", c.what(), c.fix())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_round_trip_and_report_only_what_was_lost() {
        for c in LossCause::ALL {
            assert_eq!(LossCause::from_u8(c as u8), Some(c));
        }
        assert_eq!(LossCause::from_u8(LossCause::COUNT as u8), None);
        let mut l = LossCounts::default();
        assert!(l.report_lines().is_empty());
        l.add(LossCause::NoSpace, 3);
        l.add(LossCause::DispatchTime, 1);
        let lines = l.report_lines();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("lost 3 records (no-space)"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("lost 1 record (dispatch-time)"),
            "{lines:?}"
        );
        assert_eq!(l.total(), 4);
    }
}
