use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_void};
use std::mem::offset_of;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::tables::*;
use crate::types::*;
use crate::{intercept, runtime, signal, topology};

fn abi_file(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../abi")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// struct -> [(member, offset, size)] in file order.
fn tsv(name: &str) -> BTreeMap<String, Vec<(String, usize, usize)>> {
    let mut out: BTreeMap<String, Vec<(String, usize, usize)>> = BTreeMap::new();
    for line in abi_file(name).lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "bad line {line:?}");
        out.entry(cols[0].to_owned()).or_default().push((
            cols[1].to_owned(),
            cols[2].parse().unwrap(),
            cols[3].parse().unwrap(),
        ));
    }
    out
}

fn check_table(
    reference: &BTreeMap<String, Vec<(String, usize, usize)>>,
    table: &str,
    names: &[&str],
    size: usize,
    version: &ApiTableVersion,
    major: u32,
    step: u32,
) {
    let members = &reference[table];
    let mut expected: Vec<(String, usize, usize)> = vec![("version".to_owned(), 0, 16)];
    for (k, name) in names.iter().enumerate() {
        expected.push((format!("{name}_fn"), 16 + 8 * k, 8));
    }
    expected.push(("<sizeof>".to_owned(), 0, size));
    assert_eq!(members, &expected, "{table} differs from the reference");
    assert_eq!(version.major_id, major, "{table} major");
    assert_eq!(version.step_id, step, "{table} step");
}

#[test]
fn tables_match_the_reference_layouts() {
    let reference = tsv("hsa-runtime-tables.tsv");
    check_table(
        &reference,
        "CoreApiTable",
        &CORE_NAMES,
        size_of::<CoreApiTable>(),
        &CORE_TABLE.version,
        2,
        0,
    );
    check_table(
        &reference,
        "AmdExtTable",
        &AMD_EXT_NAMES,
        size_of::<AmdExtTable>(),
        &AMD_EXT_TABLE.version,
        2,
        7,
    );
    check_table(
        &reference,
        "FinalizerExtTable",
        &FINALIZER_NAMES,
        size_of::<FinalizerExtTable>(),
        &FINALIZER_TABLE.version,
        2,
        0,
    );
    check_table(
        &reference,
        "ImageExtTable",
        &IMAGE_NAMES,
        size_of::<ImageExtTable>(),
        &IMAGE_TABLE.version,
        2,
        1,
    );
    check_table(
        &reference,
        "ToolsApiTable",
        &TOOLS_NAMES,
        size_of::<ToolsApiTable>(),
        &TOOLS_TABLE.version,
        1,
        0,
    );
    check_table(
        &reference,
        "PcSamplingExtTable",
        &PC_SAMPLING_NAMES,
        size_of::<PcSamplingExtTable>(),
        &PC_SAMPLING_TABLE.version,
        1,
        0,
    );

    let root = vec![
        ("version".to_owned(), offset_of!(HsaApiTable, version), 16),
        ("core_".to_owned(), offset_of!(HsaApiTable, core), 8),
        ("amd_ext_".to_owned(), offset_of!(HsaApiTable, amd_ext), 8),
        (
            "finalizer_ext_".to_owned(),
            offset_of!(HsaApiTable, finalizer_ext),
            8,
        ),
        (
            "image_ext_".to_owned(),
            offset_of!(HsaApiTable, image_ext),
            8,
        ),
        ("tools_".to_owned(), offset_of!(HsaApiTable, tools), 8),
        (
            "pc_sampling_ext_".to_owned(),
            offset_of!(HsaApiTable, pc_sampling_ext),
            8,
        ),
        ("<sizeof>".to_owned(), 0, size_of::<HsaApiTable>()),
    ];
    assert_eq!(reference["HsaApiTable"], root);
    assert_eq!(HSA_API_TABLE.version.major_id, 3);
    assert_eq!(HSA_API_TABLE.version.step_id, 1);
    assert_eq!(
        HSA_API_TABLE.core.load(Ordering::Relaxed).cast_const(),
        &raw const CORE_TABLE
    );
    assert_eq!(
        HSA_API_TABLE.amd_ext.load(Ordering::Relaxed).cast_const(),
        &raw const AMD_EXT_TABLE
    );
    let version = vec![
        (
            "major_id".to_owned(),
            offset_of!(ApiTableVersion, major_id),
            4,
        ),
        (
            "minor_id".to_owned(),
            offset_of!(ApiTableVersion, minor_id),
            4,
        ),
        (
            "step_id".to_owned(),
            offset_of!(ApiTableVersion, step_id),
            4,
        ),
        (
            "reserved".to_owned(),
            offset_of!(ApiTableVersion, reserved),
            4,
        ),
        ("<sizeof>".to_owned(), 0, size_of::<ApiTableVersion>()),
    ];
    assert_eq!(reference["ApiTableVersion"], version);
}

