//! Counter trust: the hygiene of `pmc_dxg::hygiene` applied to any results.
//!
//! **Per dispatch** (every run): a dispatch that ran (duration above 0, or SQ_WAVES above 0)
//! whose GRBM counters all read 0 is a *GRBM zero* — rocprof sets those values aside itself
//! (a record directory's read-backs are evaluated here with its hygiene; our CSV files carry
//! the reason in `counter_hygiene.csv`), rocprofv3 writes the zeros, so they are recognised
//! from the values here; every counter with a GRBM input is then set aside too. A derived
//! counter whose GRBM divisor reads exactly 0 on a dispatch that ran is one too (rocprofiler's
//! evaluator makes `x / 0` 0, so the zero itself may be missing from the files). SQ_WAVES = 0 on
//! a dispatch that ran is an *SQ zero*; a value that is not finite is set aside. Which
//! counter reads what, and what divides by what, comes from the counter definitions `rocprof`
//! uses (`ROCPROFILER_METRICS_PATH`, the ROCm install, or the built-in ones), for the input's
//! GPU when it names one, falling back on the seed's list (GPU_UTIL and CU_UTILIZATION divide by
//! GRBM_COUNT; VALUBusy, SALUBusy, MemUnitStalled, LDSBankConflict and MeanOccupancyPerCU by
//! GRBM_GUI_ACTIVE) and on the `GRBM_`/`SQ_` prefixes. GRBM zeros are reported as bursts: the
//! seed's bursts start at the session's first counted dispatch and are contiguous; anything
//! else is said. Derived counters that divided (or would have divided) by a zero are listed.
//!
//! **Over runs.** The inputs (and the passes of an input) are runs of the same program: their
//! processes are matched by start order (as `--pmc-repeat` matches them) and their dispatches
//! by kernel name, per-kernel ordinal, grid and workgroup (`pmc_dxg::hygiene::keys`; sizes
//! compared as volumes, since `counter_collection.csv` has only those). Each dispatch × counter
//! gets `pmc_dxg::hygiene::estimate` over the runs that have it — min, max, spread, the
//! smallest non-zero value as the estimate, a zero among non-zero runs an isolated zero — and
//! the summary lines `rocprof` prints after a `--pmc-repeat` run. An input that is itself a
//! `--pmc-repeat` output (its `counter_hygiene.csv` says several runs) alone reports rocprof's
//! own figures from that file.

use crate::model::{CounterOrigin, CounterValue, Process};
use crate::timeline::KEEP;
use pmc_dxg::Block;
use pmc_dxg::defs::{DefBody, Definitions};
use pmc_dxg::expr::{BinOp, Expr};
use pmc_dxg::hygiene::{self, Discard, DispatchKey, HygieneRow, SQ_WAVES};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a counter reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deps {
    /// It is a GRBM base counter.
    pub base_grbm: bool,
    /// It is derived (an expression).
    pub derived: bool,
    /// Any input is a GRBM counter.
    pub uses_grbm: bool,
    /// SQ_WAVES is an input.
    pub uses_sq_waves: bool,
    /// The base counters it divides by (anywhere on the right of a `/`).
    pub divisors: BTreeSet<String>,
    /// Of those, the GRBM ones.
    pub grbm_divisors: BTreeSet<String>,
}

/// The seed's derived counters and the GRBM counter each divides by, for names the
/// definitions do not know.
const SEED_DIVISIONS: [(&str, &str); 7] = [
    ("GPU_UTIL", "GRBM_COUNT"),
    ("CU_UTILIZATION", "GRBM_COUNT"),
    ("VALUBusy", "GRBM_GUI_ACTIVE"),
    ("SALUBusy", "GRBM_GUI_ACTIVE"),
    ("MemUnitStalled", "GRBM_GUI_ACTIVE"),
    ("LDSBankConflict", "GRBM_GUI_ACTIVE"),
    ("MeanOccupancyPerCU", "GRBM_GUI_ACTIVE"),
];

/// What counters are, from the definitions (when they load).
pub struct Knowledge {
    defs: Option<Definitions>,
    cache: HashMap<(String, Option<String>), Deps>,
}

