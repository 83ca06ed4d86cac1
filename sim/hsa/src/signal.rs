//! Signals: `amd_signal_t` blocks whose address is the handle, value operations, futex-based
//! waiting, `hsa_amd_signal_wait_any` and the asynchronous-handler thread.
//!
//! A signal block is never returned to the allocator: `hsa_signal_destroy` puts it on a free
//! list for reuse, so a stale handle (a handler still registered on a destroyed signal) reads
//! valid memory instead of freed memory.

use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::guard::{guard, guard_status, guard_value, monotonic_ns, write_out};
use crate::types::*;

/// A signal: the `amd_signal_t` (the handle points here) followed by the runtime's wait state.
#[repr(C, align(64))]
pub struct SignalObj {
    pub amd: AmdSignal,
    /// Bumped on every value change; waiters sleep on it with a futex.
    pub epoch: AtomicU32,
    /// Threads sleeping on `epoch`.
    pub waiters: AtomicU32,
    /// Waits on several signals at once (`wait_any`, barrier dependencies, asynchronous
    /// handlers) watching this one. Only a change of a watched signal wakes them — as ROCr's
    /// event-based waits, which a store to an unrelated signal (a doorbell) never wakes.
    pub watchers: AtomicU32,
    /// Between create and destroy (checked without the registry's lock).
    pub live: AtomicBool,
    /// Non-zero on an intercept queue's doorbell: that queue's `hsa_queue_t*`, where a host
    /// store goes instead of into the value (see `intercept`).
    pub intercept_queue: AtomicU64,
}

const _: () = assert!(std::mem::offset_of!(SignalObj, amd) == 0);

/// Bumped on every change of a watched signal, and on handler registration.
static GLOBAL_EPOCH: AtomicU32 = AtomicU32::new(0);
static GLOBAL_WAITERS: AtomicU32 = AtomicU32::new(0);

struct Registry {
    live: HashSet<u64>,
    free: Vec<u64>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(|| Registry {
        live: HashSet::new(),
        free: Vec::new(),
    }))
}

/// Creates a signal with `value`; returns its handle.
pub fn create(value: i64) -> Signal {
    let reused = with_registry(|r| r.free.pop());
    let address = match reused {
        Some(address) => address,
        None => Box::into_raw(Box::new(SignalObj {
            amd: AmdSignal {
                kind: AMD_SIGNAL_KIND_USER,
                value: AtomicI64::new(0),
                event_mailbox_ptr: 0,
                event_id: 0,
                reserved1: 0,
                start_ts: AtomicU64::new(0),
                end_ts: AtomicU64::new(0),
                queue_ptr: 0,
                reserved3: 0,
            },
            epoch: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            watchers: AtomicU32::new(0),
            live: AtomicBool::new(false),
            intercept_queue: AtomicU64::new(0),
        })) as u64,
    };
    let obj = object(Signal { handle: address }).expect("non-null");
    obj.amd.value.store(value, Ordering::Release);
    obj.amd.start_ts.store(0, Ordering::Relaxed);
    obj.amd.end_ts.store(0, Ordering::Relaxed);
    obj.intercept_queue.store(0, Ordering::Relaxed);
    obj.live.store(true, Ordering::Release);
    with_registry(|r| r.live.insert(address));
    Signal { handle: address }
}

/// Whether `signal` is a live signal of this runtime.
pub fn is_live(signal: Signal) -> bool {
    with_registry(|r| r.live.contains(&signal.handle))
}

/// The block of a live signal (checked in the registry before the handle is dereferenced).
pub fn live_object(signal: Signal) -> Option<&'static SignalObj> {
    if is_live(signal) {
        object(signal)
    } else {
        None
    }
}

/// Stores a dispatch's or copy's GPU ticks as the signal's profiling timestamps.
pub fn store_timestamps(signal: Signal, timing: &WslsimTiming) {
    if let Some(obj) = object(signal) {
        obj.amd.start_ts.store(timing.start_tick, Ordering::Release);
        obj.amd.end_ts.store(timing.end_tick, Ordering::Release);
    }
}

