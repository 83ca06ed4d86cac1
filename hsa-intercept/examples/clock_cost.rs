//! Cost of one host timestamp: the TSC clock ([`hsa_intercept::clock::now_ns`]) against
//! `clock_gettime(CLOCK_MONOTONIC)`. Prints the median over 9 rounds of 2 M reads each.
//!
//! `cargo run --release -p hsa-intercept --example clock_cost` (part of `cargo xtask bench`).

use hsa_intercept::clock::{monotonic_ns, now_ns, start};
use std::hint::black_box;
use std::time::Instant;

const READS: u32 = 2_000_000;

fn median_ns_per_read(read: fn() -> u64) -> f64 {
    let mut rounds: Vec<f64> = (0..9)
        .map(|_| {
            let begin = Instant::now();
            for _ in 0..READS {
                black_box(read());
            }
            begin.elapsed().as_nanos() as f64 / f64::from(READS)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

fn main() {
    start();
    let tsc = median_ns_per_read(now_ns);
    let kernel = median_ns_per_read(monotonic_ns);
    println!("| host timestamp | ns / read |");
    println!("|---|---|");
    println!("| `clock::now_ns` (TSC clock) | {tsc:.1} |");
    println!("| `clock_gettime(CLOCK_MONOTONIC)` | {kernel:.1} |");
}
