use super::*;
use proptest::prelude::*;

fn texts(program: &[Instruction]) -> Vec<&str> {
    program.iter().map(|i| i.text.as_str()).collect()
}

#[test]
fn program_5_7_is_this_listing() {
    let p = program(5, 7);
    assert_eq!(
        texts(&p),
        [
            "s_load_b128 s[0:3], s[0:1], null",
            "s_waitcnt lgkmcnt(0)",
            "s_add_u32 s4, s3, s15",
            "s_mul_i32 s5, s4, s14",
            "v_fma_f32 v1, v2, v3, v1",
            "v_add_f32_e32 v1, v1, v2",
            "v_mul_f32_e32 v1, v1, v3",
            "v_add_nc_u32_e32 v0, s7, v0",
            "v_sub_f32_e32 v2, v1, v3",
            "v_mov_b32_e32 v3, v1",
            "v_fma_f32 v2, v3, v4, v2",
            "s_lshl_b32 s6, s5, 2",
            "s_endpgm",
        ]
    );
    let sizes: Vec<u32> = p.iter().map(|i| i.size).collect();
    assert_eq!(sizes, [8, 4, 4, 4, 8, 4, 4, 4, 4, 4, 8, 4, 4]);
    let categories: Vec<u8> = p.iter().map(|i| i.category).collect();
    use category::*;
    assert_eq!(
        categories,
        [
            SMEM, IMMED, SALU, SALU, VALU, VALU, VALU, VALU, VALU, VALU, VALU, SALU, SALU
        ]
    );
    let cycles: Vec<u32> = p.iter().map(|i| i.cycles).collect();
    assert_eq!(cycles, [20, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 1, 1]);
    let mut offset = 0;
    for instruction in &p {
        assert_eq!(instruction.offset, offset);
        offset += u64::from(instruction.size);
    }
}

#[test]
fn small_budgets() {
    assert_eq!(texts(&program(0, 0)), ["s_endpgm"]);
    assert_eq!(texts(&program(1, 0)), ["s_add_u32 s4, s3, s15", "s_endpgm"]);
    assert_eq!(
        texts(&program(2, 1)),
        [
            "s_load_b128 s[0:3], s[0:1], null",
            "s_waitcnt lgkmcnt(0)",
            "v_fma_f32 v1, v2, v3, v1",
            "s_endpgm"
        ]
    );
    // With no VALU the remaining SALU operations follow the prologue.
    let p = program(10, 0);
    assert_eq!(p.len(), 11);
    assert!(p[..10].iter().all(|i| i.category != category::VALU));
    assert_eq!(p[5].text, "s_and_b32 s7, s6, 0xffff");
    assert_eq!(p[5].size, 8);
}

fn check_counts(salu: u32, valu: u32) {
    let p = program(salu, valu);
    assert_eq!(p.len() as u32, salu + valu + 1);
    let count = |c: u8| p.iter().filter(|i| i.category == c).count() as u32;
    assert_eq!(count(category::VALU), valu);
    assert_eq!(
        count(category::SMEM) + count(category::IMMED) + count(category::SALU),
        salu + 1
    );
    assert_eq!(count(category::SMEM), u32::from(salu >= 2));
    assert_eq!(p.last().unwrap().text, "s_endpgm");
    assert_eq!(p.iter().filter(|i| i.text == "s_endpgm").count(), 1);
}

#[test]
fn budgets_are_exact() {
    for salu in 0..40 {
        for valu in 0..40 {
            check_counts(salu, valu);
        }
    }
    check_counts(1000, 3);
    check_counts(3, 1000);
}

#[test]
fn salu_operations_are_spread_through_the_valu_stream() {
    let p = program(2 + 2 + 4, 8);
    let kinds: String = p
        .iter()
        .map(|i| match i.category {
            category::VALU => 'v',
            _ => 's',
        })
        .collect();
    assert_eq!(kinds, "ssssvvsvvsvvsvvss");
}

