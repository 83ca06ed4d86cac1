//! The resolved scenario: plain data, every value filled in.
//!
//! The TOML schema (see `schema.rs`) has every key optional; resolving it starts from the
//! presets defined here and overrides what the file names. The presets are the single place
//! where the simulated Radeon 890M's numbers live.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A whole simulated machine plus the behaviour of the two simulated libraries.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Seeds the GPU model's random choices (`WSLSIM_SEED` overrides it).
    pub seed: u64,
    /// Whether the file named `seed`: a given seed pins the GPU model's draws like
    /// `WSLSIM_SEED`; without either, each process draws its own seed.
    pub seed_given: bool,
    /// The preset this scenario started from.
    pub machine: Machine,
    /// KMT node 0.
    pub cpu: Cpu,
    /// Behaviour of the simulated DXG thunk (librocdxg.so).
    pub thunk: Thunk,
    /// Behaviour of the simulated libdxcore.so.
    pub dxcore: Dxcore,
    /// WDDM adapters, in enumeration order.
    pub adapters: Vec<Adapter>,
    /// GPU KMT nodes; `nodes[i]` is KMT node `i + 1`.
    pub nodes: Vec<GpuNode>,
    /// The simulated GPU's timing and limits.
    pub gpu: crate::gpu::Gpu,
    /// Performance-counter behaviour.
    pub counters: crate::gpu::Counters,
    /// The simulated HSA runtime.
    pub runtime: crate::runtime::Runtime,
    /// Failures the simulated HSA runtime injects (`[faults]`).
    pub faults: Faults,
    /// `[kernel_duration]`: kernels made slower (a factor above 1) or faster (below 1), by
    /// symbol name (mangled, as the code object has it, or the name before the argument list:
    /// `axpb`), so a change between two sets of runs can be made on purpose.
    pub kernel_duration: BTreeMap<String, f64>,
}

/// `[faults]`: failures the simulated HSA runtime (`sim/hsa`) injects, so a tool's handling of
/// them can be tested. The default injects nothing.
///
/// A list of call numbers counts the calls of that entry point made through the runtime's API
/// (exported function or table slot), from 1, over the whole process.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Kernel objects (and the kernel descriptors behind them) live at device addresses the
    /// host cannot read: handles inside an address range reserved with `PROT_NONE`, as code
    /// objects in a discrete GPU's memory are. Reading one faults (SIGSEGV); only
    /// `hsa_ven_amd_loader_query_host_address` leads to the host copy.
    pub device_code_objects: bool,
    /// `false`: `hsa_system_get_major_extension_table` refuses the AMD loader extension.
    pub loader_extension: bool,
    /// These calls of `hsa_amd_signal_async_handler` fail with `HSA_STATUS_ERROR` (nothing is
    /// registered).
    pub async_handler_fail_calls: Vec<u64>,
    /// Non-zero N: call N of `hsa_amd_signal_async_handler` and every later one fail (1: all).
    pub async_handler_fail_from: u64,
    /// These calls of `hsa_amd_profiling_get_async_copy_time` fail with `HSA_STATUS_ERROR`.
    pub copy_time_fail_calls: Vec<u64>,
    /// These calls of `hsa_amd_profiling_get_dispatch_time` fail with `HSA_STATUS_ERROR`.
    pub dispatch_time_fail_calls: Vec<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            device_code_objects: false,
            loader_extension: true,
            async_handler_fail_calls: Vec::new(),
            async_handler_fail_from: 0,
            copy_time_fail_calls: Vec::new(),
            dispatch_time_fail_calls: Vec::new(),
        }
    }
}

impl Faults {
    /// Whether call `n` (from 1) of `hsa_amd_signal_async_handler` fails.
    pub fn async_handler_fails(&self, n: u64) -> bool {
        (self.async_handler_fail_from != 0 && n >= self.async_handler_fail_from)
            || self.async_handler_fail_calls.contains(&n)
    }
}

