//! Proves the real librocdxg.so works when `dlopen`ed, export hiding included.
//!
//! `cargo test` does not build the cdylib: run `cargo build -p sim-rocdxg -p sim-dxcore` first.
//! Each case runs in a child process with its own scenario file (see
//! `wslsim_scenario::harness`). The C layouts used here are written out independently of the
//! library's own Rust types.

use std::ffi::c_void;
use std::path::PathBuf;
use std::process::ExitCode;

use wslsim_scenario::harness::{self, Case, Library, Target};

type NoArgs = unsafe extern "C" fn() -> i32;
/// `HsaSystemProperties*`: NumNodes, PlatformOem, PlatformId, PlatformRev.
type Acquire = unsafe extern "C" fn(*mut [u32; 4]) -> i32;
type GetNode = unsafe extern "C" fn(u32, *mut c_void) -> i32;
/// `HsaStructureSizes*`: StructureSizes, SizeOfHsaNodeProperties, SizeOfHsaExternalHandleDesc,
/// Reserved[5].
type AbiCheck = unsafe extern "C" fn(*const [u16; 8]) -> i32;
type Wallclock = unsafe extern "C" fn(u32, *mut u64) -> i32;

const REQUIRED: [&str; 6] = [
    "hsaKmtOpenKFD",
    "hsaKmtAcquireSystemProperties",
    "hsaKmtGetNodeProperties",
    "hsaKmtReleaseSystemProperties",
    "hsaKmtCloseKFD",
    "hsaKmtGetNodeWallclockFrequency",
];

struct Thunk {
    open: NoArgs,
    close: Option<NoArgs>,
    acquire: Acquire,
    get: GetNode,
    release: NoArgs,
    abi_check: Option<AbiCheck>,
    wallclock: Wallclock,
}

fn load(library: &Library) -> Result<Thunk, String> {
    // SAFETY: each type below is the export's C signature.
    unsafe {
        Ok(Thunk {
            open: library.function("hsaKmtOpenKFD")?,
            close: library.function("hsaKmtCloseKFD").ok(),
            acquire: library.function("hsaKmtAcquireSystemProperties")?,
            get: library.function("hsaKmtGetNodeProperties")?,
            release: library.function("hsaKmtReleaseSystemProperties")?,
            abi_check: library.function("DxgAbiCheck").ok(),
            wallclock: library.function("hsaKmtGetNodeWallclockFrequency")?,
        })
    }
}

/// Fails with a message unless `actual == wanted`.
fn check<T: PartialEq + std::fmt::Debug>(what: &str, actual: T, wanted: T) -> Result<(), String> {
    if actual == wanted {
        Ok(())
    } else {
        Err(format!("{what}: got {actual:?}, expected {wanted:?}"))
    }
}

impl Thunk {
    fn open(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.open)() }
    }

    fn close(&self) -> Result<i32, String> {
        let close = self.close.ok_or("hsaKmtCloseKFD is not exported")?;
        // SAFETY: no arguments.
        Ok(unsafe { close() })
    }

    fn acquire(&self) -> (i32, u32) {
        let mut properties = [0xDEAD_u32; 4];
        // SAFETY: a writable 16-byte HsaSystemProperties.
        let status = unsafe { (self.acquire)(&mut properties) };
        (status, properties[0])
    }

    fn release(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.release)() }
    }

    fn abi_check(&self, node_size: u16) -> Result<i32, String> {
        let check = self.abi_check.ok_or("DxgAbiCheck is not exported")?;
        let sizes = [16, node_size, 0, 0, 0, 0, 0, 0];
        // SAFETY: a readable 16-byte HsaStructureSizes.
        Ok(unsafe { check(&sizes) })
    }

    fn wallclock(&self, node: u32) -> (i32, u64) {
        let mut hz = 0;
        // SAFETY: a writable u64.
        let status = unsafe { (self.wallclock)(node, &mut hz) };
        (status, hz)
    }

    /// Reads node `node` into two 1024-byte buffers with different canaries; returns the
    /// status and the bytes written (the prefix both buffers agree on; the rest must be the
    /// untouched canary).
    fn node(&self, node: u32) -> Result<(i32, Vec<u8>), String> {
        let mut runs = Vec::new();
        for canary in [0xA5_u8, 0x5A] {
            let mut buffer = vec![canary; 1024];
            // SAFETY: 1024 writable bytes, more than any layout these cases use.
            let status = unsafe { (self.get)(node, buffer.as_mut_ptr().cast::<c_void>()) };
            runs.push((status, canary, buffer));
        }
        let (status, canary_a, a) = &runs[0];
        let (status_b, canary_b, b) = &runs[1];
        check("status of the repeated read", status_b, status)?;
        let written = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if a[written..].iter().any(|byte| byte != canary_a)
            || b[written..].iter().any(|byte| byte != canary_b)
        {
            return Err(format!("node {node}: bytes after {written} were touched"));
        }
        Ok((*status, a[..written].to_vec()))
    }

    /// The SDK's sequence: open, acquire, get x N, release, close. Returns the records.
    fn read_all(&self, record_size: usize) -> Result<Vec<Vec<u8>>, String> {
        check("hsaKmtOpenKFD", self.open(), 0)?;
        let (status, num_nodes) = self.acquire();
        check("hsaKmtAcquireSystemProperties", status, 0)?;
        let mut records = Vec::new();
        for node in 0..num_nodes {
            let (status, bytes) = self.node(node)?;
            check(&format!("hsaKmtGetNodeProperties({node})"), status, 0)?;
            check(
                &format!("bytes written for node {node}"),
                bytes.len(),
                record_size,
            )?;
            records.push(bytes);
        }
        check(
            "hsaKmtGetNodeProperties(NumNodes)",
            self.node(num_nodes)?.0,
            5,
        )?;
        check("hsaKmtReleaseSystemProperties", self.release(), 0)?;
        check("hsaKmtCloseKFD", self.close()?, 0)?;
        check("second hsaKmtCloseKFD", self.close()?, 20)?;
        Ok(records)
    }
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

