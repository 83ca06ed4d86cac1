//! The report: typed (serialised as is by `--json`) and rendered as text, one line per
//! finding, lists capped with a count of the rest.
//!
//! The report holds names, paths and messages exactly as the inputs have them (`--json` prints
//! them so). The text is terminal-safe ([`terminal_text`]): every line is escaped as a whole —
//! a control or bidirectional character (or a backslash) in a kernel name, a ROCTx message or a
//! path shows as its escape, so it can neither start a line nor run an escape sequence — and
//! the "where time goes" table is built from escaped names at most [`terminal_text::NAME_WIDTH`] characters
//! wide (a longer one cut to a prefix and `…`).

use crate::counters::Group;
use crate::inputs::InputKind;
use crate::summary::Summary;
use crate::timeline::{Bound, RecordKind, Tally, Timeline};
use rocprof_runner::words::counted;
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
            counted(n, "violation", "violations"),
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
        out.push(format!(
            "unmatched: {}: {reason}",
            counted(*n, "record", "records")
        ));
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

/// The "where time goes" lines: terminal-safe already (the names are escaped cells).
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
    let cell = |name: &str| terminal_text::cell(name, terminal_text::NAME_WIDTH).into_owned();
    let nw = s
        .domains
        .iter()
        .flat_map(|d| d.rows.iter().take(TEXT_ROWS))
        .map(|r| cell(&r.name).chars().count())
        .max()
        .unwrap_or(0)
        .max(40);
    let line = |name: &str, domain: &str, r: &crate::summary::Row| {
        format!(
            "| {:<nw$} | {:<15} | {:>9} | {:>15} | {:>11} | {:>8} | {:>12} | {:>12} | {:>11} |",
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
        "| {:<nw$} | {:<15} | {:>9} | {:>15} | {:>11} | {:>8} | {:>12} | {:>12} | {:>11} |",
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
            out.push(line(&cell(&r.name), d.domain, r));
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
        "{} over {}, {} (values from: {})",
        counted(g.counters.len(), "counter", "counters"),
        counted(g.dispatches, "dispatch", "dispatches"),
        counted(g.runs.len(), "run", "runs"),
        origins.join(", ")
    ));
    if let Some(n) = g.repeat_runs {
        out.push(format!(
            "these are rocprof's own estimates over {} (the counter_hygiene.csv of a \
             --pmc-repeat run)",
            counted(n, "run", "runs")
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
            "{} in some runs only (matched by kernel, ordinal, grid and workgroup): the runs \
             did not run the same work",
            match g.unmatched_dispatches {
                1 => "1 dispatch is".to_owned(),
                n => format!("{n} dispatches are"),
            }
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
                "GRBM zeros (run {}): {} between {ids}{span}, not one burst at the session's \
                 start (the seed never saw one start mid-session): check those values",
                b.run + 1,
                counted(b.dispatches, "dispatch", "dispatches")
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
            "{}: {}, {} estimated{spread}{dirty}",
            c.counter,
            counted(c.values, "value", "values"),
            c.estimated
        ));
    }
    for r in g.rows.iter().take(TEXT_CAP) {
        let e = &r.estimate;
        let spread = e
            .spread_percent
            .map_or(String::new(), |s| format!(", spread {s:.2}%"));
        out.push(format!(
            "dispatch {} {}[{}] {}: estimate {} (min {}, max {}{spread}; {} of {} used)",
            r.dispatch_id,
            r.key.kernel,
            r.key.ordinal,
            r.counter,
            value(e.estimate),
            value(e.min),
            value(e.max),
            e.runs_used,
            counted(e.runs, "run", "runs")
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
        counted(r.inputs.len(), "input", "inputs"),
        counted(processes, "process", "processes")
    );
    // Each line escaped as a whole (the "where time goes" table is safe already).
    let lines_of = |text: &mut String, title: &str, lines: &[String], safe: bool| {
        if lines.is_empty() {
            return;
        }
        let _ = writeln!(text, "{title}");
        for l in lines {
            let l = if safe {
                l.into()
            } else {
                terminal_text::escape(l)
            };
            let _ = writeln!(text, "  {l}");
        }
    };
    let section = |text: &mut String, title: &str, lines: &[String]| {
        lines_of(text, title, lines, false);
    };
    let esc = |s: &str| terminal_text::escape(s).into_owned();
    for input in &r.inputs {
        let _ = writeln!(text, "\n# {} ({})", esc(&input.path), input.kind.describe());
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
                format!(", {}", esc(&p.run))
            };
            let c = &p.counts;
            let _ = writeln!(
                text,
                "\n## {}{pid}{run}: {}, {}, {}, {}, {}",
                esc(&p.label),
                counted(c.calls, "call", "calls"),
                counted(c.dispatches, "dispatch", "dispatches"),
                counted(c.copies, "copy", "copies"),
                counted(c.markers, "marker", "markers"),
                counted(c.counter_values, "counter value", "counter values")
            );
            let mut lines = Vec::new();
            timeline_lines(&p.timeline, &mut lines);
            section(&mut text, "timeline", &lines);
            let mut lines = Vec::new();
            summary_lines(&p.summary, &mut lines);
            lines_of(&mut text, "where time goes", &lines, true);
            section(&mut text, "missing", &p.missing);
            section(&mut text, "notes", &p.notes);
        }
    }
    for g in &r.counters {
        let mut lines = Vec::new();
        counter_lines(g, &mut lines);
        let _ = writeln!(text, "\n## counters: {}", esc(&g.runs.join(" | ")));
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

    /// A CSV output directory named `dir_name` whose one dispatch (of `kernel`) starts before
    /// its launch: the kernel's name is in the violation and the table.
    fn hostile_csv(dir_name: &str, kernel: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("trace-analysis-report-{}", std::process::id()))
            .join(dir_name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("run_hip_api_trace.csv"),
            "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\
             \"Start_Timestamp\",\"End_Timestamp\"\n\
             \"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",7,7,1,1000,2000\n\
             \"HIP_RUNTIME_API_EXT\",\"hipMemcpy\",7,7,2,3000,9000\n",
        )
        .unwrap();
        let quoted = kernel.replace('"', "\"\"");
        std::fs::write(
            dir.join("run_kernel_trace.csv"),
            format!(
                "\"Kind\",\"Agent_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Name\",\
                 \"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Grid_Size_X\",\
                 \"Workgroup_Size_X\"\n\
                 \"KERNEL_DISPATCH\",\"Agent 1\",7,1,\"{quoted}\",1,500,4000,256,64\n"
            ),
        )
        .unwrap();
        dir
    }

    #[test]
    fn names_and_paths_cannot_forge_lines_or_run_escapes() {
        let forged = "\nrocprof: error: forged line\n";
        let kernel = format!("k{forged}\x1b[2J\u{202e}x");
        let dir = hostile_csv(&format!("out{forged}\x1b]0;t\x07"), &kernel);
        let a = crate::analyze(&crate::Options {
            inputs: vec![dir.clone()],
            json: false,
        })
        .unwrap();
        let text = a.render_text();
        assert!(
            text.chars().all(|c| c == '\n' || terminal_text::is_safe(c)),
            "{text:?}"
        );
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("rocprof:")),
            "{text}"
        );
        let escaped = "k\\nrocprof: error: forged line\\n\\x1b[2J\\u{202e}x";
        assert!(
            text.contains(&format!("violation: dispatch 1 ({escaped})")),
            "{text}"
        );
        assert!(text.contains(&format!("| {escaped} ")), "{text}");
        assert!(
            text.contains("/out\\nrocprof: error: forged line\\n\\x1b]0;t\\x07 ("),
            "{text}"
        );
        // A 65 KB name is cut in the table (and escaped whole elsewhere, on one line).
        let long = "n".repeat(65 * 1024);
        let a = crate::analyze(&crate::Options {
            inputs: vec![hostile_csv("long", &long)],
            json: false,
        })
        .unwrap();
        let text = a.render_text();
        let row = format!("| {}… |", "n".repeat(terminal_text::NAME_WIDTH - 1));
        assert!(text.contains(&row), "{text}");
        let table: Vec<&str> = text.lines().filter(|l| l.starts_with("  | ")).collect();
        assert!(table.iter().all(|l| l.chars().count() < 200), "{table:?}");
        // --json keeps the exact name.
        let json = crate::analyze(&crate::Options {
            inputs: vec![dir],
            json: true,
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&json.output().unwrap()).unwrap();
        assert_eq!(
            v["inputs"][0]["processes"][0]["timeline"]["violations"][0]["name"],
            kernel.as_str()
        );
    }

    /// A group of `n` of everything the counter lines count.
    fn group(n: usize) -> Group {
        use crate::counters::{Burst, CounterSpan};
        Group {
            runs: vec!["process 7".into(); n],
            origins: Vec::new(),
            counters: vec!["SQ_WAVES".into(); n],
            dispatches: n,
            unmatched_dispatches: n,
            repeat_runs: Some(n),
            rows: Vec::new(),
            rows_total: 0,
            per_counter: vec![CounterSpan {
                counter: "SQ_WAVES".into(),
                values: n,
                estimated: n,
                largest_spread_percent: None,
                contaminated: 0,
            }],
            grbm_zero: Vec::new(),
            grbm_bursts: vec![Burst {
                run: 0,
                dispatches: n,
                first_dispatch_id: 4,
                last_dispatch_id: 4 + n as u64 - 1,
                at_session_start: false,
                span_ms: None,
            }],
            sq_zero: Vec::new(),
            isolated_zeros: 0,
            divisions: Vec::new(),
            summary: Vec::new(),
        }
    }

    #[test]
    fn counter_lines_count_in_words() {
        for (n, expected) in [
            (
                1,
                [
                    "1 counter over 1 dispatch, 1 run (values from: )",
                    "these are rocprof's own estimates over 1 run (",
                    "1 dispatch is in some runs only (",
                    "GRBM zeros (run 1): 1 dispatch between dispatch 4, not one burst",
                    "SQ_WAVES: 1 value, 1 estimated",
                ],
            ),
            (
                2,
                [
                    "2 counters over 2 dispatches, 2 runs (values from: )",
                    "these are rocprof's own estimates over 2 runs (",
                    "2 dispatches are in some runs only (",
                    "GRBM zeros (run 1): 2 dispatches between dispatches 4–5, not one burst",
                    "SQ_WAVES: 2 values, 2 estimated",
                ],
            ),
        ] {
            let mut out = Vec::new();
            counter_lines(&group(n), &mut out);
            for e in expected {
                assert!(out.iter().any(|l| l.starts_with(e)), "{e:?} in {out:#?}");
            }
        }
    }

    #[test]
    fn durations_read_for_people() {
        assert_eq!(human(812), "812 ns");
        assert_eq!(human(172_400), "172.4 µs");
        assert_eq!(human(4_830_000), "4.83 ms");
        assert_eq!(human(1_204_000_000), "1.204 s");
        assert_eq!(signed_human(-10), "-10 ns");
    }
}
