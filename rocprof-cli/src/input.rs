//! `-i/--input FILE`: rocprofv3's input files, parsed into typed passes.
//!
//! Not wired into run mode yet (`rocprof --pmc` is being built; the module is declared with
//! `#[allow(dead_code)]` until run mode uses it).
//!
//! Two formats, chosen by the file's extension:
//! - `.txt`: one pass (one run of the application) per line `pmc: A B C`; blank lines and
//!   comments (from `#` to the end of the line) are skipped.
//! - `.json`, `.yaml`, `.yml`: a run configuration, `{"jobs": [{…}, …]}`, one pass per job; a
//!   job's keys are the argparse destination names of rocprofv3's options (`pmc`, `pmc_groups`,
//!   `pmc_group_interval`, `kernel_trace`, `kernel_include_regex`, `output_directory`, …). Only
//!   the options this `rocprof` has are accepted: any other key (upstream ignores unknown keys)
//!   is an error naming it, so a misspelt or unsupported option is never silently dropped.
//!
//! Counter lists are split as `--pmc` splits them: on white space and on every character of
//! [`COUNTER_SEPARATORS`].

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use std::fmt;
use std::path::{Path, PathBuf};

/// The characters rocprofv3 turns into spaces in a counter list (besides white space).
pub const COUNTER_SEPARATORS: &str = "!@#$%&(),*+-./;<>?@{}^`~|";

/// Splits a counter list (`"SQ_WAVES,SQ_INSTS_VALU GRBM_COUNT"`) into names.
pub fn split_counters(list: &str) -> Vec<String> {
    list.split(|c: char| c.is_whitespace() || COUNTER_SEPARATORS.contains(c))
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Which format an input file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// `pmc:` lines (outputs of pass N in `<outdir>/pmc_<N>`).
    Text,
    /// A JSON run configuration (outputs of job N in `<outdir>/pass_<N>`).
    Json,
    /// A YAML run configuration (as JSON).
    Yaml,
}

impl InputFormat {
    /// The format of `path`, from its extension.
    pub fn of(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()? {
            "txt" => Some(Self::Text),
            "json" => Some(Self::Json),
            "yaml" | "yml" => Some(Self::Yaml),
            _ => None,
        }
    }
}

/// A parsed input file: the passes to run, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The file's format.
    pub format: InputFormat,
    /// One entry per pass (a text file's jobs set only `pmc`).
    pub jobs: Vec<Job>,
}

/// A list of counter names, given as one string (split like `--pmc`) or a list of strings
/// (each split likewise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterList(pub Vec<String>);

/// One `--kernel-iteration-range` item: dispatch iterations `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IterationRange {
    /// First iteration.
    pub first: u64,
    /// Last iteration (inclusive).
    pub last: u64,
}

/// `kernel_iteration_range`: a string (`"[1, 3-5]"`) or a list of such strings or integers,
/// tokenized on `[`, `]`, `,` and white space; each token an integer or an inclusive `A-B`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IterationRanges(pub Vec<IterationRange>);

