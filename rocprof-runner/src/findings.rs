//! What `rocprof` says after the records are read: the tool's own warnings from inside the
//! application (which never print there), what discovery left out, strings cut to fit the
//! log, and one line per cause of lost records.

use std::collections::BTreeMap;
use trace_records::docs::OmissionKind;
use trace_records::log::MAX_CUT_STRING;
use trace_records::loss::LossCounts;
use trace_records::{ProcessTrace, StringId};

/// Lines to print (without the `rocprof: ` prefix) after the output files are written.
pub fn after_run(traces: &[ProcessTrace]) -> Vec<String> {
    let mut out = Vec::new();
    // Identical warnings of several processes are said once, with the processes named.
    let mut warnings: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for t in traces {
        for w in &t.docs.warnings {
            warnings.entry(w.message.clone()).or_default().push(t.pid);
        }
        if let Some(d) = &t.docs.discovery {
            for o in &d.omissions {
                if matches!(
                    o.kind,
                    OmissionKind::NonAmdAdapter | OmissionKind::NoAdapters
                ) {
                    continue;
                }
                let line = format!("agent discovery left out {}: {}", o.subject, o.reason);
                warnings.entry(line).or_default().push(t.pid);
            }
        }
        if let Some(line) = cut_strings(t) {
            warnings.entry(line).or_default().push(t.pid);
        }
    }
    for (message, mut pids) in warnings {
        pids.sort_unstable();
        pids.dedup();
        out.push(format!("{}: {message}", processes(&pids)));
    }
    out.extend(loss_lines(traces));
    out
}

/// Every library mapped more than once, once with the processes it happened in (sorted).
pub fn double_loads(traces: &[ProcessTrace]) -> Vec<(trace_records::docs::DoubleLoad, Vec<u32>)> {
    let mut seen: Vec<(trace_records::docs::DoubleLoad, Vec<u32>)> = Vec::new();
    for t in traces {
        for d in &t.docs.double_loads {
            match seen.iter_mut().find(|(s, _)| s == d) {
                Some((_, pids)) => pids.push(t.pid),
                None => seen.push((d.clone(), vec![t.pid])),
            }
        }
    }
    seen.into_iter()
        .map(|(load, mut pids)| {
            pids.sort_unstable();
            pids.dedup();
            (load, pids)
        })
        .collect()
}

/// What a process's strings that were cut to fit its log were: how many, and the longest.
fn cut_strings(t: &ProcessTrace) -> Option<String> {
    let (&id, &longest) = t
        .cut_strings
        .iter()
        .max_by_key(|&(&id, &len)| (len, std::cmp::Reverse(id)))?;
    let what = string_use(t, id);
    Some(match t.cut_strings.len() {
        1 => format!(
            "{what} of {longest} bytes was longer than one record-log entry holds and was cut to its first {} bytes in every output",
            t.string(id).len()
        ),
        n => format!(
            "{n} strings were longer than one record-log entry holds and were cut to at most {MAX_CUT_STRING} bytes in every output; the longest, {what}, had {longest} bytes"
        ),
    })
}

/// What a string is used as, for messages ("a ROCTx marker message", "a kernel name", …).
fn string_use(t: &ProcessTrace, id: StringId) -> &'static str {
    if t.markers.iter().any(|m| m.message == id) {
        "a ROCTx marker message"
    } else if t.symbols.iter().any(|s| s.name == id) {
        "a kernel name"
    } else if t.dispatches.iter().any(|d| d.region == id) {
        "a ROCTx range name"
    } else if t.operations.values().any(|&o| o == id) {
        "an API operation name"
    } else if t.counters.iter().any(|c| c.name == id) {
        "a counter name"
    } else {
        "a string"
    }
}

/// "process 12" / "processes 12, 13 and 14" / "processes 12, 13 and 5 others".
pub(crate) fn processes(pids: &[u32]) -> String {
    match pids {
        [] => "no process".into(),
        [one] => format!("process {one}"),
        [head @ .., last] if pids.len() <= 4 => {
            let head: Vec<String> = head.iter().map(u32::to_string).collect();
            format!("processes {} and {last}", head.join(", "))
        }
        _ => format!(
            "processes {}, {} and {} others",
            pids[0],
            pids[1],
            pids.len() - 2
        ),
    }
}

