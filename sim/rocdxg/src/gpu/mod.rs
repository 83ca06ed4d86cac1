//! The GPU behind the thunk: clocks, the command processor's timeline, SDMA copies, PM4
//! execution and the performance counters (docs/SIMULATOR.md, "The GPU exports").
//!
//! * [`clock`]: the GPU wall clock derived from `CLOCK_MONOTONIC`.
//! * [`cost`]: waves, modelled durations and the truth of a dispatch.
//! * [`counters`]: the perfmon hardware and the WSL2 pitfalls (pure, testable with synthetic
//!   time).
//! * [`pm4`] and [`regs`]: the PM4 decoder/executor and the register file.
//! * [`sqtt`]: the thread-trace hardware (per-engine registers, token streams, the waves of a
//!   traced dispatch).
//! * [`rng`]: the seeded PRNG.
//! * [`ffi`]: the `wslsim_gpu_*` exports.
//!
//! One [`NodeGpu`] per GPU node holds a command-processor timeline (dispatches and PM4
//! submissions, serialised by a mutex) and an SDMA timeline (copies). A piece of work starts at
//! `max(now, busy_until)`, ends at `max(start + modelled duration, now)`, and the call returns
//! only once the real clock has reached its end, so GPU timestamps always lie inside the host
//! interval of the call that waits for them.

pub mod clock;
pub mod cost;
pub mod counters;
pub mod ffi;
pub mod pm4;
pub mod regs;
pub mod rng;
pub mod sqtt;

use std::cell::Cell;
use std::convert::Infallible;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use wslsim_scenario::{Gpu as GpuKnobs, Scenario};

use self::clock::{GpuClock, monotonic_ns};
use self::cost::{DispatchCost, Kernel, copy_ns, jittered};
use self::counters::{Geometry, PerfBlock, Session};
use self::pm4::{Context, Failure, Memory, Reject};
use self::regs::RegisterFile;
use self::sqtt::{Shape, Step, TracedDispatch};

/// The variable libhsakmt reads to decide whether vendor PM4 packets are honoured.
pub const VENDOR_PACKET_ENV: &str = "WSLKMT_VENDOR_PACKET";
/// Overrides the scenario's `seed` (a u64, decimal or `0x` hex).
pub const SEED_ENV: &str = "WSLSIM_SEED";

/// When a dispatch or copy ran, in GPU ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// First tick of the work.
    pub start_tick: u64,
    /// Tick at which it was complete.
    pub end_tick: u64,
}

/// A completed dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    /// When it ran.
    pub timing: Timing,
    /// What it cost and did.
    pub cost: DispatchCost,
}

/// Why a dispatch did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatchError {
    /// The descriptor is invalid (HSAKMT_STATUS_INVALID_PARAMETER).
    Invalid(String),
    /// Called from a dispatch's own `run` on the same node (would deadlock).
    Reentered,
    /// `run` panicked.
    Panicked,
}

/// Why a PM4 submission failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pm4Error {
    /// Refused before anything executed.
    Rejected(Reject),
    /// Stopped part-way.
    Failed(Failure),
    /// Called from a dispatch's own `run` on the same node.
    Reentered,
}

thread_local! {
    /// The node whose dispatch `run` callback this thread is inside (0: none).
    static RUNNING_ON: Cell<u32> = const { Cell::new(0) };
}

/// Marks this thread as inside a `run` callback of a node until dropped (even by a panic).
struct RunningOn {
    previous: u32,
}

impl RunningOn {
    fn enter(node_id: u32) -> RunningOn {
        RunningOn {
            previous: RUNNING_ON.with(|running| running.replace(node_id)),
        }
    }
}

impl Drop for RunningOn {
    fn drop(&mut self) {
        RUNNING_ON.with(|running| running.set(self.previous));
    }
}

/// The command processor of one node: its timeline and registers.
#[derive(Debug)]
struct CommandProcessor {
    busy_until: u64,
    registers: RegisterFile,
    /// Dispatches executed so far (each traced one draws its stalls from its own stream).
    dispatches: u64,
}

