//! Counter definitions: where rocprofiler-sdk's `counter_defs.yaml` comes from, reading it in
//! both of its schemas, and resolving it for one agent.
//!
//! # Sources ([`DefsSource::select`])
//!
//! 1. `ROCPROFILER_METRICS_PATH`, when set and not empty: a directory holding
//!    `counter_defs.yaml`, or the file itself. It overrides everything else, like upstream's: a
//!    path that does not exist is chosen all the same, and loading it fails naming the path.
//! 2. The ROCm install beside the HSA runtime: given the directory the runtime library was
//!    loaded from (`<rocm>/lib`), `<rocm>/share/rocprofiler-sdk/counter_defs.yaml`, if that
//!    file exists. One level further up is tried too, for a multiarch directory
//!    (`/usr/lib/x86_64-linux-gnu` → `/usr/share/...`).
//! 3. This crate's own definitions for the simulated GPU (`data/sim-counter-defs.yaml`), built
//!    in.
//!
//! # Schemas ([`Definitions::parse`])
//!
//! - 2025: `rocprofiler-sdk: {counters-schema-version, counters: [{name, description,
//!   properties, definitions: [{architectures: [...], block, event} | {architectures,
//!   expression}]}]}`.
//! - Older: a map `NAME: {architectures: {"gfxA/gfxB": {block, event | expression}},
//!   description}`, architecture keys joined by `/`.
//!
//! # Resolution ([`Definitions::for_agent`])
//!
//! For each counter, a definition naming the agent's exact gfx target wins; failing that, one
//! naming its family (`gfx` and the major version: gfx1150 → gfx11, gfx90a → gfx9). The stock
//! file has no `gfx1150` key, and rocprofiler-sdk matches exact names only, so stock rocprofv3
//! finds no counters on a Radeon 890M; [`AgentCounters::family_fallback`] says when the family
//! entries were used.
//!
//! An agent's counters are, in id order: the 29 agent-property constants upstream exposes
//! (KFD topology names; a property this platform does not know is 0), the file's counters in
//! file order, then the named constants `CU_NUM`, `SIMD_NUM`, `SE_NUM` and `MAX_WAVE_SIZE` if
//! the file did not define them for this agent (upstream's file defines them as derived
//! counters over the properties; this crate supplies the same expressions otherwise).
//!
//! # Dimensions
//!
//! A gfx11 SQ counter has one 32-bit value per (shader engine, shader array, WGP), read in that
//! nesting (aqlprofile's loop: SE outermost, SA bound hard-coded to 2, `wgp_per_sa` WGPs); a
//! GRBM counter has one value; an agent with several XCCs repeats each per XCC (outermost).
//! Every base counter also carries `DIMENSION_INSTANCE` with extent 1 (the block instance), as
//! rocprofv3-avail lists it. Other blocks (this build cannot collect them) are given a single
//! instance. Derived counters' dimensions follow from their expressions ([`crate::expr`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use trace_records::agents::Agent;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlLoader};

use crate::expr::{AccumulateMode, Binding, Dim, Expr, Input, Program, Shape};
use crate::{BaseEvent, Block, Error, Topology};

/// The variable naming the definitions' directory (or file).
pub const METRICS_PATH_VAR: &str = "ROCPROFILER_METRICS_PATH";
/// The definitions' file name.
pub const FILE_NAME: &str = "counter_defs.yaml";
/// Where a ROCm install keeps the file, relative to its prefix.
pub const ROCM_RELATIVE_PATH: &str = "share/rocprofiler-sdk/counter_defs.yaml";
/// This crate's own definitions for the simulated GPU (2025 schema).
pub const BUILT_IN_YAML: &str = include_str!("../data/sim-counter-defs.yaml");
/// The origin named for the built-in definitions.
pub const BUILT_IN_ORIGIN: &str = "built-in";

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// Where the counter definitions are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefsSource {
    /// The file `ROCPROFILER_METRICS_PATH` names (directly or as its directory).
    MetricsPath(PathBuf),
    /// The ROCm install beside the HSA runtime.
    Rocm(PathBuf),
    /// This crate's definitions for the simulated GPU.
    BuiltIn,
}

