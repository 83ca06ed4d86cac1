//! Thread trace (`--att…`), PC sampling (`--pc-sampling-…`) and SPM (`--spm…`) options, spelled
//! as rocprofv3 spells them, and what a run on WSL2 makes of them.
//!
//! - The ATT options are parsed and checked exactly (decimal or `0x` hex; aqlprofile's limits:
//!   a target CU of at most 15, a buffer that leaves every enabled shader engine at least
//!   128 KiB; the gfx9-only `--att-perfcounters`/`--att-perfcounter-ctrl`/`--att-activity` refused
//!   on the gfx11 GPUs WSL2 has, with the reason).
//! - Before the run the decoder library is searched for and loaded as rocprofv3 searches
//!   ([`plan`]); unlike rocprofv3 a missing or broken decoder does not stop the run (nor abort
//!   the application at its end): `rocprof` says so before it starts, and the raw `.att` and
//!   `.out` files are written undecoded.
//! - The tool saves each traced engine's data and each code object in the record directory's
//!   `att/`; after the run [`write_outputs`] gives them rocprofv3's names beside the other
//!   outputs and decodes every dispatch (one `parse_data` per engine) into rocprofv3's
//!   `ui_output_agent_<agent>_dispatch_<id>/` directories and stats CSV.
//! - PC sampling and SPM reach the GPU through KFD interfaces (`/dev/kfd` ioctls) that WSL2 does
//!   not expose: asking for either is refused before the run with that reason and the condition
//!   under which they work (native Linux with the amdgpu driver).

use rocprof_doctor::{PC_SAMPLING_UNAVAILABLE, SPM_UNAVAILABLE};
use rocprof_runner::plan::AttConfig;
use std::path::PathBuf;
use trace_records::env::parse_bool;

/// Parses an unsigned integer as rocprofv3 does: decimal or `0x` hex.
pub fn parse_int(v: &str) -> Result<u64, String> {
    let t = v.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("'{v}' is not an unsigned integer (decimal, or hex with 0x)"))
}

/// `--att-gpu-index "0,1"`: GPU indices, comma or space separated.
fn parse_gpu_list(v: &str) -> Result<Vec<u32>, String> {
    let list: Result<Vec<u32>, String> = v
        .split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| {
            parse_int(s).and_then(|n| u32::try_from(n).map_err(|_| format!("'{s}' is too large")))
        })
        .collect();
    match list {
        Ok(l) if l.is_empty() => Err(format!("'{v}' names no GPU index")),
        other => other,
    }
}