/// Checks the 890M GPU record at the offsets of abi/HsaNodeProperties_396.tsv.
fn check_890m(record: &[u8]) -> Result<(), String> {
    check("NumFComputeCores@4", u32_at(record, 4), 32)?;
    check("NumSIMDPerCU@68", u32_at(record, 68), 2)?;
    check(
        "EngineId@76",
        u32_at(record, 76),
        42 | (11 << 10) | (5 << 16),
    )?;
    check("VendorId/DeviceId@84", u32_at(record, 84), 0x150E_1002)?;
    let name: Vec<u16> = record[112..240]
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .take_while(|&unit| unit != 0)
        .collect();
    check(
        "MarketingName@112",
        String::from_utf16_lossy(&name),
        "AMD Radeon 890M Graphics".into(),
    )?;
    check("AMDName@240", &record[240..248], b"gfx1150\0".as_slice())?;
    check("FamilyID@364", u32_at(record, 364), 150)?;
    if record.len() >= 376 {
        check("CtlStackSize@372", u32_at(record, 372), 0x2000)?;
    }
    if record.len() >= 392 {
        check("LuidLowPart@376", u32_at(record, 376), 0x0001_D3A5)?;
        check("WallClockKHz@384", u64_at(record, 384), 100_000)?;
    }
    Ok(())
}

fn default_machine(library: &Library) -> Result<(), String> {
    library.expect_present(&REQUIRED)?;
    library.expect_present(&["DxgAbiCheck"])?;
    let thunk = load(library)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 0)?;
    let records = thunk.read_all(396)?;
    check("NumNodes", records.len(), 2)?;
    check("node 0 NumCPUCores", u32_at(&records[0], 0), 24)?;
    check("node 0 NumFComputeCores", u32_at(&records[0], 4), 0)?;
    check_890m(&records[1])?;
    check("wallclock(1)", thunk.wallclock(1), (0, 100_000_000))?;
    check("wallclock(0)", thunk.wallclock(0), (0, 1_000_000_000))?;
    Ok(())
}

fn abi_check_absent(library: &Library) -> Result<(), String> {
    library.expect_missing("DxgAbiCheck")?;
    library.expect_present(&REQUIRED)?;
    let records = load(library)?.read_all(396)?;
    check_890m(&records[1])
}

fn close_hidden(library: &Library) -> Result<(), String> {
    library.expect_missing("hsaKmtCloseKFD")?;
    library.expect_present(&REQUIRED[..4])?;
    library.expect_present(&["DxgAbiCheck", "hsaKmtGetNodeWallclockFrequency"])?;
    let thunk = load(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    check("hsaKmtAcquireSystemProperties", thunk.acquire(), (0, 2))?;
    Ok(())
}

fn layout_376(library: &Library) -> Result<(), String> {
    let thunk = load(library)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 2)?;
    check("DxgAbiCheck(376)", thunk.abi_check(376)?, 0)?;
    let records = thunk.read_all(376)?;
    check_890m(&records[1])
}

