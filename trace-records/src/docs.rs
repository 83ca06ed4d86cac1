//! The typed documents the tool writes into its record log (one JSON entry each) and the CLI
//! reads back: both sides use these types, so nothing is matched by string.

use crate::agents::Agent;
use serde::{Deserialize, Serialize};

/// Every document kind, tagged by `kind` in its JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Document {
    /// The published agents, CPU first.
    Agents(AgentsList),
    /// How discovery went.
    Discovery(DiscoveryFacts),
    /// How the published agents paired with the HSA runtime's.
    AgentMapping(AgentMapping),
    /// An API table a runtime handed to the tool.
    Table(TableReceived),
    /// Facts known when the process exited normally.
    Exit(ExitFacts),
    /// A warning of the tool inside the application (printed by `rocprof` after the run).
    Warning(ToolWarning),
    /// How one agent's counters are programmed: what its counter samples hold.
    CounterSetup(CounterSetup),
    /// A code object the tool saved for the thread-trace decoder.
    CodeObject(CodeObjectSaved),
    /// One traced dispatch's thread-trace data, saved per shader engine.
    ThreadTrace(ThreadTraceCaptured),
    /// Several copies of one library mapped into the process (the loader's list).
    DoubleLoad(DoubleLoad),
}

/// The libraries of which two mapped copies break a run (each copy keeps its own state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopiedLibrary {
    /// The DXG thunk, `librocdxg.so`.
    Thunk,
    /// The HSA runtime, `libhsa-runtime64.so`.
    Hsa,
}

impl CopiedLibrary {
    /// Every library, with the file-name stem it is recognised by.
    pub const ALL: [(CopiedLibrary, &'static str); 2] = [
        (CopiedLibrary::Thunk, "librocdxg.so"),
        (CopiedLibrary::Hsa, "libhsa-runtime64.so"),
    ];

    /// The name the runtime and the profiler ask the loader for.
    pub fn file_name(self) -> &'static str {
        match self {
            CopiedLibrary::Thunk => "librocdxg.so",
            CopiedLibrary::Hsa => "libhsa-runtime64.so",
        }
    }

    /// The library whose stem the final component of `path` starts with.
    pub fn of_path(path: &[u8]) -> Option<CopiedLibrary> {
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        Self::ALL
            .into_iter()
            .find(|(_, stem)| name.starts_with(stem.as_bytes()))
            .map(|(lib, _)| lib)
    }
}

/// Two or more mapped copies of one library, from the loader's list of loaded objects
/// (`dl_iterate_phdr`), with the `LD_PRELOAD` entry that names one of them by path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DoubleLoad {
    /// Which library.
    pub library: CopiedLibrary,
    /// Each copy's path as the loader registered it, in the loader's order.
    pub paths: Vec<String>,
    /// The `LD_PRELOAD` entry that preloads one of the copies by path, if one does.
    pub preload: Option<String>,
}

/// What `rocprof` asks the tool to trace (the value of [`crate::env::THREAD_TRACE`]), checked
/// before the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTraceRequest {
    /// The compute unit (WGP) traced in detail.
    pub target_cu: u32,
    /// The shader engines traced.
    pub se_mask: u64,
    /// The SIMD selected.
    pub simd_select: u32,
    /// The trace buffer's bytes (per traced dispatch, split over the shader engines).
    pub buffer_size: u64,
    /// The GPUs traced, by rocprofv3 GPU index (`None`: all).
    pub gpu_index: Option<Vec<u32>>,
    /// Serialise every dispatch, not only the traced ones.
    pub serialize_all: bool,
    /// Where the tool writes the raw data (`.att` per shader engine, `.out` per code object).
    pub dir: String,
}

/// A code object saved for the decoder (its bytes in [`CodeObjectSaved::file`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeObjectSaved {
    /// The tool's id of the loaded code object (1, 2, … in load order; the marker id the
    /// trace names PCs by).
    pub id: u64,
    /// Driver (KMT) node id of the agent it was loaded for.
    pub agent_node_id: u32,
    /// Where it is loaded.
    pub load_base: u64,
    /// Its loaded size.
    pub load_size: u64,
    /// `load_base` minus the image's own base address.
    pub load_delta: i64,
    /// The runtime's URI for it (`memory://…` or `file://…`).
    pub uri: String,
    /// The file the tool wrote its bytes to (empty when they could not be saved).
    pub file: String,
}

