//! Thread trace (SQTT): the per-shader-engine SQ thread-trace registers, the token stream each
//! tracing shader engine writes into its buffer (the `wslsim-sqtt` format), and the waves a
//! traced dispatch runs (docs/SIMULATOR.md, "Thread trace").
//!
//! Pure Rust with no FFI and no clock: [`ThreadTrace`] lives in the register file, register
//! writes only change its state and append tokens to in-memory encoders, and
//! [`ThreadTrace::flush`] (called by the PM4 executor, which has the memory) copies what was
//! appended into each engine's buffer. A dispatch ([`ThreadTrace::record`]) appends its
//! waves' tokens; they reach memory at the next PM4 submission, at the latest with the
//! `CTRL` write that ends the trace.

use std::collections::HashMap;

use wslsim_sqtt::{Category, Encoder, GFX11, HEADER_BYTES, Header, Instruction, WaveKey};

use super::cost::Kernel;
use super::counters::Geometry;
use super::pm4::Memory;
use super::regs::GfxIndex;
use super::rng::Rng;

/// Thread-trace registers (absolute dword addresses, verified-facts §1 "ATT bonus",
/// `abi/gfx11-registers.tsv`) and their fields.
pub mod reg {
    /// `SQ_THREAD_TRACE_BUF0_BASE`: buffer address bits 12..44.
    pub const BUF0_BASE: u32 = 0xD9E8;
    /// `SQ_THREAD_TRACE_BUF0_SIZE`: `BASE_HI` [3:0] (address bits 44..48), `SIZE` [29:8]
    /// (bytes >> 12).
    pub const BUF0_SIZE: u32 = 0xD9E9;
    /// `SQ_THREAD_TRACE_CTRL`: `MODE` [1:0] (0 off).
    pub const CTRL: u32 = 0xD9EC;
    /// `SQ_THREAD_TRACE_MASK`: `SIMD_SEL` [1:0], `WGP_SEL` [7:4], `SA_SEL` b9,
    /// `WTYPE_INCLUDE` [16:10].
    pub const MASK: u32 = 0xD9ED;
    /// `SQ_THREAD_TRACE_TOKEN_MASK`: `TOKEN_EXCLUDE` [10:0].
    pub const TOKEN_MASK: u32 = 0xD9EE;
    /// `SQ_THREAD_TRACE_WPTR`: `OFFSET` [28:0], in [`super::WPTR_UNIT`]-byte units.
    pub const WPTR: u32 = 0xD9EF;
    /// `SQ_THREAD_TRACE_STATUS`: `FINISH_PENDING` [11:0], `WRITE_ERROR` b24, `BUSY` b25.
    pub const STATUS: u32 = 0xD9F4;
    /// `SQ_THREAD_TRACE_DROPPED_CNTR`.
    pub const DROPPED_CNTR: u32 = 0xD9FA;
    /// `SQ_THREAD_TRACE_USERDATA_2`: each write is a `REG_WRITE` token.
    pub const USERDATA_2: u32 = 0xC342;
    /// `COMPUTE_THREAD_TRACE_ENABLE` (SH space).
    pub const COMPUTE_THREAD_TRACE_ENABLE: u32 = 0x2E1E;

    /// The registers each shader engine has its own copy of.
    pub const PER_ENGINE: [u32; 8] = [
        BUF0_BASE,
        BUF0_SIZE,
        CTRL,
        MASK,
        TOKEN_MASK,
        WPTR,
        STATUS,
        DROPPED_CNTR,
    ];

