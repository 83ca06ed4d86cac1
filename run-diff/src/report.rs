//! The report as data (`Serialize` is `--json`) and its text (terminal-safe, names shortened).

use crate::compare::{Row, Settings, SideStats, Verdict};
use crate::counters::{CounterRow, CounterSide};
use crate::side::Kind;
use serde::Serialize;
use std::fmt::Write as _;
use terminal_text::{cell, escape};

/// The `schema` of the JSON document.
pub const SCHEMA: &str = "rocprof-diff/1";

/// Rows per section unless `--top` says otherwise.
pub const DEFAULT_TOP: usize = 20;

/// Width of the name column.
pub const NAME_WIDTH: usize = 48;

/// One side as read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideInfo {
    /// The inputs as given.
    pub inputs: Vec<String>,
    /// Runs read.
    pub runs: usize,
}

/// The rows of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// What is compared.
    pub kind: Kind,
    /// Items of this kind on either side.
    pub rows_total: usize,
    /// Of which slower or faster.
    pub flagged: usize,
    /// Of which on one side only.
    pub one_side: usize,
    /// The rows kept (`--top`): every flagged and one-sided row, then the largest costs.
    pub rows: Vec<Row>,
}

/// The counter changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSection {
    /// Kernel × counter pairs on either side.
    pub rows_total: usize,
    /// Of which not trustworthy.
    pub not_trustworthy: usize,
    /// The rows kept (`--top`), the largest change first.
    pub rows: Vec<CounterRow>,
}

/// Everything `rocprof diff` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The base side.
    pub base: SideInfo,
    /// The new side.
    pub new: SideInfo,
    /// What decided the verdicts.
    pub settings: Settings,
    /// The test and the correction used.
    pub method: &'static str,
    /// Items compared by the test (present on both sides).
    pub comparisons: usize,
    /// Items slower or faster.
    pub flagged: usize,
    /// Kernels, API functions, copies, ROCTx ranges.
    pub sections: Vec<Section>,
    /// Counters.
    pub counters: CounterSection,
    /// How the inputs were read.
    pub notes: Vec<String>,
}

/// The method's description (in the report and the JSON).
pub const METHOD: &str = "Mann-Whitney U over the durations pooled per side, Holm-corrected; \
                          flagged when p < alpha, the median moved by at least the threshold \
                          and by more than either side's run medians differ, and every new run's \
                          median lies beyond every base run's";

/// A duration for people (`812 ns`, `172.4 µs`, `4.83 ms`, `1.204 s`), signed when asked.
pub fn human(ns: f64, signed: bool) -> String {
    let sign = if ns < 0.0 {
        "-"
    } else if signed {
        "+"
    } else {
        ""
    };
    let x = ns.abs();
    let body = if x < 1e3 {
        format!("{x:.0} ns")
    } else if x < 1e6 {
        format!("{:.1} µs", x / 1e3)
    } else if x < 1e9 {
        format!("{:.2} ms", x / 1e6)
    } else {
        format!("{:.3} s", x / 1e9)
    };
    format!("{sign}{body}")
}

/// A percent change (`+20.1%`).
pub fn percent(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"))
}

fn median(s: &Option<SideStats>) -> String {
    s.as_ref()
        .map_or_else(|| "-".to_owned(), |s| human(s.median_ns, false))
}

fn count(s: &Option<SideStats>) -> String {
    s.as_ref()
        .map_or_else(|| "0".to_owned(), |s| s.count.to_string())
}

fn p_cell(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_owned(), |p| format!("{p:.2e}"))
}

fn estimate(s: &Option<CounterSide>) -> String {
    s.as_ref()
        .map_or_else(|| "-".to_owned(), |s| format!("{:.6e}", s.estimate))
}

fn spread(s: &Option<CounterSide>) -> String {
    s.as_ref()
        .and_then(|s| s.spread_percent)
        .map_or_else(|| "-".to_owned(), |p| format!("{p:.1}%"))
}

