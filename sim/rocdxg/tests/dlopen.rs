//! Proves the real librocdxg.so works when `dlopen`ed, export hiding included.
//!
//! `cargo test` does not build the cdylib: run `cargo build -p sim-rocdxg -p sim-dxcore` first.
//! Each case runs in a child process with its own scenario file (see
//! `wslsim_scenario::harness`). The C layouts used here are written out independently of the
//! library's own Rust types.

use std::ffi::{CStr, c_char, c_void};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};

use wslsim_scenario::harness::{self, Case, Library, Target, check, u32_at};
use wslsim_scenario::monotonic_ns;

type NoArgs = unsafe extern "C" fn() -> i32;
/// `HsaSystemProperties*`: NumNodes, PlatformOem, PlatformId, PlatformRev.
type Acquire = unsafe extern "C" fn(*mut [u32; 4]) -> i32;
type GetNode = unsafe extern "C" fn(u32, *mut c_void) -> i32;
/// `HsaStructureSizes*`: StructureSizes, SizeOfHsaNodeProperties, SizeOfHsaExternalHandleDesc,
/// Reserved[5].
type AbiCheck = unsafe extern "C" fn(*const [u16; 8]) -> i32;
type Wallclock = unsafe extern "C" fn(u32, *mut u64) -> i32;

const REQUIRED: [&str; 6] = [
    "hsaKmtOpenKFD",
    "hsaKmtAcquireSystemProperties",
    "hsaKmtGetNodeProperties",
    "hsaKmtReleaseSystemProperties",
    "hsaKmtCloseKFD",
    "hsaKmtGetNodeWallclockFrequency",
];

struct Thunk {
    open: NoArgs,
    close: Option<NoArgs>,
    acquire: Acquire,
    get: GetNode,
    release: NoArgs,
    abi_check: Option<AbiCheck>,
    wallclock: Wallclock,
}

fn load(library: &Library) -> Result<Thunk, String> {
    // SAFETY: each type below is the export's C signature.
    unsafe {
        Ok(Thunk {
            open: library.function("hsaKmtOpenKFD")?,
            close: library.function("hsaKmtCloseKFD").ok(),
            acquire: library.function("hsaKmtAcquireSystemProperties")?,
            get: library.function("hsaKmtGetNodeProperties")?,
            release: library.function("hsaKmtReleaseSystemProperties")?,
            abi_check: library.function("DxgAbiCheck").ok(),
            wallclock: library.function("hsaKmtGetNodeWallclockFrequency")?,
        })
    }
}

impl Thunk {
    fn open(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.open)() }
    }

    fn close(&self) -> Result<i32, String> {
        let close = self.close.ok_or("hsaKmtCloseKFD is not exported")?;
        // SAFETY: no arguments.
        Ok(unsafe { close() })
    }

    fn acquire(&self) -> (i32, u32) {
        let mut properties = [0xDEAD_u32; 4];
        // SAFETY: a writable 16-byte HsaSystemProperties.
        let status = unsafe { (self.acquire)(&mut properties) };
        (status, properties[0])
    }

    fn release(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.release)() }
    }

    fn abi_check(&self, node_size: u16) -> Result<i32, String> {
        let check = self.abi_check.ok_or("DxgAbiCheck is not exported")?;
        let sizes = [16, node_size, 0, 0, 0, 0, 0, 0];
        // SAFETY: a readable 16-byte HsaStructureSizes.
        Ok(unsafe { check(&sizes) })
    }

    fn wallclock(&self, node: u32) -> (i32, u64) {
        let mut hz = 0;
        // SAFETY: a writable u64.
        let status = unsafe { (self.wallclock)(node, &mut hz) };
        (status, hz)
    }

    /// Reads node `node` into two 1024-byte buffers with different canaries; returns the
    /// status and the bytes written (the prefix both buffers agree on; the rest must be the
    /// untouched canary).
    fn node(&self, node: u32) -> Result<(i32, Vec<u8>), String> {
        let mut runs = Vec::new();
        for canary in [0xA5_u8, 0x5A] {
            let mut buffer = vec![canary; 1024];
            // SAFETY: 1024 writable bytes, more than any layout these cases use.
            let status = unsafe { (self.get)(node, buffer.as_mut_ptr().cast::<c_void>()) };
            runs.push((status, canary, buffer));
        }
        let (status, canary_a, a) = &runs[0];
        let (status_b, canary_b, b) = &runs[1];
        check("status of the repeated read", status_b, status)?;
        let written = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if a[written..].iter().any(|byte| byte != canary_a)
            || b[written..].iter().any(|byte| byte != canary_b)
        {
            return Err(format!("node {node}: bytes after {written} were touched"));
        }
        Ok((*status, a[..written].to_vec()))
    }

    /// The SDK's sequence: open, acquire, get x N, release, close. Returns the records.
    fn read_all(&self, record_size: usize) -> Result<Vec<Vec<u8>>, String> {
        check("hsaKmtOpenKFD", self.open(), 0)?;
        let (status, num_nodes) = self.acquire();
        check("hsaKmtAcquireSystemProperties", status, 0)?;
        let mut records = Vec::new();
        for node in 0..num_nodes {
            let (status, bytes) = self.node(node)?;
            check(&format!("hsaKmtGetNodeProperties({node})"), status, 0)?;
            check(
                &format!("bytes written for node {node}"),
                bytes.len(),
                record_size,
            )?;
            records.push(bytes);
        }
        check(
            "hsaKmtGetNodeProperties(NumNodes)",
            self.node(num_nodes)?.0,
            5,
        )?;
        check("hsaKmtReleaseSystemProperties", self.release(), 0)?;
        check("hsaKmtCloseKFD", self.close()?, 0)?;
        check("second hsaKmtCloseKFD", self.close()?, 20)?;
        Ok(records)
    }
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

