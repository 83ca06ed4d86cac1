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
//! 5. [`HygieneRow::csv`] (after [`CsvHeader`]): the per-dispatch table's lines, and
//!    [`notes`]: what a report says about the rows ([`Note`], one sentence each).
//!
//! Everything here is a pure function of its arguments and returns values; presenting them
//! (a file, the terminal) is the caller's. [`write_csv`] and [`summary`] are the two older
//! conveniences over them (the table to a writer, the notes as lines of text).

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
    /// The dispatch ran and SQ_WAVES, this counter's only input, read 0: the zero as read. A
    /// value whose every run is this kind is estimated as that 0, flagged ([`estimate`]): a
    /// genuine zero and an isolated SQ zero read the same, and only other runs tell them apart.
    SqZero,
    /// The dispatch ran and SQ_WAVES, one of this counter's inputs, read 0: its value (a ratio
    /// per wave, say) is spoiled by the zero.
    SqZeroInput,
    /// The dispatch started inside the opening window asked to be discarded
    /// ([`DispatchFacts::in_warmup`]).
    Warmup,
    /// Over repeated runs: this run read 0 where other runs of the same dispatch read a
    /// non-zero value.
    IsolatedZero,
    /// The counter's expression gave a NaN or an infinity.
    NotFinite,
    /// Multiplexed groups: another group than the counter's counted the dispatch (no value
    /// was read; no row is written for it).
    OtherGroup,
}

impl Discard {
    /// Every kind, in the order reports list them.
    pub const ALL: [Discard; 6] = [
        Discard::GrbmZero,
        Discard::SqZero,
        Discard::SqZeroInput,
        Discard::IsolatedZero,
        Discard::Warmup,
        Discard::NotFinite,
    ];

    /// A stable name for files (the same as its serde spelling).
    pub fn name(&self) -> &'static str {
        match self {
            Discard::GrbmZero => "grbm-zero",
            Discard::SqZero => "sq-zero",
            Discard::SqZeroInput => "sq-zero-input",
            Discard::Warmup => "warmup",
            Discard::IsolatedZero => "isolated-zero",
            Discard::NotFinite => "not-finite",
            Discard::OtherGroup => "other-group",
        }
    }

    /// A short explanation for people.
    pub fn reason(&self) -> &'static str {
        match self {
            Discard::GrbmZero => {
                "every GRBM counter read 0 on a dispatch that ran (a GRBM zero burst)"
            }
            Discard::SqZero => {
                "SQ_WAVES read 0 on a dispatch that ran (an isolated SQ zero, or a genuine 0)"
            }
            Discard::SqZeroInput => {
                "SQ_WAVES, an input of the counter, read 0 on a dispatch that ran (an isolated SQ \
                 zero)"
            }
            Discard::Warmup => "the dispatch started inside the warm-up window asked to be skipped",
            Discard::IsolatedZero => "this run read 0 while other runs of the dispatch did not",
            Discard::NotFinite => "the counter's expression did not give a finite number",
            Discard::OtherGroup => "another counter group counted the dispatch",
        }
    }

    /// Whether the value was set aside because something read 0 (not for its timing or its
    /// arithmetic).
    pub fn is_zero_read(&self) -> bool {
        matches!(
            self,
            Discard::GrbmZero | Discard::SqZero | Discard::SqZeroInput | Discard::IsolatedZero
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
    /// SQ_WAVES is its only input: its value follows from SQ_WAVES alone.
    only_sq_waves: bool,
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
                    only_sq_waves: !inputs.is_empty() && inputs.iter().all(|i| i.name == SQ_WAVES),
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
    /// under [`Discard::SqZero`] when SQ_WAVES is its only input (SQ_WAVES itself, a sum of
    /// waves: its value is the zero as read), else under [`Discard::SqZeroInput`]; a value that is not finite as [`Discard::NotFinite`].
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
                    Err(if c.only_sq_waves {
                        Discard::SqZero
                    } else {
                        Discard::SqZeroInput
                    })
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
///
/// When no run is usable and every one was set aside as [`Discard::SqZero`] (the counter read
/// 0 with SQ_WAVES, and the packets ran), the estimate is that 0 — min and max 0, no run used,
/// the runs still listed as discarded: an [`unconfirmed_zero`], which a report flags with the
/// advice to repeat the run, since an isolated zero and a genuine one read the same.
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
    let only_sq_zeros = used.is_empty()
        && !discarded.is_empty()
        && discarded.iter().all(|(_, d)| *d == Discard::SqZero);
    let (min, max) = if only_sq_zeros {
        (Some(0.0), Some(0.0))
    } else {
        (min, max)
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

/// Whether `e` is a zero no run confirms: every run read the counter 0 with SQ_WAVES 0 on a
/// dispatch that ran ([`Discard::SqZero`]), so the estimate is 0 from no used run.
pub fn unconfirmed_zero(e: &Estimate) -> bool {
    e.estimate == Some(0.0)
        && e.runs_used == 0
        && !e.discarded.is_empty()
        && e.discarded.iter().all(|(_, d)| *d == Discard::SqZero)
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

/// The most dispatch × counter values [`Note::Contaminated`] names.
pub const SUMMARY_NAMED: usize = 5;

/// How many runs the values of a report were estimated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpan {
    /// The fewest runs any value had.
    pub fewest: usize,
    /// The most runs any value had.
    pub most: usize,
}

/// `4 runs`, `1 run`, `2 to 3 runs`.
impl fmt::Display for RunSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fewest == self.most {
            write!(f, "{} run{}", self.most, plural(self.most))
        } else {
            write!(f, "{} to {} runs", self.fewest, self.most)
        }
    }
}

/// How many runs of one kind were set aside, over a report's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscardCount {
    /// Why.
    pub kind: Discard,
    /// How many runs (at least 1).
    pub runs: usize,
}

