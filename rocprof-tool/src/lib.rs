//! `librocprof_tool.so`: the profiler inside the application.
//!
//! Preloaded by `rocprof`. Its constructor reads the configuration and, when a ROCm runtime is
//! mapped into the process, discovers agents (before `hsa_init`, so the DXG thunk's topology
//! is read while nothing else uses it), sets `WSLKMT_VENDOR_PACKET` without overwriting, and
//! creates this image's record log. A process without any ROCm runtime (a shell, `/bin/true`)
//! costs one scan of the loaded objects and one small append to the record directory's
//! `untraced.pids`; it prints nothing. If such a process loads a runtime later (`dlopen`),
//! the tool starts when the runtime registers. The runtimes hand their API tables to
//! [`rocprofiler_set_api_table`] (through rocprofiler-register), and the tool wraps the entries
//! the configuration asks for, in place.
//!
//! Nothing here may abort the application: every exported function and every callback catches
//! panics. The tool's warnings are recorded in the log (`rocprof` prints them after the run);
//! only a failure to create the log itself is said on stderr, since nothing else can carry it.

pub mod config;
pub mod markers;

use config::Config;
use hsa_intercept::hsa::HsaApiTable;
use hsa_intercept::tables::{self, ApiTable};
use hsa_intercept::wrap::{WrapReport, wrap_table};
use hsa_intercept::{sink, wrap};
use record_log::LogFile;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;
use std::sync::OnceLock;
use trace_records::OperationName;
use trace_records::docs::{
    AgentMapping, AgentsList, CopiedLibrary, DiscoveryFacts, Document, DomainLibrary, DoubleLoad,
    EnvValue, ExitFacts, OmissionFact, Runtime, RuntimeLibrary, TableReceived, ThunkFacts,
    WarningKind,
};
use trace_records::log::FileHeader;

/// Everything the tool decided at start-up.
struct State {
    config: Config,
    /// The published agent records and the platform's pairing policy.
    agents: Vec<wsl_topology::Agent>,
    policy: wsl_topology::hsa_pairing::Policy,
}

static STATE: OnceLock<State> = OnceLock::new();
/// Set when the constructor found no ROCm runtime and left the start for later.
static DEFERRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static START: std::sync::Once = std::sync::Once::new();

/// Said on stderr: only for failures that leave no log to record them in.
fn say(message: &str) {
    eprintln!("rocprof-tool: warning: {message}");
}

#[cfg(not(test))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[cfg_attr(test, allow(dead_code))]
extern "C" fn constructor() {
    if std::panic::catch_unwind(constructor_body).is_err() {
        say("initialisation failed; the application runs unprofiled");
    }
}

fn constructor_body() {
    let config = Config::from_env();
    // Loaded without `rocprof` and without any tracing option: stay inert.
    if !config.any() && std::env::var_os(trace_records::env::RECORD_DIR).is_none() {
        return;
    }
    if loaded_libraries().0.is_empty() {
        note_untraced_process(&config.record_dir);
        DEFERRED.store(true, std::sync::atomic::Ordering::Release);
        return;
    }
    start(config);
}

/// `dlopen`, interposed (the tool is preloaded, so its definition comes first): when the
/// constructor deferred the start and the application now opens a ROCm runtime, the tool
/// starts before the runtime is even mapped — discovery still runs before `hsa_init`, exactly
/// as for an application linked against the runtime. Everything else is forwarded untouched.
///
/// # Safety
/// As for `dlopen(3)`: `filename` is null or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void {
    if DEFERRED.load(std::sync::atomic::Ordering::Acquire) && !filename.is_null() {
        // SAFETY: a non-null filename is a C string (the caller's contract).
        let name = unsafe { CStr::from_ptr(filename) }.to_bytes();
        if RuntimeLibrary::named_in(name).next().is_some() {
            let _ = std::panic::catch_unwind(start_if_deferred);
        }
    }
    match real_dlopen() {
        // SAFETY: the next definition of dlopen, with the caller's arguments.
        Some(real) => unsafe { real(filename, flags) },
        None => std::ptr::null_mut(),
    }
}

type DlopenFn = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;

/// The `dlopen` this one hides (libc's).
fn real_dlopen() -> Option<DlopenFn> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let p = *REAL.get_or_init(|| {
        // SAFETY: looks up the next definition of a libc symbol by a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_NEXT, c"dlopen".as_ptr()) as usize }
    });
    // SAFETY: a non-null result is libc's dlopen, which has this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, DlopenFn>(p) })
}