/// Checks the 890M GPU record at the offsets of abi/HsaNodeProperties_396.tsv.
fn check_890m(record: &[u8]) -> Result<(), String> {
    check("NumFComputeCores@4", u32_at(record, 4), 32)?;
    check("NumSIMDPerCU@68", u32_at(record, 68), 2)?;
    check(
        "EngineId@76",
        u32_at(record, 76),
        42 | (11 << 10) | (5 << 16),
    )?;
    check("VendorId/DeviceId@84", u32_at(record, 84), 0x150E_1002)?;
    let name: Vec<u16> = record[112..240]
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .take_while(|&unit| unit != 0)
        .collect();
    check(
        "MarketingName@112",
        String::from_utf16_lossy(&name),
        "AMD Radeon 890M Graphics".into(),
    )?;
    check("AMDName@240", &record[240..248], b"gfx1150\0".as_slice())?;
    check("FamilyID@364", u32_at(record, 364), 150)?;
    if record.len() >= 376 {
        check("CtlStackSize@372", u32_at(record, 372), 0x2000)?;
    }
    if record.len() >= 392 {
        check("LuidLowPart@376", u32_at(record, 376), 0x0001_D3A5)?;
        check("WallClockKHz@384", u64_at(record, 384), 100_000)?;
    }
    Ok(())
}

fn default_machine(library: &Library) -> Result<(), String> {
    library.expect_present(&REQUIRED)?;
    library.expect_present(&["DxgAbiCheck"])?;
    let thunk = load(library)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 0)?;
    let records = thunk.read_all(396)?;
    check("NumNodes", records.len(), 2)?;
    check("node 0 NumCPUCores", u32_at(&records[0], 0), 24)?;
    check("node 0 NumFComputeCores", u32_at(&records[0], 4), 0)?;
    check_890m(&records[1])?;
    check("wallclock(1)", thunk.wallclock(1), (0, 100_000_000))?;
    check("wallclock(0)", thunk.wallclock(0), (0, 1_000_000_000))?;
    Ok(())
}

fn abi_check_absent(library: &Library) -> Result<(), String> {
    library.expect_missing("DxgAbiCheck")?;
    library.expect_present(&REQUIRED)?;
    let records = load(library)?.read_all(396)?;
    check_890m(&records[1])
}

fn close_hidden(library: &Library) -> Result<(), String> {
    library.expect_missing("hsaKmtCloseKFD")?;
    library.expect_present(&REQUIRED[..4])?;
    library.expect_present(&["DxgAbiCheck", "hsaKmtGetNodeWallclockFrequency"])?;
    let thunk = load(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    check("hsaKmtAcquireSystemProperties", thunk.acquire(), (0, 2))?;
    Ok(())
}

fn layout_376(library: &Library) -> Result<(), String> {
    let thunk = load(library)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 2)?;
    check("DxgAbiCheck(376)", thunk.abi_check(376)?, 0)?;
    let records = thunk.read_all(376)?;
    check_890m(&records[1])
}