#[test]
fn encodings_follow_the_table() {
    let word = |text: &str| {
        let p = program(40, 40);
        let i = p.iter().find(|i| i.text == text).unwrap();
        encode_instruction(i).unwrap()
    };
    // s_endpgm: 0b101, short, SALU, opcode 0.
    assert_eq!(word("s_endpgm"), 0xA200_0000u32.to_le_bytes());
    // s_waitcnt lgkmcnt(0): IMMED, opcode 1, A = 2.
    assert_eq!(
        word("s_waitcnt lgkmcnt(0)"),
        (0xA900_0000u32 | 1 << 18 | 2 << 12).to_le_bytes()
    );
    // s_load_b128 s[0:3], s[0:1], null: long SMEM, opcode 5, offset word 0.
    let load = word("s_load_b128 s[0:3], s[0:1], null");
    assert_eq!(load[..4], (0xB100_0000u32 | 5 << 18).to_le_bytes());
    assert_eq!(load[4..], [0, 0, 0, 0]);
    // v_fma_f32 v1, v2, v3, v1: long VALU, opcode 19, A B C = 1 2 3, D = 1 in word 2.
    let fma = word("v_fma_f32 v1, v2, v3, v1");
    assert_eq!(
        fma[..4],
        (0xB600_0000u32 | 19 << 18 | 1 << 12 | 2 << 6 | 3).to_le_bytes()
    );
    assert_eq!(fma[4..], 1u32.to_le_bytes());
    assert_eq!(
        fma[..4],
        0xB64C_1083u32.to_le_bytes(),
        "the word docs/SIMULATOR.md quotes"
    );
    assert_eq!(encode(&program(5, 7)).len(), 64);
    // s_and_b32 with its literal in word 2.
    let and = word("s_and_b32 s7, s6, 0xffff");
    assert_eq!(
        and[..4],
        (0xB200_0000u32 | 11 << 18 | 7 << 12 | 6 << 6).to_le_bytes()
    );
    assert_eq!(and[4..], 0xffffu32.to_le_bytes());
}

fn instruction(text: &str, size: u32, category: u8) -> Instruction {
    Instruction {
        offset: 0,
        size,
        category,
        text: text.to_owned(),
        cycles: cycles_for(category),
    }
}

#[test]
fn hand_written_instructions_round_trip() {
    let list = [
        instruction("s_nop 7", 4, category::IMMED),
        instruction("s_waitcnt vmcnt(3)", 4, category::IMMED),
        instruction("s_waitcnt expcnt(0)", 4, category::IMMED),
        instruction("s_load_b32 s9, s[2:3], 0x24", 8, category::SMEM),
        instruction("s_load_b64 s[4:5], s[0:1], null", 8, category::SMEM),
        instruction("s_load_b256 s[8:15], s[0:1], 0x40", 8, category::SMEM),
        instruction("v_cvt_f32_u32_e32 v1, v0", 4, category::VALU),
        instruction("global_load_b32 v1, v0, s[2:3]", 8, category::VMEM),
        instruction(
            "global_store_b32 v0, v1, s[4:5] offset:16",
            8,
            category::VMEM,
        ),
        instruction("s_cmp_lt_u32 s4, s63", 4, category::SALU),
    ];
    let mut offset = 0;
    let list: Vec<Instruction> = list
        .into_iter()
        .map(|mut i| {
            i.offset = offset;
            offset += u64::from(i.size);
            i
        })
        .collect();
    let bytes = encode(&list);
    assert_eq!(bytes.len() as u64, offset);
    assert_eq!(decode_program(&bytes).unwrap(), list);
}

#[test]
fn non_canonical_or_inconsistent_instructions_are_not_encoded() {
    let rejected = [
        instruction("v_add_f32_e32 v01, v1, v2", 4, category::VALU),
        instruction("v_add_f32_e32 v1, v1, v64", 4, category::VALU),
        instruction("v_add_f32_e32 v1,v1, v2", 4, category::VALU),
        instruction("v_add_f32_e32 v1, v1, v2", 8, category::VALU),
        instruction("v_add_f32_e32 v1, v1, v2", 4, category::SALU),
        instruction("s_and_b32 s1, s2, 0xFFFF", 8, category::SALU),
        instruction("s_load_b128 s[0:2], s[0:1], null", 8, category::SMEM),
        instruction("s_load_b128 s[0:3], s[1:2], null", 8, category::SMEM),
        instruction("s_load_b128 s[62:65], s[0:1], null", 8, category::SMEM),
        instruction("s_load_b32 s1, s[0:1], 0x100000", 8, category::SMEM),
        instruction("s_nop 16", 4, category::IMMED),
        instruction("s_waitcnt lgkmcnt(64)", 4, category::IMMED),
        instruction("s_endpgm ", 4, category::SALU),
        instruction("global_load_b32 v1, v0, s[2:3] offset:0", 8, category::VMEM),
        instruction(
            "global_load_b32 v1, v0, s[2:3] offset:4096",
            8,
            category::VMEM,
        ),
        instruction("v_bogus v1", 4, category::VALU),
        instruction("", 4, category::NONE),
    ];
    for i in &rejected {
        assert_eq!(encode_instruction(i), None, "{:?}", i.text);
    }
    // encode writes undecodable zeros of the instruction's size instead.
    let bytes = encode(&rejected[3..4]);
    assert_eq!(bytes, [0u8; 8]);
    assert_eq!(decode_instruction(&bytes, 0), None);
}

