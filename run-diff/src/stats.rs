//! The statistics of a comparison, on sorted samples: quantiles, the Mann–Whitney rank test
//! (normal approximation with the tie correction and a continuity correction) and Holm's
//! step-down correction for many comparisons.

/// The `q`-quantile (0 ≤ q ≤ 1) of `sorted` by linear interpolation between closest ranks
/// (`None` when empty).
pub fn quantile(sorted: &[u64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let at = q.clamp(0.0, 1.0) * last as f64;
    let lo = at.floor() as usize;
    let hi = at.ceil() as usize;
    let frac = at - lo as f64;
    Some(sorted[lo] as f64 + (sorted[hi] as f64 - sorted[lo] as f64) * frac)
}

/// The median of `sorted`.
pub fn median(sorted: &[u64]) -> Option<f64> {
    quantile(sorted, 0.5)
}

/// The two-sided p-value of the Mann–Whitney U test of `a` against `b`, both sorted
/// ascending: how likely a rank difference at least this large is when both samples come from
/// one distribution. 1 when either sample has fewer than two values or every value ties.
///
/// The ranks are summed in one merge of the two sorted samples (ties get their mean rank), so
/// the cost is linear after the sort; the normal approximation uses the tie-corrected
/// variance and a continuity correction of ½.
pub fn mann_whitney_p(a: &[u64], b: &[u64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 < 2 || n2 < 2 {
        return 1.0;
    }
    let (mut i, mut j) = (0usize, 0usize);
    let mut rank_sum_a = 0.0_f64;
    let mut tie_term = 0.0_f64;
    let mut next_rank = 1.0_f64;
    while i < n1 || j < n2 {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        let from_a = a[i..].iter().take_while(|&&x| x == v).count();
        let from_b = b[j..].iter().take_while(|&&y| y == v).count();
        let t = (from_a + from_b) as f64;
        let mean_rank = next_rank + (t - 1.0) / 2.0;
        rank_sum_a += mean_rank * from_a as f64;
        tie_term += t * t * t - t;
        next_rank += t;
        i += from_a;
        j += from_b;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let n = f1 + f2;
    let u = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    let mean = f1 * f2 / 2.0;
    let variance = f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// The complementary error function (Chebyshev fit, relative error below 1.2 × 10⁻⁷ everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Holm's step-down adjustment of `p` (in any order; the result is in the same order): the
/// family-wise error rate of rejecting every adjusted value below α is at most α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0_f64;
    for (k, &at) in order.iter().enumerate() {
        let value = ((m - k) as f64 * p[at]).min(1.0);
        running = running.max(value);
        adjusted[at] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The U statistic by its definition (pairs where a wins, ties half), for checking.
    fn naive_p(a: &[u64], b: &[u64]) -> f64 {
        let mut all: Vec<(u64, bool)> = a
            .iter()
            .map(|&x| (x, true))
            .chain(b.iter().map(|&y| (y, false)))
            .collect();
        all.sort_unstable();
        let n = all.len();
        let mut ranks = vec![0.0; n];
        let mut k = 0;
        let mut tie_term = 0.0;
        while k < n {
            let mut e = k;
            while e + 1 < n && all[e + 1].0 == all[k].0 {
                e += 1;
            }
            let t = (e - k + 1) as f64;
            tie_term += t * t * t - t;
            for r in &mut ranks[k..=e] {
                *r = (k + e) as f64 / 2.0 + 1.0;
            }
            k = e + 1;
        }
        let r1: f64 = all
            .iter()
            .zip(&ranks)
            .filter(|(v, _)| v.1)
            .map(|(_, r)| r)
            .sum();
        let (f1, f2) = (a.len() as f64, b.len() as f64);
        let u = r1 - f1 * (f1 + 1.0) / 2.0;
        let var = f1 * f2 / 12.0 * ((f1 + f2 + 1.0) - tie_term / ((f1 + f2) * (f1 + f2 - 1.0)));
        if var <= 0.0 {
            return 1.0;
        }
        let z = ((u - f1 * f2 / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
        erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (-1.0, 1.842_700_793),
        ] {
            assert!(
                (erfc(x) - want).abs() < 1e-6 * want.max(1e-3),
                "erfc({x}) = {}",
                erfc(x)
            );
        }
    }

    #[test]
    fn quantiles_interpolate() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7.0));
        assert_eq!(median(&[1, 3]), Some(2.0));
        assert_eq!(quantile(&[10, 20, 30, 40, 50], 0.25), Some(20.0));
        assert_eq!(quantile(&[10, 20, 30, 40, 50], 1.0), Some(50.0));
    }

    #[test]
    fn separated_samples_are_significant_and_equal_ones_are_not() {
        let a: Vec<u64> = (100..110).collect();
        let b: Vec<u64> = (120..130).collect();
        let p = mann_whitney_p(&a, &b);
        // Exact two-sided p for complete separation of 10 and 10: 2 / C(20, 10) ≈ 1.1e-5; the
        // normal approximation with continuity correction gives about 1.8e-4.
        assert!(p < 5e-4, "{p}");
        assert_eq!(mann_whitney_p(&a, &a), 1.0);
        assert_eq!(mann_whitney_p(&[5, 5, 5], &[5, 5]), 1.0, "all ties");
        assert_eq!(mann_whitney_p(&[1], &[9, 10]), 1.0, "too few");
        assert!(mann_whitney_p(&b, &a) == p, "symmetric");
    }

    #[test]
    fn holm_adjusts_step_down_and_stays_monotone() {
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        // Sorted: 0.005×4 = 0.02, 0.01×3 = 0.03, 0.03×2 = 0.06, 0.04×1 → max(0.06, 0.04).
        let want = [0.03, 0.06, 0.06, 0.02];
        for (got, want) in adjusted.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{adjusted:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    proptest! {
        #[test]
        fn the_merge_gives_the_definitions_p(mut a in proptest::collection::vec(0u64..20, 0..30), mut b in proptest::collection::vec(0u64..20, 0..30)) {
            a.sort_unstable();
            b.sort_unstable();
            let p = mann_whitney_p(&a, &b);
            let want = if a.len() < 2 || b.len() < 2 { 1.0 } else { naive_p(&a, &b) };
            prop_assert!((p - want).abs() < 1e-9, "{} vs {}", p, want);
            prop_assert!((0.0..=1.0).contains(&p));
        }

        #[test]
        fn holm_never_lowers_a_p_value(p in proptest::collection::vec(0.0f64..=1.0, 0..20)) {
            let adjusted = holm(&p);
            for (x, y) in p.iter().zip(&adjusted) {
                prop_assert!(y >= x && *y <= 1.0);
            }
        }
    }
}
