//! Raw FFI to `librocdxg.so`, the DXG thunk through which the HSA runtime reaches an AMD GPU
//! under WSL2 (`/dev/dxg`).
//!
//! - [`HSAKMT_STATUS`]: the status newtype.
//! - [`types`]: `HsaSystemProperties`, `HsaStructureSizes` and every known `HsaNodeProperties`
//!   layout (368, 376, 392, 396 bytes), layout-checked at compile time.
//! - [`ThunkFns`]: the entry points used for the topology read, resolved all-or-nothing through
//!   a symbol-lookup closure; [`Rocdxg`] loads them from the shared object.
//!
//! Nothing here interprets the data; `wsl-topology` does.

#![allow(non_snake_case, non_camel_case_types)]

mod load;
mod status;
pub mod types;

pub use load::{Error, LIBRARY_NAME, LoadedFrom, Rocdxg, SYMBOLS, ThunkFns};
pub use status::HSAKMT_STATUS;
pub use types::*;

use core::ffi::c_void;

/// `HSAKMT_STATUS hsaKmtOpenKFD(void)`. On librocdxg the open is reference-counted:
/// `KERNEL_ALREADY_OPENED` (22) means success and still needs a matching close.
pub type PFN_hsaKmtOpenKFD = unsafe extern "C" fn() -> HSAKMT_STATUS;
/// `HSAKMT_STATUS hsaKmtCloseKFD(void)`.
pub type PFN_hsaKmtCloseKFD = unsafe extern "C" fn() -> HSAKMT_STATUS;
/// `HSAKMT_STATUS hsaKmtAcquireSystemProperties(HsaSystemProperties*)`.
pub type PFN_hsaKmtAcquireSystemProperties =
    unsafe extern "C" fn(*mut HsaSystemProperties) -> HSAKMT_STATUS;
/// `HSAKMT_STATUS hsaKmtReleaseSystemProperties(void)`.
pub type PFN_hsaKmtReleaseSystemProperties = unsafe extern "C" fn() -> HSAKMT_STATUS;
/// `HSAKMT_STATUS hsaKmtGetNodeProperties(HSAuint32 NodeId, HsaNodeProperties*)`.
///
/// The callee writes `sizeof(HsaNodeProperties)` *as the thunk was built*; there is no size
/// argument, hence the untyped destination.
pub type PFN_hsaKmtGetNodeProperties = unsafe extern "C" fn(u32, *mut c_void) -> HSAKMT_STATUS;
/// `HSAKMT_STATUS DxgAbiCheck(HsaStructureSizes*)`: optional structure-size handshake.
pub type PFN_DxgAbiCheck = unsafe extern "C" fn(*mut HsaStructureSizes) -> HSAKMT_STATUS;
/// `HSAKMT_STATUS hsaKmtGetNodeWallclockFrequency(HSAuint32 NodeId, HSAuint64* Hz)`: optional.
pub type PFN_hsaKmtGetNodeWallclockFrequency = unsafe extern "C" fn(u32, *mut u64) -> HSAKMT_STATUS;

/// Every `#[repr(C)]` layout this crate defines, for `cargo xtask abi-dump`.
pub fn layouts() -> Vec<c_layout::LayoutInfo> {
    use c_layout::LayoutInfo;
    vec![
        LayoutInfo::of::<HsaSystemProperties>("HsaSystemProperties"),
        LayoutInfo::of::<HsaStructureSizes>("HsaStructureSizes"),
        LayoutInfo::of::<HsaNodeProperties368>("HsaNodeProperties368"),
        LayoutInfo::of::<HsaNodeProperties376>("HsaNodeProperties376"),
        LayoutInfo::of::<HsaNodeProperties392>("HsaNodeProperties392"),
        LayoutInfo::of::<HsaNodeProperties396>("HsaNodeProperties396"),
    ]
}
