//! The workloads' kernels: Rust CPU implementations with the simulator's signature
//! `void impl(const void* kernarg, const wslsim_launch_t* launch)`, their host stubs (what
//! hipcc generates for `__global__` functions: `__hipPopCallConfiguration` + `hipLaunchKernel`)
//! and the call-site half of `kernel<<<grid, block>>>(...)` ([`launch`]).

use std::ffi::c_void;

use crate::loader::hip;

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl Dim3 {
    /// `dim3(x)`.
    pub const fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}

/// The prefix of `wslsim_launch_t` the kernels read: grid (work-items) and workgroup size.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LaunchPrefix {
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub workgroup: [u16; 3],
}

/// A CPU implementation.
pub type KernelImpl = unsafe extern "C" fn(*const c_void, *const LaunchPrefix);

/// One `__global__` function of a workload.
pub struct KernelDef {
    /// Mangled name.
    pub name: &'static str,
    /// The CPU implementation.
    pub implementation: KernelImpl,
    /// The host stub (the address `hipLaunchKernel` receives).
    pub host_stub: *const c_void,
    /// Explicit arguments as `(offset, size)` in the kernarg segment.
    pub args: &'static [(u32, u32)],
    /// Kernarg segment size.
    pub kernarg_size: u32,
    /// VGPRs per work-item, SGPRs per wave.
    pub vgprs: u32,
    pub sgprs: u32,
    /// Cost model per wave.
    pub valu_per_wave: u32,
    pub salu_per_wave: u32,
    /// Private segment (scratch) bytes per work-item (`private_segment_fixed_size`).
    pub private_segment_size: u32,
}

// SAFETY: the raw pointer is a function address (immutable code).
unsafe impl Sync for KernelDef {}

/// `kernel<<<grid, block>>>(...)` as hipcc compiles it at the call site:
/// `__hipPushCallConfiguration`, then a call of the host stub.
pub fn launch(grid: Dim3, block: Dim3, stub: impl FnOnce()) {
    // SAFETY: by-value dim3s, no dynamic LDS, the null stream.
    let status = unsafe { (hip().push_call_configuration)(grid, block, 0, std::ptr::null_mut()) };
    crate::loader::check("__hipPushCallConfiguration", status);
    stub();
}

/// The device-stub half: pops the configuration and launches `stub` with `args` (pointers to
/// each argument). Like hipcc's stubs it returns nothing: errors surface through
/// `hipGetLastError`.
fn launch_from_stub(stub: *const c_void, args: &mut [*mut c_void]) {
    let hip = hip();
    let (mut grid, mut block, mut shmem, mut stream) =
        (Dim3::x(1), Dim3::x(1), 0usize, std::ptr::null_mut());
    // SAFETY: valid out-pointers.
    if unsafe { (hip.pop_call_configuration)(&mut grid, &mut block, &mut shmem, &mut stream) } != 0
    {
        return;
    }
    // SAFETY: `args` holds one pointer per kernel parameter, alive for the call.
    unsafe { (hip.launch_kernel)(stub, grid, block, args.as_mut_ptr(), shmem, stream) };
}

