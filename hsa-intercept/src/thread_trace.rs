//! Thread trace (ATT) around kernel dispatches: the [`Instrument`] that runs the gfx11 SQTT begin
//! PM4-IB packet before each selected dispatch and the end packet after it, then saves each
//! traced shader engine's data as an `.att` file and records what it saved. The data is decoded
//! by `rocprof` after the application exits, never here.
//!
//! - **Buffers** come from the HSA runtime (the CPU agent's kernarg pool made accessible to the
//!   GPU, as for counters; on WSL2 there is no `/dev/kfd` to get them from): per slot, the
//!   command memory (begin | end), the control block (32 bytes per shader engine, then the
//!   slot of the begin packet's proof word: a trace whose word is missing did not run) and the trace
//!   buffer (`--att-buffer-size`, split over the engines as aqlprofile splits it). Slots are
//!   allocated at first use, at most [`max_slots`] per agent (the trace buffer is not touched
//!   here: it costs memory where the GPU writes). A dispatch that finds every slot in flight
//!   waits for the harvest to free one — traced dispatches are serialised — but at most
//!   [`SLOT_WAIT`], so work that waits on later submissions cannot hang the application; one
//!   that timed out runs untraced, counted, and `rocprof` says how many.
//! - **Data**: each traced engine's bytes are appended to one file per process in the record
//!   directory (`<pid>_thread_trace.data`); the `ThreadTrace` document gives each one's offset.
//! - **Code objects**: at every `hsa_executable_freeze` the loaded code objects are read through
//!   the AMD loader extension (1.01), given ids 1, 2, … and saved as `.out` files; every begin
//!   buffer carries a load marker for each (the decoder names PCs by them).
//! - **Serialisation**: the begin packet has the barrier bit and the kernel the barrier bit
//!   (the handler sets it), so within a queue the trace window holds that kernel only. Queues
//!   are not held back from each other (as for counters: a host-side lock across queues can
//!   deadlock an application whose queues wait on each other).

use crate::counting::pool::{self, PoolFns};
use crate::dispatch::filter::KernelFilter;
use crate::dispatch::instrument::{DispatchInfo, Injection, Instrument};
use crate::hsa::{Loader, SUCCESS, Status, fns, loaded_code_object as lco};
use crate::sink;
use pmc_dxg::pm4;
use pmc_dxg::sqtt::{self, CodeObjectMarker, TraceBuffers, TraceParams};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use trace_records::KernelDispatchRecord;
use trace_records::agents::Agent;
use trace_records::docs::{
    CodeObjectSaved, Document, ShaderEngineCapture, ThreadTraceCaptured, ThreadTraceRequest,
    WarningKind,
};

/// Trace-buffer memory per agent that slots may take together (pinned system memory on a real
/// runtime), and the bounds on the slot count it gives.
pub const SLOT_MEMORY: u64 = 1 << 30;
const SLOTS_MIN: usize = 2;
const SLOTS_MAX: usize = 64;

/// Slots (traced dispatches in flight) per agent for a trace buffer of `buffer_size` bytes:
/// [`SLOT_MEMORY`] / `buffer_size`, within 2..=64 (4 for rocprofv3's default 256 MiB).
pub fn max_slots(buffer_size: u64) -> usize {
    usize::try_from(SLOT_MEMORY / buffer_size.max(1))
        .unwrap_or(SLOTS_MAX)
        .clamp(SLOTS_MIN, SLOTS_MAX)
}
/// How long a dispatch waits for a trace slot before it runs untraced.
const SLOT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How often a dispatch waiting for a slot harvests what finished.
const SLOT_POLL: std::time::Duration = std::time::Duration::from_micros(20);
/// Bytes of each slot's command memory (room for the begin buffer's markers).
const COMMAND_BYTES: usize = 64 << 10;
/// GPU agents traced at once.
const MAX_AGENTS: usize = 16;

/// What to trace and where the raw data goes.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// The request `rocprof` checked.
    pub request: ThreadTraceRequest,
    /// Only dispatches of kernels whose demangled name matches are traced.
    pub include: Option<String>,
    /// Dispatches of kernels whose name matches are not (applied after `include`).
    pub exclude: Option<String>,
    /// `--kernel-iteration-range`: which launches of each selected kernel are traced.
    pub iterations: Option<trace_records::ranges::IterationRanges>,
    /// The agents discovery published.
    pub agents: Vec<Agent>,
}

