//! In-place wrapping of table entries through signature-agnostic trampolines.
//!
//! Each wrapped entry is replaced by a 16-byte stub that loads its slot number and jumps to one
//! of four trampolines ([`Forwarding`]). A trampoline reads the TSC and, on its fast path, does
//! the tracer's enter work itself: from the thread's call state (one initial-exec TLS load) it
//! takes the next correlation id of the thread's block and counts the call active, keeping the
//! id, the raw start and the state in its frame — without a call, so no argument register is
//! saved. It then calls the original with the arguments where they came (the caller's first 12
//! stack words copied where the entry may take stack arguments), keeps the return registers,
//! calls the exit ([`tracer::exit_tsc`] through `trampoline_exit`), and returns the original's
//! result. When the fast path does not apply (the thread's first call, its id block used up,
//! no TSC clock, hooks other than the tracer: [`Hooks`]), it saves every argument register
//! (integer and vector) and calls `trampoline_enter`, which runs the hooks or the tracer's
//! [`tracer::enter`] and fills the same frame.
//!
//! The trampolines together forward any System V x86-64 signature without knowing it: up to 6
//! integer and 8 vector register arguments plus up to 96 bytes (12 words) of stack arguments,
//! returns in `rax:rdx` and `xmm0:xmm1`. No HSA, HIP or ROCTx entry point is variadic, and the
//! largest stack-argument area among them is 64 bytes (`hipExtModuleLaunchKernel`, 14
//! arguments); `hipMemset3D` passes 56 bytes of structs by value. Which trampoline an entry
//! gets depends on what its signature (`api-signatures`) says: [`Forwarding::Registers`] when
//! it takes no stack arguments (vector arguments stay in their registers: the fast path never
//! touches them), [`Forwarding::Stack`] when it does, [`Forwarding::Any`] — `rax` kept for a
//! variadic callee, stack words copied, `xmm0:xmm1` kept across the exit — when the signature
//! is not known. No known entry returns a floating value, so only `Any` keeps `xmm0:xmm1`.
//!
//! [`wrap_table`] wraps every enabled entry of a runtime's table this way, each tagged with its
//! domain and operation for the tracer ([`crate::tracer`], which knows nothing of wrapping).
//!
//! With [`capture_arguments`] on, HIP entries whose signature `api-signatures` knows get a stub
//! of a fifth set whose trampoline also keeps the argument registers in its frame across the
//! call; its exit receives their address, the caller's stack arguments and `rax`, and records
//! the words the entry's [`api_signatures::Shape`] names.

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

/// One wrapped entry: what the trampolines read (16 bytes; the assembly indexes the table by
/// slot × 16 and reads `original` at 0 and `tag` at 8).
#[repr(C)]
struct Slot {
    original: AtomicUsize,
    tag: AtomicU32,
    reserved: AtomicU32,
}

const _: () = assert!(size_of::<Slot>() == 16 && MAX_SLOTS.is_power_of_two());

// The slot table, defined in assembly as a hidden symbol so that the trampolines reach it with
// one `rip`-relative `lea` (no GOT load) in the tool's shared object as in a test executable.
std::arch::global_asm!(
    ".pushsection .bss.rocprof_intercept_slots,\"aw\",@nobits",
    ".balign 64",
    ".globl rocprof_intercept_slots",
    ".hidden rocprof_intercept_slots",
    ".type rocprof_intercept_slots,@object",
    ".size rocprof_intercept_slots, {bytes}",
    "rocprof_intercept_slots:",
    ".zero {bytes}",
    ".popsection",
    bytes = const 16 * MAX_SLOTS,
);

unsafe extern "C" {
    /// The slots (zeroed `.bss` of the size above: all-zero atomics are valid values).
    #[link_name = "rocprof_intercept_slots"]
    static SLOTS: [Slot; MAX_SLOTS];
}

/// Slot `k` (taken modulo [`MAX_SLOTS`]).
fn slot(k: usize) -> &'static Slot {
    // SAFETY: the table is MAX_SLOTS slots of zero-initialised atomics that live for the
    // process and are only accessed atomically.
    unsafe { &SLOTS[k % MAX_SLOTS] }
}

