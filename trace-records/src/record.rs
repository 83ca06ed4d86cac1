//! Fixed-size records, as appended on the traced hot path.
//!
//! Every record is a `#[repr(C)]` plain-old-data struct without implicit padding, so it is
//! written to the log as its bytes and read back with a bounds-checked copy. Names (kernel
//! names, marker messages, API function names) are interned: a [`StringDef`] entry defines an id
//! once, records carry the id.

use serde::Serialize;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Identifies an interned string within one process's log.
pub type StringId = u32;

/// API domains, numbered as rocprofiler-sdk's buffer-tracing kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u8)]
pub enum ApiDomain {
    /// `HSA_CORE_API`.
    HsaCore = 1,
    /// `HSA_AMD_EXT_API`.
    HsaAmdExt = 2,
    /// `HSA_IMAGE_EXT_API`.
    HsaImage = 3,
    /// `HSA_FINALIZE_EXT_API`.
    HsaFinalize = 4,
    /// `HIP_RUNTIME_API_EXT`.
    HipRuntime = 5,
    /// `HIP_COMPILER_API_EXT`.
    HipCompiler = 6,
    /// `MARKER_CORE_API`.
    MarkerCore = 7,
    /// `MARKER_CONTROL_API`.
    MarkerControl = 8,
    /// `MARKER_NAME_API`.
    MarkerName = 9,
}

impl ApiDomain {
    /// Every domain.
    pub const ALL: [Self; 9] = [
        Self::HsaCore,
        Self::HsaAmdExt,
        Self::HsaImage,
        Self::HsaFinalize,
        Self::HipRuntime,
        Self::HipCompiler,
        Self::MarkerCore,
        Self::MarkerControl,
        Self::MarkerName,
    ];

    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|d| *d as u8 == v)
    }

    /// The `Domain` column value of rocprofv3's CSV files.
    pub fn csv_name(self) -> &'static str {
        match self {
            Self::HsaCore => "HSA_CORE_API",
            Self::HsaAmdExt => "HSA_AMD_EXT_API",
            Self::HsaImage => "HSA_IMAGE_EXT_API",
            Self::HsaFinalize => "HSA_FINALIZE_EXT_API",
            Self::HipRuntime => "HIP_RUNTIME_API_EXT",
            Self::HipCompiler => "HIP_COMPILER_API_EXT",
            Self::MarkerCore => "MARKER_CORE_API",
            Self::MarkerControl => "MARKER_CONTROL_API",
            Self::MarkerName => "MARKER_NAME_API",
        }
    }

    /// Whether this is one of the HSA domains.
    pub fn is_hsa(self) -> bool {
        matches!(
            self,
            Self::HsaCore | Self::HsaAmdExt | Self::HsaImage | Self::HsaFinalize
        )
    }

    /// Whether this is one of the HIP domains.
    pub fn is_hip(self) -> bool {
        matches!(self, Self::HipRuntime | Self::HipCompiler)
    }
}

/// One traced API call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ApiRecord {
    /// Internal correlation id (from 1).
    pub correlation_id: u64,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
    /// OS thread id.
    pub thread_id: u32,
    /// Operation id = index in the domain's table.
    pub operation: u16,
    /// [`ApiDomain`] as a byte.
    pub domain: u8,
    /// Zero.
    pub reserved: u8,
}

impl ApiRecord {
    /// A call's record from its `kind`: the operation in the low 16 bits, the [`ApiDomain`] in
    /// the next 8, the `reserved` byte above (a tracer's tag, or [`ApiRecord::kind`]).
    #[inline(always)]
    pub fn of_kind(kind: u32, correlation_id: u64, start: u64, end: u64, thread_id: u32) -> Self {
        Self {
            correlation_id,
            start,
            end,
            thread_id,
            operation: kind as u16,
            domain: (kind >> 16) as u8,
            reserved: (kind >> 24) as u8,
        }
    }

    /// The operation, domain and `reserved` byte in one word, as [`ApiRecord::of_kind`] takes
    /// them (the record's last four bytes).
    #[inline(always)]
    pub fn kind(&self) -> u32 {
        u32::from(self.operation) | u32::from(self.domain) << 16 | u32::from(self.reserved) << 24
    }
}

