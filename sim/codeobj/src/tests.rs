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
    let builder = CodeObjectBuilder::new()
        .kernel(vector_add())
        .kernel(second.clone());
    let bytes = builder.to_bytes();
    assert_eq!(&bytes[..8], b"WSLSIMCO");
    assert_eq!(u32_at(&bytes, 8), 2);
    assert_eq!(u32_at(&bytes, 12), 2);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed, builder.placed_kernels());
    assert_eq!(parsed[0].symbol_name(), "_Z10vector_addPKfS0_Pfj.kd");
    // Everything but the placement is what the builder made.
    for (parsed, built) in parsed.iter().zip([vector_add(), second]) {
        let mut unplaced = parsed.clone();
        unplaced.code_offset = 0;
        unplaced.code_len = 0;
        unplaced.descriptor = unplaced.descriptor.with_kernel_code_entry_byte_offset(0);
        assert_eq!(unplaced, built);
    }
    // Codes: 256-aligned after the records, in kernel order, each its kernel's program.
    let records_end = (HEADER_SIZE + 2 * RECORD_SIZE) as u64;
    assert_eq!(parsed[0].code_offset, 1024);
    assert!(parsed[0].code_offset >= records_end);
    assert_eq!(
        parsed[0].code_len,
        encode_program(&program(5, 12)).len() as u64
    );
    assert_eq!(parsed[1].code_offset, 1024 + 256);
    assert_eq!(parsed[1].code_len, 4, "k2 has no costs: only s_endpgm");
    assert_eq!(
        bytes.len() as u64,
        parsed[1].code_offset + parsed[1].code_len
    );
    assert_eq!(
        parsed[0].code(&bytes).unwrap(),
        encode_program(&program(5, 12))
    );
    assert!(bytes[784..1024].iter().all(|&b| b == 0));
}

#[test]
fn entry_offset_points_from_the_descriptor_to_the_code() {
    let bytes = CodeObjectBuilder::new()
        .kernel(vector_add())
        .kernel(vector_add())
        .kernel(vector_add())
        .to_bytes();
    for (index, kernel) in parse(&bytes).unwrap().iter().enumerate() {
        let descriptor_at = (HEADER_SIZE + index * RECORD_SIZE + 256) as i64;
        let entry = kernel.descriptor.kernel_code_entry_byte_offset();
        assert_eq!(descriptor_at + entry, kernel.code_offset as i64);
        assert_eq!(kernel.code_offset % 256, 0);
        let code = kernel.code(&bytes).unwrap();
        assert_eq!(decode_program(code).unwrap(), kernel.program());
    }
}

/// The v1 bytes of `kernels`: records only, entry offset 256, version 1.
fn version_1(kernels: &[Kernel]) -> Vec<u8> {
    let v2 = encode(kernels);
    let mut v1 = v2[..HEADER_SIZE + kernels.len() * RECORD_SIZE].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    for index in 0..kernels.len() {
        let record = HEADER_SIZE + index * RECORD_SIZE;
        v1[record + 216..record + 220].fill(0);
        let entry = record + 256 + kd::KERNEL_CODE_ENTRY_BYTE_OFFSET;
        v1[entry..entry + 8].copy_from_slice(&256i64.to_le_bytes());
    }
    v1
}

#[test]
fn version_1_files_are_still_read() {
    let bytes = version_1(&[vector_add(), KernelBuilder::new("k").build().unwrap()]);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[0].name, "_Z10vector_addPKfS0_Pfj");
    assert_eq!(parsed[0].valu_per_wave, 12);
    assert_eq!((parsed[0].code_offset, parsed[0].code_len), (0, 0));
    assert_eq!(parsed[0].code_range(), None);
    assert_eq!(parsed[0].code(&bytes), None);
    assert_eq!(parsed[0].descriptor.kernel_code_entry_byte_offset(), 256);
    assert_eq!(instruction_at(&bytes, 16), None);
    // Re-encoding writes version 2 with code.
    let again = parse(&encode(&parsed)).unwrap();
    assert_eq!(
        again[0].code_len,
        encode_program(&program(5, 12)).len() as u64
    );
}

