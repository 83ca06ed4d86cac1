//! The API tables the runtimes hand to tools: layouts, operation ids and names.
//!
//! HSA tables start with an `ApiTableVersion` (16 bytes, `minor_id` = the table's `sizeof`), then
//! one function pointer per entry (entry k at 16 + 8k). HIP and ROCTx tables start with a
//! `size_t size`, entry k at 8 + 8k. Operation id = entry index.

use c_layout::{Field, LayoutInfo};
use trace_records::ApiDomain;

include!(concat!(env!("OUT_DIR"), "/tables.rs"));

/// Entry names of `HipCompilerDispatchTable`.
pub const HIP_COMPILER: [&str; 9] = [
    "__hipPopCallConfiguration",
    "__hipPushCallConfiguration",
    "__hipRegisterFatBinary",
    "__hipRegisterFunction",
    "__hipRegisterManagedVar",
    "__hipRegisterSurface",
    "__hipRegisterTexture",
    "__hipRegisterVar",
    "__hipUnregisterFatBinary",
];

/// Entry names of the ROCTx core table.
pub const ROCTX_CORE: [&str; 6] = [
    "roctxMarkA",
    "roctxRangePushA",
    "roctxRangePop",
    "roctxRangeStartA",
    "roctxRangeStop",
    "roctxGetThreadId",
];
/// Entry names of the ROCTx control table.
pub const ROCTX_CONTROL: [&str; 2] = ["roctxProfilerPause", "roctxProfilerResume"];
/// Entry names of the ROCTx name table.
pub const ROCTX_NAME: [&str; 4] = [
    "roctxNameOsThread",
    "roctxNameHsaAgent",
    "roctxNameHipDevice",
    "roctxNameHipStream",
];

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

/// Every table this crate knows.
pub const ALL: [ApiTable; 9] = [
    CORE,
    AMD_EXT,
    IMAGE_EXT,
    FINALIZER_EXT,
    HIP,
    HIP_COMPILER_TABLE,
    ROCTX_CORE_TABLE,
    ROCTX_CONTROL_TABLE,
    ROCTX_NAME_TABLE,
];

/// The table of `domain`.
pub fn by_domain(domain: ApiDomain) -> &'static ApiTable {
    ALL.iter()
        .find(|t| t.domain == domain)
        .expect("every domain has a table")
}

macro_rules! small_fields {
    ($name:ident, $names:expr, $n:expr) => {
        static $name: [Field; $n + 1] = {
            let mut f = [Field {
                name: "size",
                offset: 0,
                size: 8,
            }; $n + 1];
            let mut k = 0;
            while k < $n {
                f[k + 1] = Field {
                    name: $names[k],
                    offset: 8 + 8 * k,
                    size: 8,
                };
                k += 1;
            }
            f
        };
    };
}
small_fields!(HIP_COMPILER_FIELDS, HIP_COMPILER_MEMBERS, 9);
small_fields!(ROCTX_CORE_FIELDS, ROCTX_CORE_MEMBERS, 6);
small_fields!(ROCTX_CONTROL_FIELDS, ROCTX_CONTROL_MEMBERS, 2);
small_fields!(ROCTX_NAME_FIELDS, ROCTX_NAME_MEMBERS, 4);

/// Member names (`<entry>_fn`) of the small hand-declared tables.
const HIP_COMPILER_MEMBERS: [&str; 9] = [
    "__hipPopCallConfiguration_fn",
    "__hipPushCallConfiguration_fn",
    "__hipRegisterFatBinary_fn",
    "__hipRegisterFunction_fn",
    "__hipRegisterManagedVar_fn",
    "__hipRegisterSurface_fn",
    "__hipRegisterTexture_fn",
    "__hipRegisterVar_fn",
    "__hipUnregisterFatBinary_fn",
];
const ROCTX_CORE_MEMBERS: [&str; 6] = [
    "roctxMarkA_fn",
    "roctxRangePushA_fn",
    "roctxRangePop_fn",
    "roctxRangeStartA_fn",
    "roctxRangeStop_fn",
    "roctxGetThreadId_fn",
];
const ROCTX_CONTROL_MEMBERS: [&str; 2] = ["roctxProfilerPause_fn", "roctxProfilerResume_fn"];
const ROCTX_NAME_MEMBERS: [&str; 4] = [
    "roctxNameOsThread_fn",
    "roctxNameHsaAgent_fn",
    "roctxNameHipDevice_fn",
    "roctxNameHipStream_fn",
];

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