/// `2 grbm-zero: every GRBM counter read 0 on …`.
impl fmt::Display for DiscardCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.runs,
            self.kind.name(),
            self.kind.reason()
        )
    }
}

/// One dispatch × counter whose runs disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The counter.
    pub counter: String,
    /// The dispatch's kernel.
    pub kernel: String,
    /// Its per-kernel ordinal.
    pub ordinal: u64,
    /// The runs' spread, in percent of the smallest.
    pub percent: f64,
}

/// `SQ_WAVES of copy[1] (2165.15%)`.
impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {}[{}] ({:.2}%)",
            self.counter, self.kernel, self.ordinal, self.percent
        )
    }
}

/// What a report over hygiene rows has to say ([`notes`]); each displays as one sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Note {
    /// How many values were estimated, from how many runs.
    Estimated {
        /// Dispatch × counter values (rows).
        values: usize,
        /// The runs they had.
        runs: RunSpan,
        /// Values with no usable run (no estimate, so no counter record).
        unusable: usize,
    },
    /// Runs set aside because something read 0 ([`Discard::is_zero_read`]).
    ZeroReads {
        /// Every such run, over all rows.
        total: usize,
        /// By kind, in [`Discard::ALL`]'s order (kinds without a run left out).
        kinds: Vec<DiscardCount>,
    },
    /// Runs set aside for anything else (warm-up, not finite).
    OtherDiscards {
        /// By kind, in [`Discard::ALL`]'s order (kinds without a run left out).
        kinds: Vec<DiscardCount>,
    },
    /// Values written as 0 that no run confirms ([`unconfirmed_zero`]): SQ_WAVES read 0 on a
    /// dispatch whose counter packets ran, in every run it had. A warning.
    UnconfirmedZeros {
        /// Such values.
        values: usize,
        /// The most runs any of them had.
        runs: usize,
    },
    /// Values whose runs spread by more than [`CONTAMINATION_SPREAD_PERCENT`] ([`contaminated`]):
    /// other GPU clients were probably counted too. A warning ([`Note::is_warning`]).
    Contaminated {
        /// Contaminated values.
        spoiled: usize,
        /// All values.
        values: usize,
        /// The largest spreads, largest first, at most [`SUMMARY_NAMED`].
        largest: Vec<Spread>,
    },
}