impl DefsSource {
    /// Chooses the source from the environment (`env` looks a variable up) and the directory
    /// the HSA runtime library was loaded from, if known. See the module documentation for the
    /// order.
    pub fn select(env: impl Fn(&str) -> Option<OsString>, runtime_lib_dir: Option<&Path>) -> Self {
        if let Some(value) = env(METRICS_PATH_VAR).filter(|v| !v.is_empty()) {
            let path = PathBuf::from(value);
            return if path.is_dir() {
                DefsSource::MetricsPath(path.join(FILE_NAME))
            } else {
                DefsSource::MetricsPath(path)
            };
        }
        if let Some(dir) = runtime_lib_dir {
            let prefixes = [dir.parent(), dir.parent().and_then(Path::parent)];
            for prefix in prefixes.into_iter().flatten() {
                let file = prefix.join(ROCM_RELATIVE_PATH);
                if file.is_file() {
                    return DefsSource::Rocm(file);
                }
            }
        }
        DefsSource::BuiltIn
    }

    /// [`DefsSource::select`] with this process's environment.
    pub fn from_process(runtime_lib_dir: Option<&Path>) -> Self {
        Self::select(|k| std::env::var_os(k), runtime_lib_dir)
    }

    /// The file, unless built in.
    pub fn path(&self) -> Option<&Path> {
        match self {
            DefsSource::MetricsPath(p) | DefsSource::Rocm(p) => Some(p),
            DefsSource::BuiltIn => None,
        }
    }

    /// How errors and listings name it: the path, or `built-in`.
    pub fn origin(&self) -> String {
        match self.path() {
            Some(p) => p.display().to_string(),
            None => BUILT_IN_ORIGIN.to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------------------------

/// Which schema a definitions file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `rocprofiler-sdk: {counters-schema-version, counters: [...]}` (2025).
    Current {
        /// `counters-schema-version`.
        version: i64,
    },
    /// `NAME: {architectures: {"gfxA/gfxB": ...}, description}` (2024 and before).
    Legacy,
}

/// What one definition makes of a counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefBody {
    /// A hardware event.
    Base(BaseEvent),
    /// A derived counter's expression, as written.
    Derived(String),
}

/// One definition of a counter, for some architectures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchDef {
    /// The gfx names (chips like `gfx1100`, or families like `gfx11`) it applies to.
    pub architectures: Vec<String>,
    /// A description particular to these architectures (older schema only).
    pub description: Option<String>,
    /// The event or expression.
    pub body: DefBody,
}

/// A counter as the file defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDef {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The `properties` list (2025 schema), as text.
    pub properties: Vec<String>,
    /// Its definitions, in file order.
    pub definitions: Vec<ArchDef>,
}

impl CounterDef {
    /// The definition for an agent named `gfx`: one listing `gfx` itself, else one listing
    /// its family; with the key that matched.
    pub fn definition_for(&self, gfx: &str) -> Option<(&ArchDef, &str)> {
        let exact = self
            .definitions
            .iter()
            .find_map(|d| d.architectures.iter().find(|a| *a == gfx).map(|a| (d, a)));
        let found = exact.or_else(|| {
            let family = gfx_family(gfx)?;
            self.definitions.iter().find_map(|d| {
                d.architectures
                    .iter()
                    .find(|a| **a == family)
                    .map(|a| (d, a))
            })
        });
        found.map(|(d, a)| (d, a.as_str()))
    }
}

/// A parsed definitions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definitions {
    origin: String,
    schema: Schema,
    counters: Vec<CounterDef>,
}

fn scalar_text(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn field<'y>(h: &'y Hash, key: &str) -> Option<&'y Yaml> {
    h.get(&Yaml::String(key.to_owned()))
}

