//! `rocprof analyze`'s entry point: the inputs read, every analysis run, the report as data with
//! its text and JSON forms and the exit status.

use crate::counters::{self, Knowledge};
use crate::error::Error;
use crate::inputs::{self, Input};
use crate::model::{Api, Process};
use crate::report::{self, Counts, InputReport, ProcessReport, Report};
use crate::{summary, timeline};
use rocprof_runner::words::counted;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `rocprof analyze` is asked (its command line's fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Output directories of CSV files, rocpd databases (`.db`) or record directories — ours or
    /// upstream rocprofv3's.
    pub inputs: Vec<PathBuf>,
    /// One JSON document instead of the text report.
    pub json: bool,
}

/// A finished analysis: the report, and the form it is to be shown in.
///
/// Serialised, it is the [`Report`] itself (what `--json` prints); displayed, the text report.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Analysis {
    /// Everything found.
    pub report: Report,
    /// `--json`: [`Analysis::output`] is the JSON document.
    #[serde(skip)]
    pub json: bool,
}

impl Analysis {
    /// The text report (what `rocprof analyze` prints without `--json`).
    pub fn render_text(&self) -> String {
        report::render(&self.report)
    }

    /// The report as one pretty-printed JSON document, without a final newline.
    pub fn to_json(&self) -> Result<String, Error> {
        Ok(serde_json::to_string_pretty(&self.report)?)
    }

    /// Exactly what `rocprof analyze` writes to stdout: the JSON document and a newline with
    /// `--json`, the text report otherwise.
    pub fn output(&self) -> Result<String, Error> {
        if self.json {
            let mut s = self.to_json()?;
            s.push('\n');
            Ok(s)
        } else {
            Ok(self.render_text())
        }
    }

    /// The exit status: violations are findings, not errors, so it is success whenever the
    /// analysis ran.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

impl fmt::Display for Analysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render_text())
    }
}

/// Reads every input (the first that is none of the three kinds stops it all, before anything
/// is analysed) and analyses them, with the counter definitions `rocprof` uses.
pub fn analyze(options: &Options) -> Result<Analysis, Error> {
    let mut read = Vec::with_capacity(options.inputs.len());
    for path in &options.inputs {
        let input = inputs::read(path)?;
        tracing::debug!(
            "analyze: {}: {}, {}",
            path.display(),
            counted(input.runs.len(), "run", "runs"),
            counted(
                input.runs.iter().map(|r| r.processes.len()).sum::<usize>(),
                "process",
                "processes"
            )
        );
        read.push(input);
    }
    Ok(Analysis {
        report: build(&read, &mut Knowledge::load()),
        json: options.json,
    })
}

/// The report over `inputs`, with what is known of the counters in `know`.
pub fn build(inputs: &[Input], know: &mut Knowledge) -> Report {
    let mut out = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut processes = Vec::new();
        for run in &input.runs {
            for p in &run.processes {
                let mut missing = missing(p);
                missing.extend(p.missing.iter().cloned());
                processes.push(ProcessReport {
                    label: p.label.clone(),
                    run: run.label.clone(),
                    pid: p.pid,
                    counts: Counts {
                        calls: p.calls.len(),
                        dispatches: p.dispatches.len(),
                        copies: p.copies.len(),
                        markers: p.markers.len(),
                        counter_values: p.counters.values.len(),
                    },
                    timeline: timeline::analyse(p),
                    summary: summary::analyse(p),
                    missing,
                    notes: p.notes.clone(),
                });
            }
        }
        out.push(InputReport {
            path: input.path.display().to_string(),
            kind: input.kind,
            missing: input.missing.clone(),
            notes: input.notes.clone(),
            processes,
        });
    }
    let runs: Vec<Vec<&Process>> = inputs
        .iter()
        .flat_map(|i| &i.runs)
        .map(|r| r.processes.iter().collect())
        .collect();
    Report {
        schema: report::SCHEMA,
        inputs: out,
        counters: counters::analyse(&runs, know),
    }
}

