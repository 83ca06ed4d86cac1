//! The stand-in for `DT_NEEDED` linking: `dlopen` by SONAME and typed function pointers
//! resolved all or nothing, with the missing symbol named.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

use crate::kernels::Dim3;

/// Why a runtime library could not be used.
#[derive(Debug)]
pub enum LoadError {
    /// `dlopen` failed.
    Open { library: String, reason: String },
    /// A symbol is missing.
    Symbol { library: String, symbol: String },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Open { library, reason } => write!(f, "cannot load {library}: {reason}"),
            LoadError::Symbol { library, symbol } => {
                write!(f, "{library} does not export {symbol}")
            }
        }
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".to_owned()
    } else {
        // SAFETY: non-null and NUL-terminated.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

/// A library opened by SONAME (never closed, like a `DT_NEEDED` dependency).
pub struct Library {
    name: String,
    handle: *mut c_void,
}

// SAFETY: a dlopen handle may be used with dlsym from any thread.
unsafe impl Send for Library {}
// SAFETY: as above; the handle is never mutated or closed.
unsafe impl Sync for Library {}

impl Library {
    /// `dlopen(soname, RTLD_NOW | RTLD_GLOBAL)`.
    pub fn open(soname: &str) -> Result<Library, LoadError> {
        let c = CString::new(soname).map_err(|e| LoadError::Open {
            library: soname.to_owned(),
            reason: e.to_string(),
        })?;
        // SAFETY: dlopen with a NUL-terminated name.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            return Err(LoadError::Open {
                library: soname.to_owned(),
                reason: dl_error(),
            });
        }
        Ok(Library {
            name: soname.to_owned(),
            handle,
        })
    }

    /// The address of `symbol`.
    pub fn symbol(&self, symbol: &str) -> Result<*mut c_void, LoadError> {
        let missing = || LoadError::Symbol {
            library: self.name.clone(),
            symbol: symbol.to_owned(),
        };
        let c = CString::new(symbol).map_err(|_| missing())?;
        // SAFETY: a live handle and a NUL-terminated name.
        let address = unsafe { libc::dlsym(self.handle, c.as_ptr()) };
        if address.is_null() {
            Err(missing())
        } else {
            Ok(address)
        }
    }
}

macro_rules! c_api {
    ($(#[$meta:meta])* $vis:vis struct $Name:ident from $soname:literal {
        $( $field:ident = $symbol:literal : fn($($arg:ty),*) $(-> $ret:ty)?; )*
    }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $Name {
            $( pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
        }

        impl $Name {
            /// The SONAME this API is loaded from.
            pub const SONAME: &'static str = $soname;

            /// Opens the library and resolves every function (all or nothing).
            pub fn load() -> Result<$Name, LoadError> {
                let lib = Library::open($soname)?;
                Ok($Name {
                    $( $field: {
                        let address = lib.symbol($symbol)?;
                        // SAFETY: the export has this C signature (the runtime's public ABI).
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address) }
                    }, )*
                })
            }
        }
    };
}

c_api! {
    /// The HIP runtime and compiler entry points the workloads call.
    pub struct Hip from "libamdhip64.so.7" {
        get_device_count = "hipGetDeviceCount": fn(*mut c_int) -> u32;
        set_device = "hipSetDevice": fn(c_int) -> u32;
        get_device = "hipGetDevice": fn(*mut c_int) -> u32;
        get_device_properties = "hipGetDevicePropertiesR0600": fn(*mut c_void, c_int) -> u32;
        runtime_get_version = "hipRuntimeGetVersion": fn(*mut c_int) -> u32;
        malloc = "hipMalloc": fn(*mut *mut c_void, usize) -> u32;
        free = "hipFree": fn(*mut c_void) -> u32;
        memcpy = "hipMemcpy": fn(*mut c_void, *const c_void, usize, u32) -> u32;
        launch_kernel = "hipLaunchKernel": fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, *mut c_void) -> u32;
        get_last_error = "hipGetLastError": fn() -> u32;
        device_synchronize = "hipDeviceSynchronize": fn() -> u32;
        get_error_string = "hipGetErrorString": fn(u32) -> *const c_char;
        register_fat_binary = "__hipRegisterFatBinary": fn(*const c_void) -> *mut *mut c_void;
        register_function = "__hipRegisterFunction": fn(*mut *mut c_void, *const c_void, *mut c_char, *const c_char, u32, *mut c_void, *mut c_void, *mut Dim3, *mut Dim3, *mut c_int);
        push_call_configuration = "__hipPushCallConfiguration": fn(Dim3, Dim3, usize, *mut c_void) -> u32;
        pop_call_configuration = "__hipPopCallConfiguration": fn(*mut Dim3, *mut Dim3, *mut usize, *mut *mut c_void) -> u32;
        unregister_fat_binary = "__hipUnregisterFatBinary": fn(*mut *mut c_void);
    }
}

