//! Output options (`-d`, `-o`, `-f`, `--stats`, `-S`, `-M`, `-T`, `-A`), checked before
//! anything runs, and output files that are never half-written or mixed.
//!
//! A process's files are written into a private staging directory beside their final place
//! (`.rocprof-<pid>-<random>/`, same file system) and renamed into place only when all of
//! them are complete; a failure removes what was staged. Each file itself is also written
//! under a temporary name and renamed (`trace_export::csv`), so a full disk or a concurrent
//! run leaves either the old file or the whole new one. [`Placement`] remembers the identity
//! (device, inode) of every file it renamed into place, notices a target that another run
//! created after this one started, and at the end re-checks its own files.

use crate::messages;
use crate::placeholders::{Context, Launch};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;
use trace_export::csv::OutputPrefix;

pub use trace_records::env::parse_bool;

/// The output options (rocprofv3's names), shared by run mode and `rocprof convert`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct OutputOptions {
    /// Output directory (`-d`); placeholders such as `%hostname%` expand. Default: `%cwd%`.
    #[arg(short = 'd', long = "output-directory")]
    pub output_directory: Option<String>,
    /// Output file prefix (`-o`), may contain `/`. Default: `%hostname%/%pid%`.
    #[arg(short = 'o', long = "output-file")]
    pub output_file: Option<String>,
    /// Output formats (comma or space separated): csv (the default), json, pftrace, rocpd
    /// (otf2 is refused: there is no OTF2 writer).
    #[arg(short = 'f', long = "output-format", num_args = 1.., value_delimiter = ',')]
    pub output_format: Vec<String>,
    /// Per-name and per-domain statistics files.
    #[arg(long = "stats", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub stats: Option<bool>,
    /// A summary table on stderr after the run.
    #[arg(short = 'S', long = "summary", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub summary: Option<bool>,
    /// Keep kernel names mangled (default: demangled).
    #[arg(short = 'M', long = "mangled-kernels", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub mangled_kernels: Option<bool>,
    /// Shorten kernel names to the bare function name (e.g. `addition_kernel`).
    #[arg(short = 'T', long = "truncate-kernels", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub truncate_kernels: Option<bool>,
    /// How Agent_Id cells name agents.
    #[arg(short = 'A', long = "agent-index", value_enum)]
    pub agent_index: Option<AgentIndexChoice>,
    /// Name each dispatch after the innermost ROCTx range (roctxRangePush) open on its
    /// thread when it was launched.
    #[arg(long = "kernel-rename", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Naming")]
    pub kernel_rename: Option<bool>,
    /// The summary split per domain (one table per domain), after the run.
    #[arg(short = 'D', long = "summary-per-domain", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL",
          help_heading = "Summary")]
    pub summary_per_domain: Option<bool>,
    /// Summary tables of the domains whose label a regex matches in full (one table per
    /// regex; `KERNEL_DISPATCH|MEMORY_COPY` joins two).
    #[arg(long = "summary-groups", num_args = 1.., value_name = "REGEX",
          help_heading = "Summary")]
    pub summary_groups: Vec<String>,
    /// Where the summary goes: stdout, stderr (the default) or `<prefix>_<FILE>.txt`.
    #[arg(
        long = "summary-output-file",
        value_name = "FILE",
        help_heading = "Summary"
    )]
    pub summary_output_file: Option<String>,
    /// The summary's time unit.
    #[arg(
        short = 'u',
        long = "summary-units",
        value_enum,
        help_heading = "Summary"
    )]
    pub summary_units: Option<SummaryUnits>,
    /// Write the run's configuration to `<prefix>_config.json`.
    #[arg(long = "output-config", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub output_config: Option<bool>,
    /// Write no output file smaller than KB kilobytes.
    #[arg(long = "minimum-output-data", value_name = "KB")]
    pub minimum_output_data: Option<u64>,
    /// Perfetto tracks per HSA queue instead of per HIP stream.
    #[arg(long = "group-by-queue", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Perfetto")]
    pub group_by_queue: Option<bool>,
    /// Perfetto backend: `inprocess` (the trace is written by rocprof) or `system`
    /// (a traced daemon; refused: there is none under WSL2's rocprof).
    #[arg(long = "perfetto-backend", value_enum, help_heading = "Perfetto")]
    pub perfetto_backend: Option<PerfettoBackend>,
    /// Perfetto trace buffer size in KB (1..4194303; default 1 GiB).
    #[arg(long = "perfetto-buffer-size", value_name = "KB", help_heading = "Perfetto",
          value_parser = clap::value_parser!(u64).range(1..=4_194_303))]
    pub perfetto_buffer_size: Option<u64>,
    /// Perfetto shared-memory size hint in KB (default 64).
    #[arg(
        long = "perfetto-shmem-size-hint",
        value_name = "KB",
        help_heading = "Perfetto"
    )]
    pub perfetto_shmem_size_hint: Option<u64>,
    /// What happens when the Perfetto buffer is full: discard newer events or overwrite
    /// older ones.
    #[arg(
        long = "perfetto-buffer-fill-policy",
        value_enum,
        help_heading = "Perfetto"
    )]
    pub perfetto_buffer_fill_policy: Option<FillPolicy>,
}

