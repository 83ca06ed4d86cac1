//! In-place wrapping of table entries through signature-agnostic trampolines.
//!
//! Each wrapped entry is replaced by a 16-byte stub that loads its slot number and jumps to one
//! common trampoline. The trampoline saves the argument registers (integer and vector), runs the
//! enter hook ([`Hooks::enter`], or the API tracer directly), which hands back the original
//! entry and a context for the exit, copies the caller's first 12 stack argument words, calls
//! the original with the arguments restored, saves the return registers, runs the exit hook
//! ([`Hooks::exit`], or the API tracer with that context), and returns the original's result.
//! It therefore forwards any System V x86-64 signature without knowing it: up to 6 integer and
//! 8 vector register arguments plus up to 96 bytes (12 words) of stack arguments, returns in
//! `rax:rdx` and `xmm0:xmm1`. No HSA, HIP or ROCTx entry point is variadic, and the largest
//! stack-argument area among them is 64 bytes (`hipExtModuleLaunchKernel`, 14 arguments);
//! `hipMemset3D` passes 56 bytes of structs by value.
//!
//! [`wrap_table`] wraps every enabled entry of a runtime's table this way, each tagged with its
//! domain and operation for the tracer ([`crate::tracer`], which knows nothing of wrapping).
//!
//! With [`capture_arguments`] on, HIP entries whose signature `api-signatures` knows get a stub
//! of a second set that jumps to a second trampoline: the same forwarding, but its frame keeps
//! the argument registers across the call and its exit receives their address, the caller's
//! stack arguments and `rax`, and records the words the entry's [`api_signatures::Shape`]
//! names. Entries wrapped without it keep the plain trampoline, unchanged.

use crate::tables::{ApiTable, runtime_size};
use crate::tracer::{self, tag};
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// How many entries can be wrapped in one process.
pub const MAX_SLOTS: usize = 4096;

/// What the trampolines call around every wrapped entry. Both run on the calling thread,
/// between the application and the runtime: they must be fast and must not unwind.
pub trait Hooks: Sync {
    /// Called before the original entry, with the slot's tag (as given to [`wrap_entry`]).
    fn enter(&self, tag: u32);
    /// Called after the original entry returned.
    fn exit(&self, tag: u32);
}

