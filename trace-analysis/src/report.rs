//! The report: typed (serialised as is by `--json`) and rendered as text, one line per
//! finding, lists capped with a count of the rest.

use crate::counters::Group;
use crate::inputs::InputKind;
use crate::summary::Summary;
use crate::timeline::{Bound, RecordKind, Tally, Timeline};
use serde::Serialize;
use std::fmt::Write as _;
use trace_export::stats::fmt_percent;
use trace_records::format::{fmt_counter_value, sci};

/// `schema` of [`Report`].
pub const SCHEMA: &str = "rocprof-analyze/1";

/// How many items of a list the text report shows.
pub const TEXT_CAP: usize = 10;
/// How many rows of a summary domain the text report shows.
pub const TEXT_ROWS: usize = 15;

/// Everything `rocprof analyze` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// Per input, its processes' findings.
    pub inputs: Vec<InputReport>,
    /// Counter trust, per group of matched processes.
    pub counters: Vec<Group>,
}

/// One input.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// As given.
    pub path: String,
    /// What it is.
    pub kind: InputKind,
    /// What is missing from it as a whole, and why.
    pub missing: Vec<String>,
    /// How it was read.
    pub notes: Vec<String>,
    /// Its processes.
    pub processes: Vec<ProcessReport>,
}

/// Records of a process, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// API calls.
    pub calls: usize,
    /// Kernel dispatches.
    pub dispatches: usize,
    /// Memory copies.
    pub copies: usize,
    /// ROCTx marks and ranges.
    pub markers: usize,
    /// Dispatch × counter values.
    pub counter_values: usize,
}

/// One process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessReport {
    /// How it is named.
    pub label: String,
    /// The pass directory it came from (`""` for none).
    pub run: String,
    /// Its process id, when known.
    pub pid: Option<u32>,
    /// Its records.
    pub counts: Counts,
    /// Timeline trust.
    pub timeline: Timeline,
    /// Where time goes.
    pub summary: Summary,
    /// What is missing and why.
    pub missing: Vec<String>,
    /// How it was read.
    pub notes: Vec<String>,
}

/// A duration for people (`812 ns`, `172.4 µs`, `4.83 ms`, `1.204 s`).
pub fn human(ns: u64) -> String {
    let x = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", x / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", x / 1e6)
    } else {
        format!("{:.3} s", x / 1e9)
    }
}

