//! Registered fat binaries (`__hipRegisterFatBinary`), host-stub-to-kernel mapping
//! (`__hipRegisterFunction`), modules (`hipModuleLoadData`) and their loading into HSA
//! executables.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{self, HipError};
use crate::fatbin::{ArgSlot, FatBinary, FatKernel};
use crate::hsa::{self, Agent, CodeObjectReader, Executable, Hsa};
use crate::runtime::{self, Runtime, warn};

/// A kernel as loaded on one device.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`.
    pub kernel_object: u64,
    /// Kernarg segment size.
    pub kernarg_size: u32,
    /// Static group and private segment sizes.
    pub group_segment_size: u32,
    pub private_segment_size: u32,
    /// Explicit arguments (empty for the blit program, whose kernargs HIP writes itself).
    pub args: Vec<ArgSlot>,
}

/// A code object loaded on one device.
#[derive(Debug, Default)]
pub struct LoadedModule {
    reader: CodeObjectReader,
    executable: Executable,
    /// Kernels by name.
    pub kernels: HashMap<String, Arc<LoadedKernel>>,
}

/// Loads `program`'s code object for `agent`: reader, executable, load, freeze, then one
/// symbol lookup and its queries per kernel.
pub fn load_code_object(
    hsa: &Hsa,
    agent: Agent,
    profile: u32,
    program: &FatBinary,
) -> Result<LoadedModule, HipError> {
    let code = &program.code_object;
    let fail = |status: hsa::Status, what: &str| {
        warn(&format!("{what} failed: {}", hsa.status_text(status)));
        error::INVALID_IMAGE
    };
    let mut module = LoadedModule::default();
    // SAFETY: `code` is readable for its length; valid out-pointer.
    let status = unsafe {
        (hsa.hsa_code_object_reader_create_from_memory)(
            code.as_ptr().cast(),
            code.len(),
            &mut module.reader,
        )
    };
    if status != hsa::STATUS_SUCCESS {
        return Err(fail(status, "hsa_code_object_reader_create_from_memory"));
    }
    // SAFETY: documented signature, valid out-pointer.
    let status = unsafe {
        (hsa.hsa_executable_create_alt)(
            profile,
            hsa::ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut module.executable,
        )
    };
    if status != hsa::STATUS_SUCCESS {
        unload(hsa, &module);
        return Err(fail(status, "hsa_executable_create_alt"));
    }
    // SAFETY: live executable and reader; no options; the loaded object is not needed.
    let status = unsafe {
        (hsa.hsa_executable_load_agent_code_object)(
            module.executable,
            agent,
            module.reader,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    if status != hsa::STATUS_SUCCESS {
        unload(hsa, &module);
        return Err(fail(status, "hsa_executable_load_agent_code_object"));
    }
    // SAFETY: live executable, no options.
    let status = unsafe { (hsa.hsa_executable_freeze)(module.executable, std::ptr::null()) };
    if status != hsa::STATUS_SUCCESS {
        unload(hsa, &module);
        return Err(fail(status, "hsa_executable_freeze"));
    }
    for FatKernel { kernel, args } in &program.kernels {
        let Ok(symbol_name) = CString::new(kernel.symbol_name()) else {
            continue;
        };
        let mut symbol = hsa::ExecutableSymbol::default();
        // SAFETY: live executable, NUL-terminated name, valid agent and out-pointers.
        let status = unsafe {
            (hsa.hsa_executable_get_symbol_by_name)(
                module.executable,
                symbol_name.as_ptr(),
                &agent,
                &mut symbol,
            )
        };
        if status != hsa::STATUS_SUCCESS {
            unload(hsa, &module);
            return Err(fail(status, "hsa_executable_get_symbol_by_name"));
        }
        let mut kernel_object = 0u64;
        let mut values = [0u32; 4];
        // SAFETY: KERNEL_OBJECT is a u64; the other four attributes are u32.
        unsafe {
            (hsa.hsa_executable_symbol_get_info)(
                symbol,
                hsa::SYMBOL_INFO_KERNEL_OBJECT,
                (&raw mut kernel_object).cast(),
            );
            for (value, attribute) in values.iter_mut().zip([
                hsa::SYMBOL_INFO_KERNARG_SEGMENT_SIZE,
                hsa::SYMBOL_INFO_KERNARG_SEGMENT_ALIGNMENT,
                hsa::SYMBOL_INFO_GROUP_SEGMENT_SIZE,
                hsa::SYMBOL_INFO_PRIVATE_SEGMENT_SIZE,
            ]) {
                (hsa.hsa_executable_symbol_get_info)(symbol, attribute, (value as *mut u32).cast());
            }
        }
        if kernel_object == 0 {
            unload(hsa, &module);
            warn(&format!("no kernel object for {}", kernel.name));
            return Err(error::INVALID_IMAGE);
        }
        // values[1], the kernarg alignment, is queried as ROCclr does but not needed.
        module.kernels.insert(
            kernel.name.clone(),
            Arc::new(LoadedKernel {
                kernel_object,
                kernarg_size: values[0],
                group_segment_size: values[2],
                private_segment_size: values[3],
                args: args.clone(),
            }),
        );
    }
    Ok(module)
}

/// Destroys a loaded module's executable and reader.
pub fn unload(hsa: &Hsa, module: &LoadedModule) {
    // SAFETY: handles created by load_code_object (a zero handle is refused by HSA).
    unsafe {
        if module.executable.handle != 0 {
            (hsa.hsa_executable_destroy)(module.executable);
        }
        if module.reader.handle != 0 {
            (hsa.hsa_code_object_reader_destroy)(module.reader);
        }
    }
}

/// A fat binary or module and its per-device executables.
pub struct Module {
    /// What was registered.
    pub fatbin: FatBinary,
    /// Per device ordinal, once loaded.
    pub loaded: Vec<Option<LoadedModule>>,
}

/// One `hipFunction_t`.
#[derive(Debug)]
pub struct FunctionHandle {
    /// Module id.
    pub module: usize,
    /// Kernel name.
    pub name: String,
}

#[derive(Default)]
struct Registry {
    modules: HashMap<usize, Module>,
    next_id: usize,
    /// Fat-binary handles (`void**` given to the application) → module id.
    fatbin_handles: HashMap<usize, usize>,
    /// Module handles (`hipModule_t`) → module id.
    module_handles: HashMap<usize, usize>,
    /// Host stub address → (module id, kernel name).
    functions: HashMap<usize, (usize, String)>,
    /// `hipFunction_t` handles → handle.
    function_handles: HashMap<usize, Box<FunctionHandle>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut guard = registry();
    f(guard.get_or_insert_with(Registry::default))
}

fn load_everywhere(rt: &Runtime, module: &mut Module) -> Result<(), HipError> {
    module.loaded.resize_with(rt.devices.len(), || None);
    for device in &rt.devices {
        if module.loaded[device.ordinal].is_none() {
            let loaded =
                load_code_object(&rt.hsa, device.agent, device.info.profile, &module.fatbin)?;
            module.loaded[device.ordinal] = Some(loaded);
        }
    }
    Ok(())
}

/// Loads every registered fat binary on every device (called once, during initialisation).
pub fn load_registered(rt: &Runtime) {
    with_registry(|r| {
        for module in r.modules.values_mut() {
            if let Err(e) = load_everywhere(rt, module) {
                warn(&format!("cannot load a registered fat binary (error {e})"));
            }
        }
    });
}

/// `__hipRegisterFatBinary`: records the fat binary, loads it if the runtime is already up,
/// and returns the handle (`void**`) the application passes back.
pub fn register_fatbin(fatbin: FatBinary) -> *mut *mut c_void {
    let handle: *mut *mut c_void = Box::into_raw(Box::new(std::ptr::null_mut()));
    let mut module = Module {
        fatbin,
        loaded: Vec::new(),
    };
    if let Some(rt) = runtime::runtime_if_ready()
        && let Err(e) = load_everywhere(rt, &mut module)
    {
        warn(&format!("cannot load a fat binary (error {e})"));
    }
    with_registry(|r| {
        let id = r.next_id;
        r.next_id += 1;
        r.modules.insert(id, module);
        r.fatbin_handles.insert(handle as usize, id);
    });
    handle
}

/// `__hipRegisterFunction`: maps a host stub to a kernel of the fat binary. Unknown handles
/// and names are ignored (the launch then fails with `hipErrorInvalidDeviceFunction`).
pub fn register_function(handle: usize, host_function: usize, name: String) -> bool {
    with_registry(|r| {
        let Some(&id) = r.fatbin_handles.get(&handle) else {
            return false;
        };
        r.functions.insert(host_function, (id, name));
        true
    })
}

/// `__hipUnregisterFatBinary`: destroys the executables and forgets the fat binary and its
/// functions.
pub fn unregister_fatbin(handle: usize) -> bool {
    let removed = with_registry(|r| {
        let id = r.fatbin_handles.remove(&handle)?;
        r.functions.retain(|_, (module, _)| *module != id);
        r.modules.remove(&id)
    });
    let Some(module) = removed else {
        return false;
    };
    if let Some(rt) = runtime::runtime_if_ready() {
        for loaded in module.loaded.iter().flatten() {
            unload(&rt.hsa, loaded);
        }
    }
    // SAFETY: the handle was made by Box::into_raw in register_fatbin and is now forgotten.
    drop(unsafe { Box::from_raw(handle as *mut *mut c_void) });
    true
}

/// `hipModuleLoadData`: a fat-binary wrapper image, loaded on every device now.
pub fn load_module(rt: &Runtime, fatbin: FatBinary) -> Result<*mut c_void, HipError> {
    let mut module = Module {
        fatbin,
        loaded: Vec::new(),
    };
    if let Err(e) = load_everywhere(rt, &mut module) {
        for loaded in module.loaded.iter().flatten() {
            unload(&rt.hsa, loaded);
        }
        return Err(e);
    }
    let handle = Box::into_raw(Box::new(0u64)).cast::<c_void>();
    with_registry(|r| {
        let id = r.next_id;
        r.next_id += 1;
        r.modules.insert(id, module);
        r.module_handles.insert(handle as usize, id);
    });
    Ok(handle)
}

/// `hipModuleUnload`.
pub fn unload_module(rt: &Runtime, handle: usize) -> Result<(), HipError> {
    let module = with_registry(|r| {
        let id = r.module_handles.remove(&handle)?;
        r.function_handles.retain(|_, f| f.module != id);
        r.modules.remove(&id)
    })
    .ok_or(error::INVALID_HANDLE)?;
    for loaded in module.loaded.iter().flatten() {
        unload(&rt.hsa, loaded);
    }
    // SAFETY: made by Box::into_raw in load_module and now forgotten.
    drop(unsafe { Box::from_raw(handle as *mut u64) });
    Ok(())
}

/// `hipModuleGetFunction`.
pub fn get_function(handle: usize, name: &str) -> Result<*mut c_void, HipError> {
    with_registry(|r| {
        let &id = r.module_handles.get(&handle).ok_or(error::INVALID_HANDLE)?;
        let module = r.modules.get(&id).ok_or(error::INVALID_HANDLE)?;
        if !module.fatbin.kernels.iter().any(|k| k.kernel.name == name) {
            return Err(error::NOT_FOUND);
        }
        if let Some((&address, _)) = r
            .function_handles
            .iter()
            .find(|(_, f)| f.module == id && f.name == name)
        {
            return Ok(address as *mut c_void);
        }
        let function = Box::new(FunctionHandle {
            module: id,
            name: name.to_owned(),
        });
        let address = &*function as *const FunctionHandle as usize;
        r.function_handles.insert(address, function);
        Ok(address as *mut c_void)
    })
}

fn loaded_kernel(
    rt: &Runtime,
    modules: &mut HashMap<usize, Module>,
    id: usize,
    name: &str,
    device: usize,
) -> Result<Arc<LoadedKernel>, HipError> {
    let module = modules.get_mut(&id).ok_or(error::INVALID_DEVICE_FUNCTION)?;
    if module.loaded.get(device).is_none_or(Option::is_none) {
        load_everywhere(rt, module)?;
    }
    module
        .loaded
        .get(device)
        .and_then(Option::as_ref)
        .and_then(|m| m.kernels.get(name))
        .cloned()
        .ok_or(error::INVALID_DEVICE_FUNCTION)
}

/// The kernel behind a host stub (`hipLaunchKernel`), loaded on `device`.
pub fn kernel_for_stub(
    rt: &Runtime,
    host_function: usize,
    device: usize,
) -> Result<Arc<LoadedKernel>, HipError> {
    with_registry(|r| {
        let (id, name) = r
            .functions
            .get(&host_function)
            .ok_or(error::INVALID_DEVICE_FUNCTION)?;
        loaded_kernel(rt, &mut r.modules, *id, name, device)
    })
}

/// The kernel behind a `hipFunction_t` (`hipModuleLaunchKernel`), loaded on `device`.
pub fn kernel_for_function(
    rt: &Runtime,
    function: usize,
    device: usize,
) -> Result<Arc<LoadedKernel>, HipError> {
    with_registry(|r| {
        let f = r
            .function_handles
            .get(&function)
            .ok_or(error::INVALID_HANDLE)?;
        loaded_kernel(rt, &mut r.modules, f.module, &f.name, device)
    })
}

/// The kernel name behind a host stub (`hipKernelNameRefByPtr`), as a leaked-once C string.
pub fn stub_name(host_function: usize) -> Option<String> {
    with_registry(|r| r.functions.get(&host_function).map(|(_, n)| n.clone()))
}

/// The kernel name behind a `hipFunction_t` (`hipKernelNameRef`).
pub fn function_name(function: usize) -> Option<String> {
    with_registry(|r| r.function_handles.get(&function).map(|f| f.name.clone()))
}

/// Destroys every loaded module (teardown).
pub fn unload_all(rt: &Runtime) {
    with_registry(|r| {
        for module in r.modules.values_mut() {
            for loaded in module.loaded.iter_mut().filter_map(Option::take) {
                unload(&rt.hsa, &loaded);
            }
        }
    });
}
