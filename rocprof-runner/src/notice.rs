//! What a run or a conversion tells its user, as typed values.
//!
//! The runner never prints. Everything a user must hear is a [`Notice`]: one enum per concern
//! (the launch, reading the record directory, writing the outputs, counters, the findings after
//! the run, the end of a job), each with `Display` for its text and `Serialize` for `--json`,
//! and a [`Level`] that says how it is introduced. A caller hands the runner a [`Report`]; the
//! `rocprof` binary's writes each notice to stderr as `rocprof: <level>: <text>`, a test or
//! another tool may simply keep them.
//!
//! Long work (a conversion, a merge, decoding thread traces) also reports how far it is, as
//! [`Progress`] values through [`Report::progress`]: the runner only says where it is, the
//! binary decides whether and how to show it (a bar on a terminal, nothing otherwise).

use crate::process::signal_name;
use crate::words::{convert_command, counted, in_dirs, quoted};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where the notices of a run or a conversion go.
pub trait Report {
    /// Takes one notice (in the order they happen).
    fn notice(&mut self, notice: Notice);

    /// How far a long piece of work is (ignored by default). A task's first value has
    /// `done == 0`; its last has `done == total` (work that ends early, by an error or a
    /// signal, may send no last value: the receiver ends it at the next task or notice of
    /// the end).
    fn progress(&mut self, _progress: Progress) {}
}

/// Which long piece of work a [`Progress`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Writing a run's outputs from its record logs (steps: processes).
    Convert,
    /// Merging inputs into one output (steps: inputs).
    Merge,
    /// Decoding thread traces (steps: traced dispatches).
    Decode,
}

impl Task {
    /// What the task is doing, as a progress line says it.
    pub fn verb(self) -> &'static str {
        match self {
            Task::Convert => "converting",
            Task::Merge => "merging",
            Task::Decode => "decoding thread traces",
        }
    }
}

/// How far a task is: `done` of `total` steps, and what it works on now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// The task.
    pub task: Task,
    /// Steps done.
    pub done: u64,
    /// Steps in all.
    pub total: u64,
    /// What the current step works on (an input, a process, a dispatch), for the user.
    pub item: String,
}

impl Progress {
    /// `done` of `total` steps of `task`, working on `item`.
    pub fn new(task: Task, done: usize, total: usize, item: impl Into<String>) -> Self {
        Progress {
            task,
            done: done as u64,
            total: total as u64,
            item: item.into(),
        }
    }

    /// Whether this is the task's last value.
    pub fn finished(&self) -> bool {
        self.done >= self.total
    }
}

/// Keeping the notices is a report too (for tests and tools that look at them afterwards).
impl Report for Vec<Notice> {
    fn notice(&mut self, notice: Notice) {
        self.push(notice);
    }
}

/// How a notice is introduced (rocprofv3's and this tool's line prefixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Something failed (`rocprof: error: `).
    Error,
    /// Something the user should look at (`rocprof: warning: `).
    Warning,
    /// Something worth knowing (`rocprof: note: `).
    Note,
    /// What was done, or where things are (`rocprof: `).
    Info,
    /// `--echo`: what the application is started with (`rocprof: echo: `).
    Echo,
}

/// One thing to tell the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "concern", content = "notice", rename_all = "snake_case")]
pub enum Notice {
    /// Before and around the launch.
    Launch(LaunchNotice),
    /// Reading the record directory.
    Records(RecordNotice),
    /// Writing the outputs.
    Output(OutputNotice),
    /// Counter values.
    Counters(CounterNotice),
    /// What the run shows after it (explanations, losses, domains).
    Finding(Finding),
    /// How a job ended.
    End(EndNotice),
    /// The `-S` summary tables.
    Summary(SummaryText),
}

impl Notice {
    /// How it is introduced.
    pub fn level(&self) -> Level {
        match self {
            Self::Launch(n) => n.level(),
            Self::Records(_) => Level::Warning,
            Self::Output(n) => n.level(),
            Self::Counters(n) => n.level(),
            Self::Finding(n) => n.level(),
            Self::End(n) => n.level(),
            Self::Summary(_) => Level::Info,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Launch(n) => n.fmt(f),
            Self::Records(n) => n.fmt(f),
            Self::Output(n) => n.fmt(f),
            Self::Counters(n) => n.fmt(f),
            Self::Finding(n) => n.fmt(f),
            Self::End(n) => n.fmt(f),
            Self::Summary(n) => n.fmt(f),
        }
    }
}

