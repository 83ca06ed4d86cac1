//! Code objects and host functions in one process: fake runtime tables (core table and the
//! AMD loader extension 1.01, HIP's compiler table) are wrapped in place; freezing an
//! executable records each of its loaded code objects once (a second freeze adds none) and
//! its kernel symbols under the code object holding them, destroying it records the unloads
//! with the same ids, and `__hipRegisterFunction` records its arguments and still reaches
//! the runtime's. (One test: the sink and the entry points are global.)

mod common;
use common::{empty_table, get, install_log, placeholder, runtime_tables, set};
use hsa_intercept::code_objects::install_host_functions;
use hsa_intercept::hsa::{self, Fns, LoaderTable101};
use hsa_intercept::sink;
use hsa_intercept::tables::{CORE, HIP_COMPILER_TABLE};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use trace_records::{CodeObjectEvent, ProcessTrace};

const GPU: u64 = 0x11;
const EXE: u64 = 0xE0;
/// Two loaded code objects: (handle, load base, load size, URI).
const OBJECTS: [(u64, u64, u64, &str); 2] = [
    (
        0xC1,
        0x10_0000,
        0x1000,
        "memory://78#offset=0x5000&size=4096",
    ),
    (0xC2, 0x20_0000, 0x800, "file:///opt/app.hsaco"),
];
/// Kernel symbols: (symbol handle, name, kernel object).
const SYMBOLS: [(u64, &str, u64); 2] = [
    (0x51, "_Z4axpbPKfPfm.kd", 0x20_0040),
    (0x52, "blit.kd", 0x10_0100),
];

unsafe extern "C" fn agent_get_info(agent: u64, attribute: u32, value: *mut c_void) -> u32 {
    let v = match attribute {
        0xA004 => (agent - 0x10) as u32, // driver node id: the GPU is node 1
        17 => u32::from(agent == GPU),
        _ => return 0x1001,
    };
    // SAFETY: both attributes are u32s.
    unsafe { value.cast::<u32>().write(v) };
    0
}

unsafe extern "C" fn freeze(_exe: u64, _options: *const c_char) -> u32 {
    0
}

static DESTROYED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

unsafe extern "C" fn destroy(exe: u64) -> u32 {
    DESTROYED.lock().unwrap().push(exe);
    0
}

type SymbolCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

unsafe extern "C" fn iterate_symbols(exe: u64, cb: SymbolCallback, data: *mut c_void) -> u32 {
    for (s, _, _) in SYMBOLS {
        // SAFETY: the tool's callback with its data.
        unsafe { cb(exe, s, data) };
    }
    0
}

unsafe extern "C" fn symbol_get_info(symbol: u64, attribute: u32, value: *mut c_void) -> u32 {
    let &(_, name, object) = SYMBOLS.iter().find(|s| s.0 == symbol).unwrap();
    // SAFETY: each attribute's out value as the tool asks for it.
    unsafe {
        match attribute {
            hsa::SYMBOL_INFO_TYPE => value.cast::<u32>().write(1),
            hsa::SYMBOL_INFO_NAME_LENGTH => value.cast::<u32>().write(name.len() as u32),
            hsa::SYMBOL_INFO_NAME => {
                std::ptr::copy_nonoverlapping(name.as_ptr(), value.cast::<u8>(), name.len())
            }
            hsa::SYMBOL_INFO_KERNEL_OBJECT => value.cast::<u64>().write(object),
            _ => value.cast::<u32>().write(0),
        }
    }
    0
}

unsafe extern "C" fn query_host_address(_device: *const c_void, _host: *mut *const c_void) -> u32 {
    0x1001 // unknown: the registers are 0 (and one warning)
}

type LoadedCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

unsafe extern "C" fn iterate_loaded(exe: u64, cb: LoadedCallback, data: *mut c_void) -> u32 {
    assert_eq!(exe, EXE);
    for (handle, ..) in OBJECTS {
        // SAFETY: the tool's callback with its data.
        unsafe { cb(exe, handle, data) };
    }
    0
}

