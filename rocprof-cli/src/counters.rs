//! `rocprof avail list|info|pmc-check` and `rocprof -L`: the hardware counters of each GPU
//! agent, in rocprofv3-avail's text layout (or one JSON document with `--json`).
//!
//! The counters come from rocprofiler-sdk's `counter_defs.yaml` (`ROCPROFILER_METRICS_PATH`, else
//! the ROCm install beside the HSA runtime found on the library path, else the built-in
//! definitions of the simulated GPU), resolved per agent by chip name, then by family: the
//! stock file has no `gfx1150` key, and rocprofv3 lists no counter on that GPU; this lists the
//! `gfx11` ones.

use anyhow::{Context as _, Result, bail};
use pmc_dxg::Topology;
use pmc_dxg::collection::{Gpu, check};
use pmc_dxg::defs::{CounterKind, Definitions, DefsSource};
use serde::Serialize;
use std::fmt::Write as _;
use std::process::ExitCode;
use trace_records::agents::Agent;

/// What `rocprof avail` was asked about counters.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Query {
    /// Names: the counters of each GPU (`--pmc`, the default) or the agents' properties
    /// (`--agent`).
    List {
        /// The counters' names.
        #[arg(long)]
        pmc: bool,
        /// The agents' properties.
        #[arg(long)]
        agent: bool,
        /// The PC-sampling configurations (none on WSL2; the reason is printed).
        #[arg(long = "pc-sampling")]
        pc_sampling: bool,
    },
    /// Details: every counter (or the named ones) with its description, its expression or
    /// block, and its dimensions; without `--pmc`, the agents' properties too.
    Info {
        /// Only counters (optionally only these names).
        #[arg(long, num_args = 0.., value_name = "COUNTER")]
        pmc: Option<Vec<String>>,
        /// The PC-sampling configurations (none on WSL2; the reason is printed).
        #[arg(long = "pc-sampling")]
        pc_sampling: bool,
    },
    /// Whether the counters can be collected together (in one pass) on the GPU, and if not,
    /// which conflict and the passes they would take. `NAME:device=N` picks the GPU per counter.
    PmcCheck {
        /// The counters.
        #[arg(required = true, value_name = "COUNTER")]
        counters: Vec<String>,
    },
}

/// `{key:30}:\t{value}` (rocprofv3-avail's agent and list lines).
fn wide(s: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(s, "{key:30}:\t{value}");
}

/// `{key:20}:\t{value}` (rocprofv3-avail's counter lines).
fn narrow(s: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(s, "{key:20}:\t{value}");
}

/// The names in columns no wider than `width`.
fn columns(names: &[&str], width: usize) -> String {
    let cell = names.iter().map(|n| n.len()).max().unwrap_or(0) + 2;
    let per_line = (width / cell).max(1);
    let mut s = String::new();
    for row in names.chunks(per_line) {
        let line: String = row.iter().map(|n| format!("{n:cell$}")).collect();
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 20)
        .unwrap_or(120)
}

/// The agent properties `list --agent` prints, in rocprofv3-avail's order.
fn agent_lines(s: &mut String, gpu: &Gpu) {
    let a = &gpu.agent;
    let g = a.gpu.clone().unwrap_or_default();
    let dims = |d: [u32; 3]| format!("{{{}, {}, {}}}", d[0], d[1], d[2]);
    let _ = writeln!(s, "GPU:{}", gpu.index);
    wide(s, "cpu_cores_count", a.cpu_cores_count);
    wide(s, "simd_count", g.simd_count);
    wide(s, "max_waves_per_simd", g.max_waves_per_simd);
    wide(s, "runtime_visibility", 1);
    wide(s, "wave_front_size", g.wave_front_size);
    wide(s, "num_xcc", g.num_xcc);
    wide(s, "cu_count", g.cu_count);
    wide(s, "array_count", g.array_count);
    wide(s, "num_shader_banks", g.num_shader_banks);
    wide(s, "simd_arrays_per_engine", g.simd_arrays_per_engine);
    wide(s, "cu_per_simd_array", g.cu_per_simd_array);
    wide(s, "simd_per_cu", g.simd_per_cu);
    wide(s, "gfx_target_version", g.gfx_target_version);
    wide(s, "max_waves_per_cu", g.max_waves_per_cu);
    wide(s, "gpu_id", g.gpu_id);
    wide(s, "workgroup_max_dim", dims(g.workgroup_max_dim));
    wide(s, "grid_max_dim", dims(g.grid_max_dim));
    wide(s, "name", &a.name);
    wide(s, "vendor_name", &a.vendor_name);
    wide(s, "product_name", &a.product_name);
    wide(s, "model_name", &a.model_name);
    wide(s, "node_id", a.node_id);
    wide(s, "logical_node_id", a.logical_node_id);
    wide(s, "logical_node_type_id", a.logical_node_type_id);
    s.push('\n');
}