macro_rules! into_notice {
    ($($t:ident => $v:ident),* $(,)?) => {
        $(impl From<$t> for Notice {
            fn from(n: $t) -> Self {
                Self::$v(n)
            }
        })*
    };
}

into_notice! {
    LaunchNotice => Launch,
    RecordNotice => Records,
    OutputNotice => Output,
    CounterNotice => Counters,
    Finding => Finding,
    EndNotice => End,
    SummaryText => Summary,
}

/// Before and around the launch of the application.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LaunchNotice {
    /// A problem with a discovery setting (`ROCPROF_*` variables) that does not stop the run.
    Setting {
        /// What is wrong.
        problem: String,
    },
    /// What probing the DXG thunk showed that the user should know.
    LayoutProbe {
        /// The warning.
        warning: String,
    },
    /// `WSLKMT_VENDOR_PACKET` other than 1 for a counter run on WSL.
    VendorPacketGate {
        /// Its value.
        value: String,
    },
    /// A pass of several (`--pmc` groups, `-i` jobs).
    Pass {
        /// 1-based.
        number: usize,
        /// How many.
        total: usize,
        /// The pass's counters, if it counts.
        pmc: Vec<String>,
    },
    /// No tracing option: the run records nothing.
    NoTracingOption,
    /// One of the `--pmc-repeat` runs whose traces are only estimated over.
    CounterRun {
        /// 1-based.
        number: u32,
        /// `--pmc-repeat`.
        of: u32,
    },
    /// The last `--pmc-repeat` run, whose traces are written.
    CounterRunWritten {
        /// `--pmc-repeat`.
        of: u32,
    },
    /// A thread-trace decoder that cannot be used: the raw data is still written.
    NoDecoder {
        /// Why.
        reason: String,
        /// Whether the decoder library itself was not found or not usable (another library
        /// or directory would help), rather than something else.
        library: bool,
    },
    /// The application does not exist (exit code 127).
    AppNotFound {
        /// As it was to be run.
        app: String,
    },
    /// The application cannot be executed (exit code 126).
    AppNotExecutable {
        /// As it was to be run.
        app: String,
        /// The system's reason.
        reason: String,
    },
    /// A signal arrived before the application started.
    InterruptedBeforeLaunch {
        /// The signal.
        signal: i32,
    },
    /// `--echo`: one line of what the application would be started with.
    Echo {
        /// `NAME=value`.
        line: String,
    },
    /// `--echo`: the command the application would be started with, which rocprofv3 prints
    /// on stdout as `command: ['app', 'arg']` (a Python list); the application is not run.
    EchoCommand {
        /// The program, then its arguments.
        argv: Vec<String>,
    },
}

impl LaunchNotice {
    fn level(&self) -> Level {
        match self {
            Self::Pass { .. } | Self::CounterRun { .. } | Self::CounterRunWritten { .. } => {
                Level::Info
            }
            Self::AppNotFound { .. }
            | Self::AppNotExecutable { .. }
            | Self::InterruptedBeforeLaunch { .. } => Level::Error,
            Self::Echo { .. } | Self::EchoCommand { .. } => Level::Echo,
            _ => Level::Warning,
        }
    }
}

impl fmt::Display for LaunchNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Setting { problem } => f.write_str(problem),
            Self::LayoutProbe { warning } => f.write_str(warning),
            Self::VendorPacketGate { value } => write!(
                f,
                "WSLKMT_VENDOR_PACKET={value}: the DXG thunk drops vendor (PM4) packets unless it is 1, \
                 so every counter will read 0; unset it (rocprof then sets 1) or set WSLKMT_VENDOR_PACKET=1"
            ),
            Self::Pass { number, total, pmc } => {
                write!(f, "pass {number}/{total}")?;
                if !pmc.is_empty() {
                    write!(f, ": --pmc {}", pmc.join(" "))?;
                }
                Ok(())
            }
            Self::NoTracingOption => f.write_str(
                "no tracing option given; the application runs with the profiler loaded but nothing is recorded (try --sys-trace)",
            ),
            Self::CounterRun { number, of } => write!(f, "counter run {number}/{of}"),
            Self::CounterRunWritten { of } => {
                write!(f, "counter run {of}/{of} (its traces are written)")
            }
            Self::NoDecoder { reason, .. } => write!(
                f,
                "--att: {reason}; the thread trace is captured and its raw .att and \
                 .out files are written, but not decoded"
            ),
            Self::AppNotFound { app } => write!(
                f,
                "cannot run {app}: no such file; check the name (a program without '/' is looked up on PATH)"
            ),
            Self::AppNotExecutable { app, reason } => write!(
                f,
                "cannot run {app}: {reason}; it must be an executable file (chmod +x it, or run it through its interpreter)"
            ),
            Self::InterruptedBeforeLaunch { signal } => write!(
                f,
                "interrupted by {} before the application started: nothing ran",
                signal_name(*signal)
            ),
            Self::Echo { line } => f.write_str(line),
            Self::EchoCommand { argv } => {
                let words: Vec<String> = argv.iter().map(|a| crate::words::python_repr(a)).collect();
                write!(f, "command: [{}]", words.join(", "))
            }
        }
    }
}

