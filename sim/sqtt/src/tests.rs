use proptest::prelude::*;

use crate::marker::{CodeObjectMarker, MarkerDecoder, field, field_header};
use crate::*;

const WAVE: WaveKey = WaveKey {
    cu: 2,
    simd: 1,
    slot: 7,
};

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn header_bytes_are_exact() {
    let bytes = Encoder::with_header(Header {
        gfxip_major: 11,
        shader_engine: 3,
    })
    .finish();
    assert_eq!(bytes.len(), 16);
    assert_eq!(&bytes[..4], b"WSQT");
    assert_eq!(words(&bytes), [0x5451_5357, 1, 0x030B, 0]);
    let stream = parse(&bytes).unwrap();
    assert_eq!(stream.header.shader_engine, 3);
    assert_eq!(stream.header.gfxip_major, 11);
    assert!(stream.tokens.is_empty());
    assert!(!stream.truncated);
}

#[test]
fn token_bytes_are_exact() {
    let mut enc = Encoder::new();
    enc.timestamp(0x1_0000_0005)
        .reg_write(0xC342, 0xDEAD_BEEF)
        .wave_start(WAVE, 0x1_0000_0007, 0x7F00_1234_5678)
        .instruction(
            WAVE,
            Instruction {
                pc: 0x7F00_1234_5680,
                category: Category::VALU,
                time: 0x1_0000_0009,
                duration: 12,
                stall: 3,
            },
        )
        .wave_end(WAVE, 0x1_0000_0020)
        .data_lost(4096);
    let w = words(&enc.finish());
    let key = 0x0007_0102;
    assert_eq!(
        &w[4..],
        [
            0x0000_0201,
            5,
            1,
            0x0000_0202,
            0xC342,
            0xDEAD_BEEF,
            0x0000_0403,
            key,
            2,
            0x1234_5678,
            0x7F00,
            0x0006_0604,
            key,
            4,
            0x1234_5680,
            0x7F00,
            12,
            3,
            0x0000_0205,
            key,
            0x1B,
            0x0000_0106,
            4096,
        ]
    );
}

#[test]
fn time_tokens_are_inserted_when_needed() {
    let mut enc = Encoder::new();
    enc.wave_start(WAVE, 10, 0) // within u32 of the initial base 0: no TIME
        .wave_end(WAVE, 1 << 40) // too far ahead
        .wave_start(WAVE, 5, 0) // backwards
        .wave_end(WAVE, 5 + u64::from(u32::MAX)) // exactly representable
        .wave_end(WAVE, u64::MAX);
    let stream = parse(&enc.finish()).unwrap();
    assert_eq!(
        stream.tokens,
        [
            Token::WaveStart {
                wave: WAVE,
                time: 10,
                entry_pc: 0
            },
            Token::Time(1 << 40),
            Token::WaveEnd {
                wave: WAVE,
                time: 1 << 40
            },
            Token::Time(5),
            Token::WaveStart {
                wave: WAVE,
                time: 5,
                entry_pc: 0
            },
            Token::WaveEnd {
                wave: WAVE,
                time: 5 + u64::from(u32::MAX)
            },
            Token::Time(u64::MAX),
            Token::WaveEnd {
                wave: WAVE,
                time: u64::MAX
            },
        ]
    );
}

#[test]
fn foreign_buffers_are_rejected() {
    assert_eq!(parse(&[]), Err(ParseError::TooShort { len: 0 }));
    assert_eq!(parse(&[0; 15]), Err(ParseError::TooShort { len: 15 }));
    assert_eq!(parse(&[0; 4096]), Err(ParseError::BadMagic { found: 0 }));
    let mut bytes = Encoder::new().finish();
    bytes[4] = 2;
    assert_eq!(
        parse(&bytes),
        Err(ParseError::UnsupportedVersion { found: 2 })
    );
    let mut bytes = Encoder::new().finish();
    bytes[12] = 1;
    assert_eq!(parse(&bytes), Err(ParseError::ReservedBits { offset: 8 }));
    // A valid header followed by zeros: opcode 0 is not a token.
    let mut bytes = Encoder::new().finish();
    bytes.extend_from_slice(&[0; 64]);
    assert_eq!(
        parse(&bytes),
        Err(ParseError::UnknownOpcode {
            offset: 16,
            opcode: 0
        })
    );
}