#[test]
fn packets_and_signal_match_the_reference_layouts() {
    let reference = tsv("hsa-runtime-tables.tsv");
    type Members = Vec<(&'static str, usize, usize)>;
    let ours: Vec<(&str, Members)> = vec![
        (
            "hsa_kernel_dispatch_packet_t",
            vec![
                ("header", offset_of!(KernelDispatchPacket, header), 2),
                ("setup", offset_of!(KernelDispatchPacket, setup), 2),
                (
                    "workgroup_size_x",
                    offset_of!(KernelDispatchPacket, workgroup_size_x),
                    2,
                ),
                (
                    "workgroup_size_y",
                    offset_of!(KernelDispatchPacket, workgroup_size_y),
                    2,
                ),
                (
                    "workgroup_size_z",
                    offset_of!(KernelDispatchPacket, workgroup_size_z),
                    2,
                ),
                ("reserved0", offset_of!(KernelDispatchPacket, reserved0), 2),
                (
                    "grid_size_x",
                    offset_of!(KernelDispatchPacket, grid_size_x),
                    4,
                ),
                (
                    "grid_size_y",
                    offset_of!(KernelDispatchPacket, grid_size_y),
                    4,
                ),
                (
                    "grid_size_z",
                    offset_of!(KernelDispatchPacket, grid_size_z),
                    4,
                ),
                (
                    "private_segment_size",
                    offset_of!(KernelDispatchPacket, private_segment_size),
                    4,
                ),
                (
                    "group_segment_size",
                    offset_of!(KernelDispatchPacket, group_segment_size),
                    4,
                ),
                (
                    "kernel_object",
                    offset_of!(KernelDispatchPacket, kernel_object),
                    8,
                ),
                (
                    "kernarg_address",
                    offset_of!(KernelDispatchPacket, kernarg_address),
                    8,
                ),
                ("reserved2", offset_of!(KernelDispatchPacket, reserved2), 8),
                (
                    "completion_signal",
                    offset_of!(KernelDispatchPacket, completion_signal),
                    8,
                ),
                ("<sizeof>", 0, size_of::<KernelDispatchPacket>()),
            ],
        ),
        (
            "hsa_barrier_and_packet_t",
            vec![
                ("header", offset_of!(BarrierPacket, header), 2),
                ("reserved0", offset_of!(BarrierPacket, reserved0), 2),
                ("reserved1", offset_of!(BarrierPacket, reserved1), 4),
                ("dep_signal", offset_of!(BarrierPacket, dep_signal), 40),
                ("reserved2", offset_of!(BarrierPacket, reserved2), 8),
                (
                    "completion_signal",
                    offset_of!(BarrierPacket, completion_signal),
                    8,
                ),
                ("<sizeof>", 0, size_of::<BarrierPacket>()),
            ],
        ),
        (
            "amd_signal_t",
            vec![
                ("kind", offset_of!(AmdSignal, kind), 8),
                ("value", offset_of!(AmdSignal, value), 8),
                (
                    "event_mailbox_ptr",
                    offset_of!(AmdSignal, event_mailbox_ptr),
                    8,
                ),
                ("event_id", offset_of!(AmdSignal, event_id), 4),
                ("reserved1", offset_of!(AmdSignal, reserved1), 4),
                ("start_ts", offset_of!(AmdSignal, start_ts), 8),
                ("end_ts", offset_of!(AmdSignal, end_ts), 8),
                ("queue_ptr", offset_of!(AmdSignal, queue_ptr), 8),
                ("reserved3", offset_of!(AmdSignal, reserved3), 8),
                ("<sizeof>", 0, size_of::<AmdSignal>()),
            ],
        ),
        (
            "hsa_amd_profiling_dispatch_time_t",
            vec![
                ("start", offset_of!(ProfilingTime, start), 8),
                ("end", offset_of!(ProfilingTime, end), 8),
                ("<sizeof>", 0, size_of::<ProfilingTime>()),
            ],
        ),
        (
            "hsa_amd_profiling_async_copy_time_t",
            vec![
                ("start", offset_of!(ProfilingTime, start), 8),
                ("end", offset_of!(ProfilingTime, end), 8),
                ("<sizeof>", 0, size_of::<ProfilingTime>()),
            ],
        ),
    ];
    for (name, members) in ours {
        let members: Vec<(String, usize, usize)> = members
            .into_iter()
            .map(|(m, o, s)| (m.to_owned(), o, s))
            .collect();
        assert_eq!(reference[name], members, "{name}");
    }
}

#[test]
fn node_property_offsets_match_every_layout() {
    for layout in [368u32, 376, 392, 396] {
        let reference = tsv(&format!("HsaNodeProperties_{layout}.tsv"));
        let members = &reference["HsaNodeProperties"];
        for field in topology::FIELDS {
            let found = members.iter().find(|(m, _, _)| m == field.name);
            if layout >= field.since {
                assert_eq!(
                    found,
                    Some(&(field.name.to_owned(), field.offset, field.size)),
                    "{} in layout {layout}",
                    field.name
                );
            } else {
                assert_eq!(found, None, "{} must not be in layout {layout}", field.name);
            }
        }
        let size = members.iter().find(|(m, _, _)| m == "<sizeof>").unwrap().2;
        assert_eq!(size, layout as usize);
    }
}

#[test]
fn node_records_decode_only_their_layout() {
    let mut bytes = vec![0u8; 396];
    let put = |bytes: &mut Vec<u8>, offset: usize, value: &[u8]| {
        bytes[offset..offset + value.len()].copy_from_slice(value)
    };
    put(&mut bytes, 4, &32u32.to_le_bytes());
    put(&mut bytes, 68, &2u32.to_le_bytes());
    put(
        &mut bytes,
        76,
        &((11 << 10) | (5 << 16) | 42u32).to_le_bytes(),
    );
    let name: Vec<u8> = "AMD Radeon 890M Graphics"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    put(&mut bytes, 112, &name);
    put(&mut bytes, 384, &100_000u64.to_le_bytes());
    let record = topology::parse(&bytes, 396);
    assert_eq!(record.gfx_name(), "gfx1150");
    assert_eq!(record.marketing_name, "AMD Radeon 890M Graphics");
    assert_eq!(record.wallclock_khz, 100_000);
    assert_eq!(record.simd_count / record.simd_per_cu, 16);
    // A 376-byte runtime does not read WallClockKHz even if the bytes are there.
    assert_eq!(topology::parse(&bytes[..376], 376).wallclock_khz, 0);
    // gfx90a-style stepping in hex, override engine id preferred.
    let mut record = record;
    record.override_engine_id = (9 << 10) | (10 << 24);
    assert_eq!(record.gfx_name(), "gfx90a");
}

static ROUTED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn wrapped_status_string(status: Status, out: *mut *const c_char) -> Status {
    ROUTED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: forwards the caller's arguments to the runtime's implementation.
    unsafe { crate::info::hsa_status_string(status, out) }
}

#[test]
fn exports_call_through_the_table() {
    let slot = &CORE_TABLE.slots[CoreSlot::hsa_status_string as usize];
    let original = slot.load(Ordering::SeqCst);
    slot.store(wrapped_status_string as *mut c_void, Ordering::SeqCst);
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a valid out pointer.
    let status = unsafe { crate::tables::hsa_status_string(ERROR_OUT_OF_RESOURCES, &mut text) };
    slot.store(original, Ordering::SeqCst);
    assert_eq!(status, SUCCESS);
    assert_eq!(
        ROUTED.load(Ordering::SeqCst),
        1,
        "the export did not call through the slot"
    );
    // SAFETY: the runtime returned a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap();
    assert!(text.starts_with("HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
}

#[test]
fn unimplemented_slots_are_stubs_returning_error() {
    assert!(!CoreApiTable::IMPLEMENTED[CoreSlot::hsa_soft_queue_create as usize]);
    assert!(CoreApiTable::IMPLEMENTED[CoreSlot::hsa_init as usize]);
    assert!(AmdExtTable::IMPLEMENTED[AmdExtSlot::hsa_amd_queue_intercept_register as usize]);
    // SAFETY: the stub reads no argument.
    assert_eq!(unsafe { crate::tables::hsa_soft_queue_create() }, ERROR);
    // Distinct stubs per slot (each names itself).
    let a = CORE_TABLE.slots[CoreSlot::hsa_soft_queue_create as usize].load(Ordering::Relaxed);
    let b = CORE_TABLE.slots[CoreSlot::hsa_isa_compatible as usize].load(Ordering::Relaxed);
    assert_ne!(a, b);
}

#[test]
fn dxg_detection_and_register_switches() {
    use wslsim_scenario::Generation::{Current, Stock72};
    assert!(!runtime::dxg_detection_enabled(Stock72, None));
    assert!(!runtime::dxg_detection_enabled(Stock72, Some("true")));
    assert!(runtime::dxg_detection_enabled(Stock72, Some("1")));
    assert!(runtime::dxg_detection_enabled(Current, None));
    assert!(runtime::dxg_detection_enabled(Current, Some("")));
    assert!(!runtime::dxg_detection_enabled(Current, Some("0")));
    assert!(runtime::register_disabled(Some("1")));
    for value in [None, Some("true"), Some("01"), Some("0"), Some(" 1")] {
        assert!(!runtime::register_disabled(value), "{value:?}");
    }
    assert_eq!(crate::rocprofiler_register_import_hsa(), 11800);
}

#[test]
fn signal_values_and_operations() {
    let s = signal::create(5);
    assert!(signal::is_live(s));
    assert_eq!(s.handle % 64, 0, "amd_signal_t must be 64-byte aligned");
    let obj = signal::object(s).unwrap();
    assert_eq!(obj.amd.kind, AMD_SIGNAL_KIND_USER);
    // SAFETY: (all calls) a live signal.
    unsafe {
        assert_eq!(signal::hsa_signal_load(s), 5);
        signal::hsa_signal_add(s, 3);
        assert_eq!(signal::hsa_signal_load(s), 8);
        signal::hsa_signal_subtract(s, 10);
        assert_eq!(signal::hsa_signal_load(s), -2);
        signal::hsa_signal_store(s, 0b1100);
        signal::hsa_signal_and(s, 0b0110);
        assert_eq!(signal::hsa_signal_load(s), 0b0100);
        signal::hsa_signal_or(s, 0b0001);
        assert_eq!(signal::hsa_signal_load(s), 0b0101);
        signal::hsa_signal_xor(s, 0b0111);
        assert_eq!(signal::hsa_signal_load(s), 0b0010);
        assert_eq!(signal::hsa_signal_exchange(s, 9), 2);
        assert_eq!(
            signal::hsa_signal_cas(s, 1, 7),
            9,
            "failed CAS returns the current value"
        );
        assert_eq!(signal::hsa_signal_load(s), 9);
        assert_eq!(signal::hsa_signal_cas(s, 9, 7), 9);
        assert_eq!(signal::hsa_signal_load(s), 7);
        // Address of the value is inside amd_signal_t at offset 8.
        let mut value_ptr: *mut i64 = std::ptr::null_mut();
        assert_eq!(
            signal::hsa_amd_signal_value_pointer(s, &mut value_ptr),
            SUCCESS
        );
        assert_eq!(value_ptr as u64, s.handle + 8);
        assert_eq!(signal::hsa_signal_destroy(s), SUCCESS);
        assert_eq!(signal::hsa_signal_destroy(s), ERROR_INVALID_SIGNAL);
    }
}

#[test]
fn signal_waits_block_until_the_condition_or_the_timeout() {
    let s = signal::create(1);
    let started = Instant::now();
    // Times out: returns the current value after roughly the hint.
    assert_eq!(signal::wait(s, CONDITION_EQ, 0, 30_000_000), 1);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(29), "{waited:?}");
    // Another thread completes it: the waiter wakes promptly (futex, not a poll slice).
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        signal::complete(s);
    });
    let started = Instant::now();
    assert_eq!(signal::wait(s, CONDITION_LT, 1, u64::MAX), 0);
    assert!(
        started.elapsed() < Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );
    setter.join().unwrap();
    assert!(signal::satisfied(CONDITION_NE, 0, 1));
    assert!(signal::satisfied(CONDITION_GTE, 3, 3));
    assert!(!signal::satisfied(CONDITION_LT, 3, 3));
    assert!(!signal::satisfied(99, 3, 3));

    let a = signal::create(1);
    let b = signal::create(1);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        signal::store(b, 0);
    });
    let (index, value) =
        signal::wait_any(&[a, b], &[CONDITION_EQ, CONDITION_EQ], &[0, 0], u64::MAX);
    assert_eq!((index, value), (1, 0));
    setter.join().unwrap();
    assert_eq!(
        signal::wait_any(&[a], &[CONDITION_EQ], &[0], 1_000_000).0,
        u32::MAX
    );
}