/// One counter as `info --pmc` prints it.
fn counter_lines(s: &mut String, c: &pmc_dxg::defs::Counter) {
    narrow(s, "Counter_Name", &c.name);
    narrow(s, "Description", &c.description);
    match &c.kind {
        CounterKind::Derived { expression, .. } => {
            narrow(s, "Expression", expression);
            narrow(s, "Dimensions", &c.dimensions);
        }
        CounterKind::Base(e) => {
            narrow(s, "Block", &e.block);
            narrow(s, "Dimensions", &c.dimensions);
        }
        // A constant has neither; rocprofv3-avail leaves an extra blank line instead.
        CounterKind::Constant(_) => s.push('\n'),
    }
    s.push('\n');
}

/// Where the definitions came from and whether the family's were used (on stderr: stdout keeps
/// rocprofv3-avail's layout).
fn note_source(source: &DefsSource, gpus: &[Gpu]) {
    for g in gpus {
        if g.counters.family_fallback() {
            let origin = match source.path() {
                Some(p) => format!("{} has", p.display()),
                None => "the built-in definitions have".to_owned(),
            };
            eprintln!(
                "rocprof: note: GPU {} ({}): {origin} no {} entries; the {} family's definitions are used (stock rocprofv3 lists none here)",
                g.index,
                g.counters.gfx(),
                g.counters.gfx(),
                pmc_dxg::defs::gfx_family(g.counters.gfx()).unwrap_or_default()
            );
        }
    }
}

