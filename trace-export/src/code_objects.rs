//! A process's code objects and HIP host functions, resolved for the writers (JSON, rocpd).
//!
//! - **Code objects**: one per code-object id, from its load record (an unload record adds
//!   when it was unloaded; an unload without a load is dropped: nothing says what it was).
//! - **Host functions**: rocprofiler-sdk reports a host function once the kernel its device
//!   function names is loaded, with that kernel's id and code object. The tool records the
//!   registration (`__hipRegisterFunction`, at program start, before any code object is
//!   loaded); here each registration is matched to the kernel symbols of the same name (names
//!   are interned once per log, so the device function and the symbol share their string id),
//!   one host function per match, numbered from 1 in registration order. A registration no
//!   loaded kernel matches is not written, as upstream.

use std::collections::BTreeMap;
use trace_records::ProcessTrace;
use trace_records::record::{
    CodeObjectEvent, CodeObjectRecord, HostFunctionRecord, KernelSymbolRecord,
};

/// One code object of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeObject {
    /// The load record.
    pub load: CodeObjectRecord,
    /// When it was unloaded, if the log says.
    pub unloaded: Option<u64>,
}

/// The process's code objects by id (loaded ones only).
pub fn code_objects(trace: &ProcessTrace) -> Vec<CodeObject> {
    let mut by_id: BTreeMap<u64, CodeObject> = BTreeMap::new();
    for r in &trace.code_objects {
        match CodeObjectEvent::from_u8(r.event) {
            Some(CodeObjectEvent::Load) if r.code_object_id != 0 => {
                by_id.entry(r.code_object_id).or_insert(CodeObject {
                    load: *r,
                    unloaded: None,
                });
            }
            _ => {}
        }
    }
    for r in &trace.code_objects {
        if CodeObjectEvent::from_u8(r.event) == Some(CodeObjectEvent::Unload)
            && let Some(c) = by_id.get_mut(&r.code_object_id)
        {
            c.unloaded.get_or_insert(r.timestamp);
        }
    }
    by_id.into_values().collect()
}

/// One host function, resolved to its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFunction<'t> {
    /// Its id (from 1).
    pub id: u64,
    /// The registration.
    pub record: &'t HostFunctionRecord,
    /// The kernel symbol its device function names.
    pub symbol: &'t KernelSymbolRecord,
}

/// The process's host functions whose kernels were loaded (see the module text).
pub fn host_functions(trace: &ProcessTrace) -> Vec<HostFunction<'_>> {
    let mut symbols: Vec<&KernelSymbolRecord> =
        trace.symbols.iter().filter(|s| s.kernel_id != 0).collect();
    symbols.sort_by_key(|s| s.kernel_id);
    symbols.dedup_by_key(|s| s.kernel_id);
    let mut by_name: BTreeMap<u32, Vec<&KernelSymbolRecord>> = BTreeMap::new();
    for s in symbols {
        by_name.entry(s.name).or_default().push(s);
    }
    let mut out = Vec::new();
    for record in &trace.host_functions {
        for symbol in by_name.get(&record.device_function).into_iter().flatten() {
            out.push(HostFunction {
                id: out.len() as u64 + 1,
                record,
                symbol,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(id: u64, event: CodeObjectEvent, timestamp: u64) -> CodeObjectRecord {
        CodeObjectRecord {
            code_object_id: id,
            timestamp,
            event: event as u8,
            ..Default::default()
        }
    }

    #[test]
    fn a_load_and_its_unload_are_one_code_object_and_a_lone_unload_is_dropped() {
        let trace = ProcessTrace {
            code_objects: vec![
                load(2, CodeObjectEvent::Load, 10),
                load(1, CodeObjectEvent::Load, 5),
                load(2, CodeObjectEvent::Unload, 50),
                load(7, CodeObjectEvent::Unload, 60),
                load(0, CodeObjectEvent::Load, 1),
                CodeObjectRecord {
                    code_object_id: 3,
                    event: 9,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let got: Vec<(u64, u64, Option<u64>)> = code_objects(&trace)
            .iter()
            .map(|c| (c.load.code_object_id, c.load.timestamp, c.unloaded))
            .collect();
        assert_eq!(got, [(1, 5, None), (2, 10, Some(50))]);
    }

    #[test]
    fn host_functions_match_kernel_symbols_by_name_and_unmatched_ones_are_left_out() {
        let symbol = |kernel_id, name, code_object_id| KernelSymbolRecord {
            kernel_id,
            name,
            code_object_id,
            ..Default::default()
        };
        let host = |host_function, device_function| HostFunctionRecord {
            host_function,
            device_function,
            ..Default::default()
        };
        let trace = ProcessTrace {
            // Kernel 3 loaded on two agents (two code objects), kernel 1 once; 1 twice in the
            // log (a re-freeze) counts once.
            symbols: vec![
                symbol(3, 30, 2),
                symbol(1, 10, 1),
                symbol(4, 30, 3),
                symbol(1, 10, 1),
            ],
            host_functions: vec![host(0x100, 10), host(0x200, 99), host(0x300, 30)],
            ..Default::default()
        };
        let got: Vec<(u64, u64, u64, u32)> = host_functions(&trace)
            .iter()
            .map(|h| {
                (
                    h.id,
                    h.record.host_function,
                    h.symbol.kernel_id,
                    h.symbol.code_object_id,
                )
            })
            .collect();
        assert_eq!(got, [(1, 0x100, 1, 1), (2, 0x300, 3, 2), (3, 0x300, 4, 3)]);
    }
}