static HANDLER_CALLS: Mutex<Vec<(usize, i64)>> = Mutex::new(Vec::new());

unsafe extern "C" fn once_handler(value: i64, arg: *mut c_void) -> bool {
    HANDLER_CALLS.lock().unwrap().push((arg as usize, value));
    false
}

unsafe extern "C" fn twice_handler(value: i64, arg: *mut c_void) -> bool {
    let mut calls = HANDLER_CALLS.lock().unwrap();
    calls.push((arg as usize, value));
    calls.iter().filter(|(a, _)| *a == arg as usize).count() < 2
}

fn calls_of(arg: usize) -> Vec<i64> {
    HANDLER_CALLS
        .lock()
        .unwrap()
        .iter()
        .filter(|(a, _)| *a == arg)
        .map(|(_, v)| *v)
        .collect()
}

fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn async_handlers_run_when_the_condition_holds() {
    let s = signal::create(1);
    signal::add_handler(s, CONDITION_LT, 1, once_handler, 101 as *mut c_void);
    std::thread::sleep(Duration::from_millis(30));
    assert!(calls_of(101).is_empty(), "called before the condition held");
    signal::store(s, 0);
    eventually("the one-shot handler", || calls_of(101) == vec![0]);
    signal::store(s, -1);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        calls_of(101),
        vec![0],
        "a handler returning false must be removed"
    );

    // A handler returning true stays registered and is called again.
    let t = signal::create(0);
    signal::add_handler(t, CONDITION_EQ, 0, twice_handler, 202 as *mut c_void);
    eventually("the repeating handler", || calls_of(202).len() == 2);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(calls_of(202).len(), 2);
}

