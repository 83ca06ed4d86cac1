//! The seed's note on shell start-up files: Ubuntu's default `~/.bashrc` returns early for
//! non-interactive shells (`case $- in *i*) ;; *) return;; esac`), so anything it exports after
//! that line never reaches scripts, CI jobs or `ssh host command`. Those exports belong in
//! `~/.profile` (or the job script).

use crate::check::{Check, Env, and_list};
use std::path::{Path, PathBuf};

/// The check's name.
pub const CHECK: &str = "shell.startup";

/// Variables that steer a profiling run (exact names).
const NAMES: [&str; 2] = ["LD_LIBRARY_PATH", "LD_PRELOAD"];
/// Prefixes of variables that steer a profiling run.
const PREFIXES: [&str; 7] = [
    "HSA_", "ROCPROF", "ROCM", "WSLKMT_", "HIP_", "ROCR_", "AMD_",
];

fn relevant(name: &str) -> bool {
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Where `~/.bashrc` stops for non-interactive shells: the 1-based line of the `return`.
pub fn early_return(text: &str) -> Option<usize> {
    let mut in_case: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let tests_interactive = line.contains("$-") || line.contains("PS1");
        let returns = line
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| w == "return");
        if line.starts_with("case") && tests_interactive {
            if returns && line.contains("esac") {
                return Some(i + 1);
            }
            in_case = Some(i + 1);
            continue;
        }
        if in_case.is_some() {
            if returns {
                return Some(i + 1);
            }
            if line.starts_with("esac") {
                in_case = None;
            }
            continue;
        }
        if tests_interactive && returns {
            return Some(i + 1);
        }
    }
    None
}

/// The variables `text` exports, with their 1-based lines (`export A=… B`, `declare -x A=…`).
pub fn exports(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        for statement in line.split([';', '&', '|']) {
            let mut words = statement.split_whitespace();
            let rest: Vec<&str> = match words.next() {
                Some("export") => words.collect(),
                Some("declare" | "typeset") => {
                    let w: Vec<&str> = words.collect();
                    if !w.iter().any(|f| f.starts_with('-') && f.contains('x')) {
                        continue;
                    }
                    w.into_iter().filter(|f| !f.starts_with('-')).collect()
                }
                _ => continue,
            };
            for word in rest {
                let name = word.split('=').next().unwrap_or_default();
                let valid = !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit());
                if valid {
                    out.push((name.to_owned(), i + 1));
                }
            }
        }
    }
    out
}

/// The login file bash reads (the first of `~/.bash_profile`, `~/.bash_login`, `~/.profile`
/// that exists), and `~/.profile` (which sh-compatible login shells read).
fn login_files(home: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(bash) = [".bash_profile", ".bash_login", ".profile"]
        .iter()
        .map(|n| home.join(n))
        .find(|p| p.is_file())
    {
        files.push(bash);
    }
    let profile = home.join(".profile");
    if profile.is_file() && !files.contains(&profile) {
        files.push(profile);
    }
    files
}

