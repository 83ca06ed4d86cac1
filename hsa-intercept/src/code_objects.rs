//! Code objects and HIP host functions, recorded as rocprofiler-sdk's code-object tracing
//! reports them.
//!
//! - **Loads**: at `hsa_executable_freeze` (the hook of [`crate::dispatch`]) every code object
//!   the AMD loader extension 1.01 lists for the executable
//!   (`hsa_ven_amd_loader_executable_iterate_loaded_code_objects`) is given an id (from 1, once
//!   per loaded code object) and recorded with what `hsa_ven_amd_loader_loaded_code_object_get_info`
//!   says of it: agent, URI, load base, size and delta, storage type and (memory storage) its
//!   bytes' address and size. The kernel symbols of the executable then name the code object
//!   holding them ([`code_object_of`]); the thread trace names its code-object snapshots with
//!   the same ids ([`id_for`]).
//! - **Unloads**: `hsa_executable_destroy` records an unload (same id) for each code object of
//!   the executable before the runtime destroys it.
//! - **Host functions**: with [`install_host_functions`], `__hipRegisterFunction` of HIP's
//!   compiler table is replaced by a wrapper that records its arguments (host stub, fat-binary
//!   handle, device function name, thread limit and what the optional `uint3`/`dim3`/`int`
//!   pointers point to), then calls the runtime's. Which kernel (and so which code object) a
//!   host function is resolved after the run, by the device function's name.
//!
//! Nothing here runs on a traced call's path: these are a program's load-time calls.

use crate::clock::now_ns;
use crate::hsa::{Loader, SUCCESS, Status, fns, loaded_code_object as lco};
use crate::sink;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use trace_records::record::{CodeObjectEvent, CodeObjectRecord, Dim3, HostFunctionRecord};

/// One loaded code object the tool knows.
#[derive(Debug, Clone, Copy)]
struct Known {
    /// `hsa_loaded_code_object_t`.
    handle: u64,
    executable: u64,
    id: u64,
    load_base: u64,
    load_size: u64,
    /// The load record, kept for the unload.
    record: CodeObjectRecord,
    recorded: bool,
}