/// rocprofv3's thread-trace options.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct AttOptions {
    /// Advanced thread trace (SQTT) of the dispatches.
    #[arg(long = "att", visible_alias = "advanced-thread-trace", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL")]
    pub att: Option<bool>,
    /// The compute unit (WGP on gfx11) traced in detail, 0..=15 (default 1).
    #[arg(long = "att-target-cu", value_parser = parse_int, value_name = "N")]
    pub target_cu: Option<u64>,
    /// The shader engines traced, a bit mask (default 0x1).
    #[arg(long = "att-shader-engine-mask", value_parser = parse_int, value_name = "MASK")]
    pub shader_engine_mask: Option<u64>,
    /// The SIMD traced (a SIMD id on gfx10 and later; default 0xF).
    #[arg(long = "att-simd-select", value_parser = parse_int, value_name = "N")]
    pub simd_select: Option<u64>,
    /// The trace buffer's size in bytes, shared by the shader engines (default 0x10000000).
    #[arg(long = "att-buffer-size", value_parser = parse_int, value_name = "BYTES")]
    pub buffer_size: Option<u64>,
    /// The GPUs traced, as a comma list of indices (default all).
    #[arg(long = "att-gpu-index", value_parser = parse_gpu_list, value_name = "LIST")]
    pub gpu_index: Option<Vec<u32>>,
    /// Serialise every dispatch, not only the traced ones.
    #[arg(long = "att-serialize-all", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub serialize_all: Option<bool>,
    /// Directories searched (recursively) for librocprof-trace-decoder.so
    /// (else ROCPROF_ATT_LIBRARY_PATH, else LD_LIBRARY_PATH and <ROCm>/lib).
    #[arg(long = "att-library-path", num_args = 1.., value_name = "DIR")]
    pub library_path: Vec<PathBuf>,
    /// gfx9 only: SQ counters in the trace ("NAME[:simdmask] …").
    #[arg(long = "att-perfcounters", value_name = "COUNTERS")]
    pub perfcounters: Option<String>,
    /// gfx9 only: the counter sampling period, 1..=32.
    #[arg(long = "att-perfcounter-ctrl", value_parser = parse_int, value_name = "N")]
    pub perfcounter_ctrl: Option<u64>,
    /// gfx9 only: the activity counters at a sampling period of 1..=16.
    #[arg(long = "att-activity", value_parser = parse_int, value_name = "N")]
    pub activity: Option<u64>,
    /// gfx9 only: the SQ counters of the target CU only.
    #[arg(long = "att-perfcounter-target-only", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub perfcounter_target_only: Option<bool>,
    /// Trace N consecutive dispatches in one capture (refused: each traced dispatch has its
    /// own capture here).
    #[arg(long = "att-consecutive-kernels", value_parser = parse_int, value_name = "N")]
    pub consecutive_kernels: Option<u64>,
    /// Where the decoder's code objects come from: `code-object` (the default), `hsa` or
    /// `default`; rocprof always reads them through the HSA loader extension.
    #[arg(long = "att-resource-mode", value_parser = ["default", "hsa", "code-object"])]
    pub resource_mode: Option<String>,
    /// Do not intercept code-object loads (refused: the decoder needs the code objects).
    #[arg(long = "att-no-intercept", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub no_intercept: Option<bool>,
    /// Trace no compute unit in detail (refused: see the message).
    #[arg(long = "att-no-detail", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub no_detail: Option<bool>,
}

/// rocprofv3's PC-sampling and SPM options (accepted, refused on WSL2).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct SamplingOptions {
    /// PC sampling (beta in rocprofv3).
    #[arg(long = "pc-sampling-beta-enabled", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub pc_sampling_beta_enabled: Option<bool>,
    /// PC sampling unit.
    #[arg(long = "pc-sampling-unit", value_parser = ["instructions", "cycles", "time"])]
    pub pc_sampling_unit: Option<String>,
    /// PC sampling method.
    #[arg(long = "pc-sampling-method", value_parser = ["stochastic", "host_trap"])]
    pub pc_sampling_method: Option<String>,
    /// PC sampling interval (> 0).
    #[arg(long = "pc-sampling-interval", value_parser = parse_int, value_name = "N")]
    pub pc_sampling_interval: Option<u64>,
    /// SPM (streaming performance monitors; beta in rocprofv3).
    #[arg(long = "spm-beta-enabled", num_args = 0..=1, default_missing_value = "true",
          value_parser = parse_bool, value_name = "BOOL")]
    pub spm_beta_enabled: Option<bool>,
    /// SPM counters.
    #[arg(long = "spm", num_args = 1.., value_name = "COUNTER")]
    pub spm: Vec<String>,
    /// SPM sampling interval.
    #[arg(long = "spm-sample-interval", value_parser = parse_int, value_name = "N")]
    pub spm_sample_interval: Option<u64>,
    /// SPM sampling interval unit.
    #[arg(long = "spm-sample-interval-unit", value_parser = ["sclk_cycles"])]
    pub spm_sample_interval_unit: Option<String>,
}

