//! rocprofiler-sdk's numbering the JSON file uses: the buffer- and callback-tracing kinds (the
//! `kind` of every record and the index of the `strings` name tables), the fixed operation
//! names of the non-API kinds, and the byte sizes its records carry in `size`.

/// `ROCPROFILER_BUFFER_TRACING_MEMORY_COPY`.
pub const BUFFER_MEMORY_COPY: u32 = 10;
/// `ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH`.
pub const BUFFER_KERNEL_DISPATCH: u32 = 11;
/// `ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY`.
pub const BUFFER_SCRATCH_MEMORY: u32 = 12;
/// `ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION`.
pub const BUFFER_MEMORY_ALLOCATION: u32 = 16;
/// `ROCPROFILER_BUFFER_TRACING_MARKER_CORE_RANGE_API`: the ROCTx marks and ranges.
pub const BUFFER_MARKER_CORE_RANGE: u32 = 32;
/// `ROCPROFILER_KERNEL_DISPATCH_COMPLETE`, the operation of a kernel-dispatch buffer record.
pub const KERNEL_DISPATCH_COMPLETE: u32 = 2;

/// The buffer-tracing kinds, indexed by value (`ROCPROFILER_BUFFER_TRACING_<name>`).
pub const BUFFER_KINDS: [&str; 33] = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "MEMORY_COPY",
    "KERNEL_DISPATCH",
    "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "HIP_RUNTIME_API_EXT",
    "HIP_COMPILER_API_EXT",
    "ROCDECODE_API_EXT",
    "KFD_EVENT_PAGE_MIGRATE",
    "KFD_EVENT_PAGE_FAULT",
    "KFD_EVENT_QUEUE",
    "KFD_EVENT_UNMAP_FROM_GPU",
    "KFD_EVENT_DROPPED_EVENTS",
    "KFD_PAGE_MIGRATE",
    "KFD_PAGE_FAULT",
    "KFD_QUEUE",
    "MARKER_CORE_RANGE_API",
];

/// The callback-tracing kinds, indexed by value (`ROCPROFILER_CALLBACK_TRACING_<name>`).
pub const CALLBACK_KINDS: [&str; 22] = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "CODE_OBJECT",
    "SCRATCH_MEMORY",
    "KERNEL_DISPATCH",
    "MEMORY_COPY",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "MARKER_CORE_RANGE_API",
];

/// Operations of the memory-copy kinds, by value (`rocprofiler_memory_copy_operation_t`; the
/// same numbers as [`trace_records::CopyDirection`]).
pub const MEMORY_COPY_OPERATIONS: [&str; 5] = [
    "MEMORY_COPY_NONE",
    "MEMORY_COPY_HOST_TO_HOST",
    "MEMORY_COPY_HOST_TO_DEVICE",
    "MEMORY_COPY_DEVICE_TO_HOST",
    "MEMORY_COPY_DEVICE_TO_DEVICE",
];

/// Operations of the memory-allocation kinds, by value
/// (`rocprofiler_memory_allocation_operation_t`; the numbers of
/// [`trace_records::AllocationOperation`]).
pub const MEMORY_ALLOCATION_OPERATIONS: [&str; 5] = [
    "MEMORY_ALLOCATION_NONE",
    "MEMORY_ALLOCATION_ALLOCATE",
    "MEMORY_ALLOCATION_VMEM_ALLOCATE",
    "MEMORY_ALLOCATION_FREE",
    "MEMORY_ALLOCATION_VMEM_FREE",
];

/// Operations of the scratch-memory kinds, by value (`rocprofiler_scratch_memory_operation_t`;
/// the numbers of [`trace_records::ScratchOperation`]).
pub const SCRATCH_MEMORY_OPERATIONS: [&str; 4] = [
    "SCRATCH_MEMORY_NONE",
    "SCRATCH_MEMORY_ALLOC",
    "SCRATCH_MEMORY_FREE",
    "SCRATCH_MEMORY_ASYNC_RECLAIM",
];

/// Operations of the kernel-dispatch kinds, by value.
pub const KERNEL_DISPATCH_OPERATIONS: [&str; 3] = [
    "KERNEL_DISPATCH_NONE",
    "KERNEL_DISPATCH_ENQUEUE",
    "KERNEL_DISPATCH_COMPLETE",
];

/// Operations of `MARKER_CORE_RANGE_API`, by value: a mark, a push/pop range and a start/stop
/// range are 0, 1 and 2, the numbers of [`trace_records::MarkerKind`].
pub const MARKER_RANGE_OPERATIONS: [&str; 4] = [
    "roctxMarkA",
    "roctxThreadRangeA",
    "roctxProcessRangeA",
    "roctxGetThreadId",
];

