use super::*;
use proptest::prelude::*;

fn vector_add() -> Kernel {
    KernelBuilder::new("_Z10vector_addPKfS0_Pfj")
        .host_symbol("wslsim_vector_add")
        .kernarg(28, 8)
        .group_segment_size(1024)
        .private_segment_size(16)
        .vgprs(24)
        .sgprs(40)
        .costs(12, 5, 300)
        .build()
        .unwrap()
}

#[test]
fn round_trip_keeps_every_field() {
    let second = KernelBuilder::new("k2")
        .impl_address(0xDEAD_BEEF_0000)
        .wave32(false)
        .vgprs(17)
        .build()
        .unwrap();
    let bytes = CodeObjectBuilder::new()
        .kernel(vector_add())
        .kernel(second.clone())
        .to_bytes();
    assert_eq!(bytes.len(), HEADER_SIZE + 2 * RECORD_SIZE);
    assert_eq!(&bytes[..8], b"WSLSIMCO");
    assert_eq!(u32_at(&bytes, 8), 1);
    assert_eq!(u32_at(&bytes, 12), 2);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed, vec![vector_add(), second]);
    assert_eq!(parsed[0].symbol_name(), "_Z10vector_addPKfS0_Pfj.kd");
}

#[test]
fn record_offsets_follow_the_spec() {
    let bytes = CodeObjectBuilder::new().kernel(vector_add()).to_bytes();
    let record = &bytes[HEADER_SIZE..];
    assert_eq!(&record[..23], b"_Z10vector_addPKfS0_Pfj");
    assert_eq!(record[23], 0);
    assert_eq!(&record[128..145], b"wslsim_vector_add");
    assert_eq!(u64_at(record, 192), 0);
    assert_eq!(u32_at(record, 200), 12);
    assert_eq!(u32_at(record, 204), 5);
    assert_eq!(u32_at(record, 208), 300);
    assert_eq!(u32_at(record, 212), 8);
    assert!(record[216..256].iter().all(|&b| b == 0));
    let kd = &record[256..320];
    assert_eq!(u32_at(kd, 0), 1024);
    assert_eq!(u32_at(kd, 4), 16);
    assert_eq!(u32_at(kd, 8), 28);
    assert_eq!(u64_at(kd, 16), 256);
    assert_eq!(u16_at(kd, 56) & (1 << 10), 1 << 10);
    assert!(record[320..384].iter().all(|&b| b == 0));
}

#[test]
fn register_counts_are_encoded_in_rsrc1_granules() {
    // wave32: 24 VGPRs = 3 granules of 8 -> field 2; decoded back as 24.
    let kernel = vector_add();
    assert_eq!(kernel.descriptor.rsrc1() & 0x3F, 2);
    assert_eq!(kernel.descriptor.arch_vgpr_count(), 24);
    // 40 SGPRs -> 3 granules of 16 -> field 4; pre-gfx10 decoding gives 48, gfx10+ 128.
    assert_eq!((kernel.descriptor.rsrc1() >> 6) & 0xF, 4);
    assert_eq!(kernel.descriptor.sgpr_count(9), 48);
    assert_eq!(kernel.descriptor.sgpr_count(11), 128);
    // wave64: granule of 4; 17 -> 5 granules -> field 4 -> 20.
    let wave64 = KernelBuilder::new("w")
        .wave32(false)
        .vgprs(17)
        .build()
        .unwrap();
    assert_eq!(wave64.descriptor.wave_size(), 64);
    assert_eq!(wave64.descriptor.rsrc1() & 0x3F, 4);
    assert_eq!(wave64.descriptor.arch_vgpr_count(), 20);
    // Saturation instead of overflow into the SGPR field.
    let huge = KernelBuilder::new("h")
        .vgprs(10_000)
        .sgprs(10_000)
        .build()
        .unwrap();
    assert_eq!(huge.descriptor.rsrc1() & 0x3F, 0x3F);
    assert_eq!((huge.descriptor.rsrc1() >> 6) & 0xF, 0xE);
}

