//! The simulated ISA: a small, gfx11-looking instruction set whose programs the simulated code
//! object carries (format version 2) and the simulated `libamd_comgr.so` disassembles.
//!
//! # Programs
//!
//! [`program`]`(salu, valu)` is the deterministic instruction sequence one wave of a kernel with
//! the cost-model counts `salu_per_wave = salu` and `valu_per_wave = valu` executes:
//!
//! * the **SALU budget** (`salu` instructions) is spent on: `s_load_b128 s[0:3], s[0:1], null`
//!   (SMEM) and `s_waitcnt lgkmcnt(0)` (IMMED) when `salu >= 2`, then scalar ALU operations
//!   (SALU) for the rest — so with `salu == 1` the one instruction is a SALU operation. Of the
//!   SALU operations, the first two follow the wait directly; the others are spread evenly
//!   through the VALU stream (after VALU instruction `j`, SALU operations are emitted until
//!   `floor((j + 1) * rest / valu)` of the `rest` have been), or follow the prologue if there is
//!   no VALU instruction;
//! * the **VALU budget** is `valu` vector ALU instructions (VALU), cycling through `v_fma_f32`
//!   (8 bytes), `v_add_f32_e32`, `v_mul_f32_e32`, `v_add_nc_u32_e32`, `v_sub_f32_e32` and
//!   `v_mov_b32_e32` (4 bytes each);
//! * then **one `s_endpgm`** (category SALU, 4 bytes), not counted in either budget.
//!
//! So a program has `salu + valu + 1` instructions, exactly `valu` of category VALU and
//! `salu` of categories SMEM, IMMED and SALU besides the final `s_endpgm`. No program contains
//! VMEM instructions (the encoding has `global_load_b32` / `global_store_b32` for hand-made code).
//!
//! # Cycles
//!
//! Every instruction costs a fixed number of shader cycles by category ([`cycles_for`]):
//! SMEM 20, SALU 1, VMEM 100, FLAT 100, LDS 8, VALU 4, JUMP 2, IMMED 1, BVH 100, anything else 1.
//!
//! # Encoding
//!
//! Little-endian 32-bit words; an instruction is one word (4 bytes) or two (8 bytes). The first
//! word describes itself, so decoding needs only the bytes at the instruction:
//!
//! ```text
//! bits   field
//! 31:29  signature 0b101 (the top byte is 0xA0 | long << 4 | category)
//! 28     long: 1 = a second word follows (8-byte instruction)
//! 27:24  category (must equal the opcode's)
//! 23:18  opcode: index into the mnemonic table below
//! 17:12  field A     11:6  field B     5:0  field C   (unused fields must be 0)
//! ```
//!
//! | opcode | mnemonic | category | bytes | text | A, B, C / second word |
//! |---|---|---|---|---|---|
//! | 0 | `s_endpgm` | SALU | 4 | `s_endpgm` | 0, 0, 0 |
//! | 1 | `s_waitcnt` | IMMED | 4 | `s_waitcnt lgkmcnt(C)` | A = counter (0 `vmcnt`, 1 `expcnt`, 2 `lgkmcnt`), C = count |
//! | 2 | `s_nop` | IMMED | 4 | `s_nop C` | C = 0..=15 |
//! | 3–6 | `s_load_b32/b64/b128/b256` | SMEM | 8 | `s_load_b128 s[A:A+3], s[B:B+1], null` | A = first destination SGPR, B = base SGPR (even); word 2 = byte offset < 2^20, printed `null` when 0, else `0x…` |
//! | 7 | `s_mov_b32` | SALU | 4 | `s_mov_b32 sA, sB` | |
//! | 8, 9 | `s_add_u32`, `s_mul_i32` | SALU | 4 | `s_add_u32 sA, sB, sC` | |
//! | 10 | `s_lshl_b32` | SALU | 4 | `s_lshl_b32 sA, sB, C` | C = inline constant 0..=63 |
//! | 11 | `s_and_b32` | SALU | 8 | `s_and_b32 sA, sB, 0x…` | word 2 = the 32-bit literal |
//! | 12 | `s_cmp_lt_u32` | SALU | 4 | `s_cmp_lt_u32 sB, sC` | A = 0 |
//! | 13, 14 | `v_mov_b32_e32`, `v_cvt_f32_u32_e32` | VALU | 4 | `v_mov_b32_e32 vA, vB` | |
//! | 15–17 | `v_add_f32_e32`, `v_mul_f32_e32`, `v_sub_f32_e32` | VALU | 4 | `v_add_f32_e32 vA, vB, vC` | |
//! | 18 | `v_add_nc_u32_e32` | VALU | 4 | `v_add_nc_u32_e32 vA, sB, vC` | |
//! | 19 | `v_fma_f32` | VALU | 8 | `v_fma_f32 vA, vB, vC, vD` | word 2 = D (0..=63) |
//! | 20 | `global_load_b32` | VMEM | 8 | `global_load_b32 vA, vB, s[C:C+1]` | word 2 = offset < 4096, printed ` offset:N` when not 0 |
//! | 21 | `global_store_b32` | VMEM | 8 | `global_store_b32 vA, vB, s[C:C+1]` | as `global_load_b32` |
//!
//! Register fields are 6 bits (registers 0..=63); a register range must end at or below 63.
//! Anything else — another signature, an opcode past the table, a category or length that
//! disagrees with the opcode, a field out of range, a non-zero unused field, a too-short buffer
//! — does not decode. [`encode`] and [`decode_instruction`] are exact inverses on every
//! instruction whose text is in the canonical form above (what [`program`] produces).

