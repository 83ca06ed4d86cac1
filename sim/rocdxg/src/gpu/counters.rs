//! The performance-counter model: what the GRBM and SQ counters of a gfx11 GPU report, and the
//! WSL2 pitfalls on top of the truth.
//!
//! Pure Rust with no FFI and no clock: time is passed in as GPU nanoseconds, so unit tests can
//! run thousands of simulated sessions with synthetic time. Three layers:
//!
//! * [`Activity`]: the event counts of one stretch of a counting window (a dispatch, a PM4
//!   submission, or foreign work), and what each select id reports of it.
//! * [`Session`]: the statistical core, one per node and process (a session opens when the
//!   process first uses the GPU and lasts until it exits): contamination by foreign GPU
//!   clients (burst count and size from the window length), the GRBM zero burst at the start
//!   of the session (its probability drifting with wall-clock time, [`Knobs::grbm_probability_at`]),
//!   and isolated SQ zero read-backs. Each is drawn from its own seeded stream.
//! * [`PerfBlock`]: the perfmon hardware the PM4 registers drive: the `CP_PERFMON_CNTL` state
//!   machine, `COMPUTE_PERFCOUNT_ENABLE`, two GRBM and eight SQ counter slots, per-instance
//!   accumulators, and the read-back with the session's faults applied.

use wslsim_scenario::{Counters, GpuNode};

use super::rng::Rng;

/// GRBM select ids (gfx11, `GRBM_PERFCOUNTERn_SELECT.PERF_SEL[5:0]`).
pub mod grbm {
    /// GRBM_COUNT: elapsed GPU core cycles.
    pub const COUNT: u32 = 0;
    /// GRBM_GUI_ACTIVE: cycles the graphics/compute pipe was busy.
    pub const GUI_ACTIVE: u32 = 2;
    /// GRBM_CP_BUSY.
    pub const CP_BUSY: u32 = 3;
    /// GRBM_SPI_BUSY.
    pub const SPI_BUSY: u32 = 0xB;
}

/// SQ select ids (gfx11, `SQ_PERFCOUNTERn_SELECT.PERF_SEL[8:0]`).
pub mod sq {
    /// SQ_CYCLES: elapsed cycles (each SQ instance).
    pub const CYCLES: u32 = 2;
    /// SQ_BUSY_CYCLES: cycles the SQ had waves (each SQ instance).
    pub const BUSY_CYCLES: u32 = 3;
    /// SQ_WAVES: waves launched.
    pub const WAVES: u32 = 4;
    /// SQ_WAVES_32.
    pub const WAVES_32: u32 = 5;
    /// SQ_WAVES_64.
    pub const WAVES_64: u32 = 6;
    /// SQ_LEVEL_WAVES (modelled as accumulated wave residency, like SQ_WAVE_CYCLES).
    pub const LEVEL_WAVES: u32 = 7;
    /// SQ_WAVE_CYCLES: wave-cycles of residency.
    pub const WAVE_CYCLES: u32 = 24;
    /// SQ_INSTS_SALU.
    pub const INSTS_SALU: u32 = 58;
    /// SQ_INSTS_VALU.
    pub const INSTS_VALU: u32 = 62;
}

/// Number of GRBM counter slots.
pub const GRBM_SLOTS: usize = 2;
/// Number of SQ counter slots (slot i is programmed through `SQ_PERFCOUNTER(2i)_SELECT`).
pub const SQ_SLOTS: usize = 8;

/// What foreign work looks like per wave (compositor-style small wave32 shaders).
const FOREIGN_VALU_PER_WAVE: u64 = 16;
const FOREIGN_SALU_PER_WAVE: u64 = 8;
const FOREIGN_CYCLES_PER_WAVE: u64 = 64;

/// The shape of the GPU as the counters see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Shader engines.
    pub shader_engines: u32,
    /// Shader arrays per engine.
    pub arrays_per_engine: u32,
    /// WGPs per shader array: aqlprofile's `(cu_num/2 + sa_per_se*se_num - 1) / (se_num*sa_per_se)`.
    pub wgp_per_array: u32,
    /// Compute units.
    pub cus: u32,
    /// Core (and shader) clock, MHz.
    pub clock_mhz: u32,
}