struct Slot {
    original: AtomicUsize,
    tag: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    original: AtomicUsize::new(0),
    tag: AtomicU32::new(0),
};
static SLOTS: [Slot; MAX_SLOTS] = [EMPTY; MAX_SLOTS];
/// Per slot, what the capturing trampoline records of the entry's arguments (an
/// [`api_signatures::Shape`]); apart from [`SLOTS`] so that the plain trampoline's slot
/// lookups stay what they were.
#[allow(clippy::declare_interior_mutable_const)]
const NO_SHAPE: AtomicU64 = AtomicU64::new(0);
static SHAPES: [AtomicU64; MAX_SLOTS] = [NO_SHAPE; MAX_SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
static HOOKS: OnceLock<&'static dyn Hooks> = OnceLock::new();

/// Installs the hooks (once per process; later calls are ignored and return `false`).
pub fn set_hooks(hooks: &'static dyn Hooks) -> bool {
    HOOKS.set(hooks).is_ok()
}

/// Set when the hooks are the API tracer: the trampolines then call it directly.
static API_TRACER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The hooks that turn every wrapped call into a [`trace_records::ApiRecord`] (the tracer's
/// enter and exit, [`crate::tracer`]).
#[derive(Debug, Default)]
pub(crate) struct ApiTracer;

impl Hooks for ApiTracer {
    #[inline]
    fn enter(&self, _tag: u32) {
        let _ = tracer::on_enter();
    }

    #[inline]
    fn exit(&self, tag: u32) {
        // Through the trait (not the trampoline's direct path) there is no state to hand over.
        tracer::on_exit(tag, tracer::call_state());
    }
}

/// Installs [`ApiTracer`] as the hooks, called directly rather than through the trait object
/// (once per process; `false` if hooks were already installed).
pub fn use_api_tracer() -> bool {
    static TRACER: ApiTracer = ApiTracer;
    let installed = set_hooks(&TRACER);
    if installed {
        API_TRACER.store(true, Ordering::Release);
    }
    installed
}

/// Whether entries wrapped from now on capture their arguments (see [`capture_arguments`]).
static CAPTURE: AtomicBool = AtomicBool::new(false);

/// Makes the HIP entries [`wrap_table`] wraps from now on capture their arguments and return
/// values (for the outputs that show them: JSON, Perfetto, rocpd). Their stubs jump to a second
/// trampoline that hands the exit the frame's argument words; the entries wrapped without it keep
/// the plain trampoline, instruction for instruction. Only HIP is captured: upstream's writers
/// show no HSA or ROCTx arguments.
pub fn capture_arguments(on: bool) {
    CAPTURE.store(on, Ordering::Relaxed);
}

/// Whether `domain`'s entries capture their arguments when wrapped now.
fn captures(domain: trace_records::ApiDomain) -> bool {
    CAPTURE.load(Ordering::Relaxed) && domain.is_hip()
}

unsafe extern "C" {
    /// First of `MAX_SLOTS` 16-byte stubs; stub `k` is at `rocprof_stubs + 16 k`.
    #[link_name = "rocprof_intercept_stubs"]
    static STUBS: [u8; 0];
    /// The same for the capturing trampoline.
    #[link_name = "rocprof_intercept_stubs_args"]
    static STUBS_ARGS: [u8; 0];
}

// What `trampoline_enter` hands back, in `rax:rdx`: the entry to call, and a context the
// trampoline keeps in its frame and passes to `trampoline_exit` (the API tracer's per-thread
// state, so the exit needs no second thread-local lookup).
c_layout::c_struct! {
    /// The two words the trampoline reads back from `rax` and `rdx`.
    #[repr(C)]
    struct Entered as "Entered", size 16 {
        original: usize => 0,
        context: *mut c_void => 8,
    }
}

/// Called by the trampoline: runs the enter hook and returns the original entry.
extern "C" fn trampoline_enter(slot: u64) -> Entered {
    let slot = &SLOTS[slot as usize % MAX_SLOTS];
    let mut context = std::ptr::null_mut();
    if API_TRACER.load(Ordering::Relaxed) {
        // The tracer records the tag at exit only.
        context = std::panic::catch_unwind(tracer::on_enter).unwrap_or(std::ptr::null_mut());
    } else if let Some(h) = HOOKS.get() {
        let tag = slot.tag.load(Ordering::Relaxed);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.enter(tag)));
    }
    Entered {
        original: slot.original.load(Ordering::Acquire),
        context,
    }
}

/// Called by the trampoline after the original returned, with the context `enter` returned.
extern "C" fn trampoline_exit(slot: u64, context: *mut c_void) {
    let tag = SLOTS[slot as usize % MAX_SLOTS].tag.load(Ordering::Relaxed);
    if API_TRACER.load(Ordering::Relaxed) {
        let _ = std::panic::catch_unwind(|| tracer::on_exit(tag, context));
    } else if let Some(h) = HOOKS.get() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.exit(tag)));
    }
}

/// Called by the capturing trampoline after the original returned: `regs` are the saved
/// argument registers in its frame, `stack` the caller's stack arguments, `rax` the result.
extern "C" fn trampoline_exit_args(
    slot: u64,
    context: *mut c_void,
    regs: *const u64,
    stack: *const u64,
    rax: u64,
) {
    let k = slot as usize % MAX_SLOTS;
    let tag = SLOTS[k].tag.load(Ordering::Relaxed);
    if API_TRACER.load(Ordering::Relaxed) {
        let frame = tracer::CallFrame { regs, stack, rax };
        let shape = SHAPES[k].load(Ordering::Relaxed);
        let _ = std::panic::catch_unwind(|| tracer::on_exit_args(tag, context, &frame, shape));
    } else if let Some(h) = HOOKS.get() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.exit(tag)));
    }
}

