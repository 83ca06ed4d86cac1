//! rocprofv3's output-path placeholders (`%hostname%`, `%pid%`, `%cwd%`, …).
//!
//! Everything but the process ids is fixed when the run starts ([`Launch`], kept in the record
//! directory's `run.json`), so a later `rocprof convert` expands the same names the run would
//! have, whatever its own environment.
//!
//! A template is read once, left to right, and each placeholder in it is replaced by its value
//! exactly once. A value is inserted as it is and never read again: an application argument
//! `%cwd%` names a file `%cwd%`, and `%arg1%` with an argument made of `%arg1%`s is that
//! argument. The work is linear in the template's length and the values inserted, and
//! [`Expansion`] says which parts of the result are values (for the checks of output paths).

use crate::plan::Launch;
use crate::plan::launch::SLURM;
use std::collections::HashMap;
use std::ops::Range;

/// Values the placeholders expand to for one process.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The run.
    pub launch: &'a Launch,
    /// The profiled process's id.
    pub pid: u32,
    /// Its parent's id.
    pub ppid: u32,
}

/// A template with its placeholders substituted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expansion {
    text: String,
    substitutions: Vec<Substitution>,
}

/// One placeholder of a template and the value that replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// Where the placeholder is in the template (with its `%`/`{}` delimiters).
    pub placeholder: Range<usize>,
    /// Where its value is in the expanded text (empty for an empty value).
    pub value: Range<usize>,
}

impl Expansion {
    /// The expanded text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The expanded text, taken.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The placeholders substituted, in the order of the template (values do not overlap).
    pub fn substitutions(&self) -> &[Substitution] {
        &self.substitutions
    }
}

/// A placeholder rocprof knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'t> {
    Pid,
    Ppid,
    Pgid,
    Psid,
    Psize,
    Nid,
    Hostname,
    Cwd,
    Tag,
    Argv,
    Argt,
    Args,
    Job,
    Rank,
    Size,
    LaunchDate,
    LaunchTime,
    /// `%argN%`.
    Arg(usize),
    /// `%env{NAME}%`.
    Env(&'t str),
}

impl Key<'_> {
    /// The placeholder named `name` (what stands between the delimiters, `%…%` or `{…}`),
    /// unless it is `env{…}`. Looks at no more of `name` than its length and its leading
    /// digits after `arg`.
    fn named(name: &str) -> Option<Key<'static>> {
        Some(match name {
            "pid" => Key::Pid,
            "ppid" => Key::Ppid,
            "pgid" => Key::Pgid,
            "psid" => Key::Psid,
            "psize" => Key::Psize,
            "nid" => Key::Nid,
            "hostname" => Key::Hostname,
            "cwd" => Key::Cwd,
            "tag" => Key::Tag,
            "argv" => Key::Argv,
            "argt" => Key::Argt,
            "args" => Key::Args,
            "job" => Key::Job,
            "rank" => Key::Rank,
            "size" => Key::Size,
            "launch_date" => Key::LaunchDate,
            "launch_time" => Key::LaunchTime,
            _ => Key::Arg(name.strip_prefix("arg")?.parse().ok()?),
        })
    }

    /// rocprofv3's two-character shorthands (`%h`, `%p`, `%j`, `%r`, `%s`: no closing `%`),
    /// by the letter after the `%`.
    fn shorthand(letter: u8) -> Option<Key<'static>> {
        Some(match letter {
            b'h' => Key::Hostname,
            b'p' => Key::Pid,
            b'j' => Key::Job,
            b'r' => Key::Rank,
            b's' => Key::Size,
            _ => return None,
        })
    }
}

/// A command-line word as rocprofv3's placeholders give it: white space trimmed, every `/` an
/// `_`, then leading `.`s and after them leading `_`s removed.
pub fn clean_word(word: &str) -> String {
    word.trim()
        .replace('/', "_")
        .trim_start_matches('.')
        .trim_start_matches('_')
        .to_owned()
}