impl Geometry {
    /// The geometry of a scenario node; zero values become 1 (and the clock 1000 MHz) so a
    /// strange scenario cannot divide by zero.
    pub fn from_node(node: &GpuNode) -> Geometry {
        let shader_engines = node.shader_engines.max(1);
        let arrays_per_engine = node.arrays_per_engine.max(1);
        let cus = (node.simd_count / node.simd_per_cu.max(1)).max(1);
        let arrays = shader_engines.saturating_mul(arrays_per_engine);
        let wgp_per_array = ((cus / 2).saturating_add(arrays).saturating_sub(1) / arrays).max(1);
        let clock_mhz = if node.max_clock_mhz == 0 {
            1000
        } else {
            node.max_clock_mhz
        };
        Geometry {
            shader_engines,
            arrays_per_engine,
            wgp_per_array,
            cus,
            clock_mhz,
        }
    }

    /// The Radeon 890M: 1 SE, 2 SA, 16 CUs, 4 WGPs per SA, 2900 MHz.
    pub fn radeon_890m() -> Geometry {
        Geometry::from_node(&GpuNode::radeon_890m())
    }

    /// Number of SQ instances (one per WGP): the samples aqlprofile reads per SQ counter.
    pub fn sq_instances(&self) -> usize {
        (self.shader_engines as usize)
            .saturating_mul(self.arrays_per_engine as usize)
            .saturating_mul(self.wgp_per_array as usize)
    }

    /// The SQ instance of (SE, SA, WGP), if it exists.
    pub fn sq_instance(&self, se: u32, sa: u32, wgp: u32) -> Option<usize> {
        (se < self.shader_engines && sa < self.arrays_per_engine && wgp < self.wgp_per_array).then(
            || {
                ((se as usize * self.arrays_per_engine as usize + sa as usize)
                    * self.wgp_per_array as usize)
                    + wgp as usize
            },
        )
    }

    /// Core cycles in `ns` nanoseconds (rounded up).
    pub fn cycles(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.clock_mhz)).div_ceil(1000) as u64
    }

    /// Nanoseconds of `cycles` core cycles (rounded up).
    pub fn ns(&self, cycles: u64) -> u64 {
        (u128::from(cycles) * 1000).div_ceil(u128::from(self.clock_mhz)) as u64
    }
}

/// Event counts of one stretch of a counting window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Elapsed core cycles (GRBM_COUNT, SQ_CYCLES).
    pub elapsed_cycles: u64,
    /// Pipe-busy cycles (GRBM_GUI_ACTIVE).
    pub gui_active_cycles: u64,
    /// Command-processor busy cycles (GRBM_CP_BUSY).
    pub cp_busy_cycles: u64,
    /// Shader-launch busy cycles (GRBM_SPI_BUSY).
    pub spi_busy_cycles: u64,
    /// Cycles each SQ had waves (SQ_BUSY_CYCLES).
    pub sq_busy_cycles: u64,
    /// Waves launched (SQ_WAVES).
    pub waves: u64,
    /// Wave32 waves (SQ_WAVES_32).
    pub waves32: u64,
    /// Wave64 waves (SQ_WAVES_64).
    pub waves64: u64,
    /// VALU instructions (SQ_INSTS_VALU).
    pub valu_insts: u64,
    /// SALU instructions (SQ_INSTS_SALU).
    pub salu_insts: u64,
    /// Wave-cycles of residency (SQ_WAVE_CYCLES, SQ_LEVEL_WAVES).
    pub wave_cycles: u64,
}

/// How an SQ event's count lands on the SQ instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spread {
    /// Work: split over the instances so the per-instance samples sum to the total.
    Split,
    /// Time: every instance counts the whole value.
    Each,
}

impl Activity {
    /// Adds `other` to `self` (saturating).
    pub fn add(&mut self, other: &Activity) {
        let pairs = [
            (&mut self.elapsed_cycles, other.elapsed_cycles),
            (&mut self.gui_active_cycles, other.gui_active_cycles),
            (&mut self.cp_busy_cycles, other.cp_busy_cycles),
            (&mut self.spi_busy_cycles, other.spi_busy_cycles),
            (&mut self.sq_busy_cycles, other.sq_busy_cycles),
            (&mut self.waves, other.waves),
            (&mut self.waves32, other.waves32),
            (&mut self.waves64, other.waves64),
            (&mut self.valu_insts, other.valu_insts),
            (&mut self.salu_insts, other.salu_insts),
            (&mut self.wave_cycles, other.wave_cycles),
        ];
        for (total, value) in pairs {
            *total = total.saturating_add(value);
        }
    }

