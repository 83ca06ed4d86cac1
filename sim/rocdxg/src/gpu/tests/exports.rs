//! The GPU exports called in-process (the real `.so` is exercised by tests/dlopen.rs).

use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use wslsim_scenario::{Counters, Scenario};

use super::builder::{self, Block, Pm4, counters, pmc_read, pmc_start, pmc_stop};
use super::clean;
use crate::ffi::HsaClockCounters;
use crate::gpu::NodeGpu;
use crate::gpu::counters::{Geometry, Session, grbm, sq};
use crate::gpu::ffi::{
    WslsimDispatch, WslsimTiming, wslsim_gpu_copy, wslsim_gpu_dispatch, wslsim_gpu_dispatch_scaled,
    wslsim_gpu_pm4, wslsim_gpu_ticks,
};
use crate::gpu::pm4::{HostMemory, opcode, packet3};
use crate::gpu::{parse_seed, set_vendor_packet_for_tests, vendor_packet_honoured};
use crate::kmt::hsaKmtGetClockCounters;
use crate::status;
use crate::tests::install;

const OFFSET_NS: u64 = 1_000_000_000_000;

fn clock_counters(node: u32) -> (i32, HsaClockCounters) {
    let mut counters = HsaClockCounters::default();
    // SAFETY: a valid HsaClockCounters to write.
    let status = unsafe { hsaKmtGetClockCounters(node, &mut counters) };
    (status, counters)
}

fn ticks(node: u32) -> u64 {
    // SAFETY: no preconditions.
    unsafe { wslsim_gpu_ticks(node) }
}

fn monotonic() -> u64 {
    crate::gpu::clock::monotonic_ns()
}

#[test]
fn clock_counters_sample_gpu_and_host_together() {
    let _guard = install(Scenario::default());
    let before = monotonic();
    let (status, counters) = clock_counters(1);
    let after = monotonic();
    assert_eq!(status, status::SUCCESS);
    assert!((before..=after).contains(&counters.cpu_clock_counter));
    assert_eq!(counters.system_clock_counter, counters.cpu_clock_counter);
    assert_eq!(counters.system_clock_frequency_hz, 1_000_000_000);
    // The documented rule: (m + offset − ceil(m × 2.2 ppm)) / 10.
    let m = counters.cpu_clock_counter;
    assert_eq!(
        counters.gpu_clock_counter,
        (m + OFFSET_NS - (m * 2_200).div_ceil(1_000_000_000)) / 10
    );
    // The CPU node has no GPU clock; a node past the last fails; so does a null pointer.
    let (status, cpu) = clock_counters(0);
    assert_eq!((status, cpu.gpu_clock_counter), (status::SUCCESS, 0));
    assert!(cpu.cpu_clock_counter >= counters.cpu_clock_counter);
    assert_eq!(clock_counters(2).0, status::INVALID_NODE_UNIT);
    // SAFETY: a null pointer is a documented input.
    let null = unsafe { hsaKmtGetClockCounters(1, std::ptr::null_mut()) };
    assert_eq!(null, status::INVALID_PARAMETER);
    // wslsim_gpu_ticks agrees and moves forward.
    let first = ticks(1);
    assert!(first >= counters.gpu_clock_counter);
    std::thread::sleep(Duration::from_millis(1));
    assert!(ticks(1) >= first + 100_000);
    assert_eq!(ticks(0), 0);
    assert_eq!(ticks(9), 0);
}

#[test]
fn the_clock_follows_the_scenario() {
    let mut scenario = Scenario::default();
    scenario.gpu.clock_offset_ns = 0;
    scenario.nodes[0].wallclock_khz = 25_000;
    let _guard = install(scenario);
    let (_, counters) = clock_counters(1);
    let m = counters.cpu_clock_counter;
    assert_eq!(
        counters.gpu_clock_counter,
        (m - (m * 2_200).div_ceil(1_000_000_000)) / 40
    );
}

unsafe extern "C-unwind" fn count_calls(ctx: *mut c_void) {
    // SAFETY: the tests pass a live AtomicU32 as ctx.
    let calls = unsafe { &*ctx.cast::<AtomicU32>() };
    calls.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C-unwind" fn sleep_ms(ctx: *mut c_void) {
    std::thread::sleep(Duration::from_millis(ctx as u64));
}