/// Reading the record directory (each a warning: what is lost, and that the rest is kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordNotice {
    /// An entry named like a log that is not a regular file.
    SkippedEntry {
        /// The entry.
        path: PathBuf,
        /// What it is ("a FIFO", …).
        what: String,
    },
    /// A log that cannot be read at all.
    LogUnreadable {
        /// Why.
        reason: String,
    },
    /// A damaged chunk in a log.
    LogDamaged {
        /// The log.
        log: PathBuf,
        /// Where.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for RecordNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SkippedEntry { path, what } => write!(
                f,
                "{} is named like a record log but is {what}: skipped (only regular files inside the record directory are read)",
                path.display()
            ),
            Self::LogUnreadable { reason } => {
                write!(f, "{reason}; that process's records are lost")
            }
            Self::LogDamaged {
                log,
                offset,
                reason,
            } => write!(
                f,
                "{}: the record log is damaged at byte {offset} ({reason}); that chunk was skipped, everything else is kept",
                log.display()
            ),
        }
    }
}

/// Writing the outputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutputNotice {
    /// An output could not be written, or its path is unusable (the job is kept).
    Failed {
        /// What failed, in words.
        reason: String,
    },
    /// Two processes would write the same names.
    SharedName {
        /// The name.
        name: PathBuf,
        /// The process that writes elsewhere.
        pid: u32,
        /// Where it writes.
        instead: PathBuf,
    },
    /// A warning of the summary (a `--summary-groups` pattern, …).
    Summary {
        /// The warning.
        warning: String,
    },
    /// A warning of the thread-trace outputs.
    ThreadTrace {
        /// The warning.
        warning: String,
    },
    /// Traced dispatches whose thread-trace packets did not run: the proof word their begin
    /// packet writes is missing from their control blocks.
    TracePacketsNotRun {
        /// Those dispatches, by process: (pid, dispatch id).
        not_run: Vec<(u32, u64)>,
        /// Traced dispatches recorded in all (with or without the proof).
        traced: usize,
        /// `WSLKMT_VENDOR_PACKET` as the application saw it (the tool records it).
        vendor_packet: trace_records::docs::EnvValue,
    },
    /// `--perfetto-buffer-size`: what did not fit a trace.
    PerfettoBufferFull {
        /// The trace.
        path: PathBuf,
        /// The size limit in KB.
        limit_kb: u64,
        /// `the latest` or `the earliest`.
        which: &'static str,
        /// Events left out.
        dropped_events: u64,
        /// Of them slices.
        dropped_slices: u64,
        /// Of them counter values.
        dropped_counters: u64,
        /// Bytes written.
        bytes: u64,
        /// Bytes at full size.
        full_bytes: u64,
    },
    /// `--minimum-output-data`: the files left out, with their sizes.
    BelowMinimum {
        /// The minimum in bytes.
        minimum: u64,
        /// The files and their sizes.
        files: Vec<(PathBuf, u64)>,
    },
    /// Another run replaced a file this run wrote.
    ReplacedByOther {
        /// The file.
        path: PathBuf,
    },
    /// This run replaced a file another run wrote while it ran.
    ReplacedOther {
        /// The file.
        path: PathBuf,
    },
}

impl OutputNotice {
    /// [`OutputNotice::Failed`] for `e`, as a notice.
    pub fn failed(e: &dyn fmt::Display) -> Notice {
        Self::Failed {
            reason: e.to_string(),
        }
        .into()
    }

    fn level(&self) -> Level {
        match self {
            Self::Failed { .. } => Level::Error,
            Self::BelowMinimum { .. }
            | Self::ReplacedByOther { .. }
            | Self::ReplacedOther { .. } => Level::Note,
            _ => Level::Warning,
        }
    }
}