/// Makes `signal` the doorbell of the intercept queue `queue` (its `hsa_queue_t*`; 0 makes it
/// an ordinary signal again).
pub fn mark_intercept_doorbell(signal: Signal, queue: u64) {
    if let Some(obj) = object(signal) {
        obj.intercept_queue.store(queue, Ordering::Release);
    }
}

/// Destroys a signal (its block goes to the free list).
pub fn destroy(signal: Signal) -> Result<(), Status> {
    let removed = with_registry(|r| {
        let removed = r.live.remove(&signal.handle);
        if removed {
            if let Some(obj) = object(signal) {
                obj.live.store(false, Ordering::Release);
            }
            r.free.push(signal.handle);
        }
        removed
    });
    if removed {
        // Wake anyone still waiting on it so they re-check (and time out) rather than sleep.
        if let Some(obj) = object(signal) {
            notify(obj);
        }
        Ok(())
    } else {
        Err(ERROR_INVALID_SIGNAL)
    }
}

/// The signal block behind a handle (`None` for the null handle).
///
/// Handles are addresses of `SignalObj`s this module allocated and never frees; an arbitrary
/// non-null value is the caller's contract violation, as with ROCr.
pub fn object(signal: Signal) -> Option<&'static SignalObj> {
    if signal.handle == 0 {
        return None;
    }
    // SAFETY: non-null handles are addresses of leaked (never freed) SignalObj blocks.
    Some(unsafe { &*(signal.handle as *const SignalObj) })
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 with a valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// Wakes waiters of `obj`, and the multi-signal waiters if `obj` is watched (after a value
/// change).
pub fn notify(obj: &SignalObj) {
    obj.epoch.fetch_add(1, Ordering::SeqCst);
    if obj.waiters.load(Ordering::SeqCst) != 0 {
        futex_wake(&obj.epoch);
    }
    // Pairs with the fence in `Watch::new`: either the watcher sees the new value, or this
    // sees the watcher.
    fence(Ordering::SeqCst);
    if obj.watchers.load(Ordering::SeqCst) != 0 {
        notify_global();
    }
}

/// Marks signals as watched by a multi-signal wait for as long as it lives.
pub struct Watch<'a> {
    signals: &'a [Signal],
}

