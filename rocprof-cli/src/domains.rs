//! Tracing domains whose libraries this stack does not ship (RCCL, rocDecode, rocJPEG, Kokkos,
//! OpenMP tools, rocSHMEM, hipFile), the KFD event domains WSL2 cannot have, and HIP graph and
//! event activity: accepted with rocprofv3's names, handed to the tool with rocprofv3's
//! variables, and after the run said plainly when the application never loaded the library
//! (or loaded it, and why nothing was traced).
//!
//! Decisions:
//! - Only domains asked for by name are reported after the run; `-s`/`-r` imply the library
//!   domains as rocprofv3's aggregates do, but quietly (most applications load none of them).
//! - A library that registers its table through rocprofiler-register reaches the tool's
//!   `rocprofiler_set_api_table` under its name (`rccl`, `rocdecode`, `rocjpeg`), and the tool
//!   notes the table; its entries are not wrapped, because no layout of those tables (their
//!   function order) is known to this project, and wrapping unknown slots would risk calling
//!   data as code. The report says so instead of staying silent.

use rocprof_runner::plan::ForeignDomain;
use trace_records::env::parse_bool;

/// The options (rocprofv3's names).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct DomainOptions {
    /// RCCL API calls (librccl must register its table).
    #[arg(long = "rccl-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub rccl_trace: Option<bool>,
    /// rocDecode API calls.
    #[arg(long = "rocdecode-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub rocdecode_trace: Option<bool>,
    /// rocJPEG API calls.
    #[arg(long = "rocjpeg-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub rocjpeg_trace: Option<bool>,
    /// Kokkos regions through the Kokkos tools interface (implies --marker-trace and
    /// --kernel-rename).
    #[arg(long = "kokkos-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kokkos_trace: Option<bool>,
    /// OpenMP tools (OMPT) events, optionally only these categories (thread parallel task
    /// sync mutex target device error; `all` or none = every one).
    #[arg(long = "ompt-trace", num_args = 0.., value_name = "CATEGORY",
          help_heading = "Other domains")]
    pub ompt_trace: Option<Vec<String>>,
    /// rocSHMEM API calls.
    #[arg(long = "rocshmem-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub rocshmem_trace: Option<bool>,
    /// hipFile API calls.
    #[arg(long = "hipfile-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub hipfile_trace: Option<bool>,
    /// HIP graph launches as their own records (JSON and rocpd).
    #[arg(long = "hip-graph-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub hip_graph_trace: Option<bool>,
    /// HIP event records as their own records (JSON and rocpd).
    #[arg(long = "hip-event-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub hip_event_trace: Option<bool>,
    /// Every KFD event domain below.
    #[arg(long = "kfd-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kfd_trace: Option<bool>,
    /// KFD page-migration events.
    #[arg(long = "kfd-page-migration-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kfd_page_migration_trace: Option<bool>,
    /// KFD page-mapping events.
    #[arg(long = "kfd-page-mapping-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kfd_page_mapping_trace: Option<bool>,
    /// KFD queue events.
    #[arg(long = "kfd-queue-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kfd_queue_trace: Option<bool>,
    /// KFD dropped-event notices.
    #[arg(long = "kfd-dropped-events-trace", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Other domains")]
    pub kfd_dropped_events_trace: Option<bool>,
}

/// OMPT's event categories (rocprofv3's names).
pub const OMPT_CATEGORIES: [&str; 8] = [
    "thread", "parallel", "task", "sync", "mutex", "target", "device", "error",
];

impl DomainOptions {
    /// The domains asked for by name (not through `-s`/`-r`), in option order.
    pub fn requested(&self) -> Vec<ForeignDomain> {
        let on = |v: Option<bool>| v == Some(true);
        let kfd = on(self.kfd_trace)
            || on(self.kfd_page_migration_trace)
            || on(self.kfd_page_mapping_trace)
            || on(self.kfd_queue_trace)
            || on(self.kfd_dropped_events_trace);
        [
            (on(self.rccl_trace), ForeignDomain::Rccl),
            (on(self.rocdecode_trace), ForeignDomain::RocDecode),
            (on(self.rocjpeg_trace), ForeignDomain::RocJpeg),
            (on(self.kokkos_trace), ForeignDomain::Kokkos),
            (self.ompt_trace.is_some(), ForeignDomain::Ompt),
            (on(self.rocshmem_trace), ForeignDomain::RocShmem),
            (on(self.hipfile_trace), ForeignDomain::HipFile),
            (on(self.hip_graph_trace), ForeignDomain::HipGraph),
            (on(self.hip_event_trace), ForeignDomain::HipEvent),
            (kfd, ForeignDomain::Kfd),
        ]
        .into_iter()
        .filter_map(|(asked, d)| asked.then_some(d))
        .collect()
    }