    /// `CTRL.MODE`.
    pub const CTRL_MODE: u32 = 0x3;
    /// `MASK.SIMD_SEL`.
    pub const MASK_SIMD_SEL: u32 = 0x3;
    /// `MASK.WGP_SEL` shift (4 bits).
    pub const MASK_WGP_SEL_SHIFT: u32 = 4;
    /// `MASK.SA_SEL`.
    pub const MASK_SA_SEL: u32 = 1 << 9;
    /// `MASK.WTYPE_INCLUDE` bit of compute shaders (bit 6 of the [16:10] field).
    pub const MASK_WTYPE_COMPUTE: u32 = 1 << 16;
    /// `STATUS.FINISH_PENDING`.
    pub const STATUS_FINISH_PENDING: u32 = 0xFFF;
    /// `STATUS.WRITE_ERROR`.
    pub const STATUS_WRITE_ERROR: u32 = 1 << 24;
    /// `STATUS.BUSY`.
    pub const STATUS_BUSY: u32 = 1 << 25;
    /// `WPTR.OFFSET`.
    pub const WPTR_MASK: u32 = 0x1FFF_FFFF;
    /// `BUF0_SIZE.BASE_HI`.
    pub const SIZE_BASE_HI: u32 = 0xF;
    /// `BUF0_SIZE.SIZE` (after shifting right by 8).
    pub const SIZE_SIZE: u32 = 0x3F_FFFF;
}

/// `TOKEN_MASK.TOKEN_EXCLUDE` bits of the token kinds the simulated stream has (a set bit
/// excludes the kind).
pub mod exclude {
    /// Wave starts and ends (`WAVE_START`, `WAVE_END`).
    pub const WAVE: u32 = 1 << 4;
    /// Register writes (`REG_WRITE` of `USERDATA_2`).
    pub const REG: u32 = 1 << 5;
    /// Instructions (`INST`).
    pub const INST: u32 = 1 << 8;
}

/// Bytes per `WPTR` unit (pmc-dxg's choice, read the same here).
pub const WPTR_UNIT: u64 = 32;

/// Bytes of each token of the stream format (header dword + payload).
pub mod bytes {
    /// `TIME`.
    pub const TIME: u64 = 12;
    /// `REG_WRITE`.
    pub const REG_WRITE: u64 = 12;
    /// `WAVE_START`.
    pub const WAVE_START: u64 = 20;
    /// `INST`.
    pub const INST: u64 = 28;
    /// `WAVE_END`.
    pub const WAVE_END: u64 = 12;
    /// `DATA_LOST`.
    pub const DATA_LOST: u64 = 8;
    /// The most `TIME` fillers the end of a stream needs to reach a multiple of 32 bytes
    /// (12·a ≡ p mod 32 needs a ≤ 7).
    pub const MAX_PADDING: u64 = 7 * TIME;
    /// What every stream keeps free for its end: a `DATA_LOST` and the padding.
    pub const RESERVE: u64 = DATA_LOST + MAX_PADDING;
}

/// Cycles between the launches of two consecutive waves of a dispatch.
pub const LAUNCH_INTERVAL_CYCLES: u64 = 4;
/// One instruction in `STALL_ONE_IN` stalls.
pub const STALL_ONE_IN: u64 = 4;
/// The longest stall, cycles (a stall is 1 ..= this).
pub const STALL_MAX_CYCLES: u64 = 8;
/// Waves of one dispatch the trace model places at most (later waves are not traced).
pub const MAX_TRACED_WAVES: u64 = 1 << 24;

/// The shape of the GPU as the thread trace sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Shader engines.
    pub shader_engines: u32,
    /// Shader arrays per engine.
    pub arrays_per_engine: u32,
    /// WGPs per shader array.
    pub wgp_per_array: u32,
    /// SIMDs per WGP: 2 × `NumSIMDPerCU`, 1 to 4 (`SIMD_SEL` has two bits).
    pub simds_per_wgp: u32,
    /// Wave slots per SIMD: `MaxWavesPerSIMD`, 1 to 64.
    pub slots_per_simd: u32,
}

impl Shape {
    /// From the counters' geometry and the node's SIMD facts.
    pub fn new(geometry: &Geometry, simd_per_cu: u32, max_waves_per_simd: u32) -> Shape {
        Shape {
            shader_engines: geometry.shader_engines,
            arrays_per_engine: geometry.arrays_per_engine,
            wgp_per_array: geometry.wgp_per_array,
            simds_per_wgp: simd_per_cu.saturating_mul(2).clamp(1, 4),
            slots_per_simd: max_waves_per_simd.clamp(1, 64),
        }
    }