/// Per slot, what the capturing trampoline records of the entry's arguments (an
/// [`api_signatures::Shape`]).
#[allow(clippy::declare_interior_mutable_const)]
const NO_SHAPE: AtomicU64 = AtomicU64::new(0);
static SHAPES: [AtomicU64; MAX_SLOTS] = [NO_SHAPE; MAX_SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// What the trampolines call: the API tracer, or other hooks (tests, tools).
#[derive(Clone, Copy)]
enum Installed {
    Tracer,
    Hooks(&'static dyn Hooks),
}

static HOOKS: OnceLock<Installed> = OnceLock::new();

/// Installs the hooks (once per process; later calls are ignored and return `false`).
pub fn set_hooks(hooks: &'static dyn Hooks) -> bool {
    HOOKS.set(Installed::Hooks(hooks)).is_ok()
}

/// Makes the API tracer ([`crate::tracer`]) what the trampolines call around every wrapped
/// entry, every call becoming a [`trace_records::ApiRecord`] (once per process; `false` if
/// hooks were already installed).
pub fn use_api_tracer() -> bool {
    let installed = HOOKS.set(Installed::Tracer).is_ok();
    if installed {
        tracer::allow_fast_enter();
    }
    installed
}

/// Whether entries wrapped from now on capture their arguments (see [`capture_arguments`]).
static CAPTURE: AtomicBool = AtomicBool::new(false);

/// Makes the HIP entries [`wrap_table`] wraps from now on capture their arguments and return
/// values (for the outputs that show them: JSON, Perfetto, rocpd). Their stubs jump to a
/// trampoline that hands the exit the frame's argument words; the entries wrapped without it keep
/// the forwarding trampolines. Only HIP is captured: upstream's writers show no HSA or ROCTx
/// arguments.
pub fn capture_arguments(on: bool) {
    CAPTURE.store(on, Ordering::Relaxed);
}

/// Whether `domain`'s entries capture their arguments when wrapped now.
fn captures(domain: trace_records::ApiDomain) -> bool {
    CAPTURE.load(Ordering::Relaxed) && domain.is_hip()
}

/// How a trampoline forwards its entry's arguments and results (chosen per entry while
/// wrapping; every one forwards vector arguments, which no fast path touches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarding {
    /// Register arguments only, results in `rax:rdx`: nothing is copied or saved on the fast
    /// path but `rdx` across the TSC read.
    Registers,
    /// As [`Forwarding::Registers`], and the caller's first 12 stack words are copied for the
    /// entry.
    Stack,
    /// Any signature within the limits above: `rax` kept for a variadic callee, 12 stack words
    /// copied, `xmm0:xmm1` kept across the exit as well as `rax:rdx`.
    Any,
}

impl Forwarding {
    /// The trampoline for an entry of the known signature `shape` was made from (no known
    /// HSA, HIP or ROCTx entry returns a floating value or is variadic).
    pub fn of(shape: api_signatures::Shape) -> Forwarding {
        if shape.stack_words() == 0 {
            Forwarding::Registers
        } else {
            Forwarding::Stack
        }
    }
}

/// Which stub set an entry's stub comes from.
#[derive(Debug, Clone, Copy)]
enum Trampoline {
    Forward(Forwarding),
    /// The capturing trampoline, with the entry's shape.
    Capture(api_signatures::Shape),
}

unsafe extern "C" {
    /// First of `MAX_SLOTS` 16-byte stubs of [`Forwarding::Registers`]; stub `k` is at
    /// `+ 16 k`.
    #[link_name = "rocprof_intercept_stubs_registers"]
    static STUBS_REGISTERS: [u8; 0];
    /// The same for [`Forwarding::Stack`].
    #[link_name = "rocprof_intercept_stubs_stack"]
    static STUBS_STACK: [u8; 0];
    /// The same for [`Forwarding::Any`].
    #[link_name = "rocprof_intercept_stubs_any"]
    static STUBS_ANY: [u8; 0];
    /// The same for the capturing trampoline.
    #[link_name = "rocprof_intercept_stubs_args"]
    static STUBS_ARGS: [u8; 0];
}

// The frame every trampoline keeps, at `rsp + FRAME` once it has made room (offsets below are
// from `rsp`):
//
//   0..96     the stack arguments passed on (12 words, where copied)
//   96        `Frame` (40 bytes): slot, tag, start, correlation id, call state, slow state
//   136, 144  on entry `rdx` (across the TSC read) and `rax` (Any); after the call `rax`, `rdx`
//   152..200  the 6 integer argument registers (slow path; the capturing trampoline always)
//   208..336  the 8 vector argument registers (likewise)
//   336..368  `xmm0`, `xmm1` after the call (Any)
//
// 376 bytes in all keep `rsp` 16-byte aligned at the calls; the caller's stack arguments are
// at `rsp + 384`.
c_layout::c_struct! {
    /// What a trampoline's enter leaves in its frame for the exit.
    #[repr(C)]
    struct Frame as "Frame", size 40 {
        /// The slot number (stored on the slow path and by the capturing trampoline only).
        slot: u32 => 0,
        tag: u32 => 4,
        /// The raw TSC (fast path: `state` set) or host-timeline ns (`slow_state`).
        start: u64 => 8,
        id: u64 => 16,
        /// The call state, when the trampoline's fast path did the enter work.
        state: *mut c_void => 24,
        /// The call state, when [`trampoline_enter`] did the tracer's enter work.
        slow_state: *mut c_void => 32,
    }
}

/// Called by a trampoline when its fast path does not apply, with its frame's slot set and
/// every argument register saved: fills the frame and returns the original entry.
extern "C" fn trampoline_enter(frame: *mut Frame) -> usize {
    // SAFETY: the trampoline passes its own frame, which it does not touch during the call.
    let f = unsafe { &mut *frame };
    let slot = slot(f.slot as usize);
    f.tag = slot.tag.load(Ordering::Relaxed);
    f.state = std::ptr::null_mut();
    f.slow_state = std::ptr::null_mut();
    match HOOKS.get() {
        Some(Installed::Tracer) => {
            if let Ok(Some((state, id))) = std::panic::catch_unwind(tracer::enter) {
                f.start = crate::clock::now_ns();
                f.id = id;
                f.slow_state = state;
            }
        }
        Some(Installed::Hooks(h)) => {
            let tag = f.tag;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.enter(tag)));
        }
        None => {}
    }
    slot.original.load(Ordering::Acquire)
}

