//! Counters: per kernel and counter, each side's estimate (rocprof's min-non-zero estimate
//! over the side's runs, as `--pmc-repeat` computes it, through `trace_analysis::counters`),
//! the change, and whether the change can be believed next to the runs' own spread.

use crate::side::Side;
use serde::Serialize;
use std::collections::BTreeMap;
use trace_analysis::counters::{self, Knowledge};
use trace_analysis::model::Process;

/// Whether a counter change can be believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// Both sides' runs agree more closely than the change.
    Trustworthy,
    /// A side's runs spread by at least as much as the change: other GPU clients (or zero
    /// reads) can explain it.
    NotTrustworthy,
    /// A side has one run, so its spread is unknown.
    OneRun,
    /// Only one side counted it.
    OneSide,
}

impl Trust {
    /// For the text table.
    pub fn label(self) -> &'static str {
        match self {
            Trust::Trustworthy => "yes",
            Trust::NotTrustworthy => "NOT TRUSTWORTHY",
            Trust::OneRun => "one run",
            Trust::OneSide => "one side",
        }
    }
}

/// One side's estimate of a kernel's counter: summed over the kernel's dispatches of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CounterSide {
    /// The estimate.
    pub estimate: f64,
    /// The runs whose values were used (the most over its dispatches).
    pub runs: usize,
    /// `(max − min) / min` of the runs, in percent (`None` with fewer than two runs).
    pub spread_percent: Option<f64>,
}

/// One kernel × counter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    /// The kernel (exact text).
    pub kernel: String,
    /// Its grid and workgroup size.
    pub detail: String,
    /// The counter.
    pub counter: String,
    /// The base side's estimate.
    pub base: Option<CounterSide>,
    /// The new side's estimate.
    pub new: Option<CounterSide>,
    /// (new − base) / base, percent.
    pub change_percent: Option<f64>,
    /// Whether the change can be believed.
    pub trust: Trust,
}

#[derive(Default)]
struct Sums {
    estimate: f64,
    min: f64,
    max: f64,
    runs: usize,
}

type CounterKey = (String, String, String);

fn side_estimates(
    runs: &[Vec<Process>],
    know: &mut Knowledge,
) -> BTreeMap<CounterKey, CounterSide> {
    let refs: Vec<Vec<&Process>> = runs.iter().map(|r| r.iter().collect()).collect();
    let mut sums: BTreeMap<CounterKey, Sums> = BTreeMap::new();
    for group in counters::analyse(&refs, know) {
        for row in &group.rows {
            let (Some(e), Some(lo), Some(hi)) =
                (row.estimate.estimate, row.estimate.min, row.estimate.max)
            else {
                continue;
            };
            let k = &row.key;
            let detail = format!(
                "grid {}×{}×{}, workgroup {}×{}×{}",
                k.grid[0], k.grid[1], k.grid[2], k.workgroup[0], k.workgroup[1], k.workgroup[2]
            );
            let s = sums
                .entry((k.kernel.clone(), detail, row.counter.clone()))
                .or_default();
            s.estimate += e;
            s.min += lo;
            s.max += hi;
            s.runs = s.runs.max(row.estimate.runs_used);
        }
    }
    sums.into_iter()
        .map(|(key, s)| {
            let spread_percent =
                (s.runs >= 2 && s.min > 0.0).then(|| (s.max - s.min) / s.min * 100.0);
            (
                key,
                CounterSide {
                    estimate: s.estimate,
                    runs: s.runs,
                    spread_percent,
                },
            )
        })
        .collect()
}

/// Every kernel × counter of either side, the largest relative change first.
pub fn compare(base: &Side, new: &Side, know: &mut Knowledge) -> Vec<CounterRow> {
    let b = side_estimates(&base.counter_runs, know);
    let n = side_estimates(&new.counter_runs, know);
    let mut keys: Vec<&CounterKey> = b.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<CounterRow> = keys
        .into_iter()
        .map(|key| {
            let bs = b.get(key).copied();
            let ns = n.get(key).copied();
            let change_percent = match (bs, ns) {
                (Some(b), Some(n)) if b.estimate != 0.0 => {
                    Some((n.estimate - b.estimate) / b.estimate.abs() * 100.0)
                }
                (Some(b), Some(n)) if b.estimate == n.estimate => Some(0.0),
                _ => None,
            };
            let trust = match (bs, ns) {
                (Some(b), Some(n)) => match (b.spread_percent, n.spread_percent) {
                    (Some(sb), Some(sn)) => {
                        let change = change_percent.map_or(f64::INFINITY, f64::abs);
                        if sb.max(sn) > change {
                            Trust::NotTrustworthy
                        } else {
                            Trust::Trustworthy
                        }
                    }
                    _ => Trust::OneRun,
                },
                _ => Trust::OneSide,
            };
            CounterRow {
                kernel: key.0.clone(),
                detail: key.1.clone(),
                counter: key.2.clone(),
                base: bs,
                new: ns,
                change_percent,
                trust,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        let m = |r: &CounterRow| r.change_percent.map_or(f64::INFINITY, f64::abs);
        m(b).total_cmp(&m(a))
            .then_with(|| a.kernel.cmp(&b.kernel))
            .then_with(|| a.counter.cmp(&b.counter))
    });
    rows
}
