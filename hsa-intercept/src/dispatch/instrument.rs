//! The seam for per-dispatch instruments (hardware counters now, thread trace next): packets
//! before and after a kernel dispatch, and a call once everything it injected has finished.
//!
//! When the packet handler rewrites a kernel dispatch it asks the installed [`Instrument`]
//! whether to instrument it, with what it knows at that moment ([`DispatchInfo`]: the agent,
//! the queue, the kernel's id and name, the dispatch record so far). An instrument that says
//! yes fills an [`Injection`] and returns a token of its own. The handler then forwards, in
//! order: the before packets, the kernel (its barrier bit set, so it waits for them), the after
//! packets (the last one given a completion signal of the tool's), and finally the barrier-AND
//! that completes the application's own signal. The application therefore sees its kernel
//! complete only once the instrument's packets have run too: when its wait returns, the
//! instrument's results are recorded as promptly as the dispatch's own record.
//!
//! The harvest calls [`Instrument::completed`] after the dispatch's record is emitted, once the
//! last after packet has completed; [`Instrument::discarded`] when the dispatch will never be
//! harvested (its queue was destroyed, the process is exiting), in which case the GPU may still
//! be using whatever the packets point at.

use std::sync::OnceLock;
use trace_records::KernelDispatchRecord;

/// Packets an instrument may put before one dispatch.
pub const MAX_BEFORE: usize = 3;
/// Packets an instrument may put after one dispatch.
pub const MAX_AFTER: usize = 3;

/// What the packet handler knows of a kernel dispatch when it rewrites it.
#[derive(Debug)]
pub struct DispatchInfo<'a> {
    /// The HSA agent the queue belongs to.
    pub agent: u64,
    /// Its driver (KMT) node id.
    pub agent_node: u32,
    /// The kernel's name as its symbol has it (mangled), if the symbol is known.
    pub kernel_name: Option<&'a str>,
    /// The dispatch record so far (no timestamps yet).
    pub record: &'a KernelDispatchRecord,
}

/// The packets one instrument puts around one dispatch.
#[derive(Debug, Clone)]
pub struct Injection {
    before: [[u8; 64]; MAX_BEFORE],
    before_len: usize,
    after: [[u8; 64]; MAX_AFTER],
    after_len: usize,
}

impl Default for Injection {
    fn default() -> Self {
        Injection {
            before: [[0; 64]; MAX_BEFORE],
            before_len: 0,
            after: [[0; 64]; MAX_AFTER],
            after_len: 0,
        }
    }
}

impl Injection {
    /// Adds a packet before the dispatch; `false` (nothing added) when [`MAX_BEFORE`] are there.
    pub fn before(&mut self, packet: [u8; 64]) -> bool {
        push(&mut self.before, &mut self.before_len, packet)
    }

    /// Adds a packet after the dispatch; `false` (nothing added) when [`MAX_AFTER`] are there.
    /// The last one's completion signal is replaced by the tool's.
    pub fn after(&mut self, packet: [u8; 64]) -> bool {
        push(&mut self.after, &mut self.after_len, packet)
    }

    /// The packets before the dispatch.
    pub fn before_packets(&self) -> &[[u8; 64]] {
        &self.before[..self.before_len]
    }

    /// The packets after the dispatch.
    pub fn after_packets(&self) -> &[[u8; 64]] {
        &self.after[..self.after_len]
    }

    /// Sets the completion signal of the last after packet (`false` if there is none).
    pub(super) fn complete_last_with(&mut self, signal: u64) -> bool {
        let Some(last) = self.after[..self.after_len].last_mut() else {
            return false;
        };
        last[56..64].copy_from_slice(&signal.to_le_bytes());
        true
    }
}

fn push<const N: usize>(list: &mut [[u8; 64]; N], len: &mut usize, packet: [u8; 64]) -> bool {
    if *len == N {
        return false;
    }
    list[*len] = packet;
    *len += 1;
    true
}

