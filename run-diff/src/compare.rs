//! The comparison of two sides: per item the statistics of each side, the change, the rank
//! test and its correction for the number of comparisons, and the verdict.

use crate::side::{Key, Kind, Samples, Side};
use crate::stats;
use serde::Serialize;

/// What decides a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    /// The family-wise error rate the corrected p-values are held to.
    pub alpha: f64,
    /// The smallest change of the median, in percent, that is reported as a change.
    pub threshold_percent: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            threshold_percent: 5.0,
        }
    }
}

/// One side's figures of an item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideStats {
    /// Runs of the side it occurs in.
    pub runs: usize,
    /// Occurrences over every run.
    pub count: usize,
    /// Its time over every run, ns.
    pub total_ns: u64,
    /// Its time per run of the side (the total over the side's runs), ns.
    pub per_run_ns: f64,
    /// Median duration over every occurrence, ns.
    pub median_ns: f64,
    /// The interquartile range of the durations, ns.
    pub spread_ns: f64,
    /// The shortest, first quartile, third quartile and longest duration, ns (box plots).
    pub quartiles_ns: [f64; 5],
    /// How far the runs' own medians lie apart, in percent of the median (`None` with fewer
    /// than two runs).
    pub run_spread_percent: Option<f64>,
    /// The lowest and the highest of the runs' own medians, ns.
    pub run_medians_ns: [f64; 2],
}

/// What a comparison found for an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly slower, by at least the threshold and more than the runs' own spread.
    Slower,
    /// Significantly faster, likewise.
    Faster,
    /// No change that passes the test, the threshold and the runs' spread.
    NotSignificant,
    /// Only the base side has it.
    OnlyBase,
    /// Only the new side has it.
    OnlyNew,
}

impl Verdict {
    /// For the text tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Slower => "SLOWER",
            Verdict::Faster => "FASTER",
            Verdict::NotSignificant => "-",
            Verdict::OnlyBase => "only base",
            Verdict::OnlyNew => "only new",
        }
    }

    /// Slower or faster.
    pub fn flagged(self) -> bool {
        matches!(self, Verdict::Slower | Verdict::Faster)
    }
}

/// One compared item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The kernel, function or range name, or the copy direction (exact text).
    pub name: String,
    /// Sizes for a kernel, the runtime for a function.
    pub detail: String,
    /// The base side's figures, when it has the item.
    pub base: Option<SideStats>,
    /// The new side's figures, when it has the item.
    pub new: Option<SideStats>,
    /// New median − base median, ns.
    pub change_ns: Option<f64>,
    /// The same in percent of the base median.
    pub change_percent: Option<f64>,
    /// What the change costs (positive) or saves per run: new per-run time − base per-run time.
    pub run_time_change_ns: f64,
    /// The Mann–Whitney p-value of the pooled durations.
    pub p_value: Option<f64>,
    /// The p-value after Holm's correction over every comparison of the report.
    pub adjusted_p: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

fn side_stats(s: &Samples, runs: usize) -> SideStats {
    let median = stats::median(&s.durations).unwrap_or(0.0);
    let q1 = stats::quantile(&s.durations, 0.25).unwrap_or(0.0);
    let q3 = stats::quantile(&s.durations, 0.75).unwrap_or(0.0);
    let total: u64 = s.run_totals.iter().sum();
    let lo = s.run_medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = s
        .run_medians
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let run_medians_ns = if s.run_medians.is_empty() {
        [median, median]
    } else {
        [lo, hi]
    };
    let run_spread_percent =
        (s.run_medians.len() >= 2 && median > 0.0).then(|| (hi - lo) / median * 100.0);
    SideStats {
        runs: s.run_totals.len(),
        count: s.durations.len(),
        total_ns: total,
        per_run_ns: total as f64 / runs.max(1) as f64,
        median_ns: median,
        spread_ns: q3 - q1,
        quartiles_ns: [
            s.durations.first().map_or(0.0, |&v| v as f64),
            q1,
            median,
            q3,
            s.durations.last().map_or(0.0, |&v| v as f64),
        ],
        run_spread_percent,
        run_medians_ns,
    }
}

