//! No silent failure: when a run recorded less than was asked, say why in plain words.

use crate::plan::Selection;
use crate::plan::selection::recorded;
use crate::process::Status;
use std::path::{Path, PathBuf};
use trace_records::ProcessTrace;
use trace_records::docs::{PlatformKind, Runtime, RuntimeLibrary};

/// Names of the API tables a process received.
pub fn tables_received(t: &ProcessTrace) -> Vec<Runtime> {
    t.docs.tables.iter().map(|t| t.runtime.clone()).collect()
}

/// Most bytes of `untraced.pids` read: one 8-byte entry for every process id there can be
/// (the kernel's `PID_MAX_LIMIT`, 2^22). A file this long already names every possible process
/// (pids are reused); anything past it is not read.
pub const UNTRACED_READ_LIMIT: u64 = 8 << 22;

/// Largest process id (the kernel's `PID_MAX_LIMIT` on 64-bit systems).
const PID_LIMIT: u32 = 1 << 22;

/// The processes noted in a record directory's `untraced.pids`: they ran with the profiler
/// loaded but never loaded a ROCm runtime (so they wrote no log).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Untraced {
    /// Their process ids, sorted, each once.
    pub pids: Vec<u32>,
    /// The file's size when it was longer than [`UNTRACED_READ_LIMIT`] (only that much was
    /// read).
    pub capped: Option<u64>,
}

impl std::ops::Deref for Untraced {
    type Target = [u32];

    fn deref(&self) -> &[u32] {
        &self.pids
    }
}

impl From<Vec<u32>> for Untraced {
    fn from(mut pids: Vec<u32>) -> Self {
        pids.sort_unstable();
        pids.dedup();
        Self { pids, capped: None }
    }
}

