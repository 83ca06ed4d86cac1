//! `cargo xtask pm4-dump [--agent gfx1150] [--base ADDR] [--output ADDR] COUNTER...`: the command
//! buffers of one counter pass on the simulated Radeon 890M's topology (16 CUs, 1 shader engine,
//! 2 shader arrays per engine), as one JSON document.
//!
//! Counter names resolve through the definitions `rocprof` would use (`ROCPROFILER_METRICS_PATH`,
//! else the built-in ones of the simulated GPU); derived counters expand to their base counters.
//! The command memory is placed at `--base` (default 0x100000000) and the output buffer at
//! `--output` (default: the next 4 KiB boundary after the command memory); the buffers embed
//! these addresses.

use anyhow::{Context, Result, bail};
use pmc_dxg::defs::{Definitions, DefsSource};
use pmc_dxg::plan::{DXG_FRAME_DWORDS, Packing, plan};
use pmc_dxg::{BaseEvent, Topology};
use serde::Serialize;
use trace_records::agents::{Agent, AgentKind, GpuProperties};

/// The simulated 890M as discovery describes it (the properties the counters depend on).
fn simulated_890m(gfx: &str) -> Agent {
    Agent {
        kind: AgentKind::Gpu,
        logical_node_id: 1,
        node_id: 1,
        logical_node_type_id: 0,
        name: gfx.to_owned(),
        product_name: "AMD Radeon 890M Graphics".into(),
        vendor_name: "AMD".into(),
        model_name: String::new(),
        cpu_cores_count: 0,
        gpu: Some(GpuProperties {
            simd_count: 32,
            simd_per_cu: 2,
            cu_count: 16,
            num_shader_banks: 1,
            simd_arrays_per_engine: 2,
            array_count: 2,
            cu_per_simd_array: 8,
            wave_front_size: 32,
            max_waves_per_simd: 16,
            num_xcc: 1,
            ..Default::default()
        }),
    }
}

#[derive(Debug, Serialize)]
struct Dump {
    agent: String,
    counters: Vec<String>,
    base_counters: Vec<String>,
    command_address: String,
    output_address: String,
    start: Vec<u32>,
    stop: Vec<u32>,
    read: Vec<u32>,
    output_bytes: usize,
    samples: Vec<SampleOut>,
}

#[derive(Debug, Serialize)]
struct SampleOut {
    counter: String,
    block: String,
    se: u32,
    sa: u32,
    wgp: u32,
    offset: usize,
}

fn address(text: &str) -> Result<u64> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.with_context(|| format!("'{text}' is not an address (decimal or 0x hex)"))
}

/// Runs the command with its arguments (after `pm4-dump`).
pub fn run(args: &[String]) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(&dump(args)?)?);
    Ok(())
}

