//! The WSL enumerator: DXCore adapters paired with DXG thunk KMT nodes.

use crate::agent::{
    Agent, Omission, OmissionKind, Subject, apply_node_topology, cpuinfo_model_name, gpu_agent,
    gpu_product_name, synthesized_cpu,
};
use crate::gfx::{node_gfx_name, resolve_gfx_target};
use crate::kmt::{self, Handshake, KmtNode, KmtRead, NodeIssue, ReadFailure};
use crate::layout::{Luid, NodeLayout};
use crate::pairing::{NodeMatch, match_node};
use crate::settings::Settings;
use dxcore_sys::*;
use rocdxg_sys::{LoadedFrom, Rocdxg};
use serde::Serialize;
use std::collections::BTreeSet;
use zerocopy::IntoBytes;

/// PCI vendor id of AMD.
pub const AMD_VENDOR_ID: u32 = 0x1002;

/// What is known about the DXG thunk after enumeration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThunkReport {
    /// The file the loader mapped, when the thunk loaded.
    pub path: Option<String>,
    /// `resident` (reused the runtime's copy) or `loaded`.
    pub loaded_from: Option<&'static str>,
    /// Whether `DxgAbiCheck` is exported.
    pub handshake_offered: bool,
    /// `accepted`, `rejected`, `not-offered` or `not-attempted`.
    pub handshake: &'static str,
    /// The `HsaNodeProperties` size records were read as.
    pub layout: usize,
    /// Where that size came from: `environment` (ROCPROF_HSAKMT_LAYOUT) or `default`.
    pub layout_source: &'static str,
    /// `NumNodes` reported by the thunk.
    pub total_nodes: u32,
    /// Nodes with FCompute cores that were read successfully.
    pub gpu_nodes: u32,
}

/// Output of [`enumerate`].
#[derive(Debug, Clone)]
pub struct WslOutcome {
    /// CPU agent first, then GPUs.
    pub agents: Vec<Agent>,
    /// Everything left out.
    pub omissions: Vec<Omission>,
    /// The thunk as seen.
    pub thunk: ThunkReport,
}