    /// WGPs of the whole GPU.
    pub fn wgps(&self) -> u64 {
        u64::from(self.shader_engines)
            * u64::from(self.arrays_per_engine)
            * u64::from(self.wgp_per_array)
    }

    /// Where the `j`-th WGP of the round robin is: (shader engine, WGP index within the
    /// engine = shader array × WGPs per array + WGP within the array). Engines vary fastest,
    /// then shader arrays, then the WGP within the array.
    pub fn wgp(&self, j: u64) -> (u32, u32) {
        let ses = u64::from(self.shader_engines);
        let sas = u64::from(self.arrays_per_engine);
        let se = (j % ses) as u32;
        let rest = j / ses;
        let sa = (rest % sas) as u32;
        let wgp = (rest / sas) as u32;
        (se, sa * self.wgp_per_array + wgp)
    }
}

/// One instruction of a kernel's program as the trace model executes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes from the kernel's first instruction.
    pub offset: u64,
    /// The decoder's instruction category.
    pub category: u8,
    /// Cycles without stalls.
    pub cycles: u32,
}

/// A dispatch as the trace model runs it.
#[derive(Clone, Copy, Debug)]
pub struct TracedDispatch<'a> {
    /// Grid, workgroup and wave size.
    pub kernel: &'a Kernel,
    /// The program every wave executes, in order.
    pub program: &'a [Step],
    /// Device address of the kernel's first instruction (0 if unknown).
    pub code_address: u64,
    /// Shader-clock cycle at which the first wave launches.
    pub first_wave_cycle: u64,
    /// The dispatch's seed (each wave's stalls come from its own stream of it).
    pub seed: u64,
}

/// Whether `time` is within a u32 delta at or after `base` (else a `TIME` token is needed:
/// the encoder's rule).
fn within_delta(time: u64, base: u64) -> bool {
    time.checked_sub(base)
        .is_some_and(|delta| u32::try_from(delta).is_ok())
}

/// One engine's stream: the encoder holds every token written so far (at most the buffer's
/// capacity), `flushed` bytes of it are already in memory.
#[derive(Clone, Debug)]
struct Stream {
    encoder: Encoder,
    /// The encoder's time base (tracked so token sizes are known before writing).
    base: u64,
    address: u64,
    capacity: u64,
    /// False when not even the header fits (or the address is 0): nothing is written.
    writable: bool,
    flushed: usize,
    /// A token did not fit: everything after it is dropped.
    full: bool,
    /// Bytes of the tokens dropped.
    dropped: u64,
    /// A token was dropped since `STATUS` was last written.
    write_error: bool,
    /// Between `CTRL` on and off.
    on: bool,
}

impl Stream {
    fn start(se: u32, address: u64, capacity: u64) -> Stream {
        let header = Header {
            gfxip_major: GFX11,
            shader_engine: u8::try_from(se).unwrap_or(u8::MAX),
        };
        let writable = address != 0 && capacity >= HEADER_BYTES as u64 + bytes::RESERVE;
        Stream {
            encoder: Encoder::with_header(header),
            base: 0,
            address,
            capacity,
            writable,
            flushed: 0,
            full: !writable,
            dropped: if writable { 0 } else { HEADER_BYTES as u64 },
            write_error: !writable,
            on: true,
        }
    }

    /// Bytes of the stream in the buffer.
    fn len(&self) -> u64 {
        if self.writable {
            self.encoder.len_bytes() as u64
        } else {
            0
        }
    }

    /// Whether a token of `token` bytes (after `extra` bytes of `TIME`) may be written; if
    /// not, the stream is full from now on and the token's bytes count as dropped.
    fn admit(&mut self, token: u64, extra: u64) -> bool {
        if !self.full && self.len() + extra + token + bytes::RESERVE <= self.capacity {
            return true;
        }
        self.full = true;
        self.write_error = true;
        self.dropped = self.dropped.saturating_add(token);
        false
    }

    /// Admits a timed token, writing the `TIME` it needs first.
    fn admit_timed(&mut self, time: u64, token: u64) -> bool {
        let needs_time = !within_delta(time, self.base);
        let extra = if needs_time { bytes::TIME } else { 0 };
        if !self.admit(token, extra) {
            return false;
        }
        if needs_time {
            self.encoder.timestamp(time);
            self.base = time;
        }
        true
    }

