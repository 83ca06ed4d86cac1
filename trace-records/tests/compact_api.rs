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

/// The clock epoch of the tick tests: 2.5 ticks per ns (scale = 2^32 / 2.5).
fn epoch(sequence: u64, tsc0: u64, ns0: u64) -> ClockEpochRecord {
    ClockEpochRecord {
        sequence,
        tsc0,
        ns0,
        scale: (1u64 << 32) * 2 / 5,
    }
}

fn tick_call(id: u64, start: u64, ticks: u64, tid: u32) -> TickCall {
    TickCall {
        correlation_id: id,
        start,
        end: start + ticks,
        thread_id: tid,
        kind: u32::from(ApiDomain::HsaCore as u8) << 16 | (id % 50) as u32,
    }
}

/// Appends `call` as the tool's exit does: the fast tick-timed append, else the full decision.
fn push_like_the_exit(
    f: &mut ChunkFill,
    p: &mut [u8],
    call: &TickCall,
    e: &ClockEpochRecord,
) -> bool {
    f.push_api_ticks(p, call, e.sequence) || f.push_call(p, call, e)
}

#[test]
fn tick_timed_calls_carry_their_epoch_and_convert_as_the_clock_would() {
    let e1 = epoch(1, 10_000_000, 4_000_000);
    let e2 = epoch(2, 10_250_000, 4_100_000);
    let calls: Vec<(TickCall, ClockEpochRecord)> = (0..300)
        .map(|i| {
            let e = if i < 150 { e1 } else { e2 };
            (tick_call(100 + i, 10_000_000 + i * 2000, 60, 5), e)
        })
        .collect();
    let mut b = LogBuilder::new(header());
    let mut used = 0;
    b.thread_chunk(5, true, |f, p| {
        for (c, e) in &calls {
            assert!(push_like_the_exit(f, p, c, e));
        }
        used = f.len();
    });
    // Two epoch entries (36 bytes each), then every call in 20 bytes.
    assert_eq!(used, 2 * 36 + 300 * 20);
    let want: Vec<ApiRecord> = calls.iter().map(|(c, e)| c.record(e)).collect();
    assert_eq!(want[0].start, 4_000_000);
    // 60 ticks at 0.4 ns per tick, the fixed point truncated: 23 ns.
    assert_eq!(want[0].end, 4_000_023);
    assert_eq!(want[0].end - want[0].start, scaled_ticks(60, e1.scale));
    assert_eq!(read_back(b.bytes()), want);
}

#[test]
fn a_fresh_chunk_gets_the_epoch_before_its_first_tick_timed_call() {
    let e = epoch(7, 1_000, 50);
    let mut f = ChunkFill::for_thread(5);
    let mut p = vec![0u8; CHUNK_CAPACITY];
    let call = tick_call(1, 2_000, 10, 5);
    // The fast append refuses: the chunk has no epoch yet.
    assert!(!f.push_api_ticks(&mut p, &call, e.sequence));
    assert!(f.is_empty());
    assert!(f.push_call(&mut p, &call, &e));
    assert_eq!((f.entries(), f.epoch()), (2, 7));
    assert_eq!(u16::from_le_bytes([p[0], p[1]]), Tag::ClockEpoch as u16);
    // An epoch numbered 0 is no epoch.
    let mut g = ChunkFill::for_thread(5);
    assert!(!g.push_epoch(&mut p, &epoch(0, 1, 1)));
    assert!(g.push_call(&mut p, &call, &epoch(0, 1_000, 50)));
    assert_eq!((g.entries(), g.epoch()), (1, 0));
}

#[test]
fn a_tick_timed_call_without_an_epoch_in_its_chunk_is_counted_malformed() {
    // The first chunk's epoch does not reach into the second.
    let e = epoch(1, 0, 0);
    let mut b = LogBuilder::new(header());
    b.thread_chunk(5, true, |f, p| {
        assert!(f.push_call(p, &tick_call(1, 10, 5, 5), &e));
        assert_eq!(f.epoch(), 1);
    });
    // What a writer that skipped the epoch in its next chunk would have left.
    b.thread_chunk(5, true, |f, p| {
        assert!(f.push_parts(p, Tag::ApiTicks, &[&[0u8; 16]]));
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.losses.get(LossCause::Malformed), 1);
    assert_eq!(t.api.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_tick_timed_call_comes_back_as_its_converted_record(
        steps in proptest::collection::vec(
            (
                prop_oneof![-3i64..40, any::<i64>()],
                prop_oneof![0u64..5000, any::<u32>().prop_map(u64::from), any::<u64>()],
                prop_oneof![0u64..500, Just(u32::MAX as u64), Just(u32::MAX as u64 + 1), any::<u64>()],
                prop::bool::weighted(0.95),
                prop::bool::weighted(0.02),
            ),
            1..4000,
        ),
        first_id in any::<u64>(),
        tsc in any::<u64>(),
    ) {
        let tid = 31;
        let (mut id, mut start) = (first_id, tsc);
        let mut e = epoch(1, tsc, 1 << 40);
        let mut expected = Vec::new();
        let mut b = LogBuilder::new(header());
        let mut at = 0;
        let calls: Vec<(TickCall, bool)> = steps
            .iter()
            .map(|&(di, gap, ticks, same_thread, new_epoch)| {
                id = id.wrapping_add(di as u64);
                start = start.wrapping_add(gap);
                let mut c = tick_call(id, start, 0, if same_thread { tid } else { tid + 1 });
                c.end = start.wrapping_add(ticks);
                (c, new_epoch)
            })
            .collect();
        while at < calls.len() {
            b.thread_chunk(tid, true, |f, p| {
                while at < calls.len() {
                    let (c, new_epoch) = calls[at];
                    if new_epoch {
                        e = epoch(e.sequence + 1, c.start.wrapping_sub(77), e.ns0 / 2 + 3);
                    }
                    if !push_like_the_exit(f, p, &c, &e) {
                        break;
                    }
                    expected.push(c.record(&e));
                    at += 1;
                }
            });
        }
        let mut back = read_back(b.bytes());
        back.sort_by_key(key);
        expected.sort_by_key(key);
        prop_assert_eq!(back, expected);
    }
}