impl Knowledge {
    /// From `rocprof`'s definitions (as `rocprof avail` finds them), or the fallbacks alone.
    pub fn load() -> Knowledge {
        let defs = pmc_dxg::collection::definitions()
            .map_err(|e| tracing::debug!("analyze: no counter definitions: {e:#}"))
            .ok();
        Knowledge::with(defs)
    }

    /// From given definitions.
    pub fn with(defs: Option<Definitions>) -> Knowledge {
        Knowledge {
            defs,
            cache: HashMap::new(),
        }
    }

    /// What `name` reads, on a GPU named `gfx` when known.
    pub fn deps(&mut self, name: &str, gfx: Option<&str>) -> Deps {
        let key = (name.to_owned(), gfx.map(str::to_owned));
        if let Some(d) = self.cache.get(&key) {
            return d.clone();
        }
        let mut d = Deps::default();
        self.expand(name, gfx, false, 0, &mut d);
        self.cache.insert(key, d.clone());
        d
    }

    fn body(&self, name: &str, gfx: Option<&str>) -> Option<&DefBody> {
        let c = self
            .defs
            .as_ref()?
            .counters()
            .iter()
            .find(|c| c.name == name)?;
        gfx.and_then(|g| c.definition_for(g))
            .map(|(d, _)| d)
            .or_else(|| c.definitions.first())
            .map(|d| &d.body)
    }

    fn base(&self, name: &str, grbm: bool, divisor: bool, top: bool, out: &mut Deps) {
        if grbm {
            out.uses_grbm = true;
            out.base_grbm |= top;
        }
        if name == SQ_WAVES {
            out.uses_sq_waves = true;
        }
        if divisor {
            out.divisors.insert(name.to_owned());
            if grbm {
                out.grbm_divisors.insert(name.to_owned());
            }
        }
    }

    fn expand(&self, name: &str, gfx: Option<&str>, divisor: bool, depth: usize, out: &mut Deps) {
        if depth > 32 {
            return;
        }
        let top = depth == 0;
        match self.body(name, gfx) {
            Some(DefBody::Base(event)) => {
                self.base(name, event.block == Block::Grbm, divisor, top, out);
            }
            Some(DefBody::Derived(text)) => {
                out.derived |= top;
                if let Ok(e) = Expr::parse(name, text) {
                    self.walk(&e, gfx, divisor, depth, out);
                }
            }
            None => {
                if let Some((_, by)) = SEED_DIVISIONS.iter().find(|(n, _)| *n == name) {
                    out.derived |= top;
                    self.base(by, true, true, false, out);
                } else if name.starts_with("GRBM_") {
                    self.base(name, true, divisor, top, out);
                } else if name.starts_with("SQ_") {
                    self.base(name, false, divisor, top, out);
                }
            }
        }
    }

    fn walk(&self, e: &Expr, gfx: Option<&str>, divisor: bool, depth: usize, out: &mut Deps) {
        match e {
            Expr::Number(_) => {}
            Expr::Name(n) => self.expand(n, gfx, divisor, depth + 1, out),
            Expr::Accumulate { name, .. } => self.expand(name, gfx, divisor, depth + 1, out),
            Expr::Binary { op, lhs, rhs } => {
                self.walk(lhs, gfx, divisor, depth, out);
                self.walk(rhs, gfx, divisor || *op == BinOp::Div, depth, out);
            }
            Expr::Reduce { arg, .. } | Expr::Select { arg, .. } => {
                self.walk(arg, gfx, divisor, depth, out);
            }
        }
    }
}

/// A dispatch whose counters read a zero that is not a measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZeroRead {
    /// Which run of the group (0-based).
    pub run: usize,
    /// The dispatch.
    pub dispatch_id: u64,
    /// Its kernel.
    pub kernel: String,
    /// Its start after the run's first counted dispatch, ms (when it has timestamps).
    pub after_first_ms: Option<f64>,
}

/// A run's GRBM zeros as a burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Burst {
    /// Which run (0-based).
    pub run: usize,
    /// Dispatches affected.
    pub dispatches: usize,
    /// The first and last affected dispatch ids.
    pub first_dispatch_id: u64,
    /// See `first_dispatch_id`.
    pub last_dispatch_id: u64,
    /// It starts at the run's first counted dispatch and is contiguous (as the seed's are).
    pub at_session_start: bool,
    /// From the first counted dispatch's start to the last affected one's, ms.
    pub span_ms: Option<f64>,
}