/// Stream id of the thread-trace draws (the counter session uses 1 to 4).
const STREAM_THREAD_TRACE: u64 = 5;
/// Stream id of the dispatch-duration jitter draws.
const STREAM_DISPATCH_JITTER: u64 = 6;
/// Stream id of the copy-duration jitter draws.
const STREAM_COPY_JITTER: u64 = 7;

/// The SDMA engine's timeline.
#[derive(Debug, Default)]
struct Sdma {
    /// Tick at which the last copy ends.
    busy_until: u64,
    /// Copies executed.
    copies: u64,
}

/// The simulated hardware of one GPU node.
#[derive(Debug)]
pub struct NodeGpu {
    node_id: u32,
    clock: GpuClock,
    geometry: Geometry,
    shape: Shape,
    trace_seed: u64,
    /// Seeds of the dispatch and copy jitter streams (one draw stream per dispatch or copy).
    jitter_seeds: [u64; 2],
    knobs: GpuKnobs,
    cp: Mutex<CommandProcessor>,
    sdma: Mutex<Sdma>,
    /// Programs of the PM4 buffers submitted before.
    decoded: Mutex<pm4::DecodeCache>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NodeGpu {
    /// KMT node `node_id` described by `scenario` (which must have that node), with the
    /// session drawn from the pinned `seed`.
    pub fn new(scenario: &Scenario, node_id: u32, seed: u64) -> Option<NodeGpu> {
        NodeGpu::seeded(scenario, node_id, &Seeding::pinned(seed))
    }

    /// KMT node `node_id` described by `scenario`, its session drawn as `seeding` says.
    pub fn seeded(scenario: &Scenario, node_id: u32, seeding: &Seeding) -> Option<NodeGpu> {
        let node = scenario.gpu_node(node_id)?;
        let geometry = Geometry::from_node(node);
        let session = Session::at(
            &scenario.counters,
            seeding.seed,
            node_id,
            seeding.drift_time_s,
        );
        let trace_seed = rng::Rng::stream(
            seeding.seed,
            (u64::from(node_id) << 8) | STREAM_THREAD_TRACE,
        )
        .next_u64();
        let jitter_seeds = [STREAM_DISPATCH_JITTER, STREAM_COPY_JITTER].map(|stream| {
            rng::Rng::stream(seeding.seed, (u64::from(node_id) << 8) | stream).next_u64()
        });
        Some(NodeGpu {
            node_id,
            clock: GpuClock::new(scenario.gpu.clock_offset_ns, node.wallclock_khz),
            geometry,
            shape: Shape::new(&geometry, node.simd_per_cu, node.max_waves_per_simd),
            trace_seed,
            jitter_seeds,
            knobs: scenario.gpu.clone(),
            cp: Mutex::new(CommandProcessor {
                busy_until: 0,
                registers: RegisterFile::new(PerfBlock::new(geometry, session)),
                dispatches: 0,
            }),
            sdma: Mutex::new(Sdma::default()),
            decoded: Mutex::new(pm4::DecodeCache::default()),
        })
    }

    /// The node's GPU clock.
    pub fn clock(&self) -> &GpuClock {
        &self.clock
    }

    /// Runs `f` on the command processor's registers (waiting for the timeline's mutex).
    pub fn with_registers<R>(&self, f: impl FnOnce(&mut RegisterFile) -> R) -> R {
        f(&mut lock(&self.cp).registers)
    }

    fn reentered(&self) -> bool {
        RUNNING_ON.with(|running| running.get() == self.node_id)
    }

    /// One piece of work on a timeline whose previous work ends at tick `*busy_until`: it
    /// starts at `max(now, busy_until)`, `work` does it and returns its modelled duration in
    /// ns, and it ends at `max(start + duration, now)`. Waits until the end, then books the
    /// timeline until then. An `Err` from `work` is returned at once: nothing is waited for or
    /// booked.
    fn timed<E>(
        &self,
        busy_until: &mut u64,
        work: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Timing, E> {
        let start = self
            .clock
            .ticks_at_or_after(monotonic_ns())
            .max(*busy_until);
        let duration_ns = work()?;
        let end = start
            .saturating_add(self.clock.ticks_for(duration_ns))
            .max(self.clock.now());
        self.clock.wait_until(end);
        *busy_until = end;
        Ok(Timing {
            start_tick: start,
            end_tick: end,
        })
    }

    /// The node's shape as the thread trace sees it.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Executes one kernel dispatch whose code address is unknown: see
    /// [`NodeGpu::dispatch_code`].
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        run: impl FnOnce() -> Result<(), ()>,
    ) -> Result<Dispatched, DispatchError> {
        self.dispatch_code(kernel, 0, run)
    }

    /// Executes one kernel dispatch: validates `kernel`, takes the command processor, calls
    /// `run` (the kernel's CPU implementation; `Err` means it panicked), waits out the
    /// modelled duration, lets armed counters count it, and — while thread trace captures —
    /// writes its waves into the trace (the kernel's first instruction at `code_address`, 0 if
    /// unknown). Tracing changes neither the timing nor the counters.
    pub fn dispatch_code(
        &self,
        kernel: &Kernel,
        code_address: u64,
        run: impl FnOnce() -> Result<(), ()>,
    ) -> Result<Dispatched, DispatchError> {
        self.dispatch_scaled(kernel, code_address, 1.0, run)
    }

    /// [`NodeGpu::dispatch_code`] with the modelled cost scaled by `factor` (the scenario's
    /// `[kernel_duration]`: duration and the cycles the counters see, as a kernel that really
    /// got slower or faster).
    pub fn dispatch_scaled(
        &self,
        kernel: &Kernel,
        code_address: u64,
        factor: f64,
        run: impl FnOnce() -> Result<(), ()>,
    ) -> Result<Dispatched, DispatchError> {
        kernel.validate().map_err(DispatchError::Invalid)?;
        if self.reentered() {
            return Err(DispatchError::Reentered);
        }
        let cost = DispatchCost::of(kernel, &self.geometry, &self.knobs).scaled(factor);
        let mut cp = lock(&self.cp);
        let index = cp.dispatches;
        let duration_ns = jittered(
            cost.duration_ns,
            &mut rng::Rng::stream(self.jitter_seeds[0], index),
        );
        let timing = self
            .timed(&mut cp.busy_until, || {
                let _inside = RunningOn::enter(self.node_id);
                run().map(|()| duration_ns)
            })
            .map_err(|()| DispatchError::Panicked)?;
        let start_ns = self.clock.gpu_ns(timing.start_tick);
        // The counters see the modelled duration: the jitter moves the timestamps only, so a
        // seed's counter values (other clients' work in the window included) stay as they were.
        cp.registers
            .perf
            .count_dispatch(start_ns, cost.duration_ns, &cost.activity);
        cp.dispatches += 1;
        if cp.registers.trace.capturing() {
            let program = program_steps(kernel);
            let first_wave_ns = start_ns.saturating_add(self.knobs.launch_overhead_ns);
            let dispatch = TracedDispatch {
                kernel,
                program: &program,
                code_address,
                first_wave_cycle: self.geometry.cycles(first_wave_ns),
                seed: rng::Rng::stream(self.trace_seed, index).next_u64(),
            };
            cp.registers.trace.record(&dispatch, &self.shape);
        }
        Ok(Dispatched { timing, cost })
    }

    /// One SDMA copy of `bytes`: `copy` moves the bytes, the engine's timeline the time (the
    /// modelled duration with the copy's own jitter).
    pub fn copy(&self, bytes: u64, copy: impl FnOnce()) -> Timing {
        let mut sdma = lock(&self.sdma);
        let sdma = &mut *sdma;
        let duration_ns = jittered(
            copy_ns(bytes, &self.knobs),
            &mut rng::Rng::stream(self.jitter_seeds[1], sdma.copies),
        );
        sdma.copies += 1;
        let Ok(timing) = self.timed(&mut sdma.busy_until, || {
            copy();
            Ok::<_, Infallible>(duration_ns)
        });
        timing
    }

    /// Validates and executes a PM4 command buffer (chained IBs read through `memory`).
    pub fn pm4(&self, buffer: &[u32], memory: &mut dyn Memory) -> Result<(), Pm4Error> {
        let program = lock(&self.decoded)
            .decode(buffer, self.knobs.pm4_frame_dwords, &*memory)
            .map_err(Pm4Error::Rejected)?;
        if self.reentered() {
            return Err(Pm4Error::Reentered);
        }
        let mut cp = lock(&self.cp);
        let cp = &mut *cp;
        let mut result = Ok(());
        let Ok(_) = self.timed(&mut cp.busy_until, || {
            cp.registers
                .perf
                .count_command_processor(self.knobs.pm4_overhead_ns);
            let clock = self.clock;
            let ticks = move || clock.now();
            let context = Context {
                ticks: &ticks,
                wait_timeout: Duration::from_millis(self.knobs.wait_timeout_ms),
            };
            result = pm4::execute(&program, &mut cp.registers, memory, &context);
            Ok::<_, Infallible>(self.knobs.pm4_overhead_ns)
        });
        result.map_err(Pm4Error::Failed)
    }
}

/// The program every wave of `kernel` executes: `wslsim_codeobj::program` of its SALU and VALU
/// counts, each clamped to the code object's encoded maximum (what the code object holds).
pub fn program_steps(kernel: &Kernel) -> Vec<Step> {
    let salu = kernel.salu_per_wave.min(wslsim_codeobj::MAX_ENCODED_COUNT);
    let valu = kernel.valu_per_wave.min(wslsim_codeobj::MAX_ENCODED_COUNT);
    wslsim_codeobj::program(salu, valu)
        .into_iter()
        .map(|inst| Step {
            offset: inst.offset,
            category: inst.category,
            cycles: inst.cycles,
        })
        .collect()
}

/// Every GPU node of the scenario.
#[derive(Debug)]
pub struct Gpu {
    nodes: Vec<NodeGpu>,
}

impl Gpu {
    /// The GPU nodes of `scenario`, their sessions drawn from the pinned `seed`.
    pub fn new(scenario: &Scenario, seed: u64) -> Gpu {
        Gpu::seeded(scenario, &Seeding::pinned(seed))
    }

