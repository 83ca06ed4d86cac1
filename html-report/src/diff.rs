//! The page of `rocprof diff --html`.

use crate::CHART_TOP;
use crate::charts::{self, BASE, Bar, BoxRow, NEW};
use crate::html;
use run_diff::compare::{Row, Verdict};
use run_diff::report::{self, Report, human, percent};
use run_diff::side::Kind;
use std::fmt::Write as _;

/// The kernels the charts show: the section's first rows (flagged and one-sided first, then
/// by cost), at most [`CHART_TOP`].
pub fn chart_kernels(r: &Report) -> Vec<&Row> {
    r.sections
        .iter()
        .filter(|s| s.kind == Kind::Kernel)
        .flat_map(|s| s.rows.iter())
        .take(CHART_TOP)
        .collect()
}

fn side_cell(
    s: &Option<run_diff::compare::SideStats>,
    f: impl Fn(&run_diff::compare::SideStats) -> String,
) -> String {
    s.as_ref().map_or_else(|| "-".to_owned(), f)
}

/// The whole page.
pub fn diff_page(r: &Report) -> String {
    let mut body = String::new();
    let sides = |s: &report::SideInfo| format!("{} run(s): {}", s.runs, s.inputs.join(", "));
    let _ = write!(
        body,
        "<p>Base: {}<br>New: {}</p>\n<p>{} comparisons, {} flagged (alpha {}, threshold {}%). {}.</p>\n",
        html::text(&sides(&r.base)),
        html::text(&sides(&r.new)),
        r.comparisons,
        r.flagged,
        r.settings.alpha,
        r.settings.threshold_percent,
        html::text(r.method)
    );
    let kernels = chart_kernels(r);
    let mut bars = Vec::new();
    let mut boxes = Vec::new();
    for k in &kernels {
        for (side, stats, color) in [("base", &k.base, BASE), ("new", &k.new, NEW)] {
            if let Some(s) = stats {
                let short = terminal_text::cell(&k.name, 30);
                let label = format!("{} ({side})", short.trim_end());
                bars.push(Bar {
                    label: label.clone(),
                    value: s.per_run_ns / 1e3,
                    color,
                });
                boxes.push(BoxRow {
                    label,
                    five: s.quartiles_ns.map(|v| v / 1e3),
                    color,
                });
            }
        }
    }
    body.push_str(&html::figure(
        "kernel-time",
        "Top kernels: time per run on each side (µs; blue base, orange new)",
        &charts::bars(&bars, "µs per run"),
    ));
    body.push_str(&html::figure(
        "kernel-durations",
        "Top kernels: duration distribution on each side (µs; box: quartiles and median, whiskers: 1.5 × IQR)",
        &charts::boxes(&boxes, "µs per dispatch"),
    ));
    let counter_bars: Vec<Bar> = r
        .counters
        .rows
        .iter()
        .filter_map(|c| {
            Some(Bar {
                label: format!("{} / {}", c.counter, c.kernel),
                value: c.change_percent?,
                color: if c.trust == run_diff::counters::Trust::NotTrustworthy {
                    charts::NEW
                } else {
                    charts::BASE
                },
            })
        })
        .take(CHART_TOP)
        .collect();
    if counter_bars.is_empty() {
        body.push_str("<p>No counter values on both sides: no counter chart.</p>\n");
    } else {
        body.push_str(&html::figure(
            "counter-changes",
            "Counter changes (percent; orange: not trustworthy, the runs' own spread is larger)",
            &charts::bars(&counter_bars, "change, %"),
        ));
    }
    for s in &r.sections {
        let _ = writeln!(
            body,
            "<h2>{}</h2>\n<p>{} compared, {} flagged, {} on one side only.</p>",
            html::text(s.kind.title()),
            s.rows_total,
            s.flagged,
            s.one_side
        );
        let rows: Vec<(Vec<String>, bool)> = s
            .rows
            .iter()
            .map(|row| {
                (
                    vec![
                        row.verdict.label().to_owned(),
                        percent(row.change_percent),
                        human(row.run_time_change_ns, true),
                        side_cell(&row.base, |s| human(s.median_ns, false)),
                        side_cell(&row.new, |s| human(s.median_ns, false)),
                        side_cell(&row.base, |s| human(s.spread_ns, false)),
                        side_cell(&row.new, |s| human(s.spread_ns, false)),
                        side_cell(&row.base, |s| s.count.to_string()),
                        side_cell(&row.new, |s| s.count.to_string()),
                        row.adjusted_p
                            .map_or_else(|| "-".to_owned(), |p| format!("{p:.2e}")),
                        html::name(&row.name),
                        html::name(&row.detail),
                    ],
                    row.verdict.flagged()
                        || matches!(row.verdict, Verdict::OnlyBase | Verdict::OnlyNew),
                )
            })
            .collect();
        body.push_str(&html::table(
            &[
                "verdict",
                "change",
                "per run",
                "base median",
                "new median",
                "base IQR",
                "new IQR",
                "base n",
                "new n",
                "p (Holm)",
                "name",
                "detail",
            ],
            &rows,
        ));
    }
    let _ = writeln!(
        body,
        "<h2>Counters</h2>\n<p>{} kernel × counter pairs, {} not trustworthy.</p>",
        r.counters.rows_total, r.counters.not_trustworthy
    );
    let est = |s: &Option<run_diff::counters::CounterSide>| {
        s.as_ref()
            .map_or_else(|| "-".to_owned(), |s| format!("{:.6e}", s.estimate))
    };
    let spread = |s: &Option<run_diff::counters::CounterSide>| {
        s.as_ref()
            .and_then(|s| s.spread_percent)
            .map_or_else(|| "-".to_owned(), |p| format!("{p:.1}%"))
    };
    let rows: Vec<(Vec<String>, bool)> = r
        .counters
        .rows
        .iter()
        .map(|c| {
            (
                vec![
                    c.trust.label().to_owned(),
                    percent(c.change_percent),
                    est(&c.base),
                    est(&c.new),
                    spread(&c.base),
                    spread(&c.new),
                    html::name(&c.counter),
                    html::name(&c.kernel),
                ],
                false,
            )
        })
        .collect();
    body.push_str(&html::table(
        &[
            "trust",
            "change",
            "base",
            "new",
            "base spread",
            "new spread",
            "counter",
            "kernel",
        ],
        &rows,
    ));
    for note in &r.notes {
        let _ = writeln!(body, "<p>note: {}</p>", html::text(note));
    }
    html::page("rocprof diff", &body)
}
