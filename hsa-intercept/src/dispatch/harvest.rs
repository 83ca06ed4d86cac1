//! Harvesting finished dispatches: dispatch time read, record emitted, signal recycled, in
//! each queue's order — from the packet handler, after the application's signal waits, by the
//! harvester thread, at queue destroy and at shutdown / exit.
//!
//! Lock order: no lock of the tool's is held across a call into the runtime. A harvest looks at
//! the oldest pending dispatch under the queue's `pending` lock, asks the runtime whether it
//! finished with the lock released, claims it under the lock again (unless another harvest
//! did), and reads its time, emits its record and recycles its signal with the lock released.
//! Claims follow queue order; a per-queue completion counter advances over the contiguous
//! prefix of emitted records, so a harvest that must guarantee completeness (after a signal
//! wait, at queue destroy and shutdown) waits — briefly, and never from the runtime's own
//! threads — until every dispatch claimed before it looked has been emitted by whichever thread
//! claimed it. The packet handler, which runs on the runtime's interceptor thread, harvests
//! without waiting.

use super::instrument::installed;
#[cfg(doc)]
use super::queues::COMPLETION_WAIT;
use super::queues::{DONE_RING, PENDING, Pending, QueueState, live_queues};
use super::signals::give_back_signal;
use crate::hsa::*;
use crate::sink;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use trace_records::docs::WarningKind;
use trace_records::loss::LossCause;

/// `hsa_signal_wait_relaxed` (`IS_SC = false`) or `hsa_signal_wait_scacquire` (`true`).
pub(super) unsafe extern "C" fn wait<const IS_SC: bool>(
    signal: u64,
    condition: u32,
    compare: i64,
    timeout: u64,
    hint: u32,
) -> i64 {
    let Some(f) = fns() else { return 0 };
    let forward = if IS_SC {
        f.signal_wait_scacquire
    } else {
        f.signal_wait_relaxed
    };
    // SAFETY: forwarded.
    let value = unsafe { forward(signal, condition, compare, timeout, hint) };
    harvest_all();
    value
}

/// Emits the records of every finished dispatch (in each queue's order; a dispatch still
/// running holds back those after it on its queue). When it returns, every dispatch that had
/// finished before the call is recorded, whichever thread recorded it. Cheap when nothing is
/// pending. Never panics; safe from any thread but the runtime's own (see `harvest`).
pub fn harvest_all() {
    harvest_queues(true);
}

/// Records what has finished on every queue without waiting for anything: what a packet
/// handler may do (it runs on the thread that rang a doorbell, under the runtime's queue lock,
/// as the handler's own harvest at its entry does). An instrument waiting for one of its slots
/// calls it, so the slot comes back as soon as its packets completed rather than at the
/// harvester's next look.
pub(crate) fn harvest_finished() {
    harvest_queues(false);
}

fn harvest_queues(complete: bool) {
    if PENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let _ = std::panic::catch_unwind(|| live_queues().for_each(|q| harvest(q, complete)));
}

/// [`harvest_all`] for one queue. Holds no lock of the tool's while it calls the runtime. With
/// `complete`, waits (at most [`COMPLETION_WAIT`]) until the dispatches other threads claimed
/// before it looked are recorded too; a runtime thread (the packet handler) must not wait, as
/// the thread it would wait for may be inside the runtime.
pub(super) fn harvest(q: &QueueState, complete: bool) {
    let Some(f) = fns() else { return };
    let bound = loop {
        let (seq, signal) = {
            let ledger = q.ledger();
            match ledger.queue.front() {
                Some(front) => (front.seq, front.done_signal()),
                None => break ledger.next,
            }
        };
        // Never more outstanding claims than the completion ring can track.
        if seq >= q.completed.load(Ordering::SeqCst) + DONE_RING as u64 {
            break seq;
        }
        // SAFETY: the runtime's own load on a signal of ours, which is never destroyed (see
        // SIGNAL_POOL). Another harvest may have claimed and recycled it meanwhile: then the
        // value says nothing about `seq`, and the claim below finds `seq` gone.
        if unsafe { (f.signal_load_relaxed)(signal) } > 0 {
            break seq;
        }
        let claimed = {
            let mut ledger = q.ledger();
            match ledger.queue.front() {
                Some(front) if front.seq == seq => ledger.queue.pop_front(),
                // Another harvest claimed it meanwhile.
                _ => None,
            }
        };
        let Some(done) = claimed else { continue };
        PENDING.fetch_sub(1, Ordering::AcqRel);
        let _ = std::panic::catch_unwind(|| record(f, q, &done));
        q.complete(seq);
    };
    if complete {
        q.wait_completed(bound);
    }
}

/// Reads a finished dispatch's time, emits its record (or counts it lost), lets its
/// instrument record what it measured, and recycles its signals. Called with no lock of the
/// tool's held.
fn record(f: &Fns, q: &QueueState, done: &Pending) {
    let mut time = DispatchTime::default();
    // SAFETY: the runtime's own function on the signal the dispatch completed.
    let record = if unsafe { (f.get_dispatch_time)(q.agent, done.signal, &mut time) } == SUCCESS {
        let mut record = done.record;
        record.start = time.start;
        record.end = time.end;
        sink::emit(&record);
        Some(record)
    } else {
        sink::lost(LossCause::DispatchTime, 1);
        None
    };
    if let Some(i) = done.instrumented {
        if let Some(instrument) = installed() {
            instrument.completed(i.token, record.as_ref().unwrap_or(&done.record));
        }
        if i.done != done.signal {
            give_back_signal(i.done);
        }
    }
    give_back_signal(done.signal);
}