use std::fmt::Write as _;

/// Instruction categories, numbered as the thread-trace decoder numbers them.
pub mod category {
    /// No category.
    pub const NONE: u8 = 0;
    /// Scalar memory.
    pub const SMEM: u8 = 1;
    /// Scalar ALU.
    pub const SALU: u8 = 2;
    /// Vector memory.
    pub const VMEM: u8 = 3;
    /// Flat memory.
    pub const FLAT: u8 = 4;
    /// Local data share.
    pub const LDS: u8 = 5;
    /// Vector ALU.
    pub const VALU: u8 = 6;
    /// Branch (taken).
    pub const JUMP: u8 = 7;
    /// Branch not taken.
    pub const NEXT: u8 = 8;
    /// Immediate (`s_waitcnt`, `s_nop`, ...).
    pub const IMMED: u8 = 9;
    /// Context save/restore.
    pub const CONTEXT: u8 = 10;
    /// Message (`s_sendmsg`).
    pub const MESSAGE: u8 = 11;
    /// Ray-tracing BVH.
    pub const BVH: u8 = 12;
}

/// One instruction of a simulated kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// Bytes from the kernel's first instruction.
    pub offset: u64,
    /// Encoded size in bytes: 4 or 8.
    pub size: u32,
    /// Category ([`category`]).
    pub category: u8,
    /// Disassembly text, as comgr prints it (e.g. `v_add_f32_e32 v1, v1, v2`).
    pub text: String,
    /// Shader cycles the instruction takes ([`cycles_for`] of its category).
    pub cycles: u32,
}

/// Shader cycles of one instruction of `category`: SMEM 20, SALU 1, VMEM 100, FLAT 100, LDS 8,
/// VALU 4, JUMP 2, IMMED 1, BVH 100; every other category 1.
pub fn cycles_for(category: u8) -> u32 {
    match category {
        category::SMEM => 20,
        category::SALU => 1,
        category::VMEM | category::FLAT | category::BVH => 100,
        category::LDS => 8,
        category::VALU => 4,
        category::JUMP => 2,
        _ => 1,
    }
}