/// An environment variable's value as `%env{NAME}%` inserts it: for each of tab, space and
/// `/` in turn, its leading occurrences removed and the others replaced by `_`.
pub fn clean_env_value(value: &str) -> String {
    let mut v = value.to_owned();
    for c in ['\t', ' ', '/'] {
        v = v.trim_start_matches(c).replace(c, "_");
    }
    v
}

/// The first position, at or after a given one, of a byte in a text, for positions that do not
/// decrease: each byte of the text is looked at once over all the calls.
struct Next {
    byte: u8,
    /// Where the last search started.
    from: usize,
    /// What it found (`None`: the byte is not at or after `from`).
    found: Option<usize>,
}

impl Next {
    fn new(byte: u8) -> Self {
        Self {
            byte,
            from: usize::MAX,
            found: None,
        }
    }

    fn at_or_after(&mut self, text: &[u8], at: usize) -> Option<usize> {
        if at >= self.from && self.found.is_none_or(|f| f >= at) {
            return self.found;
        }
        self.from = at;
        self.found = text
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| b == self.byte))
            .map(|k| at + k);
        self.found
    }
}

impl<'a> Context<'a> {
    /// The values for process `pid` (parent `ppid`; 0 when unknown: then `rocprof`).
    pub fn new(launch: &'a Launch, pid: u32, ppid: u32) -> Self {
        Self {
            launch,
            pid,
            ppid: if ppid == 0 { launch.rocprof_pid } else { ppid },
        }
    }

    /// The command line as rocprofv3's placeholders see it: a `--` right after the program
    /// left out.
    fn words(&self) -> impl Iterator<Item = &str> {
        let argv = &self.launch.argv;
        let skip = usize::from(argv.get(1).is_some_and(|a| a == "--"));
        argv.iter()
            .take(1)
            .chain(argv.iter().skip(1 + skip))
            .map(String::as_str)
    }

    /// Whether `key` has a value for this process (`%psize%` only for the process `rocprof`
    /// started; `%argN%` only for an N the command line has).
    fn known(&self, key: Key<'_>) -> bool {
        match key {
            Key::Psize => self.ppid == self.launch.rocprof_pid,
            Key::Arg(n) => n < self.words().count(),
            _ => true,
        }
    }

    /// Appends the value of `key` to `out`.
    fn write_value(&self, key: Key<'_>, out: &mut String) {
        let l = self.launch;
        let program = l.argv.first().map_or("", String::as_str);
        let tag = program.rsplit('/').next().unwrap_or(program);
        let args = || {
            self.words()
                .skip(1)
                .map(clean_word)
                .collect::<Vec<_>>()
                .join("_")
        };
        match key {
            Key::Pid => out.push_str(&self.pid.to_string()),
            Key::Ppid => out.push_str(&self.ppid.to_string()),
            Key::Pgid => out.push_str(&l.pgid.to_string()),
            Key::Psid => out.push_str(&l.psid.to_string()),
            // `rocprof` runs one application process at a time.
            Key::Psize => out.push('1'),
            Key::Nid => match l.rank_and_size() {
                Some((rank, _)) => out.push_str(&rank),
                None => out.push_str(&self.pid.to_string()),
            },
            Key::Hostname => out.push_str(&l.hostname),
            Key::Cwd => out.push_str(&l.cwd),
            Key::Tag => out.push_str(tag),
            Key::Argv => out.push_str(&self.words().map(clean_word).collect::<Vec<_>>().join("_")),
            // As rocprofv3: the tag, then the arguments (the first without a separator).
            Key::Argt => {
                out.push_str(tag);
                out.push_str(&args());
            }
            Key::Args => out.push_str(&args()),
            Key::Job => out.push_str(&l.env_var(SLURM[0]).unwrap_or_else(|| "0".into())),
            Key::Rank => out.push_str(&l.rank_and_size().map_or_else(|| "0".into(), |(r, _)| r)),
            Key::Size => out.push_str(&l.rank_and_size().map_or_else(|| "1".into(), |(_, s)| s)),
            Key::LaunchDate => out.push_str(&l.launch_date),
            Key::LaunchTime => out.push_str(&l.launch_time),
            Key::Arg(n) => out.push_str(&self.words().nth(n).map(clean_word).unwrap_or_default()),
            Key::Env(name) => out.push_str(&clean_env_value(&l.env_var(name).unwrap_or_default())),
        }
    }

