//! `rocprof [options] -- app args…`: run the application with the tool preloaded, then turn the
//! record logs into rocprofv3's files and explain anything that is missing.

use crate::avail::choose_layout;
use crate::placeholders::Context;
use crate::process;
use anyhow::{Context as _, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_records::agents::{AgentIndex, AgentLabels, AgentsDocument};
use trace_records::csv::{CsvSelection, OutputPrefix, write_csv};
use trace_records::{ApiDomain, ProcessTrace, env};
use wsl_topology::Settings;

pub use trace_records::env::parse_bool;

macro_rules! flags {
    ($( $(#[$m:meta])* $field:ident : $long:literal $(, short = $short:literal)? ; )*) => {
        /// Tracing and output options (rocprofv3's names).
        #[derive(Debug, Default, clap::Args)]
        pub struct RunOptions {
            $(
                $(#[$m])*
                #[arg(long = $long, $(short = $short,)? num_args = 0..=1, default_missing_value = "true",
                      value_parser = parse_bool, value_name = "BOOL")]
                pub $field: Option<bool>,
            )*
            /// Output directory (`-d`); placeholders such as `%hostname%` expand. Default: `%cwd%`.
            #[arg(short = 'd', long = "output-directory")]
            pub output_directory: Option<String>,
            /// Output file prefix (`-o`), may contain `/`. Default: `%hostname%/%pid%`.
            #[arg(short = 'o', long = "output-file")]
            pub output_file: Option<String>,
            /// Output formats (comma or space separated). Supported: csv.
            #[arg(short = 'f', long = "output-format", num_args = 1.., value_delimiter = ',')]
            pub output_format: Vec<String>,
            /// Only kernels whose name matches are counted or traced in detail.
            #[arg(long = "kernel-include-regex")]
            pub kernel_include_regex: Option<String>,
            /// Kernels whose name matches are excluded (applied after the include filter).
            #[arg(long = "kernel-exclude-regex")]
            pub kernel_exclude_regex: Option<String>,
            /// How Agent_Id cells name agents.
            #[arg(short = 'A', long = "agent-index", value_parser = ["absolute", "relative", "type-relative"])]
            pub agent_index: Option<String>,
        }
    };
}

flags! {
    /// HIP runtime and compiler API calls.
    hip_trace: "hip-trace";
    /// HIP runtime API calls.
    hip_runtime_trace: "hip-runtime-trace";
    /// HIP compiler-generated calls (__hipRegisterFatBinary, …).
    hip_compiler_trace: "hip-compiler-trace";
    /// All HSA API calls (core, AMD extension, image, finalizer).
    hsa_trace: "hsa-trace";
    /// HSA core API calls.
    hsa_core_trace: "hsa-core-trace";
    /// HSA AMD extension API calls.
    hsa_amd_trace: "hsa-amd-trace";
    /// HSA image extension API calls.
    hsa_image_trace: "hsa-image-trace";
    /// HSA finalizer extension API calls.
    hsa_finalizer_trace: "hsa-finalizer-trace";
    /// Kernel dispatches.
    kernel_trace: "kernel-trace";
    /// Asynchronous memory copies.
    memory_copy_trace: "memory-copy-trace";
    /// ROCTx marks and ranges.
    marker_trace: "marker-trace";
    /// Everything above.
    sys_trace: "sys-trace", short = 's';
    /// Per-name and per-domain statistics files.
    stats: "stats";
    /// Keep kernel names mangled (default: demangled).
    mangled_kernels: "mangled-kernels", short = 'M';
    /// Shorten kernel names to the bare function name (e.g. `addition_kernel`).
    truncate_kernels: "truncate-kernels", short = 'T';
    /// A summary table on stderr after the run.
    summary: "summary", short = 'S';
}

/// The resolved selection of what to trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selection {
    pub hip_runtime: bool,
    pub hip_compiler: bool,
    pub hsa_core: bool,
    pub hsa_amd: bool,
    pub hsa_image: bool,
    pub hsa_finalizer: bool,
    pub kernels: bool,
    pub copies: bool,
    pub markers: bool,
}

impl RunOptions {
    /// Aggregates fill only the sub-options the user left unset.
    pub fn selection(&self) -> Selection {
        let sys = self.sys_trace.unwrap_or(false);
        let hip = self.hip_trace.unwrap_or(sys);
        let hsa = self.hsa_trace.unwrap_or(sys);
        Selection {
            hip_runtime: self.hip_runtime_trace.unwrap_or(hip),
            hip_compiler: self.hip_compiler_trace.unwrap_or(hip),
            hsa_core: self.hsa_core_trace.unwrap_or(hsa),
            hsa_amd: self.hsa_amd_trace.unwrap_or(hsa),
            hsa_image: self.hsa_image_trace.unwrap_or(hsa),
            hsa_finalizer: self.hsa_finalizer_trace.unwrap_or(hsa),
            kernels: self.kernel_trace.unwrap_or(sys),
            copies: self.memory_copy_trace.unwrap_or(sys),
            markers: self.marker_trace.unwrap_or(sys),
        }
    }

    /// Rejects unknown or contradictory options before anything runs.
    pub fn validate(&self) -> Result<()> {
        let s = self.selection();
        let any = s != Selection::default();
        if !any && (self.stats == Some(true) || self.summary == Some(true)) {
            bail!(
                "--stats and --summary need a tracing option (e.g. --sys-trace or --kernel-trace)"
            );
        }
        for f in &self.output_format {
            for f in f.split([' ', ';', ':']).filter(|f| !f.is_empty()) {
                match f.to_ascii_lowercase().as_str() {
                    "csv" => {}
                    "json" | "pftrace" | "otf2" | "rocpd" => {
                        bail!("--output-format {f} is not supported yet by this rocprof; use csv")
                    }
                    other => bail!("unknown --output-format '{other}' (expected csv)"),
                }
            }
        }
        for (name, re) in [
            ("include", &self.kernel_include_regex),
            ("exclude", &self.kernel_exclude_regex),
        ] {
            if let Some(re) = re {
                if re.is_empty() {
                    bail!("--kernel-{name}-regex needs a pattern");
                }
                if let Err(e) = regex::Regex::new(re) {
                    bail!("--kernel-{name}-regex '{re}' is not a valid regular expression: {e}");
                }
            }
        }
        Ok(())
    }

    /// The kernel filters as the tool reads them (rocprofv3 applies them to counter collection
    /// and thread trace only).
    fn filter_env(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(re) = &self.kernel_include_regex {
            v.push(("ROCPROF_KERNEL_FILTER_INCLUDE_REGEX", re.clone()));
        }
        if let Some(re) = &self.kernel_exclude_regex {
            v.push(("ROCPROF_KERNEL_FILTER_EXCLUDE_REGEX", re.clone()));
        }
        v
    }

    fn env(&self) -> Vec<(&'static str, &'static str)> {
        let s = self.selection();
        [
            (env::HIP_RUNTIME_API_TRACE, s.hip_runtime),
            (env::HIP_COMPILER_API_TRACE, s.hip_compiler),
            (env::HSA_CORE_API_TRACE, s.hsa_core),
            (env::HSA_AMD_EXT_API_TRACE, s.hsa_amd),
            (env::HSA_IMAGE_EXT_API_TRACE, s.hsa_image),
            (env::HSA_FINALIZER_EXT_API_TRACE, s.hsa_finalizer),
            (env::KERNEL_TRACE, s.kernels),
            (env::MEMORY_COPY_TRACE, s.copies),
            (env::MARKER_API_TRACE, s.markers),
        ]
        .into_iter()
        .map(|(k, v)| (k, if v { "1" } else { "0" }))
        .collect()
    }
}

/// The tool library next to the executable.
fn tool_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the rocprof executable")?;
    let lib = exe
        .parent()
        .map(|d| d.join("librocprof_tool.so"))
        .unwrap_or_default();
    if !lib.exists() {
        bail!(
            "the profiler library is missing: expected {} next to rocprof (build it with `cargo xtask build`)",
            lib.display()
        );
    }
    Ok(lib)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// `first`, then the current value of the colon-separated list in `var` (if any).
pub(crate) fn prepended(var: &str, first: OsString) -> OsString {
    let mut list = first;
    if let Some(old) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        list.push(":");
        list.push(old);
    }
    list
}

