//! The summary after the run (`-S`, `-D/--summary-per-domain`, `--summary-groups`,
//! `--summary-output-file`, `-u/--summary-units`), in rocprofv3's text layout.
//!
//! What is printed, per process, in upstream's order: with `-D` one table per domain that has
//! records (`ROCPROFV3 <DOMAIN> SUMMARY:`, domains in rocprofv3's order), then one table per
//! `--summary-groups` regex over the domains whose label it matches in full
//! (`ROCPROFV3 <D1 + D2> SUMMARY:`), then with `-S` the table of every domain
//! (`ROCPROFV3 SUMMARY:`). `-D` or a group without `-S` prints only those tables (the tool
//! turns the summary on for any of the three).
//!
//! Columns: `NAME` (at least 40 wide, as wide as the longest name shown), `DOMAIN` (at least 12),
//! `CALLS`, `DURATION`, `AVERAGE`, `PERCENT (INC)`, `MIN`, `MAX`, `STDDEV`; the time columns
//! are titled with the unit (`DURATION (msec)`). In nanoseconds (the default) durations are
//! integers; in another unit they are the nanoseconds divided by the unit, written as the
//! shortest decimal that reads back exactly (upstream's `{}` of a double). Average and
//! standard deviation are `%.3e`; the percentage is of the table's total, six decimals. Rows
//! are sorted by total duration, longest first; rows of the same name in two domains of one
//! table are merged (as upstream keys rows by name), under the first domain.
//!
//! Names are the application's (kernel and ROCTx names) and are shown terminal-safe
//! ([`terminal_text::cell`]): control and bidirectional characters (and the backslash) escaped,
//! and at most [`terminal_text::NAME_WIDTH`] characters, a longer name cut to a prefix and `…`. The exact
//! names are in the stats and trace files. The same text goes to a `--summary-output-file`
//! file, so that `cat` of it is as safe as the console.
//!
//! Where it goes: stderr (the default) or stdout, indented four spaces, or with any other
//! `--summary-output-file NAME` the file `<prefix>_NAME.txt` beside the other outputs,
//! unindented. (Upstream's G2 tool sends `stderr` to stdout too; here stderr means stderr.)

use crate::plan::{OutputSettings, SummarySettings, SummaryUnits};
use std::fmt::Write as _;
use trace_export::stats::{Acc, Stats};
use trace_records::ProcessTrace;
use trace_records::format::sci;

/// rocprofv3's domain order (its domain-type enumeration); other labels follow, sorted.
const DOMAIN_ORDER: [&str; 13] = [
    "HSA_API",
    "HIP_API",
    "MARKER_API",
    "KERNEL_DISPATCH",
    "MEMORY_COPY",
    "SCRATCH_MEMORY",
    "COUNTER_COLLECTION",
    "RCCL_API",
    "MEMORY_ALLOCATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "PC_SAMPLING_HOST_TRAP",
    "PC_SAMPLING_STOCHASTIC",
];

/// Where the summary goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// Standard error (the default).
    Stderr,
    /// `<prefix>_<name>.txt`.
    File(String),
}

impl Destination {
    /// The destination `--summary-output-file` names (`stdout`/`stderr` in any case).
    pub fn of(s: &SummarySettings) -> Destination {
        match s.output_file.as_deref() {
            None => Destination::Stderr,
            Some(f) if f.eq_ignore_ascii_case("stdout") => Destination::Stdout,
            Some(f) if f.eq_ignore_ascii_case("stderr") => Destination::Stderr,
            Some(f) => Destination::File(f.strip_suffix(".txt").unwrap_or(f).to_owned()),
        }
    }

    /// The indentation of every line (four spaces on a console, none in a file).
    pub fn indent(&self) -> &'static str {
        match self {
            Destination::File(_) => "",
            _ => "    ",
        }
    }
}

/// A `--summary-groups` regex as it is matched: in full.
fn group_regex(re: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{re})$"))
}

/// Why `regex` (or `regex-lite`) refused a pattern, in one line: its syntax errors are several,
/// the pattern echoed with a caret under the fault, and the last says what is wrong; a one-line
/// error is kept whole.
pub fn regex_reason(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    if !text.contains('\n') {
        return text;
    }
    let last = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
}

/// Checks the `--summary-groups` regexes before anything runs (empty ones are ignored, as
/// upstream drops them).
pub fn check_groups(groups: &[String]) -> Result<(), String> {
    for g in groups.iter().filter(|g| !g.is_empty()) {
        if let Err(e) = group_regex(g) {
            return Err(format!(
                "--summary-groups \"{g}\" is not a valid regular expression (it is matched in full against domain labels such as KERNEL_DISPATCH): {}",
                regex_reason(&e)
            ));
        }
    }
    Ok(())
}

