//! rocprofv3's input files, naming and launch rules end to end on the simulated Radeon 890M
//! (issue 24, points 7 to 11): every key of rocprofv3's input schema, pass folders only where
//! rocprofv3 makes them, `%argt%`, `--echo`, counter multiplexing and counter qualifiers.
//!
//! Needs the staged simulator and workloads: `cargo xtask build` first.

mod support;

use support::*;

/// `rocprof --sim -i <file> -d <scratch>/out -o run -- reference-workload`, the file written
/// into the scratch directory as `name` with `text`.
fn with_input(tag: &str, name: &str, text: &str, options: &[&str]) -> Run {
    let files = scratch("inputs-file", tag);
    let file = files.join(name);
    std::fs::write(&file, text).unwrap();
    let mut opts: Vec<&str> = vec!["-i", file.to_str().unwrap()];
    opts.extend_from_slice(options);
    sim_run("inputs", tag, &opts, &reference_workload(), &[], &[])
}

#[test]
fn argt_is_the_basename_of_the_program() {
    let tmp = scratch("inputs", "argt");
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "-f", "csv", "-d"])
        .arg(tmp.join("%argt%-cc"))
        .args(["-o", "run", "--"])
        .arg(reference_workload())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.join("reference-workload-cc");
    assert!(
        dir.join("run_kernel_trace.csv").exists(),
        "{:?}\n{}",
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>(),
        stderr(&o)
    );
}

#[test]
fn echo_prints_the_command_and_environment_and_runs_nothing() {
    let tmp = scratch("inputs", "echo");
    let app = reference_workload();
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "--echo", "-d"])
        .arg(tmp.join("out"))
        .args(["--", app.to_str().unwrap(), "it's"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    // As rocprofv3 prints it: the command as a Python list.
    assert_eq!(
        out.trim_end(),
        format!("command: ['{}', \"it's\"]", app.display()),
        "{err}"
    );
    assert!(err.contains("rocprof: echo: LD_PRELOAD="), "{err}");
    assert!(
        err.contains("rocprof: echo: ROCPROF_KERNEL_TRACE=1"),
        "{err}"
    );
    assert!(!tmp.join("out").exists(), "the application ran: {err}");
}

#[test]
fn every_key_of_the_input_schema_is_accepted() {
    // Keys rocprofv3 reads that were refused: an empty regex (no filter), log_level,
    // agent_index, and the schema's own spellings.
    let yaml = "jobs:\n  - kernel_trace: true\n    kernel_exclude_regex: \"\"\n    kernel_include_regex: \"\"\n    log_level: warning\n    agent_index: type-relative\n    hsa_finalize_trace: false\n    minimum-output-data: 0\n    disable-signal-handlers: false\n    rocdecode_trace: false\n    output_format: [csv]\n";
    let run = with_input("schema", "in.yaml", yaml, &[]).succeeded();
    // One job without counters: no pass folder, as rocprofv3.
    let rows = run.rows("kernel_trace");
    assert_eq!(rows.len(), 8, "{}", run.stderr());
    assert!(run.listing_in("pass_1").is_empty(), "{:?}", run.listing());
    // agent_index type-relative: agents named by type and index.
    assert!(rows.iter().all(|r| r["Agent_Id"] == "GPU 0"), "{rows:?}");
    // A misspelt key is still refused.
    let bad = with_input(
        "schema-typo",
        "in.yaml",
        "jobs:\n  - kernel_trac: true\n",
        &[],
    );
    assert_eq!(bad.out.status.code(), Some(2), "{}", bad.stderr());
    assert!(bad.stderr().contains("kernel_trac"), "{}", bad.stderr());
}

#[test]
fn a_list_avail_job_lists_the_counters() {
    let tmp = scratch("inputs", "list-avail");
    let file = tmp.join("in.json");
    std::fs::write(&file, r#"{"jobs": [{"list_avail": true}]}"#).unwrap();
    let o = rocprof(&tmp)
        .args(["--sim", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("SQ_WAVES"), "{out}");
    // With an application, rocprofv3 lists the counters and then runs it.
    let o = rocprof(&tmp)
        .args(["--sim", "--kernel-trace", "-i"])
        .arg(&file)
        .arg("-d")
        .arg(tmp.join("out"))
        .args(["-o", "run", "--"])
        .arg(reference_workload())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("SQ_WAVES"));
    assert!(
        tmp.join("out/run_kernel_trace.csv").exists(),
        "{}",
        stderr(&o)
    );
}
