//! Process-wide bookkeeping: stored registrations (and so instance counts) and the
//! per-thread re-entrancy guard. Pure logic; no dynamic loading here.

use std::cell::Cell;
use std::ffi::c_int;

use crate::codes::ErrorCode;
use crate::libs::Library;

/// Registrations allowed per library (upstream `64 / max(ROCP_REG_LAST, 8)`).
pub const MAX_INSTANCES: u64 = 8;

/// The register id upstream encodes: `8 * lib_idx + instance`.
pub fn encode_handle(lib: Library, instance: u64) -> u64 {
    MAX_INSTANCES * lib.index() as u64 + instance
}

/// One accepted registration, with its own copy of the table-pointer array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Which library registered.
    pub lib: Library,
    /// The version the runtime passed.
    pub version: u32,
    /// 0-based instance among registrations of `lib`.
    pub instance: u64,
    /// Copy of the caller's `api_tables` array, as addresses.
    pub tables: Vec<usize>,
    /// Whether a tool has accepted these tables.
    pub propagated: bool,
}

/// Result of a successful claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The library matched by name.
    pub lib: Library,
    /// Instance number handed to the tool.
    pub instance: u64,
    /// Value written to `register_id->handle`.
    pub handle: u64,
    /// Position of the stored record (for [`Registry::mark_propagated`]).
    pub slot: usize,
}

/// All registrations of the process.
#[derive(Debug, Default)]
pub struct Registry {
    records: Vec<Record>,
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Registry {
        Registry {
            records: Vec::new(),
        }
    }

    /// Matches the name, enforces the instance limit, assigns the instance and
    /// stores `tables` (the caller's copy). Rejected calls change nothing.
    pub fn claim(
        &mut self,
        name: &[u8],
        version: u32,
        tables: Vec<usize>,
    ) -> Result<Claim, ErrorCode> {
        let lib = Library::from_name(name).ok_or(ErrorCode::UnsupportedApi)?;
        let instance = self.instances_of(lib);
        if instance >= MAX_INSTANCES {
            return Err(ErrorCode::ExcessApiInstances);
        }
        let slot = self.records.len();
        self.records.push(Record {
            lib,
            version,
            instance,
            tables,
            propagated: false,
        });
        Ok(Claim {
            lib,
            instance,
            handle: encode_handle(lib, instance),
            slot,
        })
    }

    /// Records that a tool accepted the tables of `slot`.
    pub fn mark_propagated(&mut self, slot: usize) {
        if let Some(record) = self.records.get_mut(slot) {
            record.propagated = true;
        }
    }

    /// The stored registrations in registration order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Registrations of `lib` so far.
    pub fn instances_of(&self, lib: Library) -> u64 {
        self.records.iter().filter(|r| r.lib == lib).count() as u64
    }
}

/// Maps the tool's answer to the error code: no tool → `NO_TOOLS`, 0 →
/// `SUCCESS`, anything else → `ROCPROFILER_ERROR`.
pub fn outcome_of_tool(ret: Option<c_int>) -> ErrorCode {
    match ret {
        None => ErrorCode::NoTools,
        Some(0) => ErrorCode::Success,
        Some(_) => ErrorCode::RocprofilerError,
    }
}

