//! Compact API entries (log version 5): every API record pushed comes back exactly as it was,
//! whether it was stored compact (against its chunk's thread id and previous API entry) or
//! whole, and a damaged chunk takes no other chunk's records with it.

use proptest::prelude::*;
use trace_records::log::*;
use trace_records::loss::LossCause;
use trace_records::*;

mod common;
use common::header;

fn key(r: &ApiRecord) -> (u64, u64, u64, u32, u16, u8) {
    (
        r.start,
        r.correlation_id,
        r.end,
        r.thread_id,
        r.operation,
        r.domain,
    )
}

/// Pushes `records` into chunks of thread `tid`, a new chunk whenever one is full; returns
/// the log and the payload bytes each chunk used.
fn log_of(tid: u32, records: &[ApiRecord]) -> (Vec<u8>, Vec<usize>) {
    let mut b = LogBuilder::new(header());
    let mut used = Vec::new();
    let mut at = 0;
    while at < records.len() {
        b.thread_chunk(tid, true, |f, p| {
            while at < records.len() && f.push(p, &records[at]) {
                at += 1;
            }
            used.push(f.len());
        });
    }
    (b.bytes().to_vec(), used)
}

fn read_back(bytes: &[u8]) -> Vec<ApiRecord> {
    let t = ProcessTrace::from_bytes(bytes).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.losses.total(), 0);
    t.api.to_vec()
}

/// A traced loop's calls: one thread, ids and starts a few apart, short calls.
fn loop_calls(n: u64, tid: u32) -> Vec<ApiRecord> {
    (0..n)
        .map(|i| ApiRecord {
            correlation_id: 5000 + i,
            start: 3_000_000_000_000 + i * 40,
            end: 3_000_000_000_000 + i * 40 + 25,
            thread_id: tid,
            operation: (i % 7) as u16,
            domain: ApiDomain::HsaCore as u8,
            reserved: 0,
        })
        .collect()
}

#[test]
fn a_loop_of_calls_is_stored_compact_after_the_chunks_first_call() {
    let calls = loop_calls(1000, 77);
    let (bytes, used) = log_of(77, &calls);
    // The first call is a step of hours from 0: whole (36 bytes); the rest 20 bytes each.
    assert_eq!(used, vec![36 + 999 * 20]);
    assert_eq!(read_back(&bytes), calls);
}

#[test]
fn calls_of_another_thread_than_the_chunks_are_stored_whole() {
    let calls = loop_calls(100, 78);
    let (bytes, used) = log_of(77, &calls);
    assert_eq!(used, vec![100 * 36]);
    assert_eq!(read_back(&bytes), calls);
}

#[test]
fn every_chunk_starts_afresh_so_a_damaged_one_costs_only_itself() {
    let calls = loop_calls(5000, 9);
    let (mut bytes, used) = log_of(9, &calls);
    assert!(used.len() >= 2, "{used:?}");
    // Each chunk's first call is whole again.
    let first_of_second = &bytes[HEADER_LEN + CHUNK_SIZE + CHUNK_HEADER_LEN..][..2];
    assert_eq!(
        u16::from_le_bytes(first_of_second.try_into().unwrap()),
        Tag::Api as u16
    );
    // Damage the first chunk's payload: its checksum fails; the second chunk's steps do not
    // depend on it.
    bytes[HEADER_LEN + CHUNK_HEADER_LEN + 100] ^= 0x40;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
    let first_chunk = 1 + (used[0] - 36) / 20;
    assert_eq!(t.api.to_vec(), calls[first_chunk..].to_vec());
}

#[test]
fn a_compact_entry_of_the_wrong_length_is_counted_malformed() {
    let mut b = LogBuilder::new(header());
    b.thread_chunk(3, true, |f, p| {
        assert!(f.push_parts(p, Tag::ApiCompact, &[&[0u8; 12]]));
        assert!(f.push(p, &loop_calls(1, 3)[0]));
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.losses.get(LossCause::Malformed), 1);
    assert_eq!(t.api.to_vec(), loop_calls(1, 3));
}

/// One call as a step from the one before: small or huge id and start steps (either sign),
/// short or over-long durations, the chunk's thread or another.
fn call_step() -> impl Strategy<Value = (i64, i64, u64, bool, u16)> {
    (
        prop_oneof![
            -3i64..40,
            any::<i64>(),
            Just(i32::MAX as i64),
            Just(i32::MIN as i64),
            Just(i32::MAX as i64 + 1)
        ],
        prop_oneof![-5000i64..100_000, any::<i64>(), Just(i32::MIN as i64 - 1)],
        prop_oneof![
            0u64..10_000,
            Just(u32::MAX as u64),
            Just(u32::MAX as u64 + 1),
            any::<u64>()
        ],
        prop::bool::weighted(0.9),
        any::<u16>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_record_comes_back_exactly(
        first in any::<(u64, u64)>(),
        steps in proptest::collection::vec(call_step(), 1..4000),
    ) {
        let tid = 4242;
        let (mut id, mut start) = first;
        let calls: Vec<ApiRecord> = steps
            .iter()
            .map(|&(di, ds, duration, same_thread, operation)| {
                id = id.wrapping_add(di as u64);
                start = start.wrapping_add(ds as u64);
                ApiRecord {
                    correlation_id: id,
                    start,
                    end: start.wrapping_add(duration),
                    thread_id: if same_thread { tid } else { tid + 1 },
                    operation,
                    domain: (operation % 13) as u8,
                    reserved: 0,
                }
            })
            .collect();
        let (bytes, _) = log_of(tid, &calls);
        let mut back = read_back(&bytes);
        let mut want = calls.clone();
        back.sort_by_key(key);
        want.sort_by_key(key);
        prop_assert_eq!(back, want);
    }
}