// The capturing trampoline: as the plain one below, but its frame keeps the argument registers
// intact across the call (the results go to 336..384) and its exit gets their address, the
// caller's stack arguments and `rax`.
std::arch::global_asm!(
    ".pushsection .text.rocprof_intercept_args,\"ax\",@progbits",
    ".balign 16",
    ".globl rocprof_intercept_stubs_args",
    ".hidden rocprof_intercept_stubs_args",
    "rocprof_intercept_stubs_args:",
    ".set rocprof_intercept_slot_args, 0",
    ".rept {slots}",
    ".balign 16",
    "movl $rocprof_intercept_slot_args, %r11d",
    "jmp 3f",
    ".set rocprof_intercept_slot_args, rocprof_intercept_slot_args + 1",
    ".endr",
    ".balign 16",
    "3:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $384, %rsp",
    "movq %rdi, 128(%rsp)",
    "movq %rsi, 136(%rsp)",
    "movq %rdx, 144(%rsp)",
    "movq %rcx, 152(%rsp)",
    "movq %r8, 160(%rsp)",
    "movq %r9, 168(%rsp)",
    "movq %rax, 176(%rsp)",
    "movq %r11, 184(%rsp)",
    "movdqu %xmm0, 208(%rsp)",
    "movdqu %xmm1, 224(%rsp)",
    "movdqu %xmm2, 240(%rsp)",
    "movdqu %xmm3, 256(%rsp)",
    "movdqu %xmm4, 272(%rsp)",
    "movdqu %xmm5, 288(%rsp)",
    "movdqu %xmm6, 304(%rsp)",
    "movdqu %xmm7, 320(%rsp)",
    "movq %r11, %rdi",
    "call {enter}",
    "movq %rax, 192(%rsp)",
    "movq %rdx, 200(%rsp)",
    "movq 16(%rbp), %r10",
    "movq %r10, 0(%rsp)",
    "movq 24(%rbp), %r10",
    "movq %r10, 8(%rsp)",
    "movq 32(%rbp), %r10",
    "movq %r10, 16(%rsp)",
    "movq 40(%rbp), %r10",
    "movq %r10, 24(%rsp)",
    "movq 48(%rbp), %r10",
    "movq %r10, 32(%rsp)",
    "movq 56(%rbp), %r10",
    "movq %r10, 40(%rsp)",
    "movq 64(%rbp), %r10",
    "movq %r10, 48(%rsp)",
    "movq 72(%rbp), %r10",
    "movq %r10, 56(%rsp)",
    "movq 80(%rbp), %r10",
    "movq %r10, 64(%rsp)",
    "movq 88(%rbp), %r10",
    "movq %r10, 72(%rsp)",
    "movq 96(%rbp), %r10",
    "movq %r10, 80(%rsp)",
    "movq 104(%rbp), %r10",
    "movq %r10, 88(%rsp)",
    "movq 128(%rsp), %rdi",
    "movq 136(%rsp), %rsi",
    "movq 144(%rsp), %rdx",
    "movq 152(%rsp), %rcx",
    "movq 160(%rsp), %r8",
    "movq 168(%rsp), %r9",
    "movq 176(%rsp), %rax",
    "movdqu 208(%rsp), %xmm0",
    "movdqu 224(%rsp), %xmm1",
    "movdqu 240(%rsp), %xmm2",
    "movdqu 256(%rsp), %xmm3",
    "movdqu 272(%rsp), %xmm4",
    "movdqu 288(%rsp), %xmm5",
    "movdqu 304(%rsp), %xmm6",
    "movdqu 320(%rsp), %xmm7",
    "call *192(%rsp)",
    "movq %rax, 336(%rsp)",
    "movq %rdx, 344(%rsp)",
    "movdqu %xmm0, 352(%rsp)",
    "movdqu %xmm1, 368(%rsp)",
    "movq 184(%rsp), %rdi",
    "movq 200(%rsp), %rsi",
    "leaq 128(%rsp), %rdx",
    "leaq 16(%rbp), %rcx",
    "movq 336(%rsp), %r8",
    "call {exit}",
    "movq 336(%rsp), %rax",
    "movq 344(%rsp), %rdx",
    "movdqu 352(%rsp), %xmm0",
    "movdqu 368(%rsp), %xmm1",
    "leave",
    "ret",
    ".popsection",
    slots = const MAX_SLOTS,
    enter = sym trampoline_enter,
    exit = sym trampoline_exit_args,
    options(att_syntax),
);