#[test]
fn multi_signal_waiters_watch_only_their_signals() {
    let watchers = |s: Signal| {
        signal::object(s)
            .expect("live")
            .watchers
            .load(Ordering::SeqCst)
    };
    let s = signal::create(1);
    assert_eq!(watchers(s), 0, "a fresh signal is watched by nobody");
    {
        let _w = signal::Watch::new(std::slice::from_ref(&s));
        assert_eq!(watchers(s), 1);
    }
    assert_eq!(watchers(s), 0, "a finished wait stops watching");

    // wait_any watches while it waits and is woken by its signal's change.
    let t = signal::create(1);
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| signal::wait_any(&[t], &[CONDITION_LT], &[1], 5_000_000_000));
        eventually("wait_any to watch its signal", || watchers(t) == 1);
        signal::store(t, 0);
        assert_eq!(waiter.join().expect("no panic"), (0, 0));
    });
    assert_eq!(watchers(t), 0);

    // An asynchronous handler keeps its signal watched until it is removed.
    signal::add_handler(s, CONDITION_LT, 1, once_handler, 303 as *mut c_void);
    assert_eq!(watchers(s), 1);
    signal::store(s, 0);
    eventually("the handler to run", || calls_of(303) == vec![0]);
    eventually("the finished handler to stop watching", || watchers(s) == 0);
}