impl Note {
    /// Whether the note warns (the values are less trustworthy than they look).
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            Note::Contaminated { .. } | Note::UnconfirmedZeros { .. }
        )
    }

    /// The note as a report line: `warning: ` first when it warns.
    pub fn line(&self) -> String {
        if self.is_warning() {
            format!("warning: {self}")
        } else {
            self.to_string()
        }
    }
}

fn join(items: &[impl fmt::Display], separator: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Estimated {
                values,
                runs,
                unusable: 0,
            } => write!(
                f,
                "{values} dispatch-counter value{} estimated from {runs}",
                plural(*values)
            ),
            Note::Estimated {
                values,
                runs,
                unusable,
            } => write!(
                f,
                "{values} dispatch-counter value{} from {runs}: {} estimated, {unusable} with no \
                 usable run (no value written)",
                plural(*values),
                values - unusable
            ),
            Note::ZeroReads { total, kinds } => write!(
                f,
                "{total} zero read{} set aside ({})",
                plural(*total),
                join(kinds, "; ")
            ),
            Note::OtherDiscards { kinds } => {
                write!(f, "other runs set aside ({})", join(kinds, "; "))
            }
            Note::UnconfirmedZeros { values, runs } => write!(
                f,
                "{values} value{} written as 0 (flagged sq-zero in counter_hygiene.csv): \
                 SQ_WAVES read 0 on {} whose counter packets ran, which is a genuine 0 or an \
                 isolated SQ zero (WSL2 reads about 0.1 % of SQ read-backs as 0); {}",
                plural(*values),
                if *values == 1 {
                    "a dispatch"
                } else {
                    "dispatches"
                },
                if *runs <= 1 {
                    "repeat the run (--pmc-repeat 3) to tell them apart".to_owned()
                } else {
                    format!("every one of {runs} runs read it, so it is most likely genuine")
                }
            ),
            Note::Contaminated {
                spoiled,
                values,
                largest,
            } => write!(
                f,
                "{spoiled} of {values} value{} differ{} by more than {}% between runs \
                 (largest: {}); other GPU clients were probably active (WDDM time-slices the \
                 GPU, and SQ and GRBM counters count for the whole GPU), so each estimate is \
                 the smallest non-zero value, the one nearest the truth",
                plural(*values),
                if *spoiled == 1 { "s" } else { "" },
                CONTAMINATION_SPREAD_PERCENT,
                join(largest, ", ")
            ),
        }
    }
}

/// What to say about `rows` (nothing when there are no rows), in this order: how many values
/// were estimated from how many runs ([`Note::Estimated`], always), the runs set aside because
/// something read 0 ([`Note::ZeroReads`]) and for other reasons ([`Note::OtherDiscards`]),
/// each when there are any, the values written as a 0 no run confirms
/// ([`Note::UnconfirmedZeros`]), and, when any value is [`contaminated`], the largest spreads
/// ([`Note::Contaminated`]).
pub fn notes(rows: &[HygieneRow]) -> Vec<Note> {
    let mut out = Vec::new();
    if rows.is_empty() {
        return out;
    }
    out.push(Note::Estimated {
        values: rows.len(),
        runs: RunSpan {
            fewest: rows.iter().map(|r| r.estimate.runs).min().unwrap_or(0),
            most: rows.iter().map(|r| r.estimate.runs).max().unwrap_or(0),
        },
        unusable: rows
            .iter()
            .filter(|r| r.estimate.estimate.is_none())
            .count(),
    });

    // An unconfirmed zero's runs were not set aside: the value is written (said below).
    let set_aside = || rows.iter().filter(|r| !unconfirmed_zero(&r.estimate));
    let counts = |zero_reads: bool| -> Vec<DiscardCount> {
        Discard::ALL
            .iter()
            .filter(|d| d.is_zero_read() == zero_reads)
            .map(|&kind| DiscardCount {
                kind,
                runs: set_aside()
                    .flat_map(|r| &r.estimate.discarded)
                    .filter(|(_, d)| *d == kind)
                    .count(),
            })
            .filter(|c| c.runs > 0)
            .collect()
    };
    let total: usize = set_aside().map(|r| r.estimate.zeros_discarded).sum();
    if total > 0 {
        out.push(Note::ZeroReads {
            total,
            kinds: counts(true),
        });
    }
    let others = counts(false);
    if !others.is_empty() {
        out.push(Note::OtherDiscards { kinds: others });
    }

    let unconfirmed: Vec<&HygieneRow> = rows
        .iter()
        .filter(|r| unconfirmed_zero(&r.estimate))
        .collect();
    if !unconfirmed.is_empty() {
        out.push(Note::UnconfirmedZeros {
            values: unconfirmed.len(),
            runs: unconfirmed
                .iter()
                .map(|r| r.estimate.runs)
                .max()
                .unwrap_or(0),
        });
    }

    let mut spoiled: Vec<&HygieneRow> = rows.iter().filter(|r| contaminated(&r.estimate)).collect();
    if !spoiled.is_empty() {
        let spread = |r: &HygieneRow| r.estimate.spread_percent.unwrap_or(0.0);
        spoiled.sort_by(|a, b| spread(b).total_cmp(&spread(a)));
        out.push(Note::Contaminated {
            spoiled: spoiled.len(),
            values: rows.len(),
            largest: spoiled
                .iter()
                .take(SUMMARY_NAMED)
                .map(|r| Spread {
                    counter: r.counter.clone(),
                    kernel: r.key.kernel.clone(),
                    ordinal: r.key.ordinal,
                    percent: spread(r),
                })
                .collect(),
        });
    }
    out
}

