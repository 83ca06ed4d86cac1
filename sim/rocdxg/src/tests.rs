use std::ffi::c_void;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use wslsim_scenario::{AbiCheck, Scenario, WriteSize};

use crate::ffi::{HsaStructureSizes, HsaSystemProperties};
use crate::kmt::*;
use crate::layout::{KNOWN_LAYOUTS, Layout, SYSTEM_FIELDS, pack4};
use crate::record::NodeRecord;
use crate::state::with_state;
use crate::status;

// ---------------------------------------------------------------- layout against the tsv files

/// `(member, offset, size)` lines of `struct_name` in abi/HsaNodeProperties_<n>.tsv, plus its
/// `<sizeof>`.
fn tsv(layout: u32, struct_name: &str) -> (Vec<(String, usize, usize)>, Option<usize>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../abi")
        .join(format!("HsaNodeProperties_{layout}.tsv"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut members = Vec::new();
    let mut sizeof = None;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let columns: Vec<&str> = line.split('\t').collect();
        assert_eq!(columns.len(), 4, "{}: bad line {line:?}", path.display());
        if columns[0] != struct_name {
            continue;
        }
        let offset: usize = columns[2].parse().unwrap();
        let size: usize = columns[3].parse().unwrap();
        if columns[1] == "<sizeof>" {
            sizeof = Some(size);
        } else {
            members.push((columns[1].to_owned(), offset, size));
        }
    }
    (members, sizeof)
}

#[test]
fn node_layouts_match_the_compiled_header() {
    for size in KNOWN_LAYOUTS {
        let layout = Layout::for_size(size).unwrap();
        let (expected, sizeof) = tsv(size, "HsaNodeProperties");
        let actual: Vec<(String, usize, usize)> = layout
            .fields
            .iter()
            .map(|placed| (placed.field.name.to_owned(), placed.offset, placed.size))
            .collect();
        assert_eq!(actual, expected, "HsaNodeProperties_{size}.tsv");
        assert_eq!(
            Some(layout.size),
            sizeof,
            "sizeof in HsaNodeProperties_{size}.tsv"
        );
        assert_eq!(layout.size, size as usize);
    }
}

#[test]
fn system_properties_match_the_compiled_header() {
    let (offsets, sizeof) = pack4(SYSTEM_FIELDS.iter().map(|&(_, elem, count)| (elem, count)));
    let ours: Vec<(String, usize, usize)> = SYSTEM_FIELDS
        .iter()
        .zip(&offsets)
        .map(|(&(name, elem, count), &offset)| (name.to_owned(), offset, elem * count))
        .collect();
    assert_eq!(sizeof, size_of::<HsaSystemProperties>());
    let mut checked = 0;
    for size in KNOWN_LAYOUTS {
        let (members, tsv_sizeof) = tsv(size, "HsaSystemProperties");
        if members.is_empty() {
            continue;
        }
        assert_eq!(
            ours, members,
            "HsaSystemProperties in HsaNodeProperties_{size}.tsv"
        );
        assert_eq!(Some(sizeof), tsv_sizeof);
        checked += 1;
    }
    assert!(checked > 0, "some tsv file describes HsaSystemProperties");
}

#[test]
fn newer_layouts_are_the_396_fields_then_zeros() {
    let newest = Layout::for_size(396).unwrap();
    for size in [400, 512, 1024] {
        let layout = Layout::for_size(size).unwrap();
        assert_eq!(layout.size, size as usize);
        assert_eq!(layout.fields.len(), newest.fields.len());
        let record = NodeRecord::gpu(&Scenario::default().nodes[0], 1);
        let bytes = layout.encode(&record, layout.size);
        assert_eq!(&bytes[..396], &newest.encode(&record, 396)[..]);
        assert!(bytes[396..].iter().all(|&byte| byte == 0));
    }
    for size in [0, 364, 370, 398, 65536] {
        assert!(Layout::for_size(size).is_err(), "{size}");
    }
}

// ----------------------------------------------------------------------------- record encoding

fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes(bytes[offset..offset + 2].try_into().unwrap())
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

fn utf16_at(bytes: &[u8], offset: usize) -> String {
    let units: Vec<u16> = (0..64)
        .map(|i| u16_at(bytes, offset + 2 * i))
        .take_while(|&unit| unit != 0)
        .collect();
    String::from_utf16(&units).unwrap()
}

fn cstr_at(bytes: &[u8], offset: usize) -> String {
    let field = &bytes[offset..offset + 64];
    let end = field.iter().position(|&byte| byte == 0).unwrap();
    String::from_utf8(field[..end].to_vec()).unwrap()
}

#[test]
fn gpu_record_decodes_back_by_offset() {
    let layout = Layout::for_size(396).unwrap();
    let record = NodeRecord::gpu(&Scenario::default().nodes[0], 1);
    let bytes = layout.encode(&record, 396);
    let at = |name: &str| layout.field(name).unwrap().offset;
    assert_eq!(at("NumFComputeCores"), 4);
    assert_eq!(u32_at(&bytes, 0), 0, "NumCPUCores");
    assert_eq!(u32_at(&bytes, 4), 32, "NumFComputeCores");
    assert_eq!(u32_at(&bytes, 28), 0x8000_1000, "FComputeIdLo");
    assert_eq!(u32_at(&bytes, 40), 16, "MaxWavesPerSIMD");
    assert_eq!(u32_at(&bytes, 52), 32, "WaveFrontSize");
    assert_eq!(u32_at(&bytes, 56), 1, "NumShaderBanks");
    assert_eq!(u32_at(&bytes, 60), 2, "NumArrays");
    assert_eq!(u32_at(&bytes, 64), 8, "NumCUPerArray");
    assert_eq!(u32_at(&bytes, 68), 2, "NumSIMDPerCU");
    let engine = u32_at(&bytes, 76);
    assert_eq!(engine & 0x3FF, 42, "EngineId.uCode");
    assert_eq!((engine >> 10) & 0x3F, 11, "EngineId.Major");
    assert_eq!((engine >> 16) & 0xFF, 5, "EngineId.Minor");
    assert_eq!(engine >> 24, 0, "EngineId.Stepping");
    assert_eq!(u32_at(&bytes, 80), 0, "OverrideEngineId");
    assert_eq!(u16_at(&bytes, 84), 0x1002, "VendorId");
    assert_eq!(u16_at(&bytes, 86), 0x150E, "DeviceId");
    assert_eq!(u32_at(&bytes, 88), 0xC500, "LocationId");
    assert_eq!(u64_at(&bytes, 92), 0, "LocalMemSize");
    assert_eq!(u32_at(&bytes, 100), 2900, "MaxEngineClockMhzFCompute");
    assert_eq!(u32_at(&bytes, 108), 128, "DrmRenderMinor");
    assert_eq!(utf16_at(&bytes, 112), "AMD Radeon 890M Graphics");
    assert_eq!(cstr_at(&bytes, 240), "gfx1150");
    assert_eq!(u32_at(&bytes, 304) & 0x3FF, 17, "uCodeSDMA");
    assert_eq!(bytes[332], 8, "NumSdmaQueuesPerEngine");
    assert_eq!(bytes[333], 8, "NumCpQueues");
    assert_eq!(bytes[335], 1, "Integrated");
    assert_eq!(u64_at(&bytes, 340), 0x0123_4567_89AB_CDEF, "UniqueID");
    assert_eq!(u32_at(&bytes, 356), 1, "NumXcc");
    assert_eq!(u32_at(&bytes, 360), 0x5A3C, "KFDGpuID");
    assert_eq!(u32_at(&bytes, 364), 150, "FamilyID");
    assert_eq!(u32_at(&bytes, 368), 0x95_2000, "CwsrSize");
    assert_eq!(u32_at(&bytes, 372), 0x2000, "CtlStackSize");
    assert_eq!(u32_at(&bytes, 376), 0x0001_D3A5, "LuidLowPart");
    assert_eq!(u32_at(&bytes, 380), 0, "LuidHighPart");
    assert_eq!(u64_at(&bytes, 384), 100_000, "WallClockKHz");
    assert_eq!(u32_at(&bytes, 392), 0, "FabricHandleSupported");

    // A shorter write is a prefix of the same record.
    let short = layout.encode(&record, 368);
    assert_eq!(short.len(), 368);
    assert_eq!(&short[..], &bytes[..368]);
    // An older layout puts the shared fields at the same offsets.
    let old = Layout::for_size(376).unwrap().encode(&record, 376);
    assert_eq!(&old[..], &bytes[..376]);
}

#[test]
fn cpu_record_and_names_keep_a_terminating_nul() {
    let mut scenario = Scenario::default();
    scenario.cpu.name = "C".repeat(63);
    let layout = Layout::for_size(396).unwrap();
    let cpu = layout.encode(&NodeRecord::cpu(&scenario.cpu), 396);
    assert_eq!(u32_at(&cpu, 0), 24, "NumCPUCores");
    assert_eq!(u32_at(&cpu, 4), 0, "NumFComputeCores");
    assert_eq!(u32_at(&cpu, 12), 1, "NumMemoryBanks");
    assert_eq!(utf16_at(&cpu, 112), "C".repeat(63));
    assert_eq!(u16_at(&cpu, 112 + 126), 0, "terminating NUL");

    let mut record = NodeRecord::gpu(&scenario.nodes[0], 2);
    record.marketing_name = vec![u16::from(b'M'); 100];
    record.amd_name = vec![b'g'; 100];
    let bytes = layout.encode(&record, 396);
    assert_eq!(utf16_at(&bytes, 112).len(), 63);
    assert_eq!(cstr_at(&bytes, 240).len(), 63);
    assert_eq!(
        u32_at(&bytes, 28),
        0x8000_2000,
        "FComputeIdLo of the second GPU node"
    );
}

// ------------------------------------------------------------------- the exports, in-process

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises tests that use the process-global thunk state and installs `scenario`.
pub(crate) fn install(scenario: Scenario) -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    crate::reset_for_tests(scenario);
    guard
}

