//! Minimal profiling tool used only by `tests/tool.rs`.
//!
//! Compiled on its own (`rustc --crate-type cdylib --edition 2024`, no dependencies) and
//! preloaded (`LD_PRELOAD`) into a workload. It is found by the simulated
//! rocprofiler-register through `rocprofiler_configure`, and receives the runtimes' tables in
//! `rocprofiler_set_api_table(name, version, instance, tables, n)`:
//!
//! - it records the order in which "hip_compiler", "hip", "hsa" and "roctx" arrive, and how
//!   many calls it had counted when each arrived;
//! - it wraps IN PLACE every entry of the HIP runtime and compiler tables and of the HSA core
//!   and AMD-extension tables with a counting trampoline (a naked function that increments the
//!   entry's counter and tail-jumps to the original, so it forwards any signature);
//! - the entries the reference workload uses get typed counting wrappers instead (HIP
//!   runtime and compiler entries, `hsa_signal_load_relaxed`, `roctxRangePushA`/`Pop`), which
//!   also check their arguments (copy directions and sizes, launch geometry);
//! - at exit (an ELF destructor, which runs after every `atexit` handler, so after HIP's
//!   teardown) it writes everything to the file named by `MINI_TOOL_OUT`.
//!
//! Table indices here are hard-coded from the specification (`hip-table.md` §1.1 and §2,
//! `intercept-pmc-att.md` §2 and §3.6), independently of the simulator's sources.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt::Write as _;
use std::ptr::null_mut;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SLOTS: usize = 1024;
/// Counter ranges: HIP runtime, HIP compiler, HSA core, HSA AMD extension.
const HIP: usize = 0;
const HIP_MAX: usize = 512;
const COMPILER: usize = 512;
const COMPILER_MAX: usize = 16;
const CORE: usize = 528;
const CORE_MAX: usize = 160;
const AMD: usize = 688;
const AMD_MAX: usize = 160;

static COUNTS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static ORIG: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// Counts a call of entry `N` and tail-jumps to the original entry (any signature).
#[unsafe(naked)]
unsafe extern "C" fn tramp<const N: usize>() {
    core::arch::naked_asm!(
        "lock inc qword ptr [rip + {counts} + {offset}]",
        "jmp qword ptr [rip + {orig} + {offset}]",
        counts = sym COUNTS,
        orig = sym ORIG,
        offset = const N * 8,
    )
}

type Tramp = unsafe extern "C" fn();

macro_rules! t8 {
    ($b:expr) => {
        [
            tramp::<{ $b }> as Tramp,
            tramp::<{ $b + 1 }>,
            tramp::<{ $b + 2 }>,
            tramp::<{ $b + 3 }>,
            tramp::<{ $b + 4 }>,
            tramp::<{ $b + 5 }>,
            tramp::<{ $b + 6 }>,
            tramp::<{ $b + 7 }>,
        ]
    };
}
macro_rules! t64 {
    ($b:expr) => {
        [
            t8!($b),
            t8!($b + 8),
            t8!($b + 16),
            t8!($b + 24),
            t8!($b + 32),
            t8!($b + 40),
            t8!($b + 48),
            t8!($b + 56),
        ]
    };
}
static TRAMPS: [[[Tramp; 8]; 8]; 16] = [
    t64!(0),
    t64!(64),
    t64!(128),
    t64!(192),
    t64!(256),
    t64!(320),
    t64!(384),
    t64!(448),
    t64!(512),
    t64!(576),
    t64!(640),
    t64!(704),
    t64!(768),
    t64!(832),
    t64!(896),
    t64!(960),
];

fn trampoline(n: usize) -> *mut c_void {
    TRAMPS[n / 64][(n / 8) % 8][n % 8] as *mut c_void
}

#[derive(Default)]
struct Report {
    order: Vec<String>,
    lines: Vec<String>,
}

static REPORT: Mutex<Report> = Mutex::new(Report {
    order: Vec::new(),
    lines: Vec::new(),
});

fn note(line: String) {
    REPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .lines
        .push(line);
}

// ---- typed wrappers -------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

