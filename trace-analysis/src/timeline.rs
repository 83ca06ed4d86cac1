//! Timeline trust: the seed's containment test, durations, and the clock domains.
//!
//! **Containment.** A kernel dispatch must lie inside the host interval from its launch — the
//! outermost API call carrying its correlation id, which must start no later than the
//! dispatch starts — to the end of the first later call on the launching thread that consumes
//! its result, which must end no earlier than the dispatch ends. Consuming calls: after a HIP
//! launch, a synchronous device-to-host copy (`hipMemcpy*` without `Async` whose copy record
//! says device to host, or whose name says `DtoH`), `hipDeviceSynchronize`,
//! `hipStreamSynchronize` (the stream is not recorded, so any stream counts) or
//! `hipCtxSynchronize`; after an HSA launch (a process traced at the HSA level only, or work the
//! HIP runtime enqueued outside any HIP call), an `hsa_signal_wait_*` or
//! `hsa_amd_signal_wait_*` (the signal waited for is not recorded: the first wait after the
//! launch is taken). A dispatch enqueued by a synchronous `hipMemcpy*` (a blit kernel) must end
//! inside that call. A memory copy must lie inside the call that issued it when that call is
//! synchronous (`hipMemcpy*` without `Async`); after an asynchronous one it must start after
//! the call starts and end before the first consuming call, as a dispatch.
//!
//! A record is *checked* when its call is found: *held* or *violated* (by how many ns at which
//! end), and *start-only* when no consuming call follows (only its start could be checked). It
//! is *unmatched*, with the reason, when it has no timestamps, no call carries its correlation
//! id, that call issues no such work (no launch or copy in its name: files of different runs
//! put together), or ran on another thread than the dispatch says.
//!
//! **Clock domains.** API calls and ROCTx ranges are on the host timeline (CLOCK_MONOTONIC, ns);
//! dispatches and copies carry GPU timestamps that the runtime converts to it, so they are
//! comparable only if that conversion is right — which is what containment tests. A constant
//! skew of the GPU timeline shows as violations at one end, and as a range of offsets that
//! would satisfy every check at once (reported with the median violation); no such range
//! means the violations are not one offset (a wrongly scaled clock, or mismatched records).
//! The tightest margins say how large a skew could go unnoticed. Device records more than a
//! second outside the span of the API calls are counted too: they are on another clock, or
//! come from another run.

use crate::model::{Api, Call, Process};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use trace_records::CopyDirection;

/// How many findings of one kind a report keeps (the rest are counted).
pub const KEEP: usize = 1000;

/// What kind of record a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordKind {
    /// An API call.
    Call,
    /// A kernel dispatch.
    Dispatch,
    /// A memory copy.
    Copy,
    /// A ROCTx range.
    Range,
}

/// Which end of the interval a violation breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// The record starts before its call.
    Start,
    /// The record ends after its bounding call.
    End,
}

/// Containment counts of one record kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Records of the kind.
    pub records: usize,
    /// Whose call was found.
    pub checked: usize,
    /// Checked and inside their interval.
    pub held: usize,
    /// Checked and outside it.
    pub violated: usize,
    /// Checked at the start only (no consuming call follows).
    pub start_only: usize,
    /// Not checked.
    pub unmatched: usize,
}

/// One containment violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Dispatch or copy.
    pub record: RecordKind,
    /// The dispatch id, or the copy's number (1-based, in time order).
    pub id: u64,
    /// The kernel, or the copy's direction.
    pub name: String,
    /// Its correlation id.
    pub correlation_id: u64,
    /// Which end.
    pub bound: Bound,
    /// The call that bounds it there.
    pub call: String,
    /// By how much, ns.
    pub by_ns: u64,
}

/// Why a record could not be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unchecked {
    /// Both timestamps are 0 (known only from a counter file's set-aside values).
    NoTimestamps,
    /// No API call carries its correlation id (its API was not traced).
    NoCall,
    /// The call carrying its correlation id launches or copies nothing.
    NotItsCall,
    /// That call ran on another thread than the record names.
    OtherThread,
}

impl Unchecked {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Unchecked::NoTimestamps => "no timestamps",
            Unchecked::NoCall => "no API call carries its correlation id (its API was not traced)",
            Unchecked::NotItsCall => {
                "the call carrying its correlation id launches or copies nothing (files of \
                 different runs put together?)"
            }
            Unchecked::OtherThread => "the call carrying its correlation id ran on another thread",
        }
    }
}

