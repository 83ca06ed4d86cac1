//! Hardware counters for AMD GPUs under WSL2, without FFI: what the counters are (rocprofiler-
//! sdk's `counter_defs.yaml`, resolved for an agent), the derived-counter language, the gfx11
//! PM4 command buffers that start, stop and read a set of counters (wrapped in AMD vendor PM4-IB
//! AQL packets, which the DXG thunk passes to the GPU when `WSLKMT_VENDOR_PACKET=1`), how a
//! set is split into passes that fit the hardware's counter slots, how the read-back decodes
//! into per-instance values, and how a run's read-backs become trustworthy values.
//!
//! - [`defs`]: loading and resolving counter definitions;
//! - [`expr`]: the derived-counter language: its shapes (`Dim`, `Shape`), the tree (`Expr`),
//!   the scanner and parser (`Expr::parse`), compilation into a `Program` and evaluation
//!   (`Evaluator`);
//! - [`plan`]: base counters into passes within each block's slots;
//! - [`pm4`]: the command buffers, the AQL packets and the decoding of results;
//! - [`readback`]: decoded results into a prepared program ([`readback::evaluate`]);
//! - [`sqtt`]: the thread-trace (SQTT) command buffers, the trace buffer's split over shader
//!   engines, code-object markers and the control block's reading;
//! - [`hygiene`]: read-backs spoiled by zero reads or a warm-up window, each counter's
//!   estimate over repeated runs (the smallest non-zero value, since other GPU clients only
//!   ever add counts), and the report over them as values (the hygiene table's lines, the
//!   notes);
//! - [`collection`]: a run's counters: a group planned and checked on every GPU before the run
//!   (or refused with what would work), and after it each process's read-backs evaluated,
//!   estimated over repeated runs and turned into counter records.
//!
//! Every failure is an [`Error`]; the crate prints nothing and names no command-line option:
//! it returns values (with their text where one is needed) for its caller to present.

#![forbid(unsafe_code)]

pub mod collection;
pub mod defs;
pub mod expr;
pub mod hygiene;
pub mod plan;
pub mod pm4;
pub mod readback;
pub mod sqtt;

use serde::{Deserialize, Serialize};

/// A hardware block that counts events, by its `counter_defs.yaml` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Block {
    /// The shader sequencer (8 counter slots on gfx11, 32-bit counters read per SE/SA/WGP).
    Sq,
    /// The graphics register bus manager (2 counter slots, 64-bit, one instance).
    Grbm,
    /// Any other block the definitions name (not collectable by this build).
    Other(String),
}

impl Block {
    /// From the YAML's `block` value.
    pub fn from_name(name: &str) -> Self {
        match name {
            "SQ" => Self::Sq,
            "GRBM" => Self::Grbm,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The YAML's spelling.
    pub fn name(&self) -> &str {
        match self {
            Self::Sq => "SQ",
            Self::Grbm => "GRBM",
            Self::Other(n) => n,
        }
    }
}

impl std::fmt::Display for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A base counter's hardware event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BaseEvent {
    /// The counting block.
    pub block: Block,
    /// The block's event (select) id.
    pub event: u32,
}

impl BaseEvent {
    /// A named base counter from its form in a counter request or setup (the log's and the
    /// tool's environment's typed form).
    pub fn named(e: &trace_records::docs::CounterEvent) -> (String, BaseEvent) {
        let event = BaseEvent {
            block: Block::from_name(&e.block),
            event: e.event,
        };
        (e.name.clone(), event)
    }