unsafe extern "C" fn loaded_get_info(handle: u64, attribute: u32, value: *mut c_void) -> u32 {
    let &(_, base, size, uri) = OBJECTS.iter().find(|o| o.0 == handle).unwrap();
    let memory = uri.starts_with("memory:");
    // SAFETY: each attribute's out value as the loader extension defines it.
    unsafe {
        match attribute {
            2 => value.cast::<u64>().write(GPU),
            3 => value.cast::<u32>().write(if memory { 2 } else { 1 }),
            4 => value.cast::<u64>().write(0x5000),
            5 => value.cast::<u64>().write(size),
            7 => value.cast::<i64>().write(base as i64),
            8 => value.cast::<u64>().write(base),
            9 => value.cast::<u64>().write(size),
            10 => value.cast::<u32>().write(uri.len() as u32),
            11 => std::ptr::copy_nonoverlapping(uri.as_ptr(), value.cast::<u8>(), uri.len()),
            _ => return 0x1001,
        }
    }
    0
}

unsafe extern "C" fn extension_table(ext: u16, major: u16, size: usize, table: *mut c_void) -> u32 {
    assert_eq!((ext, major), (hsa::EXTENSION_AMD_LOADER, hsa::LOADER_MAJOR));
    assert!(size >= size_of::<LoaderTable101>());
    let t = LoaderTable101 {
        hsa_ven_amd_loader_query_host_address: Some(query_host_address),
        hsa_ven_amd_loader_query_segment_descriptors: std::ptr::null(),
        hsa_ven_amd_loader_query_executable: std::ptr::null(),
        hsa_ven_amd_loader_executable_iterate_loaded_code_objects: Some(iterate_loaded),
        hsa_ven_amd_loader_loaded_code_object_get_info: Some(loaded_get_info),
    };
    // SAFETY: the caller's table of at least this size.
    unsafe { table.cast::<LoaderTable101>().write(t) };
    0
}

/// What the runtime's `__hipRegisterFunction` was called with: (modules, host function, name).
static REGISTERED: Mutex<Vec<(u64, u64, String)>> = Mutex::new(Vec::new());

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn register_function(
    modules: *mut *mut c_void,
    host_function: *const c_void,
    _device_function: *mut c_char,
    device_name: *const c_char,
    _thread_limit: u32,
    _tid: *mut [u32; 3],
    _bid: *mut [u32; 3],
    _block_dim: *mut [u32; 3],
    _grid_dim: *mut [u32; 3],
    _wave_size: *mut c_int,
) {
    // SAFETY: the test's NUL-terminated name.
    let name = unsafe { CStr::from_ptr(device_name) }
        .to_string_lossy()
        .into_owned();
    REGISTERED
        .lock()
        .unwrap()
        .push((modules as u64, host_function as u64, name));
}

type RegisterFunction = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    *mut c_char,
    *const c_char,
    u32,
    *mut [u32; 3],
    *mut [u32; 3],
    *mut [u32; 3],
    *mut [u32; 3],
    *mut c_int,
);

