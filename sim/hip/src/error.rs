//! `hipError_t`: codes, names, descriptions, and the per-thread last error.

use std::cell::Cell;
use std::ffi::{CStr, c_char};

/// `hipError_t` (a 4-byte C enum).
pub type HipError = u32;

/// `hipSuccess`.
pub const SUCCESS: HipError = 0;
/// `hipErrorInvalidValue`.
pub const INVALID_VALUE: HipError = 1;
/// `hipErrorOutOfMemory`.
pub const OUT_OF_MEMORY: HipError = 2;
/// `hipErrorNotInitialized`.
pub const NOT_INITIALIZED: HipError = 3;
/// `hipErrorDeinitialized`.
pub const DEINITIALIZED: HipError = 4;
/// `hipErrorInvalidConfiguration`.
pub const INVALID_CONFIGURATION: HipError = 9;
/// `hipErrorInvalidDevicePointer`.
pub const INVALID_DEVICE_POINTER: HipError = 17;
/// `hipErrorInvalidMemcpyDirection`.
pub const INVALID_MEMCPY_DIRECTION: HipError = 21;
/// `hipErrorMissingConfiguration`.
pub const MISSING_CONFIGURATION: HipError = 52;
/// `hipErrorInvalidDeviceFunction`.
pub const INVALID_DEVICE_FUNCTION: HipError = 98;
/// `hipErrorNoDevice`.
pub const NO_DEVICE: HipError = 100;
/// `hipErrorInvalidDevice`.
pub const INVALID_DEVICE: HipError = 101;
/// `hipErrorInvalidImage`.
pub const INVALID_IMAGE: HipError = 200;
/// `hipErrorInvalidHandle` (`hipErrorInvalidResourceHandle`).
pub const INVALID_HANDLE: HipError = 400;
/// `hipErrorNotFound`.
pub const NOT_FOUND: HipError = 500;
/// `hipErrorNotReady`.
pub const NOT_READY: HipError = 600;
/// `hipErrorLaunchOutOfResources`.
pub const LAUNCH_OUT_OF_RESOURCES: HipError = 701;
/// `hipErrorLaunchTimeOut`.
pub const LAUNCH_TIMEOUT: HipError = 702;
/// `hipErrorNotSupported`.
pub const NOT_SUPPORTED: HipError = 801;
/// `hipErrorUnknown`.
pub const UNKNOWN: HipError = 999;

/// (code, name, description) of every code `hipGetErrorName`/`hipGetErrorString` know.
const ERRORS: &[(HipError, &CStr, &CStr)] = &[
    (0, c"hipSuccess", c"no error"),
    (1, c"hipErrorInvalidValue", c"invalid argument"),
    (2, c"hipErrorOutOfMemory", c"out of memory"),
    (3, c"hipErrorNotInitialized", c"initialization error"),
    (4, c"hipErrorDeinitialized", c"driver shutting down"),
    (
        5,
        c"hipErrorProfilerDisabled",
        c"profiler disabled while using external profiling tool",
    ),
    (
        6,
        c"hipErrorProfilerNotInitialized",
        c"profiler is not initialized",
    ),
    (
        7,
        c"hipErrorProfilerAlreadyStarted",
        c"profiler already started",
    ),
    (
        8,
        c"hipErrorProfilerAlreadyStopped",
        c"profiler already stopped",
    ),
    (
        9,
        c"hipErrorInvalidConfiguration",
        c"invalid configuration argument",
    ),
    (12, c"hipErrorInvalidPitchValue", c"invalid pitch argument"),
    (13, c"hipErrorInvalidSymbol", c"invalid device symbol"),
    (
        17,
        c"hipErrorInvalidDevicePointer",
        c"invalid device pointer",
    ),
    (
        21,
        c"hipErrorInvalidMemcpyDirection",
        c"invalid copy direction for memcpy",
    ),
    (
        35,
        c"hipErrorInsufficientDriver",
        c"driver version is insufficient for runtime version",
    ),
    (
        52,
        c"hipErrorMissingConfiguration",
        c"__global__ function call is not configured",
    ),
    (
        53,
        c"hipErrorPriorLaunchFailure",
        c"unspecified launch failure in prior launch",
    ),
    (
        98,
        c"hipErrorInvalidDeviceFunction",
        c"invalid device function",
    ),
    (
        100,
        c"hipErrorNoDevice",
        c"no ROCm-capable device is detected",
    ),
    (101, c"hipErrorInvalidDevice", c"invalid device ordinal"),
    (
        200,
        c"hipErrorInvalidImage",
        c"device kernel image is invalid",
    ),
    (201, c"hipErrorInvalidContext", c"invalid device context"),
    (
        209,
        c"hipErrorNoBinaryForGpu",
        c"no kernel image is available for execution on the device",
    ),
    (301, c"hipErrorFileNotFound", c"file not found"),
    (400, c"hipErrorInvalidHandle", c"invalid resource handle"),
    (500, c"hipErrorNotFound", c"named symbol not found"),
    (600, c"hipErrorNotReady", c"device not ready"),
    (
        700,
        c"hipErrorIllegalAddress",
        c"an illegal memory access was encountered",
    ),
    (
        701,
        c"hipErrorLaunchOutOfResources",
        c"too many resources requested for launch",
    ),
    (
        702,
        c"hipErrorLaunchTimeOut",
        c"the launch timed out and was terminated",
    ),
    (719, c"hipErrorLaunchFailure", c"unspecified launch failure"),
    (801, c"hipErrorNotSupported", c"operation not supported"),
    (999, c"hipErrorUnknown", c"unknown error"),
    (
        1052,
        c"hipErrorRuntimeMemory",
        c"runtime memory call returned error",
    ),
    (
        1053,
        c"hipErrorRuntimeOther",
        c"runtime call other than memory returned error",
    ),
];

/// `hipGetErrorName`: a static string; unknown codes give `"hipErrorUnknown"`.
pub fn name(code: HipError) -> &'static CStr {
    ERRORS
        .iter()
        .find(|(c, _, _)| *c == code)
        .map_or(c"hipErrorUnknown", |(_, n, _)| n)
}

/// `hipGetErrorString`: a static string; unknown codes give `"unknown error"`.
pub fn description(code: HipError) -> &'static CStr {
    ERRORS
        .iter()
        .find(|(c, _, _)| *c == code)
        .map_or(c"unknown error", |(_, _, d)| d)
}

/// Every known code (for tests and `hipGetErrorName` completeness checks).
pub fn known_codes() -> impl Iterator<Item = HipError> {
    ERRORS.iter().map(|(c, _, _)| *c)
}

/// Pointer form of [`name`] / [`description`] for the C ABI.
pub fn as_ptr(s: &'static CStr) -> *const c_char {
    s.as_ptr()
}

thread_local! {
    static LAST_ERROR: Cell<HipError> = const { Cell::new(SUCCESS) };
}

/// Records an API result the way HIP's `HIP_RETURN` does: any error other than
/// `hipErrorNotReady` becomes the thread's last error; a success leaves it unchanged.
pub fn record(result: HipError) -> HipError {
    if result != SUCCESS && result != NOT_READY {
        LAST_ERROR.with(|e| e.set(result));
    }
    result
}

/// `hipGetLastError`: returns the thread's last error and resets it to `hipSuccess`.
pub fn take_last() -> HipError {
    LAST_ERROR.with(|e| e.replace(SUCCESS))
}

/// `hipPeekAtLastError`: returns the thread's last error without resetting it.
pub fn peek_last() -> HipError {
    LAST_ERROR.with(Cell::get)
}
