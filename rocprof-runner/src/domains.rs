//! What the run showed of each domain of a library this stack does not ship, asked for by name.

use crate::plan::ForeignDomain;
use trace_records::ProcessTrace;
use trace_records::docs::Runtime;

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
    use trace_records::docs::{DomainLibrary, ExitFacts, TableReceived};

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