static TYPED: [AtomicU64; 32] = [const { AtomicU64::new(0) }; 32];
const TYPED_NAMES: [&str; 22] = [
    "hipGetDeviceCount",
    "hipSetDevice",
    "hipGetDevicePropertiesR0600",
    "hipRuntimeGetVersion",
    "hipMalloc",
    "hipMemcpy",
    "hipLaunchKernel",
    "hipFree",
    "hipGetLastError",
    "__hipPopCallConfiguration",
    "__hipPushCallConfiguration",
    "__hipRegisterFatBinary",
    "__hipRegisterFunction",
    "__hipUnregisterFatBinary",
    "hsa_signal_load_relaxed",
    "roctxRangePushA",
    "roctxRangePop",
    "hipMemcpy_h2d_1MiB",
    "hipMemcpy_d2h_1MiB",
    "hipLaunchKernel_1024x256",
    "hipMalloc_1MiB",
    "roctxRangePushA_iter",
];
static ROCTX_ORIG: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

fn typed(i: usize) {
    TYPED[i].fetch_add(1, Ordering::Relaxed);
}

fn orig<F: Copy>(slot: usize) -> F {
    let address = ORIG[slot].load(Ordering::Acquire);
    // SAFETY: the slot holds the original entry of the table slot this wrapper replaced,
    // whose C signature is F.
    unsafe { std::mem::transmute_copy::<usize, F>(&address) }
}

macro_rules! wrapper {
    ($fn_name:ident, $slot:expr, $typed:expr, ($($arg:ident : $ty:ty),*) $(-> $ret:ty)?, |$($a:ident),*| $check:block) => {
        unsafe extern "C" fn $fn_name($($arg: $ty),*) $(-> $ret)? {
            COUNTS[$slot].fetch_add(1, Ordering::Relaxed);
            typed($typed);
            {
                $(let $a = $arg;)*
                $check
            }
            let f: unsafe extern "C" fn($($ty),*) $(-> $ret)? = orig($slot);
            // SAFETY: the original entry with the same signature and the caller's arguments.
            unsafe { f($($arg),*) }
        }
    };
}

wrapper!(w_get_device_count, HIP + 103, 0, (count: *mut c_int) -> u32, |_c| {});
wrapper!(w_set_device, HIP + 327, 1, (device: c_int) -> u32, |_d| {});
wrapper!(w_get_props, HIP + 105, 2, (props: *mut c_void, device: c_int) -> u32, |_p, _d| {});
wrapper!(w_runtime_version, HIP + 326, 3, (v: *mut c_int) -> u32, |_v| {});
wrapper!(w_malloc, HIP + 215, 4, (ptr: *mut *mut c_void, size: usize) -> u32, |_p, size| {
    if size == 1 << 20 {
        typed(20);
    }
});
wrapper!(w_memcpy, HIP + 259, 5, (dst: *mut c_void, src: *const c_void, size: usize, kind: u32) -> u32, |_d, _s, size, kind| {
    if size == 1 << 20 && kind == 1 {
        typed(17);
    }
    if size == 1 << 20 && kind == 2 {
        typed(18);
    }
});
wrapper!(w_launch, HIP + 214, 6, (f: *const c_void, grid: Dim3, block: Dim3, args: *mut *mut c_void, shmem: usize, stream: *mut c_void) -> u32, |_f, grid, block, _a, _s, _st| {
    if grid.x == 1024 && grid.y == 1 && grid.z == 1 && block.x == 256 && block.y == 1 && block.z == 1 {
        typed(19);
    }
});
wrapper!(w_free, HIP + 90, 7, (ptr: *mut c_void) -> u32, |_p| {});
wrapper!(w_last_error, HIP + 109, 8, () -> u32, | | {});
wrapper!(w_pop, COMPILER, 9, (g: *mut Dim3, b: *mut Dim3, s: *mut usize, st: *mut *mut c_void) -> u32, |_g, _b, _s, _st| {});
wrapper!(w_push, COMPILER + 1, 10, (g: Dim3, b: Dim3, s: usize, st: *mut c_void) -> u32, |_g, _b, _s, _st| {});
wrapper!(w_register_fatbin, COMPILER + 2, 11, (data: *const c_void) -> *mut *mut c_void, |_d| {});
wrapper!(w_register_function, COMPILER + 3, 12, (m: *mut *mut c_void, h: *const c_void, df: *mut c_char, dn: *const c_char, tl: u32, tid: *mut c_void, bid: *mut c_void, bd: *mut Dim3, gd: *mut Dim3, ws: *mut c_int), |_m, _h, _df, _dn, _tl, _tid, _bid, _bd, _gd, _ws| {});
wrapper!(w_unregister_fatbin, COMPILER + 8, 13, (m: *mut *mut c_void), |_m| {});
wrapper!(w_signal_load_relaxed, CORE + 39, 14, (signal: u64) -> i64, |_s| {});

