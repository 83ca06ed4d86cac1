//! libdxcore's process-global state (open adapter handles) and the rules of each call, free
//! of raw pointers. `exports.rs` checks pointers and copies results in and out.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use wslsim_scenario::{Adapter, AdapterQuery, Scenario};

use crate::ffi::*;

/// Handle values are `HANDLE_BASE + HANDLE_STEP * serial`, serial counting from 1.
pub const HANDLE_BASE: u32 = 0x4000_0000;
/// See [`HANDLE_BASE`].
pub const HANDLE_STEP: u32 = 0x10;

/// What `D3DKMTEnumAdapters3` hands back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enumerated {
    /// The status to return.
    pub status: NtStatus,
    /// The value to store in NumAdapters (`None`: leave it).
    pub num_adapters: Option<u32>,
    /// The entries to copy to pAdapters (empty unless the array is filled).
    pub adapters: Vec<D3dkmtAdapterInfo>,
}

/// The payload of a successful `D3DKMTQueryAdapterInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// KMTQAITYPE_GETSEGMENTSIZE.
    SegmentSize(D3dkmtSegmentSizeInfo),
    /// KMTQAITYPE_ADAPTERADDRESS.
    Address(D3dkmtAdapterAddress),
    /// KMTQAITYPE_ADAPTERREGISTRYINFO.
    Registry(Box<D3dkmtAdapterRegistryInfo>),
    /// KMTQAITYPE_PHYSICALADAPTERDEVICEIDS (only the DeviceIds part is written).
    DeviceIds(D3dkmtDeviceIds),
}

/// The payload size each supported query type requires, and its scenario failure key.
pub fn query_shape(kind: u32) -> Option<(usize, AdapterQuery)> {
    match kind {
        KMTQAITYPE_GETSEGMENTSIZE => Some((
            size_of::<D3dkmtSegmentSizeInfo>(),
            AdapterQuery::SegmentSize,
        )),
        KMTQAITYPE_ADAPTERADDRESS => {
            Some((size_of::<D3dkmtAdapterAddress>(), AdapterQuery::Address))
        }
        KMTQAITYPE_ADAPTERREGISTRYINFO => Some((
            size_of::<D3dkmtAdapterRegistryInfo>(),
            AdapterQuery::Registry,
        )),
        KMTQAITYPE_PHYSICALADAPTERDEVICEIDS => {
            Some((size_of::<D3dkmtQueryDeviceIds>(), AdapterQuery::DeviceIds))
        }
        _ => None,
    }
}

/// A registry string as NUL-terminated UTF-32 in a 260-WCHAR field.
pub fn wide_string(text: &str) -> [u32; REGISTRY_CHARS] {
    let mut field = [0_u32; REGISTRY_CHARS];
    for (slot, ch) in field.iter_mut().zip(text.chars().take(REGISTRY_CHARS - 1)) {
        *slot = u32::from(ch);
    }
    field
}

/// Everything the simulated libdxcore remembers between calls.
#[derive(Debug)]
pub struct DxState {
    scenario: Scenario,
    last_serial: u32,
    open: BTreeMap<D3dkmtHandle, usize>,
}

impl DxState {
    /// Fresh state for `scenario`: no handles open, serials from 1.
    pub fn new(scenario: Scenario) -> Self {
        DxState {
            scenario,
            last_serial: 0,
            open: BTreeMap::new(),
        }
    }

    /// Handles currently open, with the index of their adapter.
    pub fn open_handles(&self) -> &BTreeMap<D3dkmtHandle, usize> {
        &self.open
    }

    /// Indices of the adapters `filter` lists.
    fn listed(&self, filter: u64) -> Vec<usize> {
        let compute_only = filter & FILTER_INCLUDE_COMPUTE_ONLY != 0;
        self.scenario
            .adapters
            .iter()
            .enumerate()
            .filter(|(_, adapter)| compute_only || !adapter.compute_only)
            .map(|(index, _)| index)
            .collect()
    }

    fn open_handle(&mut self, index: usize) -> D3dkmtHandle {
        loop {
            self.last_serial = self.last_serial.wrapping_add(1);
            let handle = HANDLE_BASE.wrapping_add(HANDLE_STEP.wrapping_mul(self.last_serial));
            if handle != 0 && !self.open.contains_key(&handle) {
                self.open.insert(handle, index);
                return handle;
            }
        }
    }

