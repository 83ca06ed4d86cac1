//! Counter hygiene under WSL2: which read-backs cannot be trusted, and the best estimate of a
//! counter over repeated runs of the same application.
//!
//! Two facts of the platform shape this module:
//!
//! * **Counts are inflated, never deflated.** SQ and GRBM counters count for the whole GPU,
//!   and WDDM time-slices the GPU between its clients, so whatever else ran during a dispatch
//!   is counted with it. The error only ever adds: over several runs of the same dispatch,
//!   the smallest non-zero value is the one closest to the truth ([`estimate`]).
//! * **Some reads are zero for no reason of the kernel's.** All GRBM counters together can
//!   read 0 for the first dispatches of a session (a burst of a few to a few hundred
//!   milliseconds, never later on), and SQ counters show rare isolated zeros (SQ_WAVES = 0
//!   for a dispatch that did run). A derived counter computed from such a read (GPU_UTIL
//!   divides by GRBM_COUNT) is meaningless, so it is reported as *discarded* with the reason,
//!   never as 0 or infinity.
//!
//! The pieces, from one dispatch to a report:
//!
//! 1. [`flags`]: what is wrong with one dispatch's read-back ([`Discard`]);
//! 2. [`CounterPrograms::evaluate`]: every requested counter's value for that dispatch, or why
//!    it was discarded ([`Outcome`]);
//! 3. [`keys`]: which dispatches of different runs are the same dispatch ([`DispatchKey`]);
//! 4. [`estimate`]: one dispatch × counter over the runs ([`Estimate`]), [`contaminated`] when
//!    the runs disagree;
//! 5. [`write_csv`] and [`summary`]: the per-dispatch table and the lines for the terminal.
//!
//! Everything here is a pure function of its arguments; only [`write_csv`] writes, to the
//! writer it is given.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use trace_records::format::fmt_counter_value;

use crate::defs::AgentCounters;
use crate::expr::{Program, ReduceOp};
use crate::pm4::CounterValues;
use crate::{BaseEvent, Block, Error, readback};

/// The base counter whose zero marks an isolated SQ zero.
pub const SQ_WAVES: &str = "SQ_WAVES";

/// Why a value was set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Discard {
    /// The dispatch ran and every GRBM counter it read was 0: a GRBM zero burst (they happen
    /// on the opening dispatches of a session, to all GRBM counters at once).
    GrbmZero,
    /// The dispatch ran and SQ_WAVES read 0: an isolated SQ zero.
    SqZero,
    /// The dispatch started inside the opening window the user asked to discard
    /// (`--pmc-discard-warmup MS`).
    Warmup,
    /// Over repeated runs: this run read 0 where other runs of the same dispatch read a
    /// non-zero value.
    IsolatedZero,
    /// The counter's expression gave a NaN or an infinity.
    NotFinite,
}

impl Discard {
    /// Every kind, in the order reports list them.
    pub const ALL: [Discard; 5] = [
        Discard::GrbmZero,
        Discard::SqZero,
        Discard::IsolatedZero,
        Discard::Warmup,
        Discard::NotFinite,
    ];

    /// A stable name for files (the same as its serde spelling).
    pub fn name(&self) -> &'static str {
        match self {
            Discard::GrbmZero => "grbm-zero",
            Discard::SqZero => "sq-zero",
            Discard::Warmup => "warmup",
            Discard::IsolatedZero => "isolated-zero",
            Discard::NotFinite => "not-finite",
        }
    }

    /// A short explanation for people.
    pub fn reason(&self) -> &'static str {
        match self {
            Discard::GrbmZero => {
                "every GRBM counter read 0 on a dispatch that ran (a GRBM zero burst)"
            }
            Discard::SqZero => "SQ_WAVES read 0 on a dispatch that ran (an isolated SQ zero)",
            Discard::Warmup => "the dispatch started inside the warm-up window asked to be skipped",
            Discard::IsolatedZero => "this run read 0 while other runs of the dispatch did not",
            Discard::NotFinite => "the counter's expression did not give a finite number",
        }
    }

    /// Whether the value was set aside because something read 0 (not for its timing or its
    /// arithmetic).
    pub fn is_zero_read(&self) -> bool {
        matches!(
            self,
            Discard::GrbmZero | Discard::SqZero | Discard::IsolatedZero
        )
    }
}

