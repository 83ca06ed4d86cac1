//! The writer's CRC-32C of a chunk it seals ([`trace_records::log::chunk_checksum`] is the
//! reader's, and the definition): computed on the application's thread once per 64 KiB chunk,
//! so its instructions are part of every traced call's cost.
//!
//! With SSE 4.2 the payload is taken in rounds of three blocks of [`BLOCK`] bytes, one `crc32`
//! chain per block (the instruction's latency is three times its throughput, so three
//! independent chains keep it busy), and the three register states are joined by multiplying
//! by `x^(8·BLOCK)` modulo the polynomial ([`shift`]); what is left after the rounds goes
//! through one chain. Without SSE 4.2 it is the reader's function.

/// CRC-32C's polynomial, bit-reversed (bit 31 is the coefficient of `x^0`).
const POLY: u32 = 0x82F6_3B78;

/// Bytes per chain in one round.
const BLOCK: usize = 4096;

/// `a · b mod P` for two polynomials in the reversed bit order (bit 31 = `x^0`).
const fn mul_mod(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    let mut bit = 0;
    while bit < 32 {
        if a & (0x8000_0000 >> bit) != 0 {
            product ^= b;
        }
        // b · x
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        bit += 1;
    }
    product
}

/// `x^(8·n) mod P`: the factor that moves a register state past `n` zero bytes.
const fn x_pow_8n(n: usize) -> u32 {
    // x^8, then square-and-multiply over the bits of n.
    let mut x8 = 0x8000_0000u32;
    let mut k = 0;
    while k < 8 {
        x8 = mul_mod(x8, 0x4000_0000);
        k += 1;
    }
    let mut result = 0x8000_0000u32;
    let mut base = x8;
    let mut n = n;
    while n > 0 {
        if n & 1 != 0 {
            result = mul_mod(result, base);
        }
        base = mul_mod(base, base);
        n >>= 1;
    }
    result
}

/// `v · x^(8·BLOCK) mod P` by bytes: entry `k` of table `j` is the product for `k << (8·j)`
/// (the product is linear in `v`, so the four looked-up products of its bytes add up to it).
const PAST_BLOCK: [[u32; 256]; 4] = {
    let factor = x_pow_8n(BLOCK);
    let mut tables = [[0u32; 256]; 4];
    let mut j = 0;
    while j < 4 {
        let mut k = 0;
        while k < 256 {
            tables[j][k] = mul_mod((k as u32) << (8 * j), factor);
            k += 1;
        }
        j += 1;
    }
    tables
};

/// The register state `state` moved past [`BLOCK`] zero bytes.
#[inline]
fn shift(state: u64) -> u64 {
    let v = state as u32;
    let t = &PAST_BLOCK;
    u64::from(
        t[0][(v & 0xff) as usize]
            ^ t[1][(v >> 8 & 0xff) as usize]
            ^ t[2][(v >> 16 & 0xff) as usize]
            ^ t[3][(v >> 24) as usize],
    )
}

/// The CRC-32C of `data`.
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, which is all `crc32c_sse42` enables.
        unsafe { crc32c_sse42(data) }
    } else {
        trace_records::log::chunk_checksum(data)
    }
}

#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut state = u64::from(u32::MAX);
    let mut rounds = data.chunks_exact(3 * BLOCK);
    for round in &mut rounds {
        let (a, rest) = round.split_at(BLOCK);
        let (b, c) = rest.split_at(BLOCK);
        let (mut x, mut y, mut z) = (state, 0u64, 0u64);
        // Four words of each chain per step (fewer loop instructions per word).
        for ((a, b), c) in a
            .chunks_exact(32)
            .zip(b.chunks_exact(32))
            .zip(c.chunks_exact(32))
        {
            for k in (0..32).step_by(8) {
                x = _mm_crc32_u64(x, word(&a[k..k + 8]));
                y = _mm_crc32_u64(y, word(&b[k..k + 8]));
                z = _mm_crc32_u64(z, word(&c[k..k + 8]));
            }
        }
        state = shift(shift(x) ^ y) ^ z;
    }
    let mut words = rounds.remainder().chunks_exact(8);
    for w in &mut words {
        state = _mm_crc32_u64(state, word(w));
    }
    let mut state = state as u32;
    for &byte in words.remainder() {
        state = _mm_crc32_u8(state, byte);
    }
    !state
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_check_value_and_the_readers_function() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283, "CRC-32C's check value");
        assert_eq!(crc32c(b""), 0);
        let chunk: Vec<u8> = (0..65_504u32)
            .map(|k| (k.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(
            crc32c(&chunk),
            trace_records::log::chunk_checksum(&chunk),
            "a whole chunk's payload"
        );
    }

    #[test]
    fn moving_past_zero_bytes_is_multiplying() {
        if !std::arch::is_x86_feature_detected!("sse4.2") {
            eprintln!("skipped: this CPU has no SSE 4.2 (the crc32 instruction)");
            return;
        }
        // A state moved past BLOCK zero bytes by the instruction equals the shifted state.
        let state = 0x1234_5678u32;
        let mut moved = state;
        for _ in 0..BLOCK {
            // SAFETY: the CPU has SSE 4.2 (checked above).
            moved = unsafe { std::arch::x86_64::_mm_crc32_u8(moved, 0) };
        }
        assert_eq!(u64::from(moved), shift(u64::from(state)));
    }

    proptest! {
        #[test]
        fn agrees_with_the_reader(data in proptest::collection::vec(any::<u8>(), 0..20_000)) {
            prop_assert_eq!(crc32c(&data), trace_records::log::chunk_checksum(&data));
        }
    }
}