/// Starts the tool now if the constructor deferred it (a runtime is being loaded).
fn start_if_deferred() {
    if DEFERRED.load(std::sync::atomic::Ordering::Acquire) {
        start(Config::from_env());
    }
}

/// Appends this process to `<record dir>/untraced.pids` (pid and parent pid, 4 bytes each):
/// it ran with the tool loaded but without any ROCm runtime. One small `O_APPEND` write.
fn note_untraced_process(dir: &Path) {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut entry = [0u8; 8];
    entry[..4].copy_from_slice(&std::process::id().to_le_bytes());
    entry[4..].copy_from_slice(&std::os::unix::process::parent_id().to_le_bytes());
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(trace_records::env::UNTRACED_PIDS))
    {
        let _ = f.write_all(&entry);
    }
}

fn start(config: Config) {
    START.call_once(|| {
        DEFERRED.store(false, std::sync::atomic::Ordering::Release);
        if std::panic::catch_unwind(|| init(config)).is_err() {
            say("initialisation failed; the application runs unprofiled");
        }
    });
}

/// The discovery outcome as the log's typed document.
fn discovery_facts(d: &wsl_topology::Discovery, config: &Config) -> DiscoveryFacts {
    let omissions = d
        .omissions
        .iter()
        .map(|o| OmissionFact {
            subject: o.subject.to_string(),
            kind: o.kind,
            reason: o.reason.clone(),
        })
        .collect();
    DiscoveryFacts {
        platform: d.selection.platform,
        detail: d.selection.detail.clone(),
        omissions,
        thunk: d.thunk.as_ref().map(|t| ThunkFacts {
            path: t.path.clone(),
            handshake_offered: t.handshake_offered,
            handshake: t.handshake.to_owned(),
            layout: t.layout,
            total_nodes: t.total_nodes,
            gpu_nodes: t.gpu_nodes,
        }),
        config: config.tracing,
        vendor_packet: match std::env::var_os(wsl_topology::settings::ENV_VENDOR_PACKET) {
            None => EnvValue::Unset,
            Some(v) => EnvValue::Set(v.to_string_lossy().into_owned()),
        },
    }
}

fn init(config: Config) {
    hsa_intercept::clock::start();
    // Collection periods count from here.
    let started = hsa_intercept::clock::now_ns();
    let settings = wsl_topology::Settings::from_env();
    let discovery = wsl_topology::discover(&settings);
    match open_log(&config.record_dir) {
        Ok(log) => {
            sink::install(log);
        }
        Err(e) => say(&format!(
            "cannot create the record log in {}: {e}; nothing will be recorded",
            config.record_dir.display()
        )),
    }
    // Before the tracer: the trampolines' fast path is taken only without periods.
    install_scope(&config, started);
    wrap::use_api_tracer();
    wrap::capture_arguments(config.api_arguments);
    // Discovery has loaded the thunk (reusing the runtime's copy when there is one): a second
    // copy is mapped by now if an LD_PRELOAD by path caused one.
    check_double_loads();
    let agents = discovery.agents().to_vec();
    sink::emit_doc(&Document::Agents(AgentsList { agents }));
    sink::emit_doc(&Document::Discovery(discovery_facts(&discovery, &config)));
    let policy = match discovery.selection.platform {
        wsl_topology::Platform::Wsl => wsl_topology::hsa_pairing::Policy::Wsl,
        wsl_topology::Platform::GnuLinux => wsl_topology::hsa_pairing::Policy::Strict,
    };
    hsa_intercept::dispatch::on_first_queue(pair_agents);
    if config.selected_regions {
        hsa_intercept::regions::enable();
        if config.selected_regions_ref_count {
            hsa_intercept::regions::count_references();
        }
    }
    install_instruments(&config, discovery.agents());
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
}

/// `-P/--collection-period` (counted from `started`) and how ROCTx ranges are used; an
/// unreadable value is a tool warning and collection goes on without it.
fn install_scope(config: &Config, started: u64) {
    match &config.periods {
        Some(Ok(periods)) => {
            if let Err(why) = hsa_intercept::scope::install(started, periods.clone()) {
                sink::warn(
                    WarningKind::Internal,
                    format!("the collection periods are ignored: {why}"),
                );
            }
        }
        Some(Err(why)) => sink::warn(
            WarningKind::Internal,
            format!("the collection periods are ignored: {why}"),
        ),
        None => {}
    }
    if let Some(Err(why)) = &config.iterations {
        sink::warn(
            WarningKind::Internal,
            format!("the kernel iteration range is ignored: {why}"),
        );
    }
    markers::configure(config.tracing.markers, config.kernel_rename);
}