/// Called by a forwarding trampoline after the original returned, with its frame.
extern "C" fn trampoline_exit(frame: *const Frame) {
    // SAFETY: the trampoline passes its own frame, filled by its enter.
    let f = unsafe { &*frame };
    if f.state.is_null() {
        exit_slow(f, None);
        return;
    }
    let _ = std::panic::catch_unwind(|| tracer::exit_tsc(f.state, f.tag, f.id, f.start));
}

/// The exit of a call entered through [`trampoline_enter`] (`capture`: the capturing
/// trampoline's frame and the slot's shape).
#[cold]
#[inline(never)]
fn exit_slow(f: &Frame, capture: Option<(&tracer::CallFrame, u64)>) {
    match HOOKS.get() {
        Some(Installed::Tracer) if !f.slow_state.is_null() => {
            let start = tracer::Start::Ns(f.start);
            let _ = std::panic::catch_unwind(|| match capture {
                Some((frame, shape)) => {
                    tracer::exit_args(f.slow_state, f.tag, f.id, start, frame, shape)
                }
                None => tracer::exit_ns(f.slow_state, f.tag, f.id, f.start),
            });
        }
        Some(Installed::Hooks(h)) => {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.exit(f.tag)));
        }
        _ => {}
    }
}

/// Called by the capturing trampoline after the original returned: `regs` are the saved
/// argument registers in its frame, `stack` the caller's stack arguments, `rax` the result.
extern "C" fn trampoline_exit_args(
    frame: *const Frame,
    regs: *const u64,
    stack: *const u64,
    rax: u64,
) {
    // SAFETY: the trampoline passes its own frame, filled by its enter.
    let f = unsafe { &*frame };
    let call = tracer::CallFrame { regs, stack, rax };
    let shape = SHAPES[f.slot as usize % MAX_SLOTS].load(Ordering::Relaxed);
    if f.state.is_null() {
        exit_slow(f, Some((&call, shape)));
        return;
    }
    let start = tracer::Start::Tsc(f.start);
    let _ =
        std::panic::catch_unwind(|| tracer::exit_args(f.state, f.tag, f.id, start, &call, shape));
}

