//! Record log and exporter throughput: N HSA API records (default 3 M) written through the real
//! writer (a shared file mapping, chunks handed out by the grower thread), read back (checksums
//! verified), then written as `hsa_api_trace.csv` and as each one-file format (rocpd, JSON,
//! Perfetto), each stage timed. Prints one line per stage and a final `rows=<N> write_ns=<…>
//! read_ns=<…> csv_ns=<…>` line.
//!
//! `cargo run --release -p trace-export --example log_throughput [N]`

use std::time::Instant;
use trace_export::csv::{CsvSelection, write_csv};
use trace_export::output::OutputPrefix;
use trace_export::view::{ProcessView, RunInfo};
use trace_records::agents::AgentLabels;
use trace_records::log::FileHeader;
use trace_records::{ApiDomain, ApiRecord, OperationName, ProcessTrace};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3_000_000);
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
    let mut chunk = log.take(1).unwrap();
    for op in 0..125u16 {
        let name = format!("hsa_operation_{op}");
        assert!(chunk.push_string(u32::from(op) + 1, &name));
        assert!(chunk.push(&OperationName {
            name: u32::from(op) + 1,
            operation: op,
            domain: 1,
            reserved: 0,
        }));
    }
    for i in 0..n {
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
            chunk = log.replace(chunk, 1).unwrap();
            assert!(chunk.push(&r));
        }
    }
    log.seal(chunk);
    let write_ns = t.elapsed().as_nanos();
    let path = log.path().to_owned();
    log.close();

    let t = Instant::now();
    let trace = ProcessTrace::read(&path).unwrap();
    let read_ns = t.elapsed().as_nanos();
    assert_eq!(trace.api.len() as u64, n);
    assert!(trace.damage.is_empty() && trace.open_chunks == 0);

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
        let t = Instant::now();
        let done = write(&dir.join(file), &run, std::slice::from_ref(&view));
        formats.push((name, done.map(|()| t.elapsed().as_nanos())));
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
    for (name, done) in formats {
        match done {
            Ok(ns) => println!("{name:<10}: {:>8.2} M records/s", rate(ns)),
            Err(e) => println!("{name:<10}: not written: {e}"),
        }
    }
    println!("rows={n} write_ns={write_ns} read_ns={read_ns} csv_ns={csv_ns}");
}
