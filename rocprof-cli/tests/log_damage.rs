//! Issue 23, cases 6–10, end to end on the simulated 890M: strings cut to fit the log are
//! said, a log cut at a chunk boundary or with a chunk repeated is damage with its count, a
//! huge side file of the record directory is read in bounded memory, loss counters of all ones
//! are a damaged header, and garbled documents never become a runtime diagnosis.
//!
//! The logs are taken from a real run (the application is a shell that runs the workload,
//! then copies the record directory aside) and mutated at the format's offsets
//! (`trace_records::log`'s constants).
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;
use support::*;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use trace_records::log::{
    CHUNK_HEADER_LEN, CHUNK_MAGIC, CHUNK_SIZE as CHUNK, COMMIT_AT, CRC_AT, HEADER_LEN as HEADER,
    HeaderCounter, LOSSES_AT, SEAL_AT, SEALED,
};
use trace_records::loss::LossCause;

fn scratch_here(tag: &str) -> PathBuf {
    scratch("damage", tag)
}

/// Runs `rocprof --sim <options> -- sh -c '<app> "$@"; cp -r "$ROCPROF_RECORD_DIR" <kept>'`
/// and returns the copy of the record directory (a complete one: the application had exited)
/// and the run's output.
fn kept_run(tmp: &Path, options: &[&str], app: &[&str]) -> (PathBuf, Output) {
    let kept = tmp.join("kept");
    let script = format!(
        "\"$@\" && cp -r \"$ROCPROF_RECORD_DIR\" '{}'",
        kept.display()
    );
    let o = rocprof(tmp)
        .arg("--sim")
        .args(options)
        .arg("-d")
        .arg(tmp.join("out"))
        .args(["-o", "run", "--", "sh", "-c", &script, "sh"])
        .args(app)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(kept.join("run.json").exists(), "{}", stderr(&o));
    (kept, o)
}

fn reference(tmp: &Path) -> PathBuf {
    let app = workload("reference-workload");
    kept_run(tmp, &["--sys-trace"], &[app.to_str().unwrap()]).0
}

