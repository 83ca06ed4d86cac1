//! Output options (`-d`, `-o`, `-f`, `--stats`, `-S`, `-M`, `-T`, `-A`, the summary and
//! Perfetto options), checked before anything runs and turned into the runner's
//! [`OutputSettings`].

use crate::messages;
use rocprof_runner::plan::{
    AgentIndexChoice, FillPolicy, OutputFormat, OutputSettings, PerfettoBackend, SummaryUnits,
};
use std::path::Path;
use trace_records::env::parse_bool;

/// The output options (rocprofv3's names), shared by run mode and `rocprof convert`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct OutputOptions {
    /// Output directory (`-d`); placeholders such as `%hostname%` expand. Default: `%cwd%`.
    #[arg(short = 'd', long = "output-directory")]
    pub output_directory: Option<String>,
    /// Output file prefix (`-o`), may contain `/`. Default: `%hostname%/%pid%`.
    #[arg(short = 'o', long = "output-file")]
    pub output_file: Option<String>,
    /// Output formats (comma or space separated): csv (the default), json, pftrace, rocpd,
    /// otf2 (needs the OTF2 library: `apt-get install libopen-trace-format2-10`).
    #[arg(short = 'f', long = "output-format", num_args = 1.., value_delimiter = ',')]
    pub output_format: Vec<String>,
    /// Per-name and per-domain statistics files.
    #[arg(long = "stats", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub stats: Option<bool>,
    /// A summary table on stderr after the run.
    #[arg(short = 'S', long = "summary", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub summary: Option<bool>,
    /// Keep kernel names mangled (default: demangled).
    #[arg(short = 'M', long = "mangled-kernels", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub mangled_kernels: Option<bool>,
    /// Shorten kernel names to the bare function name (e.g. `addition_kernel`).
    #[arg(short = 'T', long = "truncate-kernels", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub truncate_kernels: Option<bool>,
    /// How Agent_Id cells name agents.
    #[arg(short = 'A', long = "agent-index", value_enum)]
    pub agent_index: Option<AgentIndexChoice>,
    /// Name each dispatch after the innermost ROCTx range (roctxRangePush) open on its
    /// thread when it was launched.
    #[arg(long = "kernel-rename", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Naming")]
    pub kernel_rename: Option<bool>,
    /// The summary split per domain (one table per domain), after the run.
    #[arg(short = 'D', long = "summary-per-domain", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL",
          help_heading = "Summary")]
    pub summary_per_domain: Option<bool>,
    /// Summary tables of the domains whose label a regex matches in full (one table per
    /// regex; `KERNEL_DISPATCH|MEMORY_COPY` joins two).
    #[arg(long = "summary-groups", num_args = 1.., value_name = "REGEX",
          help_heading = "Summary")]
    pub summary_groups: Vec<String>,
    /// Where the summary goes: stdout, stderr (the default) or `<prefix>_<FILE>.txt`.
    #[arg(
        long = "summary-output-file",
        value_name = "FILE",
        help_heading = "Summary"
    )]
    pub summary_output_file: Option<String>,
    /// The summary's time unit.
    #[arg(
        short = 'u',
        long = "summary-units",
        value_enum,
        help_heading = "Summary"
    )]
    pub summary_units: Option<SummaryUnits>,
    /// Write the run's configuration to `<prefix>_config.json`.
    #[arg(long = "output-config", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub output_config: Option<bool>,
    /// Write no output file smaller than KB kilobytes.
    #[arg(long = "minimum-output-data", value_name = "KB")]
    pub minimum_output_data: Option<u64>,
    /// Perfetto tracks per HSA queue instead of per HIP stream.
    #[arg(long = "group-by-queue", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Perfetto")]
    pub group_by_queue: Option<bool>,
    /// Perfetto backend: `inprocess` (the trace is written by rocprof) or `system`
    /// (a traced daemon; refused: there is none under WSL2's rocprof).
    #[arg(long = "perfetto-backend", value_enum, help_heading = "Perfetto")]
    pub perfetto_backend: Option<PerfettoBackend>,
    /// Perfetto trace buffer size in KB (1..4194303; default 1 GiB).
    #[arg(long = "perfetto-buffer-size", value_name = "KB", help_heading = "Perfetto",
          value_parser = clap::value_parser!(u64).range(1..=4_194_303))]
    pub perfetto_buffer_size: Option<u64>,
    /// Perfetto shared-memory size hint in KB (default 64).
    #[arg(
        long = "perfetto-shmem-size-hint",
        value_name = "KB",
        help_heading = "Perfetto"
    )]
    pub perfetto_shmem_size_hint: Option<u64>,
    /// What happens when the Perfetto buffer is full: discard newer events or overwrite
    /// older ones.
    #[arg(
        long = "perfetto-buffer-fill-policy",
        value_enum,
        help_heading = "Perfetto"
    )]
    pub perfetto_buffer_fill_policy: Option<FillPolicy>,
}

/// Whether `word` names an output format (known to this rocprof or not yet supported).
pub fn is_format_word(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    ["csv", "json", "pftrace", "rocpd", "otf2"].contains(&w.as_str())
}

