//! Identities in a rocpd file: each process's guid (a version-7 UUID, laid out as upstream
//! lays it out) and the node's hash and id.
//!
//! Upstream builds the guid from the process start (milliseconds on CLOCK_BOOTTIME) and one
//! 64-bit Mersenne Twister output seeded by a hash of `machine_id|pid|ppid|start ticks`. The
//! layout is kept here; the seed's hash is FNV-1a (upstream hashes a SHA-256 digest with
//! `std::hash`, which no reader looks at), and the start ticks are derived from the start
//! time, since the process is gone by the time its records are written.

/// FNV-1a, 64 bits: the string hash of the node and the guid's seed.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The first output of a 64-bit Mersenne Twister (MT19937-64) seeded with `seed`.
///
/// Only the first word of the first twist is needed, and it depends on state words 0, 1 and
/// 156 only, so the state is built no further than that.
pub(crate) fn mt19937_64_first(seed: u64) -> u64 {
    const M: usize = 156;
    const MATRIX: u64 = 0xB502_6F5A_A966_19E9;
    const LOW_31: u64 = (1 << 31) - 1;
    let mut state = [0u64; M + 1];
    state[0] = seed;
    for i in 1..=M {
        let prev = state[i - 1];
        state[i] = 6_364_136_223_846_793_005u64
            .wrapping_mul(prev ^ (prev >> 62))
            .wrapping_add(i as u64);
    }
    let x = (state[0] & !LOW_31) | (state[1] & LOW_31);
    let mut y = state[M] ^ (x >> 1) ^ if x & 1 == 1 { MATRIX } else { 0 };
    y ^= (y >> 29) & 0x5555_5555_5555_5555;
    y ^= (y << 17) & 0x71D6_7FFF_EDA6_0000;
    y ^= (y << 37) & 0xFFF7_EEE0_0000_0000;
    y ^ (y >> 43)
}

/// A version-7 UUID, lowercase and hyphenated: bytes 0-5 the big-endian milliseconds of
/// `start_ns`, bytes 6-7 the version 7 and the low 12 bits of those milliseconds, bytes 8-15
/// the twister's first output for `seed` with the RFC 4122 variant bits (`10`).
pub(crate) fn uuid_v7(start_ns: u64, seed: u64) -> String {
    let ms = start_ns / 1_000_000;
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6..8].copy_from_slice(&(0x7000 | (ms & 0x0FFF) as u16).to_be_bytes());
    b[8..].copy_from_slice(&mt19937_64_first(seed).to_be_bytes());
    b[8] = (b[8] & 0x3F) | 0x80;
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

/// The guid of one process: a UUID v7 from its start and a seed of the machine, pid, parent
/// and start ticks (at 100 per second, as `/proc/<pid>/stat` counts them). A later image of
/// the same process (after an `exec`) adds its image number to the seed, so its tables keep
/// names of their own.
pub(crate) fn process_guid(
    machine_id: &str,
    pid: u32,
    ppid: u32,
    image: u32,
    start_ns: u64,
) -> String {
    let ticks = start_ns / 10_000_000;
    let mut key = format!("{machine_id}|{pid}|{ppid}|{ticks}");
    if image > 0 {
        key.push_str(&format!("|{image}"));
    }
    uuid_v7(start_ns, fnv1a(key.as_bytes()))
}

/// The table suffix of a guid: `_` and the guid with `-` turned into `_` (also the value of
/// the metadata's `uuid`).
pub(crate) fn suffix(guid: &str) -> String {
    format!("_{}", guid.replace('-', "_"))
}

/// The node's `hash` (the machine id's hash below `i64::MAX`) and `id` (that hash modulo
/// `u32::MAX`).
pub(crate) fn node_hash_and_id(machine_id: &str) -> (i64, i64) {
    let hash = fnv1a(machine_id.as_bytes()) % (i64::MAX as u64);
    let id = hash % u64::from(u32::MAX);
    (hash as i64, id as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_twister_matches_the_reference_sequence() {
        // MT19937-64's first output for its default seed.
        assert_eq!(mt19937_64_first(5489), 14_514_284_786_278_117_030);
    }

    #[test]
    fn a_guid_is_a_version_7_uuid_of_the_start_milliseconds() {
        let ns = 0x0000_ddb5_8903u64 * 1_000_000 + 123;
        let g = uuid_v7(ns, 42);
        assert_eq!(g.len(), 36);
        assert!(g.starts_with("0000ddb5-8903-7903-"), "{g}");
        let variant = u8::from_str_radix(&g[19..21], 16).unwrap();
        assert_eq!(variant & 0xC0, 0x80, "{g}");
        assert_eq!(g, g.to_lowercase());
        assert_eq!(suffix(&g), format!("_{}", g.replace('-', "_")));
    }

    #[test]
    fn processes_and_images_get_their_own_guids() {
        let a = process_guid("m", 10, 1, 0, 5_000_000_000);
        let b = process_guid("m", 11, 1, 0, 5_000_000_000);
        let c = process_guid("m", 10, 1, 1, 5_000_000_000);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, process_guid("m", 10, 1, 0, 5_000_000_000));
    }
}
