//! How the application is launched: `--preload`, `--disable-signal-handlers`, MPI rank
//! selection (`--profile-mpi-ranks` and the rank/size variables), attach (`-p/--pid/--attach`,
//! refused on WSL2 with the reason) and rocprofv3's hidden debugging options.
//!
//! MPI: `mpirun -np N rocprof [options] -- app` starts one `rocprof` per rank. A rank that
//! `--profile-mpi-ranks` does not select replaces itself with the application (`exec`, same
//! pid, environment and arguments), so it runs unprofiled and writes nothing, and the job's
//! ranks stay the processes `mpirun` started.

use std::ffi::OsString;
use std::path::Path;
use trace_records::env::parse_bool;

/// The options (rocprofv3's names).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct LaunchOptions {
    /// Libraries to preload into the application as well (`:` or space separated; default
    /// ROCPROF_PRELOAD), after the profiler's own library.
    #[arg(long = "preload", num_args = 1.., value_name = "LIB", help_heading = "Launch")]
    pub preload: Vec<String>,
    /// Install no fatal-signal handlers in the application (rocprof's tool installs none: its
    /// records survive a crash in the shared log mapping).
    #[arg(long = "disable-signal-handlers", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Launch")]
    pub disable_signal_handlers: Option<bool>,
    /// Profile only these MPI ranks (`0-3,8`; default ROCPROF_MPI_RANKS); the others run
    /// unprofiled.
    #[arg(long = "profile-mpi-ranks", value_name = "RANKS", help_heading = "MPI")]
    pub profile_mpi_ranks: Option<String>,
    /// The variable holding this process's MPI rank (with --mpi-world-size-variable; default:
    /// detected from Open MPI, MPICH/PMI, MVAPICH2, Slurm, PBS).
    #[arg(
        long = "mpi-world-rank-variable",
        value_name = "VAR",
        help_heading = "MPI"
    )]
    pub mpi_world_rank_variable: Option<String>,
    /// The variable holding the MPI world size (with --mpi-world-rank-variable).
    #[arg(
        long = "mpi-world-size-variable",
        value_name = "VAR",
        help_heading = "MPI"
    )]
    pub mpi_world_size_variable: Option<String>,
    /// Attach to a running process (refused on WSL2: see the message).
    #[arg(
        short = 'p',
        long = "pid",
        visible_alias = "attach",
        value_name = "PID",
        help_heading = "Attach"
    )]
    pub pid: Option<String>,
    /// With --pid: how long to stay attached.
    #[arg(
        long = "attach-duration-msec",
        value_name = "MS",
        help_heading = "Attach"
    )]
    pub attach_duration_msec: Option<u64>,
    /// With --pid: also attach to the process's children.
    #[arg(long = "attach-children", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Attach")]
    pub attach_children: Option<bool>,
    /// With --pid: write the outputs when detaching.
    #[arg(long = "attach-sync-output", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Attach")]
    pub attach_sync_output: Option<bool>,
    /// Synchronise the outputs of several processes (rocprof writes every process's outputs
    /// after the application exits, so they always are).
    #[arg(long = "process-sync", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL", help_heading = "Launch")]
    pub process_sync: Option<bool>,
    /// rocprofv3's overhead-measurement modes (refused: use `cargo xtask bench`).
    #[arg(long = "benchmark-mode", hide = true, value_name = "MODE")]
    pub benchmark_mode: Option<String>,
    /// Print the application's command and the variables rocprof sets before running it.
    #[arg(long = "echo", hide = true, num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub echo: Option<bool>,
    /// Run the application by its path with symbolic links resolved.
    #[arg(long = "readlink", hide = true, num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub readlink: Option<bool>,
    /// Run the application by its canonical absolute path.
    #[arg(long = "realpath", hide = true, num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub realpath: Option<bool>,
    /// Do not preload the ROCTx library (rocprof never preloads it: markers are traced through
    /// the table ROCTx registers).
    #[arg(long = "suppress-marker-preload", hide = true, num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub suppress_marker_preload: Option<bool>,
}

