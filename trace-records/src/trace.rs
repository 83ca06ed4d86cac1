//! A process's records, loaded from its log.

use crate::docs::{Document, Documents};
use crate::log::{Damage, FileHeader, LogError, RawEntry, walk};
use crate::loss::{LossCause, LossCounts};
use crate::record::*;
use crate::records::{Records, RecordsBuilder};
use std::collections::HashMap;
use zerocopy::FromBytes;

/// Everything one process recorded.
#[derive(Debug, Clone, Default)]
pub struct ProcessTrace {
    /// Writer's process id.
    pub pid: u32,
    /// Which image of the process wrote it (0, then 1 after an `exec`, …).
    pub image: u32,
    /// The writer's parent process id.
    pub ppid: u32,
    /// When its log was created.
    pub created_ns: u64,
    /// Interned strings.
    pub strings: HashMap<StringId, String>,
    /// Strings longer than one log entry holds, cut to fit it (at a character boundary, to at
    /// most [`crate::log::MAX_CUT_STRING`] bytes, as every output shows them): their full
    /// lengths in bytes, by id.
    pub cut_strings: HashMap<StringId, u64>,
    /// Operation names by (domain, operation).
    pub operations: HashMap<(u8, u16), StringId>,
    /// API calls, in their canonical order (start, longest first, …); held in memory up to a
    /// bound and spilled next to the log beyond it (see [`crate::records`]).
    pub api: Records<ApiRecord>,
    /// The captured arguments of the API calls that carry them ([`Tag::ApiArgs`]), by call
    /// ([`ApiArgs::key`]). Held in memory: only runs whose outputs show arguments capture them.
    pub api_args: HashMap<ApiKey, ApiArgs>,
    /// Kernel symbols.
    pub symbols: Vec<KernelSymbolRecord>,
    /// Kernel dispatches.
    pub dispatches: Vec<KernelDispatchRecord>,
    /// Memory copies.
    pub copies: Vec<MemoryCopyRecord>,
    /// ROCTx marks and ranges.
    pub markers: Vec<MarkerRecord>,
    /// Memory allocations and frees through the HSA runtime.
    pub allocations: Vec<MemoryAllocationRecord>,
    /// The runtime's scratch-memory events.
    pub scratch: Vec<ScratchMemoryRecord>,
    /// Hardware-counter values, one per dispatch and counter (evaluated by `rocprof` from the
    /// samples; a log holds samples only).
    pub counters: Vec<CounterRecord>,
    /// Raw counter read-backs, one per counted dispatch.
    pub counter_samples: Vec<CounterSample>,
    /// Code-object loads and unloads, in the order recorded.
    pub code_objects: Vec<CodeObjectRecord>,
    /// HIP host functions, in registration order.
    pub host_functions: Vec<HostFunctionRecord>,
    /// The typed documents (agents, discovery facts, tables received, exit facts, warnings).
    pub docs: Documents,
    /// Records lost, by cause: the writer's counts plus what this read could not decode.
    pub losses: LossCounts,
    /// Damaged chunks that were skipped.
    pub damage: Vec<Damage>,
    /// Chunks still open (the process did not exit normally, or exited while writing).
    pub open_chunks: u64,
    /// Chunks the writer handed out, as the log's header counts them (`None` when unknown: a
    /// version-2 log, or a damaged header).
    pub chunks_written: Option<u64>,
}

/// What identifies an API call across its records: thread, start, end, domain, operation.
pub type ApiKey = (u32, u64, u64, u8, u16);

/// One API call's captured arguments (a [`Tag::ApiArgs`] entry without its [`ApiRecord`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiArgs {
    /// `rax` and the counts of words.
    pub header: ApiArgsHeader,
    /// The words: integer registers, vector registers, stack words.
    pub words: Vec<u64>,
    /// The C strings read at the call: (word index, text, lossily UTF-8).
    pub strings: Vec<(u8, String)>,
}

impl ApiArgs {
    /// The key of `r` in [`ProcessTrace::api_args`].
    pub fn key(r: &ApiRecord) -> ApiKey {
        (r.thread_id, r.start, r.end, r.domain, r.operation)
    }

