//! Which dispatches an instrument takes: rocprofv3's kernel include and exclude regexes,
//! searched in the demangled kernel name (the mangled one when it does not demangle), decided
//! once per kernel id.

use regex_lite::Regex;
use std::collections::HashMap;
use std::sync::Mutex;

/// The include/exclude pair and the verdicts reached so far.
#[derive(Debug)]
pub struct KernelFilter {
    include: Option<Regex>,
    exclude: Option<Regex>,
    /// Whether a kernel (by id) is selected; unknown kernels (id 0) are decided by name each
    /// time.
    decided: Mutex<HashMap<u64, bool>>,
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
        })
    }

    /// Whether the kernel `kernel_id` (symbol name `name`) is selected.
    pub fn selects(&self, kernel_id: u64, name: Option<&str>) -> bool {
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
}