fn scenario_with(edit: impl FnOnce(&mut Scenario)) -> Scenario {
    let mut scenario = Scenario::default();
    edit(&mut scenario);
    scenario
}

fn open() -> i32 {
    // SAFETY: no preconditions.
    unsafe { hsaKmtOpenKFD() }
}

fn close() -> i32 {
    // SAFETY: no preconditions.
    unsafe { hsaKmtCloseKFD() }
}

fn acquire() -> (i32, u32) {
    let mut properties = HsaSystemProperties {
        num_nodes: 0xDEAD,
        ..HsaSystemProperties::default()
    };
    // SAFETY: a valid HsaSystemProperties to write.
    let status = unsafe { hsaKmtAcquireSystemProperties(&mut properties) };
    (status, properties.num_nodes)
}

fn release() -> i32 {
    // SAFETY: no preconditions.
    unsafe { hsaKmtReleaseSystemProperties() }
}

const CANARY_LEN: usize = 1024;

/// Calls GetNodeProperties into two buffers filled with different canaries and returns the
/// status, the number of leading bytes written (identical in both), and the record.
fn get_node(node: u32) -> (i32, usize, Vec<u8>) {
    let mut results = Vec::new();
    for canary in [0xA5_u8, 0x5A] {
        let mut buffer = vec![canary; CANARY_LEN];
        // SAFETY: 1024 writable bytes, more than any layout the tests use.
        let status = unsafe { hsaKmtGetNodeProperties(node, buffer.as_mut_ptr().cast::<c_void>()) };
        results.push((status, canary, buffer));
    }
    let (status_a, canary_a, a) = &results[0];
    let (status_b, canary_b, b) = &results[1];
    assert_eq!(status_a, status_b);
    let written = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    assert!(a[written..].iter().all(|byte| byte == canary_a));
    assert!(b[written..].iter().all(|byte| byte == canary_b));
    (*status_a, written, a[..written].to_vec())
}

