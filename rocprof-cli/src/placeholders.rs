//! rocprofv3's output-path placeholders (`%hostname%`, `%pid%`, `%cwd%`, …).

/// Values the placeholders expand to for one process.
#[derive(Debug, Clone)]
pub struct Context {
    /// The profiled process's id.
    pub pid: u32,
    /// Its parent's id (the `rocprof` process).
    pub ppid: u32,
    /// Host name.
    pub hostname: String,
    /// Working directory.
    pub cwd: String,
    /// The command line (program first).
    pub argv: Vec<String>,
    /// `YYYY-MM-DD` of the launch.
    pub launch_date: String,
    /// `HH.MM` of the launch.
    pub launch_time: String,
}

impl Context {
    fn value(&self, key: &str) -> Option<String> {
        let tag = self
            .argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned());
        Some(match key {
            "pid" | "p" | "nid" => self.pid.to_string(),
            "ppid" => self.ppid.to_string(),
            "hostname" | "h" => self.hostname.clone(),
            "cwd" => self.cwd.clone(),
            "tag" => tag.unwrap_or_default(),
            "argv" => {
                let s = self.argv.join("_").replace('/', "_");
                s.trim_start_matches(['.', '_']).to_owned()
            }
            "argt" => self
                .argv
                .first()
                .cloned()
                .unwrap_or_default()
                .replace('/', "_")
                .trim_start_matches(['.', '_'])
                .to_owned(),
            "args" => self
                .argv
                .iter()
                .skip(1)
                .cloned()
                .collect::<Vec<_>>()
                .join("_")
                .replace('/', "_"),
            "job" | "j" => std::env::var("SLURM_JOB_ID").unwrap_or_else(|_| "0".into()),
            "rank" | "r" => std::env::var("SLURM_PROCID").unwrap_or_else(|_| "0".into()),
            "size" | "s" => "1".into(),
            "launch_date" => self.launch_date.clone(),
            "launch_time" => self.launch_time.clone(),
            _ => {
                if let Some(n) = key
                    .strip_prefix("arg")
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    return Some(self.argv.get(n).cloned().unwrap_or_default());
                }
                if let Some(name) = key.strip_prefix("env{").and_then(|k| k.strip_suffix('}')) {
                    return Some(std::env::var(name).unwrap_or_default());
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

    fn ctx() -> Context {
        Context {
            pid: 42,
            ppid: 7,
            hostname: "box".into(),
            cwd: "/w".into(),
            argv: vec!["./bin/app".into(), "a1".into()],
            launch_date: "2026-11-29".into(),
            launch_time: "09.40".into(),
        }
    }

    #[test]
    fn expands_rocprofv3_placeholders() {
        let c = ctx();
        assert_eq!(c.expand("%hostname%/%pid%"), "box/42");
        assert_eq!(c.expand("{hostname}/{pid}_x"), "box/42_x");
        assert_eq!(c.expand("%cwd%/out"), "/w/out");
        assert_eq!(c.expand("%tag%-%arg1%-%arg9%"), "app-a1-");
        assert_eq!(c.expand("%argv%"), "bin_app_a1");
        assert_eq!(c.expand("%h%_%p%"), "box_42");
        assert_eq!(c.expand("100% {unknown} %nope%"), "100% {unknown} %nope%");
    }
}
