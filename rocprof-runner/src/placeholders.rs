//! rocprofv3's output-path placeholders (`%hostname%`, `%pid%`, `%cwd%`, …).
//!
//! Everything but the process ids is fixed when the run starts ([`Launch`], kept in the record
//! directory's `run.json`), so a later `rocprof convert` expands the same names the run would
//! have, whatever its own environment.

use crate::plan::Launch;
use crate::plan::launch::SLURM;

/// Values the placeholders expand to for one process.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The run.
    pub launch: &'a Launch,
    /// The profiled process's id.
    pub pid: u32,
    /// Its parent's id.
    pub ppid: u32,
    /// Expand every known placeholder to `x` (to see what the literal text alone does).
    pub neutral: bool,
}

impl<'a> Context<'a> {
    /// The values for process `pid` (parent `ppid`; 0 when unknown: then `rocprof`).
    pub fn new(launch: &'a Launch, pid: u32, ppid: u32) -> Self {
        Self {
            launch,
            pid,
            ppid: if ppid == 0 { launch.rocprof_pid } else { ppid },
            neutral: false,
        }
    }

    fn value(&self, key: &str) -> Option<String> {
        let v = self.raw_value(key)?;
        Some(if self.neutral { "x".into() } else { v })
    }

    fn raw_value(&self, key: &str) -> Option<String> {
        let l = self.launch;
        let tag = l
            .argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned());
        Some(match key {
            "pid" | "p" | "nid" => self.pid.to_string(),
            "ppid" => self.ppid.to_string(),
            "hostname" | "h" => l.hostname.clone(),
            "cwd" => l.cwd.clone(),
            "tag" => tag.unwrap_or_default(),
            "argv" => {
                let s = l.argv.join("_").replace('/', "_");
                s.trim_start_matches(['.', '_']).to_owned()
            }
            "argt" => l
                .argv
                .first()
                .cloned()
                .unwrap_or_default()
                .replace('/', "_")
                .trim_start_matches(['.', '_'])
                .to_owned(),
            "args" => l
                .argv
                .iter()
                .skip(1)
                .cloned()
                .collect::<Vec<_>>()
                .join("_")
                .replace('/', "_"),
            "job" | "j" => l.env_var(SLURM[0]).unwrap_or_else(|| "0".into()),
            "rank" | "r" => l.rank_and_size().map_or_else(|| "0".into(), |(r, _)| r),
            "size" | "s" => l.rank_and_size().map_or_else(|| "1".into(), |(_, s)| s),
            "launch_date" => l.launch_date.clone(),
            "launch_time" => l.launch_time.clone(),
            _ => {
                if let Some(n) = key
                    .strip_prefix("arg")
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    return Some(l.argv.get(n).cloned().unwrap_or_default());
                }
                if let Some(name) = key.strip_prefix("env{").and_then(|k| k.strip_suffix('}')) {
                    return Some(l.env_var(name).unwrap_or_default());
                }
                return None;
            }
        })
    }

    /// Expands `%key%` and `{key}` placeholders (and `%env{NAME}%`) until nothing changes.
    /// Unknown placeholders are left as written.
    pub fn expand(&self, text: &str) -> String {
        let mut current = text.to_owned();
        for _ in 0..8 {
            let next = self.expand_once(&current);
            if next == current {
                break;
            }
            current = next;
        }
        current
    }

    fn expand_once(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find(['%', '{']) {
            out.push_str(&rest[..i]);
            let (open, close) = if rest[i..].starts_with('%') {
                ('%', '%')
            } else {
                ('{', '}')
            };
            let body = &rest[i + 1..];
            // `%env{NAME}%` contains braces; search the closing `%` after them.
            let end = if open == '%' && body.starts_with("env{") {
                body.find('}')
                    .and_then(|b| body[b..].find(close).map(|c| b + c))
            } else {
                body.find(close)
            };
            match end.and_then(|e| self.value(&body[..e]).map(|v| (e, v))) {
                Some((e, v)) => {
                    out.push_str(&v);
                    rest = &body[e + 1..];
                }
                None => {
                    out.push(open);
                    rest = body;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::launch::RANK_SIZE;
    use std::collections::BTreeMap;

    fn launch() -> Launch {
        Launch {
            rocprof_pid: 7,
            hostname: "box".into(),
            cwd: "/w".into(),
            argv: vec!["./bin/app".into(), "a1".into()],
            launch_date: "2026-11-29".into(),
            launch_time: "09.40".into(),
            env: BTreeMap::from([
                ("OUT".to_owned(), Some("o".to_owned())),
                ("GONE".to_owned(), None),
            ]),
        }
    }

    #[test]
    fn expands_rocprofv3_placeholders() {
        let l = launch();
        let c = Context::new(&l, 42, 0);
        assert_eq!(c.expand("%hostname%/%pid%"), "box/42");
        assert_eq!(c.expand("{hostname}/{pid}_x"), "box/42_x");
        assert_eq!(c.expand("%cwd%/out"), "/w/out");
        assert_eq!(c.expand("%tag%-%arg1%-%arg9%"), "app-a1-");
        assert_eq!(c.expand("%argv%"), "bin_app_a1");
        assert_eq!(c.expand("%h%_%p%_%ppid%"), "box_42_7");
        assert_eq!(Context::new(&l, 42, 9).expand("%ppid%"), "9");
        assert_eq!(c.expand("100% {unknown} %nope%"), "100% {unknown} %nope%");
    }

    #[test]
    fn the_environment_is_the_launch_s_and_neutral_expansion_hides_values() {
        let l = launch();
        let c = Context::new(&l, 42, 0);
        // Recorded values win over the current environment, recorded absence too.
        assert_eq!(c.expand("%env{OUT}%-%env{GONE}%-"), "o--");
        let n = Context { neutral: true, ..c };
        assert_eq!(n.expand("%arg1%/../%pid%/lit"), "x/../x/lit");
        let mut l2 = Launch::default();
        l2.capture_env(&["%env{ROCPROF_TEST_SURELY_UNSET}%/x", "plain"]);
        assert_eq!(l2.env.get("ROCPROF_TEST_SURELY_UNSET"), Some(&None));
        assert!(l2.env.contains_key("SLURM_JOB_ID"));
    }

    #[test]
    fn rank_and_size_come_from_the_first_mpi_launcher_that_set_them() {
        let with = |vars: &[(&str, &str)]| {
            let mut l = launch();
            for (k, _) in RANK_SIZE {
                l.env.insert(k.to_owned(), None);
            }
            for (k, v) in vars {
                l.env.insert((*k).to_owned(), Some((*v).to_owned()));
            }
            let c = Context::new(&l, 42, 0);
            c.expand("%rank%/%size%_%r%%s%")
        };
        assert_eq!(with(&[]), "0/1_01", "outside MPI");
        assert_eq!(
            with(&[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4")]),
            "3/4_34"
        );
        assert_eq!(with(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")]), "1/2_12");
        assert_eq!(
            with(&[
                ("SLURM_PROCID", "5"),
                ("SLURM_NTASKS", "8"),
                ("PMI_RANK", "")
            ]),
            "5/8_58",
            "an empty rank variable is not a launcher's"
        );
        assert_eq!(
            with(&[("MV2_COMM_WORLD_RANK", "2")]),
            "2/1_21",
            "size unknown: 1"
        );
        assert_eq!(
            with(&[("OMPI_COMM_WORLD_RANK", "0"), ("SLURM_PROCID", "7")]),
            "0/1_01",
            "Open MPI first"
        );
    }
}