/// Defines a host stub: `pub extern "C" fn $name(args)` that hands [`launch_from_stub`] its
/// own address and a pointer to each argument, as hipcc's generated stubs do.
macro_rules! host_stub {
    ($(#[$meta:meta])* $name:ident($($arg:ident: $ty:ty),* $(,)?);) => {
        $(#[$meta])*
        #[inline(never)]
        pub extern "C" fn $name($(mut $arg: $ty),*) {
            launch_from_stub($name as *const c_void, &mut [$((&raw mut $arg).cast()),*]);
        }
    };
}

fn grid_items(launch: *const LaunchPrefix) -> u64 {
    // SAFETY: the dispatch passes a valid launch description.
    let l = unsafe { *launch };
    u64::from(l.grid[0]) * u64::from(l.grid[1].max(1)) * u64::from(l.grid[2].max(1))
}

/// Kernargs of `axpb`.
#[repr(C)]
#[derive(Clone, Copy)]
struct AxpbArgs {
    x: *const f32,
    y: *mut f32,
    n: u64,
}

/// `__global__ void axpb(const float* x, float* y, size_t n)`: `y[i] = 2 * x[i] + 1`.
///
/// # Safety
///
/// `kernarg` holds [`AxpbArgs`] with buffers of `n` floats.
pub unsafe extern "C" fn axpb_impl(kernarg: *const c_void, launch: *const LaunchPrefix) {
    // SAFETY: the kernarg segment HIP packed for this kernel.
    let a = unsafe { kernarg.cast::<AxpbArgs>().read_unaligned() };
    for i in 0..grid_items(launch).min(a.n) as usize {
        // SAFETY: i < n, inside both buffers.
        unsafe { *a.y.add(i) = 2.0 * *a.x.add(i) + 1.0 };
    }
}

host_stub! {
    /// The host stub of `axpb`.
    axpb(x: *const f32, y: *mut f32, n: u64);
}

/// `axpb`'s registration record.
pub static AXPB: KernelDef = KernelDef {
    name: "_Z4axpbPKfPfm",
    implementation: axpb_impl,
    host_stub: axpb as *const c_void,
    args: &[(0, 8), (8, 8), (16, 8)],
    kernarg_size: 24,
    vgprs: 8,
    sgprs: 16,
    valu_per_wave: 6,
    salu_per_wave: 4,
    private_segment_size: 0,
};

/// Kernargs of `vector_add`.
#[repr(C)]
#[derive(Clone, Copy)]
struct VectorAddArgs {
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    n: u64,
}

/// `__global__ void vector_add(const float* a, const float* b, float* c, size_t n)`.
///
/// # Safety
///
/// `kernarg` holds [`VectorAddArgs`] with buffers of `n` floats.
pub unsafe extern "C" fn vector_add_impl(kernarg: *const c_void, launch: *const LaunchPrefix) {
    // SAFETY: the kernarg segment HIP packed for this kernel.
    let a = unsafe { kernarg.cast::<VectorAddArgs>().read_unaligned() };
    for i in 0..grid_items(launch).min(a.n) as usize {
        // SAFETY: i < n, inside all three buffers.
        unsafe { *a.c.add(i) = *a.a.add(i) + *a.b.add(i) };
    }
}

host_stub! {
    /// The host stub of `vector_add`.
    vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u64);
}

/// `vector_add`'s registration record.
pub static VECTOR_ADD: KernelDef = KernelDef {
    name: "_Z10vector_addPKfS0_Pfm",
    implementation: vector_add_impl,
    host_stub: vector_add as *const c_void,
    args: &[(0, 8), (8, 8), (16, 8), (24, 8)],
    kernarg_size: 32,
    vgprs: 12,
    sgprs: 16,
    valu_per_wave: 5,
    salu_per_wave: 4,
    private_segment_size: 0,
};

/// Kernargs of `scale` and `deep_scale`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ScaleArgs {
    x: *const f32,
    y: *mut f32,
    n: u64,
}

/// `y[i] = factor * x[i]`.
///
/// # Safety
///
/// `kernarg` holds [`ScaleArgs`] with buffers of `n` floats.
unsafe fn scale_by(kernarg: *const c_void, launch: *const LaunchPrefix, factor: f32) {
    // SAFETY: the kernarg segment HIP packed for this kernel.
    let a = unsafe { kernarg.cast::<ScaleArgs>().read_unaligned() };
    for i in 0..grid_items(launch).min(a.n) as usize {
        // SAFETY: i < n, inside both buffers.
        unsafe { *a.y.add(i) = factor * *a.x.add(i) };
    }
}