fn signed_human(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", human(ns.unsigned_abs()))
    } else {
        human(ns.unsigned_abs())
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn tally_line(what: &str, t: &Tally, inside: &str) -> String {
    let mut s = format!(
        "containment ({what}): {} of {} checked, {} held, {} violated",
        t.checked, t.records, t.held, t.violated
    );
    if t.start_only > 0 {
        let _ = write!(
            s,
            ", {} checked at the start only (no consuming call follows)",
            t.start_only
        );
    }
    if t.unmatched > 0 {
        let _ = write!(s, ", {} unmatched", t.unmatched);
    }
    if t.checked > 0 && t.violated == 0 && t.start_only == 0 {
        let _ = write!(s, ": every one {inside}");
    }
    s
}

fn timeline_lines(t: &Timeline, out: &mut Vec<String>) {
    out.push(format!("clocks: {}", t.clock.host));
    out.push(format!("clocks: {}", t.clock.device));
    out.push(tally_line(
        "dispatches",
        &t.dispatches,
        "inside its launch → consuming call interval",
    ));
    out.push(tally_line(
        "copies",
        &t.copies,
        "inside the call that issued it",
    ));
    for v in t.violations.iter().take(TEXT_CAP) {
        let what = match v.record {
            RecordKind::Dispatch => format!("dispatch {} ({})", v.id, v.name),
            _ => format!("copy {} ({})", v.id, v.name),
        };
        let how = match v.bound {
            Bound::Start => format!("starts {} before its call {}", human(v.by_ns), v.call),
            Bound::End => format!("ends {} after its bound {}", human(v.by_ns), v.call),
        };
        out.push(format!(
            "violation: {what} {how} (correlation id {})",
            v.correlation_id
        ));
    }
    if t.violations_total > TEXT_CAP {
        out.push(format!(
            "… and {} more violations (--json lists up to {})",
            t.violations_total - TEXT_CAP,
            crate::timeline::KEEP
        ));
    }
    if let Some(s) = &t.clock.skew {
        let n = t.violations_total;
        out.push(format!(
            "skew: {} {}, median {}, largest {}; {}",
            plural(n, "violation", "violations"),
            match s.direction.as_str() {
                "early" => "all early",
                "late" => "all late",
                _ => "at both ends",
            },
            human(s.median_ns),
            human(s.max_ns),
            s.verdict
        ));
    }
    for (reason, n) in &t.unmatched_reasons {
        out.push(format!("unmatched: {n} record(s): {reason}"));
    }
    let m = &t.margins;
    let mut margins = Vec::new();
    if let Some(v) = m.dispatch_start_ns {
        margins.push(format!(
            "dispatches start ≥ {} after their launch",
            human(v)
        ));
    }
    if let Some(v) = m.dispatch_end_ns {
        margins.push(format!("end ≥ {} before their bound", human(v)));
    }
    if let Some(v) = m.copy_start_ns {
        margins.push(format!("copies start ≥ {} after their call", human(v)));
    }
    if let Some(v) = m.copy_end_ns {
        margins.push(format!("end ≥ {} before their bound", human(v)));
    }
    if !margins.is_empty() {
        out.push(format!(
            "margins: {} (a GPU clock skew smaller than these would go unnoticed)",
            margins.join(", ")
        ));
    }
    if t.clock.outside_host_span > 0 {
        out.push(format!(
            "clocks: {} of {} device records lie more than 1 s outside the span of the API \
             calls: they are on another clock, or come from another run",
            t.clock.outside_host_span, t.clock.device_records
        ));
    }
    let d = &t.durations;
    let kinds = [
        ("calls", d.calls),
        ("dispatches", d.dispatches),
        ("copies", d.copies),
        ("ranges", d.ranges),
    ];
    let bad: usize = kinds.iter().map(|(_, k)| k.zero + k.negative).sum();
    let looked: Vec<String> = kinds
        .iter()
        .filter(|(_, k)| k.records > 0)
        .map(|(n, k)| format!("{} {n}", k.records))
        .collect();
    if bad == 0 {
        out.push(format!(
            "durations: no zero or negative durations ({})",
            if looked.is_empty() {
                "no records".to_owned()
            } else {
                looked.join(", ")
            }
        ));
    } else {
        let counts: Vec<String> = kinds
            .iter()
            .filter(|(_, k)| k.zero + k.negative > 0)
            .map(|(n, k)| format!("{n}: {} zero, {} negative", k.zero, k.negative))
            .collect();
        out.push(format!("durations: {}", counts.join("; ")));
        for b in d.listed.iter().take(TEXT_CAP) {
            out.push(format!(
                "duration: {} {} (correlation id {}) lasts {} ({} → {})",
                match b.record {
                    RecordKind::Call => "call",
                    RecordKind::Dispatch => "dispatch",
                    RecordKind::Copy => "copy",
                    RecordKind::Range => "range",
                },
                b.name,
                b.correlation_id,
                signed_human(b.duration_ns),
                b.start,
                b.end
            ));
        }
        if bad > TEXT_CAP {
            out.push(format!("… and {} more", bad - TEXT_CAP));
        }
    }
}

fn summary_lines(s: &Summary, out: &mut Vec<String>) {
    if s.domains.is_empty() {
        out.push("no records".into());
        return;
    }
    let share = |ns: u64| {
        if s.span_ns == 0 {
            String::new()
        } else {
            format!(" ({}%)", fmt_percent(100.0 * ns as f64 / s.span_ns as f64))
        }
    };
    out.push(format!(
        "span {}; kernels ran {}{}, copies {}{}",
        human(s.span_ns),
        human(s.kernel_busy_ns),
        share(s.kernel_busy_ns),
        human(s.copy_busy_ns),
        share(s.copy_busy_ns)
    ));
    let line = |name: &str, domain: &str, r: &crate::summary::Row| {
        format!(
            "| {:<40} | {:<15} | {:>9} | {:>15} | {:>11} | {:>8} | {:>12} | {:>12} | {:>11} |",
            name,
            domain,
            r.calls,
            r.total_ns,
            sci(r.average_ns, 3),
            fmt_percent(r.percent),
            r.min_ns,
            r.max_ns,
            sci(r.stddev_ns, 3)
        )
    };
    out.push(format!(
        "| {:<40} | {:<15} | {:>9} | {:>15} | {:>11} | {:>8} | {:>12} | {:>12} | {:>11} |",
        "NAME",
        "DOMAIN",
        "CALLS",
        "DURATION (nsec)",
        "AVERAGE",
        "PERCENT",
        "MIN (nsec)",
        "MAX (nsec)",
        "STDDEV"
    ));
    for d in &s.domains {
        for r in d.rows.iter().take(TEXT_ROWS) {
            out.push(line(&r.name, d.domain, r));
        }
        if d.rows.len() > TEXT_ROWS {
            out.push(format!(
                "| … and {} more {} names",
                d.rows.len() - TEXT_ROWS,
                d.domain
            ));
        }
        out.push(line("(total)", d.domain, &d.total));
    }
}

fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), fmt_counter_value)
}

