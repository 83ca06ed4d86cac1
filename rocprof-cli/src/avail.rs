//! `rocprof avail`: the agents the profiler can see, how it found them, and what it left out.

use anyhow::{Result, bail};
use serde::Serialize;
use std::fmt::Write as _;
use std::process::ExitCode;
use wsl_topology::layout_choice::{LayoutChoice, LayoutDecision};
use wsl_topology::settings::ENV_LAYOUT;
use wsl_topology::wsl::ThunkProbe;
use wsl_topology::{Agent, Discovery, NodeLayout, Omission, Settings};

/// Options of `rocprof avail`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON document (schema: docs/avail-json.md) instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// Only this GPU (rocprofv3's GPU index, `logical_node_type_id`) for the counter queries.
    #[arg(short = 'd', long = "device", global = true, value_name = "N")]
    device: Option<u32>,

    /// Counter definitions added to the installed ones for the counter queries (a YAML file in
    /// counter_defs.yaml's form), as a run's `-E/--extra-counters` adds them.
    #[arg(
        short = 'E',
        long = "extra-counters",
        global = true,
        value_name = "YAML"
    )]
    extra_counters: Option<std::path::PathBuf>,

    /// Counters and agent properties in rocprofv3-avail's layout; without one, how discovery
    /// went.
    #[command(subcommand)]
    query: Option<crate::counters::Query>,
}

/// Version of the JSON document's schema.
pub const SCHEMA: &str = "rocprof-avail/1";

/// Everything `avail` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    schema: &'static str,
    #[serde(flatten)]
    discovery: Discovery,
    probe: Option<ThunkProbe>,
    probe_error: Option<String>,
    layout: Option<LayoutChoice>,
    /// `WSLKMT_VENDOR_PACKET` after discovery (set to 1 on WSL unless the user chose).
    vendor_packet: Option<String>,
    warnings: Vec<String>,
}

/// Builds the report: settings, platform, probe, discovery.
pub fn collect() -> Result<Report> {
    let mut settings = Settings::from_env();
    if let Some(bad) = settings.problems.iter().find(|p| p.contains(ENV_LAYOUT)) {
        bail!("{bad}");
    }
    let selection = wsl_topology::platform::select(&settings);
    let decision = wsl_topology::layout_choice::choose(&settings, selection.platform);
    // Before anything is launched: would this runtime and thunk even work together?
    let pairing = rocprof_doctor::pairing_warning(&decision).map(|w| w.to_string());
    let LayoutDecision {
        probe,
        probe_error,
        choice: layout,
        warnings,
    } = decision;
    let mut warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    warnings.extend(pairing);
    if let Some(choice) = &layout {
        settings.layout = NodeLayout::from_size(choice.size);
    }
    warnings.splice(0..0, settings.problems.iter().cloned());
    let discovery = wsl_topology::discover_on(&settings, selection);
    let vendor_packet = std::env::var(wsl_topology::settings::ENV_VENDOR_PACKET).ok();
    Ok(Report {
        schema: SCHEMA,
        discovery,
        probe,
        probe_error,
        layout,
        vendor_packet,
        warnings,
    })
}

/// Runs `rocprof avail`.
pub fn run(args: &Args) -> Result<ExitCode> {
    if let Some(query) = &args.query {
        return crate::counters::run(
            query,
            args.device,
            args.json,
            args.extra_counters.as_deref(),
        );
    }
    let report = collect()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The human-readable report.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let d = &r.discovery;
    let _ = writeln!(
        s,
        "Platform   : {} ({})",
        d.selection.platform.name(),
        d.selection.detail
    );
    if let Some(t) = &d.thunk {
        let _ = writeln!(
            s,
            "DXG thunk  : {}{}",
            t.path.as_deref().unwrap_or(
                // A library that loaded but lacks a required entry point is closed again
                // before its path is known: it was found, and refused.
                if d.omissions
                    .iter()
                    .any(|o| o.kind == trace_records::docs::OmissionKind::ThunkIncomplete)
                {
                    "librocdxg.so (found, refused: it lacks entry points the topology read needs)"
                } else {
                    "librocdxg.so (not loaded)"
                }
            ),
            t.loaded_from.map(|f| format!(" ({f})")).unwrap_or_default()
        );
        if let Some(p) = &r.probe {
            let handshake = match (p.probe.handshake_offered, p.probe.accepted) {
                (false, _) => "not exported by this thunk".to_owned(),
                (true, Some(l)) => format!("accepts {}-byte HsaNodeProperties", l.size()),
                (true, None) => "rejects every known HsaNodeProperties layout".to_owned(),
            };
            let _ = writeln!(s, "  DxgAbiCheck   : {handshake}");
            let _ = writeln!(
                s,
                "  record size   : {}",
                p.probe.measured.map_or_else(
                    || format!(
                        "not measured ({})",
                        p.probe.measure_error.as_deref().unwrap_or("?")
                    ),
                    |m| format!("{m} bytes written per node (measured)")
                )
            );
        } else if let Some(e) = &r.probe_error {
            let _ = writeln!(s, "  probe         : failed: {e}");
        }
        if let Some(l) = &r.layout {
            let _ = writeln!(
                s,
                "  layout in use : {} bytes ({}); the profiler passes ROCPROF_HSAKMT_LAYOUT={} to the application",
                l.size, l.source, l.size
            );
        }
        let _ = writeln!(
            s,
            "  KMT nodes     : {} reported, {} GPU node(s) read",
            t.total_nodes, t.gpu_nodes
        );
        let _ = writeln!(
            s,
            "  counters      : WSLKMT_VENDOR_PACKET={}{}",
            r.vendor_packet.as_deref().unwrap_or("(unset)"),
            if r.vendor_packet.as_deref() == Some("1") {
                ""
            } else {
                " — PM4 counter packets will be dropped and every counter will read 0"
            }
        );
    }
    for a in d.agents() {
        s.push('\n');
        render_agent(&mut s, a);
    }
    s.push('\n');
    if d.omissions.is_empty() {
        let _ = writeln!(s, "Omissions  : none");
    } else {
        let _ = writeln!(s, "Omissions  : {}", d.omissions.len());
        for o in &d.omissions {
            render_omission(&mut s, o);
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "Warning    : {w}");
    }
    let gpus: Vec<&str> = d.gpus().map(|a| a.name.as_str()).collect();
    let cpus = d.agents().len() - gpus.len();
    let _ = writeln!(
        s,
        "\nSummary    : {} GPU agent(s){}, {cpus} CPU agent(s), {} omission(s)",
        gpus.len(),
        if gpus.is_empty() {
            String::new()
        } else {
            format!(" ({})", gpus.join(", "))
        },
        d.omissions.len()
    );
    if gpus.is_empty() {
        let _ = writeln!(
            s,
            "             No GPU agent could be described here: no counters or thread trace (kernels and copies may still be traced through HSA). The omissions above say why; see docs/troubleshooting.md."
        );
    }
    s
}