    /// The GPU nodes of `scenario`, their sessions drawn as `seeding` says.
    pub fn seeded(scenario: &Scenario, seeding: &Seeding) -> Gpu {
        let nodes = (1..scenario.num_kmt_nodes())
            .filter_map(|node_id| NodeGpu::seeded(scenario, node_id, seeding))
            .collect();
        Gpu { nodes }
    }

    /// KMT node `node_id`, if it is a GPU node.
    pub fn node(&self, node_id: u32) -> Option<&NodeGpu> {
        let index = usize::try_from(node_id.checked_sub(1)?).ok()?;
        self.nodes.get(index)
    }
}

static GPU: Mutex<Option<Arc<Gpu>>> = Mutex::new(None);

/// The process's GPU, created on first use from the thunk's scenario and the process's
/// [`Seeding`]. Creating it opens the process's counter session on every node.
pub fn gpu() -> Arc<Gpu> {
    let mut guard = lock(&GPU);
    guard
        .get_or_insert_with(|| {
            let scenario = crate::state::with_state(|state| state.scenario().clone());
            let seeding = process_seeding(&scenario);
            Arc::new(Gpu::seeded(&scenario, &seeding))
        })
        .clone()
}

/// Forgets the GPU (it is rebuilt from the current scenario on next use, opening a new
/// session) and the vendor-packet gate (read again from the environment on next use).
pub fn reset() {
    *lock(&GPU) = None;
    VENDOR_PACKET.store(GATE_UNREAD, Ordering::SeqCst);
}

/// How a session's random draws are seeded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seeding {
    /// The seed of the session's streams.
    pub seed: u64,
    /// The moment the GRBM drift is evaluated at, in seconds.
    pub drift_time_s: f64,
    /// Whether the seed was pinned (`WSLSIM_SEED` or the scenario's `seed`).
    pub pinned: bool,
}