impl Definitions {
    /// Reads the definitions from `source`.
    pub fn load(source: &DefsSource) -> Result<Definitions, Error> {
        match source.path() {
            None => Definitions::built_in(),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::Definitions {
                    origin: source.origin(),
                    message: format!("cannot be read: {e}"),
                })?;
                Definitions::parse(&source.origin(), &text)
            }
        }
    }

    /// This crate's own definitions for the simulated GPU.
    pub fn built_in() -> Result<Definitions, Error> {
        Definitions::parse(BUILT_IN_ORIGIN, BUILT_IN_YAML)
    }

    /// Parses a definitions file of either schema; `origin` names it in errors. A malformed
    /// entry fails the whole file (naming the entry); expressions are parsed only when a
    /// counter is resolved for an agent.
    pub fn parse(origin: &str, text: &str) -> Result<Definitions, Error> {
        let fail = |message: String| Error::Definitions {
            origin: origin.to_owned(),
            message,
        };
        let docs =
            YamlLoader::load_from_str(text).map_err(|e| fail(format!("not valid YAML: {e}")))?;
        let Some(Yaml::Hash(top)) = docs.first() else {
            return Err(fail("the document is not a mapping of counters".into()));
        };
        let (schema, counters) = match field(top, "rocprofiler-sdk") {
            Some(root) => parse_current(root).map_err(fail)?,
            None => (Schema::Legacy, parse_legacy(top).map_err(fail)?),
        };
        Ok(Definitions {
            origin: origin.to_owned(),
            schema,
            counters,
        })
    }

    /// Reads extra definitions (rocprofv3's `-E/--extra-counters`) from the file at `path`,
    /// in either schema; a missing, unreadable or malformed file fails naming it.
    pub fn load_extra(path: &Path) -> Result<Definitions, Error> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Definitions {
            origin: origin.clone(),
            message: format!("cannot be read: {e}"),
        })?;
        let extra = Definitions::parse(&origin, &text)?;
        if extra.counters.is_empty() {
            return Err(Error::Definitions {
                origin,
                message: "defines no counter".into(),
            });
        }
        Ok(extra)
    }

    /// These definitions with `extra`'s added: a counter `extra` defines replaces the one of
    /// the same name entirely (all its architectures), a new one is appended in `extra`'s
    /// order. The origin names both.
    pub fn extended(mut self, extra: &Definitions) -> Definitions {
        for c in &extra.counters {
            match self.counters.iter_mut().find(|o| o.name == c.name) {
                Some(old) => *old = c.clone(),
                None => self.counters.push(c.clone()),
            }
        }
        self.origin = format!("{} + {}", self.origin, extra.origin);
        self
    }

    /// Where they came from (a path, or `built-in`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The file's schema.
    pub fn schema(&self) -> Schema {
        self.schema
    }

    /// Every counter, in file order.
    pub fn counters(&self) -> &[CounterDef] {
        &self.counters
    }

    /// The counters of `agent`, resolved. A CPU agent has none.
    pub fn for_agent(&self, agent: &Agent) -> AgentCounters {
        resolve(self, agent)
    }
}

fn parse_body(h: &Hash, what: &dyn Fn() -> String) -> Result<DefBody, String> {
    let block = field(h, "block");
    let event = field(h, "event");
    let expression = field(h, "expression");
    match (block, event, expression) {
        (Some(b), Some(e), None) => {
            let block = scalar_text(b)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("{}: `block` is not a name", what()))?;
            let event = match e {
                Yaml::Integer(i) => u32::try_from(*i).ok(),
                Yaml::String(s) => s.trim().parse::<u32>().ok(),
                _ => None,
            }
            .ok_or_else(|| format!("{}: `event` is not an event id (0 to 2^32-1)", what()))?;
            Ok(DefBody::Base(BaseEvent {
                block: Block::from_name(&block),
                event,
            }))
        }
        (None, None, Some(x)) => {
            Ok(DefBody::Derived(scalar_text(x).ok_or_else(|| {
                format!("{}: `expression` is not text", what())
            })?))
        }
        _ => Err(format!(
            "{}: expected either `block` and `event`, or `expression`",
            what()
        )),
    }
}

