//! `--output-config`: `<prefix>_config.json`, the run's configuration, once per process output
//! prefix (staged and renamed into place with the process's other files).
//!
//! The layout is rocprofv3's (its documentation's sample): `{"rocprofiler-sdk-tool":
//! [{"metadata": {pid, init_time, fini_time, config, command, build_spec}}]}`, the `config`
//! keys named as upstream's tool names its settings (`hip_runtime_api_trace`, `kernel_trace`,
//! `kernel_filter_include`, `demangle`, `minimum_output_bytes`, …) followed by its output
//! configuration's ([`output_config`]: `output_path`, `raw_output_path`, `perfetto_*`,
//! `summary*`, `csv_output`, …, `group_by_queue`), which is also the results JSON's
//! `metadata.config`. Upstream's tool has more keys than the fact sheets explain, so `config`
//! holds those whose meaning is known, and
//! `metadata.rocprof` holds this rocprof's own resolved settings as typed data (the tracing
//! selection, the output settings and the counter pass, exactly as `run.json` keeps them).
//! Upstream's `environment` section (every variable of the application) is not written: the
//! conversion may run later, in another environment, and the application's environment can
//! hold secrets a configuration file should not spread.

use crate::placeholders::Context;
use crate::plan::{FillPolicy, OutputFormat, OutputSettings, Selection};
use crate::record_dir::RunManifest;
use pmc_dxg::collection::CounterPlan;
use serde::Serialize;
use trace_export::json::OutputConfig;
use trace_records::ProcessTrace;

/// The file's document.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// One entry: this process.
    #[serde(rename = "rocprofiler-sdk-tool")]
    pub tool: [Entry<'a>; 1],
}

/// One process's entry.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    /// Everything there is.
    pub metadata: Metadata<'a>,
}

/// `metadata`.
#[derive(Debug, Serialize)]
pub struct Metadata<'a> {
    /// The process id.
    pub pid: u32,
    /// When the tool started in it (its record log's creation), ns.
    pub init_time: u64,
    /// The latest end of any of its records, ns.
    pub fini_time: u64,
    /// The settings, with upstream's names.
    pub config: Config,
    /// The application's command line.
    pub command: &'a [String],
    /// What wrote the file.
    pub build_spec: BuildSpec,
    /// This rocprof's resolved settings.
    pub rocprof: Resolved<'a>,
}

/// `metadata.config`, upstream's names: the tool's settings, then the output configuration.
#[derive(Debug, Serialize)]
pub struct Config {
    pub hip_runtime_api_trace: bool,
    pub hip_compiler_api_trace: bool,
    pub hsa_core_api_trace: bool,
    pub hsa_amd_ext_api_trace: bool,
    pub hsa_image_ext_api_trace: bool,
    pub hsa_finalizer_ext_api_trace: bool,
    pub marker_api_trace: bool,
    pub kernel_trace: bool,
    pub memory_copy_trace: bool,
    pub memory_allocation_trace: bool,
    pub scratch_memory_trace: bool,
    pub counter_collection: bool,
    pub counters: Vec<String>,
    pub advanced_thread_trace: bool,
    pub kernel_filter_include: String,
    pub kernel_filter_exclude: String,
    pub demangle: bool,
    pub truncate: bool,
    pub stats: bool,
    pub minimum_output_bytes: u64,
    pub output_config_file: bool,
    /// The output configuration (upstream serializes its base settings last).
    #[serde(flatten)]
    pub output: OutputConfig,
}

/// `metadata.build_spec`.
#[derive(Debug, Serialize)]
pub struct BuildSpec {
    pub name: &'static str,
    pub version: &'static str,
    pub system_name: &'static str,
    pub system_processor: &'static str,
}

/// `metadata.rocprof`: the run's settings as `run.json` keeps them.
#[derive(Debug, Serialize)]
pub struct Resolved<'a> {
    pub selection: &'a Selection,
    pub kernel_include_regex: Option<&'a str>,
    pub kernel_exclude_regex: Option<&'a str>,
    pub outputs: &'a OutputSettings,
    pub counters: Option<&'a CounterPlan>,
}