impl<'a> Watch<'a> {
    /// Watches `signals` (null handles are skipped). Check their values only after this.
    pub fn new(signals: &'a [Signal]) -> Watch<'a> {
        watch(signals);
        Watch { signals }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        unwatch(self.signals);
    }
}

fn watch(signals: &[Signal]) {
    for obj in signals.iter().filter_map(|s| object(*s)) {
        obj.watchers.fetch_add(1, Ordering::SeqCst);
    }
    fence(Ordering::SeqCst);
}

fn unwatch(signals: &[Signal]) {
    for obj in signals.iter().filter_map(|s| object(*s)) {
        obj.watchers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sleeps until `obj`'s epoch differs from `seen` (any value change) or `timeout` passes.
pub fn sleep_on(obj: &SignalObj, seen: u32, timeout: Duration) {
    obj.waiters.fetch_add(1, Ordering::SeqCst);
    futex_wait(&obj.epoch, seen, timeout);
    obj.waiters.fetch_sub(1, Ordering::SeqCst);
}

/// Wakes the global waiters (wait_any, the handler thread).
pub fn notify_global() {
    GLOBAL_EPOCH.fetch_add(1, Ordering::SeqCst);
    if GLOBAL_WAITERS.load(Ordering::SeqCst) != 0 {
        futex_wake(&GLOBAL_EPOCH);
    }
}

/// Sleeps on the global epoch until it differs from `seen` or `timeout` passes.
pub fn wait_global(seen: u32, timeout: Duration) {
    GLOBAL_WAITERS.fetch_add(1, Ordering::SeqCst);
    futex_wait(&GLOBAL_EPOCH, seen, timeout);
    GLOBAL_WAITERS.fetch_sub(1, Ordering::SeqCst);
}

/// The current global epoch (read it before checking conditions, then [`wait_global`]).
pub fn global_epoch() -> u32 {
    GLOBAL_EPOCH.load(Ordering::SeqCst)
}

/// Waits until `ready()` or `stop()` holds, re-checking whenever one of `signals` changes (and
/// at least every 20 ms).
pub fn wait_watched(signals: &[Signal], mut ready: impl FnMut() -> bool, stop: impl Fn() -> bool) {
    let _watch = Watch::new(signals);
    loop {
        let epoch = global_epoch();
        if ready() || stop() {
            return;
        }
        wait_global(epoch, Duration::from_millis(20));
    }
}

/// Whether `value` satisfies `condition` against `compare`.
pub fn satisfied(condition: u32, value: i64, compare: i64) -> bool {
    match condition {
        CONDITION_EQ => value == compare,
        CONDITION_NE => value != compare,
        CONDITION_LT => value < compare,
        CONDITION_GTE => value >= compare,
        _ => false,
    }
}

/// Loads the value.
pub fn load(signal: Signal) -> i64 {
    object(signal).map_or(0, |obj| obj.amd.value.load(Ordering::Acquire))
}

/// Applies `op` to the value atomically and wakes waiters; returns the previous value.
pub fn update(signal: Signal, op: impl Fn(i64) -> i64) -> i64 {
    let Some(obj) = object(signal) else { return 0 };
    let previous = obj
        .amd
        .value
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(op(v)))
        .unwrap_or_else(|v| v);
    notify(obj);
    previous
}

/// Stores the value and wakes waiters.
pub fn store(signal: Signal, value: i64) {
    if let Some(obj) = object(signal) {
        obj.amd.value.store(value, Ordering::Release);
        notify(obj);
    }
}

/// Subtracts 1 (a packet's completion).
pub fn complete(signal: Signal) {
    if signal.handle != 0 {
        update(signal, |v| v.wrapping_sub(1));
    }
}

/// Waits until the condition holds or `timeout_ns` passes; returns the last value observed.
pub fn wait(signal: Signal, condition: u32, compare: i64, timeout_ns: u64) -> i64 {
    let Some(obj) = object(signal) else { return 0 };
    let start = monotonic_ns();
    loop {
        let epoch = obj.epoch.load(Ordering::SeqCst);
        let value = obj.amd.value.load(Ordering::Acquire);
        if satisfied(condition, value, compare) {
            return value;
        }
        let elapsed = monotonic_ns().saturating_sub(start);
        if elapsed >= timeout_ns {
            return value;
        }
        let slice = (timeout_ns - elapsed).min(100_000_000);
        sleep_on(obj, epoch, Duration::from_nanos(slice));
    }
}

/// `hsa_amd_signal_wait_any`: the index of the first satisfied signal, or `u32::MAX` on
/// timeout.
pub fn wait_any(
    signals: &[Signal],
    conditions: &[u32],
    compares: &[i64],
    timeout_ns: u64,
) -> (u32, i64) {
    let start = monotonic_ns();
    let _watch = Watch::new(signals);
    loop {
        let epoch = global_epoch();
        for (index, signal) in signals.iter().enumerate() {
            let value = load(*signal);
            if satisfied(conditions[index], value, compares[index]) {
                return (index as u32, value);
            }
        }
        let elapsed = monotonic_ns().saturating_sub(start);
        if elapsed >= timeout_ns {
            return (u32::MAX, 0);
        }
        wait_global(
            epoch,
            Duration::from_nanos((timeout_ns - elapsed).min(100_000_000)),
        );
    }
}

// ---- asynchronous handlers ----

impl HandlerEntry {
    fn new(signal: Signal, condition: u32, value: i64, handler: Handler, arg: usize) -> Self {
        watch(std::slice::from_ref(&signal));
        HandlerEntry {
            signal,
            condition,
            value,
            handler,
            arg,
        }
    }
}

impl Drop for HandlerEntry {
    fn drop(&mut self) {
        unwatch(std::slice::from_ref(&self.signal));
    }
}

type Handler = unsafe extern "C" fn(i64, *mut c_void) -> bool;
type AsyncFn = unsafe extern "C" fn(*mut c_void);

/// A registered handler; its signal stays watched until the entry is dropped.
struct HandlerEntry {
    signal: Signal,
    condition: u32,
    value: i64,
    handler: Handler,
    arg: usize,
}

#[derive(Default)]
struct Pending {
    handlers: Vec<HandlerEntry>,
    functions: Vec<(AsyncFn, usize)>,
}

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

fn with_pending<T>(f: impl FnOnce(&mut Pending) -> T) -> T {
    let mut guard = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Pending::default))
}