    /// What is wrong with the options, before anything runs.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(cats) = &self.ompt_trace {
            for c in cats.iter().flat_map(|c| c.split([',', ' '])) {
                let c = c.trim();
                if c.is_empty() || c.eq_ignore_ascii_case("all") {
                    continue;
                }
                if !OMPT_CATEGORIES.contains(&c.to_ascii_lowercase().as_str()) {
                    return Err(format!(
                        "--ompt-trace: unknown category '{c}' (use any of {}, or all)",
                        OMPT_CATEGORIES.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// rocprofv3's variables for the domains on (by name, or through `-s`/`-r` when
    /// `aggregate`), so a tool reading them sees what rocprofv3's would.
    pub fn env(&self, aggregate: bool) -> Vec<(&'static str, String)> {
        let on = |v: Option<bool>| v.unwrap_or(aggregate);
        let mut v = Vec::new();
        for (name, value) in [
            ("ROCPROF_RCCL_API_TRACE", on(self.rccl_trace)),
            ("ROCPROF_ROCDECODE_API_TRACE", on(self.rocdecode_trace)),
            ("ROCPROF_ROCJPEG_API_TRACE", on(self.rocjpeg_trace)),
            ("ROCPROF_ROCSHMEM_API_TRACE", on(self.rocshmem_trace)),
            ("ROCPROF_HIPFILE_API_TRACE", on(self.hipfile_trace)),
            (
                "ROCPROF_HIP_GRAPH_TRACE",
                self.hip_graph_trace == Some(true),
            ),
            (
                "ROCPROF_HIP_EVENT_TRACE",
                self.hip_event_trace == Some(true),
            ),
        ] {
            if value {
                v.push((name, "1".to_owned()));
            }
        }
        if let Some(cats) = &self.ompt_trace {
            v.push(("ROCPROF_OMPT_TRACE", "1".to_owned()));
            let list: Vec<String> = cats
                .iter()
                .flat_map(|c| c.split([',', ' ']))
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty() && c != "all")
                .collect();
            if !list.is_empty() {
                v.push(("ROCPROF_OMPT_TRACE_OPERATIONS", list.join(",")));
            }
        }
        v
    }

    /// Whether `--kokkos-trace` asks for markers and kernel renaming (as rocprofv3's does).
    pub fn kokkos(&self) -> bool {
        self.kokkos_trace == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct P {
        #[command(flatten)]
        o: DomainOptions,
    }

    fn parse(args: &[&str]) -> Result<DomainOptions, clap::Error> {
        P::try_parse_from(std::iter::once("rocprof").chain(args.iter().copied())).map(|p| p.o)
    }

    #[test]
    fn named_domains_are_requested_and_aggregates_only_set_variables() {
        let o = parse(&["--rccl-trace", "--kfd-queue-trace", "--ompt-trace"]).unwrap();
        assert_eq!(
            o.requested(),
            vec![ForeignDomain::Rccl, ForeignDomain::Ompt, ForeignDomain::Kfd]
        );
        let none = parse(&[]).unwrap();
        assert!(none.requested().is_empty());
        let env = none.env(true);
        assert!(env.contains(&("ROCPROF_RCCL_API_TRACE", "1".into())));
        assert!(!env.iter().any(|(k, _)| *k == "ROCPROF_HIP_GRAPH_TRACE"));
        assert!(none.env(false).is_empty());
        let off = parse(&["--rccl-trace=false"]).unwrap();
        assert!(
            !off.env(true)
                .iter()
                .any(|(k, _)| *k == "ROCPROF_RCCL_API_TRACE")
        );
    }

    #[test]
    fn ompt_categories_are_checked_and_listed() {
        let o = parse(&["--ompt-trace", "target", "device,sync"]).unwrap();
        o.validate().unwrap();
        assert!(
            o.env(false)
                .contains(&("ROCPROF_OMPT_TRACE_OPERATIONS", "target,device,sync".into()))
        );
        let all = parse(&["--ompt-trace", "all"]).unwrap();
        assert!(
            !all.env(false)
                .iter()
                .any(|(k, _)| *k == "ROCPROF_OMPT_TRACE_OPERATIONS")
        );
        let bad = parse(&["--ompt-trace", "threads"]).unwrap();
        assert!(
            bad.validate()
                .unwrap_err()
                .contains("unknown category 'threads'")
        );
    }
}
