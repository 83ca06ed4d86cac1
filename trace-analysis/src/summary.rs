//! Where time goes: rocprofv3's summary per domain (`trace_export::stats`, the `-S` tables'
//! accumulators) — name, calls, total, average, percent of the domain, min, max, standard
//! deviation — and how much of the process's span the GPU spent in kernels and copies (the
//! union of their intervals, so overlapping work is counted once).

use crate::model::{Api, Process};
use serde::Serialize;
use trace_export::stats::Stats;

/// One line of a domain's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Function, kernel, copy direction or ROCTx message.
    pub name: String,
    /// Calls (dispatches, copies, ranges).
    pub calls: u64,
    /// Total duration, ns.
    pub total_ns: u64,
    /// Mean, ns.
    pub average_ns: f64,
    /// Percent of the domain's total.
    pub percent: f64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Sample standard deviation, ns.
    pub stddev_ns: f64,
}

/// One domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Domain {
    /// `HIP_API`, `HSA_API`, `MARKER_API`, `KERNEL_DISPATCH`, `MEMORY_COPY`, `OTHER_API`.
    pub domain: &'static str,
    /// The domain as one row (its name is the domain).
    pub total: Row,
    /// By name, longest total first.
    pub rows: Vec<Row>,
}

/// Where a process's time goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Per domain, in rocprofv3's order.
    pub domains: Vec<Domain>,
    /// From the first record's start to the last one's end, ns.
    pub span_ns: u64,
    /// Time at least one kernel ran, ns.
    pub kernel_busy_ns: u64,
    /// Time at least one copy ran, ns.
    pub copy_busy_ns: u64,
}

/// The domains in the order rocprofv3's summary lists them.
const ORDER: [&str; 6] = [
    "HSA_API",
    "HIP_API",
    "MARKER_API",
    "KERNEL_DISPATCH",
    "MEMORY_COPY",
    "OTHER_API",
];

fn row(name: &str, acc: &trace_export::stats::Acc, domain_total: u128) -> Row {
    Row {
        name: name.to_owned(),
        calls: acc.calls,
        total_ns: u64::try_from(acc.total).unwrap_or(u64::MAX),
        average_ns: acc.average(),
        percent: if domain_total == 0 {
            0.0
        } else {
            100.0 * acc.total as f64 / domain_total as f64
        },
        min_ns: acc.min,
        max_ns: acc.max,
        stddev_ns: acc.stddev(),
    }
}

/// The total length of the union of `spans`.
fn busy(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.retain(|&(s, e)| e > s);
    spans.sort_unstable();
    let mut total = 0u64;
    let mut current: Option<(u64, u64)> = None;
    for (s, e) in spans {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total = total.saturating_add(ce - cs);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        total = total.saturating_add(ce - cs);
    }
    total
}

/// Summarises `p`.
pub fn analyse(p: &Process) -> Summary {
    let mut stats = Stats::default();
    for c in &p.calls {
        let domain = match c.api {
            Api::Hip => "HIP_API",
            Api::Hsa => "HSA_API",
            Api::Marker => "MARKER_API",
            Api::Other => "OTHER_API",
        };
        stats.table(domain).add(p.name(c), c.start, c.end);
    }
    let timed = p.dispatches.iter().filter(|d| d.start != 0 || d.end != 0);
    for d in timed.clone() {
        stats
            .table("KERNEL_DISPATCH")
            .add(&d.kernel, d.start, d.end);
    }
    for c in &p.copies {
        stats
            .table("MEMORY_COPY")
            .add(c.direction_name(), c.start, c.end);
    }
    for m in &p.markers {
        stats.table("MARKER_API").add(&m.message, m.start, m.end);
    }
    let mut domains = Vec::new();
    for name in ORDER {
        let Some((_, table)) = stats.tables().find(|(d, _)| *d == name) else {
            continue;
        };
        let total = table.totals();
        if total.calls == 0 {
            continue;
        }
        domains.push(Domain {
            domain: name,
            total: row(name, &total, total.total),
            rows: table
                .sorted()
                .into_iter()
                .map(|(n, acc)| row(n, acc, total.total))
                .collect(),
        });
    }
    let spans: Vec<(u64, u64)> = p
        .calls
        .iter()
        .map(|c| (c.start, c.end))
        .chain(timed.clone().map(|d| (d.start, d.end)))
        .chain(p.copies.iter().map(|c| (c.start, c.end)))
        .chain(p.markers.iter().map(|m| (m.start, m.end)))
        .collect();
    let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let last = spans.iter().map(|s| s.1.max(s.0)).max().unwrap_or(0);
    Summary {
        domains,
        span_ns: last.saturating_sub(first),
        kernel_busy_ns: busy(timed.map(|d| (d.start, d.end)).collect()),
        copy_busy_ns: busy(p.copies.iter().map(|c| (c.start, c.end)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_work_is_busy_once() {
        assert_eq!(
            busy(vec![(0, 10), (5, 15), (20, 30), (30, 31), (40, 40)]),
            26
        );
        assert_eq!(busy(Vec::new()), 0);
        assert_eq!(busy(vec![(9, 3)]), 0, "a negative interval is no time");
    }
}
