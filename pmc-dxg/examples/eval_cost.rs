//! What evaluating one dispatch's derived counters costs: every derived counter the definitions
//! give a simulated gfx1150 agent that this build can collect (the built-in definitions unless
//! `ROCPROFILER_METRICS_PATH` names others), compiled once into one program, then evaluated
//! over realistic read-back values many times. Prints, per GPU shape,
//!
//! `ns per evaluation of <counters>: <median ns> (...)`
//!
//! Run it optimised: `cargo run --release -p pmc-dxg --example eval_cost`.

use std::hint::black_box;
use std::time::Instant;

use pmc_dxg::defs::{CounterKind, Definitions, DefsSource};
use wslsim_scenario::GpuNode;

// The agent builder the tests use.
#[path = "../tests/common/mod.rs"]
mod common;

const ROUNDS: usize = 31;
const ITERATIONS: usize = 20_000;

/// A plausible read-back value for sample `k` of a counter: cycle counts around a
/// millisecond at 2.9 GHz, event counts in the thousands, never all equal.
fn sample(name: &str, k: usize) -> f64 {
    let base = if name.contains("CYCLES") || name.starts_with("GRBM") {
        2_900_000.0
    } else if name.contains("INSTS") {
        65_536.0
    } else {
        1_024.0
    };
    base + (k as f64) * 17.0
}

fn main() {
    let source = DefsSource::from_process(None);
    let defs = match Definitions::load(&source) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("eval_cost: {e}");
            std::process::exit(1);
        }
    };
    let mut two_se = GpuNode::radeon_890m();
    two_se.simd_count = 64;
    two_se.shader_engines = 2;
    for (label, node) in [
        ("Radeon 890M", GpuNode::radeon_890m()),
        ("2 shader engines, 32 CUs", two_se),
    ] {
        let counters = defs.for_agent(&common::agent_from(&node, "gfx1150"));
        let names: Vec<&str> = counters
            .counters()
            .iter()
            .filter(|c| {
                matches!(c.kind, CounterKind::Derived { .. })
                    && !c.inputs.is_empty()
                    && c.is_collectable()
            })
            .map(|c| c.name.as_str())
            .collect();
        let program = match counters.prepare(&names) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("eval_cost: {e}");
                std::process::exit(1);
            }
        };
        let data: Vec<Vec<f64>> = program
            .inputs()
            .iter()
            .map(|i| (0..i.shape.len()).map(|k| sample(&i.name, k)).collect())
            .collect();
        let inputs: Vec<&[f64]> = data.iter().map(Vec::as_slice).collect();
        let mut ev = program.evaluator();
        let mut rounds = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..ITERATIONS {
                if let Err(e) = ev.evaluate(black_box(&inputs)) {
                    eprintln!("eval_cost: {e}");
                    std::process::exit(1);
                }
                black_box(ev.value(0));
            }
            rounds.push(start.elapsed().as_nanos() as f64 / ITERATIONS as f64);
        }
        rounds.sort_by(f64::total_cmp);
        let median = rounds[ROUNDS / 2];
        let samples = program
            .inputs()
            .iter()
            .map(|i| i.shape.len())
            .max()
            .unwrap_or(0);
        println!(
            "ns per evaluation of {}: {median:.1} ({label}; {} counters from {} inputs, up to \
             {samples} samples each; definitions {}; median of {ROUNDS} rounds of {ITERATIONS})",
            names.join(","),
            names.len(),
            program.inputs().len(),
            defs.origin(),
        );
    }
}