/// Operand shape of a mnemonic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// No operands.
    Bare,
    /// `counter(C)`; A selects the counter.
    Waitcnt,
    /// `C`, 0..=15.
    Nop,
    /// `s[A:A+n-1]` (or `sA` for one dword), `s[B:B+1]`, `null`/`0x<offset>`; long.
    SmemLoad(u8),
    /// `sA, sB`.
    Sop1,
    /// `sA, sB, sC`.
    Sop2,
    /// `sA, sB, C` (inline constant).
    Sop2Inline,
    /// `sA, sB, 0x<literal>`; long.
    Sop2Literal,
    /// `sB, sC`.
    Sopc,
    /// `vA, vB`.
    Vop1,
    /// `vA, vB, vC`.
    Vop2,
    /// `vA, sB, vC`.
    Vop2Scalar,
    /// `vA, vB, vC, vD`; long.
    Vop3,
    /// `vA, vB, s[C:C+1]` with an optional ` offset:N`; long.
    Global,
}

impl Form {
    fn long(self) -> bool {
        matches!(
            self,
            Form::SmemLoad(_) | Form::Sop2Literal | Form::Vop3 | Form::Global
        )
    }
}

struct Op {
    mnemonic: &'static str,
    category: u8,
    form: Form,
}

const fn op(mnemonic: &'static str, category: u8, form: Form) -> Op {
    Op {
        mnemonic,
        category,
        form,
    }
}

/// The mnemonic table; the index is the opcode.
const OPS: [Op; 22] = [
    op("s_endpgm", category::SALU, Form::Bare),
    op("s_waitcnt", category::IMMED, Form::Waitcnt),
    op("s_nop", category::IMMED, Form::Nop),
    op("s_load_b32", category::SMEM, Form::SmemLoad(1)),
    op("s_load_b64", category::SMEM, Form::SmemLoad(2)),
    op("s_load_b128", category::SMEM, Form::SmemLoad(4)),
    op("s_load_b256", category::SMEM, Form::SmemLoad(8)),
    op("s_mov_b32", category::SALU, Form::Sop1),
    op("s_add_u32", category::SALU, Form::Sop2),
    op("s_mul_i32", category::SALU, Form::Sop2),
    op("s_lshl_b32", category::SALU, Form::Sop2Inline),
    op("s_and_b32", category::SALU, Form::Sop2Literal),
    op("s_cmp_lt_u32", category::SALU, Form::Sopc),
    op("v_mov_b32_e32", category::VALU, Form::Vop1),
    op("v_cvt_f32_u32_e32", category::VALU, Form::Vop1),
    op("v_add_f32_e32", category::VALU, Form::Vop2),
    op("v_mul_f32_e32", category::VALU, Form::Vop2),
    op("v_sub_f32_e32", category::VALU, Form::Vop2),
    op("v_add_nc_u32_e32", category::VALU, Form::Vop2Scalar),
    op("v_fma_f32", category::VALU, Form::Vop3),
    op("global_load_b32", category::VMEM, Form::Global),
    op("global_store_b32", category::VMEM, Form::Global),
];

const OP_S_ENDPGM: u8 = 0;
const OP_S_WAITCNT: u8 = 1;
const OP_S_LOAD_B128: u8 = 5;
const OP_S_MOV_B32: u8 = 7;
const OP_S_ADD_U32: u8 = 8;
const OP_S_MUL_I32: u8 = 9;
const OP_S_LSHL_B32: u8 = 10;
const OP_S_AND_B32: u8 = 11;
const OP_S_CMP_LT_U32: u8 = 12;
const OP_V_MOV_B32: u8 = 13;
const OP_V_ADD_F32: u8 = 15;
const OP_V_MUL_F32: u8 = 16;
const OP_V_SUB_F32: u8 = 17;
const OP_V_ADD_NC_U32: u8 = 18;
const OP_V_FMA_F32: u8 = 19;

/// The `s_waitcnt` counters, by field A.
const COUNTERS: [&str; 3] = ["vmcnt", "expcnt", "lgkmcnt"];
/// Largest register number a 6-bit field holds.
const MAX_REG: u8 = 63;
/// SMEM offsets are below this.
const SMEM_OFFSET_LIMIT: u32 = 1 << 20;
/// Global-memory offsets are below this.
const GLOBAL_OFFSET_LIMIT: u32 = 4096;
const SIGNATURE: u32 = 0b101;