/// One traced dispatch's capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTraceCaptured {
    /// The dispatch.
    pub dispatch_id: u64,
    /// Its correlation id.
    pub correlation_id: u64,
    /// Its kernel.
    pub kernel_id: u64,
    /// Driver (KMT) node id of its agent.
    pub agent_node_id: u32,
    /// Each traced shader engine's data (none when the packets did not run).
    pub shader_engines: Vec<ShaderEngineCapture>,
    /// Whether the trace's packets ran: the begin buffer's proof word was in the control block
    /// after the dispatch (`None` in logs of tools that wrote no proof).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_ran: Option<bool>,
}

/// One shader engine's share of a capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaderEngineCapture {
    /// Shader engine.
    pub se: u32,
    /// Bytes of trace data saved.
    pub bytes: u64,
    /// The hardware's `SQ_THREAD_TRACE_STATUS`.
    pub status: u32,
    /// The hardware's dropped-data counter.
    pub dropped: u32,
    /// The buffer filled (the trace is cut short: raise `--att-buffer-size`).
    pub full: bool,
    /// The file holding the data (empty when it could not be written), in the record
    /// directory's `att/`.
    pub file: String,
    /// Where in `file` the data starts.
    #[serde(default)]
    pub offset: u64,
}

/// The counters the tool programs on one agent (one pass), in the order the read buffer
/// copies them, and the size of each dispatch's output buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSetup {
    /// Driver (KMT) node id of the agent.
    pub agent_node_id: u32,
    /// The base counters, in request order (the k-th of a block has the block's register k).
    pub events: Vec<CounterEvent>,
    /// Bytes of each dispatch's counter output buffer.
    pub output_bytes: u32,
    /// Which of the agent's multiplexed groups this is (0 without multiplexing).
    #[serde(default)]
    pub group: u32,
    /// Whether each pass's start packet writes the proof word into the output buffer's last
    /// slot (absent, so `false`, in logs of tools that wrote none).
    #[serde(default)]
    pub proof: bool,
}

/// What `rocprof` asks the tool to count (the value of [`crate::env::COUNTERS`]): one pass's
/// base counters, resolved and checked against the agent before the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRequest {
    /// The base counters, in request order, on every GPU (when `agents` is empty).
    pub events: Vec<CounterEvent>,
    /// Per GPU, its counter groups (rocprofv3's `pmc_groups`, and groups whose `:device=N`
    /// qualifiers leave GPUs different counters); when not empty, it replaces `events`, and a
    /// GPU it does not list is not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentCounterGroups>,
    /// Selected dispatches per group: each GPU's selected dispatches go through its groups in
    /// turn, `interval` at a time (rocprofv3's `pmc_group_interval`; 0 is 1).
    #[serde(default)]
    pub interval: u64,
}

/// One GPU's counter groups in a [`CounterRequest`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCounterGroups {
    /// Driver (KMT) node id of the agent.
    pub node_id: u32,
    /// Its groups' base counters, each in request order (none is empty).
    pub groups: Vec<Vec<CounterEvent>>,
}

/// One base counter of a [`CounterSetup`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterEvent {
    /// The counter's name.
    pub name: String,
    /// Its block (`SQ`, `GRBM`).
    pub block: String,
    /// The block's event id.
    pub event: u32,
}

impl Document {
    /// The document as one JSON line.
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail (no maps with non-string keys).
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a document; `None` for anything else (an unknown kind from a newer tool, or
    /// damage), which the reader counts as malformed.
    pub fn from_json(json: &str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }
}

/// The agents document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentsList {
    /// The agents, CPU first.
    pub agents: Vec<Agent>,
}

/// Which enumerator discovery used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlatformKind {
    /// KFD sysfs (native Linux).
    #[default]
    GnuLinux,
    /// `/dev/dxg` and libdxcore (WSL2).
    Wsl,
}

impl PlatformKind {
    /// The name used by `ROCPROFILER_FORCE_PLATFORM` (and in JSON).
    pub fn name(self) -> &'static str {
        match self {
            Self::GnuLinux => "gnulinux",
            Self::Wsl => "wsl",
        }
    }
}

/// The kinds of omission discovery reports (see `docs/avail-json.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum OmissionKind {
    LateAttach,
    DxcoreUnavailable,
    AdapterEnumerationFailed,
    NoAdapters,
    ThunkUnavailable,
    ThunkIncomplete,
    HandshakeRejected,
    KfdOpenFailed,
    SystemPropertiesFailed,
    NodeReadFailed,
    LayoutMismatch,
    NoGpuNodes,
    NonAmdAdapter,
    AdapterQueryFailed,
    AmbiguousAdapter,
    NoMatchingNode,
    UnparsableGfx,
    IncompleteTopology,
    UnclaimedNode,
    KfdNodeUnreadable,
    /// A kind this build does not know (written by a newer tool).
    #[serde(other)]
    Other,
}