/// Runs the application and writes the outputs.
pub fn run(opts: &RunOptions, app: &[OsString]) -> Result<ExitCode> {
    opts.validate()?;
    if app.is_empty() {
        bail!(
            "nothing to run: give the application after `--`, e.g. `rocprof --sys-trace -- ./app`"
        );
    }
    let sel = opts.selection();
    if sel == Selection::default() {
        eprintln!(
            "rocprof: warning: no tracing option given; the application runs with the profiler loaded but nothing is recorded (try --sys-trace)"
        );
    }
    let tool = tool_library()?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let record_dir = std::env::temp_dir().join(format!("rocprof-records-{}", std::process::id()));
    std::fs::create_dir_all(&record_dir)
        .with_context(|| format!("cannot create {}", record_dir.display()))?;

    let settings = Settings::from_env();
    let selection = wsl_topology::platform::select(&settings);
    let layout = choose_layout(&settings, selection.platform);
    for w in &layout.warnings {
        eprintln!("rocprof: warning: {w}");
    }

    let mut cmd = std::process::Command::new(&app[0]);
    cmd.args(&app[1..]);
    cmd.env("LD_PRELOAD", prepended("LD_PRELOAD", tool.into_os_string()))
        .env(env::RECORD_DIR, &record_dir);
    for (k, v) in opts.env() {
        cmd.env(k, v);
    }
    for (k, v) in opts.filter_env() {
        cmd.env(k, v);
    }
    if let Some(choice) = layout.choice.as_ref().filter(|_| settings.layout.is_none()) {
        cmd.env(wsl_topology::settings::ENV_LAYOUT, choice.size.to_string());
    }
    let launch = process::now_local();
    let status = process::run_forwarding_signals(cmd)
        .with_context(|| format!("cannot start {}", app[0].to_string_lossy()))?;

    let mut logs: Vec<PathBuf> = std::fs::read_dir(&record_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "rplog"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    let argv: Vec<String> = app
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut written = Vec::new();
    let mut traces: Vec<ProcessTrace> = Vec::new();
    for log in &logs {
        match ProcessTrace::read(log) {
            Ok(t) => {
                if let Some(d) = &t.damage {
                    eprintln!(
                        "rocprof: warning: {}: the record log is damaged at byte {} ({}); {} bytes after it were skipped, everything before it is kept",
                        log.display(),
                        d.offset,
                        d.reason,
                        d.bytes_lost
                    );
                }
                traces.push(t);
            }
            Err(e) => eprintln!("rocprof: warning: {e}; that process's records are lost"),
        }
    }
    let index = match opts.agent_index.as_deref() {
        Some("absolute") => AgentIndex::Absolute,
        Some("type-relative") => AgentIndex::TypeRelative,
        _ => AgentIndex::Relative,
    };
    let csv = CsvSelection {
        hip: sel.hip_runtime || sel.hip_compiler,
        hsa: sel.hsa_core || sel.hsa_amd || sel.hsa_image || sel.hsa_finalizer,
        kernels: sel.kernels,
        copies: sel.copies,
        markers: sel.markers,
        stats: opts.stats == Some(true),
    };
    for t in &mut traces {
        rename_kernels(
            t,
            opts.mangled_kernels != Some(true),
            opts.truncate_kernels == Some(true),
        );
    }
    let mut prefixes_used = std::collections::HashSet::new();
    // Everything but the pid is the same for every process.
    let mut ctx = Context {
        pid: 0,
        ppid: std::process::id(),
        hostname: hostname(),
        cwd: cwd.display().to_string(),
        argv: argv.clone(),
        launch_date: launch.0.clone(),
        launch_time: launch.1.clone(),
    };
    for t in &traces {
        ctx.pid = t.pid;
        let dir = ctx.expand(opts.output_directory.as_deref().unwrap_or("%cwd%"));
        let file = ctx.expand(opts.output_file.as_deref().unwrap_or("%hostname%/%pid%"));
        let mut prefix = OutputPrefix(Path::new(&dir).join(file));
        if !prefixes_used.insert(prefix.0.clone()) {
            // Several processes, one name: keep them apart instead of overwriting.
            let mut p = prefix.0.clone().into_os_string();
            p.push(format!("_{}", t.pid));
            eprintln!(
                "rocprof: warning: several processes share the output name {}; process {} writes to {}",
                prefix.0.display(),
                t.pid,
                Path::new(&p).display()
            );
            prefix = OutputPrefix(PathBuf::from(p));
        }
        let agents = AgentsDocument::find(&t.json)
            .map(|d| d.agents)
            .unwrap_or_default();
        let labels = AgentLabels::new(agents, index);
        written.extend(
            write_csv(&prefix, t, &labels, csv).with_context(|| "cannot write the output files")?,
        );
        if opts.summary == Some(true) {
            crate::summary::print(t);
        }
    }
    let problems = crate::explain::explain(&sel, &status, &traces, &logs);
    for p in &problems {
        eprintln!("rocprof: {p}");
    }
    if problems.is_empty() || !written.is_empty() {
        let _ = std::fs::remove_dir_all(&record_dir);
    } else {
        eprintln!(
            "rocprof: the raw record logs are kept in {}",
            record_dir.display()
        );
    }
    eprintln!(
        "rocprof: the application {}; {} process(es) recorded, {} file(s) written{}",
        status.describe(),
        traces.len(),
        written.len(),
        written
            .first()
            .and_then(|p| p.parent())
            .map(|d| format!(" in {}", d.display()))
            .unwrap_or_default()
    );
    Ok(status.exit_code())
}

/// Demangles (and optionally truncates) the kernel names of `t`'s symbols in place.
fn rename_kernels(t: &mut ProcessTrace, demangle: bool, truncate: bool) {
    let ids: Vec<u32> = t.symbols.iter().map(|s| s.name).collect();
    for id in ids {
        let Some(name) = t.strings.get(&id) else {
            continue;
        };
        let mut new = name.clone();
        if (demangle || truncate)
            && let Ok(sym) = cpp_demangle::Symbol::new(name.as_bytes())
            && let Ok(d) = sym.demangle()
        {
            new = d;
        }
        if truncate {
            new = truncate_name(&new);
        }
        t.strings.insert(id, new);
    }
}

/// `void ns::kernel<float>(float*, int)` → `kernel`.
pub fn truncate_name(name: &str) -> String {
    let head = name.split('(').next().unwrap_or(name);
    let mut depth = 0;
    let plain: String = head
        .chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect();
    let last = plain.trim().rsplit([' ', ':']).next().unwrap_or(&plain);
    last.to_owned()
}

/// Domains with records, to compare with what was asked for.
pub fn recorded(traces: &[ProcessTrace]) -> Selection {
    let mut s = Selection::default();
    for t in traces {
        for r in &t.api {
            match ApiDomain::from_u8(r.domain) {
                Some(ApiDomain::HipRuntime) => s.hip_runtime = true,
                Some(ApiDomain::HipCompiler) => s.hip_compiler = true,
                Some(ApiDomain::HsaCore) => s.hsa_core = true,
                Some(ApiDomain::HsaAmdExt) => s.hsa_amd = true,
                Some(ApiDomain::HsaImage) => s.hsa_image = true,
                Some(ApiDomain::HsaFinalize) => s.hsa_finalizer = true,
                _ => {}
            }
        }
        s.kernels |= !t.dispatches.is_empty();
        s.copies |= !t.copies.is_empty();
        s.markers |= !t.markers.is_empty();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct P {
        #[command(flatten)]
        o: RunOptions,
    }

    fn parse(args: &[&str]) -> Result<RunOptions, clap::Error> {
        P::try_parse_from(std::iter::once("rocprof").chain(args.iter().copied())).map(|p| p.o)
    }

    #[test]
    fn kernel_names_truncate_to_the_function() {
        assert_eq!(
            truncate_name("void addition_kernel<float>(float*, float const*, int)"),
            "addition_kernel"
        );
        assert_eq!(
            truncate_name("ns::axpb(float const*, float*, unsigned long)"),
            "axpb"
        );
        assert_eq!(
            truncate_name("__amd_rocclr_copyBuffer"),
            "__amd_rocclr_copyBuffer"
        );
    }

    #[test]
    fn sys_trace_fills_only_unset_sub_options() {
        let o = parse(&["--sys-trace", "--kernel-trace=false"]).unwrap();
        let s = o.selection();
        assert!(s.hip_runtime && s.hsa_core && s.copies && s.markers);
        assert!(!s.kernels);
        let o = parse(&["--hsa-trace", "--hsa-image-trace", "no"]).unwrap();
        assert!(o.selection().hsa_amd && !o.selection().hsa_image && !o.selection().kernels);
    }

    #[test]
    fn bad_options_are_refused_before_anything_runs() {
        assert!(parse(&["--kernel-trace=maybe"]).is_err());
        assert!(
            parse(&["--stats"])
                .unwrap()
                .validate()
                .unwrap_err()
                .to_string()
                .contains("need a tracing option")
        );
        let e = parse(&["--kernel-trace", "--kernel-include-regex", "(unclosed"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            e.to_string().contains("not a valid regular expression"),
            "{e}"
        );
        let e = parse(&["--kernel-trace", "-f", "pftrace"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("not supported yet"), "{e}");
        let e = parse(&["--kernel-trace", "-f", "xml"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("unknown --output-format"), "{e}");
        assert!(
            parse(&["--kernel-trace", "-f", "csv"])
                .unwrap()
                .validate()
                .is_ok()
        );
    }
}
