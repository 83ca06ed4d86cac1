//! `librocprof_tool.so`: the profiler inside the application.
//!
//! Preloaded by `rocprof`. Its constructor reads the configuration, discovers agents (before
//! `hsa_init`, so the DXG thunk's topology is read while nothing else uses it), sets
//! `WSLKMT_VENDOR_PACKET` without overwriting, and opens this process's record log. The runtimes
//! then hand their API tables to [`rocprofiler_set_api_table`] (through rocprofiler-register),
//! and the tool wraps the entries the configuration asks for, in place.
//!
//! Nothing here may abort the application: every exported function and every callback catches
//! panics, and failures become warnings on stderr.

pub mod config;
pub mod markers;

use config::Config;
use hsa_intercept::api::{WrapReport, wrap_table};
use hsa_intercept::hsa::HsaApiTable;
use hsa_intercept::tables::{self, ApiTable};
use hsa_intercept::{sink, wrap};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;
use std::sync::OnceLock;
use trace_records::OperationName;
use trace_records::agents::{AgentInfo, AgentsDocument};
use trace_records::log::{FileHeader, LogWriter};

/// Everything the tool decided at start-up.
struct State {
    config: Config,
    /// The published agent records and the platform's pairing policy.
    agents: Vec<wsl_topology::Agent>,
    policy: wsl_topology::hsa_pairing::Policy,
}

static STATE: OnceLock<State> = OnceLock::new();

fn warn(message: &str) {
    eprintln!("rocprof-tool: warning: {message}");
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[cfg_attr(test, allow(dead_code))]
extern "C" fn constructor() {
    if std::panic::catch_unwind(init).is_err() {
        warn("initialisation failed; the application runs unprofiled");
    }
}

fn init() {
    let config = Config::from_env();
    // Loaded without `rocprof` and without any tracing option: stay inert.
    if !config.any() && std::env::var_os(trace_records::env::RECORD_DIR).is_none() {
        return;
    }
    hsa_intercept::clock::start();
    let settings = wsl_topology::Settings::from_env();
    let discovery = wsl_topology::discover(&settings);
    if let Err(e) = std::fs::create_dir_all(&config.record_dir) {
        warn(&format!(
            "cannot create {}: {e}",
            config.record_dir.display()
        ));
    }
    match open_log(&config.record_dir) {
        Ok((writer, raw_fd)) => {
            sink::install(writer, raw_fd);
        }
        Err(e) => warn(&format!(
            "cannot create the record log {e}; nothing will be recorded"
        )),
    }
    wrap::use_api_tracer();
    let agents = discovery.agents().iter().map(agent_info).collect();
    if let Ok(json) = serde_json::to_string(&AgentsDocument::new(agents)) {
        sink::emit_json(&json);
    }
    let facts = serde_json::json!({
        "kind": "discovery",
        "platform": discovery.selection.platform,
        "detail": discovery.selection.detail,
        "omissions": discovery.omissions,
        "thunk": discovery.thunk,
        "config": config,
    });
    sink::emit_json(&facts.to_string());
    let policy = match discovery.selection.platform {
        wsl_topology::Platform::Wsl => wsl_topology::hsa_pairing::Policy::Wsl,
        wsl_topology::Platform::GnuLinux => wsl_topology::hsa_pairing::Policy::Strict,
    };
    hsa_intercept::dispatch::on_first_queue(pair_agents);
    let _ = STATE.set(State {
        config,
        agents: discovery.agents().to_vec(),
        policy,
    });
    // SAFETY: registers plain extern "C" functions to run at exit and in forked children.
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(None, None, Some(after_fork_in_child));
    }
    install_crash_handlers();
}

/// A forked child records into a log of its own (the parent's writer thread does not exist
/// in the child).
extern "C" fn after_fork_in_child() {
    let _ = std::panic::catch_unwind(|| {
        let Some(state) = STATE.get() else { return };
        hsa_intercept::clock::restart_after_fork();
        hsa_intercept::dispatch::after_fork_in_child();
        match open_log(&state.config.record_dir) {
            Ok((writer, raw_fd)) => sink::reinstall_after_fork(writer, raw_fd),
            Err(e) => warn(&format!(
                "forked process {}: cannot create {e}",
                std::process::id()
            )),
        }
    });
}