/// What a process's records cannot show, from what they hold.
fn missing(p: &Process) -> Vec<String> {
    let mut out = Vec::new();
    let hip = p.calls.iter().any(|c| c.api == Api::Hip);
    let any_call = p.calls.iter().any(|c| c.api != Api::Marker);
    let device = !p.dispatches.is_empty() || !p.copies.is_empty();
    if p.calls.is_empty() && !device && p.markers.is_empty() && p.counters.values.is_empty() {
        out.push("no records at all".into());
        return out;
    }
    if device && !any_call {
        out.push(
            "no HIP or HSA API calls: the dispatches' launches and the copies' calls are \
             unknown, so containment cannot be checked (trace the API too: --hip-trace or \
             --hsa-trace, or --sys-trace)"
                .into(),
        );
    }
    if any_call && !device {
        out.push(
            "no kernel dispatches or memory copies: nothing on the GPU timeline to check \
             (--kernel-trace, --memory-copy-trace)"
                .into(),
        );
    }
    if hip && !p.dispatches.is_empty() && p.copies.is_empty() {
        out.push(
            "no memory copies: a hipMemcpy's direction is then unknown, so only synchronize \
             calls and *DtoH copies bound the dispatches (--memory-copy-trace)"
                .into(),
        );
    }
    let nameless = p.dispatches.iter().filter(|d| d.kernel.is_empty()).count();
    if nameless > 0 {
        out.push(format!(
            "{} no kernel name (the kernel symbol was not recorded)",
            match nameless {
                1 => "1 dispatch has".to_owned(),
                n => format!("{n} dispatches have"),
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A fresh scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("trace-analysis-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A CSV output directory: one launch, its dispatch, the copy back.
    fn csv_run(dir: &Path) {
        std::fs::write(
            dir.join("run_hip_api_trace.csv"),
            "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\
             \"Start_Timestamp\",\"End_Timestamp\"\n\
             \"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",7,7,1,1000,2000\n\
             \"HIP_RUNTIME_API_EXT\",\"hipMemcpy\",7,7,2,3000,9000\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("run_kernel_trace.csv"),
            "\"Kind\",\"Agent_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Name\",\
             \"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Grid_Size_X\",\
             \"Workgroup_Size_X\"\n\
             \"KERNEL_DISPATCH\",\"Agent 1\",7,1,\"axpb\",1,2500,4000,256,64\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("run_memory_copy_trace.csv"),
            "\"Kind\",\"Direction\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
             \"MEMORY_COPY\",\"MEMORY_COPY_DEVICE_TO_HOST\",2,5000,8000\n",
        )
        .unwrap();
    }

    #[test]
    fn the_report_is_text_or_one_json_document_and_exits_0() {
        let dir = scratch("csv");
        csv_run(&dir);
        let mut options = Options {
            inputs: vec![dir.clone()],
            json: false,
        };
        let a = analyze(&options).unwrap();
        let text = a.output().unwrap();
        assert_eq!(text, a.render_text());
        assert_eq!(text, a.to_string());
        assert!(
            text.starts_with("rocprof analyze: 1 input, 1 process\n\n# "),
            "{text}"
        );
        assert!(
            text.contains(
                "containment (dispatches): 1 of 1 checked, 1 held, 0 violated: every one \
                 inside its launch → consuming call interval"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("\n## counters: none in the inputs\n"),
            "{text}"
        );
        assert_eq!(a.exit_code(), ExitCode::SUCCESS);

        options.json = true;
        let a = analyze(&options).unwrap();
        let json = a.output().unwrap();
        assert_eq!(json, format!("{}\n", a.to_json().unwrap()));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["schema"], report::SCHEMA);
        assert_eq!(v["inputs"][0]["kind"], "csv-directory");
        assert_eq!(v["inputs"][0]["processes"][0]["pid"], 7);
        // Serialised, the analysis is its report.
        assert_eq!(serde_json::to_value(&a).unwrap(), v);
        assert_eq!(a.exit_code(), ExitCode::SUCCESS);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A CSV directory of `n` nameless dispatches (one launch each, one copy back).
    fn nameless_run(dir: &Path, n: usize) {
        csv_run(dir);
        let mut calls = String::from(
            "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\
             \"Start_Timestamp\",\"End_Timestamp\"\n",
        );
        let mut kernels = String::from(
            "\"Kind\",\"Agent_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Name\",\
             \"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Grid_Size_X\",\
             \"Workgroup_Size_X\"\n",
        );
        for k in 1..=n {
            let t = 10_000 * k;
            calls.push_str(&format!(
                "\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",7,7,{k},{t},{}\n",
                t + 1000
            ));
            kernels.push_str(&format!(
                "\"KERNEL_DISPATCH\",\"Agent 1\",7,{k},\"\",{k},{},{},256,64\n",
                t + 1500,
                t + 3000
            ));
        }
        let t = 10_000 * (n + 1);
        calls.push_str(&format!(
            "\"HIP_RUNTIME_API_EXT\",\"hipMemcpy\",7,7,{},{t},{}\n",
            n + 1,
            t + 9000
        ));
        std::fs::write(dir.join("run_hip_api_trace.csv"), calls).unwrap();
        std::fs::write(dir.join("run_kernel_trace.csv"), kernels).unwrap();
        std::fs::write(
            dir.join("run_memory_copy_trace.csv"),
            format!(
                "\"Kind\",\"Direction\",\"Correlation_Id\",\"Start_Timestamp\",\
                 \"End_Timestamp\"\n\"MEMORY_COPY\",\"MEMORY_COPY_DEVICE_TO_HOST\",{},{},{}\n",
                n + 1,
                t + 2000,
                t + 8000
            ),
        )
        .unwrap();
    }

    #[test]
    fn counts_in_the_text_are_singular_for_one_and_plural_otherwise() {
        for (n, header, nameless) in [
            (
                1,
                "2 calls, 1 dispatch, 1 copy, 0 markers, 0 counter values",
                "1 dispatch has no kernel name",
            ),
            (
                2,
                "3 calls, 2 dispatches, 1 copy, 0 markers, 0 counter values",
                "2 dispatches have no kernel name",
            ),
        ] {
            let dir = scratch(&format!("counted-{n}"));
            nameless_run(&dir, n);
            let text = analyze(&Options {
                inputs: vec![dir.clone()],
                json: false,
            })
            .unwrap()
            .render_text();
            assert!(text.contains(&format!(", pid 7: {header}\n")), "{text}");
            assert!(text.contains(nameless), "{text}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn an_input_of_no_kind_stops_everything_with_its_path_and_why() {
        let dir = scratch("bad");
        csv_run(&dir);
        let file = dir.join("notes.txt");
        std::fs::write(&file, "not a trace\n").unwrap();
        let damaged = dir.join("damaged");
        std::fs::create_dir_all(&damaged).unwrap();
        std::fs::write(damaged.join("run.json"), "{").unwrap();
        let refused = |inputs: Vec<PathBuf>| analyze(&Options { inputs, json: true }).unwrap_err();
        let e = refused(vec![dir.clone(), file.clone()]);
        assert_eq!(
            e.to_string(),
            format!("{}: {}", file.display(), inputs::NEITHER)
        );
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(e.exit_code(), ExitCode::from(2));
        let e = refused(vec![damaged.clone()]);
        assert!(matches!(e, Error::RecordDir(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{} is not a record directory that rocprof kept",
                damaged.display()
            )),
            "{msg}"
        );
        assert!(std::error::Error::source(&e).is_none());
        let nowhere = dir.join("nowhere");
        let msg = refused(vec![nowhere.clone()]).to_string();
        assert!(
            msg.starts_with(&format!("{}: {} (", nowhere.display(), inputs::NEITHER)),
            "{msg}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
