//! What every table's writer of a process shares: the machine's facts, the process's ids and
//! tables, the string ids, and the numbering rules several tables agree on.

use crate::rocpd::batch::Batch;
use crate::rocpd::guid;
use crate::view::{ProcessView, RunInfo};
use rusqlite::Connection;
use std::collections::HashMap;
use trace_records::record::*;

/// Facts about the machine, read once per file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Host {
    /// `/etc/machine-id` (the host name when there is none).
    pub machine_id: String,
    /// `uname -s`.
    pub system_name: String,
    /// The host name the kernel reports.
    pub hostname: String,
    /// `uname -r`.
    pub release: String,
    /// `uname -v`.
    pub version: String,
    /// `uname -m`.
    pub hardware_name: String,
    /// The NIS domain name.
    pub domain_name: String,
}

impl Host {
    /// Reads the machine's identity from `/etc` and `/proc` (no system calls needed).
    pub(crate) fn read(run: &RunInfo) -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        let hostname = match read("/proc/sys/kernel/hostname") {
            h if h.is_empty() => run.hostname.clone(),
            h => h,
        };
        let mut machine_id = read("/etc/machine-id");
        if machine_id.is_empty() {
            machine_id = read("/var/lib/dbus/machine-id");
        }
        if machine_id.is_empty() {
            machine_id = if run.hostname.is_empty() {
                hostname.clone()
            } else {
                run.hostname.clone()
            };
        }
        Self {
            machine_id,
            system_name: match read("/proc/sys/kernel/ostype") {
                s if s.is_empty() => "Linux".to_owned(),
                s => s,
            },
            hostname,
            release: read("/proc/sys/kernel/osrelease"),
            version: read("/proc/sys/kernel/version"),
            hardware_name: std::env::consts::ARCH.to_owned(),
            domain_name: read("/proc/sys/kernel/domainname"),
        }
    }
}

/// One process being written: the connection, its tables' suffix, its records and the ids
/// every row of it carries.
pub(super) struct Process<'c, 'v> {
    /// The database.
    pub(super) conn: &'c Connection,
    /// The suffix of the process's tables.
    suffix: &'c str,
    /// The records.
    pub(super) v: &'c ProcessView<'v>,
    /// The node's id.
    pub(super) nid: i64,
    /// The node's hash.
    pub(super) node_hash: i64,
    /// The process id.
    pub(super) pid: i64,
    /// The parent's process id.
    pub(super) ppid: i64,
}

impl<'c, 'v> Process<'c, 'v> {
    pub(super) fn new(
        conn: &'c Connection,
        suffix: &'c str,
        v: &'c ProcessView<'v>,
        host: &Host,
    ) -> Self {
        let (node_hash, nid) = guid::node_hash_and_id(&host.machine_id);
        Self {
            conn,
            suffix,
            v,
            nid,
            node_hash,
            pid: i64::from(v.trace.pid),
            ppid: i64::from(v.trace.ppid),
        }
    }

    /// The quoted name of the process's table `base`.
    pub(super) fn table(&self, base: &str) -> String {
        format!("\"{base}{}\"", self.suffix)
    }

    /// Batched inserts into table `base` (see [`Batch::new`]).
    pub(super) fn batch(
        &self,
        base: &str,
        columns: &str,
        row: &str,
    ) -> rusqlite::Result<Batch<'c>> {
        Batch::new(self.conn, &self.table(base), columns, row)
    }
}

/// The process's start and end: from its log's creation (or its first record, if earlier)
/// to its last record.
pub(crate) fn process_span(v: &ProcessView<'_>) -> (u64, u64) {
    let created = v.trace.created_ns;
    let init = if created > 0 {
        created.min(v.span.0)
    } else {
        v.span.0
    };
    (init, v.span.1.max(init))
}

/// An id or timestamp as SQLite stores it: the same 64 bits, so a handle above `i64::MAX`
/// stays distinct and joins with every column holding it.
pub(super) fn int(v: u64) -> i64 {
    v as i64
}

/// The category of markers (push/pop and start/stop ranges and marks alike).
pub(super) const MARKER_CATEGORY: &str = "MARKER_CORE_RANGE_API";
/// The category of kernel dispatches.
pub(super) const DISPATCH_CATEGORY: &str = "KERNEL_DISPATCH";
/// The category of memory copies.
pub(super) const COPY_CATEGORY: &str = "MEMORY_COPY";
/// The category of memory allocations.
pub(super) const ALLOCATION_CATEGORY: &str = "MEMORY_ALLOCATION";
/// The category of scratch-memory events.
pub(super) const SCRATCH_CATEGORY: &str = "SCRATCH_MEMORY";

/// The region name of a marker.
pub(super) fn marker_name(kind: u8) -> &'static str {
    match MarkerKind::from_u8(kind) {
        Some(MarkerKind::Mark) => "roctxMarkA",
        Some(MarkerKind::ProcessRange) => "roctxProcessRangeA",
        Some(MarkerKind::ThreadRange) | None => "roctxThreadRangeA",
    }
}

/// Which pass writes an API call: HIP first, then HSA; marker-domain calls are written from
/// the marker records instead.
pub(super) fn api_pass(domain: ApiDomain) -> Option<usize> {
    if domain.is_hip() {
        Some(0)
    } else if domain.is_hsa() {
        Some(1)
    } else {
        None
    }
}

/// A value per API operation, by domain and operation id (a lookup per call without hashing).
#[derive(Default)]
pub(super) struct OpTable(Vec<Vec<Option<i64>>>);

impl OpTable {
    pub(super) fn get(&self, r: &ApiRecord) -> Option<i64> {
        self.0
            .get(usize::from(r.domain))?
            .get(usize::from(r.operation))
            .copied()
            .flatten()
    }

    pub(super) fn set(&mut self, r: &ApiRecord, value: i64) {
        let (d, op) = (usize::from(r.domain), usize::from(r.operation));
        if self.0.len() <= d {
            self.0.resize(d + 1, Vec::new());
        }
        if self.0[d].len() <= op {
            self.0[d].resize(op + 1, None);
        }
        self.0[d][op] = Some(value);
    }
}

/// The string table: every string the rows name, ids 1.. in byte order.
pub(super) struct Strings {
    pub(super) ids: HashMap<String, i64>,
    /// The id of `""`.
    pub(super) empty: i64,
}

impl Strings {
    pub(super) fn id(&self, s: &str) -> i64 {
        self.ids.get(s).copied().unwrap_or(self.empty)
    }
}
