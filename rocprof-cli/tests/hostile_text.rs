//! Text the application or the user chose reaches the terminal escaped (issue 23, case 4): a
//! ROCTx message that forges a `rocprof: error:` line, clears the screen, sets the window title,
//! makes a hyperlink and reverses the text (U+202E) shows as its escapes in the `-S` summary of
//! a run and of `rocprof convert`, and in `rocprof analyze`; a 65 KB message is one short table
//! cell; option values echoed in errors (`--pmc`, `-o`, a kernel regex) are escaped. The files
//! keep the exact bytes.
//!
//! The reference workload pushes its ranges with `WSLSIM_ROCTX_MESSAGE` when it is set.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{rocprof, scratch, stderr, workload};

/// A ROCTx message that would forge a line, clear the screen, reverse the text, set the window
/// title and make a hyperlink.
const HOSTILE: &str = "\nrocprof: error: forged line\n\x1b[2J\u{202e}rtl\x1b]0;title\x07\x1b]8;;https://example.invalid/\x1b\\link\x1b]8;;\x1b\\";

/// The start of its escaped form (the table cell is cut after that, at 60 characters).
const SHOWN: &str = r"\nrocprof: error: forged line\n\x1b[2J\u{202e}rtl\x1b]0;tit";

/// The variable the reference workload takes its ROCTx message from.
const MESSAGE: &str = "WSLSIM_ROCTX_MESSAGE";

/// Fails if `text` holds a control character other than the newline, a bidirectional control,
/// or a line that forges a rocprof error.
fn assert_safe(what: &str, text: &str) {
    let bidi = |c: char| matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && (c.is_control() || bidi(c)))
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} in:\n{text}");
    let forged: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("rocprof: error: forged"))
        .collect();
    assert!(forged.is_empty(), "{what}: forged {forged:?} in:\n{text}");
}

/// `rocprof --sim --sys-trace -S -d <tmp>/out -o run [extra] -- reference-workload`, the
/// workload's ranges named `message`.
fn run(tmp: &Path, extra: &[&str], message: &str) -> Output {
    rocprof(tmp)
        .args(["--sim", "--sys-trace", "-S", "-d"])
        .arg(tmp.join("out"))
        .args(["-o", "run"])
        .args(extra)
        .arg("--")
        .arg(workload("reference-workload"))
        .env(MESSAGE, message)
        .output()
        .unwrap()
}

/// The `-S` table row of the MARKER_API domain.
fn marker_row(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("| MARKER_API "))
        .unwrap_or_else(|| panic!("no MARKER_API row in:\n{text}"))
}

/// The ROCTx messages of `<dir>/run_marker_api_trace.csv`, as written.
fn marker_messages(dir: &Path) -> Vec<String> {
    let path = dir.join("run_marker_api_trace.csv");
    let mut r = csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().unwrap().clone();
    let at = headers.iter().position(|h| h == "Function").unwrap();
    r.records().map(|row| row.unwrap()[at].to_owned()).collect()
}