/// The slot's number, from its address in `r11` (a stub's `lea`, left as it is), into the
/// frame's `Frame::slot` (`rsp + 96`); `r10` is clobbered.
macro_rules! store_slot_number {
    () => {
        concat!(
            "leaq rocprof_intercept_slots(%rip), %r10\n",
            "negq %r10\n",
            "addq %r11, %r10\n",
            "shrq $4, %r10\n",
            "movq %r10, 96(%rsp)",
        )
    };
}

/// The caller's 12 stack words (at `rsp + 384`) copied to where the callee finds them, 16
/// bytes at a time through `xmm8` (not an argument register): `yes` for the trampolines that
/// forward stack arguments, `no` (nothing) for the registers-only one.
macro_rules! stack_copy {
    (yes) => {
        concat!(
            "movdqu 384(%rsp), %xmm8\n",
            "movdqu %xmm8, 0(%rsp)\n",
            "movdqu 400(%rsp), %xmm8\n",
            "movdqu %xmm8, 16(%rsp)\n",
            "movdqu 416(%rsp), %xmm8\n",
            "movdqu %xmm8, 32(%rsp)\n",
            "movdqu 432(%rsp), %xmm8\n",
            "movdqu %xmm8, 48(%rsp)\n",
            "movdqu 448(%rsp), %xmm8\n",
            "movdqu %xmm8, 64(%rsp)\n",
            "movdqu 464(%rsp), %xmm8\n",
            "movdqu %xmm8, 80(%rsp)",
        )
    };
    (no) => {
        ""
    };
}