/// A derived counter that divided, or would have divided, by a zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Division {
    /// Which run (0-based).
    pub run: usize,
    /// The dispatch.
    pub dispatch_id: u64,
    /// Its kernel.
    pub kernel: String,
    /// The derived counter.
    pub counter: String,
    /// The divisors that read 0 (or were set aside as zeros).
    pub divisors: Vec<String>,
    /// The value the input has (`None`: set aside, no value).
    pub value: Option<f64>,
}

/// One counter over every dispatch of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSpan {
    /// The counter.
    pub counter: String,
    /// Dispatch × counter values.
    pub values: usize,
    /// Of which with an estimate.
    pub estimated: usize,
    /// The largest spread between runs, percent.
    pub largest_spread_percent: Option<f64>,
    /// Values whose runs spread by more than 5 %.
    pub contaminated: usize,
}

/// The counters of one group of matched processes (one per run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The processes matched, one per run.
    pub runs: Vec<String>,
    /// Where each run's values come from.
    pub origins: Vec<CounterOrigin>,
    /// The counters.
    pub counters: Vec<String>,
    /// Dispatches with counter values (over the runs, matched ones once).
    pub dispatches: usize,
    /// Dispatches that only some runs have.
    pub unmatched_dispatches: usize,
    /// Runs over which each value was estimated, as rocprof's own `--pmc-repeat` figures say
    /// (`Some` only when these rows are that input's `counter_hygiene.csv`).
    pub repeat_runs: Option<usize>,
    /// Per dispatch × counter (the first [`KEEP`]).
    pub rows: Vec<HygieneRow>,
    /// Every row.
    pub rows_total: usize,
    /// Per counter.
    pub per_counter: Vec<CounterSpan>,
    /// GRBM zeros.
    pub grbm_zero: Vec<ZeroRead>,
    /// Per run, the GRBM zeros as a burst.
    pub grbm_bursts: Vec<Burst>,
    /// Isolated SQ zeros (SQ_WAVES read 0 on a dispatch that ran).
    pub sq_zero: Vec<ZeroRead>,
    /// Values set aside over runs because they read 0 where other runs did not.
    pub isolated_zeros: usize,
    /// Derived counters that divided, or would have divided, by a zero.
    pub divisions: Vec<Division>,
    /// rocprof's summary lines over the rows (`pmc_dxg::hygiene::summary`).
    pub summary: Vec<String>,
}

/// One counter's value (or why it has none) for one dispatch.
type Sample = (String, Result<f64, Discard>);

/// What one run's process contributes, flagged.
struct RunData {
    /// Per dispatch id: the counter values after the hygiene.
    samples: BTreeMap<u64, Vec<Sample>>,
    /// Per matched identity, the dispatch id and key.
    by_key: HashMap<MatchKey, (u64, DispatchKey)>,
    /// Dispatch ids in id order, with their identity.
    order: Vec<(u64, MatchKey)>,
    grbm_zero: Vec<ZeroRead>,
    burst: Option<Burst>,
    sq_zero: Vec<ZeroRead>,
    divisions: Vec<Division>,
}

/// What matches dispatches across runs: kernel, ordinal, grid volume, workgroup volume.
type MatchKey = (String, u64, u128, u128);

fn volume(v: [u32; 3]) -> u128 {
    v.iter().map(|&x| u128::from(x)).product()
}

fn match_key(k: &DispatchKey) -> MatchKey {
    (
        k.kernel.clone(),
        k.ordinal,
        volume(k.grid),
        volume(k.workgroup),
    )
}