#[test]
fn malformed_tokens_are_rejected() {
    let base = Encoder::new().finish();
    let with = |extra: &[u32]| {
        let mut bytes = base.clone();
        for w in extra {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        parse(&bytes)
    };
    assert_eq!(
        with(&[0x0000_0301, 0, 0, 0]),
        Err(ParseError::BadLength {
            offset: 16,
            opcode: 1,
            len: 3
        })
    );
    assert_eq!(
        with(&[0x0001_0201, 0, 0]),
        Err(ParseError::ReservedBits { offset: 16 })
    );
    // INST may use aux bits 16-23 (category) but not 24-31.
    assert_eq!(
        with(&[0x0100_0604, 0, 0, 0, 0, 0, 0]),
        Err(ParseError::ReservedBits { offset: 16 })
    );
    // A wave key with reserved bits.
    assert_eq!(
        with(&[0x0000_0205, 0x0100_0000, 0]),
        Err(ParseError::ReservedBits { offset: 16 })
    );
    assert_eq!(
        with(&[0x0000_0201, u32::MAX, u32::MAX, 0x0000_0205, 0, 1]),
        Err(ParseError::TimeOverflow { offset: 28 })
    );
    assert!(with(&[0x0000_0207]).is_err());
}

#[test]
fn truncated_streams_keep_their_whole_tokens() {
    let mut enc = Encoder::new();
    enc.wave_start(WAVE, 1, 0).wave_end(WAVE, 2);
    let bytes = enc.finish();
    let full = parse(&bytes).unwrap();
    assert_eq!(full.tokens.len(), 2);
    for cut in 16..bytes.len() {
        let stream = parse(&bytes[..cut]).unwrap();
        let whole = if cut >= 16 + 20 { 1 } else { 0 };
        assert_eq!(stream.tokens, full.tokens[..whole], "cut at {cut}");
        assert_eq!(stream.truncated, cut != 16 && cut != 36, "cut at {cut}");
    }
}

#[test]
fn bounded_streams_end_with_data_lost() {
    let mut enc = Encoder::new();
    for i in 0..10 {
        enc.wave_start(WAVE, i * 100, 0)
            .wave_end(WAVE, i * 100 + 50);
    }
    let full = enc.clone().finish();
    assert_eq!(enc.clone().finish_bounded(full.len()), full);
    let bounded = enc.clone().finish_bounded(100);
    assert!(bounded.len() <= 100);
    let stream = parse(&bounded).unwrap();
    // 100 - 16 - 8 = 76 bytes of room: two WAVE_START (20) + WAVE_END (12) pairs fit (64);
    // the next WAVE_START would need 84.
    assert_eq!(stream.tokens.len(), 5);
    assert_eq!(
        stream.tokens[4],
        Token::DataLost {
            dropped_bytes: (full.len() - 16 - 64) as u32
        }
    );
    let tiny = enc.finish_bounded(0);
    assert_eq!(tiny.len(), 24);
    assert_eq!(
        parse(&tiny).unwrap().tokens,
        [Token::DataLost {
            dropped_bytes: (full.len() - 16) as u32
        }]
    );
}

#[test]
fn marker_words_follow_the_protocol() {
    let small = CodeObjectMarker {
        id: 5,
        addr: 0x7F12_3456_0000,
        size: 0x2000,
        unload: false,
        from_start: true,
    };
    assert_eq!(
        small.words(),
        [
            field_header(field::ADDR_LO),
            0x3456_0000,
            field_header(field::ADDR_HI),
            0x7F12,
            field_header(field::SIZE_LO),
            0x2000,
            field_header(field::SIZE_HI),
            0,
            field_header(field::TAIL),
            5 << 2 | 2,
        ]
    );
    assert_eq!(field_header(field::TAIL), 0x604);
    let big = CodeObjectMarker {
        id: (1 << 30) + 7,
        unload: true,
        ..small
    };
    let w = big.words();
    assert_eq!(w.len(), 14);
    assert_eq!(&w[8..], [0x404, (1 << 30) + 7, 0x504, 0, 0x604, 7 << 2 | 3]);
}

#[test]
fn markers_need_the_preamble() {
    let marker = CodeObjectMarker {
        id: 3,
        addr: 0x1000,
        size: 0x100,
        unload: false,
        from_start: false,
    };
    let mut dec = MarkerDecoder::new();
    assert!(marker.words().into_iter().all(|w| dec.feed(w).is_none()));
    // The magic followed by anything but the version does not open the protocol.
    assert!(dec.feed(ROC_MAGIC).is_none());
    assert!(dec.feed(1).is_none());
    assert!(!dec.active());
    assert!(marker.words().into_iter().all(|w| dec.feed(w).is_none()));
    dec.feed(ROC_MAGIC);
    dec.feed(ROC_VERSION);
    assert!(dec.active());
    let got: Vec<_> = marker
        .words()
        .into_iter()
        .filter_map(|w| dec.feed(w))
        .collect();
    assert_eq!(got, [marker]);
}

#[test]
fn stray_user_data_drops_a_partial_marker() {
    let marker = CodeObjectMarker {
        id: 9,
        addr: 0xAAAA_0000,
        size: 0x40,
        unload: false,
        from_start: false,
    };
    let mut dec = MarkerDecoder::new();
    dec.feed(ROC_MAGIC);
    dec.feed(ROC_VERSION);
    let words = marker.words();
    for &w in &words[..4] {
        assert!(dec.feed(w).is_none());
    }
    assert!(dec.feed(0x1234_5678).is_none()); // not a field header
    for &w in &words[4..] {
        assert!(dec.feed(w).is_none()); // no ADDR fields any more
    }
    let got: Vec<_> = words.iter().filter_map(|&w| dec.feed(w)).collect();
    assert_eq!(got, [marker]);
}

fn wave_key() -> impl Strategy<Value = WaveKey> {
    (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(cu, simd, slot)| WaveKey { cu, simd, slot })
}

/// Times near a few bases, so deltas both fit and do not.
fn time() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..1_000u64,
        (1u64 << 36)..(1u64 << 36) + 10_000,
        any::<u64>(),
        Just(u64::MAX),
    ]
}