fn negotiated(library: &Library) -> Result<(), String> {
    let thunk = load(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    check("hsaKmtAcquireSystemProperties", thunk.acquire(), (0, 2))?;
    let (status, before) = thunk.node(1)?;
    check("status before DxgAbiCheck", status, 0)?;
    check("bytes before DxgAbiCheck", before.len(), 368)?;
    check_890m(&before)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 0)?;
    let (status, after) = thunk.node(1)?;
    check("status after DxgAbiCheck", status, 0)?;
    check("bytes after DxgAbiCheck", after.len(), 396)?;
    check_890m(&after)?;
    check("hsaKmtReleaseSystemProperties", thunk.release(), 0)?;
    check("hsaKmtCloseKFD", thunk.close()?, 0)
}

fn unusable_scenario(library: &Library) -> Result<(), String> {
    library.expect_present(&REQUIRED)?;
    // This executable links a third copy of the scenario crate: it must get the same empty
    // machine without printing the diagnostic a second time (the parent counts the lines).
    check(
        "the test's own view of the scenario",
        wslsim_scenario::current(),
        &wslsim_scenario::Scenario::empty(),
    )?;
    let thunk = load(library)?;
    let records = thunk.read_all(396)?;
    check("NumNodes of the empty machine", records.len(), 1)
}

fn unknown_hidden_name(library: &Library) -> Result<(), String> {
    library.expect_missing("hsaKmtReleaseSystemProperties")?;
    library.expect_present(&["hsaKmtOpenKFD", "hsaKmtCloseKFD", "DxgAbiCheck"])?;
    Ok(())
}

// ------------------------------------------------------------------------------- the GPU

/// `HsaClockCounters*`: GPUClockCounter, CPUClockCounter, SystemClockCounter,
/// SystemClockFrequencyHz.
type ClockCounters = unsafe extern "C" fn(u32, *mut [u64; 4]) -> i32;
type Ticks = unsafe extern "C" fn(u32) -> u64;
/// `wslsim_dispatch_t*`, `wslsim_timing_t*` ({start_tick, end_tick}).
type Dispatch = unsafe extern "C" fn(u32, *const DispatchDesc, *mut [u64; 2]) -> i32;
type CopyFn = unsafe extern "C" fn(u32, *mut c_void, *const c_void, u64, *mut [u64; 2]) -> i32;
type Pm4Submit = unsafe extern "C" fn(u32, *const u32, u32, *mut c_char, u32) -> i32;

/// `wslsim_dispatch_t` as docs/SIMULATOR.md lays it out (72 bytes).
#[repr(C)]
struct DispatchDesc {
    grid: [u32; 3],
    workgroup: [u16; 3],
    wave_size: u16,
    vgprs: u32,
    sgprs: u32,
    lds_bytes: u32,
    scratch_bytes: u32,
    valu_per_wave: u32,
    salu_per_wave: u32,
    cycles_per_wave: u32,
    run: Option<unsafe extern "C-unwind" fn(*mut c_void)>,
    ctx: *mut c_void,
    code_address: u64,
}

const _: () = assert!(size_of::<DispatchDesc>() == 72);

struct Gpu {
    clock_counters: ClockCounters,
    ticks: Ticks,
    dispatch: Dispatch,
    copy: CopyFn,
    pm4: Pm4Submit,
}

fn load_gpu(library: &Library) -> Result<Gpu, String> {
    // SAFETY: each type below is the export's C signature.
    unsafe {
        Ok(Gpu {
            clock_counters: library.function("hsaKmtGetClockCounters")?,
            ticks: library.function("wslsim_gpu_ticks")?,
            dispatch: library.function("wslsim_gpu_dispatch")?,
            copy: library.function("wslsim_gpu_copy")?,
            pm4: library.function("wslsim_gpu_pm4")?,
        })
    }
}

unsafe extern "C-unwind" fn count_call(ctx: *mut c_void) {
    // SAFETY: the cases pass a live AtomicU32.
    unsafe { &*ctx.cast::<AtomicU32>() }.fetch_add(1, Ordering::SeqCst);
}

fn kernel(items: u32, wave_size: u16, ctx: *mut c_void) -> DispatchDesc {
    DispatchDesc {
        grid: [items, 1, 1],
        workgroup: [256, 1, 1],
        wave_size,
        vgprs: 8,
        sgprs: 16,
        lds_bytes: 0,
        scratch_bytes: 0,
        valu_per_wave: 10,
        salu_per_wave: 2,
        cycles_per_wave: 0,
        run: Some(count_call),
        ctx,
        code_address: 0,
    }
}

impl Gpu {
    fn clock_counters(&self, node: u32) -> (i32, [u64; 4]) {
        let mut counters = [0xDEAD; 4];
        // SAFETY: a writable 32-byte HsaClockCounters.
        let status = unsafe { (self.clock_counters)(node, &mut counters) };
        (status, counters)
    }

