//! Every message the run, convert and output paths print, in one place (docs/troubleshooting.md
//! lists them with their causes and fixes). Each says what happened and what to do.
//!
//! Lines are printed with a `rocprof: ` prefix (warnings `rocprof: warning: `, errors that end
//! `rocprof` before anything runs `rocprof: error: `, exit code 2).

use crate::process::signal_name;
use std::io;
use std::path::Path;

/// Shell-quotes `s` when it needs it (for commands to copy and paste).
pub fn quoted(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that converts `dir` (the `rocprof` this is, by the name it was started with).
pub fn convert_command(dir: &Path) -> String {
    let exe = std::env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rocprof".into());
    format!(
        "{} convert {}",
        quoted(&exe),
        quoted(&dir.to_string_lossy())
    )
}

/// Why an I/O operation failed, in words ("no space left on the file system" first, since
/// that is what a full disk needs to say).
pub fn io_reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "no space left on the file system".into(),
        Some(libc::EDQUOT) => "no space left: the disk quota is exhausted".into(),
        Some(libc::EFBIG) => {
            "no space for a file this large: the file-size limit (ulimit -f) was reached".into()
        }
        Some(libc::EROFS) => "the file system is read-only".into(),
        _ => e.to_string(),
    }
}

/// Whether `e` means the disk (or a quota, or the file-size limit) is full.
pub fn is_no_space(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG)
    )
}

// ---- before the launch (errors end rocprof with exit code 2) ----

/// `rocprof [options]` without an application.
pub fn nothing_to_run() -> String {
    "nothing to run: give the application after `--`, e.g. `rocprof --sys-trace -- ./app`".into()
}

/// `--stats`/`-S` without any tracing option.
pub fn stats_without_tracing() -> String {
    "--stats and --summary need a tracing option (e.g. --sys-trace or --kernel-trace)".into()
}

/// `-f json` and friends.
pub fn format_not_supported(f: &str) -> String {
    format!(
        "--output-format {f} is not supported yet by this rocprof; use csv, json, pftrace or rocpd"
    )
}

/// `-f xml`.
pub fn format_unknown(f: &str) -> String {
    format!(
        "unknown --output-format '{f}' (expected csv, json, pftrace or rocpd){}",
        if Path::new(f).is_dir() {
            "; it looks like a record directory: put the directories before the options (`rocprof convert DIR… -f csv`)"
        } else {
            ""
        }
    )
}

/// A kernel filter without a pattern.
pub fn regex_empty(which: &str) -> String {
    format!("--kernel-{which}-regex needs a pattern")
}

/// A kernel filter that does not compile.
pub fn regex_invalid(which: &str, re: &str, e: &dyn std::fmt::Display) -> String {
    format!("--kernel-{which}-regex '{re}' is not a valid regular expression: {e}")
}

/// A malformed `ROCPROF_HSAKMT_LAYOUT`.
pub fn layout_malformed(value: &str) -> String {
    format!(
        "{}='{value}' is not a layout this build knows: set it to one of 368, 376, 392, 396, or unset it to let rocprof probe the thunk (`rocprof avail` shows the probe)",
        wsl_topology::settings::ENV_LAYOUT
    )
}

/// A placeholder's value takes `-o` out of `-d`.
pub fn path_escapes(template: &str, expanded: &str, directory: &Path) -> String {
    format!(
        "-o '{template}' expands to '{expanded}', which a placeholder's value takes out of the output directory {}: use a placeholder without '/' or '..' in its value (e.g. %tag% or %argt%), or write the path literally",
        directory.display()
    )
}

/// A path component longer than a file name may be.
pub fn name_too_long(name: &str) -> String {
    format!(
        "the output name '{name}' would be {} bytes long, more than the 255 a file name may have: shorten -d/-o",
        name.len()
    )
}

/// A path longer than the system accepts.
pub fn path_too_long(path: &Path) -> String {
    format!(
        "the output path {} would be longer than the 4095 bytes a path may have: shorten -d/-o",
        path.display()
    )
}

/// Something on the output path is a file.
pub fn not_a_directory(path: &Path) -> String {
    format!(
        "{} is not a directory, so no output can be written under it: choose another -d/-o, or move it away",
        path.display()
    )
}

/// The output directory cannot be written.
pub fn not_writable(path: &Path, reason: &str) -> String {
    format!(
        "cannot create the output files under {}: {reason}; choose a writable -d, or fix the directory",
        path.display()
    )
}

/// The private record directory cannot be created.
pub fn record_dir_create_failed(parent: &Path, e: &io::Error) -> String {
    format!(
        "cannot create a private record directory in {}: {}; point TMPDIR at a writable directory",
        parent.display(),
        io_reason(e)
    )
}