/// A forked child records into a log of its own (the parent's chunks stay the parent's).
/// Installs what runs around dispatches: counters, thread trace, or both (thread trace's window
/// outermost, so the counters' flushes stay next to the kernel).
fn install_instruments(config: &Config, agents: &[trace_records::agents::Agent]) {
    use hsa_intercept::dispatch::instrument;
    let counting = match &config.counters {
        Some(Ok(request)) => {
            hsa_intercept::counting::instrument(hsa_intercept::counting::CounterConfig {
                request: request.clone(),
                include: config.kernel_include.clone(),
                exclude: config.kernel_exclude.clone(),
                iterations: config.iterations.clone().and_then(Result::ok),
                agents: agents.to_vec(),
            })
            .map_err(|why| {
                sink::warn(
                    WarningKind::Counters,
                    format!("hardware counters are not collected: {why}"),
                )
            })
            .ok()
        }
        Some(Err(why)) => {
            sink::warn(
                WarningKind::Counters,
                format!("hardware counters are not collected: {why}"),
            );
            None
        }
        None => None,
    };
    let tracing = match &config.thread_trace {
        Some(Ok(request)) => {
            hsa_intercept::thread_trace::instrument(hsa_intercept::thread_trace::TraceConfig {
                request: request.clone(),
                include: config.kernel_include.clone(),
                exclude: config.kernel_exclude.clone(),
                iterations: config.iterations.clone().and_then(Result::ok),
                agents: agents.to_vec(),
            })
            .map_err(|why| {
                sink::warn(
                    WarningKind::ThreadTrace,
                    format!("thread trace is not captured: {why}"),
                )
            })
            .ok()
        }
        Some(Err(why)) => {
            sink::warn(
                WarningKind::ThreadTrace,
                format!("thread trace is not captured: {why}"),
            );
            None
        }
        None => None,
    };
    let chosen: Option<&'static dyn instrument::Instrument> = match (counting, tracing) {
        (Some(c), Some(t)) => Some(Box::leak(Box::new(instrument::Pair::new(c, t)))),
        (c, t) => c.or(t),
    };
    if let Some(i) = chosen
        && !instrument::install(i)
    {
        sink::warn(
            WarningKind::Internal,
            "another dispatch instrument is installed; counters and thread trace are not collected",
        );
    }
}

extern "C" fn after_fork_in_child() {
    let _ = std::panic::catch_unwind(|| {
        let Some(state) = STATE.get() else { return };
        sink::detach_after_fork();
        hsa_intercept::tracer::refresh_thread_id_after_fork();
        hsa_intercept::clock::restart_after_fork();
        hsa_intercept::dispatch::after_fork_in_child();
        match open_log(&state.config.record_dir) {
            Ok(log) => sink::reinstall_after_fork(log),
            Err(e) => say(&format!(
                "forked process {}: cannot create its record log: {e}",
                std::process::id()
            )),
        }
    });
}

/// Creates this image's record log in `dir` (`<pid>.rplog`, or `<pid>.<n>.rplog` after an
/// `exec`).
fn open_log(dir: &Path) -> std::io::Result<std::sync::Arc<LogFile>> {
    LogFile::create(
        dir,
        FileHeader {
            pid: std::process::id(),
            image: 0,
            ppid: std::os::unix::process::parent_id(),
            created_ns: hsa_intercept::clock::now_ns(),
        },
    )
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
        sink::warn(WarningKind::UnpairedAgents, msg);
    }
    sink::emit_doc(&Document::AgentMapping(AgentMapping {
        pairs: m.pairs.iter().map(|p| p.0).collect(),
        unmatched_gpu_node_ids: m.unmatched_gpu_node_ids.clone(),
        unmatched_other_node_ids: m.unmatched_other_node_ids.clone(),
        unqueryable: m.unqueryable_count as usize,
    }));
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        hsa_intercept::dispatch::finish_outstanding();
        let (skipped, slots) = hsa_intercept::thread_trace::skipped_and_slots();
        if skipped > 0 {
            sink::warn(WarningKind::ThreadTrace, untraced_text(skipped, slots));
        }
        if let Some((ran, opens)) =
            hsa_intercept::scope::before_first_window(hsa_intercept::clock::now_ns())
        {
            sink::warn(
                WarningKind::CollectionPeriod,
                format!(
                    "nothing was collected: the application ended {:.3} s after the profiler \
                     started, before the first --collection-period window opened ({:.3} s \
                     after the start); shorten the delay or use a finer \
                     --collection-period-unit",
                    ran as f64 / 1e9,
                    opens as f64 / 1e9
                ),
            );
        }
        if STATE.get().is_some() {
            // A runtime loaded later may have brought its own copy.
            check_double_loads();
            let (runtimes_loaded, domain_libraries_loaded) = loaded_libraries();
            sink::emit_doc(&Document::Exit(ExitFacts {
                runtimes_loaded,
                domain_libraries_loaded,
            }));
        }
        sink::seal_all();
    });
}