/// The fields of one instruction: the structured form both directions go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fields {
    opcode: u8,
    a: u8,
    b: u8,
    c: u8,
    /// The second word (long forms only; 0 otherwise).
    extra: u32,
}

impl Fields {
    fn new(opcode: u8, a: u8, b: u8, c: u8, extra: u32) -> Fields {
        Fields {
            opcode,
            a,
            b,
            c,
            extra,
        }
    }

    fn op(&self) -> Option<&'static Op> {
        OPS.get(usize::from(self.opcode))
    }

    /// Whether the fields are valid for the opcode's form.
    fn valid(&self) -> bool {
        let Some(op) = self.op() else {
            return false;
        };
        let reg = |r: u8| r <= MAX_REG;
        let range = |first: u8, count: u8| u16::from(first) + u16::from(count) - 1 <= 63;
        let (a, b, c, extra) = (self.a, self.b, self.c, self.extra);
        let fields_ok = reg(a) && reg(b) && reg(c);
        fields_ok
            && match op.form {
                Form::Bare => a == 0 && b == 0 && c == 0 && extra == 0,
                Form::Waitcnt => usize::from(a) < COUNTERS.len() && b == 0 && extra == 0,
                Form::Nop => a == 0 && b == 0 && c <= 15 && extra == 0,
                Form::SmemLoad(dwords) => {
                    range(a, dwords)
                        && b % 2 == 0
                        && range(b, 2)
                        && c == 0
                        && extra < SMEM_OFFSET_LIMIT
                }
                Form::Sop1 | Form::Vop1 => c == 0 && extra == 0,
                Form::Sop2 | Form::Sop2Inline | Form::Vop2 | Form::Vop2Scalar => extra == 0,
                Form::Sop2Literal => c == 0,
                Form::Sopc => a == 0 && extra == 0,
                Form::Vop3 => extra <= u32::from(MAX_REG),
                Form::Global => c % 2 == 0 && range(c, 2) && extra < GLOBAL_OFFSET_LIMIT,
            }
    }

    /// The disassembly text (the fields must be [`Fields::valid`]).
    fn text(&self) -> String {
        let Some(op) = self.op() else {
            return String::new();
        };
        let (a, b, c, extra) = (self.a, self.b, self.c, self.extra);
        let mut s = String::from(op.mnemonic);
        // Writing to a String cannot fail.
        let _ = match op.form {
            Form::Bare => Ok(()),
            Form::Waitcnt => write!(
                s,
                " {}({c})",
                COUNTERS.get(usize::from(a)).copied().unwrap_or("?")
            ),
            Form::Nop => write!(s, " {c}"),
            Form::SmemLoad(dwords) => {
                let dst = sgpr_range(a, dwords);
                if extra == 0 {
                    write!(s, " {dst}, {}, null", sgpr_range(b, 2))
                } else {
                    write!(s, " {dst}, {}, {extra:#x}", sgpr_range(b, 2))
                }
            }
            Form::Sop1 => write!(s, " s{a}, s{b}"),
            Form::Sop2 => write!(s, " s{a}, s{b}, s{c}"),
            Form::Sop2Inline => write!(s, " s{a}, s{b}, {c}"),
            Form::Sop2Literal => write!(s, " s{a}, s{b}, {extra:#x}"),
            Form::Sopc => write!(s, " s{b}, s{c}"),
            Form::Vop1 => write!(s, " v{a}, v{b}"),
            Form::Vop2 => write!(s, " v{a}, v{b}, v{c}"),
            Form::Vop2Scalar => write!(s, " v{a}, s{b}, v{c}"),
            Form::Vop3 => write!(s, " v{a}, v{b}, v{c}, v{extra}"),
            Form::Global => {
                if extra == 0 {
                    write!(s, " v{a}, v{b}, {}", sgpr_range(c, 2))
                } else {
                    write!(s, " v{a}, v{b}, {} offset:{extra}", sgpr_range(c, 2))
                }
            }
        };
        s
    }

    fn size(&self) -> u32 {
        match self.op() {
            Some(op) if op.form.long() => 8,
            _ => 4,
        }
    }

    fn instruction(&self, offset: u64) -> Instruction {
        let category = self.op().map_or(category::NONE, |op| op.category);
        Instruction {
            offset,
            size: self.size(),
            category,
            text: self.text(),
            cycles: cycles_for(category),
        }
    }

    fn first_word(&self) -> u32 {
        let (long, category) = self
            .op()
            .map_or((false, 0), |op| (op.form.long(), op.category));
        SIGNATURE << 29
            | u32::from(long) << 28
            | u32::from(category & 0xF) << 24
            | u32::from(self.opcode & 0x3F) << 18
            | u32::from(self.a & 0x3F) << 12
            | u32::from(self.b & 0x3F) << 6
            | u32::from(self.c & 0x3F)
    }
}