/// One record that could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unmatched {
    /// Dispatch or copy.
    pub record: RecordKind,
    /// As in [`Violation::id`].
    pub id: u64,
    /// As in [`Violation::name`].
    pub name: String,
    /// Its correlation id.
    pub correlation_id: u64,
    /// Why.
    pub reason: Unchecked,
}

/// The tightest margins of the records that held (ns), per kind and end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Margins {
    /// Dispatch start − launch start.
    pub dispatch_start_ns: Option<u64>,
    /// Bound end − dispatch end.
    pub dispatch_end_ns: Option<u64>,
    /// Copy start − call start.
    pub copy_start_ns: Option<u64>,
    /// Bound end − copy end.
    pub copy_end_ns: Option<u64>,
}

/// Zero and negative durations of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DurationTally {
    /// Records looked at.
    pub records: usize,
    /// End equal to start.
    pub zero: usize,
    /// End before start.
    pub negative: usize,
}

/// One zero or negative duration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadDuration {
    /// Which kind of record.
    pub record: RecordKind,
    /// Its name (function, kernel, direction, message).
    pub name: String,
    /// Its correlation id (a range: 0).
    pub correlation_id: u64,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// end − start.
    pub duration_ns: i64,
}

/// Durations: counts per kind and the bad ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Durations {
    /// API calls.
    pub calls: DurationTally,
    /// Dispatches.
    pub dispatches: DurationTally,
    /// Copies.
    pub copies: DurationTally,
    /// ROCTx ranges (marks are instants by nature and not counted).
    pub ranges: DurationTally,
    /// The zero and negative ones (the first [`KEEP`]).
    pub listed: Vec<BadDuration>,
}

/// A range of constant offsets, ns, that added to every device timestamp would satisfy every
/// check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OffsetRange {
    /// Smallest.
    pub min_ns: i64,
    /// Largest.
    pub max_ns: i64,
}

/// The violations' pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skew {
    /// `early` (device records start before their calls), `late` (they end after their
    /// bounds) or `both`.
    pub direction: String,
    /// Median violation, ns.
    pub median_ns: u64,
    /// Largest violation, ns.
    pub max_ns: u64,
    /// The offsets that would satisfy every check, when one offset can.
    pub constant_offset: Option<OffsetRange>,
    /// What it suggests, for people.
    pub verdict: String,
}

/// Clock domains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clock {
    /// The host records' timeline.
    pub host: String,
    /// The device records'.
    pub device: String,
    /// Device records (with timestamps).
    pub device_records: usize,
    /// Of which more than a second outside the span of the API calls.
    pub outside_host_span: usize,
    /// The violations' pattern, when there are violations.
    pub skew: Option<Skew>,
}

/// The timeline findings of one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Dispatches.
    pub dispatches: Tally,
    /// Copies.
    pub copies: Tally,
    /// Violations (the first [`KEEP`]).
    pub violations: Vec<Violation>,
    /// Every violation.
    pub violations_total: usize,
    /// Records not checked, by reason.
    pub unmatched_reasons: BTreeMap<String, usize>,
    /// Records not checked (the first [`KEEP`]).
    pub unmatched: Vec<Unmatched>,
    /// The tightest margins.
    pub margins: Margins,
    /// Zero and negative durations.
    pub durations: Durations,
    /// Clock domains.
    pub clock: Clock,
}

/// Host statement.
pub const HOST_CLOCK: &str =
    "API calls and ROCTx ranges: the host timeline (CLOCK_MONOTONIC, ns, read by the tracer)";
/// Device statement.
pub const DEVICE_CLOCK: &str = "kernel dispatches and memory copies: GPU timestamps the HSA \
                                runtime converts to the host timeline (the GPU's own wall clock \
                                runs at its own rate), comparable with the host's only when \
                                that conversion is right, which containment tests";

const SYNCHRONIZE: [&str; 5] = [
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipCtxSynchronize",
    "hipThreadSynchronize",
    "hipStreamSynchronize_spt",
];

fn is_sync_memcpy(name: &str) -> bool {
    name.starts_with("hipMemcpy") && !name.contains("Async")
}

fn is_hsa_wait(name: &str) -> bool {
    name.starts_with("hsa_signal_wait") || name.starts_with("hsa_amd_signal_wait")
}

