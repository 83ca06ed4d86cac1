//! The record log's format and reader: round trips, open (unsealed) chunks, torn files,
//! damage that costs one chunk and no more, headers, and arbitrary bytes.

use proptest::prelude::*;
use trace_records::log::*;
use trace_records::loss::LossCause;
use trace_records::*;

mod common;
use common::{api, header};

/// A log of `chunks` chunks of `per_chunk` API records each (numbered from 1), names in the
/// first; the last chunk is left open (unsealed) when `open_last`.
fn log(chunks: u64, per_chunk: u64, open_last: bool) -> Vec<u8> {
    let mut b = LogBuilder::new(header());
    let mut n = 0;
    for c in 0..chunks {
        let seal = !(open_last && c + 1 == chunks);
        b.chunk(seal, |f, p| {
            if c == 0 {
                assert!(f.push_string(p, 1, "hsa_init"));
                assert!(f.push(
                    p,
                    &OperationName {
                        name: 1,
                        operation: 0,
                        domain: 1,
                        reserved: 0,
                    }
                ));
            }
            for _ in 0..per_chunk {
                n += 1;
                assert!(f.push(p, &api(n)));
            }
        });
    }
    b.bytes().to_vec()
}

fn chunk_at(k: usize) -> usize {
    HEADER_LEN + k * CHUNK_SIZE
}

#[test]
fn round_trip_keeps_every_record_in_order() {
    let bytes = log(3, 100, false);
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!((t.pid, t.image, t.ppid, t.created_ns), (42, 1, 41, 9));
    assert!(t.damage.is_empty());
    assert_eq!(t.open_chunks, 0);
    assert_eq!(t.api.len(), 300);
    assert_eq!(t.api.to_vec()[299], api(300));
    assert_eq!(t.operation_name(1, 0), "hsa_init");
    assert_eq!(t.operation_name(1, 5), "1#5");
    assert_eq!(t.losses.total(), 0);
}

#[test]
fn an_open_chunk_is_read_up_to_its_commit_word() {
    // A process killed while writing leaves its chunks open, possibly with bytes of an entry
    // it had not committed yet: they are not read.
    let mut bytes = log(2, 10, true);
    let open = chunk_at(1);
    let commit = u64::from_le_bytes(
        bytes[open + COMMIT_AT..open + COMMIT_AT + 8]
            .try_into()
            .unwrap(),
    );
    let used = (commit & 0xFFFF_FFFF) as usize;
    // An entry half-written after the commit.
    bytes[open + CHUNK_HEADER_LEN + used] = Tag::Api as u8;
    bytes[open + CHUNK_HEADER_LEN + used + 2] = 32;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 20);
    assert_eq!(t.open_chunks, 1);
    assert!(t.damage.is_empty());
}

#[test]
fn unused_chunks_after_the_last_handed_out_one_are_skipped_silently() {
    // The writer allocates chunks ahead of its threads: the ones never handed out stay zero.
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| assert!(f.push(p, &api(1))))
        .chunk(false, |f, p| assert!(f.push(p, &api(2))))
        .unused_chunk()
        .unused_chunk();
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(t.api.to_vec(), vec![api(1), api(2)]);
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.chunks_written, Some(2));
}

#[test]
fn a_handed_out_chunk_that_is_all_zeros_is_damage() {
    // A chunk's header is written before the header counts it, so a counted chunk that reads
    // as never handed out was overwritten afterwards.
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| assert!(f.push(p, &api(1))))
        .unused_chunk()
        .chunk(false, |f, p| assert!(f.push(p, &api(2))));
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(t.api.to_vec(), vec![api(1), api(2)]);
    assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
    assert_eq!(t.damage[0].offset, chunk_at(1) as u64);
    assert_eq!(t.damage[0].chunks, 1);
    assert!(t.damage[0].reason.contains("all zeros"), "{:?}", t.damage);
}

#[test]
fn one_damaged_chunk_costs_that_chunk_only_and_is_counted() {
    let mut bytes = log(3, 100, false);
    bytes[chunk_at(1) + CHUNK_HEADER_LEN + 40] ^= 0xFF;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 200, "the chunks before and after are kept");
    assert_eq!(t.damage.len(), 1);
    assert_eq!(t.damage[0].offset, chunk_at(1) as u64);
    assert_eq!(t.damage[0].reason, "chunk checksum mismatch");
    assert_eq!(t.losses.get(LossCause::Damaged), 100);
}