fn negotiated(library: &Library) -> Result<(), String> {
    let thunk = load(library)?;
    check("hsaKmtOpenKFD", thunk.open(), 0)?;
    check("hsaKmtAcquireSystemProperties", thunk.acquire(), (0, 2))?;
    let (status, before) = thunk.node(1)?;
    check("status before DxgAbiCheck", status, 0)?;
    check("bytes before DxgAbiCheck", before.len(), 368)?;
    check_890m(&before)?;
    check("DxgAbiCheck(396)", thunk.abi_check(396)?, 0)?;
    let (status, after) = thunk.node(1)?;
    check("status after DxgAbiCheck", status, 0)?;
    check("bytes after DxgAbiCheck", after.len(), 396)?;
    check_890m(&after)?;
    check("hsaKmtReleaseSystemProperties", thunk.release(), 0)?;
    check("hsaKmtCloseKFD", thunk.close()?, 0)
}

fn unusable_scenario(library: &Library) -> Result<(), String> {
    library.expect_present(&REQUIRED)?;
    // This executable links a third copy of the scenario crate: it must get the same empty
    // machine without printing the diagnostic a second time (the parent counts the lines).
    check(
        "the test's own view of the scenario",
        wslsim_scenario::current(),
        &wslsim_scenario::Scenario::empty(),
    )?;
    let thunk = load(library)?;
    let records = thunk.read_all(396)?;
    check("NumNodes of the empty machine", records.len(), 1)
}

fn unknown_hidden_name(library: &Library) -> Result<(), String> {
    library.expect_missing("hsaKmtReleaseSystemProperties")?;
    library.expect_present(&["hsaKmtOpenKFD", "hsaKmtCloseKFD", "DxgAbiCheck"])?;
    Ok(())
}

const LOADED: &str = "rocdxg loaded pid={pid} path={library}";

const CASES: &[Case] = &[
    Case {
        name: "default_890m",
        scenario: Some("# the built-in machine\n"),
        stderr_contains: &[],
        log_lines: &[
            LOADED,
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=396 -> 0",
            "rocdxg hsaKmtOpenKFD -> 0",
            "rocdxg hsaKmtAcquireSystemProperties num_nodes=2 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=2 wrote=0 -> 5",
            "rocdxg hsaKmtReleaseSystemProperties -> 0",
            "rocdxg hsaKmtCloseKFD -> 0",
            "rocdxg hsaKmtCloseKFD -> 20",
            "rocdxg hsaKmtGetNodeWallclockFrequency node=1 hz=100000000 -> 0",
        ],
        run: default_machine,
    },
    Case {
        name: "no_scenario_variable",
        scenario: None,
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: default_machine,
    },
    Case {
        name: "abi_check_absent",
        scenario: Some("[thunk]\nabi_check = \"absent\"\n"),
        stderr_contains: &[],
        log_lines: &[
            LOADED,
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
        ],
        run: abi_check_absent,
    },
    Case {
        name: "close_hidden",
        scenario: Some("[thunk]\nhidden_exports = [\"hsaKmtCloseKFD\"]\n"),
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: close_hidden,
    },
    Case {
        name: "layout_376",
        scenario: Some("[thunk]\nlayout = 376\n"),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=396 -> 2",
            "rocdxg DxgAbiCheck structure_sizes=16 node_properties=376 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=376 -> 0",
        ],
        run: layout_376,
    },
    Case {
        name: "write_size_negotiated",
        scenario: Some("[thunk]\nwrite_size = \"negotiated\"\n"),
        stderr_contains: &[],
        log_lines: &[
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=368 -> 0",
            "rocdxg hsaKmtGetNodeProperties node=1 wrote=396 -> 0",
        ],
        run: negotiated,
    },
    Case {
        name: "unusable_scenario_file",
        scenario: Some("[thunk]\nlayout = 376\ntypo = 1\n"),
        stderr_contains: &[
            "wslsim: cannot use scenario {scenario}: line 3, column 1: unknown field `typo`",
        ],
        log_lines: &[
            LOADED,
            "rocdxg hsaKmtAcquireSystemProperties num_nodes=1 -> 0",
        ],
        run: unusable_scenario,
    },
    Case {
        name: "unknown_hidden_name",
        scenario: Some(
            "[thunk]\nhidden_exports = [\"hsaKmtNoSuchEntry\", \"hsaKmtReleaseSystemProperties\"]\n",
        ),
        stderr_contains: &[
            "wslsim: cannot hide export hsaKmtNoSuchEntry: not in the dynamic symbol table",
        ],
        log_lines: &[LOADED],
        run: unknown_hidden_name,
    },
];

fn main() -> ExitCode {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    harness::main(
        &Target {
            library: "librocdxg.so",
            build_command: "cargo build -p sim-rocdxg -p sim-dxcore",
            sources: &[
                manifest.join("src"),
                manifest.join("build.rs"),
                manifest.join("Cargo.toml"),
                manifest.join("../scenario/src"),
            ],
        },
        CASES,
    )
}
