//! Where a process's records go in the archive: its location groups and locations, named and
//! numbered as upstream's writer names and numbers them (the crate text lists them).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use trace_export::view::ProcessView;

/// What a location is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationKind {
    /// A host thread (`OTF2_LOCATION_TYPE_CPU_THREAD`).
    Thread,
    /// A device stream: copies, memory operations or a queue's kernels
    /// (`OTF2_LOCATION_TYPE_ACCELERATOR_STREAM`).
    Stream,
}

/// One location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Its id in the archive (from 1, archive-wide).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// What it is.
    pub kind: LocationKind,
    /// Its location group's id.
    pub group: u32,
}

/// One location group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Its id in the archive.
    pub id: u32,
    /// Its name: the executable for the process, the agent's name for an agent.
    pub name: String,
    /// An agent's group (`ACCELERATOR`), else the process's (`PROCESS`).
    pub accelerator: bool,
}

/// A process's groups and locations, and which location each record goes to.
#[derive(Debug)]
pub struct ProcessLayout {
    /// The process's group first, then one per agent.
    pub groups: Vec<Group>,
    /// Threads first, then copy, memory-operation and queue locations.
    pub locations: Vec<Location>,
    threads: HashMap<u32, usize>,
    copies: HashMap<(u32, u32), usize>,
    allocations: HashMap<(u32, Option<u32>), usize>,
    dispatches: HashMap<(u32, u32, u64), usize>,
}

/// An agent as location names show it: its type and `<label>-<index>` (`GPU`, `Agent-1`).
fn agent_words(view: &ProcessView<'_>, node_id: u32) -> (&'static str, String) {
    let label = view.labels.label(node_id);
    let (name, index) = label.rsplit_once(' ').unwrap_or((&label, ""));
    let kind = view.agent(node_id).map_or("UNK", |a| a.kind.csv_name());
    (kind, format!("{name}-{index}"))
}

impl ProcessLayout {
    /// The layout of `view`'s process, whose executable is `exe`: group ids from
    /// `*next_group`, location ids from `*next_location` (both advanced past those used).
    pub fn new(
        view: &ProcessView<'_>,
        exe: &str,
        next_group: &mut u32,
        next_location: &mut u64,
    ) -> Self {
        let process_group = *next_group;
        *next_group += 1;
        let mut groups = vec![Group {
            id: process_group,
            name: exe.to_owned(),
            accelerator: false,
        }];
        let mut agent_group = HashMap::new();
        for a in view.agents() {
            agent_group.insert(a.node_id, *next_group);
            groups.push(Group {
                id: *next_group,
                name: a.name.clone(),
                accelerator: true,
            });
            *next_group += 1;
        }
        let group_of = |node: u32| agent_group.get(&node).copied().unwrap_or(process_group);

        let t = view.trace;
        let copies: BTreeSet<(u32, u32)> = t
            .copies
            .iter()
            .map(|c| (c.thread_id, c.dst_node_id))
            .collect();
        let allocations: BTreeSet<(u32, Option<u32>)> = t
            .allocations
            .iter()
            .map(|a| (a.thread_id, (a.has_agent != 0).then_some(a.agent_node_id)))
            .collect();
        let dispatches: BTreeSet<(u32, u32, u64)> = t
            .dispatches
            .iter()
            .map(|d| (d.thread_id, d.agent_node_id, d.queue_id))
            .collect();
        let queue_rank: BTreeMap<u64, usize> = dispatches
            .iter()
            .map(|&(_, _, q)| q)
            .collect::<BTreeSet<u64>>()
            .into_iter()
            .enumerate()
            .map(|(n, q)| (q, n))
            .collect();

        let mut layout = ProcessLayout {
            groups,
            locations: Vec::new(),
            threads: HashMap::new(),
            copies: HashMap::new(),
            allocations: HashMap::new(),
            dispatches: HashMap::new(),
        };
        let mut add = |layout: &mut ProcessLayout, name: String, kind, group| {
            layout.locations.push(Location {
                id: *next_location,
                name,
                kind,
                group,
            });
            *next_location += 1;
            layout.locations.len() - 1
        };
        for &tid in &view.threads {
            let i = add(
                &mut layout,
                format!("Thread {tid}"),
                LocationKind::Thread,
                process_group,
            );
            layout.threads.insert(tid, i);
        }
        for (tid, dst) in copies {
            let (kind, agent) = agent_words(view, dst);
            let name = format!("Thread {tid}, Copy to {kind} {agent}");
            let i = add(&mut layout, name, LocationKind::Stream, group_of(dst));
            layout.copies.insert((tid, dst), i);
        }
        for (tid, node) in allocations {
            let (name, group) = match node {
                Some(node) => {
                    let (kind, agent) = agent_words(view, node);
                    (
                        format!("Thread {tid}, Memory Operation at {kind} {agent}"),
                        group_of(node),
                    )
                }
                None => (
                    format!("Thread {tid}, Memory Operation at UNK 0"),
                    process_group,
                ),
            };
            let i = add(&mut layout, name, LocationKind::Stream, group);
            layout.allocations.insert((tid, node), i);
        }
        for (tid, node, queue) in dispatches {
            let (kind, agent) = agent_words(view, node);
            let name = format!(
                "Thread {tid}, Compute on {kind} {agent}, Queue {}",
                queue_rank[&queue]
            );
            let i = add(&mut layout, name, LocationKind::Stream, group_of(node));
            layout.dispatches.insert((tid, node, queue), i);
        }
        layout
    }

    /// The location (index into [`Self::locations`]) of a thread's host events.
    pub fn thread(&self, tid: u32) -> Option<usize> {
        self.threads.get(&tid).copied()
    }

    /// The location of copies issued by `tid` to `dst_node`.
    pub fn copy(&self, tid: u32, dst_node: u32) -> Option<usize> {
        self.copies.get(&(tid, dst_node)).copied()
    }

    /// The location of memory operations of `tid` on `node` (`None`: no agent).
    pub fn allocation(&self, tid: u32, node: Option<u32>) -> Option<usize> {
        self.allocations.get(&(tid, node)).copied()
    }

    /// The location of kernels `tid` enqueued on `queue` of `node`.
    pub fn dispatch(&self, tid: u32, node: u32, queue: u64) -> Option<usize> {
        self.dispatches.get(&(tid, node, queue)).copied()
    }
}
