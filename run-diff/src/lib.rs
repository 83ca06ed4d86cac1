//! `run-diff`: what changed between two sets of runs (`rocprof diff BASE… -- NEW…`).
//!
//! **Inputs.** Each side is one or more inputs `rocprof analyze` reads — CSV output
//! directories, rocpd databases, record directories — read through `trace_analysis::inputs`
//! into its model, so the same runs give the same comparison whatever form they are in. Each
//! run is reduced to durations per item as soon as it is read ([`side`]): a side of many large
//! runs is never held whole (the API calls of a run are dropped once counted).
//!
//! **Items** ([`side::Kind`]): kernels by name, grid and workgroup size; API functions by
//! runtime and name; memory copies by direction; ROCTx ranges by message. The processes of a
//! run are pooled (a multi-process run is one run).
//!
//! **Statistics** ([`stats`], [`compare`]). Per item and side: count, total, time per run,
//! median, interquartile spread and the spread of the runs' own medians. The change is the
//! difference of medians (absolute and relative) and what it costs per run (difference of the
//! per-run totals); the report is sorted by that cost. Significance is a Mann–Whitney rank test
//! over the individual durations, pooled over the runs of a side, Holm-corrected over every
//! comparison of the report. A change is *flagged* only when the corrected p is below α (0.05),
//! the median moved by at least the threshold (5 %), and by more than either side's runs
//! differ among themselves: pooled durations treat every duration as independent, so with
//! thousands of them a shift between runs of one setup (another GPU client, a busier host)
//! would pass any test; the effect size and the runs' spread keep identical setups compared
//! repeatedly from flagging (tested by simulation).
//!
//! **Counters** ([`counters`]): per kernel and counter, each side's min-non-zero estimate over
//! its runs (`trace_analysis::counters`, i.e. `pmc_dxg::hygiene` as `--pmc-repeat`), summed
//! over the kernel's dispatches, the change, and "not trustworthy" where a side's runs spread
//! by more than the change.
//!
//! **Decisions where the issue is silent.** Copies are compared by direction only: rocprofv3's
//! `memory_copy_trace.csv` has no byte count, so a size class would make a CSV directory and a
//! rocpd database of the same runs disagree. ROCTx marks (instants) are not compared. Findings
//! are not errors: the command exits 0 whenever the comparison ran.

pub mod compare;
pub mod counters;
pub mod error;
pub mod report;
pub mod side;
pub mod stats;

pub use error::Error;

use compare::{Settings, Verdict};
use report::{CounterSection, Report, Section, SideInfo};
use side::{Kind, Side};
use std::path::PathBuf;
use trace_analysis::counters::Knowledge;

/// What `rocprof diff` is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The base side's inputs.
    pub base: Vec<PathBuf>,
    /// The new side's inputs.
    pub new: Vec<PathBuf>,
    /// Verdict settings.
    pub settings: Settings,
    /// Rows kept per section.
    pub top: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            base: Vec::new(),
            new: Vec::new(),
            settings: Settings::default(),
            top: report::DEFAULT_TOP,
        }
    }
}

/// Reads both sides and compares them, with the counter definitions `rocprof` uses.
pub fn diff(options: &Options) -> Result<Report, Error> {
    if options.base.is_empty() {
        return Err(Error::EmptySide("base"));
    }
    if options.new.is_empty() {
        return Err(Error::EmptySide("new"));
    }
    let s = options.settings;
    if !(s.alpha > 0.0 && s.alpha < 1.0) {
        return Err(Error::Setting(format!(
            "alpha {} is not in (0, 1)",
            s.alpha
        )));
    }
    if !(s.threshold_percent.is_finite() && s.threshold_percent >= 0.0) {
        return Err(Error::Setting(format!(
            "--threshold {} is not a percentage of at least 0",
            s.threshold_percent
        )));
    }
    let base = Side::read(&options.base)?;
    let new = Side::read(&options.new)?;
    Ok(build(&base, &new, options, &mut Knowledge::load()))
}

