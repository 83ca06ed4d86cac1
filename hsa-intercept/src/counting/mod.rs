//! Hardware counters around kernel dispatches: the [`Instrument`] that runs one pass's start
//! PM4-IB packet before each selected dispatch and its read and stop packets after it, then
//! records the raw output buffer with the dispatch's ids (`rocprof` decodes and evaluates it).
//!
//! - **Per agent, a kit**: the pass's buffers built for the agent's topology
//!   ([`pmc_dxg::pm4::build_pass`]), and slots of pool memory ([`pool`]: the CPU agent's kernarg
//!   pool, made accessible to the GPU), each holding one copy of the command buffers (which
//!   name their own output address) and one output buffer. Kits are built at an agent's first
//!   counted dispatch, with a first block of slots; a block more is allocated only when every
//!   slot is in flight, so a dispatch allocates nothing.
//! - **Per dispatch**: a free slot's output is zeroed (the SQ read leaves the upper half of each
//!   slot untouched) and its three packets are injected. The kernel gets the barrier bit, the
//!   read and stop packets carry it, and the start buffer begins with a CS_PARTIAL_FLUSH: within
//!   a queue the counting window holds that kernel only. When the stop packet has completed, the
//!   harvest calls [`Instrument::completed`], which copies the output into the log as a
//!   [`trace_records::Tag::CounterSample`] and frees the slot.
//! - **Selection**: rocprofv3's include and exclude regexes, searched in the demangled kernel
//!   name (the mangled one when it does not demangle), decided once per kernel.
//!
//! Counters are global to the GPU. Dispatches of one queue are serialised by the barrier bits;
//! dispatches of other queues are not held back (a host-side lock across queues can deadlock
//! an application whose queues wait on each other), so a kernel of another queue that runs
//! inside a counting window is counted with it. `rocprof` warns of such overlaps, found from
//! the dispatch timestamps.

pub(crate) mod pool;

use crate::dispatch::filter::KernelFilter;
use crate::dispatch::instrument::{self, DispatchInfo, Injection, Instrument};
use crate::hsa::fns;
use crate::sink;
use pmc_dxg::pm4::{self, PassBuffers, PassPackets};
use pmc_dxg::{BaseEvent, Topology};
use pool::PoolFns;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use trace_records::agents::Agent;
use trace_records::docs::{CounterEvent, CounterRequest, CounterSetup, Document, WarningKind};
use trace_records::{CounterSampleHeader, KernelDispatchRecord};

/// What to count and on which dispatches.
#[derive(Debug, Clone)]
pub struct CounterConfig {
    /// The base counters of the pass: one group on every GPU, or each GPU's groups, through
    /// which its selected dispatches go in turn (`interval` at a time: rocprofv3's
    /// multiplexing of `pmc_groups`).
    pub request: CounterRequest,
    /// Only dispatches of kernels whose name matches this regex are counted.
    pub include: Option<String>,
    /// Dispatches of kernels whose name matches this regex are not (applied after `include`).
    pub exclude: Option<String>,
    /// `--kernel-iteration-range`: which launches of each selected kernel are counted.
    pub iterations: Option<trace_records::ranges::IterationRanges>,
    /// The agents discovery published (their topology programs the counters).
    pub agents: Vec<Agent>,
}

/// Installs counter collection as the dispatch instrument. Install it before the application
/// creates its queues. Fails if a filter is not a valid regex or an instrument is installed
/// already.
pub fn install(config: CounterConfig) -> Result<(), String> {
    let counting = instrument(config)?;
    match instrument::install(counting) {
        true => Ok(()),
        false => Err("another dispatch instrument is installed".into()),
    }
}

/// Builds counter collection as an instrument (to install alone with [`install`], or beside
/// thread trace in an [`instrument::Pair`]). Fails if a filter is not a valid regex.
pub fn instrument(config: CounterConfig) -> Result<&'static dyn Instrument, String> {
    let filter =
        KernelFilter::new(&config.include, &config.exclude)?.with_iterations(config.iterations);
    let request = &config.request;
    let agents: Vec<Agent> = config.agents.into_iter().take(MAX_AGENTS).collect();
    let groups: Vec<Vec<Group>> = agents
        .iter()
        .map(|a| {
            let lists: Vec<&Vec<CounterEvent>> = match request.agents.is_empty() {
                true => vec![&request.events],
                false => request
                    .agents
                    .iter()
                    .filter(|g| g.node_id == a.node_id)
                    .flat_map(|g| &g.groups)
                    .collect(),
            };
            lists
                .into_iter()
                .filter(|events| !events.is_empty())
                .take(MAX_GROUPS)
                .map(|events| Group {
                    events: events.iter().map(BaseEvent::named).collect(),
                    setup_events: events.clone(),
                })
                .collect()
        })
        .collect();
    let counting: &'static Counting = Box::leak(Box::new(Counting {
        kits: groups
            .iter()
            .map(|g| (0..g.len()).map(|_| OnceLock::new()).collect())
            .collect(),
        next: (0..agents.len()).map(|_| AtomicU64::new(0)).collect(),
        interval: request.interval.max(1),
        groups,
        filter,
        agents,
    }));
    Ok(counting)
}