fn sgpr_range(first: u8, count: u8) -> String {
    if count == 1 {
        format!("s{first}")
    } else {
        format!("s[{first}:{}]", u16::from(first) + u16::from(count) - 1)
    }
}

/// Decodes the instruction at the start of `bytes` (4 bytes, or 8 when its first word says
/// so; further bytes are ignored). `offset_in_kernel` becomes [`Instruction::offset`]. `None`
/// when the bytes are too short or not a valid encoding; never panics.
pub fn decode_instruction(bytes: &[u8], offset_in_kernel: u64) -> Option<Instruction> {
    let word = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    if word >> 29 != SIGNATURE {
        return None;
    }
    let long = word >> 28 & 1 == 1;
    let category = (word >> 24 & 0xF) as u8;
    let field = |shift: u32| (word >> shift & 0x3F) as u8;
    let extra = if long {
        u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?)
    } else {
        0
    };
    let fields = Fields::new(field(18), field(12), field(6), field(0), extra);
    let op = fields.op()?;
    if op.category != category || op.form.long() != long || !fields.valid() {
        return None;
    }
    Some(fields.instruction(offset_in_kernel))
}

/// Decodes a whole kernel's code: instructions back to back from offset 0 to the end of
/// `code`. `None` if any instruction does not decode or the last one runs past the end.
pub fn decode_program(code: &[u8]) -> Option<Vec<Instruction>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < code.len() {
        let instruction = decode_instruction(&code[at..], at as u64)?;
        at += instruction.size as usize;
        out.push(instruction);
    }
    Some(out)
}

/// Parses a register operand `s<N>` / `v<N>` (canonical decimal, 0..=63).
fn register(token: &str, prefix: char) -> Option<u8> {
    number(token.strip_prefix(prefix)?).and_then(|n| u8::try_from(n).ok())
}

/// A canonical unsigned decimal (no sign, no leading zeros except "0").
fn number(token: &str) -> Option<u32> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