fn abi_check(node_size: u16, handle_size: u16) -> i32 {
    abi_check_with(16, node_size, handle_size)
}

fn abi_check_with(structure_sizes: u16, node_size: u16, handle_size: u16) -> i32 {
    let sizes = HsaStructureSizes {
        structure_sizes,
        size_of_hsa_node_properties: node_size,
        size_of_hsa_external_handle_desc: handle_size,
        reserved: [0; 5],
    };
    // SAFETY: a valid HsaStructureSizes to read.
    unsafe { DxgAbiCheck(&sizes) }
}

fn wallclock(node: u32) -> (i32, u64) {
    let mut hz = 0;
    // SAFETY: a valid u64 to write.
    let status = unsafe { hsaKmtGetNodeWallclockFrequency(node, &mut hz) };
    (status, hz)
}

#[test]
fn the_sdk_read_sequence_on_the_default_machine() {
    let _serial = install(Scenario::default());
    assert_eq!(abi_check(396, 0), status::SUCCESS);
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire(), (status::SUCCESS, 2));
    let (status0, written0, cpu) = get_node(0);
    assert_eq!((status0, written0), (status::SUCCESS, 396));
    assert_eq!(u32_at(&cpu, 0), 24);
    assert_eq!(u32_at(&cpu, 4), 0);
    assert_eq!(utf16_at(&cpu, 112), "AMD Ryzen AI 9 HX 370 w/ Radeon 890M");
    let (status1, written1, gpu) = get_node(1);
    assert_eq!((status1, written1), (status::SUCCESS, 396));
    assert_eq!(u32_at(&gpu, 4), 32);
    assert_eq!(u16_at(&gpu, 86), 0x150E);
    assert_eq!(get_node(2).0, status::INVALID_NODE_UNIT);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    assert_eq!(close(), status::KERNEL_IO_CHANNEL_NOT_OPENED);
}