/// One traced API call in its compact entry ([`Tag::ApiCompact`], log version 5): what the
/// writer stores instead of an [`ApiRecord`] whenever the call fits it, 16 bytes instead of 32
/// (the traced path's cost grows with the bytes it stores into fresh pages, docs/PERFORMANCE.md).
///
/// It is read against its chunk ([`ApiBase`]): the thread id is the chunk header's `tid`, the
/// correlation id a step from the chunk's previous API entry, the start a step from the
/// previous [`Tag::Api`] or [`Tag::ApiCompact`] entry's (both 0 before the chunk's first). A
/// call that does not fit — a step
/// beyond ±2^31, a call of 2^32 ns (4.3 s) or longer, a thread id other than the chunk's — is
/// stored whole, so decoding gives back exactly the record that was pushed.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ApiCompactRecord {
    /// Correlation id minus the previous API entry's (wrapping, as a signed 32-bit step).
    pub id_step: i32,
    /// Start minus the previous API entry's start, ns (wrapping, signed).
    pub start_step: i32,
    /// End minus start, ns.
    pub duration: u32,
    /// Operation id = index in the domain's table.
    pub operation: u16,
    /// [`ApiDomain`] as a byte.
    pub domain: u8,
    /// The record's `reserved` byte (zero).
    pub reserved: u8,
}

/// The chunk-relative state compact API entries are read and written against: the
/// correlation id and start of the chunk's last API entry (0 and 0 at the chunk's start; a
/// tick-timed entry, which has no converted start, moves the correlation id only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiBase {
    /// The last API entry's correlation id.
    pub correlation_id: u64,
    /// The last API entry's start.
    pub start: u64,
}

impl ApiBase {
    /// The record a compact entry stands for, on a chunk of thread `tid`.
    #[inline]
    pub fn expand(&self, c: &ApiCompactRecord, tid: u32) -> ApiRecord {
        let correlation_id = self.correlation_id.wrapping_add(c.id_step as i64 as u64);
        let start = self.start.wrapping_add(c.start_step as i64 as u64);
        ApiRecord {
            correlation_id,
            start,
            end: start.wrapping_add(u64::from(c.duration)),
            thread_id: tid,
            operation: c.operation,
            domain: c.domain,
            reserved: c.reserved,
        }
    }

    /// The base after `record` was stored (whole or compact).
    #[inline(always)]
    pub fn after(record: &ApiRecord) -> Self {
        Self {
            correlation_id: record.correlation_id,
            start: record.start,
        }
    }
}

/// `ticks · scale` in ns, `scale` being 32.32 fixed-point ns per tick: the one conversion of
/// TSC ticks to host time, shared by the tool's clock and the log's reader (so a time the
/// reader converts is the very value the tool would have computed).
#[inline(always)]
pub fn scaled_ticks(ticks: u64, scale: u64) -> u64 {
    // A product that does not fit 64 bits (an epoch seconds old: a forked child has no
    // recalibration thread) takes the wide multiply.
    match ticks.checked_mul(scale) {
        Some(p) => p >> 32,
        None => ((u128::from(ticks) * u128::from(scale)) >> 32) as u64,
    }
}

/// One calibration of the TSC against the host timeline ([`Tag::ClockEpoch`], log version 5):
/// host time = `ns0 + (tsc − tsc0) · scale / 2^32`. A chunk holding API calls timed in ticks
/// ([`ApiTicksRecord`]) carries the epoch they were taken under before them.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ClockEpochRecord {
    /// The epoch's number in the process (from 1; a new one every 50 ms).
    pub sequence: u64,
    /// The TSC at the calibration.
    pub tsc0: u64,
    /// The host time at `tsc0`, ns.
    pub ns0: u64,
    /// ns per tick, 32.32 fixed point.
    pub scale: u64,
}

impl ClockEpochRecord {
    /// The host time of TSC value `tsc` (not before `ns0`).
    #[inline(always)]
    pub fn ns_at(&self, tsc: u64) -> u64 {
        self.ns0
            .saturating_add(scaled_ticks(tsc.saturating_sub(self.tsc0), self.scale))
    }

    /// The host times of a call timed `start..end` in ticks: `end` as [`ClockEpochRecord::ns_at`]
    /// gives it, `start` that minus the ticks between them (so the span is exact and `start <=
    /// end`).
    #[inline(always)]
    pub fn span_ns(&self, start: u64, end: u64) -> (u64, u64) {
        let end_ns = self.ns_at(end);
        let span = scaled_ticks(end.saturating_sub(start), self.scale);
        (end_ns.saturating_sub(span), end_ns)
    }
}

