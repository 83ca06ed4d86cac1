//! What the placeholders of a run expand to, fixed when it starts (kept in `run.json`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the placeholders of a run expand to, apart from process ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The `rocprof` process (the `%ppid%` of a process whose parent is unknown).
    pub rocprof_pid: u32,
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
    /// The environment variables the placeholders read (`%env{NAME}%`, `%job%`, `%rank%`), as
    /// they were at the launch (`None`: unset).
    pub env: BTreeMap<String, Option<String>>,
    /// `rocprof`'s process group (`%pgid%`: the application is started in it).
    #[serde(default)]
    pub pgid: u32,
    /// `rocprof`'s session (`%psid%`: the application is started in it).
    #[serde(default)]
    pub psid: u32,
}

/// The variables behind `%job%` and `%rank%`.
pub(crate) const SLURM: [&str; 2] = ["SLURM_JOB_ID", "SLURM_PROCID"];
/// The variables behind `%rank%` and `%size%`, in the order they are tried: Open MPI, MPICH and
/// Intel MPI (PMI), Slurm, MVAPICH2.
pub(crate) const RANK_SIZE: [(&str, &str); 4] = [
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
];

impl Launch {
    /// Records the environment variables `templates` name (and SLURM's), as they are now.
    pub fn capture_env(&mut self, templates: &[&str]) {
        let mut names: Vec<String> = SLURM.iter().map(|s| (*s).to_owned()).collect();
        names.extend(
            RANK_SIZE
                .iter()
                .flat_map(|(r, s)| [(*r).to_owned(), (*s).to_owned()]),
        );
        for t in templates {
            let mut rest = *t;
            while let Some(i) = rest.find("env{") {
                rest = &rest[i + 4..];
                if let Some(end) = rest.find('}') {
                    names.push(rest[..end].to_owned());
                    rest = &rest[end..];
                }
            }
        }
        for name in names {
            let value = std::env::var(&name).ok();
            self.env.insert(name, value);
        }
    }

    pub(crate) fn env_var(&self, name: &str) -> Option<String> {
        match self.env.get(name) {
            Some(v) => v.clone(),
            None => std::env::var(name).ok(),
        }
    }

    /// The MPI rank and world size the launcher set (the first launcher whose rank variable
    /// is set), `None` outside MPI.
    pub fn rank_and_size(&self) -> Option<(String, String)> {
        RANK_SIZE.iter().find_map(|(r, s)| {
            let rank = self.env_var(r).filter(|v| !v.is_empty())?;
            Some((rank, self.env_var(s).unwrap_or_else(|| "1".into())))
        })
    }
}