    /// Command-processor time with no shader work (a PM4 submission): `ns` elapsed and CP-busy.
    pub fn command_processor(ns: u64, geometry: &Geometry) -> Activity {
        let cycles = geometry.cycles(ns);
        Activity {
            elapsed_cycles: cycles,
            cp_busy_cycles: cycles,
            ..Activity::default()
        }
    }

    /// `waves` waves of foreign wave32 work: busy time but no elapsed time of its own (it runs
    /// inside someone else's window).
    pub fn foreign(waves: u64, geometry: &Geometry) -> Activity {
        let wave_cycles = waves.saturating_mul(FOREIGN_CYCLES_PER_WAVE);
        let busy = wave_cycles.div_ceil(u64::from(geometry.cus));
        Activity {
            elapsed_cycles: 0,
            gui_active_cycles: busy,
            cp_busy_cycles: busy,
            spi_busy_cycles: busy,
            sq_busy_cycles: busy,
            waves,
            waves32: waves,
            waves64: 0,
            valu_insts: waves.saturating_mul(FOREIGN_VALU_PER_WAVE),
            salu_insts: waves.saturating_mul(FOREIGN_SALU_PER_WAVE),
            wave_cycles,
        }
    }

    /// What GRBM select `select` counts of this activity (0 for unmodelled ids).
    pub fn grbm(&self, select: u32) -> u64 {
        match select {
            grbm::COUNT => self.elapsed_cycles,
            grbm::GUI_ACTIVE => self.gui_active_cycles,
            grbm::CP_BUSY => self.cp_busy_cycles,
            grbm::SPI_BUSY => self.spi_busy_cycles,
            _ => 0,
        }
    }

    /// What SQ select `select` counts of this activity, and how it spreads over instances.
    fn sq(&self, select: u32) -> (u64, Spread) {
        match select {
            sq::CYCLES => (self.elapsed_cycles, Spread::Each),
            sq::BUSY_CYCLES => (self.sq_busy_cycles, Spread::Each),
            sq::WAVES => (self.waves, Spread::Split),
            sq::WAVES_32 => (self.waves32, Spread::Split),
            sq::WAVES_64 => (self.waves64, Spread::Split),
            sq::LEVEL_WAVES | sq::WAVE_CYCLES => (self.wave_cycles, Spread::Split),
            sq::INSTS_SALU => (self.salu_insts, Spread::Split),
            sq::INSTS_VALU => (self.valu_insts, Spread::Split),
            _ => (0, Spread::Split),
        }
    }
}

/// Stream ids of the session's independent random streams.
const STREAM_SESSION: u64 = 1;
const STREAM_CONTAMINATION: u64 = 2;
const STREAM_SQ_ZERO: u64 = 3;
const STREAM_DRIFT_TIME: u64 = 4;
const STREAM_SMALL_BURSTS: u64 = 5;

/// The knobs of [`Session`], sanitised from `[counters]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// Mean foreign bursts in a 1 ms window.
    pub contamination_per_ms: f64,
    /// Exponent of the window length in the burst count.
    pub contamination_rate_exponent: f64,
    /// Median foreign burst in a 1 ms window, waves.
    pub contamination_median: f64,
    /// Exponent of the window length in the burst size.
    pub contamination_size_exponent: f64,
    /// Log-normal sigma of the burst size.
    pub contamination_sigma: f64,
    /// Share of the bursts that are small.
    pub small_share: f64,
    /// Median small burst, waves.
    pub small_median: f64,
    /// Probability of a GRBM zero burst per session, averaged over wall-clock time.
    pub grbm_probability: f64,
    /// The highest probability the drift reaches.
    pub grbm_peak_probability: f64,
    /// Drift knot spacing, seconds (0: no drift).
    pub drift_knot_s: f64,
    /// Burst duration bounds and median, ns.
    pub burst_min_ns: f64,
    /// Median burst duration, ns.
    pub burst_median_ns: f64,
    /// Longest burst duration, ns.
    pub burst_max_ns: f64,
    /// Log-normal sigma of the burst duration.
    pub burst_sigma: f64,
    /// Probability of an SQ zero read-back per dispatch.
    pub sq_zero_probability: f64,
}

