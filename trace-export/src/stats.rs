//! `--stats`: per-name and per-domain duration statistics in rocprofv3's `*_stats.csv` format.

use crate::Error;
use crate::cells::{Cell, write_header, write_row};
use crate::output::{OutputPrefix, write_whole};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use trace_records::format::sci;
use trace_records::{
    AllocationOperation, ApiDomain, CopyDirection, ProcessTrace, ScratchOperation,
};

/// Columns of every stats file.
pub const STATS_COLUMNS: [&str; 8] = [
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

/// Running statistics of one name.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Acc {
    /// Number of calls.
    pub calls: u64,
    /// Sum of durations, ns.
    pub total: u128,
    /// Shortest, ns.
    pub min: u64,
    /// Longest, ns.
    pub max: u64,
    /// Sum of the squared durations, ns² (exact, as upstream's integer accumulator).
    sqr: u128,
}

impl Acc {
    /// Adds one duration.
    pub fn add(&mut self, ns: u64) {
        self.merge(&Acc {
            calls: 1,
            total: u128::from(ns),
            min: ns,
            max: ns,
            sqr: u128::from(ns) * u128::from(ns),
        });
    }

    /// Adds everything `other` accumulated.
    pub fn merge(&mut self, other: &Acc) {
        if other.calls == 0 {
            return;
        }
        self.min = if self.calls == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = self.max.max(other.max);
        self.calls += other.calls;
        self.total += other.total;
        self.sqr = self.sqr.saturating_add(other.sqr);
    }

    /// Sum of the squared durations, ns².
    pub fn sum_of_squares(&self) -> u128 {
        self.sqr
    }

    /// Mean, ns.
    pub fn average(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.total as f64 / self.calls as f64
        }
    }

    /// Sample variance (`(Σx² − (Σx)²/n)/(n−1)`, as upstream computes it, so rounding may
    /// leave it slightly negative for equal samples), 0 below two samples.
    pub fn variance(&self) -> f64 {
        if self.calls < 2 {
            return 0.0;
        }
        let n = self.calls as f64;
        let sum = self.total as f64;
        (self.sqr as f64 - sum * sum / n) / (n - 1.0)
    }

    /// Sample standard deviation (`sqrt(|variance|)`), 0 below two samples.
    pub fn stddev(&self) -> f64 {
        self.variance().abs().sqrt()
    }
}

/// The statistics of one domain, keyed by name.
#[derive(Debug, Clone, Default)]
pub struct StatTable {
    rows: HashMap<String, Acc>,
}

impl StatTable {
    /// Adds the interval `[start, end]` under `name` (a negative interval counts as 0).
    pub fn add(&mut self, name: &str, start: u64, end: u64) {
        let ns = end.saturating_sub(start);
        match self.rows.get_mut(name) {
            Some(acc) => acc.add(ns),
            None => {
                let mut acc = Acc::default();
                acc.add(ns);
                self.rows.insert(name.to_owned(), acc);
            }
        }
    }

    /// All rows, sorted by total duration, descending (then by name).
    pub fn sorted(&self) -> Vec<(&str, &Acc)> {
        let mut rows: Vec<(&str, &Acc)> = self.rows.iter().map(|(k, v)| (k.as_str(), v)).collect();
        rows.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(b.0)));
        rows
    }

    /// Whether no interval was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The domain's totals as one accumulator.
    pub fn totals(&self) -> Acc {
        let mut t = Acc::default();
        for acc in self.rows.values() {
            t.merge(acc);
        }
        t
    }
}

/// Statistics of every domain, keyed by the domain label (`HIP_API`, `KERNEL_DISPATCH`, …).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    tables: BTreeMap<&'static str, StatTable>,
}

impl Stats {
    /// The table of `domain`, created on first use.
    pub fn table(&mut self, domain: &'static str) -> &mut StatTable {
        self.tables.entry(domain).or_default()
    }

    /// Every domain's table.
    pub fn tables(&self) -> impl Iterator<Item = (&'static str, &StatTable)> {
        self.tables.iter().map(|(k, v)| (*k, v))
    }

    /// Every domain's table, by value.
    pub fn into_tables(self) -> impl Iterator<Item = (&'static str, StatTable)> {
        self.tables.into_iter()
    }

