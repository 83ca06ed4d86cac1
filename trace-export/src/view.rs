//! One resolved view of a process's records, built once and shared by the exporters: records
//! in time order, names and categories resolved, the process's threads, queues and streams
//! listed, every API call given a run-unique id and its enclosing call.
//!
//! **Streaming.** A process's API calls are not held here: [`ProcessView::api`] streams them
//! from the trace's [`Records`](trace_records::Records) (in memory, or merged back from their
//! spilled runs), resolving each call's ids on the way, so a writer's memory does not grow with
//! the number of calls. What is held is bounded by the rest: the device records, markers and
//! counters (by reference), and per dispatch, copy or marker the call that issued it.
//!
//! **Ids.** The tool gives every API call its own correlation id (nested calls included; the
//! work a call enqueues carries its outermost call's), but a log of an older tool gave a
//! nested call (HSA inside HIP) the outermost call's id, so ids are not trusted to be unique.
//! Each call's [`Api::id`] is its recorded correlation id when it is the first call (in time
//! order) to carry it, else a fresh id above every id the process's records hold (given in time
//! order); markers then get ids the same way, after all calls. So a call keeps the id the CSV
//! shows, an outermost call the id its dispatches and copies name, and every call and marker
//! has an id of its own. [`Api::ancestor`] names the enclosing call's id (0 for an outermost
//! call).

use std::collections::{BTreeSet, HashMap, HashSet};
use trace_records::agents::{Agent, AgentLabels};
use trace_records::record::*;
use trace_records::records::SpillError;
use trace_records::{CounterRecord, ProcessTrace};

/// Facts about the run every format records besides the records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// The machine's host name.
    pub hostname: String,
    /// The application's command line.
    pub command: Vec<String>,
}

/// One API call, resolved.
#[derive(Debug, Clone, Copy)]
pub struct Api {
    /// The record.
    pub record: ApiRecord,
    /// Its domain.
    pub domain: ApiDomain,
    /// A run-unique id (see the module text).
    pub id: u64,
    /// The id of the call it is nested in on its thread, 0 for an outermost call.
    pub ancestor: u64,
}

/// One process's records, resolved.
pub struct ProcessView<'a> {
    /// The records.
    pub trace: &'a ProcessTrace,
    /// How agents are named.
    pub labels: &'a AgentLabels,
    /// Kernel dispatches in (start, dispatch id) order.
    pub dispatches: Vec<&'a KernelDispatchRecord>,
    /// Memory copies in (start, correlation id) order.
    pub copies: Vec<&'a MemoryCopyRecord>,
    /// ROCTx marks and ranges in (start, correlation id) order.
    pub markers: Vec<&'a MarkerRecord>,
    /// The id of each marker (by position in `markers`; see the module text).
    pub marker_ids: Vec<u64>,
    /// Counter values in (dispatch id, counter id) order.
    pub counters: Vec<&'a CounterRecord>,
    /// Every thread id any record names, ascending.
    pub threads: Vec<u32>,
    /// The earliest and latest timestamp of any record (the log's creation when it has none).
    pub span: (u64, u64),
    /// Whether any API call is of a HIP domain.
    pub has_hip_calls: bool,
    /// The highest correlation id any record holds; fresh ids are given above it.
    highest: u64,
    /// How many API calls of each domain (by the domain a call resolves to, [`Api::domain`]).
    domain_calls: [usize; 256],
    /// The least and greatest timestamp (start or end) of any API call, unfiltered.
    api_bounds: Option<(u64, u64)>,
    symbols: HashMap<u64, &'a KernelSymbolRecord>,
    /// By the correlation id of a dispatch, copy or marker: the call that issued it.
    issuing: HashMap<u64, Api>,
    /// By the correlation id of a dispatch or copy: the HIP stream of the first one.
    streams: HashMap<u64, u64>,
}