/// Builds the thread-trace instrument (install it with
/// [`crate::dispatch::instrument::install`], alone or beside counters). Fails if a filter is
/// not a valid regex or the parameters cannot be programmed.
pub fn instrument(config: TraceConfig) -> Result<&'static dyn Instrument, String> {
    let r = &config.request;
    let params = TraceParams {
        target_cu: r.target_cu,
        se_mask: r.se_mask,
        simd_select: r.simd_select,
        buffer_size: r.buffer_size,
        occupancy_only: false,
    };
    let trace: &'static ThreadTrace = Box::leak(Box::new(ThreadTrace {
        filter: KernelFilter::new(&config.include, &config.exclude)?
            .with_iterations(config.iterations),
        params,
        dir: PathBuf::from(&r.dir),
        gpu_index: r.gpu_index.clone(),
        agents: config.agents,
        kits: (0..MAX_AGENTS).map(|_| OnceLock::new()).collect(),
        skipped: AtomicU64::new(0),
        data: Mutex::new(None),
    }));
    let _ = TRACE.set(trace);
    if r.serialize_all {
        crate::dispatch::instrument::serialize_all();
    }
    Ok(trace)
}

/// The installed thread trace, for the code-object hook.
static TRACE: OnceLock<&'static ThreadTrace> = OnceLock::new();

/// Code objects loaded so far: their markers (for every begin buffer) and a generation that
/// changes with each load.
static CODE_OBJECTS: RwLock<Vec<CodeObjectMarker>> = RwLock::new(Vec::new());
/// Bumped after each marker is added: a slot built for an older generation is rebuilt.
static CODE_OBJECTS_GENERATION: AtomicU64 = AtomicU64::new(0);

struct ThreadTrace {
    filter: KernelFilter,
    params: TraceParams,
    dir: PathBuf,
    gpu_index: Option<Vec<u32>>,
    agents: Vec<Agent>,
    kits: Vec<OnceLock<Result<Kit, String>>>,
    /// Dispatches that found every slot in flight.
    skipped: AtomicU64,
    /// The process's data file (`<pid>_thread_trace.data`), its name and its end.
    data: Mutex<Option<(std::fs::File, String, u64)>>,
}

/// One agent's trace slots.
struct Kit {
    gpu: u64,
    pool: u64,
    fns: PoolFns,
    se_count: u32,
    slots: Mutex<Vec<Slot>>,
    /// Signalled when a slot is freed.
    freed: std::sync::Condvar,
}

struct Slot {
    /// Start of the slot's memory: command | control | data.
    base: usize,
    /// The trace buffer (4 KiB aligned).
    data: usize,
    /// The control block.
    control: usize,
    /// What the slot's command memory holds, if it was built.
    built: Option<Built>,
    /// In flight (the GPU may use the slot's memory).
    busy: bool,
}

/// A slot's begin and end buffers, in its command memory: they depend only on the slot's
/// addresses, the trace parameters and the code objects loaded, so a slot whose code-object
/// generation is current is reused as it is (a traced dispatch then builds nothing).
struct Built {
    generation: u64,
    buffers: TraceBuffers,
    begin: [u8; 64],
    end: [u8; 64],
}

impl ThreadTrace {
    fn kit(&self, gpu: u64, node: u32) -> Option<(usize, &Kit)> {
        let index = self.agents.iter().position(|a| a.node_id == node)?;
        let agent = &self.agents[index];
        if let Some(wanted) = &self.gpu_index
            && !wanted.contains(&agent.logical_node_type_id)
        {
            return None;
        }
        let kit = self.kits.get(index)?.get_or_init(|| {
            let built = build_kit(gpu, agent);
            if let Err(why) = &built {
                sink::warn(
                    WarningKind::ThreadTrace,
                    format!(
                        "thread trace cannot be captured on GPU node {node}: {why}; its \
                         dispatches run untraced"
                    ),
                );
            }
            built
        });
        kit.as_ref().ok().map(|k| (index, k))
    }

