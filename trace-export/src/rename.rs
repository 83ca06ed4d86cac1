//! How kernels are named in every output.
//!
//! - Demangling and truncation (rocprofv3's default, `-M`/`--mangled-kernels` and
//!   `-T`/`--truncate-kernels`): [`rename_kernels`] rewrites the names of a trace's kernel
//!   symbols in place, once, before any writer runs.
//! - `--kernel-rename`: a dispatch takes the message of the innermost ROCTx range
//!   (`roctxRangePushA`/`roctxRangePop`, per thread) open on its launching thread when it was
//!   launched; a dispatch outside any range keeps its kernel name. The tool notes the range in
//!   each dispatch record ([`KernelDispatchRecord::region`]); every writer names a dispatch
//!   through [`dispatch_name`], so `kernel_trace.csv`, the stats, `counter_collection.csv`,
//!   rocpd (`region_name_id`), JSON and Perfetto agree. Without `--kernel-rename` the CLI calls
//!   [`apply`] with `false`, which forgets the noted ranges.

use trace_records::{KernelDispatchRecord, ProcessTrace};

/// Demangles (when `demangle`) and truncates (when `truncate`) the names of `trace`'s kernel
/// symbols in place. Truncation demangles first (even without `demangle`), then keeps the bare
/// function name ([`truncate_name`]); a name that is not a mangled C++ name is only truncated.
pub fn rename_kernels(trace: &mut ProcessTrace, demangle: bool, truncate: bool) {
    if !demangle && !truncate {
        return;
    }
    let ids: Vec<u32> = trace.symbols.iter().map(|s| s.name).collect();
    for id in ids {
        let Some(name) = trace.strings.get(&id) else {
            continue;
        };
        let mut new = demangled(name);
        if truncate {
            new = truncate_name(&new);
        }
        trace.strings.insert(id, new);
    }
}

/// `name` demangled when it is a mangled C++ name, else as it is.
pub fn demangled(name: &str) -> String {
    cpp_demangle::Symbol::new(name.as_bytes())
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_owned())
}

/// A demangled kernel name cut to its function's bare name (template arguments, parameters,
/// return type and scopes dropped): `void ns::kernel<float>(float*, int)` → `kernel`.
pub fn truncate_name(name: &str) -> String {
    let head = name.split('(').next().unwrap_or(name);
    let mut depth = 0;
    let plain: String = head
        .chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect();
    let last = plain.trim().rsplit([' ', ':']).next().unwrap_or(&plain);
    last.to_owned()
}

/// Keeps the ranges noted in `trace`'s dispatches when `rename` (`--kernel-rename`), else
/// forgets them, so every writer shows kernel names.
pub fn apply(trace: &mut ProcessTrace, rename: bool) {
    if !rename {
        trace.dispatches.iter_mut().for_each(|d| d.region = 0);
    }
}

/// The range message a renamed dispatch takes, `None` when it keeps its kernel name.
pub fn region<'a>(trace: &'a ProcessTrace, d: &KernelDispatchRecord) -> Option<&'a str> {
    (d.region != 0).then(|| trace.string(d.region))
}

/// The name a dispatch is shown by: its range's message when renamed, else `kernel_name`.
pub fn dispatch_name<'a>(
    trace: &'a ProcessTrace,
    d: &KernelDispatchRecord,
    kernel_name: &'a str,
) -> &'a str {
    region(trace, d).unwrap_or(kernel_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_dispatches_take_their_range_and_the_rest_keep_the_kernel() {
        let mut t = ProcessTrace::default();
        t.strings.insert(7, "iter3".into());
        let inside = KernelDispatchRecord {
            region: 7,
            ..Default::default()
        };
        let outside = KernelDispatchRecord::default();
        t.dispatches = vec![inside, outside];
        assert_eq!(dispatch_name(&t, &inside, "axpb"), "iter3");
        assert_eq!(dispatch_name(&t, &outside, "axpb"), "axpb");
        apply(&mut t, true);
        assert_eq!(t.dispatches[0].region, 7);
        apply(&mut t, false);
        assert!(t.dispatches.iter().all(|d| region(&t, d).is_none()));
    }

    #[test]
    fn kernel_names_truncate_to_the_function() {
        assert_eq!(
            truncate_name("void addition_kernel<float>(float*, float const*, int)"),
            "addition_kernel"
        );
        assert_eq!(
            truncate_name("ns::axpb(float const*, float*, unsigned long)"),
            "axpb"
        );
        assert_eq!(
            truncate_name("__amd_rocclr_copyBuffer"),
            "__amd_rocclr_copyBuffer"
        );
    }

    /// A trace with two kernel symbols, a mangled and a plain name, and one string no symbol
    /// names.
    fn symbols() -> ProcessTrace {
        let mut t = ProcessTrace::default();
        t.strings.insert(1, "_Z4axpbPKfPfm".into());
        t.strings.insert(2, "__amd_rocclr_copyBuffer".into());
        t.strings.insert(3, "_Z5otherv".into());
        for (kernel_id, name) in [(1, 1), (2, 2)] {
            t.symbols.push(trace_records::KernelSymbolRecord {
                kernel_id,
                name,
                ..Default::default()
            });
        }
        t
    }

    fn names(t: &ProcessTrace) -> Vec<&str> {
        (1..=3).map(|id| t.string(id)).collect()
    }

    #[test]
    fn kernel_symbols_are_demangled_truncated_or_kept() {
        let mut t = symbols();
        rename_kernels(&mut t, false, false);
        assert_eq!(
            names(&t),
            ["_Z4axpbPKfPfm", "__amd_rocclr_copyBuffer", "_Z5otherv"]
        );
        rename_kernels(&mut t, true, false);
        assert_eq!(
            names(&t),
            [
                "axpb(float const*, float*, unsigned long)",
                "__amd_rocclr_copyBuffer",
                "_Z5otherv"
            ],
            "only the symbols' names, and a plain name as it is"
        );
        // Truncation demangles first, even without `demangle`.
        let mut t = symbols();
        rename_kernels(&mut t, false, true);
        assert_eq!(names(&t), ["axpb", "__amd_rocclr_copyBuffer", "_Z5otherv"]);
    }
}