impl fmt::Display for Discard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the caller knows of a dispatch besides its counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DispatchFacts {
    /// The dispatch ran: its duration was above 0. ([`flags`] also takes SQ_WAVES above 0 as
    /// proof that it ran.)
    pub ran: bool,
    /// It started inside the warm-up window to discard.
    pub in_warmup: bool,
}

/// What is wrong with one dispatch's read-back, in the order of [`Discard::ALL`]; empty when
/// nothing is.
///
/// * [`Discard::GrbmZero`] when at least one GRBM value was read, every GRBM value is 0, and
///   the dispatch ran (by `facts.ran` or by an SQ_WAVES above 0). A dispatch that did not run
///   may well count nothing.
/// * [`Discard::SqZero`] when SQ_WAVES was read (the first entry of that name, the one
///   [`readback::evaluate`] uses), every instance is 0, and `facts.ran`.
/// * [`Discard::Warmup`] when `facts.in_warmup`.
pub fn flags(decoded: &[CounterValues], facts: DispatchFacts) -> Vec<Discard> {
    let sq_waves = decoded.iter().find(|c| c.name == SQ_WAVES);
    let waves_seen = sq_waves.is_some_and(|c| c.values.iter().any(|&v| v != 0));
    let ran = facts.ran || waves_seen;

    let mut grbm = decoded
        .iter()
        .filter(|c| c.event.block == Block::Grbm)
        .flat_map(|c| c.values.iter().copied())
        .peekable();
    let grbm_read = grbm.peek().is_some();
    let grbm_all_zero = grbm.all(|v| v == 0);

    let mut out = Vec::new();
    if ran && grbm_read && grbm_all_zero {
        out.push(Discard::GrbmZero);
    }
    if facts.ran && sq_waves.is_some_and(|c| !c.values.is_empty()) && !waves_seen {
        out.push(Discard::SqZero);
    }
    if facts.in_warmup {
        out.push(Discard::Warmup);
    }
    out
}

/// One requested counter's value for one dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The counter, as requested.
    pub name: String,
    /// Its value summed over all its elements (as `counter_collection.csv` has it), or why
    /// there is none.
    pub value: Result<f64, Discard>,
}

#[derive(Debug, Clone, PartialEq)]
struct Prepared {
    name: String,
    program: Program,
    /// Any input is a GRBM counter.
    uses_grbm: bool,
    /// SQ_WAVES is an input.
    uses_sq_waves: bool,
}

/// The requested counters of an agent, each compiled on its own so that each knows which base
/// counters it depends on (and so which bad reads spoil it).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterPrograms {
    counters: Vec<Prepared>,
}