/// Whether a call of this name may enqueue a kernel.
fn may_launch(api: Api, name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    match api {
        Api::Hip => {
            lower.contains("launch")
                || lower.starts_with("hipmemcpy")
                || lower.starts_with("hipmemset")
                || lower.contains("graph")
        }
        Api::Hsa | Api::Other => true,
        Api::Marker => false,
    }
}

/// Whether a call of this name may issue a copy.
fn may_copy(api: Api, name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    match api {
        Api::Hip => lower.contains("memcpy") || lower.contains("copy") || lower.contains("graph"),
        Api::Hsa => lower.contains("copy"),
        Api::Other => true,
        Api::Marker => false,
    }
}

/// What the checks need of a process's calls, indexed once.
struct Index<'a> {
    p: &'a Process,
    /// The outermost call of each correlation id.
    by_cid: HashMap<u64, usize>,
    /// Per thread, the calls (indices into `p.calls`, in start order) that consume HIP work.
    hip_consumers: HashMap<u64, Vec<usize>>,
    /// Per thread, the HSA signal waits.
    hsa_waits: HashMap<u64, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(p: &'a Process) -> Self {
        let mut by_cid: HashMap<u64, usize> = HashMap::new();
        for (k, c) in p.calls.iter().enumerate() {
            if c.api == Api::Marker {
                continue;
            }
            by_cid
                .entry(c.cid)
                .and_modify(|best| {
                    let b = &p.calls[*best];
                    if (c.start, std::cmp::Reverse(c.end)) < (b.start, std::cmp::Reverse(b.end)) {
                        *best = k;
                    }
                })
                .or_insert(k);
        }
        let d2h: std::collections::HashSet<u64> = p
            .copies
            .iter()
            .filter(|c| c.direction == Some(CopyDirection::DeviceToHost))
            .map(|c| c.cid)
            .collect();
        let mut hip_consumers: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut hsa_waits: HashMap<u64, Vec<usize>> = HashMap::new();
        for (k, c) in p.calls.iter().enumerate() {
            let name = p.name(c);
            match c.api {
                Api::Hip => {
                    let consumes = SYNCHRONIZE.contains(&name)
                        || (is_sync_memcpy(name)
                            && (name.contains("DtoH") || d2h.contains(&c.cid)));
                    if consumes {
                        hip_consumers.entry(c.tid).or_default().push(k);
                    }
                }
                Api::Hsa if is_hsa_wait(name) => hsa_waits.entry(c.tid).or_default().push(k),
                _ => {}
            }
        }
        Index {
            p,
            by_cid,
            hip_consumers,
            hsa_waits,
        }
    }

    /// The first consuming call on `issuer`'s thread that starts once it has returned.
    fn consumer(&self, issuer: usize) -> Option<usize> {
        let l = &self.p.calls[issuer];
        let lists: &[&HashMap<u64, Vec<usize>>] = match l.api {
            Api::Hip => &[&self.hip_consumers],
            Api::Hsa => &[&self.hsa_waits],
            Api::Other | Api::Marker => &[&self.hip_consumers, &self.hsa_waits],
        };
        lists
            .iter()
            .filter_map(|m| m.get(&l.tid))
            .filter_map(|list| {
                let from = list.partition_point(|&k| self.p.calls[k].start < l.end);
                list[from..].iter().copied().find(|&k| k != issuer)
            })
            .min_by_key(|&k| self.p.calls[k].start)
    }
}

/// One record to check.
struct Subject<'a> {
    record: RecordKind,
    id: u64,
    name: &'a str,
    cid: u64,
    tid: Option<u64>,
    start: u64,
    end: u64,
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Checked: the signed margins (start − call start; bound end − end), the bounding call.
    Checked {
        start_margin: i128,
        end: Option<(i128, usize)>,
        issuer: usize,
    },
    /// Not checked.
    Unmatched(Unchecked),
}

