//! The simulator-internal GPU exports of librocdxg.so (docs/SIMULATOR.md): `wslsim_gpu_dispatch`,
//! `wslsim_gpu_copy`, `wslsim_gpu_pm4` and `wslsim_gpu_ticks`, with their C structs.
//!
//! Like the KMT exports, each checks its pointers, logs one call-log line and never lets a
//! panic cross the C boundary.

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};

use wslsim_scenario::log_args;

use super::cost::Kernel;
use super::pm4::{Failure, HostMemory};
use super::{DispatchError, Pm4Error, Timing, gpu, vendor_packet_enabled};
use crate::kmt::{export, export_value};
use crate::status::{self, HsaKmtStatus};

/// The kernel's CPU implementation. Declared `C-unwind` so that a Rust callback's panic
/// reaches the simulator's `catch_unwind` (it becomes HSAKMT_STATUS_ERROR) instead of aborting;
/// for a C callee this is the plain C ABI.
pub type RunFn = unsafe extern "C-unwind" fn(ctx: *mut c_void);

/// `wslsim_dispatch_t` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WslsimDispatch {
    /// Grid size in work-items (x, y, z), each ≥ 1.
    pub grid: [u32; 3],
    /// Workgroup size (x, y, z), each ≥ 1.
    pub workgroup: [u16; 3],
    /// 32 or 64.
    pub wave_size: u16,
    /// Arch VGPRs per work-item (informational).
    pub vgprs: u32,
    /// SGPRs per wave (informational).
    pub sgprs: u32,
    /// Group segment size (informational).
    pub lds_bytes: u32,
    /// Private segment size per work-item (informational).
    pub scratch_bytes: u32,
    /// Cost model: VALU instructions per wave.
    pub valu_per_wave: u32,
    /// Cost model: SALU instructions per wave.
    pub salu_per_wave: u32,
    /// Cost model: shader cycles per wave (0 = `[gpu] cycles_per_wave`).
    pub cycles_per_wave: u32,
    /// Runs the kernel's CPU implementation (may be NULL).
    pub run: Option<RunFn>,
    /// Argument of `run`.
    pub ctx: *mut c_void,
    /// Device address of the kernel's first instruction (kernel object + its descriptor's
    /// `kernel_code_entry_byte_offset`), or 0 if unknown: the thread trace's PCs.
    pub code_address: u64,
}

const _: () = assert!(size_of::<WslsimDispatch>() == 72);
const _: () = assert!(offset_of!(WslsimDispatch, grid) == 0);
const _: () = assert!(offset_of!(WslsimDispatch, workgroup) == 12);
const _: () = assert!(offset_of!(WslsimDispatch, wave_size) == 18);
const _: () = assert!(offset_of!(WslsimDispatch, vgprs) == 20);
const _: () = assert!(offset_of!(WslsimDispatch, sgprs) == 24);
const _: () = assert!(offset_of!(WslsimDispatch, lds_bytes) == 28);
const _: () = assert!(offset_of!(WslsimDispatch, scratch_bytes) == 32);
const _: () = assert!(offset_of!(WslsimDispatch, valu_per_wave) == 36);
const _: () = assert!(offset_of!(WslsimDispatch, salu_per_wave) == 40);
const _: () = assert!(offset_of!(WslsimDispatch, cycles_per_wave) == 44);
const _: () = assert!(offset_of!(WslsimDispatch, run) == 48);
const _: () = assert!(offset_of!(WslsimDispatch, ctx) == 56);
const _: () = assert!(offset_of!(WslsimDispatch, code_address) == 64);

impl WslsimDispatch {
    /// The cost-model view of the descriptor.
    pub fn kernel(&self) -> Kernel {
        Kernel {
            grid: self.grid,
            workgroup: self.workgroup,
            wave_size: self.wave_size,
            valu_per_wave: self.valu_per_wave,
            salu_per_wave: self.salu_per_wave,
            cycles_per_wave: self.cycles_per_wave,
        }
    }
}

/// `wslsim_timing_t` (16 bytes): GPU ticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WslsimTiming {
    /// First tick of the work.
    pub start_tick: u64,
    /// Tick at which it was complete.
    pub end_tick: u64,
}

const _: () = assert!(size_of::<WslsimTiming>() == 16);
const _: () = assert!(offset_of!(WslsimTiming, start_tick) == 0);
const _: () = assert!(offset_of!(WslsimTiming, end_tick) == 8);

impl From<Timing> for WslsimTiming {
    fn from(timing: Timing) -> WslsimTiming {
        WslsimTiming {
            start_tick: timing.start_tick,
            end_tick: timing.end_tick,
        }
    }
}

fn dims<T: std::fmt::Display>(values: &[T; 3]) -> String {
    format!("{}x{}x{}", values[0], values[1], values[2])
}

