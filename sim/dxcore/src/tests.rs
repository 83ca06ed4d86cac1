use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard, PoisonError};

use wslsim_scenario::{Adapter, AdapterQuery, Luid as ScenarioLuid, Scenario};

use crate::exports::*;
use crate::ffi::*;
use crate::state::{HANDLE_BASE, HANDLE_STEP, with_state};

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises tests that use the process-global state and installs `scenario`.
fn install(scenario: Scenario) -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    crate::reset_for_tests(scenario);
    guard
}

fn enumerate(filter: u64, capacity: u32, fill: bool) -> (NtStatus, u32, Vec<D3dkmtAdapterInfo>) {
    let mut adapters = vec![D3dkmtAdapterInfo::default(); capacity as usize];
    let mut request = D3dkmtEnumAdapters3 {
        filter,
        num_adapters: capacity,
        p_adapters: if fill {
            adapters.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        },
    };
    // SAFETY: a valid request whose array holds `capacity` entries.
    let status = unsafe { D3DKMTEnumAdapters3(&mut request) };
    let count = request.num_adapters;
    adapters.truncate(count.min(capacity) as usize);
    (status, count, adapters)
}

/// The SDK's two-call enumeration with IncludeComputeOnly; returns the handles.
fn open_all() -> Vec<D3dkmtAdapterInfo> {
    let (status, count, _) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 0, false);
    assert_eq!(status, STATUS_SUCCESS);
    let (status, filled, adapters) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, count, true);
    assert_eq!((status, filled), (STATUS_SUCCESS, count));
    adapters
}

fn query_raw(handle: u32, kind: u32, data: *mut c_void, size: u32) -> NtStatus {
    let request = D3dkmtQueryAdapterInfo {
        h_adapter: handle,
        type_: kind,
        p_private_driver_data: data,
        private_driver_data_size: size,
    };
    // SAFETY: a valid request; `data` is null or `size` writable bytes (callers ensure it).
    unsafe { D3DKMTQueryAdapterInfo(&request) }
}

fn query<T>(handle: u32, kind: u32, payload: &mut T) -> NtStatus {
    query_raw(
        handle,
        kind,
        (payload as *mut T).cast::<c_void>(),
        size_of::<T>() as u32,
    )
}

fn close(handle: u32) -> NtStatus {
    let request = D3dkmtCloseAdapter { h_adapter: handle };
    // SAFETY: a valid request.
    unsafe { D3DKMTCloseAdapter(&request) }
}

fn utf32(field: &[u32]) -> String {
    field
        .iter()
        .take_while(|&&unit| unit != 0)
        .map(|&unit| char::from_u32(unit).unwrap())
        .collect()
}

#[test]
fn count_then_fill_on_the_default_machine() {
    let _serial = install(Scenario::default());
    let (status, count, _) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 0, false);
    assert_eq!((status, count), (STATUS_SUCCESS, 1));
    let (status, count, _) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 7, false);
    assert_eq!(
        (status, count),
        (STATUS_SUCCESS, 1),
        "a count query ignores NumAdapters"
    );
    assert!(
        with_state(|state| state.open_handles().is_empty()),
        "counting opens nothing"
    );

    let adapters = open_all();
    assert_eq!(
        adapters,
        [D3dkmtAdapterInfo {
            h_adapter: 0x4000_0010,
            adapter_luid: Luid {
                low_part: 0x0001_D3A5,
                high_part: 0
            },
            num_of_sources: 0,
            b_precise_present_regions_preferred: 0,
        }]
    );
    let again = open_all();
    assert_eq!(
        again[0].h_adapter, 0x4000_0020,
        "fresh handles each enumeration"
    );
    assert_eq!(close(0x4000_0010), STATUS_SUCCESS);
    assert_eq!(close(0x4000_0020), STATUS_SUCCESS);
}