/// Creates this process's record log `<pid>.rplog` in `dir` and its writer. Returns the writer
/// and a descriptor of the same open file for [`sink::crash_flush`], or `"<path>: <error>"`.
fn open_log(dir: &Path) -> Result<(LogWriter, c_int), String> {
    use std::os::fd::IntoRawFd as _;
    let pid = std::process::id();
    let path = dir.join(format!("{pid}.rplog"));
    let header = FileHeader {
        pid,
        created_ns: hsa_intercept::api::now_ns(),
    };
    match LogWriter::create_shared(&path, header) {
        // The descriptor is kept for the process's lifetime.
        Ok((writer, twin)) => Ok((writer, twin.into_raw_fd())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Pairs the published agent records with the HSA runtime's agents (by KMT node id on WSL):
/// unpaired HSA GPUs cannot be profiled, which is said, never fatal.
fn pair_agents() {
    let Some(state) = STATE.get() else { return };
    let views: Vec<wsl_topology::hsa_pairing::HsaAgentView> = hsa_intercept::hsa::agents()
        .into_iter()
        .map(|(node, gpu)| wsl_topology::hsa_pairing::HsaAgentView {
            driver_node_id: Some(node),
            is_gpu: gpu,
        })
        .collect();
    let m = wsl_topology::hsa_pairing::compute(&state.agents, &views, state.policy);
    if let Some(msg) = m.unsupported_message() {
        warn(&msg);
    }
    let doc = serde_json::json!({
        "kind": "agent-mapping",
        "pairs": m.pairs.iter().map(|p| p.0).collect::<Vec<_>>(),
        "unmatched_gpu_node_ids": m.unmatched_gpu_node_ids,
        "unmatched_other_node_ids": m.unmatched_other_node_ids,
        "unqueryable": m.unqueryable_count,
    });
    sink::emit_json(&doc.to_string());
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        hsa_intercept::dispatch::finish_outstanding();
        if STATE.get().is_some() {
            let facts = serde_json::json!({
                "kind": "exit",
                "runtimes_loaded": loaded_runtimes(),
                "dropped_records": sink::dropped(),
            });
            sink::emit_json(&facts.to_string());
        }
        sink::flush_all();
    });
}

/// Which ROCm runtimes are mapped into the process (by file name).
fn loaded_runtimes() -> Vec<&'static str> {
    const RUNTIMES: [&str; 3] = [
        "libhsa-runtime64.so",
        "libamdhip64.so",
        "librocprofiler-sdk-roctx.so",
    ];
    let mut found: Vec<&'static str> = Vec::new();
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid info whose dlpi_name is null or a C string; `data`
        // is the Vec passed below.
        unsafe {
            let found = &mut *data.cast::<Vec<&'static str>>();
            let name = (*info).dlpi_name;
            if !name.is_null() {
                let name = CStr::from_ptr(name).to_string_lossy();
                for r in RUNTIMES {
                    if name.contains(r) && !found.contains(&r) {
                        found.push(r);
                    }
                }
            }
        }
        0
    }
    // SAFETY: the callback only reads loader data and writes `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast()) };
    found
}

const FATAL_SIGNALS: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