/// Executes one kernel dispatch on node `node`'s command processor: serialised with every
/// other dispatch and PM4 submission of the node, calls `run(ctx)`, takes at least the
/// modelled duration, and is counted by armed performance counters; while thread trace
/// captures, its waves are traced (PCs from `code_address`). Fills `*out`.
///
/// Statuses: 3 for a null pointer or an invalid descriptor (a zero grid or workgroup
/// dimension, a wave size other than 32 or 64), 5 for a node that is not a GPU node, 1 if
/// `run` panicked or re-entered the same node's command processor.
///
/// # Safety
///
/// `d` must be null or valid for reading a `wslsim_dispatch_t`; `out` null or valid for
/// writing a `wslsim_timing_t`; `run`, if set, must be safe to call with `ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wslsim_gpu_dispatch(
    node: u32,
    d: *const WslsimDispatch,
    out: *mut WslsimTiming,
) -> HsaKmtStatus {
    // SAFETY: the caller's guarantees are this function's.
    unsafe { dispatch_export(node, d, 1.0, out) }
}

/// [`wslsim_gpu_dispatch`] with the kernel's modelled duration scaled by `factor` (the
/// scenario's `[kernel_duration]` entry for it; a factor that is not a positive finite number
/// counts as 1). The call log names it `wslsim_gpu_dispatch`, with `factor=` when it is not 1.
///
/// # Safety
///
/// As [`wslsim_gpu_dispatch`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wslsim_gpu_dispatch_scaled(
    node: u32,
    d: *const WslsimDispatch,
    factor: f64,
    out: *mut WslsimTiming,
) -> HsaKmtStatus {
    // SAFETY: the caller's guarantees are this function's.
    unsafe { dispatch_export(node, d, factor, out) }
}

/// Both dispatch exports.
///
/// # Safety
///
/// As [`wslsim_gpu_dispatch`].
unsafe fn dispatch_export(
    node: u32,
    d: *const WslsimDispatch,
    factor: f64,
    out: *mut WslsimTiming,
) -> HsaKmtStatus {
    let factor = if factor.is_finite() && factor > 0.0 {
        factor
    } else {
        1.0
    };
    export("wslsim_gpu_dispatch", || {
        if d.is_null() || out.is_null() {
            return (status::INVALID_PARAMETER, log_args!("node={node} null"));
        }
        // SAFETY: non-null, and the caller guarantees it is readable; no alignment assumed.
        let descriptor = unsafe { d.read_unaligned() };
        let kernel = descriptor.kernel();
        let scaled = if factor == 1.0 {
            String::new()
        } else {
            format!(" factor={factor}")
        };
        let args = log_args!(
            "node={node} grid={} workgroup={} wave={}{scaled}",
            dims(&kernel.grid),
            dims(&kernel.workgroup),
            kernel.wave_size
        );
        let gpu = gpu();
        let Some(target) = gpu.node(node) else {
            return (status::INVALID_NODE_UNIT, args);
        };
        let run = || match descriptor.run {
            None => Ok(()),
            Some(run) => catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the caller guarantees `run` may be called with `ctx`.
                unsafe { run(descriptor.ctx) }
            }))
            .map_err(|_| ()),
        };
        match target.dispatch_scaled(&kernel, descriptor.code_address, factor, run) {
            Ok(dispatched) => {
                // SAFETY: non-null, and the caller guarantees it is writable; no alignment
                // assumed.
                unsafe { out.write_unaligned(dispatched.timing.into()) };
                (
                    status::SUCCESS,
                    log_args!("{args} waves={}", dispatched.cost.waves),
                )
            }
            Err(DispatchError::Invalid(_)) => (status::INVALID_PARAMETER, args),
            Err(DispatchError::Reentered) => (status::ERROR, log_args!("{args} re-entered")),
            Err(DispatchError::Panicked) => (status::ERROR, log_args!("{args} run panicked")),
        }
    })
}

/// One SDMA copy of `bytes` from `src` to `dst` (memcpy semantics; real bytes copied) on node
/// `node`'s SDMA engine, taking the modelled time. Fills `*out`.
///
/// Statuses: 3 for a null `out`, or a null `dst`/`src` with `bytes` > 0; 5 for a node that
/// is not a GPU node.
///
/// # Safety
///
/// `dst` must be valid for writing and `src` for reading `bytes` bytes; `out` null or valid
/// for writing a `wslsim_timing_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wslsim_gpu_copy(
    node: u32,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
    out: *mut WslsimTiming,
) -> HsaKmtStatus {
    export("wslsim_gpu_copy", || {
        let args = log_args!("node={node} bytes={bytes}");
        if out.is_null() || (bytes > 0 && (dst.is_null() || src.is_null())) {
            return (status::INVALID_PARAMETER, log_args!("{args} null"));
        }
        let Ok(length) = usize::try_from(bytes) else {
            return (status::INVALID_PARAMETER, args);
        };
        let gpu = gpu();
        let Some(target) = gpu.node(node) else {
            return (status::INVALID_NODE_UNIT, args);
        };
        let timing = target.copy(bytes, || {
            if length > 0 {
                // SAFETY: the caller guarantees both ranges are valid for `bytes` bytes;
                // `copy` tolerates overlap, so it is at least as permissive as memcpy.
                unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), length) };
            }
        });
        // SAFETY: non-null, and the caller guarantees it is writable; no alignment assumed.
        unsafe { out.write_unaligned(timing.into()) };
        (status::SUCCESS, args)
    })
}

