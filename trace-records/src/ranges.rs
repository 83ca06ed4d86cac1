//! The two scope values the CLI checks and the tool applies, parsed by the same code on both
//! sides: `--kernel-iteration-range` ([`IterationRanges`]) and `-P/--collection-period`
//! ([`Periods`]).

use std::fmt;

/// Which launches of a kernel are counted or traced in detail: inclusive ranges of 1-based
/// iteration numbers (the first launch of a kernel is iteration 1, as rocprofiler-sdk's tool
/// counts), kept sorted and merged, never expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IterationRanges {
    ranges: Vec<(u64, u64)>,
}

impl IterationRanges {
    /// Parses rocprofv3's form: `[`, `]`, `,` and blanks separate tokens, each an integer `N`
    /// or an inclusive range `A-B`. Refuses an empty list, iteration 0 (iterations count from
    /// 1), a range whose end is below its start and anything that is not a number.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut ranges = Vec::new();
        for token in range_tokens(text) {
            let zero = || {
                format!(
                    "'{token}': iteration 0 never happens (a kernel's first launch is iteration 1)"
                )
            };
            let (lo, hi) = range_token(token).map_err(|e| match e {
                TokenError::NotANumber => {
                    format!("'{token}' is not an iteration number or an inclusive range A-B")
                }
                TokenError::TooLarge => format!("'{token}': the number is too large"),
                TokenError::Reversed { hi: 0, .. } => zero(),
                TokenError::Reversed { lo, hi } => {
                    format!("'{token}': the range ends before it starts (write {hi}-{lo})")
                }
            })?;
            if lo == 0 {
                return Err(zero());
            }
            ranges.push((lo, hi));
        }
        if ranges.is_empty() {
            return Err(format!(
                "'{text}' names no iteration (give integers or inclusive ranges such as \"[1-3, 5]\")"
            ));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        Ok(IterationRanges { ranges: merged })
    }

    /// Whether launch `n` (1-based) is selected.
    pub fn contains(&self, n: u64) -> bool {
        let i = self.ranges.partition_point(|&(_, hi)| hi < n);
        self.ranges.get(i).is_some_and(|&(lo, _)| lo <= n)
    }

    /// The merged inclusive ranges, ascending.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
}

/// The form the tool reads back (`[1-3, 5]`).
impl fmt::Display for IterationRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (k, &(lo, hi)) in self.ranges.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            match lo == hi {
                true => write!(f, "{lo}")?,
                false => write!(f, "{lo}-{hi}")?,
            }
        }
        f.write_str("]")
    }
}

/// The tokens of rocprofv3's range lists (`--kernel-iteration-range`, `--profile-mpi-ranks`):
/// `[`, `]`, `,` and blanks separate them.
pub fn range_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| matches!(c, '[' | ']' | ',') || c.is_whitespace())
        .filter(|t| !t.is_empty())
}

/// What is wrong with one token of a range list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Neither an integer nor `A-B` of integers (decimal digits only).
    NotANumber,
    /// A number beyond `u64`.
    TooLarge,
    /// `A-B` with `B < A`.
    Reversed {
        /// A.
        lo: u64,
        /// B.
        hi: u64,
    },
}

/// One token of a range list: an integer `N` (the range `N-N`) or an inclusive range `A-B`.
pub fn range_token(token: &str) -> Result<(u64, u64), TokenError> {
    let (lo, hi) = match token.split_once('-') {
        Some((a, b)) => (decimal(a)?, decimal(b)?),
        None => {
            let n = decimal(token)?;
            (n, n)
        }
    };
    match hi < lo {
        true => Err(TokenError::Reversed { lo, hi }),
        false => Ok((lo, hi)),
    }
}

/// A non-negative integer of decimal digits only (no sign, no blanks).
fn decimal(digits: &str) -> Result<u64, TokenError> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TokenError::NotANumber);
    }
    digits.parse().map_err(|_| TokenError::TooLarge)
}

/// One collection period: wait `delay_ns`, collect for `duration_ns`, `repeat` times (0 =
/// forever); periods run one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// Nanoseconds without collection before each window.
    pub delay_ns: u64,
    /// Nanoseconds of collection.
    pub duration_ns: u64,
    /// How many times (0 = forever).
    pub repeat: u64,
}

/// `-P/--collection-period`: collection windows counted from the tool's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Periods {
    periods: Vec<Period>,
}