// ---- intercept handler chaining ----

static CHAIN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn packet(tag: u8) -> RawPacket {
    let mut p = RawPacket([0; 64]);
    p.0[0] = PACKET_TYPE_KERNEL_DISPATCH;
    p.0[63] = tag;
    p
}

fn tags(packets: *const c_void, count: u64) -> Vec<u8> {
    // SAFETY: `count` 64-byte packets.
    (0..count as usize)
        .map(|i| unsafe { packets.cast::<RawPacket>().add(i).read_unaligned() }.0[63])
        .collect()
}

/// Lower handler: forwards each packet it gets, one writer call per packet.
unsafe extern "C" fn lower(
    packets: *const c_void,
    count: u64,
    index: u64,
    data: *mut c_void,
    writer: intercept::WriterFn,
) {
    CHAIN.lock().unwrap().push(format!(
        "lower{} idx={index} {:?}",
        data as usize,
        tags(packets, count)
    ));
    for i in 0..count as usize {
        // SAFETY: forwarding packets of the call.
        unsafe { writer(packets.cast::<RawPacket>().add(i).cast(), 1) };
    }
}

/// Upper handler: drops tag 0, otherwise writes a marker packet (tag 100+t) before the packet.
unsafe extern "C" fn upper(
    packets: *const c_void,
    count: u64,
    index: u64,
    _data: *mut c_void,
    writer: intercept::WriterFn,
) {
    let t = tags(packets, count);
    CHAIN
        .lock()
        .unwrap()
        .push(format!("upper idx={index} {t:?}"));
    if t == [0] {
        return;
    }
    let out = [packet(100 + t[0]), packet(t[0])];
    // SAFETY: two valid packets.
    unsafe { writer(out.as_ptr().cast(), 2) };
}

