//! The record log: round trips, torn tails, corruption, and the writer thread.

use proptest::prelude::*;
use trace_records::log::*;
use trace_records::*;

fn api(i: u64) -> ApiRecord {
    ApiRecord {
        correlation_id: i,
        start: 1000 + i * 10,
        end: 1005 + i * 10,
        thread_id: 7,
        operation: (i % 100) as u16,
        domain: ApiDomain::HsaCore as u8,
        reserved: 0,
    }
}

/// A log of `chunks` chunks of `per_chunk` API records each, plus names, as bytes.
fn log_bytes(chunks: u64, per_chunk: u64) -> Vec<u8> {
    let dir = tempdir();
    let path = dir.join("p.rplog");
    let writer = LogWriter::create(
        &path,
        FileHeader {
            pid: 42,
            created_ns: 9,
        },
    )
    .unwrap();
    let mut n = 0;
    for c in 0..chunks {
        let mut b = writer.buffer();
        if c == 0 {
            assert!(b.push_string(1, "hsa_init"));
            assert!(b.push(&OperationName {
                name: 1,
                operation: 0,
                domain: 1,
                reserved: 0
            }));
        }
        for _ in 0..per_chunk {
            n += 1;
            assert!(b.push(&api(n)));
        }
        writer.submit(b);
    }
    writer.finish().unwrap();
    std::fs::read(&path).unwrap()
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "trace-records-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn round_trip_keeps_every_record_in_order() {
    let bytes = log_bytes(3, 100);
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.pid, 42);
    assert_eq!(t.created_ns, 9);
    assert!(t.damage.is_none());
    assert_eq!(t.api.len(), 300);
    assert_eq!(t.api[299], api(300));
    assert_eq!(t.operation_name(1, 0), "hsa_init");
    assert_eq!(t.operation_name(1, 5), "1#5");
}

#[test]
fn a_torn_last_chunk_is_skipped_and_everything_before_kept() {
    let bytes = log_bytes(3, 100);
    let chunk = CHUNK_HEADER_LEN + 100 * (4 + 32);
    for cut in [1, 10, CHUNK_HEADER_LEN, chunk - 1] {
        let t = ProcessTrace::from_bytes(&bytes[..bytes.len() - cut]).unwrap();
        assert_eq!(t.api.len(), 200, "cut {cut}");
        let d = t.damage.expect("damage reported");
        assert!(d.reason.contains("torn"), "{}", d.reason);
        assert_eq!(d.bytes_lost, chunk - cut);
    }
}

#[test]
fn a_corrupted_chunk_stops_the_read_there() {
    let mut bytes = log_bytes(3, 100);
    let second = HEADER_LEN + (CHUNK_HEADER_LEN + 8 + 4 + 8 + 4 + 100 * 36);
    bytes[second + CHUNK_HEADER_LEN + 40] ^= 0xFF;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 100);
    assert_eq!(t.damage.unwrap().reason, "chunk checksum mismatch");
}

#[test]
fn the_longest_strings_are_cut_to_fit_an_empty_chunk_not_dropped() {
    let mut b = ChunkBuffer::default();
    assert!(b.push_string(7, &"é".repeat(40_000)));
    assert!(b.len() <= CHUNK_CAPACITY);
    let mut bytes = FileHeader {
        pid: 1,
        created_ns: 0,
    }
    .encode()
    .to_vec();
    bytes.extend_from_slice(b.finish());
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    let text = t.string(7);
    assert!(
        text.len() > 65_000 && text.chars().all(|c| c == 'é'),
        "{}",
        text.len()
    );
}

#[test]
fn a_damaged_entry_count_is_reported_not_trusted() {
    // The count sits in the chunk header, outside the checksum; a flipped high bit once made
    // the reader try to allocate tens of gigabytes and abort.
    let mut bytes = log_bytes(3, 100);
    let chunk = chunk_ends(&bytes)[0];
    bytes[chunk + 11] ^= 0x80;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 100);
    let damage = t.damage.unwrap();
    assert_eq!(damage.offset, chunk);
    assert!(damage.reason.contains("entries"), "{}", damage.reason);
}

#[test]
fn bad_headers_are_errors() {
    assert_eq!(
        ProcessTrace::from_bytes(b"").unwrap_err(),
        LogError::NotALog
    );
    assert_eq!(
        ProcessTrace::from_bytes(b"RPRFLOG\0 short").unwrap_err(),
        LogError::NotALog
    );
    let mut bytes = log_bytes(1, 1);
    bytes[8] = 9;
    assert_eq!(
        ProcessTrace::from_bytes(&bytes).unwrap_err(),
        LogError::Version(9)
    );
}

#[test]
fn a_full_buffer_refuses_instead_of_growing() {
    let mut b = ChunkBuffer::default();
    let mut n = 0;
    while b.push(&api(n)) {
        n += 1;
    }
    assert_eq!(n as usize, CHUNK_CAPACITY / 36);
    assert!(b.len() <= CHUNK_CAPACITY);
    assert!(!b.push_string(1, &"x".repeat(70_000)));
    assert!(b.len() <= CHUNK_CAPACITY);
}

#[test]
fn flush_makes_submitted_chunks_readable_while_writing_continues() {
    let dir = tempdir();
    let path = dir.join("live.rplog");
    let writer = LogWriter::create(
        &path,
        FileHeader {
            pid: 1,
            created_ns: 0,
        },
    )
    .unwrap();
    let mut b = writer.buffer();
    assert!(b.push(&api(1)));
    writer.submit(b);
    writer.flush().unwrap();
    let t = ProcessTrace::read(&path).unwrap();
    assert_eq!(t.api.len(), 1);
    drop(writer);
}

/// Byte offsets where each chunk of a well-formed log ends.
fn chunk_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = HEADER_LEN;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += CHUNK_HEADER_LEN + len;
        ends.push(at);
    }
    ends
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Truncating a log anywhere keeps exactly the records of the chunks before the cut;
    /// flipping any bit after the header loses at most the chunks from the damaged one on.
    /// Neither ever panics.
    #[test]
    fn damage_anywhere_is_contained(cut in 0usize..4000, flip in 0usize..4000, bit in 0u8..8) {
        let bytes = log_bytes(4, 25);
        let ends = chunk_ends(&bytes);
        let len = bytes.len() - cut.min(bytes.len() - HEADER_LEN);
        let t = ProcessTrace::from_bytes(&bytes[..len]).unwrap();
        let complete = ends.iter().filter(|&&e| e <= len).count();
        prop_assert_eq!(t.api.len(), complete * 25);
        // A cut exactly at a chunk boundary is indistinguishable from a shorter log.
        let at_boundary = len == HEADER_LEN || ends.contains(&len);
        prop_assert_eq!(t.damage.is_some(), !at_boundary);

        let mut corrupt = bytes.clone();
        let at = HEADER_LEN + flip % (bytes.len() - HEADER_LEN);
        corrupt[at] ^= 1 << bit;
        let t = ProcessTrace::from_bytes(&corrupt).unwrap();
        let before = ends.iter().filter(|&&e| e <= at).count();
        prop_assert_eq!(t.api.len(), before * 25);
        prop_assert!(t.damage.is_some());
    }
}