/// Machine presets selectable with `machine = "..."`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Machine {
    /// One Radeon 890M adapter and its GPU node (the default).
    #[serde(rename = "radeon-890m")]
    Radeon890m,
    /// No adapters and no GPU nodes (the CPU node 0 still exists).
    #[serde(rename = "empty")]
    Empty,
}

/// The CPU node (KMT node 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// Reported as the node's MarketingName.
    pub name: String,
    /// Reported as NumCPUCores.
    pub cores: u32,
}

/// How the thunk answers `DxgAbiCheck`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AbiCheck {
    /// `DxgAbiCheck` is not exported at all.
    Absent,
    /// Released form: the node size must match exactly.
    Strict,
    /// In-tree form: 0 means "not exchanged"; any other value must match.
    Lenient,
    /// Always DRIVER_MISMATCH.
    Reject,
}

/// How many bytes `hsaKmtGetNodeProperties` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteSize {
    /// Always `Thunk::layout` bytes.
    Layout,
    /// The size accepted by the last successful `DxgAbiCheck`, or 368 if there was none.
    Negotiated,
}

/// Behaviour of the simulated thunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thunk {
    /// `sizeof(HsaNodeProperties)` the thunk was "built with".
    pub layout: u32,
    /// `DxgAbiCheck` behaviour.
    pub abi_check: AbiCheck,
    /// How many bytes a node record write covers.
    pub write_size: WriteSize,
    /// Exports hidden from `dlsym`.
    pub hidden_exports: Vec<String>,
    /// The first `hsaKmtOpenKFD` returns KERNEL_ALREADY_OPENED (still counts as open).
    pub kfd_already_open: bool,
    /// Non-zero: `hsaKmtOpenKFD` fails with this status.
    pub open_status: i32,
    /// Non-zero: `hsaKmtAcquireSystemProperties` fails with this status.
    pub acquire_status: i32,
    /// Non-zero: `hsaKmtReleaseSystemProperties` fails with this status.
    pub release_status: i32,
    /// Returned by `hsaKmtCloseKFD` of an open KFD (the close still happens).
    pub close_status: i32,
    /// `hsaKmtGetNodeProperties(node)` fails with the mapped status.
    pub node_status: BTreeMap<u32, i32>,
    /// Size the lenient `DxgAbiCheck` expects for SizeOfHsaExternalHandleDesc (0: any).
    pub handle_import_desc_size: u16,
    /// `true` (a thunk with the snapshot-ownership fix): every acquire after a release takes a
    /// fresh topology snapshot. `false` (the released packages): `hsaKmtReleaseSystemProperties`
    /// frees the snapshot but the thunk keeps pointing at it until the KFD is closed, so an
    /// acquire in the same KFD session (a late-attached tool's) reads the freed memory.
    pub snapshot_refcount: bool,
    /// Other copies of the thunk in the same process (`[[thunk.copies]]`): a copy whose path
    /// ends with an entry's `path` behaves as that entry says. Empty inside an entry.
    pub copies: Vec<ThunkCopy>,
}

/// One `[[thunk.copies]]` entry: the `[thunk]` a copy of librocdxg loaded from a matching path
/// simulates (the file's `[thunk]` with the entry's keys laid over it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThunkCopy {
    /// Matches a copy whose path, as the loader registered it, ends with this.
    pub path: String,
    /// What that copy simulates (`copies` empty).
    pub thunk: Thunk,
}

impl Thunk {
    /// The behaviour of the copy loaded from `path`: the first `[[thunk.copies]]` entry whose
    /// `path` ends it, else this `[thunk]` itself (without its copies). Also the index of the
    /// entry that matched.
    pub fn for_copy(&self, path: Option<&str>) -> (Thunk, Option<usize>) {
        let found = path.and_then(|path| {
            self.copies
                .iter()
                .enumerate()
                .find(|(_, copy)| !copy.path.is_empty() && path.ends_with(&copy.path))
        });
        match found {
            Some((index, copy)) => (copy.thunk.clone(), Some(index)),
            None => (
                Thunk {
                    copies: Vec::new(),
                    ..self.clone()
                },
                None,
            ),
        }
    }
}