/// One job of a run configuration: one run of the application. Unset fields leave the
/// command line's setting.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// `--pmc`: counters collected in this pass.
    pub pmc: Option<CounterList>,
    /// Counter groups, one per pass (`--pmc` repeated).
    pub pmc_groups: Option<Vec<CounterList>>,
    /// `pmc_group_interval`.
    pub pmc_group_interval: Option<u64>,
    /// `--hip-trace`.
    pub hip_trace: Option<bool>,
    /// `--hip-runtime-trace`.
    pub hip_runtime_trace: Option<bool>,
    /// `--hip-compiler-trace`.
    pub hip_compiler_trace: Option<bool>,
    /// `--hsa-trace`.
    pub hsa_trace: Option<bool>,
    /// `--hsa-core-trace`.
    pub hsa_core_trace: Option<bool>,
    /// `--hsa-amd-trace`.
    pub hsa_amd_trace: Option<bool>,
    /// `--hsa-image-trace`.
    pub hsa_image_trace: Option<bool>,
    /// `--hsa-finalizer-trace` (the schema spells it `hsa_finalize_trace`).
    #[serde(alias = "hsa_finalize_trace")]
    pub hsa_finalizer_trace: Option<bool>,
    /// `--kernel-trace`.
    pub kernel_trace: Option<bool>,
    /// `--memory-copy-trace`.
    pub memory_copy_trace: Option<bool>,
    /// `--marker-trace`.
    pub marker_trace: Option<bool>,
    /// `-s/--sys-trace`.
    pub sys_trace: Option<bool>,
    /// `--kernel-include-regex`.
    pub kernel_include_regex: Option<String>,
    /// `--kernel-exclude-regex`.
    pub kernel_exclude_regex: Option<String>,
    /// `--kernel-iteration-range`.
    pub kernel_iteration_range: Option<IterationRanges>,
    /// `-d/--output-directory`.
    pub output_directory: Option<String>,
    /// `-o/--output-file`.
    pub output_file: Option<String>,
    /// `-f/--output-format` (a list, or one string split on white space, `,`, `;`, `:`).
    pub output_format: Option<Formats>,
    /// `--stats`.
    pub stats: Option<bool>,
    /// `-S/--summary`.
    pub summary: Option<bool>,
    /// `-M/--mangled-kernels`.
    pub mangled_kernels: Option<bool>,
    /// `-T/--truncate-kernels`.
    pub truncate_kernels: Option<bool>,
    /// `-A/--agent-index`.
    pub agent_index: Option<rocprof_runner::plan::AgentIndexChoice>,
    /// `--log-level` (`fatal`, `error`, `warning`, `info`, `trace`, `env`, `config`).
    pub log_level: Option<LogLevel>,
    /// `-L/--list-avail` (the schema's `list_metrics` too): list the counters first.
    #[serde(alias = "list_metrics")]
    pub list_avail: Option<bool>,
    /// `--preload`.
    pub preload: Option<Vec<String>>,
    /// `--disable-signal-handlers`.
    #[serde(alias = "disable-signal-handlers")]
    pub disable_signal_handlers: Option<bool>,
    /// `--rocdecode-trace`.
    pub rocdecode_trace: Option<bool>,
    /// `--rocjpeg-trace`.
    pub rocjpeg_trace: Option<bool>,
    /// `--pc-sampling-beta-enabled` (refused on WSL2, as on the command line).
    #[serde(alias = "pc-sampling-beta-enabled")]
    pub pc_sampling_beta_enabled: Option<bool>,
    /// `--pc-sampling-unit`.
    pub pc_sampling_unit: Option<String>,
    /// `--pc-sampling-method`.
    pub pc_sampling_method: Option<String>,
    /// `--pc-sampling-interval`.
    pub pc_sampling_interval: Option<u64>,
    /// `--memory-allocation-trace`.
    pub memory_allocation_trace: Option<bool>,
    /// `--scratch-memory-trace`.
    pub scratch_memory_trace: Option<bool>,
    /// `-r/--runtime-trace`.
    pub runtime_trace: Option<bool>,
    /// `--kernel-rename`.
    pub kernel_rename: Option<bool>,
    /// `-D/--summary-per-domain`.
    pub summary_per_domain: Option<bool>,
    /// `--summary-groups` (a list of regexes).
    pub summary_groups: Option<Vec<String>>,
    /// `--summary-output-file`.
    pub summary_output_file: Option<String>,
    /// `-u/--summary-units`.
    pub summary_units: Option<rocprof_runner::plan::SummaryUnits>,
    /// `--output-config`.
    pub output_config: Option<bool>,
    /// `--minimum-output-data` (KB; the schema spells it `minimum-output-data`).
    #[serde(alias = "minimum-output-data")]
    pub minimum_output_data: Option<u64>,
    /// `--group-by-queue`.
    pub group_by_queue: Option<bool>,
}

/// `--log-level` / `log_level`: rocprofv3's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LogLevel {
    Fatal,
    Error,
    Warning,
    Info,
    Trace,
    Env,
    /// Print the resolved options (rocprofv3's script configuration) to stderr, then run.
    Config,
}

impl LogLevel {
    /// The level rocprofv3 hands the application's libraries (`None` for `env` and `config`).
    pub fn tool_name(self) -> Option<&'static str> {
        Some(match self {
            Self::Fatal => "fatal",
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
            Self::Trace => "trace",
            Self::Env | Self::Config => return None,
        })
    }
}

/// `output_format`: format names as given (the tool tokenizes on ` \t,;:`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Formats(pub Vec<String>);