#[test]
fn chunks_are_sealed_with_a_crc32c_and_older_crc32_seals_are_still_checked() {
    let mut bytes = log(2, 100, false);
    let payload = |b: &[u8], c: usize| {
        let used = u32::from_le_bytes(b[chunk_at(c) + COMMIT_AT..][..4].try_into().unwrap());
        b[chunk_at(c) + CHUNK_HEADER_LEN..][..used as usize].to_vec()
    };
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(word(&bytes, chunk_at(0) + SEAL_AT), SEALED);
    assert_eq!(
        word(&bytes, chunk_at(0) + CRC_AT),
        crc32c(&payload(&bytes, 0)),
        "the seal is an independent CRC-32C of the committed payload"
    );
    // Chunk 1 as a version-5 writer sealed it: its CRC-32 and the old mark.
    let old = crc32(&payload(&bytes, 1));
    bytes[chunk_at(1) + CRC_AT..][..4].copy_from_slice(&old.to_le_bytes());
    bytes[chunk_at(1) + SEAL_AT..][..4].copy_from_slice(&SEALED_CRC32.to_le_bytes());
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 200, "{:?}", t.damage);
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    // The old seal is checked with its own checksum: a flipped byte is damage.
    bytes[chunk_at(1) + CHUNK_HEADER_LEN + 40] ^= 0x01;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 100);
    assert_eq!(t.damage.len(), 1);
    assert_eq!(t.damage[0].reason, "chunk checksum mismatch");
}

#[test]
fn a_damaged_commit_word_is_reported_not_trusted() {
    let mut bytes = log(3, 100, false);
    bytes[chunk_at(0) + COMMIT_AT + 7] ^= 0x80;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 200);
    assert_eq!(t.damage.len(), 1);
    let mut bytes = log(3, 100, false);
    bytes[chunk_at(2) + COMMIT_AT + 2] ^= 0x01;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 200);
    assert!(t.damage[0].reason.contains("commit"), "{:?}", t.damage);
}

#[test]
fn a_torn_last_chunk_is_reported_and_everything_before_kept() {
    let bytes = log(3, 100, false);
    for cut in [1, 10, CHUNK_SIZE - 40_000, CHUNK_SIZE - 1] {
        let t = ProcessTrace::from_bytes(&bytes[..bytes.len() - cut]).unwrap();
        assert_eq!(t.api.len(), 200, "cut {cut}");
        assert_eq!(t.damage.len(), 1, "cut {cut}");
        assert!(t.damage[0].reason.contains("torn"), "{:?}", t.damage);
    }
}

#[test]
fn a_damaged_file_header_falls_back_to_the_file_name_and_keeps_the_chunks() {
    let mut bytes = log(2, 10, false);
    bytes[3] ^= 0x10;
    let fallback = FileHeader {
        pid: 7,
        ..Default::default()
    };
    let t = ProcessTrace::from_reader(&bytes[..], Some(fallback)).unwrap();
    assert_eq!(t.pid, 7);
    assert_eq!(t.api.len(), 20);
    assert_eq!(t.damage[0].offset, 0);
    assert!(t.damage[0].reason.contains("header"), "{:?}", t.damage);
    // The pid field is covered by the header checksum as well.
    let mut bytes = log(1, 1, false);
    bytes[17] ^= 1;
    let t = ProcessTrace::from_reader(&bytes[..], Some(fallback)).unwrap();
    assert_eq!((t.pid, t.api.len()), (7, 1));
}

#[test]
fn loss_counts_in_the_header_are_read() {
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| assert!(f.push(p, &api(1))))
        .loss(LossCause::NoSpace, 12)
        .loss(LossCause::DispatchTime, 1);
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(t.losses.get(LossCause::NoSpace), 12);
    assert_eq!(t.losses.get(LossCause::DispatchTime), 1);
    assert_eq!(t.losses.total(), 13);
}

/// The header's words, with their own checks.
fn set_word(bytes: &mut [u8], at: usize, word: u64) {
    bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
}

#[test]
fn loss_counters_of_all_ones_are_a_damaged_header_not_losses() {
    // Issue 23, case 9: the counters sit outside the header checksum.
    let mut bytes = log(2, 10, false);
    for c in LossCause::ALL {
        set_word(&mut bytes, HeaderCounter::Loss(c).offset(), u64::MAX);
    }
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.losses.total(), 0, "{:?}", t.losses);
    assert_eq!(t.api.len(), 20, "the chunks are still read");
    assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
    assert_eq!(t.damage[0].offset, 0);
    for c in LossCause::ALL {
        assert!(
            t.damage[0].reason.contains(&c.to_string()),
            "{}",
            t.damage[0].reason
        );
    }
    assert!(t.damage[0].reason.starts_with("damaged file header"));
}