fn architectures<'y>(
    items: impl Iterator<Item = &'y Yaml>,
    what: &dyn Fn() -> String,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in items {
        let text = scalar_text(item)
            .ok_or_else(|| format!("{}: an architecture is not a name", what()))?;
        out.extend(
            text.split('/')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    if out.is_empty() {
        return Err(format!("{}: no architectures", what()));
    }
    Ok(out)
}

fn parse_current(root: &Yaml) -> Result<(Schema, Vec<CounterDef>), String> {
    let Yaml::Hash(root) = root else {
        return Err("`rocprofiler-sdk` is not a mapping".into());
    };
    let version = match field(root, "counters-schema-version") {
        Some(Yaml::Integer(v)) => *v,
        Some(_) => return Err("`counters-schema-version` is not an integer".into()),
        None => return Err("`rocprofiler-sdk` has no `counters-schema-version`".into()),
    };
    let Some(Yaml::Array(items)) = field(root, "counters") else {
        return Err("`rocprofiler-sdk` has no `counters` list".into());
    };
    let mut counters = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Yaml::Hash(c) = item else {
            return Err(format!("counter #{} is not a mapping", i + 1));
        };
        let name = field(c, "name")
            .and_then(scalar_text)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("counter #{} has no name", i + 1))?;
        let description = field(c, "description")
            .and_then(scalar_text)
            .unwrap_or_default();
        let properties = match field(c, "properties") {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Array(p)) => p.iter().filter_map(scalar_text).collect(),
            Some(_) => return Err(format!("counter {name}: `properties` is not a list")),
        };
        let Some(Yaml::Array(defs)) = field(c, "definitions") else {
            return Err(format!("counter {name} has no `definitions` list"));
        };
        let mut definitions = Vec::with_capacity(defs.len());
        for (j, d) in defs.iter().enumerate() {
            let what = || format!("counter {name}, definition #{}", j + 1);
            let Yaml::Hash(d) = d else {
                return Err(format!("{} is not a mapping", what()));
            };
            let archs = match field(d, "architectures") {
                Some(Yaml::Array(a)) => architectures(a.iter(), &what)?,
                Some(other) => architectures(std::iter::once(other), &what)?,
                None => return Err(format!("{} has no `architectures`", what())),
            };
            definitions.push(ArchDef {
                architectures: archs,
                description: None,
                body: parse_body(d, &what)?,
            });
        }
        counters.push(CounterDef {
            name,
            description,
            properties,
            definitions,
        });
    }
    Ok((Schema::Current { version }, counters))
}

fn parse_legacy(top: &Hash) -> Result<Vec<CounterDef>, String> {
    let mut counters = Vec::with_capacity(top.len());
    for (key, value) in top {
        let name = scalar_text(key)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| "a counter's name is not text".to_owned())?;
        let Yaml::Hash(c) = value else {
            return Err(format!("counter {name} is not a mapping"));
        };
        let description = field(c, "description")
            .and_then(scalar_text)
            .unwrap_or_default();
        let Some(Yaml::Hash(archs)) = field(c, "architectures") else {
            return Err(format!(
                "counter {name} has no `architectures` mapping (and the file has no \
                 `rocprofiler-sdk` section)"
            ));
        };
        let mut definitions = Vec::with_capacity(archs.len());
        for (akey, adef) in archs {
            let label = scalar_text(akey).unwrap_or_default();
            let what = || format!("counter {name}, architectures {label}");
            let Yaml::Hash(d) = adef else {
                return Err(format!("{} is not a mapping", what()));
            };
            definitions.push(ArchDef {
                architectures: architectures(std::iter::once(akey), &what)?,
                description: field(d, "description").and_then(scalar_text),
                body: parse_body(d, &what)?,
            });
        }
        counters.push(CounterDef {
            name,
            description,
            properties: Vec::new(),
            definitions,
        });
    }
    Ok(counters)
}

// ---------------------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------------------

/// The gfx family of a target: `gfx` and its major version, i.e. everything between `gfx` and
/// the last two characters (minor digit, stepping hex digit): gfx1150 → gfx11, gfx1036 →
/// gfx10, gfx942 → gfx9, gfx90a → gfx9. `None` for a name that is not a full target (`gfx11`
/// itself, `gfx9`, or anything not shaped `gfx<digits><digit><hex digit>`).
pub fn gfx_family(gfx: &str) -> Option<String> {
    let rest = gfx.strip_prefix("gfx")?;
    if rest.len() < 3 || !rest.is_ascii() {
        return None;
    }
    let (major, tail) = rest.split_at(rest.len() - 2);
    let t = tail.as_bytes();
    let ok = major.bytes().all(|b| b.is_ascii_digit())
        && !major.starts_with('0')
        && t[0].is_ascii_digit()
        && t[1].is_ascii_hexdigit()
        && !t[1].is_ascii_uppercase();
    ok.then(|| format!("gfx{major}"))
}

/// The agent properties upstream makes constants of (the KFD topology names its
/// `get_agent_property` knows), in its order.
pub const AGENT_PROPERTIES: [&str; 29] = [
    "cpu_cores_count",
    "simd_count",
    "mem_banks_count",
    "caches_count",
    "io_links_count",
    "cpu_core_id_base",
    "simd_id_base",
    "max_waves_per_simd",
    "lds_size_in_kb",
    "gds_size_in_kb",
    "num_gws",
    "wave_front_size",
    "array_count",
    "simd_arrays_per_engine",
    "cu_per_simd_array",
    "simd_per_cu",
    "max_slots_scratch_cu",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "location_id",
    "domain",
    "drm_render_minor",
    "hive_id",
    "num_sdma_engines",
    "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine",
    "num_cp_queues",
    "max_engine_clk_ccompute",
];