/// The harvester thread while dispatches are outstanding (or were, recently): how often it
/// looks, and how long it keeps looking after the last one before it parks.
const HARVEST_PERIOD: Duration = Duration::from_millis(1);
const HARVEST_LINGER: Duration = Duration::from_millis(100);

pub(super) static HARVESTER: Mutex<Option<std::thread::Thread>> = Mutex::new(None);

/// Starts the harvester thread (once per process; again in a forked child).
pub(super) fn start_harvester() {
    // try_lock: in a forked child the lock may have been held by a thread that is gone.
    let Ok(mut slot) = HARVESTER.try_lock() else {
        return;
    };
    if slot.is_some() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("rocprof-harvest".into())
        .spawn(|| {
            let mut last_busy = Instant::now();
            loop {
                harvest_queues(false);
                if PENDING.load(Ordering::Acquire) > 0 {
                    last_busy = Instant::now();
                }
                if last_busy.elapsed() < HARVEST_LINGER {
                    std::thread::sleep(HARVEST_PERIOD);
                } else {
                    std::thread::park_timeout(Duration::from_secs(1));
                    last_busy = Instant::now();
                }
            }
        });
    if let Ok(handle) = spawned {
        *slot = Some(handle.thread().clone());
    }
}

/// Wakes a parked harvester (cheap when it is not parked).
pub(super) fn wake_harvester() {
    if let Ok(slot) = HARVESTER.try_lock()
        && let Some(t) = slot.as_ref()
    {
        t.unpark();
    }
}

/// How long `hsa_shut_down` and the exit wait for dispatches still running.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// Harvests until no dispatch is pending or `SHUTDOWN_WAIT` (1 s) passes; what is still running then
/// can no longer be recorded (the runtime is about to go away) and is counted as lost, with a
/// warning.
pub fn finish_outstanding() {
    let start = Instant::now();
    harvest_all();
    while PENDING.load(Ordering::Acquire) > 0 && start.elapsed() < SHUTDOWN_WAIT {
        std::thread::sleep(HARVEST_PERIOD);
        harvest_all();
    }
    if PENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        for q in live_queues() {
            discard(q, "the runtime shut down or the application exited");
        }
    });
}

/// Drops the dispatches still pending on `q`, which will never be harvested, counting them as
/// lost and saying so. Their signals are left alone (the GPU may still complete them).
pub(super) fn discard(q: &QueueState, why: &str) {
    let (first, dropped, tokens) = {
        let mut ledger = q.ledger();
        let n = ledger.queue.len() as u64;
        let tokens: Vec<u64> = ledger
            .queue
            .drain(..)
            .filter_map(|p| p.instrumented.map(|i| i.token))
            .collect();
        (ledger.next - n, n, tokens)
    };
    if let Some(instrument) = installed() {
        tokens.into_iter().for_each(|t| instrument.discarded(t));
    }
    if dropped == 0 {
        return;
    }
    // Harvests waiting for completeness must not wait for these.
    for seq in first..first + dropped {
        q.complete(seq);
    }
    PENDING.fetch_sub(dropped as usize, Ordering::AcqRel);
    sink::lost(LossCause::Unfinished, dropped);
    sink::warn(WarningKind::Unfinished, unfinished_text(dropped, why));
}

/// The warning for `dropped` dispatches still pending when `why` happened.
fn unfinished_text(dropped: u64, why: &str) -> String {
    let (dispatches, they) = if dropped == 1 {
        ("1 kernel dispatch".to_owned(), "it has")
    } else {
        (format!("{dropped} kernel dispatches"), "they have")
    };
    format!(
        "{dispatches} had not finished when {why}; {they} no record (make the application wait \
         for its kernels before it exits)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::KernelDispatchRecord;

    #[test]
    fn discarded_dispatches_do_not_hold_back_waiters() {
        let q = QueueState::new(0, 0, 0);
        for seq in 0..3 {
            let mut ledger = q.ledger();
            ledger.next += 1;
            ledger.queue.push_back(Pending {
                record: KernelDispatchRecord {
                    dispatch_id: seq,
                    grid: [1; 3],
                    workgroup: [1; 3],
                    ..Default::default()
                },
                signal: 0,
                seq,
                instrumented: None,
            });
        }
        PENDING.fetch_add(3, Ordering::AcqRel);
        // 0 was claimed and recorded; 1 and 2 never finish.
        q.ledger().queue.pop_front();
        PENDING.fetch_sub(1, Ordering::AcqRel);
        q.complete(0);
        discard(&q, "a test dropped them");
        assert!(q.ledger().queue.is_empty());
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        let start = Instant::now();
        q.wait_completed(q.ledger().next);
        assert!(start.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn the_unfinished_warning_counts_in_words() {
        assert_eq!(
            unfinished_text(1, "the queue was destroyed"),
            "1 kernel dispatch had not finished when the queue was destroyed; it has no record \
             (make the application wait for its kernels before it exits)"
        );
        assert!(
            unfinished_text(2, "x")
                .starts_with("2 kernel dispatches had not finished when x; they have no record")
        );
    }
}
