//! `rocprofiler_register_error_code_t`: values, names and messages.
//!
//! The values are consecutive from 0 in the order of the newest upstream
//! header (`INVALID_ARGUMENT` and `ATTACHMENT_NOT_AVAILABLE` were added late).
//! The messages are the ones the upstream `rocprofiler_register_error_string`
//! returns, so diagnostics read the same as on a real system.

use std::ffi::{CStr, c_int};

/// C type of the error code (a C enum, `int`-sized on the SysV ABI).
#[allow(non_camel_case_types)]
pub type rocprofiler_register_error_code_t = c_int;

/// Every error code the library can return, plus the end marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    /// The tables were handed to a tool.
    Success = 0,
    /// No tool was found (or registration is disabled).
    NoTools = 1,
    /// The calling thread re-entered registration from inside the tool.
    Deadlock = 2,
    /// `api_table_length` was 0.
    BadApiTableLength = 3,
    /// The library name is not one of the supported ones.
    UnsupportedApi = 4,
    /// Secure mode rejected the import function (not modelled; never returned).
    InvalidApiAddress = 5,
    /// The tool's `rocprofiler_set_api_table` returned non-zero.
    RocprofilerError = 6,
    /// More than [`crate::MAX_INSTANCES`] registrations of one library.
    ExcessApiInstances = 7,
    /// A required pointer argument was null.
    InvalidArgument = 8,
    /// Late attach was requested without the attach library (not modelled).
    AttachmentNotAvailable = 9,
    /// One past the last code.
    ErrorCodeEnd = 10,
}

impl ErrorCode {
    /// All codes in value order, `ErrorCodeEnd` last.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::Success,
        ErrorCode::NoTools,
        ErrorCode::Deadlock,
        ErrorCode::BadApiTableLength,
        ErrorCode::UnsupportedApi,
        ErrorCode::InvalidApiAddress,
        ErrorCode::RocprofilerError,
        ErrorCode::ExcessApiInstances,
        ErrorCode::InvalidArgument,
        ErrorCode::AttachmentNotAvailable,
        ErrorCode::ErrorCodeEnd,
    ];

    /// The C value.
    pub const fn raw(self) -> rocprofiler_register_error_code_t {
        self as c_int
    }

    /// The code with the given C value, if there is one.
    pub fn from_raw(raw: c_int) -> Option<ErrorCode> {
        usize::try_from(raw)
            .ok()
            .and_then(|idx| ErrorCode::ALL.get(idx).copied())
    }

    /// The enumerator name of the C header, e.g. `ROCP_REG_NO_TOOLS`.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::Success => "ROCP_REG_SUCCESS",
            ErrorCode::NoTools => "ROCP_REG_NO_TOOLS",
            ErrorCode::Deadlock => "ROCP_REG_DEADLOCK",
            ErrorCode::BadApiTableLength => "ROCP_REG_BAD_API_TABLE_LENGTH",
            ErrorCode::UnsupportedApi => "ROCP_REG_UNSUPPORTED_API",
            ErrorCode::InvalidApiAddress => "ROCP_REG_INVALID_API_ADDRESS",
            ErrorCode::RocprofilerError => "ROCP_REG_ROCPROFILER_ERROR",
            ErrorCode::ExcessApiInstances => "ROCP_REG_EXCESS_API_INSTANCES",
            ErrorCode::InvalidArgument => "ROCP_REG_INVALID_ARGUMENT",
            ErrorCode::AttachmentNotAvailable => "ROCP_REG_ATTACHMENT_NOT_AVAILABLE",
            ErrorCode::ErrorCodeEnd => "ROCP_REG_ERROR_CODE_END",
        }
    }

    /// The NUL-terminated message `rocprofiler_register_error_string` returns.
    pub const fn message(self) -> &'static CStr {
        match self {
            ErrorCode::Success => c"Success",
            ErrorCode::NoTools => c"rocprofiler-register found no tools",
            ErrorCode::Deadlock => c"rocprofiler-register deadlocked",
            ErrorCode::BadApiTableLength => c"Library passed an invalid number of API tables",
            ErrorCode::UnsupportedApi => c"Library's API is not supported",
            ErrorCode::InvalidApiAddress => c"Invalid API address (secure mode enabled)",
            ErrorCode::RocprofilerError => c"Unspecified rocprofiler-register error",
            ErrorCode::ExcessApiInstances => {
                c"Too many instances of the same library API were registered"
            }
            ErrorCode::InvalidArgument => {
                c"rocprofiler-register API function was provided an invalid argument"
            }
            ErrorCode::AttachmentNotAvailable => {
                c"rocprofiler-register attach was invoked, but the attachment library was never loaded."
            }
            ErrorCode::ErrorCodeEnd => UNKNOWN_ERROR,
        }
    }
}