    /// The per-domain statistics of a process (the `-S` summary's, and the JSON `summary`'s):
    /// API calls by domain (HIP, HSA, marker calls), kernel dispatches by kernel name, copies
    /// by direction, ROCTx ranges by message, allocations and scratch events by operation.
    pub fn of(t: &ProcessTrace) -> Stats {
        let mut s = Stats::default();
        for r in &t.api {
            let domain = match ApiDomain::from_u8(r.domain) {
                Some(d) if d.is_hip() => "HIP_API",
                Some(d) if d.is_hsa() => "HSA_API",
                _ => "MARKER_API",
            };
            s.table(domain)
                .add(&t.operation_name(r.domain, r.operation), r.start, r.end);
        }
        let symbols = t.symbols_by_id();
        for k in &t.dispatches {
            let name = symbols.get(&k.kernel_id).map_or("", |s| t.string(s.name));
            let name = crate::rename::dispatch_name(t, k, name);
            s.table("KERNEL_DISPATCH").add(name, k.start, k.end);
        }
        for c in &t.copies {
            s.table("MEMORY_COPY")
                .add(CopyDirection::label(c.direction), c.start, c.end);
        }
        for m in &t.markers {
            s.table("MARKER_API")
                .add(t.string(m.message), m.start, m.end);
        }
        for a in &t.allocations {
            s.table("MEMORY_ALLOCATION").add(
                AllocationOperation::label(a.operation),
                a.start,
                a.end,
            );
        }
        for e in &t.scratch {
            s.table("SCRATCH_MEMORY")
                .add(ScratchOperation::label(e.operation), e.start, e.end);
        }
        s
    }
}

/// The file name of a domain's stats.
pub fn stats_file_name(domain: &str) -> String {
    match domain {
        "KERNEL_DISPATCH" => "kernel_stats".into(),
        other => format!("{}_stats", other.to_ascii_lowercase()),
    }
}

/// AverageNs / StdDev format: fixed 6 decimals above 0.01, else scientific with 8.
pub fn fmt_ns(x: f64) -> String {
    if x > 0.01 {
        format!("{x:.6}")
    } else {
        sci(x, 8)
    }
}

/// Percentage format: 2 decimals from 1, 4 above 0.01, else scientific with 3.
pub fn fmt_percent(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.2}")
    } else if x > 0.01 {
        format!("{x:.4}")
    } else {
        sci(x, 3)
    }
}

fn write_table<'a>(
    out: &mut impl Write,
    rows: impl IntoIterator<Item = (&'a str, Acc)>,
) -> std::io::Result<()> {
    let rows: Vec<(&str, Acc)> = rows.into_iter().collect();
    let grand: u128 = rows.iter().map(|r| r.1.total).sum();
    write_header(out, &STATS_COLUMNS)?;
    for (name, acc) in rows {
        let percent = if grand == 0 {
            0.0
        } else {
            100.0 * acc.total as f64 / grand as f64
        };
        let (avg, pct, sd) = (
            fmt_ns(acc.average()),
            fmt_percent(percent),
            fmt_ns(acc.stddev()),
        );
        write_row(
            out,
            &[
                Cell::Str(name),
                Cell::Int(acc.calls),
                Cell::Int(acc.total.min(u128::from(u64::MAX)) as u64),
                Cell::Num(&avg),
                Cell::Num(&pct),
                Cell::Int(acc.min),
                Cell::Int(acc.max),
                Cell::Num(&sd),
            ],
        )?;
    }
    Ok(())
}

/// Writes `<prefix>_<domain>_stats.csv` for every non-empty domain and `domain_stats.csv`.
pub fn write_stats(prefix: &OutputPrefix, stats: &Stats) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    let mut domains: Vec<(&str, Acc)> = Vec::new();
    for (domain, table) in stats.tables() {
        if table.rows.is_empty() {
            continue;
        }
        let path = prefix.file(&stats_file_name(domain), "csv");
        write_whole(&path, |out| {
            write_table(out, table.sorted().into_iter().map(|(n, a)| (n, *a)))
        })?;
        written.push(path);
        domains.push((domain, table.totals()));
    }
    if !domains.is_empty() {
        domains.sort_by_key(|d| std::cmp::Reverse(d.1.total));
        let path = prefix.file("domain_stats", "csv");
        write_whole(&path, |out| write_table(out, domains))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats_follow_rocprofv3() {
        assert_eq!(sci(0.0, 8), "0.00000000e+00");
        assert_eq!(sci(0.00123, 3), "1.230e-03");
        assert_eq!(sci(12345.0, 2), "1.23e+04");
        assert_eq!(fmt_ns(65624351.5), "65624351.500000");
        assert_eq!(fmt_ns(0.0), "0.00000000e+00");
        assert_eq!(fmt_percent(85.1532), "85.15");
        assert_eq!(fmt_percent(0.5), "0.5000");
        assert_eq!(fmt_percent(0.001), "1.000e-03");
    }

    #[test]
    fn stddev_matches_the_sample_formula() {
        let mut a = Acc::default();
        for x in [3_991_286u64, 4_000_000, 5_384_280, 249_121_840] {
            a.add(x);
        }
        assert_eq!(a.calls, 4);
        assert_eq!(a.min, 3_991_286);
        assert!((a.average() - 65_624_351.5).abs() < 1e-6);
        assert!(
            (a.stddev() - 122_332_531.3).abs() / 122_332_531.3 < 1e-3,
            "{}",
            a.stddev()
        );
        let mut one = Acc::default();
        one.add(7);
        assert_eq!(one.stddev(), 0.0);
    }
}