#[test]
fn too_small_null_and_forced_failures() {
    let _serial = install(Scenario::default());
    // SAFETY: a null request is allowed and rejected.
    let null_status = unsafe { D3DKMTEnumAdapters3(std::ptr::null_mut()) };
    assert_eq!(null_status, STATUS_INVALID_PARAMETER);
    let (status, count, adapters) = enumerate(0, 0, true);
    assert_eq!((status, count), (STATUS_BUFFER_TOO_SMALL, 1));
    assert!(adapters.is_empty());
    assert!(with_state(|state| state.open_handles().is_empty()));

    let mut failing = Scenario::default();
    failing.dxcore.enum_status = 0xC000_0001;
    let _serial = {
        drop(_serial);
        install(failing)
    };
    let (status, count, _) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 5, false);
    assert_eq!(
        (status, count),
        (STATUS_UNSUCCESSFUL, 5),
        "NumAdapters untouched"
    );

    let _serial = {
        drop(_serial);
        install(Scenario::empty())
    };
    let (status, count, _) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 0, false);
    assert_eq!((status, count), (STATUS_SUCCESS, 0));
}

#[test]
fn compute_only_adapters_need_the_filter_bit() {
    let mut scenario = Scenario::default();
    scenario.adapters.push(Adapter {
        luid: ScenarioLuid { low: 7, high: -2 },
        compute_only: true,
        ..Adapter::radeon_890m()
    });
    let _serial = install(scenario);
    assert_eq!(enumerate(0, 0, false).1, 1);
    assert_eq!(enumerate(FILTER_INCLUDE_DISPLAY_ONLY, 0, false).1, 1);
    assert_eq!(enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 0, false).1, 2);
    let (status, count, adapters) = enumerate(FILTER_INCLUDE_COMPUTE_ONLY, 4, true);
    assert_eq!((status, count), (STATUS_SUCCESS, 2));
    assert_eq!(
        adapters[1].adapter_luid,
        Luid {
            low_part: 7,
            high_part: -2
        }
    );
    assert_eq!(adapters[1].h_adapter, HANDLE_BASE + 2 * HANDLE_STEP);
}

#[test]
fn every_query_type_answers_the_scenario() {
    let _serial = install(Scenario::default());
    let handle = open_all()[0].h_adapter;

    let mut ids = D3dkmtQueryDeviceIds {
        physical_adapter_index: 0,
        device_ids: D3dkmtDeviceIds::default(),
    };
    assert_eq!(
        query(handle, KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, &mut ids),
        STATUS_SUCCESS
    );
    assert_eq!(
        ids.device_ids,
        D3dkmtDeviceIds {
            vendor_id: 0x1002,
            device_id: 0x150E,
            sub_vendor_id: 0x1002,
            sub_system_id: 0x0124,
            revision_id: 0xC1,
            bus_type: 5,
        }
    );

    let mut address = D3dkmtAdapterAddress::default();
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERADDRESS, &mut address),
        STATUS_SUCCESS
    );
    assert_eq!(
        address,
        D3dkmtAdapterAddress {
            bus_number: 0xC5,
            device_number: 0,
            function_number: 0
        }
    );

    let mut registry = Box::new(D3dkmtAdapterRegistryInfo {
        adapter_string: [0xFFFF; REGISTRY_CHARS],
        bios_string: [0xFFFF; REGISTRY_CHARS],
        dac_type: [0xFFFF; REGISTRY_CHARS],
        chip_type: [0xFFFF; REGISTRY_CHARS],
    });
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERREGISTRYINFO, &mut *registry),
        STATUS_SUCCESS
    );
    assert_eq!(
        utf32(&registry.adapter_string),
        "AMD Radeon(TM) 890M Graphics"
    );
    assert_eq!(utf32(&registry.bios_string), "113-STRIXPOINT-001");
    assert_eq!(utf32(&registry.dac_type), "Internal DAC(400MHz)");
    assert_eq!(
        utf32(&registry.chip_type),
        "AMD Radeon Graphics Processor (0x150E)"
    );
    assert!(registry.adapter_string[28..].iter().all(|&unit| unit == 0));

    let mut segments = D3dkmtSegmentSizeInfo::default();
    assert_eq!(
        query(handle, KMTQAITYPE_GETSEGMENTSIZE, &mut segments),
        STATUS_SUCCESS
    );
    assert_eq!(
        segments,
        D3dkmtSegmentSizeInfo {
            dedicated_video_memory_size: 536_870_912,
            dedicated_system_memory_size: 0,
            shared_system_memory_size: 16_777_216_000,
        }
    );
    assert_eq!(close(handle), STATUS_SUCCESS);
}