fn ensure_handler_thread() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("hsa-async-handlers".to_owned())
            .spawn(handler_thread);
    });
}

fn handler_thread() {
    loop {
        let epoch = global_epoch();
        let (entries, functions) = with_pending(|p| {
            (
                std::mem::take(&mut p.handlers),
                std::mem::take(&mut p.functions),
            )
        });
        let mut fired = !functions.is_empty();
        for (function, arg) in functions {
            let _ = std::panic::catch_unwind(|| {
                // SAFETY: a callback registered with hsa_amd_async_function and its argument.
                unsafe { function(arg as *mut c_void) }
            });
        }
        let mut keep = Vec::with_capacity(entries.len());
        for entry in entries {
            if !object(entry.signal).is_some_and(|o| o.live.load(Ordering::Acquire)) {
                continue;
            }
            let current = load(entry.signal);
            if !satisfied(entry.condition, current, entry.value) {
                keep.push(entry);
                continue;
            }
            fired = true;
            let again = std::panic::catch_unwind(|| {
                // SAFETY: a handler registered with hsa_amd_signal_async_handler and its
                // argument.
                unsafe { (entry.handler)(current, entry.arg as *mut c_void) }
            })
            .unwrap_or(false);
            if again {
                keep.push(entry);
            }
        }
        with_pending(|p| {
            // Handlers registered while we ran (by handlers or other threads) come after.
            keep.append(&mut p.handlers);
            p.handlers = keep;
        });
        if !fired {
            wait_global(epoch, Duration::from_millis(50));
        }
    }
}

/// Registers an asynchronous handler (runs on the runtime's handler thread).
pub fn add_handler(signal: Signal, condition: u32, value: i64, handler: Handler, arg: *mut c_void) {
    ensure_handler_thread();
    with_pending(|p| {
        p.handlers.push(HandlerEntry::new(
            signal,
            condition,
            value,
            handler,
            arg as usize,
        ))
    });
    notify_global();
}

// ---- C entry points ----

/// `hsa_signal_create`.
pub unsafe extern "C" fn hsa_signal_create(
    initial_value: i64,
    _num_consumers: u32,
    _consumers: *const Agent,
    signal: *mut Signal,
) -> Status {
    guard(|| {
        if signal.is_null() {
            return Err(ERROR_INVALID_ARGUMENT);
        }
        let created = create(initial_value);
        // SAFETY: non-null; the caller provides a writable hsa_signal_t.
        unsafe { write_out(signal, created) }
    })
}

/// `hsa_amd_signal_create`.
pub unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: i64,
    num_consumers: u32,
    consumers: *const Agent,
    _attributes: u64,
    signal: *mut Signal,
) -> Status {
    // SAFETY: same contract.
    unsafe { hsa_signal_create(initial_value, num_consumers, consumers, signal) }
}

/// `hsa_signal_destroy`.
pub unsafe extern "C" fn hsa_signal_destroy(signal: Signal) -> Status {
    guard(|| destroy(signal))
}

// Value operations: one function per operation behind all its memory-order slots of the table
// (`hsa_signal_add_relaxed`, `_scacquire`, ...), using the strongest order of its variants.