/// `run.json` cannot be written at the start of a run.
pub fn manifest_write_failed(dir: &Path, e: &io::Error) -> String {
    format!(
        "cannot write {}/run.json: {}; point TMPDIR at a writable directory with free space",
        dir.display(),
        io_reason(e)
    )
}

/// The signal handlers cannot be installed (before anything runs).
pub fn signals_unavailable(e: &io::Error) -> String {
    format!("cannot install the signal handlers: {e}; nothing was started")
}

/// A signal arrived before the application was started.
pub fn interrupted_before_launch(signal: i32) -> String {
    format!(
        "interrupted by {} before the application started: nothing ran",
        signal_name(signal)
    )
}

// ---- the launch ----

/// The application does not exist (exit code 127).
pub fn app_not_found(app: &str) -> String {
    format!(
        "cannot run {app}: no such file; check the name (a program without '/' is looked up on PATH)"
    )
}

/// The application cannot be executed (exit code 126).
pub fn app_not_executable(app: &str, e: &io::Error) -> String {
    format!(
        "cannot run {app}: {e}; it must be an executable file (chmod +x it, or run it through its interpreter)"
    )
}

/// No tracing option: the run records nothing.
pub fn no_tracing_option() -> String {
    "no tracing option given; the application runs with the profiler loaded but nothing is recorded (try --sys-trace)".into()
}

// ---- merging (`rocprof convert -i`, `rocprof merge`) ----

/// An input that is neither a record directory nor a database.
pub fn merge_input_unknown(path: &Path) -> String {
    format!(
        "{}: neither a record directory (one a run kept) nor a rocpd database (.db)",
        path.display()
    )
}

/// Inputs without any process.
pub fn merge_nothing() -> String {
    "the inputs hold no process records".into()
}

/// Two merged processes with one pid (from different machines or runs).
pub fn merge_same_pid(pid: u32) -> String {
    format!(
        "several inputs hold a process {pid} (other machines or runs); each stays a process of its own"
    )
}

/// `rocprof convert DIR -i …`.
pub fn merge_with_dirs() -> String {
    "give the inputs of a merge after -i only (`rocprof convert -i A B …`), or convert kept directories without -i".into()
}

/// After a merge.
pub fn merge_summary(
    inputs: usize,
    processes: usize,
    files: usize,
    first: Option<&std::path::PathBuf>,
) -> String {
    let place = first
        .and_then(|f| f.parent())
        .map(|d| format!(" in {}", d.display()))
        .unwrap_or_default();
    format!("merged {inputs} input(s), {processes} process(es); {files} file(s) written{place}")
}

// ---- hardware counters ----

/// `-i` together with `--pmc`.
pub fn input_with_pmc() -> String {
    "-i/--input and --pmc both name counters; put the counters in the input file (pmc: lines or a job's pmc), or drop -i".into()
}

/// An input file that cannot be used.
pub fn input_refused(e: &crate::input::InputError) -> String {
    format!("cannot use the input file: {e}")
}

/// `WSLKMT_VENDOR_PACKET` set to something other than 1 for a counter run.
pub fn vendor_packet_gate(value: &str) -> String {
    format!(
        "WSLKMT_VENDOR_PACKET={value}: the DXG thunk drops vendor (PM4) packets unless it is 1, \
         so every counter will read 0; unset it (rocprof then sets 1) or set WSLKMT_VENDOR_PACKET=1"
    )
}

/// A `--pmc-repeat` run that did not end well.
pub fn repeat_run_failed(run: u32, status: &crate::process::Status, dir: &Path) -> String {
    format!(
        "counter run {run} of --pmc-repeat {} (its records in {} are discarded); repeated \
         runs must behave alike, so nothing is estimated",
        status.describe(),
        dir.display()
    )
}

/// Counted dispatches that ran alongside kernels of the application's other queues.
pub fn counted_overlaps(ids: &[u64]) -> String {
    let shown: Vec<String> = ids.iter().take(8).map(u64::to_string).collect();
    let more = if ids.len() > 8 { ", …" } else { "" };
    format!(
        "{} counted dispatch(es) ran while a kernel of another queue of the application was \
         running (dispatch ids {}{more}); counters count for the whole GPU, so their values \
         include that kernel's work (run the queues one after another to count them apart)",
        ids.len(),
        shown.join(", ")
    )
}