impl fmt::Display for OutputNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed { reason } => f.write_str(reason),
            Self::SharedName { name, pid, instead } => write!(
                f,
                "several processes share the output name {}; process {pid} writes to {}",
                name.display(),
                instead.display()
            ),
            Self::Summary { warning } | Self::ThreadTrace { warning } => f.write_str(warning),
            Self::TracePacketsNotRun {
                not_run,
                traced,
                vendor_packet,
            } => trace_packets_text(f, not_run, *traced, vendor_packet),
            Self::PerfettoBufferFull {
                path,
                limit_kb,
                which,
                dropped_events,
                dropped_slices,
                dropped_counters,
                bytes,
                full_bytes,
            } => write!(
                f,
                "{}: the trace holds at most --perfetto-buffer-size {limit_kb} KB of events, so {which} {dropped_events} events were left out ({dropped_slices} slices, {dropped_counters} counter values; {bytes} bytes written of {full_bytes} at full size); give a larger --perfetto-buffer-size (up to 4194303) to keep them",
                path.display(),
            ),
            Self::BelowMinimum { minimum, files } => {
                let list: Vec<String> = files
                    .iter()
                    .map(|(p, n)| format!("{} ({n} B)", p.display()))
                    .collect();
                write!(
                    f,
                    "--minimum-output-data {} KB: {} smaller than {minimum} bytes not written: {}",
                    minimum / 1024,
                    counted(files.len(), "file", "files"),
                    list.join(", ")
                )
            }
            Self::ReplacedByOther { path } => write!(
                f,
                "{} was replaced by another run after this one wrote it: the file there now is not this run's (give concurrent runs different -d/-o, e.g. with %pid%)",
                path.display()
            ),
            Self::ReplacedOther { path } => write!(
                f,
                "this run replaced {}, which another run wrote after this one started (give concurrent runs different -d/-o, e.g. with %pid%)",
                path.display()
            ),
        }
    }
}

/// Counter values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CounterNotice {
    /// The definitions cannot be read: no counter values.
    NoValues {
        /// Why.
        reason: String,
    },
    /// A problem evaluating a counter.
    Evaluation {
        /// What.
        problem: String,
    },
    /// Counted dispatches that ran alongside kernels of the application's other queues.
    Overlapped {
        /// The process.
        pid: u32,
        /// The dispatches.
        ids: Vec<u64>,
    },
    /// On no counted dispatch that ran did the counter packets run: the proof word the start
    /// packet writes is missing from every read-back (in a log without the proof: every value
    /// read 0).
    PacketsNotRun {
        /// `WSLKMT_VENDOR_PACKET` as the application saw it (the tool records it).
        vendor_packet: trace_records::docs::EnvValue,
    },
    /// What the counter-hygiene report over every process has to say.
    Hygiene {
        /// One sentence of it.
        note: pmc_dxg::hygiene::Note,
    },
    /// GRBM counters read 0 on dispatches that ran.
    GrbmBurst,
    /// Before the run: counters named more than once in a group, each collected once.
    Merged {
        /// The pass (1-based) when the run has several.
        pass: Option<usize>,
        /// The names given more than once, in the order first given.
        repeated: Vec<RepeatedCounter>,
    },
    /// After the run: the kernel filters selected none of the dispatches that ran, so nothing
    /// was counted.
    NothingSelected {
        /// The include filter, if given.
        include: Option<String>,
        /// The exclude filter, if given.
        exclude: Option<String>,
        /// Dispatches that ran.
        dispatches: usize,
        /// Of them, the ones the include filter matched (all without one): the exclude filter
        /// excluded every one of these.
        included: usize,
        /// The kernels that ran, by demangled name (what the filters are searched in), in the
        /// order they first ran.
        kernels: Vec<SeenKernel>,
    },
    /// Before the run: counters a GPU lacks (other GPUs' definitions have them), left out on
    /// it while the others are collected (as rocprofv3 does).
    Lacking {
        /// The pass (1-based) when the run has several.
        pass: Option<usize>,
        /// rocprofv3's GPU index.
        gpu: u32,
        /// The agent's name.
        agent: String,
        /// The counters it lacks.
        names: Vec<String>,
    },
    /// Before the run: no GPU collects any counter of the pass (their `:device=N` qualifiers
    /// name no GPU, or every GPU lacks them).
    NoneCollected {
        /// The pass (1-based) when the run has several.
        pass: Option<usize>,
    },
}