impl Periods {
    /// Parses the command line's `DELAY:DURATION:REPEAT` values, in units of `unit_ns`
    /// nanoseconds. Refuses a malformed value, a zero duration (it collects nothing) and times
    /// that overflow 64-bit nanoseconds.
    pub fn from_args<S: AsRef<str>>(values: &[S], unit_ns: u64) -> Result<Self, String> {
        let mut periods = Vec::new();
        for v in values {
            let v = v.as_ref();
            let [d, c, r] = triple(v)?;
            let ns = |x: u64| {
                x.checked_mul(unit_ns)
                    .ok_or_else(|| format!("'{v}': the time is too large"))
            };
            periods.push(Period {
                delay_ns: ns(d)?,
                duration_ns: ns(c)?,
                repeat: r,
            });
        }
        Self::checked(periods)
    }

    /// Parses the tool's variable: `;`-separated `delay_ns:duration_ns:repeat`.
    pub fn parse_env(text: &str) -> Result<Self, String> {
        let values: Vec<&str> = text.split(';').filter(|s| !s.trim().is_empty()).collect();
        Self::from_args(&values, 1)
    }

    fn checked(periods: Vec<Period>) -> Result<Self, String> {
        if periods.is_empty() {
            return Err("no collection period given (DELAY:DURATION:REPEAT)".into());
        }
        for p in &periods {
            if p.duration_ns == 0 {
                return Err(format!(
                    "a collection period of duration 0 collects nothing ({}:0:{})",
                    p.delay_ns, p.repeat
                ));
            }
            if p.delay_ns.checked_add(p.duration_ns).is_none() {
                return Err("a collection period is too long".into());
            }
        }
        Ok(Periods { periods })
    }

    /// The periods, in order.
    pub fn periods(&self) -> &[Period] {
        &self.periods
    }

    /// Whether `elapsed_ns` after the tool's start lies inside a collection window. Pure
    /// arithmetic over the periods: no allocation.
    pub fn collecting(&self, elapsed_ns: u64) -> bool {
        let mut base = 0u64;
        for p in &self.periods {
            let cycle = p.delay_ns + p.duration_ns;
            let Some(t) = elapsed_ns.checked_sub(base) else {
                return false;
            };
            let span = match p.repeat {
                0 => None,
                r => cycle.checked_mul(r),
            };
            match span {
                Some(span) if t >= span => {
                    base = base.saturating_add(span);
                    continue;
                }
                _ => return t % cycle >= p.delay_ns,
            }
        }
        false
    }
}

/// The form the tool reads back: `;`-joined `delay_ns:duration_ns:repeat`.
impl fmt::Display for Periods {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, p) in self.periods.iter().enumerate() {
            if k > 0 {
                f.write_str(";")?;
            }
            write!(f, "{}:{}:{}", p.delay_ns, p.duration_ns, p.repeat)?;
        }
        Ok(())
    }
}