impl<'a> ProcessView<'a> {
    /// Resolves `trace` (agents named by `labels`): one pass over its API calls.
    pub fn new(trace: &'a ProcessTrace, labels: &'a AgentLabels) -> Self {
        let mut dispatches: Vec<&KernelDispatchRecord> = trace.dispatches.iter().collect();
        dispatches.sort_by_key(|d| (d.start, d.dispatch_id));
        let mut copies: Vec<&MemoryCopyRecord> = trace.copies.iter().collect();
        copies.sort_by_key(|c| (c.start, c.correlation_id));
        let mut markers: Vec<&MarkerRecord> = trace.markers.iter().collect();
        markers.sort_by_key(|m| (m.start, m.correlation_id));
        let mut counters: Vec<&CounterRecord> = trace.counters.iter().collect();
        counters.sort_by_key(|c| (c.dispatch_id, c.counter_id));

        let mut threads = BTreeSet::new();
        threads.extend(trace.dispatches.iter().map(|r| r.thread_id));
        threads.extend(trace.copies.iter().map(|r| r.thread_id));
        threads.extend(trace.markers.iter().map(|r| r.thread_id));
        threads.extend(trace.allocations.iter().map(|r| r.thread_id));
        threads.extend(trace.scratch.iter().map(|r| r.thread_id));
        let mut streams = HashMap::new();
        let enqueued = trace
            .dispatches
            .iter()
            .map(|d| (d.correlation_id, d.stream_id))
            .chain(trace.copies.iter().map(|c| (c.correlation_id, c.stream_id)));
        for (correlation, stream) in enqueued {
            streams.entry(correlation).or_insert(stream);
        }
        let mut span: Option<(u64, u64)> = None;
        let mut see = |s: u64, e: u64| {
            if s > 0 && e >= s {
                span = Some(span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
            }
        };
        trace.dispatches.iter().for_each(|r| see(r.start, r.end));
        trace.copies.iter().for_each(|r| see(r.start, r.end));
        trace.markers.iter().for_each(|r| see(r.start, r.end));
        trace.allocations.iter().for_each(|r| see(r.start, r.end));
        trace.scratch.iter().for_each(|r| see(r.start, r.end));

        // The first pass over the calls: their threads, times and the highest id.
        let mut highest = trace
            .dispatches
            .iter()
            .map(|d| d.correlation_id)
            .chain(trace.copies.iter().map(|c| c.correlation_id))
            .chain(trace.markers.iter().map(|m| m.correlation_id))
            .chain(trace.counters.iter().map(|c| c.correlation_id))
            .chain(trace.allocations.iter().map(|a| a.correlation_id))
            .chain(trace.scratch.iter().map(|s| s.correlation_id))
            .max()
            .unwrap_or(0);
        let mut last_thread = None;
        let mut domain_calls = [0usize; 256];
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for r in trace.api.iter() {
            highest = highest.max(r.correlation_id);
            see(r.start, r.end);
            lo = lo.min(r.start.min(r.end));
            hi = hi.max(r.start.max(r.end));
            if last_thread != Some(r.thread_id) {
                threads.insert(r.thread_id);
                last_thread = Some(r.thread_id);
            }
            domain_calls[domain_of(r.domain) as usize] += 1;
        }
        let api_bounds = (!trace.api.is_empty()).then_some((lo, hi));
        let has_hip_calls = ApiDomain::ALL
            .iter()
            .any(|&d| d.is_hip() && domain_calls[d as usize] > 0);
        let span = span.unwrap_or((trace.created_ns, trace.created_ns));

        let mut view = ProcessView {
            trace,
            labels,
            dispatches,
            copies,
            markers,
            marker_ids: Vec::new(),
            counters,
            threads: threads.into_iter().collect(),
            span,
            has_hip_calls,
            highest,
            domain_calls,
            api_bounds,
            symbols: trace.symbols_by_id(),
            issuing: HashMap::new(),
            streams,
        };
        // The second: the calls that issued the asynchronous records, then the markers' ids.
        let marker_ids: HashSet<u64> = view.markers.iter().map(|m| m.correlation_id).collect();
        let mut issuing: HashMap<u64, Api> = HashMap::new();
        let mut calls = view.api();
        for a in calls.by_ref() {
            let c = a.record.correlation_id;
            if !view.streams.contains_key(&c) && !marker_ids.contains(&c) {
                continue;
            }
            match issuing.get(&c) {
                Some(first) if !(first.ancestor != 0 && a.ancestor == 0) => {}
                _ => {
                    issuing.insert(c, a);
                }
            }
        }
        let mut ids = calls.ids;
        let marker_ids = view
            .markers
            .iter()
            .map(|m| ids.id_of(m.correlation_id))
            .collect();
        view.issuing = issuing;
        view.marker_ids = marker_ids;
        view
    }

    /// The API calls in time order (start, the longest first), markers' API calls included,
    /// each with its ids (see the module text). Every call reads them anew.
    pub fn api(&self) -> ApiIter<'a> {
        ApiIter {
            records: self.trace.api.iter(),
            ids: Ids::new(
                self.highest,
                self.trace.api.len() + self.trace.markers.len(),
            ),
            open: Vec::new(),
            last: 0,
            slots: HashMap::new(),
        }
    }

    /// How many API calls.
    pub fn api_len(&self) -> usize {
        self.trace.api.len()
    }