impl SummaryUnits {
    /// Its name in the column titles.
    pub fn label(self) -> &'static str {
        match self {
            SummaryUnits::Sec => "sec",
            SummaryUnits::Msec => "msec",
            SummaryUnits::Usec => "usec",
            SummaryUnits::Nsec => "nsec",
        }
    }

    /// Nanoseconds per unit.
    pub fn ns(self) -> u64 {
        match self {
            SummaryUnits::Sec => 1_000_000_000,
            SummaryUnits::Msec => 1_000_000,
            SummaryUnits::Usec => 1_000,
            SummaryUnits::Nsec => 1,
        }
    }
}

/// The shortest decimal of `x` that reads back exactly, with an exponent (two digits at
/// least) below 1e-4 and from 1e16, as `{}` of a double formats in C++'s fmt.
fn shortest(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || (1e-4..1e16).contains(&a) {
        return format!("{x}");
    }
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// One table: its title and rows (name, domain, statistics).
struct Table<'a> {
    title: String,
    rows: Vec<(&'a str, &'static str, Acc)>,
}

/// The domains of `stats` in rocprofv3's order.
fn ordered(stats: &Stats) -> Vec<(&'static str, &trace_export::stats::StatTable)> {
    let rank = |d: &str| {
        DOMAIN_ORDER
            .iter()
            .position(|o| *o == d)
            .unwrap_or(usize::MAX)
    };
    let mut v: Vec<_> = stats.tables().collect();
    v.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.0.cmp(b.0)));
    v
}

fn table<'a>(
    title: String,
    domains: &[(&'static str, &'a trace_export::stats::StatTable)],
) -> Table<'a> {
    let mut rows: Vec<(&'a str, &'static str, Acc)> = Vec::new();
    for (domain, t) in domains {
        for (name, acc) in t.sorted() {
            match rows.iter_mut().find(|r| r.0 == name) {
                Some(r) => r.2.merge(acc),
                None => rows.push((name, domain, *acc)),
            }
        }
    }
    rows.sort_by(|a, b| b.2.total.cmp(&a.2.total).then(a.0.cmp(b.0)));
    Table { title, rows }
}

