//! Counted dispatches that shared the GPU with a kernel of another queue: SQ and GRBM counters
//! count for the whole GPU, so their values include that kernel's work.

use std::collections::HashMap;

use trace_records::KernelDispatchRecord;

use super::evaluation::Counted;

/// One queue's dispatches: (agent, queue), sorted start times, the running maximum of the ends.
type Timeline = ((u32, u64), Vec<u64>, Vec<u64>);

/// The ids of the counted dispatches whose [start, end] overlaps a dispatch of another queue on
/// the same agent (`all`: every dispatch of the process). O(n log n) per queue.
pub fn overlapping(all: &[KernelDispatchRecord], counted: &[Counted]) -> Vec<u64> {
    // Per (agent, queue): start times sorted, with the running maximum of the ends.
    let mut queues: HashMap<(u32, u64), Vec<(u64, u64)>> = HashMap::new();
    for d in all.iter().filter(|d| d.end > d.start) {
        queues
            .entry((d.agent_node_id, d.queue_id))
            .or_default()
            .push((d.start, d.end));
    }
    if queues.len() < 2 {
        return Vec::new();
    }
    let timelines: Vec<Timeline> = queues
        .into_iter()
        .map(|(key, mut spans)| {
            spans.sort_unstable();
            let starts = spans.iter().map(|s| s.0).collect();
            let max_end = spans
                .iter()
                .scan(0, |m, s| {
                    *m = s.1.max(*m);
                    Some(*m)
                })
                .collect();
            (key, starts, max_end)
        })
        .collect();
    counted
        .iter()
        .map(|c| &c.dispatch)
        .filter(|d| d.end > d.start)
        .filter(|d| {
            timelines.iter().any(|((agent, queue), starts, max_end)| {
                if *agent != d.agent_node_id || *queue == d.queue_id {
                    return false;
                }
                // Of the spans starting before `d` ends, does any end after it starts?
                let n = starts.partition_point(|&s| s < d.end);
                n > 0 && max_end[n - 1] > d.start
            })
        })
        .map(|d| d.dispatch_id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hygiene::DispatchKey;

    fn dispatch(id: u64, queue: u64, start: u64, end: u64) -> KernelDispatchRecord {
        KernelDispatchRecord {
            dispatch_id: id,
            queue_id: queue,
            agent_node_id: 1,
            start,
            end,
            ..Default::default()
        }
    }

    fn counted(d: KernelDispatchRecord) -> Counted {
        Counted {
            dispatch: d,
            key: DispatchKey {
                kernel: String::new(),
                ordinal: 0,
                grid: [1; 3],
                workgroup: [1; 3],
            },
            outcomes: Vec::new(),
            raw_zero: false,
        }
    }

    #[test]
    fn only_kernels_of_other_queues_that_overlap_the_window_are_reported() {
        let all = [
            dispatch(1, 1, 100, 200),
            dispatch(2, 1, 200, 300), // same queue, touching: never an overlap
            dispatch(3, 2, 250, 260), // inside 2's window
            dispatch(4, 2, 50, 120),  // overlaps 1's start
            dispatch(5, 1, 400, 500), // alone
            dispatch(6, 2, 500, 600), // starts when 5 ends: no overlap
            dispatch(7, 3, 1000, 900), // never ran (end < start): ignored
        ];
        let c: Vec<Counted> = [0, 1, 4].iter().map(|&i| counted(all[i])).collect();
        assert_eq!(overlapping(&all, &c), [1, 2]);
        // Another agent's kernels do not count.
        let mut other_agent = all;
        other_agent[2].agent_node_id = 2;
        other_agent[3].agent_node_id = 2;
        assert_eq!(overlapping(&other_agent, &c), Vec::<u64>::new());
        // One queue: nothing to compare.
        assert!(overlapping(&all[..2], &c).is_empty());
    }

    #[test]
    fn a_long_kernel_of_another_queue_is_found_even_if_it_started_long_before() {
        let mut all = vec![dispatch(1, 2, 0, 10_000)];
        all.extend((0..100).map(|k| dispatch(10 + k, 2, 20 + k * 10, 25 + k * 10)));
        let late = dispatch(500, 1, 9_000, 9_100);
        all.push(late);
        assert_eq!(overlapping(&all, &[counted(late)]), [500]);
        let after = dispatch(501, 1, 10_000, 10_100);
        all.push(after);
        assert!(overlapping(&all, &[counted(after)]).is_empty());
    }
}