/// A `0x`-prefixed lowercase hexadecimal number.
fn hex(token: &str) -> Option<u32> {
    let digits = token.strip_prefix("0x")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// `s[N:M]` (or `sN` when `count` is 1) with `M = N + count - 1`; the first register.
fn sgpr_range_operand(token: &str, count: u8) -> Option<u8> {
    if count == 1 {
        return register(token, 's');
    }
    let inner = token.strip_prefix("s[")?.strip_suffix(']')?;
    let (first, last) = inner.split_once(':')?;
    let first = u8::try_from(number(first)?).ok()?;
    let last = number(last)?;
    (last == u32::from(first) + u32::from(count) - 1).then_some(first)
}

/// The fields of a canonical instruction text, or `None`.
fn parse_text(text: &str) -> Option<Fields> {
    let (mnemonic, rest) = text.split_once(' ').unwrap_or((text, ""));
    let opcode = OPS.iter().position(|op| op.mnemonic == mnemonic)?;
    let opcode = u8::try_from(opcode).ok()?;
    let ops: Vec<&str> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(", ").collect()
    };
    let form = OPS[usize::from(opcode)].form;
    let f = |a, b, c, extra| Some(Fields::new(opcode, a, b, c, extra));
    match (form, ops.as_slice()) {
        (Form::Bare, []) => f(0, 0, 0, 0),
        (Form::Waitcnt, [counter]) => {
            let (name, count) = counter.strip_suffix(')')?.split_once('(')?;
            let a = COUNTERS.iter().position(|c| *c == name)?;
            f(
                u8::try_from(a).ok()?,
                0,
                u8::try_from(number(count)?).ok()?,
                0,
            )
        }
        (Form::Nop, [n]) => f(0, 0, u8::try_from(number(n)?).ok()?, 0),
        (Form::SmemLoad(dwords), [dst, base, offset]) => {
            let extra = if *offset == "null" { 0 } else { hex(offset)? };
            f(
                sgpr_range_operand(dst, dwords)?,
                sgpr_range_operand(base, 2)?,
                0,
                extra,
            )
        }
        (Form::Sop1, [d, a]) => f(register(d, 's')?, register(a, 's')?, 0, 0),
        (Form::Sop2, [d, a, b]) => f(register(d, 's')?, register(a, 's')?, register(b, 's')?, 0),
        (Form::Sop2Inline, [d, a, n]) => f(
            register(d, 's')?,
            register(a, 's')?,
            u8::try_from(number(n)?).ok()?,
            0,
        ),
        (Form::Sop2Literal, [d, a, lit]) => f(register(d, 's')?, register(a, 's')?, 0, hex(lit)?),
        (Form::Sopc, [a, b]) => f(0, register(a, 's')?, register(b, 's')?, 0),
        (Form::Vop1, [d, a]) => f(register(d, 'v')?, register(a, 'v')?, 0, 0),
        (Form::Vop2, [d, a, b]) => f(register(d, 'v')?, register(a, 'v')?, register(b, 'v')?, 0),
        (Form::Vop2Scalar, [d, a, b]) => {
            f(register(d, 'v')?, register(a, 's')?, register(b, 'v')?, 0)
        }
        (Form::Vop3, [d, a, b, c]) => f(
            register(d, 'v')?,
            register(a, 'v')?,
            register(b, 'v')?,
            u32::from(register(c, 'v')?),
        ),
        (Form::Global, [d, a, base]) => {
            let (base, extra) = match base.split_once(" offset:") {
                Some((base, offset)) => (base, number(offset)?),
                None => (*base, 0),
            };
            f(
                register(d, 'v')?,
                register(a, 'v')?,
                sgpr_range_operand(base, 2)?,
                extra,
            )
        }
        _ => None,
    }
}

/// The encoding of one instruction, or `None` if its text is not a canonical instruction of
/// the simulated ISA or its `size`/`category` disagree with the text. (`offset` and `cycles`
/// are not encoded.)
pub fn encode_instruction(instruction: &Instruction) -> Option<Vec<u8>> {
    let fields = parse_text(&instruction.text)?;
    if !fields.valid()
        || fields.text() != instruction.text
        || fields.size() != instruction.size
        || fields.op()?.category != instruction.category
    {
        return None;
    }
    let mut out = fields.first_word().to_le_bytes().to_vec();
    if fields.size() == 8 {
        out.extend_from_slice(&fields.extra.to_le_bytes());
    }
    Some(out)
}

/// Encodes `program`, instructions back to back in slice order (their `offset`s are not
/// consulted). An instruction [`encode_instruction`] rejects is written as `size` zero bytes
/// (4 unless its size is 8), which never decode.
pub fn encode(program: &[Instruction]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.iter().map(|i| i.size as usize).sum());
    for instruction in program {
        match encode_instruction(instruction) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => {
                let size = if instruction.size == 8 { 8 } else { 4 };
                out.resize(out.len() + size, 0);
            }
        }
    }
    out
}