/// Message for values outside the enumeration (and for `ERROR_CODE_END`).
pub const UNKNOWN_ERROR: &CStr = c"rocprofiler_register_unknown_error";

/// The message for any C value, known or not.
pub fn message_for_raw(raw: c_int) -> &'static CStr {
    ErrorCode::from_raw(raw).map_or(UNKNOWN_ERROR, ErrorCode::message)
}

/// `ROCP_REG_SUCCESS`.
pub const ROCP_REG_SUCCESS: c_int = ErrorCode::Success.raw();
/// `ROCP_REG_NO_TOOLS`.
pub const ROCP_REG_NO_TOOLS: c_int = ErrorCode::NoTools.raw();
/// `ROCP_REG_DEADLOCK`.
pub const ROCP_REG_DEADLOCK: c_int = ErrorCode::Deadlock.raw();
/// `ROCP_REG_BAD_API_TABLE_LENGTH`.
pub const ROCP_REG_BAD_API_TABLE_LENGTH: c_int = ErrorCode::BadApiTableLength.raw();
/// `ROCP_REG_UNSUPPORTED_API`.
pub const ROCP_REG_UNSUPPORTED_API: c_int = ErrorCode::UnsupportedApi.raw();
/// `ROCP_REG_INVALID_API_ADDRESS`.
pub const ROCP_REG_INVALID_API_ADDRESS: c_int = ErrorCode::InvalidApiAddress.raw();
/// `ROCP_REG_ROCPROFILER_ERROR`.
pub const ROCP_REG_ROCPROFILER_ERROR: c_int = ErrorCode::RocprofilerError.raw();
/// `ROCP_REG_EXCESS_API_INSTANCES`.
pub const ROCP_REG_EXCESS_API_INSTANCES: c_int = ErrorCode::ExcessApiInstances.raw();
/// `ROCP_REG_INVALID_ARGUMENT`.
pub const ROCP_REG_INVALID_ARGUMENT: c_int = ErrorCode::InvalidArgument.raw();
/// `ROCP_REG_ATTACHMENT_NOT_AVAILABLE`.
pub const ROCP_REG_ATTACHMENT_NOT_AVAILABLE: c_int = ErrorCode::AttachmentNotAvailable.raw();
/// `ROCP_REG_ERROR_CODE_END`.
pub const ROCP_REG_ERROR_CODE_END: c_int = ErrorCode::ErrorCodeEnd.raw();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_consecutive_from_zero_in_header_order() {
        for (idx, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(code.raw() as usize, idx, "{code:?}");
            assert_eq!(ErrorCode::from_raw(code.raw()), Some(*code));
        }
        assert_eq!(ROCP_REG_NO_TOOLS, 1);
        assert_eq!(ROCP_REG_EXCESS_API_INSTANCES, 7);
        assert_eq!(ROCP_REG_INVALID_ARGUMENT, 8);
        assert_eq!(ROCP_REG_ERROR_CODE_END, 10);
    }

    #[test]
    fn out_of_range_values_have_no_code_and_the_unknown_message() {
        for raw in [-1, 11, 100, c_int::MIN, c_int::MAX] {
            assert_eq!(ErrorCode::from_raw(raw), None, "{raw}");
            assert_eq!(message_for_raw(raw), UNKNOWN_ERROR, "{raw}");
        }
        assert_eq!(message_for_raw(ROCP_REG_ERROR_CODE_END), UNKNOWN_ERROR);
    }

    #[test]
    fn messages_are_distinct_for_real_codes() {
        let real = &ErrorCode::ALL[..ErrorCode::ALL.len() - 1];
        for (i, a) in real.iter().enumerate() {
            assert_ne!(a.message(), UNKNOWN_ERROR, "{a:?}");
            for b in &real[i + 1..] {
                assert_ne!(a.message(), b.message(), "{a:?} vs {b:?}");
                assert_ne!(a.name(), b.name());
            }
        }
        assert_eq!(
            message_for_raw(ROCP_REG_NO_TOOLS).to_str(),
            Ok("rocprofiler-register found no tools")
        );
    }
}