fn token() -> impl Strategy<Value = Token> {
    prop_oneof![
        time().prop_map(Token::Time),
        (any::<u32>(), any::<u32>())
            .prop_map(|(register, value)| Token::RegWrite { register, value }),
        (wave_key(), time(), any::<u64>()).prop_map(|(wave, time, entry_pc)| Token::WaveStart {
            wave,
            time,
            entry_pc
        }),
        (
            wave_key(),
            any::<u64>(),
            any::<u8>(),
            time(),
            any::<u32>(),
            any::<u32>()
        )
            .prop_map(|(wave, pc, category, time, duration, stall)| {
                Token::Instruction {
                    wave,
                    inst: Instruction {
                        pc,
                        category: Category(category),
                        time,
                        duration,
                        stall,
                    },
                }
            }),
        (wave_key(), time()).prop_map(|(wave, time)| Token::WaveEnd { wave, time }),
        any::<u32>().prop_map(|dropped_bytes| Token::DataLost { dropped_bytes }),
    ]
}

fn encode(tokens: &[Token]) -> Vec<u8> {
    let mut enc = Encoder::new();
    for t in tokens {
        enc.token(t);
    }
    enc.finish()
}

fn untimed(tokens: &[Token]) -> Vec<Token> {
    tokens
        .iter()
        .copied()
        .filter(|t| !matches!(t, Token::Time(_)))
        .collect()
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn random_bytes_after_a_header_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        let mut stream = Encoder::new().finish();
        stream.extend_from_slice(&bytes);
        let _ = parse(&stream);
    }

    #[test]
    fn random_words_after_a_header_never_panic(
        words in proptest::collection::vec(
            prop_oneof![any::<u32>(), (1u32..=6, 0u32..8).prop_map(|(op, len)| op | len << 8)],
            0..128,
        )
    ) {
        let mut stream = Encoder::new().finish();
        for w in words {
            stream.extend_from_slice(&w.to_le_bytes());
        }
        let _ = parse(&stream);
    }

    #[test]
    fn encode_parse_round_trips(tokens in proptest::collection::vec(token(), 0..64)) {
        let stream = parse(&encode(&tokens)).unwrap();
        prop_assert!(!stream.truncated);
        prop_assert_eq!(untimed(&stream.tokens), untimed(&tokens));
        // The explicit TIME tokens are a subsequence of the parsed ones (others are inserted).
        let mut parsed = stream.tokens.iter().filter(|t| matches!(t, Token::Time(_)));
        for t in tokens.iter().filter(|t| matches!(t, Token::Time(_))) {
            prop_assert!(parsed.any(|p| p == t));
        }
        // Re-encoding the parsed tokens gives the same bytes.
        prop_assert_eq!(encode(&stream.tokens), encode(&tokens));
    }

    #[test]
    fn cut_streams_parse_to_a_prefix(
        tokens in proptest::collection::vec(token(), 0..32),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = encode(&tokens);
        let full = parse(&bytes).unwrap();
        let at = 16 + cut.index(bytes.len() - 15);
        let stream = parse(&bytes[..at]).unwrap();
        prop_assert!(full.tokens.starts_with(&stream.tokens));
        // Encoding is sequential, so the kept tokens re-encode to the bytes before the cut's
        // token boundary; the stream is truncated iff the cut is not at that boundary.
        prop_assert_eq!(stream.truncated, encode(&stream.tokens).len() != at);
    }

    #[test]
    fn dwords_from_are_the_bytes_from_that_dword(
        tokens in proptest::collection::vec(token(), 0..32),
        from in 0usize..80,
    ) {
        let mut enc = Encoder::new();
        for t in &tokens {
            enc.token(t);
        }
        let bytes = enc.bytes();
        let words: Vec<u8> = enc.dwords_from(from).flat_map(u32::to_le_bytes).collect();
        prop_assert_eq!(&words[..], bytes.get(4 * from..).unwrap_or_default());
    }

    #[test]
    fn bounded_streams_fit_and_parse(
        tokens in proptest::collection::vec(token(), 0..32),
        capacity in 0usize..1024,
    ) {
        let mut enc = Encoder::new();
        for t in &tokens {
            enc.token(t);
        }
        let full = parse(&enc.clone().finish()).unwrap();
        let bytes = enc.finish_bounded(capacity);
        prop_assert!(bytes.len() <= capacity.max(24));
        let stream = parse(&bytes).unwrap();
        prop_assert!(!stream.truncated);
        if stream.tokens != full.tokens {
            let (last, kept) = stream.tokens.split_last().unwrap();
            let lost = matches!(last, Token::DataLost { .. });
            prop_assert!(lost);
            prop_assert!(full.tokens.starts_with(kept));
        }
    }

    #[test]
    fn markers_round_trip(
        markers in proptest::collection::vec(
            (any::<u64>(), any::<u64>(), any::<u64>(), any::<bool>(), any::<bool>(), 0u64..4),
            0..8,
        )
    ) {
        let markers: Vec<CodeObjectMarker> = markers
            .into_iter()
            .map(|(id, addr, size, unload, from_start, small)| CodeObjectMarker {
                // Some small ids (legacy form only), some large (ID_LO/ID_HI).
                id: if small == 0 { id % (1 << 30) } else { id },
                addr,
                size,
                unload,
                from_start,
            })
            .collect();
        let mut enc = Encoder::new();
        enc.roc_preamble();
        for m in &markers {
            enc.code_object_marker(m.id, m.addr, m.size, m.unload, m.from_start);
            enc.wave_end(WAVE, m.addr); // other tokens in between do not matter
        }
        let stream = parse(&enc.finish()).unwrap();
        let mut dec = MarkerDecoder::new();
        let got: Vec<_> = stream
            .tokens
            .iter()
            .filter_map(|t| match *t {
                Token::RegWrite { register: USERDATA_2, value } => dec.feed(value),
                _ => None,
            })
            .collect();
        prop_assert_eq!(got, markers);
    }

    #[test]
    fn random_user_data_never_panics(words in proptest::collection::vec(any::<u32>(), 0..256)) {
        let mut dec = MarkerDecoder::new();
        dec.feed(ROC_MAGIC);
        dec.feed(ROC_VERSION);
        for w in words {
            let _ = dec.feed(w);
        }
    }
}
