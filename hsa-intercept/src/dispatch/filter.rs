//! Which dispatches an instrument takes: rocprofv3's kernel include and exclude regexes,
//! searched in the demangled kernel name (the mangled one when it does not demangle), decided
//! once per kernel id, then `--kernel-iteration-range`: which launches of a selected kernel
//! are taken, counted per kernel id from 1 over the launches the regexes select (as
//! rocprofiler-sdk's tool counts them).

use regex_lite::Regex;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use trace_records::ranges::IterationRanges;

/// Kernel ids whose launches are counted without a lock (ids count up from 1 per process);
/// launches of a kernel with a higher id are counted in a locked map.
const COUNTED_IDS: usize = 16_384;

/// Launches per kernel id, for the iteration ranges.
#[derive(Debug)]
struct Launches {
    ranges: IterationRanges,
    counts: Box<[AtomicU32]>,
    more: Mutex<HashMap<u64, u64>>,
}

impl Launches {
    /// Counts one launch of `kernel_id` and says whether its iteration is selected.
    fn take(&self, kernel_id: u64) -> bool {
        let n = match usize::try_from(kernel_id)
            .ok()
            .and_then(|k| self.counts.get(k))
        {
            Some(c) => u64::from(c.fetch_add(1, Ordering::Relaxed)).saturating_add(1),
            None => match self.more.lock() {
                Ok(mut m) => {
                    let n = m.entry(kernel_id).or_insert(0);
                    *n += 1;
                    *n
                }
                Err(_) => return false,
            },
        };
        self.ranges.contains(n)
    }
}

/// The include/exclude pair and the verdicts reached so far.
#[derive(Debug)]
pub struct KernelFilter {
    include: Option<Regex>,
    exclude: Option<Regex>,
    /// Whether a kernel (by id) is selected; unknown kernels (id 0) are decided by name each
    /// time.
    decided: Mutex<HashMap<u64, bool>>,
    launches: Option<Launches>,
}

impl KernelFilter {
    /// The filter of rocprofv3's `--kernel-include-regex` and `--kernel-exclude-regex` (empty
    /// patterns select everything). Fails naming the regex that does not compile.
    pub fn new(include: &Option<String>, exclude: &Option<String>) -> Result<Self, String> {
        let compile = |what: &str, re: &Option<String>| {
            re.as_deref()
                .filter(|r| !r.is_empty())
                .map(Regex::new)
                .transpose()
                .map_err(|e| format!("the kernel {what} regex is invalid: {e}"))
        };
        Ok(KernelFilter {
            include: compile("include", include)?,
            exclude: compile("exclude", exclude)?,
            decided: Mutex::new(HashMap::new()),
            launches: None,
        })
    }

    /// Takes only the launches `ranges` names of each selected kernel.
    pub fn with_iterations(mut self, ranges: Option<IterationRanges>) -> Self {
        self.launches = ranges.map(|ranges| Launches {
            ranges,
            counts: (0..COUNTED_IDS).map(|_| AtomicU32::new(0)).collect(),
            more: Mutex::new(HashMap::new()),
        });
        self
    }

    /// Whether this launch of the kernel `kernel_id` (symbol name `name`) is selected: its
    /// name passes the regexes and, with iteration ranges, this launch (counted here: ask once
    /// per dispatch) is one of the iterations named.
    pub fn selects(&self, kernel_id: u64, name: Option<&str>) -> bool {
        self.selects_kernel(kernel_id, name)
            && self.launches.as_ref().is_none_or(|l| l.take(kernel_id))
    }

    fn selects_kernel(&self, kernel_id: u64, name: Option<&str>) -> bool {
        if self.include.is_none() && self.exclude.is_none() {
            return true;
        }
        if kernel_id != 0
            && let Some(known) = self
                .decided
                .lock()
                .ok()
                .and_then(|m| m.get(&kernel_id).copied())
        {
            return known;
        }
        let name = name.unwrap_or("");
        let shown = cpp_demangle::Symbol::new(name.as_bytes())
            .ok()
            .and_then(|s| s.demangle().ok());
        let shown = shown.as_deref().unwrap_or(name);
        let verdict = self.include.as_ref().is_none_or(|re| re.is_match(shown))
            && !self.exclude.as_ref().is_some_and(|re| re.is_match(shown));
        if kernel_id != 0
            && let Ok(mut m) = self.decided.lock()
        {
            m.insert(kernel_id, verdict);
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demangled_name_is_searched_and_the_exclude_applies_after_the_include() {
        let f = KernelFilter::new(&Some("vector".into()), &Some("add".into())).unwrap();
        assert!(
            !f.selects(1, Some("_Z10vector_addPKfS0_Pfm")),
            "excluded after included"
        );
        let f = KernelFilter::new(&Some(r"^axpb\(".into()), &None).unwrap();
        assert!(
            f.selects(2, Some("_Z4axpbPKfPfm")),
            "demangled: axpb(float const*, …)"
        );
        assert!(!f.selects(3, Some("__amd_rocclr_copyBuffer")));
        assert!(
            KernelFilter::new(&Some("(".into()), &None)
                .unwrap_err()
                .contains("include")
        );
        let all = KernelFilter::new(&Some(String::new()), &None).unwrap();
        assert!(all.selects(0, None), "an empty pattern selects everything");
    }

    #[test]
    fn iterations_count_per_kernel_over_the_selected_launches_only() {
        let f = KernelFilter::new(&None, &Some("copyBuffer".into()))
            .unwrap()
            .with_iterations(Some(IterationRanges::parse("2-3").unwrap()));
        let axpb = |f: &KernelFilter| f.selects(1, Some("_Z4axpbPKfPfm"));
        let blit = |f: &KernelFilter| f.selects(2, Some("__amd_rocclr_copyBuffer"));
        let other = |f: &KernelFilter| f.selects(COUNTED_IDS as u64 + 7, Some("_Z3foov"));
        assert!(!axpb(&f), "launch 1");
        assert!(
            !blit(&f) && !blit(&f) && !blit(&f),
            "excluded: never counted"
        );
        assert!(axpb(&f) && axpb(&f), "launches 2 and 3");
        assert!(!axpb(&f), "launch 4");
        let taken: Vec<bool> = (0..4).map(|_| other(&f)).collect();
        assert_eq!(
            taken,
            [false, true, true, false],
            "a high kernel id counts too"
        );
        let every = KernelFilter::new(&None, &None)
            .unwrap()
            .with_iterations(None);
        assert!((0..5).all(|_| axpb(&every)), "no ranges: every launch");
    }
}