/// Behaviour of the simulated libdxcore.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dxcore {
    /// Exports hidden from `dlsym`.
    pub hidden_exports: Vec<String>,
    /// Non-zero NTSTATUS: `D3DKMTEnumAdapters3` fails with it.
    pub enum_status: u32,
}

/// A Windows LUID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Luid {
    /// LowPart.
    pub low: u32,
    /// HighPart.
    pub high: i32,
}

impl Luid {
    /// `[0, 0]`: no LUID.
    pub const NONE: Luid = Luid { low: 0, high: 0 };

    /// The LUID of the simulated 890M.
    pub const RADEON_890M: Luid = Luid {
        low: 0x0001_D3A5,
        high: 0,
    };
}

/// A `D3DKMTQueryAdapterInfo` query that a scenario can make fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub enum AdapterQuery {
    /// KMTQAITYPE_PHYSICALADAPTERDEVICEIDS (31), `"device-ids"`.
    #[serde(rename = "device-ids")]
    DeviceIds,
    /// KMTQAITYPE_ADAPTERADDRESS (6), `"address"`.
    #[serde(rename = "address")]
    Address,
    /// KMTQAITYPE_ADAPTERREGISTRYINFO (8), `"registry"`.
    #[serde(rename = "registry")]
    Registry,
    /// KMTQAITYPE_GETSEGMENTSIZE (3), `"segment-size"`.
    #[serde(rename = "segment-size")]
    SegmentSize,
}

/// A WDDM adapter as libdxcore reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adapter {
    /// AdapterLuid.
    pub luid: Luid,
    /// D3DKMT_DEVICE_IDS.VendorID.
    pub vendor_id: u32,
    /// D3DKMT_DEVICE_IDS.DeviceID.
    pub device_id: u32,
    /// D3DKMT_DEVICE_IDS.SubVendorID.
    pub subvendor_id: u32,
    /// D3DKMT_DEVICE_IDS.SubSystemID.
    pub subsystem_id: u32,
    /// D3DKMT_DEVICE_IDS.RevisionID.
    pub revision_id: u32,
    /// D3DKMT_DEVICE_IDS.BusType.
    pub bus_type: u32,
    /// D3DKMT_ADAPTERADDRESS.BusNumber.
    pub bus: u32,
    /// D3DKMT_ADAPTERADDRESS.DeviceNumber.
    pub device: u32,
    /// D3DKMT_ADAPTERADDRESS.FunctionNumber.
    pub function: u32,
    /// Registry info AdapterString.
    pub description: String,
    /// Registry info BiosString.
    pub bios: String,
    /// Registry info DacType.
    pub dac_type: String,
    /// Registry info ChipType.
    pub chip_type: String,
    /// Segment size DedicatedVideoMemorySize.
    pub dedicated_video_memory: u64,
    /// Segment size DedicatedSystemMemorySize.
    pub dedicated_system_memory: u64,
    /// Segment size SharedSystemMemorySize.
    pub shared_system_memory: u64,
    /// Listed only when the enumeration filter has IncludeComputeOnly.
    pub compute_only: bool,
    /// Queries that fail with STATUS_INVALID_PARAMETER.
    pub fail_queries: Vec<AdapterQuery>,
}

