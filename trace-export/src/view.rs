//! One resolved view of a process's records, built once and shared by the exporters: records
//! in time order, names and categories resolved, the process's threads, queues and streams
//! listed, every API call given a run-unique id and its enclosing call.
//!
//! The tool gives an API call nested in another (HSA inside HIP) the correlation id of the
//! outermost call, so correlation ids are not unique across API records; formats that need a
//! unique id per call (rocpd regions, JSON `correlation_id.internal`, Perfetto flows) use
//! [`Api::id`], and [`Api::ancestor`] names the enclosing call's id (0 for an outermost call).

use std::collections::{BTreeSet, HashMap, HashSet};
use trace_records::agents::{Agent, AgentLabels};
use trace_records::record::*;
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
pub struct Api<'a> {
    /// The record.
    pub record: &'a ApiRecord,
    /// Its domain.
    pub domain: ApiDomain,
    /// A run-unique id (1.. in time order over the process's calls; see the module text).
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
    /// API calls in (start, correlation id) order, markers' API calls included.
    pub api: Vec<Api<'a>>,
    /// Kernel dispatches in (start, dispatch id) order.
    pub dispatches: Vec<&'a KernelDispatchRecord>,
    /// Memory copies in (start, correlation id) order.
    pub copies: Vec<&'a MemoryCopyRecord>,
    /// ROCTx marks and ranges in (start, correlation id) order.
    pub markers: Vec<&'a MarkerRecord>,
    /// Counter values in (dispatch id, counter id) order.
    pub counters: Vec<&'a CounterRecord>,
    /// Every thread id any record names, ascending.
    pub threads: Vec<u32>,
    /// The earliest and latest timestamp of any record (the log's creation when it has none).
    pub span: (u64, u64),
    symbols: HashMap<u64, &'a KernelSymbolRecord>,
    /// By the correlation id of a dispatch, copy or marker: the position in `api` of the call
    /// that issued it.
    issuing: HashMap<u64, usize>,
    /// By the correlation id of a dispatch or copy: the HIP stream of the first one.
    streams: HashMap<u64, u64>,
}