/// `__global__ void scale(const float* x, float* y, size_t n)`: `y[i] = 3 * x[i]`, with a
/// 256-byte private array per work-item (a stack-allocated table: scratch memory).
///
/// # Safety
///
/// As [`scale_by`].
pub unsafe extern "C" fn scale_impl(kernarg: *const c_void, launch: *const LaunchPrefix) {
    // SAFETY: forwarded.
    unsafe { scale_by(kernarg, launch, 3.0) }
}

/// `__global__ void deep_scale(const float* x, float* y, size_t n)`: `y[i] = 4 * x[i]`, with
/// a 1 KiB private array per work-item (more scratch than `scale`).
///
/// # Safety
///
/// As [`scale_by`].
pub unsafe extern "C" fn deep_scale_impl(kernarg: *const c_void, launch: *const LaunchPrefix) {
    // SAFETY: forwarded.
    unsafe { scale_by(kernarg, launch, 4.0) }
}

host_stub! {
    /// The host stub of `scale`.
    scale(x: *const f32, y: *mut f32, n: u64);
}

host_stub! {
    /// The host stub of `deep_scale`.
    deep_scale(x: *const f32, y: *mut f32, n: u64);
}

/// `scale`'s registration record (256 B of scratch per work-item).
pub static SCALE: KernelDef = KernelDef {
    name: "_Z5scalePKfPfm",
    implementation: scale_impl,
    host_stub: scale as *const c_void,
    args: &[(0, 8), (8, 8), (16, 8)],
    kernarg_size: 24,
    vgprs: 8,
    sgprs: 16,
    valu_per_wave: 6,
    salu_per_wave: 4,
    private_segment_size: 256,
};

/// `deep_scale`'s registration record (1 KiB of scratch per work-item).
pub static DEEP_SCALE: KernelDef = KernelDef {
    name: "_Z10deep_scalePKfPfm",
    implementation: deep_scale_impl,
    host_stub: deep_scale as *const c_void,
    args: &[(0, 8), (8, 8), (16, 8)],
    kernarg_size: 24,
    vgprs: 8,
    sgprs: 16,
    valu_per_wave: 6,
    salu_per_wave: 4,
    private_segment_size: 1024,
};

/// Three device buffers of 32 floats and one-workgroup `vector_add` launches on them: the
/// smallest real dispatch, for the workloads that count or lose dispatches rather than compute.
/// Registers [`VECTOR_ADD`] (once per process) and selects device 0.
pub struct TinyVectorAdd {
    buffers: [*mut c_void; 3],
}

impl TinyVectorAdd {
    const ITEMS: usize = 32;

    /// `program::register(&[&VECTOR_ADD])` unless already done here, `hipSetDevice(0)` and
    /// three `hipMalloc`s (exits on failure, as every workload call does).
    pub fn new() -> TinyVectorAdd {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        REGISTERED.call_once(|| crate::program::register(&[&VECTOR_ADD]));
        let hip = hip();
        // SAFETY: plain call.
        crate::loader::check("hipSetDevice", unsafe { (hip.set_device)(0) });
        let mut buffers = [std::ptr::null_mut(); 3];
        for p in &mut buffers {
            // SAFETY: valid out-pointer.
            crate::loader::check("hipMalloc", unsafe {
                (hip.malloc)(p, Self::ITEMS * size_of::<f32>())
            });
        }
        TinyVectorAdd { buffers }
    }

    /// One `vector_add<<<1, 32>>>` launch (not waited for).
    pub fn launch(&self) {
        let [a, b, c] = self.buffers;
        launch(Dim3::x(1), Dim3::x(Self::ITEMS as u32), || {
            vector_add(
                a.cast_const().cast(),
                b.cast_const().cast(),
                c.cast(),
                Self::ITEMS as u64,
            )
        });
    }

    /// Frees the buffers.
    pub fn free(self) {
        for p in self.buffers {
            // SAFETY: allocated in `new`.
            crate::loader::check("hipFree", unsafe { (hip().free)(p) });
        }
    }
}

impl Default for TinyVectorAdd {
    fn default() -> Self {
        Self::new()
    }
}