/// The `size` fields: the bytes of rocprofiler-sdk's C structs for each record, by our reading
/// of its headers. Readers take nothing from them; they are there because every record of
/// upstream's file has one.
pub mod size {
    /// A host API call (`rocprofiler_buffer_tracing_*_api_record_t`).
    pub const API_RECORD: u64 = 64;
    /// `rocprofiler_buffer_tracing_kernel_dispatch_record_t`.
    pub const KERNEL_DISPATCH_RECORD: u64 = 184;
    /// `rocprofiler_buffer_tracing_memory_copy_record_t`.
    pub const MEMORY_COPY_RECORD: u64 = 80;
    /// `rocprofiler_buffer_tracing_memory_allocation_record_t`.
    pub const MEMORY_ALLOCATION_RECORD: u64 = 72;
    /// `rocprofiler_buffer_tracing_scratch_memory_record_t`.
    pub const SCRATCH_MEMORY_RECORD: u64 = 80;
    /// `rocprofiler_kernel_dispatch_info_t`.
    pub const DISPATCH_INFO: u64 = 128;
    /// `rocprofiler_dispatch_counting_service_data_t`.
    pub const DISPATCH_DATA: u64 = 168;
    /// `rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t`.
    pub const KERNEL_SYMBOL: u64 = 88;
    /// `rocprofiler_agent_v0_t`.
    pub const AGENT: u64 = 312;
}

/// The fields of the driver's `HSA_CAPABILITY` word as upstream's writer lists them under
/// `agents[].capability`: name, first bit, width. Upstream leaves out the word's remaining
/// bits, so there is no `Reserved` (one of the places its file departs from its schema).
pub const CAPABILITY_FIELDS: [(&str, u32, u32); 23] = [
    ("HotPluggable", 0, 1),
    ("HSAMMUPresent", 1, 1),
    ("SharedWithGraphics", 2, 1),
    ("QueueSizePowerOfTwo", 3, 1),
    ("QueueSize32bit", 4, 1),
    ("QueueIdleEvent", 5, 1),
    ("VALimit", 6, 1),
    ("WatchPointsSupported", 7, 1),
    ("WatchPointsTotalBits", 8, 4),
    ("DoorbellType", 12, 2),
    ("AQLQueueDoubleMap", 14, 1),
    ("DebugTrapSupported", 15, 1),
    ("WaveLaunchTrapOverrideSupported", 16, 1),
    ("WaveLaunchModeSupported", 17, 1),
    ("PreciseMemoryOperationsSupported", 18, 1),
    ("DEPRECATED_SRAM_EDCSupport", 19, 1),
    ("Mem_EDCSupport", 20, 1),
    ("RASEventNotify", 21, 1),
    ("ASICRevision", 22, 4),
    ("SRAM_EDCSupport", 26, 1),
    ("SVMAPISupported", 27, 1),
    ("CoherentHostAccess", 28, 1),
    ("DebugSupportedFirmware", 29, 1),
];

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::record::ApiDomain;

    #[test]
    fn the_kinds_the_records_use_have_the_names_of_their_tables() {
        assert_eq!(BUFFER_KINDS[BUFFER_MEMORY_COPY as usize], "MEMORY_COPY");
        assert_eq!(
            BUFFER_KINDS[BUFFER_MEMORY_ALLOCATION as usize],
            "MEMORY_ALLOCATION"
        );
        assert_eq!(
            BUFFER_KINDS[BUFFER_SCRATCH_MEMORY as usize],
            "SCRATCH_MEMORY"
        );
        for op in trace_records::AllocationOperation::ALL {
            assert_eq!(MEMORY_ALLOCATION_OPERATIONS[op as usize], op.csv_name());
        }
        for op in trace_records::ScratchOperation::ALL {
            assert_eq!(SCRATCH_MEMORY_OPERATIONS[op as usize], op.csv_name());
        }
        assert_eq!(
            BUFFER_KINDS[BUFFER_KERNEL_DISPATCH as usize],
            "KERNEL_DISPATCH"
        );
        assert_eq!(
            BUFFER_KINDS[BUFFER_MARKER_CORE_RANGE as usize],
            "MARKER_CORE_RANGE_API"
        );
        for d in ApiDomain::ALL {
            let kind = crate::view::tracing_kind(d) as usize;
            // The CSV files name a domain as its kind does (the HIP domains as the _EXT kinds).
            assert_eq!(BUFFER_KINDS[kind], d.csv_name(), "{d:?}");
        }
    }

    #[test]
    fn the_capability_fields_tile_the_word_without_overlap() {
        let mut next = 0;
        for (name, shift, width) in CAPABILITY_FIELDS {
            assert_eq!(shift, next, "{name}");
            next = shift + width;
        }
        assert_eq!(next, 30);
    }
}