/// Why attaching is refused here (the seed's reason).
pub const ATTACH_REFUSED: &str = "-p/--pid/--attach is not supported on WSL2: attaching to a running process enumerates the GPU's topology again through librocdxg after the application initialised it, and released librocdxg packages do not reference-count that topology snapshot (the enumeration would read memory the thunk has released), so ROCprofiler-SDK disables WSL agent enumeration on late attach. It needs a refcount-capable runtime (the snapshot-ownership fix) — DxgAbiCheck alone does not establish it. Launch the application under rocprof instead: `rocprof [options] -- app`";

/// The rank and size variables detected when none are named (rocprofv3's pairs, in its
/// order).
pub const MPI_VARIABLES: [(&str, &str); 9] = [
    ("PBS_NODENUM", "PBS_O_TASKNUM"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("PMI_RANK", "PMI_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("MPI_RANKID", "MPI_NRANKS"),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("MPI_RANK", "MPI_SIZE"),
    ("PMIX_RANK", "PMIX_SIZE"),
];

/// This process's place in an MPI job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiRank {
    /// The rank.
    pub rank: u64,
    /// The world size, if its variable is set.
    pub size: Option<u64>,
    /// The rank's variable.
    pub variable: String,
}

/// What to do with this process, as the MPI options decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankDecision {
    /// Profile it.
    Profile,
    /// Run the application unprofiled (this rank is not selected).
    Unprofiled(MpiRank),
}