impl Knobs {
    /// From the scenario's `[counters]`; inconsistent burst bounds fall back to the defaults.
    pub fn new(counters: &Counters) -> Knobs {
        let bursts = if counters.burst_range_ok() {
            counters.clone()
        } else {
            Counters::default()
        };
        let clamp = |p: f64| if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
        Knobs {
            contamination_per_ms: finite(counters.contamination_per_ms),
            contamination_rate_exponent: finite(counters.contamination_rate_exponent),
            contamination_median: counters.contamination_median_waves.max(1.0),
            contamination_size_exponent: finite(counters.contamination_size_exponent),
            contamination_sigma: finite(counters.contamination_sigma),
            small_share: clamp(counters.contamination_small_share),
            small_median: counters.contamination_small_median_waves.max(1.0),
            grbm_probability: clamp(counters.grbm_zero_session_probability),
            grbm_peak_probability: clamp(counters.grbm_zero_peak_probability),
            drift_knot_s: finite(counters.grbm_drift_minutes) * 60.0,
            burst_min_ns: bursts.grbm_burst_min_ms * 1e6,
            burst_median_ns: bursts.grbm_burst_median_ms * 1e6,
            burst_max_ns: bursts.grbm_burst_max_ms * 1e6,
            burst_sigma: bursts.grbm_burst_sigma.max(0.0),
            sq_zero_probability: clamp(counters.sq_zero_probability),
        }
    }

    /// The GRBM zero-burst probability of a session opened at `time_s` seconds of drift time.
    ///
    /// Value noise: knots every `drift_knot_s` seconds, each `mean * (a + 1) * U^a` with `U`
    /// uniform from a hash of [`DRIFT_SEED`] and the knot index and `a = peak / mean - 1`, so
    /// a knot lies in `[0, peak]` and averages `mean`; between knots the value moves along a
    /// smoothstep, which keeps the time average at `mean`. Without drift (knot spacing 0, or
    /// `peak <= mean`) every moment has the mean.
    pub fn grbm_probability_at(&self, time_s: f64) -> f64 {
        let mean = self.grbm_probability;
        let peak = self.grbm_peak_probability;
        if self.drift_knot_s <= 0.0 || peak <= mean || mean <= 0.0 || !time_s.is_finite() {
            return mean;
        }
        let exponent = peak / mean - 1.0;
        let position = time_s.max(0.0) / self.drift_knot_s;
        let index = position.floor();
        let fraction = position - index;
        let knot = |k: f64| {
            let mut rng = Rng::stream(DRIFT_SEED, k as u64);
            mean * (exponent + 1.0) * rng.uniform().powf(exponent)
        };
        let (from, to) = (knot(index), knot(index + 1.0));
        let smooth = fraction * fraction * (3.0 - 2.0 * fraction);
        (from + (to - from) * smooth).clamp(0.0, 1.0)
    }
}

/// The fixed global seed of the GRBM drift: every process (whatever its own seed) sees the same
/// probability at the same moment, so affected sessions cluster in wall-clock time.
pub const DRIFT_SEED: u64 = 0x5EED_0DD5_6B4D_0001;

/// Drift time span a pinned seed is mapped into: 10 000 hours.
const PINNED_DRIFT_SPAN_S: f64 = 10_000.0 * 3600.0;

/// The drift time of a pinned seed: a deterministic point, uniform over 10 000 hours, so one
/// seed always sees the same probability and many seeds see the time-averaged rate.
pub fn pinned_drift_time_s(seed: u64) -> f64 {
    let mut rng = Rng::stream(seed, STREAM_DRIFT_TIME);
    rng.uniform() * PINNED_DRIFT_SPAN_S
}

/// The read-back faults decided for one counted dispatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Every GRBM counter reads zero (inside the session's opening burst).
    pub grbm_zero: bool,
    /// Every SQ counter reads zero (an isolated read-back failure).
    pub sq_zero: bool,
}

