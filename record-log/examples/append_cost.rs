//! The floor of the traced path's append: nanoseconds per 36-byte API-record entry written
//! into the record log's shared file mapping (fresh page-cache pages, chunks replaced and
//! sealed as they fill, the grower thread allocating and populating ahead), against the same
//! entries written into one 64 KiB buffer reused in place (hot in the cache, what a log that
//! copies buffers out with `write(2)` pays on the traced thread). The time spent replacing full
//! chunks (sealing, and waiting for the grower when it has none ready) is shown apart.
//!
//! `cargo run --release -p record-log --example append_cost [records]` (in `$TMPDIR`).

use record_log::LogFile;
use std::hint::black_box;
use std::time::Instant;
use trace_records::log::{CHUNK_CAPACITY, ChunkFill, FileHeader};
use trace_records::{ApiDomain, ApiRecord};

fn record(i: u64) -> ApiRecord {
    ApiRecord {
        correlation_id: i,
        start: i,
        end: i + 1,
        thread_id: 1,
        operation: 1,
        domain: ApiDomain::HsaCore as u8,
        reserved: 0,
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::env::temp_dir().join(format!("append-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory in TMPDIR");
    let log = LogFile::create(
        &dir,
        FileHeader {
            pid: std::process::id(),
            ..Default::default()
        },
    )
    .expect("a record log");
    let mut chunk = log.take(1).expect("a first chunk");
    let mut in_replace = std::time::Duration::ZERO;
    let t = Instant::now();
    for i in 0..n {
        let r = record(i);
        if !chunk.push(&r) {
            let at = Instant::now();
            chunk = log.replace(chunk, 1).expect("a fresh chunk");
            in_replace += at.elapsed();
            assert!(chunk.push(&r));
        }
    }
    let mapped = t.elapsed().as_nanos() as f64 / n as f64;
    let replacing = in_replace.as_nanos() as f64 / n as f64;
    log.seal(chunk);
    log.close();

    let mut buffer = vec![0u8; CHUNK_CAPACITY];
    let mut fill = ChunkFill::default();
    let mut commit = 0u64;
    let t = Instant::now();
    for i in 0..n {
        let r = record(i);
        if !fill.push(&mut buffer, &r) {
            fill = ChunkFill::default();
            assert!(fill.push(&mut buffer, &r));
        }
        commit = black_box(fill.commit());
    }
    let reused = t.elapsed().as_nanos() as f64 / n as f64;
    black_box((&buffer, commit));
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "records={n} shared_mapping_ns={mapped:.2} of_which_replacing_chunks_ns={replacing:.2} reused_buffer_ns={reused:.2} difference_ns={:.2}",
        mapped - reused
    );
}