    fn ticks(&self, node: u32) -> u64 {
        // SAFETY: no pointers.
        unsafe { (self.ticks)(node) }
    }

    fn dispatch(&self, node: u32, descriptor: &DispatchDesc) -> (i32, [u64; 2]) {
        let mut timing = [0; 2];
        // SAFETY: a valid descriptor whose callback and ctx are valid, and a writable timing.
        let status = unsafe { (self.dispatch)(node, descriptor, &mut timing) };
        (status, timing)
    }

    fn pm4(&self, buffer: &[u32]) -> (i32, String) {
        let mut err = [0 as c_char; 256];
        // SAFETY: a valid buffer naming only live memory of the case, and a 256-byte err.
        let status = unsafe {
            (self.pm4)(
                1,
                buffer.as_ptr(),
                buffer.len() as u32,
                err.as_mut_ptr(),
                256,
            )
        };
        // SAFETY: NUL-terminated by the export.
        let reason = unsafe { CStr::from_ptr(err.as_ptr()) };
        (status, reason.to_string_lossy().into_owned())
    }
}

/// A few PM4 packets, encoded by hand (intercept-pmc-att.md §5.2–5.4).
#[derive(Default)]
struct Pm4 {
    dwords: Vec<u32>,
}

const fn packet3(op: u32, count: u32) -> u32 {
    (3 << 30) | (count << 16) | (op << 8)
}

impl Pm4 {
    fn uconfig(&mut self, reg: u32, value: u32) -> &mut Self {
        self.dwords.extend([packet3(0x79, 1), reg - 0xC000, value]);
        self
    }

    fn sh(&mut self, reg: u32, value: u32) -> &mut Self {
        self.dwords.extend([packet3(0x76, 1), reg - 0x2C00, value]);
        self
    }

    fn wait_idle(&mut self) -> &mut Self {
        self.dwords.extend([packet3(0x46, 0), 0x407]);
        self
    }

    fn copy_to(&mut self, reg: u32, address: *mut u32) -> &mut Self {
        let address = address as u64;
        self.dwords.extend([
            packet3(0x40, 4),
            2 << 8,
            reg,
            0,
            address as u32,
            (address >> 32) as u32,
        ]);
        self
    }
}

const GRBM_GFX_INDEX: u32 = 0xC200;
const BROADCAST: u32 = 0xE000_0000;
const CP_PERFMON_CNTL: u32 = 0xD808;

/// aqlprofile's start for GRBM_COUNT (GRBM slot 0) and SQ_WAVES (SQ slot 0).
fn start_buffer() -> Pm4 {
    let mut pm4 = Pm4::default();
    pm4.wait_idle()
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .uconfig(CP_PERFMON_CNTL, 0)
        .uconfig(0xD9E2, 0x1_FFFF)
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .uconfig(0xD840, 0) // GRBM_PERFCOUNTER0_SELECT = GRBM_COUNT
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .uconfig(0xD9C0, 4) // SQ_PERFCOUNTER0_SELECT = SQ_WAVES
        .uconfig(0xD9E0, 0x55)
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .sh(0x2E0B, 1)
        .uconfig(CP_PERFMON_CNTL, 0)
        .uconfig(CP_PERFMON_CNTL, 1)
        .wait_idle();
    pm4
}

/// aqlprofile's read of those two counters into `out` (GRBM: 1 slot, SQ: 8 WGP slots).
fn read_buffer(out: &mut [u64; 9]) -> Pm4 {
    let base = out.as_mut_ptr().cast::<u32>();
    let mut pm4 = Pm4::default();
    pm4.uconfig(CP_PERFMON_CNTL, 0x401)
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .wait_idle()
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .uconfig(GRBM_GFX_INDEX, BROADCAST)
        .copy_to(0xD040, base)
        .copy_to(0xD041, base.wrapping_add(1))
        .uconfig(GRBM_GFX_INDEX, BROADCAST);
    for sa in 0..2 {
        for wgp in 0..4 {
            let slot = 1 + sa * 4 + wgp;
            pm4.uconfig(GRBM_GFX_INDEX, (sa << 8) | (wgp << 2))
                .copy_to(0xD1C0, base.wrapping_add(2 * slot as usize));
        }
    }
    pm4.uconfig(GRBM_GFX_INDEX, BROADCAST);
    pm4
}

fn stop_buffer() -> Pm4 {
    let mut pm4 = Pm4::default();
    pm4.uconfig(GRBM_GFX_INDEX, BROADCAST)
        .uconfig(CP_PERFMON_CNTL, 2)
        .wait_idle();
    pm4
}