/// Writes `reason` NUL-terminated into `err` (at most `err_len` bytes, cut on a character
/// boundary).
///
/// # Safety
///
/// `err` must be null or valid for writing `err_len` bytes.
unsafe fn write_reason(err: *mut c_char, err_len: u32, reason: &str) {
    if err.is_null() || err_len == 0 {
        return;
    }
    let room = err_len as usize - 1;
    let mut cut = reason.len().min(room);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    // SAFETY: `err` has room for `err_len` = room + 1 bytes (caller's contract) and `cut <=
    // room`; the reason is a separate Rust allocation, so the regions cannot overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(reason.as_ptr(), err.cast::<u8>(), cut);
        err.add(cut).write(0);
    }
}

/// Executes a PM4 command buffer (the body of an AQL PM4-IB vendor packet): `dwords` dwords
/// at `ib`, on node `node`'s command processor.
///
/// Honoured only if `WSLKMT_VENDOR_PACKET` was exactly "1" when the thunk initialised (its
/// first `hsaKmtOpenKFD`, or this call if it comes first); otherwise dropped silently and 0
/// returned, as libhsakmt does. A malformed or oversized buffer returns 3 and a reason in
/// `err` without executing anything; a WAIT_REG_MEM that times out returns 31
/// (WAIT_TIMEOUT) and a node that is not a GPU node 5, each with a reason. On success `err`
/// holds an empty string.
///
/// # Safety
///
/// `ib` must be null or valid for reading `dwords` dwords; every address the buffer names
/// (chained IBs, COPY_DATA / WRITE_DATA / WAIT_REG_MEM memory operands) must be valid for the
/// access, and so must every thread-trace buffer (`SQ_THREAD_TRACE_BUF0_BASE` / `BUF0_SIZE`
/// of an engine whose trace is on, programmed by this or an earlier submission) while its trace
/// is on: the submission writes the tokens appended since the last one; `err` must be null or
/// valid for writing `err_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wslsim_gpu_pm4(
    node: u32,
    ib: *const u32,
    dwords: u32,
    err: *mut c_char,
    err_len: u32,
) -> HsaKmtStatus {
    export("wslsim_gpu_pm4", || {
        let args = log_args!("node={node} dwords={dwords}");
        let fail = |status: HsaKmtStatus, reason: String| {
            // SAFETY: forwarded from this function's contract.
            unsafe { write_reason(err, err_len, &reason) };
            (status, log_args!("{args} error={reason:?}"))
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { write_reason(err, err_len, "") };
        let gpu = gpu();
        let Some(target) = gpu.node(node) else {
            return fail(
                status::INVALID_NODE_UNIT,
                format!("KMT node {node} is not a GPU node"),
            );
        };
        if !vendor_packet_enabled() {
            return (status::SUCCESS, log_args!("{args} dropped"));
        }
        if ib.is_null() {
            return fail(status::INVALID_PARAMETER, "null command buffer".into());
        }
        // SAFETY: non-null, and the caller guarantees `dwords` readable dwords at `ib`.
        let buffer = unsafe { std::slice::from_raw_parts(ib, dwords as usize) };
        // SAFETY: the caller guarantees every address the buffer names is valid.
        let mut memory = unsafe { HostMemory::new() };
        match target.pm4(buffer, &mut memory) {
            Ok(()) => (status::SUCCESS, args),
            Err(Pm4Error::Rejected(reject)) => fail(status::INVALID_PARAMETER, reject.to_string()),
            Err(Pm4Error::Failed(failure @ Failure::Timeout(_))) => {
                fail(status::WAIT_TIMEOUT, failure.to_string())
            }
            Err(Pm4Error::Failed(failure)) => fail(status::ERROR, failure.to_string()),
            Err(Pm4Error::Reentered) => fail(
                status::ERROR,
                "PM4 submitted from a dispatch's run callback on the same node".into(),
            ),
        }
    })
}

/// Node `node`'s GPU clock now, in ticks (0 for a node that is not a GPU node).
///
/// # Safety
///
/// No preconditions; `unsafe` only because it is a C entry point.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wslsim_gpu_ticks(node: u32) -> u64 {
    export_value("wslsim_gpu_ticks", 0, || {
        let ticks = gpu().node(node).map_or(0, |target| target.clock().now());
        (ticks, log_args!("node={node}"))
    })
}