/// The named constants this crate defines when the file does not, with their expressions.
pub const NAMED_CONSTANTS: [(&str, &str, &str); 4] = [
    ("CU_NUM", "simd_count/simd_per_cu", "Compute units"),
    ("SIMD_NUM", "simd_count", "SIMDs"),
    (
        "SE_NUM",
        "array_count/simd_arrays_per_engine",
        "Shader engines",
    ),
    ("MAX_WAVE_SIZE", "wave_front_size", "Work-items per wave"),
];

/// The value of one of [`AGENT_PROPERTIES`] for `agent` (as upstream: the integer property,
/// through a signed 64-bit integer, as a double). Properties this platform does not report
/// (memory banks, caches, I/O links, CPU core and SIMD id bases, DRM render minor) are 0, as
/// is every GPU property of a CPU agent. `None` for a name that is not a property.
pub fn agent_property(agent: &Agent, name: &str) -> Option<f64> {
    let g = agent.gpu.clone().unwrap_or_default();
    let v: u64 = match name {
        "cpu_cores_count" => agent.cpu_cores_count.into(),
        "simd_count" => g.simd_count.into(),
        "mem_banks_count" | "caches_count" | "io_links_count" | "cpu_core_id_base"
        | "simd_id_base" | "drm_render_minor" => 0,
        "max_waves_per_simd" => g.max_waves_per_simd.into(),
        "lds_size_in_kb" => g.lds_size_in_kb.into(),
        "gds_size_in_kb" => g.gds_size_in_kb.into(),
        "num_gws" => g.num_gws.into(),
        "wave_front_size" => g.wave_front_size.into(),
        "array_count" => g.array_count.into(),
        "simd_arrays_per_engine" => g.simd_arrays_per_engine.into(),
        "cu_per_simd_array" => g.cu_per_simd_array.into(),
        "simd_per_cu" => g.simd_per_cu.into(),
        "max_slots_scratch_cu" => g.max_slots_scratch_cu.into(),
        "gfx_target_version" => g.gfx_target_version.into(),
        "vendor_id" => g.vendor_id.into(),
        "device_id" => g.device_id.into(),
        "location_id" => g.location_id.into(),
        "domain" => g.domain.into(),
        "hive_id" => g.hive_id,
        "num_sdma_engines" => g.num_sdma_engines.into(),
        "num_sdma_xgmi_engines" => g.num_sdma_xgmi_engines.into(),
        "num_sdma_queues_per_engine" => g.num_sdma_queues_per_engine.into(),
        "num_cp_queues" => g.num_cp_queues.into(),
        "max_engine_clk_ccompute" => g.max_engine_clk_ccompute.into(),
        _ => return None,
    };
    Some(v as i64 as f64)
}

/// aqlprofile's WGPs per shader array ([`crate::pm4::wgp_per_sa`]), at least 1, with 0
/// shader engines or arrays taken as 1.
pub fn wgp_per_sa(cu: u32, se: u32, sa_per_se: u32) -> u32 {
    let wgp = crate::pm4::wgp_per_sa(cu, se.max(1), sa_per_se.max(1)).unwrap_or(1);
    // At most cu / 2.
    (wgp as u32).max(1)
}

/// How many values a base counter of each kind has on an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Shader engines (KFD `num_shader_banks`).
    pub se: u32,
    /// Shader arrays read per engine (aqlprofile's loop bound: 2 on gfx11).
    pub sa: u32,
    /// WGPs per shader array ([`wgp_per_sa`]).
    pub wgp: u32,
    /// XCCs.
    pub xcc: u32,
}

impl Layout {
    /// The shader arrays aqlprofile reads per engine on gfx11 (hard-coded, not the agent's
    /// `simd_arrays_per_engine`).
    pub const SA_PER_SE_READ: u32 = crate::pm4::SA_PER_SE;

    /// The largest extent a dimension can have: an instance id keeps each coordinate in 6
    /// bits. Larger topology values (which no GPU has) are cut to it.
    pub const MAX_EXTENT: u32 = crate::pm4::MAX_INSTANCES_PER_DIMENSION;

