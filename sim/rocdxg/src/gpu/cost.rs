//! The cost model: how many waves a dispatch launches, how long it and an SDMA copy take,
//! and what the counters should report of a dispatch (its truth).

use wslsim_scenario::Gpu as GpuKnobs;

use super::counters::{Activity, Geometry};

/// A kernel dispatch as the cost model sees it (`wslsim_dispatch_t` without the pointers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size in work-items.
    pub workgroup: [u16; 3],
    /// 32 or 64.
    pub wave_size: u16,
    /// VALU instructions per wave.
    pub valu_per_wave: u32,
    /// SALU instructions per wave.
    pub salu_per_wave: u32,
    /// Shader cycles per wave (0: the scenario's `[gpu] cycles_per_wave`).
    pub cycles_per_wave: u32,
}

impl Kernel {
    /// A one-dimensional wave32 kernel with the default cost.
    pub fn linear(items: u32, workgroup: u16) -> Kernel {
        Kernel {
            grid: [items, 1, 1],
            workgroup: [workgroup, 1, 1],
            wave_size: 32,
            valu_per_wave: 0,
            salu_per_wave: 0,
            cycles_per_wave: 0,
        }
    }

    /// Checks what the hardware needs: every grid and workgroup dimension ≥ 1, waves of 32 or
    /// 64.
    pub fn validate(&self) -> Result<(), String> {
        if self.grid.contains(&0) {
            return Err(format!("grid {:?} has a zero dimension", self.grid));
        }
        if self.workgroup.contains(&0) {
            return Err(format!(
                "workgroup {:?} has a zero dimension",
                self.workgroup
            ));
        }
        if self.wave_size != 32 && self.wave_size != 64 {
            return Err(format!("wave size {} is not 32 or 64", self.wave_size));
        }
        Ok(())
    }

    /// Workgroups launched: the product of ceil(grid / workgroup) per dimension.
    pub fn workgroups(&self) -> u64 {
        (0..3)
            .map(|d| u64::from(self.grid[d]).div_ceil(u64::from(self.workgroup[d].max(1))))
            .fold(1, u64::saturating_mul)
    }

    /// Waves launched. Each workgroup launches ceil(its work-items / wave size) waves; a
    /// partial workgroup at the grid's edge (HSA allows them) has fewer work-items, so when
    /// the grid is a multiple of the workgroup this is `workgroups × ceil(items / wave)`.
    pub fn waves(&self) -> u64 {
        let wave = u64::from(self.wave_size.max(1));
        // Per dimension: (size of a workgroup, how many have it): full ones and one partial.
        let kinds: [[(u64, u64); 2]; 3] = std::array::from_fn(|d| {
            let grid = u64::from(self.grid[d]);
            let size = u64::from(self.workgroup[d].max(1));
            [
                (size, grid / size),
                (grid % size, u64::from(grid % size != 0)),
            ]
        });
        let mut waves = 0_u64;
        for &(x, nx) in &kinds[0] {
            for &(y, ny) in &kinds[1] {
                for &(z, nz) in &kinds[2] {
                    let count = nx.saturating_mul(ny).saturating_mul(nz);
                    if count != 0 {
                        waves =
                            waves.saturating_add(count.saturating_mul((x * y * z).div_ceil(wave)));
                    }
                }
            }
        }
        waves
    }
}

/// Longest modelled duration of one dispatch (10 s): an absurd grid must not stall the caller
/// for years.
pub const MAX_DISPATCH_NS: u64 = 10_000_000_000;

/// What a dispatch costs and what it really did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchCost {
    /// Waves launched.
    pub waves: u64,
    /// Shader cycles per wave used.
    pub cycles_per_wave: u64,
    /// Shader time: `waves × cycles_per_wave` spread over the CUs, in core cycles.
    pub shader_cycles: u64,
    /// Shader time in ns.
    pub shader_ns: u64,
    /// Modelled duration: launch overhead + shader time, ns (at most [`MAX_DISPATCH_NS`]).
    pub duration_ns: u64,
    /// The truth the counters see.
    pub activity: Activity,
}