/// The check.
pub fn check(env: &Env) -> Check {
    let Some(home) = env.non_empty("HOME").map(PathBuf::from) else {
        return Check::ok(CHECK, "HOME is unset: no start-up files to check");
    };
    let bashrc = home.join(".bashrc");
    let Ok(text) = std::fs::read_to_string(&bashrc) else {
        return Check::ok(CHECK, format!("{} does not exist", bashrc.display()));
    };
    let Some(stop) = early_return(&text) else {
        return Check::ok(
            CHECK,
            format!(
                "{} has no early return for non-interactive shells",
                bashrc.display()
            ),
        );
    };
    let logins = login_files(&home);
    let login_exports: Vec<String> = logins
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| exports(&t).into_iter().map(|(n, _)| n))
        .collect();
    let mut after: Vec<(String, usize)> = exports(&text)
        .into_iter()
        .filter(|(name, line)| *line > stop && relevant(name))
        .collect();
    after.dedup_by(|a, b| a.0 == b.0);
    let (covered, missing): (Vec<_>, Vec<_>) = after
        .into_iter()
        .partition(|(name, _)| login_exports.contains(name) || env.get(name).is_some());
    let logins_text = if logins.is_empty() {
        format!("{} does not exist", home.join(".profile").display())
    } else {
        format!(
            "{} {} not export {}",
            and_list(
                &logins
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
            ),
            if logins.len() == 1 { "does" } else { "do" },
            if missing.len() == 1 { "it" } else { "them" }
        )
    };
    if missing.is_empty() {
        let after = if covered.is_empty() {
            "exports nothing a profiling run needs after it".to_owned()
        } else {
            format!(
                "exports {} after it, which the login files or this environment also have (a non-interactive shell that lacks them will not get them from {})",
                and_list(
                    &covered
                        .iter()
                        .map(|(n, l)| format!("{n} (line {l})"))
                        .collect::<Vec<_>>()
                ),
                bashrc.display()
            )
        };
        return Check::ok(
            CHECK,
            format!(
                "{} returns early for non-interactive shells at line {stop} and {after}",
                bashrc.display()
            ),
        );
    }
    let listed: Vec<String> = missing
        .iter()
        .map(|(n, l)| format!("{n} (line {l})"))
        .collect();
    Check::warning(
        CHECK,
        format!(
            "{} exports {} after its early return for non-interactive shells (line {stop}), and {logins_text}, nor does this environment have {}: scripts, CI jobs and `ssh host command` never see {}",
            bashrc.display(),
            and_list(&listed),
            if missing.len() == 1 { "it" } else { "them" },
            if missing.len() == 1 { "it" } else { "them" },
        ),
        format!(
            "move the export{} to {} (or into the job script); Ubuntu's ~/.profile sources ~/.bashrc, but a non-interactive shell still stops at its early return",
            if missing.len() == 1 { "" } else { "s" },
            home.join(".profile").display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const UBUNTU: &str = "# ~/.bashrc\n\n# If not running interactively, don't do anything\ncase $- in\n    *i*) ;;\n      *) return;;\nesac\n\nHISTCONTROL=ignoreboth\nexport LD_LIBRARY_PATH=$HOME/rocm/lib:$LD_LIBRARY_PATH\nexport HSA_ENABLE_DXG_DETECTION=1 EDITOR=vi\n";

    #[test]
    fn finds_the_early_return_in_its_usual_spellings() {
        assert_eq!(early_return(UBUNTU), Some(6));
        assert_eq!(
            early_return("x=1\ncase $- in *i*) ;; *) return;; esac\n"),
            Some(2)
        );
        assert_eq!(early_return("[ -z \"$PS1\" ] && return\n"), Some(1));
        assert_eq!(early_return("[[ $- != *i* ]] && return\n"), Some(1));
        assert_eq!(early_return("export A=1\nreturned=0\n"), None);
    }

    #[test]
    fn lists_exports_with_their_lines() {
        let e = exports(UBUNTU);
        assert_eq!(
            e,
            vec![
                ("LD_LIBRARY_PATH".to_owned(), 10),
                ("HSA_ENABLE_DXG_DETECTION".to_owned(), 11),
                ("EDITOR".to_owned(), 11)
            ]
        );
        assert_eq!(
            exports("declare -x ROCM_PATH=/opt/rocm; export X\n"),
            vec![("ROCM_PATH".to_owned(), 1), ("X".to_owned(), 1)]
        );
    }

    #[test]
    fn exports_after_the_return_need_the_profile_or_the_environment() {
        let home =
            std::env::temp_dir().join(format!("rocprof-doctor-shell-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".bashrc"), UBUNTU).unwrap();
        std::fs::write(home.join(".profile"), "export LD_LIBRARY_PATH=/x\n").unwrap();
        let env = Env::from_pairs(&[("HOME", home.to_str().unwrap())]);
        let c = check(&env);
        assert_eq!(c.status, crate::check::Status::Warning, "{c:?}");
        assert!(
            c.evidence.contains("HSA_ENABLE_DXG_DETECTION (line 11)"),
            "{c:?}"
        );
        assert!(!c.evidence.contains("LD_LIBRARY_PATH (line"), "{c:?}");
        let env = Env::from_pairs(&[
            ("HOME", home.to_str().unwrap()),
            ("HSA_ENABLE_DXG_DETECTION", "1"),
        ]);
        assert_eq!(check(&env).status, crate::check::Status::Ok);
        let _ = std::fs::remove_dir_all(&home);
    }
}
