//! The exported C entry points of librocdxg.so.
//!
//! Each export checks its pointers, applies the rules in `state.rs` under the state mutex,
//! copies the result out in one go, appends one call-log line, and never lets a panic cross
//! the C boundary (a panic becomes HSAKMT_STATUS_ERROR).
#![allow(non_snake_case)]

use std::ffi::c_void;
use std::fmt::Display;

use crate::ffi::{HsaClockCounters, HsaStructureSizes, HsaSystemProperties};
use crate::state::with_state;
use crate::status::{self, HsaKmtStatus};

const LIB: &str = "rocdxg";

/// Runs an export body: catches panics and logs `rocdxg <name> <args> -> <status>`.
pub(crate) fn export(name: &str, body: impl FnOnce() -> (HsaKmtStatus, String)) -> HsaKmtStatus {
    export_value(name, status::ERROR, body)
}

/// [`export`] for any result type: a panic returns (and logs) `on_panic`.
pub(crate) fn export_value<T: Copy + Display>(
    name: &str,
    on_panic: T,
    body: impl FnOnce() -> (T, String),
) -> T {
    wslsim_scenario::run_export(LIB, name, on_panic, |result| result, body)
}

/// Opens (a reference to) the KFD.
///
/// Returns 0, or KERNEL_ALREADY_OPENED (22) when it was already open, which still counts as an
/// open that needs a matching close. The first call initialises the thunk: it reads
/// `WSLKMT_VENDOR_PACKET` once (see `wslsim_gpu_pm4`).
///
/// # Safety
///
/// No preconditions; `unsafe` only because it is a C entry point.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenKFD() -> HsaKmtStatus {
    export("hsaKmtOpenKFD", || {
        crate::gpu::vendor_packet_enabled();
        (with_state(|state| state.open()), String::new())
    })
}

/// Closes one reference to the KFD.
///
/// # Safety
///
/// No preconditions; `unsafe` only because it is a C entry point.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCloseKFD() -> HsaKmtStatus {
    export("hsaKmtCloseKFD", || {
        (with_state(|state| state.close()), String::new())
    })
}

/// Takes the topology snapshot and reports the number of KMT nodes.
///
/// # Safety
///
/// `system_properties` must be null or valid for writing an `HsaSystemProperties` (16 bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAcquireSystemProperties(
    system_properties: *mut HsaSystemProperties,
) -> HsaKmtStatus {
    export("hsaKmtAcquireSystemProperties", || {
        match with_state(|state| state.acquire(!system_properties.is_null())) {
            Ok(properties) => {
                // SAFETY: non-null (checked by `acquire`), and the caller guarantees it is
                // valid for writing an HsaSystemProperties; no alignment is assumed.
                unsafe { system_properties.write_unaligned(properties) };
                (
                    status::SUCCESS,
                    format!("num_nodes={}", properties.num_nodes),
                )
            }
            Err(failure) => (failure, "num_nodes=0".to_owned()),
        }
    })
}

/// Writes KMT node `node_id`'s `HsaNodeProperties`: exactly as many bytes as the thunk's
/// layout (or negotiated size) has, since the C interface carries no size.
///
/// # Safety
///
/// `node_properties` must be null or valid for writing the thunk's record size (at most the
/// scenario's `thunk.layout` bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeProperties(
    node_id: u32,
    node_properties: *mut c_void,
) -> HsaKmtStatus {
    export("hsaKmtGetNodeProperties", || {
        if node_properties.is_null() {
            return (status::INVALID_PARAMETER, format!("node={node_id} wrote=0"));
        }
        match with_state(|state| state.node_properties(node_id)) {
            Ok(bytes) => {
                // SAFETY: the destination is non-null and the caller guarantees room for the
                // record, which is exactly `bytes.len()` bytes; the regions cannot overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        node_properties.cast::<u8>(),
                        bytes.len(),
                    );
                }
                (
                    status::SUCCESS,
                    format!("node={node_id} wrote={}", bytes.len()),
                )
            }
            Err(failure) => (failure, format!("node={node_id} wrote=0")),
        }
    })
}