/// `-u/--summary-units`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PerfettoBackend {
    /// The trace file is written by rocprof itself (the default).
    #[default]
    Inprocess,
    /// Events go to a system `traced` daemon.
    System,
}

/// `--perfetto-buffer-fill-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FillPolicy {
    /// Events past a full buffer are dropped (the default).
    #[default]
    Discard,
    /// A full buffer overwrites its oldest events.
    #[value(name = "ring_buffer", alias = "ring-buffer")]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
}

impl OutputFormat {
    /// The file a process's output of this format goes to (`None`: several CSV files).
    pub fn results_file(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Csv => None,
            Self::Json => Some(("results", "json")),
            Self::Pftrace => Some(("results", "pftrace")),
            Self::Rocpd => Some(("results", "db")),
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

impl OutputOptions {
    /// The formats asked for (csv when none), or what is wrong with them.
    pub fn formats(&self) -> Result<Vec<OutputFormat>, String> {
        let mut out = Vec::new();
        for f in &self.output_format {
            for f in f.split([' ', ';', ':']).filter(|f| !f.is_empty()) {
                match f.to_ascii_lowercase().as_str() {
                    "csv" => out.push(OutputFormat::Csv),
                    "json" => out.push(OutputFormat::Json),
                    "pftrace" => out.push(OutputFormat::Pftrace),
                    "rocpd" => out.push(OutputFormat::Rocpd),
                    "otf2" => return Err(messages::format_not_supported(f)),
                    other => return Err(messages::format_unknown(other)),
                }
            }
        }
        if out.is_empty() {
            out.push(OutputFormat::Csv);
        }
        let mut seen = Vec::new();
        out.retain(|f| {
            let first = !seen.contains(f);
            seen.push(*f);
            first
        });
        Ok(out)
    }

    /// The settings of a run started in `cwd`: these options, defaults for the rest.
    pub fn settings(&self, cwd: &Path) -> Result<OutputSettings, String> {
        Ok(OutputSettings {
            directory: self
                .output_directory
                .clone()
                .unwrap_or_else(|| DEFAULT_DIRECTORY.into()),
            base: cwd.to_owned(),
            file: self
                .output_file
                .clone()
                .unwrap_or_else(|| DEFAULT_FILE.into()),
            formats: self.formats()?,
            stats: self.stats == Some(true),
            summary: self.summary == Some(true),
            mangled_kernels: self.mangled_kernels == Some(true),
            truncate_kernels: self.truncate_kernels == Some(true),
            agent_index: self.agent_index.unwrap_or_default(),
            kernel_rename: self.kernel_rename == Some(true),
            summary_options: SummarySettings::default(),
            output_config: self.output_config == Some(true),
            minimum_output_bytes: 0,
            perfetto: PerfettoSettings::default(),
        }
        .with_extras(self))
    }

    /// `run`'s settings with the options given here (on a command line run in `cwd`) in
    /// their place.
    pub fn apply_to(&self, run: &OutputSettings, cwd: &Path) -> Result<OutputSettings, String> {
        let mut s = run.clone();
        if let Some(d) = &self.output_directory {
            s.directory = d.clone();
            s.base = cwd.to_owned();
        }
        if let Some(f) = &self.output_file {
            s.file = f.clone();
        }
        if !self.output_format.is_empty() {
            s.formats = self.formats()?;
        }
        s.stats = self.stats.unwrap_or(s.stats);
        s.summary = self.summary.unwrap_or(s.summary);
        s.mangled_kernels = self.mangled_kernels.unwrap_or(s.mangled_kernels);
        s.truncate_kernels = self.truncate_kernels.unwrap_or(s.truncate_kernels);
        s.agent_index = self.agent_index.unwrap_or(s.agent_index);
        s.kernel_rename = self.kernel_rename.unwrap_or(s.kernel_rename);
        s.output_config = self.output_config.unwrap_or(s.output_config);
        Ok(s.with_extras(self))
    }
}

impl OutputOptions {
    /// Checks the summary and Perfetto options before anything runs (`tracing`: a tracing or
    /// counter option was given). Returns the warnings to print; an error refuses the run.
    ///
    /// - `-D`, `--summary-groups`, `--summary-output-file` and `-u` need tracing, as
    ///   rocprofv3's script requires; a group that is not a valid regular expression is
    ///   refused.
    /// - `--perfetto-backend system` is refused: rocprof writes the trace file itself after
    ///   the run, there is no `traced` daemon to send events to.
    /// - `--perfetto-shmem-size-hint` sizes the shared memory between an in-process producer
    ///   and the tracing service, which this writer does not have: accepted, not used.
    /// - The Perfetto options without `-f pftrace` have nothing to act on.
    pub fn check_extras(&self, tracing: bool) -> Result<Vec<String>, String> {
        self.check(tracing, true)
    }

    /// [`OutputOptions::check_extras`] for `rocprof convert` and `merge`, whose formats
    /// default to the run's.
    pub fn check_for_conversion(&self) -> Result<Vec<String>, String> {
        self.check(true, !self.output_format.is_empty())
    }

    fn check(&self, tracing: bool, formats_known: bool) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        if !tracing {
            let given = [
                (
                    "-D/--summary-per-domain",
                    self.summary_per_domain == Some(true),
                ),
                ("--summary-groups", !self.summary_groups.is_empty()),
                ("--summary-output-file", self.summary_output_file.is_some()),
                ("-u/--summary-units", self.summary_units.is_some()),
            ];
            if let Some((name, _)) = given.iter().find(|g| g.1) {
                return Err(format!(
                    "{name} needs a tracing option (e.g. --sys-trace or --kernel-trace): the summary is made of traced records"
                ));
            }
        }
        crate::summary::check_groups(&self.summary_groups)?;
        if let Some(f) = &self.summary_output_file
            && (f.is_empty() || f.contains('/'))
        {
            return Err(format!(
                "--summary-output-file {f:?}: give stdout, stderr or a name (the file is <prefix>_<name>.txt beside the other outputs)"
            ));
        }
        if self.perfetto_backend == Some(PerfettoBackend::System) {
            return Err(
                "--perfetto-backend system is not available: rocprof writes the Perfetto trace itself from the records after the run, there is no traced daemon to hand events to; the inprocess backend (the default) is the only one".into(),
            );
        }
        if let Some(kb) = self.perfetto_shmem_size_hint {
            warnings.push(format!(
                "--perfetto-shmem-size-hint {kb} is accepted and not used: it sizes the shared memory between an in-process Perfetto producer and its tracing service, and rocprof writes the trace file directly"
            ));
        }
        if self.perfetto_buffer_fill_policy.is_some() && self.perfetto_buffer_size.is_none() {
            warnings.push(
                "--perfetto-buffer-fill-policy acts only when the trace exceeds --perfetto-buffer-size, and no size was given (rocprof does not limit the trace otherwise)".into(),
            );
        }
        let pftrace = self
            .formats()
            .map(|f| f.contains(&OutputFormat::Pftrace))
            .unwrap_or(false);
        let perfetto_given = self.group_by_queue.is_some()
            || self.perfetto_backend.is_some()
            || self.perfetto_buffer_size.is_some()
            || self.perfetto_shmem_size_hint.is_some()
            || self.perfetto_buffer_fill_policy.is_some();
        if perfetto_given && !pftrace && formats_known {
            warnings.push(
                "the --group-by-queue and --perfetto-* options shape the Perfetto trace, and -f has no pftrace: they have no effect".into(),
            );
        }
        Ok(warnings)
    }
}

impl OutputSettings {
    /// Whether a summary is printed or written: `-S`, `-D` or `--summary-groups` (as the
    /// rocprofv3 tool decides).
    pub fn summary_wanted(&self) -> bool {
        self.summary || self.summary_options.per_domain || !self.summary_options.groups.is_empty()
    }

