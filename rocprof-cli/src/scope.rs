//! Which launches and which time windows are collected: `--kernel-iteration-range`,
//! `-P/--collection-period` with `--collection-period-unit`, `--selected-regions-ref-count`.

use clap::ValueEnum;

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
          value_parser = crate::run::parse_bool, value_name = "BOOL", help_heading = "Filtering")]
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

impl ScopeOptions {
    /// What is wrong with these options, before anything runs.
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// The tool's variables for these options.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}