/// One trampoline and its `MAX_SLOTS` stubs; stub `k` puts slot `k`'s address in `r11` and
/// jumps to the common part. `$save` runs first (after the frame is made; the slot's number is
/// stored in the frame only where it is read, `store_slot_number!`: on the slow path and by
/// the capturing exit), the stack words are copied before the call where `copy_stack` is
/// `yes` (`stack_copy!`), `$keep`/`$restore` run around the exit, `$exit_args` sets up the
/// exit's arguments (`rdi` = the frame).
macro_rules! trampoline {
    (
        name: $name:literal,
        save: [$($save:expr),* $(,)?],
        copy_stack: $copy:tt,
        before_call: [$($before_call:literal),* $(,)?],
        keep: [$($keep:literal),* $(,)?],
        exit_args: [$($exit_args:literal),* $(,)?],
        restore: [$($restore:literal),* $(,)?],
        exit: $exit:path $(,)?
    ) => {
        std::arch::global_asm!(
            concat!(".pushsection .text.rocprof_intercept_", $name, ",\"ax\",@progbits"),
            ".balign 16",
            concat!(".globl rocprof_intercept_stubs_", $name),
            concat!(".hidden rocprof_intercept_stubs_", $name),
            concat!("rocprof_intercept_stubs_", $name, ":"),
            concat!(".set rocprof_intercept_slot_", $name, ", 0"),
            ".rept {slots}",
            ".balign 16",
            concat!("leaq rocprof_intercept_slots + 16 * rocprof_intercept_slot_", $name, "(%rip), %r11"),
            "jmp 2f",
            concat!(".set rocprof_intercept_slot_", $name, ", rocprof_intercept_slot_", $name, " + 1"),
            ".endr",
            ".balign 16",
            "2:",
            ".cfi_startproc",
            "subq $376, %rsp",
            ".cfi_adjust_cfa_offset 376",
            "movq %rdx, 136(%rsp)",
            $($save,)*
            // The start, raw.
            "rdtsc",
            "shlq $32, %rdx",
            "orq %rdx, %rax",
            "movq %rax, 104(%rsp)",
            // The call state, if this thread has one and may take ids here.
            "movq rocprof_intercept_thread_slot@GOTTPOFF(%rip), %r10",
            "movq %fs:(%r10), %r10",
            "testq %r10, %r10",
            "jz 5f",
            "movq {next}(%r10), %rax",
            "cmpq {fast_end}(%r10), %rax",
            "jae 5f",
            "incq {next}(%r10)",
            "movq %rax, 112(%rsp)",
            "movq %r10, 120(%rsp)",
            "cmpq $0, {depth}(%r10)",
            "jne 3f",
            "movq %rax, {outer}(%r10)",
            "3:",
            "incq {depth}(%r10)",
            // The slot's entry and tag.
            "movl 8(%r11), %eax",
            "movl %eax, 100(%rsp)",
            "movq (%r11), %r11",
            "4:",
            stack_copy!($copy),
            "movq 136(%rsp), %rdx",
            $($before_call,)*
            "call *%r11",
            "movq %rax, 136(%rsp)",
            "movq %rdx, 144(%rsp)",
            $($keep,)*
            "leaq 96(%rsp), %rdi",
            $($exit_args,)*
            "call {exit}",
            "movq 136(%rsp), %rax",
            "movq 144(%rsp), %rdx",
            $($restore,)*
            ".cfi_remember_state",
            "addq $376, %rsp",
            ".cfi_adjust_cfa_offset -376",
            "ret",
            ".cfi_restore_state",
            // The slow path: every argument register saved around `trampoline_enter`, which
            // fills the frame and returns the original in `rax`.
            "5:",
            store_slot_number!(),
            "movq %rdi, 152(%rsp)",
            "movq %rsi, 160(%rsp)",
            "movq %rcx, 176(%rsp)",
            "movq %r8, 184(%rsp)",
            "movq %r9, 192(%rsp)",
            "movdqu %xmm0, 208(%rsp)",
            "movdqu %xmm1, 224(%rsp)",
            "movdqu %xmm2, 240(%rsp)",
            "movdqu %xmm3, 256(%rsp)",
            "movdqu %xmm4, 272(%rsp)",
            "movdqu %xmm5, 288(%rsp)",
            "movdqu %xmm6, 304(%rsp)",
            "movdqu %xmm7, 320(%rsp)",
            "leaq 96(%rsp), %rdi",
            "call {enter}",
            "movq %rax, %r11",
            "movq 152(%rsp), %rdi",
            "movq 160(%rsp), %rsi",
            "movq 176(%rsp), %rcx",
            "movq 184(%rsp), %r8",
            "movq 192(%rsp), %r9",
            "movdqu 208(%rsp), %xmm0",
            "movdqu 224(%rsp), %xmm1",
            "movdqu 240(%rsp), %xmm2",
            "movdqu 256(%rsp), %xmm3",
            "movdqu 272(%rsp), %xmm4",
            "movdqu 288(%rsp), %xmm5",
            "movdqu 304(%rsp), %xmm6",
            "movdqu 320(%rsp), %xmm7",
            "jmp 4b",
            ".cfi_endproc",
            ".popsection",
            slots = const MAX_SLOTS,
            next = const tracer::NEXT_ID_AT,
            fast_end = const tracer::FAST_END_AT,
            depth = const tracer::DEPTH_AT,
            outer = const tracer::OUTER_AT,
            enter = sym trampoline_enter,
            exit = sym $exit,
            options(att_syntax),
        );
    };
}

// The four trampolines.
trampoline! {
    name: "registers",
    save: [],
    copy_stack: no,
    before_call: [],
    keep: [],
    exit_args: [],
    restore: [],
    exit: trampoline_exit,
}

trampoline! {
    name: "stack",
    save: [],
    copy_stack: yes,
    before_call: [],
    keep: [],
    exit_args: [],
    restore: [],
    exit: trampoline_exit,
}

trampoline! {
    name: "any",
    save: ["movq %rax, 144(%rsp)"],
    copy_stack: yes,
    before_call: ["movq 144(%rsp), %rax"],
    keep: ["movdqu %xmm0, 336(%rsp)", "movdqu %xmm1, 352(%rsp)"],
    exit_args: [],
    restore: ["movdqu 336(%rsp), %xmm0", "movdqu 352(%rsp), %xmm1"],
    exit: trampoline_exit,
}