/// The one record log of a kept directory.
fn the_log(dir: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rplog"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// `rocprof convert <dir> -d <out>`.
fn convert(tmp: &Path, dir: &Path, out: &Path) -> Output {
    rocprof(tmp)
        .arg("convert")
        .arg(dir)
        .arg("-d")
        .arg(out)
        .output()
        .unwrap()
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Chunks that hold entries: (offset, payload bytes used).
fn used_chunks(b: &[u8]) -> Vec<(usize, usize)> {
    (HEADER..b.len().saturating_sub(CHUNK - 1))
        .step_by(CHUNK)
        .filter(|&at| word(b, at) == CHUNK_MAGIC && word(b, at + COMMIT_AT + 4) > 0)
        .map(|at| (at, word(b, at + COMMIT_AT) as usize))
        .collect()
}

/// Chunks the log's header says were handed out.
fn written(b: &[u8]) -> usize {
    let n = HeaderCounter::Chunks
        .read(b)
        .expect("the chunk count passes its check");
    assert!(n > 0, "the writer counts the chunks it hands out");
    n as usize
}

/// Copies a directory's regular files (a kept record directory has no subdirectories).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn rows(path: &Path) -> usize {
    csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .records()
        .count()
}

/// Case 6: 70 KiB, 75 KB and 1 MiB marker messages are cut to fit the log, and rocprof says
/// how many and how long the longest was.
#[test]
fn long_strings_cut_to_fit_the_log_are_said() {
    let tmp = scratch_here("strings");
    let script = "import ctypes\n\
        r = ctypes.CDLL('librocprofiler-sdk-roctx.so.1')\n\
        for n in (70 * 1024, 75000, 1 << 20):\n\
        \x20   r.roctxMarkA(b'm' * n)\n";
    let python = python();
    let (_, o) = kept_run(
        &tmp,
        &["--marker-trace"],
        &[python.to_str().unwrap(), "-c", script],
    );
    let err = stderr(&o);
    assert!(
        err.contains(
            "3 strings were longer than one record-log entry holds and were cut to at most"
        ) && err.contains("the longest, a ROCTx marker message, had 1048576 bytes"),
        "{err}"
    );
    let csv = std::fs::read_dir(tmp.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("marker_api_trace.csv"))
        .unwrap_or_else(|| panic!("no marker trace\n{err}"));
    let text = std::fs::read_to_string(csv).unwrap();
    let longest = text
        .split(',')
        .map(|c| c.trim_matches('"').len())
        .max()
        .unwrap();
    assert!((65_000..70 * 1024).contains(&longest), "{longest}");
}

/// Case 7: a log cut exactly at a chunk boundary (`truncate -s 69632`, and down to the 4 KiB
/// header) is damage that says how many chunks are missing, and nothing missing is explained
/// as something the application did not do.
#[test]
fn a_log_cut_at_a_chunk_boundary_is_damage_with_the_count() {
    let tmp = scratch_here("cut");
    let dir = reference(&tmp);
    let log = the_log(&dir);
    let full = std::fs::read(&log).unwrap();
    let used = used_chunks(&full).len();
    assert!(used >= 2, "{used} chunks");
    let handed_out = written(&full);
    for (keep, len) in [(1usize, HEADER + CHUNK), (0, HEADER)] {
        std::fs::write(&log, &full[..len]).unwrap();
        let o = convert(&tmp, &dir, &tmp.join(format!("again-{keep}")));
        let err = stderr(&o);
        let missing = handed_out - keep;
        assert!(
            err.contains(&format!(
                "damaged at byte {len} (the log ends early: {missing} of the"
            )) && err.contains("chunks its writer handed out are missing"),
            "cut to {len} bytes:\n{err}"
        );
        assert!(!err.contains("made none"), "{err}");
        assert!(
            !err.contains("suppresses") && !err.contains("never loaded"),
            "no runtime is blamed: {err}"
        );
        assert!(err.contains("cannot be said"), "{err}");
        assert!(err.contains("kept in"), "the directory is kept: {err}");
    }
}

/// Case 7: a chunk repeated 1,000 times is one damage line with the count, and no record is
/// written twice.
#[test]
fn a_chunk_repeated_a_thousand_times_is_damage_and_read_once() {
    let tmp = scratch_here("repeat");
    let dir = reference(&tmp);
    // A successful conversion removes its directory: convert a copy first.
    let copy = tmp.join("copy");
    copy_dir(&dir, &copy);
    let once = convert(&tmp, &copy, &tmp.join("once"));
    assert!(once.status.success(), "{}", stderr(&once));
    let log = the_log(&dir);
    let before = rows(&tmp.join("once/run_hsa_api_trace.csv"));
    let mut bytes = std::fs::read(&log).unwrap();
    let (first, _) = used_chunks(&bytes)[0];
    let chunk = bytes[first..first + CHUNK].to_vec();
    // The log may end inside a chunk slot the grower was still zero-filling when the
    // application exited: the copies go on the chunk grid, after the last whole slot (the
    // partial one holds only the growth's zeros).
    let end = HEADER + (bytes.len() - HEADER) / CHUNK * CHUNK;
    assert!(
        bytes[end..].iter().all(|&b| b == 0),
        "a partial slot holds only zeros"
    );
    bytes.truncate(end);
    for _ in 0..1000 {
        bytes.extend_from_slice(&chunk);
    }
    std::fs::write(&log, &bytes).unwrap();
    let o = convert(&tmp, &dir, &tmp.join("twice"));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("damaged at byte {end} (1000 chunks in a row")),
        "{err}"
    );
    assert_eq!(
        err.matches("damaged at byte").count(),
        1,
        "one line for the thousand: {err}"
    );
    assert_eq!(rows(&tmp.join("twice/run_hsa_api_trace.csv")), before);
}

/// Case 8: a 1 GiB (sparse) `untraced.pids` is not read whole: rocprof stays small and says
/// the file was capped.
#[test]
fn a_huge_untraced_pids_is_read_in_bounded_memory() {
    let tmp = scratch_here("untraced");
    let dir = reference(&tmp);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("untraced.pids"))
        .unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let errors = tmp.join("stderr");
    let status = rocprof(&tmp)
        .arg("convert")
        .arg(&dir)
        .arg("-d")
        .arg(tmp.join("again"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&errors).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    // The largest resident set of any child this test binary waited for: the other tests'
    // runs and conversions of the small reference workload stay far below the bound, so
    // exceeding it can only be this conversion.
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: fills the rusage we own.
    let got = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(got, 0);
    let err = std::fs::read_to_string(&errors).unwrap();
    let peak_kib = usage.ru_maxrss;
    assert!(
        peak_kib < 200 * 1024,
        "rocprof convert peaked at {peak_kib} KiB reading a 1 GiB untraced.pids\n{err}"
    );
    assert!(
        err.contains("untraced.pids holds 1073741824 bytes") && err.contains("were read"),
        "{err}"
    );
}

