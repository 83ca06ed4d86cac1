//! The intercepted queues' state: one [`QueueState`] per queue (where its doorbell is, who
//! enqueued each packet, its pending dispatches and its completion ring), found through
//! [`MAX_QUEUES`] lock-free slots. The replaced `hsa_queue_create` / `hsa_queue_destroy` that
//! fill and empty the slots are in `intercept`; this module uses no other part of `dispatch`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use trace_records::KernelDispatchRecord;

/// Packets whose correlation is remembered per queue (by packet index modulo this).
pub(super) const CORRELATION_RING: usize = 4096;
/// Claimed dispatches whose completion is tracked per queue (by sequence number modulo this):
/// a harvest never claims a dispatch this far ahead of the completed prefix.
pub(super) const DONE_RING: usize = 1024;
/// Pending dispatches a queue has room for before its list grows (growing allocates).
const PENDING_CAPACITY: usize = 256;
/// Intercepted queues tracked at once.
pub(super) const MAX_QUEUES: usize = 64;

/// One intercepted queue: where its doorbell is, and who enqueued each packet.
pub(super) struct QueueState {
    pub(super) agent: u64,
    pub(super) agent_node: u32,
    pub(super) queue_id: u64,
    pub(super) rung: AtomicU64,
    /// (correlation id, thread id) by packet index.
    pub(super) correlations: Box<[(AtomicU64, AtomicU64)]>,
    /// Dispatches forwarded and not yet claimed by a harvest, in queue order. Held only for
    /// pushes, peeks and pops, never across a call into the runtime.
    pending: Mutex<Ledger>,
    /// By sequence number modulo [`DONE_RING`]: the sequence number + 1 once that dispatch's
    /// record was emitted (or counted lost).
    done: Box<[AtomicU64]>,
    /// Every dispatch with a lower sequence number has been emitted or counted lost.
    pub(super) completed: AtomicU64,
}

/// The pending dispatches of a queue.
pub(super) struct Ledger {
    pub(super) queue: VecDeque<Pending>,
    /// The sequence number of the next dispatch forwarded on the queue.
    pub(super) next: u64,
}

impl QueueState {
    pub(super) fn new(agent: u64, agent_node: u32, queue_id: u64) -> Self {
        QueueState {
            agent,
            agent_node,
            queue_id,
            rung: AtomicU64::new(0),
            correlations: (0..CORRELATION_RING)
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
            pending: Mutex::new(Ledger {
                queue: VecDeque::with_capacity(PENDING_CAPACITY),
                next: 0,
            }),
            done: (0..DONE_RING).map(|_| AtomicU64::new(0)).collect(),
            completed: AtomicU64::new(0),
        }
    }

    pub(super) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // The ledger is consistent even if a holder panicked (it only pushes and pops).
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks dispatch `seq` as recorded and advances the completed prefix as far as it goes
    /// (whichever thread finishes the oldest outstanding one carries the others along).
    pub(super) fn complete(&self, seq: u64) {
        // SeqCst throughout: of two threads completing neighbours at once, at least one sees
        // the other's mark, so the prefix never stops short.
        self.done[seq as usize % DONE_RING].store(seq + 1, Ordering::SeqCst);
        let mut c = self.completed.load(Ordering::SeqCst);
        while self.done[c as usize % DONE_RING].load(Ordering::SeqCst) == c + 1 {
            match self
                .completed
                .compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => c += 1,
                Err(now) => c = now,
            }
        }
    }

    /// Waits until every dispatch before `bound` is recorded, at most [`COMPLETION_WAIT`] (the
    /// threads recording them are only reading a time and appending a record).
    pub(super) fn wait_completed(&self, bound: u64) {
        let start = Instant::now();
        let mut spins = 0u32;
        while self.completed.load(Ordering::SeqCst) < bound {
            if start.elapsed() > COMPLETION_WAIT {
                return;
            }
            spins += 1;
            if spins < 128 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
}

/// A dispatch forwarded with the tool's completion signal, until it is harvested.
pub(super) struct Pending {
    pub(super) record: KernelDispatchRecord,
    /// The kernel's completion signal (its dispatch time is read from it).
    pub(super) signal: u64,
    /// Its place in its queue's order.
    pub(super) seq: u64,
    /// The instrument's packets around it, if any.
    pub(super) instrumented: Option<Instrumented>,
}

/// An instrumented dispatch: the instrument's token, and the signal of its last packet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Instrumented {
    pub(super) token: u64,
    /// Completes when everything injected has run (the kernel's signal without after packets).
    pub(super) done: u64,
}

impl Pending {
    /// The signal that says the dispatch and everything injected with it has run.
    pub(super) fn done_signal(&self) -> u64 {
        self.instrumented.map_or(self.signal, |i| i.done)
    }
}

/// How long a harvest waits for records other threads are emitting.
pub(super) const COMPLETION_WAIT: Duration = Duration::from_secs(1);

/// Dispatches pending over all queues.
pub(super) static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Doorbell signal handles of intercepted queues (0 = free), for a lock-free check in the
/// signal-store wrappers, with their queue states.
pub(super) static DOORBELLS: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];
pub(super) static QUEUES: [AtomicUsize; MAX_QUEUES] = [const { AtomicUsize::new(0) }; MAX_QUEUES];

/// The states of the queues currently intercepted (a destroyed queue is harvested and leaves
/// the slots in `hsa_queue_destroy`).
pub(super) fn live_queues() -> impl Iterator<Item = &'static QueueState> {
    QUEUES.iter().filter_map(|slot| {
        let p = slot.load(Ordering::Acquire);
        // SAFETY: queue states are leaked (never freed) once published.
        (p != 0).then(|| unsafe { &*(p as *const QueueState) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_completed_prefix_waits_for_the_oldest_and_then_carries_the_rest() {
        let q = QueueState::new(0, 0, 0);
        q.complete(1);
        q.complete(2);
        assert_eq!(
            q.completed.load(Ordering::SeqCst),
            0,
            "0 is still outstanding"
        );
        q.complete(0);
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        q.complete(4);
        assert_eq!(q.completed.load(Ordering::SeqCst), 3);
        let start = Instant::now();
        q.wait_completed(3);
        assert!(
            start.elapsed() < Duration::from_millis(100),
            "already complete"
        );
        q.complete(3);
        assert_eq!(q.completed.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn concurrent_claimers_complete_every_dispatch_and_waiters_see_it() {
        const TOTAL: u64 = 20_000;
        let q = QueueState::new(0, 0, 0);
        let next = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (q, next) = (&q, &next);
                s.spawn(move || {
                    loop {
                        // Claims in order, never a ring's length ahead of the prefix (as
                        // `harvest` does); finishing order varies between threads.
                        let seq = next.load(Ordering::SeqCst);
                        if seq >= TOTAL {
                            return;
                        }
                        if seq >= q.completed.load(Ordering::SeqCst) + DONE_RING as u64
                            || next
                                .compare_exchange(seq, seq + 1, Ordering::SeqCst, Ordering::SeqCst)
                                .is_err()
                        {
                            std::hint::spin_loop();
                            continue;
                        }
                        if seq % 7 == t {
                            std::thread::yield_now();
                        }
                        q.complete(seq);
                    }
                });
            }
            s.spawn(|| {
                let start = Instant::now();
                q.wait_completed(TOTAL);
                assert_eq!(q.completed.load(Ordering::SeqCst), TOTAL);
                assert!(start.elapsed() < COMPLETION_WAIT);
            });
        });
        assert_eq!(q.completed.load(Ordering::SeqCst), TOTAL);
    }
}