    /// A free slot with its buffers built for the code objects loaded now, or `None` (every
    /// slot in flight, or no memory).
    fn take(&self, kit: &Kit) -> Option<(usize, [u8; 64], [u8; 64])> {
        let mut slots = kit.slots.lock().unwrap_or_else(|e| e.into_inner());
        let cap = max_slots(self.params.buffer_size);
        if slots.len() >= cap && slots.iter().all(|s| s.busy) {
            // Traced dispatches are serialised: wait (bounded, so a dispatch whose
            // predecessors wait on work submitted after it cannot hang the application) for a
            // slot to come back. Meanwhile this thread harvests what finished itself, every
            // SLOT_POLL: waiting for the harvester's period (1 ms) let the GPU run dry when
            // the slots in flight held less work than that.
            let deadline = std::time::Instant::now() + SLOT_WAIT;
            while slots.iter().all(|s| s.busy) && std::time::Instant::now() < deadline {
                drop(slots);
                crate::dispatch::harvest_finished();
                slots = kit.slots.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = kit
                    .freed
                    .wait_timeout_while(slots, SLOT_POLL, |s| s.iter().all(|s| s.busy))
                    .unwrap_or_else(|e| e.into_inner());
                slots = guard;
            }
        }
        let free = slots.iter().position(|s| !s.busy);
        let index = match free {
            Some(k) => k,
            None if slots.len() < cap => match kit.allocate_slot(self.params.buffer_size) {
                Ok(slot) => {
                    slots.push(slot);
                    slots.len() - 1
                }
                Err(why) => {
                    warn_once(format!(
                        "no memory for another thread-trace buffer ({why}); some dispatches \
                         ran untraced (a smaller --att-buffer-size needs less)"
                    ));
                    return None;
                }
            },
            None => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        let slot = &mut slots[index];
        // The generation first: markers added after it are at worst built in early (and the
        // slot rebuilt once more), never left out under a current generation.
        let generation = CODE_OBJECTS_GENERATION.load(Ordering::Acquire);
        if slot
            .built
            .as_ref()
            .is_none_or(|b| b.generation != generation)
        {
            slot.built = None;
            slot.built = Some(self.build(kit, slot, generation)?);
        }
        let built = slot.built.as_ref()?;
        // SAFETY: the slot is free, so no packet of the GPU's refers to its memory; the control
        // block has its reserved bytes.
        unsafe {
            std::ptr::write_bytes(
                slot.control as *mut u8,
                0,
                built.buffers.control_bytes() as usize,
            );
        }
        let (begin, end) = (built.begin, built.end);
        slot.busy = true;
        Some((index, begin, end))
    }

    /// Builds `slot`'s begin and end buffers for the code objects loaded now and writes them
    /// into its command memory (the slot must be free).
    fn build(&self, kit: &Kit, slot: &Slot, generation: u64) -> Option<Built> {
        let markers = CODE_OBJECTS.read().map(|m| m.clone()).unwrap_or_default();
        let built = sqtt::build_trace(
            &self.params,
            kit.se_count,
            slot.data as u64,
            slot.control as u64,
            &markers,
        )
        .map_err(|e| e.to_string())
        .and_then(|b| fit(b, &markers, &self.params, kit.se_count, slot));
        let buffers = match built {
            Ok(b) => b,
            Err(why) => {
                warn_once(format!("thread trace cannot be programmed: {why}"));
                return None;
            }
        };
        let begin_addr = slot.base as u64;
        let end_offset = align(buffers.begin.len() * 4, pm4::COMMAND_ALIGN);
        let end_addr = begin_addr + end_offset as u64;
        // SAFETY: the slot is free, so no packet of the GPU's refers to its memory; the begin
        // and end buffers fit its COMMAND_BYTES (checked by `fit`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                buffers.begin.as_ptr().cast::<u8>(),
                begin_addr as *mut u8,
                buffers.begin.len() * 4,
            );
            std::ptr::copy_nonoverlapping(
                buffers.end.as_ptr().cast::<u8>(),
                end_addr as *mut u8,
                buffers.end.len() * 4,
            );
        }
        let begin = pm4::pm4_ib_packet(
            pm4::HEADER_BARRIER,
            begin_addr,
            buffers.begin.len() as u32,
            0,
        );
        let end = pm4::pm4_ib_packet(pm4::HEADER_BARRIER, end_addr, buffers.end.len() as u32, 0);
        Some(Built {
            generation,
            buffers,
            begin,
            end,
        })
    }

    /// Appends one engine's data to the process's data file (one file, so a traced dispatch
    /// costs a write, not a file creation): its name and the data's offset.
    fn append(&self, data: &[u8]) -> std::io::Result<(String, u64)> {
        use std::os::unix::fs::FileExt as _;
        let mut out = self.data.lock().unwrap_or_else(|e| e.into_inner());
        if out.is_none() {
            let name = format!("{}_thread_trace.data", std::process::id());
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(self.dir.join(&name))?;
            *out = Some((file, name, 0));
        }
        let (file, name, end) = out.as_mut().expect("opened above");
        file.write_all_at(data, *end)?;
        let at = *end;
        *end += data.len() as u64;
        Ok((name.clone(), at))
    }

    /// Saves a finished slot's data and frees it.
    fn finish(&self, kit: &Kit, index: usize, record: &KernelDispatchRecord) {
        let mut slots = kit.slots.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = slots.get_mut(index) else {
            return;
        };
        if !std::mem::take(&mut slot.busy) {
            return;
        }
        let Some(Built { buffers, .. }) = slot.built.as_ref() else {
            return;
        };
        // SAFETY: the slot's control block; the end packet has completed, so the GPU is done
        // with the slot, and it is busy, so no other dispatch uses it.
        let control = unsafe {
            std::slice::from_raw_parts(slot.control as *const u8, buffers.control_bytes() as usize)
        };
        if !sqtt::packets_ran(buffers, control) {
            // The begin packet's proof word is missing: the packets did not run (a closed
            // vendor-packet gate), so the records hold the zeros written before the dispatch
            // and the buffer nothing of this dispatch's. Nothing is saved; `rocprof` explains.
            drop(slots);
            kit.freed.notify_one();
            emit_captured(record, Vec::new(), false);
            return;
        }
        let results = match sqtt::read_control(buffers, control) {
            Ok(r) => r,
            Err(why) => {
                kit.freed.notify_one();
                warn_once(format!("a thread-trace control block is unreadable: {why}"));
                return;
            }
        };
        let mut ses = Vec::with_capacity(results.len());
        for r in results {
            let Some(part) = buffers.ses.iter().find(|b| b.se == r.se) else {
                continue;
            };
            // SAFETY: `r.bytes` <= the engine's share of the slot's trace buffer, which the
            // GPU has finished writing (see above).
            let data = unsafe {
                std::slice::from_raw_parts(
                    (buffers.data_addr + part.offset) as *const u8,
                    r.bytes as usize,
                )
            };
            let (file, offset) = match self.append(data) {
                Ok(at) => at,
                Err(e) => {
                    warn_once(format!(
                        "thread-trace data could not be saved in {} ({e}); those dispatches \
                         have no trace",
                        self.dir.display()
                    ));
                    (String::new(), 0)
                }
            };
            ses.push(ShaderEngineCapture {
                se: r.se,
                bytes: r.bytes,
                status: r.status,
                dropped: r.dropped,
                full: r.full,
                file,
                offset,
            });
        }
        drop(slots);
        kit.freed.notify_one();
        emit_captured(record, ses, true);
    }
}