    /// `text` with its `%key%` and `{key}` placeholders (and `%env{NAME}%`) substituted once,
    /// left to right; unknown placeholders are left as written. See [`Context::expansion`].
    pub fn expand(&self, text: &str) -> String {
        self.expansion(text).into_text()
    }

    /// Substitutes every placeholder of `template` once, left to right: `%key%`, `{key}`, and
    /// `%env{NAME}%` (`NAME` up to the first `}`, which a `%` must follow). A value is inserted
    /// as it is and never read for placeholders; an unknown placeholder is left as written and
    /// the text after its first delimiter read on. Each byte of the template is read a bounded
    /// number of times, and a value that recurs is copied from its first insertion.
    pub fn expansion(&self, template: &str) -> Expansion {
        let bytes = template.as_bytes();
        let mut out = Expansion {
            text: String::with_capacity(template.len()),
            substitutions: Vec::new(),
        };
        let mut percent = Next::new(b'%');
        let mut brace = Next::new(b'}');
        let mut inserted: HashMap<Key<'_>, Range<usize>> = HashMap::new();
        // The template before `copied` is in `out`; the search goes on at `at`.
        let (mut copied, mut at) = (0, 0);
        while let Some(k) = bytes[at..].iter().position(|&b| b == b'%' || b == b'{') {
            let open = at + k;
            // Every position sliced at is next to an ASCII delimiter: a character boundary.
            let found = if bytes[open] == b'{' {
                brace
                    .at_or_after(bytes, open + 1)
                    .and_then(|close| Some((Key::named(&template[open + 1..close])?, close + 1)))
            } else if bytes[open + 1..].starts_with(b"env{") {
                let name = open + 5;
                brace
                    .at_or_after(bytes, name)
                    .filter(|&close| bytes.get(close + 1) == Some(&b'%'))
                    .map(|close| (Key::Env(&template[name..close]), close + 2))
            } else {
                percent
                    .at_or_after(bytes, open + 1)
                    .and_then(|close| Some((Key::named(&template[open + 1..close])?, close + 1)))
                    .or_else(|| {
                        let key = Key::shorthand(*bytes.get(open + 1)?)?;
                        Some((key, open + 2))
                    })
            };
            let Some((key, mut end)) = found else {
                at = open + 1;
                continue;
            };
            if !self.known(key) {
                if !matches!(key, Key::Arg(_)) {
                    at = open + 1;
                    continue;
                }
                // rocprofv3 removes an argument the command line lacks with the `-`, `/` and
                // `_` that follow it.
                end += bytes[end..]
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'/' | b'_'))
                    .count();
            }
            out.text.push_str(&template[copied..open]);
            let start = out.text.len();
            match inserted.get(&key) {
                Some(first) => out.text.extend_from_within(first.clone()),
                None => {
                    self.write_value(key, &mut out.text);
                    inserted.insert(key, start..out.text.len());
                }
            }
            out.substitutions.push(Substitution {
                placeholder: open..end,
                value: start..out.text.len(),
            });
            (copied, at) = (end, end);
        }
        out.text.push_str(&template[copied..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::launch::RANK_SIZE;
    use proptest::prelude::*;
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
            pgid: 3,
            psid: 5,
        }
    }

    fn with_argv(argv: &[&str]) -> Launch {
        Launch {
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            ..launch()
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
        // `%argt%` is the program's basename and the arguments (rocprofv3's output_key.cpp).
        assert_eq!(c.expand("%argt%|%args%"), "appa1|a1");
        assert_eq!(c.expand("%h_%p_%nid%_%ppid%"), "box_42_42_7");
        // The shorthands have no closing `%`, and no `{}` form.
        assert_eq!(c.expand("%h%|{h}|{p}"), "box%|{h}|{p}");
        assert_eq!(c.expand("%pgid%.%psid%.%psize%"), "3.5.1");
        assert_eq!(c.expand("%launch_date%T%launch_time%"), "2026-11-29T09.40");
        assert_eq!(c.expand("%job%%j"), "00");
        assert_eq!(Context::new(&l, 42, 9).expand("%ppid%"), "9");
        // A child of the application: its parent's children are not known.
        assert_eq!(Context::new(&l, 42, 9).expand("%psize%"), "%psize%");
        assert_eq!(c.expand("100% {unknown} %nope%"), "100% {unknown} %nope%");
        // After an unknown one, the text from its first delimiter on is read again.
        assert_eq!(c.expand("%x%pid%"), "%x42");
        assert_eq!(c.expand("{{pid}}"), "{42}");
        assert_eq!(c.expand("%env{pid}x%"), "%env42x%");
    }

    #[test]
    fn words_are_cleaned_as_rocprofv3_cleans_them() {
        let l = with_argv(&[
            "/work/main/target/release/reference-workload",
            "--",
            " ./in/put ",
            "_.x",
        ]);
        let c = Context::new(&l, 42, 0);
        assert_eq!(c.expand("%argt%"), "reference-workloadin_put_.x");
        assert_eq!(c.expand("%tag%"), "reference-workload");
        assert_eq!(
            c.expand("%argv%"),
            "work_main_target_release_reference-workload_in_put_.x"
        );
        assert_eq!(
            c.expand("%arg1%+%arg2%+%arg0%"),
            "in_put+.x+work_main_target_release_reference-workload"
        );
        // An argument the command line lacks goes with the separators after it.
        assert_eq!(c.expand("a_%arg3%-_/b/%arg9%"), "a_b/");
        let l = with_argv(&["app"]);
        assert_eq!(Context::new(&l, 42, 0).expand("%argt%-cc"), "app-cc");
        let mut l = with_argv(&["app"]);
        l.env.insert("V".into(), Some(" /a b/c".into()));
        assert_eq!(Context::new(&l, 42, 0).expand("%env{V}%"), "a_b_c");
        // `%nid%`: the rank where there is one.
        l.env
            .insert("OMPI_COMM_WORLD_RANK".into(), Some("3".into()));
        assert_eq!(Context::new(&l, 42, 0).expand("%nid%"), "3");
    }

    #[test]
    fn the_environment_is_the_launch_s() {
        let l = launch();
        let c = Context::new(&l, 42, 0);
        // Recorded values win over the current environment, recorded absence too.
        assert_eq!(c.expand("%env{OUT}%-%env{GONE}%-"), "o--");
        // Only `%env{NAME}%`: not in braces, and not without the closing `%`.
        assert_eq!(c.expand("{env{OUT}}|%env{OUT}"), "{env{OUT}}|%env{OUT}");
        let mut l2 = Launch::default();
        l2.capture_env(&["%env{ROCPROF_TEST_SURELY_UNSET}%/x", "plain"]);
        assert_eq!(l2.env.get("ROCPROF_TEST_SURELY_UNSET"), Some(&None));
        assert!(l2.env.contains_key("SLURM_JOB_ID"));
    }

    #[test]
    fn a_value_is_inserted_once_and_never_read_for_placeholders() {
        let fifty = "%arg1%".repeat(50);
        for arg in [
            fifty.as_str(),
            "%cwd%",
            "%env{OUT}%",
            "{pid}",
            "%arg2%",
            "%",
            "{",
            "%env{",
        ] {
            let l = with_argv(&["app", arg, "two"]);
            let c = Context::new(&l, 42, 0);
            assert_eq!(c.expand("%arg1%"), arg);
            assert_eq!(c.expand("r%arg1%"), format!("r{arg}"));
            assert_eq!(c.expand("{arg1}_%pid%"), format!("{arg}_42"));
            // An argument whose end completes the template's next delimiter does not join it.
            assert_eq!(c.expand("%arg1%pid%"), format!("{arg}pid%"));
        }
        let l = with_argv(&["app", "%arg1%"]);
        let e = Context::new(&l, 42, 0).expansion("a%arg1%b%arg1%");
        assert_eq!(e.text(), "a%arg1%b%arg1%");
        assert_eq!(
            e.substitutions(),
            [
                Substitution {
                    placeholder: 1..7,
                    value: 1..7
                },
                Substitution {
                    placeholder: 8..14,
                    value: 8..14
                },
            ]
        );
        // Empty values are there too, with an empty range.
        let e = Context::new(&l, 42, 0).expansion("x%arg5%y");
        assert_eq!(e.text(), "xy");
        assert_eq!(e.substitutions()[0].value, 1..1);
    }

    #[test]
    fn hostile_templates_take_linear_time() {
        let l = with_argv(&["app", &"%arg1%".repeat(1000)]);
        let c = Context::new(&l, 42, 0);
        let n = 400_000;
        let start = std::time::Instant::now();
        for t in [
            "{".repeat(n),
            "%".repeat(n),
            "%env{".repeat(n / 5),
            "{arg1".repeat(n / 5),
            format!("{}}}", "{arg".repeat(n / 4)),
            format!("{}}}%", "%env{%".repeat(n / 6)),
            "%arg1%".repeat(n / 6),
        ] {
            let e = c.expansion(&t);
            let values: usize = e.substitutions().iter().map(|s| s.value.len()).sum();
            assert!(e.text().len() <= t.len() + values);
        }
        // Quadratic work on these would take minutes; linear work takes milliseconds.
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
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
            c.expand("%rank%/%size%_%r%s")
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

    /// Text made mostly of delimiters and the names of placeholders.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("%".to_owned()),
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("env{".to_owned()),
            Just("arg".to_owned()),
            prop::sample::select(vec![
                "0", "1", "2", "7", "pid", "h", "cwd", "OUT", "/", ".", "tag", "argv", "args", "r",
            ])
            .prop_map(str::to_owned),
            "[a-zé_./%{}]{0,3}",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    /// What the placeholder `text` (delimiters included) means, by the definition: `None` if
    /// it is none rocprof knows.
    fn meaning(l: &Launch, pid: u32, text: &str) -> Option<String> {
        let mut words: Vec<String> = l.argv.clone();
        if words.get(1).is_some_and(|w| w == "--") {
            words.remove(1);
        }
        let words: Vec<String> = words.iter().map(|w| clean_word(w)).collect();
        if let [b'%', letter] = text.as_bytes() {
            return match letter {
                b'h' => Some(l.hostname.clone()),
                b'p' => Some(pid.to_string()),
                b'j' | b'r' => Some("0".into()),
                b's' => Some("1".into()),
                _ => None,
            };
        }
        // A missing argument takes the separators after it.
        let trimmed = text.trim_end_matches(['-', '/', '_']);
        let key = trimmed
            .strip_prefix('%')
            .and_then(|t| t.strip_suffix('%'))
            .or_else(|| trimmed.strip_prefix('{').and_then(|t| t.strip_suffix('}')))?;
        if trimmed != text {
            let n: usize = key.strip_prefix("arg")?.parse().ok()?;
            return (n >= words.len()).then(String::new);
        }
        if text.starts_with('%')
            && let Some(name) = key.strip_prefix("env{").and_then(|k| k.strip_suffix('}'))
        {
            return (!name.contains('}'))
                .then(|| clean_env_value(&l.env_var(name).unwrap_or_default()));
        }
        let program = l.argv.first().cloned().unwrap_or_default();
        let tag = program.rsplit('/').next().unwrap_or_default().to_owned();
        let args = words.get(1..).unwrap_or_default().join("_");
        match key {
            "pid" | "nid" => Some(pid.to_string()),
            "ppid" => Some(l.rocprof_pid.to_string()),
            "pgid" => Some(l.pgid.to_string()),
            "psid" => Some(l.psid.to_string()),
            "psize" => Some("1".into()),
            "hostname" => Some(l.hostname.clone()),
            "cwd" => Some(l.cwd.clone()),
            "tag" => Some(tag),
            "argv" => Some(words.join("_")),
            "argt" => Some(format!("{tag}{args}")),
            "args" => Some(args),
            "job" | "rank" => Some("0".into()),
            "size" => Some("1".into()),
            "launch_date" => Some(l.launch_date.clone()),
            "launch_time" => Some(l.launch_time.clone()),
            _ => {
                let n: usize = key.strip_prefix("arg")?.parse().ok()?;
                Some(words.get(n).cloned().unwrap_or_default())
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any template, any arguments: the result is the template with each placeholder it
        /// names replaced by its value, verbatim; nothing else changes.
        #[test]
        fn any_template_expands_to_its_text_and_literal_values(
            template in hostile(),
            args in prop::collection::vec(hostile(), 0..4),
        ) {
            let mut argv = vec!["app".to_owned()];
            argv.extend(args);
            let mut l = Launch { argv, ..launch() };
            for (r, s) in RANK_SIZE {
                l.env.insert(r.into(), None);
                l.env.insert(s.into(), None);
            }
            l.env.insert(SLURM[0].into(), None);
            let e = Context::new(&l, 42, 0).expansion(&template);
            let (mut t_at, mut v_at, mut values) = (0, 0, 0);
            for s in e.substitutions() {
                prop_assert!(t_at <= s.placeholder.start && s.placeholder.start < s.placeholder.end);
                prop_assert!(v_at <= s.value.start && s.value.start <= s.value.end);
                // The text between placeholders is the template's, unchanged.
                prop_assert_eq!(
                    &e.text()[v_at..s.value.start],
                    &template[t_at..s.placeholder.start]
                );
                let placeholder = &template[s.placeholder.clone()];
                let value = &e.text()[s.value.clone()];
                let meant = meaning(&l, 42, placeholder);
                prop_assert_eq!(
                    meant.as_deref(),
                    Some(value),
                    "{} in {:?}",
                    placeholder,
                    template
                );
                (t_at, v_at) = (s.placeholder.end, s.value.end);
                values += value.len();
            }
            prop_assert_eq!(&e.text()[v_at..], &template[t_at..]);
            prop_assert!(e.text().len() <= template.len() + values);
        }

        /// Placeholders with arbitrary values, between plain text: each value appears once, as
        /// it is, whatever placeholder syntax it holds.
        #[test]
        fn values_appear_verbatim_and_are_never_expanded(
            parts in prop::collection::vec((0usize..5, "[a-z_/.-]{0,4}"), 0..8),
            args in prop::collection::vec(hostile(), 0..4),
            home in hostile(),
        ) {
            let mut argv = vec!["app".to_owned()];
            argv.extend(args);
            let mut l = Launch { argv, ..launch() };
            l.env.insert("HOME".into(), Some(home));
            let c = Context::new(&l, 42, 0);
            let (mut template, mut expected) = (String::new(), String::new());
            for (n, sep) in &parts {
                let (p, v) = match n {
                    4 => ("%env{HOME}%".to_owned(), clean_env_value(&l.env_var("HOME").unwrap())),
                    3 => ("{pid}".to_owned(), "42".to_owned()),
                    n => (format!("%arg{n}%"), l.argv.get(*n).map(|a| clean_word(a)).unwrap_or_default()),
                };
                template.push_str(&p);
                template.push_str(sep);
                expected.push_str(&v);
                // The separators right after a missing argument go with it.
                match *n < 3 && l.argv.get(*n).is_none() {
                    true => expected.push_str(sep.trim_start_matches(['-', '/', '_'])),
                    false => expected.push_str(sep),
                }
            }
            let e = c.expansion(&template);
            prop_assert_eq!(e.text(), expected);
            prop_assert_eq!(e.substitutions().len(), parts.len());
        }
    }
}