extern "C" fn on_fatal_signal(signal: c_int) {
    sink::crash_flush();
    // SAFETY: restores the default disposition and re-raises, so the process dies of the same
    // signal as it would have without the tool.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

fn install_crash_handlers() {
    for signal in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction with our handler; the previous handler is replaced only if
        // it was the default (an application's own handler is left alone).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as *const () as usize;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn agent_info(a: &wsl_topology::Agent) -> AgentInfo {
    let mut info = AgentInfo {
        node_id: a.node_id,
        logical_node_id: a.logical_node_id,
        logical_node_type_id: a.logical_node_type_id,
        agent_type: match a.kind {
            wsl_topology::AgentKind::Cpu => "CPU".into(),
            wsl_topology::AgentKind::Gpu => "GPU".into(),
        },
        cpu_cores_count: a.cpu_cores_count,
        name: a.name.clone(),
        vendor_name: a.vendor_name.clone(),
        product_name: a.product_name.clone(),
        model_name: a.model_name.clone(),
        ..Default::default()
    };
    if let Some(g) = &a.gpu {
        info.simd_count = g.simd_count;
        info.max_waves_per_simd = g.max_waves_per_simd;
        info.lds_size_in_kb = g.lds_size_in_kb;
        info.gds_size_in_kb = g.gds_size_in_kb;
        info.num_gws = g.num_gws;
        info.wave_front_size = g.wave_front_size;
        info.num_xcc = g.num_xcc;
        info.cu_count = g.cu_count;
        info.array_count = g.array_count;
        info.num_shader_banks = g.num_shader_banks;
        info.simd_arrays_per_engine = g.simd_arrays_per_engine;
        info.cu_per_simd_array = g.cu_per_simd_array;
        info.simd_per_cu = g.simd_per_cu;
        info.max_slots_scratch_cu = g.max_slots_scratch_cu;
        info.gfx_target_version = g.gfx_target_version;
        info.vendor_id = g.vendor_id;
        info.device_id = g.device_id;
        info.location_id = g.location_id;
        info.domain = g.domain;
        info.num_sdma_engines = g.num_sdma_engines;
        info.num_sdma_xgmi_engines = g.num_sdma_xgmi_engines;
        info.num_sdma_queues_per_engine = g.num_sdma_queues_per_engine;
        info.num_cp_queues = g.num_cp_queues;
        info.max_engine_clk_ccompute = g.max_engine_clk_ccompute;
        info.max_engine_clk_fcompute = g.max_engine_clk_fcompute;
        info.sdma_fw_version = g.sdma_fw_version;
        info.fw_version = g.fw_version;
        info.capability = g.capability;
        info.cu_per_engine = g.cu_per_engine;
        info.max_waves_per_cu = g.max_waves_per_cu;
        info.family_id = g.family_id;
        info.workgroup_max_size = g.workgroup_max_size;
        info.grid_max_size = g.grid_max_size;
        info.local_mem_size = g.local_mem_size;
        info.hive_id = g.hive_id;
        info.gpu_id = g.gpu_id.into();
        info.workgroup_max_dim = g.workgroup_max_dim;
        info.grid_max_dim = g.grid_max_dim;
    }
    info
}

/// Emits the names of a table's operations (once per table kind).
fn emit_operation_names(table: &ApiTable) {
    for (k, name) in table.names.iter().enumerate() {
        let id = sink::intern(name);
        sink::emit_operation(&OperationName {
            name: id,
            operation: k as u16,
            domain: table.domain as u8,
            reserved: 0,
        });
    }
}

/// Wraps one table for API tracing if `enabled`.
///
/// # Safety
/// `base` must be the runtime's table of `table`'s layout, handed over before first use.
unsafe fn trace_table(table: &ApiTable, base: *mut u8, enabled: bool) -> WrapReport {
    if !enabled || base.is_null() {
        return WrapReport::default();
    }
    emit_operation_names(table);
    // SAFETY: forwarded from the caller.
    let (_, report) = unsafe { wrap_table(table, base, |_| true) };
    if report.no_slot > 0 {
        warn(&format!(
            "{}: {} entries not traced (out of trampolines)",
            table.c_name, report.no_slot
        ));
    }
    report
}

/// `int rocprofiler_set_api_table(const char* name, uint64_t lib_version, uint64_t
/// lib_instance, void** tables, uint64_t num_tables)`: called by rocprofiler-register when a
/// runtime registers its API tables, before the runtime uses them. Returns 0.
///
/// # Safety
/// `name` is a C string and `tables` holds `num_tables` table pointers of the named runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_set_api_table(
    name: *const c_char,
    _lib_version: u64,
    lib_instance: u64,
    tables: *mut *mut c_void,
    num_tables: u64,
) -> c_int {
    let r = std::panic::catch_unwind(|| {
        if name.is_null() || tables.is_null() || num_tables == 0 {
            return 1;
        }
        // SAFETY: per the contract.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let Some(state) = STATE.get() else { return 0 };
        let c = &state.config;
        // SAFETY: per the contract, `tables` holds `num_tables` pointers.
        let tables = unsafe { std::slice::from_raw_parts(tables, num_tables as usize) };
        let mut wrapped = 0;
        match name.as_str() {
            "hsa" => {
                let root = tables[0].cast::<HsaApiTable>();
                // SAFETY: the runtime's HsaApiTable; each sub-table pointer is read on its own
                // (an older runtime's root table may end before the later members).
                let (core, amd_ext, finalizer_ext, image_ext) = unsafe {
                    (
                        (&raw const (*root).core_).read().cast::<u8>(),
                        (&raw const (*root).amd_ext_).read().cast::<u8>(),
                        (&raw const (*root).finalizer_ext_).read().cast::<u8>(),
                        (&raw const (*root).image_ext_).read().cast::<u8>(),
                    )
                };
                // SAFETY: the runtime's own, not yet wrapped, core and AMD-extension tables.
                let fns = unsafe { hsa_intercept::hsa::Fns::from_tables(core, amd_ext) };
                match fns {
                    // SAFETY: the tables are the runtime's, handed over before first use.
                    Some(fns) => unsafe {
                        if c.kernels {
                            hsa_intercept::dispatch::install(core, fns);
                        }
                        if c.copies {
                            hsa_intercept::copies::install(amd_ext, fns);
                        }
                    },
                    None if c.kernels || c.copies => warn(
                        "the HSA runtime's table lacks entries kernel or copy tracing needs; those are not traced",
                    ),
                    None => {}
                }
                // SAFETY: each sub-table is the runtime's, not yet in use.
                unsafe {
                    wrapped += trace_table(&tables::CORE, core, c.hsa_core).wrapped;
                    wrapped += trace_table(&tables::AMD_EXT, amd_ext, c.hsa_amd_ext).wrapped;
                    wrapped +=
                        trace_table(&tables::FINALIZER_EXT, finalizer_ext, c.hsa_finalizer).wrapped;
                    wrapped += trace_table(&tables::IMAGE_EXT, image_ext, c.hsa_image).wrapped;
                }
            }
            "hip" => {
                // SAFETY: HipDispatchTable, not yet in use.
                wrapped +=
                    unsafe { trace_table(&tables::HIP, tables[0].cast(), c.hip_runtime) }.wrapped;
            }
            "hip_compiler" => {
                // SAFETY: HipCompilerDispatchTable, not yet in use.
                wrapped += unsafe {
                    trace_table(
                        &tables::HIP_COMPILER_TABLE,
                        tables[0].cast(),
                        c.hip_compiler,
                    )
                }
                .wrapped;
            }
            "roctx" if c.markers => {
                // SAFETY: ROCTx's core table, not yet in use.
                wrapped += unsafe { markers::wrap_core(tables[0].cast()) };
            }
            _ => {}
        }
        let doc = serde_json::json!({"kind": "table", "name": name, "instance": lib_instance, "wrapped": wrapped});
        sink::emit_json(&doc.to_string());
        0
    });
    r.unwrap_or_else(|_| {
        warn("a panic while wrapping API tables; tracing may be incomplete");
        0
    })
}

/// `rocprofiler_tool_configure_result_t* rocprofiler_configure(uint32_t version, const char*
/// runtime_version, uint32_t priority, rocprofiler_client_id_t* id)`: this tool needs no
/// ROCprofiler-SDK services, so it declines (returns null); its presence tells
/// rocprofiler-register that a tool is loaded.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_configure(
    _version: u32,
    _runtime_version: *const c_char,
    _priority: u32,
    _id: *mut c_void,
) -> *mut c_void {
    std::ptr::null_mut()
}
