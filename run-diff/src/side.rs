//! Reading one side of a comparison: every input through `trace_analysis::inputs` (CSV
//! directories, rocpd databases, record directories), each run turned at once into durations
//! per compared item, so a side of many large runs is never held whole.

use crate::Error;
use std::collections::HashMap;
use std::path::PathBuf;
use trace_analysis::inputs;
use trace_analysis::model::{Api, Counters, Process};

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Kernel dispatches, by kernel name, grid and workgroup size.
    Kernel,
    /// API calls, by runtime and function.
    Api,
    /// Memory copies, by direction.
    Copy,
    /// ROCTx ranges, by message.
    Range,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 4] = [Kind::Kernel, Kind::Api, Kind::Copy, Kind::Range];

    /// The section title.
    pub fn title(self) -> &'static str {
        match self {
            Kind::Kernel => "Kernels",
            Kind::Api => "API functions",
            Kind::Copy => "Memory copies",
            Kind::Range => "ROCTx ranges",
        }
    }
}

/// One compared item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Its kind.
    pub kind: Kind,
    /// The kernel, function or range name, or the copy direction.
    pub name: String,
    /// `grid 262144×1×1, workgroup 256×1×1` for kernels, the runtime for API functions, "" else.
    pub detail: String,
}

/// One item's durations on one side.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Every duration of every run (pooled), ns; sorted once the side is read.
    pub durations: Vec<u64>,
    /// Per run where it occurs: its total time in that run, ns.
    pub run_totals: Vec<u64>,
    /// Per run where it occurs: its median duration in that run, ns.
    pub run_medians: Vec<f64>,
}

/// One side, read.
#[derive(Debug, Default)]
pub struct Side {
    /// The inputs as given.
    pub inputs: Vec<PathBuf>,
    /// Runs read (an input of counter passes has several).
    pub runs: usize,
    /// Per item.
    pub samples: HashMap<Key, Samples>,
    /// Per run, its processes reduced to what counters need (dispatches and counter values).
    pub counter_runs: Vec<Vec<Process>>,
    /// How the inputs were read (one line each).
    pub notes: Vec<String>,
}

fn dims(v: [u32; 3]) -> String {
    format!("{}×{}×{}", v[0], v[1], v[2])
}

fn api_name(api: Api) -> &'static str {
    match api {
        Api::Hip => "HIP",
        Api::Hsa => "HSA",
        Api::Marker => "ROCTx",
        Api::Other => "other",
    }
}

/// The durations of one run (all its processes pooled) per item.
pub fn run_durations(processes: &[Process]) -> HashMap<Key, Vec<u64>> {
    let mut out: HashMap<Key, Vec<u64>> = HashMap::new();
    for p in processes {
        let mut calls: HashMap<(u32, Api), Vec<u64>> = HashMap::new();
        for c in &p.calls {
            calls
                .entry((c.name, c.api))
                .or_default()
                .push(c.end.saturating_sub(c.start));
        }
        for ((name, api), d) in calls {
            let key = Key {
                kind: Kind::Api,
                name: p.names.get(name as usize).cloned().unwrap_or_default(),
                detail: api_name(api).to_owned(),
            };
            out.entry(key).or_default().extend(d);
        }
        for d in &p.dispatches {
            let key = Key {
                kind: Kind::Kernel,
                name: d.kernel.clone(),
                detail: format!("grid {}, workgroup {}", dims(d.grid), dims(d.workgroup)),
            };
            out.entry(key)
                .or_default()
                .push(d.end.saturating_sub(d.start));
        }
        for c in &p.copies {
            let key = Key {
                kind: Kind::Copy,
                name: c.direction_name().to_owned(),
                detail: String::new(),
            };
            out.entry(key)
                .or_default()
                .push(c.end.saturating_sub(c.start));
        }
        for m in p.markers.iter().filter(|m| !m.instant) {
            let key = Key {
                kind: Kind::Range,
                name: m.message.clone(),
                detail: String::new(),
            };
            out.entry(key)
                .or_default()
                .push(m.end.saturating_sub(m.start));
        }
    }
    out
}

impl Side {
    /// Reads every input of a side (the first unreadable one stops it all).
    pub fn read(paths: &[PathBuf]) -> Result<Side, Error> {
        let mut side = Side {
            inputs: paths.to_vec(),
            ..Side::default()
        };
        for path in paths {
            let input = inputs::read(path)?;
            for note in input.notes.iter() {
                side.notes.push(format!("{}: {note}", path.display()));
            }
            for run in input.runs {
                side.add_run(run.processes);
            }
        }
        for s in side.samples.values_mut() {
            s.durations.sort_unstable();
        }
        Ok(side)
    }

    /// Adds one run's processes.
    pub fn add_run(&mut self, processes: Vec<Process>) {
        self.runs += 1;
        for (key, mut d) in run_durations(&processes) {
            d.sort_unstable();
            let s = self.samples.entry(key).or_default();
            s.run_totals.push(d.iter().sum());
            s.run_medians.push(crate::stats::median(&d).unwrap_or(0.0));
            // Exactly the room needed: a side's pooled durations are its largest allocation.
            s.durations.reserve_exact(d.len());
            s.durations.extend_from_slice(&d);
        }
        let light: Vec<Process> = processes
            .into_iter()
            .filter(|p| !p.counters.values.is_empty())
            .map(|p| {
                let mut kept = Process::new(p.label);
                kept.pid = p.pid;
                kept.gfx = p.gfx;
                kept.dispatches = p.dispatches;
                kept.counters = Counters { ..p.counters };
                kept
            })
            .collect();
        self.counter_runs.push(light);
    }
}
