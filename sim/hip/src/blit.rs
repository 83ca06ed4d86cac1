//! ROCclr's built-in blit kernels: one code object built at device initialisation with
//! `wslsim-codeobj`, loaded like any program. `__amd_rocclr_copyBuffer` carries same-device
//! device-to-device copies, `__amd_rocclr_fillBufferAligned` carries `hipMemset`; both have
//! real CPU implementations. The other kernels of ROCclr's blit program are loaded (ROCclr
//! creates every blit kernel when the device starts) but this runtime never dispatches them;
//! their CPU implementation only reports that on stderr.

use std::ffi::c_void;

use wslsim_codeobj::KernelBuilder;

use crate::fatbin::{FatBinary, FatKernel};

/// `wslsim_launch_t` (28 bytes, `docs/SIMULATOR.md`): the second argument of a kernel's CPU
/// implementation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WslsimLaunch {
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub workgroup: [u16; 3],
    /// Reserved.
    pub reserved: u16,
    /// Group segment bytes.
    pub group_segment_size: u32,
    /// Private segment bytes per work-item.
    pub private_segment_size: u32,
}

const _: () = {
    assert!(size_of::<WslsimLaunch>() == 28);
    assert!(std::mem::offset_of!(WslsimLaunch, workgroup) == 12);
    assert!(std::mem::offset_of!(WslsimLaunch, group_segment_size) == 20);
};

/// The copy kernel's name.
pub const COPY_BUFFER: &str = "__amd_rocclr_copyBuffer";
/// The fill kernel's name.
pub const FILL_BUFFER: &str = "__amd_rocclr_fillBufferAligned";
/// Work-items per blit workgroup.
pub const BLIT_WORKGROUP: u32 = 512;
/// Most workgroups a blit launches (ROCclr's `limit_blit_wg_`).
pub const BLIT_MAX_WORKGROUPS: u32 = 16;
/// Bytes a blit work-item moves per step.
pub const BLIT_CHUNK: u64 = 16;

/// Kernargs of `__amd_rocclr_copyBuffer` (the simulator's own layout).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CopyArgs {
    /// Source address.
    pub src: u64,
    /// Destination address.
    pub dst: u64,
    /// Bytes to copy.
    pub size: u64,
}

/// Kernargs of `__amd_rocclr_fillBufferAligned` (the simulator's own layout).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FillArgs {
    /// Destination address.
    pub dst: u64,
    /// Bytes to fill.
    pub size: u64,
    /// The byte value (low 8 bits).
    pub value: u32,
    /// Padding.
    pub reserved: u32,
}

/// The blit program's kernels, in ROCclr's order (`rocblit.hpp`).
const BLIT_KERNELS: [&str; 17] = [
    "__amd_rocclr_copyImage",
    "__amd_rocclr_copyImage1DA",
    "__amd_rocclr_copyImageToBuffer",
    "__amd_rocclr_copyBufferToImage",
    "__amd_rocclr_copyBufferRect",
    "__amd_rocclr_copyBufferRectAligned",
    COPY_BUFFER,
    "__amd_rocclr_copyBufferAligned",
    FILL_BUFFER,
    "__amd_rocclr_fillBufferAligned2D",
    "__amd_rocclr_fillImage",
    "__amd_rocclr_streamOpsWrite",
    "__amd_rocclr_streamOpsWait",
    "__amd_rocclr_scheduler",
    "__amd_rocclr_gwsInit",
    "__amd_rocclr_initHeap",
    "__amd_rocclr_batchMemOp",
];

/// Names of every kernel in the blit program.
pub fn kernel_names() -> &'static [&'static str] {
    &BLIT_KERNELS
}

type KernelImpl = unsafe extern "C" fn(*const c_void, *const WslsimLaunch);