/// Builds a program, tracking offsets.
struct Emitter {
    out: Vec<Instruction>,
    offset: u64,
}

impl Emitter {
    fn push(&mut self, fields: Fields) {
        let instruction = fields.instruction(self.offset);
        self.offset += u64::from(instruction.size);
        self.out.push(instruction);
    }

    /// The `k`-th scalar ALU operation (k counts SALU operations only).
    fn salu(&mut self, k: u32) {
        let d = 4 + (k % 8) as u8;
        let a = ((k + 3) % 12) as u8;
        let b = 15 - (k % 4) as u8;
        let fields = match k % 6 {
            0 => Fields::new(OP_S_ADD_U32, d, a, b, 0),
            1 => Fields::new(OP_S_MUL_I32, d, a, b, 0),
            2 => Fields::new(OP_S_LSHL_B32, d, a, 2, 0),
            3 => Fields::new(OP_S_AND_B32, d, a, 0, 0xffff),
            4 => Fields::new(OP_S_MOV_B32, d, a, 0, 0),
            _ => Fields::new(OP_S_CMP_LT_U32, 0, a, b, 0),
        };
        self.push(fields);
    }

    /// The `j`-th vector ALU operation.
    fn valu(&mut self, j: u32) {
        let d = 1 + ((j / 6) % 4) as u8;
        let fields = match j % 6 {
            0 => Fields::new(OP_V_FMA_F32, d, d + 1, d + 2, u32::from(d)),
            1 => Fields::new(OP_V_ADD_F32, d, d, d + 1, 0),
            2 => Fields::new(OP_V_MUL_F32, d, d, d + 2, 0),
            3 => Fields::new(OP_V_ADD_NC_U32, 0, 4 + (j % 8) as u8, 0, 0),
            4 => Fields::new(OP_V_SUB_F32, d + 1, d, d + 2, 0),
            _ => Fields::new(OP_V_MOV_B32, d + 2, d, 0, 0),
        };
        self.push(fields);
    }
}

/// SALU operations placed right after the prologue's `s_waitcnt`.
const SALU_HEAD: u32 = 2;

/// The instructions one wave of a kernel with `salu_per_wave` SALU-side and `valu_per_wave`
/// VALU instructions executes, ending with `s_endpgm` (see the module documentation for how the
/// budgets are spent). Deterministic; `salu + valu + 1` instructions with offsets from 0.
pub fn program(salu_per_wave: u32, valu_per_wave: u32) -> Vec<Instruction> {
    let capacity = (u64::from(salu_per_wave) + u64::from(valu_per_wave) + 1).min(1 << 20);
    let mut e = Emitter {
        out: Vec::with_capacity(capacity as usize),
        offset: 0,
    };
    let mut salu_ops = salu_per_wave;
    if salu_per_wave >= 2 {
        e.push(Fields::new(OP_S_LOAD_B128, 0, 0, 0, 0));
        e.push(Fields::new(OP_S_WAITCNT, 2, 0, 0, 0));
        salu_ops -= 2;
    }
    let head = salu_ops.min(SALU_HEAD);
    let tail = salu_ops - head;
    let mut k = 0u32;
    for _ in 0..head {
        e.salu(k);
        k += 1;
    }
    let mut emitted_tail = 0u32;
    for j in 0..valu_per_wave {
        e.valu(j);
        let due = (u64::from(j) + 1) * u64::from(tail) / u64::from(valu_per_wave);
        while u64::from(emitted_tail) < due {
            e.salu(k);
            k += 1;
            emitted_tail += 1;
        }
    }
    while emitted_tail < tail {
        e.salu(k);
        k += 1;
        emitted_tail += 1;
    }
    e.push(Fields::new(OP_S_ENDPGM, 0, 0, 0, 0));
    e.out
}

#[cfg(test)]
mod tests;
