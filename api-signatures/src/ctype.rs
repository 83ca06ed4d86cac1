//! C types as the signatures spell them: what `typeid` makes of them (the Itanium mangling
//! upstream's JSON shows, and its demangling, which rocpd shows), where the System V ABI puts a
//! value of them, and how upstream prints one.
//!
//! `typeid` sees through typedefs, so each typedef the traced APIs use is resolved to what it
//! names ([`TYPEDEFS`]: facts of the HIP, HSA and ROCTx headers). Top-level `const` is dropped
//! (upstream takes each argument by value through `std::make_pair`).

/// Typedefs the signatures use, with what they name (a spelling [`CType::parse`] reads).
const TYPEDEFS: &[(&str, &str)] = &[
    ("size_t", "unsigned long"),
    ("ssize_t", "long"),
    ("uintptr_t", "unsigned long"),
    ("uint8_t", "unsigned char"),
    ("int8_t", "signed char"),
    ("uint16_t", "unsigned short"),
    ("int16_t", "short"),
    ("uint32_t", "unsigned int"),
    ("int32_t", "int"),
    ("uint64_t", "unsigned long"),
    ("int64_t", "long"),
    ("hipDeviceptr_t", "void*"),
    ("hipStream_t", "ihipStream_t*"),
    ("hipEvent_t", "ihipEvent_t*"),
    ("hipModule_t", "ihipModule_t*"),
    ("hipFunction_t", "ihipModuleSymbol_t*"),
    ("hipCtx_t", "ihipCtx_t*"),
    ("hipGraph_t", "ihipGraph*"),
    ("hipGraphNode_t", "hipGraphNode*"),
    ("hipGraphExec_t", "hipGraphExec*"),
    ("hipUserObject_t", "hipUserObject*"),
    ("hipArray_t", "hipArray*"),
    ("hipArray_const_t", "const hipArray*"),
    ("hipMipmappedArray_t", "hipMipmappedArray*"),
    ("hipMipmappedArray_const_t", "const hipMipmappedArray*"),
    ("hipMemPool_t", "ihipMemPoolHandle_t*"),
    ("hipTextureObject_t", "__hip_texture*"),
    ("hipSurfaceObject_t", "__hip_surface*"),
    ("hipDevice_t", "int"),
    ("hipExternalMemory_t", "void*"),
    ("hipExternalSemaphore_t", "void*"),
    ("hipLinkState_t", "ihipLinkState_t*"),
    ("hipGraphicsResource_t", "hipGraphicsResource*"),
    (
        "hipMemGenericAllocationHandle_t",
        "ihipMemGenericAllocationHandle*",
    ),
    (
        "hipStreamCallback_t",
        "void (*)(ihipStream_t*, hipError_t, void*)",
    ),
    ("hipHostFn_t", "void (*)(void*)"),
    ("hsa_signal_value_t", "long"),
    ("roctx_range_id_t", "unsigned long"),
    ("roctx_thread_id_t", "unsigned long"),
];

/// Types whose objects are never defined in the headers (opaque handles): upstream prints a
/// null pointer to one as `0`, like `void*`, and a null pointer to a defined type as `(null)`.
const OPAQUE: &[&str] = &[
    "ihipStream_t",
    "ihipEvent_t",
    "ihipModule_t",
    "ihipModuleSymbol_t",
    "ihipCtx_t",
    "ihipGraph",
    "hipGraphNode",
    "hipGraphExec",
    "hipUserObject",
    "ihipMemPoolHandle_t",
    "__hip_texture",
    "__hip_surface",
    "ihipLinkState_t",
    "hipGraphicsResource",
    "ihipMemGenericAllocationHandle",
];

/// Aggregates passed by value, with their size in bytes and whether the ABI passes them in
/// memory (larger than 16 bytes) or in integer registers.
const AGGREGATES: &[(&str, usize)] = &[
    ("dim3", 12),
    ("rocprofiler_dim3_t", 12),
    ("hsa_dim3_t", 12),
    ("hipUUID", 16),
    ("hipMemLocation", 8),
    ("hipExtent", 24),
    ("hipPos", 24),
    ("hipPitchedPtr", 32),
    ("hipChannelFormatDesc", 20),
    ("hipIpcMemHandle_t", 64),
    ("hipIpcEventHandle_t", 64),
];

/// The built-in types: (spelling, mangling).
const BUILTINS: &[(&str, &str)] = &[
    ("void", "v"),
    ("bool", "b"),
    ("_Bool", "b"),
    ("char", "c"),
    ("signed char", "a"),
    ("unsigned char", "h"),
    ("short", "s"),
    ("short int", "s"),
    ("unsigned short", "t"),
    ("unsigned short int", "t"),
    ("int", "i"),
    ("signed int", "i"),
    ("signed", "i"),
    ("unsigned", "j"),
    ("unsigned int", "j"),
    ("long", "l"),
    ("long int", "l"),
    ("unsigned long", "m"),
    ("unsigned long int", "m"),
    ("long long", "x"),
    ("long long int", "x"),
    ("unsigned long long", "y"),
    ("unsigned long long int", "y"),
    ("float", "f"),
    ("double", "d"),
];