    /// `D3DKMTEnumAdapters3` (struct pointer already checked); `fill` is whether pAdapters
    /// is non-null, `capacity` the NumAdapters passed in.
    pub fn enumerate(&mut self, filter: u64, capacity: u32, fill: bool) -> Enumerated {
        let failure = self.scenario.dxcore.enum_status.cast_signed();
        if failure != STATUS_SUCCESS {
            return Enumerated {
                status: failure,
                num_adapters: None,
                adapters: Vec::new(),
            };
        }
        let listed = self.listed(filter);
        let count = u32::try_from(listed.len()).unwrap_or(u32::MAX);
        if !fill {
            return Enumerated {
                status: STATUS_SUCCESS,
                num_adapters: Some(count),
                adapters: Vec::new(),
            };
        }
        if capacity < count {
            return Enumerated {
                status: STATUS_BUFFER_TOO_SMALL,
                num_adapters: Some(count),
                adapters: Vec::new(),
            };
        }
        let adapters = listed
            .into_iter()
            .map(|index| {
                let luid = self.scenario.adapters[index].luid;
                D3dkmtAdapterInfo {
                    h_adapter: self.open_handle(index),
                    adapter_luid: Luid {
                        low_part: luid.low,
                        high_part: luid.high,
                    },
                    num_of_sources: 0,
                    b_precise_present_regions_preferred: 0,
                }
            })
            .collect();
        Enumerated {
            status: STATUS_SUCCESS,
            num_adapters: Some(count),
            adapters,
        }
    }

    /// `D3DKMTQueryAdapterInfo` (struct pointer already checked). `data_null` and `size`
    /// describe pPrivateDriverData; `physical_adapter_index` is read from it for type 31 when
    /// it is present and of the right size.
    pub fn query(
        &self,
        handle: D3dkmtHandle,
        kind: u32,
        data_null: bool,
        size: u32,
        physical_adapter_index: Option<u32>,
    ) -> Result<Answer, NtStatus> {
        let index = *self.open.get(&handle).ok_or(STATUS_INVALID_PARAMETER)?;
        let (expected_size, query) = query_shape(kind).ok_or(STATUS_NOT_SUPPORTED)?;
        if data_null || size as usize != expected_size {
            return Err(STATUS_INVALID_PARAMETER);
        }
        if kind == KMTQAITYPE_PHYSICALADAPTERDEVICEIDS && physical_adapter_index != Some(0) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        let adapter: &Adapter = &self.scenario.adapters[index];
        if adapter.fail_queries.contains(&query) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        Ok(match query {
            AdapterQuery::SegmentSize => Answer::SegmentSize(D3dkmtSegmentSizeInfo {
                dedicated_video_memory_size: adapter.dedicated_video_memory,
                dedicated_system_memory_size: adapter.dedicated_system_memory,
                shared_system_memory_size: adapter.shared_system_memory,
            }),
            AdapterQuery::Address => Answer::Address(D3dkmtAdapterAddress {
                bus_number: adapter.bus,
                device_number: adapter.device,
                function_number: adapter.function,
            }),
            AdapterQuery::Registry => Answer::Registry(Box::new(D3dkmtAdapterRegistryInfo {
                adapter_string: wide_string(&adapter.description),
                bios_string: wide_string(&adapter.bios),
                dac_type: wide_string(&adapter.dac_type),
                chip_type: wide_string(&adapter.chip_type),
            })),
            AdapterQuery::DeviceIds => Answer::DeviceIds(D3dkmtDeviceIds {
                vendor_id: adapter.vendor_id,
                device_id: adapter.device_id,
                sub_vendor_id: adapter.subvendor_id,
                sub_system_id: adapter.subsystem_id,
                revision_id: adapter.revision_id,
                bus_type: adapter.bus_type,
            }),
        })
    }

    /// `D3DKMTCloseAdapter` (struct pointer already checked).
    pub fn close(&mut self, handle: D3dkmtHandle) -> NtStatus {
        match self.open.remove(&handle) {
            Some(_) => STATUS_SUCCESS,
            None => STATUS_INVALID_PARAMETER,
        }
    }
}

static STATE: Mutex<Option<DxState>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<DxState>> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the process-global state, creating it from the process scenario on first use.
pub fn with_state<R>(f: impl FnOnce(&mut DxState) -> R) -> R {
    let mut guard = lock();
    let state = guard.get_or_insert_with(|| DxState::new(wslsim_scenario::current().clone()));
    f(state)
}

/// Replaces the process-global state with fresh state for `scenario`.
pub fn reset(scenario: Scenario) {
    *lock() = Some(DxState::new(scenario));
}