    /// How many API calls are of a domain `pick` accepts (by [`Api::domain`]), so a writer
    /// can leave out a pass over the calls that would find none.
    pub fn api_count(&self, pick: impl Fn(ApiDomain) -> bool) -> usize {
        ApiDomain::ALL
            .iter()
            .filter(|&&d| pick(d))
            .map(|&d| self.domain_calls[d as usize])
            .sum()
    }

    /// The least and greatest timestamp, start or end, of any API call (`None`: no calls).
    pub fn api_bounds(&self) -> Option<(u64, u64)> {
        self.api_bounds
    }

    /// Whether every pass over the API calls read them all (a spilled run may fail to read
    /// back): writers check this before keeping what they wrote.
    pub fn check(&self) -> Result<(), SpillError> {
        self.trace.api.check()
    }

    /// The process's agents.
    pub fn agents(&self) -> &'a [Agent] {
        self.labels.agents()
    }

    /// The kernel symbol of a kernel id.
    pub fn symbol(&self, kernel_id: u64) -> Option<&'a KernelSymbolRecord> {
        self.symbols.get(&kernel_id).copied()
    }

    /// The kernel's name (as the reader left it: demangled unless `-M`), `""` if unknown.
    pub fn kernel_name(&self, kernel_id: u64) -> &'a str {
        self.symbol(kernel_id)
            .map_or("", |s| self.trace.string(s.name))
    }

    /// The function name of an API call.
    pub fn api_name(&self, api: &Api) -> std::borrow::Cow<'a, str> {
        self.trace
            .operation_name(api.record.domain, api.record.operation)
    }

    /// The text of an interned string.
    pub fn string(&self, id: StringId) -> &'a str {
        self.trace.string(id)
    }

    /// The call that issued the dispatch, copy or marker with this correlation id: the
    /// outermost call carrying it (nested calls share it), else the first; `None` when no
    /// traced call has it.
    pub fn issuing_call(&self, correlation_id: u64) -> Option<&Api> {
        self.issuing.get(&correlation_id)
    }

    /// The HIP stream of the first dispatch or copy with this correlation id.
    pub fn stream_of(&self, correlation_id: u64) -> Option<u64> {
        self.streams.get(&correlation_id).copied()
    }

    /// The agent with a driver node id.
    pub fn agent(&self, node_id: u32) -> Option<&'a Agent> {
        self.agents().iter().find(|a| a.node_id == node_id)
    }
}

/// Whether every pass over every process's calls read them all (see [`ProcessView::check`]).
pub(crate) fn check_all(processes: &[ProcessView<'_>]) -> Result<(), SpillError> {
    processes.iter().try_for_each(ProcessView::check)
}

/// The API calls of a view, resolved one at a time (see [`ProcessView::api`]).
pub struct ApiIter<'a> {
    records: trace_records::records::Iter<'a, ApiRecord>,
    ids: Ids,
    /// Per thread, the calls still open: (end, id); the thread of the last call first looked
    /// up (calls come in runs of one thread).
    open: Vec<(u32, Vec<(u64, u64)>)>,
    last: usize,
    /// Where each thread's stack is in `open`.
    slots: HashMap<u32, usize>,
}

impl Iterator for ApiIter<'_> {
    type Item = Api;

    fn next(&mut self) -> Option<Api> {
        let r = self.records.next()?;
        let id = self.ids.id_of(r.correlation_id);
        // The enclosing call: the latest-starting earlier call of the thread that has not
        // ended when this one starts (and does not end before it).
        if self
            .open
            .get(self.last)
            .is_none_or(|(t, _)| *t != r.thread_id)
        {
            let open = &mut self.open;
            self.last = *self.slots.entry(r.thread_id).or_insert_with(|| {
                open.push((r.thread_id, Vec::new()));
                open.len() - 1
            });
        }
        let stack = &mut self.open[self.last].1;
        while stack
            .last()
            .is_some_and(|&(end, _)| end < r.end || end <= r.start)
        {
            stack.pop();
        }
        let ancestor = stack.last().map_or(0, |&(_, a)| a);
        stack.push((r.end, id));
        Some(Api {
            record: r,
            domain: domain_of(r.domain),
            id,
            ancestor,
        })
    }
}

/// Each domain by its number; an unknown number reads as [`ApiDomain::HsaCore`].
const DOMAINS: [ApiDomain; 256] = {
    let mut t = [ApiDomain::HsaCore; 256];
    let mut k = 0;
    while k < ApiDomain::ALL.len() {
        t[ApiDomain::ALL[k] as usize] = ApiDomain::ALL[k];
        k += 1;
    }
    t
};