std::arch::global_asm!(
    ".pushsection .text.rocprof_intercept,\"ax\",@progbits",
    ".balign 16",
    ".globl rocprof_intercept_stubs",
    ".hidden rocprof_intercept_stubs",
    "rocprof_intercept_stubs:",
    ".set rocprof_intercept_slot, 0",
    ".rept {slots}",
    ".balign 16",
    "movl $rocprof_intercept_slot, %r11d",
    "jmp 2f",
    ".set rocprof_intercept_slot, rocprof_intercept_slot + 1",
    ".endr",
    ".balign 16",
    "2:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $352, %rsp",
    "movq %rdi, 128(%rsp)",
    "movq %rsi, 136(%rsp)",
    "movq %rdx, 144(%rsp)",
    "movq %rcx, 152(%rsp)",
    "movq %r8, 160(%rsp)",
    "movq %r9, 168(%rsp)",
    "movq %rax, 176(%rsp)",
    "movq %r11, 184(%rsp)",
    "movdqu %xmm0, 208(%rsp)",
    "movdqu %xmm1, 224(%rsp)",
    "movdqu %xmm2, 240(%rsp)",
    "movdqu %xmm3, 256(%rsp)",
    "movdqu %xmm4, 272(%rsp)",
    "movdqu %xmm5, 288(%rsp)",
    "movdqu %xmm6, 304(%rsp)",
    "movdqu %xmm7, 320(%rsp)",
    "movq %r11, %rdi",
    "call {enter}",
    "movq %rax, 192(%rsp)",
    "movq %rdx, 200(%rsp)",
    "movq 16(%rbp), %r10",
    "movq %r10, 0(%rsp)",
    "movq 24(%rbp), %r10",
    "movq %r10, 8(%rsp)",
    "movq 32(%rbp), %r10",
    "movq %r10, 16(%rsp)",
    "movq 40(%rbp), %r10",
    "movq %r10, 24(%rsp)",
    "movq 48(%rbp), %r10",
    "movq %r10, 32(%rsp)",
    "movq 56(%rbp), %r10",
    "movq %r10, 40(%rsp)",
    "movq 64(%rbp), %r10",
    "movq %r10, 48(%rsp)",
    "movq 72(%rbp), %r10",
    "movq %r10, 56(%rsp)",
    "movq 80(%rbp), %r10",
    "movq %r10, 64(%rsp)",
    "movq 88(%rbp), %r10",
    "movq %r10, 72(%rsp)",
    "movq 96(%rbp), %r10",
    "movq %r10, 80(%rsp)",
    "movq 104(%rbp), %r10",
    "movq %r10, 88(%rsp)",
    "movq 128(%rsp), %rdi",
    "movq 136(%rsp), %rsi",
    "movq 144(%rsp), %rdx",
    "movq 152(%rsp), %rcx",
    "movq 160(%rsp), %r8",
    "movq 168(%rsp), %r9",
    "movq 176(%rsp), %rax",
    "movdqu 208(%rsp), %xmm0",
    "movdqu 224(%rsp), %xmm1",
    "movdqu 240(%rsp), %xmm2",
    "movdqu 256(%rsp), %xmm3",
    "movdqu 272(%rsp), %xmm4",
    "movdqu 288(%rsp), %xmm5",
    "movdqu 304(%rsp), %xmm6",
    "movdqu 320(%rsp), %xmm7",
    "call *192(%rsp)",
    "movq %rax, 128(%rsp)",
    "movq %rdx, 136(%rsp)",
    "movdqu %xmm0, 208(%rsp)",
    "movdqu %xmm1, 224(%rsp)",
    "movq 184(%rsp), %rdi",
    "movq 200(%rsp), %rsi",
    "call {exit}",
    "movq 128(%rsp), %rax",
    "movq 136(%rsp), %rdx",
    "movdqu 208(%rsp), %xmm0",
    "movdqu 224(%rsp), %xmm1",
    "leave",
    "ret",
    ".popsection",
    slots = const MAX_SLOTS,
    enter = sym trampoline_enter,
    exit = sym trampoline_exit,
    options(att_syntax),
);

/// Why an entry was not wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapError {
    /// Every slot is in use.
    NoSlot,
    /// The entry is null (the runtime does not implement it).
    Null,
}