#[test]
fn loads_unloads_symbols_and_host_functions_become_records() {
    let path = install_log("codeobj", 79);
    let (mut core, amd) = runtime_tables();
    for (name, f) in [
        ("hsa_agent_get_info", agent_get_info as *const c_void),
        ("hsa_executable_freeze", freeze as *const c_void),
        ("hsa_executable_destroy", destroy as *const c_void),
        (
            "hsa_executable_iterate_symbols",
            iterate_symbols as *const c_void,
        ),
        (
            "hsa_executable_symbol_get_info",
            symbol_get_info as *const c_void,
        ),
        (
            "hsa_system_get_major_extension_table",
            extension_table as *const c_void,
        ),
    ] {
        set(&mut core, &CORE, name, f);
    }
    // SAFETY: complete fake tables; only the entries set above are called.
    let fns: Fns = unsafe { Fns::resolve(core.as_ptr().cast(), amd.as_ptr().cast()) }.unwrap();
    // SAFETY: writable tables of the right layouts, not yet called through.
    unsafe { hsa_intercept::dispatch::install(core.as_mut_ptr().cast(), fns) };
    assert_ne!(
        get(&core, &CORE, "hsa_executable_destroy"),
        destroy as *const () as u64,
        "hsa_executable_destroy replaced"
    );

    let mut hip = empty_table(&HIP_COMPILER_TABLE);
    for name in HIP_COMPILER_TABLE.names {
        set(
            &mut hip,
            &HIP_COMPILER_TABLE,
            name,
            placeholder as *const c_void,
        );
    }
    set(
        &mut hip,
        &HIP_COMPILER_TABLE,
        "__hipRegisterFunction",
        register_function as *const c_void,
    );
    // SAFETY: a writable table of HipCompilerDispatchTable's layout.
    assert!(unsafe { install_host_functions(hip.as_mut_ptr().cast()) });

    // SAFETY: the replaced entries keep the runtime's signatures.
    unsafe {
        type Freeze = unsafe extern "C" fn(u64, *const c_char) -> u32;
        type Destroy = unsafe extern "C" fn(u64) -> u32;
        let freeze: Freeze = std::mem::transmute(get(&core, &CORE, "hsa_executable_freeze"));
        let destroy: Destroy = std::mem::transmute(get(&core, &CORE, "hsa_executable_destroy"));
        let register: RegisterFunction =
            std::mem::transmute(get(&hip, &HIP_COMPILER_TABLE, "__hipRegisterFunction"));
        let name = c"_Z4axpbPKfPfm";
        let mut block = [64u32, 1, 1];
        let mut wave = 32 as c_int;
        register(
            0xF00 as *mut *mut c_void,
            0xABC as *const c_void,
            name.as_ptr().cast_mut(),
            name.as_ptr(),
            1024,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut block,
            std::ptr::null_mut(),
            &mut wave,
        );
        assert_eq!(freeze(EXE, std::ptr::null()), 0);
        assert_eq!(freeze(EXE, std::ptr::null()), 0, "a second freeze");
        assert_eq!(destroy(EXE), 0);
    }
    assert_eq!(
        *REGISTERED.lock().unwrap(),
        [(0xF00, 0xABC, "_Z4axpbPKfPfm".to_owned())],
        "the runtime's __hipRegisterFunction still runs"
    );
    assert_eq!(*DESTROYED.lock().unwrap(), [EXE]);

    sink::seal_all();
    let t = ProcessTrace::read(&path).unwrap();
    assert_eq!(t.losses.total(), 0);
    type Seen<'a> = (Option<CodeObjectEvent>, u64, u64, u64, &'a str, u32, u32);
    let objects: Vec<Seen> = t
        .code_objects
        .iter()
        .map(|c| {
            (
                CodeObjectEvent::from_u8(c.event),
                c.code_object_id,
                c.load_base,
                c.load_size,
                t.string(c.uri),
                c.agent_node_id,
                c.storage_type,
            )
        })
        .collect();
    use CodeObjectEvent::*;
    let (a, b) = (OBJECTS[0], OBJECTS[1]);
    assert_eq!(
        objects,
        [
            (Some(Load), 1, a.1, a.2, a.3, 1, 2),
            (Some(Load), 2, b.1, b.2, b.3, 1, 1),
            (Some(Unload), 1, a.1, a.2, a.3, 1, 2),
            (Some(Unload), 2, b.1, b.2, b.3, 1, 1),
        ],
        "one load per code object (not again at the second freeze), then the unloads"
    );
    assert_eq!(
        (t.code_objects[0].memory_base, t.code_objects[0].memory_size),
        (0x5000, a.2)
    );
    assert_eq!(
        t.code_objects[1].memory_base, 0,
        "file storage has no memory range"
    );
    assert!(t.code_objects[2].timestamp >= t.code_objects[0].timestamp);

    // The symbols of both freezes, each under the code object whose range holds it.
    let symbols: Vec<(&str, u32)> = t
        .symbols
        .iter()
        .map(|s| (t.string(s.name), s.code_object_id))
        .collect();
    assert_eq!(
        symbols,
        [
            ("_Z4axpbPKfPfm", 2),
            ("blit", 1),
            ("_Z4axpbPKfPfm", 2),
            ("blit", 1)
        ]
    );

    let [h] = t.host_functions.as_slice() else {
        panic!("one host function: {:?}", t.host_functions)
    };
    assert_eq!((h.host_function, h.modules), (0xABC, 0xF00));
    assert_eq!(t.string(h.device_function), "_Z4axpbPKfPfm");
    assert_eq!(h.device_function, t.symbols[0].name, "one interned name");
    assert_eq!(h.thread_limit, 1024);
    assert_eq!(h.block_dims, [64, 1, 1]);
    assert_eq!(
        (h.thread_ids, h.grid_dims),
        ([0; 3], [0; 3]),
        "null pointers"
    );
    assert_eq!(h.workgroup_size, 32);
}