fn kv(s: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(s, "  {key:<28}: {value}");
}

fn render_agent(s: &mut String, a: &Agent) {
    match &a.gpu {
        None => {
            let _ = writeln!(s, "Agent {}  CPU  {}", a.logical_node_id, a.product_name);
            kv(s, "node_id", a.node_id);
            kv(s, "logical_node_id", a.logical_node_id);
            kv(s, "logical_node_type_id", a.logical_node_type_id);
            kv(s, "cpu_cores_count", a.cpu_cores_count);
            kv(s, "vendor_name", &a.vendor_name);
        }
        Some(g) => {
            let _ = writeln!(
                s,
                "Agent {}  GPU  {}  {}",
                a.logical_node_id, a.name, a.product_name
            );
            kv(s, "node_id", a.node_id);
            kv(s, "logical_node_id", a.logical_node_id);
            kv(s, "logical_node_type_id", a.logical_node_type_id);
            kv(s, "name", &a.name);
            kv(s, "product_name", &a.product_name);
            kv(s, "vendor_name", &a.vendor_name);
            kv(s, "gfx_target_version", g.gfx_target_version);
            kv(s, "cu_count", g.cu_count);
            kv(s, "simd_count", g.simd_count);
            kv(s, "simd_per_cu", g.simd_per_cu);
            kv(s, "num_shader_banks", g.num_shader_banks);
            kv(s, "simd_arrays_per_engine", g.simd_arrays_per_engine);
            kv(s, "array_count", g.array_count);
            kv(s, "cu_per_simd_array", g.cu_per_simd_array);
            kv(s, "wave_front_size", g.wave_front_size);
            kv(s, "max_waves_per_simd", g.max_waves_per_simd);
            kv(s, "max_waves_per_cu", g.max_waves_per_cu);
            kv(s, "num_xcc", g.num_xcc);
            kv(s, "lds_size_in_kb", g.lds_size_in_kb);
            kv(
                s,
                "local_mem_size",
                format!("{} ({})", g.local_mem_size, mib(g.local_mem_size)),
            );
            kv(
                s,
                "max_engine_clk_fcompute",
                format!("{} MHz", g.max_engine_clk_fcompute),
            );
            kv(s, "vendor_id", format!("0x{:04x}", g.vendor_id));
            kv(s, "device_id", format!("0x{:04x}", g.device_id));
            kv(
                s,
                "location_id",
                format!(
                    "0x{:04x} (BDF {:02x}:{:02x}.{:x})",
                    g.location_id,
                    g.location_id >> 8,
                    (g.location_id >> 3) & 0x1f,
                    g.location_id & 7
                ),
            );
            kv(s, "family_id", g.family_id);
            kv(s, "fw_version", g.fw_version);
            kv(s, "sdma_fw_version", g.sdma_fw_version);
            kv(s, "gpu_id", g.gpu_id);
            if let Some(l) = g.luid {
                kv(s, "luid", l);
            }
            if let Some(k) = g.wallclock_khz {
                kv(s, "wallclock", format!("{k} kHz"));
            }
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

fn render_omission(s: &mut String, o: &Omission) {
    let _ = writeln!(s, "  - {}: {}", o.subject, o.reason);
}
