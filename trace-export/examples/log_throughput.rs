//! Record log and exporter throughput: N HSA API records (default 3 M) written through the real
//! writer (a shared file mapping, chunks handed out by the grower thread), read back (checksums
//! verified, the calls sorted into runs spilled beside the log), then written as
//! `hsa_api_trace.csv` and as each one-file format (rocpd, JSON, Perfetto), each stage timed.
//! Prints one line per stage and a final `rows=<N> write_ns=<…> read_ns=<…> csv_ns=<…>
//! rocpd_ns=<…> json_ns=<…> pftrace_ns=<…>` line. The figures issue 25 sets targets for are
//! `log read` (records per second of `ProcessTrace::read`), `json` (records per second of
//! `write_json` over the view) and `rocpd` (rows per second of `write_rocpd`: an event and a
//! region per call).
//!
//! `cargo run --release -p trace-export --example log_throughput [N] [--mixed | --ticks]
//! [--keep DIR] [--only FORMAT] [--reads K]`
//!
//! `--mixed` spreads the calls over three threads whose chunks interleave in the log, HIP calls
//! enclosing HSA calls, zero-length calls (rocpd samples) and repeated correlation ids, so the
//! reader's sort, the merge and the view's id rules all have work; `--ticks` writes the calls
//! timed in TSC ticks against clock epochs, as the tool's traced exit does (log version 5: the
//! reader converts them); `--keep DIR` keeps every
//! output file there (to compare two builds' outputs byte for byte); `--only rocpd|json|pftrace`
//! writes only that one-file format (for a profile of it); `--only read` stops after reading
//! the log and one pass over its calls (for a profile of the reader); `--reads K` reads the log
//! K times and prints each read's time (the figures use the last).

use std::time::Instant;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::output::OutputPrefix;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::agents::AgentLabels;
use trace_records::log::FileHeader;
use trace_records::{ApiDomain, ApiRecord, OperationName, ProcessTrace};

/// The `k`-th call of the `--mixed` shape: on thread `k % 3`, every fourth one a HIP call
/// enclosing the three after it on its thread (HSA calls, one of them zero-length), every 97th
/// repeating the correlation id before it.
fn mixed(k: u64) -> (u32, ApiRecord) {
    let thread = (k % 3) as u32;
    let step = k / 3;
    let (start, end, domain) = match step % 4 {
        0 => (step * 100, step * 100 + 390, ApiDomain::HipRuntime),
        1 => (step * 100 - 80, step * 100 - 60, ApiDomain::HsaCore),
        2 => (step * 100 - 150, step * 100 - 150, ApiDomain::HsaAmdExt),
        _ => (step * 100 - 220, step * 100 - 200, ApiDomain::HsaCore),
    };
    let base = 1_000_000_000 + u64::from(thread) * 7;
    let correlation_id = if k % 97 == 96 { k } else { k + 1 };
    let r = ApiRecord {
        correlation_id,
        start: base + start,
        end: base + end,
        thread_id: 1000 + thread,
        operation: (k % 125) as u16,
        domain: domain as u8,
        reserved: 0,
    };
    (thread, r)
}