c_api! {
    /// The ROCTx ranges the workloads mark.
    pub struct Roctx from "librocprofiler-sdk-roctx.so.1" {
        range_push_a = "roctxRangePushA": fn(*const c_char) -> c_int;
        range_pop = "roctxRangePop": fn() -> c_int;
        profiler_pause = "roctxProfilerPause": fn(u64) -> c_int;
        profiler_resume = "roctxProfilerResume": fn(u64) -> c_int;
    }
}

/// `hsa_signal_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HsaSignal {
    /// Opaque handle.
    pub handle: u64,
}

c_api! {
    /// The HSA calls of `hsa-rate`.
    pub struct Hsa from "libhsa-runtime64.so.1" {
        init = "hsa_init": fn() -> u32;
        shut_down = "hsa_shut_down": fn() -> u32;
        signal_create = "hsa_signal_create": fn(i64, u32, *const c_void, *mut HsaSignal) -> u32;
        signal_destroy = "hsa_signal_destroy": fn(HsaSignal) -> u32;
        signal_load_relaxed = "hsa_signal_load_relaxed": fn(HsaSignal) -> i64;
    }
}

/// Loads an API or exits with status 2 and a message naming the variable to set.
pub fn load_or_exit<T>(load: fn() -> Result<T, LoadError>) -> T {
    load().unwrap_or_else(|e| {
        eprintln!("{}: {e}", crate::program_name());
        eprintln!(
            "{}: the simulated ROCm libraries were not found; {}",
            crate::program_name(),
            crate::HOW_TO_RUN
        );
        std::process::exit(2)
    })
}

/// The value of `result`, or exits with status 2 and one line: the error and
/// [`crate::HOW_TO_RUN`] (for the workloads that open a library themselves).
pub fn or_exit<T>(result: Result<T, LoadError>) -> T {
    result.unwrap_or_else(|e| {
        eprintln!("{}: {e}; {}", crate::program_name(), crate::HOW_TO_RUN);
        std::process::exit(2)
    })
}

static HIP: OnceLock<Hip> = OnceLock::new();
static ROCTX: OnceLock<Roctx> = OnceLock::new();

/// Loads HIP and ROCTx (the stand-in for the program's `DT_NEEDED` entries); exits with 2 if
/// they cannot be loaded.
pub fn load_runtimes() {
    HIP.get_or_init(|| load_or_exit(Hip::load));
    ROCTX.get_or_init(|| load_or_exit(Roctx::load));
}

/// The loaded HIP runtime ([`load_runtimes`] must have run).
pub fn hip() -> &'static Hip {
    HIP.get_or_init(|| load_or_exit(Hip::load))
}

/// The loaded ROCTx library.
pub fn roctx() -> &'static Roctx {
    ROCTX.get_or_init(|| load_or_exit(Roctx::load))
}

/// Checks a `hipError_t`, exiting with 1 and HIP's message on failure.
pub fn check(what: &str, code: u32) {
    if code != 0 {
        // SAFETY: hipGetErrorString returns a static string.
        let text = unsafe { CStr::from_ptr((hip().get_error_string)(code)) }.to_string_lossy();
        crate::fail(&format!("{what} failed: {text} ({code})"));
    }
}
