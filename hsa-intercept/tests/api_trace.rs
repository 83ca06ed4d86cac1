//! API tracing end to end in one process: a table laid out like the runtime's is wrapped in
//! place, calls through it are recorded with correlation ids and timestamps, and the log reads
//! back. (One test: the sink and hooks are process-global.)

use hsa_intercept::tables::CORE;
use hsa_intercept::tracer::current_correlation_id;
use hsa_intercept::wrap::wrap_table;
use hsa_intercept::{sink, wrap};
use std::ffi::c_void;
use std::sync::OnceLock;
use trace_records::log::FileHeader;
use trace_records::{ApiDomain, ProcessTrace};

static TABLE_PTR: OnceLock<usize> = OnceLock::new();

/// A fake CoreApiTable: version header then 125 entries; `minor_id` = `size`.
fn core_table(size: u32) -> Vec<u64> {
    let mut t = vec![0u64; 2 + 125];
    t[0] = u64::from(size) << 32 | 2; // major_id 2, minor_id = size
    t
}

extern "C" fn fake_init() -> u32 {
    0
}

/// What the nested call saw as the work correlation id (the outermost call's).
static NESTED_SEES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn fake_load(signal: u64) -> i64 {
    NESTED_SEES.store(
        current_correlation_id().unwrap_or(0),
        std::sync::atomic::Ordering::SeqCst,
    );
    signal as i64 * 3
}

/// Calls slot 39 (hsa_signal_load_relaxed) of the table through its (wrapped) entry.
extern "C" fn fake_shutdown() -> u32 {
    let table = *TABLE_PTR.get().unwrap() as *const u64;
    // SAFETY: the table outlives the test; slot 39 holds an `extern "C" fn(u64) -> i64`.
    let load: extern "C" fn(u64) -> i64 = unsafe { std::mem::transmute(*table.add(2 + 39)) };
    assert!(current_correlation_id().is_some(), "inside a traced call");
    load(5) as u32
}

#[test]
fn wrapped_table_calls_become_records() {
    let dir = std::env::temp_dir().join(format!("hsa-intercept-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("77.rplog"));
    let log = record_log::LogFile::create(
        &dir,
        FileHeader {
            pid: 77,
            ..Default::default()
        },
    )
    .unwrap();
    let path = log.path().to_owned();
    assert!(sink::install(log));
    // The product's path: the trampolines call the tracer directly, handing its per-thread
    // state from enter to exit through their frame.
    assert!(wrap::use_api_tracer());

    // The runtime's table stops before slot 100: entries beyond it must stay untouched.
    let mut table = core_table(16 + 8 * 100);
    table[2] = fake_init as *const () as u64;
    table[2 + 1] = fake_shutdown as *const () as u64;
    table[2 + 39] = fake_load as *const () as u64;
    table[2 + 110] = 0xdead_beef;
    TABLE_PTR.set(table.as_ptr() as usize).unwrap();
    // SAFETY: a writable table of the described layout, not yet called through.
    let (originals, report) = unsafe { wrap_table(&CORE, table.as_mut_ptr().cast(), |_| true) };
    assert_eq!(report.wrapped, 3);
    assert_eq!(report.beyond_size, 25);
    assert_eq!(report.null, 97);
    assert_eq!(originals[39], fake_load as *const c_void);
    assert_eq!(table[2 + 110], 0xdead_beef, "beyond the runtime's size");
    assert_ne!(table[2], fake_init as *const () as u64, "wrapped in place");

    // SAFETY: the wrapped entries keep the originals' signatures.
    let (init, shutdown): (extern "C" fn() -> u32, extern "C" fn() -> u32) = unsafe {
        (
            std::mem::transmute::<u64, extern "C" fn() -> u32>(table[2]),
            std::mem::transmute::<u64, extern "C" fn() -> u32>(table[3]),
        )
    };
    assert_eq!(init(), 0);
    assert_eq!(shutdown(), 15);
    let worker = std::thread::spawn(move || {
        for _ in 0..1000 {
            assert_eq!(init(), 0);
        }
    });
    worker.join().unwrap();
    assert_eq!(current_correlation_id(), None);

    // Read before sealing (the chunks are open, as if the process had been killed), then after.
    let open = ProcessTrace::read(&path).unwrap();
    assert!(open.damage.is_empty() && open.open_chunks > 0);
    assert_eq!(open.api.len(), 1 + 2 + 1000);
    sink::seal_all();
    let t = ProcessTrace::read(&path).unwrap();
    assert!(t.damage.is_empty());
    assert_eq!(t.open_chunks, 0, "every chunk sealed");
    assert_eq!(t.losses.total(), 0);
    assert_eq!(t.api.len(), 1 + 2 + 1000);
    let first = t.api.iter().next().unwrap().thread_id;
    let main: Vec<_> = t.api.iter().filter(|r| r.thread_id == first).collect();
    assert_eq!(main[0].operation, 0);
    // Read back in time order: the caller (op 1), then the nested load (op 39) inside it, with
    // a correlation id of its own (issue 24).
    assert_eq!((main[1].operation, main[2].operation), (1, 39));
    assert_ne!(main[1].correlation_id, main[2].correlation_id);
    assert_eq!(
        NESTED_SEES.load(std::sync::atomic::Ordering::SeqCst),
        main[1].correlation_id,
        "work enqueued inside the nested call carries the outermost call's id"
    );
    assert!(main[1].start <= main[2].start && main[2].end <= main[1].end);
    assert_ne!(main[0].correlation_id, main[1].correlation_id);
    assert!(
        t.api
            .iter()
            .all(|r| r.domain == ApiDomain::HsaCore as u8 && r.start <= r.end)
    );
    let mut ids: Vec<u64> = t.api.iter().map(|r| r.correlation_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        1 + 2 + 1000,
        "one id per call, nested ones included"
    );
}