#[test]
fn builder_rejects_bad_names() {
    assert!(matches!(
        KernelBuilder::new("").build(),
        Err(BuildError::BadName(_))
    ));
    assert!(matches!(
        KernelBuilder::new("a\0b").build(),
        Err(BuildError::BadName(_))
    ));
    let long = "k".repeat(128);
    assert!(matches!(
        KernelBuilder::new(&long).build(),
        Err(BuildError::BadName(_))
    ));
    assert!(KernelBuilder::new(&"k".repeat(127)).build().is_ok());
    let host = "h".repeat(64);
    assert!(matches!(
        KernelBuilder::new("k").host_symbol(&host).build(),
        Err(BuildError::BadHostSymbol(_))
    ));
}

#[test]
fn malformed_input_is_an_error() {
    let good = CodeObjectBuilder::new().kernel(vector_add()).to_bytes();
    assert_eq!(
        parse(&good[..10]),
        Err(ParseError::Truncated {
            needed: 16,
            actual: 10
        })
    );
    assert_eq!(
        parse(&good[..good.len() - 1]),
        Err(ParseError::Truncated {
            needed: good.len(),
            actual: good.len() - 1
        })
    );
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    assert_eq!(parse(&bad_magic), Err(ParseError::BadMagic));
    let mut bad_version = good.clone();
    bad_version[8] = 2;
    assert_eq!(parse(&bad_version), Err(ParseError::UnsupportedVersion(2)));
    let mut huge_count = good.clone();
    huge_count[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        parse(&huge_count),
        Err(ParseError::Truncated { .. })
    ));
    let mut unterminated = good.clone();
    unterminated[HEADER_SIZE..HEADER_SIZE + 128].fill(b'a');
    assert_eq!(parse(&unterminated), Err(ParseError::BadName { index: 0 }));
    let mut empty_name = good.clone();
    empty_name[HEADER_SIZE] = 0;
    assert_eq!(parse(&empty_name), Err(ParseError::BadName { index: 0 }));
    let mut bad_host = good.clone();
    bad_host[HEADER_SIZE + 128..HEADER_SIZE + 192].fill(b'h');
    assert_eq!(
        parse(&bad_host),
        Err(ParseError::BadHostSymbol { index: 0 })
    );
    let mut not_utf8 = good;
    not_utf8[HEADER_SIZE] = 0xFF;
    assert_eq!(parse(&not_utf8), Err(ParseError::BadName { index: 0 }));
}

#[test]
fn empty_code_object_and_trailing_bytes() {
    let empty = CodeObjectBuilder::new().to_bytes();
    assert_eq!(parse(&empty), Ok(vec![]));
    let mut trailing = CodeObjectBuilder::new().kernel(vector_add()).to_bytes();
    trailing.extend_from_slice(&[1, 2, 3]);
    assert_eq!(parse(&trailing).unwrap().len(), 1);
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_mutated_objects(
        flips in proptest::collection::vec((0usize..(HEADER_SIZE + 2 * RECORD_SIZE), any::<u8>()), 0..16),
        cut in 0usize..(HEADER_SIZE + 2 * RECORD_SIZE + 1),
    ) {
        let mut bytes = CodeObjectBuilder::new().kernel(vector_add()).kernel(vector_add()).to_bytes();
        for (at, value) in flips {
            bytes[at] = value;
        }
        bytes.truncate(cut);
        let _ = parse(&bytes);
    }

    #[test]
    fn round_trip_any_kernel(
        name in "[A-Za-z_][A-Za-z0-9_]{0,126}",
        host in "[A-Za-z0-9_]{0,63}",
        address in any::<u64>(),
        costs in (any::<u32>(), any::<u32>(), any::<u32>()),
        vgprs in 1u32..=256,
        wave32 in any::<bool>(),
    ) {
        let kernel = KernelBuilder::new(&name)
            .host_symbol(&host)
            .impl_address(address)
            .costs(costs.0, costs.1, costs.2)
            .vgprs(vgprs)
            .wave32(wave32)
            .build()
            .unwrap();
        let parsed = parse(&encode(std::slice::from_ref(&kernel))).unwrap();
        prop_assert_eq!(&parsed[0], &kernel);
        let granule = if wave32 { 8 } else { 4 };
        let decoded = parsed[0].descriptor.arch_vgpr_count();
        prop_assert!(decoded >= vgprs.min(64 * granule) && decoded < vgprs.max(1) + granule);
    }
}