impl OutputOptions {
    /// The formats asked for (csv when none), or what is wrong with them.
    pub fn formats(&self) -> Result<Vec<OutputFormat>, String> {
        let mut out = Vec::new();
        for f in &self.output_format {
            for f in f.split([' ', ';', ':']).filter(|f| !f.is_empty()) {
                match f.to_ascii_lowercase().as_str() {
                    "csv" => out.push(OutputFormat::Csv),
                    "json" => out.push(OutputFormat::Json),
                    "pftrace" => out.push(OutputFormat::Pftrace),
                    "rocpd" => out.push(OutputFormat::Rocpd),
                    "otf2" => out.push(OutputFormat::Otf2),
                    other => return Err(messages::format_unknown(other)),
                }
            }
        }
        if out.is_empty() {
            out.push(OutputFormat::Csv);
        }
        let mut seen = Vec::new();
        out.retain(|f| {
            let first = !seen.contains(f);
            seen.push(*f);
            first
        });
        Ok(out)
    }

    /// The settings of a run started in `cwd`: these options over rocprofv3's defaults
    /// ([`OutputSettings::new`]).
    pub fn settings(&self, cwd: &Path) -> Result<OutputSettings, String> {
        self.apply_to(&OutputSettings::new(cwd), cwd)
    }

    /// `run`'s settings with the options given here (on a command line run in `cwd`) in
    /// their place.
    pub fn apply_to(&self, run: &OutputSettings, cwd: &Path) -> Result<OutputSettings, String> {
        let mut s = run.clone();
        if let Some(d) = &self.output_directory {
            s.directory = d.clone();
            s.base = cwd.to_owned();
        }
        if let Some(f) = &self.output_file {
            s.file = f.clone();
        }
        if !self.output_format.is_empty() {
            s.formats = self.formats()?;
        }
        s.stats = self.stats.unwrap_or(s.stats);
        s.summary = self.summary.unwrap_or(s.summary);
        s.mangled_kernels = self.mangled_kernels.unwrap_or(s.mangled_kernels);
        s.truncate_kernels = self.truncate_kernels.unwrap_or(s.truncate_kernels);
        s.agent_index = self.agent_index.unwrap_or(s.agent_index);
        s.kernel_rename = self.kernel_rename.unwrap_or(s.kernel_rename);
        s.output_config = self.output_config.unwrap_or(s.output_config);
        Ok(with_extras(s, self))
    }
}

impl OutputOptions {
    /// Checks the summary and Perfetto options before anything runs (`tracing`: a tracing or
    /// counter option was given). Returns the warnings to print; an error refuses the run.
    ///
    /// - `-D`, `--summary-groups`, `--summary-output-file` and `-u` need tracing, as
    ///   rocprofv3's script requires; a group that is not a valid regular expression is
    ///   refused.
    /// - `--perfetto-backend system` is refused: rocprof writes the trace file itself after
    ///   the run, there is no `traced` daemon to send events to.
    /// - `--perfetto-shmem-size-hint` sizes the shared memory between an in-process producer
    ///   and the tracing service, which this writer does not have: accepted, not used.
    /// - The Perfetto options without `-f pftrace` have nothing to act on.
    pub fn check_extras(&self, tracing: bool) -> Result<Vec<String>, String> {
        self.check(tracing, true)
    }

    /// [`OutputOptions::check_extras`] for `rocprof convert` and `merge`, whose formats
    /// default to the run's.
    pub fn check_for_conversion(&self) -> Result<Vec<String>, String> {
        self.check(true, !self.output_format.is_empty())
    }

    fn check(&self, tracing: bool, formats_known: bool) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        if !tracing {
            let given = [
                (
                    "-D/--summary-per-domain",
                    self.summary_per_domain == Some(true),
                ),
                ("--summary-groups", !self.summary_groups.is_empty()),
                ("--summary-output-file", self.summary_output_file.is_some()),
                ("-u/--summary-units", self.summary_units.is_some()),
            ];
            if let Some((name, _)) = given.iter().find(|g| g.1) {
                return Err(format!(
                    "{name} needs a tracing option (e.g. --sys-trace or --kernel-trace): the summary is made of traced records"
                ));
            }
        }
        rocprof_runner::summary::check_groups(&self.summary_groups)?;
        if let Some(f) = &self.summary_output_file
            && (f.is_empty() || f.contains('/'))
        {
            return Err(format!(
                "--summary-output-file {f:?}: give stdout, stderr or a name (the file is <prefix>_<name>.txt beside the other outputs)"
            ));
        }
        if self.perfetto_backend == Some(PerfettoBackend::System) {
            return Err(
                "--perfetto-backend system is not available: rocprof writes the Perfetto trace itself from the records after the run, there is no traced daemon to hand events to; the inprocess backend (the default) is the only one".into(),
            );
        }
        if let Some(kb) = self.perfetto_shmem_size_hint {
            warnings.push(format!(
                "--perfetto-shmem-size-hint {kb} is accepted and not used: it sizes the shared memory between an in-process Perfetto producer and its tracing service, and rocprof writes the trace file directly"
            ));
        }
        if self.perfetto_buffer_fill_policy.is_some() && self.perfetto_buffer_size.is_none() {
            warnings.push(
                "--perfetto-buffer-fill-policy acts only when the trace exceeds --perfetto-buffer-size, and no size was given (rocprof does not limit the trace otherwise)".into(),
            );
        }
        let pftrace = self
            .formats()
            .map(|f| f.contains(&OutputFormat::Pftrace))
            .unwrap_or(false);
        let perfetto_given = self.group_by_queue.is_some()
            || self.perfetto_backend.is_some()
            || self.perfetto_buffer_size.is_some()
            || self.perfetto_shmem_size_hint.is_some()
            || self.perfetto_buffer_fill_policy.is_some();
        if perfetto_given && !pftrace && formats_known {
            warnings.push(
                "the --group-by-queue and --perfetto-* options shape the Perfetto trace, and -f has no pftrace: they have no effect".into(),
            );
        }
        Ok(warnings)
    }
}