/// The document for `args`.
fn dump(args: &[String]) -> Result<Dump> {
    let mut gfx = "gfx1150".to_owned();
    let (mut base, mut output) = (0x1_0000_0000u64, None);
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{what} needs a value"))
        };
        match a.as_str() {
            "--agent" => gfx = value("--agent")?,
            "--base" => base = address(&value("--base")?)?,
            "--output" => output = Some(address(&value("--output")?)?),
            other if other.starts_with('-') => bail!("unknown option {other}"),
            name => names.extend(name.split(',').filter(|n| !n.is_empty()).map(String::from)),
        }
    }
    if names.is_empty() {
        bail!("give at least one counter, e.g. `cargo xtask pm4-dump SQ_WAVES GRBM_COUNT`");
    }
    let agent = simulated_890m(&gfx);
    let topology = Topology::of(&agent).context("the agent has no topology")?;
    // Say "not supported" for another target before its counters are even looked up.
    pmc_dxg::pm4::Geometry::of(&topology)?;
    let source = DefsSource::from_process(None);
    let defs = Definitions::load(&source)?;
    let counters = defs.for_agent(&agent);
    let mut base_events: Vec<(String, BaseEvent)> = Vec::new();
    for n in &names {
        for b in counters.expand(n)? {
            if !base_events.iter().any(|(k, _)| *k == b.0) {
                base_events.push(b);
            }
        }
    }
    let passes = plan(
        &topology,
        &base_events,
        Packing::OnePass,
        Some(DXG_FRAME_DWORDS),
    )?;
    let pass = passes.first().context("no base counter to program")?;
    // The output address depends on the command memory's size: build once to learn it.
    let probe = pmc_dxg::pm4::build_pass(&topology, &pass.counters, base, base)?;
    let output = output.unwrap_or((base + probe.command_bytes as u64).next_multiple_of(4096));
    let buffers = pmc_dxg::pm4::build_pass(&topology, &pass.counters, base, output)?;
    Ok(Dump {
        agent: gfx,
        counters: names,
        base_counters: buffers.counters.iter().map(|c| c.name.clone()).collect(),
        command_address: format!("{base:#x}"),
        output_address: format!("{output:#x}"),
        output_bytes: buffers.output_bytes,
        samples: buffers
            .samples
            .iter()
            .map(|s| SampleOut {
                counter: buffers.counters[s.counter].name.clone(),
                block: s.block.name().to_owned(),
                se: s.se,
                sa: s.sa,
                wgp: s.wgp,
                offset: s.offset,
            })
            .collect(),
        start: buffers.start,
        stop: buffers.stop,
        read: buffers.read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn one_counter_gives_the_verified_start_and_stop_sequences() {
        let d = dump(&args(&["SQ_WAVES"])).unwrap();
        // verified-facts §1: the start buffer of {SQ_WAVES}, dword for dword.
        let start: [u32; 34] = [
            0xC0004600, 0x407, 0xC0017900, 0x200, 0xE0000000, 0xC0017900, 0x1808, 0, 0xC0017900,
            0x19E2, 0x1FFFF, 0xC0017900, 0x200, 0xE0000000, 0xC0017900, 0x19C0, 4, 0xC0017900,
            0x19E0, 0x55, 0xC0017900, 0x200, 0xE0000000, 0xC0017600, 0x20B, 1, 0xC0017900, 0x1808,
            0, 0xC0017900, 0x1808, 1, 0xC0004600, 0x407,
        ];
        assert_eq!(d.start[..34], start);
        // Then the proof of execution: one WRITE_DATA (opcode 0x37, 3 body dwords after the
        // control word) of 0x5EEDCAFE into the output buffer's spare last slot.
        assert_eq!(d.start.len(), 34 + 5, "{:x?}", &d.start[34..]);
        assert_eq!((d.start[34] >> 8) & 0xFF, 0x37, "a WRITE_DATA packet");
        assert_eq!(d.start[38], 0x5EED_CAFE);
        assert_eq!(
            d.stop,
            [
                0xC0017900, 0x200, 0xE0000000, 0xC0017900, 0x1808, 2, 0xC0004600, 0x407
            ]
        );
        assert_eq!(&d.read[..3], &[0xC0017900, 0x1808, 0x401]);
        // 1 SE × 2 SAs × 4 WGPs.
        assert_eq!(d.samples.len(), 8);
        assert_eq!(d.output_bytes, 8 + 8 * 8);
        let wgp1 = &d.samples[1];
        assert_eq!((wgp1.se, wgp1.sa, wgp1.wgp, wgp1.offset), (0, 0, 1, 8));
    }

    #[test]
    fn the_four_counter_pass_lays_out_as_measured() {
        let d = dump(&args(&[
            "SQ_WAVES,SQ_BUSY_CYCLES",
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
        ]))
        .unwrap();
        assert_eq!(d.output_bytes, 152);
        let first = |name: &str| d.samples.iter().find(|s| s.counter == name).unwrap().offset;
        assert_eq!(
            [
                first("SQ_WAVES"),
                first("SQ_BUSY_CYCLES"),
                first("GRBM_COUNT"),
                first("GRBM_GUI_ACTIVE")
            ],
            [0, 64, 128, 136]
        );
        // A derived counter expands to its base counters.
        let d = dump(&args(&["GPU_UTIL"])).unwrap();
        let mut base = d.base_counters.clone();
        base.sort();
        assert_eq!(base, ["GRBM_COUNT", "GRBM_GUI_ACTIVE"]);
    }

    #[test]
    fn what_needs_two_passes_or_another_target_is_refused_by_name() {
        let e = dump(&args(&["GRBM_COUNT", "GRBM_GUI_ACTIVE", "GRBM_CP_BUSY"])).unwrap_err();
        assert!(e.to_string().contains("GRBM_CP_BUSY"), "{e}");
        let e = dump(&args(&["--agent", "gfx90a", "SQ_WAVES"])).unwrap_err();
        assert!(e.to_string().contains("not supported yet"), "{e}");
        let e = dump(&args(&["BOGUS"])).unwrap_err();
        assert!(e.to_string().contains("BOGUS"), "{e}");
        assert!(dump(&args(&[])).is_err());
    }
}