/// A counter named more than once in a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepeatedCounter {
    /// The counter.
    pub name: String,
    /// How often it was given.
    pub given: usize,
}

/// A kernel that ran, with its dispatches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeenKernel {
    /// Its demangled name (the mangled one when it does not demangle).
    pub name: String,
    /// How many dispatches of it ran.
    pub dispatches: usize,
}

/// How many items the notices list before they count the rest.
const LISTED: usize = 8;

impl CounterNotice {
    fn level(&self) -> Level {
        match self {
            Self::NoValues { .. }
            | Self::Evaluation { .. }
            | Self::PacketsNotRun { .. }
            | Self::NothingSelected { .. }
            | Self::Lacking { .. }
            | Self::NoneCollected { .. } => Level::Warning,
            Self::Merged { .. } => Level::Note,
            Self::Hygiene { note } if !note.is_warning() => Level::Note,
            Self::Hygiene { .. } | Self::Overlapped { .. } | Self::GrbmBurst => Level::Warning,
        }
    }
}

/// `a, b, c` for the first [`LISTED`] items, then `and N more`.
fn listed(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(LISTED).collect();
    if total > LISTED {
        shown.push(format!("and {} more", total - LISTED));
    }
    shown.join(", ")
}

fn merged_text(
    f: &mut fmt::Formatter<'_>,
    pass: Option<usize>,
    repeated: &[RepeatedCounter],
) -> fmt::Result {
    if let Some(p) = pass {
        write!(f, "pass {p}: ")?;
    }
    match repeated {
        [one] => write!(
            f,
            "{} is named {} times in the counter group: it is collected once (a repeated \
             counter is merged into its first mention)",
            one.name, one.given
        ),
        _ => write!(
            f,
            "{} counters are named more than once in the counter group ({}): each is collected \
             once (a repeated counter is merged into its first mention, the order kept)",
            repeated.len(),
            listed(
                repeated
                    .iter()
                    .map(|r| format!("{} {} times", r.name, r.given))
            )
        ),
    }
}

/// A filter's pattern, single-quoted as a shell would take it.
fn pattern(re: &str) -> String {
    format!("'{}'", re.replace('\'', r"'\''"))
}

fn nothing_selected_text(
    f: &mut fmt::Formatter<'_>,
    include: Option<&str>,
    exclude: Option<&str>,
    dispatches: usize,
    included: usize,
    kernels: &[SeenKernel],
) -> fmt::Result {
    match (include, exclude) {
        (Some(inc), Some(exc)) if included > 0 => write!(
            f,
            "the kernel include filter {} matched {included} of the {} that ran and the \
             exclude filter {} excluded every one of them",
            pattern(inc),
            counted(dispatches, "dispatch", "dispatches"),
            pattern(exc)
        )?,
        (Some(inc), _) => write!(
            f,
            "the kernel include filter {} matched none of the {} that ran",
            pattern(inc),
            counted(dispatches, "dispatch", "dispatches")
        )?,
        (None, Some(exc)) => write!(
            f,
            "the kernel exclude filter {} excluded every one of the {} that ran",
            pattern(exc),
            counted(dispatches, "dispatch", "dispatches")
        )?,
        (None, None) => write!(
            f,
            "the kernel filters selected none of the {} that ran",
            counted(dispatches, "dispatch", "dispatches")
        )?,
    }
    write!(
        f,
        ", so no counter was collected and no counter values are written; the kernels that ran \
         (the filters are searched in these names): {}",
        listed(kernels.iter().map(|k| format!(
            "{} ({})",
            k.name,
            counted(k.dispatches, "dispatch", "dispatches")
        )))
    )
}

/// The text of [`CounterNotice::Overlapped`] without its process (also `rocprof analyze`'s).
pub fn counted_overlaps(ids: &[u64]) -> String {
    let shown: Vec<String> = ids.iter().take(8).map(u64::to_string).collect();
    let more = if ids.len() > 8 { ", …" } else { "" };
    format!(
        "{} while a kernel of another queue of the application was running (dispatch ids \
         {}{more}); counters count for the whole GPU, so their values include that kernel's \
         work (run the queues one after another to count them apart)",
        if ids.len() == 1 {
            "1 counted dispatch ran".to_owned()
        } else {
            format!("{} counted dispatches ran", ids.len())
        },
        shown.join(", ")
    )
}