/// [`notes`] as lines of text, a warning's prefixed `warning: `.
///
/// Kept for rocprof-cli, which prints these lines; new callers take [`notes`] and present them
/// themselves.
pub fn summary(rows: &[HygieneRow]) -> Vec<String> {
    notes(rows).iter().map(Note::line).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The columns of the hygiene table (`counter_hygiene.csv`), in order.
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

/// The header line of the hygiene table: the quoted [`CSV_COLUMNS`], comma-separated (no line
/// end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CsvHeader;

impl fmt::Display for CsvHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in CSV_COLUMNS.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", Quoted(c))?;
        }
        Ok(())
    }
}

/// One row of the hygiene table as a CSV line ([`HygieneRow::csv`]; no line end).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CsvLine<'a>(pub &'a HygieneRow);

/// A run set aside, as the `Discarded` column names it: `run 2: grbm-zero` (runs numbered from
/// 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscardedRun {
    /// The run's 0-based index.
    pub run: usize,
    /// Why.
    pub why: Discard,
}

impl fmt::Display for DiscardedRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {}: {}", self.run + 1, self.why.name())
    }
}

impl HygieneRow {
    /// This row as a line of the hygiene table, in the style of rocprofv3's files: strings
    /// quoted (a `"` inside doubled), numbers bare. Sizes are the products of their three
    /// components; values are formatted as `Counter_Value` is, the spread with two decimals,
    /// and a missing number is an empty field. `Discarded` lists the set-aside runs
    /// ([`DiscardedRun`]) joined by `; `.
    pub fn csv(&self) -> CsvLine<'_> {
        CsvLine(self)
    }

    /// The runs set aside, in run order.
    pub fn discarded_runs(&self) -> impl Iterator<Item = DiscardedRun> + '_ {
        self.estimate
            .discarded
            .iter()
            .map(|&(run, why)| DiscardedRun { run, why })
    }
}

impl fmt::Display for CsvLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        let e = &r.estimate;
        let number = |v: Option<f64>| v.map(fmt_counter_value).unwrap_or_default();
        let discarded: Vec<DiscardedRun> = r.discarded_runs().collect();
        write!(
            f,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.dispatch_id,
            Quoted(&r.key.kernel),
            r.key.ordinal,
            volume(r.key.grid),
            volume(r.key.workgroup),
            Quoted(&r.counter),
            number(e.estimate),
            number(e.min),
            number(e.max),
            e.spread_percent
                .map(|s| format!("{s:.2}"))
                .unwrap_or_default(),
            e.runs,
            e.runs_used,
            e.zeros_discarded,
            Quoted(&join(&discarded, "; ")),
        )
    }
}