/// Drops the topology snapshot.
///
/// # Safety
///
/// No preconditions; `unsafe` only because it is a C entry point.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReleaseSystemProperties() -> HsaKmtStatus {
    export("hsaKmtReleaseSystemProperties", || {
        (with_state(|state| state.release()), String::new())
    })
}

/// The structure-size handshake: is the caller's `HsaNodeProperties` the thunk's?
///
/// # Safety
///
/// `sizes` must be null or valid for reading an `HsaStructureSizes` (16 bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn DxgAbiCheck(sizes: *const HsaStructureSizes) -> HsaKmtStatus {
    export("DxgAbiCheck", || {
        let sizes = if sizes.is_null() {
            None
        } else {
            // SAFETY: non-null, and the caller guarantees it is valid for reading; no
            // alignment is assumed.
            Some(unsafe { sizes.read_unaligned() })
        };
        let status = with_state(|state| state.abi_check(sizes));
        let args = match sizes {
            None => "null".to_owned(),
            Some(sizes) => format!(
                "structure_sizes={} node_properties={}",
                sizes.structure_sizes, sizes.size_of_hsa_node_properties
            ),
        };
        (status, args)
    })
}

/// The wall clock frequency of KMT node `node_id` in Hz.
///
/// # Safety
///
/// `frequency` must be null or valid for writing a u64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeWallclockFrequency(
    node_id: u32,
    frequency: *mut u64,
) -> HsaKmtStatus {
    export("hsaKmtGetNodeWallclockFrequency", || {
        if frequency.is_null() {
            return (status::INVALID_PARAMETER, format!("node={node_id} hz=0"));
        }
        match with_state(|state| state.wallclock_hz(node_id)) {
            Ok(hz) => {
                // SAFETY: non-null, and the caller guarantees it is valid for writing a u64;
                // no alignment is assumed.
                unsafe { frequency.write_unaligned(hz) };
                (status::SUCCESS, format!("node={node_id} hz={hz}"))
            }
            Err(failure) => (failure, format!("node={node_id} hz=0")),
        }
    })
}

/// Samples node `node_id`'s clocks together: the GPU clock in ticks (0 for the CPU node 0,
/// as KFD reports for a node without a GPU), and `CLOCK_MONOTONIC` nanoseconds as both the CPU
/// and the system counter, with SystemClockFrequencyHz = 1 000 000 000.
///
/// Statuses: 3 for a null pointer, 5 for a node ≥ NumNodes.
///
/// # Safety
///
/// `counters` must be null or valid for writing an `HsaClockCounters` (32 bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetClockCounters(
    node_id: u32,
    counters: *mut HsaClockCounters,
) -> HsaKmtStatus {
    export("hsaKmtGetClockCounters", || {
        if counters.is_null() {
            return (status::INVALID_PARAMETER, format!("node={node_id} null"));
        }
        // Every KMT node but the CPU node 0 is a GPU node, so the GPU knows the node count.
        let gpu = crate::gpu::gpu();
        let clock = match gpu.node(node_id) {
            Some(node) => Some(*node.clock()),
            None if node_id == 0 => None,
            None => return (status::INVALID_NODE_UNIT, format!("node={node_id}")),
        };
        let now = crate::gpu::clock::monotonic_ns();
        let sample = HsaClockCounters {
            gpu_clock_counter: clock.map_or(0, |clock| clock.ticks_at(now)),
            cpu_clock_counter: now,
            system_clock_counter: now,
            system_clock_frequency_hz: crate::state::CPU_WALLCLOCK_HZ,
        };
        // SAFETY: non-null, and the caller guarantees it is valid for writing an
        // HsaClockCounters; no alignment is assumed.
        unsafe { counters.write_unaligned(sample) };
        (
            status::SUCCESS,
            wslsim_scenario::log_args!("node={node_id}"),
        )
    })
}