/// Why vendor (PM4) packets did not run, from `WSLKMT_VENDOR_PACKET` as the application saw
/// it: the gate explanation the counter and thread-trace notices share.
fn gate_reason(vendor_packet: &trace_records::docs::EnvValue) -> String {
    use trace_records::docs::EnvValue;
    match vendor_packet {
        EnvValue::Set(v) if v == "1" => "although WSLKMT_VENDOR_PACKET was 1 in the \
             application's environment: the DXG thunk reads it once, when it initialises, so \
             it was probably set after that, or this thunk drops vendor packets whatever it says"
            .to_owned(),
        EnvValue::Set(v) => format!(
            "WSLKMT_VENDOR_PACKET was {} in the application's environment, so the DXG thunk \
             dropped them without an error (it honours vendor packets only if the variable is 1)",
            terminal_text::escape(v)
        ),
        EnvValue::Unset => "WSLKMT_VENDOR_PACKET was unset in the application's environment, \
             so the DXG thunk dropped them without an error (it honours vendor packets only if \
             the variable is 1)"
            .to_owned(),
        EnvValue::NotRecorded => "the DXG thunk honours vendor (PM4) packets only if \
             WSLKMT_VENDOR_PACKET=1 when it loads"
            .to_owned(),
    }
}

/// The text of [`OutputNotice::TracePacketsNotRun`].
fn trace_packets_text(
    f: &mut fmt::Formatter<'_>,
    not_run: &[(u32, u64)],
    traced: usize,
    vendor_packet: &trace_records::docs::EnvValue,
) -> fmt::Result {
    let mut pids: Vec<u32> = not_run.iter().map(|&(pid, _)| pid).collect();
    pids.dedup();
    let ids = listed(not_run.iter().map(|&(pid, id)| {
        if pids.len() > 1 {
            format!("{id} of process {pid}")
        } else {
            id.to_string()
        }
    }));
    let which = match (not_run.len(), traced) {
        (1, 1) => format!(
            "the traced dispatch (dispatch {ids}: its control block does not hold the word the \
             begin packet writes)"
        ),
        (n, t) if n == t => format!(
            "any of the {t} traced dispatches (dispatch ids {ids}: no control block holds the \
             word their begin packet writes)"
        ),
        (1, t) => format!(
            "1 of the {t} traced dispatches (dispatch {ids}: its control block does not hold the \
             word the begin packet writes)"
        ),
        (n, t) => format!(
            "{n} of the {t} traced dispatches (dispatch ids {ids}: their control blocks do not \
             hold the word their begin packet writes)"
        ),
    };
    let none = if not_run.len() == 1 {
        "It has no thread trace"
    } else {
        "They have no thread trace"
    };
    write!(
        f,
        "the thread-trace packets did not run on {which}: {}. {}; run again with \
         WSLKMT_VENDOR_PACKET=1 (or unset)",
        gate_reason(vendor_packet),
        none
    )
}

impl fmt::Display for CounterNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoValues { reason } => write!(f, "no counter values: {reason}"),
            Self::Lacking {
                pass,
                gpu,
                agent,
                names,
            } => {
                if let Some(p) = pass {
                    write!(f, "pass {p}: ")?;
                }
                write!(
                    f,
                    "GPU {gpu} ({agent}) has no counter {}: collected on the GPUs that define it, the other counters on this one",
                    names.join(", ")
                )
            }
            Self::NoneCollected { pass } => {
                if let Some(p) = pass {
                    write!(f, "pass {p}: ")?;
                }
                f.write_str("no GPU collects any of the counters asked for (their :device=N qualifiers name no GPU here, or no GPU defines them): the application runs without counters")
            }
            Self::Evaluation { problem } => f.write_str(problem),
            Self::Overlapped { pid, ids } => {
                write!(f, "process {pid}: {}", counted_overlaps(ids))
            }
            Self::PacketsNotRun { vendor_packet } => write!(
                f,
                "the counter packets did not run on any counted dispatch (no read-back holds the \
                 word their start packet writes): {}. No counter values are written (there are \
                 none); run again with WSLKMT_VENDOR_PACKET=1 (or unset)",
                gate_reason(vendor_packet)
            ),
            Self::Hygiene { note } => write!(f, "{note}"),
            Self::Merged { pass, repeated } => merged_text(f, *pass, repeated),
            Self::NothingSelected {
                include,
                exclude,
                dispatches,
                included,
                kernels,
            } => nothing_selected_text(
                f,
                include.as_deref(),
                exclude.as_deref(),
                *dispatches,
                *included,
                kernels,
            ),
            Self::GrbmBurst => f.write_str(
                "GRBM counters read 0 on dispatches that ran, as they do at the start of a GPU session on \
                 WSL2 (bursts of up to ~300 ms): those dispatches' GRBM-based values (GRBM_*, GPU_UTIL, \
                 occupancy …) are left out of counter_collection.csv and marked in counter_hygiene.csv; \
                 --pmc-discard-warmup 300 discards the opening window explicitly",
            ),
        }
    }
}