    /// The summary, minimum-size and Perfetto options `o` gives, over these settings.
    fn with_extras(mut self, o: &OutputOptions) -> Self {
        let sum = &mut self.summary_options;
        sum.per_domain = o.summary_per_domain.unwrap_or(sum.per_domain);
        if !o.summary_groups.is_empty() {
            sum.groups = o.summary_groups.clone();
        }
        if o.summary_output_file.is_some() {
            sum.output_file = o.summary_output_file.clone();
        }
        sum.units = o.summary_units.unwrap_or(sum.units);
        if let Some(kb) = o.minimum_output_data {
            self.minimum_output_bytes = kb.saturating_mul(1024);
        }
        let p = &mut self.perfetto;
        p.group_by_queue = o.group_by_queue.unwrap_or(p.group_by_queue);
        if o.perfetto_buffer_size.is_some() {
            p.buffer_size_kb = o.perfetto_buffer_size;
        }
        p.shmem_size_hint_kb = o.perfetto_shmem_size_hint.unwrap_or(p.shmem_size_hint_kb);
        p.fill_policy = o.perfetto_buffer_fill_policy.unwrap_or(p.fill_policy);
        self
    }
}

/// A bad output path, found before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A placeholder's value takes `-o` out of `-d`.
    #[error("{}", messages::path_escapes(template, expanded, directory))]
    Escapes {
        /// `-o` as given.
        template: String,
        /// What it expanded to.
        expanded: String,
        /// The output directory.
        directory: PathBuf,
    },
    /// A name longer than a file system allows.
    #[error("{}", messages::name_too_long(name))]
    NameTooLong {
        /// The name (one path component).
        name: String,
    },
    /// A path longer than the system allows.
    #[error("{}", messages::path_too_long(path))]
    PathTooLong {
        /// The longest path an output could have.
        path: PathBuf,
    },
    /// Something on the way is not a directory.
    #[error("{}", messages::not_a_directory(path))]
    NotADirectory {
        /// It.
        path: PathBuf,
    },
    /// Nothing can be created there.
    #[error("{}", messages::not_writable(path, reason))]
    NotWritable {
        /// The deepest existing directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The longest name a component may have (Linux file systems).
const NAME_MAX: usize = 255;
/// The longest path the system accepts (with its terminating NUL).
const PATH_MAX: usize = 4096;
/// The names of the files rocprof writes after the prefix (`<prefix>_<name>.csv`).
pub const OUTPUT_NAMES: [&str; 16] = [
    "agent_info",
    "hip_api_trace",
    "hsa_api_trace",
    "kernel_trace",
    "memory_copy_trace",
    "memory_allocation_trace",
    "scratch_memory_trace",
    "marker_api_trace",
    "hip_api_stats",
    "hsa_api_stats",
    "kernel_stats",
    "memory_copy_stats",
    "memory_allocation_stats",
    "scratch_memory_stats",
    "marker_api_stats",
    "domain_stats",
];
/// A process id of the longest kind (Linux's `pid_max` is at most 2^22).
pub const STAND_IN_PID: u32 = 4_194_304;

/// The output prefix of the process `ctx` describes: `-d` joined with `-o`, placeholders
/// expanded, refused if a placeholder's value takes it out of `-d`.
pub fn prefix_for(s: &OutputSettings, ctx: &Context<'_>) -> Result<PathBuf, PathError> {
    let dir = s.base.join(ctx.expand(&s.directory));
    let file = ctx.expand(&s.file);
    let literal = Context {
        neutral: true,
        ..*ctx
    }
    .expand(&s.file);
    if leaves(&file) && !leaves(&literal) {
        return Err(PathError::Escapes {
            template: s.file.clone(),
            expanded: file,
            directory: dir,
        });
    }
    // `Path::join` would drop a trailing `/` of `-o` (a prefix naming a directory).
    let mut prefix = dir.join(&file).into_os_string();
    if file.ends_with('/') && !prefix.as_bytes().ends_with(b"/") {
        prefix.push("/");
    }
    Ok(PathBuf::from(prefix))
}

/// Whether a relative path leaves its starting directory (or is absolute).
fn leaves(path: &str) -> bool {
    let mut depth = 0usize;
    for c in Path::new(path).components() {
        match c {
            Component::RootDir | Component::Prefix(_) => return true,
            Component::ParentDir if depth == 0 => return true,
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    false
}

/// Checks `-d`/`-o` before anything runs: no placeholder takes `-o` out of `-d`, every name
/// fits the file system, and the directory can be created and written. Values known only per
/// process (`%pid%`) stand in with a value of the longest shape.
pub fn validate(s: &OutputSettings, launch: &Launch) -> Result<(), PathError> {
    let ctx = Context::new(launch, STAND_IN_PID, STAND_IN_PID);
    let prefix = prefix_for(s, &ctx)?;
    let (parent, name) = split_prefix(&prefix);
    let longest = OUTPUT_NAMES.iter().map(|n| n.len()).max().unwrap_or(0);
    // `<name>_<pid>_<output>.csv`: the `_<pid>` is added when processes share a name.
    let file_len = name.len() + 1 + STAND_IN_PID.to_string().len() + 1 + longest + 4;
    for c in parent.components() {
        if let Component::Normal(n) = c
            && n.len() > NAME_MAX
        {
            return Err(PathError::NameTooLong {
                name: n.to_string_lossy().into_owned(),
            });
        }
    }
    if file_len > NAME_MAX {
        return Err(PathError::NameTooLong {
            name: format!(
                "{}_{STAND_IN_PID}_memory_copy_trace.csv",
                name.to_string_lossy()
            ),
        });
    }
    if parent.as_os_str().len() + 1 + file_len >= PATH_MAX {
        return Err(PathError::PathTooLong {
            path: parent.join(format!(
                "{}_{STAND_IN_PID}_memory_copy_trace.csv",
                name.to_string_lossy()
            )),
        });
    }
    check_writable(&parent)
}

/// `(directory, file-name prefix)` of an output prefix (`dir/` → `(dir, "")`).
fn split_prefix(prefix: &Path) -> (PathBuf, OsString) {
    if prefix.as_os_str().as_bytes().ends_with(b"/") {
        return (prefix.to_owned(), OsString::new());
    }
    let parent = prefix
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = prefix.file_name().map(OsString::from).unwrap_or_default();
    (parent.to_owned(), name)
}

/// The deepest existing ancestor of `dir` is a directory in which this process can create
/// entries (a directory is created and removed there to find out).
fn check_writable(dir: &Path) -> Result<(), PathError> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(PathError::NotADirectory {
                    path: at.to_owned(),
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent().filter(|p| !p.as_os_str().is_empty()) {
                    Some(p) => at = p,
                    None => {
                        return Err(PathError::NotWritable {
                            path: dir.to_owned(),
                            reason: e.to_string(),
                        });
                    }
                }
            }
            Err(e) => {
                return Err(PathError::NotWritable {
                    path: at.to_owned(),
                    reason: e.to_string(),
                });
            }
        }
    }
    let probe = at.join(format!(
        ".rocprof-probe-{}-{}",
        std::process::id(),
        crate::record_dir::random_token()
    ));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            Ok(())
        }
        Err(e) => Err(PathError::NotWritable {
            path: at.to_owned(),
            reason: messages::io_reason(&e),
        }),
    }
}