impl OmissionKind {
    /// How loudly this is reported: informational kinds are expected on healthy systems.
    pub fn is_warning(self) -> bool {
        !matches!(self, Self::NonAmdAdapter | Self::NoAdapters)
    }

    /// Whether this omission leaves the process without any GPU agent.
    pub fn loses_every_gpu(self) -> bool {
        matches!(
            self,
            Self::NoGpuNodes
                | Self::HandshakeRejected
                | Self::ThunkUnavailable
                | Self::ThunkIncomplete
        )
    }
}

/// Something discovery left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OmissionFact {
    /// What was left out, in words.
    pub subject: String,
    /// Why, as a stable kind.
    pub kind: OmissionKind,
    /// Why, in words.
    pub reason: String,
}

/// What the tool learnt of the DXG thunk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThunkFacts {
    /// The file the loader mapped.
    pub path: Option<String>,
    /// Whether `DxgAbiCheck` is exported.
    pub handshake_offered: bool,
    /// `accepted`, `rejected`, `not-offered` or `not-attempted`.
    pub handshake: String,
    /// The `HsaNodeProperties` size records were read as.
    pub layout: usize,
    /// `NumNodes` reported by the thunk.
    pub total_nodes: u32,
    /// GPU nodes read.
    pub gpu_nodes: u32,
}

/// The tracing the tool was asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[allow(missing_docs)]
pub struct TracingConfig {
    pub hip_runtime: bool,
    pub hip_compiler: bool,
    pub hsa_core: bool,
    pub hsa_amd_ext: bool,
    pub hsa_image: bool,
    pub hsa_finalizer: bool,
    pub kernels: bool,
    pub copies: bool,
    pub markers: bool,
    pub memory_allocations: bool,
    pub scratch_memory: bool,
}

/// How discovery went in the process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiscoveryFacts {
    /// The enumerator used.
    pub platform: PlatformKind,
    /// Why it was chosen.
    pub detail: String,
    /// Everything left out.
    pub omissions: Vec<OmissionFact>,
    /// The thunk, on WSL.
    pub thunk: Option<ThunkFacts>,
    /// What was traced.
    pub config: TracingConfig,
    /// `WSLKMT_VENDOR_PACKET` in the application's environment once discovery had run (after
    /// the tool's own non-overwriting `1` on WSL): what the DXG thunk read.
    pub vendor_packet: EnvValue,
}

/// An environment variable's value as a process saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnvValue {
    /// The log does not say (a tool that did not record it).
    #[default]
    NotRecorded,
    /// The variable was not set.
    Unset,
    /// Its value (invalid UTF-8 replaced).
    Set(String),
}

/// The pairing of agent records with HSA agents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentMapping {
    /// KMT node ids paired.
    pub pairs: Vec<u32>,
    /// HSA GPUs without an agent record (not profilable).
    pub unmatched_gpu_node_ids: Vec<u32>,
    /// Other HSA agents without one.
    pub unmatched_other_node_ids: Vec<u32>,
    /// HSA agents whose node id could not be queried.
    pub unqueryable: usize,
}

/// A runtime's API table as the tool received it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableReceived {
    /// Which runtime.
    pub runtime: Runtime,
    /// The registering library's instance.
    pub instance: u64,
    /// Entries wrapped for tracing.
    pub wrapped: usize,
}

/// The runtimes that hand tables to the tool (rocprofiler-register's names).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    /// `hsa`.
    Hsa,
    /// `hip`.
    Hip,
    /// `hip_compiler`.
    HipCompiler,
    /// `roctx`.
    Roctx,
    /// Another name.
    Other(String),
}