impl DispatchCost {
    /// The cost of `kernel` on a GPU of `geometry` with the scenario's `[gpu]` knobs.
    pub fn of(kernel: &Kernel, geometry: &Geometry, knobs: &GpuKnobs) -> DispatchCost {
        let waves = kernel.waves();
        let cycles_per_wave = u64::from(if kernel.cycles_per_wave == 0 {
            knobs.cycles_per_wave.max(1)
        } else {
            kernel.cycles_per_wave
        });
        let wave_cycles = waves.saturating_mul(cycles_per_wave);
        let shader_cycles = wave_cycles.div_ceil(u64::from(geometry.cus.max(1)));
        let shader_ns = geometry.ns(shader_cycles);
        let duration_ns = knobs
            .launch_overhead_ns
            .saturating_add(shader_ns)
            .min(MAX_DISPATCH_NS);
        let duration_cycles = geometry.cycles(duration_ns);
        let (waves32, waves64) = if kernel.wave_size == 64 {
            (0, waves)
        } else {
            (waves, 0)
        };
        let activity = Activity {
            elapsed_cycles: duration_cycles,
            gui_active_cycles: duration_cycles,
            cp_busy_cycles: duration_cycles,
            spi_busy_cycles: shader_cycles,
            sq_busy_cycles: shader_cycles,
            waves,
            waves32,
            waves64,
            valu_insts: waves.saturating_mul(u64::from(kernel.valu_per_wave)),
            salu_insts: waves.saturating_mul(u64::from(kernel.salu_per_wave)),
            wave_cycles,
        };
        DispatchCost {
            waves,
            cycles_per_wave,
            shader_cycles,
            shader_ns,
            duration_ns,
            activity,
        }
    }
}

impl DispatchCost {
    /// The cost of the same dispatch on a kernel `factor` times as slow: the duration and the
    /// shader time scaled (a factor of 1, or one that is not a positive finite number, changes
    /// nothing), the cycles the counters see following them; waves and instructions stay.
    pub fn scaled(self, factor: f64) -> DispatchCost {
        if factor == 1.0 || !factor.is_finite() || factor <= 0.0 {
            return self;
        }
        let scale = |v: u64| ((v as f64) * factor).round().max(1.0) as u64;
        let duration_ns = scale(self.duration_ns).min(MAX_DISPATCH_NS);
        let ratio = duration_ns as f64 / self.duration_ns.max(1) as f64;
        let follow = |v: u64| ((v as f64) * ratio).round() as u64;
        let shader_cycles = scale(self.shader_cycles);
        DispatchCost {
            shader_cycles,
            shader_ns: scale(self.shader_ns),
            duration_ns,
            activity: Activity {
                elapsed_cycles: follow(self.activity.elapsed_cycles),
                gui_active_cycles: follow(self.activity.gui_active_cycles),
                cp_busy_cycles: follow(self.activity.cp_busy_cycles),
                spi_busy_cycles: shader_cycles,
                sq_busy_cycles: shader_cycles,
                wave_cycles: scale(self.activity.wave_cycles),
                ..self.activity
            },
            ..self
        }
    }
}

/// Modelled duration of an SDMA copy of `bytes`: overhead + bytes / bandwidth, ns.
pub fn copy_ns(bytes: u64, knobs: &GpuKnobs) -> u64 {
    let transfer =
        (u128::from(bytes) * 1000).div_ceil(u128::from(knobs.sdma_bandwidth_mb_s.max(1)));
    knobs
        .sdma_overhead_ns
        .saturating_add(transfer.min(u128::from(u64::MAX)) as u64)
}

/// Run-to-run jitter of a modelled duration: at most this fraction either way (3 %).
pub const JITTER: f64 = 0.03;

/// `ns` with its run-to-run jitter: scaled by `1 + JITTER × (u₁ + u₂ − 1)` (a triangular draw in
/// ±[`JITTER`], most durations near the model) from `draws`, at least 1 ns, at most
/// [`MAX_DISPATCH_NS`] when `ns` is within it. The same draws give the same duration.
pub fn jittered(ns: u64, draws: &mut super::rng::Rng) -> u64 {
    let spread = draws.uniform() + draws.uniform() - 1.0;
    let scaled = (ns as f64 * (1.0 + JITTER * spread)).round();
    let cap = if ns <= MAX_DISPATCH_NS {
        MAX_DISPATCH_NS
    } else {
        u64::MAX
    };
    (scaled as u64).clamp(1, cap)
}
