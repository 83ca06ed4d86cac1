//! Where a search for the trace decoder looked, for the messages that name it.

/// The variable that names the decoder's directories when none are given.
pub const ENV_ATT_LIBRARY_PATH: &str = "ROCPROF_ATT_LIBRARY_PATH";

/// Which directories a search for the trace decoder went through: the first of the search's
/// rules that applied ([`crate::library::Search`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchOrigin {
    /// The directories the caller gave (they win over everything else).
    Given,
    /// None were given: the directories `ROCPROF_ATT_LIBRARY_PATH` lists.
    Environment,
    /// Neither: every `LD_LIBRARY_PATH` entry, then `<ROCm>/lib`.
    Defaults,
}

/// How messages name the directories: `the ones given`, …
impl std::fmt::Display for SearchOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SearchOrigin::Given => "the ones given",
            SearchOrigin::Environment => {
                return write!(f, "the ones {ENV_ATT_LIBRARY_PATH} lists");
            }
            SearchOrigin::Defaults => "the LD_LIBRARY_PATH entries, then <ROCm>/lib",
        })
    }
}