/// Something that runs packets around kernel dispatches. Every method is called from threads
/// of the runtime or of the application and must neither block nor panic (a panic is caught
/// and the dispatch goes on uninstrumented or unreported).
pub trait Instrument: Send + Sync {
    /// Whether to instrument this dispatch: if so, adds its packets to `injection` and returns
    /// a token that identifies the dispatch to the calls below. Runs on the runtime's
    /// interceptor thread, before the packets reach the hardware queue.
    fn inject(&self, dispatch: &DispatchInfo<'_>, injection: &mut Injection) -> Option<u64>;

    /// Every packet of the dispatch has run; `record` is the dispatch's record as emitted
    /// (its timestamps 0 if its time could not be read and it was counted lost).
    fn completed(&self, token: u64, record: &KernelDispatchRecord);

    /// The dispatch will never be harvested; the GPU may still be running its packets.
    fn discarded(&self, token: u64);

    /// In a forked child: forget the parent's dispatches (touching no lock another thread may
    /// have held at the fork).
    fn after_fork_in_child(&self);
}

/// Two instruments around the same dispatches (counters and thread trace): the first's
/// packets go nearer the kernel (its before packets last, its after packets first), so the
/// second's window encloses the first's. A dispatch is instrumented by whichever of the two
/// says yes; each gets back its own token.
pub struct Pair {
    inner: &'static dyn Instrument,
    outer: &'static dyn Instrument,
    /// By pair token: the inner and outer tokens.
    tokens: std::sync::Mutex<std::collections::HashMap<u64, Tokens>>,
    next: std::sync::atomic::AtomicU64,
}

/// The inner and outer instruments' tokens of one dispatch.
type Tokens = (Option<u64>, Option<u64>);

impl Pair {
    /// `inner`'s packets nearest the kernel, `outer`'s around them.
    pub fn new(inner: &'static dyn Instrument, outer: &'static dyn Instrument) -> Self {
        Pair {
            inner,
            outer,
            tokens: std::sync::Mutex::new(std::collections::HashMap::new()),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }

    fn take(&self, token: u64) -> Option<Tokens> {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token)
    }
}

impl Instrument for Pair {
    fn inject(&self, dispatch: &DispatchInfo<'_>, injection: &mut Injection) -> Option<u64> {
        let mut outer = Injection::default();
        let mut inner = Injection::default();
        let o = self.outer.inject(dispatch, &mut outer);
        let i = self.inner.inject(dispatch, &mut inner);
        if o.is_none() && i.is_none() {
            return None;
        }
        let fits = outer.before_len + inner.before_len <= MAX_BEFORE
            && outer.after_len + inner.after_len <= MAX_AFTER;
        if !fits {
            // Cannot happen with the tool's instruments (2 + 3 packets); keep the inner only.
            if let Some(t) = o {
                self.outer.discarded(t);
            }
            return i
                .map(|t| self.remember(Some(t), None, &inner, &Injection::default(), injection));
        }
        Some(self.remember(i, o, &inner, &outer, injection))
    }

    fn completed(&self, token: u64, record: &KernelDispatchRecord) {
        if let Some((i, o)) = self.take(token) {
            if let Some(t) = i {
                self.inner.completed(t, record);
            }
            if let Some(t) = o {
                self.outer.completed(t, record);
            }
        }
    }

    fn discarded(&self, token: u64) {
        if let Some((i, o)) = self.take(token) {
            if let Some(t) = i {
                self.inner.discarded(t);
            }
            if let Some(t) = o {
                self.outer.discarded(t);
            }
        }
    }

    fn after_fork_in_child(&self) {
        self.inner.after_fork_in_child();
        self.outer.after_fork_in_child();
        // The parent's tokens are never completed in the child: their entries stay unused
        // (the map's lock, which another thread may have held at the fork, is not touched).
    }
}

impl Pair {
    fn remember(
        &self,
        i: Option<u64>,
        o: Option<u64>,
        inner: &Injection,
        outer: &Injection,
        into: &mut Injection,
    ) -> u64 {
        for p in outer.before_packets().iter().chain(inner.before_packets()) {
            into.before(*p);
        }
        for p in inner.after_packets().iter().chain(outer.after_packets()) {
            into.after(*p);
        }
        let token = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, (i, o));
        token
    }
}

static INSTRUMENT: OnceLock<&'static dyn Instrument> = OnceLock::new();

/// `--att-serialize-all`: every kernel dispatch gets the barrier bit, not only instrumented ones.
static SERIALIZE_ALL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Serialises every dispatch of each queue (see [`SERIALIZE_ALL`]).
pub fn serialize_all() {
    SERIALIZE_ALL.store(true, std::sync::atomic::Ordering::Release);
}

/// Whether every dispatch is serialised.
pub(super) fn serializes_all() -> bool {
    SERIALIZE_ALL.load(std::sync::atomic::Ordering::Acquire)
}