    /// The layout of a GPU agent (`None` for a CPU). Wherever [`crate::pm4::Geometry::of`]
    /// accepts the agent's [`Topology`], the SQ shape has exactly the samples the read takes,
    /// in the same order.
    pub fn of(agent: &Agent) -> Option<Layout> {
        let topo = Topology::of(agent)?;
        Some(Layout {
            se: topo.se.min(Self::MAX_EXTENT),
            sa: Self::SA_PER_SE_READ,
            wgp: wgp_per_sa(topo.cu, topo.se, topo.sa).min(Self::MAX_EXTENT),
            xcc: topo.xcc.min(Self::MAX_EXTENT),
        })
    }

    /// The shape of a base counter of `block`.
    pub fn shape(&self, block: &Block) -> Shape {
        let mut dims = vec![(Dim::Instance, 1)];
        if *block == Block::Sq {
            dims.extend([
                (Dim::Wgp, self.wgp),
                (Dim::ShaderArray, self.sa),
                (Dim::ShaderEngine, self.se),
            ]);
        }
        if self.xcc > 1 {
            dims.push((Dim::Xcc, self.xcc));
        }
        Shape::new(dims)
    }
}

/// What kind of counter an agent's counter is.
#[derive(Debug, Clone, PartialEq)]
pub enum CounterKind {
    /// A hardware event.
    Base(BaseEvent),
    /// A derived counter.
    Derived {
        /// Its expression as the file has it (what rocprofv3-avail prints).
        expression: String,
        /// Parsed.
        parsed: Expr,
    },
    /// An agent-property constant and its value.
    Constant(f64),
}

/// A counter available on an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Its id on this agent: the property constants first, then the file's counters in file
    /// order (every definition for the agent takes an id, resolved or not), then the named
    /// constants this crate adds.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Base, derived or constant.
    pub kind: CounterKind,
    /// The dimensions of its values.
    pub dimensions: Shape,
    /// The architecture key its definition matched: the agent's gfx name, its family, `agent`
    /// for a property, `built-in` for a named constant this crate added.
    pub arch: String,
    /// The base counters it needs, in order of first use (a base counter needs itself; a
    /// constant nothing).
    pub inputs: Vec<Input>,
}

impl Counter {
    /// Whether this build can collect it: every base counter it needs is an SQ or GRBM one.
    pub fn is_collectable(&self) -> bool {
        self.inputs
            .iter()
            .all(|i| matches!(i.event.block, Block::Sq | Block::Grbm))
    }
}

/// A definition for the agent that could not be resolved.
#[derive(Debug, PartialEq)]
pub struct Unresolved {
    /// The id it would have had.
    pub id: u32,
    /// The counter.
    pub name: String,
    /// The architecture key of the definition.
    pub arch: String,
    /// Why: [`Error::Parse`], [`Error::UnknownInput`], [`Error::Evaluate`] (an unusable
    /// input, a self-reference, shapes that do not combine), or [`Error::Definitions`] (a
    /// second definition of a name).
    pub reason: Error,
}

impl Clone for Unresolved {
    fn clone(&self) -> Self {
        Unresolved {
            id: self.id,
            name: self.name.clone(),
            arch: self.arch.clone(),
            reason: duplicate(&self.reason),
        }
    }
}

/// A copy of an error of the definitions kind (the crate's `Error` is not `Clone`); any other
/// kind is carried over as its message.
fn duplicate(e: &Error) -> Error {
    match e {
        Error::Definitions { origin, message } => Error::Definitions {
            origin: origin.clone(),
            message: message.clone(),
        },
        Error::Parse {
            counter,
            expression,
            position,
            expected,
        } => Error::Parse {
            counter: counter.clone(),
            expression: expression.clone(),
            position: *position,
            expected: expected.clone(),
        },
        Error::Evaluate { counter, message } => Error::Evaluate {
            counter: counter.clone(),
            message: message.clone(),
        },
        Error::UnknownInput { counter, input } => Error::UnknownInput {
            counter: counter.clone(),
            input: input.clone(),
        },
        Error::UnknownCounter { name, gfx } => Error::UnknownCounter {
            name: name.clone(),
            gfx: gfx.clone(),
        },
        other => Error::Evaluate {
            counter: String::new(),
            message: other.to_string(),
        },
    }
}