/// The facts gathered about one adapter, in query order.
#[derive(Debug, Clone)]
pub struct AdapterFacts {
    /// Enumeration index.
    pub index: u32,
    /// The adapter LUID from enumeration.
    pub luid: Luid,
    /// `PHYSICALADAPTERDEVICEIDS`: `(vendor, device)`.
    pub ids: Result<(u32, u32), NTSTATUS>,
    /// The remaining queries, made only for AMD adapters; the first failure names its query.
    pub details: Option<Result<AdapterDetails, (&'static str, NTSTATUS)>>,
}

/// Address, registry and segment facts of an AMD adapter.
#[derive(Debug, Clone, Default)]
pub struct AdapterDetails {
    /// PCI bus, device, function.
    pub bdf: (u32, u32, u32),
    /// `AdapterString` (the marketing name).
    pub description: String,
    /// `DedicatedVideoMemorySize` in bytes.
    pub dedicated_video_memory: u64,
}

/// An omission's subject: the library of that name.
fn library(name: &str) -> Subject {
    Subject::Library { name: name.into() }
}

/// Enumerates agents on WSL. Never fails: problems become omissions.
pub fn enumerate(settings: &Settings) -> WslOutcome {
    enumerate_loaded(settings, None)
}

/// [`enumerate`], resolving libdxcore from `dxcore` when the platform selection already loaded
/// it (else loading it here).
pub(crate) fn enumerate_loaded(settings: &Settings, dxcore: Option<DxcoreLibrary>) -> WslOutcome {
    let layout = settings.layout_in_use();
    let mut thunk = ThunkReport {
        path: None,
        loaded_from: None,
        handshake_offered: false,
        handshake: "not-attempted",
        layout: layout.size(),
        layout_source: if settings.layout.is_some() {
            "environment"
        } else {
            "default"
        },
        total_nodes: 0,
        gpu_nodes: 0,
    };
    let mut omissions = Vec::new();
    let agents = enumerate_agents(settings, dxcore, layout, &mut thunk, &mut omissions)
        .unwrap_or_else(|stop| {
            omissions.push(stop);
            Vec::new()
        });
    WslOutcome {
        agents,
        omissions,
        thunk,
    }
}

/// The body of [`enumerate_loaded`]. `Err` is the omission that stopped enumeration before any
/// agent could be published.
fn enumerate_agents(
    settings: &Settings,
    dxcore: Option<DxcoreLibrary>,
    layout: NodeLayout,
    thunk: &mut ThunkReport,
    omissions: &mut Vec<Omission>,
) -> Result<Vec<Agent>, Omission> {
    if settings.attach_marker {
        return Err(Omission::new(
            Subject::Platform,
            OmissionKind::LateAttach,
            "late attach (ROCPROFILER_REGISTER_TOOL_ATTACHED is set): GPU agent enumeration is disabled because released librocdxg packages do not reference-count their topology snapshot, and reading it now could free the running runtime's devices; launch the application under rocprof instead of attaching",
        ));
    }
    // SAFETY: loads the system's libdxcore (or the simulated one), or resolves the copy the
    // platform selection loaded; its exports have the D3DKMT signatures.
    let dxcore = unsafe {
        match dxcore {
            Some(lib) => lib.resolve(),
            None => Dxcore::open(),
        }
    }
    .map_err(|e| {
        Omission::new(
            library(LIBRARY_NAME),
            OmissionKind::DxcoreUnavailable,
            format!("{e}; no adapters can be enumerated"),
        )
    })?;
    // SAFETY: entry points of the loaded libdxcore, alive while `dxcore` is.
    let handles = match unsafe { enum_adapters(dxcore.fns()) } {
        Ok(h) if h.is_empty() => {
            return Err(Omission::new(
                library(LIBRARY_NAME),
                OmissionKind::NoAdapters,
                "D3DKMTEnumAdapters3 reported no adapters",
            ));
        }
        Ok(h) => h,
        Err((step, status)) => {
            return Err(Omission::new(
                library(LIBRARY_NAME),
                OmissionKind::AdapterEnumerationFailed,
                format!("D3DKMTEnumAdapters3 ({step}) failed with status {status}"),
            ));
        }
    };

    let read = read_thunk(layout, thunk, omissions);
    let nodes = read.map(|r| r.gpu_nodes).unwrap_or_default();
    if nodes.is_empty() {
        omissions.push(Omission::new(
            library(rocdxg_sys::LIBRARY_NAME),
            OmissionKind::NoGpuNodes,
            "the DXG thunk described no usable GPU node, so no GPU agent can be published: counters, thread trace and agent_info.csv need a GPU's properties (kernels and copies are still traced through HSA, named by node id). The HSA runtime reads the same thunk: if it reads its records with another size, GPU work may fail or crash too; fix the cause above",
        ));
    }

    // SAFETY: entry points of the loaded libdxcore; each handle came from its enumeration
    // and is closed exactly once inside.
    let adapters: Vec<AdapterFacts> = handles
        .iter()
        .enumerate()
        .map(|(i, info)| unsafe { query_adapter(dxcore.fns(), i as u32, info) })
        .collect();

    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    // SAFETY: sysconf has no preconditions.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpu = synthesized_cpu(cpuinfo_model_name(&cpuinfo), cores);
    tracing::info!(
        "synthesized CPU agent at logical_node_id=0 (cores={}, name='{}') to match the HSA runtime's CPU node 0",
        cpu.cpu_cores_count,
        cpu.name
    );
    let (agents, more) = publish(settings, cpu, &adapters, &nodes);
    omissions.extend(more);
    Ok(agents)
}

/// The thunk's record size as found by [`kmt::probe_layout`], and which file answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThunkProbe {
    /// The file the loader mapped.
    pub path: Option<String>,
    /// What the handshake and the measurement found.
    #[serde(flatten)]
    pub probe: kmt::LayoutProbe,
}