macro_rules! signal_ops {
    ($($name:ident: |$v:ident, $x:ident| $body:expr;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "_*` (every memory order).")]
            pub unsafe extern "C" fn $name(signal: Signal, value: i64) {
                guard_value((), || {
                    let $x = value;
                    update(signal, |$v| $body);
                })
            }
        )*
    };
}

signal_ops! {
    hsa_signal_and: |v, x| v & x;
    hsa_signal_or: |v, x| v | x;
    hsa_signal_xor: |v, x| v ^ x;
    hsa_signal_add: |v, x| v.wrapping_add(x);
    hsa_signal_subtract: |v, x| v.wrapping_sub(x);
}

/// `hsa_signal_exchange_*` (every memory order).
pub unsafe extern "C" fn hsa_signal_exchange(signal: Signal, value: i64) -> i64 {
    guard_value(0, || update(signal, |_| value))
}

/// `hsa_signal_cas_*` (every memory order).
pub unsafe extern "C" fn hsa_signal_cas(signal: Signal, expected: i64, value: i64) -> i64 {
    guard_value(0, || {
        update(signal, |v| if v == expected { value } else { v })
    })
}

/// `hsa_signal_load_*` (every memory order).
pub unsafe extern "C" fn hsa_signal_load(signal: Signal) -> i64 {
    guard_value(0, || load(signal))
}

/// `hsa_signal_store_*` and `hsa_signal_silent_store_*` (every memory order). On an intercept
/// queue's doorbell, a host store processes the queue's ring (ROCr's
/// `InterceptQueue::StoreRelaxed`) instead of changing the value.
pub unsafe extern "C" fn hsa_signal_store(signal: Signal, value: i64) {
    guard_value((), || {
        let queue = object(signal).map_or(0, |o| o.intercept_queue.load(Ordering::Acquire));
        if queue != 0 {
            crate::intercept::host_doorbell_store(queue, signal, value);
        } else {
            store(signal, value);
        }
    })
}

/// The most spurious resumes one process's waits take (see [`spurious_budget`]).
pub const MAX_SPURIOUS_RESUMES: u32 = 24;
/// Overrides the per-process number of spurious resumes (0..=[`MAX_SPURIOUS_RESUMES`]; 0:
/// none, so with HIP's default of one marker poll every run makes the same calls).
pub const SPURIOUS_ENV: &str = "HSA_SIM_SPURIOUS_WAITS";

/// How many times this process's `hsa_signal_wait_*` calls resume before their condition
/// holds ("A wait operation can spuriously resume at any time sooner than the timeout", hsa.h),
/// each time once a wait finds it must block: [`SPURIOUS_ENV`] if set, else drawn from
/// 0..=[`MAX_SPURIOUS_RESUMES`] with the session seed (`WSLSIM_SEED`, else the scenario's
/// `seed`, else one of the process's own from its pid and the clock). A caller that loops until
/// its condition holds (HIP does) makes that many more wait calls: the run-to-run spread of HSA
/// call counts the seed measured (710–734 records: 710 plus 0..=24). The draw is
/// arcsine-shaped (`M·sin²(φ)` for a uniform phase φ), the distribution of a periodic quantity
/// seen at a random moment — whether a wait finds its completion still pending depends on where
/// the host's loop stands against the GPU's, so the counts gather at both ends of the range, as
/// runs that race ahead of the GPU or stay behind it. How often twenty draws span less than a
/// given width is computed by `twenty_draws_span_at_least_12_but_about_once_in_a_million`
/// (`cargo test -p sim-hsa -- --nocapture` prints it): under 20 about three sets in a
/// thousand, under 12 about one in a million.
pub fn spurious_budget() -> u32 {
    if let Ok(text) = std::env::var(SPURIOUS_ENV) {
        match text.trim().parse::<u32>() {
            Ok(n) if n <= MAX_SPURIOUS_RESUMES => return n,
            _ => eprintln!(
                "libhsa-runtime64 (sim): {SPURIOUS_ENV}={text:?} ignored (expected \
                 0..={MAX_SPURIOUS_RESUMES})"
            ),
        }
    }
    let mut state = session_seed() ^ 0x5350_5552_494f_5553;
    arcsine_draw(splitmix64(&mut state), MAX_SPURIOUS_RESUMES)
}