    /// Reads an entry's bytes: the call and its arguments (`None` if malformed).
    pub fn parse(bytes: &[u8]) -> Option<(ApiRecord, ApiArgs)> {
        use zerocopy::FromBytes as _;
        let (record, rest) = ApiRecord::read_from_prefix(bytes).ok()?;
        let (header, mut rest) = ApiArgsHeader::read_from_prefix(rest).ok()?;
        let n = usize::from(header.int_words)
            + usize::from(header.sse_words)
            + usize::from(header.stack_words);
        if rest.len() < 8 * n {
            return None;
        }
        let words = rest[..8 * n]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .collect();
        rest = &rest[8 * n..];
        let mut strings = Vec::with_capacity(usize::from(header.strings));
        for _ in 0..header.strings {
            if rest.len() < 3 {
                return None;
            }
            let word = rest[0];
            let len = usize::from(u16::from_le_bytes([rest[1], rest[2]]));
            let text = rest.get(3..3 + len)?;
            if usize::from(word) >= n {
                return None;
            }
            strings.push((word, String::from_utf8_lossy(text).into_owned()));
            rest = &rest[3 + len..];
        }
        if !rest.is_empty() {
            return None;
        }
        Some((
            record,
            ApiArgs {
                header,
                words,
                strings,
            },
        ))
    }
}

/// One counted dispatch's raw counter output, as the GPU left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterSample {
    /// Which dispatch, on which agent.
    pub header: CounterSampleHeader,
    /// The output buffer's bytes.
    pub output: Vec<u8>,
}