#[test]
fn instruction_at_finds_every_instruction() {
    let bytes = CodeObjectBuilder::new()
        .kernel(vector_add())
        .kernel(KernelBuilder::new("k").costs(3, 9, 0).build().unwrap())
        .to_bytes();
    let kernels = parse(&bytes).unwrap();
    for (index, kernel) in kernels.iter().enumerate() {
        for instruction in kernel.program() {
            let vaddr = kernel.code_offset + instruction.offset;
            assert_eq!(
                instruction_at(&bytes, vaddr),
                Some((index, instruction.clone()))
            );
            if instruction.size == 8 {
                assert_eq!(instruction_at(&bytes, vaddr + 4), None, "mid-instruction");
            }
        }
        let end = kernel.code_offset + kernel.code_len;
        assert_eq!(instruction_at(&bytes, end), None);
    }
    assert_eq!(instruction_at(&bytes, 0), None);
    assert_eq!(instruction_at(&bytes, kernels[0].code_offset - 4), None);
    assert_eq!(instruction_at(&bytes, u64::MAX), None);
    assert_eq!(instruction_at(&bytes[..100], 1024), None);
    // The first instruction of vector_add is the scalar load.
    let (index, first) = instruction_at(&bytes, kernels[0].code_offset).unwrap();
    assert_eq!(index, 0);
    assert_eq!(first.text, "s_load_b128 s[0:3], s[0:1], null");
    assert_eq!(first.category, category::SMEM);
}