/// GPU agents whose counters are programmed at once.
const MAX_AGENTS: usize = 16;
/// Counter groups one agent goes through (a token holds the group in 8 bits).
const MAX_GROUPS: usize = 256;
/// Slots allocated at a time (one pool allocation).
const BLOCK_SLOTS: usize = 16;

struct Counting {
    /// By the agent's index in `agents`: its groups (none: its dispatches are not counted).
    groups: Vec<Vec<Group>>,
    /// Selected dispatches per group before the next group counts.
    interval: u64,
    /// By the agent's index: its selected dispatches so far.
    next: Vec<AtomicU64>,
    filter: KernelFilter,
    agents: Vec<Agent>,
    /// By the agent's index, then the group's: its kit, or why it has none.
    kits: Vec<Vec<OnceLock<Result<Kit, String>>>>,
}

/// One counter group of an agent.
struct Group {
    events: Vec<(String, BaseEvent)>,
    setup_events: Vec<CounterEvent>,
}

/// One agent's counter slots.
struct Kit {
    gpu: u64,
    pool: u64,
    fns: PoolFns,
    topology: Topology,
    /// The pass's layout (addresses 0): sizes and offsets of every slot.
    layout: PassBuffers,
    /// Bytes per slot: the command memory, then the output buffer.
    slot_bytes: usize,
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    all: Vec<Slot>,
    free: Vec<u32>,
}

struct Slot {
    /// The output buffer (`layout.output_bytes` bytes of pool memory).
    output: usize,
    packets: PassPackets,
}

impl Counting {
    /// The kit of group `group` of the agent at `index` in `agents`, built at first use.
    fn kit(&self, gpu: u64, index: usize, group: usize) -> Option<&Kit> {
        let cell = self.kits.get(index)?.get(group)?;
        let g = &self.groups[index][group];
        let node = self.agents[index].node_id;
        let kit = cell.get_or_init(|| {
            let built = self.build_kit(gpu, &self.agents[index], &g.events);
            match &built {
                Ok(kit) => sink::emit_doc(&Document::CounterSetup(CounterSetup {
                    agent_node_id: node,
                    events: g.setup_events.clone(),
                    output_bytes: kit.layout.output_bytes as u32,
                    group: group as u32,
                    proof: kit.layout.proof_offset.is_some(),
                })),
                Err(why) => sink::warn(
                    WarningKind::Counters,
                    format!(
                        "hardware counters cannot be collected on GPU node {node}: {why}; its \
                         dispatches run uncounted"
                    ),
                ),
            }
            built
        });
        kit.as_ref().ok()
    }

    fn build_kit(
        &self,
        gpu: u64,
        agent: &Agent,
        events: &[(String, BaseEvent)],
    ) -> Result<Kit, String> {
        let f = fns().ok_or("the HSA runtime's entries are unknown")?;
        let fns = PoolFns::from(f)?;
        let topology =
            Topology::of(agent).ok_or_else(|| format!("agent {} is not a GPU", agent.node_id))?;
        let layout = pm4::build_pass(&topology, events, 0, 0).map_err(|e| e.to_string())?;
        let slot_bytes = align(layout.command_bytes, pm4::COMMAND_ALIGN)
            + align(layout.output_bytes, pm4::COMMAND_ALIGN);
        let pool = pool::kernarg_pool(&fns)?;
        let kit = Kit {
            gpu,
            pool,
            fns,
            topology,
            layout,
            slot_bytes,
            slots: Mutex::new(Slots::default()),
        };
        kit.grow(&mut kit.lock_slots(), events)?;
        Ok(kit)
    }
}

fn align(bytes: usize, to: usize) -> usize {
    bytes.div_ceil(to) * to
}