impl AttOptions {
    /// Whether any thread-trace option other than `--att` was given.
    pub fn any(&self) -> bool {
        self.target_cu.is_some()
            || self.shader_engine_mask.is_some()
            || self.simd_select.is_some()
            || self.buffer_size.is_some()
            || self.gpu_index.is_some()
            || self.serialize_all.is_some()
            || !self.library_path.is_empty()
            || self.perfcounters.is_some()
            || self.perfcounter_ctrl.is_some()
            || self.activity.is_some()
            || self.perfcounter_target_only.is_some()
            || self.consecutive_kernels.is_some()
            || self.resource_mode.is_some()
            || self.no_intercept.is_some()
            || self.no_detail.is_some()
    }

    /// The checked request; `Ok(None)` without `--att`. `counting`: whether `--pmc` is given.
    pub fn config(&self, counting: bool) -> Result<Option<AttConfig>, String> {
        let gfx9_only = [
            ("--att-perfcounters", self.perfcounters.is_some()),
            ("--att-perfcounter-ctrl", self.perfcounter_ctrl.is_some()),
            ("--att-activity", self.activity.is_some()),
            (
                "--att-perfcounter-target-only",
                self.perfcounter_target_only == Some(true),
            ),
        ];
        if let Some((name, _)) = gfx9_only.iter().find(|(_, given)| *given) {
            let with_pmc = if counting {
                " (rocprofv3 also refuses it together with --pmc)"
            } else {
                ""
            };
            return Err(format!(
                "{name} is for gfx9 GPUs only: on gfx10 and later (every GPU WSL2 reaches is gfx11) the thread trace carries no SQ counters{with_pmc}; collect counters with --pmc instead"
            ));
        }
        if let Some(n) = self.consecutive_kernels.filter(|&n| n > 1) {
            return Err(format!(
                "--att-consecutive-kernels {n}: rocprof gives every traced dispatch its own capture (its own buffer and decoded output); select the dispatches with --kernel-include-regex or --kernel-iteration-range instead"
            ));
        }
        if self.no_intercept == Some(true) {
            return Err("--att-no-intercept: without the code objects the decoder cannot name a single instruction, and rocprof reads them through the HSA loader when the trace ends, not by intercepting loads; leave the option out".into());
        }
        if self.no_detail == Some(true) {
            return Err("--att-no-detail: on gfx11 the thread trace's instruction tokens come only from the target compute unit; a trace without it holds no instructions. Choose the unit with --att-target-cu".into());
        }
        if self.att != Some(true) {
            return Ok(None);
        }
        let target_cu = self.target_cu.unwrap_or(1);
        if target_cu > 15 {
            return Err(format!(
                "--att-target-cu {target_cu}: the target compute unit must be 0..=15"
            ));
        }
        let mask = self.shader_engine_mask.unwrap_or(0x1);
        if mask == 0 {
            return Err(
                "--att-shader-engine-mask 0 traces no shader engine; give a non-zero mask".into(),
            );
        }
        let simd = self.simd_select.unwrap_or(0xF);
        if simd > 0xF {
            return Err(format!(
                "--att-simd-select {simd:#x}: the value must be 0..=0xF"
            ));
        }
        let buffer = self.buffer_size.unwrap_or(0x1000_0000);
        // aqlprofile splits the buffer: disabled shader engines get 4 KiB each (of 64 slots),
        // enabled ones share the rest, which must leave each at least 128 KiB.
        let enabled = u64::from(mask.count_ones());
        let per_se = buffer
            .saturating_sub((64 - enabled.min(64)) * 4096)
            .checked_div(enabled)
            .unwrap_or(0)
            & !0xFFF;
        if per_se < 128 << 10 {
            return Err(format!(
                "--att-buffer-size {buffer:#x}: split over {enabled} shader engine(s) that leaves {per_se} bytes each, below the 128 KiB minimum; give at least {:#x}",
                (64 - enabled.min(64)) * 4096 + enabled * (128 << 10)
            ));
        }
        if per_se >= 512 << 20 {
            return Err(format!(
                "--att-buffer-size {buffer:#x}: gfx11 takes less than 512 MiB per shader engine"
            ));
        }
        Ok(Some(AttConfig {
            target_cu: target_cu as u32,
            shader_engine_mask: mask,
            simd_select: simd as u32,
            buffer_size: buffer,
            gpu_index: self.gpu_index.clone(),
            serialize_all: self.serialize_all.unwrap_or(false),
            library_path: self.library_path.clone(),
        }))
    }
}