/// Records one traced dispatch's capture.
fn emit_captured(record: &KernelDispatchRecord, ses: Vec<ShaderEngineCapture>, ran: bool) {
    sink::emit_event_doc(&Document::ThreadTrace(ThreadTraceCaptured {
        dispatch_id: record.dispatch_id,
        correlation_id: record.correlation_id,
        kernel_id: record.kernel_id,
        agent_node_id: record.agent_node_id,
        shader_engines: ses,
        packets_ran: Some(ran),
    }));
}

/// `buffers` if its command buffers fit a slot's command memory; else rebuilt with as many
/// markers as fit (and a warning).
fn fit(
    buffers: TraceBuffers,
    markers: &[CodeObjectMarker],
    params: &TraceParams,
    se_count: u32,
    slot: &Slot,
) -> Result<TraceBuffers, String> {
    let bytes = |b: &TraceBuffers| align(b.begin.len() * 4, pm4::COMMAND_ALIGN) + b.end.len() * 4;
    if bytes(&buffers) <= COMMAND_BYTES {
        return Ok(buffers);
    }
    let mut n = markers.len();
    while n > 0 {
        n /= 2;
        let b = sqtt::build_trace(
            params,
            se_count,
            slot.data as u64,
            slot.control as u64,
            &markers[..n],
        )
        .map_err(|e| e.to_string())?;
        if bytes(&b) <= COMMAND_BYTES {
            warn_once(format!(
                "{} code objects are loaded; the trace names the PCs of the first {n} only",
                markers.len()
            ));
            return Ok(b);
        }
    }
    Err("the command buffers do not fit".into())
}