impl CounterPrograms {
    /// Prepares `names` (any kind of counter of the agent), in this order.
    ///
    /// # Errors
    ///
    /// What [`AgentCounters::prepare`] says of a name that is unknown or unusable here.
    pub fn new(agent: &AgentCounters, names: &[String]) -> Result<CounterPrograms, Error> {
        let counters = names
            .iter()
            .map(|name| {
                let program = agent.prepare(&[name.as_str()])?;
                let inputs = program.inputs();
                Ok(Prepared {
                    name: name.clone(),
                    uses_grbm: inputs.iter().any(|i| i.event.block == Block::Grbm),
                    uses_sq_waves: inputs.iter().any(|i| i.name == SQ_WAVES),
                    program,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(CounterPrograms { counters })
    }

    /// The counters, in request order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.counters.iter().map(|c| c.name.as_str())
    }

    /// The distinct base counters all of them need, in order of first use: what has to be
    /// read back for every dispatch.
    pub fn base_counters(&self) -> Vec<(String, BaseEvent)> {
        let mut out: Vec<(String, BaseEvent)> = Vec::new();
        for input in self.counters.iter().flat_map(|c| c.program.inputs()) {
            if !out.iter().any(|(n, _)| *n == input.name) {
                out.push((input.name.clone(), input.event.clone()));
            }
        }
        out
    }

    /// Every counter's value for the dispatch whose read-back is `decoded`, in request order.
    ///
    /// Each counter is evaluated whatever the [`flags`] of the read-back (so that a read-back
    /// missing an input is refused every time, not only when it is clean), then set aside:
    /// every counter under [`Discard::Warmup`]; a counter with a GRBM input (a GRBM base
    /// counter itself included) under [`Discard::GrbmZero`]; a counter with SQ_WAVES as input
    /// under [`Discard::SqZero`]; a value that is not finite as [`Discard::NotFinite`].
    ///
    /// # Errors
    ///
    /// What [`readback::evaluate`] says of a read-back that does not fit a program (an input
    /// missing, of another event, or of the wrong size or order).
    pub fn evaluate(
        &self,
        decoded: &[CounterValues],
        facts: DispatchFacts,
    ) -> Result<Vec<Outcome>, Error> {
        let flagged = flags(decoded, facts);
        let has = |d: Discard| flagged.contains(&d);
        self.counters
            .iter()
            .map(|c| {
                let mut evaluator = c.program.evaluator();
                readback::evaluate(&mut evaluator, decoded)?;
                let total =
                    ReduceOp::Sum.reduce(evaluator.values().flat_map(|(_, v)| v.iter().copied()));
                let value = if has(Discard::Warmup) {
                    Err(Discard::Warmup)
                } else if c.uses_grbm && has(Discard::GrbmZero) {
                    Err(Discard::GrbmZero)
                } else if c.uses_sq_waves && has(Discard::SqZero) {
                    Err(Discard::SqZero)
                } else if !total.is_finite() {
                    Err(Discard::NotFinite)
                } else {
                    Ok(total)
                };
                Ok(Outcome {
                    name: c.name.clone(),
                    value,
                })
            })
            .collect()
    }
}

/// What makes dispatches of different runs the same dispatch: the kernel, how many dispatches
/// of that kernel came before it in its run, and its launch sizes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DispatchKey {
    /// The kernel's name.
    pub kernel: String,
    /// Dispatches of the same kernel name earlier in the run (0 for the first).
    pub ordinal: u64,
    /// Grid size in work-items (x, y, z).
    pub grid: [u32; 3],
    /// Workgroup size in work-items (x, y, z).
    pub workgroup: [u32; 3],
}

/// The key of each of a run's dispatches, given in dispatch order as (kernel name, grid size,
/// workgroup size); the keys come back in the same order.
pub fn keys<'a>(
    dispatches: impl IntoIterator<Item = (&'a str, [u32; 3], [u32; 3])>,
) -> Vec<DispatchKey> {
    let mut seen: HashMap<&'a str, u64> = HashMap::new();
    dispatches
        .into_iter()
        .map(|(kernel, grid, workgroup)| {
            let count = seen.entry(kernel).or_insert(0);
            let ordinal = *count;
            *count += 1;
            DispatchKey {
                kernel: kernel.to_owned(),
                ordinal,
                grid,
                workgroup,
            }
        })
        .collect()
}

/// One dispatch × counter over several runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The best value: the smallest non-zero value used, 0 when every usable run read 0,
    /// `None` when no run was usable.
    pub estimate: Option<f64>,
    /// The smallest value used.
    pub min: Option<f64>,
    /// The largest value used.
    pub max: Option<f64>,
    /// `(max − min) / |min|` in percent; `None` when `min` is 0 or nothing was used.
    pub spread_percent: Option<f64>,
    /// Runs given.
    pub runs: usize,
    /// Runs whose value was used.
    pub runs_used: usize,
    /// Runs set aside because something read 0 ([`Discard::is_zero_read`]).
    pub zeros_discarded: usize,
    /// Every run set aside (its 0-based index) and why, in run order.
    pub discarded: Vec<(usize, Discard)>,
}

/// The estimate of one dispatch × counter from its `samples`, one per run (run 0 first).
///
/// A sample already discarded stays so, and a non-finite value is set aside as
/// [`Discard::NotFinite`]. Of the rest, a 0 is an [`Discard::IsolatedZero`] when some other
/// usable run is not 0; when every usable run is 0, the zeros are used and the estimate is a
/// genuine 0. Otherwise the estimate is the smallest non-zero value: the error only ever adds.
pub fn estimate(samples: &[Result<f64, Discard>]) -> Estimate {
    let usable = |s: &Result<f64, Discard>| match s {
        Ok(v) if v.is_finite() => Some(*v),
        _ => None,
    };
    let any_non_zero = samples.iter().filter_map(usable).any(|v| v != 0.0);

    let mut used: Vec<f64> = Vec::with_capacity(samples.len());
    let mut discarded = Vec::new();
    for (run, sample) in samples.iter().enumerate() {
        match sample {
            Err(d) => discarded.push((run, *d)),
            Ok(v) if !v.is_finite() => discarded.push((run, Discard::NotFinite)),
            Ok(v) if *v == 0.0 && any_non_zero => discarded.push((run, Discard::IsolatedZero)),
            Ok(v) => used.push(*v),
        }
    }

    let min = used.iter().copied().reduce(f64::min);
    let max = used.iter().copied().reduce(f64::max);
    let spread_percent = match (min, max) {
        (Some(lo), Some(hi)) if lo != 0.0 => Some((hi - lo) / lo.abs() * 100.0),
        _ => None,
    };
    Estimate {
        // Without zeros among the used values (they were set aside), the smallest used value
        // is the smallest non-zero one; with only zeros, it is 0.
        estimate: min,
        min,
        max,
        spread_percent,
        runs: samples.len(),
        runs_used: used.len(),
        zeros_discarded: discarded.iter().filter(|(_, d)| d.is_zero_read()).count(),
        discarded,
    }
}

/// Runs that differ by more than this (in percent of the smallest) suggest that other GPU
/// clients were counted too.
pub const CONTAMINATION_SPREAD_PERCENT: f64 = 5.0;

/// Whether at least two runs were used and they spread by more than
/// [`CONTAMINATION_SPREAD_PERCENT`].
pub fn contaminated(e: &Estimate) -> bool {
    e.runs_used >= 2
        && e.spread_percent
            .is_some_and(|s| s > CONTAMINATION_SPREAD_PERCENT)
}

/// One line of the hygiene report: a dispatch × counter over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HygieneRow {
    /// The dispatch's id (in the run the report lists dispatches by).
    pub dispatch_id: u64,
    /// What identifies it across runs.
    pub key: DispatchKey,
    /// The counter.
    pub counter: String,
    /// Its estimate.
    pub estimate: Estimate,
}