/// What a type is made of, after typedefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// A built-in type: its canonical spelling.
    Builtin(&'static str),
    /// A named enum, struct or union.
    Named(String),
    /// A function type: return type and parameter types.
    Function(Box<CType>, Vec<CType>),
}

/// A C type: a base, whether the base is `const`, and one entry per pointer level (innermost
/// first) saying whether that pointer is itself `const`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CType {
    /// The base type.
    pub base: Base,
    /// `const` on the base.
    pub base_const: bool,
    /// Pointer levels, innermost first (`true`: a `const` pointer).
    pub pointers: Vec<bool>,
}

/// Where the System V x86-64 ABI passes a value of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// In `n` integer registers (or `n` stack words when they do not fit).
    Integer(usize),
    /// In one vector register (or one stack word).
    Sse,
    /// In `n` stack words.
    Memory(usize),
}

impl CType {
    /// Reads a canonical spelling (`const void*`, `hipStream_t`, `void (*)(void*)`), resolving
    /// typedefs.
    pub fn parse(spelling: &str) -> CType {
        let s = spelling.trim();
        if let Some(star) = s.find("(*)") {
            let ret = CType::parse(&s[..star]);
            let params = s[star + 3..]
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')');
            let params: Vec<CType> = if params.trim().is_empty() || params.trim() == "void" {
                Vec::new()
            } else {
                params.split(',').map(CType::parse).collect()
            };
            return CType {
                base: Base::Function(Box::new(ret), params),
                base_const: false,
                pointers: vec![false],
            };
        }
        let stars = s.bytes().filter(|&b| b == b'*').count();
        let mut base_words: Vec<&str> = Vec::new();
        let mut base_const = false;
        let mut pointers = Vec::new();
        // Words before the first `*` make the base; `const` after a `*` qualifies that pointer.
        let (head, tail) = s.split_at(s.find('*').unwrap_or(s.len()));
        for w in head.split_whitespace() {
            if w == "const" {
                base_const = true;
            } else if w != "volatile" {
                base_words.push(w);
            }
        }
        for part in tail.split('*').skip(1) {
            pointers.push(part.split_whitespace().any(|w| w == "const"));
        }
        debug_assert_eq!(pointers.len(), stars);
        let base_name = base_words.join(" ");
        // The top-level `const` of a non-pointer is not part of the type upstream sees.
        if let Some((_, target)) = TYPEDEFS.iter().find(|(name, _)| *name == base_name) {
            let mut t = CType::parse(target);
            if base_const {
                match t.pointers.last_mut() {
                    // `const hipGraphNode_t*`: the const applies to the typedef's pointer.
                    Some(last) => *last = true,
                    None => t.base_const = !pointers.is_empty(),
                }
            }
            t.pointers.extend(pointers);
            return t;
        }
        let base = match BUILTINS.iter().find(|(name, _)| *name == base_name) {
            Some((name, _)) => Base::Builtin(name),
            None => Base::Named(base_name),
        };
        CType {
            base,
            base_const: base_const && !pointers.is_empty(),
            pointers,
        }
    }

    /// `typeid(T).name()` for the type (what upstream's JSON `args[].type` shows).
    pub fn mangled(&self) -> String {
        let mut out = String::new();
        // Pointer levels from the outermost in; a pointer's own const is top-level only for
        // the outermost (dropped), inner ones qualify their pointee.
        let levels = self.pointers.len();
        for k in (0..levels).rev() {
            out.push('P');
            let pointee_const = if k == 0 {
                self.base_const
            } else {
                self.pointers[k - 1]
            };
            if pointee_const {
                out.push('K');
            }
        }
        out.push_str(&self.base_mangled());
        out
    }

    fn base_mangled(&self) -> String {
        match &self.base {
            Base::Builtin(name) => BUILTINS
                .iter()
                .find(|(n, _)| n == name)
                .map_or("v", |(_, m)| m)
                .to_owned(),
            Base::Named(name) => format!("{}{name}", name.len()),
            Base::Function(ret, params) => {
                let mut s = format!("F{}", ret.mangled());
                if params.is_empty() {
                    s.push('v');
                }
                for p in params {
                    s.push_str(&p.mangled());
                }
                s.push('E');
                s
            }
        }
    }

    /// The type as `__cxa_demangle` spells `typeid(T).name()` (rocpd's `rocpd_arg.type`):
    /// `void const*`, `unsigned long`, `void (*)(void*)`.
    pub fn demangled(&self) -> String {
        if let Base::Function(ret, params) = &self.base {
            let params: Vec<String> = params.iter().map(CType::demangled).collect();
            let stars = "*".repeat(self.pointers.len());
            return format!("{} ({stars})({})", ret.demangled(), params.join(", "));
        }
        let mut out = match &self.base {
            Base::Builtin(name) => (*name).to_owned(),
            Base::Named(name) => name.clone(),
            Base::Function(..) => unreachable!("handled above"),
        };
        if self.base_const {
            out.push_str(" const");
        }
        let levels = self.pointers.len();
        for (k, &c) in self.pointers.iter().enumerate() {
            out.push('*');
            // The outermost pointer's own const is top-level: not part of the type.
            if c && k + 1 < levels {
                out.push_str(" const");
            }
        }
        out
    }

    /// Whether a value is a pointer.
    pub fn is_pointer(&self) -> bool {
        !self.pointers.is_empty()
    }

    /// Whether upstream prints a value of this type as a C string (`char*`, `const char*`).
    pub fn is_c_string(&self) -> bool {
        self.pointers.len() == 1 && self.base == Base::Builtin("char")
    }

    /// Where the ABI passes a value of this type.
    pub fn class(&self) -> Class {
        if self.is_pointer() {
            return Class::Integer(1);
        }
        match &self.base {
            Base::Builtin("float" | "double") => Class::Sse,
            Base::Named(name) => match AGGREGATES.iter().find(|(n, _)| n == name) {
                Some(&(_, size)) if size > 16 => Class::Memory(size.div_ceil(8)),
                Some(&(_, size)) => Class::Integer(size.div_ceil(8)),
                None => Class::Integer(1),
            },
            _ => Class::Integer(1),
        }
    }

    /// Whether upstream prints a null pointer of this type as `(null)` (a pointer to a defined
    /// type, or to a pointer) rather than `0` (a pointer to `void`, to an opaque handle type or
    /// to a function).
    pub fn null_is_parenthesised(&self) -> bool {
        match self.pointers.len() {
            0 => false,
            1 => match &self.base {
                Base::Builtin("void") | Base::Function(..) => false,
                Base::Named(n) => !OPAQUE.contains(&n.as_str()),
                Base::Builtin(_) => true,
            },
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(spelling: &str, mangled: &str, demangled: &str) {
        let t = CType::parse(spelling);
        assert_eq!(t.mangled(), mangled, "{spelling}");
        assert_eq!(t.demangled(), demangled, "{spelling}");
    }

    #[test]
    fn typeid_names_as_the_compiler_gives_them() {
        check("void*", "Pv", "void*");
        check("const void*", "PKv", "void const*");
        check("size_t", "m", "unsigned long");
        check("hipMemcpyKind", "13hipMemcpyKind", "hipMemcpyKind");
        check("hipStream_t", "P12ihipStream_t", "ihipStream_t*");
        check("const char*", "PKc", "char const*");
        check("void**", "PPv", "void**");
        check(
            "const hipGraphNode_t*",
            "PKP12hipGraphNode",
            "hipGraphNode* const*",
        );
        check("unsigned int", "j", "unsigned int");
        check(
            "rocprofiler_dim3_t",
            "18rocprofiler_dim3_t",
            "rocprofiler_dim3_t",
        );
        check("hipHostFn_t", "PFvPvE", "void (*)(void*)");
        check(
            "hipStreamCallback_t",
            "PFvP12ihipStream_t10hipError_tPvE",
            "void (*)(ihipStream_t*, hipError_t, void*)",
        );
    }

    #[test]
    fn demangled_spellings_agree_with_cxxfilt_where_it_exists() {
        let Ok(out) = std::process::Command::new("c++filt")
            .arg("-t")
            .args([
                "Pv",
                "PKv",
                "m",
                "13hipMemcpyKind",
                "PKP12hipGraphNode",
                "PPv",
            ])
            .output()
        else {
            eprintln!("c++filt not found: spellings checked against the table only");
            return;
        };
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let ours: Vec<String> = [
            "void*",
            "const void*",
            "size_t",
            "hipMemcpyKind",
            "const hipGraphNode_t*",
            "void**",
        ]
        .iter()
        .map(|s| CType::parse(s).demangled())
        .collect();
        assert_eq!(lines, ours);
    }

    #[test]
    fn classes() {
        assert_eq!(
            CType::parse("rocprofiler_dim3_t").class(),
            Class::Integer(2)
        );
        assert_eq!(CType::parse("hipExtent").class(), Class::Memory(3));
        assert_eq!(CType::parse("float").class(), Class::Sse);
        assert_eq!(CType::parse("hipMemcpyKind").class(), Class::Integer(1));
        assert!(CType::parse("const char*").is_c_string());
        assert!(CType::parse("char*").is_c_string());
        assert!(!CType::parse("const char**").is_c_string());
        assert!(!CType::parse("void*").null_is_parenthesised());
        assert!(!CType::parse("hipStream_t").null_is_parenthesised());
        assert!(CType::parse("int*").null_is_parenthesised());
        assert!(CType::parse("void**").null_is_parenthesised());
    }
}