impl Seeding {
    /// A pinned seed: everything, the drift time included, follows from it.
    pub fn pinned(seed: u64) -> Seeding {
        Seeding {
            seed,
            drift_time_s: counters::pinned_drift_time_s(seed),
            pinned: true,
        }
    }

    /// An unpinned process: its seed mixed from `pid` and `time_ns` (wall-clock ns since the
    /// Unix epoch), its drift time the wall clock itself, so processes running at the same
    /// moment share the burst probability.
    pub fn unpinned(pid: u32, time_ns: u128) -> Seeding {
        let mut state = (u64::from(pid) << 32) ^ (time_ns as u64) ^ ((time_ns >> 64) as u64);
        Seeding {
            seed: rng::splitmix64(&mut state),
            drift_time_s: time_ns as f64 / 1e9,
            pinned: false,
        }
    }
}

/// The seeding rule: `WSLSIM_SEED` (`env`) if set and valid, else the scenario's seed if the
/// file gave one, else a per-process seed from `entropy` (pid, wall-clock ns).
pub fn choose_seeding(
    env: Option<&OsStr>,
    scenario: &Scenario,
    entropy: impl FnOnce() -> (u32, u128),
) -> Seeding {
    if let Some(value) = env {
        match value.to_str().and_then(parse_seed) {
            Some(seed) => return Seeding::pinned(seed),
            None => {
                static WARNED: AtomicBool = AtomicBool::new(false);
                if !WARNED.swap(true, Ordering::SeqCst) {
                    eprintln!(
                        "wslsim: ignoring {SEED_ENV}={}: not a u64",
                        value.to_string_lossy()
                    );
                }
            }
        }
    }
    if scenario.seed_given {
        return Seeding::pinned(scenario.seed);
    }
    let (pid, time_ns) = entropy();
    Seeding::unpinned(pid, time_ns)
}