static KNOWN: Mutex<Vec<Known>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The id of the loaded code object `handle` of `executable`, given on first sight (the thread
/// trace's snapshot names and the code-object records share it).
pub fn id_for(executable: u64, handle: u64) -> u64 {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = known.iter().find(|k| k.handle == handle) {
        return k.id;
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    known.push(Known {
        handle,
        executable,
        id,
        load_base: 0,
        load_size: 0,
        record: CodeObjectRecord::default(),
        recorded: false,
    });
    id
}

/// The loaded code objects of `executable`, as the loader lists them.
fn loaded(iterate: crate::hsa::IterateLoadedCodeObjects, executable: u64) -> Vec<u64> {
    unsafe extern "C" fn collect(_executable: u64, object: u64, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Vec passed below, alive for the iteration.
        unsafe { (*data.cast::<Vec<u64>>()).push(object) };
        SUCCESS
    }
    let mut found: Vec<u64> = Vec::new();
    // SAFETY: the runtime's iteration over a frozen executable with a callback that only
    // appends to `found`.
    unsafe { iterate(executable, collect, (&raw mut found).cast()) };
    found
}

/// Records a load for every code object of the just-frozen `executable` not recorded yet.
pub fn executable_frozen(loader: &Loader, executable: u64) {
    let Some((iterate, get_info)) = loader.loaded_code_objects else {
        return;
    };
    for handle in loaded(iterate, executable) {
        let u64_of = |attr: u32| {
            let mut v = 0u64;
            // SAFETY: a u64-sized attribute of a live loaded code object.
            let status = unsafe { get_info(handle, attr, (&raw mut v).cast()) };
            (status == SUCCESS).then_some(v)
        };
        let u32_of = |attr: u32| {
            let mut v = 0u32;
            // SAFETY: a u32-sized attribute of a live loaded code object.
            let status = unsafe { get_info(handle, attr, (&raw mut v).cast()) };
            (status == SUCCESS).then_some(v)
        };
        let id = id_for(executable, handle);
        let storage_type = u32_of(lco::STORAGE_TYPE).unwrap_or(0);
        let (memory_base, memory_size) = if storage_type == lco::STORAGE_MEMORY {
            (
                u64_of(lco::STORAGE_MEMORY_BASE).unwrap_or(0),
                u64_of(lco::STORAGE_MEMORY_SIZE).unwrap_or(0),
            )
        } else {
            (0, 0)
        };
        let uri_len = u32_of(lco::URI_LENGTH).unwrap_or(0).min(1 << 16);
        let mut uri = vec![0u8; uri_len as usize];
        if uri_len > 0 {
            // SAFETY: URI writes URI_LENGTH bytes (no NUL).
            let status = unsafe { get_info(handle, lco::URI, uri.as_mut_ptr().cast()) };
            if status != SUCCESS {
                uri.clear();
            }
        }
        let uri = String::from_utf8_lossy(&uri);
        let agent = u64_of(lco::AGENT).unwrap_or(0);
        let record = CodeObjectRecord {
            code_object_id: id,
            timestamp: now_ns(),
            load_base: u64_of(lco::LOAD_BASE).unwrap_or(0),
            load_size: u64_of(lco::LOAD_SIZE).unwrap_or(0),
            load_delta: u64_of(lco::LOAD_DELTA).unwrap_or(0),
            memory_base,
            memory_size,
            uri: sink::intern(uri.trim_end_matches('\0')),
            agent_node_id: crate::hsa::agent_node(agent).0,
            storage_type,
            event: CodeObjectEvent::Load as u8,
            reserved: [0; 3],
        };
        let first = {
            let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
            match known.iter_mut().find(|k| k.handle == handle) {
                Some(k) if !k.recorded => {
                    k.load_base = record.load_base;
                    k.load_size = record.load_size;
                    k.record = record;
                    k.recorded = true;
                    true
                }
                _ => false,
            }
        };
        if first {
            sink::emit(&record);
        }
    }
}

/// The id of the code object of `executable` holding the kernel object `kernel_object`: the
/// one whose loaded range contains it, else the executable's only one (a kernel whose
/// descriptor the runtime keeps apart from the image); 0 when neither says.
pub fn code_object_of(executable: u64, kernel_object: u64) -> u32 {
    let known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let mine = || {
        known
            .iter()
            .filter(|k| k.executable == executable && k.recorded)
    };
    let within = mine()
        .find(|k| kernel_object >= k.load_base && kernel_object - k.load_base < k.load_size.max(1));
    let id = match within {
        Some(k) => k.id,
        None if mine().count() == 1 => mine().next().map_or(0, |k| k.id),
        None => 0,
    };
    u32::try_from(id).unwrap_or(0)
}

/// The replaced `hsa_executable_destroy`: an unload record for each of the executable's code
/// objects, then the runtime's.
pub(crate) unsafe extern "C" fn executable_destroy(executable: u64) -> Status {
    let Some(destroy) = fns().and_then(|f| f.executable_destroy) else {
        return crate::hsa::ERROR;
    };
    let _ = std::panic::catch_unwind(|| {
        let gone: Vec<CodeObjectRecord> = {
            let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
            let gone = known
                .iter()
                .filter(|k| k.executable == executable && k.recorded)
                .map(|k| k.record)
                .collect();
            known.retain(|k| k.executable != executable);
            gone
        };
        let now = now_ns();
        for mut record in gone {
            record.timestamp = now;
            record.event = CodeObjectEvent::Unload as u8;
            sink::emit(&record);
        }
    });
    // SAFETY: forwarded.
    unsafe { destroy(executable) }
}

// ---- HIP host functions ----

/// `void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction,
/// const char* deviceName, unsigned int threadLimit, uint3* tid, uint3* bid, dim3* blockDim,
/// dim3* gridDim, int* wSize)`.
type RegisterFunction = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    *mut c_char,
    *const c_char,
    u32,
    *mut Dim3,
    *mut Dim3,
    *mut Dim3,
    *mut Dim3,
    *mut c_int,
);

static REGISTER_FUNCTION: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Replaces `__hipRegisterFunction` in HIP's compiler table with the recording wrapper (before
/// the table is wrapped for tracing, so a traced call still records it). Whether it was there.
///
/// # Safety
/// `table` must be HIP's `HipCompilerDispatchTable`, handed over before first use.
pub unsafe fn install_host_functions(table: *mut u8) -> bool {
    // SAFETY: forwarded; the wrapper has the entry's signature.
    let original = unsafe {
        crate::hsa::replace_entry(
            &crate::tables::HIP_COMPILER_TABLE,
            table,
            "__hipRegisterFunction",
            register_function as *const c_void,
        )
    };
    match original {
        Some(f) if !f.is_null() => {
            REGISTER_FUNCTION.store(f.cast_mut(), Ordering::Release);
            true
        }
        _ => false,
    }
}

/// What an optional `uint3*`/`dim3*` argument points to (zeros for null).
///
/// # Safety
/// `p` is null or points to three readable `u32`s.
unsafe fn dim3(p: *const Dim3) -> Dim3 {
    if p.is_null() {
        [0; 3]
    } else {
        // SAFETY: per the contract.
        unsafe { p.read_unaligned() }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn register_function(
    modules: *mut *mut c_void,
    host_function: *const c_void,
    device_function: *mut c_char,
    device_name: *const c_char,
    thread_limit: u32,
    thread_ids: *mut Dim3,
    block_ids: *mut Dim3,
    block_dims: *mut Dim3,
    grid_dims: *mut Dim3,
    workgroup_size: *mut c_int,
) {
    let _ = std::panic::catch_unwind(|| {
        let name = if !device_function.is_null() {
            device_function.cast_const()
        } else {
            device_name
        };
        if name.is_null() {
            return;
        }
        // SAFETY: HIP's argument: a NUL-terminated, compiler-generated name.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        // SAFETY: HIP's optional pointers: null or the compiler's variables.
        let record = unsafe {
            HostFunctionRecord {
                host_function: host_function as u64,
                modules: modules as u64,
                thread_ids: dim3(thread_ids),
                block_ids: dim3(block_ids),
                block_dims: dim3(block_dims),
                grid_dims: dim3(grid_dims),
                workgroup_size: if workgroup_size.is_null() {
                    0
                } else {
                    workgroup_size.read_unaligned() as u32
                },
                thread_limit,
                device_function: sink::intern(&name),
                reserved: 0,
            }
        };
        sink::emit(&record);
    });
    let original = REGISTER_FUNCTION.load(Ordering::Acquire);
    if original.is_null() {
        return;
    }
    // SAFETY: the runtime's entry this wrapper replaced, with its own signature and the
    // caller's arguments.
    unsafe {
        let f = std::mem::transmute::<*mut c_void, RegisterFunction>(original);
        f(
            modules,
            host_function,
            device_function,
            device_name,
            thread_limit,
            thread_ids,
            block_ids,
            block_dims,
            grid_dims,
            workgroup_size,
        )
    }
}