/// The blit program: its code object (CPU implementations are this library's functions) and
/// its kernels, none with an argument layout.
pub fn program() -> FatBinary {
    let mut kernels = Vec::new();
    for name in BLIT_KERNELS {
        let (imp, kernarg): (KernelImpl, u32) = match name {
            COPY_BUFFER | "__amd_rocclr_copyBufferAligned" => {
                (copy_buffer_impl, size_of::<CopyArgs>() as u32)
            }
            FILL_BUFFER => (fill_buffer_impl, size_of::<FillArgs>() as u32),
            _ => (not_simulated_impl, 64),
        };
        let kernel = KernelBuilder::new(name)
            .impl_address(imp as usize as u64)
            .kernarg(kernarg, 8)
            .vgprs(16)
            .sgprs(32)
            .wave32(true)
            .costs(12, 6, 0)
            .build();
        // Names are fixed literals well inside the 128-byte field.
        if let Ok(kernel) = kernel {
            kernels.push(kernel);
        }
    }
    FatBinary {
        code_object: wslsim_codeobj::encode(&kernels),
        kernels: kernels
            .into_iter()
            .map(|kernel| FatKernel {
                kernel,
                args: Vec::new(),
            })
            .collect(),
    }
}

fn flat_grid(launch: &WslsimLaunch) -> u64 {
    u64::from(launch.grid[0].max(1))
        * u64::from(launch.grid[1].max(1))
        * u64::from(launch.grid[2].max(1))
}

/// Calls `f(offset, len)` for every [`BLIT_CHUNK`]-byte chunk of a `size`-byte blit, in the
/// order the work-items take them: work-item `i` of `n` takes chunks `i, i+n, ...`.
fn for_each_chunk(launch: &WslsimLaunch, size: u64, mut f: impl FnMut(u64, usize)) {
    let items = flat_grid(launch);
    let chunks = size.div_ceil(BLIT_CHUNK);
    for item in 0..items {
        let mut chunk = item;
        while chunk < chunks {
            let offset = chunk * BLIT_CHUNK;
            f(offset, BLIT_CHUNK.min(size - offset) as usize);
            chunk += items;
        }
    }
}

/// `__amd_rocclr_copyBuffer`: work-item `i` of `n` copies the 16-byte chunks `i, i+n, ...`.
///
/// # Safety
///
/// `kernarg` points to a [`CopyArgs`] whose ranges are valid and do not overlap; `launch` is
/// valid.
pub unsafe extern "C" fn copy_buffer_impl(kernarg: *const c_void, launch: *const WslsimLaunch) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the dispatch passes its kernarg segment and launch description.
        let (args, launch) = unsafe { (kernarg.cast::<CopyArgs>().read_unaligned(), *launch) };
        for_each_chunk(&launch, args.size, |offset, len| {
            // SAFETY: both ranges lie inside the buffers named by the kernargs.
            unsafe {
                std::ptr::copy(
                    (args.src + offset) as *const u8,
                    (args.dst + offset) as *mut u8,
                    len,
                );
            }
        });
    });
}

/// `__amd_rocclr_fillBufferAligned`: work-item `i` of `n` fills the 16-byte chunks `i, i+n, ...`.
///
/// # Safety
///
/// `kernarg` points to a [`FillArgs`] whose range is valid; `launch` is valid.
pub unsafe extern "C" fn fill_buffer_impl(kernarg: *const c_void, launch: *const WslsimLaunch) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the dispatch passes its kernarg segment and launch description.
        let (args, launch) = unsafe { (kernarg.cast::<FillArgs>().read_unaligned(), *launch) };
        for_each_chunk(&launch, args.size, |offset, len| {
            // SAFETY: the range lies inside the buffer named by the kernargs.
            unsafe { std::ptr::write_bytes((args.dst + offset) as *mut u8, args.value as u8, len) };
        });
    });
}

/// The CPU implementation of blit kernels this runtime never dispatches.
///
/// # Safety
///
/// None: it reads nothing.
pub unsafe extern "C" fn not_simulated_impl(_kernarg: *const c_void, _launch: *const WslsimLaunch) {
    let _ = std::panic::catch_unwind(|| {
        eprintln!("libamdhip64 (sim): a blit kernel without a CPU implementation was dispatched");
    });
}

/// Workgroup count and grid (work-items) of a blit over `bytes`: one 16-byte chunk per
/// work-item, at most [`BLIT_MAX_WORKGROUPS`] workgroups of [`BLIT_WORKGROUP`].
pub fn blit_grid(bytes: u64) -> (u32, u32) {
    let chunks = bytes.div_ceil(BLIT_CHUNK).max(1);
    let groups = chunks
        .div_ceil(u64::from(BLIT_WORKGROUP))
        .clamp(1, u64::from(BLIT_MAX_WORKGROUPS)) as u32;
    (groups, groups * BLIT_WORKGROUP)
}
