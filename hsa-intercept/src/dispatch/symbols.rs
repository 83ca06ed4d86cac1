//! Kernel symbols, recorded at `hsa_executable_freeze` (after the executable's code objects,
//! [`crate::code_objects`], which each symbol names), and kernel-descriptor decoding.
//!
//! Kernel descriptors (for register counts) are read through the AMD loader extension's
//! `hsa_ven_amd_loader_query_host_address`, never through the kernel object itself, which on a
//! discrete GPU is a device address the host may not be able to read.

use crate::hsa::*;
use crate::sink;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use trace_records::KernelSymbolRecord;
use trace_records::docs::WarningKind;

static NEXT_KERNEL: AtomicU64 = AtomicU64::new(1);
/// A kernel's id and symbol name.
type KernelEntry = (u64, Arc<str>);
/// Kernel id and name by kernel object (looked up at every dispatch, so not with SipHash).
static KERNELS: OnceLock<RwLock<KernelMap>> = OnceLock::new();
type KernelMap = HashMap<u64, KernelEntry, BuildHasherDefault<ObjectHasher>>;

/// The hash of a kernel object, an address the application cannot choose: one folded 128-bit
/// multiply (both halves, so the low bits an aligned address lacks still vary), about a tenth
/// of SipHash's instructions on the dispatch path. Only `u64` keys are hashed through it.
#[derive(Default)]
struct ObjectHasher(u64);

impl std::hash::Hasher for ObjectHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let product = u128::from(self.0 ^ x) * 0x9E37_79B9_7F4A_7C15;
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// The kernel id (0 if unknown) of a kernel object and, when `named`, its symbol name (only an
/// instrument needs it, so plain tracing does not pay for the name's reference count).
pub(super) fn kernel(kernel_object: u64, named: bool) -> (u64, Option<Arc<str>>) {
    KERNELS
        .get()
        .and_then(|k| {
            let k = k.read().ok()?;
            let (id, name) = k.get(&kernel_object)?;
            Some((*id, named.then(|| Arc::clone(name))))
        })
        .unwrap_or((0, None))
}

/// The AMD loader extension, fetched at the first `hsa_executable_freeze` (the runtime is
/// initialised by then), or why there is none.
static LOADER: OnceLock<Result<Loader, String>> = OnceLock::new();

pub(super) unsafe extern "C" fn executable_freeze(
    executable: u64,
    options: *const c_char,
) -> Status {
    let Some(f) = fns() else { return ERROR };
    // SAFETY: forwarded.
    let status = unsafe { (f.executable_freeze)(executable, options) };
    if status == SUCCESS {
        let _ = std::panic::catch_unwind(|| {
            // Fetched before iterating, so no runtime lock of the iteration is held meanwhile.
            LOADER.get_or_init(|| Loader::fetch(f));
            if let Some(Ok(loader)) = LOADER.get() {
                crate::code_objects::executable_frozen(loader, executable);
            }
            // SAFETY: iterates the frozen executable's symbols with our callback.
            unsafe { (f.executable_iterate_symbols)(executable, on_symbol, std::ptr::null_mut()) };
            if let Some(Ok(loader)) = LOADER.get() {
                crate::thread_trace::executable_frozen(loader, executable);
            }
        });
    }
    status
}

unsafe extern "C" fn on_symbol(executable: u64, symbol: u64, _data: *mut c_void) -> Status {
    let Some(f) = fns() else { return SUCCESS };
    let get_u32 = |attr: u32| {
        let mut v = 0u32;
        // SAFETY: a u32-sized attribute of a live symbol.
        unsafe { (f.symbol_get_info)(symbol, attr, (&raw mut v).cast()) };
        v
    };
    if get_u32(SYMBOL_INFO_TYPE) != 1 {
        return SUCCESS;
    }
    let len = get_u32(SYMBOL_INFO_NAME_LENGTH) as usize;
    let mut name = vec![0u8; len + 1];
    let mut object = 0u64;
    // SAFETY: NAME writes `len` bytes; KERNEL_OBJECT a u64.
    unsafe {
        (f.symbol_get_info)(symbol, SYMBOL_INFO_NAME, name.as_mut_ptr().cast());
        (f.symbol_get_info)(symbol, SYMBOL_INFO_KERNEL_OBJECT, (&raw mut object).cast());
    }
    let name = CStr::from_bytes_until_nul(&name)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".kd").unwrap_or(&name);
    let (vgpr, sgpr) = registers(object);
    let kernel_id = NEXT_KERNEL.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut k) = KERNELS
        .get_or_init(|| RwLock::new(KernelMap::default()))
        .write()
    {
        k.insert(object, (kernel_id, Arc::from(name)));
    }
    sink::emit(&KernelSymbolRecord {
        kernel_id,
        kernel_object: object,
        name: sink::intern(name),
        arch_vgpr_count: vgpr,
        accum_vgpr_count: 0,
        sgpr_count: sgpr,
        group_segment_size: get_u32(SYMBOL_INFO_GROUP_SEGMENT_SIZE),
        private_segment_size: get_u32(SYMBOL_INFO_PRIVATE_SEGMENT_SIZE),
        kernarg_segment_size: get_u32(SYMBOL_INFO_KERNARG_SEGMENT_SIZE),
        code_object_id: crate::code_objects::code_object_of(executable, object),
    });
    SUCCESS
}