#[test]
fn one_bad_loss_counter_costs_that_count_only() {
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| assert!(f.push(p, &api(1))))
        .loss(LossCause::NoSpace, 12)
        .loss(LossCause::DispatchTime, 3);
    let mut bytes = b.bytes().to_vec();
    let at = HeaderCounter::Loss(LossCause::DispatchTime).offset();
    bytes[at] ^= 1;
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.losses.get(LossCause::NoSpace), 12);
    assert_eq!(t.losses.get(LossCause::DispatchTime), 0);
    assert!(
        t.damage[0].reason.contains("dispatch-time"),
        "{:?}",
        t.damage
    );
    assert!(!t.damage[0].reason.contains("no-space"), "{:?}", t.damage);
}

#[test]
fn losses_only_a_reader_counts_are_implausible_in_a_header() {
    // The writer never counts malformed or damaged records: only a reader finds them.
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| assert!(f.push(p, &api(1))))
        .loss(LossCause::Damaged, 5)
        .loss(LossCause::Malformed, 1);
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(t.losses.total(), 0);
    assert!(
        t.damage[0].reason.contains("malformed, damaged"),
        "{:?}",
        t.damage
    );
}

#[test]
fn a_log_cut_at_a_chunk_boundary_says_how_many_chunks_are_missing() {
    // Issue 23, case 7: `truncate -s 69632` (the header and one chunk), or down to the header.
    let bytes = log(3, 100, false);
    for (keep, missing) in [(1usize, 2u64), (0, 3), (2, 1)] {
        let t = ProcessTrace::from_bytes(&bytes[..chunk_at(keep)]).unwrap();
        assert_eq!(t.api.len(), keep * 100);
        assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
        let d = &t.damage[0];
        assert_eq!(
            (d.offset, d.chunks),
            (chunk_at(keep) as u64, missing),
            "{d:?}"
        );
        assert!(
            d.reason.contains(&format!("{missing} of the 3 chunks"))
                && d.reason.contains("ends early"),
            "{d:?}"
        );
    }
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert!(t.damage.is_empty());
}

#[test]
fn a_chunk_repeated_a_thousand_times_is_read_once_and_reported_once_with_the_count() {
    let mut bytes = log(2, 50, false);
    let first = bytes[chunk_at(0)..chunk_at(1)].to_vec();
    for _ in 0..1000 {
        bytes.extend_from_slice(&first);
    }
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.api.len(), 100, "no record twice");
    assert_eq!(
        t.damage.len(),
        1,
        "{:?}",
        &t.damage[..t.damage.len().min(3)]
    );
    let d = &t.damage[0];
    assert_eq!(
        (d.offset, d.chunks, d.records),
        (chunk_at(2) as u64, 1000, 0)
    );
    assert!(d.reason.starts_with("1000 chunks in a row"), "{d:?}");
    assert!(d.reason.contains("copies"), "{d:?}");
}

#[test]
fn a_dropped_chunk_is_reported_and_nothing_after_it_is_misread() {
    let bytes = log(4, 10, false);
    let mut dropped = bytes[..chunk_at(1)].to_vec();
    dropped.extend_from_slice(&bytes[chunk_at(2)..]);
    let t = ProcessTrace::from_bytes(&dropped).unwrap();
    assert_eq!(t.api.len(), 10, "only the chunk still in its place");
    let chunks: u64 = t.damage.iter().map(|d| d.chunks).sum();
    assert_eq!(
        chunks, 3,
        "two out of place, one missing at the end: {:?}",
        t.damage
    );
    assert!(
        t.damage[0].reason.starts_with("2 chunks in a row"),
        "{:?}",
        t.damage
    );
    assert!(t.damage[1].reason.contains("ends early"), "{:?}", t.damage);
    assert_eq!(t.losses.get(LossCause::Damaged), 20);
}

