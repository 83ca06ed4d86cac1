//! A process's records, loaded from its log.

use crate::log::{Damage, FileHeader, LogError, RawEntry, walk};
use crate::record::*;
use std::collections::HashMap;
use zerocopy::FromBytes;

/// Everything one process recorded.
#[derive(Debug, Clone, Default)]
pub struct ProcessTrace {
    /// Writer's process id.
    pub pid: u32,
    /// When its log was created.
    pub created_ns: u64,
    /// Interned strings.
    pub strings: HashMap<StringId, String>,
    /// Operation names by (domain, operation).
    pub operations: HashMap<(u8, u16), StringId>,
    /// API calls.
    pub api: Vec<ApiRecord>,
    /// Kernel symbols.
    pub symbols: Vec<KernelSymbolRecord>,
    /// Kernel dispatches.
    pub dispatches: Vec<KernelDispatchRecord>,
    /// Memory copies.
    pub copies: Vec<MemoryCopyRecord>,
    /// ROCTx marks and ranges.
    pub markers: Vec<MarkerRecord>,
    /// JSON documents (agent descriptions, run facts), in log order.
    pub json: Vec<String>,
    /// Entries that were well-formed in an intact chunk but could not be decoded.
    pub malformed_entries: usize,
    /// Where reading stopped early, if it did.
    pub damage: Option<Damage>,
}

impl ProcessTrace {
    /// Decodes a whole log. Fails only if the header is unusable; damage later in the file is
    /// reported in [`ProcessTrace::damage`] with everything before it kept.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LogError> {
        let mut t = ProcessTrace::default();
        let (header, damage): (FileHeader, _) = walk(bytes, |e| t.add(e))?;
        t.pid = header.pid;
        t.created_ns = header.created_ns;
        t.damage = damage;
        Ok(t)
    }

    /// Reads and decodes the log at `path`.
    pub fn read(path: &std::path::Path) -> Result<Self, crate::Error> {
        let bytes = std::fs::read(path).map_err(crate::Error::io(path))?;
        Self::from_bytes(&bytes).map_err(|e| crate::Error::Log {
            path: path.to_owned(),
            source: e,
        })
    }

    fn add(&mut self, e: RawEntry<'_>) {
        fn fixed<R: FromBytes>(bytes: &[u8]) -> Option<R> {
            R::read_from_bytes(bytes).ok()
        }
        let ok = match e.tag {
            Tag::StringDef if e.bytes.len() >= 4 => {
                let id = u32::from_le_bytes(e.bytes[..4].try_into().expect("4 bytes"));
                let text = String::from_utf8_lossy(&e.bytes[4..]).into_owned();
                self.strings.insert(id, text);
                true
            }
            Tag::StringDef => false,
            Tag::Json => {
                self.json
                    .push(String::from_utf8_lossy(e.bytes).into_owned());
                true
            }
            Tag::OperationName => fixed::<OperationName>(e.bytes)
                .map(|o| self.operations.insert((o.domain, o.operation), o.name))
                .is_some(),
            Tag::Api => fixed(e.bytes).map(|r| self.api.push(r)).is_some(),
            Tag::KernelSymbol => fixed(e.bytes).map(|r| self.symbols.push(r)).is_some(),
            Tag::KernelDispatch => fixed(e.bytes).map(|r| self.dispatches.push(r)).is_some(),
            Tag::MemoryCopy => fixed(e.bytes).map(|r| self.copies.push(r)).is_some(),
            Tag::Marker => fixed(e.bytes).map(|r| self.markers.push(r)).is_some(),
        };
        if !ok {
            self.malformed_entries += 1;
        }
    }

    /// The interned string, or `""`.
    pub fn string(&self, id: StringId) -> &str {
        self.strings.get(&id).map_or("", String::as_str)
    }

    /// The name of an API operation, or `"<domain>#<op>"` if the log never defined it.
    pub fn operation_name(&self, domain: u8, operation: u16) -> std::borrow::Cow<'_, str> {
        match self.operations.get(&(domain, operation)) {
            Some(id) => self.string(*id).into(),
            None => format!("{domain}#{operation}").into(),
        }
    }

    /// The kernel symbol of `kernel_id` (the first one the log defined).
    pub fn symbol(&self, kernel_id: u64) -> Option<&KernelSymbolRecord> {
        self.symbols.iter().find(|s| s.kernel_id == kernel_id)
    }

    /// Every kernel symbol by id (the first one the log defined), for lookups per dispatch.
    pub fn symbols_by_id(&self) -> HashMap<u64, &KernelSymbolRecord> {
        let mut map = HashMap::with_capacity(self.symbols.len());
        for s in &self.symbols {
            map.entry(s.kernel_id).or_insert(s);
        }
        map
    }
}