#[test]
fn malformed_words_do_not_decode() {
    let good = 0xA200_0000u32; // s_endpgm
    assert!(decode_instruction(&good.to_le_bytes(), 0).is_some());
    let bad = [
        0x0000_0000,                     // no signature
        0xE200_0000,                     // signature 0b111
        0xA300_0000,                     // category VMEM for s_endpgm
        0xB200_0000,                     // long s_endpgm
        0xA200_0001,                     // unused field set
        0xA200_0000 | 22 << 18,          // opcode past the table
        0xA900_0000 | 1 << 18 | 3 << 12, // waitcnt counter 3
        0xA600_0000 | 13 << 18 | 1,      // v_mov_b32 with field C set
    ];
    for word in bad {
        assert_eq!(
            decode_instruction(&u32::to_le_bytes(word), 0),
            None,
            "{word:#x}"
        );
    }
    // Too short: 3 bytes; a long instruction with only its first word.
    assert_eq!(decode_instruction(&good.to_le_bytes()[..3], 0), None);
    let fma = encode(&program(0, 1)[..1]);
    assert_eq!(fma.len(), 8);
    assert_eq!(decode_instruction(&fma[..4], 0), None);
    assert_eq!(decode_instruction(&fma[..7], 0), None);
    assert!(decode_instruction(&fma, 0).is_some());
    // A long instruction's second word out of range (v_fma_f32 fourth operand 64).
    let mut fma64 = fma.clone();
    fma64[4] = 64;
    assert_eq!(decode_instruction(&fma64, 0), None);
    // decode_program refuses a trailing partial instruction.
    assert_eq!(decode_program(&fma[..6]), None);
    assert_eq!(decode_program(&[]), Some(vec![]));
}

#[test]
fn decoding_sets_the_given_offset() {
    let bytes = 0xA200_0000u32.to_le_bytes();
    let i = decode_instruction(&bytes, 0x1234).unwrap();
    assert_eq!(i.offset, 0x1234);
    assert_eq!((i.size, i.category, i.cycles), (4, category::SALU, 1));
    assert_eq!(i.text, "s_endpgm");
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), offset in any::<u64>()) {
        let _ = decode_instruction(&bytes, offset);
        let _ = decode_program(&bytes);
    }

    #[test]
    fn random_signed_words_never_panic(word in 0u32..(1 << 29), extra in any::<u32>()) {
        let word = 0b101 << 29 | word;
        let mut bytes = word.to_le_bytes().to_vec();
        bytes.extend_from_slice(&extra.to_le_bytes());
        if let Some(i) = decode_instruction(&bytes, 0) {
            // Whatever decodes re-encodes to the same bytes.
            let again = encode_instruction(&i).unwrap();
            prop_assert_eq!(&again[..], &bytes[..i.size as usize]);
        }
    }

    #[test]
    fn programs_round_trip(salu in 0u32..400, valu in 0u32..400) {
        let p = program(salu, valu);
        let bytes = encode(&p);
        prop_assert_eq!(bytes.len() as u64, p.iter().map(|i| u64::from(i.size)).sum::<u64>());
        let decoded = decode_program(&bytes).unwrap();
        prop_assert_eq!(&decoded, &p);
        for i in &p {
            let one = decode_instruction(&bytes[i.offset as usize..], i.offset).unwrap();
            prop_assert_eq!(&one, i);
        }
    }

    #[test]
    fn arbitrary_valid_fields_round_trip(
        opcode in 0u8..(OPS.len() as u8),
        a in 0u8..64, b in 0u8..64, c in 0u8..64,
        extra in any::<u32>(),
    ) {
        let fields = valid_fields(opcode, a, b, c, extra);
        prop_assert!(fields.valid(), "{:?}", fields);
        let i = fields.instruction(0);
        let bytes = encode_instruction(&i).unwrap();
        prop_assert_eq!(bytes.len() as u32, i.size);
        prop_assert_eq!(decode_instruction(&bytes, 0).unwrap(), i);
    }
}

/// Folds arbitrary field values into the valid ones of `opcode`'s form.
fn valid_fields(opcode: u8, a: u8, b: u8, c: u8, extra: u32) -> Fields {
    let even = |r: u8| (r % 63) & !1;
    let (a, b, c, extra) = match OPS[usize::from(opcode)].form {
        Form::Bare => (0, 0, 0, 0),
        Form::Waitcnt => (a % 3, 0, c, 0),
        Form::Nop => (0, 0, c % 16, 0),
        Form::SmemLoad(dwords) => (a % (65 - dwords), even(b), 0, extra % SMEM_OFFSET_LIMIT),
        Form::Sop1 | Form::Vop1 => (a, b, 0, 0),
        Form::Sop2 | Form::Sop2Inline | Form::Vop2 | Form::Vop2Scalar => (a, b, c, 0),
        Form::Sop2Literal => (a, b, 0, extra),
        Form::Sopc => (0, b, c, 0),
        Form::Vop3 => (a, b, c, extra % 64),
        Form::Global => (a, b, even(c), extra % GLOBAL_OFFSET_LIMIT),
    };
    Fields::new(opcode, a, b, c, extra)
}
