//! What planning and building one pass costs: {SQ_WAVES, SQ_BUSY_CYCLES, GRBM_COUNT,
//! GRBM_GUI_ACTIVE} on the Radeon 890M under the DXG frame, over many rounds.
//!
//! `cargo run --release -p pmc-dxg --example build_cost [rounds]`; the last line is
//! `median_ns=<n>`.

use std::hint::black_box;
use std::time::Instant;

use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, plan};
use pmc_dxg::pm4::build_pass;

// The reference topology and counter helpers the tests use.
#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(20_000)
        .max(1);
    let topology = common::radeon_890m();
    let counters = vec![
        common::sq("SQ_WAVES", 4),
        common::sq("SQ_BUSY_CYCLES", 3),
        common::grbm("GRBM_COUNT", 0),
        common::grbm("GRBM_GUI_ACTIVE", 2),
    ];
    let (base, output) = (0x7F00_0000_0000_u64, 0x7F00_0001_0000_u64);
    let once = || {
        let passes = plan(
            black_box(&topology),
            black_box(&counters),
            Packing::OnePass,
            Some(DXG_FRAME_DWORDS),
        )
        .expect("the four counters fit one pass");
        let buffers =
            build_pass(&topology, &passes[0].counters, base, output).expect("the pass builds");
        black_box(buffers);
    };
    for _ in 0..rounds.min(1_000) {
        once();
    }
    let mut times: Vec<u64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            once();
            started.elapsed().as_nanos() as u64
        })
        .collect();
    times.sort_unstable();
    let median = times[times.len() / 2];
    println!(
        "plan + build of the 4-counter pass: median {median} ns, p90 {} ns, min {} ns over \
         {rounds} rounds",
        times[times.len() * 9 / 10],
        times[0]
    );
    println!("median_ns={median}");
}