/// A CSV string field: quoted, a `"` inside doubled.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.replace('"', "\"\""))
    }
}

/// Writes the hygiene table: [`CsvHeader`], then each row's [`HygieneRow::csv`], each line
/// ended by `\n`.
///
/// Kept for rocprof-cli, which hands it its file; new callers write [`CsvHeader`] and
/// [`HygieneRow::csv`] themselves.
///
/// # Errors
///
/// What writing to `out` returns.
pub fn write_csv(out: &mut impl Write, rows: &[HygieneRow]) -> io::Result<()> {
    writeln!(out, "{CsvHeader}")?;
    for r in rows {
        writeln!(out, "{}", r.csv())?;
    }
    Ok(())
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
                "sq-zero-input",
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
        assert_eq!(zero, [true, true, true, true, false, false]);
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
        assert_eq!(
            CsvHeader.to_string(),
            "\"Dispatch_Id\",\"Kernel_Name\",\"Kernel_Ordinal\",\"Grid_Size\",\
             \"Workgroup_Size\",\"Counter_Name\",\"Estimate\",\"Min\",\"Max\",\
             \"Spread_Percent\",\"Runs\",\"Runs_Used\",\"Zeros_Discarded\",\"Discarded\""
        );
        assert_eq!(
            rows[0].csv().to_string(),
            "7,\"vector_add(float*, \"\"a\"\")\",1,8192,256,\"SQ_WAVES\",8192.000000,\
             8192.000000,9000.000000,9.86,5,2,3,\
             \"run 2: grbm-zero; run 3: isolated-zero; run 5: isolated-zero\""
        );
        assert_eq!(
            rows[1].csv().to_string(),
            "7,\"k\",1,8192,256,\"GPU_UTIL\",2.50000000e-01,2.50000000e-01,2.50000000e-01,\
             0.00,2,1,0,\"run 1: warmup\""
        );
        assert_eq!(
            rows[2].csv().to_string(),
            "7,\"k\",1,8192,256,\"GPU_UTIL\",,,,,1,0,0,\"run 1: warmup\""
        );
        let runs: Vec<DiscardedRun> = rows[0].discarded_runs().collect();
        assert_eq!(
            runs[0],
            DiscardedRun {
                run: 1,
                why: Discard::GrbmZero
            }
        );
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[2].to_string(), "run 5: isolated-zero");
    }

    #[test]
    fn csv_sizes_do_not_overflow() {
        let mut r = row("k", "SQ_WAVES", &[]);
        r.key.grid = [u32::MAX; 3];
        let text = r.csv().to_string();
        let cells: Vec<&str> = text.split(',').collect();
        assert_eq!(cells[3], (u128::from(u32::MAX).pow(3)).to_string());
        assert_eq!(cells[13], "\"\"");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn write_csv_is_the_header_and_the_lines() {
        let rows = [
            row("a", "SQ_WAVES", &[Ok(1.0)]),
            row("b", "GRBM_COUNT", &[Ok(2.0)]),
        ];
        let mut out = Vec::new();
        write_csv(&mut out, &rows).unwrap();
        let want = format!("{CsvHeader}\n{}\n{}\n", rows[0].csv(), rows[1].csv());
        assert_eq!(String::from_utf8(out).unwrap(), want);
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
    fn notes_count_and_warn() {
        assert!(notes(&[]).is_empty());
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
        let got = notes(&rows);
        assert_eq!(got.len(), 4, "{got:#?}");
        assert_eq!(
            got[0],
            Note::Estimated {
                values: 3,
                runs: RunSpan { fewest: 4, most: 4 },
                unusable: 1
            }
        );
        assert_eq!(
            got[1],
            Note::ZeroReads {
                total: 2,
                kinds: vec![
                    DiscardCount {
                        kind: Discard::GrbmZero,
                        runs: 1
                    },
                    DiscardCount {
                        kind: Discard::IsolatedZero,
                        runs: 1
                    }
                ]
            }
        );
        assert_eq!(
            got[2],
            Note::OtherDiscards {
                kinds: vec![DiscardCount {
                    kind: Discard::Warmup,
                    runs: 4
                }]
            }
        );
        match &got[3] {
            Note::Contaminated {
                spoiled,
                values,
                largest,
            } => {
                assert_eq!((*spoiled, *values), (1, 3));
                assert_eq!(largest.len(), 1);
                assert_eq!(
                    (largest[0].kernel.as_str(), largest[0].ordinal),
                    ("copy", 1)
                );
            }
            other => panic!("{other:?}"),
        }
        let warnings: Vec<bool> = got.iter().map(Note::is_warning).collect();
        assert_eq!(warnings, [false, false, false, true]);

        assert_eq!(
            got[0].to_string(),
            "3 dispatch-counter values from 4 runs: 2 estimated, 1 with no usable run (no value \
             written)"
        );
        let zeros = got[1].to_string();
        assert!(
            zeros.starts_with("2 zero reads set aside (1 grbm-zero: "),
            "{zeros}"
        );
        assert!(zeros.contains("; 1 isolated-zero: "), "{zeros}");
        assert!(
            got[2]
                .to_string()
                .starts_with("other runs set aside (4 warmup: "),
            "{}",
            got[2]
        );
        assert!(
            got[3].to_string().starts_with(
                "1 of 3 values differs by more than 5% between runs (largest: SQ_WAVES of \
                 copy[1] (2165.15%)); other GPU clients were probably active"
            ),
            "{}",
            got[3]
        );
    }

    #[test]
    fn summary_is_the_notes_with_the_warning_marked() {
        let rows = [
            row("copy", "SQ_WAVES", &[Ok(8192.0), Ok(185_561.0)]),
            row("copy", "GPU_UTIL", &[Ok(40.0), Ok(40.5)]),
        ];
        let lines = summary(&rows);
        let got = notes(&rows);
        assert_eq!(lines.len(), got.len());
        assert_eq!(lines[0], got[0].to_string());
        assert_eq!(lines[1], format!("warning: {}", got[1]));
        assert!(summary(&[]).is_empty());
    }

    #[test]
    fn notes_name_at_most_five_largest_spreads_first() {
        let rows: Vec<HygieneRow> = (1..=7)
            .map(|k| {
                row(
                    &format!("k{k}"),
                    "SQ_WAVES",
                    &[Ok(100.0), Ok(100.0 + 10.0 * f64::from(k))],
                )
            })
            .collect();
        let got = notes(&rows);
        assert_eq!(
            got[0].to_string(),
            "7 dispatch-counter values estimated from 2 runs"
        );
        let warning = got.last().unwrap();
        let Note::Contaminated { largest, .. } = warning else {
            panic!("{warning:?}");
        };
        assert_eq!(largest.len(), SUMMARY_NAMED);
        let text = warning.to_string();
        assert!(
            text.contains(
                "(largest: SQ_WAVES of k7[1] (70.00%), SQ_WAVES of k6[1] (60.00%), \
                 SQ_WAVES of k5[1] (50.00%), SQ_WAVES of k4[1] (40.00%), SQ_WAVES of k3[1] \
                 (30.00%));"
            ),
            "{text}"
        );
        assert!(text.starts_with("7 of 7 values"), "{text}");
    }

    #[test]
    fn notes_with_runs_of_different_counts_and_no_trouble() {
        let rows = [
            row("a", "SQ_WAVES", &[Ok(5.0), Ok(5.0)]),
            row("b", "SQ_WAVES", &[Ok(5.0), Ok(5.1), Ok(5.0)]),
        ];
        let got = notes(&rows);
        assert_eq!(
            got,
            [Note::Estimated {
                values: 2,
                runs: RunSpan { fewest: 2, most: 3 },
                unusable: 0
            }]
        );
        assert_eq!(
            got[0].to_string(),
            "2 dispatch-counter values estimated from 2 to 3 runs"
        );
        assert_eq!(RunSpan { fewest: 1, most: 1 }.to_string(), "1 run");
    }
}