/// Replaces the function pointer at `entry` with a trampoline that calls the hooks with `tag`
/// around the original. Returns the original.
///
/// # Safety
/// `entry` must point at a writable, aligned function-pointer slot of a table no other thread
/// calls through while it is rewritten (the runtimes hand tables over before first use), and
/// the function it holds must follow the System V x86-64 C ABI within the limits above.
pub unsafe fn wrap_entry(entry: *mut *const c_void, tag: u32) -> Result<*const c_void, WrapError> {
    // SAFETY: forwarded from the caller.
    unsafe { wrap_entry_as(entry, tag, None) }
}

/// [`wrap_entry`] with a trampoline that also captures the call's arguments and return value
/// as `shape` (an [`api_signatures::Shape`]) says.
///
/// # Safety
/// As [`wrap_entry`], and the entry's signature must be the one `shape` was made from.
pub unsafe fn wrap_entry_capturing(
    entry: *mut *const c_void,
    tag: u32,
    shape: api_signatures::Shape,
) -> Result<*const c_void, WrapError> {
    // SAFETY: forwarded from the caller.
    unsafe { wrap_entry_as(entry, tag, Some(shape)) }
}

/// # Safety
/// As [`wrap_entry_capturing`].
unsafe fn wrap_entry_as(
    entry: *mut *const c_void,
    tag: u32,
    shape: Option<api_signatures::Shape>,
) -> Result<*const c_void, WrapError> {
    // SAFETY: the caller guarantees `entry` is a valid, aligned slot.
    let original = unsafe { entry.read() };
    if original.is_null() {
        return Err(WrapError::Null);
    }
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if slot >= MAX_SLOTS {
        return Err(WrapError::NoSlot);
    }
    SLOTS[slot].tag.store(tag, Ordering::Relaxed);
    SHAPES[slot].store(shape.map_or(0, |s| s.0), Ordering::Relaxed);
    SLOTS[slot]
        .original
        .store(original as usize, Ordering::Release);
    let stubs = match shape {
        Some(_) => (&raw const STUBS_ARGS).cast::<u8>(),
        None => (&raw const STUBS).cast::<u8>(),
    };
    // SAFETY: both stub symbols mark the start of MAX_SLOTS stubs of 16 bytes each in this
    // object.
    let stub = unsafe { stubs.add(16 * slot) };
    // SAFETY: as above: the caller owns the slot while tables are handed over.
    unsafe { entry.write(stub.cast()) };
    Ok(original)
}

/// What [`wrap_table`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WrapReport {
    /// Entries replaced by trampolines.
    pub wrapped: usize,
    /// Entries the runtime left null.
    pub null: usize,
    /// Entries this build knows but the runtime's table is too short to hold.
    pub beyond_size: usize,
    /// Entries not wrapped because the slots ran out.
    pub no_slot: usize,
}

/// Wraps, in place, every entry of the table at `base` whose operation `enabled` accepts, with
/// the trampoline tagged `(table.domain, operation)`. Entries at or beyond the runtime's own
/// size are never touched. Returns the originals (null where not wrapped) and a report.
///
/// # Safety
/// `base` must point at a writable table laid out as `table` describes, handed over before
/// any thread calls through it.
pub unsafe fn wrap_table(
    table: &ApiTable,
    base: *mut u8,
    enabled: impl Fn(u16) -> bool,
) -> (Vec<*const c_void>, WrapReport) {
    // SAFETY: forwarded from the caller.
    let size = unsafe { runtime_size(table, base) };
    let mut report = WrapReport::default();
    let mut originals = vec![std::ptr::null(); table.names.len()];
    for (k, original) in originals.iter_mut().enumerate() {
        let offset = table.offset(k);
        if offset + 8 > size {
            report.beyond_size += 1;
            continue;
        }
        if !enabled(k as u16) {
            continue;
        }
        // SAFETY: offset + 8 <= the runtime's size; entries are pointer-aligned.
        let entry = unsafe { base.add(offset) }.cast::<*const c_void>();
        let shape = captures(table.domain)
            .then(|| api_signatures::signature(table.names[k]))
            .flatten()
            .map(api_signatures::Shape::of);
        // SAFETY: forwarded from the caller; the shape is made from the entry's signature.
        match unsafe { wrap_entry_as(entry, tag(table.domain, k as u16), shape) } {
            Ok(o) => {
                *original = o;
                report.wrapped += 1;
            }
            Err(WrapError::Null) => report.null += 1,
            Err(WrapError::NoSlot) => report.no_slot += 1,
        }
    }
    (originals, report)
}