/// `round(max · sin²(φ))` for the phase φ = `bits`/2⁶⁴ · π/2: arcsine-distributed over
/// 0..=`max`, both ends the likeliest.
fn arcsine_draw(bits: u64, max: u32) -> u32 {
    let phase = (bits >> 11) as f64 / (1u64 << 53) as f64 * std::f64::consts::FRAC_PI_2;
    let value = (f64::from(max) * phase.sin().powi(2)).round();
    (value as u32).min(max)
}

/// The session seed as the GPU model chooses it: `WSLSIM_SEED` (decimal or `0x` hex), else
/// the scenario's `seed` if the file gave one, else the process's own (pid and wall clock).
fn session_seed() -> u64 {
    let parsed = std::env::var("WSLSIM_SEED").ok().and_then(|t| {
        let t = t.trim().to_owned();
        match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => t.parse().ok(),
        }
    });
    if let Some(seed) = parsed {
        return seed;
    }
    let scenario = wslsim_scenario::current();
    if scenario.seed_given {
        return scenario.seed;
    }
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut state = (u64::from(std::process::id()) << 32) ^ (ns as u64) ^ ((ns >> 64) as u64);
    splitmix64(&mut state)
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The process's spurious resumes left.
fn spurious_left() -> &'static AtomicU32 {
    static LEFT: OnceLock<AtomicU32> = OnceLock::new();
    LEFT.get_or_init(|| AtomicU32::new(spurious_budget()))
}

/// Takes one of the process's spurious resumes, if any is left.
fn take_spurious() -> bool {
    spurious_left()
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

/// `hsa_signal_wait_*` (every memory order): [`wait`], except that a wait which finds its
/// condition unmet may resume at once, unmet, while the process has spurious resumes left
/// ([`spurious_budget`]).
pub unsafe extern "C" fn hsa_signal_wait(
    signal: Signal,
    condition: u32,
    compare_value: i64,
    timeout_hint: u64,
    _wait_state_hint: u32,
) -> i64 {
    guard_value(0, || {
        if object(signal).is_some()
            && timeout_hint > 0
            && !satisfied(condition, load(signal), compare_value)
            && take_spurious()
        {
            std::thread::yield_now();
            let value = load(signal);
            if satisfied(condition, value, compare_value) {
                // Not spurious after all: the caller makes no further call for it.
                spurious_left().fetch_add(1, Ordering::AcqRel);
            }
            return value;
        }
        wait(signal, condition, compare_value, timeout_hint)
    })
}

/// `hsa_amd_signal_wait_any`.
pub unsafe extern "C" fn hsa_amd_signal_wait_any(
    signal_count: u32,
    signals: *mut Signal,
    conditions: *mut u32,
    compare_values: *mut i64,
    timeout_hint: u64,
    _wait_hint: u32,
    satisfying_value: *mut i64,
) -> u32 {
    guard_value(u32::MAX, || {
        if signal_count == 0
            || signals.is_null()
            || conditions.is_null()
            || compare_values.is_null()
        {
            return u32::MAX;
        }
        let n = signal_count as usize;
        // SAFETY: the caller provides arrays of `signal_count` elements.
        let (signals, conditions, compares) = unsafe {
            (
                std::slice::from_raw_parts(signals, n),
                std::slice::from_raw_parts(conditions, n),
                std::slice::from_raw_parts(compare_values, n),
            )
        };
        let (index, value) = wait_any(signals, conditions, compares, timeout_hint);
        if index != u32::MAX && !satisfying_value.is_null() {
            // SAFETY: non-null, writable per the API.
            unsafe { satisfying_value.write_unaligned(value) };
        }
        index
    })
}

/// `hsa_amd_signal_async_handler` (`[faults] async_handler_fail_*` make chosen calls fail with
/// `HSA_STATUS_ERROR`, registering nothing).
pub unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: Signal,
    condition: u32,
    value: i64,
    handler: Option<Handler>,
    arg: *mut c_void,
) -> Status {
    guard(|| {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        if wslsim_scenario::current().faults.async_handler_fails(call) {
            return Err(ERROR);
        }
        let handler = handler.ok_or(ERROR_INVALID_ARGUMENT)?;
        if !is_live(signal) {
            return Err(ERROR_INVALID_SIGNAL);
        }
        add_handler(signal, condition, value, handler, arg);
        Ok(())
    })
}