thread_local! {
    static IN_REGISTRATION: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as being inside registration (which includes the
/// call into the tool). Dropping it clears the mark.
#[derive(Debug)]
pub struct ReentryGuard(());

impl ReentryGuard {
    /// `None` if this thread is already inside registration (→ `DEADLOCK`).
    pub fn enter() -> Option<ReentryGuard> {
        IN_REGISTRATION.with(|flag| {
            if flag.replace(true) {
                None
            } else {
                Some(ReentryGuard(()))
            }
        })
    }
}

impl Drop for ReentryGuard {
    fn drop(&mut self) {
        IN_REGISTRATION.with(|flag| flag.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_encode_library_index_times_eight_plus_instance() {
        let mut reg = Registry::new();
        let hsa0 = reg.claim(b"hsa", 10400, vec![0x1000]).expect("hsa");
        let hsa1 = reg.claim(b"hsa", 10400, vec![0x2000]).expect("hsa again");
        let hip = reg.claim(b"hip", 70000, vec![0x3000]).expect("hip");
        let roctx = reg.claim(b"roctx", 40000, vec![1, 2, 3]).expect("roctx");
        let attach = reg.claim(b"rocattach", 1, vec![4]).expect("rocattach");
        assert_eq!((hsa0.instance, hsa0.handle), (0, 0));
        assert_eq!((hsa1.instance, hsa1.handle), (1, 1));
        assert_eq!((hip.instance, hip.handle), (0, 8));
        assert_eq!((roctx.instance, roctx.handle), (0, 16));
        assert_eq!((attach.instance, attach.handle), (0, 56));
        assert_eq!(encode_handle(Library::RocJpeg, 7), 55);
    }

    #[test]
    fn ninth_instance_is_rejected_without_side_effects_and_others_are_independent() {
        let mut reg = Registry::new();
        for i in 0..MAX_INSTANCES {
            let claim = reg
                .claim(b"hsa", 1, vec![i as usize])
                .expect("within limit");
            assert_eq!(claim.instance, i);
        }
        assert_eq!(
            reg.claim(b"hsa", 1, vec![99]),
            Err(ErrorCode::ExcessApiInstances)
        );
        assert_eq!(
            reg.claim(b"hsa", 1, vec![99]),
            Err(ErrorCode::ExcessApiInstances)
        );
        assert_eq!(reg.instances_of(Library::Hsa), MAX_INSTANCES);
        assert_eq!(reg.records().len(), MAX_INSTANCES as usize);
        // Another library still has all its instances.
        assert_eq!(reg.claim(b"hip", 1, vec![5]).map(|c| c.handle), Ok(8));
    }

    #[test]
    fn unsupported_names_are_rejected_and_consume_nothing() {
        let mut reg = Registry::new();
        assert_eq!(
            reg.claim(b"cuda", 1, vec![1]),
            Err(ErrorCode::UnsupportedApi)
        );
        assert_eq!(reg.claim(b"", 1, vec![1]), Err(ErrorCode::UnsupportedApi));
        assert_eq!(
            reg.claim(b"HSA", 1, vec![1]),
            Err(ErrorCode::UnsupportedApi)
        );
        assert!(reg.records().is_empty());
        assert_eq!(reg.claim(b"hsa", 1, vec![1]).map(|c| c.instance), Ok(0));
    }

    #[test]
    fn stored_tables_are_an_independent_copy() {
        let mut reg = Registry::new();
        let mut tables = vec![0xAAAA_usize, 0xBBBB, 0xCCCC];
        let claim = reg.claim(b"roctx", 40100, tables.clone()).expect("roctx");
        tables[0] = 0;
        let record = &reg.records()[claim.slot];
        assert_eq!(record.tables, [0xAAAA, 0xBBBB, 0xCCCC]);
        assert_eq!(record.version, 40100);
        assert_eq!(record.lib, Library::Roctx);
        assert!(!record.propagated);
        reg.mark_propagated(claim.slot);
        assert!(reg.records()[claim.slot].propagated);
        reg.mark_propagated(42); // out of range: ignored
    }

    #[test]
    fn tool_answers_map_to_codes() {
        assert_eq!(outcome_of_tool(None), ErrorCode::NoTools);
        assert_eq!(outcome_of_tool(Some(0)), ErrorCode::Success);
        assert_eq!(outcome_of_tool(Some(1)), ErrorCode::RocprofilerError);
        assert_eq!(outcome_of_tool(Some(-1)), ErrorCode::RocprofilerError);
    }

    #[test]
    fn reentry_is_refused_on_the_same_thread_only_and_released_on_drop() {
        let outer = ReentryGuard::enter().expect("first entry");
        assert!(
            ReentryGuard::enter().is_none(),
            "same thread must be refused"
        );
        let other = std::thread::spawn(|| ReentryGuard::enter().is_some())
            .join()
            .expect("thread");
        assert!(other, "another thread is not re-entering");
        drop(outer);
        assert!(ReentryGuard::enter().is_some(), "released after drop");
    }
}
