//! An argument's value as upstream stringifies it (`stringize_arg` over `fmt`, falling back to
//! `operator<<`; its buffer-tracing iteration dereferences nothing):
//!
//! - C strings: the text (`(null)` for a null pointer);
//! - pointers: `0x` and lower-case hex; null is `0` for `void*`, opaque handles and functions
//!   (`operator<<`), `(null)` for pointers to defined types and to pointers; a non-null function
//!   pointer prints `1` (the stream's `bool` conversion);
//! - integers in decimal at their width and signedness, `bool` as `true`/`false`, `char` as the
//!   character;
//! - enums upstream gives a formatter: the enumerator's name without its prefix
//!   (`hipMemcpyHostToDevice` → `HostToDevice`), an unknown value as `<prefix>_UNKNOWN=<n>`;
//!   other enums as their integer;
//! - `dim3`: `{z=…, y=…, x=…}`.

use crate::ctype::{Base, CType};

/// An enum's values and the names upstream prints for them.
type Enumerators = &'static [(i64, &'static str)];

/// Enums upstream prints by name: (type, prefix in the unknown case, [(value, name)]).
const ENUMS: &[(&str, &str, Enumerators)] = &[
    (
        "hipMemcpyKind",
        "hipMemcpy",
        &[
            (0, "HostToHost"),
            (1, "HostToDevice"),
            (2, "DeviceToHost"),
            (3, "DeviceToDevice"),
            (4, "Default"),
            (1024, "DeviceToDeviceNoCU"),
        ],
    ),
    (
        "hipMemLocationType",
        "hipMemLocationType",
        &[(0, "Invalid"), (1, "Device")],
    ),
    (
        "hipMemAllocationType",
        "hipMemAllocationType",
        &[(0, "Invalid"), (1, "Pinned"), (0x7FFF_FFFF, "Max")],
    ),
    (
        "hipMemAllocationHandleType",
        "hipMemHandleType",
        &[
            (0, "None"),
            (1, "PosixFileDescriptor"),
            (2, "Win32"),
            (4, "Win32Kmt"),
        ],
    ),
    (
        "hipGraphInstantiateResult",
        "hipGraphInstantiate",
        &[
            (0, "Success"),
            (1, "Error"),
            (2, "InvalidStructure"),
            (3, "NodeOperationNotSupported"),
            (4, "MultipleDevicesNotSupported"),
        ],
    ),
];

/// The name upstream prints for value `v` of enum `type_name`, if it names that enum's values.
pub fn enum_name(type_name: &str, v: i64) -> Option<String> {
    let (_, prefix, values) = ENUMS.iter().find(|(t, _, _)| *t == type_name)?;
    Some(values.iter().find(|(n, _)| *n == v).map_or_else(
        || format!("{prefix}_UNKNOWN={v}"),
        |(_, name)| (*name).to_owned(),
    ))
}

/// The value of an argument of type `t` held in `words` (as many as its class takes), with
/// `text` the C string read at the call (for C-string arguments).
pub(crate) fn value(t: &CType, words: &[u64], text: Option<&str>) -> String {
    let w = words.first().copied().unwrap_or(0);
    if t.is_c_string() {
        return match (w, text) {
            (0, _) => "(null)".to_owned(),
            (_, Some(s)) => s.to_owned(),
            // Not readable at the call: the address.
            (_, None) => format!("{w:#x}"),
        };
    }
    if t.is_pointer() {
        if w == 0 {
            return if t.null_is_parenthesised() {
                "(null)"
            } else {
                "0"
            }
            .to_owned();
        }
        if matches!(t.base, Base::Function(..)) && t.pointers.len() == 1 {
            return "1".to_owned();
        }
        return format!("{w:#x}");
    }
    match &t.base {
        Base::Builtin(name) => builtin(name, w),
        Base::Named(name) if name == "dim3" || name == "rocprofiler_dim3_t" => {
            let z = words.get(1).copied().unwrap_or(0) as u32;
            format!("{{z={z}, y={}, x={}}}", (w >> 32) as u32, w as u32)
        }
        Base::Named(name) => enum_name(name, i64::from(w as u32 as i32))
            .unwrap_or_else(|| (w as u32 as i32).to_string()),
        Base::Function(..) => format!("{w:#x}"),
    }
}

fn builtin(name: &str, w: u64) -> String {
    match name {
        "bool" | "_Bool" => if w as u8 != 0 { "true" } else { "false" }.to_owned(),
        "char" => char::from(w as u8).to_string(),
        "signed char" => (w as i8).to_string(),
        "unsigned char" => (w as u8).to_string(),
        "short" | "short int" => (w as i16).to_string(),
        "unsigned short" | "unsigned short int" => (w as u16).to_string(),
        "int" | "signed int" | "signed" => (w as i32).to_string(),
        "unsigned" | "unsigned int" => (w as u32).to_string(),
        "long" | "long int" | "long long" | "long long int" => (w as i64).to_string(),
        "float" => f32::from_bits(w as u32).to_string(),
        "double" => f64::from_bits(w).to_string(),
        _ => w.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(t: &str, words: &[u64]) -> String {
        value(&CType::parse(t), words, None)
    }

    #[test]
    fn values_as_upstream_prints_them() {
        assert_eq!(v("void*", &[0x7f00_dead_beef]), "0x7f00deadbeef");
        assert_eq!(v("void*", &[0]), "0");
        assert_eq!(v("hipStream_t", &[0]), "0");
        assert_eq!(v("int*", &[0]), "(null)");
        assert_eq!(v("size_t", &[1_048_576]), "1048576");
        assert_eq!(v("int", &[u64::from(u32::MAX)]), "-1");
        assert_eq!(v("unsigned int", &[u64::MAX]), "4294967295");
        assert_eq!(v("hipMemcpyKind", &[1]), "HostToDevice");
        assert_eq!(v("hipMemcpyKind", &[2]), "DeviceToHost");
        assert_eq!(v("hipMemcpyKind", &[7]), "hipMemcpy_UNKNOWN=7");
        assert_eq!(v("hipError_t", &[0]), "0");
        assert_eq!(v("bool", &[1]), "true");
        assert_eq!(
            v("rocprofiler_dim3_t", &[(1 << 32) | 1024, 1]),
            "{z=1, y=1, x=1024}"
        );
        assert_eq!(v("hipHostFn_t", &[0x1234]), "1");
        assert_eq!(v("hipHostFn_t", &[0]), "0");
        assert_eq!(
            value(&CType::parse("const char*"), &[0x10], Some("saxpy")),
            "saxpy"
        );
        assert_eq!(value(&CType::parse("const char*"), &[0], None), "(null)");
    }
}