impl ProcessTrace {
    /// Decodes a whole log. Fails only if nothing of it is recognisable; damaged chunks are
    /// reported in [`ProcessTrace::damage`] and counted, everything else is kept.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LogError> {
        Self::from_reader(bytes, None)
    }

    /// Decodes a log read from `source` one chunk at a time; `fallback` is the header to use
    /// when the file's own is damaged. API calls beyond what is held in memory are spilled to
    /// the system's temporary directory.
    pub fn from_reader(
        source: impl std::io::Read,
        fallback: Option<FileHeader>,
    ) -> Result<Self, LogError> {
        Self::load(source, fallback, RecordsBuilder::new(std::env::temp_dir()))
    }

    fn load(
        source: impl std::io::Read,
        fallback: Option<FileHeader>,
        mut api: RecordsBuilder<ApiRecord>,
    ) -> Result<Self, LogError> {
        let mut t = ProcessTrace::default();
        let outcome = walk(source, fallback, |e| t.add(e, &mut api))?;
        t.api = api.finish().map_err(|(e, lost)| LogError::Spill(e, lost))?;
        t.sort();
        t.pid = outcome.header.pid;
        t.image = outcome.header.image;
        t.ppid = outcome.header.ppid;
        t.created_ns = outcome.header.created_ns;
        t.losses.merge(&outcome.losses);
        t.damage = outcome.damage;
        t.open_chunks = outcome.open_chunks;
        t.chunks_written = outcome.chunks_written;
        Ok(t)
    }

    /// Reads and decodes the log at `path`. Only a regular file is opened, never through a
    /// symbolic link and never blocking (a FIFO named like a log is refused, not waited on).
    /// The pid and image in the file name (`<pid>.rplog`, `<pid>.<image>.rplog`) stand in for
    /// a damaged header.
    pub fn read(path: &std::path::Path) -> Result<Self, crate::Error> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(crate::Error::io(path))?;
        let meta = file.metadata().map_err(crate::Error::io(path))?;
        if !meta.file_type().is_file() {
            return Err(crate::Error::NotAFile(path.to_owned()));
        }
        let fallback = fallback_header(path);
        // As many API calls as the log can hold: kept in memory if they fit one run, else
        // spilled beside the log in smaller runs.
        let per_record = (4 + std::mem::size_of::<crate::ApiCompactRecord>()) as u64;
        let api = RecordsBuilder::for_count(
            path.parent().unwrap_or(std::path::Path::new(".")),
            usize::try_from(meta.len() / per_record).unwrap_or(usize::MAX),
        );
        Self::load(file, fallback, api).map_err(|e| crate::Error::Log {
            path: path.to_owned(),
            source: e,
        })
    }

    /// Puts the records in time order (in place; threads' chunks interleave in the log). The
    /// keys are total, so the order is the same however the chunks were laid out. (API calls
    /// are put in order by their [`Records`].)
    fn sort(&mut self) {
        self.dispatches
            .sort_unstable_by_key(|r| (r.start, r.dispatch_id, r.end));
        self.copies
            .sort_unstable_by_key(|r| (r.start, r.correlation_id, r.end, r.bytes));
        self.markers
            .sort_unstable_by_key(|r| (r.start, r.correlation_id, r.end, r.thread_id));
        self.counters.sort_unstable_by_key(counter_order);
        self.allocations.sort_unstable_by_key(|r| {
            (
                r.start,
                r.correlation_id,
                r.end,
                r.address,
                r.operation,
                r.thread_id,
            )
        });
        self.scratch.sort_unstable_by_key(|r| {
            (r.start, r.queue_id, r.end, r.operation, r.thread_id, r.size)
        });
    }

    /// Every record of the trace (API calls, dispatches, copies, markers, allocations, scratch
    /// events, counter samples).
    pub fn record_count(&self) -> usize {
        self.api.len()
            + self.dispatches.len()
            + self.copies.len()
            + self.markers.len()
            + self.allocations.len()
            + self.scratch.len()
            + self.counter_samples.len()
    }

    fn add(&mut self, e: RawEntry<'_>, api: &mut RecordsBuilder<ApiRecord>) {
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
            Tag::StringCut if e.bytes.len() >= 12 => {
                let id = u32::from_le_bytes(e.bytes[..4].try_into().expect("4 bytes"));
                let length = u64::from_le_bytes(e.bytes[4..12].try_into().expect("8 bytes"));
                let text = &e.bytes[12..];
                // A cut string was longer than what is kept of it.
                let cut = length > text.len() as u64;
                if cut {
                    self.strings
                        .insert(id, String::from_utf8_lossy(text).into_owned());
                    self.cut_strings.insert(id, length);
                }
                cut
            }
            Tag::StringCut => false,
            Tag::Json => {
                let doc = std::str::from_utf8(e.bytes)
                    .ok()
                    .and_then(Document::from_json);
                doc.map(|d| self.docs.add(d)).is_some()
            }
            Tag::OperationName => fixed::<OperationName>(e.bytes)
                .map(|o| self.operations.insert((o.domain, o.operation), o.name))
                .is_some(),
            Tag::Api => fixed(e.bytes).map(|r| api.push(r)).is_some(),
            // The walk hands compact entries over expanded; one left as itself is malformed (a
            // tick-timed call with no clock epoch before it in its chunk, or of a wrong size).
            Tag::ApiCompact | Tag::ApiTicks => false,
            // Read by the walk, for the chunk's tick-timed calls.
            Tag::ClockEpoch => e.bytes.len() == size_of::<crate::ClockEpochRecord>(),
            Tag::ApiArgs => ApiArgs::parse(e.bytes)
                .map(|(r, args)| {
                    self.api_args.entry(ApiArgs::key(&r)).or_insert(args);
                    api.push(r);
                })
                .is_some(),
            Tag::KernelSymbol => fixed(e.bytes).map(|r| self.symbols.push(r)).is_some(),
            Tag::KernelDispatch => fixed(e.bytes).map(|r| self.dispatches.push(r)).is_some(),
            Tag::MemoryCopy => fixed(e.bytes).map(|r| self.copies.push(r)).is_some(),
            Tag::Marker => fixed(e.bytes).map(|r| self.markers.push(r)).is_some(),
            Tag::MemoryAllocation => fixed(e.bytes).map(|r| self.allocations.push(r)).is_some(),
            Tag::ScratchMemory => fixed(e.bytes).map(|r| self.scratch.push(r)).is_some(),
            Tag::Counter => fixed(e.bytes).map(|r| self.counters.push(r)).is_some(),
            Tag::CodeObject => fixed(e.bytes).map(|r| self.code_objects.push(r)).is_some(),
            Tag::HostFunction => fixed(e.bytes)
                .map(|r| self.host_functions.push(r))
                .is_some(),
            Tag::CounterSample => CounterSampleHeader::read_from_prefix(e.bytes)
                .map(|(header, output)| {
                    self.counter_samples.push(CounterSample {
                        header,
                        output: output.to_vec(),
                    })
                })
                .is_ok(),
        };
        if !ok {
            self.losses.add(LossCause::Malformed, 1);
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

/// The order of counter records: by dispatch id, then counter id (the order of
/// `counter_collection.csv`'s rows); the remaining fields make the key total.
pub(crate) fn counter_order(r: &CounterRecord) -> (u64, u32, StringId, u64, u64, u32) {
    (
        r.dispatch_id,
        r.counter_id,
        r.name,
        r.value.to_bits(),
        r.correlation_id,
        r.agent_node_id,
    )
}

/// The header a log's file name implies (`<pid>.rplog` or `<pid>.<image>.rplog`).
fn fallback_header(path: &std::path::Path) -> Option<FileHeader> {
    let name = path.file_name()?.to_str()?.strip_suffix(".rplog")?;
    let (pid, image) = match name.split_once('.') {
        Some((pid, image)) => (pid.parse().ok()?, image.parse().ok()?),
        None => (name.parse().ok()?, 0),
    };
    Some(FileHeader {
        pid,
        image,
        ..Default::default()
    })
}