/// Loads `librocdxg.so` and probes its record size. For a process of its own (the CLI): the
/// handshake can change the thunk's process-global state.
pub fn probe_thunk() -> Result<ThunkProbe, rocdxg_sys::Error> {
    // SAFETY: loads librocdxg by its unversioned name; its exports have the hsaKmt signatures.
    let rocdxg = unsafe { Rocdxg::open() }?;
    // SAFETY: the table belongs to `rocdxg`, alive for the call.
    let probe = unsafe { kmt::probe_layout(rocdxg.fns()) };
    Ok(ThunkProbe {
        path: rocdxg.path().map(|p| p.display().to_string()),
        probe,
    })
}

/// Loads the thunk and reads its topology, recording what happened.
fn read_thunk(
    layout: NodeLayout,
    thunk: &mut ThunkReport,
    omissions: &mut Vec<Omission>,
) -> Option<KmtRead> {
    // SAFETY: loads librocdxg by its unversioned name, as the HSA runtime does; its exports
    // have the hsaKmt signatures.
    let rocdxg = match unsafe { Rocdxg::open() } {
        Ok(r) => r,
        Err(e @ rocdxg_sys::Error::MissingSymbols { .. }) => {
            omissions.push(Omission::new(
                library(rocdxg_sys::LIBRARY_NAME),
                OmissionKind::ThunkIncomplete,
                format!("{e}; the topology read needs all five of hsaKmtOpenKFD, hsaKmtAcquireSystemProperties, hsaKmtGetNodeProperties, hsaKmtReleaseSystemProperties and hsaKmtCloseKFD, so nothing was called. Install a librocdxg that matches the HSA runtime"),
            ));
            return None;
        }
        Err(e) => {
            omissions.push(Omission::new(
                library(rocdxg_sys::LIBRARY_NAME),
                OmissionKind::ThunkUnavailable,
                format!("{e}. GPU agents cannot be enumerated without the DXG thunk, which the HSA runtime also needs for GPU work; put the directory holding librocdxg.so on LD_LIBRARY_PATH"),
            ));
            return None;
        }
    };
    thunk.path = rocdxg.path().map(|p| p.display().to_string());
    thunk.loaded_from = Some(match rocdxg.loaded_from() {
        LoadedFrom::Resident => "resident",
        LoadedFrom::Loaded => "loaded",
    });
    // SAFETY: the table belongs to `rocdxg`, alive for the call; discovery runs before hsa_init.
    let read = unsafe { kmt::read_topology(rocdxg.fns(), rocdxg_sys::LIBRARY_NAME, layout) };
    (thunk.handshake_offered, thunk.handshake) = match read.handshake {
        Handshake::NotOffered => (false, "not-offered"),
        Handshake::Accepted(_) => (true, "accepted"),
        Handshake::Rejected(..) => (true, "rejected"),
    };
    thunk.total_nodes = read.total_nodes;
    thunk.gpu_nodes = read.gpu_nodes.len() as u32;
    match read.failure {
        Some(ReadFailure::Rejected(layout, status)) => omissions.push(Omission::new(
            library(rocdxg_sys::LIBRARY_NAME),
            OmissionKind::HandshakeRejected,
            format!(
                "DxgAbiCheck rejected the {}-byte HsaNodeProperties layout in use (status {status}): the thunk was built with another record size, and reading its records anyway would attribute its bytes to the wrong fields. Run through `rocprof`, which probes the size the thunk accepts, or set ROCPROF_HSAKMT_LAYOUT to it; better, install a matched ROCm runtime and librocdxg",
                layout.size()
            ),
        )),
        Some(ReadFailure::Open(status)) => omissions.push(Omission::new(
            library(rocdxg_sys::LIBRARY_NAME),
            OmissionKind::KfdOpenFailed,
            format!("hsaKmtOpenKFD failed with status {status}"),
        )),
        Some(ReadFailure::Acquire(status)) => omissions.push(Omission::new(
            library(rocdxg_sys::LIBRARY_NAME),
            OmissionKind::SystemPropertiesFailed,
            format!("hsaKmtAcquireSystemProperties failed with status {status}"),
        )),
        Some(ReadFailure::ImplausibleNodeCount(n)) => omissions.push(Omission::new(
            library(rocdxg_sys::LIBRARY_NAME),
            OmissionKind::SystemPropertiesFailed,
            format!(
                "the thunk's topology snapshot reports {n} nodes (0x{n:08X}), more than any system has: the snapshot is damaged (a released librocdxg that does not reference-count it hands out freed memory once another user has released it), so no node was read; install a matched runtime and thunk"
            ),
        )),
        None => {}
    }
    for issue in &read.issues {
        omissions.push(match *issue {
            NodeIssue::GetFailed { node_id, status } => Omission::new(
                Subject::Node { node_id },
                OmissionKind::NodeReadFailed,
                format!("hsaKmtGetNodeProperties failed with status {status}"),
            ),
            NodeIssue::LayoutMismatch { node_id, expected, written } => Omission::new(
                Subject::Node { node_id },
                OmissionKind::LayoutMismatch,
                format!(
                    "the thunk wrote {written} of HsaNodeProperties but the layout in use has {} bytes, so the record was refused instead of misread. {}",
                    expected.size(),
                    match crate::layout::NodeLayout::from_size(written.bytes()) {
                        Some(known) => format!(
                            "Set ROCPROF_HSAKMT_LAYOUT to {} (or let `rocprof` probe it) — or, better, install a matched runtime and thunk",
                            known.size()
                        ),
                        None => format!(
                            "No HsaNodeProperties layout this build knows has {} bytes (368, 376, 392 and 396 do), so no ROCPROF_HSAKMT_LAYOUT can read it: install a runtime and librocdxg built from the same ROCm release",
                            written.bytes()
                        ),
                    }
                ),
            ),
        });
    }
    Some(read)
}