unsafe extern "C-unwind" fn explode(_ctx: *mut c_void) {
    panic!("kernel implementation bug");
}

fn descriptor(items: u32, run: Option<crate::gpu::ffi::RunFn>, ctx: *mut c_void) -> WslsimDispatch {
    WslsimDispatch {
        grid: [items, 1, 1],
        workgroup: [256, 1, 1],
        wave_size: 32,
        vgprs: 8,
        sgprs: 16,
        lds_bytes: 0,
        scratch_bytes: 0,
        valu_per_wave: 10,
        salu_per_wave: 3,
        cycles_per_wave: 0,
        run,
        ctx,
        code_address: 0,
    }
}

fn dispatch(node: u32, descriptor: &WslsimDispatch) -> (i32, WslsimTiming) {
    let mut timing = WslsimTiming::default();
    // SAFETY: valid descriptor and output; the callbacks are the ones above.
    let status = unsafe { wslsim_gpu_dispatch(node, descriptor, &mut timing) };
    (status, timing)
}

#[test]
fn a_dispatch_runs_its_kernel_inside_the_callers_interval() {
    let _guard = install(Scenario::default());
    let calls = AtomicU32::new(0);
    let ctx = (&raw const calls).cast_mut().cast::<c_void>();
    let d = descriptor(262_144, Some(count_calls), ctx);
    let before = ticks(1);
    let (status, timing) = dispatch(1, &d);
    let after = ticks(1);
    assert_eq!(status, status::SUCCESS);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(before <= timing.start_tick, "{before} {timing:?}");
    assert!(timing.end_tick <= after, "{timing:?} {after}");
    // At least the modelled 74 621 ns less its 3 % jitter (72 382 ns: 7 238 ticks).
    assert!(timing.end_tick - timing.start_tick >= 7_238, "{timing:?}");

    // Invalid descriptors run nothing.
    let invalid = [
        WslsimDispatch { wave_size: 48, ..d },
        WslsimDispatch {
            grid: [0, 1, 1],
            ..d
        },
        WslsimDispatch {
            workgroup: [256, 0, 1],
            ..d
        },
    ];
    for bad in invalid {
        assert_eq!(dispatch(1, &bad).0, status::INVALID_PARAMETER);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(dispatch(0, &d).0, status::INVALID_NODE_UNIT);
    assert_eq!(dispatch(2, &d).0, status::INVALID_NODE_UNIT);
    let mut timing = WslsimTiming::default();
    // SAFETY: null pointers are documented inputs.
    unsafe {
        assert_eq!(
            wslsim_gpu_dispatch(1, std::ptr::null(), &mut timing),
            status::INVALID_PARAMETER
        );
        assert_eq!(
            wslsim_gpu_dispatch(1, &d, std::ptr::null_mut()),
            status::INVALID_PARAMETER
        );
    }
    // A callback without `run` is fine; a panicking one is an error, and the GPU survives.
    assert_eq!(dispatch(1, &descriptor(64, None, ctx)).0, status::SUCCESS);
    assert_eq!(
        dispatch(1, &descriptor(64, Some(explode), ctx)).0,
        status::ERROR
    );
    assert_eq!(dispatch(1, &d).0, status::SUCCESS);
}

#[test]
fn dispatches_of_one_node_never_overlap() {
    let _guard = install(Scenario::default());
    let timings = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    (0..6)
                        .map(|_| dispatch(1, &descriptor(16_384, None, std::ptr::null_mut())))
                        .map(|(status, timing)| {
                            assert_eq!(status, 0);
                            timing
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut timings = timings;
    timings.sort_by_key(|t| t.start_tick);
    for pair in timings.windows(2) {
        assert!(pair[0].end_tick <= pair[1].start_tick, "{pair:?}");
    }
}

#[test]
fn copies_move_bytes_on_their_own_engine() {
    let _guard = install(Scenario::default());
    let source: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7) as u8).collect();
    let mut destination = vec![0_u8; 1 << 20];
    let mut timing = WslsimTiming::default();
    let before = ticks(1);
    // SAFETY: both buffers hold 1 MiB.
    let status = unsafe {
        wslsim_gpu_copy(
            1,
            destination.as_mut_ptr().cast(),
            source.as_ptr().cast(),
            1 << 20,
            &mut timing,
        )
    };
    let after = ticks(1);
    assert_eq!(status, status::SUCCESS);
    assert_eq!(destination, source);
    assert!(before <= timing.start_tick && timing.end_tick <= after);
    assert!(timing.end_tick - timing.start_tick >= 5_443, "{timing:?}"); // 54 429 ns
    // SAFETY: null pointers with 0 bytes, and a null output, are documented inputs.
    unsafe {
        assert_eq!(
            wslsim_gpu_copy(1, std::ptr::null_mut(), std::ptr::null(), 0, &mut timing),
            status::SUCCESS
        );
        assert_eq!(
            wslsim_gpu_copy(
                1,
                std::ptr::null_mut(),
                source.as_ptr().cast(),
                4,
                &mut timing
            ),
            status::INVALID_PARAMETER
        );
        assert_eq!(
            wslsim_gpu_copy(
                1,
                destination.as_mut_ptr().cast(),
                source.as_ptr().cast(),
                4,
                std::ptr::null_mut()
            ),
            status::INVALID_PARAMETER
        );
        assert_eq!(
            wslsim_gpu_copy(
                3,
                destination.as_mut_ptr().cast(),
                source.as_ptr().cast(),
                4,
                &mut timing
            ),
            status::INVALID_NODE_UNIT
        );
    }

    // A copy does not wait for a long dispatch: SDMA has its own timeline.
    let (kernel, copy) = std::thread::scope(|scope| {
        let long = scope.spawn(|| dispatch(1, &descriptor(64, Some(sleep_ms), 150 as *mut c_void)));
        std::thread::sleep(Duration::from_millis(30));
        let mut timing = WslsimTiming::default();
        let mut byte = 0_u8;
        // SAFETY: one byte each way.
        let status = unsafe {
            wslsim_gpu_copy(
                1,
                (&raw mut byte).cast(),
                [9_u8].as_ptr().cast(),
                1,
                &mut timing,
            )
        };
        assert_eq!((status, byte), (0, 9));
        (long.join().unwrap().1, timing)
    });
    assert!(copy.end_tick < kernel.end_tick, "{copy:?} {kernel:?}");
}

fn pm4(node: u32, buffer: &[u32]) -> (i32, String) {
    let mut err = [0x55 as c_char; 256];
    // SAFETY: `buffer` is valid; every address it names is a live test buffer; err has 256
    // bytes.
    let status = unsafe {
        wslsim_gpu_pm4(
            node,
            buffer.as_ptr(),
            buffer.len() as u32,
            err.as_mut_ptr(),
            err.len() as u32,
        )
    };
    // SAFETY: the export always NUL-terminates within err_len.
    let reason = unsafe { CStr::from_ptr(err.as_ptr()) };
    (status, reason.to_string_lossy().into_owned())
}

fn write_data(address: *mut u32, value: u32) -> Vec<u32> {
    let address = address as u64;
    vec![
        packet3(opcode::WRITE_DATA, 3),
        5 << 8,
        address as u32,
        (address >> 32) as u32,
        value,
    ]
}

#[test]
fn the_vendor_packet_gate() {
    let _guard = install(Scenario::default());
    let mut target = 0_u32;
    let buffer = write_data(&raw mut target, 0xFEED);
    set_vendor_packet_for_tests(Some(false));
    assert_eq!(pm4(1, &buffer), (0, String::new()));
    assert_eq!(target, 0, "dropped silently");
    // Dropped even when malformed or oversized, as libhsakmt never looks at it.
    assert_eq!(pm4(1, &[0]), (0, String::new()));
    set_vendor_packet_for_tests(Some(true));
    assert_eq!(pm4(1, &buffer), (0, String::new()));
    assert_eq!(target, 0xFEED);

    assert!(vendor_packet_honoured(Some("1".as_ref())));
    for value in ["0", "", "true", " 1", "1 ", "01", "yes"] {
        assert!(!vendor_packet_honoured(Some(value.as_ref())), "{value:?}");
    }
    assert!(!vendor_packet_honoured(None));
}

#[test]
fn malformed_submissions_report_a_reason() {
    let _guard = install(Scenario::default());
    set_vendor_packet_for_tests(Some(true));
    let (status, reason) = pm4(1, &[packet3(opcode::COPY_DATA, 4), 0, 0]);
    assert_eq!(status, status::INVALID_PARAMETER);
    assert_eq!(
        reason,
        "dword 0: truncated packet: COPY_DATA (opcode 0x40) needs 6 dwords, 3 left in the buffer"
    );
    let (status, reason) = pm4(2, &[0]);
    assert_eq!(
        (status, reason.as_str()),
        (5, "KMT node 2 is not a GPU node")
    );
    // SAFETY: null buffer and null err are documented inputs.
    let null = unsafe { wslsim_gpu_pm4(1, std::ptr::null(), 4, std::ptr::null_mut(), 0) };
    assert_eq!(null, status::INVALID_PARAMETER);
    // A short err buffer gets a truncated, terminated reason.
    let mut err = [0x55 as c_char; 10];
    let bad = [0x4000_0000_u32];
    // SAFETY: valid buffer and err of 10 bytes.
    let status = unsafe { wslsim_gpu_pm4(1, bad.as_ptr(), 1, err.as_mut_ptr(), 10) };
    assert_eq!(status, status::INVALID_PARAMETER);
    // SAFETY: terminated within the 10 bytes.
    let reason = unsafe { CStr::from_ptr(err.as_ptr()) };
    assert_eq!(reason.to_bytes(), b"dword 0: ");
    // Oversized.
    let mut big = Pm4::new();
    big.nop(513);
    let (status, reason) = pm4(1, &big.dwords);
    assert_eq!(status, status::INVALID_PARAMETER);
    assert_eq!(
        reason,
        "PM4 command buffer overflow: 513 dwords exceed the 512-dword frame"
    );
}

#[test]
fn a_wait_that_never_holds_times_out() {
    let mut scenario = Scenario::default();
    scenario.gpu.wait_timeout_ms = 20;
    let _guard = install(scenario);
    set_vendor_packet_for_tests(Some(true));
    let flag = 0_u32;
    let mut pm4_buffer = Pm4::new();
    pm4_buffer.wait_reg_mem(true, &raw const flag as u64, true, 1, 1);
    let (status, reason) = pm4(1, &pm4_buffer.dwords);
    assert_eq!(status, status::WAIT_TIMEOUT);
    assert!(
        reason.starts_with("WAIT_REG_MEM on memory at 0x"),
        "{reason}"
    );
    assert!(reason.contains("timed out after 20 ms"), "{reason}");
}

#[test]
fn aqlprofile_four_counters_through_the_exports() {
    let scenario = Scenario {
        counters: clean(),
        ..Scenario::default()
    };
    let _guard = install(scenario);
    set_vendor_packet_for_tests(Some(true));
    let geometry = Geometry::radeon_890m();
    let counters = counters(&[
        (Block::Grbm, grbm::COUNT),
        (Block::Grbm, grbm::GUI_ACTIVE),
        (Block::Sq, sq::WAVES),
        (Block::Sq, sq::INSTS_VALU),
    ]);
    let mut output = vec![0_u64; builder::read_slots(&counters, &geometry)];
    let read = pmc_read(&counters, &geometry, output.as_mut_ptr() as u64);
    let d = descriptor(262_144, None, std::ptr::null_mut());
    for _ in 0..3 {
        output.iter_mut().for_each(|slot| *slot = 0);
        assert_eq!(pm4(1, &pmc_start(&counters).dwords), (0, String::new()));
        assert_eq!(dispatch(1, &d).0, 0);
        assert_eq!(pm4(1, &read.dwords), (0, String::new()));
        assert_eq!(pm4(1, &pmc_stop().dwords), (0, String::new()));
        let values = builder::per_counter(&counters, &geometry, &output);
        // 216 401 dispatch cycles + the read submission's 2 900 (1 µs at 2.9 GHz).
        assert_eq!(values, [219_301, 216_401, 8_192, 81_920]);
        // Each WGP reads its share.
        assert!(output[2..10].iter().all(|&v| v == 1_024), "{output:?}");
    }
    // A dispatch outside the window is not counted.
    assert_eq!(dispatch(1, &d).0, 0);
    assert_eq!(pm4(1, &read.dwords), (0, String::new()));
    assert_eq!(
        builder::per_counter(&counters, &geometry, &output)[2],
        8_192
    );
}

#[test]
fn seeds_parse_in_decimal_and_hex() {
    assert_eq!(parse_seed("42"), Some(42));
    assert_eq!(parse_seed(" 0x2A "), Some(42));
    assert_eq!(parse_seed("0XFFFFFFFFFFFFFFFF"), Some(u64::MAX));
    assert_eq!(parse_seed("-1"), None);
    assert_eq!(parse_seed("seed"), None);
    assert_eq!(parse_seed(""), None);
}

#[test]
fn a_session_with_a_grbm_burst_reads_zero_grbm_from_its_first_dispatch() {
    // Seed 32 is the first seed whose default session has a burst (seed 0 has none).
    let has_burst = |seed| {
        Session::new(&Counters::default(), seed, 1)
            .burst_ns()
            .is_some()
    };
    assert!(
        (0..32).all(|seed| !has_burst(seed)),
        "seeds 0..=31 have no burst"
    );
    assert!(has_burst(32));
    // The node is built with seed 32 directly, so WSLSIM_SEED cannot override it.
    let scenario = Scenario {
        counters: Counters {
            grbm_zero_session_probability: Counters::default().grbm_zero_session_probability,
            ..clean()
        },
        ..Scenario::default()
    };
    let node = NodeGpu::new(&scenario, 1, 32).unwrap();
    let geometry = Geometry::radeon_890m();
    let counters = counters(&[(Block::Grbm, grbm::GUI_ACTIVE), (Block::Sq, sq::WAVES)]);
    let mut output = vec![0_u64; builder::read_slots(&counters, &geometry)];
    let read = pmc_read(&counters, &geometry, output.as_mut_ptr() as u64);
    let start = pmc_start(&counters);
    let kernel = descriptor(262_144, None, std::ptr::null_mut()).kernel();
    let submit = |buffer: &[u32]| {
        // SAFETY: the only address the buffers name is `output`, alive and large enough for
        // every slot the read writes.
        let mut memory = unsafe { HostMemory::new() };
        node.pm4(buffer, &mut memory)
    };
    assert_eq!(submit(&start.dwords), Ok(()));
    let dispatched = node.dispatch(&kernel, || Ok(())).unwrap();
    assert_eq!(submit(&read.dwords), Ok(()));
    assert_eq!(
        builder::per_counter(&counters, &geometry, &output),
        [0, 8_192]
    );
    let burst = node
        .with_registers(|r| r.perf.session().burst_ns())
        .unwrap();
    assert!((9_000_000..=291_000_000).contains(&burst), "{burst}");
    // Once the burst has passed (in GPU time since the first counted dispatch), GRBM counts.
    let resume = dispatched.timing.start_tick + burst.div_ceil(10);
    while node.clock().now() <= resume {
        std::thread::sleep(Duration::from_millis(5));
    }
    output.iter_mut().for_each(|slot| *slot = 0);
    assert_eq!(submit(&start.dwords), Ok(()));
    node.dispatch(&kernel, || Ok(())).unwrap();
    assert_eq!(submit(&read.dwords), Ok(()));
    assert_eq!(
        builder::per_counter(&counters, &geometry, &output),
        [216_401, 8_192]
    );
}

#[test]
fn a_scaled_dispatch_takes_its_factor_of_the_modelled_time() {
    let _guard = install(Scenario::default());
    let d = descriptor(262_144, None, std::ptr::null_mut());
    let mut timing = WslsimTiming::default();
    // SAFETY: valid descriptor and output, no callback.
    let status = unsafe { wslsim_gpu_dispatch_scaled(1, &d, 3.0, &mut timing) };
    assert_eq!(status, status::SUCCESS);
    // Three times the modelled 74 621 ns less the 3 % jitter: at least 217 147 ns.
    assert!(timing.end_tick - timing.start_tick >= 21_714, "{timing:?}");
    // A factor that is not a positive number is 1.
    for bad in [0.0, -2.0, f64::NAN] {
        // SAFETY: as above.
        let status = unsafe { wslsim_gpu_dispatch_scaled(1, &d, bad, &mut timing) };
        assert_eq!(status, status::SUCCESS);
        let ticks = timing.end_tick - timing.start_tick;
        assert!(ticks >= 7_238, "{bad}: {timing:?}");
    }
}
