//! Proves the real libdxcore.so works when `dlopen`ed, export hiding included.
//!
//! `cargo test` does not build the cdylib: run `cargo build -p sim-rocdxg -p sim-dxcore` first.
//! Each case runs in a child process with its own scenario file (see
//! `wslsim_scenario::harness`). The C layouts used here are written out independently of the
//! library's own Rust types.

use std::ffi::c_void;
use std::path::PathBuf;
use std::process::ExitCode;

use wslsim_scenario::harness::{self, Case, Library, Target, check, u32_at};

/// `D3DKMT_ENUMADAPTERS3`: Filter u64 @0, NumAdapters u32 @8, pAdapters @16.
#[repr(C)]
struct EnumAdapters3 {
    filter: u64,
    num_adapters: u32,
    adapters: *mut [u32; 5],
}

/// `D3DKMT_QUERYADAPTERINFO`: hAdapter @0, Type @4, pPrivateDriverData @8, size @16.
#[repr(C)]
struct QueryAdapterInfo {
    adapter: u32,
    kind: u32,
    data: *mut c_void,
    size: u32,
}

type Enum = unsafe extern "C" fn(*mut EnumAdapters3) -> i32;
type Query = unsafe extern "C" fn(*const QueryAdapterInfo) -> i32;
type Close = unsafe extern "C" fn(*const u32) -> i32;

const SUCCESS: i32 = 0;
const INVALID_PARAMETER: i32 = 0xC000_000D_u32.cast_signed();
const UNSUCCESSFUL: i32 = 0xC000_0001_u32.cast_signed();

struct Dxcore {
    enumerate: Enum,
    query: Query,
    close: Option<Close>,
}

impl Dxcore {
    fn load(library: &Library) -> Result<Dxcore, String> {
        // SAFETY: each type is the export's C signature.
        unsafe {
            Ok(Dxcore {
                enumerate: library.function("D3DKMTEnumAdapters3")?,
                query: library.function("D3DKMTQueryAdapterInfo")?,
                close: library.function("D3DKMTCloseAdapter").ok(),
            })
        }
    }

    /// Count, then fill, with IncludeComputeOnly; returns `[hAdapter, LuidLow, LuidHigh,
    /// NumOfSources, bPrecise]` per adapter.
    fn adapters(&self) -> Result<Vec<[u32; 5]>, String> {
        let mut request = EnumAdapters3 {
            filter: 1,
            num_adapters: 0,
            adapters: std::ptr::null_mut(),
        };
        // SAFETY: a valid request with no array.
        let status = unsafe { (self.enumerate)(&mut request) };
        check("D3DKMTEnumAdapters3 (count)", status, SUCCESS)?;
        let mut entries = vec![[0xEEEE_EEEE_u32; 5]; request.num_adapters as usize];
        request.adapters = entries.as_mut_ptr();
        // SAFETY: a valid request whose array holds NumAdapters entries.
        let status = unsafe { (self.enumerate)(&mut request) };
        check("D3DKMTEnumAdapters3 (fill)", status, SUCCESS)?;
        check("filled count", request.num_adapters as usize, entries.len())?;
        Ok(entries)
    }

    fn query(&self, adapter: u32, kind: u32, data: &mut [u8]) -> i32 {
        let request = QueryAdapterInfo {
            adapter,
            kind,
            data: data.as_mut_ptr().cast::<c_void>(),
            size: data.len() as u32,
        };
        // SAFETY: a valid request over `data`.
        unsafe { (self.query)(&request) }
    }

    fn close(&self, adapter: u32) -> Result<i32, String> {
        let close = self.close.ok_or("D3DKMTCloseAdapter is not exported")?;
        // SAFETY: a valid D3DKMT_CLOSEADAPTER.
        Ok(unsafe { close(&adapter) })
    }
}

fn utf32_at(bytes: &[u8], offset: usize) -> String {
    (0..260)
        .map(|i| u32_at(bytes, offset + 4 * i))
        .take_while(|&unit| unit != 0)
        .filter_map(char::from_u32)
        .collect()
}