/// The counters of one agent, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCounters {
    gfx: String,
    origin: String,
    family_fallback: bool,
    layout: Option<Layout>,
    counters: Vec<Counter>,
    unresolved: Vec<Unresolved>,
    index: HashMap<String, usize>,
}

enum Entry {
    Constant(f64),
    Base(BaseEvent),
    Derived { source: String, expr: Expr },
    Failed(Error),
}

impl Entry {
    /// `counter`'s expression `text`, parsed (or why it does not parse).
    fn derived(counter: &str, text: &str) -> Entry {
        match Expr::parse(counter, text) {
            Ok(expr) => Entry::Derived {
                source: text.to_owned(),
                expr,
            },
            Err(e) => Entry::Failed(e),
        }
    }
}

struct Pending {
    id: u32,
    name: String,
    description: String,
    arch: String,
    entry: Entry,
}

fn resolve(defs: &Definitions, agent: &Agent) -> AgentCounters {
    let mut out = AgentCounters {
        gfx: agent.name.clone(),
        origin: defs.origin.clone(),
        family_fallback: false,
        layout: Layout::of(agent),
        counters: Vec::new(),
        unresolved: Vec::new(),
        index: HashMap::new(),
    };
    let Some(layout) = out.layout else {
        return out;
    };
    let gfx = agent.name.as_str();

    let mut pending: Vec<Pending> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut push = |pending: &mut Vec<Pending>, p: Pending| {
        by_name.insert(p.name.clone(), pending.len());
        pending.push(p);
    };
    for name in AGENT_PROPERTIES {
        let id = pending.len() as u32;
        push(
            &mut pending,
            Pending {
                id,
                name: name.to_owned(),
                description: format!("Constant value {name} from agent properties"),
                arch: "agent".to_owned(),
                entry: Entry::Constant(agent_property(agent, name).unwrap_or(0.0)),
            },
        );
    }
    let mut next_id = pending.len() as u32;
    for c in &defs.counters {
        let Some((def, key)) = c.definition_for(gfx) else {
            continue;
        };
        let id = next_id;
        next_id += 1;
        if key != gfx {
            out.family_fallback = true;
        }
        if pending.iter().any(|p| p.name == c.name) {
            out.unresolved.push(Unresolved {
                id,
                name: c.name.clone(),
                arch: key.to_owned(),
                reason: Error::Definitions {
                    origin: defs.origin.clone(),
                    message: format!("{} is defined again; its first definition is used", c.name),
                },
            });
            continue;
        }
        let entry = match &def.body {
            DefBody::Base(ev) => Entry::Base(ev.clone()),
            DefBody::Derived(text) => Entry::derived(&c.name, text),
        };
        push(
            &mut pending,
            Pending {
                id,
                name: c.name.clone(),
                description: def
                    .description
                    .clone()
                    .unwrap_or_else(|| c.description.clone()),
                arch: key.to_owned(),
                entry,
            },
        );
    }
    for (name, text, what) in NAMED_CONSTANTS {
        if pending.iter().any(|p| p.name == name) {
            continue;
        }
        let id = next_id;
        next_id += 1;
        let entry = Entry::derived(name, text);
        push(
            &mut pending,
            Pending {
                id,
                name: name.to_owned(),
                description: format!("{what} ({text}; defined by rocprof)"),
                arch: BUILT_IN_ORIGIN.to_owned(),
                entry,
            },
        );
    }

    let binding = |name: &str| -> Option<Binding<'_>> {
        let p = &pending[*by_name.get(name)?];
        Some(match &p.entry {
            Entry::Constant(v) => Binding::Constant(*v),
            Entry::Base(ev) => Binding::Base {
                event: ev.clone(),
                shape: layout.shape(&ev.block),
            },
            Entry::Derived { expr, .. } => Binding::Derived(expr),
            Entry::Failed(e) => Binding::Unusable(e.to_string()),
        })
    };

    for p in &pending {
        let (kind, dimensions, inputs) = match &p.entry {
            Entry::Constant(v) => (CounterKind::Constant(*v), Shape::single(), Vec::new()),
            Entry::Base(ev) => {
                let shape = layout.shape(&ev.block);
                let input = Input {
                    name: p.name.clone(),
                    event: ev.clone(),
                    accumulate: AccumulateMode::None,
                    shape: shape.clone(),
                };
                (CounterKind::Base(ev.clone()), shape, vec![input])
            }
            Entry::Derived { source, expr } => {
                match Program::compile(&[(p.name.as_str(), expr)], &binding) {
                    Ok(program) => (
                        CounterKind::Derived {
                            expression: source.clone(),
                            parsed: expr.clone(),
                        },
                        program.outputs()[0].shape.clone(),
                        program.inputs().to_vec(),
                    ),
                    Err(reason) => {
                        out.unresolved.push(Unresolved {
                            id: p.id,
                            name: p.name.clone(),
                            arch: p.arch.clone(),
                            reason,
                        });
                        continue;
                    }
                }
            }
            Entry::Failed(reason) => {
                out.unresolved.push(Unresolved {
                    id: p.id,
                    name: p.name.clone(),
                    arch: p.arch.clone(),
                    reason: duplicate(reason),
                });
                continue;
            }
        };
        out.index.insert(p.name.clone(), out.counters.len());
        out.counters.push(Counter {
            id: p.id,
            name: p.name.clone(),
            description: p.description.clone(),
            kind,
            dimensions,
            arch: p.arch.clone(),
            inputs,
        });
    }
    out.unresolved.sort_by_key(|u| u.id);
    out
}