fn triple(v: &str) -> Result<[u64; 3], String> {
    let parts: Vec<&str> = v.trim().split(':').collect();
    let bad = || {
        format!(
            "'{v}' is not DELAY:DURATION:REPEAT (three non-negative integers, REPEAT 0 = forever)"
        )
    };
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut out = [0u64; 3];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = decimal(p.trim()).map_err(|e| match e {
            TokenError::TooLarge => format!("'{v}': the number is too large"),
            _ => bad(),
        })?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rocprofv3_forms_parse_and_merge() {
        let r = IterationRanges::parse("[1-3, 5]").unwrap();
        assert_eq!(r.ranges(), [(1, 3), (5, 5)]);
        assert_eq!(IterationRanges::parse("5 1-3").unwrap(), r);
        assert_eq!(
            IterationRanges::parse("2-4,3-6 7").unwrap().ranges(),
            [(2, 7)]
        );
        assert!((1..=3).all(|n| r.contains(n)) && r.contains(5));
        assert!(!r.contains(4) && !r.contains(6) && !r.contains(0));
        assert_eq!(r.to_string(), "[1-3, 5]");
    }

    #[test]
    fn bad_ranges_say_why() {
        for (text, why) in [
            ("", "names no iteration"),
            ("[ , ]", "names no iteration"),
            ("0", "iteration 0"),
            ("3-1", "ends before it starts"),
            ("a", "not an iteration"),
            ("1-", "not an iteration"),
            ("-2", "not an iteration"),
            ("1-2-3", "not an iteration"),
            ("1.5", "not an iteration"),
            ("99999999999999999999", "too large"),
        ] {
            let e = IterationRanges::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn periods_follow_one_another_and_repeat() {
        let p = Periods::from_args(&["10:5:2", "0:1:1"], 1).unwrap();
        let windows: Vec<u64> = (0..40).filter(|&t| p.collecting(t)).collect();
        assert_eq!(windows, [10, 11, 12, 13, 14, 25, 26, 27, 28, 29, 30]);
        let forever = Periods::from_args(&["2:1:0", "0:100:1"], 1).unwrap();
        assert!(forever.collecting(2) && forever.collecting(1_000_001));
        assert!(
            !forever.collecting(1_000_000),
            "the second period never starts"
        );
        assert_eq!(p.to_string(), "10:5:2;0:1:1");
        assert_eq!(Periods::parse_env(&p.to_string()).unwrap(), p);
        let ms = Periods::from_args(&["1:2:0"], 1_000_000).unwrap();
        assert_eq!(ms.to_string(), "1000000:2000000:0");
    }

    #[test]
    fn bad_periods_say_why() {
        for (v, why) in [
            ("1:2", "DELAY:DURATION:REPEAT"),
            ("1:2:3:4", "DELAY:DURATION:REPEAT"),
            ("a:2:3", "DELAY:DURATION:REPEAT"),
            ("-1:2:3", "DELAY:DURATION:REPEAT"),
            ("1:0:1", "duration 0"),
        ] {
            let e = Periods::from_args(&[v], 1).unwrap_err();
            assert!(e.contains(why), "{v}: {e}");
        }
        let e = Periods::from_args(&["20000000000:1:1"], 3_600_000_000_000).unwrap_err();
        assert!(e.contains("too large"), "{e}");
        assert!(Periods::from_args::<&str>(&[], 1).is_err());
    }

    /// The reference meaning: the set of iterations the tokens name, expanded.
    fn expanded(tokens: &[(u64, u64)]) -> std::collections::BTreeSet<u64> {
        tokens.iter().flat_map(|&(lo, hi)| lo..=hi).collect()
    }

    proptest! {
        #[test]
        fn parsing_agrees_with_expansion(
            tokens in proptest::collection::vec((1u64..60, 0u64..6), 1..8),
            seps in proptest::collection::vec(prop_oneof![
                Just(","), Just(" "), Just(", "), Just("]["), Just("\t")
            ], 8),
            bracket in any::<bool>(),
        ) {
            let tokens: Vec<(u64, u64)> = tokens.iter().map(|&(lo, w)| (lo, lo + w)).collect();
            let mut text = String::new();
            if bracket { text.push('['); }
            for (k, &(lo, hi)) in tokens.iter().enumerate() {
                if k > 0 { text.push_str(seps[k % seps.len()]); }
                if lo == hi { text.push_str(&lo.to_string()) } else { text.push_str(&format!("{lo}-{hi}")) }
            }
            if bracket { text.push(']'); }
            let parsed = IterationRanges::parse(&text).unwrap();
            let want = expanded(&tokens);
            for n in 0..80 {
                prop_assert_eq!(parsed.contains(n), want.contains(&n), "{} at {}", text, n);
            }
            // The tool reads back exactly what the CLI passes on.
            prop_assert_eq!(IterationRanges::parse(&parsed.to_string()).unwrap(), parsed);
        }

        #[test]
        fn windows_agree_with_a_simulation(
            periods in proptest::collection::vec((0u64..7, 1u64..7, 0u64..4), 1..4),
            t in 0u64..200,
        ) {
            let values: Vec<String> = periods.iter().map(|(d, c, r)| format!("{d}:{c}:{r}")).collect();
            let p = Periods::from_args(&values, 1).unwrap();
            // Walk the windows one nanosecond at a time.
            let mut clock = 0u64;
            let mut inside = false;
            'all: for &(d, c, r) in &periods {
                let mut k = 0;
                while r == 0 || k < r {
                    if t < clock + d { break 'all; }
                    if t < clock + d + c { inside = true; break 'all; }
                    clock += d + c;
                    k += 1;
                    if clock > t { break 'all; }
                }
            }
            prop_assert_eq!(p.collecting(t), inside, "{:?} at {}", values, t);
            prop_assert_eq!(Periods::parse_env(&p.to_string()).unwrap(), p);
        }
    }
}
