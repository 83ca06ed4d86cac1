//! `rocprof-selftest REQUEST-JSON`: the tiny HSA program `rocprof doctor` runs with the
//! profiler preloaded, exactly as `rocprof` runs an application, to see whether a real run
//! would record anything.
//!
//! It loads the HSA runtime with `dlopen` (as an application's dependency is loaded), calls
//! `hsa_init`, lists the agents, and on one GPU agent submits to a queue: the counter pass's
//! start packet, a marker packet (a vendor PM4-IB packet whose `WRITE_DATA` writes a known value
//! to memory), a barrier-AND packet with a completion signal (the "dispatch"), then the counter
//! pass's read and stop packets — all built with `pmc_dxg`, as the profiler builds them. It
//! prints one JSON [`protocol::Outcome`] on stdout and exits 0; a request it cannot read exits
//! 2. The profiler itself (the preloaded tool) records, in the record directory `rocprof
//! doctor` gave it, whether the runtime offered its API table and how the agents paired.
//!
//! It ships with `rocprof` (next to it), needs no GPU code object, and uses no simulator code.

#![deny(unsafe_code)]

mod hsa;

use rocprof_doctor::protocol;

use pmc_dxg::pm4::{self, HEADER_BARRIER};
use pmc_dxg::{BaseEvent, Topology};
use protocol::{CounterStep, CounterValue, HsaAgent, Outcome, Request, StatusReport, Step};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long any one wait may take.
const WAIT: Duration = Duration::from_secs(2);
/// Packets of the queue.
const QUEUE_SIZE: u32 = 64;
/// Where the marker's WRITE_DATA writes, inside the marker block.
const MARKER_TARGET: usize = 128;
/// Where the counter pass's command memory starts in the allocation.
const COMMAND_BASE: usize = 4096;

