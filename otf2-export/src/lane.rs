//! The events of one location, in the order an OTF2 location needs them: time order, and
//! nested where the records nest.
//!
//! Records are given in (start, longest first) order ([`Lane::enter`] takes one at a time);
//! each one's `Enter` is written at once and its `Leave` is held until no later event can
//! precede it. At one timestamp: the leaves of records that lasted are written before the
//! enters of records starting there (one call ending as the next starts), enters in the order
//! given (the longer, enclosing one first), and leaves innermost first — the record entered
//! last among those ending together; a zero-length record leaves after the enters at its
//! timestamp, so it nests inside a record starting there with it. Records that overlap
//! without nesting (device timestamps can) keep their times; their events stay in time order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An event of a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A region is entered at `ts`.
    Enter {
        /// Timestamp, ns.
        ts: u64,
        /// The region.
        region: u32,
    },
    /// A region is left at `ts`.
    Leave {
        /// Timestamp, ns.
        ts: u64,
        /// The region.
        region: u32,
    },
}

impl Event {
    /// The event's timestamp.
    pub fn ts(self) -> u64 {
        match self {
            Event::Enter { ts, .. } | Event::Leave { ts, .. } => ts,
        }
    }
}

/// A leave not yet written: ordered by time, then records that lasted before zero-length
/// ones, then the latest entered first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    ts: u64,
    zero_length: bool,
    entered: Reverse<u64>,
    region: u32,
}

/// One location's pending leaves and its event count.
#[derive(Debug, Default)]
pub struct Lane {
    pending: BinaryHeap<Reverse<Pending>>,
    entered: u64,
    events: u64,
}

impl Lane {
    /// A lane without events.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes, through `out`, the leaves due before a record `[start, end]` of `region`
    /// starts, then its enter, and holds its leave. Records must come in (start, longest
    /// first) order; `end >= start`.
    pub fn enter<E>(
        &mut self,
        start: u64,
        end: u64,
        region: u32,
        out: &mut impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        while let Some(Reverse(top)) = self.pending.peek() {
            if top.ts < start || (top.ts == start && !top.zero_length) {
                let top = *top;
                self.pending.pop();
                out(Event::Leave {
                    ts: top.ts,
                    region: top.region,
                })?;
            } else {
                break;
            }
        }
        out(Event::Enter { ts: start, region })?;
        self.entered += 1;
        self.pending.push(Reverse(Pending {
            ts: end,
            zero_length: end == start,
            entered: Reverse(self.entered),
            region,
        }));
        self.events += 2;
        Ok(())
    }

    /// Writes every leave still held.
    pub fn finish<E>(&mut self, out: &mut impl FnMut(Event) -> Result<(), E>) -> Result<(), E> {
        while let Some(Reverse(top)) = self.pending.pop() {
            out(Event::Leave {
                ts: top.ts,
                region: top.region,
            })?;
        }
        Ok(())
    }

    /// Events given so far (an enter and a leave per record).
    pub fn events(&self) -> u64 {
        self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(records: &[(u64, u64, u32)]) -> Vec<Event> {
        let mut sorted = records.to_vec();
        sorted.sort_by_key(|&(s, e, _)| (s, Reverse(e)));
        let mut lane = Lane::new();
        let mut out = Vec::new();
        let mut push = |e| -> Result<(), ()> {
            out.push(e);
            Ok(())
        };
        for (s, e, r) in sorted {
            lane.enter(s, e, r, &mut push).unwrap();
        }
        lane.finish(&mut push).unwrap();
        assert_eq!(lane.events() as usize, out.len());
        out
    }

    fn enter(ts: u64, region: u32) -> Event {
        Event::Enter { ts, region }
    }
    fn leave(ts: u64, region: u32) -> Event {
        Event::Leave { ts, region }
    }

    #[test]
    fn nested_calls_at_equal_timestamps_nest() {
        // [10,20] holds [10,15] (same start) and [15,20] (same end); the zero-length [20,20]
        // starts after both leave, inside [20,30], which starts with it.
        let got = run(&[
            (10, 20, 1),
            (10, 15, 2),
            (15, 20, 3),
            (20, 20, 4),
            (20, 30, 5),
        ]);
        assert_eq!(
            got,
            [
                enter(10, 1),
                enter(10, 2),
                leave(15, 2),
                enter(15, 3),
                leave(20, 3),
                leave(20, 1),
                enter(20, 5),
                enter(20, 4),
                leave(20, 4),
                leave(30, 5),
            ]
        );
    }

    #[test]
    fn zero_length_records_at_one_time_nest_in_order() {
        let got = run(&[(5, 5, 1), (5, 5, 2)]);
        assert_eq!(got, [enter(5, 1), enter(5, 2), leave(5, 2), leave(5, 1)]);
    }

    #[test]
    fn overlapping_records_keep_their_times_in_time_order() {
        let got = run(&[(10, 20, 1), (15, 25, 2)]);
        assert_eq!(
            got,
            [enter(10, 1), enter(15, 2), leave(20, 1), leave(25, 2)]
        );
    }

    fn well_nested(records: &[(u64, u64, u32)]) -> bool {
        records.iter().all(|a| {
            records.iter().all(|b| {
                // Disjoint, or one within the other.
                a.1 <= b.0 || b.1 <= a.0 || (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1)
            })
        })
    }

    proptest! {
        #[test]
        fn events_are_in_time_order_balanced_and_nested_where_records_nest(
            raw in proptest::collection::vec((0u64..40, 0u64..15), 0..24)
        ) {
            let records: Vec<(u64, u64, u32)> = raw
                .iter()
                .enumerate()
                .map(|(i, &(s, d))| (s, s + d, i as u32))
                .collect();
            let events = run(&records);
            prop_assert_eq!(events.len(), 2 * records.len());
            prop_assert!(events.windows(2).all(|w| w[0].ts() <= w[1].ts()));
            // Every region entered once, left once, after its enter, at its own times.
            for &(s, e, r) in &records {
                let i = events.iter().position(|&x| x == enter(s, r));
                let j = events.iter().position(|&x| x == leave(e, r));
                prop_assert!(matches!((i, j), (Some(i), Some(j)) if i < j));
            }
            // Where the records nest, the leaves are last-in first-out.
            if well_nested(&records) {
                let mut stack = Vec::new();
                for ev in &events {
                    match *ev {
                        Event::Enter { region, .. } => stack.push(region),
                        Event::Leave { region, .. } => prop_assert_eq!(stack.pop(), Some(region)),
                    }
                }
            }
        }
    }
}