fn check(ix: &Index<'_>, s: &Subject<'_>) -> Outcome {
    if s.start == 0 && s.end == 0 {
        return Outcome::Unmatched(Unchecked::NoTimestamps);
    }
    let Some(&issuer) = ix.by_cid.get(&s.cid) else {
        return Outcome::Unmatched(Unchecked::NoCall);
    };
    let call: &Call = &ix.p.calls[issuer];
    let name = ix.p.name(call);
    let fits = match s.record {
        RecordKind::Dispatch => may_launch(call.api, name),
        _ => may_copy(call.api, name),
    };
    if !fits {
        return Outcome::Unmatched(Unchecked::NotItsCall);
    }
    if let Some(tid) = s.tid
        && call.tid != 0
        && tid != call.tid
    {
        return Outcome::Unmatched(Unchecked::OtherThread);
    }
    let synchronous = call.api == Api::Hip && is_sync_memcpy(name);
    let bound = if synchronous {
        Some(issuer)
    } else {
        ix.consumer(issuer)
    };
    Outcome::Checked {
        start_margin: i128::from(s.start) - i128::from(call.start),
        end: bound.map(|b| (i128::from(ix.p.calls[b].end) - i128::from(s.end), b)),
        issuer,
    }
}

fn magnitude(v: i128) -> u64 {
    u64::try_from(v.unsigned_abs()).unwrap_or(u64::MAX)
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Analyses `p`'s timeline.
pub fn analyse(p: &Process) -> Timeline {
    let ix = Index::new(p);
    let mut t = Timeline {
        dispatches: Tally::default(),
        copies: Tally::default(),
        violations: Vec::new(),
        violations_total: 0,
        unmatched_reasons: BTreeMap::new(),
        unmatched: Vec::new(),
        margins: Margins::default(),
        durations: durations(p),
        clock: Clock {
            host: HOST_CLOCK.into(),
            device: DEVICE_CLOCK.into(),
            device_records: 0,
            outside_host_span: 0,
            skew: None,
        },
    };
    let mut amounts: Vec<(Bound, u64)> = Vec::new();
    // The offsets c with  call start ≤ start + c  and  end + c ≤ bound end, for every check.
    let mut lo: Option<i128> = None;
    let mut hi: Option<i128> = None;
    let directions: Vec<String> = p.copies.iter().map(|c| c.direction_name().into()).collect();
    let subjects = p
        .dispatches
        .iter()
        .map(|d| Subject {
            record: RecordKind::Dispatch,
            id: d.id,
            name: &d.kernel,
            cid: d.cid,
            tid: d.tid,
            start: d.start,
            end: d.end,
        })
        .chain(p.copies.iter().zip(&directions).map(|(c, dir)| Subject {
            record: RecordKind::Copy,
            id: c.index as u64 + 1,
            name: dir,
            cid: c.cid,
            tid: None,
            start: c.start,
            end: c.end,
        }));
    for s in subjects {
        let (tally, margin_start, margin_end) = match s.record {
            RecordKind::Dispatch => (
                &mut t.dispatches,
                &mut t.margins.dispatch_start_ns,
                &mut t.margins.dispatch_end_ns,
            ),
            _ => (
                &mut t.copies,
                &mut t.margins.copy_start_ns,
                &mut t.margins.copy_end_ns,
            ),
        };
        tally.records += 1;
        match check(&ix, &s) {
            Outcome::Unmatched(why) => {
                tally.unmatched += 1;
                *t.unmatched_reasons
                    .entry(why.describe().to_owned())
                    .or_default() += 1;
                if t.unmatched.len() < KEEP {
                    t.unmatched.push(Unmatched {
                        record: s.record,
                        id: s.id,
                        name: s.name.to_owned(),
                        correlation_id: s.cid,
                        reason: why,
                    });
                }
            }
            Outcome::Checked {
                start_margin,
                end,
                issuer,
            } => {
                tally.checked += 1;
                lo = Some(lo.map_or(-start_margin, |v| v.max(-start_margin)));
                let mut broke = Vec::new();
                if start_margin < 0 {
                    broke.push((Bound::Start, magnitude(start_margin), issuer));
                } else {
                    let m = magnitude(start_margin);
                    *margin_start = Some(margin_start.map_or(m, |v| v.min(m)));
                }
                match end {
                    Some((end_margin, bound)) => {
                        hi = Some(hi.map_or(end_margin, |v| v.min(end_margin)));
                        if end_margin < 0 {
                            broke.push((Bound::End, magnitude(end_margin), bound));
                        } else {
                            let m = magnitude(end_margin);
                            *margin_end = Some(margin_end.map_or(m, |v| v.min(m)));
                        }
                    }
                    None => tally.start_only += 1,
                }
                if broke.is_empty() {
                    tally.held += 1;
                } else {
                    tally.violated += 1;
                }
                for (bound, by, call) in broke {
                    amounts.push((bound, by));
                    t.violations_total += 1;
                    if t.violations.len() < KEEP {
                        t.violations.push(Violation {
                            record: s.record,
                            id: s.id,
                            name: s.name.to_owned(),
                            correlation_id: s.cid,
                            bound,
                            call: p.name(&p.calls[call]).to_owned(),
                            by_ns: by,
                        });
                    }
                }
            }
        }
    }
    let (device_records, outside) = outside_host_span(p);
    t.clock.device_records = device_records;
    t.clock.outside_host_span = outside;
    t.clock.skew = skew(&amounts, lo, hi);
    t
}

/// The pattern of the violations (`amounts`), given the feasible offsets `[lo, hi]`.
fn skew(amounts: &[(Bound, u64)], lo: Option<i128>, hi: Option<i128>) -> Option<Skew> {
    if amounts.is_empty() {
        return None;
    }
    let early = amounts.iter().any(|a| a.0 == Bound::Start);
    let late = amounts.iter().any(|a| a.0 == Bound::End);
    let mut v: Vec<u64> = amounts.iter().map(|a| a.1).collect();
    v.sort_unstable();
    let median = v[v.len() / 2];
    let max = *v.last().unwrap_or(&0);
    let lo = lo.unwrap_or(i128::MIN);
    let hi = hi.unwrap_or(i128::MAX);
    let constant_offset = (lo <= hi).then(|| OffsetRange {
        min_ns: clamp(lo),
        max_ns: clamp(hi),
    });
    let direction = match (early, late) {
        (true, false) => "early",
        (false, true) => "late",
        _ => "both",
    };
    let verdict = match (&constant_offset, direction) {
        (Some(r), "early") => format!(
            "every violation is a device record starting before its call, and adding between \
             {} and {} ns to every device timestamp would satisfy every check: the GPU timeline \
             looks skewed early by a constant offset",
            r.min_ns,
            if r.max_ns == i64::MAX {
                "any more".to_owned()
            } else {
                r.max_ns.to_string()
            }
        ),
        (Some(r), "late") => format!(
            "every violation is a device record ending after its bound, and subtracting between \
             {} and {} ns from every device timestamp would satisfy every check: the GPU \
             timeline looks skewed late by a constant offset",
            r.max_ns.saturating_neg(),
            if r.min_ns == i64::MIN {
                "any more".to_owned()
            } else {
                r.min_ns.saturating_neg().to_string()
            }
        ),
        (Some(r), _) => format!(
            "one constant offset between {} and {} ns would satisfy every check",
            r.min_ns, r.max_ns
        ),
        (None, _) => "no single offset of the device timestamps satisfies every check: the \
                      violations are not a constant skew (a wrongly scaled clock, or records \
                      matched to the wrong calls)"
            .to_owned(),
    };
    Some(Skew {
        direction: direction.into(),
        median_ns: median,
        max_ns: max,
        constant_offset,
        verdict,
    })
}

/// Device records (with timestamps), and how many lie more than a second outside the span of
/// the API calls (none when there are no calls).
fn outside_host_span(p: &Process) -> (usize, usize) {
    const SLACK: u64 = 1_000_000_000;
    let spans = p
        .dispatches
        .iter()
        .map(|d| (d.start, d.end))
        .chain(p.copies.iter().map(|c| (c.start, c.end)))
        .filter(|&(s, e)| s != 0 || e != 0);
    let first = p.calls.iter().map(|c| c.start).min();
    let last = p.calls.iter().map(|c| c.end).max();
    let mut n = 0;
    let mut outside = 0;
    for (s, e) in spans {
        n += 1;
        if let (Some(first), Some(last)) = (first, last)
            && (s.saturating_add(SLACK) < first || e > last.saturating_add(SLACK))
        {
            outside += 1;
        }
    }
    (n, outside)
}

fn durations(p: &Process) -> Durations {
    let mut d = Durations::default();
    let look = |tally: &mut DurationTally,
                listed: &mut Vec<BadDuration>,
                record: RecordKind,
                name: &str,
                cid: u64,
                (start, end): (u64, u64)| {
        tally.records += 1;
        if end > start {
            return;
        }
        if end == start {
            tally.zero += 1;
        } else {
            tally.negative += 1;
        }
        if listed.len() < KEEP {
            listed.push(BadDuration {
                record,
                name: name.to_owned(),
                correlation_id: cid,
                start,
                end,
                duration_ns: clamp(i128::from(end) - i128::from(start)),
            });
        }
    };
    for c in &p.calls {
        look(
            &mut d.calls,
            &mut d.listed,
            RecordKind::Call,
            p.name(c),
            c.cid,
            (c.start, c.end),
        );
    }
    for k in p.dispatches.iter().filter(|k| k.start != 0 || k.end != 0) {
        look(
            &mut d.dispatches,
            &mut d.listed,
            RecordKind::Dispatch,
            &k.kernel,
            k.cid,
            (k.start, k.end),
        );
    }
    for c in &p.copies {
        look(
            &mut d.copies,
            &mut d.listed,
            RecordKind::Copy,
            c.direction_name(),
            c.cid,
            (c.start, c.end),
        );
    }
    for m in p.markers.iter().filter(|m| !m.instant) {
        look(
            &mut d.ranges,
            &mut d.listed,
            RecordKind::Range,
            &m.message,
            0,
            (m.start, m.end),
        );
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Copy, Dispatch, Interner};

    /// A process built call by call.
    struct Build {
        p: Process,
        names: Interner,
    }

    impl Build {
        fn new() -> Self {
            Build {
                p: Process::new("test".into()),
                names: Interner::default(),
            }
        }

        fn call(mut self, api: Api, name: &str, cid: u64, tid: u64, start: u64, end: u64) -> Self {
            let name = self.names.intern(&mut self.p.names, name);
            self.p.calls.push(Call {
                name,
                api,
                cid,
                tid,
                start,
                end,
            });
            self
        }

        fn hip(self, name: &str, cid: u64, start: u64, end: u64) -> Self {
            self.call(Api::Hip, name, cid, 1, start, end)
        }

        fn kernel(mut self, id: u64, cid: u64, start: u64, end: u64) -> Self {
            self.p.dispatches.push(Dispatch {
                id,
                kernel: "k".into(),
                cid,
                tid: Some(1),
                start,
                end,
                grid: [1; 3],
                workgroup: [1; 3],
                agent: "Agent 1".into(),
            });
            self
        }

        fn copy(mut self, cid: u64, dir: CopyDirection, start: u64, end: u64) -> Self {
            self.p.copies.push(Copy {
                index: 0,
                cid,
                direction: Some(dir),
                start,
                end,
            });
            self
        }

        fn done(mut self) -> Process {
            self.p.sort();
            self.p
        }
    }

    const D2H: CopyDirection = CopyDirection::DeviceToHost;
    const H2D: CopyDirection = CopyDirection::HostToDevice;

    /// One iteration of the reference workload: copy in, launch, copy out.
    fn iteration() -> Build {
        Build::new()
            .hip("hipMemcpy", 1, 100, 200)
            .copy(1, H2D, 120, 180)
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 230, 300)
            .hip("hipMemcpy", 3, 225, 400)
            .copy(3, D2H, 310, 390)
    }

    #[test]
    fn the_reference_iteration_holds_with_its_margins() {
        let t = analyse(&iteration().done());
        assert_eq!(
            (
                t.dispatches.checked,
                t.dispatches.held,
                t.dispatches.violated
            ),
            (1, 1, 0)
        );
        assert_eq!((t.copies.checked, t.copies.held), (2, 2));
        assert!(t.violations.is_empty() && t.clock.skew.is_none());
        assert_eq!(t.margins.dispatch_start_ns, Some(20));
        assert_eq!(t.margins.dispatch_end_ns, Some(100));
        assert_eq!(t.margins.copy_start_ns, Some(20));
        assert_eq!(t.margins.copy_end_ns, Some(10));
    }

    #[test]
    fn equal_timestamps_are_inside() {
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 210, 400)
            .hip("hipDeviceSynchronize", 3, 230, 400)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.held, t.dispatches.violated), (1, 0));
        assert_eq!(t.margins.dispatch_start_ns, Some(0));
        assert_eq!(t.margins.dispatch_end_ns, Some(0));
    }

    #[test]
    fn a_dispatch_before_its_launch_or_after_its_copy_back_is_a_violation_by_so_much() {
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 200, 300)
            .hip("hipMemcpy", 3, 225, 290)
            .copy(3, D2H, 260, 280)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.checked, t.dispatches.violated), (1, 1));
        let bounds: Vec<(Bound, u64, &str)> = t
            .violations
            .iter()
            .map(|v| (v.bound, v.by_ns, v.call.as_str()))
            .collect();
        assert_eq!(
            bounds,
            [
                (Bound::Start, 10, "hipLaunchKernel"),
                (Bound::End, 10, "hipMemcpy")
            ]
        );
        // Early at one end and late at the other: no single offset.
        let skew = t.clock.skew.unwrap();
        assert_eq!(skew.direction, "both");
        assert_eq!(skew.constant_offset, None);
    }

    #[test]
    fn a_host_to_device_copy_does_not_bound_a_dispatch_but_a_synchronize_does() {
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 230, 600)
            .hip("hipMemcpy", 3, 230, 300)
            .copy(3, H2D, 240, 290)
            .hip("hipStreamSynchronize", 4, 310, 700)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.held, t.dispatches.start_only), (1, 0));
        assert_eq!(t.margins.dispatch_end_ns, Some(100));
    }

    #[test]
    fn a_memcpy_of_unknown_direction_bounds_nothing_but_dtoh_by_name_does() {
        // No copy records: a plain hipMemcpy's direction is unknown.
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 230, 600)
            .hip("hipMemcpy", 3, 230, 700)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.held, t.dispatches.start_only), (1, 1));
        assert_eq!(t.margins.dispatch_end_ns, None);
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 230, 600)
            .hip("hipMemcpyDtoH", 3, 230, 500)
            .done();
        let t = analyse(&p);
        assert_eq!(t.dispatches.violated, 1);
        assert_eq!(t.violations[0].by_ns, 100);
    }

    #[test]
    fn consumers_on_other_threads_or_before_the_launch_do_not_count() {
        let p = Build::new()
            .hip("hipDeviceSynchronize", 1, 100, 205)
            .hip("hipLaunchKernel", 2, 210, 220)
            .kernel(1, 2, 230, 300)
            .call(Api::Hip, "hipDeviceSynchronize", 3, 2, 230, 250)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.held, t.dispatches.start_only), (1, 1));
    }

    #[test]
    fn a_blit_kernel_of_a_synchronous_memcpy_ends_inside_it() {
        let p = Build::new()
            .hip("hipMemcpy", 5, 100, 200)
            .kernel(1, 5, 120, 250)
            .hip("hipDeviceSynchronize", 6, 300, 400)
            .done();
        let t = analyse(&p);
        assert_eq!(t.dispatches.violated, 1);
        assert_eq!(
            (t.violations[0].bound, t.violations[0].by_ns),
            (Bound::End, 50)
        );
    }

    #[test]
    fn records_without_their_call_are_unmatched_with_the_reason() {
        let mut b = Build::new()
            .hip("__hipRegisterFatBinary", 1, 10, 20)
            .hip("hipLaunchKernel", 2, 30, 40)
            .kernel(1, 1, 50, 60) // cid 1 launches nothing
            .kernel(2, 9, 50, 60) // no call with cid 9
            .kernel(4, 0, 0, 0) // no timestamps
            .copy(1, D2H, 50, 60);
        b = b.kernel(3, 2, 50, 60);
        b.p.dispatches.last_mut().unwrap().tid = Some(7); // on another thread
        let t = analyse(&b.done());
        assert_eq!((t.dispatches.records, t.dispatches.unmatched), (4, 4));
        assert_eq!((t.copies.records, t.copies.unmatched), (1, 1));
        let mut reasons: Vec<(u64, Unchecked)> = t
            .unmatched
            .iter()
            .filter(|u| u.record == RecordKind::Dispatch)
            .map(|u| (u.id, u.reason))
            .collect();
        reasons.sort();
        assert_eq!(
            reasons,
            [
                (1, Unchecked::NotItsCall),
                (2, Unchecked::NoCall),
                (3, Unchecked::OtherThread),
                (4, Unchecked::NoTimestamps)
            ]
        );
        assert_eq!(t.unmatched_reasons.values().sum::<usize>(), 5);
        assert!(t.violations.is_empty());
    }

    #[test]
    fn the_outermost_call_of_a_correlation_id_is_the_launch() {
        // The tool gives nested HSA calls the HIP call's correlation id.
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 200, 300)
            .call(Api::Hsa, "hsa_signal_store_screlease", 2, 1, 250, 260)
            .kernel(1, 2, 240, 400)
            .hip("hipMemcpyDtoH", 3, 310, 500)
            .done();
        let t = analyse(&p);
        assert_eq!(t.dispatches.held, 1);
        assert_eq!(t.margins.dispatch_start_ns, Some(40));
    }

    #[test]
    fn hsa_only_traces_are_bounded_by_the_next_signal_wait() {
        let p = Build::new()
            .call(Api::Hsa, "hsa_signal_store_screlease", 2, 1, 200, 210)
            .kernel(1, 2, 220, 400)
            .call(Api::Hsa, "hsa_amd_memory_async_copy", 3, 1, 300, 310)
            .copy(3, D2H, 405, 450)
            .call(Api::Hsa, "hsa_signal_wait_scacquire", 4, 1, 320, 460)
            .done();
        let t = analyse(&p);
        assert_eq!((t.dispatches.held, t.copies.held), (1, 1));
        assert_eq!(t.margins.dispatch_end_ns, Some(60));
        assert_eq!(t.margins.copy_end_ns, Some(10));
        // An asynchronous copy with no wait after it is checked at its start only.
        let p = Build::new()
            .call(Api::Hsa, "hsa_amd_memory_async_copy", 3, 1, 300, 310)
            .copy(3, D2H, 405, 450)
            .done();
        let t = analyse(&p);
        assert_eq!((t.copies.held, t.copies.start_only), (1, 1));
    }

    #[test]
    fn a_constant_early_skew_is_recognised_with_the_offsets_that_fix_it() {
        // Every device timestamp of two iterations moved 1000 ns earlier.
        let p = Build::new()
            .hip("hipMemcpy", 1, 1000, 2000)
            .copy(1, H2D, 1200 - 1000, 1800 - 1000)
            .hip("hipLaunchKernel", 2, 2100, 2200)
            .kernel(1, 2, 2300 - 1000, 3000 - 1000)
            .hip("hipMemcpy", 3, 2250, 4000)
            .copy(3, D2H, 3100 - 1000, 3900 - 1000)
            .done();
        let t = analyse(&p);
        assert_eq!(t.dispatches.violated + t.copies.violated, 3);
        let skew = t.clock.skew.unwrap();
        assert_eq!(skew.direction, "early");
        let r = skew.constant_offset.unwrap();
        assert!(r.min_ns <= 1000 && 1000 <= r.max_ns, "{r:?}");
        // Needed at least 800 (the first copy started 200 after its call), at most 1100 (the
        // last copy ends 100 before its call).
        assert_eq!((r.min_ns, r.max_ns), (800, 1100));
        assert_eq!(skew.median_ns, 800);
        assert!(skew.verdict.contains("skewed early"), "{}", skew.verdict);
    }

    #[test]
    fn zero_and_negative_durations_are_listed_but_marks_are_not() {
        let mut p = Build::new()
            .hip("hipGetDevice", 1, 10, 10)
            .hip("hipFree", 2, 30, 20)
            .kernel(1, 9, 50, 40)
            .copy(9, D2H, 60, 60)
            .done();
        p.markers.push(crate::model::Marker {
            message: "mark".into(),
            instant: true,
            start: 5,
            end: 5,
        });
        p.markers.push(crate::model::Marker {
            message: "range".into(),
            instant: false,
            start: 9,
            end: 3,
        });
        let d = durations(&p);
        assert_eq!((d.calls.zero, d.calls.negative), (1, 1));
        assert_eq!(d.dispatches.negative, 1);
        assert_eq!(d.copies.zero, 1);
        assert_eq!((d.ranges.records, d.ranges.negative), (1, 1));
        let listed: Vec<(&str, i64)> = d
            .listed
            .iter()
            .map(|b| (b.name.as_str(), b.duration_ns))
            .collect();
        assert_eq!(
            listed,
            [
                ("hipGetDevice", 0),
                ("hipFree", -10),
                ("k", -10),
                ("MEMORY_COPY_DEVICE_TO_HOST", 0),
                ("range", -6)
            ]
        );
    }

    #[test]
    fn device_records_far_from_the_calls_are_counted() {
        let p = Build::new()
            .hip("hipLaunchKernel", 2, 1_000, 2_000)
            .kernel(1, 2, 5_000_000_000, 5_000_000_100)
            .kernel(2, 2, 3_000, 4_000)
            .done();
        let t = analyse(&p);
        assert_eq!((t.clock.device_records, t.clock.outside_host_span), (2, 1));
    }
}