/// A traced call as the tool's exit has it, timed in raw TSC ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickCall {
    /// Correlation id.
    pub correlation_id: u64,
    /// The TSC when the call started.
    pub start: u64,
    /// The TSC when it returned.
    pub end: u64,
    /// OS thread id.
    pub thread_id: u32,
    /// The operation in its low 16 bits, the [`ApiDomain`] in the next 8, zero above.
    pub kind: u32,
}

impl TickCall {
    /// The call's record, its times converted under `epoch`.
    #[inline]
    pub fn record(&self, epoch: &ClockEpochRecord) -> ApiRecord {
        let (start, end) = epoch.span_ns(self.start, self.end);
        ApiRecord::of_kind(self.kind, self.correlation_id, start, end, self.thread_id)
    }
}

/// One traced API call timed in TSC ticks ([`Tag::ApiTicks`], log version 5): what the tool's
/// traced exit stores, 16 bytes, with no time conversion on the application's thread.
///
/// It is read against its chunk: the thread id is the chunk's `tid`, the correlation id a step
/// from the chunk's previous API entry (as in [`ApiCompactRecord`]), and the times are ticks
/// from the `tsc0` of the chunk's last [`ClockEpochRecord`], converted with that epoch. The
/// steps are signed, but the writer stores only forward ones (from version 6: a correlation id
/// step and a start in `0..2^31`, one compare each on the traced exit); a call that does not
/// fit (a step back or too far, a duration of 2^32 ticks or more, another thread than the
/// chunk's) is stored converted, as an [`ApiRecord`] or [`ApiCompactRecord`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ApiTicksRecord {
    /// Correlation id minus the previous API entry's (wrapping, as a signed 32-bit step).
    pub id_step: i32,
    /// The start, in ticks from the epoch's `tsc0` (signed: a call may start before it).
    pub start: i32,
    /// End minus start, in ticks.
    pub duration: u32,
    /// Operation id = index in the domain's table.
    pub operation: u16,
    /// [`ApiDomain`] as a byte.
    pub domain: u8,
    /// The call's `kind` above the domain (zero).
    pub reserved: u8,
}

impl ApiTicksRecord {
    /// The call's record: the steps resolved against `base`, the times converted under
    /// `epoch`, the thread the chunk's `tid`.
    #[inline]
    pub fn expand(&self, base: &ApiBase, epoch: &ClockEpochRecord, tid: u32) -> ApiRecord {
        let start = epoch.tsc0.wrapping_add(self.start as i64 as u64);
        let (start, end) = epoch.span_ns(start, start.wrapping_add(u64::from(self.duration)));
        ApiRecord {
            correlation_id: base.correlation_id.wrapping_add(self.id_step as i64 as u64),
            start,
            end,
            thread_id: tid,
            operation: self.operation,
            domain: self.domain,
            reserved: self.reserved,
        }
    }
}

/// A kernel symbol loaded into an executable.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct KernelSymbolRecord {
    /// Kernel id (from 1).
    pub kernel_id: u64,
    /// Address of the kernel descriptor.
    pub kernel_object: u64,
    /// Kernel name.
    pub name: StringId,
    /// Architectural VGPRs per work-item.
    pub arch_vgpr_count: u32,
    /// Accumulation VGPRs.
    pub accum_vgpr_count: u32,
    /// SGPRs.
    pub sgpr_count: u32,
    /// Group segment (LDS) bytes.
    pub group_segment_size: u32,
    /// Private segment (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Kernarg segment bytes.
    pub kernarg_segment_size: u32,
    /// The loaded code object holding the kernel ([`CodeObjectRecord::code_object_id`]; 0 if
    /// unknown: the loader extension gave none, or a log written before code objects were
    /// recorded).
    pub code_object_id: u32,
}

/// One kernel dispatch.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct KernelDispatchRecord {
    /// Dispatch id (from 1).
    pub dispatch_id: u64,
    /// Kernel id (0 if the kernel object was unknown).
    pub kernel_id: u64,
    /// Correlation id of the API call that enqueued it.
    pub correlation_id: u64,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
    /// HSA queue id.
    pub queue_id: u64,
    /// HIP stream handle (0 = default / none).
    pub stream_id: u64,
    /// Driver (KMT) node id of the agent.
    pub agent_node_id: u32,
    /// OS thread id of the enqueuing thread.
    pub thread_id: u32,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// Private segment bytes from the packet.
    pub private_segment_size: u32,
    /// Group segment bytes from the packet.
    pub group_segment_size: u32,
    /// With `--kernel-rename`: the message of the innermost ROCTx thread range open on the
    /// enqueuing thread when the dispatch was enqueued (0 = none, or not asked for).
    pub region: StringId,
    /// Zero.
    pub reserved: u32,
}