/// Case 9: loss counters set to 2^64 − 1 are a damaged header, not eight causes of
/// 18446744073709551615 lost records.
#[test]
fn loss_counters_of_all_ones_are_a_damaged_header() {
    let tmp = scratch_here("counters");
    let dir = reference(&tmp);
    let log = the_log(&dir);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[LOSSES_AT..LOSSES_AT + 8 * LossCause::ALL.len()].fill(0xFF);
    std::fs::write(&log, &bytes).unwrap();
    let o = convert(&tmp, &dir, &tmp.join("again"));
    let err = stderr(&o);
    assert!(!err.contains("18446744073709551615"), "{err}");
    assert!(!err.contains("rocprof: warning: lost "), "{err}");
    assert!(
        err.contains("damaged at byte 0 (damaged file header: its loss counters for no-space, no-buffer, dispatch-time, copy-untraced, malformed, damaged, unfinished, definitions fail their check"),
        "{err}"
    );
    assert!(rows(&tmp.join("again/run_hsa_api_trace.csv")) > 0);
}

/// Case 10: every JSON document of the log garbled, the chunks' checksums made to match:
/// the documents are counted as malformed, and nothing missing is explained from them — in
/// particular not as a runtime that never offered its table, when its calls are right there.
#[test]
fn garbled_documents_are_never_a_runtime_diagnosis() {
    let tmp = scratch_here("documents");
    let dir = reference(&tmp);
    let log = the_log(&dir);
    let mut bytes = std::fs::read(&log).unwrap();
    let mut garbled = 0;
    for (at, used) in used_chunks(&bytes) {
        let payload = at + CHUNK_HEADER_LEN;
        let mut p = payload;
        while p + 4 <= payload + used {
            let tag = u16::from_le_bytes([bytes[p], bytes[p + 1]]);
            let len = u16::from_le_bytes([bytes[p + 2], bytes[p + 3]]) as usize;
            if tag == trace_records::Tag::Json as u16 && len > 0 {
                bytes[p + 4] = b'#';
                garbled += 1;
            }
            p += 4 + len;
        }
        if word(&bytes, at + SEAL_AT) == SEALED {
            let crc = trace_records::log::chunk_checksum(&bytes[payload..payload + used]);
            bytes[at + CRC_AT..at + CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    assert!(garbled > 0);
    std::fs::write(&log, &bytes).unwrap();
    // Ask for a domain the reference workload has nothing of, so that something is missing
    // (scratch memory is explained only when not part of the whole bundle, hence no kernels).
    let manifest = std::fs::read_to_string(dir.join("run.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    m["selection"]["scratch_memory"] = serde_json::Value::Bool(true);
    m["selection"]["kernels"] = serde_json::Value::Bool(false);
    std::fs::write(dir.join("run.json"), m.to_string()).unwrap();
    let o = convert(&tmp, &dir, &tmp.join("again"));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("lost {garbled} records (malformed)")),
        "{garbled} documents: {err}"
    );
    let hsa = rows(&tmp.join("again/run_hsa_api_trace.csv"));
    assert!(hsa > 100, "{hsa} HSA calls");
    assert!(
        !err.contains("nothing was recorded from the HSA runtime")
            && !err.contains("Install the ROCm runtime")
            && !err.contains("made none"),
        "{err}"
    );
    assert!(
        err.contains("--scratch-memory-trace: no scratch memory event was recorded")
            && err.contains("were damaged or lost (see above), so whether the application made any cannot be said"),
        "{err}"
    );
}

/// A sanity check of the helpers: an unmodified kept directory converts without damage.
#[test]
fn an_intact_kept_directory_converts_cleanly() {
    let tmp = scratch_here("intact");
    let dir = reference(&tmp);
    let o = convert(&tmp, &dir, &tmp.join("again"));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("damaged") && !err.contains("lost "), "{err}");
}
