//! The API tables the runtimes hand to tools: layouts, operation ids and names.
//!
//! HSA tables start with an `ApiTableVersion` (16 bytes, `minor_id` = the table's `sizeof`), then
//! one function pointer per entry (entry k at 16 + 8k). HIP and ROCTx tables start with a
//! `size_t size`, entry k at 8 + 8k. Operation id = entry index.

use c_layout::{Field, LayoutInfo};
use trace_records::ApiDomain;

include!(concat!(env!("OUT_DIR"), "/tables.rs"));

/// Declares a small hand-written table (a `size_t size`, then one pointer per entry): its entry
/// names (`$names`) and its C layout (`$fields`: `size`, then one `<entry>_fn` member per entry).
macro_rules! small_table {
    ($(#[$doc:meta])* $names:ident, $fields:ident, [$($name:literal),* $(,)?]) => {
        $(#[$doc])*
        pub const $names: [&str; [$($name),*].len()] = [$($name),*];

        static $fields: [Field; $names.len() + 1] = {
            let members = [$(concat!($name, "_fn")),*];
            let mut f = [Field {
                name: "size",
                offset: 0,
                size: 8,
            }; $names.len() + 1];
            let mut k = 0;
            while k < members.len() {
                f[k + 1] = Field {
                    name: members[k],
                    offset: Header::Size.bytes() + 8 * k,
                    size: 8,
                };
                k += 1;
            }
            f
        };
    };
}

small_table!(
    /// Entry names of `HipCompilerDispatchTable`.
    HIP_COMPILER,
    HIP_COMPILER_FIELDS,
    [
        "__hipPopCallConfiguration",
        "__hipPushCallConfiguration",
        "__hipRegisterFatBinary",
        "__hipRegisterFunction",
        "__hipRegisterManagedVar",
        "__hipRegisterSurface",
        "__hipRegisterTexture",
        "__hipRegisterVar",
        "__hipUnregisterFatBinary",
    ]
);
small_table!(
    /// Entry names of the ROCTx core table.
    ROCTX_CORE,
    ROCTX_CORE_FIELDS,
    [
        "roctxMarkA",
        "roctxRangePushA",
        "roctxRangePop",
        "roctxRangeStartA",
        "roctxRangeStop",
        "roctxGetThreadId",
    ]
);
small_table!(
    /// Entry names of the ROCTx control table.
    ROCTX_CONTROL,
    ROCTX_CONTROL_FIELDS,
    ["roctxProfilerPause", "roctxProfilerResume"]
);
small_table!(
    /// Entry names of the ROCTx name table.
    ROCTX_NAME,
    ROCTX_NAME_FIELDS,
    [
        "roctxNameOsThread",
        "roctxNameHsaAgent",
        "roctxNameHipDevice",
        "roctxNameHipStream",
    ]
);

/// How a table records its own size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// `ApiTableVersion { major_id, minor_id = sizeof, step_id, reserved }` (16 bytes).
    Version,
    /// `size_t size` (8 bytes).
    Size,
}

impl Header {
    /// Bytes before the first entry.
    pub const fn bytes(self) -> usize {
        match self {
            Self::Version => 16,
            Self::Size => 8,
        }
    }
}

/// One API table as handed over by a runtime.
#[derive(Debug, Clone, Copy)]
pub struct ApiTable {
    /// The C name of the struct.
    pub c_name: &'static str,
    /// The records' domain.
    pub domain: ApiDomain,
    /// Entry names in order.
    pub names: &'static [&'static str],
    /// The header before the entries.
    pub header: Header,
}

impl ApiTable {
    /// Byte offset of entry `k`.
    pub const fn offset(&self, k: usize) -> usize {
        self.header.bytes() + 8 * k
    }

    /// `sizeof` of the full table as this build knows it.
    pub const fn size(&self) -> usize {
        self.offset(self.names.len())
    }

    /// The operation id of `name`.
    pub fn operation(&self, name: &str) -> Option<u16> {
        self.names.iter().position(|n| *n == name).map(|i| i as u16)
    }
}

/// The table's own `sizeof` as the runtime wrote it in its header.
///
/// # Safety
/// `base` must point at a readable table with `table`'s header.
pub unsafe fn runtime_size(table: &ApiTable, base: *const u8) -> usize {
    match table.header {
        // SAFETY: ApiTableVersion.minor_id (u32 at offset 4) holds sizeof(table).
        Header::Version => unsafe { base.add(4).cast::<u32>().read_unaligned() as usize },
        // SAFETY: the table starts with a size_t.
        Header::Size => unsafe { base.cast::<u64>().read_unaligned() as usize },
    }
}

