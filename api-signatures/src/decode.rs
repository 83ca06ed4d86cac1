//! Captured words back into upstream's stringified arguments and return value.

use crate::ctype::CType;
use crate::{Place, Return, Shape, Signature, layout};

/// One call as the tool captured it.
#[derive(Debug, Clone, Copy)]
pub struct RawCall<'a> {
    /// `rax` after the call (for a struct returned in memory, its first 8 bytes).
    pub rax: u64,
    /// Integer registers captured.
    pub int_words: usize,
    /// Vector registers captured.
    pub sse_words: usize,
    /// Stack words captured.
    pub stack_words: usize,
    /// The words: integer registers, vector registers, stack words.
    pub words: &'a [u64],
    /// The C strings read at the call: (captured word, text).
    pub strings: &'a [(u8, String)],
}

/// One argument as upstream's iteration reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedArg {
    /// Position (0 = first).
    pub position: u32,
    /// `typeid(T).name()`, as upstream's JSON shows it (`Pv`, `m`, `13hipMemcpyKind`).
    pub mangled_type: String,
    /// The same demangled, as rocpd shows it (`void*`, `unsigned long`).
    pub type_name: String,
    /// The argument's name.
    pub name: &'static str,
    /// Its value as upstream stringifies it.
    pub value: String,
}

/// A decoded call: its arguments and its return value (`uint64_t_retval`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The arguments, in order.
    pub args: Vec<DecodedArg>,
    /// The return value as upstream's retval union holds it.
    pub retval: u64,
}

/// Decodes `raw` against `sig`. `None` when the capture does not have the shape the signature
/// implies (a log written by another build).
pub fn decode(sig: &Signature, raw: &RawCall<'_>) -> Option<Decoded> {
    let shape = Shape::of(sig);
    let total = raw.int_words + raw.sse_words + raw.stack_words;
    if (raw.int_words, raw.sse_words, raw.stack_words)
        != (shape.int_words(), shape.sse_words(), shape.stack_words())
        || raw.words.len() != total
    {
        return None;
    }
    let sse0 = raw.int_words;
    let stack0 = sse0 + raw.sse_words;
    let mut args = Vec::with_capacity(sig.args.len());
    for (k, (p, place)) in sig.args.iter().zip(layout(sig)).enumerate() {
        let t = CType::parse(p.c_type);
        let (first, count) = match place {
            Place::Int { first, count } => (first, count),
            Place::Sse { index } => (sse0 + index, 1),
            Place::Stack { first, count } => (stack0 + first, count),
        };
        let words = raw.words.get(first..first + count);
        let text = raw
            .strings
            .iter()
            .find(|(w, _)| usize::from(*w) == first)
            .map(|(_, s)| s.as_str());
        let value = match words {
            Some(w) => crate::format::value(&t, w, text),
            // Beyond the stack words the trampoline forwards.
            None => "?".to_owned(),
        };
        args.push(DecodedArg {
            position: k as u32,
            mangled_type: t.mangled(),
            type_name: t.demangled(),
            name: p.name,
            value,
        });
    }
    let retval = match sig.returns() {
        Return::Int32 => raw.rax & 0xffff_ffff,
        Return::Word | Return::InMemory => raw.rax,
        Return::Void => 0,
    };
    Some(Decoded { args, retval })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature;

    #[test]
    fn hip_memcpy_decodes_as_upstream_iterates_it() {
        let sig = signature("hipMemcpy").unwrap();
        let words = [0x7f12_3400_0000, 0x5555_0000_1000, 1 << 20, 1];
        let d = decode(
            sig,
            &RawCall {
                rax: 0xdead_0000_0000_0000,
                int_words: 4,
                sse_words: 0,
                stack_words: 0,
                words: &words,
                strings: &[],
            },
        )
        .unwrap();
        let got: Vec<(&str, &str, &str, &str)> = d
            .args
            .iter()
            .map(|a| {
                (
                    a.mangled_type.as_str(),
                    a.type_name.as_str(),
                    a.name,
                    a.value.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Pv", "void*", "dst", "0x7f1234000000"),
                ("PKv", "void const*", "src", "0x555500001000"),
                ("m", "unsigned long", "sizeBytes", "1048576"),
                ("13hipMemcpyKind", "hipMemcpyKind", "kind", "HostToDevice"),
            ]
        );
        // hipError_t: the low 32 bits.
        assert_eq!(d.retval, 0);
    }

    #[test]
    fn a_capture_of_another_shape_is_not_decoded() {
        let sig = signature("hipMemcpy").unwrap();
        let words = [1, 2, 3];
        let raw = RawCall {
            rax: 0,
            int_words: 3,
            sse_words: 0,
            stack_words: 0,
            words: &words,
            strings: &[],
        };
        assert!(decode(sig, &raw).is_none());
    }

    #[test]
    fn strings_and_stack_words() {
        let sig = signature("hipModuleGetFunction").unwrap();
        let strings = [(2u8, "saxpy_kernel".to_owned())];
        let d = decode(
            sig,
            &RawCall {
                rax: 0,
                int_words: 3,
                sse_words: 0,
                stack_words: 0,
                words: &[0x1000, 0x2000, 0x3000],
                strings: &strings,
            },
        )
        .unwrap();
        assert_eq!(d.args[2].value, "saxpy_kernel");
        assert_eq!(d.args[2].mangled_type, "PKc");
        let launch = signature("hipLaunchKernel").unwrap();
        let d = decode(
            launch,
            &RawCall {
                rax: 0,
                int_words: 6,
                sse_words: 0,
                stack_words: 2,
                words: &[0x10, (1 << 32) | 1024, 1, (1 << 32) | 256, 1, 0x20, 0, 0],
                strings: &[],
            },
        )
        .unwrap();
        let values: Vec<&str> = d.args.iter().map(|a| a.value.as_str()).collect();
        assert_eq!(
            values,
            [
                "0x10",
                "{z=1, y=1, x=1024}",
                "{z=1, y=1, x=256}",
                "0x20",
                "0",
                "0"
            ]
        );
    }
}
