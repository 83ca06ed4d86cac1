//! Layout-checked C structs.
//!
//! [`c_struct!`] declares a struct from a list of `field: Type @ offset` entries, asserts at
//! compile time that the struct has the stated size and every field the stated offset (numbers
//! taken from the real C headers), and records the C spelling of the struct and its fields so
//! tools (`cargo xtask abi-dump`) can print the layout for comparison with the header.

#![no_std]

/// One member of a C struct as laid out in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Member name, spelled as in the C header.
    pub name: &'static str,
    /// Byte offset from the start of the struct.
    pub offset: usize,
    /// Size of the member in bytes.
    pub size: usize,
}

/// A struct whose layout mirrors a C declaration.
pub trait CLayout {
    /// The struct's name as spelled in C.
    const C_NAME: &'static str;
    /// `sizeof` of the C struct.
    const SIZE: usize;
    /// Every member in declaration order.
    const FIELDS: &'static [Field];
}

/// A type-erased view of a [`CLayout`], for listing many structs together.
#[derive(Debug, Clone, Copy)]
pub struct LayoutInfo {
    /// The struct's name as spelled in C.
    pub c_name: &'static str,
    /// The Rust type that mirrors it.
    pub rust_name: &'static str,
    /// `sizeof` of the struct.
    pub size: usize,
    /// Every member in declaration order.
    pub fields: &'static [Field],
}

impl LayoutInfo {
    /// The layout of `T`.
    pub const fn of<T: CLayout>(rust_name: &'static str) -> Self {
        Self {
            c_name: T::C_NAME,
            rust_name,
            size: T::SIZE,
            fields: T::FIELDS,
        }
    }
}

/// Declares a C-mirroring struct and asserts its layout at compile time.
///
/// ```
/// c_layout::c_struct! {
///     /// Example.
///     #[repr(C)]
///     #[derive(Debug, Clone, Copy)]
///     pub struct Pair as "PAIR", size 8 {
///         pub Low: u32 => 0,
///         pub High: i32 => 4,
///     }
/// }
/// use c_layout::CLayout;
/// assert_eq!(Pair::FIELDS[1].offset, 4);
/// ```
#[macro_export]
macro_rules! c_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident as $cname:literal, size $size:literal {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty => $off:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field : $ty ),*
        }

        const _: () = {
            assert!(
                ::core::mem::size_of::<$name>() == $size,
                concat!("sizeof(", $cname, ") mismatch for ", stringify!($name))
            );
            $(
                assert!(
                    ::core::mem::offset_of!($name, $field) == $off,
                    concat!("offsetof(", $cname, ", ", stringify!($field), ") mismatch")
                );
            )*
        };

        impl $crate::CLayout for $name {
            const C_NAME: &'static str = $cname;
            const SIZE: usize = $size;
            const FIELDS: &'static [$crate::Field] = &[
                $( $crate::Field {
                    name: stringify!($field),
                    offset: $off,
                    size: ::core::mem::size_of::<$ty>(),
                } ),*
            ];
        }
    };
}

/// Writes one tab-separated line per member (`struct`, `member`, `offset`, `size`) and a closing
/// `<sizeof>` line, the format of the reference tables in `abi/`.
pub fn write_tsv(out: &mut impl core::fmt::Write, layout: &LayoutInfo) -> core::fmt::Result {
    for f in layout.fields {
        // Rust raw identifiers (`r#type`) are spelled without the prefix in C.
        let name = f.name.trim_start_matches("r#");
        writeln!(out, "{}\t{}\t{}\t{}", layout.c_name, name, f.offset, f.size)?;
    }
    writeln!(out, "{}\t<sizeof>\t0\t{}", layout.c_name, layout.size)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    c_struct! {
        #[repr(C, packed(4))]
        struct Packed as "PACKED", size 12 {
            A: u32 => 0,
            B: u64 => 4,
        }
    }

    #[test]
    fn fields_and_tsv_follow_the_declaration() {
        let info = LayoutInfo::of::<Packed>("Packed");
        assert_eq!(info.fields.len(), 2);
        assert_eq!(
            info.fields[1],
            Field {
                name: "B",
                offset: 4,
                size: 8
            }
        );
        let mut s = String::new();
        write_tsv(&mut s, &info).unwrap();
        assert_eq!(
            s,
            "PACKED\tA\t0\t4\nPACKED\tB\t4\t8\nPACKED\t<sizeof>\t0\t12\n"
        );
    }
}