/// The WSL2 pitfalls of one session (one process's thunk lifetime on one node).
#[derive(Clone, Debug)]
pub struct Session {
    knobs: Knobs,
    contamination: Rng,
    /// Which bursts are small (its own stream, so the other draws of a seed stay as they are).
    small_bursts: Rng,
    sq_zero: Rng,
    burst_probability: f64,
    burst_ns: Option<u64>,
    first_counted_ns: Option<u64>,
}

impl Session {
    /// A session of node `node` with a pinned `seed`: its drift time comes from the seed too
    /// ([`pinned_drift_time_s`]), so the whole session is reproducible.
    pub fn new(counters: &Counters, seed: u64, node: u32) -> Session {
        Session::at(counters, seed, node, pinned_drift_time_s(seed))
    }

    /// A session of node `node` with `seed`, opened at `drift_time_s` seconds of drift time
    /// (wall-clock seconds for an unpinned process). Whether (and for how long) its GRBM
    /// counters fail at the start is decided here: with the drift's probability at that
    /// moment, from the session's own stream.
    pub fn at(counters: &Counters, seed: u64, node: u32, drift_time_s: f64) -> Session {
        let knobs = Knobs::new(counters);
        let base = u64::from(node) << 8;
        let mut session_rng = Rng::stream(seed, base | STREAM_SESSION);
        let burst_probability = knobs.grbm_probability_at(drift_time_s);
        let burst_ns = session_rng
            .chance(burst_probability)
            .then(|| burst_duration(&knobs, &mut session_rng));
        Session {
            contamination: Rng::stream(seed, base | STREAM_CONTAMINATION),
            small_bursts: Rng::stream(seed, base | STREAM_SMALL_BURSTS),
            sq_zero: Rng::stream(seed, base | STREAM_SQ_ZERO),
            knobs,
            burst_probability,
            burst_ns,
            first_counted_ns: None,
        }
    }

    /// The GRBM zero-burst probability this session was drawn with.
    pub fn burst_probability(&self) -> f64 {
        self.burst_probability
    }

    /// The GRBM zero burst of this session, in ns of GPU time, if it has one.
    pub fn burst_ns(&self) -> Option<u64> {
        self.burst_ns
    }

    /// The contamination parameters of a window of `window_ns`: the mean burst count
    /// `per_ms * w^rate_exponent` and the median burst size `median * w^size_exponent`, with
    /// `w` the window in ms. Longer windows get more and bigger bursts.
    pub fn contamination_for(&self, window_ns: u64) -> (f64, f64) {
        let knobs = &self.knobs;
        if window_ns == 0 {
            return (0.0, knobs.contamination_median);
        }
        let window_ms = window_ns as f64 / 1e6;
        (
            knobs.contamination_per_ms * window_ms.powf(knobs.contamination_rate_exponent),
            (knobs.contamination_median * window_ms.powf(knobs.contamination_size_exponent))
                .max(1.0),
        )
    }

    /// Foreign waves landing in `window_ns` of modelled counting window: a Poisson number of
    /// bursts, each log-normal in size, both parameters from the window length
    /// ([`Session::contamination_for`]); a share of them ([`Knobs::small_share`]) is small,
    /// log-normal around [`Knobs::small_median`] whatever the window. Never negative; zero
    /// for a clean stretch.
    pub fn foreign_waves(&mut self, window_ns: u64) -> u64 {
        let (lambda, median) = self.contamination_for(window_ns);
        let bursts = self.contamination.poisson(lambda);
        let sigma = self.knobs.contamination_sigma;
        if bursts > 64 {
            // Many bursts (a long window): their sum is close to normal.
            let mean = median * (sigma * sigma / 2.0).exp();
            let variance = ((sigma * sigma).exp() - 1.0) * mean * mean;
            let n = bursts as f64;
            let total = n * mean + (n * variance).sqrt() * self.contamination.normal();
            return total.max(n).round() as u64;
        }
        (0..bursts)
            .map(|_| {
                let mut waves = self.contamination.lognormal(median, sigma).round();
                if self.small_bursts.chance(self.knobs.small_share) {
                    waves = (waves * self.knobs.small_median / median).round();
                }
                if waves < 1.0 {
                    1
                } else {
                    waves.min(1e15) as u64
                }
            })
            .fold(0_u64, u64::saturating_add)
    }