fn default_machine(library: &Library) -> Result<(), String> {
    library.expect_present(&[
        "D3DKMTEnumAdapters3",
        "D3DKMTQueryAdapterInfo",
        "D3DKMTCloseAdapter",
    ])?;
    let dxcore = Dxcore::load(library)?;
    let adapters = dxcore.adapters()?;
    check(
        "adapters",
        adapters.clone(),
        vec![[0x4000_0010, 0x0001_D3A5, 0, 0, 0]],
    )?;
    let handle = adapters[0][0];

    let mut ids = [0_u8; 28];
    check("query 31", dxcore.query(handle, 31, &mut ids), SUCCESS)?;
    check("VendorID", u32_at(&ids, 4), 0x1002)?;
    check("DeviceID", u32_at(&ids, 8), 0x150E)?;
    let mut address = [0_u8; 12];
    check("query 6", dxcore.query(handle, 6, &mut address), SUCCESS)?;
    check("BusNumber", u32_at(&address, 0), 0xC5)?;
    let mut registry = vec![0xFF_u8; 4160];
    check("query 8", dxcore.query(handle, 8, &mut registry), SUCCESS)?;
    check(
        "AdapterString",
        utf32_at(&registry, 0),
        "AMD Radeon(TM) 890M Graphics".into(),
    )?;
    check(
        "ChipType",
        utf32_at(&registry, 3120),
        "AMD Radeon Graphics Processor (0x150E)".into(),
    )?;
    let mut segments = [0_u8; 24];
    check("query 3", dxcore.query(handle, 3, &mut segments), SUCCESS)?;
    check(
        "DedicatedVideoMemorySize",
        u32_at(&segments, 0),
        536_870_912,
    )?;
    check(
        "query 3, wrong size",
        dxcore.query(handle, 3, &mut ids),
        INVALID_PARAMETER,
    )?;

    check("close", dxcore.close(handle)?, SUCCESS)?;
    check("close again", dxcore.close(handle)?, INVALID_PARAMETER)?;
    check(
        "query after close",
        dxcore.query(handle, 6, &mut address),
        INVALID_PARAMETER,
    )
}

fn close_hidden(library: &Library) -> Result<(), String> {
    library.expect_missing("D3DKMTCloseAdapter")?;
    library.expect_present(&["D3DKMTEnumAdapters3", "D3DKMTQueryAdapterInfo"])?;
    check("adapters", Dxcore::load(library)?.adapters()?.len(), 1)
}

fn enum_fails(library: &Library) -> Result<(), String> {
    let dxcore = Dxcore::load(library)?;
    let mut request = EnumAdapters3 {
        filter: 1,
        num_adapters: 0,
        adapters: std::ptr::null_mut(),
    };
    // SAFETY: a valid request with no array.
    let status = unsafe { (dxcore.enumerate)(&mut request) };
    check("D3DKMTEnumAdapters3", status, UNSUCCESSFUL)
}

fn empty_machine(library: &Library) -> Result<(), String> {
    check("adapters", Dxcore::load(library)?.adapters()?.len(), 0)
}

const LOADED: &str = "dxcore loaded pid={pid} path={library}";

const CASES: &[Case] = &[
    Case {
        name: "default_890m",
        scenario: Some("# the built-in machine\n"),
        stderr_contains: &[],
        log_lines: &[
            LOADED,
            "dxcore D3DKMTEnumAdapters3 filter=0x1 num=0 -> 0x00000000",
            "dxcore D3DKMTEnumAdapters3 filter=0x1 num=1 -> 0x00000000",
            "dxcore D3DKMTQueryAdapterInfo handle=0x40000010 type=31 -> 0x00000000",
            "dxcore D3DKMTQueryAdapterInfo handle=0x40000010 type=3 -> 0xC000000D",
            "dxcore D3DKMTCloseAdapter handle=0x40000010 -> 0x00000000",
            "dxcore D3DKMTCloseAdapter handle=0x40000010 -> 0xC000000D",
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
        name: "close_hidden",
        scenario: Some("[dxcore]\nhidden_exports = [\"D3DKMTCloseAdapter\"]\n"),
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: close_hidden,
    },
    Case {
        name: "enum_status",
        scenario: Some("[dxcore]\nenum_status = 0xC0000001\n"),
        stderr_contains: &[],
        log_lines: &["dxcore D3DKMTEnumAdapters3 filter=0x1 num=0 -> 0xC0000001"],
        run: enum_fails,
    },
    Case {
        name: "empty_machine",
        scenario: Some("machine = \"empty\"\n"),
        stderr_contains: &[],
        log_lines: &[LOADED],
        run: empty_machine,
    },
    Case {
        name: "unusable_scenario_file",
        scenario: Some("[[adapters]]\nvendor = 0x1002\n"),
        stderr_contains: &[
            "wslsim: cannot use scenario {scenario}: line 2, column 1: unknown field `vendor`",
        ],
        log_lines: &[LOADED],
        run: empty_machine,
    },
];

fn main() -> ExitCode {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    harness::main(
        &Target {
            library: "libdxcore.so",
            build_command: "cargo build -p sim-rocdxg -p sim-dxcore",
            sources: &[
                manifest.join("src"),
                manifest.join("Cargo.toml"),
                manifest.join("../scenario/src"),
            ],
        },
        CASES,
    )
}