fn counter_lines(g: &Group, out: &mut Vec<String>) {
    let origins: Vec<String> = g
        .origins
        .iter()
        .map(|o| {
            serde_json::to_value(o)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    out.push(format!(
        "{} over {} dispatches, {} (values from: {})",
        plural(g.counters.len(), "counter", "counters"),
        g.dispatches,
        plural(g.runs.len(), "run", "runs"),
        origins.join(", ")
    ));
    if let Some(n) = g.repeat_runs {
        out.push(format!(
            "these are rocprof's own estimates over {n} runs (the counter_hygiene.csv of a \
             --pmc-repeat run)"
        ));
    } else if g.runs.len() == 1 {
        out.push(
            "one run: no spread to measure; sample the workload several times (rocprof \
             --pmc-repeat N, or give several outputs) and take the smallest non-zero value"
                .into(),
        );
    }
    if g.unmatched_dispatches > 0 {
        out.push(format!(
            "{} dispatch(es) are in some runs only (matched by kernel, ordinal, grid and \
             workgroup): the runs did not run the same work",
            g.unmatched_dispatches
        ));
    }
    out.extend(g.summary.iter().cloned());
    for b in &g.grbm_bursts {
        let span = b
            .span_ms
            .map_or(String::new(), |ms| format!(", over {ms:.1} ms"));
        let ids = if b.first_dispatch_id == b.last_dispatch_id {
            format!("dispatch {}", b.first_dispatch_id)
        } else {
            format!("dispatches {}–{}", b.first_dispatch_id, b.last_dispatch_id)
        };
        if b.at_session_start {
            out.push(format!(
                "GRBM zero burst (run {}): {ids} ({}){span}, from the session's first counted \
                 dispatch, as the seed's bursts: discard them (--pmc-discard-warmup 300 skips \
                 the longest burst seen)",
                b.run + 1,
                b.dispatches
            ));
        } else {
            out.push(format!(
                "GRBM zeros (run {}): {} dispatch(es) between {ids}{span}, not one burst at the \
                 session's start (the seed never saw one start mid-session): check those values",
                b.run + 1,
                b.dispatches
            ));
        }
    }
    for z in g.sq_zero.iter().take(TEXT_CAP) {
        out.push(format!(
            "SQ zero (run {}): SQ_WAVES read 0 on dispatch {} ({}), which ran",
            z.run + 1,
            z.dispatch_id,
            z.kernel
        ));
    }
    if g.sq_zero.len() > TEXT_CAP {
        out.push(format!(
            "… and {} more SQ zeros",
            g.sq_zero.len() - TEXT_CAP
        ));
    }
    if g.isolated_zeros > 0 {
        out.push(format!(
            "{} isolated zero(s) over runs: a run read 0 where the others did not",
            g.isolated_zeros
        ));
    }
    for d in g.divisions.iter().take(TEXT_CAP) {
        out.push(format!(
            "division by zero (run {}): {} of dispatch {} ({}) divides by {} = 0{}",
            d.run + 1,
            d.counter,
            d.dispatch_id,
            d.kernel,
            d.divisors.join(", "),
            match d.value {
                Some(v) => format!(" and reads {}", fmt_counter_value(v)),
                None => ": set aside".to_owned(),
            }
        ));
    }
    if g.divisions.len() > TEXT_CAP {
        out.push(format!(
            "… and {} more divisions by zero",
            g.divisions.len() - TEXT_CAP
        ));
    }
    for c in &g.per_counter {
        let spread = c
            .largest_spread_percent
            .map_or(String::new(), |s| format!(", spread up to {s:.2}%"));
        let dirty = if c.contaminated > 0 {
            format!(" ({} above 5%)", c.contaminated)
        } else {
            String::new()
        };
        out.push(format!(
            "{}: {} values, {} estimated{spread}{dirty}",
            c.counter, c.values, c.estimated
        ));
    }
    for r in g.rows.iter().take(TEXT_CAP) {
        let e = &r.estimate;
        let spread = e
            .spread_percent
            .map_or(String::new(), |s| format!(", spread {s:.2}%"));
        out.push(format!(
            "dispatch {} {}[{}] {}: estimate {} (min {}, max {}{spread}; {} of {} runs used)",
            r.dispatch_id,
            r.key.kernel,
            r.key.ordinal,
            r.counter,
            value(e.estimate),
            value(e.min),
            value(e.max),
            e.runs_used,
            e.runs
        ));
    }
    if g.rows_total > TEXT_CAP {
        out.push(format!(
            "… and {} more dispatch × counter values (--json has them)",
            g.rows_total - TEXT_CAP
        ));
    }
}

/// The text report.
pub fn render(r: &Report) -> String {
    let processes: usize = r.inputs.iter().map(|i| i.processes.len()).sum();
    let mut text = format!(
        "rocprof analyze: {}, {}\n",
        plural(r.inputs.len(), "input", "inputs"),
        plural(processes, "process", "processes")
    );
    let section = |text: &mut String, title: &str, lines: &[String]| {
        if lines.is_empty() {
            return;
        }
        let _ = writeln!(text, "{title}");
        for l in lines {
            let _ = writeln!(text, "  {l}");
        }
    };
    for input in &r.inputs {
        let _ = writeln!(text, "\n# {} ({})", input.path, input.kind.describe());
        section(&mut text, "missing", &input.missing);
        section(&mut text, "notes", &input.notes);
        for p in &input.processes {
            let pid = p
                .pid
                .filter(|_| !p.label.contains(" pid "))
                .map_or(String::new(), |pid| format!(", pid {pid}"));
            let run = if p.run.is_empty() {
                String::new()
            } else {
                format!(", {}", p.run)
            };
            let c = &p.counts;
            let _ = writeln!(
                text,
                "\n## {}{pid}{run}: {} calls, {} dispatches, {} copies, {} markers, {} counter values",
                p.label, c.calls, c.dispatches, c.copies, c.markers, c.counter_values
            );
            let mut lines = Vec::new();
            timeline_lines(&p.timeline, &mut lines);
            section(&mut text, "timeline", &lines);
            let mut lines = Vec::new();
            summary_lines(&p.summary, &mut lines);
            section(&mut text, "where time goes", &lines);
            section(&mut text, "missing", &p.missing);
            section(&mut text, "notes", &p.notes);
        }
    }
    for g in &r.counters {
        let mut lines = Vec::new();
        counter_lines(g, &mut lines);
        let _ = writeln!(text, "\n## counters: {}", g.runs.join(" | "));
        section(&mut text, "counter trust", &lines);
    }
    if r.counters.is_empty() {
        let _ = writeln!(text, "\n## counters: none in the inputs");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_for_people() {
        assert_eq!(human(812), "812 ns");
        assert_eq!(human(172_400), "172.4 µs");
        assert_eq!(human(4_830_000), "4.83 ms");
        assert_eq!(human(1_204_000_000), "1.204 s");
        assert_eq!(signed_human(-10), "-10 ns");
    }
}
