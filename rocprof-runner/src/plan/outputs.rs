//! Where and how a run's outputs are written (kept in `run.json`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `-u/--summary-units`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SummaryUnits {
    /// Seconds.
    Sec,
    /// Milliseconds.
    Msec,
    /// Microseconds.
    Usec,
    /// Nanoseconds (the default).
    #[default]
    Nsec,
}

/// `--perfetto-backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PerfettoBackend {
    /// The trace file is written by rocprof itself (the default).
    #[default]
    Inprocess,
    /// Events go to a system `traced` daemon.
    System,
}

/// `--perfetto-buffer-fill-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FillPolicy {
    /// Events past a full buffer are dropped (the default).
    #[default]
    Discard,
    /// A full buffer overwrites its oldest events.
    #[cfg_attr(feature = "clap", value(name = "ring_buffer", alias = "ring-buffer"))]
    RingBuffer,
}

/// The Perfetto options of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerfettoSettings {
    /// `--group-by-queue`.
    pub group_by_queue: bool,
    /// `--perfetto-buffer-size` in KB (`None`: not given, the trace is not limited; an
    /// older run.json's number reads as given).
    pub buffer_size_kb: Option<u64>,
    /// `--perfetto-shmem-size-hint` in KB.
    pub shmem_size_hint_kb: u64,
    /// `--perfetto-buffer-fill-policy`.
    pub fill_policy: FillPolicy,
}

impl Default for PerfettoSettings {
    fn default() -> Self {
        Self {
            group_by_queue: false,
            buffer_size_kb: None,
            shmem_size_hint_kb: 64,
            fill_policy: FillPolicy::Discard,
        }
    }
}

/// The summary options of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummarySettings {
    /// `-D`.
    pub per_domain: bool,
    /// `--summary-groups`.
    pub groups: Vec<String>,
    /// `--summary-output-file` (`None`: stderr).
    pub output_file: Option<String>,
    /// `-u`.
    pub units: SummaryUnits,
}

/// `-A/--agent-index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum AgentIndexChoice {
    /// `Agent <node id>`.
    Absolute,
    /// `Agent <logical node id>` (the default).
    #[default]
    Relative,
    /// `CPU <n>` / `GPU <n>`.
    TypeRelative,
}

impl AgentIndexChoice {
    /// The CSV writer's setting.
    pub fn index(self) -> trace_records::agents::AgentIndex {
        use trace_records::agents::AgentIndex;
        match self {
            Self::Absolute => AgentIndex::Absolute,
            Self::Relative => AgentIndex::Relative,
            Self::TypeRelative => AgentIndex::TypeRelative,
        }
    }
}

/// An output format this build writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// rocprofv3's CSV files.
    Csv,
    /// `<prefix>_results.json`, rocprofv3's JSON layout.
    Json,
    /// `<prefix>_results.pftrace`, a Perfetto trace.
    Pftrace,
    /// `<prefix>_results.db`, a rocpd SQLite database (schema 3).
    Rocpd,
    /// `<prefix>_results.otf2` (with `<prefix>_results.def` and `<prefix>_results/`), an
    /// OTF2 archive, written through the OTF2 library where it is installed.
    Otf2,
}

impl OutputFormat {
    /// Whether files of this format show API calls' arguments and return values (as
    /// rocprofv3's JSON `args`/`retval`, `rocpd_arg` and Perfetto annotations do; CSV does not).
    pub fn shows_api_arguments(self) -> bool {
        !matches!(self, Self::Csv)
    }

    /// The file a process's output of this format goes to (`None`: several CSV files).
    pub fn results_file(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Csv => None,
            Self::Json => Some(("results", "json")),
            Self::Pftrace => Some(("results", "pftrace")),
            Self::Rocpd => Some(("results", "db")),
            Self::Otf2 => Some(("results", "otf2")),
        }
    }
}

/// The output options of a run, resolved (kept in `run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSettings {
    /// `-d` as given (placeholders unexpanded).
    pub directory: String,
    /// The directory a relative `-d` is relative to (the working directory it was given in).
    pub base: PathBuf,
    /// `-o` as given.
    pub file: String,
    /// `-f`.
    pub formats: Vec<OutputFormat>,
    /// `--stats`.
    pub stats: bool,
    /// `-S`.
    pub summary: bool,
    /// `-M`.
    pub mangled_kernels: bool,
    /// `-T`.
    pub truncate_kernels: bool,
    /// `-A`.
    pub agent_index: AgentIndexChoice,
    /// `--kernel-rename`.
    #[serde(default)]
    pub kernel_rename: bool,
    /// `-D`, `--summary-groups`, `--summary-output-file`, `-u`.
    #[serde(default)]
    pub summary_options: SummarySettings,
    /// `--output-config`.
    #[serde(default)]
    pub output_config: bool,
    /// `--minimum-output-data` in bytes (0: every file is written).
    #[serde(default)]
    pub minimum_output_bytes: u64,
    /// `--group-by-queue` and the `--perfetto-*` options.
    #[serde(default)]
    pub perfetto: PerfettoSettings,
}

/// `-d` when not given.
pub const DEFAULT_DIRECTORY: &str = "%cwd%";
/// `-o` when not given.
pub const DEFAULT_FILE: &str = "%hostname%/%pid%";

impl OutputSettings {
    /// rocprofv3's defaults (`-d %cwd%`, `-o %hostname%/%pid%`, CSV, nothing else), a
    /// relative `-d` taken relative to `base`.
    pub fn new(base: &std::path::Path) -> Self {
        Self {
            directory: DEFAULT_DIRECTORY.into(),
            base: base.to_owned(),
            file: DEFAULT_FILE.into(),
            formats: vec![OutputFormat::Csv],
            stats: false,
            summary: false,
            mangled_kernels: false,
            truncate_kernels: false,
            agent_index: AgentIndexChoice::default(),
            kernel_rename: false,
            summary_options: SummarySettings::default(),
            output_config: false,
            minimum_output_bytes: 0,
            perfetto: PerfettoSettings::default(),
        }
    }

    /// Whether a summary is printed or written: `-S`, `-D` or `--summary-groups` (as the
    /// rocprofv3 tool decides).
    pub fn summary_wanted(&self) -> bool {
        self.summary || self.summary_options.per_domain || !self.summary_options.groups.is_empty()
    }
}