/// Direction of a memory copy (rocprofiler numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum CopyDirection {
    /// Host to host.
    HostToHost = 1,
    /// Host to device.
    HostToDevice = 2,
    /// Device to host.
    DeviceToHost = 3,
    /// Device to device.
    DeviceToDevice = 4,
}

impl CopyDirection {
    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        [
            Self::HostToHost,
            Self::HostToDevice,
            Self::DeviceToHost,
            Self::DeviceToDevice,
        ]
        .into_iter()
        .find(|d| *d as u8 == v)
    }

    /// The `Direction` column value of a stored byte (`MEMORY_COPY_NONE` if unknown).
    pub fn label(v: u8) -> &'static str {
        Self::from_u8(v).map_or("MEMORY_COPY_NONE", Self::csv_name)
    }

    /// The `Direction` column value.
    pub fn csv_name(self) -> &'static str {
        match self {
            Self::HostToHost => "MEMORY_COPY_HOST_TO_HOST",
            Self::HostToDevice => "MEMORY_COPY_HOST_TO_DEVICE",
            Self::DeviceToHost => "MEMORY_COPY_DEVICE_TO_HOST",
            Self::DeviceToDevice => "MEMORY_COPY_DEVICE_TO_DEVICE",
        }
    }
}

/// One asynchronous memory copy.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct MemoryCopyRecord {
    /// Correlation id of the API call that issued it.
    pub correlation_id: u64,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// HIP stream handle (0 = none).
    pub stream_id: u64,
    /// Driver node id of the source agent.
    pub src_node_id: u32,
    /// Driver node id of the destination agent.
    pub dst_node_id: u32,
    /// OS thread id of the issuing thread.
    pub thread_id: u32,
    /// [`CopyDirection`] as a byte.
    pub direction: u8,
    /// Zero.
    pub reserved: [u8; 3],
}

/// What a memory-allocation record is, numbered as rocprofiler-sdk's
/// `rocprofiler_memory_allocation_operation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u8)]
pub enum AllocationOperation {
    /// `hsa_amd_memory_pool_allocate` or `hsa_memory_allocate`.
    Allocate = 1,
    /// `hsa_amd_vmem_handle_create` (physical memory for a virtual range).
    VmemAllocate = 2,
    /// `hsa_amd_memory_pool_free` or `hsa_memory_free`.
    Free = 3,
    /// `hsa_amd_vmem_handle_release`.
    VmemFree = 4,
}

impl AllocationOperation {
    /// Every operation.
    pub const ALL: [Self; 4] = [
        Self::Allocate,
        Self::VmemAllocate,
        Self::Free,
        Self::VmemFree,
    ];

    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|o| *o as u8 == v)
    }

    /// The `Operation` column value of a stored byte (`MEMORY_ALLOCATION_NONE` if unknown).
    pub fn label(v: u8) -> &'static str {
        Self::from_u8(v).map_or("MEMORY_ALLOCATION_NONE", Self::csv_name)
    }

    /// The `Operation` column value.
    pub fn csv_name(self) -> &'static str {
        match self {
            Self::Allocate => "MEMORY_ALLOCATION_ALLOCATE",
            Self::VmemAllocate => "MEMORY_ALLOCATION_VMEM_ALLOCATE",
            Self::Free => "MEMORY_ALLOCATION_FREE",
            Self::VmemFree => "MEMORY_ALLOCATION_VMEM_FREE",
        }
    }

    /// Whether the operation obtains memory (its record names the agent and the size).
    pub fn is_allocation(self) -> bool {
        matches!(self, Self::Allocate | Self::VmemAllocate)
    }

    /// Whether the operation is on virtual-memory handles (rocpd level `VIRTUAL`).
    pub fn is_vmem(self) -> bool {
        matches!(self, Self::VmemAllocate | Self::VmemFree)
    }
}

