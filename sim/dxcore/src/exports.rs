//! The exported D3DKMT entry points of libdxcore.so.
//!
//! Each export checks its pointers, applies the rules in `state.rs` under the state mutex,
//! copies results out, appends one call-log line, and never lets a panic cross the C boundary
//! (a panic becomes STATUS_UNSUCCESSFUL).
#![allow(non_snake_case)]

use wslsim_scenario::ntstatus;

use crate::ffi::*;
use crate::state::{Answer, with_state};

const LIB: &str = "dxcore";

/// Runs an export body: catches panics and logs `dxcore <name> <args> -> <status>` (every
/// export here has arguments to log).
pub(crate) fn export(name: &str, body: impl FnOnce() -> (NtStatus, String)) -> NtStatus {
    wslsim_scenario::run_export(LIB, name, STATUS_UNSUCCESSFUL, ntstatus, body)
}

/// Enumerates the WDDM adapters: with `pAdapters` null, only counts them; otherwise opens a
/// handle per adapter and fills the array.
///
/// # Safety
///
/// `enum_adapters` must be null or valid for reading and writing a `D3DKMT_ENUMADAPTERS3`
/// whose `pAdapters` is null or valid for writing `NumAdapters` `D3DKMT_ADAPTERINFO`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn D3DKMTEnumAdapters3(enum_adapters: *mut D3dkmtEnumAdapters3) -> NtStatus {
    export("D3DKMTEnumAdapters3", || {
        if enum_adapters.is_null() {
            return (STATUS_INVALID_PARAMETER, "null".to_owned());
        }
        // SAFETY: non-null, and the caller guarantees it is valid for reading.
        let request = unsafe { enum_adapters.read_unaligned() };
        let args = format!("filter={:#x} num={}", request.filter, request.num_adapters);
        let fill = !request.p_adapters.is_null();
        let outcome =
            with_state(|state| state.enumerate(request.filter, request.num_adapters, fill));
        if !outcome.adapters.is_empty() {
            // SAFETY: `enumerate` only fills when pAdapters is non-null and NumAdapters (its
            // capacity, which the caller guarantees) is at least the number of entries.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    outcome.adapters.as_ptr(),
                    request.p_adapters,
                    outcome.adapters.len(),
                );
            }
        }
        if let Some(count) = outcome.num_adapters {
            // SAFETY: the struct is valid for writing (caller's contract); no alignment assumed.
            unsafe { (&raw mut (*enum_adapters).num_adapters).write_unaligned(count) };
        }
        (outcome.status, args)
    })
}

/// Answers one adapter query into `pPrivateDriverData`.
///
/// # Safety
///
/// `query` must be null or valid for reading a `D3DKMT_QUERYADAPTERINFO` whose
/// `pPrivateDriverData` is null or valid for reading and writing `PrivateDriverDataSize` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn D3DKMTQueryAdapterInfo(query: *const D3dkmtQueryAdapterInfo) -> NtStatus {
    export("D3DKMTQueryAdapterInfo", || {
        if query.is_null() {
            return (STATUS_INVALID_PARAMETER, "null".to_owned());
        }
        // SAFETY: non-null, and the caller guarantees it is valid for reading.
        let request = unsafe { query.read_unaligned() };
        let args = format!("handle={:#010x} type={}", request.h_adapter, request.type_);
        let data = request.p_private_driver_data;
        let size = request.private_driver_data_size;
        let physical_adapter_index = (request.type_ == KMTQAITYPE_PHYSICALADAPTERDEVICEIDS
            && !data.is_null()
            && size as usize == size_of::<D3dkmtQueryDeviceIds>())
        .then(|| {
            // SAFETY: the caller guarantees `size` readable bytes, and that is a whole
            // D3DKMT_QUERY_DEVICE_IDS; no alignment assumed.
            unsafe { data.cast::<D3dkmtQueryDeviceIds>().read_unaligned() }.physical_adapter_index
        });
        let answer = with_state(|state| {
            state.query(
                request.h_adapter,
                request.type_,
                data.is_null(),
                size,
                physical_adapter_index,
            )
        });
        match answer {
            Ok(answer) => {
                // SAFETY (all arms): `query` checked that `data` is non-null and `size` is
                // exactly the payload's size; the caller guarantees it is writable; no
                // alignment is assumed.
                match answer {
                    Answer::SegmentSize(info) => {
                        // SAFETY: see above.
                        unsafe { data.cast::<D3dkmtSegmentSizeInfo>().write_unaligned(info) }
                    }
                    Answer::Address(info) => {
                        // SAFETY: see above.
                        unsafe { data.cast::<D3dkmtAdapterAddress>().write_unaligned(info) }
                    }
                    Answer::Registry(info) => {
                        // SAFETY: see above.
                        unsafe {
                            data.cast::<D3dkmtAdapterRegistryInfo>()
                                .write_unaligned(*info)
                        }
                    }
                    Answer::DeviceIds(ids) => {
                        let out = data.cast::<D3dkmtQueryDeviceIds>();
                        // SAFETY: see above; only DeviceIds is written, the index stays.
                        unsafe { (&raw mut (*out).device_ids).write_unaligned(ids) }
                    }
                }
                (STATUS_SUCCESS, args)
            }
            Err(failure) => (failure, args),
        }
    })
}

/// Closes an adapter handle opened by `D3DKMTEnumAdapters3`.
///
/// # Safety
///
/// `close` must be null or valid for reading a `D3DKMT_CLOSEADAPTER`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn D3DKMTCloseAdapter(close: *const D3dkmtCloseAdapter) -> NtStatus {
    export("D3DKMTCloseAdapter", || {
        if close.is_null() {
            return (STATUS_INVALID_PARAMETER, "null".to_owned());
        }
        // SAFETY: non-null, and the caller guarantees it is valid for reading.
        let handle = unsafe { close.read_unaligned() }.h_adapter;
        let status = with_state(|state| state.close(handle));
        (status, format!("handle={handle:#010x}"))
    })
}