impl Runtime {
    /// From rocprofiler-register's name.
    pub fn from_name(name: &str) -> Self {
        match name {
            "hsa" => Self::Hsa,
            "hip" => Self::Hip,
            "hip_compiler" => Self::HipCompiler,
            "roctx" => Self::Roctx,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether this is one of HIP's tables.
    pub fn is_hip(&self) -> bool {
        matches!(self, Self::Hip | Self::HipCompiler)
    }
}

/// ROCm runtime libraries the tool looks for among the mapped objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeLibrary {
    /// `libhsa-runtime64.so`.
    Hsa,
    /// `libamdhip64.so`.
    Hip,
    /// `librocprofiler-sdk-roctx.so`.
    Roctx,
    /// `librocprofiler-register.so`.
    Register,
}

impl RuntimeLibrary {
    /// Every library, with the file-name stem it is recognised by.
    pub const ALL: [(RuntimeLibrary, &'static str); 4] = [
        (RuntimeLibrary::Hsa, "libhsa-runtime64.so"),
        (RuntimeLibrary::Hip, "libamdhip64.so"),
        (RuntimeLibrary::Roctx, "librocprofiler-sdk-roctx.so"),
        (RuntimeLibrary::Register, "librocprofiler-register.so"),
    ];

    /// The libraries whose stem occurs in the file name `name`.
    pub fn named_in(name: &[u8]) -> impl Iterator<Item = RuntimeLibrary> + '_ {
        Self::ALL
            .into_iter()
            .filter(move |(_, stem)| name.windows(stem.len()).any(|w| w == stem.as_bytes()))
            .map(|(lib, _)| lib)
    }
}

/// Facts known at a normal exit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExitFacts {
    /// ROCm runtimes mapped into the process when it exited.
    pub runtimes_loaded: Vec<RuntimeLibrary>,
    /// Libraries of tracing domains this stack does not ship, mapped when it exited.
    pub domain_libraries_loaded: Vec<DomainLibrary>,
}

/// Libraries of tracing domains (rocprofv3's `--rccl-trace`, …) that the tool cannot wrap
/// unless the application loads them; the tool notes which were mapped at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DomainLibrary {
    /// `librccl.so`.
    Rccl,
    /// `librocdecode.so`.
    RocDecode,
    /// `librocjpeg.so`.
    RocJpeg,
    /// `libkokkoscore.so`.
    Kokkos,
    /// An OpenMP runtime with OMPT (`libomp.so`, `libomptarget.so`).
    OpenMp,
    /// `librocshmem.so`.
    RocShmem,
    /// `libhipfile.so`.
    HipFile,
}

impl DomainLibrary {
    /// Every library, with a file-name stem it is recognised by.
    pub const ALL: [(DomainLibrary, &'static str); 8] = [
        (DomainLibrary::Rccl, "librccl.so"),
        (DomainLibrary::RocDecode, "librocdecode.so"),
        (DomainLibrary::RocJpeg, "librocjpeg.so"),
        (DomainLibrary::Kokkos, "libkokkoscore.so"),
        (DomainLibrary::OpenMp, "libomp.so"),
        (DomainLibrary::OpenMp, "libomptarget.so"),
        (DomainLibrary::RocShmem, "librocshmem.so"),
        (DomainLibrary::HipFile, "libhipfile.so"),
    ];

    /// The libraries whose stem occurs in the file name `name`.
    pub fn named_in(name: &[u8]) -> impl Iterator<Item = DomainLibrary> + '_ {
        Self::ALL
            .into_iter()
            .filter(move |(_, stem)| name.windows(stem.len()).any(|w| w == stem.as_bytes()))
            .map(|(lib, _)| lib)
    }

    /// The file name users know it by.
    pub fn file_name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(l, _)| *l == self)
            .map_or("", |(_, stem)| stem)
    }
}

/// What a tool warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarningKind {
    /// Discovery left something out.
    Omission,
    /// HSA GPUs that cannot be profiled (no agent record pairs with them).
    UnpairedAgents,
    /// A runtime table lacked what a requested kind of tracing needs.
    IncompleteTable,
    /// Entries could not be wrapped.
    NotTraced,
    /// Dispatches that never finished.
    Unfinished,
    /// Hardware counters could not be collected (on an agent, or for some dispatches).
    Counters,
    /// Thread trace could not be captured (on an agent, or for some dispatches).
    ThreadTrace,
    /// `-P/--collection-period`: the process ended before the first window opened.
    CollectionPeriod,
    /// Any other trouble inside the tool.
    Internal,
}

/// One warning of the tool, as recorded in the application.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolWarning {
    /// What it is about.
    pub about: WarningKind,
    /// The message, complete, with what to do.
    pub message: String,
}