unsafe extern "C" fn w_range_push(message: *const c_char) -> c_int {
    typed(15);
    if !message.is_null() {
        // SAFETY: a non-null message is NUL-terminated (the ROCTx contract).
        let text = unsafe { CStr::from_ptr(message) };
        if text.to_bytes().starts_with(b"iter") {
            typed(21);
        }
    }
    let address = ROCTX_ORIG[0].load(Ordering::Acquire);
    // SAFETY: the original roctxRangePushA entry.
    let f: unsafe extern "C" fn(*const c_char) -> c_int = unsafe { std::mem::transmute(address) };
    // SAFETY: forwarded argument.
    unsafe { f(message) }
}

unsafe extern "C" fn w_range_pop() -> c_int {
    typed(16);
    let address = ROCTX_ORIG[1].load(Ordering::Acquire);
    // SAFETY: the original roctxRangePop entry.
    let f: unsafe extern "C" fn() -> c_int = unsafe { std::mem::transmute(address) };
    // SAFETY: no arguments.
    unsafe { f() }
}

fn typed_for(slot: usize) -> Option<*mut c_void> {
    let f: *mut c_void = match slot {
        s if s == HIP + 103 => w_get_device_count as *mut c_void,
        s if s == HIP + 327 => w_set_device as *mut c_void,
        s if s == HIP + 105 => w_get_props as *mut c_void,
        s if s == HIP + 326 => w_runtime_version as *mut c_void,
        s if s == HIP + 215 => w_malloc as *mut c_void,
        s if s == HIP + 259 => w_memcpy as *mut c_void,
        s if s == HIP + 214 => w_launch as *mut c_void,
        s if s == HIP + 90 => w_free as *mut c_void,
        s if s == HIP + 109 => w_last_error as *mut c_void,
        s if s == COMPILER => w_pop as *mut c_void,
        s if s == COMPILER + 1 => w_push as *mut c_void,
        s if s == COMPILER + 2 => w_register_fatbin as *mut c_void,
        s if s == COMPILER + 3 => w_register_function as *mut c_void,
        s if s == COMPILER + 8 => w_unregister_fatbin as *mut c_void,
        s if s == CORE + 39 => w_signal_load_relaxed as *mut c_void,
        _ => return None,
    };
    Some(f)
}

/// Replaces `count` pointer slots at `slots` with counters `base..base+count`.
///
/// # Safety
///
/// `slots` points to `count` writable function-pointer slots.
unsafe fn wrap(slots: *mut usize, count: usize, base: usize, max: usize) -> usize {
    let count = count.min(max);
    for i in 0..count {
        // SAFETY: inside the table (contract).
        let slot = unsafe { slots.add(i) };
        // SAFETY: as above.
        let original = unsafe { slot.read() };
        if original == 0 {
            continue;
        }
        ORIG[base + i].store(original, Ordering::Release);
        let replacement = typed_for(base + i).unwrap_or_else(|| trampoline(base + i));
        // SAFETY: as above; a function-pointer-sized store.
        unsafe { slot.write(replacement as usize) };
    }
    count
}

fn total(base: usize, count: usize) -> u64 {
    COUNTS[base..base + count]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
}

/// The SDK's tool entry point; declines (NULL): its existence is what makes rocprofiler-register
/// find a tool.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_configure(
    _v: u32,
    _rv: *const c_char,
    _p: u32,
    _id: *mut c_void,
) -> *mut c_void {
    null_mut()
}

