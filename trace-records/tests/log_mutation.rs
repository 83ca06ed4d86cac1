//! Whole-log mutations (issue 23, cases 7 and 9): a log cut at every chunk boundary, chunks
//! repeated, dropped, moved and zeroed, header counters set to anything. The reader never
//! panics, stays within a memory bound (measured by a counting allocator), reads no record
//! twice, and reports each mutation as damage that says how many chunks it concerns.

use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashSet;
use trace_records::log::*;
use trace_records::loss::LossCause;
use trace_records::*;

mod common;
use common::{api, header};

/// Counts the bytes each thread has allocated and not freed, and the peak of that (tests run
/// on several threads; each measures its own reads).
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn account(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping touches
// only const-initialised thread-locals without destructors and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as isize - layout.size() as isize);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Reads `bytes` as a log and returns the trace with the most memory the read held at once.
fn read_measured(bytes: &[u8]) -> (ProcessTrace, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let t = ProcessTrace::from_bytes(bytes).expect("a log with an intact header reads");
    let peak = PEAK.with(Cell::get) - start;
    (t, peak.max(0) as usize)
}

/// A log as the writer leaves it: `chunks` handed-out chunks of `per` records each (numbered
/// from 1; a string and a document in the first), the last one open, then `spare` chunks
/// allocated ahead and never handed out.
fn log(chunks: usize, per: u64, spare: usize) -> Vec<u8> {
    let mut b = LogBuilder::new(header());
    let mut n = 0;
    for c in 0..chunks {
        b.chunk(c + 1 < chunks, |f, p| {
            if c == 0 {
                assert!(f.push_string(p, 1, "hsa_init"));
                assert!(f.push_json(p, r#"{"kind":"exit","runtimes_loaded":["hsa"]}"#));
            }
            for _ in 0..per {
                n += 1;
                assert!(f.push(p, &api(n)));
            }
        });
    }
    for _ in 0..spare {
        b.unused_chunk();
    }
    b.bytes().to_vec()
}

fn place(k: usize) -> usize {
    HEADER_LEN + k * CHUNK_SIZE
}

/// What every read of every mutation must hold: no record read twice or made up, memory
/// within a bound of the input, and every damage report naming how many chunks it concerns.
fn sound(t: &ProcessTrace, peak: usize, input: usize, records: u64) -> Result<(), TestCaseError> {
    let ids: Vec<u64> = t.api.iter().map(|r| r.correlation_id).collect();
    let unique: HashSet<u64> = ids.iter().copied().collect();
    prop_assert_eq!(unique.len(), ids.len(), "a record read twice");
    prop_assert!(
        ids.iter().all(|&i| (1..=records).contains(&i)),
        "a record made up"
    );
    // One chunk buffer, the header, the records kept (32 bytes of each 36-byte entry, doubled
    // by vector growth) and the strings: never more than the input's size plus a little.
    prop_assert!(
        peak <= 2 * input + 256 * 1024,
        "{} bytes held reading {} bytes",
        peak,
        input
    );
    for d in &t.damage {
        if d.offset == 0 {
            prop_assert_eq!(d.chunks, 0);
            prop_assert!(d.reason.starts_with("damaged file header"), "{:?}", d);
        } else {
            prop_assert!(d.chunks >= 1, "{:?}", d);
            if d.chunks > 1 {
                prop_assert!(d.reason.contains(&d.chunks.to_string()), "{:?}", d);
            }
        }
    }
    Ok(())
}

fn damaged_chunks(t: &ProcessTrace) -> u64 {
    t.damage.iter().map(|d| d.chunks).sum()
}

#[test]
fn a_cut_at_every_chunk_boundary_is_reported_with_the_chunks_missing() {
    let (chunks, per, spare) = (5, 40, 3);
    let bytes = log(chunks, per, spare);
    for keep in 0..=chunks + spare {
        let cut = &bytes[..place(keep)];
        let (t, peak) = read_measured(cut);
        sound(&t, peak, cut.len(), chunks as u64 * per).unwrap();
        let whole = keep.min(chunks) as u64;
        assert_eq!(t.api.len() as u64, whole * per, "cut after {keep} chunks");
        if keep >= chunks {
            assert!(t.damage.is_empty(), "only spare chunks cut: {:?}", t.damage);
        } else {
            let missing = (chunks - keep) as u64;
            assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
            let d = &t.damage[0];
            assert_eq!((d.offset, d.chunks), (place(keep) as u64, missing), "{d:?}");
            assert!(
                d.reason
                    .contains(&format!("{missing} of the {chunks} chunks")),
                "{d:?}"
            );
        }
    }
}

#[test]
fn a_large_sparse_log_reads_in_bounded_memory() {
    // 256 MiB of chunks that were never handed out (a log whose file was extended with
    // zeros): nothing to read, nothing held per chunk beyond a bit.
    let dir = std::env::temp_dir().join(format!("trace-records-sparse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("7.rplog");
    let bytes = log(2, 10, 0);
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(bytes.len() as u64 + (256 << 20)).unwrap();
    drop(f);
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let t = ProcessTrace::read(&path).unwrap();
    let peak = (PEAK.with(Cell::get) - start) as usize;
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(t.api.len(), 20);
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    // The reader reserves room for one sorted run of API calls (32 MiB) for a log this size.
    assert!(peak < 40 << 20, "{peak} bytes held");
}

/// A mutation of a whole log.
#[derive(Debug, Clone)]
enum Mutation {
    /// Insert `times` copies of chunk `chunk` before place `at`.
    Repeat {
        chunk: usize,
        at: usize,
        times: usize,
    },
    /// Remove the chunk at `at`.
    Drop { at: usize },
    /// Copy chunk `from` over the chunk at `to`.
    Overwrite { from: usize, to: usize },
    /// Zero the chunk at `at`.
    Zero { at: usize },
    /// Set header counter `slot` (0: the chunk count, 1..: the loss causes) to `word`.
    Counter { slot: usize, word: u64 },
    /// Set header counter `slot` to a valid encoding of `value`.
    ValidCounter { slot: usize, value: u64 },
}

fn counter(slot: usize) -> HeaderCounter {
    match slot {
        0 => HeaderCounter::Chunks,
        s => HeaderCounter::Loss(LossCause::ALL[s - 1]),
    }
}

fn mutation(chunks: usize) -> impl Strategy<Value = Mutation> {
    let slots = 0..=LossCause::COUNT;
    prop_oneof![
        (0..chunks, 0..=chunks, 1usize..40).prop_map(|(chunk, at, times)| Mutation::Repeat {
            chunk,
            at,
            times
        }),
        (0..chunks).prop_map(|at| Mutation::Drop { at }),
        (0..chunks, 0..chunks)
            .prop_filter("two chunks", |(a, b)| a != b)
            .prop_map(|(from, to)| Mutation::Overwrite { from, to }),
        (0..chunks).prop_map(|at| Mutation::Zero { at }),
        (slots.clone(), any::<u64>()).prop_map(|(slot, word)| Mutation::Counter { slot, word }),
        (
            slots,
            prop_oneof![Just(0u64), 1u64..100, Just(COUNTER_MAX), any::<u64>()]
        )
            .prop_map(|(slot, value)| Mutation::ValidCounter { slot, value }),
    ]
}

fn apply(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let slot = |k: usize| bytes[place(k)..place(k + 1)].to_vec();
    let places = (bytes.len() - HEADER_LEN) / CHUNK_SIZE;
    let mut out = bytes[..HEADER_LEN].to_vec();
    match *m {
        Mutation::Repeat { chunk, at, times } => {
            for k in 0..=places {
                if k == at {
                    for _ in 0..times {
                        out.extend_from_slice(&slot(chunk));
                    }
                }
                if k < places {
                    out.extend_from_slice(&slot(k));
                }
            }
        }
        Mutation::Drop { at } => {
            for k in (0..places).filter(|&k| k != at) {
                out.extend_from_slice(&slot(k));
            }
        }
        Mutation::Overwrite { from, to } => {
            for k in 0..places {
                out.extend_from_slice(&slot(if k == to { from } else { k }));
            }
        }
        Mutation::Zero { at } => {
            out = bytes.to_vec();
            out[place(at)..place(at + 1)].fill(0);
        }
        Mutation::Counter { slot, word } => {
            out = bytes.to_vec();
            let at = counter(slot).offset();
            out[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
        Mutation::ValidCounter { slot, value } => {
            out = bytes.to_vec();
            let c = counter(slot);
            out[c.offset()..c.offset() + 8].copy_from_slice(&c.encode(value).to_le_bytes());
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Every mutation of a log's chunk sequence is reported as damage with its count of chunks
    /// and never makes a record appear twice; every header counter is either believed (its
    /// check holds, and it is plausible) or reported as a damaged header, never printed as a
    /// loss it was not.
    #[test]
    fn mutated_logs_report_damage_with_a_count(
        (chunks, m) in (2usize..6).prop_flat_map(|c| (Just(c), mutation(c))),
        per in 1u64..30,
        spare in 0usize..3,
    ) {
        let bytes = log(chunks, per, spare);
        let records = chunks as u64 * per;
        let mutated = apply(&bytes, &m);
        let (t, peak) = read_measured(&mutated);
        sound(&t, peak, mutated.len(), records)?;
        match m {
            Mutation::Repeat { times, .. } => {
                prop_assert!(damaged_chunks(&t) >= times as u64, "{:?}", t.damage);
            }
            Mutation::Drop { .. } | Mutation::Overwrite { .. } | Mutation::Zero { .. } => {
                prop_assert!(damaged_chunks(&t) >= 1, "{:?}", t.damage);
                prop_assert!((t.api.len() as u64) < records);
            }
            Mutation::Counter { slot, word } => {
                let c = counter(slot);
                let believed = c.decode(word).filter(|v| match c {
                    HeaderCounter::Loss(LossCause::Malformed | LossCause::Damaged) => *v == 0,
                    HeaderCounter::Chunks => *v <= u64::from(u32::MAX) + 1,
                    HeaderCounter::Loss(_) => true,
                });
                match (c, believed) {
                    (_, None) => {
                        prop_assert_eq!(t.damage[0].offset, 0, "{:?}", t.damage);
                        prop_assert_eq!(t.losses.total(), 0);
                    }
                    (HeaderCounter::Loss(cause), Some(v)) => {
                        prop_assert_eq!(t.losses.get(cause), v);
                        prop_assert!(t.damage.is_empty(), "{:?}", t.damage);
                    }
                    (HeaderCounter::Chunks, Some(_)) => {}
                }
            }
            Mutation::ValidCounter { slot, value } => {
                let v = value.min(COUNTER_MAX);
                match counter(slot) {
                    HeaderCounter::Loss(LossCause::Malformed | LossCause::Damaged) if v > 0 => {
                        prop_assert_eq!(t.losses.total(), 0);
                        prop_assert_eq!(t.damage[0].offset, 0);
                    }
                    HeaderCounter::Loss(cause) => {
                        prop_assert_eq!(t.losses.get(cause), v);
                        prop_assert!(t.damage.is_empty(), "{:?}", t.damage);
                    }
                    HeaderCounter::Chunks => {
                        let places = (chunks + spare) as u64;
                        if v > u64::from(u32::MAX) + 1 {
                            prop_assert_eq!(t.damage[0].offset, 0);
                        } else if v > places {
                            // The header counts more chunks than the file holds.
                            let last = t.damage.last().expect("ends early");
                            prop_assert_eq!(last.chunks, v - places, "{:?}", t.damage);
                            prop_assert!(last.reason.contains("ends early"));
                        } else if v > chunks as u64 {
                            // Spare (zero) chunks counted as handed out read as overwritten.
                            prop_assert_eq!(damaged_chunks(&t), v - chunks as u64, "{:?}", t.damage);
                        } else {
                            // A count that lags the chunks written: they are still read.
                            prop_assert!(t.damage.is_empty(), "{:?}", t.damage);
                            prop_assert_eq!(t.api.len() as u64, records);
                        }
                    }
                }
            }
        }
    }
}