/// The top level of a run configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    jobs: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// Why an input file was refused.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The extension names no input format.
    #[error("{}: unknown input format; expected a .txt, .json, .yaml or .yml file", path.display())]
    Format {
        /// The file.
        path: PathBuf,
    },
    /// A line of a text file is malformed.
    #[error("{}: line {line}: {message}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// A JSON/YAML file is not well-formed, or lacks its `jobs` list.
    #[error("{}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A job's field is unknown or has a value of the wrong kind.
    #[error("{}: {field}: {message}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// `jobs[N].name` (N from 0).
        field: String,
        /// What was expected.
        message: String,
    },
}

/// Reads and parses the input file at `path`.
pub fn read(path: &Path) -> Result<Input, InputError> {
    if InputFormat::of(path).is_none() {
        return Err(InputError::Format {
            path: path.to_owned(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &text)
}

/// Parses `text` as the content of the input file `path` (whose extension picks the format).
pub fn parse(path: &Path, text: &str) -> Result<Input, InputError> {
    let format = InputFormat::of(path).ok_or_else(|| InputError::Format {
        path: path.to_owned(),
    })?;
    let jobs = match format {
        InputFormat::Text => parse_text(path, text)?
            .into_iter()
            .map(|counters| Job {
                pmc: Some(CounterList(counters)),
                ..Job::default()
            })
            .collect(),
        InputFormat::Json => {
            let value = serde_json::from_str(text).map_err(|e| InputError::Syntax {
                path: path.to_owned(),
                message: format!("not valid JSON: {e}"),
            })?;
            jobs(path, value)?
        }
        InputFormat::Yaml => jobs(path, yaml_value(path, text)?)?,
    };
    Ok(Input { format, jobs })
}

/// The passes of a text file: each `pmc:` line's counters.
pub fn parse_text(path: &Path, text: &str) -> Result<Vec<Vec<String>>, InputError> {
    let mut passes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line
            .split_once('#')
            .map_or(line, |(before, _)| before)
            .trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| InputError::Line {
            path: path.to_owned(),
            line: i + 1,
            message,
        };
        let Some(list) = line.strip_prefix("pmc:") else {
            return Err(err(format!(
                "expected `pmc: COUNTER …`, found `{}`",
                line.chars().take(40).collect::<String>()
            )));
        };
        let counters = split_counters(list);
        if counters.is_empty() {
            return Err(err("`pmc:` names no counters".into()));
        }
        passes.push(counters);
    }
    Ok(passes)
}

/// A text input file for `passes` (one `pmc:` line each), as [`parse_text`] reads it.
#[cfg(test)]
pub fn to_text(passes: &[Vec<String>]) -> String {
    passes
        .iter()
        .map(|p| format!("pmc: {}\n", p.join(" ")))
        .collect()
}

fn jobs(path: &Path, value: serde_json::Value) -> Result<Vec<Job>, InputError> {
    let config: Config = serde_json::from_value(value).map_err(|e| InputError::Syntax {
        path: path.to_owned(),
        message: format!("expected an object with one key, `jobs`, a list of objects: {e}"),
    })?;
    config
        .jobs
        .into_iter()
        .enumerate()
        .map(|(n, map)| job(path, n, map))
        .collect()
}

/// One job; on error, the field at fault is found by reading each field alone.
fn job(
    path: &Path,
    n: usize,
    map: serde_json::Map<String, serde_json::Value>,
) -> Result<Job, InputError> {
    let whole = serde_json::Value::Object(map);
    let e = match serde_json::from_value::<Job>(whole.clone()) {
        Ok(job) => return Ok(job),
        Err(e) => e,
    };
    let serde_json::Value::Object(map) = whole else {
        unreachable!("built as an object")
    };
    for (key, value) in map {
        let alone = serde_json::Value::Object([(key.clone(), value)].into_iter().collect());
        if let Err(e) = serde_json::from_value::<Job>(alone) {
            return Err(InputError::Field {
                path: path.to_owned(),
                field: format!("jobs[{n}].{key}"),
                message: e.to_string(),
            });
        }
    }
    Err(InputError::Field {
        path: path.to_owned(),
        field: format!("jobs[{n}]"),
        message: e.to_string(),
    })
}

/// A YAML document as a JSON value (mapping keys must be strings, numbers or booleans).
fn yaml_value(path: &Path, text: &str) -> Result<serde_json::Value, InputError> {
    use yaml_rust2::{Yaml, YamlLoader};
    let syntax = |message: String| InputError::Syntax {
        path: path.to_owned(),
        message,
    };
    let docs =
        YamlLoader::load_from_str(text).map_err(|e| syntax(format!("not valid YAML: {e}")))?;
    let [doc] = docs.as_slice() else {
        return Err(syntax(format!(
            "expected one YAML document, found {}",
            docs.len()
        )));
    };
    fn convert(y: &Yaml) -> Result<serde_json::Value, String> {
        use serde_json::Value;
        Ok(match y {
            Yaml::Null => Value::Null,
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Integer(i) => Value::from(*i),
            Yaml::Real(s) => s
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{s}` is not a finite number"))?,
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Array(items) => {
                Value::Array(items.iter().map(convert).collect::<Result<_, _>>()?)
            }
            Yaml::Hash(h) => {
                let mut map = serde_json::Map::new();
                for (k, v) in h {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => return Err("a mapping key is not a scalar".into()),
                    };
                    map.insert(key, convert(v)?);
                }
                Value::Object(map)
            }
            Yaml::Alias(_) | Yaml::BadValue => return Err("unsupported YAML value".into()),
        })
    }
    convert(doc).map_err(syntax)
}

/// Deserializes a string or a list of strings (or, with `ints`, integers) into tokens.
struct Tokens {
    expecting: &'static str,
    split: fn(&str) -> Vec<String>,
    ints: bool,
}

impl<'de> Visitor<'de> for Tokens {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((self.split)(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        if self.ints {
            Ok(vec![v.to_string()])
        } else {
            Err(E::invalid_type(de::Unexpected::Unsigned(v), &self))
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<serde_json::Value>()? {
            match item {
                serde_json::Value::String(s) => out.extend((self.split)(&s)),
                serde_json::Value::Number(n) if self.ints && n.is_u64() => out.push(n.to_string()),
                other => {
                    return Err(de::Error::invalid_value(
                        de::Unexpected::Other(&other.to_string()),
                        &self,
                    ));
                }
            }
        }
        Ok(out)
    }
}

impl<'de> Deserialize<'de> for CounterList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Tokens {
            expecting: "counter names: a string or a list of strings",
            split: split_counters,
            ints: false,
        })
        .map(CounterList)
    }
}

impl<'de> Deserialize<'de> for Formats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fn split(s: &str) -> Vec<String> {
            s.split([' ', '\t', ',', ';', ':'])
                .filter(|t| !t.is_empty())
                .map(String::from)
                .collect()
        }
        d.deserialize_any(Tokens {
            expecting: "output formats: a string or a list of strings",
            split,
            ints: false,
        })
        .map(Formats)
    }
}

impl<'de> Deserialize<'de> for IterationRanges {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fn split(s: &str) -> Vec<String> {
            trace_records::ranges::range_tokens(s)
                .map(String::from)
                .collect()
        }
        let tokens = d.deserialize_any(Tokens {
            expecting: "iteration ranges: a string such as \"[1, 3-5]\" or a list",
            split,
            ints: true,
        })?;
        tokens
            .iter()
            .map(|t| {
                parse_range(t).ok_or_else(|| {
                    de::Error::custom(format!(
                        "`{t}` is not an iteration number or an inclusive range `A-B` with A <= B"
                    ))
                })
            })
            .collect::<Result<_, _>>()
            .map(IterationRanges)
    }
}

fn parse_range(token: &str) -> Option<IterationRange> {
    let (first, last) = trace_records::ranges::range_token(token).ok()?;
    Some(IterationRange { first, last })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn text_lines_are_passes_and_comments_are_skipped() {
        let text = "# two passes\n\npmc: SQ_WAVES,SQ_INSTS_VALU  GRBM_COUNT # first\n  pmc:TCC_HIT[0]|TCC_MISS\n";
        let input = parse(Path::new("in.txt"), text).unwrap();
        assert_eq!(input.format, InputFormat::Text);
        let passes: Vec<Vec<String>> = input
            .jobs
            .iter()
            .map(|j| j.pmc.clone().unwrap().0)
            .collect();
        assert_eq!(
            passes,
            [
                names(&["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_COUNT"]),
                names(&["TCC_HIT[0]", "TCC_MISS"])
            ]
        );
    }

    #[test]
    fn a_bad_text_line_names_the_file_and_line() {
        let e = parse(Path::new("c.txt"), "pmc: A\nSQ_WAVES\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.txt: line 2: expected `pmc: COUNTER …`, found `SQ_WAVES`"
        );
        let e = parse(Path::new("c.txt"), "\n\npmc: ,\n").unwrap_err();
        assert_eq!(e.to_string(), "c.txt: line 3: `pmc:` names no counters");
        let e = parse(Path::new("c.ini"), "").unwrap_err();
        assert!(
            e.to_string().starts_with("c.ini: unknown input format"),
            "{e}"
        );
    }

    #[test]
    fn json_and_yaml_jobs_are_typed() {
        let json = r#"{"jobs": [
            {"pmc": ["SQ_WAVES", "GRBM_COUNT,GRBM_GUI_ACTIVE"], "kernel_trace": true,
             "kernel_include_regex": "add.*", "kernel_iteration_range": "[1, 3-5]",
             "output_format": ["csv"], "output_directory": "out", "agent_index": "type-relative"},
            {"pmc_groups": [["A"], "B C"], "pmc_group_interval": 10, "output_format": "csv,json"}
        ]}"#;
        let yaml = "jobs:\n  - pmc: [SQ_WAVES, 'GRBM_COUNT,GRBM_GUI_ACTIVE']\n    kernel_trace: true\n    kernel_include_regex: add.*\n    kernel_iteration_range: [1, 3-5]\n    output_format: [csv]\n    output_directory: out\n    agent_index: type-relative\n  - pmc_groups: [[A], B C]\n    pmc_group_interval: 10\n    output_format: csv,json\n";
        let a = parse(Path::new("r.json"), json).unwrap();
        let b = parse(Path::new("r.yml"), yaml).unwrap();
        assert_eq!((a.format, b.format), (InputFormat::Json, InputFormat::Yaml));
        assert_eq!(a.jobs, b.jobs);
        let j = &a.jobs[0];
        assert_eq!(
            j.pmc.as_ref().unwrap().0,
            names(&["SQ_WAVES", "GRBM_COUNT", "GRBM_GUI_ACTIVE"])
        );
        assert_eq!(j.kernel_trace, Some(true));
        assert_eq!(j.kernel_include_regex.as_deref(), Some("add.*"));
        assert_eq!(
            j.kernel_iteration_range.as_ref().unwrap().0,
            [
                IterationRange { first: 1, last: 1 },
                IterationRange { first: 3, last: 5 }
            ]
        );
        assert_eq!(
            j.agent_index,
            Some(rocprof_runner::plan::AgentIndexChoice::TypeRelative)
        );
        assert_eq!(j.output_directory.as_deref(), Some("out"));
        let k = &a.jobs[1];
        assert_eq!(
            k.pmc_groups.as_ref().unwrap(),
            &[CounterList(names(&["A"])), CounterList(names(&["B", "C"]))]
        );
        assert_eq!(k.pmc_group_interval, Some(10));
        assert_eq!(k.output_format.as_ref().unwrap().0, names(&["csv", "json"]));
        assert_eq!(k.pmc, None);
    }

    #[test]
    fn the_newer_options_are_job_keys_too() {
        let yaml = "jobs:\n  - memory_allocation_trace: true\n    runtime_trace: true\n    kernel_rename: true\n    summary_per_domain: true\n    summary_groups: ['KERNEL_DISPATCH|MEMORY_COPY']\n    summary_units: msec\n    minimum_output_data: 4\n";
        let j = &parse(Path::new("r.yaml"), yaml).unwrap().jobs[0];
        assert_eq!(j.memory_allocation_trace, Some(true));
        assert_eq!(j.runtime_trace, Some(true));
        assert_eq!(j.kernel_rename, Some(true));
        assert_eq!(
            j.summary_units,
            Some(rocprof_runner::plan::SummaryUnits::Msec)
        );
        assert_eq!(j.minimum_output_data, Some(4));
        assert_eq!(
            j.summary_groups.as_deref(),
            Some(&["KERNEL_DISPATCH|MEMORY_COPY".to_owned()][..])
        );
        let e = parse(Path::new("r.yaml"), "jobs:\n  - summary_units: minutes\n").unwrap_err();
        assert!(e.to_string().contains("summary_units"), "{e}");
    }

    #[test]
    fn every_key_of_rocprofv3s_input_schema_is_a_job_key() {
        // The keys of rocprofv3's rocprofv3_input_schema.json (and agent_index, list_avail).
        let json = r#"{"jobs": [{"pmc": ["A"], "pmc_groups": [["A"]], "pmc_group_interval": 2,
            "kernel_include_regex": "", "kernel_exclude_regex": "", "kernel_iteration_range": "[1]",
            "hip_trace": true, "hip_runtime_trace": true, "hip_compiler_trace": true,
            "marker_trace": true, "kernel_trace": true, "memory_copy_trace": true,
            "memory_allocation_trace": true, "rocdecode_trace": true, "rocjpeg_trace": true,
            "scratch_memory_trace": true, "stats": true, "hsa_trace": true, "hsa_core_trace": true,
            "hsa_amd_trace": true, "hsa_finalize_trace": true, "hsa_image_trace": true,
            "runtime_trace": true, "sys_trace": true, "mangled_kernels": true,
            "truncate_kernels": true, "output_file": "o", "output_directory": "d",
            "output_format": ["csv"], "list_metrics": true, "log_level": "trace",
            "preload": ["libm.so.6"], "minimum-output-data": 1, "disable-signal-handlers": true,
            "pc_sampling_unit": "time", "pc_sampling_method": "host_trap",
            "pc_sampling_interval": 1, "pc-sampling-beta-enabled": true,
            "agent_index": "absolute"}]}"#;
        let j = &parse(Path::new("s.json"), json).unwrap().jobs[0];
        assert_eq!(
            (j.hsa_finalizer_trace, j.list_avail, j.log_level),
            (Some(true), Some(true), Some(LogLevel::Trace))
        );
        assert_eq!(
            (j.minimum_output_data, j.disable_signal_handlers),
            (Some(1), Some(true))
        );
        assert_eq!(j.kernel_exclude_regex.as_deref(), Some(""));
        let e = parse(Path::new("s.json"), r#"{"jobs": [{"log_level": "loud"}]}"#).unwrap_err();
        assert!(e.to_string().contains("jobs[0].log_level"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let e = parse(
            Path::new("r.json"),
            r#"{"jobs": [{}, {"pmc": "A", "kernel-trace": true}]}"#,
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("r.json: jobs[1].kernel-trace: unknown field `kernel-trace`"),
            "{s}"
        );
        let e = parse(Path::new("r.yaml"), "jobs:\n  - kernel_trace: maybe\n").unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("r.yaml: jobs[0].kernel_trace: invalid type"),
            "{s}"
        );
        let e = parse(Path::new("r.json"), r#"{"jobs": [{"pmc": [1]}]}"#).unwrap_err();
        assert!(e.to_string().contains("jobs[0].pmc:"), "{e}");
        let e = parse(
            Path::new("r.json"),
            r#"{"jobs": [{"kernel_iteration_range": "5-3"}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("`5-3` is not"), "{e}");
        let e = parse(Path::new("r.json"), r#"{"job": []}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("r.json: expected an object"),
            "{e}"
        );
        let e = parse(Path::new("r.json"), "{").unwrap_err();
        assert!(e.to_string().starts_with("r.json: not valid JSON"), "{e}");
    }

    #[test]
    fn every_pmc_separator_splits() {
        let list: String = COUNTER_SEPARATORS.chars().flat_map(|c| [c, 'X']).collect();
        assert_eq!(
            split_counters(&list).len(),
            COUNTER_SEPARATORS.chars().count()
        );
        assert_eq!(split_counters("A\tB  C"), names(&["A", "B", "C"]));
    }

    fn counter_name() -> impl Strategy<Value = String> {
        "[A-Z][A-Z0-9_]{0,10}(\\[[0-9]{1,2}\\])?"
    }

    proptest! {
        #[test]
        fn text_files_round_trip(
            passes in proptest::collection::vec(proptest::collection::vec(counter_name(), 1..5), 0..6),
            comment in "[ -~]{0,20}",
        ) {
            let mut text = format!("# {comment}\n\n");
            text.push_str(&to_text(&passes));
            let parsed = parse_text(Path::new("p.txt"), &text).unwrap();
            prop_assert_eq!(parsed, passes);
        }

        #[test]
        fn arbitrary_input_never_panics(text in "\\PC{0,200}", raw in proptest::collection::vec(any::<u8>(), 0..200)) {
            let lossy = String::from_utf8_lossy(&raw);
            for name in ["a.txt", "a.json", "a.yaml"] {
                let _ = parse(Path::new(name), &text);
                let _ = parse(Path::new(name), &lossy);
            }
        }

        #[test]
        fn arbitrary_jobs_never_panic(key in "[a-z_-]{1,20}", value in "[ -~]{0,30}") {
            let yaml = format!("jobs:\n  - {key}: {value}\n");
            let _ = parse(Path::new("a.yaml"), &yaml);
        }
    }
}
