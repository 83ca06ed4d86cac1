//! The tool's configuration, read once from the environment (`ROCPROF_*`, rocprofv3's names).

use std::path::PathBuf;
use trace_records::docs::{CounterRequest, ThreadTraceRequest, TracingConfig};
use trace_records::env;
use trace_records::ranges::{IterationRanges, Periods};

/// What to trace (the log's typed form, so the discovery document carries it as is) and where
/// the records go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// One flag per `ROCPROF_*_TRACE` variable.
    pub tracing: TracingConfig,
    /// Directory of the record logs.
    pub record_dir: PathBuf,
    /// The counters to collect around dispatches (`Err` says why the request is unreadable).
    pub counters: Option<Result<CounterRequest, String>>,
    /// The thread trace to capture around dispatches (`Err` says why the request is
    /// unreadable).
    pub thread_trace: Option<Result<ThreadTraceRequest, String>>,
    /// `--selected-regions`: instruments only between `roctxProfilerResume(0)` and
    /// `roctxProfilerPause(0)`.
    pub selected_regions: bool,
    /// The kernel filters of counter collection (rocprofv3's include and exclude regexes).
    pub kernel_include: Option<String>,
    /// See `kernel_include`.
    pub kernel_exclude: Option<String>,
    /// `--selected-regions-ref-count`: nested resume/pause pairs count.
    pub selected_regions_ref_count: bool,
    /// `--kernel-iteration-range` (`Err` says why the value is unreadable).
    pub iterations: Option<Result<IterationRanges, String>>,
    /// `-P/--collection-period` (`Err` says why the value is unreadable).
    pub periods: Option<Result<Periods, String>>,
    /// `--kernel-rename`: each dispatch notes the ROCTx range open on its launching thread.
    pub kernel_rename: bool,
    /// Capture the arguments and return values of HIP calls (an output shows them).
    pub api_arguments: bool,
}

/// rocprofv3's truth strings (surrounding blanks ignored); anything else is false.
pub fn truthy(v: &str) -> bool {
    env::parse_bool(v.trim()) == Ok(true)
}

