//! The `summary` section: the per-domain duration statistics, as upstream's JSON writer writes
//! its statistics (one entry per domain that has records, in the order its tool gathers them:
//! kernel dispatches, HSA, HIP, copies, allocations, markers, then the rest).
//!
//! Each entry is `{"domain": <label>, "stats": {...}}`, the statistics being the domain's
//! totals (`count`, `sum`, `sqr`, `min`, `max`, `mean`, `stddev`, `variance`) and
//! `operations`, one `{"key": <name>, "value": {...the same eight...}}` per name in byte order
//! (cereal's layout of a map). Durations are nanoseconds; `sum` and `sqr` are exact (upstream
//! accumulates them in 64-bit integers, which wrap past 2⁶⁴; these do not). `variance` is the
//! sample variance as upstream computes it and `stddev` the root of its magnitude; both are 0
//! below two samples.
//!
//! The statistics are [`Stats::of`] the process's records, the same as the `-S` tables and the
//! stats files; kernel dispatches count only when they are traced (they are recorded for
//! counters too), as in `buffer_records`.

use crate::stats::{Acc, StatTable, Stats};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// The domains in the order upstream's tool gathers their statistics; others follow, sorted.
const ORDER: [&str; 13] = [
    "KERNEL_DISPATCH",
    "HSA_API",
    "HIP_API",
    "MEMORY_COPY",
    "MEMORY_ALLOCATION",
    "MARKER_API",
    "RCCL_API",
    "COUNTER_COLLECTION",
    "SCRATCH_MEMORY",
    "ROCDECODE_API",
    "PC_SAMPLING_HOST_TRAP",
    "ROCJPEG_API",
    "PC_SAMPLING_STOCHASTIC",
];

/// The `summary` array of one process.
pub(super) struct Summary {
    domains: Vec<(&'static str, StatTable)>,
}

impl Summary {
    /// No statistics: `[]`.
    pub(super) fn empty() -> Self {
        Self {
            domains: Vec::new(),
        }
    }

    /// The statistics `stats`, without the kernel dispatches unless `kernel_trace`.
    pub(super) fn of(stats: Stats, kernel_trace: bool) -> Self {
        let mut domains: Vec<(&'static str, StatTable)> = stats
            .into_tables()
            .filter(|(d, t)| !t.is_empty() && (kernel_trace || *d != "KERNEL_DISPATCH"))
            .collect();
        let rank = |d: &str| ORDER.iter().position(|o| *o == d).unwrap_or(ORDER.len());
        domains.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.0.cmp(b.0)));
        Self { domains }
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.domains.iter().map(|(domain, table)| Domain {
            domain,
            stats: DomainStats(table),
        }))
    }
}

/// One entry.
#[derive(Serialize)]
struct Domain<'a> {
    domain: &'a str,
    stats: DomainStats<'a>,
}

/// A domain's totals and its `operations`.
struct DomainStats<'a>(&'a StatTable);

impl Serialize for DomainStats<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(9))?;
        Figures(&self.0.totals()).entries(&mut m)?;
        let mut rows = self.0.sorted();
        rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let operations: Vec<Operation<'_>> = rows
            .into_iter()
            .map(|(key, acc)| Operation {
                key,
                value: Figures(acc),
            })
            .collect();
        m.serialize_entry("operations", &operations)?;
        m.end()
    }
}

/// `{"key": name, "value": figures}`.
#[derive(Serialize)]
struct Operation<'a> {
    key: &'a str,
    value: Figures<'a>,
}

/// The eight figures of one accumulator.
struct Figures<'a>(&'a Acc);

impl Figures<'_> {
    fn entries<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        let a = self.0;
        m.serialize_entry("count", &a.calls)?;
        m.serialize_entry("sum", &a.total)?;
        m.serialize_entry("sqr", &a.sum_of_squares())?;
        m.serialize_entry("min", &a.min)?;
        m.serialize_entry("max", &a.max)?;
        m.serialize_entry("mean", &a.average())?;
        m.serialize_entry("stddev", &a.stddev())?;
        m.serialize_entry("variance", &a.variance())
    }
}

impl Serialize for Figures<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(8))?;
        self.entries(&mut m)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn stats() -> Stats {
        let mut s = Stats::default();
        s.table("HIP_API").add("hipMemcpy", 0, 10);
        s.table("HIP_API").add("hipMemcpy", 0, 30);
        s.table("HIP_API").add("hipFree", 0, 5);
        s.table("MEMORY_COPY")
            .add("MEMORY_COPY_HOST_TO_DEVICE", 0, 7);
        s.table("KERNEL_DISPATCH").add("k", 0, 100);
        s
    }

    #[test]
    fn domains_come_in_upstreams_order_with_exact_figures() {
        let v: Value = serde_json::to_value(Summary::of(stats(), true)).unwrap();
        let domains: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["domain"].as_str().unwrap())
            .collect();
        assert_eq!(domains, ["KERNEL_DISPATCH", "HIP_API", "MEMORY_COPY"]);
        let hip = &v[1]["stats"];
        assert_eq!(hip["count"], 3);
        assert_eq!(hip["sum"], 45);
        assert_eq!(hip["sqr"], 100 + 900 + 25);
        assert_eq!(
            (hip["min"].clone(), hip["max"].clone()),
            (json!(5), json!(30))
        );
        assert_eq!(hip["mean"], 15.0);
        // (1025 − 45²/3) / 2 = 175.
        assert_eq!(hip["variance"], 175.0);
        assert_eq!(hip["stddev"], 175f64.sqrt());
        let ops = hip["operations"].as_array().unwrap();
        assert_eq!(ops[0]["key"], "hipFree");
        assert_eq!(ops[1]["key"], "hipMemcpy");
        assert_eq!(ops[1]["value"]["count"], 2);
        assert_eq!(ops[1]["value"]["variance"], 200.0);
        assert_eq!(ops[0]["value"]["variance"], 0.0, "one sample");
        // Upstream's order of the figures, and the totals before `operations`.
        let text = serde_json::to_string(&Summary::of(stats(), true)).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
        let order = [
            "count",
            "sum",
            "sqr",
            "min",
            "max",
            "mean",
            "stddev",
            "variance",
            "operations",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    }

    #[test]
    fn untraced_dispatches_and_no_statistics_write_nothing_of_theirs() {
        let v = serde_json::to_value(Summary::of(stats(), false)).unwrap();
        assert_eq!(v[0]["domain"], "HIP_API");
        assert_eq!(v.as_array().unwrap().len(), 2);
        let v = serde_json::to_value(Summary::empty()).unwrap();
        assert_eq!(v, json!([]));
    }
}