/// The domain a call's stored domain number resolves to (an unknown one: HSA core).
#[inline]
fn domain_of(number: u8) -> ApiDomain {
    DOMAINS[usize::from(number)]
}

/// Gives ids: the recorded one to the first to carry it, fresh ones above the highest to the
/// rest.
struct Ids {
    next: u64,
    claimed: Claimed,
}

impl Ids {
    fn new(highest: u64, records: usize) -> Self {
        Ids {
            next: highest,
            claimed: Claimed::new(highest, records),
        }
    }

    fn id_of(&mut self, recorded: u64) -> u64 {
        if recorded != 0 && self.claimed.insert(recorded) {
            recorded
        } else {
            self.next += 1;
            self.next
        }
    }
}

/// The correlation ids already given: a bit per id up to the highest when that costs at most
/// a few bytes a record (the tool's ids count up from 1), else a set.
enum Claimed {
    Bits(Vec<u64>),
    Set(HashSet<u64>),
}

impl Claimed {
    fn new(highest: u64, records: usize) -> Self {
        let words = highest / 64 + 1;
        match usize::try_from(words) {
            Ok(words) if words <= records + 1024 => Self::Bits(vec![0; words]),
            _ => Self::Set(HashSet::with_capacity(records.min(1 << 20))),
        }
    }

    /// Claims `id`; whether it was free.
    fn insert(&mut self, id: u64) -> bool {
        match self {
            Self::Bits(words) => {
                let Some(word) = usize::try_from(id / 64).ok().and_then(|w| words.get_mut(w))
                else {
                    return false;
                };
                let bit = 1u64 << (id % 64);
                let free = *word & bit == 0;
                *word |= bit;
                free
            }
            Self::Set(set) => set.insert(id),
        }
    }
}

/// rocprofiler's buffer-tracing kind of an API domain (the `kind` JSON and Perfetto record).
pub fn tracing_kind(domain: ApiDomain) -> u32 {
    match domain {
        ApiDomain::HsaCore => 1,
        ApiDomain::HsaAmdExt => 2,
        ApiDomain::HsaImage => 3,
        ApiDomain::HsaFinalize => 4,
        ApiDomain::HipRuntime => 21,
        ApiDomain::HipCompiler => 22,
        ApiDomain::MarkerCore => 7,
        ApiDomain::MarkerControl => 8,
        ApiDomain::MarkerName => 9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(correlation_id: u64, start: u64, end: u64, thread: u32) -> ApiRecord {
        ApiRecord {
            correlation_id,
            start,
            end,
            thread_id: thread,
            operation: 0,
            domain: ApiDomain::HipRuntime as u8,
            reserved: 0,
        }
    }

    #[test]
    fn nested_calls_name_the_call_that_encloses_them_on_their_thread() {
        let calls = vec![
            call(1, 10, 100, 1),  // 1
            call(1, 20, 30, 1),   // nested: a fresh id, in 1
            call(1, 25, 28, 1),   // nested in the one above
            call(2, 40, 90, 1),   // 2 in 1
            call(3, 50, 60, 2),   // 3: another thread, outermost
            call(4, 95, 100, 1),  // 4 in 1 (ends with it)
            call(5, 110, 120, 1), // 5 outermost
            call(6, 110, 130, 1), // 6: starts with 5 but encloses it
        ];
        let trace = ProcessTrace {
            api: calls.into(),
            ..Default::default()
        };
        let labels = AgentLabels::default();
        let v = ProcessView::new(&trace, &labels);
        let got: Vec<(u64, u64, u64)> = v
            .api()
            .map(|a| (a.record.start, a.id, a.ancestor))
            .collect();
        assert_eq!(
            got,
            [
                (10, 1, 0),
                (20, 7, 1),
                (25, 8, 7),
                (40, 2, 1),
                (50, 3, 0),
                (95, 4, 1),
                (110, 6, 0),
                (110, 5, 6),
            ]
        );
        assert_eq!(v.api().count(), 8, "a second pass reads them again");
    }

    #[test]
    fn claimed_ids_are_free_once_either_way() {
        for mut claimed in [Claimed::new(200, 10), Claimed::new(u64::MAX, 10)] {
            assert!(claimed.insert(200) && !claimed.insert(200));
            assert!(claimed.insert(63) && claimed.insert(64) && !claimed.insert(63));
        }
        assert!(matches!(Claimed::new(200, 10), Claimed::Bits(_)));
        assert!(matches!(Claimed::new(1 << 40, 10), Claimed::Set(_)));
    }
}
