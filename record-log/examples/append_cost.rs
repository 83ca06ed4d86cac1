//! The floor of the traced path's append: nanoseconds per API-record entry (compact, 20 bytes) written
//! into the record log's shared file mapping (fresh page-cache pages, chunks replaced and
//! sealed as they fill, the grower thread allocating and populating ahead), against the same
//! entries written into one 64 KiB buffer reused in place (hot in the cache, what a log that
//! copies buffers out with `write(2)` pays on the traced thread). The time spent replacing full
//! chunks (sealing, and waiting for the grower when it has none ready) is shown apart.
//!
//! `cargo run --release -p record-log --example append_cost [records] [--payload BYTES | --whole]`
//! (in `$TMPDIR`). `--payload BYTES` appends entries of that many payload bytes (plus the 4-byte
//! entry header; a multiple of 4 from 8 to 256) as raw parts instead of `ApiRecord`s, so the cost
//! per record can be set against its size; `--whole` appends each `ApiRecord` whole (36 bytes,
//! the entry before log version 5) through the same path.

use record_log::LogFile;
use std::hint::black_box;
use std::time::Instant;
use trace_records::log::{CHUNK_CAPACITY, ChunkFill, FileHeader};
use trace_records::{ApiCompactRecord, ApiDomain, ApiRecord, Tag};
use zerocopy::IntoBytes;

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

/// What the loops append: `ApiRecord`s, or raw entries of a set payload size.
#[derive(Clone, Copy)]
enum Entry {
    Api,
    Whole,
    Raw(usize),
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut n: u64 = 10_000_000;
    let mut entry = Entry::Api;
    while let Some(a) = args.next() {
        if a == "--payload" {
            let bytes: usize = args
                .next()
                .and_then(|b| b.parse().ok())
                .filter(|b| b % 4 == 0 && (8..=256).contains(b))
                .expect("--payload takes a multiple of 4 from 8 to 256");
            entry = Entry::Raw(bytes);
        } else if a == "--whole" {
            entry = Entry::Whole;
        } else {
            n = a.parse().expect("records: a count");
        }
    }
    let raw = [0x5au8; 256];
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
        let push = |c: &mut record_log::Chunk| match entry {
            Entry::Api => c.push(&r),
            Entry::Whole => c.push_parts(Tag::Api, &[r.as_bytes()]),
            Entry::Raw(b) => c.push_parts(Tag::Api, &[&i.to_le_bytes(), &raw[8..b]]),
        };
        if !push(&mut chunk) {
            let at = Instant::now();
            chunk = log.replace(chunk, 1).expect("a fresh chunk");
            in_replace += at.elapsed();
            assert!(push(&mut chunk));
        }
    }
    let mapped = t.elapsed().as_nanos() as f64 / n as f64;
    let replacing = in_replace.as_nanos() as f64 / n as f64;
    log.seal(chunk);
    log.close();

    let mut buffer = vec![0u8; CHUNK_CAPACITY];
    let mut fill = ChunkFill::for_thread(1);
    let mut commit = 0u64;
    let t = Instant::now();
    for i in 0..n {
        let r = record(i);
        let push = |f: &mut ChunkFill, buffer: &mut [u8]| match entry {
            Entry::Api => f.push(buffer, &r),
            Entry::Whole => f.push_parts(buffer, Tag::Api, &[r.as_bytes()]),
            Entry::Raw(b) => f.push_parts(buffer, Tag::Api, &[&i.to_le_bytes(), &raw[8..b]]),
        };
        if !push(&mut fill, &mut buffer) {
            fill = ChunkFill::for_thread(1);
            assert!(push(&mut fill, &mut buffer));
        }
        commit = black_box(fill.commit());
    }
    let reused = t.elapsed().as_nanos() as f64 / n as f64;
    black_box((&buffer, commit));
    let _ = std::fs::remove_dir_all(&dir);
    let bytes = match entry {
        Entry::Api => 4 + std::mem::size_of::<ApiCompactRecord>(),
        Entry::Whole => 4 + std::mem::size_of::<ApiRecord>(),
        Entry::Raw(b) => 4 + b,
    };
    println!(
        "records={n} entry_bytes={bytes} shared_mapping_ns={mapped:.2} of_which_replacing_chunks_ns={replacing:.2} reused_buffer_ns={reused:.2} difference_ns={:.2}",
        mapped - reused
    );
}