/// Says each library mapped more than once, once per process: a document for `rocprof` and
/// one warning on the application's stderr (the run may fail before anything else is said).
fn check_double_loads() {
    static SAID: std::sync::Mutex<Vec<DoubleLoad>> = std::sync::Mutex::new(Vec::new());
    let preload = std::env::var("LD_PRELOAD").unwrap_or_default();
    for (library, paths) in mapped_copies() {
        if paths.len() < 2 {
            continue;
        }
        let d = DoubleLoad {
            preload: preload_by_path(&preload, &paths),
            library,
            paths,
        };
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if said.contains(&d) {
            continue;
        }
        sink::emit_doc(&Document::DoubleLoad(d.clone()));
        say(&d.to_string());
        said.push(d);
    }
}

/// The `LD_PRELOAD` entry (colons or blanks separate them, as for glibc) that names one of
/// `paths` by path: the same string, or the same file.
fn preload_by_path(preload: &str, paths: &[String]) -> Option<String> {
    let same = |a: &str, b: &str| {
        a == b
            || matches!(
                (std::fs::canonicalize(a), std::fs::canonicalize(b)),
                (Ok(x), Ok(y)) if x == y
            )
    };
    preload
        .split([':', ' ', '\t'])
        .filter(|e| e.contains('/'))
        .find(|e| paths.iter().any(|p| same(e, p)))
        .map(str::to_owned)
}