/// What the records show after the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// Why something asked for is missing ([`crate::explain`]): a warning.
    Explanation {
        /// The paragraph.
        text: String,
    },
    /// The tool's warnings (with the processes they came from) and the losses per cause
    /// ([`crate::findings`]): a warning.
    AfterRun {
        /// The line.
        text: String,
    },
    /// A library mapped more than once in some processes (the tool's
    /// [`trace_records::docs::DoubleLoad`] documents): a warning.
    DoubleLoad {
        /// The copies, and the `LD_PRELOAD` entry that caused them.
        load: trace_records::docs::DoubleLoad,
        /// The processes it happened in.
        pids: Vec<u32>,
    },
    /// A domain of a library this stack does not ship, asked for by name.
    Domain {
        /// What became of it.
        text: String,
    },
}

impl Finding {
    fn level(&self) -> Level {
        match self {
            Self::Domain { .. } => Level::Note,
            Self::Explanation { .. } | Self::AfterRun { .. } | Self::DoubleLoad { .. } => {
                Level::Warning
            }
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Explanation { text } | Self::AfterRun { text } | Self::Domain { text } => {
                f.write_str(text)
            }
            Self::DoubleLoad { load, pids } => {
                write!(f, "{}: {load}", crate::findings::processes(pids))
            }
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndNotice {
    /// A signal stopped the conversion.
    Interrupted {
        /// The signal.
        signal: i32,
    },
    /// The record directory is kept so the job can be finished.
    KeptToFinish {
        /// The record directory.
        dir: PathBuf,
    },
    /// The record directory is kept because records were lost or a log is damaged.
    KeptAfterLosses {
        /// The record directory.
        dir: PathBuf,
    },
    /// The record directory of a finished job cannot be removed.
    RemoveFailed {
        /// The record directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The summary line of a run.
    Run {
        /// How the application ended, in words.
        ended: String,
        /// Processes recorded.
        processes: usize,
        /// Files written.
        files: usize,
        /// Where they went.
        dirs: Vec<PathBuf>,
    },
    /// The summary line of a conversion.
    Converted {
        /// The record directory.
        record_dir: PathBuf,
        /// Processes read.
        processes: usize,
        /// Files written.
        files: usize,
        /// Where they went.
        dirs: Vec<PathBuf>,
    },
    /// `rocprof convert` without directories found none.
    NothingKept {
        /// Where it looked.
        tmp: PathBuf,
    },
    /// A merge input, read.
    MergeInput {
        /// The input as given.
        input: PathBuf,
        /// Its processes.
        processes: usize,
    },
    /// Several merged processes share a pid.
    MergeSamePid {
        /// The pid.
        pid: u32,
    },
    /// After a merge.
    Merged {
        /// Inputs read.
        inputs: usize,
        /// Processes.
        processes: usize,
        /// Files written.
        files: usize,
        /// The first file's directory.
        dir: Option<PathBuf>,
    },
}

impl EndNotice {
    fn level(&self) -> Level {
        match self {
            Self::RemoveFailed { .. } => Level::Warning,
            Self::MergeSamePid { .. } => Level::Note,
            _ => Level::Info,
        }
    }
}

fn dirs_text(dirs: &[PathBuf]) -> String {
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    in_dirs(&dirs)
}

impl fmt::Display for EndNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interrupted { signal } => write!(
                f,
                "interrupted by {} while writing the outputs: stopped; no partial file was left, the files already in place are whole",
                signal_name(*signal)
            ),
            Self::KeptToFinish { dir } => write!(
                f,
                "the record logs are kept in {}; finish the job with:\n  {}",
                dir.display(),
                convert_command(dir)
            ),
            Self::KeptAfterLosses { dir } => write!(
                f,
                "the record logs are kept in {} because some records were lost or could not be read (see above); convert them again with:\n  {}\nor remove them with: rm -r {}",
                dir.display(),
                convert_command(dir),
                quoted(&dir.to_string_lossy())
            ),
            Self::RemoveFailed { dir, reason } => write!(
                f,
                "cannot remove the record directory {}: {reason}; the outputs are complete, remove it with: rm -r {}",
                dir.display(),
                quoted(&dir.to_string_lossy())
            ),
            Self::Run {
                ended,
                processes,
                files,
                dirs,
            } => write!(
                f,
                "the application {ended}; {} recorded, {} written{}",
                counted(*processes, "process", "processes"),
                counted(*files, "file", "files"),
                dirs_text(dirs)
            ),
            Self::Converted {
                record_dir,
                processes,
                files,
                dirs,
            } => write!(
                f,
                "converted {}: {}, {} written{}",
                record_dir.display(),
                counted(*processes, "process", "processes"),
                counted(*files, "file", "files"),
                dirs_text(dirs)
            ),
            Self::NothingKept { tmp } => write!(
                f,
                "no record directory is kept in {} (a run that finished cleanly removes its own)",
                tmp.display()
            ),
            Self::MergeInput { input, processes } => {
                write!(
                    f,
                    "{}: {}",
                    input.display(),
                    counted(*processes, "process", "processes")
                )
            }
            Self::MergeSamePid { pid } => write!(
                f,
                "several inputs hold a process {pid} (other machines or runs); each stays a process of its own"
            ),
            Self::Merged {
                inputs,
                processes,
                files,
                dir,
            } => {
                let place = dir
                    .as_ref()
                    .map(|d| format!(" in {}", d.display()))
                    .unwrap_or_default();
                write!(
                    f,
                    "merged {}, {}; {} written{place}",
                    counted(*inputs, "input", "inputs"),
                    counted(*processes, "process", "processes"),
                    counted(*files, "file", "files"),
                )
            }
        }
    }
}

/// Where the `-S` tables go when they are not written to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// Standard output (`--summary-output-file stdout`).
    Stdout,
    /// Standard error (the default).
    Stderr,
}