impl Adapter {
    /// The simulated AMD Radeon 890M adapter.
    pub fn radeon_890m() -> Self {
        Adapter {
            luid: Luid::RADEON_890M,
            vendor_id: 0x1002,
            device_id: 0x150E,
            subvendor_id: 0x1002,
            subsystem_id: 0x0124,
            revision_id: 0xC1,
            bus_type: BUS_TYPE_PCI,
            bus: 0xC5,
            device: 0,
            function: 0,
            description: "AMD Radeon(TM) 890M Graphics".to_owned(),
            bios: "113-STRIXPOINT-001".to_owned(),
            dac_type: "Internal DAC(400MHz)".to_owned(),
            chip_type: "AMD Radeon Graphics Processor (0x150E)".to_owned(),
            dedicated_video_memory: 536_870_912,
            dedicated_system_memory: 0,
            shared_system_memory: 16_777_216_000,
            compute_only: false,
            fail_queries: Vec::new(),
        }
    }
}

/// `PCIBus` in the Windows `INTERFACE_TYPE` enumeration, the sim's D3DKMT_DEVICE_IDS.BusType.
pub const BUS_TYPE_PCI: u32 = 5;

/// An `HSA_ENGINE_ID` split into its bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineId {
    /// Major (6 bits).
    pub major: u8,
    /// Minor (8 bits).
    pub minor: u8,
    /// Stepping (8 bits).
    pub stepping: u8,
    /// uCode (10 bits).
    pub ucode: u16,
}

impl EngineId {
    /// The packed u32: uCode bits 0-9, Major 10-15, Minor 16-23, Stepping 24-31.
    pub fn to_bits(self) -> u32 {
        (u32::from(self.ucode) & 0x3FF)
            | ((u32::from(self.major) & 0x3F) << 10)
            | (u32::from(self.minor) << 16)
            | (u32::from(self.stepping) << 24)
    }

    /// Parses `"major.minor.stepping"` (decimal); the uCode is left at 0.
    pub fn parse_version(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.trim().split('.').collect();
        let [major, minor, stepping] = parts.as_slice() else {
            return Err(format!(
                "engine id `{text}` is not of the form major.minor.stepping"
            ));
        };
        let number = |part: &str, what: &str, max: u32| -> Result<u8, String> {
            let value: u32 = part
                .parse()
                .map_err(|_| format!("engine id `{text}`: {what} `{part}` is not a number"))?;
            if value > max {
                return Err(format!(
                    "engine id `{text}`: {what} {value} does not fit its field (max {max})"
                ));
            }
            // `value <= max <= 255` was checked just above.
            Ok(value as u8)
        };
        Ok(EngineId {
            major: number(major, "major", 63)?,
            minor: number(minor, "minor", 255)?,
            stepping: number(stepping, "stepping", 255)?,
            ucode: 0,
        })
    }
}

