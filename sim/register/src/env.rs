//! Environment variables and how they are read.
//!
//! Reading is split from parsing so that the parsing rules are unit-tested
//! without touching the process environment.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// `ROCPROFILER_REGISTER_ENABLED` (default true): false turns every
/// registration into `NO_TOOLS`.
pub const ENABLED: &str = "ROCPROFILER_REGISTER_ENABLED";
/// `ROCPROFILER_REGISTER_VERBOSE`: true prints one stderr line per registration.
pub const VERBOSE: &str = "ROCPROFILER_REGISTER_VERBOSE";
/// `ROCP_TOOL_LIBRARIES`: ':'-separated tool libraries; implies force load.
pub const TOOL_LIBRARIES: &str = "ROCP_TOOL_LIBRARIES";
/// `ROCPROFILER_REGISTER_LIBRARY`: library holding `rocprofiler_set_api_table`;
/// implies force load.
pub const REGISTER_LIBRARY: &str = "ROCPROFILER_REGISTER_LIBRARY";
/// `ROCPROFILER_REGISTER_FORCE_LOAD`: overrides the force-load default.
pub const FORCE_LOAD: &str = "ROCPROFILER_REGISTER_FORCE_LOAD";

/// Upstream `get_env<bool>`: unset or empty → `default`; all digits → non-zero;
/// otherwise (case-insensitively) `off|false|no|n|f|0` → false, anything
/// else → true. (Upstream throws on an empty value; here it means "unset".)
pub fn parse_bool(value: Option<&OsStr>, default: bool) -> bool {
    let Some(value) = value else {
        return default;
    };
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return default;
    }
    if bytes.iter().all(u8::is_ascii_digit) {
        return bytes.iter().any(|&b| b != b'0');
    }
    let lower = bytes.to_ascii_lowercase();
    !matches!(
        lower.as_slice(),
        b"off" | b"false" | b"no" | b"n" | b"f" | b"0"
    )
}

/// A non-empty value, or `None` for unset and empty (upstream treats both as
/// "not set").
pub fn non_empty(value: Option<OsString>) -> Option<OsString> {
    value.filter(|v| !v.is_empty())
}

/// The ':'-separated entries of `ROCP_TOOL_LIBRARIES`, empty entries skipped.
/// Unlike the SDK of Aug 2025, the text after the last ':' is kept.
pub fn split_tool_libraries(value: &OsStr) -> Vec<&OsStr> {
    value
        .as_bytes()
        .split(|&b| b == b':')
        .filter(|part| !part.is_empty())
        .map(OsStr::from_bytes)
        .collect()
}

/// Everything tool discovery reads from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// `ROCP_TOOL_LIBRARIES`, if non-empty.
    pub tool_libraries: Option<OsString>,
    /// `ROCPROFILER_REGISTER_LIBRARY`, if non-empty.
    pub register_library: Option<OsString>,
    /// Effective force load: `ROCPROFILER_REGISTER_FORCE_LOAD` parsed with a
    /// default of "either library variable is set".
    pub force_load: bool,
}

impl ToolConfig {
    /// Builds the configuration from raw variable values.
    pub fn from_values(
        tool_libraries: Option<OsString>,
        register_library: Option<OsString>,
        force_load: Option<OsString>,
    ) -> ToolConfig {
        let tool_libraries = non_empty(tool_libraries);
        let register_library = non_empty(register_library);
        let default_force = tool_libraries.is_some() || register_library.is_some();
        let force_load = parse_bool(force_load.as_deref(), default_force);
        ToolConfig {
            tool_libraries,
            register_library,
            force_load,
        }
    }

    /// Reads the process environment.
    pub fn from_env() -> ToolConfig {
        ToolConfig::from_values(
            std::env::var_os(TOOL_LIBRARIES),
            std::env::var_os(REGISTER_LIBRARY),
            std::env::var_os(FORCE_LOAD),
        )
    }
}

/// `ROCPROFILER_REGISTER_ENABLED`, default true.
pub fn enabled() -> bool {
    parse_bool(std::env::var_os(ENABLED).as_deref(), true)
}

/// `ROCPROFILER_REGISTER_VERBOSE`, default false.
pub fn verbose() -> bool {
    parse_bool(std::env::var_os(VERBOSE).as_deref(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: &str, default: bool) -> bool {
        parse_bool(Some(OsStr::new(v)), default)
    }

    #[test]
    fn unset_and_empty_give_the_default() {
        assert!(parse_bool(None, true));
        assert!(!parse_bool(None, false));
        assert!(b("", true));
        assert!(!b("", false));
    }

    #[test]
    fn false_words_and_zero_are_false_whatever_the_default() {
        for v in [
            "0", "00", "off", "OFF", "Off", "false", "False", "FALSE", "no", "NO", "n", "N", "f",
            "F",
        ] {
            assert!(!b(v, true), "{v:?}");
            assert!(!b(v, false), "{v:?}");
        }
    }

    #[test]
    fn numbers_and_other_words_are_true_whatever_the_default() {
        for v in [
            "1",
            "2",
            "10",
            "007",
            "99999999999999999999999",
            "on",
            "true",
            "yes",
            "y",
            "t",
            "banana",
            " 0",
            "-1",
            "offf",
        ] {
            assert!(b(v, false), "{v:?}");
            assert!(b(v, true), "{v:?}");
        }
    }

    #[test]
    fn tool_libraries_split_on_colons_and_keep_the_last_entry() {
        let parts = split_tool_libraries(OsStr::new("/a/liba.so::libb.so:/c/libc.so:"));
        assert_eq!(parts, ["/a/liba.so", "libb.so", "/c/libc.so"]);
        assert_eq!(split_tool_libraries(OsStr::new("one.so")), ["one.so"]);
        assert!(split_tool_libraries(OsStr::new(":::")).is_empty());
    }

    fn os(v: &str) -> Option<OsString> {
        Some(OsString::from(v))
    }

    #[test]
    fn force_load_defaults_to_either_library_variable_being_set() {
        let none = ToolConfig::from_values(None, None, None);
        assert_eq!(none, ToolConfig::default());
        assert!(!none.force_load);

        let tools = ToolConfig::from_values(os("/x/libtool.so"), None, None);
        assert!(tools.force_load);
        assert_eq!(tools.tool_libraries, os("/x/libtool.so"));

        let reg = ToolConfig::from_values(None, os("libsdk.so"), None);
        assert!(reg.force_load);
        assert_eq!(reg.register_library, os("libsdk.so"));

        // Empty values count as unset.
        let empty = ToolConfig::from_values(os(""), os(""), None);
        assert_eq!(empty, ToolConfig::default());
    }

    #[test]
    fn force_load_variable_overrides_the_default_both_ways() {
        let off = ToolConfig::from_values(os("/x/libtool.so"), None, os("0"));
        assert!(!off.force_load);
        let on = ToolConfig::from_values(None, None, os("yes"));
        assert!(on.force_load);
        let empty = ToolConfig::from_values(None, os("lib.so"), os(""));
        assert!(empty.force_load);
    }
}