#[test]
fn open_is_reference_counted() {
    let _serial = install(Scenario::default());
    assert_eq!(close(), status::KERNEL_IO_CHANNEL_NOT_OPENED);
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(open(), status::KERNEL_ALREADY_OPENED);
    assert_eq!(with_state(|state| state.open_count()), 2);
    assert_eq!(close(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    assert_eq!(close(), status::KERNEL_IO_CHANNEL_NOT_OPENED);
    assert_eq!(
        open(),
        status::SUCCESS,
        "a reopen after the last close is fresh"
    );
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn kfd_already_open_answers_22_once_and_needs_a_close() {
    let _serial = install(scenario_with(|s| s.thunk.kfd_already_open = true));
    assert_eq!(open(), status::KERNEL_ALREADY_OPENED);
    assert_eq!(acquire(), (status::SUCCESS, 2), "22 still counts as open");
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    assert_eq!(close(), status::KERNEL_IO_CHANNEL_NOT_OPENED);
    assert_eq!(open(), status::SUCCESS, "only the first open answers 22");
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn failed_open_opens_nothing() {
    let _serial = install(scenario_with(|s| s.thunk.open_status = status::ERROR));
    assert_eq!(open(), status::ERROR);
    assert_eq!(acquire().0, status::KERNEL_IO_CHANNEL_NOT_OPENED);
    assert_eq!(close(), status::KERNEL_IO_CHANNEL_NOT_OPENED);
}

#[test]
fn acquire_rules() {
    let _serial = install(scenario_with(|s| s.thunk.acquire_status = 13));
    assert_eq!(acquire().0, status::KERNEL_IO_CHANNEL_NOT_OPENED);
    assert_eq!(open(), status::SUCCESS);
    // SAFETY: a null pointer is allowed and rejected.
    let null = unsafe { hsaKmtAcquireSystemProperties(std::ptr::null_mut()) };
    assert_eq!(null, status::INVALID_PARAMETER);
    assert_eq!(acquire(), (13, 0xDEAD), "a failed acquire writes nothing");
    assert_eq!(get_node(0).0, status::ERROR, "no snapshot");
    assert_eq!(release(), status::ERROR, "no snapshot");
    assert_eq!(close(), status::SUCCESS);

    let _serial = {
        drop(_serial);
        install(Scenario::empty())
    };
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(
        acquire(),
        (status::SUCCESS, 1),
        "the empty machine has the CPU node only"
    );
    assert_eq!(get_node(0).0, status::SUCCESS);
    assert_eq!(get_node(1).0, status::INVALID_NODE_UNIT);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn node_properties_rules() {
    let _serial = install(scenario_with(|s| {
        s.nodes.push(s.nodes[0].clone());
        s.thunk.node_status.insert(1, status::ERROR);
    }));
    assert_eq!(get_node(0).0, status::ERROR, "no snapshot");
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire(), (status::SUCCESS, 3));
    // SAFETY: a null pointer is allowed and rejected.
    let null = unsafe { hsaKmtGetNodeProperties(0, std::ptr::null_mut()) };
    assert_eq!(null, status::INVALID_PARAMETER);
    assert_eq!(get_node(1), (status::ERROR, 0, Vec::new()), "node_status");
    let (status2, written, record) = get_node(2);
    assert_eq!((status2, written), (status::SUCCESS, 396));
    assert_eq!(u32_at(&record, 28), 0x8000_2000);
    assert_eq!(get_node(3).0, status::INVALID_NODE_UNIT);
    assert_eq!(get_node(u32::MAX).0, status::INVALID_NODE_UNIT);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(get_node(2).0, status::ERROR, "released");
    assert_eq!(release(), status::ERROR);
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn release_and_close_statuses() {
    let _serial = install(scenario_with(|s| {
        s.thunk.release_status = 21;
        s.thunk.close_status = 21;
    }));
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire().0, status::SUCCESS);
    assert_eq!(release(), 21);
    assert_eq!(
        get_node(1).0,
        status::SUCCESS,
        "a failed release keeps the snapshot"
    );
    assert_eq!(close(), 21);
    assert_eq!(
        close(),
        status::KERNEL_IO_CHANNEL_NOT_OPENED,
        "the failed close closed"
    );
}

#[test]
fn every_layout_writes_exactly_its_size() {
    for size in [368, 376, 392, 396, 400, 512] {
        let _serial = install(scenario_with(|s| s.thunk.layout = size));
        assert_eq!(open(), status::SUCCESS);
        assert_eq!(acquire().0, status::SUCCESS);
        let (status1, written, record) = get_node(1);
        assert_eq!(
            (status1, written),
            (status::SUCCESS, size as usize),
            "layout {size}"
        );
        assert_eq!(u32_at(&record, 364), 150, "FamilyID");
        if size >= 392 {
            assert_eq!(u64_at(&record, 384), 100_000, "WallClockKHz");
        }
        assert_eq!(release(), status::SUCCESS);
        assert_eq!(close(), status::SUCCESS);
    }
}

#[test]
fn strict_abi_check() {
    let _serial = install(scenario_with(|s| s.thunk.layout = 376));
    // SAFETY: a null pointer is allowed and rejected.
    let null_status = unsafe { DxgAbiCheck(std::ptr::null()) };
    assert_eq!(null_status, status::INVALID_PARAMETER);
    assert_eq!(abi_check_with(12, 376, 0), status::INVALID_PARAMETER);
    assert_eq!(abi_check(396, 0), status::DRIVER_MISMATCH);
    assert_eq!(abi_check(0, 0), status::DRIVER_MISMATCH);
    assert_eq!(with_state(|state| state.negotiated()), 0);
    assert_eq!(abi_check(376, 0), status::SUCCESS);
    assert_eq!(
        abi_check(376, 64),
        status::SUCCESS,
        "strict ignores the handle size"
    );
    assert_eq!(with_state(|state| state.negotiated()), 376);
}

#[test]
fn lenient_abi_check() {
    let _serial = install(scenario_with(|s| {
        s.thunk.abi_check = AbiCheck::Lenient;
        s.thunk.handle_import_desc_size = 32;
    }));
    assert_eq!(abi_check_with(0, 396, 0), status::INVALID_PARAMETER);
    assert_eq!(abi_check(0, 0), status::SUCCESS);
    assert_eq!(
        with_state(|state| state.negotiated()),
        0,
        "0 negotiates nothing"
    );
    assert_eq!(abi_check(396, 0), status::SUCCESS);
    assert_eq!(abi_check(396, 32), status::SUCCESS);
    assert_eq!(abi_check(396, 40), status::DRIVER_MISMATCH);
    assert_eq!(abi_check(376, 0), status::DRIVER_MISMATCH);
    assert_eq!(with_state(|state| state.negotiated()), 396);

    let _serial = {
        drop(_serial);
        install(scenario_with(|s| s.thunk.abi_check = AbiCheck::Lenient))
    };
    assert_eq!(
        abi_check(396, 1234),
        status::SUCCESS,
        "handle_import_desc_size 0 accepts any"
    );
}

#[test]
fn reject_and_absent_abi_check() {
    let _serial = install(scenario_with(|s| s.thunk.abi_check = AbiCheck::Reject));
    assert_eq!(abi_check(396, 0), status::DRIVER_MISMATCH);
    assert_eq!(abi_check_with(8, 396, 0), status::INVALID_PARAMETER);

    let absent = scenario_with(|s| s.thunk.abi_check = AbiCheck::Absent);
    assert_eq!(crate::hidden_exports(&absent), ["DxgAbiCheck"]);
    let _serial = {
        drop(_serial);
        install(absent)
    };
    assert_eq!(abi_check(396, 0), status::NOT_IMPLEMENTED);
    assert!(crate::hidden_exports(&Scenario::default()).is_empty());
}

#[test]
fn negotiated_write_size() {
    let _serial = install(scenario_with(|s| {
        s.thunk.write_size = WriteSize::Negotiated
    }));
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire().0, status::SUCCESS);
    assert_eq!(
        get_node(1).1,
        368,
        "no DxgAbiCheck yet: the legacy 368 bytes"
    );
    assert_eq!(abi_check(376, 0), status::DRIVER_MISMATCH);
    assert_eq!(get_node(1).1, 368, "a failed check changes nothing");
    assert_eq!(abi_check(396, 0), status::SUCCESS);
    let (status1, written, record) = get_node(1);
    assert_eq!((status1, written), (status::SUCCESS, 396));
    assert_eq!(u64_at(&record, 384), 100_000);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn wallclock_frequency() {
    let _serial = install(Scenario::default());
    assert_eq!(wallclock(0), (status::SUCCESS, 1_000_000_000));
    assert_eq!(wallclock(1), (status::SUCCESS, 100_000_000));
    assert_eq!(wallclock(2).0, status::INVALID_NODE_UNIT);
    // SAFETY: a null pointer is allowed and rejected.
    let null = unsafe { hsaKmtGetNodeWallclockFrequency(1, std::ptr::null_mut()) };
    assert_eq!(null, status::INVALID_PARAMETER);
}

#[test]
fn a_panic_becomes_an_error_status() {
    let status = crate::kmt::export("test", || panic!("simulated bug"));
    assert_eq!(status, status::ERROR);
}

// ---------------------------------------------------------------- the topology snapshot

#[test]
fn a_refcounted_snapshot_outlives_a_second_holders_release() {
    let _serial = install(Scenario::default());
    // The runtime's session: open, acquire, and it keeps the snapshot.
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire(), (status::SUCCESS, 2));
    // A late tool in the same KFD session: acquire (counted), read, release.
    assert_eq!(open(), status::KERNEL_ALREADY_OPENED);
    assert_eq!(acquire(), (status::SUCCESS, 2));
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    // The runtime's hold survives: its node reads still see the 890M.
    let (node, written, record) = get_node(1);
    assert_eq!((node, written), (status::SUCCESS, 396));
    assert_eq!(u32_at(&record, 4), 32, "NumFComputeCores");
    assert_eq!(release(), status::SUCCESS);
    // Released by everyone: a later acquire in the same session takes a fresh snapshot.
    assert_eq!(acquire(), (status::SUCCESS, 2));
    assert_eq!(u32_at(&get_node(1).2, 4), 32);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn a_released_thunk_reads_freed_memory_after_a_release_in_the_same_session() {
    let _serial = install(scenario_with(|s| s.thunk.snapshot_refcount = false));
    // The runtime's hsa_init: open, acquire, read, release; the KFD stays open.
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire(), (status::SUCCESS, 2));
    assert_eq!(u32_at(&get_node(1).2, 4), 32);
    assert_eq!(release(), status::SUCCESS);
    assert!(with_state(|state| state.snapshot_freed()));
    // A late-attached tool: its acquire gets the freed snapshot back, poisoned.
    assert_eq!(open(), status::KERNEL_ALREADY_OPENED);
    let (acquired, nodes) = acquire();
    assert_eq!(acquired, status::SUCCESS, "the thunk does not notice");
    assert_eq!(nodes, 0xDEDE_DEDE, "NumNodes read from freed memory");
    let (node, written, record) = get_node(1);
    assert_eq!((node, written), (status::SUCCESS, 396));
    assert!(record.iter().all(|&b| b == crate::state::FREED_BYTE));
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
    // A new KFD session starts clean: the constructor-time read of an ordinary launch.
    assert_eq!(open(), status::SUCCESS);
    assert_eq!(acquire(), (status::SUCCESS, 2));
    assert_eq!(u32_at(&get_node(1).2, 4), 32);
    assert_eq!(release(), status::SUCCESS);
    assert_eq!(close(), status::SUCCESS);
}

#[test]
fn each_copy_takes_its_own_thunk_entry() {
    let scenario = Scenario::from_toml_str(
        "[thunk]\nlayout = 396\nabi_check = \"absent\"\n\n[[thunk.copies]]\n\
         path = \"/opt/rocm-7.2.0/lib/librocdxg.so\"\nlayout = 376\nabi_check = \"strict\"\n",
    )
    .unwrap();
    let (stock, entry) = crate::copy_scenario(&scenario, Some("/opt/rocm-7.2.0/lib/librocdxg.so"));
    assert_eq!(entry, Some(0));
    assert_eq!(stock.thunk.layout, 376);
    assert!(crate::hidden_exports(&stock).is_empty());
    let (preloaded, entry) = crate::copy_scenario(&scenario, Some("/home/me/librocdxg.so.1.2.0"));
    assert_eq!(entry, None);
    assert_eq!(preloaded.thunk.layout, 396);
    assert_eq!(crate::hidden_exports(&preloaded), ["DxgAbiCheck"]);
}