    /// The faults of a dispatch counted at GPU time `start_ns`. The first call marks the start
    /// of the session's counting: the GRBM burst (if any) covers dispatches that start before
    /// `first + burst`.
    pub fn dispatch_faults(&mut self, start_ns: u64) -> Faults {
        let first = *self.first_counted_ns.get_or_insert(start_ns);
        let grbm_zero = self
            .burst_ns
            .is_some_and(|burst| start_ns.saturating_sub(first) < burst);
        let sq_zero = self.sq_zero.chance(self.knobs.sq_zero_probability);
        Faults { grbm_zero, sq_zero }
    }
}

/// A burst duration: log-normal around the median, redrawn until inside [min, max].
fn burst_duration(knobs: &Knobs, rng: &mut Rng) -> u64 {
    let (min, max) = (knobs.burst_min_ns, knobs.burst_max_ns);
    for _ in 0..64 {
        let value = rng.lognormal(knobs.burst_median_ns, knobs.burst_sigma);
        if (min..=max).contains(&value) {
            return value.round() as u64;
        }
    }
    knobs.burst_median_ns.clamp(min, max).round() as u64
}

/// `CP_PERFMON_CNTL.PERFMON_STATE` values.
pub mod perfmon {
    /// Disable and reset.
    pub const DISABLE_AND_RESET: u32 = 0;
    /// Count.
    pub const START_COUNTING: u32 = 1;
    /// Stop (freeze).
    pub const STOP_COUNTING: u32 = 2;
}

/// The counting window since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Window {
    elapsed_cycles: u64,
    grbm_zero: bool,
    sq_zero: bool,
}

/// The perfmon hardware: state machine, slots, accumulators, faults.
#[derive(Clone, Debug)]
pub struct PerfBlock {
    geometry: Geometry,
    session: Session,
    state: u32,
    compute_enable: bool,
    grbm_select: [u32; GRBM_SLOTS],
    sq_select: [u32; SQ_SLOTS],
    grbm_count: [u64; GRBM_SLOTS],
    /// `sq_count[instance][slot]`.
    sq_count: Vec<[u64; SQ_SLOTS]>,
    window: Window,
    rotation: usize,
}