/// The most dispatch × counter values [`summary`] names in its warning.
pub const SUMMARY_NAMED: usize = 5;

/// Lines for the terminal about `rows` (none when there are no rows): how many values were
/// estimated from how many runs, how many runs were set aside and why, and, when any value is
/// [`contaminated`], a warning naming the largest spreads.
pub fn summary(rows: &[HygieneRow]) -> Vec<String> {
    let mut lines = Vec::new();
    if rows.is_empty() {
        return lines;
    }
    let fewest = rows.iter().map(|r| r.estimate.runs).min().unwrap_or(0);
    let most = rows.iter().map(|r| r.estimate.runs).max().unwrap_or(0);
    let runs = if fewest == most {
        format!("{most} run{}", plural(most))
    } else {
        format!("{fewest} to {most} runs")
    };
    let unusable = rows
        .iter()
        .filter(|r| r.estimate.estimate.is_none())
        .count();
    let first = if unusable == 0 {
        format!(
            "{} dispatch-counter value{} estimated from {runs}",
            rows.len(),
            plural(rows.len())
        )
    } else {
        format!(
            "{} dispatch-counter value{} from {runs}: {} estimated, {unusable} with no usable \
             run (no value written)",
            rows.len(),
            plural(rows.len()),
            rows.len() - unusable
        )
    };
    lines.push(first);

    let count = |kind: &Discard| -> usize {
        rows.iter()
            .flat_map(|r| &r.estimate.discarded)
            .filter(|(_, d)| d == kind)
            .count()
    };
    let zeros: usize = rows.iter().map(|r| r.estimate.zeros_discarded).sum();
    let (zero_kinds, other_kinds): (Vec<&Discard>, Vec<&Discard>) =
        Discard::ALL.iter().partition(|d| d.is_zero_read());
    let describe = |kinds: &[&Discard]| -> Vec<String> {
        kinds
            .iter()
            .map(|d| (d, count(d)))
            .filter(|&(_, n)| n > 0)
            .map(|(d, n)| format!("{n} {}: {}", d.name(), d.reason()))
            .collect()
    };
    if zeros > 0 {
        lines.push(format!(
            "{zeros} zero read{} set aside ({})",
            plural(zeros),
            describe(&zero_kinds).join("; ")
        ));
    }
    let others = describe(&other_kinds);
    if !others.is_empty() {
        lines.push(format!("other runs set aside ({})", others.join("; ")));
    }

    let mut spoiled: Vec<&HygieneRow> = rows.iter().filter(|r| contaminated(&r.estimate)).collect();
    if !spoiled.is_empty() {
        let spread = |r: &HygieneRow| r.estimate.spread_percent.unwrap_or(0.0);
        spoiled.sort_by(|a, b| spread(b).total_cmp(&spread(a)));
        let named: Vec<String> = spoiled
            .iter()
            .take(SUMMARY_NAMED)
            .map(|r| {
                format!(
                    "{} of {}[{}] ({:.2}%)",
                    r.counter,
                    r.key.kernel,
                    r.key.ordinal,
                    spread(r)
                )
            })
            .collect();
        lines.push(format!(
            "warning: {} of {} value{} differ{} by more than {}% between runs (largest: {}); \
             other GPU clients were probably active (WDDM time-slices the GPU, and SQ and \
             GRBM counters count for the whole GPU), so each estimate is the smallest \
             non-zero value, the one nearest the truth",
            spoiled.len(),
            rows.len(),
            plural(rows.len()),
            if spoiled.len() == 1 { "s" } else { "" },
            CONTAMINATION_SPREAD_PERCENT,
            named.join(", ")
        ));
    }
    lines
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The columns of [`write_csv`].
pub const CSV_COLUMNS: [&str; 14] = [
    "Dispatch_Id",
    "Kernel_Name",
    "Kernel_Ordinal",
    "Grid_Size",
    "Workgroup_Size",
    "Counter_Name",
    "Estimate",
    "Min",
    "Max",
    "Spread_Percent",
    "Runs",
    "Runs_Used",
    "Zeros_Discarded",
    "Discarded",
];

/// Writes `rows` as CSV in the style of rocprofv3's files: a header of quoted column names
/// ([`CSV_COLUMNS`]), then one line per row with strings quoted (a `"` inside doubled) and
/// numbers bare. Sizes are the products of their three components; values are formatted as
/// `Counter_Value` is, the spread with two decimals, and a missing number is an empty field.
/// `Discarded` lists the set-aside runs, numbered from 1 (`run 2: grbm-zero; run 5:
/// isolated-zero`).
///
/// # Errors
///
/// What writing to `out` returns.
pub fn write_csv(out: &mut impl Write, rows: &[HygieneRow]) -> io::Result<()> {
    let header: Vec<String> = CSV_COLUMNS.iter().map(|c| quote(c)).collect();
    writeln!(out, "{}", header.join(","))?;
    let number = |v: Option<f64>| v.map(fmt_counter_value).unwrap_or_default();
    for r in rows {
        let e = &r.estimate;
        let discarded: Vec<String> = e
            .discarded
            .iter()
            .map(|(run, d)| format!("run {}: {}", run + 1, d.name()))
            .collect();
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.dispatch_id,
            quote(&r.key.kernel),
            r.key.ordinal,
            volume(r.key.grid),
            volume(r.key.workgroup),
            quote(&r.counter),
            number(e.estimate),
            number(e.min),
            number(e.max),
            e.spread_percent
                .map(|s| format!("{s:.2}"))
                .unwrap_or_default(),
            e.runs,
            e.runs_used,
            e.zeros_discarded,
            quote(&discarded.join("; ")),
        )?;
    }
    Ok(())
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// x·y·z without overflow (three u32 can exceed a u64).
fn volume(size: [u32; 3]) -> u128 {
    size.iter().map(|&v| u128::from(v)).product()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pm4::Instance;

    fn read(block: Block, name: &str, event: u32, values: &[u64]) -> CounterValues {
        CounterValues {
            name: name.to_owned(),
            event: BaseEvent { block, event },
            values: values.to_vec(),
            instances: (0..values.len() as u32)
                .map(|k| Instance {
                    se: 0,
                    sa: k / 4,
                    wgp: k % 4,
                })
                .collect(),
        }
    }

    fn grbm(name: &str, event: u32, value: u64) -> CounterValues {
        read(Block::Grbm, name, event, &[value])
    }

    fn waves(values: &[u64]) -> CounterValues {
        read(Block::Sq, SQ_WAVES, 4, values)
    }

    const RAN: DispatchFacts = DispatchFacts {
        ran: true,
        in_warmup: false,
    };
    const IDLE: DispatchFacts = DispatchFacts {
        ran: false,
        in_warmup: false,
    };

    #[test]
    fn grbm_all_zero_on_a_dispatch_that_ran_is_a_burst() {
        let decoded = [
            grbm("GRBM_COUNT", 0, 0),
            grbm("GRBM_GUI_ACTIVE", 2, 0),
            waves(&[3; 8]),
        ];
        assert_eq!(flags(&decoded, RAN), [Discard::GrbmZero]);
        // SQ_WAVES above 0 proves it ran even when the duration says nothing.
        assert_eq!(flags(&decoded, IDLE), [Discard::GrbmZero]);
    }

    #[test]
    fn grbm_all_zero_on_a_dispatch_that_did_not_run_is_not_flagged() {
        let decoded = [
            grbm("GRBM_COUNT", 0, 0),
            grbm("GRBM_GUI_ACTIVE", 2, 0),
            waves(&[0; 8]),
        ];
        assert_eq!(flags(&decoded, IDLE), []);
        assert_eq!(flags(&decoded[..2], IDLE), []);
    }

    #[test]
    fn one_grbm_counter_above_zero_is_no_burst() {
        let decoded = [grbm("GRBM_COUNT", 0, 7_000), grbm("GRBM_GUI_ACTIVE", 2, 0)];
        assert_eq!(flags(&decoded, RAN), []);
    }

    #[test]
    fn no_grbm_counter_read_is_no_burst() {
        assert_eq!(flags(&[waves(&[1; 8])], RAN), []);
        assert_eq!(flags(&[], RAN), []);
        // A GRBM entry without values is not a read.
        assert_eq!(flags(&[read(Block::Grbm, "GRBM_COUNT", 0, &[])], RAN), []);
    }

    #[test]
    fn sq_waves_zero_on_a_dispatch_that_ran_is_an_sq_zero() {
        let decoded = [grbm("GRBM_COUNT", 0, 9_000), waves(&[0; 8])];
        assert_eq!(flags(&decoded, RAN), [Discard::SqZero]);
        assert_eq!(flags(&decoded, IDLE), []);
        // One instance above 0 is enough.
        let mut some = [0; 8];
        some[5] = 1;
        assert_eq!(flags(&[waves(&some)], RAN), []);
        // Another SQ counter at 0 is not the marker.
        assert_eq!(flags(&[read(Block::Sq, "SQ_CYCLES", 2, &[0; 8])], RAN), []);
    }

    #[test]
    fn both_zeros_and_warmup_together() {
        let decoded = [grbm("GRBM_COUNT", 0, 0), waves(&[0; 8])];
        let facts = DispatchFacts {
            ran: true,
            in_warmup: true,
        };
        assert_eq!(
            flags(&decoded, facts),
            [Discard::GrbmZero, Discard::SqZero, Discard::Warmup]
        );
        let warm = DispatchFacts {
            ran: false,
            in_warmup: true,
        };
        assert_eq!(flags(&[], warm), [Discard::Warmup]);
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let names: Vec<&str> = Discard::ALL.iter().map(Discard::name).collect();
        assert_eq!(
            names,
            [
                "grbm-zero",
                "sq-zero",
                "isolated-zero",
                "warmup",
                "not-finite"
            ]
        );
        for d in Discard::ALL {
            assert_eq!(d.to_string(), d.name());
            assert!(!d.reason().is_empty());
        }
        let zero: Vec<bool> = Discard::ALL.iter().map(Discard::is_zero_read).collect();
        assert_eq!(zero, [true, true, true, false, false]);
    }

    #[test]
    fn an_isolated_zero_among_contaminated_runs() {
        let e = estimate(&[Ok(8192.0), Ok(9000.0), Ok(0.0), Ok(185_561.0)]);
        assert_eq!(e.estimate, Some(8192.0));
        assert_eq!(e.min, Some(8192.0));
        assert_eq!(e.max, Some(185_561.0));
        assert_eq!((e.runs, e.runs_used, e.zeros_discarded), (4, 3, 1));
        assert_eq!(e.discarded, [(2, Discard::IsolatedZero)]);
        let spread = e.spread_percent.unwrap();
        assert!(
            (spread - 177_369.0 / 8192.0 * 100.0).abs() < 1e-9,
            "{spread}"
        );
        assert!(contaminated(&e));
    }

    #[test]
    fn discarded_runs_are_not_used() {
        let e = estimate(&[
            Err(Discard::GrbmZero),
            Ok(100.0),
            Err(Discard::Warmup),
            Ok(f64::NAN),
            Ok(103.0),
        ]);
        assert_eq!(e.estimate, Some(100.0));
        assert_eq!((e.runs, e.runs_used, e.zeros_discarded), (5, 2, 1));
        assert_eq!(
            e.discarded,
            [
                (0, Discard::GrbmZero),
                (2, Discard::Warmup),
                (3, Discard::NotFinite)
            ]
        );
        assert!(!contaminated(&e), "3% is within the threshold");
    }

    #[test]
    fn all_zero_is_a_genuine_zero_and_nothing_usable_is_none() {
        let e = estimate(&[Ok(0.0), Ok(0.0), Err(Discard::SqZero)]);
        assert_eq!(
            (e.estimate, e.min, e.max),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        assert_eq!(e.spread_percent, None);
        assert_eq!((e.runs_used, e.zeros_discarded), (2, 1));
        assert!(!contaminated(&e));

        let none = estimate(&[Err(Discard::Warmup), Ok(f64::INFINITY)]);
        assert_eq!((none.estimate, none.min, none.max), (None, None, None));
        assert_eq!((none.spread_percent, none.runs_used), (None, 0));
        let empty = estimate(&[]);
        assert_eq!((empty.estimate, empty.runs), (None, 0));
    }

    #[test]
    fn one_run_is_never_contaminated() {
        let mut e = estimate(&[Ok(5.0)]);
        assert_eq!(e.spread_percent, Some(0.0));
        e.spread_percent = Some(50.0);
        assert!(!contaminated(&e));
        e.runs_used = 2;
        assert!(contaminated(&e));
        e.spread_percent = Some(CONTAMINATION_SPREAD_PERCENT);
        assert!(!contaminated(&e), "the threshold itself is still clean");
    }

    #[test]
    fn ordinals_count_per_kernel_name() {
        let g = [1024, 1, 1];
        let w = [256, 1, 1];
        let got = keys([
            ("copy", g, w),
            ("scale", g, w),
            ("copy", [2048, 2, 1], w),
            ("copy", g, w),
            ("scale", g, [64, 1, 1]),
            ("reduce", g, w),
        ]);
        let ordinals: Vec<(&str, u64)> =
            got.iter().map(|k| (k.kernel.as_str(), k.ordinal)).collect();
        assert_eq!(
            ordinals,
            [
                ("copy", 0),
                ("scale", 0),
                ("copy", 1),
                ("copy", 2),
                ("scale", 1),
                ("reduce", 0)
            ]
        );
        assert_eq!(got[2].grid, [2048, 2, 1]);
        assert_eq!(got[4].workgroup, [64, 1, 1]);
        assert!(keys(std::iter::empty()).is_empty());
    }

    fn row(kernel: &str, counter: &str, samples: &[Result<f64, Discard>]) -> HygieneRow {
        HygieneRow {
            dispatch_id: 7,
            key: DispatchKey {
                kernel: kernel.to_owned(),
                ordinal: 1,
                grid: [1024, 4, 2],
                workgroup: [256, 1, 1],
            },
            counter: counter.to_owned(),
            estimate: estimate(samples),
        }
    }

    #[test]
    fn csv_header_and_row() {
        let rows = [
            row(
                "vector_add(float*, \"a\")",
                "SQ_WAVES",
                &[
                    Ok(8192.0),
                    Err(Discard::GrbmZero),
                    Ok(0.0),
                    Ok(9000.0),
                    Ok(0.0),
                ],
            ),
            row("k", "GPU_UTIL", &[Err(Discard::Warmup), Ok(0.25)]),
            row("k", "GPU_UTIL", &[Err(Discard::Warmup)]),
        ];
        let mut out = Vec::new();
        write_csv(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "\"Dispatch_Id\",\"Kernel_Name\",\"Kernel_Ordinal\",\"Grid_Size\",\
             \"Workgroup_Size\",\"Counter_Name\",\"Estimate\",\"Min\",\"Max\",\
             \"Spread_Percent\",\"Runs\",\"Runs_Used\",\"Zeros_Discarded\",\"Discarded\""
        );
        assert_eq!(
            lines[1],
            "7,\"vector_add(float*, \"\"a\"\")\",1,8192,256,\"SQ_WAVES\",8192.000000,\
             8192.000000,9000.000000,9.86,5,2,3,\
             \"run 2: grbm-zero; run 3: isolated-zero; run 5: isolated-zero\""
        );
        assert_eq!(
            lines[2],
            "7,\"k\",1,8192,256,\"GPU_UTIL\",2.50000000e-01,2.50000000e-01,2.50000000e-01,\
             0.00,2,1,0,\"run 1: warmup\""
        );
        assert_eq!(
            lines[3],
            "7,\"k\",1,8192,256,\"GPU_UTIL\",,,,,1,0,0,\"run 1: warmup\""
        );
        assert_eq!(lines.len(), 4);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn csv_sizes_do_not_overflow() {
        let mut r = row("k", "SQ_WAVES", &[]);
        r.key.grid = [u32::MAX; 3];
        let mut out = Vec::new();
        write_csv(&mut out, &[r]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let cells: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(cells[3], (u128::from(u32::MAX).pow(3)).to_string());
        assert_eq!(cells[13], "\"\"");
    }

    #[test]
    fn a_failing_writer_is_reported() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let err = write_csv(&mut Full, &[]).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }

    #[test]
    fn summary_counts_and_warns() {
        assert!(summary(&[]).is_empty());
        let rows = [
            row(
                "copy",
                "SQ_WAVES",
                &[Ok(8192.0), Ok(9000.0), Ok(0.0), Ok(185_561.0)],
            ),
            row(
                "copy",
                "GPU_UTIL",
                &[Err(Discard::GrbmZero), Ok(40.0), Ok(41.0), Ok(40.5)],
            ),
            row("scale", "GRBM_COUNT", &[Err(Discard::Warmup); 4]),
        ];
        let lines = summary(&rows);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(
            lines[0],
            "3 dispatch-counter values from 4 runs: 2 estimated, 1 with no usable run (no value \
             written)"
        );
        assert!(
            lines[1].starts_with("2 zero reads set aside (1 grbm-zero: "),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("; 1 isolated-zero: "), "{}", lines[1]);
        assert!(
            lines[2].starts_with("other runs set aside (4 warmup: "),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].starts_with(
                "warning: 1 of 3 values differs by more than 5% between runs (largest: \
                 SQ_WAVES of copy[1] (2165.15%)); other GPU clients were probably active"
            ),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn summary_names_at_most_five_largest_spreads_first() {
        let rows: Vec<HygieneRow> = (1..=7)
            .map(|k| {
                row(
                    &format!("k{k}"),
                    "SQ_WAVES",
                    &[Ok(100.0), Ok(100.0 + 10.0 * f64::from(k))],
                )
            })
            .collect();
        let lines = summary(&rows);
        assert_eq!(lines[0], "7 dispatch-counter values estimated from 2 runs");
        let warning = lines.last().unwrap();
        assert!(
            warning.contains(
                "(largest: SQ_WAVES of k7[1] (70.00%), SQ_WAVES of k6[1] (60.00%), \
                 SQ_WAVES of k5[1] (50.00%), SQ_WAVES of k4[1] (40.00%), SQ_WAVES of k3[1] \
                 (30.00%));"
            ),
            "{warning}"
        );
        assert!(warning.starts_with("warning: 7 of 7 values"), "{warning}");
    }

    #[test]
    fn summary_with_runs_of_different_counts_and_no_trouble() {
        let rows = [
            row("a", "SQ_WAVES", &[Ok(5.0), Ok(5.0)]),
            row("b", "SQ_WAVES", &[Ok(5.0), Ok(5.1), Ok(5.0)]),
        ];
        assert_eq!(
            summary(&rows),
            ["2 dispatch-counter values estimated from 2 to 3 runs"]
        );
    }
}