    fn reg_write(&mut self, register: u32, value: u32) {
        if self.admit(bytes::REG_WRITE, 0) {
            self.encoder.reg_write(register, value);
        }
    }

    fn wave_start(&mut self, wave: WaveKey, time: u64, entry_pc: u64) {
        if self.admit_timed(time, bytes::WAVE_START) {
            self.encoder.wave_start(wave, time, entry_pc);
        }
    }

    fn instruction(&mut self, wave: WaveKey, inst: Instruction) {
        if self.admit_timed(inst.time, bytes::INST) {
            self.encoder.instruction(wave, inst);
        }
    }

    fn wave_end(&mut self, wave: WaveKey, time: u64) {
        if self.admit_timed(time, bytes::WAVE_END) {
            self.encoder.wave_end(wave, time);
        }
    }

    /// `CTRL` off: a `DATA_LOST` if tokens were dropped, then `TIME` tokens restating the
    /// time base until the stream is a multiple of [`WPTR_UNIT`] bytes (both fit: every
    /// token left [`bytes::RESERVE`] free).
    fn finish(&mut self) {
        if !self.on {
            return;
        }
        self.on = false;
        if !self.writable {
            return;
        }
        if self.full {
            let dropped = u32::try_from(self.dropped).unwrap_or(u32::MAX);
            self.encoder.data_lost(dropped);
        }
        let pad = (WPTR_UNIT - self.len() % WPTR_UNIT) % WPTR_UNIT;
        let fillers = (0..8)
            .find(|a| (a * bytes::TIME) % WPTR_UNIT == pad)
            .unwrap_or(0);
        for _ in 0..fillers {
            self.encoder.timestamp(self.base);
        }
    }

    /// `WPTR`: the stream's start and the whole units written, in units.
    fn wptr(&self) -> u32 {
        let units = self.address / WPTR_UNIT + self.len() / WPTR_UNIT;
        units as u32 & reg::WPTR_MASK
    }

    /// Copies the bytes not yet in memory into the buffer.
    fn flush(&mut self, memory: &mut dyn Memory) -> Result<(), String> {
        let len = self.encoder.len_bytes();
        if !self.writable || len == self.flushed {
            return Ok(());
        }
        // Lengths are whole dwords (a 16-byte header, then dword tokens).
        let mut address = self.address + self.flushed as u64;
        for word in self.encoder.dwords_from(self.flushed / 4) {
            memory.write_u32(address, word)?;
            address += 4;
        }
        self.flushed = len;
        Ok(())
    }
}

/// One shader engine's thread-trace registers and stream.
#[derive(Clone, Debug, Default)]
struct Engine {
    buf0_base: u32,
    buf0_size: u32,
    ctrl: u32,
    mask: u32,
    token_mask: u32,
    status: u32,
    wptr: u32,
    dropped: u32,
    stream: Option<Stream>,
    /// Streams replaced by a new one before all their bytes reached memory.
    retired: Vec<Stream>,
}

impl Engine {
    fn address(&self) -> u64 {
        (u64::from(self.buf0_base) << 12) | (u64::from(self.buf0_size & reg::SIZE_BASE_HI) << 44)
    }

    fn capacity(&self) -> u64 {
        u64::from((self.buf0_size >> 8) & reg::SIZE_SIZE) << 12
    }

    fn tracing(&self) -> Option<&Stream> {
        self.stream.as_ref().filter(|stream| stream.on)
    }

    fn tracing_mut(&mut self) -> Option<&mut Stream> {
        self.stream.as_mut().filter(|stream| stream.on)
    }

    fn excludes(&self, kind: u32) -> bool {
        self.token_mask & kind != 0
    }