impl Kit {
    fn lock_slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        // The slot lists stay consistent even if a holder panicked (pushes and pops only).
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a block of [`BLOCK_SLOTS`] slots: one pool allocation, each slot's command buffers
    /// built for its own output address and copied into place.
    fn grow(&self, slots: &mut Slots, events: &[(String, BaseEvent)]) -> Result<(), String> {
        let base = pool::allocate(
            &self.fns,
            self.pool,
            self.gpu,
            self.slot_bytes * BLOCK_SLOTS,
        )?;
        let command_span = align(self.layout.command_bytes, pm4::COMMAND_ALIGN);
        for k in 0..BLOCK_SLOTS {
            let command = base as usize + k * self.slot_bytes;
            let output = command + command_span;
            let buffers = pm4::build_pass(&self.topology, events, command as u64, output as u64)
                .map_err(|e| e.to_string())?;
            let memory = buffers.command_memory();
            // SAFETY: `command` starts `command_span` >= `memory.len()` bytes of this slot,
            // inside the allocation just made, which nothing else uses yet.
            unsafe {
                std::ptr::copy_nonoverlapping(memory.as_ptr(), command as *mut u8, memory.len())
            };
            slots.free.push(slots.all.len() as u32);
            slots.all.push(Slot {
                output,
                packets: buffers.packets(),
            });
        }
        Ok(())
    }

    /// A free slot (growing by a block if none is), its output zeroed.
    fn take(&self, events: &[(String, BaseEvent)]) -> Option<(u32, PassPackets)> {
        let mut slots = self.lock_slots();
        if slots.free.is_empty()
            && let Err(why) = self.grow(&mut slots, events)
        {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                sink::warn(
                    WarningKind::Counters,
                    format!(
                        "no memory for more counter buffers ({why}); some dispatches ran uncounted"
                    ),
                );
            }
            return None;
        }
        let index = slots.free.pop()?;
        let slot = &slots.all[index as usize];
        // SAFETY: the slot's output buffer, `output_bytes` bytes of pool memory; the slot is
        // free, so no packet of the GPU's refers to it.
        unsafe { std::ptr::write_bytes(slot.output as *mut u8, 0, self.layout.output_bytes) };
        Some((index, slot.packets))
    }

    /// Copies a finished slot's output into the log (counted by group `group`) and frees the
    /// slot.
    fn finish(&self, index: u32, group: u32, record: &KernelDispatchRecord) {
        let mut slots = self.lock_slots();
        let Some(slot) = slots.all.get(index as usize) else {
            return;
        };
        // SAFETY: the slot's output buffer; its stop packet has completed, so the GPU is done
        // writing it, and the slot is not free, so no other dispatch uses it.
        let output = unsafe {
            std::slice::from_raw_parts(slot.output as *const u8, self.layout.output_bytes)
        };
        sink::emit_counter_sample(
            &CounterSampleHeader {
                dispatch_id: record.dispatch_id,
                correlation_id: record.correlation_id,
                agent_node_id: record.agent_node_id,
                group,
            },
            output,
        );
        slots.free.push(index);
    }
}

impl Instrument for Counting {
    fn inject(&self, dispatch: &DispatchInfo<'_>, injection: &mut Injection) -> Option<u64> {
        if !crate::regions::allows()
            || !self
                .filter
                .selects(dispatch.record.kernel_id, dispatch.kernel_name)
        {
            return None;
        }
        let index = self
            .agents
            .iter()
            .position(|a| a.node_id == dispatch.agent_node)?;
        let groups = &self.groups[index];
        if groups.is_empty() {
            return None;
        }
        // As rocprofv3: the agent's selected dispatches go through its groups in turn.
        let n = self.next[index].fetch_add(1, Ordering::Relaxed);
        let group = ((n / self.interval) % groups.len() as u64) as usize;
        let kit = self.kit(dispatch.agent, index, group)?;
        let (slot, packets) = kit.take(&groups[group].events)?;
        injection.before(packets.start);
        injection.after(packets.read);
        injection.after(packets.stop);
        Some(((index as u64) << 40) | ((group as u64) << 32) | u64::from(slot))
    }

    fn completed(&self, token: u64, record: &KernelDispatchRecord) {
        let group = ((token >> 32) & 0xff) as u32;
        if let Some(Ok(kit)) = self
            .kits
            .get((token >> 40) as usize)
            .and_then(|k| k.get(group as usize))
            .and_then(OnceLock::get)
        {
            kit.finish(token as u32, group, record);
        }
    }

    fn discarded(&self, _token: u64) {
        // The GPU may still write the slot's output: it is never reused.
    }

    fn after_fork_in_child(&self) {
        // Nothing to forget: a child forked before any counted dispatch builds its own kits
        // with its own runtime; one forked later inherits the parent's kits with copies of
        // their memory, but no HSA runtime survives a fork, so it dispatches nothing on them.
    }
}