/// `hsa_amd_async_function`.
pub unsafe extern "C" fn hsa_amd_async_function(
    callback: Option<AsyncFn>,
    arg: *mut c_void,
) -> Status {
    guard(|| {
        let callback = callback.ok_or(ERROR_INVALID_ARGUMENT)?;
        ensure_handler_thread();
        with_pending(|p| p.functions.push((callback, arg as usize)));
        notify_global();
        Ok(())
    })
}

/// `hsa_amd_signal_value_pointer`.
pub unsafe extern "C" fn hsa_amd_signal_value_pointer(
    signal: Signal,
    value_ptr: *mut *mut i64,
) -> Status {
    guard_status(|| match live_object(signal) {
        // SAFETY: `value_ptr` is checked by write_out; writable per the API.
        Some(obj) => match unsafe { write_out(value_ptr, obj.amd.value.as_ptr()) } {
            Ok(()) => SUCCESS,
            Err(status) => status,
        },
        None => ERROR_INVALID_SIGNAL,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spurious-resume draw stays in 0..=max, reaches both ends, and puts more of its
    /// weight at the ends than in the middle (so runs span the seed's range).
    #[test]
    fn the_spurious_resume_draw_is_arcsine_shaped_over_its_range() {
        let max = MAX_SPURIOUS_RESUMES;
        let mut state = 42u64;
        let mut counts = vec![0u32; max as usize + 1];
        for _ in 0..100_000 {
            let v = arcsine_draw(splitmix64(&mut state), max);
            assert!(v <= max);
            counts[v as usize] += 1;
        }
        let (low, high, middle) = (counts[0], counts[max as usize], counts[max as usize / 2]);
        assert!(low > 0 && high > 0, "{counts:?}");
        assert!(counts[1] > 2 * middle, "{counts:?}");
        assert!(counts[max as usize - 1] > 2 * middle, "{counts:?}");
        assert_eq!(arcsine_draw(0, max), 0);
        assert_eq!(arcsine_draw(u64::MAX, max), max);
    }

    /// The odds behind `rocprof-cli/tests/hsa_spread.rs`: the draw's distribution taken from
    /// [`arcsine_draw`] itself over 2^20 evenly spaced phases, then the chance that twenty
    /// independent draws span less than `width` (all of them inside some window of `width`
    /// values, counted window by window without counting a set twice).
    #[test]
    fn twenty_draws_span_at_least_12_but_about_once_in_a_million() {
        let max = MAX_SPURIOUS_RESUMES as usize;
        let steps = 1u64 << 20;
        let mut p = vec![0f64; max + 1];
        for i in 0..steps {
            p[arcsine_draw(i << 44, MAX_SPURIOUS_RESUMES) as usize] += 1.0 / steps as f64;
        }
        let within = |lo: usize, hi: usize| p[lo..=hi].iter().sum::<f64>().powi(20);
        let narrower_than = |width: usize| -> f64 {
            (0..=max)
                .map(|lo| {
                    let hi = (lo + width - 1).min(max);
                    let rest = if lo < hi { within(lo + 1, hi) } else { 0.0 };
                    within(lo, hi) - rest
                })
                .sum()
        };
        let (under_12, under_20) = (narrower_than(12), narrower_than(20));
        println!("twenty draws over 0..={max}: span < 12 {under_12:.2e}, span < 20 {under_20:.2e}");
        assert!(under_12 < 1e-5, "span < 12: {under_12:e}");
        assert!(under_20 < 5e-3, "span < 20: {under_20:e}");
    }
}
