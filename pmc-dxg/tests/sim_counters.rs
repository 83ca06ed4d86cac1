//! The built buffers executed by the simulated GPU: the real `librocdxg.so` of this workspace,
//! loaded with `dlopen`, driven through its simulator-internal exports `wslsim_gpu_pm4` and
//! `wslsim_gpu_dispatch` (docs/SIMULATOR.md, "The GPU exports").
//!
//! Each PM4-IB packet's INDIRECT_BUFFER (its dwords 1–4) is submitted as it stands, so the
//! simulated command processor follows the packet's address into the command memory this test
//! owns and writes the counts into its output buffer: start, a dispatch, read, stop (the SDK's
//! order), then [`decode`]. The library is built by `cargo xtask build` (or
//! `cargo build -p sim-rocdxg`). Every case runs in a child process of this test binary, with
//! its own scenario file, `WSLKMT_VENDOR_PACKET=1` and seed, because the thunk reads them once.

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, plan};
use pmc_dxg::pm4::{CounterValues, PassBuffers, build_pass, decode};
use pmc_dxg::{BaseEvent, Block};
use wslsim_scenario::harness;

mod common;
use common::{counter as event, radeon_890m};

// ------------------------------------------------------------------ the simulated library

/// `wslsim_dispatch_t` (72 bytes) as docs/SIMULATOR.md lays it out.
#[repr(C)]
struct Dispatch {
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
    run: Option<unsafe extern "C" fn(*mut c_void)>,
    ctx: *mut c_void,
    /// The kernel's first instruction (0: unknown; only thread trace uses it).
    code_address: u64,
}

const _: () = assert!(size_of::<Dispatch>() == 72);

type DispatchFn = unsafe extern "C" fn(u32, *const Dispatch, *mut [u64; 2]) -> i32;
type Pm4Fn = unsafe extern "C" fn(u32, *const u32, u32, *mut c_char, u32) -> i32;

struct Gpu {
    dispatch: DispatchFn,
    pm4: Pm4Fn,
    _library: harness::Library,
}

/// target/<profile>/librocdxg.so (or the copy in deps/), refused if older than its sources.
fn library_path() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = ["../sim/rocdxg/src", "../sim/scenario/src"].map(|s| manifest.join(s));
    harness::locate(&harness::Target {
        library: "librocdxg.so",
        build_command: "cargo build -p sim-rocdxg",
        sources: &sources,
    })
    .unwrap_or_else(|error| panic!("{error}"))
}

impl Gpu {
    fn load() -> Gpu {
        let path = library_path();
        // Opening the simulated thunk runs its initialisers, which only read the scenario named
        // by the environment.
        let library =
            harness::Library::open(&path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: the types are the exports' C signatures (docs/SIMULATOR.md).
        unsafe {
            Gpu {
                dispatch: library.function("wslsim_gpu_dispatch").unwrap(),
                pm4: library.function("wslsim_gpu_pm4").unwrap(),
                _library: library,
            }
        }
    }

    /// Submits `dwords` to node 1; the status and the reason of a failure.
    fn submit(&self, dwords: &[u32]) -> (i32, String) {
        let mut err = [0 as c_char; 256];
        // SAFETY: `dwords` is valid for its length; every address it (and any IB it chains)
        // names is command or output memory the caller keeps alive; err holds 256 bytes.
        let status = unsafe {
            (self.pm4)(
                1,
                dwords.as_ptr(),
                dwords.len() as u32,
                err.as_mut_ptr(),
                err.len() as u32,
            )
        };
        // SAFETY: the export NUL-terminates err.
        let reason = unsafe { CStr::from_ptr(err.as_ptr()) };
        (status, reason.to_string_lossy().into_owned())
    }

    /// The PM4-IB packet's INDIRECT_BUFFER (dwords 1–4), submitted as the queue would.
    fn submit_packet(&self, packet: &[u8; 64]) -> (i32, String) {
        let ib: Vec<u32> = (1..5)
            .map(|i| u32::from_le_bytes(packet[4 * i..4 * i + 4].try_into().unwrap()))
            .collect();
        self.submit(&ib)
    }

    /// One wave32 dispatch of `items` work-items in workgroups of 256.
    fn dispatch(&self, items: u32, valu: u32, salu: u32) {
        let descriptor = Dispatch {
            grid: [items, 1, 1],
            workgroup: [256, 1, 1],
            wave_size: 32,
            vgprs: 8,
            sgprs: 16,
            lds_bytes: 0,
            scratch_bytes: 0,
            valu_per_wave: valu,
            salu_per_wave: salu,
            cycles_per_wave: 0,
            run: None,
            ctx: std::ptr::null_mut(),
            code_address: 0,
        };
        let mut timing = [0; 2];
        // SAFETY: a valid descriptor without a callback and a writable timing.
        let status = unsafe { (self.dispatch)(1, &descriptor, &mut timing) };
        assert_eq!(status, 0, "wslsim_gpu_dispatch");
    }
}

/// 256-byte aligned memory the simulated command processor reads (the command memory).
#[repr(C, align(256))]
#[derive(Clone, Copy)]
struct Chunk([u8; 256]);

struct Memory {
    command: Vec<Chunk>,
    output: Vec<u64>,
}

impl Memory {
    fn new() -> Memory {
        Memory {
            command: vec![Chunk([0; 256]); 64],
            output: vec![0; 1024],
        }
    }