/// The summary, minimum-size and Perfetto options `o` gives, over `settings`.
fn with_extras(mut settings: OutputSettings, o: &OutputOptions) -> OutputSettings {
    let sum = &mut settings.summary_options;
    sum.per_domain = o.summary_per_domain.unwrap_or(sum.per_domain);
    if !o.summary_groups.is_empty() {
        sum.groups = o.summary_groups.clone();
    }
    if o.summary_output_file.is_some() {
        sum.output_file = o.summary_output_file.clone();
    }
    sum.units = o.summary_units.unwrap_or(sum.units);
    if let Some(kb) = o.minimum_output_data {
        settings.minimum_output_bytes = kb.saturating_mul(1024);
    }
    let p = &mut settings.perfetto;
    p.group_by_queue = o.group_by_queue.unwrap_or(p.group_by_queue);
    if o.perfetto_buffer_size.is_some() {
        p.buffer_size_kb = o.perfetto_buffer_size;
    }
    p.shmem_size_hint_kb = o.perfetto_shmem_size_hint.unwrap_or(p.shmem_size_hint_kb);
    p.fill_policy = o.perfetto_buffer_fill_policy.unwrap_or(p.fill_policy);
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(d: &str, o: &str) -> OutputSettings {
        OutputOptions {
            output_directory: Some(d.into()),
            output_file: Some(o.into()),
            ..Default::default()
        }
        .settings(Path::new("/base"))
        .unwrap()
    }

    #[test]
    fn summary_and_perfetto_options_are_checked_before_the_run() {
        let o = |f: &dyn Fn(&mut OutputOptions)| {
            let mut o = OutputOptions::default();
            f(&mut o);
            o
        };
        let e = o(&|o| o.perfetto_backend = Some(PerfettoBackend::System))
            .check_extras(true)
            .unwrap_err();
        assert!(e.contains("traced") && e.contains("inprocess"), "{e}");
        let e = o(&|o| o.summary_units = Some(SummaryUnits::Msec))
            .check_extras(false)
            .unwrap_err();
        assert!(
            e.contains("-u/--summary-units needs a tracing option"),
            "{e}"
        );
        assert!(
            o(&|o| o.summary_groups = vec!["(".into()])
                .check_extras(true)
                .is_err()
        );
        assert!(
            o(&|o| o.summary_output_file = Some("a/b".into()))
                .check_extras(true)
                .is_err()
        );
        let w = o(&|o| o.perfetto_shmem_size_hint = Some(128))
            .check_extras(true)
            .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("not used") && w[1].contains("no pftrace"),
            "{w:?}"
        );
        // A conversion without -f writes the run's formats: no pftrace warning.
        let w = o(&|o| o.group_by_queue = Some(true))
            .check_for_conversion()
            .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let w = o(&|o| {
            o.group_by_queue = Some(true);
            o.output_format = vec!["pftrace".into()];
        })
        .check_extras(true)
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        // The resolved settings keep the buffer size only when given.
        let s = o(&|o| o.perfetto_buffer_size = Some(8))
            .settings(Path::new("/"))
            .unwrap();
        assert_eq!(s.perfetto.buffer_size_kb, Some(8));
        assert_eq!(settings("o", "r").perfetto.buffer_size_kb, None);
    }

    #[test]
    fn convert_options_override_only_what_they_name() {
        let run = settings("out", "run");
        let o = OutputOptions {
            stats: Some(true),
            output_directory: Some("again".into()),
            ..Default::default()
        };
        let s = o.apply_to(&run, Path::new("/elsewhere")).unwrap();
        assert_eq!((s.directory.as_str(), s.file.as_str()), ("again", "run"));
        assert_eq!(s.base, Path::new("/elsewhere"));
        assert!(s.stats && !s.summary);
        let bad = OutputOptions {
            output_format: vec!["xml".into()],
            ..Default::default()
        };
        assert!(bad.apply_to(&run, Path::new("/")).is_err());
    }
}