/// One call that allocated or freed memory through the HSA runtime.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct MemoryAllocationRecord {
    /// Correlation id of the API call (the outermost traced call on the thread, if any).
    pub correlation_id: u64,
    /// Host timeline, ns.
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
    /// The address allocated or freed (the handle, for the VMEM operations).
    pub address: u64,
    /// Bytes allocated (0 for frees).
    pub size: u64,
    /// OS thread id of the calling thread.
    pub thread_id: u32,
    /// Driver (KMT) node id of the agent owning the pool (meaningful if `has_agent`).
    pub agent_node_id: u32,
    /// [`AllocationOperation`] as a byte.
    pub operation: u8,
    /// 1 if `agent_node_id` names the agent (allocations whose pool's agent is known).
    pub has_agent: u8,
    /// Zero.
    pub reserved: [u8; 6],
}

/// What a scratch-memory record is, numbered as rocprofiler-sdk's
/// `rocprofiler_scratch_memory_operation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u8)]
pub enum ScratchOperation {
    /// The runtime allocated scratch for a queue.
    Alloc = 1,
    /// The runtime freed a queue's scratch.
    Free = 2,
    /// The runtime reclaimed scratch asynchronously.
    AsyncReclaim = 3,
}

impl ScratchOperation {
    /// Every operation.
    pub const ALL: [Self; 3] = [Self::Alloc, Self::Free, Self::AsyncReclaim];

    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|o| *o as u8 == v)
    }

    /// The `Operation` column value of a stored byte (`SCRATCH_MEMORY_NONE` if unknown).
    pub fn label(v: u8) -> &'static str {
        Self::from_u8(v).map_or("SCRATCH_MEMORY_NONE", Self::csv_name)
    }

    /// The `Operation` column value.
    pub fn csv_name(self) -> &'static str {
        match self {
            Self::Alloc => "SCRATCH_MEMORY_ALLOC",
            Self::Free => "SCRATCH_MEMORY_FREE",
            Self::AsyncReclaim => "SCRATCH_MEMORY_ASYNC_RECLAIM",
        }
    }
}

/// One scratch event of the runtime: a start/end pair of the tools table's scratch callbacks.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ScratchMemoryRecord {
    /// Correlation id of the traced API call active on the thread, or 0.
    pub correlation_id: u64,
    /// Host timeline, ns (the start event).
    pub start: u64,
    /// Host timeline, ns (the end event).
    pub end: u64,
    /// HSA queue id (`hsa_queue_t.id`).
    pub queue_id: u64,
    /// Scratch bytes allocated (the alloc end event's size; 0 otherwise).
    pub size: u64,
    /// OS thread id of the runtime thread reporting it.
    pub thread_id: u32,
    /// Driver (KMT) node id of the queue's agent.
    pub agent_node_id: u32,
    /// `hsa_amd_event_scratch_alloc_flag_t` bits.
    pub flags: u32,
    /// [`ScratchOperation`] as a byte.
    pub operation: u8,
    /// Zero.
    pub reserved: [u8; 3],
}

/// Whether a [`CodeObjectRecord`] is a load or an unload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum CodeObjectEvent {
    /// Loaded into an executable (recorded at `hsa_executable_freeze`).
    Load = 1,
    /// Unloaded (recorded at `hsa_executable_destroy`).
    Unload = 2,
}

impl CodeObjectEvent {
    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        [Self::Load, Self::Unload]
            .into_iter()
            .find(|e| *e as u8 == v)
    }
}

/// One code object loaded into (or unloaded from) an executable, as the AMD loader extension
/// reports it (`hsa_ven_amd_loader_loaded_code_object_get_info`): rocprofiler-sdk's
/// `rocprofiler_callback_tracing_code_object_load_data_t`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CodeObjectRecord {
    /// Code object id (from 1; a load and its unload share it).
    pub code_object_id: u64,
    /// When it was loaded or unloaded (host timeline, ns).
    pub timestamp: u64,
    /// Where the loader placed it (`LOAD_BASE`).
    pub load_base: u64,
    /// Bytes it spans (`LOAD_SIZE`).
    pub load_size: u64,
    /// `LOAD_DELTA` (a signed offset, stored as its bits).
    pub load_delta: u64,
    /// With memory storage: where its bytes were handed to the loader.
    pub memory_base: u64,
    /// With memory storage: how many bytes.
    pub memory_size: u64,
    /// Its URI (`file://…` or `memory://…`).
    pub uri: StringId,
    /// Driver (KMT) node id of its agent.
    pub agent_node_id: u32,
    /// `hsa_ven_amd_loader_code_object_storage_type_t` (0 none, 1 file, 2 memory).
    pub storage_type: u32,
    /// [`CodeObjectEvent`] as a byte.
    pub event: u8,
    /// Zero.
    pub reserved: [u8; 3],
}