#[test]
fn intercept_handlers_chain_from_the_last_registered() {
    let sink_log: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    let sink = |packets: *const RawPacket, count: u64| {
        sink_log.lock().unwrap().extend(tags(packets.cast(), count));
    };
    let handlers: Vec<(intercept::HandlerFn, usize)> = vec![(lower, 7), (upper, 0)];
    intercept::pass(&handlers, &packet(5), 42, &sink);
    intercept::pass(&handlers, &packet(0), 43, &sink);
    let chain = CHAIN.lock().unwrap().clone();
    assert_eq!(
        chain,
        vec![
            "upper idx=42 [5]".to_owned(),
            "lower7 idx=42 [105, 5]".to_owned(),
            "upper idx=43 [0]".to_owned(),
        ]
    );
    assert_eq!(
        *sink_log.lock().unwrap(),
        vec![105, 5],
        "the dropped packet must not arrive"
    );
    // No handler: straight through.
    intercept::pass(&[], &packet(9), 44, &sink);
    assert_eq!(*sink_log.lock().unwrap(), vec![105, 5, 9]);
}

/// Whether the process can read `bytes` bytes at `address`, asked without touching them: a
/// pipe write from unreadable memory fails with EFAULT instead of faulting.
fn host_readable(address: usize, bytes: usize) -> bool {
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the kernel reads `bytes` bytes at `address` and reports EFAULT for memory the
    // process cannot read.
    let written = unsafe { libc::write(fds[1], address as *const c_void, bytes) };
    let error = std::io::Error::last_os_error().raw_os_error();
    // SAFETY: our own descriptors.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    match written {
        -1 => {
            assert_eq!(error, Some(libc::EFAULT));
            false
        }
        n => {
            assert_eq!(n, bytes as isize);
            true
        }
    }
}

