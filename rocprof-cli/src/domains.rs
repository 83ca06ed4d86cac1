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

use crate::run::parse_bool;
use serde::{Deserialize, Serialize};
use trace_records::ProcessTrace;
use trace_records::docs::{DomainLibrary, Runtime};

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

/// A domain this stack cannot trace by itself, asked for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForeignDomain {
    /// `--rccl-trace`.
    Rccl,
    /// `--rocdecode-trace`.
    RocDecode,
    /// `--rocjpeg-trace`.
    RocJpeg,
    /// `--kokkos-trace`.
    Kokkos,
    /// `--ompt-trace`.
    Ompt,
    /// `--rocshmem-trace`.
    RocShmem,
    /// `--hipfile-trace`.
    HipFile,
    /// `--hip-graph-trace`.
    HipGraph,
    /// `--hip-event-trace`.
    HipEvent,
    /// `--kfd-*`.
    Kfd,
}

impl ForeignDomain {
    /// The option that asks for it.
    pub fn option(self) -> &'static str {
        match self {
            Self::Rccl => "--rccl-trace",
            Self::RocDecode => "--rocdecode-trace",
            Self::RocJpeg => "--rocjpeg-trace",
            Self::Kokkos => "--kokkos-trace",
            Self::Ompt => "--ompt-trace",
            Self::RocShmem => "--rocshmem-trace",
            Self::HipFile => "--hipfile-trace",
            Self::HipGraph => "--hip-graph-trace",
            Self::HipEvent => "--hip-event-trace",
            Self::Kfd => "--kfd-trace",
        }
    }

    /// The library whose loading the domain needs.
    pub fn library(self) -> Option<DomainLibrary> {
        match self {
            Self::Rccl => Some(DomainLibrary::Rccl),
            Self::RocDecode => Some(DomainLibrary::RocDecode),
            Self::RocJpeg => Some(DomainLibrary::RocJpeg),
            Self::Kokkos => Some(DomainLibrary::Kokkos),
            Self::Ompt => Some(DomainLibrary::OpenMp),
            Self::RocShmem => Some(DomainLibrary::RocShmem),
            Self::HipFile => Some(DomainLibrary::HipFile),
            Self::HipGraph | Self::HipEvent | Self::Kfd => None,
        }
    }

    /// The name the library registers its API table under with rocprofiler-register, if it
    /// registers one.
    pub fn register_name(self) -> Option<&'static str> {
        match self {
            Self::Rccl => Some("rccl"),
            Self::RocDecode => Some("rocdecode"),
            Self::RocJpeg => Some("rocjpeg"),
            _ => None,
        }
    }

    /// What is said before the run, when the domain can never have records here.
    pub fn before_run(self) -> Option<&'static str> {
        match self {
            Self::Kfd => Some(
                "--kfd-*: KFD page-migration, page-mapping and queue events come from the amdgpu driver's /dev/kfd event interface, which WSL2 does not have (the GPU is reached through /dev/dxg); nothing of these domains will be recorded. They need native Linux with the amdgpu driver",
            ),
            Self::HipGraph | Self::HipEvent => Some(
                "--hip-graph-trace/--hip-event-trace: graph launches and event records as their own records come from ROCprofiler-SDK's HIP stream instrumentation, which rocprof does not have; the hipGraph*/hipEvent* calls themselves are in the HIP API trace (--hip-trace)",
            ),
            _ => None,
        }
    }
}

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

/// What the run showed of each domain asked for by name: lines for stderr (without the
/// `rocprof: ` prefix).
pub fn after_run(asked: &[ForeignDomain], traces: &[ProcessTrace]) -> Vec<String> {
    let mut out = Vec::new();
    if traces.is_empty() {
        return out;
    }
    for &d in asked {
        let Some(lib) = d.library() else { continue };
        let registered = d.register_name().is_some_and(|name| {
            traces.iter().any(|t| {
                t.docs
                    .tables
                    .iter()
                    .any(|tb| tb.runtime == Runtime::Other(name.to_owned()))
            })
        });
        let loaded = traces.iter().any(|t| {
            t.docs
                .exit
                .as_ref()
                .is_some_and(|e| e.domain_libraries_loaded.contains(&lib))
        });
        let all_exited = traces.iter().all(|t| t.docs.exit.is_some());
        let line = if registered {
            format!(
                "{}: {} registered its API table, but rocprof knows no layout of that table, so its calls were not traced (their GPU work is in the kernel and copy traces as usual)",
                d.option(),
                lib.file_name()
            )
        } else if loaded {
            format!(
                "{}: the application loaded {}, but it registered no API table with rocprofiler-register, so there was nothing to trace",
                d.option(),
                lib.file_name()
            )
        } else if all_exited {
            format!(
                "{}: the application never loaded {}, so nothing of that domain was recorded",
                d.option(),
                lib.file_name()
            )
        } else {
            format!(
                "{}: no API table of {} reached the tool (the application did not exit normally, so whether it loaded the library is unknown)",
                d.option(),
                lib.file_name()
            )
        };
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use trace_records::docs::{ExitFacts, TableReceived};

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

    fn exited(libs: Vec<DomainLibrary>) -> ProcessTrace {
        let mut t = ProcessTrace::default();
        t.docs.exit = Some(ExitFacts {
            domain_libraries_loaded: libs,
            ..Default::default()
        });
        t
    }

    #[test]
    fn the_report_tells_never_loaded_from_loaded_and_registered() {
        let asked = [ForeignDomain::Rccl, ForeignDomain::Kfd];
        let never = after_run(&asked, &[exited(Vec::new())]);
        assert_eq!(never.len(), 1, "KFD is said before the run only: {never:?}");
        assert!(never[0].contains("never loaded librccl.so"), "{never:?}");

        let loaded = after_run(&asked, &[exited(vec![DomainLibrary::Rccl])]);
        assert!(loaded[0].contains("registered no API table"), "{loaded:?}");

        let mut t = exited(vec![DomainLibrary::Rccl]);
        t.docs.tables.push(TableReceived {
            runtime: Runtime::Other("rccl".into()),
            instance: 0,
            wrapped: 0,
        });
        let reg = after_run(&asked, &[t]);
        assert!(reg[0].contains("registered its API table"), "{reg:?}");

        let crashed = after_run(&asked, &[ProcessTrace::default()]);
        assert!(crashed[0].contains("unknown"), "{crashed:?}");
        assert!(after_run(&asked, &[]).is_empty());
    }
}