/// An output file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}", messages::write_failed(file, source))]
pub struct WriteFailure {
    /// The file (its final name).
    pub file: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// What happened to a file this run wrote, or one it replaced, because of another run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replacement {
    /// Another run replaced (or removed) this file after this run wrote it.
    ByOther(PathBuf),
    /// This run replaced a file another run wrote after this run started.
    OfOther(PathBuf),
}

/// The files of one conversion: staged, moved into place, checked at the end.
#[derive(Debug)]
pub struct Placement {
    /// When this run started, on the file system's clock.
    since: SystemTime,
    /// Final directory → its staging directory.
    staging: BTreeMap<PathBuf, PathBuf>,
    /// Files renamed into place, with (device, inode).
    placed: Vec<(PathBuf, (u64, u64))>,
    /// Files of other runs this run replaced.
    replaced: Vec<PathBuf>,
    /// Output directories this placement created (removed again if they stay empty).
    created: Vec<PathBuf>,
}

impl Placement {
    /// A placement for a run that started at `since` (file-system time).
    pub fn new(since: SystemTime) -> Self {
        Self {
            since,
            staging: BTreeMap::new(),
            placed: Vec::new(),
            replaced: Vec::new(),
            created: Vec::new(),
        }
    }

    /// The prefix to write a process's files under, in the staging directory beside their
    /// final place `prefix` (creating both directories).
    pub fn stage(&mut self, prefix: &Path) -> Result<OutputPrefix, WriteFailure> {
        let (parent, name) = split_prefix(prefix);
        let stage = match self.staging.get(&parent) {
            Some(s) => s.clone(),
            None => {
                let fail = |source| WriteFailure {
                    file: parent.clone(),
                    source,
                };
                let missing: Vec<PathBuf> = parent
                    .ancestors()
                    .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                    .map(Path::to_owned)
                    .collect();
                std::fs::create_dir_all(&parent).map_err(fail)?;
                self.created.extend(missing);
                let stage = parent.join(format!(
                    ".rocprof-{}-{}",
                    std::process::id(),
                    crate::record_dir::random_token()
                ));
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&stage)
                    .map_err(fail)?;
                self.staging.insert(parent, stage.clone());
                stage
            }
        };
        let mut staged = stage.into_os_string();
        staged.push("/");
        staged.push(name);
        Ok(OutputPrefix(PathBuf::from(staged)))
    }

    /// The final name of a staged file.
    pub fn final_path(staged: &Path) -> PathBuf {
        let stage = staged.parent().unwrap_or(Path::new("."));
        let dir = stage.parent().unwrap_or(Path::new("."));
        dir.join(staged.file_name().unwrap_or_default())
    }

    /// Renames a process's staged files into place; returns their final names.
    pub fn commit(&mut self, staged: &[PathBuf]) -> Result<Vec<PathBuf>, WriteFailure> {
        let mut done = Vec::with_capacity(staged.len());
        for s in staged {
            let target = Self::final_path(s);
            let fail = |source| WriteFailure {
                file: target.clone(),
                source,
            };
            let id = std::fs::symlink_metadata(s)
                .map(|m| (m.dev(), m.ino()))
                .map_err(fail)?;
            if let Ok(old) = std::fs::symlink_metadata(&target)
                && !self.placed.iter().any(|p| p.1 == (old.dev(), old.ino()))
                && old.modified().is_ok_and(|t| t >= self.since)
            {
                self.replaced.push(target.clone());
            }
            std::fs::rename(s, &target).map_err(fail)?;
            self.placed.push((target.clone(), id));
            done.push(target);
        }
        Ok(done)
    }

    /// Removes staged files that will not be committed.
    pub fn discard(&self, staged: &[PathBuf]) {
        for s in staged {
            let _ = std::fs::remove_file(s);
        }
    }

    /// Removes the staging directories and reports every replacement: files of other runs
    /// this run replaced, and files of this run that are no longer in place.
    pub fn finish(mut self) -> Vec<Replacement> {
        for stage in self.staging.values() {
            let _ = std::fs::remove_dir_all(stage);
        }
        // Deepest first; a directory that received a file (or anything else) stays.
        self.created
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in &self.created {
            let _ = std::fs::remove_dir(dir);
        }
        let mut out: Vec<Replacement> = self
            .replaced
            .into_iter()
            .map(Replacement::OfOther)
            .collect();
        for (path, id) in self.placed {
            let now = std::fs::symlink_metadata(&path).map(|m| (m.dev(), m.ino()));
            if now.ok() != Some(id) {
                out.push(Replacement::ByOther(path));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(d: &str, o: &str) -> OutputSettings {
        OutputOptions {
            output_directory: Some(d.into()),
            output_file: Some(o.into()),
            ..Default::default()
        }
        .settings(Path::new("/base"))
        .unwrap()
    }

    fn launch(args: &[&str]) -> Launch {
        Launch {
            rocprof_pid: 1,
            hostname: "h".into(),
            cwd: "/w".into(),
            argv: args.iter().map(|a| (*a).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_placeholder_cannot_take_the_output_out_of_the_directory() {
        let l = launch(&["app", "../../etc/x", "/abs", "sub/dir"]);
        let ctx = Context::new(&l, 5, 0);
        for o in ["%arg1%", "%arg2%", "a/%arg1%"] {
            let e = prefix_for(&settings("out", o), &ctx).unwrap_err();
            assert!(matches!(e, PathError::Escapes { .. }), "{o}: {e}");
            assert!(e.to_string().contains("-o"), "{e}");
        }
        // A value that stays inside, and a literal path the user wrote, are fine.
        assert_eq!(
            prefix_for(&settings("out", "%arg3%_%pid%"), &ctx).unwrap(),
            Path::new("/base/out/sub/dir_5")
        );
        assert_eq!(
            prefix_for(&settings("out", "../side/%pid%"), &ctx).unwrap(),
            Path::new("/base/out/../side/5")
        );
        assert_eq!(
            prefix_for(&settings("/abs", "run/"), &ctx).unwrap(),
            Path::new("/abs/run/")
        );
    }

    #[test]
    fn bad_directories_and_names_are_refused() {
        let l = launch(&["app"]);
        let file =
            std::env::temp_dir().join(format!("rocprof-outputs-test-{}", std::process::id()));
        std::fs::write(&file, "x").unwrap();
        let e = validate(&settings(file.to_str().unwrap(), "run"), &l).unwrap_err();
        assert_eq!(e, PathError::NotADirectory { path: file.clone() });
        let sub = file.join("deeper");
        let e = validate(&settings(sub.to_str().unwrap(), "run"), &l).unwrap_err();
        assert_eq!(e, PathError::NotADirectory { path: file.clone() });
        std::fs::remove_file(&file).unwrap();
        let e = validate(&settings("/tmp", &"n".repeat(230)), &l).unwrap_err();
        assert!(matches!(e, PathError::NameTooLong { .. }), "{e}");
        let e = validate(&settings(&format!("/tmp/{}", "d".repeat(256)), "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::NameTooLong { .. }), "{e}");
        let deep = format!("/tmp{}", "/d".repeat(2100));
        let e = validate(&settings(&deep, "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::PathTooLong { .. }), "{e}");
        let e = validate(&settings("/proc/self", "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::NotWritable { .. }), "{e}");
        validate(
            &settings("/tmp/rocprof-not-yet/%pid%", "%hostname%/%pid%"),
            &l,
        )
        .unwrap();
        assert!(
            !Path::new("/tmp/rocprof-not-yet").exists(),
            "validation creates nothing"
        );
    }

    #[test]
    fn placement_stages_renames_and_tells_replacements_apart() {
        let root = std::env::temp_dir().join(format!("rocprof-placement-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        // Older than this run: replacing it is an ordinary overwrite, not another run's file.
        std::fs::write(out.join("run_old.csv"), "old").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let stamp = root.join("stamp");
        std::fs::write(&stamp, "").unwrap();
        let since = std::fs::metadata(&stamp).unwrap().modified().unwrap();
        // Written by "another run" after this one started.
        std::fs::write(out.join("run_other.csv"), "other").unwrap();

        let mut p = Placement::new(since);
        let staged = p.stage(&out.join("run")).unwrap();
        assert_ne!(
            staged.0.parent().unwrap(),
            out,
            "staged beside, not in place"
        );
        let files: Vec<PathBuf> = ["old", "other", "mine"]
            .iter()
            .map(|n| {
                let f = staged.file(n, "csv");
                std::fs::write(&f, format!("new {n}")).unwrap();
                f
            })
            .collect();
        let done = p.commit(&files).unwrap();
        assert_eq!(done[2], out.join("run_mine.csv"));
        assert_eq!(std::fs::read_to_string(&done[0]).unwrap(), "new old");
        // Another run replaces one of this run's files afterwards.
        std::fs::write(root.join("theirs"), "theirs").unwrap();
        std::fs::rename(root.join("theirs"), &done[2]).unwrap();
        let said = p.finish();
        assert_eq!(
            said,
            [
                Replacement::OfOther(out.join("run_other.csv")),
                Replacement::ByOther(out.join("run_mine.csv")),
            ]
        );
        let mut left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["run_mine.csv", "run_old.csv", "run_other.csv"],
            "staging removed"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn summary_and_perfetto_options_are_checked_before_the_run() {
        let o = |f: &dyn Fn(&mut OutputOptions)| {
            let mut o = OutputOptions::default();
            f(&mut o);
            o
        };
        let e = o(&|o| o.perfetto_backend = Some(PerfettoBackend::System))
            .check_extras(true)
            .unwrap_err();
        assert!(e.contains("traced") && e.contains("inprocess"), "{e}");
        let e = o(&|o| o.summary_units = Some(SummaryUnits::Msec))
            .check_extras(false)
            .unwrap_err();
        assert!(
            e.contains("-u/--summary-units needs a tracing option"),
            "{e}"
        );
        assert!(
            o(&|o| o.summary_groups = vec!["(".into()])
                .check_extras(true)
                .is_err()
        );
        assert!(
            o(&|o| o.summary_output_file = Some("a/b".into()))
                .check_extras(true)
                .is_err()
        );
        let w = o(&|o| o.perfetto_shmem_size_hint = Some(128))
            .check_extras(true)
            .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("not used") && w[1].contains("no pftrace"),
            "{w:?}"
        );
        // A conversion without -f writes the run's formats: no pftrace warning.
        let w = o(&|o| o.group_by_queue = Some(true))
            .check_for_conversion()
            .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let w = o(&|o| {
            o.group_by_queue = Some(true);
            o.output_format = vec!["pftrace".into()];
        })
        .check_extras(true)
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        // The resolved settings keep the buffer size only when given.
        let s = o(&|o| o.perfetto_buffer_size = Some(8))
            .settings(Path::new("/"))
            .unwrap();
        assert_eq!(s.perfetto.buffer_size_kb, Some(8));
        assert_eq!(settings("o", "r").perfetto.buffer_size_kb, None);
    }

    #[test]
    fn convert_options_override_only_what_they_name() {
        let run = settings("out", "run");
        let o = OutputOptions {
            stats: Some(true),
            output_directory: Some("again".into()),
            ..Default::default()
        };
        let s = o.apply_to(&run, Path::new("/elsewhere")).unwrap();
        assert_eq!((s.directory.as_str(), s.file.as_str()), ("again", "run"));
        assert_eq!(s.base, Path::new("/elsewhere"));
        assert!(s.stats && !s.summary);
        let bad = OutputOptions {
            output_format: vec!["xml".into()],
            ..Default::default()
        };
        assert!(bad.apply_to(&run, Path::new("/")).is_err());
    }
}