    fn write(&mut self, se: u32, register: u32, value: u32) {
        match register {
            reg::BUF0_BASE => self.buf0_base = value,
            reg::BUF0_SIZE => self.buf0_size = value,
            reg::MASK => self.mask = value,
            reg::TOKEN_MASK => self.token_mask = value,
            reg::WPTR => self.wptr = value,
            reg::DROPPED_CNTR => self.dropped = value,
            reg::STATUS => {
                self.status = value & !(reg::STATUS_BUSY | reg::STATUS_FINISH_PENDING);
                if let Some(stream) = self.stream.as_mut() {
                    stream.write_error = value & reg::STATUS_WRITE_ERROR != 0;
                }
            }
            reg::CTRL => {
                let was_on = self.ctrl & reg::CTRL_MODE != 0;
                let on = value & reg::CTRL_MODE != 0;
                self.ctrl = value;
                if on && !was_on {
                    let new = Stream::start(se, self.address(), self.capacity());
                    if let Some(old) = self.stream.replace(new)
                        && old.writable
                        && old.flushed != old.encoder.len_bytes()
                    {
                        self.retired.push(old);
                    }
                } else if !on && let Some(stream) = self.stream.as_mut() {
                    stream.finish();
                }
            }
            reg::USERDATA_2 => {
                if !self.excludes(exclude::REG)
                    && let Some(stream) = self.tracing_mut()
                {
                    stream.reg_write(register, value);
                }
            }
            _ => {}
        }
    }

    fn read(&self, register: u32) -> u32 {
        let stream = self.stream.as_ref();
        match register {
            reg::BUF0_BASE => self.buf0_base,
            reg::BUF0_SIZE => self.buf0_size,
            reg::CTRL => self.ctrl,
            reg::MASK => self.mask,
            reg::TOKEN_MASK => self.token_mask,
            reg::WPTR => stream.map_or(self.wptr, Stream::wptr),
            reg::DROPPED_CNTR => stream.map_or(self.dropped, |stream| {
                u32::try_from(stream.dropped).unwrap_or(u32::MAX)
            }),
            reg::STATUS => {
                let error = stream.is_some_and(|stream| stream.write_error);
                (self.status & !reg::STATUS_WRITE_ERROR)
                    | if error { reg::STATUS_WRITE_ERROR } else { 0 }
            }
            _ => 0,
        }
    }
}

/// What a tracing engine writes of the waves of a dispatch.
#[derive(Clone, Copy, Debug)]
struct Filter {
    /// The WGP (index within the engine) traced in detail, if `MASK` names one that exists.
    detail_wgp: Option<u32>,
    /// The SIMD traced in detail, if it exists.
    detail_simd: Option<u32>,
    waves: bool,
    instructions: bool,
}

/// The thread-trace hardware of one node: every engine's registers and stream, and
/// `COMPUTE_THREAD_TRACE_ENABLE`.
#[derive(Clone, Debug)]
pub struct ThreadTrace {
    engines: Vec<Engine>,
    compute_enable: bool,
}

impl ThreadTrace {
    /// Idle hardware of `shader_engines` engines (at least one).
    pub fn new(shader_engines: u32) -> ThreadTrace {
        ThreadTrace {
            engines: vec![Engine::default(); shader_engines.max(1) as usize],
            compute_enable: false,
        }
    }

    /// Whether `register` is one of the engines' (its accesses go through `GRBM_GFX_INDEX`).
    pub fn owns(register: u32) -> bool {
        register == reg::USERDATA_2 || reg::PER_ENGINE.contains(&register)
    }

    /// The engines `index` reaches: every engine for a broadcast, else the selected one (none
    /// if it does not exist).
    fn selected(&self, index: GfxIndex) -> std::ops::Range<usize> {
        match index.se {
            None => 0..self.engines.len(),
            Some(se) => {
                let se = (se as usize).min(self.engines.len());
                se..(se + 1).min(self.engines.len())
            }
        }
    }

    /// A write through `GRBM_GFX_INDEX` = `index`.
    pub fn write(&mut self, index: GfxIndex, register: u32, value: u32) {
        for se in self.selected(index) {
            self.engines[se].write(se as u32, register, value);
        }
    }

    /// A read through `GRBM_GFX_INDEX` = `index` (a broadcast reads engine 0; an engine that
    /// does not exist reads 0).
    pub fn read(&self, index: GfxIndex, register: u32) -> u32 {
        let se = index.se.unwrap_or(0) as usize;
        self.engines
            .get(se)
            .map_or(0, |engine| engine.read(register))
    }