/// The name cell of a row: its name and detail, escaped and shortened.
pub fn name_cell(name: &str, detail: &str) -> String {
    let shown = if name.is_empty() { "(unnamed)" } else { name };
    let whole = if detail.is_empty() {
        shown.to_owned()
    } else {
        format!("{shown} [{detail}]")
    };
    cell(&whole, NAME_WIDTH).into_owned()
}

/// The text report.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let side = |s: &SideInfo| {
        let names: Vec<String> = s.inputs.iter().map(|p| escape(p).into_owned()).collect();
        format!("{} run(s) from {}", s.runs, names.join(", "))
    };
    let _ = writeln!(out, "rocprof diff: base {}", side(&r.base));
    let _ = writeln!(out, "              new  {}", side(&r.new));
    let _ = writeln!(
        out,
        "{} comparisons, {} flagged (alpha {}, threshold {}%)",
        r.comparisons, r.flagged, r.settings.alpha, r.settings.threshold_percent
    );
    // The method as prose, wrapped to the width of the tables.
    let mut line = String::from("method:");
    for word in r.method.split(' ') {
        if line.chars().count() + 1 + word.chars().count() > 100 {
            let _ = writeln!(out, "{line}");
            line = String::from("       ");
        }
        line.push(' ');
        line.push_str(word);
    }
    let _ = writeln!(out, "{line}");
    for s in &r.sections {
        let _ = writeln!(
            out,
            "\n{}: {} compared, {} flagged, {} on one side only{}",
            s.kind.title(),
            s.rows_total,
            s.flagged,
            s.one_side,
            if s.rows.len() < s.rows_total {
                format!(" (the first {} shown)", s.rows.len())
            } else {
                String::new()
            }
        );
        if s.rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<9} {:>8} {:>11} {:>11} {:>11} {:>7} {:>7} {:>9}  NAME",
            "VERDICT", "CHANGE", "PER RUN", "BASE MED", "NEW MED", "BASE N", "NEW N", "P(HOLM)",
        );
        for row in &s.rows {
            let _ = writeln!(
                out,
                "  {:<9} {:>8} {:>11} {:>11} {:>11} {:>7} {:>7} {:>9}  {}",
                row.verdict.label(),
                percent(row.change_percent),
                human(row.run_time_change_ns, true),
                median(&row.base),
                median(&row.new),
                count(&row.base),
                count(&row.new),
                p_cell(row.adjusted_p),
                name_cell(&row.name, &row.detail),
            );
        }
    }
    let c = &r.counters;
    let _ = writeln!(
        out,
        "\nCounters: {} kernel × counter pairs, {} not trustworthy{}",
        c.rows_total,
        c.not_trustworthy,
        if c.rows.len() < c.rows_total {
            format!(" (the first {} shown)", c.rows.len())
        } else {
            String::new()
        }
    );
    if !c.rows.is_empty() {
        let _ = writeln!(
            out,
            "  {:<15} {:>8} {:>13} {:>13} {:>8} {:>8}  COUNTER / KERNEL",
            "TRUST", "CHANGE", "BASE", "NEW", "SPREAD B", "SPREAD N"
        );
        for row in &c.rows {
            let _ = writeln!(
                out,
                "  {:<15} {:>8} {:>13} {:>13} {:>8} {:>8}  {} {}",
                row.trust.label(),
                percent(row.change_percent),
                estimate(&row.base),
                estimate(&row.new),
                spread(&row.base),
                spread(&row.new),
                cell(&row.counter, 24),
                name_cell(&row.kernel, &row.detail),
            );
        }
    }
    for note in &r.notes {
        let _ = writeln!(out, "note: {}", escape(note));
    }
    out
}

/// Keeps the `top` rows that matter most of a section: flagged and one-sided rows first (in
/// cost order), then the others by cost.
pub fn keep_top(rows: Vec<Row>, top: usize) -> Vec<Row> {
    let (mut important, rest): (Vec<Row>, Vec<Row>) = rows
        .into_iter()
        .partition(|r| r.verdict != Verdict::NotSignificant);
    important.extend(rest);
    important.truncate(top);
    important
}
