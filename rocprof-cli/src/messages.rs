//! The CLI's own refusals of options and input files, before anything runs (exit code 2;
//! docs/troubleshooting.md lists each with its fix). What the libraries say arrives as typed
//! notices instead ([`crate::report`]).
//!
//! The messages hold the values they echo exactly as given; `main` writes them as one
//! terminal-safe line ([`crate::report::error_line`]: every control, bidirectional control and
//! backslash escaped), so each message is one line of its own.

use std::path::Path;

/// `rocprof [options]` without an application.
pub fn nothing_to_run() -> String {
    "nothing to run: give the application after `--`, e.g. `rocprof --sys-trace -- ./app`".into()
}

/// `--stats`/`-S` without any tracing option.
pub fn stats_without_tracing() -> String {
    "--stats and --summary need a tracing option (e.g. --sys-trace or --kernel-trace)".into()
}

/// A merge input that is a format word: `-f` takes one word per occurrence there.
pub fn format_as_input(word: &str) -> String {
    format!(
        "merge input '{word}' does not exist and is a format name: give several formats as \
         one comma-separated word or repeat the option (`-f csv,{word}` or `-f csv -f {word}`)"
    )
}

/// `-f xml`.
pub fn format_unknown(f: &str) -> String {
    format!(
        "unknown --output-format '{f}' (expected csv, json, pftrace, rocpd or otf2){}",
        if Path::new(f).is_dir() {
            "; it looks like a record directory: put the directories before the options (`rocprof convert DIR… -f csv`)"
        } else {
            ""
        }
    )
}

/// A kernel filter that does not compile.
pub fn regex_invalid(which: &str, re: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "--kernel-{which}-regex '{re}' is not a valid regular expression: {}",
        rocprof_runner::summary::regex_reason(e)
    )
}

/// `-i` together with `--pmc`.
pub fn input_with_pmc() -> String {
    "-i/--input and --pmc both name counters; put the counters in the input file (pmc: lines or a job's pmc), or drop -i".into()
}

/// An input file that cannot be used.
pub fn input_refused(e: &crate::input::InputError) -> String {
    format!("cannot use the input file: {e}")
}

/// `--replay-mode kernel` / `--kernel-replay-beta-enabled`.
pub fn kernel_replay_refused() -> String {
    "kernel replay (--replay-mode kernel, --kernel-replay-beta-enabled) is not available: replaying a kernel means saving and restoring every buffer it writes between replays, which rocprof does not do; several --pmc groups are collected by running the application once per group (application replay, the default), or give --pmc-repeat for repeated runs".into()
}

/// The simulated libdxcore cannot say whether its scenario is usable.
pub fn sim_diagnostic_unavailable(lib: &Path, why: &str) -> String {
    format!(
        "cannot ask the simulated {} whether its scenario is usable ({why}): rebuild the simulator with `cargo xtask build`",
        lib.display()
    )
}

/// `rocprof convert DIR -i …`.
pub fn merge_with_dirs() -> String {
    "give the inputs of a merge after -i only (`rocprof convert -i A B …`), or convert kept directories without -i".into()
}

/// A counter request pmc-dxg refused, with the CLI's hint (`nothing`: what a missing GPU
/// means here, e.g. "no counters can be collected").
pub fn counter_refusal(e: &pmc_dxg::Error, nothing: &str) -> String {
    use pmc_dxg::Error;
    match e {
        Error::SeveralPasses {
            gpu,
            agent,
            conflict,
            passes,
        } => {
            let split: Vec<String> = passes
                .iter()
                .map(|p| format!("--pmc {}", p.join(" ")))
                .collect();
            format!(
                "these counters do not fit one pass on GPU {gpu} ({agent}): {conflict}. Collect them in {} passes, each one run of the application: {} (`rocprof avail pmc-check` plans a set)",
                split.len(),
                split.join(" ")
            )
        }
        Error::CannotCollect { .. } => {
            format!("{e} (`rocprof avail list` lists the counters this GPU has)")
        }
        Error::NoGpu => {
            format!("no GPU agent was discovered, so {nothing} (`rocprof avail` says why)")
        }
        Error::NoSuchGpu(_) => {
            format!("{e} (`rocprof avail list --agent` lists the GPUs by index)")
        }
        _ => e.to_string(),
    }
}

/// An `-E/--extra-counters` file that cannot be used.
pub fn extra_counters_refused(e: &pmc_dxg::Error) -> String {
    format!("-E/--extra-counters: {e} (expected counter definitions in counter_defs.yaml's form)")
}

/// A counter group that names no counter: `--pmc ''`, or a job's empty `pmc`/`pmc_groups` entry
/// (`given` says which, as the user wrote it).
pub fn pmc_empty(given: &str) -> String {
    format!(
        "{given} names no counter: give one or more counter names (e.g. --pmc SQ_WAVES GRBM_COUNT; `rocprof avail list` lists the GPU's counters), or leave it out to run without counters"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regex_error_is_one_line_with_the_pattern_once() {
        let re = "(\x1b[2J";
        let e = regex::Regex::new(re).unwrap_err();
        assert!(
            e.to_string().contains('\n'),
            "regex's own errors are several lines"
        );
        assert_eq!(
            regex_invalid("include", re, &e),
            "--kernel-include-regex '(\x1b[2J' is not a valid regular expression: unclosed character class"
        );
        let e = regex_lite::Regex::new("(").unwrap_err();
        assert_eq!(
            regex_invalid("exclude", "(", &e),
            format!("--kernel-exclude-regex '(' is not a valid regular expression: {e}")
        );
    }
}