/// The report over two sides already read.
pub fn build(base: &Side, new: &Side, options: &Options, know: &mut Knowledge) -> Report {
    let rows = compare::compare(base, new, options.settings);
    let comparisons = rows.iter().filter(|(_, r)| r.p_value.is_some()).count();
    let flagged = rows.iter().filter(|(_, r)| r.verdict.flagged()).count();
    let mut sections = Vec::new();
    for kind in Kind::ALL {
        let of_kind: Vec<compare::Row> = rows
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, r)| r.clone())
            .collect();
        sections.push(Section {
            kind,
            rows_total: of_kind.len(),
            flagged: of_kind.iter().filter(|r| r.verdict.flagged()).count(),
            one_side: of_kind
                .iter()
                .filter(|r| matches!(r.verdict, Verdict::OnlyBase | Verdict::OnlyNew))
                .count(),
            rows: report::keep_top(of_kind, options.top),
        });
    }
    let mut counter_rows = counters::compare(base, new, know);
    let counter_total = counter_rows.len();
    let not_trustworthy = counter_rows
        .iter()
        .filter(|r| r.trust == counters::Trust::NotTrustworthy)
        .count();
    counter_rows.truncate(options.top);
    let info = |s: &Side| SideInfo {
        inputs: s.inputs.iter().map(|p| p.display().to_string()).collect(),
        runs: s.runs,
    };
    let mut notes = base.notes.clone();
    notes.extend(new.notes.iter().cloned());
    Report {
        schema: report::SCHEMA,
        base: info(base),
        new: info(new),
        settings: options.settings,
        method: report::METHOD,
        comparisons,
        flagged,
        sections,
        counters: CounterSection {
            rows_total: counter_total,
            not_trustworthy,
            rows: counter_rows,
        },
        notes,
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&report::render(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use side::{Key, Samples};

    fn side_with(names: &[&str]) -> Side {
        let mut s = Side {
            runs: 2,
            ..Side::default()
        };
        for name in names {
            s.samples.insert(
                Key {
                    kind: Kind::Kernel,
                    name: (*name).to_owned(),
                    detail: "grid 1×1×1, workgroup 1×1×1".into(),
                },
                Samples {
                    durations: vec![10, 11, 12, 13],
                    run_totals: vec![21, 25],
                    run_medians: vec![10.5, 12.5],
                },
            );
        }
        s
    }

    #[test]
    fn hostile_names_reach_the_text_escaped_and_shortened_and_the_json_exact() {
        let hostile = "evil\x1b[2J\u{202e}kernel\nname_".to_owned() + &"x".repeat(200);
        let base = side_with(&[&hostile]);
        let new = side_with(&[&hostile, "only\tnew"]);
        let r = build(&base, &new, &Options::default(), &mut Knowledge::with(None));
        let text = r.to_string();
        assert!(!text.contains('\x1b') && !text.contains('\u{202e}') && !text.contains('\t'));
        assert!(
            text.contains("evil\\x1b[2J\\u{202e}kernel\\nname_"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() < 200), "{text}");
        assert!(
            text.contains("only new") && text.contains("only\\tnew"),
            "{text}"
        );
        let json = serde_json::to_value(&r).unwrap();
        let names: Vec<&str> = json["sections"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&hostile.as_str()),
            "the JSON keeps the exact text"
        );
    }

    #[test]
    fn settings_and_sides_are_checked_before_anything_is_read() {
        let some = vec![PathBuf::from("/nonexistent")];
        let with = |f: &dyn Fn(&mut Options)| {
            let mut o = Options {
                base: some.clone(),
                new: some.clone(),
                ..Options::default()
            };
            f(&mut o);
            diff(&o).unwrap_err().to_string()
        };
        assert!(with(&|o| o.base.clear()).contains("base side"));
        assert!(with(&|o| o.new.clear()).contains("new side"));
        assert!(with(&|o| o.settings.alpha = 0.0).contains("alpha"));
        assert!(with(&|o| o.settings.alpha = 1.5).contains("alpha"));
        assert!(with(&|o| o.settings.threshold_percent = -1.0).contains("--threshold"));
        assert!(with(&|o| o.settings.threshold_percent = f64::NAN).contains("--threshold"));
        assert!(
            with(&|_| ()).contains("/nonexistent"),
            "an unreadable input names itself"
        );
    }
}