/// Every item of either side compared, sorted within each kind by what the change costs or
/// saves per run (largest first), with the verdicts decided under `settings`.
pub fn compare(base: &Side, new: &Side, settings: Settings) -> Vec<(Kind, Row)> {
    let mut keys: Vec<&Key> = base.samples.keys().chain(new.samples.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<(Kind, Row)> = Vec::with_capacity(keys.len());
    for key in keys {
        let b = base.samples.get(key);
        let n = new.samples.get(key);
        let bs = b.map(|s| side_stats(s, base.runs));
        let ns = n.map(|s| side_stats(s, new.runs));
        let per_run = |s: &Option<SideStats>| s.as_ref().map_or(0.0, |s| s.per_run_ns);
        let (change_ns, change_percent) = match (&bs, &ns) {
            (Some(b), Some(n)) => {
                let d = n.median_ns - b.median_ns;
                (
                    Some(d),
                    (b.median_ns > 0.0).then(|| d / b.median_ns * 100.0),
                )
            }
            _ => (None, None),
        };
        let p_value = match (b, n) {
            (Some(b), Some(n)) => Some(stats::mann_whitney_p(&b.durations, &n.durations)),
            _ => None,
        };
        let verdict = match (&bs, &ns) {
            (Some(_), None) => Verdict::OnlyBase,
            (None, Some(_)) => Verdict::OnlyNew,
            _ => Verdict::NotSignificant,
        };
        rows.push((
            key.kind,
            Row {
                name: key.name.clone(),
                detail: key.detail.clone(),
                run_time_change_ns: per_run(&ns) - per_run(&bs),
                base: bs,
                new: ns,
                change_ns,
                change_percent,
                p_value,
                adjusted_p: None,
                verdict,
            },
        ));
    }
    // Holm over every test of the report: kernels, functions, copies and ranges together.
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&k| rows[k].1.p_value.is_some())
        .collect();
    let p: Vec<f64> = tested.iter().filter_map(|&k| rows[k].1.p_value).collect();
    for (&k, adjusted) in tested.iter().zip(stats::holm(&p)) {
        let row = &mut rows[k].1;
        row.adjusted_p = Some(adjusted);
        row.verdict = decide(row, adjusted, settings);
    }
    rows.sort_by(|(ka, a), (kb, b)| {
        ka.cmp(kb)
            .then(
                b.run_time_change_ns
                    .abs()
                    .total_cmp(&a.run_time_change_ns.abs()),
            )
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.detail.cmp(&b.detail))
    });
    rows
}