/// This process's seeding ([`choose_seeding`] with the real environment, pid and clock).
pub fn process_seeding(scenario: &Scenario) -> Seeding {
    choose_seeding(std::env::var_os(SEED_ENV).as_deref(), scenario, || {
        let time_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        (std::process::id(), time_ns)
    })
}

/// Parses a u64 written in decimal or as `0x` hex.
pub fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

const GATE_UNREAD: u8 = 0;
const GATE_OFF: u8 = 1;
const GATE_ON: u8 = 2;

static VENDOR_PACKET: AtomicU8 = AtomicU8::new(GATE_UNREAD);

/// The gate's rule: honoured only for exactly "1".
pub fn vendor_packet_honoured(value: Option<&OsStr>) -> bool {
    value.is_some_and(|value| value == "1")
}

/// Whether vendor PM4 packets are honoured: `WSLKMT_VENDOR_PACKET` as it was when first asked
/// (the thunk asks on its first `hsaKmtOpenKFD`, or on the first `wslsim_gpu_pm4` if that
/// comes earlier).
pub fn vendor_packet_enabled() -> bool {
    match VENDOR_PACKET.load(Ordering::SeqCst) {
        GATE_ON => true,
        GATE_OFF => false,
        _ => {
            let value = std::env::var_os(VENDOR_PACKET_ENV);
            let read = if vendor_packet_honoured(value.as_deref()) {
                GATE_ON
            } else {
                GATE_OFF
            };
            // A concurrent first reader may have won; its answer stands.
            match VENDOR_PACKET.compare_exchange(
                GATE_UNREAD,
                read,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => read == GATE_ON,
                Err(current) => current == GATE_ON,
            }
        }
    }
}

/// Forces the gate (`None`: unread, so the environment is read on next use). For tests.
#[doc(hidden)]
pub fn set_vendor_packet_for_tests(enabled: Option<bool>) {
    let value = match enabled {
        None => GATE_UNREAD,
        Some(false) => GATE_OFF,
        Some(true) => GATE_ON,
    };
    VENDOR_PACKET.store(value, Ordering::SeqCst);
}

#[cfg(test)]
mod tests;