#[test]
fn device_space_hands_out_unreadable_aligned_slots_until_full() {
    use crate::loader::DeviceSpace;
    let space = DeviceSpace::reserve(4096).expect("mmap PROT_NONE");
    let slots: Vec<u64> = std::iter::from_fn(|| space.place()).collect();
    assert_eq!(slots.len(), 4096 / 64, "every 64-byte slot once, then none");
    for pair in slots.windows(2) {
        assert_eq!(pair[1] - pair[0], 64);
    }
    for &slot in &slots {
        assert!(slot.is_multiple_of(64) && space.contains(slot));
        assert!(!host_readable(slot as usize, 64), "{slot:#x} is readable");
    }
    assert!(!space.contains(slots[63] + 64));
    let here = 0u64;
    assert!(host_readable(&raw const here as usize, 8));
}

#[test]
fn loader_table_follows_the_1_03_member_order() {
    use crate::loader::{
        LOADER_TABLE, LoaderTable, hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
        hsa_ven_amd_loader_loaded_code_object_get_info, hsa_ven_amd_loader_query_executable,
        hsa_ven_amd_loader_query_host_address,
    };
    assert_eq!(size_of::<LoaderTable>(), 7 * 8);
    assert_eq!(offset_of!(LoaderTable, query_host_address), 0);
    assert_eq!(offset_of!(LoaderTable, query_executable), 16);
    assert_eq!(
        offset_of!(LoaderTable, executable_iterate_loaded_code_objects),
        24
    );
    assert_eq!(offset_of!(LoaderTable, loaded_code_object_get_info), 32);
    assert_eq!(offset_of!(LoaderTable, iterate_executables), 48);
    let implemented = [
        (
            LOADER_TABLE.query_host_address as usize,
            hsa_ven_amd_loader_query_host_address as *const () as usize,
        ),
        (
            LOADER_TABLE.query_executable as usize,
            hsa_ven_amd_loader_query_executable as *const () as usize,
        ),
        (
            LOADER_TABLE.executable_iterate_loaded_code_objects as usize,
            hsa_ven_amd_loader_executable_iterate_loaded_code_objects as *const () as usize,
        ),
        (
            LOADER_TABLE.loaded_code_object_get_info as usize,
            hsa_ven_amd_loader_loaded_code_object_get_info as *const () as usize,
        ),
    ];
    for (member, function) in implemented {
        assert_eq!(member, function);
    }
    // No stub hides behind an implemented member, and the stubs are distinct.
    let stubs = [
        LOADER_TABLE.query_segment_descriptors as usize,
        LOADER_TABLE.code_object_reader_create_from_file_with_offset_size as usize,
        LOADER_TABLE.iterate_executables as usize,
    ];
    let distinct: std::collections::BTreeSet<usize> = stubs.iter().copied().collect();
    assert_eq!(distinct.len(), stubs.len());
    assert!(
        implemented
            .iter()
            .all(|(member, _)| !distinct.contains(member))
    );
    // The core table's slot is implemented by the loader module.
    assert!(CoreApiTable::IMPLEMENTED[CoreSlot::hsa_system_get_major_extension_table as usize]);
}

#[test]
fn loaded_code_object_attributes_keep_rocrs_numbering() {
    use crate::loader::{info, kind, storage};
    let numbered = [
        info::EXECUTABLE,
        info::KIND,
        info::AGENT,
        info::CODE_OBJECT_STORAGE_TYPE,
        info::CODE_OBJECT_STORAGE_MEMORY_BASE,
        info::CODE_OBJECT_STORAGE_MEMORY_SIZE,
        info::CODE_OBJECT_STORAGE_FILE,
        info::LOAD_DELTA,
        info::LOAD_BASE,
        info::LOAD_SIZE,
        info::URI_LENGTH,
        info::URI,
    ];
    assert_eq!(numbered.to_vec(), (0..12).collect::<Vec<u32>>());
    assert_eq!((kind::NONE, kind::PROGRAM, kind::AGENT), (0, 1, 2));
    assert_eq!((storage::NONE, storage::FILE, storage::MEMORY), (0, 1, 2));
}