impl Config {
    /// Reads the configuration through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let flag = |k: &str| get(k).is_some_and(|v| truthy(&v));
        Self {
            tracing: TracingConfig {
                hip_runtime: flag(env::HIP_RUNTIME_API_TRACE),
                hip_compiler: flag(env::HIP_COMPILER_API_TRACE),
                hsa_core: flag(env::HSA_CORE_API_TRACE),
                hsa_amd_ext: flag(env::HSA_AMD_EXT_API_TRACE),
                hsa_image: flag(env::HSA_IMAGE_EXT_API_TRACE),
                hsa_finalizer: flag(env::HSA_FINALIZER_EXT_API_TRACE),
                kernels: flag(env::KERNEL_TRACE),
                copies: flag(env::MEMORY_COPY_TRACE),
                markers: flag(env::MARKER_API_TRACE),
                memory_allocations: flag(env::MEMORY_ALLOCATION_TRACE),
                scratch_memory: flag(env::SCRATCH_MEMORY_TRACE),
            },
            record_dir: get(env::RECORD_DIR)
                .filter(|v| !v.is_empty())
                .or_else(|| get(env::OUTPUT_PATH).filter(|v| !v.is_empty()))
                .map_or_else(|| PathBuf::from("."), PathBuf::from),
            counters: get(env::COUNTERS).filter(|v| !v.is_empty()).map(|v| {
                serde_json::from_str(&v)
                    .map_err(|e| format!("{} is not a counter request: {e}", env::COUNTERS))
            }),
            thread_trace: get(env::THREAD_TRACE).filter(|v| !v.is_empty()).map(|v| {
                serde_json::from_str(&v).map_err(|e| {
                    format!("{} is not a thread-trace request: {e}", env::THREAD_TRACE)
                })
            }),
            selected_regions: flag(env::SELECTED_REGIONS),
            kernel_include: get(env::KERNEL_FILTER_INCLUDE_REGEX),
            kernel_exclude: get(env::KERNEL_FILTER_EXCLUDE_REGEX),
            selected_regions_ref_count: flag(env::SELECTED_REGIONS_REF_COUNT),
            iterations: get(env::KERNEL_FILTER_RANGE)
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    IterationRanges::parse(&v)
                        .map_err(|e| format!("{} is unreadable: {e}", env::KERNEL_FILTER_RANGE))
                }),
            periods: get(env::COLLECTION_PERIOD)
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    Periods::parse_env(&v)
                        .map_err(|e| format!("{} is unreadable: {e}", env::COLLECTION_PERIOD))
                }),
            kernel_rename: flag(env::KERNEL_RENAME),
            api_arguments: flag(env::API_ARGUMENTS),
        }
    }

    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Whether anything at all is traced or counted.
    pub fn any(&self) -> bool {
        self.tracing != TracingConfig::default()
            || self.counters.is_some()
            || self.thread_trace.is_some()
    }

    /// Whether kernel dispatches are intercepted (traced, or counted).
    pub fn dispatches(&self) -> bool {
        self.tracing.kernels
            || matches!(self.counters, Some(Ok(_)))
            || matches!(self.thread_trace, Some(Ok(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_accept_rocprofv3_truth_strings() {
        let c = Config::from_lookup(|k| match k {
            "ROCPROF_KERNEL_TRACE" => Some("1".into()),
            "ROCPROF_HIP_RUNTIME_API_TRACE" => Some("True".into()),
            "ROCPROF_MARKER_API_TRACE" => Some("0".into()),
            "ROCPROF_RECORD_DIR" => Some("/tmp/x".into()),
            _ => None,
        });
        let t = c.tracing;
        assert!(t.kernels && t.hip_runtime && !t.markers && !t.hsa_core);
        assert_eq!(c.record_dir, PathBuf::from("/tmp/x"));
        assert!(c.any());
        assert!(!Config::from_lookup(|_| None).any());
    }

    #[test]
    fn a_counter_request_is_typed_and_a_malformed_one_says_why() {
        let c = Config::from_lookup(|k| match k {
            "ROCPROF_WSL_COUNTERS" => {
                Some(r#"{"events":[{"name":"SQ_WAVES","block":"SQ","event":4}]}"#.into())
            }
            _ => None,
        });
        let request = c.counters.clone().unwrap().unwrap();
        assert_eq!(request.events[0].name, "SQ_WAVES");
        assert!(c.any() && c.dispatches() && !c.tracing.kernels);
        let bad = Config::from_lookup(|k| (k == "ROCPROF_WSL_COUNTERS").then(|| "pmc: SQ".into()));
        let why = bad.counters.unwrap().unwrap_err();
        assert!(why.contains("ROCPROF_WSL_COUNTERS"), "{why}");
        assert!(!bad.tracing.kernels);
    }

    #[test]
    fn scope_values_are_parsed_as_the_cli_wrote_them() {
        let c = Config::from_lookup(|k| match k {
            "ROCPROF_KERNEL_FILTER_RANGE" => Some("[2-3, 7]".into()),
            "ROCPROF_COLLECTION_PERIOD" => Some("0:1000:1;5:10:0".into()),
            "ROCPROF_KERNEL_RENAME" => Some("1".into()),
            "ROCPROF_SELECTED_REGIONS_REF_COUNT" => Some("yes".into()),
            _ => None,
        });
        let r = c.iterations.unwrap().unwrap();
        assert!(r.contains(2) && r.contains(3) && r.contains(7) && !r.contains(4));
        assert_eq!(c.periods.unwrap().unwrap().periods().len(), 2);
        assert!(c.kernel_rename && c.selected_regions_ref_count);
        let bad = Config::from_lookup(|k| (k == "ROCPROF_KERNEL_FILTER_RANGE").then(|| "0".into()));
        let why = bad.iterations.unwrap().unwrap_err();
        assert!(why.contains("ROCPROF_KERNEL_FILTER_RANGE"), "{why}");
        let none = Config::from_lookup(|_| None);
        assert!(none.iterations.is_none() && none.periods.is_none() && !none.kernel_rename);
    }
}