/// Sets an environment variable in the child before the thunk reads it.
fn set_env(name: &str, value: Option<&str>) {
    // SAFETY: the case runs on the child's only thread; nothing reads the environment
    // concurrently.
    unsafe {
        match value {
            Some(value) => std::env::set_var(name, value),
            None => std::env::remove_var(name),
        }
    }
}

fn gpu_clock_and_dispatch(library: &Library) -> Result<(), String> {
    let gpu = load_gpu(library)?;
    let before = monotonic_ns();
    let (status, counters) = gpu.clock_counters(1);
    let after = monotonic_ns();
    check("hsaKmtGetClockCounters(1)", status, 0)?;
    let [gpu_ticks, cpu, system, frequency] = counters;
    if !(before..=after).contains(&cpu) {
        return Err(format!("CPUClockCounter {cpu} outside [{before}, {after}]"));
    }
    check("SystemClockCounter", system, cpu)?;
    check("SystemClockFrequencyHz", frequency, 1_000_000_000)?;
    // The documented rule: (m + offset − ceil(m × 2.2 ppm)) / 10.
    let drift = (cpu * 2_200).div_ceil(1_000_000_000);
    check(
        "GPUClockCounter",
        gpu_ticks,
        (cpu + 1_000_000_000_000 - drift) / 10,
    )?;
    check("GPU clock of the CPU node", gpu.clock_counters(0).1[0], 0)?;
    check("hsaKmtGetClockCounters(2)", gpu.clock_counters(2).0, 5)?;
    // SAFETY: a null pointer is a documented input.
    let null = unsafe { (gpu.clock_counters)(1, std::ptr::null_mut()) };
    check("null counters", null, 3)?;

    let calls = AtomicU32::new(0);
    let ctx = (&raw const calls).cast_mut().cast::<c_void>();
    let first = gpu.ticks(1);
    let (status, [start, end]) = gpu.dispatch(1, &kernel(262_144, 32, ctx));
    let last = gpu.ticks(1);
    check("wslsim_gpu_dispatch", status, 0)?;
    check("run callback calls", calls.load(Ordering::SeqCst), 1)?;
    if !(first <= start && start < end && end <= last) {
        return Err(format!(
            "dispatch [{start}, {end}] not inside [{first}, {last}]"
        ));
    }
    // Modelled 7 463 ticks, within the cost model's ±3 % jitter: at least 7 239.
    if end - start < 7_239 {
        return Err(format!(
            "dispatch took {} ticks, modelled 7463 ± 3 %",
            end - start
        ));
    }
    check("wave 48", gpu.dispatch(1, &kernel(64, 48, ctx)).0, 3)?;
    check("node 2", gpu.dispatch(2, &kernel(64, 32, ctx)).0, 5)?;
    check("run callback calls", calls.load(Ordering::SeqCst), 1)?;

    let source = [7_u8; 4096];
    let mut destination = [0_u8; 4096];
    let mut timing = [0_u64; 2];
    // SAFETY: two 4096-byte buffers and a writable timing.
    let status = unsafe {
        (gpu.copy)(
            1,
            destination.as_mut_ptr().cast(),
            source.as_ptr().cast(),
            4096,
            &mut timing,
        )
    };
    check("wslsim_gpu_copy", status, 0)?;
    check("copied bytes", destination, source)?;
    if timing[0] >= timing[1] || timing[1] > gpu.ticks(1) {
        return Err(format!("copy timing {timing:?}"));
    }
    Ok(())
}