/// VGPRs and SGPRs from the 64-byte kernel descriptor of the kernel object `object`: arch VGPRs
/// = (rsrc1[5:0] + 1) × (8 for wave32, else 4); gfx10+ reports 128 SGPRs. The descriptor is read
/// from the host copy the AMD loader reports, never through `object` itself (a device address
/// the host may not be able to read); without one the counts are 0, with a warning (once).
fn registers(object: u64) -> (u32, u32) {
    if object == 0 || !object.is_multiple_of(64) {
        return (0, 0);
    }
    let host = match LOADER.get() {
        // SAFETY: the runtime's own query, asked about a kernel object of a frozen executable.
        Some(Ok(loader)) => unsafe { loader.host_address(object) }.ok_or_else(|| {
            format!("the AMD loader extension does not know the kernel object {object:#x}")
        }),
        Some(Err(why)) => Err(why.clone()),
        None => Err("the AMD loader extension was not fetched".to_owned()),
    };
    let descriptor = match host {
        Ok(d) => d,
        Err(why) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                sink::warn(
                    WarningKind::Internal,
                    format!(
                        "kernel register counts are not recorded ({why}); the kernel trace shows \
                         0 VGPRs and SGPRs for those kernels"
                    ),
                );
            }
            return (0, 0);
        }
    };
    // SAFETY: the loader's host copy of the kernel's 64-byte descriptor, alive while its
    // executable is loaded (it was just frozen).
    let (rsrc1, properties) = unsafe {
        (
            descriptor.add(48).cast::<u32>().read_unaligned(),
            descriptor.add(56).cast::<u16>().read_unaligned(),
        )
    };
    registers_from(rsrc1, properties)
}

/// The register counts from the raw descriptor fields.
pub fn registers_from(rsrc1: u32, code_properties: u16) -> (u32, u32) {
    let wave32 = code_properties & (1 << 10) != 0;
    (((rsrc1 & 0x3f) + 1) * if wave32 { 8 } else { 4 }, 128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn vgprs_follow_the_granule_and_wave_size() {
        assert_eq!(registers_from(0, 1 << 10), (8, 128));
        assert_eq!(registers_from(3, 1 << 10), (32, 128));
        assert_eq!(registers_from(3, 0), (16, 128));
    }

    fn hash(x: u64) -> u64 {
        let mut h = ObjectHasher::default();
        h.write_u64(x);
        h.finish()
    }

    #[test]
    fn aligned_kernel_objects_spread_over_the_low_and_high_bits() {
        // Kernel objects are 64-byte aligned: a hash that kept their low zero bits would put
        // them all in a few of the table's buckets (low bits) or control groups (high bits).
        let objects: Vec<u64> = (0..4096u64).map(|k| 0x7f00_0000_0000 + 64 * k).collect();
        let low: std::collections::HashSet<u64> =
            objects.iter().map(|&o| hash(o) & 0xfff).collect();
        let high: std::collections::HashSet<u64> = objects.iter().map(|&o| hash(o) >> 57).collect();
        assert!(
            low.len() > 2000,
            "{} distinct low 12 bits of 4096",
            low.len()
        );
        assert_eq!(high.len(), 128, "every top-7-bit value appears");
        assert_ne!(hash(64), hash(128));
    }
}