    /// This event, named `name`, in a counter request's or setup's form.
    pub fn to_counter_event(&self, name: String) -> trace_records::docs::CounterEvent {
        trace_records::docs::CounterEvent {
            name,
            block: self.block.name().to_owned(),
            event: self.event,
        }
    }
}

/// What the command buffers need to know of an agent's shader topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// The gfx target (`gfx1150`).
    pub gfx: String,
    /// Shader engines (KFD `num_shader_banks`).
    pub se: u32,
    /// Compute units (KFD `simd_count / simd_per_cu`).
    pub cu: u32,
    /// Shader arrays per engine (KFD `simd_arrays_per_engine`, what the SDK gives aqlprofile as
    /// `shader_arrays_per_se`). It sizes the WGPs per shader array; the SQ read itself walks
    /// two shader arrays per engine whatever this says.
    pub sa: u32,
    /// Accelerated compute dies.
    pub xcc: u32,
}

impl Topology {
    /// The topology of a discovered GPU agent (`None` for a CPU agent).
    pub fn of(agent: &trace_records::agents::Agent) -> Option<Self> {
        let g = agent.gpu.as_ref()?;
        Some(Self {
            gfx: agent.name.clone(),
            se: g.num_shader_banks.max(1),
            cu: g
                .simd_count
                .checked_div(g.simd_per_cu)
                .unwrap_or(g.cu_count),
            sa: g.simd_arrays_per_engine,
            xcc: g.num_xcc.max(1),
        })
    }
}