#[test]
fn query_rejections() {
    let _serial = install(Scenario::default());
    let handle = open_all()[0].h_adapter;
    let mut address = D3dkmtAdapterAddress::default();
    let mut big = [0_u8; 64];

    // SAFETY: a null request is allowed and rejected.
    let null_status = unsafe { D3DKMTQueryAdapterInfo(std::ptr::null()) };
    assert_eq!(null_status, STATUS_INVALID_PARAMETER);
    assert_eq!(
        query(0x1234, KMTQAITYPE_ADAPTERADDRESS, &mut address),
        STATUS_INVALID_PARAMETER,
        "unknown handle"
    );
    assert_eq!(
        query(0x1234, 1, &mut address),
        STATUS_INVALID_PARAMETER,
        "the handle is checked before the type"
    );
    assert_eq!(query(handle, 1, &mut address), STATUS_NOT_SUPPORTED);
    assert_eq!(query(handle, 15, &mut big), STATUS_NOT_SUPPORTED);
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERADDRESS, &mut big),
        STATUS_INVALID_PARAMETER,
        "wrong size"
    );
    assert_eq!(
        query_raw(handle, KMTQAITYPE_ADAPTERADDRESS, std::ptr::null_mut(), 12),
        STATUS_INVALID_PARAMETER,
        "null data"
    );
    let mut ids = D3dkmtQueryDeviceIds {
        physical_adapter_index: 1,
        device_ids: D3dkmtDeviceIds::default(),
    };
    assert_eq!(
        query(handle, KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, &mut ids),
        STATUS_INVALID_PARAMETER,
        "only physical adapter 0 exists"
    );
    assert_eq!(
        ids.device_ids,
        D3dkmtDeviceIds::default(),
        "nothing written"
    );

    assert_eq!(close(handle), STATUS_SUCCESS);
    assert_eq!(close(handle), STATUS_INVALID_PARAMETER, "already closed");
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERADDRESS, &mut address),
        STATUS_INVALID_PARAMETER,
        "closed handle"
    );
    // SAFETY: a null request is allowed and rejected.
    let null_status = unsafe { D3DKMTCloseAdapter(std::ptr::null()) };
    assert_eq!(null_status, STATUS_INVALID_PARAMETER);
}

#[test]
fn fail_queries_fail_only_the_named_queries() {
    let mut scenario = Scenario::default();
    scenario.adapters[0].fail_queries = vec![AdapterQuery::Registry, AdapterQuery::SegmentSize];
    let _serial = install(scenario);
    let handle = open_all()[0].h_adapter;
    let mut ids = D3dkmtQueryDeviceIds::default();
    let mut address = D3dkmtAdapterAddress::default();
    let mut registry = Box::new(D3dkmtAdapterRegistryInfo {
        adapter_string: [0; REGISTRY_CHARS],
        bios_string: [0; REGISTRY_CHARS],
        dac_type: [0; REGISTRY_CHARS],
        chip_type: [0; REGISTRY_CHARS],
    });
    let mut segments = D3dkmtSegmentSizeInfo::default();
    assert_eq!(
        query(handle, KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, &mut ids),
        STATUS_SUCCESS
    );
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERADDRESS, &mut address),
        STATUS_SUCCESS
    );
    assert_eq!(
        query(handle, KMTQAITYPE_ADAPTERREGISTRYINFO, &mut *registry),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        query(handle, KMTQAITYPE_GETSEGMENTSIZE, &mut segments),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(close(handle), STATUS_SUCCESS);
}

#[test]
fn a_panic_becomes_an_error_status() {
    assert_eq!(
        crate::exports::export("test", || panic!("simulated bug")),
        STATUS_UNSUCCESSFUL
    );
}
