//! The environment the `rocprof` CLI hands the profiled process (rocprofv3's variable names),
//! read by the tool library inside it: both sides name the variables from here.

/// Where the tool writes its record logs (`<dir>/<pid>.rplog`).
pub const RECORD_DIR: &str = "ROCPROF_RECORD_DIR";
/// rocprofv3's output path, the record directory's fallback.
pub const OUTPUT_PATH: &str = "ROCPROF_OUTPUT_PATH";
/// HIP runtime API tracing.
pub const HIP_RUNTIME_API_TRACE: &str = "ROCPROF_HIP_RUNTIME_API_TRACE";
/// HIP compiler API tracing.
pub const HIP_COMPILER_API_TRACE: &str = "ROCPROF_HIP_COMPILER_API_TRACE";
/// HSA core API tracing.
pub const HSA_CORE_API_TRACE: &str = "ROCPROF_HSA_CORE_API_TRACE";
/// HSA AMD-extension API tracing.
pub const HSA_AMD_EXT_API_TRACE: &str = "ROCPROF_HSA_AMD_EXT_API_TRACE";
/// HSA image-extension API tracing.
pub const HSA_IMAGE_EXT_API_TRACE: &str = "ROCPROF_HSA_IMAGE_EXT_API_TRACE";
/// HSA finalizer-extension API tracing.
pub const HSA_FINALIZER_EXT_API_TRACE: &str = "ROCPROF_HSA_FINALIZER_EXT_API_TRACE";
/// Kernel dispatch tracing.
pub const KERNEL_TRACE: &str = "ROCPROF_KERNEL_TRACE";
/// Memory copy tracing.
pub const MEMORY_COPY_TRACE: &str = "ROCPROF_MEMORY_COPY_TRACE";
/// ROCTx marker tracing.
pub const MARKER_API_TRACE: &str = "ROCPROF_MARKER_API_TRACE";
/// Memory allocation tracing (HSA pool and VMEM allocations and frees).
pub const MEMORY_ALLOCATION_TRACE: &str = "ROCPROF_MEMORY_ALLOCATION_TRACE";
/// Scratch memory tracing (the runtime's scratch events, through the tools table).
pub const SCRATCH_MEMORY_TRACE: &str = "ROCPROF_SCRATCH_MEMORY_TRACE";
/// `--kernel-iteration-range`: which launches of each kernel are counted or traced in detail
/// (rocprofv3's form: `[`, `]`, `,` and blanks separate integers or inclusive `A-B` ranges).
pub const KERNEL_FILTER_RANGE: &str = "ROCPROF_KERNEL_FILTER_RANGE";
/// `-P/--collection-period`: `;`-separated `delay_ns:duration_ns:repeat` (repeat 0 = forever),
/// counted from the tool's start.
pub const COLLECTION_PERIOD: &str = "ROCPROF_COLLECTION_PERIOD";
/// `--disable-signal-handlers` sets it to false: the tool installs no fatal-signal handlers.
pub const SIGNAL_HANDLERS: &str = "ROCPROF_SIGNAL_HANDLERS";
/// Domains whose libraries this stack may never load: each names the library whose table
/// the tool wraps if it registers one (`--rccl-trace`, …), a comma-separated list of
/// rocprofiler-register library names (`rccl`, `rocdecode`, …).
pub const FOREIGN_DOMAINS: &str = "ROCPROF_WSL_FOREIGN_DOMAINS";

/// Only kernels whose (demangled) name matches are counted (rocprofv3's variable).
pub const KERNEL_FILTER_INCLUDE_REGEX: &str = "ROCPROF_KERNEL_FILTER_INCLUDE_REGEX";
/// Kernels whose name matches are not counted (applied after the include filter).
pub const KERNEL_FILTER_EXCLUDE_REGEX: &str = "ROCPROF_KERNEL_FILTER_EXCLUDE_REGEX";
/// The counters to collect around each dispatch: a [`crate::docs::CounterRequest`] as JSON,
/// resolved to base counters by `rocprof` (this project's own variable; rocprofv3's
/// `ROCPROF_COUNTERS` holds names for the tool to resolve).
pub const COUNTERS: &str = "ROCPROF_WSL_COUNTERS";
/// Set by `rocprof` for the tool: the thread-trace request as JSON
/// ([`crate::docs::ThreadTraceRequest`]).
pub const THREAD_TRACE: &str = "ROCPROF_WSL_THREAD_TRACE";
/// rocprofv3's `--selected-regions`: collect only between `roctxProfilerResume(0)` and
/// `roctxProfilerPause(0)`.
pub const SELECTED_REGIONS: &str = "ROCPROF_SELECTED_REGIONS";
/// rocprofv3's `--selected-regions-ref-count`: nested `roctxProfilerResume(0)` /
/// `roctxProfilerPause(0)` pairs count; collection pauses at the outermost pause.
pub const SELECTED_REGIONS_REF_COUNT: &str = "ROCPROF_SELECTED_REGIONS_REF_COUNT";
/// rocprofv3's `--kernel-rename`: the tool notes, per dispatch, the message of the innermost
/// ROCTx range open on the launching thread (whether or not markers are traced).
pub const KERNEL_RENAME: &str = "ROCPROF_KERNEL_RENAME";

/// Set to 1 by `rocprof` when an output it will write shows API arguments and return values
/// (JSON, Perfetto, rocpd): the tool then captures them for HIP calls (this project's own
/// variable).
pub const API_ARGUMENTS: &str = "ROCPROF_WSL_API_ARGUMENTS";

/// rocprofv3's truth strings (case-insensitive): `Ok(true)` for y/yes/t/true/on/1, `Ok(false)`
/// for n/no/f/false/off/0, otherwise an explanation.
pub fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "on" | "1" => Ok(true),
        "n" | "no" | "f" | "false" | "off" | "0" => Ok(false),
        _ => Err(format!(
            "'{v}' is not a boolean (use true/false, yes/no, on/off, 1/0)"
        )),
    }
}

/// The file in the record directory where processes that ran with the tool but without any
/// ROCm runtime are noted (pid and parent pid, 4 little-endian bytes each, per process).
pub const UNTRACED_PIDS: &str = "untraced.pids";