/// Three components, as HIP's `dim3` / `uint3`.
pub type Dim3 = [u32; 3];

/// One HIP host function registered by `__hipRegisterFunction` (a kernel's host stub and its
/// device function's name): rocprofiler-sdk's
/// `rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t` before its
/// kernel is known (that is resolved after the run, by the device function's name).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct HostFunctionRecord {
    /// The host stub's address.
    pub host_function: u64,
    /// The fat-binary handle it was registered with (`modules`).
    pub modules: u64,
    /// What `thread_ids` pointed to (zeros for a null pointer).
    pub thread_ids: Dim3,
    /// What `block_ids` pointed to.
    pub block_ids: Dim3,
    /// What `block_dims` pointed to.
    pub block_dims: Dim3,
    /// What `grid_dims` pointed to.
    pub grid_dims: Dim3,
    /// What `workgroup_size` pointed to (0 for a null pointer).
    pub workgroup_size: u32,
    /// `thread_limit`.
    pub thread_limit: u32,
    /// The device function's name (the kernel symbol's, without `.kd`).
    pub device_function: StringId,
    /// Zero.
    pub reserved: u32,
}

/// What kind of ROCTx event a marker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum MarkerKind {
    /// `roctxMarkA`: an instant.
    Mark = 0,
    /// `roctxRangePushA` … `roctxRangePop` on one thread.
    ThreadRange = 1,
    /// `roctxRangeStartA` … `roctxRangeStop`, process-wide.
    ProcessRange = 2,
}

impl MarkerKind {
    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        [Self::Mark, Self::ThreadRange, Self::ProcessRange]
            .into_iter()
            .find(|k| *k as u8 == v)
    }
}

/// One ROCTx mark or range.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct MarkerRecord {
    /// Correlation id of the call that opened it.
    pub correlation_id: u64,
    /// Host timeline, ns (equal to `end` for marks).
    pub start: u64,
    /// Host timeline, ns.
    pub end: u64,
    /// The user's message.
    pub message: StringId,
    /// OS thread id.
    pub thread_id: u32,
    /// [`MarkerKind`] as a byte.
    pub kind: u8,
    /// Zero.
    pub reserved: [u8; 7],
}

/// One hardware-counter value of one kernel dispatch: the counter's value summed over all its
/// dimension instances (XCC, shader engine, …), as `counter_collection.csv` has one row per
/// dispatch and counter. The dispatch's other columns (kernel, queue, grid, timestamps) come from
/// its [`KernelDispatchRecord`], joined by `dispatch_id`; the correlation id and agent are kept
/// here too, so a row can still be written when that record was lost.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CounterRecord {
    /// Dispatch id of the dispatch counted (as in its [`KernelDispatchRecord`]).
    pub dispatch_id: u64,
    /// Correlation id of the API call that enqueued the dispatch.
    pub correlation_id: u64,
    /// The value, summed over dimension instances.
    pub value: f64,
    /// The counter's name.
    pub name: StringId,
    /// The counter's id (rows of one dispatch are written in counter-id order, as upstream).
    pub counter_id: u32,
    /// Driver (KMT) node id of the agent that ran the dispatch.
    pub agent_node_id: u32,
    /// Zero.
    pub reserved: u32,
}

/// The fixed part of a [`Tag::CounterSample`] entry: which dispatch the raw counter output
/// that follows it belongs to. The bytes are the counter output buffer exactly as the GPU
/// left it (8-byte slots in the read buffer's order); the layout of those slots is the
/// agent's [`crate::docs::CounterSetup`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CounterSampleHeader {
    /// Dispatch id of the dispatch counted (as in its [`KernelDispatchRecord`]).
    pub dispatch_id: u64,
    /// Correlation id of the API call that enqueued it.
    pub correlation_id: u64,
    /// Driver (KMT) node id of the agent that ran it.
    pub agent_node_id: u32,
    /// Which of the agent's multiplexed counter groups counted it (0 without multiplexing):
    /// the `group` of its [`crate::docs::CounterSetup`].
    pub group: u32,
}

/// Defines the name of one API operation (written once per log, before use).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct OperationName {
    /// The operation's name.
    pub name: StringId,
    /// Operation id.
    pub operation: u16,
    /// [`ApiDomain`] as a byte.
    pub domain: u8,
    /// Zero.
    pub reserved: u8,
}