/// With the gate open: aqlprofile-style start, dispatch, read, stop, and exact counts.
fn gpu_counters(library: &Library) -> Result<(), String> {
    set_env("WSLKMT_VENDOR_PACKET", Some("1"));
    let thunk = load(library)?;
    let gpu = load_gpu(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    let mut out = [0_u64; 9];
    let read = read_buffer(&mut out);
    let calls = AtomicU32::new(0);
    let ctx = (&raw const calls).cast_mut().cast::<c_void>();
    for round in 0..2 {
        out = [0; 9];
        check("start", gpu.pm4(&start_buffer().dwords), (0, String::new()))?;
        check("dispatch", gpu.dispatch(1, &kernel(262_144, 32, ctx)).0, 0)?;
        check("read", gpu.pm4(&read.dwords), (0, String::new()))?;
        check("stop", gpu.pm4(&stop_buffer().dwords), (0, String::new()))?;
        // 216 401 dispatch cycles + 2 900 for the read submission; 8 192 waves over 8 WGPs.
        check(&format!("GRBM_COUNT, round {round}"), out[0], 219_301)?;
        check(
            &format!("SQ_WAVES, round {round}"),
            out[1..].iter().sum::<u64>(),
            8_192,
        )?;
    }
    let (status, reason) = gpu.pm4(&[packet3(0x99, 0), 0]);
    check("malformed status", status, 3)?;
    check(
        "malformed reason",
        reason.as_str(),
        "dword 0: opcode 0x99: unsupported opcode 0x99",
    )?;
    check("hsaKmtCloseKFD", thunk.close()?, 0)
}

fn write_marker(target: *mut u32) -> Vec<u32> {
    let address = target as u64;
    vec![
        packet3(0x37, 3),
        5 << 8,
        address as u32,
        (address >> 32) as u32,
        0xFEED,
    ]
}

/// `WSLKMT_VENDOR_PACKET=0` at the first open: submissions are dropped silently.
fn gpu_vendor_packet_off(library: &Library) -> Result<(), String> {
    set_env("WSLKMT_VENDOR_PACKET", Some("0"));
    let thunk = load(library)?;
    let gpu = load_gpu(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    // Changing the variable later does not matter: it was read at the first open.
    set_env("WSLKMT_VENDOR_PACKET", Some("1"));
    let mut marker = 0_u32;
    check(
        "dropped submission",
        gpu.pm4(&write_marker(&raw mut marker)),
        (0, String::new()),
    )?;
    check("marker", marker, 0)?;
    check("dropped malformed submission", gpu.pm4(&[0]).0, 0)?;
    Ok(())
}

/// A submission before any open reads the gate itself; the later open does not re-read it.
fn gpu_vendor_packet_before_open(library: &Library) -> Result<(), String> {
    set_env("WSLKMT_VENDOR_PACKET", Some("1"));
    let thunk = load(library)?;
    let gpu = load_gpu(library)?;
    let mut marker = 0_u32;
    check(
        "submission",
        gpu.pm4(&write_marker(&raw mut marker)),
        (0, String::new()),
    )?;
    check("marker", marker, 0xFEED)?;
    set_env("WSLKMT_VENDOR_PACKET", None);
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    marker = 0;
    check(
        "submission after open",
        gpu.pm4(&write_marker(&raw mut marker)),
        (0, String::new()),
    )?;
    check("marker after open", marker, 0xFEED)
}

/// A private copy of the library file (its own inode, so the loader maps it again) at
/// `<temp>/rocdxg-copies-<pid>/<dir>/librocdxg.so.1.2.0`.
fn copy_of(library: &Library, dir: &str) -> Result<String, String> {
    let target = std::env::temp_dir()
        .join(format!("rocdxg-copies-{}", std::process::id()))
        .join(dir);
    std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
    let copy = target.join("librocdxg.so.1.2.0");
    std::fs::copy(library.path(), &copy).map_err(|e| format!("copy: {e}"))?;
    Ok(copy.display().to_string())
}

fn call_log() -> String {
    std::env::var_os("WSLSIM_CALL_LOG")
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default()
}

/// LD_PRELOAD by absolute path plus the runtime's path search: a copy in the global scope (the
/// preloaded, newer build) and a second copy mapped next to it (the stock one the search
/// finds). Each keeps its own state and behaves as its own `[thunk]` entry says.
fn two_copies(library: &Library) -> Result<(), String> {
    let preloaded_path = copy_of(library, "matched-build")?;
    let stock_path = copy_of(library, "stock-copy")?;
    let preloaded = Library::open_global(&preloaded_path)?;
    let stock = Library::open(&stock_path)?;
    // The preloaded copy: [thunk] (396, no handshake).
    preloaded.expect_missing("DxgAbiCheck")?;
    let new = load(&preloaded)?;
    // The stock copy: its [[thunk.copies]] entry (376, the released handshake). Its export
    // hiding acted on itself, not on the copy in the global scope.
    stock.expect_present(&["DxgAbiCheck"])?;
    let old = load(&stock)?;
    check("stock DxgAbiCheck(396)", old.abi_check(396)?, 2)?;
    check("stock DxgAbiCheck(376)", old.abi_check(376)?, 0)?;
    // Separate state: the preloaded copy's open is not the stock copy's.
    check("preloaded hsaKmtOpenKFD", new.open(), 0)?;
    check("stock hsaKmtOpenKFD", old.open(), 0)?;
    check("preloaded acquire", new.acquire(), (0, 2))?;
    check("stock close before acquire", old.close()?, 0)?;
    check("stock close again", old.close()?, 20)?;
    let (status, record) = new.node(1)?;
    check("preloaded node 1", (status, record.len()), (0, 396))?;
    check_890m(&record)?;
    check("preloaded release", new.release(), 0)?;
    check("preloaded close", new.close()?, 0)?;
    let records = old.read_all(376)?;
    check_890m(&records[1])?;
    let log = call_log();
    let pid = std::process::id();
    for line in [
        format!("rocdxg loaded pid={pid} path={preloaded_path}"),
        format!("rocdxg loaded pid={pid} path={stock_path}"),
        format!(
            "rocdxg behaves path={preloaded_path} as=[thunk] layout=396 abi_check=absent snapshot_refcount=true"
        ),
        format!(
            "rocdxg behaves path={stock_path} as=thunk.copies[0] layout=376 abi_check=strict snapshot_refcount=true"
        ),
    ] {
        if log.lines().filter(|l| *l == line).count() != 1 {
            return Err(format!("the call log lacks {line:?} (once)\n{log}"));
        }
    }
    let _ = std::fs::remove_dir_all(
        std::path::Path::new(&stock_path)
            .parent()
            .unwrap()
            .parent()
            .unwrap(),
    );
    Ok(())
}

/// The runtime's hsa_init (open, acquire, read, release, the KFD left open), then a
/// late-attached tool's enumeration in the same KFD session.
fn late_enumeration(thunk: &Thunk) -> Result<((i32, u32), Vec<u8>), String> {
    check("runtime hsaKmtOpenKFD", thunk.open(), 0)?;
    check("runtime acquire", thunk.acquire(), (0, 2))?;
    let (status, record) = thunk.node(1)?;
    check("runtime node 1", status, 0)?;
    check_890m(&record)?;
    check("runtime release", thunk.release(), 0)?;
    check("tool hsaKmtOpenKFD", thunk.open(), 22)?;
    let acquired = thunk.acquire();
    let (status, record) = thunk.node(1)?;
    check("tool node 1", status, 0)?;
    check("tool release", thunk.release(), 0)?;
    check("tool close", thunk.close()?, 0)?;
    check("runtime close", thunk.close()?, 0)?;
    Ok((acquired, record))
}

fn released_snapshot_late_attach(library: &Library) -> Result<(), String> {
    let (acquired, record) = late_enumeration(&load(library)?)?;
    check(
        "tool acquire: NumNodes from freed memory",
        acquired,
        (0, 0xDEDE_DEDE),
    )?;
    check("tool node 1 length", record.len(), 396)?;
    if record.iter().any(|&b| b != 0xDE) {
        return Err(format!(
            "tool node 1 is not the poisoned memory: {record:02x?}"
        ));
    }
    Ok(())
}

fn refcounted_snapshot_late_attach(library: &Library) -> Result<(), String> {
    let (acquired, record) = late_enumeration(&load(library)?)?;
    check("tool acquire", acquired, (0, 2))?;
    check_890m(&record)
}

const LOADED: &str = "rocdxg loaded pid={pid} path={library}";

const CLEAN_COUNTERS: &str = "[counters]\ncontamination_per_ms = 0\n\
    grbm_zero_session_probability = 0\nsq_zero_probability = 0\n";

const CASES: &[Case] = &[
    Case {
        name: "default_890m",
        scenario: Some("# the built-in machine\n"),
        stderr_contains: &[],
        log_lines: &[
            LOADED,
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=396 -> 0",
            "rocdxg hsaKmtOpenKFD -> 0",
            "rocdxg hsaKmtAcquireSystemProperties num_nodes=2 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=2 wrote=0 -> 5",
            "rocdxg hsaKmtReleaseSystemProperties -> 0",
            "rocdxg hsaKmtCloseKFD -> 0",
            "rocdxg hsaKmtCloseKFD -> 20",
            "rocdxg hsaKmtGetNodeWallclockFrequency node=1 hz=100000000 -> 0",
        ],
        run: default_machine,
    },
    Case {
        name: "no_scenario_variable",
        scenario: None,
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: default_machine,
    },
    Case {
        name: "abi_check_absent",
        scenario: Some("[thunk]\nabi_check = \"absent\"\n"),
        stderr_contains: &[],
        log_lines: &[
            LOADED,
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
        ],
        run: abi_check_absent,
    },
    Case {
        name: "close_hidden",
        scenario: Some("[thunk]\nhidden_exports = [\"hsaKmtCloseKFD\"]\n"),
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: close_hidden,
    },
    Case {
        name: "layout_376",
        scenario: Some("[thunk]\nlayout = 376\n"),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=396 -> 2",
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=376 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=376 -> 0",
        ],
        run: layout_376,
    },
    Case {
        name: "write_size_negotiated",
        scenario: Some("[thunk]\nwrite_size = \"negotiated\"\n"),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=368 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
        ],
        run: negotiated,
    },
    Case {
        name: "unusable_scenario_file",
        scenario: Some("[thunk]\nlayout = 376\ntypo = 1\n"),
        stderr_contains: &[
            "wslsim: cannot use scenario {scenario}: line 3, column 1: unknown field `typo`",
        ],
        log_lines: &[
            LOADED,
            "rocdxg hsaKmtAcquireSystemProperties num_nodes=1 -> 0",
        ],
        run: unusable_scenario,
    },
    Case {
        name: "unknown_hidden_name",
        scenario: Some(
            "[thunk]\nhidden_exports = [\"hsaKmtNoSuchEntry\", \"hsaKmtReleaseSystemProperties\"]\n",
        ),
        stderr_contains: &[
            "wslsim: cannot hide export hsaKmtNoSuchEntry: not in the dynamic symbol table",
        ],
        log_lines: &[LOADED],
        run: unknown_hidden_name,
    },
    Case {
        name: "gpu_clock_and_dispatch",
        scenario: Some("# the built-in machine\n"),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg hsaKmtGetClockCounters node=1 -> 0",
            "rocdxg hsaKmtGetClockCounters node=0 -> 0",
            "rocdxg hsaKmtGetClockCounters node=2 -> 5",
            "rocdxg hsaKmtGetClockCounters node=1 null -> 3",
            "rocdxg wslsim_gpu_dispatch node=1 grid=262144x1x1 workgroup=256x1x1 wave=32 \
             waves=8192 -> 0",
            "rocdxg wslsim_gpu_dispatch node=1 grid=64x1x1 workgroup=256x1x1 wave=48 -> 3",
            "rocdxg wslsim_gpu_dispatch node=2 grid=64x1x1 workgroup=256x1x1 wave=32 -> 5",
            "rocdxg wslsim_gpu_copy node=1 bytes=4096 -> 0",
        ],
        run: gpu_clock_and_dispatch,
    },
    Case {
        name: "gpu_counters_vendor_packet_on",
        scenario: Some(CLEAN_COUNTERS),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg hsaKmtOpenKFD -> 0",
            "rocdxg wslsim_gpu_pm4 node=1 dwords=40 -> 0",
            "rocdxg wslsim_gpu_pm4 node=1 dwords=104 -> 0",
            "rocdxg wslsim_gpu_pm4 node=1 dwords=2 error=\"dword 0: opcode 0x99: unsupported \
             opcode 0x99\" -> 3",
        ],
        run: gpu_counters,
    },
    Case {
        name: "gpu_vendor_packet_off",
        scenario: None,
        stderr_contains: &[],
        log_lines: &[
            "rocdxg wslsim_gpu_pm4 node=1 dwords=5 dropped -> 0",
            "rocdxg wslsim_gpu_pm4 node=1 dwords=1 dropped -> 0",
        ],
        run: gpu_vendor_packet_off,
    },
    Case {
        name: "gpu_vendor_packet_before_open",
        scenario: None,
        stderr_contains: &[],
        log_lines: &["rocdxg wslsim_gpu_pm4 node=1 dwords=5 -> 0"],
        run: gpu_vendor_packet_before_open,
    },
    Case {
        name: "two_copies_each_keep_their_own_scenario",
        scenario: Some(
            "[thunk]\nlayout = 396\nabi_check = \"absent\"\n\n[[thunk.copies]]\n\
             path = \"/stock-copy/librocdxg.so.1.2.0\"\nlayout = 376\nabi_check = \"strict\"\n",
        ),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=376 -> 0",
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=376 -> 0",
        ],
        run: two_copies,
    },
    Case {
        name: "released_snapshot_late_attach_reads_freed_memory",
        scenario: Some("[thunk]\nsnapshot_refcount = false\n"),
        stderr_contains: &[],
        log_lines: &["rocdxg hsaKmtAcquireSystemProperties num_nodes=3739147998 -> 0"],
        run: released_snapshot_late_attach,
    },
    Case {
        name: "refcounted_snapshot_late_attach_is_fine",
        scenario: Some("# the built-in machine\n"),
        stderr_contains: &[],
        log_lines: &[],
        run: refcounted_snapshot_late_attach,
    },
];

fn main() -> ExitCode {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    harness::main(
        &Target {
            library: "librocdxg.so",
            build_command: "cargo build -p sim-rocdxg -p sim-dxcore",
            sources: &[
                manifest.join("src"),
                manifest.join("build.rs"),
                manifest.join("Cargo.toml"),
                manifest.join("../scenario/src"),
            ],
        },
        CASES,
    )
}