/// One line per cause with a count above zero, summed over the processes (each process's share
/// is named when several lost records).
pub fn loss_lines(traces: &[ProcessTrace]) -> Vec<String> {
    let mut total = LossCounts::default();
    for t in traces {
        total.merge(&t.losses);
    }
    let mut lines = Vec::new();
    for (cause, n) in total.nonzero() {
        let mut line = LossCounts::default();
        line.add(cause, n);
        let mut text = line.report_lines().remove(0);
        let shares: Vec<String> = traces
            .iter()
            .filter(|t| t.losses.get(cause) > 0)
            .map(|t| format!("{} in process {}", t.losses.get(cause), t.pid))
            .collect();
        if shares.len() > 1 {
            text.push_str(&format!(" [{}]", shares.join(", ")));
        }
        lines.push(text);
    }
    lines
}

/// Total records lost (all causes, all processes; saturating, as the counts are).
pub fn total_lost(traces: &[ProcessTrace]) -> u64 {
    traces
        .iter()
        .fold(0u64, |n, t| n.saturating_add(t.losses.total()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::docs::{ToolWarning, WarningKind};
    use trace_records::loss::LossCause;

    fn trace(pid: u32, warning: Option<&str>, lost: &[(LossCause, u64)]) -> ProcessTrace {
        let mut t = ProcessTrace {
            pid,
            ..Default::default()
        };
        if let Some(w) = warning {
            t.docs.warnings.push(ToolWarning {
                about: WarningKind::UnpairedAgents,
                message: w.into(),
            });
        }
        for (c, n) in lost {
            t.losses.add(*c, *n);
        }
        t
    }

    #[test]
    fn identical_warnings_are_said_once_with_their_processes() {
        let traces = [
            trace(10, Some("GPU node 2 cannot be profiled"), &[]),
            trace(11, Some("GPU node 2 cannot be profiled"), &[]),
            trace(12, Some("other"), &[]),
        ];
        let lines = after_run(&traces);
        assert_eq!(
            lines,
            vec![
                "processes 10 and 11: GPU node 2 cannot be profiled",
                "process 12: other"
            ]
        );
        let many: Vec<ProcessTrace> = (0..7).map(|p| trace(p, Some("w"), &[])).collect();
        assert_eq!(after_run(&many), vec!["processes 0, 1 and 5 others: w"]);
    }

    #[test]
    fn strings_cut_to_fit_the_log_are_said_with_the_longest() {
        let mut t = trace(5, None, &[]);
        assert!(after_run(std::slice::from_ref(&t)).is_empty());
        t.strings.insert(3, "m".repeat(MAX_CUT_STRING));
        t.cut_strings.insert(3, 1 << 20);
        t.markers.push(trace_records::MarkerRecord {
            correlation_id: 1,
            start: 1,
            end: 1,
            message: 3,
            thread_id: 1,
            kind: 0,
            reserved: [0; 7],
        });
        let lines = after_run(std::slice::from_ref(&t));
        assert_eq!(
            lines,
            vec![format!(
                "process 5: a ROCTx marker message of 1048576 bytes was longer than one record-log entry holds and was cut to its first {MAX_CUT_STRING} bytes in every output"
            )]
        );
        t.cut_strings.insert(4, 75_000);
        t.cut_strings.insert(6, 70 * 1024);
        let lines = after_run(&[t]);
        assert!(
            lines[0].starts_with("process 5: 3 strings were longer")
                && lines[0].ends_with("the longest, a ROCTx marker message, had 1048576 bytes"),
            "{lines:?}"
        );
    }

    #[test]
    fn losses_are_summed_per_cause_and_shared_out() {
        let traces = [
            trace(
                1,
                None,
                &[(LossCause::NoSpace, 5), (LossCause::DispatchTime, 1)],
            ),
            trace(2, None, &[(LossCause::NoSpace, 2)]),
        ];
        let lines = loss_lines(&traces);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("lost 7 records (no-space)"),
            "{lines:?}"
        );
        assert!(
            lines[0].ends_with("[5 in process 1, 2 in process 2]"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("lost 1 record (dispatch-time)"),
            "{lines:?}"
        );
        assert!(!lines[1].contains('['), "one process: no breakdown");
        assert_eq!(total_lost(&traces), 8);
        let huge = [
            trace(4, None, &[(LossCause::NoSpace, u64::MAX)]),
            trace(5, None, &[(LossCause::NoSpace, 1)]),
        ];
        assert_eq!(total_lost(&huge), u64::MAX, "saturates, never overflows");
        assert!(loss_lines(&[trace(3, None, &[])]).is_empty());
    }
}