/// The tags of log entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Tag {
    /// Variable length: `StringId` then UTF-8 bytes.
    StringDef = 1,
    /// [`OperationName`].
    OperationName = 2,
    /// [`ApiRecord`].
    Api = 3,
    /// [`KernelSymbolRecord`].
    KernelSymbol = 4,
    /// [`KernelDispatchRecord`].
    KernelDispatch = 5,
    /// [`MemoryCopyRecord`].
    MemoryCopy = 6,
    /// [`MarkerRecord`].
    Marker = 7,
    /// Variable length: a JSON document (agents, run facts).
    Json = 8,
    /// [`CounterRecord`].
    Counter = 9,
    /// Variable length: a [`CounterSampleHeader`], then the dispatch's raw counter output
    /// buffer (decoded by `rocprof` with the agent's [`crate::docs::CounterSetup`]).
    CounterSample = 10,
    /// [`MemoryAllocationRecord`].
    MemoryAllocation = 11,
    /// [`ScratchMemoryRecord`].
    ScratchMemory = 12,
    /// Variable length: a string definition that was cut to fit one entry: `StringId`, the
    /// full length in bytes (`u64`), then the UTF-8 bytes kept (log version 3).
    StringCut = 13,
    /// Variable length (log version 4): an API call with its raw arguments, written instead of
    /// an [`ApiRecord`] when argument capture is on: the [`ApiRecord`], an [`ApiArgsHeader`],
    /// the captured words (integer registers, vector registers, stack words: 8 bytes each),
    /// then per C string read at the call its word index (`u8`), its length (`u16`) and its
    /// bytes.
    ApiArgs = 14,
    /// [`CodeObjectRecord`] (log version 4).
    CodeObject = 15,
    /// [`HostFunctionRecord`] (log version 4).
    HostFunction = 16,
    /// [`ApiCompactRecord`] (log version 5): an API call read against its chunk.
    ApiCompact = 17,
    /// [`ClockEpochRecord`] (log version 5): the TSC calibration of the chunk's tick-timed
    /// calls from here on.
    ClockEpoch = 18,
    /// [`ApiTicksRecord`] (log version 5): an API call timed in TSC ticks, read against its
    /// chunk.
    ApiTicks = 19,
}

impl Tag {
    /// From the stored value.
    pub fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::StringDef,
            2 => Self::OperationName,
            3 => Self::Api,
            4 => Self::KernelSymbol,
            5 => Self::KernelDispatch,
            6 => Self::MemoryCopy,
            7 => Self::Marker,
            8 => Self::Json,
            9 => Self::Counter,
            10 => Self::CounterSample,
            11 => Self::MemoryAllocation,
            12 => Self::ScratchMemory,
            13 => Self::StringCut,
            14 => Self::ApiArgs,
            15 => Self::CodeObject,
            16 => Self::HostFunction,
            17 => Self::ApiCompact,
            18 => Self::ClockEpoch,
            19 => Self::ApiTicks,
            _ => return None,
        })
    }
}

/// What follows the [`ApiRecord`] in a [`Tag::ApiArgs`] entry.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ApiArgsHeader {
    /// `rax` after the call (for a struct returned in memory, its first 8 bytes).
    pub rax: u64,
    /// Integer-register words captured.
    pub int_words: u8,
    /// Vector-register words captured (low 8 bytes of each).
    pub sse_words: u8,
    /// Stack words captured.
    pub stack_words: u8,
    /// C strings that follow the words.
    pub strings: u8,
    /// Zero.
    pub reserved: u32,
}

/// A fixed-size record type and its tag.
pub trait FixedRecord: IntoBytes + FromBytes + Immutable + KnownLayout + Copy {
    /// The entry tag.
    const TAG: Tag;
}