fn align(bytes: usize, to: usize) -> usize {
    bytes.div_ceil(to) * to
}

fn warn_once(message: String) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    let key: String = message.chars().take(40).collect();
    if said.contains(&key) {
        return;
    }
    said.push(key);
    drop(said);
    sink::warn(WarningKind::ThreadTrace, message);
}

fn build_kit(gpu: u64, agent: &Agent) -> Result<Kit, String> {
    let f = fns().ok_or("the HSA runtime's entries are unknown")?;
    let fns = PoolFns::from(f)?;
    let gpu_props = agent
        .gpu
        .as_ref()
        .ok_or_else(|| format!("agent {} is not a GPU", agent.node_id))?;
    let se_count = gpu_props.num_shader_banks.max(1);
    let pool = pool::kernarg_pool(&fns)?;
    Ok(Kit {
        gpu,
        pool,
        fns,
        se_count,
        slots: Mutex::new(Vec::new()),
        freed: std::sync::Condvar::new(),
    })
}

impl Kit {
    /// One slot: command memory, the control block, then the trace buffer on a 4 KiB boundary.
    fn allocate_slot(&self, buffer_size: u64) -> Result<Slot, String> {
        let control_bytes = align(sqtt::control_block_bytes(self.se_count) as usize, 4096);
        let head = COMMAND_BYTES + control_bytes;
        let total = head + 4096 + buffer_size as usize;
        let base = pool::allocate_unzeroed(&self.fns, self.pool, self.gpu, total)? as usize;
        // SAFETY: the command memory and control block at the start of the allocation just
        // made (the trace buffer after them is written by the GPU before it is read).
        unsafe { std::ptr::write_bytes(base as *mut u8, 0, head) };
        let data = align(base + head, 4096);
        Ok(Slot {
            base,
            data,
            control: base + COMMAND_BYTES,
            built: None,
            busy: false,
        })
    }
}

impl Instrument for ThreadTrace {
    fn inject(&self, dispatch: &DispatchInfo<'_>, injection: &mut Injection) -> Option<u64> {
        if !crate::regions::allows()
            || !self
                .filter
                .selects(dispatch.record.kernel_id, dispatch.kernel_name)
        {
            return None;
        }
        let (agent, kit) = self.kit(dispatch.agent, dispatch.agent_node)?;
        let (slot, begin, end) = self.take(kit)?;
        if !(injection.before(begin) && injection.after(end)) {
            // No room beside another instrument's packets: give the slot back (and wake a
            // dispatch waiting for one, as the harvest does).
            if let Ok(mut slots) = kit.slots.lock()
                && let Some(s) = slots.get_mut(slot)
            {
                s.busy = false;
                kit.freed.notify_one();
            }
            return None;
        }
        Some(((agent as u64) << 32) | slot as u64)
    }

    fn completed(&self, token: u64, record: &KernelDispatchRecord) {
        if let Some(Ok(kit)) = self
            .kits
            .get((token >> 32) as usize)
            .and_then(OnceLock::get)
        {
            self.finish(kit, token as u32 as usize, record);
        }
    }

    fn discarded(&self, _token: u64) {
        // The GPU may still write the slot: it is never reused.
    }

    fn after_fork_in_child(&self) {
        // As for counters: no HSA runtime survives a fork, so nothing is dispatched on the
        // parent's slots.
    }
}