/// `D3DKMTEnumAdapters3` twice: the count, then the adapters.
///
/// # Safety
/// `fns` must be libdxcore's entry points.
unsafe fn enum_adapters(
    fns: &DxcoreFns,
) -> Result<Vec<D3DKMT_ADAPTERINFO>, (&'static str, NTSTATUS)> {
    let mut e = D3DKMT_ENUMADAPTERS3 {
        Filter: ENUMADAPTERS_FILTER_INCLUDE_COMPUTE_ONLY,
        NumAdapters: 0,
        pAdapters: core::ptr::null_mut(),
    };
    // SAFETY: a valid struct with a null array asks for the count.
    let status = unsafe { (fns.D3DKMTEnumAdapters3)(&mut e) };
    if !status.is_success() {
        return Err(("count", status));
    }
    if e.NumAdapters == 0 {
        return Ok(Vec::new());
    }
    let mut adapters = vec![D3DKMT_ADAPTERINFO::default(); e.NumAdapters as usize];
    e.pAdapters = adapters.as_mut_ptr();
    // SAFETY: the array holds NumAdapters entries.
    let status = unsafe { (fns.D3DKMTEnumAdapters3)(&mut e) };
    if !status.is_success() {
        return Err(("fill", status));
    }
    adapters.truncate(e.NumAdapters as usize);
    Ok(adapters)
}

/// One `D3DKMTQueryAdapterInfo` into a payload of type `T`.
///
/// # Safety
/// `fns` must be libdxcore's entry points and `T` the payload of query type `ty`.
unsafe fn query<T: zerocopy::FromBytes + IntoBytes>(
    fns: &DxcoreFns,
    handle: D3DKMT_HANDLE,
    ty: KMTQUERYADAPTERINFOTYPE,
) -> Result<T, NTSTATUS> {
    let mut payload = T::new_zeroed();
    let bytes = payload.as_mut_bytes();
    let q = D3DKMT_QUERYADAPTERINFO {
        hAdapter: handle,
        Type: ty,
        pPrivateDriverData: bytes.as_mut_ptr().cast(),
        PrivateDriverDataSize: bytes.len() as u32,
    };
    // SAFETY: `q` points at a writable payload of the stated size.
    let status = unsafe { (fns.D3DKMTQueryAdapterInfo)(&q) };
    if status.is_success() {
        Ok(payload)
    } else {
        tracing::info!("D3DKMTQueryAdapterInfo type={ty} failed status={status}");
        Err(status)
    }
}