impl FixedRecord for ApiRecord {
    const TAG: Tag = Tag::Api;
}
impl FixedRecord for KernelSymbolRecord {
    const TAG: Tag = Tag::KernelSymbol;
}
impl FixedRecord for KernelDispatchRecord {
    const TAG: Tag = Tag::KernelDispatch;
}
impl FixedRecord for MemoryCopyRecord {
    const TAG: Tag = Tag::MemoryCopy;
}
impl FixedRecord for MarkerRecord {
    const TAG: Tag = Tag::Marker;
}
impl FixedRecord for CounterRecord {
    const TAG: Tag = Tag::Counter;
}
impl FixedRecord for MemoryAllocationRecord {
    const TAG: Tag = Tag::MemoryAllocation;
}
impl FixedRecord for ScratchMemoryRecord {
    const TAG: Tag = Tag::ScratchMemory;
}
impl FixedRecord for CodeObjectRecord {
    const TAG: Tag = Tag::CodeObject;
}
impl FixedRecord for HostFunctionRecord {
    const TAG: Tag = Tag::HostFunction;
}
impl FixedRecord for ClockEpochRecord {
    const TAG: Tag = Tag::ClockEpoch;
}
impl FixedRecord for OperationName {
    const TAG: Tag = Tag::OperationName;
}

const _: () = {
    assert!(size_of::<ApiRecord>() == 32);
    assert!(std::mem::offset_of!(ApiRecord, start) == 8);
    assert!(std::mem::offset_of!(ApiRecord, end) == 16);
    assert!(std::mem::offset_of!(ApiRecord, thread_id) == 24);
    assert!(std::mem::offset_of!(ApiRecord, operation) == 28);
    assert!(std::mem::offset_of!(ApiRecord, domain) == 30);
    assert!(std::mem::offset_of!(ApiRecord, reserved) == 31);
    assert!(size_of::<ApiArgsHeader>() == 16);
    assert!(size_of::<ApiCompactRecord>() == 16);
    assert!(size_of::<ApiTicksRecord>() == 16);
    assert!(std::mem::offset_of!(ApiTicksRecord, duration) == 8);
    assert!(std::mem::offset_of!(ApiTicksRecord, operation) == 12);
    assert!(size_of::<ClockEpochRecord>() == 32);
    assert!(std::mem::offset_of!(ClockEpochRecord, scale) == 24);
    assert!(std::mem::offset_of!(ApiCompactRecord, duration) == 8);
    assert!(std::mem::offset_of!(ApiCompactRecord, operation) == 12);
    assert!(std::mem::offset_of!(ApiCompactRecord, domain) == 14);
    assert!(std::mem::offset_of!(ApiArgsHeader, int_words) == 8);
    assert!(std::mem::offset_of!(ApiArgsHeader, strings) == 11);
    assert!(size_of::<KernelSymbolRecord>() == 48);
    assert!(std::mem::offset_of!(KernelSymbolRecord, code_object_id) == 44);
    assert!(size_of::<CodeObjectRecord>() == 72);
    assert!(std::mem::offset_of!(CodeObjectRecord, uri) == 56);
    assert!(std::mem::offset_of!(CodeObjectRecord, event) == 68);
    assert!(size_of::<HostFunctionRecord>() == 80);
    assert!(std::mem::offset_of!(HostFunctionRecord, workgroup_size) == 64);
    assert!(std::mem::offset_of!(HostFunctionRecord, device_function) == 72);
    assert!(size_of::<KernelDispatchRecord>() == 104);
    assert!(size_of::<MemoryCopyRecord>() == 56);
    assert!(size_of::<MarkerRecord>() == 40);
    assert!(size_of::<OperationName>() == 8);
    assert!(size_of::<CounterRecord>() == 40);
    assert!(size_of::<CounterSampleHeader>() == 24);
    assert!(size_of::<MemoryAllocationRecord>() == 56);
    assert!(std::mem::offset_of!(MemoryAllocationRecord, thread_id) == 40);
    assert!(std::mem::offset_of!(MemoryAllocationRecord, operation) == 48);
    assert!(std::mem::offset_of!(MemoryAllocationRecord, has_agent) == 49);
    assert!(size_of::<ScratchMemoryRecord>() == 56);
    assert!(std::mem::offset_of!(ScratchMemoryRecord, thread_id) == 40);
    assert!(std::mem::offset_of!(ScratchMemoryRecord, flags) == 48);
    assert!(std::mem::offset_of!(ScratchMemoryRecord, operation) == 52);
    assert!(std::mem::offset_of!(CounterSampleHeader, agent_node_id) == 16);
    assert!(align_of::<CounterRecord>() == 8);
    assert!(std::mem::offset_of!(CounterRecord, value) == 16);
    assert!(std::mem::offset_of!(CounterRecord, name) == 24);
    assert!(std::mem::offset_of!(CounterRecord, counter_id) == 28);
    assert!(std::mem::offset_of!(CounterRecord, agent_node_id) == 32);
};