/// The processes noted in `<dir>/untraced.pids` (see [`Untraced`]). The file is streamed in
/// small pieces, at most [`UNTRACED_READ_LIMIT`] bytes of it, and the pids are gathered in a
/// bit per possible pid: memory stays bounded (under 1 MiB besides the pids themselves) however
/// large the file is. Entries that cannot be pids (0, or above the kernel's limit) are ignored.
/// A missing or unreadable file is no process.
pub fn untraced_pids(dir: &Path) -> Untraced {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.join(trace_records::env::UNTRACED_PIDS);
    let mut out = Untraced::default();
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    let Ok(f) = opened else { return out };
    let Ok(meta) = f.metadata() else { return out };
    if !meta.is_file() {
        return out;
    }
    if meta.len() > UNTRACED_READ_LIMIT {
        out.capped = Some(meta.len());
    }
    let mut seen = vec![0u64; (PID_LIMIT / 64 + 1) as usize];
    let mut source = f.take(UNTRACED_READ_LIMIT);
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0;
    loop {
        let n = match source.read(&mut buf[have..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        have += n;
        let whole = have - have % 8;
        for e in buf[..whole].chunks_exact(8) {
            let pid = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            if pid == 0 || pid > PID_LIMIT {
                continue;
            }
            let (word, bit) = ((pid / 64) as usize, pid % 64);
            if seen[word] & (1 << bit) == 0 {
                seen[word] |= 1 << bit;
                out.pids.push(pid);
            }
        }
        buf.copy_within(whole..have, 0);
        have -= whole;
    }
    out.pids.sort_unstable();
    out
}

/// The warning for an `untraced.pids` longer than [`UNTRACED_READ_LIMIT`].
fn untraced_capped(size: u64) -> String {
    format!(
        "the record directory's {} holds {size} bytes, more than the {UNTRACED_READ_LIMIT} bytes that list every possible process id; only the first {UNTRACED_READ_LIMIT} bytes were read (the file was not written by rocprof alone)",
        trace_records::env::UNTRACED_PIDS
    )
}

/// The processes whose logs may lack documents or records: chunks damaged or missing, entries
/// that could not be decoded, definitions lost, or records that found no room. What such a
/// log does not hold says nothing about the application or the runtime.
fn incomplete(traces: &[ProcessTrace]) -> Vec<u32> {
    use trace_records::loss::LossCause;
    let mut pids: Vec<u32> = traces
        .iter()
        .filter(|t| {
            t.damage.iter().any(|d| d.offset > 0)
                || [
                    LossCause::Damaged,
                    LossCause::Malformed,
                    LossCause::Definitions,
                    LossCause::NoSpace,
                ]
                .iter()
                .any(|c| t.losses.get(*c) > 0)
        })
        .map(|t| t.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// "the record log of process 12" / "the record logs of processes 12 and 13".
fn logs_of(pids: &[u32]) -> String {
    let s = if pids.len() == 1 { "" } else { "s" };
    format!("the record log{s} of {}", crate::findings::processes(pids))
}

/// A missing domain whose reason would rest on documents that were lost.
fn why_unknown(what: &str, incomplete: &[u32]) -> String {
    format!(
        "{what}; documents of {} were damaged or lost (see above), so why nothing was recorded cannot be said",
        logs_of(incomplete)
    )
}

/// Explanations for everything missing from the run (empty when all is well). `untraced` are
/// the processes that ran with the profiler but without any ROCm runtime.
pub fn explain(
    sel: &Selection,
    status: &Status,
    traces: &[ProcessTrace],
    logs: &[PathBuf],
    untraced: &Untraced,
) -> Vec<String> {
    explain_with(sel, status, traces, logs, untraced, |k| {
        std::env::var(k).ok()
    })
}

/// [`explain`] with an injectable environment.
pub fn explain_with(
    sel: &Selection,
    status: &Status,
    traces: &[ProcessTrace],
    logs: &[PathBuf],
    untraced: &Untraced,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(size) = untraced.capped {
        out.push(untraced_capped(size));
    }
    if let Some(sig) = status.signal {
        let n: usize = traces.iter().map(ProcessTrace::record_count).sum();
        out.push(killed_text(&crate::process::signal_name(sig), n));
    }
    if logs.is_empty() && !untraced.is_empty() {
        let n = untraced.len();
        out.push(if n == 1 {
            "nothing was recorded: the profiler ran in the application's process, but it loaded no ROCm runtime (libhsa-runtime64 or libamdhip64), so it did not use an AMD GPU through ROCm".to_owned()
        } else {
            format!("nothing was recorded: the profiler ran in each of the application's {n} processes, but none of them loaded a ROCm runtime (libhsa-runtime64 or libamdhip64), so none used an AMD GPU through ROCm")
        });
        return out;
    }
    if logs.is_empty() {
        out.push("no record log was written: the profiler library never ran inside the application (a statically linked or setuid program ignores LD_PRELOAD, and a wrapper script may drop it)".into());
        return out;
    }
    // A log that could not be read says nothing about the runtime: its process's records are
    // missing for that reason alone (said with the reason when it was read), so no runtime or
    // registration problem is inferred from the gap.
    let unreadable = logs.len().saturating_sub(traces.len());
    if unreadable > 0 {
        out.push(format!(
            "{unreadable} of {} record {} could not be read (the reason is above); what {} recorded is missing because of that, not because of the runtime",
            logs.len(),
            if logs.len() == 1 { "log" } else { "logs" },
            if unreadable == 1 { "its process" } else { "those processes" }
        ));
        if traces.is_empty() {
            return out;
        }
    }
    if *sel == Selection::default() || unreadable > 0 {
        return out;
    }
    let got = recorded(traces);
    // Logs that may lack documents or records: no explanation below rests on what they lack.
    let incomplete = incomplete(traces);
    let wants_hsa = sel.hsa_core
        || sel.hsa_amd
        || sel.hsa_image
        || sel.hsa_finalizer
        || sel.kernels
        || sel.copies
        || sel.memory_allocations
        || sel.scratch_memory;
    // Every table any process received.
    let tables: Vec<Runtime> = traces.iter().flat_map(tables_received).collect();
    let received = |r: Runtime| tables.contains(&r);
    // Records of any HSA-traced kind prove the table arrived, whatever became of its document.
    let hsa_received = received(Runtime::Hsa)
        || got.hsa_core
        || got.hsa_amd
        || got.hsa_image
        || got.hsa_finalizer
        || got.kernels
        || got.copies
        || got.memory_allocations
        || got.scratch_memory;
    // Known only when the process exited normally (its exit document lists the runtimes mapped).
    let exits: Vec<_> = traces.iter().filter_map(|t| t.docs.exit.as_ref()).collect();
    let hsa_never_loaded = !exits.is_empty()
        && exits
            .iter()
            .all(|e| !e.runtimes_loaded.contains(&RuntimeLibrary::Hsa));
    if wants_hsa && !hsa_received {
        if !incomplete.is_empty() {
            out.push(why_unknown(
                "nothing was recorded from the HSA runtime",
                &incomplete,
            ));
            return out;
        }
        if hsa_never_loaded {
            out.push("nothing was recorded from the GPU runtimes: the application never loaded the HSA runtime (libhsa-runtime64.so.1), so it does not use an AMD GPU through ROCm".into());
            return out;
        }
        out.push(hsa_not_received(traces, status, &env));
    }
    let wants_hip = sel.hip_runtime || sel.hip_compiler;
    let hip_received = tables.iter().any(Runtime::is_hip) || got.hip_runtime || got.hip_compiler;
    if wants_hip && !hip_received && hsa_received {
        out.push(if incomplete.is_empty() {
            "HIP API tracing was requested but the application never registered a HIP runtime (it does not use HIP, or its libamdhip64 predates tool registration)".into()
        } else {
            why_unknown(
                "HIP API tracing was requested but no HIP runtime's table was recorded",
                &incomplete,
            )
        });
    }
    if sel.markers && !got.markers && !received(Runtime::Roctx) && !incomplete.is_empty() {
        out.push(why_unknown(
            "--marker-trace was requested but no ROCTx table was recorded",
            &incomplete,
        ));
    } else if sel.markers && !got.markers && !received(Runtime::Roctx) {
        // Whether ROCTx was mapped is known only from a normal exit.
        let roctx_loaded = exits
            .iter()
            .any(|e| e.runtimes_loaded.contains(&RuntimeLibrary::Roctx));
        out.push(if roctx_loaded {
            "--marker-trace was requested: the application loaded ROCTx, but no ROCTx table reached the profiler (ROCTx registers its tables through rocprofiler-register before their first use, so the application most likely made no ROCTx call before it ended)".into()
        } else if exits.is_empty() {
            "--marker-trace was requested but no ROCTx table reached the profiler; the application did not exit normally, so whether it loaded ROCTx (librocprofiler-sdk-roctx) is unknown".into()
        } else {
            "--marker-trace was requested but the application never loaded ROCTx (librocprofiler-sdk-roctx); link the application against it, see Using ROCTx".into()
        });
    }
    // The tool said why nothing was collected (the first -P window never opened).
    let period_missed = traces.iter().any(|t| {
        t.docs
            .warnings
            .iter()
            .any(|w| w.about == trace_records::docs::WarningKind::CollectionPeriod)
    });
    for (asked, have, what) in [
        (
            sel.kernels,
            got.kernels,
            "--kernel-trace: no kernel dispatch was recorded",
        ),
        (
            sel.copies,
            got.copies,
            "--memory-copy-trace: no asynchronous memory copy was recorded",
        ),
        (
            sel.memory_allocations,
            got.memory_allocations,
            "--memory-allocation-trace: no memory allocation or free through the HSA runtime was recorded",
        ),
        (
            // Most kernels need no scratch: with a bundle (-s, -r) its absence is normal and
            // not worth a line; asked for on its own, it is explained.
            sel.scratch_memory
                && !(sel.kernels && sel.copies && sel.markers && sel.memory_allocations),
            got.scratch_memory,
            "--scratch-memory-trace: no scratch memory event was recorded (the runtime reports one when a kernel needs more private segment memory than its queue holds)",
        ),
        (
            sel.hip_runtime || sel.hip_compiler,
            got.hip_runtime || got.hip_compiler,
            "--hip-trace: no HIP API call was recorded",
        ),
        (
            sel.hsa_core || sel.hsa_amd,
            got.hsa_core || got.hsa_amd,
            "--hsa-trace: no HSA API call was recorded",
        ),
        (
            sel.markers,
            got.markers,
            "--marker-trace: no ROCTx mark or range was recorded",
        ),
    ] {
        if asked && !have && (hsa_received || !wants_hsa) && !period_missed {
            out.push(if incomplete.is_empty() {
                format!(
                    "{what} (the application made none, or they happened outside the traced runtime)"
                )
            } else {
                format!(
                    "{what}; parts of {} were damaged or lost (see above), so whether the application made any cannot be said",
                    logs_of(&incomplete)
                )
            });
        }
    }
    out
}

fn hsa_not_received(
    traces: &[ProcessTrace],
    status: &Status,
    env: &impl Fn(&str) -> Option<String>,
) -> String {
    // An application that failed may have failed in hsa_init; one that succeeded got past it.
    let app_failed = status.signal.is_some() || status.code.is_some_and(|c| c != 0);
    let mut failed = Vec::new();
    let mut passed = Vec::new();
    match env("HSA_TOOLS_DISABLE_REGISTER").as_deref() {
        Some("1") => failed.push("HSA_TOOLS_DISABLE_REGISTER=1 is set in the environment: the HSA runtime skips tool registration. Unset it".to_owned()),
        _ => passed.push("HSA_TOOLS_DISABLE_REGISTER is not 1"),
    }
    let discovery: Vec<_> = traces
        .iter()
        .filter_map(|t| t.docs.discovery.as_ref())
        .collect();
    let on_wsl = discovery.iter().any(|d| d.platform == PlatformKind::Wsl);
    match env("HSA_ENABLE_DXG_DETECTION").as_deref() {
        Some("0") => failed.push("HSA_ENABLE_DXG_DETECTION=0 disables the DXG path: hsa_init fails and no GPU is visible. Never set it to 0 on WSL2".to_owned()),
        Some("1") => passed.push("HSA_ENABLE_DXG_DETECTION=1"),
        _ if on_wsl && app_failed => failed.push("HSA_ENABLE_DXG_DETECTION is unset: stock ROCm 7.2.x runtimes then fail hsa_init on WSL2 (\"no supported GPU devices\"); export HSA_ENABLE_DXG_DETECTION=1 from ~/.profile".to_owned()),
        _ if on_wsl => passed.push("HSA_ENABLE_DXG_DETECTION unset (fine for current runtimes; the application ran)"),
        _ => {}
    }
    let gpus = traces
        .iter()
        .any(|t| t.docs.agents().iter().any(|a| a.is_gpu()));
    let no_gpu = discovery
        .iter()
        .any(|d| d.omissions.iter().any(|o| o.kind.loses_every_gpu()));
    if no_gpu || (!gpus && !discovery.is_empty()) {
        failed
            .push("agent discovery found no GPU agent (run `rocprof avail` to see why)".to_owned());
    } else if gpus {
        passed.push("GPU agents were discovered");
    }
    if failed.is_empty() {
        failed.push("the HSA runtime ran but never offered its API table to rocprofiler-register. A runtime that suppresses tool registration on the DXG path behaves exactly like this: the application runs and nothing is recorded. Install the ROCm runtime matched with this librocdxg (see \"Matching the runtime and the DXG thunk\")".to_owned());
    }
    let mut s = String::from(
        "nothing was recorded from the HSA runtime: the profiler never received the \"hsa\" API table.\n  failed checks:",
    );
    for f in &failed {
        s.push_str("\n    - ");
        s.push_str(f);
    }
    if !passed.is_empty() {
        s.push_str(&format!("\n  passed checks: {}", passed.join("; ")));
    }
    s
}

/// What a run killed by `signal` kept: its `n` records.
fn killed_text(signal: &str, n: usize) -> String {
    let kept = match n {
        0 => "no record was written before the crash".to_owned(),
        1 => "the 1 record written before the crash was recovered".to_owned(),
        n => format!("the {n} records written before the crash were recovered"),
    };
    format!("the application was killed by {signal}; {kept}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_records_a_crash_left_are_counted_in_words() {
        assert_eq!(
            killed_text("SIGSEGV", 1),
            "the application was killed by SIGSEGV; the 1 record written before the crash was \
             recovered"
        );
        assert!(
            killed_text("SIGSEGV", 2)
                .ends_with("; the 2 records written before the crash were recovered")
        );
        assert!(killed_text("SIGKILL", 0).ends_with("; no record was written before the crash"));
    }

    fn trace(json: &[&str]) -> ProcessTrace {
        let mut t = ProcessTrace::default();
        for j in json {
            let doc = trace_records::docs::Document::from_json(j)
                .unwrap_or_else(|| panic!("not a document: {j}"));
            t.docs.add(doc);
        }
        t
    }

    const OK: Status = Status {
        code: Some(0),
        signal: None,
    };
    const WSL: &str = r#"{"kind":"discovery","platform":"wsl","omissions":[]}"#;
    const AGENTS: &str = r#"{"kind":"agents","agents":[{"kind":"gpu","logical_node_id":0,"node_id":1,"logical_node_type_id":0,"name":"gfx1150","product_name":"","vendor_name":"AMD","model_name":"","cpu_cores_count":0,"gpu":null}]}"#;

    fn sys() -> Selection {
        Selection {
            hsa_core: true,
            kernels: true,
            hip_runtime: true,
            ..Default::default()
        }
    }

    fn logs() -> Vec<PathBuf> {
        vec![PathBuf::from("1.rplog")]
    }

    fn none() -> Untraced {
        Untraced::default()
    }

    #[test]
    fn empty_memory_traces_are_explained_and_scratch_only_when_asked_alone() {
        let hsa = r#"{"kind":"table","runtime":"hsa","instance":0,"wrapped":1}"#;
        let t = trace(&[WSL, AGENTS, hsa]);
        let alone = Selection {
            memory_allocations: true,
            scratch_memory: true,
            ..Default::default()
        };
        let out = explain_with(
            &alone,
            &OK,
            std::slice::from_ref(&t),
            &logs(),
            &none(),
            |_| None,
        );
        assert!(
            out.iter()
                .any(|l| l.starts_with("--memory-allocation-trace: no memory")),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|l| l.starts_with("--scratch-memory-trace: no scratch")),
            "{out:?}"
        );
        let out = explain_with(&sys(), &OK, &[t], &logs(), &none(), |_| None);
        assert!(
            !out.iter().any(|l| l.contains("--scratch-memory-trace")),
            "a bundle's missing scratch is normal: {out:?}"
        );
    }

    #[test]
    fn a_missing_roctx_table_is_told_apart_by_what_was_mapped() {
        let hsa = r#"{"kind":"table","runtime":"hsa","instance":0,"wrapped":1}"#;
        let markers = Selection {
            markers: true,
            ..Default::default()
        };
        let said = |docs: &[&str]| {
            let out = explain_with(&markers, &OK, &[trace(docs)], &logs(), &none(), |_| None);
            out.into_iter()
                .find(|l| l.starts_with("--marker-trace was requested"))
                .unwrap_or_else(|| panic!("no ROCTx line for {docs:?}"))
        };
        let loaded = r#"{"kind":"exit","runtimes_loaded":["hsa","roctx"]}"#;
        let not_loaded = r#"{"kind":"exit","runtimes_loaded":["hsa"]}"#;
        assert!(said(&[WSL, AGENTS, hsa, loaded]).contains("the application loaded ROCTx"));
        assert!(said(&[WSL, AGENTS, hsa, not_loaded]).contains("never loaded ROCTx"));
        assert!(said(&[WSL, AGENTS, hsa]).contains("is unknown"));
    }

    #[test]
    fn disable_register_is_named() {
        let env = |k: &str| (k == "HSA_TOOLS_DISABLE_REGISTER").then(|| "1".to_owned());
        let out = explain_with(&sys(), &OK, &[trace(&[WSL])], &logs(), &none(), env);
        assert!(
            out[0].contains("HSA_TOOLS_DISABLE_REGISTER=1 is set"),
            "{out:?}"
        );
    }

    #[test]
    fn a_suppressing_runtime_is_the_remaining_explanation() {
        let env = |k: &str| (k == "HSA_ENABLE_DXG_DETECTION").then(|| "1".to_owned());
        let out = explain_with(&sys(), &OK, &[trace(&[WSL, AGENTS])], &logs(), &none(), env);
        assert!(
            out[0].contains("suppresses tool registration on the DXG path"),
            "{out:?}"
        );
        assert!(out[0].contains("passed checks: HSA_TOOLS_DISABLE_REGISTER is not 1; HSA_ENABLE_DXG_DETECTION=1; GPU agents were discovered"), "{out:?}");
    }

    #[test]
    fn an_unset_dxg_detection_is_blamed_only_when_the_application_failed() {
        let failed = Status {
            code: Some(1),
            signal: None,
        };
        let out = explain_with(
            &sys(),
            &failed,
            &[trace(&[WSL, AGENTS])],
            &logs(),
            &none(),
            |_| None,
        );
        assert!(
            out[0].contains("HSA_ENABLE_DXG_DETECTION is unset"),
            "{out:?}"
        );
        let out = explain_with(
            &sys(),
            &OK,
            &[trace(&[WSL, AGENTS])],
            &logs(),
            &none(),
            |_| None,
        );
        assert!(out[0].contains("suppresses tool registration"), "{out:?}");
    }

    #[test]
    fn dxg_detection_off_and_no_agents_are_named() {
        let env = |k: &str| (k == "HSA_ENABLE_DXG_DETECTION").then(|| "0".to_owned());
        let no_gpu = r#"{"kind":"discovery","platform":"wsl","omissions":[{"subject":"node 1","kind":"no-gpu-nodes","reason":"r"}]}"#;
        let out = explain_with(&sys(), &OK, &[trace(&[no_gpu])], &logs(), &none(), env);
        assert!(
            out[0].contains("HSA_ENABLE_DXG_DETECTION=0") && out[0].contains("no GPU agent"),
            "{out:?}"
        );
    }

    #[test]
    fn crashes_and_missing_logs_are_reported() {
        let crashed = Status {
            code: None,
            signal: Some(libc::SIGSEGV),
        };
        let t = trace(&[
            WSL,
            r#"{"kind":"table","runtime":"hsa","instance":0,"wrapped":1}"#,
        ]);
        let out = explain_with(
            &Selection::default(),
            &crashed,
            &[t],
            &logs(),
            &none(),
            |_| None,
        );
        assert!(out[0].contains("killed by SIGSEGV"), "{out:?}");
        let out = explain_with(&sys(), &OK, &[], &[], &none(), |_| None);
        assert!(out[0].contains("no record log was written"), "{out:?}");
        let out = explain_with(&sys(), &OK, &[], &[], &vec![7, 8].into(), |_| None);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].contains("each of the application's 2 processes, but none of them loaded")
                && out[0].contains("loaded a ROCm runtime"),
            "{out:?}"
        );
    }

    #[test]
    fn an_unreadable_log_is_not_blamed_on_the_runtime() {
        let two = vec![PathBuf::from("1.rplog"), PathBuf::from("2.rplog")];
        let out = explain_with(&sys(), &OK, &[], &two[..1], &none(), |_| None);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].starts_with("1 of 1 record log could not be read"),
            "{out:?}"
        );
        let out = explain_with(&sys(), &OK, &[trace(&[WSL])], &two, &none(), |_| None);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(!out[0].contains("suppresses"), "{out:?}");
    }

    #[test]
    fn an_application_without_hsa_is_told_so() {
        let exit = r#"{"kind":"exit","runtimes_loaded":[]}"#;
        let out = explain_with(
            &sys(),
            &OK,
            &[trace(&[WSL, exit])],
            &logs(),
            &none(),
            |_| None,
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].contains("never loaded the HSA runtime"), "{out:?}");
    }

    fn hsa_calls(n: u64) -> trace_records::Records<trace_records::ApiRecord> {
        let calls: Vec<trace_records::ApiRecord> = (0..n)
            .map(|i| trace_records::ApiRecord {
                correlation_id: i + 1,
                start: i,
                end: i + 1,
                thread_id: 1,
                operation: 1,
                domain: trace_records::ApiDomain::HsaCore as u8,
                reserved: 0,
            })
            .collect();
        calls.into()
    }

    /// Issue 23, case 10: every document of a log garbled (its chunks intact), its HSA calls
    /// read. Nothing may be explained from the documents that are missing.
    #[test]
    fn explanations_never_rest_on_documents_that_were_lost() {
        use trace_records::loss::LossCause;
        let mut t = trace(&[]);
        t.pid = 77;
        t.api = hsa_calls(718);
        t.losses.add(LossCause::Malformed, 8);
        let out = explain_with(
            &sys(),
            &OK,
            std::slice::from_ref(&t),
            &logs(),
            &none(),
            |_| None,
        );
        let all = out.join("\n");
        assert!(
            !all.contains("nothing was recorded from the HSA runtime")
                && !all.contains("Install the ROCm runtime")
                && !all.contains("never registered a HIP runtime")
                && !all.contains("the application made none"),
            "{out:?}"
        );
        assert!(
            out.iter().any(|l| l.starts_with("HIP API tracing was requested but no HIP runtime's table was recorded; documents of the record log of process 77 were damaged or lost (see above), so why nothing was recorded cannot be said")),
            "{out:?}"
        );
        assert!(
            out.iter().any(|l| l.starts_with("--kernel-trace: no kernel dispatch was recorded; parts of the record log of process 77 were damaged or lost")),
            "{out:?}"
        );
        // Without the calls, the HSA table's absence cannot be explained either.
        t.api = hsa_calls(0);
        let out = explain_with(&sys(), &OK, &[t], &logs(), &none(), |_| None);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].starts_with("nothing was recorded from the HSA runtime; documents of the record log of process 77 were damaged or lost"),
            "{out:?}"
        );
    }

    /// Issue 23, case 7: a log that ends early holds no kernels; that is no reason to say the
    /// application launched none.
    #[test]
    fn missing_chunks_are_no_evidence_of_absence() {
        let hsa = r#"{"kind":"table","runtime":"hsa","instance":0,"wrapped":1}"#;
        let hip = r#"{"kind":"table","runtime":"hip","instance":0,"wrapped":1}"#;
        let mut t = trace(&[WSL, AGENTS, hsa, hip]);
        t.pid = 9;
        t.damage.push(trace_records::log::Damage {
            offset: 69632,
            reason: "the log ends early".into(),
            records: 0,
            chunks: 3,
        });
        let out = explain_with(
            &sys(),
            &OK,
            std::slice::from_ref(&t),
            &logs(),
            &none(),
            |_| None,
        );
        assert!(!out.is_empty(), "{out:?}");
        assert!(
            out.iter().all(|l| !l.contains("made none")
                && l.contains("parts of the record log of process 9 were damaged or lost")),
            "{out:?}"
        );
        // A damaged header alone loses no chunk: the usual explanation stands.
        t.damage[0].offset = 0;
        let out = explain_with(&sys(), &OK, &[t], &logs(), &none(), |_| None);
        assert!(out.iter().any(|l| l.contains("made none")), "{out:?}");
    }

    /// Issue 23, case 8: the side file is streamed and capped, its pids gathered in a bitmap.
    #[test]
    fn untraced_pids_are_streamed_deduplicated_and_capped() {
        let dir = std::env::temp_dir().join(format!("rocprof-untraced-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(trace_records::env::UNTRACED_PIDS);
        let mut bytes = Vec::new();
        for pid in [12u32, 7, 12, 0, u32::MAX, 4_194_304, 7] {
            bytes.extend_from_slice(&pid.to_le_bytes());
            bytes.extend_from_slice(&1u32.to_le_bytes());
        }
        bytes.extend_from_slice(&[9, 9, 9]); // a torn last entry
        std::fs::write(&path, &bytes).unwrap();
        let u = untraced_pids(&dir);
        assert_eq!(
            (u.pids.as_slice(), u.capped),
            (&[7, 12, 4_194_304][..], None)
        );
        // 1 GiB, sparse: only the first UNTRACED_READ_LIMIT bytes are read, and it is said.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(1 << 30).unwrap();
        drop(f);
        let u = untraced_pids(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        // The zeros complete the torn entry: pid 0x090909.
        assert_eq!(u.pids, vec![7, 12, 0x09_0909, 4_194_304]);
        assert_eq!(u.capped, Some(1 << 30));
        let out = explain_with(&sys(), &OK, &[], &[], &u, |_| None);
        assert!(
            out[0].starts_with("the record directory's untraced.pids holds 1073741824 bytes"),
            "{out:?}"
        );
        assert!(
            untraced_pids(&dir).is_empty(),
            "a missing file is no process"
        );
    }

    #[test]
    fn an_empty_requested_domain_is_said() {
        let t = trace(&[
            WSL,
            r#"{"kind":"table","runtime":"hsa","instance":0,"wrapped":1}"#,
            r#"{"kind":"table","runtime":"hip","instance":0,"wrapped":1}"#,
        ]);
        let out = explain_with(&sys(), &OK, &[t], &logs(), &none(), |_| None);
        assert!(
            out.iter().any(|o| o.starts_with("--kernel-trace")),
            "{out:?}"
        );
    }
}
