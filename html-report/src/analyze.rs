//! The page of `rocprof analyze --html`.

use crate::CHART_TOP;
use crate::charts::{self, BASE, Bar, NEW};
use crate::html;
use std::fmt::Write as _;
use trace_analysis::report::{Report, human};

/// The domains of a process's summary that have time, in the summary's order.
pub fn timeline_domains(p: &trace_analysis::report::ProcessReport) -> Vec<(&'static str, u64)> {
    p.summary
        .domains
        .iter()
        .filter(|d| d.total.total_ns > 0)
        .map(|d| (d.domain, d.total.total_ns))
        .collect()
}

/// The kernels a process's chart shows (the longest total first), at most [`CHART_TOP`].
pub fn top_kernels(p: &trace_analysis::report::ProcessReport) -> Vec<(&str, u64)> {
    p.summary
        .domains
        .iter()
        .filter(|d| d.domain == "KERNEL_DISPATCH")
        .flat_map(|d| d.rows.iter())
        .take(CHART_TOP)
        .map(|r| (r.name.as_str(), r.total_ns))
        .collect()
}

/// The tightest containment margins a process has, by name.
pub fn margins(p: &trace_analysis::report::ProcessReport) -> Vec<(&'static str, u64)> {
    let m = &p.timeline.margins;
    [
        ("dispatch start − launch start", m.dispatch_start_ns),
        ("bound end − dispatch end", m.dispatch_end_ns),
        ("copy start − call start", m.copy_start_ns),
        ("bound end − copy end", m.copy_end_ns),
    ]
    .into_iter()
    .filter_map(|(n, v)| Some((n, v?)))
    .collect()
}

/// The whole page.
pub fn analyze_page(r: &Report) -> String {
    let mut body = String::new();
    let mut n = 0usize;
    for input in &r.inputs {
        let _ = writeln!(
            body,
            "<h2>{} ({})</h2>",
            html::text(&input.path),
            html::text(input.kind.describe())
        );
        for p in &input.processes {
            let _ = writeln!(
                body,
                "<h3>{}</h3>\n<p>{} API calls, {} dispatches, {} copies, {} ROCTx records; \
                 {} containment violation(s); span {}.</p>",
                html::text(&p.label),
                p.counts.calls,
                p.counts.dispatches,
                p.counts.copies,
                p.counts.markers,
                p.timeline.violations_total,
                html::text(&human(p.summary.span_ns))
            );
            let timeline: Vec<Bar> = timeline_domains(p)
                .into_iter()
                .map(|(d, ns)| Bar {
                    label: d.to_owned(),
                    value: ns as f64 / 1e3,
                    color: if d == "KERNEL_DISPATCH" || d == "MEMORY_COPY" {
                        NEW
                    } else {
                        BASE
                    },
                })
                .collect();
            body.push_str(&html::figure(
                &format!("timeline-{n}"),
                "Timeline overview: time in kernels, copies and each API (µs)",
                &charts::bars(&timeline, "µs"),
            ));
            let kernels: Vec<Bar> = top_kernels(p)
                .into_iter()
                .map(|(k, ns)| Bar {
                    label: k.to_owned(),
                    value: ns as f64 / 1e3,
                    color: BASE,
                })
                .collect();
            body.push_str(&html::figure(
                &format!("kernels-{n}"),
                "Top kernels: total time (µs)",
                &charts::bars(&kernels, "µs"),
            ));
            let margin_bars: Vec<Bar> = margins(p)
                .into_iter()
                .map(|(m, ns)| Bar {
                    label: m.to_owned(),
                    value: ns as f64 / 1e3,
                    color: BASE,
                })
                .collect();
            body.push_str(&html::figure(
                &format!("margins-{n}"),
                "Tightest containment margins (µs): the largest clock skew the test cannot see",
                &charts::bars(&margin_bars, "µs"),
            ));
            for d in &p.summary.domains {
                let rows: Vec<(Vec<String>, bool)> = d
                    .rows
                    .iter()
                    .take(CHART_TOP * 2)
                    .map(|row| {
                        (
                            vec![
                                html::name(&row.name),
                                row.calls.to_string(),
                                human(row.total_ns),
                                format!("{:.1}", row.percent),
                                human(row.min_ns),
                                human(row.max_ns),
                            ],
                            false,
                        )
                    })
                    .collect();
                let _ = writeln!(body, "<h4>{}</h4>", html::text(d.domain));
                body.push_str(&html::table(
                    &["name", "calls", "total", "%", "min", "max"],
                    &rows,
                ));
            }
            for m in &p.missing {
                let _ = writeln!(body, "<p>missing: {}</p>", html::text(m));
            }
            n += 1;
        }
    }
    let _ = writeln!(
        body,
        "<h2>Counters</h2>\n<p>{} group(s) of matched processes.</p>",
        r.counters.len()
    );
    for g in &r.counters {
        for line in &g.summary {
            let _ = writeln!(body, "<p>{}</p>", html::text(line));
        }
    }
    html::page("rocprof analyze", &body)
}