fn main() -> ExitCode {
    let Some(arg) = std::env::args().nth(1) else {
        eprintln!(
            "rocprof-selftest: usage: rocprof-selftest REQUEST-JSON (run by `rocprof doctor`)"
        );
        return ExitCode::from(2);
    };
    let request: Request = match serde_json::from_str(&arg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rocprof-selftest: the request is not readable: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = std::panic::catch_unwind(|| run(&request)).unwrap_or_else(|_| Outcome {
        schema: protocol::SCHEMA.into(),
        problems: vec!["the self-test panicked (see its stderr)".into()],
        ..Outcome::default()
    });
    match serde_json::to_string(&outcome) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rocprof-selftest: cannot write the outcome: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(request: &Request) -> Outcome {
    let mut out = Outcome {
        schema: protocol::SCHEMA.into(),
        ..Outcome::default()
    };
    let runtime = match hsa::Runtime::open(&request.runtime) {
        Ok(r) => r,
        Err(e) => {
            out.load_error = Some(e);
            out.mapped = mapped_libraries();
            return out;
        }
    };
    out.runtime_path = runtime.path();
    let status = runtime.init();
    out.init = Some(StatusReport {
        code: status,
        text: runtime.status_text(status),
    });
    out.mapped = mapped_libraries();
    if status != hsa::SUCCESS {
        return out;
    }
    out.build_version = runtime.build_version();
    match runtime.agents() {
        Ok(agents) => {
            out.agents = agents
                .iter()
                .map(|a| HsaAgent {
                    name: a.name.clone(),
                    gpu: a.gpu,
                    node_id: a.node_id,
                })
                .collect();
            if !request.init_only {
                exercise(&runtime, request, &agents, &mut out);
            }
        }
        Err(s) => out.problems.push(format!(
            "hsa_iterate_agents failed ({s:#x} {})",
            runtime.status_text(s)
        )),
    }
    let status = runtime.shut_down();
    out.shut_down = Some(StatusReport {
        code: status,
        text: runtime.status_text(status),
    });
    out
}

/// The queue part: marker, barrier and counter pass on one GPU agent.
fn exercise(rt: &hsa::Runtime, request: &Request, agents: &[hsa::AgentInfo], out: &mut Outcome) {
    // A GPU the profiler published (its topology builds the counter pass), else any GPU.
    let known = |a: &&hsa::AgentInfo| {
        request
            .agents
            .iter()
            .any(|r| r.is_gpu() && Some(r.node_id) == a.node_id)
    };
    let Some(gpu) = agents
        .iter()
        .filter(|a| a.gpu)
        .find(known)
        .or_else(|| agents.iter().find(|a| a.gpu))
    else {
        out.problems
            .push("the runtime reports no GPU agent, so nothing can be submitted".into());
        return;
    };
    out.gpu_node = gpu.node_id;
    let Some(cpu) = agents.iter().find(|a| a.cpu) else {
        out.problems.push(
            "the runtime reports no CPU agent (its kernarg pool holds the packets' buffers)".into(),
        );
        return;
    };
    let pool = match rt.kernarg_pool(cpu.handle) {
        Ok(p) => p,
        Err(e) => return out.problems.push(e),
    };

    // The counter pass, if the GPU's topology is known and the request names counters.
    let topology = request
        .agents
        .iter()
        .find(|r| r.is_gpu() && Some(r.node_id) == gpu.node_id)
        .and_then(Topology::of);
    let events: Vec<(String, BaseEvent)> = request.counters.iter().map(BaseEvent::named).collect();
    let mut counter_error = None;
    let sizing = match (&topology, events.is_empty()) {
        (Some(t), false) => match pm4::build_pass(t, &events, 0, 0) {
            Ok(p) => Some(p),
            Err(e) => {
                counter_error = Some(format!("the counter pass cannot be built: {e}"));
                None
            }
        },
        (None, false) => {
            counter_error = Some(format!(
                "GPU node {} has no agent record (discovery did not publish it), so its counter pass cannot be built",
                gpu.node_id.map_or("?".into(), |n| n.to_string())
            ));
            None
        }
        (_, true) => None,
    };
    let output_offset = sizing
        .as_ref()
        .map(|p| COMMAND_BASE + p.command_bytes.div_ceil(256) * 256);
    let total = match (&sizing, output_offset) {
        (Some(p), Some(o)) => o + p.output_bytes,
        _ => COMMAND_BASE,
    };
    let memory = match rt.allocate(pool, gpu.handle, total) {
        Ok(m) => m,
        Err(e) => return out.problems.push(e),
    };
    let pass = match (&topology, output_offset) {
        (Some(t), Some(o)) if memory.addr() % 256 == 0 => {
            match pm4::build_pass(
                t,
                &events,
                memory.addr() + COMMAND_BASE as u64,
                memory.addr() + o as u64,
            ) {
                Ok(p) => Some(p),
                Err(e) => {
                    counter_error = Some(format!("the counter pass cannot be built: {e}"));
                    None
                }
            }
        }
        (Some(_), Some(_)) => {
            counter_error = Some(format!(
                "the pool memory at {:#x} is not 256-byte aligned",
                memory.addr()
            ));
            None
        }
        _ => None,
    };
    if let Some(p) = &pass {
        memory.write(COMMAND_BASE, &p.command_memory());
    }

    // The marker: WRITE_DATA (DST_SEL 5 memory, WR_CONFIRM) of MARKER_VALUE.
    let target = memory.addr() + MARKER_TARGET as u64;
    let write_data = pm4::write_data(target, protocol::MARKER_VALUE);
    let bytes: Vec<u8> = write_data.iter().flat_map(|d| d.to_le_bytes()).collect();
    memory.write(0, &bytes);

    let (Ok(dispatched), Ok(done)) = (rt.signal(1), rt.signal(1)) else {
        return out.problems.push("hsa_signal_create failed".into());
    };
    let queue = match rt.queue(gpu.handle, QUEUE_SIZE) {
        Ok(q) => q,
        Err(s) => {
            return out.problems.push(format!(
                "hsa_queue_create on GPU node {} failed ({s:#x} {})",
                gpu.node_id.map_or("?".into(), |n| n.to_string()),
                rt.status_text(s)
            ));
        }
    };
    let mut packets: Vec<[u8; 64]> = Vec::new();
    let packets_of_pass = pass.as_ref().map(|p| p.packets());
    if let Some(p) = &packets_of_pass {
        packets.push(p.start);
    }
    packets.push(pm4::pm4_ib_packet(
        HEADER_BARRIER,
        memory.addr(),
        write_data.len() as u32,
        if pass.is_some() { 0 } else { done.handle() },
    ));
    packets.push(barrier_and(dispatched.handle()));
    if let (Some(pass), Some(p)) = (&pass, &packets_of_pass) {
        packets.push(p.read);
        packets.push(pm4::pm4_ib_packet(
            HEADER_BARRIER,
            pass.stop_addr(),
            pass.stop.len() as u32,
            done.handle(),
        ));
    }
    // The barrier-AND is not last when the marker carries `done`: keep submission order, and
    // wait for both signals below.
    let started = Instant::now();
    for packet in &packets {
        if let Err(e) = queue.submit(packet) {
            out.problems.push(e);
            return;
        }
    }
    let dispatch_value = dispatched.wait_below_one(WAIT);
    let dispatch_micros = started.elapsed().as_micros() as u64;
    let done_value = done.wait_below_one(WAIT);
    let done_micros = started.elapsed().as_micros() as u64;
    out.dispatch = Some(Step {
        ok: dispatch_value < 1,
        detail: if dispatch_value < 1 {
            format!(
                "a barrier-AND packet on GPU node {}'s queue completed its signal",
                gpu.node_id.map_or("?".into(), |n| n.to_string())
            )
        } else {
            format!(
                "a barrier-AND packet's completion signal still reads {dispatch_value} after {} s",
                WAIT.as_secs()
            )
        },
        micros: dispatch_micros,
    });
    let landed = memory.read(MARKER_TARGET, 4);
    let value = <[u8; 4]>::try_from(landed.as_slice()).map_or(0, u32::from_le_bytes);
    out.marker = Some(Step {
        ok: done_value < 1 && value == protocol::MARKER_VALUE,
        detail: if done_value >= 1 {
            format!(
                "the vendor packets did not complete: their signal still reads {done_value} after {} s",
                WAIT.as_secs()
            )
        } else if value == protocol::MARKER_VALUE {
            format!("the PM4 WRITE_DATA of a vendor PM4-IB packet wrote {value:#x} to memory")
        } else {
            format!(
                "the vendor PM4-IB packet completed but its WRITE_DATA never reached memory (read {value:#x}, expected {:#x}): the PM4 was dropped",
                protocol::MARKER_VALUE
            )
        },
        micros: done_micros,
    });
    if let Some(pass) = &pass {
        out.counters = Some(if done_value >= 1 {
            CounterStep {
                values: Vec::new(),
                error: Some("the counter pass did not complete".into()),
            }
        } else {
            match pm4::decode(
                pass,
                &memory.read(output_offset.unwrap_or(0), pass.output_bytes),
            ) {
                Ok(values) => CounterStep {
                    values: values
                        .iter()
                        .map(|v| CounterValue {
                            name: v.name.clone(),
                            value: v.values.iter().copied().fold(0, u64::saturating_add),
                        })
                        .collect(),
                    error: None,
                },
                Err(e) => CounterStep {
                    values: Vec::new(),
                    error: Some(format!("the read-back cannot be decoded: {e}")),
                },
            }
        });
    } else if let Some(e) = counter_error {
        out.counters = Some(CounterStep {
            values: Vec::new(),
            error: Some(e),
        });
    }
    drop(queue);
}

/// A barrier-AND packet (barrier bit, system-scope fences) completing `signal`.
fn barrier_and(signal: u64) -> [u8; 64] {
    const BARRIER_AND: u16 = 3;
    const SYSTEM_SCOPE: u16 = 2;
    let header = BARRIER_AND | (1 << 8) | (SYSTEM_SCOPE << 9) | (SYSTEM_SCOPE << 11);
    let mut p = [0u8; 64];
    p[0..2].copy_from_slice(&header.to_le_bytes());
    p[56..64].copy_from_slice(&signal.to_le_bytes());
    p
}

/// The ROCm libraries (and the profiler's) mapped into this process, in map order.
fn mapped_libraries() -> Vec<String> {
    const STEMS: [&str; 7] = [
        "librocdxg.so",
        "libhsa-runtime64.so",
        "libdxcore.so",
        "librocprofiler-register.so",
        "librocprof_tool.so",
        "libamdhip64.so",
        "librocprofiler-sdk-roctx.so",
    ];
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut files: Vec<String> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let name = path.rsplit('/').next().unwrap_or(path);
        if path.starts_with('/')
            && STEMS.iter().any(|s| name.starts_with(s))
            && !files.iter().any(|f| f == path)
        {
            files.push(path.to_owned());
        }
    }
    files
}