/// Every mapped copy of the thunk and of the HSA runtime, by library, from the loader's list
/// of loaded objects (each entry is a distinct object: the loader maps one file once).
fn mapped_copies() -> Vec<(CopiedLibrary, Vec<String>)> {
    type Found = Vec<(CopiedLibrary, Vec<String>)>;
    let mut found: Found = Vec::new();
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid info whose dlpi_name is null or a C string; `data`
        // is the Vec passed below.
        unsafe {
            let found = &mut *data.cast::<Found>();
            let name = (*info).dlpi_name;
            if !name.is_null() {
                let name = CStr::from_ptr(name).to_bytes();
                if let Some(lib) = CopiedLibrary::of_path(name) {
                    let path = String::from_utf8_lossy(name).into_owned();
                    match found.iter_mut().find(|(l, _)| *l == lib) {
                        Some((_, paths)) => {
                            if !paths.contains(&path) {
                                paths.push(path);
                            }
                        }
                        None => found.push((lib, vec![path])),
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

/// Which ROCm runtimes, and which libraries of other tracing domains, are mapped into the
/// process (by file name).
fn loaded_libraries() -> (Vec<RuntimeLibrary>, Vec<DomainLibrary>) {
    type Found = (Vec<RuntimeLibrary>, Vec<DomainLibrary>);
    let mut found: Found = (Vec::new(), Vec::new());
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid info whose dlpi_name is null or a C string; `data`
        // is the pair of Vecs passed below.
        unsafe {
            let (runtimes, domains) = &mut *data.cast::<Found>();
            let name = (*info).dlpi_name;
            if !name.is_null() {
                let name = CStr::from_ptr(name).to_bytes();
                for lib in RuntimeLibrary::named_in(name) {
                    if !runtimes.contains(&lib) {
                        runtimes.push(lib);
                    }
                }
                for lib in DomainLibrary::named_in(name) {
                    if !domains.contains(&lib) {
                        domains.push(lib);
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

/// The root table's `tools_` member, or null if the runtime's root table ends before it.
///
/// # Safety
/// `root` must be the runtime's `HsaApiTable` (at least its version header readable).
unsafe fn tools_table(root: *const HsaApiTable) -> *mut u8 {
    let holds = std::mem::offset_of!(HsaApiTable, tools_) + size_of::<*mut c_void>();
    // SAFETY: the header is always there; minor_id is the table's size.
    let size = unsafe { (&raw const (*root).version.minor_id).read() } as usize;
    if size < holds {
        return std::ptr::null_mut();
    }
    // SAFETY: within the runtime's table, as its size says.
    unsafe { (&raw const (*root).tools_).read().cast() }
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
        sink::warn(
            WarningKind::NotTraced,
            not_traced_text(table.c_name, report.no_slot),
        );
    }
    report
}

/// The warning for `n` entries of `table` left untraced for want of trampolines.
fn not_traced_text(table: &str, n: usize) -> String {
    let entries = if n == 1 {
        "1 entry".to_owned()
    } else {
        format!("{n} entries")
    };
    format!("{table}: {entries} not traced (out of trampolines)")
}

/// The warning at exit for `skipped` selected dispatches that found every one of their GPU's
/// `slots` thread-trace buffers in flight.
fn untraced_text(skipped: u64, slots: usize) -> String {
    let dispatches = if skipped == 1 {
        "1 selected dispatch".to_owned()
    } else {
        format!("{skipped} selected dispatches")
    };
    format!(
        "{dispatches} ran untraced: every thread-trace buffer of their GPU ({slots} per GPU) \
         stayed in flight for 2 s (traced work waiting on work submitted after it); narrow the \
         selection with --kernel-include-regex"
    )
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
        start_if_deferred();
        let Some(state) = STATE.get() else { return 0 };
        let c = &state.config.tracing;
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
                        if state.config.dispatches() {
                            hsa_intercept::dispatch::install(core, fns);
                        }
                        if c.copies {
                            hsa_intercept::copies::install(amd_ext, fns);
                        }
                        if c.memory_allocations {
                            hsa_intercept::memory::install_allocations(core, amd_ext, fns);
                        }
                        if c.scratch_memory {
                            // The root table's size says whether it holds `tools_`.
                            let tools = tools_table(root);
                            if hsa_intercept::memory::install_scratch(tools, fns) == 0 {
                                sink::warn(
                                    WarningKind::IncompleteTable,
                                    "the HSA runtime hands over no scratch events (ToolsApiTable); scratch memory is not traced",
                                );
                            }
                        }
                    },
                    None if state.config.dispatches()
                        || c.copies
                        || c.memory_allocations
                        || c.scratch_memory =>
                    {
                        sink::warn(
                            WarningKind::IncompleteTable,
                            "the HSA runtime's table lacks entries kernel, copy or memory tracing needs; kernels, copies and memory operations are not traced",
                        )
                    }
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
                // Host functions name the kernels dispatches run: recorded with kernel symbols.
                if state.config.dispatches() {
                    // SAFETY: HipCompilerDispatchTable, not yet in use (replaced before it is
                    // wrapped, so a traced __hipRegisterFunction still records).
                    unsafe {
                        hsa_intercept::code_objects::install_host_functions(tables[0].cast())
                    };
                }
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
            "roctx" => {
                // --kernel-rename needs the ranges even when markers are not recorded.
                if c.markers || state.config.kernel_rename {
                    // SAFETY: ROCTx's core table, not yet in use.
                    wrapped += unsafe { markers::wrap_core(tables[0].cast()) };
                }
                if state.config.selected_regions
                    && let Some(control) = tables.get(1)
                {
                    // SAFETY: ROCTx's control table (the second it registers), not yet in use.
                    wrapped += unsafe { markers::wrap_control(control.cast()) };
                }
            }
            _ => {}
        }
        sink::emit_doc(&Document::Table(TableReceived {
            runtime: Runtime::from_name(&name),
            instance: lib_instance,
            wrapped,
        }));
        0
    });
    r.unwrap_or_else(|_| {
        let _ = std::panic::catch_unwind(|| {
            sink::warn(
                WarningKind::Internal,
                "a panic while wrapping API tables; tracing may be incomplete",
            )
        });
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

#[cfg(test)]
mod wording_tests {
    use super::{not_traced_text, untraced_text};

    #[test]
    fn the_tools_warnings_count_in_words() {
        assert_eq!(
            not_traced_text("HsaApiTable", 1),
            "HsaApiTable: 1 entry not traced (out of trampolines)"
        );
        assert_eq!(
            not_traced_text("HsaApiTable", 2),
            "HsaApiTable: 2 entries not traced (out of trampolines)"
        );
        assert!(untraced_text(1, 4).starts_with("1 selected dispatch ran untraced: "));
        assert!(untraced_text(2, 4).starts_with("2 selected dispatches ran untraced: "));
        assert!(untraced_text(2, 4).contains("(4 per GPU)"));
    }
}
