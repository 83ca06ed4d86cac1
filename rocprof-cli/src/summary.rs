//! `-S/--summary`: a table on stderr after the run.

use trace_export::stats::{Stats, fmt_percent};
use trace_records::ProcessTrace;
use trace_records::format::sci;

/// Prints rocprofv3's summary table for `t` on stderr.
pub fn print(t: &ProcessTrace) {
    let s = Stats::of(t);
    let mut rows = Vec::new();
    for (domain, table) in s.tables() {
        for (name, acc) in table.sorted() {
            rows.push((name.to_owned(), domain, *acc));
        }
    }
    let grand: u128 = rows.iter().map(|r| r.2.total).sum();
    rows.sort_by_key(|r| std::cmp::Reverse(r.2.total));
    eprintln!("\nROCPROFV3 SUMMARY (process {}):\n", t.pid);
    eprintln!(
        "| {:<40} | {:<15} | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
        "NAME",
        "DOMAIN",
        "CALLS",
        "DURATION (nsec)",
        "AVERAGE (nsec)",
        "PERCENT (INC)",
        "MIN (nsec)",
        "MAX (nsec)",
        "STDDEV"
    );
    for (name, domain, acc) in rows {
        let pct = if grand == 0 {
            0.0
        } else {
            100.0 * acc.total as f64 / grand as f64
        };
        eprintln!(
            "| {:<40} | {:<15} | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
            name,
            domain,
            acc.calls,
            acc.total,
            sci(acc.average(), 3),
            fmt_percent(pct),
            acc.min,
            acc.max,
            sci(acc.stddev(), 3)
        );
    }
}