#[test]
fn a_hostile_roctx_message_is_escaped_in_the_summary_of_a_run() {
    let tmp = scratch("hostile", "run");
    let o = run(&tmp, &[], HOSTILE);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_safe("rocprof -S", &err);
    let row = marker_row(&err);
    assert!(row.contains(&format!("| {SHOWN}…")), "{row}");
    // The file keeps the message byte for byte.
    let messages = marker_messages(&tmp.join("out"));
    assert_eq!(messages.len(), 8);
    assert!(messages.iter().all(|m| m == HOSTILE), "{messages:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_hostile_roctx_message_is_escaped_in_the_summary_of_convert() {
    let tmp = scratch("hostile", "convert");
    // Dispatch and copy times that cannot be read are lost records: the directory is kept.
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/times-fail.toml");
    let o = rocprof(&tmp)
        .env("WSLSIM_SCENARIO", &scenario)
        .args(["--sim", "--sys-trace", "-S", "-d"])
        .arg(tmp.join("out"))
        .args(["-o", "run", "--"])
        .arg(workload("reference-workload"))
        .env(MESSAGE, HOSTILE)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_safe("rocprof -S (kept)", &err);
    let kept = err
        .lines()
        .find(|l| l.contains(" convert /"))
        .map(|l| PathBuf::from(l.trim().rsplit(' ').next().unwrap()))
        .unwrap_or_else(|| panic!("no convert command printed:\n{err}"));
    let o = rocprof(&tmp)
        .arg("convert")
        .arg(&kept)
        .arg("-d")
        .arg(tmp.join("again"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_safe("rocprof convert", &err);
    assert!(marker_row(&err).contains(&format!("| {SHOWN}…")), "{err}");
    assert!(
        marker_messages(&tmp.join("again"))
            .iter()
            .all(|m| m == HOSTILE)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_hostile_roctx_message_is_escaped_by_analyze() {
    let tmp = scratch("hostile", "analyze");
    let o = run(&tmp, &[], HOSTILE);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rocprof(&tmp)
        .arg("analyze")
        .arg(tmp.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_safe("rocprof analyze", &text);
    assert_safe("rocprof analyze (stderr)", &stderr(&o));
    let row = text
        .lines()
        .find(|l| l.contains("| MARKER_API ") && !l.contains("(total)"))
        .unwrap_or_else(|| panic!("no MARKER_API row:\n{text}"));
    assert!(row.contains(&format!("| {SHOWN}…")), "{row}");
    // --json keeps the message exactly.
    let o = rocprof(&tmp)
        .args(["analyze", "--json"])
        .arg(tmp.join("out"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let domains = v["inputs"][0]["processes"][0]["summary"]["domains"]
        .as_array()
        .unwrap();
    let markers = domains
        .iter()
        .find(|d| d["domain"] == "MARKER_API")
        .unwrap();
    assert_eq!(markers["rows"][0]["name"], HOSTILE);
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_65_kb_roctx_message_is_one_short_cell() {
    let tmp = scratch("hostile", "long");
    // 65 KB (the record log holds a string of up to 65,496 bytes whole).
    let long = "m".repeat(65_000);
    let o = run(&tmp, &[], &long);
    let err = stderr(&o);
    assert!(o.status.success(), "{}", &err[..err.len().min(4000)]);
    let widest = err.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        widest < 400,
        "a table line of {widest} characters (the name is 60 at most)"
    );
    let row = marker_row(&err);
    assert!(row.contains(&format!("| {}… |", "m".repeat(59))), "{row}");
    let kept = &marker_messages(&tmp.join("out"))[0];
    assert!(
        *kept == long,
        "the file keeps it whole, not {} bytes",
        kept.len()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `rocprof --sim <args> -- reference-workload` in `tmp` (as the working directory): refused
/// before the launch, its one error line returned.
fn refused(tmp: &Path, args: &[&str]) -> String {
    let o = rocprof(tmp)
        .current_dir(tmp)
        .arg("--sim")
        .args(args)
        .arg("--")
        .arg(workload("reference-workload"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_safe(&format!("rocprof {args:?}"), &err);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("rocprof: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    errors[0].to_owned()
}

#[test]
fn option_values_echoed_in_errors_are_escaped() {
    let tmp = scratch("hostile", "options");
    let e = refused(&tmp, &["--pmc", "SQ_WAVES\x1b[2J\u{202e}"]);
    assert!(e.contains(r"SQ_WAVES\x1b[2J\u{202e}"), "{e}");
    // -o under a file (named with an escape sequence) that is not a directory.
    std::fs::write(tmp.join("f\x1b]0;t\x07"), "").unwrap();
    let e = refused(&tmp, &["--sys-trace", "-o", "f\x1b]0;t\x07/run"]);
    assert!(e.contains(r"f\x1b]0;t\x07 is not a directory"), "{e}");
    // A kernel filter that does not compile: the pattern once, on the one line.
    let e = refused(
        &tmp,
        &[
            "--kernel-trace",
            "--kernel-include-regex",
            "(\x1b[2J\nrocprof: error: forged",
        ],
    );
    assert!(
        e.starts_with(r"rocprof: error: --kernel-include-regex '(\x1b[2J\nrocprof: error: forged' is not a valid regular expression: "),
        "{e}"
    );
    let e = refused(
        &tmp,
        &["--sys-trace", "-S", "--summary-groups", "(\x1b[2J\u{202e}"],
    );
    assert!(
        e.contains(r#"--summary-groups "(\x1b[2J\u{202e}" is not"#),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