/// Slower or faster only when the corrected test rejects, the median moved by at least the
/// threshold, by more than either side's runs differ among themselves (the range of its runs'
/// medians, in ns like the change: a shift that one side's runs already show is noise between
/// runs, not a change), and every run of the new side lies beyond every run of the base side
/// (the ranges of the runs' medians do not overlap).
///
/// The run rules are the runs' own test: the pooled rank test counts every occurrence as
/// independent, while occurrences of one run share that run's conditions (where its threads
/// ran, what else the machine did), so a few runs of one side in a slow state can make a
/// pooled test reject by orders of magnitude.
fn decide(row: &Row, adjusted: f64, settings: Settings) -> Verdict {
    let (Some(change), Some(change_ns), Some(b), Some(n)) =
        (row.change_percent, row.change_ns, &row.base, &row.new)
    else {
        return Verdict::NotSignificant;
    };
    let range = |s: &SideStats| s.run_medians_ns[1] - s.run_medians_ns[0];
    let noise_ns = range(b).max(range(n));
    let apart = if change > 0.0 {
        n.run_medians_ns[0] > b.run_medians_ns[1]
    } else {
        n.run_medians_ns[1] < b.run_medians_ns[0]
    };
    if adjusted < settings.alpha
        && change.abs() >= settings.threshold_percent
        && change_ns.abs() > noise_ns
        && apart
    {
        if change > 0.0 {
            Verdict::Slower
        } else {
            Verdict::Faster
        }
    } else {
        Verdict::NotSignificant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: deterministic draws for the simulations.
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }
        /// A roughly normal draw (sum of 4 uniforms), mean 0, sd ≈ 1.
        fn normal(&mut self) -> f64 {
            ((0..4).map(|_| self.uniform()).sum::<f64>() - 2.0) * 1.732
        }
    }

    /// A side of `runs` runs of `items` items (item k: `50 + 20k` occurrences of about
    /// `10 µs × (k + 1)`), each run shifted by a run-level factor (sd `run_sd`), each duration by
    /// its own (sd `jitter_sd`); item 0 scaled by `slow0`.
    fn side(
        rng: &mut Rng,
        runs: usize,
        items: usize,
        run_sd: f64,
        jitter_sd: f64,
        slow0: f64,
    ) -> Side {
        side_with(
            rng,
            runs,
            items,
            |r| 1.0 + run_sd * r.normal(),
            jitter_sd,
            slow0,
        )
    }

    /// [`side`] with each run's factor drawn by `run_factor`.
    fn side_with(
        rng: &mut Rng,
        runs: usize,
        items: usize,
        mut run_factor: impl FnMut(&mut Rng) -> f64,
        jitter_sd: f64,
        slow0: f64,
    ) -> Side {
        let mut s = Side {
            runs,
            ..Side::default()
        };
        for _ in 0..runs {
            let run_factor = run_factor(rng);
            for k in 0..items {
                let base = 10_000.0 * (k + 1) as f64 * if k == 0 { slow0 } else { 1.0 };
                let mut d: Vec<u64> = (0..50 + 20 * k)
                    .map(|_| (base * run_factor * (1.0 + jitter_sd * rng.normal())).max(1.0) as u64)
                    .collect();
                d.sort_unstable();
                let e = s
                    .samples
                    .entry(Key {
                        kind: if k % 2 == 0 { Kind::Kernel } else { Kind::Api },
                        name: format!("item{k}"),
                        detail: String::new(),
                    })
                    .or_default();
                e.run_totals.push(d.iter().sum());
                e.run_medians.push(stats::median(&d).unwrap());
                e.durations.extend(d);
            }
        }
        for e in s.samples.values_mut() {
            e.durations.sort_unstable();
        }
        s
    }

    #[test]
    fn identical_setups_compared_repeatedly_flag_almost_nothing() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut reports_with_a_flag, mut flags) = (0, 0);
        let trials = 200;
        for _ in 0..trials {
            // Run-to-run shifts of 1 % and 3 % jitter per duration (the simulator's), pooled
            // thousands of durations: a pooled test alone would flag most of these.
            let a = side(&mut rng, 5, 30, 0.01, 0.03, 1.0);
            let b = side(&mut rng, 5, 30, 0.01, 0.03, 1.0);
            let rows = compare(&a, &b, Settings::default());
            let n = rows.iter().filter(|(_, r)| r.verdict.flagged()).count();
            flags += n;
            reports_with_a_flag += usize::from(n > 0);
        }
        assert!(
            reports_with_a_flag * 100 <= trials,
            "{reports_with_a_flag} of {trials} identical comparisons flagged something ({flags} items)"
        );
    }

    /// Each run in one of two states, the slow one 2.5 times the fast one, each state as
    /// likely (CI saw `hipLaunchKernel` in the simulator do this: run medians of 8.5 µs and
    /// 21 µs between identical setups).
    fn two_state_run(rng: &mut Rng) -> f64 {
        if rng.uniform() < 0.5 { 2.5 } else { 1.0 }
    }

    #[test]
    fn runs_in_two_states_are_not_a_change() {
        // The case CI met: every base run fast, three of five new runs slow. The pooled test
        // rejects by orders of magnitude and the new median is 2.5 times the base one, but
        // the new side's own runs already differ by as much.
        let mut states = [1.0, 1.0, 1.0, 1.0, 1.0, 2.5, 1.0, 2.5, 2.5, 1.0].into_iter();
        let mut rng = Rng(11);
        let a = side_with(&mut rng, 5, 1, |_| states.next().unwrap(), 0.03, 1.0);
        let b = side_with(&mut rng, 5, 1, |_| states.next().unwrap(), 0.03, 1.0);
        let rows = compare(&a, &b, Settings::default());
        let row = &rows[0].1;
        assert!(row.adjusted_p.unwrap() < 1e-6, "{row:?}");
        assert!(row.change_percent.unwrap() > 100.0, "{row:?}");
        assert_eq!(row.verdict, Verdict::NotSignificant, "{row:?}");
        // Every new run slow: that is a change.
        let mut rng = Rng(12);
        let a = side_with(&mut rng, 5, 1, |_| 1.0, 0.03, 1.0);
        let b = side_with(&mut rng, 5, 1, |_| 2.5, 0.03, 1.0);
        assert_eq!(
            compare(&a, &b, Settings::default())[0].1.verdict,
            Verdict::Slower
        );
        // And repeated: identical two-state setups are rarely flagged (both sides' runs must
        // each agree and lie apart, a 1-in-500 draw of the states).
        let mut rng = Rng(13);
        let trials = 400;
        let mut reports_with_a_flag = 0;
        for _ in 0..trials {
            let a = side_with(&mut rng, 5, 3, two_state_run, 0.03, 1.0);
            let b = side_with(&mut rng, 5, 3, two_state_run, 0.03, 1.0);
            let rows = compare(&a, &b, Settings::default());
            reports_with_a_flag += usize::from(rows.iter().any(|(_, r)| r.verdict.flagged()));
        }
        assert!(
            reports_with_a_flag * 100 <= trials,
            "{reports_with_a_flag} of {trials} identical two-state comparisons flagged something"
        );
    }

    #[test]
    fn without_the_effect_size_and_run_spread_a_pooled_test_flags_run_noise() {
        // The reason for the two extra conditions: with the threshold at 0 and run-level noise,
        // the corrected test alone flags identical setups often.
        let mut rng = Rng(7);
        let mut flagged = 0;
        for _ in 0..50 {
            let a = side(&mut rng, 5, 30, 0.02, 0.03, 1.0);
            let b = side(&mut rng, 5, 30, 0.02, 0.03, 1.0);
            let rows = compare(&a, &b, Settings::default());
            let p_only = rows
                .iter()
                .filter(|(_, r)| r.adjusted_p.is_some_and(|p| p < 0.05))
                .count();
            flagged += p_only;
        }
        assert!(flagged > 50, "the pooled test alone flagged only {flagged}");
    }

    #[test]
    fn a_twenty_percent_slower_item_is_flagged_and_nothing_else() {
        let mut rng = Rng(42);
        for _ in 0..20 {
            let a = side(&mut rng, 5, 30, 0.01, 0.03, 1.0);
            let b = side(&mut rng, 5, 30, 0.01, 0.03, 1.2);
            let rows = compare(&a, &b, Settings::default());
            let flagged: Vec<&Row> = rows
                .iter()
                .map(|(_, r)| r)
                .filter(|r| r.verdict.flagged())
                .collect();
            assert_eq!(flagged.len(), 1, "{flagged:?}");
            assert_eq!(flagged[0].name, "item0");
            assert_eq!(flagged[0].verdict, Verdict::Slower);
            let change = flagged[0].change_percent.unwrap();
            assert!((15.0..25.0).contains(&change), "{change}");
        }
        // And faster.
        let a = side(&mut rng, 5, 4, 0.01, 0.03, 1.0);
        let b = side(&mut rng, 5, 4, 0.01, 0.03, 0.7);
        let rows = compare(&a, &b, Settings::default());
        let item0 = rows.iter().find(|(_, r)| r.name == "item0").unwrap();
        assert_eq!(item0.1.verdict, Verdict::Faster);
    }

    #[test]
    fn one_sided_items_and_sorting_by_cost() {
        let mut rng = Rng(3);
        let mut a = side(&mut rng, 2, 3, 0.0, 0.01, 1.0);
        let mut b = side(&mut rng, 2, 3, 0.0, 0.01, 2.0);
        let gone = Key {
            kind: Kind::Kernel,
            name: "gone".into(),
            detail: String::new(),
        };
        let came = Key {
            kind: Kind::Kernel,
            name: "came".into(),
            detail: String::new(),
        };
        let one = Samples {
            durations: vec![5],
            run_totals: vec![5],
            run_medians: vec![5.0],
        };
        a.samples.insert(gone, one.clone());
        b.samples.insert(came, one);
        let rows = compare(&a, &b, Settings::default());
        let verdict = |n: &str| rows.iter().find(|(_, r)| r.name == n).unwrap().1.verdict;
        assert_eq!(verdict("gone"), Verdict::OnlyBase);
        assert_eq!(verdict("came"), Verdict::OnlyNew);
        // Kernels first; within a kind the largest per-run cost first (item0 doubled).
        assert_eq!(rows[0].0, Kind::Kernel);
        assert_eq!(rows[0].1.name, "item0");
        let costs: Vec<f64> = rows
            .iter()
            .filter(|(k, _)| *k == Kind::Kernel)
            .map(|(_, r)| r.run_time_change_ns.abs())
            .collect();
        assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
    }
}