// Capturing: the argument registers stay in the frame for the exit (`regs`: `rsp + 152`, the
// vector registers from word 7), with the caller's stack arguments (`rsp + 384`) and `rax`.
trampoline! {
    name: "args",
    save: [
        store_slot_number!(),
        "movq %rdi, 152(%rsp)",
        "movq %rsi, 160(%rsp)",
        "movq %rdx, 168(%rsp)",
        "movq %rcx, 176(%rsp)",
        "movq %r8, 184(%rsp)",
        "movq %r9, 192(%rsp)",
        "movdqu %xmm0, 208(%rsp)",
        "movdqu %xmm1, 224(%rsp)",
        "movdqu %xmm2, 240(%rsp)",
        "movdqu %xmm3, 256(%rsp)",
        "movdqu %xmm4, 272(%rsp)",
        "movdqu %xmm5, 288(%rsp)",
        "movdqu %xmm6, 304(%rsp)",
        "movdqu %xmm7, 320(%rsp)",
    ],
    copy_stack: yes,
    before_call: [],
    keep: [],
    exit_args: ["leaq 152(%rsp), %rsi", "leaq 384(%rsp), %rdx", "movq %rax, %rcx"],
    restore: [],
    exit: trampoline_exit_args,
}

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
    unsafe { wrap_entry_as(entry, tag, Trampoline::Forward(Forwarding::Any)) }
}

/// [`wrap_entry`] through the trampoline `forwarding` (see [`Forwarding::of`]).
///
/// # Safety
/// As [`wrap_entry`], and the entry's signature must be one `forwarding` forwards: no stack
/// arguments for [`Forwarding::Registers`], no floating return value and not variadic for
/// either of it and [`Forwarding::Stack`].
pub unsafe fn wrap_entry_forwarding(
    entry: *mut *const c_void,
    tag: u32,
    forwarding: Forwarding,
) -> Result<*const c_void, WrapError> {
    // SAFETY: forwarded from the caller.
    unsafe { wrap_entry_as(entry, tag, Trampoline::Forward(forwarding)) }
}

/// [`wrap_entry`] with a trampoline that also captures the call's arguments and return value
/// as `shape` (an [`api_signatures::Shape`]) says.
///
/// # Safety
/// As [`wrap_entry`], and the entry's signature must be the one `shape` was made from (a known
/// signature: not variadic, no floating return value).
pub unsafe fn wrap_entry_capturing(
    entry: *mut *const c_void,
    tag: u32,
    shape: api_signatures::Shape,
) -> Result<*const c_void, WrapError> {
    // SAFETY: forwarded from the caller.
    unsafe { wrap_entry_as(entry, tag, Trampoline::Capture(shape)) }
}

/// # Safety
/// As [`wrap_entry_forwarding`] and [`wrap_entry_capturing`].
unsafe fn wrap_entry_as(
    entry: *mut *const c_void,
    tag: u32,
    trampoline: Trampoline,
) -> Result<*const c_void, WrapError> {
    // SAFETY: the caller guarantees `entry` is a valid, aligned slot.
    let original = unsafe { entry.read() };
    if original.is_null() {
        return Err(WrapError::Null);
    }
    let k = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if k >= MAX_SLOTS {
        return Err(WrapError::NoSlot);
    }
    let shape = match trampoline {
        Trampoline::Capture(s) => s.0,
        Trampoline::Forward(_) => 0,
    };
    slot(k).tag.store(tag, Ordering::Relaxed);
    SHAPES[k].store(shape, Ordering::Relaxed);
    slot(k).original.store(original as usize, Ordering::Release);
    let stubs = match trampoline {
        Trampoline::Forward(Forwarding::Registers) => (&raw const STUBS_REGISTERS).cast::<u8>(),
        Trampoline::Forward(Forwarding::Stack) => (&raw const STUBS_STACK).cast::<u8>(),
        Trampoline::Forward(Forwarding::Any) => (&raw const STUBS_ANY).cast::<u8>(),
        Trampoline::Capture(_) => (&raw const STUBS_ARGS).cast::<u8>(),
    };
    // SAFETY: every stub symbol marks the start of MAX_SLOTS stubs of 16 bytes each in this
    // object.
    let stub = unsafe { stubs.add(16 * k) };
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
        let signature = api_signatures::signature(table.names[k]);
        let trampoline = match signature.map(api_signatures::Shape::of) {
            Some(shape) if captures(table.domain) => Trampoline::Capture(shape),
            Some(shape) => Trampoline::Forward(Forwarding::of(shape)),
            None => Trampoline::Forward(Forwarding::Any),
        };
        // SAFETY: forwarded from the caller; the trampoline is chosen from the entry's
        // signature (or forwards any).
        match unsafe { wrap_entry_as(entry, tag(table.domain, k as u16), trampoline) } {
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