/// `avail list|info --pc-sampling`: rocprofv3's per-GPU block with no configuration, and why.
fn print_pc_sampling(gpus: &[Gpu], json: bool) -> Result<()> {
    let reason = rocprof_doctor::PC_SAMPLING_UNAVAILABLE;
    if json {
        let list: Vec<serde_json::Value> = gpus
            .iter()
            .map(|g| {
                serde_json::json!({
                    "gpu": g.index,
                    "name": g.counters.gfx(),
                    "pc_sampling_configs": [],
                    "unavailable": reason,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let mut s = String::new();
    for g in gpus {
        let _ = writeln!(s, "GPU     :\t{}", g.index);
        let _ = writeln!(s, "Name    :\t{}", g.counters.gfx());
        let _ = writeln!(s, "configs :\tnone: {reason}");
    }
    print!("{s}");
    Ok(())
}

/// Runs a counter query. `pmc-check` of a set that does not fit one pass exits 1, as
/// rocprofv3-avail does.
pub fn run(
    query: &Query,
    device: Option<u32>,
    json: bool,
    extra: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let extra = extra
        .map(|p| {
            Definitions::load_extra(p).with_context(|| {
                format!("-E/--extra-counters {}: cannot use the file", p.display())
            })
        })
        .transpose()?;
    let (source, gpus) =
        rocprof_runner::counters::gpus_with(device, extra.as_ref()).map_err(|e| {
            anyhow::anyhow!(crate::messages::counter_refusal(
                &e,
                "there are no counters to list"
            ))
        })?;
    if !json {
        note_source(&source, &gpus);
    }
    let pc_sampling = matches!(
        query,
        Query::List {
            pc_sampling: true,
            ..
        } | Query::Info {
            pc_sampling: true,
            ..
        }
    );
    if pc_sampling {
        print_pc_sampling(&gpus, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    match query {
        Query::List { agent: true, .. } => {
            if json {
                let agents: Vec<&Agent> = gpus.iter().map(|g| &g.agent).collect();
                println!("{}", serde_json::to_string_pretty(&agents)?);
            } else {
                let mut s = String::new();
                for g in &gpus {
                    agent_lines(&mut s, g);
                }
                print!("{s}");
            }
        }
        Query::List { .. } => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&listing(&source, &gpus, None))?
                );
            } else {
                let mut s = String::new();
                for g in &gpus {
                    wide(&mut s, "GPU", g.index);
                    wide(&mut s, "Name", g.counters.gfx());
                    let names: Vec<&str> = g
                        .counters
                        .counters()
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect();
                    let _ = writeln!(s, "{:30}:", "PMC");
                    s.push_str(&columns(&names, terminal_width()));
                    s.push('\n');
                }
                print!("{s}");
            }
        }
        Query::Info { pmc, .. } => {
            let only = pmc.as_ref().filter(|v| !v.is_empty());
            for g in &gpus {
                if let Some(names) = only {
                    for n in names {
                        if g.counters.get(n).is_none() {
                            bail!(
                                "GPU {} ({}) has no counter {n} (`rocprof avail list` lists them)",
                                g.index,
                                g.counters.gfx()
                            );
                        }
                    }
                }
            }
            if json {
                let doc = listing(&source, &gpus, only.map(Vec::as_slice));
                println!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(ExitCode::SUCCESS);
            }
            let mut s = String::new();
            if pmc.is_none() {
                for g in &gpus {
                    agent_lines(&mut s, g);
                }
            }
            for g in &gpus {
                let _ = writeln!(s, "GPU:{}", g.index);
                let _ = writeln!(s, "Name:{}", g.counters.gfx());
                for c in g.counters.counters() {
                    if only.is_some_and(|names| !names.contains(&c.name)) {
                        continue;
                    }
                    counter_lines(&mut s, c);
                }
            }
            print!("{s}");
        }
        Query::PmcCheck { counters } => return pmc_check(&gpus, counters, json),
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON form of the counters (all, or only `names`).
fn listing(source: &DefsSource, gpus: &[Gpu], names: Option<&[String]>) -> Listing {
    Listing {
        schema: "rocprof-avail-counters/1",
        definitions: source.origin(),
        gpus: gpus
            .iter()
            .map(|g| GpuListing {
                gpu: g.index,
                name: g.counters.gfx().to_owned(),
                family_fallback: g.counters.family_fallback(),
                counters: g
                    .counters
                    .counters()
                    .iter()
                    .filter(|c| names.is_none_or(|n| n.contains(&c.name)))
                    .map(|c| CounterListing {
                        name: c.name.clone(),
                        description: c.description.clone(),
                        kind: match c.kind {
                            CounterKind::Base(_) => "base",
                            CounterKind::Derived { .. } => "derived",
                            CounterKind::Constant(_) => "constant",
                        },
                        block: match &c.kind {
                            CounterKind::Base(e) => Some(e.block.name().to_owned()),
                            _ => None,
                        },
                        event: match &c.kind {
                            CounterKind::Base(e) => Some(e.event),
                            _ => None,
                        },
                        expression: match &c.kind {
                            CounterKind::Derived { expression, .. } => Some(expression.clone()),
                            _ => None,
                        },
                        value: match c.kind {
                            CounterKind::Constant(v) => Some(v),
                            _ => None,
                        },
                        dimensions: c
                            .dimensions
                            .dims()
                            .iter()
                            .map(|(d, e)| DimensionListing {
                                name: d.name().to_owned(),
                                instances: *e,
                            })
                            .collect(),
                        collectable: c.is_collectable(),
                    })
                    .collect(),
                unresolved: g
                    .counters
                    .unresolved()
                    .iter()
                    .filter(|u| names.is_none_or(|n| n.contains(&u.name)))
                    .map(|u| UnresolvedListing {
                        name: u.name.clone(),
                        reason: u.reason.to_string(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct Listing {
    schema: &'static str,
    definitions: String,
    gpus: Vec<GpuListing>,
}

#[derive(Serialize)]
struct GpuListing {
    gpu: u32,
    name: String,
    family_fallback: bool,
    counters: Vec<CounterListing>,
    unresolved: Vec<UnresolvedListing>,
}

#[derive(Serialize)]
struct CounterListing {
    name: String,
    description: String,
    kind: &'static str,
    block: Option<String>,
    event: Option<u32>,
    expression: Option<String>,
    value: Option<f64>,
    dimensions: Vec<DimensionListing>,
    collectable: bool,
}

#[derive(Serialize)]
struct DimensionListing {
    name: String,
    instances: u32,
}

#[derive(Serialize)]
struct UnresolvedListing {
    name: String,
    reason: String,
}

/// `pmc-check NAME[:device=N]…`.
fn pmc_check(gpus: &[Gpu], counters: &[String], json: bool) -> Result<ExitCode> {
    let default_gpu = gpus[0].index;
    let mut by_gpu: Vec<(u32, Vec<String>)> = Vec::new();
    for c in counters {
        let (name, gpu) = match c.split_once(':') {
            Some((name, rest)) => {
                let n = rest
                    .strip_prefix("device=")
                    .and_then(|d| d.parse::<u32>().ok())
                    .with_context(|| {
                        format!("'{c}': the suffix must be ':device=N' with N a GPU index")
                    })?;
                (name.to_owned(), n)
            }
            None => (c.clone(), default_gpu),
        };
        match by_gpu.iter_mut().find(|(g, _)| *g == gpu) {
            Some((_, names)) => names.push(name),
            None => by_gpu.push((gpu, vec![name])),
        }
    }
    let mut checks = Vec::new();
    for (gpu, names) in &by_gpu {
        let Some(g) = gpus.iter().find(|g| g.index == *gpu) else {
            bail!("there is no GPU {gpu} (`rocprof avail list --agent` lists the GPUs by index)");
        };
        let topology = Topology::of(&g.agent).context("the GPU has no topology")?;
        checks.push(check(&g.counters, &topology, *gpu, names));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            print!("{c}");
        }
    }
    Ok(if checks.iter().all(|c| c.one_pass) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fill_columns_within_the_width() {
        let names = ["SQ_WAVES", "GRBM_COUNT", "GPU_UTIL", "SQ_BUSY_CYCLES"];
        let text = columns(&names, 40);
        // The widest name is 14 characters, so a cell is 16 and two fit in 40.
        assert_eq!(
            text,
            "SQ_WAVES        GRBM_COUNT\nGPU_UTIL        SQ_BUSY_CYCLES\n"
        );
        assert_eq!(
            columns(&names, 5).lines().count(),
            4,
            "at least one per line"
        );
    }
}