#[test]
fn a_chunk_count_that_fails_its_check_is_a_damaged_header() {
    let mut bytes = log(2, 10, false);
    set_word(&mut bytes, CHUNKS_AT, u64::MAX);
    let t = ProcessTrace::from_bytes(&bytes[..chunk_at(1)]).unwrap();
    assert_eq!(t.chunks_written, None);
    assert_eq!(t.damage.len(), 1, "{:?}", t.damage);
    assert!(
        t.damage[0].reason.contains("count of chunks"),
        "{:?}",
        t.damage
    );
    assert_eq!(t.api.len(), 10);
}

/// A version-2 log: the same layout without a chunk count, with plain loss counters.
fn version_2(bytes: &mut [u8]) {
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = crc32(&bytes[..40]);
    bytes[40..44].copy_from_slice(&crc.to_le_bytes());
    set_word(bytes, CHUNKS_AT, 0);
}

#[test]
fn version_2_logs_are_still_read_with_their_counters_bounded() {
    let mut bytes = log(2, 10, false);
    version_2(&mut bytes);
    set_word(
        &mut bytes,
        HeaderCounter::Loss(LossCause::NoSpace).offset(),
        12,
    );
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!((t.api.len(), t.losses.get(LossCause::NoSpace)), (20, 12));
    assert!(
        t.damage.is_empty() && t.chunks_written.is_none(),
        "{:?}",
        t.damage
    );
    // Without a count, a cut at a boundary cannot be seen; a repeat still can.
    let t = ProcessTrace::from_bytes(&bytes[..chunk_at(1)]).unwrap();
    assert!(t.damage.is_empty());
    let mut repeated = bytes.clone();
    repeated.extend_from_slice(&bytes[chunk_at(0)..chunk_at(1)]);
    let t = ProcessTrace::from_bytes(&repeated).unwrap();
    assert_eq!((t.api.len(), t.damage.len()), (20, 1));
    // Its counters are believed up to what a process can lose, never 2^64 - 1.
    set_word(
        &mut bytes,
        HeaderCounter::Loss(LossCause::NoSpace).offset(),
        u64::MAX,
    );
    let t = ProcessTrace::from_bytes(&bytes).unwrap();
    assert_eq!(t.losses.total(), 0);
    assert!(t.damage[0].reason.contains("no-space"), "{:?}", t.damage);
}

#[test]
fn unreadable_logs_say_why() {
    let err = |b: &[u8]| ProcessTrace::from_bytes(b).unwrap_err().to_string();
    assert!(err(b"").contains("empty"), "{}", err(b""));
    assert!(err(b"RPRFLOG\0 short").contains("shorter"));
    let mut bytes = log(1, 1, false);
    bytes[8] = 9;
    // The version is checked after the header checksum: re-checksum to reach it.
    let crc = crc32(&bytes[..40]);
    bytes[40..44].copy_from_slice(&crc.to_le_bytes());
    let e = ProcessTrace::from_bytes(&bytes).unwrap_err();
    assert!(matches!(e, LogError::Version(9)), "{e}");
    assert!(e.to_string().contains("reads versions 2 to 6"), "{e}");
    let garbage = vec![0x77u8; HEADER_LEN + CHUNK_SIZE];
    assert!(err(&garbage).contains("no recognisable chunk"));
}

/// A reflected CRC-32 with polynomial `poly`, bit by bit: an independent check of the log's
/// checksums.
fn crc_bitwise(bytes: &[u8], poly: u32) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ poly
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// CRC-32C (Castagnoli): the chunk checksum from version 6.
fn crc32c(bytes: &[u8]) -> u32 {
    crc_bitwise(bytes, 0x82F6_3B78)
}

/// CRC-32 (IEEE): the header checksum, and the chunk checksum up to version 5.
fn crc32(bytes: &[u8]) -> u32 {
    crc_bitwise(bytes, 0xEDB8_8320)
}