/// Flags one process's values and computes its dispatches' identities.
fn prepare(p: &Process, run: usize, know: &mut Knowledge) -> RunData {
    let gfx = p.gfx.as_deref();
    let dispatches = if p.counters.dispatches.is_empty() {
        &p.dispatches
    } else {
        &p.counters.dispatches
    };
    let by_id: HashMap<u64, &crate::model::Dispatch> =
        dispatches.iter().map(|d| (d.id, d)).collect();
    let dispatch = |id: u64| by_id.get(&id).copied();
    let mut by_dispatch: BTreeMap<u64, Vec<&CounterValue>> = BTreeMap::new();
    for v in &p.counters.values {
        by_dispatch.entry(v.dispatch_id).or_default().push(v);
    }
    // The run's first counted dispatch (by start) anchors "after the first" and bursts.
    let mut counted: Vec<(u64, u64)> = by_dispatch
        .keys()
        .map(|&id| (dispatch(id).map_or(0, |d| d.start), id))
        .collect();
    counted.sort_unstable();
    let first_start = counted.iter().map(|c| c.0).find(|&s| s > 0);
    let after_first = |id: u64| -> Option<f64> {
        let s = dispatch(id).map(|d| d.start).filter(|&s| s > 0)?;
        Some(s.saturating_sub(first_start?) as f64 / 1e6)
    };
    let mut data = RunData {
        samples: BTreeMap::new(),
        by_key: HashMap::new(),
        order: Vec::new(),
        grbm_zero: Vec::new(),
        burst: None,
        sq_zero: Vec::new(),
        divisions: Vec::new(),
    };
    let mut grbm_ids: BTreeSet<u64> = BTreeSet::new();
    for (&id, values) in &by_dispatch {
        let d = dispatch(id);
        let kernel = d.map_or(String::new(), |d| d.kernel.clone());
        let ran_by_time = d.is_some_and(|d| d.end > d.start);
        let deps: Vec<Deps> = values.iter().map(|v| know.deps(&v.name, gfx)).collect();
        let ok = |v: &CounterValue| v.value.ok();
        let waves = values
            .iter()
            .find(|v| v.name == SQ_WAVES)
            .and_then(|v| ok(v));
        let ran = ran_by_time || waves.is_some_and(|w| w > 0.0);
        let grbm: Vec<f64> = values
            .iter()
            .zip(&deps)
            .filter(|(_, d)| d.base_grbm)
            .filter_map(|(v, _)| ok(v))
            .collect();
        // A derived counter over a GRBM divisor reading exactly 0: the divisor read 0.
        let inferred = grbm.is_empty()
            && values
                .iter()
                .zip(&deps)
                .any(|(v, d)| d.derived && !d.grbm_divisors.is_empty() && ok(v) == Some(0.0));
        let already = values.iter().any(|v| v.value == Err(Discard::GrbmZero));
        let grbm_zero =
            already || (ran && ((!grbm.is_empty() && grbm.iter().all(|&g| g == 0.0)) || inferred));
        let sq_zero = values.iter().any(|v| v.value == Err(Discard::SqZero))
            || (ran_by_time && waves == Some(0.0));
        if grbm_zero {
            grbm_ids.insert(id);
            data.grbm_zero.push(ZeroRead {
                run,
                dispatch_id: id,
                kernel: kernel.clone(),
                after_first_ms: after_first(id),
            });
        }
        if sq_zero {
            data.sq_zero.push(ZeroRead {
                run,
                dispatch_id: id,
                kernel: kernel.clone(),
                after_first_ms: after_first(id),
            });
        }
        let zero_named: BTreeSet<&str> = values
            .iter()
            .filter(|v| v.value == Ok(0.0) || v.value.is_err_and(|d| d.is_zero_read()))
            .map(|v| v.name.as_str())
            .collect();
        let mut out = Vec::with_capacity(values.len());
        for (v, dep) in values.iter().zip(&deps) {
            let value = match v.value {
                Ok(x) if !x.is_finite() => Err(Discard::NotFinite),
                Ok(_) if grbm_zero && dep.uses_grbm => Err(Discard::GrbmZero),
                Ok(_) if sq_zero && dep.uses_sq_waves => Err(Discard::SqZero),
                other => other,
            };
            if dep.derived && !dep.divisors.is_empty() {
                let mut zeros: Vec<String> = dep
                    .divisors
                    .iter()
                    .filter(|n| {
                        zero_named.contains(n.as_str())
                            || (grbm_zero && dep.grbm_divisors.contains(*n))
                            || (sq_zero && n.as_str() == SQ_WAVES)
                    })
                    .cloned()
                    .collect();
                if zeros.is_empty() && v.value.is_ok_and(|x| !x.is_finite()) {
                    zeros = dep.divisors.iter().cloned().collect();
                }
                if !zeros.is_empty() {
                    data.divisions.push(Division {
                        run,
                        dispatch_id: id,
                        kernel: kernel.clone(),
                        counter: v.name.clone(),
                        divisors: zeros,
                        value: v.value.ok(),
                    });
                }
            }
            out.push((v.name.clone(), value));
        }
        data.samples.insert(id, out);
    }
    data.burst = burst(run, &counted, &grbm_ids, first_start, |id| {
        dispatch(id).map(|d| d.start).filter(|&s| s > 0)
    });
    // Identities: rocprof's own where it computed them, else over every dispatch in id order.
    let mut ordered: Vec<&crate::model::Dispatch> = dispatches.iter().collect();
    ordered.sort_by_key(|d| d.id);
    let computed = hygiene::keys(
        ordered
            .iter()
            .map(|d| (d.kernel.as_str(), d.grid, d.workgroup)),
    );
    let computed: HashMap<u64, DispatchKey> = ordered.iter().map(|d| d.id).zip(computed).collect();
    for &id in data.samples.keys() {
        let key = p
            .counters
            .keys
            .get(&id)
            .or_else(|| computed.get(&id))
            .cloned()
            .unwrap_or_else(|| DispatchKey {
                kernel: String::new(),
                ordinal: id,
                grid: [0; 3],
                workgroup: [0; 3],
            });
        let m = match_key(&key);
        data.order.push((id, m.clone()));
        data.by_key.entry(m).or_insert((id, key));
    }
    data
}

