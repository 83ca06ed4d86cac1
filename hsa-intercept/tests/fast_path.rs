//! The trampolines' fast path (the API tracer installed, the TSC clock on): every trampoline
//! kind forwards vector and stack arguments unchanged while the trampoline takes correlation
//! ids and start times itself, across id blocks, nested calls and threads, and the records read
//! back with unique, per-thread increasing ids and consistent times. (One test: the sink, clock
//! and hooks are process-global.)

use hsa_intercept::tracer::{current_correlation_id, new_correlation_id};
use hsa_intercept::wrap::{Forwarding, wrap_entry_capturing, wrap_entry_forwarding};
use hsa_intercept::{clock, sink, wrap};
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use trace_records::log::FileHeader;
use trace_records::{ApiDomain, ApiRecord, ProcessTrace};

/// Vector arguments among integer ones, an integer result (no stack arguments).
extern "C" fn mixed(a: u64, x: f64, b: u32, y: f32, z: f64) -> u64 {
    a * 3 + u64::from(b) * 5 + (x * 2.0) as u64 + (y * 4.0) as u64 + (z * 8.0) as u64
}

/// Nine integer arguments (three on the stack) and two vector ones.
extern "C" fn stacked(
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    e: u64,
    f: u64,
    x: f64,
    g: u64,
    h: u64,
    i: u64,
    y: f64,
) -> u64 {
    a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + (x + 10.0 * y) as u64
}

/// A floating result (only [`Forwarding::Any`] keeps `xmm0` across the exit).
extern "C" fn halve(x: f64, n: u64) -> f64 {
    x / 2.0 + n as f64
}

static INNER: OnceLock<usize> = OnceLock::new();
/// What the nested call saw as the work correlation id.
static NESTED_SEES: AtomicU64 = AtomicU64::new(0);

extern "C" fn inner(x: u64) -> u64 {
    NESTED_SEES.store(current_correlation_id().unwrap_or(0), Ordering::SeqCst);
    x + 1
}

extern "C" fn outer(x: u64) -> u64 {
    // SAFETY: INNER holds the wrapped `inner`.
    let f: extern "C" fn(u64) -> u64 = unsafe { std::mem::transmute(*INNER.get().unwrap()) };
    f(x) * 2
}

/// Wraps `f` (a function pointer) through `how` with `tag` and returns the stub to call.
fn wrap_as<F: Copy>(f: F, tag: u32, how: Result<Forwarding, api_signatures::Shape>) -> F {
    assert_eq!(size_of::<F>(), size_of::<*const c_void>());
    // SAFETY: `F` is a function pointer type (checked by size).
    let mut slot: *const c_void = unsafe { std::mem::transmute_copy(&f) };
    // SAFETY: `slot` is a local pointer-sized cell; each function's signature is one its
    // trampoline forwards (and the shape, where given, is made for it).
    unsafe {
        match how {
            Ok(forwarding) => wrap_entry_forwarding(&mut slot, tag, forwarding),
            Err(shape) => wrap_entry_capturing(&mut slot, tag, shape),
        }
    }
    .unwrap();
    // SAFETY: `slot` now holds the stub, which has `F`'s ABI.
    unsafe { std::mem::transmute_copy(&slot) }
}

/// A shape of `int` integer, `sse` vector and `stack` stack words.
fn shape(int: u64, sse: u64, stack: u64) -> api_signatures::Shape {
    api_signatures::Shape(int | sse << 3 | stack << 7)
}

const CALLS: u64 = 3000;