/// What the copies mean and what to do, in the words `rocprof doctor` uses: `2 copies of
/// librocdxg.so are mapped (A, B): … LD_PRELOAD=A …; preload it by bare name …`.
impl std::fmt::Display for DoubleLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.library.file_name();
        write!(
            f,
            "{} copies of {name} are mapped ({}): each keeps its own state, so the HSA runtime \
             and the profiler do not share one",
            self.paths.len(),
            self.paths.join(", ")
        )?;
        match &self.preload {
            Some(entry) => write!(
                f,
                "; LD_PRELOAD={entry} caused it: glibc registers a preloaded object under the \
                 path it was given and under its SONAME, a request for {name} matches neither, \
                 and the loader searches the path and maps another copy; preload it by bare \
                 name (LD_PRELOAD={name}) or not at all (put a directory holding a {name} \
                 symlink to it first on LD_LIBRARY_PATH)"
            ),
            None => write!(
                f,
                "; the application or its libraries load {name} from more than one place \
                 (an RPATH, a dlopen by path); keep one copy on the loader's path"
            ),
        }
    }
}

/// The documents of a log, sorted by kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Documents {
    /// The agents (the first such document).
    pub agents: Option<AgentsList>,
    /// The discovery facts (the first).
    pub discovery: Option<DiscoveryFacts>,
    /// The agent mapping (the first).
    pub mapping: Option<AgentMapping>,
    /// Every table received.
    pub tables: Vec<TableReceived>,
    /// The exit facts, if the process exited normally.
    pub exit: Option<ExitFacts>,
    /// Every warning, in order.
    pub warnings: Vec<ToolWarning>,
    /// The counter setup of each agent whose counters were programmed.
    pub counter_setups: Vec<CounterSetup>,
    /// Every code object saved for the thread-trace decoder.
    pub code_objects: Vec<CodeObjectSaved>,
    /// Every traced dispatch.
    pub thread_traces: Vec<ThreadTraceCaptured>,
    /// Libraries mapped more than once (each distinct set once).
    pub double_loads: Vec<DoubleLoad>,
}

impl Documents {
    /// Files one document.
    pub fn add(&mut self, d: Document) {
        match d {
            Document::Agents(a) => {
                self.agents.get_or_insert(a);
            }
            Document::Discovery(f) => {
                self.discovery.get_or_insert(f);
            }
            Document::AgentMapping(m) => {
                self.mapping.get_or_insert(m);
            }
            Document::Table(t) => self.tables.push(t),
            Document::Exit(e) => self.exit = Some(e),
            Document::Warning(w) => self.warnings.push(w),
            Document::CounterSetup(c) => self.counter_setups.push(c),
            Document::CodeObject(c) => self.code_objects.push(c),
            Document::ThreadTrace(t) => self.thread_traces.push(t),
            Document::DoubleLoad(d) => {
                if !self.double_loads.contains(&d) {
                    self.double_loads.push(d);
                }
            }
        }
    }

    /// Whether `runtime` handed over a table.
    pub fn received(&self, runtime: &Runtime) -> bool {
        self.tables.iter().any(|t| &t.runtime == runtime)
    }

    /// The agents (empty when the log has none).
    pub fn agents(&self) -> &[Agent] {
        self.agents.as_ref().map_or(&[], |a| &a.agents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_round_trip_with_their_kind() {
        let docs = [
            Document::Agents(AgentsList::default()),
            Document::Discovery(DiscoveryFacts {
                platform: PlatformKind::Wsl,
                omissions: vec![OmissionFact {
                    subject: "node 1".into(),
                    kind: OmissionKind::LayoutMismatch,
                    reason: "r".into(),
                }],
                ..Default::default()
            }),
            Document::Table(TableReceived {
                runtime: Runtime::from_name("hip_compiler"),
                instance: 0,
                wrapped: 3,
            }),
            Document::Exit(ExitFacts {
                runtimes_loaded: vec![RuntimeLibrary::Hsa],
                domain_libraries_loaded: vec![DomainLibrary::Rccl],
            }),
            Document::Warning(ToolWarning {
                about: WarningKind::UnpairedAgents,
                message: "m".into(),
            }),
        ];
        for d in docs {
            let json = d.to_json();
            assert_eq!(Document::from_json(&json), Some(d), "{json}");
        }
        let json = Document::Discovery(DiscoveryFacts::default()).to_json();
        assert!(json.starts_with(r#"{"kind":"discovery""#), "{json}");
        assert_eq!(Document::from_json(r#"{"kind":"bogus"}"#), None);
        let future = r#"{"subject":"s","kind":"new-kind","reason":"r"}"#;
        let o: OmissionFact = serde_json::from_str(future).unwrap();
        assert_eq!(o.kind, OmissionKind::Other);
    }
}