/// `CoreApiTable`.
pub const CORE: ApiTable = ApiTable {
    c_name: "CoreApiTable",
    domain: ApiDomain::HsaCore,
    names: &HSA_CORE,
    header: Header::Version,
};
/// `AmdExtTable`.
pub const AMD_EXT: ApiTable = ApiTable {
    c_name: "AmdExtTable",
    domain: ApiDomain::HsaAmdExt,
    names: &HSA_AMD_EXT,
    header: Header::Version,
};
/// `ImageExtTable`.
pub const IMAGE_EXT: ApiTable = ApiTable {
    c_name: "ImageExtTable",
    domain: ApiDomain::HsaImage,
    names: &HSA_IMAGE_EXT,
    header: Header::Version,
};
/// `FinalizerExtTable`.
pub const FINALIZER_EXT: ApiTable = ApiTable {
    c_name: "FinalizerExtTable",
    domain: ApiDomain::HsaFinalize,
    names: &HSA_FINALIZER_EXT,
    header: Header::Version,
};
/// `ToolsApiTable`: the runtime's tool events (scratch), which the runtime calls, not the
/// application. Never wrapped for API tracing; the domain only satisfies [`ApiTable`] (the
/// events are `hsa_amd_tool_*` functions).
pub const TOOLS: ApiTable = ApiTable {
    c_name: "ToolsApiTable",
    domain: ApiDomain::HsaAmdExt,
    names: &HSA_TOOLS,
    header: Header::Version,
};
/// `HipDispatchTable`.
pub const HIP: ApiTable = ApiTable {
    c_name: "HipDispatchTable",
    domain: ApiDomain::HipRuntime,
    names: &HIP_RUNTIME,
    header: Header::Size,
};
/// `HipCompilerDispatchTable`.
pub const HIP_COMPILER_TABLE: ApiTable = ApiTable {
    c_name: "HipCompilerDispatchTable",
    domain: ApiDomain::HipCompiler,
    names: &HIP_COMPILER,
    header: Header::Size,
};
/// `roctxCoreApiTable_t`.
pub const ROCTX_CORE_TABLE: ApiTable = ApiTable {
    c_name: "roctxCoreApiTable_t",
    domain: ApiDomain::MarkerCore,
    names: &ROCTX_CORE,
    header: Header::Size,
};
/// `roctxControlApiTable_t`.
pub const ROCTX_CONTROL_TABLE: ApiTable = ApiTable {
    c_name: "roctxControlApiTable_t",
    domain: ApiDomain::MarkerControl,
    names: &ROCTX_CONTROL,
    header: Header::Size,
};
/// `roctxNameApiTable_t`.
pub const ROCTX_NAME_TABLE: ApiTable = ApiTable {
    c_name: "roctxNameApiTable_t",
    domain: ApiDomain::MarkerName,
    names: &ROCTX_NAME,
    header: Header::Size,
};

/// The C layouts of every table (for `cargo xtask abi-dump`).
pub fn layouts() -> Vec<LayoutInfo> {
    let info = |t: &ApiTable, fields: &'static [Field]| LayoutInfo {
        c_name: t.c_name,
        rust_name: t.c_name,
        size: t.size(),
        fields,
    };
    vec![
        info(&CORE, &HSA_CORE_FIELDS),
        info(&AMD_EXT, &HSA_AMD_EXT_FIELDS),
        info(&IMAGE_EXT, &HSA_IMAGE_EXT_FIELDS),
        info(&FINALIZER_EXT, &HSA_FINALIZER_EXT_FIELDS),
        info(&TOOLS, &HSA_TOOLS_FIELDS),
        info(&HIP, &HIP_RUNTIME_FIELDS),
        info(&HIP_COMPILER_TABLE, &HIP_COMPILER_FIELDS),
        info(&ROCTX_CORE_TABLE, &ROCTX_CORE_FIELDS),
        info(&ROCTX_CONTROL_TABLE, &ROCTX_CONTROL_FIELDS),
        info(&ROCTX_NAME_TABLE, &ROCTX_NAME_FIELDS),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_known_offsets() {
        assert_eq!(HSA_CORE.len(), 125);
        assert_eq!(CORE.size(), 1016);
        assert_eq!(HSA_AMD_EXT.len(), 74);
        assert_eq!(AMD_EXT.size(), 608);
        assert_eq!(AMD_EXT.operation("hsa_amd_memory_async_copy"), Some(15));
        assert_eq!(
            AMD_EXT.operation("hsa_amd_queue_intercept_create"),
            Some(37)
        );
        assert_eq!(CORE.operation("hsa_init"), Some(0));
        assert_eq!(CORE.operation("hsa_signal_load_relaxed"), Some(39));
        assert_eq!(
            HIP.operation("hipMemcpy").map(|k| HIP.offset(k.into())),
            Some(2080)
        );
        assert_eq!(
            HIP.operation("hipLaunchKernel")
                .map(|k| HIP.offset(k.into())),
            Some(1720)
        );
        assert_eq!(HIP.operation("hipGetDevicePropertiesR0600"), Some(105));
        assert_eq!(HIP_COMPILER_TABLE.size(), 80);
        assert_eq!(TOOLS.size(), 64);
        assert_eq!(
            TOOLS.operation("hsa_amd_tool_scratch_event_alloc_start"),
            Some(0)
        );
        assert_eq!(
            TOOLS.operation("hsa_amd_tool_scratch_event_async_reclaim_end"),
            Some(5)
        );
        assert_eq!(AMD_EXT.operation("hsa_amd_memory_pool_allocate"), Some(13));
        assert_eq!(AMD_EXT.operation("hsa_amd_memory_pool_free"), Some(14));
        assert_eq!(AMD_EXT.operation("hsa_amd_vmem_handle_create"), Some(57));
        assert_eq!(CORE.operation("hsa_memory_allocate"), Some(33));
        assert_eq!(CORE.operation("hsa_memory_free"), Some(34));
        assert_eq!(ROCTX_CORE_TABLE.size(), 56);
    }

    #[test]
    fn layouts_spell_members_as_c_does() {
        let l = layouts();
        let core = &l[0];
        assert_eq!(core.fields[0].name, "version");
        assert_eq!(core.fields[1].name, "hsa_init_fn");
        assert_eq!(core.fields[125].offset, 1008);
        let compiler = l
            .iter()
            .find(|l| l.c_name == "HipCompilerDispatchTable")
            .unwrap();
        assert_eq!(compiler.fields[9].name, "__hipUnregisterFatBinary_fn");
        assert_eq!(compiler.fields[9].offset, 72);
    }
}