/// Gathers the facts of one adapter and closes its handle (on every path).
///
/// # Safety
/// `fns` must be libdxcore's entry points and `info.hAdapter` an open handle from them.
unsafe fn query_adapter(fns: &DxcoreFns, index: u32, info: &D3DKMT_ADAPTERINFO) -> AdapterFacts {
    let h = info.hAdapter;
    let luid = Luid {
        low: info.AdapterLuid.LowPart,
        high: info.AdapterLuid.HighPart as u32,
    };
    // SAFETY: the caller's handle and entry points; the payload type matches the query type
    // (as in every query below).
    let ids =
        unsafe { query::<D3DKMT_QUERY_DEVICE_IDS>(fns, h, KMTQAITYPE_PHYSICALADAPTERDEVICEIDS) }
            .map(|q| (q.DeviceIds.VendorID, q.DeviceIds.DeviceID));
    let details = match ids {
        Ok((AMD_VENDOR_ID, _)) => Some((|| {
            // SAFETY: as above.
            let addr = unsafe { query::<D3DKMT_ADAPTERADDRESS>(fns, h, KMTQAITYPE_ADAPTERADDRESS) }
                .map_err(|s| ("ADAPTERADDRESS", s))?;
            // SAFETY: as above.
            let reg = unsafe {
                query::<D3DKMT_ADAPTERREGISTRYINFO>(fns, h, KMTQAITYPE_ADAPTERREGISTRYINFO)
            }
            .map_err(|s| ("ADAPTERREGISTRYINFO", s))?;
            // SAFETY: as above.
            let seg = unsafe { query::<D3DKMT_SEGMENTSIZEINFO>(fns, h, KMTQAITYPE_GETSEGMENTSIZE) }
                .map_err(|s| ("GETSEGMENTSIZE", s))?;
            Ok(AdapterDetails {
                bdf: (addr.BusNumber, addr.DeviceNumber, addr.FunctionNumber),
                description: wide_to_string(&reg.AdapterString),
                dedicated_video_memory: seg.DedicatedVideoMemorySize,
            })
        })()),
        _ => None,
    };
    let close = D3DKMT_CLOSEADAPTER { hAdapter: h };
    // SAFETY: closes the handle this enumeration opened, once.
    let status = unsafe { (fns.D3DKMTCloseAdapter)(&close) };
    if !status.is_success() {
        tracing::warn!("D3DKMTCloseAdapter(0x{h:x}) failed status={status}");
    }
    AdapterFacts {
        index,
        luid,
        ids,
        details,
    }
}