    /// `COMPUTE_THREAD_TRACE_ENABLE`.
    pub fn set_compute_enable(&mut self, enable: bool) {
        self.compute_enable = enable;
    }

    /// Whether a dispatch now would be traced: compute tracing enabled and some engine's
    /// `CTRL.MODE` on.
    pub fn capturing(&self) -> bool {
        self.compute_enable && self.engines.iter().any(|engine| engine.tracing().is_some())
    }

    /// Copies every stream's new bytes into its buffer.
    pub fn flush(&mut self, memory: &mut dyn Memory) -> Result<(), String> {
        for engine in &mut self.engines {
            if !engine.retired.is_empty() {
                for mut stream in std::mem::take(&mut engine.retired) {
                    stream.flush(memory)?;
                }
            }
            if let Some(stream) = engine.stream.as_mut() {
                stream.flush(memory)?;
            }
        }
        Ok(())
    }

    /// The bytes of engine `se`'s current (or last) stream, as its buffer holds them once
    /// flushed. For tests.
    pub fn stream_bytes(&self, se: usize) -> Option<Vec<u8>> {
        let stream = self.engines.get(se)?.stream.as_ref()?;
        stream.writable.then(|| stream.encoder.bytes())
    }

    fn filter(&self, engine: &Engine, shape: &Shape) -> Option<Filter> {
        engine.tracing()?;
        if engine.mask & reg::MASK_WTYPE_COMPUTE == 0 {
            return None;
        }
        let wgp_sel = (engine.mask >> reg::MASK_WGP_SEL_SHIFT) & 0xF;
        let sa_sel = u32::from(engine.mask & reg::MASK_SA_SEL != 0);
        let simd_sel = engine.mask & reg::MASK_SIMD_SEL;
        Some(Filter {
            detail_wgp: (wgp_sel < shape.wgp_per_array && sa_sel < shape.arrays_per_engine)
                .then_some(sa_sel * shape.wgp_per_array + wgp_sel),
            detail_simd: (simd_sel < shape.simds_per_wgp).then_some(simd_sel),
            waves: !engine.excludes(exclude::WAVE),
            instructions: !engine.excludes(exclude::INST),
        })
    }

    /// Runs `dispatch`'s waves on the engines that trace (see docs/SIMULATOR.md, "Thread
    /// trace"): placement, timing and the tokens each engine's mask lets through. Does
    /// nothing unless [`ThreadTrace::capturing`].
    pub fn record(&mut self, dispatch: &TracedDispatch<'_>, shape: &Shape) {
        if !self.capturing() {
            return;
        }
        let filters: Vec<Option<Filter>> = self
            .engines
            .iter()
            .map(|engine| self.filter(engine, shape))
            .collect();
        if filters.iter().all(Option::is_none) {
            return;
        }
        let mut run = Run {
            dispatch,
            shape,
            filters: &filters,
            engines: &mut self.engines,
            queues: HashMap::new(),
            wave_index: 0,
        };
        run.all_waves();
    }
}

/// The wave slots of one SIMD: how many waves it has been given and when each slot frees.
#[derive(Clone, Debug)]
struct SimdQueue {
    placed: u64,
    free_at: Vec<u64>,
}

/// One traced dispatch in progress.
struct Run<'a> {
    dispatch: &'a TracedDispatch<'a>,
    shape: &'a Shape,
    filters: &'a [Option<Filter>],
    engines: &'a mut [Engine],
    /// By (engine, WGP, SIMD).
    queues: HashMap<(u32, u32, u32), SimdQueue>,
    /// Waves launched so far (of every engine).
    wave_index: u64,
}

/// The work-items of workgroup `index` along a dimension of `grid` items in workgroups of
/// `size` (the last one may be partial).
fn items_along(grid: u32, size: u16, index: u64) -> u64 {
    let size = u64::from(size.max(1));
    (u64::from(grid) - index * size).min(size)
}