/// After `hsa_executable_freeze`: saves the executable's loaded code objects that are new and
/// adds their markers (a no-op unless thread trace is installed).
pub(crate) fn executable_frozen(loader: &Loader, executable: u64) {
    let Some(trace) = TRACE.get() else { return };
    let Some((iterate, get_info)) = loader.loaded_code_objects else {
        warn_once(
            "the HSA runtime's AMD loader extension has no loaded-code-object queries (1.01): \
             traced instructions are not named"
                .into(),
        );
        return;
    };
    struct Walk {
        found: Vec<u64>,
    }
    unsafe extern "C" fn collect(_executable: u64, object: u64, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Walk passed below, alive for the iteration.
        unsafe { (*data.cast::<Walk>()).found.push(object) };
        SUCCESS
    }
    let mut walk = Walk { found: Vec::new() };
    // SAFETY: the runtime's iteration over a frozen executable with a callback that only
    // appends to `walk`.
    unsafe { iterate(executable, collect, (&raw mut walk).cast()) };
    for object in walk.found {
        let u64_of = |attr: u32| {
            let mut v = 0u64;
            // SAFETY: a u64-sized attribute of a live loaded code object.
            let status = unsafe { get_info(object, attr, (&raw mut v).cast()) };
            (status == SUCCESS).then_some(v)
        };
        let (Some(load_base), Some(load_size)) = (u64_of(lco::LOAD_BASE), u64_of(lco::LOAD_SIZE))
        else {
            continue;
        };
        if CODE_OBJECTS
            .read()
            .is_ok_and(|m| m.iter().any(|c| c.addr == load_base && !c.unload))
        {
            continue;
        }
        // The id the code-object records give it too.
        let id = crate::code_objects::id_for(executable, object);
        let load_delta = u64_of(lco::LOAD_DELTA).unwrap_or(0) as i64;
        let mut agent = 0u64;
        // SAFETY: an hsa_agent_t-sized attribute.
        unsafe { get_info(object, lco::AGENT, (&raw mut agent).cast()) };
        let mut storage = 0u32;
        // SAFETY: a u32-sized attribute.
        unsafe { get_info(object, lco::STORAGE_TYPE, (&raw mut storage).cast()) };
        let mut uri_len = 0u32;
        // SAFETY: a u32-sized attribute.
        unsafe { get_info(object, lco::URI_LENGTH, (&raw mut uri_len).cast()) };
        let mut uri = vec![0u8; uri_len as usize];
        if uri_len > 0 {
            // SAFETY: URI writes URI_LENGTH bytes.
            unsafe { get_info(object, lco::URI, uri.as_mut_ptr().cast()) };
        }
        let mut file = String::new();
        if storage == lco::STORAGE_MEMORY
            && let (Some(base), Some(size)) = (
                u64_of(lco::STORAGE_MEMORY_BASE),
                u64_of(lco::STORAGE_MEMORY_SIZE),
            )
            && base != 0
        {
            // SAFETY: the code object's bytes as the application handed them to the loader,
            // alive while the executable is (it was just frozen).
            let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, size as usize) };
            let name = format!("{}_code_object_id_{id}.out", std::process::id());
            match std::fs::write(trace.dir.join(&name), bytes) {
                Ok(()) => file = name,
                Err(e) => warn_once(format!(
                    "a code object could not be saved in {} ({e}); its instructions are not \
                     named in the thread trace",
                    trace.dir.display()
                )),
            }
        }
        let agent_node_id = crate::hsa::agent_node(agent).0;
        if let Ok(mut m) = CODE_OBJECTS.write() {
            m.push(CodeObjectMarker {
                id,
                addr: load_base,
                size: load_size,
                unload: false,
                from_start: true,
            });
        }
        CODE_OBJECTS_GENERATION.fetch_add(1, Ordering::Release);
        sink::emit_event_doc(&Document::CodeObject(CodeObjectSaved {
            id,
            agent_node_id,
            load_base,
            load_size,
            load_delta,
            uri: String::from_utf8_lossy(&uri).into_owned(),
            file,
        }));
    }
}

/// Dispatches that ran untraced because every slot of their agent stayed in flight for
/// [`SLOT_WAIT`] (reported at exit), and the slots per agent of the installed trace (0 without
/// one).
pub fn skipped_and_slots() -> (u64, usize) {
    TRACE.get().map_or((0, 0), |t| {
        (
            t.skipped.load(Ordering::Relaxed),
            max_slots(t.params.buffer_size),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_share_a_gibibyte_of_trace_buffers_within_bounds() {
        assert_eq!(max_slots(0x1000_0000), 4, "rocprofv3's default 256 MiB");
        assert_eq!(max_slots(16 << 20), 64);
        assert_eq!(max_slots(1 << 20), 64, "at most 64");
        assert_eq!(max_slots(1 << 31), 2, "at least 2");
        assert_eq!(max_slots(0), 64);
    }
}