impl<'a> ProcessView<'a> {
    /// Resolves `trace` (agents named by `labels`).
    pub fn new(trace: &'a ProcessTrace, labels: &'a AgentLabels) -> Self {
        // The reader leaves the calls in start order already; sorted here only if not.
        let key = |r: &ApiRecord| (r.start, r.correlation_id);
        let api = if trace.api.is_sorted_by_key(key) {
            with_ancestors(trace.api.iter())
        } else {
            let mut sorted: Vec<&ApiRecord> = trace.api.iter().collect();
            sorted.sort_by_key(|r| key(r));
            with_ancestors(sorted.into_iter())
        };
        let mut dispatches: Vec<&KernelDispatchRecord> = trace.dispatches.iter().collect();
        dispatches.sort_by_key(|d| (d.start, d.dispatch_id));
        let mut copies: Vec<&MemoryCopyRecord> = trace.copies.iter().collect();
        copies.sort_by_key(|c| (c.start, c.correlation_id));
        let mut markers: Vec<&MarkerRecord> = trace.markers.iter().collect();
        markers.sort_by_key(|m| (m.start, m.correlation_id));
        let mut counters: Vec<&CounterRecord> = trace.counters.iter().collect();
        counters.sort_by_key(|c| (c.dispatch_id, c.counter_id));

        let mut threads = BTreeSet::new();
        threads.extend(trace.api.iter().map(|r| r.thread_id));
        threads.extend(trace.dispatches.iter().map(|r| r.thread_id));
        threads.extend(trace.copies.iter().map(|r| r.thread_id));
        threads.extend(trace.markers.iter().map(|r| r.thread_id));
        let mut streams = HashMap::new();
        let enqueued = trace
            .dispatches
            .iter()
            .map(|d| (d.correlation_id, d.stream_id))
            .chain(trace.copies.iter().map(|c| (c.correlation_id, c.stream_id)));
        for (correlation, stream) in enqueued {
            streams.entry(correlation).or_insert(stream);
        }
        let issuing = issuing_calls(&api, &streams, &markers);

        let times = trace
            .api
            .iter()
            .map(|r| (r.start, r.end))
            .chain(trace.dispatches.iter().map(|r| (r.start, r.end)))
            .chain(trace.copies.iter().map(|r| (r.start, r.end)))
            .chain(trace.markers.iter().map(|r| (r.start, r.end)))
            .filter(|&(s, e)| s > 0 && e >= s);
        let span = times
            .fold(None, |acc: Option<(u64, u64)>, (s, e)| {
                Some(acc.map_or((s, e), |(a, b)| (a.min(s), b.max(e))))
            })
            .unwrap_or((trace.created_ns, trace.created_ns));
        ProcessView {
            trace,
            labels,
            api,
            dispatches,
            copies,
            markers,
            counters,
            threads: threads.into_iter().collect(),
            span,
            symbols: trace.symbols_by_id(),
            issuing,
            streams,
        }
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
    pub fn api_name(&self, api: &Api<'_>) -> std::borrow::Cow<'a, str> {
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
    pub fn issuing_call(&self, correlation_id: u64) -> Option<&Api<'a>> {
        self.issuing.get(&correlation_id).map(|&k| &self.api[k])
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

/// For each correlation id of a dispatch, copy or marker, the position of the call that issued
/// it (see [`ProcessView::issuing_call`]). Only those ids are indexed, so the map stays as small
/// as the asynchronous records.
fn issuing_calls(
    api: &[Api<'_>],
    enqueued: &HashMap<u64, u64>,
    markers: &[&MarkerRecord],
) -> HashMap<u64, usize> {
    let mut found: HashMap<u64, usize> = HashMap::new();
    if enqueued.is_empty() && markers.is_empty() {
        return found;
    }
    let marker_ids: HashSet<u64> = markers.iter().map(|m| m.correlation_id).collect();
    for (k, a) in api.iter().enumerate() {
        let c = a.record.correlation_id;
        if !enqueued.contains_key(&c) && !marker_ids.contains(&c) {
            continue;
        }
        match found.get(&c) {
            None => {
                found.insert(c, k);
            }
            Some(&first) if api[first].ancestor != 0 && a.ancestor == 0 => {
                found.insert(c, k);
            }
            Some(_) => {}
        }
    }
    found
}

/// Gives each call (sorted by start) an id and the id of the call it is nested in on its
/// thread: the latest-starting earlier call of the thread that has not ended when it starts.
fn with_ancestors<'a>(api: impl ExactSizeIterator<Item = &'a ApiRecord>) -> Vec<Api<'a>> {
    // Per thread, the calls still open: (end, id).
    let mut open: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    let mut out = Vec::with_capacity(api.len());
    for (k, r) in api.enumerate() {
        let id = k as u64 + 1;
        let stack = open.entry(r.thread_id).or_default();
        while stack
            .last()
            .is_some_and(|&(end, _)| end < r.end || end <= r.start)
        {
            stack.pop();
        }
        let ancestor = stack.last().map_or(0, |&(_, a)| a);
        stack.push((r.end, id));
        out.push(Api {
            record: r,
            domain: ApiDomain::from_u8(r.domain).unwrap_or(ApiDomain::HsaCore),
            id,
            ancestor,
        });
    }
    out
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

    fn call(start: u64, end: u64, thread: u32) -> ApiRecord {
        ApiRecord {
            correlation_id: start,
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
        let calls = [
            call(10, 100, 1),  // 1
            call(20, 30, 1),   // 2 in 1
            call(25, 28, 1),   // 3 in 2
            call(40, 90, 1),   // 4 in 1
            call(50, 60, 2),   // 5: another thread, outermost
            call(95, 100, 1),  // 6 in 1 (ends with it)
            call(110, 120, 1), // 7 outermost
        ];
        let v = with_ancestors(calls.iter());
        let got: Vec<(u64, u64)> = v.iter().map(|a| (a.id, a.ancestor)).collect();
        assert_eq!(
            got,
            [(1, 0), (2, 1), (3, 2), (4, 1), (5, 0), (6, 1), (7, 0)]
        );
    }
}