impl Run<'_> {
    /// Every workgroup in linear order (x fastest), each on the next WGP of the round robin.
    fn all_waves(&mut self) {
        let kernel = self.dispatch.kernel;
        let counts: [u64; 3] = std::array::from_fn(|d| {
            u64::from(kernel.grid[d]).div_ceil(u64::from(kernel.workgroup[d].max(1)))
        });
        let wave_size = u64::from(kernel.wave_size.max(1));
        let wgps = self.shape.wgps().max(1);
        let mut group = 0_u64;
        for z in 0..counts[2] {
            let items_z = items_along(kernel.grid[2], kernel.workgroup[2], z);
            for y in 0..counts[1] {
                let items_zy = items_z * items_along(kernel.grid[1], kernel.workgroup[1], y);
                for x in 0..counts[0] {
                    let items = items_zy * items_along(kernel.grid[0], kernel.workgroup[0], x);
                    let (se, wgp) = self.shape.wgp(group % wgps);
                    self.workgroup(se, wgp, items.div_ceil(wave_size));
                    group += 1;
                    if self.wave_index >= MAX_TRACED_WAVES {
                        return;
                    }
                }
            }
        }
    }

    /// The `waves` waves of one workgroup on WGP `wgp` of engine `se`: wave `w` on SIMD
    /// `w mod simds_per_wgp`.
    fn workgroup(&mut self, se: u32, wgp: u32, waves: u64) {
        let Some(filter) = self.filters.get(se as usize).copied().flatten() else {
            self.wave_index = self.wave_index.saturating_add(waves);
            return;
        };
        for w in 0..waves {
            let simd = (w % u64::from(self.shape.simds_per_wgp)) as u32;
            self.wave(se, wgp, simd, &filter);
            self.wave_index += 1;
            if self.wave_index >= MAX_TRACED_WAVES {
                return;
            }
        }
    }

    fn wave(&mut self, se: u32, wgp: u32, simd: u32, filter: &Filter) {
        let slots = self.shape.slots_per_simd as usize;
        let queue = self
            .queues
            .entry((se, wgp, simd))
            .or_insert_with(|| SimdQueue {
                placed: 0,
                free_at: vec![0; slots],
            });
        let slot = (queue.placed % slots as u64) as usize;
        let ready = self
            .dispatch
            .first_wave_cycle
            .saturating_add(LAUNCH_INTERVAL_CYCLES.saturating_mul(self.wave_index));
        let start = ready.max(queue.free_at[slot]);
        queue.placed += 1;
        let Some(stream) = self.engines[se as usize].tracing_mut() else {
            return;
        };
        let key = WaveKey {
            cu: u8::try_from(wgp).unwrap_or(u8::MAX),
            simd: simd as u8,
            slot: slot as u8,
        };
        let detail = filter.detail_wgp == Some(wgp) && filter.detail_simd == Some(simd);
        if stream.full {
            // Nothing more reaches the buffer: count what the wave would have written.
            let mut lost = 0;
            if filter.waves {
                lost += bytes::WAVE_START + bytes::WAVE_END;
            }
            if detail && filter.instructions {
                lost += bytes::INST * self.dispatch.program.len() as u64;
            }
            stream.dropped = stream.dropped.saturating_add(lost);
            return;
        }
        if filter.waves {
            stream.wave_start(key, start, self.dispatch.code_address);
        }
        let mut rng = Rng::stream(self.dispatch.seed, self.wave_index);
        let mut time = start;
        for step in self.dispatch.program {
            let draw = rng.next_u64();
            let stall = if draw.is_multiple_of(STALL_ONE_IN) {
                1 + (draw >> 8) % STALL_MAX_CYCLES
            } else {
                0
            } as u32;
            let duration = step.cycles.saturating_add(stall);
            if detail && filter.instructions {
                stream.instruction(
                    key,
                    Instruction {
                        pc: self.dispatch.code_address.wrapping_add(step.offset),
                        category: Category(step.category),
                        time,
                        duration,
                        stall,
                    },
                );
            }
            time = time.saturating_add(u64::from(duration));
        }
        if filter.waves {
            stream.wave_end(key, time);
        }
        queue.free_at[slot] = time;
    }
}