/// Receives the runtimes' tables.
///
/// # Safety
///
/// `name` is NUL-terminated; `tables` holds `num_tables` table pointers of the named library.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_set_api_table(
    name: *const c_char,
    version: u64,
    instance: u64,
    tables: *mut *mut c_void,
    num_tables: u64,
) -> c_int {
    let result = std::panic::catch_unwind(|| {
        if name.is_null() || tables.is_null() || num_tables == 0 {
            return 1;
        }
        // SAFETY: NUL-terminated (contract).
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let so_far = format!(
            "hip={} hip_compiler={} hsa={}",
            total(HIP, HIP_MAX),
            total(COMPILER, COMPILER_MAX),
            total(CORE, CORE_MAX) + total(AMD, AMD_MAX)
        );
        REPORT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .order
            .push(name.clone());
        // SAFETY: at least one table (checked).
        let first = unsafe { *tables }.cast::<u8>();
        if first.is_null() {
            return 1;
        }
        match name.as_str() {
            "hip" | "hip_compiler" => {
                // SAFETY: the table starts with size_t size, then function pointers.
                let size = unsafe { first.cast::<usize>().read() };
                let entries = size.saturating_sub(8) / 8;
                let (base, max) = if name == "hip" {
                    (HIP, HIP_MAX)
                } else {
                    (COMPILER, COMPILER_MAX)
                };
                // SAFETY: `entries` slots follow the size field.
                let wrapped = unsafe { wrap(first.add(8).cast(), entries, base, max) };
                note(format!(
                    "table {name} version={version} instance={instance} size={size} entries={entries} wrapped={wrapped} seen_before={so_far}"
                ));
            }
            "hsa" => {
                // SAFETY: the root HsaApiTable: version (16 bytes), then core_ and amd_ext_.
                let (core, amd) = unsafe {
                    (
                        first.add(16).cast::<*mut u8>().read(),
                        first.add(24).cast::<*mut u8>().read(),
                    )
                };
                let mut entries = [0usize; 2];
                for (k, (table, base, max)) in [(core, CORE, CORE_MAX), (amd, AMD, AMD_MAX)]
                    .into_iter()
                    .enumerate()
                {
                    if table.is_null() {
                        continue;
                    }
                    // SAFETY: ApiTableVersion.minor_id (offset 4) is the table's sizeof.
                    let size = unsafe { table.add(4).cast::<u32>().read() } as usize;
                    let n = size.saturating_sub(16) / 8;
                    // SAFETY: `n` slots follow the 16-byte version.
                    entries[k] = unsafe { wrap(table.add(16).cast(), n, base, max) };
                }
                note(format!(
                    "table hsa version={version} instance={instance} core_entries={} amd_entries={} seen_before={so_far}",
                    entries[0], entries[1]
                ));
            }
            "roctx" => {
                // SAFETY: the core table: u64 size, then MarkA, RangePushA, RangePop, ...
                unsafe {
                    let size = first.cast::<u64>().read();
                    if size >= 32 {
                        let push = first.add(16).cast::<usize>();
                        let pop = first.add(24).cast::<usize>();
                        ROCTX_ORIG[0].store(push.read(), Ordering::Release);
                        ROCTX_ORIG[1].store(pop.read(), Ordering::Release);
                        push.write(w_range_push as *const () as usize);
                        pop.write(w_range_pop as *const () as usize);
                    }
                }
                note(format!(
                    "table roctx version={version} instance={instance} tables={num_tables} seen_before={so_far}"
                ));
            }
            other => note(format!("table {other} version={version} (not wrapped)")),
        }
        0
    });
    result.unwrap_or(2)
}

extern "C" fn write_report() {
    let _ = std::panic::catch_unwind(|| {
        let Some(path) = std::env::var_os("MINI_TOOL_OUT") else {
            return;
        };
        let report = REPORT.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        let _ = writeln!(out, "order {}", report.order.join(" "));
        for line in &report.lines {
            let _ = writeln!(out, "{line}");
        }
        for (label, base, max) in [
            ("hip", HIP, HIP_MAX),
            ("hip_compiler", COMPILER, COMPILER_MAX),
            ("hsa_core", CORE, CORE_MAX),
            ("hsa_amd", AMD, AMD_MAX),
        ] {
            for i in 0..max {
                let n = COUNTS[base + i].load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(out, "count {label} {i} {n}");
                }
            }
        }
        for (i, name) in TYPED_NAMES.iter().enumerate() {
            let _ = writeln!(out, "typed {name} {}", TYPED[i].load(Ordering::Relaxed));
        }
        let _ = std::fs::write(path, out);
    });
}

#[used]
#[unsafe(link_section = ".fini_array")]
static DESTRUCTOR: extern "C" fn() = write_report;