impl SamplingOptions {
    /// Refuses PC sampling and SPM (see the module text); `Ok` when neither is asked for.
    pub fn refuse_on_wsl(&self) -> Result<(), String> {
        let pc = self.pc_sampling_beta_enabled.is_some()
            || self.pc_sampling_unit.is_some()
            || self.pc_sampling_method.is_some()
            || self.pc_sampling_interval.is_some();
        if pc {
            return Err(format!("--pc-sampling-*: {PC_SAMPLING_UNAVAILABLE}"));
        }
        let spm = self.spm_beta_enabled.is_some()
            || !self.spm.is_empty()
            || self.spm_sample_interval.is_some()
            || self.spm_sample_interval_unit.is_some();
        if spm {
            return Err(format!("--spm*: {SPM_UNAVAILABLE}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn att() -> AttOptions {
        AttOptions {
            att: Some(true),
            ..Default::default()
        }
    }

    #[test]
    fn integers_read_as_rocprofv3_reads_them() {
        assert_eq!(parse_int("0x10000000"), Ok(0x1000_0000));
        assert_eq!(parse_int("15"), Ok(15));
        assert_eq!(parse_int("0XF"), Ok(15));
        assert!(parse_int("-1").unwrap_err().contains("unsigned"));
        assert!(parse_int("0x").is_err());
        assert_eq!(parse_gpu_list("0,1"), Ok(vec![0, 1]));
        assert!(parse_gpu_list(",").is_err());
    }

    #[test]
    fn defaults_are_rocprofv3s() {
        let c = att().config(false).unwrap().unwrap();
        assert_eq!(
            (
                c.target_cu,
                c.shader_engine_mask,
                c.simd_select,
                c.buffer_size
            ),
            (1, 1, 0xF, 0x1000_0000)
        );
        assert!(!c.serialize_all);
        assert_eq!(AttOptions::default().config(false), Ok(None));
    }

    #[test]
    fn limits_are_aqlprofiles() {
        let mut o = att();
        o.target_cu = Some(16);
        assert!(o.config(false).unwrap_err().contains("0..=15"));
        let mut o = att();
        o.buffer_size = Some(64 << 10);
        let e = o.config(false).unwrap_err();
        assert!(e.contains("128 KiB") && e.contains("0x5f000"), "{e}");
        o.buffer_size = Some(0x5_f000);
        assert!(o.config(false).is_ok());
        let mut o = att();
        o.shader_engine_mask = Some(0);
        assert!(o.config(false).is_err());
    }

    #[test]
    fn gfx9_options_are_refused_with_the_reason() {
        let mut o = att();
        o.activity = Some(4);
        let e = o.config(true).unwrap_err();
        assert!(e.contains("gfx9") && e.contains("--pmc"), "{e}");
        let o = AttOptions {
            target_cu: Some(2),
            ..Default::default()
        };
        assert_eq!(
            o.config(false),
            Ok(None),
            "ignored (with a warning) without --att"
        );
        assert!(o.any());
    }

    #[test]
    fn pc_sampling_and_spm_are_refused_naming_kfd() {
        assert!(SamplingOptions::default().refuse_on_wsl().is_ok());
        let s = SamplingOptions {
            pc_sampling_method: Some("host_trap".into()),
            ..Default::default()
        };
        let e = s.refuse_on_wsl().unwrap_err();
        assert!(e.contains("/dev/kfd") && e.contains("native Linux"), "{e}");
        let s = SamplingOptions {
            spm: vec!["GRBM_COUNT".into()],
            ..Default::default()
        };
        assert!(s.refuse_on_wsl().unwrap_err().starts_with("--spm*"));
    }
}