/// The GRBM zeros of a run as a burst, when there are any.
fn burst(
    run: usize,
    counted: &[(u64, u64)],
    flagged: &BTreeSet<u64>,
    first_start: Option<u64>,
    start_of: impl Fn(u64) -> Option<u64>,
) -> Option<Burst> {
    if flagged.is_empty() {
        return None;
    }
    let positions: Vec<usize> = counted
        .iter()
        .enumerate()
        .filter(|(_, (_, id))| flagged.contains(id))
        .map(|(k, _)| k)
        .collect();
    let contiguous_from_start = positions.iter().enumerate().all(|(k, &pos)| k == pos);
    let first = counted[positions[0]].1;
    let last = counted[*positions.last().unwrap_or(&0)].1;
    let span_ms = match (first_start, start_of(last)) {
        (Some(f), Some(l)) => Some(l.saturating_sub(f) as f64 / 1e6),
        _ => None,
    };
    Some(Burst {
        run,
        dispatches: positions.len(),
        first_dispatch_id: first,
        last_dispatch_id: last,
        at_session_start: contiguous_from_start,
        span_ms,
    })
}

/// The counter trust of `runs`, each a list of processes in start order: one group per
/// position.
pub fn analyse(runs: &[Vec<&Process>], know: &mut Knowledge) -> Vec<Group> {
    let positions = runs.iter().map(Vec::len).max().unwrap_or(0);
    let mut groups = Vec::new();
    for k in 0..positions {
        let members: Vec<&Process> = runs.iter().filter_map(|r| r.get(k).copied()).collect();
        if members.iter().all(|p| p.counters.values.is_empty()) {
            continue;
        }
        groups.push(group(&members, know));
    }
    groups
}