#[test]
fn images_put_version_2_descriptors_on_64_byte_boundaries() {
    use crate::executable::image_phase;
    use wslsim_codeobj::{CodeObjectBuilder, KernelBuilder};
    let builder = (0..3).fold(CodeObjectBuilder::new(), |b, i| {
        b.kernel(
            KernelBuilder::new(&format!("k{i}"))
                .costs(10 + i, 2 * i, 0)
                .build()
                .unwrap(),
        )
    });
    let bytes = builder.to_bytes();
    let kernels = wslsim_codeobj::parse(&bytes).unwrap();
    let phase = image_phase(&kernels);
    assert!(phase < 64);
    for (i, kernel) in kernels.iter().enumerate() {
        let code = kernel.code_range().unwrap();
        let descriptor_at = code.start as i64 - kernel.descriptor.kernel_code_entry_byte_offset();
        assert_eq!(
            descriptor_at,
            (wslsim_codeobj::HEADER_SIZE + i * wslsim_codeobj::RECORD_SIZE + 256) as i64
        );
        assert_eq!((phase + descriptor_at as u64) % 64, 0, "kernel {i}");
        assert!(code.end <= bytes.len() as u64);
    }
    // A version-1 code object (no code) has no phase.
    let mut v1 = bytes[..wslsim_codeobj::HEADER_SIZE + 3 * wslsim_codeobj::RECORD_SIZE].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let v1_kernels = wslsim_codeobj::parse(&v1).unwrap();
    assert!(v1_kernels.iter().all(|k| k.code_range().is_none()));
    assert_eq!(image_phase(&v1_kernels), 0);
}

#[test]
fn device_ranges_start_at_their_phase_after_a_page_and_keep_slots_aligned() {
    use crate::loader::DeviceSpace;
    let space = DeviceSpace::reserve(4 * 4096).expect("mmap PROT_NONE");
    let slot = space.place().unwrap();
    let image = space.place_range(1000, 48).unwrap();
    assert_eq!(
        image % 4096,
        48,
        "after the next page boundary, at the phase"
    );
    assert!(image > slot && space.contains(image) && space.contains(image + 999));
    assert!(!host_readable(image as usize, 64));
    let next = space.place().unwrap();
    assert!(next.is_multiple_of(64) && next >= image + 1000);
    assert!(
        space.place_range(4 * 4096, 0).is_none(),
        "larger than what is left"
    );
}

#[test]
fn fault_knobs_parse_and_select_calls() {
    let parse = |text: &str| {
        wslsim_scenario::Scenario::from_toml_str(text)
            .unwrap()
            .faults
    };
    let none = parse("");
    assert!(!none.device_code_objects && none.loader_extension);
    assert!((1..100).all(|n| !none.async_handler_fails(n)));
    let nth = parse("[faults]\nasync_handler_fail_calls = [2, 5]\n");
    let failing: Vec<u64> = (1..8).filter(|&n| nth.async_handler_fails(n)).collect();
    assert_eq!(failing, [2, 5]);
    let from = parse("[faults]\nasync_handler_fail_from = 3\n");
    let failing: Vec<u64> = (1..6).filter(|&n| from.async_handler_fails(n)).collect();
    assert_eq!(failing, [3, 4, 5]);
    let all = parse("[faults]\nasync_handler_fail_from = 1\ndevice_code_objects = true\n");
    assert!(all.async_handler_fails(1) && all.device_code_objects);
    assert!(wslsim_scenario::Scenario::from_toml_str("[faults]\nasync = 1\n").is_err());
}