fn main() {
    let mut n: u64 = 3_000_000;
    let mut shape_mixed = false;
    let mut ticks = false;
    let mut keep: Option<std::path::PathBuf> = None;
    let mut only: Option<String> = None;
    let mut reads: usize = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mixed" => shape_mixed = true,
            "--ticks" => ticks = true,
            "--keep" => keep = args.next().map(Into::into),
            "--only" => only = args.next(),
            "--reads" => reads = args.next().and_then(|k| k.parse().ok()).unwrap_or(1),
            other => {
                n = other
                    .parse()
                    .expect("N, --mixed, --keep DIR or --only FORMAT")
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("log-throughput-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let t = Instant::now();
    let log = record_log::LogFile::create(
        &dir,
        FileHeader {
            pid: 1,
            ..Default::default()
        },
    )
    .unwrap();
    // Chunks are taken for the thread their calls name, as the tool's are (so the calls are
    // stored compact, log version 5).
    let mut chunk = log.take(if shape_mixed { 1000 } else { 1234 }).unwrap();
    let domains: &[ApiDomain] = if shape_mixed {
        &[
            ApiDomain::HsaCore,
            ApiDomain::HsaAmdExt,
            ApiDomain::HipRuntime,
        ]
    } else {
        &[ApiDomain::HsaCore]
    };
    for (d, &domain) in domains.iter().enumerate() {
        for op in 0..125u16 {
            let id = (d as u32) * 1000 + u32::from(op) + 1;
            let name = match domain {
                ApiDomain::HsaCore => format!("hsa_operation_{op}"),
                other => format!("{other:?}_operation_{op}"),
            };
            assert!(chunk.push_string(id, &name));
            assert!(chunk.push(&OperationName {
                name: id,
                operation: op,
                domain: domain as u8,
                reserved: 0,
            }));
        }
    }
    if shape_mixed {
        let mut chunks = vec![chunk, log.take(1001).unwrap(), log.take(1002).unwrap()];
        for k in 0..n {
            let (t, r) = mixed(k);
            let c = &mut chunks[t as usize];
            if !c.push(&r) {
                let full = std::mem::replace(c, log.take(r.thread_id).unwrap());
                log.seal(full);
                assert!(c.push(&r));
            }
        }
        let last = chunks.pop().unwrap();
        for c in chunks {
            log.seal(c);
        }
        chunk = last;
    }
    // `--ticks`: the calls timed in TSC ticks as the tool's traced exit stores them (2.5 ticks
    // per ns, a new clock epoch every million calls), converted by the reader.
    let mut epoch = trace_records::ClockEpochRecord {
        sequence: 1,
        tsc0: 2_500_000_000,
        ns0: 1_000_000_000,
        scale: (1u64 << 32) * 2 / 5,
    };
    for i in (0..n).filter(|_| ticks && !shape_mixed) {
        if i > 0 && i % 1_000_000 == 0 {
            let now = 2_500_000_000 + i * 125;
            epoch = trace_records::ClockEpochRecord {
                sequence: epoch.sequence + 1,
                tsc0: now,
                ns0: epoch.ns_at(now),
                ..epoch
            };
        }
        let call = trace_records::TickCall {
            correlation_id: i + 1,
            start: 2_500_000_000 + i * 125,
            end: 2_500_000_000 + i * 125 + 50,
            thread_id: 1234,
            kind: u32::from(ApiDomain::HsaCore as u8) << 16 | (i % 125) as u32,
        };
        if !chunk.push_call(&call, &epoch) {
            chunk = log.replace(chunk, 1234).unwrap();
            assert!(chunk.push_call(&call, &epoch));
        }
    }
    for i in (0..n).filter(|_| !ticks && !shape_mixed) {
        let r = ApiRecord {
            correlation_id: i + 1,
            start: 1_000_000_000 + i * 50,
            end: 1_000_000_000 + i * 50 + 20,
            thread_id: 1234,
            operation: (i % 125) as u16,
            domain: ApiDomain::HsaCore as u8,
            reserved: 0,
        };
        if !chunk.push(&r) {
            chunk = log.replace(chunk, 1234).unwrap();
            assert!(chunk.push(&r));
        }
    }
    log.seal(chunk);
    let write_ns = t.elapsed().as_nanos();
    let path = log.path().to_owned();
    log.close();

    // `--reads K`: the log read K times (each read's time printed; the last read is kept).
    let mut read_ns = 0;
    let mut trace = None;
    for k in 0..reads.max(1) {
        drop(trace.take());
        let t = Instant::now();
        trace = Some(ProcessTrace::read(&path).unwrap());
        read_ns = t.elapsed().as_nanos();
        if reads > 1 {
            println!("read {k}: {read_ns} ns");
        }
    }
    let trace = trace.expect("read at least once");
    assert_eq!(trace.api.len() as u64, n);
    assert!(trace.damage.is_empty() && trace.open_chunks == 0);
    if only.as_deref() == Some("read") {
        let t = Instant::now();
        let sum = trace
            .api
            .iter()
            .map(|r| r.start)
            .fold(0u64, u64::wrapping_add);
        let pass_ns = t.elapsed().as_nanos();
        std::hint::black_box(sum);
        let _ = std::fs::remove_dir_all(&dir);
        let rate = |ns: u128| n as f64 / (ns as f64 / 1e9) / 1e6;
        println!("log write : {:>8.2} M records/s", rate(write_ns));
        println!("log read  : {:>8.2} M records/s", rate(read_ns));
        println!(
            "api pass  : {:>8.2} M records/s stored ({} runs spilled)",
            rate(pass_ns),
            trace.api.spilled_runs()
        );
        println!("rows={n} write_ns={write_ns} read_ns={read_ns} pass_ns={pass_ns}");
        return;
    }

    let t = Instant::now();
    let select = CsvSelection {
        hsa: true,
        ..Default::default()
    };
    let files = write_csv(
        &OutputPrefix(dir.join("out")),
        &trace,
        &AgentLabels::default(),
        select,
    )
    .unwrap();
    let csv_ns = t.elapsed().as_nanos();
    let bytes = std::fs::metadata(&files[0]).map(|m| m.len()).unwrap_or(0);

    // The one-file formats, from one view of the process (built once, timed apart).
    let labels = AgentLabels::default();
    let t = Instant::now();
    let view = ProcessView::new(&trace, &labels);
    let view_ns = t.elapsed().as_nanos();
    // One pass over the calls as stored (merged back from the spilled runs), and one resolved.
    let t = Instant::now();
    let stored = trace
        .api
        .iter()
        .map(|r| r.start)
        .fold(0u64, u64::wrapping_add);
    let stored_ns = t.elapsed().as_nanos();
    let t = Instant::now();
    let resolved = view.api().map(|a| a.id).fold(0u64, u64::wrapping_add);
    let resolved_ns = t.elapsed().as_nanos();
    std::hint::black_box((stored, resolved));
    let run = RunInfo::default();
    type Writer =
        fn(&std::path::Path, &RunInfo, &[ProcessView<'_>]) -> Result<(), trace_export::Error>;
    let mut formats = Vec::new();
    for (name, file, write) in [
        (
            "rocpd",
            "out_results.db",
            trace_export::rocpd::write_rocpd as Writer,
        ),
        (
            "json",
            "out_results.json",
            |path: &std::path::Path, run: &RunInfo, views: &[ProcessView<'_>]| {
                trace_export::json::write_json(path, run, views, &Default::default())
            },
        ),
        (
            "pftrace",
            "out_results.pftrace",
            |path: &std::path::Path, run: &RunInfo, views: &[ProcessView<'_>]| {
                trace_export::perfetto::write_perfetto(path, run, views, &Default::default())
                    .map(|_| ())
            },
        ),
    ] {
        if only.as_ref().is_some_and(|o| o != name) {
            continue;
        }
        let t = Instant::now();
        let done = write(&dir.join(file), &run, std::slice::from_ref(&view));
        formats.push((name, done.map(|()| t.elapsed().as_nanos())));
    }
    if let Some(keep) = &keep {
        std::fs::create_dir_all(keep).unwrap();
        for f in std::iter::once(files[0].clone()).chain(
            ["out_results.db", "out_results.json", "out_results.pftrace"].map(|f| dir.join(f)),
        ) {
            if f.exists() {
                std::fs::copy(&f, keep.join(f.file_name().unwrap())).unwrap();
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let rate = |ns: u128| n as f64 / (ns as f64 / 1e9) / 1e6;
    println!("log write : {:>8.2} M records/s", rate(write_ns));
    println!("log read  : {:>8.2} M records/s", rate(read_ns));
    println!(
        "csv write : {:>8.2} M rows/s ({} MiB)",
        rate(csv_ns),
        bytes >> 20
    );
    println!(
        "log read + csv write : {:>8.2} M rows/s",
        rate(read_ns + csv_ns)
    );
    println!(
        "view      : {:>8.2} M records/s (once, shared by the formats below)",
        rate(view_ns)
    );
    println!(
        "api pass  : {:>8.2} M records/s stored ({} runs spilled), {:>8.2} M/s resolved",
        rate(stored_ns),
        trace.api.spilled_runs(),
        rate(resolved_ns)
    );
    let mut last = format!("rows={n} write_ns={write_ns} read_ns={read_ns} csv_ns={csv_ns}");
    for (name, done) in formats {
        match &done {
            // rocpd: an event and a region (or, zero-length, a sample) per call.
            &Ok(ns) if name == "rocpd" => println!(
                "{name:<10}: {:>8.2} M records/s = {:.2} M rows/s (an event and a region per call)",
                rate(ns),
                2.0 * rate(ns)
            ),
            // Perfetto: a begin and an end event per call.
            &Ok(ns) if name == "pftrace" => println!(
                "{name:<10}: {:>8.2} M records/s = {:.2} M events/s",
                rate(ns),
                2.0 * rate(ns)
            ),
            &Ok(ns) => println!("{name:<10}: {:>8.2} M records/s", rate(ns)),
            Err(e) => println!("{name:<10}: not written: {e}"),
        }
        if let Ok(ns) = done {
            last.push_str(&format!(" {name}_ns={ns}"));
        }
    }
    println!("{last}");
}
