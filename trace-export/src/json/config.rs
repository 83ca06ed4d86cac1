//! `metadata.config`: the run's output configuration, as upstream's JSON writer writes it (its
//! `output_config`'s serialization: the output location expanded and raw, the Perfetto
//! settings, the summary settings, one flag per output format, kernel renaming and queue
//! grouping, in that order and under those names).
//!
//! The writer does not know the run's options; the caller (the runner) fills this in from its
//! settings and hands it over in [`JsonOptions`].

use serde::Serialize;

/// `metadata.config`, upstream's keys in upstream's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OutputConfig {
    /// The output directory, placeholders expanded.
    pub output_path: String,
    /// The output file prefix, placeholders expanded.
    pub output_file: String,
    /// The directory of temporary files, placeholders expanded.
    pub tmp_directory: String,
    /// The output directory as given.
    pub raw_output_path: String,
    /// The output file prefix as given.
    pub raw_output_file: String,
    /// The directory of temporary files as given.
    pub raw_tmp_directory: String,
    /// `--perfetto-shmem-size-hint`, KB.
    pub perfetto_shmem_size_hint: u64,
    /// `--perfetto-buffer-size`, KB.
    pub perfetto_buffer_size: u64,
    /// `--perfetto-buffer-fill-policy` (`discard`, `ring_buffer`).
    pub perfetto_buffer_fill_policy: String,
    /// `--perfetto-backend` (`inprocess`, `system`).
    pub perfetto_backend: String,
    /// `-S/--summary`.
    pub summary: bool,
    /// `-D/--summary-per-domain`.
    pub summary_per_domain: bool,
    /// `--summary-groups`.
    pub summary_groups: Vec<String>,
    /// `-u/--summary-units` (`sec`, `msec`, `usec`, `nsec`).
    pub summary_unit: String,
    /// `--summary-output-file` (`stderr` when not given).
    pub summary_file: String,
    /// `-f csv`.
    pub csv_output: bool,
    /// `-f json`.
    pub json_output: bool,
    /// `-f pftrace`.
    pub pftrace_output: bool,
    /// `-f otf2`.
    pub otf2_output: bool,
    /// Whether a summary is made: `-S`, `-D` or any `--summary-groups`.
    pub summary_output: bool,
    /// `-f rocpd`.
    pub rocpd_output: bool,
    /// `--kernel-rename`.
    pub kernel_rename: bool,
    /// `--group-by-queue`.
    pub group_by_queue: bool,
}

/// What the JSON writer is told about the run besides its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// `metadata.config` (left out when `None`). One file of several processes gives each the
    /// same configuration, that of the file.
    pub config: Option<OutputConfig>,
    /// Whether the `summary` section holds the statistics: as upstream, when `--stats` or a
    /// summary (`-S`, `-D`, `--summary-groups`) was asked for; otherwise it is empty.
    pub summary: bool,
}