    fn base(&mut self) -> u64 {
        self.command.as_mut_ptr() as u64
    }

    fn out(&mut self) -> u64 {
        self.output.as_mut_ptr() as u64
    }

    /// Builds `events` for the 890M into this memory (output zeroed, as it must be).
    fn build(&mut self, events: &[(String, BaseEvent)]) -> PassBuffers {
        let buffers = build_pass(&radeon_890m(), events, self.base(), self.out()).unwrap();
        let image = buffers.command_memory();
        assert!(image.len() <= 256 * self.command.len() && buffers.output_bytes <= 8 * 1024);
        for (chunk, bytes) in self.command.iter_mut().zip(image.chunks(256)) {
            chunk.0[..bytes.len()].copy_from_slice(bytes);
        }
        self.output.fill(0);
        buffers
    }

    fn output_bytes(&self) -> Vec<u8> {
        self.output.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

/// Start, one dispatch, read, stop through the packets of `buffers`; the decoded values.
fn profile(
    gpu: &Gpu,
    memory: &Memory,
    buffers: &PassBuffers,
    kernel: (u32, u32, u32),
) -> Vec<CounterValues> {
    let packets = buffers.packets();
    assert_eq!(
        gpu.submit_packet(&packets.start),
        (0, String::new()),
        "start"
    );
    gpu.dispatch(kernel.0, kernel.1, kernel.2);
    assert_eq!(gpu.submit_packet(&packets.read), (0, String::new()), "read");
    assert_eq!(gpu.submit_packet(&packets.stop), (0, String::new()), "stop");
    decode(buffers, &memory.output_bytes()).unwrap()
}

// --------------------------------------------------------------------------------- cases

const CLEAN: &str = "[counters]\ncontamination_per_ms = 0\ngrbm_zero_session_probability = 0\n\
                     sq_zero_probability = 0\n";
const CHILD_ENV: &str = "PMC_DXG_SIM_CASE";

/// Runs `body` in a child process of this test binary (the test `name`, alone) with the
/// scenario `scenario`, the vendor-packet gate open and `WSLSIM_SEED`; returns what the child
/// printed from each `VALUES ` on (libtest prints a test's output after its name).
fn in_child(name: &str, scenario: &str, seed: u64, body: impl FnOnce()) -> Vec<String> {
    if std::env::var(CHILD_ENV).as_deref() == Ok(name) {
        body();
        return Vec::new();
    }
    let dir = std::env::temp_dir().join(format!("pmc-dxg-sim-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .env("WSLSIM_SCENARIO", &file)
        .env("WSLKMT_VENDOR_PACKET", "1")
        .env("WSLSIM_SEED", seed.to_string())
        .env_remove("WSLSIM_CALL_LOG")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "case {name} failed in its child:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter_map(|line| line.find("VALUES ").map(|at| line[at..].to_owned()))
        .collect()
}

/// Runs `body` for the test `name` in its child, on the built-in machine without any of the
/// WSL2 pitfalls (no contamination, no zero read-backs).
fn on_clean_gpu(name: &str, body: impl FnOnce(&Gpu, &mut Memory)) {
    in_child(name, CLEAN, 0, || body(&Gpu::load(), &mut Memory::new()));
}

/// The reference kernel: 262 144 work-items, wave32, 10 VALU and 3 SALU per wave.
const KERNEL: (u32, u32, u32) = (262_144, 10, 3);
/// Its modelled truth on the 890M (docs: 8 192 waves, 400 cycles each over 16 CUs at
/// 2.9 GHz; 4 µs + 70.621 µs = 216 401 cycles).
const WAVES: u64 = 8_192;
const SHADER_CYCLES: u64 = 8_192 * 400 / 16;
const DISPATCH_CYCLES: u64 = 216_401;
/// The read's own submission (1 µs at 2.9 GHz) counts too: it begins while counting.
const READ_CYCLES: u64 = 2_900;

fn values<'a>(decoded: &'a [CounterValues], name: &str) -> &'a [u64] {
    &decoded.iter().find(|c| c.name == name).unwrap().values
}

#[test]
fn sq_waves_counts_the_waves_of_the_dispatch() {
    on_clean_gpu(
        "sq_waves_counts_the_waves_of_the_dispatch",
        |gpu, memory| {
            let buffers = memory.build(&[event(Block::Sq, "SQ_WAVES", 4)]);
            let decoded = profile(gpu, memory, &buffers, KERNEL);
            // Split evenly over the 8 WGPs.
            assert_eq!(values(&decoded, "SQ_WAVES"), [WAVES / 8; 8]);
            // Counting is stopped: a later dispatch adds nothing to a new read.
            gpu.dispatch(KERNEL.0, KERNEL.1, KERNEL.2);
            memory.output.fill(0);
            assert_eq!(gpu.submit_packet(&buffers.packets().read).0, 0);
            let again = decode(&buffers, &memory.output_bytes()).unwrap();
            assert_eq!(values(&again, "SQ_WAVES"), [WAVES / 8; 8]);
        },
    );
}

#[test]
fn four_counter_pass_reads_the_modelled_counts() {
    on_clean_gpu(
        "four_counter_pass_reads_the_modelled_counts",
        |gpu, memory| {
            let buffers = memory.build(&[
                event(Block::Sq, "SQ_WAVES", 4),
                event(Block::Sq, "SQ_BUSY_CYCLES", 3),
                event(Block::Grbm, "GRBM_COUNT", 0),
                event(Block::Grbm, "GRBM_GUI_ACTIVE", 2),
            ]);
            assert_eq!(buffers.output_bytes, 152);
            for round in 0..3 {
                let decoded = profile(gpu, memory, &buffers, KERNEL);
                assert_eq!(
                    values(&decoded, "SQ_WAVES"),
                    [WAVES / 8; 8],
                    "round {round}"
                );
                // Every SQ instance counts the busy time itself.
                assert_eq!(values(&decoded, "SQ_BUSY_CYCLES"), [SHADER_CYCLES; 8]);
                assert_eq!(
                    values(&decoded, "GRBM_COUNT"),
                    [DISPATCH_CYCLES + READ_CYCLES]
                );
                assert_eq!(values(&decoded, "GRBM_GUI_ACTIVE"), [DISPATCH_CYCLES]);
            }
        },
    );
}

#[test]
fn instruction_pass_reads_the_modelled_counts() {
    on_clean_gpu(
        "instruction_pass_reads_the_modelled_counts",
        |gpu, memory| {
            let buffers = memory.build(&[
                event(Block::Sq, "SQ_INSTS_VALU", 62),
                event(Block::Sq, "SQ_INSTS_SALU", 58),
                event(Block::Sq, "SQ_WAVE_CYCLES", 24),
                event(Block::Grbm, "GRBM_COUNT", 0),
            ]);
            let decoded = profile(gpu, memory, &buffers, KERNEL);
            let sum = |name| values(&decoded, name).iter().sum::<u64>();
            assert_eq!(sum("SQ_INSTS_VALU"), WAVES * 10);
            assert_eq!(sum("SQ_INSTS_SALU"), WAVES * 3);
            assert_eq!(sum("SQ_WAVE_CYCLES"), WAVES * 400);
            assert_eq!(values(&decoded, "SQ_WAVE_CYCLES"), [WAVES * 400 / 8; 8]);
            assert_eq!(
                values(&decoded, "GRBM_COUNT"),
                [DISPATCH_CYCLES + READ_CYCLES]
            );
        },
    );
}

#[test]
fn the_read_leaves_the_upper_half_of_sq_slots_alone() {
    on_clean_gpu(
        "the_read_leaves_the_upper_half_of_sq_slots_alone",
        |gpu, memory| {
            let buffers = memory.build(&[
                event(Block::Sq, "SQ_WAVES", 4),
                event(Block::Grbm, "GRBM_COUNT", 0),
            ]);
            // A buffer that was not zeroed: the PM4 never writes an SQ slot's upper half.
            memory.output.fill(0xA5A5_A5A5_0000_0000);
            let decoded = profile(gpu, memory, &buffers, KERNEL);
            for slot in &memory.output[..8] {
                assert_eq!(slot >> 32, 0xA5A5_A5A5);
            }
            assert_eq!(memory.output[8] >> 32, 0, "GRBM writes its HI half");
            // The decoder keeps only the low 32 bits of SQ slots.
            assert_eq!(values(&decoded, "SQ_WAVES"), [WAVES / 8; 8]);
            assert_eq!(
                values(&decoded, "GRBM_COUNT"),
                [DISPATCH_CYCLES + READ_CYCLES]
            );
        },
    );
}

#[test]
fn every_planned_pass_fits_the_simulated_frame() {
    on_clean_gpu(
        "every_planned_pass_fits_the_simulated_frame",
        |gpu, memory| {
            // The frame: 512 dwords in all, chained IBs included.
            let nops = |n: usize| {
                let mut dwords = vec![0xC000_1000 | (((n as u32) - 2) << 16)];
                dwords.resize(n, 0);
                dwords
            };
            assert_eq!(gpu.submit(&nops(DXG_FRAME_DWORDS)), (0, String::new()));
            assert_eq!(
                gpu.submit(&nops(DXG_FRAME_DWORDS + 1)),
                (
                    3,
                    "PM4 command buffer overflow: 513 dwords exceed the 512-dword frame".into()
                )
            );
            // 8 SQ + 2 GRBM fits the slots, not the frame: its read is refused...
            let ids = [4, 3, 2, 5, 24, 58, 62, 7];
            let mut full: Vec<_> = ids
                .iter()
                .map(|&id| event(Block::Sq, &format!("SQ_{id}"), id))
                .collect();
            full.extend([
                event(Block::Grbm, "GRBM_COUNT", 0),
                event(Block::Grbm, "GRBM_GUI_ACTIVE", 2),
            ]);
            let unsplit = memory.build(&full);
            assert_eq!(unsplit.read.len(), 655);
            assert_eq!(
                gpu.submit_packet(&unsplit.packets().read),
                (
                    3,
                    "PM4 command buffer overflow: 659 dwords exceed the 512-dword frame".into()
                )
            );
            // ... so the planner splits it; each pass runs and reads the truth.
            let passes = plan(
                &radeon_890m(),
                &full,
                Packing::Split,
                Some(DXG_FRAME_DWORDS),
            )
            .unwrap();
            assert_eq!(passes.len(), 2);
            let mut seen = Vec::new();
            for pass in &passes {
                let buffers = memory.build(&pass.counters);
                assert!(buffers.read.len() <= DXG_FRAME_DWORDS - 4);
                let decoded = profile(gpu, memory, &buffers, KERNEL);
                for counter in decoded {
                    let total: u64 = counter.values.iter().sum();
                    seen.push((counter.name, total));
                }
            }
            seen.sort();
            let wanted = |name: &str| seen.iter().find(|(n, _)| n == name).unwrap().1;
            assert_eq!(seen.len(), 10);
            assert_eq!(wanted("SQ_4"), WAVES);
            assert_eq!(wanted("SQ_5"), WAVES, "SQ_WAVES_32");
            assert_eq!(wanted("SQ_62"), WAVES * 10);
            assert_eq!(wanted("SQ_3"), 8 * SHADER_CYCLES);
            assert_eq!(wanted("GRBM_GUI_ACTIVE"), DISPATCH_CYCLES);
        },
    );
}

/// Three dispatches with the WSL2 pitfalls on; prints the SQ_WAVES and GRBM_GUI_ACTIVE
/// read-backs.
fn contaminated_run() {
    let gpu = Gpu::load();
    let mut memory = Memory::new();
    let buffers = memory.build(&[
        event(Block::Sq, "SQ_WAVES", 4),
        event(Block::Grbm, "GRBM_GUI_ACTIVE", 2),
    ]);
    let mut line = String::from("VALUES");
    for _ in 0..3 {
        let decoded = profile(&gpu, &memory, &buffers, KERNEL);
        let waves: u64 = values(&decoded, "SQ_WAVES").iter().sum();
        let active = values(&decoded, "GRBM_GUI_ACTIVE")[0];
        // Contamination only adds (an SQ zero read-back is the one exception).
        assert!(waves == 0 || waves >= WAVES, "{waves}");
        assert!(active >= DISPATCH_CYCLES, "{active}");
        line += &format!(" {waves} {active}");
    }
    println!("{line}");
}

#[test]
fn counts_are_reproducible_under_a_seed() {
    // Seed 5 has no GRBM zero burst (the first seed with one is 32), so every value below
    // depends on the seed alone.
    let name = "counts_are_reproducible_under_a_seed";
    let first = in_child(name, "# the built-in machine\n", 5, contaminated_run);
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let second = in_child(name, "# the built-in machine\n", 5, contaminated_run);
    assert_eq!(first.len(), 1);
    assert_eq!(first, second);
}