/// Pairs adapters with nodes and builds the agent records: the CPU agent first, then one GPU
/// per adapter that is AMD, fully queried, matched to exactly one available node, named by a
/// parsable gfx target and described by a complete topology. A node is claimed only when its
/// agent is published. Nodes no adapter claimed are reported too.
pub fn publish(
    settings: &Settings,
    cpu: Agent,
    adapters: &[AdapterFacts],
    nodes: &[KmtNode],
) -> (Vec<Agent>, Vec<Omission>) {
    let mut agents = vec![cpu];
    let mut omissions = Vec::new();
    let mut consumed = BTreeSet::new();
    for a in adapters {
        let (vendor, device) = match a.ids {
            Ok(ids) => ids,
            Err(status) => {
                omissions.push(Omission::new(
                    Subject::Adapter { index: a.index, vendor_id: None, device_id: None, luid: a.luid },
                    OmissionKind::AdapterQueryFailed,
                    format!("its PCI ids could not be queried (PHYSICALADAPTERDEVICEIDS failed with status {status})"),
                ));
                continue;
            }
        };
        let subject = Subject::Adapter {
            index: a.index,
            vendor_id: Some(vendor),
            device_id: Some(device),
            luid: a.luid,
        };
        let details = match &a.details {
            _ if vendor != AMD_VENDOR_ID => {
                omissions.push(Omission::new(
                    subject,
                    OmissionKind::NonAmdAdapter,
                    "not an AMD adapter; skipped",
                ));
                continue;
            }
            Some(Ok(d)) => d,
            Some(Err((query, status))) => {
                omissions.push(Omission::new(
                    subject,
                    OmissionKind::AdapterQueryFailed,
                    format!("the {query} query failed with status {status}"),
                ));
                continue;
            }
            None => continue,
        };
        let node = match match_node(nodes, &consumed, a.luid, device) {
            NodeMatch::Found(i) => &nodes[i],
            NodeMatch::Ambiguous => {
                omissions.push(Omission::new(
                    subject,
                    OmissionKind::AmbiguousAdapter,
                    "several KMT nodes report this device id and neither they nor the adapter carry a LUID, so this adapter cannot be told apart from an identical one; guessing could attribute one GPU's work to another. A librocdxg that reports adapter LUIDs resolves this",
                ));
                continue;
            }
            NodeMatch::NotFound => {
                omissions.push(Omission::new(
                    subject,
                    OmissionKind::NoMatchingNode,
                    "no KMT node matched it by LUID or device id, so its compute topology is unknown",
                ));
                continue;
            }
        };
        let p = &node.props;
        let Some(target) =
            resolve_gfx_target(settings.force_gfx, p.engine_id, p.override_engine_id)
        else {
            omissions.push(Omission::new(
                subject,
                OmissionKind::UnparsableGfx,
                format!(
                    "KMT node {} names gfx target '{}', which cannot be parsed (its engine id major is 0 or out of range)",
                    node.node_id,
                    node_gfx_name(p.engine_id, p.override_engine_id)
                ),
            ));
            continue;
        };
        let gfx = target.to_string();
        let mut gpu = match apply_node_topology(node.node_id, p) {
            Ok(g) => g,
            Err(missing) => {
                omissions.push(Omission::new(
                    subject,
                    OmissionKind::IncompleteTopology,
                    format!(
                        "KMT node {} describes an incomplete topology ({missing})",
                        node.node_id
                    ),
                ));
                continue;
            }
        };
        consumed.insert(node.node_id);
        let (bus, dev, func) = details.bdf;
        gpu.gfx_target_version = target.version();
        if gpu.location_id == 0 {
            gpu.location_id = ((bus & 0xff) << 8) | ((dev & 0x1f) << 3) | (func & 7);
        }
        gpu.local_mem_size = details.dedicated_video_memory;
        if a.luid.is_present() {
            gpu.luid = Some(a.luid);
        }
        tracing::info!(
            "enumerated adapter {} as {gfx} (device=0x{device:04x} BDF={bus:02x}:{dev:02x}.{func:x} dedicated_vram={} '{}'): cu_count={} simd_count={} simd_per_cu={} shader_banks={} arrays_per_engine={} array_count={} cu_per_simd_array={} cu_per_engine={} wave_front_size={} max_waves_per_simd={} num_xcc={} family_id={}",
            a.index,
            gpu.local_mem_size,
            gpu_product_name(&details.description),
            gpu.cu_count,
            gpu.simd_count,
            gpu.simd_per_cu,
            gpu.num_shader_banks,
            gpu.simd_arrays_per_engine,
            gpu.array_count,
            gpu.cu_per_simd_array,
            gpu.cu_per_engine,
            gpu.wave_front_size,
            gpu.max_waves_per_simd,
            gpu.num_xcc,
            gpu.family_id
        );
        let agent = gpu_agent(&agents, node.node_id, gfx, &details.description, gpu);
        agents.push(agent);
    }
    for n in nodes.iter().filter(|n| !consumed.contains(&n.node_id)) {
        omissions.push(Omission::new(
            Subject::Node { node_id: n.node_id },
            OmissionKind::UnclaimedNode,
            format!(
                "GPU node (device 0x{:04x}) was not paired with any published adapter; the HSA runtime may still report it, but it cannot be profiled",
                n.props.device_id
            ),
        ));
    }
    (agents, omissions)
}

#[cfg(test)]
mod tests;