/// GRBM counters read 0 on dispatches that ran.
pub fn grbm_burst_advice() -> String {
    "GRBM counters read 0 on dispatches that ran, as they do at the start of a GPU session on \
     WSL2 (bursts of up to ~300 ms): those dispatches' GRBM-based values (GRBM_*, GPU_UTIL, \
     occupancy …) are left out of counter_collection.csv and marked in counter_hygiene.csv; \
     --pmc-discard-warmup 300 discards the opening window explicitly"
        .into()
}

/// Every counter read 0 on dispatches that ran.
pub fn counters_all_zero(gate: Option<&str>) -> String {
    let why = match gate {
        Some(v) => format!(
            "WSLKMT_VENDOR_PACKET was {v} in the application's environment, so the DXG thunk \
             dropped the counter packets without an error"
        ),
        None => "the counter packets did not reach the GPU: the DXG thunk honours vendor (PM4) \
                 packets only if WSLKMT_VENDOR_PACKET=1 when it loads"
            .into(),
    };
    format!(
        "every hardware counter read 0 on dispatches that ran: {why}. No counter values are \
         written (they would all be 0); run again with WSLKMT_VENDOR_PACKET=1 (or unset)"
    )
}

// ---- reading the record directory ----

/// An entry named like a log that is not a regular file.
pub fn skipped_entry(path: &Path, kind: &str) -> String {
    format!(
        "{} is named like a record log but is {kind}: skipped (only regular files inside the record directory are read)",
        path.display()
    )
}

/// A log that cannot be read at all.
pub fn log_unreadable(e: &dyn std::fmt::Display) -> String {
    format!("{e}; that process's records are lost")
}

/// A damaged chunk in a log.
pub fn log_damaged(log: &Path, offset: u64, reason: &dyn std::fmt::Display) -> String {
    format!(
        "{}: the record log is damaged at byte {offset} ({reason}); that chunk was skipped, everything else is kept",
        log.display()
    )
}

/// Two processes would write the same names.
pub fn shared_output_name(name: &Path, pid: u32, instead: &Path) -> String {
    format!(
        "several processes share the output name {}; process {pid} writes to {}",
        name.display(),
        instead.display()
    )
}

/// A convert of a directory that is not a kept record directory.
pub fn not_a_record_dir(path: &Path, why: &str) -> String {
    format!(
        "{} is not a record directory that rocprof kept ({why}): give a directory named in a `rocprof convert` command rocprof printed",
        path.display()
    )
}

/// A convert of a directory that a running rocprof holds.
pub fn record_dir_in_use(path: &Path, pid: u32) -> String {
    format!(
        "{} is in use by another rocprof (the run was started by pid {pid}; it may still be running, or converting it): wait for it to finish, then convert again",
        path.display()
    )
}

// ---- writing the outputs ----

/// An output file could not be written.
pub fn write_failed(file: &Path, e: &io::Error) -> String {
    if is_no_space(e) {
        format!(
            "cannot write {}: {}; nothing of this process's outputs was left half-written. Free space there (or choose another -d), then finish with the convert command below",
            file.display(),
            io_reason(e)
        )
    } else {
        format!(
            "cannot write {}: {}; fix the cause, then finish with the convert command below",
            file.display(),
            io_reason(e)
        )
    }
}

/// A signal stopped the conversion.
pub fn interrupted_conversion(signal: i32) -> String {
    format!(
        "interrupted by {} while writing the outputs: stopped; no partial file was left, the files already in place are whole",
        signal_name(signal)
    )
}

/// Another run replaced a file this run wrote.
pub fn replaced_by_other(path: &Path) -> String {
    format!(
        "{} was replaced by another run after this one wrote it: the file there now is not this run's (give concurrent runs different -d/-o, e.g. with %pid%)",
        path.display()
    )
}

/// This run replaced a file another run wrote while it ran.
pub fn replaced_other(path: &Path) -> String {
    format!(
        "this run replaced {}, which another run wrote after this one started (give concurrent runs different -d/-o, e.g. with %pid%)",
        path.display()
    )
}

// ---- the end ----

/// The record directory is kept so the job can be finished.
pub fn kept_to_finish(dir: &Path) -> String {
    format!(
        "the record logs are kept in {}; finish the job with:\n  {}",
        dir.display(),
        convert_command(dir)
    )
}

/// The record directory is kept because records were lost or a log is damaged.
pub fn kept_after_losses(dir: &Path) -> String {
    format!(
        "the record logs are kept in {} because some records were lost or could not be read (see above); convert them again with:\n  {}\nor remove them with: rm -r {}",
        dir.display(),
        convert_command(dir),
        quoted(&dir.to_string_lossy())
    )
}