/// The output configuration of the settings `s` for the process of `ctx` (the results JSON's
/// `metadata.config`, and the end of this file's): the output directory and name expanded
/// for it (the directory absolute) and as given, the temporary directory (`%cwd%`, this
/// build has no option for it), the Perfetto, summary and format settings.
pub fn output_config(s: &OutputSettings, ctx: &Context<'_>) -> OutputConfig {
    let format = |f| s.formats.contains(&f);
    const TMP: &str = "%cwd%";
    let summary_file = match s.summary_options.output_file.as_deref() {
        None => "stderr".to_owned(),
        // rocprofv3 lower-cases the two streams' names for its tool.
        Some(f) if f.eq_ignore_ascii_case("stdout") || f.eq_ignore_ascii_case("stderr") => {
            f.to_ascii_lowercase()
        }
        Some(f) => f.to_owned(),
    };
    OutputConfig {
        output_path: s.base.join(ctx.expand(&s.directory)).display().to_string(),
        output_file: ctx.expand(&s.file),
        tmp_directory: ctx.expand(TMP),
        raw_output_path: s.directory.clone(),
        raw_output_file: s.file.clone(),
        raw_tmp_directory: TMP.to_owned(),
        perfetto_shmem_size_hint: s.perfetto.shmem_size_hint_kb,
        // KB; 0 when not given (the trace is not limited).
        perfetto_buffer_size: s.perfetto.buffer_size_kb.unwrap_or(0),
        perfetto_buffer_fill_policy: match s.perfetto.fill_policy {
            FillPolicy::Discard => "discard",
            FillPolicy::RingBuffer => "ring_buffer",
        }
        .to_owned(),
        perfetto_backend: "inprocess".to_owned(),
        summary: s.summary,
        summary_per_domain: s.summary_options.per_domain,
        summary_groups: s.summary_options.groups.clone(),
        summary_unit: s.summary_options.units.label().to_owned(),
        summary_file,
        csv_output: format(OutputFormat::Csv),
        json_output: format(OutputFormat::Json),
        pftrace_output: format(OutputFormat::Pftrace),
        otf2_output: format(OutputFormat::Otf2),
        summary_output: s.summary_wanted(),
        rocpd_output: format(OutputFormat::Rocpd),
        kernel_rename: s.kernel_rename,
        group_by_queue: s.perfetto.group_by_queue,
    }
}

/// The document for process `t` of the run `m`, whose output configuration is `output`
/// ([`output_config`]).
pub fn document<'a>(m: &'a RunManifest, t: &ProcessTrace, output: OutputConfig) -> Document<'a> {
    let s = &m.outputs;
    let sel = &m.selection;
    let fini = t
        .api
        .iter()
        .map(|r| r.end)
        .chain(t.dispatches.iter().map(|d| d.end))
        .chain(t.copies.iter().map(|c| c.end))
        .chain(t.markers.iter().map(|k| k.end))
        .max()
        .unwrap_or(t.created_ns)
        .max(t.created_ns);
    let config = Config {
        hip_runtime_api_trace: sel.hip_runtime,
        hip_compiler_api_trace: sel.hip_compiler,
        hsa_core_api_trace: sel.hsa_core,
        hsa_amd_ext_api_trace: sel.hsa_amd,
        hsa_image_ext_api_trace: sel.hsa_image,
        hsa_finalizer_ext_api_trace: sel.hsa_finalizer,
        marker_api_trace: sel.markers,
        kernel_trace: sel.kernels,
        memory_copy_trace: sel.copies,
        memory_allocation_trace: sel.memory_allocations,
        scratch_memory_trace: sel.scratch_memory,
        counter_collection: m.counters.is_some(),
        counters: m
            .counters
            .as_ref()
            .map(|c| c.requested.clone())
            .unwrap_or_default(),
        advanced_thread_trace: m.thread_trace.is_some(),
        kernel_filter_include: m
            .kernel_include_regex
            .clone()
            .unwrap_or_else(|| ".*".into()),
        kernel_filter_exclude: m.kernel_exclude_regex.clone().unwrap_or_default(),
        demangle: !s.mangled_kernels,
        truncate: s.truncate_kernels,
        stats: s.stats,
        minimum_output_bytes: s.minimum_output_bytes,
        output_config_file: s.output_config,
        output,
    };
    Document {
        tool: [Entry {
            metadata: Metadata {
                pid: t.pid,
                init_time: t.created_ns,
                fini_time: fini,
                config,
                command: &m.launch.argv,
                build_spec: BuildSpec {
                    name: "rocprof-wsl",
                    version: env!("CARGO_PKG_VERSION"),
                    system_name: "Linux",
                    system_processor: std::env::consts::ARCH,
                },
                rocprof: Resolved {
                    selection: &m.selection,
                    kernel_include_regex: m.kernel_include_regex.as_deref(),
                    kernel_exclude_regex: m.kernel_exclude_regex.as_deref(),
                    outputs: &m.outputs,
                    counters: m.counters.as_ref(),
                },
            },
        }],
    }
}