#[test]
fn huge_costs_are_clamped_in_the_code() {
    let kernel = KernelBuilder::new("big")
        .costs(u32::MAX, u32::MAX, 7)
        .build()
        .unwrap();
    let bytes = encode(std::slice::from_ref(&kernel));
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed[0].valu_per_wave, u32::MAX);
    let code = decode_program(parsed[0].code(&bytes).unwrap()).unwrap();
    assert_eq!(code.len() as u32, 2 * MAX_ENCODED_COUNT + 1);
    assert_eq!(code, kernel.program());
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
    let code_len = encode_program(&program(5, 12)).len();
    assert_eq!(u32_at(record, 216) as usize, code_len);
    assert!(record[220..256].iter().all(|&b| b == 0));
    let kd = &record[256..320];
    assert_eq!(u32_at(kd, 0), 1024);
    assert_eq!(u32_at(kd, 4), 16);
    assert_eq!(u32_at(kd, 8), 28);
    // Code at 512 (the first multiple of 256 after 16 + 384), descriptor at 16 + 256.
    assert_eq!(u64_at(kd, 16), 512 - 272);
    assert_eq!(bytes.len(), 512 + code_len);
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
    bad_version[8] = 3;
    assert_eq!(parse(&bad_version), Err(ParseError::UnsupportedVersion(3)));
    bad_version[8] = 0;
    assert_eq!(parse(&bad_version), Err(ParseError::UnsupportedVersion(0)));
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
fn malformed_code_is_an_error() {
    let builder = CodeObjectBuilder::new()
        .kernel(vector_add())
        .kernel(vector_add());
    let good = builder.to_bytes();
    let kernels = builder.placed_kernels();
    let record = |index: usize| HEADER_SIZE + index * RECORD_SIZE;
    let entry = |index: usize| record(index) + 256 + kd::KERNEL_CODE_ENTRY_BYTE_OFFSET;
    let set_entry = |bytes: &mut Vec<u8>, index: usize, value: i64| {
        bytes[entry(index)..entry(index) + 8].copy_from_slice(&value.to_le_bytes());
    };
    let set_len = |bytes: &mut Vec<u8>, index: usize, value: u32| {
        bytes[record(index) + 216..record(index) + 220].copy_from_slice(&value.to_le_bytes());
    };
    let entry0 = kernels[0].descriptor.kernel_code_entry_byte_offset();

    // Entry offsets: misaligned, inside the records, negative, overflowing, zero.
    for (value, name) in [
        (entry0 + 4, "misaligned"),
        (entry0 - 256 * 4, "inside the records"),
        (-1_000_000, "before the file"),
        (i64::MAX, "overflow"),
        (i64::MIN, "underflow"),
        (0, "the descriptor itself"),
    ] {
        let mut bytes = good.clone();
        set_entry(&mut bytes, 0, value);
        assert_eq!(
            parse(&bytes),
            Err(ParseError::BadCodeRange { index: 0 }),
            "{name}"
        );
    }
    // Zero length.
    let mut bytes = good.clone();
    set_len(&mut bytes, 0, 0);
    assert_eq!(parse(&bytes), Err(ParseError::BadCodeRange { index: 0 }));
    // Kernel 1's code overlapping kernel 0's (or out of order).
    let mut bytes = good.clone();
    let descriptor1 = (record(1) + 256) as i64;
    set_entry(&mut bytes, 1, kernels[0].code_offset as i64 - descriptor1);
    assert_eq!(parse(&bytes), Err(ParseError::BadCodeRange { index: 1 }));
    // Past the end of the file (an aligned start far away, or a huge length).
    let mut bytes = good.clone();
    set_len(&mut bytes, 1, 1 << 30);
    assert!(matches!(parse(&bytes), Err(ParseError::Truncated { .. })));
    let mut bytes = good.clone();
    set_entry(&mut bytes, 1, (1 << 40) - descriptor1);
    assert!(matches!(parse(&bytes), Err(ParseError::Truncated { .. })));
    // A length cutting the last instruction in half, or dropping s_endpgm.
    let len0 = kernels[0].code_len as u32;
    let mut bytes = good.clone();
    set_len(&mut bytes, 0, len0 - 2);
    let last = kernels[0].program().last().unwrap().offset;
    assert_eq!(
        parse(&bytes),
        Err(ParseError::BadInstruction {
            index: 0,
            offset: last
        })
    );
    let mut bytes = good.clone();
    set_len(&mut bytes, 0, len0 - 4);
    let before_last = kernels[0].program()[kernels[0].program().len() - 2].offset;
    assert_eq!(
        parse(&bytes),
        Err(ParseError::BadInstruction {
            index: 0,
            offset: before_last
        })
    );
    // An undecodable word in the middle.
    let mut bytes = good.clone();
    let at = kernels[1].code_offset as usize + 8;
    bytes[at..at + 4].fill(0xFF);
    assert_eq!(
        parse(&bytes),
        Err(ParseError::BadInstruction {
            index: 1,
            offset: 8
        })
    );
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
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
        cut in any::<prop::sample::Index>(),
        version_1_input in any::<bool>(),
    ) {
        let kernels = [vector_add(), vector_add()];
        let mut bytes = if version_1_input { version_1(&kernels) } else { encode(&kernels) };
        let len = bytes.len();
        for (at, value) in flips {
            bytes[at.index(len)] = value;
        }
        bytes.truncate(cut.index(len + 1));
        if let Ok(parsed) = parse(&bytes) {
            // Whatever parses has code that decodes, inside the file.
            for kernel in &parsed {
                if kernel.code_range().is_some() {
                    prop_assert!(decode_program(kernel.code(&bytes).unwrap()).is_some());
                }
            }
        }
        let _ = instruction_at(&bytes, 1024);
    }

    #[test]
    fn parse_never_panics_on_mutated_code(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let bytes_good = encode(&[vector_add(), vector_add()]);
        let code_start = 1024usize;
        let mut bytes = bytes_good.clone();
        let span = bytes.len() - code_start;
        for (at, value) in flips {
            bytes[code_start + at.index(span)] = value;
        }
        match parse(&bytes) {
            Ok(parsed) => prop_assert_eq!(parsed.len(), 2),
            Err(error) => prop_assert!(
                matches!(error, ParseError::BadInstruction { .. }),
                "{:?}",
                error
            ),
        }
    }

    #[test]
    fn round_trip_any_kernel(
        name in "[A-Za-z_][A-Za-z0-9_]{0,126}",
        host in "[A-Za-z0-9_]{0,63}",
        address in any::<u64>(),
        costs in (0u32..300, 0u32..300, any::<u32>()),
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
        let bytes = encode(std::slice::from_ref(&kernel));
        let parsed = parse(&bytes).unwrap();
        prop_assert_eq!(parsed[0].code_offset, 512);
        prop_assert_eq!(parsed[0].descriptor.kernel_code_entry_byte_offset(), 512 - 272);
        let mut unplaced = parsed[0].clone();
        unplaced.code_offset = 0;
        unplaced.code_len = 0;
        unplaced.descriptor = unplaced.descriptor.with_kernel_code_entry_byte_offset(0);
        prop_assert_eq!(&unplaced, &kernel);
        prop_assert_eq!(
            decode_program(parsed[0].code(&bytes).unwrap()).unwrap(),
            program(costs.1, costs.0)
        );
        let granule = if wave32 { 8 } else { 4 };
        let decoded = parsed[0].descriptor.arch_vgpr_count();
        prop_assert!(decoded >= vgprs.min(64 * granule) && decoded < vgprs.max(1) + granule);
    }
}