#[test]
fn every_trampoline_records_and_forwards_on_the_fast_path() {
    clock::start();
    assert!(clock::tsc_in_use(), "this test needs an invariant TSC");
    let dir = std::env::temp_dir().join(format!("hsa-intercept-fast-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("78.rplog"));
    let log = record_log::LogFile::create(
        &dir,
        FileHeader {
            pid: 78,
            ..Default::default()
        },
    )
    .unwrap();
    let path = log.path().to_owned();
    assert!(sink::install(log));
    assert!(wrap::use_api_tracer());
    // Periods come before the tracer: its fast exit does not check them.
    let periods = trace_records::ranges::Periods::from_args(&["0:1:1"], 1).unwrap();
    assert_eq!(
        hsa_intercept::scope::install(0, periods),
        Err(hsa_intercept::scope::InstallError::TracerInUse)
    );
    assert!(!hsa_intercept::scope::enabled(), "no periods in force");
    let tag = |op: u16| hsa_intercept::tracer::tag(ApiDomain::HipRuntime, op);

    type Mixed = extern "C" fn(u64, f64, u32, f32, f64) -> u64;
    type Stacked = extern "C" fn(u64, u64, u64, u64, u64, u64, f64, u64, u64, u64, f64) -> u64;
    let mixed_through: Vec<Mixed> = vec![
        wrap_as(mixed as Mixed, tag(1), Ok(Forwarding::Registers)),
        wrap_as(mixed as Mixed, tag(2), Ok(Forwarding::Stack)),
        wrap_as(mixed as Mixed, tag(3), Ok(Forwarding::Any)),
        wrap_as(mixed as Mixed, tag(4), Err(shape(2, 3, 0))),
    ];
    let stacked_through: Vec<Stacked> = vec![
        wrap_as(stacked as Stacked, tag(5), Ok(Forwarding::Stack)),
        wrap_as(stacked as Stacked, tag(6), Ok(Forwarding::Any)),
        wrap_as(stacked as Stacked, tag(7), Err(shape(6, 2, 3))),
    ];
    let halve_any = wrap_as(
        halve as extern "C" fn(f64, u64) -> f64,
        tag(8),
        Ok(Forwarding::Any),
    );
    let inner_w = wrap_as(
        inner as extern "C" fn(u64) -> u64,
        tag(9),
        Ok(Forwarding::Registers),
    );
    INNER.set(inner_w as usize).unwrap();
    let outer_w = wrap_as(
        outer as extern "C" fn(u64) -> u64,
        tag(10),
        Ok(Forwarding::Registers),
    );

    let work = move |seed: u64| {
        let mut outer_ids_seen = Vec::new();
        for n in 0..CALLS {
            let a = seed * 1_000_003 + n;
            for f in &mixed_through {
                assert_eq!(
                    f(a, 1.5, 7, 2.25, n as f64),
                    mixed(a, 1.5, 7, 2.25, n as f64)
                );
            }
            for f in &stacked_through {
                assert_eq!(
                    f(a, 2, 3, 4, 5, 6, 0.5, 7, 8, n, 3.0),
                    stacked(a, 2, 3, 4, 5, 6, 0.5, 7, 8, n, 3.0)
                );
            }
            assert_eq!(halve_any(a as f64, 3), halve(a as f64, 3));
            if n % 100 == 0 {
                assert_eq!(outer_w(n), 2 * (n + 1));
                outer_ids_seen.push(NESTED_SEES.load(Ordering::SeqCst));
                // Ids taken outside a call come from the same block and stay unique.
                let _ = new_correlation_id();
            }
            assert_eq!(
                current_correlation_id(),
                None,
                "no call active between calls"
            );
        }
        outer_ids_seen
    };
    let other = work.clone();
    let worker = std::thread::spawn(move || other(2));
    let seen_main = work(1);
    let _ = worker.join().unwrap();
    sink::seal_all();

    let t = ProcessTrace::read(&path).unwrap();
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    assert_eq!(t.losses.total(), 0);
    let per_round = 4 + 3 + 1;
    let nested_rounds = CALLS.div_ceil(100);
    let expected = 2 * (CALLS * per_round + 2 * nested_rounds);
    assert_eq!(t.api.len() as u64, expected);
    let records: Vec<ApiRecord> = t.api.iter().collect();
    let mut ids: Vec<u64> = records.iter().map(|r| r.correlation_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as u64, expected, "one id per call");
    assert!(records.iter().all(|r| r.start <= r.end && r.start > 0));
    let mut threads: Vec<u32> = records.iter().map(|r| r.thread_id).collect();
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads.len(), 2);
    for &thread in &threads {
        // Per thread, in start order, ids increase (nested calls after their caller).
        let mut mine: Vec<&ApiRecord> = records.iter().filter(|r| r.thread_id == thread).collect();
        mine.sort_by_key(|r| (r.start, r.correlation_id));
        assert!(
            mine.windows(2)
                .all(|w| w[0].correlation_id < w[1].correlation_id || w[0].start == w[1].start),
            "ids follow the calls' order on a thread"
        );
    }
    // Every nested call lies inside its caller, and saw the caller's id as the work id.
    let outers: Vec<&ApiRecord> = records.iter().filter(|r| r.operation == 10).collect();
    let inners: Vec<&ApiRecord> = records.iter().filter(|r| r.operation == 9).collect();
    assert_eq!(outers.len(), inners.len());
    for o in &outers {
        let i = inners
            .iter()
            .find(|i| i.thread_id == o.thread_id && i.correlation_id == o.correlation_id + 1)
            .expect("the nested call took the next id");
        assert!(o.start <= i.start && i.end <= o.end);
    }
    // The ids the main thread's nested calls saw are its outer calls' (which thread's records
    // come first in the log is not fixed: the main thread is the one whose outer ids they are).
    let outer_ids = |thread: u32| -> Vec<u64> {
        outers
            .iter()
            .filter(|o| o.thread_id == thread)
            .map(|o| o.correlation_id)
            .collect()
    };
    assert!(
        threads
            .iter()
            .any(|&t| seen_main.iter().all(|id| outer_ids(t).contains(id))),
        "the nested calls saw their callers' ids"
    );
    // The capturing trampolines kept the words their shapes name.
    let captured = t.api_args.len() as u64;
    assert_eq!(captured, 2 * 2 * CALLS);
    let args_stacked = records
        .iter()
        .find(|r| r.operation == 7)
        .map(|r| &t.api_args[&trace_records::ApiArgs::key(r)])
        .unwrap();
    assert_eq!(args_stacked.words.len(), 6 + 2 + 3);
    assert_eq!(&args_stacked.words[1..6], &[2, 3, 4, 5, 6]);
    assert_eq!(f64::from_bits(args_stacked.words[6]), 0.5);
    assert_eq!(f64::from_bits(args_stacked.words[7]), 3.0);
    assert_eq!(&args_stacked.words[8..10], &[7, 8]);
    let _ = std::fs::remove_dir_all(&dir);
}