/// The `-S` summary of one process, for the terminal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryText {
    /// The process, when the run had several (then a heading names it).
    pub pid: Option<u32>,
    /// The tables, as rocprofv3 prints them (several lines, each ending in a newline).
    pub tables: String,
    /// Where they go.
    pub stream: Stream,
}

impl fmt::Display for SummaryText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::docs::EnvValue;

    fn trace_text(not_run: &[(u32, u64)], traced: usize) -> String {
        OutputNotice::TracePacketsNotRun {
            not_run: not_run.to_vec(),
            traced,
            vendor_packet: EnvValue::Unset,
        }
        .to_string()
    }

    #[test]
    fn the_thread_trace_gate_notice_counts_its_dispatches_in_words() {
        let one = trace_text(&[(7, 1)], 1);
        assert!(
            one.starts_with(
                "the thread-trace packets did not run on the traced dispatch (dispatch 1: its \
                 control block does not hold the word the begin packet writes): \
                 WSLKMT_VENDOR_PACKET was unset"
            ) && one.contains(". It has no thread trace; run again"),
            "{one}"
        );
        let both = trace_text(&[(7, 1), (7, 2)], 2);
        assert!(
            both.starts_with(
                "the thread-trace packets did not run on any of the 2 traced dispatches \
                 (dispatch ids 1, 2: no control block holds"
            ) && both.contains(". They have no thread trace;"),
            "{both}"
        );
        let one_of = trace_text(&[(7, 3)], 3);
        assert!(
            one_of.contains("on 1 of the 3 traced dispatches (dispatch 3: its control block"),
            "{one_of}"
        );
        let two_of = trace_text(&[(7, 1), (8, 1)], 3);
        assert!(
            two_of.contains(
                "on 2 of the 3 traced dispatches (dispatch ids 1 of process 7, 1 of process 8: \
                 their control blocks"
            ),
            "{two_of}"
        );
    }

    #[test]
    fn the_counter_and_trace_gate_notices_give_the_same_reason() {
        for value in [
            EnvValue::Unset,
            EnvValue::Set("0".into()),
            EnvValue::Set("1".into()),
            EnvValue::NotRecorded,
        ] {
            let reason = gate_reason(&value);
            let counters = CounterNotice::PacketsNotRun {
                vendor_packet: value.clone(),
            }
            .to_string();
            let trace = OutputNotice::TracePacketsNotRun {
                not_run: vec![(1, 1)],
                traced: 1,
                vendor_packet: value,
            }
            .to_string();
            assert!(
                counters.contains(&reason) && trace.contains(&reason),
                "{reason}"
            );
        }
    }
}
