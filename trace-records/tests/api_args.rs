//! `Tag::ApiArgs` entries: an API call with its captured words and strings.

use proptest::prelude::*;
use trace_records::{ApiArgs, ApiArgsHeader, ApiRecord};
use zerocopy::IntoBytes;

fn entry(words: &[u64], strings: &[(u8, &str)]) -> Vec<u8> {
    let record = ApiRecord {
        correlation_id: 7,
        start: 100,
        end: 200,
        thread_id: 42,
        operation: 259,
        domain: 5,
        reserved: 0,
    };
    let header = ApiArgsHeader {
        rax: 0,
        int_words: words.len() as u8,
        sse_words: 0,
        stack_words: 0,
        strings: strings.len() as u8,
        reserved: 0,
    };
    let mut b = record.as_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    for w in words {
        b.extend_from_slice(&w.to_le_bytes());
    }
    for (word, s) in strings {
        b.push(*word);
        b.extend_from_slice(&(s.len() as u16).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b
}

#[test]
fn an_entry_reads_back_with_its_words_and_strings() {
    let b = entry(&[1, 2, 3], &[(2, "kernel")]);
    let (r, args) = ApiArgs::parse(&b).expect("well formed");
    assert_eq!((r.thread_id, r.operation, r.domain), (42, 259, 5));
    assert_eq!(args.words, [1, 2, 3]);
    assert_eq!(args.strings, [(2, "kernel".to_owned())]);
    assert_eq!(ApiArgs::key(&r), (42, 100, 200, 5, 259));
}

#[test]
fn malformed_entries_are_refused() {
    let good = entry(&[1, 2], &[(1, "abc")]);
    // Cut anywhere: refused.
    for n in 0..good.len() {
        assert!(ApiArgs::parse(&good[..n]).is_none(), "cut at {n}");
    }
    // Trailing bytes, or a string naming a word that is not there.
    let mut long = good.clone();
    long.push(0);
    assert!(ApiArgs::parse(&long).is_none());
    assert!(ApiArgs::parse(&entry(&[1], &[(5, "x")])).is_none());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = ApiArgs::parse(&bytes);
    }
}