/// `pass 1: A B; pass 2: C`.
fn pass_list(passes: &[Vec<String>]) -> String {
    passes
        .iter()
        .enumerate()
        .map(|(i, p)| format!("pass {}: {}", i + 1, p.join(" ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Everything that can go wrong in this crate.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum Error {
    // --- definitions and expressions (defs, expr) ---
    /// A definitions file could not be read or parsed.
    #[error("{origin}: {message}")]
    Definitions {
        /// Where the definitions came from (a path, or "built-in").
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A derived counter's expression does not parse.
    #[error("counter {counter}: expression `{expression}` at {position}: expected {expected}")]
    Parse {
        /// The counter.
        counter: String,
        /// Its expression.
        expression: String,
        /// Byte offset of the problem.
        position: usize,
        /// What was expected there.
        expected: String,
    },
    /// An expression could not be evaluated (mismatched sizes or dimensions, a missing input).
    #[error("counter {counter}: {message}")]
    Evaluate {
        /// The counter.
        counter: String,
        /// What went wrong.
        message: String,
    },
    /// A derived counter refers to a name that is neither a counter nor a constant here.
    #[error("counter {counter}: {input} is not defined for this agent")]
    UnknownInput {
        /// The derived counter.
        counter: String,
        /// The name it needs.
        input: String,
    },
    /// No definition of this name for the agent.
    #[error("counter {name} is not defined for {gfx}")]
    UnknownCounter {
        /// The name asked for.
        name: String,
        /// The agent's gfx target.
        gfx: String,
    },
    // --- hardware (plan, pm4) ---
    /// Counters on this gfx target cannot be collected by this build.
    #[error("counters on {0} are not supported yet (this build programs gfx11 only)")]
    UnsupportedTarget(String),
    /// A block this build cannot program.
    #[error("counter {counter}: block {block} is not supported yet (SQ and GRBM are)")]
    UnsupportedBlock {
        /// The counter.
        counter: String,
        /// Its block.
        block: String,
    },
    /// The counters asked for need more slots of a block than it has, in one pass.
    #[error("{block} has {slots} counter slots, and one pass was asked for {}: {}", counters.len(), counters.join(", "))]
    TooManyCounters {
        /// The block.
        block: String,
        /// Its slots.
        slots: usize,
        /// The base counters competing for them.
        counters: Vec<String>,
    },
    /// A read-back buffer is too short for the pass.
    #[error("the counter output holds {got} bytes, the pass needs {need}")]
    ShortOutput {
        /// Bytes given.
        got: usize,
        /// Bytes needed.
        need: usize,
    },
    /// One pass's largest PM4 buffer would not fit the command processor's frame (or the
    /// 20-bit size field of an indirect buffer).
    #[error("one pass of {} needs a {dwords}-dword PM4 buffer, and at most {frame} dwords fit", counters.join(", "))]
    FrameOverflow {
        /// Dwords of the pass's largest buffer.
        dwords: usize,
        /// The most that fit.
        frame: usize,
        /// The base counters of the pass.
        counters: Vec<String>,
    },
    /// An event id does not fit its block's PERF_SEL field (aqlprofile would silently program
    /// another event).
    #[error("counter {counter}: event {event} does not fit {block} PERF_SEL (at most {max})")]
    EventOutOfRange {
        /// The counter.
        counter: String,
        /// Its block.
        block: String,
        /// Its event id.
        event: u32,
        /// The largest id the field holds.
        max: u32,
    },
    /// The agent's shader topology cannot be programmed (no WGPs or shader arrays, more than
    /// one XCC, indices that do not fit GRBM_GFX_INDEX or a dimension's coordinate).
    #[error("cannot program counters on {gfx}: {message}")]
    InvalidTopology {
        /// The agent's gfx target.
        gfx: String,
        /// What is wrong.
        message: String,
    },
    /// A buffer the PM4 addresses is not aligned as it must be.
    #[error("the {what} address {address:#x} is not {alignment}-byte aligned")]
    Misaligned {
        /// Which buffer.
        what: &'static str,
        /// Its address.
        address: u64,
        /// The alignment it needs.
        alignment: u64,
    },
    // --- a run's counters (collection) ---
    /// The definitions a run's counters are resolved with could not be loaded.
    #[error("cannot read the counter definitions ({origin}): {cause}")]
    DefinitionsUnavailable {
        /// Where they were looked for ([`defs::DefsSource::origin`]).
        origin: String,
        /// What loading them said.
        cause: Box<Error>,
    },
    /// No GPU agent was discovered.
    #[error("no GPU agent was discovered, so no counters can be collected")]
    NoGpu,
    /// A counter's `:device=N` qualifier does not name a GPU index.
    #[error("invalid device qualifier format (':device=N' where N is the GPU index): {counter}")]
    BadQualifier {
        /// The counter as given.
        counter: String,
    },
    /// The GPU asked for (by rocprofv3's GPU index) was not discovered.
    #[error("there is no GPU {0}")]
    NoSuchGpu(u32),
    /// A group of counters does not fit one pass on a GPU, and splitting the requested counters
    /// (each whole) into groups in request order fits each group in one pass.
    #[error(
        "these counters do not fit one pass on GPU {gpu} ({agent}): {conflict}. Collect them in \
         {} passes, each one run of the application: {}",
        passes.len(),
        pass_list(passes)
    )]
    SeveralPasses {
        /// The GPU index.
        gpu: u32,
        /// Its gfx target.
        agent: String,
        /// Why one pass does not hold them.
        conflict: Box<Error>,
        /// The requested counters in groups that each fit one pass, in request order.
        passes: Vec<Vec<String>>,
    },
    /// A group of counters cannot be collected on a GPU: an unknown or uncollectable counter,
    /// or one counter alone does not fit a pass.
    #[error("cannot collect {} on GPU {gpu} ({agent}): {conflict}", counters.join(" "))]
    CannotCollect {
        /// The requested counters.
        counters: Vec<String>,
        /// The GPU index.
        gpu: u32,
        /// Its gfx target.
        agent: String,
        /// Why.
        conflict: Box<Error>,
    },
    /// The GPUs need different base counters for the same group (one request programs them
    /// all alike).
    #[error(
        "the GPUs program {} differently (GPU {gpu} needs {}); profile one GPU at a time \
         (HIP_VISIBLE_DEVICES)",
        counters.join(" "),
        base.join(" ")
    )]
    GpusDiffer {
        /// The requested counters.
        counters: Vec<String>,
        /// The first GPU whose base counters differ from the first GPU's.
        gpu: u32,
        /// Its base counters.
        base: Vec<String>,
    },
}