/// Parses `0-3,8` (commas or blanks; integers or inclusive ranges), with the range-list
/// tokens of `--kernel-iteration-range` ([`trace_records::ranges::range_token`]).
pub fn parse_ranks(v: &str) -> Result<Vec<(u64, u64)>, String> {
    use trace_records::ranges::{TokenError, range_token, range_tokens};
    let out = range_tokens(v)
        .map(|tok| {
            range_token(tok).map_err(|e| match e {
                TokenError::Reversed { .. } => {
                    format!("--profile-mpi-ranks: the range '{tok}' ends before it starts")
                }
                TokenError::NotANumber | TokenError::TooLarge => {
                    format!("--profile-mpi-ranks: '{tok}' is not a rank or a range A-B")
                }
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if out.is_empty() {
        return Err(format!("--profile-mpi-ranks: '{v}' names no rank"));
    }
    Ok(out)
}

impl LaunchOptions {
    /// What is wrong with these options, before anything runs (`lookup` reads the
    /// environment).
    pub fn validate(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if self.pid.is_some() {
            return Err(ATTACH_REFUSED.into());
        }
        if self.attach_duration_msec.is_some()
            || self.attach_children.is_some()
            || self.attach_sync_output.is_some()
        {
            return Err(format!(
                "--attach-duration-msec, --attach-children and --attach-sync-output belong to -p/--pid/--attach, which is refused: {ATTACH_REFUSED}"
            ));
        }
        if let Some(mode) = &self.benchmark_mode {
            return Err(format!(
                "--benchmark-mode {mode}: this is ROCprofiler-SDK's measurement of its own overhead; rocprof's overheads are measured by `cargo xtask bench` (see docs/PERFORMANCE.md)"
            ));
        }
        match (&self.mpi_world_rank_variable, &self.mpi_world_size_variable) {
            (Some(_), None) | (None, Some(_)) => {
                return Err(
                    "give both --mpi-world-rank-variable and --mpi-world-size-variable, or neither"
                        .into(),
                );
            }
            _ => {}
        }
        if let Some(r) = self.ranks_option(lookup) {
            parse_ranks(&r)?;
        }
        for lib in self.preloads(lookup) {
            if lib.contains('/') && !Path::new(&lib).exists() {
                return Err(format!(
                    "--preload: {lib} does not exist (give an existing path, or a bare library name the loader finds)"
                ));
            }
        }
        Ok(())
    }

    /// `--profile-mpi-ranks`, else `ROCPROF_MPI_RANKS`.
    fn ranks_option(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        self.profile_mpi_ranks
            .clone()
            .or_else(|| lookup("ROCPROF_MPI_RANKS").filter(|v| !v.trim().is_empty()))
    }

    /// The libraries to preload after the tool: `--preload`, else `ROCPROF_PRELOAD`.
    pub fn preloads(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        let given: Vec<String> = if self.preload.is_empty() {
            lookup("ROCPROF_PRELOAD").into_iter().collect()
        } else {
            self.preload.clone()
        };
        given
            .iter()
            .flat_map(|v| v.split([':', ' ']))
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// This process's MPI rank, from the named variables or the first detected pair.
    pub fn rank(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Option<MpiRank> {
        let named;
        let pairs: &[(&str, &str)] =
            match (&self.mpi_world_rank_variable, &self.mpi_world_size_variable) {
                (Some(r), Some(s)) => {
                    named = [(r.as_str(), s.as_str())];
                    &named
                }
                _ => &MPI_VARIABLES,
            };
        pairs.iter().find_map(|(r, s)| {
            let rank = lookup(r)?.trim().parse().ok()?;
            Some(MpiRank {
                rank,
                size: lookup(s).and_then(|v| v.trim().parse().ok()),
                variable: (*r).to_owned(),
            })
        })
    }

    /// Whether this process is profiled, with the warnings to print.
    pub fn decide(&self, lookup: &dyn Fn(&str) -> Option<String>) -> (RankDecision, Vec<String>) {
        let mut warnings = Vec::new();
        let Some(spec) = self.ranks_option(lookup) else {
            return (RankDecision::Profile, warnings);
        };
        let Ok(ranges) = parse_ranks(&spec) else {
            return (RankDecision::Profile, warnings);
        };
        let Some(rank) = self.rank(lookup) else {
            warnings.push(format!(
                "--profile-mpi-ranks {spec}: no MPI rank variable is set (not started by mpirun/srun? name it with --mpi-world-rank-variable); this process is profiled"
            ));
            return (RankDecision::Profile, warnings);
        };
        if let Some(size) = rank.size
            && ranges.iter().all(|&(a, _)| a >= size)
        {
            warnings.push(format!(
                "--profile-mpi-ranks {spec}: the job has {size} rank(s), so no rank is profiled"
            ));
        }
        let selected = ranges.iter().any(|&(a, b)| (a..=b).contains(&rank.rank));
        match selected {
            true => (RankDecision::Profile, warnings),
            false => (RankDecision::Unprofiled(rank), warnings),
        }
    }

    /// Notes about options that have nothing to change here (printed before the run).
    pub fn notes(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.disable_signal_handlers == Some(true) {
            v.push("--disable-signal-handlers: rocprof's tool installs no signal handlers in the application (its records survive a crash in the shared log mapping), so the application's own handlers are never replaced");
        }
        if self.process_sync == Some(true) {
            v.push("--process-sync: rocprof writes every process's outputs after the application exits, so they are always synchronised");
        }
        if self.suppress_marker_preload == Some(true) {
            v.push("--suppress-marker-preload: rocprof never preloads the ROCTx library (markers are traced through the table ROCTx registers)");
        }
        v
    }

    /// The application's path as `--readlink`/`--realpath` ask (`app` unchanged otherwise, or
    /// when it cannot be resolved).
    pub fn resolve_app(&self, app: &OsString) -> OsString {
        let p = Path::new(app);
        if self.realpath == Some(true) {
            return std::fs::canonicalize(p).map_or_else(|_| app.clone(), Into::into);
        }
        if self.readlink == Some(true) {
            return std::fs::read_link(p).map_or_else(
                |_| app.clone(),
                |t| match (t.is_relative(), p.parent()) {
                    (true, Some(dir)) => dir.join(t).into(),
                    _ => t.into(),
                },
            );
        }
        app.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashMap;

    #[derive(Parser)]
    struct P {
        #[command(flatten)]
        o: LaunchOptions,
    }

    fn parse(args: &[&str]) -> LaunchOptions {
        P::try_parse_from(std::iter::once("rocprof").chain(args.iter().copied()))
            .unwrap()
            .o
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn rank_lists_parse_like_rocprofv3s() {
        assert_eq!(parse_ranks("0-3,8").unwrap(), vec![(0, 3), (8, 8)]);
        assert_eq!(parse_ranks("[1, 2]").unwrap(), vec![(1, 1), (2, 2)]);
        assert!(parse_ranks("3-1").unwrap_err().contains("ends before"));
        assert!(parse_ranks("a").unwrap_err().contains("'a'"));
        assert!(parse_ranks(",").unwrap_err().contains("names no rank"));
    }

    #[test]
    fn ranks_come_from_the_named_or_the_detected_variables() {
        let o = parse(&["--profile-mpi-ranks", "0,2"]);
        let e = env(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "4")]);
        match o.decide(&e).0 {
            RankDecision::Unprofiled(r) => {
                assert_eq!((r.rank, r.size), (1, Some(4)));
                assert_eq!(r.variable, "OMPI_COMM_WORLD_RANK");
            }
            other => panic!("{other:?}"),
        }
        let e = env(&[("OMPI_COMM_WORLD_RANK", "2")]);
        assert_eq!(o.decide(&e).0, RankDecision::Profile);
        let named = parse(&[
            "--profile-mpi-ranks",
            "5",
            "--mpi-world-rank-variable",
            "MY_RANK",
            "--mpi-world-size-variable",
            "MY_SIZE",
        ]);
        let e = env(&[("MY_RANK", "5"), ("OMPI_COMM_WORLD_RANK", "0")]);
        assert_eq!(named.decide(&e).0, RankDecision::Profile);
        let (d, w) = o.decide(&env(&[]));
        assert_eq!(d, RankDecision::Profile);
        assert!(w[0].contains("no MPI rank variable"), "{w:?}");
        let from_env = parse(&[]);
        let e = env(&[("ROCPROF_MPI_RANKS", "3"), ("PMI_RANK", "0")]);
        assert!(matches!(from_env.decide(&e).0, RankDecision::Unprofiled(_)));
        let (_, w) = o.decide(&env(&[("PMI_RANK", "0"), ("PMI_SIZE", "0")]));
        assert!(w[0].contains("no rank is profiled"), "{w:?}");
    }

    #[test]
    fn refusals_say_why_before_anything_runs() {
        let none = env(&[]);
        let e = parse(&["-p", "1234"]).validate(&none).unwrap_err();
        assert!(
            e.contains("reference-count") && e.contains("rocprof [options] -- app"),
            "{e}"
        );
        assert!(parse(&["--attach", "1"]).validate(&none).is_err());
        let e = parse(&["--mpi-world-rank-variable", "R"])
            .validate(&none)
            .unwrap_err();
        assert!(e.contains("both"), "{e}");
        let e = parse(&["--preload", "/no/such/lib.so"])
            .validate(&none)
            .unwrap_err();
        assert!(e.contains("/no/such/lib.so"), "{e}");
        parse(&["--preload", "libm.so.6"]).validate(&none).unwrap();
        let e = parse(&["--benchmark-mode", "execution-profile"])
            .validate(&none)
            .unwrap_err();
        assert!(e.contains("cargo xtask bench"), "{e}");
        let e = parse(&["--attach-children"]).validate(&none).unwrap_err();
        assert!(e.contains("--pid"), "{e}");
    }

    #[test]
    fn preloads_split_on_colons_and_fall_back_to_the_variable() {
        let o = parse(&["--preload", "a.so:b.so", "c.so"]);
        assert_eq!(o.preloads(&env(&[])), vec!["a.so", "b.so", "c.so"]);
        let o = parse(&[]);
        assert_eq!(
            o.preloads(&env(&[("ROCPROF_PRELOAD", "x.so:y.so")])),
            vec!["x.so", "y.so"]
        );
    }
}