/// A GPU KMT node as the thunk reports it. Field comments name the HsaNodeProperties member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuNode {
    /// LuidLowPart / LuidHighPart.
    pub luid: Luid,
    /// VendorId.
    pub vendor_id: u16,
    /// DeviceId.
    pub device_id: u16,
    /// LocationId.
    pub location_id: u32,
    /// Domain.
    pub domain: u32,
    /// NumFComputeCores.
    pub simd_count: u32,
    /// NumSIMDPerCU.
    pub simd_per_cu: u32,
    /// NumShaderBanks.
    pub shader_engines: u32,
    /// NumArrays.
    pub arrays_per_engine: u32,
    /// NumCUPerArray.
    pub cu_per_array: u32,
    /// WaveFrontSize.
    pub wave_front_size: u32,
    /// MaxWavesPerSIMD.
    pub max_waves_per_simd: u32,
    /// LDSSizeInKB.
    pub lds_kb: u32,
    /// GDSSizeInKB.
    pub gds_kb: u32,
    /// MaxSlotsScratchCU.
    pub max_slots_scratch_cu: u32,
    /// EngineId (version plus uCode).
    pub engine_id: EngineId,
    /// OverrideEngineId.
    pub override_engine_id: EngineId,
    /// uCodeEngineVersions.uCodeSDMA.
    pub sdma_ucode: u16,
    /// FamilyID.
    pub family_id: u32,
    /// NumXcc.
    pub num_xcc: u32,
    /// KFDGpuID.
    pub kfd_gpu_id: u32,
    /// UniqueID.
    pub unique_id: u64,
    /// HiveID.
    pub hive_id: u64,
    /// MarketingName (UTF-16 in the record).
    pub marketing_name: String,
    /// AMDName (bytes in the record).
    pub amd_name: String,
    /// LocalMemSize.
    pub local_mem_size: u64,
    /// MaxEngineClockMhzFCompute.
    pub max_clock_mhz: u32,
    /// MaxEngineClockMhzCCompute.
    pub ccompute_clock_mhz: u32,
    /// WallClockKHz.
    pub wallclock_khz: u64,
    /// NumSdmaEngines.
    pub num_sdma_engines: u32,
    /// NumSdmaXgmiEngines.
    pub num_sdma_xgmi_engines: u32,
    /// NumSdmaQueuesPerEngine.
    pub num_sdma_queues_per_engine: u8,
    /// NumCpQueues.
    pub num_cp_queues: u8,
    /// NumGws.
    pub num_gws: u8,
    /// Integrated.
    pub integrated: u8,
    /// Capability.
    pub capability: u32,
    /// Capability2.
    pub capability2: u32,
    /// VGPRSizePerCU.
    pub vgpr_size_per_cu: u32,
    /// SGPRSizePerCU.
    pub sgpr_size_per_cu: u32,
    /// CwsrSize.
    pub cwsr_size: u32,
    /// CtlStackSize.
    pub ctl_stack_size: u32,
    /// FabricHandleSupported.
    pub fabric_handle_supported: u32,
    /// NumMemoryBanks.
    pub num_memory_banks: u32,
    /// NumCaches.
    pub num_caches: u32,
    /// NumIOLinks.
    pub num_io_links: u32,
    /// DrmRenderMinor.
    pub drm_render_minor: i32,
    /// DebugProperties.
    pub debug_properties: u64,
}

impl GpuNode {
    /// The simulated Radeon 890M (gfx1150) KMT node.
    pub fn radeon_890m() -> Self {
        GpuNode {
            luid: Luid::RADEON_890M,
            vendor_id: 0x1002,
            device_id: 0x150E,
            location_id: 0xC500,
            domain: 0,
            simd_count: 32,
            simd_per_cu: 2,
            shader_engines: 1,
            arrays_per_engine: 2,
            cu_per_array: 8,
            wave_front_size: 32,
            max_waves_per_simd: 16,
            lds_kb: 64,
            gds_kb: 0,
            max_slots_scratch_cu: 32,
            engine_id: EngineId {
                major: 11,
                minor: 5,
                stepping: 0,
                ucode: 42,
            },
            override_engine_id: EngineId::default(),
            sdma_ucode: 17,
            family_id: 150,
            num_xcc: 1,
            kfd_gpu_id: 0x5A3C,
            unique_id: 0x0123_4567_89AB_CDEF,
            hive_id: 0,
            marketing_name: "AMD Radeon 890M Graphics".to_owned(),
            amd_name: "gfx1150".to_owned(),
            local_mem_size: 0,
            max_clock_mhz: 2900,
            ccompute_clock_mhz: 0,
            wallclock_khz: 100_000,
            num_sdma_engines: 2,
            num_sdma_xgmi_engines: 0,
            num_sdma_queues_per_engine: 8,
            num_cp_queues: 8,
            num_gws: 0,
            integrated: 1,
            capability: 0,
            capability2: 0,
            vgpr_size_per_cu: 0x8_0000,
            sgpr_size_per_cu: 0x4000,
            // KFD's formula for 16 CUs, wave32: control stack 512 waves x 12 bytes + headers,
            // page aligned (0x2000), plus 16 x (VGPR 0x80000 + SGPR 0x4000 + LDS 0x10000 +
            // HWREG 0x1000) of workgroup context data.
            cwsr_size: 0x95_2000,
            ctl_stack_size: 0x2000,
            fabric_handle_supported: 0,
            num_memory_banks: 1,
            num_caches: 0,
            num_io_links: 0,
            drm_render_minor: 128,
            debug_properties: 0,
        }
    }
}