fn group(members: &[&Process], know: &mut Knowledge) -> Group {
    let data: Vec<RunData> = members
        .iter()
        .enumerate()
        .map(|(run, p)| prepare(p, run, know))
        .collect();
    let mut counters: Vec<String> = Vec::new();
    for p in members {
        for v in &p.counters.values {
            if !counters.contains(&v.name) {
                counters.push(v.name.clone());
            }
        }
    }
    // Identities in the first run's order, then those only later runs have.
    let mut keys: Vec<MatchKey> = Vec::new();
    let mut seen: BTreeSet<MatchKey> = BTreeSet::new();
    for d in &data {
        for (_, m) in &d.order {
            if seen.insert(m.clone()) {
                keys.push(m.clone());
            }
        }
    }
    let unmatched = keys
        .iter()
        .filter(|m| data.iter().any(|d| !d.by_key.contains_key(*m)))
        .count();
    let repeat = (members.len() == 1 && !members[0].counters.repeat_rows.is_empty())
        .then(|| members[0].counters.repeat_rows.clone());
    let rows: Vec<HygieneRow> = match &repeat {
        Some(rows) => rows.clone(),
        None => {
            let mut rows = Vec::new();
            for m in &keys {
                let Some((id, key)) = data.iter().find_map(|d| d.by_key.get(m)) else {
                    continue;
                };
                for counter in &counters {
                    let samples: Vec<Result<f64, Discard>> = data
                        .iter()
                        .filter_map(|d| {
                            let (id, _) = d.by_key.get(m)?;
                            d.samples
                                .get(id)?
                                .iter()
                                .find(|(n, _)| n == counter)
                                .map(|(_, v)| *v)
                        })
                        .collect();
                    if samples.is_empty() {
                        continue;
                    }
                    rows.push(HygieneRow {
                        dispatch_id: *id,
                        key: key.clone(),
                        counter: counter.clone(),
                        estimate: hygiene::estimate(&samples),
                    });
                }
            }
            rows
        }
    };
    let per_counter = counters
        .iter()
        .map(|c| {
            let of: Vec<&HygieneRow> = rows.iter().filter(|r| &r.counter == c).collect();
            CounterSpan {
                counter: c.clone(),
                values: of.len(),
                estimated: of.iter().filter(|r| r.estimate.estimate.is_some()).count(),
                largest_spread_percent: of
                    .iter()
                    .filter_map(|r| r.estimate.spread_percent)
                    .reduce(f64::max),
                contaminated: of
                    .iter()
                    .filter(|r| hygiene::contaminated(&r.estimate))
                    .count(),
            }
        })
        .collect();
    let isolated_zeros = rows
        .iter()
        .flat_map(|r| &r.estimate.discarded)
        .filter(|(_, d)| *d == Discard::IsolatedZero)
        .count();
    let summary = hygiene::summary(&rows);
    let rows_total = rows.len();
    let mut rows = rows;
    rows.truncate(KEEP);
    let mut g = Group {
        runs: members.iter().map(|p| p.label.clone()).collect(),
        origins: members.iter().map(|p| p.counters.origin).collect(),
        counters,
        dispatches: keys.len(),
        unmatched_dispatches: unmatched,
        repeat_runs: repeat
            .as_ref()
            .and_then(|r| r.iter().map(|r| r.estimate.runs).max()),
        rows,
        rows_total,
        per_counter,
        grbm_zero: Vec::new(),
        grbm_bursts: Vec::new(),
        sq_zero: Vec::new(),
        isolated_zeros,
        divisions: Vec::new(),
        summary,
    };
    for d in data {
        g.grbm_zero.extend(d.grbm_zero);
        g.grbm_bursts.extend(d.burst);
        g.sq_zero.extend(d.sq_zero);
        g.divisions.extend(d.divisions);
    }
    g.grbm_zero.truncate(KEEP);
    g.sq_zero.truncate(KEEP);
    g.divisions.truncate(KEEP);
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Dispatch;

    fn know() -> Knowledge {
        // The built-in definitions of the simulated GPU.
        Knowledge::with(Definitions::built_in().ok())
    }

    fn process(
        label: &str,
        dispatches: &[(u64, u64, u64)],
        values: &[(u64, &str, f64)],
    ) -> Process {
        let mut p = Process::new(label.into());
        for &(id, start, end) in dispatches {
            p.dispatches.push(Dispatch {
                id,
                kernel: "axpb".into(),
                cid: id,
                tid: None,
                start,
                end,
                grid: [256, 1, 1],
                workgroup: [64, 1, 1],
                agent: "Agent 1".into(),
            });
        }
        for &(id, name, value) in values {
            p.counters.values.push(CounterValue {
                dispatch_id: id,
                name: name.into(),
                value: Ok(value),
            });
        }
        p.counters.origin = CounterOrigin::Csv;
        p.gfx = Some("gfx1150".into());
        p
    }

    #[test]
    fn definitions_say_what_divides_by_what() {
        let mut k = know();
        let gpu = k.deps("GPU_UTIL", Some("gfx1150"));
        assert!(gpu.derived && gpu.uses_grbm && !gpu.base_grbm);
        assert_eq!(
            gpu.divisors.iter().map(String::as_str).collect::<Vec<_>>(),
            ["GRBM_COUNT"]
        );
        let grbm = k.deps("GRBM_COUNT", Some("gfx1150"));
        assert!(grbm.base_grbm && !grbm.derived && grbm.divisors.is_empty());
        let valu = k.deps("VALUInsts", None);
        assert!(valu.uses_sq_waves && !valu.uses_grbm);
        assert_eq!(valu.divisors.iter().collect::<Vec<_>>(), ["SQ_WAVES"]);
        // MeanOccupancyPerCU divides by GRBM_GUI_ACTIVE and by CU_NUM (a property: no counter).
        let occ = k.deps("MeanOccupancyPerCU", None);
        assert_eq!(
            occ.grbm_divisors.iter().collect::<Vec<_>>(),
            ["GRBM_GUI_ACTIVE"]
        );
        // Without definitions: the seed's list and the prefixes.
        let mut bare = Knowledge::with(None);
        assert_eq!(
            bare.deps("CU_UTILIZATION", None)
                .grbm_divisors
                .iter()
                .collect::<Vec<_>>(),
            ["GRBM_COUNT"]
        );
        assert!(bare.deps("GRBM_GUI_ACTIVE", None).base_grbm);
        assert!(bare.deps("SQ_WAVES", None).uses_sq_waves);
        assert_eq!(bare.deps("TA_BUSY", None), Deps::default());
    }

    #[test]
    fn an_opening_grbm_burst_is_flagged_with_what_divided_by_it() {
        // rocprofv3 writes the zeros; GPU_UTIL's x/0 is 0.
        let p = process(
            "upstream",
            &[
                (1, 1_000_000, 2_000_000),
                (2, 3_000_000, 4_000_000),
                (3, 5_000_000, 6_000_000),
            ],
            &[
                (1, "GRBM_COUNT", 0.0),
                (1, "GPU_UTIL", 0.0),
                (1, "SQ_WAVES", 8192.0),
                (2, "GRBM_COUNT", 0.0),
                (2, "GPU_UTIL", 0.0),
                (2, "SQ_WAVES", 8192.0),
                (3, "GRBM_COUNT", 219_301.0),
                (3, "GPU_UTIL", 98.5),
                (3, "SQ_WAVES", 8192.0),
            ],
        );
        let groups = analyse(&[vec![&p]], &mut know());
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        let ids: Vec<u64> = g.grbm_zero.iter().map(|z| z.dispatch_id).collect();
        assert_eq!(ids, [1, 2]);
        assert_eq!(g.grbm_zero[1].after_first_ms, Some(2.0));
        let b = &g.grbm_bursts[0];
        assert!(b.at_session_start, "{b:?}");
        assert_eq!(
            (b.dispatches, b.first_dispatch_id, b.last_dispatch_id),
            (2, 1, 2)
        );
        assert_eq!(b.span_ms, Some(2.0));
        let div: Vec<(u64, &str)> = g
            .divisions
            .iter()
            .map(|d| (d.dispatch_id, d.counter.as_str()))
            .collect();
        assert_eq!(div, [(1, "GPU_UTIL"), (2, "GPU_UTIL")]);
        assert_eq!(g.divisions[0].divisors, ["GRBM_COUNT"]);
        // The set-aside values get no estimate; SQ_WAVES is untouched.
        let est = |id: u64, c: &str| {
            g.rows
                .iter()
                .find(|r| r.dispatch_id == id && r.counter == c)
                .unwrap()
                .estimate
                .clone()
        };
        assert_eq!(est(1, "GPU_UTIL").estimate, None);
        assert_eq!(est(1, "GPU_UTIL").discarded, [(0, Discard::GrbmZero)]);
        assert_eq!(est(1, "GRBM_COUNT").estimate, None);
        assert_eq!(est(1, "SQ_WAVES").estimate, Some(8192.0));
        assert_eq!(est(3, "GPU_UTIL").estimate, Some(98.5));
        assert!(g.sq_zero.is_empty());
    }

    #[test]
    fn zeros_later_in_the_session_are_not_a_session_start_burst() {
        let p = process(
            "late",
            &[(1, 1_000, 2_000), (2, 3_000, 4_000), (3, 5_000, 6_000)],
            &[
                (1, "GRBM_COUNT", 10.0),
                (2, "GRBM_COUNT", 0.0),
                (3, "GRBM_COUNT", 10.0),
            ],
        );
        let g = &analyse(&[vec![&p]], &mut know())[0];
        assert!(!g.grbm_bursts[0].at_session_start);
        assert_eq!(g.grbm_zero[0].dispatch_id, 2);
    }

    #[test]
    fn a_dispatch_that_did_not_run_may_count_nothing() {
        // Zero duration and no waves: its zeros are not flagged.
        let p = process(
            "idle",
            &[(1, 5_000, 5_000)],
            &[(1, "GRBM_COUNT", 0.0), (1, "SQ_WAVES", 0.0)],
        );
        let g = &analyse(&[vec![&p]], &mut know())[0];
        assert!(g.grbm_zero.is_empty() && g.sq_zero.is_empty());
        assert_eq!(
            g.rows
                .iter()
                .filter(|r| r.estimate.estimate == Some(0.0))
                .count(),
            2
        );
    }

    #[test]
    fn an_sq_zero_and_a_not_finite_value_are_set_aside() {
        let p = process(
            "sq",
            &[(1, 1_000, 2_000)],
            &[
                (1, "SQ_WAVES", 0.0),
                (1, "VALUInsts", f64::NAN),
                (1, "GRBM_COUNT", 500.0),
            ],
        );
        let g = &analyse(&[vec![&p]], &mut know())[0];
        assert_eq!(g.sq_zero.len(), 1);
        let why = |c: &str| {
            g.rows
                .iter()
                .find(|r| r.counter == c)
                .unwrap()
                .estimate
                .discarded
                .clone()
        };
        assert_eq!(why("SQ_WAVES"), [(0, Discard::SqZero)]);
        assert_eq!(why("VALUInsts"), [(0, Discard::NotFinite)]);
        assert!(why("GRBM_COUNT").is_empty());
        assert_eq!(g.divisions.len(), 1);
        assert_eq!(g.divisions[0].divisors, ["SQ_WAVES"]);
        assert!(g.divisions[0].value.unwrap().is_nan());
    }

    #[test]
    fn runs_are_matched_by_kernel_ordinal_and_size_and_estimated_as_rocprof_does() {
        let run = |label: &str, waves: [f64; 2]| {
            process(
                label,
                &[(1, 1_000, 2_000), (2, 3_000, 4_000)],
                &[(1, "SQ_WAVES", waves[0]), (2, "SQ_WAVES", waves[1])],
            )
        };
        let a = run("a", [9_000.0, 8_192.0]);
        let b = run("b", [8_192.0, 0.0]);
        let mut c = run("c", [8_500.0, 8_300.0]);
        // Another run's ids differ: matching is by identity, not id.
        for d in &mut c.dispatches {
            d.id += 100;
        }
        for v in &mut c.counters.values {
            v.dispatch_id += 100;
        }
        let groups = analyse(&[vec![&a], vec![&b], vec![&c]], &mut know());
        let g = &groups[0];
        assert_eq!((g.dispatches, g.unmatched_dispatches), (2, 0));
        assert_eq!(g.runs, ["a", "b", "c"]);
        let first = &g.rows[0].estimate;
        assert_eq!(
            (first.estimate, first.min, first.max),
            (Some(8_192.0), Some(8_192.0), Some(9_000.0))
        );
        assert_eq!(first.runs, 3);
        assert!(hygiene::contaminated(first));
        // Run b's 0 is an isolated zero beside 8,192 and 8,300 (it ran: b's zero is an SQ zero
        // already, so it is set aside either way).
        let second = &g.rows[1].estimate;
        assert_eq!(second.estimate, Some(8_192.0));
        assert_eq!(second.runs_used, 2);
        assert_eq!(second.zeros_discarded, 1);
        assert!(
            g.summary[0].contains("2 dispatch-counter values estimated from 3 runs"),
            "{:?}",
            g.summary
        );
        assert_eq!(g.per_counter[0].contaminated, 1);
    }

    #[test]
    fn dispatches_only_some_runs_have_are_counted() {
        let a = process(
            "a",
            &[(1, 1, 2), (2, 3, 4)],
            &[(1, "SQ_WAVES", 5.0), (2, "SQ_WAVES", 5.0)],
        );
        let b = process("b", &[(1, 1, 2)], &[(1, "SQ_WAVES", 6.0)]);
        let g = &analyse(&[vec![&a], vec![&b]], &mut know())[0];
        assert_eq!((g.dispatches, g.unmatched_dispatches), (2, 1));
        assert_eq!(g.rows[1].estimate.runs, 1);
    }

    #[test]
    fn processes_without_counters_make_no_group() {
        let p = process("none", &[(1, 1, 2)], &[]);
        assert!(analyse(&[vec![&p]], &mut know()).is_empty());
        assert!(analyse(&[], &mut know()).is_empty());
    }
}
