//! Which launches and which time windows are collected: `--kernel-iteration-range`,
//! `-P/--collection-period` with `--collection-period-unit`, `--selected-regions-ref-count`.

use clap::ValueEnum;
use trace_records::env;
use trace_records::ranges::{IterationRanges, Periods};

/// The collection-scope options (rocprofv3's names).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct ScopeOptions {
    /// Which launches of each kernel are counted or traced in detail: integers or inclusive
    /// `A-B` ranges, 1-based (`"[1-3, 5]"`, `1 4`).
    #[arg(long = "kernel-iteration-range", num_args = 1.., value_name = "RANGE",
          help_heading = "Filtering")]
    pub kernel_iteration_range: Vec<String>,
    /// Collect only in periods `DELAY:DURATION:REPEAT` after the application starts (in
    /// `--collection-period-unit`; REPEAT 0 = forever).
    #[arg(short = 'P', long = "collection-period", num_args = 1.., value_name = "D:C:R",
          help_heading = "Filtering")]
    pub collection_period: Vec<String>,
    /// The unit of `--collection-period`.
    #[arg(long = "collection-period-unit", value_enum, default_value_t = PeriodUnit::Sec,
          help_heading = "Filtering")]
    pub collection_period_unit: PeriodUnit,
    /// With `--selected-regions`: nested roctxProfilerResume/Pause pairs count (collection
    /// stops at the outermost pause).
    #[arg(long = "selected-regions-ref-count", num_args = 0..=1, default_missing_value = "true",
          value_parser = trace_records::env::parse_bool, value_name = "BOOL", help_heading = "Filtering")]
    pub selected_regions_ref_count: Option<bool>,
}

/// `--collection-period-unit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum PeriodUnit {
    /// Hours.
    Hour,
    /// Minutes.
    Min,
    /// Seconds (the default).
    #[default]
    Sec,
    /// Milliseconds.
    Msec,
    /// Microseconds.
    Usec,
    /// Nanoseconds.
    Nsec,
}

impl PeriodUnit {
    /// Nanoseconds per unit.
    pub fn nanoseconds(self) -> u64 {
        match self {
            Self::Hour => 3_600_000_000_000,
            Self::Min => 60_000_000_000,
            Self::Sec => 1_000_000_000,
            Self::Msec => 1_000_000,
            Self::Usec => 1_000,
            Self::Nsec => 1,
        }
    }
}

impl ScopeOptions {
    /// The iteration ranges, as the tool will read them (`None` without the option).
    pub fn iterations(&self) -> Result<Option<IterationRanges>, String> {
        if self.kernel_iteration_range.is_empty() {
            return Ok(None);
        }
        // rocprofv3 joins the values with ", " and the tool tokenizes the whole.
        let joined = self.kernel_iteration_range.join(", ");
        IterationRanges::parse(&joined)
            .map(Some)
            .map_err(|e| format!("--kernel-iteration-range: {e}"))
    }

    /// The collection periods in nanoseconds (`None` without `-P`).
    pub fn periods(&self) -> Result<Option<Periods>, String> {
        if self.collection_period.is_empty() {
            return Ok(None);
        }
        Periods::from_args(
            &self.collection_period,
            self.collection_period_unit.nanoseconds(),
        )
        .map(Some)
        .map_err(|e| format!("--collection-period: {e}"))
    }

    /// What is wrong with these options, before anything runs (`selected_regions`:
    /// whether `--selected-regions` is on).
    pub fn validate(&self, selected_regions: bool) -> Result<(), String> {
        self.iterations()?;
        let periods = self.periods()?;
        if periods.is_some() && selected_regions {
            return Err(
                "--selected-regions cannot be combined with --collection-period (as \
                 rocprofv3 refuses it): choose the collection either by \
                 roctxProfilerResume/Pause or by time"
                    .into(),
            );
        }
        if self.selected_regions_ref_count == Some(true) && !selected_regions {
            return Err("--selected-regions-ref-count counts nested \
                 roctxProfilerResume/Pause pairs of --selected-regions: add --selected-regions"
                .into());
        }
        Ok(())
    }

    /// The tool's variables for these options (valid ones: [`Self::validate`] came first).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Ok(Some(r)) = self.iterations() {
            v.push((env::KERNEL_FILTER_RANGE, r.to_string()));
        }
        if let Ok(Some(p)) = self.periods() {
            v.push((env::COLLECTION_PERIOD, p.to_string()));
        }
        if self.selected_regions_ref_count == Some(true) {
            v.push((env::SELECTED_REGIONS_REF_COUNT, "1".to_owned()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(ranges: &[&str], periods: &[&str], unit: PeriodUnit) -> ScopeOptions {
        ScopeOptions {
            kernel_iteration_range: ranges.iter().map(|s| s.to_string()).collect(),
            collection_period: periods.iter().map(|s| s.to_string()).collect(),
            collection_period_unit: unit,
            selected_regions_ref_count: None,
        }
    }

    #[test]
    fn values_become_the_tools_variables() {
        let o = opts(&["[1-3", "5]"], &["1:2:0", "0:3:2"], PeriodUnit::Msec);
        o.validate(false).unwrap();
        assert_eq!(
            o.env(),
            [
                (env::KERNEL_FILTER_RANGE, "[1-3, 5]".to_owned()),
                (
                    env::COLLECTION_PERIOD,
                    "1000000:2000000:0;0:3000000:2".to_owned()
                ),
            ]
        );
        assert!(opts(&[], &[], PeriodUnit::Sec).env().is_empty());
        let h = opts(&[], &["1:1:1"], PeriodUnit::Hour)
            .periods()
            .unwrap()
            .unwrap();
        assert_eq!(h.periods()[0].delay_ns, 3_600_000_000_000);
    }

    #[test]
    fn bad_or_contradictory_values_are_refused_with_the_option_named() {
        let e = opts(&["3-1"], &[], PeriodUnit::Sec)
            .validate(false)
            .unwrap_err();
        assert!(
            e.starts_with("--kernel-iteration-range:") && e.contains("3-1"),
            "{e}"
        );
        let e = opts(&[], &["5:2"], PeriodUnit::Sec)
            .validate(false)
            .unwrap_err();
        assert!(e.starts_with("--collection-period:"), "{e}");
        let e = opts(&[], &["1:2:0"], PeriodUnit::Sec)
            .validate(true)
            .unwrap_err();
        assert!(e.contains("--selected-regions cannot be combined"), "{e}");
        let mut r = opts(&[], &[], PeriodUnit::Sec);
        r.selected_regions_ref_count = Some(true);
        assert!(
            r.validate(false)
                .unwrap_err()
                .contains("add --selected-regions")
        );
        r.validate(true).unwrap();
        assert_eq!(r.env(), [(env::SELECTED_REGIONS_REF_COUNT, "1".to_owned())]);
    }
}
