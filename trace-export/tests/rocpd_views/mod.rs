//! The plain `rocpd_<name>` views upstream's readers select from (verified-facts §2): every
//! rocpd file must have them. Shared by trace-export's and rocprof-cli's rocpd tests (the
//! latter includes this file by path).

/// The plain views readers select from.
pub const PLAIN: [&str; 20] = [
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_node",
    "rocpd_info_process",
    "rocpd_info_thread",
    "rocpd_info_agent",
    "rocpd_info_queue",
    "rocpd_info_stream",
    "rocpd_info_pmc",
    "rocpd_info_code_object",
    "rocpd_info_kernel_symbol",
    "rocpd_track",
    "rocpd_event",
    "rocpd_arg",
    "rocpd_pmc_event",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
];