#[test]
fn the_longest_strings_are_cut_to_fit_an_empty_chunk_not_dropped() {
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| {
        assert!(f.push_string(p, 7, &"é".repeat(40_000)))
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    let text = t.string(7);
    assert!(
        text.len() > 65_000 && text.len() <= MAX_CUT_STRING && text.chars().all(|c| c == 'é'),
        "{}",
        text.len()
    );
    // The cut is known, with the full length (issue 23, case 6).
    assert_eq!(t.cut_strings.get(&7), Some(&80_000));
    assert_eq!(t.losses.total(), 0, "a cut string is not a lost record");
}

#[test]
fn strings_that_fit_are_not_cut_and_ones_that_do_not_are_counted() {
    for (len, cut) in [
        (MAX_STRING, false),
        (MAX_STRING + 1, true),
        (70 * 1024, true),
        (75_000, true),
        (1 << 20, true),
    ] {
        let mut b = LogBuilder::new(header());
        b.chunk(true, |f, p| assert!(f.push_string(p, 9, &"m".repeat(len))));
        let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
        assert_eq!(
            t.cut_strings.get(&9).copied(),
            cut.then_some(len as u64),
            "{len}"
        );
        let kept = if cut { MAX_CUT_STRING } else { len };
        assert_eq!(t.string(9).len(), kept, "{len}");
    }
}

#[test]
fn a_cut_string_that_claims_to_be_no_longer_than_its_text_is_malformed() {
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| {
        let text = b"short";
        assert!(f.push_parts(
            p,
            Tag::StringCut,
            &[&3u32.to_le_bytes(), &5u64.to_le_bytes(), text]
        ));
        assert!(f.push_parts(p, Tag::StringCut, &[&[1, 2, 3]]));
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert!(t.cut_strings.is_empty());
    assert_eq!(t.losses.get(LossCause::Malformed), 2);
}

#[test]
fn a_full_chunk_refuses_instead_of_overflowing() {
    let mut payload = vec![0u8; CHUNK_CAPACITY];
    let mut f = ChunkFill::default();
    let mut n = 0;
    while f.push(&mut payload, &api(n)) {
        n += 1;
    }
    assert_eq!(n as usize, CHUNK_CAPACITY / 36);
    assert!(f.len() <= CHUNK_CAPACITY);
    assert!(!f.push_json(&mut payload, &"x".repeat(70_000)));
    assert_eq!(f.entries() as u64, n);
}

#[test]
fn documents_are_typed_and_unknown_ones_counted_as_malformed() {
    use trace_records::docs::*;
    let exit = Document::Exit(ExitFacts {
        runtimes_loaded: vec![RuntimeLibrary::Hip],
        ..Default::default()
    });
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| {
        assert!(f.push_json(p, &exit.to_json()));
        assert!(f.push_json(p, r#"{"kind":"from-the-future"}"#));
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(
        t.docs.exit.as_ref().unwrap().runtimes_loaded,
        vec![RuntimeLibrary::Hip]
    );
    assert_eq!(t.losses.get(LossCause::Malformed), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Flipping any bit anywhere after the file header loses at most the one chunk it lies in,
    /// and that loss is reported; truncating anywhere keeps every whole chunk before the cut.
    /// Neither ever panics.
    #[test]
    fn damage_anywhere_is_contained(flip in 0usize..(4 * CHUNK_SIZE), bit in 0u8..8, cut in 0usize..(4 * CHUNK_SIZE)) {
        let per = 25u64;
        let bytes = log(4, per, true);
        let mut corrupt = bytes.clone();
        let at = HEADER_LEN + flip;
        corrupt[at] ^= 1 << bit;
        let t = ProcessTrace::from_bytes(&corrupt).unwrap();
        let chunk = (at - HEADER_LEN) / CHUNK_SIZE;
        // Bytes past a chunk's commit are not read; any other flip is detected (the last chunk
        // is open: its payload has no checksum, but a flip in its header or entry framing is
        // still caught, and a flip in a record's value is the one thing no reader can see).
        let lost = t.damage.len();
        prop_assert!(lost <= 1);
        if lost == 1 {
            prop_assert_eq!(t.damage[0].offset, chunk_at(chunk) as u64);
            prop_assert_eq!(t.api.len() as u64, 3 * per, "the damaged chunk's records only");
        } else {
            prop_assert_eq!(t.api.len() as u64, 4 * per);
        }

        let len = (HEADER_LEN + cut).min(bytes.len());
        let t = ProcessTrace::from_bytes(&bytes[..len]).unwrap();
        let whole = (len - HEADER_LEN) / CHUNK_SIZE;
        prop_assert_eq!(t.api.len() as u64, whole as u64 * per);
    }

    /// Arbitrary bytes behind a valid header: the reader never panics, never reports more
    /// records than the bytes could hold, and says what was damaged.
    #[test]
    fn arbitrary_chunks_never_panic(junk in proptest::collection::vec(any::<u8>(), 0..(2 * CHUNK_SIZE))) {
        let mut bytes = header().encode();
        bytes.extend_from_slice(&junk);
        let t = ProcessTrace::from_bytes(&bytes).unwrap();
        prop_assert!(t.api.len() <= junk.len() / 36);
    }
}