/// The record directory of a finished job cannot be removed.
pub fn remove_failed(dir: &Path, e: &io::Error) -> String {
    format!(
        "cannot remove the record directory {}: {e}; the outputs are complete, remove it with: rm -r {}",
        dir.display(),
        quoted(&dir.to_string_lossy())
    )
}

/// The summary line of a run.
pub fn run_summary(
    status: &crate::process::Status,
    processes: usize,
    files: usize,
    dirs: &[&Path],
) -> String {
    format!(
        "the application {}; {processes} process(es) recorded, {files} file(s) written{}",
        status.describe(),
        in_dirs(dirs)
    )
}

/// ` in D`, ` in D1 and D2`, ` in D1, D2 and N more` (nothing for no directory).
fn in_dirs(dirs: &[&Path]) -> String {
    let shown: Vec<String> = dirs
        .iter()
        .take(2)
        .map(|d| d.display().to_string())
        .collect();
    match dirs.len() {
        0 => String::new(),
        1 => format!(" in {}", shown[0]),
        2 => format!(" in {} and {}", shown[0], shown[1]),
        n => format!(" in {}, {} and {} more", shown[0], shown[1], n - 2),
    }
}

/// The summary line of a conversion.
pub fn convert_summary(
    record_dir: &Path,
    processes: usize,
    files: usize,
    dirs: &[&Path],
) -> String {
    format!(
        "converted {}: {processes} process(es), {files} file(s) written{}",
        record_dir.display(),
        in_dirs(dirs)
    )
}

// ---- --sim ----

/// The simulated libdxcore cannot say whether its scenario is usable.
pub fn sim_diagnostic_unavailable(lib: &Path, why: &str) -> String {
    format!(
        "cannot ask the simulated {} whether its scenario is usable ({why}): rebuild the simulator with `cargo xtask build`",
        lib.display()
    )
}

/// `rocprof convert` without directories found none.
pub fn nothing_kept(tmp: &Path) -> String {
    format!(
        "no record directory is kept in {} (a run that finished cleanly removes its own)",
        tmp.display()
    )
}

/// `--replay-mode kernel` / `--kernel-replay-beta-enabled`.
pub fn kernel_replay_refused() -> String {
    "kernel replay (--replay-mode kernel, --kernel-replay-beta-enabled) is not available: replaying a kernel means saving and restoring every buffer it writes between replays, which rocprof does not do; several --pmc groups are collected by running the application once per group (application replay, the default), or give --pmc-repeat for repeated runs".into()
}

/// `--minimum-output-data`: the files left out, with their sizes.
pub fn below_minimum_output(minimum: u64, files: &[(std::path::PathBuf, u64)]) -> String {
    let list: Vec<String> = files
        .iter()
        .map(|(p, n)| format!("{} ({n} B)", p.display()))
        .collect();
    format!(
        "--minimum-output-data {} KB: {} file(s) smaller than {minimum} bytes not written: {}",
        minimum / 1024,
        files.len(),
        list.join(", ")
    )
}

/// `--perfetto-buffer-size`: what did not fit a trace.
pub fn perfetto_buffer_full(
    path: &Path,
    w: &trace_export::perfetto::Written,
    o: &trace_export::perfetto::Options,
) -> String {
    let which = match o.fill_policy {
        trace_export::perfetto::FillPolicy::Discard => "the latest",
        trace_export::perfetto::FillPolicy::RingBuffer => "the earliest",
    };
    format!(
        "{}: the trace holds at most --perfetto-buffer-size {} KB of events, so {which} {} events were left out ({} slices, {} counter values; {} bytes written of {} at full size); give a larger --perfetto-buffer-size (up to 4194303) to keep them",
        path.display(),
        o.buffer_bytes.unwrap_or(0) / 1024,
        w.dropped_events,
        w.dropped_slices,
        w.dropped_counters,
        w.bytes,
        w.full_bytes
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_quoted_for_the_shell() {
        assert_eq!(quoted("/tmp/rocprof-0a1b"), "/tmp/rocprof-0a1b");
        assert_eq!(quoted("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted(""), "''");
        assert!(convert_command(Path::new("/t/x y")).ends_with(" convert '/t/x y'"));
    }

    #[test]
    fn a_full_disk_is_called_that() {
        let e = io::Error::from_raw_os_error(libc::ENOSPC);
        let m = write_failed(Path::new("/o/run_kernel_trace.csv"), &e);
        assert!(
            m.contains("/o/run_kernel_trace.csv") && m.contains("no space"),
            "{m}"
        );
        assert!(is_no_space(&io::Error::from_raw_os_error(libc::EFBIG)));
        assert!(!is_no_space(&io::Error::from_raw_os_error(libc::EACCES)));
    }
}