impl AgentCounters {
    /// The agent's gfx target.
    pub fn gfx(&self) -> &str {
        &self.gfx
    }

    /// Where the definitions came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether any counter was found only under the agent's family key (e.g. `gfx11` for
    /// gfx1150), which rocprofiler-sdk itself would not have found.
    pub fn family_fallback(&self) -> bool {
        self.family_fallback
    }

    /// The agent's counter layout (`None` for a CPU agent).
    pub fn layout(&self) -> Option<Layout> {
        self.layout
    }

    /// Every counter available, in id order.
    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    /// The counter of that name.
    pub fn get(&self, name: &str) -> Option<&Counter> {
        self.index.get(name).map(|&i| &self.counters[i])
    }

    /// The definitions for this agent that could not be resolved, in id order.
    pub fn unresolved(&self) -> &[Unresolved] {
        &self.unresolved
    }

    fn counter(&self, name: &str) -> Result<&Counter, Error> {
        if let Some(c) = self.get(name) {
            return Ok(c);
        }
        if let Some(u) = self.unresolved.iter().find(|u| u.name == name) {
            return Err(duplicate(&u.reason));
        }
        Err(Error::UnknownCounter {
            name: name.to_owned(),
            gfx: self.gfx.clone(),
        })
    }

    /// The base counters `name` needs, with accumulation modes, in order of first use.
    pub fn inputs(&self, name: &str) -> Result<&[Input], Error> {
        Ok(&self.counter(name)?.inputs)
    }

    /// The distinct base counters `name` needs, in order of first use in its fully expanded
    /// expression (for pass planning). A counter used with two accumulation modes appears once
    /// here; [`AgentCounters::inputs`] has both.
    pub fn expand(&self, name: &str) -> Result<Vec<(String, BaseEvent)>, Error> {
        let mut out: Vec<(String, BaseEvent)> = Vec::new();
        for i in &self.counter(name)?.inputs {
            if !out.iter().any(|(n, _)| *n == i.name) {
                out.push((i.name.clone(), i.event.clone()));
            }
        }
        Ok(out)
    }

    /// Compiles counters of this agent (any kind) into one [`Program`] whose inputs are their
    /// base counters; evaluate it once per dispatch.
    pub fn prepare(&self, names: &[&str]) -> Result<Program, Error> {
        let mut exprs = Vec::with_capacity(names.len());
        for &name in names {
            let c = self.counter(name)?;
            exprs.push(match &c.kind {
                CounterKind::Derived { parsed, .. } => parsed.clone(),
                CounterKind::Base(_) | CounterKind::Constant(_) => Expr::Name(name.to_owned()),
            });
        }
        let list: Vec<(&str, &Expr)> = names.iter().copied().zip(exprs.iter()).collect();
        let binding = |n: &str| -> Option<Binding<'_>> {
            let c = self.get(n)?;
            Some(match &c.kind {
                CounterKind::Constant(v) => Binding::Constant(*v),
                CounterKind::Base(ev) => Binding::Base {
                    event: ev.clone(),
                    shape: c.dimensions.clone(),
                },
                CounterKind::Derived { parsed, .. } => Binding::Derived(parsed),
            })
        };
        Program::compile(&list, &binding)
    }
}