impl PerfBlock {
    /// Idle perfmon hardware (state 0, perf counting disabled, all selects 0).
    pub fn new(geometry: Geometry, session: Session) -> PerfBlock {
        PerfBlock {
            geometry,
            session,
            state: perfmon::DISABLE_AND_RESET,
            compute_enable: false,
            grbm_select: [0; GRBM_SLOTS],
            sq_select: [0; SQ_SLOTS],
            grbm_count: [0; GRBM_SLOTS],
            sq_count: vec![[0; SQ_SLOTS]; geometry.sq_instances()],
            window: Window::default(),
            rotation: 0,
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The session behind the faults.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Sets `PERFMON_STATE`: 0 zeroes every counter and starts a new window; 1 counts; 2 (or
    /// anything else) freezes.
    pub fn set_state(&mut self, state: u32) {
        self.state = state;
        if state == perfmon::DISABLE_AND_RESET {
            self.grbm_count = [0; GRBM_SLOTS];
            self.sq_count
                .iter_mut()
                .for_each(|slots| *slots = [0; SQ_SLOTS]);
            self.window = Window::default();
        }
    }

    /// The current `PERFMON_STATE`.
    pub fn state(&self) -> u32 {
        self.state
    }

    /// `COMPUTE_PERFCOUNT_ENABLE` bit 0.
    pub fn set_compute_enable(&mut self, enable: bool) {
        self.compute_enable = enable;
    }

    /// Programs GRBM slot `slot` (`PERF_SEL[5:0]` of `value`).
    pub fn set_grbm_select(&mut self, slot: usize, value: u32) {
        if let Some(select) = self.grbm_select.get_mut(slot) {
            *select = value & 0x3F;
        }
    }

    /// Programs SQ slot `slot` (`PERF_SEL[8:0]` of `value`).
    pub fn set_sq_select(&mut self, slot: usize, value: u32) {
        if let Some(select) = self.sq_select.get_mut(slot) {
            *select = value & 0x1FF;
        }
    }

    /// Whether work is counted now: state 1 and compute perf counting enabled.
    pub fn counting(&self) -> bool {
        self.state == perfmon::START_COUNTING && self.compute_enable
    }

    /// Counts `ns` of command-processor time (a PM4 submission) and the foreign work landing
    /// in it, if counting.
    pub fn count_command_processor(&mut self, ns: u64) {
        if self.counting() {
            let own = Activity::command_processor(ns, &self.geometry);
            self.accumulate(&own);
            self.contaminate(ns);
        }
    }

    /// Counts a dispatch that started at GPU time `start_ns`, took `duration_ns` (modelled)
    /// and did `own`, plus the foreign work landing in it, if counting. Returns the faults
    /// decided for it (`None` when not counted).
    pub fn count_dispatch(
        &mut self,
        start_ns: u64,
        duration_ns: u64,
        own: &Activity,
    ) -> Option<Faults> {
        if !self.counting() {
            return None;
        }
        let faults = self.session.dispatch_faults(start_ns);
        self.window.grbm_zero |= faults.grbm_zero;
        self.window.sq_zero |= faults.sq_zero;
        self.accumulate(own);
        self.contaminate(duration_ns);
        Some(faults)
    }

    fn contaminate(&mut self, window_ns: u64) {
        let waves = self.session.foreign_waves(window_ns);
        if waves > 0 {
            let foreign = Activity::foreign(waves, &self.geometry);
            self.accumulate(&foreign);
        }
    }

    fn accumulate(&mut self, activity: &Activity) {
        self.window.elapsed_cycles = self
            .window
            .elapsed_cycles
            .saturating_add(activity.elapsed_cycles);
        for (count, &select) in self.grbm_count.iter_mut().zip(&self.grbm_select) {
            *count = count.saturating_add(activity.grbm(select));
        }
        let instances = self.sq_count.len();
        if instances == 0 {
            return;
        }
        let rotation = self.rotation;
        self.rotation = (self.rotation + 1) % instances;
        for slot in 0..SQ_SLOTS {
            let (value, spread) = activity.sq(self.sq_select[slot]);
            if value == 0 {
                continue;
            }
            let (share, extra) = (value / instances as u64, value % instances as u64);
            for (index, counts) in self.sq_count.iter_mut().enumerate() {
                let add = match spread {
                    Spread::Each => value,
                    Spread::Split => {
                        let position = (index + instances - rotation) % instances;
                        share + u64::from((position as u64) < extra)
                    }
                };
                counts[slot] = counts[slot].saturating_add(add);
            }
        }
    }

    /// GRBM slot `slot` as read back (64-bit): zero inside the GRBM burst; busy counts never
    /// exceed the window's elapsed cycles.
    pub fn read_grbm(&self, slot: usize) -> u64 {
        let (Some(&count), Some(&select)) = (self.grbm_count.get(slot), self.grbm_select.get(slot))
        else {
            return 0;
        };
        if self.window.grbm_zero {
            return 0;
        }
        match select {
            grbm::COUNT => count,
            _ => count.min(self.window.elapsed_cycles),
        }
    }

    /// SQ slot `slot` of instance `instance` as read back (32-bit): zero after an SQ read-back
    /// fault; SQ_BUSY_CYCLES never exceeds SQ_CYCLES.
    pub fn read_sq(&self, slot: usize, instance: usize) -> u32 {
        let (Some(counts), Some(&select)) = (self.sq_count.get(instance), self.sq_select.get(slot))
        else {
            return 0;
        };
        if self.window.sq_zero {
            return 0;
        }
        let count = counts[slot];
        let count = if select == sq::BUSY_CYCLES {
            count.min(self.window.elapsed_cycles)
        } else {
            count
        };
        count as u32
    }

    /// The sum of SQ slot `slot` over every instance, as aqlprofile's reduce(sum) sees it.
    pub fn read_sq_sum(&self, slot: usize) -> u64 {
        (0..self.sq_count.len())
            .map(|instance| u64::from(self.read_sq(slot, instance)))
            .sum()
    }
}