/// The tables `s` asks for over `stats`, and a warning per group that matched no domain.
fn tables<'a>(stats: &'a Stats, settings: &OutputSettings) -> (Vec<Table<'a>>, Vec<String>) {
    let domains: Vec<_> = ordered(stats)
        .into_iter()
        .filter(|(_, t)| t.totals().calls > 0)
        .collect();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let opts = &settings.summary_options;
    if opts.per_domain {
        for d in &domains {
            out.push(table(format!("{} SUMMARY", d.0), std::slice::from_ref(d)));
        }
    }
    for g in opts.groups.iter().filter(|g| !g.is_empty()) {
        // Checked before the run; a run.json edited since is not trusted either.
        let Ok(re) = group_regex(g) else {
            warnings.push(format!(
                "--summary-groups \"{g}\" is not a valid regular expression"
            ));
            continue;
        };
        let matched: Vec<_> = domains
            .iter()
            .copied()
            .filter(|(d, _)| re.is_match(d))
            .collect();
        if matched.is_empty() {
            warnings.push(format!(
                "--summary-groups \"{g}\" matched no domain with records (domains: {})",
                domains.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        let label: Vec<&str> = matched.iter().map(|d| d.0).collect();
        out.push(table(format!("{} SUMMARY", label.join(" + ")), &matched));
    }
    if settings.summary {
        out.push(table("SUMMARY".into(), &domains));
    }
    (out, warnings)
}

/// Writes one table in rocprofv3's layout.
fn render_table(out: &mut String, t: &Table<'_>, units: SummaryUnits, indent: &str) {
    if t.rows.is_empty() {
        return;
    }
    let names: Vec<_> = t
        .rows
        .iter()
        .map(|r| terminal_text::cell(r.0, terminal_text::NAME_WIDTH))
        .collect();
    let nw = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(40);
    let dw = t.rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(12);
    let u = units.label();
    let _ = write!(out, "\n{indent}ROCPROFV3 {}:\n\n", t.title);
    let _ = writeln!(
        out,
        "{indent}| {:^nw$} | {:^dw$} | {:^15} | {:^15} | {:^15} | {:^13} | {:^15} | {:^15} | {:^15} |",
        "NAME",
        "DOMAIN",
        "CALLS",
        format!("DURATION ({u})"),
        format!("AVERAGE ({u})"),
        "PERCENT (INC)",
        format!("MIN ({u})"),
        format!("MAX ({u})"),
        "STDDEV"
    );
    let dash = |n: usize| "-".repeat(n + 2);
    let _ = writeln!(
        out,
        "{indent}|{}|{}|{}|{}|{}|{}|{}|{}|{}|",
        dash(nw),
        dash(dw),
        dash(15),
        dash(15),
        dash(15),
        dash(13),
        dash(15),
        dash(15),
        dash(15)
    );
    let total: u128 = t.rows.iter().map(|r| r.2.total).sum();
    let div = units.ns() as f64;
    let time = |ns: u128| match units {
        SummaryUnits::Nsec => ns.to_string(),
        _ => shortest(ns as f64 / div),
    };
    for ((_, domain, acc), name) in t.rows.iter().zip(&names) {
        let pct = if total == 0 {
            0.0
        } else {
            100.0 * acc.total as f64 / total as f64
        };
        let _ = writeln!(
            out,
            "{indent}| {:<nw$} | {domain:<dw$} | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
            name.as_ref(),
            acc.calls,
            time(acc.total),
            sci(acc.average() / div, 3),
            format!("{pct:.6}"),
            time(acc.min.into()),
            time(acc.max.into()),
            sci(acc.stddev() / div, 3)
        );
    }
}

/// The summary text of one process (empty when it has no records), and warnings to print.
pub fn render(t: &ProcessTrace, settings: &OutputSettings, indent: &str) -> (String, Vec<String>) {
    let stats = Stats::of(t);
    let (tables, warnings) = tables(&stats, settings);
    let mut out = String::new();
    for table in &tables {
        render_table(&mut out, table, settings.summary_options.units, indent);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    (out, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use terminal_text::NAME_WIDTH;

    fn settings(args: impl FnOnce(&mut OutputSettings)) -> OutputSettings {
        let mut o = OutputSettings::new(Path::new("/"));
        args(&mut o);
        o
    }

    fn stats() -> Stats {
        let mut s = Stats::default();
        s.table("HIP_API").add("hipMemcpy", 0, 3_000_000);
        s.table("HIP_API").add("hipLaunchKernel", 0, 1_000);
        s.table("HSA_API").add("hsa_queue_create", 0, 2_000);
        s.table("KERNEL_DISPATCH").add("vector_add", 10, 1_510);
        s.table("KERNEL_DISPATCH").add("vector_add", 10, 2_510);
        s.table("MEMORY_COPY")
            .add("MEMORY_COPY_HOST_TO_DEVICE", 0, 500);
        s
    }

    fn text(stats: &Stats, s: &OutputSettings, indent: &str) -> (String, Vec<String>) {
        let (tables, warnings) = tables(stats, s);
        let mut out = String::new();
        for t in &tables {
            render_table(&mut out, t, s.summary_options.units, indent);
        }
        (out, warnings)
    }

    fn titles(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| l.trim_start().starts_with("ROCPROFV3"))
            .map(str::trim)
            .collect()
    }

    #[test]
    fn per_domain_groups_and_the_whole_table_come_in_upstreams_order() {
        let st = stats();
        let s = settings(|o| {
            o.summary = true;
            o.summary_options.per_domain = true;
            o.summary_options.groups = vec!["KERNEL_DISPATCH|MEMORY_COPY".into(), "H.A".into()];
        });
        let (t, w) = text(&st, &s, "");
        assert_eq!(
            titles(&t),
            [
                "ROCPROFV3 HSA_API SUMMARY:",
                "ROCPROFV3 HIP_API SUMMARY:",
                "ROCPROFV3 KERNEL_DISPATCH SUMMARY:",
                "ROCPROFV3 MEMORY_COPY SUMMARY:",
                "ROCPROFV3 KERNEL_DISPATCH + MEMORY_COPY SUMMARY:",
                "ROCPROFV3 SUMMARY:",
            ]
        );
        // `H.A` matches in full only: no domain is three letters long.
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("H.A"), "{w:?}");
        // -D alone: no whole-run table.
        let s = settings(|o| o.summary_options.per_domain = true);
        assert!(!titles(&text(&st, &s, "").0).contains(&"ROCPROFV3 SUMMARY:"));
        assert!(s.summary_wanted());
        assert!(!settings(|_| {}).summary_wanted());
    }

    #[test]
    fn the_layout_is_upstreams_and_units_scale_the_time_columns() {
        let st = stats();
        let s = settings(|o| o.summary_options.groups = vec!["KERNEL_DISPATCH".into()]);
        let (t, _) = text(&st, &s, "    ");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], "    ROCPROFV3 KERNEL_DISPATCH SUMMARY:");
        assert_eq!(
            lines[3],
            format!(
                "    |{:^42}|{:^17}|{:^17}|{:^17}|{:^17}|{:^15}|{:^17}|{:^17}|{:^17}|",
                "NAME",
                "DOMAIN",
                "CALLS",
                "DURATION (nsec)",
                "AVERAGE (nsec)",
                "PERCENT (INC)",
                "MIN (nsec)",
                "MAX (nsec)",
                "STDDEV"
            )
        );
        assert!(lines[4].starts_with("    |------------------------------------------|"));
        assert_eq!(
            lines[5],
            "    | vector_add                               | KERNEL_DISPATCH |               2 |            4000 |       2.000e+03 |    100.000000 |            1500 |            2500 |       7.071e+02 |"
        );
        let s = settings(|o| {
            o.summary_options.groups = vec!["KERNEL_DISPATCH".into()];
            o.summary_options.units = SummaryUnits::Msec;
        });
        let (t, _) = text(&st, &s, "");
        assert!(t.contains("| DURATION (msec) |"), "{t}");
        assert!(
            t.contains("|               2 |           0.004 |       2.000e-03 |    100.000000 |          0.0015 |          0.0025 |       7.071e-04 |"),
            "{t}"
        );
    }

    #[test]
    fn groups_are_checked_and_destinations_named() {
        assert!(check_groups(&["KERNEL_DISPATCH|MEMORY_COPY".into(), String::new()]).is_ok());
        let e = check_groups(&["(unclosed".into()]).unwrap_err();
        assert!(
            e.contains("(unclosed") && e.contains("regular expression"),
            "{e}"
        );
        let dest = |f: Option<&str>| {
            Destination::of(&SummarySettings {
                output_file: f.map(str::to_owned),
                ..Default::default()
            })
        };
        assert_eq!(dest(None), Destination::Stderr);
        assert_eq!(dest(Some("STDOUT")), Destination::Stdout);
        assert_eq!(dest(Some("StdErr")), Destination::Stderr);
        assert_eq!(dest(Some("summary")), Destination::File("summary".into()));
        assert_eq!(
            dest(Some("summary.txt")),
            Destination::File("summary".into())
        );
        assert_eq!(Destination::File("x".into()).indent(), "");
    }

    /// The table of one KERNEL_DISPATCH row per name.
    fn kernel_table(names: &[String]) -> String {
        let mut st = Stats::default();
        for (i, n) in names.iter().enumerate() {
            st.table("KERNEL_DISPATCH").add(n, 0, 1_000 + i as u64);
        }
        let s = settings(|o| o.summary = true);
        text(&st, &s, "    ").0
    }

    #[test]
    fn names_are_escaped_and_shortened() {
        let forged = "\nrocprof: error: forged line\n";
        let names = vec![
            format!("k{forged}\x1b[2J\u{202e}abc"),
            "\x1b]0;title\x07".to_owned(),
            "x".repeat(65 * 1024),
            r"back\slash".to_owned(),
        ];
        let t = kernel_table(&names);
        assert!(
            t.chars().all(|c| c == '\n' || terminal_text::is_safe(c)),
            "{t:?}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("rocprof:")),
            "{t}"
        );
        assert!(
            t.contains("| k\\nrocprof: error: forged line\\n\\x1b[2J\\u{202e}abc "),
            "{t}"
        );
        assert!(t.contains(r"| back\\slash "), "{t}");
        assert!(t.contains(r"| \x1b]0;title\x07 "), "{t}");
        let long = format!("| {}… |", "x".repeat(NAME_WIDTH - 1));
        assert!(t.contains(&long), "{t}");
        // Every line of the table is as wide as its header, the name column 60 wide.
        let widths: Vec<usize> = t
            .lines()
            .filter(|l| l.trim_start().starts_with('|'))
            .map(|l| l.chars().count())
            .collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{widths:?}");
        assert_eq!(
            widths[0],
            kernel_table(&["x".repeat(NAME_WIDTH)])
                .lines()
                .nth(3)
                .unwrap()
                .chars()
                .count()
        );
    }

    proptest::proptest! {
        #[test]
        fn any_names_make_a_safe_table_of_aligned_lines(names in proptest::collection::vec(proptest::prelude::any::<String>(), 1..6)) {
            let t = kernel_table(&names);
            proptest::prop_assert!(t.chars().all(|c| c == '\n' || terminal_text::is_safe(c)), "{:?}", t);
            let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("    |")).collect();
            let distinct: std::collections::HashSet<&String> = names.iter().collect();
            // The header, the rule and one line per name: a name never adds a line.
            proptest::prop_assert_eq!(rows.len(), 2 + distinct.len());
            let w = rows[0].chars().count();
            proptest::prop_assert!(rows.iter().all(|r| r.chars().count() == w));
            proptest::prop_assert!(w <= kernel_table(&["x".repeat(NAME_WIDTH)]).lines().nth(3).unwrap().chars().count());
        }
    }

    #[test]
    fn shortest_reads_as_fmt_writes_a_double() {
        assert_eq!(shortest(0.0), "0");
        assert_eq!(shortest(3.691929), "3.691929");
        assert_eq!(shortest(0.00005), "5e-05");
        assert_eq!(shortest(280.077621), "280.077621");
    }
}