impl Cpu {
    /// The CPU of the simulated 890M laptop.
    pub fn radeon_890m_host() -> Self {
        Cpu {
            name: "AMD Ryzen AI 9 HX 370 w/ Radeon 890M".to_owned(),
            cores: 24,
        }
    }
}

impl Default for Thunk {
    fn default() -> Self {
        Thunk {
            layout: 396,
            abi_check: AbiCheck::Strict,
            write_size: WriteSize::Layout,
            hidden_exports: Vec::new(),
            kfd_already_open: false,
            open_status: 0,
            acquire_status: 0,
            release_status: 0,
            close_status: 0,
            node_status: BTreeMap::new(),
            handle_import_desc_size: 0,
            snapshot_refcount: true,
            copies: Vec::new(),
        }
    }
}

impl Scenario {
    /// The built-in default: one 890M adapter, its GPU node, CPU node 0.
    pub fn radeon_890m() -> Self {
        Scenario {
            seed: 0,
            seed_given: false,
            machine: Machine::Radeon890m,
            cpu: Cpu::radeon_890m_host(),
            thunk: Thunk::default(),
            dxcore: Dxcore::default(),
            adapters: vec![Adapter::radeon_890m()],
            nodes: vec![GpuNode::radeon_890m()],
            gpu: Default::default(),
            counters: Default::default(),
            runtime: Default::default(),
            faults: Default::default(),
            kernel_duration: BTreeMap::new(),
        }
    }

    /// The factor `[kernel_duration]` gives the kernel whose symbol is `symbol` (1 when it
    /// names none): an entry under the mangled symbol wins over one under its plain name.
    pub fn kernel_duration_factor(&self, symbol: &str) -> f64 {
        if let Some(&f) = self.kernel_duration.get(symbol) {
            return f;
        }
        plain_kernel_name(symbol)
            .and_then(|plain| self.kernel_duration.get(plain).copied())
            .unwrap_or(1.0)
    }

    /// A machine with no adapters and no GPU nodes (what a broken scenario file falls back to).
    pub fn empty() -> Self {
        Scenario {
            machine: Machine::Empty,
            adapters: Vec::new(),
            nodes: Vec::new(),
            ..Scenario::radeon_890m()
        }
    }

    /// The preset's scenario.
    pub fn preset(machine: Machine) -> Self {
        match machine {
            Machine::Radeon890m => Scenario::radeon_890m(),
            Machine::Empty => Scenario::empty(),
        }
    }

    /// Number of KMT nodes: the CPU node plus one per GPU node.
    pub fn num_kmt_nodes(&self) -> u32 {
        u32::try_from(self.nodes.len()).map_or(u32::MAX, |n| n.saturating_add(1))
    }

    /// The GPU node behind KMT node `node_id` (`None` for the CPU node 0 or out of range).
    pub fn gpu_node(&self, node_id: u32) -> Option<&GpuNode> {
        let index = usize::try_from(node_id.checked_sub(1)?).ok()?;
        self.nodes.get(index)
    }
}

/// The identifier of an Itanium-mangled function name (`_Z4axpbPKfPfm` → `axpb`), or the part
/// of a demangled name before its argument list (`axpb(float const*, …)` → `axpb`); `None` for
/// a name that is neither.
fn plain_kernel_name(symbol: &str) -> Option<&str> {
    if let Some(rest) = symbol.strip_prefix("_Z") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let length: usize = rest[..digits].parse().ok()?;
        return rest.get(digits..digits + length);
    }
    symbol.split_once('(').map(|(name, _)| name)
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario::radeon_890m()
    }
}