/// Installs the instrument (the first one wins; `false` if one was installed already). Install
/// it before the application creates queues: dispatches are instrumented from then on.
pub fn install(instrument: &'static dyn Instrument) -> bool {
    INSTRUMENT.set(instrument).is_ok()
}

/// The installed instrument.
pub(super) fn installed() -> Option<&'static dyn Instrument> {
    INSTRUMENT.get().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instrument that adds `before` and `after` packets filled with its tag and records
    /// the calls it gets.
    struct Fake {
        tag: u8,
        before: usize,
        after: usize,
        says_yes: bool,
        calls: std::sync::Mutex<Vec<String>>,
    }

    impl Instrument for Fake {
        fn inject(&self, _: &DispatchInfo<'_>, i: &mut Injection) -> Option<u64> {
            if !self.says_yes {
                return None;
            }
            for k in 0..self.before {
                i.before([self.tag * 10 + k as u8; 64]);
            }
            for k in 0..self.after {
                i.after([self.tag * 10 + 5 + k as u8; 64]);
            }
            Some(u64::from(self.tag) * 100)
        }
        fn completed(&self, token: u64, _: &KernelDispatchRecord) {
            self.calls
                .lock()
                .unwrap()
                .push(format!("completed {token}"));
        }
        fn discarded(&self, token: u64) {
            self.calls
                .lock()
                .unwrap()
                .push(format!("discarded {token}"));
        }
        fn after_fork_in_child(&self) {}
    }

    fn fake(tag: u8, before: usize, after: usize, says_yes: bool) -> &'static Fake {
        Box::leak(Box::new(Fake {
            tag,
            before,
            after,
            says_yes,
            calls: std::sync::Mutex::new(Vec::new()),
        }))
    }

    #[test]
    fn a_pair_nests_the_inner_window_in_the_outer_and_routes_each_token_back() {
        let (counters, trace) = (fake(1, 1, 2, true), fake(2, 1, 1, true));
        let pair = Pair::new(counters, trace);
        let record = KernelDispatchRecord::default();
        let info = DispatchInfo {
            agent: 1,
            agent_node: 1,
            kernel_name: None,
            record: &record,
        };
        let mut i = Injection::default();
        let token = pair.inject(&info, &mut i).unwrap();
        let first = |p: &[[u8; 64]]| p.iter().map(|p| p[0]).collect::<Vec<u8>>();
        assert_eq!(
            first(i.before_packets()),
            [20, 10],
            "outer begin, then inner start"
        );
        assert_eq!(
            first(i.after_packets()),
            [15, 16, 25],
            "inner read/stop, then outer end"
        );
        pair.completed(token, &record);
        assert_eq!(*counters.calls.lock().unwrap(), ["completed 100"]);
        assert_eq!(*trace.calls.lock().unwrap(), ["completed 200"]);
        pair.completed(token, &record);
        assert_eq!(
            counters.calls.lock().unwrap().len(),
            1,
            "a token completes once"
        );

        // Only one of the two instruments the dispatch: only it hears of it.
        let (counters, trace) = (fake(1, 1, 2, false), fake(2, 1, 1, true));
        let pair = Pair::new(counters, trace);
        let mut i = Injection::default();
        let token = pair.inject(&info, &mut i).unwrap();
        assert_eq!(first(i.before_packets()), [20]);
        pair.discarded(token);
        assert!(counters.calls.lock().unwrap().is_empty());
        assert_eq!(*trace.calls.lock().unwrap(), ["discarded 200"]);
        let (counters, trace) = (fake(1, 1, 2, false), fake(2, 1, 1, false));
        assert!(
            Pair::new(counters, trace)
                .inject(&info, &mut Injection::default())
                .is_none()
        );
    }

    #[test]
    fn an_injection_holds_at_most_its_capacity_and_completes_the_last_after_packet() {
        let mut i = Injection::default();
        assert!(!i.complete_last_with(7), "no after packet yet");
        for k in 0..MAX_BEFORE {
            assert!(i.before([k as u8; 64]));
        }
        assert!(!i.before([9; 64]));
        assert_eq!(i.before_packets().len(), MAX_BEFORE);
        assert!(i.after([1; 64]) && i.after([2; 64]));
        assert!(i.complete_last_with(0x1234));
        let after = i.after_packets();
        assert_eq!(after.len(), 2);
        assert_eq!(after[0], [1; 64], "only the last is changed");
        assert_eq!(
            u64::from_le_bytes(after[1][56..64].try_into().unwrap()),
            0x1234
        );
        assert_eq!(after[1][..56], [2; 56]);
    }
}
