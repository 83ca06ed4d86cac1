//! `HSAKMT_STATUS`, the status code every hsaKmt entry point returns.

use core::fmt;

/// Status returned by the hsaKmt entry points (a C enum, so an `int` on the ABI).
///
/// A newtype rather than a Rust `enum`: the thunk may return values this crate does not know,
/// and every `i32` must stay representable.
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[must_use]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HSAKMT_STATUS(pub i32);

macro_rules! statuses {
    ($($name:ident = $value:literal,)*) => {
        impl HSAKMT_STATUS {
            $(
                #[doc = concat!("`HSAKMT_STATUS_", stringify!($name), "` (", stringify!($value), ").")]
                pub const $name: Self = Self($value);
            )*

            /// The C name without its `HSAKMT_STATUS_` prefix, if the value is a known one.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($name)), )*
                    _ => None,
                }
            }
        }
    };
}

statuses! {
    SUCCESS = 0,
    ERROR = 1,
    DRIVER_MISMATCH = 2,
    INVALID_PARAMETER = 3,
    INVALID_HANDLE = 4,
    INVALID_NODE_UNIT = 5,
    NO_MEMORY = 6,
    BUFFER_TOO_SMALL = 7,
    NOT_IMPLEMENTED = 10,
    NOT_SUPPORTED = 11,
    UNAVAILABLE = 12,
    OUT_OF_RESOURCES = 13,
    KERNEL_IO_CHANNEL_NOT_OPENED = 20,
    KERNEL_COMMUNICATION_ERROR = 21,
    KERNEL_ALREADY_OPENED = 22,
    HSAMMU_UNAVAILABLE = 23,
    WAIT_FAILURE = 30,
    WAIT_TIMEOUT = 31,
    MEMORY_ALREADY_REGISTERED = 35,
    MEMORY_NOT_REGISTERED = 36,
    MEMORY_ALIGNMENT = 37,
}

impl HSAKMT_STATUS {
    /// True for `SUCCESS` only.
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for HSAKMT_STATUS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{} (unknown status)", self.0),
        }
    }
}

impl fmt::Debug for HSAKMT_STATUS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_values_format() {
        assert_eq!(
            HSAKMT_STATUS::KERNEL_ALREADY_OPENED.to_string(),
            "22 (KERNEL_ALREADY_OPENED)"
        );
        assert_eq!(HSAKMT_STATUS(99).to_string(), "99 (unknown status)");
        assert!(HSAKMT_STATUS::SUCCESS.is_success());
        assert!(!HSAKMT_STATUS::ERROR.is_success());
    }
}
